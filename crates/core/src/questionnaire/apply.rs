//! The transition function.

use super::types::*;
use super::view::{item_state, plan_review_mode};
use crate::request::AskRequest;
use crate::wire::{Outcome, QuestionRequested, SessionEvent};

/// Applies one action and returns what to do, in order.
///
/// Never panics, whatever the sequence. An action that does not apply (a click
/// while sending, an index out of range, a result for an unknown id) changes
/// nothing and returns no effects.
pub fn apply(state: &mut Questionnaire, action: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    match action {
        Action::FrameReceived(event) => frame(state, event, &mut fx),
        Action::Key(key) => self::key(state, key, &mut fx),
        Action::CompositionStart => state.ime.composing = true,
        Action::CompositionEnd => {
            state.ime.composing = false;
            state.ime.just_ended = true;
            fx.push(Effect::ScheduleTick);
        }
        Action::Tick => state.ime.just_ended = false,
        Action::Blur => state.ime = Ime::default(),
        Action::SubmitSucceeded { question_id } => {
            if let Some(request) = find_mut(state, &question_id)
                && let Status::Sending(kind) = request.status
            {
                request.status = Status::Sent(kind);
            }
        }
        Action::SubmitFailed {
            question_id,
            status,
            code,
            message,
        } => submit_failed(state, question_id, status, code, message, &mut fx),
        Action::DraftsRestored {
            question_id,
            drafts,
        } => restore(state, &question_id, drafts, &mut fx),
        Action::DismissNotice => state.notice = None,
        Action::Collapse => {
            if let Some(request) = state.requests.first_mut() {
                request.collapsed = true;
            }
        }
        Action::Expand => {
            if let Some(request) = state.requests.first_mut() {
                request.collapsed = false;
                fx.push(Effect::Focus(entry_focus(request)));
            }
        }
        other => edit(state, other, &mut fx),
    }
    fx
}

fn find_mut<'a>(state: &'a mut Questionnaire, id: &str) -> Option<&'a mut PendingRequest> {
    state.requests.iter_mut().find(|r| r.id == id)
}

// ── stream frames ────────────────────────────────────────────────────────────

fn frame(state: &mut Questionnaire, event: SessionEvent, fx: &mut Vec<Effect>) {
    match event {
        SessionEvent::QuestionRequested(requested) => self::requested(state, requested, fx),
        SessionEvent::QuestionResolved(resolved) => {
            remove(state, &resolved.id, Some(resolved.outcome), fx)
        }
        SessionEvent::SessionSynced(synced) => {
            let gone: Vec<String> = state
                .requests
                .iter()
                .filter(|r| !synced.pending.contains(&r.id))
                .map(|r| r.id.clone())
                .collect();
            for id in gone {
                remove(state, &id, None, fx);
            }
        }
        SessionEvent::MessageCreated(_) => {}
        SessionEvent::QuestionDetached(question) => set_detached(state, &question.id, true),
        SessionEvent::QuestionAttached(question) => set_detached(state, &question.id, false),
    }
}

/// Whether a call waits on the request; nothing else about it changes.
fn set_detached(state: &mut Questionnaire, id: &str, detached: bool) {
    if let Some(request) = find_mut(state, id) {
        request.detached = detached;
    }
}

fn requested(state: &mut Questionnaire, frame: QuestionRequested, fx: &mut Vec<Effect>) {
    // A replay (stream reopen) of a known id changes nothing but the detached
    // flag: the replay follows it with `question/detached` when no call waits.
    if let Some(known) = find_mut(state, &frame.id) {
        known.detached = false;
        return;
    }
    if state.requests.len() >= MAX_PENDING_REQUESTS || frame.request.validate().is_err() {
        return;
    }
    let was_empty = state.requests.is_empty();
    let previous_active = state.requests.first().map(|r| r.id.clone());
    let request = new_request(
        frame.id.clone(),
        frame.request,
        frame.created_at_ms,
        state.arrivals,
    );
    state.arrivals += 1;
    let position = state
        .requests
        .iter()
        .position(|r| (r.created_at_ms, r.arrival) > (request.created_at_ms, request.arrival))
        .unwrap_or(state.requests.len());
    let question = request.request.questions[0].question.clone();
    state.requests.insert(position, request);
    state.notice = None;
    fx.push(Effect::Announce(Announcement::NewQuestion {
        question_id: frame.id.clone(),
        question,
        pending: state.requests.len(),
    }));
    let active = &state.requests[0];
    if was_empty || previous_active.as_deref() != Some(active.id.as_str()) {
        fx.push(Effect::Focus(entry_focus(active)));
    }
    // Last, so a restore performed synchronously can move focus after ours.
    fx.push(Effect::LoadDrafts {
        question_id: frame.id,
    });
}

fn new_request(
    id: String,
    request: AskRequest,
    created_at_ms: u64,
    arrival: u64,
) -> PendingRequest {
    let mode = plan_review_mode(&request);
    let drafts = Drafts {
        items: request
            .questions
            .iter()
            .map(|q| ItemDraft {
                id: q.id.clone(),
                ..ItemDraft::default()
            })
            .collect(),
        current: 0,
    };
    let mut pending = PendingRequest {
        id,
        request,
        created_at_ms,
        arrival,
        mode,
        drafts,
        option_focus: None,
        status: Status::Editing,
        collapsed: false,
        touched: false,
        detached: false,
    };
    pending.option_focus = first_option_focus(&pending);
    pending
}

/// Removes a request; `outcome` is `Some` for `question/resolved`, `None` for a
/// `409 NOT_PENDING` or a `session/synced` drop.
fn remove(state: &mut Questionnaire, id: &str, outcome: Option<Outcome>, fx: &mut Vec<Effect>) {
    let Some(position) = state.requests.iter().position(|r| r.id == id) else {
        return;
    };
    let removed = state.requests.remove(position);
    fx.push(Effect::ClearDrafts {
        question_id: removed.id.clone(),
    });
    // Resolved by this tab's own POST (accepted, or in flight when the frame
    // overtook its response): nothing to explain.
    let ours = match removed.status {
        Status::Sent(_) => true,
        Status::Sending(_) => matches!(outcome, Some(Outcome::Answered | Outcome::Cancelled)),
        Status::Editing | Status::Failed { .. } => false,
    };
    if !ours {
        state.notice = Some(Notice::ResolvedElsewhere {
            question_id: removed.id,
            outcome,
        });
        fx.push(Effect::Announce(Announcement::ResolvedElsewhere {
            outcome,
        }));
    }
    if position == 0 {
        match state.requests.first() {
            Some(next) => fx.push(Effect::Focus(entry_focus(next))),
            None => fx.push(Effect::Focus(FocusTarget::MessageBox)),
        }
    }
}

fn submit_failed(
    state: &mut Questionnaire,
    id: String,
    status: Option<u16>,
    code: Option<String>,
    message: String,
    fx: &mut Vec<Effect>,
) {
    let Some(request) = find_mut(state, &id) else {
        return;
    };
    let (Status::Sending(kind) | Status::Sent(kind)) = request.status else {
        return;
    };
    if status == Some(409) || code.as_deref() == Some(crate::ErrorCode::NotPending.as_str()) {
        remove(state, &id, None, fx);
        return;
    }
    let message = readable(status, code.as_deref(), &message);
    request.status = Status::Failed {
        kind,
        failure: Failure {
            status,
            code,
            message: message.clone(),
        },
    };
    fx.push(Effect::Announce(Announcement::SendFailed { message }));
}

/// A message a person can read even when the transport said little.
fn readable(status: Option<u16>, code: Option<&str>, message: &str) -> String {
    let message = message.trim();
    match (status, code, message.is_empty()) {
        (_, _, false) => message.to_owned(),
        (None, _, true) => {
            "the network request failed; check the connection and try again".to_owned()
        }
        (Some(status), Some(code), true) => format!("the host answered {status} {code}"),
        (Some(status), None, true) => format!("the host answered HTTP {status}"),
    }
}

fn restore(state: &mut Questionnaire, id: &str, saved: Drafts, fx: &mut Vec<Effect>) {
    let is_active = state.requests.first().is_some_and(|r| r.id == id);
    let Some(request) = find_mut(state, id) else {
        return;
    };
    if request.touched || !request.is_editable() {
        return;
    }
    for (question, draft) in request
        .request
        .questions
        .iter()
        .zip(&mut request.drafts.items)
    {
        let Some(saved) = saved.items.iter().find(|d| d.id == question.id) else {
            continue;
        };
        // Keep only labels the question still has, once each, in option order.
        let mut selected: Vec<String> = question
            .options()
            .iter()
            .filter(|o| saved.selected.contains(&o.label))
            .map(|o| o.label.clone())
            .collect();
        if !question.is_multi_select() {
            selected.truncate(1);
        }
        draft.selected = selected;
        draft.text = saved.text.clone();
        draft.skipped = saved.skipped;
        if !question.is_multi_select() && !draft.text.trim().is_empty() {
            draft.selected.clear();
        }
    }
    request.drafts.current = saved.current.min(request.len() - 1);
    request.option_focus = first_option_focus(request);
    request.touched = true;
    if is_active {
        fx.push(Effect::Focus(entry_focus(request)));
    }
}

// ── editing the active request ───────────────────────────────────────────────

fn edit(state: &mut Questionnaire, action: Action, fx: &mut Vec<Effect>) {
    let Some(request) = state.requests.first_mut() else {
        return;
    };
    if !request.is_editable() {
        return;
    }
    let before = request.drafts.clone();
    match action {
        Action::OptionChosen { index } | Action::OptionToggled { index } => {
            choose(request, index, fx)
        }
        Action::OptionFocused { index } => {
            let options = request.current_question().options().len();
            request.option_focus = Some(index)
                .filter(|&i| i < options)
                .or(request.option_focus);
        }
        Action::DraftEdited { text } => {
            let question = &request.request.questions[request.drafts.current];
            let single = !question.is_multi_select();
            let draft = &mut request.drafts.items[request.drafts.current];
            draft.text = text;
            if !draft.text.trim().is_empty() {
                draft.skipped = false;
                // Single-select: the "Other" text overrides (and clears) the choice.
                if single {
                    draft.selected.clear();
                }
            }
        }
        Action::Skip => {
            let current = request.drafts.current;
            let draft = &mut request.drafts.items[current];
            draft.selected.clear();
            draft.text.clear();
            draft.skipped = true;
            if current + 1 < request.len() {
                go_to(request, current + 1, fx);
            }
        }
        Action::Back | Action::Next | Action::GoTo { .. } => {
            let current = request.drafts.current;
            let target = match action {
                Action::Back => current.checked_sub(1),
                Action::Next => Some(current + 1),
                Action::GoTo { index } => Some(index),
                _ => None,
            };
            if let Some(target) = target.filter(|&t| t < request.len() && t != current) {
                go_to(request, target, fx);
            }
        }
        Action::Submit => submit_or_advance(request, fx),
        Action::Close | Action::ChatAboutIt => {
            request.status = Status::Sending(SendKind::Cancel);
            fx.push(Effect::PostCancel {
                question_id: request.id.clone(),
            });
        }
        Action::Approve | Action::Decline => {
            let Mode::PlanReview { approve, decline } = request.mode else {
                return;
            };
            let index = if matches!(action, Action::Approve) {
                Some(approve)
            } else {
                decline
            };
            if let Some(index) = index {
                let label = request.request.questions[0].options()[index].label.clone();
                let draft = &mut request.drafts.items[0];
                draft.selected = vec![label];
                draft.text.clear();
                draft.skipped = false;
                submit(request, fx);
            }
        }
        // Handled in `apply`.
        _ => {}
    }
    persist_if_changed(request, before, fx);
}

fn persist_if_changed(request: &mut PendingRequest, before: Drafts, fx: &mut Vec<Effect>) {
    if request.drafts != before {
        request.touched = true;
        fx.push(Effect::PersistDrafts {
            question_id: request.id.clone(),
            drafts: request.drafts.clone(),
        });
    }
}

/// Chooses (single-select: records and advances) or toggles (multi-select).
fn choose(request: &mut PendingRequest, index: usize, fx: &mut Vec<Effect>) {
    let current = request.drafts.current;
    let question = &request.request.questions[current];
    let Some(option) = question.options().get(index) else {
        return;
    };
    let label = option.label.clone();
    let multi = question.is_multi_select();
    let draft = &mut request.drafts.items[current];
    request.option_focus = Some(index);
    if multi {
        if let Some(at) = draft.selected.iter().position(|l| *l == label) {
            draft.selected.remove(at);
        } else {
            draft.selected.push(label);
            let options = question.options();
            draft
                .selected
                .sort_by_key(|l| options.iter().position(|o| o.label == *l));
            draft.skipped = false;
        }
    } else {
        draft.selected = vec![label];
        draft.text.clear();
        draft.skipped = false;
        if current + 1 < request.len() {
            go_to(request, current + 1, fx);
        }
    }
}

/// Shows item `index` and puts focus where an opening item wants it.
fn go_to(request: &mut PendingRequest, index: usize, fx: &mut Vec<Effect>) {
    request.drafts.current = index;
    request.option_focus = first_option_focus(request);
    fx.push(Effect::Focus(entry_focus(request)));
}

/// An item with options opens with focus on its first option that is not the
/// recommended one: a focus ring on the recommendation would read as a
/// pre-selection, and Space would choose it. An optionless item opens in its
/// text box.
fn first_option_focus(request: &PendingRequest) -> Option<usize> {
    let options = request.current_question().options();
    if options.is_empty() {
        return None;
    }
    Some(
        options
            .iter()
            .position(|o| !crate::recommend::is_recommended(&o.label))
            .unwrap_or(0),
    )
}

fn entry_focus(request: &PendingRequest) -> FocusTarget {
    if request.is_plan_review() {
        FocusTarget::Slot
    } else if let Some(index) = first_option_focus(request) {
        FocusTarget::Option(index)
    } else {
        FocusTarget::TextBox
    }
}

/// Enter / Submit: post when complete; otherwise move to the next open item.
fn submit_or_advance(request: &mut PendingRequest, fx: &mut Vec<Effect>) {
    if request.is_complete() {
        submit(request, fx);
        return;
    }
    let len = request.len();
    let current = request.drafts.current;
    let next_open = (1..=len)
        .map(|step| (current + step) % len)
        .find(|&i| item_state_at(request, i) == ItemState::Unanswered);
    if let Some(next) = next_open
        && next != current
    {
        go_to(request, next, fx);
    }
    fx.push(Effect::Announce(Announcement::Incomplete {
        unanswered: request.unanswered_count(),
    }));
}

fn item_state_at(request: &PendingRequest, index: usize) -> ItemState {
    item_state(
        &request.request.questions[index],
        &request.drafts.items[index],
    )
}

/// Posts the batch; only ever called on a complete request.
fn submit(request: &mut PendingRequest, fx: &mut Vec<Effect>) {
    match request.answer_batch() {
        Ok(batch) => {
            request.status = Status::Sending(SendKind::Answer);
            fx.push(Effect::PostAnswer {
                question_id: request.id.clone(),
                batch,
            });
        }
        // E.g. an over-long text: say what is wrong, keep everything.
        Err(error) => {
            request.status = Status::Failed {
                kind: SendKind::Answer,
                failure: Failure {
                    status: None,
                    code: Some(error.code.as_str().to_owned()),
                    message: error.message.clone(),
                },
            };
            fx.push(Effect::Announce(Announcement::SendFailed {
                message: error.message,
            }));
        }
    }
}

// ── keys ─────────────────────────────────────────────────────────────────────

fn key(state: &mut Questionnaire, key: KeyInput, fx: &mut Vec<Effect>) {
    // The keydown right after compositionend is the IME's confirmation (Safari
    // sends it without isComposing); it is consumed either way.
    let composing = key.is_composing
        || key.key_code == 229
        || state.ime.composing
        || std::mem::take(&mut state.ime.just_ended);
    if composing {
        return;
    }
    let Some(request) = state.requests.first_mut() else {
        return;
    };
    if !request.is_editable() || request.collapsed {
        return;
    }
    // Plan review acts through its buttons only.
    let options = if request.is_plan_review() {
        0
    } else {
        request.current_question().options().len()
    };
    match key.key {
        Key::Enter => {
            if key.shift {
                return; // newline in the text box
            }
            fx.push(Effect::PreventDefault);
            if request.is_plan_review() {
                return; // the plan is approved only by its button
            }
            let before = request.drafts.clone();
            submit_or_advance(request, fx);
            persist_if_changed(request, before, fx);
        }
        Key::Digit(n) if !key.in_text_box && (1..=options).contains(&(n as usize)) => {
            fx.push(Effect::PreventDefault);
            let before = request.drafts.clone();
            choose(request, n as usize - 1, fx);
            persist_if_changed(request, before, fx);
        }
        Key::ArrowUp | Key::ArrowDown if !key.in_text_box && options > 0 => {
            let next = match (key.key, request.option_focus) {
                (Key::ArrowDown, Some(i)) => (i + 1) % options,
                (Key::ArrowDown, None) => 0,
                (_, Some(i)) => (i + options - 1) % options,
                (_, None) => options - 1,
            };
            request.option_focus = Some(next);
            fx.push(Effect::PreventDefault);
            fx.push(Effect::Focus(FocusTarget::Option(next)));
        }
        Key::Space if !key.in_text_box => {
            if let Some(index) = request.option_focus.filter(|&i| i < options) {
                fx.push(Effect::PreventDefault);
                let before = request.drafts.clone();
                choose(request, index, fx);
                persist_if_changed(request, before, fx);
            }
        }
        _ => {}
    }
}
