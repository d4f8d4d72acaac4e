//! A PostgreSQL of an example's own (the shared-store bench and soak):
//! Debian's `postgresql` (`/usr/lib/postgresql/<ver>/bin`), run as the
//! `postgres` user when run as root, trust authentication on a free loopback
//! port, in a temporary directory removed on drop.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
const TICKS: u64 = 100;

#[allow(dead_code)] // The bench's, not the soak's.
/// `(pid, ppid, user + system CPU)` of a `/proc/PID/stat` line.
pub fn process_cpu(stat: &str) -> Option<(u32, u32, Duration)> {
    let pid = stat.split_whitespace().next()?.parse().ok()?;
    // After the command's closing parenthesis: state, ppid, … utime (14th
    // field of the line) and stime (15th).
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((pid, ppid, Duration::from_millis(ticks * 1000 / TICKS)))
}

/// A PostgreSQL of the example's own.
pub struct Postgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl Postgres {
    /// Creates and starts it.
    pub fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is missing: apt-get install postgresql")
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|bin| bin.join("initdb").is_file())
            .max()
            .expect("PostgreSQL is missing: apt-get install postgresql");
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let dir = std::env::temp_dir().join(format!("ask-user-example-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        if as_postgres {
            Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status()
                .expect("chown");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let pg = Self {
            bin,
            dir,
            port,
            as_postgres,
        };
        let data = pg.dir.join("data");
        pg.run(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "bench",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let mut options = format!(
            "-p {} -h 127.0.0.1 -k {} -c max_connections=200",
            pg.port,
            pg.dir.display()
        );
        // `ASK_USER_BENCH_PG_STATS=1`: statement counts and times per phase
        // (pg_stat_statements), to see where a round trip's time goes.
        if std::env::var_os("ASK_USER_BENCH_PG_STATS").is_some() {
            options.push_str(" -c shared_preload_libraries=pg_stat_statements");
        }
        // `ASK_USER_BENCH_PG_OPTIONS`: more server options (`-c auto_explain…`).
        if let Ok(more) = std::env::var("ASK_USER_BENCH_PG_OPTIONS") {
            options.push(' ');
            options.push_str(&more);
        }
        pg.run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-l",
                &pg.dir.join("log").to_string_lossy(),
                "-w",
                "-o",
                &options,
                "start",
            ],
        );
        pg
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let path = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command
            .args(args)
            .current_dir(&self.dir)
            .output()
            .expect(tool);
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// CPU time (user + system) its processes have used so far: the
    /// postmaster and its children (one backend per connection, the
    /// background workers).
    #[allow(dead_code)] // The bench's, not the soak's.
    pub fn cpu(&self) -> Duration {
        let Some(postmaster) = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|pid| pid.lines().next()?.trim().parse::<u32>().ok())
        else {
            return Duration::ZERO;
        };
        let mut total = Duration::ZERO;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(stat) = std::fs::read_to_string(entry.path().join("stat")).ok() else {
                continue;
            };
            let Some((pid, ppid, cpu)) = process_cpu(&stat) else {
                continue;
            };
            if pid == postmaster || ppid == postmaster {
                total += cpu;
            }
        }
        total
    }

    /// Its URL (no password: trust on loopback).
    pub fn url(&self) -> String {
        format!("postgres://bench@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        self.run(
            "pg_ctl",
            &["-D", &data.to_string_lossy(), "-m", "immediate", "stop"],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
