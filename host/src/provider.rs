//! The web provider: core's [`UserInteractionProvider`] backed by the pending
//! table, so every asker (the HTTP ask endpoint, MCP, the demo agent) goes
//! through core's `UserInteraction::ask_with`.
//!
//! How an ask ends decides what happens to its question:
//! - the person answers or cancels: the ask returns that;
//! - `context.timeout` runs out: the question resolves `timeout`;
//! - the asker ends it on purpose (`context.abort` fires: MCP
//!   `notifications/cancelled`, `DELETE /mcp`, a task cancel, the owner's
//!   abort): the question resolves `aborted` at once;
//! - the ask's future is dropped without that (a dropped connection, a client
//!   that stopped waiting): the question is *detached* and kept for the detach
//!   grace, for an identical ask to attach to again. A resolution that reached
//!   the ask but was never read is held for that ask too, never lost.

use crate::error::ApiError;
use crate::pending::{
    Attachment, Found, LetGo, PendingLimit, PendingStore, RegisterError, Registered, Resolution,
    random_id,
};
use crate::store::{EphemeralStore, Store, Write, now_ms, unavailable};
use ask_user_core::wire::{Outcome, QuestionRequested};
use ask_user_core::{
    AbortSignal, AskContext, AskRequest, ProviderFuture, UserInteractionError,
    UserInteractionProvider,
};
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Presents questions to the browser tabs of a session through the pending table.
pub struct WebProvider {
    store: Arc<dyn PendingStore>,
    record: Arc<dyn Store>,
}

impl std::fmt::Debug for WebProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebProvider").finish_non_exhaustive()
    }
}

impl WebProvider {
    /// A provider over `store` that records nothing.
    pub fn new(store: Arc<dyn PendingStore>) -> Self {
        Self::recording(store, Arc::new(EphemeralStore))
    }

    /// A provider over `store` that writes each new question to `record`
    /// before the person may see it, and marks a resolution delivered once
    /// the asking call has it.
    pub fn recording(store: Arc<dyn PendingStore>, record: Arc<dyn Store>) -> Self {
        Self { store, record }
    }
}

/// The error the provider fails with when one more question would break
/// `limit`. Core has no code for a transport's capacity, so the error crosses
/// the seam as this exact value and [`crate::AppState::ask`] turns it back
/// into 429 `TOO_MANY_PENDING`.
pub(crate) fn no_room(limit: PendingLimit) -> UserInteractionError {
    UserInteractionError::failed(ApiError::TooManyPending { limit }.message())
}

fn refusal(error: RegisterError) -> UserInteractionError {
    match error {
        RegisterError::ShuttingDown => UserInteractionError::provider_disposed(),
        RegisterError::TooManyPending { limit } => no_room(limit),
    }
}

/// A call's hold on its question while it waits. Dropped before the
/// resolution was read, it lets the question go: aborted when the asker ended
/// the ask on purpose, detached otherwise.
struct WaitGuard {
    store: Arc<dyn PendingStore>,
    session: String,
    attachment: Attachment,
    /// `None` once the resolution was read.
    waiter: Option<oneshot::Receiver<Resolution>>,
    abort: AbortSignal,
}

impl WaitGuard {
    /// Waits for the resolution; `Err` when the question ended without one
    /// reaching this call (aborted, timed out).
    async fn resolution(&mut self) -> Result<Resolution, oneshot::error::RecvError> {
        let waiter = self.waiter.as_mut().expect("read only once");
        let resolution = waiter.await;
        self.waiter = None;
        resolution
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let Some(waiter) = self.waiter.take() else {
            return;
        };
        let how = if self.abort.is_aborted() {
            LetGo::Abort
        } else {
            LetGo::Detach
        };
        self.store
            .let_go(&self.session, self.attachment.clone(), waiter, how);
    }
}

/// How long after handing a resolution to its call the record marks it
/// delivered. Until then a restart still holds it: the response may not have
/// left the host yet, and an answer the person was told is kept must reach the
/// asker that asks again. (An asker that did get it asks something else.)
pub const DELIVERY_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

impl WebProvider {
    fn mark_delivered(&self, id: String) {
        if !self.record.keeps() {
            return;
        }
        let record = self.record.clone();
        tokio::spawn(async move {
            tokio::time::sleep(DELIVERY_SETTLE).await;
            // A failure is the store's trouble, reported by its health.
            drop(record.submit(Write::Delivered { id }));
        });
    }
}

impl UserInteractionProvider for WebProvider {
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        // Core's budget becomes this runtime's timer, counted from now.
        let deadline = context.timeout.map(|timeout| Instant::now() + timeout);
        Box::pin(async move {
            let session = context.session.as_str();
            let question = QuestionRequested {
                id: random_id("q_"),
                session: session.to_owned(),
                request,
                created_at_ms: now_ms(),
                asked_by: context.asked_by.clone(),
            };
            let fresh = question.id.clone();
            let keeps = self.record.keeps();
            if keeps {
                // Kept before anyone sees it: a restart brings it back.
                self.record
                    .submit(Write::Asked(question.clone()))
                    .kept()
                    .await
                    .map_err(|e| unavailable(&e))?;
            }
            let registered = self.store.register_as(question);
            if keeps
                && !matches!(
                    registered,
                    Ok(Registered {
                        found: Found::New,
                        ..
                    })
                )
            {
                drop(self.record.submit(Write::Discard { id: fresh }));
            }
            let Registered {
                attachment,
                waiter,
                found,
            } = registered.map_err(refusal)?;
            tracing::debug!(session, id = attachment.id(), ?found, "question presented");
            context.presented.set(attachment.id());
            let id = attachment.id().to_owned();
            let mut guard = WaitGuard {
                store: self.store.clone(),
                session: session.to_owned(),
                attachment,
                waiter: Some(waiter),
                abort: context.abort.clone(),
            };
            let resolution = match deadline {
                None => guard.resolution().await,
                Some(deadline) => {
                    match tokio::time::timeout_at(deadline, guard.resolution()).await {
                        Ok(resolution) => resolution,
                        Err(_elapsed) if self.store.abort(session, &id, Outcome::Timeout) => {
                            return Err(UserInteractionError::timeout());
                        }
                        // Resolved in the same instant: that resolution stands.
                        Err(_elapsed) => guard.resolution().await,
                    }
                }
            };
            if let Ok(Resolution::Answered(_) | Resolution::Cancelled) = resolution {
                self.mark_delivered(id);
            }
            match resolution {
                Ok(Resolution::Answered(answer)) => Ok(answer),
                Ok(Resolution::Cancelled) => Err(UserInteractionError::cancelled()),
                Ok(Resolution::Disposed) | Err(_) => Err(UserInteractionError::provider_disposed()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pending::{MemoryStore, StoreConfig};
    use ask_user_core::wire::SessionEvent;
    use ask_user_core::{AbortController, AnswerBatch, SessionId};
    use std::future::Future;
    use std::task::{Context, Waker};
    use std::time::Duration;

    fn request() -> AskRequest {
        AskRequest::from_json(
            r#"{"questions": [{"id": "db", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]}"#,
        )
        .unwrap()
    }

    fn answer() -> AnswerBatch {
        AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": ["B"]}]}"#).unwrap()
    }

    fn store(grace: Duration) -> Arc<dyn PendingStore> {
        Arc::new(MemoryStore::with_config(StoreConfig {
            detach_grace: grace,
            ..StoreConfig::default()
        }))
    }

    fn context(abort: &AbortController) -> AskContext {
        AskContext::new(abort.signal()).in_session(SessionId::parse("s").unwrap())
    }

    /// Polls `future` once, so it registers its question, and expects it to wait.
    fn poll_once<F: Future + ?Sized>(future: std::pin::Pin<&mut F>) {
        let mut cx = Context::from_waker(Waker::noop());
        assert!(future.poll(&mut cx).is_pending(), "the ask waits");
    }

    #[tokio::test]
    async fn an_answer_handed_over_but_never_read_is_held_for_the_next_identical_ask() {
        let store = store(Duration::from_secs(60));
        let provider = WebProvider::new(store.clone());
        let abort = AbortController::new();
        let mut first = provider.ask(request(), context(&abort));
        poll_once(first.as_mut());
        let id = store.snapshot("s")[0].id.clone();

        // The person's answer reaches the waiting call, which is dropped
        // before it is polled again (its connection went away that instant).
        store.claim("s", &id, answer()).unwrap();
        drop(first);
        assert_eq!(store.held_count(), 1, "the answer is held, not lost");
        assert_eq!(store.pending_count(), 0);

        let again = provider.ask(request(), context(&abort)).await;
        assert_eq!(again, Ok(answer()));
        assert_eq!(store.held_count(), 0, "collected once");
    }

    #[tokio::test]
    async fn a_dropped_ask_detaches_its_question_and_an_identical_ask_reattaches() {
        let store = store(Duration::from_secs(60));
        let provider = WebProvider::new(store.clone());
        let mut events = store.subscribe("s").events;
        let abort = AbortController::new();
        let mut first = provider.ask(request(), context(&abort));
        poll_once(first.as_mut());
        let id = store.snapshot("s")[0].id.clone();
        drop(first);
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionRequested(q) if q.id == id)
        );
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionDetached(r) if r.id == id)
        );
        assert_eq!(store.pending_count(), 1, "still answerable");

        let presented = ask_user_core::PresentedAs::new();
        let mut second = provider.ask(request(), context(&abort).reporting_to(presented.clone()));
        poll_once(second.as_mut());
        assert_eq!(presented.id(), Some(id.as_str()), "the same question");
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionAttached(r) if r.id == id)
        );
        store.claim("s", &id, answer()).unwrap();
        assert_eq!(second.await, Ok(answer()));
    }

    #[tokio::test]
    async fn an_ask_ended_on_purpose_aborts_its_question_at_once() {
        let store = store(Duration::from_secs(60));
        let provider = WebProvider::new(store.clone());
        let abort = AbortController::new();
        let mut ask = provider.ask(request(), context(&abort));
        poll_once(ask.as_mut());
        let id = store.snapshot("s")[0].id.clone();
        abort.abort();
        drop(ask);
        assert_eq!(store.pending_count(), 0);
        let refused = store.claim("s", &id, answer()).unwrap_err();
        assert!(
            refused.message.contains("the agent aborted it"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn with_no_grace_a_dropped_ask_aborts_as_before() {
        let store = store(Duration::ZERO);
        let provider = WebProvider::new(store.clone());
        let abort = AbortController::new();
        let mut ask = provider.ask(request(), context(&abort));
        poll_once(ask.as_mut());
        drop(ask);
        assert_eq!(store.pending_count(), 0);
        assert_eq!(store.held_count(), 0);
    }

    #[test]
    fn a_full_store_is_refused_with_the_value_app_state_recognises() {
        assert_eq!(
            refusal(RegisterError::TooManyPending {
                limit: PendingLimit::PerSession(3)
            }),
            no_room(PendingLimit::PerSession(3))
        );
        assert_eq!(
            refusal(RegisterError::ShuttingDown),
            UserInteractionError::provider_disposed()
        );
    }
}
