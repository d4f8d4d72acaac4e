//! The transport's own refusals over real HTTP: token, Host, Origin, body
//! size, session ids, unknown routes; every error body is the JSON shape.

use ask_user_tests::http_host::TestHost;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, HOST, LOCATION, ORIGIN, REFERRER_POLICY, SET_COOKIE};
use serde_json::{Value, json};

fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, code: &str) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(body["error"]["name"], "UserInteractionError", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
}

async fn send(builder: reqwest::RequestBuilder) -> (StatusCode, Value) {
    ask_user_tests::http_host::send(builder).await
}

#[tokio::test]
async fn health_needs_no_token() {
    let host = TestHost::start().await;
    let (status, body) = send(host.client.get(host.url("/api/health"))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ok"})));
}

#[tokio::test]
async fn api_calls_without_or_with_a_wrong_token_are_unauthorized() {
    let host = TestHost::start().await;
    let routes = [
        ("GET", "/api/sessions/s1/questions"),
        ("GET", "/api/sessions/s1/events"),
        ("POST", "/api/sessions/s1/ask"),
        ("POST", "/api/sessions/s1/questions/q_1/answer"),
        ("POST", "/api/sessions/s1/questions/q_1/cancel"),
        ("POST", "/api/sessions/s1/messages"),
    ];
    for (method, path) in routes {
        let method: reqwest::Method = method.parse().unwrap();
        let (status, body) = send(host.client.request(method.clone(), host.url(path))).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
        let wrong = host
            .client
            .request(method.clone(), host.url(path))
            .bearer_auth("not-the-token");
        let (status, body) = send(wrong).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
        let prefix = &host.token()[..host.token().len() - 1];
        let (status, body) = send(
            host.client
                .request(method, host.url(path))
                .bearer_auth(prefix),
        )
        .await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn opening_the_printed_url_sets_an_http_only_strict_cookie_and_drops_the_token_from_the_address()
 {
    let host = TestHost::start().await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .get(host.url(&format!("/?token={}", host.token())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[LOCATION], "/");
    assert_eq!(response.headers()[REFERRER_POLICY], "no-referrer");
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(
        !cookie.contains(host.token()),
        "the cookie is an HMAC of the token, not the token: {cookie}"
    );

    // The cookie alone authorises /api calls.
    let pair = cookie.split(';').next().unwrap().to_owned();
    let (status, body) = send(
        client
            .get(host.url("/api/sessions/s1/questions"))
            .header(COOKIE, pair),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"pending": []})));
    // A cookie with another value does not.
    let name = pair_name(&cookie);
    let (status, body) = send(
        client
            .get(host.url("/api/sessions/s1/questions"))
            .header(COOKIE, format!("{name}=wrong")),
    )
    .await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "UNAUTHORIZED");

    // A wrong token in the address sets nothing.
    let response = client.get(host.url("/?token=wrong")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().get(SET_COOKIE).is_none());
}

fn pair_name(cookie: &str) -> String {
    cookie.split('=').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_page_is_served_with_no_referrer() {
    let host = TestHost::start().await;
    let response = host.client.get(host.url("/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[REFERRER_POLICY], "no-referrer");
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "no CORS"
    );
}

#[tokio::test]
async fn the_page_comes_from_dist_with_an_index_fallback_and_embed_is_served_as_is() {
    let dist = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-dist-{}", std::process::id()));
    std::fs::create_dir_all(dist.join("embed")).unwrap();
    std::fs::write(dist.join("index.html"), "<p>the app</p>").unwrap();
    std::fs::write(dist.join("app.js"), "console.log(1)").unwrap();
    std::fs::write(dist.join("embed/mount.js"), "export {}").unwrap();
    let host = TestHost::start_with(|config| config.dist = Some(dist.clone())).await;
    let get = |path: &str| host.client.get(host.url(path)).send();

    let root = get("/").await.unwrap();
    assert_eq!(root.status(), StatusCode::OK);
    assert_eq!(root.text().await.unwrap(), "<p>the app</p>");
    assert_eq!(
        get("/app.js").await.unwrap().text().await.unwrap(),
        "console.log(1)"
    );
    assert_eq!(
        get("/some/deep/link").await.unwrap().text().await.unwrap(),
        "<p>the app</p>"
    );
    assert_eq!(
        get("/embed/mount.js").await.unwrap().text().await.unwrap(),
        "export {}"
    );
    assert_eq!(
        get("/embed/missing.js").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    // /api never falls back to the page.
    let (status, body) = send(host.client.get(host.url("/api/nothing-here"))).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NOT_FOUND");
    std::fs::remove_dir_all(&dist).ok();
}

#[tokio::test]
async fn a_foreign_host_header_is_forbidden_even_with_the_token() {
    let host = TestHost::start().await;
    for bad in [
        "evil.example",
        "evil.example:80",
        "127.0.0.1.evil.example",
        "10.0.0.1",
    ] {
        let (status, body) = send(
            host.authed(reqwest::Method::GET, "/api/sessions/s1/questions")
                .header(HOST, bad),
        )
        .await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "FORBIDDEN");
        let (status, body) = send(host.client.get(host.url("/api/health")).header(HOST, bad)).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "FORBIDDEN");
        let (status, _) = send(host.client.get(host.url("/")).header(HOST, bad)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "the page is refused too");
    }
    for good in ["localhost", "127.0.0.1:1", "[::1]:8080"] {
        let (status, _) = send(
            host.authed(reqwest::Method::GET, "/api/sessions/s1/questions")
                .header(HOST, good),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{good}");
    }
}

#[tokio::test]
async fn allow_host_admits_that_host_and_its_origin() {
    let host = TestHost::start_with(|config| config.allow_hosts = vec!["box.lan".to_owned()]).await;
    let port = host.state.config().port;
    let (status, _) = send(
        host.authed(reqwest::Method::GET, "/api/sessions/s1/questions")
            .header(HOST, format!("box.lan:{port}"))
            .header(ORIGIN, format!("http://box.lan:{port}")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(
        host.authed(reqwest::Method::GET, "/api/sessions/s1/questions")
            .header(HOST, "other.lan"),
    )
    .await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "FORBIDDEN");
}

#[tokio::test]
async fn a_foreign_origin_is_forbidden_and_the_hosts_own_is_allowed() {
    let host = TestHost::start().await;
    let port = host.state.config().port;
    let foreign = [
        "http://evil.example".to_owned(),
        format!("http://evil.example:{port}"),
        format!("https://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        "null".to_owned(),
    ];
    for origin in &foreign {
        let (status, body) = send(
            host.authed(reqwest::Method::POST, "/api/sessions/s1/messages")
                .header(ORIGIN, origin)
                .body(json!({"text": "hi"}).to_string()),
        )
        .await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "FORBIDDEN");
    }
    for own in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let (status, body) = send(
            host.authed(reqwest::Method::POST, "/api/sessions/s1/messages")
                .header(ORIGIN, &own)
                .body(json!({"text": "hi"}).to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{own}: {body}");
    }
}

#[tokio::test]
async fn bodies_over_256_kib_are_refused_with_payload_too_large() {
    let host = TestHost::start().await;
    let huge = format!(
        r#"{{"questions": [{{"id": "a", "question": "{}"}}]}}"#,
        "x".repeat(300 * 1024)
    );
    for path in [
        "/api/sessions/s1/ask",
        "/api/sessions/s1/questions/q_1/answer",
        "/api/sessions/s1/messages",
    ] {
        let (status, body) = host.post(path, huge.clone()).await;
        assert_error(
            status,
            &body,
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
        );
    }
    assert!(host.pending_ids("s1").await.is_empty());
    // Just under the limit is read (and then judged by core).
    let big_but_fine = format!(
        r#"{{"questions": [{{"id": "a", "question": "{}"}}]}}"#,
        "x".repeat(200 * 1024)
    );
    let (status, body) = host.post("/api/sessions/s1/ask", big_but_fine).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "BAD_REQUEST");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("questions[0].question"),
        "{body}"
    );
}

#[tokio::test]
async fn session_ids_outside_the_pattern_are_bad_requests() {
    let host = TestHost::start().await;
    let too_long = "a".repeat(65);
    for session in ["a.b", "a%20b", "%C3%A9", too_long.as_str(), "a%2Fb"] {
        let (status, body) = host
            .get(&format!("/api/sessions/{session}/questions"))
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "BAD_REQUEST");
        let (status, body) = host
            .post(&format!("/api/sessions/{session}/ask"), "{}")
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "BAD_REQUEST");
    }
    let longest = "A-z_9".repeat(12) + "abcd";
    assert_eq!(longest.len(), 64);
    let (status, _) = host
        .get(&format!("/api/sessions/{longest}/questions"))
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_in_json() {
    let host = TestHost::start().await;
    let (status, body) = host.get("/api/sessions/s1/nothing").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NOT_FOUND");
    let (status, body) = host.get("/api/sessions/s1/ask").await;
    assert_error(
        status,
        &body,
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
    );
}
