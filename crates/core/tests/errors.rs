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
