//! The client programs of the one binary: `ask-user ask`, `history`, `pair`,
//! `devices` and `mcp` (the stdio bridge). They reach a running host over
//! HTTP (`history` reads the store's file instead) and share one way to read
//! `--url` ([`HostUrl::parse`]), one token lookup ([`HostUrl::token`]) and one
//! HTTP client ([`http_client`]).
//!
//! The room's rule: nothing here reaches into the server's internals; what
//! both sides use is shared types (core's wire types, the devices API's
//! bodies, the data directory, the store's read side for `history`).

pub mod ask;
pub mod devices;
pub mod history;
pub mod mcp;
pub mod people;

use crate::data_dir::DataDirArg;
use url::{Host, Url};

/// The host the clients talk to when given none.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7411";

/// A host's address as given on `--url`: its base URL (plain http, no query
/// or fragment, the path ending in `/`) and a `?token=` it carried (the URL
/// `ask-user serve` prints works as it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostUrl {
    base: Url,
    url_token: Option<String>,
}

impl HostUrl {
    /// Reads `--url`. Messages name the flag, for the person who typed it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut base =
            Url::parse(text).map_err(|e| format!("--url: {text:?} is not a URL: {e}"))?;
        if base.scheme() != "http" {
            return Err(format!(
                "--url: the host speaks plain http on loopback, not {:?}",
                base.scheme()
            ));
        }
        let url_token = base
            .query_pairs()
            .find(|(key, _)| key == "token")
            .map(|(_, value)| value.into_owned());
        base.set_query(None);
        base.set_fragment(None);
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Self { base, url_token })
    }

    /// The host's base URL (`http://127.0.0.1:7411/`).
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The same host at another base (the one a data directory's lock names).
    pub fn with_base(&self, base: Url) -> Self {
        Self {
            base,
            url_token: self.url_token.clone(),
        }
    }

    /// `path` (relative, e.g. `api/devices`) on this host.
    pub fn join(&self, path: &str) -> Url {
        self.base
            .join(path)
            .expect("a base URL with a path takes a relative path")
    }

    /// Whether this host is on this machine (see [`is_loopback`]).
    pub fn is_loopback(&self) -> bool {
        is_loopback(&self.base)
    }

    /// Whether a token came with the URL (`?token=`).
    pub fn carries_token(&self) -> bool {
        self.url_token.is_some()
    }

    /// The token to send: `given` (a `--token` flag or `ASK_USER_TOKEN`),
    /// else the URL's `?token=`, else, for a loopback host only, the token
    /// file in the data directory; `Ok(None)` when that file is not written
    /// yet. The kept token opens every question of this user's host, so it
    /// never travels to (or through a proxy towards) another machine: for
    /// such a host without a token this fails, naming `ways` (how this
    /// command takes one).
    pub fn token(
        &self,
        given: Option<&str>,
        data_dir: &DataDirArg,
        ways: &str,
    ) -> Result<Option<String>, String> {
        if let Some(token) = given.or(self.url_token.as_deref()) {
            return Ok(Some(token.to_owned()));
        }
        if !self.is_loopback() {
            return Err(format!(
                "--url: {} is not this machine; the token kept in the data directory is sent \
                 only to a loopback host. Give that host's token {ways}",
                self.base.origin().ascii_serialization()
            ));
        }
        crate::token_file::read(&data_dir.resolve()?)
    }

    /// The HTTP client for this host (see [`http_client`]).
    pub fn http_client(&self) -> reqwest::Client {
        http_client(&self.base)
    }
}

/// Whether `url` names this machine: `localhost` or a loopback address.
/// Not `*.localhost`: a resolver may send those names anywhere, and the kept
/// token goes only where this decides.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The HTTP client for `url`: proxy variables are ignored for a loopback
/// host (a proxy would see the token and the answers, or not reach loopback).
pub fn http_client(url: &Url) -> reqwest::Client {
    let builder = reqwest::Client::builder();
    let builder = if is_loopback(url) {
        builder.no_proxy()
    } else {
        builder
    };
    builder.build().expect("a plain-HTTP client always builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_data_dir() -> DataDirArg {
        DataDirArg {
            data_dir: Some(std::env::temp_dir().join("ask-user-client-test-no-such-dir")),
        }
    }

    #[test]
    fn a_url_keeps_its_path_as_a_base_and_lends_its_token() {
        let url = HostUrl::parse("http://127.0.0.1:7411/?token=abc#frag").unwrap();
        assert_eq!(url.base().as_str(), "http://127.0.0.1:7411/");
        assert!(url.carries_token());
        assert_eq!(
            url.token(None, &no_data_dir(), "").unwrap().as_deref(),
            Some("abc")
        );
        // A given token comes first.
        assert_eq!(
            url.token(Some("given"), &no_data_dir(), "")
                .unwrap()
                .as_deref(),
            Some("given")
        );
        let behind = HostUrl::parse("http://localhost:8080/ask-user").unwrap();
        assert_eq!(behind.base().as_str(), "http://localhost:8080/ask-user/");
        assert_eq!(
            behind.join("api/devices").as_str(),
            "http://localhost:8080/ask-user/api/devices"
        );
    }

    #[test]
    fn only_plain_http_urls_are_accepted() {
        for bad in [
            "https://127.0.0.1:7411",
            "ftp://127.0.0.1",
            "127.0.0.1:7411",
        ] {
            let error = HostUrl::parse(bad).unwrap_err();
            assert!(error.starts_with("--url: "), "{bad}: {error}");
        }
    }

    #[test]
    fn the_kept_token_never_goes_to_another_machine() {
        let remote = HostUrl::parse("http://box.lan:7411").unwrap();
        let error = remote
            .token(None, &no_data_dir(), "with --token")
            .unwrap_err();
        assert!(
            error.contains("http://box.lan:7411 is not this machine")
                && error.ends_with("with --token"),
            "{error}"
        );
        // Given one, it goes there.
        assert_eq!(
            remote
                .token(Some("theirs"), &no_data_dir(), "")
                .unwrap()
                .as_deref(),
            Some("theirs")
        );
        // On loopback with no token file yet: none.
        let local = HostUrl::parse("http://127.0.0.1:7411").unwrap();
        assert_eq!(local.token(None, &no_data_dir(), "").unwrap(), None);
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for local in [
            "http://127.0.0.1:7411",
            "http://127.9.9.9",
            "http://[::1]:7411",
            "http://localhost:7411",
            "http://LOCALHOST",
        ] {
            assert!(is_loopback(&Url::parse(local).unwrap()), "{local}");
        }
        for remote in [
            "http://10.0.0.2",
            "http://example.com",
            "http://x.localhost",
            "http://[::2]",
        ] {
            assert!(!is_loopback(&Url::parse(remote).unwrap()), "{remote}");
        }
    }
}
