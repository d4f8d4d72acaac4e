//! Model-based tests of the pending table: random interleavings of
//! register / claim / cancel / abort / reopen against a plain model.

use super::*;
use ask_user_core::ErrorCode;
use proptest::prelude::*;
use proptest::sample::Index;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::oneshot::error::TryRecvError as OneshotTryRecvError;

const SESSIONS: [&str; 3] = ["s0", "s1", "s2"];

fn request() -> AskRequest {
    AskRequest::from_json(
        r#"{"questions": [{"id": "q", "question": "Pick", "options": [{"label": "a"}, {"label": "b"}]}]}"#,
    )
    .unwrap()
}

fn answer(label: &str) -> AnswerBatch {
    AnswerBatch::from_json(&format!(
        r#"{{"answers": [{{"id": "q", "selected": ["{label}"]}}]}}"#
    ))
    .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Register(usize),
    /// Claim a known id (or an unknown one), in its own session or another,
    /// with a valid or an invalid answer.
    Claim(Index, bool, bool),
    Cancel(Index, bool),
    Abort(Index, bool),
    Reopen(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..SESSIONS.len()).prop_map(Op::Register),
        3 => (any::<Index>(), any::<bool>(), any::<bool>()).prop_map(|(i, own, valid)| Op::Claim(i, own, valid)),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(i, own)| Op::Cancel(i, own)),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(i, timeout)| Op::Abort(i, timeout)),
        1 => (0..SESSIONS.len()).prop_map(Op::Reopen),
    ]
}

/// The model: which ids wait where, in order, and how the others ended.
#[derive(Default)]
struct Model {
    /// Every id ever registered, with its session.
    known: Vec<(String, usize)>,
    pending: Vec<(String, usize)>,
    outcome: HashMap<String, Outcome>,
}

impl Model {
    fn pick(&self, index: &Index) -> (String, usize) {
        // One slot past the known ids stands for an id nobody registered.
        let i = index.index(self.known.len() + 1);
        self.known
            .get(i)
            .cloned()
            .unwrap_or_else(|| ("q_unknown".to_owned(), 0))
    }

    fn is_pending(&self, id: &str) -> bool {
        self.pending.iter().any(|(p, _)| p == id)
    }

    fn resolve(&mut self, id: &str, outcome: Outcome) {
        self.pending.retain(|(p, _)| p != id);
        self.outcome.insert(id.to_owned(), outcome);
    }

    fn pending_in(&self, session: usize) -> Vec<String> {
        self.pending
            .iter()
            .filter(|(_, s)| *s == session)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A long-lived subscriber per session, checked against the events the model expects.
struct Watcher {
    events: broadcast::Receiver<SharedEvent>,
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
        request: request(),
        created_at_ms: 0,
    })
}

fn resolved(id: &str, outcome: Outcome) -> SessionEvent {
    SessionEvent::QuestionResolved(QuestionResolved {
        id: id.to_owned(),
        outcome,
    })
}

fn reason(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Answered => "already answered",
        Outcome::Cancelled => "cancelled",
        Outcome::Aborted => "aborted",
        Outcome::Timeout => "timed out",
        Outcome::Disposed => "shut down",
    }
}

fn check_not_pending(error: UserInteractionError, model: &Model, id: &str, own: bool) {
    assert_eq!(error.code, ErrorCode::NotPending, "{error}");
    if let (true, Some(outcome)) = (own, model.outcome.get(id)) {
        assert!(error.message.contains(reason(*outcome)), "{error}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_pending_table_behaves_like_its_model(ops in prop::collection::vec(op(), 1..80)) {
        let store = MemoryStore::with_channel_capacity(1024);
        let mut model = Model::default();
        let mut waiters: HashMap<String, oneshot::Receiver<Resolution>> = HashMap::new();
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
                Op::Register(session) => {
                    let registered = store.register(SESSIONS[session], request()).unwrap();
                    prop_assert!(!model.known.iter().any(|(id, _)| *id == registered.id), "ids are unique");
                    model.known.push((registered.id.clone(), session));
                    model.pending.push((registered.id.clone(), session));
                    watchers[session].expected.push_back(requested(&registered.id));
                    waiters.insert(registered.id, registered.waiter);
                }
                Op::Claim(index, own, valid) => {
                    let (id, home) = model.pick(&index);
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let label = if valid { "b" } else { "zzz" };
                    let result = store.claim(SESSIONS[session], &id, answer(label));
                    let own = session == home && id != "q_unknown";
                    match (own && model.is_pending(&id), valid) {
                        (true, true) => {
                            prop_assert!(result.is_ok());
                            model.resolve(&id, Outcome::Answered);
                            watchers[home].expected.push_back(resolved(&id, Outcome::Answered));
                            let got = waiters.get_mut(&id).unwrap().try_recv().unwrap();
                            prop_assert_eq!(got, Resolution::Answered(answer("b")));
                        }
                        (true, false) => {
                            prop_assert_eq!(result.unwrap_err().code, ErrorCode::BadAnswer);
                        }
                        (false, _) => check_not_pending(result.unwrap_err(), &model, &id, own),
                    }
                }
                Op::Cancel(index, own) => {
                    let (id, home) = model.pick(&index);
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let result = store.cancel(SESSIONS[session], &id);
                    let own = session == home && id != "q_unknown";
                    if own && model.is_pending(&id) {
                        prop_assert!(result.is_ok());
                        model.resolve(&id, Outcome::Cancelled);
                        watchers[home].expected.push_back(resolved(&id, Outcome::Cancelled));
                        let got = waiters.get_mut(&id).unwrap().try_recv().unwrap();
                        prop_assert_eq!(got, Resolution::Cancelled);
                    } else {
                        check_not_pending(result.unwrap_err(), &model, &id, own);
                    }
                }
                Op::Abort(index, timeout) => {
                    let (id, home) = model.pick(&index);
                    let outcome = if timeout { Outcome::Timeout } else { Outcome::Aborted };
                    let removed = store.abort(SESSIONS[home], &id, outcome);
                    prop_assert_eq!(removed, model.is_pending(&id));
                    if removed {
                        model.resolve(&id, outcome);
                        watchers[home].expected.push_back(resolved(&id, outcome));
                        // The asker aborts itself: nothing is sent to it.
                        let got = waiters.get_mut(&id).unwrap().try_recv();
                        prop_assert_eq!(got, Err(OneshotTryRecvError::Closed));
                    }
                }
                Op::Reopen(session) => {
                    let subscription = store.subscribe(SESSIONS[session]);
                    let want = model.pending_in(session);
                    let (synced, replay) = subscription.replay.split_last().unwrap();
                    let replayed: Vec<String> = replay
                        .iter()
                        .map(|e| match &**e {
                            SessionEvent::QuestionRequested(q) => q.id.clone(),
                            other => panic!("replay holds {other:?}"),
                        })
                        .collect();
                    prop_assert_eq!(&replayed, &want);
                    prop_assert_eq!(
                        &**synced,
                        &SessionEvent::SessionSynced(SessionSynced { pending: want.clone() })
                    );
                    let snapshot: Vec<String> =
                        store.snapshot(SESSIONS[session]).into_iter().map(|q| q.id).collect();
                    prop_assert_eq!(snapshot, want);
                }
            }
            for watcher in &mut watchers {
                watcher.check();
            }
            prop_assert_eq!(store.pending_count(), model.pending.len());
        }

        // Disposal resolves every remaining question as disposed and refuses new ones.
        let remaining = model.pending.clone();
        prop_assert_eq!(store.dispose_all(), remaining.len());
        for (id, session) in &remaining {
            watchers[*session].expected.push_back(resolved(id, Outcome::Disposed));
            let got = waiters.get_mut(id).unwrap().try_recv().unwrap();
            prop_assert_eq!(got, Resolution::Disposed);
        }
        for watcher in &mut watchers {
            watcher.check();
        }
        prop_assert_eq!(store.pending_count(), 0);
        prop_assert_eq!(
            store.register("s0", request()).unwrap_err().code,
            ErrorCode::AskAborted
        );
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

    let registered = store.register("s", request()).unwrap();
    store.release("s");
    assert_eq!(
        store.lock().sessions.len(),
        1,
        "a pending question keeps it"
    );
    assert!(store.abort("s", &registered.id, Outcome::Aborted));
    assert_eq!(store.lock().sessions.len(), 0);
}

#[test]
fn remembered_resolutions_are_bounded() {
    let store = MemoryStore::new();
    for _ in 0..REMEMBERED_RESOLUTIONS + 10 {
        let registered = store.register("s", request()).unwrap();
        store.cancel("s", &registered.id).unwrap();
    }
    let table = store.lock();
    assert_eq!(table.recent.len(), REMEMBERED_RESOLUTIONS);
    assert_eq!(table.recent_order.len(), REMEMBERED_RESOLUTIONS);
}
