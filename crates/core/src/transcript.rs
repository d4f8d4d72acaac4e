//! The conversation a page shows: messages and the records of resolved
//! questions, merged from `GET …/transcript` and the stream's frames into one
//! list (each entry once, in time order, bounded), and what a record shows.

use crate::display::neutralised;
use crate::limits::MAX_TRANSCRIPT_ENTRIES;
use crate::recommend::recommendation;
use crate::wire::{Outcome, TranscriptEntry, TranscriptRecord};

/// Whether two entries are the same one (same kind, same id).
fn same(a: &TranscriptEntry, b: &TranscriptEntry) -> bool {
    match (a, b) {
        (TranscriptEntry::Message(a), TranscriptEntry::Message(b)) => a.id == b.id,
        (TranscriptEntry::Record(a), TranscriptEntry::Record(b)) => a.id == b.id,
        _ => false,
    }
}

/// Adds `entry` to `entries` (oldest first) unless it is there already;
/// true when it was added. It goes after every entry not later than it, so a
/// reload, a replay and a live frame give the same order; an entry without a
/// time (`0`, from an older host) goes last. Beyond
/// [`MAX_TRANSCRIPT_ENTRIES`] the oldest are dropped, as the host does.
pub fn merge(entries: &mut Vec<TranscriptEntry>, entry: TranscriptEntry) -> bool {
    if entries.iter().any(|e| same(e, &entry)) {
        return false;
    }
    let at = entry.at_ms();
    let index = if at == 0 {
        entries.len()
    } else {
        entries
            .iter()
            .rposition(|e| e.at_ms() <= at)
            .map_or(0, |i| i + 1)
    };
    entries.insert(index, entry);
    if entries.len() > MAX_TRANSCRIPT_ENTRIES {
        let excess = entries.len() - MAX_TRANSCRIPT_ENTRIES;
        entries.drain(..excess);
    }
    true
}

/// A resolved question as the conversation shows it: read-only, compact, every
/// text [`crate::display::neutralise`]d.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// The question's id.
    pub id: String,
    /// Who asked (display text), when the host knew.
    pub asked_by: Option<String>,
    /// Each question and what became of it.
    pub items: Vec<RecordItem>,
    /// How the batch ended; for anything but `Answered` the items carry no
    /// answer and the outcome is the whole story.
    pub outcome: Outcome,
    /// The person's reply in place of finishing ("Reply instead"), shown as
    /// their message.
    pub note: Option<String>,
}

/// One question of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordItem {
    /// The question, as asked.
    pub question: String,
    /// What the person gave; `None` when the batch was not answered.
    pub answer: Option<RecordAnswer>,
}

/// What the person gave for one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordAnswer {
    /// Chosen options (shown without the ` (Recommended)` suffix) and/or their
    /// own words.
    Given {
        /// The chosen labels, as shown.
        labels: Vec<String>,
        /// The free text.
        custom: Option<String>,
    },
    /// Skipped (no choice, no words).
    Skipped,
}

/// What a record shows.
pub fn record_view(record: &TranscriptRecord) -> RecordView {
    let answer = record
        .answer
        .as_ref()
        .filter(|_| record.outcome == Outcome::Answered);
    let items = record
        .request
        .questions
        .iter()
        .map(|question| RecordItem {
            question: neutralised(question.question.clone()),
            answer: answer.map(|batch| {
                let given = batch.answers.iter().find(|a| a.id == question.id);
                match given {
                    Some(a) if !a.selected.is_empty() || a.custom.is_some() => {
                        RecordAnswer::Given {
                            labels: a
                                .selected
                                .iter()
                                .map(|l| neutralised(recommendation(l).display.to_owned()))
                                .collect(),
                            custom: a.custom.clone().map(neutralised),
                        }
                    }
                    _ => RecordAnswer::Skipped,
                }
            }),
        })
        .collect();
    RecordView {
        id: record.id.clone(),
        asked_by: record
            .asked_by
            .as_ref()
            .map(|a| neutralised(a.name.clone())),
        items,
        outcome: record.outcome,
        note: answer.and_then(|batch| batch.note.clone()).map(neutralised),
    }
}

/// What an empty conversation says, so a person who opens the page before any
/// agent has asked knows what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyState {
    /// The demo agent listens: a message starts it.
    Demo,
    /// Nothing has asked yet: how to connect an agent.
    NoQuestionsYet,
}

/// The empty state to show: only once the transcript has loaded (no flash
/// before it does), while it holds nothing and nothing waits.
pub fn empty_state(
    loaded: bool,
    entries: usize,
    pending: usize,
    demo_agent: bool,
) -> Option<EmptyState> {
    if !loaded || entries > 0 || pending > 0 {
        return None;
    }
    Some(if demo_agent {
        EmptyState::Demo
    } else {
        EmptyState::NoQuestionsYet
    })
}
