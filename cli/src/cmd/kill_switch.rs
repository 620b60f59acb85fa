//! `gatewayctl kill-switch`: the 503 bundle through the bucket (level 2), or one Envoy's runtime
//! flag (level 1).

use super::common::{BucketArg, DomainArg, JsonArg};
use super::live::{op_failed, print_json, store};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::aws::sdk_config;
use gateway_control::operator;
use gateway_render::contract::KILL_SWITCH_RUNTIME_KEY;
use gateway_render::RenderConfig;
use serde_json::json;
use std::io::{BufRead, IsTerminal, Write};

/// Stop all traffic: publish the 503 bundle (level 2), or flip one proxy's runtime flag (level 1)
///
/// Level 2 goes through the bucket and every sidecar, survives restarts, and holds the
/// reconciler on drift until `gatewayctl restore` (or `resume`). Level 1 (`--runtime --admin
/// URL`) acts on one Envoy within seconds and is forgotten on restart; `--off` lifts it.
#[derive(clap::Args, Debug)]
#[command(mut_arg("bucket", |a| a.help("The config bucket (level 2)")))]
pub struct Args {
    /// Level 1: set the kill-switch runtime flag through this Envoy's admin endpoint
    #[arg(long, requires = "admin")]
    pub runtime: bool,
    /// Envoy's admin for --runtime: unix:/PATH (production: unix:/run/envoy/admin.sock, through
    /// ECS Exec) or http://127.0.0.1:9901 (local runs)
    #[arg(long, value_name = "URL")]
    pub admin: Option<String>,
    /// Lift the level-1 flag (with --runtime)
    #[arg(long, requires = "runtime")]
    pub off: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub bucket: BucketArg,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub json: JsonArg,
}

fn confirm(question: &str) -> Result<bool, CmdError> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CmdError::usage(format!(
            "{question} — refusing without a terminal to confirm; pass --yes"
        )));
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

pub fn run(args: Args) -> CmdResult {
    if args.runtime {
        let admin = args.admin.clone().unwrap_or_default();
        let endpoint: gateway_envoy_admin::AdminEndpoint =
            admin
                .parse()
                .map_err(|e: gateway_envoy_admin::AdminError| {
                    CmdError::usage(format!("--admin: {e}"))
                })?;
        let value = if args.off { 0 } else { 100 };
        return block_on(async move {
            let path = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}={value}");
            let client = gateway_envoy_admin::AdminClient::new(endpoint.clone());
            let resp = client
                .post(&path)
                .await
                .map_err(|e| {
                    let why = gateway_adapters::error_chain(&e);
                    CmdError::failed(format!("{why}\nis Envoy's admin listening there?"))
                })?;
            if !resp.is_success() {
                return Err(CmdError::failed(format!(
                    "{endpoint}{path}: Envoy answered {}",
                    resp.status
                )));
            }
            let state = if value == 100 {
                "ON: every request answers 503"
            } else {
                "off"
            };
            if args.json.json {
                print_json(&json!({"level": 1, "admin": admin, "kill_switch": value == 100}))
            } else {
                println!(
                    "kill switch (level 1) on {admin}: {state}; forgotten when this Envoy restarts"
                );
                Ok(())
            }
        });
    }
    let bucket = args.bucket.get()?.to_string();
    let domain = args.domain.get()?.to_string();
    if !args.yes && !confirm(&format!("Publish the kill-switch bundle to {bucket}? Every request on every proxy will answer 503"))? {
        return Err(CmdError::failed("not confirmed; nothing published"));
    }
    block_on(async move {
        let conf = sdk_config().await;
        let store = store(&conf, bucket, true).await;
        let (version, hash) = operator::kill_switch(&store, &RenderConfig::new(domain))
            .await
            .map_err(op_failed)?;
        if args.json.json {
            print_json(&json!({"level": 2, "version_id": version, "hash": hash}))
        } else {
            println!(
                "kill switch (level 2) published as version {version} ({hash}); the sidecars deliver it within one poll.\n\
                 The reconciler now holds on drift. Undo with `gatewayctl restore`."
            );
            Ok(())
        }
    })
}
