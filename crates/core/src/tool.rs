//! The `ask_user_question` tool: its name, the description the model reads, the
//! JSON Schema of its arguments, and the text of its result.

use crate::answer::AnswerBatch;
use crate::error::UserInteractionError;
use crate::limits::*;
use serde_json::{Value, json};

/// The tool's name.
pub const TOOL_NAME: &str = "ask_user_question";

/// What the server (the host, or the stdio bridge) tells an MCP client about itself.
pub const INSTRUCTIONS: &str = "ask-user shows your questions to a person in a web page and returns \
their answer. Call ask_user_question only when you cannot continue without a person's decision.";

/// What the model reads about the tool.
pub const TOOL_DESCRIPTION: &str = "\
Ask the user one or more short structured questions and wait for the answer. \
Use it only when you cannot safely continue without a person's decision or a fact \
you cannot find out yourself: first read the code, files, docs and conversation, \
and never ask what you could look up. Keep each question short and specific. \
Prefer options (2-5 labels the user can pick) over open questions; the user can \
always type their own answer instead. Batch related questions into one call \
(at most 10) rather than asking one after another. Give every question a unique `id`; \
the result echoes it. Set `multi_select: true` when several options may apply. \
Put long supporting text (a plan, a diff summary) in `detail`, never in an option. \
To recommend an option, end its label with \" (Recommended)\" and list it first; \
it is never pre-selected. The result is {\"answers\": [{\"id\", \"selected\": [labels], \"custom\"?}], \"note\"?}: \
`selected` holds the chosen labels exactly as you wrote them, `custom` the user's own words, \
and an empty `selected` without `custom` means the user skipped that question. \
If the user replied instead of finishing, the result also has a top-level `note` with their \
message (questions they did not reach come back skipped): read it before you go on. \
If the user cancels, the tool fails with ASK_CANCELLED: do not ask the same thing again; \
continue with what you have or stop and say what you need. \
If the result says the person has not answered yet, call ask_user_question again with exactly \
the same arguments to keep waiting: the question stays open and their answer is kept.";

/// The `status` of a result that is not an answer yet: the person has not
/// answered, the question stays open, and the same call collects the answer.
pub const WAITING_STATUS: &str = "waiting";

/// The text of a `waiting` result for the question `id`. It starts with
/// `The person has not answered yet.` and tells the model to call again with
/// exactly the same arguments.
///
/// ```
/// let text = ask_user_core::tool::render_waiting("q_1");
/// assert!(text.starts_with("The person has not answered yet."));
/// assert!(text.contains("exactly the same arguments"));
/// ```
pub fn render_waiting(id: &str) -> String {
    format!(
        "The person has not answered yet. The question ({id}) is still open in their page. \
         Call {TOOL_NAME} again with exactly the same arguments to keep waiting; \
         their answer comes back as soon as they give it."
    )
}

/// The JSON Schema of the tool's arguments ([`crate::AskRequest`]).
///
/// `additionalProperties: false` throughout; there is no `value`,
/// `recommended`, `allow_custom` or `desc`.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["questions"],
        "properties": {
            "questions": {
                "type": "array",
                "description": "The questions, asked together and shown one at a time.",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "question"],
                    "properties": {
                        "id": {
                            "type": "string",
                            "description": "Unique id of the question in this call; echoed in the answer.",
                            "minLength": 1,
                            "maxLength": MAX_ID_CHARS
                        },
                        "question": {
                            "type": "string",
                            "description": "The question, short and specific.",
                            "minLength": 1,
                            "maxLength": MAX_QUESTION_CHARS
                        },
                        "header": {
                            "type": "string",
                            "description": "A very short topic chip shown above the question.",
                            "maxLength": MAX_HEADER_CHARS
                        },
                        "detail": {
                            "type": "string",
                            "description": "Supporting text shown with the question (for plan-review: the plan, in Markdown).",
                            "maxLength": MAX_DETAIL_CHARS
                        },
                        "options": {
                            "type": "array",
                            "description": "Choices; omit for a free-text question. End one label with \" (Recommended)\" to recommend it.",
                            "maxItems": MAX_OPTIONS,
                            "items": {
                                "type": "object",
                                "additionalProperties": false,
                                "required": ["label"],
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "description": "Shown to the user and returned when chosen; unique within the question.",
                                        "minLength": 1,
                                        "maxLength": MAX_LABEL_CHARS
                                    },
                                    "description": {
                                        "type": "string",
                                        "description": "What choosing this option means.",
                                        "maxLength": MAX_DESCRIPTION_CHARS
                                    }
                                }
                            }
                        },
                        "multi_select": {
                            "type": "boolean",
                            "description": "Allow several options to be chosen (requires options)."
                        },
                        "intent": {
                            "type": "object",
                            "description": "Presentation hint. plan-review: show `detail` as a plan to approve with the option named by `approve`.",
                            "additionalProperties": false,
                            "required": ["kind", "approve"],
                            "properties": {
                                "kind": { "type": "string", "enum": ["plan-review"] },
                                "approve": {
                                    "type": "string",
                                    "description": "The label of the option that approves the plan."
                                }
                            }
                        }
                    }
                }
            },
            "audience": {
                "description": "Who may see and answer, on a host with several people: \"anyone\" (the default), {\"person\": NAME} or {\"role\": ROLE}.",
                "oneOf": [
                    { "type": "string", "enum": ["anyone"] },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["person"],
                        "properties": {
                            "person": { "type": "string", "minLength": 1, "maxLength": MAX_AUDIENCE_NAME_CHARS, "pattern": AUDIENCE_NAME_PATTERN }
                        }
                    },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["role"],
                        "properties": {
                            "role": { "type": "string", "minLength": 1, "maxLength": MAX_AUDIENCE_NAME_CHARS, "pattern": AUDIENCE_NAME_PATTERN }
                        }
                    }
                ]
            },
            "escalate_after": {
                "type": "object",
                "description": "If nobody in the audience answered within `seconds`, people with `role` may answer too (needs an audience of a person or a role).",
                "additionalProperties": false,
                "required": ["seconds", "role"],
                "properties": {
                    "seconds": { "type": "integer", "minimum": 1, "maximum": MAX_ESCALATE_AFTER_SECS },
                    "role": { "type": "string", "minLength": 1, "maxLength": MAX_AUDIENCE_NAME_CHARS, "pattern": AUDIENCE_NAME_PATTERN }
                }
            }
        }
    })
}

/// The characters a person's name or a role may hold ([`crate::request::check_name`]).
pub const AUDIENCE_NAME_PATTERN: &str = "^[A-Za-z0-9._-]+$";

/// The tool result text: the answer batch as compact JSON, or one line
/// `Error: <message> (<CODE>)` that a model and a program can both route on.
///
/// ```
/// use ask_user_core::{UserInteractionError, tool::render_result};
/// let text = render_result(&Err(UserInteractionError::cancelled()));
/// assert_eq!(text, "Error: the user cancelled ask_user_question (ASK_CANCELLED)");
/// ```
pub fn render_result(result: &Result<AnswerBatch, UserInteractionError>) -> String {
    match result {
        Ok(batch) => serde_json::to_string(batch).expect("answer batches always serialise"),
        Err(error) => render_error(error),
    }
}

/// The one-line text of a failed call: `Error: <message> (<CODE>)`.
pub fn render_error(error: &UserInteractionError) -> String {
    error_line(&error.message, &error.code)
}

/// `Error: <message> (<CODE>)`, the one shape every refusal a client reads
/// as text takes (core's errors, and a transport's own such as
/// `TOO_MANY_PENDING`), so [`parse_result`] reads each back. The only place
/// that writes it.
///
/// ```
/// use ask_user_core::tool::error_line;
/// assert_eq!(error_line("too many", &"TOO_MANY_TASKS"), "Error: too many (TOO_MANY_TASKS)");
/// ```
pub fn error_line(message: &str, code: &dyn std::fmt::Display) -> String {
    format!("Error: {message} ({code})")
}

/// Reads a result text back: the batch, or the error with its code.
/// Returns `None` for text that is neither.
pub fn parse_result(text: &str) -> Option<Result<AnswerBatch, UserInteractionError>> {
    if let Some(rest) = text.strip_prefix("Error: ") {
        let (message, code) = rest.strip_suffix(')')?.rsplit_once(" (")?;
        let code = serde_json::from_value(Value::String(code.to_owned())).ok()?;
        return Some(Err(UserInteractionError::new(code, message)));
    }
    serde_json::from_str(text).ok().map(Ok)
}
