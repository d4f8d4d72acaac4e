//! Model-based tests of the pending table: random interleavings of register
//! (new, reattach, collect) / claim / cancel / abort / let go (abort, detach)
//! / read / expire / reopen against a plain model.

use super::*;
use ask_user_core::ErrorCode;
use proptest::prelude::*;
use proptest::sample::Index;
use tokio::sync::oneshot::error::TryRecvError as OneshotTryRecvError;

const SESSIONS: [&str; 3] = ["s0", "s1", "s2"];
/// Two different requests, so reattaching must match the request too.
const VARIANTS: usize = 2;
const GRACE: Duration = Duration::from_secs(1000);
const MAX_KEPT: usize = 6;

fn request(variant: usize) -> AskRequest {
    AskRequest::from_json(&format!(
        r#"{{"questions": [{{"id": "q", "question": "Pick {variant}", "options": [{{"label": "a"}}, {{"label": "b"}}]}}]}}"#
    ))
    .unwrap()
}

fn answer(label: &str) -> AnswerBatch {
    AnswerBatch::from_json(&format!(
        r#"{{"answers": [{{"id": "q", "selected": ["{label}"]}}]}}"#
    ))
    .unwrap()
}

fn store() -> MemoryStore {
    MemoryStore::with_config(StoreConfig {
        channel_capacity: 1024,
        detach_grace: GRACE,
        max_kept: MAX_KEPT,
        ..StoreConfig::default()
    })
}

#[derive(Debug, Clone)]
enum Op {
    Register(usize, usize),
    /// Claim a known id (or an unknown one), in its own session or another,
    /// with a valid or an invalid answer.
    Claim(Index, bool, bool),
    Cancel(Index, bool),
    Abort(Index, bool),
    /// A call lets go of its question: on purpose (abort) or not (detach).
    LetGo(Index, bool),
    /// A call reads its resolution.
    Read(Index),
    /// Every grace runs out.
    ExpireAll,
    Reopen(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SESSIONS.len(), 0..VARIANTS).prop_map(|(s, v)| Op::Register(s, v)),
        3 => (any::<Index>(), any::<bool>(), any::<bool>()).prop_map(|(i, own, valid)| Op::Claim(i, own, valid)),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(i, own)| Op::Cancel(i, own)),
        1 => (any::<Index>(), any::<bool>()).prop_map(|(i, timeout)| Op::Abort(i, timeout)),
        3 => (any::<Index>(), any::<bool>()).prop_map(|(i, abort)| Op::LetGo(i, abort)),
        2 => any::<Index>().prop_map(Op::Read),
        1 => Just(Op::ExpireAll),
        1 => (0..SESSIONS.len()).prop_map(Op::Reopen),
    ]
}

/// Where a question stands in the model.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Attached,
    Detached,
    /// Resolved while no call waited (or recovered from a call that never
    /// read it): kept for the next identical ask.
    Held(Resolution),
    /// A call holds the resolution in its waiter, unread.
    Delivered(Resolution),
    /// Gone for good.
    Ended(Ended),
}

#[derive(Debug, Clone)]
struct Question {
    id: String,
    session: usize,
    variant: usize,
    /// Order of the question (held resolutions keep their question's).
    seq: u64,
    state: State,
    /// Not pending any more: its `NOT_PENDING` reason.
    ended: Option<Ended>,
}

/// The model: every question ever registered and where it stands.
#[derive(Default)]
struct Model {
    questions: Vec<Question>,
    next_seq: u64,
}

impl Model {
    fn pick(&self, index: &Index) -> Option<usize> {
        // One slot past the known questions stands for an id nobody registered.
        let i = index.index(self.questions.len() + 1);
        (i < self.questions.len()).then_some(i)
    }

    fn is_pending(&self, i: usize) -> bool {
        matches!(self.questions[i].state, State::Attached | State::Detached)
    }

    fn pending_in(&self, session: usize) -> Vec<(String, bool)> {
        let mut pending: Vec<&Question> = self
            .questions
            .iter()
            .filter(|q| {
                q.session == session && matches!(q.state, State::Attached | State::Detached)
            })
            .collect();
        pending.sort_by_key(|q| q.seq);
        pending
            .into_iter()
            .map(|q| (q.id.clone(), q.state == State::Detached))
            .collect()
    }

    fn count(&self, f: impl Fn(&State) -> bool) -> usize {
        self.questions.iter().filter(|q| f(&q.state)).count()
    }

    /// The question an identical ask attaches to: the oldest detached or held one.
    fn reattachable(&self, session: usize, variant: usize) -> Option<usize> {
        self.questions
            .iter()
            .enumerate()
            .filter(|(_, q)| {
                q.session == session
                    && q.variant == variant
                    && matches!(q.state, State::Detached | State::Held(_))
            })
            .min_by_key(|(_, q)| q.seq)
            .map(|(i, _)| i)
    }
}

/// A long-lived subscriber per session, checked against the events the model expects.
struct Watcher {
    events: EventReceiver,
    expected: VecDeque<SessionEvent>,
}

impl Watcher {
    fn check(&mut self) {
        loop {
            match self.events.try_recv() {
                Ok(event) => {
                    let expected = self.expected.pop_front().expect("no event was expected");
                    match (&*event, &expected) {
                        (
                            SessionEvent::QuestionRequested(got),
                            SessionEvent::QuestionRequested(want),
                        ) => {
                            assert_eq!(got.id, want.id);
                        }
                        (
                            SessionEvent::QuestionResolved(got),
                            SessionEvent::QuestionResolved(want),
                        ) => {
                            assert_eq!((&got.id, got.outcome), (&want.id, want.outcome));
                            let record = got
                                .record
                                .as_ref()
                                .expect("a resolved frame has its record");
                            assert_eq!((&record.id, record.outcome), (&got.id, got.outcome));
                            assert_eq!(record.answer.is_some(), got.outcome == Outcome::Answered);
                        }
                        (got, want) => assert_eq!(got, want),
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(other) => panic!("watcher: {other:?}"),
            }
        }
        assert!(
            self.expected.is_empty(),
            "missing events: {:?}",
            self.expected
        );
    }
}

fn requested(id: &str) -> SessionEvent {
    SessionEvent::QuestionRequested(QuestionRequested {
        id: id.to_owned(),
        session: String::new(),
        request: request(0),
        created_at_ms: 0,
        asked_by: None,
    })
}

fn resolved(id: &str, outcome: Outcome) -> SessionEvent {
    SessionEvent::QuestionResolved(QuestionResolved {
        id: id.to_owned(),
        outcome,
        record: None,
    })
}

fn detached(id: &str) -> SessionEvent {
    SessionEvent::QuestionDetached(QuestionRef { id: id.to_owned() })
}

fn attached(id: &str) -> SessionEvent {
    SessionEvent::QuestionAttached(QuestionRef { id: id.to_owned() })
}

fn check_not_pending(error: UserInteractionError, why: Option<Ended>) {
    assert_eq!(error.code, ErrorCode::NotPending, "{error}");
    match why {
        Some(ended) => assert!(error.message.ends_with(ended.reason()), "{error}"),
        None => assert!(error.message.contains("no such question"), "{error}"),
    }
}

/// A call's hold on a question: its attachment and its waiter.
type Call = (Attachment, oneshot::Receiver<Resolution>);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn the_pending_table_behaves_like_its_model(ops in prop::collection::vec(op(), 1..80)) {
        let store = store();
        let mut model = Model::default();
        // The call holding each question, by model index.
        let mut calls: HashMap<usize, Call> = HashMap::new();
        let mut watchers: Vec<Watcher> = SESSIONS
            .iter()
            .map(|s| {
                let subscription = store.subscribe(s);
                assert_eq!(subscription.replay.len(), 1, "an empty session replays only synced");
                Watcher { events: subscription.events, expected: VecDeque::new() }
            })
            .collect();

        for op in ops {
            match op {
                Op::Register(session, variant) => {
                    let result = store.register(SESSIONS[session], request(variant), None);
                    match model.reattachable(session, variant) {
                        Some(i) => {
                            let registered = result.unwrap();
                            prop_assert_eq!(registered.attachment.id(), model.questions[i].id.as_str());
                            let mut waiter = registered.waiter;
                            match model.questions[i].state.clone() {
                                State::Detached => {
                                    prop_assert_eq!(registered.found, Found::Reattached);
                                    prop_assert!(waiter.try_recv().is_err());
                                    model.questions[i].state = State::Attached;
                                    watchers[session].expected.push_back(attached(&model.questions[i].id));
                                }
                                State::Held(resolution) => {
                                    prop_assert_eq!(registered.found, Found::Collected);
                                    // The waiter has it at once; a fresh oneshot so the call may still drop it unread.
                                    let (tx, rx) = oneshot::channel();
                                    let got = waiter.try_recv().unwrap();
                                    prop_assert_eq!(&got, &resolution);
                                    tx.send(got).unwrap();
                                    waiter = rx;
                                    model.questions[i].state = State::Delivered(resolution);
                                }
                                other => panic!("not reattachable: {other:?}"),
                            }
                            calls.insert(i, (registered.attachment, waiter));
                        }
                        None if model.count(|s| matches!(s, State::Attached | State::Detached | State::Held(_))) >= MAX_KEPT => {
                            prop_assert_eq!(result.unwrap_err(), RegisterError::TooManyPending { limit: PendingLimit::Total(MAX_KEPT) });
                        }
                        None => {
                            let registered = result.unwrap();
                            prop_assert_eq!(registered.found, Found::New);
                            let id = registered.attachment.id().to_owned();
                            prop_assert!(!model.questions.iter().any(|q| q.id == id), "ids are unique");
                            watchers[session].expected.push_back(requested(&id));
                            model.questions.push(Question {
                                id, session, variant, seq: model.next_seq, state: State::Attached, ended: None,
                            });
                            model.next_seq += 1;
                            calls.insert(model.questions.len() - 1, (registered.attachment, registered.waiter));
                        }
                    }
                }
                Op::Claim(index, own, valid) => {
                    let (id, home) = model.pick(&index)
                        .map(|i| (model.questions[i].id.clone(), model.questions[i].session))
                        .unwrap_or_else(|| ("q_unknown".to_owned(), 0));
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let label = if valid { "b" } else { "zzz" };
                    let result = store.claim(SESSIONS[session], &id, answer(label));
                    let i = model.pick(&index).filter(|_| session == home);
                    match (i.filter(|i| model.is_pending(*i)), valid) {
                        (Some(i), true) => {
                            prop_assert!(result.is_ok());
                            let q = &mut model.questions[i];
                            let resolution = Resolution::Answered(answer("b"));
                            q.state = match q.state {
                                State::Attached => State::Delivered(resolution),
                                _ => State::Held(resolution),
                            };
                            q.ended = Some(Ended::Answered);
                            watchers[home].expected.push_back(resolved(&id, Outcome::Answered));
                        }
                        (Some(_), false) => {
                            prop_assert_eq!(result.unwrap_err().code, ErrorCode::BadAnswer);
                        }
                        (None, _) => check_not_pending(result.unwrap_err(), i.and_then(|i| model.questions[i].ended)),
                    }
                }
                Op::Cancel(index, own) => {
                    let (id, home) = model.pick(&index)
                        .map(|i| (model.questions[i].id.clone(), model.questions[i].session))
                        .unwrap_or_else(|| ("q_unknown".to_owned(), 0));
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let result = store.cancel(SESSIONS[session], &id);
                    let i = model.pick(&index).filter(|_| session == home);
                    match i.filter(|i| model.is_pending(*i)) {
                        Some(i) => {
                            prop_assert!(result.is_ok());
                            let q = &mut model.questions[i];
                            q.state = match q.state {
                                State::Attached => State::Delivered(Resolution::Cancelled),
                                _ => State::Held(Resolution::Cancelled),
                            };
                            q.ended = Some(Ended::Cancelled);
                            watchers[home].expected.push_back(resolved(&id, Outcome::Cancelled));
                        }
                        None => check_not_pending(result.unwrap_err(), i.and_then(|i| model.questions[i].ended)),
                    }
                }
                Op::Abort(index, timeout) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let (id, home) = (model.questions[i].id.clone(), model.questions[i].session);
                    let outcome = if timeout { Outcome::Timeout } else { Outcome::Aborted };
                    let removed = store.abort(SESSIONS[home], &id, outcome);
                    prop_assert_eq!(removed, model.is_pending(i));
                    if removed {
                        let ended = Ended::from_outcome(outcome);
                        model.questions[i].state = State::Ended(ended);
                        model.questions[i].ended = Some(ended);
                        watchers[home].expected.push_back(resolved(&id, outcome));
                        // The asker aborts itself: nothing is sent to it.
                        if let Some((_, waiter)) = calls.get_mut(&i) {
                            prop_assert_eq!(waiter.try_recv(), Err(OneshotTryRecvError::Closed));
                        }
                    }
                }
                Op::LetGo(index, on_purpose) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let Some((attachment, waiter)) = calls.remove(&i) else { continue };
                    let home = model.questions[i].session;
                    let how = if on_purpose { LetGo::Abort } else { LetGo::Detach };
                    store.let_go(SESSIONS[home], attachment, waiter, how);
                    let q = &mut model.questions[i];
                    match (q.state.clone(), on_purpose) {
                        (State::Attached, true) => {
                            q.state = State::Ended(Ended::Aborted);
                            q.ended = Some(Ended::Aborted);
                            watchers[home].expected.push_back(resolved(&q.id, Outcome::Aborted));
                        }
                        (State::Attached, false) => {
                            q.state = State::Detached;
                            watchers[home].expected.push_back(detached(&q.id));
                        }
                        // Never lost: an unread resolution is held.
                        (State::Delivered(resolution), _) => q.state = State::Held(resolution),
                        (State::Ended(_), _) => {}
                        (other, _) => panic!("a call held {other:?}"),
                    }
                }
                Op::Read(index) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let Some((attachment, mut waiter)) = calls.remove(&i) else { continue };
                    let q = &mut model.questions[i];
                    match q.state.clone() {
                        State::Delivered(resolution) => {
                            prop_assert_eq!(waiter.try_recv().unwrap(), resolution);
                            q.state = State::Ended(q.ended.expect("resolved"));
                        }
                        State::Attached => {
                            // Nothing yet: the call keeps waiting.
                            prop_assert_eq!(waiter.try_recv(), Err(OneshotTryRecvError::Empty));
                            calls.insert(i, (attachment, waiter));
                        }
                        State::Ended(_) => {
                            prop_assert_eq!(waiter.try_recv(), Err(OneshotTryRecvError::Closed));
                        }
                        other => panic!("a call held {other:?}"),
                    }
                }
                Op::ExpireAll => {
                    for watcher in &mut watchers {
                        watcher.check();
                    }
                    store.expire(Instant::now() + GRACE * 2);
                    let mut expected: Vec<Vec<String>> = vec![Vec::new(); SESSIONS.len()];
                    for q in &mut model.questions {
                        match q.state {
                            State::Detached => {
                                q.state = State::Ended(Ended::Expired);
                                q.ended = Some(Ended::Expired);
                                expected[q.session].push(q.id.clone());
                            }
                            State::Held(_) => q.state = State::Ended(q.ended.expect("resolved")),
                            _ => {}
                        }
                    }
                    // Expired in the order their graces began, which the
                    // model does not track: compare each session's batch as a set.
                    for (watcher, mut want) in watchers.iter_mut().zip(expected) {
                        let mut got: Vec<String> = std::iter::from_fn(|| watcher.events.try_recv().ok())
                            .map(|event| match &*event {
                                SessionEvent::QuestionResolved(r) if r.outcome == Outcome::Aborted => r.id.clone(),
                                other => panic!("expiry broadcast {other:?}"),
                            })
                            .collect();
                        got.sort();
                        want.sort();
                        prop_assert_eq!(got, want);
                    }
                    prop_assert_eq!(store.expire(Instant::now()), None, "nothing else is due");
                }
                Op::Reopen(session) => {
                    let subscription = store.subscribe(SESSIONS[session]);
                    let want = model.pending_in(session);
                    let (synced, replay) = subscription.replay.split_last().unwrap();
                    let mut replayed: Vec<(String, bool)> = Vec::new();
                    for event in replay {
                        match &**event {
                            SessionEvent::QuestionRequested(q) => replayed.push((q.id.clone(), false)),
                            SessionEvent::QuestionDetached(r) => {
                                let last = replayed.last_mut().expect("detached follows requested");
                                prop_assert_eq!(&last.0, &r.id);
                                last.1 = true;
                            }
                            other => panic!("replay holds {other:?}"),
                        }
                    }
                    prop_assert_eq!(&replayed, &want);
                    let ids: Vec<String> = want.iter().map(|(id, _)| id.clone()).collect();
                    prop_assert_eq!(
                        &**synced,
                        &SessionEvent::SessionSynced(SessionSynced { pending: ids.clone() })
                    );
                    let snapshot: Vec<String> =
                        store.snapshot(SESSIONS[session]).into_iter().map(|q| q.id).collect();
                    prop_assert_eq!(snapshot, ids);
                }
            }
            for watcher in &mut watchers {
                watcher.check();
            }
            prop_assert_eq!(
                store.pending_count(),
                model.count(|s| matches!(s, State::Attached | State::Detached))
            );
            prop_assert_eq!(store.held_count(), model.count(|s| matches!(s, State::Held(_))));
        }

        // Disposal resolves every remaining question as disposed, drops what
        // is held and refuses new ones.
        let remaining: Vec<usize> = (0..model.questions.len()).filter(|i| model.is_pending(*i)).collect();
        prop_assert_eq!(store.dispose_all(), remaining.len());
        for i in remaining {
            let q = &model.questions[i];
            watchers[q.session].expected.push_back(resolved(&q.id, Outcome::Disposed));
            if q.state == State::Attached {
                let (_, waiter) = calls.get_mut(&i).unwrap();
                prop_assert_eq!(waiter.try_recv().unwrap(), Resolution::Disposed);
            }
        }
        for watcher in &mut watchers {
            watcher.check();
        }
        prop_assert_eq!(store.pending_count(), 0);
        prop_assert_eq!(store.held_count(), 0);
        prop_assert_eq!(store.register("s0", request(0), None).unwrap_err(), RegisterError::ShuttingDown);
    }
}

#[test]
fn an_idle_session_is_forgotten_once_its_last_subscriber_leaves() {
    let store = MemoryStore::new();
    let subscription = store.subscribe("s");
    assert_eq!(store.lock().sessions.len(), 1);
    drop(subscription);
    store.release("s");
    assert_eq!(store.lock().sessions.len(), 0);

    let registered = store.register("s", request(0), None).unwrap();
    store.release("s");
    assert_eq!(
        store.lock().sessions.len(),
        1,
        "a pending question keeps it"
    );
    assert!(store.abort("s", registered.attachment.id(), Outcome::Aborted));
    assert_eq!(store.lock().sessions.len(), 0);
}

#[test]
fn remembered_resolutions_are_bounded() {
    let store = MemoryStore::new();
    for _ in 0..REMEMBERED_RESOLUTIONS + 10 {
        let registered = store.register("s", request(0), None).unwrap();
        store.cancel("s", registered.attachment.id()).unwrap();
    }
    let table = store.lock();
    assert_eq!(table.recent.len(), REMEMBERED_RESOLUTIONS);
    assert_eq!(table.recent_order.len(), REMEMBERED_RESOLUTIONS);
}

#[test]
fn a_late_explicit_end_aborts_a_detached_question_but_not_one_asked_for_again() {
    let store = store();
    let first = store.register("s", request(0), None).unwrap();
    let id = first.attachment.id().to_owned();
    assert!(!store.abort_detached("s", &id), "attached: kept");
    store.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    let again = store.register("s", request(0), None).unwrap();
    assert_eq!(again.found, Found::Reattached);
    assert!(!store.abort_detached("s", &id), "attached again: kept");
    store.let_go("s", again.attachment, again.waiter, LetGo::Detach);
    assert!(store.abort_detached("s", &id));
    let refused = store.claim("s", &id, answer("a")).unwrap_err();
    assert!(
        refused.message.ends_with(Ended::Aborted.reason()),
        "{refused}"
    );
}

#[test]
fn an_identical_ask_while_the_first_is_attached_is_a_new_question() {
    let store = store();
    let first = store.register("s", request(0), None).unwrap();
    let second = store.register("s", request(0), None).unwrap();
    assert_eq!(second.found, Found::New);
    assert_ne!(first.attachment.id(), second.attachment.id());
}

#[test]
fn a_detached_question_counts_against_the_limit_and_a_reattach_needs_no_room() {
    let store = store();
    let calls: Vec<Registered> = (0..MAX_KEPT)
        .map(|_| store.register("s", request(0), None).unwrap())
        .collect();
    let mut calls = calls.into_iter();
    let first = calls.next().unwrap();
    let id = first.attachment.id().to_owned();
    store.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    assert_eq!(
        store.register("s", request(1), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::Total(MAX_KEPT)
        },
        "the detached question still takes its slot"
    );
    let again = store.register("s", request(0), None).unwrap();
    assert_eq!(again.found, Found::Reattached);
    assert_eq!(again.attachment.id(), id);
}

#[tokio::test(start_paused = true)]
async fn the_grace_timer_ends_a_detached_question_when_its_grace_runs_out() {
    let store: Arc<dyn PendingStore> = Arc::new(MemoryStore::with_config(StoreConfig {
        detach_grace: Duration::from_secs(30),
        ..StoreConfig::default()
    }));
    let shutdown = CancellationToken::new();
    let timer = spawn_grace_timer(store.clone(), shutdown.clone());
    let mut events = store.subscribe("s").events;
    let registered = store.register("s", request(0), None).unwrap();
    let id = registered.attachment.id().to_owned();
    store.let_go("s", registered.attachment, registered.waiter, LetGo::Detach);

    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(store.pending_count(), 1, "still within the grace");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(store.pending_count(), 0, "the grace ran out");
    let kinds: Vec<SessionEvent> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| (*e).clone())
        .collect();
    assert!(
        matches!(&kinds[..], [
        SessionEvent::QuestionRequested(_),
        SessionEvent::QuestionDetached(d),
        SessionEvent::QuestionResolved(r),
    ] if d.id == id && r.id == id && r.outcome == Outcome::Aborted),
        "{kinds:?}"
    );
    let refused = store.claim("s", &id, answer("a")).unwrap_err();
    assert!(
        refused
            .message
            .contains("did not ask again within the grace"),
        "{refused}"
    );

    // A held answer runs out the same way.
    let registered = store.register("s", request(0), None).unwrap();
    let id = registered.attachment.id().to_owned();
    store.let_go("s", registered.attachment, registered.waiter, LetGo::Detach);
    store.claim("s", &id, answer("a")).unwrap();
    assert_eq!(store.held_count(), 1);
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(store.held_count(), 0, "dropped after the grace");
    shutdown.cancel();
    timer.await.unwrap();
}

#[test]
fn the_per_session_cap_is_cores_questionnaire_limit_and_never_above_it() {
    use ask_user_core::limits::MAX_PENDING_PER_SESSION;
    assert_eq!(
        StoreConfig::default().max_per_session,
        MAX_PENDING_PER_SESSION
    );
    let lifted = MemoryStore::with_config(StoreConfig {
        max_per_session: usize::MAX,
        ..StoreConfig::default()
    });
    assert!(
        lifted
            .pending_limits()
            .contains(&PendingLimit::PerSession(MAX_PENDING_PER_SESSION)),
        "a per-session limit above what the page holds is lowered to it"
    );
}

#[test]
fn one_question_past_the_per_session_cap_is_refused_naming_that_limit_while_other_sessions_still_ask()
 {
    let store = MemoryStore::with_config(StoreConfig {
        max_per_session: 3,
        ..StoreConfig::default()
    });
    let kept: Vec<Registered> = (0..3)
        .map(|_| store.register("s", request(0), None).unwrap())
        .collect();
    assert_eq!(
        store.register("s", request(1), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::PerSession(3)
        }
    );
    assert!(store.register("other", request(1), None).is_ok());
    // A held resolution is not on the page: it leaves room in its session.
    let first = kept.into_iter().next().unwrap();
    let id = first.attachment.id().to_owned();
    store.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    store.cancel("s", &id).unwrap();
    assert_eq!(store.held_count(), 1);
    assert!(store.register("s", request(1), None).is_ok());
}

#[test]
fn requests_are_counted_in_bytes_until_their_question_and_any_held_resolution_are_gone() {
    // Parsed, and kept as JSON for the lists: twice the request's JSON.
    let one = 2 * serde_json::to_string(&request(0)).unwrap().len();
    let store = MemoryStore::with_config(StoreConfig {
        max_bytes: 2 * one + one / 2,
        detach_grace: GRACE,
        ..StoreConfig::default()
    });
    let first = store.register("s", request(0), None).unwrap();
    let _second = store.register("t", request(0), None).unwrap();
    assert_eq!(store.pending_bytes(), 2 * one);
    assert_eq!(
        store.register("u", request(0), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::Bytes(2 * one + one / 2)
        }
    );
    // Detached, then answered: the held answer keeps its request's bytes.
    let id = first.attachment.id().to_owned();
    store.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    store.claim("s", &id, answer("a")).unwrap();
    assert_eq!(store.pending_bytes(), 2 * one);
    // Collected by the identical ask: the bytes are free again.
    let collected = store.register("s", request(0), None).unwrap();
    assert_eq!(collected.found, Found::Collected);
    assert_eq!(store.pending_bytes(), one);
    assert!(store.register("u", request(0), None).is_ok());
    store.dispose_all();
    assert_eq!(store.pending_bytes(), 0);
}

#[test]
fn a_subscriber_that_stops_reading_pins_at_most_its_byte_budget_of_messages() {
    let store = MemoryStore::with_config(StoreConfig {
        event_buffer_bytes: 64 * 1024,
        ..StoreConfig::default()
    });
    let mut stalled = store.subscribe("s").events;
    let text = "x".repeat(8_000);
    for _ in 0..100 {
        store.post_message("s", Role::User, text.clone());
    }
    assert!(
        stalled.queued_bytes() <= 64 * 1024,
        "{} bytes queued",
        stalled.queued_bytes()
    );
    assert!(
        matches!(stalled.try_recv(), Err(TryRecvError::Lagged(_))),
        "told to re-sync"
    );
}

#[test]
fn a_pending_question_carries_its_requests_json_and_streams_exactly_what_serde_json_writes() {
    let store = MemoryStore::new();
    // Escapes, non-ASCII text and an asker with every field.
    let tricky = AskRequest::from_json(
        r#"{"questions": [{"id": "q", "question": "Ship \"v2\"\\now?\n\u0007 Über 🚀",
            "header": "Plan ✓", "detail": "\u2028 <b>&</b>", "multi_select": true,
            "options": [{"label": "a", "description": "ja – 是"}, {"label": "b"}]}]}"#,
    )
    .unwrap();
    let asker = AskedBy {
        kind: ask_user_core::wire::AskerKind::Http,
        name: "agent \"ü\"".to_owned(),
        version: Some("1.0".to_owned()),
    };
    let _first = store.register("s", tricky.clone(), Some(asker)).unwrap();
    let _second = store.register("s", request(1), None).unwrap();
    let mut stream = store.subscribe("s");
    let events = store.pending_events("s");
    assert_eq!(events.len(), 2);
    for (event, expected) in events.iter().zip([tricky, request(1)]) {
        let SessionEvent::QuestionRequested(q) = &**event else {
            panic!("a pending event is a question/requested");
        };
        assert_eq!(q.request, expected);
        assert_eq!(
            event.request_json().unwrap(),
            serde_json::to_vec(&expected).unwrap()
        );
        // The SSE data written around the kept JSON is core's, byte for byte.
        assert_eq!(event.data(), SessionEvent::data(event));
    }
    // The replay and the live broadcast carry the same.
    let replayed = &stream.replay[0];
    assert_eq!(replayed.data(), SessionEvent::data(replayed));
    let _third = store.register("s", request(2), None).unwrap();
    let live = stream.events.try_recv().unwrap();
    assert!(live.request_json().is_some());
    assert_eq!(live.data(), SessionEvent::data(&live));
    assert!(store.pending_events("t").is_empty());
}

#[test]
fn question_ids_made_later_sort_later_and_keep_80_random_bits() {
    let first = question_id();
    std::thread::sleep(Duration::from_millis(2));
    let second = question_id();
    let same_ms: Vec<String> = (0..64).map(|_| question_id()).collect();
    for id in [&first, &second] {
        assert_eq!(id.len(), 34, "{id}");
        assert!(ask_user_core::SessionId::is_valid(id), "{id}");
        let millis = u64::from_str_radix(&id[2..14], 16).expect("12 hex digits of time");
        assert!(
            millis.abs_diff(now_ms()) < 60_000,
            "{id} is not stamped with now"
        );
    }
    assert!(first < second, "{first} is not before {second}");
    // The random part differs even within one millisecond.
    let distinct: std::collections::HashSet<&str> = same_ms.iter().map(|id| &id[14..]).collect();
    assert_eq!(distinct.len(), same_ms.len());
}
