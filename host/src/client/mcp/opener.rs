//! Opening the page when a question arrives and no page is connected to the
//! host: once per host run, never with `--no-open`/`ASK_USER_NO_OPEN`, and
//! said on stderr either way.
//!
//! The host only says whether a page is connected and which run it is
//! (`POST /api/page-opener`, which changes nothing there: any token holder
//! may call it, so a one-shot "open" the host handed out could be taken by
//! any of them and silence the opener for the run). Once per run is kept in
//! the data directory instead, which only this user can write: the redirect
//! file names the run it was written for, and it is read and written under
//! an exclusive lock, so several `ask-user mcp` sharing the directory open
//! one window between them.
//!
//! The browser is handed a private redirect file (`<data-dir>/open.html`,
//! 0600) that forwards to the token landing URL, not the URL itself: a URL
//! given to `xdg-open` would put the token on the browser's command line,
//! where every local user can read it.

use super::Target;
use crate::data_dir::{open_lock_file, try_lock_exclusive};
use crate::token_file::{AGENT_PREFIX, PERSON_PREFIX};
use ask_user_core::wire::PageOpener;
use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Names the program that opens the page (given the redirect file's path);
/// default `xdg-open` (`open` on macOS, `start` on Windows).
pub const OPENER_ENV: &str = "ASK_USER_OPENER";

/// The redirect file's name in the data directory.
pub const REDIRECT_FILE_NAME: &str = "open.html";

/// Opens the page at most once per host run.
#[derive(Debug)]
pub struct Opener {
    /// `None` with `--no-open`.
    program: Option<OsString>,
    /// Whether this process already said on stderr that it will not open.
    said_no: AtomicBool,
}

impl Opener {
    /// The opener `ASK_USER_OPENER` (or the platform's) names; none with `no_open`.
    pub fn from_env(no_open: bool) -> Self {
        let program = (!no_open)
            .then(|| std::env::var_os(OPENER_ENV).unwrap_or_else(|| default_program().into()));
        Self {
            program,
            said_no: AtomicBool::new(false),
        }
    }

    /// A question arrived at `target`'s host: opens the page when the host
    /// says no page is connected and none was opened for it yet.
    pub async fn question_arrived(&self, target: &Target) {
        let Some(program) = &self.program else {
            if !self.said_no.swap(true, Ordering::Relaxed) {
                say!(
                    "ask-user mcp: not opening the page (--no-open); open {}?token= with the token in {}",
                    target.host.base(),
                    crate::token_file::token_path(&target.data_dir).display()
                );
            }
            return;
        };
        let token = match target.token() {
            Ok(token) => token,
            Err(error) => {
                say!("ask-user mcp: cannot open the page: {error}");
                return;
            }
        };
        // The page signs in with the host's own token only: an agent token
        // or a person's credential asks for the people the question is for,
        // who see it in their inbox (and on their phones).
        let kind = if token.starts_with(AGENT_PREFIX) {
            Some("an agent token")
        } else if token.starts_with(PERSON_PREFIX) {
            Some("a person's credential")
        } else {
            None
        };
        if let Some(kind) = kind {
            if !self.said_no.swap(true, Ordering::Relaxed) {
                say!(
                    "ask-user mcp: not opening the page: this asks with {kind}, not the host's \
                     token; the question waits in the inbox of the people it is for"
                );
            }
            return;
        }
        let run = match claim(target, &token).await {
            Ok(PageOpener {
                open: true, run, ..
            }) => run,
            Ok(PageOpener { .. }) => {
                say!("ask-user mcp: a question arrived; not opening the page: a page is connected");
                return;
            }
            Err(error) => {
                say!(
                    "ask-user mcp: cannot ask the host whether a page is open: {}",
                    crate::logged::logged(&error)
                );
                return;
            }
        };
        let landing = format!("{}?token={token}", target.host.base());
        let file = match write_redirect_once(&target.data_dir, &run, &landing) {
            Ok(Some(file)) => file,
            Ok(None) => {
                say!(
                    "ask-user mcp: a question arrived; not opening the page: it was opened once for this host already"
                );
                return;
            }
            Err(error) => {
                say!("ask-user mcp: cannot open the page: {error}");
                return;
            }
        };
        say!(
            "ask-user mcp: a question arrived and no page is open; opening {} in the browser",
            target.host.base()
        );
        let mut command = opener_command(program, &file);
        match command.spawn() {
            // Reaped in the background; its exit status says nothing useful.
            Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
            Err(e) => say!(
                "ask-user mcp: could not run {} ({e}); open {} yourself",
                program.to_string_lossy(),
                target.host.base()
            ),
        }
    }
}

/// Asks the host whether to open the page (`POST /api/page-opener`).
async fn claim(target: &Target, token: &str) -> Result<PageOpener, String> {
    let url = target.host.join("api/page-opener");
    let response = target
        .host
        .http_client()
        .post(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    response.json().await.map_err(|e| e.to_string())
}

/// Writes the redirect file (0600) that forwards to `landing`, marked with
/// `run`; `None` when it already holds that mark (the page was opened for this
/// host run). Under an exclusive lock on the file, so of several callers for
/// one run at most one gets `Some`: one that finds the lock taken leaves the
/// opening to its holder (and never waits on it).
fn write_redirect_once(
    data_dir: &Path,
    run: &str,
    landing: &str,
) -> Result<Option<PathBuf>, String> {
    let path = data_dir.join(REDIRECT_FILE_NAME);
    let shown = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = open_lock_file(&path).map_err(shown)?;
    // Held for a read and a write: released when `file` closes.
    if !try_lock_exclusive(&file).map_err(shown)? {
        return Ok(None);
    }
    let mark = format!("<!doctype html><!-- ask-user run {run} -->");
    let mut kept = Vec::new();
    // Only the start is read: the mark is there.
    (&file)
        .take(mark.len() as u64)
        .read_to_end(&mut kept)
        .map_err(shown)?;
    if !run.is_empty() && kept == mark.as_bytes() {
        return Ok(None);
    }
    let html = format!(
        "{mark}<meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={landing}\">\
         <title>ask-user</title><a href=\"{landing}\">Open ask-user</a>\n"
    );
    file.set_len(0).map_err(shown)?;
    file.seek(SeekFrom::Start(0)).map_err(shown)?;
    file.write_all(html.as_bytes()).map_err(shown)?;
    Ok(Some(path))
}

fn default_program() -> &'static str {
    if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "cmd"
    } else {
        "xdg-open"
    }
}

fn opener_command(program: &OsString, file: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    if cfg!(windows) && program == "cmd" {
        command.args(["/C", "start", ""]);
    }
    command
        .arg(file)
        .stdin(std::process::Stdio::null())
        // Never onto stdout: that is the MCP stream.
        .stdout(std::process::Stdio::null());
    command
}
