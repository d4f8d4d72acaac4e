//! Read-only views of the questionnaire for rendering.

use super::types::*;
use crate::answer::{Answer, AnswerBatch};
use crate::error::UserInteractionError;
use crate::recommend::recommendation;
use crate::request::{IntentKind, Question};

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

/// One option of the current item, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionView<'a> {
    /// 0-based index (number key `index + 1` chooses it).
    pub index: usize,
    /// The label as sent (what is returned when chosen).
    pub label: &'a str,
    /// The label to show: without the ` (Recommended)` suffix when recommended.
    pub display: &'a str,
    /// Show a "Recommended" badge. Never implies selection or focus.
    pub recommended: bool,
    /// What choosing it means.
    pub description: Option<&'a str>,
    /// Chosen (checked) in the current answer.
    pub selected: bool,
    /// Has option focus (roving tabindex target).
    pub focused: bool,
}

/// How the free-text box is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextBoxRole {
    /// An optionless item: the box is the answer ("Your answer").
    YourAnswer,
    /// An item with options: the box is the "Other" answer.
    Other,
}

/// A text key for the request's status line; the component localises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusKey {
    /// "Sending your answer…" (also while waiting for the host to resolve it).
    SendingAnswer,
    /// "Cancelling…" (also while waiting for the host to resolve it).
    SendingCancel,
    /// "Could not send your answer: {message}"; see [`PendingRequest::failure`].
    AnswerFailed,
    /// "Could not cancel: {message}"; see [`PendingRequest::failure`].
    CancelFailed,
}

impl Questionnaire {
    /// An empty questionnaire: nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// True while anything is pending: the question composer owns the slot and
    /// the normal composer is hidden.
    pub fn slot_taken(&self) -> bool {
        !self.requests.is_empty()
    }

    /// The request shown: the oldest pending one.
    pub fn active(&self) -> Option<&PendingRequest> {
        self.requests.first()
    }

    /// Every pending request, oldest first.
    pub fn pending(&self) -> &[PendingRequest] {
        &self.requests
    }

    /// How many requests wait behind the active one.
    pub fn waiting_count(&self) -> usize {
        self.requests.len().saturating_sub(1)
    }

    /// The pending request with this host id.
    pub fn get(&self, question_id: &str) -> Option<&PendingRequest> {
        self.requests.iter().find(|r| r.id == question_id)
    }

    /// The last notice, until dismissed or a new request arrives.
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    /// The IME composition flags (for diagnostics and tests).
    pub fn ime(&self) -> Ime {
        self.ime
    }
}

impl PendingRequest {
    /// The current item's index (0-based).
    pub fn current_index(&self) -> usize {
        self.drafts.current
    }

    /// The current item's question.
    pub fn current_question(&self) -> &Question {
        &self.request.questions[self.drafts.current]
    }

    /// The current item's draft.
    pub fn current_draft(&self) -> &ItemDraft {
        &self.drafts.items[self.drafts.current]
    }

    /// "2 of 3".
    pub fn progress(&self) -> Progress {
        Progress {
            current: self.drafts.current + 1,
            total: self.request.questions.len(),
        }
    }

    /// How many items the request has.
    pub fn len(&self) -> usize {
        self.request.questions.len()
    }

    /// Always false: a request has at least one item.
    pub fn is_empty(&self) -> bool {
        self.request.questions.is_empty()
    }

    /// Whether the item at `index` is answered, skipped or open.
    pub fn item_state(&self, index: usize) -> ItemState {
        match (
            self.request.questions.get(index),
            self.drafts.items.get(index),
        ) {
            (Some(question), Some(draft)) => item_state(question, draft),
            _ => ItemState::Unanswered,
        }
    }

    /// How many items are neither answered nor skipped.
    pub fn unanswered_count(&self) -> usize {
        (0..self.len())
            .filter(|&i| self.item_state(i) == ItemState::Unanswered)
            .count()
    }

    /// Every item is answered or skipped.
    pub fn is_complete(&self) -> bool {
        self.unanswered_count() == 0
    }

    /// No call waits on it: show that the agent stopped waiting and that the
    /// answer is kept for it (the request stays answerable).
    pub fn is_detached(&self) -> bool {
        self.detached
    }

    /// The person can change things (not sending, not sent).
    pub fn is_editable(&self) -> bool {
        matches!(self.status, Status::Editing | Status::Failed { .. })
    }

    /// "Submit" is enabled: complete and editable.
    pub fn can_submit(&self) -> bool {
        self.is_editable() && self.is_complete()
    }

    /// "Back" is enabled.
    pub fn can_go_back(&self) -> bool {
        self.is_editable() && self.drafts.current > 0
    }

    /// "Next" is enabled.
    pub fn can_go_next(&self) -> bool {
        self.is_editable() && self.drafts.current + 1 < self.len()
    }

    /// The current item is the last.
    pub fn is_last_item(&self) -> bool {
        self.drafts.current + 1 >= self.len()
    }

    /// Editing, sending, sent or failed.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The status line to show, if any.
    pub fn status_key(&self) -> Option<StatusKey> {
        match &self.status {
            Status::Editing => None,
            Status::Sending(SendKind::Answer) | Status::Sent(SendKind::Answer) => {
                Some(StatusKey::SendingAnswer)
            }
            Status::Sending(SendKind::Cancel) | Status::Sent(SendKind::Cancel) => {
                Some(StatusKey::SendingCancel)
            }
            Status::Failed {
                kind: SendKind::Answer,
                ..
            } => Some(StatusKey::AnswerFailed),
            Status::Failed {
                kind: SendKind::Cancel,
                ..
            } => Some(StatusKey::CancelFailed),
        }
    }

    /// The failure behind a failed status.
    pub fn failure(&self) -> Option<&Failure> {
        match &self.status {
            Status::Failed { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// Presented as a plan review.
    pub fn is_plan_review(&self) -> bool {
        matches!(self.mode, Mode::PlanReview { .. })
    }

    /// The plan (the question's `detail`, Markdown) when in plan-review mode.
    pub fn plan(&self) -> Option<&str> {
        match self.mode {
            Mode::PlanReview { .. } => self.request.questions[0].detail.as_deref(),
            Mode::Generic => None,
        }
    }

    /// Plan review: the approve option's label, as displayed (without the
    /// recommendation suffix).
    pub fn approve_label(&self) -> Option<&str> {
        match self.mode {
            Mode::PlanReview { approve, .. } => {
                Some(recommendation(&self.request.questions[0].options()[approve].label).display)
            }
            Mode::Generic => None,
        }
    }

    /// Plan review: the decline option's label, as displayed, if there is one.
    pub fn decline_label(&self) -> Option<&str> {
        match self.mode {
            Mode::PlanReview {
                decline: Some(decline),
                ..
            } => Some(recommendation(&self.request.questions[0].options()[decline].label).display),
            _ => None,
        }
    }

    /// The current item's options, ready to render (empty when optionless).
    pub fn options_view(&self) -> Vec<OptionView<'_>> {
        let question = self.current_question();
        let draft = self.current_draft();
        let effective = effective_selected(question, draft);
        question
            .options()
            .iter()
            .enumerate()
            .map(|(index, option)| {
                let r = recommendation(&option.label);
                OptionView {
                    index,
                    label: &option.label,
                    display: r.display,
                    recommended: r.recommended,
                    description: option.description.as_deref(),
                    selected: effective.contains(&option.label),
                    focused: self.option_focus == Some(index),
                }
            })
            .collect()
    }

    /// The current item's free text, as typed.
    pub fn text(&self) -> &str {
        &self.current_draft().text
    }

    /// How the current item's text box is named.
    pub fn text_box_role(&self) -> TextBoxRole {
        if self.current_question().has_options() {
            TextBoxRole::Other
        } else {
            TextBoxRole::YourAnswer
        }
    }

    /// The answer batch as it would be sent now: unanswered items count as
    /// skipped here, so call it only when [`PendingRequest::is_complete`] for a
    /// real submission. Normalised through [`AnswerBatch::normalize`].
    pub fn answer_batch(&self) -> Result<AnswerBatch, UserInteractionError> {
        let answers = self
            .request
            .questions
            .iter()
            .zip(&self.drafts.items)
            .map(|(question, draft)| answer_of(question, draft))
            .collect();
        AnswerBatch { answers }.normalize(&self.request)
    }
}

impl KeyInput {
    /// A keydown from its DOM facts: `key` is `KeyboardEvent.key`.
    pub fn from_dom(
        key: &str,
        shift: bool,
        is_composing: bool,
        key_code: u32,
        in_text_box: bool,
    ) -> Self {
        Self {
            key: Key::from_dom(key),
            shift,
            is_composing,
            key_code,
            in_text_box,
        }
    }

    /// A plain keydown of `key` outside the text box, not composing.
    pub fn plain(key: Key) -> Self {
        Self {
            key,
            shift: false,
            is_composing: false,
            key_code: 0,
            in_text_box: false,
        }
    }
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

/// Whether `question` fits the plan-review panel, and how.
pub fn plan_review_mode(request: &crate::request::AskRequest) -> Mode {
    let [question] = request.questions.as_slice() else {
        return Mode::Generic;
    };
    let Some(intent) = &question.intent else {
        return Mode::Generic;
    };
    if intent.kind != IntentKind::PlanReview
        || question.is_multi_select()
        || question
            .detail
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
    {
        return Mode::Generic;
    }
    let options = question.options();
    let Some(approve) = options.iter().position(|o| o.label == intent.approve) else {
        return Mode::Generic;
    };
    let decline = (0..options.len()).find(|&i| i != approve);
    Mode::PlanReview { approve, decline }
}

/// Whether an item is answered, skipped or open.
pub(crate) fn item_state(question: &Question, draft: &ItemDraft) -> ItemState {
    let has_text = !draft.text.trim().is_empty();
    let has_choice = question.has_options() && !draft.selected.is_empty();
    if has_text || has_choice {
        ItemState::Answered
    } else if draft.skipped {
        ItemState::Skipped
    } else {
        ItemState::Unanswered
    }
}

/// The labels that count: on single-select, non-empty text overrides the choice.
fn effective_selected<'a>(question: &Question, draft: &'a ItemDraft) -> &'a [String] {
    if !question.is_multi_select() && !draft.text.trim().is_empty() {
        &[]
    } else {
        &draft.selected
    }
}

/// The answer an item's draft stands for (before normalisation).
pub(crate) fn answer_of(question: &Question, draft: &ItemDraft) -> Answer {
    if item_state(question, draft) != ItemState::Answered {
        return Answer::skipped(question.id.clone());
    }
    let text = draft.text.trim();
    Answer {
        id: question.id.clone(),
        selected: effective_selected(question, draft).to_vec(),
        custom: (!text.is_empty()).then(|| text.to_owned()),
    }
}
