//! `ask-user ask`: the built binary against a host served in-process on
//! loopback. Each exit code, with what it prints.

use ask_user_core::wire::SessionEvent;
use ask_user_host::{AppState, HostConfig, serve};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

const TOKEN: &str = "cli-test-token";

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
    async fn next_question(
        events: &mut tokio::sync::broadcast::Receiver<ask_user_host::SharedEvent>,
    ) -> String {
        loop {
            let event = within("question/requested", events.recv()).await.unwrap();
            if let SessionEvent::QuestionRequested(q) = &*event {
                return q.id.clone();
            }
        }
    }

    async fn post(&self, path: &str, body: String) -> reqwest::StatusCode {
        reqwest::Client::new()
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
    let file = std::env::temp_dir().join(format!("ask-user-cli-{}.json", std::process::id()));
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
    assert!(host.state.store().snapshot("default").is_empty());
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

#[tokio::test]
async fn an_ask_abandoned_by_killing_the_cli_resolves_as_aborted() {
    let host = start(|_| {}).await;
    let mut events = host.state.subscribe(&session("cli")).events;
    let run = ask(
        &["--url", &host.base, "--token", TOKEN, "--session", "cli"],
        &request().to_string(),
        &[],
    );
    let id = Host::next_question(&mut events).await;
    // Dropping the task drops the child, which is killed (kill_on_drop).
    run.abort();
    loop {
        let event = within("question/resolved", events.recv()).await.unwrap();
        if let SessionEvent::QuestionResolved(resolved) = &*event {
            assert_eq!(resolved.id, id);
            assert_eq!(resolved.outcome, ask_user_core::wire::Outcome::Aborted);
            break;
        }
    }
}
