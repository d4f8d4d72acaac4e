//! JSON in and out of the composer: the frames of the event stream, the POST
//! bodies, the drafts in sessionStorage and the host's error bodies.
//!
//! In the browser this is the browser's own `JSON` with serde-wasm-bindgen
//! (`JSON.parse` → [`serde_wasm_bindgen::from_value`], and
//! `Serializer::json_compatible()` → `JSON.stringify`), so serde_json's
//! parser and formatter stay out of the page's wasm. Natively (the unit
//! tests) it is serde_json, with the same results.

use ask_user_core::wire::SessionEvent;
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
