//! Paired devices and pairing codes (issue 21).
//!
//! A token holder (loopback) opens a pairing: a 128-bit code, single-use,
//! valid [`PAIRING_LIFE`], kept in memory only, and handed to the device in
//! the fragment of `https://NAME/pair#CODE` (so it reaches no log and no
//! Referer). The device claims it with a name (`POST /api/pair/claim`), the
//! token holder approves or denies, and only after approval does the device
//! collect its credential (`POST /api/pair/collect`): 256 random bits, sent
//! as the `__Host-` cookie [`DEVICE_COOKIE`] and kept only as its SHA-256 in
//! the store. A device answers on the `--remote` origin with that cookie;
//! revoking it ends its streams at once and refuses its next request (401).

use crate::server::credential::ForgetsDevices;
pub use crate::server::credential::{Credential, Device, SEEN_WRITE_EVERY};
use crate::server::credential::{random_hex, sha256_hex};
use crate::server::error::ApiError;
use crate::server::extract::BodyText;
use crate::server::guard::{Guard, RemoteOrigin};
use crate::server::store::{DeviceRecord, FollowingDevices, Store, Write, now_ms};
use axum::extract::{FromRef, Path, Request, State};
use axum::http::header::{SET_COOKIE, USER_AGENT};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a pairing code may be used.
pub const PAIRING_LIFE: Duration = Duration::from_secs(5 * 60);

/// The most pairings open at once (a new one past it closes the oldest).
pub const MAX_OPEN_PAIRINGS: usize = 16;

/// The most devices paired at once.
pub const MAX_DEVICES: usize = 64;

/// The device's cookie: `__Host-` so it is Secure, set by this origin only,
/// for every path.
pub const DEVICE_COOKIE: &str = "__Host-ask_user_device";

/// The longest device name kept (longer ones are cut).
pub const MAX_DEVICE_NAME_CHARS: usize = 64;

/// The devices room's sub-state: what its handlers use, handed to them
/// through axum's `FromRef` (`AppState` builds it), so this room imports
/// nothing of the state that owns it.
#[derive(Clone)]
pub struct DevicesRoom {
    /// Paired devices and open pairings.
    pub devices: Arc<Devices>,
    /// The durable record.
    pub record: Arc<dyn Store>,
    /// The throttle of wrong codes.
    pub guard: Arc<Guard>,
    /// The `--remote` origin pairing links point to.
    pub remote: Option<Arc<RemoteOrigin>>,
    /// Push, to forget a revoked device's subscription.
    pub push: Option<Arc<dyn ForgetsDevices>>,
}

impl DevicesRoom {
    /// Paired devices and open pairings.
    pub fn devices(&self) -> &Devices {
        &self.devices
    }

    /// The durable record.
    pub fn record(&self) -> &Arc<dyn Store> {
        &self.record
    }

    /// The throttle of wrong codes.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Push, when on.
    pub fn push(&self) -> Option<&Arc<dyn ForgetsDevices>> {
        self.push.as_ref()
    }
}

/// Writes that `device` was seen now, when it is time to
/// ([`SEEN_WRITE_EVERY`]); not awaited: a lost write only makes the list's
/// last-seen time older.
pub fn note_seen(record: &Arc<dyn Store>, device: &Device) {
    let at_ms = now_ms();
    if device.seen(at_ms) {
        drop(record.submit(Write::DeviceSeen {
            id: device.record.id.clone(),
            at_ms,
        }));
    }
}

/// Writes that `device` (if any) answered now (an answer, a cancel or a
/// message that was kept); not awaited, as [`note_seen`].
pub fn note_answered(record: &Arc<dyn Store>, device: Option<Arc<Device>>) {
    let Some(device) = device else { return };
    let at_ms = now_ms();
    device.last_answer_ms.fetch_max(at_ms, Ordering::Relaxed);
    device.last_seen_ms.fetch_max(at_ms, Ordering::Relaxed);
    drop(record.submit(Write::DeviceAnswered {
        id: device.record.id.clone(),
        at_ms,
    }));
}

/// How a pairing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingStatus {
    /// Waiting for a device to open the link.
    Open,
    /// A device named itself and waits for approval.
    Claimed,
    /// Approved: the device may collect its credential.
    Approved,
    /// Denied.
    Denied,
}

struct Pairing {
    id: String,
    code: String,
    opened: Instant,
    status: PairingStatus,
    name: Option<String>,
    agent: Option<String>,
    /// The person who opened it (their id): the device will be theirs.
    person: Option<String>,
}

/// The paired devices and the open pairings.
pub struct Devices {
    inner: Mutex<Inner>,
    /// How long a code may be used ([`PAIRING_LIFE`] but in tests).
    life: Duration,
}

impl Default for Devices {
    fn default() -> Self {
        Self::new(Vec::new(), PAIRING_LIFE)
    }
}

impl std::fmt::Debug for Devices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Devices").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    /// By the SHA-256 of their credential, hex.
    by_credential: HashMap<String, Arc<Device>>,
    pairings: Vec<Pairing>,
}

/// Why a pairing step was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingError {
    /// No open pairing has this code: never issued, used, or expired.
    Gone,
    /// The token holder denied it.
    Denied,
    /// Claimed already (by this device or another).
    Claimed,
    /// Not claimed yet, so there is nothing to approve.
    NotClaimed,
}

impl From<PairingError> for ApiError {
    fn from(error: PairingError) -> Self {
        match error {
            PairingError::Gone => ApiError::Gone(
                "this pairing code is not valid: it was used, it expired (codes last 5 minutes), \
                 or it never existed; ask for a new one (`ask-user pair` or \"Pair a device\")"
                    .to_owned(),
            ),
            PairingError::Denied => {
                ApiError::Forbidden("the pairing was refused on the host's page".to_owned())
            }
            PairingError::Claimed => ApiError::Gone(
                "this pairing code was already used by a device; ask for a new one".to_owned(),
            ),
            PairingError::NotClaimed => {
                ApiError::Interaction(ask_user_core::UserInteractionError::not_pending(
                    "no device has opened this pairing's link yet".to_owned(),
                ))
            }
        }
    }
}

impl Devices {
    /// The registry with the devices `kept` by the store; codes last `life`.
    pub fn new(kept: Vec<DeviceRecord>, life: Duration) -> Self {
        let by_credential = kept
            .into_iter()
            .map(|record| {
                (
                    record.credential_sha256.clone(),
                    Arc::new(Device::new(record)),
                )
            })
            .collect();
        Self {
            inner: Mutex::new(Inner {
                by_credential,
                pairings: Vec::new(),
            }),
            life,
        }
    }

    /// How long a code may be used.
    pub fn pairing_life(&self) -> Duration {
        self.life
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The device whose credential this is.
    pub fn authenticate(&self, credential: &str) -> Option<Arc<Device>> {
        self.lock()
            .by_credential
            .get(&sha256_hex(credential))
            .cloned()
    }

    /// The paired devices, oldest first.
    pub fn list(&self) -> Vec<Arc<Device>> {
        let mut devices: Vec<_> = self.lock().by_credential.values().cloned().collect();
        devices.sort_by_key(|d| (d.record.paired_at_ms, d.record.id.clone()));
        devices
    }

    /// Opens a pairing: `(id, code)`; the device will be `person`'s (their
    /// id), or the machine owner's. Past [`MAX_OPEN_PAIRINGS`] the oldest closes.
    pub fn open_pairing(&self, now: Instant, person: Option<String>) -> (String, String) {
        let mut inner = self.lock();
        inner.expire(now, self.life);
        if inner.pairings.len() >= MAX_OPEN_PAIRINGS {
            inner.pairings.remove(0);
        }
        let (id, code) = (format!("p_{}", random_hex::<8>()), random_hex::<16>());
        inner.pairings.push(Pairing {
            id: id.clone(),
            code: code.clone(),
            opened: now,
            status: PairingStatus::Open,
            name: None,
            agent: None,
            person,
        });
        (id, code)
    }

    /// The device named itself: the pairing waits for approval.
    pub fn claim(
        &self,
        code: &str,
        name: String,
        agent: String,
        now: Instant,
    ) -> Result<(), PairingError> {
        let mut inner = self.lock();
        inner.expire(now, self.life);
        let pairing = inner.by_code(code).ok_or(PairingError::Gone)?;
        if pairing.status != PairingStatus::Open {
            return Err(PairingError::Claimed);
        }
        pairing.status = PairingStatus::Claimed;
        pairing.name = Some(name);
        pairing.agent = Some(agent);
        Ok(())
    }

    /// How pairing `id` stands, with the claiming device's name and agent.
    pub fn status(
        &self,
        id: &str,
        now: Instant,
    ) -> Option<(PairingStatus, Option<String>, Option<String>)> {
        let mut inner = self.lock();
        inner.expire(now, self.life);
        let pairing = inner.pairings.iter().find(|p| p.id == id)?;
        Some((pairing.status, pairing.name.clone(), pairing.agent.clone()))
    }

    /// The token holder's decision on a claimed pairing.
    pub fn decide(&self, id: &str, approve: bool, now: Instant) -> Result<(), PairingError> {
        let mut inner = self.lock();
        inner.expire(now, self.life);
        let pairing = inner
            .pairings
            .iter_mut()
            .find(|p| p.id == id)
            .ok_or(PairingError::Gone)?;
        if pairing.status != PairingStatus::Claimed {
            return Err(PairingError::NotClaimed);
        }
        pairing.status = if approve {
            PairingStatus::Approved
        } else {
            PairingStatus::Denied
        };
        Ok(())
    }

    /// The device collects: `Ok(None)` while it waits; on approval the new
    /// device and its credential (the pairing is used up); a denial is
    /// used up too.
    pub fn collect(
        &self,
        code: &str,
        now: Instant,
    ) -> Result<Option<(Arc<Device>, String)>, PairingError> {
        let mut inner = self.lock();
        inner.expire(now, self.life);
        let index = inner
            .pairings
            .iter()
            .position(|p| code_matches(&p.code, code))
            .ok_or(PairingError::Gone)?;
        match inner.pairings[index].status {
            PairingStatus::Open => Err(PairingError::NotClaimed),
            PairingStatus::Claimed => Ok(None),
            PairingStatus::Denied => {
                inner.pairings.remove(index);
                Err(PairingError::Denied)
            }
            PairingStatus::Approved => {
                let pairing = inner.pairings.remove(index);
                let credential = random_hex::<32>();
                let at = now_ms();
                let record = DeviceRecord {
                    id: format!("d_{}", random_hex::<8>()),
                    name: pairing.name.unwrap_or_default(),
                    agent: pairing.agent.unwrap_or_default(),
                    credential_sha256: sha256_hex(&credential),
                    paired_at_ms: at,
                    last_seen_ms: at,
                    last_answer_ms: None,
                    person: pairing.person,
                };
                let device = Arc::new(Device::paired(record));
                if inner.by_credential.len() >= MAX_DEVICES {
                    return Err(PairingError::Gone);
                }
                inner
                    .by_credential
                    .insert(device.record.credential_sha256.clone(), device.clone());
                Ok(Some((device, credential)))
            }
        }
    }

    /// Follows a record several hosts share: adds the devices paired through
    /// another host, and revokes the ones `paired` no longer lists (revoked
    /// through another host: their streams end here too, their credential
    /// stops working here at once). Returns how many were revoked.
    pub fn follow(&self, paired: Vec<DeviceRecord>) -> usize {
        let known: std::collections::HashSet<String> =
            paired.iter().map(|record| record.id.clone()).collect();
        let mut inner = self.lock();
        for record in paired {
            if inner.by_credential.len() < MAX_DEVICES
                && !inner.by_credential.contains_key(&record.credential_sha256)
            {
                inner.by_credential.insert(
                    record.credential_sha256.clone(),
                    Arc::new(Device::new(record)),
                );
            }
        }
        let gone: Vec<String> = inner
            .by_credential
            .iter()
            // A pairing whose write is on its way is not in `paired` yet.
            .filter(|(_, device)| {
                device.kept.load(Ordering::Acquire) && !known.contains(&device.record.id)
            })
            .map(|(hash, _)| hash.clone())
            .collect();
        for hash in &gone {
            if let Some(device) = inner.by_credential.remove(hash) {
                device.revoked.cancel();
            }
        }
        gone.len()
    }

    /// Revokes device `id`: its streams end, its credential stops working.
    pub fn revoke(&self, id: &str) -> Option<Arc<Device>> {
        let mut inner = self.lock();
        let hash = inner
            .by_credential
            .iter()
            .find(|(_, d)| d.record.id == id)
            .map(|(hash, _)| hash.clone())?;
        let device = inner.by_credential.remove(&hash)?;
        device.revoked.cancel();
        Some(device)
    }
}

impl Devices {
    /// Revokes every device paired under person `id` (they were removed).
    pub fn revoke_person(&self, id: &str) -> Vec<Arc<Device>> {
        let mut inner = self.lock();
        let hashes: Vec<String> = inner
            .by_credential
            .iter()
            .filter(|(_, d)| d.record.person.as_deref() == Some(id))
            .map(|(hash, _)| hash.clone())
            .collect();
        hashes
            .iter()
            .filter_map(|hash| inner.by_credential.remove(hash))
            .inspect(|device| device.revoked.cancel())
            .collect()
    }

    /// Who opened pairing `id` (a person's id; `None`: the owner), if open.
    pub fn opened_by(&self, id: &str) -> Option<Option<String>> {
        let inner = self.lock();
        inner
            .pairings
            .iter()
            .find(|p| p.id == id)
            .map(|p| p.person.clone())
    }
}

impl Inner {
    fn expire(&mut self, now: Instant, life: Duration) {
        self.pairings
            .retain(|p| now.saturating_duration_since(p.opened) < life);
    }

    fn by_code(&mut self, code: &str) -> Option<&mut Pairing> {
        self.pairings
            .iter_mut()
            .find(|p| code_matches(&p.code, code))
    }
}

fn code_matches(expected: &str, presented: &str) -> bool {
    crate::server::guard::token_matches(expected, presented)
}

/// "Browser, OS" from a user agent, for the approval question.
pub fn describe_agent(user_agent: &str) -> String {
    let has = |needle: &str| user_agent.contains(needle);
    let browser = if has("Edg/") {
        "Edge"
    } else if has("Firefox/") || has("FxiOS/") {
        "Firefox"
    } else if has("Chrome/") || has("CriOS/") {
        "Chrome"
    } else if has("Safari/") {
        "Safari"
    } else {
        "a browser"
    };
    let os = if has("Android") {
        "Android"
    } else if has("iPhone") {
        "iOS"
    } else if has("iPad") {
        "iPadOS"
    } else if has("Mac OS X") {
        "macOS"
    } else if has("Windows") {
        "Windows"
    } else if has("Linux") {
        "Linux"
    } else {
        "an unknown system"
    };
    format!("{browser}, {os}")
}

/// The routes: management needs the master credential, claim and collect
/// need none (the code is the credential).
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    DevicesRoom: FromRef<S>,
{
    Router::new()
        .route("/api/pairings", post(open_pairing))
        .route("/api/pairings/{id}", get(pairing_status))
        .route("/api/pairings/{id}/approve", post(approve))
        .route("/api/pairings/{id}/deny", post(deny))
        .route("/api/devices", get(list_devices))
        .route("/api/devices/{id}", delete(revoke))
}

/// The public routes (no credential).
pub fn public_router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    DevicesRoom: FromRef<S>,
{
    Router::new()
        .route("/api/pair/claim", post(claim))
        .route("/api/pair/collect", post(collect))
}

fn master_only(credential: &Credential) -> Result<(), ApiError> {
    match credential {
        Credential::Master => Ok(()),
        Credential::Device(_) | Credential::Person(_) | Credential::Agent(_) => {
            Err(ApiError::Forbidden(
                "pairing and revoking devices need the host's own page or `ask-user`, on loopback"
                    .to_owned(),
            ))
        }
    }
}

/// Who may open a pairing and decide it: the master credential (the
/// device is the owner's) or a person (the device is theirs; they decide
/// only the pairings they opened). Returns the person's id.
fn pairing_owner(credential: &Credential) -> Result<Option<String>, ApiError> {
    match credential {
        Credential::Person(person) => Ok(Some(person.record.id.clone())),
        other => master_only(other).map(|()| None),
    }
}

/// Refuses a person deciding (or looking at) a pairing they did not open.
fn may_decide(state: &DevicesRoom, credential: &Credential, id: &str) -> Result<(), ApiError> {
    let opener = pairing_owner(credential)?;
    match (&opener, state.devices().opened_by(id)) {
        (None, _) | (_, None) => Ok(()),
        (Some(person), Some(Some(by))) if *person == by => Ok(()),
        _ => Err(ApiError::Forbidden(
            "a person decides only the pairings they opened".to_owned(),
        )),
    }
}

/// `POST /api/pairings`'s answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct OpenedPairing {
    /// The pairing's id (not secret: for its status and the decision).
    pub id: String,
    /// The code (secret, single-use).
    pub code: String,
    /// `https://NAME/pair#CODE`.
    pub url: String,
    /// When the code stops working (Unix ms).
    pub expires_at_ms: u64,
    /// `url` as a QR code (SVG), for the page.
    #[serde(default)]
    pub qr_svg: String,
}

async fn open_pairing(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<Json<OpenedPairing>, ApiError> {
    let person = pairing_owner(&credential)?;
    let Some(remote) = state.remote.as_deref() else {
        return Err(ApiError::Interaction(
            ask_user_core::UserInteractionError::bad_request(
                "pairing needs a --remote origin for the device to open (`ask-user serve --remote https://NAME`)"
                    .to_owned(),
            ),
        ));
    };
    let (id, code) = state.devices().open_pairing(Instant::now(), person);
    let url = format!("{}/pair#{code}", remote.origin);
    Ok(Json(OpenedPairing {
        qr_svg: crate::qr::svg_qr(&url),
        url,
        id,
        code,
        expires_at_ms: now_ms() + state.devices().pairing_life().as_millis() as u64,
    }))
}

/// A pairing as `GET /api/pairings/{id}` shows it.
#[derive(Debug, Serialize, Deserialize)]
pub struct PairingView {
    /// How it stands.
    pub status: PairingStatus,
    /// The name the device gave, once claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its browser and OS, once claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

async fn pairing_status(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
) -> Result<Json<PairingView>, ApiError> {
    may_decide(&state, &credential, &id)?;
    let (status, name, agent) = state
        .devices()
        .status(&id, Instant::now())
        .ok_or(PairingError::Gone)?;
    Ok(Json(PairingView {
        status,
        name,
        agent,
    }))
}

async fn approve(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
) -> Result<Json<PairingView>, ApiError> {
    decision(&state, &credential, &id, true)
}

async fn deny(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
) -> Result<Json<PairingView>, ApiError> {
    decision(&state, &credential, &id, false)
}

fn decision(
    state: &DevicesRoom,
    credential: &Credential,
    id: &str,
    approve: bool,
) -> Result<Json<PairingView>, ApiError> {
    may_decide(state, credential, id)?;
    let now = Instant::now();
    state.devices().decide(id, approve, now)?;
    let (status, name, agent) = state.devices().status(id, now).ok_or(PairingError::Gone)?;
    Ok(Json(PairingView {
        status,
        name,
        agent,
    }))
}

/// A device as listed.
#[derive(Debug, Serialize, Deserialize)]
pub struct DeviceView {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its browser and OS.
    pub agent: String,
    /// When it was paired (Unix ms).
    pub paired_at_ms: u64,
    /// When it last made a request (Unix ms; kept across restarts to
    /// within [`SEEN_WRITE_EVERY`]).
    pub last_seen_ms: u64,
    /// When it last answered, cancelled or wrote a message (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_answer_ms: Option<u64>,
}

/// `GET /api/devices`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DeviceList {
    /// Oldest first.
    pub devices: Vec<DeviceView>,
}

async fn list_devices(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<Json<DeviceList>, ApiError> {
    master_only(&credential)?;
    let devices = state
        .devices()
        .list()
        .iter()
        .map(|d| DeviceView {
            id: d.record.id.clone(),
            name: d.record.name.clone(),
            agent: d.record.agent.clone(),
            paired_at_ms: d.record.paired_at_ms,
            last_seen_ms: d.last_seen_ms(),
            last_answer_ms: d.last_answer_ms(),
        })
        .collect();
    Ok(Json(DeviceList { devices }))
}

async fn revoke(
    State(state): State<DevicesRoom>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    master_only(&credential)?;
    let device = state.devices().revoke(&id).ok_or_else(|| {
        ApiError::NotFound(format!("device {}", ask_user_core::error::shorten(&id, 80)))
    })?;
    state
        .record()
        .submit(Write::DeviceRevoked {
            id: device.record.id.clone(),
            at_ms: now_ms(),
        })
        .kept()
        .await
        .map_err(ApiError::Store)?;
    if let Some(push) = state.push() {
        push.forget(&device.record.id);
    }
    tracing::info!(device = %device.record.id, "device revoked");
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
struct ClaimBody {
    code: String,
    name: String,
}

#[derive(Debug, Deserialize)]
struct CollectBody {
    code: String,
}

/// Counts a bad code like a wrong token (throttled per client).
fn refused(state: &DevicesRoom, request_peer: std::net::IpAddr, error: PairingError) -> ApiError {
    if error == PairingError::Gone
        && let Err(wait) = state.guard().record_failure(request_peer, Instant::now())
    {
        return ApiError::AuthThrottled {
            retry_after_secs: wait,
        };
    }
    error.into()
}

fn client(request: &Request) -> std::net::IpAddr {
    request
        .extensions()
        .get::<crate::server::guard::ClientAddr>()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| {
            c.0
        })
}

async fn claim(State(state): State<DevicesRoom>, request: Request) -> Result<Response, ApiError> {
    let peer = client(&request);
    if let Some(wait) = state.guard().throttled(peer, Instant::now()) {
        return Err(ApiError::AuthThrottled {
            retry_after_secs: wait,
        });
    }
    let agent = describe_agent(
        request
            .headers()
            .get(USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default(),
    );
    let body = body_of(request).await?;
    let body: ClaimBody = serde_json::from_str(&body).map_err(|e| {
        ask_user_core::UserInteractionError::bad_request(format!("pairing claim: {e}"))
    })?;
    let name: String = body
        .name
        .trim()
        .chars()
        .take(MAX_DEVICE_NAME_CHARS)
        .collect();
    if name.is_empty() {
        return Err(ask_user_core::UserInteractionError::bad_request(
            "pairing claim: name the device".to_owned(),
        )
        .into());
    }
    state
        .devices()
        .claim(&body.code, name, agent.clone(), Instant::now())
        .map_err(|e| refused(&state, peer, e))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({"status": "claimed", "agent": agent})),
    )
        .into_response())
}

async fn collect(State(state): State<DevicesRoom>, request: Request) -> Result<Response, ApiError> {
    let peer = client(&request);
    if let Some(wait) = state.guard().throttled(peer, Instant::now()) {
        return Err(ApiError::AuthThrottled {
            retry_after_secs: wait,
        });
    }
    let body = body_of(request).await?;
    let body: CollectBody = serde_json::from_str(&body).map_err(|e| {
        ask_user_core::UserInteractionError::bad_request(format!("pairing collect: {e}"))
    })?;
    let collected = state
        .devices()
        .collect(&body.code, Instant::now())
        .map_err(|e| refused(&state, peer, e))?;
    let Some((device, credential)) = collected else {
        return Ok((
            StatusCode::ACCEPTED,
            Json(serde_json::json!({"status": "claimed"})),
        )
            .into_response());
    };
    if let Err(error) = state
        .record()
        .submit(Write::DevicePaired(device.record.clone()))
        .kept()
        .await
    {
        state.devices().revoke(&device.record.id);
        return Err(ApiError::Store(error));
    }
    device.mark_kept();
    tracing::info!(device = %device.record.id, "device paired");
    let cookie = format!("{DEVICE_COOKIE}={credential}; Secure; HttpOnly; SameSite=Strict; Path=/");
    let mut response = Json(serde_json::json!({
        "status": "paired",
        "device": {"id": device.record.id, "name": device.record.name},
    }))
    .into_response();
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, cookie);
    }
    Ok(response)
}

async fn body_of(request: Request) -> Result<String, ApiError> {
    use axum::extract::FromRequest;
    let BodyText(body) = BodyText::from_request(request, &()).await?;
    Ok(body)
}

/// The device credential a request's cookie presents, if any.
pub fn presented_credential(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == DEVICE_COOKIE)
        .map(|(_, value)| value.to_owned())
}

impl FollowingDevices for Devices {
    fn follow(&self, paired: Vec<DeviceRecord>) -> usize {
        Devices::follow(self, paired)
    }

    fn revoke_person(&self, person: &str) -> usize {
        Devices::revoke_person(self, person).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(devices: &Devices, now: Instant) -> (String, String) {
        let (id, code) = devices.open_pairing(now, None);
        devices
            .claim(
                &code,
                "Pixel 8".to_owned(),
                "Chrome, Android".to_owned(),
                now,
            )
            .unwrap();
        (id, code)
    }

    #[test]
    fn a_code_is_128_bits_single_use_and_collected_only_after_approval() {
        let devices = Devices::default();
        let now = Instant::now();
        let (id, code) = claimed(&devices, now);
        assert_eq!(code.len(), 32, "128 bits in hex");
        assert!(matches!(devices.collect(&code, now), Ok(None)), "waits");
        devices.decide(&id, true, now).unwrap();
        let (device, credential) = devices.collect(&code, now).unwrap().unwrap();
        assert_eq!(credential.len(), 64, "256 bits in hex");
        assert_ne!(device.record.credential_sha256, credential, "kept hashed");
        assert_eq!(device.record.name, "Pixel 8");
        assert_eq!(
            devices.collect(&code, now).unwrap_err(),
            PairingError::Gone,
            "single use"
        );
        assert!(devices.authenticate(&credential).is_some());
        assert!(devices.authenticate(&"0".repeat(64)).is_none());
    }

    #[test]
    fn a_re_read_of_a_shared_record_revokes_what_it_no_longer_lists_but_not_a_pairing_still_being_written()
     {
        let devices = Devices::default();
        let now = Instant::now();
        let (id, code) = claimed(&devices, now);
        devices.decide(&id, true, now).unwrap();
        let (device, credential) = devices.collect(&code, now).unwrap().unwrap();
        // The pairing's write is on its way: a re-read does not list it yet.
        assert_eq!(devices.follow(Vec::new()), 0);
        assert!(devices.authenticate(&credential).is_some());
        assert!(!device.revoked.is_cancelled());
        // Once kept, a re-read that no longer lists it means revoked elsewhere.
        device.mark_kept();
        assert_eq!(devices.follow(vec![device.record.clone()]), 0);
        assert!(devices.authenticate(&credential).is_some());
        assert_eq!(devices.follow(Vec::new()), 1);
        assert!(devices.authenticate(&credential).is_none());
        assert!(device.revoked.is_cancelled(), "its streams end");
    }

    #[test]
    fn an_expired_a_reclaimed_or_a_denied_code_is_refused() {
        let devices = Devices::default();
        let now = Instant::now();
        let (_, code) = claimed(&devices, now);
        let later = now + PAIRING_LIFE;
        assert_eq!(
            devices.collect(&code, later).unwrap_err(),
            PairingError::Gone
        );
        let (_, code) = claimed(&devices, now);
        assert_eq!(
            devices
                .claim(&code, "other".to_owned(), String::new(), now)
                .unwrap_err(),
            PairingError::Claimed
        );
        let (id, code) = claimed(&devices, now);
        devices.decide(&id, false, now).unwrap();
        assert_eq!(
            devices.collect(&code, now).unwrap_err(),
            PairingError::Denied
        );
        assert_eq!(devices.collect(&code, now).unwrap_err(), PairingError::Gone);
        let (id, _) = devices.open_pairing(now, None);
        assert_eq!(
            devices.decide(&id, true, now).unwrap_err(),
            PairingError::NotClaimed
        );
    }

    #[test]
    fn revoking_fires_the_devices_token_and_forgets_its_credential() {
        let devices = Devices::default();
        let now = Instant::now();
        let (id, code) = claimed(&devices, now);
        devices.decide(&id, true, now).unwrap();
        let (device, credential) = devices.collect(&code, now).unwrap().unwrap();
        let revoked = devices.revoke(&device.record.id).unwrap();
        assert!(revoked.revoked.is_cancelled());
        assert!(devices.authenticate(&credential).is_none());
        assert!(devices.list().is_empty());
    }

    #[test]
    fn a_devices_sighting_is_written_at_most_once_a_minute_and_never_goes_back() {
        let device = Device::new(DeviceRecord {
            id: "d_1".to_owned(),
            name: "Pixel 8".to_owned(),
            agent: String::new(),
            credential_sha256: String::new(),
            paired_at_ms: 1_000,
            last_seen_ms: 1_000,
            last_answer_ms: None,
            person: None,
        });
        assert!(!device.seen(2_000), "a second after pairing");
        assert_eq!(device.last_seen_ms(), 2_000, "seen, in memory");
        assert!(device.seen(61_000), "a minute after the last write");
        assert!(!device.seen(61_500));
        assert!(!device.seen(30_000), "an older sighting");
        assert_eq!(device.last_seen_ms(), 61_500, "never goes back");
        assert!(device.seen(121_000));
        assert_eq!(device.last_answer_ms(), None);
    }

    #[test]
    fn the_agent_is_described_as_browser_and_os() {
        let pixel = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";
        assert_eq!(describe_agent(pixel), "Chrome, Android");
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
        assert_eq!(describe_agent(iphone), "Safari, iOS");
        assert_eq!(describe_agent(""), "a browser, an unknown system");
    }
}
