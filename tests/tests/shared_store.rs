//! Several `ask-user serve` hosts sharing one PostgreSQL (issue 24), against
//! a real PostgreSQL the harness starts (`ask_user_tests::postgres`) and real
//! host processes, some behind a round-robin proxy: a question asked through
//! one host is answered on another, the first answer decided in the database
//! wins, a host killed mid-wait loses nothing, a database restart loses
//! nothing acknowledged, a newer schema is refused.

use ask_user_core::wire::SessionEvent;
use ask_user_tests::host_process::HostProcess;
use ask_user_tests::http_host::EventStream;
use ask_user_tests::postgres::PostgresServer;
use ask_user_tests::round_robin::RoundRobin;
use ask_user_tests::wait::{until, within};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::net::SocketAddr;

/// The token every host shares (a load balancer sends a person's requests to any).
const TOKEN: &str = "shared-store-test-token-0123456789";

fn postgres() -> PostgresServer {
    PostgresServer::start().unwrap_or_else(|why| panic!("{why}"))
}

/// A host on the database `url` (with its password and the shared token),
/// started with `args` and the environment `env` besides, or why it would not start.
fn try_start_host_on(
    pg: &PostgresServer,
    url: &str,
    args: &[&str],
    env: &[(&str, &OsStr)],
) -> Result<HostProcess, String> {
    let mut all: Vec<(&str, &OsStr)> = vec![
        ("ASK_USER_STORE", OsStr::new(url)),
        ("PGPASSWORD", OsStr::new(pg.password())),
        ("ASK_USER_TOKEN", OsStr::new(TOKEN)),
    ];
    all.extend_from_slice(env);
    HostProcess::start_with_env_only(args, &all).map_err(|e| e.to_string())
}

/// A host on `pg`'s database started with `args`.
fn start_host_with(pg: &PostgresServer, args: &[&str]) -> HostProcess {
    try_start_host_on(pg, &pg.url(), args, &[]).unwrap_or_else(|why| panic!("{why}"))
}

fn start_host(pg: &PostgresServer) -> HostProcess {
    start_host_with(pg, &[])
}

fn addr(host: &HostProcess) -> SocketAddr {
    host.origin()
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .expect("the host's origin is http://IP:PORT")
}

/// A client that opens a new connection per request, so a round-robin proxy
/// sends each to the next host.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client")
}

fn request(question: &str) -> Value {
    json!({"questions": [{"id": "db", "question": question,
        "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]})
}

fn choice(label: &str) -> Value {
    json!({"answers": [{"id": "db", "selected": [label]}]})
}

async fn send(builder: reqwest::RequestBuilder) -> (StatusCode, Value) {
    send_maybe(builder)
        .await
        .expect("the request reaches a host")
}

/// The response, or why none came (the host died).
async fn send_maybe(builder: reqwest::RequestBuilder) -> Result<(StatusCode, Value), String> {
    send_maybe_as(TOKEN, builder).await
}

/// [`send_maybe`] with `credential` instead of the hosts' token.
async fn send_maybe_as(
    credential: &str,
    builder: reqwest::RequestBuilder,
) -> Result<(StatusCode, Value), String> {
    let response = within("a response", builder.bearer_auth(credential).send())
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    Ok((status, body))
}

/// Asks `request` through `origin` in `session`, waiting in the background.
fn ask(
    origin: &str,
    session: &str,
    request: &Value,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let asked = ask_maybe(origin, session, request);
    tokio::spawn(async move { asked.await.expect("ran").expect("the host answers the ask") })
}

/// [`ask`], when the host may die meanwhile.
fn ask_maybe(
    origin: &str,
    session: &str,
    request: &Value,
) -> tokio::task::JoinHandle<Result<(StatusCode, Value), String>> {
    let url = format!("{origin}/api/sessions/{session}/ask");
    let request = request.clone();
    tokio::spawn(async move { send_maybe(client().post(url).json(&request)).await })
}

async fn pending_ids(origin: &str, session: &str) -> Vec<String> {
    pending_ids_as(origin, session, TOKEN).await
}

async fn answer(origin: &str, session: &str, id: &str, answer: &Value) -> (StatusCode, Value) {
    let url = format!("{origin}/api/sessions/{session}/questions/{id}/answer");
    send(client().post(url).json(answer)).await
}

async fn events(origin: &str, session: &str) -> EventStream {
    let response = within(
        "the event stream to open",
        client()
            .get(format!("{origin}/api/sessions/{session}/events"))
            .bearer_auth(TOKEN)
            .send(),
    )
    .await
    .expect("an event stream");
    assert_eq!(response.status(), StatusCode::OK);
    EventStream::new(response)
}

/// Waits until `origin` lists exactly one pending question in `session`, and returns it.
async fn the_one_pending(origin: &str, session: &str) -> String {
    let mut ids = Vec::new();
    until("the question to show on the host", async || {
        ids = pending_ids(origin, session).await;
        ids.len() == 1
    })
    .await;
    ids.remove(0)
}

#[tokio::test]
async fn behind_a_round_robin_proxy_a_question_asked_through_one_host_is_answered_on_another() {
    let pg = postgres();
    let hosts: Vec<HostProcess> = (0..3).map(|_| start_host(&pg)).collect();
    let proxy = RoundRobin::start(hosts.iter().map(addr).collect()).await;
    let origin = proxy.origin();

    // Connection 0 (host 0) asks; the next ones land on hosts 1, 2, 0, …
    let asked = ask(&origin, "team", &request("Which store?"));
    let id = the_one_pending(hosts[1].origin(), "team").await;
    for host in &hosts {
        assert_eq!(
            pending_ids(host.origin(), "team").await,
            [id.as_str()],
            "every host shows it"
        );
    }
    // Through the proxy, the answer lands on whichever host comes next.
    let answered = answer(&origin, "team", &id, &choice("SQLite")).await;
    assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
    let (status, batch) = within("the agent's answer", asked)
        .await
        .expect("the ask ran");
    assert_eq!(status, StatusCode::OK, "{batch}");
    assert_eq!(
        batch,
        choice("SQLite"),
        "the agent on host 0 gets the answer given elsewhere"
    );
    for host in &hosts {
        until("every host to drop the answered question", async || {
            pending_ids(host.origin(), "team").await.is_empty()
        })
        .await;
    }
    // The record is one: every host's history has it once.
    let (_, history) =
        send(client().get(format!("{}/api/history?session=team", hosts[2].origin()))).await;
    let records = history["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{history}");
    assert_eq!(records[0]["question"]["id"], json!(id));
    assert_eq!(records[0]["answer"], choice("SQLite"));
    // Nobody asked for notifications: no host claimed a push (a write per
    // question for nothing).
    let claims = pg
        .psql("SELECT count(*) FROM ask_user.pushes")
        .unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(claims.trim(), "0", "{claims}");
}

#[tokio::test]
async fn concurrent_answers_on_two_hosts_one_wins_and_both_pages_see_the_same_resolution() {
    let pg = postgres();
    let (a, b) = (start_host(&pg), start_host(&pg));
    for round in 0..5 {
        let session = format!("race-{round}");
        let mut page_a = events(a.origin(), &session).await;
        let mut page_b = events(b.origin(), &session).await;
        let asked = ask(a.origin(), &session, &request("Which store?"));
        let id = the_one_pending(b.origin(), &session).await;
        let (postgres, sqlite) = (choice("Postgres"), choice("SQLite"));
        let (on_a, on_b) = tokio::join!(
            answer(a.origin(), &session, &id, &postgres),
            answer(b.origin(), &session, &id, &sqlite),
        );
        let wins = [&on_a, &on_b]
            .iter()
            .filter(|r| r.0 == StatusCode::OK)
            .count();
        assert_eq!(wins, 1, "exactly one answer wins: {on_a:?} {on_b:?}");
        let loser = if on_a.0 == StatusCode::OK {
            &on_b
        } else {
            &on_a
        };
        assert_eq!(loser.0, StatusCode::CONFLICT, "{loser:?}");
        assert_eq!(loser.1["error"]["code"], json!("NOT_PENDING"), "{loser:?}");
        let winner = if on_a.0 == StatusCode::OK {
            "Postgres"
        } else {
            "SQLite"
        };
        let (_, batch) = within("the agent's answer", asked)
            .await
            .expect("the ask ran");
        assert_eq!(batch, choice(winner), "the agent gets the winning answer");
        for page in [&mut page_a, &mut page_b] {
            let resolved = loop {
                if let SessionEvent::QuestionResolved(resolved) = page.next().await.session_event()
                {
                    break resolved;
                }
            };
            assert_eq!(resolved.id, id);
            let record = resolved.record.expect("a record");
            assert_eq!(
                serde_json::to_value(&record.answer).unwrap(),
                choice(winner),
                "both pages show the answer that won"
            );
        }
    }
}

#[tokio::test]
async fn a_host_killed_mid_wait_loses_nothing_and_the_re_ask_through_another_host_gets_the_answer()
{
    let pg = postgres();
    let mut a = start_host(&pg);
    let b = start_host(&pg);
    let asked = ask_maybe(a.origin(), "crash", &request("Ship it?"));
    let id = the_one_pending(b.origin(), "crash").await;
    let mut page_b = events(b.origin(), "crash").await;
    a.kill();
    let died = within("the ask through the killed host to fail", asked)
        .await
        .expect("the ask ran");
    assert!(died.is_err(), "the killed host answered nothing: {died:?}");
    // Host B sees host A gone (its lock dropped with its connection) and the
    // question detached. Until then a call through A still waits on it as far
    // as the record knows, and a re-ask would be a new question.
    frame_about(&mut page_b, "question/detached", &id).await;

    // The agent asks the same again, through the other host: the same question.
    let again = ask(b.origin(), "crash", &request("Ship it?"));
    frame_about(&mut page_b, "question/attached", &id).await;
    assert_eq!(
        pending_ids(b.origin(), "crash").await,
        [id.as_str()],
        "no second card"
    );
    let answered = answer(b.origin(), "crash", &id, &choice("Postgres")).await;
    assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
    let (status, batch) = within("the re-ask's answer", again)
        .await
        .expect("the ask ran");
    assert_eq!((status, batch), (StatusCode::OK, choice("Postgres")));
}

#[tokio::test]
async fn a_database_restart_mid_run_loses_nothing_acknowledged_and_the_hosts_reconcile() {
    let pg = postgres();
    let (a, b) = (start_host(&pg), start_host(&pg));
    // Acknowledged before the restart: one answered, one waiting.
    let first = ask(a.origin(), "outage", &request("Before?"));
    let done = the_one_pending(b.origin(), "outage").await;
    assert_eq!(
        answer(b.origin(), "outage", &done, &choice("SQLite"))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        within("the first answer", first).await.unwrap().1,
        choice("SQLite")
    );
    let waiting = ask(a.origin(), "outage", &request("Across the outage?"));
    let id = the_one_pending(b.origin(), "outage").await;

    pg.stop().unwrap_or_else(|why| panic!("{why}"));
    pg.resume().unwrap_or_else(|why| panic!("{why}"));

    // Host B's first write after the restart may find its connection gone
    // (503); it reconnects and the answer is kept then.
    let mut answered = (StatusCode::SERVICE_UNAVAILABLE, Value::Null);
    until("host B to write again", async || {
        answered = answer(b.origin(), "outage", &id, &choice("Postgres")).await;
        answered.0 != StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
    let (status, batch) = within("the answer across the outage", waiting)
        .await
        .expect("ran");
    assert_eq!(
        (status, batch),
        (StatusCode::OK, choice("Postgres")),
        "host A reconciled"
    );
    let (_, history) =
        send(client().get(format!("{}/api/history?session=outage", a.origin()))).await;
    let ids: Vec<&str> = history["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["question"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [id.as_str(), done.as_str()],
        "both answers are kept, newest first"
    );
}

#[tokio::test]
async fn a_database_of_a_newer_schema_is_refused_naming_both_versions() {
    let pg = postgres();
    pg.psql(
        "CREATE SCHEMA ask_user; CREATE TABLE ask_user.schema_version (version integer NOT NULL); \
         INSERT INTO ask_user.schema_version VALUES (99)",
    )
    .unwrap_or_else(|why| panic!("{why}"));
    let refused = match try_start_host_on(&pg, &pg.url(), &[], &[]) {
        Ok(_) => panic!("a host started on a database of schema 99"),
        Err(error) => error,
    };
    assert!(
        refused.contains("schema 99, this one knows 3"),
        "the refusal names both versions: {refused}"
    );
    assert!(
        !refused.contains(pg.password()),
        "no password in the message: {refused}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'ask_user'")
            .unwrap(),
        "1",
        "nothing was created in it"
    );
}

/// The next frame of `page` named `event` about question `id` (others are skipped).
async fn frame_about(page: &mut EventStream, event: &str, id: &str) -> Value {
    loop {
        let frame = page.next().await;
        let json = frame.json();
        if frame.event == event && json["id"] == json!(id) {
            return json;
        }
    }
}

#[tokio::test]
async fn the_detach_grace_holds_across_hosts_a_re_ask_through_another_reattaches_and_the_end_reaches_every_page()
 {
    let pg = postgres();
    let start = || start_host_with(&pg, &["--detach-grace", "4"]);
    let (a, b) = (start(), start());
    let mut page_a = events(a.origin(), "grace").await;
    let mut page_b = events(b.origin(), "grace").await;
    let impatient = |origin: &str| {
        let url = format!("{origin}/api/sessions/grace/ask");
        let request = request("Wait for me?");
        async move {
            let client = reqwest::Client::builder()
                .timeout(std::time::Duration::from_millis(1500))
                .build()
                .unwrap();
            client
                .post(url)
                .bearer_auth(TOKEN)
                .json(&request)
                .send()
                .await
        }
    };
    // The agent stops waiting on host A: every page says the question is detached.
    assert!(
        impatient(a.origin()).await.is_err(),
        "the ask waits until its client gives up"
    );
    let id = the_one_pending(b.origin(), "grace").await;
    frame_about(&mut page_b, "question/detached", &id).await;
    frame_about(&mut page_a, "question/detached", &id).await;

    // Within the grace it asks the same through host B: the same question.
    let again = tokio::spawn(impatient(b.origin()));
    frame_about(&mut page_a, "question/attached", &id).await;
    assert_eq!(
        pending_ids(a.origin(), "grace").await,
        [id.as_str()],
        "no second card"
    );
    assert!(again.await.unwrap().is_err());
    frame_about(&mut page_a, "question/detached", &id).await;

    // Nobody asks again: after the grace it ends aborted on every page.
    for page in [&mut page_a, &mut page_b] {
        let resolved = within(
            "the grace to end",
            frame_about(page, "question/resolved", &id),
        )
        .await;
        assert_eq!(resolved["outcome"], json!("aborted"), "{resolved}");
    }
    let (_, history) =
        send(client().get(format!("{}/api/history?session=grace", a.origin()))).await;
    assert_eq!(
        history["records"][0]["outcome"],
        json!("aborted"),
        "{history}"
    );
    assert_eq!(
        history["records"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );
}

#[tokio::test]
async fn a_device_paired_through_one_host_works_on_another_and_a_revocation_reaches_it_at_once() {
    use ask_user_tests::tls_front::{TestCert, TlsFront, pair_phone_with, phone_request};
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let remote = format!("--remote={}", front.origin());
    let pg = postgres();
    let start = || start_host_with(&pg, &[remote.as_str()]);
    let (a, b) = (start(), start());

    // The front forwards to a balancer that sends the phone to host A first.
    let balancer = RoundRobin::start(vec![addr(&a)]).await;
    front.forward_to(balancer.addr());
    let (device, cookie) = pair_phone_with(a.origin(), TOKEN, &cert, &front, "Pixel").await;

    // The phone reaches host B now (the balancer moved it): its cookie works there.
    balancer.replace(0, addr(&b));
    let mut listed = hyper::StatusCode::UNAUTHORIZED;
    until("host B to know the device", async || {
        listed = phone_request(
            &cert,
            &front,
            "GET",
            "/api/sessions",
            Some(&cookie),
            &Value::Null,
        )
        .await
        .status;
        listed == hyper::StatusCode::OK
    })
    .await;

    // Revoked on host A: host B refuses it at once (no restart).
    let revoked = send(client().delete(format!("{}/api/devices/{device}", a.origin()))).await;
    assert_eq!(revoked.0, StatusCode::NO_CONTENT, "{revoked:?}");
    until("host B to refuse the revoked device", async || {
        phone_request(
            &cert,
            &front,
            "GET",
            "/api/sessions",
            Some(&cookie),
            &Value::Null,
        )
        .await
        .status
            == hyper::StatusCode::UNAUTHORIZED
    })
    .await;
}

// --- people, agent tokens, audiences and escalation across hosts ----------

/// `ask-user ARGS… --url` against `host` with the shared token: its stdout.
fn cli(host: &HostProcess, args: &[&str]) -> String {
    let output = std::process::Command::new(ask_user_tests::host_process::host_binary())
        .args(args)
        .args(["--url", host.origin()])
        .env("ASK_USER_TOKEN", TOKEN)
        .env_remove("ASK_USER_DATA_DIR")
        .output()
        .expect("run ask-user");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "ask-user {args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The credential `ask-user people add` or `agents add` printed (once).
fn credential_in(printed: &str, prefix: &str) -> String {
    printed
        .split_whitespace()
        .find(|word| word.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} credential in {printed:?}"))
        .to_owned()
}

/// `builder` sent with `credential` (a person's or an agent's) as the Bearer.
async fn send_as(credential: &str, builder: reqwest::RequestBuilder) -> (StatusCode, Value) {
    send_maybe_as(credential, builder)
        .await
        .expect("the request reaches a host")
}

/// Waits until `origin` knows `credential` (added through another host: its
/// notification is on its way) and returns what a request with it gets
/// (200 for a person, 403 for an agent token, which may only ask).
async fn known_on(origin: &str, credential: &str) -> StatusCode {
    let mut status = StatusCode::UNAUTHORIZED;
    until("the host to know the credential", async || {
        status = send_as(credential, client().get(format!("{origin}/api/sessions")))
            .await
            .0;
        status != StatusCode::UNAUTHORIZED
    })
    .await;
    status
}

fn for_audience(audience: Value) -> Value {
    let mut asked = request("Which store?");
    asked["audience"] = audience;
    asked
}

async fn pending_ids_as(origin: &str, session: &str, credential: &str) -> Vec<String> {
    let url = format!("{origin}/api/sessions/{session}/questions");
    let (status, body) = send_as(credential, client().get(url)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["pending"]
        .as_array()
        .expect("a pending list")
        .iter()
        .map(|q| q["id"].as_str().expect("an id").to_owned())
        .collect()
}

async fn answer_as(origin: &str, session: &str, id: &str, credential: &str) -> (StatusCode, Value) {
    let url = format!("{origin}/api/sessions/{session}/questions/{id}/answer");
    send_as(credential, client().post(url).json(&choice("Postgres"))).await
}

async fn events_as(origin: &str, session: &str, credential: &str) -> EventStream {
    let response = within(
        "the event stream to open",
        client()
            .get(format!("{origin}/api/sessions/{session}/events"))
            .bearer_auth(credential)
            .send(),
    )
    .await
    .expect("an event stream");
    assert_eq!(response.status(), StatusCode::OK);
    EventStream::new(response)
}

/// How many questions `credential`'s inbox lists in `session` on `origin`.
async fn inbox_count_as(origin: &str, session: &str, credential: &str) -> u64 {
    let (status, body) = send_as(credential, client().get(format!("{origin}/api/sessions"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["id"] == session)
        .map_or(0, |s| s["pending"].as_u64().unwrap_or(0))
}

#[tokio::test]
async fn a_person_added_through_one_host_answers_on_another_and_the_record_names_them() {
    let pg = postgres();
    let (a, b) = (start_host(&pg), start_host(&pg));
    let added = cli(&a, &["people", "add", "ana", "--role", "oncall"]);
    let ana = credential_in(&added, "aup_");
    // Host B knows her once the notification is there, and lists her
    // (never her credential).
    assert_eq!(known_on(b.origin(), &ana).await, StatusCode::OK);
    let listed = cli(&b, &["people", "list"]);
    assert!(
        listed.contains("ana") && listed.contains("roles: oncall"),
        "{listed}"
    );
    assert!(!listed.contains("aup_"), "never a credential: {listed}");

    let asked = ask(
        a.origin(),
        "people",
        &for_audience(json!({"person": "ana"})),
    );
    let id = the_one_pending(b.origin(), "people").await;
    assert_eq!(known_on(b.origin(), &ana).await, StatusCode::OK);
    assert_eq!(
        pending_ids_as(b.origin(), "people", &ana).await,
        [id.as_str()]
    );
    let (status, body) = answer_as(b.origin(), "people", &id, &ana).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, batch) = within("the agent's answer", asked).await.unwrap();
    assert_eq!((status, batch), (StatusCode::OK, choice("Postgres")));
    let (_, history) =
        send(client().get(format!("{}/api/history?session=people", a.origin()))).await;
    assert_eq!(
        history["records"][0]["by"]["person"],
        json!("ana"),
        "{history}"
    );

    // `ask-user history --store` reads the shared record (no host needed).
    let history_of = |format: &str| {
        let output = std::process::Command::new(ask_user_tests::host_process::host_binary())
            .args(["history", "--session", "people", "--format", format])
            .env("ASK_USER_STORE", pg.url())
            .env("PGPASSWORD", pg.password())
            // Never a real data directory, whatever happens.
            .env("ASK_USER_DATA_DIR", pg.dir().join("no-data-dir"))
            .output()
            .expect("run ask-user history");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let records: Value = serde_json::from_str(&history_of("json")).expect("a JSON array");
    assert_eq!(records.as_array().map(Vec::len), Some(1), "{records}");
    assert_eq!(records[0]["question"]["id"], json!(id));
    assert_eq!(records[0]["by"]["person"], json!("ana"), "{records}");
    let log = history_of("md");
    assert!(
        log.starts_with("# Decision log")
            && log.contains("Which store?")
            && log.contains("Answered by ana at"),
        "{log}"
    );

    // A second "ana" through host B is refused: one name across hosts.
    let (status, body) = send(
        client()
            .post(format!("{}/api/people", b.origin()))
            .json(&json!({"name": "ana"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM ask_user.people").unwrap(),
        "1",
        "kept once"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM ask_user.people WHERE credential_sha256 LIKE 'aup_%' OR length(credential_sha256) <> 64")
            .unwrap(),
        "0",
        "kept hashed"
    );
}

#[tokio::test]
async fn a_person_removed_on_one_host_is_refused_on_another_at_once_with_their_streams_and_devices()
{
    use ask_user_tests::tls_front::{TestCert, TlsFront, pair_phone_with, phone_request};
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let remote = format!("--remote={}", front.origin());
    let pg = postgres();
    let start = || start_host_with(&pg, &[remote.as_str()]);
    let (a, b) = (start(), start());
    let ana = credential_in(&cli(&a, &["people", "add", "ana"]), "aup_");

    // Ana pairs her phone through host A, with her own credential.
    let balancer = RoundRobin::start(vec![addr(&a)]).await;
    front.forward_to(balancer.addr());
    let (_, cookie) = pair_phone_with(a.origin(), &ana, &cert, &front, "Ana's Pixel").await;

    // The phone reaches host B now, and answers there: `by` names both.
    balancer.replace(0, addr(&b));
    let asked = ask(a.origin(), "gone", &for_audience(json!({"person": "ana"})));
    let question = the_one_pending(b.origin(), "gone").await;
    let mut answered = hyper::StatusCode::UNAUTHORIZED;
    until("host B to take ana's phone's answer", async || {
        answered = phone_request(
            &cert,
            &front,
            "POST",
            &format!("/api/sessions/gone/questions/{question}/answer"),
            Some(&cookie),
            &choice("SQLite"),
        )
        .await
        .status;
        answered != hyper::StatusCode::UNAUTHORIZED
    })
    .await;
    assert_eq!(answered, hyper::StatusCode::OK);
    within("the agent's answer", asked).await.unwrap();
    let (_, history) = send(client().get(format!("{}/api/history?session=gone", a.origin()))).await;
    let by = &history["records"][0]["by"];
    assert_eq!(
        (&by["kind"], &by["person"], &by["device"]["name"]),
        (&json!("device"), &json!("ana"), &json!("Ana's Pixel")),
        "{history}"
    );

    // Removed through host A: host B refuses her and her phone, and her
    // stream there ends, without a restart.
    let mut stream = events_as(b.origin(), "gone", &ana).await;
    stream.replay().await;
    cli(&a, &["people", "remove", "ana"]);
    assert_eq!(
        within("ana's stream on host B to end", stream.next_frame()).await,
        None,
        "the stream ends"
    );
    let refused = send_as(&ana, client().get(format!("{}/api/sessions", b.origin()))).await;
    assert_eq!(refused.0, StatusCode::UNAUTHORIZED, "{refused:?}");
    let phone = phone_request(
        &cert,
        &front,
        "GET",
        "/api/sessions",
        Some(&cookie),
        &Value::Null,
    )
    .await;
    assert_eq!(
        phone.status,
        hyper::StatusCode::UNAUTHORIZED,
        "her phone goes with her"
    );
    let (_, devices) = send(client().get(format!("{}/api/devices", b.origin()))).await;
    assert_eq!(devices["devices"], json!([]), "{devices}");
    assert!(
        cli(&b, &["people", "list"]).contains("no people"),
        "host B lists nobody"
    );
}

#[tokio::test]
async fn a_person_outside_the_audience_neither_sees_nor_answers_it_on_any_host() {
    let pg = postgres();
    let hosts: Vec<HostProcess> = (0..2).map(|_| start_host(&pg)).collect();
    let ana = credential_in(
        &cli(&hosts[0], &["people", "add", "ana", "--role", "ops"]),
        "aup_",
    );
    let bo = credential_in(&cli(&hosts[1], &["people", "add", "bo"]), "aup_");
    let mut bo_streams = Vec::new();
    for host in &hosts {
        assert_eq!(known_on(host.origin(), &ana).await, StatusCode::OK);
        assert_eq!(known_on(host.origin(), &bo).await, StatusCode::OK);
        let mut stream = events_as(host.origin(), "aud", &bo).await;
        stream.replay().await;
        bo_streams.push(stream);
    }
    let asked = ask(
        hosts[0].origin(),
        "aud",
        &for_audience(json!({"role": "ops"})),
    );
    let id = the_one_pending(hosts[1].origin(), "aud").await;
    until("host B to show it to ana", async || {
        pending_ids_as(hosts[1].origin(), "aud", &ana).await == [id.as_str()]
    })
    .await;
    for host in &hosts {
        assert!(
            pending_ids_as(host.origin(), "aud", &bo).await.is_empty(),
            "bo's list on {} leaves it out",
            host.origin()
        );
        assert_eq!(inbox_count_as(host.origin(), "aud", &bo).await, 0);
        assert_eq!(inbox_count_as(host.origin(), "aud", &ana).await, 1);
        let refused = answer_as(host.origin(), "aud", &id, &bo).await;
        assert_eq!(refused.0, StatusCode::FORBIDDEN, "{refused:?}");
        assert_eq!(refused.1["error"]["code"], json!("NOT_IN_AUDIENCE"));
    }
    let (status, body) = answer_as(hosts[1].origin(), "aud", &id, &ana).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    within("the agent's answer", asked).await.unwrap();
    // Bo's streams never carried it: the next frame each shows is about a
    // question asked for anyone afterwards.
    let later = ask(hosts[0].origin(), "aud", &request("Anyone?"));
    for stream in &mut bo_streams {
        let seen = stream.requested().await;
        assert_ne!(seen.id, id, "bo's stream never shows ana's question");
    }
    let other = pending_ids(hosts[1].origin(), "aud").await;
    assert_eq!(other.len(), 1);
    assert_eq!(
        answer(hosts[1].origin(), "aud", &other[0], &choice("SQLite"))
            .await
            .0,
        StatusCode::OK
    );
    within("the second ask", later).await.unwrap();
}

#[tokio::test]
async fn an_agent_token_made_through_one_host_asks_on_another_and_answers_on_neither() {
    let pg = postgres();
    let (a, b) = (start_host(&pg), start_host(&pg));
    let printed = cli(&a, &["agents", "add", "ci"]);
    let token = credential_in(&printed, "aua_");
    assert_eq!(
        known_on(b.origin(), &token).await,
        StatusCode::FORBIDDEN,
        "an agent token may only ask"
    );
    assert!(cli(&b, &["agents", "list"]).contains("ci"));
    // It asks through host B.
    let url = format!("{}/api/sessions/agents/ask", b.origin());
    let body = request("From CI?");
    let asked = {
        let token = token.clone();
        tokio::spawn(async move { send_as(&token, client().post(url).json(&body)).await })
    };
    let id = the_one_pending(a.origin(), "agents").await;
    for host in [&a, &b] {
        let refused = answer_as(host.origin(), "agents", &id, &token).await;
        assert_eq!(refused.0, StatusCode::FORBIDDEN, "{refused:?}");
        assert_eq!(refused.1["error"]["code"], json!("AGENT_CANNOT_ANSWER"));
    }
    assert_eq!(
        answer(a.origin(), "agents", &id, &choice("SQLite")).await.0,
        StatusCode::OK
    );
    let (status, batch) = within("the agent's answer", asked).await.unwrap();
    assert_eq!((status, batch), (StatusCode::OK, choice("SQLite")));

    // Removed through host B: host A refuses it at once.
    cli(&b, &["agents", "remove", "ci"]);
    until("host A to refuse the removed token", async || {
        let url = format!("{}/api/sessions", a.origin());
        send_as(&token, client().get(url)).await.0 == StatusCode::UNAUTHORIZED
    })
    .await;
}

#[tokio::test]
async fn a_question_escalates_once_across_two_hosts_and_both_show_it_to_the_new_audience() {
    let pg = postgres();
    let (a, b) = (start_host(&pg), start_host(&pg));
    let ana = credential_in(
        &cli(&a, &["people", "add", "ana", "--role", "oncall"]),
        "aup_",
    );
    let lee = credential_in(
        &cli(&b, &["people", "add", "lee", "--role", "leads"]),
        "aup_",
    );
    let mut lee_streams = Vec::new();
    for host in [&a, &b] {
        assert_eq!(known_on(host.origin(), &ana).await, StatusCode::OK);
        assert_eq!(known_on(host.origin(), &lee).await, StatusCode::OK);
        let mut stream = events_as(host.origin(), "esc", &lee).await;
        assert_eq!(stream.replay().await, (vec![], vec![]));
        lee_streams.push(stream);
    }
    let mut escalating = for_audience(json!({"role": "oncall"}));
    escalating["escalate_after"] = json!({"seconds": 4, "role": "leads"});
    let asked = ask(a.origin(), "esc", &escalating);
    let id = the_one_pending(b.origin(), "esc").await;
    assert_eq!(pending_ids_as(b.origin(), "esc", &ana).await, [id.as_str()]);
    // Well within the four seconds: lee is outside on both hosts.
    for host in [&a, &b] {
        let refused = answer_as(host.origin(), "esc", &id, &lee).await;
        assert_eq!(refused.0, StatusCode::FORBIDDEN, "{refused:?}");
        assert_eq!(refused.1["error"]["code"], json!("NOT_IN_AUDIENCE"));
    }
    for stream in &mut lee_streams {
        let escalated = within("the escalation", stream.requested()).await;
        assert_eq!(
            escalated.id, id,
            "it reaches lee on both hosts when it escalates"
        );
    }
    // Exactly one escalation is kept, whichever host's timer came first.
    let mut kept = String::new();
    until("the record to keep the escalation", async || {
        kept = pg
            .psql(&format!(
                "SELECT count(*) FROM ask_user.questions WHERE id = '{id}' AND escalated_ms IS NOT NULL"
            ))
            .unwrap();
        kept == "1"
    })
    .await;
    let (status, body) = answer_as(b.origin(), "esc", &id, &lee).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    within("the agent's answer", asked).await.unwrap();
    // Each of lee's streams showed it once, then its end.
    // (`resolved` refuses any other frame first: a second escalation fails.)
    for stream in &mut lee_streams {
        assert_eq!(stream.resolved().await.id, id, "no second escalation");
    }
}

#[tokio::test]
async fn past_max_store_bytes_new_asks_get_507_store_full_and_answers_still_land() {
    let pg = postgres();
    let bound = (16 * 1024 * 1024).to_string();
    let host = start_host_with(&pg, &["--max-store-bytes", &bound]);
    let waiting = ask(host.origin(), "full", &request("Before it filled?"));
    let id = the_one_pending(host.origin(), "full").await;

    // Another program's rows (no trigger: nobody is told) fill the schema
    // past the bound: 32 MB of text that does not compress.
    pg.psql(
        "SET session_replication_role = replica; \
         INSERT INTO ask_user.messages (id, session, role, text, at_ms) \
         SELECT 'filler-' || g, 'filler', 'agent', \
         (SELECT string_agg(md5(random()::text || g || n), '') FROM generate_series(1, 250000) n), 0 \
         FROM generate_series(1, 4) g",
    )
    .unwrap_or_else(|why| panic!("{why}"));
    // A message does not wait for an answer: it probes until the host has
    // measured the schema (once a second).
    let messages = format!("{}/api/sessions/full/messages", host.origin());
    let mut refused = (StatusCode::OK, Value::Null);
    until(
        "the host to measure the schema past the bound",
        async || {
            refused = send(client().post(&messages).json(&json!({"text": "probe"}))).await;
            refused.0 == StatusCode::INSUFFICIENT_STORAGE
        },
    )
    .await;
    assert_eq!(
        refused.1["error"]["code"],
        json!("STORE_FULL"),
        "{refused:?}"
    );
    let url = format!("{}/api/sessions/full/ask", host.origin());
    let refused = send(client().post(&url).json(&request("After?"))).await;
    assert_eq!(refused.0, StatusCode::INSUFFICIENT_STORAGE, "{refused:?}");
    assert_eq!(
        refused.1["error"]["code"],
        json!("STORE_FULL"),
        "{refused:?}"
    );
    assert!(
        refused.1["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-store-bytes")),
        "{refused:?}"
    );
    // An answer resolves what waits: never refused for room.
    let answered = answer(host.origin(), "full", &id, &choice("SQLite")).await;
    assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
    let (status, batch) = within("the agent's answer", waiting).await.unwrap();
    assert_eq!((status, batch), (StatusCode::OK, choice("SQLite")));

    // Room again (the rows gone, the space given back): asks are taken.
    for sql in [
        "DELETE FROM ask_user.messages WHERE session = 'filler'",
        "VACUUM FULL ask_user.messages",
    ] {
        pg.psql(sql).unwrap_or_else(|why| panic!("{why}"));
    }
    until("the host to measure the room", async || {
        send(client().post(&messages).json(&json!({"text": "probe"})))
            .await
            .0
            == StatusCode::OK
    })
    .await;
    let again = ask(host.origin(), "full", &request("With room?"));
    let id = the_one_pending(host.origin(), "full").await;
    assert_eq!(
        answer(host.origin(), "full", &id, &choice("Postgres"))
            .await
            .0,
        StatusCode::OK
    );
    let (status, _) = within("the ask with room", again).await.unwrap();
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn one_session_writing_past_its_allowance_through_a_host_gets_429_and_others_do_not() {
    let pg = postgres();
    let host = start_host_with(&pg, &["--max-session-write-bytes", "65536"]);
    let messages = |session: &str| format!("{}/api/sessions/{session}/messages", host.origin());
    // 8 KB messages: the ninth at the latest is past 64 KiB a minute.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        let (status, body) = send(
            client()
                .post(messages("busy"))
                .json(&json!({"text": "x".repeat(8_000)})),
        )
        .await;
        statuses.push(status);
        if status != StatusCode::OK {
            assert_eq!(body["error"]["code"], json!("TOO_MANY_WRITES"), "{body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("--max-session-write-bytes")),
                "{body}"
            );
            break;
        }
    }
    assert_eq!(
        statuses.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS),
        "20 messages of 8 KB exceed 64 KiB a minute: {statuses:?}"
    );
    assert!(statuses.len() >= 7, "{statuses:?}");
    // An ask of the same session draws on the same allowance (8 KB more
    // than what is left of it).
    let url = format!("{}/api/sessions/busy/ask", host.origin());
    let mut large = request("Still room?");
    large["questions"][0]["detail"] = json!("y".repeat(8_000));
    let refused = send(client().post(&url).json(&large)).await;
    assert_eq!(refused.0, StatusCode::TOO_MANY_REQUESTS, "{refused:?}");
    // Another session has its own.
    let other = send(
        client()
            .post(messages("other"))
            .json(&json!({"text": "x".repeat(8_000)})),
    )
    .await;
    assert_eq!(other.0, StatusCode::OK, "{other:?}");
}

#[tokio::test]
async fn a_device_subscribed_through_one_host_is_pushed_each_question_once_by_any_host_with_one_key()
 {
    use ask_user_tests::push_stub::{PushStub, TestSubscription, verified_vapid};
    use ask_user_tests::tls_front::{TestCert, TlsFront, pair_phone_with, phone_request};
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let stub = PushStub::start_tls(cert.server_config()).await;
    let scratch = std::env::temp_dir().join(format!(
        "auq-shared-push-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    let ca = scratch.join("ca.pem");
    std::fs::write(&ca, cert.ca_pem()).unwrap();
    let remote = format!("--remote={}", front.origin());
    let pg = postgres();
    // The push service's certificate is the test's own.
    let env = [("SSL_CERT_FILE", ca.as_os_str())];
    let start = || {
        try_start_host_on(&pg, &pg.url(), &[remote.as_str()], &env)
            .unwrap_or_else(|why| panic!("{why}"))
    };
    let (mut a, b) = (start(), start());

    // The phone pairs and subscribes through host A.
    let balancer = RoundRobin::start(vec![addr(&a)]).await;
    front.forward_to(balancer.addr());
    let (_, cookie) = pair_phone_with(a.origin(), TOKEN, &cert, &front, "pixel").await;
    let push_key = || {
        phone_request(
            &cert,
            &front,
            "GET",
            "/api/push/key",
            Some(&cookie),
            &Value::Null,
        )
    };
    let public_key = push_key().await.json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let subscription = TestSubscription::new(stub.endpoint("pixel"));
    let put = phone_request(
        &cert,
        &front,
        "PUT",
        "/api/push/subscription",
        Some(&cookie),
        &subscription.to_json(),
    )
    .await;
    assert_eq!(put.status.as_u16(), 204, "{:?}", put.body);
    // Host B serves the same key (once it knows the device).
    balancer.replace(0, addr(&b));
    let mut key_b = Value::Null;
    until("host B to know the device", async || {
        let reply = push_key().await;
        key_b = reply.json();
        reply.status.as_u16() == 200
    })
    .await;
    assert_eq!(
        key_b["public_key"],
        json!(public_key),
        "one key for every host"
    );

    // Asked through B, answered through A: one push, one close, from
    // whichever host claimed it; both hosts follow the question.
    let pushes = |n| stub.wait_for("pixel", n);
    for (round, (ask_through, answer_through)) in [(&b, &a), (&a, &b)].into_iter().enumerate() {
        let session = format!("push-{round}");
        let waiting = ask(ask_through.origin(), &session, &request("Ship it?"));
        let id = the_one_pending(answer_through.origin(), &session).await;
        let sent = pushes(2 * round + 1).await;
        let pushed = subscription.decrypt(&sent[2 * round]);
        assert_eq!(pushed["kind"], "ask");
        assert_eq!(pushed["question"], json!(id));
        let (_, k) = verified_vapid(sent[2 * round].headers["authorization"].to_str().unwrap());
        assert_eq!(
            k, public_key,
            "signed with the key the phone subscribed with"
        );
        let answered = answer(answer_through.origin(), &session, &id, &choice("Postgres")).await;
        assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
        within("the agent's answer", waiting).await.unwrap();
        let sent = pushes(2 * round + 2).await;
        assert_eq!(subscription.decrypt(&sent[2 * round + 1])["kind"], "close");
        // The other host neither pushed it nor closed it: no third message
        // (a second host's push would have left as soon as the first's).
        let sent: Vec<_> = stub.received();
        assert_eq!(
            sent.iter()
                .map(|r| subscription.decrypt(r)["kind"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>(),
            ["ask", "close"].repeat(round + 1),
            "each question pushed once and closed once"
        );
    }

    // Host A is gone: B pushes to the phone A subscribed, with the same key.
    a.kill();
    let _waiting = ask(b.origin(), "after-a", &request("Still there?"));
    let sent = pushes(5).await;
    assert_eq!(subscription.decrypt(&sent[4])["text"], "Still there?");
    let (_, k) = verified_vapid(sent[4].headers["authorization"].to_str().unwrap());
    assert_eq!(k, public_key);
    // One claim per question, whatever the number of hosts.
    let claims = pg
        .psql("SELECT count(*) FROM ask_user.pushes")
        .unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(claims, "3");
    let _ = std::fs::remove_dir_all(&scratch);
}

#[tokio::test]
async fn a_host_reaches_its_postgresql_over_tls_verifying_its_certificate_and_refuses_one_it_cannot_verify()
 {
    use ask_user_tests::postgres::USER;
    use ask_user_tests::tls_front::TestCert;
    // The server's certificate names `localhost`, signed by a CA of the test's own.
    let cert = TestCert::new();
    let pg = PostgresServer::start_with_tls(&cert.cert_pem, &cert.key_pem)
        .unwrap_or_else(|why| panic!("{why}"));
    let ca = pg.dir().join("ca.pem");
    std::fs::write(&ca, cert.ca_pem()).expect("the CA file");
    let url = |ca: &std::path::Path, port: u16| {
        format!(
            "postgres://{USER}@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}",
            ca.display()
        )
    };

    let host = try_start_host_on(&pg, &url(&ca, pg.port()), &[], &[])
        .unwrap_or_else(|why| panic!("{why}"));
    let asked = ask(host.origin(), "tls", &request("Over TLS?"));
    let id = the_one_pending(host.origin(), "tls").await;
    let answered = answer(host.origin(), "tls", &id, &choice("Postgres")).await;
    assert_eq!(answered.0, StatusCode::OK, "{answered:?}");
    let (status, batch) = within("the agent's answer", asked)
        .await
        .expect("the ask ran");
    assert_eq!((status, batch), (StatusCode::OK, choice("Postgres")));
    // Every connection of the host (writer, follower, reader) is TLS.
    let connections = pg
        .psql(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
             FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'ask-user'",
        )
        .unwrap_or_else(|why| panic!("{why}"));
    let (tls, plain) = connections.split_once('|').expect("two counts");
    assert!(
        tls.parse::<u32>().unwrap() >= 2,
        "TLS connections: {connections}"
    );
    assert_eq!(plain, "0", "plaintext connections: {connections}");
    drop(host);

    // A CA that did not sign the server's certificate: the host does not start.
    let stranger = pg.dir().join("stranger.pem");
    std::fs::write(&stranger, TestCert::new().ca_pem()).expect("another CA file");
    let refused = try_start_host_on(&pg, &url(&stranger, pg.port()), &[], &[])
        .err()
        .expect("a host started trusting a certificate no CA it knows signed");
    assert!(
        refused.contains("(TLS): error performing TLS handshake: invalid peer certificate"),
        "the refusal says the certificate failed, on a TLS connection: {refused}"
    );
    assert!(!refused.contains(pg.password()), "{refused}");

    // A PostgreSQL without TLS, told to require it: refused, not plaintext.
    let plain_pg = postgres();
    let refused = try_start_host_on(&plain_pg, &url(&ca, plain_pg.port()), &[], &[])
        .err()
        .expect("a host fell back to plaintext");
    assert!(
        refused.contains("server does not support TLS"),
        "the refusal says TLS was missing: {refused}"
    );
}

/// The ids of the messages in `session`'s transcript on `origin`.
async fn transcript_message_ids(origin: &str, session: &str) -> Vec<String> {
    let (status, transcript) = send(
        client()
            .get(format!("{origin}/api/sessions/{session}/transcript"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{transcript}");
    transcript["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["kind"] == "message")
        .map(|entry| entry["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Host B (its connections named `ask-user-b` in `pg_stat_activity`) beside
/// host A, on one database.
fn hosts_a_and_b(pg: &PostgresServer) -> (HostProcess, HostProcess) {
    let a = start_host(pg);
    let b_url = format!("{}?application_name=ask-user-b", pg.url());
    let b = try_start_host_on(pg, &b_url, &[], &[]).unwrap_or_else(|why| panic!("{why}"));
    (a, b)
}

/// Freezes host B and cuts its connections to the database: nothing
/// notified from now on reaches it. `SIGCONT` wakes it to reconnect.
fn freeze_and_cut(pg: &PostgresServer, b: &HostProcess) {
    b.signal("-STOP");
    let cut = pg
        .psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'ask-user-b'",
        )
        .unwrap_or_else(|why| panic!("{why}"));
    assert!(
        cut.parse::<u32>().unwrap() >= 2,
        "B's connections cut: {cut}"
    );
}

/// Posts `text` to session `team` through `origin`; the message's id.
async fn post_message(origin: &str, text: &str) -> String {
    let (status, posted) = send(
        client()
            .post(format!("{origin}/api/sessions/team/messages"))
            .bearer_auth(TOKEN)
            .json(&json!({ "text": text })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{posted}");
    posted["id"].as_str().expect("the message's id").to_owned()
}

/// That the transcript of session `team` on each host holds the messages
/// `ids`, each once.
async fn each_holds_once(hosts: &[&HostProcess], ids: &[&str]) {
    let mut expected = ids.to_vec();
    expected.sort_unstable();
    for host in hosts {
        let mut held = transcript_message_ids(host.origin(), "team").await;
        held.sort_unstable();
        assert_eq!(held, expected, "on {}", host.origin());
    }
}

/// Waits until `page` is told of the message `id`.
async fn until_message_shown(page: &mut EventStream, id: &str, what: &str) {
    within(what, async {
        loop {
            let frame = page.next().await;
            if frame.event == "message/created" && frame.json()["id"] == json!(id) {
                break;
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_message_written_while_a_hosts_connections_were_cut_reaches_its_page_once_it_reconnects()
{
    let pg = postgres();
    let (a, mut b) = hosts_a_and_b(&pg);
    let mut page_b = events(b.origin(), "team").await;
    // B says something first: after its reconnect its own message is not shown twice.
    let own_id = post_message(b.origin(), "From B").await;
    // B is frozen, its connections to the database cut; A writes a message
    // no notification can bring B; B wakes and reconnects.
    freeze_and_cut(&pg, &b);
    let missed_id = post_message(a.origin(), "Written while B was away").await;
    b.signal("-CONT");

    // B's page is told, and B's transcript holds each message once.
    until_message_shown(
        &mut page_b,
        &missed_id,
        "B's page to show the missed message",
    )
    .await;
    each_holds_once(&[&a, &b], &[&own_id, &missed_id]).await;
    assert!(b.is_running());
}

#[tokio::test]
async fn a_message_that_commits_after_a_later_one_while_a_hosts_connections_are_cut_reaches_its_page()
 {
    let pg = postgres();
    let (a, b) = hosts_a_and_b(&pg);
    let mut page_b = events(b.origin(), "team").await;
    let psql = |sql: &str| pg.psql(sql).unwrap_or_else(|why| panic!("{why}"));
    // A writer takes its row's seq when it inserts and is seen when it
    // commits: this seq is taken now, its row committed only after B has read
    // a later one and lost its connections.
    let late_seq: i64 = psql("SELECT nextval('ask_user.messages_seq_seq')")
        .parse()
        .expect("a seq");
    let later_id = post_message(a.origin(), "Later seq, committed first").await;
    until_message_shown(&mut page_b, &later_id, "B's page to show the later message").await;
    freeze_and_cut(&pg, &b);
    let late_id = format!("{later_id}-late");
    psql(&format!(
        "INSERT INTO ask_user.messages (seq, id, session, role, text, at_ms) \
         VALUES ({late_seq}, '{late_id}', 'team', 'agent', 'Committed late', \
         (extract(epoch FROM now()) * 1000)::bigint)"
    ));
    b.signal("-CONT");

    until_message_shown(
        &mut page_b,
        &late_id,
        "B's page to show the message that committed late",
    )
    .await;
    each_holds_once(&[&a, &b], &[&later_id, &late_id]).await;
}
