//! Model-based tests of the pending table's rules, on [`Table`] alone and on
//! simulated time (no runtime, no lock, no channel): random interleavings of
//! register (new, reattach, collect) / claim / cancel / abort / let go (abort,
//! detach) / read / expire / reopen against a plain model; what comes back
//! after a restart; the caps in count and in bytes.

use super::*;
use crate::server::pending::request_json;
use ask_user_core::ErrorCode;
use proptest::prelude::*;
use proptest::sample::Index;
use std::sync::OnceLock;

const SESSIONS: [&str; 3] = ["s0", "s1", "s2"];
/// Different requests, so reattaching must match the request too.
const VARIANTS: usize = 3;
const GRACE: Duration = Duration::from_secs(1000);
const MAX_KEPT: usize = 6;

/// Cases of each property: far more than a runtime-driven test could afford.
const CASES: u32 = 10_000;

/// Many cases, drawn with XorShift: in a debug build proptest's default
/// ChaCha generator costs more than the table it feeds.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}

/// The requests (parsed once: the test is about the table, not the parser),
/// of growing size so the byte cap has something to weigh.
fn requests() -> &'static [(AskRequest, Bytes)] {
    static REQUESTS: OnceLock<Vec<(AskRequest, Bytes)>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        (0..VARIANTS)
            .map(|variant| {
                let padding = "x".repeat(40 * variant);
                let request = AskRequest::from_json(&format!(
                    r#"{{"questions": [{{"id": "q", "question": "Pick {variant} {padding}", "options": [{{"label": "a"}}, {{"label": "b"}}]}}]}}"#
                ))
                .unwrap();
                let json = request_json(&request);
                (request, json)
            })
            .collect()
    })
}

/// The answer choosing `b` (valid), or `zzz` (no such option), parsed once.
fn answer(valid: bool) -> &'static AnswerBatch {
    static ANSWERS: OnceLock<[AnswerBatch; 2]> = OnceLock::new();
    let answers = ANSWERS.get_or_init(|| {
        ["zzz", "b"].map(|label| {
            AnswerBatch::from_json(&format!(
                r#"{{"answers": [{{"id": "q", "selected": ["{label}"]}}]}}"#
            ))
            .unwrap()
        })
    });
    &answers[usize::from(valid)]
}

fn limits() -> Limits {
    Limits {
        detach_grace: GRACE,
        max_kept: MAX_KEPT,
        ..Limits::default()
    }
}

/// Simulated time: a fixed origin and how far the test has moved the clock.
struct Clock {
    origin: Instant,
    elapsed: Duration,
}

impl Clock {
    fn new() -> Self {
        Self {
            origin: Instant::now(),
            elapsed: Duration::ZERO,
        }
    }

    fn now(&self) -> Now {
        Now {
            at: self.origin + self.elapsed,
            unix_ms: 1_700_000_000_000 + self.elapsed.as_millis() as u64,
        }
    }
}

/// The question `n` as its caller records it before registering.
fn asked(session: &str, variant: usize, n: u64) -> (QuestionRequested, Bytes) {
    let (request, json) = &requests()[variant];
    let question = QuestionRequested {
        id: format!("q_{n}"),
        session: session.to_owned(),
        request: request.clone(),
        created_at_ms: 1_700_000_000_000,
        asked_by: None,
    };
    (question, json.clone())
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
    /// The asker's late explicit end of a question it let go.
    AbortDetached(Index),
    /// Time passes, less than the grace.
    Wait,
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
        1 => any::<Index>().prop_map(Op::AbortDetached),
        1 => Just(Op::Wait),
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

/// A waiting call as the driver would keep it: its hold, and its channel
/// (what was handed to it, and whether it was dropped).
struct Call {
    attachment: Attachment,
    mailbox: Option<Resolution>,
    dismissed: bool,
}

/// What the test's driver saw of one step's outputs.
#[derive(Default)]
struct Seen {
    /// Per session, the events broadcast, in order.
    events: Vec<Vec<SessionEvent>>,
    journal: Vec<Write>,
    inbox_changed: bool,
}

/// Carries out `outputs` the way the driver does, onto `calls`, and returns
/// what else they said. A resolution for an unknown or finished call, or two
/// for one call, fails the test.
fn carry_out(effects: Vec<Output>, calls: &mut HashMap<WaiterId, Call>) -> Seen {
    let mut seen = Seen {
        events: vec![Vec::new(); SESSIONS.len()],
        ..Seen::default()
    };
    for effect in effects {
        match effect {
            Output::Resolve { waiter, resolution } => {
                let call = calls
                    .get_mut(&waiter)
                    .expect("a resolution for a known call");
                assert!(!call.dismissed, "a resolution after dismissal");
                assert!(call.mailbox.is_none(), "two resolutions for one call");
                call.mailbox = Some(resolution);
                call.dismissed = true;
            }
            Output::Dismiss { waiter } => {
                if let Some(call) = calls.get_mut(&waiter) {
                    assert!(!call.dismissed, "dismissed twice");
                    call.dismissed = true;
                }
            }
            Output::Broadcast { session, event } => {
                let s = SESSIONS.iter().position(|name| *name == session).unwrap();
                seen.events[s].push((*event).clone());
            }
            Output::Journal(write) => seen.journal.push(write),
            Output::InboxChanged => seen.inbox_changed = true,
        }
    }
    seen
}

/// One event as the model expects it: its kind, its question, its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    Requested(String),
    Resolved(String, Outcome),
    Detached(String),
    Attached(String),
}

fn summary(event: &SessionEvent) -> Expected {
    match event {
        SessionEvent::QuestionRequested(q) => Expected::Requested(q.id.clone()),
        SessionEvent::QuestionResolved(r) => {
            let record = r.record.as_ref().expect("a resolved frame has its record");
            assert_eq!((&record.id, record.outcome), (&r.id, r.outcome));
            assert_eq!(record.answer.is_some(), r.outcome == Outcome::Answered);
            Expected::Resolved(r.id.clone(), r.outcome)
        }
        SessionEvent::QuestionDetached(q) => Expected::Detached(q.id.clone()),
        SessionEvent::QuestionAttached(q) => Expected::Attached(q.id.clone()),
        other => panic!("the table broadcast {other:?}"),
    }
}

fn check_not_pending(error: &UserInteractionError, why: Option<Ended>) {
    assert_eq!(error.code, ErrorCode::NotPending, "{error}");
    match why {
        Some(ended) => assert!(error.message.ends_with(ended.reason()), "{error}"),
        None => assert!(error.message.contains("no such question"), "{error}"),
    }
}

fn ended_write(id: &str, outcome: Outcome, now: Now) -> Write {
    Write::Ended {
        id: id.to_owned(),
        outcome,
        at_ms: now.unix_ms,
    }
}

/// The test's driver: the table, the clock and the calls.
struct Harness {
    table: Table,
    clock: Clock,
    calls: HashMap<WaiterId, Call>,
    next_waiter: u64,
    next_question: u64,
}

impl Harness {
    fn new(limits: Limits) -> Self {
        Self {
            table: Table::new(limits),
            clock: Clock::new(),
            calls: HashMap::new(),
            next_waiter: 0,
            next_question: 0,
        }
    }

    fn apply(&mut self, input: Input) -> (Reply, Seen) {
        let Outputs { effects, reply } = self.table.apply(input, self.clock.now());
        let seen = carry_out(effects, &mut self.calls);
        (reply, seen)
    }

    /// Registers a new call asking `variant` in `session`.
    fn register(&mut self, session: usize, variant: usize) -> (WaiterId, Reply, Seen) {
        self.next_waiter += 1;
        self.next_question += 1;
        let waiter = WaiterId(self.next_waiter);
        let (question, request_json) = asked(SESSIONS[session], variant, self.next_question);
        // Known before the step, as the driver keeps the channel first.
        let placeholder = Call {
            attachment: Attachment {
                waiter,
                seq: u64::MAX,
                key: 0,
                bytes: 0,
                event: SharedEvent::from(SessionEvent::QuestionRequested(question.clone())),
            },
            mailbox: None,
            dismissed: false,
        };
        self.calls.insert(waiter, placeholder);
        let (reply, seen) = self.apply(Input::Register {
            question,
            request_json,
            waiter,
        });
        match &reply {
            Reply::Registered { attachment, .. } => {
                self.calls.get_mut(&waiter).unwrap().attachment = attachment.clone();
            }
            _ => {
                self.calls.remove(&waiter);
            }
        }
        (waiter, reply, seen)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_pending_table_behaves_like_its_model(ops in prop::collection::vec(op(), 1..50)) {
        let mut h = Harness::new(limits());
        let mut model = Model::default();
        // The call holding each question, by model index.
        let mut holders: HashMap<usize, WaiterId> = HashMap::new();
        // When each detached question's or held resolution's grace ends.
        let mut until: HashMap<usize, Duration> = HashMap::new();

        for op in ops {
            let mut want: Vec<Vec<Expected>> = vec![Vec::new(); SESSIONS.len()];
            let mut want_journal: Vec<Write> = Vec::new();
            let now = h.clock.now();
            let seen = match op {
                Op::Register(session, variant) => {
                    let (waiter, reply, seen) = h.register(session, variant);
                    match model.reattachable(session, variant) {
                        Some(i) => {
                            let Reply::Registered { attachment, found } = reply else {
                                panic!("refused a reattach: {reply:?}");
                            };
                            prop_assert_eq!(attachment.id(), model.questions[i].id.as_str());
                            let call = &h.calls[&waiter];
                            match model.questions[i].state.clone() {
                                State::Detached => {
                                    prop_assert_eq!(found, Found::Reattached);
                                    prop_assert!(call.mailbox.is_none());
                                    model.questions[i].state = State::Attached;
                                    want[session].push(Expected::Attached(model.questions[i].id.clone()));
                                }
                                State::Held(resolution) => {
                                    prop_assert_eq!(found, Found::Collected);
                                    prop_assert_eq!(call.mailbox.as_ref(), Some(&resolution));
                                    model.questions[i].state = State::Delivered(resolution);
                                }
                                other => panic!("not reattachable: {other:?}"),
                            }
                            until.remove(&i);
                            holders.insert(i, waiter);
                        }
                        None if model.count(|s| matches!(s, State::Attached | State::Detached | State::Held(_))) >= MAX_KEPT => {
                            let Reply::Refused(error) = reply else { panic!("kept past the cap: {reply:?}") };
                            prop_assert_eq!(error, RegisterError::TooManyPending { limit: PendingLimit::Total(MAX_KEPT) });
                        }
                        None => {
                            let Reply::Registered { attachment, found } = reply else {
                                panic!("refused: {reply:?}");
                            };
                            prop_assert_eq!(found, Found::New);
                            let id = attachment.id().to_owned();
                            prop_assert!(!model.questions.iter().any(|q| q.id == id), "ids are unique");
                            prop_assert!(seen.inbox_changed, "a new question changes the inbox");
                            want[session].push(Expected::Requested(id.clone()));
                            model.questions.push(Question {
                                id, session, variant, seq: model.next_seq, state: State::Attached, ended: None,
                            });
                            model.next_seq += 1;
                            holders.insert(model.questions.len() - 1, waiter);
                        }
                    }
                    seen
                }
                Op::Claim(index, own, valid) => {
                    let (id, home) = model.pick(&index)
                        .map(|i| (model.questions[i].id.clone(), model.questions[i].session))
                        .unwrap_or_else(|| ("q_unknown".to_owned(), 0));
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let i = model.pick(&index).filter(|_| session == home);
                    // The driver validates against the pending question first.
                    let checked = h.table.requested(SESSIONS[session], &id)
                        .and_then(|event| answer(valid).clone().normalize(&question(&event).request));
                    match (i.filter(|i| model.is_pending(*i)), valid) {
                        (Some(i), true) => {
                            let answer = checked.expect("a valid answer to a pending question");
                            let (reply, seen) = h.apply(Input::Claim {
                                session: SESSIONS[session].to_owned(), id: id.clone(), answer, by: None,
                            });
                            prop_assert!(matches!(reply, Reply::Done), "{:?}", reply);
                            let q = &mut model.questions[i];
                            let resolution = Resolution::Answered(answer_b());
                            q.state = match q.state {
                                State::Attached => State::Delivered(resolution.clone()),
                                _ => {
                                    until.insert(i, h.clock.elapsed + GRACE);
                                    State::Held(resolution.clone())
                                }
                            };
                            if q.state == State::Delivered(resolution.clone()) {
                                prop_assert_eq!(h.calls[&holders[&i]].mailbox.as_ref(), Some(&resolution));
                            }
                            q.ended = Some(Ended::Answered);
                            want[home].push(Expected::Resolved(id, Outcome::Answered));
                            seen
                        }
                        (Some(_), false) => {
                            prop_assert_eq!(checked.unwrap_err().code, ErrorCode::BadAnswer);
                            Seen { events: vec![Vec::new(); SESSIONS.len()], ..Seen::default() }
                        }
                        (None, _) => {
                            let why = i.and_then(|i| model.questions[i].ended);
                            check_not_pending(&checked.unwrap_err(), why);
                            // A claim that raced past validation finds it gone too.
                            let (reply, seen) = h.apply(Input::Claim {
                                session: SESSIONS[session].to_owned(), id, answer: answer_b(), by: None,
                            });
                            let Reply::NotPending(error) = reply else { panic!("claimed: {reply:?}") };
                            check_not_pending(&error, why);
                            seen
                        }
                    }
                }
                Op::Cancel(index, own) => {
                    let (id, home) = model.pick(&index)
                        .map(|i| (model.questions[i].id.clone(), model.questions[i].session))
                        .unwrap_or_else(|| ("q_unknown".to_owned(), 0));
                    let session = if own { home } else { (home + 1) % SESSIONS.len() };
                    let (reply, seen) = h.apply(Input::Cancel {
                        session: SESSIONS[session].to_owned(), id: id.clone(), by: None,
                    });
                    let i = model.pick(&index).filter(|_| session == home);
                    match i.filter(|i| model.is_pending(*i)) {
                        Some(i) => {
                            prop_assert!(matches!(reply, Reply::Done), "{:?}", reply);
                            let q = &mut model.questions[i];
                            q.state = match q.state {
                                State::Attached => {
                                    prop_assert_eq!(h.calls[&holders[&i]].mailbox.as_ref(), Some(&Resolution::Cancelled));
                                    State::Delivered(Resolution::Cancelled)
                                }
                                _ => {
                                    until.insert(i, h.clock.elapsed + GRACE);
                                    State::Held(Resolution::Cancelled)
                                }
                            };
                            q.ended = Some(Ended::Cancelled);
                            want[home].push(Expected::Resolved(id, Outcome::Cancelled));
                        }
                        None => {
                            let Reply::NotPending(error) = reply else { panic!("cancelled: {reply:?}") };
                            check_not_pending(&error, i.and_then(|i| model.questions[i].ended));
                        }
                    }
                    seen
                }
                Op::Abort(index, timeout) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let (id, home) = (model.questions[i].id.clone(), model.questions[i].session);
                    let outcome = if timeout { Outcome::Timeout } else { Outcome::Aborted };
                    let (reply, seen) = h.apply(Input::Abort {
                        session: SESSIONS[home].to_owned(), id: id.clone(), outcome,
                    });
                    let Reply::Ended(removed) = reply else { panic!("{reply:?}") };
                    prop_assert_eq!(removed, model.is_pending(i));
                    if removed {
                        let ended = Ended::from_outcome(outcome);
                        let was = std::mem::replace(&mut model.questions[i].state, State::Ended(ended));
                        model.questions[i].ended = Some(ended);
                        want[home].push(Expected::Resolved(id.clone(), outcome));
                        want_journal.push(ended_write(&id, outcome, now));
                        until.remove(&i);
                        // The asker aborts itself: nothing is sent to it, its channel is dropped.
                        if was == State::Attached {
                            let call = &h.calls[&holders[&i]];
                            prop_assert!(call.dismissed && call.mailbox.is_none());
                        }
                    }
                    seen
                }
                Op::LetGo(index, on_purpose) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let Some(waiter) = holders.remove(&i) else { continue };
                    let mut call = h.calls.remove(&waiter).unwrap();
                    let home = model.questions[i].session;
                    let how = if on_purpose { LetGo::Abort } else { LetGo::Detach };
                    let unread = call.mailbox.take();
                    let (reply, seen) = h.apply(Input::LetGo {
                        session: SESSIONS[home].to_owned(), attachment: call.attachment, how, unread,
                    });
                    prop_assert!(matches!(reply, Reply::Done));
                    let q = &mut model.questions[i];
                    match (q.state.clone(), on_purpose) {
                        (State::Attached, true) => {
                            q.state = State::Ended(Ended::Aborted);
                            q.ended = Some(Ended::Aborted);
                            want[home].push(Expected::Resolved(q.id.clone(), Outcome::Aborted));
                            want_journal.push(ended_write(&q.id, Outcome::Aborted, now));
                        }
                        (State::Attached, false) => {
                            q.state = State::Detached;
                            until.insert(i, h.clock.elapsed + GRACE);
                            want[home].push(Expected::Detached(q.id.clone()));
                            want_journal.push(Write::Detached { id: q.id.clone() });
                        }
                        // Never lost: an unread resolution is held.
                        (State::Delivered(resolution), _) => {
                            want_journal.push(Write::Detached { id: q.id.clone() });
                            q.state = State::Held(resolution);
                            until.insert(i, h.clock.elapsed + GRACE);
                        }
                        (State::Ended(_), _) => {}
                        (other, _) => panic!("a call held {other:?}"),
                    }
                    seen
                }
                Op::Read(index) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let Some(&waiter) = holders.get(&i) else { continue };
                    let q = &mut model.questions[i];
                    let call = h.calls.get_mut(&waiter).unwrap();
                    match q.state.clone() {
                        State::Delivered(resolution) => {
                            prop_assert_eq!(call.mailbox.take(), Some(resolution));
                            q.state = State::Ended(q.ended.expect("resolved"));
                            holders.remove(&i);
                            h.calls.remove(&waiter);
                        }
                        State::Attached => {
                            // Nothing yet: the call keeps waiting.
                            prop_assert!(call.mailbox.is_none() && !call.dismissed);
                        }
                        State::Ended(_) => {
                            prop_assert!(call.mailbox.is_none() && call.dismissed);
                            holders.remove(&i);
                            h.calls.remove(&waiter);
                        }
                        other => panic!("a call held {other:?}"),
                    }
                    continue;
                }
                Op::AbortDetached(index) => {
                    let Some(i) = model.pick(&index) else { continue };
                    let (id, home) = (model.questions[i].id.clone(), model.questions[i].session);
                    let (reply, seen) = h.apply(Input::AbortDetached {
                        session: SESSIONS[home].to_owned(), id: id.clone(),
                    });
                    let Reply::Ended(ended) = reply else { panic!("{reply:?}") };
                    let detached = model.questions[i].state == State::Detached;
                    prop_assert_eq!(ended, detached);
                    if detached {
                        model.questions[i].state = State::Ended(Ended::Aborted);
                        model.questions[i].ended = Some(Ended::Aborted);
                        until.remove(&i);
                        want[home].push(Expected::Resolved(id.clone(), Outcome::Aborted));
                        want_journal.push(ended_write(&id, Outcome::Aborted, now));
                    }
                    seen
                }
                Op::Wait => {
                    h.clock.elapsed += GRACE / 3;
                    let due = until.values().min().map(|at| h.clock.origin + *at);
                    prop_assert_eq!(h.table.poll_timeout(), due, "the next deadline is the earliest grace");
                    let now = h.clock.now();
                    let (_, seen) = h.apply(Input::Expire);
                    // Ended in the order their graces began, which the model
                    // does not track: compare each session's batch as a set.
                    let due: Vec<usize> = until.iter().filter(|(_, at)| **at <= h.clock.elapsed).map(|(i, _)| *i).collect();
                    for i in due {
                        until.remove(&i);
                        let q = &mut model.questions[i];
                        match q.state {
                            State::Detached => {
                                q.state = State::Ended(Ended::Expired);
                                q.ended = Some(Ended::Expired);
                                want[q.session].push(Expected::Resolved(q.id.clone(), Outcome::Aborted));
                                want_journal.push(ended_write(&q.id, Outcome::Aborted, now));
                            }
                            State::Held(_) => {
                                q.state = State::Ended(q.ended.expect("resolved"));
                                want_journal.push(Write::NeverDelivered { id: q.id.clone() });
                            }
                            ref other => panic!("a grace ran for {other:?}"),
                        }
                    }
                    for w in &mut want { w.sort_by_key(|e| format!("{e:?}")); }
                    want_journal.sort_by_key(|w| format!("{w:?}"));
                    seen
                }
                Op::ExpireAll => {
                    h.clock.elapsed += GRACE * 2;
                    let now = h.clock.now();
                    let (_, seen) = h.apply(Input::Expire);
                    for q in &mut model.questions {
                        match q.state {
                            State::Detached => {
                                q.state = State::Ended(Ended::Expired);
                                q.ended = Some(Ended::Expired);
                                want[q.session].push(Expected::Resolved(q.id.clone(), Outcome::Aborted));
                                want_journal.push(ended_write(&q.id, Outcome::Aborted, now));
                            }
                            State::Held(_) => {
                                q.state = State::Ended(q.ended.expect("resolved"));
                                want_journal.push(Write::NeverDelivered { id: q.id.clone() });
                            }
                            _ => {}
                        }
                    }
                    until.clear();
                    for w in &mut want { w.sort_by_key(|e| format!("{e:?}")); }
                    want_journal.sort_by_key(|w| format!("{w:?}"));
                    prop_assert_eq!(h.table.poll_timeout(), None, "nothing else is due");
                    seen
                }
                Op::Reopen(session) => {
                    let replay = h.table.replay(SESSIONS[session]);
                    let want = model.pending_in(session);
                    let (synced, replay) = replay.split_last().unwrap();
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
                    let listed: Vec<String> = h.table.pending_events(SESSIONS[session])
                        .iter().map(|event| question(event).id.clone()).collect();
                    prop_assert_eq!(listed, ids);
                    continue;
                }
            };
            let mut got: Vec<Vec<Expected>> = seen.events.iter()
                .map(|events| events.iter().map(summary).collect())
                .collect();
            let mut journal = seen.journal;
            if matches!(op, Op::Wait | Op::ExpireAll) {
                for g in &mut got { g.sort_by_key(|e| format!("{e:?}")); }
                journal.sort_by_key(|w| format!("{w:?}"));
            }
            prop_assert_eq!(got, want, "broadcasts of {:?}", op);
            prop_assert_eq!(journal, want_journal, "journal of {:?}", op);
            prop_assert_eq!(
                h.table.pending_count(),
                model.count(|s| matches!(s, State::Attached | State::Detached))
            );
            prop_assert_eq!(h.table.held_count(), model.count(|s| matches!(s, State::Held(_))));
        }

        // Shutdown resolves every remaining question as disposed, hands the
        // waiting calls `Disposed`, drops what is held and refuses new ones.
        let remaining: Vec<usize> = (0..model.questions.len()).filter(|i| model.is_pending(*i)).collect();
        let now = h.clock.now();
        let (reply, seen) = h.apply(Input::Shutdown);
        let Reply::Disposed(count) = reply else { panic!("{reply:?}") };
        prop_assert_eq!(count, remaining.len());
        let mut want: Vec<Vec<Expected>> = vec![Vec::new(); SESSIONS.len()];
        let mut want_journal = Vec::new();
        for &i in &remaining {
            let q = &model.questions[i];
            want[q.session].push(Expected::Resolved(q.id.clone(), Outcome::Disposed));
            want_journal.push(ended_write(&q.id, Outcome::Disposed, now));
            if q.state == State::Attached {
                let call = &h.calls[&holders[&i]];
                prop_assert_eq!(call.mailbox.as_ref(), Some(&Resolution::Disposed));
            }
        }
        let mut got: Vec<Vec<Expected>> = seen.events.iter()
            .map(|events| events.iter().map(summary).collect())
            .collect();
        for (g, w) in got.iter_mut().zip(want.iter_mut()) {
            g.sort_by_key(|e| format!("{e:?}"));
            w.sort_by_key(|e| format!("{e:?}"));
        }
        let mut journal = seen.journal;
        journal.sort_by_key(|w| format!("{w:?}"));
        want_journal.sort_by_key(|w| format!("{w:?}"));
        prop_assert_eq!(got, want);
        prop_assert_eq!(journal, want_journal);
        prop_assert_eq!(h.table.pending_count(), 0);
        prop_assert_eq!(h.table.held_count(), 0);
        prop_assert_eq!(h.table.pending_bytes(), 0);
        prop_assert_eq!(h.table.poll_timeout(), None);
        let (_, refused, _) = h.register(0, 0);
        prop_assert!(matches!(refused, Reply::Refused(RegisterError::ShuttingDown)), "{:?}", refused);
    }
}

/// The valid answer, normalised (the same for every request variant).
fn answer_b() -> AnswerBatch {
    static NORMALISED: OnceLock<AnswerBatch> = OnceLock::new();
    NORMALISED
        .get_or_init(|| answer(true).clone().normalize(&requests()[0].0).unwrap())
        .clone()
}

/// A step of the restart and cap properties: ask, let go, answer, cancel, abort.
#[derive(Debug, Clone)]
enum Step {
    Ask(usize, usize),
    /// A call goes away without ending its ask (detach).
    Leave(Index),
    /// The call ends its ask on purpose.
    End(Index),
    Answer(Index),
    Cancel(Index),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..SESSIONS.len(), 0..VARIANTS).prop_map(|(s, v)| Step::Ask(s, v)),
        2 => any::<Index>().prop_map(Step::Leave),
        1 => any::<Index>().prop_map(Step::End),
        2 => any::<Index>().prop_map(Step::Answer),
        1 => any::<Index>().prop_map(Step::Cancel),
    ]
}

/// Every pending question of `table`, per session, oldest first.
fn pending_questions(table: &Table) -> Vec<QuestionRequested> {
    SESSIONS
        .iter()
        .flat_map(|session| table.pending_events(session))
        .map(|event| question(&event).clone())
        .collect()
}

/// Runs `steps` on `h`: each picks among the calls still waiting, or among
/// the pending questions (answers and cancels come from the page, which sees
/// them all). `on_ask` sees each ask's reply with the table's figures just
/// before it. Returns how many questions and bytes were rescued: held again
/// for a call that went away with its resolution unread.
fn run(
    h: &mut Harness,
    steps: &[Step],
    mut on_ask: impl FnMut(&Figures, usize, &Reply),
) -> (usize, usize) {
    let mut live: Vec<WaiterId> = Vec::new();
    let mut rescued = (0, 0);
    for step in steps {
        match step {
            Step::Ask(session, variant) => {
                let before = Figures {
                    kept: h.table.pending_count() + h.table.held_count(),
                    bytes: h.table.pending_bytes(),
                    in_session: h.table.pending_events(SESSIONS[*session]).len(),
                };
                let (waiter, reply, _) = h.register(*session, *variant);
                on_ask(&before, *variant, &reply);
                if matches!(
                    reply,
                    Reply::Registered {
                        found: Found::New | Found::Reattached,
                        ..
                    }
                ) {
                    live.push(waiter);
                }
            }
            Step::Leave(index) | Step::End(index) => {
                if live.is_empty() {
                    continue;
                }
                let waiter = live.remove(index.index(live.len()));
                let mut call = h.calls.remove(&waiter).unwrap();
                let session = question(&call.attachment.event).session.clone();
                let how = if matches!(step, Step::End(_)) {
                    LetGo::Abort
                } else {
                    LetGo::Detach
                };
                let unread = call.mailbox.take();
                if unread.is_some() {
                    rescued.0 += 1;
                    rescued.1 += call.attachment.bytes;
                }
                h.apply(Input::LetGo {
                    session,
                    attachment: call.attachment,
                    how,
                    unread,
                });
            }
            Step::Answer(index) | Step::Cancel(index) => {
                let pending = pending_questions(&h.table);
                if pending.is_empty() {
                    continue;
                }
                let q = &pending[index.index(pending.len())];
                let (session, id) = (q.session.clone(), q.id.clone());
                let input = match step {
                    Step::Answer(_) => Input::Claim {
                        session,
                        id,
                        answer: answer_b(),
                        by: None,
                    },
                    _ => Input::Cancel {
                        session,
                        id,
                        by: None,
                    },
                };
                let (reply, _) = h.apply(input);
                assert!(matches!(reply, Reply::Done), "{reply:?}");
            }
        }
    }
    rescued
}

/// What the table held just before an ask.
struct Figures {
    kept: usize,
    bytes: usize,
    in_session: usize,
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn what_comes_back_after_a_restart_is_what_was_pending(steps in prop::collection::vec(step(), 1..40)) {
        let mut before = Harness::new(limits());
        run(&mut before, &steps, |_, _, _| {});
        // The record keeps what was open: pending questions, and resolutions
        // no call collected (an answer, or `None` for a cancel).
        let pending = pending_questions(&before.table);
        let held: Vec<(SharedEvent, Resolution)> = before.table.held_resolutions();
        let restored = Restored {
            pending: pending.clone(),
            held: held
                .iter()
                .map(|(event, resolution)| {
                    let answer = match resolution {
                        Resolution::Answered(answer) => Some(answer.clone()),
                        Resolution::Cancelled => None,
                        Resolution::Disposed => panic!("a disposal is never held"),
                    };
                    (question(event).clone(), answer)
                })
                .collect(),
            ..Restored::default()
        };

        let mut after = Harness::new(limits());
        after.clock.elapsed = GRACE * 5;
        let (reply, seen) = after.apply(Input::Restore(restored));
        prop_assert!(matches!(reply, Reply::Done));
        prop_assert!(seen.inbox_changed);
        prop_assert!(seen.journal.is_empty(), "a restore writes nothing: {:?}", seen.journal);

        // All of it, unless rescued answers took the table past its caps:
        // then held answers come first, and what does not fit stays in the
        // record for a start with room.
        let mut room = MAX_KEPT;
        let mut fits = |_: &QuestionRequested| { let fits = room > 0; room = room.saturating_sub(1); fits };
        let held: Vec<(SharedEvent, Resolution)> = held.into_iter().filter(|(event, _)| fits(question(event))).collect();
        let pending: Vec<QuestionRequested> = pending.into_iter().filter(|q| fits(q)).collect();
        let complete = before.table.pending_count() + before.table.held_count() <= MAX_KEPT;
        prop_assert_eq!(pending_questions(&after.table), pending);
        let summary = |held: &[(SharedEvent, Resolution)]| -> Vec<(String, Resolution)> {
            held.iter().map(|(event, resolution)| (question(event).id.clone(), resolution.clone())).collect()
        };
        prop_assert_eq!(summary(&after.table.held_resolutions()), summary(&held));
        if complete {
            prop_assert_eq!(after.table.pending_bytes(), before.table.pending_bytes());
            prop_assert_eq!(after.table.pending_count(), before.table.pending_count());
            prop_assert_eq!(after.table.held_count(), before.table.held_count());
        }
        // Every question comes back detached (no call waits after a restart),
        // with its grace counted from the restart.
        for session in SESSIONS {
            let replay = after.table.replay(session);
            let requested = replay.iter().filter(|e| matches!(&***e, SessionEvent::QuestionRequested(_))).count();
            let detached = replay.iter().filter(|e| matches!(&***e, SessionEvent::QuestionDetached(_))).count();
            prop_assert_eq!(requested, detached);
        }
        let kept = after.table.pending_count() + after.table.held_count();
        prop_assert_eq!(
            after.table.poll_timeout(),
            (kept > 0).then(|| after.clock.now().at + GRACE)
        );
        // The next identical ask collects the oldest held resolution as it was.
        if let Some((event, resolution)) = held.first() {
            let asked = question(event);
            let session = SESSIONS.iter().position(|s| *s == asked.session).unwrap();
            let variant = requests().iter().position(|(r, _)| *r == asked.request).unwrap();
            let (waiter, reply, _) = after.register(session, variant);
            let Reply::Registered { attachment, found } = reply else { panic!("{reply:?}") };
            prop_assert_eq!(found, Found::Collected);
            prop_assert_eq!(attachment.id(), asked.id.as_str());
            prop_assert_eq!(after.calls[&waiter].mailbox.as_ref(), Some(resolution));
        }
    }

    #[test]
    fn the_caps_hold_in_count_and_in_bytes_and_a_refusal_names_the_limit_it_would_break(
        max_kept in 1..10usize,
        max_per_session in 1..5usize,
        max_bytes in 200..1500usize,
        steps in prop::collection::vec(step(), 1..50),
    ) {
        let limits = Limits { detach_grace: GRACE, max_kept, max_per_session, max_bytes };
        let mut h = Harness::new(limits);
        let (rescued, rescued_bytes) = run(&mut h, &steps, |before, variant, reply| {
            let bytes = entry_bytes(&requests()[variant].1);
            let (kept, in_session) = (before.kept, before.in_session);
            match reply {
                Reply::Refused(RegisterError::TooManyPending { limit }) => {
                    let want = if kept >= max_kept {
                        PendingLimit::Total(max_kept)
                    } else if in_session >= max_per_session {
                        PendingLimit::PerSession(max_per_session)
                    } else {
                        assert!(before.bytes + bytes > max_bytes, "refused with room: {limit:?}");
                        PendingLimit::Bytes(max_bytes)
                    };
                    assert_eq!(*limit, want);
                }
                Reply::Registered { found: Found::New, .. } => {
                    assert!(kept < max_kept, "{kept} kept, {max_kept} allowed");
                    assert!(in_session < max_per_session, "{in_session} in the session");
                    assert!(before.bytes + bytes <= max_bytes, "{} bytes", before.bytes + bytes);
                }
                Reply::Registered { .. } => {}
                other => panic!("{other:?}"),
            }
        });
        // And after all of it, what is kept is within the caps and weighed
        // right; only an answer rescued from a call that went away unread may
        // stand past them (the person's answer is never dropped to make room).
        let table = &h.table;
        prop_assert!(table.pending_count() + table.held_count() <= max_kept + rescued);
        prop_assert!(table.pending_bytes() <= max_bytes + rescued_bytes);
        for session in SESSIONS {
            prop_assert!(table.pending_events(session).len() <= max_per_session);
        }
        let weighed: usize = SESSIONS
            .iter()
            .flat_map(|session| table.pending_events(session))
            .chain(table.held_resolutions().into_iter().map(|(event, _)| event))
            .map(|event| entry_bytes(&event.request_json().unwrap()))
            .sum();
        prop_assert_eq!(table.pending_bytes(), weighed);
    }
}

// --- escalation (issue 24) ----------------------------------------------------

/// A person for audience checks.
struct Member(&'static str, &'static [&'static str]);

impl ask_user_core::Member for Member {
    fn name(&self) -> &str {
        self.0
    }
    fn has_role(&self, role: &str) -> bool {
        self.1.contains(&role)
    }
}

const ONCALL: Member = Member("ana", &["oncall"]);
const LEAD: Member = Member("lee", &["leads"]);

/// A request for role `oncall` that escalates to `leads` after `seconds`.
fn escalating(seconds: u64) -> (AskRequest, Bytes) {
    let request = AskRequest::from_json(&format!(
        r#"{{"questions": [{{"id": "q", "question": "Deploy?"}}], "audience": {{"role": "oncall"}}, "escalate_after": {{"seconds": {seconds}, "role": "leads"}}}}"#
    ))
    .unwrap();
    let json = request_json(&request);
    (request, json)
}

#[derive(Debug, Clone)]
enum EscalationOp {
    /// Ask a question escalating after 1 to 4 seconds.
    Ask(u64),
    /// Move the clock by this many milliseconds.
    Advance(u64),
    /// Answer a pending question (by index).
    Answer(Index),
    /// The asker gives up on one.
    Abort(Index),
}

fn escalation_op() -> impl Strategy<Value = EscalationOp> {
    prop_oneof![
        (1u64..5).prop_map(EscalationOp::Ask),
        (0u64..3_000).prop_map(EscalationOp::Advance),
        any::<Index>().prop_map(EscalationOp::Answer),
        any::<Index>().prop_map(EscalationOp::Abort),
    ]
}

/// What the model keeps of a question.
#[derive(Debug)]
struct Modelled {
    session: &'static str,
    id: String,
    due_ms: u64,
    pending: bool,
    escalated: bool,
}

/// Runs the timer as the driver does: `Expire` whenever `poll_timeout` is due.
fn run_timer(table: &mut Table, clock: &Clock) -> Vec<Output> {
    let mut effects = Vec::new();
    while table.poll_timeout().is_some_and(|at| at <= clock.now().at) {
        effects.extend(table.apply(Input::Expire, clock.now()).effects);
    }
    effects
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..config() })]

    /// Escalation widens a question's audience to its second role exactly
    /// when its `escalate_after` is due (counted from the ask), once, and
    /// only while it is pending; its `question/requested` goes out again then,
    /// escalated, so a stream of someone newly in the audience shows it.
    #[test]
    fn escalation_widens_the_audience_once_on_time_and_only_while_pending(
        ops in proptest::collection::vec(escalation_op(), 1..40)
    ) {
        let mut clock = Clock::new();
        let mut table = Table::new(Limits { detach_grace: GRACE, ..Limits::default() });
        let mut model: Vec<Modelled> = Vec::new();
        let mut waiter = 0;
        for op in ops {
            let mut effects = Vec::new();
            match op {
                EscalationOp::Ask(seconds) => {
                    let (request, json) = escalating(seconds);
                    let now = clock.now();
                    let session = SESSIONS[model.len() % SESSIONS.len()];
                    let id = format!("q_{}", model.len());
                    waiter += 1;
                    let out = table.apply(
                        Input::Register {
                            question: QuestionRequested {
                                id: id.clone(),
                                session: session.to_owned(),
                                request,
                                created_at_ms: now.unix_ms,
                                asked_by: None,
                            },
                            request_json: json,
                            waiter: WaiterId(waiter),
                        },
                        now,
                    );
                    let new = matches!(out.reply, Reply::Registered { found: Found::New, .. });
                    prop_assert!(new, "registered as new");
                    model.push(Modelled {
                        session,
                        id,
                        due_ms: now.unix_ms + seconds * 1000,
                        pending: true,
                        escalated: false,
                    });
                }
                EscalationOp::Advance(ms) => clock.elapsed += Duration::from_millis(ms),
                EscalationOp::Answer(index) | EscalationOp::Abort(index) => {
                    if model.is_empty() {
                        continue;
                    }
                    let at = index.index(model.len());
                    let q = &mut model[at];
                    let input = match op {
                        EscalationOp::Answer(_) => Input::Claim {
                            session: q.session.to_owned(),
                            id: q.id.clone(),
                            answer: AnswerBatch::from_json(
                                r#"{"answers": [{"id": "q", "custom": "yes"}]}"#,
                            )
                            .unwrap(),
                            by: None,
                        },
                        _ => Input::Abort {
                            session: q.session.to_owned(),
                            id: q.id.clone(),
                            outcome: Outcome::Aborted,
                        },
                    };
                    effects.extend(table.apply(input, clock.now()).effects);
                    q.pending = false;
                }
            }
            effects.extend(run_timer(&mut table, &clock));
            let now_ms = clock.now().unix_ms;
            // Every `question/requested` sent again is an escalation due now.
            for effect in &effects {
                let Output::Broadcast { session, event } = effect else { continue };
                let SessionEvent::QuestionRequested(q) = &**event else { continue };
                let m = model.iter_mut().find(|m| m.id == q.id).expect("a modelled question");
                prop_assert_eq!(session.as_str(), m.session);
                prop_assert!(m.pending, "{} escalated after it ended", m.id);
                prop_assert!(!m.escalated, "{} escalated twice", m.id);
                prop_assert!(m.due_ms <= now_ms, "{} escalated early", m.id);
                prop_assert!(event.is_escalated());
                m.escalated = true;
            }
            for m in &model {
                let admits = |who: &Member| table.admits(m.session, &m.id, who);
                if !m.pending {
                    prop_assert_eq!(admits(&ONCALL), None);
                    continue;
                }
                prop_assert_eq!(m.escalated, m.due_ms <= now_ms, "{} on time", &m.id);
                prop_assert_eq!(admits(&ONCALL), Some(true), "the first audience always");
                prop_assert_eq!(admits(&LEAD), Some(m.escalated), "the second role once escalated");
                let listed = table.pending_events(m.session);
                let event = listed.iter().find(|e| question(e).id == m.id).unwrap();
                prop_assert_eq!(event.is_escalated(), m.escalated, "lists carry it");
            }
            // The timer is never later than the next escalation due.
            if let Some(next) = model.iter().filter(|m| m.pending && !m.escalated).map(|m| m.due_ms).min() {
                let at = table.poll_timeout().expect("an escalation is due later");
                prop_assert!(at <= clock.now().at + Duration::from_millis(next - now_ms));
            }
        }
    }
}

#[test]
fn a_restored_question_past_its_escalation_comes_back_escalated_and_one_before_it_escalates_on_time()
 {
    let clock = Clock::new();
    let now = clock.now();
    let mut table = Table::new(limits());
    let restored = |id: &str, asked_ms_ago: u64| {
        let (request, _) = escalating(60);
        QuestionRequested {
            id: id.to_owned(),
            session: "s0".to_owned(),
            request,
            created_at_ms: now.unix_ms - asked_ms_ago,
            asked_by: None,
        }
    };
    table.apply(
        Input::Restore(Restored {
            pending: vec![restored("late", 61_000), restored("early", 59_000)],
            ..Restored::default()
        }),
        now,
    );
    assert_eq!(
        table.admits("s0", "late", &LEAD),
        Some(true),
        "due while the host was down"
    );
    assert_eq!(table.admits("s0", "early", &LEAD), Some(false));
    assert_eq!(
        table.poll_timeout(),
        Some(now.at + Duration::from_secs(1)),
        "the rest of its minute, counted from the ask"
    );
    let later = Now {
        at: now.at + Duration::from_secs(1),
        unix_ms: now.unix_ms + 1_000,
    };
    let out = table.apply(Input::Expire, later);
    assert!(out.effects.iter().any(|e| matches!(
        e,
        Output::Broadcast { event, .. } if event.is_escalated() && question(event).id == "early"
    )));
    assert_eq!(table.admits("s0", "early", &LEAD), Some(true));
}
