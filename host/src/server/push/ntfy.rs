//! `--ntfy URL` (issue 22): the same notification posted to an ntfy server
//! and topic the person chose (`https://ntfy.sh/TOPIC`, or a server of their
//! own), for people who would rather not install anything. Published as
//! ntfy's JSON (so any text goes through), with a "view" action and a click
//! that open the question. Off unless given. Unlike Web Push the message is
//! not encrypted for a device: the ntfy server and whoever knows the topic
//! read it, so the topic is as good as a password.

use super::{EndpointPolicy, PushMessage};
use bytes::Bytes;
use http_body_util::Full;
use serde_json::json;
use std::time::Duration;
use url::Url;

/// Where to publish: the server's root and the topic.
#[derive(Clone, PartialEq, Eq)]
pub struct NtfyTarget {
    server: Url,
    topic: String,
}

impl std::fmt::Debug for NtfyTarget {
    // The topic is the secret: never in a log or a debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NtfyTarget")
            .field("server", &self.server.as_str())
            .finish_non_exhaustive()
    }
}

impl NtfyTarget {
    /// Parses `https://SERVER/TOPIC` (`http` only to a loopback address
    /// under `policy`'s exception).
    pub fn parse(url: &str, policy: EndpointPolicy) -> Result<Self, String> {
        let parsed = Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        let loopback = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        let scheme_ok = parsed.scheme() == "https"
            || (parsed.scheme() == "http"
                && loopback
                && policy == EndpointPolicy::AllowLoopbackHttp);
        if !scheme_ok || parsed.host_str().is_none() {
            return Err(
                "must be https://SERVER/TOPIC (e.g. https://ntfy.sh/a-long-random-topic)"
                    .to_owned(),
            );
        }
        let mut segments: Vec<&str> = parsed
            .path_segments()
            .map(Iterator::collect)
            .unwrap_or_default();
        let topic = segments.pop().unwrap_or_default().to_owned();
        let topic_ok = !topic.is_empty()
            && topic.len() <= 64
            && topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !topic_ok {
            return Err(
                "the last part of the path must be the topic: 1 to 64 of A-Z a-z 0-9 - _"
                    .to_owned(),
            );
        }
        let mut server = parsed.clone();
        server.set_path(&segments.join("/"));
        server.set_query(None);
        server.set_fragment(None);
        Ok(Self { server, topic })
    }

    /// The JSON to publish for `message`, opening the question at `base`
    /// (the `--remote` origin, else the host's loopback address); `None` for
    /// a closing follow-up (ntfy cannot close a notification).
    pub fn body(&self, message: &PushMessage, base: &str) -> Option<String> {
        let PushMessage::Ask {
            who,
            text,
            count,
            url,
            tag,
            ..
        } = message
        else {
            return None;
        };
        let click = format!("{}{url}", base.trim_end_matches('/'));
        let more = if *count > 1 {
            format!(" (+{})", count - 1)
        } else {
            String::new()
        };
        Some(
            json!({
                "topic": self.topic,
                "title": format!("{who} asks"),
                "message": format!("{text}{more}"),
                "priority": 4,
                "tags": ["question"],
                "click": click,
                "actions": [{"action": "view", "label": "Open", "url": click, "clear": true}],
                "id": tag.replace(':', "-"),
            })
            .to_string(),
        )
    }

    /// Publishes `body` with `client`; the status, or why it failed.
    pub async fn publish(&self, client: &super::PushClient, body: String) -> Result<u16, String> {
        let request = http::Request::post(self.server.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        match tokio::time::timeout(Duration::from_secs(30), client.request(request)).await {
            Ok(Ok(response)) => Ok(response.status().as_u16()),
            Ok(Err(error)) => Err(crate::logged::error_chain(&error)),
            Err(_) => Err("no answer within 30 s".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_url_splits_into_server_and_topic_and_other_urls_are_refused() {
        let target =
            NtfyTarget::parse("https://ntfy.sh/my-topic_1", EndpointPolicy::HttpsOnly).unwrap();
        assert_eq!(target.server.as_str(), "https://ntfy.sh/");
        assert_eq!(target.topic, "my-topic_1");
        let nested =
            NtfyTarget::parse("https://box.lan/ntfy/t", EndpointPolicy::HttpsOnly).unwrap();
        assert_eq!(nested.server.as_str(), "https://box.lan/ntfy");
        for bad in [
            "http://ntfy.sh/t",
            "https://ntfy.sh/",
            "https://ntfy.sh/a b",
            "ntfy.sh/t",
        ] {
            assert!(
                NtfyTarget::parse(bad, EndpointPolicy::HttpsOnly).is_err(),
                "{bad}"
            );
        }
        assert!(
            NtfyTarget::parse("http://127.0.0.1:9/t", EndpointPolicy::AllowLoopbackHttp).is_ok()
        );
        assert!(
            !format!("{target:?}").contains("my-topic"),
            "the topic stays out of debug output"
        );
    }

    #[test]
    fn an_ask_publishes_who_asks_what_and_a_view_action_that_opens_the_question() {
        let target = NtfyTarget::parse("https://ntfy.sh/t", EndpointPolicy::HttpsOnly).unwrap();
        let ask = PushMessage::ask("deploy", "q_1", "claude-code", "Ship it?", 2);
        let body: serde_json::Value =
            serde_json::from_str(&target.body(&ask, "https://box.ts.net/").unwrap()).unwrap();
        assert_eq!(body["topic"], "t");
        assert_eq!(body["title"], "claude-code asks");
        assert_eq!(body["message"], "Ship it? (+1)");
        assert_eq!(body["click"], "https://box.ts.net/?session=deploy&q=q_1");
        assert_eq!(body["actions"][0]["action"], "view");
        assert_eq!(body["actions"][0]["url"], body["click"]);
        assert!(
            target
                .body(&PushMessage::close("deploy", "q_1"), "x")
                .is_none()
        );
    }
}
