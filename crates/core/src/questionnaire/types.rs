//! The data of the questionnaire: state, actions, effects.

use crate::answer::AnswerBatch;
use crate::request::AskRequest;
use crate::wire::{Outcome, SessionEvent};
use serde::{Deserialize, Serialize};

pub use crate::keys::{Ime, Key, KeyInput, KeyTarget};

/// Most requests kept at once: core's per-session limit
/// ([`MAX_PENDING_PER_SESSION`](crate::limits::MAX_PENDING_PER_SESSION)), so a
/// host that enforces it never sends more than a page holds. One more is not
/// dropped in silence: it leaves [`Notice::CannotShow`].
pub const MAX_PENDING_REQUESTS: usize = crate::limits::MAX_PENDING_PER_SESSION;

/// The whole session as the composer sees it: every pending request, oldest
/// first, plus the keyboard-composition flags, the last notice and the last
/// DOM intents.
///
/// Change it only through [`apply`](super::apply); render it through
/// [`view`](super::view).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Questionnaire {
    /// Pending requests, oldest first (`created_at_ms`, then arrival order).
    pub(crate) requests: Vec<PendingRequest>,
    /// Arrival counter: the tie-break for equal `created_at_ms`.
    pub(crate) arrivals: u64,
    /// IME composition facts.
    pub(crate) ime: Ime,
    /// Something the person should be told that outlives its request.
    pub(crate) notice: Option<Notice>,
    /// Where focus should go: the last focus intent.
    pub(crate) focus: Option<Versioned<FocusTarget>>,
    /// What the live region says: the last announcement.
    pub(crate) announcement: Option<Versioned<Announcement>>,
    /// The request the page was opened on ([`Action::ShowFirst`]): shown
    /// first while it waits, whenever it arrives.
    pub(crate) shown_first: Option<String>,
    /// The page was opened on a request that has not arrived yet, and the
    /// replay has not ended: nothing is shown until one of them happens, so
    /// an older request never flashes up, to be swapped for the opened one
    /// under the person's finger.
    pub(crate) opened_awaited: bool,
}

/// A DOM intent (move focus, say something) with a version that grows by one
/// every time the questionnaire asks for that kind of intent again, so a shell
/// performs each one exactly once, even when the same value is asked for twice
/// in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Versioned<T> {
    /// 1 for the first intent of its kind, then one more for each.
    pub version: u64,
    /// What is asked for.
    pub value: T,
}

impl<T> Versioned<T> {
    /// The intent after `previous`.
    pub(crate) fn next(previous: Option<&Self>, value: T) -> Self {
        Self {
            version: previous.map_or(0, |p| p.version) + 1,
            value,
        }
    }
}

/// One pending request (one `ask_user_question` call) and everything typed into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    /// The host's id of the ask (the `question/requested` frame's `id`).
    pub id: String,
    /// Who asked, when the host knows (display text only).
    pub asked_by: Option<crate::wire::AskedBy>,
    /// What is asked.
    pub request: AskRequest,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
    /// Arrival order in this tab (tie-break for equal `created_at_ms`).
    pub arrival: u64,
    /// How it is presented.
    pub mode: Mode,
    /// What has been chosen and typed, per item; serialisable.
    pub drafts: Drafts,
    /// Index of the focused option of the current item, if any.
    pub option_focus: Option<usize>,
    /// Editing, sending, sent or failed.
    pub status: Status,
    /// Folded to its header strip (never a cancel).
    pub collapsed: bool,
    /// True once the person (or a restore) changed something; a restore only
    /// applies to an untouched request.
    pub touched: bool,
    /// No call waits on it (`question/detached`): the agent stopped waiting.
    /// It stays answerable and its answer is kept for the agent's next,
    /// identical ask; `question/attached` clears it.
    pub detached: bool,
}

/// How a request is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One item at a time with progress, options, "Other" text, Skip, Back/Next.
    Generic,
    /// A review panel: exactly one single-select question with
    /// `intent: plan-review`, a non-empty `detail` (the plan) and an `approve`
    /// that names one of its options.
    PlanReview {
        /// Index of the approving option.
        approve: usize,
        /// Index of the declining option: the first option that is not `approve`.
        decline: Option<usize>,
    },
}

/// Everything typed and chosen in one request. Saved in sessionStorage under the
/// request's id ([`Effect::PersistDrafts`]) and given back on reload
/// ([`Action::DraftsRestored`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drafts {
    /// One entry per question, in question order.
    pub items: Vec<ItemDraft>,
    /// The item shown (0-based).
    #[serde(default)]
    pub current: usize,
    /// "Reply instead": the person's message while its box is open (untrimmed);
    /// `None` while closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

/// What was chosen and typed for one question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemDraft {
    /// The question's id.
    pub id: String,
    /// Chosen option labels, in option order (at most one on single-select).
    #[serde(default)]
    pub selected: Vec<String>,
    /// Free text ("Your answer" on an optionless item, "Other" otherwise), untrimmed.
    #[serde(default)]
    pub text: String,
    /// Deliberately skipped (answered as `{id, selected: []}`).
    #[serde(default)]
    pub skipped: bool,
}

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemState {
    /// Nothing chosen, nothing typed, not skipped.
    Unanswered,
    /// Something chosen or typed.
    Answered,
    /// Deliberately skipped.
    Skipped,
}

/// What a request is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The person can edit it.
    Editing,
    /// A POST is in flight.
    Sending(SendKind),
    /// The host accepted the POST; waiting for `question/resolved` to remove it.
    Sent(SendKind),
    /// The last POST (or the local check before it) failed; still editable,
    /// everything typed is kept.
    Failed {
        /// What was being sent.
        kind: SendKind,
        /// Why.
        failure: Failure,
    },
}

/// Which POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendKind {
    /// The answer batch.
    Answer,
    /// The cancellation of the whole request.
    Cancel,
}

/// Why a POST failed, as reported by the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status; `None` when no response arrived (network error) or the
    /// failure was found before sending.
    pub status: Option<u16>,
    /// The error body's `code` (e.g. `"BAD_ANSWER"`), when there was one.
    pub code: Option<String>,
    /// A readable message (the error body's `message`, or the transport's).
    pub message: String,
}

/// Something to tell the person that outlives the request it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A request this tab was showing went away without this tab resolving it.
    ResolvedElsewhere {
        /// The request's id.
        question_id: String,
        /// How it ended, when a `question/resolved` frame said so; `None` when a
        /// POST came back `409 NOT_PENDING` or `session/synced` dropped it.
        outcome: Option<Outcome>,
    },
    /// A request arrived that this page cannot hold or show. It is still
    /// pending at the host; the notice stays until dismissed.
    CannotShow {
        /// The request's id.
        question_id: String,
        /// Why.
        why: CannotShow,
    },
}

/// Why a `question/requested` frame was not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CannotShow {
    /// [`MAX_PENDING_REQUESTS`] requests are pending already.
    TooManyPending {
        /// The limit.
        limit: usize,
    },
    /// The request breaks core's rules (a host speaking another version).
    Invalid {
        /// Core's message.
        message: String,
    },
}

/// Something that happened. Feed it to [`apply`](super::apply).
// A frame is the common action and is moved once into `apply`: boxing it
// would cost an allocation per frame to save stack bytes nobody keeps (an
// ask's audience and escalation made requests, and so frames, larger).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A frame from the session's event stream.
    FrameReceived(SessionEvent),
    /// An option of the current item was clicked (or picked by a number key).
    /// Single-select: records it and moves to the next item. Multi-select: toggles.
    OptionChosen {
        /// 0-based option index.
        index: usize,
    },
    /// A checkbox of the current multi-select item was toggled (on single-select
    /// it chooses, like [`Action::OptionChosen`]).
    OptionToggled {
        /// 0-based option index.
        index: usize,
    },
    /// Focus landed on an option (click, Tab); arrows move from here.
    OptionFocused {
        /// 0-based option index.
        index: usize,
    },
    /// The current item's free-text box changed (its whole new value).
    DraftEdited {
        /// The text as typed, untrimmed.
        text: String,
    },
    /// A keydown inside the slot, with the raw facts. Forward every keydown,
    /// not only the ones that matter: the one after `compositionend` is consumed.
    Key(KeyInput),
    /// `compositionstart` in the text box.
    CompositionStart,
    /// `compositionend` in the text box.
    CompositionEnd,
    /// The next macrotask after [`Effect::ScheduleTick`].
    Tick,
    /// The text box lost focus.
    Blur,
    /// The footer's "Skip": skip only the current item.
    Skip,
    /// "Back": the previous item.
    Back,
    /// "Next": the next item.
    Next,
    /// Go to an item (e.g. a click on a progress dot).
    GoTo {
        /// 0-based item index.
        index: usize,
    },
    /// "Submit": post the answer batch if every item is answered or skipped.
    Submit,
    /// "Cancel questions": cancel the whole request.
    Close,
    /// "Reply instead": open the reply box, where the person writes a message
    /// in place of finishing the batch.
    ReplyInstead,
    /// The reply box changed (its whole new value).
    ReplyEdited {
        /// The text as typed, untrimmed.
        text: String,
    },
    /// "Send reply": post what is answered so far (the rest skipped) with the
    /// reply as the batch's `note`. Nothing happens while the reply is blank.
    SendReply,
    /// Close the reply box (back to the questions; its text is dropped).
    ReplyClosed,
    /// Plan review: the approve button (chooses the approve option and submits).
    Approve,
    /// Plan review: the decline button (chooses the other option and submits).
    Decline,
    /// Plan review: "Chat about it" (cancels, so the normal composer returns).
    ChatAboutIt,
    /// The answer or cancel POST for this request succeeded.
    SubmitSucceeded {
        /// The request's id.
        question_id: String,
    },
    /// The answer or cancel POST for this request failed.
    SubmitFailed {
        /// The request's id.
        question_id: String,
        /// HTTP status; `None` for a network error.
        status: Option<u16>,
        /// The error body's `code`, when there was one.
        code: Option<String>,
        /// A readable message.
        message: String,
    },
    /// Fold the active request to its header strip.
    Collapse,
    /// Unfold the active request.
    Expand,
    /// Drafts read back from sessionStorage (after [`Effect::LoadDrafts`]).
    /// Applied only to an untouched request; labels and ids that do not fit the
    /// request are dropped.
    DraftsRestored {
        /// The request's id.
        question_id: String,
        /// What was saved.
        drafts: Drafts,
    },
    /// The person dismissed the [`Notice`].
    DismissNotice,
    /// The page was opened on this request (`?q=ID`: a notification's tap):
    /// show it first while it waits, now if it is pending, else once it
    /// arrives. The others keep their order behind it.
    ShowFirst {
        /// The request's host id.
        question_id: String,
    },
}

/// Something the shell must do outside the page: POST, sessionStorage, a
/// timer, or the keydown's `preventDefault()`. Perform them in order. (Focus
/// and announcements are not effects: they are versioned values of the
/// [`ViewModel`](super::ViewModel).)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// POST the answer: `batch` is already normalised and valid for its request.
    PostAnswer {
        /// The request's id.
        question_id: String,
        /// The answers.
        batch: AnswerBatch,
    },
    /// POST the cancellation of the whole request (the agent gets `ASK_CANCELLED`).
    PostCancel {
        /// The request's id.
        question_id: String,
    },
    /// Save these drafts in sessionStorage under the request's id.
    PersistDrafts {
        /// The request's id.
        question_id: String,
        /// What to save.
        drafts: Drafts,
    },
    /// Remove the request's drafts from sessionStorage.
    ClearDrafts {
        /// The request's id.
        question_id: String,
    },
    /// Read the request's drafts from sessionStorage; if found, dispatch
    /// [`Action::DraftsRestored`] (synchronously is fine: the restore's own
    /// focus intent then replaces the arrival's).
    LoadDrafts {
        /// The request's id.
        question_id: String,
    },
    /// The keydown was handled: call `event.preventDefault()`.
    PreventDefault,
    /// Dispatch [`Action::Tick`] on the next macrotask (`setTimeout(0)`).
    ScheduleTick,
}

/// Where focus should go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FocusTarget {
    /// An option of the current item (0-based). An item with options opens with
    /// focus on its first option that is not the recommended one.
    Option(usize),
    /// The free-text box of the current item.
    TextBox,
    /// The "Reply instead" box.
    ReplyBox,
    /// The slot itself (e.g. the plan-review panel), not any control in it.
    Slot,
    /// The normal composer's message box: the slot closed.
    MessageBox,
}

/// What the live region says. The component turns it into localised text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Announcement {
    /// A new request arrived.
    NewQuestion {
        /// The request's id.
        question_id: String,
        /// The first question's text, as sent.
        question: String,
        /// How many requests are now pending in total.
        pending: usize,
    },
    /// Enter/Submit with items still open: `unanswered` items need an answer or Skip.
    Incomplete {
        /// How many items are neither answered nor skipped.
        unanswered: usize,
    },
    /// A POST failed; the message is readable and everything typed is kept.
    SendFailed {
        /// Why.
        message: String,
    },
    /// The request was resolved elsewhere (another tab, the agent, a timeout).
    ResolvedElsewhere {
        /// How it ended, if known.
        outcome: Option<Outcome>,
    },
    /// A request arrived that cannot be shown (see [`Notice::CannotShow`]).
    CannotShow(CannotShow),
}
