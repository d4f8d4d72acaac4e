//! Fault run of several hosts on one PostgreSQL (issue 24): `cargo xtask soak
//! --hosts 3 [--store postgres://…] [--minutes N]`, not in CI; or `cargo run
//! --profile release-native -p ask-user-host --example soak_shared -- --hosts 3
//! --minutes N --host-bin PATH [--store URL]` (the password in `PGPASSWORD`).
//! Without `--store` it starts a PostgreSQL of its own.
//!
//! 64 agents, each in its own session, ask through a random live host; each
//! question carries a nonce its answer must bring back. A scripted person
//! answers what any live host lists. Every 10-30 s a random host is killed
//! with `-9` and started again 2 s later; an agent whose host died asks the
//! same again through another (reattaching, or collecting the answer given
//! meanwhile). At the end the agents finish what they wait on, then:
//!
//! - **answers lost**: answers a host accepted (200) that no agent received
//!   (must be 0);
//! - **delivered twice**: a nonce an agent received twice, or one it did not
//!   ask (must be 0).

use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "shared/postgres.rs"]
mod postgres;

const AGENTS: usize = 64;
const TOKEN: &str = "soak-shared-token-0123456789abcdef";

struct Hosts {
    bin: String,
    env: Vec<(String, String)>,
    dir: std::path::PathBuf,
    /// Each slot's process and origin, `None` while it is down.
    slots: Mutex<Vec<Option<(Child, String)>>>,
}

impl Hosts {
    fn start(&self, slot: usize) -> (Child, String) {
        let data = self.dir.join(format!("host-{slot}"));
        std::fs::create_dir_all(&data).expect("data dir");
        let mut child = Command::new(&self.bin)
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("ASK_USER_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the host starts");
        let stdout = child.stdout.take().expect("piped");
        let mut lines = std::io::BufReader::new(stdout).lines();
        let origin = loop {
            let line = lines.next().expect("a URL line").expect("stdout");
            if let Some(rest) = line.strip_prefix("http://") {
                let authority = rest.split('/').next().unwrap_or_default();
                break format!("http://{authority}");
            }
        };
        // Keep draining stdout so the host never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        (child, origin)
    }

    fn live(&self) -> Vec<String> {
        let slots = self.slots.lock().unwrap();
        slots
            .iter()
            .flatten()
            .map(|(_, origin)| origin.clone())
            .collect()
    }

    fn any(&self) -> Option<String> {
        let live = self.live();
        (!live.is_empty()).then(|| live[rand::random_range(0..live.len())].clone())
    }
}

#[derive(Default)]
struct Tally {
    accepted: Mutex<HashSet<String>>,
    delivered: Mutex<HashMap<String, u32>>,
    wrong: AtomicU64,
    asks: AtomicU64,
    retried: AtomicU64,
    kills: AtomicU64,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(40))
        .build()
        .expect("client")
}

async fn agent(index: usize, hosts: Arc<Hosts>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let client = client();
    let session = format!("agent-{index}");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let nonce = format!("{index}-{n}-{:08x}", rand::random::<u32>());
        let request = json!({"questions": [{"id": "n", "question": format!("nonce {nonce}")}]});
        tally.asks.fetch_add(1, Ordering::Relaxed);
        loop {
            let Some(origin) = hosts.any() else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let sent = client
                .post(format!("{origin}/api/sessions/{session}/ask"))
                .bearer_auth(TOKEN)
                .json(&request)
                .send()
                .await;
            let body = match sent {
                Ok(response) if response.status() == 200 => response.json::<Value>().await.ok(),
                _ => None,
            };
            let Some(body) = body else {
                // The host died, or the store was briefly away: the same again.
                tally.retried.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let got = body["answers"][0]["custom"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if got != nonce {
                tally.wrong.fetch_add(1, Ordering::Relaxed);
            }
            *tally.delivered.lock().unwrap().entry(got).or_default() += 1;
            break;
        }
    }
}

async fn person(hosts: Arc<Hosts>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let client = client();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Some(origin) = hosts.any() else { continue };
        let Ok(response) = client
            .get(format!("{origin}/api/sessions"))
            .bearer_auth(TOKEN)
            .send()
            .await
        else {
            continue;
        };
        let Ok(list) = response.json::<Value>().await else {
            continue;
        };
        let sessions: Vec<String> = list["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["pending"].as_u64().unwrap_or(0) > 0)
            .filter_map(|s| s["id"].as_str().map(str::to_owned))
            .collect();
        for session in sessions {
            let Some(origin) = hosts.any() else { break };
            let Ok(response) = client
                .get(format!("{origin}/api/sessions/{session}/questions"))
                .bearer_auth(TOKEN)
                .send()
                .await
            else {
                continue;
            };
            let Ok(pending) = response.json::<Value>().await else {
                continue;
            };
            for question in pending["pending"].as_array().into_iter().flatten() {
                let id = question["id"].as_str().unwrap_or_default();
                let text = question["request"]["questions"][0]["question"]
                    .as_str()
                    .unwrap_or_default();
                let Some(nonce) = text.strip_prefix("nonce ") else {
                    continue;
                };
                // Answered on another live host than the one that listed it, at random.
                let Some(origin) = hosts.any() else { break };
                let answered = client
                    .post(format!(
                        "{origin}/api/sessions/{session}/questions/{id}/answer"
                    ))
                    .bearer_auth(TOKEN)
                    .json(&json!({"answers": [{"id": "n", "custom": nonce}]}))
                    .send()
                    .await;
                if answered.is_ok_and(|r| r.status() == 200) {
                    tally.accepted.lock().unwrap().insert(nonce.to_owned());
                }
            }
        }
    }
}

async fn killer(hosts: Arc<Hosts>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_secs(rand::random_range(10..30))).await;
        let count = hosts.slots.lock().unwrap().len();
        let slot = rand::random_range(0..count);
        let taken = hosts.slots.lock().unwrap()[slot].take();
        if let Some((mut child, origin)) = taken {
            let _ = child.kill();
            let _ = child.wait();
            tally.kills.fetch_add(1, Ordering::Relaxed);
            println!("  killed host {slot} ({origin}) with -9");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let started = tokio::task::block_in_place(|| hosts.start(slot));
        println!("  restarted host {slot} on {}", started.1);
        hosts.slots.lock().unwrap()[slot] = Some(started);
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let minutes: f64 = value("--minutes")
        .and_then(|m| m.parse().ok())
        .unwrap_or(10.0);
    let count: usize = value("--hosts").and_then(|h| h.parse().ok()).unwrap_or(3);
    let bin = value("--host-bin").expect("--host-bin PATH");
    let own = value("--store").is_none().then(postgres::Postgres::start);
    let url = value("--store").unwrap_or_else(|| own.as_ref().expect("started").url());
    let mut env = vec![("ASK_USER_STORE".to_owned(), url)];
    if let Ok(password) = std::env::var("PGPASSWORD") {
        env.push(("PGPASSWORD".to_owned(), password));
    }
    let dir = std::env::temp_dir().join(format!("ask-user-soak-shared-{}", std::process::id()));
    let hosts = Arc::new(Hosts {
        bin,
        env,
        dir: dir.clone(),
        slots: Mutex::new(Vec::new()),
    });
    for slot in 0..count {
        let started = hosts.start(slot);
        hosts.slots.lock().unwrap().push(Some(started));
    }
    println!(
        "soak: {count} hosts on one PostgreSQL, {AGENTS} agents, {minutes} min, a host killed -9 every 10-30 s"
    );
    let tally = Arc::new(Tally::default());
    let (stop_agents, stop_rest) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let agents: Vec<_> = (0..AGENTS)
        .map(|i| tokio::spawn(agent(i, hosts.clone(), tally.clone(), stop_agents.clone())))
        .collect();
    let person = tokio::spawn(person(hosts.clone(), tally.clone(), stop_rest.clone()));
    let killer = tokio::spawn(killer(hosts.clone(), tally.clone(), stop_agents.clone()));
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(minutes * 60.0)).await;
    stop_agents.store(true, Ordering::Relaxed);
    let _ = killer.await;
    // The agents finish what they wait on (the person keeps answering).
    let drained = futures_util::stream::iter(agents).for_each_concurrent(None, |a| async {
        let _ = a.await;
    });
    let _ = tokio::time::timeout(Duration::from_secs(120), drained).await;
    stop_rest.store(true, Ordering::Relaxed);
    let _ = person.await;

    let accepted = tally.accepted.lock().unwrap().clone();
    let delivered = tally.delivered.lock().unwrap().clone();
    let lost = accepted
        .iter()
        .filter(|n| !delivered.contains_key(*n))
        .count();
    let twice =
        delivered.values().filter(|&&n| n > 1).count() as u64 + tally.wrong.load(Ordering::Relaxed);
    println!(
        "after {:.1} min: {} asks, {} answers accepted, {} delivered, {} asks retried through another host, {} hosts killed",
        started.elapsed().as_secs_f64() / 60.0,
        tally.asks.load(Ordering::Relaxed),
        accepted.len(),
        delivered.values().sum::<u32>(),
        tally.retried.load(Ordering::Relaxed),
        tally.kills.load(Ordering::Relaxed),
    );
    println!("answers lost: {lost}; delivered twice (or to the wrong ask): {twice}");
    for (child, _) in hosts.slots.lock().unwrap().iter_mut().flatten() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    drop(own);
    std::process::exit(if lost == 0 && twice == 0 { 0 } else { 1 });
}
