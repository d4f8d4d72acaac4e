//! The conversation's entries: merged once each, in time order, bounded; and
//! what a record of a resolved question shows.

use ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES;
use ask_user_core::transcript::{RecordAnswer, RecordItem, merge, record_view};
use ask_user_core::wire::{Outcome, TranscriptEntry, TranscriptRecord};
use serde_json::json;

fn message(id: &str, at_ms: u64) -> TranscriptEntry {
    serde_json::from_value(
        json!({"kind": "message", "id": id, "role": "agent", "text": id, "at_ms": at_ms}),
    )
    .unwrap()
}

fn record(value: serde_json::Value) -> TranscriptRecord {
    serde_json::from_value(value).expect("a record")
}

fn ids(entries: &[TranscriptEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e {
            TranscriptEntry::Message(m) => m.id.clone(),
            TranscriptEntry::Record(r) => r.id.clone(),
        })
        .collect()
}

const THREE: &str = r#"{"questions": [
    {"id": "db", "question": "Which database?", "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
    {"id": "checks", "question": "Which checks?", "multi_select": true, "options": [{"label": "Unit"}, {"label": "Browser"}]},
    {"id": "name", "question": "What name?"}
]}"#;

#[test]
fn an_entry_already_there_is_not_added_again() {
    let mut entries = Vec::new();
    assert!(merge(&mut entries, message("m1", 10)));
    assert!(!merge(&mut entries, message("m1", 10)), "a replay");
    assert_eq!(ids(&entries), ["m1"]);
}

#[test]
fn a_message_and_a_record_with_the_same_id_are_different_entries() {
    let mut entries = vec![message("x", 10)];
    let r = record(
        json!({"id": "x", "request": serde_json::from_str::<serde_json::Value>(THREE).unwrap(),
        "created_at_ms": 5, "resolved_at_ms": 20, "outcome": "cancelled"}),
    );
    assert!(merge(&mut entries, TranscriptEntry::Record(r)));
    assert_eq!(entries.len(), 2);
}

#[test]
fn entries_go_in_time_order_whatever_order_they_arrive_in_and_untimed_ones_go_last() {
    let mut entries = Vec::new();
    merge(&mut entries, message("b", 20));
    merge(&mut entries, message("d", 40));
    merge(&mut entries, message("a", 10));
    merge(&mut entries, message("c", 20));
    merge(&mut entries, message("old-host", 0));
    assert_eq!(ids(&entries), ["a", "b", "c", "d", "old-host"]);
}

#[test]
fn beyond_the_cap_the_oldest_entries_are_dropped() {
    let mut entries = Vec::new();
    for i in 1..=(MAX_TRANSCRIPT_ENTRIES as u64 + 3) {
        merge(&mut entries, message(&format!("m{i}"), i));
    }
    assert_eq!(entries.len(), MAX_TRANSCRIPT_ENTRIES);
    assert_eq!(ids(&entries)[0], "m4");
}

#[test]
fn an_answered_record_shows_chosen_labels_without_the_suffix_own_words_and_skipped() {
    let view = record_view(&record(json!({
        "id": "q1", "request": serde_json::from_str::<serde_json::Value>(THREE).unwrap(),
        "asked_by": {"kind": "mcp", "name": "Claude Code", "version": "2.0"},
        "created_at_ms": 1, "resolved_at_ms": 2, "outcome": "answered",
        "answer": {"answers": [
            {"id": "db", "selected": ["Postgres (Recommended)"]},
            {"id": "checks", "selected": ["Unit", "Browser"]},
            {"id": "name", "selected": []}
        ]}
    })));
    assert_eq!(view.asked_by.as_deref(), Some("Claude Code"));
    assert_eq!(view.outcome, Outcome::Answered);
    assert_eq!(
        view.items,
        vec![
            RecordItem {
                question: "Which database?".into(),
                answer: Some(RecordAnswer::Given {
                    labels: vec!["Postgres".into()],
                    custom: None
                })
            },
            RecordItem {
                question: "Which checks?".into(),
                answer: Some(RecordAnswer::Given {
                    labels: vec!["Unit".into(), "Browser".into()],
                    custom: None
                })
            },
            RecordItem {
                question: "What name?".into(),
                answer: Some(RecordAnswer::Skipped)
            },
        ]
    );
    assert_eq!(view.note, None);
}

#[test]
fn a_reply_instead_record_carries_the_note_and_free_text_shows_as_typed() {
    let view = record_view(&record(json!({
        "id": "q1", "request": serde_json::from_str::<serde_json::Value>(THREE).unwrap(),
        "created_at_ms": 1, "resolved_at_ms": 2, "outcome": "answered",
        "answer": {"answers": [
            {"id": "db", "selected": [], "custom": "MariaDB"},
            {"id": "checks", "selected": []},
            {"id": "name", "selected": []}
        ], "note": "Talk first."}
    })));
    assert_eq!(view.note.as_deref(), Some("Talk first."));
    assert_eq!(
        view.items[0].answer,
        Some(RecordAnswer::Given {
            labels: vec![],
            custom: Some("MariaDB".into())
        })
    );
    assert_eq!(view.asked_by, None);
}

#[test]
fn a_record_that_was_not_answered_lists_the_questions_and_only_the_outcome() {
    for outcome in ["cancelled", "timeout", "aborted", "disposed"] {
        let view = record_view(&record(json!({
            "id": "q1", "request": serde_json::from_str::<serde_json::Value>(THREE).unwrap(),
            "created_at_ms": 1, "resolved_at_ms": 2, "outcome": outcome
        })));
        assert_eq!(view.outcome.as_str(), outcome);
        assert_eq!(view.items.len(), 3);
        assert!(view.items.iter().all(|i| i.answer.is_none()), "{view:?}");
        assert_eq!(view.note, None);
    }
}

#[test]
fn an_empty_conversation_says_what_to_do_once_loaded_and_only_while_nothing_is_there() {
    use ask_user_core::transcript::{EmptyState, empty_state};
    assert_eq!(empty_state(false, 0, 0, false), None, "not before the load");
    assert_eq!(
        empty_state(true, 0, 0, false),
        Some(EmptyState::NoQuestionsYet)
    );
    assert_eq!(empty_state(true, 0, 0, true), Some(EmptyState::Demo));
    assert_eq!(empty_state(true, 1, 0, true), None, "a message is there");
    assert_eq!(empty_state(true, 0, 1, false), None, "a question waits");
}
