//! The S3 config store against moto's server: versions, conditional puts, restore by copy.

use gateway_adapters::store::{
    s3_client, ConfigStore, Precondition, PutBundle, S3Store, StoreError, Writer,
};
use gateway_render::bundle::{Sealed, Trust};
use gateway_render::Bundle;
use gateway_testkit::{unique_name, MotoServer};
use serde_json::json;

async fn store(moto: &MotoServer) -> S3Store {
    let conf = moto.sdk_config().await;
    let signer = gateway_testkit::signing::new_signer(moto).await;
    let store = S3Store::new(s3_client(&conf), unique_name("bundles")).with_signer(signer);
    assert!(store
        .create_bucket_if_absent()
        .await
        .expect("create bucket"));
    assert!(!store
        .create_bucket_if_absent()
        .await
        .expect("second create is a no-op"));
    store
}

/// A bundle stating `hash` (the store does not judge hashes; readers do).
fn sealed(hash: &str) -> Sealed {
    let envoy = gateway_render::bundle::to_json_bytes(&json!({"resources": [], "version_info": hash}));
    Bundle {
        hash: hash.to_string(),
        files: [
            ("clusters.json".to_string(), envoy.clone()),
            ("ratelimit.yaml".to_string(), format!("# {hash}\n")),
            ("routes.json".to_string(), envoy),
        ]
        .into(),
        entries: vec![],
    }
    .seal()
}

fn put(sealed: &Sealed, writer: Writer, precondition: Precondition) -> PutBundle<'_> {
    PutBundle {
        sealed,
        writer,
        precondition,
    }
}

/// The reconciler's put, on the condition that the live object's etag is `etag`.
fn reconciler_put<'a>(sealed: &'a Sealed, etag: &str) -> PutBundle<'a> {
    put(sealed, Writer::Reconciler, Precondition::Matches(etag.to_string()))
}

/// The hash a stored version states, after checking it is signed by the store's key.
async fn stated(store: &S3Store, version: &str) -> String {
    let parsed = Bundle::read(&store.get_version(version).await.expect("get")).expect("a bundle");
    let key = store.signing_key().await.expect("public key").expect("a signer");
    let trust = Trust {
        keys: vec![key],
        allow_unsigned: false,
    };
    parsed.judge(&trust).expect("signed by the store's KMS key");
    parsed.bundle.hash
}

#[tokio::test]
async fn conditional_puts_versions_and_restore() {
    let moto = MotoServer::start();
    let store = store(&moto).await;
    assert_eq!(
        store.head_live().await.expect("head"),
        None,
        "a new bucket has no bundle"
    );

    let v1 = store
        .put_bundle(put(&sealed("sha256:1"), Writer::Seed, Precondition::Absent))
        .await
        .expect("seed");
    // A second create-only put must fail: a re-run seed never overwrites.
    let again = store
        .put_bundle(put(&sealed("sha256:2"), Writer::Seed, Precondition::Absent))
        .await;
    assert!(
        matches!(again, Err(StoreError::PreconditionFailed)),
        "got {again:?}"
    );

    let live = store.head_live().await.expect("head").expect("live bundle");
    assert_eq!(live.version_id, v1);
    assert_eq!(live.hash.as_deref(), Some("sha256:1"));
    assert_eq!(live.writer, Writer::Seed);

    // If-Match on a stale etag fails; on the live etag it succeeds.
    let v2 = store
        .put_bundle(reconciler_put(&sealed("sha256:2"), &live.etag))
        .await
        .expect("put on the live etag");
    let stale = store
        .put_bundle(reconciler_put(&sealed("sha256:3"), &live.etag))
        .await;
    assert!(
        matches!(stale, Err(StoreError::PreconditionFailed)),
        "got {stale:?}"
    );

    assert_eq!(stated(&store, &v1).await, "sha256:1");
    assert_eq!(stated(&store, &v2).await, "sha256:2");

    let history = store.list_versions(10).await.expect("versions");
    let ids: Vec<&str> = history.iter().map(|v| v.version_id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{history:?}");
    assert!(ids.contains(&v1.as_str()) && ids.contains(&v2.as_str()));
    assert!(history.iter().any(|v| v.version_id == v2 && v.is_latest));

    let v3 = store
        .restore_version(&v1, "sha256:1")
        .await
        .expect("restore v1");
    assert_ne!(v3, v1, "a restore is a new version");
    let live = store.head_live().await.expect("head").expect("live");
    assert_eq!(live.version_id, v3);
    assert_eq!(live.hash.as_deref(), Some("sha256:1"));
    assert_eq!(live.writer, Writer::Restore);
    assert_eq!(stated(&store, &v3).await, "sha256:1", "the copy keeps its signature");

    let missing = store.restore_version("no-such-version", "sha256:x").await;
    assert!(missing.is_err(), "restoring a missing version must fail");

    store
        .keep_failed("abc/reason.txt", b"why")
        .await
        .expect("keep failed");
    let obj = store
        .client()
        .get_object()
        .bucket(store.bucket())
        .key("failed/abc/reason.txt")
        .send()
        .await
        .expect("failed object exists");
    let body = obj.body.collect().await.expect("body").into_bytes();
    assert_eq!(&body[..], b"why");
}
