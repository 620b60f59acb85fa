//! Envoy's rejection, trimmed to what an operator needs: the error lines without log prefixes,
//! and without the config Envoy echoes back (the whole file, megabytes at 50k routes).

/// Longest line kept in a summary.
const MAX_LINE: usize = 2000;

pub(crate) fn summary(output: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut keep_continuation = false;
    for line in output.lines() {
        if line.starts_with('[') {
            keep_continuation = line.contains("][critical][") || line.contains("][error][");
            if keep_continuation {
                lines.push(clip(strip_prefix(line)));
            }
        } else if keep_continuation && !line.trim().is_empty() {
            lines.push(clip(line));
        }
    }
    if lines.is_empty() {
        // Not a log line Envoy usually prints (a crash, a usage error): keep the tail.
        let all: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        lines = all[all.len().saturating_sub(20)..]
            .iter()
            .map(|l| clip(l))
            .collect();
    }
    lines.join("\n")
}

/// `[time][pid][level][logger] [source:line] message` → `message`.
fn strip_prefix(line: &str) -> &str {
    let mut rest = line;
    while let Some(stripped) = rest.strip_prefix('[') {
        match stripped.find(']') {
            Some(end) => rest = stripped[end + 1..].trim_start(),
            None => break,
        }
    }
    rest
}

/// Cuts the echoed config (`...: {"static_resources":...`) and overlong lines.
fn clip(line: &str) -> String {
    let line = match line.find(": {\"") {
        Some(at) if line.len() - at > 200 => &line[..at],
        _ => line,
    };
    if line.len() <= MAX_LINE {
        return line.to_string();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &line[..end], line.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_message_and_drops_prefix_and_echo() {
        let echo = format!("{{\"static_resources\":{}}}", "x".repeat(5000));
        let out = format!(
            "[2026-01-01 00:00:00.000][1][warning][misc] [a.cc:1] deprecated thing\n\
             [2026-01-01 00:00:00.000][1][critical][main] [source/server/config_validation/server.cc:76] error initializing configuration '/tmp/v.json': Unable to parse JSON as proto (bad duration): {echo}\n"
        );
        assert_eq!(
            summary(&out),
            "error initializing configuration '/tmp/v.json': Unable to parse JSON as proto (bad duration)"
        );
    }

    #[test]
    fn falls_back_to_the_tail() {
        assert_eq!(summary("\nsomething odd\n"), "something odd");
    }
}
