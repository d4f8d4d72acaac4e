//! "Notify this device" (issue 22): on a paired device's page (the
//! `--remote` origin) and on the host's own page (loopback, where the host
//! keeps the subscription in its data directory), a toggle that subscribes
//! this browser to Web Push with
//! the host's VAPID key (`GET /api/push/key`, then
//! `pushManager.subscribe`) and hands the subscription to the host (`PUT
//! /api/push/subscription`); off, it unsubscribes and tells the host
//! (`DELETE`). Shown only where the host has push (`GET
//! /api/push/subscription` answers) and the browser has Push. The
//! service worker (host/src/server/pages/app/sw.js) shows what arrives.
//!
//! The Push API is reached by name (`js_sys::Reflect`): it is not in every
//! browser and not in web-sys's stable set.

use crate::i18n::Texts;
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

const SUBSCRIPTION: &str = "/api/push/subscription";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not offered (not a device, or no Push here).
    Hidden,
    Off,
    On,
    Busy,
    Failed,
}

fn get(target: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    js_sys::Reflect::get(target, &JsValue::from_str(name))
}

fn call(target: &JsValue, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let method: js_sys::Function = get(target, name)?.dyn_into()?;
    let args: js_sys::Array = args.iter().collect();
    method.apply(target, &args)
}

async fn awaited(value: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(js_sys::Promise::resolve(&value)).await
}

/// The service worker's registration, when the browser has Push.
async fn registration() -> Result<JsValue, JsValue> {
    let navigator: JsValue = web_sys::window().ok_or("no window")?.navigator().into();
    let workers = get(&navigator, "serviceWorker")?;
    if workers.is_undefined()
        || get(&web_sys::window().ok_or("no window")?.into(), "PushManager")?.is_undefined()
    {
        return Err("no Push API".into());
    }
    awaited(get(&workers, "ready")?).await
}

/// The field `name` of a JSON response body (through the browser's JSON).
async fn json_field(response: gloo_net::http::Response, name: &str) -> Option<JsValue> {
    let text = response.text().await.ok()?;
    let value = js_sys::JSON::parse(&text).ok()?;
    get(&value, name).ok().filter(|v| !v.is_undefined())
}

/// base64url (no padding) to bytes.
fn base64url(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.trim_end_matches('=').bytes() {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

async fn subscribe() -> Result<(), JsValue> {
    if crate::notify::request_permission().await != crate::notify::Permission::Granted {
        return Err("notifications not allowed".into());
    }
    let registration = registration().await?;
    let key = gloo_net::http::Request::get("/api/push/key")
        .send()
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    let key: JsValue = json_field(key, "public_key")
        .await
        .and_then(|v| v.as_string())
        .and_then(|text| base64url(&text))
        .map(|bytes| js_sys::Uint8Array::from(bytes.as_slice()).into())
        .ok_or("no VAPID key")?;
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &"userVisibleOnly".into(), &JsValue::TRUE)?;
    js_sys::Reflect::set(&options, &"applicationServerKey".into(), &key)?;
    let manager = get(&registration, "pushManager")?;
    let subscription = awaited(call(&manager, "subscribe", &[options.into()])?).await?;
    let json = js_sys::JSON::stringify(&subscription)?
        .as_string()
        .ok_or("a subscription that is not JSON")?;
    let put = gloo_net::http::Request::put(SUBSCRIPTION)
        .header("content-type", "application/json")
        .body(json)
        .map_err(|e| JsValue::from_str(&e.to_string()))?
        .send()
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    if put.ok() {
        Ok(())
    } else {
        Err(put.text().await.unwrap_or_default().into())
    }
}

async fn unsubscribe() -> Result<(), JsValue> {
    if let Ok(registration) = registration().await {
        let manager = get(&registration, "pushManager")?;
        let subscription = awaited(call(&manager, "getSubscription", &[])?).await?;
        if !subscription.is_null() {
            let _ = awaited(call(&subscription, "unsubscribe", &[])?).await;
        }
    }
    gloo_net::http::Request::delete(SUBSCRIPTION)
        .send()
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    Ok(())
}

/// Whether the host has push for this page and it is subscribed.
async fn initial() -> State {
    if registration().await.is_err() {
        return State::Hidden;
    }
    let Ok(response) = gloo_net::http::Request::get(SUBSCRIPTION).send().await else {
        return State::Hidden;
    };
    if !response.ok() {
        return State::Hidden;
    }
    match json_field(response, "subscribed").await {
        Some(value) if value == JsValue::TRUE => State::On,
        Some(_) => State::Off,
        None => State::Hidden,
    }
}

/// The toggle (nothing where it does not apply).
#[component]
pub(crate) fn NotifyDevice(texts: &'static Texts) -> impl IntoView {
    let state = RwSignal::new(State::Hidden);
    leptos::task::spawn_local(async move { state.set(initial().await) });
    let toggle = move |_| {
        let was = state.get_untracked();
        state.set(State::Busy);
        leptos::task::spawn_local(async move {
            let result = if was == State::On {
                unsubscribe().await.map(|()| State::Off)
            } else {
                subscribe().await.map(|()| State::On)
            };
            state.set(result.unwrap_or(State::Failed));
        });
    };
    move || match state.get() {
        State::Hidden => None,
        shown => Some(view! {
            <button
                type="button"
                class="auq-btn auq-btn--quiet"
                data-auq="notify-device"
                aria-pressed=(shown == State::On).to_string()
                disabled=shown == State::Busy
                title=(shown == State::Failed).then_some(texts.notify_device_failed)
                on:click=toggle
            >
                {texts.notify_device}
            </button>
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_decodes_a_vapid_key_and_refuses_other_alphabets() {
        assert_eq!(base64url("AQID").unwrap(), [1, 2, 3]);
        assert_eq!(base64url("_-8").unwrap(), [0xff, 0xef]);
        assert!(base64url("a+b/").is_none());
    }
}
