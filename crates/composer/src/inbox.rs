//! One inbox for every agent: the host's session list (`GET /api/sessions`,
//! then `inbox/changed` frames of `GET /api/events`), kept current in every
//! tab of the browser through **one** stream.
//!
//! The tab that holds the Web Lock [`INBOX_LOCK`] (`navigator.locks`) opens
//! the stream and posts each list on the `BroadcastChannel` of the same name;
//! every other tab listens there. When the holder closes, the browser grants
//! the lock to the next waiting tab, which opens the stream in its place. So
//! hidden tabs, whose session streams are closed, still learn of new
//! questions, and any number of tabs cost one connection. A browser without
//! Web Locks opens a stream per tab.

use crate::transport::{EventStream, LocalFuture, PostError};
use ask_user_core::wire::SessionList;
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// The Web Lock and `BroadcastChannel` name the page's tabs share.
pub const INBOX_LOCK: &str = "ask-user-inbox";

/// Where the session list comes from.
pub trait InboxTransport {
    /// `GET /api/sessions`.
    fn load_sessions(&self) -> LocalFuture<Result<SessionList, PostError>>;
    /// `GET /api/events`: calls `on_list` with every `inbox/changed` list
    /// until the handle is dropped.
    fn open_inbox(&self, on_list: Rc<dyn Fn(SessionList)>) -> EventStream;
}

/// What [`use_inbox`] returns.
#[derive(Clone, Copy)]
pub struct Inbox {
    /// The sessions, most urgent first; `None` until the first list arrived.
    pub sessions: ReadSignal<Option<SessionList>>,
    /// This tab holds the inbox stream (it is the one that notifies).
    pub holder: ReadSignal<bool>,
}

/// Keeps the session list current through one stream per browser (see the
/// module). `name` is the lock and channel name ([`INBOX_LOCK`] for the page).
pub fn use_inbox(transport: Rc<dyn InboxTransport>, name: &str) -> Inbox {
    let (sessions, set_sessions) = signal(None::<SessionList>);
    let (holder, set_holder) = signal(false);
    let set = move |list: SessionList| {
        let _ = set_sessions.try_set(Some(list));
    };

    // The list as it is now, for this tab (the stream only sends changes).
    let load = transport.load_sessions();
    leptos::task::spawn_local(async move {
        if let Ok(list) = load.await {
            // A stream's first frame may have come first; it is as new.
            if sessions
                .try_with_untracked(Option::is_none)
                .unwrap_or(false)
            {
                set(list);
            }
        }
    });

    let channel = web_sys::BroadcastChannel::new(name).ok();
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            if let Some(list) = event
                .data()
                .as_string()
                .and_then(|text| crate::json::from_str::<SessionList>(&text))
            {
                set(list);
            }
        });
    if let Some(channel) = &channel {
        channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    }

    // The stream, opened by the lock holder (or by every tab without locks).
    let stream: StoredValue<Option<EventStream>, LocalStorage> = StoredValue::new_local(None);
    let post_to = channel.clone();
    let open = move || {
        let post_to = post_to.clone();
        let on_list: Rc<dyn Fn(SessionList)> = Rc::new(move |list: SessionList| {
            if let (Some(channel), Some(text)) = (&post_to, crate::json::to_string(&list)) {
                let _ = channel.post_message(&JsValue::from_str(&text));
            }
            set(list);
        });
        let opened = transport.open_inbox(on_list);
        let _ = set_holder.try_set(true);
        // Granted after this tab's inbox went away: the handle drops, closing it.
        let _ = stream.try_update_value(|s| *s = Some(opened));
    };
    let release = request_lock(name, open);

    let held = SendWrapper::new((channel, on_message, release));
    on_cleanup(move || {
        let (channel, on_message, release) = held.take();
        drop(stream.try_update_value(|s| s.take()));
        if let Some(channel) = channel {
            channel.set_onmessage(None);
            channel.close();
        }
        drop(on_message);
        // Hands the lock (and so the stream) to the next tab.
        if let Some(release) = release {
            let _ = release.call0(&JsValue::NULL);
        }
    });
    Inbox { sessions, holder }
}

/// Asks for the Web Lock `name`; `granted` runs once this tab holds it, which
/// it does until the returned function is called or the tab closes. Without
/// Web Locks, `granted` runs at once. The returned function is `None` then.
fn request_lock(name: &str, granted: impl FnOnce() + 'static) -> Option<js_sys::Function> {
    let locks = web_sys::window()
        .map(|w| w.navigator())
        .and_then(|n| js_sys::Reflect::get(&n, &JsValue::from_str("locks")).ok())
        .filter(|locks| !locks.is_undefined() && !locks.is_null());
    let request = locks.as_ref().and_then(|locks| {
        js_sys::Reflect::get(locks, &JsValue::from_str("request"))
            .ok()?
            .dyn_into::<js_sys::Function>()
            .ok()
    });
    let (Some(locks), Some(request)) = (locks, request) else {
        granted();
        return None;
    };
    // The lock is held while the callback's promise is pending; resolving it
    // (the returned function) releases the lock.
    let mut resolve_slot: Option<js_sys::Function> = None;
    let held = js_sys::Promise::new(&mut |resolve, _| resolve_slot = Some(resolve));
    let mut granted = Some(granted);
    let on_granted = Closure::once_into_js(move |_lock: JsValue| {
        if let Some(granted) = granted.take() {
            granted();
        }
        held
    });
    let _ = request.call2(&locks, &JsValue::from_str(name), &on_granted);
    resolve_slot
}
