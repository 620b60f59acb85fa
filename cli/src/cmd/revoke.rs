//! `gatewayctl revoke TEAM --account ID`: a grant withdrawn (the arguments are `grant`'s).

use super::grant::Args;
use super::tenancy::{check_account, open};
use super::{block_on, CmdError, CmdResult};

pub fn run(args: Args) -> CmdResult {
    check_account(&args.account)?;
    block_on(async {
        let registry = open(&args.table).await?;
        let had = registry
            .revoke(&args.team, &args.account)
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
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
