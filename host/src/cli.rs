//! The `ask-user` command line.

use crate::state::{DEFAULT_MAX_MCP_SESSIONS, DEFAULT_MAX_PENDING, HostConfig, random_token};
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Serve the page from this Trunk build instead of the one built into the binary (development).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Attach the scripted demo agent to session `default`.
    #[arg(long)]
    pub demo: bool,
    /// Also accept this host name in `Host`/`Origin` (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// At most this many questions wait at once; the next ask gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// At most this many MCP sessions are open at once; the next `initialize` gets 429.
    #[arg(long, default_value_t = DEFAULT_MAX_MCP_SESSIONS)]
    pub max_mcp_sessions: usize,
    /// Register no web provider: asks fail with `NO_PROVIDER` and MCP lists no tool.
    #[arg(long)]
    pub no_web: bool,
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
        // No implicit `./dist`: started from a project folder that has its own
        // `dist/`, the host must still serve its own page.
        let dist = self.dist.clone();
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
    fn max_mcp_sessions_defaults_to_256_and_takes_the_flag() {
        assert_eq!(serve_config(&[]).max_mcp_sessions, 256);
        assert_eq!(
            serve_config(&["--max-mcp-sessions", "3"]).max_mcp_sessions,
            3
        );
    }
}
