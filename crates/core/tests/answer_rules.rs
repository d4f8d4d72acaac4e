//! Every answer rule and normalisation: each failure asserts `BAD_ANSWER` and
//! that the message names the offending answer, question or label.

use ask_user_core::limits::MAX_CUSTOM_CHARS;
use ask_user_core::{Answer, AnswerBatch, AskRequest, ErrorCode};
use serde_json::{Value, json};

/// `db`: single-select; `features`: multi-select; `notes`: free text.
fn request() -> AskRequest {
    AskRequest::from_value(json!({"questions": [
        {"id": "db", "question": "Which database?",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "features", "question": "Which features?", "multi_select": true,
         "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}]},
        {"id": "notes", "question": "Anything else?"}
    ]}))
    .unwrap()
}

fn batch(answers: Value) -> AnswerBatch {
    AnswerBatch::from_value(json!({ "answers": answers })).unwrap()
}

fn normalize(answers: Value) -> Result<AnswerBatch, ask_user_core::UserInteractionError> {
    batch(answers).normalize(&request())
}

fn normalized(answers: Value) -> Value {
    let result = normalize(answers).unwrap_or_else(|e| panic!("rejected: {e}"));
    serde_json::to_value(result).unwrap()
}

fn rejects(answers: Value, names: &[&str]) -> String {
    let error = normalize(answers).expect_err("accepted an invalid answer");
    assert_eq!(error.code, ErrorCode::BadAnswer, "{}", error.message);
    for name in names {
        assert!(
            error.message.contains(name),
            "message {:?} does not name {name:?}",
            error.message
        );
    }
    error.message
}

fn complete() -> Value {
    json!([
        {"id": "db", "selected": ["Postgres (Recommended)"]},
        {"id": "features", "selected": ["Auth", "Search"]},
        {"id": "notes", "selected": [], "custom": "ship it friday"}
    ])
}

// --- accepted answers ----------------------------------------------------------

#[test]
fn a_complete_normalised_batch_comes_back_unchanged() {
    assert_eq!(normalized(complete()), json!({ "answers": complete() }));
    assert!(batch(complete()).validate(&request()).is_ok());
}

#[test]
fn a_recommended_label_comes_back_with_its_suffix() {
    let out = normalize(complete()).unwrap();
    assert_eq!(
        out.answer("db").unwrap().selected,
        ["Postgres (Recommended)"]
    );
}

#[test]
fn answers_out_of_order_are_put_in_question_order() {
    let out = normalized(json!([
        {"id": "notes", "selected": []},
        {"id": "features", "selected": ["Billing"]},
        {"id": "db", "selected": ["SQLite"]}
    ]));
    let ids: Vec<&str> = out["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["db", "features", "notes"]);
}

#[test]
fn a_skipped_item_is_an_empty_selection_without_custom() {
    let out = normalize(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": []}
    ]))
    .unwrap();
    assert!(out.answers.iter().all(Answer::is_skipped));
    assert_eq!(
        serde_json::to_value(&out.answers[0]).unwrap(),
        json!({"id": "db", "selected": []})
    );
}

#[test]
fn a_missing_selected_reads_as_an_empty_selection() {
    let out = normalize(json!([{"id": "db"}, {"id": "features"}, {"id": "notes"}])).unwrap();
    assert_eq!(out.answers[0], Answer::skipped("db"));
}

#[test]
fn custom_on_a_single_select_question_overrides_and_clears_selected() {
    let out = normalized(json!([
        {"id": "db", "selected": ["SQLite"], "custom": "MySQL"},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": []}
    ]));
    assert_eq!(
        out["answers"][0],
        json!({"id": "db", "selected": [], "custom": "MySQL"})
    );
}

#[test]
fn custom_on_a_multi_select_question_supplements_selected() {
    let out = normalized(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": ["Search", "Auth"], "custom": "Audit log"},
        {"id": "notes", "selected": []}
    ]));
    assert_eq!(
        out["answers"][1],
        json!({"id": "features", "selected": ["Search", "Auth"], "custom": "Audit log"})
    );
}

#[test]
fn an_optionless_question_answers_with_custom_only() {
    let out = normalized(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": "none"}
    ]));
    assert_eq!(
        out["answers"][2],
        json!({"id": "notes", "selected": [], "custom": "none"})
    );
}

#[test]
fn custom_is_trimmed() {
    let out = normalize(json!([
        {"id": "db", "selected": [], "custom": "  MySQL \n"},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": "\u{3000}全角空白\u{3000}"}
    ]))
    .unwrap();
    assert_eq!(out.answers[0].custom.as_deref(), Some("MySQL"));
    assert_eq!(out.answers[2].custom.as_deref(), Some("全角空白"));
}

#[test]
fn whitespace_only_custom_means_absent_and_keeps_the_selection() {
    let out = normalized(json!([
        {"id": "db", "selected": ["SQLite"], "custom": "   "},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": ""}
    ]));
    assert_eq!(
        out["answers"][0],
        json!({"id": "db", "selected": ["SQLite"]})
    );
    assert_eq!(out["answers"][2], json!({"id": "notes", "selected": []}));
}

#[test]
fn custom_of_8000_multibyte_characters_plus_padding_is_accepted() {
    let text = "界".repeat(MAX_CUSTOM_CHARS);
    let out = normalize(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": format!("  {text}  ")}
    ]))
    .unwrap();
    assert_eq!(out.answers[2].custom.as_deref(), Some(text.as_str()));
}

#[test]
fn custom_of_8001_characters_is_rejected_naming_the_answer() {
    rejects(
        json!([
            {"id": "db", "selected": []},
            {"id": "features", "selected": []},
            {"id": "notes", "selected": [], "custom": "界".repeat(MAX_CUSTOM_CHARS + 1)}
        ]),
        &["answers[2]", "\"notes\"", ".custom", "8000", "8001"],
    );
}

// --- rejected answers -----------------------------------------------------------

#[test]
fn a_missing_answer_is_rejected_naming_the_question() {
    let message = rejects(
        json!([{"id": "db", "selected": []}, {"id": "notes", "selected": []}]),
        &["\"features\""],
    );
    assert!(message.contains("skip"), "says how to skip: {message}");
}

#[test]
fn an_empty_batch_is_rejected_naming_the_first_question() {
    rejects(json!([]), &["\"db\""]);
}

#[test]
fn an_unknown_id_is_rejected_naming_it() {
    let mut answers = complete();
    answers
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "color", "selected": []}));
    rejects(answers, &["answers[3].id", "\"color\""]);
}

#[test]
fn a_repeated_id_is_rejected_naming_it() {
    let mut answers = complete();
    answers
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "db", "selected": []}));
    rejects(answers, &["answers[3].id", "\"db\"", "more than once"]);
}

#[test]
fn a_label_that_is_not_an_option_is_rejected_naming_it() {
    let mut answers = complete();
    answers[1]["selected"] = json!(["Auth", "Chat"]);
    rejects(
        answers,
        &["answers[1]", "\"features\"", "selected", "\"Chat\""],
    );
}

#[test]
fn a_label_without_its_recommendation_suffix_is_not_an_option() {
    let mut answers = complete();
    answers[0]["selected"] = json!(["Postgres"]);
    rejects(answers, &["answers[0]", "\"Postgres\""]);
}

#[test]
fn labels_match_exactly_not_ignoring_case() {
    let mut answers = complete();
    answers[0]["selected"] = json!(["sqlite"]);
    rejects(answers, &["\"sqlite\""]);
}

#[test]
fn a_repeated_label_is_rejected_naming_it() {
    let mut answers = complete();
    answers[1]["selected"] = json!(["Auth", "Billing", "Auth"]);
    rejects(answers, &["answers[1]", "\"Auth\"", "more than once"]);
}

#[test]
fn two_labels_on_a_single_select_question_are_rejected() {
    let mut answers = complete();
    answers[0]["selected"] = json!(["Postgres (Recommended)", "SQLite"]);
    rejects(answers, &["answers[0]", "\"db\"", "single-select"]);
}

#[test]
fn two_labels_on_a_single_select_question_are_rejected_even_with_custom() {
    let mut answers = complete();
    answers[0]["selected"] = json!(["Postgres (Recommended)", "SQLite"]);
    answers[0]["custom"] = json!("MySQL");
    rejects(answers, &["answers[0]", "single-select"]);
}

#[test]
fn a_selection_on_an_optionless_question_is_rejected() {
    let mut answers = complete();
    answers[2]["selected"] = json!(["ship it"]);
    rejects(
        answers,
        &["answers[2]", "\"notes\"", "no options", "`custom`"],
    );
}

// --- parsing answer batches -------------------------------------------------------

#[test]
fn an_unknown_answer_field_is_rejected_naming_it() {
    let error =
        AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": [], "value": "x"}]}"#)
            .unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(
        error.message.contains("answers[0].value"),
        "{}",
        error.message
    );
}

#[test]
fn selected_that_is_a_string_is_rejected_naming_it() {
    let error =
        AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": "SQLite"}]}"#).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(
        error.message.contains("answers[0].selected"),
        "{}",
        error.message
    );
}

#[test]
fn an_answer_given_as_an_array_is_rejected_naming_it() {
    let error = AnswerBatch::from_json(r#"{"answers": [["db", ["SQLite"]]]}"#).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(error.message.contains("answers[0]"), "{}", error.message);
}

#[test]
fn answer_text_that_is_not_json_is_bad_answer() {
    for text in ["{", "[]", "{\"answers\": []} trailing"] {
        let error = AnswerBatch::from_json(text).unwrap_err();
        assert_eq!(error.code, ErrorCode::BadAnswer, "{text}");
    }
    let error = AnswerBatch::from_json("{}").unwrap_err();
    assert!(error.message.contains("`answers`"), "{}", error.message);
}

// --- validate and idempotence ------------------------------------------------------

#[test]
fn validate_rejects_a_valid_but_unnormalised_batch() {
    let reordered = batch(json!([
        {"id": "features", "selected": []},
        {"id": "db", "selected": []},
        {"id": "notes", "selected": []}
    ]));
    let error = reordered.validate(&request()).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(
        error.message.contains("not normalised"),
        "{}",
        error.message
    );

    let untrimmed = batch(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": " x "}
    ]));
    assert_eq!(
        untrimmed.validate(&request()).unwrap_err().code,
        ErrorCode::BadAnswer
    );
}

#[test]
fn validate_reports_the_rule_an_invalid_batch_breaks() {
    let error = batch(json!([{"id": "db", "selected": ["Nope"]}]))
        .validate(&request())
        .unwrap_err();
    assert!(error.message.contains("\"Nope\""), "{}", error.message);
}

#[test]
fn normalising_twice_changes_nothing() {
    let once = normalize(json!([
        {"id": "notes", "selected": [], "custom": " a "},
        {"id": "db", "selected": ["SQLite"], "custom": "b"},
        {"id": "features", "selected": ["Billing"], "custom": "  "}
    ]))
    .unwrap();
    assert_eq!(once.clone().normalize(&request()).unwrap(), once);
    assert!(once.validate(&request()).is_ok());
}

#[test]
fn answer_helpers_describe_skips() {
    let skipped = Answer::skipped("db");
    assert_eq!(
        serde_json::to_value(&skipped).unwrap(),
        json!({"id": "db", "selected": []})
    );
    assert!(skipped.is_skipped());
    let typed = Answer {
        custom: Some("x".into()),
        ..Answer::skipped("db")
    };
    assert!(!typed.is_skipped());
    let chosen = Answer {
        selected: vec!["SQLite".into()],
        ..Answer::skipped("db")
    };
    assert!(!chosen.is_skipped());
    let blank = Answer {
        custom: Some("  ".into()),
        ..Answer::skipped("db")
    };
    assert!(blank.is_skipped());
}

#[test]
fn repeats_are_caught_even_against_an_unvalidated_request_with_many_options() {
    // normalize does not re-validate the request; it must stay correct anyway.
    let labels: Vec<Value> = (0..20).map(|i| json!({"label": format!("L{i}")})).collect();
    let request: AskRequest = serde_json::from_value(json!({"questions": [
        {"id": "many", "question": "Pick", "multi_select": true, "options": labels}
    ]}))
    .unwrap();
    let ok = batch(json!([{"id": "many", "selected": ["L19", "L18", "L0"]}]));
    assert!(ok.normalize(&request).is_ok());
    let repeated = batch(json!([{"id": "many", "selected": ["L19", "L0", "L19"]}]));
    let error = repeated.normalize(&request).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(error.message.contains("\"L19\""), "{}", error.message);
}
