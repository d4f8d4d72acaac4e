//! JSON in and out of the composer: the frames of the event stream, the POST
//! bodies, the drafts in sessionStorage and the host's error bodies.
//!
//! In the browser this is the browser's own `JSON`: `JSON.parse` → [`JsonValue`]
//! (a serde `Deserializer` over what `JSON.parse` returns), and
//! serde-wasm-bindgen's `Serializer::json_compatible()` → `JSON.stringify`, so
//! serde_json's parser and formatter stay out of the page's wasm. Natively
//! (the unit tests) it is serde_json, with the same results.
//!
//! Why not serde-wasm-bindgen's `Deserializer`: the page drops every parse
//! error (a frame that does not parse is skipped), but that deserializer's
//! errors are messages, and formatting them (`invalid type: floating point
//! `1.5`, expected …`) brought Rust's float formatting into the page: 9.6 KB
//! brotli. [`JsonValue`]'s error carries no message, so no message is built.

use ask_user_core::wire::{SessionEvent, Transcript};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Parses JSON text into `T`; `None` when it is not JSON or not a `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Option<T> {
    #[cfg(target_arch = "wasm32")]
    {
        let value = js_sys::JSON::parse(text).ok()?;
        T::deserialize(JsonValue(value)).ok()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        serde_json::from_str(text).ok()
    }
}

/// `value` as compact JSON text.
pub fn to_string<T: Serialize>(value: &T) -> Option<String> {
    #[cfg(target_arch = "wasm32")]
    {
        let value = value
            .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .ok()?;
        js_sys::JSON::stringify(&value).ok()?.as_string()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        serde_json::to_string(value).ok()
    }
}

/// One event of the session's stream from its SSE name and data; `None` for
/// a name core does not know or data that does not parse.
pub fn session_event(name: &str, data: &str) -> Option<SessionEvent> {
    #[cfg(target_arch = "wasm32")]
    {
        let value = js_sys::JSON::parse(data).ok()?;
        SessionEvent::from_deserializer(name, JsonValue(value))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        SessionEvent::parse(name, data)
    }
}

/// The body of `GET …/transcript`. In the browser each entry's `kind` is read
/// first and the entry then parsed as a message or a record: serde's
/// internally tagged enums buffer every entry in serde's `Content` first,
/// code (and float formatting for its errors) the page does not need.
/// An entry of a kind this page does not know (a newer host) is skipped.
pub fn transcript(text: &str) -> Option<Transcript> {
    #[cfg(target_arch = "wasm32")]
    {
        use ask_user_core::wire::TranscriptEntry;
        use serde::Deserialize;
        use wasm_bindgen::JsCast;
        let value = js_sys::JSON::parse(text).ok()?;
        let entries: js_sys::Array = js_sys::Reflect::get(&value, &"entries".into())
            .ok()?
            .dyn_into()
            .ok()?;
        let mut out = Vec::new();
        for entry in entries.iter() {
            let kind = js_sys::Reflect::get(&entry, &"kind".into())
                .ok()?
                .as_string();
            out.push(match kind.as_deref() {
                Some("message") => {
                    TranscriptEntry::Message(Deserialize::deserialize(JsonValue(entry)).ok()?)
                }
                Some("record") => {
                    TranscriptEntry::Record(Deserialize::deserialize(JsonValue(entry)).ok()?)
                }
                _ => continue,
            });
        }
        let demo_agent = js_sys::Reflect::get(&value, &"demo_agent".into())
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        Some(Transcript {
            entries: out,
            demo_agent,
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        serde_json::from_str(text).ok()
    }
}

#[cfg(target_arch = "wasm32")]
pub use browser::{JsonValue, NotExpected};

#[cfg(target_arch = "wasm32")]
mod browser {
    use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
    use serde::de::{self, IntoDeserializer, Visitor};
    use serde::forward_to_deserialize_any;
    use wasm_bindgen::{JsCast, JsValue};

    /// What `JSON.parse` returned, as a serde `Deserializer`: `null`, a
    /// boolean, a number, a string, an array or a plain object.
    pub struct JsonValue(pub JsValue);

    /// The value was not the type asked for. No message: the page drops it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct NotExpected;

    impl std::fmt::Display for NotExpected {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the JSON is not what the page expected")
        }
    }

    impl std::error::Error for NotExpected {}

    impl de::Error for NotExpected {
        // The message is never formatted, so its `Display` code (serde's
        // `Unexpected::Float` among it) never reaches the wasm.
        fn custom<T: std::fmt::Display>(_message: T) -> Self {
            NotExpected
        }
    }

    impl<'de> IntoDeserializer<'de, NotExpected> for JsonValue {
        type Deserializer = Self;
        fn into_deserializer(self) -> Self {
            self
        }
    }

    /// The largest integer a JavaScript number holds exactly (2^53 − 1).
    const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

    impl JsonValue {
        fn is_null(&self) -> bool {
            self.0.is_null() || self.0.is_undefined()
        }

        /// An object's `[key, value]` pairs, in the object's order.
        fn entries(&self) -> impl Iterator<Item = (String, JsonValue)> + use<> {
            js_sys::Object::entries(self.0.unchecked_ref())
                .into_iter()
                .map(|pair| {
                    let pair: js_sys::Array = pair.unchecked_into();
                    (
                        pair.get(0).as_string().unwrap_or_default(),
                        JsonValue(pair.get(1)),
                    )
                })
        }
    }

    impl<'de> de::Deserializer<'de> for JsonValue {
        type Error = NotExpected;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            let value = &self.0;
            if self.is_null() {
                visitor.visit_unit()
            } else if let Some(flag) = value.as_bool() {
                visitor.visit_bool(flag)
            } else if value.as_f64().is_some() {
                self.deserialize_f64(visitor)
            } else if let Some(text) = value.as_string() {
                visitor.visit_string(text)
            } else if js_sys::Array::is_array(value) {
                self.deserialize_seq(visitor)
            } else if value.is_object() {
                self.deserialize_map(visitor)
            } else {
                Err(NotExpected)
            }
        }

        // What a type asks for is the only kind tried: `deserialize_any`
        // would compile every visit (a struct's from an array among them)
        // into each type's reader, most of the JSON code in the page.

        /// Integers as integers, so `u64` and `i32` fields take them.
        fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            let number = self.0.as_f64().ok_or(NotExpected)?;
            if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER {
                if number >= 0.0 {
                    visitor.visit_u64(number as u64)
                } else {
                    visitor.visit_i64(number as i64)
                }
            } else {
                visitor.visit_f64(number)
            }
        }

        fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            visitor.visit_bool(self.0.as_bool().ok_or(NotExpected)?)
        }

        fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            visitor.visit_string(self.0.as_string().ok_or(NotExpected)?)
        }

        fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_string(visitor)
        }

        fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            if !js_sys::Array::is_array(&self.0) {
                return Err(NotExpected);
            }
            let array: js_sys::Array = self.0.unchecked_into();
            SeqDeserializer::new(array.into_iter().map(JsonValue)).deserialize_any(visitor)
        }

        fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            if self.is_null() || !self.0.is_object() || js_sys::Array::is_array(&self.0) {
                return Err(NotExpected);
            }
            MapDeserializer::new(self.entries()).deserialize_any(visitor)
        }

        /// A struct is an object (serde_json would take an array too; no
        /// host sends one).
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, NotExpected> {
            self.deserialize_map(visitor)
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            if self.is_null() {
                visitor.visit_none()
            } else {
                visitor.visit_some(self)
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, NotExpected> {
            visitor.visit_newtype_struct(self)
        }

        /// A unit variant is its name; any other variant an object with one key.
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, NotExpected> {
            if let Some(name) = self.0.as_string() {
                visitor.visit_enum(name.into_deserializer())
            } else if self.0.is_object() && !js_sys::Array::is_array(&self.0) {
                visitor.visit_enum(MapAccessDeserializer::new(MapDeserializer::new(
                    self.entries(),
                )))
            } else {
                Err(NotExpected)
            }
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(
            self,
            visitor: V,
        ) -> Result<V::Value, NotExpected> {
            visitor.visit_unit()
        }

        forward_to_deserialize_any! {
            i128 u128 char bytes byte_buf unit unit_struct tuple tuple_struct identifier
        }

        fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
        fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotExpected> {
            self.deserialize_f64(visitor)
        }
    }
}
