//! The web provider: core's [`UserInteractionProvider`] backed by the pending
//! table, so every asker (the HTTP ask endpoint, MCP, the demo agent) goes
//! through core's `UserInteraction::ask_with`.

use crate::pending::{PendingStore, Registered, Resolution};
use ask_user_core::wire::Outcome;
use ask_user_core::{
    AskContext, AskRequest, ProviderFuture, UserInteractionError, UserInteractionProvider,
};
use std::sync::Arc;
use tokio::time::Instant;

/// Presents questions to the browser tabs of a session through the pending table.
pub struct WebProvider {
    store: Arc<dyn PendingStore>,
}

impl std::fmt::Debug for WebProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebProvider").finish_non_exhaustive()
    }
}

impl WebProvider {
    /// A provider over `store`.
    pub fn new(store: Arc<dyn PendingStore>) -> Self {
        Self { store }
    }
}

/// Resolves the question as `outcome` unless disarmed: the ask future was
/// dropped (agent gone, owner abort) before the question was resolved.
struct AbandonGuard {
    store: Arc<dyn PendingStore>,
    session: String,
    id: String,
    armed: bool,
}

impl AbandonGuard {
    fn resolve(&mut self, outcome: Outcome) -> bool {
        self.armed = false;
        self.store.abort(&self.session, &self.id, outcome)
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if self.armed {
            self.store.abort(&self.session, &self.id, Outcome::Aborted);
        }
    }
}

impl UserInteractionProvider for WebProvider {
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        // Core's budget becomes this runtime's timer, counted from now.
        let deadline = context.timeout.map(|timeout| Instant::now() + timeout);
        Box::pin(async move {
            let session = context.session.as_str();
            let Registered { id, mut waiter } = self.store.register(session, request)?;
            context.presented.set(id.clone());
            let mut guard = AbandonGuard {
                store: self.store.clone(),
                session: session.to_owned(),
                id,
                armed: true,
            };
            let resolution = match deadline {
                None => (&mut waiter).await,
                Some(deadline) => match tokio::time::timeout_at(deadline, &mut waiter).await {
                    Ok(resolution) => resolution,
                    Err(_elapsed) => {
                        if guard.resolve(Outcome::Timeout) {
                            return Err(UserInteractionError::timeout());
                        }
                        // Resolved in the same instant: that resolution stands.
                        waiter.await
                    }
                },
            };
            guard.armed = false;
            match resolution {
                Ok(Resolution::Answered(answer)) => Ok(answer),
                Ok(Resolution::Cancelled) => Err(UserInteractionError::cancelled()),
                Ok(Resolution::Disposed) | Err(_) => Err(UserInteractionError::provider_disposed()),
            }
        })
    }
}
