//! Property tests: accepted requests round-trip through JSON unchanged;
//! normalisation is idempotent and always yields a batch the validator accepts.

use ask_user_core::{
    Answer, AnswerBatch, AskRequest, ErrorCode, Intent, IntentKind, Question, QuestionOption,
};
use proptest::collection::{btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};

/// Text with at least one non-whitespace character, mixing ASCII, accents,
/// CJK and astral characters so char and byte counts differ.
fn text() -> impl Strategy<Value = String> {
    "[ ]?[a-zA-Z界é😀][a-zA-Z0-9界é😀 ]{0,8}"
}

/// A label core with no surrounding whitespace and no brackets.
fn label_core() -> impl Strategy<Value = String> {
    "[a-zA-Z界é😀]([a-zA-Z0-9界é😀 ]{0,6}[a-zA-Z0-9界😀])?"
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z][a-z0-9_-]{0,7}", "[界é😀][a-z界]{0,3}",]
}

/// A valid question with this id: free text, single- or multi-select, with
/// recommended labels, descriptions and plan-review intents.
fn question(id: String) -> impl Strategy<Value = Question> {
    (
        text(),
        option::of("[a-zA-Z界 ]{0,12}"),
        option::of("[a-zA-Z界\n# ]{0,40}"),
        btree_set(label_core(), 0..=5),
        vec(option::of("[a-zA-Z界 ]{0,20}"), 5),
        any::<bool>(),
        option::of(any::<bool>()),
        any::<bool>(),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(
            move |(
                question,
                header,
                detail,
                cores,
                descriptions,
                recommend,
                multi_select,
                review,
                approve,
                empty_options,
            )| {
                let options: Vec<QuestionOption> = cores
                    .into_iter()
                    .enumerate()
                    .map(|(i, core)| QuestionOption {
                        label: if recommend && i == 0 {
                            format!("{core} (Recommended)")
                        } else {
                            core
                        },
                        description: descriptions[i].clone(),
                    })
                    .collect();
                let has_options = !options.is_empty();
                let intent = (review && has_options).then(|| Intent {
                    kind: IntentKind::PlanReview,
                    approve: approve.get(&options).label.clone(),
                });
                let detail = if intent.is_some() {
                    Some(format!("Plan: {}", detail.unwrap_or_default()))
                } else {
                    detail
                };
                Question {
                    id: id.clone(),
                    question,
                    header,
                    detail,
                    options: match (has_options, empty_options) {
                        (true, _) => Some(options),
                        (false, true) => Some(Vec::new()),
                        (false, false) => None,
                    },
                    multi_select: multi_select.map(|m| m && has_options),
                    intent,
                }
            },
        )
}

/// A request the validator must accept.
fn valid_request() -> impl Strategy<Value = AskRequest> {
    btree_set(id(), 1..=10)
        .prop_flat_map(|ids| {
            ids.into_iter()
                .map(question)
                .collect::<Vec<_>>()
                .prop_shuffle()
        })
        .prop_map(|questions| AskRequest {
            questions,
            audience: None,
            escalate_after: None,
        })
}

/// Any string, biased towards the edges the rules care about.
fn loose_text() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => text(),
        1 => Just(String::new()),
        1 => "[ \t\n\u{3000}]{1,3}",
        1 => "\\PC{0,6}",
    ]
}

/// A request that may or may not be valid: empty strings, whitespace, repeated
/// ids and labels, intents naming anything, multi-select without options.
fn loose_request() -> impl Strategy<Value = AskRequest> {
    let option = (loose_text(), option::of(loose_text()))
        .prop_map(|(label, description)| QuestionOption { label, description });
    let question = (
        prop_oneof![id(), loose_text()],
        loose_text(),
        option::of(loose_text()),
        option::of(loose_text()),
        option::of(vec(option, 0..4)),
        option::of(any::<bool>()),
        option::weighted(0.2, option::weighted(0.2, loose_text())),
    )
        .prop_map(
            |(id, question, header, detail, options, multi_select, intent)| {
                let approve = |label: Option<String>, options: &Option<Vec<QuestionOption>>| {
                    label.unwrap_or_else(|| {
                        options
                            .as_ref()
                            .and_then(|o| o.first())
                            .map(|o| o.label.clone())
                            .unwrap_or_default()
                    })
                };
                let intent = intent.map(|label| Intent {
                    kind: IntentKind::PlanReview,
                    approve: approve(label, &options),
                });
                Question {
                    id,
                    question,
                    header,
                    detail,
                    options,
                    multi_select,
                    intent,
                }
            },
        );
    vec(question, 0..4).prop_map(|questions| AskRequest {
        questions,
        audience: None,
        escalate_after: None,
    })
}

/// Free text as a person might type it: padded, blank, or absent.
fn custom() -> impl Strategy<Value = Option<String>> {
    option::of(prop_oneof![
        text(),
        "[ \t\n]{0,3}",
        ("[ \t\n]{0,2}", text(), "[ \t\n]{0,2}").prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ])
}

/// An answer a UI could send for this question (before normalisation).
fn answer_for(question: &Question) -> BoxedStrategy<Answer> {
    let id = question.id.clone();
    let labels: Vec<String> = question.options().iter().map(|o| o.label.clone()).collect();
    if labels.is_empty() {
        custom()
            .prop_map(move |custom| Answer {
                id: id.clone(),
                selected: Vec::new(),
                custom,
            })
            .boxed()
    } else if question.is_multi_select() {
        let count = labels.len();
        (subsequence(labels, 0..=count).prop_shuffle(), custom())
            .prop_map(move |(selected, custom)| Answer {
                id: id.clone(),
                selected,
                custom,
            })
            .boxed()
    } else {
        (option::of(select(labels)), custom())
            .prop_map(move |(label, custom)| Answer {
                id: id.clone(),
                selected: label.into_iter().collect(),
                custom,
            })
            .boxed()
    }
}

/// A valid request and a batch for it that normalisation must accept, in any order.
fn request_and_batch() -> impl Strategy<Value = (AskRequest, AnswerBatch)> {
    valid_request().prop_flat_map(|request| {
        let answers = request
            .questions
            .iter()
            .map(answer_for)
            .collect::<Vec<_>>()
            .prop_shuffle();
        (Just(request), answers.prop_map(AnswerBatch::new))
    })
}

/// A way of breaking (or not) a batch a UI could send.
#[derive(Debug, Clone)]
enum Mutation {
    Drop(prop::sample::Index),
    Repeat(prop::sample::Index),
    Stranger,
    ForeignLabel(prop::sample::Index),
    OwnLabel(prop::sample::Index, prop::sample::Index),
    OtherQuestionsLabel(prop::sample::Index, prop::sample::Index),
    LongCustom(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    use prop::sample::Index;
    prop_oneof![
        any::<Index>().prop_map(Mutation::Drop),
        any::<Index>().prop_map(Mutation::Repeat),
        Just(Mutation::Stranger),
        any::<Index>().prop_map(Mutation::ForeignLabel),
        (any::<Index>(), any::<Index>()).prop_map(|(a, l)| Mutation::OwnLabel(a, l)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, l)| Mutation::OtherQuestionsLabel(a, l)),
        any::<Index>().prop_map(Mutation::LongCustom),
    ]
}

fn mutate(request: &AskRequest, batch: &mut AnswerBatch, mutation: &Mutation) {
    let answers = &mut batch.answers;
    if answers.is_empty() {
        return;
    }
    let labels_of = |id: &str| -> Vec<String> {
        request
            .question(id)
            .map(|q| q.options().iter().map(|o| o.label.clone()).collect())
            .unwrap_or_default()
    };
    match mutation {
        Mutation::Drop(i) => {
            answers.remove(i.index(answers.len()));
        }
        Mutation::Repeat(i) => {
            let copy = i.get(answers).clone();
            answers.push(copy);
        }
        Mutation::Stranger => answers.push(Answer::skipped("stranger")),
        Mutation::ForeignLabel(i) => i.get_mut(answers).selected.push("Nope".into()),
        Mutation::OwnLabel(i, l) => {
            let answer = i.get_mut(answers);
            let labels = labels_of(&answer.id);
            if !labels.is_empty() {
                answer.selected.push(l.get(&labels).clone());
            }
        }
        Mutation::OtherQuestionsLabel(i, l) => {
            let answer = i.get_mut(answers);
            let labels: Vec<String> = request
                .questions
                .iter()
                .filter(|q| q.id != answer.id)
                .flat_map(|q| q.options().iter().map(|o| o.label.clone()))
                .collect();
            if !labels.is_empty() {
                answer.selected.push(l.get(&labels).clone());
            }
        }
        Mutation::LongCustom(i) => {
            i.get_mut(answers).custom =
                Some("界".repeat(ask_user_core::limits::MAX_CUSTOM_CHARS + 1));
        }
    }
}

/// A valid request and a batch that may break any answer rule: a UI batch
/// with up to two mutations (dropped, repeated or unknown answers; foreign,
/// repeated or extra labels; over-long custom).
fn request_and_arbitrary_batch() -> impl Strategy<Value = (AskRequest, AnswerBatch)> {
    (request_and_batch(), vec(mutation(), 0..=2)).prop_map(|((request, mut batch), mutations)| {
        for m in &mutations {
            mutate(&request, &mut batch, m);
        }
        (request, batch)
    })
}

fn assert_round_trips(request: &AskRequest) -> Result<(), TestCaseError> {
    let text = serde_json::to_string(request).unwrap();
    let parsed = AskRequest::from_json(&text);
    prop_assert_eq!(parsed.as_ref(), Ok(request), "from_json of {}", text);
    prop_assert_eq!(serde_json::to_string(&parsed.unwrap()).unwrap(), text);
    let value = serde_json::to_value(request).unwrap();
    let from_value = AskRequest::from_value(value);
    prop_assert_eq!(from_value.as_ref(), Ok(request));
    Ok(())
}

proptest! {
    #[test]
    fn generated_valid_requests_are_accepted_and_round_trip(request in valid_request()) {
        prop_assert_eq!(request.validate(), Ok(()));
        assert_round_trips(&request)?;
    }

    #[test]
    fn any_request_the_validator_accepts_round_trips_through_json(request in loose_request()) {
        match request.validate() {
            Ok(()) => assert_round_trips(&request)?,
            Err(error) => {
                // Whatever it rejects, parsing its JSON rejects the same way.
                let text = serde_json::to_string(&request).unwrap();
                prop_assert_eq!(AskRequest::from_json(&text), Err(error));
            }
        }
    }

    #[test]
    fn normalising_a_ui_batch_yields_a_valid_batch_in_question_order(
        (request, batch) in request_and_batch()
    ) {
        let normalized = batch.clone().normalize(&request).unwrap();
        prop_assert_eq!(normalized.validate(&request), Ok(()));
        let ids: Vec<&str> = normalized.answers.iter().map(|a| a.id.as_str()).collect();
        let expected: Vec<&str> = request.questions.iter().map(|q| q.id.as_str()).collect();
        prop_assert_eq!(ids, expected);
        for (answer, question) in normalized.answers.iter().zip(&request.questions) {
            let sent = batch.answer(&answer.id).unwrap();
            let typed = sent.custom.as_deref().map(str::trim).filter(|c| !c.is_empty());
            prop_assert_eq!(answer.custom.as_deref(), typed);
            if typed.is_some() && !question.is_multi_select() {
                prop_assert!(answer.selected.is_empty());
            } else {
                prop_assert_eq!(&answer.selected, &sent.selected);
            }
        }
    }

    #[test]
    fn normalising_is_idempotent((request, batch) in request_and_batch()) {
        let once = batch.normalize(&request).unwrap();
        let twice = once.clone().normalize(&request).unwrap();
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn a_normalised_batch_round_trips_through_json((request, batch) in request_and_batch()) {
        let normalized = batch.normalize(&request).unwrap();
        let text = serde_json::to_string(&normalized).unwrap();
        prop_assert_eq!(AnswerBatch::from_json(&text), Ok(normalized));
    }

    #[test]
    fn whatever_normalise_accepts_is_valid_and_stable(
        (request, batch) in request_and_arbitrary_batch()
    ) {
        match batch.normalize(&request) {
            Ok(normalized) => {
                prop_assert_eq!(normalized.validate(&request), Ok(()));
                prop_assert_eq!(normalized.clone().normalize(&request), Ok(normalized));
            }
            Err(error) => prop_assert_eq!(error.code, ErrorCode::BadAnswer),
        }
    }
}
