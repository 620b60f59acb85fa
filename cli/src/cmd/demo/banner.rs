//! What the user reads once the local gateway is up: where it listens, what to try, how to
//! drive it from another terminal, how to stop it.

use super::moto;
use super::plan::{Plan, BUCKET, TABLE};
use super::steps::Up;
use gateway_render::Limit;

pub fn print(plan: &Plan, up: &Up) {
    let ctl = plan.display(&plan.gatewayctl);
    let listen = plan.listen;
    let rule = "─".repeat(78);
    let mut out = vec![
        rule.clone(),
        " The local gateway is up.".to_string(),
        String::new(),
    ];

    out.push(format!(
        " Envoy listens on http://{listen}  (admin http://{})",
        plan.admin
    ));
    for s in &up.samples {
        out.push(format!(
            "   curl -H 'Host: {}' http://{listen}{}      # → {}",
            s.entry.fqdn(&plan.domain),
            s.probe_path,
            s.backend_name
        ));
    }
    if let Some((s, route, burst)) = first_burst(up) {
        out.push(format!(
            " Burst: {} {} allows {burst} requests at once in Envoy (refilled {burst} per second), then 429:",
            s.entry.fqdn(&plan.domain),
            route
        ));
        out.push(format!(
            "   for i in $(seq {}); do curl -s -o /dev/null -w '%{{http_code}} ' -H 'Host: {}' http://{listen}{route}; done; echo",
            burst + 3,
            s.entry.fqdn(&plan.domain)
        ));
    }
    out.push(format!(
        " Global limits (per client IP, route or header) are counted by gateway-ratelimit on {}, the",
        plan.ratelimit
    ));
    out.push(
        "   local stand-in for envoyproxy/ratelimit, from the rules the rate-limit sidecar delivers."
            .into(),
    );
    if let Some((s, path, quota)) = super::steps::global_limit_sample(&up.samples) {
        out.push(format!(
            "   {} {path} allows {quota} GETs a minute per client, then 429:",
            s.entry.fqdn(&plan.domain)
        ));
        out.push(format!(
            "   for i in $(seq {}); do curl -s -o /dev/null -w '%{{http_code}} ' -H 'Host: {}' http://{listen}{path}; done; echo",
            quota + 2,
            s.entry.fqdn(&plan.domain)
        ));
    }
    out.push(String::new());

    out.push(format!(
        " In another terminal, from {}:",
        plan.repo.display()
    ));
    out.push(format!(
        "   export AWS_ENDPOINT_URL={} AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={} AWS_REGION={}",
        moto::endpoint(plan.moto),
        moto::ACCESS_KEY,
        moto::ACCESS_KEY,
        moto::REGION
    ));
    out.push(format!(
        "   export GATEWAY_TABLE={TABLE} GATEWAY_BUCKET={BUCKET} GATEWAY_DOMAIN={} GATEWAY_ALLOW_LOOPBACK_BACKENDS=true",
        plan.domain
    ));
    out.push(format!("   export ENVOY_BIN={}", up.envoy_bin.display()));
    out.push(format!(
        "   {ctl} list                     # the registered entries"
    ));
    out.push(format!(
        "   {ctl} status                   # the live bundle and drift"
    ));
    out.push(" Register another entry (the reconciler publishes it within seconds):".into());
    let more = plan
        .repo
        .join("examples/demo/more/billing-payments-api.json");
    out.push(format!("   {ctl} register {}", plan.display(&more)));
    out.push(format!(
        "   curl -H 'Host: invoices.{}' http://{listen}/payments",
        plan.domain
    ));
    if plan.backend_ports.is_some() {
        out.push(format!(
            "   (its backend is 127.0.0.1:18081; with --backend-ports use {} in a copy of it)",
            up.samples
                .first()
                .map(|s| s.entry.backend.as_str())
                .unwrap_or("your first backend port")
        ));
    }
    out.push(" Kill switch:".into());
    out.push(format!(
        "   {ctl} kill-switch --runtime --admin http://{}   # this Envoy answers 503 now; --off lifts it",
        plan.admin
    ));
    out.push(format!(
        "   {ctl} kill-switch --yes      # publish the 503 bundle; the reconciler holds on drift"
    ));
    out.push(format!(
        "   {ctl} restore                # the reconciler's last good version comes back"
    ));
    out.push(format!(
        " Access log: one JSON line per request on Envoy's stdout, in {} (keys in README.md):",
        plan.display(&plan.run_dir.join("envoy.log"))
    ));
    out.push(format!(
        "   grep '^{{' {} | tail -3",
        plan.display(&plan.run_dir.join("envoy.log"))
    ));
    out.push(format!(
        "   {ctl} top --admin {}   # requests/s, 5xx share and p99 per service, busiest first",
        plan.admin
    ));
    out.push(format!(
        " Logs: {}/{{envoy,sidecar,ratelimit-sidecar,ratelimit,moto}}.log   sidecar status: http://{}/status",
        plan.display(&plan.run_dir),
        plan.sidecar_listen
    ));
    out.push(" Stop: Ctrl-C stops everything the demo started.".into());
    out.push(rule);
    println!("\n{}", out.join("\n"));
}

/// The first sample route with a burst limit that a plain GET reaches.
fn first_burst(up: &Up) -> Option<(&super::samples::Sample, String, u32)> {
    super::samples::first_get_route_with(&up.samples, |l| match l {
        Limit::Burst { burst } => Some(*burst),
        _ => None,
    })
}
