//! The `ask_user_question` tool over MCP: its listing, its results, and the
//! server that turns a `tools/call` into an ask.
//!
//! A person may take minutes; MCP clients often give up on a request after
//! 60 s. So a call waits in one of three ways:
//! - **progress**: a call with `_meta.progressToken` gets
//!   `notifications/progress` every [`PROGRESS_INTERVAL`] until its result, so
//!   a client that resets its timeout on progress waits as long as needed;
//! - **task**: a client that declared the tasks extension
//!   (`io.modelcontextprotocol/tasks`, SEP-2663) gets a task at once and polls
//!   it; the task outlives the connection that created it;
//! - **wait budget**: any other call returns after `--mcp-wait-budget` with a
//!   `waiting` result (not an error, not an answer) naming the question; the
//!   question stays open, detached, and the same call made again attaches to
//!   it (or collects the answer given meanwhile).
//!
//! An explicit end aborts the question at once: `notifications/cancelled` for
//! the call, `DELETE /mcp` of its session, a task cancel. A dropped connection
//! only detaches it.

use super::lifecycle::ClientHungUp;
use crate::server::error::ApiError;
use crate::server::state::{AppState, AskOptions};
use ask_user_core::tool::{
    INSTRUCTIONS, TOOL_DESCRIPTION, TOOL_NAME, WAITING_STATUS, input_schema, render_error,
    render_waiting,
};
use ask_user_core::wire::{AskedBy, AskerKind};
use ask_user_core::{AbortController, AnswerBatch, AskRequest, PresentedAs, SessionId};
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskOptions};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};

pub use crate::server::limits::PROGRESS_INTERVAL;

/// How long a call in an MCP session whose client hung up (its question is
/// detached at once) still listens for an explicit end. Clients that close
/// their session drop their streams first and send `DELETE /mcp` a moment
/// later (rmcp's does, within a millisecond); that DELETE must still abort
/// the question, unless a new call attached to it meanwhile.
pub const HANG_UP_LINGER: Duration = Duration::from_secs(1);

/// The most MCP tasks waiting for a person at once; the next task is refused.
pub const MAX_LIVE_TASKS: usize = 256;

/// How long a task may wait for its person, and how long its result stays
/// readable afterwards: as long as an idle MCP session lives.
pub const TASK_TTL: Duration = super::MCP_SESSION_IDLE;

/// How often a task's client is asked to poll it.
pub const TASK_POLL_INTERVAL: Duration = Duration::from_secs(2);

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

/// The result of a call that stopped waiting before the person answered:
/// not an error and not an answer. `structuredContent` is
/// `{"status": "waiting", "id": "<question id>"}`; the text (core's) tells the
/// model to call again with exactly the same arguments.
pub fn waiting_result(id: &str) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(render_waiting(id))]);
    result.structured_content = Some(serde_json::json!({"status": WAITING_STATUS, "id": id}));
    result
}

/// Core's one-line error text; the transport's own refusals (e.g.
/// `TOO_MANY_PENDING`) in the same shape.
pub fn error_line(error: &ApiError) -> String {
    match error.as_interaction() {
        Some(error) => render_error(error),
        None => ask_user_core::tool::error_line(&error.message(), &error.code()),
    }
}

/// The progress message after `waited`.
fn progress_message(questions: usize, waited: Duration) -> String {
    let plural = if questions == 1 { "" } else { "s" };
    format!(
        "waiting for the person to answer {questions} question{plural} ({}s so far)",
        waited.as_secs()
    )
}

/// Why a call stopped waiting without its result.
enum StoppedWaiting {
    /// The wait budget ran out.
    Budget,
    /// The HTTP exchange (or, without an MCP session, the request) ended.
    Disconnected,
}

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

    /// How long a call without a progress token waits before `waiting`; never
    /// with a detach grace of zero, where a call that stopped waiting would
    /// lose its question.
    fn wait_budget(&self) -> Option<Duration> {
        let config = self.state.config();
        config
            .mcp_wait_budget
            .filter(|_| !config.detach_grace.is_zero())
    }

    /// Waits for the person's answer for as long as the client allows.
    async fn wait(
        &self,
        session: SessionId,
        request: AskRequest,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let parts = context.extensions.get::<Parts>();
        // In an MCP session, the cancellation token fires for
        // `notifications/cancelled` or a closed session: an explicit end.
        // Without one (2026-07-28 requests), rmcp fires it when the client
        // disconnects: only a drop.
        let mcp_session = parts
            .and_then(|parts| parts.headers.get(HEADER_SESSION_ID))
            .and_then(|id| id.to_str().ok());
        let in_session = mcp_session.is_some();
        // Fires the moment the client closes the MCP session (`DELETE /mcp`).
        let session_closed = mcp_session
            .and_then(|id| self.state.mcp_lifecycle().session_ends.of(id))
            .unwrap_or_default();
        let hung_up = parts
            .and_then(|parts| parts.extensions.get::<ClientHungUp>())
            .map(|hung_up| hung_up.0.clone())
            .unwrap_or_default();
        let progress = context.meta.get_progress_token();
        let budget = match progress {
            Some(_) => None,
            None => self.wait_budget(),
        };
        let questions = request.questions.len();
        let abort = AbortController::new();
        let presented = PresentedAs::new();
        let options = AskOptions {
            abort: abort.signal(),
            presented: presented.clone(),
            asked_by: asked_by(context),
            ..AskOptions::default()
        };
        let started = Instant::now();
        let interval = self.state.config().progress_interval;
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut sent: u32 = 0;
        let mut out_of_budget = pin!(sleep_for(budget));
        // Boxed so it can be dropped (detaching its question) before returning.
        let mut ask = Box::pin(self.state.ask(&session, request, options));
        let stopped = loop {
            tokio::select! {
                result = &mut ask => return call_result(&result),
                () = context.ct.cancelled(), if in_session => {
                    // Firing the signal (rather than dropping the ask) waits
                    // for core to resolve the question as `aborted`.
                    abort.abort();
                    return call_result(&ask.await);
                }
                () = context.ct.cancelled(), if !in_session => break StoppedWaiting::Disconnected,
                () = session_closed.cancelled() => {
                    abort.abort();
                    return call_result(&ask.await);
                }
                () = hung_up.cancelled() => break StoppedWaiting::Disconnected,
                () = &mut out_of_budget => break StoppedWaiting::Budget,
                _ = ticks.tick(), if progress.is_some() => {
                    let token = progress.clone().expect("guarded by the branch");
                    sent += 1;
                    self.notify_progress(context, token, sent, progress_message(questions, started.elapsed()), interval).await;
                }
            }
        };
        // Dropped without its abort signal: the question is detached at once,
        // so the same call made again right away attaches to it (an answer
        // that reached it this instant is held for that call).
        drop(ask);
        let id = presented.id().unwrap_or_default().to_owned();
        if let StoppedWaiting::Disconnected = stopped {
            tracing::debug!(%session, id, "MCP call disconnected; question detached");
            if in_session {
                // Nobody reads this call's result any more; listen a moment
                // for the explicit end that may follow the dropped stream.
                let explicit_end = async {
                    tokio::select! {
                        () = context.ct.cancelled() => {}
                        () = session_closed.cancelled() => {}
                    }
                };
                let ended = tokio::time::timeout(HANG_UP_LINGER, explicit_end).await;
                if ended.is_ok() && self.state.pending().abort_detached(session.as_str(), &id) {
                    tracing::debug!(%session, id, "explicit end after the hang-up; question aborted");
                }
            }
        }
        waiting_result(&id)
    }

    async fn notify_progress(
        &self,
        context: &RequestContext<RoleServer>,
        token: ProgressToken,
        progress: u32,
        message: String,
        interval: Duration,
    ) {
        let notification =
            ProgressNotificationParam::new(token, f64::from(progress)).with_message(message);
        // Never let a stalled stream hold up the wait for the answer.
        let sent = tokio::time::timeout(interval, context.peer.notify_progress(notification)).await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::debug!("a progress notification could not be sent");
        }
    }

    /// Starts the ask as an MCP task (SEP-2663) and returns the task at once.
    /// The task is not tied to the connection or session that created it;
    /// `tasks/cancel` aborts its question.
    fn start_task(
        &self,
        session: SessionId,
        request: AskRequest,
        asked_by: Option<AskedBy>,
    ) -> CallToolResponse {
        let lifecycle = self.state.mcp_lifecycle();
        let _one_at_a_time = lifecycle
            .task_spawning
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if lifecycle.tasks.running_task_count() >= MAX_LIVE_TASKS {
            let line = ask_user_core::tool::error_line(
                &format!(
                    "too many MCP tasks: at most {MAX_LIVE_TASKS} may wait for a person at \
                     once; answer, cancel or wait for some first"
                ),
                &"TOO_MANY_TASKS",
            );
            return CallToolResult::error(vec![ContentBlock::text(line)]).into();
        }
        let state = self.state.clone();
        let options = TaskOptions::new()
            .with_ttl_ms(TASK_TTL.as_millis() as u64)
            .with_poll_interval_ms(TASK_POLL_INTERVAL.as_millis() as u64)
            .with_status_message("waiting for the person to answer");
        let task = lifecycle.tasks.spawn(options, move |task| {
            Box::pin(async move {
                let abort = AbortController::new();
                let options = AskOptions {
                    abort: abort.signal(),
                    asked_by,
                    ..AskOptions::default()
                };
                let mut ask = pin!(state.ask(&session, request, options));
                tokio::select! {
                    result = &mut ask => Ok(call_result(&result)),
                    () = task.cancelled() => {
                        abort.abort();
                        // Core resolves the question as `aborted` first.
                        let _ = ask.await;
                        Err(TaskExit::Cancelled)
                    }
                }
            })
        });
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}

/// Who calls, from the MCP client's `clientInfo`: the request's own
/// (`_meta`, SEP-2575), else the session's `initialize`. A stateless request
/// without either carries rmcp's placeholder, which names nobody.
fn asked_by(context: &RequestContext<RoleServer>) -> Option<AskedBy> {
    let info = context
        .meta
        .client_info()
        .or_else(|| {
            context
                .peer
                .peer_info()
                .map(|peer| peer.client_info.clone())
        })
        .filter(|info| *info != Implementation::default())?;
    AskedBy::new(AskerKind::Mcp, &info.name, Some(&info.version))
}

/// Sleeps for `budget`, or forever without one.
async fn sleep_for(budget: Option<Duration>) {
    match budget {
        Some(budget) => tokio::time::sleep(budget).await,
        None => std::future::pending().await,
    }
}

impl ServerHandler for AskUserServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.offers_tool() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(capabilities)
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
                format!(
                    "unknown tool: {}",
                    ask_user_core::error::quoted(&request.name)
                ),
                None,
            ));
        }
        // `/mcp` refuses a bad `?session=` before rmcp sees the request.
        let session = context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<SessionId>())
            .cloned()
            .unwrap_or_default();
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let request = match AskRequest::from_value(arguments) {
            Ok(request) => request,
            Err(error) => return Ok(call_result(&Err(error.into())).into()),
        };
        let wants_task = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if wants_task {
            return Ok(self.start_task(session, request, asked_by(&context)));
        }
        Ok(self.wait(session, request, &context).await.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self
            .state
            .mcp_lifecycle()
            .tasks
            .get_task(&request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.state
            .mcp_lifecycle()
            .tasks
            .cancel_task(&request.task_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::UserInteractionError;

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
    fn waiting_is_neither_an_error_nor_an_answer_and_says_to_call_again() {
        let result = waiting_result("q_1");
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(serde_json::json!({"status": "waiting", "id": "q_1"}))
        );
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("The person has not answered yet."),
            "{text}"
        );
        assert!(text.contains("exactly the same arguments"), "{text}");
    }

    #[test]
    fn the_progress_message_says_what_is_awaited_and_for_how_long() {
        assert_eq!(
            progress_message(3, Duration::from_millis(25_400)),
            "waiting for the person to answer 3 questions (25s so far)"
        );
        assert_eq!(
            progress_message(1, Duration::ZERO),
            "waiting for the person to answer 1 question (0s so far)"
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
        let limit = call_result(&Err(ApiError::TooManyPending {
            limit: crate::server::pending::PendingLimit::PerSession(3),
        }));
        let text = limit.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("Error: ") && text.ends_with(" (TOO_MANY_PENDING)"),
            "{text}"
        );
    }
}
