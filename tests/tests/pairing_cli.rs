//! `ask-user pair` and `ask-user devices` against a real host behind the TLS
//! front: the terminal shows the link (and its QR code), asks whether to
//! allow the device that opened it, and the device then collects its
//! credential; `devices` lists it and revokes it.

use ask_user_tests::host_process::{HostProcess, host_binary};
use ask_user_tests::tls_front::{PHONE_HOST, TestCert, TlsFront, https, request};
use ask_user_tests::wait::PATIENCE;
use hyper::StatusCode;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PIXEL_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";

fn wait_for(output: &Mutex<String>, needle: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = output.lock().unwrap().clone();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cli(host: &HostProcess, args: &[&str]) -> std::process::Output {
    Command::new(host_binary())
        .args(args)
        .args(["--url", host.origin()])
        .env("ASK_USER_TOKEN", host.token().unwrap())
        .output()
        .expect("run ask-user")
}

#[tokio::test]
async fn pair_in_the_terminal_then_list_and_revoke_with_devices() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let dist = std::env::temp_dir().join(format!("auq-pair-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><title>page</title>",
    )
    .unwrap();
    let host = HostProcess::start(&dist, &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());

    let mut pair = Command::new(host_binary())
        .args(["pair", "--url", host.origin()])
        .env("ASK_USER_TOKEN", host.token().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ask-user pair");
    let output = Arc::new(Mutex::new(String::new()));
    let mut stdout = pair.stdout.take().unwrap();
    let sink = output.clone();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 256];
        while let Ok(n @ 1..) = stdout.read(&mut buffer) {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });

    let shown = wait_for(&output, "/pair#");
    assert!(
        shown.contains('▀') || shown.contains('▄'),
        "a QR code: {shown}"
    );
    let link_start = shown
        .find(&front.origin())
        .expect("the link names the remote origin");
    let code: String = shown[link_start..]
        .split_once('#')
        .unwrap()
        .1
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_eq!(code.len(), 32);

    let authority = format!("{PHONE_HOST}:{}", front.port());
    let claim_body = format!(r#"{{"code":"{code}","name":"Pixel 8"}}"#);
    let claim = https(
        &cert,
        front.port(),
        request(
            "POST",
            &authority,
            "/api/pair/claim",
            &[("user-agent", PIXEL_UA)],
            &claim_body,
        ),
    )
    .await;
    assert_eq!(claim.status, StatusCode::ACCEPTED);

    wait_for(
        &output,
        "Allow Pixel 8 (Chrome, Android) to answer questions? [y/N]",
    );
    pair.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let status = pair.wait().unwrap();
    assert!(status.success());
    wait_for(&output, "Pixel 8 is allowed");

    let collect_body = format!(r#"{{"code":"{code}"}}"#);
    let collected = https(
        &cert,
        front.port(),
        request("POST", &authority, "/api/pair/collect", &[], &collect_body),
    )
    .await;
    assert_eq!(collected.status, StatusCode::OK);
    let id = collected.json()["device"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let listed = cli(&host, &["devices"]);
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    assert!(
        listed_text.contains(&id)
            && listed_text.contains("Pixel 8 ")
            && listed_text.contains("Chrome, Android")
            && listed_text.contains("never answered"),
        "{listed_text}"
    );

    // The device answers an agent's question; the list says when.
    let cookie = collected.headers["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let question = serde_json::json!({"questions": [{"id": "ship", "question": "Ship it?",
        "options": [{"label": "Yes"}, {"label": "No"}]}]});
    let agent = tokio::spawn(
        reqwest::Client::new()
            .post(format!("{}/api/sessions/s1/ask", host.origin()))
            .bearer_auth(host.token().unwrap())
            .json(&question)
            .send(),
    );
    let deadline = Instant::now() + PATIENCE;
    let asked = loop {
        let listed: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/api/sessions/s1/questions", host.origin()))
            .bearer_auth(host.token().unwrap())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if let Some(id) = listed["pending"][0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(Instant::now() < deadline, "the question never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let origin = front.origin();
    let answered = https(
        &cert,
        front.port(),
        request(
            "POST",
            &authority,
            &format!("/api/sessions/s1/questions/{asked}/answer"),
            &[
                ("cookie", cookie.as_str()),
                ("origin", origin.as_str()),
                ("content-type", "application/json"),
            ],
            r#"{"answers": [{"id": "ship", "selected": ["Yes"]}]}"#,
        ),
    )
    .await;
    assert_eq!(answered.status, StatusCode::OK, "{:?}", answered.body);
    agent.await.unwrap().unwrap();
    let listed = cli(&host, &["devices"]);
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed_text.contains("last answer 20"), "{listed_text}");
    let listed = cli(&host, &["devices", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let device = &list["devices"][0];
    assert!(
        device["last_answer_ms"].as_u64() >= device["paired_at_ms"].as_u64(),
        "{list}"
    );
    let revoked = cli(&host, &["devices", "--revoke", &id]);
    assert!(revoked.status.success(), "{revoked:?}");
    let after = cli(&host, &["devices", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(list, serde_json::json!({"devices": []}));
    let again = cli(&host, &["devices", "--revoke", &id]);
    assert!(!again.status.success());
    let _ = std::fs::remove_dir_all(&dist);
}

#[test]
fn pair_refuses_a_host_on_another_machine() {
    let output = Command::new(host_binary())
        .args(["pair", "--url", "http://192.0.2.1:7411", "--token", "x"])
        .output()
        .expect("run ask-user pair");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not this machine"), "{stderr}");
}
