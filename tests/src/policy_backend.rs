//! A loopback backend for route-policy tests (docs/design.md#route-policy), speaking HTTP/1.1
//! and the websocket handshake by hand so every byte Envoy forwards is visible:
//!
//! - a request whose path contains `/slow` is answered after [`SLOW_ANSWER`];
//! - a request whose path contains `/flaky` fails (503) every other time, counted per first path
//!   segment: the 1st, 3rd, … fail, the 2nd, 4th, … succeed;
//! - a request with `Upgrade: websocket` gets a real handshake (`101`, `Sec-WebSocket-Accept`)
//!   and then has each frame it sends echoed back, unmasked, until it closes;
//! - a request whose path contains `/cookies` is answered with the cookies in [`COOKIES`] (one
//!   scoped to the base domain, one to its own host, one to a name below it, one host-only);
//! - anything else is answered 200 with JSON `{"method", "path", "headers"}` (the request as
//!   received) and the response headers [`RESPONSE_HEADERS`].
//!
//! Every request is recorded ([`PolicyBackend::seen`]). One thread per connection, so a slow
//! answer holds nobody else up.

use crate::serve::bind_loopback;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a `/slow` request waits for its answer.
pub const SLOW_ANSWER: Duration = Duration::from_secs(3);
/// Headers every plain answer carries, for tests that remove or keep them.
pub const RESPONSE_HEADERS: [(&str, &str); 3] = [
    ("server", "policy-backend"),
    ("x-backend-secret", "internal-build-42"),
    ("x-backend-kept", "yes"),
];
/// The GUID RFC 6455 appends to a client's key.
const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// One request as the backend received it: header names lowercased.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
}

#[derive(Default)]
struct State {
    seen: Mutex<Vec<Seen>>,
    flaky: Mutex<BTreeMap<String, u64>>,
}

pub struct PolicyBackend {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PolicyBackend {
    pub fn start() -> PolicyBackend {
        let (listener, addr) = bind_loopback("policy backend");
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let state = state.clone();
                            std::thread::spawn(move || serve(stream, &state));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        PolicyBackend {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Requests received so far whose path starts with `prefix`.
    pub fn seen_under(&self, prefix: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.starts_with(prefix))
            .collect()
    }
}

impl Drop for PolicyBackend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut stream: TcpStream, state: &State) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some((request, _rest)) = read_head(&mut stream) else {
        return;
    };
    state
        .seen
        .lock()
        .map(|mut s| s.push(request.clone()))
        .unwrap_or(());
    let header = |name: &str| request.headers.get(name).map(String::as_str);
    if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        // Requests in these tests carry no body worth reading; drain what is announced.
        let mut body = vec![0u8; n.min(64 * 1024)];
        let _ = stream.read_exact(&mut body);
    }
    if header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket")) {
        return websocket(stream, header("sec-websocket-key").unwrap_or(""));
    }
    if request.path.contains("/slow") {
        std::thread::sleep(SLOW_ANSWER);
    }
    if request.path.contains("/flaky") {
        let segment = request.path.split('/').nth(1).unwrap_or("").to_string();
        let n = state
            .flaky
            .lock()
            .map(|mut m| {
                let n = m.entry(segment).or_insert(0);
                *n += 1;
                *n
            })
            .unwrap_or(1);
        if n % 2 == 1 {
            let body = "{\"error\":\"flaky\"}";
            let _ = write!(
                stream,
                "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
    }
    let body = serde_json::json!({
        "method": request.method, "path": request.path, "headers": request.headers
    })
    .to_string();
    let mut extra: String = RESPONSE_HEADERS
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    if request.path.contains("/cookies") {
        for c in COOKIES {
            extra.push_str(&format!("set-cookie: {c}\r\n"));
        }
    }
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// What a `/cookies` request is answered with: a backend trying to set state for every tenant
/// (`Domain` the base domain, or its parent), and cookies of its own host.
pub const COOKIES: [&str; 5] = [
    "tenant=1; Domain=api.example.com; Path=/; Secure",
    "parent=2; domain=.EXAMPLE.com; HttpOnly",
    "own=3; Domain=policy.api.example.com; Path=/",
    "below=4; Domain=eu.policy.api.example.com",
    "plain=5; Secure",
];

/// The request head, and any bytes read past it.
fn read_head(stream: &mut TcpStream) -> Option<(Seen, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some((
        Seen {
            method,
            path,
            headers,
        },
        buf[end + 4..].to_vec(),
    ))
}

fn websocket(mut stream: TcpStream, key: &str) {
    let accept = websocket_accept(key);
    if write!(
        stream,
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: {accept}\r\n\r\n"
    )
    .is_err()
    {
        return;
    }
    while let Some((opcode, payload)) = read_frame(&mut stream) {
        if opcode == 0x8 {
            let _ = stream.write_all(&frame(0x8, &[], None));
            return;
        }
        if stream.write_all(&frame(opcode, &payload, None)).is_err() {
            return;
        }
    }
}

/// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key` (RFC 6455 section 4.2.2).
pub fn websocket_accept(key: &str) -> String {
    base64(&sha1(format!("{key}{WEBSOCKET_GUID}").as_bytes()))
}

/// One websocket frame with FIN set; `mask` for a client's frame (clients must mask).
pub fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(m) => {
            out.extend_from_slice(&m);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

/// Reads one frame: its opcode and unmasked payload.
pub fn read_frame(stream: &mut impl Read) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).ok()?;
    let opcode = head[0] & 0x0f;
    let masked = head[1] & 0x80 != 0;
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            stream.read_exact(&mut b).ok()?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            stream.read_exact(&mut b).ok()?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    if len > 1 << 20 {
        return None;
    }
    let mut mask = [0u8; 4];
    if masked {
        stream.read_exact(&mut mask).ok()?;
    }
    let mut payload = vec![0u8; usize::try_from(len).ok()?];
    stream.read_exact(&mut payload).ok()?;
    if masked {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
    }
    Some((opcode, payload))
}

/// SHA-1 (FIPS 180-4), for the handshake only.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_6455_handshake_example() {
        // RFC 6455 section 1.3.
        assert_eq!(
            websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn frames_round_trip_masked_and_not() {
        for mask in [None, Some([1, 2, 3, 4])] {
            let f = frame(0x1, b"ping", mask);
            assert_eq!(read_frame(&mut f.as_slice()), Some((0x1, b"ping".to_vec())));
        }
        let long = vec![7u8; 300];
        assert_eq!(
            read_frame(&mut frame(0x2, &long, None).as_slice()),
            Some((0x2, long))
        );
    }
}
