//! Load bench of the shared store (issue 24), run by `cargo xtask bench` (or
//! `cargo run --profile release-native -p ask-user-host --example load_shared`):
//! round trips per second and their p50/p99 with one host on SQLite, one host
//! on PostgreSQL and three hosts on PostgreSQL, in one run, and the ratios.
//!
//! 64 agents loop "ask over HTTP → wait for the `question/requested` frame on
//! the page's stream → answer over HTTP → receive the answer". With three
//! hosts, agent `i` asks through host `i mod 3` while its page (stream and
//! answer) is on host `i + 1 mod 3`: every round trip crosses hosts, and
//! "answer → agent" (from sending the answer to the agent's response) is the
//! cross-host delivery (goal: p50 ≤ 20 ms on loopback); a last phase runs one
//! agent on the three hosts, the delivery without queueing behind 63 others.
//!
//! It starts a PostgreSQL of its own (Debian's `postgresql`, as the tests do:
//! `/usr/lib/postgresql/<ver>/bin`, as the `postgres` user when run as root)
//! in a temporary directory. All hosts run in this one process, on one tokio
//! runtime, so they share the machine's cores as separate processes would.
//! `ASK_USER_BENCH_SECS` sets each phase's measured duration (default 10 s).

use ask_user_host::{AppState, HostConfig, random_token, serve};
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[path = "shared/postgres.rs"]
mod postgres;
use postgres::Postgres;

const AGENTS: usize = 64;

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
                let block = self.buffer[..end].to_vec();
                self.buffer.drain(..end + 2);
                let requested = block
                    .split(|&b| b == b'\n')
                    .any(|line| line == b"event: question/requested");
                if requested {
                    let data = block
                        .split(|&b| b == b'\n')
                        .find_map(|line| line.strip_prefix(b"data: "))
                        .expect("a data line");
                    return serde_json::from_slice::<Requested>(data).expect("JSON").id;
                }
            }
            let chunk = self
                .body
                .next()
                .await
                .expect("the stream stays open")
                .expect("chunk");
            self.buffer.extend_from_slice(chunk.as_ref());
        }
    }
}

#[derive(Default)]
struct Measured {
    round_trips: Vec<Duration>,
    answer_to_agent: Vec<Duration>,
    elapsed: Duration,
    /// CPU used meanwhile by this process (hosts and agents) and by PostgreSQL.
    cpu_here: Duration,
    cpu_database: Duration,
}

/// CPU this process has used so far (user + system).
fn own_cpu() -> Duration {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| postgres::process_cpu(&stat))
        .map_or(Duration::ZERO, |(_, _, cpu)| cpu)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

impl Measured {
    fn rate(&self) -> f64 {
        self.round_trips.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn summary(&mut self) -> String {
        self.round_trips.sort();
        self.answer_to_agent.sort();
        let per_trip =
            |cpu: Duration| cpu.as_secs_f64() * 1e6 / self.round_trips.len().max(1) as f64;
        format!(
            "{} in {:.1} s = {:.0}/s; p50 {:.2} ms, p99 {:.2} ms; answer → agent p50 {:.2} ms, p99 {:.2} ms; \
             CPU per round trip {:.0} µs here + {:.0} µs PostgreSQL",
            self.round_trips.len(),
            self.elapsed.as_secs_f64(),
            self.rate(),
            percentile(&self.round_trips, 0.5),
            percentile(&self.round_trips, 0.99),
            percentile(&self.answer_to_agent, 0.5),
            percentile(&self.answer_to_agent, 0.99),
            per_trip(self.cpu_here),
            per_trip(self.cpu_database),
        )
    }
}

#[allow(clippy::too_many_arguments)]
async fn agent(
    client: reqwest::Client,
    ask_base: String,
    page_base: String,
    token: String,
    session: String,
    stop: Arc<AtomicBool>,
) -> (Vec<Duration>, Vec<Duration>) {
    let events = client
        .get(format!("{page_base}/api/sessions/{session}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("open events");
    let mut frames = Frames {
        body: events.bytes_stream(),
        buffer: Vec::new(),
    };
    let (mut round_trips, mut deliveries) = (Vec::new(), Vec::new());
    let mut previous: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let ask = tokio::spawn(
            client
                .post(format!("{ask_base}/api/sessions/{session}/ask"))
                .bearer_auth(&token)
                .body(REQUEST)
                .send(),
        );
        let id = frames.next_requested_id().await;
        let answering = Instant::now();
        let answered = client
            .post(format!(
                "{page_base}/api/sessions/{session}/questions/{id}/answer"
            ))
            .bearer_auth(&token)
            .body(ANSWER)
            .send()
            .await
            .expect("answer");
        if answered.status() != 200 {
            let status = answered.status();
            let body = answered.text().await.unwrap_or_default();
            panic!(
                "{session}: the answer to {id} through {page_base} got {status}: {body} \
                 (this agent's previous question: {previous:?})"
            );
        }
        previous = Some(id);
        let response = ask.await.expect("ask task").expect("ask");
        deliveries.push(answering.elapsed());
        assert_eq!(response.status(), 200);
        assert!(!response.bytes().await.expect("body").is_empty());
        round_trips.push(started.elapsed());
    }
    (round_trips, deliveries)
}

/// Starts `count` hosts sharing `store` (`None`: one host on SQLite).
async fn hosts(count: usize, store: Option<&str>, token: &str) -> Vec<(String, AppState)> {
    let mut hosts = Vec::new();
    for i in 0..count {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let config = HostConfig::new(token, port);
        let record: Arc<dyn ask_user_host::server::store::Store> = match store {
            Some(url) => {
                let config = ask_user_host::server::store::postgres::parse_url(url).expect("url");
                Arc::new(
                    ask_user_host::server::store::postgres::PostgresStore::connect(
                        config,
                        Default::default(),
                    )
                    .await
                    .expect("the shared store"),
                )
            }
            None => {
                let dir = std::env::temp_dir()
                    .join(format!("ask-user-bench-sqlite-{}-{i}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                ask_user_host::data_dir::ensure_private_dir(&dir).expect("dir");
                Arc::new(ask_user_host::server::store::SqliteStore::open(&dir).expect("sqlite"))
            }
        };
        let state = AppState::recording(config, record);
        if let Some(shared) = state.record().shared() {
            shared.ready().await;
        }
        tokio::spawn(serve(listener, state.clone()));
        hosts.push((format!("http://127.0.0.1:{port}"), state));
    }
    hosts
}

async fn phase(
    pg: &Postgres,
    name: &str,
    hosts: &[(String, AppState)],
    token: &str,
    seconds: Duration,
) -> Measured {
    phase_of(pg, AGENTS, name, hosts, token, seconds).await
}

async fn phase_of(
    pg: &Postgres,
    agents: usize,
    name: &str,
    hosts: &[(String, AppState)],
    token: &str,
    seconds: Duration,
) -> Measured {
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(4 * AGENTS)
        .build()
        .expect("client");
    let mut result = Measured::default();
    for secs in [Duration::from_secs(1), seconds] {
        let stop = Arc::new(AtomicBool::new(false));
        let agents: Vec<_> = (0..agents)
            .map(|i| {
                let ask_base = hosts[i % hosts.len()].0.clone();
                let page_base = hosts[(i + 1) % hosts.len()].0.clone();
                tokio::spawn(agent(
                    client.clone(),
                    ask_base,
                    page_base,
                    token.to_owned(),
                    format!("{name}-{}-{i}", secs.as_millis()),
                    stop.clone(),
                ))
            })
            .collect();
        let started = Instant::now();
        if secs == seconds {
            statements(pg, None).await;
        }
        let (cpu_here, cpu_database) = (own_cpu(), pg.cpu());
        tokio::time::sleep(secs).await;
        stop.store(true, Ordering::Relaxed);
        let mut measured = Measured::default();
        for agent in agents {
            let (round_trips, deliveries) = agent.await.expect("agent");
            measured.round_trips.extend(round_trips);
            measured.answer_to_agent.extend(deliveries);
        }
        measured.elapsed = started.elapsed();
        measured.cpu_here = own_cpu().saturating_sub(cpu_here);
        measured.cpu_database = pg.cpu().saturating_sub(cpu_database);
        if secs == seconds {
            statements(pg, Some(measured.round_trips.len())).await;
        }
        result = measured;
    }
    result
}

/// Creates database `name` beside the one of `url` and returns its URL.
async fn database(url: &str, name: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to create a database");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create the phase's database");
    format!("{}{name}", url.trim_end_matches("postgres"))
}

/// With `ASK_USER_BENCH_PG_STATS=1`: resets PostgreSQL's statement statistics
/// (`None`), or prints the statements run since, per round trip.
async fn statements(pg: &Postgres, round_trips: Option<usize>) {
    if std::env::var_os("ASK_USER_BENCH_PG_STATS").is_none() {
        return;
    }
    let (client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect for statistics");
    tokio::spawn(connection);
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .expect("pg_stat_statements (ASK_USER_BENCH_PG_STATS)");
    let Some(round_trips) = round_trips else {
        client
            .batch_execute("SELECT pg_stat_statements_reset()")
            .await
            .expect("reset");
        return;
    };
    let rows = client
        .query(
            "SELECT calls, total_exec_time, rows, query FROM pg_stat_statements \
             WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 15",
            &[],
        )
        .await
        .expect("statements");
    let per = round_trips.max(1) as f64;
    println!("    statements per round trip (calls, ms of execution, rows):");
    for row in rows {
        let calls: i64 = row.get(0);
        let ms: f64 = row.get(1);
        let rows: i64 = row.get(2);
        let query: String = row.get(3);
        let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
        println!(
            "      {:6.3} calls {:7.1} µs {:6.2} rows  {}",
            calls as f64 / per,
            ms * 1e3 / per,
            rows as f64 / per,
            query.chars().take(110).collect::<String>()
        );
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let seconds = Duration::from_secs(
        std::env::var("ASK_USER_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10),
    );
    println!(
        "shared store bench: {AGENTS} agents, {} s a phase; load average {} before",
        seconds.as_secs(),
        load_average()
    );
    let pg = Postgres::start();
    let token = random_token();
    let url = pg.url();

    let mut sqlite = phase(
        &pg,
        "sqlite",
        &hosts(1, None, &token).await,
        &token,
        seconds,
    )
    .await;
    println!("  1 host, SQLite:      {}", sqlite.summary());
    // A database for each set-up: the one host stays up (its tasks end with
    // the runtime), and on the same database it would follow, and re-read,
    // every question of the three hosts' phase (NOTIFY stays in a database).
    let one_url = database(&url, "pg1").await;
    let mut one = phase(
        &pg,
        "pg1",
        &hosts(1, Some(&one_url), &token).await,
        &token,
        seconds,
    )
    .await;
    println!("  1 host, PostgreSQL:  {}", one.summary());
    let three_url = database(&url, "pg3").await;
    let three_hosts = hosts(3, Some(&three_url), &token).await;
    let mut three = phase(&pg, "pg3", &three_hosts, &token, seconds).await;
    println!(
        "  3 hosts, PostgreSQL: {} (every round trip crosses hosts)",
        three.summary()
    );
    let mut alone = phase_of(&pg, 1, "pg3-alone", &three_hosts, &token, seconds).await;
    println!(
        "  3 hosts, PostgreSQL, one agent (no queueing): {}",
        alone.summary()
    );

    println!(
        "  ratios: 1 host PostgreSQL / SQLite {:.2}; 3 hosts / 1 host PostgreSQL {:.2} (goal ≥ 1: {})",
        one.rate() / sqlite.rate(),
        three.rate() / one.rate(),
        if three.rate() >= one.rate() {
            "goal met"
        } else {
            "goal missed"
        }
    );
    for (agents, measured) in [("64 agents", &three), ("one agent", &alone)] {
        let cross = percentile(&measured.answer_to_agent, 0.5);
        let verdict = if cross <= 20.0 {
            "goal met"
        } else {
            "goal missed"
        };
        println!(
            "  cross-host answer → agent p50, {agents}: {cross:.2} ms (goal ≤ 20 ms: {verdict})"
        );
    }
    println!("  load average {} after", load_average());
    // The hosts' tasks end with the runtime; the database with `pg`.
    drop(pg);
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("ask-user-bench-sqlite-{}-0", std::process::id())),
    );
    std::process::exit(0);
}
