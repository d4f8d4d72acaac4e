//! The host's default limits, in a module that imports nothing of the host:
//! the pending table, the store (which reads back no more than the table
//! holds), the state and the command line all name them, and none of those
//! may be imported back by the others (see ARCHITECTURE.md, "Layers").

use std::time::Duration;

/// Default for `--max-pending`.
pub const DEFAULT_MAX_PENDING: usize = 10_000;

/// Default for `--max-streams`: event streams open at once. Each may queue up
/// to the event buffer's byte budget (1 MiB) while its reader stalls.
pub const DEFAULT_MAX_STREAMS: usize = 256;

/// Default for `--max-mcp-sessions`. Sessions of clients that exited without
/// closing them linger until the 24-hour idle timeout, so the cap leaves room
/// for a day of agent restarts; each session costs only a task and a few small
/// channels, so 256 of them stay cheap.
pub const DEFAULT_MAX_MCP_SESSIONS: usize = 256;

/// Default for `--mcp-wait-budget`: how long an MCP call without a progress
/// token (and not a task) waits before it returns `waiting`. Shorter than the
/// 60 s request timeout common MCP clients default to.
pub const DEFAULT_MCP_WAIT_BUDGET: Duration = Duration::from_secs(45);

/// Default for `--max-pending-bytes`: bytes of requests kept at once (64 MiB).
pub const DEFAULT_MAX_PENDING_BYTES: usize = 64 * 1024 * 1024;

/// The most inbox streams open at once (a browser keeps one for all its
/// tabs); one more is refused with 429 `TOO_MANY_STREAMS`.
pub const MAX_INBOX_STREAMS: usize = 32;

/// How often a call with a progress token hears that the person is still
/// answering. Half of the 10 s that clients resetting their timeout on
/// progress may be promised, so one late tick (a busy machine, a slow proxy)
/// still arrives in time; one small SSE frame per 5 s costs nothing.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);
