//! moto's server (`scripts/moto_server.py`, every request serialised so moto's transactions are
//! atomic like DynamoDB's) and the AWS settings that point a client or a child process at it.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

/// The test credentials and region every client of moto's server uses.
pub const ACCESS_KEY: &str = "test";
pub const REGION: &str = "us-east-1";

/// `PYTHON scripts/moto_server.py PORT --exit-with-stdin`: the server exits when the pipe to its
/// stdin closes, i.e. when the process that started it ends, even without running its cleanup.
/// The caller sets stdin to a pipe and chooses where the output goes.
pub fn command(repo: &Path, python: &Path, port: u16) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(repo.join("scripts/moto_server.py"))
        .arg(port.to_string())
        .arg("--exit-with-stdin")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// The endpoint URL of moto's server on `addr`.
pub fn endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The path that answers 200 once moto's server is up (its dashboard).
pub const READY_PATH: &str = "/moto-api/";

/// `READY_PATH` on the server at `addr`.
pub fn ready_url(addr: SocketAddr) -> String {
    format!("{}{READY_PATH}", endpoint(addr))
}

/// The environment a child process (CLI, sidecar) needs to reach moto's server at `endpoint`.
/// Set explicitly, so nothing from the user's environment sends it to a real account (remove
/// `CHILD_ENV_REMOVED` too).
pub fn aws_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
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

/// SDK configuration for moto's server at `endpoint`, built explicitly: nothing here reads or
/// changes the process environment (tests run on parallel threads).
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .empty_test_environment()
        .test_credentials()
        .region(aws_config::Region::new(REGION))
        .endpoint_url(endpoint)
        .load()
        .await
}
