//! `ask-user ask`: the built binary against a host served in-process on
//! loopback. Each exit code, with what it prints.

use ask_user_core::wire::{Outcome, SessionEvent};
use ask_user_host::{AppState, HostConfig, serve};
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

const TOKEN: &str = "cli-test-token-0123456789abcdef";

fn session(name: &str) -> ask_user_core::SessionId {
    ask_user_core::SessionId::parse(name).unwrap()
}

async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("gave up waiting for {what}"))
}

struct Host {
    base: String,
    state: AppState,
}

async fn start(configure: impl FnOnce(&mut HostConfig)) -> Host {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut config = HostConfig::new(TOKEN, port);
    configure(&mut config);
    let state = AppState::new(config);
    tokio::spawn(serve(listener, state.clone()));
    Host {
        base: format!("http://127.0.0.1:{port}"),
        state,
    }
}

impl Host {
    /// Waits for the next question in `session` (subscribed before the ask starts).
    async fn next_question(events: &mut ask_user_host::server::pending::EventReceiver) -> String {
        loop {
            let event = within("question/requested", events.recv()).await.unwrap();
            if let SessionEvent::QuestionRequested(q) = &*event {
                return q.id.clone();
            }
        }
    }

    async fn post(&self, path: &str, body: String) -> reqwest::StatusCode {
        reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .body(body)
            .send()
            .await
            .unwrap()
            .status()
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Starts `ask-user ask <args>` with `stdin` piped in.
fn ask(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> tokio::task::JoinHandle<Run> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .arg("ask")
        .args(args)
        .env_remove("ASK_USER_URL")
        .env_remove("ASK_USER_TOKEN")
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the ask-user binary runs");
    let input = stdin.to_owned();
    tokio::spawn(async move {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).await.unwrap();
        drop(pipe);
        let output = within("ask-user ask to exit", child.wait_with_output())
            .await
            .unwrap();
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    })
}

fn request() -> Value {
    json!({"questions": [
        {"id": "lang", "question": "Which language?", "options": [{"label": "Rust (Recommended)"}, {"label": "Go"}]},
        {"id": "more", "question": "Anything else?"}
    ]})
}

#[tokio::test]
async fn an_answer_is_printed_to_stdout_with_exit_0() {
    let host = start(|_| {}).await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let run = ask(
        &["--url", &host.base, "--token", TOKEN, "--session", "cli"],
        &request().to_string(),
        &[],
    );
    let id = Host::next_question(&mut events).await;
    let answer = json!({"answers": [
        {"id": "lang", "selected": ["Rust (Recommended)"]},
        {"id": "more", "custom": "  tests please "}
    ]});
    let status = host
        .post(
            &format!("/api/sessions/cli/questions/{id}/answer"),
            answer.to_string(),
        )
        .await;
    assert_eq!(status, 200);
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"answers\":[{\"id\":\"lang\",\"selected\":[\"Rust (Recommended)\"]},{\"id\":\"more\",\"selected\":[],\"custom\":\"tests please\"}]}\n"
    );
    assert_eq!(run.stderr, "");
}

#[tokio::test]
async fn the_request_can_come_from_a_file_and_the_host_from_the_environment() {
    let host = start(|_| {}).await;
    let mut events = host.state.subscribe(&session("default")).events;
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-cli-{}.json", std::process::id()));
    std::fs::write(&file, request().to_string()).unwrap();
    let run = ask(
        &[file.to_str().unwrap()],
        "",
        &[("ASK_USER_URL", &host.base), ("ASK_USER_TOKEN", TOKEN)],
    );
    let id = Host::next_question(&mut events).await;
    let answer =
        json!({"answers": [{"id": "lang", "selected": ["Go"]}, {"id": "more", "selected": []}]});
    let status = host
        .post(
            &format!("/api/sessions/default/questions/{id}/answer"),
            answer.to_string(),
        )
        .await;
    assert_eq!(status, 200);
    let run = within("the run", run).await.unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        printed,
        json!({"answers": [{"id": "lang", "selected": ["Go"]}, {"id": "more", "selected": []}]})
    );
}

#[tokio::test]
async fn a_cancelled_question_exits_3_with_cores_line() {
    let host = start(|_| {}).await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let run = ask(
        &[
            "--url",
            &host.base,
            "--token",
            TOKEN,
            "--session",
            "cli",
            "-",
        ],
        &request().to_string(),
        &[],
    );
    let id = Host::next_question(&mut events).await;
    let status = host
        .post(
            &format!("/api/sessions/cli/questions/{id}/cancel"),
            String::new(),
        )
        .await;
    assert_eq!(status, 200);
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 3);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "Error: the user cancelled ask_user_question (ASK_CANCELLED)\n"
    );
}

#[tokio::test]
async fn an_unanswered_question_times_out_with_exit_4() {
    let host = start(|_| {}).await;
    let run = ask(
        &["--url", &host.base, "--token", TOKEN, "--timeout-ms", "20"],
        &request().to_string(),
        &[],
    );
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 4, "stderr: {}", run.stderr);
    assert_eq!(
        run.stderr,
        "Error: ask_user_question timed out before the user answered (ASK_TIMEOUT)\n"
    );
    assert!(host.state.pending().snapshot("default").is_empty());
}

#[tokio::test]
async fn bad_input_is_refused_locally_with_exit_2_and_cores_message() {
    // Nothing listens at this URL: exit 2 (not 1) shows the check ran before any request.
    let nowhere = "http://127.0.0.1:9";
    let cases = [
        (
            json!({"questions": []}).to_string(),
            "Error: ask_user_question requires at least one question (EMPTY_QUESTIONS)",
        ),
        ("{not json".to_owned(), "(BAD_REQUEST)"),
        (
            json!({"questions": [{"id": "a", "question": "Q", "allow_custom": true}]}).to_string(),
            "(BAD_REQUEST)",
        ),
    ];
    for (input, expected) in cases {
        let run = within("the run", ask(&["--url", nowhere], &input, &[]))
            .await
            .unwrap();
        assert_eq!(run.code, 2, "{input}: {}", run.stderr);
        assert_eq!(run.stdout, "");
        let line = run.stderr.trim_end();
        assert!(
            line.starts_with("Error: ") && line.ends_with(expected),
            "{input}: {line}"
        );
        if let Err(core) = ask_user_core::AskRequest::from_json(&input) {
            assert_eq!(
                line,
                ask_user_core::tool::render_error(&core),
                "core's own message"
            );
        }
    }
    let run = within(
        "the run",
        ask(
            &["--url", nowhere, "--session", "no/slash"],
            &request().to_string(),
            &[],
        ),
    )
    .await
    .unwrap();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--session"), "{}", run.stderr);
}

#[tokio::test]
async fn a_request_the_host_refuses_as_too_large_exits_2() {
    let host = start(|_| {}).await;
    // Valid for core (10 questions with the longest detail) but over the host's 256 KiB body limit.
    let questions: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("q{i}"), "question": "Q?", "detail": "d".repeat(32 * 1024)}))
        .collect();
    let big = json!({"questions": questions}).to_string();
    ask_user_core::AskRequest::from_json(&big).expect("valid for core");
    let run = within(
        "the run",
        ask(&["--url", &host.base, "--token", TOKEN], &big, &[]),
    )
    .await
    .unwrap();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.trim_end().ends_with("(PAYLOAD_TOO_LARGE)"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn other_failures_exit_1_with_an_error_line() {
    let host = start(|_| {}).await;
    let wrong_token = within(
        "the run",
        ask(
            &["--url", &host.base, "--token", "wrong"],
            &request().to_string(),
            &[],
        ),
    )
    .await
    .unwrap();
    assert_eq!(wrong_token.code, 1);
    assert!(
        wrong_token.stderr.starts_with("Error: ")
            && wrong_token.stderr.trim_end().ends_with("(UNAUTHORIZED)"),
        "{}",
        wrong_token.stderr
    );

    let no_web = start(|config| config.web = false).await;
    let no_provider = within(
        "the run",
        ask(
            &["--url", &no_web.base, "--token", TOKEN],
            &request().to_string(),
            &[],
        ),
    )
    .await
    .unwrap();
    assert_eq!(no_provider.code, 1);
    assert_eq!(
        no_provider.stderr,
        "Error: no user-interaction provider is registered (NO_PROVIDER)\n"
    );

    let unreachable = within(
        "the run",
        ask(
            &["--url", "http://127.0.0.1:9", "--token", TOKEN],
            &request().to_string(),
            &[],
        ),
    )
    .await
    .unwrap();
    assert_eq!(unreachable.code, 1);
    assert!(
        unreachable
            .stderr
            .starts_with("Error: cannot reach the host")
            && unreachable.stderr.trim_end().ends_with("(ASK_FAILED)"),
        "{}",
        unreachable.stderr
    );
}

/// The next event of `events` that is not a transcript message.
async fn next_event(events: &mut ask_user_host::server::pending::EventReceiver) -> SessionEvent {
    loop {
        let event = within("the next event", events.recv()).await.unwrap();
        if !matches!(&*event, SessionEvent::MessageCreated(_)) {
            return (*event).clone();
        }
    }
}

#[tokio::test]
async fn killing_the_cli_detaches_its_question_and_with_no_grace_aborts_it() {
    for grace in [Duration::from_secs(600), Duration::ZERO] {
        let host = start(|config| config.detach_grace = grace).await;
        let mut events = host.state.subscribe(&session("cli")).events;
        let run = ask(
            &["--url", &host.base, "--token", TOKEN, "--session", "cli"],
            &request().to_string(),
            &[],
        );
        let id = Host::next_question(&mut events).await;
        // Dropping the task drops the child, which is killed (kill_on_drop).
        run.abort();
        match next_event(&mut events).await {
            SessionEvent::QuestionDetached(detached) if !grace.is_zero() => {
                assert_eq!(detached.id, id);
                assert_eq!(host.state.pending().pending_count(), 1, "still answerable");
            }
            SessionEvent::QuestionResolved(resolved) if grace.is_zero() => {
                assert_eq!(resolved.id, id);
                assert_eq!(resolved.outcome, Outcome::Aborted);
            }
            other => panic!("grace {grace:?}: {other:?}"),
        }
    }
}

/// A TCP forwarder in front of the host whose open connections the test can
/// cut, like a proxy restarting.
struct Cutter {
    url: String,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Cutter {
    async fn start(target: &str) -> Self {
        let target: std::net::SocketAddr = target.trim_start_matches("http://").parse().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(Mutex::new(Vec::new()));
        let open = connections.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let forward = tokio::spawn(async move {
                    let mut outbound = tokio::net::TcpStream::connect(target).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                open.lock().unwrap().push(forward.abort_handle());
            }
        });
        Self { url, connections }
    }

    /// Cuts every open connection; returns how many were open.
    fn cut(&self) -> usize {
        let open = std::mem::take(&mut *self.connections.lock().unwrap());
        for connection in &open {
            connection.abort();
        }
        open.len()
    }

    fn opened(&self) -> usize {
        self.connections.lock().unwrap().len()
    }
}

#[tokio::test]
async fn a_cut_connection_is_asked_again_and_the_cli_exits_with_the_answer_as_if_nothing_happened()
{
    let host = start(|_| {}).await;
    let cutter = Cutter::start(&host.base).await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let run = ask(
        &["--url", &cutter.url, "--token", TOKEN, "--session", "cli"],
        &request().to_string(),
        &[],
    );
    let id = Host::next_question(&mut events).await;
    assert_eq!(cutter.cut(), 1, "the CLI's one connection");
    match next_event(&mut events).await {
        SessionEvent::QuestionDetached(detached) => assert_eq!(detached.id, id),
        other => panic!("expected question/detached, got {other:?}"),
    }
    // The CLI posts again (a new connection) and attaches to the same question.
    match next_event(&mut events).await {
        SessionEvent::QuestionAttached(attached) => assert_eq!(attached.id, id),
        other => panic!("expected question/attached, got {other:?}"),
    }
    assert_eq!(cutter.opened(), 1, "one new connection");
    let answer = json!({"answers": [
        {"id": "lang", "selected": ["Go"]},
        {"id": "more", "selected": []}
    ]});
    let status = host
        .post(
            &format!("/api/sessions/cli/questions/{id}/answer"),
            answer.to_string(),
        )
        .await;
    assert_eq!(status, 200);
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "");
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed, answer);
    match next_event(&mut events).await {
        SessionEvent::QuestionResolved(resolved) => {
            assert_eq!((resolved.id, resolved.outcome), (id, Outcome::Answered));
        }
        other => panic!("one question throughout, then resolved: {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_given_while_the_cli_was_cut_off_is_collected_by_its_next_post() {
    let host = start(|_| {}).await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let cutter = Cutter::start(&host.base).await;
    let run = ask(
        &["--url", &cutter.url, "--token", TOKEN, "--session", "cli"],
        &request().to_string(),
        &[],
    );
    let id = Host::next_question(&mut events).await;
    cutter.cut();
    let answer = json!({"answers": [
        {"id": "lang", "selected": ["Rust (Recommended)"]},
        {"id": "more", "custom": "now"}
    ]});
    // Answer as soon as it is detached, before the CLI's next post.
    loop {
        match next_event(&mut events).await {
            SessionEvent::QuestionDetached(detached) => {
                assert_eq!(detached.id, id);
                let status = host
                    .post(
                        &format!("/api/sessions/cli/questions/{id}/answer"),
                        answer.to_string(),
                    )
                    .await;
                if status == 200 {
                    break;
                }
            }
            // The CLI was quicker: it reattached; detach it again.
            SessionEvent::QuestionAttached(_) => {
                cutter.cut();
            }
            other => panic!("{other:?}"),
        }
    }
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        printed,
        json!({"answers": [
            {"id": "lang", "selected": ["Rust (Recommended)"]},
            {"id": "more", "selected": [], "custom": "now"}
        ]})
    );
}

/// A listener standing in for a proxy: it counts the connections it gets.
async fn fake_proxy() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = reached.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(socket);
        }
    });
    (url, reached)
}

#[tokio::test]
async fn proxy_variables_are_ignored_for_a_loopback_host() {
    let host = start(|_| {}).await;
    let (proxy, reached) = fake_proxy().await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let env: Vec<(&str, &str)> = [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ]
    .into_iter()
    .map(|name| (name, proxy.as_str()))
    .collect();
    let run = ask(
        &["--url", &host.base, "--token", TOKEN, "--session", "cli"],
        &request().to_string(),
        &env,
    );
    let id = Host::next_question(&mut events).await;
    let answer =
        json!({"answers": [{"id": "lang", "selected": ["Go"]}, {"id": "more", "selected": []}]});
    let status = host
        .post(
            &format!("/api/sessions/cli/questions/{id}/answer"),
            answer.to_string(),
        )
        .await;
    assert_eq!(status, 200);
    let run = within("the run", run).await.unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the proxy received nothing"
    );
}
