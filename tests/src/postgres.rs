//! A real PostgreSQL for the shared-store tests (issue 24): Debian's
//! `postgresql` package (`cargo xtask test` installs it when missing), a
//! cluster of its own in a temporary directory on a free loopback port,
//! password authentication (scram), run as the `postgres` user when the tests
//! run as root (PostgreSQL refuses root). Dropping it stops it and removes the
//! directory. A missing PostgreSQL fails the test, saying what is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The database user the harness creates.
pub const USER: &str = "askuser";

/// A PostgreSQL server of the test's own.
pub struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    password: String,
    as_postgres: bool,
    /// Serves TLS with `server.crt` and `server.key` in its directory.
    tls: bool,
}

/// Where Debian's PostgreSQL binaries are (`/usr/lib/postgresql/<ver>/bin`),
/// the newest version first; or what is missing.
pub fn binaries() -> Result<PathBuf, String> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| missing(&format!("/usr/lib/postgresql: {e}")))?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| missing("no /usr/lib/postgresql/<version>/bin/initdb"))
}

fn missing(what: &str) -> String {
    format!(
        "PostgreSQL is missing ({what}): the shared-store tests need a real one. Install Debian's \
         package (`apt-get install postgresql`; `cargo xtask test` does it when missing)"
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

impl PostgresServer {
    /// Creates and starts a cluster; fails saying what is missing or broke.
    pub fn start() -> Result<Self, String> {
        Self::start_with(None)
    }

    /// [`start`](Self::start), the server also speaking TLS with this
    /// certificate (PEM) and its key (`ssl = on`).
    pub fn start_with_tls(cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Result<Self, String> {
        let bin = binaries()?;
        let as_postgres = is_root();
        let dir = std::env::temp_dir().join(format!(
            "ask-user-test-pg-{}-{:016x}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let password = format!("{:032x}", rand_suffix() as u128 * 0x1_0000_0001);
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, &password).map_err(|e| e.to_string())?;
        if let Some((cert_pem, key_pem)) = tls {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(dir.join("server.crt"), cert_pem).map_err(|e| e.to_string())?;
            let key = dir.join("server.key");
            std::fs::write(&key, key_pem).map_err(|e| e.to_string())?;
            // PostgreSQL refuses a key others may read.
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| e.to_string())?;
        }
        if as_postgres {
            let chown = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !chown.status.success() {
                return Err(missing(&format!(
                    "the `postgres` user the package creates ({})",
                    String::from_utf8_lossy(&chown.stderr).trim()
                )));
            }
        }
        let server = Self {
            bin,
            dir,
            port: crate::free_port(),
            password,
            as_postgres,
            tls: tls.is_some(),
        };
        let data = server.dir.join("data");
        let init = server.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                USER.as_ref(),
                "--pwfile".as_ref(),
                pwfile.as_os_str(),
                "--auth=scram-sha-256".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        if !init.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&init.stderr)
            ));
        }
        std::fs::remove_file(&pwfile).ok();
        server.resume()?;
        Ok(server)
    }

    fn run(&self, tool: &str, args: &[&std::ffi::OsStr]) -> Result<Output, String> {
        let path = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut runuser = Command::new("runuser");
            runuser.args(["-u", "postgres", "--"]).arg(&path);
            runuser
        } else {
            Command::new(&path)
        };
        command
            .args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let data = self.dir.join("data");
        let log = self.dir.join("log");
        let mut all: Vec<&std::ffi::OsStr> = vec![
            "-D".as_ref(),
            data.as_os_str(),
            "-l".as_ref(),
            log.as_os_str(),
            "-w".as_ref(),
        ];
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        let out = self.run("pg_ctl", &all)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl {args:?} failed: {}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            ))
        }
    }

    /// Starts it (again) on its port.
    pub fn resume(&self) -> Result<(), String> {
        let mut options = format!(
            "-p {} -h 127.0.0.1 -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        if self.tls {
            let dir = self.dir.display();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key"
            ));
        }
        self.pg_ctl(&["-o", &options, "start"])
    }

    /// Stops it (fast: connections are closed, what was committed is kept).
    pub fn stop(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "stop"])
    }

    /// The URL a host is given (`ASK_USER_STORE`), without the password.
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password (`PGPASSWORD`).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Runs `sql` with psql; its output, or why it failed.
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        let psql = ["/usr/bin/psql", &self.bin.join("psql").to_string_lossy()]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| missing("psql"))?;
        let out = Command::new(psql)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER])
            .args(["-d", "postgres", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
            .env("PGPASSWORD", &self.password)
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(format!("psql: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Its directory (data, log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}
