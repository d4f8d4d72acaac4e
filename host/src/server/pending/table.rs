//! The pending table's rules as a state machine with no runtime in it
//! (quinn-proto's connection, crux's update): [`Table::apply`] takes one
//! [`Input`] at an instant and returns what must happen because of it, in
//! order ([`Outputs`]); [`Table::poll_timeout`] says when [`Input::Expire`] is
//! next due. Waiting calls are [`WaiterId`]s the driver maps to its channels.
//!
//! The driver (`super::PendingTable`) owns the lock, the clock, the
//! channels, the broadcasts and the timer task, and carries out each step's
//! outputs before it lets the lock go; so a resolution is in its waiter, a
//! frame in every stream's queue and a write in the record's queue in the
//! table's order. This file imports nothing from tokio (a tidy test holds it).

use super::SharedEvent;
use crate::server::store::{Observed, RecordState, Restored, Write};
use crate::server::transcript::{LogLimits, SessionLogs};
use ask_user_core::limits::{LISTED_SESSION_IDLE_MS, MAX_LISTED_SESSIONS, MAX_PENDING_PER_SESSION};
use ask_user_core::wire::{
    AnsweredBy, MessageCreated, Outcome, QuestionRef, QuestionRequested, QuestionResolved,
    SessionEntry, SessionEvent, SessionList, SessionSynced, Transcript, TranscriptEntry,
    TranscriptRecord,
};
use ask_user_core::{AnswerBatch, AskRequest, UserInteractionError};
use bytes::Bytes;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

/// How many resolved ids the table remembers to explain `NOT_PENDING`.
pub const REMEMBERED_RESOLUTIONS: usize = 4096;

/// A waiting call, as the driver names it (it maps the id to its channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaiterId(pub u64);

/// The time of a step: monotonic for the graces, the wall clock (Unix
/// milliseconds) for the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// For the detach grace's deadlines.
    pub at: Instant,
    /// For the records' `resolved_at_ms` and the journal.
    pub unix_ms: u64,
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

/// How [`Input::Register`] found the question it hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A new question.
    New,
    /// A detached question with the same request, now attached again.
    Reattached,
    /// A held resolution of the same request: the waiter has it already.
    Collected,
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
    /// The table is disposed (the host is shutting down).
    ShuttingDown,
    /// Keeping one more question would break `limit`.
    TooManyPending {
        /// The limit.
        limit: PendingLimit,
    },
}

/// What the table keeps and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a detached question and a held resolution are kept.
    pub detach_grace: Duration,
    /// The most questions kept at once, pending and held together.
    pub max_kept: usize,
    /// The most questions pending in one session (never above core's
    /// `limits::MAX_PENDING_PER_SESSION`: [`Table::new`] lowers it).
    pub max_per_session: usize,
    /// The most bytes of requests kept at once (each twice its canonical JSON).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            detach_grace: super::DEFAULT_DETACH_GRACE,
            max_kept: usize::MAX,
            max_per_session: MAX_PENDING_PER_SESSION,
            max_bytes: usize::MAX,
        }
    }
}

/// One call's hold on one question.
#[derive(Debug, Clone)]
pub struct Attachment {
    waiter: WaiterId,
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

    /// The call that holds it.
    pub fn waiter(&self) -> WaiterId {
        self.waiter
    }
}

/// What happens to the table.
#[derive(Debug)]
pub enum Input {
    /// A call asks `question` (its request's canonical JSON made once by the
    /// caller) and waits as `waiter`: it attaches to the oldest detached
    /// question or held resolution of its session asking the same request,
    /// else the question is new (within the limits).
    Register {
        /// The question, its id and time chosen (and recorded) by the caller.
        question: QuestionRequested,
        /// `serde_json::to_vec(&question.request)`.
        request_json: Bytes,
        /// Who waits.
        waiter: WaiterId,
    },
    /// What the record still had open at start: pending questions come back
    /// detached and held resolutions held, their grace counted from now,
    /// within the same limits as live asks (held answers first).
    Restore(Restored),
    /// The person's answer, validated and normalised against the question
    /// already: the first claim wins.
    Claim {
        /// The question's session.
        session: String,
        /// The question.
        id: String,
        /// The normalised answer.
        answer: AnswerBatch,
        /// Who answered, for the record.
        by: Option<AnsweredBy>,
    },
    /// The person closed the question.
    Cancel {
        /// The question's session.
        session: String,
        /// The question.
        id: String,
        /// Who cancelled, for the record.
        by: Option<AnsweredBy>,
    },
    /// The call holding `attachment` goes away without having read its
    /// waiter; `unread` is what the driver found unread in it.
    LetGo {
        /// The question's session.
        session: String,
        /// The call's hold.
        attachment: Attachment,
        /// On purpose or not.
        how: LetGo,
        /// A resolution handed to the waiter that it never read.
        unread: Option<Resolution>,
    },
    /// The asking side gave up (`Aborted`) or ran out of time (`Timeout`).
    Abort {
        /// The question's session.
        session: String,
        /// The question.
        id: String,
        /// `Aborted` or `Timeout` (any outcome is recorded as given).
        outcome: Outcome,
    },
    /// The asker that let a question go ended it on purpose after all: it
    /// is aborted only while still detached.
    AbortDetached {
        /// The question's session.
        session: String,
        /// The question.
        id: String,
    },
    /// A transcript message, already written to the record.
    Message {
        /// Its session.
        session: String,
        /// The message.
        message: MessageCreated,
    },
    /// A shared record decided which question this ask takes (`new`: the
    /// record has just written `question`; else an existing one, detached or
    /// held, that it handed to this host): the call waits on it as `waiter`,
    /// or collects `held` at once. No local reattach: the record decides
    /// across hosts.
    Attach {
        /// The question the record decided on.
        question: QuestionRequested,
        /// `serde_json::to_vec(&question.request)`.
        request_json: Bytes,
        /// Who waits.
        waiter: WaiterId,
        /// Whether the record wrote it for this ask.
        new: bool,
        /// The resolution the record held for it, when it had one.
        held: Option<Resolution>,
    },
    /// What a shared record says of a question another host may have changed
    /// (a notification, or the reconciliation after a reconnect): the table
    /// follows it, journaling nothing (the record has it already).
    Observed(Observed),
    /// The timer fired: what outlived the detach grace by now ends.
    Expire,
    /// The host shuts down: every pending question resolves `disposed`, held
    /// resolutions are dropped, new questions are refused.
    Shutdown,
}

/// What the driver must do, in this order, before it lets the lock go.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Hand `resolution` to the call waiting as `waiter`.
    Resolve {
        /// The waiting call.
        waiter: WaiterId,
        /// What it gets.
        resolution: Resolution,
    },
    /// Nothing will come for `waiter` any more: drop its channel (the call
    /// sees its question ended without a resolution, or it went away).
    Dismiss {
        /// The call.
        waiter: WaiterId,
    },
    /// Send `event` to `session`'s streams.
    Broadcast {
        /// The session.
        session: String,
        /// The event.
        event: SharedEvent,
    },
    /// Queue `Write` for the durable record (never waited for).
    Journal(Write),
    /// The session list may have changed.
    InboxChanged,
}

/// What a step answers its caller.
#[derive(Debug)]
pub enum Reply {
    /// Done; nothing to report.
    Done,
    /// [`Input::Register`] attached the call.
    Registered {
        /// What the call holds on to.
        attachment: Attachment,
        /// New, reattached or collected.
        found: Found,
    },
    /// [`Input::Register`] refused.
    Refused(RegisterError),
    /// A claim or a cancel found the question gone (saying why, when known).
    NotPending(UserInteractionError),
    /// Whether an [`Input::Abort`] or [`Input::AbortDetached`] ended the question.
    Ended(bool),
    /// [`Input::Shutdown`]: how many questions were pending.
    Disposed(usize),
}

/// One step's effects and reply.
#[derive(Debug)]
pub struct Outputs {
    /// What must happen, in order.
    pub effects: Vec<Output>,
    /// The answer to the caller.
    pub reply: Reply,
}

/// How a question stopped being pending, for `NOT_PENDING`'s reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The person answered.
    Answered,
    /// The person closed it.
    Cancelled,
    /// The asker ended it on purpose.
    Aborted,
    /// The asker's time ran out.
    Timeout,
    /// The host shut down.
    Disposed,
    /// The asker went away and the detach grace is zero.
    Abandoned,
    /// Detached and not asked for again within the grace.
    Expired,
}

impl Ended {
    /// The outcome a stream and the record see.
    pub fn outcome(self) -> Outcome {
        match self {
            Ended::Answered => Outcome::Answered,
            Ended::Cancelled => Outcome::Cancelled,
            Ended::Aborted | Ended::Abandoned | Ended::Expired => Outcome::Aborted,
            Ended::Timeout => Outcome::Timeout,
            Ended::Disposed => Outcome::Disposed,
        }
    }

    /// How the asking side's `outcome` ended a question.
    pub fn from_outcome(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Answered => Ended::Answered,
            Outcome::Cancelled => Ended::Cancelled,
            Outcome::Aborted => Ended::Aborted,
            Outcome::Timeout => Ended::Timeout,
            Outcome::Disposed => Ended::Disposed,
        }
    }

    /// Why a claim found it gone.
    pub fn reason(self) -> &'static str {
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

/// The question of a `question/requested` event (the only kind entries hold).
pub fn question(event: &SessionEvent) -> &QuestionRequested {
    match event {
        SessionEvent::QuestionRequested(q) => q,
        _ => unreachable!("entries only hold question/requested events"),
    }
}

/// What a pending entry costs against `--max-pending-bytes`: its request
/// twice, parsed (about its JSON's size) and as the JSON kept for lists.
pub fn entry_bytes(request_json: &[u8]) -> usize {
    2 * request_json.len()
}

/// Who waits on a pending question.
#[derive(Debug, Clone, Copy)]
enum Waiting {
    /// A call waits.
    Attached { waiter: WaiterId },
    /// No call waits; kept until `until`.
    Detached { until: Instant },
    /// A call on another host sharing the record waits (that host delivers
    /// its resolution; the record holds it if nobody collects it).
    Remote,
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    key: u64,
    /// What the entry costs against the byte budget ([`entry_bytes`]).
    bytes: usize,
    /// The `question/requested` event with its request's JSON, kept as sent
    /// (replayed and listed as is).
    event: SharedEvent,
    waiting: Waiting,
    /// When its audience widens (its `escalate_after`), until it has.
    escalates: Option<Instant>,
}

/// A resolution no call has collected yet.
#[derive(Debug)]
struct Held {
    seq: u64,
    id: String,
    key: u64,
    bytes: usize,
    event: SharedEvent,
    resolution: Resolution,
    until: Instant,
}

#[derive(Debug, Default)]
struct Session {
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
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.held.is_empty()
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

/// The pending questions of every session, the held resolutions, the
/// graces, the recent endings and the transcripts.
#[derive(Debug)]
pub struct Table {
    limits: Limits,
    /// Hashes canonical request JSON into reattach keys.
    hasher: RandomState,
    sessions: HashMap<String, Session>,
    /// Attached and detached questions.
    pending: usize,
    /// Bytes of the requests of pending questions and held resolutions.
    bytes: usize,
    /// Held resolutions.
    held: usize,
    next_seq: u64,
    closed: bool,
    /// When each detached question or held resolution is due: (until, seq) → session.
    deadlines: BTreeMap<(Instant, u64), String>,
    /// When each pending question with an `escalate_after` escalates:
    /// (at, seq) → session.
    escalations: BTreeMap<(Instant, u64), String>,
    /// id → (session, how it ended) of recently resolved questions, bounded.
    recent: HashMap<String, (String, Ended)>,
    recent_order: VecDeque<String>,
    /// Transcripts and activity per session.
    logs: SessionLogs,
}

/// The effects of the step under way.
struct Step {
    now: Now,
    effects: Vec<Output>,
}

impl Step {
    fn push(&mut self, output: Output) {
        self.effects.push(output);
    }

    fn broadcast(&mut self, session: &str, event: impl Into<SharedEvent>) {
        self.effects.push(Output::Broadcast {
            session: session.to_owned(),
            event: event.into(),
        });
    }
}

impl Table {
    /// An empty table keeping at most `limits` (a per-session limit above
    /// core's `MAX_PENDING_PER_SESSION` is lowered to it: the page could not
    /// show the questions past it).
    pub fn new(mut limits: Limits) -> Self {
        limits.max_per_session = limits.max_per_session.min(MAX_PENDING_PER_SESSION);
        Self {
            limits,
            hasher: RandomState::new(),
            sessions: HashMap::new(),
            pending: 0,
            bytes: 0,
            held: 0,
            next_seq: 0,
            closed: false,
            deadlines: BTreeMap::new(),
            escalations: BTreeMap::new(),
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            logs: SessionLogs::new(LogLimits::default()),
        }
    }

    /// Applies `input` at `now`; the driver carries out the effects in order.
    pub fn apply(&mut self, input: Input, now: Now) -> Outputs {
        let mut step = Step {
            now,
            effects: Vec::new(),
        };
        let reply = match input {
            Input::Register {
                question,
                request_json,
                waiter,
            } => self.register(&mut step, question, request_json, waiter),
            Input::Restore(restored) => {
                self.restore(&mut step, restored);
                Reply::Done
            }
            Input::Claim {
                session,
                id,
                answer,
                by,
            } => {
                match self.resolve_with(
                    &mut step,
                    &session,
                    &id,
                    Ended::Answered,
                    Some(&answer),
                    by,
                    None,
                ) {
                    Some(entry) => {
                        self.deliver(&mut step, &session, entry, Resolution::Answered(answer));
                        Reply::Done
                    }
                    None => Reply::NotPending(self.not_pending(&session, &id)),
                }
            }
            Input::Cancel { session, id, by } => {
                match self.resolve_with(&mut step, &session, &id, Ended::Cancelled, None, by, None)
                {
                    Some(entry) => {
                        self.deliver(&mut step, &session, entry, Resolution::Cancelled);
                        Reply::Done
                    }
                    None => Reply::NotPending(self.not_pending(&session, &id)),
                }
            }
            Input::LetGo {
                session,
                attachment,
                how,
                unread,
            } => {
                self.let_go(&mut step, &session, attachment, how, unread);
                Reply::Done
            }
            Input::Abort {
                session,
                id,
                outcome,
            } => Reply::Ended(
                self.resolve(&mut step, &session, &id, Ended::from_outcome(outcome))
                    .is_some(),
            ),
            Input::AbortDetached { session, id } => {
                let detached = self
                    .entry(&session, &id)
                    .is_some_and(|entry| matches!(entry.waiting, Waiting::Detached { .. }));
                Reply::Ended(
                    detached
                        && self
                            .resolve(&mut step, &session, &id, Ended::Aborted)
                            .is_some(),
                )
            }
            // A message the log holds already is not shown twice: a shared
            // record replays what it wrote while its follower was away, this
            // host's own messages among them.
            Input::Message { session, message }
                if self.logs.holds_message(&session, &message.id) =>
            {
                Reply::Done
            }
            Input::Message { session, message } => {
                step.broadcast(&session, SessionEvent::MessageCreated(message.clone()));
                self.logs.push(&session, TranscriptEntry::Message(message));
                step.push(Output::InboxChanged);
                Reply::Done
            }
            Input::Attach {
                question,
                request_json,
                waiter,
                new,
                held,
            } => self.attach(&mut step, question, request_json, waiter, new, held),
            Input::Observed(observed) => {
                self.observe(&mut step, observed);
                Reply::Done
            }
            Input::Expire => {
                self.expire(&mut step);
                Reply::Done
            }
            Input::Shutdown => Reply::Disposed(self.shutdown(&mut step)),
        };
        Outputs {
            effects: step.effects,
            reply,
        }
    }

    /// When [`Input::Expire`] is next due: the earliest end of a grace or
    /// escalation.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let grace = self.deadlines.first_key_value().map(|(&(at, _), _)| at);
        let escalation = self.escalations.first_key_value().map(|(&(at, _), _)| at);
        match (grace, escalation) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn register(
        &mut self,
        step: &mut Step,
        question: QuestionRequested,
        json: Bytes,
        waiter: WaiterId,
    ) -> Reply {
        if self.closed {
            return Reply::Refused(RegisterError::ShuttingDown);
        }
        let session = question.session.clone();
        let session = session.as_str();
        let key = self.hasher.hash_one(&json);
        let bytes = entry_bytes(&json);
        let found = self
            .sessions
            .get(session)
            .and_then(|slot| slot.reattachable(key, &question.request));
        if let Some(seq) = found {
            let slot = self.sessions.get_mut(session).expect("found in it");
            slot.unindex(key, seq);
            if let Some(held) = slot.held.remove(&seq) {
                self.deadlines.remove(&(held.until, seq));
                self.held -= 1;
                self.bytes -= held.bytes;
                step.push(Output::Resolve {
                    waiter,
                    resolution: held.resolution,
                });
                self.forget_if_empty(session);
                return Reply::Registered {
                    attachment: Attachment {
                        waiter,
                        seq,
                        key,
                        bytes: held.bytes,
                        event: held.event,
                    },
                    found: Found::Collected,
                };
            }
            let id = slot.order[&seq].clone();
            let entry = slot.entries.get_mut(&id).expect("ordered ids are entries");
            let Waiting::Detached { until } = entry.waiting else {
                unreachable!("only detached questions are reattachable");
            };
            entry.waiting = Waiting::Attached { waiter };
            let event = entry.event.clone();
            let bytes = entry.bytes;
            step.broadcast(session, SessionEvent::QuestionAttached(QuestionRef { id }));
            self.deadlines.remove(&(until, seq));
            return Reply::Registered {
                attachment: Attachment {
                    waiter,
                    seq,
                    key,
                    bytes,
                    event,
                },
                found: Found::Reattached,
            };
        }
        self.register_new(step, question, (key, json, bytes), waiter, Found::New)
    }

    /// Puts `question` in the table for `waiter` within the caps (refused
    /// naming the limit otherwise), then shows it: `found` says how the ask
    /// found it.
    fn register_new(
        &mut self,
        step: &mut Step,
        question: QuestionRequested,
        (key, json, bytes): (u64, Bytes, usize),
        waiter: WaiterId,
        found: Found,
    ) -> Reply {
        let session = question.session.clone();
        if let Some(limit) = self.full(&session, bytes) {
            return Reply::Refused(RegisterError::TooManyPending { limit });
        }
        let (seq, event) = self.insert_pending(
            question,
            (key, json, bytes),
            Waiting::Attached { waiter },
            step.now,
        );
        step.push(Output::InboxChanged);
        // Only now, with the entry in place, may anyone see the question.
        step.broadcast(&session, event.clone());
        Reply::Registered {
            attachment: Attachment {
                waiter,
                seq,
                key,
                bytes,
                event,
            },
            found,
        }
    }

    fn attach(
        &mut self,
        step: &mut Step,
        question: QuestionRequested,
        json: Bytes,
        waiter: WaiterId,
        new: bool,
        held: Option<Resolution>,
    ) -> Reply {
        if self.closed {
            return Reply::Refused(RegisterError::ShuttingDown);
        }
        let session = question.session.clone();
        let session = session.as_str();
        let id = question.id.clone();
        let key = self.hasher.hash_one(&json);
        let bytes = entry_bytes(&json);
        if let Some(resolution) = held {
            // Collected: a copy this table held goes (the record marks it
            // delivered once the call has it).
            let (seq, event) = match self.drop_held(session, &id) {
                Some(held) => (held.seq, held.event),
                None => {
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    (seq, SharedEvent::requested(question, json))
                }
            };
            step.push(Output::Resolve { waiter, resolution });
            return Reply::Registered {
                attachment: Attachment {
                    waiter,
                    seq,
                    key,
                    bytes,
                    event,
                },
                found: Found::Collected,
            };
        }
        if let Some(slot) = self.sessions.get_mut(session)
            && let Some(entry) = slot.entries.get_mut(&id)
        {
            let was = std::mem::replace(&mut entry.waiting, Waiting::Attached { waiter });
            let (seq, event, bytes) = (entry.seq, entry.event.clone(), entry.bytes);
            let entry_key = entry.key;
            match was {
                Waiting::Detached { until } => {
                    slot.unindex(entry_key, seq);
                    self.deadlines.remove(&(until, seq));
                    step.broadcast(session, SessionEvent::QuestionAttached(QuestionRef { id }));
                }
                Waiting::Remote => {}
                // The record handed this host a question one of its own calls
                // waits on: only a stale record does; the newer call waits.
                Waiting::Attached { waiter: before } => {
                    step.push(Output::Dismiss { waiter: before })
                }
            }
            return Reply::Registered {
                attachment: Attachment {
                    waiter,
                    seq,
                    key,
                    bytes,
                    event,
                },
                found: Found::Reattached,
            };
        }
        let found = if new { Found::New } else { Found::Reattached };
        self.register_new(step, question, (key, json, bytes), waiter, found)
    }

    /// Removes the held resolution of `id` in `session`, if this table holds it.
    fn drop_held(&mut self, session: &str, id: &str) -> Option<Held> {
        let slot = self.sessions.get_mut(session)?;
        let seq = slot
            .held
            .iter()
            .find(|(_, held)| held.id == id)
            .map(|(seq, _)| *seq)?;
        let held = slot.held.remove(&seq).expect("found above");
        slot.unindex(held.key, seq);
        self.deadlines.remove(&(held.until, seq));
        self.held -= 1;
        self.bytes -= held.bytes;
        self.forget_if_empty(session);
        Some(held)
    }

    fn observe(&mut self, step: &mut Step, observed: Observed) {
        let Observed {
            session,
            id,
            asked,
            state,
            escalated,
        } = observed;
        let session = session.as_str();
        let grace = self.limits.detach_grace;
        // Another host's timer widened it first (or this host's clock is
        // behind): every host shows it escalated from now on.
        if escalated && !matches!(state, RecordState::Resolved { .. } | RecordState::Gone) {
            self.mark_escalated(step, session, &id);
        }
        if let Some(slot) = self.sessions.get_mut(session)
            && let Some(entry) = slot.entries.get_mut(&id)
        {
            let (seq, entry_key) = (entry.seq, entry.key);
            match (state, entry.waiting) {
                (
                    RecordState::Resolved {
                        outcome,
                        answer,
                        by,
                        at_ms,
                        ..
                    },
                    waiting,
                ) => {
                    let ended = Ended::from_outcome(outcome);
                    self.resolve_with(step, session, &id, ended, answer.as_ref(), by, Some(at_ms));
                    // Other endings reached the waiting call in `resolve_with`.
                    if let Waiting::Attached { waiter } = waiting {
                        match (outcome, answer) {
                            (Outcome::Answered, Some(answer)) => step.push(Output::Resolve {
                                waiter,
                                resolution: Resolution::Answered(answer),
                            }),
                            (Outcome::Cancelled, _) => step.push(Output::Resolve {
                                waiter,
                                resolution: Resolution::Cancelled,
                            }),
                            (Outcome::Answered, None) => step.push(Output::Dismiss { waiter }),
                            (Outcome::Aborted | Outcome::Timeout | Outcome::Disposed, _) => {}
                        }
                    }
                }
                (RecordState::Gone, _) => {
                    let now = step.now.unix_ms;
                    self.resolve_with(step, session, &id, Ended::Aborted, None, None, Some(now));
                }
                (RecordState::Detached { since }, Waiting::Remote) => {
                    let until = step.now.at + grace.saturating_sub(since);
                    entry.waiting = Waiting::Detached { until };
                    slot.index(entry_key, seq);
                    self.deadlines.insert((until, seq), session.to_owned());
                    step.broadcast(session, SessionEvent::QuestionDetached(QuestionRef { id }));
                }
                (RecordState::AttachedElsewhere, Waiting::Detached { until }) => {
                    entry.waiting = Waiting::Remote;
                    slot.unindex(entry_key, seq);
                    self.deadlines.remove(&(until, seq));
                    step.broadcast(session, SessionEvent::QuestionAttached(QuestionRef { id }));
                }
                // This host's call keeps waiting: the record came to believe
                // this host gone (an outage) and reconciling takes it back.
                (
                    RecordState::AttachedHere
                    | RecordState::AttachedElsewhere
                    | RecordState::Detached { .. },
                    Waiting::Attached { .. },
                )
                // No change.
                | (RecordState::AttachedElsewhere, Waiting::Remote)
                | (RecordState::Detached { .. }, Waiting::Detached { .. })
                // A call of this host took it a moment ago, or the record
                // lags: the table's own state stands.
                | (RecordState::AttachedHere, Waiting::Remote | Waiting::Detached { .. }) => {}
            }
            return;
        }
        match state {
            // A copy held here goes once another host took it, or it was
            // delivered or given up.
            RecordState::Resolved { held: true, .. } => {}
            RecordState::Resolved { held: false, .. }
            | RecordState::Gone
            | RecordState::AttachedHere => {
                self.drop_held(session, &id);
            }
            RecordState::AttachedElsewhere | RecordState::Detached { .. } => {
                if self.drop_held(session, &id).is_some() {
                    return;
                }
                let Some((question, request_json)) = asked else {
                    return;
                };
                let bytes = entry_bytes(&request_json);
                if self.closed || self.recent.contains_key(&id) {
                    return;
                }
                if let Some(limit) = self.full(session, bytes) {
                    tracing::warn!(
                        session,
                        id,
                        ?limit,
                        "a question asked through another host is not shown here: this host's \
                         pending caps are reached"
                    );
                    return;
                }
                let key = self.hasher.hash_one(&request_json);
                let waiting = match state {
                    RecordState::Detached { since } => Waiting::Detached {
                        until: step.now.at + grace.saturating_sub(since),
                    },
                    _ => Waiting::Remote,
                };
                let (seq, mut event) =
                    self.insert_pending(question, (key, request_json, bytes), waiting, step.now);
                if escalated && !event.is_escalated() {
                    let entry = self
                        .sessions
                        .get_mut(session)
                        .and_then(|slot| slot.entries.get_mut(&id))
                        .expect("inserted above");
                    if let Some(at) = entry.escalates.take() {
                        self.escalations.remove(&(at, seq));
                    }
                    entry.event = entry.event.escalated();
                    event = entry.event.clone();
                }
                step.push(Output::InboxChanged);
                step.broadcast(session, event);
                if let Waiting::Detached { until } = waiting {
                    self.session(session).index(key, seq);
                    self.deadlines.insert((until, seq), session.to_owned());
                    step.broadcast(session, SessionEvent::QuestionDetached(QuestionRef { id }));
                }
            }
        }
    }

    /// The ids this table has open (pending, or held), with their sessions:
    /// what a shared record's reconciliation reads back.
    pub fn open_ids(&self) -> Vec<(String, String)> {
        let mut ids = Vec::with_capacity(self.pending + self.held);
        for (name, slot) in &self.sessions {
            ids.extend(slot.entries.keys().map(|id| (name.clone(), id.clone())));
            ids.extend(
                slot.held
                    .values()
                    .map(|held| (name.clone(), held.id.clone())),
            );
        }
        ids
    }

    /// The ids of the questions a call on this host waits on.
    pub fn attached_ids(&self) -> Vec<String> {
        self.sessions
            .values()
            .flat_map(|slot| slot.entries.iter())
            .filter(|(_, entry)| matches!(entry.waiting, Waiting::Attached { .. }))
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn restore(&mut self, step: &mut Step, restored: Restored) {
        let Restored {
            pending,
            held,
            transcripts,
            ..
        } = restored;
        // Oldest first, so the logs keep the most recent within their limits.
        for (session, entry) in transcripts {
            if let TranscriptEntry::Record(record) = &entry {
                let asked_by = record.asked_by.clone();
                self.logs
                    .touch(&session, record.resolved_at_ms, asked_by.as_ref());
            }
            self.logs.push(&session, entry);
        }
        // The same caps as live asks (per session, in all, in bytes), held
        // answers first: they carry the person's work. What does not fit
        // stays in the record as it is, for a start with room.
        let mut beyond_caps = 0;
        for (question, answer) in held {
            let session = question.session.clone();
            let json = super::request_json(&question.request);
            let key = self.hasher.hash_one(&json);
            let bytes = entry_bytes(&json);
            if self.full(&session, bytes).is_some() {
                beyond_caps += 1;
                continue;
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            let resolution = answer.map_or(Resolution::Cancelled, Resolution::Answered);
            let event = SharedEvent::requested(question, json);
            self.hold(step, &session, (seq, key, bytes), event, resolution);
        }
        for question in pending {
            let session = question.session.clone();
            let json = super::request_json(&question.request);
            let key = self.hasher.hash_one(&json);
            let bytes = entry_bytes(&json);
            if self.full(&session, bytes).is_some() {
                beyond_caps += 1;
                continue;
            }
            let id = question.id.clone();
            let until = step.now.at + self.limits.detach_grace;
            let (seq, _) = self.insert_pending(
                question,
                (key, json, bytes),
                Waiting::Detached { until },
                step.now,
            );
            self.session(&session).index(key, seq);
            self.deadlines.insert((until, seq), session.clone());
            if self.limits.detach_grace.is_zero() {
                self.resolve(step, &session, &id, Ended::Expired);
            }
        }
        if beyond_caps > 0 {
            tracing::warn!(
                left = beyond_caps,
                "kept questions beyond the pending caps (--max-pending, --max-pending-bytes, \
                 per session) were not restored; they stay in the store for a start with room"
            );
        }
        step.push(Output::InboxChanged);
    }

    fn let_go(
        &mut self,
        step: &mut Step,
        session: &str,
        attachment: Attachment,
        how: LetGo,
        unread: Option<Resolution>,
    ) {
        let ours = self.entry(session, attachment.id()).is_some_and(|entry| {
            matches!(entry.waiting, Waiting::Attached { waiter } if waiter == attachment.waiter)
        });
        if ours {
            let grace = self.limits.detach_grace;
            match how {
                LetGo::Abort => {
                    self.resolve(step, session, attachment.id(), Ended::Aborted);
                }
                LetGo::Detach if grace.is_zero() => {
                    self.resolve(step, session, attachment.id(), Ended::Abandoned);
                }
                LetGo::Detach => {
                    let until = step.now.at + grace;
                    let slot = self.sessions.get_mut(session).expect("checked above");
                    let entry = slot
                        .entries
                        .get_mut(attachment.id())
                        .expect("checked above");
                    entry.waiting = Waiting::Detached { until };
                    let seq = entry.seq;
                    slot.index(attachment.key, seq);
                    step.push(Output::Dismiss {
                        waiter: attachment.waiter,
                    });
                    step.push(Output::Journal(Write::Detached {
                        id: attachment.id().to_owned(),
                    }));
                    step.broadcast(
                        session,
                        SessionEvent::QuestionDetached(QuestionRef {
                            id: attachment.id().to_owned(),
                        }),
                    );
                    self.deadlines.insert((until, seq), session.to_owned());
                }
            }
            return;
        }
        // Resolved meanwhile: a resolution handed over under the driver's
        // lock is in the waiter now, or was never sent (aborted, timed out).
        if let Some(resolution) = unread {
            step.push(Output::Journal(Write::Detached {
                id: attachment.id().to_owned(),
            }));
            let Attachment {
                seq,
                key,
                bytes,
                event,
                ..
            } = attachment;
            self.hold(step, session, (seq, key, bytes), event, resolution);
        }
    }

    fn expire(&mut self, step: &mut Step) {
        self.escalate(step);
        while let Some((&(until, seq), _)) = self.deadlines.first_key_value() {
            if until > step.now.at {
                return;
            }
            let session = self
                .deadlines
                .remove(&(until, seq))
                .expect("the first deadline");
            let Some(slot) = self.sessions.get_mut(&session) else {
                continue;
            };
            if let Some(held) = slot.held.remove(&seq) {
                slot.unindex(held.key, seq);
                self.held -= 1;
                self.bytes -= held.bytes;
                log_never_delivered(&session, &held.id, &held.resolution);
                step.push(Output::Journal(Write::NeverDelivered { id: held.id }));
                self.forget_if_empty(&session);
            } else if let Some(id) = slot.order.get(&seq).cloned() {
                self.resolve(step, &session, &id, Ended::Expired);
            }
        }
    }

    /// Widens the audience of every question whose `escalate_after` is due:
    /// its `question/requested` is sent again, escalated (a page that shows
    /// it already ignores the repeat; one newly in the audience shows it),
    /// and lists and replays carry it escalated from now on.
    fn escalate(&mut self, step: &mut Step) {
        while let Some((&(at, seq), _)) = self.escalations.first_key_value() {
            if at > step.now.at {
                return;
            }
            let session = self
                .escalations
                .remove(&(at, seq))
                .expect("the first escalation");
            let Some(id) = self
                .sessions
                .get(&session)
                .and_then(|slot| slot.order.get(&seq))
                .cloned()
            else {
                continue;
            };
            if self.mark_escalated(step, &session, &id) {
                step.push(Output::Journal(Write::Escalated {
                    id,
                    at_ms: step.now.unix_ms,
                }));
            }
        }
    }

    /// Widens pending question `id`'s audience now (its timer, or a shared
    /// record saying another host's did): its `question/requested` is sent
    /// again, escalated. Whether it changed (a question escalates once).
    fn mark_escalated(&mut self, step: &mut Step, session: &str, id: &str) -> bool {
        let Some(entry) = self
            .sessions
            .get_mut(session)
            .and_then(|slot| slot.entries.get_mut(id))
        else {
            return false;
        };
        if entry.event.is_escalated() {
            return false;
        }
        if let Some(at) = entry.escalates.take() {
            self.escalations.remove(&(at, entry.seq));
        }
        entry.event = entry.event.escalated();
        let event = entry.event.clone();
        step.broadcast(session, event);
        step.push(Output::InboxChanged);
        true
    }

    fn shutdown(&mut self, step: &mut Step) -> usize {
        self.closed = true;
        let ids: Vec<(String, String)> = self
            .sessions
            .iter()
            .flat_map(|(name, slot)| slot.order.values().map(|id| (name.clone(), id.clone())))
            .collect();
        for (session, id) in &ids {
            self.resolve(step, session, id, Ended::Disposed);
        }
        let names: Vec<String> = self.sessions.keys().cloned().collect();
        for name in names {
            let slot = self.sessions.get_mut(&name).expect("listed");
            for held in std::mem::take(&mut slot.held).into_values() {
                log_never_delivered(&name, &held.id, &held.resolution);
                self.bytes -= held.bytes;
            }
            slot.reattachable.clear();
            self.forget_if_empty(&name);
        }
        self.held = 0;
        self.deadlines.clear();
        ids.len()
    }

    /// Removes a pending entry, keeps its record in the transcript, reports
    /// how it ended (with the record) to the session's streams, and tells
    /// the waiting call (when the question did not end by the person: a
    /// claim or a cancel delivers to it).
    fn resolve(&mut self, step: &mut Step, session: &str, id: &str, ended: Ended) -> Option<Entry> {
        self.resolve_with(step, session, id, ended, None, None, None)
    }

    /// [`Table::resolve`] with the answer the record keeps (when answered);
    /// `recorded`: the record ended it already, at that Unix ms (a shared
    /// record's observation): nothing is journaled.
    #[allow(clippy::too_many_arguments)]
    fn resolve_with(
        &mut self,
        step: &mut Step,
        session: &str,
        id: &str,
        ended: Ended,
        answer: Option<&AnswerBatch>,
        by: Option<AnsweredBy>,
        recorded: Option<u64>,
    ) -> Option<Entry> {
        let slot = self.sessions.get_mut(session)?;
        let entry = slot.entries.remove(id)?;
        slot.order.remove(&entry.seq);
        if let Waiting::Detached { until } = entry.waiting {
            slot.unindex(entry.key, entry.seq);
            self.deadlines.remove(&(until, entry.seq));
        }
        if let Some(at) = entry.escalates {
            self.escalations.remove(&(at, entry.seq));
        }
        let asked = question(&entry.event);
        let record = TranscriptRecord {
            id: id.to_owned(),
            request: asked.request.clone(),
            asked_by: asked.asked_by.clone(),
            created_at_ms: asked.created_at_ms,
            resolved_at_ms: recorded.unwrap_or(step.now.unix_ms),
            outcome: ended.outcome(),
            answer: answer.filter(|_| ended == Ended::Answered).cloned(),
            by: by.filter(|_| matches!(ended, Ended::Answered | Ended::Cancelled)),
        };
        step.broadcast(
            session,
            SessionEvent::QuestionResolved(QuestionResolved {
                id: id.to_owned(),
                outcome: ended.outcome(),
                record: Some(record.clone()),
            }),
        );
        self.logs.push(session, TranscriptEntry::Record(record));
        step.push(Output::InboxChanged);
        self.pending -= 1;
        self.bytes -= entry.bytes;
        self.forget_if_empty(session);
        self.remember(id, session, ended);
        match (ended, entry.waiting) {
            // An answer or a cancel was written before its claim, and is
            // delivered by the caller.
            (Ended::Answered | Ended::Cancelled, _) => {}
            (Ended::Disposed, Waiting::Attached { waiter }) => {
                step.push(Output::Resolve {
                    waiter,
                    resolution: Resolution::Disposed,
                });
            }
            (
                Ended::Aborted | Ended::Timeout | Ended::Abandoned | Ended::Expired,
                Waiting::Attached { waiter },
            ) => step.push(Output::Dismiss { waiter }),
            (
                Ended::Aborted
                | Ended::Timeout
                | Ended::Abandoned
                | Ended::Expired
                | Ended::Disposed,
                Waiting::Detached { .. } | Waiting::Remote,
            ) => {}
        }
        if recorded.is_none() && !matches!(ended, Ended::Answered | Ended::Cancelled) {
            step.push(Output::Journal(Write::Ended {
                id: id.to_owned(),
                outcome: ended.outcome(),
                at_ms: step.now.unix_ms,
            }));
        }
        Some(entry)
    }

    /// Hands `resolution` to the entry's waiting call, or holds it for the
    /// next identical ask when none waits.
    fn deliver(&mut self, step: &mut Step, session: &str, entry: Entry, resolution: Resolution) {
        match entry.waiting {
            // The asker may have gone this instant: its let-go finds the
            // resolution unread in its waiter and holds it then.
            Waiting::Attached { waiter } => step.push(Output::Resolve { waiter, resolution }),
            // The host whose call waits learns it from the record, which
            // holds it should that call be gone.
            Waiting::Remote => {}
            Waiting::Detached { .. } => self.hold(
                step,
                session,
                (entry.seq, entry.key, entry.bytes),
                entry.event,
                resolution,
            ),
        }
    }

    /// Puts a new pending question in its session (asked now, or restored
    /// from the record): the next sequence number, counted against the
    /// totals, its asker noted in the session's activity. Returns its
    /// sequence number and `question/requested` event.
    fn insert_pending(
        &mut self,
        question: QuestionRequested,
        (key, json, bytes): (u64, Bytes, usize),
        waiting: Waiting,
        now: Now,
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
        // Counted from the ask (a restored question may be due already).
        let escalates_at_ms = question.request.escalates_at_ms(question.created_at_ms);
        let mut event = SharedEvent::requested(question, json);
        let escalates = match escalates_at_ms {
            Some(at_ms) if at_ms <= now.unix_ms => {
                event = event.escalated();
                None
            }
            Some(at_ms) => {
                let at = now.at + Duration::from_millis(at_ms - now.unix_ms);
                self.escalations.insert((at, seq), session.clone());
                Some(at)
            }
            None => None,
        };
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
                escalates,
            },
        );
        (seq, event)
    }

    /// Keeps `resolution` of the question asked by `event` for the next
    /// identical ask, for the grace (with no grace an answer is logged as
    /// never delivered instead).
    fn hold(
        &mut self,
        step: &mut Step,
        session: &str,
        (seq, key, bytes): (u64, u64, usize),
        event: SharedEvent,
        resolution: Resolution,
    ) {
        if resolution == Resolution::Disposed {
            return;
        }
        let id = question(&event).id.clone();
        let grace = self.limits.detach_grace;
        if grace.is_zero() {
            log_never_delivered(session, &id, &resolution);
            step.push(Output::Journal(Write::NeverDelivered { id }));
            return;
        }
        let until = step.now.at + grace;
        let slot = self.session(session);
        slot.index(key, seq);
        slot.held.insert(
            seq,
            Held {
                seq,
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

    fn session(&mut self, name: &str) -> &mut Session {
        self.sessions.entry(name.to_owned()).or_default()
    }

    fn entry(&self, session: &str, id: &str) -> Option<&Entry> {
        self.sessions.get(session)?.entries.get(id)
    }

    fn forget_if_empty(&mut self, session: &str) {
        if self.sessions.get(session).is_some_and(Session::is_empty) {
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

    /// The limit one more question of `bytes` in `session` would break.
    fn full(&self, session: &str, bytes: usize) -> Option<PendingLimit> {
        let limits = &self.limits;
        let in_session = self.sessions.get(session).map_or(0, |s| s.entries.len());
        if self.pending + self.held >= limits.max_kept {
            Some(PendingLimit::Total(limits.max_kept))
        } else if in_session >= limits.max_per_session {
            Some(PendingLimit::PerSession(limits.max_per_session))
        } else if self.bytes.saturating_add(bytes) > limits.max_bytes {
            Some(PendingLimit::Bytes(limits.max_bytes))
        } else {
            None
        }
    }

    /// How `id` in `session` ended, while this table remembers it.
    pub fn ended(&self, session: &str, id: &str) -> Option<Ended> {
        self.recent
            .get(id)
            .filter(|(owner, _)| owner == session)
            .map(|(_, ended)| *ended)
    }

    /// `NOT_PENDING` for `id` in `session`, saying why when known.
    pub fn not_pending(&self, session: &str, id: &str) -> UserInteractionError {
        let why = match self.recent.get(id) {
            Some((owner, ended)) if owner == session => ended.reason(),
            _ if self.closed => "the host is shutting down",
            _ => "no such question waits in this session",
        };
        UserInteractionError::not_pending(format!(
            "question {id:?} is not pending in session {session:?}: {why}"
        ))
    }

    /// The `question/requested` event of the pending question `id`, for
    /// validating an answer outside the lock; `NOT_PENDING` when gone.
    pub fn requested(&self, session: &str, id: &str) -> Result<SharedEvent, UserInteractionError> {
        self.entry(session, id)
            .map(|entry| entry.event.clone())
            .ok_or_else(|| self.not_pending(session, id))
    }

    /// Whether `member` may see and answer pending question `id` (its
    /// audience, widened once it escalated); `None` when it is not pending.
    pub fn admits(
        &self,
        session: &str,
        id: &str,
        member: &dyn ask_user_core::Member,
    ) -> Option<bool> {
        let entry = self.entry(session, id)?;
        Some(
            question(&entry.event)
                .request
                .admits(member, entry.event.is_escalated()),
        )
    }

    /// The `question/requested` events of `session`'s pending questions,
    /// oldest first (shared: no request is copied).
    pub fn pending_events(&self, session: &str) -> Vec<SharedEvent> {
        let Some(slot) = self.sessions.get(session) else {
            return Vec::new();
        };
        slot.order
            .values()
            .map(|id| slot.entries[id].event.clone())
            .collect()
    }

    /// What a new stream of `session` replays: per pending question (oldest
    /// first) one `question/requested`, followed by `question/detached` when
    /// no call waits on it; then one `session/synced` listing their ids.
    pub fn replay(&self, session: &str) -> Vec<SharedEvent> {
        let Some(slot) = self.sessions.get(session) else {
            return vec![SharedEvent::from(SessionEvent::SessionSynced(
                SessionSynced {
                    pending: Vec::new(),
                },
            ))];
        };
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
        replay
    }

    /// Whether `session` has pending questions or held resolutions.
    pub fn holds_session(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// `session`'s transcript: its most recent messages and records, oldest first.
    pub fn transcript(&self, session: &str) -> Transcript {
        self.logs.transcript(session)
    }

    /// The sessions with pending questions or activity within
    /// [`LISTED_SESSION_IDLE_MS`] of `now_ms`, most urgent first, at most
    /// [`MAX_LISTED_SESSIONS`].
    pub fn sessions(&self, now_ms: u64) -> SessionList {
        self.sessions_seen_by(now_ms, &|_| true)
    }

    /// [`Table::sessions`] as someone who `sees` only some questions: a
    /// session counts, previews and lists by those alone (issue 24's audiences).
    pub fn sessions_seen_by(
        &self,
        now_ms: u64,
        sees: &dyn Fn(&SharedEvent) -> bool,
    ) -> SessionList {
        let mut sessions: Vec<SessionEntry> = Vec::new();
        for (name, slot) in &self.sessions {
            let mut seen = slot
                .order
                .values()
                .map(|id| &slot.entries[id].event)
                .filter(|event| sees(event));
            let Some(oldest) = seen.next() else {
                continue;
            };
            let (count, newest) = seen.fold((1usize, oldest), |(n, _), e| (n + 1, e));
            let oldest = question(oldest);
            let newest = Some(question(newest));
            let log = self.logs.get(name);
            sessions.push(SessionEntry {
                id: name.clone(),
                pending: u32::try_from(count).unwrap_or(u32::MAX),
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
        for (name, log) in self.logs.iter() {
            let has_pending = self
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

    /// How many questions wait (attached or detached), across sessions.
    pub fn pending_count(&self) -> usize {
        self.pending
    }

    /// How many resolutions are held for an asker that went away.
    pub fn held_count(&self) -> usize {
        self.held
    }

    /// Bytes of requests kept now, pending and held (each twice its canonical JSON).
    pub fn pending_bytes(&self) -> usize {
        self.bytes
    }

    /// What the table keeps and for how long.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Every held resolution with its question, oldest first per session.
    #[cfg(test)]
    pub(super) fn held_resolutions(&self) -> Vec<(SharedEvent, Resolution)> {
        let mut held: Vec<(u64, SharedEvent, Resolution)> = self
            .sessions
            .values()
            .flat_map(|slot| slot.held.iter())
            .map(|(seq, held)| (*seq, held.event.clone(), held.resolution.clone()))
            .collect();
        held.sort_by_key(|(seq, ..)| *seq);
        held.into_iter()
            .map(|(_, event, resolution)| (event, resolution))
            .collect()
    }

    /// How many resolved ids are remembered for `NOT_PENDING`'s reason.
    #[cfg(test)]
    pub(super) fn remembered(&self) -> (usize, usize) {
        (self.recent.len(), self.recent_order.len())
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

#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
