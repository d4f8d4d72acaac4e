//! Where the shared store is and how a host reaches it: `--store` /
//! `ASK_USER_STORE` parsed into a [`Database`], and TLS to it.
//!
//! TLS is rustls (ring, as the host's own TLS), verifying the server's
//! certificate and name always, against the system's roots or the CA file
//! that libpq's `sslrootcert` (or `PGSSLROOTCERT`) names:
//!
//! | the URL says | loopback or a Unix socket | any other host |
//! |---|---|---|
//! | nothing, or `sslmode=prefer` | no TLS | TLS, required |
//! | `sslmode=require`, `verify-ca`, `verify-full` | TLS, required | TLS, required |
//! | `sslmode=disable` | no TLS | no TLS (a private network, or a tunnel) |
//!
//! Off loopback `prefer` is taken as `require`: a password and every answer
//! never cross a network in the clear because a server happened not to offer
//! TLS. libpq's `verify-ca` and `verify-full` (which tokio-postgres does not
//! parse) are both verified as `verify-full`: the name is checked too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

/// A PostgreSQL to connect to, and whether with TLS.
#[derive(Clone)]
pub struct Database {
    /// The connection settings (the password included: never printed).
    pub config: Config,
    /// Set when the connection must be TLS.
    pub tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Database {
    /// `postgresql host:port/dbname`, and `(TLS)` when it is: what a message
    /// or a log may name (never a password).
    pub fn describe(&self) -> String {
        let config = &self.config;
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(name)) => name.clone(),
            #[cfg(unix)]
            Some(Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let db = config
            .get_dbname()
            .or(config.get_user())
            .unwrap_or("postgres");
        let tls = if self.tls.is_some() { " (TLS)" } else { "" };
        format!("postgresql {host}:{port}/{db}{tls}")
    }
}

const WHAT: &str = "--store / ASK_USER_STORE";

/// Parses `--store` / `ASK_USER_STORE`: a PostgreSQL URL or key=value string,
/// with the password from `PGPASSWORD` when the text has none and the CA
/// file from `PGSSLROOTCERT` when it names none. The error never repeats the
/// text (it may hold a password).
pub fn parse_url(url: &str) -> Result<Database, String> {
    let libpq = LibpqTls::take_from(url);
    let mut config: Config = libpq.rest.parse().map_err(|_| {
        format!(
            "{WHAT}: not a PostgreSQL connection string \
             (postgres://USER@HOST:PORT/DB, the password in PGPASSWORD)"
        )
    })?;
    let root_cert = libpq
        .root_cert
        .or_else(|| std::env::var_os("PGSSLROOTCERT").map(PathBuf::from));
    let tls = if needs_tls(&config) {
        config.ssl_mode(SslMode::Require);
        Some(MakeRustlsConnect::new(client_config(root_cert.as_deref())?))
    } else {
        config.ssl_mode(SslMode::Disable);
        None
    };
    if config.get_password().is_none()
        && let Ok(password) = std::env::var("PGPASSWORD")
    {
        config.password(password);
    }
    // Hosts sharing a database may name themselves (`application_name=…`
    // in the URL) to tell their connections apart in `pg_stat_activity`.
    if config.get_application_name().is_none() {
        config.application_name("ask-user");
    }
    config.connect_timeout(Duration::from_secs(10));
    Ok(Database { config, tls })
}

/// Whether `url` carries a password (on a command line, a secret every local
/// user can read).
pub fn has_password(url: &str) -> bool {
    LibpqTls::take_from(url)
        .rest
        .parse::<Config>()
        .is_ok_and(|config| config.get_password().is_some())
}

/// Whether connections to `config` must be TLS (the module's table).
fn needs_tls(config: &Config) -> bool {
    let remote = config.get_hosts().iter().any(|host| match host {
        Host::Tcp(name) => !is_loopback(name),
        #[cfg(unix)]
        Host::Unix(_) => false,
    });
    match config.get_ssl_mode() {
        SslMode::Disable => false,
        SslMode::Require => true,
        // `Prefer` is what a text without `sslmode` gets.
        _ => remote,
    }
}

fn is_loopback(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// libpq's TLS settings that tokio-postgres does not parse, taken out of a
/// connection string: `sslrootcert=FILE` (`system`: the system's roots, as
/// without it) and `sslmode=verify-ca|verify-full` (left as `require`).
/// Everything else is left byte for byte.
#[derive(Debug, PartialEq)]
struct LibpqTls {
    rest: String,
    root_cert: Option<PathBuf>,
}

impl LibpqTls {
    fn take_from(url: &str) -> Self {
        let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
        let mut root_cert = None;
        let mut changed = false;
        let mut keep = |pair: &str| -> Option<String> {
            let Some((key, value)) = pair.split_once('=') else {
                return Some(pair.to_owned());
            };
            match key.trim() {
                "sslrootcert" => {
                    changed = true;
                    let value = value.trim();
                    let value = if is_url {
                        percent_decode(value)
                    } else {
                        value.to_owned()
                    };
                    root_cert = (value != "system").then(|| PathBuf::from(value));
                    None
                }
                "sslmode" if matches!(value.trim(), "verify-ca" | "verify-full") => {
                    changed = true;
                    Some(format!("{key}=require"))
                }
                _ => Some(pair.to_owned()),
            }
        };
        let rest = match url.split_once('?') {
            Some((base, query)) if is_url => {
                let kept: Vec<String> = query.split('&').filter_map(keep).collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
            _ if url.contains("://") => url.to_owned(),
            // key=value words; a quoted value is left as it is.
            _ => url
                .split_whitespace()
                .filter_map(|word| {
                    if word.contains('\'') {
                        Some(word.to_owned())
                    } else {
                        keep(word)
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        };
        Self {
            // Rewritten only when there was something to take out: a quoted
            // value's spaces stay as written.
            rest: if changed { rest } else { url.to_owned() },
            root_cert,
        }
    }
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// rustls verifying against `root_cert` (PEM, one or more CAs) or, without
/// it, the system's roots.
fn client_config(root_cert: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            let named = || format!("{WHAT}: sslrootcert {}", path.display());
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("{}: {e}", named()))?;
            for cert in certs {
                roots.add(cert).map_err(|e| format!("{}: {e}", named()))?;
            }
            if roots.is_empty() {
                return Err(format!("{}: no PEM certificate in it", named()));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(format!(
                    "{WHAT}: TLS to PostgreSQL, but no certificate roots on this system \
                     ({}); name the server's CA with sslrootcert=FILE in the URL or PGSSLROOTCERT",
                    found
                        .errors
                        .first()
                        .map_or_else(|| "none found".to_owned(), ToString::to_string)
                ));
            }
        }
    }
    // ring, as the host's own TLS (see server/accept.rs).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_refused_without_repeating_it() {
        let bad = parse_url("postgres://me:hunter2@[::1:5432/x").unwrap_err();
        assert!(!bad.contains("hunter2"), "{bad}");
        assert!(has_password("postgres://me:hunter2@localhost/x"));
        assert!(!has_password("postgres://me@localhost/x"));
        assert!(has_password(
            "postgres://me:hunter2@db.example/x?sslmode=verify-full"
        ));
    }

    #[test]
    fn loopback_and_unix_sockets_go_without_tls_unless_told_and_any_other_host_with_it() {
        // The decision alone: making the TLS client reads the system's roots.
        let tls = |url: &str| {
            let config: Config = LibpqTls::take_from(url)
                .rest
                .parse()
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            needs_tls(&config)
        };
        for local in [
            "postgres://me@127.0.0.1:5432/x",
            "postgres://me@localhost/x",
            "postgres://me@[::1]:5432/x",
            "postgres://me@localhost/x?sslmode=prefer",
            "host=/run/postgresql user=me",
            "postgres://me@db.example:5432/x?sslmode=disable",
        ] {
            assert!(!tls(local), "{local}");
        }
        for remote in [
            "postgres://me@db.example:5432/x",
            "postgres://me@db.example:5432/x?sslmode=prefer",
            "postgres://me@10.0.0.2/x?sslmode=verify-ca",
            "host=db.example user=me",
            "postgres://me@localhost/x?sslmode=require",
            "postgres://me@localhost/x?sslmode=verify-full&application_name=x",
        ] {
            assert!(tls(remote), "{remote}");
        }
    }

    #[test]
    fn libpqs_tls_words_are_taken_out_and_everything_else_is_left_as_written() {
        let taken = LibpqTls::take_from(
            "postgres://me@db/x?options=-c%20a%3Db&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
        );
        assert_eq!(
            taken,
            LibpqTls {
                rest: "postgres://me@db/x?options=-c%20a%3Db&sslmode=require".to_owned(),
                root_cert: Some(PathBuf::from("/etc/ca.pem")),
            }
        );
        let taken = LibpqTls::take_from("postgres://me@db/x?sslrootcert=system");
        assert_eq!(taken.rest, "postgres://me@db/x");
        assert_eq!(taken.root_cert, None);
        let taken = LibpqTls::take_from(
            "host=db user=me sslmode=verify-ca sslrootcert=/etc/ca%20s.pem dbname=x",
        );
        assert_eq!(taken.rest, "host=db user=me sslmode=require dbname=x");
        assert_eq!(taken.root_cert, Some(PathBuf::from("/etc/ca%20s.pem")));
        let untouched = "host=db  password='a  b' sslmode=require";
        assert_eq!(LibpqTls::take_from(untouched).rest, untouched);
    }

    #[test]
    fn a_ca_file_that_is_not_there_or_holds_no_certificate_is_refused_naming_it() {
        let missing =
            parse_url("postgres://me@db.example/x?sslrootcert=/nonexistent/ca.pem").unwrap_err();
        assert!(
            missing.contains("sslrootcert /nonexistent/ca.pem"),
            "{missing}"
        );
        let empty = std::env::temp_dir().join(format!("auq-ca-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let refused = parse_url(&format!(
            "postgres://me@db.example/x?sslrootcert={}",
            empty.display()
        ))
        .unwrap_err();
        std::fs::remove_file(&empty).ok();
        assert!(refused.contains("no PEM certificate"), "{refused}");
    }

    #[test]
    fn the_database_names_its_host_port_database_and_tls_never_its_password() {
        let database = parse_url("postgres://me:hunter2@127.0.0.1:6543/team").unwrap();
        assert_eq!(database.describe(), "postgresql 127.0.0.1:6543/team");
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let no_roots = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let database = Database {
            tls: Some(MakeRustlsConnect::new(no_roots)),
            ..database
        };
        assert_eq!(database.describe(), "postgresql 127.0.0.1:6543/team (TLS)");
        assert!(!format!("{database:?}").contains("hunter2"));
    }
}
