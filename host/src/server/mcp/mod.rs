//! MCP over Streamable HTTP at `/mcp`, with the official Rust SDK (`rmcp`).
//!
//! One tool, `ask_user_question`, with core's name, description and input
//! schema ([`tool`]). A call is an ask in the session named by the `?session=`
//! query of the `/mcp` URL (default `default`), through [`AppState::ask`] and
//! so through core's seam and the web provider: it shows up in the page like
//! any other ask. The result is a text block holding the compact JSON answer
//! batch plus `structuredContent` with the same object; a failure is an
//! `isError` result whose text is core's `Error: <message> (<CODE>)` line.
//!
//! The question is resolved as `aborted` when the client sends
//! `notifications/cancelled` for the call or ends its MCP session. A call
//! whose HTTP connection drops, or that outlasts the wait budget, only
//! detaches its question; the same call made again attaches to it (see
//! [`tool`] for progress, tasks and the wait budget).
//!
//! The tool is opted in by the host: with `--no-web` `tools/list` is empty.
//! `/mcp` sits behind the same token, `Host` and `Origin` checks as `/api`.
//!
//! At most `--max-mcp-sessions` MCP sessions are open at once
//! ([`CappedSessions`]); past that a new `initialize` gets 429
//! `TOO_MANY_SESSIONS` until a session is closed (DELETE) or expires.
//!
//! - [`tool`]: the tool, its results and the server ([`AskUserServer`]).
//! - [`sessions`]: the session cap.
//! - [`lifecycle`]: exchanges, and closing sessions at shutdown.

pub mod lifecycle;
pub mod sessions;
pub mod tool;

pub use crate::server::mcp_state::{McpLifecycle, SessionEnds};
pub use lifecycle::RESULT_DRAIN;
pub use sessions::{Admission, CappedSessions, SessionsError};
pub use tool::{AskUserServer, call_result, error_line, tool};

use crate::server::error::ApiError;
use crate::server::extract::BODY_LIMIT;
use crate::server::state::AppState;
use ask_user_core::{SessionId, UserInteractionError};
use axum::Router;
use axum::extract::{FromRef, Query, Request};
use axum::http::Uri;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Where MCP is served.
pub const MCP_PATH: &str = "/mcp";

/// How long an MCP session may stay silent before the host forgets it (and
/// aborts a call still waiting in it). Long, because a person may take a while
/// to answer; bounded, so sessions whose clients vanished without closing them
/// do not pile up.
pub const MCP_SESSION_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// The query of a `/mcp` URL.
#[derive(Debug, Deserialize)]
struct McpQuery {
    /// The ask-user session the calls ask in.
    session: Option<String>,
}

/// The session a `/mcp` URL names (`?session=`, percent-decoded once), the
/// default session when it names none, or `BAD_REQUEST` with core's message.
pub fn session_of(uri: &Uri) -> Result<SessionId, UserInteractionError> {
    let Query(query) = Query::<McpQuery>::try_from_uri(uri)
        .map_err(|e| UserInteractionError::bad_request(format!("query: {}", e.body_text())))?;
    match query.session {
        Some(session) => SessionId::parse(&session),
        None => Ok(SessionId::default()),
    }
}

/// Refuses (400) a `/mcp` request whose `?session=` is not a session id, and
/// hands the checked [`SessionId`] to the call in the request's extensions.
async fn check_session_query(mut request: Request, next: Next) -> Response {
    match session_of(request.uri()) {
        Ok(session) => {
            request.extensions_mut().insert(session);
            next.run(request).await
        }
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// The `/mcp` route with its layers: the `?session=` check (400), the
/// session limit (429), then rmcp's Streamable HTTP service. The token (401)
/// is the layer [`crate::app`] puts around it (so MCP names nothing of the
/// middleware, which names MCP's path), the `Host`/`Origin` checks and the
/// security headers the layers it puts around every route.
///
/// Building it starts nothing: [`lifecycle::spawn`] (called by
/// [`crate::serve`]) closes the sessions at shutdown.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(MCP_SESSION_IDLE);
    let mut local = LocalSessionManager::default();
    local.session_config = session_config;
    let lifecycle = McpLifecycle::from_ref(state);
    let sessions = Arc::new(CappedSessions::new(
        local,
        state.config().max_mcp_sessions,
        lifecycle.session_ends.clone(),
    ));

    // The host's own layer checks Host (loopback or --allow-host) and Origin
    // before rmcp sees the request, so rmcp's narrower default list is off.
    let mut config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    config.max_request_body_bytes = BODY_LIMIT;
    config.cancellation_token = lifecycle.sessions.clone();

    let server_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(AskUserServer::new(server_state.clone())),
        sessions.clone(),
        config,
    );
    Router::new()
        .route_service(MCP_PATH, service)
        .route_layer(from_fn_with_state(sessions, sessions::limit_sessions))
        .route_layer(from_fn_with_state(lifecycle, lifecycle::watch_exchange))
        .route_layer(from_fn(check_session_query))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::state::HostConfig;
    use axum::body::Body;
    use axum::http::StatusCode;
    use rmcp::transport::common::http_header::HEADER_SESSION_ID;

    fn session_of(query: &str) -> Result<SessionId, UserInteractionError> {
        super::session_of(&format!("/mcp{query}").parse().unwrap())
    }

    #[test]
    fn the_session_query_defaults_to_default_and_rejects_bad_ids() {
        assert_eq!(session_of(""), Ok(SessionId::default()));
        assert_eq!(session_of("?other=1"), Ok(SessionId::default()));
        assert_eq!(session_of("?a=1&session=work_2").unwrap(), "work_2");
        // Percent-decoded once, then checked by core's rule.
        assert_eq!(session_of("?session=work%2D2").unwrap(), "work-2");
        for bad in [
            "?session=",
            "?session=a%2Fb",
            "?session=a%252Fb",
            "?session=a+b",
        ] {
            let error = session_of(bad).unwrap_err();
            assert!(error.message.starts_with("session: "), "{bad}: {error}");
        }
        let long = format!("?session={}", "x".repeat(65));
        assert!(session_of(&long).is_err());
        let twice = session_of("?session=a&session=b").unwrap_err();
        assert!(twice.message.starts_with("query: "), "{twice}");
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
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(MCP_SESSION_IDLE);
        let sessions = Arc::new(CappedSessions::new(local, 1, Default::default()));
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
