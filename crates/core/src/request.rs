//! The request: the `ask_user_question` tool's arguments, and every rule that
//! checks it.

use crate::error::{
    ErrorCode, MAX_QUOTED_CHARS, UserInteractionError, quoted, shorten, shorten_quotes_in,
};
use crate::limits::*;
use crate::shape::{Document, objects_where_expected};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_path_to_error::Segment;

/// The tool's arguments: a batch of questions asked together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The questions, in the order the person sees them.
    pub questions: Vec<Question>,
    /// Who may see and answer the request when the host has people
    /// (`ask-user people add`); absent means [`Audience::Anyone`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    /// Widens the audience to a second role when nobody answered in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after: Option<EscalateAfter>,
}

/// Who may see and answer a request: `"anyone"`, `{"person": "ana"}` or
/// `{"role": "oncall"}`. A host without people lets its one person answer
/// everything, whatever the audience says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// Everyone who may answer on this host.
    Anyone,
    /// One person, by name.
    Person(String),
    /// Everyone holding a role.
    Role(String),
}

/// `{"seconds": 300, "role": "leads"}`: if nobody answered within `seconds`
/// of the ask, people holding `role` may see and answer it too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EscalateAfter {
    /// Seconds after the ask (1 to [`MAX_ESCALATE_AFTER_SECS`]).
    pub seconds: u64,
    /// The role added to the audience.
    pub role: String,
}

/// Who a person is, as far as an audience cares: a name and roles.
pub trait Member {
    /// The person's name.
    fn name(&self) -> &str;
    /// Whether the person holds `role`.
    fn has_role(&self, role: &str) -> bool;
}

impl Audience {
    /// Whether `person` is in this audience.
    pub fn admits(&self, person: &dyn Member) -> bool {
        match self {
            Audience::Anyone => true,
            Audience::Person(name) => person.name() == name,
            Audience::Role(role) => person.has_role(role),
        }
    }
}

/// Checks a person's name or a role: 1 to [`MAX_AUDIENCE_NAME_CHARS`]
/// ASCII letters, digits, `.`, `_` or `-` (names people type and logs show
/// as they are: nothing to spoof with).
pub fn check_name(field: &str, name: &str) -> Result<(), UserInteractionError> {
    if name.is_empty() {
        return Err(UserInteractionError::bad_request(format!(
            "{field}: must not be empty"
        )));
    }
    if name.len() > MAX_AUDIENCE_NAME_CHARS {
        return Err(UserInteractionError::bad_request(format!(
            "{field}: at most {MAX_AUDIENCE_NAME_CHARS} characters, got {}",
            name.chars().count()
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(UserInteractionError::bad_request(format!(
            "{field}: {} holds {}; use ASCII letters, digits, '.', '_' and '-' only",
            quoted(name),
            quoted(&bad.to_string())
        )));
    }
    Ok(())
}

/// One question of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Caller-chosen id, unique in the batch and echoed in the answer.
    pub id: String,
    /// The question itself.
    pub question: String,
    /// A short chip shown above the question (at most 40 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Supporting text rendered with the question, as Markdown (the sanitised
    /// subset of [`crate::markdown`]); never an option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The options; a question without options collects free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
    /// Whether several options may be chosen (requires options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// How a UI may present the question; the answer keeps the same shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// Displayed text and the value returned when chosen. A label ending in
    /// ` (Recommended)` marks the recommendation (see [`crate::recommend`]).
    pub label: String,
    /// What choosing it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A presentation hint. Presentation only: the answer keeps the same shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// Which presentation.
    pub kind: IntentKind,
    /// The label of the option that approves (one of the question's own labels).
    pub approve: String,
}

/// The presentations a question may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IntentKind {
    /// Review a plan given in the question's `detail`, then approve or decline it.
    #[serde(rename = "plan-review")]
    PlanReview,
}

impl Question {
    /// The options, empty for a free-text question.
    pub fn options(&self) -> &[QuestionOption] {
        self.options.as_deref().unwrap_or_default()
    }

    /// True when the question offers options to choose from.
    pub fn has_options(&self) -> bool {
        !self.options().is_empty()
    }

    /// True when several options may be chosen.
    pub fn is_multi_select(&self) -> bool {
        self.multi_select.unwrap_or(false)
    }

    /// The option with this exact label.
    pub fn option(&self, label: &str) -> Option<&QuestionOption> {
        self.options().iter().find(|o| o.label == label)
    }
}

impl AskRequest {
    /// Parses and validates a request from JSON text.
    ///
    /// Errors name the offending field: unknown fields (`recommended`, `value`,
    /// `allow_custom`, `desc`, …) are rejected with a hint of what to use instead.
    pub fn from_json(text: &str) -> Result<Self, UserInteractionError> {
        if objects_where_expected(text, Document::Request)
            && let Ok(request) = serde_json::from_str::<Self>(text)
        {
            request.validate()?;
            return Ok(request);
        }
        // The careful way, for what the fast one refused: the same rules, and
        // errors that name the offending field.
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            UserInteractionError::bad_request(format!("request is not valid JSON: {e}"))
        })?;
        Self::from_value(value)
    }

    /// Parses and validates a request from a JSON value (e.g. MCP tool arguments).
    pub fn from_value(value: serde_json::Value) -> Result<Self, UserInteractionError> {
        check_request_shape(&value)?;
        let request: Self = serde_path_to_error::deserialize(value).map_err(parse_error)?;
        request.validate()?;
        Ok(request)
    }

    /// Checks every request rule; the error names the offending item and field.
    pub fn validate(&self) -> Result<(), UserInteractionError> {
        if self.questions.is_empty() {
            return Err(UserInteractionError::empty_questions());
        }
        if self.questions.len() > MAX_QUESTIONS {
            return Err(UserInteractionError::bad_request(format!(
                "questions: at most {MAX_QUESTIONS} questions per request, got {}",
                self.questions.len()
            )));
        }
        for (index, question) in self.questions.iter().enumerate() {
            question.validate(index)?;
            // At most ten questions: a scan beats hashing.
            if self.questions[..index].iter().any(|q| q.id == question.id) {
                return Err(UserInteractionError::bad_request(format!(
                    "questions[{index}].id: {} is used by an earlier question; ids must be unique in a request",
                    quoted(&question.id)
                )));
            }
        }
        self.validate_audience()
    }

    /// The audience and escalation rules: names well formed, an escalation
    /// only where it widens something, within a week.
    fn validate_audience(&self) -> Result<(), UserInteractionError> {
        match &self.audience {
            Some(Audience::Person(name)) => check_name("audience.person", name)?,
            Some(Audience::Role(role)) => check_name("audience.role", role)?,
            Some(Audience::Anyone) | None => {}
        }
        let Some(escalation) = &self.escalate_after else {
            return Ok(());
        };
        if escalation.seconds == 0 || escalation.seconds > MAX_ESCALATE_AFTER_SECS {
            return Err(UserInteractionError::bad_request(format!(
                "escalate_after.seconds: from 1 to {MAX_ESCALATE_AFTER_SECS} (a week), got {}",
                escalation.seconds
            )));
        }
        check_name("escalate_after.role", &escalation.role)?;
        match &self.audience {
            Some(Audience::Anyone) | None => Err(UserInteractionError::bad_request(
                "escalate_after: the audience is anyone already, so there is nothing to widen; \
                 give an `audience` of a person or a role"
                    .to_owned(),
            )),
            Some(Audience::Role(role)) if *role == escalation.role => {
                Err(UserInteractionError::bad_request(format!(
                    "escalate_after.role: {} is the audience's role already; name a second role",
                    quoted(role)
                )))
            }
            Some(_) => Ok(()),
        }
    }

    /// The audience (absent means [`Audience::Anyone`]).
    pub fn audience(&self) -> &Audience {
        self.audience.as_ref().unwrap_or(&Audience::Anyone)
    }

    /// Whether `person` may see and answer this request, `escalated` or not.
    pub fn admits(&self, person: &dyn Member, escalated: bool) -> bool {
        self.audience().admits(person)
            || (escalated
                && self
                    .escalate_after
                    .as_ref()
                    .is_some_and(|e| person.has_role(&e.role)))
    }

    /// When a request asked at `created_at_ms` escalates (Unix ms), if it
    /// has an `escalate_after`.
    pub fn escalates_at_ms(&self, created_at_ms: u64) -> Option<u64> {
        self.escalate_after
            .as_ref()
            .map(|e| created_at_ms.saturating_add(e.seconds.saturating_mul(1000)))
    }

    /// The question with this id.
    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }
}

impl Question {
    fn validate(&self, index: usize) -> Result<(), UserInteractionError> {
        // Field names are `format_args!`, so they are only formatted on failure.
        required_text(
            format_args!("questions[{index}].id"),
            &self.id,
            MAX_ID_CHARS,
        )?;
        required_text(
            format_args!("questions[{index}].question"),
            &self.question,
            MAX_QUESTION_CHARS,
        )?;
        if let Some(header) = &self.header {
            optional_text(
                format_args!("questions[{index}].header"),
                header,
                MAX_HEADER_CHARS,
            )?;
        }
        if let Some(detail) = &self.detail {
            optional_text(
                format_args!("questions[{index}].detail"),
                detail,
                MAX_DETAIL_CHARS,
            )?;
        }
        let options = self.options();
        if options.len() > MAX_OPTIONS {
            return Err(UserInteractionError::bad_request(format!(
                "questions[{index}].options: at most {MAX_OPTIONS} options per question, got {}",
                options.len()
            )));
        }
        for (o, option) in options.iter().enumerate() {
            required_text(
                format_args!("questions[{index}].options[{o}].label"),
                &option.label,
                MAX_LABEL_CHARS,
            )?;
            if let Some(description) = &option.description {
                optional_text(
                    format_args!("questions[{index}].options[{o}].description"),
                    description,
                    MAX_DESCRIPTION_CHARS,
                )?;
            }
            let label = option.label.trim();
            // At most sixteen options: a scan beats hashing.
            if options[..o]
                .iter()
                .any(|earlier| earlier.label.trim() == label)
            {
                return Err(UserInteractionError::bad_request(format!(
                    "questions[{index}].options[{o}].label: {} repeats an earlier option's label; labels must be unique within a question",
                    quoted(&option.label)
                )));
            }
        }
        if self.is_multi_select() && options.is_empty() {
            return Err(UserInteractionError::bad_request(format!(
                "questions[{index}].multi_select: multi_select requires options"
            )));
        }
        if let Some(intent) = &self.intent {
            if !options.iter().any(|o| o.label == intent.approve) {
                return Err(UserInteractionError::bad_intent(format!(
                    "questions[{index}].intent.approve: {} is not one of this question's option labels",
                    quoted(&intent.approve)
                )));
            }
            if self.detail.as_deref().is_none_or(|d| d.trim().is_empty()) {
                return Err(UserInteractionError::bad_intent(format!(
                    "questions[{index}].intent: a plan-review question needs `detail`: it holds the plan being reviewed"
                )));
            }
        }
        Ok(())
    }
}

fn required_text(
    field: std::fmt::Arguments<'_>,
    value: &str,
    max: usize,
) -> Result<(), UserInteractionError> {
    if value.trim().is_empty() {
        return Err(UserInteractionError::bad_request(format!(
            "{field}: must not be empty"
        )));
    }
    optional_text(field, value, max)
}

/// Lengths are in `char`s (see [`crate::limits`]).
fn optional_text(
    field: std::fmt::Arguments<'_>,
    value: &str,
    max: usize,
) -> Result<(), UserInteractionError> {
    // A string of at most `max` bytes has at most `max` chars: skip the count.
    if value.len() <= max {
        return Ok(());
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(UserInteractionError::bad_request(format!(
            "{field}: at most {max} characters, got {chars}"
        )));
    }
    Ok(())
}

/// Fields that earlier vocabularies had, and what to use instead.
const REMOVED_FIELD_HINTS: [(&str, &str); 4] = [
    (
        "recommended",
        "to recommend an option, end its label with \" (Recommended)\"",
    ),
    (
        "value",
        "an option's label is the value returned when it is chosen",
    ),
    (
        "allow_custom",
        "every question accepts a free-text answer in `custom`; a question without options collects free text only",
    ),
    ("desc", "use `description`"),
];

fn parse_error<E: std::fmt::Display>(error: serde_path_to_error::Error<E>) -> UserInteractionError {
    // A path names an unknown key whole, and serde quotes it whole again.
    let path = shorten(&error.path().to_string(), MAX_QUOTED_CHARS);
    let full_inner = error.inner().to_string();
    let inner = shorten_quotes_in(&full_inner);
    // Only errors inside a question's `intent` object are BAD_INTENT, not an
    // unknown sibling field whose name merely contains "intent".
    let in_intent = error
        .path()
        .iter()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|pair| {
            matches!(pair[0], Segment::Seq { .. })
                && matches!(pair[1], Segment::Map { key } if key == "intent")
        });
    let code = if in_intent {
        ErrorCode::BadIntent
    } else {
        ErrorCode::BadRequest
    };
    let mut message = if path == "." || path.is_empty() {
        format!("request: {inner}")
    } else {
        format!("{path}: {inner}")
    };
    for (field, hint) in REMOVED_FIELD_HINTS {
        if full_inner.starts_with(&format!("unknown field `{field}`")) {
            message.push_str(" (");
            message.push_str(hint);
            message.push(')');
        }
    }
    UserInteractionError::new(code, message)
}

/// serde's derived structs also accept a JSON array of field values
/// (`[["id", "question"]]`); the vocabulary is objects only, so reject that
/// before deserialising, naming the offending item.
fn check_request_shape(value: &Value) -> Result<(), UserInteractionError> {
    let root = expect_object(value, "request", ErrorCode::BadRequest)?;
    if let Some(escalation) = root.get("escalate_after").filter(|e| !e.is_null()) {
        expect_object(escalation, "escalate_after", ErrorCode::BadRequest)?;
    }
    let Some(Value::Array(questions)) = root.get("questions") else {
        return Ok(());
    };
    for (index, question) in questions.iter().enumerate() {
        let question = expect_object(
            question,
            &format!("questions[{index}]"),
            ErrorCode::BadRequest,
        )?;
        if let Some(Value::Array(options)) = question.get("options") {
            for (o, option) in options.iter().enumerate() {
                expect_object(
                    option,
                    &format!("questions[{index}].options[{o}]"),
                    ErrorCode::BadRequest,
                )?;
            }
        }
        if let Some(intent) = question.get("intent").filter(|i| !i.is_null()) {
            expect_object(
                intent,
                &format!("questions[{index}].intent"),
                ErrorCode::BadIntent,
            )?;
        }
    }
    Ok(())
}

pub(crate) fn expect_object<'a>(
    value: &'a Value,
    field: &str,
    code: ErrorCode,
) -> Result<&'a serde_json::Map<String, Value>, UserInteractionError> {
    value.as_object().ok_or_else(|| {
        let got = match value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        UserInteractionError::new(code, format!("{field}: expected a JSON object, got {got}"))
    })
}
