//! The page (frontend/): a session list over every agent's sessions (the
//! inbox), the shown session's conversation, and the tab's attention signals:
//! title, favicon badge, app badge, notifications while hidden, and an
//! optional arrival sound. An embed mounts [`Conversation`] alone and leaves
//! the page around it (its title, its notifications) alone.

use crate::attention::{Waiting, use_attention};
use crate::conversation::{Conversation, MountOptions};
use crate::i18n::{Texts, use_locale};
use crate::inbox::{INBOX_LOCK, Inbox, InboxTransport, use_inbox};
use crate::notify::{self, Permission};
use crate::session::{UseQuestionStreamReturn, use_question_stream_with};
use crate::transport::{HttpTransport, Transport};
use ask_user_core::SessionId;
use ask_user_core::attention::{self, arrivals};
use ask_user_core::display::neutralised;
use ask_user_core::transcript::{EmptyState, empty_state};
use ask_user_core::wire::SessionList;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use std::rc::Rc;

/// How the page reaches its host.
#[derive(Clone)]
pub struct PageHost {
    /// The session shown first.
    pub session: SessionId,
    /// The transport of a session.
    pub transport_for: Rc<dyn Fn(&SessionId) -> Transport>,
    /// The inbox and the lock / channel name its tabs share; `None` for a
    /// page without one (the fixtures).
    pub inbox: Option<(Rc<dyn InboxTransport>, String)>,
}

impl PageHost {
    /// The ask-user host's HTTP API, with the inbox.
    pub fn http(options: MountOptions) -> Self {
        let MountOptions {
            base_url,
            session,
            token,
        } = options;
        let inbox: Rc<dyn InboxTransport> = Rc::new(HttpTransport::new(
            base_url.clone(),
            session.clone(),
            token.clone(),
        ));
        Self {
            session,
            transport_for: Rc::new(move |session: &SessionId| {
                Transport::new(HttpTransport::new(
                    base_url.clone(),
                    session.clone(),
                    token.clone(),
                ))
            }),
            inbox: Some((inbox, INBOX_LOCK.to_owned())),
        }
    }

    /// One transport for the shown session, no inbox (fixtures, tests).
    pub fn single(transport: Transport) -> Self {
        Self {
            session: SessionId::default(),
            transport_for: Rc::new(move |_: &SessionId| transport.clone()),
            inbox: None,
        }
    }
}

/// The page over the host's HTTP API.
pub fn page_view(options: MountOptions) -> impl IntoView {
    page(PageHost::http(options))
}

/// The page over one transport, without an inbox (fixtures).
pub fn page_view_with(transport: Transport) -> impl IntoView {
    page(PageHost::single(transport))
}

/// The page over any host.
pub fn page(host: PageHost) -> impl IntoView {
    let texts = use_locale().texts();
    let shown = RwSignal::new(host.session.clone());
    let inbox = host
        .inbox
        .as_ref()
        .map(|(t, name)| use_inbox(Rc::clone(t), name));
    let shown_waiting = RwSignal::new(Waiting::default());
    let sessions = move || inbox.and_then(|i| i.sessions.get());
    use_attention(Signal::derive(move || {
        let here = shown_waiting.get();
        let list = sessions();
        let (pending, first_question) =
            attention::waiting(list.as_ref(), here.pending, here.first_question.as_deref());
        Waiting {
            pending,
            first_question,
        }
    }));
    let open = Callback::new(move |session: String| {
        if let Ok(session) = SessionId::parse(&session) {
            show_session(shown, session);
        }
    });
    if let Some(inbox) = inbox {
        use_notifications(inbox, texts, open);
        // Only a page on a host reports presence (not the fixtures).
        crate::presence::report_presence();
    }
    let transport_for = StoredValue::new_local(host.transport_for);
    // Opened on a question (`?q=ID`, a notification's tap): it is shown first.
    let opened_on = opened_question().map(|id| (host.session.clone(), id));
    let conversation = move || {
        let session = shown.get();
        let stream = use_question_stream_with(transport_for.with_value(|t| t(&session)));
        if let Some((_, id)) = opened_on.as_ref().filter(|(s, _)| *s == session) {
            stream
                .session
                .dispatch(ask_user_core::questionnaire::Action::ShowFirst {
                    question_id: id.clone(),
                });
        }
        let view_model = stream.session.view();
        crate::effect(move || {
            let now = view_model.with(|v| Waiting {
                pending: v.pending(),
                first_question: v.active.as_ref().map(|a| a.first_question.clone()),
            });
            shown_waiting.set(now);
        });
        view! {
            <EmptyPage stream texts />
            <Conversation stream />
        }
    };
    view! {
        <header class="auq-page__header">
            <h1 class="auq-page__title">"ask-user"</h1>
            <span class="auq-page__session" data-auq="session">{move || shown.get().to_string()}</span>
            {inbox.map(|_| view! { <AttentionControls texts /> })}
            <crate::pair_link::PairLink texts />
            {inbox.map(|_| view! { <crate::notify_device::NotifyDevice texts /> })}
        </header>
        {inbox.map(|inbox| view! { <SessionSwitcher inbox shown texts open /> })}
        {conversation}
    }
}

/// The one line that connects Claude Code to this host.
pub const CONNECT_COMMAND: &str = "claude mcp add ask-user -- ask-user mcp";

/// Where the docs say how to connect an agent.
pub const CONNECT_DOCS_URL: &str =
    concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/agents.md");

/// What an empty conversation says (core's [`empty_state`]): with the demo
/// agent, what starts it; otherwise that nothing has asked yet and how to
/// connect an agent.
#[component]
fn EmptyPage(stream: UseQuestionStreamReturn, texts: &'static Texts) -> impl IntoView {
    let view_model = stream.session.view();
    let state = move || {
        empty_state(
            stream.transcript_loaded.get(),
            stream.entries.with(Vec::len),
            view_model.with(|v| v.pending()),
            stream.demo_agent.get(),
        )
    };
    move || {
        // `Either`, not erased views: each `into_any()` brings its own copy
        // of tachys's type-erasure code.
        state().map(|state| match state {
            EmptyState::Demo => Either::Left(view! {
                <section class="auq-page__empty" data-auq="empty" data-empty="demo">
                    <p class="auq-page__empty-title">{texts.empty_demo}</p>
                </section>
            }),
            EmptyState::NoQuestionsYet => Either::Right(view! {
                <section class="auq-page__empty" data-auq="empty" data-empty="no-questions">
                    <h2 class="auq-page__empty-title">{texts.empty_no_questions}</h2>
                    <p>{texts.empty_connect}</p>
                    <pre class="auq-page__command"><code data-auq="connect-command">{CONNECT_COMMAND}</code></pre>
                    <p>
                        <a href=CONNECT_DOCS_URL target="_blank" rel="noopener noreferrer" data-auq="docs">
                            {texts.empty_docs}
                        </a>
                    </p>
                </section>
            }),
        })
    }
}

/// The `q` of the page's address: the question it was opened on.
fn opened_question() -> Option<String> {
    let href = web_sys::window()?.location().href().ok()?;
    let id = web_sys::Url::new(&href).ok()?.search_params().get("q")?;
    (!id.is_empty()).then_some(id)
}

/// Shows `session` and puts it in the address bar (`?session=`), keeping the
/// rest of the address but the question it was opened on (a reload shows the
/// same session).
fn show_session(shown: RwSignal<SessionId>, session: SessionId) {
    if shown.get_untracked() == session {
        return;
    }
    if let Some(window) = web_sys::window() {
        let url = web_sys::Url::new(&window.location().href().unwrap_or_default()).ok();
        if let (Some(url), Ok(history)) = (url, window.history()) {
            url.search_params().set("session", session.as_str());
            url.search_params().delete("q");
            let _ =
                history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url.href()));
        }
    }
    shown.set(session);
}

/// The inbox: every session with something waiting or recent activity, its
/// pending count and who asked; a click shows it. Drafts stay in
/// sessionStorage per question, so switching back restores them.
#[component]
fn SessionSwitcher(
    inbox: Inbox,
    shown: RwSignal<SessionId>,
    texts: &'static Texts,
    open: Callback<String>,
) -> impl IntoView {
    let entries = move || {
        let mut list = inbox.sessions.get().unwrap_or_default().sessions;
        // The shown session is always there, even before its first activity.
        let here = shown.get();
        if !list.iter().any(|s| s.id == here.as_str()) {
            list.push(ask_user_core::wire::SessionEntry {
                id: here.to_string(),
                pending: 0,
                last_activity_ms: 0,
                asked_by: None,
                first_question: None,
                newest_question: None,
            });
        }
        list
    };
    // "several": more than one session waits (a phone lists them first).
    let waiting = move || {
        let waiting = inbox.sessions.with(|list| {
            list.as_ref()
                .map_or(0, |l| l.sessions.iter().filter(|s| s.pending > 0).count())
        });
        if waiting > 1 { "several" } else { "one" }
    };
    view! {
        <nav class="auq-inbox" data-auq="inbox" aria-label=texts.sessions data-waiting=waiting>
            <ul class="auq-inbox__list">
                <For each=entries key=|s| (s.id.clone(), s.pending, s.asked_by.as_ref().map(|a| a.name.clone())) let(entry)>
                    {
                        let id = entry.id.clone();
                        let current = {
                            let id = id.clone();
                            move || shown.get().as_str() == id
                        };
                        let by = entry.asked_by.as_ref().map(|a| neutralised(a.name.clone()));
                        let pending = entry.pending;
                        let label = match &by {
                            Some(by) => format!("{} · {by}", entry.id),
                            None => entry.id.clone(),
                        };
                        let click_id = id.clone();
                        view! {
                            <li>
                                <button
                                    type="button"
                                    class="auq-inbox__session"
                                    data-auq="inbox-session"
                                    data-session=id.clone()
                                    data-pending=pending.to_string()
                                    aria-current=move || current().then_some("page")
                                    on:click=move |_| open.run(click_id.clone())
                                >
                                    <span class="auq-inbox__name">{label}</span>
                                    {(pending > 0).then(|| view! {
                                        <span class="auq-inbox__badge" data-auq="inbox-badge">
                                            <span class="auq-visually-hidden">{texts.waiting_count(pending as usize)}</span>
                                            <span aria-hidden="true">{pending}</span>
                                        </span>
                                    })}
                                </button>
                            </li>
                        }
                    }
                </For>
            </ul>
        </nav>
    }
}

/// "Notify me" (asks for permission; says how to undo a refusal) and the
/// arrival-sound toggle.
#[component]
fn AttentionControls(texts: &'static Texts) -> impl IntoView {
    let permission = RwSignal::new(notify::permission());
    let sound = RwSignal::new(notify::sound_on());
    let ask = move |_| {
        leptos::task::spawn_local(async move {
            permission.set(notify::request_permission().await);
        });
    };
    let notify_control = move || match permission.get() {
        Permission::Ask => Some(EitherOf3::A(view! {
            <button type="button" class="auq-btn auq-btn--quiet" data-auq="notify" on:click=ask>
                {texts.notify_me}
            </button>
        })),
        Permission::Granted => Some(EitherOf3::B(
            view! { <span class="auq-page__note" data-auq="notify-state">{texts.notifications_on}</span> },
        )),
        Permission::Denied => Some(EitherOf3::C(
            view! { <span class="auq-page__note" data-auq="notify-state">{texts.notifications_blocked}</span> },
        )),
        Permission::Unsupported => None,
    };
    view! {
        <div class="auq-page__controls">
            {notify_control}
            <button
                type="button"
                class="auq-btn auq-btn--quiet"
                data-auq="sound"
                aria-pressed=move || sound.get().to_string()
                on:click=move |_| {
                    let on = !sound.get_untracked();
                    notify::set_sound(on);
                    sound.set(on);
                    if on {
                        notify::beep();
                    }
                }
            >
                {texts.arrival_sound}
            </button>
        </div>
    }
}

/// One notification per new batch while this tab is hidden, from the tab that
/// holds the inbox stream (so one tab notifies, not every tab); the sound, when
/// on, on every arrival. Never moves focus: only a click on a notification does.
fn use_notifications(inbox: Inbox, texts: &'static Texts, open: Callback<String>) {
    let mut before: Option<SessionList> = None;
    crate::effect(move || {
        let now = inbox.sessions.get();
        let before = std::mem::replace(&mut before, now.clone());
        let Some(list) = now else {
            return;
        };
        if !inbox.holder.get_untracked() {
            return;
        }
        let due = arrivals(before.as_ref(), &list);
        if due.is_empty() {
            return;
        }
        if notify::sound_on() {
            notify::beep();
        }
        if document().hidden() {
            for arrival in &due {
                let title = texts.someone_asks(arrival.asked_by.as_deref());
                let body = texts.arrival(arrival.question.as_deref(), arrival.pending as usize);
                notify::notify(&title, &body, arrival, move |session| open.run(session));
            }
        }
    });
}
