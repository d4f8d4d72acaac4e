//! `--max-session-write-bytes`: how many bytes of questions and messages one
//! session may write per minute, as a token bucket per session. Each store
//! keeps one (on a shared store, per host: N hosts admit N times the rate).

use super::StoreError;
use std::collections::HashMap;
use std::time::Instant;

/// What a row costs in the store besides its text (keys, index entries).
pub(crate) const ROW_OVERHEAD: u64 = 256;

/// The most sessions whose write rate is tracked; past it the ones whose
/// allowance is whole again are forgotten (they are as if new).
const MAX_TRACKED_SESSIONS: usize = 4096;

/// A session's write allowance: refilled at the rate per minute up to that much.
#[derive(Debug)]
struct Allowance {
    bytes: u64,
    at: Instant,
}

/// The sessions' write allowances.
#[derive(Debug)]
pub(crate) struct SessionRates {
    per_minute: u64,
    allowances: HashMap<String, Allowance>,
}

impl SessionRates {
    pub(crate) fn new(per_minute: u64) -> Self {
        Self {
            per_minute: per_minute.max(1),
            allowances: HashMap::new(),
        }
    }

    /// Admits a new row of `bytes` for `session` at `now`, or refuses it when
    /// the session wrote its allowance this minute. A whole allowance admits
    /// any one write, so no valid request is refused forever.
    pub(crate) fn admit(&mut self, session: &str, bytes: u64, now: Instant) -> Option<StoreError> {
        let per_minute = self.per_minute;
        let refill = |allowance: &mut Allowance| {
            let ms = now.saturating_duration_since(allowance.at).as_millis();
            let earned = (ms.saturating_mul(u128::from(per_minute)) / 60_000) as u64;
            allowance.bytes = allowance.bytes.saturating_add(earned).min(per_minute);
            allowance.at = now;
        };
        if self.allowances.len() >= MAX_TRACKED_SESSIONS && !self.allowances.contains_key(session) {
            self.allowances.retain(|_, allowance| {
                refill(allowance);
                allowance.bytes < per_minute
            });
            if self.allowances.len() >= MAX_TRACKED_SESSIONS {
                // As many sessions writing at once: the byte bound still holds.
                self.allowances.clear();
            }
        }
        // Looked up before inserting: a known session's write copies no name.
        if !self.allowances.contains_key(session) {
            let whole = Allowance {
                bytes: per_minute,
                at: now,
            };
            self.allowances.insert(session.to_owned(), whole);
        }
        let allowance = self.allowances.get_mut(session).expect("inserted above");
        refill(allowance);
        if allowance.bytes < per_minute && allowance.bytes < bytes {
            return Some(StoreError::TooFast(format!(
                "session {session:?} wrote more than {per_minute} bytes of questions and \
                 messages in the last minute (--max-session-write-bytes)"
            )));
        }
        allowance.bytes = allowance.bytes.saturating_sub(bytes);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_session_past_its_bytes_this_minute_is_refused_until_its_allowance_refills() {
        let mut rates = SessionRates::new(1_000);
        let t0 = Instant::now();
        assert!(rates.admit("a", 600, t0).is_none());
        assert!(rates.admit("a", 300, t0).is_none());
        let refused = rates
            .admit("a", 200, t0)
            .expect("past 1,000 bytes this minute");
        assert!(matches!(refused, StoreError::TooFast(ref why) if why.contains("\"a\"")));
        assert!(rates.admit("b", 900, t0).is_none(), "each session its own");
        // 12 s earn 200 bytes.
        assert!(
            rates
                .admit("a", 200, t0 + Duration::from_secs(12))
                .is_none()
        );
        // A whole allowance admits even one write larger than it.
        assert!(rates.admit("c", 5_000, t0).is_none());
    }
}
