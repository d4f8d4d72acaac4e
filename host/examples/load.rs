//! Load bench of the host on loopback (run by `cargo xtask bench`, or
//! `cargo run --profile release-native -p ask-user-host --example load`).
//!
//! 1. Round trips: 64 concurrent agents, each in its own session with its own
//!    event stream, loop "ask over HTTP → wait for the `question/requested`
//!    frame → answer over HTTP → receive the answer"; reports round trips per
//!    second and the p50/p99 of one round trip.
//! 2. Baseline, in the same run: the same 64 clients over the same kind of
//!    connections against a bare axum route that answers at once (`POST` of
//!    the same request body); reports its requests per second and the round
//!    trips' rate as a share of it (a round trip is two requests and one event
//!    frame; the goal is at least 50%). Absolute rates swing 2-3x between
//!    machines; the ratio does not.
//! 3. Memory: the resident set (VmRSS) grown by 10,000 pending questions
//!    asked through the host's seam (`AppState::ask`).
//!
//! `ASK_USER_BENCH_SECS` sets the measured duration (default 10 s); the
//! argument `round-trips` or `baseline` runs that phase alone (to profile it).

use ask_user_core::{AskRequest, SessionId};
use ask_user_host::{AppState, AskOptions, HostConfig, random_token, serve};
use futures_util::StreamExt;
use std::future::IntoFuture;
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

/// The next `question/requested` id on an SSE byte stream. Lean on purpose
/// (bytes, one typed field): the agents' own parsing is not the host's cost.
struct Frames<S> {
    body: S,
    buffer: Vec<u8>,
}

#[derive(serde::Deserialize)]
struct Requested {
    id: String,
}

impl<S, B, E> Frames<S>
where
    S: futures_util::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Debug,
{
    async fn next_requested_id(&mut self) -> String {
        loop {
            while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let id = {
                    let block = &self.buffer[..end];
                    block
                        .split(|&b| b == b'\n')
                        .any(|line| line == b"event: question/requested")
                        .then(|| {
                            let data = block
                                .split(|&b| b == b'\n')
                                .find_map(|line| line.strip_prefix(b"data: "))
                                .expect("a data line");
                            serde_json::from_slice::<Requested>(data)
                                .expect("JSON data")
                                .id
                        })
                };
                self.buffer.drain(..end + 2);
                if let Some(id) = id {
                    return id;
                }
            }
            let chunk = self
                .body
                .next()
                .await
                .expect("the stream stays open")
                .expect("stream chunk");
            self.buffer.extend_from_slice(chunk.as_ref());
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
        buffer: Vec::new(),
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

/// What one phase of clients measured.
struct Measured {
    samples: Vec<Duration>,
    elapsed: Duration,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.samples.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn summary(&mut self) -> String {
        self.samples.sort();
        format!(
            "{} in {:.1} s = {:.0}/s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.samples.len(),
            self.elapsed.as_secs_f64(),
            self.rate(),
            percentile(&self.samples, 0.50).as_secs_f64() * 1e3,
            percentile(&self.samples, 0.99).as_secs_f64() * 1e3,
            self.samples
                .last()
                .copied()
                .unwrap_or_default()
                .as_secs_f64()
                * 1e3,
        )
    }
}

/// Runs `AGENTS` clients for a one-second warm-up (connections, allocator),
/// then for `seconds`, and returns the measured phase.
async fn measure<F, Fut>(seconds: u64, client: F) -> Measured
where
    F: Fn(usize, Arc<AtomicBool>) -> Fut,
    Fut: std::future::Future<Output = Vec<Duration>> + Send + 'static,
{
    let mut measured = None;
    for secs in [1, seconds] {
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..AGENTS)
            .map(|i| tokio::spawn(client(i, stop.clone())))
            .collect();
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        stop.store(true, Ordering::Relaxed);
        let mut samples = Vec::new();
        for client in clients {
            samples.extend(client.await.expect("client"));
        }
        measured = Some(Measured {
            samples,
            elapsed: started.elapsed(),
        });
    }
    measured.expect("the measured phase ran")
}

fn http_client() -> reqwest::Client {
    // Loopback: never through a proxy from the environment.
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(4 * AGENTS)
        .build()
        .expect("client")
}

/// The bare axum route: the same clients, the same body, an answer at once.
async fn baseline(seconds: u64) -> Measured {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let app = axum::Router::new().route(
        "/bare",
        axum::routing::post(|body: axum::body::Bytes| async move { body.len().to_string() }),
    );
    let server = tokio::spawn(axum::serve(listener, app).into_future());
    let client = http_client();
    let url = format!("http://127.0.0.1:{port}/bare");
    let measured = measure(seconds, |_, stop| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let response = client.post(&url).body(REQUEST).send().await.expect("bare");
                assert_eq!(response.status(), 200);
                assert!(!response.bytes().await.expect("body").is_empty());
                samples.push(started.elapsed());
            }
            samples
        }
    })
    .await;
    server.abort();
    measured
}

/// Where the round trips' host keeps its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    /// `--ephemeral`: in memory only.
    Memory,
    /// The default: a SQLite file (in a fresh temp directory).
    Sqlite,
}

async fn round_trips(seconds: u64, record: Record) -> Measured {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let config = HostConfig::new(random_token(), port);
    let dir = std::env::temp_dir().join(format!("ask-user-load-{}", std::process::id()));
    let state = match record {
        Record::Memory => AppState::new(config),
        Record::Sqlite => {
            let _ = std::fs::remove_dir_all(&dir);
            ask_user_host::data_dir::ensure_private_dir(&dir).expect("temp data dir");
            let store = ask_user_host::store::SqliteStore::open(&dir).expect("the store opens");
            AppState::recording(config, Arc::new(store))
        }
    };
    let token = state.config().token.clone();
    let server = tokio::spawn(serve(listener, state.clone()));
    let base = format!("http://127.0.0.1:{port}");
    let client = http_client();
    let measured = measure(seconds, |i, stop| {
        let session = format!("agent-{i}");
        agent(client.clone(), base.clone(), token.clone(), session, stop)
    })
    .await;
    state.shutdown_handle().shutdown();
    server.await.expect("server task").expect("serve");
    drop(state);
    let _ = std::fs::remove_dir_all(&dir);
    measured
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
    // `-- round-trips` or `-- baseline` runs one phase alone (for a profiler).
    match std::env::args().nth(1).as_deref() {
        Some("round-trips") => {
            let mut trips = round_trips(seconds, Record::Memory).await;
            println!("round trips: {}", trips.summary());
            return;
        }
        Some("round-trips-sqlite") => {
            let mut trips = round_trips(seconds, Record::Sqlite).await;
            println!("round trips (SQLite): {}", trips.summary());
            return;
        }
        Some("baseline") => {
            println!("baseline: {}", baseline(seconds).await.summary());
            return;
        }
        _ => {}
    }
    pending_memory().await;
    let mut bare = baseline(seconds).await;
    println!(
        "baseline: {AGENTS} clients against a bare axum route (POST, answers at once): {}",
        bare.summary()
    );
    let mut trips = round_trips(seconds, Record::Memory).await;
    println!(
        "round trips: {AGENTS} agents (ask → question/requested frame → answer → result), in-memory store (--ephemeral): {}",
        trips.summary()
    );
    println!(
        "round trips per second = {:.0}% of the baseline's requests per second (goal ≥ 50%; a round trip is two requests and one event frame)",
        100.0 * trips.rate() / bare.rate()
    );
    let mut kept = round_trips(seconds, Record::Sqlite).await;
    println!(
        "round trips: {AGENTS} agents, SQLite store (WAL, batched writes; every ask and answer written before it is acknowledged): {}",
        kept.summary()
    );
    println!(
        "SQLite round trips per second = {:.0}% of the in-memory store's (goal ≥ 70%)",
        100.0 * kept.rate() / trips.rate()
    );
}
