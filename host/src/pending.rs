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
//! One synchronous lock guards the table *and* the broadcasts, so "check and
//! remove" is one atomic step (the first valid answer wins), an event is sent
//! in the same step as the change it reports, and a new stream subscribes and
//! takes its snapshot in one step too (nothing falls between replay and live).
//! The table sits behind [`PendingStore`] so a shared store can replace process
//! memory without touching the routes.

use crate::store::{Restored, Store, Write};
use ask_user_core::wire::{
    MessageCreated, Outcome, QuestionRef, QuestionRequested, QuestionResolved, Role, SessionEvent,
    SessionSynced,
};
use ask_user_core::{AnswerBatch, AskRequest, UserInteractionError};
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A session event as broadcast: shared, so a large request is never copied
/// per subscriber.
pub type SharedEvent = Arc<SessionEvent>;

/// How a waiting ask learns that its question stopped waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The person answered (already validated and normalised).
    Answered(AnswerBatch),
    /// The person closed the question.
    Cancelled,
    /// The host shut down.
    Disposed,
}

/// How [`PendingStore::register`] found the question it hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A new question.
    New,
    /// A detached question with the same request, now attached again.
    Reattached,
    /// A held resolution of the same request: the waiter has it already.
    Collected,
}

/// A registered (or reattached) question: which one, and where its resolution
/// arrives.
#[derive(Debug)]
pub struct Registered {
    /// What the caller holds on to: give it back to [`PendingStore::let_go`].
    pub attachment: Attachment,
    /// Receives the resolution; dropped unsent when the question is aborted.
    pub waiter: oneshot::Receiver<Resolution>,
    /// New, reattached or collected.
    pub found: Found,
}

/// One call's hold on one question.
#[derive(Debug, Clone)]
pub struct Attachment {
    id: String,
    number: u64,
    seq: u64,
    key: u64,
    event: SharedEvent,
}

impl Attachment {
    /// The question's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// How a call lets go of its question without reading its resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LetGo {
    /// The asker ended the ask on purpose: the question resolves `aborted`.
    Abort,
    /// The asker only went away: the question is detached (or, with a detach
    /// grace of zero, aborted).
    Detach,
}

/// Why a question could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterError {
    /// The store is disposed (the host is shutting down).
    ShuttingDown,
    /// `limit` questions (pending or held) are already kept.
    TooManyPending {
        /// The limit.
        limit: usize,
    },
}

/// A new subscriber's view of a session: what to replay, then what comes live.
#[derive(Debug)]
pub struct Subscription {
    /// Per pending question (oldest first) one `question/requested`, followed
    /// by `question/detached` when no call waits on it; then one
    /// `session/synced` listing their ids.
    pub replay: Vec<SharedEvent>,
    /// Every event after the snapshot.
    pub events: broadcast::Receiver<SharedEvent>,
}

/// The pending table of questions and the per-session event broadcast.
///
/// Implementations make each method one atomic step with respect to the others.
pub trait PendingStore: Send + Sync + 'static {
    /// Attaches to the oldest detached question or held resolution of
    /// `session` whose request equals `request` (validated), else registers a
    /// new question and broadcasts `question/requested`; a reattached
    /// question broadcasts `question/attached`.
    fn register(&self, session: &str, request: AskRequest) -> Result<Registered, RegisterError> {
        self.register_as(QuestionRequested {
            id: random_id("q_"),
            session: session.to_owned(),
            request,
            created_at_ms: now_ms(),
        })
    }

    /// [`PendingStore::register`] of a question whose id and time the caller
    /// chose (and wrote to the record first); when it attaches instead, that
    /// id is unused.
    fn register_as(&self, question: QuestionRequested) -> Result<Registered, RegisterError>;

    /// Puts back what the record still had open at start: pending questions
    /// come back detached and held resolutions held, their grace counted from
    /// now. The limit does not apply (they were kept already).
    fn restore(&self, restored: Restored);

    /// `answer` validated and normalised by core against the pending
    /// question `id`, without claiming it; `NOT_PENDING` when it is gone.
    fn check_answer(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<AnswerBatch, UserInteractionError>;

    /// `NOT_PENDING` (saying why, when known) unless `id` is pending in `session`.
    fn check_pending(&self, session: &str, id: &str) -> Result<(), UserInteractionError>;

    /// The call holding `attachment` goes away without having read `waiter`.
    /// If the question still waits on it, `how` decides: abort it, or detach
    /// it (broadcasting `question/detached`). If it was resolved in the
    /// meantime and the resolution sits unread in `waiter`, the resolution is
    /// held for the next identical ask instead of being lost.
    fn let_go(
        &self,
        session: &str,
        attachment: Attachment,
        waiter: oneshot::Receiver<Resolution>,
        how: LetGo,
    );

    /// Validates `answer` against the question through core, then removes the
    /// question in the same step that checks it is still pending, hands the
    /// normalised answer to the waiting ask (or holds it when none waits) and
    /// broadcasts `question/resolved` (`answered`). `BAD_ANSWER` leaves the
    /// question pending; `NOT_PENDING` says why, when known.
    fn claim(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), UserInteractionError>;

    /// The person closed the question: removes it, fails the waiting ask with
    /// `ASK_CANCELLED` (or holds that for the next identical ask when none
    /// waits) and broadcasts `cancelled`. `NOT_PENDING` when gone.
    fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError>;

    /// The asking side gave up (`Outcome::Aborted`) or ran out of time
    /// (`Outcome::Timeout`): removes the question and broadcasts the outcome.
    /// Returns false when it was no longer pending.
    fn abort(&self, session: &str, id: &str, outcome: Outcome) -> bool;

    /// The asker that let a question go a moment ago ended it on purpose
    /// after all (its explicit end arrived just after its connection
    /// dropped): resolves the question as `aborted`, but only while it is
    /// still detached; a call that attached to it meanwhile keeps it.
    /// Returns whether it was aborted.
    fn abort_detached(&self, session: &str, id: &str) -> bool;

    /// Ends what outlived the detach grace by `now`: detached questions
    /// resolve `aborted`, held answers are dropped and logged as never
    /// delivered. Returns when the next one is due.
    fn expire(&self, now: Instant) -> Option<Instant>;

    /// Notified when a grace starts, so a timer waiting for
    /// [`PendingStore::expire`]'s next instant can look again.
    fn grace_started(&self) -> &Notify;

    /// The pending questions of `session`, oldest first.
    fn snapshot(&self, session: &str) -> Vec<QuestionRequested>;

    /// Subscribes to `session` and takes the replay in the same step.
    fn subscribe(&self, session: &str) -> Subscription;

    /// Broadcasts a transcript message to `session`'s subscribers.
    fn post_message(&self, session: &str, role: Role, text: String) -> MessageCreated {
        let message = MessageCreated {
            id: random_id("m_"),
            role,
            text,
        };
        self.post_message_as(session, message)
    }

    /// Broadcasts `message` (already written to the record) to `session`'s subscribers.
    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated;

    /// Forgets `session`'s broadcast when nothing waits there and nobody listens.
    fn release(&self, session: &str);

    /// Resolves every pending question as `disposed` (the waiting asks get
    /// `ASK_ABORTED`), drops the held resolutions (logging each answer as never
    /// delivered) and refuses new questions. Returns how many were pending.
    fn dispose_all(&self) -> usize;

    /// How many questions wait (attached or detached), across sessions.
    fn pending_count(&self) -> usize;

    /// How many resolutions are held for an asker that went away.
    fn held_count(&self) -> usize;

    /// The most questions kept at once, pending and held together.
    fn max_kept(&self) -> usize;
}

/// How many events a session's broadcast buffers for a slow subscriber before
/// that subscriber lags (and is re-synced).
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

/// How many resolved ids the store remembers to explain `NOT_PENDING`.
pub const REMEMBERED_RESOLUTIONS: usize = 4096;

/// Default for `--detach-grace`: how long a detached question and a held
/// resolution are kept for the asker to come back (10 minutes).
pub const DEFAULT_DETACH_GRACE: Duration = Duration::from_secs(600);

/// A 128-bit random id as 32 lowercase hex digits, with a prefix.
pub fn random_id(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

fn now_ms() -> u64 {
    crate::store::now_ms()
}

/// Who waits on a pending question.
enum Waiting {
    /// A call waits; `number` tells its attachment from any later one.
    Attached {
        number: u64,
        reply: oneshot::Sender<Resolution>,
    },
    /// No call waits; kept until `until`.
    Detached { until: Instant },
}

struct Entry {
    seq: u64,
    key: u64,
    /// The `question/requested` event, kept as sent (replayed as is).
    event: SharedEvent,
    waiting: Waiting,
}

/// A resolution no call has collected yet.
struct Held {
    id: String,
    key: u64,
    event: SharedEvent,
    resolution: Resolution,
    until: Instant,
}

fn question(event: &SessionEvent) -> &QuestionRequested {
    match event {
        SessionEvent::QuestionRequested(q) => q,
        _ => unreachable!("entries only hold question/requested events"),
    }
}

/// How a question stopped being pending, for `NOT_PENDING`'s reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Answered,
    Cancelled,
    /// The asker ended it on purpose.
    Aborted,
    Timeout,
    Disposed,
    /// The asker went away and the detach grace is zero.
    Abandoned,
    /// Detached and not asked for again within the grace.
    Expired,
}

impl Ended {
    fn outcome(self) -> Outcome {
        match self {
            Ended::Answered => Outcome::Answered,
            Ended::Cancelled => Outcome::Cancelled,
            Ended::Aborted | Ended::Abandoned | Ended::Expired => Outcome::Aborted,
            Ended::Timeout => Outcome::Timeout,
            Ended::Disposed => Outcome::Disposed,
        }
    }

    fn from_outcome(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Answered => Ended::Answered,
            Outcome::Cancelled => Ended::Cancelled,
            Outcome::Aborted => Ended::Aborted,
            Outcome::Timeout => Ended::Timeout,
            Outcome::Disposed => Ended::Disposed,
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Ended::Answered => "it was already answered",
            Ended::Cancelled => "it was cancelled",
            Ended::Aborted => "the agent aborted it",
            Ended::Timeout => "it timed out",
            Ended::Disposed => "the host shut down",
            Ended::Abandoned => "the agent stopped waiting, so it was aborted",
            Ended::Expired => {
                "the agent stopped waiting and did not ask again within the grace, so it was aborted"
            }
        }
    }
}

struct Session {
    tx: broadcast::Sender<SharedEvent>,
    /// Pending ids in registration order.
    order: BTreeMap<u64, String>,
    entries: HashMap<String, Entry>,
    /// Held resolutions by the sequence number of their question.
    held: BTreeMap<u64, Held>,
    /// Request key → sequence numbers of the detached questions and held
    /// resolutions with that key (a later ask may attach to them).
    reattachable: HashMap<u64, BTreeSet<u64>>,
}

impl Session {
    fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity).0,
            order: BTreeMap::new(),
            entries: HashMap::new(),
            held: BTreeMap::new(),
            reattachable: HashMap::new(),
        }
    }

    fn send(&self, event: SessionEvent) {
        // No subscriber is fine: a stream opened later replays the table.
        let _ = self.tx.send(Arc::new(event));
    }

    fn is_idle(&self) -> bool {
        self.entries.is_empty() && self.held.is_empty() && self.tx.receiver_count() == 0
    }

    fn index(&mut self, key: u64, seq: u64) {
        self.reattachable.entry(key).or_default().insert(seq);
    }

    fn unindex(&mut self, key: u64, seq: u64) {
        if let Some(seqs) = self.reattachable.get_mut(&key) {
            seqs.remove(&seq);
            if seqs.is_empty() {
                self.reattachable.remove(&key);
            }
        }
    }

    /// The oldest detached question or held resolution asking `request`.
    fn reattachable(&self, key: u64, request: &AskRequest) -> Option<u64> {
        self.reattachable.get(&key)?.iter().copied().find(|seq| {
            let event = match self.held.get(seq) {
                Some(held) => &held.event,
                None => match self.order.get(seq).and_then(|id| self.entries.get(id)) {
                    Some(entry) => &entry.event,
                    None => return false,
                },
            };
            // The key is a hash: equal requests only.
            question(event).request == *request
        })
    }
}

struct Table {
    sessions: HashMap<String, Session>,
    /// Events a new session's broadcast buffers.
    capacity: usize,
    /// Attached and detached questions.
    pending: usize,
    /// Held resolutions.
    held: usize,
    next_seq: u64,
    next_attachment: u64,
    closed: bool,
    /// When each detached question or held resolution is due: (until, seq) → session.
    deadlines: BTreeMap<(Instant, u64), String>,
    /// id → (session, how it ended) of recently resolved questions, bounded.
    recent: HashMap<String, (String, Ended)>,
    recent_order: VecDeque<String>,
    /// The durable record, told of every ending the table decides itself.
    journal: Option<Arc<dyn Store>>,
}

impl Table {
    fn new(capacity: usize) -> Self {
        Self {
            sessions: HashMap::new(),
            capacity,
            pending: 0,
            held: 0,
            next_seq: 0,
            next_attachment: 0,
            closed: false,
            deadlines: BTreeMap::new(),
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            journal: None,
        }
    }

    /// Queues `write` for the record (in the table's order: called under its lock).
    fn journal(&self, write: impl FnOnce() -> Write) {
        if let Some(journal) = &self.journal {
            drop(journal.submit(write()));
        }
    }

    fn session(&mut self, name: &str) -> &mut Session {
        let capacity = self.capacity;
        self.sessions
            .entry(name.to_owned())
            .or_insert_with(|| Session::new(capacity))
    }

    fn attachment_number(&mut self) -> u64 {
        self.next_attachment += 1;
        self.next_attachment
    }

    /// Removes a pending entry and reports how it ended to the session's streams.
    fn resolve(&mut self, session: &str, id: &str, ended: Ended) -> Option<Entry> {
        let slot = self.sessions.get_mut(session)?;
        let entry = slot.entries.remove(id)?;
        slot.order.remove(&entry.seq);
        if let Waiting::Detached { until } = entry.waiting {
            slot.unindex(entry.key, entry.seq);
            self.deadlines.remove(&(until, entry.seq));
        }
        slot.send(SessionEvent::QuestionResolved(QuestionResolved {
            id: id.to_owned(),
            outcome: ended.outcome(),
        }));
        self.pending -= 1;
        self.forget_if_idle(session);
        self.remember(id, session, ended);
        // An answer or a cancel was written before its claim.
        if !matches!(ended, Ended::Answered | Ended::Cancelled) {
            self.journal(|| Write::Ended {
                id: id.to_owned(),
                outcome: ended.outcome(),
                at_ms: now_ms(),
            });
        }
        Some(entry)
    }

    /// Hands `resolution` to the entry's waiting call, or holds it for the
    /// next identical ask when none waits.
    fn deliver(&mut self, session: &str, entry: Entry, resolution: Resolution, grace: Duration) {
        match entry.waiting {
            // The asker may have gone this instant: its `let_go` finds the
            // resolution unread in its waiter and holds it then.
            Waiting::Attached { reply, .. } => drop(reply.send(resolution)),
            Waiting::Detached { .. } => {
                self.hold(
                    session,
                    entry.seq,
                    entry.key,
                    entry.event,
                    resolution,
                    grace,
                );
            }
        }
    }

    /// Keeps `resolution` of the question asked by `event` for the next
    /// identical ask, for `grace` (with no grace an answer is logged as never
    /// delivered instead).
    fn hold(
        &mut self,
        session: &str,
        seq: u64,
        key: u64,
        event: SharedEvent,
        resolution: Resolution,
        grace: Duration,
    ) {
        if resolution == Resolution::Disposed {
            return;
        }
        let id = question(&event).id.clone();
        if grace.is_zero() {
            log_never_delivered(session, &id, &resolution);
            self.journal(|| Write::NeverDelivered { id });
            return;
        }
        let until = Instant::now() + grace;
        let slot = self.session(session);
        slot.index(key, seq);
        slot.held.insert(
            seq,
            Held {
                id,
                key,
                event,
                resolution,
                until,
            },
        );
        self.held += 1;
        self.deadlines.insert((until, seq), session.to_owned());
    }

    fn forget_if_idle(&mut self, session: &str) {
        if self.sessions.get(session).is_some_and(Session::is_idle) {
            self.sessions.remove(session);
        }
    }

    fn remember(&mut self, id: &str, session: &str, ended: Ended) {
        if self.recent_order.len() >= REMEMBERED_RESOLUTIONS
            && let Some(oldest) = self.recent_order.pop_front()
        {
            self.recent.remove(&oldest);
        }
        self.recent
            .insert(id.to_owned(), (session.to_owned(), ended));
        self.recent_order.push_back(id.to_owned());
    }

    fn not_pending(&self, session: &str, id: &str) -> UserInteractionError {
        let why = match self.recent.get(id) {
            Some((owner, ended)) if owner == session => ended.reason(),
            _ if self.closed => "the host is shutting down",
            _ => "no such question waits in this session",
        };
        UserInteractionError::not_pending(format!(
            "question {id:?} is not pending in session {session:?}: {why}"
        ))
    }
}

fn log_never_delivered(session: &str, id: &str, resolution: &Resolution) {
    if let Resolution::Answered(_) = resolution {
        tracing::warn!(
            session,
            id,
            "an answer was never delivered: no call asked for it again within the detach grace"
        );
    }
}

/// How a [`MemoryStore`] is sized.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events a session's broadcast buffers for a slow subscriber.
    pub channel_capacity: usize,
    /// How long a detached question and a held resolution are kept.
    pub detach_grace: Duration,
    /// The most questions kept at once, pending and held together.
    pub max_kept: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            detach_grace: DEFAULT_DETACH_GRACE,
            max_kept: usize::MAX,
        }
    }
}

/// The in-process [`PendingStore`].
pub struct MemoryStore {
    table: Mutex<Table>,
    config: StoreConfig,
    hasher: RandomState,
    grace_started: Notify,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("pending", &self.pending_count())
            .field("held", &self.held_count())
            .finish()
    }
}

impl MemoryStore {
    /// An empty store with the default configuration.
    pub fn new() -> Self {
        Self::with_config(StoreConfig::default())
    }

    /// An empty store whose per-session broadcasts buffer `capacity` events.
    pub fn with_channel_capacity(capacity: usize) -> Self {
        Self::with_config(StoreConfig {
            channel_capacity: capacity,
            ..StoreConfig::default()
        })
    }

    /// An empty store configured by `config`.
    pub fn with_config(config: StoreConfig) -> Self {
        Self::with_journal(config, None)
    }

    /// An empty store configured by `config` that tells `journal` of every
    /// ending it decides itself (aborted, timed out, expired, disposed; a
    /// held resolution never collected).
    pub fn with_journal(mut config: StoreConfig, journal: Option<Arc<dyn Store>>) -> Self {
        config.channel_capacity = config.channel_capacity.max(1);
        let mut table = Table::new(config.channel_capacity);
        table.journal = journal;
        Self {
            table: Mutex::new(table),
            config,
            hasher: RandomState::new(),
            grace_started: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic elsewhere must not wedge every ask: the table stays consistent
        // because each step mutates it only after its checks.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The reattach key of a validated request: a hash of its canonical JSON
    /// (matches are confirmed by comparing the requests).
    fn key_of(&self, request: &AskRequest) -> u64 {
        let canonical = serde_json::to_string(request).expect("requests always serialise");
        self.hasher.hash_one(canonical)
    }

    /// The request of a pending question, for validating an answer outside the lock.
    fn request_of(&self, session: &str, id: &str) -> Result<SharedEvent, UserInteractionError> {
        let table = self.lock();
        table
            .sessions
            .get(session)
            .and_then(|s| s.entries.get(id))
            .map(|e| e.event.clone())
            .ok_or_else(|| table.not_pending(session, id))
    }

    fn grace(&self) -> Duration {
        self.config.detach_grace
    }
}

impl PendingStore for MemoryStore {
    fn register_as(&self, question: QuestionRequested) -> Result<Registered, RegisterError> {
        let session = question.session.clone();
        let session = session.as_str();
        let key = self.key_of(&question.request);
        let (reply, waiter) = oneshot::channel();
        let mut table = self.lock();
        if table.closed {
            return Err(RegisterError::ShuttingDown);
        }
        let number = table.attachment_number();
        let found = table
            .sessions
            .get(session)
            .and_then(|slot| slot.reattachable(key, &question.request));
        if let Some(seq) = found {
            let table = &mut *table;
            let slot = table.sessions.get_mut(session).expect("found in it");
            slot.unindex(key, seq);
            if let Some(held) = slot.held.remove(&seq) {
                table.deadlines.remove(&(held.until, seq));
                table.held -= 1;
                let _ = reply.send(held.resolution);
                table.forget_if_idle(session);
                return Ok(Registered {
                    attachment: Attachment {
                        id: held.id,
                        number,
                        seq,
                        key,
                        event: held.event,
                    },
                    waiter,
                    found: Found::Collected,
                });
            }
            let id = slot.order[&seq].clone();
            let entry = slot.entries.get_mut(&id).expect("ordered ids are entries");
            let Waiting::Detached { until } = entry.waiting else {
                unreachable!("only detached questions are reattachable");
            };
            entry.waiting = Waiting::Attached { number, reply };
            let event = entry.event.clone();
            slot.send(SessionEvent::QuestionAttached(QuestionRef {
                id: id.clone(),
            }));
            table.deadlines.remove(&(until, seq));
            return Ok(Registered {
                attachment: Attachment {
                    id,
                    number,
                    seq,
                    key,
                    event,
                },
                waiter,
                found: Found::Reattached,
            });
        }
        if table.pending + table.held >= self.config.max_kept {
            return Err(RegisterError::TooManyPending {
                limit: self.config.max_kept,
            });
        }
        let id = question.id.clone();
        let event = Arc::new(SessionEvent::QuestionRequested(question));
        let seq = table.next_seq;
        table.next_seq += 1;
        table.pending += 1;
        let slot = table.session(session);
        slot.order.insert(seq, id.clone());
        slot.entries.insert(
            id.clone(),
            Entry {
                seq,
                key,
                event: event.clone(),
                waiting: Waiting::Attached { number, reply },
            },
        );
        // Only now, with the entry in place, may anyone see the question.
        let _ = slot.tx.send(event.clone());
        Ok(Registered {
            attachment: Attachment {
                id,
                number,
                seq,
                key,
                event,
            },
            waiter,
            found: Found::New,
        })
    }

    fn restore(&self, restored: Restored) {
        let grace = self.grace();
        let mut table = self.lock();
        for question in restored.pending {
            let session = question.session.clone();
            let key = self.key_of(&question.request);
            let id = question.id.clone();
            let seq = table.next_seq;
            table.next_seq += 1;
            table.pending += 1;
            let until = Instant::now() + grace;
            let slot = table.session(&session);
            slot.order.insert(seq, id.clone());
            slot.entries.insert(
                id.clone(),
                Entry {
                    seq,
                    key,
                    event: Arc::new(SessionEvent::QuestionRequested(question)),
                    waiting: Waiting::Detached { until },
                },
            );
            slot.index(key, seq);
            table.deadlines.insert((until, seq), session.clone());
            if grace.is_zero() {
                table.resolve(&session, &id, Ended::Expired);
            }
        }
        for (question, answer) in restored.held {
            let session = question.session.clone();
            let key = self.key_of(&question.request);
            let seq = table.next_seq;
            table.next_seq += 1;
            let resolution = answer.map_or(Resolution::Cancelled, Resolution::Answered);
            let event = Arc::new(SessionEvent::QuestionRequested(question));
            table.hold(&session, seq, key, event, resolution, grace);
        }
        drop(table);
        self.grace_started.notify_one();
    }

    fn check_answer(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<AnswerBatch, UserInteractionError> {
        let event = self.request_of(session, id)?;
        answer.normalize(&question(&event).request)
    }

    fn check_pending(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        self.request_of(session, id).map(drop)
    }

    fn let_go(
        &self,
        session: &str,
        attachment: Attachment,
        mut waiter: oneshot::Receiver<Resolution>,
        how: LetGo,
    ) {
        let grace = self.grace();
        let mut table = self.lock();
        let ours = table
            .sessions
            .get(session)
            .and_then(|slot| slot.entries.get(&attachment.id))
            .is_some_and(|entry| {
                matches!(entry.waiting, Waiting::Attached { number, .. } if number == attachment.number)
            });
        if ours {
            match how {
                LetGo::Abort => {
                    table.resolve(session, &attachment.id, Ended::Aborted);
                }
                LetGo::Detach if grace.is_zero() => {
                    table.resolve(session, &attachment.id, Ended::Abandoned);
                }
                LetGo::Detach => {
                    let until = Instant::now() + grace;
                    let table = &mut *table;
                    let slot = table.sessions.get_mut(session).expect("checked above");
                    let entry = slot.entries.get_mut(&attachment.id).expect("checked above");
                    entry.waiting = Waiting::Detached { until };
                    let seq = entry.seq;
                    slot.index(attachment.key, seq);
                    slot.send(SessionEvent::QuestionDetached(QuestionRef {
                        id: attachment.id.clone(),
                    }));
                    table.deadlines.insert((until, seq), session.to_owned());
                    self.grace_started.notify_one();
                }
            }
            return;
        }
        // Resolved meanwhile: a resolution handed over under this lock is in
        // the waiter now, or was never sent (aborted, timed out).
        if let Ok(resolution) = waiter.try_recv() {
            let Attachment {
                seq, key, event, ..
            } = attachment;
            table.hold(session, seq, key, event, resolution, grace);
            self.grace_started.notify_one();
        }
    }

    fn claim(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), UserInteractionError> {
        let event = self.request_of(session, id)?;
        // Validation runs outside the lock; the claim below re-checks pending.
        let answer = answer.normalize(&question(&event).request)?;
        let mut table = self.lock();
        let entry = table
            .resolve(session, id, Ended::Answered)
            .ok_or_else(|| table.not_pending(session, id))?;
        table.deliver(session, entry, Resolution::Answered(answer), self.grace());
        self.grace_started.notify_one();
        Ok(())
    }

    fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        let mut table = self.lock();
        let entry = table
            .resolve(session, id, Ended::Cancelled)
            .ok_or_else(|| table.not_pending(session, id))?;
        table.deliver(session, entry, Resolution::Cancelled, self.grace());
        self.grace_started.notify_one();
        Ok(())
    }

    fn abort(&self, session: &str, id: &str, outcome: Outcome) -> bool {
        self.lock()
            .resolve(session, id, Ended::from_outcome(outcome))
            .is_some()
    }

    fn abort_detached(&self, session: &str, id: &str) -> bool {
        let mut table = self.lock();
        let detached = table
            .sessions
            .get(session)
            .and_then(|slot| slot.entries.get(id))
            .is_some_and(|entry| matches!(entry.waiting, Waiting::Detached { .. }));
        detached && table.resolve(session, id, Ended::Aborted).is_some()
    }

    fn expire(&self, now: Instant) -> Option<Instant> {
        let mut table = self.lock();
        loop {
            let (&(until, seq), _) = table.deadlines.first_key_value()?;
            if until > now {
                return Some(until);
            }
            let session = table
                .deadlines
                .remove(&(until, seq))
                .expect("the first deadline");
            let Some(slot) = table.sessions.get_mut(&session) else {
                continue;
            };
            if let Some(held) = slot.held.remove(&seq) {
                slot.unindex(held.key, seq);
                table.held -= 1;
                log_never_delivered(&session, &held.id, &held.resolution);
                table.journal(|| Write::NeverDelivered { id: held.id });
                table.forget_if_idle(&session);
            } else if let Some(id) = slot.order.get(&seq).cloned() {
                table.resolve(&session, &id, Ended::Expired);
            }
        }
    }

    fn grace_started(&self) -> &Notify {
        &self.grace_started
    }

    fn snapshot(&self, session: &str) -> Vec<QuestionRequested> {
        let table = self.lock();
        let Some(slot) = table.sessions.get(session) else {
            return Vec::new();
        };
        slot.order
            .values()
            .map(|id| question(&slot.entries[id].event).clone())
            .collect()
    }

    fn subscribe(&self, session: &str) -> Subscription {
        let mut table = self.lock();
        let slot = table.session(session);
        let events = slot.tx.subscribe();
        let mut replay: Vec<SharedEvent> = Vec::with_capacity(slot.order.len() + 1);
        for id in slot.order.values() {
            let entry = &slot.entries[id];
            replay.push(entry.event.clone());
            if let Waiting::Detached { .. } = entry.waiting {
                replay.push(Arc::new(SessionEvent::QuestionDetached(QuestionRef {
                    id: id.clone(),
                })));
            }
        }
        let pending = slot.order.values().cloned().collect();
        replay.push(Arc::new(SessionEvent::SessionSynced(SessionSynced {
            pending,
        })));
        Subscription { replay, events }
    }

    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated {
        let table = self.lock();
        if let Some(slot) = table.sessions.get(session) {
            slot.send(SessionEvent::MessageCreated(message.clone()));
        }
        message
    }

    fn release(&self, session: &str) {
        self.lock().forget_if_idle(session);
    }

    fn dispose_all(&self) -> usize {
        let mut table = self.lock();
        table.closed = true;
        let ids: Vec<(String, String)> = table
            .sessions
            .iter()
            .flat_map(|(name, slot)| slot.order.values().map(|id| (name.clone(), id.clone())))
            .collect();
        for (session, id) in &ids {
            if let Some(Entry {
                waiting: Waiting::Attached { reply, .. },
                ..
            }) = table.resolve(session, id, Ended::Disposed)
            {
                let _ = reply.send(Resolution::Disposed);
            }
        }
        let names: Vec<String> = table.sessions.keys().cloned().collect();
        for name in names {
            let slot = table.sessions.get_mut(&name).expect("listed");
            for held in std::mem::take(&mut slot.held).into_values() {
                log_never_delivered(&name, &held.id, &held.resolution);
            }
            slot.reattachable.clear();
            table.forget_if_idle(&name);
        }
        table.held = 0;
        table.deadlines.clear();
        ids.len()
    }

    fn pending_count(&self) -> usize {
        self.lock().pending
    }

    fn held_count(&self) -> usize {
        self.lock().held
    }

    fn max_kept(&self) -> usize {
        self.config.max_kept
    }
}

/// Starts the one task that ends what outlived the detach grace
/// ([`PendingStore::expire`]), on tokio's clock, until `shutdown`.
pub fn spawn_grace_timer(
    store: Arc<dyn PendingStore>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let next = store.expire(Instant::now());
            let due = async {
                match next {
                    Some(next) => tokio::time::sleep_until(next).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = due => {}
                () = store.grace_started().notified() => {}
                () = shutdown.cancelled() => return,
            }
        }
    })
}

#[cfg(test)]
mod tests;
