//! A built `ask-user serve`, started in a folder of its own and asked over
//! plain HTTP (std only): the installed binary's check in `cargo xtask test`
//! and the idle memory figure of `cargo xtask bench`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// What idle memory should stay under (issue 20), in MiB.
pub const IDLE_GOAL_MIB: f64 = 8.0;

/// A running `ask-user serve --addr 127.0.0.1:0`, killed when dropped.
pub struct Serve {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    token: String,
}

impl Serve {
    /// Starts `program serve` (a path, or a name looked up on `command`'s
    /// PATH) in `dir`, with its data in `dir/data`, and reads the URL it prints.
    pub fn start(mut command: Command, dir: &Path) -> Result<Self, String> {
        let log = std::fs::File::create(dir.join("serve.log"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(dir.join("data"))
            .current_dir(dir)
            .env_remove("ASK_USER_TOKEN")
            .env_remove("ASK_USER_DATA_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let shown = crate::exec::show(&command);
        let mut child = command
            .spawn()
            .map_err(|e| format!("could not start `{shown}`: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        // The host prints its URL once it listens, or exits (closing stdout).
        let _ = BufReader::new(stdout).read_line(&mut line);
        // Its stdout is a pipe, not a terminal, so the line holds no token:
        // the host keeps it in the data directory's token file.
        let parsed = line.find("http://").and_then(|start| {
            let rest = line[start..]
                .split_whitespace()
                .next()?
                .strip_prefix("http://")?;
            let addr = rest.split('/').next()?;
            let token = std::fs::read_to_string(dir.join("data").join("token")).ok()?;
            Some((addr.to_owned(), token.trim().to_owned()))
        });
        let Some((addr, token)) = parsed else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
            return Err(format!(
                "`{shown}` printed no URL (got {line:?}); its log:\n{log}"
            ));
        };
        Ok(Self { child, addr, token })
    }

    /// `GET path` with the token; the status and the body as received.
    pub fn get(&self, path: &str) -> Result<(u16, String), String> {
        let fail = |e: std::io::Error| format!("GET {path} from {}: {e}", self.addr);
        let mut stream = TcpStream::connect(&self.addr).map_err(fail)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(fail)?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.addr, self.token
        )
        .map_err(fail)?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).map_err(fail)?;
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| format!("GET {path}: not an HTTP response: {response:.80}"))?;
        let body = response
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, body)| body.to_owned());
        Ok((status, body))
    }

    /// The process's resident memory, from `/proc/PID/status`.
    pub fn memory(&self) -> Result<Memory, String> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        Memory::parse(&status).ok_or_else(|| format!("{path} has no VmRSS, RssAnon, RssFile"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Resident memory in KiB: all of it, and its anonymous (heap, stacks,
/// relocated data) and file-backed (the binary's and libraries' pages) parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`.
    pub rss_kib: u64,
    /// `RssAnon`.
    pub anon_kib: u64,
    /// `RssFile`.
    pub file_kib: u64,
}

impl Memory {
    fn parse(status: &str) -> Option<Self> {
        let field = |name: &str| {
            status.lines().find_map(|line| {
                let value = line.strip_prefix(name)?.strip_prefix(':')?;
                value.trim().strip_suffix("kB")?.trim().parse().ok()
            })
        };
        Some(Self {
            rss_kib: field("VmRSS")?,
            anon_kib: field("RssAnon")?,
            file_kib: field("RssFile")?,
        })
    }
}

/// Idle memory of `binary`: `ask-user serve` with its store, one session
/// (one `GET …/questions`, as a page's first request), no page connected,
/// measured a second later. Returns the summary lines and whether it is
/// within [`IDLE_GOAL_MIB`].
pub fn idle_memory(binary: &Path, dir: &Path) -> Result<(Vec<String>, bool), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    drop_cached_pages(binary)?;
    let serve = Serve::start(Command::new(binary), dir)?;
    let (status, body) = serve.get("/api/sessions/idle/questions")?;
    if status != 200 {
        return Err(format!("GET /api/sessions/idle/questions: {status} {body}"));
    }
    std::thread::sleep(Duration::from_secs(1));
    let memory = serve.memory()?;
    drop(serve);
    let _ = std::fs::remove_dir_all(dir);
    let mib = |kib: u64| kib as f64 / 1024.0;
    let within = mib(memory.rss_kib) <= IDLE_GOAL_MIB;
    Ok((
        vec![format!(
            "idle VmRSS {:.1} MiB (goal ≤ {IDLE_GOAL_MIB} MiB): anonymous {:.1} MiB, file-backed {:.1} MiB \
             (`ask-user serve` with its store, one session, no page, started with the binary \
             out of the page cache; {})",
            mib(memory.rss_kib),
            mib(memory.anon_kib),
            mib(memory.file_kib),
            binary.display()
        )],
        within,
    ))
}

/// Writes `file`'s dirty pages back and drops its pages from the page cache
/// (GNU dd's documented `count=0` idiom, so xtask stays without dependencies).
///
/// Most of an idle host's memory is the binary's clean pages, and the kernel
/// maps a whole cached folio on a fault, so the figure followed how the file
/// was last written (7.5 to 8.5 MiB for the same bytes, docs/performance.md).
/// Read back by readahead, as on a first start after an install or a reboot,
/// it is the same every run.
fn drop_cached_pages(file: &Path) -> Result<(), String> {
    let mut dd = Command::new("dd");
    dd.arg(format!("of={}", file.display()))
        .args([
            "oflag=nocache",
            "conv=notrunc,fdatasync",
            "count=0",
            "status=none",
        ])
        .stdin(Stdio::null());
    let shown = crate::exec::show(&dd);
    let output = dd
        .output()
        .map_err(|e| format!("could not run `{shown}` (coreutils' dd): {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{shown}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_reads_the_resident_fields_of_proc_status() {
        let status = "Name:\task-user\nVmPeak:\t  100 kB\nVmRSS:\t    7680 kB\n\
                      RssAnon:\t    1228 kB\nRssFile:\t    6452 kB\nRssShmem:\t       0 kB\n";
        assert_eq!(
            Memory::parse(status),
            Some(Memory {
                rss_kib: 7680,
                anon_kib: 1228,
                file_kib: 6452
            })
        );
        assert_eq!(Memory::parse("VmRSS:\t 1 kB\n"), None);
    }

    #[test]
    fn dropping_a_files_cached_pages_keeps_its_bytes() {
        let dir = std::env::temp_dir().join(format!("xtask-drop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("binary");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &bytes).unwrap();
        drop_cached_pages(&file).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), bytes);
        let missing = drop_cached_pages(&dir.join("missing").join("binary")).unwrap_err();
        assert!(missing.contains("dd"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_process_has_resident_memory() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let memory = Memory::parse(&status).unwrap();
        assert!(memory.rss_kib > 0);
        assert!(memory.anon_kib + memory.file_kib <= memory.rss_kib);
    }
}
