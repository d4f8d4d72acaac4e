//! Session ids: the name of the conversation a question belongs to.
//!
//! One rule, `[A-Za-z0-9_-]{1,64}`, checked in one place ([`SessionId::parse`])
//! by every side that takes a session from outside: the host's routes, MCP's
//! `?session=`, `ask-user ask --session`, the page's `?session=` and the
//! JavaScript embed's `session` option; the composer's HTTP transport takes
//! only a checked `SessionId`.

use crate::error::UserInteractionError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The session an ask belongs to when the caller names none.
pub const DEFAULT_SESSION: &str = "default";

/// The longest session id.
pub const MAX_SESSION_CHARS: usize = 64;

/// A checked session id: 1 to [`MAX_SESSION_CHARS`] of `A-Z a-z 0-9 _ -`, so it
/// travels unchanged in a URL path, a query and a storage key.
///
/// ```
/// use ask_user_core::SessionId;
/// assert_eq!(SessionId::parse("review-42").unwrap().as_str(), "review-42");
/// assert_eq!(SessionId::default().as_str(), "default");
/// let error = SessionId::parse("a/b").unwrap_err();
/// assert_eq!(
///     error.message,
///     r#"session: "a/b" is not a session id; use 1 to 64 of A-Z a-z 0-9 _ -"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// Checks `session`; `BAD_REQUEST` naming the offending value (cut to 80
    /// characters) otherwise.
    pub fn parse(session: &str) -> Result<Self, UserInteractionError> {
        if Self::is_valid(session) {
            Ok(Self(session.to_owned()))
        } else {
            Err(UserInteractionError::bad_request(format!(
                "session: {} is not a session id; use 1 to {MAX_SESSION_CHARS} of A-Z a-z 0-9 _ -",
                crate::error::quoted(session)
            )))
        }
    }

    /// Whether `session` is a session id.
    pub fn is_valid(session: &str) -> bool {
        crate::wire::is_id(session, MAX_SESSION_CHARS)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SessionId {
    /// [`DEFAULT_SESSION`].
    fn default() -> Self {
        Self(DEFAULT_SESSION.to_owned())
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for SessionId {
    type Err = UserInteractionError;

    fn from_str(session: &str) -> Result<Self, Self::Err> {
        Self::parse(session)
    }
}

impl TryFrom<String> for SessionId {
    type Error = UserInteractionError;

    fn try_from(session: String) -> Result<Self, Self::Error> {
        Self::parse(&session)
    }
}

impl From<SessionId> for String {
    fn from(session: SessionId) -> Self {
        session.0
    }
}

impl PartialEq<str> for SessionId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SessionId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn ids_of_one_to_64_safe_characters_are_sessions() {
        for ok in ["a", "default", "work_2", "A-z_0", &"x".repeat(64)] {
            assert_eq!(SessionId::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn anything_else_is_a_bad_request_naming_the_value() {
        for bad in ["", "a/b", "a b", "ü", "a%2Fb", "a.b", &"x".repeat(65)] {
            let error = SessionId::parse(bad).unwrap_err();
            assert_eq!(error.code, ErrorCode::BadRequest, "{bad:?}");
            assert!(error.message.starts_with("session: "), "{error}");
            assert!(error.message.contains("use 1 to 64"), "{error}");
        }
    }

    #[test]
    fn a_long_bad_value_is_cut_in_the_message() {
        let error = SessionId::parse(&"/".repeat(10_000)).unwrap_err();
        assert!(error.message.len() < 200, "{}", error.message);
        assert!(error.message.contains('…'));
    }

    #[test]
    fn it_deserialises_only_when_valid() {
        let ok: SessionId = serde_json::from_str(r#""s-1""#).unwrap();
        assert_eq!(ok, "s-1");
        assert!(serde_json::from_str::<SessionId>(r#""s 1""#).is_err());
        assert_eq!(serde_json::to_string(&ok).unwrap(), r#""s-1""#);
    }
}
