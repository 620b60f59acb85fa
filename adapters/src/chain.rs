//! An error with its causes, as one line an operator can act on: the SDK's own display of a
//! failed call ("streaming error", "dispatch failure") names no cause, its sources do.

use std::error::Error;

/// `e`'s message, then each cause in its source chain whose text the line does not hold yet.
pub fn error_chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// Why a body broke off, in words, from anywhere in its error chain: a reset connection, a body
/// shorter than its length, a checksum that does not match, or no bytes for too long.
pub fn body_failure(e: &(dyn Error + 'static)) -> &'static str {
    let mut cause: Option<&(dyn Error + 'static)> = Some(e);
    let mut texts = String::new();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                    return "the connection was reset while the body was read"
                }
                std::io::ErrorKind::UnexpectedEof => {
                    return "the body ended before its Content-Length"
                }
                std::io::ErrorKind::TimedOut => return "the body stalled: no bytes arrived in time",
                _ => {}
            }
        }
        texts.push_str(&c.to_string().to_ascii_lowercase());
        texts.push(' ');
        cause = c.source();
    }
    if texts.contains("reset") {
        "the connection was reset while the body was read"
    } else if texts.contains("checksum") || texts.contains("crc") {
        "the body failed its checksum"
    } else if texts.contains("stall") || texts.contains("throughput") || texts.contains("minimum") {
        "the body stalled: no bytes arrived in time"
    } else if texts.contains("message length") || texts.contains("incomplete") || texts.contains("eof") || texts.contains("end of file") {
        "the body ended before its Content-Length"
    } else {
        "the body broke off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("streaming error")
        }
    }
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_cause_is_named_whatever_the_outer_error_says() {
        let reset = Outer(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "peer reset"));
        assert_eq!(error_chain(&reset), "streaming error: peer reset");
        assert_eq!(body_failure(&reset), "the connection was reset while the body was read");
        let short = Outer(std::io::Error::other("end of file before message length reached"));
        assert_eq!(body_failure(&short), "the body ended before its Content-Length");
        let crc = Outer(std::io::Error::other("checksum mismatch: expected CRC32 abc"));
        assert_eq!(body_failure(&crc), "the body failed its checksum");
        let stalled = Outer(std::io::Error::other("minimum throughput was specified at 1 B/s"));
        assert_eq!(body_failure(&stalled), "the body stalled: no bytes arrived in time");
    }
}
