//! MCP over Streamable HTTP at `/mcp`, with the official Rust SDK (`rmcp`).
//!
//! One tool, `ask_user_question`, with core's name, description and input
//! schema. A call is an ask in the session named by the `?session=` query of
//! the `/mcp` URL (default `default`), through [`AppState::ask`] and so through
//! core's seam and the web provider: it shows up in the page like any other
//! ask. The result is a text block holding the compact JSON answer batch plus
//! `structuredContent` with the same object; a failure is an `isError` result
//! whose text is core's `Error: <message> (<CODE>)` line.
//!
//! The question is resolved as `aborted` when the client sends
//! `notifications/cancelled` for the call, ends its MCP session, or drops the
//! HTTP connection the call's answer would travel on.
//!
//! The tool is opted in by the host: with `--no-web` `tools/list` is empty.
//! `/mcp` sits behind the same token, `Host` and `Origin` checks as `/api`.
//!
//! At most `--max-mcp-sessions` MCP sessions are open at once
//! ([`CappedSessions`]); past that a new `initialize` gets 429
//! `TOO_MANY_SESSIONS` until a session is closed (DELETE) or expires.

use crate::error::ApiError;
use crate::extract::{BODY_LIMIT, MAX_SESSION_CHARS, truncate, valid_session};
use crate::security;
use crate::state::{AppState, AskOptions};
use ask_user_core::tool::{TOOL_DESCRIPTION, TOOL_NAME, input_schema, render_error};
use ask_user_core::{
    AbortController, AnswerBatch, AskRequest, DEFAULT_SESSION, UserInteractionError,
};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::http::request::Parts;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ContentBlock,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    ServerJsonRpcMessage, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::cell::Cell;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Where MCP is served.
pub const MCP_PATH: &str = "/mcp";

/// How long an MCP session may stay silent before the host forgets it (and
/// aborts a call still waiting in it). Long, because a person may take a while
/// to answer; bounded, so sessions whose clients vanished without closing them
/// do not pile up.
pub const MCP_SESSION_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// How long shutdown lets the calls it resolved deliver their results before
/// it closes the MCP sessions (well inside the host's drain timeout).
pub const RESULT_DRAIN: Duration = Duration::from_secs(2);

/// What the server tells an MCP client about itself.
const INSTRUCTIONS: &str = "ask-user shows your questions to a person in a web page and returns \
their answer. Call ask_user_question only when you cannot continue without a person's decision.";

/// The tool as MCP lists it: core's name, description and input schema.
pub fn tool() -> Tool {
    let serde_json::Value::Object(schema) = input_schema() else {
        unreachable!("core's input schema is a JSON object");
    };
    Tool::new(TOOL_NAME, TOOL_DESCRIPTION, Arc::new(schema))
}

/// The tool result of an ask: the answer batch as compact JSON text plus the
/// same object as `structuredContent`, or an `isError` result with the
/// `Error: <message> (<CODE>)` line.
pub fn call_result(result: &Result<AnswerBatch, ApiError>) -> CallToolResult {
    match result {
        Ok(batch) => {
            let text = serde_json::to_string(batch).expect("answer batches always serialise");
            let value = serde_json::to_value(batch).expect("answer batches always serialise");
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(value);
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error_line(error))]),
    }
}

/// Core's one-line error text; the transport's own refusals (e.g.
/// `TOO_MANY_PENDING`) in the same shape.
pub fn error_line(error: &ApiError) -> String {
    match error.as_interaction() {
        Some(error) => render_error(error),
        None => format!("Error: {} ({})", error.message(), error.code()),
    }
}

/// Fires when the HTTP exchange that carries a tool call's answer ends: the
/// response was sent, or the client hung up before it was.
#[derive(Debug, Clone)]
struct ExchangeEnded(CancellationToken);

/// The `ask_user_question` MCP server: one per MCP session, all sharing the
/// host's state.
#[derive(Debug, Clone)]
pub struct AskUserServer {
    state: AppState,
}

impl AskUserServer {
    /// A server that asks through `state`.
    pub fn new(state: AppState) -> Self {
        Self { state }
    }

    /// Whether the tool is offered: only when the web provider is configured.
    fn offers_tool(&self) -> bool {
        self.state.config().web
    }

    async fn ask(
        &self,
        arguments: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let parts = context.extensions.get::<Parts>();
        let session = parts
            .and_then(|parts| session_query(parts.uri.query()).ok().flatten())
            .unwrap_or_else(|| DEFAULT_SESSION.to_owned());
        let request = match AskRequest::from_value(arguments) {
            Ok(request) => request,
            Err(error) => return call_result(&Err(error.into())),
        };
        let exchange = parts
            .and_then(|parts| parts.extensions.get::<ExchangeEnded>())
            .map(|ended| ended.0.clone())
            .unwrap_or_default();
        let abort = AbortController::new();
        let options = AskOptions {
            timeout: None,
            abort: abort.signal(),
        };
        let mut ask = pin!(self.state.ask(&session, request, options));
        let result = tokio::select! {
            result = &mut ask => result,
            () = context.ct.cancelled() => {
                // `notifications/cancelled`, or the MCP session closed. Firing
                // the signal (rather than dropping the ask) waits for core to
                // resolve the question as `aborted` before answering.
                abort.abort();
                ask.await
            }
            () = exchange.cancelled() => {
                abort.abort();
                ask.await
            }
        };
        call_result(&result)
    }
}

impl ServerHandler for AskUserServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ask-user", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = if self.offers_tool() {
            vec![tool()]
        } else {
            Vec::new()
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (self.offers_tool() && name == TOOL_NAME).then(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME || !self.offers_tool() {
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", truncate(&request.name, 80)),
                None,
            ));
        }
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        Ok(self.ask(arguments, &context).await.into())
    }
}

/// rmcp's in-memory session manager that opens at most `limit` sessions.
///
/// The count is rmcp's own table of live sessions, so it is exact: rmcp
/// removes a session from it when the client DELETEs it, when it expires
/// ([`MCP_SESSION_IDLE`]) and at shutdown (its worker ends and rmcp calls
/// `close_session`). Creations are serialised, so two `initialize`s cannot
/// both take the last slot.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    limit: usize,
    creating: tokio::sync::Mutex<()>,
}

impl CappedSessions {
    /// At most `limit` sessions of `inner` at once.
    pub fn new(inner: LocalSessionManager, limit: usize) -> Self {
        Self {
            inner,
            limit,
            creating: tokio::sync::Mutex::new(()),
        }
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
}

/// Why [`CappedSessions`] could not do what rmcp asked.
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

tokio::task_local! {
    /// Set by [`CappedSessions::create_session`] when it refuses, so the
    /// request's own middleware ([`limit_sessions`]) can answer 429 instead of
    /// the 500 rmcp makes of any session-manager error.
    static REFUSED: Cell<bool>;
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.creating.lock().await;
        if self.is_full().await {
            // Outside a request of `limit_sessions` there is no flag to set.
            let _ = REFUSED.try_with(|refused| refused.set(true));
            return Err(SessionsError::Full { limit: self.limit });
        }
        Ok(self.inner.create_session().await?)
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
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
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
        Ok(self.inner.restore_session(id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// Refuses (429 `TOO_MANY_SESSIONS`) a request that would open an MCP session
/// (a POST without `Mcp-Session-Id`) while `--max-mcp-sessions` are open;
/// requests in open sessions always pass.
async fn limit_sessions(
    State(sessions): State<Arc<CappedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key(HEADER_SESSION_ID);
    if !opens_session {
        return next.run(request).await;
    }
    let refusal = ApiError::TooManySessions {
        limit: sessions.limit(),
    };
    // The usual refusal, before rmcp reads the body.
    if sessions.is_full().await {
        return refusal.into_response();
    }
    // Two `initialize`s may still race for the last slot: the session manager
    // decides exactly, and the loser gets the same 429.
    let (response, refused) = REFUSED
        .scope(Cell::new(false), async move {
            let response = next.run(request).await;
            (response, REFUSED.with(Cell::get))
        })
        .await;
    if refused {
        refusal.into_response()
    } else {
        response
    }
}

/// The `session` of a `/mcp` query: `Ok(None)` when absent, `Err` with the
/// reason when it is not a session id.
fn session_query(query: Option<&str>) -> Result<Option<String>, UserInteractionError> {
    let Some(query) = query else {
        return Ok(None);
    };
    let value = query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == "session")
        .map(|(_, value)| value);
    match value {
        None => Ok(None),
        Some(value) if valid_session(value) => Ok(Some(value.to_owned())),
        Some(value) => Err(UserInteractionError::bad_request(format!(
            "session: {:?} is not a session id; use 1 to {MAX_SESSION_CHARS} of A-Z a-z 0-9 _ -",
            truncate(value, 80)
        ))),
    }
}

/// Refuses (400) a `/mcp` request whose `?session=` is not a session id.
async fn check_session_query(request: Request, next: Next) -> Response {
    match session_query(request.uri().query()) {
        Ok(_) => next.run(request).await,
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// Lets a tool call notice that its client hung up: the token in
/// [`ExchangeEnded`] fires when the response body is dropped (sent in full or
/// abandoned by the client) or the request is dropped before answering.
///
/// POST exchanges (where a call's result travels) are also counted in
/// `posts` until their response is over, so shutdown can let the results of
/// the calls it resolved out before it closes the sessions.
async fn watch_exchange(
    State(posts): State<TaskTracker>,
    mut request: Request,
    next: Next,
) -> Response {
    let ended = CancellationToken::new();
    request
        .extensions_mut()
        .insert(ExchangeEnded(ended.clone()));
    let guard = ended.drop_guard();
    let in_flight = (request.method() == Method::POST).then(|| posts.token());
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _keep = (&guard, &in_flight);
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// At shutdown: waits (at most [`RESULT_DRAIN`]) for the POST exchanges in
/// flight, whose calls shutdown has just resolved, to deliver their results,
/// then ends every MCP session and stream.
async fn close_after_results(
    shutdown: CancellationToken,
    posts: TaskTracker,
    sessions: CancellationToken,
) {
    shutdown.cancelled().await;
    posts.close();
    if tokio::time::timeout(RESULT_DRAIN, posts.wait())
        .await
        .is_err()
    {
        tracing::debug!("MCP exchanges still open at shutdown; closing them");
    }
    sessions.cancel();
}

/// The `/mcp` route with its layers: the token (401), the `?session=` check
/// (400), the session limit (429), then rmcp's Streamable HTTP service. The `Host`/`Origin` checks and
/// the security headers come from the layers [`crate::app`] puts around every
/// route.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(MCP_SESSION_IDLE);
    let mut local = LocalSessionManager::default();
    local.session_config = session_config;
    let sessions = Arc::new(CappedSessions::new(local, state.config().max_mcp_sessions));

    // The host's own layer checks Host (loopback or --allow-host) and Origin
    // before rmcp sees the request, so rmcp's narrower default list is off.
    let mut config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    config.max_request_body_bytes = BODY_LIMIT;
    // Shutdown ends MCP sessions and their streams, so they never hold it
    // up; but first the calls it resolved get to send their `ASK_ABORTED`.
    let posts = TaskTracker::new();
    config.cancellation_token = match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let sessions = CancellationToken::new();
            runtime.spawn(close_after_results(
                state.shutdown_token(),
                posts.clone(),
                sessions.clone(),
            ));
            sessions
        }
        // Built outside a runtime (nothing can be served then anyway).
        Err(_) => state.shutdown_token().child_token(),
    };

    let server_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(AskUserServer::new(server_state.clone())),
        sessions.clone(),
        config,
    );
    Router::new()
        .route_service(MCP_PATH, service)
        .route_layer(from_fn_with_state(sessions, limit_sessions))
        .route_layer(from_fn_with_state(posts, watch_exchange))
        .route_layer(from_fn(check_session_query))
        .route_layer(from_fn_with_state(state.clone(), security::require_token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::HostConfig;
    use axum::http::StatusCode;

    #[test]
    fn session_query_defaults_to_none_and_rejects_bad_ids() {
        assert_eq!(session_query(None), Ok(None));
        assert_eq!(session_query(Some("other=1")), Ok(None));
        assert_eq!(
            session_query(Some("a=1&session=work_2")),
            Ok(Some("work_2".to_owned()))
        );
        assert!(session_query(Some("session=")).is_err());
        assert!(session_query(Some("session=a%2Fb")).is_err());
        assert!(session_query(Some(&format!("session={}", "x".repeat(65)))).is_err());
    }

    #[test]
    fn the_tool_carries_cores_name_description_and_schema() {
        let tool = tool();
        assert_eq!(tool.name, TOOL_NAME);
        assert_eq!(tool.description.as_deref(), Some(TOOL_DESCRIPTION));
        assert_eq!(
            serde_json::Value::Object((*tool.input_schema).clone()),
            input_schema()
        );
    }

    #[test]
    fn an_answer_becomes_text_and_the_same_structured_content() {
        let batch: AnswerBatch =
            serde_json::from_str(r#"{"answers":[{"id":"a","selected":["X"]}]}"#).unwrap();
        let result = call_result(&Ok(batch.clone()));
        assert_eq!(result.is_error, Some(false));
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, r#"{"answers":[{"id":"a","selected":["X"]}]}"#);
        assert_eq!(
            result.structured_content,
            Some(serde_json::to_value(&batch).unwrap())
        );
    }

    #[test]
    fn a_failure_is_an_error_result_with_cores_line() {
        let result = call_result(&Err(UserInteractionError::cancelled().into()));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, None);
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            text,
            "Error: the user cancelled ask_user_question (ASK_CANCELLED)"
        );
        let limit = call_result(&Err(ApiError::TooManyPending { limit: 3 }));
        let text = limit.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("Error: ") && text.ends_with(" (TOO_MANY_PENDING)"),
            "{text}"
        );
    }

    fn capped(limit: usize) -> Arc<CappedSessions> {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(MCP_SESSION_IDLE);
        Arc::new(CappedSessions::new(local, limit))
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

    fn initialize() -> Request {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "unit", "version": "0"}}});
        Request::post(MCP_PATH)
            .header("host", "127.0.0.1")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    }

    // Paused time: the 24 hours pass at once and only when nothing else can run.
    #[tokio::test(start_paused = true)]
    async fn an_expired_session_frees_its_slot() {
        let sessions = capped(1);
        let service = StreamableHttpService::new(
            || Ok(AskUserServer::new(AppState::new(HostConfig::new("t", 1)))),
            sessions.clone(),
            StreamableHttpServerConfig::default().disable_allowed_hosts(),
        );
        let response = service.handle(initialize()).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().contains_key(HEADER_SESSION_ID));
        let body = axum::body::to_bytes(Body::new(response.into_body()), BODY_LIMIT)
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&body).contains("serverInfo"));
        assert!(sessions.is_full().await);
        assert_ne!(
            service.handle(initialize()).await.status(),
            StatusCode::OK,
            "a second session is refused while the first is open"
        );

        tokio::time::sleep(MCP_SESSION_IDLE - Duration::from_secs(1)).await;
        assert_eq!(sessions.open().await, 1, "not idle long enough yet");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(sessions.open().await, 0, "the idle session expired");
        assert_eq!(service.handle(initialize()).await.status(), StatusCode::OK);
    }
}
