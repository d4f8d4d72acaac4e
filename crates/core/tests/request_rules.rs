//! Every request rule: each failure asserts its code and that the message names
//! the offending field or item.

use ask_user_core::limits::*;
use ask_user_core::{AskRequest, ErrorCode, Intent, IntentKind, Question, QuestionOption};
use serde_json::{Value, json};

/// A valid free-text question with this id.
fn free(id: &str) -> Value {
    json!({"id": id, "question": "What should happen?"})
}

/// A valid single-select question with these labels.
fn choice(id: &str, labels: &[&str]) -> Value {
    let options: Vec<Value> = labels.iter().map(|l| json!({"label": l})).collect();
    json!({"id": id, "question": "Which one?", "options": options})
}

fn request(questions: Vec<Value>) -> Value {
    json!({ "questions": questions })
}

/// A request holding one question, with `field` set to `value`.
fn with_field(mut question: Value, field: &str, value: Value) -> Value {
    question[field] = value;
    request(vec![question])
}

fn accepts(value: Value) -> AskRequest {
    let text = value.to_string();
    let parsed = AskRequest::from_value(value).unwrap_or_else(|e| panic!("rejected: {e}"));
    assert_eq!(AskRequest::from_json(&text).unwrap(), parsed);
    parsed
}

/// Rejects through both entry points with the same error, and returns it.
fn rejects(value: Value, code: ErrorCode, names: &[&str]) -> String {
    let text = value.to_string();
    let error = AskRequest::from_value(value).expect_err("accepted an invalid request");
    assert_eq!(
        AskRequest::from_json(&text).expect_err("from_json accepted it"),
        error
    );
    assert_eq!(error.code, code, "wrong code for: {}", error.message);
    for name in names {
        assert!(
            error.message.contains(name),
            "message {:?} does not name {name:?}",
            error.message
        );
    }
    error.message
}

/// `n` characters of a three-byte character, so byte and char counts differ.
fn wide(n: usize) -> String {
    "界".repeat(n)
}

// --- shape -----------------------------------------------------------------

#[test]
fn a_minimal_free_text_question_is_accepted() {
    let parsed = accepts(request(vec![free("scope")]));
    assert_eq!(parsed.questions[0].id, "scope");
    assert!(!parsed.questions[0].has_options());
    assert!(!parsed.questions[0].is_multi_select());
}

#[test]
fn a_question_using_every_field_is_accepted() {
    let parsed = accepts(request(vec![json!({
        "id": "plan",
        "question": "Approve this plan?",
        "header": "Plan",
        "detail": "1. Migrate\n2. Deploy",
        "options": [
            {"label": "Approve (Recommended)", "description": "Go ahead"},
            {"label": "Revise"}
        ],
        "multi_select": false,
        "intent": {"kind": "plan-review", "approve": "Approve (Recommended)"}
    })]));
    let q = &parsed.questions[0];
    assert_eq!(q.header.as_deref(), Some("Plan"));
    assert_eq!(q.options().len(), 2);
    assert_eq!(
        q.intent,
        Some(Intent {
            kind: IntentKind::PlanReview,
            approve: "Approve (Recommended)".into()
        })
    );
    assert_eq!(
        q.option("Approve (Recommended)")
            .unwrap()
            .description
            .as_deref(),
        Some("Go ahead")
    );
}

#[test]
fn an_empty_options_array_is_a_free_text_question() {
    let parsed = accepts(with_field(free("a"), "options", json!([])));
    assert!(!parsed.questions[0].has_options());
}

#[test]
fn a_non_object_request_is_bad_request() {
    rejects(json!([]), ErrorCode::BadRequest, &["request", "object"]);
    rejects(json!("questions"), ErrorCode::BadRequest, &["request"]);
}

#[test]
fn a_request_without_questions_field_is_bad_request_naming_it() {
    rejects(json!({}), ErrorCode::BadRequest, &["questions"]);
}

#[test]
fn a_question_given_as_an_array_is_rejected_naming_its_index() {
    // serde would read `["id", "question"]` as a struct; the vocabulary is objects only.
    rejects(
        json!({"questions": [free("a"), ["b", "Which?"]]}),
        ErrorCode::BadRequest,
        &["questions[1]", "object"],
    );
}

#[test]
fn an_option_given_as_a_string_is_rejected_naming_it() {
    rejects(
        with_field(free("a"), "options", json!([{"label": "A"}, "B"])),
        ErrorCode::BadRequest,
        &["questions[0].options[1]", "object"],
    );
}

#[test]
fn a_field_of_the_wrong_type_is_bad_request_naming_it() {
    rejects(
        request(vec![json!({"id": 5, "question": "q"})]),
        ErrorCode::BadRequest,
        &["questions[0].id"],
    );
    rejects(
        with_field(free("a"), "multi_select", json!("yes")),
        ErrorCode::BadRequest,
        &["questions[0].multi_select"],
    );
}

#[test]
fn text_that_is_not_json_is_bad_request() {
    let error = AskRequest::from_json("{\"questions\": [").unwrap_err();
    assert_eq!(error.code, ErrorCode::BadRequest);
    assert!(
        error.message.contains("not valid JSON"),
        "{}",
        error.message
    );
}

#[test]
fn trailing_text_after_the_request_is_bad_request() {
    let text = format!("{} extra", request(vec![free("a")]));
    let error = AskRequest::from_json(&text).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadRequest);
    assert!(error.message.contains("trailing"), "{}", error.message);
}

// --- unknown and removed fields --------------------------------------------

#[test]
fn an_unknown_top_level_field_is_rejected_naming_it() {
    rejects(
        json!({"questions": [free("a")], "agent": "x"}),
        ErrorCode::BadRequest,
        &["`agent`"],
    );
}

#[test]
fn an_unknown_question_field_is_rejected_naming_it() {
    rejects(
        with_field(free("a"), "multiSelect", json!(true)),
        ErrorCode::BadRequest,
        &["questions[0].multiSelect", "`multiSelect`"],
    );
}

#[test]
fn an_unknown_field_whose_name_contains_intent_is_bad_request_not_bad_intent() {
    rejects(
        with_field(free("a"), "intent_hint", json!("x")),
        ErrorCode::BadRequest,
        &["questions[0].intent_hint"],
    );
}

#[test]
fn an_unknown_option_field_is_rejected_naming_it() {
    rejects(
        with_field(free("a"), "options", json!([{"label": "A", "icon": "x"}])),
        ErrorCode::BadRequest,
        &["questions[0].options[0].icon"],
    );
}

#[test]
fn recommended_on_an_option_is_rejected_with_the_label_suffix_hint() {
    let message = rejects(
        with_field(
            free("a"),
            "options",
            json!([{"label": "A", "recommended": true}]),
        ),
        ErrorCode::BadRequest,
        &["questions[0].options[0].recommended", "(Recommended)"],
    );
    assert!(message.contains("end its label"), "{message}");
}

#[test]
fn recommended_on_a_question_is_rejected_with_the_label_suffix_hint() {
    rejects(
        with_field(choice("a", &["A", "B"]), "recommended", json!("A")),
        ErrorCode::BadRequest,
        &["questions[0].recommended", "(Recommended)"],
    );
}

#[test]
fn value_on_an_option_is_rejected_saying_the_label_is_the_value() {
    rejects(
        with_field(free("a"), "options", json!([{"label": "A", "value": "a"}])),
        ErrorCode::BadRequest,
        &["questions[0].options[0].value", "label is the value"],
    );
}

#[test]
fn allow_custom_is_rejected_saying_every_question_accepts_custom() {
    rejects(
        with_field(choice("a", &["A"]), "allow_custom", json!(true)),
        ErrorCode::BadRequest,
        &["questions[0].allow_custom", "`custom`"],
    );
}

#[test]
fn desc_is_rejected_pointing_at_description() {
    rejects(
        with_field(free("a"), "options", json!([{"label": "A", "desc": "d"}])),
        ErrorCode::BadRequest,
        &["questions[0].options[0].desc", "use `description`"],
    );
}

// --- question count ----------------------------------------------------------

#[test]
fn zero_questions_is_empty_questions() {
    let message = rejects(request(vec![]), ErrorCode::EmptyQuestions, &[]);
    assert_eq!(message, "ask_user_question requires at least one question");
}

#[test]
fn ten_questions_are_accepted() {
    let questions = (0..MAX_QUESTIONS).map(|i| free(&format!("q{i}"))).collect();
    assert_eq!(accepts(request(questions)).questions.len(), MAX_QUESTIONS);
}

#[test]
fn eleven_questions_are_bad_request_naming_questions() {
    let questions = (0..=MAX_QUESTIONS)
        .map(|i| free(&format!("q{i}")))
        .collect();
    rejects(
        request(questions),
        ErrorCode::BadRequest,
        &["questions", "11"],
    );
}

// --- ids ---------------------------------------------------------------------

#[test]
fn an_empty_id_is_bad_request_naming_it() {
    rejects(
        request(vec![free("a"), free("")]),
        ErrorCode::BadRequest,
        &["questions[1].id", "empty"],
    );
}

#[test]
fn a_whitespace_only_id_counts_as_empty() {
    rejects(
        request(vec![free(" \t\n ")]),
        ErrorCode::BadRequest,
        &["questions[0].id", "empty"],
    );
}

#[test]
fn an_id_of_64_multibyte_characters_is_accepted() {
    accepts(request(vec![free(&wide(MAX_ID_CHARS))]));
}

#[test]
fn an_id_of_65_characters_is_bad_request_naming_it() {
    rejects(
        request(vec![free(&wide(MAX_ID_CHARS + 1))]),
        ErrorCode::BadRequest,
        &["questions[0].id", "64", "65"],
    );
}

#[test]
fn a_repeated_id_is_bad_request_naming_the_later_question_and_the_id() {
    rejects(
        request(vec![free("db"), free("other"), free("db")]),
        ErrorCode::BadRequest,
        &["questions[2].id", "\"db\"", "unique"],
    );
}

// --- question text -------------------------------------------------------------

#[test]
fn empty_question_text_is_bad_request_naming_it() {
    rejects(
        with_field(free("a"), "question", json!("")),
        ErrorCode::BadRequest,
        &["questions[0].question", "empty"],
    );
}

#[test]
fn whitespace_only_question_text_counts_as_empty() {
    rejects(
        with_field(free("a"), "question", json!("\u{3000}  \n")),
        ErrorCode::BadRequest,
        &["questions[0].question", "empty"],
    );
}

#[test]
fn question_text_of_2000_multibyte_characters_is_accepted() {
    accepts(with_field(
        free("a"),
        "question",
        json!(wide(MAX_QUESTION_CHARS)),
    ));
}

#[test]
fn question_text_of_2001_characters_is_bad_request_naming_it() {
    rejects(
        with_field(free("a"), "question", json!(wide(MAX_QUESTION_CHARS + 1))),
        ErrorCode::BadRequest,
        &["questions[0].question", "2000", "2001"],
    );
}

#[test]
fn a_missing_question_text_is_bad_request_naming_it() {
    rejects(
        request(vec![json!({"id": "a"})]),
        ErrorCode::BadRequest,
        &["questions[0]", "`question`"],
    );
}

// --- header and detail -----------------------------------------------------------

#[test]
fn a_header_of_40_multibyte_characters_is_accepted() {
    accepts(with_field(
        free("a"),
        "header",
        json!(wide(MAX_HEADER_CHARS)),
    ));
}

#[test]
fn a_header_of_41_characters_is_bad_request_naming_it() {
    rejects(
        with_field(free("a"), "header", json!(wide(MAX_HEADER_CHARS + 1))),
        ErrorCode::BadRequest,
        &["questions[0].header", "40", "41"],
    );
}

#[test]
fn a_detail_of_32_kib_characters_is_accepted() {
    accepts(with_field(
        free("a"),
        "detail",
        json!(wide(MAX_DETAIL_CHARS)),
    ));
}

#[test]
fn a_detail_one_character_over_32_kib_is_bad_request_naming_it() {
    rejects(
        with_field(free("a"), "detail", json!(wide(MAX_DETAIL_CHARS + 1))),
        ErrorCode::BadRequest,
        &["questions[0].detail", "32768", "32769"],
    );
}

// --- options -------------------------------------------------------------------

#[test]
fn sixteen_options_are_accepted() {
    let labels: Vec<String> = (0..MAX_OPTIONS).map(|i| format!("Option {i}")).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    assert_eq!(
        accepts(request(vec![choice("a", &labels)])).questions[0]
            .options()
            .len(),
        MAX_OPTIONS
    );
}

#[test]
fn seventeen_options_are_bad_request_naming_options() {
    let labels: Vec<String> = (0..=MAX_OPTIONS).map(|i| format!("Option {i}")).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    rejects(
        request(vec![free("a"), choice("b", &labels)]),
        ErrorCode::BadRequest,
        &["questions[1].options", "16", "17"],
    );
}

#[test]
fn an_empty_label_is_bad_request_naming_the_option() {
    rejects(
        request(vec![choice("a", &["A", ""])]),
        ErrorCode::BadRequest,
        &["questions[0].options[1].label", "empty"],
    );
}

#[test]
fn a_whitespace_only_label_counts_as_empty() {
    rejects(
        request(vec![choice("a", &["  "])]),
        ErrorCode::BadRequest,
        &["questions[0].options[0].label", "empty"],
    );
}

#[test]
fn a_missing_label_is_bad_request_naming_the_option() {
    rejects(
        with_field(free("a"), "options", json!([{"description": "d"}])),
        ErrorCode::BadRequest,
        &["questions[0].options[0]", "`label`"],
    );
}

#[test]
fn a_label_of_200_multibyte_characters_is_accepted() {
    let label = wide(MAX_LABEL_CHARS);
    accepts(request(vec![choice("a", &[&label])]));
}

#[test]
fn a_label_of_201_characters_is_bad_request_naming_the_option() {
    let label = wide(MAX_LABEL_CHARS + 1);
    rejects(
        request(vec![choice("a", &["A", &label])]),
        ErrorCode::BadRequest,
        &["questions[0].options[1].label", "200", "201"],
    );
}

#[test]
fn a_repeated_label_is_bad_request_naming_the_later_option_and_label() {
    rejects(
        request(vec![choice("a", &["Yes", "No", "Yes"])]),
        ErrorCode::BadRequest,
        &["questions[0].options[2].label", "\"Yes\"", "unique"],
    );
}

#[test]
fn labels_differing_only_in_surrounding_whitespace_repeat_each_other() {
    rejects(
        request(vec![choice("a", &["Yes", " Yes "])]),
        ErrorCode::BadRequest,
        &["questions[0].options[1].label"],
    );
}

#[test]
fn the_same_label_in_two_questions_is_accepted() {
    accepts(request(vec![
        choice("a", &["Yes", "No"]),
        choice("b", &["Yes", "No"]),
    ]));
}

#[test]
fn a_description_of_2000_multibyte_characters_is_accepted() {
    accepts(with_field(
        free("a"),
        "options",
        json!([{"label": "A", "description": wide(MAX_DESCRIPTION_CHARS)}]),
    ));
}

#[test]
fn a_description_of_2001_characters_is_bad_request_naming_the_option() {
    rejects(
        with_field(
            free("a"),
            "options",
            json!([{"label": "A"}, {"label": "B", "description": wide(MAX_DESCRIPTION_CHARS + 1)}]),
        ),
        ErrorCode::BadRequest,
        &["questions[0].options[1].description", "2000", "2001"],
    );
}

// --- multi_select ---------------------------------------------------------------

#[test]
fn multi_select_with_options_is_accepted() {
    let parsed = accepts(with_field(
        choice("a", &["A", "B"]),
        "multi_select",
        json!(true),
    ));
    assert!(parsed.questions[0].is_multi_select());
}

#[test]
fn multi_select_without_options_is_bad_request_naming_it() {
    rejects(
        with_field(free("a"), "multi_select", json!(true)),
        ErrorCode::BadRequest,
        &["questions[0].multi_select", "requires options"],
    );
}

#[test]
fn multi_select_with_an_empty_options_array_is_bad_request() {
    let mut question = free("a");
    question["options"] = json!([]);
    rejects(
        with_field(question, "multi_select", json!(true)),
        ErrorCode::BadRequest,
        &["questions[0].multi_select"],
    );
}

#[test]
fn multi_select_false_without_options_is_accepted() {
    accepts(with_field(free("a"), "multi_select", json!(false)));
}

// --- intent ----------------------------------------------------------------------

fn plan_review(intent: Value) -> Value {
    let mut question = choice("plan", &["Approve", "Revise"]);
    question["detail"] = json!("1. Migrate the schema\n2. Deploy");
    question["intent"] = intent;
    request(vec![free("first"), question])
}

#[test]
fn a_plan_review_naming_one_of_its_labels_with_detail_is_accepted() {
    let parsed = accepts(plan_review(
        json!({"kind": "plan-review", "approve": "Approve"}),
    ));
    assert_eq!(
        parsed.questions[1].intent.as_ref().unwrap().kind,
        IntentKind::PlanReview
    );
}

#[test]
fn an_unknown_intent_kind_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!({"kind": "diff-review", "approve": "Approve"})),
        ErrorCode::BadIntent,
        &["questions[1].intent.kind", "diff-review"],
    );
}

#[test]
fn an_approve_that_is_not_a_label_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!({"kind": "plan-review", "approve": "Ship it"})),
        ErrorCode::BadIntent,
        &["questions[1].intent.approve", "\"Ship it\""],
    );
}

#[test]
fn an_approve_matching_a_label_only_ignoring_case_is_bad_intent() {
    rejects(
        plan_review(json!({"kind": "plan-review", "approve": "approve"})),
        ErrorCode::BadIntent,
        &["questions[1].intent.approve"],
    );
}

#[test]
fn an_intent_on_an_optionless_question_is_bad_intent() {
    let mut question = free("plan");
    question["detail"] = json!("the plan");
    question["intent"] = json!({"kind": "plan-review", "approve": "Approve"});
    rejects(
        request(vec![question]),
        ErrorCode::BadIntent,
        &["questions[0].intent.approve"],
    );
}

#[test]
fn a_plan_review_without_detail_is_bad_intent_naming_detail() {
    let mut value = plan_review(json!({"kind": "plan-review", "approve": "Approve"}));
    value["questions"][1]
        .as_object_mut()
        .unwrap()
        .remove("detail");
    rejects(
        value,
        ErrorCode::BadIntent,
        &["questions[1].intent", "`detail`"],
    );
}

#[test]
fn a_plan_review_with_whitespace_only_detail_is_bad_intent() {
    let mut value = plan_review(json!({"kind": "plan-review", "approve": "Approve"}));
    value["questions"][1]["detail"] = json!(" \n\t ");
    rejects(
        value,
        ErrorCode::BadIntent,
        &["questions[1].intent", "`detail`"],
    );
}

#[test]
fn an_intent_missing_approve_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!({"kind": "plan-review"})),
        ErrorCode::BadIntent,
        &["questions[1].intent", "`approve`"],
    );
}

#[test]
fn an_intent_missing_kind_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!({"approve": "Approve"})),
        ErrorCode::BadIntent,
        &["questions[1].intent", "`kind`"],
    );
}

#[test]
fn an_unknown_intent_field_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!({"kind": "plan-review", "approve": "Approve", "reject": "Revise"})),
        ErrorCode::BadIntent,
        &["questions[1].intent.reject"],
    );
}

#[test]
fn an_intent_that_is_not_an_object_is_bad_intent_naming_it() {
    rejects(
        plan_review(json!("plan-review")),
        ErrorCode::BadIntent,
        &["questions[1].intent", "object"],
    );
}

// --- validate() on values built in Rust -------------------------------------------

fn built(question: Question) -> AskRequest {
    AskRequest {
        questions: vec![question],
        audience: None,
        escalate_after: None,
    }
}

fn plain(id: &str) -> Question {
    Question {
        id: id.into(),
        question: "Which?".into(),
        header: None,
        detail: None,
        options: None,
        multi_select: None,
        intent: None,
    }
}

#[test]
fn validate_applies_the_same_rules_to_requests_built_in_rust() {
    assert_eq!(
        AskRequest {
            questions: vec![],
            audience: None,
            escalate_after: None
        }
        .validate()
        .unwrap_err()
        .code,
        ErrorCode::EmptyQuestions
    );
    assert!(built(plain("a")).validate().is_ok());

    let mut untrimmed = plain("a");
    untrimmed.question = "   ".into();
    let error = built(untrimmed).validate().unwrap_err();
    assert_eq!(error.code, ErrorCode::BadRequest);
    assert!(error.message.contains("questions[0].question"));

    let mut review = plain("a");
    review.options = Some(vec![QuestionOption {
        label: "Go".into(),
        description: None,
    }]);
    review.intent = Some(Intent {
        kind: IntentKind::PlanReview,
        approve: "Go".into(),
    });
    let error = built(review.clone()).validate().unwrap_err();
    assert_eq!(error.code, ErrorCode::BadIntent);
    review.detail = Some("plan".into());
    assert!(built(review).validate().is_ok());
}

#[test]
fn question_lookup_finds_by_exact_id() {
    let parsed = accepts(request(vec![free("a"), choice("b", &["X"])]));
    assert_eq!(parsed.question("b").unwrap().options()[0].label, "X");
    assert!(parsed.question("B").is_none());
    assert!(parsed.questions[1].option("x").is_none());
}

// --- audience and escalation --------------------------------------------------

fn audienced(audience: Value, escalate_after: Option<Value>) -> Value {
    let mut value = request(vec![free("q")]);
    value["audience"] = audience;
    if let Some(escalation) = escalate_after {
        value["escalate_after"] = escalation;
    }
    value
}

struct Person(&'static str, &'static [&'static str]);

impl ask_user_core::Member for Person {
    fn name(&self) -> &str {
        self.0
    }
    fn has_role(&self, role: &str) -> bool {
        self.1.contains(&role)
    }
}

#[test]
fn an_audience_is_anyone_a_person_or_a_role_and_anyone_by_default() {
    use ask_user_core::Audience;
    assert_eq!(
        accepts(request(vec![free("q")])).audience(),
        &Audience::Anyone
    );
    assert_eq!(
        accepts(audienced(json!("anyone"), None)).audience(),
        &Audience::Anyone
    );
    assert_eq!(
        accepts(audienced(json!({"person": "ana"}), None)).audience(),
        &Audience::Person("ana".into())
    );
    let role = accepts(audienced(
        json!({"role": "oncall"}),
        Some(json!({"seconds": 60, "role": "leads"})),
    ));
    let (ana, bo, lee) = (
        Person("ana", &["oncall"]),
        Person("bo", &[]),
        Person("lee", &["leads"]),
    );
    assert!(role.admits(&ana, false));
    assert!(!role.admits(&bo, false) && !role.admits(&bo, true));
    assert!(!role.admits(&lee, false), "not before the escalation");
    assert!(role.admits(&lee, true), "once escalated");
    let anyone = accepts(request(vec![free("q")]));
    assert!(anyone.admits(&bo, false));
    let person = accepts(audienced(json!({"person": "ana"}), None));
    assert!(person.admits(&ana, false) && !person.admits(&lee, true));
}

#[test]
fn each_audience_mistake_is_one_error_naming_its_field() {
    let bad = ErrorCode::BadRequest;
    rejects(
        audienced(json!("everyone"), None),
        bad,
        &["audience", "everyone"],
    );
    rejects(
        audienced(json!({"team": "x"}), None),
        bad,
        &["audience", "team"],
    );
    rejects(
        audienced(json!({"person": ""}), None),
        bad,
        &["audience.person", "empty"],
    );
    rejects(
        audienced(json!({"role": "on call"}), None),
        bad,
        &["audience.role", "\" \""],
    );
    rejects(
        audienced(
            json!({"role": "r".repeat(MAX_AUDIENCE_NAME_CHARS + 1)}),
            None,
        ),
        bad,
        &["audience.role", "at most 64"],
    );
    rejects(
        audienced(
            json!({"role": "oncall"}),
            Some(json!({"seconds": 0, "role": "leads"})),
        ),
        bad,
        &["escalate_after.seconds", "from 1"],
    );
    rejects(
        audienced(
            json!({"role": "oncall"}),
            Some(json!({"seconds": MAX_ESCALATE_AFTER_SECS + 1, "role": "leads"})),
        ),
        bad,
        &["escalate_after.seconds", "a week"],
    );
    rejects(
        audienced(json!({"role": "oncall"}), Some(json!({"seconds": 5}))),
        bad,
        &["escalate_after", "role"],
    );
    rejects(
        audienced(
            json!({"role": "oncall"}),
            Some(json!({"seconds": 5, "role": "oncall"})),
        ),
        bad,
        &["escalate_after.role", "already"],
    );
    rejects(
        audienced(
            json!("anyone"),
            Some(json!({"seconds": 5, "role": "leads"})),
        ),
        bad,
        &["escalate_after", "anyone already"],
    );
    rejects(
        audienced(json!({"person": "ana"}), Some(json!([5, "leads"]))),
        bad,
        &["escalate_after", "expected a JSON object"],
    );
    rejects(
        audienced(
            json!({"person": "ana"}),
            Some(json!({"seconds": 5, "role": "l", "to": 1})),
        ),
        bad,
        &["escalate_after", "`to`"],
    );
}
