//! Whether the person is looking (issue 22): no push while any page on any
//! device is present. A page reports itself (`POST /api/presence`) with
//! whether it is visible and how long ago the person last typed, clicked,
//! touched or scrolled in it; it is present while it is visible and that was
//! less than [`IDLE_AFTER`] ago. The host counts a page present until its
//! last report says otherwise or the idle time runs out, so a page that
//! closes without a word stops counting within [`IDLE_AFTER`].

use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after the last input a visible page still counts as present.
pub const IDLE_AFTER: Duration = Duration::from_secs(60);

/// The most pages tracked at once (past it the one present the shortest is
/// forgotten).
pub const MAX_PAGES: usize = 256;

/// The longest page id taken.
pub const MAX_PAGE_ID: usize = 64;

/// What a page reports.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PresenceReport {
    /// The page's own random id (one per tab, not a secret).
    pub page: String,
    /// `document.visibilityState == "visible"` (and the window focused).
    pub visible: bool,
    /// Milliseconds since the person's last input in the page.
    pub idle_ms: u64,
}

/// The pages present now.
#[derive(Debug, Default)]
pub struct Presence {
    /// Page id → until when it counts as present.
    pages: Mutex<HashMap<String, Instant>>,
}

impl Presence {
    /// Takes `report`, received at `now`.
    pub fn report(&self, report: &PresenceReport, now: Instant) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages.retain(|_, until| *until > now);
        let idle = Duration::from_millis(report.idle_ms);
        if !report.visible || idle >= IDLE_AFTER {
            pages.remove(&report.page);
            return;
        }
        if pages.len() >= MAX_PAGES
            && !pages.contains_key(&report.page)
            && let Some(shortest) = pages
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(page, _)| page.clone())
        {
            pages.remove(&shortest);
        }
        pages.insert(report.page.clone(), now + (IDLE_AFTER - idle));
    }

    /// Whether any page is present at `now`.
    pub fn present(&self, now: Instant) -> bool {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages.values().any(|until| *until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(page: &str, visible: bool, idle_ms: u64) -> PresenceReport {
        PresenceReport {
            page: page.to_owned(),
            visible,
            idle_ms,
        }
    }

    #[test]
    fn a_visible_page_with_recent_input_is_present_until_sixty_seconds_after_that_input() {
        let presence = Presence::default();
        let t0 = Instant::now();
        assert!(!presence.present(t0));
        presence.report(&report("a", true, 10_000), t0);
        assert!(presence.present(t0));
        assert!(presence.present(t0 + Duration::from_secs(49)));
        assert!(!presence.present(t0 + Duration::from_secs(50)));
    }

    #[test]
    fn a_hidden_or_idle_page_is_not_present_and_ends_its_earlier_report() {
        let presence = Presence::default();
        let t0 = Instant::now();
        presence.report(&report("a", true, 0), t0);
        presence.report(&report("a", false, 0), t0);
        assert!(!presence.present(t0));
        presence.report(&report("b", true, 0), t0);
        presence.report(&report("b", true, 60_000), t0);
        assert!(!presence.present(t0));
        presence.report(&report("c", true, 0), t0);
        presence.report(&report("d", false, 0), t0);
        assert!(presence.present(t0), "one present page is enough");
    }

    #[test]
    fn at_most_max_pages_are_tracked() {
        let presence = Presence::default();
        let t0 = Instant::now();
        for i in 0..MAX_PAGES + 10 {
            presence.report(&report(&format!("p{i}"), true, 0), t0);
        }
        assert_eq!(presence.pages.lock().unwrap().len(), MAX_PAGES);
    }
}
