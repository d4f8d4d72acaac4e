//! The person's inbox across sessions: `GET /api/sessions` (the session
//! list), `GET /api/events` (the list again whenever it changes, as
//! `inbox/changed` frames) and `GET /api/sessions/{session}/transcript`.
//! Behind the token, Host and Origin checks like the rest of `/api`.

use crate::server::credential::Credential;
use crate::server::error::ApiError;
use crate::server::extract::Session;
use crate::server::pending::{PendingTable, now_ms};
use crate::server::people::Viewer;
use crate::server::state::AppState;
use ask_user_core::limits::INBOX_COALESCE_MS;
use ask_user_core::wire::{InboxEvent, SessionList, Transcript, TranscriptEntry};
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::{Extension, Json, Router};
use futures_util::{Stream, stream};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::server::limits::MAX_INBOX_STREAMS;

/// The least time between two `inbox/changed` frames of one stream.
pub const COALESCE: Duration = Duration::from_millis(INBOX_COALESCE_MS);

/// The routes (need the token).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/sessions", get(sessions))
        .route("/api/sessions/{session}/transcript", get(transcript))
        .route("/api/events", get(events))
}

/// `GET /api/sessions` → `{"sessions": [...]}`, most urgent first.
async fn sessions(
    State(state): State<AppState>,
    credential: Option<Extension<Credential>>,
) -> Json<SessionList> {
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    Json(sessions_seen_by(state.pending(), &viewer))
}

/// The session list as `viewer` sees it.
fn sessions_seen_by(pending: &PendingTable, viewer: &Viewer) -> SessionList {
    if viewer.sees_all() {
        pending.sessions(now_ms())
    } else {
        pending.sessions_seen_by(now_ms(), &|event| viewer.sees(event))
    }
}

/// `GET /api/sessions/{session}/transcript` → `{"entries": [...]}`, oldest first.
/// A person's holds the records of the questions they could see.
async fn transcript(
    State(state): State<AppState>,
    Session(session): Session,
    credential: Option<Extension<Credential>>,
) -> Json<Transcript> {
    let mut transcript = state.pending().transcript(session.as_str());
    if let Viewer::Person(person) = Viewer::of(&state, credential.as_ref().map(|c| &c.0)) {
        transcript.entries.retain(|entry| match entry {
            TranscriptEntry::Record(record) => {
                let escalated = record
                    .request
                    .escalates_at_ms(record.created_at_ms)
                    .is_some_and(|at| record.resolved_at_ms >= at);
                record.request.admits(person.as_ref(), escalated)
            }
            TranscriptEntry::Message(_) => true,
        });
    }
    transcript.demo_agent = state.config().demo && session == crate::server::demo::demo_session();
    Json(transcript)
}

/// `GET /api/events`: `inbox/changed` on open and after every change.
async fn events(
    State(state): State<AppState>,
    credential: Option<Extension<Credential>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let permit = state
        .inbox_streams()
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::TooManyInboxStreams {
            limit: MAX_INBOX_STREAMS,
        })?;
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    let stream = inbox_events_seen_by(
        state.pending().clone(),
        state.shutdown_token(),
        permit,
        viewer,
    );
    let stream = futures_util::StreamExt::map(stream, |event| {
        Ok(Event::default().event(event.name()).data(event.data()))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(crate::server::events::KEEP_ALIVE)))
}

struct Cursor {
    pending: Arc<PendingTable>,
    changes: watch::Receiver<()>,
    shutdown: CancellationToken,
    last: Option<SessionList>,
    last_sent_at: Option<Instant>,
    /// Held while the stream is open.
    _permit: Option<OwnedSemaphorePermit>,
    /// Whose list it is.
    viewer: Viewer,
}

/// The session list as a stream: now, then after each change, at most one
/// frame per [`COALESCE`] and never the same list twice in a row; it ends at
/// shutdown.
pub fn inbox_events(
    pending: Arc<PendingTable>,
    shutdown: CancellationToken,
    permit: impl Into<Option<OwnedSemaphorePermit>>,
) -> impl Stream<Item = InboxEvent> + Send + 'static {
    inbox_events_seen_by(pending, shutdown, permit, Viewer::Owner)
}

/// [`inbox_events`] with the list as `viewer` sees it.
pub fn inbox_events_seen_by(
    pending: Arc<PendingTable>,
    shutdown: CancellationToken,
    permit: impl Into<Option<OwnedSemaphorePermit>>,
    viewer: Viewer,
) -> impl Stream<Item = InboxEvent> + Send + 'static {
    let changes = pending.inbox();
    let cursor = Cursor {
        pending,
        changes,
        shutdown,
        last: None,
        last_sent_at: None,
        _permit: permit.into(),
        viewer,
    };
    stream::unfold(cursor, |mut cursor| async move {
        loop {
            if cursor.last.is_some() {
                tokio::select! {
                    changed = cursor.changes.changed() => changed.ok()?,
                    () = cursor.shutdown.cancelled() => return None,
                }
                if let Some(at) = cursor.last_sent_at {
                    // Changes meanwhile are folded into the one frame after this.
                    tokio::select! {
                        () = tokio::time::sleep_until(at + COALESCE) => {}
                        () = cursor.shutdown.cancelled() => return None,
                    }
                }
            }
            cursor.changes.borrow_and_update();
            let list = sessions_seen_by(&cursor.pending, &cursor.viewer);
            if cursor.last.as_ref() == Some(&list) {
                continue;
            }
            cursor.last = Some(list.clone());
            cursor.last_sent_at = Some(Instant::now());
            return Some((InboxEvent::Changed(list), cursor));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::pending::PendingTable;
    use ask_user_core::AskRequest;
    use ask_user_core::wire::Role;
    use futures_util::StreamExt;

    fn request() -> AskRequest {
        AskRequest::from_json(r#"{"questions": [{"id": "q", "question": "Why?"}]}"#).unwrap()
    }

    fn pending_counts(event: &InboxEvent) -> Vec<(String, u32)> {
        let InboxEvent::Changed(list) = event;
        list.sessions
            .iter()
            .map(|s| (s.id.clone(), s.pending))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn changes_within_the_coalescing_window_arrive_as_one_frame_with_the_latest_list() {
        let pending: Arc<PendingTable> = Arc::new(PendingTable::new());
        let mut stream = Box::pin(inbox_events(
            pending.clone(),
            CancellationToken::new(),
            None,
        ));
        assert_eq!(pending_counts(&stream.next().await.unwrap()), []);
        let first = pending.register("a", request(), None).unwrap();
        assert_eq!(
            pending_counts(&stream.next().await.unwrap()),
            [("a".to_owned(), 1)]
        );
        // Three changes at once: one frame, after the window, with all of them.
        let _second = pending.register("b", request(), None).unwrap();
        pending.cancel("a", first.attachment.id()).unwrap();
        pending.post_message("c", Role::Agent, "hello".into());
        let before = Instant::now();
        let frame = stream.next().await.unwrap();
        assert!(Instant::now() >= before + COALESCE - Duration::from_millis(1));
        let mut sessions = pending_counts(&frame);
        assert_eq!(
            sessions.remove(0),
            ("b".to_owned(), 1),
            "the waiting one first"
        );
        sessions.sort();
        assert_eq!(sessions, [("a".to_owned(), 0), ("c".to_owned(), 0)]);
    }

    #[test]
    fn an_idle_session_leaves_the_list_after_a_day_but_a_waiting_one_stays() {
        use ask_user_core::limits::LISTED_SESSION_IDLE_MS;
        let pending = PendingTable::new();
        pending.post_message("idle", Role::Agent, "hi".into());
        let _waiting = pending.register("waiting", request(), None).unwrap();
        let ids = |now| -> Vec<String> {
            pending
                .sessions(now)
                .sessions
                .into_iter()
                .map(|s| s.id)
                .collect()
        };
        let now = now_ms();
        assert_eq!(ids(now), ["waiting", "idle"]);
        assert_eq!(ids(now + LISTED_SESSION_IDLE_MS + 1_000), ["waiting"]);
    }

    #[test]
    fn the_list_holds_at_most_its_cap_with_the_waiting_sessions_kept() {
        use ask_user_core::limits::MAX_LISTED_SESSIONS;
        let pending = PendingTable::new();
        for n in 0..MAX_LISTED_SESSIONS + 20 {
            pending.post_message(&format!("s{n}"), Role::Agent, "hi".into());
        }
        let _waiting = pending.register("waiting", request(), None).unwrap();
        let list = pending.sessions(now_ms()).sessions;
        assert_eq!(list.len(), MAX_LISTED_SESSIONS);
        assert_eq!((list[0].id.as_str(), list[0].pending), ("waiting", 1));
    }

    #[tokio::test]
    async fn shutdown_ends_the_inbox_stream() {
        let pending: Arc<PendingTable> = Arc::new(PendingTable::new());
        let shutdown = CancellationToken::new();
        let mut stream = Box::pin(inbox_events(pending, shutdown.clone(), None));
        stream.next().await.unwrap();
        shutdown.cancel();
        assert!(stream.next().await.is_none());
    }
}
