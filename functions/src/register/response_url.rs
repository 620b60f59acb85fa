//! Where a CloudFormation answer may go. The ResponseURL is a pre-signed S3 URL; anything else in
//! that field is a request to make the function PUT somewhere on the caller's behalf (an SSRF
//! from inside the gateway account). Only https on an S3 host of the AWS partitions is answered,
//! redirects are never followed, and loopback http is allowed only for local runs and tests
//! (`GATEWAY_ALLOW_LOOPBACK_BACKENDS=true`).

use std::net::IpAddr;

const AWS_SUFFIXES: &[&str] = &[".amazonaws.com", ".amazonaws.com.cn"];

/// The parsed URL when the function may PUT to it; otherwise why not.
pub fn check_response_url(raw: &str, allow_loopback: bool) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("ResponseURL: not a URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("ResponseURL: must not carry user information".into());
    }
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    if allow_loopback && is_loopback(&host) && matches!(url.scheme(), "http" | "https") {
        return Ok(url);
    }
    if url.scheme() != "https" {
        return Err(format!(
            "ResponseURL: scheme {:?}; only https CloudFormation (S3 pre-signed) URLs are answered",
            url.scheme()
        ));
    }
    let aws = AWS_SUFFIXES
        .iter()
        .any(|suffix| host.ends_with(suffix) && host.len() > suffix.len());
    if !aws || url.port().is_some_and(|p| p != 443) {
        return Err(format!(
            "ResponseURL: host {host:?} is not an S3 host of AWS (*.amazonaws.com or *.amazonaws.com.cn on port 443)"
        ));
    }
    Ok(url)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The HTTP client CloudFormation answers go through. Its only constructor turns redirects off,
/// so no caller can hand the handler a client that follows one.
#[derive(Clone, Debug)]
pub struct ResponseClient(reqwest::Client);

impl ResponseClient {
    pub fn new() -> Result<ResponseClient, reqwest::Error> {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(ResponseClient)
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_s3_https_urls_are_answered() {
        let ok = [
            "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn%3Aaws/abc?X-Amz-Signature=x",
            "https://cloudformation-custom-resource-response-cnnorth1.s3.cn-north-1.amazonaws.com.cn/a",
            "https://s3.eu-west-1.amazonaws.com:443/b",
        ];
        for url in ok {
            assert!(check_response_url(url, false).is_ok(), "{url}");
        }
        let refused = [
            "http://bucket.s3.amazonaws.com/a",
            "https://169.254.169.254/latest/meta-data",
            "https://evil.example.com/x.amazonaws.com",
            "https://amazonaws.com/a",
            "https://s3.amazonaws.com.evil.example/a",
            "https://bucket.s3.amazonaws.com:8443/a",
            "https://user:pw@bucket.s3.amazonaws.com/a",
            "http://127.0.0.1:8080/cfn",
            "file:///etc/passwd",
            "not a url",
        ];
        for url in refused {
            assert!(check_response_url(url, false).is_err(), "{url}");
        }
    }

    #[test]
    fn loopback_only_when_allowed() {
        assert!(check_response_url("http://127.0.0.1:8080/cfn", true).is_ok());
        assert!(check_response_url("http://[::1]:8080/cfn", true).is_ok());
        assert!(check_response_url("http://localhost:8080/cfn", true).is_ok());
        assert!(check_response_url("http://10.0.0.1:8080/cfn", true).is_err());
        assert!(check_response_url("http://169.254.169.254/", true).is_err());
    }
}
