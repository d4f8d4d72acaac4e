//! Attacks on a real `ask-user serve` process (issue 10), each bounded in
//! time: sockets that starve the host, half-sent requests holding shutdown,
//! guessed tokens, the cookie, the landing redirect, huge question ids, and a
//! half-closed agent.

use ask_user_tests::host_process::HostProcess;
use ask_user_tests::wait::{PATIENCE, until, within};
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, RETRY_AFTER, SET_COOKIE};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A page folder with a recognisable index.html.
fn page_dir() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-attacks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>attacks page</title><p>the page</p>",
    )
    .unwrap();
    dir
}

fn start(extra: &[&str]) -> HostProcess {
    HostProcess::start(&page_dir(), extra).expect("the host starts and prints its URL")
}

fn addr(host: &HostProcess) -> String {
    host.origin().trim_start_matches("http://").to_owned()
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn question(id: &str) -> Value {
    json!({"questions": [{"id": id, "question": format!("{id}?")}]})
}

/// Opens `/?token=` and returns the `name=value` cookie pair the host set.
async fn land(host: &HostProcess, client: &reqwest::Client) -> String {
    let response = client
        .get(host.url())
        .send()
        .await
        .expect("the landing answers");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// Reads SSE frames off a response until one names `event`; returns its data.
async fn next_event(body: &mut reqwest::Response, buffer: &mut String, event: &str) -> Value {
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if block.lines().any(|l| l == format!("event: {event}")) {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("a data line");
                return serde_json::from_str(data).unwrap();
            }
        }
        let chunk = body
            .chunk()
            .await
            .expect("the stream reads")
            .unwrap_or_else(|| panic!("the stream ended before {event}"));
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// A local process holding sockets open to the host: some silent, some
/// trickling a request head a byte at a time. Whenever the host closes one,
/// it opens another (after `reconnect`), so the pressure never lets up.
struct Siege {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Siege {
    /// Opens the sockets a hundred at a time (so the host's listen queue
    /// never overflows and every one reaches it), then holds them.
    async fn start(addr: &str, idle: usize, trickling: usize, reconnect: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        let kinds: Vec<bool> = (0..idle + trickling).map(|n| n >= idle).collect();
        for batch in kinds.chunks(100) {
            let connected = within(
                "the siege's sockets to connect",
                futures_util::future::join_all(batch.iter().map(|_| TcpStream::connect(addr))),
            )
            .await;
            for (first, &trickle) in connected.into_iter().zip(batch) {
                let first = first.expect("the siege connects");
                let (addr, stop) = (addr.to_owned(), stop.clone());
                tasks.push(tokio::spawn(async move {
                    let mut socket = Some(first);
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(mut held) = socket.take() {
                            hold(&mut held, trickle, &stop).await;
                        }
                        tokio::time::sleep(reconnect).await;
                        if let Ok(Ok(next)) =
                            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(&addr))
                                .await
                        {
                            socket = Some(next);
                        }
                    }
                }));
            }
        }
        Self { stop, tasks }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.abort();
        }
    }
}

/// Keeps `socket` open until the host closes it: silent, or sending a
/// request head one byte per second that never ends.
async fn hold(socket: &mut TcpStream, trickle: bool, stop: &AtomicBool) {
    let head = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut sent = 0;
    let mut buffer = [0u8; 256];
    while !stop.load(Ordering::Relaxed) {
        tokio::select! {
            read = socket.read(&mut buffer) => {
                if matches!(read, Ok(0) | Err(_)) {
                    return;
                }
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                if trickle {
                    let byte = head.get(sent).copied().unwrap_or(b'a');
                    sent += 1;
                    if socket.write_all(&[byte]).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// One round trip as the page and an agent make it: the landing, the page
/// itself, the event stream, the ask, the answer.
async fn page_and_agent_round_trip(host: &HostProcess, session: &str) {
    let page = no_redirects();
    let cookie = land(host, &page).await;
    let html = page
        .get(format!("{}/", host.origin()))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("the page answers");
    assert_eq!(html.status(), StatusCode::OK);
    assert!(html.text().await.unwrap().contains("attacks page"));

    let mut stream = page
        .get(format!("{}/api/sessions/{session}/events", host.origin()))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("the event stream opens");
    assert_eq!(stream.status(), StatusCode::OK);
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, "session/synced").await;

    let agent = reqwest::Client::new();
    let ask = tokio::spawn(
        agent
            .post(format!("{}/api/sessions/{session}/ask", host.origin()))
            .bearer_auth(host.token().unwrap())
            .body(question("siege").to_string())
            .send(),
    );
    let requested = next_event(&mut stream, &mut buffer, "question/requested").await;
    let id = requested["id"].as_str().unwrap();
    let answered = page
        .post(format!(
            "{}/api/sessions/{session}/questions/{id}/answer",
            host.origin()
        ))
        .header(COOKIE, &cookie)
        .body(json!({"answers": [{"id": "siege", "custom": "still here"}]}).to_string())
        .send()
        .await
        .expect("the answer is posted");
    assert_eq!(answered.status(), StatusCode::OK);
    let (status, batch) = json_of(ask.await.unwrap().expect("the ask is answered")).await;
    assert_eq!(status, StatusCode::OK, "{batch}");
    assert_eq!(batch["answers"][0]["custom"], "still here", "{batch}");
}

#[tokio::test]
async fn the_page_and_an_agent_keep_working_while_another_process_holds_1100_idle_and_trickling_sockets()
 {
    // The default cap (1,024 less 128) is reached first.
    withstand_the_siege(&[], "connection limit reached").await;
}

#[tokio::test]
async fn with_a_cap_above_the_descriptor_limit_running_out_of_descriptors_starves_no_one_either() {
    // Every descriptor is taken first.
    withstand_the_siege(&["--max-connections", "5000"], "out of file descriptors").await;
}

/// 1,100 idle and trickling sockets against a host limited to 1,024
/// descriptors (the usual limit), then a page + agent round trip and a
/// SIGTERM. The siege has taken hold when the host reports `logged` (the cap
/// reached, or every descriptor taken).
async fn withstand_the_siege(extra: &[&str], logged: &str) {
    rlimit::increase_nofile_limit(8192).expect("room for the siege's sockets in this process");
    let mut host = HostProcess::start_limited(&page_dir(), extra, Some(1024))
        .expect("the host starts and prints its URL");
    let besieged = Instant::now();
    let siege = Siege::start(&addr(&host), 550, 550, Duration::from_millis(500)).await;
    // Connecting completes in the kernel; wait until the host has taken the
    // siege in up to its limit. (Not a count of its descriptors: out of
    // descriptors, the host closes some to make room, so the count touches
    // the limit only for moments a poll can miss.)
    until(
        "the host to report the siege reached its limit",
        async || host.stderr().contains(logged),
    )
    .await;

    // Before the 10 s timeouts close any siege socket: it is the cap (or the
    // room made when descriptors run out) that lets the page and the agent
    // in, not a timeout.
    tokio::time::timeout_at(
        (besieged + Duration::from_secs(9)).into(),
        page_and_agent_round_trip(&host, "siege"),
    )
    .await
    .expect("a page and agent round trip during the siege, before any timeout");
    assert!(host.is_running());

    // And the siege does not hold the shutdown either.
    let asked_to_stop = Instant::now();
    let status = host
        .terminate(PATIENCE)
        .expect("the host exits after SIGTERM");
    let took = asked_to_stop.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(1),
        "SIGTERM took {took:?} during the siege"
    );
    siege.stop();
}

#[tokio::test]
async fn sigterm_exits_at_once_despite_half_sent_requests_and_still_aborts_the_pending_ask() {
    let mut host = start(&[]);
    let token = host.token().unwrap().to_owned();
    let client = reqwest::Client::new();
    let ask = tokio::spawn(
        client
            .post(format!("{}/api/sessions/term/ask", host.origin()))
            .bearer_auth(&token)
            .body(question("still").to_string())
            .send(),
    );
    until("the ask to be pending", async || {
        let (_, listed) = json_of(
            client
                .get(format!("{}/api/sessions/term/questions", host.origin()))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        listed["pending"].as_array().is_some_and(|p| !p.is_empty())
    })
    .await;

    // Half-sent heads, half-sent bodies (with the token), silent sockets.
    let mut sockets = Vec::new();
    for n in 0..300 {
        let mut socket = TcpStream::connect(addr(&host)).await.unwrap();
        let partial = match n % 3 {
            0 => "POST /api/sessions/term/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty".to_owned(),
            1 => format!(
                "POST /api/sessions/term/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
                 Content-Length: 1000\r\n\r\n{{\"questions\": ["
            ),
            _ => String::new(),
        };
        socket.write_all(partial.as_bytes()).await.unwrap();
        sockets.push(socket);
    }
    // The host accepts in order: once a later connection is served, all of
    // these were accepted.
    let health = client
        .get(format!("{}/api/health", host.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    let asked_to_stop = Instant::now();
    let status = host
        .terminate(PATIENCE)
        .expect("the host exits after SIGTERM");
    let took = asked_to_stop.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(1),
        "SIGTERM took {took:?}: half-sent requests must not hold the shutdown"
    );
    let (status, body) = json_of(within("the ask's answer", ask).await.unwrap().unwrap()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "ASK_ABORTED", "{body}");
    drop(sockets);
}

#[tokio::test]
async fn fifty_wrong_tokens_in_a_burst_are_throttled_with_retry_after_while_the_right_token_still_works()
 {
    let host = start(&[]);
    let client = reqwest::Client::new();
    let questions = format!("{}/api/sessions/s/questions", host.origin());
    let mut refused = Vec::new();
    for n in 0..50 {
        let response = client
            .get(&questions)
            .bearer_auth(format!("wrong-token-number-{n:04}-xxxxxxxx"))
            .send()
            .await
            .unwrap();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let (status, body) = json_of(response).await;
        refused.push((status, body, retry_after));
    }
    let first_unauthorized = refused
        .iter()
        .take_while(|(status, _, _)| *status == StatusCode::UNAUTHORIZED)
        .count();
    assert!(
        (15..=25).contains(&first_unauthorized),
        "a burst of about 20 gets 401, got {first_unauthorized}"
    );
    let throttled: Vec<_> = refused
        .iter()
        .filter(|(status, _, _)| *status == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!(
        throttled.len() >= 20,
        "most of the rest are throttled: {} of 50",
        throttled.len()
    );
    for (_, body, retry_after) in &throttled {
        assert_eq!(body["error"]["code"], "TOO_MANY_AUTH_FAILURES", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("too many wrong tokens"),
            "{body}"
        );
        let seconds: u64 = retry_after
            .as_deref()
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1..=60).contains(&seconds), "{seconds}");
    }
    // The page and the agents share this loopback address: the right token
    // still passes, and no token at all is no guess.
    let right = client
        .get(&questions)
        .bearer_auth(host.token().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);
    let none = client.get(&questions).send().await.unwrap();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    // A wrong ?token= on the landing page is a guess like any other.
    let landing = no_redirects()
        .get(format!(
            "{}/?token=another-wrong-token-xxxxxxx",
            host.origin()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(landing.status(), StatusCode::TOO_MANY_REQUESTS);

    // Logged once for the whole burst, naming the count, never each guess.
    let logged = host
        .stderr()
        .lines()
        .filter(|l| l.contains("wrong token presented"))
        .count();
    assert_eq!(logged, 1, "{}", host.stderr());
    assert!(
        !host.stderr().contains("wrong-token-number"),
        "guesses are not logged"
    );

    // After the wait, a wrong token is looked at (401) again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let later = client
        .get(&questions)
        .bearer_auth("wrong-token-after-waiting-xxxxx")
        .send()
        .await
        .unwrap();
    assert_eq!(later.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_cookie_is_an_hmac_of_the_token_under_a_key_of_this_run_never_the_token() {
    let token = "cookie-test-token-0123456789abcdef";
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-attacks-token-{}", std::process::id()));
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let path = file.to_str().unwrap();
    let first = start(&["--token-file", path]);
    let second = start(&["--token-file", path]);
    assert_eq!(first.token(), Some(token));
    let client = no_redirects();
    let pair = land(&first, &client).await;
    let (name, value) = pair.split_once('=').unwrap();
    assert!(
        !value.contains(token),
        "the cookie must not carry the token: {pair}"
    );
    assert!(!token.contains(value));

    let questions = format!("{}/api/sessions/s/questions", first.origin());
    let with_cookie = |cookie: String| client.get(&questions).header(COOKIE, cookie).send();
    assert_eq!(
        with_cookie(pair.clone()).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        with_cookie(format!("{name}={token}"))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED,
        "the raw token is no cookie"
    );
    // Another run with the same token sets another cookie, and refuses this one.
    let other_pair = land(&second, &client).await;
    let (other_name, other_value) = other_pair.split_once('=').unwrap();
    assert_ne!(other_value, value);
    let refused = client
        .get(format!("{}/api/sessions/s/questions", second.origin()))
        .header(COOKIE, format!("{other_name}={value}"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    std::fs::remove_file(file).ok();
}

#[tokio::test]
async fn the_landing_redirect_only_points_at_this_host() {
    let host = start(&[]);
    let token = host.token().unwrap();
    let client = no_redirects();
    for (path, expected) in [
        (format!("//evil.example/?token={token}"), "/evil.example/"),
        (
            format!("//evil.example/?session=a&token={token}"),
            "/evil.example/?session=a",
        ),
        (
            format!("/?session=team-a&token={token}"),
            "/?session=team-a",
        ),
    ] {
        let response = client
            .get(format!("{}{path}", host.origin()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(response.headers()[LOCATION], expected, "{path}");
    }
}

#[tokio::test]
async fn a_60000_character_question_id_is_refused_without_being_echoed() {
    let host = start(&[]);
    let client = reqwest::Client::new();
    let id = "x".repeat(60_000);
    for (action, body) in [
        ("answer", json!({"answers": []}).to_string()),
        ("cancel", String::new()),
    ] {
        let (status, body) = json_of(
            client
                .post(format!(
                    "{}/api/sessions/s/questions/{id}/{action}",
                    host.origin()
                ))
                .bearer_auth(host.token().unwrap())
                .body(body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{action}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.len() < 400, "{action}: {} bytes", message.len());
        assert!(
            message.contains("60000 characters") && message.contains("not a question id"),
            "{action}: {message}"
        );
    }
}

#[tokio::test]
async fn a_half_closed_agent_counts_as_gone_and_its_question_waits_detached_for_it_to_ask_again() {
    let host = start(&[]);
    let token = host.token().unwrap();
    let page = reqwest::Client::new();
    let mut stream = page
        .get(format!("{}/api/sessions/half/events", host.origin()))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, "session/synced").await;

    let body = question("half").to_string();
    let mut agent = TcpStream::connect(addr(&host)).await.unwrap();
    agent
        .write_all(
            format!(
                "POST /api/sessions/half/ask HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                addr(&host),
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let requested = next_event(&mut stream, &mut buffer, "question/requested").await;
    agent.shutdown().await.unwrap(); // SHUT_WR: "I have sent everything"

    // The host takes the FIN for a departure: it closes without a response ...
    let mut response = Vec::new();
    within(
        "the host to close the half-closed connection",
        agent.read_to_end(&mut response),
    )
    .await
    .unwrap();
    assert!(
        response.is_empty(),
        "{}",
        String::from_utf8_lossy(&response)
    );
    // ... and no call waits on the question any more: it is detached (kept
    // for the agent to ask again), not answered into the void.
    let detached = next_event(&mut stream, &mut buffer, "question/detached").await;
    assert_eq!(detached["id"], requested["id"]);
}

#[tokio::test]
async fn a_huge_mcp_client_info_reaches_the_log_truncated_and_only_once() {
    let host = start(&[]);
    let name = "n".repeat(100_000);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": name, "version": "v".repeat(100_000)}}});
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    for _ in 0..3 {
        let response = within(
            "initialize",
            client
                .post(format!("{}/mcp", host.origin()))
                .bearer_auth(host.token().unwrap())
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(initialize.to_string())
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        within("the initialize result", response.text())
            .await
            .unwrap();
    }
    until("the host to log the three clients", async || {
        host.stderr().matches("MCP client initializing").count() >= 3
    })
    .await;
    let log = host.stderr();
    assert!(
        !log.contains(&"n".repeat(65)) && !log.contains(&"v".repeat(65)),
        "client strings are truncated to 64 characters ({} bytes of log)",
        log.len()
    );
    assert!(log.len() < 16 * 1024, "{} bytes of log", log.len());
}

#[tokio::test]
async fn a_client_name_with_a_newline_and_escapes_stays_inside_its_own_log_line() {
    let host = start(&[]);
    let forged = "2099-01-01T00:00:00Z  WARN x: token=leaked";
    let name = format!("claude\n{forged}\r\x1b[2J\u{202e}");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": name, "version": "1\n2"}}});
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let response = within(
        "initialize",
        client
            .post(format!("{}/mcp", host.origin()))
            .bearer_auth(host.token().unwrap())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    within("the host to log the client", async {
        while !host.stderr().contains("MCP client initializing") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let log = host.stderr();
    let line = log
        .lines()
        .find(|line| line.contains("MCP client initializing"))
        .unwrap();
    assert!(
        line.contains(&format!(r"claude\n{forged}\r\u{{1b}}[2J\u{{202e}}")),
        "the name is on the client's own line, escaped: {line}"
    );
    assert!(line.contains(r"1\n2"), "{line}");
    assert!(
        !log.lines().any(|l| l.starts_with(forged)),
        "a forged line: {log}"
    );
    assert!(
        !log.contains(['\x1b', '\r', '\u{202e}']),
        "escapes reached the log: {log:?}"
    );
}
