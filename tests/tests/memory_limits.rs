//! Memory under pressure on a real `ask-user serve` process (issue 10):
//! stalled event streams flooded with large messages keep the host's VmRSS
//! within the event buffers' byte budget and are re-synced; 300 large pending
//! questions listed by concurrent `GET …/questions` leave every other route
//! working meanwhile. Each is bounded in time; none asserts a duration.

use ask_user_core::limits::MAX_CUSTOM_CHARS;
use ask_user_tests::host_process::HostProcess;
use ask_user_tests::wait::within;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn start(extra: &[&str]) -> HostProcess {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<!doctype html><p>page</p>").unwrap();
    HostProcess::start(&PathBuf::from(&dir), extra).expect("the host starts and prints its URL")
}

fn authed(host: &HostProcess, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    // Loopback only: never through a proxy.
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| reqwest::Client::builder().no_proxy().build().unwrap())
        .request(method, format!("{}{path}", host.origin()))
        .bearer_auth(host.token().expect("the URL carries the token"))
}

/// An event stream whose reader stops reading after the first
/// `session/synced`, with a receive buffer as small as the kernel allows, so
/// the host, not the kernel, holds what it cannot send.
struct StalledStream {
    socket: TcpStream,
    /// `session/synced` frames read so far.
    synced: usize,
    /// The end of what was read, shorter than a frame name, so a name split
    /// across reads is counted once.
    carry: String,
}

const SYNCED: &str = "event: session/synced";

impl StalledStream {
    async fn open(host: &HostProcess, session: &str) -> Self {
        let addr = host.origin().trim_start_matches("http://").to_owned();
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut socket = socket.connect(addr.parse().unwrap()).await.unwrap();
        let token = host.token().unwrap();
        socket
            .write_all(
                format!(
                    "GET /api/sessions/{session}/events HTTP/1.1\r\nHost: {addr}\r\n\
                     Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let mut stream = Self {
            socket,
            synced: 0,
            carry: String::new(),
        };
        stream.read_until_synced(1).await;
        stream
    }

    /// Reads until `count` `session/synced` frames arrived in all.
    async fn read_until_synced(&mut self, count: usize) {
        let mut buffer = vec![0; 64 * 1024];
        while self.synced < count {
            let n = within("the stream to go on", self.socket.read(&mut buffer)).await;
            let n = n.unwrap();
            assert!(n > 0, "the host closed the stream after {:?}", self.carry);
            let text = std::mem::take(&mut self.carry) + &String::from_utf8_lossy(&buffer[..n]);
            self.synced += text.matches(SYNCED).count();
            let mut keep = text.len().saturating_sub(SYNCED.len() - 1);
            while !text.is_char_boundary(keep) {
                keep += 1;
            }
            self.carry = text[keep..].to_owned();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stalled_streams_flooded_with_large_messages_keep_the_host_within_the_event_budget_and_are_re_synced()
 {
    const SESSIONS: usize = 8;
    const MESSAGES: usize = 500;
    let host = Arc::new(start(&[]));
    let mut stalled = Vec::new();
    for n in 0..SESSIONS {
        stalled.push(StalledStream::open(&host, &format!("stall{n}")).await);
    }
    let before = host.vm_rss_kib().expect("the host's VmRSS");

    // The largest message a person may post: 8,000 three-byte characters.
    let text = json!({"text": "€".repeat(MAX_CUSTOM_CHARS)}).to_string();
    let posters: Vec<_> = (0..SESSIONS)
        .map(|n| {
            let (host, text) = (host.clone(), text.clone());
            tokio::spawn(async move {
                for _ in 0..MESSAGES {
                    let response = authed(
                        &host,
                        reqwest::Method::POST,
                        &format!("/api/sessions/stall{n}/messages"),
                    )
                    .body(text.clone())
                    .send()
                    .await
                    .unwrap();
                    assert_eq!(response.status(), StatusCode::OK);
                }
            })
        })
        .collect();
    for poster in posters {
        within("the messages to be posted", poster).await.unwrap();
    }
    let after = host.vm_rss_kib().expect("the host's VmRSS");
    let grown_mib = after.saturating_sub(before) / 1024;
    let posted_mib = SESSIONS * MESSAGES * text.len() / (1024 * 1024);
    println!(
        "VmRSS {before} KiB -> {after} KiB (+{grown_mib} MiB) after {posted_mib} MiB of messages \
         to {SESSIONS} stalled streams"
    );
    // Each stalled stream may pin its 1 MiB event budget plus what hyper
    // buffers for a connection; 256 events of 24 KB would be 6 MiB each.
    assert!(
        grown_mib < 4 * SESSIONS as u64,
        "the host grew by {grown_mib} MiB for {SESSIONS} stalled streams"
    );

    // A stalled stream that reads again finds it was re-synced.
    let first = &mut stalled[0];
    within("the re-sync", first.read_until_synced(2)).await;
}

/// About 200 KB of valid request: six questions with long details.
fn large_request(n: usize) -> String {
    let questions: Vec<Value> = (0..6)
        .map(|q| {
            json!({"id": format!("q{q}"), "question": format!("Large {n}.{q}?"),
                   "detail": "d".repeat(32_000)})
        })
        .collect();
    json!({ "questions": questions }).to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_large_pending_listed_by_concurrent_gets_leave_the_other_routes_working() {
    const PENDING: usize = 300;
    const LISTERS: usize = 8;
    const LISTS_EACH: usize = 2;
    // 300 requests of 192 KB cost 115 MB of the byte budget (each counts
    // twice: parsed, and as the JSON the lists write); the default is 64 MiB.
    let host = Arc::new(start(&["--max-pending-bytes", "134217728"]));
    let before = host.vm_rss_kib().expect("the host's VmRSS");
    let asks: Vec<_> = (0..PENDING)
        .map(|n| {
            let builder = authed(
                &host,
                reqwest::Method::POST,
                &format!("/api/sessions/big{}/ask", n % 2),
            )
            .body(large_request(n));
            tokio::spawn(async move { builder.send().await.map(|r| r.status()) })
        })
        .collect();
    let count = |host: Arc<HostProcess>, session: &'static str| async move {
        let body = authed(
            &host,
            reqwest::Method::GET,
            &format!("/api/sessions/{session}/questions"),
        )
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
        // Parsed off the runtime and without building the 29 MB as values
        // (this test binary is a debug build), so the probe below measures
        // the host rather than this client's parsing.
        tokio::task::spawn_blocking(move || {
            #[derive(serde::Deserialize)]
            struct Listed {
                pending: Vec<serde::de::IgnoredAny>,
            }
            serde_json::from_slice::<Listed>(&body)
                .unwrap()
                .pending
                .len()
        })
        .await
        .unwrap()
    };
    // Each look is a 29 MB list: look seldom.
    within("300 large questions pending", async {
        for session in ["big0", "big1"] {
            while count(host.clone(), session).await < PENDING / 2 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    })
    .await;
    let pending = host.vm_rss_kib().expect("the host's VmRSS");
    println!(
        "VmRSS {before} KiB -> {pending} KiB with {PENDING} pending of {} bytes: {} KiB each",
        large_request(0).len(),
        pending.saturating_sub(before) / PENDING as u64
    );

    let listers: Vec<_> = (0..LISTERS)
        .map(|n| {
            let host = host.clone();
            tokio::spawn(async move {
                let session = if n % 2 == 0 { "big0" } else { "big1" };
                for _ in 0..LISTS_EACH {
                    assert_eq!(count(host.clone(), session).await, PENDING / 2);
                }
            })
        })
        .collect();
    // Meanwhile a route that takes the table's lock, and health.
    let mut latencies = Vec::new();
    while !listers.iter().all(|l| l.is_finished()) {
        let started = Instant::now();
        let posted = authed(&host, reqwest::Method::POST, "/api/sessions/probe/messages")
            .body(r#"{"text": "still there?"}"#)
            .send();
        let posted = within("a message while the lists are written", posted)
            .await
            .unwrap();
        assert_eq!(posted.status(), StatusCode::OK);
        latencies.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for lister in listers {
        within("the lists", lister).await.unwrap();
    }
    latencies.sort();
    assert!(!latencies.is_empty());
    println!(
        "{} lock-taking POSTs during {LISTERS}x{LISTS_EACH} lists of {} questions: p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        PENDING / 2,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().unwrap()
    );
    for ask in asks {
        ask.abort();
    }
}
