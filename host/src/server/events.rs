//! `GET /api/sessions/{session}/events`: the browser's Server-Sent Events stream.
//!
//! On open: one `question/requested` per pending question (oldest first), then
//! `session/synced`, then live events. A subscriber that falls behind the
//! broadcast is re-synced the same way, never left silently behind. Shutdown
//! ends the stream after the events already sent to it (e.g. `disposed`).

use crate::server::credential::Credential;
use crate::server::error::ApiError;
use crate::server::extract::Session;
use crate::server::pending::{EventReceiver, PendingTable, RecvError, SharedEvent, TryRecvError};
use crate::server::people::Viewer;
use crate::server::state::AppState;
use ask_user_core::wire::{SessionEvent, SessionSynced};
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::{Extension, Router};
use futures_util::Stream;
use futures_util::stream;
use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The route (needs the token).
pub fn router() -> Router<AppState> {
    Router::new().route("/api/sessions/{session}/events", get(events))
}

async fn events(
    State(state): State<AppState>,
    Session(session): Session,
    credential: Option<Extension<Credential>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Held by the stream: released when the stream ends or its reader goes.
    let room = state.open_stream()?;
    let connected = state.page_connected();
    let stream = session_events_seen_by(
        state.pending().clone(),
        session.into(),
        state.shutdown_token(),
        Viewer::of(&state, credential.as_ref().map(|c| &c.0)),
    );
    let stream = futures_util::StreamExt::map(stream, move |event| {
        let _room = &room;
        // Counted as a connected page for as long as the stream lives.
        let _ = &connected;
        Ok(Event::default().event(event.name()).data(event.data()))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

struct Cursor {
    pending: Arc<PendingTable>,
    session: String,
    shutdown: CancellationToken,
    queue: VecDeque<SharedEvent>,
    events: Option<EventReceiver>,
    done: bool,
    /// Who reads: a person sees only the questions of their audiences.
    viewer: Viewer,
    /// The questions this stream showed (pending), for a viewer who does
    /// not see everything.
    shown: HashSet<String>,
}

impl Cursor {
    fn resync(&mut self) {
        let subscription = self.pending.subscribe(&self.session);
        self.queue.extend(subscription.replay);
        self.events = Some(subscription.events);
        self.shown.clear();
    }

    /// `event` as this stream's viewer may see it: a question outside their
    /// audience, and everything about it, is left out (a question that
    /// escalates to them arrives then, as `question/requested`).
    fn seen(&mut self, event: SharedEvent) -> Option<SharedEvent> {
        if self.viewer.sees_all() {
            return Some(event);
        }
        match &*event {
            // Sent again when it escalates: a page showing it already ignores
            // the repeat (and says "escalated"), one newly in the audience shows it.
            SessionEvent::QuestionRequested(q) => {
                if !self.viewer.sees(&event) {
                    return None;
                }
                self.shown.insert(q.id.clone());
                Some(event)
            }
            SessionEvent::QuestionDetached(r) | SessionEvent::QuestionAttached(r) => {
                self.shown.contains(&r.id).then_some(event)
            }
            SessionEvent::QuestionResolved(r) => self.shown.remove(&r.id).then_some(event),
            SessionEvent::SessionSynced(synced) => {
                let pending = synced
                    .pending
                    .iter()
                    .filter(|id| self.shown.contains(*id))
                    .cloned()
                    .collect();
                Some(SharedEvent::from(SessionEvent::SessionSynced(
                    SessionSynced { pending },
                )))
            }
            SessionEvent::MessageCreated(_) => Some(event),
        }
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        // Unsubscribe first, so the session can be forgotten if it is idle now.
        self.events = None;
        self.pending.release(&self.session);
    }
}

/// A session's events as one stream: replay, `session/synced`, live; re-synced
/// after a lag; ending on shutdown once the events already queued are out.
pub fn session_events(
    pending: Arc<PendingTable>,
    session: String,
    shutdown: CancellationToken,
) -> impl Stream<Item = SharedEvent> + Send + 'static {
    session_events_seen_by(pending, session, shutdown, Viewer::Owner)
}

/// [`session_events`] as `viewer` sees them (issue 24's audiences).
pub fn session_events_seen_by(
    pending: Arc<PendingTable>,
    session: String,
    shutdown: CancellationToken,
    viewer: Viewer,
) -> impl Stream<Item = SharedEvent> + Send + 'static {
    let mut cursor = Cursor {
        pending,
        session,
        shutdown,
        queue: VecDeque::new(),
        events: None,
        done: false,
        viewer,
        shown: HashSet::new(),
    };
    cursor.resync();
    stream::unfold(cursor, |mut cursor| async move {
        loop {
            if let Some(event) = cursor.queue.pop_front() {
                match cursor.seen(event) {
                    Some(event) => return Some((event, cursor)),
                    None => continue,
                }
            }
            if cursor.done {
                return None;
            }
            let events = cursor.events.as_mut()?;
            if cursor.shutdown.is_cancelled() {
                // Deliver what was broadcast before shutdown (the `disposed`
                // resolutions), then end.
                loop {
                    match events.try_recv() {
                        Ok(event) => cursor.queue.push_back(event),
                        Err(TryRecvError::Lagged(_)) => continue,
                        Err(_) => break,
                    }
                }
                cursor.done = true;
                continue;
            }
            tokio::select! {
                received = events.recv() => match received {
                    Ok(event) => {
                        if let Some(event) = cursor.seen(event) {
                            return Some((event, cursor));
                        }
                    }
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, session = %cursor.session, "stream lagged; re-syncing");
                        cursor.resync();
                    }
                    Err(RecvError::Closed) => return None,
                },
                () = cursor.shutdown.cancelled() => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::pending::PendingTable;
    use ask_user_core::AskRequest;
    use ask_user_core::wire::{SessionEvent, SessionSynced};
    use futures_util::StreamExt;

    fn request() -> AskRequest {
        AskRequest::from_json(r#"{"questions": [{"id": "q", "question": "Why?"}]}"#).unwrap()
    }

    #[tokio::test]
    async fn a_lagging_stream_is_re_synced_with_a_fresh_replay_and_synced() {
        let pending: Arc<PendingTable> = Arc::new(PendingTable::with_channel_capacity(2));
        let stream = session_events(pending.clone(), "s".to_owned(), CancellationToken::new());
        let mut stream = Box::pin(stream);
        assert_eq!(
            *stream.next().await.unwrap(),
            SessionEvent::SessionSynced(SessionSynced { pending: vec![] })
        );
        // Five questions while the stream is not read: more than the channel holds.
        let ids: Vec<String> = (0..5)
            .map(|_| {
                pending
                    .register("s", request(), None)
                    .unwrap()
                    .attachment
                    .id()
                    .to_owned()
            })
            .collect();
        let mut replayed = Vec::new();
        for _ in 0..5 {
            match &*stream.next().await.unwrap() {
                SessionEvent::QuestionRequested(q) => replayed.push(q.id.clone()),
                other => panic!("expected the re-sync replay, got {other:?}"),
            }
        }
        assert_eq!(replayed, ids);
        assert_eq!(
            *stream.next().await.unwrap(),
            SessionEvent::SessionSynced(SessionSynced {
                pending: ids.clone()
            })
        );
        // Then live again.
        pending.cancel("s", &ids[0]).unwrap();
        assert!(matches!(
            &*stream.next().await.unwrap(),
            SessionEvent::QuestionResolved(r) if r.id == ids[0]
        ));
    }

    #[tokio::test]
    async fn shutdown_ends_the_stream_after_what_was_already_broadcast() {
        let pending: Arc<PendingTable> = Arc::new(PendingTable::new());
        let shutdown = CancellationToken::new();
        let mut stream = Box::pin(session_events(
            pending.clone(),
            "s".to_owned(),
            shutdown.clone(),
        ));
        stream.next().await.unwrap();
        let id = pending
            .register("s", request(), None)
            .unwrap()
            .attachment
            .id()
            .to_owned();
        pending.dispose_all();
        shutdown.cancel();
        assert!(
            matches!(&*stream.next().await.unwrap(), SessionEvent::QuestionRequested(q) if q.id == id)
        );
        assert!(
            matches!(&*stream.next().await.unwrap(), SessionEvent::QuestionResolved(r) if r.id == id)
        );
        assert!(stream.next().await.is_none());
    }
}
