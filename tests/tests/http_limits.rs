//! The host's limits over HTTP (issue 10): questions per session, bytes of
//! pending requests, transcript message size, open event streams. Each one
//! past its limit is a clear 429 or 400 naming the limit, never a silent drop.

use ask_user_core::limits::{MAX_CUSTOM_CHARS, MAX_PENDING_PER_SESSION};
use ask_user_tests::http_host::{TestHost, assert_error};
use ask_user_tests::wait::{until, within};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn question(text: &str) -> Value {
    json!({"questions": [{"id": "q", "question": text}]})
}

/// A valid request of about `detail` bytes: one question with a long detail.
fn large_request(text: &str, detail: usize) -> Value {
    json!({"questions": [{"id": "q", "question": text, "detail": "d".repeat(detail)}]})
}

async fn wait_for_pending(host: &TestHost, session: &str, count: usize) {
    until(&format!("{count} pending in {session}"), async || {
        host.pending_ids(session).await.len() >= count
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_question_past_what_the_page_holds_in_a_session_gets_429_naming_the_per_session_limit()
{
    let host = TestHost::start().await;
    let asks: Vec<_> = (0..MAX_PENDING_PER_SESSION)
        .map(|n| host.ask("full", "", &question(&format!("Question {n}?"))))
        .collect();
    wait_for_pending(&host, "full", MAX_PENDING_PER_SESSION).await;

    let refused = within(
        "the ask past the limit",
        host.ask("full", "", &question("One more?")),
    )
    .await
    .unwrap();
    assert_error(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "TOO_MANY_PENDING",
        &format!("at most {MAX_PENDING_PER_SESSION} may wait in one session"),
    );
    assert_eq!(
        host.pending_ids("full").await.len(),
        MAX_PENDING_PER_SESSION,
        "nothing was kept for the refused ask"
    );

    // Another session still asks; an answered question makes room again.
    let elsewhere = host.ask("other", "", &question("Elsewhere?"));
    wait_for_pending(&host, "other", 1).await;
    let first = host.pending_ids("full").await[0].clone();
    host.cancel("full", &first).await;
    let again = host.ask("full", "", &question("Now?"));
    wait_for_pending(&host, "full", MAX_PENDING_PER_SESSION).await;
    assert!(!again.is_finished() && !elsewhere.is_finished());
    for ask in asks {
        ask.abort();
    }
}

#[tokio::test]
async fn pending_requests_past_max_pending_bytes_get_429_naming_the_byte_limit() {
    let request = large_request("Big?", 30_000);
    // A pending request costs twice its JSON: parsed, and kept as JSON for lists.
    let one = 2 * request.to_string().len();
    let mut host = TestHost::start_with(|config| config.max_pending_bytes = 3 * one).await;
    let asks: Vec<_> = (0..3)
        .map(|n| host.ask(&format!("s{n}"), "", &request))
        .collect();
    for n in 0..3 {
        wait_for_pending(&host, &format!("s{n}"), 1).await;
    }
    let refused = within("the ask past the budget", host.ask("s9", "", &request))
        .await
        .unwrap();
    assert_error(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "TOO_MANY_PENDING",
        &format!("at most {} bytes of requests", 3 * one),
    );
    assert!(
        refused.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-pending-bytes")
    );
    // Cancelling one frees its bytes for the next.
    let id = host.pending_ids("s0").await[0].clone();
    host.cancel("s0", &id).await;
    let next = host.ask("s9", "", &request);
    wait_for_pending(&host, "s9", 1).await;
    host.shutdown().await;
    for ask in asks.into_iter().chain([next]) {
        let _ = within("the ask to end", ask).await;
    }
}

#[tokio::test]
async fn a_transcript_message_holds_at_most_the_free_text_limit_in_characters() {
    let host = TestHost::start().await;
    let path = "/api/sessions/chat/messages";
    let fits = json!({"text": "€".repeat(MAX_CUSTOM_CHARS)}).to_string();
    assert_eq!(host.post(path, fits).await.0, StatusCode::OK);
    let over = json!({"text": "a".repeat(MAX_CUSTOM_CHARS + 1)}).to_string();
    assert_error(
        &host.post(path, over).await,
        StatusCode::BAD_REQUEST,
        "BAD_REQUEST",
        &format!(
            "text: at most {MAX_CUSTOM_CHARS} characters, got {}",
            MAX_CUSTOM_CHARS + 1
        ),
    );
}

#[tokio::test]
async fn event_streams_past_max_streams_get_429_and_a_closed_one_makes_room() {
    let host = TestHost::start_with(|config| config.max_streams = 2).await;
    let mut first = host.events("a").await;
    let _second = host.events("b").await;
    first.replay().await;
    let refused = host
        .authed(reqwest::Method::GET, "/api/sessions/c/events")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "TOO_MANY_STREAMS", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 2 may be open at once"),
        "{body}"
    );
    drop(first);
    within("room for a stream after one closed", async {
        loop {
            let response = host
                .authed(reqwest::Method::GET, "/api/sessions/c/events")
                .send()
                .await
                .unwrap();
            if response.status() == StatusCode::OK {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}
