//! `ask-user serve` and its page as a process: started from a folder with no
//! page in it, the binary serves the page built into it, or (built without
//! one) a notice at `/` that it also prints once; a `--dist` without an
//! `index.html` refuses to start.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

const PATIENCE: Duration = Duration::from_secs(30);

fn empty_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn serve_from_an_empty_folder_serves_the_built_in_page_or_says_once_how_to_build_it() {
    let cwd = empty_dir("serve-empty");
    // A `dist/` of someone else's project must not be served in place of ours.
    std::fs::create_dir_all(cwd.join("dist")).unwrap();
    std::fs::write(cwd.join("dist/index.html"), "<p>another project</p>").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .current_dir(&cwd)
        .env_remove("ASK_USER_TOKEN")
        .env("ASK_USER_DATA_DIR", cwd.join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start ask-user serve");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    tokio::time::timeout(PATIENCE, stdout.read_line(&mut url))
        .await
        .expect("the URL line")
        .unwrap();
    // A pipe is no terminal: the line is the bare URL and where the token is.
    let base = url
        .split_whitespace()
        .next()
        .expect("the URL")
        .trim_end_matches('/')
        .to_owned();

    let client = reqwest::Client::new();
    let root = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(root.status(), 200);
    let policy = root.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    let body = root.text().await.unwrap();
    assert!(
        !body.contains("another project"),
        "the folder's dist/ is not ours"
    );
    let health = client
        .get(format!("{base}/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "the API works either way");

    let pid = child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();

    let notice = "built without its page";
    if ask_user_host::server::pages::embedded() {
        // Trunk's release build minifies the HTML (`type=module`, unquoted).
        assert!(
            body.contains("<script type=module>") || body.contains("<script type=\"module\">"),
            "the page: {body}"
        );
        assert!(!stderr.contains(notice), "{stderr}");
    } else {
        assert!(
            body.contains("cargo xtask dist"),
            "the notice says how: {body}"
        );
        assert!(body.contains("--dist"), "{body}");
        assert_eq!(stderr.matches(notice).count(), 1, "printed once: {stderr}");
    }
    std::fs::remove_dir_all(&cwd).ok();
}

#[tokio::test]
async fn a_dist_folder_without_an_index_is_refused_at_start() {
    let cwd = empty_dir("serve-bad-dist");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["serve", "--addr", "127.0.0.1:0", "--dist"])
        .arg(&cwd)
        .env("ASK_USER_DATA_DIR", cwd.join("data"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no URL");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--dist") && stderr.contains("index.html"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&cwd).ok();
}
