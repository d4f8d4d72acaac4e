//! The JavaScript embed (crates/embed, package ask-user-embed): `cargo build` for
//! wasm32, `wasm-bindgen --target web`, `wasm-opt -Oz` (as Trunk does for the
//! page), into `dist/embed/` with the composer's CSS and the example page. The
//! host serves that folder at `/embed/`.
//!
//! Runs after the Trunk build: Trunk replaces all of `dist/`.

use std::path::Path;
use std::process::Command;

use crate::exec::Ctx;
use crate::tools::WASM_TARGET;

/// The subcommand that does the build (so a report step is one command).
pub const SUBCOMMAND: &str = "build-embed";
/// Where the embed goes, under Trunk's `dist/`.
pub const DIR: &str = "embed";
/// The JS module and wasm file stem (`ask_user_embed.js`, `ask_user_embed_bg.wasm`).
pub const NAME: &str = "ask_user_embed";

/// `cargo xtask build-embed` as a command, for `run_setup` or a report step.
pub fn command(ctx: &Ctx) -> Command {
    let mut command = ctx.command(std::env::current_exe().unwrap_or_else(|_| "xtask".into()));
    command.arg(SUBCOMMAND);
    command
}

/// Builds `dist/embed/` (replacing it).
pub fn build(ctx: &Ctx) -> Result<(), String> {
    let out = ctx.root.join(crate::DIST).join(DIR);
    let staging = ctx.target_dir.join("embed-bindgen");
    println!(
        "==> Building the embed (crates/embed) into {}",
        out.display()
    );
    // Same profile and target as Trunk's page build, so dependencies are shared.
    ctx.run_setup(ctx.cargo([
        "build",
        "-p",
        "ask-user-embed",
        "--lib",
        "--release",
        "--target",
        WASM_TARGET,
    ]))?;
    let wasm = ctx
        .target_dir
        .join(WASM_TARGET)
        .join("release")
        .join(format!("{NAME}.wasm"));
    let mut bindgen = ctx.command("wasm-bindgen");
    bindgen
        .args(["--target", "web", "--out-name", NAME, "--out-dir"])
        .arg(&staging)
        .arg(&wasm);
    ctx.run_setup(bindgen)?;

    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut opt = ctx.command("wasm-opt");
    opt.arg("-Oz")
        .arg("--output")
        .arg(out.join(format!("{NAME}_bg.wasm")))
        .arg(staging.join(format!("{NAME}_bg.wasm")));
    ctx.run_setup(opt)?;
    let copies = [
        (staging.join(format!("{NAME}.js")), format!("{NAME}.js")),
        (staging.join(format!("{NAME}.d.ts")), format!("{NAME}.d.ts")),
        // For pages that link the styles instead of taking the inline copy.
        (
            ctx.root.join("crates/composer/style/composer.css"),
            format!("{NAME}.css"),
        ),
        (
            ctx.root.join("examples/embed/index.html"),
            "example.html".to_owned(),
        ),
    ];
    for (from, to) in copies {
        copy(&from, &out.join(to))?;
    }
    println!("    embed: {}", size_note(&out)?);
    Ok(())
}

/// "embed wasm N KiB raw, M KiB gzipped".
pub fn size_note(out: &Path) -> Result<String, String> {
    let wasm = out.join(format!("{NAME}_bg.wasm"));
    let raw = wasm
        .metadata()
        .map_err(|e| format!("{}: {e}", wasm.display()))?
        .len();
    let gz = crate::summary::gzipped_len(&wasm)?;
    let kib = |bytes: u64| bytes as f64 / 1024.0;
    Ok(format!(
        "embed wasm ({DIR}/{NAME}_bg.wasm) {:.1} KiB raw, {:.1} KiB gzipped",
        kib(raw),
        kib(gz)
    ))
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}
