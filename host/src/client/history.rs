//! `ask-user history`: prints the record of resolved questions from the data
//! directory's database (read-only, so it works beside a running host), or
//! from the shared PostgreSQL store (`--store`, `ASK_USER_STORE`), as JSON or
//! as a readable Markdown decision log; `--clear` deletes the file's.

use crate::data_dir::DataDirArg;
use crate::server::store::sqlite::{self, DATABASE_FILE};
use crate::server::store::{HistoryPage, HistoryQuery, HistoryRecord};
use ask_user_core::SessionId;
use ask_user_core::display::{escape_json_for_terminal, neutralise_for_terminal};
use ask_user_core::wire::Outcome;
use clap::{Args, ValueEnum};
use rusqlite::Connection;
use std::fmt::Write as _;
use std::io::Write as _;

/// `ask-user history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// The data directory whose database to read.
    #[command(flatten)]
    pub data_dir: DataDirArg,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only questions resolved on or after this UTC date or time
    /// (`2026-12-01`, `2026-12-01 14:30`, `2026-12-01T14:30:00Z`).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// `json` (the records, newest first) or `md` (a decision log, oldest first).
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,
    /// Delete the resolved questions and messages (of `--session` only, when
    /// given) instead of printing them. Pending questions stay.
    #[arg(long, conflicts_with_all = ["since", "format"])]
    pub clear: bool,
    /// Read the shared PostgreSQL store instead of the data directory's file
    /// (`postgres://USER@HOST:PORT/DB`, the password in PGPASSWORD), as the
    /// hosts given it do.
    #[arg(
        long,
        env = "ASK_USER_STORE",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub store: Option<String>,
}

/// How `ask-user history` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A JSON array of records, newest first.
    Json,
    /// A Markdown decision log, oldest first.
    Md,
}

/// Runs `ask-user history` on the shared store when `--store` (or
/// `ASK_USER_STORE`) names one, else on the data directory's file ([`run`]).
/// Call it on a multi-threaded tokio runtime (the shared store's pages are
/// read in place, between the pages printed).
pub async fn run_any(args: &HistoryArgs) -> Result<(), String> {
    match &args.store {
        #[cfg(feature = "postgres")]
        Some(url) => run_shared(args, url).await,
        #[cfg(not(feature = "postgres"))]
        Some(_) => Err("--store: this ask-user was built without the postgres feature".to_owned()),
        None => run(args),
    }
}

#[cfg(feature = "postgres")]
async fn run_shared(args: &HistoryArgs, url: &str) -> Result<(), String> {
    use crate::server::store::postgres;
    check_session(args)?;
    if args.clear {
        return Err(
            "--clear deletes from the data directory's file; the shared store is pruned by the \
             hosts' --keep-days (or by its database administrator)"
                .to_owned(),
        );
    }
    let reader = postgres::HistoryReader::connect(postgres::parse_url(url)?).await?;
    // Dates are read and written as the file's are (SQLite's date functions).
    let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    let query = first_page(args, &conn)?;
    let source = Source::Shared(&reader);
    tokio::task::block_in_place(|| print(args.format, &conn, &source, query))
}

fn check_session(args: &HistoryArgs) -> Result<(), String> {
    if let Some(session) = &args.session {
        SessionId::parse(session).map_err(|e| format!("--session: {}", e.message))?;
    }
    Ok(())
}

/// Where the pages come from.
enum Source<'a> {
    /// The data directory's SQLite file.
    File(&'a Connection),
    /// The shared PostgreSQL store (read on the current runtime, in place).
    #[cfg(feature = "postgres")]
    Shared(&'a crate::server::store::postgres::HistoryReader),
}

impl Source<'_> {
    fn page(&self, query: &HistoryQuery, order: sqlite::Order) -> std::io::Result<HistoryPage> {
        match self {
            Source::File(conn) => {
                sqlite::history_in(conn, query, order).map_err(std::io::Error::other)
            }
            #[cfg(feature = "postgres")]
            Source::Shared(reader) => tokio::runtime::Handle::current()
                .block_on(reader.page(query, order == sqlite::Order::OldestFirst))
                .map_err(std::io::Error::other),
        }
    }
}

/// Prints the record as `format` asks, from `source`; `conn` formats dates.
fn print(
    format: Format,
    conn: &Connection,
    source: &Source<'_>,
    query: HistoryQuery,
) -> Result<(), String> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let printed = match format {
        Format::Json => print_json(source, query, &mut out),
        Format::Md => print_markdown(conn, source, query, &mut out),
    };
    printed
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
}

/// Runs `ask-user history` on the data directory's file; `Err` says what
/// went wrong.
pub fn run(args: &HistoryArgs) -> Result<(), String> {
    check_session(args)?;
    let path = args.data_dir.resolve()?.join(DATABASE_FILE);
    if !path.exists() {
        return Err(format!(
            "{}: no database (nothing recorded yet)",
            path.display()
        ));
    }
    if args.clear {
        let mut out = std::io::stdout().lock();
        let conn = sqlite::open_for_clearing(&path)?;
        let deleted = sqlite::clear(&conn, args.session.as_deref())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(out, "deleted {deleted} resolved questions").map_err(|e| e.to_string())?;
        return Ok(());
    }
    let conn = sqlite::open_read_only(&path)?;
    let query = first_page(args, &conn)?;
    print(args.format, &conn, &Source::File(&conn), query)
}

/// The query for the first page `args` asks for (`conn` reads `--since`
/// as SQLite's date functions do).
fn first_page(args: &HistoryArgs, conn: &Connection) -> Result<HistoryQuery, String> {
    let since = args
        .since
        .as_deref()
        .map(|d| parse_date(conn, d))
        .transpose()?;
    Ok(HistoryQuery {
        session: args.session.clone(),
        since,
        limit: Some(PAGE),
        ..HistoryQuery::default()
    })
}

/// Records read and printed at a time: the history is printed page by page,
/// each read in a short transaction, so memory does not grow with it and a
/// slow reader of the output never holds the running host's journal.
const PAGE: usize = 32;

/// The pages of `query` in `order`, each handed to `each` as it is read.
fn for_each_page(
    source: &Source<'_>,
    mut query: HistoryQuery,
    order: sqlite::Order,
    mut each: impl FnMut(Vec<HistoryRecord>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    loop {
        let page = source.page(&query, order)?;
        each(page.records)?;
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return Ok(()),
        }
    }
}

/// The records as one JSON array, newest first, written as they are read.
fn print_json(
    source: &Source<'_>,
    query: HistoryQuery,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    /// Serialises the pages as one sequence while reading them.
    struct Streamed<'a, 'b> {
        source: &'a Source<'b>,
        query: HistoryQuery,
    }
    impl serde::Serialize for Streamed<'_, '_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{Error, SerializeSeq};
            let mut seq = serializer.serialize_seq(None)?;
            let mut failed = None;
            let read = for_each_page(
                self.source,
                self.query.clone(),
                sqlite::Order::NewestFirst,
                |records| {
                    for record in &records {
                        if let Err(e) = seq.serialize_element(record) {
                            failed = Some(e);
                            return Err(std::io::Error::other("serialising"));
                        }
                    }
                    Ok(())
                },
            );
            if let Some(e) = failed {
                return Err(e);
            }
            read.map_err(S::Error::custom)?;
            seq.end()
        }
    }
    let mut escaped = EscapedJson {
        out,
        partial: Vec::new(),
    };
    serde_json::to_writer_pretty(&mut escaped, &Streamed { source, query })
        .map_err(std::io::Error::other)?;
    escaped.out.write_all(b"\n")
}

/// Writes JSON text with every control a terminal would act on, and every
/// bidi or zero-width character, as a JSON escape
/// ([`escape_json_for_terminal`]): the same JSON, printable. A character
/// split across two writes waits until it is whole.
struct EscapedJson<W> {
    out: W,
    partial: Vec<u8>,
}

impl<W: std::io::Write> std::io::Write for EscapedJson<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        let whole = match std::str::from_utf8(&self.partial) {
            Ok(text) => text.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        };
        let text = std::str::from_utf8(&self.partial[..whole]).expect("checked above");
        self.out
            .write_all(escape_json_for_terminal(text).as_bytes())?;
        self.partial.drain(..whole);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The decision log, oldest first, written as it is read.
fn print_markdown(
    conn: &Connection,
    source: &Source<'_>,
    query: HistoryQuery,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    out.write_all(b"# Decision log\n")?;
    let mut any = false;
    for_each_page(source, query, sqlite::Order::OldestFirst, |records| {
        for record in &records {
            any = true;
            out.write_all(record_markdown(conn, record).as_bytes())?;
        }
        Ok(())
    })?;
    if !any {
        out.write_all(b"\nNothing recorded.\n")?;
    }
    Ok(())
}

/// Unix ms of a UTC date or time, as SQLite reads it.
fn parse_date(conn: &Connection, date: &str) -> Result<u64, String> {
    let seconds: Option<i64> = conn
        .query_row("SELECT unixepoch(?1)", [date.trim()], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    match seconds {
        Some(s) if s >= 0 => Ok(s as u64 * 1000),
        _ => Err(format!(
            "--since {date:?}: not a date (2026-12-01, 2026-12-01 14:30 or 2026-12-01T14:30:00Z, UTC)"
        )),
    }
}

fn utc(conn: &Connection, ms: u64) -> String {
    conn.query_row(
        "SELECT strftime('%Y-%m-%d %H:%M:%S', ?1 / 1000, 'unixepoch')",
        [ms as i64],
        |row| row.get::<_, String>(0),
    )
    .map(|t| format!("{t} UTC"))
    .unwrap_or_else(|_| format!("{ms} ms"))
}

fn outcome_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Answered => "answered",
        Outcome::Cancelled => "closed by the person",
        Outcome::Aborted => "withdrawn by the agent",
        Outcome::Timeout => "timed out",
        Outcome::Disposed => "ended by a host shutdown",
    }
}

/// The decision log of `records` (newest first, as a page holds them),
/// oldest first: per record when, where, how it ended, and each question
/// with what was chosen or written.
pub fn markdown(conn: &Connection, records: &[HistoryRecord]) -> String {
    let mut md = String::from("# Decision log\n");
    if records.is_empty() {
        md.push_str("\nNothing recorded.\n");
    }
    for record in records.iter().rev() {
        md.push_str(&record_markdown(conn, record));
    }
    md
}

/// One record of the decision log.
fn record_markdown(conn: &Connection, record: &HistoryRecord) -> String {
    let mut md = String::new();
    let q = &record.question;
    let _ = write!(
        md,
        "\n## {} · session `{}` · {}\n\nAsked {} · question `{}`\n",
        utc(conn, record.resolved_at_ms),
        one_line(&q.session),
        outcome_words(record.outcome),
        utc(conn, q.created_at_ms),
        one_line(&q.id)
    );
    if let Some(asked_by) = &q.asked_by {
        let version = asked_by
            .version
            .as_deref()
            .map(|v| format!(" {}", one_line(v)))
            .unwrap_or_default();
        let _ = writeln!(md, "\nAsked by {}{version}", one_line(&asked_by.name));
    }
    if let Some(by) = &record.by {
        let verb = match record.outcome {
            Outcome::Cancelled => "Closed",
            _ => "Answered",
        };
        // A person (issue 24) is named, with their device when they used one.
        let place = match (&by.person, &by.device) {
            (Some(person), Some(device)) => {
                format!("by {} on {}", one_line(person), one_line(&device.name))
            }
            (Some(person), None) => format!("by {}", one_line(person)),
            (None, Some(device)) => format!("on {}", one_line(&device.name)),
            (None, None) => "on the host's page".to_owned(),
        };
        let _ = writeln!(
            md,
            "\n{verb} {place} at {}",
            utc(conn, record.resolved_at_ms)
        );
    }
    for item in &q.request.questions {
        let title = item.header.as_deref().unwrap_or(&item.question);
        let _ = write!(md, "\n**{}**", one_line(title));
        if item.header.is_some() {
            let _ = write!(md, " — {}", one_line(&item.question));
        }
        md.push('\n');
        let answer = record
            .answer
            .as_ref()
            .and_then(|a| a.answers.iter().find(|a| a.id == item.id));
        match answer {
            Some(answer) if answer.selected.is_empty() && answer.custom.is_none() => {
                md.push_str("- (skipped)\n");
            }
            Some(answer) => {
                for label in &answer.selected {
                    let _ = writeln!(md, "- {}", one_line(label));
                }
                if let Some(custom) = &answer.custom {
                    let _ = writeln!(md, "- “{}”", one_line(custom));
                }
            }
            None if record.outcome == Outcome::Answered => md.push_str("- (no answer)\n"),
            None => {}
        }
    }
    if let Some(note) = record.answer.as_ref().and_then(|a| a.note.as_deref()) {
        let _ = writeln!(md, "\nNote: “{}”", one_line(note));
    }
    md
}

/// Text on one line (a newline would break the list item), with what a
/// terminal would act on (ESC, BEL, …) or what reorders or hides text (bidi
/// controls, zero-width characters) shown as `⟨U+XXXX⟩`.
fn one_line(text: &str) -> String {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    neutralise_for_terminal(&words).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::wire::{AskedBy, QuestionRequested};
    use ask_user_core::{AnswerBatch, AskRequest};

    #[test]
    fn json_escaped_for_a_terminal_waits_for_a_character_split_across_writes() {
        use std::io::Write as _;
        let json = serde_json::to_string("a\u{202e}b\u{9b}é").unwrap();
        let mut out = EscapedJson {
            out: Vec::new(),
            partial: Vec::new(),
        };
        // Byte by byte: every multi-byte character is split.
        for byte in json.as_bytes() {
            out.write_all(std::slice::from_ref(byte)).unwrap();
        }
        let printed = String::from_utf8(out.out).unwrap();
        assert_eq!(printed, r#""a\u202eb\u009bé""#);
        assert_eq!(
            serde_json::from_str::<String>(&printed).unwrap(),
            "a\u{202e}b\u{9b}é"
        );
    }

    #[test]
    fn the_decision_log_says_who_asked_and_the_persons_note() {
        let request: AskRequest = serde_json::from_value(
            serde_json::json!({"questions": [{"id": "q", "question": "Go?"}]}),
        )
        .unwrap();
        let answer: AnswerBatch = serde_json::from_value(serde_json::json!({
            "answers": [{"id": "q", "custom": "yes"}],
            "note": "mind the\nstep"
        }))
        .unwrap();
        let record = HistoryRecord {
            question: QuestionRequested {
                id: "a1".to_owned(),
                session: "s".to_owned(),
                request,
                created_at_ms: 0,
                asked_by: AskedBy::from_http_header("claude-code/2.1"),
            },
            outcome: Outcome::Answered,
            answer: Some(answer),
            resolved_at_ms: 1000,
            by: Some(ask_user_core::wire::AnsweredBy::device("d_1", "Pixel\n8")),
        };
        let conn = Connection::open_in_memory().unwrap();
        let md = markdown(&conn, std::slice::from_ref(&record));
        assert!(md.contains("Asked by claude-code 2.1\n"), "{md}");
        assert!(
            md.contains("Answered on Pixel 8 at 1970-01-01 00:00:01 UTC\n"),
            "{md}"
        );
        let on_page = HistoryRecord {
            by: Some(ask_user_core::wire::AnsweredBy::page()),
            ..record.clone()
        };
        assert!(markdown(&conn, &[on_page]).contains("Answered on the host's page at"));
        let by_person = HistoryRecord {
            by: Some(ask_user_core::wire::AnsweredBy {
                person: Some("ana".to_owned()),
                ..ask_user_core::wire::AnsweredBy::page()
            }),
            ..record
        };
        assert!(markdown(&conn, &[by_person]).contains("Answered by ana at"));
        assert!(md.contains("Note: “mind the step”\n"), "{md}");
    }

    #[test]
    fn the_decision_log_shows_bidi_zero_width_and_terminal_controls_as_markers() {
        let request: AskRequest = serde_json::from_value(serde_json::json!({"questions": [
            {"id": "q\u{1b}[2J", "header": "H\u{200b}", "question": "Run \u{202e}txt.exe?",
             "options": [{"label": "Yes\u{2066}"}, {"label": "No"}]}
        ]}))
        .unwrap();
        let answer: AnswerBatch = serde_json::from_value(serde_json::json!({
            "answers": [{"id": "q\u{1b}[2J", "selected": ["Yes\u{2066}"], "custom": "\u{1b}]0;pwned\u{7}"}],
            "note": "n\u{feff}"
        }))
        .unwrap();
        let record = HistoryRecord {
            question: QuestionRequested {
                id: "a\u{9b}1".to_owned(),
                session: "s".to_owned(),
                request,
                created_at_ms: 0,
                asked_by: AskedBy::from_http_header("bot\u{202d}/1"),
            },
            outcome: Outcome::Answered,
            answer: Some(answer),
            resolved_at_ms: 1000,
            by: None,
        };
        let conn = Connection::open_in_memory().unwrap();
        let md = markdown(&conn, &[record]);
        assert!(md.contains("question `a⟨U+009B⟩1`"), "{md}");
        assert!(md.contains("Asked by bot⟨U+202D⟩ 1\n"), "{md}");
        assert!(
            md.contains("**H⟨U+200B⟩** — Run ⟨U+202E⟩txt.exe?\n"),
            "{md}"
        );
        assert!(md.contains("- Yes⟨U+2066⟩\n"), "{md}");
        assert!(md.contains("- “⟨U+001B⟩]0;pwned⟨U+0007⟩”\n"), "{md}");
        assert!(md.contains("Note: “n⟨U+FEFF⟩”\n"), "{md}");
        assert!(
            !md.chars().any(|c| ask_user_core::display::is_spoofing(c)
                || ask_user_core::display::is_terminal_control(c)),
            "{md:?}"
        );
    }
}
