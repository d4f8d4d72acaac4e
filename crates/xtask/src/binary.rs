//! The one binary: its size against the budget, and installing it.

use crate::serve_probe::Serve;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary must stay under this (issue 11); `cargo xtask dist` and the
/// size step of `cargo xtask test` fail at or over it.
pub const BUDGET_MB: f64 = 15.0;
/// What the binary should weigh (issue 20); over it the size step is a MISS.
pub const GOAL_MB: f64 = 12.0;

/// How a size compares with the goal and the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the goal.
    Within,
    /// Over the goal, under the budget: a known miss.
    OverGoal,
    /// At or over the budget.
    OverBudget,
}

/// Judges `bytes` (MB are 1,000,000 bytes, as `ls -l` shows them divided).
pub fn judge(bytes: u64) -> Verdict {
    let mb = bytes as f64 / 1e6;
    if mb >= BUDGET_MB {
        Verdict::OverBudget
    } else if mb > GOAL_MB {
        Verdict::OverGoal
    } else {
        Verdict::Within
    }
}

/// The size of the file at `path`, with the lines that describe it.
pub fn weigh(path: &Path) -> Result<(u64, Verdict, String), String> {
    let bytes = path
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let verdict = judge(bytes);
    let mb = bytes as f64 / 1e6;
    let line = format!(
        "the one binary: {} ({mb:.1} MB, {:.1} MiB; goal {GOAL_MB} MB, budget {BUDGET_MB} MB){}",
        path.display(),
        bytes as f64 / 1_048_576.0,
        match verdict {
            Verdict::Within => "",
            Verdict::OverGoal => ": over the goal",
            Verdict::OverBudget => ": OVER THE BUDGET",
        }
    );
    Ok((bytes, verdict, line))
}

/// Where `cargo xtask install` puts the binary without `--prefix`: the
/// `bin` folder of `CARGO_HOME` (default `~/.cargo`), where `cargo install`
/// puts binaries and rustup put `cargo` on the PATH.
pub fn default_prefix() -> Result<PathBuf, String> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cargo"))
        .ok_or_else(|| "neither CARGO_HOME nor HOME is set: pass --prefix DIR".to_owned())
}

/// Copies `built` to `prefix/bin/ask-user` (mode 0755) and returns that path.
/// The copy is written beside it and renamed over it, so a running
/// `ask-user` (a background host) keeps its own file.
pub fn install(built: &Path, prefix: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let target = bin.join("ask-user");
    let partial = bin.join(format!(".ask-user.partial-{}", std::process::id()));
    let copied = std::fs::copy(built, &partial)
        .and_then(|_| std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| std::fs::rename(&partial, &target));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(format!(
            "installing {} as {}: {e}",
            built.display(),
            target.display()
        ));
    }
    Ok(target)
}

/// Whether `dir` is on the `PATH` the user runs commands with.
pub fn on_path(dir: &Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|entry| entry == dir))
}

/// Runs the installed binary as an MCP client configured with `{"command":
/// "ask-user"}` would: by name on a PATH that starts with `bin_dir`, from
/// `dir` (not the workspace). `ask-user --version` must name it, and `ask-user
/// serve` must serve `index`, the page built into it.
pub fn check_installed(bin_dir: &Path, dir: &Path, index: &[u8]) -> Result<Vec<String>, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut path = vec![bin_dir.to_owned()];
    path.extend(
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths),
    );
    let path = std::env::join_paths(path).map_err(|e| e.to_string())?;
    let command = || {
        let mut command = Command::new("ask-user");
        command.env("PATH", &path).current_dir(dir);
        command
    };
    let output = command()
        .arg("--version")
        .output()
        .map_err(|e| format!("`ask-user --version` on PATH {}: {e}", bin_dir.display()))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || !version.starts_with("ask-user ") {
        return Err(format!(
            "`ask-user --version` gave {} {version:?}",
            output.status
        ));
    }
    let serve = Serve::start(command(), dir)?;
    let (status, body) = serve.get("/")?;
    if status != 200 || body.as_bytes() != index {
        return Err(format!(
            "`ask-user serve` from {} answered GET / with {status} and {} bytes, not the page's index.html ({} bytes)",
            dir.display(),
            body.len(),
            index.len()
        ));
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(dir);
    Ok(vec![format!(
        "`{version}` and `ask-user serve` (its page built in) run by name from {}",
        dir.display()
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_fails_at_and_over_it_and_the_goal_is_a_miss_above_it() {
        let mb = |mb: f64| (mb * 1e6) as u64;
        assert_eq!(judge(mb(9.9)), Verdict::Within);
        assert_eq!(judge(mb(GOAL_MB)), Verdict::Within);
        assert_eq!(judge(mb(GOAL_MB) + 1), Verdict::OverGoal);
        assert_eq!(judge(mb(BUDGET_MB) - 1), Verdict::OverGoal);
        assert_eq!(judge(mb(BUDGET_MB)), Verdict::OverBudget);
        assert_eq!(judge(mb(17.1)), Verdict::OverBudget);
    }

    #[test]
    fn install_replaces_the_binary_in_prefix_bin_with_an_executable_copy() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("xtask-install-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let built = dir.join("built");
        std::fs::write(&built, "#!/bin/sh\necho new\n").unwrap();
        let prefix = dir.join("prefix");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(prefix.join("bin/ask-user"), "old").unwrap();
        // A running copy holds the old file open: it must keep reading it.
        let running = std::fs::File::open(prefix.join("bin/ask-user")).unwrap();

        let installed = install(&built, &prefix).unwrap();

        assert_eq!(installed, prefix.join("bin/ask-user"));
        assert_eq!(
            std::fs::read_to_string(&installed).unwrap(),
            "#!/bin/sh\necho new\n"
        );
        let mode = installed.metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let old = std::io::read_to_string(running).unwrap();
        assert_eq!(
            old, "old",
            "the running copy's file was replaced, not rewritten"
        );
        let left: Vec<_> = std::fs::read_dir(prefix.join("bin")).unwrap().collect();
        assert_eq!(left.len(), 1, "no partial copy is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
