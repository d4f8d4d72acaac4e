//! The durable store against the real host process (issue 14): a SQLite file
//! in a temp data directory, the host killed with SIGKILL and started again;
//! a read-only database file; file modes; a corrupt file at start.

use ask_user_tests::host_process::{HostError, HostProcess};
use ask_user_tests::wait::{PATIENCE, until};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const AGENTS: usize = 64;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "ask-user-{name}-{}-{:08x}",
            std::process::id(),
            rand_u32()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn data(&self) -> PathBuf {
        self.0.join("data")
    }

    fn database(&self) -> PathBuf {
        self.data().join("ask-user.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        #[cfg(unix)]
        let _ = set_mode(&self.database(), 0o600);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_u32() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    nanos ^ std::process::id().rotate_left(16)
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A host on `dir`'s data directory, and a client with its token.
struct Host {
    process: HostProcess,
    client: Client,
    base: String,
    token: String,
}

impl Host {
    fn start(dir: &TempDir) -> Self {
        let data = dir.data();
        let process = HostProcess::start_in(&dir.0, &["--data-dir", data.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("the host starts: {e}"));
        // Every request is bounded: a regression fails the test instead of hanging it.
        let client = Client::builder()
            .no_proxy()
            .timeout(PATIENCE)
            .build()
            .unwrap();
        Host {
            base: process.origin().to_owned(),
            token: process.token().expect("a token").to_owned(),
            process,
            client,
        }
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .body(body.to_string())
    }

    async fn json(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.unwrap()
    }

    async fn pending(&self, session: &str) -> Vec<String> {
        let list = self
            .json(&format!("/api/sessions/{session}/questions"))
            .await;
        list["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Waits until `session` has exactly one pending question; its id.
    async fn the_one_pending(&self, session: &str) -> String {
        until("the question is pending", async || {
            self.pending(session).await.len() == 1
        })
        .await;
        self.pending(session).await.pop().unwrap()
    }

    async fn answer(&self, session: &str, id: &str, text: &str) -> (StatusCode, Value) {
        let answer = json!({"answers": [{"id": "q", "custom": text}]});
        let response = self
            .post(
                &format!("/api/sessions/{session}/questions/{id}/answer"),
                &answer,
            )
            .send()
            .await
            .unwrap();
        (
            response.status(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    /// `GET /api/health` without the token.
    async fn health(&self) -> Value {
        self.client
            .get(format!("{}/api/health", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `GET /api/health` with the token.
    async fn health_with_token(&self) -> Value {
        self.client
            .get(format!("{}/api/health", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

fn request(text: &str) -> Value {
    json!({"questions": [{"id": "q", "question": text}]})
}

/// The custom text of an answer batch the agent received.
fn custom(batch: &Value) -> String {
    batch["answers"][0]["custom"]
        .as_str()
        .unwrap_or_else(|| panic!("a free-text answer: {batch}"))
        .to_owned()
}

/// The page: answers every pending question of `sessions` with a text made
/// from its id and `tag`, and keeps the texts acknowledged with 200, until
/// the host goes away or `stop` is set.
async fn page(
    host: Arc<Host>,
    sessions: Vec<String>,
    tag: &'static str,
    acknowledged: Arc<Mutex<Vec<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::Ordering;
    while !stop.load(Ordering::Relaxed) {
        for session in &sessions {
            let Ok(response) = host
                .client
                .get(format!("{}/api/sessions/{session}/questions", host.base))
                .bearer_auth(&host.token)
                .send()
                .await
            else {
                return;
            };
            let Ok(list) = response.json::<Value>().await else {
                return;
            };
            for question in list["pending"].as_array().into_iter().flatten() {
                let id = question["id"].as_str().unwrap();
                let text = format!("{tag}-{id}");
                let answer = json!({"answers": [{"id": "q", "custom": text}]});
                let sent = host
                    .post(
                        &format!("/api/sessions/{session}/questions/{id}/answer"),
                        &answer,
                    )
                    .send()
                    .await;
                match sent {
                    Ok(response) if response.status() == StatusCode::OK => {
                        acknowledged.lock().unwrap().push(text);
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// An agent asking round after round until an ask fails (the host died);
/// returns the round it was asking then, and the answers it received.
async fn agent(host: Arc<Host>, n: usize) -> (usize, Vec<String>) {
    let session = format!("agent-{n:02}");
    let mut received = Vec::new();
    for round in 0.. {
        let ask = request(&format!("Agent {n}, round {round}: go on?"));
        let sent = host
            .post(&format!("/api/sessions/{session}/ask"), &ask)
            .send()
            .await;
        let Ok(response) = sent else {
            return (round, received);
        };
        if response.status() != StatusCode::OK {
            return (round, received);
        }
        match response.json::<Value>().await {
            Ok(batch) => received.push(custom(&batch)),
            // The body was cut: this round's answer did not arrive.
            Err(_) => return (round, received),
        }
    }
    unreachable!()
}

#[tokio::test]
async fn a_host_killed_during_64_agents_and_a_page_answering_delivers_every_acknowledged_answer_once_after_restart()
 {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = TempDir::new("store-kill");
    let host = Arc::new(Host::start(&dir));
    // The tasks share the host, so it is killed through its pid.
    let pid = host.process.pid();
    let sessions: Vec<String> = (0..AGENTS).map(|n| format!("agent-{n:02}")).collect();
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let pages: Vec<_> = sessions
        .chunks(16)
        .map(|chunk| {
            tokio::spawn(page(
                host.clone(),
                chunk.to_vec(),
                "before",
                acknowledged.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let agents: Vec<_> = (0..AGENTS)
        .map(|n| tokio::spawn(agent(host.clone(), n)))
        .collect();
    // Killed mid-stream, once plenty has been answered.
    until("300 acknowledged answers", async || {
        acknowledged.lock().unwrap().len() >= 300
    })
    .await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut in_flight = BTreeMap::new();
    let mut received_before = Vec::new();
    for (n, agent) in agents.into_iter().enumerate() {
        let (round, received) = tokio::time::timeout(PATIENCE, agent)
            .await
            .unwrap()
            .unwrap();
        in_flight.insert(n, round);
        received_before.extend(received);
    }
    stop.store(true, Ordering::Relaxed);
    for page in pages {
        tokio::time::timeout(PATIENCE, page).await.unwrap().unwrap();
    }
    let acknowledged_before: Vec<String> = acknowledged.lock().unwrap().drain(..).collect();

    // Started again on the same file: every agent asks its interrupted round again.
    let host = Arc::new(Host::start(&dir));
    let stop = Arc::new(AtomicBool::new(false));
    let pages: Vec<_> = sessions
        .chunks(16)
        .map(|chunk| {
            tokio::spawn(page(
                host.clone(),
                chunk.to_vec(),
                "after",
                acknowledged.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let again: Vec<_> = in_flight
        .iter()
        .map(|(&n, &round)| {
            let host = host.clone();
            tokio::spawn(async move {
                let session = format!("agent-{n:02}");
                let ask = request(&format!("Agent {n}, round {round}: go on?"));
                let response = host
                    .post(&format!("/api/sessions/{session}/ask"), &ask)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::OK, "agent {n} asks again");
                custom(&response.json().await.unwrap())
            })
        })
        .collect();
    let mut received_after = Vec::new();
    for ask in again {
        received_after.push(tokio::time::timeout(PATIENCE, ask).await.unwrap().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for page in pages {
        tokio::time::timeout(PATIENCE, page).await.unwrap().unwrap();
    }

    let mut seen = BTreeSet::new();
    for text in received_before.iter().chain(&received_after) {
        assert!(seen.insert(text.clone()), "{text} was delivered twice");
    }
    let lost: Vec<&String> = acknowledged_before
        .iter()
        .filter(|text| !seen.contains(*text))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged but never delivered: {lost:?}"
    );
    let held = received_after
        .iter()
        .filter(|text| text.starts_with("before-"))
        .count();
    eprintln!(
        "acknowledged before the kill: {}; delivered before: {}; after the restart: {} \
         ({held} of them answered before the kill)",
        acknowledged_before.len(),
        received_before.len(),
        received_after.len()
    );
    drop(host);
}

#[tokio::test]
async fn after_a_kill_a_detached_question_comes_back_detached_and_a_held_answer_is_still_held() {
    let dir = TempDir::new("store-held");
    let mut host = Host::start(&dir);
    // Two agents hang up: one question stays detached, the other is answered
    // while its agent is away (held).
    for text in ["Detached?", "Held?"] {
        let ask = tokio::spawn(host.post("/api/sessions/s/ask", &request(text)).send());
        let want = if text == "Detached?" { 1 } else { 2 };
        until("the question is pending", async || {
            host.pending("s").await.len() == want
        })
        .await;
        ask.abort();
    }
    let ids = host.pending("s").await;
    let held_id = ids[1].clone();
    let (status, _) = host.answer("s", &held_id, "kept for you").await;
    assert_eq!(status, StatusCode::OK);
    host.process.kill();

    let host = Host::start(&dir);
    assert_eq!(
        host.pending("s").await,
        [ids[0].clone()],
        "the detached question is back, the answered one is not"
    );
    let held = host
        .post("/api/sessions/s/ask", &request("Held?"))
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::OK);
    assert_eq!(custom(&held.json().await.unwrap()), "kept for you");

    let detached = tokio::spawn(
        host.post("/api/sessions/s/ask", &request("Detached?"))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        host.pending("s").await,
        [ids[0].clone()],
        "reattached, not asked anew"
    );
    let (status, _) = host.answer("s", &ids[0], "here").await;
    assert_eq!(status, StatusCode::OK);
    let answered = detached.await.unwrap().unwrap();
    assert_eq!(custom(&answered.json().await.unwrap()), "here");
}

#[cfg(unix)]
#[tokio::test]
async fn a_read_only_database_file_turns_asks_and_answers_away_with_503_and_degrades_health() {
    let dir = TempDir::new("store-readonly");
    let host = Host::start(&dir);
    assert_eq!(host.health().await, json!({"status": "ok"}));
    let waiting = tokio::spawn(host.post("/api/sessions/s/ask", &request("Kept?")).send());
    let id = host.the_one_pending("s").await;

    set_mode(&dir.database(), 0o400).unwrap();
    let (status, body) = host.answer("s", &id, "lost?").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "STORE_UNAVAILABLE", "{body}");
    // Without the token: degraded, but no path (who runs it, and where).
    let health = host.health().await;
    assert_eq!(health["status"], "degraded", "{health}");
    let reason = health["store"].as_str().unwrap();
    assert!(
        !reason.contains("ask-user.db") && !reason.contains(&*dir.0.to_string_lossy()),
        "{reason}"
    );
    assert!(reason.contains("with the token"), "{reason}");
    let health = host.health_with_token().await;
    assert_eq!(health["status"], "degraded", "{health}");
    let reason = health["store"].as_str().unwrap();
    assert!(
        reason.contains("ask-user.db") && reason.contains("read-only"),
        "{reason}"
    );
    let refused = host
        .post("/api/sessions/s/ask", &request("New?"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "STORE_UNAVAILABLE", "{body}");
    assert_eq!(
        host.pending("s").await,
        std::slice::from_ref(&id),
        "nothing was acknowledged"
    );
    let stderr = host.process.stderr();
    assert_eq!(
        stderr.matches("the store cannot write").count(),
        1,
        "logged once: {stderr}"
    );

    set_mode(&dir.database(), 0o600).unwrap();
    let (status, body) = host.answer("s", &id, "kept").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(host.health().await, json!({"status": "ok"}));
    let answered = waiting.await.unwrap().unwrap();
    assert_eq!(custom(&answered.json().await.unwrap()), "kept");
}

#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_is_0700_and_the_database_and_its_journal_0600() {
    let dir = TempDir::new("store-modes");
    let host = Host::start(&dir);
    let waiting = tokio::spawn(host.post("/api/sessions/s/ask", &request("Modes?")).send());
    host.the_one_pending("s").await;
    assert_eq!(mode(&dir.data()), 0o700);
    assert_eq!(mode(&dir.database()), 0o600);
    assert_eq!(mode(&dir.data().join("ask-user.db-wal")), 0o600);
    waiting.abort();
}

#[tokio::test]
async fn a_corrupt_database_file_is_refused_at_start_naming_it_and_left_untouched() {
    let dir = TempDir::new("store-corrupt");
    std::fs::create_dir_all(dir.data()).unwrap();
    let garbage = b"SQLite format 3\0but nothing after the header makes sense".repeat(100);
    std::fs::write(dir.database(), &garbage).unwrap();
    let data = dir.data();
    let refused = HostProcess::start_in(&dir.0, &["--data-dir", data.to_str().unwrap()]);
    let Err(HostError::NoUrl { stderr, .. }) = refused else {
        panic!("the host must refuse to start");
    };
    assert!(
        stderr.contains(&dir.database().display().to_string()),
        "names the file: {stderr}"
    );
    assert!(stderr.contains("does not overwrite it"), "{stderr}");
    assert_eq!(std::fs::read(dir.database()).unwrap(), garbage, "untouched");
}

#[tokio::test]
async fn a_second_host_on_one_data_directory_refuses_to_start_naming_the_first_ones_address() {
    let dir = TempDir::new("store-one-host");
    let mut first = Host::start(&dir);
    let mut second = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.data())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A host that starts prints its URL and keeps running: stop it, fail.
    let mut url = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(second.stdout.take().unwrap()),
        &mut url,
    )
    .unwrap();
    if !url.is_empty() {
        let _ = second.kill();
        let _ = second.wait();
        panic!("a second host started on the same data directory: {url}");
    }
    let second = second.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "refused: {stderr}");
    assert!(
        stderr.contains(&format!("it serves {}/", first.base)),
        "names the running host: {stderr}"
    );
    assert!(
        stderr.contains(&dir.data().display().to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains(&first.token), "never the token: {stderr}");
    assert!(first.process.is_running());
    assert!(
        first.pending("s").await.is_empty(),
        "the first still serves"
    );

    // The lock goes with the process, however it ends: a kill frees the directory.
    first.process.kill();
    let again = Host::start(&dir);
    assert!(again.pending("s").await.is_empty());
}

/// Runs `ask-user history --data-dir <dir> <args…>`; its stdout, or its stderr on failure.
fn history_cli(dir: &TempDir, args: &[&str]) -> Result<String, String> {
    let output = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .arg("history")
        .arg("--data-dir")
        .arg(dir.data())
        .args(args)
        .output()
        .unwrap();
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        Err(String::from_utf8(output.stderr).unwrap())
    }
}

/// Asks `text` in `session` and answers it with `answer`; returns the id.
async fn ask_and_answer(host: &Host, session: &str, text: &str, answer: &str) -> String {
    let before = host.pending(session).await.len();
    let ask = tokio::spawn(
        host.post(&format!("/api/sessions/{session}/ask"), &request(text))
            .send(),
    );
    until("the question is pending", async || {
        host.pending(session).await.len() > before
    })
    .await;
    let id = host.pending(session).await.pop().unwrap();
    let (status, body) = host.answer(session, &id, answer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let delivered = ask.await.unwrap().unwrap();
    assert_eq!(custom(&delivered.json().await.unwrap()), answer);
    id
}

#[tokio::test]
async fn history_pages_newest_first_and_the_cli_prints_json_a_decision_log_and_clears() {
    let dir = TempDir::new("store-history");
    let host = Host::start(&dir);
    let mut asked = Vec::new();
    for (n, session) in ["a", "b", "a", "b", "a"].iter().enumerate() {
        let text = format!("Question {n}?");
        asked.push(ask_and_answer(&host, session, &text, &format!("answer {n}")).await);
    }
    let mut paged = Vec::new();
    let mut path = "/api/history?limit=2".to_owned();
    loop {
        let page = host.json(&path).await;
        let records = page["records"].as_array().unwrap();
        assert!(records.len() <= 2, "{page}");
        paged.extend(
            records
                .iter()
                .map(|r| r["question"]["id"].as_str().unwrap().to_owned()),
        );
        assert!(records.iter().all(|r| r["outcome"] == "answered"));
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/history?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    let newest_first: Vec<String> = asked.iter().rev().cloned().collect();
    assert_eq!(paged, newest_first);
    let only_b = host.json("/api/history?session=b").await;
    assert_eq!(only_b["records"].as_array().unwrap().len(), 2);
    let bad = host
        .client
        .get(format!("{}/api/history?limit=lots", host.base))
        .bearer_auth(&host.token)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

    // The command line reads the same file while the host runs.
    let json: Value =
        serde_json::from_str(&history_cli(&dir, &["--format", "json"]).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 5);
    assert_eq!(json[0]["answer"]["answers"][0]["custom"], "answer 4");
    let md = history_cli(&dir, &["--format", "md", "--session", "a"]).unwrap();
    assert!(md.starts_with("# Decision log\n"), "{md}");
    assert_eq!(md.matches("session `a` · answered").count(), 3, "{md}");
    assert!(!md.contains("session `b`"), "{md}");
    let first = md.find("**Question 0?**").expect("the question");
    let last = md.find("**Question 4?**").expect("the question");
    assert!(first < last, "oldest first: {md}");
    assert!(md.contains("- “answer 2”"), "{md}");
    let later = history_cli(&dir, &["--since", "2999-01-01"]).unwrap();
    assert!(later.contains("Nothing recorded"), "{later}");
    let not_a_date = history_cli(&dir, &["--since", "next tuesday"]).unwrap_err();
    assert!(not_a_date.contains("--since"), "{not_a_date}");

    let cleared = history_cli(&dir, &["--clear", "--session", "a"]).unwrap();
    assert!(cleared.contains("deleted 3 "), "{cleared}");
    let left = host.json("/api/history").await;
    let left: Vec<&str> = left["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["question"]["session"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["b", "b"]);
}

#[tokio::test]
async fn sigterm_resolves_a_waiting_ask_aborted_and_the_record_says_disposed() {
    let dir = TempDir::new("store-sigterm");
    let mut host = Host::start(&dir);
    let waiting = tokio::spawn(
        host.post("/api/sessions/s/ask", &request("Still there?"))
            .send(),
    );
    let id = host.the_one_pending("s").await;
    assert!(host.process.terminate_and_wait().success());
    let aborted = waiting.await.unwrap().unwrap();
    assert_eq!(aborted.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = aborted.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ASK_ABORTED", "{body}");

    let json: Value =
        serde_json::from_str(&history_cli(&dir, &["--format", "json"]).unwrap()).unwrap();
    assert_eq!(json[0]["question"]["id"], id.as_str());
    assert_eq!(json[0]["outcome"], "disposed");
    let host = Host::start(&dir);
    assert!(host.pending("s").await.is_empty(), "nothing comes back");
}

#[tokio::test]
async fn records_older_than_keep_days_are_pruned_when_the_host_starts() {
    use ask_user_host::server::store::{SqliteStore, Store, Write};
    let dir = TempDir::new("store-prune");
    std::fs::create_dir_all(dir.data()).unwrap();
    let day_ms = 24 * 60 * 60 * 1000;
    let now = ask_user_host::server::store::now_ms();
    {
        let store = SqliteStore::open(&dir.data()).unwrap();
        for (id, days_ago) in [("q_old", 40), ("q_recent", 2)] {
            let question = ask_user_core::wire::QuestionRequested {
                id: id.to_owned(),
                session: "s".to_owned(),
                request: ask_user_core::AskRequest::from_value(request("Old?")).unwrap(),
                created_at_ms: now - days_ago * day_ms,
                asked_by: None,
            };
            store
                .submit(Write::Asked(question.into()))
                .kept()
                .await
                .unwrap();
            let ended = Write::Ended {
                id: id.to_owned(),
                outcome: ask_user_core::wire::Outcome::Timeout,
                at_ms: now - days_ago * day_ms,
            };
            assert!(store.submit(ended).kept().await.unwrap());
        }
    }
    let host = Host::start(&dir);
    until("the 40-day-old record is pruned", async || {
        host.json("/api/history").await["records"]
            .as_array()
            .unwrap()
            .len()
            == 1
    })
    .await;
    let page = host.json("/api/history").await;
    assert_eq!(page["records"][0]["question"]["id"], "q_recent");
}

#[tokio::test]
async fn after_a_kill_the_transcript_and_the_session_list_show_what_was_there_before() {
    let dir = TempDir::new("store-transcript");
    let mut host = Host::start(&dir);
    let posted = host
        .post(
            "/api/sessions/t/messages",
            &json!({"text": "before the kill"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), StatusCode::OK);
    let ask = tokio::spawn(
        host.post("/api/sessions/t/ask", &request("Kept?"))
            .header("x-ask-user-agent", "bot/1.0")
            .send(),
    );
    let id = host.the_one_pending("t").await;
    let answer = json!({"answers": [{"id": "q", "custom": "yes"}], "note": "my note"});
    let answered = host
        .post(&format!("/api/sessions/t/questions/{id}/answer"), &answer)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), StatusCode::OK);
    assert_eq!(
        custom(&ask.await.unwrap().unwrap().json().await.unwrap()),
        "yes"
    );
    host.process.kill();

    let host = Host::start(&dir);
    let transcript = host.json("/api/sessions/t/transcript").await;
    let entries = transcript["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{transcript}");
    assert_eq!(entries[0]["kind"], "message");
    assert_eq!(entries[0]["text"], "before the kill");
    assert_eq!(entries[1]["kind"], "record");
    assert_eq!(entries[1]["id"], id.as_str());
    assert_eq!(entries[1]["outcome"], "answered");
    assert_eq!(entries[1]["answer"]["note"], "my note");
    assert_eq!(entries[1]["asked_by"]["name"], "bot");
    assert!(
        entries[0]["at_ms"].as_u64().unwrap() <= entries[1]["resolved_at_ms"].as_u64().unwrap(),
        "in time order: {transcript}"
    );
    let sessions = host.json("/api/sessions").await;
    let listed = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "t")
        .unwrap_or_else(|| panic!("session t is listed: {sessions}"));
    assert_eq!(listed["pending"], 0);
    assert_eq!(listed["asked_by"]["name"], "bot");
    assert_eq!(
        listed["last_activity_ms"], entries[1]["resolved_at_ms"],
        "{sessions}"
    );
}
