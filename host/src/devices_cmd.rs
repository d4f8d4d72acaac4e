//! `ask-user pair` and `ask-user devices`: pair a device from the terminal
//! (the link as a QR code, then the approval question), list the paired
//! devices and revoke one. Both talk to the running host on loopback with
//! the token kept in the data directory, as `ask-user ask` does.

use crate::devices::{DeviceList, OpenedPairing, PairingStatus, PairingView};
use clap::Args;
use reqwest::{Method, StatusCode, Url};
use std::io::{BufRead, Write};
use std::time::Duration;

/// How often `ask-user pair` looks whether the device opened the link.
pub const PAIR_POLL: Duration = Duration::from_millis(500);

/// Where the host is and how to get in.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// The host, on loopback (pairing and revoking need the host's own token).
    #[arg(long, env = "ASK_USER_URL", default_value = crate::ask_cmd::DEFAULT_URL)]
    pub url: String,
    /// The host's token. Default: the token file in the data directory.
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true)]
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

struct Client {
    base: Url,
    token: String,
    http: reqwest::Client,
}

impl Client {
    fn new(args: &HostArgs) -> Result<Self, String> {
        let base = Url::parse(&args.url)
            .map_err(|e| format!("--url: {:?} is not a URL: {e}", args.url))?;
        if !crate::ask_cmd::is_loopback(&base) {
            return Err(format!(
                "--url: {} is not this machine; pairing and revoking devices happen on the \
                 host's own machine",
                base.origin().ascii_serialization()
            ));
        }
        let token = match &args.token {
            Some(token) => token.clone(),
            None => {
                let dir = args.data_dir.resolve()?;
                crate::token_file::read(&dir)?.ok_or_else(|| {
                    format!(
                        "no token in {}: start the host first (`ask-user serve`)",
                        dir.display()
                    )
                })?
            }
        };
        Ok(Self {
            http: crate::ask_cmd::http_client(&base),
            base,
            token,
        })
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
    ) -> Result<Option<T>, String> {
        let url = self.base.join(path).map_err(|e| e.to_string())?;
        let response = self
            .http
            .request(method, url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .map_err(|e| format!("cannot reach the host at {}: {e}", self.base))?;
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

/// `text` as a QR code drawn with half blocks (two rows per line), dark on
/// light with its quiet zone, for a terminal.
pub fn terminal_qr(text: &str) -> String {
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<qrcode::render::unicode::Dense1x2>()
            .dark_color(qrcode::render::unicode::Dense1x2::Light)
            .light_color(qrcode::render::unicode::Dense1x2::Dark)
            .build(),
        Err(_) => String::new(),
    }
}

/// `text` as a QR code in SVG, for the page: one path of the dark modules
/// on white, with the four-module quiet zone (drawn here rather than by the
/// crate's SVG renderer, which the one binary's size budget had no room for).
pub fn svg_qr(text: &str) -> String {
    use std::fmt::Write as _;
    let Ok(code) = qrcode::QrCode::new(text.as_bytes()) else {
        return String::new();
    };
    let width = code.width();
    let mut path = String::new();
    for (i, color) in code.to_colors().iter().enumerate() {
        if *color == qrcode::Color::Dark {
            let _ = write!(path, "M{} {}h1v1h-1z", i % width + 4, i / width + 4);
        }
    }
    let size = width + 8;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" width=\"200\" \
         height=\"200\" shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" \
         fill=\"#fff\"/><path fill=\"#000\" d=\"{path}\"/></svg>"
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

    #[test]
    fn the_terminal_qr_code_is_square_blocks_with_a_quiet_zone() {
        let qr = terminal_qr("https://box.tailnet.ts.net/pair#0123456789abcdef0123456789abcdef");
        let lines: Vec<&str> = qr.lines().collect();
        assert!(lines.len() > 10, "{qr}");
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width));
        assert!(qr.contains('▀') || qr.contains('▄'));
        let svg = svg_qr("https://box.tailnet.ts.net/pair#0123456789abcdef0123456789abcdef");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"), "{svg}");
        // A version 4 code (33 modules) and its quiet zone.
        assert!(svg.contains("viewBox=\"0 0 41 41\""), "{svg}");
        // The finder pattern's top-left corner is dark.
        assert!(svg.contains("M4 4h1v1h-1z"), "{svg}");
    }
}
