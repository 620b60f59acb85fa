//! `gatewayctl public-key --out FILE`: the bundle signing key's public key, for the sidecars'
//! `--trust-key`.

use super::{block_on, CmdError, CmdResult};
use gateway_adapters::aws::sdk_config;
use gateway_adapters::signing::KmsSigner;
use std::path::PathBuf;

/// Write the bundle signing key's public key (GATEWAY_SIGNING_KEY) as PEM
///
/// SubjectPublicKeyInfo, as KMS GetPublicKey returns it: what `gateway-sidecar --trust-key FILE`
/// reads.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write the PEM (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let conf = sdk_config().await;
        let signer = KmsSigner::from_settings(&conf);
        let key = signer
            .public_key()
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        let pem = key.to_pem();
        if args.out.as_os_str() == "-" {
            print!("{pem}");
        } else {
            std::fs::write(&args.out, &pem).map_err(|e| {
                CmdError::failed(format!("{}: cannot write: {e}", args.out.display()))
            })?;
            eprintln!(
                "wrote the public key of {} ({}) to {}",
                key.name,
                key.fingerprint,
                args.out.display()
            );
        }
        Ok(())
    })
}
