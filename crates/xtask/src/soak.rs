//! `cargo xtask soak [--minutes N]` (not in CI): builds the host with the
//! `release-native` profile and runs `host/examples/soak.rs` against it, which
//! prints its own summary (asks, answers, losses, duplicates, the host's RSS
//! over time) and fails when an answer was lost or duplicated.

use crate::exec::Ctx;

/// The subcommand's name.
pub const SUBCOMMAND: &str = "soak";

/// Its line in the usage text.
pub const USAGE: &str = "  soak [--minutes N]       build the host (release-native) and soak it for N minutes (default 10):
                           agents and a scripted person through a proxy that cuts and stalls
                           connections, sessions coming and going; prints losses, duplicates, RSS";

/// Runs the soak.
pub fn run(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let minutes = match args {
        [] => "10",
        [flag, minutes] if flag == "--minutes" => minutes.as_str(),
        _ => {
            return Err(format!(
                "usage: cargo xtask soak [--minutes N], got {args:?}"
            ));
        }
    };
    println!("\n==> Building the host (release-native)");
    ctx.run_setup(ctx.cargo([
        "build",
        "--profile",
        "release-native",
        "-p",
        "ask-user-host",
        "--bin",
        "ask-user",
    ]))?;
    let host = ctx.target_dir.join("release-native").join("ask-user");
    println!("\n==> Soaking the host for {minutes} min");
    let mut soak = ctx.cargo([
        "run",
        "--profile",
        "release-native",
        "-p",
        "ask-user-host",
        "--example",
        "soak",
        "--",
        "--minutes",
        minutes,
        "--host-bin",
    ]);
    soak.arg(host);
    ctx.run_setup(soak)
}
