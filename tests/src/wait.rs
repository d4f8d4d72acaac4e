//! Waiting in tests: one hang guard for everything ([`PATIENCE`]), one way to
//! await a future under it ([`within`]) and one way to wait for a condition
//! ([`until`], [`until_blocking`]). They are never timing assertions: each
//! gives up with a panic naming what it waited for.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen before it gives up
/// with a clear panic (a hang guard, not a timing assertion; generous for a
/// loaded machine and a cold browser).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How often [`until`] and [`until_blocking`] look again.
const POLL: Duration = Duration::from_millis(20);

/// Awaits `future`, panicking with `what` if it hangs past [`PATIENCE`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("gave up waiting for {what} after {PATIENCE:?}"))
}

/// Waits until `condition` holds, looking every 20 ms, panicking with `what`
/// after [`PATIENCE`].
pub async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    within(what, async {
        while !condition().await {
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
}

/// [`until`] for code that blocks its thread (a browser driver, a child's
/// output read by another thread).
pub fn until_blocking(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what} after {PATIENCE:?}"
        );
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn until_returns_once_the_condition_holds() {
        let mut looks = 0;
        until("the third look", async || {
            looks += 1;
            looks == 3
        })
        .await;
        assert_eq!(looks, 3);
    }

    #[test]
    fn until_blocking_returns_once_the_condition_holds() {
        let mut looks = 0;
        until_blocking("the second look", || {
            looks += 1;
            looks == 2
        });
        assert_eq!(looks, 2);
    }
}
