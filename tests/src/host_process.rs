//! The real host as a child process: `ask-user serve --addr 127.0.0.1:0 --dist DIR`,
//! with the URL (and session token) read from the line it prints on start.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use crate::browser::PATIENCE;

/// Names the `ask-user` binary to start; by default the one next to the test binary.
pub const HOST_BIN_ENV: &str = "ASK_USER_BIN";

/// What went wrong while starting the host.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The binary is not there.
    #[error("host binary {0} not found: run `cargo build -p ask-user-host` or set {HOST_BIN_ENV}")]
    NoBinary(PathBuf),
    /// The process could not be started.
    #[error("could not start {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// It exited or went quiet before printing its URL.
    #[error("`ask-user serve` printed no http:// URL ({why}); its stderr:\n{stderr}")]
    NoUrl {
        /// Exited, or timed out.
        why: String,
        /// What it wrote to stderr.
        stderr: String,
    },
}

/// A running `ask-user serve`; dropping it stops the process.
pub struct HostProcess {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl HostProcess {
    /// Starts `ask-user serve --addr 127.0.0.1:0 --dist <dist> <extra...>`
    /// and waits for the URL line.
    pub fn start(dist: &Path, extra: &[&str]) -> Result<Self, HostError> {
        let path = host_binary();
        if !path.is_file() {
            return Err(HostError::NoBinary(path));
        }
        // Port 0: the host binds a free port and prints it, so no race with other tests.
        let mut child = Command::new(&path)
            .args(["serve", "--addr", "127.0.0.1:0", "--dist"])
            .arg(dist)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| HostError::Spawn { path, source })?;

        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        std::thread::spawn(move || collect(err_pipe, &sink));

        // Keep draining stdout after the URL so the host never blocks on a full pipe.
        let (urls, found) = mpsc::channel();
        let out_pipe = child.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(out_pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = find_url(&line) {
                    let _ = urls.send(url.to_owned());
                }
            }
        });

        let mut host = HostProcess {
            child,
            url: String::new(),
            stderr,
        };
        match found.recv_timeout(PATIENCE) {
            Ok(url) => {
                host.url = url;
                Ok(host)
            }
            Err(err) => {
                let why = match err {
                    mpsc::RecvTimeoutError::Timeout => format!("nothing after {PATIENCE:?}"),
                    mpsc::RecvTimeoutError::Disconnected => match host.child.wait() {
                        Ok(status) => format!("it exited with {status}"),
                        Err(err) => format!("it closed stdout: {err}"),
                    },
                };
                Err(HostError::NoUrl {
                    why,
                    stderr: host.stderr(),
                })
            }
        }
    }

    /// The URL the host printed, with its token (`http://127.0.0.1:PORT/?token=...`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://127.0.0.1:PORT`, for building API URLs.
    pub fn origin(&self) -> &str {
        url_origin(&self.url)
    }

    /// The session token from the URL's `token` query parameter, if any.
    pub fn token(&self) -> Option<&str> {
        url_token(&self.url)
    }

    /// Everything the host wrote to stderr so far (its logs).
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Sends SIGTERM (a graceful shutdown) and waits for the process to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM was delivered");
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("the host can be waited on") {
                // Let the stderr reader catch up with the last lines.
                std::thread::sleep(std::time::Duration::from_millis(100));
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the host did not exit after SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ASK_USER_BIN`, else `ask-user` in the profile directory this test binary was
/// built into (`target/debug/deps/<test>` -> `target/debug/ask-user`).
pub fn host_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(HOST_BIN_ENV) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name != "deps") && dir != &exe)
        .unwrap_or(Path::new("target/debug"));
    profile_dir.join("ask-user")
}

fn collect(pipe: impl Read, sink: &Mutex<String>) {
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        if let Ok(mut text) = sink.lock() {
            text.push_str(&line);
            text.push('\n');
        }
    }
}

fn url_origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

fn url_token(url: &str) -> Option<&str> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The first `http://` URL in a line of the host's output.
fn find_url(line: &str) -> Option<&str> {
    let start = line.find("http://")?;
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '>' | ')'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_url_takes_the_url_out_of_the_hosts_start_line() {
        assert_eq!(
            find_url("ask-user: open http://127.0.0.1:4321/?token=s3cret"),
            Some("http://127.0.0.1:4321/?token=s3cret")
        );
        assert_eq!(find_url("listening"), None);
    }

    #[test]
    fn origin_and_token_are_read_from_the_url() {
        let url = "http://127.0.0.1:4321/?session=a&token=s3cret";
        assert_eq!(url_origin(url), "http://127.0.0.1:4321");
        assert_eq!(url_token(url), Some("s3cret"));
        assert_eq!(url_token("http://127.0.0.1:4321/"), None);
    }
}
