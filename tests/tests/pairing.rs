//! Pairing a device through the TLS front (as `tailscale serve`): the code,
//! the claim, the approval on loopback, the credential's cookie, answering
//! with it, revoking it (its stream ends, its next request is 401), and each
//! refusal: a reused, unknown or unapproved code, a denied pairing, a device
//! that tries to pair or revoke.

use ask_user_host::server::security::RemoteOrigin;
use ask_user_tests::http_host::TestHost;
use ask_user_tests::tls_front::{
    PHONE_HOST, Reply, TestCert, TlsFront, https_open, pair_phone, phone_request, request,
};
use ask_user_tests::wait::PATIENCE;
use http_body_util::BodyExt;
use hyper::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

struct Setup {
    host: TestHost,
    front: TlsFront,
    cert: TestCert,
    data_dir: Option<std::path::PathBuf>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Setup {
    async fn start() -> Self {
        Self::start_in(None, ask_user_host::server::devices::PAIRING_LIFE).await
    }

    /// With a SQLite store in a data directory of the test's own.
    async fn start_recording() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "auq-pairing-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        Self::start_in(Some(dir), ask_user_host::server::devices::PAIRING_LIFE).await
    }

    async fn start_in(data_dir: Option<std::path::PathBuf>, pairing_life: Duration) -> Self {
        let cert = TestCert::new();
        let mut front = TlsFront::bind(&cert).await;
        let origin = front.origin();
        let record: std::sync::Arc<dyn ask_user_host::server::store::Store> = match &data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).unwrap();
                std::sync::Arc::new(ask_user_host::server::store::SqliteStore::open(dir).unwrap())
            }
            None => std::sync::Arc::new(ask_user_host::server::store::EphemeralStore),
        };
        let host = TestHost::start_recording(
            |config| {
                config.remote = Some(RemoteOrigin::parse(&origin).unwrap());
                config.pairing_life = pairing_life;
            },
            record,
        )
        .await;
        front.forward_to_origin(&host.base);
        Self {
            host,
            front,
            cert,
            data_dir,
        }
    }

    fn authority(&self) -> String {
        format!("{PHONE_HOST}:{}", self.front.port())
    }

    /// A request from the phone, through the front.
    async fn phone(&self, method: &str, path: &str, cookie: Option<&str>, body: &Value) -> Reply {
        phone_request(&self.cert, &self.front, method, path, cookie, body).await
    }

    /// A pairing opened on loopback with the token: (id, code, url).
    async fn open_pairing(&self) -> (String, String, String) {
        let (status, body) = self.host.post("/api/pairings", "{}").await;
        assert_eq!(status, reqwest::StatusCode::OK, "{body}");
        (
            body["id"].as_str().unwrap().to_owned(),
            body["code"].as_str().unwrap().to_owned(),
            body["url"].as_str().unwrap().to_owned(),
        )
    }

    /// Opened, claimed as "Pixel 8" and approved: the device's cookie pair.
    async fn paired(&self) -> (String, String) {
        self.paired_as("Pixel 8").await
    }

    /// Opened, claimed as `name` (from a browser without a device cookie)
    /// and approved: (the device's id, its cookie pair).
    async fn paired_as(&self, name: &str) -> (String, String) {
        pair_phone(&self.host, &self.cert, &self.front, name).await
    }
}

#[tokio::test]
async fn a_device_pairs_only_after_approval_and_answers_with_its_own_cookie() {
    let setup = Setup::start().await;
    let (id, code, url) = setup.open_pairing().await;
    assert_eq!(
        url,
        format!("{}/pair#{code}", setup.front.origin()),
        "the code rides in the fragment"
    );
    assert_eq!(code.len(), 32);

    let claim = setup
        .phone(
            "POST",
            "/api/pair/claim",
            None,
            &json!({"code": code, "name": "Pixel 8"}),
        )
        .await;
    assert_eq!(claim.status, StatusCode::ACCEPTED);
    assert_eq!(claim.json()["agent"], "Chrome, Android");

    // Unapproved: the device waits and gets no cookie.
    let waiting = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(waiting.status, StatusCode::ACCEPTED);
    assert!(waiting.headers.get("set-cookie").is_none());

    // The page on loopback sees who asks.
    let (_, pairing) = setup.host.get(&format!("/api/pairings/{id}")).await;
    assert_eq!(
        pairing,
        json!({"status": "claimed", "name": "Pixel 8", "agent": "Chrome, Android"})
    );
    let (status, _) = setup
        .host
        .post(&format!("/api/pairings/{id}/approve"), "{}")
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);

    let collected = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(collected.status, StatusCode::OK, "{:?}", collected.body);
    let cookie = collected.headers["set-cookie"].to_str().unwrap().to_owned();
    let attributes: Vec<&str> = cookie.split(';').map(str::trim).collect();
    let (name, value) = attributes[0].split_once('=').unwrap();
    assert_eq!(name, "__Host-ask_user_device");
    assert_eq!(value.len(), 64, "256 bits");
    assert!(value.bytes().all(|b| b.is_ascii_hexdigit()));
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(attributes.contains(&attribute), "{cookie}");
    }
    assert!(!cookie.to_ascii_lowercase().contains("domain="), "{cookie}");

    // The device answers the person's side with its cookie.
    let list = setup
        .phone(
            "GET",
            "/api/sessions/s1/questions",
            Some(attributes[0]),
            &Value::Null,
        )
        .await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);

    // Listed on loopback.
    let (_, devices) = setup.host.get("/api/devices").await;
    assert_eq!(devices["devices"][0]["name"], "Pixel 8");
    assert_eq!(devices["devices"][0]["agent"], "Chrome, Android");
}

#[tokio::test]
async fn a_reused_code_is_refused_with_410() {
    let setup = Setup::start().await;
    let (id, code, _) = setup.open_pairing().await;
    let body = json!({"code": code, "name": "Pixel 8"});
    assert_eq!(
        setup
            .phone("POST", "/api/pair/claim", None, &body)
            .await
            .status,
        StatusCode::ACCEPTED
    );
    // A second device with the same code.
    let again = setup.phone("POST", "/api/pair/claim", None, &body).await;
    assert_eq!(again.status, StatusCode::GONE);
    assert_eq!(again.code(), "PAIRING_CODE_GONE");
    setup
        .host
        .post(&format!("/api/pairings/{id}/approve"), "{}")
        .await;
    let first = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(first.status, StatusCode::OK);
    let second = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(second.status, StatusCode::GONE);
    assert!(second.headers.get("set-cookie").is_none());
}

#[tokio::test]
async fn an_unknown_code_is_refused_and_guessing_is_throttled() {
    let setup = Setup::start().await;
    let mut last = StatusCode::OK;
    for n in 0..2000 {
        let reply = setup
            .phone(
                "POST",
                "/api/pair/collect",
                None,
                &json!({"code": format!("{n:032x}")}),
            )
            .await;
        last = reply.status;
        if n == 0 {
            assert_eq!(reply.status, StatusCode::GONE);
            assert!(
                reply.json()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("expired")
            );
        }
        if last == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_denied_pairing_gives_the_device_no_credential() {
    let setup = Setup::start().await;
    let (id, code, _) = setup.open_pairing().await;
    setup
        .phone(
            "POST",
            "/api/pair/claim",
            None,
            &json!({"code": code, "name": "Pixel 8"}),
        )
        .await;
    let (status, _) = setup
        .host
        .post(&format!("/api/pairings/{id}/deny"), "{}")
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let denied = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert!(denied.headers.get("set-cookie").is_none());
    let (_, devices) = setup.host.get("/api/devices").await;
    assert_eq!(devices, json!({"devices": []}));
}

#[tokio::test]
async fn a_device_can_neither_pair_another_nor_list_or_revoke_devices() {
    let setup = Setup::start().await;
    let (device, cookie) = setup.paired().await;
    for (method, path) in [
        ("POST", "/api/pairings".to_owned()),
        ("GET", "/api/devices".to_owned()),
        ("DELETE", format!("/api/devices/{device}")),
    ] {
        let reply = setup.phone(method, &path, Some(&cookie), &json!({})).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{method} {path}");
    }
}

#[tokio::test]
async fn a_device_with_its_stream_open_is_seen_whenever_the_stream_sends_not_only_when_it_opened() {
    let setup = Setup::start().await;
    let (_, cookie) = setup.paired().await;
    let origin = setup.front.origin();
    let stream = https_open(
        &setup.cert,
        setup.front.port(),
        request(
            "GET",
            &setup.authority(),
            "/api/sessions/s1/events",
            &[("cookie", &cookie), ("origin", &origin)],
            "",
        ),
    )
    .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut body = stream.into_body();
    body.frame().await.expect("a frame").expect("no error");
    let (_, listed) = setup.host.get("/api/devices").await;
    let opened = listed["devices"][0]["last_seen_ms"].as_u64().unwrap();

    // Later, a question reaches the open stream: the device is seen then.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _agent = setup.host.ask(
        "s1",
        "",
        &json!({"questions": [{"id": "q", "question": "Still there?"}]}),
    );
    let mut text = String::new();
    while !text.contains("Still there?") {
        let frame = body.frame().await.expect("a frame").expect("no error");
        if let Some(data) = frame.data_ref() {
            text.push_str(&String::from_utf8_lossy(data));
        }
    }
    let (_, listed) = setup.host.get("/api/devices").await;
    let seen = listed["devices"][0]["last_seen_ms"].as_u64().unwrap();
    assert!(
        seen >= opened + 50,
        "seen when the question was sent ({seen}), not only when the stream opened ({opened})"
    );
}

#[tokio::test]
async fn revoking_a_device_ends_its_stream_within_a_second_and_its_next_request_is_401() {
    let setup = Setup::start().await;
    let (device, cookie) = setup.paired().await;
    let origin = setup.front.origin();
    let stream = https_open(
        &setup.cert,
        setup.front.port(),
        request(
            "GET",
            &setup.authority(),
            "/api/sessions/s1/events",
            &[("cookie", &cookie), ("origin", &origin)],
            "",
        ),
    )
    .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut body = stream.into_body();
    // The stream is open: its first frame (session/synced) arrives.
    let first = body.frame().await.expect("a frame").expect("no error");
    assert!(first.data_ref().is_some_and(|d| !d.is_empty()));

    let revoked = setup
        .host
        .authed(reqwest::Method::DELETE, &format!("/api/devices/{device}"))
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), reqwest::StatusCode::NO_CONTENT);
    let ended = tokio::time::timeout(Duration::from_secs(1), async {
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the revoked device's stream was still open after 1 s"
    );

    let after = setup
        .phone(
            "GET",
            "/api/sessions/s1/questions",
            Some(&cookie),
            &Value::Null,
        )
        .await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    let (_, devices) = setup.host.get("/api/devices").await;
    assert_eq!(devices, json!({"devices": []}));
}

#[tokio::test]
async fn pairing_needs_a_remote_origin() {
    let host = TestHost::start().await;
    let (status, body) = host.post("/api/pairings", "{}").await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--remote")
    );
}

#[tokio::test]
async fn the_record_names_the_device_or_the_page_that_answered_in_the_stream_transcript_history_and_decision_log()
 {
    let setup = Setup::start_recording().await;
    let (device, cookie) = setup.paired().await;
    let mut events = setup.host.events("s1").await;
    events.replay().await;
    let question = json!({"questions": [{"id": "ship", "question": "Ship it?",
        "options": [{"label": "Yes"}, {"label": "No"}]}]});

    // Answered on the phone.
    let agent = setup.host.ask("s1", "", &question);
    let asked = events.requested().await;
    let answered = setup
        .phone(
            "POST",
            &format!("/api/sessions/s1/questions/{}/answer", asked.id),
            Some(&cookie),
            &json!({"answers": [{"id": "ship", "selected": ["Yes"]}]}),
        )
        .await;
    assert_eq!(answered.status, StatusCode::OK, "{:?}", answered.body);
    let resolved = events.resolved().await;
    let on_phone = json!({"kind": "device", "device": {"id": device, "name": "Pixel 8"}});
    assert_eq!(
        serde_json::to_value(resolved.record.unwrap().by).unwrap(),
        on_phone
    );
    assert_eq!(agent.await.unwrap().0, reqwest::StatusCode::OK);

    // Cancelled on the host's page.
    let agent = setup.host.ask("s1", "", &question);
    let asked = events.requested().await;
    let (status, _) = setup.host.cancel("s1", &asked.id).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let resolved = events.resolved().await;
    assert_eq!(
        serde_json::to_value(resolved.record.unwrap().by).unwrap(),
        json!({"kind": "page"})
    );
    agent.await.unwrap();

    let (_, transcript) = setup.host.get("/api/sessions/s1/transcript").await;
    let bys: Vec<&Value> = transcript["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["by"])
        .collect();
    assert_eq!(bys, vec![&on_phone, &json!({"kind": "page"})]);

    let (_, history) = setup.host.get("/api/history?session=s1").await;
    assert_eq!(history["records"][0]["by"], json!({"kind": "page"}));
    assert_eq!(history["records"][1]["by"], on_phone);

    let log = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .args(["history", "--format", "md", "--data-dir"])
        .arg(setup.data_dir.as_ref().unwrap())
        .output()
        .expect("run ask-user history");
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("Answered on Pixel 8 at "), "{log}");
    assert!(log.contains("Closed on the host's page at "), "{log}");
}

#[tokio::test]
async fn an_expired_code_is_refused_with_410_even_approved_and_leaves_no_credential() {
    let setup = Setup::start_in(None, Duration::from_millis(400)).await;
    let (id, code, _) = setup.open_pairing().await;
    let claim = setup
        .phone(
            "POST",
            "/api/pair/claim",
            None,
            &json!({"code": code, "name": "Pixel 8"}),
        )
        .await;
    assert_eq!(claim.status, StatusCode::ACCEPTED, "{:?}", claim.body);
    let (status, _) = setup
        .host
        .post(&format!("/api/pairings/{id}/approve"), "{}")
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    // Approved, but nobody collects within the code's life.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let collected = setup
        .phone("POST", "/api/pair/collect", None, &json!({"code": code}))
        .await;
    assert_eq!(collected.status, StatusCode::GONE, "{:?}", collected.body);
    assert!(collected.headers.get("set-cookie").is_none());
    assert!(
        collected.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it expired"),
        "{:?}",
        collected.body
    );
    let (status, _) = setup.host.get(&format!("/api/pairings/{id}")).await;
    assert_eq!(status, reqwest::StatusCode::GONE, "the pairing is gone");
    let (_, devices) = setup.host.get("/api/devices").await;
    assert_eq!(devices["devices"], json!([]), "no credential was made");

    // A code opened and claimed only after its life: refused the same way.
    let (_, code, _) = setup.open_pairing().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let late = setup
        .phone(
            "POST",
            "/api/pair/claim",
            None,
            &json!({"code": code, "name": "Pixel 8"}),
        )
        .await;
    assert_eq!(late.status, StatusCode::GONE, "{:?}", late.body);
}

#[tokio::test]
async fn two_devices_answering_at_once_one_wins_and_the_record_names_that_one() {
    let setup = Setup::start().await;
    let (pixel, pixel_cookie) = setup.paired_as("Pixel 8").await;
    let (ipad, ipad_cookie) = setup.paired_as("iPad").await;
    let mut events = setup.host.events("s1").await;
    events.replay().await;
    let question = json!({"questions": [{"id": "ship", "question": "Ship it?",
        "options": [{"label": "Yes"}, {"label": "No"}]}]});
    for round in 0..5 {
        let agent = setup.host.ask("s1", "", &question);
        let asked = events.requested().await;
        let path = format!("/api/sessions/s1/questions/{}/answer", asked.id);
        let (yes_body, no_body) = (
            json!({"answers": [{"id": "ship", "selected": ["Yes"]}]}),
            json!({"answers": [{"id": "ship", "selected": ["No"]}]}),
        );
        let (yes, no) = tokio::join!(
            setup.phone("POST", &path, Some(&pixel_cookie), &yes_body),
            setup.phone("POST", &path, Some(&ipad_cookie), &no_body),
        );
        let statuses = [yes.status, no.status];
        assert!(
            statuses.contains(&StatusCode::OK) && statuses.contains(&StatusCode::CONFLICT),
            "round {round}: one wins, the other is told it lost: {statuses:?} {:?} {:?}",
            yes.body,
            no.body
        );
        let (winner, label) = if yes.status == StatusCode::OK {
            (&pixel, "Yes")
        } else {
            (&ipad, "No")
        };
        let resolved = events.resolved().await;
        let by = serde_json::to_value(resolved.record.unwrap().by).unwrap();
        assert_eq!(by["device"]["id"], json!(winner), "round {round}: {by}");
        let (status, body) = agent.await.unwrap();
        assert_eq!(status, reqwest::StatusCode::OK);
        assert_eq!(
            body,
            json!({"answers": [{"id": "ship", "selected": [label]}]}),
            "round {round}: the agent gets the winner's answer"
        );
    }
}

#[tokio::test]
async fn a_home_screen_app_without_safaris_cookie_pairs_again_and_both_devices_work_and_are_listed()
{
    let setup = Setup::start().await;
    let (in_safari, safari_cookie) = setup.paired_as("iPhone").await;
    // The installed app starts with an empty cookie jar: it opens a new
    // link and pairs as a second device; the first stays paired.
    let (in_app, app_cookie) = setup.paired_as("iPhone").await;
    assert_ne!(in_safari, in_app);
    assert_ne!(safari_cookie, app_cookie);
    for cookie in [&safari_cookie, &app_cookie] {
        let list = setup
            .phone(
                "GET",
                "/api/sessions/s1/questions",
                Some(cookie),
                &Value::Null,
            )
            .await;
        assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);
    }
    let (_, devices) = setup.host.get("/api/devices").await;
    let listed: Vec<&str> = devices["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![in_safari.as_str(), in_app.as_str()]);
    assert!(
        devices["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["name"] == "iPhone")
    );
}

#[tokio::test]
async fn a_devices_answers_and_messages_name_it_and_its_last_answer_is_listed_and_kept_in_the_store()
 {
    let setup = Setup::start_recording().await;
    let (device, cookie) = setup.paired().await;
    let (_, listed) = setup.host.get("/api/devices").await;
    assert_eq!(listed["devices"][0].get("last_answer_ms"), None, "{listed}");
    let paired_at = listed["devices"][0]["paired_at_ms"].as_u64().unwrap();

    let mut events = setup.host.events("s1").await;
    events.replay().await;
    let agent = setup.host.ask(
        "s1",
        "",
        &json!({"questions": [{"id": "ship", "question": "Ship it?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    let asked = events.requested().await;
    let answered = setup
        .phone(
            "POST",
            &format!("/api/sessions/s1/questions/{}/answer", asked.id),
            Some(&cookie),
            &json!({"answers": [{"id": "ship", "selected": ["Yes"]}]}),
        )
        .await;
    assert_eq!(answered.status, StatusCode::OK, "{:?}", answered.body);
    agent.await.unwrap();

    // A message from the phone and one from the host's page.
    let from_phone = setup
        .phone(
            "POST",
            "/api/sessions/s1/messages",
            Some(&cookie),
            &json!({"text": "sent from the train"}),
        )
        .await;
    assert_eq!(from_phone.status, StatusCode::OK, "{:?}", from_phone.body);
    let on_phone = json!({"kind": "device", "device": {"id": device, "name": "Pixel 8"}});
    assert_eq!(from_phone.json()["by"], on_phone);
    let (status, from_page) = setup
        .host
        .post(
            "/api/sessions/s1/messages",
            json!({"text": "at the desk"}).to_string(),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    assert_eq!(from_page["by"], json!({"kind": "page"}));
    let (_, transcript) = setup.host.get("/api/sessions/s1/transcript").await;
    let messages: Vec<(&Value, &Value)> = transcript["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("role").is_some())
        .map(|e| (&e["text"], &e["by"]))
        .collect();
    assert_eq!(
        messages,
        vec![
            (&json!("sent from the train"), &on_phone),
            (&json!("at the desk"), &json!({"kind": "page"}))
        ]
    );

    let (_, listed) = setup.host.get("/api/devices").await;
    let last_answer = listed["devices"][0]["last_answer_ms"].as_u64().unwrap();
    let last_seen = listed["devices"][0]["last_seen_ms"].as_u64().unwrap();
    assert!(last_answer >= paired_at, "{listed}");
    assert!(last_seen >= last_answer, "{listed}");

    // Kept: a store opened on the same file reads the device's last answer
    // and who wrote each message (the writes are not awaited: poll).
    let dir = setup.data_dir.clone().unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let store = ask_user_host::server::store::SqliteStore::open(&dir).unwrap();
        let restored = ask_user_host::server::store::Store::restored(&store);
        let kept = restored.devices[0].last_answer_ms;
        let bys: Vec<Value> = restored
            .transcripts
            .iter()
            .filter_map(|(_, entry)| match entry {
                ask_user_core::wire::TranscriptEntry::Message(m) => {
                    Some(serde_json::to_value(&m.by).unwrap())
                }
                ask_user_core::wire::TranscriptEntry::Record(_) => None,
            })
            .collect();
        if kept == Some(last_answer) {
            assert_eq!(bys, vec![on_phone.clone(), json!({"kind": "page"})]);
            assert!(restored.devices[0].last_seen_ms >= last_answer);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the store never kept the last answer: {kept:?}, listed {last_answer}"
        );
        drop(store);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
