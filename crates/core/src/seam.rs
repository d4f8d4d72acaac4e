//! The seam: a [`UserInteraction`] service that connects a tool call to whichever
//! UI provider is registered.
//!
//! Core validates the request before any provider sees it, fails with
//! `NO_PROVIDER` when none is registered (no silent fallback), races the
//! provider against the caller's abort signal and the provider's disposal, and
//! validates and normalises the provider's answer before returning it.
//! It is runtime-neutral: no tokio, so a browser-side provider can implement
//! [`UserInteractionProvider`] too.

use crate::answer::AnswerBatch;
use crate::error::UserInteractionError;
use crate::request::AskRequest;
use crate::session::SessionId;
use futures_util::future::{Either, select};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// `Send` on native targets; nothing on wasm32, where futures are single-threaded.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSend: Send + Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + Sync + ?Sized> MaybeSend for T {}
/// `Send` on native targets; nothing on wasm32, where futures are single-threaded.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSend {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSend for T {}

/// The future a provider returns.
#[cfg(not(target_arch = "wasm32"))]
pub type ProviderFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AnswerBatch, UserInteractionError>> + Send + 'a>>;
/// The future a provider returns.
#[cfg(target_arch = "wasm32")]
pub type ProviderFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AnswerBatch, UserInteractionError>> + 'a>>;

/// Presents questions to a person and collects the answer: a web page, a
/// terminal overlay, a test double.
pub trait UserInteractionProvider: MaybeSend {
    /// Presents `request` (already validated) and resolves with the person's
    /// answer, or an error: `ASK_CANCELLED` when the person closed it,
    /// `ASK_TIMEOUT` when `context.timeout` ran out, `ASK_FAILED` when it could
    /// not be presented. The future is dropped when `context.abort` fires; the
    /// provider may also watch the signal to clean up.
    ///
    /// The future may also be dropped *without* the signal firing (the asker
    /// went away: a dropped connection, a client that stopped waiting). A
    /// provider tells the two apart by [`AbortSignal::is_aborted`]: fired means
    /// the asker ended the ask on purpose; not fired means it only stopped
    /// listening, and a provider that can keep the question for a later,
    /// identical ask may do so.
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_>;

    /// Whether every answer this provider resolves with is already normalised
    /// by [`AnswerBatch::normalize`] against the request it was given. Then
    /// [`UserInteraction::ask_with`] passes it on as it is and keeps no copy
    /// of the request while the question waits (a waiting question holds one
    /// parsed request, the provider's, not two). The default, `false`, has the
    /// seam normalise every answer.
    fn answers_normalized(&self) -> bool {
        false
    }
}

/// Who asks, how long they wait and how the asker gives up.
#[derive(Debug, Clone, Default)]
pub struct AskContext {
    /// The conversation the question belongs to.
    pub session: SessionId,
    /// Fires when the asking side gives up on purpose.
    pub abort: AbortSignal,
    /// Give up with `ASK_TIMEOUT` this long after the provider presented the
    /// question; `None` waits as long as the person needs. A budget rather
    /// than an instant, so core stays free of any runtime's clock: the
    /// provider turns it into a timer of its own.
    pub timeout: Option<Duration>,
    /// Where the provider reports the id it presented the question under.
    pub presented: PresentedAs,
    /// Who asks, as the transport learnt it (shown to the person).
    pub asked_by: Option<crate::wire::AskedBy>,
}

impl AskContext {
    /// A context in the default session, without a timeout.
    pub fn new(abort: AbortSignal) -> Self {
        Self {
            abort,
            ..Self::default()
        }
    }

    /// The same context in another session.
    pub fn in_session(mut self, session: SessionId) -> Self {
        self.session = session;
        self
    }

    /// The same context with a timeout.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same context naming who asks.
    pub fn asked_by(mut self, asked_by: Option<crate::wire::AskedBy>) -> Self {
        self.asked_by = asked_by;
        self
    }

    /// The same context reporting the presented id to `presented`.
    pub fn reporting_to(mut self, presented: PresentedAs) -> Self {
        self.presented = presented;
        self
    }
}

/// A cell the provider fills with the id it presented the question under, so
/// the asker can name the question later (e.g. an agent told "still waiting
/// on q_…"). Clones share the cell; the first id set stays.
#[derive(Debug, Clone, Default)]
pub struct PresentedAs {
    id: Arc<OnceLock<String>>,
}

impl PresentedAs {
    /// An empty cell.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the presented id (once; later calls change nothing).
    pub fn set(&self, id: impl Into<String>) {
        let _ = self.id.set(id.into());
    }

    /// The presented id, once the provider reported one.
    pub fn id(&self) -> Option<&str> {
        self.id.get().map(String::as_str)
    }
}

#[derive(Debug, Default)]
struct AbortState {
    aborted: AtomicBool,
    event: event_listener::Event,
}

/// The owner's side of an abort: [`AbortController::abort`] fires every
/// [`AbortSignal`] made from it.
#[derive(Debug, Clone, Default)]
pub struct AbortController {
    state: Arc<AbortState>,
}

/// A cloneable, runtime-neutral abort signal.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal {
    /// `None` for a signal that never fires: it allocates nothing and waits
    /// on nothing (most asks over HTTP carry one for as long as they wait).
    state: Option<Arc<AbortState>>,
}

impl AbortController {
    /// A controller that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal that fires when this controller aborts.
    pub fn signal(&self) -> AbortSignal {
        AbortSignal {
            state: Some(self.state.clone()),
        }
    }

    /// Fires the signal (idempotent).
    pub fn abort(&self) {
        if !self.state.aborted.swap(true, Ordering::SeqCst) {
            self.state.event.notify(usize::MAX);
        }
    }
}

impl AbortSignal {
    /// A signal that never fires.
    pub fn never() -> Self {
        Self::default()
    }

    /// Whether the signal has fired.
    pub fn is_aborted(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|state| state.aborted.load(Ordering::SeqCst))
    }

    /// Resolves once the signal fires (at once if it already has).
    pub async fn aborted(&self) {
        let Some(state) = &self.state else {
            return std::future::pending().await;
        };
        loop {
            if state.aborted.load(Ordering::SeqCst) {
                return;
            }
            let listener = state.event.listen();
            // Checked again after listening so a concurrent abort is not missed.
            if state.aborted.load(Ordering::SeqCst) {
                return;
            }
            listener.await;
        }
    }
}

struct ActiveProvider {
    id: u64,
    provider: Arc<dyn UserInteractionProvider>,
    disposed: AbortController,
}

#[derive(Default)]
struct Slot {
    active: Mutex<Option<ActiveProvider>>,
    next_id: AtomicU64,
}

/// The service a tool calls to ask a person: at most one provider at a time.
#[derive(Clone, Default)]
pub struct UserInteraction {
    slot: Arc<Slot>,
}

impl std::fmt::Debug for UserInteraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserInteraction")
            .field("has_provider", &self.has_provider())
            .finish()
    }
}

/// Keeps a provider registered; dropping it (or [`Registration::dispose`])
/// unregisters the provider and aborts the asks it still holds.
#[must_use = "dropping the registration unregisters the provider"]
pub struct Registration {
    slot: Weak<Slot>,
    id: u64,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .finish()
    }
}

impl Registration {
    /// Unregisters the provider now; its open asks fail with `ASK_ABORTED`.
    pub fn dispose(self) {}
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(slot) = self.slot.upgrade() else {
            return;
        };
        let removed = {
            let mut active = slot.active.lock().unwrap_or_else(|e| e.into_inner());
            match active.as_ref() {
                Some(current) if current.id == self.id => active.take(),
                _ => None,
            }
        };
        if let Some(removed) = removed {
            removed.disposed.abort();
        }
    }
}

impl UserInteraction {
    /// A service with no provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the provider. A second active provider is `DUPLICATE_PROVIDER`.
    pub fn register_provider(
        &self,
        provider: Arc<dyn UserInteractionProvider>,
    ) -> Result<Registration, UserInteractionError> {
        let mut active = self.slot.active.lock().unwrap_or_else(|e| e.into_inner());
        if active.is_some() {
            return Err(UserInteractionError::duplicate_provider());
        }
        let id = self.slot.next_id.fetch_add(1, Ordering::Relaxed);
        *active = Some(ActiveProvider {
            id,
            provider,
            disposed: AbortController::new(),
        });
        Ok(Registration {
            slot: Arc::downgrade(&self.slot),
            id,
        })
    }

    /// Whether a provider is registered.
    pub fn has_provider(&self) -> bool {
        self.slot
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Asks in the default session. See [`UserInteraction::ask_with`].
    pub async fn ask(
        &self,
        request: AskRequest,
        abort: AbortSignal,
    ) -> Result<AnswerBatch, UserInteractionError> {
        self.ask_with(request, AskContext::new(abort)).await
    }

    /// Validates `request`, hands it to the registered provider and returns the
    /// validated, normalised answer. Fails with the request's validation error
    /// (the provider never sees it), `ASK_ABORTED` when `context.abort` fires
    /// (also before a provider is asked) or the provider is disposed meanwhile,
    /// `NO_PROVIDER` when none is registered, or the provider's own error.
    pub async fn ask_with(
        &self,
        request: AskRequest,
        context: AskContext,
    ) -> Result<AnswerBatch, UserInteractionError> {
        request.validate()?;
        if context.abort.is_aborted() {
            return Err(UserInteractionError::aborted());
        }
        let (provider, disposed) = {
            let active = self.slot.active.lock().unwrap_or_else(|e| e.into_inner());
            let active = active
                .as_ref()
                .ok_or_else(UserInteractionError::no_provider)?;
            (active.provider.clone(), active.disposed.signal())
        };
        let abort = context.abort.clone();
        // Kept only to normalise what the provider did not.
        let normalize_against = (!provider.answers_normalized()).then(|| request.clone());
        let answer = provider.ask(request, context);
        let gave_up = pin!(abort.aborted());
        let went_away = pin!(disposed.aborted());
        match select(answer, select(gave_up, went_away)).await {
            Either::Left((answer, _)) => match &normalize_against {
                Some(request) => answer?.normalize(request),
                None => answer,
            },
            Either::Right((Either::Left(_), _)) => Err(UserInteractionError::aborted()),
            Either::Right((Either::Right(_), _)) => Err(UserInteractionError::provider_disposed()),
        }
    }
}
