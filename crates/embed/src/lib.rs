//! # ask-user-embed
//!
//! The question composer for web UIs that are not Leptos. Built with
//! `wasm-bindgen --target web` into `dist/embed/` (`cargo xtask run|test` do it),
//! which the host serves at `/embed/`:
//!
//! ```js
//! import init, { mount } from '/embed/ask_user_embed.js';
//! await init();
//! const handle = mount(document.querySelector('#composer'), {
//!   baseUrl: '',            // the host's API prefix; '' = this page's origin
//!   session: 'default',
//!   token: undefined,       // Bearer token when the page has no host cookie
//!   onSlotChange: (taken) => { myComposer.hidden = taken; },
//! });
//! // later
//! handle.unmount();
//! ```
//!
//! `mount` appends one `<div class="auq-embed">` to the element and renders into
//! it; `unmount` disposes the Leptos owner (which closes the event stream) and
//! removes that `<div>`, leaving the element as it was. See [`mount`] for every
//! option.
//!
//! A thin wasm-bindgen wrapper over `ask-user-composer`: it must hold no
//! questionnaire logic and never depend on the host (`tests/tests/tidy.rs`
//! checks the dependency).

use ask_user_composer::{
    Conversation, Lang, Locale, QuestionComposer, STYLESHEET, Transport, UseQuestionStreamReturn,
    use_question_stream_with,
};
use ask_user_composer::{HttpTransport, PostError};
use ask_user_core::SessionId;
use ask_user_core::wire::{MessageCreated, Role};
use leptos::either::Either;
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// What the embed renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbedView {
    /// Only the question composer: hidden while nothing is pending, so the
    /// page keeps its own chat list and message box (`onSlotChange` says when
    /// to hide them).
    #[default]
    Composer,
    /// The whole conversation: transcript, message box and question composer.
    Conversation,
}

/// The checked options of [`mount`] (without the JavaScript callbacks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedOptions {
    /// The host's API prefix (`''` for this page's origin), without a trailing `/`.
    pub base_url: String,
    /// The session whose questions to show.
    pub session: SessionId,
    /// A Bearer token, for pages that do not hold the host's cookie.
    pub token: Option<String>,
    /// What to render.
    pub view: EmbedView,
    /// The interface language; the browser's when `None`.
    pub lang: Option<Lang>,
    /// Whether to put the composer's stylesheet inside the mounted `<div>`.
    pub styles: bool,
}

/// `mount`'s options as JavaScript gave them (`None` = absent, `undefined`
/// or `null`; unknown keys are ignored).
#[derive(Debug, Clone, Default)]
pub struct RawOptions {
    /// `baseUrl`.
    pub base_url: Option<String>,
    /// `session`.
    pub session: Option<String>,
    /// `token`.
    pub token: Option<String>,
    /// `view`.
    pub view: Option<String>,
    /// `lang`.
    pub lang: Option<String>,
    /// `styles`.
    pub styles: Option<bool>,
    /// `onSlotChange(taken)`.
    pub on_slot_change: Option<js_sys::Function>,
    /// `onMessage(message)`.
    pub on_message: Option<js_sys::Function>,
}

impl RawOptions {
    /// Reads `mount`'s second argument; the error names the option that is
    /// wrong and what it takes (`options.session: a string, not a number`).
    ///
    /// Read property by property rather than through serde-wasm-bindgen,
    /// whose messages (`invalid type: floating point `5`, …`) brought Rust's
    /// float formatting and serde_path_to_error into the embed.
    pub fn from_js(options: JsValue) -> Result<Self, String> {
        if options.is_undefined() || options.is_null() {
            return Ok(Self::default());
        }
        if !options.is_object() {
            return Err("options must be an object".to_owned());
        }
        let string = |name| option(&options, name, "a string", JsValue::as_string);
        let function = |name| {
            option(&options, name, "a function", |value| {
                value.dyn_ref::<js_sys::Function>().cloned()
            })
        };
        Ok(Self {
            base_url: string("baseUrl")?,
            session: string("session")?,
            token: string("token")?,
            view: string("view")?,
            lang: string("lang")?,
            styles: option(&options, "styles", "true or false", JsValue::as_bool)?,
            on_slot_change: function("onSlotChange")?,
            on_message: function("onMessage")?,
        })
    }
}

/// `options[name]` as `read` takes it (`None` when absent, `undefined` or
/// `null`), or an error saying it is not `takes`.
fn option<T>(
    options: &JsValue,
    name: &str,
    takes: &str,
    read: impl FnOnce(&JsValue) -> Option<T>,
) -> Result<Option<T>, String> {
    let value = js_sys::Reflect::get(options, &JsValue::from_str(name))
        .map_err(|_| format!("options.{name}: reading it threw"))?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    read(&value).map(Some).ok_or_else(|| {
        let is = value.js_typeof().as_string().unwrap_or_default();
        format!("options.{name}: {takes}, not {}", a_or_an(&is))
    })
}

/// `typeof`'s word with its article: "a number", "an object".
fn a_or_an(word: &str) -> String {
    let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {word}")
}

impl EmbedOptions {
    /// Checks the raw values, naming the first option that is wrong.
    pub fn parse(raw: RawOptions) -> Result<Self, String> {
        let base_url = raw.base_url.unwrap_or_default();
        let base_ok = base_url.is_empty()
            || base_url.starts_with('/')
            || base_url.starts_with("http://")
            || base_url.starts_with("https://");
        if !base_ok {
            return Err(format!(
                "options.baseUrl: {base_url:?} is neither '' (this origin), a path starting with '/', nor an http(s):// URL"
            ));
        }
        // Core's rule, as the host applies it: a bad id would only show as a
        // stream that never connects. Its message starts with `session: `.
        let session = match raw.session.as_deref() {
            None | Some("") => SessionId::default(),
            Some(session) => {
                SessionId::parse(session).map_err(|e| format!("options.{}", e.message))?
            }
        };
        let view = match raw.view.as_deref() {
            None | Some("composer") => EmbedView::Composer,
            Some("conversation") => EmbedView::Conversation,
            Some(other) => {
                return Err(format!(
                    "options.view: {other:?} is not 'composer' or 'conversation'"
                ));
            }
        };
        let lang = match raw.lang.as_deref() {
            None | Some("") => None,
            Some(tag) => Some(Lang::from_tag(tag)),
        };
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            session,
            token: raw.token.filter(|t| !t.is_empty()),
            view,
            lang,
            styles: raw.styles.unwrap_or(true),
        })
    }
}

/// What one `mount` keeps alive until `unmount`.
struct Mounted {
    /// The root owner: disposing it runs every `on_cleanup` (closing the stream).
    owner: Owner,
    /// Leptos's unmount handle (dropping it removes the rendered nodes).
    view: Box<dyn Any>,
    /// The `<div class="auq-embed">` appended to the embedder's element.
    container: web_sys::HtmlElement,
    /// For `sendMessage`.
    transport: Transport,
}

thread_local! {
    // Mounts live here, not in the JS handle: a handle the page dropped (and the
    // GC finalised) must not take the composer away.
    static MOUNTS: RefCell<HashMap<u32, Mounted>> = RefCell::new(HashMap::new());
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

/// What `mount` returns: `unmount()` and `sendMessage(text)`.
#[wasm_bindgen]
pub struct EmbedHandle {
    id: u32,
}

#[wasm_bindgen]
impl EmbedHandle {
    /// Disposes the Leptos owner (closing the event stream) and removes the
    /// mounted `<div>`. Calling it again does nothing.
    pub fn unmount(&self) {
        let Some(mounted) = MOUNTS.with_borrow_mut(|mounts| mounts.remove(&self.id)) else {
            return;
        };
        let Mounted {
            owner,
            view,
            container,
            transport,
        } = mounted;
        drop(view);
        owner.cleanup();
        container.remove();
        drop(transport);
    }

    /// Whether the composer is still mounted.
    #[wasm_bindgen(getter)]
    pub fn mounted(&self) -> bool {
        MOUNTS.with_borrow(|mounts| mounts.contains_key(&self.id))
    }

    /// Posts a transcript message to the session (`POST …/messages {"text"}`),
    /// with the same base URL and token as the composer. Resolves when the host
    /// accepted it; rejects with an `Error` saying why not.
    #[wasm_bindgen(js_name = sendMessage)]
    pub fn send_message(&self, text: String) -> js_sys::Promise {
        let transport = MOUNTS.with_borrow(|m| m.get(&self.id).map(|m| m.transport.clone()));
        wasm_bindgen_futures::future_to_promise(async move {
            let Some(transport) = transport else {
                return Err(js_error("sendMessage: the composer was unmounted"));
            };
            let text = text.trim();
            if text.is_empty() {
                return Err(js_error("sendMessage: the text is empty"));
            }
            transport
                .post_message(text)
                .await
                .map(|()| JsValue::UNDEFINED)
                .map_err(|e: PostError| js_error(&format!("sendMessage: {e}")))
        })
    }
}

/// Mounts the question composer into `element` and returns its handle.
///
/// `options` (all optional):
/// - `baseUrl`: the host's API prefix, `''` (default) for this page's origin,
///   or a path such as `/ask-user` behind a reverse proxy. The host refuses
///   other origins, so the page must share its origin.
/// - `session`: the session (default `default`).
/// - `token`: the host's token, for a page that did not land through
///   `/?token=` (so has no cookie): sent as `Authorization: Bearer` on POSTs and
///   as `?token=` on the event stream.
/// - `view`: `'composer'` (default; only the question card, hidden while
///   nothing is pending) or `'conversation'` (transcript + message box too).
/// - `lang`: a BCP 47 tag (`'en'`, `'zh-CN'`); default the browser's.
/// - `styles`: `false` to skip the inline stylesheet (link
///   `/embed/ask_user_embed.css` yourself, e.g. under a strict CSP).
/// - `onSlotChange(taken)`: called with `true` when questions take the
///   composer slot and `false` when the host resolved the last one (hide and
///   show your own message box; put focus back in it on `false`).
/// - `onMessage({id, role, text})`: called once per transcript message the
///   session's stream delivers while mounted (the person's and the agent's;
///   the host sends them live, without history), for a page that draws its
///   own chat list.
///
/// Throws an `Error` naming the argument or option that is wrong.
#[wasm_bindgen]
pub fn mount(element: JsValue, options: JsValue) -> Result<EmbedHandle, JsError> {
    // Debug builds only, as in the page: it costs the release bundle 0.8 KB.
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    let element = element
        .dyn_into::<web_sys::Element>()
        .map_err(|_| JsError::new("mount: the first argument must be a DOM element"))?;
    let mut raw = RawOptions::from_js(options).map_err(|e| JsError::new(&format!("mount: {e}")))?;
    let on_slot_change = raw.on_slot_change.take();
    let on_message = raw.on_message.take();
    let options = EmbedOptions::parse(raw).map_err(|e| JsError::new(&format!("mount: {e}")))?;

    let document = element
        .owner_document()
        .ok_or_else(|| JsError::new("mount: the element belongs to no document"))?;
    let container = document
        .create_element("div")
        .map_err(|_| JsError::new("mount: could not create the container"))?
        .unchecked_into::<web_sys::HtmlElement>();
    container.set_class_name("auq-embed");
    let _ = container.set_attribute("data-auq", "embed");
    element
        .append_child(&container)
        .map_err(|_| JsError::new("mount: could not append to the element"))?;

    let transport = Transport::new(HttpTransport::new(
        options.base_url.clone(),
        options.session.clone(),
        options.token.clone(),
    ));
    let owner = Owner::new();
    let view = {
        let transport = transport.clone();
        let callbacks = SendWrapper::new((on_slot_change, on_message));
        let parent = container.clone();
        owner.with(move || {
            leptos::mount::mount_to(parent, move || {
                let (on_slot_change, on_message) = callbacks.take();
                render(options, transport, on_slot_change, on_message)
            })
        })
    };
    let id = NEXT_ID.with(|next| {
        let id = next.get();
        next.set(id.wrapping_add(1));
        id
    });
    MOUNTS.with_borrow_mut(|mounts| {
        mounts.insert(
            id,
            Mounted {
                owner,
                view: Box::new(view),
                container,
                transport,
            },
        )
    });
    Ok(EmbedHandle { id })
}

fn render(
    options: EmbedOptions,
    transport: Transport,
    on_slot_change: Option<js_sys::Function>,
    on_message: Option<js_sys::Function>,
) -> impl IntoView {
    let lang = options.lang.unwrap_or_else(Lang::from_browser);
    provide_context(Locale(lang));
    let stream = use_question_stream_with(transport);
    if let Some(callback) = on_slot_change {
        watch_slot(stream, callback);
    }
    if let Some(callback) = on_message {
        watch_messages(stream, callback);
    }
    let styles = options
        .styles
        .then(|| view! { <style>{STYLESHEET}</style> });
    // `Either`, not erased views: each `into_any()` costs its own copy of
    // tachys's type-erasure code.
    let body = match options.view {
        EmbedView::Composer => Either::Left(view! { <QuestionComposer session=stream.session /> }),
        EmbedView::Conversation => Either::Right(view! { <Conversation stream /> }),
    };
    view! {
        {styles}
        {body}
    }
}

/// Calls `callback(taken)` whenever the question composer takes or gives back the slot.
fn watch_slot(stream: UseQuestionStreamReturn, callback: js_sys::Function) {
    let view = stream.session.view();
    let mut previous = false;
    ask_user_composer::effect(move || {
        let taken = view.with(|v| v.slot_taken);
        if std::mem::replace(&mut previous, taken) != taken {
            // Last: the callback may unmount, which disposes this effect's signals.
            call(&callback, &JsValue::from_bool(taken));
        }
    });
}

/// Calls `callback(message)` once per transcript message, in order.
fn watch_messages(stream: UseQuestionStreamReturn, callback: js_sys::Function) {
    let mut seen = 0;
    ask_user_composer::effect(move || {
        let (fresh, total): (Vec<MessageCreated>, usize) = stream
            .messages
            .with(|list| (list.iter().skip(seen).cloned().collect(), list.len()));
        // Before the callbacks: one may unmount, which disposes this effect.
        seen = total;
        for message in fresh {
            call(&callback, &message_object(&message));
        }
    });
}

/// `{id, role, text}`, the wire's `message/created` as a JavaScript object.
fn message_object(message: &MessageCreated) -> JsValue {
    let object = js_sys::Object::new();
    let role = match message.role {
        Role::User => "user",
        Role::Agent => "agent",
    };
    for (key, value) in [
        ("id", message.id.as_str()),
        ("role", role),
        ("text", &message.text),
    ] {
        let _ = js_sys::Reflect::set(&object, &JsValue::from_str(key), &JsValue::from_str(value));
    }
    object.into()
}

fn call(callback: &js_sys::Function, argument: &JsValue) {
    if let Err(error) = callback.call1(&JsValue::NULL, argument) {
        leptos::logging::warn!("ask-user embed: a callback threw: {error:?}");
    }
}

fn js_error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawOptions {
        RawOptions::default()
    }

    #[test]
    fn no_options_mean_this_origin_the_default_session_and_the_composer_with_styles() {
        let options = EmbedOptions::parse(raw()).unwrap();
        assert_eq!(
            options,
            EmbedOptions {
                base_url: String::new(),
                session: SessionId::default(),
                token: None,
                view: EmbedView::Composer,
                lang: None,
                styles: true,
            }
        );
    }

    #[test]
    fn given_options_are_kept_with_the_base_urls_trailing_slash_trimmed() {
        let options = EmbedOptions::parse(RawOptions {
            base_url: Some("http://127.0.0.1:7411/".to_owned()),
            session: Some("team-a_1".to_owned()),
            token: Some("s3cret".to_owned()),
            view: Some("conversation".to_owned()),
            lang: Some("zh-CN".to_owned()),
            styles: Some(false),
            ..raw()
        })
        .unwrap();
        assert_eq!(options.base_url, "http://127.0.0.1:7411");
        assert_eq!(options.session, "team-a_1");
        assert_eq!(options.token.as_deref(), Some("s3cret"));
        assert_eq!(options.view, EmbedView::Conversation);
        assert_eq!(options.lang, Some(Lang::Zh));
        assert!(!options.styles);
    }

    #[test]
    fn empty_session_and_token_fall_back_to_the_default_session_and_the_cookie() {
        let options = EmbedOptions::parse(RawOptions {
            session: Some(String::new()),
            token: Some(String::new()),
            ..raw()
        })
        .unwrap();
        assert_eq!(options.session, SessionId::default());
        assert_eq!(options.token, None);
    }

    #[test]
    fn a_session_the_host_would_refuse_is_an_error_naming_the_session_option() {
        for bad in ["my team", "a/b", "é", &"x".repeat(65)] {
            let err = EmbedOptions::parse(RawOptions {
                session: Some(bad.to_owned()),
                ..raw()
            })
            .unwrap_err();
            assert_eq!(
                err,
                format!(
                    "options.session: {bad:?} is not a session id; use 1 to 64 of A-Z a-z 0-9 _ -"
                ),
            );
        }
    }

    #[test]
    fn an_unknown_view_is_an_error_naming_the_view_option() {
        let err = EmbedOptions::parse(RawOptions {
            view: Some("sidebar".to_owned()),
            ..raw()
        })
        .unwrap_err();
        assert_eq!(
            err,
            "options.view: \"sidebar\" is not 'composer' or 'conversation'"
        );
    }

    #[test]
    fn a_base_url_that_is_neither_a_path_nor_http_is_an_error_naming_base_url() {
        for bad in ["127.0.0.1:7411", "ftp://h", "api"] {
            let err = EmbedOptions::parse(RawOptions {
                base_url: Some(bad.to_owned()),
                ..raw()
            })
            .unwrap_err();
            assert!(err.starts_with("options.baseUrl:"), "{bad}: {err}");
        }
        let path = EmbedOptions::parse(RawOptions {
            base_url: Some("/ask-user/".to_owned()),
            ..raw()
        })
        .unwrap();
        assert_eq!(path.base_url, "/ask-user");
    }
}
