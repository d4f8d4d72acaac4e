//! [`PostgresStore`]: the record in one PostgreSQL database that several
//! hosts share (`ask-user serve --store postgres://…`, issue 24).
//!
//! What it keeps is what [`super::SqliteStore`] keeps (questions, answers,
//! held resolutions, transcript messages, devices, push subscriptions), in the
//! schema `ask_user`, plus who waits on each open question: `host`, the
//! advisory-lock key of the host whose call waits (NULL while detached or
//! held). A host is alive while it holds its advisory lock, which PostgreSQL
//! drops with its connection: a host killed with `-9` is seen gone at once.
//!
//! - Writes go through one task in batches, one transaction each, as in the
//!   SQLite store; the first answer written wins (`… WHERE outcome IS NULL`).
//! - A new ask is one decision in the database ([`SharedRecord::take`]): the
//!   oldest detached question or held resolution of the same request in the
//!   session, on any host, is handed to this host (`FOR UPDATE SKIP LOCKED`),
//!   else the new question is written.
//! - Every change to a question that other hosts show (new, resolved, who
//!   waits) and every new message notifies channel `ask_user`
//!   (a trigger; the payload is `q` and the id, or `m` and the message's row,
//!   far below PostgreSQL's 8,000 bytes). Each host listens on its own
//!   connection, re-reads the rows and feeds them to its pending table as
//!   [`Observed`] inputs; after every (re)connect it reconciles the whole open
//!   record, since notifications sent while it was away are lost.
//! - Each host looks once a second for hosts that died (their lock gone) and
//!   detaches their questions; their grace counts from then.

use super::message_seqs::{MAX_GAPS, MessageSeqs, Replay};
use super::rates::SessionRates;
use super::sqlite::restorable;
use super::{
    AgentRecord, Asked, DeviceRecord, Followed, FollowingDevices, FollowingPeople, FollowingPush,
    FollowingTable, Health, HistoryCursor, HistoryPage, HistoryQuery, HistoryRecord, Observed,
    PersonRecord, RecordState, Restored, SharedRecord, Store, StoreError, StoreLimits, Taken,
    Ticket, Write,
};
use crate::logged::error_chain;
use crate::server::transcript::{MAX_LOGGED_SESSIONS, MAX_TRANSCRIPT_BYTES};
use ask_user_core::AnswerBatch;
use ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES;
use ask_user_core::wire::{
    MessageCreated, Outcome, QuestionRequested, Role, TranscriptEntry, TranscriptRecord,
};
use base64::Engine;
use futures_util::StreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::types::ToSql;
use tokio_postgres::{
    AsyncMessage, Client, Connection, NoTls, Notification, Row, Socket, Statement,
};

/// The schema this build writes; a database of a newer one is refused.
pub const SCHEMA_VERSION: i32 = 3;

/// The first key of every ask-user advisory lock ("AS"); the second is a host's.
const LOCK_SPACE: i32 = 0x4153;

/// The channel hosts notify each other on.
const CHANNEL: &str = "ask_user";

/// The most writes applied in one transaction.
const MAX_BATCH: usize = 512;

/// How often a host looks for hosts that died.
const REAP_INTERVAL: Duration = Duration::from_secs(1);

/// The longest wait between two tries to reach the database again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The steps from an empty database to each schema version, in order; each
/// runs in the transaction that records its version.
const MIGRATIONS: [&str; 3] = [
    r#"
CREATE TABLE ask_user.questions (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    session text NOT NULL,
    question text NOT NULL,
    created_ms bigint NOT NULL,
    request_sha bytea,
    outcome text,
    answer text,
    resolved_ms bigint,
    delivery smallint NOT NULL DEFAULT 0,
    answered_by text,
    host integer,
    detached_ms bigint
);
CREATE INDEX questions_open ON ask_user.questions (session, request_sha) WHERE delivery = 0;
CREATE INDEX questions_hosted ON ask_user.questions (host) WHERE delivery = 0 AND host IS NOT NULL;
CREATE INDEX questions_resolved ON ask_user.questions (resolved_ms, seq) WHERE outcome IS NOT NULL;
CREATE INDEX questions_session ON ask_user.questions (session, resolved_ms) WHERE outcome IS NOT NULL;
CREATE TABLE ask_user.messages (
    seq bigserial PRIMARY KEY,
    id text NOT NULL,
    session text NOT NULL,
    role text NOT NULL,
    text text NOT NULL,
    at_ms bigint NOT NULL,
    written_by text
);
CREATE INDEX messages_session ON ask_user.messages (session, at_ms);
CREATE TABLE ask_user.devices (
    id text PRIMARY KEY,
    name text NOT NULL,
    agent text NOT NULL,
    credential_sha256 text NOT NULL UNIQUE,
    paired_ms bigint NOT NULL,
    revoked_ms bigint,
    last_seen_ms bigint,
    last_answer_ms bigint
);
CREATE TABLE ask_user.push_subscriptions (
    device_id text PRIMARY KEY REFERENCES ask_user.devices (id),
    subscription text NOT NULL,
    subscribed_ms bigint NOT NULL
);
CREATE FUNCTION ask_user.host_alive(h integer) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 16723
                   AND objid = h::oid AND objsubid = 2 AND granted)
$$;
CREATE FUNCTION ask_user.notify_question() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('ask_user', 'q' || OLD.id);
    ELSE
        PERFORM pg_notify('ask_user', 'q' || NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER questions_asked AFTER INSERT ON ask_user.questions
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_question();
CREATE TRIGGER questions_changed AFTER UPDATE ON ask_user.questions
    FOR EACH ROW WHEN (OLD.outcome IS DISTINCT FROM NEW.outcome OR OLD.host IS DISTINCT FROM NEW.host)
    EXECUTE FUNCTION ask_user.notify_question();
CREATE TRIGGER questions_discarded AFTER DELETE ON ask_user.questions
    FOR EACH ROW WHEN (OLD.delivery = 0) EXECUTE FUNCTION ask_user.notify_question();
CREATE FUNCTION ask_user.notify_message() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ask_user', 'm' || NEW.seq);
    RETURN NULL;
END $$;
CREATE TRIGGER messages_created AFTER INSERT ON ask_user.messages
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_message();
CREATE FUNCTION ask_user.notify_device() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ask_user', 'd' || NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER devices_changed AFTER INSERT OR UPDATE OF revoked_ms ON ask_user.devices
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_device();
"#,
    PEOPLE,
    PUSH,
];

/// Schema 2 (issue 24): the people who may answer and the agent tokens, as
/// the SQLite store keeps them (roles as JSON, the SHA-256 of the
/// credential, a name unique among the rows not removed; rows are never
/// deleted, so an id is never reused), the person a device was paired under
/// (`devices.person_id`; NULL: the owner's), and when a question escalated
/// (`questions.escalated_ms`, set once: the first host's timer). An ask's
/// audience and `escalate_after` are in its request (`questions.question`).
/// A person or token added or removed notifies `p` or `a` and its id; a
/// question's escalation notifies `q` as its other changes do.
const PEOPLE: &str = r#"
CREATE TABLE ask_user.people (
    id text PRIMARY KEY,
    name text NOT NULL,
    roles text NOT NULL,
    credential_sha256 text NOT NULL UNIQUE,
    added_ms bigint NOT NULL,
    removed_ms bigint
);
CREATE UNIQUE INDEX people_name ON ask_user.people (name) WHERE removed_ms IS NULL;
CREATE TABLE ask_user.agent_tokens (
    id text PRIMARY KEY,
    name text NOT NULL,
    credential_sha256 text NOT NULL UNIQUE,
    added_ms bigint NOT NULL,
    removed_ms bigint
);
CREATE UNIQUE INDEX agent_tokens_name ON ask_user.agent_tokens (name) WHERE removed_ms IS NULL;
ALTER TABLE ask_user.devices ADD COLUMN person_id text;
CREATE INDEX devices_person ON ask_user.devices (person_id) WHERE person_id IS NOT NULL;
ALTER TABLE ask_user.questions ADD COLUMN escalated_ms bigint;
DROP TRIGGER questions_changed ON ask_user.questions;
CREATE TRIGGER questions_changed AFTER UPDATE ON ask_user.questions
    FOR EACH ROW WHEN (OLD.outcome IS DISTINCT FROM NEW.outcome OR OLD.host IS DISTINCT FROM NEW.host
                       OR OLD.escalated_ms IS DISTINCT FROM NEW.escalated_ms)
    EXECUTE FUNCTION ask_user.notify_question();
CREATE FUNCTION ask_user.notify_person() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ask_user', TG_ARGV[0] || NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER people_changed AFTER INSERT OR UPDATE OF removed_ms ON ask_user.people
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_person('p');
CREATE TRIGGER agent_tokens_changed AFTER INSERT OR UPDATE OF removed_ms ON ask_user.agent_tokens
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_person('a');
"#;

/// Schema 3: push across hosts. The hosts' one VAPID private key
/// (`vapid_key`, one row, written by the first host to start: a device
/// subscribes once, whichever host serves its page), which host pushed each
/// question (`pushes`: one row per question and kind, the first host's
/// insert wins, so a question is pushed once however many hosts follow it;
/// gone with its question), and a subscription made or dropped notifies
/// `s` (every host re-reads them: they are few).
const PUSH: &str = r#"
CREATE TABLE ask_user.vapid_key (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    private_key text NOT NULL
);
CREATE TABLE ask_user.pushes (
    question_id text NOT NULL REFERENCES ask_user.questions (id) ON DELETE CASCADE,
    escalation boolean NOT NULL,
    host integer NOT NULL,
    PRIMARY KEY (question_id, escalation)
);
CREATE FUNCTION ask_user.notify_subscription() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ask_user', 's');
    RETURN NULL;
END $$;
CREATE TRIGGER push_subscriptions_changed AFTER INSERT OR UPDATE OR DELETE
    ON ask_user.push_subscriptions
    FOR EACH ROW EXECUTE FUNCTION ask_user.notify_subscription();
"#;

/// The lock keys of the hosts alive now, as an `integer[]`: what
/// `ask_user.host_alive` says of one host, for all of them at once. An
/// uncorrelated sub-select, so PostgreSQL reads `pg_locks` (which copies the
/// whole lock table: 0.1–4 ms under load) at most once per statement, when a
/// row first needs it, rather than once per row as the function would.
macro_rules! live_hosts {
    () => {
        "ARRAY(SELECT objid::integer FROM pg_locks WHERE locktype = 'advisory' \
         AND classid = 16723 AND objsubid = 2 AND granted)"
    };
}

/// The columns a question's row is observed by (see [`observed`]), the
/// question's own column read as `$question` (NULL where the reader has it).
macro_rules! observed_columns {
    ($question:literal) => {
        concat!(
            "id, session, ",
            $question,
            ", outcome, answer, resolved_ms, answered_by, \
             host, detached_ms, delivery, (host IS NOT NULL AND host = ANY(",
            live_hosts!(),
            ")), escalated_ms IS NOT NULL"
        )
    };
}

/// A connection's statements, each prepared once: `query` with a string
/// parses and plans it again every time, a round trip more.
struct Prepared<'a> {
    client: &'a Client,
    statements: HashMap<&'static str, Statement>,
}

impl<'a> Prepared<'a> {
    fn new(client: &'a Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
        }
    }

    async fn get(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

enum Job {
    Write(Write, oneshot::Sender<Result<bool, StoreError>>),
    Take(Asked, [u8; 32], oneshot::Sender<Result<Taken, StoreError>>),
    Flush(oneshot::Sender<Result<bool, StoreError>>),
}

/// What the writer, the follower and the history reads share.
struct Inner {
    database: Database,
    /// `host:port/dbname` (never the password), for messages.
    described: String,
    health: Health,
    /// This host's advisory-lock key: `questions.host` of what its calls wait on.
    host: AtomicI32,
    /// The writer's backend: notifications it caused are this host's own.
    writer_pid: AtomicI32,
    /// The follower's connection, made at start (holding the host's lock)
    /// until [`SharedRecord::follow`] takes it.
    first_listener: Mutex<Option<Listener>>,
    ready: watch::Sender<bool>,
    /// Questions this host just took, to read once more after its table
    /// has them (see [`SharedRecord::taken`]), and their receiver until
    /// [`SharedRecord::follow`] takes it.
    recheck: mpsc::UnboundedSender<String>,
    rechecks: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    reader: tokio::sync::Mutex<Option<Client>>,
    runtime: tokio::runtime::Handle,
    max_open: usize,
    /// `--max-store-bytes`: past it new asks and messages get 507.
    max_bytes: u64,
    /// What the schema's tables held when last measured (see [`measure_size`]).
    size: AtomicU64,
    /// When "full" was last logged (at most once a minute).
    full_logged: Mutex<Option<std::time::Instant>>,
    /// `--max-session-write-bytes`, counted by this host alone.
    rates: Mutex<SessionRates>,
    /// The messages (their `seq`s) this host's transcripts are known to
    /// hold: what the follower replays is what it may have missed
    /// (see [`replay_messages`]).
    messages_read: Mutex<MessageSeqs>,
}

/// The record in a PostgreSQL database shared by several hosts.
pub struct PostgresStore {
    inner: Arc<Inner>,
    jobs: mpsc::UnboundedSender<Job>,
    restored: Restored,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.inner.described)
            .finish_non_exhaustive()
    }
}

pub use super::database::{Database, has_password, parse_url};

/// A connection with its notifications.
struct Listener {
    client: Client,
    notifications: mpsc::UnboundedReceiver<Notification>,
}

/// Connects, driving the connection on its own task; its notifications go to
/// the returned receiver, which ends when the connection does.
async fn connect(database: &Database) -> Result<Listener, tokio_postgres::Error> {
    Ok(match &database.tls {
        Some(tls) => drive(database.config.connect(tls.clone()).await?),
        None => drive(database.config.connect(NoTls).await?),
    })
}

/// Drives a new connection on its own task (see [`connect`]).
fn drive<T>((client, mut connection): (Client, Connection<Socket, T>)) -> Listener
where
    T: tokio_postgres::tls::TlsStream + Unpin + Send + 'static,
{
    let (tx, notifications) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    let _ = tx.send(notification);
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(%error, "a PostgreSQL connection ended");
                    break;
                }
            }
        }
    });
    Listener {
        client,
        notifications,
    }
}

fn unavailable(inner: &Inner, error: impl std::error::Error) -> String {
    format!("{}: {}", inner.described, error_chain(&error))
}

impl PostgresStore {
    /// Connects to the database of `config` ([`parse_url`]), applies the
    /// schema's migrations (refusing a newer schema, naming both versions),
    /// takes this host's lock and reads what the transcripts and devices need.
    pub async fn connect(database: Database, limits: StoreLimits) -> Result<Self, String> {
        let described = database.describe();
        let named = described.clone();
        let fail = move |e: &dyn std::error::Error| format!("{named}: {}", error_chain(e));
        let writer = connect(&database).await.map_err(|e| fail(&e))?;
        migrate(&writer.client)
            .await
            .map_err(|e| format!("{described}: {e}"))?;
        // Read before the transcripts are: a message written in between is
        // both read and replayed, and shown once (the table skips a message
        // it holds).
        let recent_seqs: Vec<i64> = writer
            .client
            .query(
                "SELECT seq FROM ask_user.messages \
                 WHERE seq >= (SELECT coalesce(max(seq), 0) FROM ask_user.messages) - $1",
                &[&(MAX_GAPS as i64)],
            )
            .await
            .map_err(|e| fail(&e))?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let highest = recent_seqs.iter().copied().max().unwrap_or(0);
        let messages_read = MessageSeqs::starting_at(highest, recent_seqs);
        let restored = load(&writer.client).await.map_err(|e| fail(&e))?;
        let (ready, _) = watch::channel(false);
        let (recheck, rechecks) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            database,
            described,
            health: Health::default(),
            host: AtomicI32::new(0),
            writer_pid: AtomicI32::new(0),
            first_listener: Mutex::new(None),
            ready,
            recheck,
            rechecks: Mutex::new(Some(rechecks)),
            reader: tokio::sync::Mutex::new(None),
            runtime: tokio::runtime::Handle::current(),
            max_open: limits.max_restored_questions,
            max_bytes: limits.max_bytes,
            rates: Mutex::new(SessionRates::new(limits.session_bytes_per_minute)),
            size: AtomicU64::new(0),
            messages_read: Mutex::new(messages_read),
            full_logged: Mutex::new(None),
        });
        let listener = listen(&inner).await.map_err(|e| fail(&e))?;
        *inner
            .first_listener
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(listener);
        let size = schema_size(&writer.client).await.map_err(|e| fail(&e))?;
        inner.size.store(size, Ordering::Release);
        tokio::spawn(measure_size(inner.clone()));
        let pid = backend_pid(&writer.client).await.map_err(|e| fail(&e))?;
        inner.writer_pid.store(pid, Ordering::Release);
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(inner.clone(), Some(writer.client), queue));
        tracing::info!(
            database = %inner.described,
            host = inner.host.load(Ordering::Acquire),
            schema = SCHEMA_VERSION,
            "store (shared)"
        );
        Ok(Self {
            inner,
            jobs,
            restored,
        })
    }

    /// `host:port/dbname` of the database (no password).
    pub fn described(&self) -> &str {
        &self.inner.described
    }
}

/// How often the schema's size is measured against `--max-store-bytes`.
const SIZE_INTERVAL: Duration = Duration::from_secs(1);

/// The bytes the schema's tables hold, with their indexes and TOAST: what
/// `--max-store-bytes` bounds on PostgreSQL.
async fn schema_size(client: &Client) -> Result<u64, tokio_postgres::Error> {
    let size: i64 = client
        .query_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'ask_user' AND c.relkind = 'r'",
            &[],
        )
        .await?
        .get(0);
    Ok(size.max(0) as u64)
}

/// Measures the schema's size every [`SIZE_INTERVAL`] on a connection of
/// its own (any host's writes count: the bound is the database's), until
/// the runtime ends. A failure keeps the last figure; the writer reports
/// the database's trouble.
async fn measure_size(inner: Arc<Inner>) {
    let mut client: Option<Client> = None;
    loop {
        tokio::time::sleep(SIZE_INTERVAL).await;
        if client.as_ref().is_none_or(Client::is_closed) {
            client = connect(&inner.database).await.ok().map(|l| l.client);
        }
        if let Some(connected) = &client
            && let Ok(size) = schema_size(connected).await
        {
            inner.size.store(size, Ordering::Release);
        }
    }
}

impl Inner {
    fn lock_messages_read(&self) -> std::sync::MutexGuard<'_, MessageSeqs> {
        self.messages_read.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the message row `seq` as read (its transcript holds it).
    fn read_message(&self, seq: i64) {
        self.lock_messages_read().read(seq);
    }

    /// 429 `TOO_MANY_WRITES` for a new question or message of a session
    /// that wrote its allowance this minute through this host.
    fn too_fast(&self, session: &str, bytes: u64) -> Option<StoreError> {
        self.rates.lock().unwrap_or_else(|e| e.into_inner()).admit(
            session,
            bytes + super::rates::ROW_OVERHEAD,
            std::time::Instant::now(),
        )
    }

    /// 507 `STORE_FULL` for a new question or message while the schema's
    /// tables hold `--max-store-bytes` or more. Answers and cancels are
    /// never refused for room (they resolve what waits); nothing is pruned
    /// but by `--keep-days`, and PostgreSQL reuses the room deleted rows
    /// leave (a `VACUUM FULL` gives it back to the disk).
    fn full(&self) -> Option<StoreError> {
        let size = self.size.load(Ordering::Acquire);
        if size < self.max_bytes {
            return None;
        }
        let mut logged = self.full_logged.lock().unwrap_or_else(|e| e.into_inner());
        if logged.is_none_or(|at| at.elapsed() >= super::FAILURE_LOG_INTERVAL) {
            tracing::warn!(
                database = %self.described,
                size,
                max = self.max_bytes,
                "the shared store is at --max-store-bytes: new questions and messages get 507 STORE_FULL"
            );
            *logged = Some(std::time::Instant::now());
        }
        Some(StoreError::Full(format!(
            "{}: the schema ask_user holds {size} bytes, the most it may (--max-store-bytes {}); \
             answer or cancel questions, or lower --keep-days, first",
            self.described, self.max_bytes
        )))
    }
}

async fn backend_pid(client: &Client) -> Result<i32, tokio_postgres::Error> {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map(|row| row.get(0))
}

/// Brings the database to [`SCHEMA_VERSION`], one transaction per step, under
/// an advisory lock (hosts starting together migrate once); refuses a newer
/// schema.
async fn migrate(client: &Client) -> Result<(), String> {
    let error = |e: tokio_postgres::Error| e.to_string();
    client.batch_execute("BEGIN").await.map_err(error)?;
    let result = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_SPACE])
            .await
            .map_err(error)?;
        client
            .batch_execute(
                "CREATE SCHEMA IF NOT EXISTS ask_user; \
                 CREATE TABLE IF NOT EXISTS ask_user.schema_version (version integer NOT NULL)",
            )
            .await
            .map_err(error)?;
        let version: i32 = client
            .query_one(
                "SELECT coalesce(max(version), 0) FROM ask_user.schema_version",
                &[],
            )
            .await
            .map_err(error)?
            .get(0);
        if version > SCHEMA_VERSION {
            return Err(format!(
                "written by a newer ask-user (schema {version}, this one knows {SCHEMA_VERSION}); \
                 the host does not touch it: upgrade this host"
            ));
        }
        for (step, sql) in MIGRATIONS.iter().enumerate() {
            let to = step as i32 + 1;
            if to > version {
                client.batch_execute(sql).await.map_err(error)?;
                client
                    .execute("INSERT INTO ask_user.schema_version VALUES ($1)", &[&to])
                    .await
                    .map_err(error)?;
                tracing::info!(schema = to, "migrated the shared store");
            }
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => client.batch_execute("COMMIT").await.map_err(error),
        Err(why) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(why)
        }
    }
}

/// Connects the follower: takes this host's advisory lock (the key it had,
/// else a new one) and listens.
async fn listen(inner: &Inner) -> Result<Listener, tokio_postgres::Error> {
    let listener = connect(&inner.database).await?;
    let mut key = inner.host.load(Ordering::Acquire);
    loop {
        if key <= 0 {
            key = (rand::random::<u32>() >> 1).max(1) as i32;
        }
        let got: bool = listener
            .client
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_SPACE, &key])
            .await?
            .get(0);
        if got {
            break;
        }
        key = 0;
    }
    inner.host.store(key, Ordering::Release);
    // The follower's reads name rows by `id = ANY($1)`: a plan cached while
    // the table was small scans it whole, and stays cached as it grows (on
    // a fresh database, 1–9 ms a read after a few thousand questions). Each
    // read planned for its ids keeps to the index. (PostgreSQL 12 and
    // later; an older one plans as before.)
    let _ = listener
        .client
        .batch_execute("SET plan_cache_mode = force_custom_plan")
        .await;
    listener
        .client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await?;
    Ok(listener)
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire types always serialise")
}

/// The writer: one transaction per batch of queued jobs, reconnecting when
/// the connection is gone (the batch that found it gone fails, 503).
async fn write_loop(
    inner: Arc<Inner>,
    mut client: Option<Client>,
    mut queue: mpsc::UnboundedReceiver<Job>,
) {
    let mut statements: HashMap<&'static str, Statement> = HashMap::new();
    let mut batch: Vec<Job> = Vec::new();
    while let Some(job) = queue.recv().await {
        batch.push(job);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if client.as_ref().is_none_or(Client::is_closed) {
            statements.clear();
            client = match connect(&inner.database).await {
                Ok(listener) => {
                    if let Ok(pid) = backend_pid(&listener.client).await {
                        inner.writer_pid.store(pid, Ordering::Release);
                    }
                    Some(listener.client)
                }
                Err(e) => {
                    let why = unavailable(&inner, e);
                    inner.health.failed(&why);
                    fail_all(std::mem::take(&mut batch), &why);
                    continue;
                }
            };
        }
        let conn = client.as_ref().expect("connected above");
        let mut writer = Writer {
            client: conn,
            statements: &mut statements,
            me: inner.host.load(Ordering::Acquire),
        };
        let jobs = std::mem::take(&mut batch);
        match writer.apply_all(&jobs).await {
            Ok(results) => {
                inner.health.recovered();
                reply_all(jobs, results);
            }
            Err(error) if conn.is_closed() => {
                let why = unavailable(&inner, error);
                inner.health.failed(&why);
                fail_all(jobs, &why);
            }
            Err(_) => {
                // One write failed the batch: apply each alone, so only the
                // failing ones fail.
                let mut results = Vec::with_capacity(jobs.len());
                for job in &jobs {
                    let result = writer.apply_all(std::slice::from_ref(job)).await;
                    results.push(match result {
                        Ok(mut one) => one.remove(0),
                        Err(e) => Done::Failed(unavailable(&inner, e)),
                    });
                }
                match results.iter().find_map(|r| match r {
                    Done::Failed(why) => Some(why.clone()),
                    _ => None,
                }) {
                    Some(why) => inner.health.failed(&why),
                    None => inner.health.recovered(),
                }
                reply_all(jobs, results);
            }
        }
    }
}

/// A step of a batch's transaction (see [`schedule`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// These jobs' statements are sent together, in order, without waiting
    /// for each other's answers.
    Pipelined(std::ops::Range<usize>),
    /// This job runs alone, once everything before it was applied: a take
    /// (what it writes depends on what it reads) or a write of several
    /// statements.
    Alone(usize),
}

/// The steps of a batch whose job `i` may be pipelined when `pipelinable[i]`:
/// every job once, in the batch's order, runs of pipelinable jobs together.
fn schedule(pipelinable: &[bool]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut run_start = None;
    for (index, &pipelined) in pipelinable.iter().enumerate() {
        if pipelined {
            run_start.get_or_insert(index);
            continue;
        }
        if let Some(start) = run_start.take() {
            steps.push(Step::Pipelined(start..index));
        }
        steps.push(Step::Alone(index));
    }
    if let Some(start) = run_start {
        steps.push(Step::Pipelined(start..pipelinable.len()));
    }
    steps
}

/// What one job came to.
enum Done {
    Applied(bool),
    Taken(Box<Taken>),
    Failed(String),
}

fn fail_all(jobs: Vec<Job>, why: &str) {
    let results = jobs.iter().map(|_| Done::Failed(why.to_owned())).collect();
    reply_all(jobs, results);
}

fn reply_all(jobs: Vec<Job>, results: Vec<Done>) {
    for (job, result) in jobs.into_iter().zip(results) {
        match (job, result) {
            (Job::Write(_, reply) | Job::Flush(reply), Done::Applied(changed)) => {
                let _ = reply.send(Ok(changed));
            }
            (Job::Write(_, reply) | Job::Flush(reply), Done::Failed(why)) => {
                let _ = reply.send(Err(StoreError::Unavailable(why)));
            }
            (Job::Take(_, _, reply), Done::Taken(taken)) => {
                let _ = reply.send(Ok(*taken));
            }
            (Job::Take(_, _, reply), Done::Failed(why)) => {
                let _ = reply.send(Err(StoreError::Unavailable(why)));
            }
            (Job::Write(_, reply) | Job::Flush(reply), Done::Taken(_)) => {
                let _ = reply.send(Ok(true));
            }
            (Job::Take(_, _, reply), Done::Applied(_)) => {
                let _ = reply.send(Err(StoreError::Unavailable(
                    "the store answered a take with a write".to_owned(),
                )));
            }
        }
    }
}

struct Writer<'a> {
    client: &'a Client,
    statements: &'a mut HashMap<&'static str, Statement>,
    me: i32,
}

impl Writer<'_> {
    async fn statement(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    async fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        let statement = self.statement(sql).await?;
        self.client.execute(&statement, params).await
    }

    /// Applies `jobs` in one transaction: all kept, or (an error) none.
    async fn apply_all(&mut self, jobs: &[Job]) -> Result<Vec<Done>, tokio_postgres::Error> {
        // One write alone is one statement, atomic by itself: no BEGIN and
        // COMMIT round trips (most writes when the host is not busy).
        if let [Job::Write(write, _)] = jobs
            && !matches!(write, Write::DeviceRevoked { .. } | Write::Prune { .. })
        {
            return Ok(vec![Done::Applied(self.apply(write).await?)]);
        }
        let pipelinable: Vec<bool> = jobs
            .iter()
            .map(|job| match job {
                Job::Write(write, _) => !matches!(plan(write, self.me), Planned::Several),
                Job::Take(..) => false,
                Job::Flush(_) => true,
            })
            .collect();
        let mut results: Vec<Option<Done>> = jobs.iter().map(|_| None).collect();
        let applied = async {
            let begin = self.statement("BEGIN").await?;
            let commit = self.statement("COMMIT").await?;
            // What is sent together next, with the job each answers for.
            let mut queued: Vec<(Statement, Vec<Param>, Option<usize>)> =
                vec![(begin, Vec::new(), None)];
            for step in schedule(&pipelinable) {
                match step {
                    Step::Pipelined(range) => {
                        for index in range {
                            match &jobs[index] {
                                Job::Write(write, _) => match plan(write, self.me) {
                                    Planned::One(sql, params) => {
                                        let statement = self.statement(sql).await?;
                                        queued.push((statement, params, Some(index)));
                                    }
                                    Planned::Several => {
                                        unreachable!(
                                            "a write of several statements is scheduled alone"
                                        )
                                    }
                                },
                                Job::Flush(_) | Job::Take(..) => {
                                    results[index] = Some(Done::Applied(true));
                                }
                            }
                        }
                    }
                    Step::Alone(index) => {
                        self.send(std::mem::take(&mut queued), &mut results).await?;
                        results[index] = Some(match &jobs[index] {
                            Job::Write(write, _) => Done::Applied(self.apply(write).await?),
                            Job::Take(asked, sha, _) => {
                                Done::Taken(Box::new(self.take(asked, sha).await?))
                            }
                            Job::Flush(_) => Done::Applied(true),
                        });
                    }
                }
            }
            queued.push((commit, Vec::new(), None));
            self.send(queued, &mut results).await
        }
        .await;
        match applied {
            Ok(()) => Ok(results
                .into_iter()
                .map(|done| done.unwrap_or(Done::Applied(false)))
                .collect()),
            Err(error) => {
                if !self.client.is_closed() {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                }
                Err(error)
            }
        }
    }

    /// Sends `queued` at once and waits for all their answers: PostgreSQL
    /// runs them in order, one round trip for them all instead of one each.
    /// The first error is returned; the statements after it fail with it
    /// (the transaction is aborted), a COMMIT among them rolls back.
    async fn send(
        &self,
        queued: Vec<(Statement, Vec<Param>, Option<usize>)>,
        results: &mut [Option<Done>],
    ) -> Result<(), tokio_postgres::Error> {
        // `try_join_all` polls them first in order, and tokio-postgres sends
        // each request when its future is first polled: the order is kept.
        let answers = futures_util::future::try_join_all(queued.iter().map(
            |(statement, params, _)| async move {
                self.client.execute(statement, &param_refs(params)).await
            },
        ))
        .await?;
        for ((_, _, index), changed) in queued.iter().zip(answers) {
            if let Some(index) = index {
                results[*index] = Some(Done::Applied(changed > 0));
            }
        }
        Ok(())
    }

    async fn take(
        &mut self,
        asked: &Asked,
        sha: &[u8; 32],
    ) -> Result<Taken, tokio_postgres::Error> {
        let sha: &[u8] = sha;
        let statement = self
            .statement(concat!(
                "SELECT id, question, outcome, answer FROM ask_user.questions \
                 WHERE session = $1 AND request_sha = $2 AND delivery = 0 \
                 AND (outcome IS NULL OR outcome IN ('answered', 'cancelled')) \
                 AND (host IS NULL OR NOT host = ANY(",
                live_hosts!(),
                ")) ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED"
            ))
            .await?;
        let found = self
            .client
            .query_opt(&statement, &[&asked.session, &sha])
            .await?;
        if let Some(row) = found {
            let id: String = row.get(0);
            let question: String = row.get(1);
            let outcome: Option<String> = row.get(2);
            let answer: Option<String> = row.get(3);
            let parsed = serde_json::from_str::<QuestionRequested>(&question).ok();
            let held = match outcome.as_deref().map(Outcome::from_wire) {
                None => Some(None),
                Some(Some(Outcome::Answered)) => answer
                    .and_then(|a| serde_json::from_str::<AnswerBatch>(&a).ok())
                    .map(|answer| Some(Some(answer))),
                Some(_) => Some(Some(None)),
            };
            // A row that no longer reads is left alone: the ask is new.
            if let (Some(question), Some(held)) = (parsed, held) {
                let me = self.me;
                self.execute(
                    "UPDATE ask_user.questions SET host = $2, detached_ms = NULL WHERE id = $1",
                    &[&id, &me],
                )
                .await?;
                let answered =
                    outcome.as_deref().and_then(Outcome::from_wire) == Some(Outcome::Answered);
                let held = held.map(|answer| answer.filter(|_| answered));
                return Ok(Taken::Existing {
                    question: Box::new(question),
                    held,
                });
            }
        }
        let me = self.me;
        self.execute(
            "INSERT INTO ask_user.questions (id, session, question, created_ms, request_sha, host) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &asked.id,
                &asked.session,
                &asked.json,
                &(asked.created_at_ms as i64),
                &sha,
                &me,
            ],
        )
        .await?;
        Ok(Taken::New)
    }

    async fn apply(&mut self, write: &Write) -> Result<bool, tokio_postgres::Error> {
        let changed = match plan(write, self.me) {
            Planned::One(sql, params) => {
                let statement = self.statement(sql).await?;
                self.client
                    .execute(&statement, &param_refs(&params))
                    .await?
            }
            Planned::Several => match write {
                Write::DeviceRevoked { id, at_ms } => {
                    self.execute(
                        "DELETE FROM ask_user.push_subscriptions WHERE device_id = $1",
                        &[id],
                    )
                    .await?;
                    self.execute(
                        "UPDATE ask_user.devices SET revoked_ms = $2 WHERE id = $1 AND revoked_ms IS NULL",
                        &[id, &(*at_ms as i64)],
                    )
                    .await?
                }
                Write::Prune { before_ms } => {
                    let before = *before_ms as i64;
                    self.execute(
                        "DELETE FROM ask_user.questions WHERE outcome IS NOT NULL AND delivery <> 0 \
                         AND resolved_ms < $1",
                        &[&before],
                    )
                    .await?
                        + self
                            .execute("DELETE FROM ask_user.messages WHERE at_ms < $1", &[&before])
                            .await?
                }
                _ => unreachable!("plan says Several only of the writes above"),
            },
        };
        Ok(changed > 0)
    }
}

/// An owned statement parameter (a pipelined statement outlives the borrow of its job).
type Param = Box<dyn ToSql + Sync + Send>;

fn param_refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|param| &**param as &(dyn ToSql + Sync))
        .collect()
}

/// How a write is applied.
enum Planned {
    /// One statement: it may be pipelined with its neighbours.
    One(&'static str, Vec<Param>),
    /// Several statements, one after the other ([`Writer::apply`]).
    Several,
}

/// The statement of a write of one statement, with its parameters, for a
/// host whose lock key is `me`.
fn plan(write: &Write, me: i32) -> Planned {
    fn text(value: &str) -> Param {
        Box::new(value.to_owned())
    }
    fn ms(value: u64) -> Param {
        Box::new(value as i64)
    }
    let (sql, params): (&'static str, Vec<Param>) = match write {
        Write::Asked(asked) => (
            "INSERT INTO ask_user.questions (id, session, question, created_ms, host) \
             VALUES ($1, $2, $3, $4, $5)",
            vec![
                text(&asked.id),
                text(&asked.session),
                text(&asked.json),
                ms(asked.created_at_ms),
                Box::new(me),
            ],
        ),
        Write::Discard { id } => (
            "DELETE FROM ask_user.questions WHERE id = $1 AND outcome IS NULL",
            vec![text(id)],
        ),
        Write::Answered {
            id,
            answer,
            at_ms,
            by,
        } => (
            "UPDATE ask_user.questions SET outcome = 'answered', answer = $2, \
             resolved_ms = $3, answered_by = $4 WHERE id = $1 AND outcome IS NULL",
            vec![
                text(id),
                Box::new(to_json(answer)),
                ms(*at_ms),
                Box::new(by.as_ref().map(to_json)),
            ],
        ),
        Write::Cancelled { id, at_ms, by } => (
            "UPDATE ask_user.questions SET outcome = 'cancelled', resolved_ms = $2, \
             answered_by = $3 WHERE id = $1 AND outcome IS NULL",
            vec![text(id), ms(*at_ms), Box::new(by.as_ref().map(to_json))],
        ),
        // Only what this host's calls wait on, or what nobody waits on:
        // a host shutting down disposes its own waits, never another
        // host's or a detached question (another host may be asked again).
        Write::Ended { id, outcome, at_ms } => (
            concat!(
                "UPDATE ask_user.questions SET outcome = $2, answer = NULL, \
                 resolved_ms = $3, delivery = 1, host = NULL, detached_ms = NULL \
                 WHERE id = $1 AND outcome IS NULL AND (host = $4 OR ($2 <> 'disposed' \
                 AND (host IS NULL OR NOT host = ANY(",
                live_hosts!(),
                "))))"
            ),
            vec![text(id), text(outcome.as_str()), ms(*at_ms), Box::new(me)],
        ),
        Write::Detached { id } => (
            "UPDATE ask_user.questions SET host = NULL, detached_ms = CASE WHEN outcome \
             IS NULL THEN $2 ELSE detached_ms END WHERE id = $1 AND host = $3 AND delivery = 0",
            vec![text(id), ms(super::now_ms()), Box::new(me)],
        ),
        Write::Delivered { id } => (
            "UPDATE ask_user.questions SET delivery = 1 \
             WHERE id = $1 AND outcome IS NOT NULL AND delivery = 0",
            vec![text(id)],
        ),
        Write::NeverDelivered { id } => (
            concat!(
                "UPDATE ask_user.questions SET delivery = 2 WHERE id = $1 \
                 AND outcome IS NOT NULL AND delivery = 0 \
                 AND (host IS NULL OR host = $2 OR NOT host = ANY(",
                live_hosts!(),
                "))"
            ),
            vec![text(id), Box::new(me)],
        ),
        Write::Message {
            session,
            message,
            at_ms,
        } => {
            let role = to_json(&message.role);
            (
                "INSERT INTO ask_user.messages (id, session, role, text, at_ms, written_by) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                vec![
                    text(&message.id),
                    text(session),
                    text(role.trim_matches('"')),
                    text(&message.text),
                    ms(*at_ms),
                    Box::new(message.by.as_ref().map(to_json)),
                ],
            )
        }
        Write::DevicePaired(device) => (
            "INSERT INTO ask_user.devices (id, name, agent, credential_sha256, paired_ms, \
             last_seen_ms, person_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            vec![
                text(&device.id),
                text(&device.name),
                text(&device.agent),
                text(&device.credential_sha256),
                ms(device.paired_at_ms),
                ms(device.last_seen_ms),
                Box::new(device.person.clone()),
            ],
        ),
        Write::DeviceSeen { id, at_ms } => (
            "UPDATE ask_user.devices SET last_seen_ms = $2 \
             WHERE id = $1 AND coalesce(last_seen_ms, 0) < $2",
            vec![text(id), ms(*at_ms)],
        ),
        Write::DeviceAnswered { id, at_ms } => (
            "UPDATE ask_user.devices SET last_answer_ms = $2, \
             last_seen_ms = greatest(coalesce(last_seen_ms, 0), $2) \
             WHERE id = $1 AND coalesce(last_answer_ms, 0) < $2",
            vec![text(id), ms(*at_ms)],
        ),
        Write::PushSubscribed {
            device,
            subscription,
            at_ms,
        } => (
            "INSERT INTO ask_user.push_subscriptions (device_id, subscription, subscribed_ms) \
             SELECT $1, $2, $3 WHERE EXISTS \
             (SELECT 1 FROM ask_user.devices WHERE id = $1 AND revoked_ms IS NULL) \
             ON CONFLICT (device_id) DO UPDATE SET subscription = $2, subscribed_ms = $3",
            vec![text(device), text(subscription), ms(*at_ms)],
        ),
        // The first host's claim inserts the row; a question already gone
        // is pushed by nobody.
        Write::PushClaimed { id, escalation } => (
            "INSERT INTO ask_user.pushes (question_id, escalation, host) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM ask_user.questions WHERE id = $1) \
             ON CONFLICT DO NOTHING",
            vec![text(id), Box::new(*escalation), Box::new(me)],
        ),
        Write::PushUnsubscribed { device } => (
            "DELETE FROM ask_user.push_subscriptions WHERE device_id = $1",
            vec![text(device)],
        ),
        Write::DeviceRevoked { .. } | Write::Prune { .. } => return Planned::Several,
        // A name taken meanwhile (through another host) changes nothing:
        // the caller says so (409).
        Write::PersonAdded(person) => (
            "INSERT INTO ask_user.people (id, name, roles, credential_sha256, added_ms) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            vec![
                text(&person.id),
                text(&person.name),
                Box::new(to_json(&person.roles)),
                text(&person.credential_sha256),
                ms(person.added_at_ms),
            ],
        ),
        // One statement (atomic alone): the person, their devices and
        // the devices' push subscriptions; the devices' trigger tells
        // every host to revoke them.
        Write::PersonRemoved { id, at_ms } => (
            "WITH revoked AS (UPDATE ask_user.devices SET revoked_ms = $2 \
             WHERE person_id = $1 AND revoked_ms IS NULL RETURNING id), \
             unsubscribed AS (DELETE FROM ask_user.push_subscriptions WHERE device_id IN \
             (SELECT id FROM ask_user.devices WHERE person_id = $1) RETURNING device_id) \
             UPDATE ask_user.people SET removed_ms = $2 WHERE id = $1 AND removed_ms IS NULL",
            vec![text(id), ms(*at_ms)],
        ),
        Write::AgentAdded(agent) => (
            "INSERT INTO ask_user.agent_tokens (id, name, credential_sha256, added_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            vec![
                text(&agent.id),
                text(&agent.name),
                text(&agent.credential_sha256),
                ms(agent.added_at_ms),
            ],
        ),
        Write::AgentRemoved { id, at_ms } => (
            "UPDATE ask_user.agent_tokens SET removed_ms = $2 \
             WHERE id = $1 AND removed_ms IS NULL",
            vec![text(id), ms(*at_ms)],
        ),
        // The first host's timer is kept: exactly one escalation per
        // question, decided here; the trigger tells the other hosts.
        Write::Escalated { id, at_ms } => (
            "UPDATE ask_user.questions SET escalated_ms = $2 \
             WHERE id = $1 AND outcome IS NULL AND escalated_ms IS NULL",
            vec![text(id), ms(*at_ms)],
        ),
    };
    Planned::One(sql, params)
}

/// What a question's row (selected with `observed_columns!`) says, for a
/// host whose lock key is `me`; `None` for a row that no longer reads.
fn observed(row: &Row, me: i32, now_ms: u64) -> Option<Observed> {
    let id: String = row.get(0);
    let session: String = row.get(1);
    let question: Option<String> = row.get(2);
    let outcome: Option<String> = row.get(3);
    let answer: Option<String> = row.get(4);
    let resolved_ms: Option<i64> = row.get(5);
    let by: Option<String> = row.get(6);
    let host: Option<i32> = row.get(7);
    let detached_ms: Option<i64> = row.get(8);
    let delivery: i16 = row.get(9);
    let alive: bool = row.get(10);
    let escalated: bool = row.get(11);
    let asked = match question.map(|question| serde_json::from_str::<QuestionRequested>(&question))
    {
        // Not read: the reader's table has it.
        None => None,
        Some(Ok(question)) if question.id == id && restorable(&session, &question).is_ok() => {
            let json = crate::server::canonical::request_json(&question.request);
            Some((question, json))
        }
        Some(_) => {
            tracing::warn!(id = %crate::logged::logged(&id), "a shared question no longer reads; left out");
            return None;
        }
    };
    let state = match outcome.as_deref() {
        None => match host {
            Some(host) if host == me => RecordState::AttachedHere,
            Some(_) if alive => RecordState::AttachedElsewhere,
            Some(_) => RecordState::Detached {
                since: Duration::ZERO,
            },
            None => RecordState::Detached {
                since: Duration::from_millis(
                    now_ms.saturating_sub(detached_ms.unwrap_or(0).max(0) as u64),
                ),
            },
        },
        Some(name) => RecordState::Resolved {
            outcome: Outcome::from_wire(name)?,
            answer: answer
                .filter(|_| Outcome::from_wire(name) == Some(Outcome::Answered))
                .and_then(|a| serde_json::from_str(&a).ok()),
            by: by.and_then(|by| serde_json::from_str(&by).ok()),
            at_ms: resolved_ms.unwrap_or(0).max(0) as u64,
            held: delivery == 0 && (host.is_none() || !alive),
        },
    };
    Some(Observed {
        session,
        id,
        asked,
        state,
        escalated,
    })
}

/// Follows the record into `pending` until the runtime ends: reconciles
/// after every (re)connect, then applies what notifications name and what
/// the look for dead hosts finds.
async fn follow(
    inner: Arc<Inner>,
    pending: Arc<dyn FollowingTable>,
    devices: Arc<dyn FollowingDevices>,
    people: Arc<dyn FollowingPeople>,
    push: Option<Arc<dyn FollowingPush>>,
) {
    let mut first = inner
        .first_listener
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let mut rechecks = inner
        .rechecks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .expect("followed once");
    let mut backoff = Duration::from_millis(100);
    loop {
        let mut listener = match first.take() {
            Some(listener) => listener,
            None => match listen(&inner).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::debug!(%error, "cannot reach the shared store yet");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
        };
        let mut conn = Prepared::new(&listener.client);
        let reconciled = async {
            reconcile(&inner, &mut conn, &pending).await?;
            replay_messages(&inner, &mut conn, &pending).await?;
            follow_devices(conn.client, &devices).await?;
            follow_people(conn.client, &people, &devices).await?;
            follow_subscriptions(conn.client, &push).await
        };
        if let Err(error) = reconciled.await {
            tracing::warn!(error = %crate::logged::logged(&error), "reconciling with the shared store failed; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            continue;
        }
        backoff = Duration::from_millis(100);
        inner.ready.send_replace(true);
        let mut reap = tokio::time::interval(REAP_INTERVAL);
        let ended = loop {
            tokio::select! {
                notification = listener.notifications.recv() => {
                    let Some(notification) = notification else { break "the connection closed".to_owned() };
                    let mut batch = vec![notification];
                    while batch.len() < MAX_BATCH {
                        match listener.notifications.try_recv() {
                            Ok(more) => batch.push(more),
                            Err(_) => break,
                        }
                    }
                    if let Err(error) = apply_notifications(&inner, &mut conn, &pending, &devices, &people, &push, batch).await {
                        break error.to_string();
                    }
                }
                Some(id) = rechecks.recv() => {
                    let mut ids = vec![id];
                    while ids.len() < MAX_BATCH {
                        match rechecks.try_recv() {
                            Ok(more) => ids.push(more),
                            Err(_) => break,
                        }
                    }
                    if let Err(error) = observe_ids(&inner, &mut conn, &pending, &ids).await {
                        break error.to_string();
                    }
                }
                _ = reap.tick() => {
                    if let Err(error) = reap_dead_hosts(&inner, &mut conn).await {
                        break error.to_string();
                    }
                }
            }
        };
        tracing::warn!(
            database = %inner.described,
            why = %crate::logged::logged(&ended),
            "lost the shared store's notifications; reconnecting, then reconciling"
        );
    }
}

/// Reads the questions and messages `batch` names (skipping what this host's
/// writer caused: the table has it already) into `pending`.
async fn apply_notifications(
    inner: &Inner,
    conn: &mut Prepared<'_>,
    pending: &Arc<dyn FollowingTable>,
    devices: &Arc<dyn FollowingDevices>,
    people: &Arc<dyn FollowingPeople>,
    push: &Option<Arc<dyn FollowingPush>>,
    batch: Vec<Notification>,
) -> Result<(), tokio_postgres::Error> {
    let own = inner.writer_pid.load(Ordering::Acquire);
    let mut ids: Vec<String> = Vec::new();
    let mut messages: Vec<i64> = Vec::new();
    let mut seen = HashSet::new();
    let mut devices_changed = false;
    let mut people_changed = false;
    let mut subscriptions_changed = false;
    for notification in batch {
        if notification.channel() != CHANNEL {
            continue;
        }
        if notification.process_id() == own {
            // This host's own message: its transcript has it; no replay needs it.
            if let Some(seq) = notification
                .payload()
                .strip_prefix('m')
                .and_then(|s| s.parse().ok())
            {
                inner.read_message(seq);
            }
            continue;
        }
        let payload = notification.payload();
        if let Some(id) = payload.strip_prefix('q') {
            if seen.insert(id.to_owned()) {
                ids.push(id.to_owned());
            }
        } else if let Some(seq) = payload.strip_prefix('m').and_then(|s| s.parse().ok()) {
            messages.push(seq);
        } else if payload.starts_with('d') {
            devices_changed = true;
        } else if payload.starts_with('p') || payload.starts_with('a') {
            people_changed = true;
        } else if payload.starts_with('s') {
            subscriptions_changed = true;
        }
    }
    if devices_changed {
        follow_devices(conn.client, devices).await?;
    }
    if people_changed {
        follow_people(conn.client, people, devices).await?;
    }
    if subscriptions_changed {
        follow_subscriptions(conn.client, push).await?;
    }
    if !ids.is_empty() {
        observe_ids(inner, conn, pending, &ids).await?;
    }
    if !messages.is_empty() {
        let statement = conn
            .get(concat!(
                "SELECT ",
                message_columns!(),
                " FROM ask_user.messages WHERE seq = ANY($1) ORDER BY seq"
            ))
            .await?;
        let rows = conn.client.query(&statement, &[&messages]).await?;
        post_messages(inner, pending, &rows);
    }
    Ok(())
}

/// The columns [`post_messages`] reads.
macro_rules! message_columns {
    () => {
        "seq, session, id, role, text, at_ms, written_by"
    };
}
use message_columns;

/// Gives `pending` the messages of `rows` ([`message_columns`]) and notes
/// each as read.
fn post_messages(inner: &Inner, pending: &Arc<dyn FollowingTable>, rows: &[Row]) {
    for row in rows {
        inner.read_message(row.get(0));
        let session: String = row.get(1);
        let role = match row.get::<_, &str>(3) {
            "user" => Role::User,
            _ => Role::Agent,
        };
        let message = MessageCreated {
            id: row.get(2),
            role,
            text: row.get(4),
            at_ms: row.get::<_, i64>(5).max(0) as u64,
            by: row
                .get::<_, Option<String>>(6)
                .and_then(|by| serde_json::from_str(&by).ok()),
        };
        if ask_user_core::SessionId::is_valid(&session) {
            pending.post_message_as(&session, message);
        }
    }
}

/// The most messages read at once when replaying.
const REPLAY_PAGE: i64 = 500;

/// After a (re)connect: the messages written since the last this host read,
/// and those below it it has not read (they committed late), which no
/// notification brought while its follower was away (a message this host
/// wrote itself may be among them; the table shows it once).
async fn replay_messages(
    inner: &Inner,
    conn: &mut Prepared<'_>,
    pending: &Arc<dyn FollowingTable>,
) -> Result<(), tokio_postgres::Error> {
    let statement = conn
        .get(concat!(
            "SELECT ",
            message_columns!(),
            " FROM ask_user.messages WHERE seq = ANY($1) OR seq > $2 ORDER BY seq LIMIT $3"
        ))
        .await?;
    loop {
        let Replay { gaps, after } = inner.lock_messages_read().replay();
        let rows = conn
            .client
            .query(&statement, &[&gaps, &after, &REPLAY_PAGE])
            .await?;
        post_messages(inner, pending, &rows);
        if (rows.len() as i64) < REPLAY_PAGE {
            return Ok(());
        }
    }
}

/// Reads the rows of `ids` into `pending`; an id with no row is gone.
async fn observe_ids(
    inner: &Inner,
    conn: &mut Prepared<'_>,
    pending: &Arc<dyn FollowingTable>,
    ids: &[String],
) -> Result<(), tokio_postgres::Error> {
    let statement = conn
        .get(concat!(
            "SELECT ",
            observed_columns!("CASE WHEN id = ANY($2) THEN NULL ELSE question END"),
            " FROM ask_user.questions WHERE id = ANY($1)"
        ))
        .await?;
    let open: HashMap<String, String> = pending
        .open_ids()
        .into_iter()
        .map(|(session, id)| (id, session))
        .collect();
    // The table follows what it has without the question (it never changes
    // once written): neither sent nor parsed again (most reads: an answer
    // to what waits or is shown here, a question this host just took).
    let known: Vec<&String> = ids.iter().filter(|id| open.contains_key(*id)).collect();
    let rows = conn.client.query(&statement, &[&ids, &known]).await?;
    let me = inner.host.load(Ordering::Acquire);
    let now = super::now_ms();
    let mut found = HashSet::new();
    let mut observed_rows = Vec::with_capacity(rows.len());
    for row in &rows {
        found.insert(row.get::<_, String>(0));
        observed_rows.extend(observed(row, me, now));
    }
    for id in ids.iter().filter(|id| !found.contains(*id)) {
        if let Some(session) = open.get(id) {
            observed_rows.push(Observed {
                session: session.clone(),
                id: id.clone(),
                asked: None,
                state: RecordState::Gone,
                escalated: false,
            });
        }
    }
    pending.observe(observed_rows);
    Ok(())
}

/// After a (re)connect: takes back what this host's calls still wait on
/// (other hosts may have detached it meanwhile), then reads every open
/// question and every one this table has open into it.
async fn reconcile(
    inner: &Inner,
    conn: &mut Prepared<'_>,
    pending: &Arc<dyn FollowingTable>,
) -> Result<(), tokio_postgres::Error> {
    let client = conn.client;
    let me = inner.host.load(Ordering::Acquire);
    let attached = pending.attached_ids();
    if !attached.is_empty() {
        client
            .execute(
                concat!(
                    "UPDATE ask_user.questions SET host = $2, detached_ms = NULL \
                     WHERE id = ANY($1) AND outcome IS NULL \
                     AND (host IS NULL OR host = $2 OR NOT host = ANY(",
                    live_hosts!(),
                    "))"
                ),
                &[&attached, &me],
            )
            .await?;
    }
    let limit = i64::try_from(inner.max_open).unwrap_or(i64::MAX);
    let rows = client
        .query(
            concat!(
                "SELECT ",
                observed_columns!("question"),
                " FROM ask_user.questions WHERE delivery = 0 ORDER BY seq LIMIT $1"
            ),
            &[&limit],
        )
        .await?;
    let now = super::now_ms();
    let mut open: HashSet<String> = HashSet::new();
    let mut observed_rows = Vec::with_capacity(rows.len());
    for row in &rows {
        open.insert(row.get::<_, String>(0));
        observed_rows.extend(observed(row, me, now));
    }
    pending.observe(observed_rows);
    let known: Vec<String> = pending
        .open_ids()
        .into_iter()
        .map(|(_, id)| id)
        .filter(|id| !open.contains(id))
        .collect();
    if !known.is_empty() {
        observe_ids(inner, conn, pending, &known).await?;
    }
    Ok(())
}

/// Detaches what dead hosts' calls waited on (and frees what they held), so
/// an identical ask through any host takes it.
async fn reap_dead_hosts(
    inner: &Inner,
    conn: &mut Prepared<'_>,
) -> Result<(), tokio_postgres::Error> {
    let me = inner.host.load(Ordering::Acquire);
    let now = super::now_ms() as i64;
    let statement = conn
        .get(concat!(
            "UPDATE ask_user.questions SET host = NULL, \
                 detached_ms = CASE WHEN outcome IS NULL THEN $2 ELSE detached_ms END \
                 WHERE delivery = 0 AND host IS NOT NULL AND host <> $1 AND NOT host = ANY(",
            live_hosts!(),
            ")"
        ))
        .await?;
    let reaped = conn.client.execute(&statement, &[&me, &now]).await?;
    if reaped > 0 {
        tracing::info!(
            questions = reaped,
            "a host sharing the store is gone: its questions are detached (any host may take them)"
        );
    }
    Ok(())
}

/// Makes `devices` what the record pairs now (at most 64 rows: cheap to read whole).
async fn follow_devices(
    client: &Client,
    devices: &Arc<dyn FollowingDevices>,
) -> Result<(), tokio_postgres::Error> {
    let paired = load_devices(client).await?;
    let revoked = devices.follow(paired);
    if revoked > 0 {
        tracing::info!(
            revoked,
            "devices revoked through another host are revoked here too"
        );
    }
    Ok(())
}

/// Makes `people` what the record has now (people and agent tokens are few,
/// at most 256 of each: cheap to read whole), and revokes here the devices
/// of the people removed.
async fn follow_people(
    client: &Client,
    people: &Arc<dyn FollowingPeople>,
    devices: &Arc<dyn FollowingDevices>,
) -> Result<(), tokio_postgres::Error> {
    let followed = load_people(client, &people.ids()).await?;
    let gone = people.follow(followed);
    for person in &gone {
        devices.revoke_person(person);
    }
    if !gone.is_empty() {
        tracing::info!(
            removed = gone.len(),
            "people removed through another host are removed here too"
        );
    }
    Ok(())
}

/// The people and agent tokens not removed, oldest first, and the removed
/// ones among `known` (ids a host has), each saying whether it was removed.
async fn load_people(client: &Client, known: &[String]) -> Result<Followed, tokio_postgres::Error> {
    let mut followed = Followed::default();
    for row in client
        .query(
            "SELECT id, name, roles, credential_sha256, added_ms, removed_ms IS NOT NULL \
             FROM ask_user.people WHERE removed_ms IS NULL OR id = ANY($1) ORDER BY added_ms, id",
            &[&known],
        )
        .await?
    {
        let person = PersonRecord {
            id: row.get(0),
            name: row.get(1),
            // Written by this store from a list of names: a row that no
            // longer reads keeps no role rather than stopping the host.
            roles: serde_json::from_str(row.get(2)).unwrap_or_default(),
            credential_sha256: row.get(3),
            added_at_ms: row.get::<_, i64>(4).max(0) as u64,
        };
        followed.people.push((person, row.get(5)));
    }
    for row in client
        .query(
            "SELECT id, name, credential_sha256, added_ms, removed_ms IS NOT NULL \
             FROM ask_user.agent_tokens WHERE removed_ms IS NULL OR id = ANY($1) \
             ORDER BY added_ms, id",
            &[&known],
        )
        .await?
    {
        let agent = AgentRecord {
            id: row.get(0),
            name: row.get(1),
            credential_sha256: row.get(2),
            added_at_ms: row.get::<_, i64>(3).max(0) as u64,
        };
        followed.agents.push((agent, row.get(4)));
    }
    Ok(followed)
}

async fn load_devices(client: &Client) -> Result<Vec<DeviceRecord>, tokio_postgres::Error> {
    let mut paired = Vec::new();
    for row in client
        .query(
            "SELECT id, name, agent, credential_sha256, paired_ms, last_seen_ms, last_answer_ms, \
             person_id FROM ask_user.devices WHERE revoked_ms IS NULL ORDER BY paired_ms",
            &[],
        )
        .await?
    {
        let paired_at_ms = row.get::<_, i64>(4).max(0) as u64;
        paired.push(DeviceRecord {
            id: row.get(0),
            name: row.get(1),
            agent: row.get(2),
            credential_sha256: row.get(3),
            paired_at_ms,
            last_seen_ms: row
                .get::<_, Option<i64>>(5)
                .map_or(paired_at_ms, |ms| ms.max(0) as u64),
            last_answer_ms: row.get::<_, Option<i64>>(6).map(|ms| ms.max(0) as u64),
            person: row.get(7),
        });
    }
    Ok(paired)
}

/// Reads what start-up needs besides the open questions (which the first
/// reconciliation reads): transcripts, devices, push subscriptions.
async fn load(client: &Client) -> Result<Restored, tokio_postgres::Error> {
    let mut restored = Restored {
        transcripts: load_transcripts(client).await?,
        ..Restored::default()
    };
    restored.devices = load_devices(client).await?;
    let followed = load_people(client, &[]).await?;
    restored.people = followed.people.into_iter().map(|(p, _)| p).collect();
    restored.agents = followed.agents.into_iter().map(|(a, _)| a).collect();
    restored.push_subscriptions = load_subscriptions(client).await?;
    restored.vapid_private_key = Some(vapid_key(client).await?);
    Ok(restored)
}

/// The push subscriptions of the devices not revoked (device id, JSON).
async fn load_subscriptions(
    client: &Client,
) -> Result<Vec<(String, String)>, tokio_postgres::Error> {
    Ok(client
        .query(
            "SELECT p.device_id, p.subscription FROM ask_user.push_subscriptions p \
             JOIN ask_user.devices d ON d.id = p.device_id WHERE d.revoked_ms IS NULL",
            &[],
        )
        .await?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}

/// The hosts' VAPID private key: the one the record has, else a fresh one
/// this host writes (two hosts starting at once keep the first written).
async fn vapid_key(client: &Client) -> Result<String, tokio_postgres::Error> {
    let fresh = loop {
        let scalar: [u8; 32] = rand::random();
        // Zero or past the group's order (odds of 2^-32): draw again.
        if p256::SecretKey::from_slice(&scalar).is_ok() {
            break base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(scalar);
        }
    };
    client
        .execute(
            "INSERT INTO ask_user.vapid_key (private_key) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&fresh],
        )
        .await?;
    client
        .query_one("SELECT private_key FROM ask_user.vapid_key", &[])
        .await
        .map(|row| row.get(0))
}

/// Makes `push` follow the record's subscriptions.
async fn follow_subscriptions(
    client: &Client,
    push: &Option<Arc<dyn FollowingPush>>,
) -> Result<(), tokio_postgres::Error> {
    if let Some(push) = push {
        push.follow(load_subscriptions(client).await?);
    }
    Ok(())
}

/// Each recently active session's most recent entries, oldest first, within
/// the same bounds as the SQLite store's (see its `load_transcripts`).
async fn load_transcripts(
    client: &Client,
) -> Result<Vec<(String, TranscriptEntry)>, tokio_postgres::Error> {
    let sessions: Vec<String> = client
        .query(
            "SELECT session FROM (
                SELECT session, max(resolved_ms) AS at FROM ask_user.questions
                WHERE outcome IS NOT NULL AND resolved_ms IS NOT NULL GROUP BY session
                UNION ALL
                SELECT session, max(at_ms) FROM ask_user.messages GROUP BY session
            ) s WHERE session ~ '^[A-Za-z0-9_-]{1,64}$'
            GROUP BY session ORDER BY max(at) DESC LIMIT $1",
            &[&(MAX_LOGGED_SESSIONS as i64)],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let statement = client
        .prepare(
            "WITH recent AS (
                SELECT kind, seq, at,
                       sum(size) OVER (ORDER BY at DESC, kind DESC, seq DESC) AS running,
                       row_number() OVER (ORDER BY at DESC, kind DESC, seq DESC) AS n
                FROM (
                    SELECT 0 AS kind, seq, at_ms AS at, octet_length(text) + 128 AS size
                    FROM ask_user.messages WHERE session = $1
                    UNION ALL
                    SELECT 1, seq, resolved_ms,
                           octet_length(question) + coalesce(octet_length(answer), 0) + 128
                    FROM ask_user.questions
                    WHERE session = $1 AND outcome IS NOT NULL AND resolved_ms IS NOT NULL
                    ORDER BY at DESC, kind DESC, seq DESC LIMIT $2
                ) entries
            )
            SELECT recent.kind, coalesce(m.id, q.id), m.role, m.text, q.question, q.outcome,
                   q.answer, recent.at, running::bigint, q.answered_by, m.written_by
            FROM recent
            LEFT JOIN ask_user.messages AS m ON recent.kind = 0 AND m.seq = recent.seq
            LEFT JOIN ask_user.questions AS q ON recent.kind = 1 AND q.seq = recent.seq
            WHERE n = 1 OR running <= $3
            ORDER BY recent.at, recent.kind, recent.seq",
        )
        .await?;
    let mut entries = Vec::new();
    let mut left = super::sqlite::MAX_RESTORED_TRANSCRIPT_BYTES as i64;
    for session in sessions {
        let budget = left.min(MAX_TRANSCRIPT_BYTES as i64);
        if budget <= 0 {
            break;
        }
        let rows = client
            .query(
                &statement,
                &[&session, &(MAX_TRANSCRIPT_ENTRIES as i64), &budget],
            )
            .await?;
        let mut most = 0;
        for row in rows {
            most = most.max(row.get::<_, i64>(8));
            if let Some(entry) = transcript_entry(&row) {
                entries.push((session.clone(), entry));
            }
        }
        left -= most;
    }
    Ok(entries)
}

fn transcript_entry(row: &Row) -> Option<TranscriptEntry> {
    let kind: i32 = row.get(0);
    let id: String = row.get(1);
    let at_ms = row.get::<_, i64>(7).max(0) as u64;
    if kind == 0 {
        let role = match row.get::<_, Option<&str>>(2)? {
            "user" => Role::User,
            "agent" => Role::Agent,
            _ => return None,
        };
        return Some(TranscriptEntry::Message(MessageCreated {
            id,
            role,
            text: row.get::<_, Option<String>>(3)?,
            at_ms,
            by: row
                .get::<_, Option<String>>(10)
                .and_then(|by| serde_json::from_str(&by).ok()),
        }));
    }
    let question =
        serde_json::from_str::<QuestionRequested>(&row.get::<_, Option<String>>(4)?).ok()?;
    let outcome = Outcome::from_wire(row.get::<_, Option<&str>>(5)?)?;
    question.request.validate().ok()?;
    let answer = row
        .get::<_, Option<String>>(6)
        .filter(|_| outcome == Outcome::Answered)
        .and_then(|a| serde_json::from_str::<AnswerBatch>(&a).ok());
    Some(TranscriptEntry::Record(TranscriptRecord {
        id,
        request: question.request,
        asked_by: question.asked_by,
        created_at_ms: question.created_at_ms,
        resolved_at_ms: at_ms,
        outcome,
        answer,
        by: row
            .get::<_, Option<String>>(9)
            .and_then(|by| serde_json::from_str(&by).ok()),
    }))
}

impl Inner {
    /// A page of history, newest first (the reader connection, made on first use).
    async fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, String> {
        let mut reader = self.reader.lock().await;
        if reader.as_ref().is_none_or(Client::is_closed) {
            *reader = Some(
                connect(&self.database)
                    .await
                    .map_err(|e| unavailable(self, e))?
                    .client,
            );
        }
        let client = reader.as_ref().expect("connected above");
        history_page(client, query, false)
            .await
            .map_err(|e| unavailable(self, e))
    }
}

/// A page of history from `client`: newest first (`GET /api/history`), or
/// oldest first (the decision log), by the same cursor as the SQLite store's.
async fn history_page(
    client: &Client,
    query: &HistoryQuery,
    oldest_first: bool,
) -> Result<HistoryPage, tokio_postgres::Error> {
    let limit = query.page_size();
    let sql = if oldest_first {
        "SELECT seq, question, outcome, answer, resolved_ms, answered_by \
         FROM ask_user.questions \
         WHERE outcome IS NOT NULL AND ($1::text IS NULL OR session = $1) \
         AND ($2::bigint IS NULL OR resolved_ms < $2) \
         AND ($3::bigint IS NULL OR resolved_ms >= $3) \
         AND ($4::bigint IS NULL OR resolved_ms > $4 OR (resolved_ms = $4 AND seq > $5)) \
         ORDER BY resolved_ms, seq LIMIT $6"
    } else {
        "SELECT seq, question, outcome, answer, resolved_ms, answered_by \
         FROM ask_user.questions \
         WHERE outcome IS NOT NULL AND ($1::text IS NULL OR session = $1) \
         AND ($2::bigint IS NULL OR resolved_ms < $2) \
         AND ($3::bigint IS NULL OR resolved_ms >= $3) \
         AND ($4::bigint IS NULL OR resolved_ms < $4 OR (resolved_ms = $4 AND seq < $5)) \
         ORDER BY resolved_ms DESC, seq DESC LIMIT $6"
    };
    let rows = client
        .query(
            sql,
            &[
                &query.session,
                &query.before.map(|ms| ms as i64),
                &query.since.map(|ms| ms as i64),
                &query.cursor.map(|c| c.resolved_ms),
                &query.cursor.map(|c| c.row),
                &((limit + 1) as i64),
            ],
        )
        .await?;
    let more = rows.len() > limit;
    let mut records = Vec::with_capacity(rows.len().min(limit));
    let mut last = None;
    for row in rows.iter().take(limit) {
        let resolved: i64 = row.get::<_, Option<i64>>(4).unwrap_or(0);
        last = Some(HistoryCursor {
            resolved_ms: resolved,
            row: row.get(0),
        });
        let question = serde_json::from_str::<QuestionRequested>(row.get(1));
        let outcome = Outcome::from_wire(row.get(2));
        if let (Ok(question), Some(outcome)) = (question, outcome) {
            records.push(HistoryRecord {
                question,
                outcome,
                answer: row
                    .get::<_, Option<&str>>(3)
                    .and_then(|a| serde_json::from_str(a).ok()),
                resolved_at_ms: resolved.max(0) as u64,
                by: row
                    .get::<_, Option<&str>>(5)
                    .and_then(|by| serde_json::from_str(by).ok()),
            });
        }
    }
    Ok(HistoryPage {
        records,
        next_cursor: last.filter(|_| more),
    })
}

/// The shared store's history for `ask-user history --store …`: a
/// connection of its own, read a page at a time.
pub struct HistoryReader {
    client: Client,
    described: String,
}

impl HistoryReader {
    /// Connects to the database of `config` ([`parse_url`]); refuses one
    /// without the shared store's schema, or of a newer schema.
    pub async fn connect(database: Database) -> Result<Self, String> {
        let described = database.describe();
        let fail = |e: tokio_postgres::Error| format!("{described}: {}", error_chain(&e));
        let client = connect(&database).await.map_err(fail)?.client;
        let version: Option<i32> = client
            .query_one(
                "SELECT CASE WHEN to_regclass('ask_user.schema_version') IS NULL THEN NULL \
                 ELSE (SELECT max(version) FROM ask_user.schema_version) END",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        match version {
            None => Err(format!(
                "{described}: no ask-user record (schema ask_user): start a host with --store first"
            )),
            Some(version) if version > SCHEMA_VERSION => Err(format!(
                "{described}: written by a newer ask-user (schema {version}, this one knows \
                 {SCHEMA_VERSION}); upgrade this ask-user"
            )),
            Some(_) => Ok(Self { client, described }),
        }
    }

    /// A page of `query`, oldest first or newest first.
    pub async fn page(
        &self,
        query: &HistoryQuery,
        oldest_first: bool,
    ) -> Result<HistoryPage, String> {
        history_page(&self.client, query, oldest_first)
            .await
            .map_err(|e| format!("{}: {e}", self.described))
    }
}

impl Store for PostgresStore {
    fn submit(&self, write: Write) -> Ticket {
        let new_row = match &write {
            Write::Asked(asked) => Some((&asked.session, asked.json.len())),
            Write::Message {
                session, message, ..
            } => Some((session, message.text.len())),
            _ => None,
        };
        if let Some((session, bytes)) = new_row
            && let Some(refused) = self
                .inner
                .full()
                .or_else(|| self.inner.too_fast(session, bytes as u64))
        {
            return Ticket::settled(Err(refused));
        }
        let (reply, ticket) = oneshot::channel();
        // A send fails only once the writer is gone; the ticket then says so.
        let _ = self.jobs.send(Job::Write(write, reply));
        Ticket(ticket)
    }

    fn restored(&self) -> Restored {
        self.restored.clone()
    }

    fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, StoreError> {
        let inner = self.inner.clone();
        let query = query.clone();
        self.inner
            .runtime
            .block_on(async move { inner.history(&query).await })
            .map_err(StoreError::Unavailable)
    }

    fn trouble(&self) -> Option<String> {
        self.inner.health.trouble()
    }

    fn flush(&self) -> Ticket {
        let (reply, ticket) = oneshot::channel();
        let _ = self.jobs.send(Job::Flush(reply));
        Ticket(ticket)
    }

    fn shared(&self) -> Option<&dyn SharedRecord> {
        Some(self)
    }
}

impl SharedRecord for PostgresStore {
    fn take(
        &self,
        asked: Asked,
        request_sha256: [u8; 32],
    ) -> oneshot::Receiver<Result<Taken, StoreError>> {
        let (reply, taken) = oneshot::channel();
        if let Some(refused) = self
            .inner
            .full()
            .or_else(|| self.inner.too_fast(&asked.session, asked.json.len() as u64))
        {
            let _ = reply.send(Err(refused));
            return taken;
        }
        let _ = self.jobs.send(Job::Take(asked, request_sha256, reply));
        taken
    }

    fn taken(&self, id: String) {
        let _ = self.inner.recheck.send(id);
    }

    fn follow(
        &self,
        pending: Arc<dyn FollowingTable>,
        devices: Arc<dyn FollowingDevices>,
        people: Arc<dyn FollowingPeople>,
        push: Option<Arc<dyn FollowingPush>>,
    ) {
        tokio::spawn(follow(self.inner.clone(), pending, devices, people, push));
    }

    fn ready(&self) -> futures_util::future::BoxFuture<'static, ()> {
        let mut ready = self.inner.ready.subscribe();
        Box::pin(async move {
            let _ = ready.wait_for(|ready| *ready).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_batch_is_pipelined_in_runs_split_by_the_jobs_that_must_run_alone() {
        assert_eq!(schedule(&[]), vec![]);
        assert_eq!(
            schedule(&[true, true, false, true, false, false, true]),
            vec![
                Step::Pipelined(0..2),
                Step::Alone(2),
                Step::Pipelined(3..4),
                Step::Alone(4),
                Step::Alone(5),
                Step::Pipelined(6..7),
            ]
        );
    }

    proptest! {
        /// The writer applies a batch in its order (a question's writes, a
        /// take after the writes queued before it): every job exactly once,
        /// in order, a job that must run alone never inside a run.
        #[test]
        fn a_schedule_keeps_every_job_once_in_order_and_runs_alone_what_must(
            pipelinable in proptest::collection::vec(any::<bool>(), 0..64)
        ) {
            let steps = schedule(&pipelinable);
            let mut order = Vec::new();
            let mut previous_was_run = false;
            for step in &steps {
                match step {
                    Step::Pipelined(range) => {
                        prop_assert!(!range.is_empty());
                        prop_assert!(!previous_was_run, "two runs side by side: {steps:?}");
                        for index in range.clone() {
                            prop_assert!(pipelinable[index]);
                            order.push(index);
                        }
                        previous_was_run = true;
                    }
                    Step::Alone(index) => {
                        prop_assert!(!pipelinable[*index]);
                        order.push(*index);
                        previous_was_run = false;
                    }
                }
            }
            prop_assert_eq!(order, (0..pipelinable.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn every_write_but_revoking_a_device_and_pruning_is_one_statement_that_may_be_pipelined() {
        let id = || "q_1".to_owned();
        assert!(
            matches!(plan(&Write::Delivered { id: id() }, 7), Planned::One(_, params) if params.len() == 1)
        );
        assert!(
            matches!(plan(&Write::Detached { id: id() }, 7), Planned::One(sql, params) if sql.contains("host = $3") && params.len() == 3)
        );
        assert!(matches!(
            plan(&Write::Prune { before_ms: 1 }, 7),
            Planned::Several
        ));
        assert!(matches!(
            plan(&Write::DeviceRevoked { id: id(), at_ms: 1 }, 7),
            Planned::Several
        ));
    }
}
