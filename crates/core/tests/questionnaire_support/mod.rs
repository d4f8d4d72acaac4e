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
        asked_by: None,
    }))
}

/// `question/resolved` for `id`.
pub fn resolved(id: &str, outcome: Outcome) -> Action {
    Action::FrameReceived(SessionEvent::QuestionResolved(QuestionResolved {
        id: id.to_owned(),
        outcome,
        record: None,
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

/// What applying actions did: the effects, and the last focus and
/// announcement they asked for (what a shell would apply). Reads as the
/// effects (`fx.contains(..)`, `posted_answers(&fx)`).
#[derive(Debug, Default)]
pub struct Applied {
    /// Every effect, in order.
    pub effects: Vec<Effect>,
    /// The focus intent, when one was asked for.
    pub focus: Option<FocusTarget>,
    /// The announcement, when one was made.
    pub announced: Option<Announcement>,
}

impl Applied {
    /// True when `announcement` was the last thing announced.
    pub fn announced(&self, announcement: &Announcement) -> bool {
        self.announced.as_ref() == Some(announcement)
    }
}

impl std::ops::Deref for Applied {
    type Target = [Effect];
    fn deref(&self) -> &[Effect] {
        &self.effects
    }
}

/// Applies one action, seeing its effects and the intents it left in the view.
pub fn act(state: &mut Questionnaire, action: Action) -> Applied {
    run(state, [action])
}

/// Applies every action; returns every effect and the last intents.
pub fn run(state: &mut Questionnaire, actions: impl IntoIterator<Item = Action>) -> Applied {
    let mut applied = Applied::default();
    for action in actions {
        let before = view(state);
        applied.effects.extend(apply(state, action));
        let after = view(state);
        if after.focus != before.focus {
            applied.focus = after.focus.map(|f| f.value);
        }
        if after.announcement != before.announcement {
            applied.announced = after.announcement.map(|a| a.value);
        }
    }
    applied
}

/// A plain keydown outside the text box.
pub fn key(key: Key) -> Action {
    Action::Key(KeyInput::plain(key))
}

/// A plain keydown in the text box.
pub fn key_in_text_box(key: Key) -> Action {
    Action::Key(KeyInput::in_text_box(key))
}

/// Plain Enter (not composing, no shift) in the text box.
pub fn enter() -> Action {
    key_in_text_box(Key::Enter)
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

/// The active request (panics when none: tests only).
pub fn active(state: &Questionnaire) -> &PendingRequest {
    state.active().expect("a request is active")
}

/// The view model's active request (panics when none).
pub fn shown(state: &Questionnaire) -> RequestView {
    view(state).active.expect("a request is shown")
}

/// The view model's item (panics when none, or in plan review).
pub fn item(state: &Questionnaire) -> ItemView {
    view(state).item().cloned().expect("an item is shown")
}

/// The view model's plan-review panel (panics when none).
pub fn plan(state: &Questionnaire) -> PlanView {
    match shown(state).body {
        Body::PlanReview(plan) => plan,
        Body::Item(item) => panic!("an item is shown, not a plan: {item:?}"),
    }
}

/// The status line's key, if a line is shown.
pub fn status_key(state: &Questionnaire) -> Option<StatusKey> {
    shown(state).status_line.map(|line| line.key)
}

/// The JSON of a batch, for compact assertions.
pub fn json(batch: &AnswerBatch) -> serde_json::Value {
    serde_json::to_value(batch).expect("serialisable")
}
