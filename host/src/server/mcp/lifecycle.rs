//! How MCP exchanges and sessions live and end: noticing that the HTTP
//! exchange carrying a call's result is over, and, at shutdown, letting the
//! results of the calls shutdown resolved out before closing every session.
//!
//! Building the router starts nothing: [`spawn`] is called by
//! [`crate::serve`], which owns the host's lifecycle.

use crate::server::mcp_state::McpLifecycle;
use crate::server::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use std::task::Poll;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long shutdown lets the calls it resolved deliver their results before
/// it closes the MCP sessions (well inside the host's drain timeout).
pub const RESULT_DRAIN: Duration = Duration::from_secs(2);

/// Fires when the client hung up on the HTTP exchange that carries a tool
/// call's result: the request or its response was dropped before the
/// response was over.
///
/// A response that rmcp ends itself (the call's result was sent; the call was
/// cancelled by `notifications/cancelled`; its session was closed) does not
/// fire it: those ends reach the call as its own cancellation, and must not
/// be mistaken for a dropped connection.
#[derive(Debug, Clone)]
pub(crate) struct ClientHungUp(pub(crate) CancellationToken);

/// Lets a tool call notice that its client hung up ([`ClientHungUp`]).
///
/// POST exchanges (where a call's result travels) are also counted until their
/// response is over, so shutdown can let the results of the calls it resolved
/// out before it closes the sessions.
pub(crate) async fn watch_exchange(
    State(lifecycle): State<McpLifecycle>,
    mut request: Request,
    next: Next,
) -> Response {
    let hung_up = CancellationToken::new();
    request
        .extensions_mut()
        .insert(ClientHungUp(hung_up.clone()));
    // Fires if this future, or the response body, is dropped unfinished.
    let mut unfinished = Some(hung_up.drop_guard());
    let in_flight = (request.method() == Method::POST).then(|| lifecycle.posts.token());
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let mut body = body.into_data_stream();
    let body = futures_util::stream::poll_fn(move |cx| {
        let _in_flight = &in_flight;
        let next = body.poll_next_unpin(cx);
        if let Poll::Ready(None) = next
            && let Some(unfinished) = unfinished.take()
        {
            unfinished.disarm();
        }
        next
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Starts the task that, at shutdown, waits (at most [`RESULT_DRAIN`]) for the
/// POST exchanges in flight, whose calls shutdown has just resolved, to deliver
/// their results, then ends every MCP session and stream.
pub fn spawn(state: &AppState) -> JoinHandle<()> {
    let shutdown = state.shutdown_token();
    let McpLifecycle {
        posts, sessions, ..
    } = state.mcp_lifecycle().clone();
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
