//! The register path's bounds check reads the registry totals the reconciler records
//! (docs/design.md#registry-totals) and the entry's own row, not the whole table: growth past
//! each bound is refused naming the field, and no registration sends a Scan once totals exist.
//! Against moto's server; every DynamoDB request is counted by an SDK interceptor.

use gateway_testkit::registry as registry_support;

use gateway_adapters::aws::dynamodb_config;
use gateway_adapters::registry::{DynamoRegistry, RegisterOutcome, RegistryError};
use gateway_render::bounds::Totals;
use gateway_render::check::Policy;
use gateway_render::{Bounds, Canary, Entry};
use registry_support::{entry, moto, registry, DOMAIN};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The requests a client sent, by DynamoDB operation (`GetItem`, `Scan`, …), as named on the
/// wire in the `x-amz-target` header.
#[derive(Debug, Default)]
struct Requests(Mutex<BTreeMap<String, usize>>);

impl Requests {
    fn count(&self, operation: &str) -> usize {
        self.0
            .lock()
            .expect("counts")
            .get(operation)
            .copied()
            .unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.0.lock().expect("counts").values().sum()
    }
}

#[derive(Debug)]
struct CountRequests(Arc<Requests>);

impl aws_sdk_dynamodb::config::Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "CountRequests"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _runtime: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let target = context.request().headers().get("x-amz-target");
        let operation = target.and_then(|t| t.rsplit('.').next()).unwrap_or("?");
        *self
            .0
             .0
            .lock()
            .expect("counts")
            .entry(operation.to_string())
            .or_default() += 1;
        Ok(())
    }
}

/// A registry with `bounds` on a fresh table whose client counts its requests; the plain
/// registry beside it writes the totals as the reconciler would.
async fn counted(bounds: Bounds) -> (DynamoRegistry, DynamoRegistry, Arc<Requests>) {
    let plain = registry().await;
    let requests = Arc::new(Requests::default());
    let conf = moto().sdk_config().await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        dynamodb_config(&conf)
            .interceptor(CountRequests(requests.clone()))
            .build(),
    );
    let reg = DynamoRegistry::new(client, plain.table(), DOMAIN)
        .with_policy(Policy::new(DOMAIN, true))
        .with_bounds(bounds);
    (reg, plain, requests)
}

fn problems(result: Result<RegisterOutcome, RegistryError>) -> Vec<String> {
    match result {
        Err(RegistryError::Rejected(r)) => r.problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

fn totals(routes: usize, clusters: usize, teams: &[(&str, usize)]) -> Totals {
    Totals {
        routes,
        clusters,
        entries_per_team: teams.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
    }
}

fn with_canary(mut e: Entry) -> Entry {
    e.canary = Some(Canary {
        backend: "https://canary.internal.example:8443".into(),
        weight: 10,
        header: None,
    });
    e
}

const TEAM_PAST: &str =
    "team: team billing has 3 entries; at most 2 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)";

#[tokio::test]
async fn growth_is_judged_against_the_recorded_totals_without_a_scan() {
    let bounds = Bounds {
        max_entries_per_team: 2,
        max_routes: 6,
        max_clusters: 3,
        ..Bounds::default()
    };
    let (reg, plain, requests) = counted(bounds).await;
    // The totals say billing holds two entries, four routes, two clusters; the table holds none
    // of them, so a count on a full read would accept everything below.
    plain
        .put_totals(&totals(4, 2, &[("billing", 2)]))
        .await
        .expect("totals");

    let billing_c = entry("billing", "c", "billing", &["/c"]);
    assert_eq!(problems(reg.register(&billing_c).await), [TEAM_PAST]);
    let cart = |paths: &[&str]| entry("shop", "cart", "shop", paths);
    assert_eq!(
        problems(reg.register(&cart(&["/x", "/y", "/z"])).await),
        ["routes: the registry would hold 7 routes; at most 6 (GATEWAY_MAX_ROUTES)"]
    );
    assert!(matches!(
        reg.register(&cart(&["/x", "/y"])).await,
        Ok(RegisterOutcome::Created { revision: 1 })
    ));

    // The reconciler's next count holds the cart: a canary (three more clusters) is growth past
    // the envelope, and shrinking is always allowed.
    plain
        .put_totals(&totals(6, 3, &[("billing", 2), ("shop", 1)]))
        .await
        .expect("totals");
    assert_eq!(
        problems(reg.register(&with_canary(cart(&["/x", "/y"]))).await),
        [
            "backend: the registry would hold 6 backend clusters; at most 3 \
          (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)"
        ]
    );
    assert!(matches!(
        reg.register(&cart(&["/x"])).await,
        Ok(RegisterOutcome::Updated { revision: 2 })
    ));

    assert!(
        requests.count("GetItem") > 0,
        "requests are counted by operation"
    );
    assert!(requests.count("TransactWriteItems") > 0);
    assert_eq!(
        requests.count("Scan"),
        0,
        "no registration reads the whole table ({} requests)",
        requests.total()
    );
}

#[tokio::test]
async fn before_the_first_totals_a_registration_counts_on_a_full_read() {
    let bounds = Bounds {
        max_entries_per_team: 2,
        ..Bounds::default()
    };
    let (reg, _plain, requests) = counted(bounds).await;
    for service in ["a", "b"] {
        reg.register(&entry(
            "billing",
            service,
            "billing",
            &[&format!("/{service}")],
        ))
        .await
        .expect("register");
    }
    let scans = requests.count("Scan");
    assert!(scans >= 2, "each registration counted on a scan: {scans}");
    assert_eq!(
        problems(
            reg.register(&entry("billing", "c", "billing", &["/c"]))
                .await
        ),
        [TEAM_PAST]
    );
}
