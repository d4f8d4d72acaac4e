//! Web Push to paired devices (issue 22), against a stub push service on
//! 127.0.0.1: a device paired through the TLS front subscribes with a
//! subscription of the test's own (its P-256 key and auth secret); each new
//! batch reaches the stub encrypted for it, with TTL, Urgency and a VAPID JWT
//! signed by the host's key; resolving the batch sends the closing follow-up;
//! a 410 drops the subscription; a revoked device gets nothing; and while a
//! page is present nothing is pushed.

use ask_user_host::server::push::EndpointPolicy;
use ask_user_host::server::push::service::PushConfig;
use ask_user_host::server::security::RemoteOrigin;
use ask_user_tests::http_host::TestHost;
use ask_user_tests::push_stub::{PushStub, Received, TestSubscription, verified_vapid};
use ask_user_tests::tls_front::{
    PHONE_HOST, Reply, TestCert, TlsFront, https, pair_phone, phone_request, request,
};
use hyper::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The VAPID contact the tests' hosts name.
const CONTACT: &str = "mailto:push-ops@example.com";

struct Setup {
    host: TestHost,
    front: TlsFront,
    cert: TestCert,
    stub: PushStub,
}

impl Setup {
    async fn start() -> Self {
        let cert = TestCert::new();
        let mut front = TlsFront::bind(&cert).await;
        let origin = front.origin();
        let host = TestHost::start_with(|config| {
            config.remote = Some(RemoteOrigin::parse(&origin).unwrap());
            config.push = Some(PushConfig {
                key_dir: None,
                policy: EndpointPolicy::AllowLoopbackHttp,
                contact: Some(CONTACT.to_owned()),
            });
        })
        .await;
        front.forward_to_origin(&host.base);
        Self {
            host,
            front,
            cert,
            stub: PushStub::start().await,
        }
    }

    /// A request from a device, through the front.
    async fn device(&self, method: &str, path: &str, cookie: Option<&str>, body: &Value) -> Reply {
        phone_request(&self.cert, &self.front, method, path, cookie, body).await
    }

    /// A device paired as `name`: (id, cookie pair).
    async fn paired(&self, name: &str) -> (String, String) {
        pair_phone(&self.host, &self.cert, &self.front, name).await
    }

    /// A paired device subscribed with a fresh test subscription at the
    /// stub's `/push/NAME`: (device id, cookie, subscription).
    async fn subscribed(&self, name: &str) -> (String, String, TestSubscription) {
        let (id, cookie) = self.paired(name).await;
        let subscription = self.subscribe(name, &cookie).await;
        (id, cookie, subscription)
    }

    /// The device with `cookie` subscribes with a fresh test subscription at
    /// the stub's `/push/NAME`.
    async fn subscribe(&self, name: &str, cookie: &str) -> TestSubscription {
        let subscription = TestSubscription::new(self.stub.endpoint(name));
        let put = self
            .device(
                "PUT",
                "/api/push/subscription",
                Some(cookie),
                &subscription.to_json(),
            )
            .await;
        assert_eq!(put.status, StatusCode::NO_CONTENT, "{:?}", put.body);
        subscription
    }

    fn ask(
        &self,
        session: &str,
        question: &str,
    ) -> tokio::task::JoinHandle<(reqwest::StatusCode, Value)> {
        self.host.ask(
            session,
            "",
            &json!({"questions": [{"id": "q1", "question": question, "header": "Deploy",
                "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        )
    }

    async fn pending_id(&self, session: &str) -> String {
        ask_user_tests::wait::within("the question to be pending", async {
            loop {
                if let Some(id) = self.host.pending_ids(session).await.into_iter().next() {
                    return id;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
    }
}

fn header<'a>(received: &'a Received, name: &str) -> &'a str {
    received
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn a_new_batch_reaches_the_subscribed_device_encrypted_signed_and_a_resolution_closes_it() {
    let setup = Setup::start().await;
    let (_, cookie, subscription) = setup.subscribed("pixel").await;
    let key = setup
        .device("GET", "/api/push/key", Some(&cookie), &Value::Null)
        .await;
    assert_eq!(key.status, StatusCode::OK);
    let public_key = key.json()["public_key"].as_str().unwrap().to_owned();

    let agent = setup.ask("deploy", "Ship it to production?");
    let id = setup.pending_id("deploy").await;
    let sent = setup.stub.wait_for("pixel", 1).await;
    let ask = &sent[0];
    let payload = subscription.decrypt(ask);
    assert_eq!(
        payload,
        json!({"kind": "ask", "tag": format!("ask-user:deploy:{id}"), "session": "deploy",
               "question": id, "who": "An agent", "text": "Deploy", "count": 1,
               "url": format!("/?session=deploy&q={id}"),
               // One single-select question of two options: the notification's buttons.
               "item": "q1", "choices": ["Yes", "No"]})
    );
    assert!(ask.body.len() < 4096, "{} bytes", ask.body.len());
    // The detach grace (no timeout was given), Urgency high.
    assert_eq!(header(ask, "ttl"), "600");
    assert_eq!(header(ask, "urgency"), "high");
    assert_eq!(header(ask, "content-encoding"), "aes128gcm");
    let (claims, k) = verified_vapid(header(ask, "authorization"));
    assert_eq!(k, public_key, "signed by the key the page subscribes with");
    assert_eq!(claims["aud"], json!(setup.stub.origin()), "{claims}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let exp = claims["exp"].as_u64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp {exp}, now {now}");
    assert_eq!(claims["sub"], CONTACT, "the host's contact: {claims}");
    // Never a token or a credential.
    let plain = payload.to_string();
    assert!(!plain.contains(setup.host.token()));
    assert!(!plain.contains(cookie.split('=').nth(1).unwrap()));

    let (status, body) = setup
        .host
        .answer(
            "deploy",
            &id,
            &json!({"answers": [{"id": "q1", "selected": ["Yes"]}]}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(agent.await.unwrap().0, reqwest::StatusCode::OK);
    let sent = setup.stub.wait_for("pixel", 2).await;
    let close = &sent[1];
    assert_eq!(
        subscription.decrypt(close),
        json!({"kind": "close", "tag": format!("ask-user:deploy:{id}")})
    );
    assert_eq!(header(close, "urgency"), "normal");
}

#[tokio::test]
async fn a_subscription_the_push_service_says_is_gone_is_dropped() {
    let setup = Setup::start().await;
    let (_, cookie, _) = setup.subscribed("old-phone").await;
    setup.stub.answer_with("old-phone", 410);
    let status = || async {
        setup
            .device("GET", "/api/push/subscription", Some(&cookie), &Value::Null)
            .await
            .json()["subscribed"]
            .clone()
    };
    assert_eq!(status().await, json!(true));
    let _agent = setup.ask("deploy", "Ship it?");
    setup.stub.wait_for("old-phone", 1).await;
    ask_user_tests::wait::within("the subscription to be dropped", async {
        while status().await != json!(false) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// A device paired under person `name` (roles `roles`) and subscribed at the
/// stub's `/push/NAME`.
async fn person_subscribed(setup: &Setup, name: &str, roles: &[&str]) {
    let (status, body) = setup
        .host
        .post(
            "/api/people",
            json!({"name": name, "roles": roles}).to_string(),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    let credential = body["credential"].as_str().expect("the credential, once");
    let (_, cookie) = ask_user_tests::tls_front::pair_phone_with(
        &setup.host.base,
        credential,
        &setup.cert,
        &setup.front,
        &format!("{name}-phone"),
    )
    .await;
    setup.subscribe(name, &cookie).await;
}

#[tokio::test]
async fn a_batch_is_pushed_only_to_devices_of_people_in_its_audience() {
    let setup = Setup::start().await;
    person_subscribed(&setup, "ana", &["ops"]).await;
    person_subscribed(&setup, "bo", &["design"]).await;
    let (_, _, _) = setup.subscribed("owners-phone").await;
    let _agent = setup.host.ask(
        "deploy",
        "",
        &json!({"audience": {"role": "ops"},
            "questions": [{"id": "q1", "question": "Ship it?", "header": "Deploy"}]}),
    );
    setup.stub.wait_for("ana", 1).await;
    setup.stub.wait_for("owners-phone", 1).await;
    // The sends start in one step: give a wrong one a moment to arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut names: Vec<String> = setup.stub.received().into_iter().map(|r| r.name).collect();
    names.sort();
    assert_eq!(names, ["ana", "owners-phone"], "bo is outside the audience");
}

#[tokio::test]
async fn an_escalation_pushes_once_to_the_people_it_brings_into_the_audience_only() {
    let setup = Setup::start().await;
    person_subscribed(&setup, "ana", &["oncall"]).await;
    person_subscribed(&setup, "lee", &["leads"]).await;
    person_subscribed(&setup, "bo", &["design"]).await;
    let (_, _, _) = setup.subscribed("owners-phone").await;
    let _agent = setup.host.ask(
        "deploy",
        "",
        &json!({"audience": {"role": "oncall"},
            "escalate_after": {"seconds": 1, "role": "leads"},
            "questions": [{"id": "q1", "question": "Ship it?", "header": "Deploy"}]}),
    );
    setup.stub.wait_for("ana", 1).await;
    setup.stub.wait_for("owners-phone", 1).await;
    // After a second the question escalates to leads: lee's phone hears of it.
    setup.stub.wait_for("lee", 1).await;
    // The sends start in one step: give a wrong one a moment to arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut names: Vec<String> = setup.stub.received().into_iter().map(|r| r.name).collect();
    names.sort();
    assert_eq!(
        names,
        ["ana", "lee", "owners-phone"],
        "ana and the owner once (not again at the escalation), lee at it, bo never"
    );
}

#[tokio::test]
async fn a_revoked_device_gets_nothing_while_another_still_does() {
    let setup = Setup::start().await;
    let (revoked, _, _) = setup.subscribed("lost-phone").await;
    let (_, _, _) = setup.subscribed("tablet").await;
    let response = setup
        .host
        .authed(reqwest::Method::DELETE, &format!("/api/devices/{revoked}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::NO_CONTENT);
    let _agent = setup.ask("deploy", "Ship it?");
    setup.stub.wait_for("tablet", 1).await;
    // Both sends would have started in the same step: give the other a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let names: Vec<String> = setup.stub.received().into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["tablet"]);
}

#[tokio::test]
async fn nothing_is_pushed_while_a_page_is_present_and_a_batch_is_pushed_once_it_is_hidden() {
    let setup = Setup::start().await;
    let (_, cookie, subscription) = setup.subscribed("pixel").await;
    let report = |visible: bool, idle_ms: u64| {
        let cookie = cookie.clone();
        let setup = &setup;
        async move {
            let reply = setup
                .device(
                    "POST",
                    "/api/presence",
                    Some(&cookie),
                    &json!({"page": "tab-1", "visible": visible, "idle_ms": idle_ms}),
                )
                .await;
            assert_eq!(reply.status, StatusCode::NO_CONTENT, "{:?}", reply.body);
        }
    };
    report(true, 1_000).await;
    let _seen = setup.ask("seen", "Asked while the person looks");
    setup.pending_id("seen").await;
    // Idle for 60 s counts as away, as hidden does.
    report(true, 60_000).await;
    let _unseen = setup.ask("unseen", "Asked while nobody looks");
    let sent = setup.stub.wait_for("pixel", 1).await;
    assert_eq!(subscription.decrypt(&sent[0])["session"], "unseen");
    report(false, 0).await;
    let _later = setup.ask("later", "Asked with the page hidden");
    let sent = setup.stub.wait_for("pixel", 2).await;
    assert_eq!(subscription.decrypt(&sent[1])["session"], "later");
    let sessions: Vec<Value> = sent
        .iter()
        .map(|r| subscription.decrypt(r)["session"].clone())
        .collect();
    assert_eq!(
        sessions,
        [json!("unseen"), json!("later")],
        "the batch asked while present was never pushed"
    );
}

#[tokio::test]
async fn bad_subscriptions_are_refused_saying_why() {
    let setup = Setup::start().await;
    let (_, cookie) = setup.paired("pixel").await;
    let mut not_https = TestSubscription::new("http://192.168.1.20/push".to_owned()).to_json();
    let put = setup
        .device("PUT", "/api/push/subscription", Some(&cookie), &not_https)
        .await;
    assert_eq!(put.status, StatusCode::BAD_REQUEST);
    assert!(
        put.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("https"),
        "{:?}",
        put.body
    );
    not_https["endpoint"] = json!(setup.stub.endpoint("x"));
    not_https["keys"]["auth"] = json!("AAAA");
    let put = setup
        .device("PUT", "/api/push/subscription", Some(&cookie), &not_https)
        .await;
    assert_eq!(put.status, StatusCode::BAD_REQUEST);
    assert!(
        put.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("keys.auth")
    );
}

/// The host's own page (loopback, the master token) opts in like a device.
async fn desktop_subscribes(host: &TestHost, subscription: &TestSubscription) {
    let status = host
        .authed(reqwest::Method::PUT, "/api/push/subscription")
        .body(subscription.to_json().to_string())
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
}

async fn desktop_subscribed(host: &TestHost) -> Value {
    let (status, body) = host.get("/api/push/subscription").await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    body["subscribed"].clone()
}

#[tokio::test]
async fn the_desktop_page_opts_in_too_and_its_subscription_is_kept_across_a_restart() {
    let stub = PushStub::start().await;
    let data = std::env::temp_dir().join(format!(
        "auq-push-desktop-{}-{:x}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    // No --remote: the host's own page alone.
    let start = || {
        let data = data.clone();
        TestHost::start_with(move |config| {
            config.push = Some(PushConfig {
                key_dir: Some(data),
                policy: EndpointPolicy::AllowLoopbackHttp,
                contact: None,
            });
        })
    };
    let host = start().await;
    assert_eq!(desktop_subscribed(&host).await, json!(false), "opt-in");
    let _agent = host.ask(
        "deploy",
        "",
        &json!({"questions": [{"id": "q1", "question": "Asked before opting in?"}]}),
    );
    host.pending_ids("deploy").await;
    let subscription = TestSubscription::new(stub.endpoint("desk"));
    desktop_subscribes(&host, &subscription).await;
    assert_eq!(desktop_subscribed(&host).await, json!(true));
    let _agent = host.ask(
        "build",
        "",
        &json!({"questions": [{"id": "q1", "question": "Ship the build?"}]}),
    );
    let sent = stub.wait_for("desk", 1).await;
    let message = subscription.decrypt(&sent[0]);
    assert_eq!(message["session"], "build", "{message}");
    let (claims, _) = verified_vapid(header(&sent[0], "authorization"));
    assert_eq!(claims.get("sub"), None, "no contact given: {claims}");
    host.state.shutdown_token().cancel();
    drop(host);

    // Kept in the data directory (0600) with the VAPID key it was made for.
    let kept = data.join(ask_user_host::server::push::service::DESKTOP_SUBSCRIPTION_FILE);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let host = start().await;
    assert_eq!(desktop_subscribed(&host).await, json!(true), "kept");
    let _agent = host.ask(
        "again",
        "",
        &json!({"questions": [{"id": "q1", "question": "After the restart?"}]}),
    );
    let sent = stub.wait_for("desk", 2).await;
    assert_eq!(subscription.decrypt(&sent[1])["session"], "again");

    // Opting out forgets it, on disk too.
    let response = host
        .authed(reqwest::Method::DELETE, "/api/push/subscription")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::NO_CONTENT);
    assert_eq!(desktop_subscribed(&host).await, json!(false));
    assert!(!kept.exists());
    let _ = std::fs::remove_dir_all(&data);
}

/// The real binary, with its TLS client (the `push-tls` feature, rustls on
/// ring and the system's roots): a push to an `https` push service arrives.
/// The stub's certificate is signed by the test's CA, which the host trusts
/// through `SSL_CERT_FILE` (read with the system's roots).
#[tokio::test]
async fn the_binary_pushes_to_an_https_push_service_it_trusts() {
    use ask_user_tests::host_process::HostProcess;
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let stub = PushStub::start_tls(cert.server_config()).await;
    let scratch = std::env::temp_dir().join(format!(
        "auq-push-tls-{}-{:x}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(
        scratch.join("index.html"),
        "<!doctype html><title>page</title>",
    )
    .unwrap();
    let ca = scratch.join("ca.pem");
    std::fs::write(&ca, cert.ca_pem()).unwrap();
    let host = HostProcess::start_with_env(
        &scratch,
        &["--remote", &front.origin()],
        &[("SSL_CERT_FILE", ca.as_os_str())],
    )
    .expect("the host starts");
    front.forward_to_origin(host.origin());
    let (origin, authority) = (front.origin(), format!("{PHONE_HOST}:{}", front.port()));
    let device = |method: &'static str, path: &'static str, cookie: Option<String>, body: Value| {
        let (origin, authority, cert) = (origin.clone(), authority.clone(), &cert);
        let port = front.port();
        async move {
            let mut headers = vec![
                ("content-type", "application/json"),
                ("origin", origin.as_str()),
            ];
            if let Some(cookie) = &cookie {
                headers.push(("cookie", cookie.as_str()));
            }
            https(
                cert,
                port,
                request(method, &authority, path, &headers, &body.to_string()),
            )
            .await
        }
    };
    let loopback = reqwest::Client::new();
    let token = host.token().unwrap().to_owned();
    let opened: Value = loopback
        .post(format!("{}/api/pairings", host.origin()))
        .bearer_auth(&token)
        .body("{}")
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
    device(
        "POST",
        "/api/pair/claim",
        None,
        json!({"code": code, "name": "pixel"}),
    )
    .await;
    loopback
        .post(format!("{}/api/pairings/{id}/approve", host.origin()))
        .bearer_auth(&token)
        .body("{}")
        .send()
        .await
        .unwrap();
    let collected = device("POST", "/api/pair/collect", None, json!({"code": code})).await;
    assert_eq!(collected.status, StatusCode::OK, "{:?}", collected.body);
    let cookie = collected.headers["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let subscription = TestSubscription::new(stub.endpoint("pixel"));
    assert!(subscription.endpoint.starts_with("https://localhost:"));
    let put = device(
        "PUT",
        "/api/push/subscription",
        Some(cookie),
        subscription.to_json(),
    )
    .await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{:?}", put.body);

    let _agent = tokio::spawn(
        loopback
            .post(format!("{}/api/sessions/deploy/ask", host.origin()))
            .bearer_auth(&token)
            .json(&json!({"questions": [{"id": "q1", "question": "Ship it?",
                "options": [{"label": "Yes"}, {"label": "No"}]}]}))
            .send(),
    );
    let sent = stub.wait_for("pixel", 1).await;
    assert_eq!(subscription.decrypt(&sent[0])["text"], "Ship it?");
    let (claims, _) = verified_vapid(header(&sent[0], "authorization"));
    assert_eq!(claims["aud"], json!(stub.origin()));
    assert_eq!(
        claims["sub"],
        json!(origin),
        "the --remote origin by default"
    );
    // Logged once the push service answered, which may be just after the
    // stub handed over what it received.
    ask_user_tests::wait::until("the send to be logged", async || {
        host.stderr().contains("push: sent")
    })
    .await;
    assert!(!host.stderr().contains("Ship it?"), "never its payload");
    let _ = std::fs::remove_dir_all(&scratch);
}

#[tokio::test]
async fn with_ntfy_each_new_question_is_posted_to_the_topic_with_a_view_action_that_opens_it() {
    let stub = PushStub::start().await;
    let topic_url = format!("{}/push/server/my-topic", stub.origin());
    let host = TestHost::start_with(|config| {
        config.ntfy = Some(
            ask_user_host::server::push::ntfy::NtfyTarget::parse(
                &topic_url,
                EndpointPolicy::AllowLoopbackHttp,
            )
            .unwrap(),
        );
    })
    .await;
    let _agent = host.ask(
        "deploy",
        "",
        &json!({"questions": [{"id": "q1", "question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    let posted = stub.wait_for("server", 1).await;
    let id = host.pending_ids("deploy").await.remove(0);
    assert_eq!(header(&posted[0], "content-type"), "application/json");
    let body: Value = serde_json::from_slice(&posted[0].body).unwrap();
    let click = format!("{}/?session=deploy&q={id}", host.base);
    assert_eq!(body["topic"], "my-topic");
    assert_eq!(body["title"], "An agent asks");
    assert_eq!(body["message"], "Ship it?");
    assert_eq!(body["click"], json!(click));
    assert_eq!(
        body["actions"],
        json!([{"action": "view", "label": "Open", "url": click, "clear": true}])
    );
    assert!(
        !posted[0]
            .body
            .windows(host.token().len())
            .any(|w| w == host.token().as_bytes())
    );
}
