use crate::ValidationError;
use std::path::Path;
use std::process::Command;

/// The release in `envoy --version` output (`envoy  version: <sha>/1.40.0/Clean/RELEASE/BoringSSL`).
pub fn envoy_release(version_output: &str) -> Option<&str> {
    let after = version_output.split("version:").nth(1)?.trim();
    let release = after.split('/').nth(1)?;
    release
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some(release)
}

/// Runs `ENVOY_BIN --version` and refuses any release but the pinned one: another release
/// could accept what the proxy rejects.
pub fn check_envoy_version(bin: &Path) -> Result<String, ValidationError> {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|source| ValidationError::EnvoyMissing {
            bin: bin.to_path_buf(),
            pinned: gateway_bootstrap::envoy_version(),
            source,
        })?;
    judge_release(bin, &String::from_utf8_lossy(&out.stdout))
}

/// The release `bin --version` printed, when it is the pinned one.
pub(crate) fn judge_release(bin: &Path, version_output: &str) -> Result<String, ValidationError> {
    let pinned = gateway_bootstrap::envoy_version();
    let Some(found) = envoy_release(version_output) else {
        return Err(ValidationError::EnvoyVersionUnknown {
            bin: bin.to_path_buf(),
            output: version_output.trim().to_string(),
        });
    };
    if found != pinned {
        return Err(ValidationError::EnvoyVersionMismatch {
            bin: bin.to_path_buf(),
            found: found.to_string(),
            pinned,
        });
    }
    Ok(found.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_release() {
        let out = "\nenvoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL\n";
        assert_eq!(envoy_release(out), Some("1.40.0"));
        assert_eq!(envoy_release("garbage"), None);
    }
}
