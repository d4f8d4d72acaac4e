//! `ask-user`: parses the command line, binds and serves the host.

use ask_user_host::cli::{Cli, Command, ServeArgs, open_url};
use ask_user_host::{AppState, serve_tls, server};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use std::io::Write;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// The log filter without `RUST_LOG`: INFO, but rmcp only from WARN: its INFO
/// lines carry what clients send, unbounded (a whole `clientInfo`, every
/// notification). The host logs what it needs of them itself, truncated.
const DEFAULT_LOG: &str = "info,rmcp=warn";

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr: stdout carries only the URL line.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG)),
        )
        .with_writer(ask_user_host::logged::OneLinePerEvent(std::io::stderr))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let result = match cli.command {
        Command::Serve(args) => {
            let token_on_command_line = matches
                .subcommand_matches("serve")
                .and_then(|serve| serve.value_source("token"))
                == Some(ValueSource::CommandLine);
            if token_on_command_line {
                tracing::warn!(
                    "--token puts the token on the command line, where every local user can read it (ps, /proc); \
                     use --token-file PATH or ASK_USER_TOKEN instead"
                );
            }
            run_serve(args).await
        }
        Command::Ask(args) => return ask_user_host::ask_cmd::run(args).await,
        Command::History(args) => ask_user_host::history_cmd::run(&args),
        Command::Pair(args) => ask_user_host::devices_cmd::run_pair(&args).await,
        Command::Devices(args) => ask_user_host::devices_cmd::run_devices(&args).await,
        Command::Mcp(args) => return ask_user_host::mcp_stdio::run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ask-user: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run_serve(args: ServeArgs) -> Result<(), String> {
    // Every connection holds a descriptor: take all the system allows, then
    // size the connection cap below it (the accept loop never runs out).
    let descriptors = server::raise_descriptor_limit().unwrap_or_else(|error| {
        tracing::warn!(error = %ask_user_host::logged::logged(&error), "could not raise the descriptor limit");
        server::descriptor_limit()
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
        server::bind(args.addr).map_err(|e| format!("cannot bind {}: {e}", args.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let config = args.config(addr.port())?;
    match &config.dist {
        Some(dist) => {
            ask_user_host::pages::PageFiles::dir(dist)
                .map_err(|e| format!("--dist {}: {e}", dist.display()))?;
        }
        None if !ask_user_host::pages::embedded() => {
            eprintln!("ask-user: {}", ask_user_host::pages::NO_PAGE_NOTICE);
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
    let record = args.open_record()?;
    let state = AppState::recording(config, record);

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
