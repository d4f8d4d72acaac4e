//! "Pair a device" in the page's header: a link to the host's `/devices`
//! page (issue 21), which opens its pairing dialog at once (`#pair`), shown only on the host's own machine (a loopback
//! address), where the page holds the token's cookie; a paired device's page
//! (the `--remote` origin) may not pair another.

use crate::i18n::Texts;
use leptos::prelude::*;

/// Whether `hostname` (as `location.hostname` gives it) is this machine.
pub fn is_loopback_host(hostname: &str) -> bool {
    let name = hostname.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || name == "::1"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The link, or nothing off loopback.
#[component]
pub(crate) fn PairLink(texts: &'static Texts) -> impl IntoView {
    let on_loopback = web_sys::window()
        .and_then(|w| w.location().hostname().ok())
        .is_some_and(|host| is_loopback_host(&host));
    on_loopback.then(|| {
        view! {
            <a class="auq-btn auq-btn--quiet" href="/devices#pair" data-auq="pair-device">
                {texts.pair_device}
            </a>
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machines_names_count_as_loopback() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "[::1]", "::1"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["phone.test", "box.tailnet.ts.net", "10.0.0.2", "[::2]"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
