//! Text an agent controls, made safe to show. A bidirectional override or
//! isolate (U+202A–U+202E, U+2066–U+2069) can make `Delete everything` read as
//! something else, and a zero-width character (U+200B–U+200F, U+2060, U+FEFF)
//! can make two different labels look the same. Wherever such text is shown
//! (the page, the tab title, notifications, the transcript, `ask-user history`)
//! each of these characters is replaced by a visible marker such as
//! `⟨U+202E⟩`, never dropped silently, so the person sees that something was
//! there.
//!
//! Only what is shown changes: what is stored and what is answered (an
//! option's label goes back to the agent byte for byte) stays as sent.

use std::borrow::Cow;

/// Whether `c` reorders or hides text: a bidirectional embedding, override or
/// isolate, or a zero-width character (marks included).
pub fn is_spoofing(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}' | '\u{2060}' | '\u{FEFF}'
    )
}

/// Whether a terminal would act on `c` rather than print it: C0 controls but
/// newline and tab (ESC starts an escape sequence, BEL rings), DEL, and C1
/// controls (U+0080–U+009F, among them the one-byte CSI and OSC).
pub fn is_terminal_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// The visible marker that stands for `c`, e.g. `⟨U+202E⟩`.
pub fn marker(c: char) -> String {
    format!("⟨U+{:04X}⟩", u32::from(c))
}

/// `text` with every bidirectional control and zero-width character
/// ([`is_spoofing`]) replaced by its [`marker`]; borrowed, unchanged, when it
/// has none (the common case costs one scan).
pub fn neutralise(text: &str) -> Cow<'_, str> {
    replace(text, is_spoofing)
}

/// [`neutralise`], and also every control character a terminal would act on
/// ([`is_terminal_control`]: ESC, BEL, CSI, OSC, …): for text a command prints.
pub fn neutralise_for_terminal(text: &str) -> Cow<'_, str> {
    replace(text, |c| is_spoofing(c) || is_terminal_control(c))
}

/// JSON text with every character [`neutralise_for_terminal`] would mark
/// written as a JSON escape (`\u001b`, `\u202e`) instead: the same JSON
/// value, byte for byte once parsed, that a terminal shows rather than acts
/// on. For JSON a command prints (serde_json already escapes C0 controls in
/// strings, but not DEL, C1 controls or bidi controls). Such characters occur
/// only inside strings in valid JSON, where the escape means the character
/// itself; newline and tab stay (JSON's own whitespace).
pub fn escape_json_for_terminal(json: &str) -> Cow<'_, str> {
    let hidden = |c: char| is_spoofing(c) || is_terminal_control(c);
    let Some(first) = json.find(hidden) else {
        return Cow::Borrowed(json);
    };
    let mut shown = String::with_capacity(json.len() + 16);
    shown.push_str(&json[..first]);
    for c in json[first..].chars() {
        if hidden(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                shown.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// [`neutralise`] of an owned string, without a copy when nothing changes.
pub fn neutralised(text: String) -> String {
    match neutralise(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(shown) => shown,
    }
}

fn replace(text: &str, hidden: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(&hidden) else {
        return Cow::Borrowed(text);
    };
    let mut shown = String::with_capacity(text.len() + 16);
    shown.push_str(&text[..first]);
    for c in text[first..].chars() {
        if hidden(c) {
            shown.push_str(&marker(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}
