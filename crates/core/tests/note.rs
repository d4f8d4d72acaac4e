//! The `note` of an answer batch ("Reply instead"): validated and normalised
//! like the rest of the batch, and explained to the model.

use ask_user_core::limits::MAX_NOTE_CHARS;
use ask_user_core::tool::{TOOL_DESCRIPTION, parse_result, render_result};
use ask_user_core::{AnswerBatch, AskRequest, ErrorCode};
use serde_json::{Value, json};

/// `db`: single-select; `features`: multi-select; `notes`: free text.
fn request() -> AskRequest {
    AskRequest::from_value(json!({"questions": [
        {"id": "db", "question": "Which database?",
         "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
        {"id": "features", "question": "Which features?", "multi_select": true,
         "options": [{"label": "Auth"}, {"label": "Search"}]},
        {"id": "notes", "question": "Anything else?"}
    ]}))
    .unwrap()
}

fn normalized(batch: Value) -> Value {
    let batch = AnswerBatch::from_value(batch).unwrap();
    let normalized = batch
        .normalize(&request())
        .unwrap_or_else(|e| panic!("rejected: {e}"));
    serde_json::to_value(normalized).unwrap()
}

#[test]
fn a_note_skips_every_question_left_out_and_keeps_question_order() {
    assert_eq!(
        normalized(json!({
            "answers": [{"id": "features", "selected": ["Search"]}],
            "note": "Let's talk about the schema first."
        })),
        json!({
            "answers": [
                {"id": "db", "selected": []},
                {"id": "features", "selected": ["Search"]},
                {"id": "notes", "selected": []}
            ],
            "note": "Let's talk about the schema first."
        })
    );
}

#[test]
fn a_note_alone_answers_every_question_as_skipped() {
    let batch = normalized(json!({"answers": [], "note": "not now"}));
    assert_eq!(
        batch["answers"],
        json!([
            {"id": "db", "selected": []},
            {"id": "features", "selected": []},
            {"id": "notes", "selected": []}
        ])
    );
}

#[test]
fn without_a_note_a_missing_answer_is_still_refused() {
    let error = AnswerBatch::from_value(json!({"answers": [{"id": "db", "selected": []}]}))
        .unwrap()
        .normalize(&request())
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(
        error.message.contains("\"features\" has no answer"),
        "{}",
        error.message
    );
}

#[test]
fn a_blank_note_is_no_note_and_leaves_missing_answers_refused() {
    let error = AnswerBatch::from_value(json!({"answers": [], "note": " \n\t "}))
        .unwrap()
        .normalize(&request())
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    let full = json!([
        {"id": "db", "selected": ["SQLite"]},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": []}
    ]);
    assert_eq!(
        normalized(json!({"answers": full, "note": "   "})),
        json!({ "answers": full }),
        "an empty note is dropped from the batch"
    );
}

#[test]
fn a_note_is_trimmed() {
    let batch = normalized(json!({"answers": [], "note": "  wait for me \n"}));
    assert_eq!(batch["note"], json!("wait for me"));
}

#[test]
fn a_note_of_exactly_the_limit_is_kept_and_one_more_character_is_refused() {
    let longest = "说".repeat(MAX_NOTE_CHARS);
    let batch = normalized(json!({"answers": [], "note": format!(" {longest} ")}));
    assert_eq!(batch["note"], json!(longest));

    let error = AnswerBatch::from_value(json!({"answers": [], "note": format!("{longest}x")}))
        .unwrap()
        .normalize(&request())
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert_eq!(
        error.message,
        format!(
            "note: at most {MAX_NOTE_CHARS} characters, got {}",
            MAX_NOTE_CHARS + 1
        )
    );
}

#[test]
fn a_note_that_is_not_text_is_refused_naming_note() {
    for text in [
        r#"{"answers": [], "note": 7}"#,
        r#"{"answers": [], "note": ["a"]}"#,
    ] {
        let error = AnswerBatch::from_json(text).unwrap_err();
        assert_eq!(error.code, ErrorCode::BadAnswer);
        assert!(error.message.starts_with("note:"), "{}", error.message);
    }
}

#[test]
fn the_answers_of_a_batch_with_a_note_are_still_checked() {
    let error = AnswerBatch::from_value(json!({
        "answers": [{"id": "db", "selected": ["MySQL"]}],
        "note": "hm"
    }))
    .unwrap()
    .normalize(&request())
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(error.message.contains("\"MySQL\""), "{}", error.message);
}

#[test]
fn normalising_a_batch_with_a_note_twice_changes_nothing() {
    let once = AnswerBatch::from_value(json!({
        "answers": [{"id": "notes", "selected": [], "custom": " x "}],
        "note": " later "
    }))
    .unwrap()
    .normalize(&request())
    .unwrap();
    assert_eq!(once.clone().normalize(&request()).unwrap(), once);
    assert!(once.validate(&request()).is_ok());
    let unnormalised = AnswerBatch {
        note: Some(" later ".into()),
        ..once
    };
    assert!(unnormalised.validate(&request()).is_err());
}

#[test]
fn the_note_reaches_the_result_text_and_reads_back() {
    let batch = AnswerBatch::from_value(json!({"answers": [], "note": "call me"}))
        .unwrap()
        .normalize(&request())
        .unwrap();
    let text = render_result(&Ok(batch.clone()));
    assert!(text.ends_with(r#""note":"call me"}"#), "{text}");
    assert_eq!(parse_result(&text), Some(Ok(batch)));
}

#[test]
fn a_batch_without_a_note_serialises_without_the_field() {
    let text = render_result(&Ok(AnswerBatch::new(vec![])));
    assert_eq!(text, r#"{"answers":[]}"#);
}

#[test]
fn the_tool_description_explains_the_note() {
    assert!(
        TOOL_DESCRIPTION.contains("top-level `note`"),
        "{TOOL_DESCRIPTION}"
    );
    assert!(TOOL_DESCRIPTION.contains("\\\"note\\\"?") || TOOL_DESCRIPTION.contains("\"note\"?"));
}
