//! Load bench of the host on loopback (run by `cargo xtask bench`, or
//! `cargo run --profile release-native -p ask-user-host --example load`).
//!
//! 1. Round trips: 64 concurrent agents, each in its own session with its own
//!    event stream, loop "ask over HTTP → wait for the `question/requested`
//!    frame → answer over HTTP → receive the answer"; reports round trips per
//!    second and the p50/p99 of one round trip.
//! 2. Memory: the resident set (VmRSS) grown by 10,000 pending questions
//!    asked through the host's seam (`AppState::ask`).
//!
//! `ASK_USER_BENCH_SECS` sets the measured duration (default 10 s).

use ask_user_core::{AskRequest, SessionId};
use ask_user_host::{AppState, AskOptions, HostConfig, random_token, serve};
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const AGENTS: usize = 64;
const PENDING: usize = 10_000;

const REQUEST: &str = r#"{"questions": [
  {"id": "db", "header": "Database", "question": "Which database should the service use?",
   "options": [{"label": "Postgres (Recommended)", "description": "Relational, already in use elsewhere"},
               {"label": "SQLite", "description": "Embedded, zero setup"}]},
  {"id": "features", "question": "Which features ship first?", "multi_select": true,
   "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Sharing"}]},
  {"id": "name", "question": "What should the project be called?"}
]}"#;

const ANSWER: &str = r#"{"answers": [
  {"id": "db", "selected": ["Postgres (Recommended)"]},
  {"id": "features", "selected": ["Search", "Export"]},
  {"id": "name", "custom": "ask-user"}
]}"#;

/// The next `question/requested` id on an SSE byte stream.
struct Frames<S> {
    body: S,
    buffer: String,
}

impl<S, B, E> Frames<S>
where
    S: futures_util::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Debug,
{
    async fn next_requested_id(&mut self) -> String {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if block.contains("event: question/requested") {
                    let data = block
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .expect("a data line");
                    let value: serde_json::Value = serde_json::from_str(data).expect("JSON data");
                    return value["id"].as_str().expect("an id").to_owned();
                }
            }
            let chunk = self
                .body
                .next()
                .await
                .expect("the stream stays open")
                .expect("stream chunk");
            self.buffer
                .push_str(&String::from_utf8_lossy(chunk.as_ref()));
        }
    }
}

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

async fn agent(
    client: reqwest::Client,
    base: String,
    token: String,
    session: String,
    stop: Arc<AtomicBool>,
) -> Vec<Duration> {
    let events = client
        .get(format!("{base}/api/sessions/{session}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("open events");
    let mut frames = Frames {
        body: events.bytes_stream(),
        buffer: String::new(),
    };
    let mut samples = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let ask = tokio::spawn(
            client
                .post(format!("{base}/api/sessions/{session}/ask"))
                .bearer_auth(&token)
                .body(REQUEST)
                .send(),
        );
        let id = frames.next_requested_id().await;
        let answered = client
            .post(format!(
                "{base}/api/sessions/{session}/questions/{id}/answer"
            ))
            .bearer_auth(&token)
            .body(ANSWER)
            .send()
            .await
            .expect("answer");
        assert_eq!(answered.status(), 200);
        let response = ask.await.expect("ask task").expect("ask");
        assert_eq!(response.status(), 200);
        let body = response.bytes().await.expect("answer body");
        assert!(!body.is_empty());
        samples.push(started.elapsed());
    }
    samples
}

async fn round_trips(seconds: u64) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let state = AppState::new(HostConfig::new(random_token(), port));
    let token = state.config().token.clone();
    let server = tokio::spawn(serve(listener, state.clone()));
    let base = format!("http://127.0.0.1:{port}");
    // Loopback: never through a proxy from the environment.
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(4 * AGENTS)
        .build()
        .expect("client");

    // Warm up (connections, allocator), then measure.
    for (phase, secs) in [("warm-up", 1), ("measured", seconds)] {
        let stop = Arc::new(AtomicBool::new(false));
        let agents: Vec<_> = (0..AGENTS)
            .map(|i| {
                tokio::spawn(agent(
                    client.clone(),
                    base.clone(),
                    token.clone(),
                    format!("agent-{i}"),
                    stop.clone(),
                ))
            })
            .collect();
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        stop.store(true, Ordering::Relaxed);
        let mut samples = Vec::new();
        for agent in agents {
            samples.extend(agent.await.expect("agent"));
        }
        let elapsed = started.elapsed();
        if phase == "measured" {
            samples.sort();
            println!(
                "round trips: {} agents, {} in {:.1} s = {:.0}/s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                AGENTS,
                samples.len(),
                elapsed.as_secs_f64(),
                samples.len() as f64 / elapsed.as_secs_f64(),
                percentile(&samples, 0.50).as_secs_f64() * 1e3,
                percentile(&samples, 0.99).as_secs_f64() * 1e3,
                samples.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
            );
        }
    }
    state.shutdown_handle().shutdown();
    server.await.expect("server task").expect("serve");
}

async fn pending_memory() {
    let state = AppState::new(HostConfig::new(random_token(), 0));
    let request = AskRequest::from_json(REQUEST).expect("valid request");
    // Let the runtime and allocator settle before the baseline.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = vm_rss_kib();
    let asks: Vec<_> = (0..PENDING)
        .map(|i| {
            let state = state.clone();
            let request = request.clone();
            // Spread over sessions as real tabs would be (100 sessions).
            let session = SessionId::parse(&format!("s{}", i % 100)).expect("a session id");
            tokio::spawn(async move { state.ask(&session, request, AskOptions::default()).await })
        })
        .collect();
    while state.store().pending_count() < PENDING {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = vm_rss_kib();
    let grown = after.saturating_sub(before);
    println!(
        "memory: {PENDING} pending questions (3-question request each, via AppState::ask) grew VmRSS by {:.1} MiB ({} KiB -> {} KiB), {:.2} KiB per question",
        grown as f64 / 1024.0,
        before,
        after,
        grown as f64 / PENDING as f64
    );
    state.shutdown_handle().shutdown();
    for ask in asks {
        let outcome = ask.await.expect("ask task");
        assert_eq!(outcome.expect_err("disposed").code(), "ASK_ABORTED");
    }
}

#[tokio::main]
async fn main() {
    let seconds = std::env::var("ASK_USER_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    pending_memory().await;
    round_trips(seconds).await;
}
