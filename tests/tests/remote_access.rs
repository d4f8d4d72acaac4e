//! The `--remote` origin through a TLS front that plays `tailscale serve`
//! (keeps Host, adds X-Forwarded-*), direct TLS with `--tls-cert`, and the
//! refusals: the master token on the remote origin, the agents' endpoints
//! without `--remote-agents`, a foreign Host or Origin, a client on another
//! machine naming loopback, and a non-loopback bind without TLS.

use ask_user_host::server::security::RemoteOrigin;
use ask_user_tests::host_process::{HostProcess, host_binary};
use ask_user_tests::http_host::TestHost;
use ask_user_tests::tls_front::{PHONE_HOST, TestCert, TlsFront, https, request};
use hyper::StatusCode;

/// A host in-process whose `--remote` is the front's origin, and the front.
async fn host_behind_front(remote_agents: bool) -> (TestHost, TlsFront, TestCert) {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let origin = front.origin();
    let host = TestHost::start_with(|config| {
        config.remote = Some(RemoteOrigin::parse(&origin).unwrap());
        config.remote_agents = remote_agents;
    })
    .await;
    front.forward_to_origin(&host.base);
    (host, front, cert)
}

fn authority(front: &TlsFront) -> String {
    format!("{PHONE_HOST}:{}", front.port())
}

#[tokio::test]
async fn the_remote_origin_serves_the_page_and_asks_the_persons_api_for_a_device_credential() {
    let (_host, front, cert) = host_behind_front(false).await;
    let host = authority(&front);
    let page = https(&cert, front.port(), request("GET", &host, "/", &[], "")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.is_empty());
    let list = https(
        &cert,
        front.port(),
        request("GET", &host, "/api/sessions/s1/questions", &[], ""),
    )
    .await;
    assert_eq!(list.status, StatusCode::UNAUTHORIZED, "{:?}", list.body);
    assert_eq!(list.code(), "UNAUTHORIZED");
}

#[tokio::test]
async fn the_master_token_is_refused_on_the_remote_origin_in_every_form() {
    let (host, front, cert) = host_behind_front(false).await;
    let authority = authority(&front);
    let bearer = format!("Bearer {}", host.token());
    let cookie = format!(
        "{}={}",
        ask_user_host::server::security::cookie_name(host.state.config().port),
        host.state.guard().cookie_value()
    );
    let events = format!("/api/sessions/s1/events?token={}", host.token());
    let landing = format!("/?token={}", host.token());
    let attempts = [
        (
            "GET",
            "/api/sessions/s1/questions",
            vec![("authorization", bearer.as_str())],
        ),
        (
            "GET",
            "/api/history",
            vec![("authorization", bearer.as_str())],
        ),
        (
            "GET",
            "/api/sessions/s1/questions",
            vec![("cookie", cookie.as_str())],
        ),
        ("GET", events.as_str(), vec![]),
        ("GET", landing.as_str(), vec![]),
    ];
    for (method, path, headers) in attempts {
        let reply = https(
            &cert,
            front.port(),
            request(method, &authority, path, &headers, ""),
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path} {headers:?}");
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains("master token is refused"), "{message}");
        assert!(reply.headers.get("set-cookie").is_none(), "{path}");
    }
    // The same token on loopback still works.
    let (status, _) = host.get("/api/sessions/s1/questions").await;
    assert_eq!(status, reqwest::StatusCode::OK);
}

#[tokio::test]
async fn the_agents_endpoints_answer_on_the_remote_origin_only_with_remote_agents() {
    let (host, front, cert) = host_behind_front(false).await;
    let authority = authority(&front);
    let bearer = format!("Bearer {}", host.token());
    let ask_body = r#"{"questions":[{"id":"q","question":"Ship?","options":[{"label":"Yes"},{"label":"No"}]}]}"#;
    for path in ["/api/sessions/s1/ask?timeout_ms=1", "/mcp"] {
        let reply = https(
            &cert,
            front.port(),
            request(
                "POST",
                &authority,
                path,
                &[
                    ("authorization", &bearer),
                    ("content-type", "application/json"),
                ],
                ask_body,
            ),
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
        assert!(
            reply.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--remote-agents"),
            "{path}"
        );
    }
    drop((host, front));

    let (host, front, cert) = host_behind_front(true).await;
    let bearer = format!("Bearer {}", host.token());
    let reply = https(
        &cert,
        front.port(),
        request(
            "POST",
            &authority_of(&front),
            "/api/sessions/s1/ask?timeout_ms=1",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            ask_body,
        ),
    )
    .await;
    // Past every check: the ask itself timed out.
    assert_eq!(reply.code(), "ASK_TIMEOUT", "{:?}", reply.body);
    let wrong = https(
        &cert,
        front.port(),
        request(
            "POST",
            &authority_of(&front),
            "/api/sessions/s1/ask?timeout_ms=1",
            &[("authorization", "Bearer not-the-token")],
            ask_body,
        ),
    )
    .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
}

fn authority_of(front: &TlsFront) -> String {
    authority(front)
}

#[tokio::test]
async fn a_foreign_host_or_origin_through_the_front_is_refused() {
    let (_host, front, cert) = host_behind_front(false).await;
    let authority = authority(&front);
    let own_origin = front.origin();
    let cases: [(&str, Vec<(&str, &str)>); 5] = [
        ("evil.example", vec![]),
        ("phone.test", vec![]), // the right name on the wrong port
        (&authority, vec![("origin", "https://evil.example")]),
        (&authority, vec![("origin", "http://127.0.0.1:7411")]),
        // A client on another machine (as the front says) naming loopback.
        ("127.0.0.1", vec![]),
    ];
    for (host, headers) in cases {
        let reply = https(
            &cert,
            front.port(),
            request("GET", host, "/api/sessions/s1/questions", &headers, ""),
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{host} {headers:?}");
        assert_eq!(reply.code(), "FORBIDDEN");
    }
    // The remote origin itself gets as far as the credential check.
    let reply = https(
        &cert,
        front.port(),
        request(
            "GET",
            &authority,
            "/api/sessions/s1/questions",
            &[("origin", &own_origin)],
            "",
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn wrong_credentials_through_the_front_are_throttled_by_the_forwarded_address() {
    let (host, front, cert) = host_behind_front(false).await;
    let authority = authority(&front);
    // One keep-alive connection: wrong credentials arrive faster than the
    // budget refills (5 a second), so 429 comes after the burst of 20; how
    // many it takes depends on the machine's speed, so only a bound is set.
    let mut connection = ask_user_tests::tls_front::https_connection(&cert, front.port()).await;
    let mut statuses = Vec::new();
    while statuses.last() != Some(&StatusCode::TOO_MANY_REQUESTS) && statuses.len() < 2000 {
        let response = connection
            .send_request(request(
                "GET",
                &authority,
                "/api/sessions/s1/questions",
                &[("authorization", "Bearer wrong")],
                "",
            ))
            .await
            .expect("answered");
        let reply = ask_user_tests::tls_front::read_reply(response).await;
        statuses.push(reply.status);
    }
    assert_eq!(
        statuses.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert!(statuses.len() > ask_user_host::server::security::FAILURE_BURST as usize);
    // The front's client is throttled, not loopback: a local client with a
    // wrong token still gets its own budget's 401.
    let (status, _) = ask_user_tests::http_host::send(
        host.client
            .get(host.url("/api/sessions/s1/questions"))
            .bearer_auth("wrong"),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
}

#[test]
fn a_non_loopback_bind_without_tls_is_refused_at_start_saying_why() {
    let binary = host_binary();
    assert!(
        binary.is_file(),
        "build the host first: {}",
        binary.display()
    );
    let data_dir = std::env::temp_dir().join(format!("auq-remote-{}", std::process::id()));
    let output = std::process::Command::new(&binary)
        .args(["serve", "--ephemeral", "--addr", "0.0.0.0:0"])
        .env("ASK_USER_DATA_DIR", &data_dir)
        .output()
        .expect("run the host");
    let _ = std::fs::remove_dir_all(&data_dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("needs --tls-cert and --tls-key") && stderr.contains("in the clear"),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "it printed no URL: it never served"
    );
}

#[tokio::test]
async fn direct_tls_serves_the_host_over_https_with_the_given_certificate() {
    let cert = TestCert::new();
    let dir = std::env::temp_dir().join(format!("auq-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, &cert.cert_pem).unwrap();
    std::fs::write(&key_file, &cert.key_pem).unwrap();
    let dist = dir.join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><html><body>page</body></html>",
    )
    .unwrap();
    let host = HostProcess::start(
        &dist,
        &[
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
        ],
    )
    .expect("the host starts with TLS");
    assert!(
        host.origin().starts_with("https://127.0.0.1:"),
        "{}",
        host.origin()
    );
    let port: u16 = host.origin().rsplit(':').next().unwrap().parse().unwrap();
    let authority = format!("127.0.0.1:{port}");
    let health = https(
        &cert,
        port,
        request("GET", &authority, "/api/health", &[], ""),
    )
    .await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.json()["status"], "ok");
    let bearer = format!("Bearer {}", host.token().unwrap());
    let list = https(
        &cert,
        port,
        request(
            "GET",
            &authority,
            "/api/sessions/s1/questions",
            &[("authorization", &bearer)],
            "",
        ),
    )
    .await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);
    // Plain HTTP on the TLS port gets no answer.
    let plain = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/api/health"))
        .send()
        .await;
    assert!(plain.is_err(), "{plain:?}");
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_certificate_file_is_refused_at_start_naming_it() {
    let binary = host_binary();
    assert!(
        binary.is_file(),
        "build the host first: {}",
        binary.display()
    );
    let dir = std::env::temp_dir().join(format!("auq-badtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert_file = dir.join("cert.pem");
    std::fs::write(&cert_file, "not a certificate").unwrap();
    let output = std::process::Command::new(&binary)
        .args([
            "serve",
            "--ephemeral",
            "--addr",
            "127.0.0.1:0",
            "--tls-cert",
        ])
        .arg(&cert_file)
        .arg("--tls-key")
        .arg(&cert_file)
        .env("ASK_USER_DATA_DIR", dir.join("data"))
        .output()
        .expect("run the host");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--tls-cert") && stderr.contains("cert.pem"),
        "{stderr}"
    );
}
