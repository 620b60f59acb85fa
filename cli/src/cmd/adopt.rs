//! `gatewayctl adopt TEAM/SERVICE`: an entry handed to a new owner, a CloudFormation stack or
//! the operators.

use super::common::TableArg;
use super::registry::operator_principal;
use super::tenancy::open;
use super::terminal::one_line;
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::Owner;

/// Hand an entry to a new owner: a CloudFormation stack (e.g. when a team moves its stack), or
/// the operators
#[derive(clap::Args, Debug)]
pub struct Args {
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

pub fn run(args: Args) -> CmdResult {
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
        let registry = open(&args.table).await?;
        let owner = match owner {
            Owner::Operator { .. } => Owner::operator(operator_principal().await),
            other => other,
        };
        let before = registry
            .adopt(&args.id, &owner)
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        let before = before.map_or_else(|| "no recorded owner".to_string(), |o| o.to_string());
        println!(
            "{} now owned by {owner} (was {})",
            one_line(&args.id),
            one_line(&before)
        );
        Ok(())
    })
}
