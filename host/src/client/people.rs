//! `ask-user people` and `ask-user agents` (issue 24): add a person (their
//! credential printed once), list, remove; the same for agent tokens. They
//! talk to the running host on loopback with its own token, as `ask-user
//! devices` does: the host keeps only each credential's SHA-256.

use super::devices::{Client, HostArgs};
use ask_user_core::display::{escape_json_for_terminal, neutralise_for_terminal};
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

/// `ask-user people`.
#[derive(Debug, Clone, Args)]
pub struct PeopleArgs {
    /// The host.
    #[command(flatten)]
    pub host: HostArgs,
    /// What to do.
    #[command(subcommand)]
    pub action: PeopleAction,
}

/// `ask-user people …`.
#[derive(Debug, Clone, Subcommand)]
pub enum PeopleAction {
    /// Add a person: prints their credential once (give it to them; the
    /// host keeps only its hash). The host leaves single-person mode.
    Add {
        /// Their name (letters, digits, '.', '_', '-'), as audiences name them.
        name: String,
        /// A role they hold (repeat for several).
        #[arg(long = "role", value_name = "ROLE")]
        roles: Vec<String>,
    },
    /// List the people (never their credentials).
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a person: their credential and their devices stop working at once.
    Remove {
        /// Their name.
        name: String,
    },
}

/// `ask-user agents`.
#[derive(Debug, Clone, Args)]
pub struct AgentsArgs {
    /// The host.
    #[command(flatten)]
    pub host: HostArgs,
    /// What to do.
    #[command(subcommand)]
    pub action: AgentsAction,
}

/// `ask-user agents …`.
#[derive(Debug, Clone, Subcommand)]
pub enum AgentsAction {
    /// Make an agent token: prints it once. It may ask, never answer.
    Add {
        /// Its name (letters, digits, '.', '_', '-').
        name: String,
    },
    /// List the agent tokens (never the tokens).
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove an agent token: refused from its next request on.
    Remove {
        /// Its name.
        name: String,
    },
}

/// `name` as one URL path segment.
fn segment(name: &str) -> String {
    url::form_urlencoded::byte_serialize(name.as_bytes()).collect()
}

fn print_list(list: &Value, key: &str, json: bool, empty: &str, line: impl Fn(&Value) -> String) {
    if json {
        let pretty = serde_json::to_string_pretty(list).expect("values serialise");
        println!("{}", escape_json_for_terminal(&pretty));
        return;
    }
    let items = list[key].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("{empty}");
    }
    for item in &items {
        println!("{}", line(item));
    }
}

fn text(value: &Value) -> String {
    neutralise_for_terminal(value.as_str().unwrap_or_default()).into_owned()
}

/// Runs `ask-user people`.
pub async fn run_people(args: &PeopleArgs) -> Result<(), String> {
    let client = Client::new(&args.host)?;
    match &args.action {
        PeopleAction::Add { name, roles } => {
            let added: Value = client
                .call_with(
                    Method::POST,
                    "/api/people",
                    json!({"name": name, "roles": roles}).to_string(),
                )
                .await?
                .unwrap_or_default();
            println!(
                "added {} ({}); their credential, shown only now:\n{}",
                text(&added["name"]),
                text(&added["id"]),
                text(&added["credential"])
            );
            println!("they send it as `Authorization: Bearer …`, and pair their devices with it");
        }
        PeopleAction::List { json } => {
            let list: Value = client
                .call_with(Method::GET, "/api/people", String::new())
                .await?
                .unwrap_or_default();
            print_list(
                &list,
                "people",
                *json,
                "no people: single-person mode (`ask-user people add NAME`)",
                |p| {
                    let roles: Vec<String> = p["roles"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(text)
                        .collect();
                    format!(
                        "{}  {}  roles: {}",
                        text(&p["id"]),
                        text(&p["name"]),
                        roles.join(", ")
                    )
                },
            );
        }
        PeopleAction::Remove { name } => {
            client
                .call_with::<Value>(
                    Method::DELETE,
                    &format!("/api/people/{}", segment(name)),
                    String::new(),
                )
                .await?;
            println!("removed {}", neutralise_for_terminal(name));
        }
    }
    Ok(())
}

/// Runs `ask-user agents`.
pub async fn run_agents(args: &AgentsArgs) -> Result<(), String> {
    let client = Client::new(&args.host)?;
    match &args.action {
        AgentsAction::Add { name } => {
            let added: Value = client
                .call_with(
                    Method::POST,
                    "/api/agents",
                    json!({"name": name}).to_string(),
                )
                .await?
                .unwrap_or_default();
            println!(
                "added agent {} ({}); its token, shown only now:\n{}",
                text(&added["name"]),
                text(&added["id"]),
                text(&added["credential"])
            );
            println!("it may ask (…/ask, /mcp as `Authorization: Bearer …`), never answer");
        }
        AgentsAction::List { json } => {
            let list: Value = client
                .call_with(Method::GET, "/api/agents", String::new())
                .await?
                .unwrap_or_default();
            print_list(
                &list,
                "agents",
                *json,
                "no agent tokens (`ask-user agents add NAME`)",
                |a| format!("{}  {}", text(&a["id"]), text(&a["name"])),
            );
        }
        AgentsAction::Remove { name } => {
            client
                .call_with::<Value>(
                    Method::DELETE,
                    &format!("/api/agents/{}", segment(name)),
                    String::new(),
                )
                .await?;
            println!("removed agent {}", neutralise_for_terminal(name));
        }
    }
    Ok(())
}
