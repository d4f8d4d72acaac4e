//! The demo agent (`ask-user serve --demo`): a scripted agent in session
//! `default`, so the project runs end to end with nothing else installed.
//!
//! When the person posts a message, it replies in the transcript, asks a
//! three-question batch through the same seam every agent uses
//! ([`AppState::ask`]), then posts a summary of the answers, or says that the
//! person cancelled. No network, no model.

use crate::server::pending::{EventReceiver, RecvError};
use crate::server::state::{AppState, AskOptions};
use ask_user_core::wire::{AskedBy, AskerKind};
use ask_user_core::wire::{MessageCreated, Role, SessionEvent};
use ask_user_core::{AnswerBatch, AskRequest, ErrorCode, Question, QuestionOption, SessionId};
use tokio::task::JoinHandle;

/// The session the demo agent talks in: the default one.
pub fn demo_session() -> SessionId {
    SessionId::default()
}

/// What the agent says before it asks.
pub const REPLY: &str = "Thanks! Before I start, I have three quick questions for you.";

/// What the agent says when the person cancelled the questions.
pub const CANCELLED_REPLY: &str = "You cancelled the questions, so I will not go ahead. Send another message whenever you are ready.";

/// The first line of the summary the agent posts after the answers.
pub const SUMMARY_HEADING: &str = "Here is what I will go with:";

/// The batch the demo agent asks: a single-select with a recommended option,
/// a multi-select with descriptions, and a free-text question.
pub fn questions() -> AskRequest {
    let option = |label: &str, description: &str| QuestionOption {
        label: label.to_owned(),
        description: Some(description.to_owned()),
    };
    AskRequest {
        questions: vec![
            Question {
                id: "approach".to_owned(),
                question: "How should I approach this?".to_owned(),
                header: Some("Approach".to_owned()),
                detail: None,
                options: Some(vec![
                    option(
                        "Small steps (Recommended)",
                        "Change a little at a time and check in after each step.",
                    ),
                    option(
                        "Plan first",
                        "Write the whole plan down before touching anything.",
                    ),
                    option(
                        "Quick prototype",
                        "Try the idea fast and throw it away afterwards.",
                    ),
                ]),
                multi_select: None,
                intent: None,
            },
            Question {
                id: "focus".to_owned(),
                question: "What should I pay most attention to?".to_owned(),
                header: Some("Focus".to_owned()),
                detail: None,
                options: Some(vec![
                    option(
                        "Tests",
                        "Cover every change with a test that would catch it breaking.",
                    ),
                    option(
                        "Docs",
                        "Keep the README and comments in step with the code.",
                    ),
                    option("Speed", "Measure before and after; keep it fast."),
                    option("Accessibility", "Keyboard, screen readers and contrast."),
                ]),
                multi_select: Some(true),
                intent: None,
            },
            Question {
                id: "notes".to_owned(),
                question: "Anything else I should know?".to_owned(),
                header: Some("Notes".to_owned()),
                detail: None,
                options: None,
                multi_select: None,
                intent: None,
            },
        ],
        audience: None,
        escalate_after: None,
    }
}

/// The summary of `answers` to [`questions`], as Markdown.
pub fn summary(request: &AskRequest, answers: &AnswerBatch) -> String {
    let mut text = String::from(SUMMARY_HEADING);
    for question in &request.questions {
        let title = question.header.as_deref().unwrap_or(&question.question);
        let mut parts: Vec<String> = Vec::new();
        if let Some(answer) = answers.answer(&question.id) {
            parts.extend(answer.selected.iter().cloned());
            if let Some(custom) = answer.custom.as_deref().filter(|c| !c.trim().is_empty()) {
                parts.push(format!("\u{201c}{custom}\u{201d}"));
            }
        }
        let said = if parts.is_empty() {
            "(skipped)".to_owned()
        } else {
            parts.join(", ")
        };
        text.push_str(&format!("\n- **{title}:** {said}"));
    }
    text
}

/// Starts the demo agent in [`demo_session`]. It listens from this call on
/// (so no message posted after it returns is missed) and stops at shutdown.
///
/// While it waits for answers it does not listen: messages sent meanwhile are
/// skipped (not queued, so none is held in the session's buffer and none
/// starts another round later); it listens again before it posts its summary.
pub fn spawn(state: AppState) -> JoinHandle<()> {
    let session = demo_session();
    let subscription = state.subscribe(&session);
    let shutdown = state.shutdown_token();
    tokio::spawn(async move {
        let mut events = subscription.events;
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = shutdown.cancelled() => break,
            };
            match event {
                Ok(event) => {
                    if let SessionEvent::MessageCreated(MessageCreated {
                        role: Role::User, ..
                    }) = &*event
                    {
                        drop(events);
                        events = converse(&state, &session).await;
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "demo agent skipped events");
                }
                Err(RecvError::Closed) => break,
            }
        }
        drop(events);
        state.pending().release(session.as_str());
    })
}

/// One turn: reply, ask, listen again, summarise. Returns the new subscription.
async fn converse(state: &AppState, session: &SessionId) -> EventReceiver {
    // A message the store could not keep is reported there (health); the demo goes on.
    let _ = state.post_message(session, Role::Agent, REPLY).await;
    let request = questions();
    let result = state
        .ask(
            session,
            request.clone(),
            AskOptions {
                asked_by: AskedBy::new(
                    AskerKind::Demo,
                    "ask-user demo",
                    Some(env!("CARGO_PKG_VERSION")),
                ),
                ..AskOptions::default()
            },
        )
        .await;
    let events = state.subscribe(session).events;
    let text = match result {
        Ok(answers) => summary(&request, &answers),
        Err(error) => match error.as_interaction().map(|e| e.code) {
            Some(ErrorCode::AskCancelled) => CANCELLED_REPLY.to_owned(),
            // The host is going away: nobody is left to read a reply.
            _ if state.is_shutting_down() => return events,
            _ => format!("I could not get your answers: {error}."),
        },
    };
    let _ = state.post_message(session, Role::Agent, text).await;
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_batch_is_valid_and_has_the_three_kinds() {
        let request = questions();
        request.validate().unwrap();
        let [single, multi, free] = &request.questions[..] else {
            panic!("three questions");
        };
        assert!(!single.is_multi_select());
        assert!(
            single
                .options()
                .iter()
                .any(|o| ask_user_core::is_recommended(&o.label))
        );
        assert!(multi.is_multi_select());
        assert!(multi.options().iter().all(|o| o.description.is_some()));
        assert!(!free.has_options());
    }

    #[test]
    fn the_summary_names_every_answer_and_every_skip() {
        let request = questions();
        let answers = AnswerBatch::from_json(
            r#"{"answers":[
                {"id":"approach","selected":["Small steps (Recommended)"]},
                {"id":"focus","selected":["Tests","Docs"],"custom":"and logs"},
                {"id":"notes","selected":[]}
            ]}"#,
        )
        .unwrap()
        .normalize(&request)
        .unwrap();
        assert_eq!(
            summary(&request, &answers),
            "Here is what I will go with:\n\
             - **Approach:** Small steps (Recommended)\n\
             - **Focus:** Tests, Docs, \u{201c}and logs\u{201d}\n\
             - **Notes:** (skipped)"
        );
    }
}
