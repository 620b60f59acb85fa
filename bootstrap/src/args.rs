use std::path::Path;

/// Where the proxy image puts the checked-in bootstrap (`bootstrap/envoy.json`).
pub const PRODUCTION_BOOTSTRAP_PATH: &str = "/etc/envoy/envoy.json";

/// The proxy's command line after the binary name.
///
/// `--reject-unknown-dynamic-fields`: live, Envoy accepts unknown fields in the CDS/RDS files
/// with only a warning; the gateway wants them rejected like validation does.
/// `--disable-hot-restart` (local runs): with hot restart, an Envoy launched from a script dies
/// with that script.
pub fn proxy_args(bootstrap_path: &Path, local: bool) -> Vec<String> {
    let mut args = vec![
        "-c".to_string(),
        bootstrap_path.display().to_string(),
        "--reject-unknown-dynamic-fields".to_string(),
    ];
    if local {
        args.push("--disable-hot-restart".to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_args_reject_unknown_fields_and_keep_hot_restart() {
        let args = proxy_args(Path::new(PRODUCTION_BOOTSTRAP_PATH), false);
        assert_eq!(
            args,
            [
                "-c",
                "/etc/envoy/envoy.json",
                "--reject-unknown-dynamic-fields"
            ]
        );
    }

    #[test]
    fn local_args_disable_hot_restart() {
        let args = proxy_args(Path::new("/tmp/b.json"), true);
        assert_eq!(
            args.last().map(String::as_str),
            Some("--disable-hot-restart")
        );
        assert!(args.iter().any(|a| a == "--reject-unknown-dynamic-fields"));
    }
}
