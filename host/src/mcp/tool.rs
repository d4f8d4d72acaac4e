//! The `ask_user_question` tool over MCP: its listing, its results, and the
//! server that turns a `tools/call` into an ask.

use super::lifecycle::ExchangeEnded;
use crate::error::ApiError;
use crate::extract::truncate;
use crate::state::{AppState, AskOptions};
use ask_user_core::tool::{TOOL_DESCRIPTION, TOOL_NAME, input_schema, render_error};
use ask_user_core::{AbortController, AnswerBatch, AskRequest, SessionId};
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::pin::pin;
use std::sync::Arc;

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
        // `/mcp` refuses a bad `?session=` before rmcp sees the request.
        let session = parts
            .and_then(|parts| parts.extensions.get::<SessionId>())
            .cloned()
            .unwrap_or_default();
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
            abort: abort.signal(),
            ..AskOptions::default()
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
}
