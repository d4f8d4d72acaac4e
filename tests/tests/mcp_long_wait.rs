//! Long human waits over MCP with real clients and real time (small budgets):
//! progress keeps a call alive, a wait budget returns `waiting` and the same
//! call collects the answer, a cut connection only detaches the question,
//! explicit ends still abort, and tasks outlive their connection.

use ask_user_core::tool::TOOL_NAME;
use ask_user_core::wire::{Outcome, SessionEvent};
use ask_user_tests::http_host::{EventStream, TestHost};
use ask_user_tests::mcp::{RawSession, Recorder, call_params, connect_sdk};
use ask_user_tests::wait::{until, within};
use reqwest::StatusCode;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, NumberOrString, ProgressToken,
    RequestMetaObject, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn request() -> Value {
    json!({"questions": [
        {"id": "db", "question": "Which database?",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "why", "question": "Why?"}
    ]})
}

fn answer() -> Value {
    json!({"answers": [
        {"id": "db", "selected": ["SQLite"]},
        {"id": "why", "custom": "small"}
    ]})
}

fn batch() -> Value {
    json!({"answers": [
        {"id": "db", "selected": ["SQLite"]},
        {"id": "why", "selected": [], "custom": "small"}
    ]})
}

/// Posts a transcript message and expects it to be the next frame: proves no
/// other frame (e.g. a second `question/requested`) came before it.
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

fn assert_waiting(result: &Value, id: &str) {
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"],
        json!({"status": "waiting", "id": id})
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("The person has not answered yet."),
        "{text}"
    );
    assert!(text.contains("exactly the same arguments"), "{text}");
}

/// The progress interval the long-wait tests run with: a tenth of the
/// host's 5 s, so a wait of six intervals takes seconds, not half a minute.
const INTERVAL: Duration = Duration::from_millis(500);

// 1.
#[tokio::test]
async fn a_call_with_a_progress_token_hears_progress_at_most_two_intervals_apart_through_a_long_wait()
 {
    // At the host's 5 s: at most 10 s apart (the promise to clients that
    // reset their timeout on progress) through a wait of 30 s.
    let host = TestHost::start_with(|c| c.progress_interval = INTERVAL).await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let recorder = Recorder::default();
    let heard = recorder.progress.clone();
    let client = connect_sdk(&host, "?session=s", recorder).await;

    let mut params = call_params(&request());
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::String("wait-long".into()),
    )));
    let started = Instant::now();
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool_once(params).await });
    let id = tab.requested().await.id;

    tokio::time::sleep(INTERVAL * 6).await;
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let answered = Instant::now();
    let response = within("the result", call)
        .await
        .unwrap()
        .expect("tools/call");
    let CallToolResponse::Complete(result) = response else {
        panic!("a complete result");
    };
    assert_eq!(result.structured_content, Some(batch()));

    let during: Vec<_> = heard.lock().unwrap().clone();
    assert!(
        during.len() >= 3,
        "progress during six intervals: {during:?}"
    );
    let mut last = started;
    let mut last_progress = f64::MIN;
    for note in &during {
        assert!(
            note.at.duration_since(last) <= INTERVAL * 2,
            "a gap over two intervals: {during:?}"
        );
        assert!(
            note.progress > last_progress,
            "progress increases: {during:?}"
        );
        let message = note.message.as_deref().unwrap_or_default();
        assert!(message.contains("waiting for the person"), "{message}");
        last = note.at;
        last_progress = note.progress;
    }
    assert!(answered.duration_since(last) <= INTERVAL * 2);

    // Once the call has its result, progress stops.
    tokio::time::sleep(INTERVAL * 2).await;
    assert_eq!(
        heard.lock().unwrap().len(),
        during.len(),
        "no progress after the result"
    );
    client.cancel().await.expect("client closes");
}

// 2.
#[tokio::test]
async fn without_a_progress_token_a_call_returns_waiting_after_the_budget_and_the_same_call_collects_the_answer()
 {
    let host = TestHost::start_with(|c| c.mcp_wait_budget = Some(Duration::from_secs(2))).await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;

    // The first call waits 2 s, then says the person has not answered yet.
    let first = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    let result = RawSession::result(first).await;
    assert_waiting(&result, &id);
    assert_eq!(tab.detached().await, id);
    assert_eq!(host.pending_ids("s").await, vec![id.clone()], "still open");

    // Calling again with the same arguments attaches to the same question...
    let second = session.call(3, &request()).await;
    assert_eq!(tab.attached().await, id);
    assert_waiting(&RawSession::result(second).await, &id);
    assert_eq!(tab.detached().await, id);

    // ...the person answers in between, and the next call gets it at once.
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (id.as_str(), Outcome::Answered)
    );
    let third = session.call(4, &request()).await;
    let result = RawSession::result(third).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], batch());
    // One question, one id, throughout.
    nothing_else_happened(&host, "s", &mut tab).await;
}

// 3.
#[tokio::test]
async fn a_typescript_sdk_style_call_whose_connection_is_cut_gets_the_answer_when_re_issued() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;

    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    // The connection is cut: no notifications/cancelled, no DELETE.
    drop(call);
    assert_eq!(tab.detached().await, id, "detached, not aborted");

    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    assert_eq!(tab.resolved().await.outcome, Outcome::Answered);

    // The client re-issues the request (a new id, the same arguments).
    let again = session.call(3, &request()).await;
    let result = RawSession::result(again).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], batch());
    nothing_else_happened(&host, "s", &mut tab).await;
}

#[tokio::test]
async fn a_call_re_issued_after_a_cut_while_the_person_still_thinks_attaches_and_waits() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;
    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    drop(call);
    assert_eq!(tab.detached().await, id);

    let again = session.call(3, &request()).await;
    assert_eq!(tab.attached().await, id, "the same card");
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let result = RawSession::result(again).await;
    assert_eq!(result["structuredContent"], batch());
}

// 5.
#[tokio::test]
async fn a_cancelled_notification_still_aborts_at_once_and_so_does_a_session_delete() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;

    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the model moved on"}});
    let response = session.post(&reqwest::Client::new(), &cancelled).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (id.as_str(), Outcome::Aborted)
    );
    drop(call);

    let call = session.call(3, &request()).await;
    let id = tab.requested().await.id;
    session.delete().await;
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (id.as_str(), Outcome::Aborted)
    );
    drop(call);
    assert!(host.pending_ids("s").await.is_empty());
}

/// Polls `tasks/get` until the task leaves `working`.
async fn settled(
    client: &ask_user_tests::mcp::SdkClient,
    task_id: &str,
) -> rmcp::model::DetailedTask {
    let mut task = None;
    until("the task to settle", async || {
        let got = client
            .peer()
            .get_task(GetTaskParams::new(task_id))
            .await
            .expect("tasks/get")
            .task;
        let settled = got.status() != TaskStatus::Working;
        task = Some(got);
        settled
    })
    .await;
    task.expect("looked at least once")
}

// 6.
#[tokio::test]
async fn a_task_is_created_at_once_works_until_the_answer_and_outlives_its_connection() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let first = connect_sdk(
        &host,
        "?session=s",
        Recorder {
            tasks: true,
            ..Recorder::default()
        },
    )
    .await;
    let response = within(
        "the task handle",
        first.peer().call_tool_once(call_params(&request())),
    )
    .await
    .expect("tools/call");
    let CallToolResponse::Task(created) = response else {
        panic!("a client that declared tasks gets a task: {response:?}");
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    let task_id = created.task.task_id.clone();
    let id = tab.requested().await.id;
    let polled = first
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("tasks/get");
    assert_eq!(polled.task.status(), TaskStatus::Working);

    // The client that created it goes away entirely; the task stays.
    first.cancel().await.expect("client closes");
    let second = connect_sdk(
        &host,
        "?session=s",
        Recorder {
            tasks: true,
            ..Recorder::default()
        },
    )
    .await;
    assert_eq!(host.pending_ids("s").await, vec![id.clone()]);
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let task = settled(&second, &task_id).await;
    assert_eq!(task.status(), TaskStatus::Completed);
    let TaskPayload::Completed { result } = task.payload else {
        panic!("a completed task carries its result");
    };
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], batch());
    second.cancel().await.expect("client closes");
}

#[tokio::test]
async fn cancelling_a_task_aborts_its_question() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let client = connect_sdk(
        &host,
        "?session=s",
        Recorder {
            tasks: true,
            ..Recorder::default()
        },
    )
    .await;
    let response = client
        .peer()
        .call_tool_once(call_params(&request()))
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = response else {
        panic!("a task");
    };
    let id = tab.requested().await.id;
    client
        .peer()
        .cancel_task(CancelTaskParams::new(&created.task.task_id))
        .await
        .expect("tasks/cancel");
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (id.as_str(), Outcome::Aborted)
    );
    let task = settled(&client, &created.task.task_id).await;
    assert_eq!(task.status(), TaskStatus::Cancelled);
    assert!(host.pending_ids("s").await.is_empty());
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_client_without_the_tasks_extension_gets_no_task() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let client = connect_sdk(&host, "?session=s", Recorder::default()).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool_once(call_params(&request())).await });
    let id = tab.requested().await.id;
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let response = within("the result", call)
        .await
        .unwrap()
        .expect("tools/call");
    assert!(
        matches!(response, CallToolResponse::Complete(_)),
        "{response:?}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn the_server_advertises_the_tasks_extension_and_the_tool_says_to_call_again() {
    let host = TestHost::start().await;
    let client = connect_sdk(&host, "", Recorder::default()).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert!(
        info.capabilities.supports_tasks(),
        "{:?}",
        info.capabilities
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools[0].name, TOOL_NAME);
    assert!(
        tools[0]
            .description
            .as_deref()
            .unwrap_or_default()
            .contains("call ask_user_question again with exactly the same arguments")
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_call_re_issued_the_instant_its_connection_broke_attaches_to_the_same_question() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;
    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    // A broken stream and a re-issue right after, as 2026-07-28 clients do.
    // (The pause only lets the host read the closed socket first; any
    // explicit end the host still listens for after a hang-up must not delay
    // the detach.)
    drop(call);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let again = session.call(3, &request()).await;
    assert_eq!(tab.detached().await, id);
    assert_eq!(tab.attached().await, id, "no second question");
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    assert_eq!(
        RawSession::result(again).await["structuredContent"],
        batch()
    );
}

#[tokio::test]
async fn with_no_detach_grace_a_cut_call_aborts_its_question_and_no_wait_budget_applies() {
    // A `waiting` result would lose the question when nothing keeps it.
    let host = TestHost::start_with(|c| {
        c.detach_grace = Duration::ZERO;
        c.mcp_wait_budget = Some(Duration::from_secs(1));
    })
    .await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;

    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    // Well past the 1 s budget the call still waits: the budget is off.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let result = RawSession::result(call).await;
    assert_eq!(result["structuredContent"], batch(), "{result}");
    assert_eq!(tab.resolved().await.outcome, Outcome::Answered);

    let call = session.call(3, &request()).await;
    let id = tab.requested().await.id;
    drop(call);
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (id.as_str(), Outcome::Aborted),
        "a cut aborts at once"
    );
}

#[tokio::test]
async fn a_wait_budget_of_zero_lets_a_call_without_progress_wait_for_the_person() {
    let host = TestHost::start_with(|c| c.mcp_wait_budget = None).await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let session = RawSession::open(&host, "?session=s").await;
    let call = session.call(2, &request()).await;
    let id = tab.requested().await.id;
    // Nothing comes back while the person thinks (not even `waiting`):
    // the stream carries the next frame only after the answer.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(host.pending_ids("s").await, vec![id.clone()]);
    assert_eq!(host.answer("s", &id, &answer()).await.0, StatusCode::OK);
    let result = RawSession::result(call).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], batch());
    // The question was never detached: its resolution is the next frame.
    match tab.next().await.session_event() {
        SessionEvent::QuestionResolved(r) => assert_eq!((r.id, r.outcome), (id, Outcome::Answered)),
        other => panic!("expected the answer's resolution, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_whose_question_the_person_cancels_completes_with_cores_error() {
    let host = TestHost::start().await;
    let mut tab = host.events("s").await;
    tab.replay().await;
    let client = connect_sdk(
        &host,
        "?session=s",
        Recorder {
            tasks: true,
            ..Recorder::default()
        },
    )
    .await;
    let response = client
        .peer()
        .call_tool_once(call_params(&request()))
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = response else {
        panic!("a task: {response:?}");
    };
    let id = tab.requested().await.id;
    assert_eq!(host.cancel("s", &id).await.0, StatusCode::OK);
    let task = settled(&client, &created.task.task_id).await;
    let TaskPayload::Completed { result } = task.payload else {
        panic!("the tool's error is the task's result: {:?}", task.payload);
    };
    assert_eq!(result["isError"], true, "{result:?}");
    assert_eq!(
        result["content"][0]["text"],
        "Error: the user cancelled ask_user_question (ASK_CANCELLED)"
    );
    client.cancel().await.expect("client closes");
}
