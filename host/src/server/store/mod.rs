//! The durable record: every question (its request, session and time), how
//! it ended, the normalised answer and when, which resolutions are still held
//! for an asker that went away, and the transcript's messages.
//!
//! The pending table ([`crate::server::pending`]) stays the live state (waiting calls,
//! broadcasts); this store is what survives a restart. The host talks to it
//! through one trait, [`Store`]: [`SqliteStore`] (the default: one SQLite file
//! in the data directory, WAL) and [`EphemeralStore`] (`--ephemeral`: nothing
//! is written). A later server database is one more implementation.
//!
//! Writes are submitted without blocking ([`Store::submit`], callable under
//! the pending table's lock, so the record sees changes in the table's order)
//! and confirmed by awaiting the returned [`Ticket`]: whatever is acknowledged
//! to a person or an agent is awaited first ("nothing acknowledged that was
//! not kept"). One writer applies them in batches, one transaction each.

#[cfg(feature = "postgres")]
pub mod database;
#[cfg(feature = "postgres")]
mod message_seqs;
#[cfg(feature = "postgres")]
pub mod postgres;
mod rates;
pub mod sqlite;

pub use sqlite::{DATABASE_FILE, SqliteStore};

use ask_user_core::wire::{
    AnsweredBy, MessageCreated, Outcome, QuestionRequested, Role, TranscriptEntry,
};
use ask_user_core::{AnswerBatch, UserInteractionError};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Default for `--keep-days`: resolved questions and messages older than this
/// are pruned (at start and hourly).
pub const DEFAULT_KEEP_DAYS: u32 = 30;

/// How often the same store failure is logged.
pub const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// The most records one history page holds.
pub const MAX_HISTORY_PAGE: usize = 500;

/// Records per history page when `limit` is not given.
pub const DEFAULT_HISTORY_PAGE: usize = 50;

/// Default for `--max-store-bytes`: the most the data directory's database
/// and its journal hold (1 GiB).
pub const DEFAULT_MAX_STORE_BYTES: u64 = 1024 * 1024 * 1024;

/// The smallest `--max-store-bytes`: room for the largest request core
/// accepts, several times over.
pub const MIN_STORE_BYTES: u64 = 16 * 1024 * 1024;

/// Default for `--max-session-write-bytes`: what one session may write
/// (questions and messages) per minute.
pub const DEFAULT_SESSION_WRITE_BYTES_PER_MINUTE: u64 = 64 * 1024 * 1024;

/// How a store is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// The most bytes the database and its journal hold (`--max-store-bytes`).
    pub max_bytes: u64,
    /// The most bytes of questions and messages one session may write per
    /// minute (`--max-session-write-bytes`).
    pub session_bytes_per_minute: u64,
    /// The most pending questions and held answers read back at start (the
    /// pending table's `--max-pending`: it holds no more).
    pub max_restored_questions: usize,
    /// The most bytes of them read back at start (`--max-pending-bytes`).
    pub max_restored_bytes: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_STORE_BYTES,
            session_bytes_per_minute: DEFAULT_SESSION_WRITE_BYTES_PER_MINUTE,
            max_restored_questions: crate::server::limits::DEFAULT_MAX_PENDING,
            max_restored_bytes: crate::server::limits::DEFAULT_MAX_PENDING_BYTES,
        }
    }
}

/// Why the store did not keep something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// It cannot write (the disk is full, the file is read-only, …): 503
    /// `STORE_UNAVAILABLE`.
    #[error("{0}")]
    Unavailable(String),
    /// At `--max-store-bytes` with nothing left that may be pruned (pending
    /// questions and held answers never are): 507 `STORE_FULL`.
    #[error("{0}")]
    Full(String),
    /// The session wrote more than `--max-session-write-bytes` in the last
    /// minute: 429 `TOO_MANY_WRITES`.
    #[error("{0}")]
    TooFast(String),
}

impl StoreError {
    /// Why, in words.
    pub fn reason(&self) -> &str {
        match self {
            StoreError::Unavailable(why) | StoreError::Full(why) | StoreError::TooFast(why) => why,
        }
    }
}

/// A new question as the record keeps it: its JSON, made once by the caller
/// (from the request's canonical JSON the pending table keeps too), so the
/// writer neither copies nor serialises the request again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The question's id.
    pub id: String,
    /// Its session.
    pub session: String,
    /// When it was asked (Unix ms).
    pub created_at_ms: u64,
    /// The question exactly as `serde_json` writes core's
    /// [`QuestionRequested`].
    pub json: String,
}

impl Asked {
    /// `question` with `request_json`, its request's canonical JSON
    /// (`serde_json::to_vec(&question.request)`), written around it.
    pub fn with_request_json(question: &QuestionRequested, request_json: &[u8]) -> Self {
        Self {
            id: question.id.clone(),
            session: question.session.clone(),
            created_at_ms: question.created_at_ms,
            json: crate::server::canonical::question_json(question, request_json),
        }
    }
}

impl From<&QuestionRequested> for Asked {
    fn from(question: &QuestionRequested) -> Self {
        Self {
            id: question.id.clone(),
            session: question.session.clone(),
            created_at_ms: question.created_at_ms,
            json: serde_json::to_string(question).expect("wire types always serialise"),
        }
    }
}

impl From<QuestionRequested> for Asked {
    fn from(question: QuestionRequested) -> Self {
        Self::from(&question)
    }
}

/// One change to the record.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// A new question, written before anyone may see it.
    Asked(Asked),
    /// The row of an ask that was not registered after all (it attached to
    /// an identical question, or was refused).
    Discard {
        /// The question's id.
        id: String,
    },
    /// The person's normalised answer. Applied only while the question is
    /// open in the record: the first answer (or cancel) written wins.
    Answered {
        /// The question's id.
        id: String,
        /// The normalised answer.
        answer: AnswerBatch,
        /// When (Unix ms).
        at_ms: u64,
        /// Who answered (the page or a device).
        by: Option<AnsweredBy>,
    },
    /// The person closed the question; applied only while it is open.
    Cancelled {
        /// The question's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
        /// Who cancelled (the page or a device).
        by: Option<AnsweredBy>,
    },
    /// The pending table ended the question another way (aborted, timed out,
    /// expired, disposed). The table resolves a question once, so this
    /// overrides an answer written for it a moment before its claim lost.
    Ended {
        /// The question's id.
        id: String,
        /// How it ended.
        outcome: Outcome,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// The call waiting on the question went away without ending it: it is
    /// detached (its grace runs), or its resolution is held for the next
    /// identical ask. Only a shared record keeps this (another host's ask may
    /// then take the question over); one file on one host needs nothing.
    Detached {
        /// The question's id.
        id: String,
    },
    /// The question's `escalate_after` came due while it was pending: its
    /// audience widened (issue 24). Each host's table escalates on its own
    /// timer; a shared record keeps the first (`escalated_ms`, set once) and
    /// tells the other hosts. One file on one host counts escalation from
    /// the ask and needs nothing.
    Escalated {
        /// The question's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// The answer (or cancel) reached the asker: it is no longer held.
    Delivered {
        /// The question's id.
        id: String,
    },
    /// A held answer (or cancel) nobody collected within the detach grace.
    NeverDelivered {
        /// The question's id.
        id: String,
    },
    /// A transcript message.
    Message {
        /// Its session.
        session: String,
        /// The message.
        message: MessageCreated,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A device was paired (its credential's hash, never the credential).
    DevicePaired(DeviceRecord),
    /// A device was revoked: its credential no longer works.
    DeviceRevoked {
        /// The device's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A device made a request (written at most once a
    /// [`crate::server::devices::SEEN_WRITE_EVERY`] per device, not per request).
    DeviceSeen {
        /// The device's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A device answered, cancelled or wrote a message.
    DeviceAnswered {
        /// The device's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A device asked for notifications: its push subscription (JSON),
    /// replacing any earlier one (issue 22).
    PushSubscribed {
        /// The device's id.
        device: String,
        /// The subscription as its browser made it, checked.
        subscription: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A device's subscription is dropped: it opted out, or the push service
    /// said it is gone.
    PushUnsubscribed {
        /// The device's id.
        device: String,
    },
    /// A host claims the push of question `id` (its first push, or with
    /// `escalation` the one to the people its escalation admits): on a
    /// shared record the first host's claim changes it and that host alone
    /// pushes; a record of one host has nothing to share, so every claim
    /// is this host's.
    PushClaimed {
        /// The question's id.
        id: String,
        /// Whether this is its escalation's push.
        escalation: bool,
    },
    /// A person was added (issue 24): their name, roles and the SHA-256 of
    /// their credential (never the credential).
    PersonAdded(PersonRecord),
    /// A person was removed: their credential and every device paired
    /// under them stop working (their push subscriptions go too).
    PersonRemoved {
        /// The person's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// An agent token was made: its name and the SHA-256 of the token.
    AgentAdded(AgentRecord),
    /// An agent token was removed.
    AgentRemoved {
        /// The token's id.
        id: String,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// Deletes resolved questions (not held ones) and messages older than
    /// `before_ms`.
    Prune {
        /// Unix ms.
        before_ms: u64,
    },
}

/// The outcome of a submitted [`Write`]: awaited where the write must be kept
/// before the host says so.
#[derive(Debug)]
pub struct Ticket(oneshot::Receiver<Result<bool, StoreError>>);

impl Ticket {
    /// A ticket already settled with `result`.
    pub fn settled(result: Result<bool, StoreError>) -> Self {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(result);
        Ticket(rx)
    }

    /// Waits until the write is kept: `Ok(true)` when it changed the record,
    /// `Ok(false)` when it did not apply (an answer to a question the record
    /// already has as resolved).
    pub async fn kept(self) -> Result<bool, StoreError> {
        self.0.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the store's writer stopped".to_owned(),
            ))
        })
    }
}

/// What a store still had open at start: the questions that were pending and
/// the resolutions held for an asker, oldest first.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Restored {
    /// Pending questions (they come back detached).
    pub pending: Vec<QuestionRequested>,
    /// Questions resolved for an asker that has not collected the resolution:
    /// `Some(answer)` for an answer, `None` for a cancel.
    pub held: Vec<(QuestionRequested, Option<AnswerBatch>)>,
    /// Each session's most recent transcript entries (messages and a record
    /// per resolved question, at most
    /// [`ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES`] a session) with
    /// their session, oldest first: the transcripts and the session list
    /// start where they were.
    pub transcripts: Vec<(String, TranscriptEntry)>,
    /// The paired devices not revoked, oldest first.
    pub devices: Vec<DeviceRecord>,
    /// Their push subscriptions (device id, JSON).
    pub push_subscriptions: Vec<(String, String)>,
    /// The people not removed, oldest first (issue 24).
    pub people: Vec<PersonRecord>,
    /// The agent tokens not removed, oldest first (issue 24).
    pub agents: Vec<AgentRecord>,
    /// The hosts' one VAPID private key (a P-256 scalar, base64url), where a
    /// shared record keeps it: every host signs with it, so a device
    /// subscribed through one host is pushed to by any.
    pub vapid_private_key: Option<String>,
}

/// A paired device as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// Host-minted id (`d_` and 16 hex digits).
    pub id: String,
    /// The name the device gave itself.
    pub name: String,
    /// Its browser and OS, as its user agent said when it paired.
    pub agent: String,
    /// SHA-256 of its credential, hex.
    pub credential_sha256: String,
    /// When it was paired (Unix ms).
    pub paired_at_ms: u64,
    /// When it last made a request, as last written (Unix ms; its pairing
    /// time until then).
    pub last_seen_ms: u64,
    /// When it last answered, cancelled or wrote a message (Unix ms).
    pub last_answer_ms: Option<u64>,
    /// The person it was paired under (their id), when a person's
    /// credential opened the pairing; `None`: the machine owner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

/// A person who may answer (issue 24), as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonRecord {
    /// `u_` and 16 hex digits.
    pub id: String,
    /// Their name, unique among the people kept (core's `check_name`).
    pub name: String,
    /// Their roles (each as core's `check_name`).
    pub roles: Vec<String>,
    /// SHA-256 of their credential, hex.
    pub credential_sha256: String,
    /// When they were added (Unix ms).
    pub added_at_ms: u64,
}

/// An agent token (issue 24): it may ask, never answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// `a_` and 16 hex digits.
    pub id: String,
    /// Its name (core's `check_name`), unique among the tokens kept.
    pub name: String,
    /// SHA-256 of the token, hex.
    pub credential_sha256: String,
    /// When it was made (Unix ms).
    pub added_at_ms: u64,
}

/// One resolved question as the history shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// The question as it was asked (id, session, request, time, asker).
    pub question: QuestionRequested,
    /// How it ended.
    pub outcome: Outcome,
    /// The normalised answer, when `outcome` is `answered`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerBatch>,
    /// When it was resolved (Unix ms).
    pub resolved_at_ms: u64,
    /// Who answered or cancelled it (absent for other outcomes and older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<AnsweredBy>,
}

/// One transcript message as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryMessage {
    /// Its session.
    pub session: String,
    /// Host-minted id.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub text: String,
    /// When (Unix ms).
    pub at_ms: u64,
}

/// `GET /api/history`'s query, and `ask-user history`'s.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HistoryQuery {
    /// Only this session.
    pub session: Option<String>,
    /// Only records resolved before this instant (Unix ms, exclusive).
    pub before: Option<u64>,
    /// Only records resolved at or after this instant (Unix ms).
    pub since: Option<u64>,
    /// At most this many records ([`DEFAULT_HISTORY_PAGE`], at most
    /// [`MAX_HISTORY_PAGE`]).
    pub limit: Option<usize>,
    /// Only records after this one in the page's order: the previous page's
    /// `next_cursor`.
    pub cursor: Option<HistoryCursor>,
}

impl HistoryQuery {
    /// The page size asked for, clamped to 1..=[`MAX_HISTORY_PAGE`].
    pub fn page_size(&self) -> usize {
        self.limit
            .unwrap_or(DEFAULT_HISTORY_PAGE)
            .clamp(1, MAX_HISTORY_PAGE)
    }
}

/// Where a history page ended: its last record's resolution time and row,
/// unique however many records were resolved in one millisecond. Written
/// `MS.ROW`; clients pass it back as they got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HistoryCursor {
    /// When the record was resolved (Unix ms).
    pub resolved_ms: i64,
    /// Its row in the record.
    pub row: i64,
}

impl TryFrom<String> for HistoryCursor {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let parsed = text.split_once('.').and_then(|(ms, row)| {
            Some(HistoryCursor {
                resolved_ms: ms.parse().ok().filter(|ms: &i64| *ms >= 0)?,
                row: row.parse().ok().filter(|row: &i64| *row >= 0)?,
            })
        });
        parsed.ok_or_else(|| {
            format!(
                "cursor {} is not a history cursor; pass a page's next_cursor as it is",
                ask_user_core::error::quoted(&text)
            )
        })
    }
}

impl From<HistoryCursor> for String {
    fn from(cursor: HistoryCursor) -> Self {
        format!("{}.{}", cursor.resolved_ms, cursor.row)
    }
}

/// A page of history, newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// Resolved questions, newest first.
    pub records: Vec<HistoryRecord>,
    /// Pass as `cursor` (with the same other parameters) for the next, older
    /// page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<HistoryCursor>,
}

/// The host's durable record.
pub trait Store: Send + Sync + 'static {
    /// Queues `write` and returns at once (it never blocks, so it may be called
    /// under the pending table's lock; writes apply in submission order).
    fn submit(&self, write: Write) -> Ticket;

    /// What was open when the store was opened (read once, at start).
    fn restored(&self) -> Restored;

    /// A page of resolved questions. Blocking: call it on a blocking thread.
    fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, StoreError>;

    /// Why the store cannot keep writes right now, if it cannot.
    fn trouble(&self) -> Option<String>;

    /// Waits until every write submitted so far is applied (at shutdown).
    fn flush(&self) -> Ticket;

    /// Whether anything is kept (false for [`EphemeralStore`], whose writes
    /// callers may skip).
    fn keeps(&self) -> bool {
        true
    }

    /// The record several hosts share, when this is one (PostgreSQL): asks
    /// go through [`SharedRecord::take`], and the pending table follows the
    /// record's changes. `None` for a record one host owns.
    fn shared(&self) -> Option<&dyn SharedRecord> {
        None
    }
}

/// What a new ask takes in a shared record: decided in the database, so two
/// hosts never hand one question to two calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// No detached question or held resolution of the same request in the
    /// session: the new question was written.
    New,
    /// The oldest such question, now this host's: pending (`held: None`), or
    /// resolved with `held` for the call to collect (`Some(None)`: cancelled).
    Existing {
        /// The question as it was asked (boxed: it is most of the enum).
        question: Box<QuestionRequested>,
        /// Its held resolution: `Some(Some(answer))`, `Some(None)` for a
        /// cancel, `None` while it is pending.
        held: Option<Option<AnswerBatch>>,
    },
}

/// A record several hosts share.
pub trait SharedRecord: Send + Sync {
    /// Takes, for a new ask of `asked` (whose request's canonical JSON hashes
    /// to `request_sha256`), the oldest detached question or held resolution
    /// of the same request in its session (one whose host is gone counts as
    /// detached), else writes `asked`: one decision in the database.
    fn take(
        &self,
        asked: Asked,
        request_sha256: [u8; 32],
    ) -> oneshot::Receiver<Result<Taken, StoreError>>;

    /// The table has the question `id` this host took: its row is read once
    /// more, since another host may have answered it between the take and
    /// the table's attach (a notification read in that moment found nothing
    /// to resolve here).
    fn taken(&self, id: String);

    /// Starts following the record into `pending`, `devices` and `people`:
    /// notifications of other hosts' changes, and a full reconciliation
    /// after every (re)connect.
    fn follow(
        &self,
        pending: std::sync::Arc<dyn FollowingTable>,
        devices: std::sync::Arc<dyn FollowingDevices>,
        people: std::sync::Arc<dyn FollowingPeople>,
        push: Option<std::sync::Arc<dyn FollowingPush>>,
    );

    /// Waits until the first reconciliation is done (the table shows what the
    /// record holds): before the host serves.
    fn ready(&self) -> futures_util::future::BoxFuture<'static, ()>;
}

/// A question as a shared record has it now.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Its session.
    pub session: String,
    /// Its id.
    pub id: String,
    /// The question as it was asked, with its request's canonical JSON
    /// (`serde_json::to_vec(&question.request)`); `None` when the record no
    /// longer has it.
    pub asked: Option<(QuestionRequested, Bytes)>,
    /// Where it stands.
    pub state: RecordState,
    /// Whether the record has it escalated (a host's timer widened its
    /// audience): a table whose own timer has not fired yet follows.
    pub escalated: bool,
}

/// Where a question stands in a shared record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordState {
    /// A call on this host waits on it.
    AttachedHere,
    /// A call on another (live) host waits on it.
    AttachedElsewhere,
    /// No call waits; detached this long ago (its grace counts from then).
    Detached {
        /// How long ago it was detached.
        since: Duration,
    },
    /// It ended.
    Resolved {
        /// How.
        outcome: Outcome,
        /// The normalised answer, when answered.
        answer: Option<AnswerBatch>,
        /// Who answered or cancelled.
        by: Option<AnsweredBy>,
        /// When (Unix ms).
        at_ms: u64,
        /// Whether its resolution is still held for an asker that may come
        /// back (no host has taken it).
        held: bool,
    },
    /// The record has no such question (its row was discarded or pruned).
    Gone,
}

/// The pending table as a shared record drives it (implemented by
/// `pending::PendingTable`; the store names no type of the table's, so the
/// table may journal to the store without a circle).
pub trait FollowingTable: Send + Sync {
    /// What the record says of questions another host may have changed.
    fn observe(&self, observed: Vec<Observed>);
    /// The (session, id) of every question the table has open, pending or held.
    fn open_ids(&self) -> Vec<(String, String)>;
    /// The ids of the questions a call on this host waits on.
    fn attached_ids(&self) -> Vec<String>;
    /// A message another host wrote (already in the record) posted to the
    /// session's streams.
    fn post_message_as(&self, session: &str, message: MessageCreated) -> MessageCreated;
}

/// The paired devices as a shared record drives them (implemented by
/// `devices::Devices`).
pub trait FollowingDevices: Send + Sync {
    /// Adds the devices paired through another host and revokes the ones
    /// `paired` no longer lists; how many were revoked.
    fn follow(&self, paired: Vec<DeviceRecord>) -> usize;
    /// Revokes the devices paired under person `person` (removed through
    /// another host); how many.
    fn revoke_person(&self, person: &str) -> usize;
}

/// What a shared record says of people and agent tokens (all it has that
/// is not removed, and the removed ones among those a host knows): see
/// [`FollowingPeople::follow`].
#[derive(Debug, Default)]
pub struct Followed {
    /// Each person's row, and whether it was removed.
    pub people: Vec<(PersonRecord, bool)>,
    /// Each agent token's row, and whether it was removed.
    pub agents: Vec<(AgentRecord, bool)>,
}

/// The people and agent tokens as a shared record drives them (implemented
/// by `people::People`).
pub trait FollowingPeople: Send + Sync {
    /// Adds the people and agent tokens added through another host, removes
    /// the ones removed there (their credential refused at once, their
    /// streams ended); one added here whose row is not written yet stays.
    /// The ids of the people removed (their devices go with them).
    fn follow(&self, followed: Followed) -> Vec<String>;
    /// The ids of the people and agent tokens known here.
    fn ids(&self) -> Vec<String>;
}

/// The devices' push subscriptions as a shared record drives them
/// (implemented by `push::service::Push`).
pub trait FollowingPush: Send + Sync {
    /// Makes the subscriptions what the record has now (device id, JSON):
    /// ones made through another host are added, ones the record listed
    /// before and no longer does are dropped, and one made here whose row
    /// is not read back yet stays.
    fn follow(&self, subscriptions: Vec<(String, String)>);
}

/// `--ephemeral`: keeps nothing, so every write "applies" at once and the
/// pending table alone decides (as before there was a store).
#[derive(Debug, Default)]
pub struct EphemeralStore;

impl Store for EphemeralStore {
    fn submit(&self, _write: Write) -> Ticket {
        Ticket::settled(Ok(true))
    }

    fn restored(&self) -> Restored {
        Restored::default()
    }

    fn history(&self, _query: &HistoryQuery) -> Result<HistoryPage, StoreError> {
        Ok(HistoryPage::default())
    }

    fn trouble(&self) -> Option<String> {
        None
    }

    fn flush(&self) -> Ticket {
        Ticket::settled(Ok(true))
    }

    fn keeps(&self) -> bool {
        false
    }
}

/// The store's health: the current failure, logged at most once per
/// [`FAILURE_LOG_INTERVAL`].
#[derive(Debug, Default)]
pub(crate) struct Health {
    state: Mutex<HealthState>,
}

#[derive(Debug, Default)]
struct HealthState {
    trouble: Option<String>,
    last_logged: Option<Instant>,
    suppressed: u64,
}

impl Health {
    pub(crate) fn failed(&self, reason: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let due = state
            .last_logged
            .is_none_or(|at| at.elapsed() >= FAILURE_LOG_INTERVAL);
        if due {
            let suppressed = std::mem::take(&mut state.suppressed);
            tracing::error!(
                reason = %crate::logged::logged(&reason),
                failures_since_last_report = suppressed,
                "the store cannot write: asks and answers get 503 STORE_UNAVAILABLE"
            );
            state.last_logged = Some(Instant::now());
        } else {
            state.suppressed += 1;
        }
        state.trouble = Some(reason.to_owned());
    }

    pub(crate) fn recovered(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.trouble.take().is_some() {
            tracing::info!("the store writes again");
            state.last_logged = None;
            state.suppressed = 0;
        }
    }

    pub(crate) fn trouble(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .trouble
            .clone()
    }
}

/// The error an ask fails with inside core's seam when its question was not
/// kept: `ASK_FAILED` carrying the store's error as its cause, which
/// [`crate::AppState::ask`] turns back into the store's response (core has
/// no code for a transport's storage).
pub(crate) fn unavailable(error: &StoreError) -> UserInteractionError {
    let why = match error {
        StoreError::Unavailable(_) => "the question could not be recorded: ",
        StoreError::Full(_) => "the question was not recorded, the store is full: ",
        StoreError::TooFast(_) => "the question was not recorded, the session writes too fast: ",
    };
    UserInteractionError::failed(format!("{why}{}", error.reason())).with_cause(error.clone())
}

/// How often `--keep-days` prunes (also once at start).
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// Prunes `record` of what is older than `keep_days` now and every
/// [`PRUNE_INTERVAL`] until `shutdown` (nothing with `keep_days` 0).
pub fn spawn_pruning(
    record: std::sync::Arc<dyn Store>,
    keep_days: u32,
    shutdown: tokio_util::sync::CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    if keep_days == 0 {
        return None;
    }
    let keep_ms = u64::from(keep_days) * 24 * 60 * 60 * 1000;
    Some(tokio::spawn(async move {
        let mut every = tokio::time::interval(PRUNE_INTERVAL);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let before_ms = now_ms().saturating_sub(keep_ms);
            // A failure is the store's trouble, reported by its health.
            let _ = record.submit(Write::Prune { before_ms }).kept().await;
        }
    }))
}

pub use ask_user_core::wire::now_ms;
