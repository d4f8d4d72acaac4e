//! The store's bounds against the real host process (issue 26): the data
//! directory stays under `--max-store-bytes` however many large asks time
//! out, pending questions are never pruned for room (new asks get 507
//! instead), one session's writes are rate-bounded, start-up reads only what
//! the transcripts hold, restored rows are validated, and history pages by a
//! unique cursor. None asserts a duration.

use ask_user_tests::host_process::HostProcess;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// The smallest `--max-store-bytes` the host takes (16 MiB).
const MIN_STORE_BYTES: u64 = 16 * 1024 * 1024;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "ask-user-{name}-{}-{nanos:08x}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn data(&self) -> PathBuf {
        self.0.join("data")
    }

    /// Bytes of every file in the data directory (database, journal, token).
    fn data_bytes(&self) -> u64 {
        std::fs::read_dir(self.data())
            .unwrap()
            .map(|entry| entry.unwrap().metadata().unwrap().len())
            .sum()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Host {
    process: HostProcess,
    client: Client,
}

impl Host {
    fn start(dir: &TempDir, extra: &[&str]) -> Self {
        let data = dir.data();
        let mut args = vec!["--data-dir", data.to_str().unwrap()];
        args.extend_from_slice(extra);
        let process =
            HostProcess::start_in(&dir.0, &args).unwrap_or_else(|e| panic!("the host starts: {e}"));
        let client = Client::builder()
            .no_proxy()
            .timeout(PATIENCE)
            .build()
            .unwrap();
        Host { process, client }
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.process.origin()))
            .bearer_auth(self.process.token().expect("a token"))
            .body(body.to_string())
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.process.origin()))
            .bearer_auth(self.process.token().expect("a token"))
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    /// Asks in `session` with `?timeout_ms=1`: the status and error code.
    async fn ask_briefly(&self, session: &str, body: &Value) -> (StatusCode, String) {
        let response = self
            .post(&format!("/api/sessions/{session}/ask?timeout_ms=1"), body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        (
            status,
            body["error"]["code"].as_str().unwrap_or("").to_owned(),
        )
    }
}

/// A request of about `kib` KiB (eight questions with long details), told
/// apart by `n`.
fn large_request(n: usize, kib: usize) -> Value {
    let detail = format!("{n} {}", "x".repeat(kib * 1024 / 8));
    let questions: Vec<Value> = (0..8)
        .map(|q| json!({"id": format!("q{q}"), "question": format!("Ask {n}?"), "detail": detail}))
        .collect();
    json!({ "questions": questions })
}

#[tokio::test]
async fn a_flood_of_large_asks_that_time_out_keeps_the_data_directory_under_max_store_bytes() {
    let dir = TempDir::new("store-flood");
    let host = Host::start(&dir, &["--max-store-bytes", &MIN_STORE_BYTES.to_string()]);
    let asks = 120; // about 27 MB of requests: the bound's 16 MiB would not hold them
    for n in 0..asks {
        let (status, code) = host.ask_briefly("flood", &large_request(n, 232)).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::REQUEST_TIMEOUT, "ASK_TIMEOUT"),
            "ask {n}: a resolved record is pruned for room, never the ask refused"
        );
    }
    let bytes = dir.data_bytes();
    assert!(
        bytes <= MIN_STORE_BYTES,
        "the data directory holds {bytes} bytes, more than --max-store-bytes {MIN_STORE_BYTES}"
    );
    // The oldest went first: the newest record is there (its ending is
    // written just after the 408), the first is not.
    let newest = json!(format!("Ask {}?", asks - 1));
    let asked = |record: &Value| record["question"]["request"]["questions"][0]["question"].clone();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let records = loop {
        let (status, page) = host.get("/api/history?session=flood&limit=500").await;
        assert_eq!(status, StatusCode::OK);
        let records = page["records"].as_array().unwrap().clone();
        if records.first().map(asked) == Some(newest.clone()) {
            break records;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            records.first().map(asked)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        !records.is_empty() && records.len() < asks,
        "{} records",
        records.len()
    );
    assert_ne!(asked(records.last().unwrap()), json!("Ask 0?"));
}

#[tokio::test]
async fn at_max_store_bytes_pending_questions_are_never_pruned_and_new_asks_get_507_store_full() {
    let dir = TempDir::new("store-full");
    let host = Host::start(&dir, &["--max-store-bytes", &MIN_STORE_BYTES.to_string()]);
    // 70 waiting asks of 232 KB (16 MB) cannot all be kept in 16 MiB.
    let mut waiting = Vec::new();
    for n in 0..70 {
        let ask = host
            .post("/api/sessions/full/ask", &large_request(n, 232))
            .send();
        waiting.push(tokio::spawn(ask));
    }
    // Every ask ends up either pending (kept, waiting) or refused.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let (refused, pending) = loop {
        let refused = waiting.iter().filter(|ask| ask.is_finished()).count();
        let (_, list) = host.get("/api/sessions/full/questions").await;
        let pending = list["pending"].as_array().unwrap().len();
        if refused + pending == waiting.len() {
            break (refused, pending);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{refused} refused, {pending} pending"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        refused > 0 && pending > 0,
        "{refused} refused, {pending} pending"
    );
    for ask in waiting {
        if !ask.is_finished() {
            ask.abort();
            continue;
        }
        let response = ask.await.unwrap().unwrap();
        assert_eq!(response.status(), StatusCode::INSUFFICIENT_STORAGE);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "STORE_FULL", "{body}");
    }
    // Messages make room only by pruning older messages, never a pending question.
    for _ in 0..100 {
        let response = host
            .post(
                "/api/sessions/full/messages",
                &json!({"text": "x".repeat(8_000)}),
            )
            .send()
            .await
            .unwrap();
        let status = response.status();
        assert!(
            [StatusCode::OK, StatusCode::INSUFFICIENT_STORAGE].contains(&status),
            "{status}"
        );
    }
    let (_, list) = host.get("/api/sessions/full/questions").await;
    assert_eq!(list["pending"].as_array().unwrap().len(), pending);
}

#[tokio::test]
async fn one_session_writing_past_its_allowance_per_minute_gets_429_and_others_do_not() {
    let dir = TempDir::new("store-rate");
    let host = Host::start(&dir, &["--max-session-write-bytes", "1048576"]);
    let mut statuses = Vec::new();
    for n in 0..10 {
        statuses.push(host.ask_briefly("busy", &large_request(n, 232)).await);
    }
    assert_eq!(
        statuses[0],
        (StatusCode::REQUEST_TIMEOUT, "ASK_TIMEOUT".to_owned())
    );
    assert!(
        statuses.contains(&(StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_WRITES".to_owned())),
        "10 asks of 232 KB exceed 1 MiB a minute: {statuses:?}"
    );
    // Messages draw on the same allowance: 200 of 8 KB are more than 1 MiB.
    let mut message_statuses = Vec::new();
    for _ in 0..200 {
        let response = host
            .post(
                "/api/sessions/busy/messages",
                &json!({"text": "x".repeat(8_000)}),
            )
            .send()
            .await
            .unwrap();
        message_statuses.push(response.status());
        if response.status() != StatusCode::OK {
            break;
        }
    }
    assert_eq!(
        message_statuses.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS)
    );
    let (status, code) = host.ask_briefly("other", &large_request(0, 232)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::REQUEST_TIMEOUT, "ASK_TIMEOUT"),
        "another session has its own allowance"
    );
}

/// The peak resident memory of `pid` in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Writes `records` resolved questions of about 232 KB to each of `sessions`
/// in the store of `dir` (as a flood would have left them).
async fn craft_store(dir: &TempDir, sessions: &[&str], records: usize) {
    use ask_user_host::store::{SqliteStore, Store, Write};
    std::fs::create_dir_all(dir.data()).unwrap();
    let store = SqliteStore::open(&dir.data()).unwrap();
    let now = ask_user_host::store::now_ms();
    for session in sessions {
        for n in 0..records {
            let id = format!("q_{session}_{n}");
            let question = ask_user_core::wire::QuestionRequested {
                id: id.clone(),
                session: (*session).to_owned(),
                request: ask_user_core::AskRequest::from_value(large_request(n, 232)).unwrap(),
                created_at_ms: now - 1000 + n as u64,
                asked_by: None,
            };
            let _ = store.submit(Write::Asked(question.into()));
            let ended = Write::Ended {
                id,
                outcome: ask_user_core::wire::Outcome::Timeout,
                at_ms: now - 1000 + n as u64,
            };
            let _ = store.submit(ended);
        }
    }
    store.flush().kept().await.unwrap();
}

#[tokio::test]
async fn start_up_reads_back_only_what_the_transcripts_hold_not_every_large_record() {
    let dir = TempDir::new("store-startup");
    // 2 x 120 records of 232 KB: 56 MB; a transcript holds 1 MiB of them.
    craft_store(&dir, &["a", "b"], 120).await;
    let host = Host::start(&dir, &[]);
    let stderr = host.process.stderr();
    let line = stderr
        .lines()
        .find(|l| l.contains("read back the most recent transcripts"))
        .unwrap_or_else(|| panic!("the host says what it read back: {stderr}"));
    let bytes: u64 = line
        .split("bytes=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        bytes <= 2 * 1024 * 1024,
        "read back {bytes} bytes for two transcripts of at most 1 MiB each: {line}"
    );
    // Reading all 240 records back peaks at about 135 MiB (debug build).
    let peak = peak_rss_kib(host.process.pid());
    assert!(
        peak < 48 * 1024,
        "the host peaked at {peak} KiB starting on 56 MB of records it does not need"
    );
    // What is read back is the newest.
    let (_, transcript) = host.get("/api/sessions/a/transcript").await;
    let entries = transcript["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{transcript}");
    let last = &entries.last().unwrap()["request"]["questions"][0]["question"];
    assert_eq!(last, "Ask 119?");
}

#[tokio::test]
async fn history_refuses_since_and_before_beyond_i64_instead_of_wrapping_them() {
    let dir = TempDir::new("store-history-range");
    let host = Host::start(&dir, &[]);
    let (status, _) = host.ask_briefly("h", &large_request(0, 1)).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
    for query in ["since=9223372036854775808", "before=18446744073709551615"] {
        let (status, body) = host.get(&format!("/api/history?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{query}: {body}");
    }
    let (status, _) = host.get("/api/history?since=9223372036854775807").await;
    assert_eq!(status, StatusCode::OK, "i64::MAX itself is an instant");
}
