//! Interface text in English and Simplified Chinese, chosen from the browser's
//! language. Only the interface is translated; the agent's text is shown as sent.

use ask_user_core::attention::Age;
use ask_user_core::wire::Outcome;
use leptos::prelude::*;

/// A supported interface language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Lang {
    /// English (the default).
    #[default]
    En,
    /// Simplified Chinese (简体中文).
    Zh,
}

impl Lang {
    /// Picks the language for a BCP 47 tag such as `zh-CN` or `en-US`: any `zh`
    /// tag gets Chinese, everything else English.
    pub fn from_tag(tag: &str) -> Self {
        let primary = tag.split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("zh") {
            Lang::Zh
        } else {
            Lang::En
        }
    }

    /// The browser's language (`navigator.language`), English when unknown.
    pub fn from_browser() -> Self {
        web_sys::window()
            .and_then(|w| w.navigator().language())
            .map(|tag| Self::from_tag(&tag))
            .unwrap_or_default()
    }

    /// The interface text of this language.
    pub fn texts(self) -> &'static Texts {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }

    /// The `lang` attribute value for interface text.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }
}

/// Every piece of interface text.
#[derive(Debug)]
pub struct Texts {
    /// Button: skip the current item.
    pub skip: &'static str,
    /// Button: submit the batch.
    pub submit: &'static str,
    /// Button: cancel the whole request.
    pub cancel: &'static str,
    /// Button: previous item.
    pub back: &'static str,
    /// Button: next item.
    pub next: &'static str,
    /// Textbox name on an optionless item.
    pub your_answer: &'static str,
    /// Textbox name on an item with options.
    pub other: &'static str,
    /// Placeholder of the "Other" box.
    pub other_placeholder: &'static str,
    /// Placeholder of the "Your answer" box.
    pub answer_placeholder: &'static str,
    /// Badge on the recommended option.
    pub recommended: &'static str,
    /// Hint on a single-select item.
    pub choose_one: &'static str,
    /// Hint on a multi-select item.
    pub choose_any: &'static str,
    /// Marker on a skipped item.
    pub skipped: &'static str,
    /// Shown while an answer is being sent.
    pub sending: &'static str,
    /// Shown while a cancel is being sent.
    pub cancelling: &'static str,
    /// Prefix of a failed POST's message.
    pub send_failed: &'static str,
    /// The collapse button's name.
    pub collapse: &'static str,
    /// The expand button's name.
    pub expand: &'static str,
    /// The plan-review strip.
    pub plan_review: &'static str,
    /// The plan-review "talk instead" action.
    pub chat_about_it: &'static str,
    /// The region's accessible name.
    pub region: &'static str,
    /// Live-region prefix for a newly arrived question.
    pub new_question: &'static str,
    /// The normal composer's textbox name.
    pub message: &'static str,
    /// The normal composer's button.
    pub send: &'static str,
    /// The transcript's accessible name.
    pub transcript: &'static str,
    /// Shown while the event stream is down.
    pub reconnecting: &'static str,
    /// Shown when the event stream was refused and will not come back by itself.
    pub disconnected: &'static str,
    /// Shown instead of the conversation when `?session=` names no session.
    pub bad_session: &'static str,
    /// Dismisses a notice.
    pub dismiss: &'static str,
    /// Shown on a request no call waits on any more; it stays answerable.
    pub detached: &'static str,
    /// Prefix of an answer that could not be sent.
    pub answer_failed: &'static str,
    /// Prefix of a cancel that could not be sent.
    pub cancel_failed: &'static str,
    /// The progress steps' accessible name.
    pub steps: &'static str,
    /// Item states in the progress steps.
    pub answered: &'static str,
    /// An item neither answered nor skipped.
    pub unanswered: &'static str,
    /// Prefix of a request that breaks core's rules and cannot be shown.
    pub cannot_show: &'static str,
    /// Button: write a message in place of finishing the batch.
    pub reply_instead: &'static str,
    /// The reply box's name.
    pub your_reply: &'static str,
    /// The reply box's placeholder.
    pub reply_placeholder: &'static str,
    /// Button: send the reply.
    pub send_reply: &'static str,
    /// Button: close the reply box.
    pub back_to_questions: &'static str,
    /// The session list's accessible name.
    pub sessions: &'static str,
    /// Button: ask for notification permission.
    pub notify_me: &'static str,
    /// Shown once notifications are allowed.
    pub notifications_on: &'static str,
    /// Shown when notifications were refused, with how to change it.
    pub notifications_blocked: &'static str,
    /// Toggle: a short sound when a question arrives.
    pub arrival_sound: &'static str,
    /// Link to the host's devices page (pair a phone), on loopback only.
    pub pair_device: &'static str,
    /// Toggle on a paired device: push notifications to it (issue 22).
    pub notify_device: &'static str,
    /// Shown when this device could not subscribe (no push service, refused).
    pub notify_device_failed: &'static str,
    /// The empty page with the demo agent (`--demo`): what starts it.
    pub empty_demo: &'static str,
    /// The empty page without one: nothing has asked yet.
    pub empty_no_questions: &'static str,
    /// The empty page without one: how to connect an agent (the command follows).
    pub empty_connect: &'static str,
    /// The link to the docs under it.
    pub empty_docs: &'static str,
    progress: fn(usize, usize) -> String,
    too_many_pending: fn(usize) -> String,
    waiting: fn(usize) -> String,
    incomplete: fn(usize) -> String,
    step: fn(usize) -> String,
    resolved: fn(Option<Outcome>) -> &'static str,
    asked_by: fn(&str) -> String,
    escalated_to: fn(&str) -> String,
    someone_asks: fn(Option<&str>) -> String,
    age: fn(Age) -> String,
    waiting_count: fn(usize) -> String,
    arrival: fn(&str, usize) -> String,
    record_outcome: fn(Outcome) -> &'static str,
}

impl Texts {
    /// Progress through a batch, e.g. "2 of 3".
    pub fn progress(&self, current: usize, total: usize) -> String {
        (self.progress)(current, total)
    }

    /// How many further requests wait behind the shown one.
    pub fn waiting(&self, count: usize) -> String {
        (self.waiting)(count)
    }

    /// Enter or Submit with items still open.
    pub fn incomplete(&self, unanswered: usize) -> String {
        (self.incomplete)(unanswered)
    }

    /// A progress step's name, e.g. "Question 2".
    pub fn step(&self, number: usize) -> String {
        (self.step)(number)
    }

    /// A request went away without this tab resolving it.
    pub fn resolved(&self, outcome: Option<Outcome>) -> &'static str {
        (self.resolved)(outcome)
    }

    /// Who asked, e.g. "asked by Claude Code".
    pub fn asked_by(&self, name: &str) -> String {
        (self.asked_by)(name)
    }

    /// A question whose audience widened, e.g. "escalated to leads".
    pub fn escalated_to(&self, role: &str) -> String {
        (self.escalated_to)(role)
    }

    /// How long ago a question was asked ("2 min ago").
    pub fn age(&self, age: Age) -> String {
        (self.age)(age)
    }

    /// A notification's title: who asks.
    pub fn someone_asks(&self, name: Option<&str>) -> String {
        (self.someone_asks)(name)
    }

    /// A session's waiting count, for screen readers ("2 waiting").
    pub fn waiting_count(&self, count: usize) -> String {
        (self.waiting_count)(count)
    }

    /// A notification's body: the new batch's first question, and how many
    /// wait in its session when more than it do.
    pub fn arrival(&self, question: Option<&str>, pending: usize) -> String {
        (self.arrival)(question.unwrap_or_default(), pending)
    }

    /// How a resolved batch ended, in the transcript ("Cancelled", …).
    pub fn record_outcome(&self, outcome: Outcome) -> &'static str {
        (self.record_outcome)(outcome)
    }

    /// A request arrived while the page already holds `limit` of them.
    pub fn too_many_pending(&self, limit: usize) -> String {
        (self.too_many_pending)(limit)
    }
}

static EN: Texts = Texts {
    skip: "Skip",
    submit: "Submit",
    cancel: "Cancel questions",
    back: "Back",
    next: "Next",
    your_answer: "Your answer",
    other: "Other",
    other_placeholder: "Other: type your own answer",
    answer_placeholder: "Type your answer",
    recommended: "Recommended",
    choose_one: "Choose one",
    choose_any: "Choose any",
    skipped: "Skipped",
    sending: "Sending…",
    cancelling: "Cancelling…",
    send_failed: "Could not send. Everything you typed is kept.",
    collapse: "Collapse questions",
    expand: "Expand questions",
    plan_review: "Plan review",
    chat_about_it: "Chat about it",
    region: "Questions from the agent",
    new_question: "New question",
    message: "Message",
    send: "Send",
    transcript: "Conversation",
    reconnecting: "Reconnecting…",
    disconnected: "Disconnected from the host. Reload the page to reconnect.",
    bad_session: "This address names no session to show.",
    dismiss: "Dismiss",
    detached: "The agent stopped waiting. Your answer is kept and reaches it when it asks again.",
    answer_failed: "Could not send your answer:",
    cancel_failed: "Could not cancel:",
    steps: "Questions",
    answered: "answered",
    unanswered: "not answered yet",
    cannot_show: "A question from the agent cannot be shown:",
    reply_instead: "Reply instead",
    your_reply: "Your reply",
    reply_placeholder: "Write to the agent instead of answering; what you answered so far is sent too",
    send_reply: "Send reply",
    back_to_questions: "Back to the questions",
    sessions: "Sessions",
    notify_me: "Notify me",
    notifications_on: "Notifications on",
    notifications_blocked: "Notifications are blocked: allow them for this site in the browser's site settings, then reload.",
    arrival_sound: "Sound",
    pair_device: "Pair a device",
    notify_device: "Notify this device",
    notify_device_failed: "This device could not turn on notifications.",
    empty_demo: "Send any message: the demo agent will ask you three questions.",
    empty_no_questions: "No questions yet",
    empty_connect: "Questions from your agents appear here. To connect Claude Code, run:",
    empty_docs: "How to connect other agents",
    progress: |current, total| format!("{current} of {total}"),
    too_many_pending: |limit| {
        format!(
            "A question from the agent cannot be shown: this page holds at most {limit} waiting requests. Answer some, then reload the page to see it."
        )
    },
    incomplete: |n| match n {
        1 => "1 question still needs an answer or Skip.".to_owned(),
        n => format!("{n} questions still need an answer or Skip."),
    },
    step: |n| format!("Question {n}"),
    resolved: |outcome| match outcome {
        Some(Outcome::Answered) => "This request was answered elsewhere.",
        Some(Outcome::Cancelled) => "This request was cancelled elsewhere.",
        Some(Outcome::Aborted) | Some(Outcome::Disposed) => {
            "The agent stopped waiting for this request."
        }
        Some(Outcome::Timeout) => "This request timed out.",
        None => "This request was already resolved elsewhere.",
    },
    asked_by: |name| format!("asked by {name}"),
    escalated_to: |role| format!("escalated to {role}"),
    someone_asks: |name| match name {
        Some(name) => format!("{name} asks"),
        None => "An agent asks".to_owned(),
    },
    waiting_count: |count| format!("{count} waiting"),
    arrival: |question, pending| match pending {
        0 | 1 => question.to_owned(),
        n => format!("{question}\n{n} questions waiting"),
    },
    age: |age| match age {
        Age::JustNow => "just now".to_owned(),
        Age::Minutes(n) => format!("{n} min ago"),
        Age::Hours(n) => format!("{n} h ago"),
        Age::Days(n) => format!("{n} d ago"),
    },
    record_outcome: |outcome| match outcome {
        Outcome::Answered => "Answered",
        Outcome::Cancelled => "Cancelled",
        Outcome::Timeout => "Timed out",
        Outcome::Aborted => "The agent stopped waiting",
        Outcome::Disposed => "The host shut down before an answer",
    },
    waiting: |count| match count {
        1 => "1 more request waiting".to_owned(),
        n => format!("{n} more requests waiting"),
    },
};

static ZH: Texts = Texts {
    skip: "跳过",
    submit: "提交",
    cancel: "取消提问",
    back: "上一题",
    next: "下一题",
    your_answer: "你的回答",
    other: "其他",
    other_placeholder: "其他：输入你自己的回答",
    answer_placeholder: "输入你的回答",
    recommended: "推荐",
    choose_one: "单选",
    choose_any: "可多选",
    skipped: "已跳过",
    sending: "正在发送…",
    cancelling: "正在取消…",
    send_failed: "发送失败。你输入的内容都已保留。",
    collapse: "收起提问",
    expand: "展开提问",
    plan_review: "计划审阅",
    chat_about_it: "先聊一聊",
    region: "智能体的提问",
    new_question: "新问题",
    message: "消息",
    send: "发送",
    transcript: "对话",
    reconnecting: "正在重新连接…",
    disconnected: "与主机的连接已断开。请刷新页面重新连接。",
    bad_session: "此地址中的会话无效，无法显示。",
    dismiss: "关闭",
    detached: "智能体已停止等待。你的回答会保留下来，它再次提问时就会收到。",
    answer_failed: "回答发送失败：",
    cancel_failed: "取消失败：",
    steps: "问题",
    answered: "已回答",
    unanswered: "尚未回答",
    cannot_show: "智能体的一个问题无法显示：",
    reply_instead: "改为回复",
    your_reply: "你的回复",
    reply_placeholder: "不逐一回答，直接给智能体写一段话；已回答的部分也会一并发送",
    send_reply: "发送回复",
    back_to_questions: "返回问题",
    sessions: "会话",
    notify_me: "通知我",
    notifications_on: "通知已开启",
    notifications_blocked: "通知已被阻止：请在浏览器的网站设置中允许此网站的通知，然后刷新页面。",
    arrival_sound: "提示音",
    pair_device: "配对设备",
    notify_device: "在此设备上通知",
    notify_device_failed: "此设备无法开启通知。",
    empty_demo: "发送任意消息：演示智能体会问你三个问题。",
    empty_no_questions: "还没有问题",
    empty_connect: "智能体的问题会显示在这里。要连接 Claude Code，请运行：",
    empty_docs: "如何连接其他智能体",
    progress: |current, total| format!("第 {current} 题，共 {total} 题"),
    too_many_pending: |limit| {
        format!(
            "智能体的一个问题无法显示：此页面最多容纳 {limit} 个等待中的请求。请先回答一些，然后刷新页面查看。"
        )
    },
    incomplete: |n| format!("还有 {n} 个问题需要回答或跳过。"),
    step: |n| format!("第 {n} 题"),
    resolved: |outcome| match outcome {
        Some(Outcome::Answered) => "此请求已在别处回答。",
        Some(Outcome::Cancelled) => "此请求已在别处取消。",
        Some(Outcome::Aborted) | Some(Outcome::Disposed) => "智能体已不再等待此请求。",
        Some(Outcome::Timeout) => "此请求已超时。",
        None => "此请求已在别处处理。",
    },
    asked_by: |name| format!("{name} 提问"),
    escalated_to: |role| format!("已升级至 {role}"),
    someone_asks: |name| match name {
        Some(name) => format!("{name} 在提问"),
        None => "智能体在提问".to_owned(),
    },
    waiting_count: |count| format!("{count} 个等待中"),
    arrival: |question, pending| match pending {
        0 | 1 => question.to_owned(),
        n => format!("{question}\n共 {n} 个问题在等待"),
    },
    age: |age| match age {
        Age::JustNow => "刚刚".to_owned(),
        Age::Minutes(n) => format!("{n} 分钟前"),
        Age::Hours(n) => format!("{n} 小时前"),
        Age::Days(n) => format!("{n} 天前"),
    },
    record_outcome: |outcome| match outcome {
        Outcome::Answered => "已回答",
        Outcome::Cancelled => "已取消",
        Outcome::Timeout => "已超时",
        Outcome::Aborted => "智能体已不再等待",
        Outcome::Disposed => "主机在回答前已关闭",
    },
    waiting: |count| format!("还有 {count} 个请求在等待"),
};

/// Context: the interface language of everything below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locale(pub Lang);

impl Locale {
    /// The interface text.
    pub fn texts(self) -> &'static Texts {
        self.0.texts()
    }
}

/// The language from context, else the browser's.
pub fn use_locale() -> Locale {
    use_context::<Locale>().unwrap_or_else(|| Locale(Lang::from_browser()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_tags_choose_chinese_and_everything_else_english() {
        assert_eq!(Lang::from_tag("zh-CN"), Lang::Zh);
        assert_eq!(Lang::from_tag("zh"), Lang::Zh);
        assert_eq!(Lang::from_tag("ZH_hans"), Lang::Zh);
        assert_eq!(Lang::from_tag("en-US"), Lang::En);
        assert_eq!(Lang::from_tag("zu"), Lang::En);
        assert_eq!(Lang::from_tag(""), Lang::En);
    }

    #[test]
    fn progress_and_waiting_read_naturally_in_both_languages() {
        assert_eq!(Lang::En.texts().progress(2, 3), "2 of 3");
        assert_eq!(Lang::En.texts().waiting(1), "1 more request waiting");
        assert_eq!(Lang::En.texts().waiting(2), "2 more requests waiting");
        assert_eq!(Lang::Zh.texts().progress(2, 3), "第 2 题，共 3 题");
    }

    #[test]
    fn a_notification_names_the_question_and_how_many_wait_only_when_more_do() {
        let (en, zh) = (Lang::En.texts(), Lang::Zh.texts());
        assert_eq!(en.arrival(Some("Which database?"), 1), "Which database?");
        assert_eq!(
            en.arrival(Some("Which database?"), 3),
            "Which database?\n3 questions waiting"
        );
        assert_eq!(
            zh.arrival(Some("选哪个？"), 2),
            "选哪个？\n共 2 个问题在等待"
        );
    }

    #[test]
    fn a_request_the_page_cannot_hold_names_the_limit_in_both_languages() {
        let (en, zh) = (Lang::En.texts(), Lang::Zh.texts());
        assert!(
            en.too_many_pending(256)
                .contains("at most 256 waiting requests")
        );
        assert!(zh.too_many_pending(256).contains("最多容纳 256 个"));
    }
}
