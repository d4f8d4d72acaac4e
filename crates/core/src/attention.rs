//! How the page tells a person that someone waits on them without taking
//! focus: the tab title, the favicon's count badge and the app badge. Pure
//! functions of how many questions wait; the composer only writes them to
//! `document.title`, the icon link and `navigator.setAppBadge`. With the inbox
//! ([`SessionList`]) they count every session, and [`arrivals`] says which
//! batches are worth a notification.

use crate::display::neutralise;
use crate::wire::SessionList;

/// The page's title when nothing waits, and the suffix of every other title.
pub const APP_TITLE: &str = "ask-user";

/// The most characters of a question the tab title shows (a tab shows ~30).
pub const MAX_TITLE_QUESTION_CHARS: usize = 60;

/// The document title: `(2) Which database? · ask-user` while 2 questions wait
/// (the first question's text, whitespace collapsed, at most
/// [`MAX_TITLE_QUESTION_CHARS`] with an ellipsis, bidi controls and zero-width
/// characters made visible), [`APP_TITLE`] when none do.
pub fn document_title(pending: usize, first_question: Option<&str>) -> String {
    if pending == 0 {
        return APP_TITLE.to_owned();
    }
    let question = first_question.map(|q| shorten(&neutralise(q), MAX_TITLE_QUESTION_CHARS));
    match question.filter(|q| !q.is_empty()) {
        Some(question) => format!("({pending}) {question} · {APP_TITLE}"),
        None => format!("({pending}) {APP_TITLE}"),
    }
}

/// `text` on one line (runs of whitespace, newlines included, become one
/// space) and at most `max` characters, the last of them `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= max {
        return words;
    }
    let mut cut: String = words.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// The count drawn in the favicon's badge: `None` when nothing waits,
/// `"1"`…`"9"`, then `"9+"` (a 16 px icon has room for two glyphs).
pub fn badge_label(pending: usize) -> Option<String> {
    match pending {
        0 => None,
        1..=9 => Some(pending.to_string()),
        _ => Some("9+".to_owned()),
    }
}

/// The favicon as SVG: a speech bubble with a question mark, and while
/// questions wait a red badge with [`badge_label`] in the corner.
pub fn favicon_svg(pending: usize) -> String {
    let mut svg = String::from(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'>\
         <path d='M4 4h24a2 2 0 0 1 2 2v16a2 2 0 0 1-2 2H13l-6 5v-5H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z' fill='#2f5fd0'/>\
         <text x='16' y='20' font-family='sans-serif' font-size='16' font-weight='700' text-anchor='middle' fill='#fff'>?</text>",
    );
    if let Some(label) = badge_label(pending) {
        let size = if label.len() > 1 { 11 } else { 14 };
        svg.push_str(&format!(
            "<circle cx='23' cy='9' r='9' fill='#d3302f' stroke='#fff' stroke-width='1.5'/>\
             <text x='23' y='14' font-family='sans-serif' font-size='{size}' font-weight='700' text-anchor='middle' fill='#fff'>{label}</text>"
        ));
    }
    svg.push_str("</svg>");
    svg
}

/// [`favicon_svg`] as a `data:` URL for `<link rel="icon" href>` (the page's
/// Content-Security-Policy allows `data:` images; no file is fetched).
pub fn favicon_data_url(pending: usize) -> String {
    let mut url = String::from("data:image/svg+xml,");
    for c in favicon_svg(pending).chars() {
        match c {
            '#' => url.push_str("%23"),
            '<' => url.push_str("%3C"),
            '>' => url.push_str("%3E"),
            '%' => url.push_str("%25"),
            '"' => url.push_str("%22"),
            c => url.push(c),
        }
    }
    url
}

/// What the tab's signals count: every session's waiting questions when the
/// inbox list is known (`sessions`), else the shown session's own; named by
/// the shown session's first question, else the most urgent session's.
pub fn waiting(
    sessions: Option<&SessionList>,
    shown_pending: usize,
    shown_first_question: Option<&str>,
) -> (usize, Option<String>) {
    let Some(list) = sessions else {
        return (shown_pending, shown_first_question.map(str::to_owned));
    };
    let others_first = || {
        list.sessions
            .iter()
            .find(|s| s.pending > 0)
            .and_then(|s| s.first_question.clone())
    };
    let total: usize = list.sessions.iter().map(|s| s.pending as usize).sum();
    // The list lags the shown session's own stream by a frame: never count less.
    let total = total.max(shown_pending);
    let first = shown_first_question
        .map(str::to_owned)
        .or_else(others_first);
    (total, first.filter(|_| total > 0))
}

/// A batch that arrived between two inbox lists: worth one notification.
/// Its texts are for display ([`neutralise`]d).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// The session it waits in.
    pub session: String,
    /// Who asked (display text), when the host knows.
    pub asked_by: Option<String>,
    /// The newest batch's first question: the one that just arrived (the
    /// oldest waiting one, from a host that does not say).
    pub question: Option<String>,
    /// How many batches now wait in the session, the new one included.
    pub pending: u32,
}

/// The sessions whose pending count rose from `before` to `after` (one
/// notification each). A batch that came and went between two lists, or one
/// already resolved, rose nothing, so it is never announced; nor is anything
/// on the first list (`before` = `None`), which only says what already waits.
pub fn arrivals(before: Option<&SessionList>, after: &SessionList) -> Vec<Arrival> {
    let Some(before) = before else {
        return Vec::new();
    };
    let shown = |text: &String| neutralise(text).into_owned();
    after
        .sessions
        .iter()
        .filter(|now| {
            let was = before
                .sessions
                .iter()
                .find(|s| s.id == now.id)
                .map_or(0, |s| s.pending);
            now.pending > was
        })
        .map(|now| Arrival {
            session: now.id.clone(),
            asked_by: now.asked_by.as_ref().map(|a| shown(&a.name)),
            question: now
                .newest_question
                .as_ref()
                .or(now.first_question.as_ref())
                .map(shown),
            pending: now.pending,
        })
        .collect()
}

/// How long ago something happened, in whole units for a card's "2 min ago":
/// under a minute is [`Age::JustNow`]; then minutes, hours, days. A clock
/// behind the host's counts as just now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Age {
    /// Less than a minute.
    JustNow,
    /// Whole minutes (1–59).
    Minutes(u64),
    /// Whole hours (1–23).
    Hours(u64),
    /// Whole days.
    Days(u64),
}

/// The [`Age`] of `then_ms` at `now_ms` (Unix milliseconds).
pub fn age(then_ms: u64, now_ms: u64) -> Age {
    let minutes = now_ms.saturating_sub(then_ms) / 60_000;
    match minutes {
        0 => Age::JustNow,
        1..=59 => Age::Minutes(minutes),
        60..=1439 => Age::Hours(minutes / 60),
        _ => Age::Days(minutes / 1440),
    }
}
