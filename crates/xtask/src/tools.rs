//! Installing what the build needs, once: each tool is checked by its `--version`
//! output and installed only when missing or at the wrong version.

use std::path::PathBuf;
use std::process::Command;

use crate::exec::Ctx;

/// The wasm target the composer and the page compile to.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// Trunk; newer releases need a newer rustc than 1.95.
pub const TRUNK: &str = "0.21.14";
/// Must equal the `wasm-bindgen` pin in the root Cargo.toml and `[tools]` in Trunk.toml.
pub const WASM_BINDGEN: &str = "0.2.130";
/// binaryen's npm package; Debian's wasm-opt 108 yields a page that never renders.
pub const BINARYEN_NPM: &str = "132.0.0";
/// The version `wasm-opt --version` reports for [`BINARYEN_NPM`] (Trunk.toml: `version_132`).
pub const WASM_OPT: &str = "132";
/// terser's npm package: minifies wasm-bindgen's JS glue of the page (Trunk's
/// post_build hook) and of the embed (`crates/xtask/js/minify-glue.mjs`).
pub const TERSER_NPM: &str = "5.51.4";

/// Makes sure the wasm target, Trunk, wasm-bindgen-cli, wasm-opt and terser are installed.
pub fn ensure_build_tools(ctx: &Ctx) -> Result<(), String> {
    println!("==> Checking build tools");
    ensure_wasm_target(ctx)?;
    ensure_cargo_tool(
        ctx,
        &["trunk"],
        "trunk",
        TRUNK,
        &["--locked"],
        "it compiles from source and may take about 10 minutes on 2 cores",
    )?;
    // No --locked: the crate's lock names a version the registry no longer has.
    ensure_cargo_tool(
        ctx,
        &["wasm-bindgen", "wasm-bindgen-test-runner"],
        "wasm-bindgen-cli",
        WASM_BINDGEN,
        &[],
        "it compiles from source and may take about 3 minutes",
    )?;
    ensure_npm_tools(ctx)
}

fn ensure_wasm_target(ctx: &Ctx) -> Result<(), String> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot.is_some_and(|root| root.join("lib/rustlib").join(WASM_TARGET).is_dir());
    if installed {
        println!("    ok  rust target {WASM_TARGET}");
        return Ok(());
    }
    if ctx.which("rustup").is_none() {
        return Err(format!(
            "the Rust target {WASM_TARGET} is missing and rustup is not on PATH; install it with your Rust distribution"
        ));
    }
    println!("==> Installing the Rust target {WASM_TARGET} with rustup (this may take a minute)");
    let mut command = ctx.command("rustup");
    command.args(["target", "add", WASM_TARGET]);
    ctx.run_setup(command)
}

/// Installs `krate` at `version` with `cargo install` unless every one of `bins`
/// already reports that version.
fn ensure_cargo_tool(
    ctx: &Ctx,
    bins: &[&str],
    krate: &str,
    version: &str,
    extra: &[&str],
    how_long: &str,
) -> Result<(), String> {
    let found: Vec<Option<String>> = bins
        .iter()
        .map(|bin| {
            let path = ctx.which(bin)?;
            ctx.version_of(&path, "--version")
        })
        .collect();
    if found
        .iter()
        .all(|v| v.as_deref().is_some_and(|v| reports_version(v, version)))
    {
        println!("    ok  {krate} {version}");
        return Ok(());
    }
    let current = found
        .first()
        .cloned()
        .flatten()
        .map_or_else(|| "not installed".to_owned(), |v| format!("found `{v}`"));
    println!(
        "==> Installing {krate} {version} with `cargo install` ({current}); {how_long}. Later runs skip this step."
    );
    let mut command = ctx.cargo(["install", krate, "--version", version]);
    command.args(extra);
    ctx.run_setup(command)
}

/// wasm-opt (binaryen) and terser, both from npm into `target/tools`, in one
/// `npm install`: a later install into the same prefix would prune the other.
fn ensure_npm_tools(ctx: &Ctx) -> Result<(), String> {
    // The project-local copies come first on the children's PATH, so this also finds them.
    let at_version = |bin: &str, version: &str| {
        ctx.which(bin).and_then(|path| {
            ctx.version_of(&path, "--version")
                .filter(|v| reports_version(v, version))
                .map(|_| path)
        })
    };
    if let (Some(opt), Some(terser)) = (
        at_version("wasm-opt", WASM_OPT),
        at_version("terser", TERSER_NPM),
    ) {
        println!("    ok  wasm-opt {WASM_OPT} ({})", opt.display());
        println!("    ok  terser {TERSER_NPM} ({})", terser.display());
        return Ok(());
    }
    let Some(npm) = ctx.which("npm") else {
        return Err(format!(
            "wasm-opt {WASM_OPT} or terser {TERSER_NPM} is missing and npm is not installed: \
             install Node.js with npm (Debian: `apt-get install npm`), or put binaryen \
             {WASM_OPT}'s wasm-opt and terser {TERSER_NPM} on PATH"
        ));
    };
    println!(
        "==> Installing wasm-opt {WASM_OPT} (npm package binaryen@{BINARYEN_NPM}) and terser \
         {TERSER_NPM} into {}; this may take a minute",
        ctx.tools_dir.display()
    );
    std::fs::create_dir_all(&ctx.tools_dir)
        .map_err(|err| format!("could not create {}: {err}", ctx.tools_dir.display()))?;
    let mut command = ctx.command(npm);
    command
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&ctx.tools_dir)
        .arg(format!("binaryen@{BINARYEN_NPM}"))
        .arg(format!("terser@{TERSER_NPM}"));
    ctx.run_setup(command)
}

/// npm packages the tests drive the host with (real clients), installed into
/// [`node_test_dir`] in one `npm install`: a later `npm install` into the same
/// prefix would prune what it was not given.
pub const NODE_TEST_PACKAGES: &[(&str, &str)] = &[
    // The official TypeScript MCP SDK: tests/tests/mcp_ts_sdk.rs.
    ("@modelcontextprotocol/sdk", "1.32.2"),
    // The accessibility checker the page is audited with: tests/tests/e2e_a11y.rs.
    ("axe-core", "4.14.1"),
];

/// Where [`NODE_TEST_PACKAGES`] go (apart from wasm-opt's prefix, which they
/// would prune).
pub fn node_test_dir(ctx: &Ctx) -> PathBuf {
    ctx.tools_dir.join("node-tests")
}

/// Makes sure every [`NODE_TEST_PACKAGES`] is installed at its version;
/// returns the `node_modules` folder the tests find them in.
pub fn ensure_node_test_packages(ctx: &Ctx) -> Result<PathBuf, String> {
    let dir = node_test_dir(ctx);
    let modules = dir.join("node_modules");
    let installed = |name: &str, version: &str| {
        std::fs::read_to_string(modules.join(name).join("package.json"))
            .ok()
            .is_some_and(|text| text.contains(&format!("\"version\": \"{version}\"")))
    };
    if NODE_TEST_PACKAGES
        .iter()
        .all(|(name, v)| installed(name, v))
    {
        for (name, version) in NODE_TEST_PACKAGES {
            println!("    ok  {name} {version} (npm, for the tests)");
        }
        return Ok(modules);
    }
    let (Some(node), Some(npm)) = (ctx.which("node"), ctx.which("npm")) else {
        return Err(
            "the tests drive the host with real Node.js clients: install Node.js with npm \
             (Debian: `apt-get install nodejs npm`)"
                .to_owned(),
        );
    };
    let wanted: Vec<String> = NODE_TEST_PACKAGES
        .iter()
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    println!(
        "==> Installing {} with npm into {} (Node.js {}); this takes a few seconds",
        wanted.join(", "),
        dir.display(),
        ctx.version_of(&node, "--version").unwrap_or_default()
    );
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("could not create {}: {err}", dir.display()))?;
    let mut command = ctx.command(npm);
    command
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&dir)
        .args(&wanted);
    ctx.run_setup(command)?;
    Ok(modules)
}

/// Makes sure headless Chromium and its WebDriver are installed; returns the chromedriver path.
pub fn ensure_browser(ctx: &Ctx) -> Result<PathBuf, String> {
    if let Some(found) = find_browser(ctx) {
        println!("    ok  chromium + chromedriver ({})", found.display());
        return Ok(found);
    }
    if !can_apt_install(ctx) {
        return Err(
            "the browser tests need Chromium and chromedriver: install them \
             (Debian/Ubuntu: `sudo apt-get install chromium chromium-driver`), \
             or set CHROMEDRIVER to a chromedriver that matches your Chromium"
                .to_owned(),
        );
    }
    println!(
        "==> Installing Debian's chromium and chromium-driver with apt-get; this may take a few minutes"
    );
    apt_install(ctx, &["chromium", "chromium-driver"])?;
    find_browser(ctx).ok_or_else(|| {
        "apt-get finished but chromium/chromedriver are still not on PATH".to_owned()
    })
}

/// Makes sure Debian's PostgreSQL server is installed: the shared-store tests
/// (`tests/tests/shared_store.rs`) start one of their own from
/// `/usr/lib/postgresql/<version>/bin`, and fail saying so when it is missing.
pub fn ensure_postgres(ctx: &Ctx) -> Result<(), String> {
    let installed = || {
        std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|version| version.path().join("bin/initdb").is_file())
        })
    };
    if installed() {
        println!("    ok  postgresql (/usr/lib/postgresql)");
        return Ok(());
    }
    if !can_apt_install(ctx) {
        return Err(
            "the shared-store tests need PostgreSQL's server binaries: install them \
             (Debian/Ubuntu: `sudo apt-get install postgresql`)"
                .to_owned(),
        );
    }
    println!("==> Installing Debian's postgresql with apt-get; this may take a minute");
    apt_install(ctx, &["postgresql"])?;
    if installed() {
        Ok(())
    } else {
        Err("apt-get finished but /usr/lib/postgresql/<version>/bin/initdb is missing".to_owned())
    }
}

/// Makes sure `brotli` is installed: the page's size is weighed with it, as
/// the host compresses it (quality 11).
pub fn ensure_brotli(ctx: &Ctx) -> Result<(), String> {
    if ctx.which("brotli").is_some() {
        println!("    ok  brotli");
        return Ok(());
    }
    if !can_apt_install(ctx) {
        return Err(
            "weighing the page needs the `brotli` command: install it (Debian/Ubuntu: `sudo apt-get install brotli`)"
                .to_owned(),
        );
    }
    println!("==> Installing Debian's brotli with apt-get (the page is weighed with it)");
    apt_install(ctx, &["brotli"])?;
    ctx.which("brotli")
        .map(drop)
        .ok_or_else(|| "apt-get finished but brotli is still not on PATH".to_owned())
}

fn can_apt_install(ctx: &Ctx) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    root && ctx.which("apt-get").is_some()
}

fn apt_install(ctx: &Ctx, packages: &[&str]) -> Result<(), String> {
    let mut update = ctx.command("apt-get");
    update.arg("update");
    ctx.run_setup(update)?;
    let mut install = ctx.command("apt-get");
    install
        .args(["install", "-y"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive");
    ctx.run_setup(install)
}

fn find_browser(ctx: &Ctx) -> Option<PathBuf> {
    let driver = std::env::var_os("CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| ctx.which("chromedriver"))?;
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| ctx.which(name));
    browser.is_some().then_some(driver)
}

/// Whether a `--version` line names exactly `version` (`trunk 0.21.14`,
/// `wasm-opt version 132 (version_132)`), not a version that merely starts with it.
pub fn reports_version(output: &str, version: &str) -> bool {
    output
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .any(|word| word.strip_prefix('v').unwrap_or(word) == version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_version_accepts_each_tools_own_format() {
        assert!(reports_version("trunk 0.21.14", TRUNK));
        assert!(reports_version("wasm-bindgen 0.2.130", WASM_BINDGEN));
        assert!(reports_version(
            "wasm-opt version 132 (version_132)",
            WASM_OPT
        ));
        assert!(reports_version("terser 5.51.4", TERSER_NPM));
    }

    #[test]
    fn reports_version_rejects_other_versions_and_prefixes() {
        assert!(!reports_version("trunk 0.21.1", TRUNK));
        assert!(!reports_version("wasm-bindgen 0.2.1300", WASM_BINDGEN));
        assert!(!reports_version("wasm-opt version 108", WASM_OPT));
        assert!(!reports_version("", WASM_OPT));
    }
}
