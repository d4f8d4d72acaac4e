//! The attention signals: the tab title, the favicon's badge.

use ask_user_core::attention::{
    APP_TITLE, MAX_TITLE_QUESTION_CHARS, badge_label, document_title, favicon_data_url,
    favicon_svg, shorten,
};

#[test]
fn the_title_starts_with_the_count_and_names_the_first_question_while_questions_wait() {
    assert_eq!(
        document_title(2, Some("Which database?")),
        "(2) Which database? · ask-user"
    );
    assert_eq!(
        document_title(1, Some("选哪个数据库？")),
        "(1) 选哪个数据库？ · ask-user"
    );
}

#[test]
fn the_title_is_the_plain_app_name_when_nothing_waits() {
    assert_eq!(document_title(0, Some("Which database?")), APP_TITLE);
    assert_eq!(document_title(0, None), "ask-user");
}

#[test]
fn the_title_keeps_the_count_when_the_question_is_unknown_or_blank() {
    assert_eq!(document_title(3, None), "(3) ask-user");
    assert_eq!(document_title(3, Some(" \n ")), "(3) ask-user");
}

#[test]
fn a_long_or_multi_line_question_is_put_on_one_line_and_cut_with_an_ellipsis() {
    let long = format!("Pick   one\nof {}", "x".repeat(200));
    let title = document_title(1, Some(&long));
    let question = title
        .strip_prefix("(1) ")
        .and_then(|t| t.strip_suffix(" · ask-user"))
        .unwrap();
    assert_eq!(question.chars().count(), MAX_TITLE_QUESTION_CHARS);
    assert!(question.starts_with("Pick one of xxx"), "{question}");
    assert!(question.ends_with('…'));
    assert_eq!(shorten("short  one", 60), "short one");
    assert_eq!(shorten("abc def", 5), "abc…");
}

#[test]
fn the_badge_counts_to_nine_then_says_nine_plus() {
    assert_eq!(badge_label(0), None);
    assert_eq!(badge_label(1).as_deref(), Some("1"));
    assert_eq!(badge_label(9).as_deref(), Some("9"));
    assert_eq!(badge_label(10).as_deref(), Some("9+"));
    assert_eq!(badge_label(256).as_deref(), Some("9+"));
}

#[test]
fn the_favicon_draws_a_badge_only_while_questions_wait() {
    assert!(!favicon_svg(0).contains("<circle"));
    let two = favicon_svg(2);
    assert!(two.contains("<circle"), "{two}");
    assert!(two.contains(">2</text>"), "{two}");
    assert!(favicon_svg(12).contains(">9+</text>"));
}

#[test]
fn the_favicon_url_is_a_data_url_without_characters_that_break_it() {
    for pending in [0, 3, 42] {
        let url = favicon_data_url(pending);
        let body = url.strip_prefix("data:image/svg+xml,").unwrap();
        assert!(!body.contains(['#', '<', '>', '"']), "{url}");
    }
    assert_ne!(favicon_data_url(0), favicon_data_url(1));
}
