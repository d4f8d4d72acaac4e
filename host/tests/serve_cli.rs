//! `ask-user serve` as a process: the one URL line, the token (its sources and
//! the rule it must follow), and a graceful SIGTERM that resolves pending asks
//! before the process exits.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

const PATIENCE: Duration = Duration::from_secs(30);

async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("gave up waiting for {what}"))
}

struct Served {
    child: Child,
    stdout: BufReader<ChildStdout>,
    stderr: ChildStderr,
    url: String,
}

impl Served {
    /// What the host logged, once it has exited.
    async fn logs_after_exit(&mut self) -> String {
        let mut logs = String::new();
        self.stderr.read_to_string(&mut logs).await.unwrap();
        logs
    }
}

/// A data directory of the test's own (never the user's), not yet created.
fn fresh_data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("auq-serve-cli-{}", rand::random::<u64>()))
}

async fn serve(args: &[&str], env: &[(&str, &str)]) -> Served {
    serve_in(&fresh_data_dir(), args, env).await
}

async fn serve_in(data_dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .env("ASK_USER_DATA_DIR", data_dir)
        .arg("serve")
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .env_remove("ASK_USER_TOKEN")
        .env_remove("ASK_USER_ADDR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start ask-user serve");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let mut url = String::new();
    within("the URL line", stdout.read_line(&mut url))
        .await
        .unwrap();
    Served {
        child,
        stdout,
        stderr,
        url: url.trim_end().to_owned(),
    }
}

/// The base URL (no trailing `/`) of the line `serve` printed.
fn base_of(line: &str) -> String {
    let url = line.split_whitespace().next().expect("a URL");
    url.split_once("/?token=")
        .map_or(url, |(base, _)| base)
        .trim_end_matches('/')
        .to_owned()
}

/// A redirected stdout is no terminal: the line never holds the token but
/// names the file it is in. (base, the token read from that file).
fn split(line: &str) -> (String, String) {
    assert!(
        !line.contains("?token=") || line.contains("(open it with ?token= and"),
        "{line}"
    );
    let path = line
        .split_once("the token in ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("the line names the token's file: {line}"));
    let token = std::fs::read_to_string(path).expect("the named token file");
    let token = token.trim().to_owned();
    assert!(
        !line.contains(&token),
        "the token is not printed to a pipe: {line}"
    );
    (base_of(line), token)
}

async fn terminate(served: &mut Served) -> std::process::ExitStatus {
    let pid = served.child.id().expect("still running").to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    within("the process to exit", served.child.wait())
        .await
        .unwrap()
}

#[tokio::test]
async fn serve_prints_one_url_line_with_the_bound_port_and_the_token_it_keeps_then_exits_on_sigterm()
 {
    let data_dir = fresh_data_dir();
    let mut served = serve_in(&data_dir, &[], &[]).await;
    let (base, token) = split(&served.url);
    let port: u16 = base
        .strip_prefix("http://127.0.0.1:")
        .expect("loopback URL")
        .parse()
        .expect("a port");
    assert_ne!(port, 0, "the real bound port, not 0");
    assert_eq!(token.len(), 32);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));

    let client = reqwest::Client::new();
    let health = client
        .get(format!("{base}/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let listed = client
        .get(format!("{base}/api/sessions/s/questions"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);

    let status = terminate(&mut served).await;
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    served.stdout.read_to_string(&mut rest).await.unwrap();
    assert_eq!(rest, "", "stdout holds only the URL line");

    // The token was kept in the data directory's token file (0600) ...
    let kept = std::fs::read_to_string(data_dir.join("token")).unwrap();
    assert_eq!(kept.trim(), token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data_dir.join("token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // ... so the next run has the same one; another data directory mints another.
    let mut again = serve_in(&data_dir, &[], &[]).await;
    assert_eq!(split(&again.url).1, token);
    terminate(&mut again).await;
    let mut other = serve(&[], &[]).await;
    assert_ne!(split(&other.url).1, token);
    terminate(&mut other).await;
    std::fs::remove_dir_all(&data_dir).ok();
}

const LONG_TOKEN: &str = "a-token-of-28-characters-xyz";

#[tokio::test]
async fn the_token_comes_from_a_file_the_environment_or_the_flag_which_warns_that_others_can_read_it()
 {
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-serve-cli-{}", std::process::id()));
    std::fs::write(&file, "from-file-0123456789abcdef\n").unwrap();
    let mut from_file = serve(&["--token-file", file.to_str().unwrap()], &[]).await;
    assert_eq!(
        split(&from_file.url).1,
        "from-file-0123456789abcdef",
        "the line names the token file: {}",
        from_file.url
    );
    terminate(&mut from_file).await;
    std::fs::remove_file(&file).ok();

    let mut from_env = serve(&[], &[("ASK_USER_TOKEN", LONG_TOKEN)]).await;
    assert!(
        from_env
            .url
            .contains("the token given in ASK_USER_TOKEN or --token")
            && !from_env.url.contains(LONG_TOKEN),
        "{}",
        from_env.url
    );
    terminate(&mut from_env).await;
    let quiet = from_env.logs_after_exit().await;
    assert!(!quiet.contains("every local user can read it"), "{quiet}");

    let mut flagged = serve(&["--token", LONG_TOKEN], &[]).await;
    assert!(
        flagged
            .url
            .contains("the token given in ASK_USER_TOKEN or --token")
            && !flagged.url.contains(LONG_TOKEN),
        "{}",
        flagged.url
    );
    terminate(&mut flagged).await;
    let warned = flagged.logs_after_exit().await;
    assert!(
        warned.contains("every local user can read it") && warned.contains("--token-file"),
        "{warned}"
    );
    assert!(
        !warned.contains(LONG_TOKEN),
        "the token is never logged: {warned}"
    );
}

#[tokio::test]
async fn a_token_shorter_than_128_bits_is_refused_at_start_whatever_its_source() {
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-serve-cli-short-{}", std::process::id()));
    std::fs::write(&file, "s3cret\n").unwrap();
    let file = file.to_str().unwrap().to_owned();
    let sources: [(&[&str], Option<&str>, &str); 3] = [
        (&["--token", "s3cret"], None, "--token / ASK_USER_TOKEN"),
        (&[], Some("s3cret"), "--token / ASK_USER_TOKEN"),
        (&["--token-file", &file], None, "--token-file"),
    ];
    for (args, env, named) in sources {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("ASK_USER_DATA_DIR", fresh_data_dir())
            .env_remove("ASK_USER_TOKEN");
        if let Some(token) = env {
            command.env("ASK_USER_TOKEN", token);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}: no URL");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(
            stderr.contains("6 characters") && stderr.contains("at least 22"),
            "{args:?}: {stderr}"
        );
    }
    std::fs::remove_file(&file).ok();
}

#[tokio::test]
async fn a_token_that_cannot_travel_in_a_url_is_refused_at_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--token",
            "has space and is long enough",
        ])
        .env("ASK_USER_DATA_DIR", fresh_data_dir())
        .env_remove("ASK_USER_TOKEN")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--token") && stderr.contains("' '"),
        "{stderr}"
    );
}

#[tokio::test]
async fn sigterm_resolves_a_pending_ask_with_ask_aborted_before_exiting() {
    let mut served = serve(&[], &[]).await;
    let (base, token) = split(&served.url);
    let client = reqwest::Client::new();
    let ask = tokio::spawn({
        let (client, base, token) = (client.clone(), base.clone(), token.clone());
        async move {
            let response = client
                .post(format!("{base}/api/sessions/s/ask"))
                .bearer_auth(token)
                .body(r#"{"questions": [{"id": "a", "question": "Still there?"}]}"#)
                .send()
                .await
                .unwrap();
            (response.status(), response.text().await.unwrap())
        }
    });
    loop {
        let listed: serde_json::Value = client
            .get(format!("{base}/api/sessions/s/questions"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !listed["pending"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let status = terminate(&mut served).await;
    assert!(status.success(), "{status}");
    let (status, body) = within("the ask's answer", ask).await.unwrap();
    assert_eq!(status, 503);
    assert!(body.contains("ASK_ABORTED"), "{body}");
}
