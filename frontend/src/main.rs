//! ask-user-web: the conversation page. It shows session `default` (or the one
//! named by `?session=NAME`, checked with core's [`SessionId::parse`]; a name
//! that is not a session id shows why instead of a page that never connects):
//! the transcript, and the composer slot that the question composer takes over
//! while questions are pending.
//!
//! An app crate: it turns on Leptos's `csr` feature (as the embed does for its
//! own bundle; the composer library never does), holds no logic of its own and
//! must never depend on the host (`tests/tests/tidy.rs` checks it).
//!
//! Built with the `fixture` feature (`trunk build --features fixture`),
//! `?fixture=1` (or `?fixture=plan`) renders a built-in request without a host,
//! for screenshots and CSS work (`&item=2` opens the batch on its second item);
//! see docs/development.md ("Composer screenshots without a host"). The
//! release page leaves it out (with core's insertion sort, 6.7 KB brotli less;
//! docs/performance.md, "Issue 25's cuts").

#[cfg(feature = "fixture")]
mod fixture;

use ask_user_composer::{Lang, MountOptions, page_view};
use ask_user_core::SessionId;
use leptos::either::Either;
use leptos::prelude::*;

fn main() {
    // Debug builds only: the hook's formatting costs the release page 0.8 KB.
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    let params = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|search| web_sys::UrlSearchParams::new_with_str(&search).ok());
    let param = |name: &str| {
        params
            .as_ref()
            .and_then(|p| p.get(name))
            .filter(|v| !v.is_empty())
    };
    let session =
        param("session").map_or_else(|| Ok(SessionId::default()), |s| SessionId::parse(&s));
    #[cfg(feature = "fixture")]
    if let Some(kind) = param("fixture") {
        let item = param("item").and_then(|i| i.parse().ok());
        let transport =
            ask_user_composer::Transport::new(fixture::FixtureTransport::new(&kind, item));
        mount_to_body(move || {
            view! { <main class="auq-page">{ask_user_composer::page_view_with(transport)}</main> }
        });
        return;
    }
    mount_to_body(move || {
        // `Either`, not erased views: each `into_any()` costs code.
        let conversation = match session {
            Ok(session) => Either::Left(page_view(MountOptions {
                base_url: String::new(),
                session,
                token: None,
            })),
            Err(error) => {
                let texts = Lang::from_browser().texts();
                Either::Right(view! {
                    <header class="auq-page__header">
                        <h1 class="auq-page__title">"ask-user"</h1>
                    </header>
                    <p class="auq-error" role="alert" data-auq="bad-session">
                        {texts.bad_session} " " {error.message}
                    </p>
                })
            }
        };
        view! { <main class="auq-page">{conversation}</main> }
    });
}
