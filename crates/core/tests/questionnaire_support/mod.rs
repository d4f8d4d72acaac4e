//! Builders shared by the questionnaire tests.
#![allow(dead_code)]

use ask_user_core::AnswerBatch;
use ask_user_core::questionnaire::*;
use ask_user_core::request::AskRequest;
use ask_user_core::wire::{
    Outcome, QuestionRequested, QuestionResolved, SessionEvent, SessionSynced,
};

/// A three-item batch: single-select with a recommended option, multi-select,
/// free text.
pub fn three_items() -> AskRequest {
    AskRequest::from_json(
        r#"{"questions": [
            {"id": "db", "question": "Which database?", "header": "Database",
             "options": [{"label": "Postgres (Recommended)", "description": "Solid"},
                         {"label": "SQLite"}, {"label": "MySQL"}]},
            {"id": "features", "question": "Which features?", "multi_select": true,
             "options": [{"label": "Auth"}, {"label": "Search"}, {"label": "Billing"}]},
            {"id": "notes", "question": "Anything else?"}
        ]}"#,
    )
    .expect("valid request")
}

/// One free-text question.
pub fn one_free_text(id: &str) -> AskRequest {
    AskRequest::from_json(&format!(
        r#"{{"questions": [{{"id": "{id}", "question": "Why?"}}]}}"#
    ))
    .expect("valid request")
}

/// One single-select question whose first option is recommended.
pub fn one_single() -> AskRequest {
    AskRequest::from_json(
        r#"{"questions": [{"id": "pick", "question": "Pick one",
            "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}]}"#,
    )
    .expect("valid request")
}

/// A plan-review request: approve "Approve", decline "Revise".
pub fn plan_review() -> AskRequest {
    AskRequest::from_json(
        r##"{"questions": [{"id": "plan", "question": "Approve the plan?",
            "detail": "# Plan\n1. Do it",
            "options": [{"label": "Approve (Recommended)"}, {"label": "Revise"}],
            "intent": {"kind": "plan-review", "approve": "Approve (Recommended)"}}]}"##,
    )
    .expect("valid request")
}

/// `question/requested` for `id`.
pub fn requested(id: &str, created_at_ms: u64, request: AskRequest) -> Action {
    Action::FrameReceived(SessionEvent::QuestionRequested(QuestionRequested {
        id: id.to_owned(),
        session: "default".to_owned(),
        request,
        created_at_ms,
    }))
}

/// `question/resolved` for `id`.
pub fn resolved(id: &str, outcome: Outcome) -> Action {
    Action::FrameReceived(SessionEvent::QuestionResolved(QuestionResolved {
        id: id.to_owned(),
        outcome,
    }))
}

/// `session/synced` listing `ids`.
pub fn synced(ids: &[&str]) -> Action {
    Action::FrameReceived(SessionEvent::SessionSynced(SessionSynced {
        pending: ids.iter().map(|s| s.to_string()).collect(),
    }))
}

/// A questionnaire holding the three-item request as `q1`.
pub fn with_three() -> Questionnaire {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1_000, three_items()));
    state
}

/// Applies every action; returns every effect.
pub fn run(state: &mut Questionnaire, actions: impl IntoIterator<Item = Action>) -> Vec<Effect> {
    actions.into_iter().flat_map(|a| apply(state, a)).collect()
}

/// A plain keydown outside the text box.
pub fn key(key: Key) -> Action {
    Action::Key(KeyInput::plain(key))
}

/// Plain Enter (not composing, no shift) in the text box.
pub fn enter() -> Action {
    Action::Key(KeyInput::from_dom("Enter", false, false, 13, true))
}

/// Typing into the current item's text box.
pub fn typed(text: &str) -> Action {
    Action::DraftEdited {
        text: text.to_owned(),
    }
}

/// The batches posted in these effects.
pub fn posted_answers(effects: &[Effect]) -> Vec<(String, AnswerBatch)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PostAnswer { question_id, batch } => Some((question_id.clone(), batch.clone())),
            _ => None,
        })
        .collect()
}

/// The ids cancelled in these effects.
pub fn posted_cancels(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PostCancel { question_id } => Some(question_id.clone()),
            _ => None,
        })
        .collect()
}

/// The focus moves in these effects.
pub fn focuses(effects: &[Effect]) -> Vec<FocusTarget> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Focus(target) => Some(*target),
            _ => None,
        })
        .collect()
}

/// The active request (panics when none: tests only).
pub fn active(state: &Questionnaire) -> &PendingRequest {
    state.active().expect("a request is active")
}

/// The JSON of a batch, for compact assertions.
pub fn json(batch: &AnswerBatch) -> serde_json::Value {
    serde_json::to_value(batch).expect("serialisable")
}
