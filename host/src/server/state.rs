//! The application state shared by every route: configuration, the pending
//! table, core's interaction service with the web provider, the capacity
//! limit and the shutdown signal.

use crate::server::error::ApiError;
use crate::server::limits::{DEFAULT_MAX_PENDING_BYTES, MAX_INBOX_STREAMS};
use crate::server::mcp_state::McpLifecycle;
use crate::server::pending::{
    DEFAULT_DETACH_GRACE, PendingConfig, PendingLimit, PendingTable, Subscription,
};
use crate::server::provider::WebProvider;
use crate::server::store::{EphemeralStore, Store, StoreError, Write, now_ms};
use ask_user_core::wire::{AnsweredBy, AskedBy, MessageCreated, Role};
use ask_user_core::{
    AbortSignal, AnswerBatch, AskContext, AskRequest, ErrorCode, PresentedAs, Registration,
    SessionId, UserInteraction, UserInteractionError,
};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::server::guard::random_token;
pub use crate::server::limits::{
    DEFAULT_MAX_MCP_SESSIONS, DEFAULT_MAX_PENDING, DEFAULT_MAX_STREAMS, DEFAULT_MCP_WAIT_BUDGET,
};
use tokio_util::sync::CancellationToken;

/// How the host runs (what `ask-user serve` was given).
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The secret every `/api` call (but health) must present.
    pub token: String,
    /// The port the host is reachable on; allowed `Origin`s carry it.
    pub port: u16,
    /// Host names allowed besides loopback (`--allow-host`), without port.
    pub allow_hosts: Vec<String>,
    /// At most this many questions are kept at once (`--max-pending`):
    /// attached, detached, and resolutions held for an asker that went away.
    pub max_pending: usize,
    /// At most this many bytes of requests are kept at once, each counted
    /// twice its canonical JSON (`--max-pending-bytes`).
    pub max_pending_bytes: usize,
    /// At most this many event streams are open at once (`--max-streams`).
    pub max_streams: usize,
    /// At most this many MCP sessions are open at once (`--max-mcp-sessions`).
    pub max_mcp_sessions: usize,
    /// The built frontend to serve at `/` (`--dist`).
    pub dist: Option<PathBuf>,
    /// Whether the web provider is registered (`--no-web` turns it off).
    pub web: bool,
    /// Whether the demo agent runs in session `default` (`--demo`).
    pub demo: bool,
    /// How long a detached question, or a resolution no call collected, is
    /// kept for the asker to come back (`--detach-grace`); zero aborts a
    /// question as soon as its asker goes away.
    pub detach_grace: Duration,
    /// How long an MCP call without a progress token that is not a task waits
    /// before it returns `waiting` (`--mcp-wait-budget`); `None` waits as long
    /// as the person needs. Unused when `detach_grace` is zero.
    pub mcp_wait_budget: Option<Duration>,
    /// How often an MCP call with a progress token hears that the person is
    /// still answering ([`crate::server::limits::PROGRESS_INTERVAL`]; the hidden
    /// `--progress-interval` shortens it for tests only).
    pub progress_interval: Duration,
    /// Resolved questions and messages older than this many days are pruned
    /// from the record at start and hourly (`--keep-days`); 0 keeps them.
    pub keep_days: u32,
    /// The origin a paired device reaches the person's side through
    /// (`--remote https://NAME[:PORT]`), besides loopback.
    pub remote: Option<crate::server::guard::RemoteOrigin>,
    /// Whether the agents' endpoints (`…/ask`, `/mcp`) also answer on the
    /// remote origin, with the master token (`--remote-agents`).
    pub remote_agents: bool,
    /// How long a pairing code may be used ([`crate::server::devices::PAIRING_LIFE`];
    /// shorter only in tests, through the hidden `--pairing-life-ms`).
    pub pairing_life: Duration,
    /// Web Push to paired devices that asked for it (on with `--remote`).
    pub push: Option<crate::server::push::service::PushConfig>,
    /// The ntfy topic new questions are also posted to (`--ntfy URL`).
    pub ntfy: Option<crate::server::push::ntfy::NtfyTarget>,
}

impl HostConfig {
    /// A configuration with this token and port and every default.
    pub fn new(token: impl Into<String>, port: u16) -> Self {
        Self {
            token: token.into(),
            port,
            allow_hosts: Vec::new(),
            max_pending: DEFAULT_MAX_PENDING,
            max_pending_bytes: DEFAULT_MAX_PENDING_BYTES,
            max_streams: DEFAULT_MAX_STREAMS,
            max_mcp_sessions: DEFAULT_MAX_MCP_SESSIONS,
            dist: None,
            web: true,
            demo: false,
            detach_grace: DEFAULT_DETACH_GRACE,
            mcp_wait_budget: Some(DEFAULT_MCP_WAIT_BUDGET),
            progress_interval: crate::server::limits::PROGRESS_INTERVAL,
            keep_days: crate::server::store::DEFAULT_KEEP_DAYS,
            remote: None,
            remote_agents: false,
            pairing_life: crate::server::devices::PAIRING_LIFE,
            push: None,
            ntfy: None,
        }
    }
}

/// How one ask may end early.
#[derive(Debug, Clone, Default)]
pub struct AskOptions {
    /// Give up with `ASK_TIMEOUT` (outcome `timeout`) after this long.
    pub timeout: Option<Duration>,
    /// Give up with `ASK_ABORTED` (outcome `aborted`) when this fires.
    pub abort: AbortSignal,
    /// Receives the id of the question the person sees.
    pub presented: PresentedAs,
    /// Who asks (shown with the question).
    pub asked_by: Option<AskedBy>,
}

struct Inner {
    config: HostConfig,
    pending: Arc<PendingTable>,
    record: Arc<dyn Store>,
    interaction: UserInteraction,
    registration: Mutex<Option<Registration>>,
    shutdown: CancellationToken,
    guard: Arc<crate::server::guard::Guard>,
    mcp: McpLifecycle,
    streams: Arc<tokio::sync::Semaphore>,
    inbox_streams: Arc<tokio::sync::Semaphore>,
    /// Event streams open now (pages connected).
    pages: Arc<std::sync::atomic::AtomicUsize>,
    /// This run's id, for `POST /api/page-opener`.
    run: String,
    /// Paired devices and open pairings.
    devices: Arc<crate::server::devices::Devices>,
    /// People and agent tokens (issue 24).
    people: Arc<crate::server::people::People>,
    /// Push to paired devices, when on.
    push: Option<Arc<crate::server::push::service::Push>>,
    /// Whether the person is looking at a page.
    presence: Arc<crate::server::push::presence::Presence>,
    /// `config.remote`, shared with the rooms' sub-states.
    remote: Option<Arc<crate::server::guard::RemoteOrigin>>,
}

/// Counts a page as connected while held (see [`AppState::page_connected`]).
#[derive(Debug)]
pub struct PageConnected(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for PageConnected {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Everything the routes share; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("port", &self.inner.config.port)
            .field("web", &self.inner.config.web)
            .field("pending", &self.inner.pending.pending_count())
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over an in-memory pending table sized by `config`, recording
    /// nothing (`--ephemeral`).
    pub fn new(config: HostConfig) -> Self {
        Self::recording(config, Arc::new(EphemeralStore))
    }

    /// State over an in-memory pending table sized by `config` that keeps its
    /// record in `record`, and puts back what `record` still had open
    /// (pending questions detached, held resolutions held).
    pub fn recording(config: HostConfig, record: Arc<dyn Store>) -> Self {
        let pending = PendingTable::with_journal(
            PendingConfig {
                detach_grace: config.detach_grace,
                max_kept: config.max_pending,
                max_bytes: config.max_pending_bytes,
                ..PendingConfig::default()
            },
            Some(record.clone()),
        );
        let restored = record.restored();
        let (kept, held) = (restored.pending.len(), restored.held.len());
        pending.restore(restored);
        let pending = Arc::new(pending);
        if kept + held > 0 {
            tracing::info!(
                pending = kept,
                held,
                "restored from the store: pending questions detached, resolutions held"
            );
        }
        Self::with_parts(config, pending, record)
    }

    /// State over `pending` (which applies its own limit and detach grace),
    /// recording nothing; registers the web provider unless `config.web` is false.
    pub fn with_pending(config: HostConfig, pending: Arc<PendingTable>) -> Self {
        Self::with_parts(config, pending, Arc::new(EphemeralStore))
    }

    fn with_parts(config: HostConfig, pending: Arc<PendingTable>, record: Arc<dyn Store>) -> Self {
        let interaction = UserInteraction::new();
        let registration = config.web.then(|| {
            let provider = WebProvider::recording(pending.clone(), record.clone());
            interaction
                .register_provider(Arc::new(provider))
                .expect("a fresh UserInteraction has no provider")
        });
        let restored = record.restored();
        let kept_devices = restored.devices;
        let push = config.push.clone().map(|push| {
            Arc::new(crate::server::push::service::Push::new(
                push,
                &restored.push_subscriptions,
                restored.vapid_private_key.as_deref(),
            ))
        });
        let people = Arc::new(crate::server::people::People::new(
            restored.people,
            restored.agents,
        ));
        let devices = Arc::new(crate::server::devices::Devices::new(
            kept_devices,
            config.pairing_life,
        ));
        if let Some(shared) = record.shared() {
            // Several hosts: the table and the devices follow the record
            // (other hosts' questions, answers, detaches, pairings and
            // revocations, people and agent tokens, push subscriptions) from
            // now on.
            shared.follow(
                pending.clone(),
                devices.clone(),
                people.clone(),
                push.clone()
                    .map(|push| push as Arc<dyn crate::server::store::FollowingPush>),
            );
        }
        let config_remote = config.remote.clone().map(Arc::new);
        Self {
            inner: Arc::new(Inner {
                guard: Arc::new(crate::server::guard::Guard::new(&config.token)),
                streams: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
                config,
                pending,
                record,
                interaction,
                registration: Mutex::new(registration),
                shutdown: CancellationToken::new(),
                mcp: McpLifecycle::default(),
                inbox_streams: Arc::new(tokio::sync::Semaphore::new(MAX_INBOX_STREAMS)),
                pages: Default::default(),
                run: random_token(),
                devices,
                people,
                push,
                presence: Default::default(),
                remote: config_remote,
            }),
        }
    }

    /// Counts an event stream (a page) as connected until the guard drops.
    pub fn page_connected(&self) -> PageConnected {
        self.inner
            .pages
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        PageConnected(self.inner.pages.clone())
    }

    /// Whether a page may be opened now (none is connected), and this run's
    /// id. It changes nothing: any token holder may ask, so the answer must
    /// not be something one caller can use up for the others (see
    /// `client::mcp::opener` for how one window per run is kept).
    pub fn page_opener(&self) -> ask_user_core::wire::PageOpener {
        let pages = self.inner.pages.load(std::sync::atomic::Ordering::SeqCst);
        ask_user_core::wire::PageOpener {
            open: pages == 0,
            pages,
            run: self.inner.run.clone(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// This run's cookie and the throttle of wrong tokens.
    pub fn guard(&self) -> &crate::server::guard::Guard {
        &self.inner.guard
    }

    /// Paired devices and open pairings.
    pub fn devices(&self) -> &crate::server::devices::Devices {
        &self.inner.devices
    }

    /// People and agent tokens.
    pub fn people(&self) -> &crate::server::people::People {
        &self.inner.people
    }

    /// The open inbox streams' permits (see [`MAX_INBOX_STREAMS`]).
    pub fn inbox_streams(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.inner.inbox_streams
    }

    /// The pending table.
    pub fn pending(&self) -> &Arc<PendingTable> {
        &self.inner.pending
    }

    /// The durable record.
    pub fn record(&self) -> &Arc<dyn Store> {
        &self.inner.record
    }

    /// The person's answer to question `id`: validated by core, written to
    /// the record, then claimed (the first answer written wins). `Ok` only
    /// once it is kept: a write failure is `STORE_UNAVAILABLE`.
    pub async fn answer(
        &self,
        session: &SessionId,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), ApiError> {
        self.answer_by(session, id, answer, None).await
    }

    /// [`AppState::answer`], the record naming who answered (the page or a
    /// paired device).
    pub async fn answer_by(
        &self,
        session: &SessionId,
        id: &str,
        answer: AnswerBatch,
        by: Option<AnsweredBy>,
    ) -> Result<(), ApiError> {
        let session = session.as_str();
        let answer = self.inner.pending.check_answer(session, id, answer)?;
        let write = Write::Answered {
            id: id.to_owned(),
            answer: answer.clone(),
            at_ms: now_ms(),
            by: by.clone(),
        };
        self.resolve_recorded(session, id, write).await?;
        match self.inner.pending.claim_by(session, id, answer, by) {
            // The record took this answer (the write above changed its row,
            // so no other answer can be there), and a shared record's
            // re-read of that row reached the table before this claim: the
            // table's answer is this one, already delivered.
            Err(_)
                if self.inner.pending.ended_how(session, id)
                    == Some(crate::server::pending::table::Ended::Answered) =>
            {
                Ok(())
            }
            claimed => Ok(claimed?),
        }
    }

    /// The person closed question `id`: written to the record, then claimed
    /// like an answer.
    pub async fn cancel(&self, session: &SessionId, id: &str) -> Result<(), ApiError> {
        self.cancel_by(session, id, None).await
    }

    /// [`AppState::cancel`], the record naming who cancelled.
    pub async fn cancel_by(
        &self,
        session: &SessionId,
        id: &str,
        by: Option<AnsweredBy>,
    ) -> Result<(), ApiError> {
        let session = session.as_str();
        self.inner.pending.check_pending(session, id)?;
        let write = Write::Cancelled {
            id: id.to_owned(),
            at_ms: now_ms(),
            by: by.clone(),
        };
        self.resolve_recorded(session, id, write).await?;
        match self.inner.pending.cancel_by(session, id, by) {
            // As for an answer: the record took this cancel first.
            Err(_)
                if self.inner.pending.ended_how(session, id)
                    == Some(crate::server::pending::table::Ended::Cancelled) =>
            {
                Ok(())
            }
            cancelled => Ok(cancelled?),
        }
    }

    /// Writes the person's resolution; the record decides which one came
    /// first, so two tabs never both win.
    async fn resolve_recorded(
        &self,
        session: &str,
        id: &str,
        write: Write,
    ) -> Result<(), ApiError> {
        let applied = self
            .inner
            .record
            .submit(write)
            .kept()
            .await
            .map_err(ApiError::Store)?;
        if applied {
            return Ok(());
        }
        // Another answer or cancel was written first; its claim follows.
        Err(UserInteractionError::not_pending(format!(
            "question {id:?} is not pending in session {session:?}: it was already answered or cancelled"
        ))
        .into())
    }

    /// Core's interaction service (with the web provider unless `--no-web`).
    ///
    /// Ask through [`AppState::ask`] instead: it reports `--max-pending` as 429.
    pub fn interaction(&self) -> &UserInteraction {
        &self.inner.interaction
    }

    /// Whether the web provider is registered (false with `--no-web` and after shutdown).
    pub fn has_web_provider(&self) -> bool {
        self.inner.interaction.has_provider()
    }

    /// Asks the person through core's seam in `session` and waits for the
    /// validated, normalised answer.
    ///
    /// The one way for every asker (HTTP ask endpoint, MCP, demo agent) to ask:
    /// an identical ask in the same session attaches to a detached question
    /// (or collects its held resolution); past `--max-pending` it is refused
    /// with `TOO_MANY_PENDING`. Firing `options.abort` resolves the question
    /// `aborted`; dropping the future without that detaches it (see
    /// [`crate::server::provider`]).
    pub async fn ask(
        &self,
        session: &SessionId,
        request: AskRequest,
        options: AskOptions,
    ) -> Result<AnswerBatch, ApiError> {
        // Core validates again in ask_with; validating first reports a bad
        // request as itself, even while shutting down.
        request.validate()?;
        if self.is_shutting_down() {
            return Err(UserInteractionError::provider_disposed().into());
        }
        let context = AskContext::new(options.abort)
            .in_session(session.clone())
            .with_timeout(options.timeout)
            .reporting_to(options.presented)
            .asked_by(options.asked_by);
        match self.inner.interaction.ask_with(request, context).await {
            // The provider was unregistered by a shutdown that began meanwhile.
            Err(e) if e.code == ErrorCode::NoProvider && self.is_shutting_down() => {
                Err(UserInteractionError::provider_disposed().into())
            }
            // The provider's refusals, by the cause they carry.
            Err(e) => Err(if let Some(&limit) = e.cause::<PendingLimit>() {
                ApiError::TooManyPending { limit }
            } else if let Some(error) = e.cause::<StoreError>() {
                ApiError::Store(error.clone())
            } else {
                ApiError::Interaction(e)
            }),
            Ok(answer) => Ok(answer),
        }
    }

    /// Subscribes to `session`'s events: the replay (pending questions, then
    /// `session/synced`), then everything live (`question/*`, `message/created`).
    pub fn subscribe(&self, session: &SessionId) -> Subscription {
        self.inner.pending.subscribe(session.as_str())
    }

    /// Push to paired devices, when on (`--remote`).
    pub fn push(&self) -> Option<&Arc<crate::server::push::service::Push>> {
        self.inner.push.as_ref()
    }

    /// Whether the person is looking at a page.
    pub fn presence(&self) -> &crate::server::push::presence::Presence {
        &self.inner.presence
    }

    /// Room for one more event stream (held for as long as it is open), or
    /// 429 `TOO_MANY_STREAMS` when `--max-streams` are open.
    pub fn open_stream(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        self.inner
            .streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::TooManyStreams {
                limit: self.inner.config.max_streams,
            })
    }

    /// Writes a transcript message to the record, then posts it to
    /// `session`'s streams (`message/created`).
    pub async fn post_message(
        &self,
        session: &SessionId,
        role: Role,
        text: impl Into<String>,
    ) -> Result<MessageCreated, ApiError> {
        self.post_message_by(session, role, text, None).await
    }

    /// [`AppState::post_message`], the record naming who wrote it (the page
    /// or a paired device).
    pub async fn post_message_by(
        &self,
        session: &SessionId,
        role: Role,
        text: impl Into<String>,
        by: Option<AnsweredBy>,
    ) -> Result<MessageCreated, ApiError> {
        let at_ms = now_ms();
        let message = MessageCreated {
            id: crate::server::pending::random_id("m_"),
            role,
            text: text.into(),
            at_ms,
            by,
        };
        let write = Write::Message {
            session: session.as_str().to_owned(),
            message: message.clone(),
            at_ms,
        };
        self.inner
            .record
            .submit(write)
            .kept()
            .await
            .map_err(ApiError::Store)?;
        Ok(self
            .inner
            .pending
            .post_message_as(session.as_str(), message))
    }

    /// The handle that shuts the host down.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            state: self.clone(),
        }
    }

    /// Fires once shutdown has begun (streams and background tasks end on it).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    /// MCP's exchanges and sessions, shared by its router and its shutdown task.
    pub fn mcp_lifecycle(&self) -> &McpLifecycle {
        &self.inner.mcp
    }
}

/// The devices room's sub-state, for its handlers.
impl axum::extract::FromRef<AppState> for crate::server::devices::DevicesRoom {
    fn from_ref(state: &AppState) -> Self {
        let inner = &state.inner;
        Self {
            devices: inner.devices.clone(),
            record: inner.record.clone(),
            guard: inner.guard.clone(),
            remote: inner.remote.clone(),
            push: inner
                .push
                .clone()
                .map(|push| push as Arc<dyn crate::server::credential::ForgetsDevices>),
        }
    }
}

/// The people room's sub-state, for its handlers.
impl axum::extract::FromRef<AppState> for crate::server::people::PeopleRoom {
    fn from_ref(state: &AppState) -> Self {
        let inner = &state.inner;
        Self {
            people: inner.people.clone(),
            devices: inner.devices.clone(),
            pending: inner.pending.clone(),
            record: inner.record.clone(),
            push: inner
                .push
                .clone()
                .map(|push| push as Arc<dyn crate::server::credential::ForgetsDevices>),
        }
    }
}

/// The people's rules read the people and the table of the whole state too.
impl crate::server::people::PeopleHost for AppState {
    fn people(&self) -> &crate::server::people::People {
        AppState::people(self)
    }

    fn pending(&self) -> &Arc<PendingTable> {
        AppState::pending(self)
    }
}

/// The push room's sub-state, for its routes and its task.
impl axum::extract::FromRef<AppState> for crate::server::push::service::PushRoom {
    fn from_ref(state: &AppState) -> Self {
        let inner = &state.inner;
        Self {
            push: inner.push.clone(),
            presence: inner.presence.clone(),
            record: inner.record.clone(),
            pending: inner.pending.clone(),
            people: inner.people.clone(),
            devices: inner.devices.clone(),
            shutdown: inner.shutdown.clone(),
            ntfy: inner.config.ntfy.clone(),
            remote: inner.remote.clone(),
            port: inner.config.port,
            detach_grace: inner.config.detach_grace,
        }
    }
}

/// MCP's sub-state, for its layers (`State<McpLifecycle>`).
impl axum::extract::FromRef<AppState> for McpLifecycle {
    fn from_ref(state: &AppState) -> Self {
        state.inner.mcp.clone()
    }
}

/// Shuts the host down: see [`ShutdownHandle::shutdown`].
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    state: AppState,
}

impl ShutdownHandle {
    /// Resolves every pending question, attached or detached, as `disposed`
    /// (their asks fail with `ASK_ABORTED`), drops the held resolutions (an
    /// answer among them is logged as never delivered), refuses new asks,
    /// unregisters the web provider and signals streams and the server to
    /// finish. Idempotent.
    pub fn shutdown(&self) {
        let inner = &self.state.inner;
        let disposed = inner.pending.dispose_all();
        if disposed > 0 {
            tracing::info!(disposed, "resolved pending questions as disposed");
        }
        let registration = inner
            .registration
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(registration);
        inner.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::wire::PageOpener;

    /// A record whose follower re-reads an answer's row before the answer's
    /// claim reaches the table (a shared record's re-read of a question just
    /// taken, landing between the write and the claim).
    struct RereadFirst {
        pending: std::sync::OnceLock<Arc<PendingTable>>,
        session: String,
    }

    impl Store for RereadFirst {
        fn submit(&self, write: Write) -> crate::server::store::Ticket {
            if let Write::Answered {
                id,
                answer,
                at_ms,
                by,
            } = write
            {
                let pending = self.pending.get().expect("the table is set");
                pending.observe([crate::server::pending::Observed {
                    session: self.session.clone(),
                    id,
                    asked: None,
                    state: crate::server::pending::RecordState::Resolved {
                        outcome: ask_user_core::wire::Outcome::Answered,
                        answer: Some(answer),
                        by,
                        at_ms,
                        held: false,
                    },
                    escalated: false,
                }]);
            }
            crate::server::store::Ticket::settled(Ok(true))
        }

        fn restored(&self) -> crate::server::store::Restored {
            crate::server::store::Restored::default()
        }

        fn history(
            &self,
            _query: &crate::server::store::HistoryQuery,
        ) -> Result<crate::server::store::HistoryPage, crate::server::store::StoreError> {
            Ok(crate::server::store::HistoryPage::default())
        }

        fn trouble(&self) -> Option<String> {
            None
        }

        fn flush(&self) -> crate::server::store::Ticket {
            crate::server::store::Ticket::settled(Ok(true))
        }
    }

    #[tokio::test]
    async fn an_answer_the_record_took_is_accepted_although_a_re_read_brought_it_to_the_table_first()
     {
        let record = Arc::new(RereadFirst {
            pending: std::sync::OnceLock::new(),
            session: "s".to_owned(),
        });
        let state = AppState::recording(HostConfig::new(random_token(), 1), record.clone());
        record
            .pending
            .set(state.pending().clone())
            .expect("set once");
        let request = ask_user_core::AskRequest::from_json(
            r#"{"questions": [{"id": "db", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]}"#,
        )
        .unwrap();
        let registered = state.pending().register("s", request, None).unwrap();
        let id = registered.attachment.id().to_owned();
        let answer =
            AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": ["B"]}]}"#).unwrap();
        let session = ask_user_core::SessionId::parse("s").unwrap();
        state
            .answer(&session, &id, answer)
            .await
            .expect("the record took this answer: accepted");
        assert!(
            matches!(
                registered.waiter.await,
                Ok(crate::server::pending::Resolution::Answered(_))
            ),
            "the waiting call has the answer"
        );
        let again =
            AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": ["A"]}]}"#).unwrap();
        assert!(
            state.answer(&session, &id, again).await.is_err(),
            "a second answer is still refused"
        );
    }

    #[test]
    fn the_page_opener_says_open_while_no_page_is_connected_and_asking_uses_nothing_up() {
        let state = AppState::new(HostConfig::new(random_token(), 1));
        let run = state.page_opener().run;
        assert_eq!(run.len(), 32, "{run}");
        let page = state.page_connected();
        let connected = PageOpener {
            open: false,
            pages: 1,
            run: run.clone(),
        };
        assert_eq!(state.page_opener(), connected);
        drop(page);
        let open = PageOpener {
            open: true,
            pages: 0,
            run: run.clone(),
        };
        assert_eq!(state.page_opener(), open);
        assert_eq!(state.page_opener(), open, "a claim uses nothing up");
        let other = AppState::new(HostConfig::new(random_token(), 1));
        assert_ne!(other.page_opener().run, run, "each run has its own id");
    }
}
