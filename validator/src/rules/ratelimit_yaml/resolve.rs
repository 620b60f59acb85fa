//! What type yaml.v2 gives a scalar (its resolve.go): YAML 1.1's booleans (`yes`, `on`, `n`),
//! nulls, integers in Go's notation (`0x1f`, `0o17`, `017`, `0b101`, underscores dropped),
//! integers past int64 as uint64, floats, timestamps; anything else is a string. An explicit
//! tag must agree with what the text resolves to (`!!int x` fails), except that an integer may
//! be tagged `!!float`.

pub const STR: &str = "tag:yaml.org,2002:str";
pub const BOOL: &str = "tag:yaml.org,2002:bool";
pub const INT: &str = "tag:yaml.org,2002:int";
pub const FLOAT: &str = "tag:yaml.org,2002:float";
pub const NULL: &str = "tag:yaml.org,2002:null";
pub const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";
pub const BINARY: &str = "tag:yaml.org,2002:binary";
pub const MERGE: &str = "tag:yaml.org,2002:merge";
pub const SEQ: &str = "tag:yaml.org,2002:seq";
pub const MAP: &str = "tag:yaml.org,2002:map";

/// A scalar's value as yaml.v2 decodes it into an `interface{}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    /// Go's `int` (64 bits).
    Int(i64),
    /// Past int64: Go's `uint64`.
    Uint(u64),
    Float(f64),
    Str(String),
    /// A date or date-time; decoded into an `interface{}` as its text.
    Timestamp(String),
}

/// `tag:yaml.org,2002:x` as `!!x`, as yaml.v2 names tags in messages.
pub fn short_tag(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

fn resolvable(tag: &str) -> bool {
    matches!(tag, "" | STR | BOOL | INT | FLOAT | NULL | TIMESTAMP)
}

/// The scalar `text` with explicit `tag` (empty when none) and whether it is plain and untagged,
/// resolved as yaml.v2 does: its tag and value, or the `cannot decode` failure.
pub fn scalar(text: &str, tag: &str, implicit: bool) -> Result<(String, Scalar), String> {
    if tag.is_empty() && !implicit {
        return Ok((STR.to_string(), Scalar::Str(text.to_string())));
    }
    resolve(tag, text)
}

fn resolve(tag: &str, text: &str) -> Result<(String, Scalar), String> {
    if !resolvable(tag) {
        return Ok((tag.to_string(), Scalar::Str(text.to_string())));
    }
    let (rtag, out) = by_text(tag, text);
    if tag.is_empty() || tag == rtag || tag == STR || tag == BINARY {
        return Ok((rtag.to_string(), out));
    }
    if tag == FLOAT && rtag == INT {
        if let Scalar::Int(i) = out {
            return Ok((FLOAT.to_string(), Scalar::Float(i as f64)));
        }
    }
    Err(format!(
        "yaml: cannot decode {} `{text}` as a {}",
        short_tag(rtag),
        short_tag(tag)
    ))
}

fn by_text(tag: &str, text: &str) -> (&'static str, Scalar) {
    let string = || (STR, Scalar::Str(text.to_string()));
    if tag == STR || tag == BINARY {
        return string();
    }
    let hint = match text.bytes().next() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => return string(),
    };
    if let Some(known) = by_table(text) {
        return known;
    }
    match hint {
        b'.' => match go_parse_float(text) {
            Some(f) => (FLOAT, Scalar::Float(f)),
            None => string(),
        },
        b'D' | b'S' => {
            if (tag.is_empty() || tag == TIMESTAMP) && is_timestamp(text) {
                return (TIMESTAMP, Scalar::Timestamp(text.to_string()));
            }
            let plain: String = text.chars().filter(|&c| c != '_').collect();
            if let Some(i) = go_parse_int(&plain) {
                return (INT, Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return (INT, Scalar::Uint(u));
            }
            if yaml_style_float(&plain) {
                if let Some(f) = go_parse_float(&plain) {
                    return (FLOAT, Scalar::Float(f));
                }
            }
            if let Some(bits) = plain.strip_prefix("0b") {
                if let Ok(i) = i64::from_str_radix(bits, 2) {
                    return (INT, Scalar::Int(i));
                }
                if let Ok(u) = u64::from_str_radix(bits, 2) {
                    return (INT, Scalar::Uint(u));
                }
            } else if let Some(bits) = plain.strip_prefix("-0b") {
                if let Ok(i) = i64::from_str_radix(&format!("-{bits}"), 2) {
                    return (INT, Scalar::Int(i));
                }
            }
            string()
        }
        _ => string(),
    }
}

fn by_table(text: &str) -> Option<(&'static str, Scalar)> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (BOOL, Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (BOOL, Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => (NULL, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => (FLOAT, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            (FLOAT, Scalar::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => (FLOAT, Scalar::Float(f64::NEG_INFINITY)),
        _ => return None,
    })
}

/// Go's `strconv.ParseInt(s, 0, 64)` without underscores (yaml.v2 removed them): an optional
/// sign, then `0x`, `0o`, `0b` or a leading `0` (octal) picks the base.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(digits)?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`: no sign; the base from the prefix as above.
fn go_parse_uint(s: &str) -> Option<u64> {
    let (radix, digits) = if let Some(d) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, d)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// yaml.v2's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` on decimal text: out of range is a failure (Go returns an
/// error with the infinity), and Rust's `inf`/`nan` spellings are not Go's concern here
/// (callers pass text that starts with a digit, a sign or a dot).
fn go_parse_float(s: &str) -> Option<f64> {
    if s.contains(|c: char| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E')) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// A date (`2001-12-14`) or date-time (`2001-12-14T21:59:43.10Z`, `2001-12-14 21:59:43`) in
/// the shapes yaml.v2 tries; four digits and a dash first.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let parts: Vec<&str> = date.split('-').collect();
    let short_number = |p: &str, max: u32| {
        (1..=2).contains(&p.len()) && p.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
    };
    if parts.len() != 3 || !short_number(parts[1], 12) || !short_number(parts[2], 31) {
        return false;
    }
    let Some(time) = time else { return true };
    let (clock, zone) = match time.find(['Z', '+', '-']) {
        Some(at) => (&time[..at], Some(&time[at..])),
        None => (time, None),
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    let fields: Vec<&str> = hms.split(':').collect();
    let in_range =
        |p: &str, max: u32| (1..=2).contains(&p.len()) && p.parse::<u32>().is_ok_and(|n| n <= max);
    let clock_ok = fields.len() == 3
        && in_range(fields[0], 23)
        && in_range(fields[1], 59)
        && in_range(fields[2], 59)
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()));
    let zone_ok = match zone {
        None => true,
        Some("Z") => true,
        Some(z) => {
            let z = &z[1..];
            z.len() == 5
                && z.as_bytes()[2] == b':'
                && in_range(&z[..2], 23)
                && in_range(&z[3..], 59)
        }
    };
    // Without a zone yaml.v2 only accepts the space-separated form.
    clock_ok && zone_ok && (zone.is_some() || time.len() < s.len() && s.contains(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Scalar {
        scalar(text, "", true).expect("resolves").1
    }

    #[test]
    fn yaml_1_1_booleans_and_nulls() {
        for t in ["yes", "Y", "on", "TRUE"] {
            assert_eq!(plain(t), Scalar::Bool(true), "{t}");
        }
        for t in ["no", "n", "Off", "false"] {
            assert_eq!(plain(t), Scalar::Bool(false), "{t}");
        }
        for t in ["", "~", "null", "NULL"] {
            assert_eq!(plain(t), Scalar::Null, "{t:?}");
        }
        assert_eq!(plain("yess"), Scalar::Str("yess".into()));
        assert_eq!(
            scalar("yes", "", false).expect("quoted").1,
            Scalar::Str("yes".into())
        );
    }

    #[test]
    fn integers_in_go_notation_and_past_int64() {
        assert_eq!(plain("0x1F"), Scalar::Int(31));
        assert_eq!(plain("017"), Scalar::Int(15));
        assert_eq!(plain("0o17"), Scalar::Int(15));
        assert_eq!(plain("0b101"), Scalar::Int(5));
        assert_eq!(plain("1_000"), Scalar::Int(1000));
        assert_eq!(plain("-9223372036854775808"), Scalar::Int(i64::MIN));
        assert_eq!(plain("9223372036854775807"), Scalar::Int(i64::MAX));
        assert_eq!(plain("9223372036854775808"), Scalar::Uint(1 << 63));
        assert_eq!(
            plain("18446744073709551616"),
            Scalar::Float(18446744073709551616.0)
        );
        // A leading zero that is not octal falls through to a float.
        assert_eq!(plain("08"), Scalar::Float(8.0));
        assert_eq!(plain("1e400"), Scalar::Str("1e400".into()));
    }

    #[test]
    fn floats_timestamps_and_strings() {
        assert_eq!(plain("1.5"), Scalar::Float(1.5));
        assert_eq!(plain(".5"), Scalar::Float(0.5));
        assert!(matches!(plain(".nan"), Scalar::Float(f) if f.is_nan()));
        assert_eq!(plain("2001-12-14"), Scalar::Timestamp("2001-12-14".into()));
        assert_eq!(
            plain("2001-12-14T21:59:43.10Z"),
            Scalar::Timestamp("2001-12-14T21:59:43.10Z".into())
        );
        assert_eq!(plain("2001-13-14"), Scalar::Str("2001-13-14".into()));
        assert_eq!(plain("GET:/x#0"), Scalar::Str("GET:/x#0".into()));
        assert_eq!(plain("<<"), Scalar::Str("<<".into()));
    }

    #[test]
    fn explicit_tags_must_agree() {
        assert_eq!(
            scalar("5", STR, false).expect("str").1,
            Scalar::Str("5".into())
        );
        assert_eq!(
            scalar("5", FLOAT, false).expect("float").1,
            Scalar::Float(5.0)
        );
        assert_eq!(
            scalar("x", INT, false),
            Err("yaml: cannot decode !!str `x` as a !!int".into())
        );
        assert_eq!(
            scalar("x", "!custom", false).expect("custom tag").1,
            Scalar::Str("x".into())
        );
    }
}
