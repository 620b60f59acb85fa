//! A loopback stand-in for CloudFormation's pre-signed ResponseURL: records every request it
//! receives (method, target, content type, JSON body) and answers with a chosen status.
#![allow(dead_code)]

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// One request received by the stand-in ResponseURL.
#[derive(Debug)]
pub struct Captured {
    pub method: String,
    pub target: String,
    pub content_type: Option<String>,
    pub body: Value,
}

/// A loopback HTTP listener answering every request with `status`.
pub async fn response_url(status: u16) -> (String, mpsc::UnboundedReceiver<Captured>) {
    response_url_with(status, "").await
}

/// A listener answering every request with a redirect to `location`.
pub async fn redirecting_url(location: &str) -> (String, mpsc::UnboundedReceiver<Captured>) {
    response_url_with(307, &format!("Location: {location}\r\n")).await
}

async fn response_url_with(
    status: u16,
    extra_headers: &str,
) -> (String, mpsc::UnboundedReceiver<Captured>) {
    let extra_headers = extra_headers.to_string();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://{}/cfn-response/abc?X-Amz-Signature=sig",
        listener.local_addr().expect("addr")
    );
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head, body) = loop {
                let n = conn.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_string();
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    break (head, buf[end + 4..end + 4 + length].to_vec());
                }
            };
            let mut lines = head.lines();
            let mut first = lines.next().unwrap_or("").split(' ');
            let method = first.next().unwrap_or("").to_string();
            let target = first.next().unwrap_or("").to_string();
            let content_type = lines
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.trim().to_string());
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let _ = tx.send(Captured {
                method,
                target,
                content_type,
                body,
            });
            let answer =
                format!("HTTP/1.1 {status} X\r\n{extra_headers}Content-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = conn.write_all(answer.as_bytes()).await;
            let _ = conn.shutdown().await;
        }
    });
    (url, rx)
}
