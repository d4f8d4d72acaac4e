//! The questionnaire state machine: everything a composer does with pending
//! questions, as plain data and one pure function.
//!
//! ```text
//! DOM event / stream frame / POST result ──► Action
//!                                             │
//!                     apply(&mut Questionnaire, Action) -> Vec<Effect>
//!                                             │
//!     render view(&Questionnaire) -> ViewModel ◄─┴─► perform each Effect
//!     (and its focus / announcement intents)        (network, storage, timer)
//! ```
//!
//! No clock, no randomness, no I/O: time (`created_at_ms`) and ids arrive inside
//! actions, so every rule is a native test and any front end (Leptos, a TUI, a
//! test) can drive it.
//!
//! # Driving it from a component
//!
//! 1. Keep one [`Questionnaire`] per session (e.g. in a signal) and render from
//!    one [`ViewModel`], recomputed with [`view`] whenever the state changes:
//!    the component reads nothing else.
//! 2. Forward facts as [`Action`]s, call [`apply`] and perform every returned
//!    [`Effect`] in order (POSTs, sessionStorage, the IME tick,
//!    `preventDefault()`):
//!    - stream frames: [`Action::FrameReceived`] with the parsed
//!      [`SessionEvent`](crate::wire::SessionEvent);
//!    - clicks: [`Action::OptionChosen`], [`Action::OptionToggled`],
//!      [`Action::Skip`], [`Action::Back`], [`Action::Next`], [`Action::GoTo`],
//!      [`Action::Submit`], [`Action::Close`], [`Action::Collapse`],
//!      [`Action::Expand`], and in plan review [`Action::Approve`],
//!      [`Action::Decline`], [`Action::ChatAboutIt`];
//!    - the free-text box's `input` event: [`Action::DraftEdited`];
//!    - **every** `keydown` inside the slot as [`Action::Key`] with the raw facts
//!      ([`KeyInput`]: [`Key::from_dom`], [`KeyTarget::from_dom`], the
//!      modifiers, `isComposing`, `keyCode`). Call `preventDefault()` only when
//!      the effects include [`Effect::PreventDefault`];
//!    - `compositionstart` / `compositionend` / `blur` of the text box:
//!      [`Action::CompositionStart`], [`Action::CompositionEnd`], [`Action::Blur`];
//!      when [`Effect::ScheduleTick`] comes back, dispatch [`Action::Tick`] on the
//!      next macrotask (`setTimeout(0)`);
//!    - focus landing on an option (click or Tab): [`Action::OptionFocused`];
//!    - POST results: [`Action::SubmitSucceeded`] / [`Action::SubmitFailed`]
//!      (for answers and cancels alike);
//!    - a sessionStorage read asked for by [`Effect::LoadDrafts`]:
//!      [`Action::DraftsRestored`].
//! 3. Apply the view model's DOM intents once per new version:
//!    [`ViewModel::focus`] (after the render of the same state) and
//!    [`ViewModel::announcement`] (the live region).
//!
//! # Rules (each one a test in `crates/core/tests/questionnaire_*.rs`)
//!
//! - Every pending request is kept, ordered oldest first (`created_at_ms`, then
//!   arrival); the slot shows the oldest ([`Questionnaire::active`]). A replayed
//!   `question/requested` with a known id changes nothing; `question/resolved`
//!   removes the request at once; `session/synced` drops every request it does
//!   not list.
//! - `question/detached` marks a request as one no call waits on
//!   ([`RequestView::detached`]); `question/attached` and a replayed
//!   `question/requested` clear the mark (a replay repeats `question/detached`
//!   when it still holds). Nothing else changes: it stays answerable, drafts
//!   and focus stay.
//! - Choosing a single-select option records it and moves to the next item; on
//!   the last item it stays and does not submit. On a single-select item the
//!   options and the "Other" text are exclusive, like core's answer semantics:
//!   choosing an option clears the text, non-empty text clears the choice.
//! - Text is an item's answer as soon as it is non-empty (after trimming).
//! - Enter submits when every item is answered or skipped; otherwise it moves to
//!   the next unanswered item. A partial batch is never posted. Shift+Enter and
//!   Enter while composing (IME) do nothing here, so the browser inserts a newline
//!   or confirms the candidate.
//! - IME: a keydown counts as composing when `isComposing`, when `keyCode == 229`,
//!   between `compositionstart` and `compositionend`, and for the one keydown right
//!   after `compositionend` (that flag is cleared by the next [`Action::Tick`] and
//!   by [`Action::Blur`]); see [`Ime`], which the normal composer shares.
//! - Keys with Ctrl, Alt or Meta are the browser's; Enter and Space on a button
//!   or link are that control's own activation.
//! - Skip turns the current item into `{id, selected: []}` (its choice and text are
//!   cleared), moves to the next item (stays on the last), and leaves every other
//!   item alone. A skipped item can be revisited and answered.
//! - The recommended option (label ending ` (Recommended)`) gets a badge in
//!   [`OptionRow`], and is never pre-selected, never focused first, and never
//!   chosen by Enter.
//! - Close posts a cancel for the whole request. After a submit or close the
//!   request shows as sending until `question/resolved` removes it. A failed POST
//!   keeps everything and shows the error; `409 NOT_PENDING`
//!   ([`is_not_pending`](crate::wire::is_not_pending)) removes the request and
//!   leaves a [`Notice`].
//! - At most [`MAX_PENDING_REQUESTS`] requests are held; one more (or one that
//!   breaks core's rules) is reported with [`Notice::CannotShow`], never
//!   dropped in silence.
//! - Collapse/expand never cancels and never touches drafts.
//! - Drafts are [`Drafts`] (serde), persisted per question id through
//!   [`Effect::PersistDrafts`] and restored through [`Action::DraftsRestored`].

mod apply;
mod query;
mod types;
mod view;

pub use apply::apply;
pub use query::plan_review_mode;
pub use types::*;
pub use view::*;
