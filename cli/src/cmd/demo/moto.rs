//! moto's server standing in for DynamoDB, S3 and CloudWatch, and the AWS settings that point
//! the demo's own clients and its children at it.

use super::processes::Managed;
use std::net::SocketAddr;
use std::path::Path;
use tokio::process::Command;

pub const ACCESS_KEY: &str = "test";
pub const REGION: &str = "us-east-1";

/// Starts `scripts/moto_server.py PORT --exit-with-stdin` (every request serialised, so moto's
/// transactions are atomic like DynamoDB's; it exits when the demo's pipe to it closes).
pub fn spawn(repo: &Path, python: &Path, addr: SocketAddr, log: &Path) -> Result<Managed, String> {
    let mut cmd = Command::new(python);
    cmd.arg(repo.join("scripts/moto_server.py"))
        .arg(addr.port().to_string())
        .arg("--exit-with-stdin")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    Managed::spawn("moto's server", cmd, log, true)
}

/// The endpoint URL of moto's server.
pub fn endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The environment a child (the sidecar) needs to reach moto's server. Set explicitly, so a
/// profile or session token in the user's environment cannot send it to a real account.
pub fn child_env(addr: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint(addr)),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
        ("AWS_SECRET_ACCESS_KEY", ACCESS_KEY.into()),
        ("AWS_REGION", REGION.into()),
    ]
}

/// Variables removed from a child's environment: each could point it somewhere else.
pub const CHILD_ENV_REMOVED: &[&str] = &[
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_CLOUDWATCH",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
];

/// The demo's own SDK configuration, built explicitly rather than from the process environment.
pub async fn sdk_config(addr: SocketAddr) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .empty_test_environment()
        .test_credentials()
        .region(aws_config::Region::new(REGION))
        .endpoint_url(endpoint(addr))
        .load()
        .await
}
