//! Issue 24's people and who may answer, over HTTP: people and agent tokens
//! with credentials of their own, a question's audience (a person, a role,
//! anyone), escalation to a second role, removal taking effect at once, and
//! single-person mode left as it was. The escalation's rule is the pending
//! table's (`host/src/server/pending/table/tests.rs`, simulated time); here
//! it runs once on the real clock, in the real binary.

use ask_user_tests::host_process::{HostProcess, host_binary};
use ask_user_tests::http_host::{EventStream, TestHost, assert_error, send};
use ask_user_tests::wait::within;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::process::Command;

const SESSION: &str = "team";

fn question(audience: Value) -> Value {
    json!({
        "questions": [{"id": "deploy", "question": "Deploy to production?",
                       "options": [{"label": "Yes"}, {"label": "No"}]}],
        "audience": audience,
    })
}

fn yes() -> Value {
    json!({"answers": [{"id": "deploy", "selected": ["Yes"]}]})
}

/// Adds a person with the master token: their credential.
async fn add_person(host: &TestHost, name: &str, roles: &[&str]) -> String {
    let (status, body) = host
        .post(
            "/api/people",
            json!({"name": name, "roles": roles}).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["credential"]
        .as_str()
        .expect("the credential, once")
        .to_owned()
}

/// `method path` with `credential` as the Bearer token.
async fn as_(
    host: &TestHost,
    credential: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let mut builder = host
        .client
        .request(method, host.url(path))
        .bearer_auth(credential);
    if let Some(body) = body {
        builder = builder.body(body.to_string());
    }
    send(builder).await
}

async fn pending_ids_as(host: &TestHost, credential: &str) -> Vec<String> {
    let (status, body) = as_(
        host,
        credential,
        Method::GET,
        &format!("/api/sessions/{SESSION}/questions"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn events_as(host: &TestHost, credential: &str) -> EventStream {
    let response = host
        .client
        .get(host.url(&format!("/api/sessions/{SESSION}/events")))
        .bearer_auth(credential)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    EventStream::new(response)
}

async fn answer_as(host: &TestHost, credential: &str, id: &str) -> (StatusCode, Value) {
    as_(
        host,
        credential,
        Method::POST,
        &format!("/api/sessions/{SESSION}/questions/{id}/answer"),
        Some(&yes()),
    )
    .await
}

async fn cancel_as(host: &TestHost, credential: &str, id: &str) -> (StatusCode, Value) {
    as_(
        host,
        credential,
        Method::POST,
        &format!("/api/sessions/{SESSION}/questions/{id}/cancel"),
        None,
    )
    .await
}

/// How many questions `credential`'s inbox lists in [`SESSION`].
async fn inbox_count_as(host: &TestHost, credential: &str) -> u64 {
    let (status, body) = as_(host, credential, Method::GET, "/api/sessions", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == SESSION)
        .map_or(0, |s| s["pending"].as_u64().unwrap())
}

/// Asks `request` as the master token and waits until it is pending: the
/// ask's task and the question's id.
async fn ask(
    host: &TestHost,
    request: &Value,
) -> (tokio::task::JoinHandle<(StatusCode, Value)>, String) {
    let mut owner = host.events(SESSION).await;
    owner.replay().await;
    let asked = host.ask(SESSION, "", request);
    let id = owner.requested().await.id;
    (asked, id)
}

#[tokio::test]
async fn a_person_outside_the_audience_neither_sees_nor_answers_it_and_the_record_names_who_did() {
    let host = TestHost::start().await;
    let ana = add_person(&host, "ana", &["oncall"]).await;
    let bo = add_person(&host, "bo", &[]).await;
    let mut bo_stream = events_as(&host, &bo).await;
    assert_eq!(bo_stream.replay().await, (vec![], vec![]));
    let (asked, id) = ask(&host, &question(json!({"person": "ana"}))).await;

    assert!(pending_ids_as(&host, &bo).await.is_empty(), "bo's list");
    assert_eq!(inbox_count_as(&host, &bo).await, 0, "bo's inbox");
    let mut bo_later = events_as(&host, &bo).await;
    assert_eq!(bo_later.replay().await, (vec![], vec![]), "bo's replay");
    for refused in [
        answer_as(&host, &bo, &id).await,
        cancel_as(&host, &bo, &id).await,
    ] {
        assert_error(
            &refused,
            StatusCode::FORBIDDEN,
            "NOT_IN_AUDIENCE",
            "\"bo\" is not in",
        );
    }

    assert_eq!(pending_ids_as(&host, &ana).await, [id.as_str()]);
    assert_eq!(inbox_count_as(&host, &ana).await, 1);
    let (status, body) = answer_as(&host, &ana, &id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, answer) = within("the ask to return", asked).await.unwrap();
    assert_eq!(
        (status, &answer["answers"][0]["selected"][0]),
        (StatusCode::OK, &json!("Yes"))
    );

    // Bo's stream saw nothing of it: the next frame is a message after it.
    host.post(
        &format!("/api/sessions/{SESSION}/messages"),
        json!({"text": "thanks"}).to_string(),
    )
    .await;
    assert_eq!(bo_stream.next().await.event, "message/created");
    let (_, transcript) = as_(
        &host,
        &bo,
        Method::GET,
        &format!("/api/sessions/{SESSION}/transcript"),
        None,
    )
    .await;
    assert!(
        transcript["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] != "record"),
        "bo's transcript holds no record of it: {transcript}"
    );
    let (_, transcript) = host
        .get(&format!("/api/sessions/{SESSION}/transcript"))
        .await;
    let record = transcript["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "record")
        .expect("the owner's transcript holds the record");
    assert_eq!(
        record["by"],
        json!({"kind": "person", "person": "ana"}),
        "the record names the person"
    );
}

#[tokio::test]
async fn a_role_audience_admits_everyone_holding_the_role_and_no_one_else() {
    let host = TestHost::start().await;
    let ana = add_person(&host, "ana", &["oncall", "db"]).await;
    let carl = add_person(&host, "carl", &["oncall"]).await;
    let bo = add_person(&host, "bo", &["db"]).await;
    let (asked, id) = ask(&host, &question(json!({"role": "oncall"}))).await;
    assert_eq!(pending_ids_as(&host, &ana).await, [id.as_str()]);
    assert_eq!(pending_ids_as(&host, &carl).await, [id.as_str()]);
    assert!(pending_ids_as(&host, &bo).await.is_empty());
    assert_error(
        &answer_as(&host, &bo, &id).await,
        StatusCode::FORBIDDEN,
        "NOT_IN_AUDIENCE",
        "not in this question's audience",
    );
    let (status, body) = answer_as(&host, &carl, &id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(within("the ask", asked).await.unwrap().0, StatusCode::OK);
    // Anyone (the default): every person sees it.
    let (asked, id) = ask(&host, &question(json!("anyone"))).await;
    assert_eq!(pending_ids_as(&host, &bo).await, [id.as_str()]);
    assert_eq!(cancel_as(&host, &bo, &id).await.0, StatusCode::OK);
    let cancelled = within("the ask", asked).await.unwrap();
    assert_eq!(
        cancelled.1["error"]["code"], "ASK_CANCELLED",
        "{}",
        cancelled.1
    );
}

#[tokio::test]
async fn an_agent_token_asks_but_never_answers_cancels_or_reads_the_peoples_side() {
    let host = TestHost::start().await;
    let (status, agent) = host
        .post("/api/agents", json!({"name": "ci-runner"}).to_string())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let token = agent["credential"].as_str().unwrap().to_owned();
    assert!(token.starts_with("aua_"));

    let mut owner = host.events(SESSION).await;
    owner.replay().await;
    let agent_ask = host
        .client
        .post(host.url(&format!("/api/sessions/{SESSION}/ask")))
        .bearer_auth(&token)
        .body(question(json!("anyone")).to_string());
    let asked = tokio::spawn(send(agent_ask));
    let id = owner.requested().await.id;

    for refused in [
        answer_as(&host, &token, &id).await,
        cancel_as(&host, &token, &id).await,
    ] {
        assert_error(
            &refused,
            StatusCode::FORBIDDEN,
            "AGENT_CANNOT_ANSWER",
            "never",
        );
    }
    let (status, body) = as_(
        &host,
        &token,
        Method::GET,
        &format!("/api/sessions/{SESSION}/questions"),
        None,
    )
    .await;
    assert_error(
        &(status, body),
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
        "may only ask",
    );
    let (status, body) = as_(&host, &token, Method::GET, "/api/people", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    assert_eq!(host.answer(SESSION, &id, &yes()).await.0, StatusCode::OK);
    let (status, answer) = within("the agent's ask", asked).await.unwrap();
    assert_eq!(
        status,
        StatusCode::OK,
        "the agent's ask is answered: {answer}"
    );

    let removed = send(host.authed(Method::DELETE, "/api/agents/ci-runner")).await;
    assert_eq!(removed.0, StatusCode::NO_CONTENT);
    let again = as_(
        &host,
        &token,
        Method::POST,
        &format!("/api/sessions/{SESSION}/ask"),
        Some(&question(json!("anyone"))),
    )
    .await;
    assert_eq!(
        again.0,
        StatusCode::UNAUTHORIZED,
        "a removed token: {}",
        again.1
    );
}

#[tokio::test]
async fn a_removed_persons_credential_is_refused_and_their_stream_ends_at_once() {
    let host = TestHost::start().await;
    let ana = add_person(&host, "ana", &[]).await;
    let mut stream = events_as(&host, &ana).await;
    stream.replay().await;
    let listed = host.get("/api/people").await.1;
    assert_eq!(listed["people"][0]["name"], "ana");
    assert!(
        listed["people"][0].get("credential").is_none(),
        "never listed: {listed}"
    );
    let removed = send(host.authed(Method::DELETE, "/api/people/ana")).await;
    assert_eq!(removed.0, StatusCode::NO_CONTENT);
    assert_eq!(
        within("ana's stream to end", stream.next_frame()).await,
        None,
        "the stream ends"
    );
    let refused = as_(&host, &ana, Method::GET, "/api/sessions", None).await;
    assert_eq!(refused.0, StatusCode::UNAUTHORIZED, "{}", refused.1);
    assert_eq!(host.get("/api/people").await.1, json!({"people": []}));
}

#[tokio::test]
async fn people_are_named_once_and_their_names_and_roles_are_checked() {
    let host = TestHost::start().await;
    add_person(&host, "ana", &[]).await;
    let twice = host
        .post("/api/people", json!({"name": "ana"}).to_string())
        .await;
    assert_error(&twice, StatusCode::CONFLICT, "CONFLICT", "exists already");
    let spaced = host
        .post("/api/people", json!({"name": "a b"}).to_string())
        .await;
    assert_error(&spaced, StatusCode::BAD_REQUEST, "BAD_REQUEST", "name:");
    let role = host
        .post(
            "/api/people",
            json!({"name": "bo", "roles": ["on call"]}).to_string(),
        )
        .await;
    assert_error(&role, StatusCode::BAD_REQUEST, "BAD_REQUEST", "roles[0]");
    let ana = host.get("/api/people").await.1["people"][0]["id"].clone();
    let person = add_person(&host, "carl", &[]).await;
    let by_person = as_(
        &host,
        &person,
        Method::POST,
        "/api/people",
        Some(&json!({"name": "eve"})),
    )
    .await;
    assert_error(
        &by_person,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
        "master token",
    );
    assert!(ana.is_string());
}

#[tokio::test]
async fn with_no_people_the_master_token_sees_and_answers_whatever_the_audience_says() {
    let host = TestHost::start().await;
    let (asked, id) = ask(&host, &question(json!({"person": "ana"}))).await;
    assert_eq!(host.pending_ids(SESSION).await, [id.as_str()]);
    assert_eq!(host.answer(SESSION, &id, &yes()).await.0, StatusCode::OK);
    assert_eq!(within("the ask", asked).await.unwrap().0, StatusCode::OK);
    let (_, transcript) = host
        .get(&format!("/api/sessions/{SESSION}/transcript"))
        .await;
    let entries = transcript["entries"].as_array().unwrap();
    assert_eq!(entries[0]["by"], json!({"kind": "page"}), "as before");
}

#[tokio::test]
async fn the_master_token_keeps_every_right_when_there_are_people() {
    let host = TestHost::start().await;
    add_person(&host, "ana", &[]).await;
    let (asked, id) = ask(&host, &question(json!({"person": "ana"}))).await;
    assert_eq!(host.pending_ids(SESSION).await, [id.as_str()]);
    assert_eq!(host.answer(SESSION, &id, &yes()).await.0, StatusCode::OK);
    assert_eq!(within("the ask", asked).await.unwrap().0, StatusCode::OK);
}

/// The real binary, on the real clock: `ask-user people add` makes the
/// people, an ask for role `oncall` escalates to `leads` after one second,
/// and only then does a lead's stream show it and their answer count.
#[tokio::test]
async fn escalation_widens_the_audience_on_time_in_the_real_host() {
    let dist = std::env::temp_dir().join(format!("auq-people-{}", std::process::id()));
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><title>page</title>",
    )
    .unwrap();
    let host = HostProcess::start(&dist, &[]).expect("the host starts (build ask-user first)");
    let token = host.token().unwrap().to_owned();
    let add = |name: &str, role: &str| -> String {
        let output = Command::new(host_binary())
            .args([
                "people",
                "add",
                name,
                "--role",
                role,
                "--url",
                host.origin(),
            ])
            .env("ASK_USER_TOKEN", &token)
            .output()
            .expect("run ask-user people add");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
            .split_whitespace()
            .find(|word| word.starts_with("aup_"))
            .unwrap_or_else(|| panic!("no credential in {stdout:?}"))
            .to_owned()
    };
    let ana = add("ana", "oncall");
    let lee = add("lee", "leads");
    let listed = Command::new(host_binary())
        .args(["people", "list", "--url", host.origin()])
        .env("ASK_USER_TOKEN", &token)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("ana") && listed.contains("roles: leads"),
        "{listed}"
    );
    assert!(!listed.contains("aup_"), "never a credential: {listed}");

    let client = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", host.origin());
    let stream_of = |credential: &str| {
        client
            .get(url(&format!("/api/sessions/{SESSION}/events")))
            .bearer_auth(credential)
            .send()
    };
    let mut lee_stream = EventStream::new(stream_of(&lee).await.unwrap());
    assert_eq!(lee_stream.replay().await, (vec![], vec![]));
    let mut ana_stream = EventStream::new(stream_of(&ana).await.unwrap());
    ana_stream.replay().await;
    let mut request = question(json!({"role": "oncall"}));
    request["escalate_after"] = json!({"seconds": 2, "role": "leads"});
    let asked = tokio::spawn(send(
        client
            .post(url(&format!("/api/sessions/{SESSION}/ask")))
            .bearer_auth(&token)
            .body(request.to_string()),
    ));
    let id = ana_stream.requested().await.id;
    let answer = |credential: &str| {
        send(
            client
                .post(url(&format!(
                    "/api/sessions/{SESSION}/questions/{id}/answer"
                )))
                .bearer_auth(credential)
                .body(yes().to_string()),
        )
    };
    // Well within the two seconds: lee is not in the audience yet.
    assert_error(
        &answer(&lee).await,
        StatusCode::FORBIDDEN,
        "NOT_IN_AUDIENCE",
        "\"lee\"",
    );
    let escalated = lee_stream.requested().await;
    assert_eq!(
        escalated.id, id,
        "the question reaches lee when it escalates"
    );
    let (status, body) = answer(&lee).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = within("the ask", asked).await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let transcript = send(
        client
            .get(url(&format!("/api/sessions/{SESSION}/transcript")))
            .bearer_auth(&token),
    )
    .await
    .1;
    assert_eq!(
        transcript["entries"][0]["by"]["person"], "lee",
        "{transcript}"
    );
}

/// A phone paired with a person's credential is theirs: it sees their
/// audience only, its answers name both, and it goes when they do.
#[tokio::test]
async fn a_device_paired_with_a_persons_credential_is_theirs_and_goes_with_them() {
    use ask_user_host::server::security::RemoteOrigin;
    use ask_user_tests::tls_front::{TestCert, TlsFront, phone_request};
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let origin = front.origin();
    let host = TestHost::start_with(|config| {
        config.remote = Some(RemoteOrigin::parse(&origin).unwrap());
    })
    .await;
    front.forward_to_origin(&host.base);
    let ana = add_person(&host, "ana", &["oncall"]).await;
    let bo = add_person(&host, "bo", &[]).await;

    // Ana opens the pairing and approves it with her own credential.
    let (status, opened) = as_(&host, &ana, Method::POST, "/api/pairings", Some(&json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{opened}");
    let (id, code) = (
        opened["id"].as_str().unwrap(),
        opened["code"].as_str().unwrap(),
    );
    let phone = |method: &'static str, path: String, cookie: Option<String>, body: Value| {
        let (cert, front) = (&cert, &front);
        async move { phone_request(cert, front, method, &path, cookie.as_deref(), &body).await }
    };
    let claim = phone(
        "POST",
        "/api/pair/claim".into(),
        None,
        json!({"code": code, "name": "Ana's Pixel"}),
    )
    .await;
    assert_eq!(claim.status, hyper::StatusCode::ACCEPTED);
    let approve_path = format!("/api/pairings/{id}/approve");
    let by_bo = as_(&host, &bo, Method::POST, &approve_path, Some(&json!({}))).await;
    assert_error(
        &by_bo,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
        "only the pairings they opened",
    );
    let approved = as_(&host, &ana, Method::POST, &approve_path, Some(&json!({}))).await;
    assert_eq!(approved.0, StatusCode::OK, "{}", approved.1);
    let collected = phone(
        "POST",
        "/api/pair/collect".into(),
        None,
        json!({"code": code}),
    )
    .await;
    assert_eq!(collected.status, hyper::StatusCode::OK);
    let cookie = collected.headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    let (asked_bo, for_bo) = ask(&host, &question(json!({"person": "bo"}))).await;
    let (asked_ana, for_ana) = ask(&host, &question(json!({"role": "oncall"}))).await;
    let listed = phone(
        "GET",
        format!("/api/sessions/{SESSION}/questions"),
        Some(cookie.clone()),
        Value::Null,
    )
    .await;
    let ids: Vec<String> = listed.json()["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        [for_ana.as_str()],
        "ana's phone lists ana's questions only"
    );
    let refused = phone(
        "POST",
        format!("/api/sessions/{SESSION}/questions/{for_bo}/answer"),
        Some(cookie.clone()),
        yes(),
    )
    .await;
    assert_eq!(refused.status, hyper::StatusCode::FORBIDDEN);
    assert_eq!(refused.json()["error"]["code"], "NOT_IN_AUDIENCE");
    let answered = phone(
        "POST",
        format!("/api/sessions/{SESSION}/questions/{for_ana}/answer"),
        Some(cookie.clone()),
        yes(),
    )
    .await;
    assert_eq!(
        answered.status,
        hyper::StatusCode::OK,
        "{:?}",
        answered.body
    );
    assert_eq!(
        within("ana's ask", asked_ana).await.unwrap().0,
        StatusCode::OK
    );
    let (_, transcript) = host
        .get(&format!("/api/sessions/{SESSION}/transcript"))
        .await;
    let by = &transcript["entries"][0]["by"];
    assert_eq!(
        (&by["kind"], &by["person"], &by["device"]["name"]),
        (&json!("device"), &json!("ana"), &json!("Ana's Pixel"))
    );

    // Ana goes: her phone goes with her.
    assert_eq!(
        send(host.authed(Method::DELETE, "/api/people/ana")).await.0,
        StatusCode::NO_CONTENT
    );
    let after = phone("GET", "/api/sessions".into(), Some(cookie), Value::Null).await;
    assert_eq!(after.status, hyper::StatusCode::UNAUTHORIZED);
    assert_eq!(host.get("/api/devices").await.1["devices"], json!([]));
    assert_eq!(host.cancel(SESSION, &for_bo).await.0, StatusCode::OK);
    within("bo's ask", asked_bo).await.unwrap();
}

/// An agent token asks through MCP too, with an audience in the tool's
/// arguments; the person in it answers.
#[tokio::test]
async fn an_agent_token_asks_over_mcp_with_an_audience_and_the_person_in_it_answers() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let host = TestHost::start().await;
    let ana = add_person(&host, "ana", &[]).await;
    let bo = add_person(&host, "bo", &[]).await;
    let (_, agent) = host
        .post("/api/agents", json!({"name": "claude"}).to_string())
        .await;
    let token = agent["credential"].as_str().unwrap().to_owned();
    let config =
        StreamableHttpClientTransportConfig::with_uri(host.url(&format!("/mcp?session={SESSION}")))
            .auth_header(token);
    let client = within(
        "the MCP handshake",
        ().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .expect("an agent token may use /mcp");
    let Value::Object(arguments) = question(json!({"person": "ana"})) else {
        unreachable!()
    };
    let peer = client.peer().clone();
    let call = tokio::spawn(async move {
        peer.call_tool(
            rmcp::model::CallToolRequestParams::new(ask_user_core::tool::TOOL_NAME)
                .with_arguments(arguments),
        )
        .await
    });
    let mut ana_stream = events_as(&host, &ana).await;
    let id = loop {
        match ana_stream.next().await.session_event() {
            ask_user_core::wire::SessionEvent::QuestionRequested(q) => break q.id,
            _ => continue,
        }
    };
    assert!(pending_ids_as(&host, &bo).await.is_empty(), "not bo's");
    assert_eq!(answer_as(&host, &ana, &id).await.0, StatusCode::OK);
    let result = within("the tool call", call)
        .await
        .unwrap()
        .expect("the call returns");
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("\"Yes\""), "the answer comes back: {text}");
}
