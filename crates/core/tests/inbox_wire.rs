//! Issue 13's wire: who asked, transcripts, the session list and the inbox
//! stream; and old frames without the new fields still parse.

use ask_user_core::limits::{MAX_ASKER_NAME, MAX_ASKER_VERSION, MAX_FIRST_QUESTION_CHARS};
use ask_user_core::wire::*;
use ask_user_core::{AnswerBatch, AskRequest};
use serde_json::{Value, json};

fn request() -> AskRequest {
    AskRequest::from_value(json!({"questions": [{"id": "a", "question": "Which?"}]})).unwrap()
}

fn mcp() -> AskedBy {
    AskedBy::new(AskerKind::Mcp, "claude-code", Some("1.0.3")).unwrap()
}

fn record(outcome: Outcome) -> TranscriptRecord {
    TranscriptRecord {
        by: None,
        id: "q-1".into(),
        request: request(),
        asked_by: Some(mcp()),
        created_at_ms: 10,
        resolved_at_ms: 20,
        outcome,
        answer: (outcome == Outcome::Answered).then(|| AnswerBatch {
            answers: vec![ask_user_core::Answer::skipped("a")],
            note: Some("later".into()),
        }),
    }
}

// --- who asked ----------------------------------------------------------------

#[test]
fn an_agent_header_with_a_version_splits_at_the_first_slash() {
    let asker = AskedBy::from_agent_header(AskerKind::Http, "Claude Code/1.2/beta").unwrap();
    assert_eq!(asker.kind, AskerKind::Http);
    assert_eq!(asker.name, "Claude Code");
    assert_eq!(asker.version.as_deref(), Some("1.2/beta"));
}

#[test]
fn an_agent_header_without_a_version_or_with_an_empty_one_has_none() {
    for header in ["my-bot", "my-bot/", " my-bot /  "] {
        let asker = AskedBy::from_agent_header(AskerKind::Http, header).unwrap();
        assert_eq!(asker.name, "my-bot", "{header:?}");
        assert_eq!(asker.version, None, "{header:?}");
    }
}

#[test]
fn an_agent_header_that_names_nobody_is_no_asker() {
    for header in ["", "   ", "/1.0", " \u{1b}\u{7} /2", "\t"] {
        assert_eq!(
            AskedBy::from_agent_header(AskerKind::Http, header),
            None,
            "{header:?}"
        );
    }
}

#[test]
fn control_characters_are_removed_and_the_text_trimmed() {
    let asker =
        AskedBy::from_agent_header(AskerKind::Http, "\u{1b}evil\r\nbot\u{7f} /\t1.0\u{0}").unwrap();
    assert_eq!(asker.name, "evilbot");
    assert_eq!(asker.version.as_deref(), Some("1.0"));
}

#[test]
fn the_name_and_version_are_capped_in_characters() {
    let name = "名".repeat(MAX_ASKER_NAME + 5);
    let version = "9".repeat(MAX_ASKER_VERSION + 5);
    let asker = AskedBy::new(AskerKind::Mcp, &name, Some(&version)).unwrap();
    assert_eq!(asker.name.chars().count(), MAX_ASKER_NAME);
    assert_eq!(asker.version.unwrap().chars().count(), MAX_ASKER_VERSION);
    let exact = "n".repeat(MAX_ASKER_NAME);
    assert_eq!(
        AskedBy::new(AskerKind::Mcp, &exact, None).unwrap().name,
        exact
    );
}

#[test]
fn the_cli_header_makes_a_cli_asker_and_any_other_an_http_one() {
    let cli = AskedBy::from_http_header(&format!("{CLI_ASKER_NAME}/0.1.0")).unwrap();
    assert_eq!(
        cli,
        AskedBy {
            kind: AskerKind::Cli,
            name: "ask-user ask".into(),
            version: Some("0.1.0".into())
        }
    );
    assert_eq!(
        AskedBy::from_http_header("ask-user").unwrap().kind,
        AskerKind::Http
    );
    assert_eq!(AskedBy::from_http_header(""), None);
}

#[test]
fn asked_by_has_its_exact_wire_form() {
    assert_eq!(
        serde_json::to_value(mcp()).unwrap(),
        json!({"kind": "mcp", "name": "claude-code", "version": "1.0.3"})
    );
    for (kind, wire) in [
        (AskerKind::Mcp, "mcp"),
        (AskerKind::Cli, "cli"),
        (AskerKind::Http, "http"),
        (AskerKind::Demo, "demo"),
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(wire));
    }
    let unversioned = AskedBy::new(AskerKind::Http, "x", None).unwrap();
    assert_eq!(
        serde_json::to_value(unversioned).unwrap(),
        json!({"kind": "http", "name": "x"})
    );
}

// --- frames ---------------------------------------------------------------------

#[test]
fn requested_and_pending_carry_asked_by_and_omit_it_when_unknown() {
    let requested = QuestionRequested {
        id: "q-1".into(),
        session: "s".into(),
        request: request(),
        created_at_ms: 1,
        asked_by: Some(mcp()),
    };
    let data: Value = serde_json::to_value(&requested).unwrap();
    assert_eq!(data["asked_by"]["name"], json!("claude-code"));
    let event = SessionEvent::QuestionRequested(requested.clone());
    assert_eq!(
        SessionEvent::parse(event.name(), &event.data()),
        Some(event)
    );

    let anonymous = QuestionRequested {
        asked_by: None,
        ..requested
    };
    assert!(
        serde_json::to_value(&anonymous)
            .unwrap()
            .get("asked_by")
            .is_none()
    );

    let pending = PendingQuestion {
        id: "q-1".into(),
        request: request(),
        created_at_ms: 1,
        asked_by: Some(mcp()),
    };
    let text = serde_json::to_string(&pending).unwrap();
    assert_eq!(
        serde_json::from_str::<PendingQuestion>(&text).unwrap(),
        pending
    );
}

#[test]
fn old_frames_without_the_new_fields_still_parse() {
    let requested = SessionEvent::parse(
        QUESTION_REQUESTED,
        r#"{"id":"q","session":"s","created_at_ms":1,"request":{"questions":[{"id":"a","question":"Which?"}]}}"#,
    );
    assert!(matches!(
        requested,
        Some(SessionEvent::QuestionRequested(QuestionRequested {
            asked_by: None,
            ..
        }))
    ));
    let resolved = SessionEvent::parse(QUESTION_RESOLVED, r#"{"id":"q","outcome":"timeout"}"#);
    assert!(matches!(
        resolved,
        Some(SessionEvent::QuestionResolved(QuestionResolved {
            record: None,
            ..
        }))
    ));
    let message = SessionEvent::parse(MESSAGE_CREATED, r#"{"id":"m","role":"agent","text":"hi"}"#);
    assert!(matches!(
        message,
        Some(SessionEvent::MessageCreated(MessageCreated {
            at_ms: 0,
            ..
        }))
    ));
    let pending: PendingList = serde_json::from_str(
        r#"{"pending":[{"id":"q","created_at_ms":1,"request":{"questions":[{"id":"a","question":"Which?"}]}}]}"#,
    )
    .unwrap();
    assert_eq!(pending.pending[0].asked_by, None);
    let batch = AnswerBatch::from_json(r#"{"answers":[]}"#).unwrap();
    assert_eq!(batch.note, None);
}

#[test]
fn a_resolved_frame_carries_its_record() {
    let event = SessionEvent::QuestionResolved(QuestionResolved {
        id: "q-1".into(),
        outcome: Outcome::Answered,
        record: Some(record(Outcome::Answered)),
    });
    assert_eq!(
        SessionEvent::parse(event.name(), &event.data()),
        Some(event.clone())
    );
    let data: Value = serde_json::from_str(&event.data()).unwrap();
    assert_eq!(data["record"]["answer"]["note"], json!("later"));
    assert_eq!(data["record"]["resolved_at_ms"], json!(20));
}

#[test]
fn transcript_entries_are_tagged_by_kind_and_round_trip() {
    let transcript = Transcript {
        entries: vec![
            TranscriptEntry::Message(MessageCreated {
                id: "m-1".into(),
                role: Role::Agent,
                text: "**hi**".into(),
                at_ms: 5,
                by: None,
            }),
            TranscriptEntry::Record(record(Outcome::Answered)),
            TranscriptEntry::Record(record(Outcome::Cancelled)),
        ],
        demo_agent: false,
    };
    let data = serde_json::to_value(&transcript).unwrap();
    assert_eq!(
        data["entries"][0],
        json!({"kind": "message", "id": "m-1", "role": "agent", "text": "**hi**", "at_ms": 5})
    );
    assert_eq!(
        data["entries"][2],
        json!({"kind": "record", "id": "q-1",
               "request": {"questions": [{"id": "a", "question": "Which?"}]},
               "asked_by": {"kind": "mcp", "name": "claude-code", "version": "1.0.3"},
               "created_at_ms": 10, "resolved_at_ms": 20, "outcome": "cancelled"})
    );
    let back: Transcript = serde_json::from_value(data).unwrap();
    assert_eq!(back, transcript);
    assert_eq!(
        back.entries
            .iter()
            .map(TranscriptEntry::at_ms)
            .collect::<Vec<_>>(),
        [5, 20, 20]
    );
}

// --- the inbox -------------------------------------------------------------------

fn entry(id: &str, pending: u32, last_activity_ms: u64) -> SessionEntry {
    SessionEntry {
        id: id.into(),
        pending,
        last_activity_ms,
        asked_by: None,
        first_question: None,
        newest_question: None,
    }
}

#[test]
fn sessions_order_pending_first_then_most_recent_then_by_id() {
    let mut sessions = [
        entry("idle-old", 0, 1),
        entry("b-waiting-old", 1, 2),
        entry("idle-new", 0, 9),
        entry("a-waiting-old", 3, 2),
        entry("waiting-new", 1, 8),
    ];
    sessions.sort_by(SessionEntry::urgency_order);
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "waiting-new",
            "a-waiting-old",
            "b-waiting-old",
            "idle-new",
            "idle-old"
        ]
    );
}

#[test]
fn the_first_question_preview_is_cut_in_characters() {
    let long = "问".repeat(MAX_FIRST_QUESTION_CHARS + 1);
    assert_eq!(
        SessionEntry::first_question_of(&long).chars().count(),
        MAX_FIRST_QUESTION_CHARS
    );
    assert_eq!(SessionEntry::first_question_of("short?"), "short?");
}

#[test]
fn the_inbox_event_has_its_name_and_round_trips() {
    let list = SessionList {
        sessions: vec![SessionEntry {
            asked_by: Some(mcp()),
            first_question: Some("Which?".into()),
            ..entry("s", 1, 7)
        }],
    };
    let event = InboxEvent::Changed(list);
    assert_eq!(event.name(), "inbox/changed");
    assert_eq!(INBOX_CHANGED, "inbox/changed");
    assert_eq!(
        InboxEvent::parse(event.name(), &event.data()),
        Some(event.clone())
    );
    let data: Value = serde_json::from_str(&event.data()).unwrap();
    assert_eq!(
        data,
        json!({"sessions": [{"id": "s", "pending": 1, "last_activity_ms": 7,
            "asked_by": {"kind": "mcp", "name": "claude-code", "version": "1.0.3"},
            "first_question": "Which?"}]})
    );
    assert_eq!(
        serde_json::to_value(entry("t", 0, 1)).unwrap(),
        json!({"id": "t", "pending": 0, "last_activity_ms": 1})
    );
}

#[test]
fn an_unknown_inbox_event_or_unreadable_data_parses_to_none() {
    assert_eq!(InboxEvent::parse("inbox/other", r#"{"sessions":[]}"#), None);
    assert_eq!(InboxEvent::parse(INBOX_CHANGED, r#"{"sessions":7}"#), None);
    assert_eq!(
        InboxEvent::parse(INBOX_CHANGED, r#"{"sessions":[]} x"#),
        None
    );
}
