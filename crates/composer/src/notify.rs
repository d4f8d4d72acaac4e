//! System notifications and the arrival sound. Permission is asked only from
//! the page's "Notify me" control; the browser remembers the answer (a refusal
//! too), which [`permission`] reads back. The sound is off by default; its
//! toggle is kept in `localStorage` ([`SOUND_KEY`]).

use ask_user_core::attention::Arrival;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// The `localStorage` key of the arrival-sound toggle (`"on"` when on).
pub const SOUND_KEY: &str = "ask-user.sound";

/// Whether this page may show notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Not asked yet: the "Notify me" control asks.
    Ask,
    /// Allowed.
    Granted,
    /// Refused (the browser remembers; only its site settings change it).
    Denied,
    /// No Notification API here.
    Unsupported,
}

fn supported() -> bool {
    web_sys::window().is_some_and(|w| {
        js_sys::Reflect::get(&w, &JsValue::from_str("Notification")).is_ok_and(|n| n.is_function())
    })
}

/// The page's notification permission, as the browser remembers it.
pub fn permission() -> Permission {
    if !supported() {
        return Permission::Unsupported;
    }
    match web_sys::Notification::permission() {
        web_sys::NotificationPermission::Granted => Permission::Granted,
        web_sys::NotificationPermission::Denied => Permission::Denied,
        _ => Permission::Ask,
    }
}

/// Asks the person (from a click: browsers ignore a request without one).
pub async fn request_permission() -> Permission {
    if !supported() {
        return Permission::Unsupported;
    }
    if let Ok(promise) = web_sys::Notification::request_permission() {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
    permission()
}

/// Shows one notification for `arrival` (tagged by session, so a later one
/// for the same session replaces it); a click focuses this tab and calls
/// `on_click` with the session. Nothing without permission.
pub fn notify(title: &str, body: &str, arrival: &Arrival, on_click: impl Fn(String) + 'static) {
    if permission() != Permission::Granted {
        return;
    }
    let options = web_sys::NotificationOptions::new();
    options.set_body(body);
    options.set_tag(&format!("ask-user:{}", arrival.session));
    let Ok(notification) = web_sys::Notification::new_with_options(title, &options) else {
        return;
    };
    let session = arrival.session.clone();
    let shown = notification.clone();
    let on_click = Closure::<dyn FnMut()>::new(move || {
        if let Some(window) = web_sys::window() {
            let _ = window.focus();
        }
        on_click(session.clone());
        shown.close();
    });
    notification.set_onclick(Some(on_click.as_ref().unchecked_ref()));
    // Lives as long as the notification can be clicked: the page's lifetime.
    on_click.forget();
}

/// Whether the arrival sound is on.
pub fn sound_on() -> bool {
    local_storage()
        .and_then(|s| s.get_item(SOUND_KEY).ok().flatten())
        .is_some_and(|v| v == "on")
}

/// Turns the arrival sound on or off (remembered in `localStorage`).
pub fn set_sound(on: bool) {
    if let Some(storage) = local_storage() {
        let _ = if on {
            storage.set_item(SOUND_KEY, "on")
        } else {
            storage.remove_item(SOUND_KEY)
        };
    }
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// A short, soft beep (WebAudio; no sound file).
pub fn beep() {
    let Ok(context) = web_sys::AudioContext::new() else {
        return;
    };
    let (Ok(oscillator), Ok(gain)) = (context.create_oscillator(), context.create_gain()) else {
        return;
    };
    let now = context.current_time();
    oscillator.frequency().set_value(880.0);
    let _ = gain.gain().set_value_at_time(0.15, now);
    let _ = gain
        .gain()
        .exponential_ramp_to_value_at_time(0.001, now + 0.25);
    let _ = oscillator.connect_with_audio_node(&gain);
    let _ = gain.connect_with_audio_node(&context.destination());
    let _ = oscillator.start();
    let _ = oscillator.stop_with_when(now + 0.25);
    // Close the context once the beep is over (browsers cap open contexts).
    let closing = context.clone();
    let close = Closure::once_into_js(move || {
        let _ = closing.close();
    });
    if let Some(window) = web_sys::window() {
        let _ = window
            .set_timeout_with_callback_and_timeout_and_arguments_0(close.unchecked_ref(), 400);
    }
}
