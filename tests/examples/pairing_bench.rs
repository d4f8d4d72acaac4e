//! Bench of remote access (issue 21): the host (`ASK_USER_BIN`, by default
//! the debug build; `target/dist/ask-user` for figures) behind the harness's
//! TLS front (as `tailscale serve`), a phone played over HTTPS by this
//! process.
//!
//! 1. Pairing, link opened → paired: the phone's claim, the approval on
//!    loopback (as the page or `ask-user pair` sends it), the collect that
//!    returns the cookie; each run a new code.
//! 2. Ask → visible on the phone: an agent's `POST …/ask` on loopback to the
//!    `question/requested` frame arriving on the phone's event stream through
//!    the TLS front.
//! 3. Ask → visible on the phone's page: with `ASK_USER_E2E_DIST` naming
//!    the page's build, a phone-sized Chromium (390×844, touch) holding the
//!    device's cookie shows `https://phone.test:PORT/?session=bench`; from
//!    the agent's `POST …/ask` to the question's text in the page's DOM (a
//!    MutationObserver notes `Date.now()`; both clocks are this machine's).
//!
//! `cargo run -p ask-user-tests --example pairing_bench --release`;
//! `ASK_USER_BENCH_RUNS` sets the runs (default 30).

use ask_user_tests::host_process::HostProcess;
use ask_user_tests::tls_front::{PHONE_HOST, TestCert, TlsFront, https, https_open, request};
use http_body_util::BodyExt;
use std::time::{Duration, Instant};

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = samples[samples.len() / 2];
    let p90 = samples[samples.len() * 9 / 10];
    println!(
        "{name}: median {:.1} ms, p90 {:.1} ms, max {:.1} ms ({} runs)",
        ms(median),
        ms(p90),
        ms(*samples.last().unwrap()),
        samples.len()
    );
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("ASK_USER_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(30);
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let page = std::env::var_os("ASK_USER_E2E_DIST").map(std::path::PathBuf::from);
    let dist = page.clone().unwrap_or_else(|| {
        let dist = std::env::temp_dir().join(format!("auq-pair-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("index.html"),
            "<!doctype html><title>page</title>",
        )
        .unwrap();
        dist
    });
    let host = HostProcess::start(&dist, &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());
    let authority = format!("{PHONE_HOST}:{}", front.port());
    let loopback = reqwest::Client::new();
    let token = host.token().unwrap().to_owned();

    let mut pairing = Vec::new();
    let mut cookie = String::new();
    for _ in 0..runs {
        let opened: serde_json::Value = loopback
            .post(format!("{}/api/pairings", host.origin()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let (id, code) = (
            opened["id"].as_str().unwrap(),
            opened["code"].as_str().unwrap(),
        );
        let started = Instant::now();
        let claim = format!(r#"{{"code":"{code}","name":"Pixel 8"}}"#);
        let claimed = https(
            &cert,
            front.port(),
            request("POST", &authority, "/api/pair/claim", &[], &claim),
        )
        .await;
        assert_eq!(claimed.status, 202);
        let approved = loopback
            .post(format!("{}/api/pairings/{id}/approve", host.origin()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert!(approved.status().is_success());
        let collect = format!(r#"{{"code":"{code}"}}"#);
        let collected = https(
            &cert,
            front.port(),
            request("POST", &authority, "/api/pair/collect", &[], &collect),
        )
        .await;
        pairing.push(started.elapsed());
        assert_eq!(collected.status, 200);
        let set = collected.headers["set-cookie"].to_str().unwrap();
        cookie = set.split(';').next().unwrap().to_owned();
    }
    summary(
        "pairing, link opened → paired (claim, approve, collect)",
        pairing,
    );

    let stream = https_open(
        &cert,
        front.port(),
        request(
            "GET",
            &authority,
            "/api/sessions/bench/events",
            &[("cookie", &cookie)],
            "",
        ),
    )
    .await;
    assert_eq!(stream.status(), 200);
    let mut body = stream.into_body();
    let mut text = String::new();
    let mut visible = Vec::new();
    for n in 0..runs {
        let question = format!(
            r#"{{"questions":[{{"id":"q","question":"Ship {n}?","options":[{{"label":"Yes"}},{{"label":"No"}}]}}]}}"#
        );
        let started = Instant::now();
        let agent = tokio::spawn(
            loopback
                .post(format!(
                    "{}/api/sessions/bench/ask?timeout_ms=60000",
                    host.origin()
                ))
                .bearer_auth(&token)
                .body(question)
                .send(),
        );
        let needle = format!("Ship {n}?");
        while !text.contains(&needle) {
            let frame = body.frame().await.unwrap().unwrap();
            if let Some(data) = frame.data_ref() {
                text.push_str(&String::from_utf8_lossy(data));
            }
        }
        visible.push(started.elapsed());
        text.clear();
        // Cancel it on loopback so the next ask is a new question.
        let pending: serde_json::Value = loopback
            .get(format!("{}/api/sessions/bench/questions", host.origin()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = pending["pending"][0]["id"].as_str().unwrap();
        loopback
            .post(format!(
                "{}/api/sessions/bench/questions/{id}/cancel",
                host.origin()
            ))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let _ = agent.await;
    }
    summary(
        "ask → question/requested on the phone's stream through the TLS front",
        visible,
    );
    if page.is_none() {
        println!(
            "ask → visible on the phone's page: not measured (set ASK_USER_E2E_DIST to the page's build)"
        );
        let _ = std::fs::remove_dir_all(&dist);
        return;
    }
    let on_page = page_phase(runs, &cert, &front, &host, &cookie).await;
    summary(
        "ask → question visible on the phone's page (390 px) through the TLS front",
        on_page,
    );
}

/// Phase 3: the phone's page in Chromium; each run an ask on loopback and
/// the moment its text is in the page's DOM.
async fn page_phase(
    runs: usize,
    cert: &TestCert,
    front: &TlsFront,
    host: &HostProcess,
    cookie: &str,
) -> Vec<Duration> {
    use ask_user_tests::browser::Browser;
    use serde_json::json;
    let args = cert.chromium_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let phone = Browser::launch_with_args(&args)
        .await
        .expect("Chromium starts");
    phone
        .cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await
        .unwrap();
    let (name, value) = cookie.split_once('=').unwrap();
    phone
        .cdp(
            "Network.setCookie",
            json!({"name": name, "value": value, "url": front.origin(), "secure": true,
                   "httpOnly": true, "sameSite": "Strict", "path": "/"}),
        )
        .await
        .unwrap();
    phone
        .goto(&format!("{}/?session=bench", front.origin()))
        .await
        .unwrap();
    phone.wait_for_css("[data-auq=conversation]").await.unwrap();
    let loopback = reqwest::Client::new();
    let token = host.token().unwrap().to_owned();
    let mut samples = Vec::new();
    let wall_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1000.0
    };
    for n in 0..runs {
        let needle = format!("Deploy {n}?");
        phone
            .client()
            .execute(
                "const needle = arguments[0]; window.__seen = null;
                 const seen = () => [...document.querySelectorAll('.auq-question')].some(e => e.textContent === needle);
                 new MutationObserver((_, o) => { if (seen()) { window.__seen = Date.now(); o.disconnect(); } })
                   .observe(document.body, {childList: true, subtree: true, characterData: true});
                 return true;",
                vec![json!(needle)],
            )
            .await
            .unwrap();
        let question = json!({"questions": [{"id": "q", "question": needle,
            "options": [{"label": "Yes"}, {"label": "No"}]}]});
        let started = wall_ms();
        let agent = tokio::spawn(
            loopback
                .post(format!(
                    "{}/api/sessions/bench/ask?timeout_ms=60000",
                    host.origin()
                ))
                .bearer_auth(&token)
                .json(&question)
                .send(),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        let seen = loop {
            let seen = phone
                .client()
                .execute("return window.__seen", vec![])
                .await
                .unwrap();
            if let Some(at) = seen.as_f64() {
                break at;
            }
            assert!(
                Instant::now() < deadline,
                "run {n}: the question never showed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        samples.push(Duration::from_secs_f64(
            ((seen - started).max(0.0)) / 1000.0,
        ));
        let pending: serde_json::Value = loopback
            .get(format!("{}/api/sessions/bench/questions", host.origin()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = pending["pending"][0]["id"].as_str().unwrap();
        loopback
            .post(format!(
                "{}/api/sessions/bench/questions/{id}/cancel",
                host.origin()
            ))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let _ = agent.await;
    }
    let errors = phone.page_errors().await.unwrap();
    assert!(errors.is_empty(), "the phone's page: {errors:?}");
    phone.close().await;
    samples
}
