//! Project automation for ask-user: `cargo xtask run`, `cargo xtask test`, `cargo xtask bench`,
//! `cargo xtask soak`.
//!
//! Std-only on purpose, so `cargo xtask` compiles in seconds and a second run
//! starts at once. Every tool it needs is installed on first use (see `tools`).

mod embed;
mod exec;
mod soak;
mod summary;
mod tools;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use exec::{Ctx, Report};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  run [--addr HOST:PORT]   install what is missing, build the page with Trunk (release),
                           and serve it with `ask-user serve --demo` (default 127.0.0.1:7411)
  test                     install what is missing (plus Chromium), then run fmt, clippy,
                           native tests, the composer's wasm tests in headless Chromium,
                           the Trunk release build and the browser tests against the real host
  bench [-- ARGS]          run the criterion benches (ARGS go to them) and the host's load benches
  build-embed              build the JavaScript embed into dist/embed/ (after Trunk, which replaces dist/)";

/// Where Trunk writes the release build (Trunk.toml `dist`).
const DIST: &str = "dist";
/// Browser tests in `tests/` run only when this names a Trunk build; plain
/// `cargo test --workspace` leaves it unset and needs no browser.
const E2E_DIST_ENV: &str = "ASK_USER_E2E_DIST";
/// The host binary the browser tests start (`ask-user serve ...`).
const HOST_BIN_ENV: &str = "ASK_USER_BIN";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ctx = Ctx::new();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("", &[][..]),
    };
    let result = match command {
        "run" => run(&ctx, rest),
        "test" => test(&ctx, rest),
        "bench" => bench(&ctx, rest),
        embed::SUBCOMMAND if rest.is_empty() => embed::build(&ctx),
        soak::SUBCOMMAND => soak::run(&ctx, rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}\n{}", soak::USAGE);
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}\n{}", soak::USAGE);
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nxtask: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask run`: build the page in release mode and serve it with the demo agent.
fn run(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let addr = match args {
        [] => "127.0.0.1:7411".to_owned(),
        [flag, addr] if flag == "--addr" => addr.clone(),
        _ => return Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    tools::ensure_build_tools(ctx)?;
    println!("\n==> Building the page with Trunk (release)");
    ctx.run_setup(trunk_build(ctx))?;
    // The JavaScript embed, served at /embed/ (crates/embed; see embed.rs).
    embed::build(ctx)?;
    println!("\n==> Building the host");
    ctx.run_setup(host_build(ctx))?;
    let mut host = ctx.command(host_binary(ctx));
    host.args(["serve", "--addr", &addr, "--dist"])
        .arg(ctx.root.join(DIST))
        .arg("--demo");
    println!("\n==> Starting the host\n    $ {}", exec::show(&host));
    let mut child = host
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not start the host: {err}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    // The host prints its URL (with the session token) on one line; repeat it
    // where it cannot be missed. Ctrl-C reaches the host too (same process group).
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        println!("{line}");
        if let Some(url) = find_url(&line) {
            println!(
                "\n    ask-user is serving the composer at:\n\n        {url}\n\n    Open it in a browser. Ctrl-C stops the host.\n"
            );
        }
    }
    let status = child
        .wait()
        .map_err(|err| format!("waiting for the host: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the host exited with {status}"))
    }
}

/// `cargo xtask test`: every check CI runs, with one summary at the end.
fn test(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("unexpected arguments {args:?}\n\n{USAGE}"));
    }
    let started = Instant::now();
    tools::ensure_build_tools(ctx)?;
    let chromedriver = tools::ensure_browser(ctx)?;
    let mut report = Report::default();

    report.run(
        "rustfmt (cargo fmt --check)",
        ctx.cargo(["fmt", "--all", "--", "--check"]),
        summary::fmt,
    );
    report.run(
        "clippy (-D warnings)",
        ctx.cargo([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
        summary::clippy,
    );
    // The browser crates' wasm-only code (their wasm-bindgen tests, web-sys
    // glue behind `cfg(target_arch = "wasm32")`) is invisible to native clippy.
    report.run(
        "clippy wasm32 (composer, embed, page; -D warnings)",
        ctx.cargo([
            "clippy",
            "--target",
            tools::WASM_TARGET,
            "-p",
            "ask-user-composer",
            "-p",
            "ask-user-embed",
            "-p",
            "ask-user-web",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
        summary::clippy,
    );
    let built = report.run(
        "Trunk release build (dist/)",
        trunk_build(ctx),
        summary::errors,
    );
    if built {
        match summary::page_size(&ctx.root.join(DIST)) {
            Ok(size) => report.note(size),
            Err(err) => report.note(format!("could not measure the build: {err}")),
        }
    }
    // The JavaScript embed into dist/embed/ (after Trunk, and after measuring the page).
    if built {
        let embed_step = "embed build (dist/embed/, crates/embed)";
        if report.run(embed_step, embed::command(ctx), summary::errors) {
            let out = ctx.root.join(DIST).join(embed::DIR);
            report.note(embed::size_note(&out).unwrap_or_else(|err| err));
        }
    }
    let host_built = report.run(
        "host binary (cargo build --workspace --bin ask-user)",
        host_build(ctx),
        summary::errors,
    );

    let mut wasm_tests = ctx.cargo([
        "test",
        "-p",
        "ask-user-composer",
        "--target",
        tools::WASM_TARGET,
        "--no-fail-fast",
    ]);
    wasm_tests.env("CHROMEDRIVER", &chromedriver).env(
        "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER",
        "wasm-bindgen-test-runner",
    );
    report.run(
        "composer wasm-bindgen tests (headless Chromium)",
        wasm_tests,
        summary::cargo_test,
    );

    // Native and browser tests in one run: `cargo test -p ask-user-tests` alone
    // would resolve features for fewer packages and rebuild proc-macro2, serde and
    // everything above them. With ASK_USER_E2E_DIST set, the browser tests in
    // tests/ start the real host on the release build and drive headless Chromium.
    let mut native = ctx.cargo(["test", "--workspace", "--no-fail-fast"]);
    if built && host_built {
        // Browser tests are `#[ignore]`d so that a plain `cargo test` lists
        // them as ignored; here their environment is ready, so they run.
        native
            .args(["--", "--include-ignored"])
            .env(E2E_DIST_ENV, ctx.root.join(DIST))
            .env(HOST_BIN_ENV, host_binary(ctx))
            .env("CHROMEDRIVER", &chromedriver);
        report.run(
            "native + browser tests (cargo test --workspace, ASK_USER_E2E_DIST=dist)",
            native,
            summary::cargo_test,
        );
    } else {
        report.run(
            "native tests (cargo test --workspace)",
            native,
            summary::cargo_test,
        );
        report.skip(
            "browser tests (tests/, on the release build)",
            "need the Trunk build and the host binary",
        );
    }

    report.print("cargo xtask test", started.elapsed());
    if report.passed() {
        Ok(())
    } else {
        Err("some checks failed (see the summary above)".to_owned())
    }
}

/// `cargo xtask bench`: the criterion benches, then the host's load benches.
fn bench(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let passthrough = match args {
        [] => &[][..],
        [sep, rest @ ..] if sep == "--" => rest,
        _ => return Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    let started = Instant::now();
    let mut report = Report::default();
    // Only bench targets (`--bench '*'`), so libraries and the wasm app are not
    // rebuilt as benchmarks; `release-native` is the release profile at opt-level 3
    // (plain release is tuned for wasm size).
    let mut criterion = ctx.cargo([
        "bench",
        "--workspace",
        "--profile",
        "release-native",
        "--bench",
        "*",
    ]);
    if !passthrough.is_empty() {
        criterion.arg("--").args(passthrough);
    }
    report.run("criterion benches", criterion, summary::criterion);
    for (name, command) in load_benches(ctx) {
        report.run(&name, command, summary::program_output);
    }
    report.print("cargo xtask bench", started.elapsed());
    if report.passed() {
        Ok(())
    } else {
        Err("some benches failed (see the summary above)".to_owned())
    }
}

/// Hook for the host's load benches: every `host/examples/load*.rs` runs as
/// `cargo run --profile release-native -p ask-user-host --example <name>`.
/// Add a file there (it starts the host itself and prints its own figures);
/// no change here is needed.
fn load_benches(ctx: &Ctx) -> Vec<(String, Command)> {
    let Ok(entries) = std::fs::read_dir(ctx.root.join("host/examples")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (stem.starts_with("load") && (path.extension()? == "rs" || path.is_dir()))
                .then_some(stem)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let command = ctx.cargo([
                "run",
                "--profile",
                "release-native",
                "-p",
                "ask-user-host",
                "--example",
                &name,
            ]);
            (format!("host load bench `{name}`"), command)
        })
        .collect()
}

fn trunk_build(ctx: &Ctx) -> Command {
    let mut command = ctx.command("trunk");
    // The tools are pinned in Trunk.toml and installed by xtask; the update check
    // would try the network.
    command
        .args(["build", "--release"])
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    command
}

/// Builds the `ask-user` binary. `--workspace` resolves features as `cargo test
/// --workspace` does, so its dependencies are compiled once for both (only the
/// host's own dependencies are built).
fn host_build(ctx: &Ctx) -> Command {
    ctx.cargo(["build", "--workspace", "--bin", "ask-user"])
}

fn host_binary(ctx: &Ctx) -> PathBuf {
    ctx.target_dir.join("debug").join("ask-user")
}

/// The first `http://` URL in a line of the host's output.
fn find_url(line: &str) -> Option<&str> {
    let start = line.find("http://")?;
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '>')
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_url_takes_the_url_with_its_token_out_of_a_log_line() {
        assert_eq!(
            find_url("listening on http://127.0.0.1:7411/?token=abc123 (Ctrl-C to stop)"),
            Some("http://127.0.0.1:7411/?token=abc123")
        );
        assert_eq!(find_url("no url here"), None);
    }
}
