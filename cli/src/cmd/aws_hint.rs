//! What an AWS failure means to a person: what was tried (table or bucket, region, endpoint,
//! credentials source), what the failure means, and the next step. The cause chain the SDK
//! gave stays available with `-v`.
//!
//! The failure is recognised from its cause chain's text (the SDK's error kinds do not survive
//! the adapters' own error types as values), so an unrecognised failure is printed as it is.

/// What `gatewayctl` was pointed at, read as the SDK reads it: the standard variables.
struct Target {
    table: Option<String>,
    bucket: Option<String>,
    region: String,
    endpoint: String,
    credentials: String,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The value of `--flag VALUE` or `--flag=VALUE` on the command line, else the variable.
fn flag_or_var(args: &[String], flag: &str, env: &str) -> Option<String> {
    let long = format!("--{flag}");
    let eq = format!("--{flag}=");
    args.iter()
        .enumerate()
        .find_map(|(i, a)| {
            if *a == long {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix(&eq).map(str::to_string)
            }
        })
        .or_else(|| var(env))
}

impl Target {
    fn read() -> Target {
        let args: Vec<String> = std::env::args().collect();
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .map(|r| format!("region {r}"))
            .unwrap_or_else(|| {
                "no region in AWS_REGION (the profile's or the instance's, if any)".into()
            });
        let endpoint = ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
            .iter()
            .find_map(|name| var(name).map(|v| format!("endpoint {v} ({name})")))
            .unwrap_or_else(|| "AWS itself (AWS_ENDPOINT_URL is unset)".into());
        let credentials = if var("AWS_ACCESS_KEY_ID").is_some() {
            "credentials from AWS_ACCESS_KEY_ID".to_string()
        } else if let Some(profile) = var("AWS_PROFILE") {
            format!("credentials of profile {profile} (AWS_PROFILE)")
        } else if var("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
            "credentials from the web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)".to_string()
        } else {
            "the default credential chain (no AWS_ACCESS_KEY_ID or AWS_PROFILE set)".to_string()
        };
        Target {
            table: flag_or_var(&args, "table", "GATEWAY_TABLE"),
            bucket: flag_or_var(&args, "bucket", "GATEWAY_BUCKET"),
            region,
            endpoint,
            credentials,
        }
    }

    fn tried(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.table {
            parts.push(format!("table {t}"));
        }
        if let Some(b) = &self.bucket {
            parts.push(format!("bucket {b}"));
        }
        parts.push(self.region.clone());
        parts.push(self.endpoint.clone());
        parts.push(self.credentials.clone());
        parts.join(", ")
    }

    fn local(&self) -> bool {
        !self.endpoint.starts_with("AWS itself")
    }
}

/// (what it means, the next step) for a recognised failure.
fn classify(chain: &str, target: &Target) -> Option<(String, String)> {
    let has = |needles: &[&str]| needles.iter().any(|n| chain.contains(n));
    // Only the SDK's failures (its error kinds as they print): a backend name that does not
    // resolve, or an Envoy admin that refuses, is not an AWS failure.
    if !has(&[
        "dispatch failure",
        "service error",
        "timeout error",
        "response error",
        "loading credentials",
    ]) {
        return None;
    }
    if has(&["dns error", "failed to lookup address", "Name or service not known"]) {
        return Some(if target.local() {
            (
                format!("the {} does not resolve", target.endpoint),
                "check AWS_ENDPOINT_URL (for a local run, moto's address, e.g. http://127.0.0.1:5000)".into(),
            )
        } else {
            (
                "AWS's endpoint does not resolve from here (no network or no DNS?)".into(),
                "check the network and AWS_REGION, or set AWS_ENDPOINT_URL to use a local endpoint".into(),
            )
        });
    }
    if has(&["Connection refused", "ConnectionRefused", "tcp connect error"]) {
        return Some((
            format!("nothing answers at the {}", target.endpoint),
            "start it (`gatewayctl demo` starts moto) or check AWS_ENDPOINT_URL".into(),
        ));
    }
    if has(&[
        "loading credentials",
        "no credentials",
        "NoCredentials",
        "failed to load IMDS",
        "the credential provider was not enabled",
    ]) {
        return Some((
            "no AWS credentials were found (environment, profile, web identity, container and instance metadata were tried)".into(),
            "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (against moto any values do)".into(),
        ));
    }
    if has(&[
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "security token included in the request is invalid",
        "ExpiredToken",
    ]) {
        return Some((
            "AWS refused these credentials (unknown, expired or for another partition)".into(),
            "refresh them (e.g. `aws sso login`) or check AWS_PROFILE / AWS_ACCESS_KEY_ID".into(),
        ));
    }
    if has(&["AccessDenied", "not authorized to perform"]) {
        return Some((
            "these credentials may not do this".into(),
            "use the operators' role (infra/README.md lists what it may do)".into(),
        ));
    }
    if has(&["a region must be set", "No region", "MissingRegion"]) {
        return Some((
            "no AWS region is set".into(),
            "set AWS_REGION (e.g. us-east-1)".into(),
        ));
    }
    if has(&["timed out", "TimeoutError", "operation timeout"]) {
        return Some((
            format!("no answer in time from the {}", target.endpoint),
            "check the network and AWS_ENDPOINT_URL, then try again".into(),
        ));
    }
    None
}

/// `message` with what was tried, what it means and the next step when it is a recognised AWS
/// failure: the first line (what the command was doing) stays, the SDK's cause chain only with
/// `verbose`. Anything else is returned as it is.
pub fn explain(message: &str, verbose: bool) -> String {
    let target = Target::read();
    let Some((means, next)) = classify(message, &target) else {
        return message.to_string();
    };
    // "temporarily unable to complete: scanning table t: dispatch failure: …": what it was
    // doing is the text before the SDK's part.
    let doing = ["dispatch failure", "service error", "other:", "io error", "timeout"]
        .iter()
        .filter_map(|m| message.find(m))
        .min()
        .map(|i| message[..i].trim_end_matches([' ', ':']))
        .filter(|d| !d.is_empty())
        .unwrap_or("the AWS call failed");
    let doing = doing.trim_start_matches("temporarily unable to complete: ");
    let mut out = format!(
        "{doing}: {means}\ntried: {}\nnext: {next}",
        target.tried()
    );
    if verbose {
        out.push_str(&format!("\ncause: {message}"));
    } else {
        out.push_str("\n(-v shows the whole cause)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(endpoint: &str) -> Target {
        Target {
            table: Some("t".into()),
            bucket: None,
            region: "region us-east-1".into(),
            endpoint: endpoint.into(),
            credentials: "credentials from AWS_ACCESS_KEY_ID".into(),
        }
    }

    #[test]
    fn recognises_each_failure_and_says_the_next_step() {
        let local = target("endpoint http://x.invalid:1 (AWS_ENDPOINT_URL)");
        let aws = target("AWS itself (AWS_ENDPOINT_URL is unset)");
        let cases: [(&str, &Target, &str); 6] = [
            ("dispatch failure: io error: client error (Connect): dns error: failed to lookup address information", &local, "check AWS_ENDPOINT_URL"),
            ("dispatch failure: io error: dns error: failed to lookup address information", &aws, "set AWS_ENDPOINT_URL"),
            ("dispatch failure: io error: tcp connect error: Connection refused (os error 111)", &local, "gatewayctl demo"),
            ("dispatch failure: other: an error occurred while loading credentials: failed to load IMDS session token", &aws, "AWS_PROFILE"),
            ("service error: UnrecognizedClientException: The security token included in the request is invalid", &aws, "aws sso login"),
            ("service error: AccessDeniedException: User is not authorized to perform dynamodb:Scan", &aws, "operators' role"),
        ];
        for (chain, t, next) in cases {
            let (_, step) = classify(chain, t).unwrap_or_else(|| panic!("unrecognised: {chain}"));
            assert!(step.contains(next), "{chain}: {step}");
        }
        assert!(classify("entry billing/x: routes[0].path: must start with /", &aws).is_none());
        // Not the SDK's: a backend name, Envoy's admin.
        assert!(classify("backend: no-such-name.invalid does not resolve: dns error", &aws).is_none());
        assert!(classify("cannot connect to 127.0.0.1:9: Connection refused", &local).is_none());
    }

    #[test]
    fn an_unrecognised_message_is_unchanged_and_a_recognised_one_keeps_what_it_was_doing() {
        assert_eq!(explain("billing/x is not registered", false), "billing/x is not registered");
        let out = explain(
            "temporarily unable to complete: scanning table t: dispatch failure: io error: tcp connect error: Connection refused",
            false,
        );
        let first = out.lines().next().unwrap_or_default();
        assert!(first.starts_with("scanning table t: nothing answers at"), "{out}");
        assert!(out.contains("\ntried: ") && out.contains("\nnext: "), "{out}");
        assert!(!out.contains("tcp connect error"), "the chain only with -v: {out}");
        assert!(explain("x: dispatch failure: Connection refused", true).contains("cause: x: dispatch"));
    }
}
