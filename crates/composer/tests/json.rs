//! The page's JSON reader in the browser (`JSON.parse`, then the composer's
//! own serde `Deserializer` over the result, which drops error messages) reads
//! every wire type as serde_json does, and refuses what serde_json refuses.
#![cfg(target_arch = "wasm32")]

use ask_user_composer::json;
use ask_user_core::AskRequest;
use ask_user_core::answer::AnswerBatch;
use ask_user_core::wire::{self, SessionEvent, SessionList, Transcript};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const REQUEST: &str = r#"{"questions":[
  {"id":"db","header":"Database","question":"Which database?","detail":"Two **GB** a year.",
   "options":[{"label":"Postgres (Recommended)","description":"Boring."},{"label":"SQLite"}]},
  {"id":"checks","question":"Which checks?","multi_select":true,
   "options":[{"label":"Unit"},{"label":"Browser","description":"Headless \u00e9 \ud83d\ude00"}]},
  {"id":"plan","question":"Go ahead?","intent":{"kind":"plan-review","approve":"Approve"},
   "options":[{"label":"Approve"},{"label":"Revise"}]},
  {"id":"name","question":"What should we call it?"}
]}"#;

fn frames() -> Vec<(&'static str, String)> {
    let record = format!(
        r#"{{"id":"q1","request":{REQUEST},"asked_by":{{"kind":"mcp","name":"claude-code","version":"1.0"}},
            "created_at_ms":1700000000000,"resolved_at_ms":1700000000500,"outcome":"answered",
            "answer":{{"answers":[{{"id":"db","selected":["SQLite"]}},{{"id":"checks","selected":[],"custom":"lint"}},
            {{"id":"plan","selected":["Approve"]}},{{"id":"name","selected":[]}}],"note":"thanks"}}}}"#
    );
    vec![
        (
            wire::QUESTION_REQUESTED,
            format!(
                r#"{{"id":"q1","session":"default","request":{REQUEST},"created_at_ms":9007199254740991,
                    "asked_by":{{"kind":"http","name":"curl"}}}}"#
            ),
        ),
        (
            wire::QUESTION_RESOLVED,
            format!(r#"{{"id":"q1","outcome":"answered","record":{record}}}"#),
        ),
        (
            wire::QUESTION_RESOLVED,
            r#"{"id":"q1","outcome":"timeout"}"#.into(),
        ),
        (wire::SESSION_SYNCED, r#"{"pending":["q1","q2"]}"#.into()),
        (wire::SESSION_SYNCED, r#"{"pending":[]}"#.into()),
        (
            wire::MESSAGE_CREATED,
            r#"{"id":"m1","role":"user","text":"hi \"there\"","at_ms":3}"#.into(),
        ),
        (
            wire::MESSAGE_CREATED,
            r#"{"id":"m1","role":"agent","text":"no time"}"#.into(),
        ),
        (wire::QUESTION_DETACHED, r#"{"id":"q1"}"#.into()),
        (wire::QUESTION_ATTACHED, r#"{"id":"q1"}"#.into()),
    ]
}

/// Frames serde_json refuses: a float, a negative number or a string where
/// a count goes, an unknown role, a missing field, a field the request does not
/// know, an array where an object goes, JSON that is not JSON.
const BAD_FRAMES: &[(&str, &str)] = &[
    (
        wire::MESSAGE_CREATED,
        r#"{"id":"m1","role":"user","text":"hi","at_ms":1.5}"#,
    ),
    (
        wire::MESSAGE_CREATED,
        r#"{"id":"m1","role":"user","text":"hi","at_ms":-1}"#,
    ),
    (
        wire::MESSAGE_CREATED,
        r#"{"id":"m1","role":"user","text":"hi","at_ms":"3"}"#,
    ),
    (
        wire::MESSAGE_CREATED,
        r#"{"id":"m1","role":"robot","text":"hi"}"#,
    ),
    (wire::MESSAGE_CREATED, r#"{"id":"m1","role":"user"}"#),
    (
        wire::MESSAGE_CREATED,
        r#"{"id":"m1","role":"user","text":null}"#,
    ),
    (
        wire::QUESTION_REQUESTED,
        r#"{"id":"q1","session":"s","created_at_ms":1,"request":{"questions":[{"id":"a","question":"?","colour":"red"}]}}"#,
    ),
    (
        wire::QUESTION_RESOLVED,
        r#"{"id":"q1","outcome":["answered"]}"#,
    ),
    (wire::SESSION_SYNCED, r#"{"pending":"q1"}"#),
    (wire::SESSION_SYNCED, r#"{"pending":[1]}"#),
    (wire::SESSION_SYNCED, r#"{"pending":["q1"]"#),
];

#[wasm_bindgen_test]
fn every_session_frame_reads_as_serde_json_reads_it() {
    for (name, data) in frames() {
        let expected = SessionEvent::parse(name, &data);
        assert!(expected.is_some(), "serde_json reads {name} {data}");
        assert_eq!(json::session_event(name, &data), expected, "{name} {data}");
    }
}

#[wasm_bindgen_test]
fn a_frame_serde_json_refuses_is_refused_too() {
    for (name, data) in BAD_FRAMES {
        assert_eq!(
            SessionEvent::parse(name, data),
            None,
            "serde_json refuses {data}"
        );
        assert_eq!(json::session_event(name, data), None, "{data}");
    }
}

#[wasm_bindgen_test]
fn requests_answers_lists_and_transcripts_read_as_serde_json_reads_them() {
    let request: AskRequest = serde_json::from_str(REQUEST).unwrap();
    assert_eq!(json::from_str::<AskRequest>(REQUEST), Some(request));

    let batch = r#"{"answers":[{"id":"db","selected":["SQLite"]},{"id":"name","custom":"auq"}],"note":"n"}"#;
    let expected: AnswerBatch = serde_json::from_str(batch).unwrap();
    assert_eq!(json::from_str::<AnswerBatch>(batch), Some(expected.clone()));
    // What the page writes it reads back.
    let written = json::to_string(&expected).unwrap();
    assert_eq!(json::from_str::<AnswerBatch>(&written), Some(expected));

    let list = r#"{"sessions":[{"id":"default","pending":2,"last_activity_ms":5,"first_question":"Which?"},
        {"id":"other","pending":0,"last_activity_ms":4,"asked_by":{"kind":"demo","name":"demo"},"newest_question":null}]}"#;
    let expected: SessionList = serde_json::from_str(list).unwrap();
    assert_eq!(json::from_str::<SessionList>(list), Some(expected));
    assert_eq!(
        json::from_str::<SessionList>(
            r#"{"sessions":[{"id":"d","pending":4294967296,"last_activity_ms":5}]}"#
        ),
        None,
        "a pending count past u32"
    );

    let transcript = format!(
        r#"{{"entries":[{{"kind":"message","id":"m1","role":"user","text":"hi","at_ms":1}},
            {{"kind":"record","id":"q1","request":{REQUEST},"created_at_ms":1,"resolved_at_ms":2,"outcome":"cancelled"}}],
            "demo_agent":true}}"#
    );
    let expected: Transcript = serde_json::from_str(&transcript).unwrap();
    assert_eq!(expected.entries.len(), 2);
    assert_eq!(json::transcript(&transcript), Some(expected));
}

#[wasm_bindgen_test]
fn a_struct_written_as_an_array_is_refused_though_serde_json_takes_it() {
    // The reader asks for what each type is: a struct is an object. No host
    // writes a struct as an array; serde_json would read one.
    let data = r#"["m1","user","hi",3]"#;
    assert!(
        serde_json::from_str::<wire::MessageCreated>(data).is_ok(),
        "serde_json reads a struct from an array"
    );
    assert_eq!(json::session_event(wire::MESSAGE_CREATED, data), None);
    let object = r#"{"id":"m1","role":"user","text":"hi","at_ms":3}"#;
    assert!(json::session_event(wire::MESSAGE_CREATED, object).is_some());
}
