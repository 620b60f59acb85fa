//! Stored text made safe to print on an operator's terminal. Whoever can write a row of the
//! table (every sidecar's role writes any proxy row), a bundle's metadata or a hand-edited entry
//! could otherwise move the cursor, recolour or clear the screen with an escape sequence, or
//! forge a line of output with a line break. Every value that came from the table, the bucket or
//! Envoy's stats goes through one of these before a printer writes it; JSON output needs neither
//! (serde_json escapes control characters).

use std::borrow::Cow;

/// `s` on one line: every control character (C0 including tab, CR and LF; DEL; C1), the Unicode
/// line and paragraph separators and the bidirectional controls (which reorder what follows them
/// on screen) written as `\u{1b}`-style escapes.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escaped(s, false)
}

/// `s` with its line breaks kept, for multi-line fields (a quarantine reason, an error); every
/// other character [`one_line`] escapes is escaped, CR included.
pub fn lines(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

fn escaped(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c != '\n' || !keep_newlines) && must_escape(c);
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        for s in ["task-1", "sha256:ab12", "billing/invoices-api", "café ✓", ""] {
            assert!(matches!(one_line(s), Cow::Borrowed(b) if b == s), "{s}");
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            one_line("evil\u{1b}[2J\u{1b}]0;title\u{7}\nforged line\r\t\u{7f}\u{9b}"),
            "evil\\u{1b}[2J\\u{1b}]0;title\\u{7}\\u{a}forged line\\u{d}\\u{9}\\u{7f}\\u{9b}"
        );
        assert_eq!(one_line("a\u{202e}fed\u{2028}b\u{2066}"), "a\\u{202e}fed\\u{2028}b\\u{2066}");
        assert_eq!(one_line("nul\0"), "nul\\u{0}");
    }

    #[test]
    fn lines_keep_their_breaks_only() {
        assert_eq!(
            lines("first\nsecond\r\n\u{1b}[1Athird"),
            "first\nsecond\\u{d}\n\\u{1b}[1Athird"
        );
    }
}
