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
        Ok(())
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
