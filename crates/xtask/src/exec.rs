//! Running child processes: the shared environment (PATH, cargo, repo root) and
//! report steps that stream a runner's output live while keeping its summary lines.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where everything lives, and the PATH every child process gets.
pub struct Ctx {
    /// The workspace root (where `Cargo.toml`, `index.html` and `Trunk.toml` are).
    pub root: PathBuf,
    /// Cargo's target directory (shared by cargo, Trunk and the project-local tools).
    pub target_dir: PathBuf,
    /// Project-local tools installed by xtask (wasm-opt from npm).
    pub tools_dir: PathBuf,
    path: OsString,
    cargo: PathBuf,
    color: bool,
}

impl Ctx {
    /// Builds the context from the environment `cargo xtask` runs in.
    pub fn new() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .expect("crates/xtask sits two levels below the workspace root")
            .to_path_buf();
        let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => root.join(dir),
            None => root.join("target"),
        };
        let tools_dir = target_dir.join("tools");
        // Tools installed by `cargo install` and by npm must be found even when the
        // shell's PATH lacks them (a fresh rustup shell, CI).
        let cargo_bin = match std::env::var_os("CARGO_HOME") {
            Some(home) => PathBuf::from(home).join("bin"),
            None => home_dir().join(".cargo").join("bin"),
        };
        let mut dirs = vec![tools_dir.join("node_modules").join(".bin"), cargo_bin];
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        let path = std::env::join_paths(dirs).expect("PATH entries contain no separator");
        let cargo = std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from);
        Ctx {
            root,
            target_dir,
            tools_dir,
            path,
            cargo,
            color: std::io::stdout().is_terminal(),
        }
    }

    /// Finds `name` on the children's PATH.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        std::env::split_paths(&self.path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    }

    /// A command run from the workspace root with the children's PATH.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let program = program.as_ref();
        let resolved = program
            .to_str()
            .filter(|name| !name.contains('/'))
            .and_then(|name| self.which(name))
            .unwrap_or_else(|| PathBuf::from(program));
        let mut command = Command::new(resolved);
        command.current_dir(&self.root).env("PATH", &self.path);
        if self.color {
            // Output is piped through xtask, so tell cargo the user still sees a terminal.
            command.env("CARGO_TERM_COLOR", "always");
        }
        command
    }

    /// `cargo` with the given arguments.
    pub fn cargo<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.command(&self.cargo);
        command.args(args);
        command
    }

    /// The `--version` (or given flag) output of a tool, if it runs.
    pub fn version_of(&self, program: &Path, flag: &str) -> Option<String> {
        let output = Command::new(program)
            .arg(flag)
            .env("PATH", &self.path)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        output.status.success().then(|| {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            text.trim().to_owned()
        })
    }

    /// Runs a set-up command with inherited output; fails with a message naming it.
    pub fn run_setup(&self, mut command: Command) -> Result<(), String> {
        let shown = show(&command);
        println!("    $ {shown}");
        let status = command
            .status()
            .map_err(|err| format!("could not start `{shown}`: {err}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{shown}` failed ({status})"))
        }
    }
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// A command line as the user would type it.
pub fn show(command: &Command) -> String {
    let program = Path::new(command.get_program());
    let name = program.file_name().unwrap_or(program.as_os_str());
    std::iter::once(name)
        .chain(command.get_args())
        .map(|part| {
            let part = part.to_string_lossy();
            if part.contains(' ') || part.contains('*') || part.is_empty() {
                format!("'{part}'")
            } else {
                part.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The runner exited successfully.
    Passed,
    /// The runner failed (or could not start).
    Failed,
    /// Not run, because a step it needs failed.
    Skipped(String),
    /// A goal known not to be met yet: shown as a MISS, not a pass, and not
    /// failing the run (the step fails instead when things get worse).
    Missed,
}

/// One runner's result as shown in the final summary.
pub struct StepResult {
    name: String,
    outcome: Outcome,
    duration: Duration,
    summary: Vec<String>,
}

/// Turns a runner's captured output (ANSI codes stripped) into summary lines.
pub type Summarize = fn(&[String], bool) -> Vec<String>;

/// Every step of one xtask invocation, for the summary printed at the end.
#[derive(Default)]
pub struct Report {
    steps: Vec<StepResult>,
}

impl Report {
    /// Runs `command` as the step `name`, streaming its output, and records its summary.
    /// Returns whether it passed.
    pub fn run(&mut self, name: &str, mut command: Command, summarize: Summarize) -> bool {
        let shown = show(&command);
        println!("\n==> {name}\n    $ {shown}");
        let started = Instant::now();
        let (passed, lines) = match run_captured(&mut command) {
            Ok(result) => result,
            Err(err) => (false, vec![format!("could not start `{shown}`: {err}")]),
        };
        let mut summary = summarize(&lines, passed);
        if !passed && summary.is_empty() {
            summary.push(format!("`{shown}` failed; its output is above"));
        }
        self.steps.push(StepResult {
            name: name.to_owned(),
            outcome: if passed {
                Outcome::Passed
            } else {
                Outcome::Failed
            },
            duration: started.elapsed(),
            summary,
        });
        passed
    }

    /// Records a step that was not run.
    pub fn skip(&mut self, name: &str, why: &str) {
        println!("\n==> {name}: skipped ({why})");
        self.steps.push(StepResult {
            name: name.to_owned(),
            outcome: Outcome::Skipped(why.to_owned()),
            duration: Duration::ZERO,
            summary: Vec::new(),
        });
    }

    /// Records a step that ran no command (a check of figures already measured).
    pub fn record(&mut self, name: &str, outcome: Outcome, summary: Vec<String>) {
        println!("\n==> {name}");
        for line in &summary {
            println!("    {line}");
        }
        self.steps.push(StepResult {
            name: name.to_owned(),
            outcome,
            duration: Duration::ZERO,
            summary,
        });
    }

    /// Adds a line to the last step's summary.
    pub fn note(&mut self, line: String) {
        if let Some(step) = self.steps.last_mut() {
            step.summary.push(line);
        }
    }

    /// Whether every step passed.
    pub fn passed(&self) -> bool {
        self.steps
            .iter()
            .all(|s| matches!(s.outcome, Outcome::Passed | Outcome::Missed))
    }

    /// Prints one block per step: status, name, time and its summary lines.
    pub fn print(&self, title: &str, total: Duration) {
        println!("\n==> Summary of {title}");
        for step in &self.steps {
            let (mark, detail) = match &step.outcome {
                Outcome::Passed => ("PASS", String::new()),
                Outcome::Failed => ("FAIL", String::new()),
                Outcome::Skipped(why) => ("SKIP", format!(" ({why})")),
                Outcome::Missed => ("MISS", " (a goal not met yet)".to_owned()),
            };
            println!(
                "  {mark}  {:<58} {:>7}{detail}",
                step.name,
                format_duration(step.duration)
            );
            for line in &step.summary {
                println!("          {line}");
            }
        }
        let verdict = if self.passed() {
            "all passed"
        } else {
            "FAILED"
        };
        println!("  {verdict} in {}", format_duration(total));
    }
}

/// `83.4s` or `12m05s`.
pub fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = duration.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// Runs `command` with stdout and stderr on one pipe (so cargo's `Running ...`
/// lines and the tests' results stay in order): each line is echoed at once and
/// kept, ANSI-stripped, for the summary.
fn run_captured(command: &mut Command) -> std::io::Result<(bool, Vec<String>)> {
    let (reader, writer) = std::io::pipe()?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()?;
    // Drop our copies of the write end (held by `command`), or reading never ends.
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut lines = Vec::new();
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // Echo the raw bytes so colours survive.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&buf).and_then(|()| out.flush());
        let text = strip_ansi(&String::from_utf8_lossy(&buf));
        lines.push(text.trim_end().to_owned());
    }
    let status = child.wait()?;
    Ok((status.success(), lines))
}

/// Removes ANSI escape sequences (colours) so output can be parsed.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // CSI: parameters then one final byte in @..~
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_ansi_removes_colour_codes_and_keeps_text() {
        assert_eq!(
            strip_ansi("\u{1b}[1m\u{1b}[32mtest result\u{1b}[0m: ok."),
            "test result: ok."
        );
    }

    #[test]
    fn format_duration_switches_to_minutes_after_a_minute() {
        assert_eq!(format_duration(Duration::from_millis(8_400)), "8.4s");
        assert_eq!(format_duration(Duration::from_secs(725)), "12m05s");
    }

    #[test]
    fn run_captured_keeps_stdout_and_stderr_lines_in_order_and_the_exit_status() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo one; echo two >&2; echo three; exit 3"]);
        let (passed, lines) = run_captured(&mut command).expect("sh runs");
        assert!(!passed);
        assert_eq!(lines, vec!["one", "two", "three"]);
    }

    #[test]
    fn show_quotes_globs_and_spaces() {
        let mut command = Command::new("/usr/bin/cargo");
        command.args(["bench", "--bench", "*", "a b"]);
        assert_eq!(show(&command), "cargo bench --bench '*' 'a b'");
    }
}
