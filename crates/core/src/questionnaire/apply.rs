//! The transition function.

use super::query::{item_state, plan_review_mode};
use super::types::*;
use crate::answer::AnswerBatch;
use crate::request::AskRequest;
use crate::wire::{Outcome, QuestionRequested, SessionEvent};

/// Applies one action and returns what the shell must do, in order. Focus and
/// announcements are not returned: they become the view model's versioned
/// intents ([`view`](super::view)).
///
/// Never panics, whatever the sequence. An action that does not apply (a click
/// while sending, an index out of range, a result for an unknown id) changes
/// nothing and returns no effects.
pub fn apply(state: &mut Questionnaire, action: Action) -> Vec<Effect> {
    let mut out = Out::default();
    match action {
        Action::FrameReceived(event) => frame(state, event, &mut out),
        Action::OptionChosen { index } | Action::OptionToggled { index } => {
            edit(state, &mut out, |request, out| choose(request, index, out))
        }
        Action::OptionFocused { index } => edit(state, &mut out, |request, _| {
            let options = request.current_question().options().len();
            if index < options {
                request.option_focus = Some(index);
            }
            false
        }),
        Action::DraftEdited { text } => {
            edit(state, &mut out, |request, _| type_text(request, text))
        }
        Action::Key(key) => self::key(state, key, &mut out),
        Action::CompositionStart => state.ime.composition_start(),
        Action::CompositionEnd => {
            state.ime.composition_end();
            out.effect(Effect::ScheduleTick);
        }
        Action::Tick => state.ime.tick(),
        Action::Blur => state.ime.blur(),
        Action::Skip => edit(state, &mut out, skip),
        Action::Back => edit(state, &mut out, |request, out| {
            let target = request.drafts.current.checked_sub(1);
            move_to(request, target, out)
        }),
        Action::Next => edit(state, &mut out, |request, out| {
            let target = request.drafts.current + 1;
            move_to(request, Some(target), out)
        }),
        Action::GoTo { index } => edit(state, &mut out, |request, out| {
            move_to(request, Some(index), out)
        }),
        Action::Submit => edit(state, &mut out, submit_or_advance),
        Action::Close | Action::ChatAboutIt => edit(state, &mut out, |request, out| {
            request.status = Status::Sending(SendKind::Cancel);
            out.effect(Effect::PostCancel {
                question_id: request.id.clone(),
            });
            false
        }),
        Action::ReplyInstead => edit(state, &mut out, |request, out| {
            out.focus(FocusTarget::ReplyBox);
            if request.drafts.reply.is_some() {
                return false;
            }
            request.drafts.reply = Some(String::new());
            true
        }),
        Action::ReplyEdited { text } => edit(state, &mut out, |request, _| {
            match &mut request.drafts.reply {
                Some(reply) => set(reply, text),
                None => false,
            }
        }),
        Action::ReplyClosed => edit(state, &mut out, |request, out| {
            let was_open = request.drafts.reply.take().is_some();
            if was_open {
                out.focus(entry_focus(request));
            }
            was_open
        }),
        Action::SendReply => edit(state, &mut out, send_reply),
        Action::Approve => edit(state, &mut out, |request, out| {
            decide(request, Decision::Approve, out)
        }),
        Action::Decline => edit(state, &mut out, |request, out| {
            decide(request, Decision::Decline, out)
        }),
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
        } => submit_failed(state, question_id, status, code, message, &mut out),
        Action::ShowFirst { question_id } => show_first(state, question_id, &mut out),
        Action::Collapse => {
            if let Some(request) = state.active_mut() {
                request.collapsed = true;
            }
        }
        Action::Expand => {
            if let Some(request) = state.active_mut() {
                request.collapsed = false;
                out.focus(entry_focus(request));
            }
        }
        Action::DraftsRestored {
            question_id,
            drafts,
        } => restore(state, &question_id, drafts, &mut out),
        Action::DismissNotice => state.notice = None,
    }
    out.commit(state)
}

/// What one [`apply`] produces: the shell's effects, and the DOM intents it
/// asked for (the last of each kind counts, as the shell would apply it last).
#[derive(Default)]
struct Out {
    effects: Vec<Effect>,
    focus: Option<FocusTarget>,
    announcement: Option<Announcement>,
}

impl Out {
    fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    fn focus(&mut self, target: FocusTarget) {
        self.focus = Some(target);
    }

    fn announce(&mut self, announcement: Announcement) {
        self.announcement = Some(announcement);
    }

    /// Stores the intents with fresh versions; returns the effects.
    fn commit(self, state: &mut Questionnaire) -> Vec<Effect> {
        if let Some(value) = self.focus {
            state.focus = Some(Versioned::next(state.focus.as_ref(), value));
        }
        if let Some(value) = self.announcement {
            state.announcement = Some(Versioned::next(state.announcement.as_ref(), value));
        }
        self.effects
    }
}

fn find_mut<'a>(state: &'a mut Questionnaire, id: &str) -> Option<&'a mut PendingRequest> {
    state.requests.iter_mut().find(|r| r.id == id)
}

/// Sets `slot` to `value`; true when that changed it. Every draft edit goes
/// through it, so a change is marked where it happens.
fn set<T: PartialEq>(slot: &mut T, value: T) -> bool {
    let changed = *slot != value;
    if changed {
        *slot = value;
    }
    changed
}

// ── stream frames ────────────────────────────────────────────────────────────

fn frame(state: &mut Questionnaire, event: SessionEvent, out: &mut Out) {
    match event {
        SessionEvent::QuestionRequested(requested) => self::requested(state, requested, out),
        SessionEvent::QuestionResolved(resolved) => {
            remove(state, &resolved.id, Some(resolved.outcome), out)
        }
        SessionEvent::SessionSynced(synced) => {
            // The replay is over: an opened request not in it was resolved
            // meanwhile, and the others are shown.
            if std::mem::take(&mut state.opened_awaited)
                && let Some(active) = state.requests.first()
            {
                out.focus(entry_focus(active));
            }
            let gone: Vec<String> = state
                .requests
                .iter()
                .filter(|r| !synced.pending.contains(&r.id))
                .map(|r| r.id.clone())
                .collect();
            for id in gone {
                remove(state, &id, None, out);
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

fn requested(state: &mut Questionnaire, frame: QuestionRequested, out: &mut Out) {
    // A replay (stream reopen) of a known id changes nothing but the detached
    // flag, drafts stay: the replay follows it with `question/detached` when no
    // call waits.
    if let Some(known) = find_mut(state, &frame.id) {
        known.detached = false;
        return;
    }
    if let Err(error) = frame.request.validate() {
        let why = CannotShow::Invalid {
            message: error.message,
        };
        return cannot_show(state, frame.id, why, out);
    }
    if state.requests.len() >= MAX_PENDING_REQUESTS {
        let why = CannotShow::TooManyPending {
            limit: MAX_PENDING_REQUESTS,
        };
        return cannot_show(state, frame.id, why, out);
    }
    let was_empty = state.requests.is_empty();
    let previous_active = state.requests.first().map(|r| r.id.clone());
    let mut request = new_request(
        frame.id.clone(),
        frame.request,
        frame.created_at_ms,
        state.arrivals,
    );
    request.asked_by = frame.asked_by;
    state.arrivals += 1;
    let ordered = state
        .requests
        .iter()
        .position(|r| (r.created_at_ms, r.arrival) > (request.created_at_ms, request.arrival))
        .unwrap_or(state.requests.len());
    // The request the page was opened on goes first, and stays there.
    let position = if state.shown_first.as_deref() == Some(request.id.as_str()) {
        state.opened_awaited = false;
        0
    } else {
        let front_kept = state
            .requests
            .first()
            .is_some_and(|first| state.shown_first.as_deref() == Some(first.id.as_str()));
        ordered.max(usize::from(front_kept))
    };
    let question = request.request.questions[0].question.clone();
    state.requests.insert(position, request);
    // A new request supersedes "resolved elsewhere"; a request that could not be
    // shown is still missing, so that notice stays until dismissed.
    if matches!(state.notice, Some(Notice::ResolvedElsewhere { .. })) {
        state.notice = None;
    }
    out.announce(Announcement::NewQuestion {
        question_id: frame.id.clone(),
        question,
        pending: state.requests.len(),
    });
    let active = &state.requests[0];
    if was_empty || previous_active.as_deref() != Some(active.id.as_str()) {
        out.focus(entry_focus(active));
    }
    // Last, so a restore performed synchronously can move focus after ours.
    out.effect(Effect::LoadDrafts {
        question_id: frame.id,
    });
}

/// [`Action::ShowFirst`]: the request moves to the front now if pending, and
/// is put there when it arrives otherwise.
fn show_first(state: &mut Questionnaire, id: String, out: &mut Out) {
    match state.requests.iter().position(|r| r.id == id) {
        Some(0) => {}
        Some(position) => {
            let request = state.requests.remove(position);
            state.requests.insert(0, request);
            out.focus(entry_focus(&state.requests[0]));
        }
        None => state.opened_awaited = true,
    }
    state.shown_first = Some(id);
}

/// A request the page cannot hold is reported, never dropped in silence.
fn cannot_show(state: &mut Questionnaire, question_id: String, why: CannotShow, out: &mut Out) {
    out.announce(Announcement::CannotShow(why.clone()));
    state.notice = Some(Notice::CannotShow { question_id, why });
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
        reply: None,
    };
    let mut pending = PendingRequest {
        id,
        asked_by: None,
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
fn remove(state: &mut Questionnaire, id: &str, outcome: Option<Outcome>, out: &mut Out) {
    let Some(position) = state.requests.iter().position(|r| r.id == id) else {
        return;
    };
    let removed = state.requests.remove(position);
    out.effect(Effect::ClearDrafts {
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
        // A question that could not be shown is still missing: that notice
        // outranks this one (which is announced either way).
        if !matches!(state.notice, Some(Notice::CannotShow { .. })) {
            state.notice = Some(Notice::ResolvedElsewhere {
                question_id: removed.id,
                outcome,
            });
        }
        out.announce(Announcement::ResolvedElsewhere { outcome });
    }
    if position == 0 {
        match state.requests.first() {
            Some(next) => out.focus(entry_focus(next)),
            None => out.focus(FocusTarget::MessageBox),
        }
    }
}

fn submit_failed(
    state: &mut Questionnaire,
    id: String,
    status: Option<u16>,
    code: Option<String>,
    message: String,
    out: &mut Out,
) {
    let Some(request) = find_mut(state, &id) else {
        return;
    };
    let (Status::Sending(kind) | Status::Sent(kind)) = request.status else {
        return;
    };
    if crate::wire::is_not_pending(status, code.as_deref()) {
        return remove(state, &id, None, out);
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
    out.announce(Announcement::SendFailed { message });
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

fn restore(state: &mut Questionnaire, id: &str, saved: Drafts, out: &mut Out) {
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
    request.drafts.reply = saved.reply;
    request.option_focus = first_option_focus(request);
    request.touched = true;
    if is_active {
        out.focus(entry_focus(request));
    }
}

// ── editing the active request ───────────────────────────────────────────────

/// Runs `change` on the active request when the person can edit it; `change`
/// returns whether it changed the drafts, which are then persisted.
fn edit(
    state: &mut Questionnaire,
    out: &mut Out,
    change: impl FnOnce(&mut PendingRequest, &mut Out) -> bool,
) {
    let Some(request) = state.active_mut().filter(|r| r.is_editable()) else {
        return;
    };
    if change(request, out) {
        persist(request, out);
    }
}

fn persist(request: &mut PendingRequest, out: &mut Out) {
    request.touched = true;
    out.effect(Effect::PersistDrafts {
        question_id: request.id.clone(),
        drafts: request.drafts.clone(),
    });
}

/// Chooses (single-select: records and advances) or toggles (multi-select).
fn choose(request: &mut PendingRequest, index: usize, out: &mut Out) -> bool {
    let current = request.drafts.current;
    let question = &request.request.questions[current];
    let Some(option) = question.options().get(index) else {
        return false;
    };
    let label = option.label.clone();
    request.option_focus = Some(index);
    let draft = &mut request.drafts.items[current];
    if question.is_multi_select() {
        if let Some(at) = draft.selected.iter().position(|l| *l == label) {
            draft.selected.remove(at);
        } else {
            draft.selected.push(label);
            let options = question.options();
            crate::small_sort::sort_by_key(&mut draft.selected, |l| {
                options.iter().position(|o| o.label == *l)
            });
            draft.skipped = false;
        }
        return true;
    }
    let changed = set(&mut draft.selected, vec![label])
        | set(&mut draft.text, String::new())
        | set(&mut draft.skipped, false);
    move_to(request, Some(current + 1), out) | changed
}

/// The current item's free text changed (its whole new value).
fn type_text(request: &mut PendingRequest, text: String) -> bool {
    let current = request.drafts.current;
    let single = !request.request.questions[current].is_multi_select();
    let draft = &mut request.drafts.items[current];
    let mut changed = set(&mut draft.text, text);
    if !draft.text.trim().is_empty() {
        changed |= set(&mut draft.skipped, false);
        // Single-select: the "Other" text overrides (and clears) the choice.
        if single {
            changed |= set(&mut draft.selected, Vec::new());
        }
    }
    changed
}

/// Skips only the current item and moves on (stays on the last).
fn skip(request: &mut PendingRequest, out: &mut Out) -> bool {
    let current = request.drafts.current;
    let draft = &mut request.drafts.items[current];
    let changed = set(&mut draft.selected, Vec::new())
        | set(&mut draft.text, String::new())
        | set(&mut draft.skipped, true);
    move_to(request, Some(current + 1), out) | changed
}

/// Moves to `target` when it is another item of the request.
fn move_to(request: &mut PendingRequest, target: Option<usize>, out: &mut Out) -> bool {
    let current = request.drafts.current;
    let Some(target) = target.filter(|&t| t < request.len() && t != current) else {
        return false;
    };
    go_to(request, target, out);
    true
}

/// Shows item `index` and puts focus where an opening item wants it.
fn go_to(request: &mut PendingRequest, index: usize, out: &mut Out) {
    request.drafts.current = index;
    request.option_focus = first_option_focus(request);
    out.focus(entry_focus(request));
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
fn submit_or_advance(request: &mut PendingRequest, out: &mut Out) -> bool {
    if request.is_complete() {
        submit(request, out);
        return false;
    }
    let len = request.len();
    let current = request.drafts.current;
    let next_open = (1..=len)
        .map(|step| (current + step) % len)
        .find(|&i| item_state_at(request, i) == ItemState::Unanswered);
    let moved = move_to(request, next_open, out);
    out.announce(Announcement::Incomplete {
        unanswered: request.unanswered_count(),
    });
    moved
}

fn item_state_at(request: &PendingRequest, index: usize) -> ItemState {
    item_state(
        &request.request.questions[index],
        &request.drafts.items[index],
    )
}

enum Decision {
    Approve,
    Decline,
}

/// Plan review: chooses the approve (or decline) option and submits.
fn decide(request: &mut PendingRequest, decision: Decision, out: &mut Out) -> bool {
    let Mode::PlanReview { approve, decline } = request.mode else {
        return false;
    };
    let index = match decision {
        Decision::Approve => Some(approve),
        Decision::Decline => decline,
    };
    let Some(index) = index else {
        return false;
    };
    let label = request.request.questions[0].options()[index].label.clone();
    let draft = &mut request.drafts.items[0];
    let changed = set(&mut draft.selected, vec![label])
        | set(&mut draft.text, String::new())
        | set(&mut draft.skipped, false);
    submit(request, out);
    changed
}

/// "Send reply": what is answered so far, the rest skipped, and the reply as
/// the batch's `note` (core's answer rules check it like the rest).
fn send_reply(request: &mut PendingRequest, out: &mut Out) -> bool {
    let Some(note) = request
        .drafts
        .reply
        .as_deref()
        .filter(|reply| !reply.trim().is_empty())
        .map(str::to_owned)
    else {
        return false;
    };
    let batch = request.answer_batch().and_then(|batch| {
        AnswerBatch {
            note: Some(note),
            ..batch
        }
        .normalize(&request.request)
    });
    post_answer(request, batch, out);
    false
}

/// Posts the batch; only ever called on a complete request.
fn submit(request: &mut PendingRequest, out: &mut Out) {
    let batch = request.answer_batch();
    post_answer(request, batch, out);
}

/// Posts a batch, or shows why it cannot be sent (keeping everything).
fn post_answer(
    request: &mut PendingRequest,
    batch: Result<AnswerBatch, crate::UserInteractionError>,
    out: &mut Out,
) {
    match batch {
        Ok(batch) => {
            request.status = Status::Sending(SendKind::Answer);
            out.effect(Effect::PostAnswer {
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
            out.announce(Announcement::SendFailed {
                message: error.message,
            });
        }
    }
}

// ── keys ─────────────────────────────────────────────────────────────────────

fn key(state: &mut Questionnaire, key: KeyInput, out: &mut Out) {
    if key.activates_control() {
        return;
    }
    // The keydown right after compositionend is the IME's confirmation (Safari
    // sends it without isComposing); it is consumed either way.
    if state.ime.claims(&key) || key.shortcut {
        return;
    }
    let Some(request) = state.active_mut() else {
        return;
    };
    if !request.is_editable() || request.collapsed {
        return;
    }
    // Plan review acts through its buttons only.
    let plan_review = request.is_plan_review();
    let options = if plan_review {
        0
    } else {
        request.current_question().options().len()
    };
    let in_text_box = key.target == KeyTarget::TextBox;
    match key.key {
        // Shift+Enter: a newline in the text box.
        Key::Enter if key.shift => {}
        Key::Enter => {
            out.effect(Effect::PreventDefault);
            // The plan is approved only by its button.
            if !plan_review && submit_or_advance(request, out) {
                persist(request, out);
            }
        }
        Key::Digit(n) if !in_text_box && (1..=options).contains(&(n as usize)) => {
            out.effect(Effect::PreventDefault);
            let (index, item) = (n as usize - 1, request.drafts.current);
            if choose(request, index, out) {
                persist(request, out);
            }
            // Focus follows the option a key chose (roving focus), unless the
            // choice opened the next item.
            if key.target == KeyTarget::Option && request.drafts.current == item {
                out.focus(FocusTarget::Option(index));
            }
        }
        Key::ArrowUp | Key::ArrowDown if !in_text_box && options > 0 => {
            let next = match (key.key, request.option_focus) {
                (Key::ArrowDown, Some(i)) => (i + 1) % options,
                (Key::ArrowDown, None) => 0,
                (_, Some(i)) => (i + options - 1) % options,
                (_, None) => options - 1,
            };
            request.option_focus = Some(next);
            out.effect(Effect::PreventDefault);
            out.focus(FocusTarget::Option(next));
        }
        Key::Space if !in_text_box => {
            if let Some(index) = request.option_focus.filter(|&i| i < options) {
                out.effect(Effect::PreventDefault);
                if choose(request, index, out) {
                    persist(request, out);
                }
            }
        }
        Key::Digit(_) | Key::ArrowUp | Key::ArrowDown | Key::Space | Key::Other => {}
    }
}
