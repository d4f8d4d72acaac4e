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
