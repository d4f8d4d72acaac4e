//! The `ask-user` command line.

use crate::pending::DEFAULT_DETACH_GRACE;
use crate::state::{
    DEFAULT_MAX_MCP_SESSIONS, DEFAULT_MAX_PENDING, DEFAULT_MCP_WAIT_BUDGET, HostConfig,
    random_token,
};
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// ask-user: lets an agent ask a person structured questions in a web page.
#[derive(Debug, Parser)]
#[command(name = "ask-user", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the host: the page, the event stream and the agent's ask endpoint.
    Serve(ServeArgs),
    /// Ask a running host: send a request (JSON file or stdin), print the answer batch.
    Ask(crate::ask_cmd::AskArgs),
}

/// `ask-user serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to bind (loopback by default; port 0 picks a free port).
    #[arg(long, env = "ASK_USER_ADDR", default_value = "127.0.0.1:7411")]
    pub addr: SocketAddr,
    /// The token `/api` calls must present (default: a random 128-bit token per run).
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The built frontend to serve at `/` (default: `dist` when it holds an index.html).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Attach the scripted demo agent to session `default`.
    #[arg(long)]
    pub demo: bool,
    /// Also accept this host name in `Host`/`Origin` (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// At most this many questions are kept at once (waiting, detached, or
    /// answered for an agent that went away); the next ask gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// At most this many MCP sessions are open at once; the next `initialize` gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_MCP_SESSIONS)]
    pub max_mcp_sessions: usize,
    /// Register no web provider: asks fail with `NO_PROVIDER` and MCP lists no tool.
    #[arg(long)]
    pub no_web: bool,
    /// Keep a question whose agent stopped waiting (and an answer no call
    /// collected) this long for the agent to ask again; 0 aborts it at once.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DETACH_GRACE.as_secs())]
    pub detach_grace: u64,
    /// An MCP call without a progress token that is not a task returns
    /// `waiting` after this long, and the agent calls again; 0 waits forever
    /// (as does --detach-grace 0, which would lose the question).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_MCP_WAIT_BUDGET.as_secs())]
    pub mcp_wait_budget: u64,
}

impl ServeArgs {
    /// The host configuration for a listener bound on `port`.
    ///
    /// Fails when the given token is empty or holds characters that cannot
    /// travel in a URL, header and cookie unchanged.
    pub fn config(&self, port: u16) -> Result<HostConfig, String> {
        let token = match &self.token {
            Some(token) => {
                let ok = !token.is_empty()
                    && token
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
                if !ok {
                    return Err(
                        "--token / ASK_USER_TOKEN: use one or more of A-Z a-z 0-9 - . _ ~"
                            .to_owned(),
                    );
                }
                token.clone()
            }
            None => random_token(),
        };
        let dist = self.dist.clone().or_else(|| {
            let default = PathBuf::from("dist");
            default.join("index.html").is_file().then_some(default)
        });
        Ok(HostConfig {
            token,
            port,
            allow_hosts: self
                .allow_host
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            max_pending: self.max_pending,
            max_mcp_sessions: self.max_mcp_sessions,
            dist,
            web: !self.no_web,
            demo: self.demo,
            detach_grace: Duration::from_secs(self.detach_grace),
            mcp_wait_budget: (self.mcp_wait_budget > 0)
                .then(|| Duration::from_secs(self.mcp_wait_budget)),
        })
    }
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

    fn serve_config(args: &[&str]) -> HostConfig {
        let cli = Cli::try_parse_from(["ask-user", "serve"].iter().chain(args))
            .expect("the arguments parse");
        let Command::Serve(serve) = cli.command else {
            panic!("not serve");
        };
        serve.config(7411).expect("a valid configuration")
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
    fn max_mcp_sessions_defaults_to_256_and_takes_the_flag() {
        assert_eq!(serve_config(&[]).max_mcp_sessions, 256);
        assert_eq!(
            serve_config(&["--max-mcp-sessions", "3"]).max_mcp_sessions,
            3
        );
    }
}
