//! What the host remembers of each session beyond its pending questions: the
//! transcript (messages and a record per resolved question, oldest first) and
//! the activity the inbox lists (when something last happened, who asked
//! last). In memory, bounded by count and bytes; the pending table keeps it
//! under its own lock, so a record is kept in the same step as the
//! `question/resolved` frame that carries it.

use ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES;
use ask_user_core::wire::{AskedBy, Transcript, TranscriptEntry};
use std::collections::{HashMap, VecDeque};

/// The most sessions whose transcript and activity are kept; past it the
/// least recently active session's log is dropped.
pub const MAX_LOGGED_SESSIONS: usize = 1024;

/// The most bytes (as JSON) of one session's transcript; past it the oldest
/// entries are dropped (the newest entry is always kept).
pub const MAX_TRANSCRIPT_BYTES: usize = 1024 * 1024;

/// How the logs are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimits {
    /// Sessions kept.
    pub sessions: usize,
    /// Entries kept per session.
    pub entries: usize,
    /// Bytes (as JSON) kept per session.
    pub bytes: usize,
}

impl Default for LogLimits {
    fn default() -> Self {
        Self {
            sessions: MAX_LOGGED_SESSIONS,
            entries: MAX_TRANSCRIPT_ENTRIES,
            bytes: MAX_TRANSCRIPT_BYTES,
        }
    }
}

/// One session's log.
#[derive(Debug, Default)]
pub struct SessionLog {
    /// Entries with their size as JSON, oldest first.
    entries: VecDeque<(TranscriptEntry, usize)>,
    bytes: usize,
    /// When something last happened (Unix milliseconds).
    pub last_activity_ms: u64,
    /// The most recent asker that the host knew.
    pub asked_by: Option<AskedBy>,
}

/// Every session's log.
#[derive(Debug, Default)]
pub struct SessionLogs {
    logs: HashMap<String, SessionLog>,
    limits: LogLimits,
}

impl SessionLogs {
    /// Empty logs bounded by `limits`.
    pub fn new(limits: LogLimits) -> Self {
        Self {
            logs: HashMap::new(),
            limits,
        }
    }

    fn log(&mut self, session: &str) -> &mut SessionLog {
        if !self.logs.contains_key(session) && self.logs.len() >= self.limits.sessions.max(1) {
            let stalest = self
                .logs
                .iter()
                .min_by_key(|(_, log)| log.last_activity_ms)
                .map(|(name, _)| name.clone());
            if let Some(stalest) = stalest {
                self.logs.remove(&stalest);
            }
        }
        self.logs.entry(session.to_owned()).or_default()
    }

    /// Something happened in `session` at `at_ms`; `asked_by` (when known)
    /// becomes its most recent asker.
    pub fn touch(&mut self, session: &str, at_ms: u64, asked_by: Option<&AskedBy>) {
        let log = self.log(session);
        log.last_activity_ms = log.last_activity_ms.max(at_ms);
        if let Some(asked_by) = asked_by {
            log.asked_by = Some(asked_by.clone());
        }
    }

    /// Appends `entry` to `session`'s transcript (and counts it as activity),
    /// dropping the oldest entries past the limits.
    pub fn push(&mut self, session: &str, entry: TranscriptEntry) {
        let limits = self.limits;
        let size = serde_json::to_string(&entry).map_or(0, |json| json.len());
        let at_ms = entry.at_ms();
        let log = self.log(session);
        log.last_activity_ms = log.last_activity_ms.max(at_ms);
        log.entries.push_back((entry, size));
        log.bytes += size;
        while log.entries.len() > limits.entries.max(1)
            || (log.bytes > limits.bytes && log.entries.len() > 1)
        {
            if let Some((_, dropped)) = log.entries.pop_front() {
                log.bytes -= dropped;
            }
        }
    }

    /// Whether `session`'s log holds the message `id`.
    pub fn holds_message(&self, session: &str, id: &str) -> bool {
        self.logs.get(session).is_some_and(|log| {
            log.entries
                .iter()
                .any(|(entry, _)| matches!(entry, TranscriptEntry::Message(m) if m.id == id))
        })
    }

    /// `session`'s transcript, oldest first (empty for an unknown session).
    pub fn transcript(&self, session: &str) -> Transcript {
        Transcript {
            entries: self
                .logs
                .get(session)
                .map(|log| log.entries.iter().map(|(entry, _)| entry.clone()).collect())
                .unwrap_or_default(),
            demo_agent: false,
        }
    }

    /// `session`'s log, when kept.
    pub fn get(&self, session: &str) -> Option<&SessionLog> {
        self.logs.get(session)
    }

    /// Every kept log.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &SessionLog)> {
        self.logs.iter().map(|(name, log)| (name.as_str(), log))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::wire::{MessageCreated, Role};

    fn message(n: u64, text: &str) -> TranscriptEntry {
        TranscriptEntry::Message(MessageCreated {
            id: format!("m{n}"),
            role: Role::Agent,
            text: text.to_owned(),
            at_ms: n,
            by: None,
        })
    }

    fn ids(logs: &SessionLogs, session: &str) -> Vec<String> {
        logs.transcript(session)
            .entries
            .into_iter()
            .map(|entry| match entry {
                TranscriptEntry::Message(m) => m.id,
                TranscriptEntry::Record(r) => r.id,
            })
            .collect()
    }

    #[test]
    fn a_transcript_keeps_the_most_recent_entries_up_to_the_count() {
        let mut logs = SessionLogs::new(LogLimits {
            entries: 3,
            ..LogLimits::default()
        });
        for n in 0..5 {
            logs.push("s", message(n, "hi"));
        }
        assert_eq!(ids(&logs, "s"), ["m2", "m3", "m4"]);
        assert_eq!(logs.get("s").unwrap().last_activity_ms, 4);
    }

    #[test]
    fn a_transcript_drops_its_oldest_entries_past_the_byte_budget_but_keeps_the_newest() {
        let mut logs = SessionLogs::new(LogLimits {
            bytes: 400,
            ..LogLimits::default()
        });
        logs.push("s", message(0, &"a".repeat(50)));
        logs.push("s", message(1, &"b".repeat(50)));
        assert_eq!(ids(&logs, "s"), ["m0", "m1"]);
        logs.push("s", message(2, &"c".repeat(500)));
        assert_eq!(ids(&logs, "s"), ["m2"]);
    }

    #[test]
    fn past_the_session_cap_the_least_recently_active_log_goes() {
        let mut logs = SessionLogs::new(LogLimits {
            sessions: 2,
            ..LogLimits::default()
        });
        logs.touch("old", 1, None);
        logs.touch("new", 5, None);
        logs.push("newest", message(9, "x"));
        let mut kept: Vec<&str> = logs.iter().map(|(name, _)| name).collect();
        kept.sort();
        assert_eq!(kept, ["new", "newest"]);
    }

    #[test]
    fn touching_with_an_asker_remembers_it_and_without_keeps_the_last() {
        let mut logs = SessionLogs::default();
        let asker = AskedBy::from_http_header("bot/1").unwrap();
        logs.touch("s", 3, Some(&asker));
        logs.touch("s", 2, None);
        let log = logs.get("s").unwrap();
        assert_eq!(log.asked_by.as_ref(), Some(&asker));
        assert_eq!(log.last_activity_ms, 3, "activity never goes back in time");
    }
}
