//! # ask-user-host
//!
//! The thin axum half of ask-user: it owns the pending questions (the web
//! provider), the agent's ask endpoint, the browser's event streams (per
//! session and the inbox across sessions), the transcripts, and serves the
//! built page. Every rule comes from `ask-user-core`; this crate
//! re-implements none.
//!
//! It must never depend on leptos, web-sys or the browser crates: the page is
//! served as built files (carried in the binary by `build.rs`, or read from
//! `--dist`), never linked in as code.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use ask_user_host::{AppState, HostConfig, random_token, serve};
//! let listener = ask_user_host::server::accept::bind("127.0.0.1:0".parse().unwrap())?;
//! let port = listener.local_addr()?.port();
//! let state = AppState::new(HostConfig::new(random_token(), port));
//! let shutdown = state.shutdown_handle();
//! tokio::spawn(async move { tokio::signal::ctrl_c().await.ok(); shutdown.shutdown() });
//! serve(listener, state).await
//! # }
//! ```

pub mod cli;
pub mod client;
pub mod data_dir;
pub mod host_lock;
pub mod logged;
pub mod qr;
pub mod server;
pub mod token_file;

pub use server::error::ApiError;
pub use server::pending::{PendingTable, Resolution, SharedEvent, Subscription};
pub use server::provider::WebProvider;
pub use server::state::{AppState, AskOptions, HostConfig, ShutdownHandle, random_token};
pub use server::{DRAIN_TIMEOUT, app, serve, serve_tls, serve_with};
