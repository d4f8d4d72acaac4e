//! Read-only questions about the state, for `apply`, `view` and tests.
//! Rendering reads the [`ViewModel`](super::ViewModel) only.

use super::types::*;
use crate::answer::{Answer, AnswerBatch};
use crate::error::UserInteractionError;
use crate::request::{IntentKind, Question};

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

    /// The request shown: the oldest pending one (the one the page was
    /// opened on first), none while that one is still awaited.
    pub fn active(&self) -> Option<&PendingRequest> {
        if self.opened_awaited {
            return None;
        }
        self.requests.first()
    }

    /// [`active`](Self::active), to change: what the person's actions reach.
    pub(crate) fn active_mut(&mut self) -> Option<&mut PendingRequest> {
        if self.opened_awaited {
            return None;
        }
        self.requests.first_mut()
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

    /// The last notice: until dismissed, or (resolved elsewhere) until the next
    /// request arrives.
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    /// The IME composition flags (for diagnostics and tests).
    pub fn ime(&self) -> Ime {
        self.ime
    }

    /// The last focus intent (see [`ViewModel::focus`](super::ViewModel::focus)).
    pub fn focus_intent(&self) -> Option<Versioned<FocusTarget>> {
        self.focus
    }

    /// The last announcement (see
    /// [`ViewModel::announcement`](super::ViewModel::announcement)).
    pub fn announcement(&self) -> Option<&Versioned<Announcement>> {
        self.announcement.as_ref()
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

    /// Editing, sending, sent or failed.
    pub fn status(&self) -> &Status {
        &self.status
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
        AnswerBatch::new(answers).normalize(&self.request)
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
pub(crate) fn effective_selected<'a>(question: &Question, draft: &'a ItemDraft) -> &'a [String] {
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
