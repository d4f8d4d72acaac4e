//! People and agent tokens (issue 24): who may answer what.
//!
//! With no person configured the host is in single-person mode, exactly as
//! before: the master token, the page's cookie and every paired device see
//! and answer everything. `ask-user people add NAME [--role R]...` gives a
//! person a credential of their own (`aup_` and 256 random bits, shown once,
//! kept as its SHA-256 like a device's); with it they use the API (`Authorization:
//! Bearer`) and pair devices, which then belong to them. A question's
//! `audience` (core's [`ask_user_core::Audience`], widened by its
//! `escalate_after` once the pending table escalates it) decides which people
//! see it in lists, streams and the inbox, and may answer or cancel it; the
//! others get 403 `NOT_IN_AUDIENCE`. `ask-user agents add NAME` makes an agent
//! token (`aua_…`): it may ask (`…/ask`, `/mcp`), never answer (403
//! `AGENT_CANNOT_ANSWER`). The master token keeps every right (the machine's
//! owner). Removing a person or an agent takes effect at once: the credential
//! is refused and its streams end (a person's devices are revoked with them).

pub use crate::server::credential::{Agent, Person};
use crate::server::credential::{Credential, ForgetsDevices, random_hex, sha256_hex};
use crate::server::devices::Devices;
use crate::server::error::ApiError;
use crate::server::pending::{PendingTable, SharedEvent};
pub use crate::server::store::Followed;
use crate::server::store::{AgentRecord, FollowingPeople, PersonRecord, Store, Write, now_ms};
use ask_user_core::UserInteractionError;
use ask_user_core::wire::SessionEvent;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

pub use crate::token_file::{AGENT_PREFIX, PERSON_PREFIX};

/// The most people kept at once.
pub const MAX_PEOPLE: usize = 256;

/// The most agent tokens kept at once.
pub const MAX_AGENTS: usize = 256;

/// The most roles one person holds.
pub const MAX_ROLES: usize = 16;

/// A bearer credential that is a person's or an agent's.
#[derive(Debug, Clone)]
pub enum Bearer {
    /// A person's own credential.
    Person(Arc<Person>),
    /// An agent token.
    Agent(Arc<Agent>),
}

/// The people and agent tokens.
#[derive(Debug, Default)]
pub struct People {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// By the SHA-256 of their credential, hex.
    people: HashMap<String, Arc<Person>>,
    agents: HashMap<String, Arc<Agent>>,
    /// The ids removed through this host: a shared record read before the
    /// removal was written never brings them back (an id is never reused).
    removed: std::collections::HashSet<String>,
}

/// The most removed ids [`People`] remembers (see `Inner::removed`); past
/// it they are forgotten, as by a restart.
const MAX_REMEMBERED_REMOVALS: usize = 4096;

/// Why adding a person or an agent was refused.
fn taken(kind: &str, name: &str) -> ApiError {
    ApiError::Conflict(format!(
        "{kind} {} exists already; remove it first to give it a new credential",
        ask_user_core::error::quoted(name)
    ))
}

impl People {
    /// The registry with what the store kept.
    pub fn new(people: Vec<PersonRecord>, agents: Vec<AgentRecord>) -> Self {
        let people = people
            .into_iter()
            .map(|record| {
                let person = Person {
                    record,
                    removed: CancellationToken::new(),
                };
                (person.record.credential_sha256.clone(), Arc::new(person))
            })
            .collect();
        let agents = agents
            .into_iter()
            .map(|record| {
                let agent = Agent {
                    record,
                    removed: CancellationToken::new(),
                };
                (agent.record.credential_sha256.clone(), Arc::new(agent))
            })
            .collect();
        Self {
            inner: Mutex::new(Inner {
                people,
                agents,
                removed: Default::default(),
            }),
        }
    }

    /// Follows a record several hosts share: adds the people and agent
    /// tokens added through another host, and removes the ones removed
    /// there (their credential is refused here at once, their streams
    /// end). One added here whose row is not written yet is left as it is.
    /// Returns the people removed (their devices go with them).
    pub fn follow(&self, followed: Followed) -> Vec<Arc<Person>> {
        let mut inner = self.lock();
        let mut gone = Vec::new();
        for (record, removed) in followed.people {
            let hash = record.credential_sha256.clone();
            if removed {
                if let Some(person) = inner.people.remove(&hash) {
                    person.removed.cancel();
                    gone.push(person);
                }
            } else if !inner.people.contains_key(&hash)
                && !inner.removed.contains(&record.id)
                && inner.people.len() < MAX_PEOPLE
            {
                let person = Person {
                    record,
                    removed: CancellationToken::new(),
                };
                inner.people.insert(hash, Arc::new(person));
            }
        }
        for (record, removed) in followed.agents {
            let hash = record.credential_sha256.clone();
            if removed {
                if let Some(agent) = inner.agents.remove(&hash) {
                    agent.removed.cancel();
                }
            } else if !inner.agents.contains_key(&hash)
                && !inner.removed.contains(&record.id)
                && inner.agents.len() < MAX_AGENTS
            {
                let agent = Agent {
                    record,
                    removed: CancellationToken::new(),
                };
                inner.agents.insert(hash, Arc::new(agent));
            }
        }
        gone
    }

    /// The ids of the people and agent tokens known here.
    pub fn ids(&self) -> Vec<String> {
        let inner = self.lock();
        inner
            .people
            .values()
            .map(|p| p.record.id.clone())
            .chain(inner.agents.values().map(|a| a.record.id.clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the host has people (else it is in single-person mode).
    pub fn any(&self) -> bool {
        !self.lock().people.is_empty()
    }

    /// The person or agent whose credential this is.
    pub fn authenticate(&self, credential: &str) -> Option<Bearer> {
        if !(credential.starts_with(PERSON_PREFIX) || credential.starts_with(AGENT_PREFIX)) {
            return None;
        }
        let hash = sha256_hex(credential);
        let inner = self.lock();
        if let Some(person) = inner.people.get(&hash) {
            return Some(Bearer::Person(person.clone()));
        }
        inner.agents.get(&hash).cloned().map(Bearer::Agent)
    }

    /// The person with this id (a device's owner), if still there.
    pub fn person(&self, id: &str) -> Option<Arc<Person>> {
        self.lock()
            .people
            .values()
            .find(|p| p.record.id == id)
            .cloned()
    }

    /// The people, oldest first.
    pub fn people(&self) -> Vec<Arc<Person>> {
        let mut people: Vec<_> = self.lock().people.values().cloned().collect();
        people.sort_by_key(|p| (p.record.added_at_ms, p.record.id.clone()));
        people
    }

    /// The agent tokens, oldest first.
    pub fn agents(&self) -> Vec<Arc<Agent>> {
        let mut agents: Vec<_> = self.lock().agents.values().cloned().collect();
        agents.sort_by_key(|a| (a.record.added_at_ms, a.record.id.clone()));
        agents
    }

    /// Adds a person: them and their credential (shown once, kept hashed).
    pub fn add_person(
        &self,
        name: String,
        roles: Vec<String>,
    ) -> Result<(Arc<Person>, String), ApiError> {
        let mut inner = self.lock();
        if inner.people.values().any(|p| p.record.name == name) {
            return Err(taken("person", &name));
        }
        if inner.people.len() >= MAX_PEOPLE {
            return Err(UserInteractionError::bad_request(format!(
                "at most {MAX_PEOPLE} people; remove one first"
            ))
            .into());
        }
        let credential = format!("{PERSON_PREFIX}{}", random_hex::<32>());
        let person = Arc::new(Person {
            record: PersonRecord {
                id: format!("u_{}", random_hex::<8>()),
                name,
                roles,
                credential_sha256: sha256_hex(&credential),
                added_at_ms: now_ms(),
            },
            removed: CancellationToken::new(),
        });
        inner
            .people
            .insert(person.record.credential_sha256.clone(), person.clone());
        Ok((person, credential))
    }

    /// Adds an agent token: it and the token (shown once, kept hashed).
    pub fn add_agent(&self, name: String) -> Result<(Arc<Agent>, String), ApiError> {
        let mut inner = self.lock();
        if inner.agents.values().any(|a| a.record.name == name) {
            return Err(taken("agent", &name));
        }
        if inner.agents.len() >= MAX_AGENTS {
            return Err(UserInteractionError::bad_request(format!(
                "at most {MAX_AGENTS} agent tokens; remove one first"
            ))
            .into());
        }
        let credential = format!("{AGENT_PREFIX}{}", random_hex::<32>());
        let agent = Arc::new(Agent {
            record: AgentRecord {
                id: format!("a_{}", random_hex::<8>()),
                name,
                credential_sha256: sha256_hex(&credential),
                added_at_ms: now_ms(),
            },
            removed: CancellationToken::new(),
        });
        inner
            .agents
            .insert(agent.record.credential_sha256.clone(), agent.clone());
        Ok((agent, credential))
    }

    /// Removes the person named `name`: their credential stops working and
    /// their streams end.
    pub fn remove_person(&self, name: &str) -> Option<Arc<Person>> {
        let mut inner = self.lock();
        let hash = inner
            .people
            .iter()
            .find(|(_, p)| p.record.name == name)
            .map(|(hash, _)| hash.clone())?;
        let person = inner.people.remove(&hash)?;
        person.removed.cancel();
        inner.remember_removed(&person.record.id);
        Some(person)
    }

    /// Removes the agent token named `name`.
    pub fn remove_agent(&self, name: &str) -> Option<Arc<Agent>> {
        let mut inner = self.lock();
        let hash = inner
            .agents
            .iter()
            .find(|(_, a)| a.record.name == name)
            .map(|(hash, _)| hash.clone())?;
        let agent = inner.agents.remove(&hash)?;
        agent.removed.cancel();
        inner.remember_removed(&agent.record.id);
        Some(agent)
    }
}

impl FollowingPeople for People {
    fn follow(&self, followed: Followed) -> Vec<String> {
        People::follow(self, followed)
            .into_iter()
            .map(|person| person.record.id.clone())
            .collect()
    }

    fn ids(&self) -> Vec<String> {
        People::ids(self)
    }
}

impl Inner {
    fn remember_removed(&mut self, id: &str) {
        if self.removed.len() >= MAX_REMEMBERED_REMOVALS {
            self.removed.clear();
        }
        self.removed.insert(id.to_owned());
    }
}

/// Who is looking at questions, and so which they see and may answer.
#[derive(Debug, Clone)]
pub enum Viewer {
    /// The machine's owner: the master token, the page's cookie, a device
    /// paired with the master token; and everyone in single-person mode.
    Owner,
    /// A person: their own credential, or a device paired under them.
    Person(Arc<Person>),
    /// An agent token: asks, sees and answers nothing.
    Agent,
    /// A device of a person removed meanwhile (revoked with them): nothing.
    Nobody,
}

impl Viewer {
    /// Who `credential` is, as far as questions go.
    pub fn of(state: &impl PeopleHost, credential: Option<&Credential>) -> Self {
        match credential {
            None | Some(Credential::Master) => Viewer::Owner,
            Some(Credential::Person(person)) => Viewer::Person(person.clone()),
            Some(Credential::Agent(_)) => Viewer::Agent,
            Some(Credential::Device(device)) => match &device.record.person {
                None => Viewer::Owner,
                // A removed person's devices are revoked with them; one seen
                // here meanwhile sees nothing.
                Some(id) => state
                    .people()
                    .person(id)
                    .map_or(Viewer::Nobody, Viewer::Person),
            },
        }
    }

    /// Whether this viewer sees the question of a `question/requested`
    /// (other events are decided by the stream from the questions it showed).
    pub fn sees(&self, event: &SharedEvent) -> bool {
        let SessionEvent::QuestionRequested(question) = &**event else {
            return true;
        };
        match self {
            Viewer::Owner => true,
            Viewer::Person(person) => question
                .request
                .admits(person.as_ref(), event.is_escalated()),
            Viewer::Agent | Viewer::Nobody => false,
        }
    }

    /// Whether this viewer sees everything (no filtering needed).
    pub fn sees_all(&self) -> bool {
        matches!(self, Viewer::Owner)
    }

    /// The person's name, for the record's `by`.
    pub fn person_name(&self) -> Option<String> {
        match self {
            Viewer::Person(person) => Some(person.record.name.clone()),
            Viewer::Owner | Viewer::Agent | Viewer::Nobody => None,
        }
    }

    /// Refuses (403) an answer or a cancel of pending question `id` that this
    /// viewer may not give; a question no longer pending is left to the
    /// claim, which says `NOT_PENDING`.
    pub fn may_answer(
        &self,
        state: &impl PeopleHost,
        session: &str,
        id: &str,
    ) -> Result<(), ApiError> {
        match self {
            Viewer::Owner => Ok(()),
            Viewer::Agent => Err(ApiError::NotAllowed {
                code: AGENT_CANNOT_ANSWER,
                message: AGENT_CANNOT_ANSWER_WHY.to_owned(),
            }),
            Viewer::Nobody => Err(ApiError::Unauthorized),
            Viewer::Person(person) => match state.pending().admits(session, id, person.as_ref()) {
                Some(false) => Err(ApiError::NotAllowed {
                    code: NOT_IN_AUDIENCE,
                    message: format!(
                        "{} is not in this question's audience (its `audience` names \
                             another person or a role they do not hold, and it has not \
                             escalated to one of their roles)",
                        ask_user_core::error::quoted(&person.record.name)
                    ),
                }),
                Some(true) | None => Ok(()),
            },
        }
    }
}

/// Whether `person` could see a question resolved at `resolved_at_ms`: its
/// audience, widened if it was still pending when it escalated.
pub fn record_admits(
    question: &ask_user_core::wire::QuestionRequested,
    resolved_at_ms: u64,
    person: &Person,
) -> bool {
    let escalated = question
        .request
        .escalates_at_ms(question.created_at_ms)
        .is_some_and(|at| resolved_at_ms >= at);
    question.request.admits(person, escalated)
}

/// The code of a 403 for an agent token that answers, cancels or writes.
pub const AGENT_CANNOT_ANSWER: &str = "AGENT_CANNOT_ANSWER";

/// Why.
pub const AGENT_CANNOT_ANSWER_WHY: &str = "an agent token may ask (…/ask, /mcp) but never \
    answer, cancel or write to a person: a person answers with their own credential or a \
    device paired under them";

/// The code of a 403 for a person outside a question's audience.
pub const NOT_IN_AUDIENCE: &str = "NOT_IN_AUDIENCE";

/// The routes: the master credential only.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    PeopleRoom: FromRef<S>,
{
    Router::new()
        .route("/api/people", get(list_people).post(add_person))
        .route("/api/people/{name}", delete(remove_person))
        .route("/api/agents", get(list_agents).post(add_agent))
        .route("/api/agents/{name}", delete(remove_agent))
}

fn master_only(credential: &Credential) -> Result<(), ApiError> {
    match credential {
        Credential::Master => Ok(()),
        _ => Err(ApiError::Forbidden(
            "adding and removing people and agent tokens needs the master token \
             (`ask-user people`, `ask-user agents`, on the host's machine)"
                .to_owned(),
        )),
    }
}

/// `POST /api/people`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddPerson {
    name: String,
    #[serde(default)]
    roles: Vec<String>,
}

/// `POST /api/agents`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddAgent {
    name: String,
}

/// A person as listed (never their credential).
#[derive(Debug, Serialize, Deserialize)]
pub struct PersonView {
    /// Their id.
    pub id: String,
    /// Their name.
    pub name: String,
    /// Their roles.
    pub roles: Vec<String>,
    /// When they were added (Unix ms).
    pub added_at_ms: u64,
    /// Their credential: only in the answer that added them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// An agent token as listed (never the token).
#[derive(Debug, Serialize, Deserialize)]
pub struct AgentView {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was made (Unix ms).
    pub added_at_ms: u64,
    /// The token: only in the answer that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

fn person_view(person: &Person, credential: Option<String>) -> PersonView {
    PersonView {
        id: person.record.id.clone(),
        name: person.record.name.clone(),
        roles: person.record.roles.clone(),
        added_at_ms: person.record.added_at_ms,
        credential,
    }
}

fn agent_view(agent: &Agent, credential: Option<String>) -> AgentView {
    AgentView {
        id: agent.record.id.clone(),
        name: agent.record.name.clone(),
        added_at_ms: agent.record.added_at_ms,
        credential,
    }
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, body: &str) -> Result<T, ApiError> {
    serde_json::from_str(body)
        .map_err(|e| UserInteractionError::bad_request(format!("{what}: {e}")).into())
}

async fn add_person(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
    crate::server::extract::BodyText(body): crate::server::extract::BodyText,
) -> Result<(StatusCode, Json<PersonView>), ApiError> {
    master_only(&credential)?;
    let AddPerson { name, mut roles } = parse("person", &body)?;
    ask_user_core::request::check_name("name", &name)?;
    if roles.len() > MAX_ROLES {
        return Err(UserInteractionError::bad_request(format!(
            "roles: at most {MAX_ROLES}, got {}",
            roles.len()
        ))
        .into());
    }
    for (index, role) in roles.iter().enumerate() {
        ask_user_core::request::check_name(&format!("roles[{index}]"), role)?;
    }
    roles.sort();
    roles.dedup();
    let (person, secret) = state.people().add_person(name, roles)?;
    let kept = state
        .record()
        .submit(Write::PersonAdded(person.record.clone()))
        .kept()
        .await;
    if kept != Ok(true) {
        state.people().remove_person(&person.record.name);
        // Not written: a shared record has the name already (added through
        // another host a moment ago).
        return Err(kept.map_or_else(ApiError::Store, |_| taken("person", &person.record.name)));
    }
    tracing::info!(person = %person.record.id, "person added");
    Ok((
        StatusCode::CREATED,
        Json(person_view(&person, Some(secret))),
    ))
}

async fn add_agent(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
    crate::server::extract::BodyText(body): crate::server::extract::BodyText,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    master_only(&credential)?;
    let AddAgent { name } = parse("agent", &body)?;
    ask_user_core::request::check_name("name", &name)?;
    let (agent, secret) = state.people().add_agent(name)?;
    let kept = state
        .record()
        .submit(Write::AgentAdded(agent.record.clone()))
        .kept()
        .await;
    if kept != Ok(true) {
        state.people().remove_agent(&agent.record.name);
        return Err(kept.map_or_else(ApiError::Store, |_| taken("agent", &agent.record.name)));
    }
    tracing::info!(agent = %agent.record.id, "agent token added");
    Ok((StatusCode::CREATED, Json(agent_view(&agent, Some(secret)))))
}

/// `GET /api/people`.
#[derive(Debug, Serialize, Deserialize)]
pub struct PeopleList {
    /// Oldest first.
    pub people: Vec<PersonView>,
}

/// `GET /api/agents`.
#[derive(Debug, Serialize, Deserialize)]
pub struct AgentList {
    /// Oldest first.
    pub agents: Vec<AgentView>,
}

async fn list_people(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<Json<PeopleList>, ApiError> {
    master_only(&credential)?;
    let people = state
        .people()
        .people()
        .iter()
        .map(|p| person_view(p, None))
        .collect();
    Ok(Json(PeopleList { people }))
}

async fn list_agents(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
) -> Result<Json<AgentList>, ApiError> {
    master_only(&credential)?;
    let agents = state
        .people()
        .agents()
        .iter()
        .map(|a| agent_view(a, None))
        .collect();
    Ok(Json(AgentList { agents }))
}

async fn remove_person(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    master_only(&credential)?;
    let person = state.people().remove_person(&name).ok_or_else(|| {
        ApiError::NotFound(format!(
            "person {}",
            ask_user_core::error::shorten(&name, 80)
        ))
    })?;
    // Their devices go with them, at once (streams end, next request 401).
    let devices = state.devices().revoke_person(&person.record.id);
    state
        .record()
        .submit(Write::PersonRemoved {
            id: person.record.id.clone(),
            at_ms: now_ms(),
        })
        .kept()
        .await
        .map_err(ApiError::Store)?;
    if let Some(push) = state.push() {
        for device in &devices {
            push.forget(&device.record.id);
        }
    }
    tracing::info!(person = %person.record.id, devices = devices.len(), "person removed");
    Ok(StatusCode::NO_CONTENT)
}

async fn remove_agent(
    State(state): State<PeopleRoom>,
    Extension(credential): Extension<Credential>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    master_only(&credential)?;
    let agent = state.people().remove_agent(&name).ok_or_else(|| {
        ApiError::NotFound(format!(
            "agent {}",
            ask_user_core::error::shorten(&name, 80)
        ))
    })?;
    state
        .record()
        .submit(Write::AgentRemoved {
            id: agent.record.id.clone(),
            at_ms: now_ms(),
        })
        .kept()
        .await
        .map_err(ApiError::Store)?;
    tracing::info!(agent = %agent.record.id, "agent token removed");
    Ok(StatusCode::NO_CONTENT)
}

/// What the people's rules read of the host: the people and the pending
/// table. `AppState` and [`PeopleRoom`] have both, so the rules take either
/// and this room imports nothing of the state.
pub trait PeopleHost {
    /// The people and agent tokens.
    fn people(&self) -> &People;
    /// The pending table.
    fn pending(&self) -> &Arc<PendingTable>;
}

/// The people room's sub-state: what its handlers use, handed to them
/// through axum's `FromRef` (`AppState` builds it).
#[derive(Clone)]
pub struct PeopleRoom {
    /// The people and agent tokens.
    pub people: Arc<People>,
    /// Paired devices (a removed person's are revoked).
    pub devices: Arc<Devices>,
    /// The pending table.
    pub pending: Arc<PendingTable>,
    /// Push, to forget a revoked device's subscription.
    pub push: Option<Arc<dyn ForgetsDevices>>,
    /// The durable record.
    pub record: Arc<dyn Store>,
}

impl PeopleRoom {
    /// The durable record.
    pub fn record(&self) -> &Arc<dyn Store> {
        &self.record
    }

    /// Paired devices.
    pub fn devices(&self) -> &Devices {
        &self.devices
    }

    /// Push, when on.
    pub fn push(&self) -> Option<&Arc<dyn ForgetsDevices>> {
        self.push.as_ref()
    }
}

impl PeopleHost for PeopleRoom {
    fn people(&self) -> &People {
        &self.people
    }

    fn pending(&self) -> &Arc<PendingTable> {
        &self.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_256_bits_with_its_prefix_kept_hashed_and_refused_once_removed() {
        let people = People::default();
        assert!(!people.any(), "single-person mode until someone is added");
        let (ana, secret) = people
            .add_person("ana".to_owned(), vec!["oncall".to_owned()])
            .unwrap();
        assert!(people.any());
        assert!(secret.starts_with(PERSON_PREFIX));
        assert_eq!(secret.len(), PERSON_PREFIX.len() + 64, "256 bits in hex");
        assert_ne!(ana.record.credential_sha256, secret, "kept hashed");
        assert!(
            matches!(people.authenticate(&secret), Some(Bearer::Person(p)) if p.record.name == "ana")
        );
        assert!(
            people.add_person("ana".to_owned(), Vec::new()).is_err(),
            "names are unique"
        );
        let (_, token) = people.add_agent("ci".to_owned()).unwrap();
        assert!(matches!(
            people.authenticate(&token),
            Some(Bearer::Agent(_))
        ));
        let removed = people.remove_person("ana").unwrap();
        assert!(removed.removed.is_cancelled(), "their streams end");
        assert!(people.authenticate(&secret).is_none());
        assert!(people.remove_agent("ci").unwrap().removed.is_cancelled());
        assert!(people.authenticate(&token).is_none());
        assert!(
            people
                .authenticate(&format!("{PERSON_PREFIX}{}", "0".repeat(64)))
                .is_none()
        );
    }

    /// What another host added or removed, as a shared record says it.
    #[test]
    fn following_a_shared_record_adds_and_removes_at_once_and_never_brings_back_a_removal() {
        let here = People::default();
        let (ana, ana_secret) = here.add_person("ana".to_owned(), Vec::new()).unwrap();
        let (ci, _) = here.add_agent("ci".to_owned()).unwrap();
        // Added through another host: the record has their rows (and not
        // yet ana's, whose write is on its way: she stays).
        let there = People::default();
        let (lee, lee_secret) = there
            .add_person("lee".to_owned(), vec!["leads".to_owned()])
            .unwrap();
        let (bot, bot_secret) = there.add_agent("bot".to_owned()).unwrap();
        let gone = here.follow(Followed {
            people: vec![(lee.record.clone(), false)],
            agents: vec![(bot.record.clone(), false)],
        });
        assert!(gone.is_empty());
        assert!(
            matches!(here.authenticate(&lee_secret), Some(Bearer::Person(p)) if p.record.roles == ["leads"])
        );
        assert!(matches!(
            here.authenticate(&bot_secret),
            Some(Bearer::Agent(_))
        ));
        assert!(
            here.authenticate(&ana_secret).is_some(),
            "an add on its way stays"
        );

        // Removed through another host: refused here at once, streams end.
        let seen = match here.authenticate(&lee_secret) {
            Some(Bearer::Person(person)) => person,
            other => panic!("{other:?}"),
        };
        let gone = here.follow(Followed {
            people: vec![(lee.record.clone(), true), (ana.record.clone(), false)],
            agents: vec![(bot.record.clone(), true), (ci.record.clone(), false)],
        });
        assert_eq!(gone.len(), 1);
        assert!(seen.removed.is_cancelled(), "their streams end");
        assert!(here.authenticate(&lee_secret).is_none());
        assert!(here.authenticate(&bot_secret).is_none());

        // Removed here: a record read before the removal was written does
        // not bring ana back.
        here.remove_person("ana").unwrap();
        here.follow(Followed {
            people: vec![(ana.record.clone(), false)],
            agents: Vec::new(),
        });
        assert!(here.authenticate(&ana_secret).is_none());
    }
}
