//! `gatewayctl top`: from one proxy's stats, requests per second, 4xx and 5xx shares, the
//! gateway's own 429s and p99 upstream latency per team service over a short window, busiest
//! first — the first look during an incident (docs/design.md#request-metrics).

use super::common::JsonArg;
use super::terminal::one_line;
use super::{block_on, CmdError, CmdResult};
use gateway_envoy_admin::traffic::{delta, read_traffic, ServiceDelta};
use gateway_envoy_admin::{AdminClient, AdminEndpoint};
use std::time::{Duration, Instant};

/// One proxy's traffic per team service: requests per second, 4xx and 5xx shares, 429s from the
/// gateway's limits, p99 latency, busiest first
///
/// Two readings of Envoy's stats `--window` seconds apart. RPS, 4XX and 5XX count what reached
/// the backend; 429/S counts what the gateway's own limits refused (global and burst), which
/// never reached it. Only team services are listed.
#[derive(clap::Args)]
#[command(mut_arg("json", |a| a.help("One JSON object per service instead of the table")))]
pub struct Args {
    /// Envoy's admin: unix:/PATH (production: unix:/run/envoy/admin.sock) or HOST:PORT
    #[arg(long, default_value = "127.0.0.1:9901")]
    pub admin: String,
    /// Seconds between the two readings the figures are computed from
    #[arg(long, default_value_t = 5)]
    pub window: u64,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn run(args: Args) -> CmdResult {
    if args.window == 0 || args.window > 3600 {
        return Err(CmdError::usage("--window: 1 to 3600 seconds"));
    }
    let endpoint: AdminEndpoint = args
        .admin
        .parse()
        .map_err(|e: gateway_envoy_admin::AdminError| CmdError::usage(format!("--admin: {e}")))?;
    let client = AdminClient::new(endpoint);
    block_on(async move {
        let read = |client: &AdminClient| {
            let client = client.clone();
            async move {
                read_traffic(&client).await.map_err(|e| {
                    CmdError::failed(format!("{e}\nis Envoy's admin listening there?"))
                })
            }
        };
        let before = read(&client).await?;
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(args.window)).await;
        let after = read(&client).await?;
        let seconds = started.elapsed().as_secs_f64();
        let deltas = delta(&before, &after);
        if args.json.json {
            for d in &deltas {
                println!("{}", row_json(d, seconds));
            }
        } else {
            print!("{}", table(&deltas, seconds));
        }
        Ok(())
    })
}

fn share(d: &ServiceDelta, count: u64) -> f64 {
    if d.requests == 0 {
        0.0
    } else {
        count as f64 / d.requests as f64
    }
}

fn row_json(d: &ServiceDelta, seconds: f64) -> serde_json::Value {
    serde_json::json!({
        "team": d.service.team,
        "service": d.service.service,
        "rps": d.requests as f64 / seconds,
        "requests": d.requests,
        "responses_4xx": d.responses_4xx,
        "share_4xx": share(d, d.responses_4xx),
        "responses_5xx": d.responses_5xx,
        "share_5xx": share(d, d.responses_5xx),
        "limited_429": d.limited,
        "limited_429_rps": d.limited as f64 / seconds,
        "p99_ms": d.latency_p99_ms,
    })
}

/// The table, busiest first (the order `delta` returns).
pub fn table(deltas: &[ServiceDelta], seconds: f64) -> String {
    let mut out = format!(
        "{:<40} {:>10} {:>8} {:>8} {:>8} {:>10}\n",
        "TEAM/SERVICE", "RPS", "4XX", "5XX", "429/S", "P99 MS"
    );
    if deltas.is_empty() {
        out.push_str(&format!("(no requests in the last {seconds:.0} s)\n"));
    }
    for d in deltas {
        let p99 = d
            .latency_p99_ms
            .map(|p| format!("{p:.0}"))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<40} {:>10.1} {:>7.1}% {:>7.1}% {:>8.1} {:>10}\n",
            one_line(&format!("{}/{}", d.service.team, d.service.service)),
            d.requests as f64 / seconds,
            share(d, d.responses_4xx) * 100.0,
            share(d, d.responses_5xx) * 100.0,
            d.limited as f64 / seconds,
            p99
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_envoy_admin::traffic::Service;

    fn d(team: &str, requests: u64, fivexx: u64, p99: Option<f64>) -> ServiceDelta {
        ServiceDelta {
            revision: None,
            service: Service {
                team: team.into(),
                service: "api".into(),
            },
            requests,
            responses_4xx: fivexx / 2,
            responses_5xx: fivexx,
            connect_failures: 0,
            limited: fivexx * 3,
            latency_p50_ms: p99,
            latency_p99_ms: p99,
        }
    }

    #[test]
    fn table_shows_rate_share_and_p99() {
        let t = table(
            &[d("billing", 50, 10, Some(25.0)), d("search", 5, 0, None)],
            5.0,
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("billing/api"), "{t}");
        assert!(
            lines[1].contains("10.0") && lines[1].contains("10.0%") && lines[1].contains("20.0%")
                && lines[1].contains(" 6.0 ") && lines[1].ends_with("25"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("search/api") && lines[2].ends_with('-'),
            "{t}"
        );
    }

    #[test]
    fn a_stat_name_with_control_characters_prints_escaped() {
        let t = table(&[d("evil\u{1b}[2J\nforged", 5, 0, None)], 5.0);
        assert_eq!(t.lines().count(), 2, "{t}");
        assert!(t.lines().nth(1).is_some_and(|l| l.starts_with("evil\\u{1b}[2J\\u{a}forged/api")), "{t}");
    }
}
