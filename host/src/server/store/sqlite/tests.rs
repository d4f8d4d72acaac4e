use super::*;
use crate::server::store::{HistoryQuery, Store, Write};
use ask_user_core::AskRequest;
use ask_user_core::wire::{MessageCreated, Role};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("auq-store-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn question(id: &str, session: &str, created_at_ms: u64) -> QuestionRequested {
    QuestionRequested {
        id: id.to_owned(),
        session: session.to_owned(),
        request: AskRequest::from_json(
            r#"{"questions": [{"id": "db", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]}"#,
        )
        .unwrap(),
        created_at_ms,
        // Kept with the question, so it comes back after a restart.
        asked_by: Some(ask_user_core::wire::AskedBy {
            kind: ask_user_core::wire::AskerKind::Mcp,
            name: "claude-code".to_owned(),
            version: Some("2.1.0".to_owned()),
        }),
    }
}

fn answer() -> AnswerBatch {
    AnswerBatch::from_json(r#"{"answers": [{"id": "db", "selected": ["B"]}]}"#).unwrap()
}

async fn kept(store: &SqliteStore, write: Write) -> bool {
    store.submit(write).kept().await.expect("the write is kept")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn pending_questions_and_held_resolutions_come_back_when_the_file_is_opened_again() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    for id in [
        "q_pending",
        "q_held",
        "q_cancelled",
        "q_delivered",
        "q_aborted",
    ] {
        assert!(kept(&store, Write::Asked(question(id, "s", 1).into())).await);
    }
    let answered = |id: &str| Write::Answered {
        by: None,
        id: id.to_owned(),
        answer: answer(),
        at_ms: 2,
    };
    assert!(kept(&store, answered("q_held")).await);
    assert!(kept(&store, answered("q_delivered")).await);
    assert!(
        kept(
            &store,
            Write::Delivered {
                id: "q_delivered".into()
            }
        )
        .await
    );
    let cancelled = Write::Cancelled {
        by: None,
        id: "q_cancelled".into(),
        at_ms: 2,
    };
    assert!(kept(&store, cancelled).await);
    let aborted = Write::Ended {
        id: "q_aborted".into(),
        outcome: Outcome::Aborted,
        at_ms: 2,
    };
    assert!(kept(&store, aborted).await);
    drop(store);

    let again = SqliteStore::open(&dir.0).unwrap();
    let restored = again.restored();
    assert_eq!(restored.pending, vec![question("q_pending", "s", 1)]);
    assert_eq!(
        restored.held,
        vec![
            (question("q_held", "s", 1), Some(answer())),
            (question("q_cancelled", "s", 1), None),
        ]
    );
}

#[tokio::test]
async fn the_first_answer_written_wins_and_an_ending_of_the_table_overrides_an_undelivered_one() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    assert!(kept(&store, Write::Asked(question("q_1", "s", 1).into())).await);
    let answered = Write::Answered {
        by: None,
        id: "q_1".into(),
        answer: answer(),
        at_ms: 2,
    };
    assert!(kept(&store, answered.clone()).await);
    assert!(
        !kept(&store, answered).await,
        "a second answer does not apply"
    );
    let cancelled = Write::Cancelled {
        by: None,
        id: "q_1".into(),
        at_ms: 3,
    };
    assert!(!kept(&store, cancelled).await);
    // The table aborted it before the answer's claim: the record follows the table.
    let ended = Write::Ended {
        id: "q_1".into(),
        outcome: Outcome::Aborted,
        at_ms: 4,
    };
    assert!(kept(&store, ended).await);
    let page = store.history(&HistoryQuery::default()).unwrap();
    assert_eq!(page.records.len(), 1);
    assert_eq!(page.records[0].outcome, Outcome::Aborted);
    assert_eq!(page.records[0].answer, None);
    assert_eq!(page.records[0].resolved_at_ms, 4);
}

#[tokio::test]
async fn history_pages_go_newest_first_and_lose_no_record_resolved_in_the_same_millisecond() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    // 11 records; resolved at 10, 20, 20, 20, 30, … (three share 20 ms).
    let times = [10, 20, 20, 20, 30, 40, 50, 50, 60, 70, 80];
    for (n, at) in times.iter().enumerate() {
        let id = format!("q_{n:02}");
        let session = if n % 2 == 0 { "even" } else { "odd" };
        assert!(kept(&store, Write::Asked(question(&id, session, 1).into())).await);
        let answered = Write::Answered {
            by: None,
            id,
            answer: answer(),
            at_ms: *at,
        };
        assert!(kept(&store, answered).await);
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let query = HistoryQuery {
            cursor,
            limit: Some(3),
            ..HistoryQuery::default()
        };
        let page = store.history(&query).unwrap();
        assert!(!page.records.is_empty() && page.records.len() <= 3);
        seen.extend(page.records.iter().map(|r| r.resolved_at_ms));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut newest_first = times.to_vec();
    newest_first.reverse();
    assert_eq!(seen, newest_first, "every record once, newest first");

    let odd = HistoryQuery {
        session: Some("odd".into()),
        ..HistoryQuery::default()
    };
    let page = store.history(&odd).unwrap();
    assert_eq!(page.records.len(), 5);
    assert!(page.records.iter().all(|r| r.question.session == "odd"));
    let since = HistoryQuery {
        since: Some(60),
        ..HistoryQuery::default()
    };
    assert_eq!(store.history(&since).unwrap().records.len(), 3);
}

/// Every record of `query`'s pages in `order`, checking each page holds at
/// most `limit`: their ids in the order read.
fn paged_ids(conn: &Connection, mut query: HistoryQuery, order: super::Order) -> Vec<String> {
    let limit = query.page_size();
    let mut ids = Vec::new();
    loop {
        let page = super::history_in(conn, &query, order).unwrap();
        assert!(
            page.records.len() <= limit,
            "{} records",
            page.records.len()
        );
        ids.extend(page.records.into_iter().map(|r| r.question.id));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn history_pages_hold_at_most_limit_and_a_cursor_splits_a_millisecond_without_repeating_or_skipping()
 {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    // 1 record at 5 ms, 40 at 7 ms, 1 at 9 ms.
    let times: Vec<u64> = std::iter::once(5)
        .chain(std::iter::repeat_n(7, 40))
        .chain(std::iter::once(9))
        .collect();
    for (n, at) in times.iter().enumerate() {
        let id = format!("q_{n:02}");
        assert!(kept(&store, Write::Asked(question(&id, "s", 1).into())).await);
        let ended = Write::Ended {
            id,
            outcome: Outcome::Timeout,
            at_ms: *at,
        };
        assert!(kept(&store, ended).await);
    }
    drop(store);
    let conn = super::open_read_only(&dir.0.join(DATABASE_FILE)).unwrap();
    let all: Vec<String> = (0..times.len()).map(|n| format!("q_{n:02}")).collect();
    let mut newest_first = all.clone();
    newest_first.reverse();
    let query = |limit, since, before| HistoryQuery {
        limit: Some(limit),
        since,
        before,
        ..HistoryQuery::default()
    };
    for limit in [1, 3, 7, 40, 500] {
        let newest = paged_ids(&conn, query(limit, None, None), super::Order::NewestFirst);
        assert_eq!(newest, newest_first, "limit {limit}");
        let oldest = paged_ids(&conn, query(limit, None, None), super::Order::OldestFirst);
        assert_eq!(oldest, all, "limit {limit}");
    }
    // since (inclusive) and before (exclusive) still bound the pages.
    let at_seven = paged_ids(&conn, query(3, Some(7), Some(9)), super::Order::NewestFirst);
    assert_eq!(at_seven, newest_first[1..41]);
    let from_seven = paged_ids(&conn, query(6, Some(7), None), super::Order::OldestFirst);
    assert_eq!(from_seven, all[1..]);
}

#[tokio::test]
async fn pruning_deletes_old_resolved_questions_and_messages_but_never_held_or_pending_ones() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    for id in ["q_old", "q_new", "q_held", "q_pending"] {
        assert!(kept(&store, Write::Asked(question(id, "s", 1).into())).await);
    }
    for (id, at_ms) in [("q_old", 100), ("q_new", 1_000), ("q_held", 100)] {
        let answered = Write::Answered {
            by: None,
            id: id.into(),
            answer: answer(),
            at_ms,
        };
        assert!(kept(&store, answered).await);
    }
    for id in ["q_old", "q_new"] {
        assert!(kept(&store, Write::Delivered { id: id.into() }).await);
    }
    let message = |id: &str, at_ms| Write::Message {
        session: "s".into(),
        message: MessageCreated {
            id: id.into(),
            role: Role::User,
            text: "hi".into(),
            at_ms,
            by: None,
        },
        at_ms,
    };
    assert!(kept(&store, message("m_old", 100)).await);
    assert!(kept(&store, message("m_new", 1_000)).await);
    assert!(kept(&store, Write::Prune { before_ms: 500 }).await);
    let ids: Vec<String> = store
        .history(&HistoryQuery::default())
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.question.id)
        .collect();
    assert_eq!(ids, ["q_new", "q_held"]);
    let conn = Connection::open(dir.0.join(DATABASE_FILE)).unwrap();
    let messages: Vec<String> = conn
        .prepare("SELECT id FROM messages")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(messages, ["m_new"]);
    drop(store);
    let again = SqliteStore::open(&dir.0).unwrap().restored();
    assert_eq!(again.pending.len(), 1);
    assert_eq!(again.held.len(), 1);
}

#[tokio::test]
async fn clearing_deletes_a_sessions_resolved_questions_only() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    for (id, session) in [("q_a", "a"), ("q_b", "b"), ("q_open", "a")] {
        assert!(kept(&store, Write::Asked(question(id, session, 1).into())).await);
    }
    for id in ["q_a", "q_b"] {
        let ended = Write::Ended {
            id: id.into(),
            outcome: Outcome::Timeout,
            at_ms: 5,
        };
        assert!(kept(&store, ended).await);
    }
    let conn = open_for_clearing(store.path()).unwrap();
    assert_eq!(clear(&conn, Some("a")).unwrap(), 1);
    let left = store.history(&HistoryQuery::default()).unwrap().records;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].question.id, "q_b");
    drop(store);
    assert_eq!(
        SqliteStore::open(&dir.0).unwrap().restored().pending.len(),
        1
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_naming_it_and_left_untouched() {
    let dir = TempDir::new();
    let path = dir.0.join(DATABASE_FILE);
    let garbage = b"these are someone's notes, not a database\n".repeat(20);
    std::fs::write(&path, &garbage).unwrap();
    let refused = SqliteStore::open(&dir.0).unwrap_err();
    assert!(refused.contains(&path.display().to_string()), "{refused}");
    assert!(refused.contains("not an ask-user database"), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage, "never overwritten");
}

#[test]
fn a_sqlite_database_of_another_program_or_a_corrupt_one_is_refused_and_left_untouched() {
    let dir = TempDir::new();
    let path = dir.0.join(DATABASE_FILE);
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(other);
    let before = std::fs::read(&path).unwrap();
    let refused = SqliteStore::open(&dir.0).unwrap_err();
    assert!(refused.contains(&path.display().to_string()), "{refused}");
    assert!(refused.contains("another program"), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Ours, then its pages scribbled over past the header.
    std::fs::remove_file(&path).unwrap();
    drop(SqliteStore::open(&dir.0).unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 4096);
    for byte in &mut bytes[100..] {
        *byte = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let refused = SqliteStore::open(&dir.0).unwrap_err();
    assert!(refused.contains(&path.display().to_string()), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "never overwritten");
}

#[test]
fn a_corrupt_databases_refusal_quotes_its_first_five_problems_and_counts_the_rest() {
    let dir = TempDir::new();
    let path = dir.0.join(DATABASE_FILE);
    drop(SqliteStore::open(&dir.0).unwrap());
    // Hundreds of free pages, then a header that forgets the free list:
    // quick_check finds every one of them "never used".
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE scratch (text TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
         INSERT INTO scratch SELECT printf('%.3000c', 'x') FROM n;
         DELETE FROM scratch;",
    )
    .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[32..40].fill(0); // the first free-list page and the count
    std::fs::write(&path, &bytes).unwrap();

    let refused = SqliteStore::open(&dir.0).unwrap_err();
    assert!(refused.contains(&path.display().to_string()), "{refused}");
    assert!(refused.contains("corrupt"), "{refused}");
    assert_eq!(refused.matches("never used").count(), 5, "{refused}");
    assert!(
        refused.contains("and at least 95 more problems"),
        "{refused}"
    );
    assert!(refused.len() < 2000, "{} bytes: {refused}", refused.len());
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "never overwritten");
}

#[cfg(unix)]
#[tokio::test]
async fn the_file_is_private_and_a_read_only_file_fails_every_write_loudly() {
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).unwrap();
    let path = store.path().to_owned();
    assert_eq!(mode(&path), 0o600);
    assert!(kept(&store, Write::Asked(question("q_1", "s", 1).into())).await);
    assert_eq!(mode(&dir.0.join("ask-user.db-wal")), 0o600);
    assert_eq!(store.trouble(), None);

    set_mode(&path, 0o400);
    let refused = store
        .submit(Write::Asked(question("q_2", "s", 1).into()))
        .kept()
        .await
        .unwrap_err();
    assert!(refused.reason().contains("read-only"), "{refused}");
    assert!(
        refused.reason().contains(&path.display().to_string()),
        "{refused}"
    );
    assert_eq!(store.trouble(), Some(refused.reason().to_owned()));

    set_mode(&path, 0o600);
    assert!(kept(&store, Write::Asked(question("q_3", "s", 1).into())).await);
    assert_eq!(store.trouble(), None, "recovered");
    drop(store);
    let restored = SqliteStore::open(&dir.0).unwrap().restored();
    let ids: Vec<&str> = restored.pending.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["q_1", "q_3"], "the refused write was not kept");
}

#[test]
fn a_question_written_around_its_kept_request_json_is_what_serde_json_writes() {
    let mut asked = question("q_\"1\"", "s ✓", 7);
    for asked_by in [asked.asked_by.clone(), None] {
        asked.asked_by = asked_by;
        let request_json = crate::server::canonical::request_json(&asked.request);
        let row = crate::server::store::Asked::with_request_json(&asked, &request_json);
        assert_eq!(row, crate::server::store::Asked::from(&asked));
        assert_eq!(row.json, serde_json::to_string(&asked).unwrap());
    }
}

/// A schema 2 file as issue 21's first steps wrote it: the devices table
/// without activity, messages without `written_by`.
fn schema_2_file(dir: &Path) {
    let conn = Connection::open(dir.join("ask-user.db")).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(DEVICES).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID};
         INSERT INTO schema_version (version) VALUES (2);
         INSERT INTO devices (id, name, agent, credential_sha256, paired_ms)
             VALUES ('d_old', 'Pixel 8', 'Chrome, Android', 'ab', 1000);
         INSERT INTO messages (id, session, role, text, at_ms)
             VALUES ('m_old', 's', 'user', 'before', 2000);"
    ))
    .unwrap();
}

fn schema_version_of(dir: &Path) -> i64 {
    Connection::open(dir.join("ask-user.db"))
        .unwrap()
        .query_row("SELECT max(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .unwrap()
}

#[tokio::test]
async fn a_schema_2_file_becomes_the_current_schema_and_keeps_devices_last_seen_and_last_answer_and_who_wrote_a_message()
 {
    let dir = TempDir::new();
    schema_2_file(&dir.0);
    let store = SqliteStore::open(&dir.0).unwrap();
    assert_eq!(schema_version_of(&dir.0), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 6);
    let device = &store.restored().devices[0];
    assert_eq!(
        (device.last_seen_ms, device.last_answer_ms),
        (1000, None),
        "a device never seen since: its pairing time, no answer"
    );
    assert!(
        kept(
            &store,
            Write::DeviceSeen {
                id: "d_old".into(),
                at_ms: 5000
            }
        )
        .await
    );
    assert!(
        !kept(
            &store,
            Write::DeviceSeen {
                id: "d_old".into(),
                at_ms: 4000
            }
        )
        .await,
        "last seen never goes back"
    );
    assert!(
        kept(
            &store,
            Write::DeviceAnswered {
                id: "d_old".into(),
                at_ms: 6000
            }
        )
        .await
    );
    let by = ask_user_core::wire::AnsweredBy::device("d_old", "Pixel 8");
    assert!(
        kept(
            &store,
            Write::Message {
                session: "s".into(),
                message: MessageCreated {
                    id: "m_new".into(),
                    role: Role::User,
                    text: "after".into(),
                    at_ms: 7000,
                    by: Some(by.clone()),
                },
                at_ms: 7000,
            }
        )
        .await
    );
    drop(store);

    let store = SqliteStore::open(&dir.0).unwrap();
    let restored = store.restored();
    let device = &restored.devices[0];
    assert_eq!(
        (device.last_seen_ms, device.last_answer_ms),
        (6000, Some(6000)),
        "an answer is a sighting too"
    );
    let bys: Vec<_> = restored
        .transcripts
        .iter()
        .filter_map(|(_, entry)| match entry {
            TranscriptEntry::Message(m) => Some((m.id.as_str(), m.by.clone())),
            TranscriptEntry::Record(_) => None,
        })
        .collect();
    assert_eq!(bys, vec![("m_old", None), ("m_new", Some(by))]);
}

#[test]
fn a_schema_2_file_read_only_is_read_as_it_is() {
    let dir = TempDir::new();
    schema_2_file(&dir.0);
    #[cfg(unix)]
    set_mode(&dir.0.join("ask-user.db"), 0o400);
    let store = SqliteStore::open(&dir.0).unwrap();
    assert_eq!(store.restored().devices[0].last_seen_ms, 1000);
    assert_eq!(store.restored().transcripts.len(), 1);
    drop(store);
    assert_eq!(schema_version_of(&dir.0), 2, "not migrated");
}

/// The schema a version 2 host wrote (issue 21), as it was: the fixture of the
/// migration test.
const SCHEMA_2: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
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
CREATE INDEX questions_session ON questions (session, resolved_ms);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    session TEXT NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages (session, at_ms);
CREATE TABLE devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    agent TEXT NOT NULL,
    credential_sha256 TEXT NOT NULL UNIQUE,
    paired_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
INSERT INTO schema_version (version) VALUES (2);
";

#[tokio::test]
async fn a_schema_2_file_opens_as_the_current_schema_with_the_resolved_only_session_index_and_keeps_every_record()
 {
    let dir = TempDir::new();
    let path = dir.0.join(DATABASE_FILE);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA_2).unwrap();
        conn.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))
            .unwrap();
        let json = |id: &str| serde_json::to_string(&question(id, "s", 1)).unwrap();
        let answer_json = serde_json::to_string(&answer()).unwrap();
        let by = r#"{"kind":"page"}"#;
        conn.execute(
            "INSERT INTO questions (id, session, question, created_ms) VALUES ('q_pending', 's', ?1, 1)",
            [json("q_pending")],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO questions (id, session, question, created_ms, outcome, answer, resolved_ms, answered_by) \
             VALUES ('q_held', 's', ?1, 1, 'answered', ?2, 5, ?3)",
            params![json("q_held"), answer_json, by],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO questions (id, session, question, created_ms, outcome, answer, resolved_ms, delivery, answered_by) \
             VALUES ('q_done', 's', ?1, 1, 'answered', ?2, 3, 1, ?3)",
            params![json("q_done"), answer_json, by],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO messages (id, session, role, text, at_ms) VALUES ('m_1', 's', 'user', 'hello', 2)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO devices (id, name, agent, credential_sha256, paired_ms) \
             VALUES ('d_0123456789abcdef', 'Pixel 8', 'Chrome on Android', 'ab12', 7)",
            [],
        )
        .unwrap();
    }

    let store = SqliteStore::open(&dir.0).unwrap();
    let restored = store.restored();
    assert_eq!(restored.pending, vec![question("q_pending", "s", 1)]);
    assert_eq!(
        restored.held,
        vec![(question("q_held", "s", 1), Some(answer()))]
    );
    let transcript: Vec<String> = restored
        .transcripts
        .iter()
        .map(|(session, entry)| match entry {
            TranscriptEntry::Message(m) => format!("{session} message {}", m.id),
            TranscriptEntry::Record(r) => format!("{session} record {}", r.id),
        })
        .collect();
    assert_eq!(
        transcript,
        ["s message m_1", "s record q_done", "s record q_held"]
    );
    assert_eq!(restored.devices.len(), 1);
    assert_eq!(restored.devices[0].name, "Pixel 8");
    let history = store.history(&HistoryQuery::default()).unwrap();
    let ids: Vec<&str> = history
        .records
        .iter()
        .map(|r| r.question.id.as_str())
        .collect();
    assert_eq!(ids, ["q_held", "q_done"]);
    assert!(history.records.iter().all(|r| r.by.is_some()));
    // It is written as the current schema from now on.
    let answered = Write::Answered {
        by: None,
        id: "q_pending".into(),
        answer: answer(),
        at_ms: 9,
    };
    assert!(kept(&store, answered).await);
    drop(store);

    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT max(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 6);
    let index: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'questions_session'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(index.ends_with("WHERE outcome IS NOT NULL"), "{index}");
    let counts: (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM questions), (SELECT count(*) FROM messages), \
             (SELECT count(*) FROM devices)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(counts, (3, 1, 1));
    drop(conn);
    let again = SqliteStore::open(&dir.0).unwrap();
    assert!(again.restored().pending.is_empty());
    assert_eq!(again.restored().held.len(), 2);
}

/// How many times the WAL was started over: the checkpoint sequence number in
/// its header (bytes 12..16, big-endian), which SQLite counts up at each.
fn wal_restarts(wal: &Path) -> Option<u32> {
    let mut header = [0u8; 16];
    let mut file = std::fs::File::open(wal).ok()?;
    file.read_exact(&mut header).ok()?;
    Some(u32::from_be_bytes(header[12..16].try_into().ok()?))
}

#[tokio::test]
async fn the_journal_starts_over_while_writes_keep_coming_instead_of_growing_to_its_share() {
    let dir = TempDir::new();
    let wal = dir.0.join(format!("{DATABASE_FILE}-wal"));
    // The default bound: the journal's share is 128 MiB.
    let store = SqliteStore::open(&dir.0).unwrap();
    let detail = "x".repeat(16 * 1024);
    let (mut written, mut largest, mut n) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (None, 0);
    let started = std::time::Instant::now();
    // Writes keep coming, 512 KiB every 12.5 ms at most (40 MiB/s, so the
    // checkpointer's passes come between them at any speed), for 96 MiB of
    // questions: less than the journal's share, which the WAL reached before.
    while written < 96 * 1024 * 1024 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "only {written} bytes were written in 120 s"
        );
        let batch_started = tokio::time::Instant::now();
        let tickets: Vec<Ticket> = (0..32)
            .map(|_| {
                n += 1;
                let asked = crate::server::store::Asked {
                    id: format!("q_{n:032x}"),
                    // Sessions enough that none passes --max-session-write-bytes.
                    session: format!("s{}", n % 16),
                    created_at_ms: n,
                    json: format!(r#"{{"id":"q_{n:032x}","detail":"{detail}"}}"#),
                };
                written += asked.json.len() as u64;
                store.submit(Write::Asked(asked))
            })
            .collect();
        for ticket in tickets {
            assert!(ticket.kept().await.unwrap());
        }
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        if let Some(restarts) = wal_restarts(&wal) {
            first.get_or_insert(restarts);
            last = restarts;
        }
        tokio::time::sleep_until(batch_started + std::time::Duration::from_micros(12_500)).await;
    }
    let restarts = last - first.expect("a WAL was written");
    assert!(
        restarts >= 2,
        "the WAL started over {restarts} times while {written} bytes were written (it grew to {largest} bytes)"
    );
    assert!(
        largest < 64 * 1024 * 1024,
        "the WAL grew to {largest} bytes while {written} bytes were written"
    );
}

fn device(id: &str) -> super::super::DeviceRecord {
    super::super::DeviceRecord {
        id: id.to_owned(),
        name: format!("phone {id}"),
        agent: "Chrome, Android".to_owned(),
        credential_sha256: format!("{id:0>64}"),
        paired_at_ms: 1,
        last_seen_ms: 1,
        last_answer_ms: None,
        person: None,
    }
}

#[tokio::test]
async fn push_subscriptions_come_back_with_their_device_and_go_with_an_opt_out_or_a_revocation() {
    let dir = TempDir::new();
    {
        let store = SqliteStore::open(&dir.0).unwrap();
        for id in ["d_a", "d_b", "d_c"] {
            assert!(kept(&store, Write::DevicePaired(device(id))).await);
        }
        for id in ["d_a", "d_b", "d_c", "d_unknown"] {
            kept(
                &store,
                Write::PushSubscribed {
                    device: id.to_owned(),
                    subscription: format!("{{\"endpoint\":\"{id}\"}}"),
                    at_ms: 2,
                },
            )
            .await;
        }
        // A second subscription replaces the first.
        kept(
            &store,
            Write::PushSubscribed {
                device: "d_a".to_owned(),
                subscription: "{\"endpoint\":\"d_a new\"}".to_owned(),
                at_ms: 3,
            },
        )
        .await;
        kept(
            &store,
            Write::PushUnsubscribed {
                device: "d_b".to_owned(),
            },
        )
        .await;
        kept(
            &store,
            Write::DeviceRevoked {
                id: "d_c".to_owned(),
                at_ms: 4,
            },
        )
        .await;
    }
    let store = SqliteStore::open(&dir.0).unwrap();
    assert_eq!(
        store.restored().push_subscriptions,
        [("d_a".to_owned(), "{\"endpoint\":\"d_a new\"}".to_owned())],
        "d_b opted out, d_c was revoked, d_unknown was never paired"
    );
}

#[test]
fn a_schema_2_file_gains_the_push_subscriptions_and_is_marked_the_current_schema() {
    let dir = TempDir::new();
    {
        let mut conn = Connection::open(dir.0.join(DATABASE_FILE)).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(SCHEMA).unwrap();
        tx.execute_batch(DEVICES).unwrap();
        tx.execute("INSERT INTO schema_version (version) VALUES (2)", [])
            .unwrap();
        tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))
            .unwrap();
        tx.commit().unwrap();
    }
    drop(SqliteStore::open(&dir.0).unwrap());
    let conn = Connection::open(dir.0.join(DATABASE_FILE)).unwrap();
    let version: i64 = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert!(has_column(&conn, "push_subscriptions", "subscription").unwrap());
}

/// A schema 5 file (before issue 24): devices without `person`, no people.
fn schema_5_file(dir: &Path) {
    let mut conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute_batch(SCHEMA).unwrap();
    tx.execute_batch(DEVICES).unwrap();
    add_devices_activity(&tx).unwrap();
    tx.execute_batch(PUSH_SUBSCRIPTIONS).unwrap();
    tx.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID};
         INSERT INTO schema_version (version) VALUES (5);
         INSERT INTO devices (id, name, agent, credential_sha256, paired_ms)
             VALUES ('d_old', 'Pixel 8', 'Chrome, Android', 'ab', 1000);"
    ))
    .unwrap();
    tx.commit().unwrap();
}

fn person(id: &str, name: &str, roles: &[&str]) -> super::super::PersonRecord {
    super::super::PersonRecord {
        id: id.to_owned(),
        name: name.to_owned(),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        credential_sha256: format!("{id:0>64}"),
        added_at_ms: 10,
    }
}

#[tokio::test]
async fn a_schema_5_file_becomes_schema_6_and_people_agents_and_a_devices_person_survive_a_restart()
{
    let dir = TempDir::new();
    schema_5_file(&dir.0);
    {
        let store = SqliteStore::open(&dir.0).unwrap();
        assert_eq!(schema_version_of(&dir.0), 6);
        let restored = store.restored();
        assert_eq!(restored.devices.len(), 1, "the old device is kept");
        assert_eq!(restored.devices[0].person, None, "the owner's");
        assert!(restored.people.is_empty() && restored.agents.is_empty());
        assert!(
            kept(
                &store,
                Write::PersonAdded(person("u_ana", "ana", &["oncall"]))
            )
            .await
        );
        assert!(kept(&store, Write::PersonAdded(person("u_bo", "bo", &[]))).await);
        let mut phone = device("d_ana");
        phone.person = Some("u_ana".to_owned());
        assert!(kept(&store, Write::DevicePaired(phone)).await);
        assert!(
            kept(
                &store,
                Write::AgentAdded(super::super::AgentRecord {
                    id: "a_ci".to_owned(),
                    name: "ci".to_owned(),
                    credential_sha256: "c".repeat(64),
                    added_at_ms: 11,
                })
            )
            .await
        );
    }
    {
        let store = SqliteStore::open(&dir.0).unwrap();
        let restored = store.restored();
        assert_eq!(
            restored.people,
            vec![
                person("u_ana", "ana", &["oncall"]),
                person("u_bo", "bo", &[])
            ]
        );
        assert_eq!(restored.agents.len(), 1);
        assert_eq!(restored.agents[0].name, "ci");
        let ana_phone = restored.devices.iter().find(|d| d.id == "d_ana").unwrap();
        assert_eq!(ana_phone.person.as_deref(), Some("u_ana"));
        assert!(
            kept(
                &store,
                Write::PersonRemoved {
                    id: "u_ana".to_owned(),
                    at_ms: 20
                }
            )
            .await
        );
        assert!(
            kept(
                &store,
                Write::AgentRemoved {
                    id: "a_ci".to_owned(),
                    at_ms: 20
                }
            )
            .await
        );
        // A removed name may be given again (a new credential).
        assert!(kept(&store, Write::PersonAdded(person("u_ana2", "ana", &[]))).await);
    }
    let store = SqliteStore::open(&dir.0).unwrap();
    let restored = store.restored();
    let names: Vec<&str> = restored.people.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(names, ["u_ana2", "u_bo"], "the removed one is gone");
    assert!(restored.agents.is_empty());
    assert!(
        restored.devices.iter().all(|d| d.id != "d_ana"),
        "a removed person's devices are revoked with them"
    );
}
