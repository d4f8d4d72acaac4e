//! The pending table: every question that waits for an answer, per session,
//! each session's event broadcast, and the resolutions kept for an asker that
//! went away.
//!
//! A pending question is *attached* while a call waits on it, or *detached*
//! once that call went away without ending the ask on purpose (its connection
//! dropped, its client stopped waiting). A detached question stays answerable;
//! an identical ask in the same session (same request after core's
//! validation) *reattaches* to it: same id, no second card. A question the
//! person answered or cancelled while detached leaves the page but its
//! resolution is *held*, so the next identical ask gets it at once. Detached
//! questions and held resolutions are kept for the detach grace; then the
//! question resolves `aborted` and an uncollected answer is dropped and logged
//! as never delivered.
//!
//! The rules are [`table::Table`], a state machine with no runtime in it
//! (inputs in, outputs out, its next deadline on request). [`PendingTable`]
//! is its driver: one synchronous lock guards the table *and* the channels
//! its outputs go to (each waiting call's, each session's broadcast, the
//! inbox signal, the journal), and each step's outputs are carried out before
//! the lock is let go. So "check and remove" is one atomic step (the first
//! valid answer wins), an event is sent in the same step as the change it
//! reports, and a new stream subscribes and takes its snapshot in one step
//! too (nothing falls between replay and live).

use crate::server::store::{FollowingTable, Restored, Store};
use ask_user_core::wire::{
    AnsweredBy, AskedBy, MessageCreated, Outcome, QuestionRequested, Role, SessionEvent,
    SessionList, Transcript,
};
use ask_user_core::{AnswerBatch, AskRequest, UserInteractionError};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod fanout;
pub mod table;

pub use crate::server::store::{Observed, RecordState};
use fanout::Fanout;
pub use fanout::{EventReceiver, RecvError, TryRecvError};
pub use table::{
    Attachment, Found, LetGo, PendingLimit, REMEMBERED_RESOLUTIONS, RegisterError, Resolution,
};
use table::{Input, Limits, Now, Output, Outputs, Reply, Table, WaiterId, question};

/// A session event as broadcast: shared, so a large request is never copied
/// per subscriber. A `question/requested` kept by the table carries its
/// request's canonical JSON too, so neither a stream nor a list serialises
/// the request again.
#[derive(Debug, Clone)]
pub struct SharedEvent {
    event: Arc<SessionEvent>,
    request_json: Option<Bytes>,
    /// A `question/requested` whose audience was widened by its
    /// `escalate_after` (the table's timer decides; not sent on the wire).
    escalated: bool,
}

impl std::ops::Deref for SharedEvent {
    type Target = SessionEvent;

    fn deref(&self) -> &SessionEvent {
        &self.event
    }
}

/// Equal events (the kept JSON is made from the event).
impl PartialEq for SharedEvent {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event
    }
}

impl Eq for SharedEvent {}

impl From<SessionEvent> for SharedEvent {
    fn from(event: SessionEvent) -> Self {
        Self {
            event: Arc::new(event),
            request_json: None,
            escalated: false,
        }
    }
}

impl SharedEvent {
    /// `question/requested` of `question`, with its request's canonical JSON
    /// (`serde_json::to_vec(&question.request)`).
    pub(crate) fn requested(question: QuestionRequested, request_json: Bytes) -> Self {
        Self {
            event: Arc::new(SessionEvent::QuestionRequested(question)),
            request_json: Some(request_json),
            escalated: false,
        }
    }

    /// The same event, its question escalated.
    pub(crate) fn escalated(&self) -> Self {
        Self {
            escalated: true,
            ..self.clone()
        }
    }

    /// Whether this `question/requested`'s audience was widened by its
    /// `escalate_after`.
    pub fn is_escalated(&self) -> bool {
        self.escalated
    }

    /// The request's canonical JSON of a `question/requested` (serialised
    /// now if it was not kept).
    pub fn request_json(&self) -> Option<Bytes> {
        match (&*self.event, &self.request_json) {
            (SessionEvent::QuestionRequested(_), Some(json)) => Some(json.clone()),
            (SessionEvent::QuestionRequested(q), None) => Some(
                serde_json::to_vec(&q.request)
                    .expect("requests always serialise")
                    .into(),
            ),
            _ => None,
        }
    }

    /// The SSE data, exactly [`SessionEvent::data`]; a `question/requested`
    /// is written around its kept request JSON instead of serialising it.
    pub fn data(&self) -> String {
        let (SessionEvent::QuestionRequested(q), Some(json)) = (&*self.event, &self.request_json)
        else {
            return self.event.data();
        };
        question_json(q, json)
    }
}

pub use crate::server::canonical::{question_json, question_tail, request_json};

/// A new subscriber's view of a session: what to replay, then what comes live.
#[derive(Debug)]
pub struct Subscription {
    /// Per pending question (oldest first) one `question/requested`, followed
    /// by `question/detached` when no call waits on it; then one
    /// `session/synced` listing their ids.
    pub replay: Vec<SharedEvent>,
    /// Every event after the snapshot.
    pub events: EventReceiver,
}

/// A registered (or reattached) question: which one, and where its resolution
/// arrives.
#[derive(Debug)]
pub struct Registered {
    /// What the caller holds on to: give it back to [`PendingTable::let_go`].
    pub attachment: Attachment,
    /// Receives the resolution; dropped unsent when the question is aborted.
    pub waiter: oneshot::Receiver<Resolution>,
    /// New, reattached or collected.
    pub found: Found,
}

/// How many events a session's broadcast buffers for a slow subscriber before
/// that subscriber lags (and is re-synced).
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

/// How many bytes of events a session's broadcast buffers for one slow
/// subscriber before that subscriber lags (and is re-synced): 1 MiB.
pub const DEFAULT_EVENT_BUFFER_BYTES: usize = 1024 * 1024;

pub use crate::server::limits::DEFAULT_MAX_PENDING_BYTES;

/// What an event other than `question/requested` weighs in a subscriber's
/// budget besides its text: its id and framing.
const EVENT_OVERHEAD: usize = 64;

/// Default for `--detach-grace`: how long a detached question and a held
/// resolution are kept for the asker to come back (10 minutes).
pub const DEFAULT_DETACH_GRACE: Duration =
    Duration::from_secs(ask_user_core::wire::DEFAULT_DETACH_GRACE_SECS);

/// A 128-bit random id as 32 lowercase hex digits, with a prefix.
pub fn random_id(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

/// A question's id: `q_` and 32 lowercase hex digits, the first 12 the Unix
/// millisecond it was made (as its `created_at_ms` says anyway), the other 20
/// random (80 bits). Ids made later sort later, so the store's index of ids
/// grows at its end instead of on a random page per question: a batch's new
/// questions share the few pages the WAL then carries (issue 27).
pub fn question_id() -> String {
    let random = rand::random::<u128>() & ((1u128 << 80) - 1);
    format!("q_{:012x}{random:020x}", now_ms() & 0xffff_ffff_ffff)
}

pub use ask_user_core::wire::now_ms;

/// What `event` weighs in a subscriber's byte budget: a `question/requested`
/// its request's JSON, anything else its text and framing.
fn event_weight(event: &SharedEvent) -> usize {
    if let Some(json) = &event.request_json {
        return json.len();
    }
    match &*event.event {
        SessionEvent::MessageCreated(message) => message.text.len() + EVENT_OVERHEAD,
        _ => EVENT_OVERHEAD,
    }
}

/// How a [`PendingTable`] is sized.
#[derive(Debug, Clone)]
pub struct PendingConfig {
    /// Events a session's broadcast buffers for a slow subscriber.
    pub channel_capacity: usize,
    /// Bytes of events a session's broadcast buffers for a slow subscriber.
    pub event_buffer_bytes: usize,
    /// How long a detached question and a held resolution are kept.
    pub detach_grace: Duration,
    /// The most questions kept at once, pending and held together.
    pub max_kept: usize,
    /// The most questions pending in one session; never more than core's
    /// `limits::MAX_PENDING_PER_SESSION` (what the page holds).
    pub max_per_session: usize,
    /// The most bytes of requests kept at once (each twice its canonical JSON).
    pub max_bytes: usize,
}

impl Default for PendingConfig {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            event_buffer_bytes: DEFAULT_EVENT_BUFFER_BYTES,
            detach_grace: limits.detach_grace,
            max_kept: limits.max_kept,
            max_per_session: limits.max_per_session,
            max_bytes: limits.max_bytes,
        }
    }
}

/// What the lock guards: the table and the channels its outputs go to.
struct Locked {
    table: Table,
    /// Each session's broadcast, while someone listens or the table holds
    /// the session.
    fanouts: HashMap<String, Fanout>,
    /// The calls waiting, by the id the table knows them by.
    waiters: HashMap<WaiterId, oneshot::Sender<Resolution>>,
    next_waiter: u64,
    /// Marked on every change the session list shows.
    inbox: watch::Sender<()>,
}

/// The pending table: the [`Table`]'s rules driven under one lock, on tokio's
/// clock, with the waiting calls' channels, each session's broadcast, the
/// inbox signal and the journal.
///
/// Every method is one atomic step: the table's outputs are carried out, in
/// order, before the lock is let go. So "check and remove" is one step (the
/// first valid answer wins), an event is queued in the same step as the
/// change it reports, a write reaches the record in the table's order, and a
/// new stream subscribes and takes its snapshot in one step too (nothing
/// falls between replay and live).
pub struct PendingTable {
    locked: Mutex<Locked>,
    config: PendingConfig,
    /// The durable record, told of every ending the table decides itself.
    journal: Option<Arc<dyn Store>>,
    /// Notified when the table's next deadline moves, so the timer looks again.
    deadline_moved: Notify,
}

impl Default for PendingTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PendingTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingTable")
            .field("pending", &self.pending_count())
            .field("held", &self.held_count())
            .finish()
    }
}

impl PendingTable {
    /// An empty table with the default configuration.
    pub fn new() -> Self {
        Self::with_config(PendingConfig::default())
    }

    /// An empty table whose per-session broadcasts buffer `capacity` events.
    pub fn with_channel_capacity(capacity: usize) -> Self {
        Self::with_config(PendingConfig {
            channel_capacity: capacity,
            ..PendingConfig::default()
        })
    }

    /// An empty table configured by `config`.
    /// A per-session limit above core's `MAX_PENDING_PER_SESSION` is lowered
    /// to it: the page could not show the questions past it.
    pub fn with_config(config: PendingConfig) -> Self {
        Self::with_journal(config, None)
    }

    /// [`PendingTable::with_config`], telling `journal` of every ending it
    /// decides itself (aborted, timed out, expired, disposed; a held
    /// resolution never collected).
    pub fn with_journal(mut config: PendingConfig, journal: Option<Arc<dyn Store>>) -> Self {
        config.channel_capacity = config.channel_capacity.max(1);
        let table = Table::new(Limits {
            detach_grace: config.detach_grace,
            max_kept: config.max_kept,
            max_per_session: config.max_per_session,
            max_bytes: config.max_bytes,
        });
        config.max_per_session = table.limits().max_per_session;
        Self {
            locked: Mutex::new(Locked {
                table,
                fanouts: HashMap::new(),
                waiters: HashMap::new(),
                next_waiter: 0,
                inbox: watch::channel(()).0,
            }),
            config,
            journal,
            deadline_moved: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Locked> {
        // A panic elsewhere must not wedge every ask: the table stays consistent
        // because each step mutates it only after its checks.
        self.locked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `input` now and carries out its outputs, in order, under the lock.
    fn step(&self, locked: &mut Locked, input: Input) -> Reply {
        let due = locked.table.poll_timeout();
        let now = Now {
            at: Instant::now().into_std(),
            unix_ms: now_ms(),
        };
        let Outputs { effects, reply } = locked.table.apply(input, now);
        let mut touched: Vec<String> = Vec::new();
        for effect in effects {
            match effect {
                Output::Resolve { waiter, resolution } => {
                    if let Some(reply) = locked.waiters.remove(&waiter) {
                        // The call may have gone this instant: its let-go
                        // finds the resolution unread and the table holds it.
                        let _ = reply.send(resolution);
                    }
                }
                Output::Dismiss { waiter } => {
                    locked.waiters.remove(&waiter);
                }
                Output::Broadcast { session, event } => {
                    // No broadcast means no subscriber: a stream opened
                    // later replays the table.
                    if let Some(fanout) = locked.fanouts.get_mut(&session) {
                        fanout.send(&event, event_weight(&event));
                        touched.push(session);
                    }
                }
                Output::Journal(write) => {
                    if let Some(journal) = &self.journal {
                        drop(journal.submit(write));
                    }
                }
                Output::InboxChanged => {
                    locked.inbox.send_replace(());
                }
            }
        }
        for session in touched {
            Self::forget_if_idle(locked, &session);
        }
        if locked.table.poll_timeout() != due {
            self.deadline_moved.notify_one();
        }
        reply
    }

    /// Drops `session`'s broadcast when the table holds nothing there and
    /// nobody listens.
    fn forget_if_idle(locked: &mut Locked, session: &str) {
        let idle = locked
            .fanouts
            .get(session)
            .is_some_and(|fanout| fanout.receiver_count() == 0);
        if idle && !locked.table.holds_session(session) {
            locked.fanouts.remove(session);
        }
    }

    /// Attaches to the oldest detached question or held resolution of
    /// `session` whose request equals `request` (validated), else registers a
    /// new question asked by `asked_by` and broadcasts `question/requested`;
    /// a reattached question broadcasts `question/attached`.
    pub fn register(
        &self,
        session: &str,
        request: AskRequest,
        asked_by: Option<AskedBy>,
    ) -> Result<Registered, RegisterError> {
        let question = QuestionRequested {
            id: question_id(),
            session: session.to_owned(),
            request,
            created_at_ms: now_ms(),
            asked_by,
        };
        let json = request_json(&question.request);
        self.register_with_json(question, json)
    }

    /// [`PendingTable::register`] of a question whose id and time the caller
    /// chose (and wrote to the record first), with the request's canonical
    /// JSON ([`request_json`]) made by the caller already, so it is made
    /// once; when it attaches instead, that id is unused.
    pub fn register_with_json(
        &self,
        question: QuestionRequested,
        request_json: Bytes,
    ) -> Result<Registered, RegisterError> {
        self.register_waiter(|waiter| Input::Register {
            question,
            request_json,
            waiter,
        })
    }

    /// A shared record decided which question this ask takes: `question`,
    /// written for it (`new`) or an existing one handed to this host, whose
    /// `held` resolution (if any) the call collects at once.
    pub fn attach(
        &self,
        question: QuestionRequested,
        request_json: Bytes,
        new: bool,
        held: Option<Resolution>,
    ) -> Result<Registered, RegisterError> {
        self.register_waiter(|waiter| Input::Attach {
            question,
            request_json,
            waiter,
            new,
            held,
        })
    }

    /// Applies the register or attach `input` made for a new waiter, under
    /// one lock: the waiter's channel is in place before the step (its
    /// outputs may resolve it at once) and gone again if the step refuses.
    fn register_waiter(
        &self,
        input: impl FnOnce(WaiterId) -> Input,
    ) -> Result<Registered, RegisterError> {
        let (reply, waiter) = oneshot::channel();
        let mut locked = self.lock();
        locked.next_waiter += 1;
        let id = WaiterId(locked.next_waiter);
        locked.waiters.insert(id, reply);
        match self.step(&mut locked, input(id)) {
            Reply::Registered { attachment, found } => Ok(Registered {
                attachment,
                waiter,
                found,
            }),
            Reply::Refused(error) => {
                locked.waiters.remove(&id);
                Err(error)
            }
            other => {
                unreachable!("a register or attach replies registered or refused, not {other:?}")
            }
        }
    }

    /// What a shared record says of questions another host may have changed:
    /// the table follows, in one step per question.
    pub fn observe(&self, observed: impl IntoIterator<Item = Observed>) {
        let mut locked = self.lock();
        for observed in observed {
            self.step(&mut locked, Input::Observed(observed));
        }
    }

    /// The (session, id) of every question this table has open, pending or held.
    pub fn open_ids(&self) -> Vec<(String, String)> {
        self.lock().table.open_ids()
    }

    /// The ids of the questions a call on this host waits on.
    pub fn attached_ids(&self) -> Vec<String> {
        self.lock().table.attached_ids()
    }

    /// Puts back what the record still had open at start: pending questions
    /// come back detached and held resolutions held, their grace counted from
    /// now, within the live caps (held answers first; the rest stays in the
    /// record).
    pub fn restore(&self, restored: Restored) {
        let mut locked = self.lock();
        self.step(&mut locked, Input::Restore(restored));
    }

    /// The `question/requested` of the pending question `id`, for validating
    /// an answer outside the lock.
    fn requested(&self, session: &str, id: &str) -> Result<SharedEvent, UserInteractionError> {
        self.lock().table.requested(session, id)
    }

    /// `answer` validated and normalised by core against the pending
    /// question `id`, without claiming it; `NOT_PENDING` when it is gone.
    pub fn check_answer(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<AnswerBatch, UserInteractionError> {
        let event = self.requested(session, id)?;
        answer.normalize(&question(&event).request)
    }

    /// Whether `member` may see and answer pending question `id` (see
    /// [`Table::admits`]); `None` when it is not pending.
    pub fn admits(
        &self,
        session: &str,
        id: &str,
        member: &dyn ask_user_core::Member,
    ) -> Option<bool> {
        self.lock().table.admits(session, id, member)
    }

    /// How `id` in `session` ended, while the table remembers it.
    pub fn ended_how(&self, session: &str, id: &str) -> Option<table::Ended> {
        self.lock().table.ended(session, id)
    }

    /// `NOT_PENDING` (saying why, when known) unless `id` is pending in `session`.
    pub fn check_pending(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        self.requested(session, id).map(drop)
    }

    /// The call holding `attachment` goes away without having read `waiter`.
    /// If the question still waits on it, `how` decides: abort it, or detach
    /// it (broadcasting `question/detached`). If it was resolved in the
    /// meantime and the resolution sits unread in `waiter`, the resolution is
    /// held for the next identical ask instead of being lost.
    pub fn let_go(
        &self,
        session: &str,
        attachment: Attachment,
        mut waiter: oneshot::Receiver<Resolution>,
        how: LetGo,
    ) {
        let mut locked = self.lock();
        // Under the lock: a resolution handed over is in the waiter now.
        let unread = waiter.try_recv().ok();
        let call = attachment.waiter();
        self.step(
            &mut locked,
            Input::LetGo {
                session: session.to_owned(),
                attachment,
                how,
                unread,
            },
        );
        locked.waiters.remove(&call);
    }

    /// Validates `answer` against the question through core, then removes the
    /// question in the same step that checks it is still pending, hands the
    /// normalised answer to the waiting ask (or holds it when none waits) and
    /// broadcasts `question/resolved` (`answered`). `BAD_ANSWER` leaves the
    /// question pending; `NOT_PENDING` says why, when known.
    pub fn claim(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), UserInteractionError> {
        self.claim_by(session, id, answer, None)
    }

    /// [`PendingTable::claim`], the record naming who answered.
    pub fn claim_by(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError> {
        // Validation runs outside the lock; the claim re-checks pending.
        let answer = self.check_answer(session, id, answer)?;
        let mut locked = self.lock();
        let input = Input::Claim {
            session: session.to_owned(),
            id: id.to_owned(),
            answer,
            by,
        };
        Self::settled(self.step(&mut locked, input))
    }

    /// The person closed the question: removes it, fails the waiting ask with
    /// `ASK_CANCELLED` (or holds that for the next identical ask when none
    /// waits) and broadcasts `cancelled`. `NOT_PENDING` when gone.
    pub fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        self.cancel_by(session, id, None)
    }

    /// [`PendingTable::cancel`], the record naming who cancelled.
    pub fn cancel_by(
        &self,
        session: &str,
        id: &str,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError> {
        let mut locked = self.lock();
        let input = Input::Cancel {
            session: session.to_owned(),
            id: id.to_owned(),
            by,
        };
        Self::settled(self.step(&mut locked, input))
    }

    fn settled(reply: Reply) -> Result<(), UserInteractionError> {
        match reply {
            Reply::Done => Ok(()),
            Reply::NotPending(error) => Err(error),
            other => unreachable!("a claim or cancel replies done or not pending, not {other:?}"),
        }
    }

    fn ended(reply: Reply) -> bool {
        match reply {
            Reply::Ended(ended) => ended,
            other => unreachable!("an abort replies whether it ended, not {other:?}"),
        }
    }

    /// The asking side gave up (`Outcome::Aborted`) or ran out of time
    /// (`Outcome::Timeout`): removes the question and broadcasts the outcome.
    /// Returns false when it was no longer pending.
    pub fn abort(&self, session: &str, id: &str, outcome: Outcome) -> bool {
        let mut locked = self.lock();
        let input = Input::Abort {
            session: session.to_owned(),
            id: id.to_owned(),
            outcome,
        };
        Self::ended(self.step(&mut locked, input))
    }

    /// The asker that let a question go a moment ago ended it on purpose
    /// after all (its explicit end arrived just after its connection
    /// dropped): resolves the question as `aborted`, but only while it is
    /// still detached; a call that attached to it meanwhile keeps it.
    /// Returns whether it was aborted.
    pub fn abort_detached(&self, session: &str, id: &str) -> bool {
        let mut locked = self.lock();
        let input = Input::AbortDetached {
            session: session.to_owned(),
            id: id.to_owned(),
        };
        Self::ended(self.step(&mut locked, input))
    }

    /// Ends what outlived the detach grace by now: detached questions
    /// resolve `aborted`, held answers are dropped and logged as never
    /// delivered. Returns when the next one is due.
    pub fn expire(&self) -> Option<Instant> {
        let mut locked = self.lock();
        self.step(&mut locked, Input::Expire);
        locked.table.poll_timeout().map(Instant::from_std)
    }

    /// The `question/requested` events of `session`'s pending questions,
    /// oldest first: shared, so taking them costs no copy of a request, and
    /// carrying each request's JSON, so writing them serialises none.
    pub fn pending_events(&self, session: &str) -> Vec<SharedEvent> {
        self.lock().table.pending_events(session)
    }

    /// The pending questions of `session`, oldest first (copied).
    pub fn snapshot(&self, session: &str) -> Vec<QuestionRequested> {
        self.pending_events(session)
            .iter()
            .map(|event| question(event).clone())
            .collect()
    }

    /// Subscribes to `session` and takes the replay in the same step.
    pub fn subscribe(&self, session: &str) -> Subscription {
        let mut locked = self.lock();
        let (capacity, budget) = (self.config.channel_capacity, self.config.event_buffer_bytes);
        let events = locked
            .fanouts
            .entry(session.to_owned())
            .or_insert_with(|| Fanout::new(capacity, budget))
            .subscribe();
        let replay = locked.table.replay(session);
        Subscription { replay, events }
    }

    /// Keeps a transcript message in `session` and broadcasts it to its
    /// subscribers.
    pub fn post_message(&self, session: &str, role: Role, text: String) -> MessageCreated {
        let message = MessageCreated {
            id: random_id("m_"),
            role,
            text,
            at_ms: now_ms(),
            by: None,
        };
        self.post_message_as(session, message)
    }

    /// [`PendingTable::post_message`] of `message` (already written to the record).
    pub fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated {
        let mut locked = self.lock();
        let input = Input::Message {
            session: session.to_owned(),
            message: message.clone(),
        };
        self.step(&mut locked, input);
        message
    }

    /// `session`'s transcript: its most recent messages and records of
    /// resolved questions, oldest first.
    pub fn transcript(&self, session: &str) -> Transcript {
        self.lock().table.transcript(session)
    }

    /// The sessions with pending questions or recent activity, most urgent
    /// first (see [`Table::sessions`]).
    pub fn sessions(&self, now_ms: u64) -> SessionList {
        self.lock().table.sessions(now_ms)
    }

    /// [`PendingTable::sessions`] as someone who `sees` only some questions.
    pub fn sessions_seen_by(
        &self,
        now_ms: u64,
        sees: &dyn Fn(&SharedEvent) -> bool,
    ) -> SessionList {
        self.lock().table.sessions_seen_by(now_ms, sees)
    }

    /// Marked changed whenever [`PendingTable::sessions`] may have changed.
    pub fn inbox(&self) -> watch::Receiver<()> {
        self.lock().inbox.subscribe()
    }

    /// Forgets `session`'s broadcast when nothing waits there and nobody listens.
    pub fn release(&self, session: &str) {
        Self::forget_if_idle(&mut self.lock(), session);
    }

    /// Resolves every pending question as `disposed` (the waiting asks get
    /// `ASK_ABORTED`), drops the held resolutions (logging each answer as never
    /// delivered) and refuses new questions. Returns how many were pending.
    pub fn dispose_all(&self) -> usize {
        let mut locked = self.lock();
        match self.step(&mut locked, Input::Shutdown) {
            Reply::Disposed(count) => count,
            other => unreachable!("a shutdown replies disposed, not {other:?}"),
        }
    }

    /// How many questions wait (attached or detached), across sessions.
    pub fn pending_count(&self) -> usize {
        self.lock().table.pending_count()
    }

    /// How many resolutions are held for an asker that went away.
    pub fn held_count(&self) -> usize {
        self.lock().table.held_count()
    }

    /// Every limit [`PendingTable::register`] may refuse with.
    pub fn pending_limits(&self) -> Vec<PendingLimit> {
        vec![
            PendingLimit::Total(self.config.max_kept),
            PendingLimit::PerSession(self.config.max_per_session),
            PendingLimit::Bytes(self.config.max_bytes),
        ]
    }

    /// Bytes of requests kept now, pending and held (each twice its canonical JSON).
    pub fn pending_bytes(&self) -> usize {
        self.lock().table.pending_bytes()
    }
}

/// Starts the one task that ends what outlived the detach grace
/// ([`Input::Expire`] when [`Table::poll_timeout`] is due), on tokio's clock,
/// until `shutdown`.
pub fn spawn_grace_timer(
    pending: Arc<PendingTable>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let next = pending.expire();
            let due = async {
                match next {
                    Some(next) => tokio::time::sleep_until(next).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = due => {}
                () = pending.deadline_moved.notified() => {}
                () = shutdown.cancelled() => return,
            }
        }
    })
}

/// A shared record keeps this table in step with other hosts through these.
impl FollowingTable for PendingTable {
    fn observe(&self, observed: Vec<Observed>) {
        PendingTable::observe(self, observed);
    }

    fn open_ids(&self) -> Vec<(String, String)> {
        PendingTable::open_ids(self)
    }

    fn attached_ids(&self) -> Vec<String> {
        PendingTable::attached_ids(self)
    }

    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated {
        PendingTable::post_message_as(self, session, message)
    }
}

#[cfg(test)]
mod tests;
