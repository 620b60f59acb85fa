//! `gatewayctl init`: the registry table (with its stream) and the versioned bucket, created if
//! absent (local runs; in AWS the gateway stack owns them).

use super::common::{BucketArg, TableArg};
use super::registry::failed;
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::create_table_if_absent;

/// Create the registry table (with its stream), the versioned bucket and the signing key if absent
///
/// For local use; in AWS the gateway stack owns them. With a bucket (`--bucket` or
/// `GATEWAY_BUCKET`), also creates the versioned config bucket. The bundle signing key is
/// `GATEWAY_SIGNING_KEY` (default alias/gateway-bundles), created as an ECC_NIST_P256 key
/// behind that alias when it does not exist.
#[derive(clap::Args, Debug)]
#[command(mut_arg("bucket", |a| a.help("The versioned config bucket to create (with versioning on) if absent")))]
pub struct Args {
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub bucket: BucketArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        // Creating the table needs no registry: no policy, no base domain, no operator.
        let conf = sdk_config().await;
        let table = &args.table.get()?;
        match create_table_if_absent(&dynamodb_client(&conf), table)
            .await
            .map_err(failed)?
        {
            true => println!("created table {table} (stream NEW_AND_OLD_IMAGES)"),
            false => println!("table {table} already exists"),
        }
        if let Some(bucket) = &args.bucket.bucket {
            let store = gateway_adapters::store::S3Store::new(
                gateway_adapters::store::s3_client(&conf),
                bucket.clone(),
            );
            match store
                .create_bucket_if_absent()
                .await
                .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?
            {
                true => println!("created bucket {bucket} (versioning on)"),
                false => println!("bucket {bucket} already exists (versioning on)"),
            }
        }
        let signer = gateway_adapters::signing::KmsSigner::from_settings(&conf);
        let key = signer.key().to_string();
        match signer
            .create_if_absent()
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?
        {
            true => println!("created signing key {key} (ECC_NIST_P256, SIGN_VERIFY)"),
            false => println!("signing key {key} already exists"),
        }
        Ok(())
    })
}
