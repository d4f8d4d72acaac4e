//! Project automation for ask-user: the `cargo xtask` commands (`run`, `test`,
//! `dist`, …) that `USAGE` lists.
//!
//! Std-only on purpose, so `cargo xtask` compiles in seconds and a second run
//! starts at once. Every tool it needs is installed on first use (see `tools`).

mod binary;
mod embed;
mod exec;
mod page;
mod serve_probe;
mod size;
mod soak;
mod stamp;
mod summary;
mod tools;
mod wasm_size;

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use exec::{Ctx, Outcome, Report};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  run [--addr HOST:PORT]   install what is missing, build the page (skipped when unchanged) and
                           the host with the page built in, and run `ask-user serve --demo`
                           (default 127.0.0.1:7411)
  test                     install what is missing (plus Chromium), then run fmt, the page build,
                           clippy, the composer's wasm tests in headless Chromium, every
                           native and browser test against the real host carrying the page,
                           and build the one binary, weigh it and install it into a temporary prefix
  dist                     build the one binary: the host in release with the page built in,
                           into target/dist/ask-user (fails at 15 MB or more)
  install [--prefix DIR]   build the one binary and install it as DIR/bin/ask-user
                           (default ~/.cargo/bin/ask-user, or $CARGO_HOME/bin)
  bench [-- ARGS]          run the criterion benches (ARGS go to them), build the one binary,
                           measure its idle memory, show what weighs in the page's wasm, then
                           the host's load benches and the browser bench
  build-embed              build the JavaScript embed into dist/embed/ (after Trunk, which replaces dist/)";

/// Names the Trunk build the browser tests in `tests/` serve. They are
/// `#[ignore]`d, so plain `cargo test --workspace` lists them as ignored and
/// needs no browser; `test` sets this and runs them with `--include-ignored`.
/// Run without it, they fail and say what is missing.
const E2E_DIST_ENV: &str = "ASK_USER_E2E_DIST";
/// Where the tests find the npm packages they drive the host with
/// ([`tools::NODE_TEST_PACKAGES`]).
const NODE_MODULES_ENV: &str = "ASK_USER_NODE_MODULES";
/// The host binary the browser tests start (`ask-user serve ...`).
const HOST_BIN_ENV: &str = "ASK_USER_BIN";
/// The profile of the one binary: built for size except a request's path
/// (see the workspace's Cargo.toml; plain release is tuned for wasm), as the
/// host's load bench measures it.
const DIST_PROFILE: &str = "release-native";
/// Where `cargo xtask dist` leaves the binary.
const DIST_DIR: &str = "dist";

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
        "dist" if rest.is_empty() => dist(&ctx).map(drop),
        "install" => install(&ctx, rest),
        "bench" => bench(&ctx, rest),
        embed::SUBCOMMAND if rest.is_empty() => embed::build_forced(&ctx),
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

/// Builds the page and the embed unless they are up to date.
fn ensure_page(ctx: &Ctx) -> Result<(), String> {
    tools::ensure_build_tools(ctx)?;
    page::ensure_page(ctx, &page::inputs(ctx, page::Build::Page))?;
    embed::ensure(ctx, &page::inputs(ctx, page::Build::Embed))
}

/// `cargo xtask run`: build what changed and serve the page with the demo agent.
fn run(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let started = Instant::now();
    let addr = match args {
        [] => "127.0.0.1:7411".to_owned(),
        [flag, addr] if flag == "--addr" => addr.clone(),
        _ => return Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    ensure_page(ctx)?;
    println!("\n==> Building the host with the page built in");
    ctx.run_setup(host_build(ctx))?;
    let mut host = ctx.command(host_binary(ctx));
    host.args(["serve", "--addr", &addr, "--demo"]);
    println!("\n==> Starting the host\n    $ {}", exec::show(&host));
    println!(
        "\n    Built in {:.1} s. Open the URL the host prints (with its token) in a browser; \
         Ctrl-C stops the host.\n",
        started.elapsed().as_secs_f64()
    );
    // The host's stdout is this terminal: the host writes its token only to a
    // terminal, never into a pipe. Ctrl-C reaches the host too (same process group).
    let mut child = host
        .stdin(Stdio::null())
        .spawn()
        .map_err(|err| format!("could not start the host: {err}"))?;
    let status = child
        .wait()
        .map_err(|err| format!("waiting for the host: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the host exited with {status}"))
    }
}

/// `cargo xtask test`: every check CI runs, with one summary at the end. The
/// page and the embed are always rebuilt: the test run tests what is in the tree.
fn test(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("unexpected arguments {args:?}\n\n{USAGE}"));
    }
    let started = Instant::now();
    tools::ensure_build_tools(ctx)?;
    tools::ensure_brotli(ctx)?;
    let chromedriver = tools::ensure_browser(ctx)?;
    let node_modules = tools::ensure_node_test_packages(ctx)?;
    tools::ensure_postgres(ctx)?;
    let mut report = Report::default();

    report.run(
        "rustfmt (cargo fmt --check)",
        ctx.cargo(["fmt", "--all", "--", "--check"]),
        summary::fmt,
    );
    let inputs = page::inputs(ctx, page::Build::Page);
    page::forget_page(ctx);
    let mut built = report.run(
        "Trunk release build (dist/)",
        page::trunk_build(ctx),
        summary::errors,
    );
    if built {
        if let Err(err) = page::record_page(ctx, &inputs) {
            report.note(format!("could not record the build: {err}"));
        }
        page_size_step(ctx, &mut report);
    }
    // The JavaScript embed into dist/embed/ (after Trunk, and after measuring the page).
    if built {
        let embed_step = "embed build (dist/embed/, crates/embed)";
        built = report.run(embed_step, embed::command(ctx), summary::errors);
        if built {
            embed_size_step(ctx, &mut report);
        }
    }
    // From here on every cargo command that builds the host gives it the page
    // (when it was built), so the host is compiled once for all of them.
    let host_command = |command: Command| {
        if built {
            page::with_page(ctx, command)
        } else {
            command
        }
    };
    report.run(
        "clippy (-D warnings)",
        host_command(ctx.cargo([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])),
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
    let host_built = report.run(
        if built {
            "host binary with the page built in (cargo build --workspace --bin ask-user)"
        } else {
            "host binary (cargo build --workspace --bin ask-user)"
        },
        host_command(ctx.cargo(["build", "--workspace", "--bin", "ask-user"])),
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
    let mut native = host_command(ctx.cargo(["test", "--workspace", "--no-fail-fast"]));
    if built && host_built {
        // Browser tests are `#[ignore]`d so that a plain `cargo test` lists
        // them as ignored; here their environment is ready, so they run.
        native
            .args(["--", "--include-ignored"])
            .env(E2E_DIST_ENV, page::dist(ctx))
            .env(HOST_BIN_ENV, host_binary(ctx))
            .env(NODE_MODULES_ENV, &node_modules)
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
            "need the Trunk build, the embed and the host binary",
        );
    }
    if built {
        one_binary_steps(ctx, &mut report);
    } else {
        report.skip(
            "the one binary (release-native, the page built in)",
            "needs the Trunk build and the embed",
        );
    }

    report.print("cargo xtask test", started.elapsed());
    if report.passed() {
        Ok(())
    } else {
        Err("some checks failed (see the summary above)".to_owned())
    }
}

/// The test run's last steps, on the page it built: the one binary built as
/// `cargo xtask dist` builds it and weighed against the budget, so a budget is
/// never first broken on a user's machine; then installed into a temporary
/// prefix and run from another folder, as `cargo xtask install` leaves it.
fn one_binary_steps(ctx: &Ctx, report: &mut Report) {
    let build_step = "the one binary (cargo build --profile release-native, the page built in)";
    if !report.run(build_step, dist_build(ctx), summary::errors) {
        return;
    }
    let built = dist_built(ctx);
    let size_step = "the one binary's size (goal 12 MB, budget 15 MB)";
    match binary::weigh(&built) {
        Ok((_, verdict, line)) => {
            let outcome = match verdict {
                binary::Verdict::Within => Outcome::Passed,
                binary::Verdict::OverGoal => Outcome::Missed,
                binary::Verdict::OverBudget => Outcome::Failed,
            };
            report.record(size_step, outcome, vec![line]);
        }
        Err(err) => report.record(size_step, Outcome::Failed, vec![err]),
    }
    let install_step = "install (into a temporary prefix) and run it by name from another folder";
    let scratch = ctx.target_dir.join("tmp").join("xtask-install");
    let index = std::fs::read(page::dist(ctx).join("index.html"));
    let checked = index
        .map_err(|e| format!("dist/index.html: {e}"))
        .and_then(|index| {
            let installed = binary::install(&built, &scratch.join("prefix"))?;
            let bin_dir = installed.parent().expect("installed into a bin folder");
            binary::check_installed(bin_dir, &scratch.join("elsewhere"), &index)
        });
    match checked {
        Ok(lines) => report.record(install_step, Outcome::Passed, lines),
        Err(err) => report.record(install_step, Outcome::Failed, vec![err]),
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The build of the one binary (`cargo xtask dist`, the size step of `cargo
/// xtask test`): the host at [`DIST_PROFILE`] with the page built in, and on
/// Linux with glibc linked in statically ([`static_target`]).
fn dist_build(ctx: &Ctx) -> Command {
    let mut build = ctx.cargo([
        "build",
        "--profile",
        DIST_PROFILE,
        "-p",
        "ask-user-host",
        "--bin",
        "ask-user",
    ]);
    if let Some(target) = static_target() {
        // The target named, so `+crt-static` reaches the binary only, not the
        // build scripts and proc macros cargo builds for this machine.
        build.args(["--target", &target]);
        build.env(
            format!(
                "CARGO_TARGET_{}_RUSTFLAGS",
                target.to_uppercase().replace('-', "_")
            ),
            // RELR: the self-relocation at start reads 3 KiB, not 270 KiB
            // (glibc 2.36's static start-up applies it; the binary carries it).
            "-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs",
        );
    }
    page::with_page(ctx, build)
}

/// The target the one binary is built for with glibc linked in (a static
/// PIE) on a glibc Linux, else `None` (this machine's default target).
///
/// Static, because the binary then runs on any Linux whatever its glibc, and
/// because a dynamic glibc is 2 MiB of what an idle host keeps mapped (libc,
/// libm and the loader, mapped in 64 KiB windows): idle VmRSS 9.0 → 7.3 MiB
/// on the same build (docs/performance.md, "The one binary").
/// Names are still resolved by glibc's built-in `files` and `dns` sources.
fn static_target() -> Option<String> {
    (cfg!(target_os = "linux") && cfg!(target_env = "gnu"))
        .then(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
}

/// Where [`dist_build`] leaves the binary.
fn dist_built(ctx: &Ctx) -> PathBuf {
    let dir = match static_target() {
        Some(target) => ctx.target_dir.join(target),
        None => ctx.target_dir.clone(),
    };
    dir.join(DIST_PROFILE).join("ask-user")
}

/// `cargo xtask dist`: the one binary, with the page built in, in
/// `target/dist/ask-user`. Returns its path.
fn dist(ctx: &Ctx) -> Result<PathBuf, String> {
    ensure_page(ctx)?;
    println!("\n==> Building the one binary (profile {DIST_PROFILE}, the page built in)");
    ctx.run_setup(dist_build(ctx))?;
    let built = dist_built(ctx);
    let out_dir = ctx.target_dir.join(DIST_DIR);
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let out = out_dir.join("ask-user");
    // Replace rather than overwrite: a running copy keeps its own file.
    let _ = std::fs::remove_file(&out);
    std::fs::copy(&built, &out)
        .map_err(|e| format!("copying {} to {}: {e}", built.display(), out.display()))?;
    let (size, verdict, line) = binary::weigh(&out)?;
    println!("\n    {line}");
    if verdict == binary::Verdict::OverBudget {
        return Err(format!(
            "{} is {:.1} MB, over the {} MB budget",
            out.display(),
            size as f64 / 1e6,
            binary::BUDGET_MB
        ));
    }
    Ok(out)
}

/// `cargo xtask install [--prefix DIR]`: the one binary as `DIR/bin/ask-user`.
fn install(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let prefix = match args {
        [] => binary::default_prefix()?,
        [flag, dir] if flag == "--prefix" => std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(dir),
        _ => return Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    let built = dist(ctx)?;
    let installed = binary::install(&built, &prefix)?;
    println!("\n    installed {}", installed.display());
    let bin_dir = installed.parent().expect("installed into a bin folder");
    if binary::on_path(bin_dir) {
        println!(
            "    MCP clients can start it as {{\"command\": \"ask-user\", \"args\": [\"mcp\"]}}"
        );
    } else {
        println!(
            "    {} is not on your PATH: add it, or give MCP clients the full path ({{\"command\": \"{}\", \"args\": [\"mcp\"]}})",
            bin_dir.display(),
            installed.display()
        );
    }
    Ok(())
}

/// `cargo xtask bench`: the criterion benches, the one binary and what weighs
/// in the page, then the host's load benches and the browser bench.
fn bench(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let passthrough = match args {
        [] => &[][..],
        [sep, rest @ ..] if sep == "--" => rest,
        _ => return Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    let started = Instant::now();
    tools::ensure_brotli(ctx)?;
    let chromedriver = tools::ensure_browser(ctx)?;
    // The shared store's bench (`host/examples/load_shared.rs`) starts a PostgreSQL.
    tools::ensure_postgres(ctx)?;
    let mut report = Report::default();
    // Only bench targets (`--bench '*'`), so libraries and the wasm app are not
    // rebuilt as benchmarks; `release-native` is the one binary's profile
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

    let mut dist_command = ctx.command(std::env::current_exe().unwrap_or_else(|_| "xtask".into()));
    dist_command.arg("dist");
    let binary = ctx.target_dir.join(DIST_DIR).join("ask-user");
    let dist_built = report.run(
        "the one binary (cargo xtask dist)",
        dist_command,
        summary::dist,
    );
    if dist_built {
        page_size_step(ctx, &mut report);
        embed_size_step(ctx, &mut report);
        let step = "idle memory of the one binary (ask-user serve, one session, no page)";
        let scratch = ctx.target_dir.join("tmp").join("xtask-idle");
        match serve_probe::idle_memory(&binary, &scratch) {
            Ok((lines, within)) => {
                let outcome = if within {
                    Outcome::Passed
                } else {
                    Outcome::Missed
                };
                report.record(step, outcome, lines);
            }
            Err(err) => report.record(step, Outcome::Failed, vec![err]),
        }
    }
    // What weighs in the page's wasm: Trunk's wasm-bindgen output optimised as
    // Trunk does (`-Oz`), but keeping the function names (`-g`).
    let bindgen = ctx
        .target_dir
        .join("wasm-bindgen")
        .join("release")
        .join("ask-user-web_bg.wasm");
    let named = ctx.target_dir.join("xtask").join("ask-user-web.named.wasm");
    let _ = std::fs::create_dir_all(ctx.target_dir.join("xtask"));
    let mut opt = ctx.command("wasm-opt");
    opt.args(["-Oz", "-g", "--output"])
        .arg(&named)
        .arg(&bindgen);
    if report.run(
        "what weighs in the page's wasm (wasm-opt -Oz -g)",
        opt,
        summary::errors,
    ) {
        match wasm_size::report(&named, 14, 12) {
            Ok(lines) => lines.into_iter().for_each(|line| report.note(line)),
            Err(err) => report.note(format!("could not read the wasm: {err}")),
        }
    }
    for (name, command) in load_benches(ctx) {
        report.run(
            &name,
            page::with_page(ctx, command),
            summary::program_output,
        );
    }
    if binary.is_file() {
        let mut browser = ctx.cargo(["run", "-p", "ask-user-tests", "--example", "browser_bench"]);
        browser
            .env(HOST_BIN_ENV, &binary)
            .env("CHROMEDRIVER", &chromedriver);
        report.run(
            "browser bench (headless Chromium, the one binary)",
            page::with_page(ctx, browser),
            summary::program_output,
        );
    } else {
        report.skip("browser bench", "needs the one binary");
    }
    report.print("cargo xtask bench", started.elapsed());
    if report.passed() {
        Ok(())
    } else {
        Err("some benches failed (see the summary above)".to_owned())
    }
}

/// Weighs the page's first load against issue 11's goals (see `size`).
fn page_size_step(ctx: &Ctx, report: &mut Report) {
    let files = size::page_files(&page::dist(ctx));
    size_step(
        report,
        "page size (first load; goals 100 KB brotli, 130 KiB gzip)",
        "page first load",
        files,
        size::PAGE_CEILING,
    );
}

/// Weighs the embed's first load against the same goals.
fn embed_size_step(ctx: &Ctx, report: &mut Report) {
    let files = size::embed_files(&page::dist(ctx).join(embed::DIR));
    size_step(
        report,
        "embed size (first load; goals 100 KB brotli, 130 KiB gzip)",
        "embed first load",
        Ok(files),
        size::EMBED_CEILING,
    );
}

fn size_step(
    report: &mut Report,
    name: &str,
    what: &str,
    files: Result<Vec<PathBuf>, String>,
    ceiling: size::Ceiling,
) {
    match files.and_then(|files| size::weigh(&files)) {
        Ok(weight) => {
            let outcome = match size::judge(&weight, ceiling) {
                size::Verdict::Within => Outcome::Passed,
                size::Verdict::OverGoal => Outcome::Missed,
                size::Verdict::OverCeiling => Outcome::Failed,
            };
            report.record(name, outcome, size::describe(what, &weight, ceiling));
        }
        Err(err) => report.record(
            name,
            Outcome::Failed,
            vec![format!("could not weigh it: {err}")],
        ),
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
                DIST_PROFILE,
                "-p",
                "ask-user-host",
                "--example",
                &name,
            ]);
            (format!("host load bench `{name}`"), command)
        })
        .collect()
}

/// Builds the `ask-user` binary with the page built in. `--workspace` resolves
/// features as `cargo test --workspace` does, so its dependencies are compiled
/// once for both (only the host's own dependencies are built).
fn host_build(ctx: &Ctx) -> Command {
    page::with_page(
        ctx,
        ctx.cargo(["build", "--workspace", "--bin", "ask-user"]),
    )
}

fn host_binary(ctx: &Ctx) -> PathBuf {
    ctx.target_dir.join("debug").join("ask-user")
}
