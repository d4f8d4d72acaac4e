//! Who a request presents itself as: the master token, a paired device, a
//! person or an agent token, and the live records behind each. The devices,
//! the people, the push room and the middleware all name these; they sit
//! here, below all of them, so the devices and the people need not import
//! each other.

use crate::server::store::{AgentRecord, DeviceRecord, PersonRecord};
use ask_user_core::Member;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a device's last-seen time is written to the store: at most
/// once this long per device (its requests are many; the list shows minutes).
pub const SEEN_WRITE_EVERY: Duration = Duration::from_secs(60);

/// Who a request authenticated as (in the request's extensions once
/// [`crate::server::security::require_token`] let it through).
#[derive(Debug, Clone)]
pub enum Credential {
    /// The master token or the page's cookie (loopback).
    Master,
    /// A paired device's credential (the `--remote` origin).
    Device(Arc<Device>),
    /// A person's own credential (issue 24: `Authorization: Bearer aup_…`).
    Person(Arc<Person>),
    /// An agent token (issue 24): asks only.
    Agent(Arc<Agent>),
}

/// A paired device, live.
#[derive(Debug)]
pub struct Device {
    /// What is kept of it.
    pub record: DeviceRecord,
    /// Fires when it is revoked: its responses (streams) end.
    pub revoked: CancellationToken,
    pub(crate) last_seen_ms: AtomicU64,
    /// The last-seen time last written to the store.
    seen_written_ms: AtomicU64,
    /// 0 until it answers.
    pub(crate) last_answer_ms: AtomicU64,
    /// Whether the record has it: false for a pairing whose write is still
    /// on its way, which a re-read of a shared record must not take for a
    /// revocation.
    pub(crate) kept: AtomicBool,
}

impl Device {
    pub(crate) fn new(record: DeviceRecord) -> Self {
        Self {
            revoked: CancellationToken::new(),
            last_seen_ms: AtomicU64::new(record.last_seen_ms),
            seen_written_ms: AtomicU64::new(record.last_seen_ms),
            last_answer_ms: AtomicU64::new(record.last_answer_ms.unwrap_or(0)),
            kept: AtomicBool::new(true),
            record,
        }
    }

    /// A device just paired here: not in the record until [`Device::mark_kept`].
    pub(crate) fn paired(record: DeviceRecord) -> Self {
        let device = Self::new(record);
        device.kept.store(false, Ordering::Release);
        device
    }

    /// The record has it now (its pairing's write was kept).
    pub(crate) fn mark_kept(&self) {
        self.kept.store(true, Ordering::Release);
    }

    /// When it last made a request (Unix ms; its pairing time until then).
    pub fn last_seen_ms(&self) -> u64 {
        self.last_seen_ms.load(Ordering::Relaxed)
    }

    /// When it last answered, cancelled or wrote a message (Unix ms).
    pub fn last_answer_ms(&self) -> Option<u64> {
        Some(self.last_answer_ms.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
    }

    /// Notes a request at `at_ms`; `true` when the store should be told (the
    /// time written last is [`SEEN_WRITE_EVERY`] old).
    pub fn seen(&self, at_ms: u64) -> bool {
        self.last_seen_ms.fetch_max(at_ms, Ordering::Relaxed);
        let written = self.seen_written_ms.load(Ordering::Relaxed);
        at_ms.saturating_sub(written) >= SEEN_WRITE_EVERY.as_millis() as u64
            && self
                .seen_written_ms
                .compare_exchange(written, at_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// A person, live.
#[derive(Debug)]
pub struct Person {
    /// What is kept of them.
    pub record: PersonRecord,
    /// Fires when they are removed: their responses (streams) end.
    pub removed: CancellationToken,
}

impl Member for Person {
    fn name(&self) -> &str {
        &self.record.name
    }

    fn has_role(&self, role: &str) -> bool {
        self.record.roles.iter().any(|r| r == role)
    }
}

/// An agent token, live.
#[derive(Debug)]
pub struct Agent {
    /// What is kept of it.
    pub record: AgentRecord,
    /// Fires when it is removed.
    pub removed: CancellationToken,
}

/// `BYTES` random bytes in hex.
pub(crate) fn random_hex<const BYTES: usize>() -> String {
    let bytes: [u8; BYTES] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `text` in hex: how credentials are kept.
pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the devices and the people rooms ask of push when a device goes
/// (revoked, or its person removed): forget its subscription. Push
/// implements it; the rooms name only this, not push.
pub trait ForgetsDevices: Send + Sync {
    /// Drops `device`'s push subscription, if any.
    fn forget(&self, device: &str);
}
