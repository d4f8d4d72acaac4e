//! How MCP exchanges and sessions live and end: noticing that the HTTP
//! exchange carrying a call's result is over, and, at shutdown, letting the
//! results of the calls shutdown resolved out before closing every session.
//!
//! Building the router starts nothing: [`spawn`] is called by
//! [`crate::serve`], which owns the host's lifecycle.

use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long shutdown lets the calls it resolved deliver their results before
/// it closes the MCP sessions (well inside the host's drain timeout).
pub const RESULT_DRAIN: Duration = Duration::from_secs(2);

/// The MCP lifecycle shared by the router (which records exchanges) and
/// [`spawn`] (which closes sessions at shutdown). Creating it starts nothing.
#[derive(Debug, Clone, Default)]
pub struct McpLifecycle {
    /// POST exchanges whose response is not over yet.
    pub(crate) posts: TaskTracker,
    /// Ends every MCP session and stream (rmcp's cancellation token).
    pub(crate) sessions: CancellationToken,
}

/// Fires when the HTTP exchange that carries a tool call's result ends: the
/// response was sent, or the client hung up before it was.
#[derive(Debug, Clone)]
pub(crate) struct ExchangeEnded(pub(crate) CancellationToken);

/// Lets a tool call notice that its client hung up: the token in
/// [`ExchangeEnded`] fires when the response body is dropped (sent in full or
/// abandoned by the client) or the request is dropped before answering.
///
/// POST exchanges (where a call's result travels) are also counted until their
/// response is over, so shutdown can let the results of the calls it resolved
/// out before it closes the sessions.
pub(crate) async fn watch_exchange(
    State(lifecycle): State<McpLifecycle>,
    mut request: Request,
    next: Next,
) -> Response {
    let ended = CancellationToken::new();
    request
        .extensions_mut()
        .insert(ExchangeEnded(ended.clone()));
    let guard = ended.drop_guard();
    let in_flight = (request.method() == Method::POST).then(|| lifecycle.posts.token());
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _keep = (&guard, &in_flight);
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Starts the task that, at shutdown, waits (at most [`RESULT_DRAIN`]) for the
/// POST exchanges in flight, whose calls shutdown has just resolved, to deliver
/// their results, then ends every MCP session and stream.
pub fn spawn(state: &AppState) -> JoinHandle<()> {
    let shutdown = state.shutdown_token();
    let McpLifecycle { posts, sessions } = state.mcp_lifecycle().clone();
    tokio::spawn(async move {
        shutdown.cancelled().await;
        posts.close();
        if tokio::time::timeout(RESULT_DRAIN, posts.wait())
            .await
            .is_err()
        {
            tracing::debug!("MCP exchanges still open at shutdown; closing them");
        }
        sessions.cancel();
    })
}
