//! MCP's sub-state: the exchanges, sessions and tasks that MCP's router, its
//! servers and its shutdown task share. [`crate::server::state::AppState`]
//! owns it and hands it to MCP's layers through axum's `FromRef`; it lives
//! here, below both, so the state imports nothing of the MCP room, which asks
//! through the state.

use rmcp::task_manager::TaskManager;
use rmcp::transport::streamable_http_server::session::SessionId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The MCP lifecycle shared by the router (which records exchanges), the
/// servers (which keep tasks) and [`spawn`] (which closes sessions at
/// shutdown). Creating it starts nothing.
#[derive(Clone, Default)]
pub struct McpLifecycle {
    /// POST exchanges whose response is not over yet.
    pub(crate) posts: TaskTracker,
    /// Ends every MCP session and stream (rmcp's cancellation token).
    pub(crate) sessions: CancellationToken,
    /// The MCP tasks of every session: a task outlives the connection and the
    /// session that created it.
    pub(crate) tasks: TaskManager,
    /// Tasks are counted and created one at a time, so the cap is exact.
    pub(crate) task_spawning: Arc<Mutex<()>>,
    /// Fires for an MCP session the moment it is closed.
    pub(crate) session_ends: SessionEnds,
}

impl std::fmt::Debug for McpLifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpLifecycle")
            .field("posts", &self.posts)
            .field("tasks", &self.tasks.running_task_count())
            .finish_non_exhaustive()
    }
}

/// One token per open MCP session that fires the moment the session is
/// closed (`DELETE /mcp`, expiry, shutdown). rmcp cancels a closed session's
/// calls only after letting their responses drain for seconds; a call that
/// watches this token ends at once.
#[derive(Debug, Clone, Default)]
pub struct SessionEnds {
    open: Arc<std::sync::Mutex<HashMap<Arc<str>, CancellationToken>>>,
}

impl SessionEnds {
    pub(crate) fn opened(&self, id: &SessionId) {
        self.lock().entry(id.clone()).or_default();
    }

    pub(crate) fn ended(&self, id: &SessionId) {
        if let Some(end) = self.lock().remove(id) {
            end.cancel();
        }
    }

    /// The token of the open session `id`.
    pub fn of(&self, id: &str) -> Option<CancellationToken> {
        self.lock().get(id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, CancellationToken>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}
