//! The pending table: every question that waits for an answer, per session,
//! and each session's event broadcast.
//!
//! One synchronous lock guards the table *and* the broadcasts, so "check and
//! remove" is one atomic step (the first valid answer wins), an event is sent
//! in the same step as the change it reports, and a new stream subscribes and
//! takes its snapshot in one step too (nothing falls between replay and live).
//! The table sits behind [`PendingStore`] so a shared store can replace process
//! memory without touching the routes.

use ask_user_core::wire::{
    MessageCreated, Outcome, QuestionRequested, QuestionResolved, Role, SessionEvent, SessionSynced,
};
use ask_user_core::{AnswerBatch, AskRequest, UserInteractionError};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, oneshot};

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

/// A registered question: its id and where its resolution arrives.
#[derive(Debug)]
pub struct Registered {
    /// The host-minted id.
    pub id: String,
    /// Receives the resolution; dropped unsent when the question is aborted.
    pub waiter: oneshot::Receiver<Resolution>,
}

/// A new subscriber's view of a session: what to replay, then what comes live.
#[derive(Debug)]
pub struct Subscription {
    /// One `question/requested` per pending question (oldest first), then one
    /// `session/synced` listing their ids.
    pub replay: Vec<SharedEvent>,
    /// Every event after the snapshot.
    pub events: broadcast::Receiver<SharedEvent>,
}

/// The pending table of questions and the per-session event broadcast.
///
/// Implementations make each method one atomic step with respect to the others.
pub trait PendingStore: Send + Sync + 'static {
    /// Registers a (validated) request in `session`, then broadcasts
    /// `question/requested`. Fails with `ASK_ABORTED` once the store is disposed.
    fn register(
        &self,
        session: &str,
        request: AskRequest,
    ) -> Result<Registered, UserInteractionError>;

    /// Validates `answer` against the question through core, then removes the
    /// question in the same step that checks it is still pending, hands the
    /// normalised answer to the waiting ask and broadcasts `question/resolved`
    /// (`answered`). `BAD_ANSWER` leaves the question pending; `NOT_PENDING`
    /// says why, when known.
    fn claim(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), UserInteractionError>;

    /// The person closed the question: removes it, fails the waiting ask with
    /// `ASK_CANCELLED` and broadcasts `cancelled`. `NOT_PENDING` when gone.
    fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError>;

    /// The asking side gave up (`Outcome::Aborted`) or ran out of time
    /// (`Outcome::Timeout`): removes the question and broadcasts the outcome.
    /// Returns false when it was no longer pending.
    fn abort(&self, session: &str, id: &str, outcome: Outcome) -> bool;

    /// The pending questions of `session`, oldest first.
    fn snapshot(&self, session: &str) -> Vec<QuestionRequested>;

    /// Subscribes to `session` and takes the replay in the same step.
    fn subscribe(&self, session: &str) -> Subscription;

    /// Broadcasts a transcript message to `session`'s subscribers.
    fn post_message(&self, session: &str, role: Role, text: String) -> MessageCreated;

    /// Forgets `session`'s broadcast when nothing waits there and nobody listens.
    fn release(&self, session: &str);

    /// Resolves every pending question as `disposed` (the waiting asks get
    /// `ASK_ABORTED`) and refuses new ones. Returns how many were pending.
    fn dispose_all(&self) -> usize;

    /// How many questions wait, across sessions.
    fn pending_count(&self) -> usize;
}

/// How many events a session's broadcast buffers for a slow subscriber before
/// that subscriber lags (and is re-synced).
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

/// How many resolved ids the store remembers to explain `NOT_PENDING`.
pub const REMEMBERED_RESOLUTIONS: usize = 4096;

/// A 128-bit random id as 32 lowercase hex digits, with a prefix.
pub fn random_id(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

struct Entry {
    seq: u64,
    /// The `question/requested` event, kept as sent (replayed as is).
    event: SharedEvent,
    reply: oneshot::Sender<Resolution>,
}

impl Entry {
    fn question(&self) -> &QuestionRequested {
        match &*self.event {
            SessionEvent::QuestionRequested(q) => q,
            _ => unreachable!("entries only hold question/requested events"),
        }
    }
}

struct Session {
    tx: broadcast::Sender<SharedEvent>,
    /// Pending ids in registration order.
    order: BTreeMap<u64, String>,
    entries: HashMap<String, Entry>,
}

impl Session {
    fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity).0,
            order: BTreeMap::new(),
            entries: HashMap::new(),
        }
    }

    fn send(&self, event: SharedEvent) {
        // No subscriber is fine: a stream opened later replays the table.
        let _ = self.tx.send(event);
    }

    fn is_idle(&self) -> bool {
        self.entries.is_empty() && self.tx.receiver_count() == 0
    }
}

#[derive(Default)]
struct Table {
    sessions: HashMap<String, Session>,
    pending: usize,
    next_seq: u64,
    closed: bool,
    /// id → (session, outcome) of recently resolved questions, bounded.
    recent: HashMap<String, (String, Outcome)>,
    recent_order: VecDeque<String>,
}

impl Table {
    fn session(&mut self, name: &str, capacity: usize) -> &mut Session {
        self.sessions
            .entry(name.to_owned())
            .or_insert_with(|| Session::new(capacity))
    }

    /// Removes a pending entry and reports `outcome` to the session's streams.
    fn resolve(&mut self, session: &str, id: &str, outcome: Outcome) -> Option<Entry> {
        let slot = self.sessions.get_mut(session)?;
        let entry = slot.entries.remove(id)?;
        slot.order.remove(&entry.seq);
        slot.send(Arc::new(SessionEvent::QuestionResolved(QuestionResolved {
            id: id.to_owned(),
            outcome,
        })));
        if slot.is_idle() {
            self.sessions.remove(session);
        }
        self.pending -= 1;
        self.remember(id, session, outcome);
        Some(entry)
    }

    fn remember(&mut self, id: &str, session: &str, outcome: Outcome) {
        if self.recent_order.len() >= REMEMBERED_RESOLUTIONS
            && let Some(oldest) = self.recent_order.pop_front()
        {
            self.recent.remove(&oldest);
        }
        self.recent
            .insert(id.to_owned(), (session.to_owned(), outcome));
        self.recent_order.push_back(id.to_owned());
    }

    fn not_pending(&self, session: &str, id: &str) -> UserInteractionError {
        let why = match self.recent.get(id) {
            Some((owner, outcome)) if owner == session => match outcome {
                Outcome::Answered => "it was already answered",
                Outcome::Cancelled => "it was cancelled",
                Outcome::Aborted => "the agent aborted it",
                Outcome::Timeout => "it timed out",
                Outcome::Disposed => "the host shut down",
            },
            _ if self.closed => "the host is shutting down",
            _ => "no such question waits in this session",
        };
        UserInteractionError::not_pending(format!(
            "question {id:?} is not pending in session {session:?}: {why}"
        ))
    }
}

/// The in-process [`PendingStore`].
pub struct MemoryStore {
    table: Mutex<Table>,
    capacity: usize,
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
            .finish()
    }
}

impl MemoryStore {
    /// An empty store with the default broadcast capacity.
    pub fn new() -> Self {
        Self::with_channel_capacity(DEFAULT_CHANNEL_CAPACITY)
    }

    /// An empty store whose per-session broadcasts buffer `capacity` events.
    pub fn with_channel_capacity(capacity: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic elsewhere must not wedge every ask: the table stays consistent
        // because each step mutates it only after its checks.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
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
}

impl PendingStore for MemoryStore {
    fn register(
        &self,
        session: &str,
        request: AskRequest,
    ) -> Result<Registered, UserInteractionError> {
        let id = random_id("q_");
        let (reply, waiter) = oneshot::channel();
        let event = Arc::new(SessionEvent::QuestionRequested(QuestionRequested {
            id: id.clone(),
            session: session.to_owned(),
            request,
            created_at_ms: now_ms(),
        }));
        let mut table = self.lock();
        if table.closed {
            return Err(UserInteractionError::provider_disposed());
        }
        let seq = table.next_seq;
        table.next_seq += 1;
        table.pending += 1;
        let slot = table.session(session, self.capacity);
        slot.order.insert(seq, id.clone());
        slot.entries.insert(
            id.clone(),
            Entry {
                seq,
                event: event.clone(),
                reply,
            },
        );
        // Only now, with the entry in place, may anyone see the question.
        slot.send(event);
        Ok(Registered { id, waiter })
    }

    fn claim(
        &self,
        session: &str,
        id: &str,
        answer: AnswerBatch,
    ) -> Result<(), UserInteractionError> {
        let event = self.request_of(session, id)?;
        let SessionEvent::QuestionRequested(question) = &*event else {
            unreachable!("entries only hold question/requested events");
        };
        // Validation runs outside the lock; the claim below re-checks pending.
        let answer = answer.normalize(&question.request)?;
        let mut table = self.lock();
        let entry = table
            .resolve(session, id, Outcome::Answered)
            .ok_or_else(|| table.not_pending(session, id))?;
        // The asker may have gone this instant; its drop guard finds nothing left.
        let _ = entry.reply.send(Resolution::Answered(answer));
        Ok(())
    }

    fn cancel(&self, session: &str, id: &str) -> Result<(), UserInteractionError> {
        let mut table = self.lock();
        let entry = table
            .resolve(session, id, Outcome::Cancelled)
            .ok_or_else(|| table.not_pending(session, id))?;
        let _ = entry.reply.send(Resolution::Cancelled);
        Ok(())
    }

    fn abort(&self, session: &str, id: &str, outcome: Outcome) -> bool {
        self.lock().resolve(session, id, outcome).is_some()
    }

    fn snapshot(&self, session: &str) -> Vec<QuestionRequested> {
        let table = self.lock();
        let Some(slot) = table.sessions.get(session) else {
            return Vec::new();
        };
        slot.order
            .values()
            .map(|id| slot.entries[id].question().clone())
            .collect()
    }

    fn subscribe(&self, session: &str) -> Subscription {
        let mut table = self.lock();
        let slot = table.session(session, self.capacity);
        let events = slot.tx.subscribe();
        let mut replay: Vec<SharedEvent> = slot
            .order
            .values()
            .map(|id| slot.entries[id].event.clone())
            .collect();
        let pending = slot.order.values().cloned().collect();
        replay.push(Arc::new(SessionEvent::SessionSynced(SessionSynced {
            pending,
        })));
        Subscription { replay, events }
    }

    fn post_message(&self, session: &str, role: Role, text: String) -> MessageCreated {
        let message = MessageCreated {
            id: random_id("m_"),
            role,
            text,
        };
        let table = self.lock();
        if let Some(slot) = table.sessions.get(session) {
            slot.send(Arc::new(SessionEvent::MessageCreated(message.clone())));
        }
        message
    }

    fn release(&self, session: &str) {
        let mut table = self.lock();
        if table.sessions.get(session).is_some_and(Session::is_idle) {
            table.sessions.remove(session);
        }
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
            if let Some(entry) = table.resolve(session, id, Outcome::Disposed) {
                let _ = entry.reply.send(Resolution::Disposed);
            }
        }
        ids.len()
    }

    fn pending_count(&self) -> usize {
        self.lock().pending
    }
}

#[cfg(test)]
mod tests;
