//! Keyboard policy for both composers: which keydowns act, with which modifiers
//! and on which element, and when a keydown belongs to an input method (IME)
//! instead. The question composer forwards every keydown to the questionnaire
//! ([`Action::Key`](crate::questionnaire::Action::Key)); the normal composer's
//! message box asks [`sends_message`]. Both keep one [`Ime`].
//!
//! A shell only translates DOM facts: [`Key::from_dom`] for `KeyboardEvent.key`,
//! [`KeyTarget::from_dom`] for the focused element; every decision is here.

/// A keydown, as raw facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInput {
    /// Which key.
    pub key: Key,
    /// `event.shiftKey`.
    pub shift: bool,
    /// A browser or system shortcut, never one of ours
    /// ([`KeyInput::is_shortcut`] of the event's modifiers).
    pub shortcut: bool,
    /// `event.isComposing`.
    pub is_composing: bool,
    /// `event.keyCode` (229 while an IME handles the key).
    pub key_code: u32,
    /// What kind of element has focus.
    pub target: KeyTarget,
}

impl KeyInput {
    /// A plain keydown of `key` on the composer itself (no modifier, not composing).
    pub fn plain(key: Key) -> Self {
        Self {
            key,
            shift: false,
            shortcut: false,
            is_composing: false,
            key_code: 0,
            target: KeyTarget::Other,
        }
    }

    /// A plain keydown of `key` in a free-text box.
    pub fn in_text_box(key: Key) -> Self {
        Self {
            target: KeyTarget::TextBox,
            ..Self::plain(key)
        }
    }

    /// Whether a keydown with these modifiers (`event.ctrlKey`, `altKey`,
    /// `metaKey`) is a browser or system shortcut, which the composers never
    /// act on: any of the three makes it one; Shift alone does not (it is part
    /// of Shift+Enter, a newline).
    pub fn is_shortcut(ctrl: bool, alt: bool, meta: bool) -> bool {
        ctrl || alt || meta
    }

    /// Enter and Space on a button or link are its own activation (Skip, Cancel,
    /// a link in the plan): the composer leaves them alone entirely.
    pub fn activates_control(&self) -> bool {
        self.target == KeyTarget::Button && matches!(self.key, Key::Enter | Key::Space)
    }
}

/// The keys the composers act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// `Enter`.
    Enter,
    /// A digit key `1`–`9` (the value; `0` is [`Key::Other`]).
    Digit(u8),
    /// `ArrowUp` (and `ArrowLeft`).
    ArrowUp,
    /// `ArrowDown` (and `ArrowRight`).
    ArrowDown,
    /// The space bar.
    Space,
    /// Any other key.
    Other,
}

impl Key {
    /// The key from `KeyboardEvent.key`.
    pub fn from_dom(key: &str) -> Self {
        match key {
            "Enter" => Key::Enter,
            "ArrowUp" | "ArrowLeft" | "Up" | "Left" => Key::ArrowUp,
            "ArrowDown" | "ArrowRight" | "Down" | "Right" => Key::ArrowDown,
            " " | "Spacebar" => Key::Space,
            _ => match key.as_bytes() {
                [d @ b'1'..=b'9'] => Key::Digit(d - b'0'),
                _ => Key::Other,
            },
        }
    }
}

/// Where a keydown happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyTarget {
    /// A free-text box: digits, Space and arrows type or move the caret there.
    TextBox,
    /// An option of the current item: focus follows the option a key chooses.
    Option,
    /// A button or a link: Enter and Space are its own activation.
    Button,
    /// Anything else (the composer's panel itself).
    Other,
}

impl KeyTarget {
    /// From the focused element: its tag name (`Element.tagName`) and whether it
    /// is one of the composer's options.
    pub fn from_dom(tag_name: &str, is_option: bool) -> Self {
        if is_option {
            return KeyTarget::Option;
        }
        let is = |name: &str| tag_name.eq_ignore_ascii_case(name);
        if is("TEXTAREA") || is("INPUT") {
            KeyTarget::TextBox
        } else if is("BUTTON") || is("A") {
            KeyTarget::Button
        } else {
            KeyTarget::Other
        }
    }
}

/// IME composition: one state machine for every text box.
///
/// A keydown belongs to the input method (it confirms a candidate, it never
/// acts) when it says `isComposing`, when its `keyCode` is 229, between
/// `compositionstart` and `compositionend`, and for the one keydown right after
/// `compositionend` (Safari sends the confirming Enter then, with neither flag).
/// That last window closes at the next [`Ime::tick`] (the shell calls it on the
/// next macrotask after [`Ime::composition_end`]) or [`Ime::blur`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ime {
    /// Between `compositionstart` and `compositionend`.
    pub composing: bool,
    /// `compositionend` happened and no keydown, tick or blur has followed yet.
    pub just_ended: bool,
}

impl Ime {
    /// `compositionstart`.
    pub fn composition_start(&mut self) {
        self.composing = true;
    }

    /// `compositionend`; the shell calls [`Ime::tick`] on the next macrotask.
    pub fn composition_end(&mut self) {
        self.composing = false;
        self.just_ended = true;
    }

    /// The next macrotask after `compositionend`.
    pub fn tick(&mut self) {
        self.just_ended = false;
    }

    /// The text box lost focus: no composition survives it.
    pub fn blur(&mut self) {
        *self = Ime::default();
    }

    /// Whether `key` belongs to the input method. Consumes the window after
    /// `compositionend`, whichever key arrives.
    pub fn claims(&mut self, key: &KeyInput) -> bool {
        let just_ended = std::mem::take(&mut self.just_ended);
        key.is_composing || key.key_code == 229 || self.composing || just_ended
    }
}

/// The normal composer's message box: Enter sends (Ctrl/Meta+Enter too, the
/// usual send shortcut); Shift+Enter inserts a newline and Enter during IME
/// composition only confirms the candidate. When it returns true, the shell
/// prevents the default and sends.
pub fn sends_message(ime: &mut Ime, key: &KeyInput) -> bool {
    !ime.claims(key) && key.key == Key::Enter && !key.shift
}
