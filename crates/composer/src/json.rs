//! JSON in and out of the composer: the frames of the event stream, the POST
//! bodies, the drafts in sessionStorage and the host's error bodies.
//!
//! In the browser this is the browser's own `JSON` with serde-wasm-bindgen
//! (`JSON.parse` → [`serde_wasm_bindgen::from_value`], and
//! `Serializer::json_compatible()` → `JSON.stringify`), so serde_json's
//! parser and formatter stay out of the page's wasm. Natively (the unit
//! tests) it is serde_json, with the same results.

use ask_user_core::wire::{SessionEvent, Transcript};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Parses JSON text into `T`; `None` when it is not JSON or not a `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Option<T> {
    #[cfg(target_arch = "wasm32")]
    {
        let value = js_sys::JSON::parse(text).ok()?;
        serde_wasm_bindgen::from_value(value).ok()
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
        SessionEvent::from_deserializer(name, serde_wasm_bindgen::Deserializer::from(value))
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
                    TranscriptEntry::Message(serde_wasm_bindgen::from_value(entry).ok()?)
                }
                Some("record") => {
                    TranscriptEntry::Record(serde_wasm_bindgen::from_value(entry).ok()?)
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
