//! Signed publishes on moto's KMS (docs/design.md#bundle-signature): every writer signs, a
//! restore copies a version its key verifies and publishes any other again signed, and the seed
//! reseals a gateway's unsigned live bundle.

use gateway_testkit::control as support;

use gateway_adapters::registry::{PublishedStateRead, Registry};
use gateway_adapters::store::{ConfigStore, Writer};
use gateway_control::operator::{history, kill_switch, restore};
use gateway_control::reconcile::{seed, SeedOutcome};
use gateway_render::bundle::{Signer, Trust};
use gateway_render::Bundle;
use serde_json::json;
use support::{entry, published, Harness};

/// The live version's bundle, its format, and what its signature says against the store's key.
async fn live_signed(h: &Harness) -> (String, Bundle, u32, Signer) {
    let live = h.live().await;
    let parsed = Bundle::read(&h.store.get_version(&live.version_id).await.expect("get"))
        .expect("a bundle");
    parsed.bundle.verify().expect("verifies");
    let key = h.store.signing_key().await.expect("key").expect("a signer");
    let trust = Trust {
        keys: vec![key],
        allow_unsigned: false,
    };
    let signer = parsed.judge(&trust).expect("signed by the store's key");
    (live.version_id, parsed.bundle, parsed.format, signer)
}

/// `bundle` as a format-1 version, as the bucket holds them from before signing.
async fn put_format_1(h: &Harness, bundle: &Bundle) -> String {
    let body = serde_json::to_vec(&json!({
        "entries": bundle.entries, "files": bundle.files, "format": 1, "hash": bundle.hash
    }))
    .expect("json");
    h.store
        .client()
        .put_object()
        .bucket(h.store.bucket())
        .key("bundle.json")
        .metadata("hash", &bundle.hash)
        .metadata("writer", "reconciler")
        .body(body.into())
        .send()
        .await
        .expect("format-1 put")
        .version_id()
        .expect("versioned")
        .to_string()
}

#[tokio::test]
async fn every_writer_signs_and_a_restore_copies_signed_versions_and_reseals_old_ones() {
    let h = Harness::start().await;
    h.register(entry("billing", "invoices", "invoices", &["/invoices"])).await;
    let first = h.reconcile().await;
    let (first_version, first_hash) = published(&first);
    let (_, _, format, _) = live_signed(&h).await;
    assert_eq!(format, 2);

    // Level 2 of the kill switch is a signed bundle too.
    let (ks_version, _) = kill_switch(&h.store, &h.cfg.render).await.expect("kill switch");
    let (live, bundle, _, _) = live_signed(&h).await;
    assert_eq!(live, ks_version);
    assert!(bundle.entries.is_empty());

    // A restore of a signed version is a copy: the same signature, still verifying.
    let restored = restore(&h.registry, &h.store, Some(first_version)).await.expect("restore");
    assert!(!restored.resigned, "{restored:?}");
    assert_eq!(&restored.hash, first_hash);
    let (_, bundle, _, _) = live_signed(&h).await;
    assert_eq!(&bundle.hash, first_hash);

    // A format-1 version (unsigned, from before signing) is published again, signed, same hash.
    let old = put_format_1(&h, &bundle).await;
    kill_switch(&h.store, &h.cfg.render).await.expect("kill switch");
    let restored = restore(&h.registry, &h.store, Some(&old)).await.expect("restore");
    assert!(restored.resigned, "{restored:?}");
    let (live, bundle, format, signer) = live_signed(&h).await;
    assert_eq!((live.as_str(), format), (restored.version_id.as_str(), 2));
    assert_eq!(&bundle.hash, first_hash, "nothing re-rendered");
    assert!(matches!(signer, Signer::Key { .. }));
    assert_eq!(h.live().await.writer, Writer::Restore);

    // History says, per version, whether it verifies.
    let items = history(&h.registry, &h.store, 10).await.expect("history");
    let of = |v: &str| {
        items
            .iter()
            .find(|i| i.version_id == v)
            .and_then(|i| i.signature.clone())
            .unwrap_or_default()
    };
    assert_eq!(of(&old), "unsigned (format 1)");
    assert!(of(&restored.version_id).starts_with("signed, verified with "), "{items:?}");
}

#[tokio::test]
async fn the_seed_reseals_an_unsigned_live_bundle_and_moves_the_record() {
    let h = Harness::start().await;
    h.register(entry("billing", "invoices", "invoices", &["/invoices"])).await;
    let first = h.reconcile().await;
    let (_, hash) = published(&first);
    let (_, bundle, _, _) = live_signed(&h).await;
    // The gateway before signing: its live bundle is format 1, and the record points at it.
    let old = put_format_1(&h, &bundle).await;
    let state = h.registry.read_state().await.expect("state");
    let moved = gateway_adapters::registry::PublishedState {
        version_id: old.clone(),
        hash: hash.clone(),
        published_at: 1,
    };
    h.registry
        .record_published(state.as_ref(), &moved)
        .await
        .expect("record");

    let outcome = seed(&h.registry, &h.store, &h.cfg).await.expect("seed");
    let SeedOutcome::Resealed { from, version_id, hash: resealed } = &outcome else {
        panic!("expected a reseal, got {outcome}")
    };
    assert_eq!((from, resealed), (&old, hash));
    let (live, _, format, _) = live_signed(&h).await;
    assert_eq!((&live, format), (version_id, 2));
    let recorded = h.registry.published_state().await.expect("state").expect("recorded");
    assert_eq!(&recorded.version_id, version_id, "the record moved with the same hash");
    // A signed live bundle is left as it is.
    let again = seed(&h.registry, &h.store, &h.cfg).await.expect("seed");
    assert!(matches!(again, SeedOutcome::AlreadySeeded { .. }), "{again}");
}
