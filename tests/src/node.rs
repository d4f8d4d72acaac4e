//! Real Node.js clients of the host: scripts in `tests/node/` run with the npm
//! packages `cargo xtask test` installs ([`NODE_MODULES_ENV`]), each printing
//! one JSON object per line on stdout, read here as events.
//!
//! Tests that use them are `#[ignore]`d as node tests ([`NODE_TEST`]), so a
//! plain `cargo test --workspace` lists them as ignored; run without the
//! packages they fail and say what is missing.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Names the `node_modules` folder holding the packages (set by `cargo xtask test`).
pub const NODE_MODULES_ENV: &str = "ASK_USER_NODE_MODULES";

/// The `#[ignore]` reason of a test that runs a Node.js client.
pub const NODE_TEST: &str =
    "node test: needs Node.js and the npm packages that `cargo xtask test` installs";

/// The `node_modules` folder: [`NODE_MODULES_ENV`], else where xtask puts it
/// (`target/tools/node-tests/node_modules`). Panics, saying what is missing,
/// when `package` is not in it.
pub fn node_modules(package: &str) -> PathBuf {
    let modules = std::env::var_os(NODE_MODULES_ENV).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tools/node-tests/node_modules"),
        PathBuf::from,
    );
    assert!(
        modules.join(package).join("package.json").is_file(),
        "{} has no {package}: run `cargo xtask test` (it installs the npm packages the tests use), \
         or set {NODE_MODULES_ENV} to a node_modules folder that has it",
        modules.display()
    );
    modules
}

/// A number for each copy of a script this process makes, so tests running at
/// once never share (and remove) one copy.
fn next_copy() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A running Node.js script; dropping it kills the process.
pub struct NodeScript {
    child: Child,
    events: mpsc::Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    copy: PathBuf,
}

impl NodeScript {
    /// Runs `tests/node/<script>` with `env`, resolving imports from the
    /// `node_modules` that holds `package` (the script is copied beside it:
    /// ES modules find packages only from their own location).
    pub fn start(script: &str, package: &str, env: &[(&str, String)]) -> Self {
        let modules = node_modules(package);
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("node")
            .join(script);
        let copy = modules
            .parent()
            .expect("node_modules has a parent")
            .join(format!("{}-{}-{script}", std::process::id(), next_copy()));
        std::fs::copy(&source, &copy)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", source.display(), copy.display()));
        let mut child = Command::new("node")
            .arg(&copy)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start `node` (install Node.js): {e}"));
        let (sender, events) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let event = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the script printed a line that is not JSON ({e}): {line}")
                });
                if sender.send(event).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut pipe = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self {
            child,
            events,
            stderr,
            copy,
        }
    }

    /// Writes `line` to the script's stdin (scripts that wait for the test's
    /// go-ahead read it).
    pub fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("piped");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("write to the node script's stdin: {e}"));
    }

    /// The next event, waiting at most `patience`; panics (with the script's
    /// stderr) when none comes.
    pub async fn next(&self, patience: Duration) -> Value {
        let deadline = std::time::Instant::now() + patience;
        loop {
            match self.events.try_recv() {
                Ok(event) => return event,
                Err(mpsc::TryRecvError::Empty) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(_) => panic!(
                    "the node script sent no event within {patience:?}; its stderr:\n{}",
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    /// The events already printed, without waiting.
    pub fn drain(&self) -> Vec<Value> {
        self.events.try_iter().collect()
    }

    /// Waits for the script to exit; panics if it does not within `patience`
    /// or exits non-zero.
    pub async fn finished(mut self, patience: Duration) {
        let deadline = std::time::Instant::now() + patience;
        loop {
            match self.child.try_wait().expect("wait for node") {
                Some(status) => {
                    assert!(
                        status.success(),
                        "the node script exited with {status}; its stderr:\n{}",
                        self.stderr.lock().unwrap()
                    );
                    return;
                }
                None if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                None => panic!("the node script did not exit within {patience:?}"),
            }
        }
    }
}

impl Drop for NodeScript {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.copy);
    }
}
