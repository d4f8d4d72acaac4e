//! The official TypeScript MCP SDK (`@modelcontextprotocol/sdk`, what most
//! JavaScript clients and `@modelcontextprotocol/inspector-cli` are built on)
//! against the real host, in real time: whatever the client's request
//! timeout, the person's answer reaches it. Its timeouts are shortened (the
//! SDK's default is 60 s) and so are the host's budgets, in proportion.

use ask_user_core::wire::{Outcome, SessionEvent};
use ask_user_tests::http_host::{EventStream, TestHost};
use ask_user_tests::node::NodeScript;
use ask_user_tests::wait::PATIENCE;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const SDK: &str = "@modelcontextprotocol/sdk";

fn request() -> Value {
    json!({"questions": [
        {"id": "db", "question": "Which database?",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "why", "question": "Why?"}
    ]})
}

fn answer() -> Value {
    json!({"answers": [{"id": "db", "selected": ["SQLite"]}, {"id": "why", "custom": "small"}]})
}

fn batch() -> Value {
    json!({"answers": [
        {"id": "db", "selected": ["SQLite"]},
        {"id": "why", "selected": [], "custom": "small"}
    ]})
}

fn sdk_client(host: &TestHost, session: &str, scenario: Value) -> NodeScript {
    NodeScript::start(
        "ts_sdk_call.mjs",
        SDK,
        &[
            (
                "ASK_USER_MCP_URL",
                host.url(&format!("/mcp?session={session}")),
            ),
            ("ASK_USER_TOKEN", host.token().to_owned()),
            ("ASK_USER_SCENARIO", scenario.to_string()),
        ],
    )
}

async fn connected(client: &NodeScript) {
    let event = client.next(PATIENCE).await;
    assert_eq!(event["event"], "connected", "{event}");
}

/// Posts a transcript message and expects it as the next frame: nothing else
/// (no second `question/requested`) happened on the stream before it.
async fn nothing_else_happened(host: &TestHost, session: &str, tab: &mut EventStream) {
    let (status, _) = host
        .post(
            &format!("/api/sessions/{session}/messages"),
            json!({"text": "marker"}).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    match tab.next().await.session_event() {
        SessionEvent::MessageCreated(m) => assert_eq!(m.text, "marker"),
        other => panic!("expected only the marker, got {other:?}"),
    }
}

#[tokio::test]
#[ignore = "node test: needs Node.js and the npm packages that `cargo xtask test` installs"]
async fn a_typescript_sdk_call_gets_waiting_before_its_timeout_and_the_next_identical_call_gets_the_answer()
 {
    // The SDK gives up after 4 s (60 s by default); the wait budget is 2 s (45 s).
    let host =
        TestHost::start_with(|config| config.mcp_wait_budget = Some(Duration::from_secs(2))).await;
    let mut tab = host.events("ts").await;
    tab.replay().await;
    let mut client = sdk_client(
        &host,
        "ts",
        json!({"arguments": request(), "timeout_ms": 4000, "max_calls": 3, "retry_on_stdin": true}),
    );
    connected(&client).await;
    let id = tab.requested().await.id;

    let first = client.next(PATIENCE).await;
    assert_eq!(
        first["event"], "result",
        "the SDK did not time out: {first}"
    );
    assert_eq!(first["result"]["isError"], false, "{first}");
    assert_eq!(
        first["result"]["structuredContent"],
        json!({"status": "waiting", "id": id})
    );
    assert_eq!(tab.detached().await, id, "the question stays, detached");

    // The person answers while no call waits; the model calls again.
    assert_eq!(host.answer("ts", &id, &answer()).await.0, StatusCode::OK);
    let resolved = tab.resolved().await;
    assert_eq!((resolved.id, resolved.outcome), (id, Outcome::Answered));
    client.say("call again");
    let second = client.next(PATIENCE).await;
    assert_eq!(second["event"], "result", "{second}");
    assert_eq!(second["call"], 2);
    assert_eq!(second["result"]["isError"], false, "{second}");
    assert_eq!(second["result"]["structuredContent"], batch());
    client.finished(PATIENCE).await;
    // One question throughout: the second call collected the held answer.
    nothing_else_happened(&host, "ts", &mut tab).await;
}

#[tokio::test]
#[ignore = "node test: needs Node.js and the npm packages that `cargo xtask test` installs"]
async fn a_typescript_sdk_call_that_resets_its_timeout_on_progress_waits_as_long_as_the_person_needs()
 {
    // Progress every 500 ms instead of 5 s; the client's timeout three
    // intervals, so a late tick on a busy machine still resets it in time.
    let host = TestHost::start_with(|c| c.progress_interval = Duration::from_millis(500)).await;
    let mut tab = host.events("ts").await;
    tab.replay().await;
    // 1.5 s without a message ends the call, unless progress resets the clock.
    let client = sdk_client(
        &host,
        "ts",
        json!({"arguments": request(), "timeout_ms": 1500, "progress": true, "reset_on_progress": true}),
    );
    connected(&client).await;
    let id = tab.requested().await.id;
    let asked = Instant::now();

    // The person takes more than twice the client's timeout.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let during = client.drain();
    assert!(
        during.iter().all(|e| e["event"] == "progress"),
        "nothing but progress while the person thinks: {during:?}"
    );
    let progress: Vec<f64> = during
        .iter()
        .map(|e| e["progress"].as_f64().expect("a number"))
        .collect();
    assert!(
        progress.len() >= 2,
        "progress reached the SDK during the wait: {progress:?}"
    );
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress increases: {progress:?}"
    );

    assert_eq!(host.answer("ts", &id, &answer()).await.0, StatusCode::OK);
    let result = client.next(PATIENCE).await;
    assert_eq!(result["event"], "result", "{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["structuredContent"], batch());
    assert!(asked.elapsed() > Duration::from_millis(3000));
    client.finished(PATIENCE).await;
}
