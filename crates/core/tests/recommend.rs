//! The recommendation helper: a label suffix, never a field.

use ask_user_core::{is_recommended, recommendation};

fn recommended_as(label: &str, display: &str) {
    let r = recommendation(label);
    assert!(r.recommended, "{label:?} should be recommended");
    assert_eq!(r.display, display, "display of {label:?}");
    assert!(is_recommended(label));
}

fn plain(label: &str) {
    let r = recommendation(label);
    assert!(!r.recommended, "{label:?} should not be recommended");
    assert_eq!(r.display, label, "{label:?} must be shown unchanged");
    assert!(!is_recommended(label));
}

#[test]
fn the_english_suffix_in_ascii_brackets_marks_a_recommendation() {
    recommended_as("Postgres (Recommended)", "Postgres");
}

#[test]
fn the_english_suffix_in_full_width_brackets_marks_a_recommendation() {
    recommended_as("Postgres（Recommended）", "Postgres");
    recommended_as("Postgres （Recommended）", "Postgres");
}

#[test]
fn the_chinese_suffix_marks_a_recommendation_in_either_bracket_style() {
    recommended_as("数据库 (推荐)", "数据库");
    recommended_as("数据库（推荐）", "数据库");
}

#[test]
fn the_suffix_matches_in_any_case() {
    recommended_as("Postgres (recommended)", "Postgres");
    recommended_as("Postgres (RECOMMENDED)", "Postgres");
    recommended_as("Postgres (rEcOmMeNdEd)", "Postgres");
}

#[test]
fn the_suffix_needs_no_space_and_tolerates_trailing_whitespace() {
    recommended_as("Postgres(Recommended)", "Postgres");
    recommended_as("Postgres (Recommended)  ", "Postgres");
}

#[test]
fn ordinary_brackets_in_a_label_are_left_alone() {
    plain("Use (legacy) mode");
    plain("Use legacy mode (slow)");
    plain("Keep (Recommended) settings");
    plain("(Recommended) Postgres");
}

#[test]
fn a_label_that_is_only_the_suffix_is_not_a_recommendation() {
    plain("(Recommended)");
    plain("  (Recommended)");
    plain("（推荐）");
}

#[test]
fn near_misses_are_not_recommendations() {
    plain("Postgres (not recommended)");
    plain("Postgres Recommended");
    plain("Postgres (Recommended");
    plain("Postgres Recommended)");
    plain("Postgres [Recommended]");
    plain("Postgres (Recommend)");
}

#[test]
fn short_and_multibyte_labels_do_not_panic() {
    plain("");
    plain(")");
    plain("）");
    plain("荐)");
    plain("é)");
    plain("界界界界界界界界界界界界)");
}
