//! `gatewayctl grant | revoke | grants | adopt`: who may act for which team, and who owns an
//! entry (docs/design.md, "Trust boundaries"). Operators only: these commands write the registry
//! table with the gateway account's own credentials; the register function never changes grants.

use super::common::TableArg;
use super::registry::operator_principal;
use super::{block_on, CmdError, CmdResult};
use gateway_functions::aws::{dynamodb_client, sdk_config};
use gateway_functions::registry::{is_account_id, DynamoRegistry, Owner};

/// Let an AWS account register, change and delete TEAM's entries (through its registration topic)
#[derive(clap::Args, Debug)]
pub struct GrantArgs {
    /// The team
    #[arg(value_name = "TEAM")]
    pub team: String,
    /// The 12-digit AWS account id
    #[arg(long, value_name = "ACCOUNT_ID")]
    pub account: String,
    #[command(flatten)]
    pub table: TableArg,
}

/// List the grants
#[derive(clap::Args, Debug)]
pub struct GrantsArgs {
    /// One JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub table: TableArg,
}

/// Hand an entry to a new owner: a CloudFormation stack (e.g. when a team moves its stack), or
/// the operators
#[derive(clap::Args, Debug)]
pub struct AdoptArgs {
    /// The entry's id
    #[arg(value_name = "TEAM/SERVICE")]
    pub id: String,
    /// The new owning stack's ARN (its StackId)
    #[arg(
        long,
        value_name = "STACK_ARN",
        required_unless_present = "operator",
        conflicts_with = "operator"
    )]
    pub stack: Option<String>,
    /// The stack's resource (LogicalResourceId); default: the first resource of the stack that
    /// writes the entry
    #[arg(long, value_name = "LOGICAL_ID", requires = "stack")]
    pub resource: Option<String>,
    /// Hand it to the operators instead (then `gatewayctl register`/`deregister` may change it)
    #[arg(long)]
    pub operator: bool,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn grant(args: GrantArgs) -> CmdResult {
    check_account(&args.account)?;
    block_on(async {
        let conf = sdk_config().await;
        let by = gateway_functions::aws::caller_identity(&conf).await;
        let registry = open(&args.table).await;
        let new = registry
            .grant(&args.team, &args.account, &by)
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        println!(
            "{} team {} to account {}",
            if new { "granted" } else { "already granted" },
            args.team,
            args.account
        );
        Ok(())
    })
}

pub fn revoke(args: GrantArgs) -> CmdResult {
    check_account(&args.account)?;
    block_on(async {
        let registry = open(&args.table).await;
        let had = registry
            .revoke(&args.team, &args.account)
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        if !had {
            return Err(CmdError::failed(format!(
                "account {} was not granted team {}",
                args.account, args.team
            )));
        }
        println!("revoked team {} from account {}", args.team, args.account);
        Ok(())
    })
}

pub fn grants(args: GrantsArgs) -> CmdResult {
    block_on(async {
        let registry = open(&args.table).await;
        let grants = registry
            .grants()
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        if args.json {
            let doc = serde_json::json!({ "grants": grants });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(|e| CmdError::failed(e.to_string()))?
            );
            return Ok(());
        }
        let team_w = grants
            .iter()
            .map(|g| g.team.len())
            .max()
            .unwrap_or(0)
            .max(4);
        println!("{:<team_w$}  {:<12}  GRANTED BY", "TEAM", "ACCOUNT");
        for g in &grants {
            println!("{:<team_w$}  {:<12}  {}", g.team, g.account, g.granted_by);
        }
        Ok(())
    })
}

pub fn adopt(args: AdoptArgs) -> CmdResult {
    let owner = match (&args.stack, args.operator) {
        (Some(stack), false) => {
            let parts: Vec<&str> = stack.split(':').collect();
            if parts.len() < 6 || parts[2] != "cloudformation" || !parts[5].starts_with("stack/") {
                return Err(CmdError::usage(format!(
                    "--stack {stack:?} is not a CloudFormation stack ARN (arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/ID)"
                )));
            }
            Owner::Stack {
                stack_id: stack.clone(),
                logical_id: args.resource.clone(),
            }
        }
        _ => Owner::Operator {
            principal: String::new(),
        },
    };
    block_on(async {
        let registry = open(&args.table).await;
        let owner = match owner {
            Owner::Operator { .. } => Owner::operator(operator_principal().await),
            other => other,
        };
        let before = registry
            .adopt(&args.id, &owner)
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        let before = before.map_or_else(|| "no recorded owner".to_string(), |o| o.to_string());
        println!("{} now owned by {owner} (was {before})", args.id);
        Ok(())
    })
}

fn check_account(account: &str) -> CmdResult {
    if is_account_id(account) {
        Ok(())
    } else {
        Err(CmdError::usage(format!(
            "--account {account:?} is not an AWS account id (12 digits)"
        )))
    }
}

async fn open(table: &TableArg) -> DynamoRegistry {
    let conf = sdk_config().await;
    // Grants and owners do not involve the base domain.
    DynamoRegistry::new(dynamodb_client(&conf), table.table.clone(), "")
}
