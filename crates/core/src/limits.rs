//! The size limits of requests and answers. Lengths count Unicode scalar values
//! (`char`s), not bytes, so a Chinese question has the same room as an English one.

/// Most questions in one request.
pub const MAX_QUESTIONS: usize = 10;
/// Longest question id.
pub const MAX_ID_CHARS: usize = 64;
/// Longest question text.
pub const MAX_QUESTION_CHARS: usize = 2_000;
/// Longest header chip.
pub const MAX_HEADER_CHARS: usize = 40;
/// Longest `detail` (32 KiB of text).
pub const MAX_DETAIL_CHARS: usize = 32 * 1024;
/// Most options of one question.
pub const MAX_OPTIONS: usize = 16;
/// Longest option label.
pub const MAX_LABEL_CHARS: usize = 200;
/// Longest option description.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Longest free-text (`custom`) answer, after trimming.
pub const MAX_CUSTOM_CHARS: usize = 8_000;
/// Most questions (requests) pending at once in one session: what a composer's
/// questionnaire holds, and so the most a host may let wait in one session.
pub const MAX_PENDING_PER_SESSION: usize = 256;
/// Longest `note` (the person's own message in place of finishing a batch),
/// after trimming.
pub const MAX_NOTE_CHARS: usize = 8_192;
/// Longest asker name (`asked_by.name`).
pub const MAX_ASKER_NAME: usize = 128;
/// Longest asker version (`asked_by.version`).
pub const MAX_ASKER_VERSION: usize = 64;
/// Most transcript entries the host keeps per session (the most recent).
pub const MAX_TRANSCRIPT_ENTRIES: usize = 500;
/// Most sessions `GET /api/sessions` lists.
pub const MAX_LISTED_SESSIONS: usize = 256;
/// How long a session without pending questions stays listed after its last
/// activity (24 hours, in milliseconds).
pub const LISTED_SESSION_IDLE_MS: u64 = 24 * 60 * 60 * 1000;
/// Longest `first_question` preview of a listed session.
pub const MAX_FIRST_QUESTION_CHARS: usize = 200;
/// The inbox stream sends at most one `inbox/changed` per this many
/// milliseconds.
pub const INBOX_COALESCE_MS: u64 = 100;
/// Longest person name or role (`audience`, `escalate_after.role`, `ask-user
/// people add`).
pub const MAX_AUDIENCE_NAME_CHARS: usize = 64;
/// Longest `escalate_after.seconds`: a week.
pub const MAX_ESCALATE_AFTER_SECS: u64 = 7 * 24 * 60 * 60;
