//! How small a Leptos page can be (docs/performance.md, "What weighs in the
//! page"): without features, one paragraph; with `--features features`, the conversation
//! page's kinds of features at their smallest: a keyed list fed by an
//! EventSource (JSON through the browser's parser), a text box with keyboard
//! handling, a reactive attribute and a POST.
//!
//! Not a workspace member, so nothing builds it by default. To measure it the
//! way the page is measured, add `"examples/leptos-floor"` to `members` in the
//! root Cargo.toml (its dependencies are the page's, so cargo reuses the page's
//! compiled crates with the same features), then:
//!
//! ```sh
//! cargo build --release --target wasm32-unknown-unknown -p leptos-floor [--features features]
//! wasm-bindgen --target web --out-dir /tmp/floor target/wasm32-unknown-unknown/release/leptos-floor.wasm
//! wasm-opt -Oz -o /tmp/floor/opt.wasm /tmp/floor/leptos-floor_bg.wasm
//! brotli -q 11 -w 22 -c /tmp/floor/opt.wasm | wc -c
//! ```
use leptos::prelude::*;
use serde::Deserialize;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

#[derive(Clone, Deserialize)]
struct Message {
    id: String,
    text: String,
}

#[cfg(not(feature = "features"))]
fn main() {
    mount_to_body(|| view! { <p>"hello"</p> });
}

#[cfg(feature = "features")]
fn main() {
    mount_to_body(|| {
        let (messages, set_messages) = signal(Vec::<Message>::new());
        let (text, set_text) = signal(String::new());
        let source = web_sys::EventSource::new("/api/sessions/default/events").unwrap();
        let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(data) = e.data().as_string() {
                if let Ok(value) = js_sys::JSON::parse(&data) {
                    if let Ok(message) = serde_wasm_bindgen::from_value::<Message>(value) {
                        set_messages.update(|list| list.push(message));
                    }
                }
            }
        });
        let _ = source.add_event_listener_with_callback("message/created", on_message.as_ref().unchecked_ref());
        on_message.forget();
        let send = move || {
            let body = text.get_untracked();
            set_text.set(String::new());
            leptos::task::spawn_local(async move {
                let _ = gloo_net::http::Request::post("/api/sessions/default/messages")
                    .header("Content-Type", "application/json")
                    .body(body)
                    .unwrap()
                    .send()
                    .await;
            });
        };
        view! {
            <main class="page">
                <ol>
                    <For each=move || messages.get() key=|m| m.id.clone() let(m)>
                        <li data-id=m.id.clone()>{m.text.clone()}</li>
                    </For>
                </ol>
                <textarea
                    prop:value=move || text.get()
                    on:input=move |ev| set_text.set(event_target_value(&ev))
                    on:keydown=move |ev: web_sys::KeyboardEvent| if ev.key() == "Enter" { ev.prevent_default(); send() }
                ></textarea>
                <button disabled=move || text.with(String::is_empty) on:click=move |_| send()>"Send"</button>
            </main>
        }
    });
}
