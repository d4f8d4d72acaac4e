//! The `ask-user` command line.

use crate::data_dir::DataDirArg;
use crate::server::accept::{Limits, connections_for_descriptors};
use crate::server::guard::check_token;
use crate::server::pending::{DEFAULT_DETACH_GRACE, DEFAULT_MAX_PENDING_BYTES};
use crate::server::state::{
    DEFAULT_MAX_MCP_SESSIONS, DEFAULT_MAX_PENDING, DEFAULT_MAX_STREAMS, DEFAULT_MCP_WAIT_BUDGET,
    HostConfig,
};
use crate::server::store::{
    DEFAULT_KEEP_DAYS, DEFAULT_MAX_STORE_BYTES, DEFAULT_SESSION_WRITE_BYTES_PER_MINUTE,
    MIN_STORE_BYTES, StoreLimits,
};
use clap::{Args, Parser, Subcommand};
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// ask-user: lets an agent ask a person structured questions in a web page.
#[derive(Debug, Parser)]
#[command(name = "ask-user", version, about)]
pub struct Cli {
    /// `ask-user --data-dir DIR serve`: the flag before the subcommand as well
    /// as after it. Clap hands a global flag's value down to the subcommand's
    /// own `--data-dir`, which is the one read.
    #[command(flatten)]
    pub data_dir: DataDirArg,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run the host: the page, the event stream and the agent's ask endpoint.
    Serve(ServeArgs),
    /// Ask a running host: send a request (JSON file or stdin), print the answer batch.
    Ask(crate::client::ask::AskArgs),
    /// MCP over stdin/stdout for clients that launch a command: bridges to a
    /// host (started in the background when none answers).
    Mcp(crate::client::mcp::McpArgs),
    /// Print the record of resolved questions (JSON or a Markdown decision log), or clear it.
    History(crate::client::history::HistoryArgs),
    /// Pair a phone or another computer: prints a link and its QR code for the
    /// device to open on the --remote origin, then asks whether to allow it.
    Pair(crate::client::devices::PairArgs),
    /// List the paired devices (name, paired at, last seen), or revoke one.
    Devices(crate::client::devices::DevicesArgs),
    /// Add, list or remove the people who may answer (each with a
    /// credential of their own); with none the host has one person.
    People(crate::client::people::PeopleArgs),
    /// Add, list or remove agent tokens: they may ask, never answer.
    Agents(crate::client::people::AgentsArgs),
}

/// `ask-user serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to bind (loopback by default; port 0 picks a free port).
    #[arg(long, env = "ASK_USER_ADDR", default_value = "127.0.0.1:7411")]
    pub addr: SocketAddr,
    /// Read the token `/api` calls must present from this file (recommended, like
    /// ASK_USER_TOKEN; keep the file private). At least 22 of A-Z a-z 0-9 - . _ ~.
    /// Wins over --token and ASK_USER_TOKEN. Default: the token kept in the data
    /// directory's `token` file (a random 128-bit one, created 0600 on first start).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// The token, from ASK_USER_TOKEN (recommended) or this flag. On the command
    /// line every local user can read it (ps), so the flag warns; use --token-file
    /// or ASK_USER_TOKEN. At least 22 of A-Z a-z 0-9 - . _ ~ (128 bits).
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Serve the page from this Trunk build instead of the one built into the binary (development);
    /// read at each request, its text and wasm files gzipped on the fly.
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Attach the scripted demo agent to session `default`.
    #[arg(long)]
    pub demo: bool,
    /// Also accept this host name in `Host`/`Origin` (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Admit this origin for the person's side (the page, its API, its
    /// streams) besides loopback, for paired devices: e.g. `tailscale serve
    /// --bg 7411` in front of the host (a TLS front that keeps the Host
    /// header), then `--remote https://box.tailnet.ts.net`. The host stays
    /// on loopback; the master token is refused on this origin.
    #[arg(long, value_name = "https://NAME[:PORT]")]
    pub remote: Option<String>,
    /// Also post each new question to this ntfy topic (`https://ntfy.sh/TOPIC`
    /// or a server of one's own), with a "view" action that opens it: no app
    /// to install. The topic is as good as a password (whoever knows it reads
    /// the questions): prefer ASK_USER_NTFY to the command line. Off unless given.
    #[arg(
        long,
        value_name = "URL",
        env = "ASK_USER_NTFY",
        hide_env_values = true
    )]
    pub ntfy: Option<String>,
    /// Who a push service's operator can reach about this host's pushes:
    /// `mailto:ADDRESS` or an `https` URL, sent as the VAPID `sub` (RFC
    /// 8292). Default: the --remote origin; without either it is left out
    /// (some push services, Apple's among them, then refuse the pushes).
    #[arg(long, value_name = "mailto:ADDRESS|https://URL")]
    pub push_contact: Option<String>,
    /// Also open the agents' endpoints (`…/ask`, `/mcp`) on the --remote
    /// origin, with the master token. Without it they answer on loopback only.
    #[arg(long, requires = "remote")]
    pub remote_agents: bool,
    /// How long a pairing code lasts, in ms (5 minutes): for tests only.
    #[arg(long, hide = true, value_name = "MS")]
    pub pairing_life_ms: Option<u64>,
    /// Serve TLS with this certificate chain (PEM), to bind a non-loopback
    /// --addr on a LAN (a non-loopback address without TLS is refused).
    /// Needs a build with the `tls` feature (the default).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// At most this many questions are kept at once (waiting, detached, or
    /// answered for an agent that went away); the next ask gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// At most this many bytes of requests are kept at once, in all sessions
    /// (each counts twice its JSON: parsed, and as JSON for the lists); the
    /// next ask gets 429. Default 64 MiB. (One session also
    /// holds at most 256 pending questions: what the page shows.)
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_PENDING_BYTES)]
    pub max_pending_bytes: usize,
    /// At most this many event streams (page tabs) are open at once; the next gets 429.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STREAMS)]
    pub max_streams: usize,
    /// At most this many MCP sessions are open at once; the next `initialize` gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_MCP_SESSIONS)]
    pub max_mcp_sessions: usize,
    /// Register no web provider: asks fail with `NO_PROVIDER` and MCP lists no tool.
    #[arg(long)]
    pub no_web: bool,
    /// At most this many connections are open at once; at the cap a new one
    /// replaces the oldest that has not presented the token. Default: the
    /// descriptor limit (raised from soft to hard at start) less 128, at most 1024.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Keep a question whose agent stopped waiting (and an answer no call
    /// collected) this long for the agent to ask again; 0 aborts it at once.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DETACH_GRACE.as_secs())]
    pub detach_grace: u64,
    /// An MCP call without a progress token that is not a task returns
    /// `waiting` after this long, and the agent calls again; 0 waits forever
    /// (as does --detach-grace 0, which would lose the question).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_MCP_WAIT_BUDGET.as_secs())]
    pub mcp_wait_budget: u64,
    /// Milliseconds between an MCP call's progress notifications (5000): for
    /// tests only, so a long wait can be tested in a second or two.
    #[arg(long, value_name = "MS", hide = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub progress_interval: Option<u64>,
    /// The data directory: the database and, when no token is given, the
    /// `token` file (see the flag's own help).
    #[command(flatten)]
    pub data_dir: DataDirArg,
    /// Keep no record on disk: questions, answers and messages live in memory
    /// only and are gone when the host stops (the token file is still used).
    #[arg(long, conflicts_with = "store")]
    pub ephemeral: bool,
    /// Keep the record in PostgreSQL instead of the data directory's SQLite
    /// file, shared by every host given the same database (hosts behind a load
    /// balancer): `postgres://USER@HOST:PORT/DB`. Give it in ASK_USER_STORE
    /// and the password in PGPASSWORD: a password in a URL on the command
    /// line is readable by every local user (ps), so the flag warns. Another
    /// machine is reached with TLS only (`sslmode=disable` to accept
    /// plaintext), verified against the system's roots or `sslrootcert=FILE`.
    /// The data directory still holds the token file and push keys.
    #[arg(
        long,
        value_name = "URL",
        env = "ASK_USER_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
    /// Delete resolved questions and messages older than this many days (at
    /// start and hourly); 0 keeps them forever.
    #[arg(long, value_name = "DAYS", default_value_t = DEFAULT_KEEP_DAYS)]
    pub keep_days: u32,
    /// The most bytes the database and its journal hold (at least 16 MiB;
    /// default 1 GiB). Past it the oldest resolved questions and messages are
    /// pruned to make room; pending questions and held answers never are, and
    /// when they alone fill it new asks and messages get 507 STORE_FULL. On
    /// PostgreSQL (--store) it bounds the schema's tables: past it new asks
    /// and messages get 507 (nothing is pruned for room but by --keep-days).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_STORE_BYTES,
          value_parser = clap::value_parser!(u64).range(MIN_STORE_BYTES..))]
    pub max_store_bytes: u64,
    /// The most bytes of questions and messages one session may write per
    /// minute; past it its asks and messages get 429 TOO_MANY_WRITES. Default 64 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SESSION_WRITE_BYTES_PER_MINUTE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_session_write_bytes: u64,
}

impl ServeArgs {
    /// The host configuration for a listener bound on `port`.
    ///
    /// Fails, saying why, when the token file cannot be read or the given
    /// token breaks [`check_token`] (too short to carry 128 bits, or holding
    /// characters that cannot travel in a URL, header and cookie unchanged).
    pub fn config(&self, port: u16) -> Result<HostConfig, String> {
        let token = match (&self.token_file, &self.token) {
            (Some(path), _) => {
                let token = read_token_file(path)?;
                check_token(&token)
                    .map_err(|why| format!("--token-file {}: {why}", path.display()))?;
                token
            }
            (None, Some(token)) => {
                check_token(token).map_err(|why| format!("--token / ASK_USER_TOKEN: {why}"))?;
                token.clone()
            }
            (None, None) => crate::token_file::kept_or_random(&self.data_dir),
        };
        // No implicit `./dist`: started from a project folder that has its own
        // `dist/`, the host must still serve its own page.
        let dist = self.dist.clone();
        if let Some(contact) = &self.push_contact {
            crate::server::push::check_contact(contact)
                .map_err(|why| format!("--push-contact {contact}: {why}"))?;
        }
        let remote = self
            .remote
            .as_deref()
            .map(crate::server::guard::RemoteOrigin::parse)
            .transpose()
            .map_err(|why| format!("--remote {why}"))?;
        Ok(HostConfig {
            token,
            port,
            allow_hosts: self
                .allow_host
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            max_pending: self.max_pending,
            max_pending_bytes: self.max_pending_bytes,
            max_streams: self.max_streams,
            max_mcp_sessions: self.max_mcp_sessions,
            dist,
            web: !self.no_web,
            demo: self.demo,
            detach_grace: Duration::from_secs(self.detach_grace),
            mcp_wait_budget: (self.mcp_wait_budget > 0)
                .then(|| Duration::from_secs(self.mcp_wait_budget)),
            progress_interval: self.progress_interval.map_or(
                crate::server::mcp::tool::PROGRESS_INTERVAL,
                Duration::from_millis,
            ),
            keep_days: self.keep_days,
            // On for the desktop page and paired devices alike: nothing is
            // sent before a page asks for notifications.
            push: Some(crate::server::push::service::PushConfig {
                key_dir: (!self.ephemeral)
                    .then(|| self.data_dir.resolve().ok())
                    .flatten(),
                policy: crate::server::push::EndpointPolicy::HttpsOnly,
                contact: self
                    .push_contact
                    .clone()
                    .or_else(|| remote.as_ref().map(|r| r.origin.clone())),
            }),
            ntfy: self
                .ntfy
                .as_deref()
                .map(|url| {
                    crate::server::push::ntfy::NtfyTarget::parse(
                        url,
                        crate::server::push::EndpointPolicy::HttpsOnly,
                    )
                })
                .transpose()
                .map_err(|why| format!("--ntfy: {why}"))?,
            remote,
            remote_agents: self.remote_agents,
            pairing_life: self
                .pairing_life_ms
                .map_or(crate::server::devices::PAIRING_LIFE, Duration::from_millis),
        })
    }

    /// Refuses a non-loopback `--addr` without `--tls-cert`, saying why.
    pub fn check_bind(&self) -> Result<(), String> {
        if self.addr.ip().is_loopback() || self.tls_cert.is_some() {
            return Ok(());
        }
        Err(format!(
            "--addr {}: a non-loopback address needs --tls-cert and --tls-key: without TLS the \
             device's cookie and every answer would cross the network in the clear, and a \
             browser allows notifications, service workers and Web Locks only on https. Keep the \
             host on loopback behind a TLS front (`tailscale serve --bg 7411`, then --remote \
             https://NAME), or give --tls-cert FILE --tls-key FILE",
            self.addr
        ))
    }

    /// The TLS configuration of `--tls-cert`/`--tls-key`, when given.
    pub fn tls(&self) -> Result<Option<crate::server::accept::TlsConfig>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => crate::server::accept::tls_config(cert, key).map(Some),
            _ => Ok(None),
        }
    }
}

/// The shared store of `--store URL` (PostgreSQL).
#[cfg(feature = "postgres")]
async fn open_shared(
    url: &str,
    limits: StoreLimits,
) -> Result<std::sync::Arc<dyn crate::server::store::Store>, String> {
    let database = crate::server::store::postgres::parse_url(url)?;
    let store = crate::server::store::postgres::PostgresStore::connect(database, limits).await?;
    Ok(std::sync::Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn open_shared(
    _url: &str,
    _limits: StoreLimits,
) -> Result<std::sync::Arc<dyn crate::server::store::Store>, String> {
    Err("--store: this ask-user was built without the `postgres` feature".to_owned())
}

impl ServeArgs {
    /// The data directory's host lock, held for the process's life so no
    /// second host opens the same database (`None` with `--ephemeral`, which
    /// opens none). Fails naming the address of the host that holds it.
    pub fn lock_data_dir(&self) -> Result<Option<crate::host_lock::HostLock>, String> {
        if self.ephemeral {
            return Ok(None);
        }
        crate::host_lock::HostLock::acquire(&self.data_dir.resolve()?).map(Some)
    }

    /// The store: nothing with `--ephemeral`, else the SQLite file in the
    /// data directory (both created private when missing). Fails, naming the
    /// file, on one the host must not touch.
    pub async fn open_record(
        &self,
    ) -> Result<std::sync::Arc<dyn crate::server::store::Store>, String> {
        if self.ephemeral {
            return Ok(std::sync::Arc::new(crate::server::store::EphemeralStore));
        }
        if let Some(url) = &self.store {
            return open_shared(url, self.store_limits()).await;
        }
        let dir = self.data_dir.resolve()?;
        crate::data_dir::ensure_private_dir(&dir)
            .map_err(|e| format!("--data-dir {}: {e}", dir.display()))?;
        let store = crate::server::store::SqliteStore::open_with(&dir, self.store_limits())?;
        tracing::info!(path = %crate::logged::logged(store.path().display()), "store");
        Ok(std::sync::Arc::new(store))
    }

    fn store_limits(&self) -> StoreLimits {
        StoreLimits {
            max_bytes: self.max_store_bytes,
            session_bytes_per_minute: self.max_session_write_bytes,
            max_restored_questions: self.max_pending,
            max_restored_bytes: self.max_pending_bytes,
        }
    }

    /// Where a person finds `token` (the one [`ServeArgs::config`] chose)
    /// without it being shown: for the URL line written to a log or a pipe.
    pub fn token_whereabouts(&self, token: &str) -> String {
        if let Some(path) = &self.token_file {
            return format!("the token in {}", path.display());
        }
        if self.token.is_some() {
            return "the token given in ASK_USER_TOKEN or --token".to_owned();
        }
        let kept = self.data_dir.resolve().ok().filter(|dir| {
            crate::token_file::read(dir).is_ok_and(|kept| kept.as_deref() == Some(token))
        });
        match kept {
            Some(dir) => format!(
                "the token in {}",
                crate::token_file::token_path(&dir).display()
            ),
            None => "this run's random token, shown only on a terminal (pass --token-file to choose one)"
                .to_owned(),
        }
    }

    /// The accept loop's limits: `--max-connections`, or the cap for
    /// `descriptor_limit` (see [`connections_for_descriptors`]).
    pub fn limits(&self, descriptor_limit: u64) -> Limits {
        Limits {
            max_connections: self.max_connections.map_or_else(
                || connections_for_descriptors(descriptor_limit),
                |n| usize::try_from(n).unwrap_or(usize::MAX),
            ),
            ..Limits::default()
        }
    }
}

/// The longest token file read (a token is one short line).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The token in `path`: its content without surrounding whitespace (the
/// final newline). Warns when other users may read the file.
fn read_token_file(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("--token-file {shown}: {e}"))?;
    #[cfg(unix)]
    if let Ok(metadata) = file.metadata() {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            let shown = crate::logged::logged(&shown);
            tracing::warn!(
                "--token-file {shown}: other users may read it (mode {mode:o}); `chmod 600 {shown}`"
            );
        }
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("--token-file {shown}: {e}"))?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "--token-file {shown}: longer than {MAX_TOKEN_FILE_BYTES} bytes; it should hold the token alone"
        ));
    }
    Ok(text.trim().to_owned())
}

/// The URL to open: the bound address (loopback shown as `127.0.0.1` when
/// bound to every interface) with the token.
pub fn open_url(addr: SocketAddr, token: &str) -> String {
    let host = match addr {
        SocketAddr::V4(v4) if v4.ip().is_unspecified() => "127.0.0.1".to_owned(),
        SocketAddr::V4(v4) => v4.ip().to_string(),
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => "[::1]".to_owned(),
        SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
    };
    format!("http://{host}:{}/?token={token}", addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data directory of the test's own, so no test writes a token to `$HOME`.
    fn temp_data_dir() -> String {
        let dir = std::env::temp_dir().join(format!("auq-cli-{}", rand::random::<u64>()));
        dir.to_string_lossy().into_owned()
    }

    fn serve_config(args: &[&str]) -> HostConfig {
        let data_dir = temp_data_dir();
        let base = ["ask-user", "serve", "--data-dir", &data_dir];
        let cli = Cli::try_parse_from(base.iter().chain(args)).expect("the arguments parse");
        let Command::Serve(serve) = cli.command else {
            panic!("not serve");
        };
        let config = serve.config(7411).expect("a valid configuration");
        let _ = std::fs::remove_dir_all(&data_dir);
        config
    }

    #[test]
    fn data_dir_may_come_before_the_subcommand() {
        for args in [
            vec!["ask-user", "--data-dir", "/tmp/x", "serve"],
            vec!["ask-user", "--data-dir", "/tmp/x", "people", "list"],
            vec!["ask-user", "--data-dir", "/tmp/x", "history"],
            vec!["ask-user", "--data-dir", "/tmp/x", "mcp"],
            vec!["ask-user", "--data-dir", "/tmp/x", "devices"],
            vec!["ask-user", "--data-dir", "/tmp/x", "ask", "request.json"],
        ] {
            let cli = Cli::try_parse_from(&args).expect("the arguments parse");
            let data_dir = match cli.command {
                Command::Serve(serve) => serve.data_dir,
                Command::People(people) => people.host.data_dir,
                Command::History(history) => history.data_dir,
                Command::Mcp(mcp) => mcp.data_dir,
                Command::Devices(devices) => devices.host.data_dir,
                Command::Ask(ask) => ask.data_dir,
                other => panic!("parsed as {other:?}"),
            };
            assert_eq!(data_dir.data_dir, Some(PathBuf::from("/tmp/x")), "{args:?}");
        }
    }

    #[test]
    fn data_dir_may_follow_the_action_of_people_and_agents() {
        for args in [
            ["ask-user", "people", "list", "--data-dir", "/tmp/x"],
            ["ask-user", "agents", "list", "--data-dir", "/tmp/x"],
            ["ask-user", "people", "--data-dir", "/tmp/x", "list"],
        ] {
            let cli = Cli::try_parse_from(args).expect("the arguments parse");
            let data_dir = match cli.command {
                Command::People(people) => people.host.data_dir,
                Command::Agents(agents) => agents.host.data_dir,
                other => panic!("parsed as {other:?}"),
            };
            assert_eq!(data_dir.data_dir, Some(PathBuf::from("/tmp/x")), "{args:?}");
        }
    }

    fn serve_args(args: &[&str]) -> ServeArgs {
        let cli = Cli::try_parse_from(["ask-user", "serve"].iter().chain(args))
            .expect("the arguments parse");
        let Command::Serve(serve) = cli.command else {
            panic!("not serve");
        };
        serve
    }

    #[test]
    fn max_connections_defaults_to_the_descriptor_limit_and_takes_the_flag() {
        assert_eq!(serve_args(&[]).limits(1024).max_connections, 896);
        assert_eq!(
            serve_args(&["--max-connections", "7"])
                .limits(1024)
                .max_connections,
            7
        );
        assert!(Cli::try_parse_from(["ask-user", "serve", "--max-connections", "0"]).is_err());
    }

    #[test]
    fn a_short_or_unsafe_token_is_refused_with_the_reason() {
        let short = serve_args(&["--token", "s3cret"]).config(1).unwrap_err();
        assert!(short.starts_with("--token / ASK_USER_TOKEN: "), "{short}");
        assert!(short.contains("at least 22"), "{short}");
        let long = "0123456789abcdefghijkl";
        assert_eq!(
            serve_args(&["--token", long]).config(1).unwrap().token,
            long
        );
    }

    #[test]
    fn the_progress_interval_is_five_seconds_and_a_hidden_flag_for_tests_sets_it_in_milliseconds() {
        assert_eq!(serve_config(&[]).progress_interval, Duration::from_secs(5));
        assert_eq!(
            serve_config(&["--progress-interval", "200"]).progress_interval,
            Duration::from_millis(200)
        );
        let mut command = <Cli as clap::CommandFactory>::command();
        let serve = command
            .find_subcommand_mut("serve")
            .expect("a serve command");
        let help = serve.render_long_help().to_string();
        assert!(help.contains("--mcp-wait-budget"), "{help}");
        assert!(!help.contains("progress-interval"), "{help}");
    }

    #[test]
    fn the_grace_and_the_wait_budget_default_to_600_and_45_seconds_and_take_their_flags() {
        let defaults = serve_config(&[]);
        assert_eq!(defaults.detach_grace, Duration::from_secs(600));
        assert_eq!(defaults.mcp_wait_budget, Some(Duration::from_secs(45)));
        let set = serve_config(&["--detach-grace", "0", "--mcp-wait-budget", "2"]);
        assert_eq!(set.detach_grace, Duration::ZERO);
        assert_eq!(set.mcp_wait_budget, Some(Duration::from_secs(2)));
        let forever = serve_config(&["--mcp-wait-budget", "0"]);
        assert_eq!(forever.mcp_wait_budget, None);
    }

    #[test]
    fn the_byte_budget_and_the_stream_cap_default_to_64_mib_and_256_and_take_their_flags() {
        let defaults = serve_config(&[]);
        assert_eq!(defaults.max_pending_bytes, 64 * 1024 * 1024);
        assert_eq!(defaults.max_streams, 256);
        let set = serve_config(&["--max-pending-bytes", "1000", "--max-streams", "2"]);
        assert_eq!(set.max_pending_bytes, 1000);
        assert_eq!(set.max_streams, 2);
    }

    #[test]
    fn the_store_is_kept_30_days_unless_told_and_ephemeral_still_takes_a_data_dir_for_the_token() {
        assert_eq!(serve_config(&[]).keep_days, 30);
        assert_eq!(serve_config(&["--keep-days", "0"]).keep_days, 0);
        assert!(!serve_args(&[]).ephemeral);
        assert!(serve_args(&["--ephemeral"]).ephemeral);
        // ASK_USER_DATA_DIR in the environment must not make --ephemeral an error.
        assert!(
            Cli::try_parse_from(["ask-user", "serve", "--ephemeral", "--data-dir", "/tmp/x"])
                .is_ok()
        );
    }

    #[test]
    fn a_non_loopback_address_without_tls_is_refused_saying_why() {
        assert!(serve_args(&[]).check_bind().is_ok());
        assert!(serve_args(&["--addr", "[::1]:0"]).check_bind().is_ok());
        let why = serve_args(&["--addr", "0.0.0.0:7411"])
            .check_bind()
            .unwrap_err();
        assert!(
            why.contains("--tls-cert") && why.contains("in the clear"),
            "{why}"
        );
        let with_tls = serve_args(&[
            "--addr",
            "192.0.2.1:7411",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
        ]);
        assert!(with_tls.check_bind().is_ok());
        // One without the other is a usage error.
        assert!(Cli::try_parse_from(["ask-user", "serve", "--tls-cert", "c.pem"]).is_err());
    }

    #[test]
    fn ntfy_takes_an_https_topic_url_and_refuses_anything_else_saying_why() {
        assert!(serve_config(&[]).ntfy.is_none());
        assert!(
            serve_config(&["--ntfy", "https://ntfy.sh/a-topic"])
                .ntfy
                .is_some()
        );
        let data_dir = temp_data_dir();
        let args = serve_args(&["--ntfy", "http://ntfy.sh/a-topic", "--data-dir", &data_dir]);
        let err = args.config(7411).unwrap_err();
        assert!(
            err.starts_with("--ntfy: must be https://SERVER/TOPIC"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&data_dir);
    }

    #[test]
    fn the_vapid_contact_is_push_contact_else_the_remote_origin_and_must_be_mailto_or_https() {
        let contact = |args: &[&str]| serve_config(args).push.and_then(|p| p.contact);
        assert_eq!(contact(&[]), None);
        assert_eq!(
            contact(&["--remote", "https://box.tailnet.ts.net"]).as_deref(),
            Some("https://box.tailnet.ts.net")
        );
        assert_eq!(
            contact(&[
                "--remote",
                "https://box.tailnet.ts.net",
                "--push-contact",
                "mailto:me@example.com"
            ])
            .as_deref(),
            Some("mailto:me@example.com")
        );
        for bad in ["http://example.com", "me@example.com", "mailto:nobody"] {
            let data_dir = temp_data_dir();
            let err = serve_args(&["--push-contact", bad, "--data-dir", &data_dir])
                .config(7411)
                .unwrap_err();
            assert!(err.starts_with(&format!("--push-contact {bad}: ")), "{err}");
            let _ = std::fs::remove_dir_all(&data_dir);
        }
    }

    #[test]
    fn remote_takes_an_https_origin_and_remote_agents_needs_it() {
        let config = serve_config(&["--remote", "https://box.tailnet.ts.net"]);
        assert_eq!(
            config.remote.map(|r| r.origin).as_deref(),
            Some("https://box.tailnet.ts.net")
        );
        assert!(!config.remote_agents);
        assert!(serve_config(&["--remote", "https://a.b", "--remote-agents"]).remote_agents);
        assert!(Cli::try_parse_from(["ask-user", "serve", "--remote-agents"]).is_err());
        let why = serve_args(&["--remote", "http://box.lan"])
            .config(1)
            .unwrap_err();
        assert!(why.starts_with("--remote "), "{why}");
    }

    #[test]
    fn max_mcp_sessions_defaults_to_256_and_takes_the_flag() {
        assert_eq!(serve_config(&[]).max_mcp_sessions, 256);
        assert_eq!(
            serve_config(&["--max-mcp-sessions", "3"]).max_mcp_sessions,
            3
        );
    }
}
