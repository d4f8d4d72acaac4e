//! The page the host serves and carries: Trunk's release build into `dist/`,
//! then the JavaScript embed into `dist/embed/` (see `embed.rs`). `run`,
//! `dist` and `bench` skip either build when its inputs and outputs are as the
//! last build left them (see `stamp.rs`); `test` always builds both.
//!
//! The host's `build.rs` embeds `dist/` when [`PAGE_ENV`] names it; every cargo
//! command that builds the host gets it (see [`with_page`]), so the host is not
//! rebuilt back and forth between commands that set it and commands that do not.

use std::path::PathBuf;
use std::process::Command;

use crate::exec::Ctx;
use crate::stamp::{self, Inputs, Stamp};
use crate::tools;

/// Where Trunk writes the release build (Trunk.toml `dist`).
pub const DIST: &str = "dist";
/// Read by the host's `build.rs`: the page to build into the binary.
pub const PAGE_ENV: &str = "ASK_USER_PAGE_DIST";

/// The absolute path of `dist/`.
pub fn dist(ctx: &Ctx) -> PathBuf {
    ctx.root.join(DIST)
}

/// `command` with [`PAGE_ENV`] naming `dist/`: the host it builds carries the page.
pub fn with_page(ctx: &Ctx, mut command: Command) -> Command {
    command.env(PAGE_ENV, dist(ctx));
    command
}

/// `trunk build --release` (the tools are pinned in Trunk.toml and installed
/// by xtask; the update check would try the network).
pub fn trunk_build(ctx: &Ctx) -> Command {
    let mut command = ctx.command("trunk");
    command
        .args(["build", "--release"])
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    command
}

/// Which build a hash of inputs is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Trunk's page: `frontend/` and the workspace crates it can use.
    Page,
    /// The JavaScript embed: `crates/embed/`, the crates it uses, the example.
    Embed,
}

/// The hash of everything `build` is made from: the workspace crates (all of
/// `crates/` but the other build's own), its own sources, the root build
/// files, the pinned tools, the compiler and the build flags in the environment.
pub fn inputs(ctx: &Ctx, build: Build) -> String {
    let rustc = ctx
        .version_of(&PathBuf::from("rustc"), "-vV")
        .unwrap_or_default();
    let mut inputs = Inputs::new(&ctx.root);
    for path in [
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        "index.html",
        "Trunk.toml",
    ] {
        inputs.path(path);
    }
    let crates = std::fs::read_dir(ctx.root.join("crates"))
        .map(|entries| {
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .unwrap_or_default();
    for name in crates {
        if build == Build::Page && name == "embed" {
            continue;
        }
        inputs.path(&format!("crates/{name}"));
    }
    match build {
        Build::Page => inputs.path("frontend"),
        Build::Embed => inputs.path("examples/embed"),
    };
    inputs
        .text(&format!("{build:?}"))
        .text(tools::TRUNK)
        .text(tools::WASM_BINDGEN)
        .text(tools::WASM_OPT)
        .text(tools::TERSER_NPM)
        .text(&rustc)
        .env_vars(&[
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_",
            "CARGO_PROFILE_",
            "CARGO_TARGET_",
            "TRUNK_",
        ]);
    inputs.finish()
}

fn page_stamp(ctx: &Ctx) -> Stamp {
    Stamp::new(&ctx.target_dir, "page")
}

/// Trunk's files in `dist/` (the embed's folder is the embed's).
fn page_outputs(ctx: &Ctx) -> String {
    let dist = dist(ctx);
    stamp::outputs(&dist, Some(&dist.join(crate::embed::DIR)))
}

/// Builds the page with Trunk unless the last build had the same inputs and
/// left `dist/` as it is. Returns whether it built.
pub fn ensure_page(ctx: &Ctx, inputs: &str) -> Result<bool, String> {
    let stamp = page_stamp(ctx);
    if stamp.matches(inputs, &page_outputs(ctx)) {
        println!(
            "\n==> The page (dist/) is up to date: its inputs did not change since the last build"
        );
        return Ok(false);
    }
    println!("\n==> Building the page with Trunk (release)");
    stamp.clear();
    ctx.run_setup(trunk_build(ctx))?;
    record_page(ctx, inputs)?;
    Ok(true)
}

/// Records a page build that just succeeded (for `test`, which always builds).
pub fn record_page(ctx: &Ctx, inputs: &str) -> Result<(), String> {
    page_stamp(ctx).record(inputs, &page_outputs(ctx))
}

/// Forgets the last page build (a forced build is about to replace it).
pub fn forget_page(ctx: &Ctx) {
    page_stamp(ctx).clear();
}
