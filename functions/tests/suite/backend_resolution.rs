//! Backends judged by what their names resolve to, at registration and at every reconcile,
//! against moto's server and the real Envoy. Fixed answers stand in for DNS.

use gateway_testkit::control as support;

use gateway_adapters::registry::RegistryError;
use gateway_adapters::resolve::{BackendLookup, FixedResolver};
use gateway_control::reconcile::{reconcile, Outcome, Stage};
use support::{entry, rejected, Harness};

const NAME: &str = "invoices.internal.example";

#[tokio::test]
async fn registration_refuses_a_name_that_leads_to_metadata_naming_name_address_and_why() {
    let h = Harness::start().await;
    let registry = h.registry_view().with_backend_lookup(BackendLookup::new(
            FixedResolver::new().answer(NAME, &["10.0.0.9", "169.254.170.2"]),
        ));
    let mut e = entry("billing", "invoices", "invoices", &["/invoices"]);
    e.backend = format!("http://{NAME}:8080");
    let err = registry.register(&e).await.expect_err("refused");
    let RegistryError::Rejected(rejection) = &err else {
        panic!("expected a rejection, got {err}")
    };
    assert_eq!(rejection.problems.len(), 1);
    assert_eq!(rejection.problems[0].field, "backend");
    assert_eq!(
        rejection.problems[0].reason,
        "invoices.internal.example resolves to 169.254.170.2 is a link-local/metadata address; the gateway never routes to it"
    );
    // Nothing was written.
    assert!(registry.list().await.expect("list").entries.is_empty());
    // The same name leading only into the VPC registers.
    let fine = registry.with_backend_lookup(BackendLookup::new(
        FixedResolver::new().answer(NAME, &["10.0.0.9"]),
    ));
    fine.register(&e).await.expect("registers");
}

#[tokio::test]
async fn a_name_repointed_after_registration_stops_the_next_reconcile_from_publishing() {
    let mut h = Harness::start().await;
    let mut e = entry("billing", "invoices", "invoices", &["/invoices"]);
    e.backend = format!("http://{NAME}:8080");
    h.register(e).await;
    h.cfg.backends = BackendLookup::new(FixedResolver::new().answer(NAME, &["10.0.0.9"]));
    let first = h.reconcile().await;
    assert!(matches!(first, Outcome::Published { .. }), "{first}");
    let live = h.live().await;

    // The team's DNS now answers the ECS credentials endpoint (IPv4-mapped, to try its luck).
    h.cfg.backends =
        BackendLookup::new(FixedResolver::new().answer(NAME, &["::ffff:169.254.170.2"]));
    let second = reconcile(&h.registry, &h.store, &h.metrics, &h.cfg)
        .await
        .expect("run");
    let (stage, reason) = rejected(&second);
    assert_eq!(*stage, Stage::Registry);
    assert!(
        reason.contains("billing/invoices: backend: invoices.internal.example resolves to ::ffff:169.254.170.2 is an IPv4-mapped address carrying the IPv4 address 169.254.170.2"),
        "{reason}"
    );
    assert_eq!(
        h.live().await.version_id,
        live.version_id,
        "nothing published"
    );
}
