//! [`SqliteStore`]: the record in one SQLite file (WAL), written by one
//! thread that applies queued writes in batches, one transaction each, with
//! prepared (cached) statements; history reads use their own connection.

use super::rates::{ROW_OVERHEAD, SessionRates};
use super::{
    FAILURE_LOG_INTERVAL, Health, HistoryCursor, HistoryPage, HistoryQuery, HistoryRecord,
    Restored, Store, StoreError, StoreLimits, Ticket, Write,
};
use crate::server::transcript::{MAX_LOGGED_SESSIONS, MAX_TRANSCRIPT_BYTES};
use ask_user_core::AnswerBatch;
use ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES;
use ask_user_core::wire::{
    MessageCreated, Outcome, QuestionRequested, Role, TranscriptEntry, TranscriptRecord,
};
use rusqlite::{Connection, OpenFlags, params};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;
use tokio::sync::oneshot;

/// The database's file name in the data directory.
pub const DATABASE_FILE: &str = "ask-user.db";

/// `PRAGMA application_id` of an ask-user database ("ASKU"): a SQLite file
/// without it belongs to another program and is never touched.
pub const APPLICATION_ID: i64 = 0x4153_4b55;

/// The schema this build writes; a file of a newer one is refused.
pub const SCHEMA_VERSION: i64 = 6;

/// The most writes applied in one transaction.
const MAX_BATCH: usize = 512;

/// The most bytes of questions, answers and messages applied in one
/// transaction (fewer for a small `--max-store-bytes`): one commit's share of
/// the journal stays small against the bound.
const MAX_BATCH_BYTES: u64 = 8 * 1024 * 1024;

/// Resolved questions deleted per step when making room.
const PRUNE_CHUNK: i64 = 32;

const SCHEMA: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
-- One row per question. `outcome` is NULL while it is pending. `delivery`:
-- 0 while the resolution has not reached the asker (pending, or held),
-- 1 delivered (or nothing to deliver), 2 held but never collected.
CREATE TABLE questions (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    question TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    outcome TEXT,
    answer TEXT,
    resolved_ms INTEGER,
    delivery INTEGER NOT NULL DEFAULT 0,
    answered_by TEXT
);
CREATE INDEX questions_open ON questions (seq) WHERE delivery = 0;
CREATE INDEX questions_resolved ON questions (resolved_ms) WHERE outcome IS NOT NULL;
CREATE INDEX questions_session ON questions (session, resolved_ms) WHERE outcome IS NOT NULL;
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    session TEXT NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages (session, at_ms);
";

/// Schema 2 (issue 21): paired devices, each with the SHA-256 of its
/// credential (never the credential), and who answered each question
/// (`questions.answered_by`, JSON). Added to a schema 1 file on open.
const DEVICES: &str = "
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    agent TEXT NOT NULL,
    credential_sha256 TEXT NOT NULL UNIQUE,
    paired_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
";

/// Schema 4 (issue 21): when each device was last seen and last answered
/// (kept across restarts), and who wrote each message (`messages.written_by`,
/// JSON, as `questions.answered_by`). Added to older files on open.
const DEVICES_ACTIVITY: [(&str, &str, &str); 3] = [
    ("devices", "last_seen_ms", "INTEGER"),
    ("devices", "last_answer_ms", "INTEGER"),
    ("messages", "written_by", "TEXT"),
];

/// Adds schema 4's columns a file lacks.
fn add_devices_activity(tx: &Connection) -> rusqlite::Result<()> {
    for (table, column, kind) in DEVICES_ACTIVITY {
        if !has_column(tx, table, column)? {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
        }
    }
    Ok(())
}

/// Schema 3 (issue 27): the per-session index holds resolved questions only
/// (all that reads it: transcripts and a session's history). A pending
/// question then adds no entry to it, and its resolution one entry instead of
/// moving one: a round trip writes one index page fewer per session to the
/// WAL. Applied to a schema 1 or 2 file on open (the index is rebuilt once).
const SESSION_INDEX_RESOLVED_ONLY: &str = "
DROP INDEX IF EXISTS questions_session;
CREATE INDEX questions_session ON questions (session, resolved_ms) WHERE outcome IS NOT NULL;
";

/// Schema 5 (issue 22; 3 and 4 are other branches' steps): each paired
/// device's push subscription, as its browser made it (JSON), while it wants
/// notifications. A revoked device's row goes with the revocation.
const PUSH_SUBSCRIPTIONS: &str = "
CREATE TABLE IF NOT EXISTS push_subscriptions (
    device_id TEXT PRIMARY KEY REFERENCES devices (id),
    subscription TEXT NOT NULL,
    subscribed_ms INTEGER NOT NULL
);
";

/// Schema 6 (issue 24): the people who may answer and the agent tokens,
/// each with the SHA-256 of its credential (never the credential), and the
/// person each device was paired under (`devices.person`, a person's id;
/// NULL: the machine owner's). A name is unique among the rows not removed.
const PEOPLE: &str = "
CREATE TABLE IF NOT EXISTS people (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    roles TEXT NOT NULL,
    credential_sha256 TEXT NOT NULL UNIQUE,
    added_ms INTEGER NOT NULL,
    removed_ms INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS people_name ON people (name) WHERE removed_ms IS NULL;
CREATE TABLE IF NOT EXISTS agent_tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    credential_sha256 TEXT NOT NULL UNIQUE,
    added_ms INTEGER NOT NULL,
    removed_ms INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS agent_tokens_name ON agent_tokens (name) WHERE removed_ms IS NULL;
";

/// Adds schema 6's tables and `devices.person` where a file lacks them.
fn add_people(tx: &Connection) -> rusqlite::Result<()> {
    tx.execute_batch(PEOPLE)?;
    if !has_column(tx, "devices", "person")? {
        tx.execute_batch("ALTER TABLE devices ADD COLUMN person TEXT")?;
    }
    Ok(())
}

enum Job {
    Write(Write, oneshot::Sender<Result<bool, StoreError>>),
    Flush(oneshot::Sender<Result<bool, StoreError>>),
}

/// The record in one SQLite file.
pub struct SqliteStore {
    path: PathBuf,
    /// `None` only while dropping (so the writer sees the queue close).
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Dropped to stop the checkpointer.
    checkpoints: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
    health: Arc<Health>,
    restored: Restored,
    reader: Mutex<Connection>,
}

impl Drop for SqliteStore {
    /// Applies what is queued and closes the file before returning.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        if let Some((stop, checkpointer)) = self.checkpoints.take() {
            drop(stop);
            let _ = checkpointer.join();
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn refuse(path: &Path, why: impl std::fmt::Display) -> String {
    format!(
        "{}: {why}; the host does not overwrite it: move it away or pass another --data-dir (or --ephemeral)",
        path.display()
    )
}

/// Whether the file's owner may write it (its mode). Checked before every
/// batch: a file made read-only (`chmod a-w`) is respected even by root, and
/// writes fail loudly instead of being acknowledged.
#[cfg(unix)]
fn owner_may_write(path: &Path) -> Result<bool, String> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(metadata.permissions().mode() & 0o200 != 0)
}

#[cfg(not(unix))]
fn owner_may_write(path: &Path) -> Result<bool, String> {
    let metadata = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(!metadata.permissions().readonly())
}

impl SqliteStore {
    /// Opens (or creates, 0600) `dir/ask-user.db` and reads what was open.
    /// `dir` must exist (see [`crate::data_dir::ensure_private_dir`]).
    ///
    /// Refuses, naming the file, one that is not SQLite, a SQLite database of
    /// another program, a corrupt one, or one of a newer schema; it is never
    /// written then. A read-only file opens (its history stays readable), but
    /// the store reports trouble and refuses every write.
    pub fn open(dir: &Path) -> Result<Self, String> {
        Self::open_with(dir, StoreLimits::default())
    }

    /// [`SqliteStore::open`] bounded by `limits` (`--max-store-bytes`,
    /// `--max-session-write-bytes`).
    pub fn open_with(dir: &Path, limits: StoreLimits) -> Result<Self, String> {
        let budget = Budget::new(limits);
        let path = dir.join(DATABASE_FILE);
        // Never through a link, never another user's file (see `data_dir`).
        let fresh = match crate::data_dir::private_metadata(&path) {
            Ok(Some(metadata)) if metadata.len() == 0 => true,
            Ok(Some(_)) => {
                check_header(&path)?;
                false
            }
            Ok(None) => {
                crate::data_dir::create_private_new(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                true
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        tighten_mode(&path);
        let writable = owner_may_write(&path)?;
        let flags = if writable {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(|e| refuse(&path, e))?;
        if fresh {
            if !writable {
                return Err(format!("{}: an empty read-only file", path.display()));
            }
            create_schema(&mut conn).map_err(|e| format!("{}: {e}", path.display()))?;
        } else {
            check_existing(&conn, &path)?;
            if writable {
                migrate(&mut conn).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if writable {
            // WAL: readers (history, `ask-user history`) never block the writer.
            // NORMAL: a commit survives the process being killed; only a power
            // loss may lose the last commits.
            // Checkpoints (the only fsyncs) run on their own thread, so the
            // writer never waits for the disk.
            conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
                .and_then(|()| {
                    conn.execute_batch(&format!(
                        "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; \
                         PRAGMA journal_size_limit = {}",
                        budget.journal
                    ))
                })
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let copied = Arc::new(AtomicBool::new(false));
        let checkpoints = if writable {
            Some(spawn_checkpointer(&path, copied.clone())?)
        } else {
            None
        };
        let (restored, report) =
            load(&conn, &limits).map_err(|e| format!("{}: {e}", path.display()))?;
        report.log();
        if writable {
            // Before anything else is written, so the record never restores them again.
            report
                .end_refused(&mut conn)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let reader = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let health = Arc::new(Health::default());
        if !writable {
            health.failed(&read_only(&path));
        }
        let (jobs, queue) = mpsc::channel();
        let writer = Writer {
            conn,
            wal: {
                let mut wal = path.clone().into_os_string();
                wal.push("-wal");
                wal.into()
            },
            path: path.clone(),
            health: health.clone(),
            budget,
            copied,
            rates: SessionRates::new(budget.session_per_minute),
            full_logged: None,
        };
        let writer = std::thread::Builder::new()
            .name("ask-user-store".to_owned())
            .spawn(move || writer.run(queue))
            .map_err(|e| format!("cannot start the store's writer: {e}"))?;
        Ok(Self {
            path,
            jobs: Some(jobs),
            writer: Some(writer),
            checkpoints,
            health,
            restored,
            reader: Mutex::new(reader),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The WAL's size past which the writer makes it start over (see
/// [`Writer::keep_journal_small`]). Each time costs the writer a checkpoint
/// of what the checkpointer's last pass left and its two fsyncs (WAL, then
/// database); at this size that is about twice a second at full rate, while
/// the WAL stays well under its 128 MiB share of the default bound.
const RESTART_WAL_BYTES: u64 = 16 * 1024 * 1024;

/// How often the WAL is copied back into the database file. Often enough
/// that at full rate (hundreds of MB of journal a second) it stays well under
/// its share of `--max-store-bytes`, so the writer never has to truncate it
/// itself (a stall of every write behind a checkpoint and its fsync), and the
/// journal is written over in place rather than grown.
const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// A thread that checkpoints the WAL every [`CHECKPOINT_INTERVAL`] on its own
/// connection (`PASSIVE`: it never blocks the writer), until the returned
/// sender is dropped; after each pass that found frames it sets `copied`
/// (see [`Writer::keep_journal_small`]).
fn spawn_checkpointer(
    path: &Path,
    copied: Arc<AtomicBool>,
) -> Result<(mpsc::Sender<()>, std::thread::JoinHandle<()>), String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let (stop, stopped) = mpsc::channel::<()>();
    let path = path.to_owned();
    let thread = std::thread::Builder::new()
        .name("ask-user-checkpoint".to_owned())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(CHECKPOINT_INTERVAL)
            {
                // A file made read-only is not written, not even here; a
                // failure only lets the WAL grow until the next try.
                if owner_may_write(&path).unwrap_or(false) {
                    let pass = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                        row.get::<_, i64>(1)
                    });
                    if pass.is_ok_and(|frames| frames > 0) {
                        copied.store(true, Ordering::Release);
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the store's checkpointer: {e}"))?;
    Ok((stop, thread))
}

fn read_only(path: &Path) -> String {
    format!(
        "{} is read-only: nothing can be recorded (make it writable: chmod u+w)",
        path.display()
    )
}

fn check_header(path: &Path) -> Result<(), String> {
    let mut header = [0u8; 16];
    let mut file = crate::data_dir::open_private(path, std::fs::OpenOptions::new().read(true))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let read = file.read(&mut header).unwrap_or(0);
    if read < header.len() || &header != b"SQLite format 3\0" {
        return Err(refuse(path, "not an ask-user database (not SQLite)"));
    }
    Ok(())
}

/// An existing file loosened by hand is made private again (0600, or 0400
/// when it was made read-only).
#[cfg(unix)]
fn tighten_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(metadata) = std::fs::metadata(path) else {
        return;
    };
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        let private = mode & 0o600;
        tracing::warn!(
            "{}: other users could read it (mode {mode:o}); made it private ({private:o})",
            crate::logged::logged(path.display())
        );
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(private));
    }
}

#[cfg(not(unix))]
fn tighten_mode(_path: &Path) {}

fn create_schema(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    tx.execute_batch(DEVICES)?;
    add_devices_activity(&tx)?;
    tx.execute_batch(PUSH_SUBSCRIPTIONS)?;
    add_people(&tx)?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [SCHEMA_VERSION],
    )?;
    tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))?;
    tx.commit()
}

fn check_existing(conn: &Connection, path: &Path) -> Result<(), String> {
    let id: i64 = conn
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(|e| refuse(path, format!("unreadable ({e})")))?;
    if id != APPLICATION_ID {
        return Err(refuse(
            path,
            format!("a SQLite database of another program (application_id {id:#x})"),
        ));
    }
    let check = quick_check(conn).map_err(|e| refuse(path, format!("corrupt ({e})")))?;
    if check != ["ok"] {
        return Err(refuse(
            path,
            format!("corrupt ({})", quote_problems(&check)),
        ));
    }
    let version: Option<i64> = conn
        .query_row("SELECT max(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .map_err(|e| refuse(path, format!("corrupt ({e})")))?;
    match version {
        Some(1..=SCHEMA_VERSION) => Ok(()),
        Some(v) if v > SCHEMA_VERSION => Err(refuse(
            path,
            format!("written by a newer ask-user (schema {v}, this one knows {SCHEMA_VERSION})"),
        )),
        other => Err(refuse(path, format!("unknown schema version {other:?}"))),
    }
}

/// Brings a schema 1 to 4 file to [`SCHEMA_VERSION`] in one transaction,
/// the records as they are: 2 (the devices table, `answered_by`), 3 (the
/// per-session index of resolved questions only), 4 (devices' activity,
/// `written_by`), 5 (push subscriptions), 6 (people, agent tokens,
/// `devices.person`).
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(DEVICES)?;
    tx.execute_batch(PUSH_SUBSCRIPTIONS)?;
    add_people(&tx)?;
    if !has_column(&tx, "questions", "answered_by")? {
        tx.execute_batch("ALTER TABLE questions ADD COLUMN answered_by TEXT")?;
    }
    add_devices_activity(&tx)?;
    let version: i64 = tx.query_row("SELECT max(version) FROM schema_version", [], |row| {
        row.get(0)
    })?;
    if version < 3 {
        tx.execute_batch(SESSION_INDEX_RESOLVED_ONLY)?;
    }
    if version < SCHEMA_VERSION {
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )?;
    }
    tx.commit()
}

/// Whether `table` has `column` (a schema 1 file read-only has no `answered_by`).
fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        params![table, column],
        |row| row.get(0),
    )
}

/// The most problems `quick_check` is asked for (SQLite's default is 100).
const MAX_CHECKED_PROBLEMS: usize = 100;

/// The most problems a refusal quotes.
const MAX_QUOTED_PROBLEMS: usize = 5;

/// `PRAGMA quick_check`'s lines: `["ok"]`, or one per problem found (a row
/// may hold several lines).
fn quick_check(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(&format!("PRAGMA quick_check({MAX_CHECKED_PROBLEMS})"))?;
    let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
    let mut lines = Vec::new();
    for row in rows {
        // SQLite heads the problems with `*** in database main ***`: no problem itself.
        let row = row?;
        lines.extend(
            row.lines()
                .filter(|line| !line.starts_with("*** in database"))
                .map(str::to_owned),
        );
    }
    Ok(lines)
}

/// The first [`MAX_QUOTED_PROBLEMS`] problems, `; `-separated, and how many
/// more there were: a refusal stays a line a person reads.
fn quote_problems(lines: &[String]) -> String {
    let mut quoted = lines
        .iter()
        .take(MAX_QUOTED_PROBLEMS)
        .map(|line| ask_user_core::error::shorten(line, 200))
        .collect::<Vec<_>>()
        .join("; ");
    let more = lines.len().saturating_sub(MAX_QUOTED_PROBLEMS);
    if more > 0 {
        let at_least = if lines.len() >= MAX_CHECKED_PROBLEMS {
            "at least "
        } else {
            ""
        };
        quoted.push_str(&format!("; and {at_least}{more} more problems"));
    }
    quoted
}

/// The largest kept question read back at start: a live ask's body is at
/// most 256 KiB, so a larger row was not written by a host.
pub const MAX_RESTORED_QUESTION_BYTES: i64 = 1024 * 1024;

/// The most refused rows named one by one in the log at start (the rest are
/// counted).
const MAX_NAMED_REFUSALS: usize = 5;

/// The most refused rows ended per start (the rest are ended at the next).
const MAX_REFUSALS_PER_START: usize = 100_000;

/// What start-up did with the kept open rows besides restoring them.
#[derive(Debug, Default)]
struct RestoreReport {
    /// The first refused rows, for the log: (id, why).
    named: Vec<(String, String)>,
    /// Rows that fail the rules a live ask passes, to be ended in the record
    /// so they never come back: (row, whether it holds a resolution).
    refused: Vec<(i64, bool)>,
    /// Rows beyond what the pending table may hold: left in the file as they
    /// are, for a start with room.
    beyond_caps: usize,
}

impl RestoreReport {
    fn refuse(&mut self, (seq, held): (i64, bool), id: &str, why: impl FnOnce() -> String) {
        if self.named.len() < MAX_NAMED_REFUSALS {
            self.named
                .push((ask_user_core::error::shorten(id, 200), why()));
        }
        if self.refused.len() < MAX_REFUSALS_PER_START {
            self.refused.push((seq, held));
        }
    }
}

/// Why a kept question may not come back: the rules a live ask passes
/// (core's validation of the request, a session id, a host-minted id).
pub(super) fn restorable(row_session: &str, question: &QuestionRequested) -> Result<(), String> {
    use ask_user_core::error::quoted;
    if !ask_user_core::SessionId::is_valid(row_session) {
        return Err(format!(
            "session {} is not a session id",
            quoted(row_session)
        ));
    }
    if question.session != row_session {
        return Err(format!(
            "its question names session {}, its row {}",
            quoted(&question.session),
            quoted(row_session)
        ));
    }
    if !ask_user_core::SessionId::is_valid(&question.id) {
        return Err(format!("id {} is not a host's id", quoted(&question.id)));
    }
    if let Some(asker) = &question.asked_by {
        let cleaned =
            ask_user_core::wire::AskedBy::new(asker.kind, &asker.name, asker.version.as_deref());
        if cleaned.as_ref() != Some(asker) {
            return Err(format!("its asker {} is not clean", quoted(&asker.name)));
        }
    }
    question
        .request
        .validate()
        .map_err(|e| format!("its request breaks core's rules: {}", e.message))
}

/// The questions still open in the record: the held resolutions first (they
/// carry the person's answers), then the pending questions, each oldest
/// first. Reads at most `limits`' questions and bytes of them (what the
/// pending table may hold; the rest stay in the file untouched), and refuses
/// a row a live ask could not have left (see [`restorable`]).
fn load_open(
    conn: &Connection,
    limits: &StoreLimits,
    restored: &mut Restored,
    report: &mut RestoreReport,
) -> rusqlite::Result<()> {
    // Ids and sessions longer than any valid one are read cut (and refused).
    let mut listed = conn.prepare(
        "SELECT seq, substr(id, 1, 256), substr(session, 1, 256), outcome, \
         octet_length(question) FROM questions WHERE delivery = 0 ORDER BY outcome IS NULL, seq",
    )?;
    let mut texts = conn.prepare("SELECT question, answer FROM questions WHERE seq = ?1")?;
    let mut rows = listed.query([])?;
    let (mut count, mut bytes) = (0usize, 0usize);
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let id: String = row.get(1)?;
        let session: String = row.get(2)?;
        let outcome: Option<String> = row.get(3)?;
        let size: i64 = row.get(4)?;
        let row = (seq, outcome.is_some());
        if size > MAX_RESTORED_QUESTION_BYTES {
            report.refuse(row, &id, || {
                format!("{size} bytes, more than {MAX_RESTORED_QUESTION_BYTES}")
            });
            continue;
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if count >= limits.max_restored_questions
            || bytes.saturating_add(size) > limits.max_restored_bytes
        {
            report.beyond_caps += 1;
            continue;
        }
        let (question, answer): (String, Option<String>) =
            texts.query_row([seq], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let question = match serde_json::from_str::<QuestionRequested>(&question) {
            Ok(question) => question,
            Err(e) => {
                report.refuse(row, &id, || format!("it no longer reads ({e})"));
                continue;
            }
        };
        if let Err(why) = restorable(&session, &question).and_then(|()| {
            (question.id == id)
                .then_some(())
                .ok_or_else(|| "its question names another id".to_owned())
        }) {
            report.refuse(row, &id, || why);
            continue;
        }
        match outcome.as_deref().map(Outcome::from_wire) {
            None => restored.pending.push(question),
            Some(Some(Outcome::Answered)) => {
                match answer.and_then(|a| serde_json::from_str::<AnswerBatch>(&a).ok()) {
                    Some(answer) => restored.held.push((question, Some(answer))),
                    None => {
                        report.refuse(row, &id, || "its answer no longer reads".to_owned());
                        continue;
                    }
                }
            }
            Some(Some(Outcome::Cancelled)) => restored.held.push((question, None)),
            // Only an answer or a cancel is held.
            Some(_) => continue,
        }
        count += 1;
        bytes += size;
    }
    Ok(())
}

fn load(conn: &Connection, limits: &StoreLimits) -> rusqlite::Result<(Restored, RestoreReport)> {
    let mut restored = Restored::default();
    let mut report = RestoreReport::default();
    load_open(conn, limits, &mut restored, &mut report)?;
    restored.transcripts = load_transcripts(conn)?;
    restored.devices = load_devices(conn)?;
    restored.push_subscriptions = load_push_subscriptions(conn)?;
    restored.people = load_people(conn)?;
    restored.agents = load_agents(conn)?;
    Ok((restored, report))
}

impl RestoreReport {
    /// Logs what was refused and left out (values escaped and bounded).
    fn log(&self) {
        for (id, why) in &self.named {
            tracing::warn!(
                id = %crate::logged::logged(id),
                why = %crate::logged::logged(why),
                "a kept question was refused at start, not restored: it is ended in the record"
            );
        }
        if self.refused.len() > self.named.len() {
            tracing::warn!(
                more = self.refused.len() - self.named.len(),
                "more kept questions were refused at start, not restored"
            );
        }
        if self.beyond_caps > 0 {
            tracing::warn!(
                left = self.beyond_caps,
                "kept questions beyond --max-pending or --max-pending-bytes were not restored; \
                 they stay in the store for a start with room"
            );
        }
    }

    /// Ends the refused rows in the record, in one transaction: a pending
    /// question is disposed, a held resolution never delivered, so none comes
    /// back or holds room for ever (they stay in the history until pruned).
    fn end_refused(&self, conn: &mut Connection) -> rusqlite::Result<()> {
        if self.refused.is_empty() {
            return Ok(());
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut dispose = tx.prepare(
                "UPDATE questions SET outcome = 'disposed', answer = NULL, resolved_ms = ?2, \
                 delivery = 1 WHERE seq = ?1 AND outcome IS NULL",
            )?;
            let mut never_delivered = tx.prepare(
                "UPDATE questions SET delivery = 2 WHERE seq = ?1 AND outcome IS NOT NULL",
            )?;
            let now = super::now_ms() as i64;
            for &(seq, held) in &self.refused {
                if held {
                    never_delivered.execute([seq])?;
                } else {
                    dispose.execute([seq, now])?;
                }
            }
        }
        tx.commit()
    }
}

/// The devices not revoked, oldest first (none in a schema 1 file opened
/// read-only).
fn load_devices(conn: &Connection) -> rusqlite::Result<Vec<super::DeviceRecord>> {
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'devices'",
        [],
        |row| row.get(0),
    )?;
    if !exists {
        return Ok(Vec::new());
    }
    // A schema 2 file opened read-only has no activity columns.
    let activity = if has_column(conn, "devices", "last_seen_ms")? {
        "last_seen_ms, last_answer_ms"
    } else {
        "NULL, NULL"
    };
    // Nor one older than schema 6 a person.
    let person = if has_column(conn, "devices", "person")? {
        "person"
    } else {
        "NULL"
    };
    let mut statement = conn.prepare(&format!(
        "SELECT id, name, agent, credential_sha256, paired_ms, {activity}, {person} FROM devices \
         WHERE revoked_ms IS NULL ORDER BY paired_ms"
    ))?;
    let rows = statement.query_map([], |row| {
        let paired_at_ms = row.get::<_, i64>(4)? as u64;
        Ok(super::DeviceRecord {
            id: row.get(0)?,
            name: row.get(1)?,
            agent: row.get(2)?,
            credential_sha256: row.get(3)?,
            paired_at_ms,
            last_seen_ms: row
                .get::<_, Option<i64>>(5)?
                .map_or(paired_at_ms, |ms| ms as u64),
            last_answer_ms: row.get::<_, Option<i64>>(6)?.map(|ms| ms as u64),
            person: row.get(7)?,
        })
    })?;
    rows.collect()
}

/// Whether `table` exists (a file older than schema 6 opened read-only has
/// no people).
fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |row| row.get(0),
    )
}

/// The people not removed, oldest first.
fn load_people(conn: &Connection) -> rusqlite::Result<Vec<super::PersonRecord>> {
    if !has_table(conn, "people")? {
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare(
        "SELECT id, name, roles, credential_sha256, added_ms FROM people \
         WHERE removed_ms IS NULL ORDER BY added_ms, id",
    )?;
    let rows = statement.query_map([], |row| {
        let roles: String = row.get(2)?;
        Ok(super::PersonRecord {
            id: row.get(0)?,
            name: row.get(1)?,
            // Written by this store from a list of names: a row that no
            // longer reads keeps no role rather than stopping the host.
            roles: serde_json::from_str(&roles).unwrap_or_default(),
            credential_sha256: row.get(3)?,
            added_at_ms: row.get::<_, i64>(4)? as u64,
        })
    })?;
    rows.collect()
}

/// The agent tokens not removed, oldest first.
fn load_agents(conn: &Connection) -> rusqlite::Result<Vec<super::AgentRecord>> {
    if !has_table(conn, "agent_tokens")? {
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare(
        "SELECT id, name, credential_sha256, added_ms FROM agent_tokens \
         WHERE removed_ms IS NULL ORDER BY added_ms, id",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(super::AgentRecord {
            id: row.get(0)?,
            name: row.get(1)?,
            credential_sha256: row.get(2)?,
            added_at_ms: row.get::<_, i64>(3)? as u64,
        })
    })?;
    rows.collect()
}

/// The push subscriptions of devices not revoked, by device id (none in a
/// file older than schema 5 opened read-only).
fn load_push_subscriptions(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'push_subscriptions'",
        [],
        |row| row.get(0),
    )?;
    if !exists {
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare(
        "SELECT p.device_id, p.subscription FROM push_subscriptions p \
         JOIN devices d ON d.id = p.device_id WHERE d.revoked_ms IS NULL",
    )?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

/// The most bytes of transcripts read back at start, in all sessions (the
/// most recently active first): start-up memory does not grow with the file.
pub const MAX_RESTORED_TRANSCRIPT_BYTES: usize = 8 * 1024 * 1024;

/// What an entry weighs besides its text when transcripts are read back
/// (about its JSON's framing, as the in-memory transcript counts it).
const ENTRY_OVERHEAD: i64 = 128;

/// The most recently active sessions (at most [`MAX_LOGGED_SESSIONS`], what
/// the in-memory logs keep), newest first, from the indexes alone.
fn recent_sessions(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT session FROM (
            SELECT session, max(resolved_ms) AS at FROM questions
            WHERE outcome IS NOT NULL AND resolved_ms IS NOT NULL GROUP BY session
            UNION ALL
            SELECT session, max(at_ms) FROM messages GROUP BY session
        ) WHERE length(session) BETWEEN 1 AND 64 AND session NOT GLOB '*[^A-Za-z0-9_-]*'
        GROUP BY session ORDER BY max(at) DESC LIMIT ?1",
    )?;
    let limit = i64::try_from(MAX_LOGGED_SESSIONS).unwrap_or(i64::MAX);
    let sessions: Vec<String> = statement
        .query_map([limit], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // The query's pattern is the session id rule; core's check is the rule.
    Ok(sessions
        .into_iter()
        .filter(|session| ask_user_core::SessionId::is_valid(session))
        .collect())
}

/// Each recently active session's most recent messages and resolved
/// questions, oldest first: per session at most [`MAX_TRANSCRIPT_ENTRIES`]
/// and [`MAX_TRANSCRIPT_BYTES`] (the newest always), in all at most
/// [`MAX_RESTORED_TRANSCRIPT_BYTES`]. The budget is applied in the query, on
/// the texts' sizes, so only the entries kept are read.
fn load_transcripts(conn: &Connection) -> rusqlite::Result<Vec<(String, TranscriptEntry)>> {
    // A file older than schema 4 opened read-only has no written_by.
    let written_by = if has_column(conn, "messages", "written_by")? {
        "m.written_by"
    } else {
        "NULL"
    };
    let mut statement = conn.prepare(&format!(
        "WITH recent AS (
            SELECT kind, seq, at,
                   sum(size) OVER (ORDER BY at DESC, kind DESC, seq DESC) AS running,
                   row_number() OVER (ORDER BY at DESC, kind DESC, seq DESC) AS n
            FROM (
                SELECT 0 AS kind, seq, at_ms AS at, octet_length(text) + ?4 AS size
                FROM messages WHERE session = ?1
                UNION ALL
                SELECT 1, seq, resolved_ms,
                       octet_length(question) + ifnull(octet_length(answer), 0) + ?4
                FROM questions
                WHERE session = ?1 AND outcome IS NOT NULL AND resolved_ms IS NOT NULL
                ORDER BY at DESC, kind DESC, seq DESC LIMIT ?2
            )
        )
        SELECT ?1, recent.kind, ifnull(m.id, q.id), m.role, m.text, q.question, q.outcome,
               q.answer, recent.at, running, q.answered_by, {written_by}
        FROM recent
        LEFT JOIN messages AS m ON recent.kind = 0 AND m.seq = recent.seq
        LEFT JOIN questions AS q ON recent.kind = 1 AND q.seq = recent.seq
        WHERE n = 1 OR running <= ?3
        ORDER BY recent.at, recent.kind, recent.seq"
    ))?;
    let limit = i64::try_from(MAX_TRANSCRIPT_ENTRIES).unwrap_or(i64::MAX);
    let mut entries = Vec::new();
    let mut left = MAX_RESTORED_TRANSCRIPT_BYTES as i64;
    let mut read = 0;
    let sessions = recent_sessions(conn)?;
    for session in &sessions {
        let budget = left.min(MAX_TRANSCRIPT_BYTES as i64);
        if budget <= 0 {
            break;
        }
        let mut rows = statement.query(params![session, limit, budget, ENTRY_OVERHEAD])?;
        let mut most = 0;
        while let Some(row) = rows.next()? {
            most = most.max(row.get::<_, i64>(9)?);
            if let Some(entry) = transcript_entry(row)? {
                entries.push(entry);
            }
        }
        left -= most;
        read += most;
    }
    tracing::info!(
        sessions = sessions.len(),
        entries = entries.len(),
        bytes = read,
        "read back the most recent transcripts"
    );
    Ok(entries)
}

/// One row of [`load_transcripts`]' query as an entry; `None` (logged) when
/// it no longer reads.
fn transcript_entry(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<Option<(String, TranscriptEntry)>> {
    let session: String = row.get(0)?;
    let kind: i64 = row.get(1)?;
    let id: String = row.get(2)?;
    let at_ms = u64::try_from(row.get::<_, i64>(8)?).unwrap_or(0);
    let entry = if kind == 0 {
        let role = match Role::from_wire(&row.get::<_, String>(3)?) {
            Some(role) => role,
            None => {
                tracing::warn!(
                    id = %crate::logged::logged(&id),
                    "a kept message's role no longer reads; left out"
                );
                return Ok(None);
            }
        };
        TranscriptEntry::Message(MessageCreated {
            id,
            role,
            text: row.get(4)?,
            at_ms,
            // Unreadable JSON only loses who wrote it, not the message.
            by: row
                .get::<_, Option<String>>(11)?
                .and_then(|by| serde_json::from_str(&by).ok()),
        })
    } else {
        let question: String = row.get(5)?;
        let outcome: String = row.get(6)?;
        let answer: Option<String> = row.get(7)?;
        let (Ok(question), Some(outcome)) = (
            serde_json::from_str::<QuestionRequested>(&question),
            Outcome::from_wire(&outcome),
        ) else {
            tracing::warn!(id = %crate::logged::logged(&id), "a kept question no longer reads; left out");
            return Ok(None);
        };
        if let Err(e) = question.request.validate() {
            tracing::warn!(
                id = %crate::logged::logged(&id),
                why = %crate::logged::logged(&e.message),
                "a kept question breaks core's rules; left out of its transcript"
            );
            return Ok(None);
        }
        let answer = answer
            .filter(|_| outcome == Outcome::Answered)
            .and_then(|a| serde_json::from_str::<AnswerBatch>(&a).ok());
        let by = row
            .get::<_, Option<String>>(10)?
            .and_then(|by| serde_json::from_str(&by).ok());
        TranscriptEntry::Record(TranscriptRecord {
            id,
            request: question.request,
            asked_by: question.asked_by,
            created_at_ms: question.created_at_ms,
            resolved_at_ms: at_ms,
            outcome,
            answer,
            by,
        })
    };
    Ok(Some((session, entry)))
}

/// How `--max-store-bytes` is shared out. The database's used pages are kept
/// under `target` by pruning the oldest resolved records, down to `low` so it
/// is not done at every write; the journal (WAL) is truncated past `journal`;
/// what is left covers one batch's journal and the pages the last prune freed.
#[derive(Debug, Clone, Copy)]
struct Budget {
    target: u64,
    low: u64,
    journal: u64,
    batch: u64,
    session_per_minute: u64,
}

impl Budget {
    fn new(limits: StoreLimits) -> Self {
        let max = limits.max_bytes.max(super::MIN_STORE_BYTES);
        Self {
            target: max - max / 4,
            low: max - max / 4 - max / 16,
            journal: max / 8,
            batch: MAX_BATCH_BYTES.min(max / 16),
            session_per_minute: limits.session_bytes_per_minute.max(1),
        }
    }
}

/// A job with what it adds to the file, its JSON serialised once.
struct Queued {
    job: Job,
    /// An answer's JSON (a question comes with its own).
    json: Option<String>,
    /// About what it adds to the file.
    bytes: u64,
}

impl Queued {
    fn new(job: Job) -> Self {
        let json = match &job {
            Job::Write(Write::Answered { answer, .. }, _) => Some(to_json(answer)),
            _ => None,
        };
        let text = match &job {
            Job::Write(Write::Message { message, .. }, _) => message.text.len(),
            Job::Write(Write::Asked(asked), _) => asked.json.len(),
            _ => json.as_ref().map_or(0, String::len),
        };
        let bytes = match &job {
            Job::Write(Write::Asked(_) | Write::Answered { .. } | Write::Message { .. }, _) => {
                text as u64 + ROW_OVERHEAD
            }
            _ => 0,
        };
        Self { job, json, bytes }
    }

    /// The session whose new row this is (a question or a message): what the
    /// byte bound may refuse and the session's rate counts.
    fn new_row(&self) -> Option<&str> {
        match &self.job {
            Job::Write(Write::Asked(asked), _) => Some(&asked.session),
            Job::Write(Write::Message { session, .. }, _) => Some(session),
            _ => None,
        }
    }
}

struct Writer {
    conn: Connection,
    path: PathBuf,
    /// The journal beside it (`…-wal`).
    wal: PathBuf,
    health: Arc<Health>,
    budget: Budget,
    /// Set by the checkpointer after a pass: the WAL is in the database file
    /// up to a recent frame.
    copied: Arc<AtomicBool>,
    rates: SessionRates,
    full_logged: Option<Instant>,
}

impl Writer {
    fn run(mut self, queue: mpsc::Receiver<Job>) {
        let mut batch = Vec::new();
        while let Ok(job) = queue.recv() {
            let first = Queued::new(job);
            let mut bytes = first.bytes;
            batch.push(first);
            while batch.len() < MAX_BATCH && bytes < self.budget.batch {
                match queue.try_recv() {
                    Ok(job) => {
                        let job = Queued::new(job);
                        bytes += job.bytes;
                        batch.push(job);
                    }
                    Err(_) => break,
                }
            }
            self.apply_batch(std::mem::take(&mut batch));
            self.keep_journal_small();
        }
    }

    fn apply_batch(&mut self, batch: Vec<Queued>) {
        // Decided once per write, so a batch applied again one by one does
        // not count a write twice.
        let too_fast: Vec<Option<StoreError>> =
            batch.iter().map(|job| self.too_fast(job)).collect();
        let writable = match owner_may_write(&self.path) {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Unavailable(read_only(&self.path))),
            Err(e) => Err(StoreError::Unavailable(e)),
        };
        let results = match writable {
            Ok(()) => match self.apply_all(&batch, &too_fast) {
                Ok(results) => results,
                // One write failed the batch: apply each alone, so only the
                // failing ones fail.
                Err(_) => batch
                    .iter()
                    .zip(&too_fast)
                    .map(|(job, refused)| {
                        self.apply_all(std::slice::from_ref(job), std::slice::from_ref(refused))
                            .map_err(|e| {
                                StoreError::Unavailable(format!("{}: {e}", self.path.display()))
                            })
                            .and_then(|mut r| r.remove(0))
                    })
                    .collect(),
            },
            Err(e) => vec![Err(e); batch.len()],
        };
        let failure = results.iter().find_map(|r| match r {
            Err(StoreError::Unavailable(why)) => Some(why),
            _ => None,
        });
        match failure {
            Some(why) => self.health.failed(why),
            None => self.health.recovered(),
        }
        if results
            .iter()
            .any(|r| matches!(r, Err(StoreError::Full(_))))
        {
            self.log_full();
        }
        for (job, result) in batch.into_iter().zip(results) {
            let reply = match job.job {
                Job::Write(_, reply) | Job::Flush(reply) => reply,
            };
            let _ = reply.send(result);
        }
    }

    /// Refuses a new row of a session that wrote its allowance this minute.
    /// A whole allowance admits any one write, so no valid request is refused
    /// forever.
    fn too_fast(&mut self, job: &Queued) -> Option<StoreError> {
        let session = job.new_row()?;
        self.rates.admit(session, job.bytes, Instant::now())
    }

    /// Applies `batch` in one transaction: all of it is kept, or (an error)
    /// none of it. Its statements, `BEGIN` and `COMMIT` included, are
    /// prepared once per connection.
    fn apply_all(
        &mut self,
        batch: &[Queued],
        too_fast: &[Option<StoreError>],
    ) -> rusqlite::Result<Vec<Result<bool, StoreError>>> {
        self.conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let applied = self.apply_each(batch, too_fast).and_then(|results| {
            self.conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(results)
        });
        if applied.is_err() && !self.conn.is_autocommit() {
            // Nothing of a failed batch stays (as a dropped transaction).
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        applied
    }

    fn apply_each(
        &self,
        batch: &[Queued],
        too_fast: &[Option<StoreError>],
    ) -> rusqlite::Result<Vec<Result<bool, StoreError>>> {
        let budget = self.budget;
        let conn = &self.conn;
        // Read when a new row comes (a batch of answers and deliveries adds
        // none worth the bound's check).
        let mut used = None;
        let mut results = Vec::with_capacity(batch.len());
        for (job, refused) in batch.iter().zip(too_fast) {
            if let Some(refused) = refused {
                results.push(Err(refused.clone()));
                continue;
            }
            let Job::Write(write, _) = &job.job else {
                results.push(Ok(true));
                continue;
            };
            if job.new_row().is_some() {
                let mut now = match used {
                    Some(used) => used,
                    None => used_bytes(conn)?,
                };
                if now + job.bytes > budget.target {
                    now = make_room(conn, budget.low.saturating_sub(job.bytes))?;
                    if now + job.bytes > budget.target {
                        used = Some(now);
                        results.push(Err(StoreError::Full(format!(
                            "{} holds {now} bytes of pending questions and held answers, \
                             the most it may (--max-store-bytes); answer or cancel some first",
                            self.path.display()
                        ))));
                        continue;
                    }
                }
                used = Some(now + job.bytes);
            } else if let Some(used) = &mut used {
                *used += job.bytes;
            }
            results.push(Ok(apply(conn, write, job.json.as_deref())?));
        }
        Ok(results)
    }

    fn log_full(&mut self) {
        let due = self
            .full_logged
            .is_none_or(|at| at.elapsed() >= FAILURE_LOG_INTERVAL);
        if due {
            tracing::warn!(
                path = %crate::logged::logged(self.path.display()),
                "the store is at --max-store-bytes with only pending questions and held answers \
                 left: new questions and messages get 507 STORE_FULL"
            );
            self.full_logged = Some(Instant::now());
        }
    }

    /// Keeps the journal (WAL) written over in place, and truncates it once
    /// it outgrows its share of the bound.
    ///
    /// SQLite starts the WAL over only when a transaction begins with every
    /// frame of it in the database file. The checkpointer's passes never get
    /// there while writes keep coming (each trails the frames written while
    /// it copied), so the WAL grew to its share of the bound, 128 MiB by
    /// default, where the writer truncated it, every write waiting behind a
    /// checkpoint of all of it: the 80–100 ms p99 stalls of issue 27. So once
    /// the WAL passes [`RESTART_WAL_BYTES`], after the checkpointer's next
    /// pass the writer copies what that pass left (little) itself, between
    /// batches, where no frame can be added meanwhile; its next transaction
    /// then writes the WAL over from the start.
    fn keep_journal_small(&mut self) {
        let size = std::fs::metadata(&self.wal).map_or(0, |m| m.len());
        let check = if size > self.budget.journal {
            // Busy (a reader holds an old snapshot): tried again after the next batch.
            "PRAGMA wal_checkpoint(TRUNCATE)"
        } else if size > RESTART_WAL_BYTES && self.copied.swap(false, Ordering::Acquire) {
            // Busy (the checkpointer is copying): tried after its next pass.
            "PRAGMA wal_checkpoint(PASSIVE)"
        } else {
            return;
        };
        if owner_may_write(&self.path).unwrap_or(false) {
            let _ = self.conn.query_row(check, [], |_| Ok(()));
        }
    }
}

/// Bytes of the database's pages in use (its free pages are reused first).
fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pragma = |sql: &str| {
        conn.prepare_cached(sql)?
            .query_row([], |row| row.get::<_, i64>(0))
    };
    let pages = pragma("PRAGMA page_count")? - pragma("PRAGMA freelist_count")?;
    Ok(pages.max(0) as u64 * pragma("PRAGMA page_size")?.max(0) as u64)
}

/// Deletes the oldest resolved questions that are not held, and the messages
/// no newer than them (the oldest messages alone when no such question is
/// left), until the used pages are at most `goal` or nothing more may go;
/// the bytes then used.
fn make_room(conn: &Connection, goal: u64) -> rusqlite::Result<u64> {
    let mut used = used_bytes(conn)?;
    let mut pruned = 0;
    while used > goal {
        let oldest: Vec<(i64, i64)> = conn
            .prepare_cached(
                "SELECT seq, resolved_ms FROM questions \
                 WHERE outcome IS NOT NULL AND delivery != 0 \
                 ORDER BY resolved_ms, seq LIMIT ?1",
            )?
            .query_map([PRUNE_CHUNK], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut deleted = 0;
        for (seq, _) in &oldest {
            deleted += conn
                .prepare_cached("DELETE FROM questions WHERE seq = ?1")?
                .execute([seq])?;
        }
        deleted += match oldest.last() {
            Some((_, until)) => conn
                .prepare_cached("DELETE FROM messages WHERE at_ms <= ?1")?
                .execute([until])?,
            None => conn
                .prepare_cached(
                    "DELETE FROM messages WHERE seq IN \
                     (SELECT seq FROM messages ORDER BY at_ms, seq LIMIT ?1)",
                )?
                .execute([PRUNE_CHUNK * 8])?,
        };
        if deleted == 0 {
            break;
        }
        pruned += deleted;
        used = used_bytes(conn)?;
    }
    if pruned > 0 {
        tracing::debug!(
            pruned,
            used,
            "pruned the oldest records for room (--max-store-bytes)"
        );
    }
    Ok(used)
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire types always serialise")
}

/// Applies one write (`json`: its answer's JSON, when serialised already);
/// whether it changed the record.
fn apply(conn: &Connection, write: &Write, json: Option<&str>) -> rusqlite::Result<bool> {
    // Serialised here only when the caller had not (a batch applied again).
    let json_of = |value: &dyn Fn() -> String| match json {
        Some(json) => std::borrow::Cow::Borrowed(json),
        None => std::borrow::Cow::Owned(value()),
    };
    let changed = match write {
        Write::Asked(asked) => conn
            .prepare_cached(
                "INSERT INTO questions (id, session, question, created_ms) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                asked.id,
                asked.session,
                asked.json,
                asked.created_at_ms as i64
            ])?,
        Write::Discard { id } => conn
            .prepare_cached("DELETE FROM questions WHERE id = ?1 AND outcome IS NULL")?
            .execute([id])?,
        Write::Answered {
            id,
            answer,
            at_ms,
            by,
        } => conn
            .prepare_cached(
                "UPDATE questions SET outcome = 'answered', answer = ?2, resolved_ms = ?3, \
                 answered_by = ?4 WHERE id = ?1 AND outcome IS NULL",
            )?
            .execute(params![
                id,
                json_of(&|| to_json(answer)),
                *at_ms as i64,
                by.as_ref().map(to_json)
            ])?,
        Write::Cancelled { id, at_ms, by } => conn
            .prepare_cached(
                "UPDATE questions SET outcome = 'cancelled', resolved_ms = ?2, answered_by = ?3 \
                 WHERE id = ?1 AND outcome IS NULL",
            )?
            .execute(params![id, *at_ms as i64, by.as_ref().map(to_json)])?,
        Write::Ended { id, outcome, at_ms } => conn
            .prepare_cached(
                "UPDATE questions SET outcome = ?2, answer = NULL, resolved_ms = ?3, delivery = 1 \
                 WHERE id = ?1 AND delivery = 0",
            )?
            .execute(params![id, outcome.as_str(), *at_ms as i64])?,
        // One host's table alone knows who waits: nothing to keep.
        Write::Detached { .. } => 0,
        // Counted from the ask, which the question's row keeps.
        Write::Escalated { .. } => 0,
        Write::Delivered { id } => conn
            .prepare_cached(
                "UPDATE questions SET delivery = 1 WHERE id = ?1 AND outcome IS NOT NULL AND delivery = 0",
            )?
            .execute([id])?,
        Write::NeverDelivered { id } => conn
            .prepare_cached(
                "UPDATE questions SET delivery = 2 WHERE id = ?1 AND outcome IS NOT NULL AND delivery = 0",
            )?
            .execute([id])?,
        Write::Message {
            session,
            message,
            at_ms,
        } => conn
            .prepare_cached(
                "INSERT INTO messages (id, session, role, text, at_ms, written_by) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                message.id,
                session,
                message.role.as_str(),
                message.text,
                *at_ms as i64,
                message.by.as_ref().map(to_json)
            ])?,
        Write::DevicePaired(device) => conn
            .prepare_cached(
                "INSERT INTO devices (id, name, agent, credential_sha256, paired_ms, last_seen_ms, person) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                device.id,
                device.name,
                device.agent,
                device.credential_sha256,
                device.paired_at_ms as i64,
                device.last_seen_ms as i64,
                device.person
            ])?,
        Write::PersonAdded(person) => conn
            .prepare_cached(
                "INSERT INTO people (id, name, roles, credential_sha256, added_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                person.id,
                person.name,
                to_json(&person.roles),
                person.credential_sha256,
                person.added_at_ms as i64
            ])?,
        Write::PersonRemoved { id, at_ms } => {
            conn.prepare_cached(
                "DELETE FROM push_subscriptions WHERE device_id IN \
                 (SELECT id FROM devices WHERE person = ?1)",
            )?
            .execute([id])?;
            conn.prepare_cached(
                "UPDATE devices SET revoked_ms = ?2 WHERE person = ?1 AND revoked_ms IS NULL",
            )?
            .execute(params![id, *at_ms as i64])?;
            conn.prepare_cached(
                "UPDATE people SET removed_ms = ?2 WHERE id = ?1 AND removed_ms IS NULL",
            )?
            .execute(params![id, *at_ms as i64])?
        }
        Write::AgentAdded(agent) => conn
            .prepare_cached(
                "INSERT INTO agent_tokens (id, name, credential_sha256, added_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                agent.id,
                agent.name,
                agent.credential_sha256,
                agent.added_at_ms as i64
            ])?,
        Write::AgentRemoved { id, at_ms } => conn
            .prepare_cached(
                "UPDATE agent_tokens SET removed_ms = ?2 WHERE id = ?1 AND removed_ms IS NULL",
            )?
            .execute(params![id, *at_ms as i64])?,
        Write::DeviceSeen { id, at_ms } => conn
            .prepare_cached(
                "UPDATE devices SET last_seen_ms = ?2 \
                 WHERE id = ?1 AND ifnull(last_seen_ms, 0) < ?2",
            )?
            .execute(params![id, *at_ms as i64])?,
        Write::DeviceAnswered { id, at_ms } => conn
            .prepare_cached(
                "UPDATE devices SET last_answer_ms = ?2, \
                 last_seen_ms = max(ifnull(last_seen_ms, 0), ?2) \
                 WHERE id = ?1 AND ifnull(last_answer_ms, 0) < ?2",
            )?
            .execute(params![id, *at_ms as i64])?,
        Write::DeviceRevoked { id, at_ms } => {
            conn.prepare_cached("DELETE FROM push_subscriptions WHERE device_id = ?1")?
                .execute([id])?;
            conn.prepare_cached(
                "UPDATE devices SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL",
            )?
            .execute(params![id, *at_ms as i64])?
        }
        Write::PushSubscribed {
            device,
            subscription,
            at_ms,
        } => conn
            .prepare_cached(
                "INSERT INTO push_subscriptions (device_id, subscription, subscribed_ms) \
                 SELECT ?1, ?2, ?3 WHERE EXISTS \
                 (SELECT 1 FROM devices WHERE id = ?1 AND revoked_ms IS NULL) \
                 ON CONFLICT (device_id) DO UPDATE SET subscription = ?2, subscribed_ms = ?3",
            )?
            .execute(params![device, subscription, *at_ms as i64])?,
        // One host: its claims are all its own.
        Write::PushClaimed { .. } => 1,
        Write::PushUnsubscribed { device } => conn
            .prepare_cached("DELETE FROM push_subscriptions WHERE device_id = ?1")?
            .execute([device])?,
        Write::Prune { before_ms } => {
            let before = *before_ms as i64;
            conn.prepare_cached(
                "DELETE FROM questions WHERE outcome IS NOT NULL AND delivery != 0 AND resolved_ms < ?1",
            )?
            .execute([before])?
                + conn
                    .prepare_cached("DELETE FROM messages WHERE at_ms < ?1")?
                    .execute([before])?
        }
    };
    Ok(changed > 0)
}

impl Store for SqliteStore {
    fn submit(&self, write: Write) -> Ticket {
        let (reply, ticket) = oneshot::channel();
        // A send fails only once the writer is gone; the ticket then says so.
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Write(write, reply));
        }
        Ticket(ticket)
    }

    fn restored(&self) -> Restored {
        self.restored.clone()
    }

    fn history(&self, query: &HistoryQuery) -> Result<HistoryPage, StoreError> {
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        history(&conn, query)
            .map_err(|e| StoreError::Unavailable(format!("{}: {e}", self.path.display())))
    }

    fn trouble(&self) -> Option<String> {
        self.health.trouble()
    }

    fn flush(&self) -> Ticket {
        let (reply, ticket) = oneshot::channel();
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Flush(reply));
        }
        Ticket(ticket)
    }
}

/// Which way a history read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Newest first (`GET /api/history`, `ask-user history --format json`).
    NewestFirst,
    /// Oldest first (the decision log).
    OldestFirst,
}

/// A page of resolved questions from `conn`, newest first: at most the
/// query's `limit`, and the cursor after its last one when more follow.
pub fn history(conn: &Connection, query: &HistoryQuery) -> rusqlite::Result<HistoryPage> {
    history_in(conn, query, Order::NewestFirst)
}

/// [`history`] in `order`; the page's `next_cursor` continues in that order.
/// Records are ordered by when they were resolved, then by row, so a cursor
/// is unique however many share a millisecond.
pub fn history_in(
    conn: &Connection,
    query: &HistoryQuery,
    order: Order,
) -> rusqlite::Result<HistoryPage> {
    let limit = query.page_size();
    // A schema 1 file read as it is (`ask-user history`) has no answered_by.
    let by = if has_column(conn, "questions", "answered_by")? {
        "answered_by"
    } else {
        "NULL"
    };
    let select = &match order {
        Order::NewestFirst => format!(
            "SELECT seq, question, outcome, answer, resolved_ms, {by} FROM questions \
             WHERE outcome IS NOT NULL AND (?1 IS NULL OR session = ?1) \
             AND (?2 IS NULL OR resolved_ms < ?2) AND (?3 IS NULL OR resolved_ms >= ?3) \
             AND (?4 IS NULL OR resolved_ms < ?4 OR (resolved_ms = ?4 AND seq < ?5)) \
             ORDER BY resolved_ms DESC, seq DESC LIMIT ?6"
        ),
        Order::OldestFirst => format!(
            "SELECT seq, question, outcome, answer, resolved_ms, {by} FROM questions \
             WHERE outcome IS NOT NULL AND (?1 IS NULL OR session = ?1) \
             AND (?2 IS NULL OR resolved_ms < ?2) AND (?3 IS NULL OR resolved_ms >= ?3) \
             AND (?4 IS NULL OR resolved_ms > ?4 OR (resolved_ms = ?4 AND seq > ?5)) \
             ORDER BY resolved_ms, seq LIMIT ?6"
        ),
    };
    let before = query.before.map(|ms| ms as i64);
    let since = query.since.map(|ms| ms as i64);
    let cursor = query.cursor.map(|c| c.resolved_ms);
    let row = query.cursor.map(|c| c.row);
    let mut statement = conn.prepare_cached(select)?;
    let mut rows = statement.query(params![
        query.session,
        before,
        since,
        cursor,
        row,
        (limit + 1) as i64
    ])?;
    let mut records = Vec::with_capacity(limit.min(64));
    let (mut read, mut last, mut more) = (0, None, false);
    while let Some(row) = rows.next()? {
        if read == limit {
            more = true;
            break;
        }
        read += 1;
        let (at, record) = history_record(row)?;
        last = Some(at);
        records.extend(record);
    }
    Ok(HistoryPage {
        records,
        next_cursor: last.filter(|_| more),
    })
}

/// One row of a history read: its cursor, and its record unless it no longer
/// reads.
fn history_record(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(HistoryCursor, Option<HistoryRecord>)> {
    let seq: i64 = row.get(0)?;
    let question: String = row.get(1)?;
    let outcome: String = row.get(2)?;
    let answer: Option<String> = row.get(3)?;
    let resolved: i64 = row.get(4)?;
    let by: Option<String> = row.get(5)?;
    let cursor = HistoryCursor {
        resolved_ms: resolved,
        row: seq,
    };
    let (Ok(question), Some(outcome)) = (
        serde_json::from_str::<QuestionRequested>(&question),
        Outcome::from_wire(&outcome),
    ) else {
        return Ok((cursor, None));
    };
    let record = HistoryRecord {
        question,
        outcome,
        answer: answer.and_then(|a| serde_json::from_str(&a).ok()),
        resolved_at_ms: resolved.max(0) as u64,
        by: by.and_then(|by| serde_json::from_str(&by).ok()),
    };
    Ok((cursor, Some(record)))
}

/// Opens an existing database read-only (for `ask-user history`), refusing a
/// file that is not one.
pub fn open_read_only(path: &Path) -> Result<Connection, String> {
    check_header(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| refuse(path, e))?;
    check_existing(&conn, path)?;
    Ok(conn)
}

/// Opens an existing database to delete history from (`ask-user history --clear`).
pub fn open_for_clearing(path: &Path) -> Result<Connection, String> {
    check_header(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| refuse(path, e))?;
    check_existing(&conn, path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(conn)
}

/// Deletes the resolved questions and the messages of `session`, or of every
/// session; returns how many questions went. Pending questions stay; an answer
/// still held for its agent goes too (the person asked for it to be forgotten).
pub fn clear(conn: &Connection, session: Option<&str>) -> rusqlite::Result<usize> {
    let questions = conn.execute(
        "DELETE FROM questions WHERE outcome IS NOT NULL AND (?1 IS NULL OR session = ?1)",
        [session],
    )?;
    conn.execute(
        "DELETE FROM messages WHERE (?1 IS NULL OR session = ?1)",
        [session],
    )?;
    Ok(questions)
}

#[cfg(test)]
mod tests;
