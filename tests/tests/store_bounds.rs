//! The store's bounds against the real host process (issue 26): the data
//! directory stays under `--max-store-bytes` however many large asks time
//! out, pending questions are never pruned for room (new asks get 507
//! instead), one session's writes are rate-bounded, start-up reads only what
//! the transcripts hold, restored rows are validated, and history pages by a
//! unique cursor. None asserts a duration.

use ask_user_tests::host_process::HostProcess;
use ask_user_tests::wait::{PATIENCE, until};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

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
    let mut records = Vec::new();
    until("the newest record first in the history", async || {
        let (status, page) = host.get("/api/history?session=flood&limit=500").await;
        assert_eq!(status, StatusCode::OK);
        records = page["records"].as_array().unwrap().clone();
        records.first().map(asked) == Some(newest.clone())
    })
    .await;
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
    let (mut refused, mut pending) = (0, 0);
    until("every ask pending or refused", async || {
        refused = waiting.iter().filter(|ask| ask.is_finished()).count();
        let (_, list) = host.get("/api/sessions/full/questions").await;
        pending = list["pending"].as_array().unwrap().len();
        refused + pending == waiting.len()
    })
    .await;
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
    use ask_user_host::server::store::{SqliteStore, Store, StoreLimits, Write};
    std::fs::create_dir_all(dir.data()).unwrap();
    // As fast as it can: no session's allowance refuses a row.
    let limits = StoreLimits {
        session_bytes_per_minute: u64::MAX,
        ..StoreLimits::default()
    };
    let store = SqliteStore::open_with(&dir.data(), limits).unwrap();
    let now = ask_user_host::server::store::now_ms();
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
            let asked = store.submit(Write::Asked(question.into()));
            let ended = Write::Ended {
                id,
                outcome: ask_user_core::wire::Outcome::Timeout,
                at_ms: now - 1000 + n as u64,
            };
            let ended = store.submit(ended);
            assert!(asked.kept().await.unwrap() && ended.kept().await.unwrap());
        }
    }
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

/// A one-question request with two options, told apart by `n`.
fn small_request(n: usize) -> Value {
    json!({"questions": [{"id": "q", "question": format!("Pick {n}?"),
        "options": [{"label": "A"}, {"label": "B"}]}]})
}

/// The JSON of a kept question as the host writes it.
fn question_json(id: &str, session: &str, request: &Value) -> String {
    json!({"id": id, "session": session, "request": request,
        "created_at_ms": ask_user_host::server::store::now_ms()})
    .to_string()
}

/// The store's file in `dir`, opened as another program would.
fn database(dir: &TempDir) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.data().join(ask_user_host::server::store::DATABASE_FILE))
        .unwrap()
}

/// Creates the store of `dir` (empty, as a host leaves it).
fn create_store(dir: &TempDir) {
    std::fs::create_dir_all(dir.data()).unwrap();
    drop(ask_user_host::server::store::SqliteStore::open(&dir.data()).unwrap());
}

/// Puts a question in the store's file as it is, bypassing every check:
/// pending, or resolved with `outcome` (and `answer`) and `delivery`.
fn craft_row(
    conn: &rusqlite::Connection,
    (id, session): (&str, &str),
    question: &str,
    resolved: Option<(&str, Option<&Value>, i64)>,
) {
    let now = ask_user_host::server::store::now_ms() as i64;
    let (outcome, answer, delivery) = match resolved {
        Some((outcome, answer, delivery)) => {
            (Some(outcome), answer.map(Value::to_string), delivery)
        }
        None => (None, None, 0),
    };
    conn.execute(
        "INSERT INTO questions (id, session, question, created_ms, outcome, answer, resolved_ms, \
         delivery) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            id,
            session,
            question,
            now,
            outcome,
            answer,
            outcome.map(|_| now),
            delivery
        ],
    )
    .unwrap();
}

/// The pending ids of `session`, oldest first.
async fn pending_ids(host: &Host, session: &str) -> Vec<String> {
    let (status, list) = host
        .get(&format!("/api/sessions/{session}/questions"))
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    list["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn kept_rows_a_live_ask_could_not_have_left_are_refused_logged_escaped_and_ended_not_restored()
 {
    let dir = TempDir::new("store-restore-rules");
    create_store(&dir);
    let conn = database(&dir);
    let good = question_json("q_good", "good", &small_request(0));
    craft_row(&conn, ("q_good", "good"), &good, None);
    let escaping = question_json("q_dotdot", "../../etc", &small_request(1));
    craft_row(&conn, ("q_dotdot", "../../etc"), &escaping, None);
    let options: Vec<Value> = (0..5_000)
        .map(|n| json!({"label": format!("o{n}")}))
        .collect();
    let huge = json!({"questions": [{"id": "q", "question": "Pick?", "options": options}]});
    let huge_json = question_json("q_options", "options", &huge);
    craft_row(&conn, ("q_options", "options"), &huge_json, None);
    // Resolved too: its transcript must not bring it back either.
    let huge_done = question_json("q_options_done", "options", &huge);
    craft_row(
        &conn,
        ("q_options_done", "options"),
        &huge_done,
        Some(("timeout", None, 1)),
    );
    let forging = "x\n2026-12-06T10:00:00Z WARN token=leaked \u{1b}]52;c;aGk=\u{7}";
    let forged = question_json("q_forged", forging, &small_request(2));
    craft_row(&conn, ("q_forged", forging), &forged, None);
    // A held answer to a question whose session is not a session id.
    let held = question_json("q_held_bad", "../held", &small_request(3));
    let answer = json!({"answers": [{"id": "q", "selected": ["A"]}]});
    craft_row(
        &conn,
        ("q_held_bad", "../held"),
        &held,
        Some(("answered", Some(&answer), 0)),
    );
    drop(conn);

    let mut host = Host::start(&dir, &[]);
    assert_eq!(pending_ids(&host, "good").await, ["q_good"]);
    assert!(pending_ids(&host, "options").await.is_empty());
    let (_, transcript) = host.get("/api/sessions/options/transcript").await;
    assert_eq!(transcript["entries"], json!([]), "{transcript}");
    let (_, sessions) = host.get("/api/sessions").await;
    let listed: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["good"], "{sessions}");

    let stderr = host.process.stderr();
    let refusals: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("refused at start"))
        .collect();
    for id in ["q_dotdot", "q_options", "q_forged", "q_held_bad"] {
        assert!(
            refusals.iter().any(|l| l.contains(id)),
            "{id} is named in the log: {stderr}"
        );
    }
    assert!(
        refusals
            .iter()
            .any(|l| l.contains(r#"session "../../etc" is not a session id"#)),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "no control reaches the log: {stderr:?}"
    );
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("2026-12-06T10:00:00Z")),
        "no line is forged: {stderr}"
    );
    assert!(
        refusals.iter().all(|l| l.chars().count() < 1_000),
        "each refusal is bounded: {refusals:?}"
    );
    host.process.terminate_and_wait();
    drop(host);

    // Ended in the record, so none comes back at the next start.
    let conn = database(&dir);
    let ending = |id: &str| -> (Option<String>, i64) {
        conn.query_row(
            "SELECT outcome, delivery FROM questions WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    };
    for id in ["q_dotdot", "q_options", "q_forged"] {
        assert_eq!(ending(id), (Some("disposed".to_owned()), 1), "{id}");
    }
    assert_eq!(ending("q_held_bad"), (Some("answered".to_owned()), 2));
}

#[tokio::test]
async fn restored_questions_count_against_the_live_caps_held_answers_first_and_the_rest_wait_in_the_store()
 {
    let dir = TempDir::new("store-restore-caps");
    create_store(&dir);
    let conn = database(&dir);
    let answer = json!({"answers": [{"id": "q", "selected": ["B"]}]});
    for n in 0..5 {
        let id = format!("q_p{n}");
        craft_row(
            &conn,
            (&id, "caps"),
            &question_json(&id, "caps", &small_request(n)),
            None,
        );
    }
    // Kept last, restored first: it carries the person's answer.
    craft_row(
        &conn,
        ("q_held", "caps"),
        &question_json("q_held", "caps", &small_request(9)),
        Some(("answered", Some(&answer), 0)),
    );
    drop(conn);

    let mut host = Host::start(&dir, &["--max-pending", "3"]);
    assert_eq!(pending_ids(&host, "caps").await, ["q_p0", "q_p1"]);
    let stderr = host.process.stderr();
    assert!(
        stderr.contains("not restored") && stderr.contains("left=3"),
        "what was left out is logged: {stderr}"
    );
    // The held answer came back: the same ask collects it at once.
    let response = host
        .post("/api/sessions/caps/ask", &small_request(9))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["answers"][0]["selected"], json!(["B"]), "{body}");
    host.process.terminate_and_wait();
    drop(host);

    // The byte cap too: a start that may hold no request restores none and
    // ends none.
    let mut host = Host::start(&dir, &["--max-pending-bytes", "1"]);
    assert!(pending_ids(&host, "caps").await.is_empty());
    let stderr = host.process.stderr();
    assert!(stderr.contains("not restored"), "{stderr}");
    host.process.terminate_and_wait();
    drop(host);

    // What was beyond the caps was not lost: a start with room restores it
    // (the two restored first were disposed at shutdown, as every pending
    // question is).
    let host = Host::start(&dir, &[]);
    assert_eq!(pending_ids(&host, "caps").await, ["q_p2", "q_p3", "q_p4"]);
}

/// Every record of `GET /api/history?<query>` page by page: the ids, each
/// page checked to hold at most `limit`.
async fn history_ids(host: &Host, query: &str, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = host
            .get(&format!("/api/history?{query}&limit={limit}{cursor}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let records = page["records"].as_array().unwrap();
        assert!(records.len() <= limit, "{} records", records.len());
        ids.extend(
            records
                .iter()
                .map(|r| r["question"]["id"].as_str().unwrap().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn history_pages_hold_at_most_limit_records_and_page_through_one_millisecond_by_a_cursor() {
    let dir = TempDir::new("store-history-cursor");
    create_store(&dir);
    let conn = database(&dir);
    // 25 records resolved in one millisecond, one just before, one just after.
    // An hour ago: within --keep-days.
    let at = ask_user_host::server::store::now_ms() as i64 - 3_600_000;
    for n in 0..27 {
        let id = format!("q_{n:02}");
        let question = question_json(&id, "ms", &small_request(n));
        craft_row(&conn, (&id, "ms"), &question, Some(("timeout", None, 1)));
        let resolved = match n {
            0 => at - 1,
            26 => at + 1,
            _ => at,
        };
        conn.execute(
            "UPDATE questions SET resolved_ms = ?1 WHERE id = ?2",
            rusqlite::params![resolved, id],
        )
        .unwrap();
    }
    drop(conn);
    let host = Host::start(&dir, &[]);

    let ids = history_ids(&host, "session=ms", 4).await;
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (27, 27), "{ids:?}");
    assert_eq!(
        (ids.first().unwrap().as_str(), ids.last().unwrap().as_str()),
        ("q_26", "q_00"),
        "newest first"
    );
    // since (inclusive) and before (exclusive) still bound the pages.
    let within = history_ids(&host, &format!("since={at}&before={}", at + 1), 10).await;
    assert_eq!(within.len(), 25, "{within:?}");
    assert!(!within.contains(&"q_00".to_owned()) && !within.contains(&"q_26".to_owned()));

    let (status, body) = host.get("/api/history?cursor=yesterday").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cursor"),
        "{body}"
    );
}

/// Runs `ask-user history --data-dir <dir> <args…>` and reads its first
/// `head` bytes: its peak memory then (it cannot have finished: the rest of
/// its output waits in the pipe), and then all of its output.
fn history_head_then_all(dir: &TempDir, args: &[&str], head: usize) -> (u64, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .arg("history")
        .arg("--data-dir")
        .arg(dir.data())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut output = vec![0; head];
    stdout.read_exact(&mut output).unwrap();
    let peak = peak_rss_kib(child.id());
    stdout.read_to_end(&mut output).unwrap();
    assert!(child.wait().unwrap().success());
    (peak, String::from_utf8(output).unwrap())
}

/// `ask-user history --data-dir <dir> <args…>`'s output.
fn history_cli_output(dir: &TempDir, args: &[&str]) -> String {
    let output = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .arg("history")
        .arg("--data-dir")
        .arg(dir.data())
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn ask_user_history_prints_as_it_reads_so_its_memory_stays_at_a_page_however_long_the_record()
{
    let dir = TempDir::new("store-history-stream");
    // 300 records of 232 KB: 70 MB, many pages.
    let records = 300;
    craft_store(&dir, &["long"], records).await;
    let asked = |record: &Value| record["question"]["request"]["questions"][0]["question"].clone();

    let (peak, json) = history_head_then_all(&dir, &["--format", "json"], 1 << 20);
    // Reading the whole record before printing peaks at about 300 MiB.
    assert!(
        peak < 64 * 1024,
        "ask-user history peaked at {peak} KiB before printing its first MiB"
    );
    let json: Value = serde_json::from_str(&json).expect("exact JSON");
    let json = json.as_array().unwrap();
    assert_eq!(json.len(), records);
    assert_eq!(asked(&json[0]), format!("Ask {}?", records - 1));
    assert_eq!(asked(&json[records - 1]), "Ask 0?");

    // The decision log (no details, so too short to wait in the pipe) reads
    // the same pages, oldest first.
    let md = history_cli_output(&dir, &["--format", "md"]);
    let headings = md.lines().filter(|l| l.starts_with("## ")).count();
    assert_eq!(headings, records, "{}", &md[..2000]);
    let first = md.find("**Ask 0?**").expect("the oldest");
    let last = md
        .find(&format!("**Ask {}?**", records - 1))
        .expect("the newest");
    assert!(first < last, "oldest first");
}

#[tokio::test]
async fn ask_user_history_shows_controls_in_agent_text_in_both_formats_and_json_stays_the_same_value()
 {
    let dir = TempDir::new("store-history-controls");
    create_store(&dir);
    let controls = "\u{1b}]52;c;aGk=\u{7} \u{9b}2J \u{1b}[8m \u{202e}gpj.exe\u{7f}";
    let request = json!({"questions": [{"id": "q", "question": format!("Deploy {controls}?"),
        "options": [{"label": format!("Yes {controls}")}, {"label": "No"}]}]});
    let answer = json!({"answers": [{"id": "q", "selected": [format!("Yes {controls}")],
        "custom": controls}], "note": controls});
    let conn = database(&dir);
    craft_row(
        &conn,
        ("q_controls", "c"),
        &question_json("q_controls", "c", &request),
        Some(("answered", Some(&answer), 1)),
    );
    drop(conn);
    let holds_controls = |text: &str| {
        text.chars().any(|c| {
            ask_user_core::display::is_spoofing(c) || ask_user_core::display::is_terminal_control(c)
        })
    };
    let json = history_cli_output(&dir, &["--format", "json"]);
    assert!(!holds_controls(&json), "{json:?}");
    let records: Value = serde_json::from_str(&json).expect("exact JSON");
    assert_eq!(records[0]["answer"], answer, "the same value");
    assert_eq!(records[0]["question"]["request"], request);
    let md = history_cli_output(&dir, &["--format", "md"]);
    assert!(!holds_controls(&md), "{md:?}");
    assert!(md.contains("⟨U+001B⟩]52;c;aGk=⟨U+0007⟩"), "{md}");
}
