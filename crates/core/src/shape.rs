//! The fast way to read a request or an answer batch from JSON text: typed,
//! straight from the text, without building a `serde_json::Value` first
//! (building and dropping that tree was most of the host's cost of reading an
//! ask).
//!
//! serde's derived structs also accept a JSON array of field values, which the
//! vocabulary does not (objects only); [`objects_where_expected`] checks that
//! in one pass over the text that allocates nothing. The fast path is taken
//! only when that check and the typed read both succeed; anything else goes the
//! way of the `Value`, whose error messages name the offending field exactly
//! as the rules' tests pin them. Both ways accept the same requests and read
//! them the same.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Which document [`objects_where_expected`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Document {
    /// An ask request: `{"questions": [{…, "options": [{…}], "intent": {…}}]}`.
    Request,
    /// An answer batch: `{"answers": [{…}]}`.
    AnswerBatch,
}

/// Whether `text` is one JSON document with an object wherever `document`
/// wants one (the root, each question or answer, each option, an intent that
/// is not null). `false` for anything else, including text that is not JSON:
/// the caller then takes the careful path, which says what is wrong.
pub(crate) fn objects_where_expected(text: &str, document: Document) -> bool {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let shape = match document {
        Document::Request => Shape::Object(Fields::Request),
        Document::AnswerBatch => Shape::Object(Fields::AnswerBatch),
    };
    shape.deserialize(&mut deserializer).is_ok() && deserializer.end().is_ok()
}

/// What a value must look like.
#[derive(Clone, Copy)]
enum Shape {
    /// An object whose fields are checked by `Fields`.
    Object(Fields),
    /// When it is an array, every element is an object checked by `Fields`
    /// (anything else is left to the typed read, which refuses it by itself).
    ArrayOfObjects(Fields),
    /// An object checked by `Fields`, or null.
    ObjectOrNull(Fields),
    /// Anything.
    Any,
}

/// Which fields of an object have a shape of their own.
#[derive(Clone, Copy)]
enum Fields {
    Request,
    Question,
    AnswerBatch,
    /// No field is checked (options, intents, answers).
    Leaf,
}

impl Fields {
    fn shape_of(self, key: &str) -> Shape {
        match (self, key) {
            (Fields::Request, "questions") => Shape::ArrayOfObjects(Fields::Question),
            (Fields::Request, "escalate_after") => Shape::ObjectOrNull(Fields::Leaf),
            (Fields::Question, "options") => Shape::ArrayOfObjects(Fields::Leaf),
            (Fields::Question, "intent") => Shape::ObjectOrNull(Fields::Leaf),
            (Fields::AnswerBatch, "answers") => Shape::ArrayOfObjects(Fields::Leaf),
            _ => Shape::Any,
        }
    }
}

/// The shape was not met (the message is never shown).
struct Mismatch;

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self {
            Shape::Any => deserializer.deserialize_ignored_any(IgnoredAny).map(drop),
            shape => deserializer.deserialize_any(ShapeVisitor(shape)),
        }
    }
}

struct ShapeVisitor(Shape);

impl ShapeVisitor {
    fn mismatch<E: de::Error>(&self) -> Result<(), E> {
        match self.0 {
            // Not an array: the typed read refuses it, naming the field.
            Shape::ArrayOfObjects(_) => Ok(()),
            _ => Err(E::custom(Mismatch)),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not the vocabulary's shape")
    }
}

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value of the vocabulary's shape")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let fields = match self.0 {
            Shape::Object(fields) | Shape::ObjectOrNull(fields) => fields,
            Shape::ArrayOfObjects(_) | Shape::Any => {
                // An object where an array may be: the typed read refuses it.
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(());
            }
        };
        while let Some(key) = map.next_key_seed(KeySeed)? {
            map.next_value_seed(fields.shape_of(key.as_str()))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Shape::ArrayOfObjects(fields) = self.0 else {
            return Err(de::Error::custom(Mismatch));
        };
        while seq.next_element_seed(Shape::Object(fields))?.is_some() {}
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        match self.0 {
            Shape::ObjectOrNull(_) => Ok(()),
            _ => self.mismatch(),
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.mismatch()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.mismatch()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.mismatch()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.mismatch()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.mismatch()
    }
}

/// A field name, kept only when it is one the shapes look at (no allocation
/// for the rest).
enum Key {
    Known(&'static str),
    Other,
}

impl Key {
    fn as_str(&self) -> &str {
        match self {
            Key::Known(key) => key,
            Key::Other => "",
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok([
            "questions",
            "options",
            "intent",
            "answers",
            "escalate_after",
        ]
        .into_iter()
        .find(|known| *known == key)
        .map_or(Key::Other, Key::Known))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> bool {
        objects_where_expected(text, Document::Request)
    }

    #[test]
    fn objects_everywhere_pass() {
        assert!(request(
            r#"{"questions": [{"id": "a", "question": "?", "options": [{"label": "x"}], "intent": {"kind": "plan-review"}}]}"#
        ));
        assert!(request(
            r#"{"questions": [{"id": "a", "question": "?", "intent": null}]}"#
        ));
        assert!(objects_where_expected(
            r#"{"answers": [{"id": "a", "selected": ["x"]}]}"#,
            Document::AnswerBatch
        ));
    }

    #[test]
    fn an_array_where_an_object_belongs_fails() {
        assert!(!request(r#"[["a", "?"]]"#));
        assert!(!request(r#"{"questions": [["a", "?"]]}"#));
        assert!(!request(
            r#"{"questions": [{"id": "a", "question": "?", "options": [["x"]]}]}"#
        ));
        assert!(!request(
            r#"{"questions": [{"id": "a", "question": "?", "intent": ["plan-review"]}]}"#
        ));
        assert!(!request(
            r#"{"questions": [{"id": "a", "question": "?", "intent": "plan-review"}]}"#
        ));
        assert!(!objects_where_expected(
            r#"{"answers": [["a", ["x"]]]}"#,
            Document::AnswerBatch
        ));
    }

    #[test]
    fn text_that_is_not_one_json_document_fails() {
        assert!(!request(""));
        assert!(!request(r#"{"questions": []} {}"#));
        assert!(!request(r#"{"questions": [}"#));
    }

    #[test]
    fn what_the_typed_read_refuses_by_itself_is_left_to_it() {
        // `questions` not an array, options not an array: shape passes, the
        // typed read fails with its own message.
        assert!(request(r#"{"questions": 5}"#));
        assert!(request(
            r#"{"questions": [{"id": "a", "question": "?", "options": "x"}]}"#
        ));
        // Escaped field names are names too.
        assert!(!request(r#"{"questions": [["a"]]}"#));
        assert!(!request(r#"{"question\u0073": [["a"]]}"#));
    }
}
