//! The bridge: an MCP server on stdin/stdout whose tool forwards each call to
//! the host's Streamable HTTP `/mcp?session=S` with rmcp's client.
//!
//! The upstream client introduces itself with the stdio client's own
//! `clientInfo`, forwards the client's progress token (so the host's progress
//! notifications reach it unchanged, and a call without one gets the host's
//! wait budget), and turns the client's `notifications/cancelled` into one
//! upstream, which aborts the question. A call that ends because the client
//! went away (stdin closed) is not cancelled upstream: it drops with the
//! process, so the question detaches. Everything else (the page, reattach,
//! the caps) is the host's.

use super::Target;
use ask_user_core::tool::INSTRUCTIONS;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, ContentBlock,
    GetMeta, Implementation, JsonRpcMessage, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, RequestId, RequestMetaObject, ServerCapabilities, ServerConfig,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
    RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{
    ClientHandler, ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceError, ServiceExt,
};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, oneshot};

/// Where the bridge parks the stdio client's progress token in an upstream
/// request's `_meta`, for [`ForwardProgressToken`] to put in place of the one
/// rmcp's client assigns to every request.
const FORWARDED_PROGRESS_TOKEN: &str = "ask-user.bridge/progressToken";

/// The `_meta` key of a progress token.
const PROGRESS_TOKEN: &str = "progressToken";

/// How long a call whose cancellation token fired waits to learn whether
/// that was the client's `notifications/cancelled`. rmcp cancels the token
/// first and then hands the notification to [`ServerHandler::on_cancelled`]
/// on a task of its own; when the client went away instead, no notification
/// follows (and the process is exiting).
const EXPLICIT_CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The stdio MCP server.
#[derive(Clone)]
pub struct Bridge {
    link: Arc<Link>,
    explicit_cancels: Arc<ExplicitCancels>,
}

/// The calls in flight, each waiting to hear of its explicit cancellation.
///
/// rmcp cancels a request's token both for the client's
/// `notifications/cancelled` and when the input ends (the client went away);
/// only the first may abort the question upstream.
#[derive(Default)]
struct ExplicitCancels {
    calls: std::sync::Mutex<Calls>,
}

/// The map behind [`ExplicitCancels`].
#[derive(Default)]
struct Calls {
    waiting: HashMap<RequestId, oneshot::Sender<Option<String>>>,
    /// Cancellations that came before their call started listening (rmcp runs
    /// the call and the notification on tasks of their own, in either order),
    /// or after it ended; the newest [`EARLY_CANCELS_KEPT`].
    early: VecDeque<(RequestId, Option<String>)>,
}

/// How many cancellations of calls not (or no longer) listening are kept.
const EARLY_CANCELS_KEPT: usize = 64;

impl ExplicitCancels {
    /// Listens for the client cancelling the call `id`; the listening ends
    /// when the returned guard drops.
    fn listen(self: &Arc<Self>, id: RequestId) -> CancelListener {
        let (sender, receiver) = oneshot::channel();
        let mut calls = self.lock();
        match calls.early.iter().position(|(early, _)| *early == id) {
            Some(at) => {
                let (_, reason) = calls.early.remove(at).expect("found at that index");
                let _ = sender.send(reason);
            }
            None => {
                calls.waiting.insert(id.clone(), sender);
            }
        }
        drop(calls);
        CancelListener {
            cancels: self.clone(),
            id,
            receiver,
        }
    }

    /// The client cancelled the call `id`.
    fn cancelled(&self, id: &RequestId, reason: Option<String>) {
        let mut calls = self.lock();
        match calls.waiting.remove(id) {
            Some(sender) => {
                let _ = sender.send(reason);
            }
            None => {
                if calls.early.len() == EARLY_CANCELS_KEPT {
                    calls.early.pop_front();
                }
                calls.early.push_back((id.clone(), reason));
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        // The map stays consistent even if a holder panicked.
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One call's ear for its explicit cancellation.
struct CancelListener {
    cancels: Arc<ExplicitCancels>,
    id: RequestId,
    receiver: oneshot::Receiver<Option<String>>,
}

impl CancelListener {
    /// The reason the client gave, if it cancelled the call within
    /// [`EXPLICIT_CANCEL_GRACE`]; `None` when it went away instead.
    async fn explicit(&mut self) -> Option<Option<String>> {
        tokio::time::timeout(EXPLICIT_CANCEL_GRACE, &mut self.receiver)
            .await
            .ok()?
            .ok()
    }
}

impl Drop for CancelListener {
    fn drop(&mut self) {
        self.cancels.lock().waiting.remove(&self.id);
    }
}

/// The connection to the host, made on first use (when the stdio client's
/// `clientInfo` is known) and made again after the host went away.
struct Link {
    target: Target,
    upstream: Mutex<Option<RunningService<RoleClient, Relay>>>,
}

impl Bridge {
    /// A bridge to the host `target` names.
    pub fn new(target: Target) -> Self {
        Self {
            explicit_cancels: Arc::default(),
            link: Arc::new(Link {
                target,
                upstream: Mutex::new(None),
            }),
        }
    }
}

impl Link {
    /// The upstream client, connecting first (and starting the host if none
    /// answers) when there is none or it closed.
    async fn connect(&self, downstream: &Peer<RoleServer>) -> Result<Peer<RoleClient>, String> {
        let mut slot = self.upstream.lock().await;
        if let Some(running) = slot.as_ref()
            && !running.is_closed()
        {
            return Ok(running.peer().clone());
        }
        let token = self.target.ready_host().await?;
        let client_info = downstream.peer_info().map_or_else(
            || Implementation::new("ask-user-mcp", env!("CARGO_PKG_VERSION")),
            |info| info.client_info.clone(),
        );
        let relay = Relay {
            downstream: downstream.clone(),
            info: ClientConfig::new(ClientCapabilities::default(), client_info),
        };
        // The host is on loopback: never through a proxy (it would see the token).
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let config =
            StreamableHttpClientTransportConfig::with_uri(self.target.mcp_url()).auth_header(token);
        let transport =
            ForwardProgressToken(StreamableHttpClientTransport::with_client(http, config));
        let running = relay.serve(transport).await.map_err(|e| {
            format!(
                "the host at {} refused the MCP session: {e}",
                self.target.host.base()
            )
        })?;
        let peer = running.peer().clone();
        *slot = Some(running);
        Ok(peer)
    }

    /// Forgets a connection that failed, so the next call connects again.
    async fn forget(&self) {
        self.upstream.lock().await.take();
    }
}

/// The upstream client's handler: introduces itself as the stdio client and
/// relays the host's progress notifications to it.
#[derive(Clone)]
struct Relay {
    downstream: Peer<RoleServer>,
    info: ClientConfig,
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // The token is the stdio client's own (see `ForwardProgressToken`).
        if let Err(error) = self.downstream.notify_progress(params).await {
            tracing::debug!(error = %crate::logged::logged(&error), "could not relay a progress notification");
        }
    }
}

/// The upstream transport, with each request's progress token replaced by
/// the stdio client's (parked under [`FORWARDED_PROGRESS_TOKEN`]), or removed
/// when the client sent none: the host then applies its wait budget, as it
/// would to that client calling it directly.
struct ForwardProgressToken<T>(T);

impl<T: Transport<RoleClient>> Transport<RoleClient> for ForwardProgressToken<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &mut item {
            let meta = request.request.get_meta_mut();
            meta.remove(PROGRESS_TOKEN);
            if let Some(theirs) = meta.remove(FORWARDED_PROGRESS_TOKEN) {
                meta.insert(PROGRESS_TOKEN.to_owned(), theirs);
            }
        }
        self.0.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// A tool result the model can read: `Error: <message> (<CODE>)`.
fn error_result(message: &str, code: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(ask_user_core::tool::error_line(
        message, &code,
    ))])
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ask-user", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.explicit_cancels.cancelled(id, notification.reason);
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let upstream = self
            .link
            .connect(&context.peer)
            .await
            .map_err(|line| McpError::internal_error(line, None))?;
        match upstream.list_tools(request).await {
            Ok(tools) => Ok(tools),
            Err(ServiceError::McpError(error)) => Err(error),
            Err(error) => {
                self.link.forget().await;
                Err(McpError::internal_error(
                    format!("lost the host at {}: {error}", self.link.target.host.base()),
                    None,
                ))
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let theirs = context.meta.get_progress_token();
        let mut cancel = self.explicit_cancels.listen(context.id.clone());
        // One more try after a lost connection: the host attaches the same
        // call to the question it kept (or, restarted, asks it anew).
        let mut tries_left = 2;
        loop {
            tries_left -= 1;
            let upstream = match self.link.connect(&context.peer).await {
                Ok(upstream) => upstream,
                Err(line) => return Ok(error_result(&line, "HOST_UNREACHABLE").into()),
            };
            if tries_left == 1 {
                // Beside the call, so a slow browser never holds it up.
                let link = self.link.clone();
                tokio::spawn(
                    async move { link.target.opener.question_arrived(&link.target).await },
                );
            }
            let mut meta = RequestMetaObject::new();
            if let Some(token) = &theirs {
                let token = serde_json::to_value(token).expect("progress tokens serialise");
                meta.insert(FORWARDED_PROGRESS_TOKEN.to_owned(), token);
            }
            let mut params = CallToolRequestParams::new(request.name.clone());
            if let Some(arguments) = request.arguments.clone() {
                params = params.with_arguments(arguments);
            }
            let call = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let options = PeerRequestOptions::no_options().with_meta(meta);
            let mut handle = match upstream.send_request_with_option(call, options).await {
                Ok(handle) => handle,
                Err(error) => {
                    self.link.forget().await;
                    if tries_left > 0 {
                        continue;
                    }
                    return Ok(error_result(&error.to_string(), "HOST_UNREACHABLE").into());
                }
            };
            let response = tokio::select! {
                response = &mut handle.rx => response.unwrap_or(Err(ServiceError::TransportClosed)),
                () = context.ct.cancelled() => {
                    let Some(reason) = cancel.explicit().await else {
                        // The client went away: the upstream call drops with
                        // this process, so the host detaches the question.
                        return Err(McpError::internal_error("the client went away", None));
                    };
                    // An explicit end: the host aborts the question.
                    let reason = reason.unwrap_or_else(|| "the client cancelled the call".to_owned());
                    if let Err(error) = handle.cancel(Some(reason)).await {
                        tracing::warn!(error = %crate::logged::logged(&error), "could not pass the cancellation on to the host");
                    }
                    return Err(McpError::internal_error("cancelled by the client", None));
                }
            };
            match response {
                Ok(ServerResult::CallToolResult(result)) => return Ok(result.into()),
                Ok(other) => {
                    return Ok(error_result(
                        &format!(
                            "the host answered something that is not a tool result: {other:?}"
                        ),
                        "BAD_HOST_RESPONSE",
                    )
                    .into());
                }
                Err(ServiceError::McpError(error)) => return Err(error),
                // The connection to the host was lost.
                Err(error) => {
                    self.link.forget().await;
                    if tries_left > 0 {
                        tracing::info!(error = %crate::logged::logged(&error), "lost the host during a call; asking again");
                        continue;
                    }
                    return Ok(error_result(
                        &format!("lost the host at {}: {error}", self.link.target.host.base()),
                        "HOST_UNREACHABLE",
                    )
                    .into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[tokio::test]
    async fn a_cancellation_reaches_the_call_listening_for_it_with_its_reason() {
        let cancels = Arc::new(ExplicitCancels::default());
        let mut listener = cancels.listen(id(1));
        let mut other = cancels.listen(id(2));
        cancels.cancelled(&id(1), Some("changed my mind".to_owned()));
        assert_eq!(
            listener.explicit().await,
            Some(Some("changed my mind".to_owned()))
        );
        drop(listener);
        // The other call heard nothing, and its listening ends with it.
        tokio::time::pause();
        assert_eq!(other.explicit().await, None);
        drop(other);
        assert!(cancels.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn a_cancellation_that_comes_before_its_call_listens_still_reaches_it() {
        let cancels = Arc::new(ExplicitCancels::default());
        cancels.cancelled(&id(7), None);
        let mut listener = cancels.listen(id(7));
        assert_eq!(listener.explicit().await, Some(None));
        assert!(cancels.lock().early.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_client_went_away_hears_no_cancellation() {
        let cancels = Arc::new(ExplicitCancels::default());
        let mut listener = cancels.listen(id(3));
        cancels.cancelled(&id(4), None);
        assert_eq!(listener.explicit().await, None);
    }

    #[test]
    fn cancellations_of_calls_nobody_listens_for_are_kept_only_so_many() {
        let cancels = Arc::new(ExplicitCancels::default());
        for n in 0..200 {
            cancels.cancelled(&id(n), None);
        }
        let calls = cancels.lock();
        assert_eq!(calls.early.len(), EARLY_CANCELS_KEPT);
        assert_eq!(calls.early.front().map(|(id, _)| id.clone()), Some(id(136)));
    }
}
