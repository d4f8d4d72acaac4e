//! The error type: codes, wire strings, serialisation and the tool result line.

use ask_user_core::error::ERROR_NAME;
use ask_user_core::tool::{parse_result, render_error, render_result};
use ask_user_core::wire::{ErrorBody, WireError};
use ask_user_core::{ErrorCode, UserInteractionError};
use serde_json::json;
use std::collections::HashSet;

const WIRE: [(ErrorCode, &str); 11] = [
    (ErrorCode::EmptyQuestions, "EMPTY_QUESTIONS"),
    (ErrorCode::BadIntent, "BAD_INTENT"),
    (ErrorCode::BadRequest, "BAD_REQUEST"),
    (ErrorCode::BadAnswer, "BAD_ANSWER"),
    (ErrorCode::NoProvider, "NO_PROVIDER"),
    (ErrorCode::DuplicateProvider, "DUPLICATE_PROVIDER"),
    (ErrorCode::AskAborted, "ASK_ABORTED"),
    (ErrorCode::AskCancelled, "ASK_CANCELLED"),
    (ErrorCode::AskTimeout, "ASK_TIMEOUT"),
    (ErrorCode::AskFailed, "ASK_FAILED"),
    (ErrorCode::NotPending, "NOT_PENDING"),
];

#[test]
fn every_code_has_its_exact_wire_string_both_ways() {
    for (code, wire) in WIRE {
        assert_eq!(code.as_str(), wire);
        assert_eq!(code.to_string(), wire);
        assert_eq!(serde_json::to_value(code).unwrap(), json!(wire));
        assert_eq!(
            serde_json::from_value::<ErrorCode>(json!(wire)).unwrap(),
            code
        );
    }
}

#[test]
fn all_lists_every_code_once_in_declaration_order() {
    let listed: Vec<ErrorCode> = WIRE.iter().map(|(c, _)| *c).collect();
    assert_eq!(ErrorCode::ALL.to_vec(), listed);
    assert_eq!(ErrorCode::ALL.iter().collect::<HashSet<_>>().len(), 11);
}

#[test]
fn an_unknown_or_lowercase_code_does_not_parse() {
    assert!(serde_json::from_value::<ErrorCode>(json!("ask_cancelled")).is_err());
    assert!(serde_json::from_value::<ErrorCode>(json!("UNAUTHORIZED")).is_err());
}

#[test]
fn an_error_serialises_as_name_code_and_message_only() {
    let error =
        UserInteractionError::new(ErrorCode::BadRequest, "questions[0].id: must not be empty");
    assert_eq!(
        serde_json::to_value(&error).unwrap(),
        json!({
            "name": "UserInteractionError",
            "code": "BAD_REQUEST",
            "message": "questions[0].id: must not be empty"
        })
    );
    assert_eq!(ERROR_NAME, "UserInteractionError");
}

#[test]
fn every_code_round_trips_through_json() {
    for code in ErrorCode::ALL {
        let error = UserInteractionError::new(code, format!("something about {code}"));
        let text = serde_json::to_string(&error).unwrap();
        assert_eq!(
            serde_json::from_str::<UserInteractionError>(&text).unwrap(),
            error
        );
    }
}

#[test]
fn an_error_with_another_name_does_not_deserialise() {
    let result = serde_json::from_value::<UserInteractionError>(json!({
        "name": "HarnessError", "code": "ASK_FAILED", "message": "x"
    }));
    let message = result.unwrap_err().to_string();
    assert!(message.contains("HarnessError"), "{message}");
}

#[test]
fn display_is_the_message_then_the_code() {
    assert_eq!(
        UserInteractionError::cancelled().to_string(),
        "the user cancelled ask_user_question (ASK_CANCELLED)"
    );
}

#[test]
fn constructors_carry_their_codes() {
    let cases = [
        (
            UserInteractionError::empty_questions(),
            ErrorCode::EmptyQuestions,
        ),
        (
            UserInteractionError::bad_request("x"),
            ErrorCode::BadRequest,
        ),
        (UserInteractionError::bad_intent("x"), ErrorCode::BadIntent),
        (UserInteractionError::bad_answer("x"), ErrorCode::BadAnswer),
        (UserInteractionError::no_provider(), ErrorCode::NoProvider),
        (
            UserInteractionError::duplicate_provider(),
            ErrorCode::DuplicateProvider,
        ),
        (UserInteractionError::aborted(), ErrorCode::AskAborted),
        (
            UserInteractionError::provider_disposed(),
            ErrorCode::AskAborted,
        ),
        (UserInteractionError::cancelled(), ErrorCode::AskCancelled),
        (UserInteractionError::timeout(), ErrorCode::AskTimeout),
        (UserInteractionError::failed("x"), ErrorCode::AskFailed),
        (
            UserInteractionError::not_pending("x"),
            ErrorCode::NotPending,
        ),
    ];
    for (error, code) in cases {
        assert_eq!(error.code, code, "{error}");
    }
}

#[test]
fn only_a_cancellation_reads_as_cancelled() {
    for code in ErrorCode::ALL {
        let error = UserInteractionError::new(code, "x");
        assert_eq!(
            error.is_cancelled(),
            code == ErrorCode::AskCancelled,
            "{code}"
        );
    }
}

#[test]
fn the_standard_failures_render_as_the_documented_lines() {
    let lines = [
        (
            UserInteractionError::aborted(),
            "Error: ask_user_question was aborted before the user answered (ASK_ABORTED)",
        ),
        (
            UserInteractionError::empty_questions(),
            "Error: ask_user_question requires at least one question (EMPTY_QUESTIONS)",
        ),
        (
            UserInteractionError::no_provider(),
            "Error: no user-interaction provider is registered (NO_PROVIDER)",
        ),
        (
            UserInteractionError::cancelled(),
            "Error: the user cancelled ask_user_question (ASK_CANCELLED)",
        ),
    ];
    for (error, line) in lines {
        assert_eq!(render_error(&error), line);
        assert_eq!(render_result(&Err(error.clone())), line);
        assert_eq!(parse_result(line), Some(Err(error)));
    }
}

#[test]
fn a_message_with_parentheses_still_parses_back_to_its_code() {
    let error = UserInteractionError::bad_request(
        "questions[0].options[0].recommended: unknown field (end its label with \" (Recommended)\")",
    );
    let line = render_error(&error);
    assert_eq!(parse_result(&line), Some(Err(error)));
}

#[test]
fn every_code_survives_render_and_parse() {
    for code in ErrorCode::ALL {
        let error = UserInteractionError::new(code, "went wrong");
        assert_eq!(parse_result(&render_error(&error)), Some(Err(error)));
    }
}

#[test]
fn text_that_is_neither_a_batch_nor_an_error_line_parses_to_none() {
    assert_eq!(parse_result("hello"), None);
    assert_eq!(parse_result("Error: no code here"), None);
    assert_eq!(parse_result("Error: unknown code (NOPE)"), None);
}

#[test]
fn a_core_error_becomes_a_wire_error_and_back() {
    let error = UserInteractionError::timeout();
    let wire = WireError::from(error.clone());
    assert_eq!(
        serde_json::to_value(ErrorBody {
            error: wire.clone()
        })
        .unwrap(),
        json!({"error": {
            "name": "UserInteractionError",
            "code": "ASK_TIMEOUT",
            "message": "ask_user_question timed out before the user answered"
        }})
    );
    assert_eq!(wire.to_core(), Some(error));
    assert_eq!(WireError::new("UNAUTHORIZED", "no token").to_core(), None);
}

/// Every way a request or an answer batch can name a value from outside
/// (an unknown field, a label, an id, an enum variant, a string where an
/// object was due) quotes at most `MAX_QUOTED_CHARS` of it.
#[test]
fn an_error_quotes_at_most_80_characters_of_any_value_it_was_sent() {
    use ask_user_core::error::MAX_QUOTED_CHARS;
    use ask_user_core::{AnswerBatch, AskRequest};
    let huge = "w".repeat(100_000);
    let question = |extra: serde_json::Value| {
        let mut q = json!({"id": "db", "question": "Which?",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]});
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"questions": [q]})
    };
    let requests = [
        question(json!({ huge.clone(): 1 })),
        json!({ huge.clone(): [] }),
        question(json!({"multi_select": huge.clone()})),
        question(json!({"intent": {"kind": huge.clone(), "approve": "Postgres"}})),
        question(
            json!({"intent": {"kind": "plan-review", "approve": huge.clone()},
            "detail": "the plan"}),
        ),
        question(json!({"options": [{"label": "a"}, {"label": "a", huge.clone(): 1}]})),
    ];
    for request in requests {
        for error in [
            AskRequest::from_value(request.clone()).unwrap_err(),
            AskRequest::from_json(&request.to_string()).unwrap_err(),
        ] {
            assert!(
                error.message.len() < 1000 && error.message.contains(&"w".repeat(MAX_QUOTED_CHARS)),
                "{} bytes: {}…",
                error.message.len(),
                &error.message[..200.min(error.message.len())]
            );
            assert!(!error.message.contains(&"w".repeat(MAX_QUOTED_CHARS + 1)));
        }
    }
    let request = AskRequest::from_value(question(json!({}))).unwrap();
    let batches = [
        json!({"answers": [{"id": huge.clone(), "selected": []}]}),
        json!({"answers": [{"id": "db", "selected": [huge.clone()]}]}),
        json!({"answers": [{"id": "db", "selected": [], huge.clone(): 1}]}),
        json!({huge.clone(): []}),
    ];
    for batch in batches {
        let error = AnswerBatch::from_value(batch)
            .and_then(|batch| batch.normalize(&request))
            .unwrap_err();
        assert!(
            error.message.len() < 1000 && error.message.contains(&"w".repeat(MAX_QUOTED_CHARS)),
            "{} bytes: {}…",
            error.message.len(),
            &error.message[..200.min(error.message.len())]
        );
        assert!(!error.message.contains(&"w".repeat(MAX_QUOTED_CHARS + 1)));
    }
}

#[test]
fn quotes_in_serdes_words_are_cut_and_stay_closed() {
    use ask_user_core::error::shorten_quotes_in;
    let long = "x".repeat(100);
    let cut = format!("{}…", "x".repeat(80));
    assert_eq!(
        shorten_quotes_in(&format!(
            "unknown field `{long}`, expected one of `id`, `question`"
        )),
        format!("unknown field `{cut}`, expected one of `id`, `question`")
    );
    assert_eq!(
        shorten_quotes_in(&format!(
            r#"invalid type: string "a\"{long}", expected a boolean"#
        )),
        format!(
            r#"invalid type: string "a\"{}…", expected a boolean"#,
            "x".repeat(77)
        )
    );
    assert_eq!(shorten_quotes_in("no quotes"), "no quotes");
    assert_eq!(
        shorten_quotes_in(&format!("open `{long}")),
        format!("open `{cut}")
    );
}

#[derive(Debug, PartialEq)]
struct HostFull {
    limit: usize,
}

#[test]
fn a_providers_cause_comes_back_by_its_type_and_stays_off_the_wire() {
    let error = UserInteractionError::failed("no room").with_cause(HostFull { limit: 3 });
    assert_eq!(error.cause::<HostFull>(), Some(&HostFull { limit: 3 }));
    assert_eq!(error.cause::<String>(), None);
    assert_eq!(
        error.clone().cause::<HostFull>(),
        Some(&HostFull { limit: 3 })
    );
    assert_eq!(
        UserInteractionError::failed("no room").cause::<HostFull>(),
        None
    );
    // The same code and message is the same error, cause or not.
    assert_eq!(error, UserInteractionError::failed("no room"));
    let wire = serde_json::to_value(&error).unwrap();
    assert_eq!(
        wire,
        serde_json::json!({"name": "UserInteractionError", "code": "ASK_FAILED", "message": "no room"})
    );
    let back: UserInteractionError = serde_json::from_value(wire).unwrap();
    assert_eq!(back.cause::<HostFull>(), None);
}
