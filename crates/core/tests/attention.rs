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

fn list(entries: &[(&str, u32, Option<&str>)]) -> ask_user_core::wire::SessionList {
    let sessions: Vec<serde_json::Value> = entries
        .iter()
        .map(|(id, pending, question)| {
            serde_json::json!({"id": id, "pending": pending, "last_activity_ms": 1,
                "asked_by": {"kind": "mcp", "name": "Claude Code"}, "first_question": question})
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "sessions": sessions })).unwrap()
}

#[test]
fn with_the_inbox_the_signals_count_every_session_named_by_the_shown_one_first() {
    use ask_user_core::attention::waiting;
    let inbox = list(&[("a", 2, Some("Deploy?")), ("b", 1, Some("Name?"))]);
    assert_eq!(
        waiting(Some(&inbox), 1, Some("Name?")),
        (3, Some("Name?".to_owned()))
    );
    assert_eq!(
        waiting(Some(&inbox), 0, None),
        (3, Some("Deploy?".to_owned())),
        "a question elsewhere names the tab when the shown session has none"
    );
    assert_eq!(
        waiting(None, 1, Some("Here?")),
        (1, Some("Here?".to_owned()))
    );
    let empty = list(&[("a", 0, None)]);
    assert_eq!(waiting(Some(&empty), 0, None), (0, None));
    assert_eq!(
        waiting(Some(&empty), 1, Some("Fresh?")),
        (1, Some("Fresh?".to_owned())),
        "the shown stream is ahead of the list by a frame"
    );
}

#[test]
fn a_notification_is_due_only_for_a_session_whose_pending_count_rose() {
    use ask_user_core::attention::{Arrival, arrivals};
    let before = list(&[("a", 1, Some("Deploy?")), ("b", 0, None)]);
    let after = list(&[
        ("a", 1, Some("Deploy?")),
        ("b", 1, Some("Name?")),
        ("c", 2, Some("X?")),
    ]);
    let due = arrivals(Some(&before), &after);
    assert_eq!(
        due,
        vec![
            Arrival {
                session: "b".into(),
                asked_by: Some("Claude Code".into()),
                question: Some("Name?".into()),
                pending: 1,
            },
            Arrival {
                session: "c".into(),
                asked_by: Some("Claude Code".into()),
                question: Some("X?".into()),
                pending: 2,
            },
        ]
    );
    assert!(
        arrivals(None, &after).is_empty(),
        "the first list only says what already waits"
    );
    let resolved = list(&[("a", 0, None), ("b", 1, Some("Name?"))]);
    assert!(
        arrivals(Some(&after), &resolved).is_empty(),
        "nothing for a batch resolved"
    );
}

#[test]
fn a_notification_names_the_new_batchs_first_question_not_the_oldest_waiting_one() {
    use ask_user_core::attention::arrivals;
    let session = |pending: u32, newest: Option<&str>| -> ask_user_core::wire::SessionList {
        serde_json::from_value(
            serde_json::json!({"sessions": [{"id": "s", "pending": pending,
            "last_activity_ms": 1, "first_question": "Seen already?", "newest_question": newest}]}),
        )
        .unwrap()
    };
    let due = arrivals(
        Some(&session(1, Some("Seen already?"))),
        &session(3, Some("Which port?")),
    );
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].question.as_deref(), Some("Which port?"));
    assert_eq!(due[0].pending, 3, "how many wait in the session");
    // A host that does not say which is newest: the oldest, as before.
    let due = arrivals(Some(&session(1, None)), &session(2, None));
    assert_eq!(due[0].question.as_deref(), Some("Seen already?"));
}

#[test]
fn an_age_is_told_in_whole_minutes_hours_or_days_and_a_clock_behind_is_just_now() {
    use ask_user_core::attention::{Age, age};
    let t = 1_000_000_000;
    assert_eq!(age(t, t + 59_999), Age::JustNow);
    assert_eq!(age(t, t + 60_000), Age::Minutes(1));
    assert_eq!(age(t, t + 59 * 60_000 + 59_999), Age::Minutes(59));
    assert_eq!(age(t, t + 60 * 60_000), Age::Hours(1));
    assert_eq!(age(t, t + 25 * 60 * 60_000), Age::Days(1));
    assert_eq!(age(t, t - 5_000), Age::JustNow);
}
