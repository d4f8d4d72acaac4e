//! At most `--max-mcp-sessions` MCP sessions at once.
//!
//! [`CappedSessions`] wraps rmcp's in-memory session manager and never opens
//! more than the limit. At the limit, a new session takes the place of the
//! least recently used one that has no exchange in flight (no call waiting
//! for its result, no open stream): clients that exit without closing their
//! session must not lock new clients out until the idle timeout. Only when
//! every session is busy is a new one refused. [`limit_sessions`] decides, before rmcp sees a request
//! that would open a session, whether it may: the decision is a typed value
//! ([`Admission`]) held for the whole `initialize` exchange, so a refusal is
//! the host's own 429 `TOO_MANY_SESSIONS` rather than the 500 rmcp makes of any
//! session-manager error.

use crate::logged::logged_at_most;
use crate::server::error::ApiError;
use crate::server::extract::BODY_LIMIT;
use crate::server::mcp_state::SessionEnds;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

/// rmcp's in-memory session manager that opens at most `limit` sessions.
///
/// The count is rmcp's own table of live sessions, so it is exact: rmcp
/// removes a session from it when the client DELETEs it, when it expires
/// ([`super::MCP_SESSION_IDLE`]) and at shutdown (its worker ends and rmcp
/// calls `close_session`). Creations are serialised, so two creations cannot
/// both take the last slot.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    limit: usize,
    creating: Mutex<()>,
    admitting: Mutex<()>,
    ends: SessionEnds,
    activity: Activity,
}

/// When each open session was last used, and how many of its exchanges are
/// in flight (a request whose response stream is open, a standalone stream).
#[derive(Debug, Clone, Default)]
pub struct Activity {
    sessions: Arc<std::sync::Mutex<HashMap<Arc<str>, Use>>>,
}

#[derive(Debug, Clone, Copy)]
struct Use {
    last: Instant,
    in_flight: usize,
}

impl Activity {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Use>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn opened(&self, id: &SessionId) {
        self.lock().insert(
            id.clone(),
            Use {
                last: Instant::now(),
                in_flight: 0,
            },
        );
    }

    fn closed(&self, id: &SessionId) {
        self.lock().remove(id);
    }

    fn touched(&self, id: &SessionId) {
        if let Some(used) = self.lock().get_mut(id) {
            used.last = Instant::now();
        }
    }

    /// An exchange of `id` begins; it ends when the returned guard is dropped.
    pub fn begin(&self, id: &SessionId) -> InFlight {
        if let Some(used) = self.lock().get_mut(id) {
            used.last = Instant::now();
            used.in_flight += 1;
        }
        InFlight {
            activity: self.clone(),
            id: id.clone(),
        }
    }

    /// The least recently used session with nothing in flight.
    fn least_recently_used_idle(&self) -> Option<SessionId> {
        self.lock()
            .iter()
            .filter(|(_, used)| used.in_flight == 0)
            .min_by_key(|(_, used)| used.last)
            .map(|(id, _)| id.clone())
    }
}

/// One exchange in flight in a session (see [`Activity::begin`]).
#[derive(Debug)]
pub struct InFlight {
    activity: Activity,
    id: SessionId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(used) = self.activity.lock().get_mut(&self.id) {
            used.in_flight = used.in_flight.saturating_sub(1);
            used.last = Instant::now();
        }
    }
}

/// `stream`, counted as an exchange of `id` in flight until it is dropped.
fn counted<S: Stream + Send + Sync + 'static>(
    stream: S,
    in_flight: InFlight,
) -> impl Stream<Item = S::Item> + Send + Sync + 'static {
    futures_util::StreamExt::map(stream, move |item| {
        let _in_flight = &in_flight;
        item
    })
}

/// Room for one new session, held while its `initialize` is served: while it
/// is held no other request may open a session, so the room cannot be taken.
#[derive(Debug)]
pub struct Admission<'a> {
    _admitting: MutexGuard<'a, ()>,
}

impl CappedSessions {
    /// At most `limit` sessions of `inner` at once, each one's end told to `ends`.
    pub fn new(inner: LocalSessionManager, limit: usize, ends: SessionEnds) -> Self {
        Self {
            inner,
            limit,
            creating: Mutex::new(()),
            admitting: Mutex::new(()),
            ends,
            activity: Activity::default(),
        }
    }

    /// When each session was last used and what is in flight in it.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many sessions are open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether a new session would be refused now.
    pub async fn is_full(&self) -> bool {
        self.open().await >= self.limit
    }

    /// Room for one new session: at the limit, the least recently used
    /// session with nothing in flight is closed to make it; when every
    /// session is busy, [`SessionsError::Full`]. Admissions are taken one at
    /// a time; hold the admission until the session is open.
    pub async fn admit(&self) -> Result<Admission<'_>, SessionsError> {
        let admitting = self.admitting.lock().await;
        while self.is_full().await {
            let Some(idle) = self.activity.least_recently_used_idle() else {
                return Err(SessionsError::Full { limit: self.limit });
            };
            tracing::info!(
                limit = self.limit,
                "MCP session cap reached: closing the least recently used idle session"
            );
            self.close_session(&idle).await?;
        }
        Ok(Admission {
            _admitting: admitting,
        })
    }
}

/// Why [`CappedSessions`] could not do what was asked.
#[derive(Debug)]
pub enum SessionsError {
    /// `limit` sessions are already open.
    Full {
        /// The configured limit.
        limit: usize,
    },
    /// rmcp's own session manager failed.
    Local(LocalSessionManagerError),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionsError::Full { limit } => {
                f.write_str(&ApiError::TooManySessions { limit: *limit }.message())
            }
            SessionsError::Local(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for SessionsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionsError::Full { .. } => None,
            SessionsError::Local(error) => Some(error),
        }
    }
}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(error: LocalSessionManagerError) -> Self {
        SessionsError::Local(error)
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Requests through `limit_sessions` were admitted already; this check
        // keeps the limit exact for any other caller too.
        let _creating = self.creating.lock().await;
        if self.is_full().await {
            return Err(SessionsError::Full { limit: self.limit });
        }
        let (id, transport) = self.inner.create_session().await?;
        self.ends.opened(&id);
        self.activity.opened(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.ends.ended(id);
        self.activity.closed(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let in_flight = self.activity.begin(id);
        Ok(counted(
            self.inner.create_stream(id, message).await?,
            in_flight,
        ))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.activity.touched(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let in_flight = self.activity.begin(id);
        Ok(counted(
            self.inner.create_standalone_stream(id).await?,
            in_flight,
        ))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let in_flight = self.activity.begin(id);
        Ok(counted(
            self.inner.resume(id, last_event_id).await?,
            in_flight,
        ))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // A restore re-creates a session too (only with a session store, which
        // the host does not configure): same limit.
        let _creating = self.creating.lock().await;
        if !self.inner.has_session(&id).await? && self.is_full().await {
            return Err(SessionsError::Full { limit: self.limit });
        }
        self.ends.opened(&id);
        self.activity.opened(&id);
        Ok(self.inner.restore_session(id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// Refuses (429 `TOO_MANY_SESSIONS`) an `initialize` that would open an MCP
/// session (a POST without `Mcp-Session-Id`) while `--max-mcp-sessions` are
/// open; requests in open sessions, and session-less requests of the
/// 2026-07-28 protocol (which open none), always pass.
///
/// The body is read first (at most the host's body limit), so a client that
/// sends it slowly never holds the admission that other `initialize`s wait for.
pub(crate) async fn limit_sessions(
    State(sessions): State<Arc<CappedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let may_open_session =
        request.method() == Method::POST && !request.headers().contains_key(HEADER_SESSION_ID);
    if !may_open_session {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(body) => body,
        Err(_) => return ApiError::PayloadTooLarge { limit: BODY_LIMIT }.into_response(),
    };
    let request = Request::from_parts(parts, Body::from(body.clone()));
    if !is_initialize(&body) {
        return next.run(request).await;
    }
    // rmcp's own INFO line with the whole clientInfo is filtered out (see
    // main.rs): client strings are logged here, escaped and truncated.
    if let Some((name, version)) = client_info(&body) {
        tracing::info!(
            client = %logged_at_most(&name, MAX_LOGGED_CHARS),
            version = %logged_at_most(&version, MAX_LOGGED_CHARS),
            "MCP client initializing"
        );
    }
    let admission = match sessions.admit().await {
        Ok(admission) => admission,
        Err(full) => return ApiError::from(full).into_response(),
    };
    let response = next.run(request).await;
    // The session is in rmcp's table once its `initialize` was answered.
    drop(admission);
    response
}

/// The most characters of a client-supplied string that reach the log.
pub const MAX_LOGGED_CHARS: usize = 64;

/// `params.clientInfo.name` and `.version` of an `initialize` body.
fn client_info(body: &[u8]) -> Option<(String, String)> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let info = message.get("params")?.get("clientInfo")?;
    let text = |key: &str| {
        info.get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some((text("name"), text("version")))
}

/// Whether a JSON-RPC body is an `initialize` request (the only one that
/// opens a session). rmcp reads the body again for itself.
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .is_ok_and(|message| message.method.as_deref() == Some("initialize"))
}

impl From<SessionsError> for ApiError {
    fn from(error: SessionsError) -> Self {
        match error {
            SessionsError::Full { limit } => ApiError::TooManySessions { limit },
            SessionsError::Local(error) => ApiError::Interaction(
                ask_user_core::UserInteractionError::failed(format!("MCP session: {error}")),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn capped(limit: usize) -> Arc<CappedSessions> {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(super::super::MCP_SESSION_IDLE);
        Arc::new(CappedSessions::new(local, limit, SessionEnds::default()))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_creations_never_open_more_sessions_than_the_limit() {
        let sessions = capped(3);
        let attempts: Vec<_> = (0..24)
            .map(|_| {
                let sessions = sessions.clone();
                tokio::spawn(async move { sessions.create_session().await.map(|(id, _)| id) })
            })
            .collect();
        let mut opened = Vec::new();
        for attempt in attempts {
            match attempt.await.unwrap() {
                Ok(id) => opened.push(id),
                Err(SessionsError::Full { limit }) => assert_eq!(limit, 3),
                Err(other) => panic!("unexpected error: {other}"),
            }
        }
        assert_eq!(opened.len(), 3);
        assert_eq!(sessions.open().await, 3);

        // rmcp closes a DELETEd session twice (the DELETE, then its ending
        // worker): that frees exactly one slot.
        sessions.close_session(&opened[0]).await.unwrap();
        sessions.close_session(&opened[0]).await.unwrap();
        assert!(sessions.create_session().await.is_ok());
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionsError::Full { limit: 3 })
        ));
    }

    #[test]
    fn the_client_info_of_an_initialize_is_read_for_the_log() {
        let body = br#"{"method":"initialize","params":{"clientInfo":{"name":"n","version":"1"}}}"#;
        assert_eq!(client_info(body), Some(("n".to_owned(), "1".to_owned())));
        assert_eq!(client_info(br#"{"method":"initialize"}"#), None);
    }

    #[test]
    fn only_an_initialize_body_asks_for_a_session() {
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
        ));
        assert!(!is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#
        ));
        assert!(!is_initialize(br#"[{"method":"initialize"}]"#));
        assert!(!is_initialize(b"not json"));
    }

    #[tokio::test]
    async fn closing_a_session_fires_its_end_at_once() {
        let ends = SessionEnds::default();
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(super::super::MCP_SESSION_IDLE);
        let sessions = CappedSessions::new(local, 2, ends.clone());
        let (id, _transport) = sessions.create_session().await.unwrap();
        let end = ends.of(&id).expect("an open session has an end");
        assert!(!end.is_cancelled());
        sessions.close_session(&id).await.unwrap();
        assert!(end.is_cancelled());
        assert!(ends.of(&id).is_none(), "forgotten with its session");
    }

    #[tokio::test]
    async fn an_admission_is_refused_when_every_session_is_busy_and_exclusive_while_held() {
        let sessions = capped(1);
        let admission = sessions.admit().await.unwrap();
        // A second admission waits for the first one.
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), sessions.admit());
        assert!(second.await.is_err(), "admissions are taken one at a time");
        let (id, _transport) = sessions.create_session().await.unwrap();
        drop(admission);
        let call = sessions.activity().begin(&id);
        assert!(matches!(
            sessions.admit().await,
            Err(SessionsError::Full { limit: 1 })
        ));
        assert!(
            sessions.has_session(&id).await.unwrap(),
            "a busy session stays"
        );
        drop(call);
        assert!(sessions.admit().await.is_ok(), "idle again, it makes room");
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_least_recently_used_idle_session_makes_room() {
        let sessions = capped(3);
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(sessions.create_session().await.unwrap().0);
            tokio::time::advance(std::time::Duration::from_secs(1)).await;
        }
        // The oldest is busy, the second is the least recently used idle one.
        let _busy = sessions.activity().begin(&ids[0]);
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        sessions.activity().touched(&ids[2]);
        let admission = sessions.admit().await.unwrap();
        assert!(!sessions.has_session(&ids[1]).await.unwrap(), "closed");
        assert!(sessions.has_session(&ids[0]).await.unwrap());
        assert!(sessions.has_session(&ids[2]).await.unwrap());
        let (fourth, _transport) = sessions.create_session().await.unwrap();
        drop(admission);
        assert_eq!(sessions.open().await, 3);
        assert!(sessions.has_session(&fourth).await.unwrap());
    }
}
