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

use crate::server::error::ApiError;
use crate::server::pending::{
    Attachment, Found, LetGo, PendingLimit, PendingTable, RegisterError, Registered, Resolution,
    question_id,
};
use crate::server::store::{
    Asked, EphemeralStore, SharedRecord, Store, StoreError, Taken, Write, now_ms, unavailable,
};
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
    pending: Arc<PendingTable>,
    record: Arc<dyn Store>,
    deliveries: Arc<Deliveries>,
}

impl std::fmt::Debug for WebProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebProvider").finish_non_exhaustive()
    }
}

impl WebProvider {
    /// A provider over `pending` that records nothing.
    pub fn new(pending: Arc<PendingTable>) -> Self {
        Self::recording(pending, Arc::new(EphemeralStore))
    }

    /// A provider over `pending` that writes each new question to `record`
    /// before the person may see it, and marks a resolution delivered once
    /// the asking call has it.
    pub fn recording(pending: Arc<PendingTable>, record: Arc<dyn Store>) -> Self {
        Self {
            pending,
            record,
            deliveries: Arc::default(),
        }
    }
}

/// The error the provider fails with when one more question would break
/// `limit`. Core has no code for a transport's capacity, so the error crosses
/// the seam as `ASK_FAILED` carrying the limit as its cause, and
/// [`crate::AppState::ask`] turns it back into 429 `TOO_MANY_PENDING`.
pub(crate) fn no_room(limit: PendingLimit) -> UserInteractionError {
    UserInteractionError::failed(ApiError::TooManyPending { limit }.message()).with_cause(limit)
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
    pending: Arc<PendingTable>,
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
        self.pending
            .let_go(&self.session, self.attachment.clone(), waiter, how);
    }
}

/// How long after handing a resolution to its call the record marks it
/// delivered. Until then a restart still holds it: the response may not have
/// left the host yet, and an answer the person was told is kept must reach the
/// asker that asks again. (An asker that did get it asks something else.)
pub const DELIVERY_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long past [`DELIVERY_SETTLE`] a delivery may wait to be marked with
/// the others due by then: one wake-up marks a group, not one per question.
pub const DELIVERY_GROUPING: std::time::Duration = std::time::Duration::from_millis(100);

/// Resolutions handed to their calls, oldest first, waiting to be marked
/// delivered; one task marks them while any wait (instead of a task and a
/// timer per question).
#[derive(Debug, Default)]
struct Deliveries {
    due: std::sync::Mutex<std::collections::VecDeque<(Instant, String)>>,
    /// Whether the task that marks them runs.
    marking: std::sync::atomic::AtomicBool,
}

impl Deliveries {
    fn due(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<(Instant, String)>> {
        self.due.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks what is due, group by group, until nothing waits.
    async fn mark(self: Arc<Self>, record: Arc<dyn Store>) {
        use std::sync::atomic::Ordering;
        loop {
            let next = self.due().front().map(|(at, _)| *at);
            let Some(next) = next else {
                self.marking.store(false, Ordering::Release);
                // One queued between the look and the store found the task
                // running and started none: go on marking it.
                if self.due().is_empty() || self.marking.swap(true, Ordering::AcqRel) {
                    return;
                }
                continue;
            };
            tokio::time::sleep_until(next + DELIVERY_GROUPING).await;
            let now = Instant::now();
            let ready: Vec<String> = {
                let mut due = self.due();
                let count = due.iter().take_while(|(at, _)| *at <= now).count();
                due.drain(..count).map(|(_, id)| id).collect()
            };
            for id in ready {
                // A failure is the store's trouble, reported by its health.
                drop(record.submit(Write::Delivered { id }));
            }
        }
    }
}

impl WebProvider {
    fn mark_delivered(&self, id: String) {
        use std::sync::atomic::Ordering;
        if !self.record.keeps() {
            return;
        }
        self.deliveries
            .due()
            .push_back((Instant::now() + DELIVERY_SETTLE, id));
        if !self.deliveries.marking.swap(true, Ordering::AcqRel) {
            tokio::spawn(self.deliveries.clone().mark(self.record.clone()));
        }
    }
}

impl WebProvider {
    /// A shared record decides which question the ask takes (a detached or
    /// held one of the same request in the session, on any host, else a new
    /// one it writes); the table follows that decision.
    async fn take_shared(
        &self,
        shared: &dyn SharedRecord,
        question: QuestionRequested,
        request_json: bytes::Bytes,
    ) -> Result<Result<Registered, RegisterError>, UserInteractionError> {
        use sha2::Digest;
        let sha: [u8; 32] = sha2::Sha256::digest(&request_json).into();
        let asked = Asked::with_request_json(&question, &request_json);
        let taken = shared
            .take(asked, sha)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Unavailable(
                    "the store's writer stopped".to_owned(),
                ))
            })
            .map_err(|e| unavailable(&e))?;
        let (question, new, held) = match taken {
            Taken::New => (question, true, None),
            Taken::Existing { question, held } => (
                *question,
                false,
                held.map(|answer| answer.map_or(Resolution::Cancelled, Resolution::Answered)),
            ),
        };
        let id = question.id.clone();
        let registered = self.pending.attach(question, request_json, new, held);
        if registered.is_ok() {
            shared.taken(id);
        } else {
            // Refused here (shutting down, caps): the record lets it go again.
            let write = if new {
                Write::Discard { id }
            } else {
                Write::Detached { id }
            };
            drop(self.record.submit(write));
        }
        Ok(registered)
    }
}

impl UserInteractionProvider for WebProvider {
    /// Every answer comes from [`PendingTable::claim`], which normalises it
    /// against the question's request (held and restored answers were
    /// normalised before they were kept), so core keeps no second copy of the
    /// request while the question waits.
    fn answers_normalized(&self) -> bool {
        true
    }

    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        // Core's budget becomes this runtime's timer, counted from now.
        let deadline = context.timeout.map(|timeout| Instant::now() + timeout);
        Box::pin(async move {
            let session = context.session.as_str();
            let question = QuestionRequested {
                id: question_id(),
                session: session.to_owned(),
                request,
                created_at_ms: now_ms(),
                asked_by: context.asked_by.clone(),
            };
            let keeps = self.record.keeps();
            // Made once: the table keeps it (lists and streams write from it)
            // and the record's row is written around it.
            let request_json = crate::server::pending::request_json(&question.request);
            let registered = match self.record.shared() {
                Some(shared) => self.take_shared(shared, question, request_json).await?,
                None => {
                    if keeps {
                        // Kept before anyone sees it: a restart brings it back.
                        let asked = Asked::with_request_json(&question, &request_json);
                        self.record
                            .submit(Write::Asked(asked))
                            .kept()
                            .await
                            .map_err(|e| unavailable(&e))?;
                    }
                    // Scoped, so the waiting future holds no copy of the id.
                    let fresh = keeps.then(|| question.id.clone());
                    let registered = self.pending.register_with_json(question, request_json);
                    if let Some(fresh) = fresh
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
                    registered
                }
            };
            let Registered {
                attachment,
                waiter,
                found,
            } = registered.map_err(refusal)?;
            tracing::debug!(session, id = attachment.id(), ?found, "question presented");
            context.presented.set(attachment.id());
            let mut guard = WaitGuard {
                pending: self.pending.clone(),
                session: session.to_owned(),
                attachment,
                waiter: Some(waiter),
                abort: context.abort.clone(),
            };
            let resolution = match deadline {
                None => guard.resolution().await,
                Some(deadline) => {
                    // Boxed: a question waiting without a deadline carries no
                    // timer in its future.
                    match Box::pin(tokio::time::timeout_at(deadline, guard.resolution())).await {
                        Ok(resolution) => resolution,
                        Err(_elapsed)
                            if self.pending.abort(
                                session,
                                guard.attachment.id(),
                                Outcome::Timeout,
                            ) =>
                        {
                            return Err(UserInteractionError::timeout());
                        }
                        // Resolved in the same instant: that resolution stands.
                        Err(_elapsed) => guard.resolution().await,
                    }
                }
            };
            if let Ok(Resolution::Answered(_) | Resolution::Cancelled) = resolution {
                self.mark_delivered(guard.attachment.id().to_owned());
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
    use crate::server::pending::{PendingConfig, PendingTable};
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

    fn table(grace: Duration) -> Arc<PendingTable> {
        Arc::new(PendingTable::with_config(PendingConfig {
            detach_grace: grace,
            ..PendingConfig::default()
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

    /// A record that keeps every write it is given, in order.
    #[derive(Default)]
    struct Recorded(std::sync::Mutex<Vec<Write>>);

    impl Recorded {
        fn delivered(&self) -> Vec<String> {
            let writes = self.0.lock().unwrap();
            writes
                .iter()
                .filter_map(|write| match write {
                    Write::Delivered { id } => Some(id.clone()),
                    _ => None,
                })
                .collect()
        }
    }

    impl Store for Recorded {
        fn submit(&self, write: Write) -> crate::server::store::Ticket {
            self.0.lock().unwrap().push(write);
            crate::server::store::Ticket::settled(Ok(true))
        }

        fn restored(&self) -> crate::server::store::Restored {
            crate::server::store::Restored::default()
        }

        fn history(
            &self,
            _query: &crate::server::store::HistoryQuery,
        ) -> Result<crate::server::store::HistoryPage, crate::server::store::StoreError> {
            Ok(crate::server::store::HistoryPage::default())
        }

        fn trouble(&self) -> Option<String> {
            None
        }

        fn flush(&self) -> crate::server::store::Ticket {
            crate::server::store::Ticket::settled(Ok(true))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_resolution_is_marked_delivered_a_settling_second_later_in_groups_and_none_is_lost() {
        let record = Arc::new(Recorded::default());
        let provider = WebProvider::recording(table(Duration::from_secs(60)), record.clone());
        provider.mark_delivered("q_1".to_owned());
        tokio::time::sleep(Duration::from_millis(300)).await;
        provider.mark_delivered("q_2".to_owned());
        // 990 ms after the first.
        tokio::time::sleep(DELIVERY_SETTLE - Duration::from_millis(310)).await;
        assert_eq!(
            record.delivered(),
            Vec::<String>::new(),
            "not before a second"
        );
        // 1,110 ms: the first, not the second (due at 1,300 ms).
        tokio::time::sleep(DELIVERY_GROUPING + Duration::from_millis(20)).await;
        assert_eq!(record.delivered(), ["q_1"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(record.delivered(), ["q_1", "q_2"]);
        // Nothing waits, so the marking task ended: a later one starts anew.
        tokio::time::sleep(Duration::from_secs(5)).await;
        provider.mark_delivered("q_3".to_owned());
        tokio::time::sleep(DELIVERY_SETTLE + DELIVERY_GROUPING + Duration::from_millis(10)).await;
        assert_eq!(record.delivered(), ["q_1", "q_2", "q_3"]);
    }

    #[tokio::test]
    async fn an_answer_handed_over_but_never_read_is_held_for_the_next_identical_ask() {
        let pending = table(Duration::from_secs(60));
        let provider = WebProvider::new(pending.clone());
        let abort = AbortController::new();
        let mut first = provider.ask(request(), context(&abort));
        poll_once(first.as_mut());
        let id = pending.snapshot("s")[0].id.clone();

        // The person's answer reaches the waiting call, which is dropped
        // before it is polled again (its connection went away that instant).
        pending.claim("s", &id, answer()).unwrap();
        drop(first);
        assert_eq!(pending.held_count(), 1, "the answer is held, not lost");
        assert_eq!(pending.pending_count(), 0);

        let again = provider.ask(request(), context(&abort)).await;
        assert_eq!(again, Ok(answer()));
        assert_eq!(pending.held_count(), 0, "collected once");
    }

    #[tokio::test]
    async fn a_dropped_ask_detaches_its_question_and_an_identical_ask_reattaches() {
        let pending = table(Duration::from_secs(60));
        let provider = WebProvider::new(pending.clone());
        let mut events = pending.subscribe("s").events;
        let abort = AbortController::new();
        let mut first = provider.ask(request(), context(&abort));
        poll_once(first.as_mut());
        let id = pending.snapshot("s")[0].id.clone();
        drop(first);
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionRequested(q) if q.id == id)
        );
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionDetached(r) if r.id == id)
        );
        assert_eq!(pending.pending_count(), 1, "still answerable");

        let presented = ask_user_core::PresentedAs::new();
        let mut second = provider.ask(request(), context(&abort).reporting_to(presented.clone()));
        poll_once(second.as_mut());
        assert_eq!(presented.id(), Some(id.as_str()), "the same question");
        assert!(
            matches!(&*events.try_recv().unwrap(), SessionEvent::QuestionAttached(r) if r.id == id)
        );
        pending.claim("s", &id, answer()).unwrap();
        assert_eq!(second.await, Ok(answer()));
    }

    #[tokio::test]
    async fn an_ask_ended_on_purpose_aborts_its_question_at_once() {
        let pending = table(Duration::from_secs(60));
        let provider = WebProvider::new(pending.clone());
        let abort = AbortController::new();
        let mut ask = provider.ask(request(), context(&abort));
        poll_once(ask.as_mut());
        let id = pending.snapshot("s")[0].id.clone();
        abort.abort();
        drop(ask);
        assert_eq!(pending.pending_count(), 0);
        let refused = pending.claim("s", &id, answer()).unwrap_err();
        assert!(
            refused.message.contains("the agent aborted it"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn with_no_grace_a_dropped_ask_aborts_as_before() {
        let pending = table(Duration::ZERO);
        let provider = WebProvider::new(pending.clone());
        let abort = AbortController::new();
        let mut ask = provider.ask(request(), context(&abort));
        poll_once(ask.as_mut());
        drop(ask);
        assert_eq!(pending.pending_count(), 0);
        assert_eq!(pending.held_count(), 0);
    }

    #[test]
    fn a_full_store_is_refused_with_the_value_app_state_recognises() {
        assert_eq!(
            refusal(RegisterError::TooManyPending {
                limit: PendingLimit::PerSession(3)
            })
            .cause::<PendingLimit>(),
            Some(&PendingLimit::PerSession(3))
        );
        assert_eq!(
            refusal(RegisterError::ShuttingDown),
            UserInteractionError::provider_disposed()
        );
    }
}
