//! `cargo xtask soak [--minutes N]` (not in CI): builds the host with the
//! `release-native` profile and runs `host/examples/soak.rs` against it, which
//! prints its own summary (asks, answers, losses, duplicates, the host's RSS
//! over time) and fails when an answer was lost or duplicated. With `--hosts N
//! [--store URL]` it runs `host/examples/soak_shared.rs` instead: N hosts on
//! one PostgreSQL, killed and restarted at random.

use crate::exec::Ctx;

/// The subcommand's name.
pub const SUBCOMMAND: &str = "soak";

/// Its line in the usage text.
pub const USAGE: &str = "  soak [--minutes N]       build the host (release-native) and soak it for N minutes (default 10):
                           agents and a scripted person through a proxy that cuts and stalls
                           connections, sessions coming and going; prints losses, duplicates, RSS
  soak --hosts N [--store postgres://...] [--minutes M]
                           N hosts on one PostgreSQL (its own unless --store; the password in
                           PGPASSWORD), 64 agents, a host killed -9 every 10-30 s and restarted;
                           prints answers lost and delivered twice";

/// Runs the soak.
pub fn run(ctx: &Ctx, args: &[String]) -> Result<(), String> {
    let mut minutes = "10".to_owned();
    let mut hosts = None;
    let mut store = None;
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| {
            format!("usage: cargo xtask soak [--minutes N] [--hosts N [--store URL]], got {args:?}")
        })?;
        match flag.as_str() {
            "--minutes" => minutes = value.clone(),
            "--hosts" => hosts = Some(value.clone()),
            "--store" => store = Some(value.clone()),
            _ => {
                return Err(format!(
                    "usage: cargo xtask soak [--minutes N] [--hosts N [--store URL]], got {args:?}"
                ));
            }
        }
    }
    if store.is_some() && hosts.is_none() {
        return Err("--store needs --hosts N (the shared-store soak)".to_owned());
    }
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
    let example = if hosts.is_some() {
        "soak_shared"
    } else {
        "soak"
    };
    println!("\n==> Soaking for {minutes} min ({example})");
    let mut soak = ctx.cargo([
        "run",
        "--profile",
        "release-native",
        "-p",
        "ask-user-host",
        "--example",
        example,
        "--",
        "--minutes",
        &minutes,
    ]);
    if let Some(hosts) = &hosts {
        soak.args(["--hosts", hosts]);
    }
    if let Some(store) = &store {
        soak.args(["--store", store]);
    }
    soak.arg("--host-bin").arg(host);
    ctx.run_setup(soak)
}
