//! The real host as a child process: `ask-user serve --addr 127.0.0.1:0
//! [--dist DIR]`, with the URL (and session token) read from the line it prints
//! on start.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::wait::PATIENCE;

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
    /// Its own data directory (removed on drop).
    data_dir: PathBuf,
    url: String,
    /// `http://127.0.0.1:PORT`, read from `url`.
    origin: String,
    /// `url`'s `token` query parameter, decoded.
    token: Option<String>,
    stderr: Arc<Mutex<String>>,
}

impl HostProcess {
    /// Starts `ask-user serve --addr 127.0.0.1:0 --dist <dist> <extra...>`
    /// and waits for the URL line.
    pub fn start(dist: &Path, extra: &[&str]) -> Result<Self, HostError> {
        Self::start_limited(dist, extra, None)
    }

    /// [`HostProcess::start`] with the host's descriptor limit (soft and hard)
    /// set to `descriptors` first, as `ulimit -n` would (through `sh`, which
    /// then execs the host, so the child is the host itself).
    pub fn start_limited(
        dist: &Path,
        extra: &[&str],
        descriptors: Option<u32>,
    ) -> Result<Self, HostError> {
        let mut args = vec![std::ffi::OsStr::new("--dist"), dist.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        Self::spawn(&args, None, descriptors)
    }

    /// [`HostProcess::start`] with `env` added to the host's environment.
    pub fn start_with_env(
        dist: &Path,
        extra: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Self, HostError> {
        let mut args = vec![std::ffi::OsStr::new("--dist"), dist.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        Self::spawn_with_env(&args, None, None, env)
    }

    /// Starts `ask-user serve --addr 127.0.0.1:0 <extra...>` with `env` added
    /// (no `--dist`: the API and MCP; with `ASK_USER_STORE` in `env` it keeps
    /// its record there instead of `--ephemeral`).
    pub fn start_with_env_only(
        extra: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Self, HostError> {
        let args: Vec<&std::ffi::OsStr> = extra.iter().map(std::ffi::OsStr::new).collect();
        Self::spawn_with_env(&args, None, None, env)
    }

    /// Starts `ask-user serve --addr 127.0.0.1:0 <extra...>` in the folder
    /// `cwd`, without `--dist`: the page it serves is the one built into the
    /// binary (if any).
    pub fn start_in(cwd: &Path, extra: &[&str]) -> Result<Self, HostError> {
        let args: Vec<&std::ffi::OsStr> = extra.iter().map(std::ffi::OsStr::new).collect();
        Self::spawn(&args, Some(cwd), None)
    }

    fn spawn(
        args: &[&std::ffi::OsStr],
        cwd: Option<&Path>,
        descriptors: Option<u32>,
    ) -> Result<Self, HostError> {
        Self::spawn_with_env(args, cwd, descriptors, &[])
    }

    fn spawn_with_env(
        args: &[&std::ffi::OsStr],
        cwd: Option<&Path>,
        descriptors: Option<u32>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Self, HostError> {
        let path = host_binary();
        if !path.is_file() {
            return Err(HostError::NoBinary(path));
        }
        let mut command = match descriptors {
            Some(limit) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                    .arg(&path);
                sh
            }
            None => Command::new(&path),
        };
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        // A data directory of its own: the token file never lands in $HOME.
        let data_dir = std::env::temp_dir().join(format!(
            "ask-user-test-host-{}-{:016x}",
            std::process::id(),
            rand_suffix()
        ));
        command.env("ASK_USER_DATA_DIR", &data_dir);
        for (name, value) in env {
            command.env(name, value);
        }
        // Port 0: the host binds a free port and prints it, so no race with other tests.
        command.args(["serve", "--addr", "127.0.0.1:0"]);
        // Nothing on disk unless the test gives the host a data directory
        // (or a shared store).
        let shared = env.iter().any(|(name, _)| *name == "ASK_USER_STORE");
        if !shared && !args.iter().any(|a| *a == "--data-dir") {
            command.arg("--ephemeral");
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| HostError::Spawn { path, source })?;

        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        let collector = std::thread::spawn(move || collect(err_pipe, &sink));

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
            data_dir,
            url: String::new(),
            origin: String::new(),
            token: None,
            stderr,
        };
        match found.recv_timeout(PATIENCE) {
            Ok(url) => {
                (host.origin, host.token) = origin_and_token(&url);
                // Piped, the host never prints its token: read it where the
                // line says it is, as a person would.
                if host.token.is_none() {
                    host.token = token_from_args(args, &host.data_dir);
                }
                host.url = match &host.token {
                    Some(token) => format!("{}/?token={token}", host.origin),
                    None => url,
                };
                Ok(host)
            }
            Err(err) => {
                let why = match err {
                    mpsc::RecvTimeoutError::Timeout => format!("nothing after {PATIENCE:?}"),
                    mpsc::RecvTimeoutError::Disconnected => {
                        let exited = match host.child.wait() {
                            Ok(status) => format!("it exited with {status}"),
                            Err(err) => format!("it closed stdout: {err}"),
                        };
                        // It has exited: all it wrote to stderr is read once
                        // the collector sees the pipe's end.
                        let _ = collector.join();
                        exited
                    }
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
        &self.origin
    }

    /// The session token from the URL's `token` query parameter, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Everything the host wrote to stderr so far (its logs).
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `signal` (`-TERM`, `-STOP`, `-CONT`, …) through `kill`, as a
    /// service manager or an operator would.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill {signal} {}", self.pid());
    }

    /// Sends SIGTERM and waits up to `patience` for the exit; `None` if it is
    /// still running then.
    pub fn terminate(&mut self, patience: Duration) -> Option<ExitStatus> {
        self.signal("-TERM");
        let deadline = Instant::now() + patience;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills the host with SIGKILL (no shutdown runs) and reaps it.
    pub fn kill(&mut self) -> ExitStatus {
        let _ = self.child.kill();
        self.child.wait().expect("reap the host")
    }

    /// The host's resident set (`VmRSS` in `/proc/<pid>/status`), in KiB.
    pub fn vm_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Sends SIGTERM and waits (up to [`PATIENCE`]) for the exit, then lets the
    /// stderr reader catch up with the last lines.
    ///
    /// # Panics
    /// If the host is still running after [`PATIENCE`].
    pub fn terminate_and_wait(&mut self) -> ExitStatus {
        let status = self
            .terminate(PATIENCE)
            .expect("the host exits after SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
        status
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// A number unlikely to repeat (the clock's nanoseconds and a counter).
fn rand_suffix() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    nanos ^ (COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) << 48)
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

/// The origin (`http://127.0.0.1:PORT`) and the decoded `token` query
/// parameter of the URL the host printed.
fn origin_and_token(url: &str) -> (String, Option<String>) {
    let parsed =
        url::Url::parse(url).unwrap_or_else(|e| panic!("the host printed a bad URL {url:?}: {e}"));
    let token = parsed
        .query_pairs()
        .find_map(|(key, value)| (key == "token").then(|| value.into_owned()));
    (parsed.origin().ascii_serialization(), token)
}

/// The token a host started with `args` uses: `--token`, else the file of
/// `--token-file`, else the `token` file in its data directory (`--data-dir`,
/// else `data_dir`).
fn token_from_args(args: &[&std::ffi::OsStr], data_dir: &Path) -> Option<String> {
    let value = |flag: &str| {
        args.windows(2)
            .find(|pair| pair[0] == flag)
            .map(|pair| PathBuf::from(pair[1]))
    };
    if let Some(token) = value("--token") {
        return Some(token.to_string_lossy().into_owned());
    }
    let file = value("--token-file").unwrap_or_else(|| {
        value("--data-dir")
            .unwrap_or(data_dir.to_owned())
            .join("token")
    });
    let text = std::fs::read_to_string(file).ok()?;
    Some(text.trim().to_owned())
}

/// The first `http://` URL in a line of the host's output.
fn find_url(line: &str) -> Option<&str> {
    let start = line.find("https://").or_else(|| line.find("http://"))?;
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
        assert_eq!(
            find_url("https://127.0.0.1:4321/?token=s3cret"),
            Some("https://127.0.0.1:4321/?token=s3cret")
        );
    }

    #[test]
    fn origin_and_token_are_read_from_the_url() {
        let url = "http://127.0.0.1:4321/?session=a&token=s3cret";
        assert_eq!(
            origin_and_token(url),
            (
                "http://127.0.0.1:4321".to_owned(),
                Some("s3cret".to_owned())
            )
        );
        assert_eq!(origin_and_token("http://127.0.0.1:4321/").1, None);
    }
}
