//! Proxies say what they serve (docs/design.md#proxy-reports): real sidecars delivering into the
//! real Envoy write their rows to the registry table on moto's server; an entry is "live on N of
//! M proxies" by those rows; a silent proxy ages out; the custom resource's `waitFor: serving`
//! answers from them; and delivery goes on when the table hangs or throttles.

// The sidecar tests' harness and the functions tests' reconcile harness, shared rather than
// copied.
use gateway_testkit::delivery as common;
use gateway_testkit::response_url;
use gateway_testkit::control as support;

use common::{envoy_mode_args, start_envoy, wait_files, Dirs, SidecarProcess};
use gateway_adapters::registry::{DynamoRegistry, EntryStatus, ProxyReport, ProxyTable};
use gateway_adapters::store::ConfigStore;
use gateway_control::reconcile::Outcome;
use gateway_functions::register::{handle, ResponseClient};
use gateway_control::serving::{live_on, BundleCache, LiveOn};
use gateway_render::check::Policy;
use gateway_render::Entry;
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::stub::{Answer, Behaviour, StubServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const DOMAIN: &str = common::DOMAIN;
const ACCOUNT: &str = "123456789012";
/// Reports every second, counted for four: a silent proxy is gone within seconds.
const REPORT_ARGS: [&str; 4] = ["--report-interval", "1", "--report-ttl", "4"];

fn entry(team: &str, service: &str, paths: &[&str]) -> Entry {
    let routes = paths
        .iter()
        .map(|p| common::route(p, None, vec![]))
        .collect();
    common::entry(
        team,
        service,
        service,
        &gateway_testkit::closed_backend(team),
        routes,
    )
}

/// The reconcile harness of the functions' tests (table, versioned bucket and CloudWatch on
/// moto, the real Envoy validating), read here for what the proxies report.
struct Pipeline(support::Harness);

impl std::ops::Deref for Pipeline {
    type Target = support::Harness;
    fn deref(&self) -> &support::Harness {
        &self.0
    }
}

impl std::ops::DerefMut for Pipeline {
    fn deref_mut(&mut self) -> &mut support::Harness {
        &mut self.0
    }
}

impl Pipeline {
    async fn start() -> Pipeline {
        Pipeline(support::Harness::start().await)
    }

    async fn live_hash(&self) -> String {
        let head = self.store.head_live().await.expect("head").expect("live");
        head.hash.expect("hash metadata")
    }

    fn proxies(&self) -> ProxyTable {
        self.registry.proxies()
    }

    async fn status(&self, id: &str) -> EntryStatus {
        self.registry
            .status(id)
            .await
            .expect("status read")
            .unwrap_or_else(|| panic!("no status row for {id}"))
    }

    async fn live_on(&self, id: &str) -> LiveOn {
        let status = self.status(id).await;
        let now = gateway_adapters::registry::proxies::unix_now();
        let reports = self.proxies().current(now).await.expect("proxy reports");
        let mut cache = BundleCache::new(&self.store);
        live_on(&mut cache, id, &status, &reports).await
    }

    /// Polls the current proxy reports until `pred` holds (bounded).
    async fn wait_proxies(
        &self,
        what: &str,
        pred: impl Fn(&[ProxyReport]) -> bool,
    ) -> Vec<ProxyReport> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = Vec::new();
        while Instant::now() < deadline {
            let now = gateway_adapters::registry::proxies::unix_now();
            last = self.proxies().current(now).await.expect("proxy reports");
            if pred(&last) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("{what} not seen within 30s; current reports: {last:?}");
    }
}

/// One proxy task: a sidecar reporting as `id` and Envoy started from what it delivered.
struct Proxy {
    sidecar: SidecarProcess,
    _envoy: EnvoyProcess,
    _dirs: Dirs,
}

impl Proxy {
    async fn start(p: &Pipeline, id: &str, poll_interval: &str) -> Proxy {
        Proxy::start_with_env(p, id, poll_interval, &[]).await
    }

    async fn start_with_env(
        p: &Pipeline,
        id: &str,
        poll_interval: &str,
        env: &[(&str, &str)],
    ) -> Proxy {
        let dirs = Dirs::new();
        let ports = EnvoyPorts::free();
        let admin = format!("http://{}", ports.admin);
        let mut args = envoy_mode_args(p.store.bucket(), &dirs, &admin, &REPORT_ARGS);
        let at = args
            .iter()
            .position(|a| a == "--interval")
            .expect("the common args set --interval");
        args[at + 1] = poll_interval.to_string();
        args.extend(["--table", p.registry.table(), "--proxy-id", id].map(String::from));
        let sidecar = SidecarProcess::start_with_env(&p.moto, &args, env);
        wait_files(&dirs, Duration::from_secs(30)).await;
        let envoy = start_envoy(&dirs, ports);
        Proxy {
            sidecar,
            _envoy: envoy,
            _dirs: dirs,
        }
    }
}

#[tokio::test]
async fn proxies_report_deliveries_an_entry_is_live_on_n_of_m_and_a_silent_proxy_ages_out() {
    let p = Pipeline::start().await;
    let invoices = entry("billing", "invoices", &["/invoices"]);
    let pay = entry("payments", "pay", &["/pay"]);
    p.register(invoices.clone()).await;
    p.register(pay.clone()).await;
    assert!(matches!(p.reconcile().await, Outcome::Published { .. }));
    let first = p.live_hash().await;
    let first_status = p.status("billing/invoices").await;

    // The proxies start a second later than the publish (S3 times are whole seconds).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Proxy a polls every second; proxy b delivers once and then polls only hourly, so it keeps
    // serving (and reporting) the first bundle.
    let a = Proxy::start(&p, "proxy-a", "1").await;
    let b = Proxy::start(&p, "proxy-b", "3600").await;
    a.sidecar.wait_live(&first, Duration::from_secs(30)).await;
    b.sidecar.wait_live(&first, Duration::from_secs(30)).await;
    let rows = p
        .wait_proxies("both proxies reporting the first bundle", |rows| {
            rows.len() == 2 && rows.iter().all(|r| r.hash == first)
        })
        .await;
    for row in &rows {
        assert_eq!(
            Some(&row.version_id),
            first_status.version_id.as_ref(),
            "{row:?}"
        );
        assert!(row.delivered_at <= row.reported_at, "{row:?}");
        assert_eq!(row.expires_at, row.reported_at + 4, "{row:?}");
        // Published before these sidecars started: a start-up delivery is not lag.
        assert_eq!(row.lag_seconds, None, "{row:?}");
    }
    let on = p.live_on("billing/invoices").await;
    assert_eq!((on.live(), on.reporting()), (2, 2), "{on:?}");
    assert!(on.everywhere());

    // billing/invoices changes; only proxy a delivers it.
    let mut invoices2 = invoices.clone();
    invoices2
        .routes
        .push(common::route("/invoices/v2", None, vec![]));
    p.register(invoices2.clone()).await;
    assert!(matches!(p.reconcile().await, Outcome::Published { .. }));
    let second = p.live_hash().await;
    assert_ne!(first, second);
    a.sidecar.wait_live(&second, Duration::from_secs(30)).await;
    let rows = p
        .wait_proxies("proxy a reporting the second bundle", |rows| {
            rows.iter()
                .any(|r| r.proxy_id == "proxy-a" && r.hash == second)
        })
        .await;
    let a_row = rows
        .iter()
        .find(|r| r.proxy_id == "proxy-a")
        .expect("row a");
    assert!(a_row.lag_seconds.is_some_and(|l| l < 600), "{a_row:?}");

    let on = p.live_on("billing/invoices").await;
    assert_eq!(on.summary(), "live on 1 of 2 proxies", "{on:?}");
    let stale = on
        .proxies
        .iter()
        .find(|v| v.proxy.proxy_id == "proxy-b")
        .expect("proxy b listed");
    assert!(!stale.live);
    assert!(
        stale
            .why
            .as_deref()
            .unwrap_or_default()
            .contains("another version of billing/invoices"),
        "{stale:?}"
    );
    // payments/pay did not change: the first bundle (b) and the second (a, which still holds
    // it exactly) both serve its published revision.
    let on = p.live_on("payments/pay").await;
    assert_eq!(on.summary(), "live on 2 of 2 proxies", "{on:?}");

    // Proxy b goes silent: its row ages out of every reader within the TTL, while DynamoDB
    // (which deletes expired rows only eventually; moto never) still holds it.
    drop(b);
    p.wait_proxies("proxy b aged out", |rows| {
        rows.len() == 1 && rows[0].proxy_id == "proxy-a"
    })
    .await;
    // A minute ago b still counted: its row is read back as stored (a reader at time 0 would
    // see every row as written in its future and ignore it).
    let raw = p
        .registry
        .proxies()
        .current(gateway_adapters::registry::proxies::unix_now() - 60)
        .await
        .expect("reports a minute ago");
    assert!(
        raw.iter().any(|r| r.proxy_id == "proxy-b"),
        "the expired row is still stored: {raw:?}"
    );
    let on = p.live_on("billing/invoices").await;
    assert_eq!(on.summary(), "live on 1 of 1 proxies", "{on:?}");
    assert!(on.everywhere());

    // Each delivery emitted DeliveryLagSeconds.
    let listed = p
        .cloudwatch
        .list_metrics()
        .namespace("Gateway")
        .metric_name("DeliveryLagSeconds")
        .send()
        .await
        .expect("list metrics");
    assert!(!listed.metrics().is_empty(), "DeliveryLagSeconds emitted");
    let status = a.sidecar.status().await.expect("/status");
    assert_eq!(status["report"]["proxy_id"], "proxy-a", "{status}");
    assert_eq!(
        status["report"]["last_reported_hash"],
        json!(second),
        "{status}"
    );
    assert!(status["live"]["lag_seconds"].is_u64(), "{status}");
}

fn create(url: &str, request_id: &str, e: &Entry, wait_for: &str) -> Value {
    response_url::cfn_create_waiting(url, request_id, e, Some(wait_for))
}

/// The custom resource's answer to `event`, while reconcile runs keep coming.
async fn answer_while_reconciling(p: &Pipeline, reg: &DynamoRegistry, event: Value) -> Value {
    let (url, mut rx) = response_url::response_url(200).await;
    let mut event = event;
    event["ResponseURL"] = json!(url);
    let done = AtomicBool::new(false);
    let http = ResponseClient::new().expect("http");
    let ((), ()) = tokio::join!(
        async {
            handle(reg, &http, ACCOUNT, event).await.expect("handled");
            done.store(true, Ordering::SeqCst);
        },
        async {
            while !done.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(300)).await;
                p.reconcile().await;
            }
        }
    );
    rx.recv().await.expect("answered").body
}

#[tokio::test]
async fn wait_for_serving_answers_once_every_proxy_serves_the_entry_and_failed_when_quarantined() {
    let mut p = Pipeline::start().await;
    p.cfg.render.upstream_ca_file = "/nonexistent/ca-certificates.crt".into();
    p.register(entry("ops", "base", &["/base"])).await;
    p.reconcile().await;
    let client = p.registry_client().await;
    let reg = |wait: u64| {
        DynamoRegistry::new(client.clone(), p.registry.table(), DOMAIN)
            .with_policy(Policy::new(DOMAIN, true))
            .with_publish_wait(Duration::from_secs(wait), Duration::from_millis(200))
            .with_bundles(p.store.clone())
    };
    for team in ["billing", "payments"] {
        p.registry
            .tenancy()
            .grant(team, ACCOUNT, "test")
            .await
            .expect("grant");
    }

    // No proxy reports yet: published, but not serving anywhere, so FAILED when the wait ends.
    let lonely = entry("billing", "lonely", &["/lonely"]);
    let body = answer_while_reconciling(&p, &reg(10), create("", "r0", &lonely, "serving")).await;
    assert_eq!(body["Status"], "FAILED", "{body}");
    let reason = body["Reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not live on every proxy within 10s")
            && reason.contains("no proxy is reporting"),
        "{reason}"
    );
    assert_eq!(body["PhysicalResourceId"], "billing/lonely");

    // A proxy delivers: SUCCESS once it serves the new entry.
    let a = Proxy::start(&p, "proxy-a", "1").await;
    a.sidecar
        .wait_live(&p.live_hash().await, Duration::from_secs(30))
        .await;
    let invoices = entry("billing", "invoices", &["/invoices"]);
    let body = answer_while_reconciling(&p, &reg(60), create("", "r1", &invoices, "serving")).await;
    assert_eq!(body["Status"], "SUCCESS", "{body}");
    let reason = body["Reason"].as_str().unwrap_or_default();
    assert!(reason.contains("live on 1 of 1 proxies"), "{reason}");
    let live = p.live_hash().await;
    let status = a.sidecar.status().await.expect("/status");
    assert_eq!(
        status["live"]["hash"],
        json!(live),
        "the proxy runs the bundle: {status}"
    );

    // An entry Envoy refuses is quarantined: FAILED with the stage and Envoy's reason.
    let mut tls = entry("payments", "api", &["/pay"]);
    tls.backend = "https://payments.internal.example:8443".into();
    let body = answer_while_reconciling(&p, &reg(60), create("", "r2", &tls, "serving")).await;
    assert_eq!(body["Status"], "FAILED", "{body}");
    let reason = body["Reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("QUARANTINED") && reason.contains("layer 3"),
        "{reason}"
    );

    // Without the bundle bucket, `serving` is refused before anything is stored.
    let blind = DynamoRegistry::new(client.clone(), p.registry.table(), DOMAIN)
        .with_policy(Policy::new(DOMAIN, true));
    let later = entry("billing", "later", &["/later"]);
    let body = answer_while_reconciling(&p, &blind, create("", "r3", &later, "serving")).await;
    assert_eq!(body["Status"], "FAILED", "{body}");
    assert!(
        body["Reason"]
            .as_str()
            .unwrap_or_default()
            .contains("GATEWAY_BUCKET"),
        "{body}"
    );
    assert!(p
        .registry
        .get("billing/later")
        .await
        .expect("get")
        .is_none());
}

impl Pipeline {
    /// A DynamoDB client with the registry's own retry and timeout settings.
    async fn registry_client(&self) -> aws_sdk_dynamodb::Client {
        gateway_adapters::aws::dynamodb_client(&self.moto.sdk_config().await)
    }
}

/// A DynamoDB endpoint that is broken (the test kit's stub server): `hang` accepts connections
/// and never answers; otherwise it answers every request with a throttling error. It counts the
/// connections it saw and stops when dropped.
fn broken_dynamodb(hang: bool) -> StubServer {
    if hang {
        return StubServer::start(Behaviour::Hang);
    }
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
    StubServer::answering(move |_| {
        Answer::status(400)
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amzn-requestid", "t")
            .body(body)
    })
}

#[tokio::test]
async fn delivery_goes_on_while_the_table_hangs_or_throttles() {
    let p = Pipeline::start().await;
    p.register(entry("billing", "invoices", &["/invoices"]))
        .await;
    p.reconcile().await;
    for hang in [true, false] {
        let what = if hang { "hanging" } else { "throttling" };
        let broken = broken_dynamodb(hang);
        let (endpoint, seen) = (broken.url(), broken.connection_counter());
        let proxy = Proxy::start_with_env(
            &p,
            &format!("proxy-{what}"),
            "1",
            &[("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str())],
        )
        .await;
        let first = p.live_hash().await;
        proxy
            .sidecar
            .wait_live(&first, Duration::from_secs(30))
            .await;
        // A report is in flight or failing while the next bundle is published and delivered.
        let deadline = Instant::now() + Duration::from_secs(20);
        while seen.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            seen.load(Ordering::SeqCst) > 0,
            "{what}: the sidecar tried to report"
        );
        let service = format!("svc-{what}");
        p.register(entry("billing", &service, &["/x"])).await;
        assert!(matches!(p.reconcile().await, Outcome::Published { .. }));
        let next = p.live_hash().await;
        proxy
            .sidecar
            .wait_live(&next, Duration::from_secs(30))
            .await;
        let status = proxy
            .sidecar
            .wait_status(Duration::from_secs(30), "a failed report", |s| {
                s["report"]["failures"].as_u64().unwrap_or(0) > 0
            })
            .await;
        assert!(
            status["report"]["last_reported_at"].is_null(),
            "{what}: {status}"
        );
        let error = status["report"]["last_error"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            if hang {
                error.contains("timed out")
            } else {
                !error.is_empty()
            },
            "{what}: {error}"
        );
        assert!(
            proxy
                .sidecar
                .log_text()
                .contains("proxy report not written; delivery goes on"),
            "{what}"
        );
        // Nothing reached the real table.
        let now = gateway_adapters::registry::proxies::unix_now();
        assert!(p.proxies().current(now).await.expect("reports").is_empty());
    }
}
