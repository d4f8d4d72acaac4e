//! The tool's JSON Schema against the Rust types: same properties, same
//! required fields, same limits, `additionalProperties: false` throughout, and
//! none of the removed fields anywhere.

use ask_user_core::limits::*;
use ask_user_core::tool::{TOOL_DESCRIPTION, TOOL_NAME, input_schema};
use ask_user_core::{
    AskRequest, Audience, ErrorCode, EscalateAfter, Intent, IntentKind, Question, QuestionOption,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

const REMOVED: [&str; 4] = ["value", "recommended", "allow_custom", "desc"];

/// A request with every field of every type set. Written with struct literals
/// so a field added to a type fails to compile here until it is covered.
fn maximal() -> AskRequest {
    AskRequest {
        questions: vec![Question {
            id: "plan".into(),
            question: "Approve this plan?".into(),
            header: Some("Plan".into()),
            detail: Some("1. Migrate\n2. Deploy".into()),
            options: Some(vec![
                QuestionOption {
                    label: "Approve (Recommended)".into(),
                    description: Some("Go ahead as written".into()),
                },
                QuestionOption {
                    label: "Revise".into(),
                    description: Some("Change the plan first".into()),
                },
            ]),
            multi_select: Some(false),
            intent: Some(Intent {
                kind: IntentKind::PlanReview,
                approve: "Approve (Recommended)".into(),
            }),
        }],
        audience: Some(Audience::Role("oncall".into())),
        escalate_after: Some(EscalateAfter {
            seconds: 300,
            role: "leads".into(),
        }),
    }
}

/// Every object node of the schema, with its path (`questions[].options[]`).
fn schema_objects() -> Vec<(String, Map<String, Value>)> {
    fn walk(node: &Value, path: &str, out: &mut Vec<(String, Map<String, Value>)>) {
        match node["type"].as_str() {
            Some("object") => {
                let object = node.as_object().unwrap().clone();
                for (name, sub) in node["properties"].as_object().unwrap() {
                    walk(sub, &join(path, name), out);
                }
                out.push((path.to_owned(), object));
            }
            Some("array") => walk(&node["items"], &format!("{path}[]"), out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&input_schema(), "", &mut out);
    out
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Every property path of the schema with its declared type.
fn schema_properties() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, object) in schema_objects() {
        for (name, sub) in object["properties"].as_object().unwrap() {
            // `audience` is one of several forms (`oneOf`); the test of its
            // own checks each, and `maximal` carries the object form.
            let ty = match sub.get("oneOf") {
                Some(_) => "object",
                None => sub["type"].as_str().expect("every property has a type"),
            };
            // JSON has numbers only; the schema says which are whole.
            let ty = if ty == "integer" { "number" } else { ty };
            out.insert((join(&path, name), ty.to_owned()));
        }
    }
    out
}

/// Every key path of a JSON value with the JSON type found there.
fn value_properties(value: &Value) -> BTreeSet<(String, String)> {
    fn ty(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    fn walk(value: &Value, path: &str, out: &mut BTreeSet<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (name, sub) in map {
                    let at = join(path, name);
                    out.insert((at.clone(), ty(sub).to_owned()));
                    walk(sub, &at, out);
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(value, "", &mut out);
    out
}

/// Applies `edit` to every object at `path` (`questions[].options[]`) in `value`.
fn at_path(value: &mut Value, path: &str, edit: &dyn Fn(&mut Map<String, Value>)) {
    if path.is_empty() {
        edit(value.as_object_mut().unwrap());
        return;
    }
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let (name, items) = match head.strip_suffix("[]") {
        Some(name) => (name, true),
        None => (head, false),
    };
    let child = &mut value[name];
    if items {
        for item in child.as_array_mut().unwrap() {
            at_path(item, rest, edit);
        }
    } else {
        at_path(child, rest, edit);
    }
}

#[test]
fn every_object_in_the_schema_forbids_additional_properties() {
    fn walk(node: &Value, path: &str) {
        if let Value::Object(map) = node {
            if map.contains_key("properties") || map.get("type") == Some(&json!("object")) {
                assert_eq!(map.get("type"), Some(&json!("object")), "{path}");
                assert_eq!(
                    map.get("additionalProperties"),
                    Some(&json!(false)),
                    "object at {path:?} must set additionalProperties: false"
                );
            }
            for (key, sub) in map {
                walk(sub, &format!("{path}/{key}"));
            }
        } else if let Value::Array(items) = node {
            for (i, sub) in items.iter().enumerate() {
                walk(sub, &format!("{path}/{i}"));
            }
        }
    }
    walk(&input_schema(), "");
    assert_eq!(
        schema_objects().len(),
        5,
        "request, question, option, intent, escalate_after"
    );
}

#[test]
fn no_removed_field_appears_anywhere_in_the_schema() {
    fn walk(node: &Value, path: &str) {
        match node {
            Value::Object(map) => {
                for (key, sub) in map {
                    assert!(!REMOVED.contains(&key.as_str()), "key {key:?} at {path}");
                    walk(sub, &format!("{path}/{key}"));
                }
            }
            Value::Array(items) => {
                for item in items {
                    if let Some(s) = item.as_str() {
                        assert!(!REMOVED.contains(&s), "{s:?} listed at {path}");
                    }
                    walk(item, path);
                }
            }
            _ => {}
        }
    }
    walk(&input_schema(), "");
    let names: BTreeSet<String> = schema_properties()
        .into_iter()
        .map(|(path, _)| path.rsplit('.').next().unwrap().to_owned())
        .collect();
    for removed in REMOVED {
        assert!(!names.contains(removed), "{removed}");
    }
}

#[test]
fn the_schema_properties_are_exactly_the_fields_the_rust_types_serialise() {
    let serialised = serde_json::to_value(maximal()).unwrap();
    let mut properties = value_properties(&serialised);
    // Inside a `oneOf` (the audience's forms): checked form by form below.
    properties.retain(|(path, _)| !path.starts_with("audience."));
    assert_eq!(schema_properties(), properties);
}

#[test]
fn every_audience_form_in_the_schema_is_one_rust_accepts_and_no_other() {
    let schema = input_schema();
    let forms = schema["properties"]["audience"]["oneOf"]
        .as_array()
        .unwrap();
    let mut accepted = Vec::new();
    for form in forms {
        let example = match form["type"].as_str().unwrap() {
            "string" => form["enum"][0].clone(),
            _ => {
                let name = form["required"][0].as_str().unwrap();
                let inner = &form["properties"][name];
                assert_eq!(inner["maxLength"], json!(MAX_AUDIENCE_NAME_CHARS), "{name}");
                assert_eq!(form["additionalProperties"], json!(false), "{name}");
                json!({ name: "ana" })
            }
        };
        let request = json!({"questions": [{"id": "q", "question": "Ship?"}], "audience": example});
        accepted.push(AskRequest::from_value(request).unwrap().audience.unwrap());
    }
    assert_eq!(
        accepted,
        vec![
            Audience::Anyone,
            Audience::Person("ana".into()),
            Audience::Role("ana".into())
        ],
        "one schema form per Rust variant, in order"
    );
    let escalation = &schema["properties"]["escalate_after"]["properties"];
    assert_eq!(
        escalation["seconds"]["maximum"],
        json!(MAX_ESCALATE_AFTER_SECS)
    );
    assert_eq!(
        escalation["role"]["maxLength"],
        json!(MAX_AUDIENCE_NAME_CHARS)
    );
}

#[test]
fn the_rust_types_accept_a_request_carrying_every_schema_property() {
    let value = serde_json::to_value(maximal()).unwrap();
    let parsed = AskRequest::from_value(value.clone()).unwrap();
    assert_eq!(parsed, maximal());
    assert_eq!(serde_json::to_value(parsed).unwrap(), value);
}

#[test]
fn required_schema_properties_are_exactly_the_ones_rust_cannot_do_without() {
    let full = serde_json::to_value(maximal()).unwrap();
    for (path, object) in schema_objects() {
        let required: Vec<&str> = object["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        for name in object["properties"].as_object().unwrap().keys() {
            let mut value = full.clone();
            at_path(&mut value, &path, &|map| {
                map.remove(name);
            });
            // Shape only: cross-field rules (intent needs detail) are not the schema's.
            let shape = serde_json::from_value::<AskRequest>(value);
            assert_eq!(
                shape.is_err(),
                required.contains(&name.as_str()),
                "{}: schema and Rust disagree on whether it is required",
                join(&path, name)
            );
        }
    }
}

#[test]
fn an_unknown_property_is_rejected_by_rust_wherever_the_schema_forbids_it() {
    let full = serde_json::to_value(maximal()).unwrap();
    for (path, _) in schema_objects() {
        for field in REMOVED.iter().copied().chain(["surprise"]) {
            let mut value = full.clone();
            at_path(&mut value, &path, &|map| {
                map.insert(field.to_owned(), json!(true));
            });
            let error = AskRequest::from_value(value).expect_err(&join(&path, field));
            let expected = if path.ends_with("intent") {
                ErrorCode::BadIntent
            } else {
                ErrorCode::BadRequest
            };
            assert_eq!(error.code, expected, "{}", error.message);
            assert!(
                error.message.contains(&format!("`{field}`")),
                "{}",
                error.message
            );
        }
    }
}

#[test]
fn the_schema_limits_are_cores_limits() {
    let schema = input_schema();
    let questions = &schema["properties"]["questions"];
    assert_eq!(questions["minItems"], json!(1));
    assert_eq!(questions["maxItems"], json!(MAX_QUESTIONS));
    let question = &questions["items"]["properties"];
    assert_eq!(question["id"]["minLength"], json!(1));
    assert_eq!(question["id"]["maxLength"], json!(MAX_ID_CHARS));
    assert_eq!(question["question"]["minLength"], json!(1));
    assert_eq!(question["question"]["maxLength"], json!(MAX_QUESTION_CHARS));
    assert_eq!(question["header"]["maxLength"], json!(MAX_HEADER_CHARS));
    assert_eq!(question["detail"]["maxLength"], json!(MAX_DETAIL_CHARS));
    assert_eq!(question["options"]["maxItems"], json!(MAX_OPTIONS));
    let option = &question["options"]["items"]["properties"];
    assert_eq!(option["label"]["minLength"], json!(1));
    assert_eq!(option["label"]["maxLength"], json!(MAX_LABEL_CHARS));
    assert_eq!(
        option["description"]["maxLength"],
        json!(MAX_DESCRIPTION_CHARS)
    );
    assert_eq!(
        (
            MAX_QUESTIONS,
            MAX_ID_CHARS,
            MAX_QUESTION_CHARS,
            MAX_HEADER_CHARS,
            MAX_DETAIL_CHARS,
            MAX_OPTIONS,
            MAX_LABEL_CHARS,
            MAX_DESCRIPTION_CHARS,
            MAX_CUSTOM_CHARS
        ),
        (10, 64, 2_000, 40, 32_768, 16, 200, 2_000, 8_000),
        "the limits the issue sets"
    );
}

#[test]
fn the_intent_kinds_in_the_schema_are_the_rust_variants() {
    let schema = input_schema();
    let kinds = &schema["properties"]["questions"]["items"]["properties"]["intent"]["properties"]["kind"]
        ["enum"];
    assert_eq!(*kinds, json!([IntentKind::PlanReview]));
}

#[test]
fn the_top_level_schema_requires_questions() {
    let schema = input_schema();
    assert_eq!(schema["type"], json!("object"));
    assert_eq!(schema["required"], json!(["questions"]));
}

#[test]
fn the_tool_is_named_ask_user_question() {
    assert_eq!(TOOL_NAME, "ask_user_question");
}

#[test]
fn the_description_tells_the_model_how_to_ask() {
    let d = TOOL_DESCRIPTION;
    for phrase in [
        "cannot find out yourself", // ask only what it cannot find out
        "never ask what you could look up",
        "short",                   // keep questions short
        "Prefer options",          // prefer options
        "Batch related questions", // batch
        "\" (Recommended)\"",      // how to mark a recommendation
        "multi_select",
        "ASK_CANCELLED",
        // a `waiting` result: call again, same arguments
        "has not answered yet, call ask_user_question again with exactly the same arguments",
    ] {
        assert!(d.contains(phrase), "description lacks {phrase:?}");
    }
    for removed in REMOVED {
        assert!(!d.contains(&format!("`{removed}`")), "mentions {removed}");
    }
}
