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
use crate::transcript::{LogLimits, SessionLogs};
use ask_user_core::limits::{LISTED_SESSION_IDLE_MS, MAX_LISTED_SESSIONS, MAX_PENDING_PER_SESSION};
use ask_user_core::wire::{
    AnsweredBy, AskedBy, MessageCreated, Outcome, QuestionRef, QuestionRequested, QuestionResolved,
    Role, SessionEntry, SessionEvent, SessionList, SessionSynced, Transcript, TranscriptEntry,
    TranscriptRecord,
};
use ask_user_core::{AnswerBatch, AskRequest, UserInteractionError};
use bytes::Bytes;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod fanout;

use fanout::Fanout;
pub use fanout::{EventReceiver, RecvError, TryRecvError};

/// A session event as broadcast: shared, so a large request is never copied
/// per subscriber. A `question/requested` kept by the table carries its
/// request's canonical JSON too, so neither a stream nor a list serialises
/// the request again.
#[derive(Debug, Clone)]
pub struct SharedEvent {
    event: Arc<SessionEvent>,
    request_json: Option<Bytes>,
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
        }
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

/// `question` exactly as `serde_json` writes core's `QuestionRequested`,
/// written around `request_json`, its request's canonical JSON: what a stream
/// sends and the record keeps, without serialising the request again.
pub fn question_json(question: &QuestionRequested, request_json: &[u8]) -> String {
    let json = std::str::from_utf8(request_json).expect("serde_json writes UTF-8");
    let id = serde_json::to_string(&question.id).expect("strings serialise");
    let session = serde_json::to_string(&question.session).expect("strings serialise");
    let tail = question_tail(question.created_at_ms, question.asked_by.as_ref());
    format!(r#"{{"id":{id},"session":{session},"request":{json}{tail}"#)
}

/// A request's canonical JSON (`serde_json::to_vec`), in an allocation of
/// its own size: a pending question keeps it for as long as it waits.
pub fn request_json(request: &AskRequest) -> Bytes {
    let mut json = serde_json::to_vec(request).expect("requests always serialise");
    json.shrink_to_fit();
    Bytes::from(json)
}

/// What `serde_json` writes after a question's request in core's
/// `QuestionRequested` and `PendingQuestion`: the time, the asker if known,
/// and the closing brace.
pub fn question_tail(created_at_ms: u64, asked_by: Option<&AskedBy>) -> String {
    match asked_by {
        Some(asked_by) => {
            let asked_by = serde_json::to_string(asked_by).expect("askers always serialise");
            format!(r#","created_at_ms":{created_at_ms},"asked_by":{asked_by}}}"#)
        }
        None => format!(r#","created_at_ms":{created_at_ms}}}"#),
    }
}

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
    number: u64,
    seq: u64,
    key: u64,
    bytes: usize,
    event: SharedEvent,
}

impl Attachment {
    /// The question's id (its event's: a waiting question keeps no copy).
    pub fn id(&self) -> &str {
        &question(&self.event).id
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

/// Which limit a refused question would have gone over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingLimit {
    /// `--max-pending`: questions kept at once across sessions (pending or held).
    Total(usize),
    /// Questions pending in one session: at most what the page's
    /// questionnaire holds (core's `limits::MAX_PENDING_PER_SESSION`).
    PerSession(usize),
    /// `--max-pending-bytes`: bytes of requests kept at once (each twice its
    /// canonical JSON: parsed, and the JSON kept for lists).
    Bytes(usize),
}

/// Why a question could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterError {
    /// The store is disposed (the host is shutting down).
    ShuttingDown,
    /// Keeping one more question would break `limit`.
    TooManyPending {
        /// The limit.
        limit: PendingLimit,
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
    pub events: EventReceiver,
}

/// The pending table of questions and the per-session event broadcast.
///
/// Implementations make each method one atomic step with respect to the others.
pub trait PendingStore: Send + Sync + 'static {
    /// Attaches to the oldest detached question or held resolution of
    /// `session` whose request equals `request` (validated), else registers a
    /// new question asked by `asked_by` and broadcasts `question/requested`;
    /// a reattached question broadcasts `question/attached`.
    fn register(
        &self,
        session: &str,
        request: AskRequest,
        asked_by: Option<AskedBy>,
    ) -> Result<Registered, RegisterError> {
        self.register_as(QuestionRequested {
            id: question_id(),
            session: session.to_owned(),
            request,
            created_at_ms: now_ms(),
            asked_by,
        })
    }

    /// [`PendingStore::register`] of a question whose id and time the caller
    /// chose (and wrote to the record first); when it attaches instead, that
    /// id is unused.
    fn register_as(&self, question: QuestionRequested) -> Result<Registered, RegisterError> {
        let json = request_json(&question.request);
        self.register_with_json(question, json)
    }

    /// [`PendingStore::register_as`] with the request's canonical JSON
    /// ([`request_json`]) made by the caller already (for the record), so it
    /// is made once.
    fn register_with_json(
        &self,
        question: QuestionRequested,
        request_json: Bytes,
    ) -> Result<Registered, RegisterError>;

    /// Puts back what the record still had open at start: pending questions
    /// come back detached and held resolutions held, their grace counted from
    /// now. The limits do not apply (they were kept already).
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
    ) -> Result<(), UserInteractionError> {
        self.claim_by(session, id, answer, None)
    }

    /// [`PendingStore::claim`], the record naming who answered.
    fn claim_by(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError>;

    /// The person closed the question: removes it, fails the waiting ask with
    /// `ASK_CANCELLED` (or holds that for the next identical ask when none
    /// waits) and broadcasts `cancelled`. `NOT_PENDING` when gone.
    fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        self.cancel_by(session, id, None)
    }

    /// [`PendingStore::cancel`], the record naming who cancelled.
    fn cancel_by(
        &self,
        session: &str,
        id: &str,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError>;

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

    /// The `question/requested` events of `session`'s pending questions,
    /// oldest first: shared, so taking them costs no copy of a request, and
    /// carrying each request's JSON, so writing them serialises none.
    fn pending_events(&self, session: &str) -> Vec<SharedEvent>;

    /// The pending questions of `session`, oldest first (copied).
    fn snapshot(&self, session: &str) -> Vec<QuestionRequested> {
        self.pending_events(session)
            .iter()
            .map(|event| question(event).clone())
            .collect()
    }

    /// Subscribes to `session` and takes the replay in the same step.
    fn subscribe(&self, session: &str) -> Subscription;

    /// Keeps a transcript message in `session` and broadcasts it to its
    /// subscribers.
    fn post_message(&self, session: &str, role: Role, text: String) -> MessageCreated {
        let message = MessageCreated {
            id: random_id("m_"),
            role,
            text,
            at_ms: now_ms(),
            by: None,
        };
        self.post_message_as(session, message)
    }

    /// [`PendingStore::post_message`] of `message` (already written to the record).
    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated;

    /// `session`'s transcript: its most recent messages and records of
    /// resolved questions, oldest first.
    fn transcript(&self, session: &str) -> Transcript;

    /// The sessions with pending questions or activity within
    /// [`LISTED_SESSION_IDLE_MS`] of `now_ms`, most urgent first, at most
    /// [`MAX_LISTED_SESSIONS`].
    fn sessions(&self, now_ms: u64) -> SessionList;

    /// Marked changed whenever [`PendingStore::sessions`] may have changed.
    fn inbox(&self) -> watch::Receiver<()>;

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

    /// Every limit [`PendingStore::register`] may refuse with.
    fn pending_limits(&self) -> Vec<PendingLimit> {
        vec![PendingLimit::Total(self.max_kept())]
    }

    /// Bytes of requests kept now, pending and held (each twice its canonical JSON).
    fn pending_bytes(&self) -> usize {
        0
    }
}

/// How many events a session's broadcast buffers for a slow subscriber before
/// that subscriber lags (and is re-synced).
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

/// How many bytes of events a session's broadcast buffers for one slow
/// subscriber before that subscriber lags (and is re-synced): 1 MiB.
pub const DEFAULT_EVENT_BUFFER_BYTES: usize = 1024 * 1024;

/// Default for `--max-pending-bytes`: bytes of requests kept at once (64 MiB).
pub const DEFAULT_MAX_PENDING_BYTES: usize = 64 * 1024 * 1024;

/// What an event other than `question/requested` weighs in a subscriber's
/// budget besides its text: its id and framing.
const EVENT_OVERHEAD: usize = 64;

/// How many resolved ids the store remembers to explain `NOT_PENDING`.
pub const REMEMBERED_RESOLUTIONS: usize = 4096;

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

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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
    /// What the entry costs against the byte budget ([`entry_bytes`]).
    bytes: usize,
    /// The `question/requested` event with its request's JSON, kept as sent
    /// (replayed and listed as is).
    event: SharedEvent,
    waiting: Waiting,
}

/// A resolution no call has collected yet.
struct Held {
    id: String,
    key: u64,
    bytes: usize,
    event: SharedEvent,
    resolution: Resolution,
    until: Instant,
}

/// What a pending entry costs against `--max-pending-bytes`: its request
/// twice, parsed (about its JSON's size) and as the JSON kept for lists.
fn entry_bytes(request_json: &[u8]) -> usize {
    2 * request_json.len()
}

fn question(event: &SessionEvent) -> &QuestionRequested {
    match event {
        SessionEvent::QuestionRequested(q) => q,
        _ => unreachable!("entries only hold question/requested events"),
    }
}

/// What `event` weighs in a subscriber's byte budget (`question/requested`
/// is sent with its request's size instead).
fn event_bytes(event: &SessionEvent) -> usize {
    match event {
        SessionEvent::MessageCreated(message) => message.text.len() + EVENT_OVERHEAD,
        _ => EVENT_OVERHEAD,
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
    tx: Fanout,
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
    fn new(capacity: usize, budget: usize) -> Self {
        Self {
            tx: Fanout::new(capacity, budget),
            order: BTreeMap::new(),
            entries: HashMap::new(),
            held: BTreeMap::new(),
            reattachable: HashMap::new(),
        }
    }

    fn send(&mut self, event: SessionEvent) {
        let bytes = event_bytes(&event);
        // No subscriber is fine: a stream opened later replays the table.
        self.tx.send(&SharedEvent::from(event), bytes);
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
    /// Events a new session's broadcast buffers per subscriber.
    capacity: usize,
    /// Bytes of events a new session's broadcast buffers per subscriber.
    budget: usize,
    /// Attached and detached questions.
    pending: usize,
    /// Bytes of the requests of pending questions and held resolutions.
    bytes: usize,
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
    /// Transcripts and activity per session.
    logs: SessionLogs,
    /// Marked on every change the session list shows.
    inbox: watch::Sender<()>,
    /// The durable record, told of every ending the table decides itself.
    journal: Option<Arc<dyn Store>>,
}

impl Table {
    fn new(capacity: usize, budget: usize) -> Self {
        Self {
            sessions: HashMap::new(),
            capacity,
            budget,
            pending: 0,
            bytes: 0,
            held: 0,
            next_seq: 0,
            next_attachment: 0,
            closed: false,
            deadlines: BTreeMap::new(),
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            logs: SessionLogs::new(LogLimits::default()),
            inbox: watch::channel(()).0,
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
        let (capacity, budget) = (self.capacity, self.budget);
        self.sessions
            .entry(name.to_owned())
            .or_insert_with(|| Session::new(capacity, budget))
    }

    fn attachment_number(&mut self) -> u64 {
        self.next_attachment += 1;
        self.next_attachment
    }

    /// Removes a pending entry, keeps its record in the transcript and
    /// reports how it ended (with the record) to the session's streams.
    fn resolve(&mut self, session: &str, id: &str, ended: Ended) -> Option<Entry> {
        self.resolve_with(session, id, ended, None, None)
    }

    /// [`Table::resolve`] with the answer the record keeps (when answered).
    fn resolve_with(
        &mut self,
        session: &str,
        id: &str,
        ended: Ended,
        answer: Option<&AnswerBatch>,
        by: Option<AnsweredBy>,
    ) -> Option<Entry> {
        let slot = self.sessions.get_mut(session)?;
        let entry = slot.entries.remove(id)?;
        slot.order.remove(&entry.seq);
        if let Waiting::Detached { until } = entry.waiting {
            slot.unindex(entry.key, entry.seq);
            self.deadlines.remove(&(until, entry.seq));
        }
        let asked = question(&entry.event);
        let record = TranscriptRecord {
            id: id.to_owned(),
            request: asked.request.clone(),
            asked_by: asked.asked_by.clone(),
            created_at_ms: asked.created_at_ms,
            resolved_at_ms: now_ms(),
            outcome: ended.outcome(),
            answer: answer.filter(|_| ended == Ended::Answered).cloned(),
            by: by.filter(|_| matches!(ended, Ended::Answered | Ended::Cancelled)),
        };
        slot.send(SessionEvent::QuestionResolved(QuestionResolved {
            id: id.to_owned(),
            outcome: ended.outcome(),
            record: Some(record.clone()),
        }));
        self.logs.push(session, TranscriptEntry::Record(record));
        self.inbox.send_replace(());
        self.pending -= 1;
        self.bytes -= entry.bytes;
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
                    (entry.seq, entry.key, entry.bytes),
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
    /// Puts a new pending question in its session (asked now, or restored
    /// from the record): the next sequence number, counted against the
    /// totals, its asker noted in the session's activity. Returns its
    /// sequence number and `question/requested` event.
    fn insert_pending(
        &mut self,
        question: QuestionRequested,
        (key, json, bytes): (u64, Bytes, usize),
        waiting: Waiting,
    ) -> (u64, SharedEvent) {
        let session = question.session.clone();
        let id = question.id.clone();
        self.logs.touch(
            session.as_str(),
            question.created_at_ms,
            question.asked_by.as_ref(),
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending += 1;
        self.bytes += bytes;
        let event = SharedEvent::requested(question, json);
        let slot = self.session(session.as_str());
        slot.order.insert(seq, id.clone());
        slot.entries.insert(
            id,
            Entry {
                seq,
                key,
                bytes,
                event: event.clone(),
                waiting,
            },
        );
        (seq, event)
    }

    fn hold(
        &mut self,
        session: &str,
        (seq, key, bytes): (u64, u64, usize),
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
                bytes,
                event,
                resolution,
                until,
            },
        );
        self.held += 1;
        self.bytes += bytes;
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

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            event_buffer_bytes: DEFAULT_EVENT_BUFFER_BYTES,
            detach_grace: DEFAULT_DETACH_GRACE,
            max_kept: usize::MAX,
            max_per_session: MAX_PENDING_PER_SESSION,
            max_bytes: usize::MAX,
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
    /// A per-session limit above core's `MAX_PENDING_PER_SESSION` is lowered
    /// to it: the page could not show the questions past it.
    pub fn with_config(config: StoreConfig) -> Self {
        Self::with_journal(config, None)
    }

    /// [`MemoryStore::with_config`], telling `journal` of every ending it
    /// decides itself (aborted, timed out, expired, disposed; a held
    /// resolution never collected).
    pub fn with_journal(mut config: StoreConfig, journal: Option<Arc<dyn Store>>) -> Self {
        config.channel_capacity = config.channel_capacity.max(1);
        config.max_per_session = config.max_per_session.min(MAX_PENDING_PER_SESSION);
        let mut table = Table::new(config.channel_capacity, config.event_buffer_bytes);
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

    /// The reattach key of a validated request, a hash of its canonical JSON
    /// (matches are confirmed by comparing the requests), and that JSON, kept
    /// with the entry so no list serialises the request again.
    fn key_of(&self, request: &AskRequest) -> (u64, Bytes) {
        let canonical = request_json(request);
        (self.hasher.hash_one(&canonical), canonical)
    }

    /// The limit one more question of `bytes` in `session` would break.
    fn full(&self, table: &Table, session: &str, bytes: usize) -> Option<PendingLimit> {
        let config = &self.config;
        let in_session = table.sessions.get(session).map_or(0, |s| s.entries.len());
        if table.pending + table.held >= config.max_kept {
            Some(PendingLimit::Total(config.max_kept))
        } else if in_session >= config.max_per_session {
            Some(PendingLimit::PerSession(config.max_per_session))
        } else if table.bytes.saturating_add(bytes) > config.max_bytes {
            Some(PendingLimit::Bytes(config.max_bytes))
        } else {
            None
        }
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
    fn register_with_json(
        &self,
        question: QuestionRequested,
        json: Bytes,
    ) -> Result<Registered, RegisterError> {
        let session = question.session.clone();
        let session = session.as_str();
        let key = self.hasher.hash_one(&json);
        let bytes = entry_bytes(&json);
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
                table.bytes -= held.bytes;
                let _ = reply.send(held.resolution);
                table.forget_if_idle(session);
                return Ok(Registered {
                    attachment: Attachment {
                        number,
                        seq,
                        key,
                        bytes: held.bytes,
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
            let bytes = entry.bytes;
            slot.send(SessionEvent::QuestionAttached(QuestionRef {
                id: id.clone(),
            }));
            table.deadlines.remove(&(until, seq));
            return Ok(Registered {
                attachment: Attachment {
                    number,
                    seq,
                    key,
                    bytes,
                    event,
                },
                waiter,
                found: Found::Reattached,
            });
        }
        if let Some(limit) = self.full(&table, session, bytes) {
            return Err(RegisterError::TooManyPending { limit });
        }
        let weight = json.len();
        let waiting = Waiting::Attached { number, reply };
        let (seq, event) = table.insert_pending(question, (key, json, bytes), waiting);
        table.inbox.send_replace(());
        // Only now, with the entry in place, may anyone see the question (its
        // weight in a stream's budget is what the stream sends: about its JSON).
        table.session(session).tx.send(&event, weight);
        Ok(Registered {
            attachment: Attachment {
                number,
                seq,
                key,
                bytes,
                event,
            },
            waiter,
            found: Found::New,
        })
    }

    fn restore(&self, restored: Restored) {
        let grace = self.grace();
        let mut table = self.lock();
        // Oldest first, so the logs keep the most recent within their limits.
        for (session, entry) in restored.transcripts {
            if let TranscriptEntry::Record(record) = &entry {
                let asked_by = record.asked_by.clone();
                table
                    .logs
                    .touch(&session, record.resolved_at_ms, asked_by.as_ref());
            }
            table.logs.push(&session, entry);
        }
        // The same caps as live asks (per session, in all, in bytes), held
        // answers first: they carry the person's work. What does not fit
        // stays in the record as it is, for a start with room.
        let mut beyond_caps = 0;
        for (question, answer) in restored.held {
            let session = question.session.clone();
            let (key, json) = self.key_of(&question.request);
            let bytes = entry_bytes(&json);
            if self.full(&table, &session, bytes).is_some() {
                beyond_caps += 1;
                continue;
            }
            let seq = table.next_seq;
            table.next_seq += 1;
            let resolution = answer.map_or(Resolution::Cancelled, Resolution::Answered);
            let event = SharedEvent::requested(question, json);
            table.hold(&session, (seq, key, bytes), event, resolution, grace);
        }
        for question in restored.pending {
            let session = question.session.clone();
            let (key, json) = self.key_of(&question.request);
            let bytes = entry_bytes(&json);
            if self.full(&table, &session, bytes).is_some() {
                beyond_caps += 1;
                continue;
            }
            let id = question.id.clone();
            let until = Instant::now() + grace;
            let waiting = Waiting::Detached { until };
            let (seq, _) = table.insert_pending(question, (key, json, bytes), waiting);
            table.session(&session).index(key, seq);
            table.deadlines.insert((until, seq), session.clone());
            if grace.is_zero() {
                table.resolve(&session, &id, Ended::Expired);
            }
        }
        if beyond_caps > 0 {
            tracing::warn!(
                left = beyond_caps,
                "kept questions beyond the pending caps (--max-pending, --max-pending-bytes, \
                 per session) were not restored; they stay in the store for a start with room"
            );
        }
        table.inbox.send_replace(());
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
            .and_then(|slot| slot.entries.get(attachment.id()))
            .is_some_and(|entry| {
                matches!(entry.waiting, Waiting::Attached { number, .. } if number == attachment.number)
            });
        if ours {
            match how {
                LetGo::Abort => {
                    table.resolve(session, attachment.id(), Ended::Aborted);
                }
                LetGo::Detach if grace.is_zero() => {
                    table.resolve(session, attachment.id(), Ended::Abandoned);
                }
                LetGo::Detach => {
                    let until = Instant::now() + grace;
                    let table = &mut *table;
                    let slot = table.sessions.get_mut(session).expect("checked above");
                    let entry = slot
                        .entries
                        .get_mut(attachment.id())
                        .expect("checked above");
                    entry.waiting = Waiting::Detached { until };
                    let seq = entry.seq;
                    slot.index(attachment.key, seq);
                    slot.send(SessionEvent::QuestionDetached(QuestionRef {
                        id: attachment.id().to_owned(),
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
                seq,
                key,
                bytes,
                event,
                ..
            } = attachment;
            table.hold(session, (seq, key, bytes), event, resolution, grace);
            self.grace_started.notify_one();
        }
    }

    fn claim_by(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError> {
        // Validation runs outside the lock; the claim below re-checks pending.
        let answer = self.check_answer(session, id, answer)?;
        let mut table = self.lock();
        let entry = table
            .resolve_with(session, id, Ended::Answered, Some(&answer), by)
            .ok_or_else(|| table.not_pending(session, id))?;
        table.deliver(session, entry, Resolution::Answered(answer), self.grace());
        self.grace_started.notify_one();
        Ok(())
    }

    fn cancel_by(
        &self,
        session: &str,
        id: &str,
        by: Option<AnsweredBy>,
    ) -> Result<(), UserInteractionError> {
        let mut table = self.lock();
        let entry = table
            .resolve_with(session, id, Ended::Cancelled, None, by)
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
                table.bytes -= held.bytes;
                log_never_delivered(&session, &held.id, &held.resolution);
                table.journal(|| Write::NeverDelivered {
                    id: held.id.clone(),
                });
                table.forget_if_idle(&session);
            } else if let Some(id) = slot.order.get(&seq).cloned() {
                table.resolve(&session, &id, Ended::Expired);
            }
        }
    }

    fn grace_started(&self) -> &Notify {
        &self.grace_started
    }

    fn pending_events(&self, session: &str) -> Vec<SharedEvent> {
        let table = self.lock();
        let Some(slot) = table.sessions.get(session) else {
            return Vec::new();
        };
        slot.order
            .values()
            .map(|id| slot.entries[id].event.clone())
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
                replay.push(SharedEvent::from(SessionEvent::QuestionDetached(
                    QuestionRef { id: id.clone() },
                )));
            }
        }
        let pending = slot.order.values().cloned().collect();
        replay.push(SharedEvent::from(SessionEvent::SessionSynced(
            SessionSynced { pending },
        )));
        Subscription { replay, events }
    }

    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated {
        let mut table = self.lock();
        if let Some(slot) = table.sessions.get_mut(session) {
            slot.send(SessionEvent::MessageCreated(message.clone()));
        }
        table
            .logs
            .push(session, TranscriptEntry::Message(message.clone()));
        table.inbox.send_replace(());
        message
    }

    fn transcript(&self, session: &str) -> Transcript {
        self.lock().logs.transcript(session)
    }

    fn sessions(&self, now_ms: u64) -> SessionList {
        let table = self.lock();
        let mut sessions: Vec<SessionEntry> = Vec::new();
        for (name, slot) in &table.sessions {
            let Some(oldest) = slot.order.values().next() else {
                continue;
            };
            let oldest = question(&slot.entries[oldest].event);
            let newest = slot
                .order
                .values()
                .next_back()
                .map(|id| question(&slot.entries[id].event));
            let log = table.logs.get(name);
            sessions.push(SessionEntry {
                id: name.clone(),
                pending: u32::try_from(slot.order.len()).unwrap_or(u32::MAX),
                last_activity_ms: log
                    .map_or(0, |log| log.last_activity_ms)
                    .max(newest.map_or(0, |q| q.created_at_ms)),
                asked_by: log
                    .and_then(|log| log.asked_by.clone())
                    .or_else(|| newest.and_then(|q| q.asked_by.clone())),
                first_question: oldest
                    .request
                    .questions
                    .first()
                    .map(|q| SessionEntry::first_question_of(&q.question)),
                newest_question: newest
                    .and_then(|q| q.request.questions.first())
                    .map(|q| SessionEntry::first_question_of(&q.question)),
            });
        }
        for (name, log) in table.logs.iter() {
            let has_pending = table
                .sessions
                .get(name)
                .is_some_and(|slot| !slot.order.is_empty());
            if has_pending || now_ms.saturating_sub(log.last_activity_ms) > LISTED_SESSION_IDLE_MS {
                continue;
            }
            sessions.push(SessionEntry {
                id: name.to_owned(),
                pending: 0,
                last_activity_ms: log.last_activity_ms,
                asked_by: log.asked_by.clone(),
                first_question: None,
                newest_question: None,
            });
        }
        sessions.sort_by(SessionEntry::urgency_order);
        sessions.truncate(MAX_LISTED_SESSIONS);
        SessionList { sessions }
    }

    fn inbox(&self) -> watch::Receiver<()> {
        self.lock().inbox.subscribe()
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
        table.bytes = table
            .sessions
            .values()
            .map(|slot| slot.entries.values().map(|e| e.bytes).sum::<usize>())
            .sum();
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

    fn pending_limits(&self) -> Vec<PendingLimit> {
        vec![
            PendingLimit::Total(self.config.max_kept),
            PendingLimit::PerSession(self.config.max_per_session),
            PendingLimit::Bytes(self.config.max_bytes),
        ]
    }

    fn pending_bytes(&self) -> usize {
        self.lock().bytes
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
