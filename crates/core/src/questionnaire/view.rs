//! The view model (crux's `view`): everything a composer shows, computed from
//! the state as one owned, plain-data value. A shell renders from it and from
//! nothing else, so every presentation rule (which text box, which chip, which
//! buttons are enabled, where focus goes) is here and tested natively.

use super::query::effective_selected;
use super::types::*;
use crate::display::neutralised;
use crate::recommend::recommendation;

/// Everything the question composer shows. Build it with [`view`] after every
/// [`apply`](super::apply).
///
/// Per-request metadata (who asked, when) belongs in [`RequestView`]; page-wide
/// facts (how many wait, the notice) at the top.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewModel {
    /// True while anything is pending: the question composer holds the slot and
    /// the normal composer is hidden.
    pub slot_taken: bool,
    /// The request shown: the oldest pending one.
    pub active: Option<RequestView>,
    /// How many requests wait behind the active one.
    pub waiting: usize,
    /// Something to tell the person that outlives its request, with a Dismiss
    /// button ([`Action::DismissNotice`]).
    pub notice: Option<Notice>,
    /// Where DOM focus should go. Apply each new version once, after the render
    /// of the same state.
    pub focus: Option<Versioned<FocusTarget>>,
    /// What the live region says. Each new version must change the region's
    /// content, even when the words repeat.
    pub announcement: Option<Versioned<Announcement>>,
}

/// The active request, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestView {
    /// The host's id of the ask.
    pub id: String,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
    /// The text of its first question (the tab title and notifications name it).
    pub first_question: String,
    /// Who asked (the asker's name, at most 64 characters), when the host knows.
    pub asked_by: Option<String>,
    /// When the request's `escalate_after` widens its audience (Unix ms) and
    /// to which role: the card says "escalated to ROLE" from then on.
    pub escalates: Option<(u64, String)>,
    /// Editing, sending, sent or failed.
    pub phase: Phase,
    /// The person can change things: options, text and every button but the
    /// collapse toggle are enabled.
    pub can_edit: bool,
    /// The sending or failure line under the body, if any.
    pub status_line: Option<StatusLine>,
    /// Folded to its header strip: render the strip only, never the body.
    pub collapsed: bool,
    /// No call waits on it (the agent stopped waiting): say so calmly under the
    /// strip; it stays answerable and its answer is kept for the agent's next ask.
    pub detached: bool,
    /// The strip's chip.
    pub chip: Option<Chip>,
    /// "2 of 3", for a batch of more than one item (never in plan review).
    pub progress: Option<Progress>,
    /// The card below the strip.
    pub body: Body,
    /// The "Reply instead" box, while open.
    pub reply: Option<ReplyView>,
}

/// The "Reply instead" box: a message in place of finishing the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyView {
    /// The text as typed.
    pub text: String,
    /// The reply is not blank, so "Send reply" posts it.
    pub can_send: bool,
}

/// What a request is doing (`data-status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The person can edit it.
    Editing,
    /// A POST is in flight.
    Sending,
    /// The host accepted the POST; waiting for `question/resolved`.
    Sent,
    /// The last POST failed; still editable.
    Failed,
}

impl Phase {
    /// The lowercase name, e.g. `"sending"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Editing => "editing",
            Phase::Sending => "sending",
            Phase::Sent => "sent",
            Phase::Failed => "failed",
        }
    }
}

/// A status line: a localised key, plus the failure's readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    /// Which line.
    pub key: StatusKey,
    /// Why it failed (for the failure keys).
    pub message: Option<String>,
}

/// A text key for the request's status line; the component localises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusKey {
    /// "Sending…" (also while waiting for the host to resolve it).
    SendingAnswer,
    /// "Cancelling…" (also while waiting for the host to resolve it).
    SendingCancel,
    /// "Could not send your answer:" and the message.
    AnswerFailed,
    /// "Could not cancel:" and the message.
    CancelFailed,
}

/// The strip's chip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chip {
    /// The current item's `header`, as shown ([`crate::display::neutralise`]d).
    Header(String),
    /// "Plan review" (localised).
    PlanReview,
}

/// "2 of 3": the current item (1-based) and the number of items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Progress {
    /// The current item, 1-based.
    pub current: usize,
    /// How many items the request has.
    pub total: usize,
}

impl std::fmt::Display for Progress {
    /// English form, e.g. `2 of 3`; localised UIs format the numbers themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {}", self.current, self.total)
    }
}

/// What the card shows below the strip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// One item of the generic flow.
    Item(ItemView),
    /// The plan-review panel.
    PlanReview(PlanView),
}

/// One item of the generic flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    /// The item's index (0-based).
    pub index: usize,
    /// The question, as shown: every text meant for the eye in the view model
    /// is [`crate::display::neutralise`]d (bidi controls and zero-width
    /// characters made visible); only [`OptionRow::label`] is as sent.
    pub question: String,
    /// The question's `detail`, as shown: Markdown, which the composer renders
    /// as core's sanitised subset ([`crate::markdown`]).
    pub detail: Option<String>,
    /// Checkboxes ("Choose any") rather than radios ("Choose one").
    pub multi_select: bool,
    /// The options, in order (empty for a free-text item).
    pub options: Vec<OptionRow>,
    /// The free-text box.
    pub text_box: TextBox,
    /// One step per item for the footer's progress dots; empty for a single item.
    pub steps: Vec<Step>,
    /// "Back" is enabled.
    pub can_go_back: bool,
    /// "Next" is enabled.
    pub can_go_next: bool,
    /// Every item is answered or skipped, so "Submit" posts. Otherwise Submit
    /// (still clickable) moves to the next open item and says what is missing.
    pub can_submit: bool,
}

/// One option of the current item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionRow {
    /// 0-based index.
    pub index: usize,
    /// The label as sent (what is returned when chosen).
    pub label: String,
    /// The label to show: without the ` (Recommended)` suffix when recommended,
    /// neutralised.
    pub display: String,
    /// Show a "Recommended" badge. Never implies selection or focus.
    pub recommended: bool,
    /// What choosing it means.
    pub description: Option<String>,
    /// Chosen (checked) in the current answer.
    pub selected: bool,
    /// The one tab stop among the options (roving tabindex).
    pub focused: bool,
    /// The digit key that chooses it (`1`–`9`), for the first nine options.
    pub number_key: Option<u8>,
}

/// The current item's free-text box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextBox {
    /// How it is named.
    pub role: TextBoxRole,
    /// The text as typed.
    pub value: String,
}

/// How the free-text box is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextBoxRole {
    /// An optionless item: the box is the answer ("Your answer").
    YourAnswer,
    /// An item with options: the box is the "Other" answer.
    Other,
}

/// One item's progress dot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Step {
    /// Answered, skipped or open.
    pub state: ItemState,
    /// The item shown.
    pub current: bool,
}

/// The plan-review panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanView {
    /// The question, as shown.
    pub question: String,
    /// The plan: the question's `detail`, Markdown.
    pub plan: String,
    /// The approve button's label (without the recommendation suffix).
    pub approve: String,
    /// The decline button's label, when the question has another option.
    pub decline: Option<String>,
}

/// The most characters of an asker's name the card shows.
pub const MAX_SHOWN_ASKER_CHARS: usize = 64;

/// The view model of `state`.
pub fn view(state: &Questionnaire) -> ViewModel {
    ViewModel {
        slot_taken: state.slot_taken(),
        active: state.active().map(request_view),
        waiting: state.waiting_count(),
        notice: state.notice.clone(),
        focus: state.focus,
        announcement: state.announcement.clone().map(shown_announcement),
    }
}

/// The live region reads the question as the page shows it.
fn shown_announcement(announcement: Versioned<Announcement>) -> Versioned<Announcement> {
    let Versioned { version, value } = announcement;
    let value = match value {
        Announcement::NewQuestion {
            question_id,
            question,
            pending,
        } => Announcement::NewQuestion {
            question_id,
            question: neutralised(question),
            pending,
        },
        other => other,
    };
    Versioned { version, value }
}

impl ViewModel {
    /// How many requests are pending: the active one and those behind it.
    pub fn pending(&self) -> usize {
        usize::from(self.active.is_some()) + self.waiting
    }

    /// The item shown, when the active request is in the generic flow.
    pub fn item(&self) -> Option<&ItemView> {
        match &self.active.as_ref()?.body {
            Body::Item(item) => Some(item),
            Body::PlanReview(_) => None,
        }
    }

    /// The option at `index` of the item shown.
    pub fn option(&self, index: usize) -> Option<&OptionRow> {
        self.item()?.options.get(index)
    }
}

fn request_view(request: &PendingRequest) -> RequestView {
    let body = match request.mode {
        Mode::PlanReview { approve, decline } => {
            Body::PlanReview(plan_view(request, approve, decline))
        }
        Mode::Generic => Body::Item(item_view(request)),
    };
    let question = request.current_question();
    let chip = match body {
        Body::PlanReview(_) => Some(Chip::PlanReview),
        Body::Item(_) => question.header.clone().map(neutralised).map(Chip::Header),
    };
    let progress = (request.len() > 1 && !request.is_plan_review()).then_some(Progress {
        current: request.drafts.current + 1,
        total: request.len(),
    });
    RequestView {
        id: request.id.clone(),
        created_at_ms: request.created_at_ms,
        first_question: neutralised(request.request.questions[0].question.clone()),
        asked_by: request.asked_by.as_ref().map(|a| {
            crate::attention::shorten(&neutralised(a.name.clone()), MAX_SHOWN_ASKER_CHARS)
        }),
        escalates: request
            .request
            .escalates_at_ms(request.created_at_ms)
            .zip(request.request.escalate_after.as_ref())
            .map(|(at, e)| (at, e.role.clone())),
        phase: match request.status {
            Status::Editing => Phase::Editing,
            Status::Sending(_) => Phase::Sending,
            Status::Sent(_) => Phase::Sent,
            Status::Failed { .. } => Phase::Failed,
        },
        can_edit: request.is_editable(),
        status_line: status_line(&request.status),
        collapsed: request.collapsed,
        detached: request.detached,
        chip,
        progress,
        body,
        reply: request.drafts.reply.as_ref().map(|text| ReplyView {
            text: text.clone(),
            can_send: !text.trim().is_empty(),
        }),
    }
}

fn status_line(status: &Status) -> Option<StatusLine> {
    let (key, message) = match status {
        Status::Editing => return None,
        Status::Sending(SendKind::Answer) | Status::Sent(SendKind::Answer) => {
            (StatusKey::SendingAnswer, None)
        }
        Status::Sending(SendKind::Cancel) | Status::Sent(SendKind::Cancel) => {
            (StatusKey::SendingCancel, None)
        }
        Status::Failed { kind, failure } => {
            let key = match kind {
                SendKind::Answer => StatusKey::AnswerFailed,
                SendKind::Cancel => StatusKey::CancelFailed,
            };
            (key, Some(failure.message.clone()))
        }
    };
    Some(StatusLine { key, message })
}

fn item_view(request: &PendingRequest) -> ItemView {
    let question = request.current_question();
    let draft = request.current_draft();
    let chosen = effective_selected(question, draft);
    let options = question
        .options()
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let shown = recommendation(&option.label);
            OptionRow {
                index,
                label: option.label.clone(),
                display: neutralised(shown.display.to_owned()),
                recommended: shown.recommended,
                description: option.description.clone().map(neutralised),
                selected: chosen.contains(&option.label),
                focused: request.option_focus == Some(index),
                number_key: u8::try_from(index + 1).ok().filter(|n| *n <= 9),
            }
        })
        .collect();
    let role = if question.has_options() {
        TextBoxRole::Other
    } else {
        TextBoxRole::YourAnswer
    };
    let steps = if request.len() > 1 {
        (0..request.len())
            .map(|i| Step {
                state: request.item_state(i),
                current: i == request.drafts.current,
            })
            .collect()
    } else {
        Vec::new()
    };
    ItemView {
        index: request.drafts.current,
        question: neutralised(question.question.clone()),
        detail: question.detail.clone().map(neutralised),
        multi_select: question.is_multi_select(),
        options,
        text_box: TextBox {
            role,
            value: draft.text.clone(),
        },
        steps,
        can_go_back: request.can_go_back(),
        can_go_next: request.can_go_next(),
        can_submit: request.can_submit(),
    }
}

fn plan_view(request: &PendingRequest, approve: usize, decline: Option<usize>) -> PlanView {
    let question = &request.request.questions[0];
    let display = |index: usize| {
        neutralised(
            recommendation(&question.options()[index].label)
                .display
                .to_owned(),
        )
    };
    PlanView {
        question: neutralised(question.question.clone()),
        plan: neutralised(question.detail.clone().unwrap_or_default()),
        approve: display(approve),
        decline: decline.map(display),
    }
}
