//! The page tells the host whether the person is looking (issue 22), so the
//! host pushes to paired devices only when nobody is: `POST /api/presence`
//! with this tab's random id, whether it is visible, and how long ago the
//! person last typed, clicked, touched or scrolled in it. Sent when the
//! visibility changes, at the first input after a quiet spell, and every
//! [`REFRESH_MS`] while present (the host forgets a page 60 s after its last
//! input, so a tab that closes silently stops counting by itself).

use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// How often a present page says so again.
pub const REFRESH_MS: f64 = 20_000.0;

/// How long after the last input the page still counts as present (the host's rule).
pub const IDLE_AFTER_MS: f64 = 60_000.0;

/// What to send, if anything, given the page's state (pure, for tests).
/// `last` is the last report: (present, when).
pub fn due(visible: bool, idle_ms: f64, now: f64, last: Option<(bool, f64)>) -> bool {
    let present = visible && idle_ms < IDLE_AFTER_MS;
    match last {
        None => true,
        Some((was_present, at)) => was_present != present || (present && now - at >= REFRESH_MS),
    }
}

struct State {
    page: String,
    last_input: Cell<f64>,
    last_report: Cell<Option<(bool, f64)>>,
}

fn now() -> f64 {
    js_sys::Date::now()
}

fn visible() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .is_some_and(|d| d.visibility_state() == web_sys::VisibilityState::Visible)
}

/// Starts reporting for this tab (the page's lifetime).
pub fn report_presence() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let page = format!(
        "p{:08x}{:08x}",
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32,
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32
    );
    // Opening the page is the person's doing: it counts as input.
    let state = Rc::new(State {
        page,
        last_input: Cell::new(now()),
        last_report: Cell::new(None),
    });
    let check = {
        let state = state.clone();
        move |force: bool| {
            let (visible, at) = (visible(), now());
            let idle = (at - state.last_input.get()).max(0.0);
            if force || due(visible, idle, at, state.last_report.get()) {
                state
                    .last_report
                    .set(Some((visible && idle < IDLE_AFTER_MS, at)));
                send(&state.page, visible, idle);
            }
        }
    };
    let on_input = {
        let (state, check) = (state.clone(), check.clone());
        Closure::<dyn Fn()>::new(move || {
            state.last_input.set(now());
            check(false);
        })
    };
    for event in ["keydown", "pointerdown", "touchstart", "wheel", "scroll"] {
        let _ = window.add_event_listener_with_callback(event, on_input.as_ref().unchecked_ref());
    }
    on_input.forget();
    let on_visibility = {
        let check = check.clone();
        Closure::<dyn Fn()>::new(move || check(true))
    };
    if let Some(document) = window.document() {
        let _ = document.add_event_listener_with_callback(
            "visibilitychange",
            on_visibility.as_ref().unchecked_ref(),
        );
    }
    on_visibility.forget();
    let tick = {
        let check = check.clone();
        Closure::<dyn Fn()>::new(move || check(false))
    };
    let _ = window.set_interval_with_callback_and_timeout_and_arguments_0(
        tick.as_ref().unchecked_ref(),
        5_000,
    );
    tick.forget();
    check(true);
}

fn send(page: &str, visible: bool, idle_ms: f64) {
    let body = format!(
        r#"{{"page":"{page}","visible":{visible},"idle_ms":{}}}"#,
        idle_ms as u64
    );
    leptos::task::spawn_local(async move {
        let request = gloo_net::http::Request::post("/api/presence")
            .header("content-type", "application/json")
            .body(body);
        if let Ok(request) = request {
            // A host that cannot be reached learns nothing; the next report retries.
            let _ = request.send().await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reports_at_first_on_each_change_and_every_twenty_seconds_while_present() {
        assert!(due(true, 0.0, 0.0, None));
        assert!(!due(true, 1_000.0, 5_000.0, Some((true, 0.0))));
        assert!(due(true, 1_000.0, 20_000.0, Some((true, 0.0))));
        assert!(due(false, 0.0, 1.0, Some((true, 0.0))), "hidden");
        assert!(due(true, 60_000.0, 1.0, Some((true, 0.0))), "idle");
        assert!(
            !due(false, 0.0, 90_000.0, Some((false, 0.0))),
            "nothing new while away"
        );
    }
}
