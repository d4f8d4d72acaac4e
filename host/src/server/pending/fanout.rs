//! A session's event broadcast, bounded per subscriber in events *and bytes*.
//!
//! Each subscriber has its own queue of shared events. A subscriber that does
//! not keep up (a stalled event stream) is not allowed to pin more than the
//! budget: once its queue would hold more than `capacity` events or more than
//! `budget` bytes, the queue is emptied and the subscriber is told it lagged,
//! so it re-syncs from the table (the event stream already does). A single
//! event larger than the budget still reaches a subscriber whose queue is
//! empty. The sender is the pending table, under its lock; a receiver only
//! ever takes its own queue's lock, so the two never wait on each other long.

use super::SharedEvent;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;

/// Why [`EventReceiver::recv`] returned no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// The subscriber fell behind: this many events were dropped for it.
    Lagged(u64),
    /// The broadcast is gone (its session was forgotten).
    Closed,
}

/// Why [`EventReceiver::try_recv`] returned no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing queued now.
    Empty,
    /// The subscriber fell behind: this many events were dropped for it.
    Lagged(u64),
    /// The broadcast is gone.
    Closed,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<(SharedEvent, usize)>,
    bytes: usize,
    /// Events dropped since the receiver last heard of it.
    missed: u64,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side: one per session.
pub struct Fanout {
    subscribers: Vec<Weak<Shared>>,
    capacity: usize,
    budget: usize,
}

impl Fanout {
    /// A broadcast whose subscribers each queue at most `capacity` events and
    /// `budget` bytes.
    pub fn new(capacity: usize, budget: usize) -> Self {
        Self {
            subscribers: Vec::new(),
            capacity: capacity.max(1),
            budget,
        }
    }

    /// A new subscriber that receives every event sent from now on.
    pub fn subscribe(&mut self) -> EventReceiver {
        let shared = Arc::new(Shared::default());
        self.subscribers.retain(|s| s.strong_count() > 0);
        self.subscribers.push(Arc::downgrade(&shared));
        EventReceiver { shared }
    }

    /// Queues `event` (weighing `bytes`) for every live subscriber; one that
    /// would go over its budget is emptied and marked lagging instead.
    pub fn send(&mut self, event: &SharedEvent, bytes: usize) {
        let (capacity, budget) = (self.capacity, self.budget);
        self.subscribers.retain(|subscriber| {
            let Some(shared) = subscriber.upgrade() else {
                return false;
            };
            let mut queue = shared.lock();
            if queue.missed > 0 {
                // Lagging already: the re-sync covers this event too.
                queue.missed += 1;
            } else if !queue.events.is_empty()
                && (queue.events.len() >= capacity || queue.bytes + bytes > budget)
            {
                queue.missed = queue.events.len() as u64 + 1;
                queue.events = VecDeque::new();
                queue.bytes = 0;
            } else {
                queue.events.push_back((event.clone(), bytes));
                queue.bytes += bytes;
            }
            drop(queue);
            shared.ready.notify_one();
            true
        });
    }

    /// How many subscribers are still listening.
    pub fn receiver_count(&self) -> usize {
        self.subscribers
            .iter()
            .filter(|s| s.strong_count() > 0)
            .count()
    }
}

impl Drop for Fanout {
    fn drop(&mut self) {
        for shared in self.subscribers.iter().filter_map(Weak::upgrade) {
            shared.lock().closed = true;
            shared.ready.notify_one();
        }
    }
}

/// The receiving side: one per subscriber.
pub struct EventReceiver {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EventReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.shared.lock();
        f.debug_struct("EventReceiver")
            .field("queued", &queue.events.len())
            .field("bytes", &queue.bytes)
            .field("missed", &queue.missed)
            .finish()
    }
}

impl EventReceiver {
    /// The next event, `Lagged` once after events were dropped for this
    /// subscriber, or `Empty`/`Closed`.
    pub fn try_recv(&mut self) -> Result<SharedEvent, TryRecvError> {
        let mut queue = self.shared.lock();
        if queue.missed > 0 {
            return Err(TryRecvError::Lagged(std::mem::take(&mut queue.missed)));
        }
        match queue.events.pop_front() {
            Some((event, bytes)) => {
                queue.bytes -= bytes;
                Ok(event)
            }
            None if queue.closed => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Waits for the next event (cancel-safe: dropping the future loses nothing).
    pub async fn recv(&mut self) -> Result<SharedEvent, RecvError> {
        loop {
            match self.try_recv() {
                Ok(event) => return Ok(event),
                Err(TryRecvError::Lagged(missed)) => return Err(RecvError::Lagged(missed)),
                Err(TryRecvError::Closed) => return Err(RecvError::Closed),
                // A send between the check and the wait leaves a permit.
                Err(TryRecvError::Empty) => self.shared.ready.notified().await,
            }
        }
    }

    /// How many bytes this subscriber has queued (for tests and logs).
    pub fn queued_bytes(&self) -> usize {
        self.shared.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::wire::{QuestionRef, SessionEvent};

    fn event(n: usize) -> SharedEvent {
        SharedEvent::from(SessionEvent::QuestionAttached(QuestionRef {
            id: format!("q{n}"),
        }))
    }

    fn id(event: &SharedEvent) -> String {
        match &**event {
            SessionEvent::QuestionAttached(r) => r.id.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_subscriber_over_its_byte_budget_is_emptied_and_told_it_lagged_once() {
        let mut fanout = Fanout::new(100, 1000);
        let mut slow = fanout.subscribe();
        let mut quick = fanout.subscribe();
        for n in 0..3 {
            fanout.send(&event(n), 400);
            assert_eq!(id(&quick.try_recv().unwrap()), format!("q{n}"));
        }
        // 400 + 400 fit, the third would make 1200 > 1000.
        assert_eq!(slow.queued_bytes(), 0, "emptied, nothing pinned");
        fanout.send(&event(3), 400);
        assert_eq!(slow.try_recv(), Err(TryRecvError::Lagged(4)));
        assert_eq!(slow.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(id(&quick.try_recv().unwrap()), "q3");
    }

    #[test]
    fn a_subscriber_over_its_event_count_lags_and_one_large_event_still_gets_through() {
        let mut fanout = Fanout::new(2, 1000);
        let mut slow = fanout.subscribe();
        fanout.send(&event(0), 5000);
        assert_eq!(slow.queued_bytes(), 5000, "alone in the queue, it is kept");
        assert_eq!(id(&slow.try_recv().unwrap()), "q0");
        for n in 1..4 {
            fanout.send(&event(n), 1);
        }
        assert_eq!(slow.try_recv(), Err(TryRecvError::Lagged(3)));
    }

    #[tokio::test]
    async fn recv_wakes_on_a_send_and_ends_when_the_broadcast_is_dropped() {
        let mut fanout = Fanout::new(4, 1000);
        let mut receiver = fanout.subscribe();
        let waiting = tokio::spawn(async move {
            let first = receiver.recv().await;
            (first, receiver.recv().await)
        });
        tokio::task::yield_now().await;
        fanout.send(&event(7), 1);
        assert_eq!(fanout.receiver_count(), 1);
        drop(fanout);
        let (first, second) = waiting.await.unwrap();
        assert_eq!(id(&first.unwrap()), "q7");
        assert_eq!(second, Err(RecvError::Closed));
    }

    #[test]
    fn a_dropped_receiver_is_no_longer_counted() {
        let mut fanout = Fanout::new(4, 1000);
        let receiver = fanout.subscribe();
        assert_eq!(fanout.receiver_count(), 1);
        drop(receiver);
        assert_eq!(fanout.receiver_count(), 0);
        fanout.send(&event(0), 1);
    }
}
