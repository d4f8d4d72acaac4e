//! `ask-user mcp`: MCP over stdin/stdout, for the clients that launch a
//! local command (`{"command": "ask-user", "args": ["mcp"]}`).
//!
//! A thin client of a host: the one tool is the host's, each call goes to the
//! host's `/mcp?session=S` ([`bridge`]), so the page, the inbox and every
//! guarantee are the host's. No configuration: the token comes from the data
//! directory's token file, a host is started in the background when none
//! answers ([`autostart`]), the session is named after the working directory
//! ([`session`]), and the page is opened when a question arrives and no page
//! is connected ([`opener`]).
//!
//! stdout carries only MCP frames; every diagnostic goes to stderr. The
//! process exits when stdin closes; a call still waiting then detaches (the
//! host keeps its question for the detach grace), as with any dropped
//! connection: the host is not this process's to take down. What it writes
//! to stderr may quote the agent's, the client's or the host's text, so
//! controls a terminal would act on are shown as `⟨U+XXXX⟩` ([`say`]).

/// `eprintln!` with controls shown, not sent (see [`say`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::client::mcp::say(format_args!($($arg)*))
    };
}

pub mod autostart;
pub mod bridge;
pub mod opener;
pub mod session;

use super::{DEFAULT_URL, HostUrl};
use crate::data_dir::DataDirArg;
use ask_user_core::SessionId;
use clap::Args;
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ask-user mcp`.
#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// The session (conversation) the calls ask in. Default: named after the
    /// working directory, so each project is a session of its own.
    #[arg(long)]
    pub session: Option<String>,
    /// The host. When nothing answers there (and it is on this machine), an
    /// `ask-user serve` is started for it in the background. The token kept in
    /// the data directory is sent only to a loopback host (127.0.0.0/8, ::1,
    /// localhost); another host needs its token as ?token= on the URL.
    #[arg(long, env = "ASK_USER_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Never open the page in a browser when a question arrives.
    #[arg(long, env = "ASK_USER_NO_OPEN", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_open: bool,
    /// Where the host keeps its token file and the background host its log.
    #[command(flatten)]
    pub data_dir: DataDirArg,
}

/// Where the bridge's calls go.
#[derive(Debug)]
pub struct Target {
    /// The host.
    pub host: HostUrl,
    /// The data directory (token file, background host's log and lock).
    pub data_dir: PathBuf,
    /// The session the calls ask in.
    pub session: SessionId,
    /// Opens the page once when a question arrives and none is connected.
    pub opener: opener::Opener,
}

impl Target {
    /// `{base}mcp?session=S`.
    pub fn mcp_url(&self) -> String {
        let mut url = self.host.join("mcp");
        url.query_pairs_mut()
            .append_pair("session", self.session.as_str());
        url.into()
    }

    /// Makes sure a host answers (starting one when none does and the URL is
    /// on this machine) and returns its token.
    pub async fn ready_host(&self) -> Result<String, String> {
        if self.host.is_loopback() {
            autostart::ensure_host(self.host.base(), &self.data_dir).await?;
        }
        self.token()
    }

    /// The token: `?token=` on `--url`, else the data directory's token file.
    pub fn token(&self) -> Result<String, String> {
        let data_dir = DataDirArg {
            data_dir: Some(self.data_dir.clone()),
        };
        self.host
            .token(None, &data_dir, "as ?token= on --url")?
            .ok_or_else(|| {
                format!(
                    "no token file at {}: the host at {} keeps its token elsewhere; \
                     pass the same --data-dir (or ASK_USER_DATA_DIR) as that host",
                    crate::token_file::token_path(&self.data_dir).display(),
                    self.host.base()
                )
            })
    }
}

impl McpArgs {
    /// Checks the arguments and resolves what they leave to defaults.
    pub fn target(&self) -> Result<Target, String> {
        let host = HostUrl::parse(&self.url)?;
        // The kept token opens every question of this user's host: it never
        // travels to (or through a proxy towards) another machine.
        if !host.carries_token() && !host.is_loopback() {
            return Err(format!(
                "--url: {} is not this machine; the token kept in the data directory is sent \
                 only to a loopback host. Give that host's token as ?token= on --url",
                host.base().origin().ascii_serialization()
            ));
        }
        let session = match &self.session {
            Some(session) => {
                SessionId::parse(session).map_err(|error| format!("--{}", error.message))?
            }
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| format!("cannot read the working directory: {e}"))?;
                session::for_dir(&cwd)
            }
        };
        let data_dir = self.data_dir.resolve()?;
        Ok(Target {
            host,
            data_dir,
            session,
            opener: opener::Opener::from_env(self.no_open),
        })
    }
}

/// Writes `line` to stderr (what an MCP client keeps as the server's log, or
/// a terminal) with every control a terminal would act on, and every bidi or
/// zero-width character, shown as `⟨U+XXXX⟩`: core's one rule for printed
/// agent text.
pub fn say(line: std::fmt::Arguments<'_>) {
    let line = line.to_string();
    eprintln!("{}", ask_user_core::display::neutralise_for_terminal(&line));
}

/// Runs `ask-user mcp` until stdin closes.
pub async fn run(args: McpArgs) -> ExitCode {
    let target = match args.target() {
        Ok(target) => target,
        Err(error) => {
            say!("ask-user mcp: {error}");
            return ExitCode::from(2);
        }
    };
    let mut target = target;
    // A host this data directory's lock names serves instead of the default
    // address; the kept token is that host's too. A token given on --url is
    // for the host named there, so such a target is never redirected.
    if !target.host.carries_token()
        && let Some(running) = autostart::running_host(target.host.base(), &target.data_dir).await
    {
        tracing::info!(host = %running, "using the host already running on the data directory");
        target.host = target.host.with_base(running);
    }
    tracing::info!(session = %target.session, host = %target.host.base(), "ask-user mcp on stdio");
    let served = bridge::Bridge::new(target)
        .serve(rmcp::transport::stdio())
        .await;
    let code = match served {
        Ok(service) => match service.waiting().await {
            Ok(reason) => {
                tracing::info!(?reason, "stdin closed");
                0
            }
            Err(error) => {
                say!("ask-user mcp: {error}");
                1
            }
        },
        Err(error) => {
            say!("ask-user mcp: the MCP handshake on stdio failed: {error}");
            1
        }
    };
    // Exit here, without closing the upstream MCP session gracefully: a
    // close would `DELETE` it, and that aborts a question still waiting;
    // dropping the connection only detaches it, as the issue asks.
    std::process::exit(code)
}
