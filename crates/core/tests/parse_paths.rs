//! `AskRequest::from_json` and `AnswerBatch::from_json` read a document
//! straight from its text when it has the vocabulary's shape, and through a
//! `serde_json::Value` otherwise (`from_value`, whose errors name the field).
//! Whatever the document, both ways give the same request or the same error.

use ask_user_core::{AnswerBatch, AskRequest};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Field names of the vocabulary (and a few it refuses), so generated
/// documents come close to real ones.
const KEYS: &[&str] = &[
    "questions",
    "id",
    "question",
    "header",
    "detail",
    "options",
    "label",
    "description",
    "multi_select",
    "intent",
    "kind",
    "approve",
    "answers",
    "selected",
    "custom",
    "value",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0u32..5).prop_map(|n| json!(n)),
        prop_oneof![
            Just("a".to_owned()),
            Just("b".to_owned()),
            Just("plan-review".to_owned()),
            Just("Yes (Recommended)".to_owned()),
            Just(" ".to_owned()),
            "[a-z界]{0,3}",
        ]
        .prop_map(Value::String),
    ]
}

/// Arbitrary JSON whose objects use the vocabulary's keys.
fn document() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<String, Value>>(),
                )
            }),
        ]
    })
}

/// A valid request and a valid answer to it, with some fields left out.
fn near_valid() -> impl Strategy<Value = (Value, Value)> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(multi, intent, custom)| {
        let mut question = json!({"id": "a", "question": "Which?",
            "options": [{"label": "X (Recommended)"}, {"label": "Y", "description": "why"}]});
        if multi {
            question["multi_select"] = json!(true);
        } else if intent {
            question["intent"] = json!({"kind": "plan-review", "approve": "Y"});
        }
        let mut answer = json!({"id": "a", "selected": ["Y"]});
        if custom {
            answer["custom"] = json!("mine");
        }
        (
            json!({"questions": [question, {"id": "b", "question": "Why?"}]}),
            json!({"answers": [answer]}),
        )
    })
}

fn same_request(text: &str) {
    let careful = serde_json::from_str::<Value>(text)
        .map_err(|e| e.to_string())
        .map(AskRequest::from_value);
    if let Ok(careful) = careful {
        assert_eq!(AskRequest::from_json(text), careful, "{text}");
    }
}

fn same_answer(text: &str) {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        assert_eq!(
            AnswerBatch::from_json(text),
            AnswerBatch::from_value(value),
            "{text}"
        );
    }
}

proptest! {
    #[test]
    fn any_document_reads_the_same_both_ways(document in document()) {
        let text = document.to_string();
        same_request(&text);
        same_answer(&text);
        // The same document inside the fields that have shapes of their own.
        same_request(&json!({"questions": [document.clone()]}).to_string());
        same_request(&json!({"questions": [{"id": "a", "question": "?", "options": [document.clone()]}]}).to_string());
        same_request(&json!({"questions": [{"id": "a", "question": "?", "intent": document.clone()}]}).to_string());
        same_answer(&json!({"answers": [document]}).to_string());
    }

    #[test]
    fn valid_documents_read_the_same_both_ways((request, answer) in near_valid()) {
        same_request(&request.to_string());
        same_answer(&answer.to_string());
    }
}

#[test]
fn a_valid_request_and_answer_are_read() {
    let request = AskRequest::from_json(
        r#"{"questions": [{"id": "a", "question": "Which?", "options": [{"label": "X"}, {"label": "Y"}]}]}"#,
    )
    .unwrap();
    assert_eq!(request.questions[0].options().len(), 2);
    let batch = AnswerBatch::from_json(r#"{"answers": [{"id": "a", "selected": ["Y"]}]}"#).unwrap();
    assert_eq!(
        batch.normalize(&request).unwrap().answers[0].selected,
        ["Y"]
    );
}

#[test]
fn duplicate_fields_read_the_same_both_ways() {
    // A `Value` keeps the last of two equal keys; the typed read refuses them,
    // so the careful way decides.
    same_request(r#"{"questions": [], "questions": [{"id": "a", "question": "?"}]}"#);
    same_answer(r#"{"answers": [{"id": "a", "id": "b"}]}"#);
    let request =
        AskRequest::from_json(r#"{"questions": 1, "questions": [{"id": "a", "question": "?"}]}"#);
    assert!(request.is_ok(), "{request:?}");
}

#[test]
fn an_array_where_an_object_belongs_is_refused_naming_the_item() {
    let error = AskRequest::from_json(r#"{"questions": [["a", "Which?"]]}"#).unwrap_err();
    assert_eq!(
        error.message,
        "questions[0]: expected a JSON object, got an array"
    );
}
