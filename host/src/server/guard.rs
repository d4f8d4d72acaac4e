//! The host's pure checks and its guard, imported by the state (which owns
//! the [`Guard`]), the devices (which match credentials) and the middleware
//! in `security` alike, so it imports nothing of the host: the rule a token
//! must follow, the `Host`/`Origin` names allowed, the `--remote` origin, the
//! client's address behind a loopback TLS front, and the per-run cookie key
//! with the throttle of wrong tokens.

use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The name of the cookie that authenticates the page on this host's port
/// (cookies are shared across ports, so two hosts must not overwrite each other's).
pub fn cookie_name(port: u16) -> String {
    format!("ask_user_auth_{port}")
}

/// Compares in constant time (the length is not secret).
pub fn token_matches(expected: &str, presented: &str) -> bool {
    expected.as_bytes().ct_eq(presented.as_bytes()).into()
}

/// Whether `name` (a host name without port, `[::1]` with brackets) is a
/// loopback name or address, or one of `allowed`.
pub fn host_name_allowed(name: &str, allowed: &[String]) -> bool {
    let name = name.to_ascii_lowercase();
    if name == "localhost" {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        if v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()) {
            return true;
        }
    } else if name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()) {
        return true;
    }
    allowed.iter().any(|a| a.eq_ignore_ascii_case(&name))
}

/// Splits `authority` (`name[:port]`) into name and optional port; `None`
/// when it is malformed.
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (name, rest) = authority.split_at(end + 1);
        match rest {
            "" => (name, None),
            _ => (name, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        }
    };
    if name.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some((name, port))
}

/// Whether the `Host` header names this host (loopback or `--allow-host`).
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    split_authority(host).is_some_and(|(name, _)| host_name_allowed(name, allowed))
}

/// Whether an `Origin` is the host's own: `http://` + a loopback name or an
/// allowed host, with the host's port.
pub fn origin_allowed(origin: &str, port: u16, allowed: &[String]) -> bool {
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    let Some((name, Some(origin_port))) = split_authority(authority) else {
        return false;
    };
    let loopback = ["127.0.0.1", "localhost", "[::1]"];
    let name_ok = loopback.iter().any(|l| l.eq_ignore_ascii_case(name))
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name));
    name_ok && origin_port.parse::<u16>().ok() == Some(port)
}

/// Where a request reaches the host, decided by [`check_host_and_origin`]
/// and kept in the request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A loopback client naming a loopback host (or an `--allow-host` name).
    Local,
    /// Through the `--remote` origin: the person's side, with a device's
    /// credential; never the master token.
    Remote,
}

/// The client's address as the host trusts it: the peer, or, when the peer is
/// loopback (the TLS front), the last address of its `X-Forwarded-For`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The origin given with `--remote https://NAME[:PORT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteOrigin {
    /// `https://name` or `https://name:port` (lowercase; 443 left out, as
    /// browsers send it in `Origin`).
    pub origin: String,
    /// The host name, lowercase.
    pub name: String,
    /// The port, 443 unless given.
    pub port: u16,
}

impl RemoteOrigin {
    /// Parses `--remote`: an `https://` origin with a host name and an
    /// optional port, nothing else (no path, query, fragment or user).
    pub fn parse(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
        if url.scheme() != "https" {
            return Err(format!(
                "{text:?}: the remote origin must be https:// (the device's cookie is Secure, \
                 and a phone allows notifications and service workers only on https)"
            ));
        }
        let Some(url::Host::Domain(name)) = url.host() else {
            return Err(format!(
                "{text:?}: give the host name the device opens (e.g. https://box.tailnet.ts.net)"
            ));
        };
        if !url.username().is_empty()
            || url.password().is_some()
            || url.path() != "/"
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(format!(
                "{text:?}: give the origin alone, https://NAME or https://NAME:PORT"
            ));
        }
        let name = name.to_ascii_lowercase();
        let port = url.port().unwrap_or(443);
        let origin = match url.port() {
            Some(port) => format!("https://{name}:{port}"),
            None => format!("https://{name}"),
        };
        Ok(Self { origin, name, port })
    }

    /// Whether a `Host` header names this origin (`NAME` means port 443).
    pub fn admits_host(&self, host: &str) -> bool {
        let Some((name, port)) = split_authority(host) else {
            return false;
        };
        let port = match port {
            Some(port) => port.parse::<u16>().ok(),
            None => Some(443),
        };
        name.eq_ignore_ascii_case(&self.name) && port == Some(self.port)
    }
}

/// The client behind `peer`: the peer itself, unless the peer is loopback
/// (a TLS front on this machine) and says, in the last `X-Forwarded-For`
/// entry (the one it added), whom it forwards for.
pub fn client_addr(peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    if !peer.is_loopback() {
        return peer;
    }
    headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .next_back()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .and_then(|last| parse_forwarded_ip(last.trim()))
        .unwrap_or(peer)
}

/// An `X-Forwarded-For` entry: an address, perhaps bracketed or with a port.
fn parse_forwarded_ip(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = entry.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .and_then(|e| e.parse().ok())
}

/// `X-Forwarded-For`.
pub(crate) const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// A burst of this many wrong tokens from one peer is answered 401 ...
pub const FAILURE_BURST: u32 = 20;
/// ... and after it, this many per second; the rest get 429.
pub const FAILURES_PER_SECOND: u32 = 5;
/// Wrong tokens from one peer are logged at most once per this interval, with
/// how many there were.
pub const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// At most this many peers are tracked; beyond, new peers share one budget.
pub const MAX_TRACKED_PEERS: usize = 1024;

/// The per-run secrets and the throttle of failed authentications.
///
/// The cookie is an HMAC-SHA256 of the token under a key drawn for this run,
/// so a cookie that reaches another server on the same host name (cookies
/// ignore ports) does not reveal the token, and it stops working when the
/// host restarts.
///
/// Wrong credentials are throttled per peer address (IPv6 per /64): a burst of
/// [`FAILURE_BURST`], then [`FAILURES_PER_SECOND`]; beyond that the answer is
/// 429 `TOO_MANY_AUTH_FAILURES` with `Retry-After`. Missing credentials are no
/// guess and are not counted.
pub struct Guard {
    cookie: String,
    failures: Mutex<HashMap<IpAddr, Bucket>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
    unlogged: u64,
    logged: Option<Instant>,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens =
            (self.tokens + elapsed * f64::from(FAILURES_PER_SECOND)).min(f64::from(FAILURE_BURST));
        self.updated = now;
    }

    /// Whole seconds until the next wrong token would be let through.
    fn wait(&self) -> u64 {
        let missing = (1.0 - self.tokens).max(0.0);
        ((missing / f64::from(FAILURES_PER_SECOND)).ceil() as u64).max(1)
    }
}

impl Guard {
    /// The guard for a run with `token`: a fresh cookie key.
    pub fn new(token: &str) -> Self {
        let key: [u8; 32] = rand::random();
        Self {
            cookie: cookie_value(&key, token),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The cookie value this run sets and accepts.
    pub fn cookie_value(&self) -> &str {
        &self.cookie
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Bucket>> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When `peer` has no wrong token left in its budget: the seconds to wait.
    pub fn throttled(&self, peer: IpAddr, now: Instant) -> Option<u64> {
        let mut table = self.table();
        let bucket = table.get_mut(&peer_key(peer))?;
        bucket.refill(now);
        (bucket.tokens < 1.0).then(|| bucket.wait())
    }

    /// Counts a wrong token from `peer`: `Err(seconds to wait)` when its budget
    /// was already spent. Logs the peer's failures once per interval.
    pub fn record_failure(&self, peer: IpAddr, now: Instant) -> Result<(), u64> {
        let mut table = self.table();
        let mut key = peer_key(peer);
        if !table.contains_key(&key) && table.len() >= MAX_TRACKED_PEERS {
            // Forget the peers whose budget is whole again; if none, the new
            // peer shares the overflow budget.
            table.retain(|_, bucket| {
                bucket.refill(now);
                bucket.tokens < f64::from(FAILURE_BURST)
            });
            if table.len() >= MAX_TRACKED_PEERS {
                key = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
            }
        }
        let bucket = table.entry(key).or_insert(Bucket {
            tokens: f64::from(FAILURE_BURST),
            updated: now,
            unlogged: 0,
            logged: None,
        });
        bucket.refill(now);
        bucket.unlogged += 1;
        if bucket
            .logged
            .is_none_or(|at| now.saturating_duration_since(at) >= FAILURE_LOG_INTERVAL)
        {
            // Logged under the middleware's name, as before the guard left it
            // (a `RUST_LOG` directive for `server::security` still finds it).
            tracing::warn!(
                target: "ask_user_host::server::security",
                peer = %key,
                failures = bucket.unlogged,
                "wrong token presented (counting failures from this address, logged at most every {} s)",
                FAILURE_LOG_INTERVAL.as_secs()
            );
            bucket.unlogged = 0;
            bucket.logged = Some(now);
        }
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(bucket.wait())
        }
    }
}

/// The throttle's key for a peer: the address, IPv4-mapped IPv6 as IPv4, and
/// other IPv6 addresses by their /64 (one host's usual share).
pub(crate) fn peer_key(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) if !v6.is_loopback() => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::V6(Ipv6Addr::from(segments))
        }
        other => other,
    }
}

/// HMAC-SHA256 of `token` under `key`, as 64 hex digits.
pub(crate) fn cookie_value(key: &[u8], token: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(b"ask-user cookie\0");
    mac.update(token.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A fresh random 128-bit token (32 hex digits).
pub fn random_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The fewest characters a given token may have: 22 characters of the 66
/// allowed carry at least 128 bits, as much as the random default.
pub const MIN_TOKEN_CHARS: usize = 22;

/// Checks a token given with `--token`, `--token-file` or `ASK_USER_TOKEN`:
/// at least [`MIN_TOKEN_CHARS`] characters of `A-Z a-z 0-9 - . _ ~` (which
/// travel in a URL, a header and a cookie unchanged).
pub fn check_token(token: &str) -> Result<(), String> {
    if let Some(bad) = token
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c)))
    {
        return Err(format!(
            "the token holds {bad:?}; use only A-Z a-z 0-9 - . _ ~"
        ));
    }
    let length = token.chars().count();
    if length < MIN_TOKEN_CHARS {
        return Err(format!(
            "the token has {length} characters; use at least {MIN_TOKEN_CHARS} of A-Z a-z 0-9 - . _ ~ \
             (128 bits; e.g. `head -c 16 /dev/urandom | xxd -p`), or give none and use the random one"
        ));
    }
    Ok(())
}
