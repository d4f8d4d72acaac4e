//! Web Push to paired devices (issue 22): the host's VAPID key
//! ([`vapid`]), a device's subscription as its browser made it
//! ([`Subscription`]), the small message a notification is drawn from
//! ([`PushMessage`]), and one send ([`Sender::deliver`]): encrypted for the
//! subscription (RFC 8291, `aes128gcm`, by web-push-native), signed with the
//! VAPID key (RFC 8292), `TTL` and `Urgency` set, over hyper's client
//! (TLS through rustls on ring with the `push-tls` feature).
//!
//! A subscription's endpoint must be `https` (a push service). The one
//! exception, for tests and a push service of one's own on the same machine,
//! is `http` to a loopback address when [`EndpointPolicy::AllowLoopbackHttp`]
//! is given; anything else is refused when the device subscribes, so a
//! device cannot make the host send requests into its own network.

pub mod ntfy;
pub mod presence;
pub mod service;
pub mod vapid;

use crate::logged::error_chain;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use url::Url;
pub use vapid::VapidKey;
use web_push_native::{Auth, WebPushBuilder, p256};

/// The longest endpoint URL kept (push services use a few hundred bytes).
pub const MAX_ENDPOINT_BYTES: usize = 2048;

/// The most a message's JSON may weigh: a push service takes 4096 bytes of
/// encrypted body, which is the JSON plus 103 bytes (header, padding, tag).
pub const MAX_MESSAGE_BYTES: usize = 3072;

/// The longest option label offered as a notification's button.
pub const MAX_CHOICE_CHARS: usize = 60;

/// The longest question text a message carries (cut with `…` past it).
pub const MAX_TEXT_CHARS: usize = 400;

/// Checks a VAPID contact (`--push-contact`): a `mailto:` address or an
/// `https` URL (RFC 8292 §2.1), which a push service's operator can use to
/// reach whoever sends.
pub fn check_contact(contact: &str) -> Result<(), String> {
    let url = Url::parse(contact).map_err(|e| format!("not a URL ({e})"))?;
    match url.scheme() {
        "mailto" if url.path().contains('@') => Ok(()),
        "https" if url.host_str().is_some() => Ok(()),
        _ => Err("must be mailto:ADDRESS or an https URL".to_owned()),
    }
}

/// Where a subscription's endpoint may point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointPolicy {
    /// `https` only (every real push service).
    #[default]
    HttpsOnly,
    /// Also `http` to a loopback address (tests; a local push service).
    AllowLoopbackHttp,
}

/// A push subscription as `PushSubscription.toJSON()` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The push resource the host POSTs to.
    pub endpoint: String,
    /// The browser's keys.
    pub keys: SubscriptionKeys,
}

/// A subscription's keys, base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key (uncompressed point).
    pub p256dh: String,
    /// The 16-byte authentication secret.
    pub auth: String,
}

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// The endpoint is not a URL the host sends to.
    #[error("endpoint: {0}")]
    Endpoint(String),
    /// `keys.p256dh` is not a P-256 public key.
    #[error("keys.p256dh is not a P-256 public key (65 bytes, base64url)")]
    PublicKey,
    /// `keys.auth` is not 16 bytes.
    #[error("keys.auth is not a 16-byte secret (base64url)")]
    Auth,
}

impl Subscription {
    /// Checks the endpoint against `policy` and both keys.
    pub fn validate(&self, policy: EndpointPolicy) -> Result<(), SubscriptionError> {
        self.endpoint_url(policy)?;
        self.public_key()?;
        self.auth()?;
        Ok(())
    }

    fn endpoint_url(&self, policy: EndpointPolicy) -> Result<Url, SubscriptionError> {
        if self.endpoint.len() > MAX_ENDPOINT_BYTES {
            return Err(SubscriptionError::Endpoint(format!(
                "longer than {MAX_ENDPOINT_BYTES} bytes"
            )));
        }
        let url = Url::parse(&self.endpoint)
            .map_err(|e| SubscriptionError::Endpoint(format!("not a URL ({e})")))?;
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            _ => false,
        };
        match url.scheme() {
            "https" if url.host_str().is_some() && url.username().is_empty() => Ok(url),
            "http" if loopback && policy == EndpointPolicy::AllowLoopbackHttp => Ok(url),
            _ => Err(SubscriptionError::Endpoint(
                "must be an https URL of a push service".to_owned(),
            )),
        }
    }

    fn public_key(&self) -> Result<p256::PublicKey, SubscriptionError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(self.keys.p256dh.trim_end_matches('='))
            .map_err(|_| SubscriptionError::PublicKey)?;
        if bytes.len() != 65 {
            return Err(SubscriptionError::PublicKey);
        }
        p256::PublicKey::from_sec1_bytes(&bytes).map_err(|_| SubscriptionError::PublicKey)
    }

    fn auth(&self) -> Result<Auth, SubscriptionError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(self.keys.auth.trim_end_matches('='))
            .map_err(|_| SubscriptionError::Auth)?;
        if bytes.len() != 16 {
            return Err(SubscriptionError::Auth);
        }
        Ok(Auth::clone_from_slice(&bytes))
    }
}

/// What the service worker draws a notification from: never a token or a
/// credential, at most [`MAX_MESSAGE_BYTES`] of JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PushMessage {
    /// A batch waits: show it.
    Ask {
        /// The notification's tag (one per batch), so the close finds it.
        tag: String,
        /// The session.
        session: String,
        /// The batch's first question's id.
        question: String,
        /// Who asks (the agent's name).
        who: String,
        /// The first question's header, else its text (cut at [`MAX_TEXT_CHARS`]).
        text: String,
        /// How many questions the batch holds.
        count: usize,
        /// What a tap opens: `/?session=S&q=ID`.
        url: String,
        /// The batch's one question's id, when the notification may answer it.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        item: String,
        /// Its options, as the notification's buttons: only for a batch of one
        /// single-select question with at most two options of at most
        /// [`MAX_CHOICE_CHARS`] each (a recommended one keeps its badge word).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<String>,
    },
    /// The batch was resolved (anywhere): close its notification.
    Close {
        /// The tag of the notification to close.
        tag: String,
    },
}

impl PushMessage {
    /// The message for a batch of `count` questions in `session` whose first
    /// question is `question` with `text`, asked by `who`.
    pub fn ask(session: &str, question: &str, who: &str, text: &str, count: usize) -> Self {
        Self::ask_with_choices(session, question, who, text, count, None)
    }

    /// [`PushMessage::ask`] for a batch whose one question `item` may be
    /// answered from the notification with one of `choices` (dropped unless
    /// there are one or two, each at most [`MAX_CHOICE_CHARS`]).
    pub fn ask_with_choices(
        session: &str,
        question: &str,
        who: &str,
        text: &str,
        count: usize,
        choices: Option<(&str, &[String])>,
    ) -> Self {
        let (item, choices) = match choices {
            Some((item, labels))
                if count == 1
                    && (1..=2).contains(&labels.len())
                    && labels.iter().all(|l| l.chars().count() <= MAX_CHOICE_CHARS) =>
            {
                (item.to_owned(), labels.to_vec())
            }
            _ => (String::new(), Vec::new()),
        };
        let url = format!(
            "/?{}",
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("session", session)
                .append_pair("q", question)
                .finish()
        );
        let mut message = Self::Ask {
            tag: tag(session, question),
            session: session.to_owned(),
            question: question.to_owned(),
            who: cut(who, 64),
            text: cut(text, MAX_TEXT_CHARS),
            count,
            url,
            item,
            choices,
        };
        // JSON escapes can make short text long: cut further until it fits.
        while message.to_json().len() > MAX_MESSAGE_BYTES {
            let Self::Ask { text, .. } = &mut message else {
                break;
            };
            let shorter = text.chars().count() / 2;
            *text = cut(text, shorter.max(1));
            if shorter <= 1 {
                break;
            }
        }
        message
    }

    /// The follow-up that closes the notification of the batch that began
    /// with `question` in `session`.
    pub fn close(session: &str, question: &str) -> Self {
        Self::Close {
            tag: tag(session, question),
        }
    }

    /// The JSON sent.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a message serialises")
    }
}

fn tag(session: &str, question: &str) -> String {
    format!("ask-user:{session}:{question}")
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// How urgent a push is (RFC 8030 §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// A question waits for the person.
    High,
    /// A closing follow-up.
    Normal,
}

impl Urgency {
    fn header(self) -> &'static str {
        match self {
            Urgency::High => "high",
            Urgency::Normal => "normal",
        }
    }
}

/// What the push service said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Accepted (2xx).
    Accepted(u16),
    /// The subscription is gone (404, 410): forget it.
    Gone(u16),
    /// Refused otherwise (the status).
    Refused(u16),
    /// No answer (the error, without the URL).
    Unreachable(String),
}

/// The connector push requests go out through: TLS (rustls on ring, the
/// system's roots) or plain HTTP, with the `push-tls` feature; plain HTTP only
/// without it.
#[cfg(feature = "push-tls")]
pub type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// The connector push requests go out through: plain HTTP only (the binary
/// was built without the `push-tls` feature).
#[cfg(not(feature = "push-tls"))]
pub type Connector = HttpConnector;

/// The host's HTTP client for push services.
pub type PushClient = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// How long a push may take to connect, and to be answered.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for push services; fails only when TLS is built in and the
/// system's certificate roots cannot be read.
pub fn client() -> Result<PushClient, String> {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    #[cfg(feature = "push-tls")]
    let connector = {
        http.enforce_http(false);
        #[allow(deprecated)] // ring, as the host's TLS serving uses (see server.rs)
        let provider = rustls::crypto::ring::default_provider();
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| format!("the system's certificate roots: {e}"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http)
    };
    #[cfg(not(feature = "push-tls"))]
    let connector = http;
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

/// Who sends and how: the HTTP client and VAPID key, the JWT's `sub`, and
/// where endpoints may point.
#[derive(Debug, Clone, Copy)]
pub struct Sender<'a> {
    /// The host's HTTP client for push services.
    pub client: &'a PushClient,
    /// The VAPID key.
    pub key: &'a VapidKey,
    /// The JWT's `sub` (`mailto:` or `https:`), when there is one.
    pub contact: Option<&'a str>,
    /// Where endpoints may point.
    pub policy: EndpointPolicy,
}

impl Sender<'_> {
    /// Sends `message` to `subscription`, kept by the push service at most `ttl`.
    pub async fn deliver(
        &self,
        subscription: &Subscription,
        message: &PushMessage,
        ttl: Duration,
        urgency: Urgency,
    ) -> Delivery {
        let request = match self.build(subscription, message, ttl, urgency) {
            Ok(request) => request,
            Err(why) => return Delivery::Unreachable(why),
        };
        let (parts, body) = request.into_parts();
        let request = http::Request::from_parts(parts, Full::new(Bytes::from(body)));
        match tokio::time::timeout(ANSWER_TIMEOUT, self.client.request(request)).await {
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                match status {
                    200..=299 => Delivery::Accepted(status),
                    404 | 410 => Delivery::Gone(status),
                    _ => Delivery::Refused(status),
                }
            }
            Ok(Err(error)) => Delivery::Unreachable(error_chain(&error)),
            Err(_) => {
                Delivery::Unreachable(format!("no answer within {} s", ANSWER_TIMEOUT.as_secs()))
            }
        }
    }

    /// The request [`Sender::deliver`] sends.
    pub fn build(
        &self,
        subscription: &Subscription,
        message: &PushMessage,
        ttl: Duration,
        urgency: Urgency,
    ) -> Result<http::Request<Vec<u8>>, String> {
        let endpoint = subscription
            .endpoint_url(self.policy)
            .map_err(|e| e.to_string())?;
        let public = subscription.public_key().map_err(|e| e.to_string())?;
        let auth = subscription.auth().map_err(|e| e.to_string())?;
        let uri: http::Uri = endpoint
            .as_str()
            .parse()
            .map_err(|e| format!("endpoint: {e}"))?;
        let mut request = WebPushBuilder::new(uri, public, auth)
            .with_valid_duration(ttl)
            .build(message.to_json())
            .map_err(|e| format!("encrypting: {e}"))?;
        let audience = endpoint.origin().ascii_serialization();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        // The JWT lives as long as the message may wait, at most a day.
        let expires = now + ttl.as_secs().clamp(60, vapid::MAX_JWT_LIFE_SECS);
        let headers = request.headers_mut();
        headers.insert(
            http::header::AUTHORIZATION,
            self.key
                .authorization(&audience, expires, self.contact)
                .parse()
                .map_err(|_| "the VAPID header is not a header value".to_owned())?,
        );
        headers.insert("urgency", http::HeaderValue::from_static(urgency.header()));
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription(endpoint: &str) -> Subscription {
        let secret = p256::SecretKey::from_slice(&[7; 32]).unwrap();
        let public = secret.public_key();
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        Subscription {
            endpoint: endpoint.to_owned(),
            keys: SubscriptionKeys {
                p256dh: URL_SAFE_NO_PAD.encode(public.to_encoded_point(false).as_bytes()),
                auth: URL_SAFE_NO_PAD.encode([9u8; 16]),
            },
        }
    }

    #[test]
    fn endpoints_must_be_https_and_http_only_to_loopback_when_allowed() {
        let https = subscription("https://fcm.googleapis.com/fcm/send/abc");
        assert_eq!(https.validate(EndpointPolicy::HttpsOnly), Ok(()));
        let local = subscription("http://127.0.0.1:9/push");
        assert!(local.validate(EndpointPolicy::HttpsOnly).is_err());
        assert_eq!(local.validate(EndpointPolicy::AllowLoopbackHttp), Ok(()));
        for refused in [
            "http://192.168.1.10/push",
            "http://push.example/x",
            "ftp://127.0.0.1/x",
            "https://user@push.example/x",
            "not a url",
        ] {
            assert!(
                matches!(
                    subscription(refused).validate(EndpointPolicy::AllowLoopbackHttp),
                    Err(SubscriptionError::Endpoint(_))
                ),
                "{refused}"
            );
        }
        let mut bad_key = https.clone();
        bad_key.keys.p256dh = URL_SAFE_NO_PAD.encode([4u8; 65]);
        assert_eq!(
            bad_key.validate(EndpointPolicy::HttpsOnly),
            Err(SubscriptionError::PublicKey)
        );
        let mut bad_auth = https;
        bad_auth.keys.auth = URL_SAFE_NO_PAD.encode([1u8; 8]);
        assert_eq!(
            bad_auth.validate(EndpointPolicy::HttpsOnly),
            Err(SubscriptionError::Auth)
        );
    }

    #[test]
    fn a_message_stays_small_whatever_the_question_and_opens_the_question() {
        let huge = "\u{1}".repeat(50_000);
        let message = PushMessage::ask("deploy", "q-1", &"agent".repeat(100), &huge, 3);
        let json = message.to_json();
        assert!(json.len() <= MAX_MESSAGE_BYTES, "{}", json.len());
        let PushMessage::Ask { url, who, tag, .. } = &message else {
            panic!("an ask")
        };
        assert_eq!(url, "/?session=deploy&q=q-1");
        assert_eq!(who.chars().count(), 64);
        assert_eq!(
            PushMessage::close("deploy", "q-1"),
            PushMessage::Close { tag: tag.clone() }
        );
        let labels = ["Yes (Recommended)".to_owned(), "No".to_owned()];
        let answerable =
            PushMessage::ask_with_choices("s", "q", "a", "Ship?", 1, Some(("ship", &labels)));
        let json: serde_json::Value = serde_json::from_str(&answerable.to_json()).unwrap();
        assert_eq!(json["item"], "ship");
        assert_eq!(
            json["choices"],
            serde_json::json!(["Yes (Recommended)", "No"])
        );
        let three = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        for (count, choices) in [(1, &three[..]), (2, &labels[..]), (1, &[][..])] {
            let plain =
                PushMessage::ask_with_choices("s", "q", "a", "Ship?", count, Some(("x", choices)));
            assert!(!plain.to_json().contains("choices"), "{count} {choices:?}");
        }
        let short = PushMessage::ask("s", "q", "claude-code", "Ship it?", 1);
        assert!(short.to_json().contains(r#""text":"Ship it?""#));
    }
}
