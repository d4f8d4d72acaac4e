//! MCP clients for the tests: the official Rust SDK (rmcp) with a handler
//! that records what the server sends, and a raw Streamable HTTP session that
//! behaves like the TypeScript SDK with its defaults (a 2025-06-18 session, no
//! progress token, no tasks), so a test can cut a call's connection without
//! any goodbye.

use crate::http_host::{EventStream, TestHost};
use crate::wait::within;
use ask_user_core::tool::TOOL_NAME;
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A progress notification as the client received it.
#[derive(Debug, Clone)]
pub struct Heard {
    /// When it arrived.
    pub at: Instant,
    /// Its `progress`.
    pub progress: f64,
    /// Its `message`.
    pub message: Option<String>,
}

/// An rmcp client handler that records progress notifications and may declare
/// the tasks extension.
#[derive(Clone, Default)]
pub struct Recorder {
    /// Declare `io.modelcontextprotocol/tasks`.
    pub tasks: bool,
    /// Every progress notification, in order.
    pub progress: Arc<Mutex<Vec<Heard>>>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("ask-user-tests", "0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(Heard {
            at: Instant::now(),
            progress: params.progress,
            message: params.message,
        });
    }
}

/// A connected rmcp client.
pub type SdkClient = RunningService<RoleClient, Recorder>;

/// Connects `recorder` as an rmcp client to `/mcp{query}` with the host's token.
pub async fn connect_sdk(host: &TestHost, query: &str, recorder: Recorder) -> SdkClient {
    let config = StreamableHttpClientTransportConfig::with_uri(host.url(&format!("/mcp{query}")))
        .auth_header(host.token());
    let transport = StreamableHttpClientTransport::from_config(config);
    within("the MCP handshake", recorder.serve(transport))
        .await
        .expect("initialize succeeds")
}

/// `tools/call ask_user_question` parameters.
pub fn call_params(arguments: &Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments.clone() else {
        panic!("tool arguments are an object");
    };
    CallToolRequestParams::new(TOOL_NAME).with_arguments(arguments)
}

/// A raw Streamable HTTP MCP session, as the TypeScript SDK opens one with its
/// defaults: protocol 2025-06-18, no progress token, no tasks.
pub struct RawSession {
    url: String,
    token: String,
    /// The `Mcp-Session-Id`.
    pub id: String,
}

impl RawSession {
    /// `initialize` + `notifications/initialized` at `/mcp{query}`.
    pub async fn open(host: &TestHost, query: &str) -> Self {
        let mut session = Self {
            url: host.url(&format!("/mcp{query}")),
            token: host.token().to_owned(),
            id: String::new(),
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "typescript-sdk-style", "version": "0"}}});
        let response = session.post(&reqwest::Client::new(), &initialize).await;
        assert_eq!(response.status(), StatusCode::OK);
        session.id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body = within("the initialize result", response.text())
            .await
            .unwrap();
        assert!(body.contains("\"serverInfo\""), "{body}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = session.post(&reqwest::Client::new(), &initialized).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        session
    }

    /// Posts one JSON-RPC message on `client` (a client of its own per call
    /// means dropping the response really closes that call's connection).
    pub async fn post(&self, client: &reqwest::Client, message: &Value) -> reqwest::Response {
        let mut builder = client
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-06-18");
        if !self.id.is_empty() {
            builder = builder.header("mcp-session-id", &self.id);
        }
        within("the MCP POST", builder.body(message.to_string()).send())
            .await
            .expect("the message reaches the host")
    }

    /// Starts `tools/call ask_user_question` with JSON-RPC id `id` on a
    /// connection of its own; the response (an SSE stream) is open while held.
    pub async fn call(&self, id: u64, arguments: &Value) -> reqwest::Response {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": TOOL_NAME, "arguments": arguments}});
        let response = self.post(&reqwest::Client::new(), &call).await;
        assert_eq!(response.status(), StatusCode::OK);
        response
    }

    /// Reads a call's response stream up to its JSON-RPC response and returns
    /// the `result` (a tool result).
    pub async fn result(response: reqwest::Response) -> Value {
        let mut stream = EventStream::new(response);
        loop {
            let frame = within("the call's result", stream.next_frame())
                .await
                .expect("the stream ends only after the result");
            if frame.data.is_empty() {
                continue; // a priming event
            }
            let message: Value = serde_json::from_str(&frame.data).expect("JSON-RPC");
            if message.get("id").is_some() {
                return message
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| panic!("not a result: {message}"));
            }
        }
    }

    /// `DELETE /mcp` of this session.
    pub async fn delete(&self) {
        let response = reqwest::Client::new()
            .delete(&self.url)
            .bearer_auth(&self.token)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }
}
