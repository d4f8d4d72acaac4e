//! Soak test of a real `ask-user serve` process (`cargo xtask soak [--minutes N]`,
//! not in CI; or `cargo run --profile release-native -p ask-user-host --example
//! soak -- --minutes N --host-bin PATH`).
//!
//! Agents ask and a scripted person answers, everything through a proxy that
//! cuts connections at random and stalls the host's replies (so event streams
//! lag and re-sync); sessions come and go. Every question carries a nonce that
//! its answer must bring back to the agent that asked, so the summary can say:
//!
//! - **answers lost**: the host accepted the person's answer (200) and no agent
//!   ever received it (must be 0);
//! - **duplicates**: an agent received an answer twice or someone else's (must
//!   be 0);
//! - **asks retried after a cut**: the proxy cut an agent's connection while
//!   its question waited; the agent asked the same request again, which
//!   reattaches to its question or collects the answer given meanwhile;
//! - the host's resident set (`VmRSS`) over time.

use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Agents asking at once.
const AGENTS: usize = 16;
/// Sessions alive at once; one is retired and a new one opened every
/// [`SESSION_LIFETIME`] / [`SESSIONS`].
const SESSIONS: usize = 6;
const SESSION_LIFETIME: Duration = Duration::from_secs(60);
/// Each second of its life, a proxied connection is cut with this chance
/// (an ask waiting a second or two: a few percent; an event stream: every
/// twenty seconds or so) ...
const CUT_PER_SECOND: f64 = 0.05;
/// ... and its host-to-client direction stalls with this chance, for up to
/// [`STALL_FOR`] (long enough for a chatty session to back up behind it).
const STALL_PER_SECOND: f64 = 0.03;
const STALL_FOR: Duration = Duration::from_secs(30);
/// How often the person posts a transcript message in each live session, and
/// how long it is, so that stalled streams fall behind.
const CHATTER_EVERY: Duration = Duration::from_millis(50);
const CHATTER_CHARS: usize = 8000;
/// The proxy reads the host through a small receive buffer, so a stalled
/// direction pushes back on the host within a few kilobytes.
const PROXY_RECEIVE_BUFFER: u32 = 8 * 1024;
/// How long the person takes to answer (uniform up to this).
const THINK: Duration = Duration::from_millis(1500);
/// How often the host's resident set is sampled.
const RSS_EVERY: Duration = Duration::from_secs(15);
/// How long the end waits for the asks still in flight.
/// Longer than a stall (an answer may sit in a stalled reply for
/// [`STALL_FOR`]) plus a retry or two.
const DRAIN: Duration = Duration::from_secs(90);

#[derive(Default)]
struct Counters {
    asks: AtomicU64,
    delivered: AtomicU64,
    answers_accepted: AtomicU64,
    agent_cuts: AtomicU64,
    stream_opens: AtomicU64,
    resyncs: AtomicU64,
    answer_retries: AtomicU64,
    refused_answers: AtomicU64,
    proxied: AtomicU64,
    cut: AtomicU64,
    stalled: AtomicU64,
    sessions_opened: AtomicU64,
    sessions_retired: AtomicU64,
    duplicates: AtomicU64,
    other_errors: AtomicU64,
}

/// What happened to every nonce.
#[derive(Default)]
struct Ledger {
    /// Nonces whose answer the host accepted.
    accepted: HashSet<String>,
    /// Nonces an agent received, and how often.
    delivered: HashMap<String, u32>,
    /// Nonces whose agent was cut off at least once (and asked again).
    retried: HashSet<String>,
}

struct Soak {
    host: String,
    token: String,
    counters: Counters,
    ledger: Mutex<Ledger>,
    /// The live sessions (agents pick one per ask).
    sessions: Mutex<Vec<String>>,
    stop_asking: AtomicBool,
    /// Set once the agents' last asks are drained: a retired session's person
    /// answers until then (an agent cut off may ask again in it at the end).
    drained: AtomicBool,
}

impl Soak {
    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn random_session(&self) -> String {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions[rand::random_range(0..sessions.len())].clone()
    }
}

fn nonce() -> String {
    format!("{:016x}", rand::random::<u64>())
}

fn client() -> reqwest::Client {
    // A fresh connection per call, so the proxy decides each one's fate.
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("an HTTP client")
}

/// One agent: asks in a random live session, checks that the answer carries
/// its nonce; when the proxy cuts it off, it asks the same request again in
/// the same session (the host's contract: that reattaches to the detached
/// question, or collects the answer given while it was away).
async fn agent(soak: Arc<Soak>) {
    let client = client();
    while !soak.stop_asking.load(Ordering::Relaxed) {
        let session = soak.random_session();
        let nonce = nonce();
        soak.counters.asks.fetch_add(1, Ordering::Relaxed);
        let request = json!({"questions": [{"id": "q", "question": format!("soak {nonce}?")}]});
        let body = loop {
            let sent = client
                .post(format!("{}/api/sessions/{session}/ask", soak.host))
                .bearer_auth(&soak.token)
                .body(request.to_string())
                .send()
                .await;
            match sent {
                Ok(response) => match response.json::<Value>().await {
                    Ok(body) => break body,
                    Err(_) => cut_off(&soak, &nonce),
                },
                Err(_) => cut_off(&soak, &nonce),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        match body["answers"][0]["custom"].as_str() {
            Some(answer) => {
                soak.counters.delivered.fetch_add(1, Ordering::Relaxed);
                let mut ledger = soak.ledger();
                let seen = ledger.delivered.entry(answer.to_owned()).or_default();
                *seen += 1;
                if answer != nonce || *seen > 1 {
                    soak.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                soak.counters.other_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!("soak: an ask ended without an answer: {body}");
            }
        }
    }
}

fn cut_off(soak: &Soak, nonce: &str) {
    soak.counters.agent_cuts.fetch_add(1, Ordering::Relaxed);
    soak.ledger().retried.insert(nonce.to_owned());
}

/// The person in one session: follows the event stream (reopening it when the
/// proxy cuts it; each reopen replays what is pending) and answers every
/// question with its nonce, retrying an answer whose connection was cut.
async fn person(soak: Arc<Soak>, session: String, retired: Arc<AtomicBool>) {
    let client = client();
    let answering: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        if retired.load(Ordering::Relaxed) && soak.drained.load(Ordering::Relaxed) {
            return;
        }
        soak.counters.stream_opens.fetch_add(1, Ordering::Relaxed);
        let Ok(response) = client
            .get(format!("{}/api/sessions/{session}/events", soak.host))
            .bearer_auth(&soak.token)
            .send()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        let mut synced = 0;
        'stream: while let Some(Ok(chunk)) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if block.contains("event: session/synced") {
                    synced += 1;
                    if synced > 1 {
                        soak.counters.resyncs.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if !block.contains("event: question/requested") {
                    continue;
                }
                let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                    continue;
                };
                let Ok(question) = serde_json::from_str::<Value>(data) else {
                    continue;
                };
                let id = question["id"].as_str().unwrap_or_default().to_owned();
                let text = question["request"]["questions"][0]["question"]
                    .as_str()
                    .unwrap_or_default();
                let nonce = text
                    .trim_start_matches("soak ")
                    .trim_end_matches('?')
                    .to_owned();
                let fresh = answering
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id.clone());
                if fresh {
                    tokio::spawn(answer(soak.clone(), session.clone(), id, nonce));
                }
            }
            if retired.load(Ordering::Relaxed) && soak.drained.load(Ordering::Relaxed) {
                break 'stream;
            }
        }
    }
}

/// Answers question `id` with `nonce` after a moment's thought.
async fn answer(soak: Arc<Soak>, session: String, id: String, nonce: String) {
    let client = client();
    let think = THINK.mul_f64(rand::random::<f64>());
    tokio::time::sleep(think).await;
    let url = format!("{}/api/sessions/{session}/questions/{id}/answer", soak.host);
    let body = json!({"answers": [{"id": "q", "custom": nonce}]}).to_string();
    for attempt in 0.. {
        if attempt > 0 {
            soak.counters.answer_retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Ok(response) = client
            .post(&url)
            .bearer_auth(&soak.token)
            .body(body.clone())
            .send()
            .await
        else {
            continue;
        };
        let status = response.status();
        let Ok(reply) = response.json::<Value>().await else {
            continue;
        };
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        // An earlier attempt whose reply was cut off may have been accepted.
        if status == 200 || message.contains("already answered") {
            soak.counters
                .answers_accepted
                .fetch_add(1, Ordering::Relaxed);
            soak.ledger().accepted.insert(nonce);
        } else {
            soak.counters
                .refused_answers
                .fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
}

/// Forwards connections to `upstream`, cutting some at a random moment and
/// stalling the host-to-client direction of others.
async fn proxy(listener: TcpListener, upstream: SocketAddr, soak: Arc<Soak>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let soak = soak.clone();
        tokio::spawn(async move {
            let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
                return;
            };
            let _ = socket.set_recv_buffer_size(PROXY_RECEIVE_BUFFER);
            let Ok(host) = socket.connect(upstream).await else {
                return;
            };
            soak.counters.proxied.fetch_add(1, Ordering::Relaxed);
            let stall_until = Mutex::new(None::<Instant>);
            let (mut client_read, mut client_write) = client.into_split();
            let (mut host_read, mut host_write) = host.into_split();
            let up = async {
                let _ = tokio::io::copy(&mut client_read, &mut host_write).await;
                let _ = host_write.shutdown().await;
            };
            let down = async {
                let mut buffer = vec![0u8; 16 * 1024];
                loop {
                    let n = match host_read.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let until = *stall_until.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(until) = until {
                        tokio::time::sleep_until(until.into()).await;
                    }
                    if client_write.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = client_write.shutdown().await;
            };
            // Once a second: maybe cut, maybe stall.
            let chaos = async {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if rand::random::<f64>() < CUT_PER_SECOND {
                        return;
                    }
                    if rand::random::<f64>() < STALL_PER_SECOND {
                        soak.counters.stalled.fetch_add(1, Ordering::Relaxed);
                        let until = Instant::now() + STALL_FOR.mul_f64(rand::random::<f64>());
                        *stall_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
                    }
                }
            };
            tokio::select! {
                _ = async { tokio::join!(up, down) } => {}
                () = chaos => {
                    soak.counters.cut.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

/// The person's chatter in one session, so that a stalled stream falls behind.
async fn chatter(soak: Arc<Soak>, session: String, retired: Arc<AtomicBool>) {
    let client = reqwest::Client::new();
    let text = "lorem ipsum ".repeat(CHATTER_CHARS / 12);
    while !retired.load(Ordering::Relaxed) && !soak.stop_asking.load(Ordering::Relaxed) {
        tokio::time::sleep(CHATTER_EVERY).await;
        let _ = client
            .post(format!("{}/api/sessions/{session}/messages", soak.host))
            .bearer_auth(&soak.token)
            .body(json!({ "text": text }).to_string())
            .send()
            .await;
    }
}

fn vm_rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

struct Args {
    minutes: f64,
    host_bin: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut minutes = 10.0;
    let mut host_bin = std::env::var_os("ASK_USER_BIN").map_or_else(
        || PathBuf::from("target/release-native/ask-user"),
        PathBuf::from,
    );
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => {
                minutes = args
                    .next()
                    .and_then(|m| m.parse().ok())
                    .filter(|m: &f64| *m > 0.0)
                    .ok_or("--minutes takes a positive number")?;
            }
            "--host-bin" => host_bin = args.next().ok_or("--host-bin takes a path")?.into(),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok(Args { minutes, host_bin })
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("soak: {error}\nusage: soak [--minutes N] [--host-bin PATH]");
            return std::process::ExitCode::from(2);
        }
    };
    let run = Duration::from_secs_f64(args.minutes * 60.0);

    // The host, with its token in a private file.
    let token = format!("{:032x}", rand::random::<u128>());
    let token_file = std::env::temp_dir().join(format!("ask-user-soak-{}", std::process::id()));
    std::fs::write(&token_file, &token).expect("write the token file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("make the token file private");
    }
    let mut host = tokio::process::Command::new(&args.host_bin)
        .args([
            "serve",
            "--ephemeral",
            "--addr",
            "127.0.0.1:0",
            "--token-file",
        ])
        .arg(&token_file)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", args.host_bin.display()));
    let pid = host.id().expect("the host runs");
    let mut url = String::new();
    BufReader::new(host.stdout.take().expect("stdout is piped"))
        .read_line(&mut url)
        .await
        .expect("the host prints its URL");
    let upstream: SocketAddr = url
        .trim()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("the URL names the host's address");

    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the proxy");
    let soak = Arc::new(Soak {
        host: format!("http://{}", listener.local_addr().expect("proxy address")),
        token,
        counters: Counters::default(),
        ledger: Mutex::default(),
        sessions: Mutex::new(Vec::new()),
        stop_asking: AtomicBool::new(false),
        drained: AtomicBool::new(false),
    });
    tokio::spawn(proxy(listener, upstream, soak.clone()));

    println!(
        "soak: {} min, {AGENTS} agents, {SESSIONS} sessions at a time (one replaced every {} s); \
         each second a connection is cut with {:.0}% and stalls (up to {} s) with {:.0}% chance; host pid {pid}",
        args.minutes,
        (SESSION_LIFETIME / SESSIONS as u32).as_secs(),
        CUT_PER_SECOND * 100.0,
        STALL_FOR.as_secs(),
        STALL_PER_SECOND * 100.0
    );
    let mut generation = 0u64;
    let mut people: Vec<(String, Arc<AtomicBool>)> = Vec::new();
    let mut open_session = |people: &mut Vec<(String, Arc<AtomicBool>)>| {
        generation += 1;
        let name = format!("soak-{generation}");
        let retired = Arc::new(AtomicBool::new(false));
        soak.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(name.clone());
        soak.counters
            .sessions_opened
            .fetch_add(1, Ordering::Relaxed);
        tokio::spawn(person(soak.clone(), name.clone(), retired.clone()));
        tokio::spawn(chatter(soak.clone(), name.clone(), retired.clone()));
        people.push((name, retired));
    };
    for _ in 0..SESSIONS {
        open_session(&mut people);
    }
    let agents: Vec<_> = (0..AGENTS)
        .map(|_| tokio::spawn(agent(soak.clone())))
        .collect();

    let started = Instant::now();
    let mut rss = vec![(Duration::ZERO, vm_rss_kib(pid).unwrap_or(0))];
    let mut next_rss = RSS_EVERY;
    let mut next_rotation = SESSION_LIFETIME / SESSIONS as u32;
    while started.elapsed() < run {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = started.elapsed();
        if now >= next_rss {
            rss.push((now, vm_rss_kib(pid).unwrap_or(0)));
            next_rss += RSS_EVERY;
        }
        if now >= next_rotation {
            next_rotation += SESSION_LIFETIME / SESSIONS as u32;
            // The oldest session stops getting asks; its person stays until the end
            // to answer what still waits there.
            let oldest = people
                .iter()
                .find(|(_, retired)| !retired.load(Ordering::Relaxed));
            if let Some((name, retired)) = oldest {
                retired.store(true, Ordering::Relaxed);
                soak.sessions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|s| s != name);
                soak.counters
                    .sessions_retired
                    .fetch_add(1, Ordering::Relaxed);
            }
            open_session(&mut people);
        }
    }

    // The end: no new asks; the ones in flight get their answers.
    soak.stop_asking.store(true, Ordering::Relaxed);
    let drained = tokio::time::timeout(DRAIN, futures_util::future::join_all(agents))
        .await
        .is_ok();
    soak.drained.store(true, Ordering::Relaxed);
    tokio::time::sleep(THINK).await;
    rss.push((started.elapsed(), vm_rss_kib(pid).unwrap_or(0)));
    let _ = host.start_kill();
    std::fs::remove_file(&token_file).ok();

    let ledger = soak.ledger();
    let lost: Vec<&String> = ledger
        .accepted
        .iter()
        .filter(|n| !ledger.delivered.contains_key(*n))
        .collect();
    let c = &soak.counters;
    let n = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    println!(
        "\nsoak summary after {:.1} min",
        started.elapsed().as_secs_f64() / 60.0
    );
    println!("  asks                 {}", n(&c.asks));
    println!("  answers accepted     {}", n(&c.answers_accepted));
    println!("  answers delivered    {}", n(&c.delivered));
    println!(
        "  answers lost         {}   (accepted by the host, never received by an agent; must be 0)",
        lost.len()
    );
    println!(
        "  duplicates           {}   (an answer received twice or by another agent; must be 0)",
        n(&c.duplicates)
    );
    println!(
        "  asks retried         {} asks, {} retries   (the agent's connection was cut while its question waited; it asked the same request again)",
        ledger.retried.len(),
        n(&c.agent_cuts)
    );
    println!(
        "  answers refused      {}   (NOT_PENDING: the question had stopped waiting)",
        n(&c.refused_answers)
    );
    println!("  other errors         {}", n(&c.other_errors));
    println!(
        "  proxy                {} connections, {} cut, {} stalled",
        n(&c.proxied),
        n(&c.cut),
        n(&c.stalled)
    );
    println!(
        "  streams              {} opened, {} re-synced after falling behind; {} answers retried",
        n(&c.stream_opens),
        n(&c.resyncs),
        n(&c.answer_retries)
    );
    println!(
        "  sessions             {} opened, {} retired",
        n(&c.sessions_opened),
        n(&c.sessions_retired)
    );
    println!(
        "  in-flight asks drained at the end: {}",
        if drained { "yes" } else { "no (timed out)" }
    );
    println!("  host VmRSS over time:");
    for (at, kib) in &rss {
        println!(
            "    {:>6.1} min  {:>7.1} MiB",
            at.as_secs_f64() / 60.0,
            *kib as f64 / 1024.0
        );
    }
    let failed = !lost.is_empty() || n(&c.duplicates) > 0 || !drained;
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
