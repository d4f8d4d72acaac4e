//! MCP at `/mcp`: the official Rust SDK's client (rmcp) against the real host on
//! loopback. A tool call becomes an ask that is answered, cancelled or
//! abandoned through the host's HTTP routes and event stream.

use ask_user_core::tool::{TOOL_DESCRIPTION, TOOL_NAME, input_schema, render_error};
use ask_user_core::wire::{Outcome, SessionEvent};
use ask_user_core::{AnswerBatch, UserInteractionError};
use ask_user_tests::http_host::TestHost;
use ask_user_tests::wait::within;
use reqwest::StatusCode;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, serve_client};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

/// Connects the rmcp client to `/mcp{query}` with the host's token and
/// completes the `initialize` handshake.
async fn connect(host: &TestHost, query: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(host.url(&format!("/mcp{query}")))
        .auth_header(host.token());
    let transport = StreamableHttpClientTransport::from_config(config);
    within("the MCP handshake", ().serve(transport))
        .await
        .expect("initialize succeeds")
}

fn request() -> Value {
    json!({"questions": [
        {"id": "db", "question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "why", "question": "Why?"}
    ]})
}

fn call(arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are an object");
    };
    CallToolRequestParams::new(TOOL_NAME).with_arguments(arguments)
}

/// Starts `tools/call ask_user_question` in the background.
fn start_call(
    client: &Client,
    arguments: Value,
) -> tokio::task::JoinHandle<Result<CallToolResult, ServiceError>> {
    let peer = client.peer().clone();
    let params = call(arguments);
    tokio::spawn(async move {
        match peer.call_tool_once(params).await? {
            rmcp::model::CallToolResponse::Complete(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    })
}

fn text_of(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

#[tokio::test]
async fn mcp_lists_ask_user_question_with_cores_description_and_schema() {
    let host = TestHost::start().await;
    let client = connect(&host, "").await;
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("ask-user")
    );
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert_eq!(tools.len(), 1, "{tools:?}");
    let tool = &tools[0];
    assert_eq!(tool.name, TOOL_NAME);
    assert_eq!(tool.description.as_deref(), Some(TOOL_DESCRIPTION));
    assert_eq!(
        Value::Object(JsonObject::clone(&tool.input_schema)),
        input_schema()
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_mcp_call_shows_up_in_the_session_and_returns_the_answer_batch() {
    let host = TestHost::start().await;
    let mut events = host.events("mcp-work").await;
    events.replay().await;
    let client = connect(&host, "?session=mcp-work").await;

    let call = start_call(&client, request());
    let asked = events.requested().await;
    assert_eq!(asked.session, "mcp-work");
    assert_eq!(serde_json::to_value(&asked.request).unwrap(), request());
    assert_eq!(host.pending_ids("mcp-work").await, vec![asked.id.clone()]);
    assert!(
        host.pending_ids("default").await.is_empty(),
        "asked in the named session only"
    );

    // Custom text gets trimmed by core on the way back: the agent sees the normalised batch.
    let answer = json!({"answers": [
        {"id": "db", "selected": ["Postgres (Recommended)"]},
        {"id": "why", "selected": [], "custom": "  it scales  "}
    ]});
    let (status, body) = host.answer("mcp-work", &asked.id, &answer).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let result = within("the tool result", call)
        .await
        .unwrap()
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    let expected = json!({"answers": [
        {"id": "db", "selected": ["Postgres (Recommended)"]},
        {"id": "why", "selected": [], "custom": "it scales"}
    ]});
    let text = text_of(&result);
    assert_eq!(
        text,
        r#"{"answers":[{"id":"db","selected":["Postgres (Recommended)"]},{"id":"why","selected":[],"custom":"it scales"}]}"#,
        "compact JSON in question order"
    );
    let batch: AnswerBatch = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&batch).unwrap(), expected);
    assert_eq!(result.structured_content, Some(expected));
    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id, resolved.outcome),
        (asked.id, Outcome::Answered)
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn without_a_session_query_the_call_asks_in_the_default_session() {
    let host = TestHost::start().await;
    let mut events = host.events("default").await;
    events.replay().await;
    let client = connect(&host, "").await;
    let call = start_call(
        &client,
        json!({"questions": [{"id": "q", "question": "Go?"}]}),
    );
    let asked = events.requested().await;
    assert_eq!(asked.session, "default");
    let (status, _) = host
        .answer(
            "default",
            &asked.id,
            &json!({"answers": [{"id": "q", "custom": "yes"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let result = within("the tool result", call)
        .await
        .unwrap()
        .expect("tools/call");
    assert_eq!(
        text_of(&result),
        r#"{"answers":[{"id":"q","selected":[],"custom":"yes"}]}"#
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_question_the_person_cancels_fails_the_call_with_ask_cancelled() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let client = connect(&host, "?session=s").await;
    let call = start_call(&client, request());
    let asked = events.requested().await;
    let (status, body) = host.cancel("s", &asked.id).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let result = within("the tool result", call)
        .await
        .unwrap()
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.structured_content, None);
    assert_eq!(
        text_of(&result),
        render_error(&UserInteractionError::cancelled())
    );
    assert!(text_of(&result).ends_with("(ASK_CANCELLED)"));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn bad_arguments_fail_the_call_with_cores_message_and_nothing_waits() {
    let host = TestHost::start().await;
    let client = connect(&host, "?session=s").await;
    let cases = [
        (json!({"questions": []}), "(EMPTY_QUESTIONS)"),
        (
            json!({"questions": [{"id": "a", "question": "Q", "recommended": true}]}),
            "(BAD_REQUEST)",
        ),
        (json!({}), "(BAD_REQUEST)"),
    ];
    for (arguments, code) in cases {
        let result = within("the tool result", start_call(&client, arguments.clone()))
            .await
            .unwrap()
            .expect("tools/call");
        assert_eq!(result.is_error, Some(true), "{arguments}");
        let text = text_of(&result);
        assert!(
            text.starts_with("Error: ") && text.ends_with(code),
            "{arguments} → {text}"
        );
        let core = ask_user_core::AskRequest::from_value(arguments).unwrap_err();
        assert_eq!(text, render_error(&core), "core's own message");
    }
    assert!(host.pending_ids("s").await.is_empty());
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn dropping_the_sdk_clients_call_resolves_the_question_as_aborted() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let client = connect(&host, "?session=s").await;
    let call = start_call(&client, request());
    let asked = events.requested().await;

    // Dropping the in-flight call makes the rmcp client send
    // `notifications/cancelled` for it (and give up its stream).
    call.abort();
    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Aborted)
    );
    assert!(host.pending_ids("s").await.is_empty());
    let (status, body) = host
        .answer(
            "s",
            &asked.id,
            &json!({"answers": [{"id": "db", "selected": []}, {"id": "why", "selected": []}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "NOT_PENDING");

    // The session itself is still usable.
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert_eq!(tools.len(), 1);
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_client_that_closes_its_session_leaves_its_question_aborted() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let client = connect(&host, "?session=s").await;
    let _call = start_call(&client, request());
    let asked = events.requested().await;

    // rmcp's client drops its streams, then sends DELETE: the question is
    // detached for that moment, then the DELETE aborts it.
    client.cancel().await.expect("client closes");
    let resolved = loop {
        match events.next().await.session_event() {
            SessionEvent::QuestionDetached(detached) => assert_eq!(detached.id, asked.id),
            SessionEvent::QuestionResolved(resolved) => break resolved,
            other => panic!("expected question/resolved, got {other:?}"),
        }
    };
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Aborted)
    );
    assert!(host.pending_ids("s").await.is_empty());
}

/// The raw Streamable HTTP exchange, to drop a call's connection without any
/// goodbye (no `notifications/cancelled`, no session DELETE).
async fn raw_session(host: &TestHost, query: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"}}});
    let response = host
        .authed(reqwest::Method::POST, &format!("/mcp{query}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize reaches the host");
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = within("the initialize result", response.text())
        .await
        .unwrap();
    assert!(body.contains("\"serverInfo\""), "{body}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = host
        .authed(reqwest::Method::POST, &format!("/mcp{query}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(initialized.to_string())
        .send()
        .await
        .expect("initialized reaches the host");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    session
}

/// Posts one JSON-RPC message in a raw MCP session.
async fn raw_post(
    host: &TestHost,
    client: &reqwest::Client,
    session: &str,
    message: &Value,
) -> reqwest::Response {
    client
        .post(host.url("/mcp?session=s"))
        .bearer_auth(host.token())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(message.to_string())
        .send()
        .await
        .expect("the message reaches the host")
}

/// Starts `tools/call` (JSON-RPC id 2) in a raw session; the response (its SSE
/// stream) stays open while the caller holds it.
async fn raw_call(host: &TestHost, client: &reqwest::Client, session: &str) -> reqwest::Response {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": TOOL_NAME, "arguments": request()}});
    let response = raw_post(host, client, session, &call).await;
    assert_eq!(response.status(), StatusCode::OK);
    response
}

#[tokio::test]
async fn a_cancelled_notification_resolves_the_question_as_aborted() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let session = raw_session(&host, "?session=s").await;
    let client = reqwest::Client::new();
    let call = raw_call(&host, &client, &session).await;
    let asked = events.requested().await;

    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the model moved on"}});
    let response = raw_post(&host, &client, &session, &cancelled).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Aborted)
    );
    assert!(host.pending_ids("s").await.is_empty());
    drop(call);
}

#[tokio::test]
async fn closing_the_mcp_session_resolves_its_question_as_aborted() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let session = raw_session(&host, "?session=s").await;
    let client = reqwest::Client::new();
    let call = raw_call(&host, &client, &session).await;
    let asked = events.requested().await;

    let response = client
        .delete(host.url("/mcp?session=s"))
        .bearer_auth(host.token())
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());

    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Aborted)
    );
    drop(call);
}

#[tokio::test]
async fn with_the_web_provider_off_mcp_lists_no_tool_and_refuses_the_call() {
    let host = TestHost::start_with(|config| config.web = false).await;
    let client = connect(&host, "").await;
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert!(tools.is_empty(), "{tools:?}");
    let refused = within("the tool call", start_call(&client, request()))
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(ServiceError::McpError(ref e)) if e.message.contains("unknown tool")),
        "{refused:?}"
    );
    assert!(host.pending_ids("default").await.is_empty());
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn mcp_needs_the_token_and_a_valid_session_query() {
    let host = TestHost::start().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"}}})
    .to_string();
    let post = |builder: reqwest::RequestBuilder| {
        builder
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.clone())
    };
    let url = host.url("/mcp");

    for builder in [
        host.client.post(&url),
        host.client.post(&url).bearer_auth("wrong-token"),
    ] {
        let response = post(builder).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    }
    let get = host.client.get(&url).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::UNAUTHORIZED);

    let response = post(host.authed(reqwest::Method::POST, "/mcp?session=bad%20id"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "BAD_REQUEST");

    let foreign_origin = post(host.authed(reqwest::Method::POST, "/mcp"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_origin.status(), StatusCode::FORBIDDEN);
    let foreign_host = post(host.authed(reqwest::Method::POST, "/mcp"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_host.status(), StatusCode::FORBIDDEN);

    // The SDK client without the token cannot even initialize.
    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
    let refused = within("the refused handshake", serve_client((), transport)).await;
    assert!(refused.is_err(), "initialize without the token must fail");

    // With the token the same request is served.
    let response = post(host.authed(reqwest::Method::POST, "/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn shutdown_disposes_a_waiting_mcp_call_and_does_not_hang() {
    let mut host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let client = connect(&host, "?session=s").await;
    let call = start_call(&client, request());
    let asked = events.requested().await;

    host.shutdown().await;
    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Disposed)
    );
    // The host lets the result out before it closes the MCP session.
    let result = within("the call to end", call)
        .await
        .unwrap()
        .expect("the result reaches the client");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text_of(&result),
        render_error(&UserInteractionError::provider_disposed())
    );
}

/// Posts a raw `initialize` (no `Mcp-Session-Id`: it asks for a new session).
async fn raw_initialize(host: &TestHost) -> reqwest::Response {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"}}});
    host.authed(reqwest::Method::POST, "/mcp?session=s")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize reaches the host")
}

/// Asserts `response` is the host's 429 `TOO_MANY_SESSIONS` naming `limit`.
async fn assert_too_many_sessions(response: reqwest::Response, limit: usize) {
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        !response.headers().contains_key("mcp-session-id"),
        "a refused initialize opens no session"
    );
    let body: Value = response.json().await.expect("a JSON error body");
    assert_eq!(body["error"]["name"], "UserInteractionError", "{body}");
    assert_eq!(body["error"]["code"], "TOO_MANY_SESSIONS", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("at most {limit}")), "{message}");
}

/// Ends a raw MCP session with DELETE.
async fn delete_session(host: &TestHost, session: &str) {
    let response = host
        .authed(reqwest::Method::DELETE, "/mcp?session=s")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

#[tokio::test]
async fn at_the_mcp_session_cap_a_new_initialize_takes_the_place_of_the_least_recently_used_idle_session()
 {
    let host = TestHost::start_with(|config| config.max_mcp_sessions = 2).await;
    let client = reqwest::Client::new();
    let used = raw_session(&host, "?session=s").await;
    let forgotten = raw_session(&host, "?session=s").await;
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let response = raw_post(&host, &client, &used, &list).await;
    within("tools/list", response.text()).await.unwrap();

    // A client that exited without closing its session does not lock the next out.
    let newer = raw_session(&host, "?session=s").await;
    let gone = raw_post(&host, &client, &forgotten, &list).await;
    assert_eq!(
        gone.status(),
        StatusCode::NOT_FOUND,
        "the idle session was closed"
    );
    for open in [&used, &newer] {
        let response = raw_post(&host, &client, open, &list).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = within("the tools/list result", response.text())
            .await
            .unwrap();
        assert!(body.contains(TOOL_NAME), "{body}");
    }

    // With a call waiting in every session, none is idle: the next is refused.
    let mut events = host.events("s").await;
    events.replay().await;
    let _waiting = [
        raw_call(&host, &client, &used).await,
        raw_call(&host, &client, &newer).await,
    ];
    events.requested().await;
    events.requested().await;
    assert_too_many_sessions(raw_initialize(&host).await, 2).await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(host.url("/mcp")).auth_header(host.token());
    let transport = StreamableHttpClientTransport::from_config(config);
    let refused = within("the refused handshake", ().serve(transport)).await;
    assert!(refused.is_err(), "a third session must be refused");
}

#[tokio::test]
async fn deleting_a_busy_mcp_session_frees_its_slot_for_one_new_initialize() {
    let host = TestHost::start_with(|config| config.max_mcp_sessions = 1).await;
    let client = reqwest::Client::new();
    let mut events = host.events("s").await;
    events.replay().await;
    let first = raw_session(&host, "?session=s").await;
    let call = raw_call(&host, &client, &first).await;
    events.requested().await;
    assert_too_many_sessions(raw_initialize(&host).await, 1).await;

    delete_session(&host, &first).await;
    drop(call);
    assert_eq!(events.resolved().await.outcome, Outcome::Aborted);
    let second = raw_session(&host, "?session=s").await;
    assert_ne!(second, first);
    let call = raw_call(&host, &client, &second).await;
    events.requested().await;
    // The freed slot is taken again: exactly one came free.
    assert_too_many_sessions(raw_initialize(&host).await, 1).await;

    delete_session(&host, &second).await;
    drop(call);
    let sdk = connect(&host, "?session=s").await;
    let tools = within("tools/list", sdk.list_all_tools())
        .await
        .expect("tools/list");
    assert_eq!(tools.len(), 1);
    sdk.cancel().await.expect("client closes");
}
