//! Push at run time: the subscriptions of the devices that asked for
//! notifications, the routes a device opts in and out with, and the task that
//! pushes each new batch to them (and closes its notification once the batch
//! is resolved anywhere).

use super::ntfy::NtfyTarget;
use super::presence::{Presence, PresenceReport};
use super::{Delivery, EndpointPolicy, PushMessage, Sender, Subscription, Urgency, VapidKey};
use crate::server::credential::Credential;
use crate::server::devices::Devices;
use crate::server::error::ApiError;
use crate::server::extract::BodyText;
use crate::server::guard::RemoteOrigin;
use crate::server::pending::PendingTable;
use crate::server::people::{People, PeopleHost, Viewer};
use crate::server::store::{FollowingPush, Store, Write, now_ms};
use ask_user_core::UserInteractionError;
use ask_user_core::wire::SessionEvent;
use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The subscriber id of the host's own page (on loopback, with the master
/// token): not a paired device, so its subscription is kept in the data
/// directory ([`DESKTOP_SUBSCRIPTION_FILE`]) rather than with the devices.
pub const DESKTOP: &str = "desktop";

/// The desktop page's subscription's file in the data directory (0600).
pub const DESKTOP_SUBSCRIPTION_FILE: &str = "desktop-push-subscription.json";

/// How push is set up for a run.
#[derive(Debug, Clone, Default)]
pub struct PushConfig {
    /// Where the VAPID key and the desktop page's subscription are kept (the
    /// data directory); `None` keeps them for this run only (`--ephemeral`).
    pub key_dir: Option<PathBuf>,
    /// Where subscriptions may point.
    pub policy: EndpointPolicy,
    /// The VAPID JWT's `sub`, where a push service's operator can reach
    /// whoever sends (`--push-contact`, else the `--remote` origin); none
    /// without either.
    pub contact: Option<String>,
}

/// The push room's sub-state: what its routes and its task use, handed to
/// them through axum's `FromRef` (`AppState` builds it), so this room
/// imports nothing of the state that owns it.
#[derive(Clone)]
pub struct PushRoom {
    /// Push to paired devices, when on.
    pub push: Option<Arc<Push>>,
    /// Whether the person is looking at a page.
    pub presence: Arc<Presence>,
    /// The durable record (device subscriptions).
    pub record: Arc<dyn Store>,
    /// The pending table.
    pub pending: Arc<PendingTable>,
    /// The people (who may see what a push announces).
    pub people: Arc<People>,
    /// Paired devices (whom a push goes to).
    pub devices: Arc<Devices>,
    /// Fires once shutdown has begun.
    pub shutdown: CancellationToken,
    /// The ntfy topic new questions are also posted to (`--ntfy`).
    pub ntfy: Option<NtfyTarget>,
    /// The `--remote` origin a notification links to.
    pub remote: Option<Arc<RemoteOrigin>>,
    /// The port the host is reachable on (links without `--remote`).
    pub port: u16,
    /// `--detach-grace`: how long a push stays worth delivering.
    pub detach_grace: Duration,
}

impl PushRoom {
    /// Push to paired devices, when on.
    pub fn push(&self) -> Option<&Arc<Push>> {
        self.push.as_ref()
    }

    /// Whether the person is looking at a page.
    pub fn presence(&self) -> &Presence {
        &self.presence
    }

    /// The durable record.
    pub fn record(&self) -> &Arc<dyn Store> {
        &self.record
    }

    /// Paired devices.
    pub fn devices(&self) -> &Devices {
        &self.devices
    }

    /// Fires once shutdown has begun.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}

impl PeopleHost for PushRoom {
    fn people(&self) -> &People {
        &self.people
    }

    fn pending(&self) -> &Arc<PendingTable> {
        &self.pending
    }
}

/// The run's push state.
pub struct Push {
    config: PushConfig,
    key: Mutex<Option<VapidKey>>,
    /// Made at the first send (reading the system's roots costs memory a
    /// host that never pushes should not keep); `None` inside when it could
    /// not be made (the system's roots unreadable).
    client: std::sync::OnceLock<Option<super::PushClient>>,
    /// By device id.
    subscriptions: Mutex<HashMap<String, Subscription>>,
    /// The devices a shared record listed when last read (see
    /// [`FollowingPush::follow`]).
    followed: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").finish_non_exhaustive()
    }
}

impl Push {
    /// Push for `config`, with the subscriptions the store kept (device id,
    /// JSON; unreadable ones are skipped with a warning) and the key a
    /// shared record keeps for every host, when it does (else the key is
    /// this host's, made on first use).
    pub fn new(config: PushConfig, kept: &[(String, String)], shared_key: Option<&str>) -> Self {
        let desktop = config
            .key_dir
            .as_deref()
            .and_then(read_desktop_subscription);
        let subscriptions = kept
            .iter()
            .cloned()
            .chain(desktop.map(|json| (DESKTOP.to_owned(), json)))
            .filter_map(|(device, json)| match serde_json::from_str(&json) {
                Ok(subscription) => Some((device, subscription)),
                Err(error) => {
                    tracing::warn!(%device, %error, "a kept push subscription is unreadable; the device must subscribe again");
                    None
                }
            })
            .collect();
        let key = shared_key.and_then(|scalar| {
            VapidKey::from_private(scalar).or_else(|| {
                tracing::warn!(
                    "push: the shared store's VAPID key is not a P-256 key; this host uses its own"
                );
                None
            })
        });
        Self {
            followed: Mutex::new(kept.iter().map(|(device, _)| device.clone()).collect()),
            config,
            key: Mutex::new(key),
            client: std::sync::OnceLock::new(),
            subscriptions: Mutex::new(subscriptions),
        }
    }

    /// The VAPID key, made (and kept) on first use.
    pub fn key(&self) -> Result<VapidKey, String> {
        let mut key = self.key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = key.as_ref() {
            return Ok(key.clone());
        }
        let made = match &self.config.key_dir {
            Some(dir) => VapidKey::load_or_create(dir)?,
            None => VapidKey::generate(),
        };
        *key = Some(made.clone());
        Ok(made)
    }

    /// The HTTP client for push services, made on first use.
    fn client(&self) -> Option<&super::PushClient> {
        self.client
            .get_or_init(|| {
                super::client()
                    .inspect_err(|error| {
                        tracing::warn!(%error, "push: no HTTP client, nothing will be pushed")
                    })
                    .ok()
            })
            .as_ref()
    }

    fn subscriptions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Subscription>> {
        self.subscriptions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `device` asked for notifications.
    pub fn subscribed(&self, device: &str) -> bool {
        self.subscriptions().contains_key(device)
    }

    /// Forgets `device`'s subscription (it was revoked).
    pub fn forget(&self, device: &str) {
        self.subscriptions().remove(device);
    }
}

impl FollowingPush for Push {
    fn follow(&self, subscriptions: Vec<(String, String)>) {
        let listed: HashSet<String> = subscriptions.iter().map(|(d, _)| d.clone()).collect();
        let mut followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept = self.subscriptions();
        // Dropped through another host (or revoked). One subscribed here
        // whose row this read did not see yet was never listed: it stays.
        kept.retain(|device, _| {
            device == DESKTOP || listed.contains(device) || !followed.contains(device)
        });
        for (device, json) in subscriptions {
            match serde_json::from_str(&json) {
                Ok(subscription) => {
                    kept.insert(device, subscription);
                }
                Err(error) => {
                    tracing::warn!(%device, %error, "a shared push subscription is unreadable; left out")
                }
            }
        }
        *followed = listed;
    }
}

impl crate::server::credential::ForgetsDevices for Push {
    fn forget(&self, device: &str) {
        Push::forget(self, device);
    }
}

/// Whether this binary can reach `https` push services (the `push-tls` feature).
pub const HAS_TLS_CLIENT: bool = cfg!(feature = "push-tls");

/// The routes (behind a credential).
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    PushRoom: FromRef<S>,
{
    Router::new()
        .route("/api/push/key", get(key))
        .route(
            "/api/push/subscription",
            put(subscribe).get(subscription_status).delete(unsubscribe),
        )
        .route("/api/presence", post(presence))
}

/// `POST /api/presence`: a page says whether the person is looking at it
/// (see [`super::presence`]). Taken with or without push.
async fn presence(
    State(state): State<PushRoom>,
    BodyText(body): BodyText,
) -> Result<StatusCode, ApiError> {
    let report: PresenceReport = serde_json::from_str(&body)
        .map_err(|e| UserInteractionError::bad_request(format!("presence: {e}")))?;
    let id_ok = !report.page.is_empty()
        && report.page.len() <= super::presence::MAX_PAGE_ID
        && report
            .page
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !id_ok {
        return Err(UserInteractionError::bad_request(format!(
            "presence: page must be 1 to {} characters of A-Z a-z 0-9 - _",
            super::presence::MAX_PAGE_ID
        ))
        .into());
    }
    state.presence().report(&report, std::time::Instant::now());
    Ok(StatusCode::NO_CONTENT)
}

fn push_of(state: &PushRoom) -> Result<&Arc<Push>, ApiError> {
    state
        .push()
        .ok_or_else(|| ApiError::NotFound("push: this host was started without push".to_owned()))
}

/// Whose subscription a request speaks for: a paired device's, or the host's
/// own page's ([`DESKTOP`]) with the master token; a person's or an agent's
/// credential itself has none.
fn device_of(credential: &Credential) -> Result<String, ApiError> {
    match credential {
        Credential::Device(device) => Ok(device.record.id.clone()),
        Credential::Master => Ok(DESKTOP.to_owned()),
        Credential::Person(_) | Credential::Agent(_) => Err(ApiError::Forbidden(
            "push subscriptions belong to a paired device or the host's own page: subscribe \
             from the device's page"
                .to_owned(),
        )),
    }
}

/// The desktop page's kept subscription (JSON) in `dir`, if any.
fn read_desktop_subscription(dir: &std::path::Path) -> Option<String> {
    let path = dir.join(DESKTOP_SUBSCRIPTION_FILE);
    let file = match crate::data_dir::open_private(&path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "push: the desktop page's subscription is unreadable; it must subscribe again");
            return None;
        }
    };
    let mut json = String::new();
    use std::io::Read;
    file.take(super::MAX_ENDPOINT_BYTES as u64 + 1024)
        .read_to_string(&mut json)
        .ok()?;
    Some(json)
}

/// Keeps (`Some`) or forgets (`None`) the desktop page's subscription in
/// `dir`: written to a private file of its own, then renamed into place.
fn write_desktop_subscription(dir: &std::path::Path, json: Option<&str>) -> Result<(), String> {
    let path = dir.join(DESKTOP_SUBSCRIPTION_FILE);
    let shown = path.display();
    let Some(json) = json else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("{shown}: {e}")),
            _ => Ok(()),
        };
    };
    crate::data_dir::ensure_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let staged = dir.join(format!(
        ".{DESKTOP_SUBSCRIPTION_FILE}.{}.{:016x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let written = (|| -> std::io::Result<()> {
        use std::io::Write as _;
        let mut file = crate::data_dir::create_private_new(&staged)?;
        file.write_all(json.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&staged, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written.map_err(|e| format!("{shown}: {e}"))
}

/// Keeps `json` as `device`'s subscription: with the device in the store, or
/// the desktop page's in the data directory (this run only without one).
async fn keep_subscription(
    state: &PushRoom,
    push: &Push,
    device: &str,
    json: Option<String>,
) -> Result<(), ApiError> {
    if device == DESKTOP {
        return match &push.config.key_dir {
            Some(dir) => write_desktop_subscription(dir, json.as_deref())
                .map_err(|why| ApiError::Store(crate::server::store::StoreError::Unavailable(why))),
            None => Ok(()),
        };
    }
    let write = match json {
        Some(subscription) => Write::PushSubscribed {
            device: device.to_owned(),
            subscription,
            at_ms: now_ms(),
        },
        None => Write::PushUnsubscribed {
            device: device.to_owned(),
        },
    };
    state
        .record()
        .submit(write)
        .kept()
        .await
        .map(|_| ())
        .map_err(ApiError::Store)
}

#[derive(Debug, Serialize)]
struct KeyBody {
    /// The VAPID public key: the page's `applicationServerKey`.
    public_key: String,
}

async fn key(State(state): State<PushRoom>) -> Result<Json<KeyBody>, ApiError> {
    let key = push_of(&state)?
        .key()
        .map_err(|why| ApiError::Store(crate::server::store::StoreError::Unavailable(why)))?;
    Ok(Json(KeyBody {
        public_key: key.public_key().to_owned(),
    }))
}

#[derive(Debug, Serialize)]
struct StatusBody {
    subscribed: bool,
}

async fn subscription_status(
    State(state): State<PushRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<Json<StatusBody>, ApiError> {
    let push = push_of(&state)?;
    let device = device_of(&credential)?;
    Ok(Json(StatusBody {
        subscribed: push.subscribed(&device),
    }))
}

async fn subscribe(
    State(state): State<PushRoom>,
    Extension(credential): Extension<Credential>,
    BodyText(body): BodyText,
) -> Result<StatusCode, ApiError> {
    let push = push_of(&state)?;
    let device = device_of(&credential)?;
    let subscription: Subscription = serde_json::from_str(&body)
        .map_err(|e| UserInteractionError::bad_request(format!("push subscription: {e}")))?;
    subscription
        .validate(push.config.policy)
        .map_err(|e| UserInteractionError::bad_request(format!("push subscription: {e}")))?;
    if !HAS_TLS_CLIENT && subscription.endpoint.starts_with("https:") {
        return Err(UserInteractionError::bad_request(
            "push subscription: this ask-user binary was built without a TLS client (the host's \
             push-tls feature), so it cannot reach https push services; build it with \
             `cargo install` or `cargo build` (default features)"
                .to_owned(),
        )
        .into());
    }
    let json = serde_json::to_string(&subscription).expect("a subscription serialises");
    keep_subscription(&state, push, &device, Some(json)).await?;
    push.subscriptions().insert(device.clone(), subscription);
    tracing::info!(%device, "push: the device asked for notifications");
    Ok(StatusCode::NO_CONTENT)
}

async fn unsubscribe(
    State(state): State<PushRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<StatusCode, ApiError> {
    let push = push_of(&state)?;
    let device = device_of(&credential)?;
    drop_subscription(&state, push, &device).await;
    tracing::info!(%device, "push: the device stopped notifications");
    Ok(StatusCode::NO_CONTENT)
}

async fn drop_subscription(state: &PushRoom, push: &Push, device: &str) {
    push.subscriptions().remove(device);
    if let Err(error) = keep_subscription(state, push, device, None).await {
        tracing::warn!(%device, error = %crate::logged::logged(&error), "push: dropping the subscription was not kept");
    }
}

/// A batch waiting for the person, as a push announces it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Waiting {
    /// The ask's id.
    pub id: String,
    /// Its session.
    pub session: String,
    /// Who asks.
    pub who: String,
    /// The first question's header, else its text.
    pub text: String,
    /// How many questions.
    pub count: usize,
    /// The one question's id and option labels, when it is single-select
    /// (the notification's buttons; see [`PushMessage::ask_with_choices`]).
    pub choices: Option<(String, Vec<String>)>,
    /// Its audience was widened by its `escalate_after` (issue 24).
    pub escalated: bool,
}

/// Decides what to push as batches come and go: each batch that arrives while
/// nobody is present once, and a closing follow-up for each pushed batch once
/// it is no longer waiting. Pure: the task feeds it what waits now.
#[derive(Debug, Default)]
pub struct Dispatcher {
    /// Every batch seen waiting (pushed or not), by id.
    seen: HashSet<String>,
    /// The pushed ones still waiting: id → session.
    pushed: HashMap<String, String>,
    /// The ones seen escalated (pushed to their wider audience, or first
    /// seen so): an escalation is pushed once.
    widened: HashSet<String>,
}

impl Dispatcher {
    /// Whether the batch `id` was seen waiting already (what it says is then
    /// not read again), escalated when it is now.
    pub fn has_seen(&self, id: &str, escalated: bool) -> bool {
        self.seen.contains(id) && (!escalated || self.widened.contains(id))
    }

    /// The push announcing `batch`, which is then closed once resolved.
    fn pushing(&mut self, batch: &Waiting) -> PushMessage {
        self.pushed.insert(batch.id.clone(), batch.session.clone());
        PushMessage::ask_with_choices(
            &batch.session,
            &batch.id,
            &batch.who,
            &batch.text,
            batch.count,
            batch
                .choices
                .as_ref()
                .map(|(item, labels)| (item.as_str(), labels.as_slice())),
        )
    }

    /// The batches seen before that escalated since: each pushed once more,
    /// for the people its escalation brought into its audience (see
    /// `Reach::NewlyAdmitted`); nothing while the person is `present`.
    pub fn widen(&mut self, waiting: &[Waiting], present: bool) -> Vec<PushMessage> {
        let mut out = Vec::new();
        for batch in waiting.iter().filter(|batch| batch.escalated) {
            if !self.seen.contains(&batch.id) || !self.widened.insert(batch.id.clone()) {
                continue;
            }
            if present {
                continue;
            }
            out.push(self.pushing(batch));
        }
        out
    }

    /// What to send now that `waiting` waits and the person is (or is not)
    /// `present`.
    pub fn step(&mut self, waiting: &[Waiting], present: bool) -> Vec<PushMessage> {
        let mut out = Vec::new();
        let now: HashSet<&str> = waiting.iter().map(|w| w.id.as_str()).collect();
        let gone: Vec<String> = self
            .pushed
            .keys()
            .filter(|id| !now.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            if let Some(session) = self.pushed.remove(&id) {
                out.push(PushMessage::close(&session, &id));
            }
        }
        self.seen.retain(|id| now.contains(id.as_str()));
        self.widened.retain(|id| now.contains(id.as_str()));
        for batch in waiting {
            if !self.seen.insert(batch.id.clone()) {
                continue;
            }
            // Escalated already: its first push reaches the wider audience.
            if batch.escalated {
                self.widened.insert(batch.id.clone());
            }
            // Arrived while the person looks: the page's own signals do it.
            if present {
                continue;
            }
            out.push(self.pushing(batch));
        }
        out
    }
}

/// Every batch waiting now, across sessions: the table's shared events (no
/// copy of a request), described in full only when `seen` says the
/// dispatcher has not seen it yet (else its id and session alone).
fn waiting_now(state: &PushRoom, seen: impl Fn(&str, bool) -> bool) -> Vec<Waiting> {
    let pending = state.pending();
    let list = pending.sessions(now_ms());
    let mut waiting = Vec::new();
    for entry in list.sessions.iter().filter(|s| s.pending > 0) {
        for event in pending.pending_events(&entry.id) {
            let ask_user_core::wire::SessionEvent::QuestionRequested(question) = &*event else {
                continue;
            };
            let escalated = event.is_escalated();
            if seen(&question.id, escalated) {
                waiting.push(Waiting {
                    id: question.id.clone(),
                    session: question.session.clone(),
                    escalated,
                    ..Waiting::default()
                });
                continue;
            }
            let first = question.request.questions.first();
            let text = first
                .map(|q| q.header.clone().unwrap_or_else(|| q.question.clone()))
                .unwrap_or_default();
            waiting.push(Waiting {
                id: question.id.clone(),
                session: question.session.clone(),
                who: question
                    .asked_by
                    .as_ref()
                    .map(|a| a.name.clone())
                    .unwrap_or_else(|| "An agent".to_owned()),
                text,
                count: question.request.questions.len(),
                choices: first
                    .filter(|q| {
                        !q.multi_select.unwrap_or(false)
                            && q.intent.is_none()
                            && !q.options().is_empty()
                    })
                    .map(|q| {
                        (
                            q.id.clone(),
                            q.options().iter().map(|o| o.label.clone()).collect(),
                        )
                    }),
                escalated,
            });
        }
    }
    waiting
}

/// Starts the task that pushes (when push or `--ntfy` is on): it wakes
/// whenever the sessions change, and stops at shutdown.
pub fn spawn(state: &PushRoom) {
    let push = state.push().cloned();
    let ntfy = state.ntfy.clone();
    if push.is_none() && ntfy.is_none() {
        return;
    }
    let ntfy = ntfy.and_then(|target| match super::client() {
        Ok(client) => Some((target, Arc::new(client))),
        Err(error) => {
            tracing::warn!(%error, "ntfy: no HTTP client, nothing will be posted");
            None
        }
    });
    let state = state.clone();
    let mut changes = state.pending().inbox();
    let shutdown = state.shutdown_token();
    // Several hosts follow one record, so each sees every question: the
    // host whose claim the record takes first pushes it, and closes it.
    let shared = state.record().shared().is_some();
    // The tags of the notifications this host pushed (it closes them).
    let claimed: Arc<Mutex<HashSet<String>>> = Arc::default();
    tokio::spawn(async move {
        let mut dispatcher = Dispatcher::default();
        loop {
            let present = state.presence().present(std::time::Instant::now());
            let waiting = waiting_now(&state, |id, escalated| dispatcher.has_seen(id, escalated));
            let messages = dispatcher.step(&waiting, present);
            for message in messages {
                let sends = Sends {
                    state: &state,
                    push: &push,
                    ntfy: &ntfy,
                };
                match (&message, shared) {
                    (_, false) => sends.all(message, Reach::Audience),
                    (PushMessage::Ask { question, .. }, true) => {
                        sends.once_claimed(question.clone(), false, message, &claimed)
                    }
                    (PushMessage::Close { tag }, true) => {
                        let pushed = claimed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(tag);
                        sends.devices(
                            message,
                            if pushed {
                                Reach::Audience
                            } else {
                                Reach::Desktop
                            },
                        );
                    }
                }
            }
            // The ntfy topic is the owner's: they had the first push.
            for message in dispatcher.widen(&waiting, present) {
                let sends = Sends {
                    state: &state,
                    push: &push,
                    ntfy: &None,
                };
                match (&message, shared) {
                    (PushMessage::Ask { question, .. }, true) => {
                        sends.once_claimed(question.clone(), true, message, &claimed)
                    }
                    _ => sends.devices(message, Reach::NewlyAdmitted),
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
    });
}

/// Where the push task's messages go: the paired devices' push
/// subscriptions and the `--ntfy` topic.
struct Sends<'a> {
    state: &'a PushRoom,
    push: &'a Option<Arc<Push>>,
    ntfy: &'a Option<(NtfyTarget, Arc<super::PushClient>)>,
}

impl Sends<'_> {
    /// To the topic and to the devices `reach` says.
    fn all(&self, message: PushMessage, reach: Reach) {
        if let Some((target, client)) = self.ntfy
            && still_waiting(self.state, &message)
        {
            post_to_ntfy(self.state, target, client, &message);
        }
        self.devices(message, reach);
    }

    /// To the devices `reach` says.
    fn devices(&self, message: PushMessage, reach: Reach) {
        if let Some(push) = self.push {
            send_to(self.state, push, message, reach);
        }
    }

    /// Claims the push of `question` in the shared record, then sends
    /// `message` to all if this host's claim won (its tag goes in `claimed`:
    /// this host closes it too), else to this host's desktop page alone
    /// (which no other host pushes to). An `escalation` reaches the people
    /// it admits, never the topic.
    fn once_claimed(
        &self,
        question: String,
        escalation: bool,
        message: PushMessage,
        claimed: &Arc<Mutex<HashSet<String>>>,
    ) {
        // Nobody to push to (no subscription, no topic): no claim to write,
        // so the record sees no write per question when push is not used.
        let subscribed = self
            .push
            .as_ref()
            .is_some_and(|push| !push.subscriptions().is_empty());
        if !subscribed && (escalation || self.ntfy.is_none()) {
            return;
        }
        let (state, push, ntfy) = (self.state.clone(), self.push.clone(), self.ntfy.clone());
        let claimed = claimed.clone();
        tokio::spawn(async move {
            let claim = Write::PushClaimed {
                id: question.clone(),
                escalation,
            };
            let won = match state.record().submit(claim).kept().await {
                Ok(won) => won,
                Err(error) => {
                    // Unclaimed, so unsent: the other hosts' claims fail
                    // alike while the record is away.
                    tracing::warn!(error = %crate::logged::logged(&error), "push: the claim was not kept; pushed to the desktop page alone");
                    false
                }
            };
            let sends = Sends {
                state: &state,
                push: &push,
                ntfy: &ntfy,
            };
            match (won, escalation) {
                (true, false) => {
                    if let PushMessage::Ask { tag, .. } = &message {
                        claimed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(tag.clone());
                    }
                    sends.all(message, Reach::Audience);
                }
                (true, true) => sends.devices(message, Reach::NewlyAdmitted),
                (false, false) => sends.devices(message, Reach::Desktop),
                (false, true) => {}
            }
        });
    }
}

/// Whether the ask `message` announces still waits (a close: always).
fn still_waiting(state: &PushRoom, message: &PushMessage) -> bool {
    match message {
        PushMessage::Ask {
            session, question, ..
        } => state.pending().pending_events(session).iter().any(
            |event| matches!(&**event, SessionEvent::QuestionRequested(q) if q.id == *question),
        ),
        PushMessage::Close { .. } => true,
    }
}

/// Posts an ask to the `--ntfy` topic (closing follow-ups have no ntfy
/// counterpart); logged without the message or the topic.
fn post_to_ntfy(
    state: &PushRoom,
    target: &super::ntfy::NtfyTarget,
    client: &Arc<super::PushClient>,
    message: &PushMessage,
) {
    let base = match &state.remote {
        Some(remote) => remote.origin.clone(),
        None => format!("http://127.0.0.1:{}", state.port),
    };
    let Some(body) = target.body(message, &base) else {
        return;
    };
    let (target, client) = (target.clone(), client.clone());
    tokio::spawn(async move {
        match target.publish(&client, body).await {
            Ok(status) if (200..300).contains(&status) => {
                tracing::info!(status, "ntfy: posted")
            }
            Ok(status) => tracing::warn!(status, "ntfy: refused by the server"),
            Err(error) => {
                tracing::warn!(error = %crate::logged::logged(&error), "ntfy: the server could not be reached")
            }
        }
    });
}

/// Which devices a push goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Every one whose person is in the batch's audience now (the owner's
    /// devices and the desktop see all).
    Audience,
    /// Only those of people the batch's escalation brought into its
    /// audience (the others had its first push).
    NewlyAdmitted,
    /// Only this host's desktop page: another host pushes to the devices.
    Desktop,
}

/// Sends `message` to the opted-in devices still paired that `reach` says,
/// each in a task of its own; a subscription the push service says is gone
/// is dropped.
fn send_to(state: &PushRoom, push: &Arc<Push>, message: PushMessage, reach: Reach) {
    // A batch is shown only to devices whose person is in its audience (the
    // owner's devices and the desktop see all); a close reveals nothing.
    let shown = match &message {
        PushMessage::Ask {
            session, question, ..
        } => Some(state.pending().pending_events(session).into_iter().find(
            |event| matches!(&**event, SessionEvent::QuestionRequested(q) if q.id == *question),
        )),
        PushMessage::Close { .. } => None,
    };
    let paired: HashSet<String> = state
        .devices()
        .list()
        .into_iter()
        .filter(|_| reach != Reach::Desktop)
        .filter(|device| match &shown {
            None => true,
            Some(None) => false,
            Some(Some(event)) => {
                let viewer = Viewer::of(state, Some(&Credential::Device(device.clone())));
                match (reach, &viewer, &**event) {
                    (Reach::Audience, ..) => viewer.sees(event),
                    (
                        Reach::NewlyAdmitted,
                        Viewer::Person(person),
                        SessionEvent::QuestionRequested(question),
                    ) => {
                        question.request.admits(person.as_ref(), true)
                            && !question.request.admits(person.as_ref(), false)
                    }
                    (Reach::NewlyAdmitted | Reach::Desktop, ..) => false,
                }
            }
        })
        .map(|d| d.record.id.clone())
        .collect();
    let targets: Vec<(String, Subscription)> = push
        .subscriptions()
        .iter()
        .filter(|(device, _)| {
            paired.contains(*device)
                || (*device == DESKTOP
                    && matches!(reach, Reach::Audience | Reach::Desktop)
                    // An ask resolved meanwhile (while it was claimed) is not sent.
                    && !matches!(shown, Some(None)))
        })
        .map(|(d, s)| (d.clone(), s.clone()))
        .collect();
    if targets.is_empty() {
        return;
    }
    let key = match push.key() {
        Ok(key) => key,
        Err(error) => {
            tracing::warn!(error = %crate::logged::logged(&error), "push: no VAPID key, nothing sent");
            return;
        }
    };
    let (kind, urgency) = match &message {
        PushMessage::Ask { .. } => ("ask", Urgency::High),
        PushMessage::Close { .. } => ("close", Urgency::Normal),
    };
    // As long as the host keeps a detached question: past it the question is gone.
    let ttl = state.detach_grace.max(Duration::from_secs(60));
    for (device, subscription) in targets {
        let (state, push, key, message) =
            (state.clone(), push.clone(), key.clone(), message.clone());
        tokio::spawn(async move {
            let Some(client) = push.client() else {
                return;
            };
            let sender = Sender {
                client,
                key: &key,
                contact: push.config.contact.as_deref(),
                policy: push.config.policy,
            };
            let delivery = sender.deliver(&subscription, &message, ttl, urgency).await;
            // Logged without its payload.
            match &delivery {
                Delivery::Accepted(status) => {
                    tracing::info!(%device, kind, status, "push: sent")
                }
                Delivery::Gone(status) => {
                    tracing::info!(%device, kind, status, "push: the subscription is gone; dropped");
                    drop_subscription(&state, &push, &device).await;
                }
                Delivery::Refused(status) => {
                    tracing::warn!(%device, kind, status, "push: refused by the push service")
                }
                Delivery::Unreachable(error) => {
                    tracing::warn!(%device, kind, error = %crate::logged::logged(error), "push: the push service could not be reached")
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(id: &str) -> Waiting {
        Waiting {
            id: id.to_owned(),
            session: "s".to_owned(),
            who: "claude-code".to_owned(),
            text: "Ship it?".to_owned(),
            count: 1,
            choices: None,
            escalated: false,
        }
    }

    fn kinds(messages: &[PushMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                PushMessage::Ask { question, .. } => format!("ask {question}"),
                PushMessage::Close { tag } => format!("close {tag}"),
            })
            .collect()
    }

    fn subscription_json(endpoint: &str) -> (String, String) {
        let json = format!(
            r#"{{"endpoint":"https://push.example/{endpoint}","keys":{{"p256dh":"k","auth":"a"}}}}"#
        );
        (endpoint.to_owned(), json)
    }

    #[test]
    fn a_followed_record_adds_and_drops_subscriptions_but_keeps_one_made_here_not_yet_read() {
        let push = Push::new(PushConfig::default(), &[subscription_json("d_kept")], None);
        // Made here; its row not read back yet.
        push.subscriptions().insert(
            "d_here".to_owned(),
            serde_json::from_str(&subscription_json("d_here").1).unwrap(),
        );
        FollowingPush::follow(
            &push,
            vec![subscription_json("d_kept"), subscription_json("d_other")],
        );
        assert!(push.subscribed("d_kept") && push.subscribed("d_other"));
        assert!(push.subscribed("d_here"), "not listed yet: not dropped");
        // The record lists it, then drops it (through another host).
        FollowingPush::follow(
            &push,
            vec![subscription_json("d_here"), subscription_json("d_other")],
        );
        assert!(!push.subscribed("d_kept"), "dropped through another host");
        FollowingPush::follow(&push, vec![subscription_json("d_other")]);
        assert!(!push.subscribed("d_here"));
        assert!(push.subscribed("d_other"));
    }

    #[test]
    fn a_shared_key_is_every_hosts_key() {
        let scalar =
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, [7u8; 32]);
        let one = Push::new(PushConfig::default(), &[], Some(&scalar));
        let other = Push::new(PushConfig::default(), &[], Some(&scalar));
        assert_eq!(
            one.key().unwrap().public_key(),
            other.key().unwrap().public_key()
        );
        let own = Push::new(PushConfig::default(), &[], None);
        assert_ne!(
            own.key().unwrap().public_key(),
            one.key().unwrap().public_key()
        );
    }

    #[test]
    fn a_batch_is_pushed_once_while_nobody_looks_and_closed_once_resolved() {
        let mut dispatcher = Dispatcher::default();
        assert_eq!(kinds(&dispatcher.step(&[batch("a")], false)), ["ask a"]);
        assert!(dispatcher.step(&[batch("a")], false).is_empty());
        assert_eq!(
            kinds(&dispatcher.step(&[batch("a"), batch("b")], false)),
            ["ask b"]
        );
        assert_eq!(
            kinds(&dispatcher.step(&[batch("b")], false)),
            ["close ask-user:s:a"]
        );
        assert_eq!(kinds(&dispatcher.step(&[], true)), ["close ask-user:s:b"]);
        assert!(dispatcher.step(&[], false).is_empty());
    }

    #[test]
    fn an_escalation_is_pushed_once_to_its_wider_audience_and_a_batch_first_seen_escalated_once_in_all()
     {
        let mut dispatcher = Dispatcher::default();
        assert_eq!(kinds(&dispatcher.step(&[batch("a")], false)), ["ask a"]);
        let escalated = Waiting {
            escalated: true,
            ..batch("a")
        };
        assert!(
            !dispatcher.has_seen("a", true),
            "read in full once escalated"
        );
        let now = [escalated.clone()];
        assert!(dispatcher.step(&now, false).is_empty());
        assert_eq!(kinds(&dispatcher.widen(&now, false)), ["ask a"]);
        assert!(dispatcher.has_seen("a", true));
        assert!(dispatcher.widen(&now, false).is_empty(), "once");
        // Seen escalated from the start: one push, already to everyone.
        let b = Waiting {
            escalated: true,
            ..batch("b")
        };
        let now = [escalated, b];
        assert_eq!(kinds(&dispatcher.step(&now, false)), ["ask b"]);
        assert!(dispatcher.widen(&now, false).is_empty());
        let mut closed = kinds(&dispatcher.step(&[], false));
        closed.sort();
        assert_eq!(closed, ["close ask-user:s:a", "close ask-user:s:b"]);
    }

    #[test]
    fn a_batch_that_arrives_while_the_person_looks_is_never_pushed_nor_closed() {
        let mut dispatcher = Dispatcher::default();
        assert!(dispatcher.step(&[batch("a")], true).is_empty());
        // The person looks away: the batch they already saw is not pushed late.
        assert!(dispatcher.step(&[batch("a")], false).is_empty());
        assert!(dispatcher.step(&[], false).is_empty());
    }
}
