//! Starting a host when none answers: `ask-user serve` in the background,
//! detached from this process (its own process group, stdin closed, logging
//! to `<data-dir>/serve.log`), then waiting until it is healthy.
//!
//! Two `ask-user mcp` starting at once must end with one host: the start
//! happens under an exclusive lock on `<data-dir>/serve.lock`, and whoever
//! gets the lock second finds the first one's host healthy. The token never
//! goes on the host's command line: the host reads (or creates) the token
//! file in the data directory.

use crate::data_dir::{ensure_private_dir, open_lock_file, open_private, try_lock_exclusive};
use std::fs::{File, OpenOptions};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;
use url::{Host, Url};

/// The lock file's name in the data directory.
pub const LOCK_FILE_NAME: &str = "serve.lock";

/// The background host's log in the data directory.
pub const LOG_FILE_NAME: &str = "serve.log";

/// How long a started host may take to answer its health check.
pub const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

/// How long one health check may take.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// The pause between two health checks while a host starts (and between two
/// tries of the start lock).
const POLL: Duration = Duration::from_millis(100);

/// How long `ask-user mcp` waits for another process's start lock: a host
/// starts in well under a second, so a lock held longer is a process stuck
/// (or not ours), and a client left waiting on it forever would hang.
pub const LOCK_PATIENCE: Duration = Duration::from_secs(10);

/// Makes sure a host answers at `base`, starting `ask-user serve` for it with
/// `data_dir` when none does.
pub async fn ensure_host(base: &Url, data_dir: &Path) -> Result<(), String> {
    let client = crate::client::http_client(base);
    if healthy(&client, base).await {
        return Ok(());
    }
    let addr = bind_address(base)?;
    ensure_private_dir(data_dir)
        .map_err(|e| format!("data directory {}: {e}", data_dir.display()))?;
    let Some(lock) = lock(
        &data_dir.join(LOCK_FILE_NAME),
        LOCK_PATIENCE,
        (&client, base),
    )
    .await?
    else {
        return Ok(());
    };
    // Whoever held the lock before may have started it meanwhile.
    if healthy(&client, base).await {
        return Ok(());
    }
    let log = data_dir.join(LOG_FILE_NAME);
    say!(
        "ask-user mcp: no host answers at {base}; starting `ask-user serve` (log: {})",
        log.display()
    );
    let mut child = start_host(addr, data_dir, &log)?;
    let started = Instant::now();
    let outcome = loop {
        if healthy(&client, base).await {
            break Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            break Err(format!(
                "`ask-user serve` exited ({status}) before answering at {base}; see {}",
                log.display()
            ));
        }
        if started.elapsed() >= STARTUP_PATIENCE {
            break Err(format!(
                "`ask-user serve` did not answer at {base} within {} s; see {}",
                STARTUP_PATIENCE.as_secs(),
                log.display()
            ));
        }
        tokio::time::sleep(POLL).await;
    };
    drop(lock);
    // Reap it should it exit while this process lives; it is not ours to stop.
    std::thread::spawn(move || child.wait());
    outcome
}

/// The host already running on `data_dir` when none answers at `base`: a
/// second host cannot start on that directory (it holds `host.lock`), so the
/// one it announced there is the one to use.
pub async fn running_host(base: &Url, data_dir: &Path) -> Option<Url> {
    let client = crate::client::http_client(base);
    if healthy(&client, base).await {
        return None;
    }
    let announced = Url::parse(&crate::host_lock::announced(data_dir)?).ok()?;
    let elsewhere = announced != *base && crate::client::is_loopback(&announced);
    (elsewhere && healthy(&crate::client::http_client(&announced), &announced).await)
        .then_some(announced)
}

/// Whether an ask-user host answers its health check at `base`.
async fn healthy(client: &reqwest::Client, base: &Url) -> bool {
    let Ok(url) = base.join("api/health") else {
        return false;
    };
    match client.get(url).timeout(HEALTH_TIMEOUT).send().await {
        Ok(response) => response.status().is_success(),
        Err(_) => false,
    }
}

/// The address a host for `base` binds: its IP (`localhost` is 127.0.0.1)
/// and port.
fn bind_address(base: &Url) -> Result<SocketAddr, String> {
    let ip = match base.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
        _ => {
            return Err(format!(
                "no host answers at {base}, and one can be started only for a loopback address"
            ));
        }
    };
    let port = base.port_or_known_default().unwrap_or(80);
    Ok(SocketAddr::new(ip, port))
}

/// Takes the exclusive lock on `path` (created 0600), waiting at most
/// `patience` for another process to release it, and writes this process's
/// id into the file, so whoever waits in vain can say who holds it. `None`
/// when the host at `base` answers while waiting (the holder started it).
async fn lock(
    path: &Path,
    patience: Duration,
    (client, base): (&reqwest::Client, &Url),
) -> Result<Option<File>, String> {
    let shown = path.display().to_string();
    let mut file = open_lock_file(path).map_err(|e| format!("lock file {shown}: {e}"))?;
    // Elsewhere no lock yet: a second host loses the race to bind and exits.
    #[cfg(unix)]
    {
        let started = Instant::now();
        loop {
            if try_lock_exclusive(&file).map_err(|e| format!("lock file {shown}: {e}"))? {
                break;
            }
            if healthy(client, base).await {
                return Ok(None);
            }
            if started.elapsed() >= patience {
                return Err(format!(
                    "lock file {shown}: {} has held it for more than {} s while starting a host; \
                     stop it (or remove the file if no such process runs) and try again",
                    holder(&mut file),
                    patience.as_secs()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
    use std::io::{Seek, Write};
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(|e| format!("lock file {shown}: {e}"))?;
    Ok(Some(file))
}

/// Who holds the lock, as the holder wrote it in the file.
fn holder(file: &mut File) -> String {
    use std::io::{Read, Seek};
    let mut text = String::new();
    let read = file
        .rewind()
        .and_then(|()| file.take(32).read_to_string(&mut text));
    match read.ok().and_then(|_| text.trim().parse::<u32>().ok()) {
        Some(pid) => format!("process {pid}"),
        None => "another process (it wrote no process id)".to_owned(),
    }
}

/// Starts `ask-user serve --addr ADDR --data-dir DIR`, detached: stdin closed,
/// stdout and stderr appended to `log`, in a process group of its own (the
/// client's signals to this process's group do not reach it).
fn start_host(addr: SocketAddr, data_dir: &Path, log: &Path) -> Result<Child, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the ask-user binary to start a host: {e}"))?;
    let out = open_private(log, OpenOptions::new().append(true).create(true))
        .map_err(|e| format!("log file {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("log file {}: {e}", log.display()))?;
    let mut command = Command::new(exe);
    command
        .arg("serve")
        .arg("--addr")
        .arg(addr.to_string())
        .arg("--data-dir")
        .arg(data_dir)
        // The token file is the token: not one inherited from this environment.
        .env_remove("ASK_USER_TOKEN")
        .env_remove("ASK_USER_ADDR")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
        .spawn()
        .map_err(|e| format!("cannot start `ask-user serve`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_started_only_for_a_loopback_address() {
        let addr = |url: &str| bind_address(&Url::parse(url).unwrap());
        assert_eq!(
            addr("http://127.0.0.1:7411/").unwrap(),
            "127.0.0.1:7411".parse().unwrap()
        );
        assert_eq!(
            addr("http://localhost:9/").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(addr("http://[::1]/").unwrap(), "[::1]:80".parse().unwrap());
        let remote = addr("http://example.com:7411/").unwrap_err();
        assert!(remote.contains("loopback"), "{remote}");
    }
}
