//! `ask-user pair` and `ask-user devices`: pair a device from the terminal
//! (the link as a QR code, then the approval question), list the paired
//! devices and revoke one. Both talk to the running host on loopback with
//! the token kept in the data directory, as `ask-user ask` does.

use super::{DEFAULT_URL, HostUrl};
use crate::qr::terminal_qr;
use crate::server::devices::{DeviceList, OpenedPairing, PairingStatus, PairingView};
use clap::Args;
use reqwest::{Method, StatusCode};
use std::io::{BufRead, Write};
use std::time::Duration;

/// How often `ask-user pair` looks whether the device opened the link.
pub const PAIR_POLL: Duration = Duration::from_millis(500);

/// Where the host is and how to get in.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// The host, on loopback (pairing and revoking need the host's own token).
    // Global: `ask-user people add NAME --url …` takes it after its action too.
    #[arg(long, env = "ASK_USER_URL", default_value = DEFAULT_URL, global = true)]
    pub url: String,
    /// The host's token. Default: the token file in the data directory.
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Where the host keeps its token file.
    #[command(flatten)]
    pub data_dir: crate::data_dir::DataDirArg,
}

/// `ask-user devices`.
#[derive(Debug, Clone, Args)]
pub struct DevicesArgs {
    /// The host.
    #[command(flatten)]
    pub host: HostArgs,
    /// Revoke this device (its id, as listed): its streams close and its
    /// next request is refused.
    #[arg(long, value_name = "ID")]
    pub revoke: Option<String>,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ask-user pair`.
#[derive(Debug, Clone, Args)]
pub struct PairArgs {
    /// The host.
    #[command(flatten)]
    pub host: HostArgs,
}

/// A loopback client with the host's own token (`ask-user pair`,
/// `devices`, `people`, `agents`).
pub(crate) struct Client {
    host: HostUrl,
    token: String,
    http: reqwest::Client,
}

impl Client {
    pub(crate) fn new(args: &HostArgs) -> Result<Self, String> {
        let host = HostUrl::parse(&args.url)?;
        if !host.is_loopback() {
            return Err(format!(
                "--url: {} is not this machine; pairing and revoking devices happen on the \
                 host's own machine",
                host.base().origin().ascii_serialization()
            ));
        }
        let token = host
            .token(args.token.as_deref(), &args.data_dir, "with --token")?
            .ok_or_else(|| {
                format!(
                    "no token in {}: start the host first (`ask-user serve`)",
                    args.data_dir
                        .resolve()
                        .map(|dir| dir.display().to_string())
                        .unwrap_or_default()
                )
            })?;
        Ok(Self {
            http: host.http_client(),
            host,
            token,
        })
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
    ) -> Result<Option<T>, String> {
        self.call_with(method, path, "{}".to_owned()).await
    }

    /// `method path` with a JSON `body`: its answer (`None` for 204), or why not.
    pub(crate) async fn call_with<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: String,
    ) -> Result<Option<T>, String> {
        let url = self.host.join(path.trim_start_matches('/'));
        let response = self
            .http
            .request(method, url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("cannot reach the host at {}: {e}", self.host.base()))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| e.to_string())?;
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        if !status.is_success() {
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or(body);
            return Err(format!("the host refused ({status}): {message}"));
        }
        serde_json::from_str(&body)
            .map(Some)
            .map_err(|e| format!("the host sent an unexpected answer: {e}"))
    }
}

/// Runs `ask-user devices`.
pub async fn run_devices(args: &DevicesArgs) -> Result<(), String> {
    let client = Client::new(&args.host)?;
    if let Some(id) = &args.revoke {
        client
            .call::<serde_json::Value>(Method::DELETE, &format!("/api/devices/{id}"))
            .await?;
        println!("revoked {id}");
        return Ok(());
    }
    let list: DeviceList = client
        .call(Method::GET, "/api/devices")
        .await?
        .unwrap_or(DeviceList {
            devices: Vec::new(),
        });
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&list).expect("lists serialise")
        );
        return Ok(());
    }
    if list.devices.is_empty() {
        println!("no paired device (pair one with `ask-user pair`)");
    }
    for device in &list.devices {
        println!(
            "{}  {}  ({})  paired {}  last seen {}  {}",
            device.id,
            crate::logged::logged(&device.name),
            device.agent,
            utc_time(device.paired_at_ms),
            utc_time(device.last_seen_ms),
            device.last_answer_ms.map_or_else(
                || "never answered".to_owned(),
                |ms| format!("last answer {}", utc_time(ms))
            ),
        );
    }
    Ok(())
}

/// Runs `ask-user pair`: prints the link and its QR code, waits for a device
/// to open it, asks whether to allow it, and says what happened.
pub async fn run_pair(args: &PairArgs) -> Result<(), String> {
    let client = Client::new(&args.host)?;
    let opened: OpenedPairing = client
        .call(Method::POST, "/api/pairings")
        .await?
        .ok_or("the host sent no pairing")?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "Open this on the device (valid 5 minutes, once):\n\n{}\n{}\n",
        terminal_qr(&opened.url),
        opened.url
    );
    let _ = out.flush();
    drop(out);
    let view = loop {
        tokio::time::sleep(PAIR_POLL).await;
        let view: PairingView = client
            .call(Method::GET, &format!("/api/pairings/{}", opened.id))
            .await
            .map_err(|e| {
                if e.contains("410") {
                    "the pairing code expired before a device opened it".to_owned()
                } else {
                    e
                }
            })?
            .ok_or("the host sent no pairing")?;
        if view.status == PairingStatus::Claimed {
            break view;
        }
    };
    let name = crate::logged::logged(view.name.as_deref().unwrap_or_default()).to_string();
    let agent = view.agent.unwrap_or_default();
    print!("Allow {name} ({agent}) to answer questions? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let allow = matches!(line.trim(), "y" | "Y" | "yes" | "Yes");
    let decision = if allow { "approve" } else { "deny" };
    client
        .call::<PairingView>(
            Method::POST,
            &format!("/api/pairings/{}/{decision}", opened.id),
        )
        .await?;
    if allow {
        println!("{name} is allowed; it finishes pairing on its own");
    } else {
        println!("{name} was refused");
    }
    Ok(())
}

/// Unix ms as `YYYY-MM-DD HH:MM UTC` (days to a civil date: Howard
/// Hinnant's algorithm).
pub fn utc_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc_to_the_minute() {
        assert_eq!(utc_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_time(1_796_563_320_000), "2026-12-06 13:22 UTC");
        assert_eq!(utc_time(951_782_400_000), "2000-02-29 00:00 UTC");
    }
}
