//! Access log, request ids and per-service request metrics on a live stack: moto, the sidecar in
//! polling mode with a one-second metrics interval, the real Envoy on the gateway's bootstrap,
//! and two teams' loopback backends, one path of each answering 500.

use gateway_testkit::delivery as common;

use aws_sdk_cloudwatch::types::{Dimension, Statistic};
use common::{billing, entry, route, Gateway, DOMAIN};
use gateway_testkit::backend::{Backend, FAILING_PREFIX};
use gateway_testkit::MotoServer;
use serde_json::Value;
use std::time::{Duration, Instant};

const SECRET: &str = "s3cr3t-value";
const CLIENT_REQUEST_ID: &str = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";

struct Answer {
    status: u16,
    request_id: Option<String>,
    backend_saw: Option<String>,
}

async fn get(gw: &Gateway, host: &str, path: &str, request_id: Option<&str>) -> Answer {
    let mut request = gw
        .client
        .get(format!("http://{}{path}", gw.listener()))
        .header("host", format!("{host}.{DOMAIN}"))
        .header("user-agent", "observability-test/1")
        .header("cookie", format!("session={SECRET}"))
        .header("authorization", format!("Bearer {SECRET}"));
    if let Some(id) = request_id {
        request = request.header("x-request-id", id);
    }
    let response = request.send().await.expect("request through Envoy");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    Answer {
        status: response.status().as_u16(),
        request_id: header("x-request-id"),
        backend_saw: header("echo-x-request-id"),
    }
}

fn log_lines(gw: &Gateway) -> Vec<Value> {
    gw.envoy
        .access_log_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line: {l}: {e}")))
        .collect()
}

async fn sum(cw: &aws_sdk_cloudwatch::Client, metric: &str, team: &str, service: &str) -> f64 {
    let now = aws_smithy_types::DateTime::from(std::time::SystemTime::now());
    let start = aws_smithy_types::DateTime::from_secs(now.secs() - 3600);
    let end = aws_smithy_types::DateTime::from_secs(now.secs() + 60);
    let out = cw
        .get_metric_statistics()
        .namespace("Gateway")
        .metric_name(metric)
        .dimensions(Dimension::builder().name("Team").value(team).build())
        .dimensions(Dimension::builder().name("Service").value(service).build())
        .start_time(start)
        .end_time(end)
        .period(3600)
        .statistics(Statistic::Sum)
        .send()
        .await
        .expect("get_metric_statistics");
    out.datapoints().iter().filter_map(|d| d.sum()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_log_request_ids_and_per_service_metrics() {
    // Own moto: CloudWatch is not per bucket.
    let moto = MotoServer::start();
    let billing = Backend::start("billing");
    let search = Backend::start("search");
    // Each team on its own host: its own path, and the prefix its backend fails on.
    let team = |team: &str, service: &str, backend: &Backend, path: &str| {
        let routes = vec![
            route(path, None, vec![]),
            route(FAILING_PREFIX, None, vec![]),
        ];
        entry(team, service, team, &backend.url(), routes)
    };
    let entries = vec![
        team("billing", "invoices", &billing, "/invoices"),
        team("search", "catalog", &search, "/search"),
    ];
    let gw = Gateway::start_with(&moto, &entries, &["--metrics-interval", "1"]).await;

    // billing: 6 answered, 4 failed; search: 5 answered, 2 failed; one unknown host.
    let mut sent = 0;
    for i in 0..6 {
        let a = get(
            &gw,
            "billing",
            &format!("/invoices/{i}?token={SECRET}"),
            None,
        )
        .await;
        assert_eq!(a.status, 200);
        sent += 1;
    }
    for _ in 0..4 {
        assert_eq!(get(&gw, "billing", "/fail/now", None).await.status, 500);
        sent += 1;
    }
    for _ in 0..5 {
        assert_eq!(
            get(&gw, "search", &format!("/search?q={SECRET}"), None)
                .await
                .status,
            200
        );
        sent += 1;
    }
    for _ in 0..2 {
        assert_eq!(get(&gw, "search", "/fail", None).await.status, 500);
        sent += 1;
    }
    let unknown = gw
        .client
        .get(format!("http://{}/anything?x={SECRET}", gw.listener()))
        .header("host", "nobody.example.org")
        .send()
        .await
        .expect("catch-all");
    assert_eq!(unknown.status().as_u16(), 404);
    sent += 1;

    // Request ids: the client's is kept end to end; without one, Envoy makes one that the
    // backend and the client both see.
    let kept = get(&gw, "billing", "/invoices/id", Some(CLIENT_REQUEST_ID)).await;
    assert_eq!(kept.request_id.as_deref(), Some(CLIENT_REQUEST_ID));
    assert_eq!(kept.backend_saw.as_deref(), Some(CLIENT_REQUEST_ID));
    let made = get(&gw, "billing", "/invoices/id", None).await;
    let made_id = made
        .request_id
        .clone()
        .expect("a generated x-request-id in the response");
    assert_eq!(made_id.len(), 36, "{made_id}");
    assert_eq!(made.backend_saw.as_deref(), Some(made_id.as_str()));
    sent += 2;

    // The access log: a JSON line per request, right team/service/status, no secrets.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let lines = log_lines(&gw);
        if lines.len() >= sent || Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(lines.len(), sent, "{lines:#?}");
    let text = gw.envoy.access_log_text();
    assert!(
        !text.contains(SECRET),
        "a secret reached the access log:\n{text}"
    );
    let count = |team: &str, service: &str, status: u64| {
        lines
            .iter()
            .filter(|l| l["team"] == team && l["service"] == service && l["status"] == status)
            .count()
    };
    assert_eq!(count("billing", "invoices", 200), 8, "{lines:#?}");
    assert_eq!(count("billing", "invoices", 500), 4, "{lines:#?}");
    assert_eq!(count("search", "catalog", 200), 5, "{lines:#?}");
    assert_eq!(count("search", "catalog", 500), 2, "{lines:#?}");
    let catch_all = lines
        .iter()
        .find(|l| l["status"] == 404)
        .expect("catch-all line");
    assert_eq!(catch_all["team"], "", "{catch_all}");
    assert_eq!(catch_all["service"], "", "{catch_all}");
    assert_eq!(catch_all["path"], "/anything", "{catch_all}");
    let first = &lines[0];
    assert_eq!(first["path"], "/invoices/0", "{first}");
    assert_eq!(first["method"], "GET", "{first}");
    assert_eq!(first["route"], "billing.invoices:*:/invoices", "{first}");
    assert_eq!(first["user_agent"], "observability-test/1", "{first}");
    assert_eq!(first["client_ip"], "127.0.0.1", "{first}");
    assert_eq!(
        first["upstream_host"],
        billing.addr().to_string(),
        "{first}"
    );
    assert!(first["duration_ms"].is_number(), "{first}");
    assert!(first["bytes_out"].as_u64().unwrap_or(0) > 0, "{first}");
    assert!(
        first["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{first}"
    );
    for key in ["response_flags", "bytes_in", "request_id"] {
        assert!(first.get(key).is_some(), "{key} missing: {first}");
    }
    assert!(
        lines.iter().any(|l| l["request_id"] == CLIENT_REQUEST_ID)
            && lines.iter().any(|l| l["request_id"] == made_id.as_str()),
        "request ids not in the log: {lines:#?}"
    );

    // CloudWatch: the sidecar's deltas add up to what was sent.
    let cw = aws_sdk_cloudwatch::Client::new(&moto.sdk_config().await);
    let want = [
        ("Requests", "billing", "invoices", 12.0),
        ("Responses5xx", "billing", "invoices", 4.0),
        ("Requests", "search", "catalog", 7.0),
        ("Responses5xx", "search", "catalog", 2.0),
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut got = Vec::new();
        for (metric, team, service, _) in want {
            got.push(sum(&cw, metric, team, service).await);
        }
        if got.iter().zip(want.iter()).all(|(g, w)| *g == w.3) {
            break;
        }
        if Instant::now() > deadline {
            let listed = cw.list_metrics().namespace("Gateway").send().await;
            let stats = gw
                .envoy
                .admin_get(gateway_envoy_admin::traffic::TRAFFIC_STATS_PATH);
            panic!(
                "CloudWatch sums {got:?}, want {want:?}\n--- listed ---\n{listed:?}\n--- stats ---\n{stats:?}\n--- sidecar ---\n{}",
                gw.sidecar.log_text()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Latency arrives once Envoy has merged its histograms (its 5 s stats flush).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = cw
            .list_metrics()
            .namespace("Gateway")
            .metric_name("LatencyP99")
            .send()
            .await
            .expect("list_metrics");
        let teams: Vec<&str> = listed
            .metrics()
            .iter()
            .flat_map(|m| m.dimensions())
            .filter(|d| d.name() == Some("Team"))
            .filter_map(|d| d.value())
            .collect();
        if teams.contains(&"billing") && teams.contains(&"search") {
            break;
        }
        assert!(Instant::now() < deadline, "LatencyP99 per team: {listed:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// CloudWatch that accepts connections and never answers: the sidecar still delivers a new
/// bundle within its usual time, and says the metrics did not get through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_cloudwatch_never_slows_delivery() {
    use common::{envoy_mode_args, start_envoy, wait_files, Bucket, Dirs, SidecarProcess};
    let moto = common::shared_moto();
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").expect("black hole");
    let blackhole_url = format!("http://{}", blackhole.local_addr().expect("addr"));
    let backend = Backend::start("billing");
    let first = billing(&backend.url(), &["/invoices"]);
    let bucket = Bucket::create(moto).await;
    let (_, first_hash) = bucket.publish(&first).await;
    let dirs = Dirs::new();
    let ports = gateway_testkit::envoy::EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let sidecar = SidecarProcess::start_with_env(
        moto,
        &envoy_mode_args(&bucket.name, &dirs, &admin, &["--metrics-interval", "1"]),
        &[("AWS_ENDPOINT_URL_CLOUDWATCH", blackhole_url.as_str())],
    );
    wait_files(&dirs, Duration::from_secs(30)).await;
    let envoy = start_envoy(&dirs, ports);
    sidecar
        .wait_live(&first_hash, Duration::from_secs(30))
        .await;
    let client = common::client();
    for _ in 0..5 {
        common::send(
            &client,
            envoy.listener_addr(),
            "GET",
            "billing",
            "/invoices/1",
        )
        .await
        .expect("request");
    }
    // Let a publish start and hang on the black hole.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let second = billing(&backend.url(), &["/invoices", "/refunds"]);
    let (_, second_hash) = bucket.publish(&second).await;
    let started = Instant::now();
    sidecar
        .wait_live(&second_hash, Duration::from_secs(8))
        .await;
    let took = started.elapsed();
    let answer = common::backend_answer(
        &client,
        envoy.listener_addr(),
        "GET",
        "billing",
        "/refunds/2",
    )
    .await
    .expect("the new route");
    assert_eq!(answer["path"], "/refunds/2");
    // The publish that hung is reported once its bound (10 s) passes.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sidecar.log_text().contains("request metrics not published") {
        assert!(
            Instant::now() < deadline,
            "no publish failure logged:\n{}",
            sidecar.log_text()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!("delivery with CloudWatch hanging took {took:?}");
    drop(blackhole);
}
