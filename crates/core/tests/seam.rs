//! The seam: registration, disposal, aborts, validation on both sides of the
//! provider, and errors that survive to the tool result.

use ask_user_core::tool::{parse_result, render_result};
use ask_user_core::{
    AbortController, AbortSignal, AnswerBatch, AskContext, AskRequest, DEFAULT_SESSION, ErrorCode,
    ProviderFuture, UserInteraction, UserInteractionError, UserInteractionProvider,
};
use futures::channel::oneshot;
use futures::executor::block_on;
use futures::future::{self, join};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a scripted provider was asked.
#[derive(Default)]
struct Calls {
    count: AtomicUsize,
    requests: Mutex<Vec<AskRequest>>,
    sessions: Mutex<Vec<String>>,
}

/// Answers every ask with the same result and records what it saw.
struct Scripted {
    reply: Result<Value, UserInteractionError>,
    calls: Arc<Calls>,
}

impl Scripted {
    fn answering(answers: Value) -> (Arc<Self>, Arc<Calls>) {
        Self::replying(Ok(json!({ "answers": answers })))
    }

    fn replying(reply: Result<Value, UserInteractionError>) -> (Arc<Self>, Arc<Calls>) {
        let calls = Arc::new(Calls::default());
        let provider = Arc::new(Self {
            reply,
            calls: calls.clone(),
        });
        (provider, calls)
    }
}

impl UserInteractionProvider for Scripted {
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        self.calls.count.fetch_add(1, Ordering::SeqCst);
        self.calls.requests.lock().unwrap().push(request);
        self.calls
            .sessions
            .lock()
            .unwrap()
            .push(context.session.to_string());
        let reply = self
            .reply
            .clone()
            .map(|v| serde_json::from_value::<AnswerBatch>(v).unwrap());
        Box::pin(async move { reply })
    }
}

/// Sets its flag when dropped: proves the provider's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Never answers. Reports when it has been asked, and whether its future was
/// dropped and whether it saw the abort signal fire.
struct Pending {
    started: Mutex<Option<oneshot::Sender<AbortSignal>>>,
    dropped: Arc<AtomicBool>,
}

impl Pending {
    fn new() -> (Arc<Self>, oneshot::Receiver<AbortSignal>, Arc<AtomicBool>) {
        let (tx, rx) = oneshot::channel();
        let dropped = Arc::new(AtomicBool::new(false));
        let provider = Arc::new(Self {
            started: Mutex::new(Some(tx)),
            dropped: dropped.clone(),
        });
        (provider, rx, dropped)
    }
}

impl UserInteractionProvider for Pending {
    fn ask(&self, _request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        let guard = DropFlag(self.dropped.clone());
        if let Some(started) = self.started.lock().unwrap().take() {
            let _ = started.send(context.abort.clone());
        }
        Box::pin(async move {
            let _guard = guard;
            future::pending::<()>().await;
            unreachable!("a pending provider never answers")
        })
    }
}

fn request(questions: Value) -> AskRequest {
    serde_json::from_value(json!({ "questions": questions })).unwrap()
}

fn one_question() -> AskRequest {
    request(json!([{"id": "db", "question": "Which database?",
        "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]}]))
}

fn ask(
    service: &UserInteraction,
    request: AskRequest,
) -> Result<AnswerBatch, UserInteractionError> {
    block_on(service.ask(request, AbortSignal::never()))
}

fn code(result: Result<AnswerBatch, UserInteractionError>) -> ErrorCode {
    result.expect_err("expected a failure").code
}

// --- registration ----------------------------------------------------------------

#[test]
fn a_registered_provider_answers_an_ask() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": ["SQLite"]}]));
    let _registration = service.register_provider(provider).unwrap();
    assert!(service.has_provider());
    let answer = ask(&service, one_question()).unwrap();
    assert_eq!(answer.answers[0].selected, ["SQLite"]);
    assert_eq!(calls.count.load(Ordering::SeqCst), 1);
    assert_eq!(calls.requests.lock().unwrap()[0], one_question());
}

#[test]
fn without_a_provider_an_ask_fails_with_no_provider() {
    let service = UserInteraction::new();
    assert!(!service.has_provider());
    let result = ask(&service, one_question());
    assert_eq!(
        render_result(&result),
        "Error: no user-interaction provider is registered (NO_PROVIDER)"
    );
    assert_eq!(code(result), ErrorCode::NoProvider);
}

#[test]
fn dropping_the_registration_unregisters_the_provider() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let registration = service.register_provider(provider).unwrap();
    drop(registration);
    assert!(!service.has_provider());
    assert_eq!(code(ask(&service, one_question())), ErrorCode::NoProvider);
    assert_eq!(calls.count.load(Ordering::SeqCst), 0);
}

#[test]
fn disposing_the_registration_unregisters_the_provider() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    service.register_provider(provider).unwrap().dispose();
    assert!(!service.has_provider());
    assert_eq!(code(ask(&service, one_question())), ErrorCode::NoProvider);
    assert_eq!(calls.count.load(Ordering::SeqCst), 0);
}

#[test]
fn a_provider_can_be_registered_again_after_disposal() {
    let service = UserInteraction::new();
    let (first, first_calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    service.register_provider(first).unwrap().dispose();
    let (second, second_calls) = Scripted::answering(json!([{"id": "db", "selected": ["SQLite"]}]));
    let _registration = service.register_provider(second).unwrap();
    assert_eq!(
        ask(&service, one_question()).unwrap().answers[0].selected,
        ["SQLite"]
    );
    assert_eq!(first_calls.count.load(Ordering::SeqCst), 0);
    assert_eq!(second_calls.count.load(Ordering::SeqCst), 1);
}

#[test]
fn a_second_provider_is_duplicate_provider_and_the_first_stays_active() {
    let service = UserInteraction::new();
    let (first, first_calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let (second, second_calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let registration = service.register_provider(first).unwrap();
    let error = service.register_provider(second.clone()).unwrap_err();
    assert_eq!(error.code, ErrorCode::DuplicateProvider);
    ask(&service, one_question()).unwrap();
    assert_eq!(first_calls.count.load(Ordering::SeqCst), 1);
    assert_eq!(second_calls.count.load(Ordering::SeqCst), 0);

    // Once the first goes away the second may take its place.
    drop(registration);
    let _registration = service.register_provider(second).unwrap();
    ask(&service, one_question()).unwrap();
    assert_eq!(second_calls.count.load(Ordering::SeqCst), 1);
}

#[test]
fn clones_of_the_service_share_one_provider_slot() {
    let service = UserInteraction::new();
    let clone = service.clone();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let registration = clone.register_provider(provider.clone()).unwrap();
    assert!(service.has_provider());
    assert_eq!(
        service.register_provider(provider).unwrap_err().code,
        ErrorCode::DuplicateProvider
    );
    ask(&service, one_question()).unwrap();
    assert_eq!(calls.count.load(Ordering::SeqCst), 1);
    drop(registration);
    assert!(!service.has_provider());
}

#[test]
fn a_registration_outliving_its_service_drops_quietly() {
    let service = UserInteraction::new();
    let (provider, _) = Scripted::answering(json!([]));
    let registration = service.register_provider(provider).unwrap();
    drop(service);
    registration.dispose();
}

// --- validation before the provider -----------------------------------------------

#[test]
fn an_empty_request_never_reaches_the_provider() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([]));
    let _registration = service.register_provider(provider).unwrap();
    let result = ask(&service, request(json!([])));
    assert_eq!(
        render_result(&result),
        "Error: ask_user_question requires at least one question (EMPTY_QUESTIONS)"
    );
    assert_eq!(code(result), ErrorCode::EmptyQuestions);
    assert_eq!(calls.count.load(Ordering::SeqCst), 0);
}

#[test]
fn an_empty_request_is_empty_questions_even_without_a_provider() {
    let service = UserInteraction::new();
    assert_eq!(
        code(ask(&service, request(json!([])))),
        ErrorCode::EmptyQuestions
    );
}

#[test]
fn invalid_requests_never_reach_the_provider() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([]));
    let _registration = service.register_provider(provider).unwrap();
    let bad_request = request(json!([{"id": " ", "question": "q"}]));
    assert_eq!(code(ask(&service, bad_request)), ErrorCode::BadRequest);
    let bad_intent = request(json!([{"id": "p", "question": "Approve?",
        "options": [{"label": "Yes"}],
        "intent": {"kind": "plan-review", "approve": "Yes"}}]));
    assert_eq!(code(ask(&service, bad_intent)), ErrorCode::BadIntent);
    assert_eq!(calls.count.load(Ordering::SeqCst), 0);
}

// --- aborts and disposal ------------------------------------------------------------

#[test]
fn an_already_aborted_signal_fails_with_ask_aborted_before_the_provider_is_asked() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let _registration = service.register_provider(provider).unwrap();
    let controller = AbortController::new();
    controller.abort();
    let result = block_on(service.ask(one_question(), controller.signal()));
    assert_eq!(
        render_result(&result),
        "Error: ask_user_question was aborted before the user answered (ASK_ABORTED)"
    );
    assert_eq!(code(result), ErrorCode::AskAborted);
    assert_eq!(calls.count.load(Ordering::SeqCst), 0);
}

#[test]
fn an_already_aborted_signal_is_ask_aborted_even_before_any_provider_registers() {
    let service = UserInteraction::new();
    let controller = AbortController::new();
    controller.abort();
    let result = block_on(service.ask(one_question(), controller.signal()));
    assert_eq!(code(result), ErrorCode::AskAborted);
}

#[test]
fn aborting_while_the_provider_is_pending_is_ask_aborted_and_drops_its_future() {
    let service = UserInteraction::new();
    let (provider, started, dropped) = Pending::new();
    let _registration = service.register_provider(provider).unwrap();
    let controller = AbortController::new();
    let signal = controller.signal();
    let (result, provider_signal) = block_on(join(service.ask(one_question(), signal), async {
        let provider_signal = started.await.unwrap();
        assert!(!dropped.load(Ordering::SeqCst), "provider still pending");
        controller.abort();
        provider_signal
    }));
    assert_eq!(code(result), ErrorCode::AskAborted);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the provider's future was dropped"
    );
    assert!(provider_signal.is_aborted(), "the provider saw the abort");
}

#[test]
fn disposing_the_provider_during_an_ask_is_ask_aborted() {
    let service = UserInteraction::new();
    let (provider, started, dropped) = Pending::new();
    let registration = service.register_provider(provider).unwrap();
    let (result, ()) = block_on(join(
        service.ask(one_question(), AbortSignal::never()),
        async {
            started.await.unwrap();
            registration.dispose();
        },
    ));
    let error = result.unwrap_err();
    assert_eq!(error.code, ErrorCode::AskAborted);
    assert!(error.message.contains("disposed"), "{}", error.message);
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!service.has_provider());
}

#[test]
fn dropping_the_ask_future_drops_the_provider_future() {
    let service = UserInteraction::new();
    let (provider, started, dropped) = Pending::new();
    let _registration = service.register_provider(provider).unwrap();
    {
        let mut ask = Box::pin(service.ask(one_question(), AbortSignal::never()));
        let poll = futures::FutureExt::now_or_never(ask.as_mut());
        assert!(poll.is_none(), "the provider never answers");
        assert!(block_on(started).is_ok());
        assert!(!dropped.load(Ordering::SeqCst));
    }
    assert!(dropped.load(Ordering::SeqCst));
}

#[test]
fn an_abort_after_the_answer_changes_nothing() {
    let service = UserInteraction::new();
    let (provider, _) = Scripted::answering(json!([{"id": "db", "selected": ["SQLite"]}]));
    let _registration = service.register_provider(provider).unwrap();
    let controller = AbortController::new();
    let answer = block_on(service.ask(one_question(), controller.signal())).unwrap();
    controller.abort();
    assert_eq!(answer.answers[0].selected, ["SQLite"]);
}

#[test]
fn abort_signals_are_shared_idempotent_and_resolve_once_fired() {
    let controller = AbortController::new();
    let signal = controller.signal();
    let clone = signal.clone();
    assert!(!signal.is_aborted());
    controller.abort();
    controller.abort();
    assert!(signal.is_aborted() && clone.is_aborted());
    block_on(clone.aborted());
    assert!(!AbortSignal::never().is_aborted());
    assert!(futures::FutureExt::now_or_never(Box::pin(AbortSignal::never().aborted())).is_none());
}

// --- answers from the provider ----------------------------------------------------

fn batch_request() -> AskRequest {
    request(json!([
        {"id": "db", "question": "Which database?",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "features", "question": "Which features?", "multi_select": true,
         "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}]},
        {"id": "notes", "question": "Anything else?"}
    ]))
}

fn answer_through_provider(answers: Value) -> Result<AnswerBatch, UserInteractionError> {
    let service = UserInteraction::new();
    let (provider, _) = Scripted::answering(answers);
    let _registration = service.register_provider(provider).unwrap();
    ask(&service, batch_request())
}

fn as_json(result: Result<AnswerBatch, UserInteractionError>) -> Value {
    serde_json::to_value(result.unwrap()).unwrap()
}

#[test]
fn a_batch_is_answered_in_question_order_whatever_order_the_provider_used() {
    let out = as_json(answer_through_provider(json!([
        {"id": "notes", "selected": [], "custom": "  none  "},
        {"id": "db", "selected": ["Postgres (Recommended)"]},
        {"id": "features", "selected": ["Billing"]}
    ])));
    assert_eq!(
        out,
        json!({"answers": [
            {"id": "db", "selected": ["Postgres (Recommended)"]},
            {"id": "features", "selected": ["Billing"]},
            {"id": "notes", "selected": [], "custom": "none"}
        ]})
    );
}

#[test]
fn a_multi_select_answer_keeps_every_chosen_label_and_custom() {
    let out = as_json(answer_through_provider(json!([
        {"id": "db", "selected": []},
        {"id": "features", "selected": ["Search", "Auth"], "custom": "Audit log"},
        {"id": "notes", "selected": []}
    ])));
    assert_eq!(
        out["answers"][1],
        json!({"id": "features", "selected": ["Search", "Auth"], "custom": "Audit log"})
    );
}

#[test]
fn a_custom_answer_on_single_select_comes_back_with_selected_empty() {
    let out = as_json(answer_through_provider(json!([
        {"id": "db", "selected": ["SQLite"], "custom": "MySQL"},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": "ship friday"}
    ])));
    assert_eq!(
        out["answers"][0],
        json!({"id": "db", "selected": [], "custom": "MySQL"})
    );
    assert_eq!(
        out["answers"][2],
        json!({"id": "notes", "selected": [], "custom": "ship friday"})
    );
}

#[test]
fn skipped_items_come_back_as_empty_selections_beside_the_other_answers() {
    let result = answer_through_provider(json!([
        {"id": "db", "selected": ["SQLite"]},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": [], "custom": "   "}
    ]));
    assert_eq!(
        render_result(&result),
        r#"{"answers":[{"id":"db","selected":["SQLite"]},{"id":"features","selected":[]},{"id":"notes","selected":[]}]}"#
    );
}

#[test]
fn a_provider_answer_that_breaks_a_rule_is_bad_answer() {
    let result = answer_through_provider(json!([
        {"id": "db", "selected": ["MySQL"]},
        {"id": "features", "selected": []},
        {"id": "notes", "selected": []}
    ]));
    let error = result.unwrap_err();
    assert_eq!(error.code, ErrorCode::BadAnswer);
    assert!(error.message.contains("\"MySQL\""), "{}", error.message);

    let missing = answer_through_provider(json!([{"id": "db", "selected": []}]));
    assert_eq!(code(missing), ErrorCode::BadAnswer);
}

/// [`Scripted`], saying its answers are normalised already.
struct NormalizesItself(Scripted);

impl UserInteractionProvider for NormalizesItself {
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        self.0.ask(request, context)
    }

    fn answers_normalized(&self) -> bool {
        true
    }
}

#[test]
fn an_answer_of_a_provider_that_normalises_its_own_is_passed_on_as_given() {
    // Out of order and padded: the seam would reorder and trim it.
    let answers = json!([
        {"id": "notes", "selected": [], "custom": "  none  "},
        {"id": "db", "selected": ["Postgres (Recommended)"]},
        {"id": "features", "selected": []}
    ]);
    let service = UserInteraction::new();
    let (scripted, _) = Scripted::answering(answers.clone());
    let scripted = Arc::into_inner(scripted).expect("the only handle");
    let _registration = service
        .register_provider(Arc::new(NormalizesItself(scripted)))
        .unwrap();
    let out = as_json(ask(&service, batch_request()));
    assert_eq!(out["answers"], answers);
    // The same answer from a provider that does not say so is normalised.
    let normalised = as_json(answer_through_provider(answers.clone()));
    assert_ne!(normalised["answers"], answers);
}

#[test]
fn a_cancellation_survives_to_the_tool_result_as_its_code() {
    let service = UserInteraction::new();
    let (provider, _) = Scripted::replying(Err(UserInteractionError::cancelled()));
    let _registration = service.register_provider(provider).unwrap();
    let result = ask(&service, one_question());
    let line = render_result(&result);
    assert_eq!(
        line,
        "Error: the user cancelled ask_user_question (ASK_CANCELLED)"
    );
    let parsed = parse_result(&line).unwrap().unwrap_err();
    assert!(parsed.is_cancelled());
    assert_eq!(result.unwrap_err(), parsed);
}

#[test]
fn a_provider_failure_survives_to_the_tool_result_unchanged() {
    let service = UserInteraction::new();
    let failure = UserInteractionError::failed("the terminal is too small to show the question");
    let (provider, _) = Scripted::replying(Err(failure.clone()));
    let _registration = service.register_provider(provider).unwrap();
    let result = ask(&service, one_question());
    assert_eq!(
        render_result(&result),
        "Error: the terminal is too small to show the question (ASK_FAILED)"
    );
    assert_eq!(result.unwrap_err(), failure);
}

#[test]
fn ask_with_passes_the_session_to_the_provider() {
    let service = UserInteraction::new();
    let (provider, calls) = Scripted::answering(json!([{"id": "db", "selected": []}]));
    let _registration = service.register_provider(provider).unwrap();
    ask(&service, one_question()).unwrap();
    let context = AskContext::new(AbortSignal::never())
        .in_session(ask_user_core::SessionId::parse("review-42").unwrap());
    block_on(service.ask_with(one_question(), context)).unwrap();
    assert_eq!(
        *calls.sessions.lock().unwrap(),
        [DEFAULT_SESSION.to_owned(), "review-42".to_owned()]
    );
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_ask_future_is_send_so_a_multithreaded_host_can_spawn_it() {
    fn assert_send<T: Send>(_: &T) {}
    let service = UserInteraction::new();
    let future = service.ask(one_question(), AbortSignal::never());
    assert_send(&future);
    let thread_service = service.clone();
    std::thread::spawn(move || thread_service.has_provider())
        .join()
        .unwrap();
}

/// Reports the timeout it was given and presents every question as `q_1`.
struct Presenting {
    timeouts: Mutex<Vec<Option<std::time::Duration>>>,
}

impl UserInteractionProvider for Presenting {
    fn ask(&self, request: AskRequest, context: AskContext) -> ProviderFuture<'_> {
        self.timeouts.lock().unwrap().push(context.timeout);
        context.presented.set("q_1");
        let answers = request
            .questions
            .iter()
            .map(|q| json!({"id": q.id, "selected": []}))
            .collect::<Vec<_>>();
        Box::pin(async move { Ok(serde_json::from_value(json!({ "answers": answers })).unwrap()) })
    }
}

#[test]
fn ask_with_hands_the_timeout_to_the_provider_and_its_presented_id_back_to_the_asker() {
    let service = UserInteraction::new();
    let provider = Arc::new(Presenting {
        timeouts: Mutex::new(Vec::new()),
    });
    let _registration = service.register_provider(provider.clone()).unwrap();
    let presented = ask_user_core::PresentedAs::new();
    let context = AskContext::new(AbortSignal::never())
        .with_timeout(Some(std::time::Duration::from_millis(1500)))
        .reporting_to(presented.clone());
    assert_eq!(presented.id(), None);
    block_on(service.ask_with(one_question(), context)).unwrap();
    assert_eq!(presented.id(), Some("q_1"));
    ask(&service, one_question()).unwrap();
    assert_eq!(
        *provider.timeouts.lock().unwrap(),
        [Some(std::time::Duration::from_millis(1500)), None]
    );
}
