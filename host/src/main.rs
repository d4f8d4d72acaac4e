//! `ask-user`: parses the command line, binds and serves the host.

use ask_user_host::cli::{Cli, Command, ServeArgs, open_url};
use ask_user_host::{AppState, serve_tls, server};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use std::io::Write;
use std::process::ExitCode;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The log filter without `RUST_LOG`: INFO, but rmcp only from WARN: its INFO
/// lines carry what clients send, unbounded (a whole `clientInfo`, every
/// notification). The host logs what it needs of them itself, truncated.
const DEFAULT_LOG: &str = "info,rmcp=warn";

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    // Logs go to stderr: stdout carries only the URL line. Colours only for
    // `serve` on a terminal; without them no control in a line is sent (a
    // dependency's line may quote what a client sent; `ask-user mcp`'s stderr
    // is a client's log of agent text). `RUST_LOG` takes `level` and
    // `target=level` directives; `Targets` instead of `EnvFilter` keeps the
    // regex engine (and its pages) out of the one binary.
    let colours = matches.subcommand_name() == Some("serve")
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (filter, bad_filter) = log_filter(std::env::var("RUST_LOG").ok().as_deref());
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(ask_user_host::logged::OneLinePerEvent {
                    make: std::io::stderr,
                    plain: !colours,
                })
                .with_ansi(colours),
        )
        .with(filter)
        .init();
    if let Some(problem) = bad_filter {
        tracing::warn!("RUST_LOG ignored ({problem}); logging at {DEFAULT_LOG}");
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let result = match cli.command {
        Command::Serve(args) => {
            let token_on_command_line = matches
                .subcommand_matches("serve")
                .and_then(|serve| serve.value_source("token"))
                == Some(ValueSource::CommandLine);
            let store_on_command_line = matches
                .subcommand_matches("serve")
                .and_then(|serve| serve.value_source("store"))
                == Some(ValueSource::CommandLine);
            #[cfg(feature = "postgres")]
            if store_on_command_line
                && args
                    .store
                    .as_deref()
                    .is_some_and(ask_user_host::server::store::postgres::has_password)
            {
                tracing::warn!(
                    "--store holds a password on the command line, where every local user can read it (ps, /proc); \
                     give the URL in ASK_USER_STORE and the password in PGPASSWORD instead"
                );
            }
            #[cfg(not(feature = "postgres"))]
            let _ = store_on_command_line;
            if token_on_command_line {
                tracing::warn!(
                    "--token puts the token on the command line, where every local user can read it (ps, /proc); \
                     use --token-file PATH or ASK_USER_TOKEN instead"
                );
            }
            run_serve(args).await
        }
        Command::Ask(args) => return ask_user_host::client::ask::run(args).await,
        Command::History(args) => ask_user_host::client::history::run_any(&args).await,
        Command::Pair(args) => ask_user_host::client::devices::run_pair(&args).await,
        Command::Devices(args) => ask_user_host::client::devices::run_devices(&args).await,
        Command::People(args) => ask_user_host::client::people::run_people(&args).await,
        Command::Agents(args) => ask_user_host::client::people::run_agents(&args).await,
        Command::Mcp(args) => return ask_user_host::client::mcp::run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // An error may quote what it was given (a path, a stored text).
            eprintln!(
                "ask-user: {}",
                ask_user_core::display::neutralise_for_terminal(&error)
            );
            ExitCode::FAILURE
        }
    }
}

async fn run_serve(args: ServeArgs) -> Result<(), String> {
    // Every connection holds a descriptor: take all the system allows, then
    // size the connection cap below it (the accept loop never runs out).
    let descriptors = server::accept::raise_descriptor_limit().unwrap_or_else(|error| {
        tracing::warn!(error = %ask_user_host::logged::logged(&error), "could not raise the descriptor limit");
        server::accept::descriptor_limit()
    });
    let limits = args.limits(descriptors);
    tracing::debug!(
        descriptors,
        max_connections = limits.max_connections,
        "connection cap"
    );
    // Before anything else: a non-loopback address without TLS is refused.
    args.check_bind()?;
    let tls = args.tls()?;
    // Before binding: a second host on the directory is told where the first
    // one serves, not that the port is taken.
    let mut host_lock = args.lock_data_dir()?;
    let listener =
        server::accept::bind(args.addr).map_err(|e| format!("cannot bind {}: {e}", args.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let config = args.config(addr.port())?;
    match &config.dist {
        Some(dist) => {
            ask_user_host::server::pages::PageFiles::dir(dist)
                .map_err(|e| format!("--dist {}: {e}", dist.display()))?;
        }
        None if !ask_user_host::server::pages::embedded() => {
            eprintln!("ask-user: {}", ask_user_host::server::pages::NO_PAGE_NOTICE);
        }
        None => {}
    }
    let url = open_url(addr, &config.token);
    let url = match &tls {
        Some(_) => url.replacen("http://", "https://", 1),
        None => url,
    };
    if let Some(remote) = &config.remote {
        tracing::info!(
            origin = %remote.origin,
            agents = config.remote_agents,
            "remote origin admitted for paired devices (the master token is refused there)"
        );
    }
    let config_token = config.token.clone();
    if let Some(lock) = &mut host_lock {
        // The address without the token: the file says where, not how to get in.
        lock.announce(&format!("http://{addr}/"))?;
    }
    let record = args.open_record().await?;
    let state = AppState::recording(config, record);
    if let Some(shared) = state.record().shared() {
        // The table shows what the shared record holds before anyone asks.
        shared.ready().await;
    }

    let shutdown = state.shutdown_handle();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        shutdown.shutdown();
    });

    let mut stdout = std::io::stdout().lock();
    // The token only ever reaches a person's terminal: a redirected stdout is
    // a log file (`ask-user mcp` keeps `serve.log`) or a pipe, which is read
    // by more than the person and kept longer than the run.
    let line = if std::io::IsTerminal::is_terminal(&stdout) {
        url
    } else {
        let base = url
            .split_once("?token=")
            .map_or(url.as_str(), |(base, _)| base);
        format!(
            "{base} (open it with ?token= and {})",
            args.token_whereabouts(&config_token)
        )
    };
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;
    drop(stdout);
    let served = serve_tls(listener, state, limits, tls)
        .await
        .map_err(|e| e.to_string());
    // Held until the host has stopped serving (and the store is closed).
    drop(host_lock);
    served
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// The log filter from `RUST_LOG` (unset or empty: [`DEFAULT_LOG`]), and why a
/// set value was not usable.
fn log_filter(rust_log: Option<&str>) -> (Targets, Option<String>) {
    let default = || DEFAULT_LOG.parse().expect("DEFAULT_LOG is a valid filter");
    match rust_log.map(str::trim).filter(|value| !value.is_empty()) {
        None => (default(), None),
        Some(value) => match value.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(error) => (default(), Some(error.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn without_rust_log_the_host_logs_info_and_rmcp_only_from_warn() {
        let (filter, problem) = log_filter(None);
        assert!(problem.is_none());
        assert!(filter.would_enable("ask_user_host::server", &Level::INFO));
        assert!(!filter.would_enable("ask_user_host::server", &Level::DEBUG));
        assert!(!filter.would_enable("rmcp::service", &Level::INFO));
        assert!(filter.would_enable("rmcp::service", &Level::WARN));
    }

    #[test]
    fn rust_log_directives_by_target_are_honoured() {
        let (filter, problem) = log_filter(Some("warn,ask_user_host=debug"));
        assert!(problem.is_none());
        assert!(filter.would_enable("ask_user_host::server::store", &Level::DEBUG));
        assert!(!filter.would_enable("hyper::proto", &Level::INFO));
    }

    #[test]
    fn an_unusable_rust_log_falls_back_to_the_default_and_says_why() {
        let (filter, problem) = log_filter(Some("ask_user_host=loud"));
        assert!(problem.is_some(), "a bad level is reported");
        assert!(filter.would_enable("ask_user_host::server", &Level::INFO));
    }
}
