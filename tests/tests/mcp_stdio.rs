//! `ask-user mcp` as a child process, driven over stdin/stdout as an MCP
//! client launches it: with rmcp's client (list, ask, progress, answer in the
//! page, cancel) and with raw JSON-RPC lines (a call without a progress token
//! gets the host's wait budget). Without a host, two started at once start
//! one; the session comes from the working directory; the browser opener runs
//! once, only when no page is connected. Every line on stdout is JSON-RPC.

use ask_user_core::tool::{TOOL_DESCRIPTION, TOOL_NAME};
use ask_user_core::wire::Outcome;
use ask_user_tests::free_port;
use ask_user_tests::host_process::host_binary;
use ask_user_tests::http_host::TestHost;
use ask_user_tests::mcp::{Recorder, call_params};
use ask_user_tests::wait::{PATIENCE, until, within};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, ClientRequest};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStdin, Command};

fn request(question: &str) -> Value {
    json!({"questions": [{"id": "db", "question": question,
        "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]})
}

fn answer() -> Value {
    json!({"answers": [{"id": "db", "selected": ["SQLite"]}]})
}

/// A fresh, empty directory under the temporary directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "auq-mcp-stdio-{name}-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A data directory holding `host`'s token, as `ask-user serve` keeps it.
fn data_dir_for(host: &TestHost) -> PathBuf {
    let dir = temp_dir("data");
    std::fs::write(dir.join("token"), format!("{}\n", host.token())).unwrap();
    dir
}

/// Polls `check` every 20 ms until it holds (bounded by `within`).
/// The one question pending in `session`, once there is one.
async fn pending_one(host: &TestHost, session: &str) -> String {
    let mut ids = Vec::new();
    until("the question to be pending", async || {
        ids = host.pending_ids(session).await;
        !ids.is_empty()
    })
    .await;
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

/// Runs `ask` (an `ask-user ask` command) with a one-question request on its
/// stdin; its output once it exits.
async fn run_ask(mut ask: Command) -> std::process::Output {
    ask.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = ask.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(request("Ask?").to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    within("ask-user ask", child.wait_with_output())
        .await
        .unwrap()
}

/// A running `ask-user mcp`.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout, line by line, after each line was checked to be JSON-RPC.
    stdout: Option<DuplexStream>,
    reader: Option<BufReader<DuplexStream>>,
    not_json_rpc: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

impl Mcp {
    /// Starts `ask-user mcp --url URL <args>` in `cwd` with `data_dir`; the
    /// browser opener is `opener`, or none (`ASK_USER_NO_OPEN`).
    fn start(cwd: &Path, data_dir: &Path, url: &str, args: &[&str], opener: Option<&Path>) -> Self {
        let mut command = Command::new(host_binary());
        command
            .arg("mcp")
            .args(["--url", url])
            .args(args)
            .current_dir(cwd)
            .env_remove("ASK_USER_TOKEN")
            .env_remove("ASK_USER_URL")
            .env("ASK_USER_DATA_DIR", data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match opener {
            Some(opener) => command
                .env("ASK_USER_OPENER", opener)
                .env_remove("ASK_USER_NO_OPEN"),
            None => command.env("ASK_USER_NO_OPEN", "1"),
        };
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {} mcp: {e}", host_binary().display()));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (mut checked, out) = tokio::io::duplex(1 << 20);
        let not_json_rpc = Arc::new(Mutex::new(Vec::new()));
        let bad = not_json_rpc.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let is_json_rpc = serde_json::from_str::<Value>(&line)
                    .is_ok_and(|message| message["jsonrpc"] == "2.0");
                if !is_json_rpc {
                    bad.lock().unwrap().push(line.clone());
                }
                if checked
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let err = child.stderr.take().expect("piped");
        tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Self {
            child,
            stdin,
            stdout: Some(out),
            reader: None,
            not_json_rpc,
            stderr,
        }
    }

    /// Connects rmcp's client over the process's stdin/stdout.
    async fn client(&mut self, recorder: Recorder) -> RunningService<RoleClient, Recorder> {
        let transport = (
            self.stdout.take().expect("not yet connected"),
            self.stdin.take().expect("not yet connected"),
        );
        within("the MCP handshake on stdio", recorder.serve(transport))
            .await
            .expect("initialize succeeds")
    }

    /// Writes one JSON-RPC message to stdin.
    async fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("raw mode");
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next JSON-RPC message on stdout.
    async fn receive(&mut self) -> Value {
        if self.reader.is_none() {
            self.reader = Some(BufReader::new(self.stdout.take().expect("raw mode")));
        }
        let reader = self.reader.as_mut().unwrap();
        let mut line = String::new();
        let read = within("a message on stdout", reader.read_line(&mut line)).await;
        assert!(
            read.unwrap() > 0,
            "stdout closed; stderr:\n{}",
            self.stderr()
        );
        serde_json::from_str(&line).unwrap()
    }

    /// The response to request `id` (skipping notifications), within
    /// [`PATIENCE`](PATIENCE) in all.
    async fn response(&mut self, id: u64) -> Value {
        within(&format!("the response to request {id}"), async {
            loop {
                let message = self.receive().await;
                if message["id"] == id {
                    return message;
                }
            }
        })
        .await
    }

    /// `initialize` as client `name`, then `notifications/initialized`.
    async fn initialize(&mut self, name: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "0"}}}),
        )
        .await;
        let response = self.response(1).await;
        assert_eq!(
            response["result"]["serverInfo"]["name"], "ask-user",
            "{response}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    /// `tools/list` → the tools' names.
    async fn tool_names(&mut self, id: u64) -> Vec<String> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
            .await;
        let response = self.response(id).await;
        let tools = response["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{response}; stderr:\n{}", self.stderr()));
        tools
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Sends `tools/call ask_user_question` (no progress token) as request `id`.
    async fn start_call(&mut self, id: u64, arguments: &Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": TOOL_NAME, "arguments": arguments}}))
            .await;
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr says `needle`.
    async fn says(&self, needle: &str) {
        let waited = tokio::time::timeout(PATIENCE, async {
            while !self.stderr().contains(needle) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "stderr never said {needle:?}:\n{}",
            self.stderr()
        );
    }

    fn assert_only_json_rpc_on_stdout(&self) {
        let bad = self.not_json_rpc.lock().unwrap();
        assert!(bad.is_empty(), "not JSON-RPC on stdout: {bad:?}");
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("still running")
    }
}

#[tokio::test]
async fn the_stdio_client_lists_the_tool_asks_hears_progress_and_gets_the_answer_given_in_the_page()
{
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    let mut mcp = Mcp::start(&data_dir, &data_dir, &host.base, &["--session", "s"], None);
    let recorder = Recorder::default();
    let heard = recorder.progress.clone();
    let client = mcp.client(recorder).await;

    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, TOOL_NAME);
    assert_eq!(tools[0].description.as_deref(), Some(TOOL_DESCRIPTION));

    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool(call_params(&request("Which?"))).await });
    let id = pending_one(&host, "s").await;
    // The host's progress notifications reach the stdio client under its own token.
    until("a progress notification", async || {
        !heard.lock().unwrap().is_empty()
    })
    .await;
    let first = heard.lock().unwrap()[0].clone();
    assert!(
        first
            .message
            .as_deref()
            .unwrap_or("")
            .contains("waiting for the person"),
        "{first:?}"
    );
    let (status, body) = host.answer("s", &id, &answer()).await;
    assert_eq!(status, 200, "{body}");
    let result = within("the call's result", call).await.unwrap().unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}))
    );
    mcp.assert_only_json_rpc_on_stdout();
    std::fs::remove_dir_all(&data_dir).ok();
}

#[tokio::test]
async fn cancelling_the_call_on_stdio_aborts_the_question_in_the_host() {
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    let mut mcp = Mcp::start(&data_dir, &data_dir, &host.base, &["--session", "c"], None);
    let client = mcp.client(Recorder::default()).await;
    let mut tab = host.events("c").await;
    tab.replay().await;

    let call = ClientRequest::CallToolRequest(CallToolRequest::new(call_params(&request("Go?"))));
    let handle = client
        .peer()
        .send_request_with_option(call, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let asked = tab.requested().await;
    handle
        .cancel(Some("changed my mind".to_owned()))
        .await
        .unwrap();
    let resolved = tab.resolved_maybe_after_detach(&asked.id).await;
    assert_eq!(resolved.id, asked.id);
    assert_eq!(resolved.outcome, Outcome::Aborted);
    assert!(host.pending_ids("c").await.is_empty());
    mcp.assert_only_json_rpc_on_stdout();
    std::fs::remove_dir_all(&data_dir).ok();
}

#[tokio::test]
async fn a_call_without_a_progress_token_gets_the_hosts_wait_budget_and_the_same_call_collects_the_answer()
 {
    let host = TestHost::start_with(|config| {
        config.mcp_wait_budget = Some(Duration::from_secs(1));
    })
    .await;
    let data_dir = data_dir_for(&host);
    let mut mcp = Mcp::start(&data_dir, &data_dir, &host.base, &["--session", "w"], None);
    mcp.initialize("raw-client").await;

    mcp.start_call(2, &request("Budget?")).await;
    let waiting = mcp.response(2).await;
    let id = pending_one(&host, "w").await;
    assert_eq!(
        waiting["result"]["structuredContent"],
        json!({"status": "waiting", "id": id}),
        "{waiting}"
    );
    assert_eq!(waiting["result"]["isError"], false);

    let (status, _) = host.answer("w", &id, &answer()).await;
    assert_eq!(status, 200);
    mcp.start_call(3, &request("Budget?")).await;
    let answered = mcp.response(3).await;
    assert_eq!(
        answered["result"]["structuredContent"],
        json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}),
        "{answered}"
    );
    mcp.assert_only_json_rpc_on_stdout();
    std::fs::remove_dir_all(&data_dir).ok();
}

#[tokio::test]
async fn when_stdin_closes_the_process_exits_and_a_waiting_call_only_detaches_its_question() {
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    let mut mcp = Mcp::start(&data_dir, &data_dir, &host.base, &["--session", "x"], None);
    mcp.initialize("closing-client").await;
    mcp.start_call(2, &request("Keep?")).await;
    let id = pending_one(&host, "x").await;
    drop(mcp.stdin.take());
    let status = within("the process to exit", mcp.child.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status}; stderr:\n{}", mcp.stderr());
    // The person's question is still there, detached, for the agent to ask again.
    let mut tab = host.events("x").await;
    let (replayed, pending) = tab.replay_detached().await;
    assert_eq!(replayed, [(id.clone(), true)]);
    assert_eq!(pending, [id]);
    mcp.assert_only_json_rpc_on_stdout();
    std::fs::remove_dir_all(&data_dir).ok();
}

/// The processes whose command line names `dir`, as (pid, command line).
fn processes_naming(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

fn cmdline_of(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// Stops the hosts started for `data_dir` when dropped (also when a test fails).
struct StopHosts(PathBuf);

impl Drop for StopHosts {
    fn drop(&mut self) {
        for (pid, _) in processes_naming(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        std::fs::remove_dir_all(&self.0).ok();
    }
}

#[cfg(unix)]
#[tokio::test]
async fn with_no_host_three_started_at_once_start_one_host_that_keeps_its_token_private_and_off_every_command_line()
 {
    use std::os::unix::fs::PermissionsExt;
    let base = temp_dir("autostart");
    let data_dir = base.join("data");
    // The data directory is inside `base`: both go, with the hosts.
    let _stop = StopHosts(base.clone());
    let url = format!("http://127.0.0.1:{}", free_port());
    // Three rather than two: without the lock, the race to start is lost
    // far more often than not.
    let mut first = Mcp::start(&base, &data_dir, &url, &["--session", "a"], None);
    let mut second = Mcp::start(&base, &data_dir, &url, &["--session", "b"], None);
    let mut third = Mcp::start(&base, &data_dir, &url, &["--session", "c"], None);
    first.initialize("first").await;
    second.initialize("second").await;
    third.initialize("third").await;
    let (one, two, three) = tokio::join!(
        first.tool_names(2),
        second.tool_names(2),
        third.tool_names(2)
    );
    assert_eq!(one, [TOOL_NAME]);
    assert_eq!(two, [TOOL_NAME]);
    assert_eq!(three, [TOOL_NAME]);

    let hosts: Vec<(u32, String)> = processes_naming(&data_dir)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains(" serve "))
        .collect();
    assert_eq!(hosts.len(), 1, "one host: {hosts:?}");
    let token_file = data_dir.join("token");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(token.len() >= 22, "{token}");
    let mut cmdlines: Vec<String> = hosts.iter().map(|(_, c)| c.clone()).collect();
    cmdlines.push(cmdline_of(first.pid()));
    cmdlines.push(cmdline_of(second.pid()));
    cmdlines.push(cmdline_of(third.pid()));
    for cmdline in &cmdlines {
        assert!(!cmdline.is_empty());
        assert!(
            !cmdline.contains(&token),
            "the token on a command line: {cmdline}"
        );
    }
    let said = format!("{}{}{}", first.stderr(), second.stderr(), third.stderr());
    assert_eq!(
        said.matches("starting `ask-user serve`").count(),
        1,
        "{said}"
    );
    assert!(data_dir.join("serve.log").is_file());
    // `ask-user ask` finds the token in the same file: its ask reaches the
    // host (and times out, exit 4) instead of being refused (exit 1).
    let mut ask = Command::new(host_binary());
    ask.args(["ask", "--url", &url, "--session", "a", "--timeout-ms", "50"])
        .env_remove("ASK_USER_TOKEN")
        .env("ASK_USER_DATA_DIR", &data_dir);
    let output = run_ask(ask).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("ASK_TIMEOUT"), "{stderr}");
    first.assert_only_json_rpc_on_stdout();
    second.assert_only_json_rpc_on_stdout();
    third.assert_only_json_rpc_on_stdout();
}

#[cfg(unix)]
#[tokio::test]
async fn the_background_hosts_log_says_where_the_token_is_and_never_holds_it() {
    let base = temp_dir("autostart-log");
    let data_dir = base.join("data");
    let _stop = StopHosts(base.clone());
    let url = format!("http://127.0.0.1:{}", free_port());
    let mut mcp = Mcp::start(&base, &data_dir, &url, &["--session", "a"], None);
    mcp.initialize("log").await;
    assert_eq!(mcp.tool_names(2).await, [TOOL_NAME]);
    let token_file = data_dir.join("token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    // The host printed its line before it answered the health check.
    let log = std::fs::read_to_string(data_dir.join("serve.log")).unwrap();
    assert!(!log.contains(token), "the token in serve.log: {log}");
    assert!(
        log.contains(&format!(
            "{url}/ (open it with ?token= and the token in {})",
            token_file.display()
        )),
        "{log}"
    );
    mcp.assert_only_json_rpc_on_stdout();
}

#[cfg(unix)]
#[tokio::test]
async fn a_start_lock_held_elsewhere_is_waited_for_boundedly_and_its_holder_named() {
    use std::io::Write as _;
    let base = temp_dir("held-lock");
    let data_dir = base.join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    // As another `ask-user mcp` stuck while starting a host would hold it.
    let mut held = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(data_dir.join("serve.lock"))
        .unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    writeln!(held, "{}", std::process::id()).unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    let mut mcp = Mcp::start(&base, &data_dir, &url, &["--session", "a"], None);
    mcp.initialize("waiting").await;
    mcp.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let response = mcp.response(2).await;
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("serve.lock")
            && message.contains(&format!("process {}", std::process::id()))
            && message.contains("10 s"),
        "{response}"
    );
    assert!(processes_naming(&data_dir).is_empty(), "no host started");
    mcp.assert_only_json_rpc_on_stdout();
    drop(held);
    std::fs::remove_dir_all(&base).ok();
}

#[tokio::test]
async fn the_session_defaults_to_the_working_directorys_name_and_two_directories_give_two_sessions()
{
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    let base = temp_dir("projects");
    let mut started = Vec::new();
    for name in ["alpha", "beta"] {
        let cwd = base.join(name);
        std::fs::create_dir_all(&cwd).unwrap();
        let mut mcp = Mcp::start(&cwd, &data_dir, &host.base, &[], None);
        mcp.initialize(name).await;
        mcp.start_call(2, &request("Where?")).await;
        started.push(mcp);
    }
    pending_one(&host, "alpha").await;
    pending_one(&host, "beta").await;
    assert!(host.pending_ids("default").await.is_empty());
    for mcp in &started {
        mcp.assert_only_json_rpc_on_stdout();
    }
    drop(started);
    std::fs::remove_dir_all(&base).ok();
    std::fs::remove_dir_all(&data_dir).ok();
}

/// A stub browser opener that appends its arguments to `log`.
fn stub_opener(dir: &Path, log: &Path) -> PathBuf {
    let script = dir.join("opener.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", log.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

fn opened(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[cfg(unix)]
#[tokio::test]
async fn the_browser_opener_runs_once_with_no_page_connected_never_with_a_page_connected_nor_with_no_open()
 {
    let dir = temp_dir("opener");
    let log = dir.join("opened.log");
    let opener = stub_opener(&dir, &log);

    // No page connected: opened once, with a private file that lands on the token URL.
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    let mut mcp = Mcp::start(
        &dir,
        &data_dir,
        &host.base,
        &["--session", "o"],
        Some(&opener),
    );
    mcp.initialize("opener-client").await;
    mcp.start_call(2, &request("Open?")).await;
    pending_one(&host, "o").await;
    mcp.says("opening").await;
    until("the opener to run", async || !opened(&log).is_empty()).await;
    let runs = opened(&log);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let redirect = std::fs::read_to_string(runs[0].trim()).unwrap();
    assert!(
        redirect.contains(&format!("{}/?token={}", host.base, host.token())),
        "{redirect}"
    );
    // Another agent's question to the same host: not a second window.
    let mut other = Mcp::start(
        &dir,
        &data_dir,
        &host.base,
        &["--session", "o2"],
        Some(&opener),
    );
    other.initialize("other-client").await;
    other.start_call(2, &request("Again?")).await;
    other.says("not opening the page: it was opened once").await;
    assert_eq!(opened(&log).len(), 1);

    // A page connected: never opened.
    let paged = TestHost::start().await;
    let paged_data = data_dir_for(&paged);
    let mut tab = paged.events("p").await;
    tab.replay().await;
    let mut mcp = Mcp::start(
        &dir,
        &paged_data,
        &paged.base,
        &["--session", "p"],
        Some(&opener),
    );
    mcp.initialize("paged-client").await;
    mcp.start_call(2, &request("Paged?")).await;
    mcp.says("not opening the page: a page is connected").await;
    assert_eq!(opened(&log).len(), 1);

    // --no-open: never opened, and said so.
    let quiet = TestHost::start().await;
    let quiet_data = data_dir_for(&quiet);
    let mut mcp = Mcp::start(
        &dir,
        &quiet_data,
        &quiet.base,
        &["--session", "q", "--no-open"],
        Some(&opener),
    );
    mcp.initialize("quiet-client").await;
    mcp.start_call(2, &request("Quiet?")).await;
    pending_one(&quiet, "q").await;
    mcp.says("not opening the page (--no-open)").await;
    assert_eq!(opened(&log).len(), 1);
    mcp.assert_only_json_rpc_on_stdout();

    for path in [&dir, &data_dir, &paged_data, &quiet_data] {
        std::fs::remove_dir_all(path).ok();
    }
}

#[cfg(unix)]
#[tokio::test]
async fn asking_with_an_agent_token_opens_no_page_and_says_who_will_see_the_question() {
    let dir = temp_dir("opener-agent");
    let log = dir.join("opened.log");
    let opener = stub_opener(&dir, &log);
    let host = TestHost::start().await;
    let (status, made) = host
        .post("/api/agents", json!({"name": "ci-runner"}).to_string())
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{made}");
    let token = made["credential"].as_str().expect("the token, shown once");
    // An agent elsewhere has its token, not the host's data directory.
    let elsewhere = dir.join("elsewhere");
    let url = format!("{}/?token={token}", host.base);
    let mut mcp = Mcp::start(&dir, &elsewhere, &url, &["--session", "a"], Some(&opener));
    mcp.initialize("agent-client").await;
    mcp.start_call(2, &request("Deploy?")).await;
    pending_one(&host, "a").await;
    mcp.says("not opening the page: this asks with an agent token")
        .await;
    assert!(opened(&log).is_empty(), "{:?}", opened(&log));
    assert!(!mcp.stderr().contains("HTTP 403"), "{}", mcp.stderr());
    assert!(
        !mcp.stderr().contains(token),
        "never the token: {}",
        mcp.stderr()
    );
    mcp.assert_only_json_rpc_on_stdout();
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
#[tokio::test]
async fn another_token_holder_asking_the_page_opener_first_does_not_silence_it() {
    let dir = temp_dir("opener-claimed");
    let log = dir.join("opened.log");
    let opener = stub_opener(&dir, &log);
    let host = TestHost::start().await;
    let data_dir = data_dir_for(&host);
    // Any token holder (a script, another agent) may ask, as often as it likes.
    for _ in 0..3 {
        let (status, body) = host.post("/api/page-opener", "").await;
        assert_eq!(status, reqwest::StatusCode::OK, "{body}");
        assert_eq!(body["open"], true, "{body}");
    }
    let mut mcp = Mcp::start(
        &dir,
        &data_dir,
        &host.base,
        &["--session", "c"],
        Some(&opener),
    );
    mcp.initialize("claimed-client").await;
    mcp.start_call(2, &request("Still open?")).await;
    mcp.says("opening").await;
    until("the opener to run", async || !opened(&log).is_empty()).await;
    assert_eq!(opened(&log).len(), 1);
    mcp.assert_only_json_rpc_on_stdout();
    for path in [&dir, &data_dir] {
        std::fs::remove_dir_all(path).ok();
    }
}

/// A stand-in HTTP proxy on loopback: keeps the head of every request it
/// gets (before answering it) and answers 502.
async fn recording_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = socket
                    .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (format!("http://{addr}"), heads)
}

/// A host name that is not this machine (reached only through the proxy).
const ELSEWHERE: &str = "http://ask-user-host.example:7411";

#[tokio::test]
async fn ask_sends_the_kept_token_only_to_a_loopback_host_and_a_given_one_anywhere() {
    let data_dir = temp_dir("remote-ask");
    let kept = "kept-token-0123456789abcdefXYZ";
    std::fs::write(data_dir.join("token"), format!("{kept}\n")).unwrap();
    let (proxy, heads) = recording_proxy().await;
    let ask = async |extra: &[&str]| {
        let mut ask = Command::new(host_binary());
        ask.args(["ask", "--url", ELSEWHERE, "--session", "a"])
            .args(extra)
            .env_remove("ASK_USER_TOKEN")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .env("http_proxy", &proxy)
            .env("HTTP_PROXY", &proxy)
            .env("ASK_USER_DATA_DIR", &data_dir);
        let output = run_ask(ask).await;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code(), stderr)
    };
    let (code, stderr) = ask(&[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("is not this machine") && stderr.contains("--token"),
        "{stderr}"
    );
    assert!(
        heads.lock().unwrap().is_empty(),
        "nothing is sent: {:?}",
        heads.lock().unwrap()
    );
    // A token given for that host goes there (through the proxy, as asked).
    let given = "given-token-0123456789abcdefXYZ";
    let (code, stderr) = ask(&["--token", given]).await;
    assert_eq!(code, Some(1), "the proxy's 502: {stderr}");
    let heads = heads.lock().unwrap().clone();
    assert!(
        heads.iter().any(|h| h.contains(&format!("Bearer {given}"))),
        "{heads:?}"
    );
    assert!(!heads.iter().any(|h| h.contains(kept)), "{heads:?}");
    std::fs::remove_dir_all(&data_dir).ok();
}

#[tokio::test]
async fn mcp_refuses_a_host_elsewhere_unless_given_its_token() {
    let data_dir = temp_dir("remote-mcp");
    std::fs::write(data_dir.join("token"), "kept-token-0123456789abcdefXYZ\n").unwrap();
    let output = Command::new(host_binary())
        .args(["mcp", "--url", ELSEWHERE, "--session", "a"])
        .env_remove("ASK_USER_TOKEN")
        .env_remove("ASK_USER_URL")
        .env("ASK_USER_NO_OPEN", "1")
        .env("ASK_USER_DATA_DIR", &data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = within("ask-user mcp", output).await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not this machine") && stderr.contains("?token="),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    std::fs::remove_dir_all(&data_dir).ok();
}

#[cfg(unix)]
#[tokio::test]
async fn a_client_pointed_elsewhere_uses_the_host_already_running_on_its_data_directory() {
    let base = temp_dir("running-elsewhere");
    let data_dir = base.join("data");
    let _stop = StopHosts(base.clone());
    let running = format!("http://127.0.0.1:{}", free_port());
    let mut first = Mcp::start(&base, &data_dir, &running, &["--session", "a"], None);
    first.initialize("first").await;
    assert_eq!(first.tool_names(2).await, [TOOL_NAME]);

    // Nothing answers at this address, and no second host may start on the
    // directory (the first holds its lock): the running one serves.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let mut second = Mcp::start(&base, &data_dir, &nowhere, &["--session", "b"], None);
    second.initialize("second").await;
    assert_eq!(second.tool_names(2).await, [TOOL_NAME]);
    let hosts: Vec<(u32, String)> = processes_naming(&data_dir)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains(" serve "))
        .collect();
    assert_eq!(hosts.len(), 1, "one host: {hosts:?}");
    let said = second.stderr();
    assert!(!said.contains("starting `ask-user serve`"), "{said}");
    second.assert_only_json_rpc_on_stdout();
}

/// Text a terminal would act on, or that reorders what it shows: OSC 52
/// (write the clipboard), a one-byte CSI (clear the screen), SGR 8 (hide the
/// rest), a right-to-left override, DEL.
const CONTROLS: &str = "\u{1b}]52;c;aGk=\u{7} \u{9b}2J \u{1b}[8m \u{202e}gpj.exe\u{7f}";

/// Whether `text` holds anything [`CONTROLS`] is made of (newlines aside).
fn holds_controls(text: &str) -> bool {
    use ask_user_core::display::{is_spoofing, is_terminal_control};
    text.chars()
        .any(|c| is_spoofing(c) || is_terminal_control(c))
}

/// A stand-in host on loopback that answers every request with `status` and
/// the JSON `body`.
async fn stand_in_host(status: &'static str, body: Value) -> String {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let body = body.to_string();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as it announced.
                loop {
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|n| n.trim().parse().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

/// `ask-user ask --url <url> --token t` with a one-question request.
async fn ask_stand_in(url: &str) -> std::process::Output {
    let mut ask = Command::new(host_binary());
    ask.args(["ask", "--url", url, "--token", "t", "--session", "a"])
        .env_remove("ASK_USER_TOKEN");
    run_ask(ask).await
}

#[tokio::test]
async fn ask_prints_an_answer_holding_controls_as_the_same_json_with_them_escaped() {
    let answer = json!({"answers": [{"id": "db", "selected": [CONTROLS], "custom": CONTROLS}],
        "note": CONTROLS});
    let url = stand_in_host("200 OK", answer.clone()).await;
    let output = ask_stand_in(&url).await;
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!holds_controls(&stdout), "{stdout:?}");
    let printed: Value = serde_json::from_str(&stdout).expect("exact JSON");
    assert_eq!(printed, answer, "the same value, byte for byte");
    assert!(
        stdout.contains(r"\u001b]52;c;aGk=\u0007 \u009b2J"),
        "{stdout}"
    );
}

#[tokio::test]
async fn ask_prints_an_error_holding_controls_with_them_shown_as_markers() {
    let error = json!({"error": {"name": "UserInteractionError", "code": "BAD_REQUEST",
        "message": format!("options[0].label: {CONTROLS}")}});
    let url = stand_in_host("400 Bad Request", error).await;
    let output = ask_stand_in(&url).await;
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!holds_controls(&stderr), "{stderr:?}");
    assert!(
        stderr
            .contains("⟨U+001B⟩]52;c;aGk=⟨U+0007⟩ ⟨U+009B⟩2J ⟨U+001B⟩[8m ⟨U+202E⟩gpj.exe⟨U+007F⟩"),
        "{stderr}"
    );
}

#[tokio::test]
async fn what_ask_user_mcp_writes_to_stderr_shows_controls_instead_of_sending_them() {
    let host = TestHost::start().await;
    let dir = temp_dir("controls");
    // A data directory whose name holds controls, which --no-open's line names.
    let data_dir = dir.join(format!("data{CONTROLS}"));
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::write(data_dir.join("token"), format!("{}\n", host.token())).unwrap();
    let mut mcp = Mcp::start(&dir, &data_dir, &host.base, &["--session", "c"], None);
    mcp.initialize("controls-client").await;
    mcp.start_call(2, &request("Controls?")).await;
    pending_one(&host, "c").await;
    mcp.says("not opening the page (--no-open)").await;
    let stderr = mcp.stderr();
    assert!(!holds_controls(&stderr), "{stderr:?}");
    assert!(
        stderr.contains("data⟨U+001B⟩]52;c;aGk=⟨U+0007⟩ ⟨U+009B⟩2J"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
