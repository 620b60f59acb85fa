//! Where a CloudFormation answer may go. The ResponseURL is a pre-signed S3 URL; anything else in
//! that field is a request to make the function PUT somewhere on the caller's behalf (an SSRF
//! from inside the gateway account). Only https on an S3 host of the AWS partitions is answered,
//! redirects are never followed, and loopback http is allowed only for local runs and tests
//! (`GATEWAY_ALLOW_LOOPBACK_BACKENDS=true`).

use std::net::IpAddr;

const AWS_SUFFIXES: &[&str] = &[".amazonaws.com", ".amazonaws.com.cn"];

/// `url::ParseError`, named through reqwest's `Url` (no direct dependency on `url`).
pub type UrlParseError = <reqwest::Url as std::str::FromStr>::Err;

/// Why the function will not PUT to a ResponseURL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseUrlError {
    #[error("ResponseURL: not a URL ({0})")]
    NotAUrl(#[source] UrlParseError),
    #[error("ResponseURL: must not carry user information")]
    UserInfo,
    #[error(
        "ResponseURL: scheme {0:?}; only https CloudFormation (S3 pre-signed) URLs are answered"
    )]
    Scheme(String),
    #[error(
        "ResponseURL: host {0:?} is not an S3 host of AWS (*.amazonaws.com or *.amazonaws.com.cn on port 443)"
    )]
    NotS3(String),
}

/// The parsed URL when the function may PUT to it; otherwise why not.
pub fn check_response_url(
    raw: &str,
    allow_loopback: bool,
) -> Result<reqwest::Url, ResponseUrlError> {
    let url = reqwest::Url::parse(raw).map_err(ResponseUrlError::NotAUrl)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ResponseUrlError::UserInfo);
    }
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    if allow_loopback && is_loopback(&host) && matches!(url.scheme(), "http" | "https") {
        return Ok(url);
    }
    if url.scheme() != "https" {
        return Err(ResponseUrlError::Scheme(url.scheme().to_string()));
    }
    let aws = AWS_SUFFIXES
        .iter()
        .any(|suffix| host.ends_with(suffix) && host.len() > suffix.len());
    if !aws || url.port().is_some_and(|p| p != 443) {
        return Err(ResponseUrlError::NotS3(host));
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
    fn refusals_name_the_field_and_keep_the_parse_error() {
        use std::error::Error;
        let text = |url: &str| check_response_url(url, false).expect_err(url).to_string();
        assert_eq!(
            text("not a url"),
            "ResponseURL: not a URL (relative URL without a base)"
        );
        assert!(check_response_url("not a url", false)
            .expect_err("refused")
            .source()
            .is_some());
        assert_eq!(
            text("https://user:pw@bucket.s3.amazonaws.com/a"),
            "ResponseURL: must not carry user information"
        );
        assert_eq!(
            text("file:///etc/passwd"),
            "ResponseURL: scheme \"file\"; only https CloudFormation (S3 pre-signed) URLs are answered"
        );
        assert_eq!(
            text("https://Evil.example.com/x"),
            "ResponseURL: host \"evil.example.com\" is not an S3 host of AWS (*.amazonaws.com or *.amazonaws.com.cn on port 443)"
        );
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
