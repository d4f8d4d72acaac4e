//! Browser bench of the one binary (run by `cargo xtask bench`, which builds
//! `target/dist/ask-user` and sets `ASK_USER_BIN` and `CHROMEDRIVER`):
//! `ask-user serve` started from an empty folder, headless Chromium on its page.
//!
//! 1. Bytes on the wire: every request of a first load (cache cleared) and of
//!    a second load, from the page's Resource Timing (`transferSize`: headers
//!    and body as sent, brotli); the same files gzipped, asked for over HTTP.
//! 2. Navigation → composer usable: from navigation start to the message box
//!    on screen with the event stream open, measured in the page
//!    (`performance.now()`), first loads with the cache cleared and second loads.
//! 3. Ask → question visible: the page itself asks (`fetch` of the agent's
//!    `POST …/ask`, same origin, the host's cookie) and times the question card
//!    to the next animation frame after it is in the DOM.
//! 4. Submit → the agent's call returns: a click on Submit to that `fetch`
//!    resolving with the answer.
//!
//! Timings are taken inside the browser, so WebDriver's own latency is not in
//! them. `ASK_USER_BENCH_RUNS` sets the runs per figure (default 15).

use ask_user_tests::browser::Browser;
use ask_user_tests::host_process::{HostProcess, host_binary};
use ask_user_tests::wait::PATIENCE;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Records, on every page, when the message box is on screen with the event
/// stream open (`window.__auqBench.usable`, ms since navigation start).
const INSTRUMENT: &str = r#"
(() => {
  const bench = (window.__auqBench = { usable: null, streamOpen: null });
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('open', () => {
        if (bench.streamOpen === null) bench.streamOpen = performance.now();
        check();
      });
    }
  };
  function check() {
    if (bench.usable !== null || bench.streamOpen === null) return;
    const box = document.querySelector('[data-auq=message-composer]');
    if (box && box.checkVisibility()) {
      bench.usable = performance.now();
      observer.disconnect();
    }
  }
  const observer = new MutationObserver(check);
  observer.observe(document, { childList: true, subtree: true, attributes: true });
})();
"#;

/// Every request of the current page: (name, transferSize, encodedBodySize, decodedBodySize).
const RESOURCES: &str = r#"
const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
return entries.map((e) => [e.name, e.transferSize, e.encodedBodySize, e.decodedBodySize]);
"#;

const REQUEST: &str = r#"{"questions": [{"id": "db", "header": "Database",
  "question": "Which database should the service use?",
  "options": [{"label": "Postgres (Recommended)", "description": "Runs everywhere we deploy."},
              {"label": "SQLite", "description": "One file, no server."}]}]}"#;

/// Asks from the page and resolves with the ms until the card is on screen.
const ASK: &str = r#"
const done = arguments[arguments.length - 1];
const request = arguments[0];
const t0 = performance.now();
window.__auqAsk = fetch('/api/sessions/default/ask', {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: request,
}).then((r) => r.json().then((body) => ({ status: r.status, body, at: performance.now() })));
const shown = () => {
  const card = document.querySelector('[data-auq=question-composer]');
  return card && card.checkVisibility() && card.querySelector('[data-auq=option]');
};
const finish = () => requestAnimationFrame(() => done(performance.now() - t0));
if (shown()) finish();
else {
  const observer = new MutationObserver(() => {
    if (shown()) { observer.disconnect(); finish(); }
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
}
"#;

/// Chooses SQLite, then clicks Submit and resolves with the ms until the
/// page's ask returns, and what it returned.
const SUBMIT: &str = r#"
const done = arguments[arguments.length - 1];
const options = [...document.querySelectorAll('[data-auq=question-composer] [data-auq=option]')];
options.find((o) => o.getAttribute('data-label') === 'SQLite').click();
requestAnimationFrame(() => {
  const t0 = performance.now();
  document.querySelector('[data-auq=submit]').click();
  window.__auqAsk.then((r) => done({ ms: r.at - t0, status: r.status, body: r.body }));
});
"#;

/// Resolves once the message box is back (the question resolved).
const IDLE: &str = r#"
const done = arguments[arguments.length - 1];
const idle = () => {
  const box = document.querySelector('[data-auq=message-composer]');
  const card = document.querySelector('[data-auq=question-composer]');
  return box && box.checkVisibility() && !(card && card.checkVisibility());
};
if (idle()) done(true);
else {
  const observer = new MutationObserver(() => { if (idle()) { observer.disconnect(); done(true); } });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
}
"#;

struct Resource {
    name: String,
    transfer: f64,
    encoded: f64,
    decoded: f64,
}

fn median_and_p90(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.9))
}

fn verdict(value: f64, goal: f64) -> &'static str {
    if value <= goal { "met" } else { "MISSED" }
}

async fn wait_usable(browser: &Browser) -> f64 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let usable = browser
            .client()
            .execute(
                "return window.__auqBench ? window.__auqBench.usable : null;",
                vec![],
            )
            .await
            .expect("the page answers");
        if let Some(ms) = usable.as_f64() {
            return ms;
        }
        assert!(
            Instant::now() < deadline,
            "the composer never became usable"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn resources(browser: &Browser) -> Vec<Resource> {
    let list = browser
        .client()
        .execute(RESOURCES, vec![])
        .await
        .expect("resource timing");
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| Resource {
            name: e[0].as_str().unwrap_or_default().to_owned(),
            transfer: e[1].as_f64().unwrap_or_default(),
            encoded: e[2].as_f64().unwrap_or_default(),
            decoded: e[3].as_f64().unwrap_or_default(),
        })
        // The event stream is not part of the page's load.
        .filter(|r| !r.name.contains("/api/"))
        .collect()
}

async fn navigate(browser: &Browser, url: &str, clear_cache: bool) -> f64 {
    if clear_cache {
        browser
            .cdp("Network.clearBrowserCache", json!({}))
            .await
            .expect("the cache clears");
        // The app's service worker (issue 22) keeps the hashed files in its
        // own cache: without this a "first load" takes the wasm from there.
        let origin = url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        browser
            .cdp(
                "Storage.clearDataForOrigin",
                json!({ "origin": origin, "storageTypes": "cache_storage,service_workers" }),
            )
            .await
            .expect("the worker and its cache clear");
    }
    browser.goto(url).await.expect("the page loads");
    wait_usable(browser).await
}

fn kb(bytes: f64) -> f64 {
    bytes / 1000.0
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("ASK_USER_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let empty = std::env::temp_dir().join(format!("ask-user-bench-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("a scratch folder");
    let host = HostProcess::start_in(&empty, &[]).expect("the host starts and prints its URL");
    let http = reqwest::Client::new();
    let index = http
        .get(host.url())
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .expect("the page");
    let index = index.text().await.unwrap_or_default();
    assert!(
        // Trunk minifies the release index (`<script type=module>`).
        index.contains("<script type=module>") || index.contains("<script type=\"module\">"),
        "{} carries no page (build it with `cargo xtask dist`); / says: {index}",
        host_binary().display()
    );
    let browser = Browser::launch_with_args(&["--lang=en-US"])
        .await
        .expect("headless Chromium starts");
    browser
        .cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": INSTRUMENT }),
        )
        .await
        .expect("the instrumentation installs");
    let page = format!("{}/", host.origin());

    // The token landing sets the cookie; then every measured load is plain `/`.
    browser.goto(host.url()).await.expect("the landing");
    wait_usable(&browser).await;

    let mut first = Vec::new();
    let mut first_load = Vec::new();
    for run in 0..runs {
        first.push(navigate(&browser, &page, true).await);
        if run == 0 {
            first_load = resources(&browser).await;
        }
    }
    let mut second = Vec::new();
    let mut second_load = Vec::new();
    for run in 0..runs {
        second.push(navigate(&browser, &page, false).await);
        if run == 0 {
            second_load = resources(&browser).await;
        }
    }

    // Gzip: the same files, asked for as a client without brotli would.
    let mut gzip_total = 0.0;
    for resource in &first_load {
        let body = http
            .get(&resource.name)
            .header("accept-encoding", "gzip")
            .send()
            .await
            .expect("the file")
            .bytes()
            .await
            .expect("its bytes");
        gzip_total += body.len() as f64;
    }
    let transfer = |list: &[Resource]| list.iter().map(|r| r.transfer).sum::<f64>();
    let decoded: f64 = first_load.iter().map(|r| r.decoded).sum();
    let first_bytes = transfer(&first_load);
    let second_bytes = transfer(&second_load);
    println!(
        "first load (cache cleared): {} requests, {:.1} KB transferred (brotli; goal ≤ 100 KB: {}), \
         {:.1} KB decoded; the same files gzipped {:.1} KiB (goal ≤ 130 KiB: {})",
        first_load.len(),
        kb(first_bytes),
        verdict(kb(first_bytes), 100.0),
        kb(decoded),
        gzip_total / 1024.0,
        verdict(gzip_total / 1024.0, 130.0),
    );
    for resource in &first_load {
        let name = resource.name.rsplit('/').next().unwrap_or_default();
        println!(
            "    {:>8.1} KB transferred, {:>8.1} KB body, {:>8.1} KB decoded  /{name}",
            kb(resource.transfer),
            kb(resource.encoded),
            kb(resource.decoded),
        );
    }
    let wasm_refetched = second_load
        .iter()
        .any(|r| r.name.ends_with(".wasm") && r.transfer > 0.0);
    println!(
        "second load (cached): {} requests, {:.2} KB transferred (goal ≤ 10 KB: {}); wasm fetched again: {}",
        second_load.len(),
        kb(second_bytes),
        verdict(kb(second_bytes), 10.0),
        if wasm_refetched { "YES" } else { "no" }
    );
    let (median, p90) = median_and_p90(&mut first);
    println!(
        "navigation → composer usable, first load ({runs} runs, cache cleared): median {median:.0} ms, p90 {p90:.0} ms (goal ≤ 150 ms: {})",
        verdict(median, 150.0)
    );
    let (median, p90) = median_and_p90(&mut second);
    println!(
        "navigation → composer usable, second load ({runs} runs, cached): median {median:.0} ms, p90 {p90:.0} ms"
    );

    let mut asks = Vec::new();
    let mut submits = Vec::new();
    for _ in 0..runs {
        let shown = browser
            .client()
            .execute_async(ASK, vec![Value::from(REQUEST)])
            .await
            .expect("the question shows");
        asks.push(shown.as_f64().expect("ms"));
        let answered = browser
            .client()
            .execute_async(SUBMIT, vec![])
            .await
            .expect("the answer returns");
        assert_eq!(answered["status"], 200, "{answered}");
        assert_eq!(
            answered["body"],
            json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}),
            "the agent gets the answer given"
        );
        submits.push(answered["ms"].as_f64().expect("ms"));
        browser
            .client()
            .execute_async(IDLE, vec![])
            .await
            .expect("the message box returns");
    }
    let (median, p90) = median_and_p90(&mut asks);
    println!(
        "ask → question visible ({runs} runs): median {median:.1} ms, p90 {p90:.1} ms (goal ≤ 30 ms: {})",
        verdict(median, 30.0)
    );
    let (median, p90) = median_and_p90(&mut submits);
    println!(
        "Submit → the agent's call returns ({runs} runs): median {median:.1} ms, p90 {p90:.1} ms (goal ≤ 10 ms: {})",
        verdict(median, 10.0)
    );
    let errors = browser.page_errors().await.unwrap_or_default();
    browser.close().await;
    drop(host);
    std::fs::remove_dir_all(&empty).ok();
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
}
