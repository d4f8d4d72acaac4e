//! Bench of push (issue 22): an agent's ask on loopback → the push accepted by
//! a stub push service on 127.0.0.1 (the host in-process, nobody present, one
//! paired device subscribed through the harness's TLS front). Each run asks,
//! waits for the stub to take the push, then answers (which sends the closing
//! follow-up, not measured).
//!
//! `cargo run -p ask-user-tests --example push_bench --release`;
//! `ASK_USER_BENCH_RUNS` sets the runs (default 200).

use ask_user_host::server::push::EndpointPolicy;
use ask_user_host::server::push::service::PushConfig;
use ask_user_host::server::security::RemoteOrigin;
use ask_user_tests::http_host::TestHost;
use ask_user_tests::push_stub::{PushStub, TestSubscription};
use ask_user_tests::tls_front::{PHONE_HOST, TestCert, TlsFront, https, request};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("ASK_USER_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let origin = front.origin();
    let host = TestHost::start_with(|config| {
        config.remote = Some(RemoteOrigin::parse(&origin).unwrap());
        config.push = Some(PushConfig {
            key_dir: None,
            policy: EndpointPolicy::AllowLoopbackHttp,
            contact: Some(origin.clone()),
        });
    })
    .await;
    front.forward_to_origin(&host.base);
    let stub = PushStub::start().await;
    let authority = format!("{PHONE_HOST}:{}", front.port());
    let phone = |method: &str, path: &str, cookie: Option<&str>, body: String| {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("origin", origin.as_str()),
        ];
        if let Some(cookie) = cookie {
            headers.push(("cookie", cookie));
        }
        https(
            &cert,
            front.port(),
            request(method, &authority, path, &headers, &body),
        )
    };

    // Pair and subscribe one device.
    let (_, opened) = host.post("/api/pairings", "{}").await;
    let (id, code) = (
        opened["id"].as_str().unwrap(),
        opened["code"].as_str().unwrap(),
    );
    phone(
        "POST",
        "/api/pair/claim",
        None,
        json!({"code": code, "name": "bench"}).to_string(),
    )
    .await;
    host.post(&format!("/api/pairings/{id}/approve"), "{}")
        .await;
    let collected = phone(
        "POST",
        "/api/pair/collect",
        None,
        json!({"code": code}).to_string(),
    )
    .await;
    let cookie = collected.headers["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let subscription = TestSubscription::new(stub.endpoint("bench"));
    let put = phone(
        "PUT",
        "/api/push/subscription",
        Some(&cookie),
        subscription.to_json().to_string(),
    )
    .await;
    assert_eq!(put.status, 204, "{:?}", put.body);

    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs {
        let before = stub.received().len();
        let started = Instant::now();
        let agent = host.ask(
            "bench",
            "",
            &json!({"questions": [{"id": "q", "question": format!("Run {run}?"),
                "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        );
        let got = stub.wait_for("bench", before + 1).await;
        samples.push(got[before].at - started);
        let pending = host.pending_ids("bench").await;
        host.answer(
            "bench",
            &pending[0],
            &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
        )
        .await;
        agent.await.unwrap();
        // The closing follow-up.
        stub.wait_for("bench", before + 2).await;
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "ask → push accepted by the stub: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({runs} runs)",
        ms(samples[samples.len() / 2]),
        ms(samples[(samples.len() * 99 / 100).min(samples.len() - 1)]),
        ms(*samples.last().unwrap()),
    );
}
