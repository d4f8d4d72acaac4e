//! The JavaScript embed (crates/embed, package ask-user-embed): `cargo build` for
//! wasm32, `wasm-bindgen --target web`, `wasm-opt -Oz` and terser for the JS
//! glue (as Trunk and its post_build hook do for the page), with the
//! composer's CSS and the example page, into a staging folder
//! (`target/embed-out/`), then copied into `dist/embed/`. The host serves that
//! folder at `/embed/` (and carries it when built with the page).
//!
//! The staging folder survives Trunk, which replaces all of `dist/`: after a
//! page build only the copy is redone. Files are copied only when they differ,
//! so an unchanged embed leaves `dist/` untouched (and the host unbuilt).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exec::Ctx;
use crate::stamp::{self, Stamp};
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

fn staging(ctx: &Ctx) -> PathBuf {
    ctx.target_dir.join("embed-out")
}

fn out(ctx: &Ctx) -> PathBuf {
    crate::page::dist(ctx).join(DIR)
}

fn stamp(ctx: &Ctx) -> Stamp {
    Stamp::new(&ctx.target_dir, "embed")
}

/// `cargo xtask build-embed`: builds the embed (always) into `dist/embed/`.
pub fn build_forced(ctx: &Ctx) -> Result<(), String> {
    let inputs = crate::page::inputs(ctx, crate::page::Build::Embed);
    stamp(ctx).clear();
    build(ctx)?;
    stamp(ctx).record(&inputs, &stamp::outputs(&staging(ctx), None))?;
    sync(ctx)
}

/// Builds the embed unless the last build had the same inputs and its output
/// is untouched; then makes `dist/embed/` hold it.
pub fn ensure(ctx: &Ctx, inputs: &str) -> Result<(), String> {
    let stamp = stamp(ctx);
    if stamp.matches(inputs, &stamp::outputs(&staging(ctx), None)) {
        println!("\n==> The embed is up to date: its inputs did not change since the last build");
    } else {
        stamp.clear();
        build(ctx)?;
        stamp.record(inputs, &stamp::outputs(&staging(ctx), None))?;
    }
    sync(ctx)
}

/// Builds the embed into the staging folder (replacing it).
fn build(ctx: &Ctx) -> Result<(), String> {
    let out = staging(ctx);
    let bindgen_dir = ctx.target_dir.join("embed-bindgen");
    println!("\n==> Building the embed (crates/embed)");
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
        .arg(&bindgen_dir)
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
        .arg(bindgen_dir.join(format!("{NAME}_bg.wasm")));
    ctx.run_setup(opt)?;
    let copies = [
        (bindgen_dir.join(format!("{NAME}.js")), format!("{NAME}.js")),
        (
            bindgen_dir.join(format!("{NAME}.d.ts")),
            format!("{NAME}.d.ts"),
        ),
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
    // The glue minified as the page's is (Trunk's post_build hook): 2.6 KB brotli.
    let mut minify = ctx.command("node");
    minify
        .arg(ctx.root.join("crates/xtask/js/minify-glue.mjs"))
        .arg(out.join(format!("{NAME}.js")));
    ctx.run_setup(minify)?;
    match crate::size::weigh(&crate::size::embed_files(&out)) {
        Ok(weight) => println!(
            "    embed (js + wasm): {:.1} KB brotli, {:.1} KiB gzipped, {:.1} KiB as built",
            weight.brotli as f64 / 1000.0,
            weight.gzip as f64 / 1024.0,
            weight.raw as f64 / 1024.0
        ),
        Err(err) => println!("    embed: could not weigh it: {err}"),
    }
    Ok(())
}

/// Makes `dist/embed/` hold exactly the staging folder's files, writing only
/// those that differ.
fn sync(ctx: &Ctx) -> Result<(), String> {
    let (from, to) = (staging(ctx), out(ctx));
    std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
    let names = |dir: &Path| -> Result<Vec<std::ffi::OsString>, String> {
        std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .map(|entry| entry.map(|e| e.file_name()).map_err(|e| e.to_string()))
            .collect()
    };
    let wanted = names(&from)?;
    for name in names(&to)? {
        if !wanted.contains(&name) {
            let path = to.join(&name);
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    for name in wanted {
        let (source, target) = (from.join(&name), to.join(&name));
        let bytes = std::fs::read(&source).map_err(|e| format!("{}: {e}", source.display()))?;
        if std::fs::read(&target).ok().as_deref() != Some(&bytes[..]) {
            std::fs::write(&target, &bytes).map_err(|e| format!("{}: {e}", target.display()))?;
        }
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}
