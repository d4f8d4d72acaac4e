//! The wire frames shared by host and browser: exact event names and fields.

use ask_user_core::AskRequest;
use ask_user_core::wire::*;
use serde_json::json;

fn request() -> AskRequest {
    AskRequest::from_value(json!({"questions": [{"id": "a", "question": "Which?"}]})).unwrap()
}

fn events() -> Vec<SessionEvent> {
    vec![
        SessionEvent::QuestionRequested(QuestionRequested {
            id: "q-1".into(),
            session: "default".into(),
            request: request(),
            created_at_ms: 1_700_000_000_000,
            asked_by: None,
        }),
        SessionEvent::QuestionResolved(QuestionResolved {
            id: "q-1".into(),
            outcome: Outcome::Cancelled,
            record: None,
        }),
        SessionEvent::SessionSynced(SessionSynced {
            pending: vec!["q-2".into()],
        }),
        SessionEvent::MessageCreated(MessageCreated {
            id: "m-1".into(),
            role: Role::User,
            text: "hi".into(),
            at_ms: 0,
            by: None,
        }),
        SessionEvent::QuestionDetached(QuestionRef { id: "q-2".into() }),
        SessionEvent::QuestionAttached(QuestionRef { id: "q-2".into() }),
    ]
}

#[test]
fn every_event_has_its_exact_name_and_round_trips_through_its_data() {
    let names: Vec<&str> = events().iter().map(SessionEvent::name).collect();
    assert_eq!(
        names,
        [
            "question/requested",
            "question/resolved",
            "session/synced",
            "message/created",
            "question/detached",
            "question/attached"
        ]
    );
    for event in events() {
        assert_eq!(
            SessionEvent::parse(event.name(), &event.data()),
            Some(event)
        );
    }
}

#[test]
fn event_data_uses_the_exact_field_names() {
    let data: Vec<serde_json::Value> = events()
        .iter()
        .map(|e| serde_json::from_str(&e.data()).unwrap())
        .collect();
    assert_eq!(
        data[0],
        json!({"id": "q-1", "session": "default", "created_at_ms": 1_700_000_000_000u64,
               "request": {"questions": [{"id": "a", "question": "Which?"}]}})
    );
    assert_eq!(data[1], json!({"id": "q-1", "outcome": "cancelled"}));
    assert_eq!(data[2], json!({"pending": ["q-2"]}));
    assert_eq!(
        data[3],
        json!({"id": "m-1", "role": "user", "text": "hi", "at_ms": 0})
    );
    assert_eq!(data[4], json!({"id": "q-2"}));
    assert_eq!(data[5], json!({"id": "q-2"}));
}

#[test]
fn an_unknown_event_or_unreadable_data_parses_to_none() {
    assert_eq!(SessionEvent::parse("question/updated", "{}"), None);
    assert_eq!(SessionEvent::parse(QUESTION_RESOLVED, "{\"id\": 1}"), None);
}

#[test]
fn every_outcome_has_its_wire_string() {
    for (outcome, wire) in [
        (Outcome::Answered, "answered"),
        (Outcome::Cancelled, "cancelled"),
        (Outcome::Aborted, "aborted"),
        (Outcome::Timeout, "timeout"),
        (Outcome::Disposed, "disposed"),
    ] {
        assert_eq!(outcome.as_str(), wire);
        assert_eq!(serde_json::to_value(outcome).unwrap(), json!(wire));
    }
}

#[test]
fn a_posted_message_rejects_unknown_fields() {
    assert!(serde_json::from_value::<PostMessage>(json!({"text": "hi"})).is_ok());
    assert!(serde_json::from_value::<PostMessage>(json!({"text": "hi", "role": "agent"})).is_err());
}

#[test]
fn a_posted_message_is_not_blank_and_holds_at_most_the_free_text_limit() {
    use ask_user_core::ErrorCode;
    use ask_user_core::limits::MAX_CUSTOM_CHARS;
    let message = |text: String| PostMessage { text };
    assert!(message("hi".to_owned()).validate().is_ok());
    // Counted in characters, not bytes: 8,000 three-byte characters fit.
    assert!(message("€".repeat(MAX_CUSTOM_CHARS)).validate().is_ok());
    let blank = message(" \n".to_owned()).validate().unwrap_err();
    assert_eq!(blank.code, ErrorCode::BadRequest);
    let long = message("a".repeat(MAX_CUSTOM_CHARS + 1))
        .validate()
        .unwrap_err();
    assert_eq!(long.code, ErrorCode::BadRequest);
    assert!(
        long.message
            .contains(&format!("at most {MAX_CUSTOM_CHARS} characters, got 8001")),
        "{long}"
    );
}

#[test]
fn the_pending_list_by_reference_serialises_exactly_as_the_owned_list() {
    let asker = AskedBy {
        kind: AskerKind::Mcp,
        name: "claude-code".to_owned(),
        version: Some("2.1.0".to_owned()),
    };
    let owned = PendingList {
        pending: vec![
            PendingQuestion {
                id: "q_1".to_owned(),
                request: request(),
                created_at_ms: 42,
                asked_by: Some(asker),
            },
            PendingQuestion {
                id: "q_2".to_owned(),
                request: request(),
                created_at_ms: 43,
                asked_by: None,
            },
        ],
    };
    let borrowed = PendingListRef {
        pending: owned
            .pending
            .iter()
            .map(|q| PendingQuestionRef {
                id: &q.id,
                request: &q.request,
                created_at_ms: q.created_at_ms,
                asked_by: q.asked_by.as_ref(),
            })
            .collect(),
    };
    assert_eq!(
        serde_json::to_string(&borrowed).unwrap(),
        serde_json::to_string(&owned).unwrap()
    );
}

#[test]
fn outcome_and_role_words_read_back_as_serde_writes_them() {
    use ask_user_core::wire::{Outcome, Role};
    for outcome in Outcome::ALL {
        let json = serde_json::to_string(&outcome).unwrap();
        assert_eq!(json, format!("\"{}\"", outcome.as_str()));
        assert_eq!(Outcome::from_wire(outcome.as_str()), Some(outcome));
    }
    for role in Role::ALL {
        let json = serde_json::to_string(&role).unwrap();
        assert_eq!(json, format!("\"{}\"", role.as_str()));
        assert_eq!(Role::from_wire(role.as_str()), Some(role));
    }
    assert_eq!(Outcome::from_wire("Answered"), None);
    assert_eq!(Role::from_wire("person"), None);
}

#[test]
fn an_id_is_one_to_max_bytes_of_letters_digits_underscore_and_hyphen() {
    use ask_user_core::wire::is_id;
    assert!(is_id("q_0aZ-9", 64));
    assert!(is_id(&"a".repeat(64), 64));
    assert!(!is_id(&"a".repeat(65), 64));
    assert!(!is_id("", 64));
    for bad in ["a b", "a/b", "a.b", "é", "a\u{202e}"] {
        assert!(!is_id(bad, 64), "{bad:?}");
    }
}
