//! The store's read side against moto's server, as the sidecar uses it (docs/design.md#delivery):
//! a conditional HEAD that tells "unchanged" and "nothing published" from a live version, and a
//! bounded GET whose refusals name the bound, with S3's own failures kept whole.

use gateway_adapters::store::{
    encoding, s3_client, ConfigStore, LiveHead, Precondition, PutBundle, ReadError, S3Store,
    StoreError, Writer,
};
use gateway_render::contract::{BUNDLE_META_HASH, BUNDLE_META_WRITER, BUNDLE_OBJECT};
use gateway_testkit::{unique_name, MotoServer};

async fn store(moto: &MotoServer) -> S3Store {
    let conf = moto.sdk_config().await;
    let signer = gateway_testkit::signing::new_signer(moto).await;
    let store = S3Store::new(s3_client(&conf), unique_name("bundles")).with_signer(signer);
    store
        .create_bucket_if_absent()
        .await
        .expect("create bucket");
    store
}

#[tokio::test]
async fn a_conditional_head_tells_absent_unchanged_and_live_apart() {
    let moto = MotoServer::start();
    let store = store(&moto).await;
    assert_eq!(
        store.head_live_unless(None).await.expect("head"),
        LiveHead::Absent
    );
    let envoy = gateway_render::bundle::to_json_bytes(
        &serde_json::json!({"resources": [], "version_info": "sha256:1"}),
    );
    let sealed = gateway_render::Bundle {
        hash: "sha256:1".into(),
        files: [
            ("clusters.json".to_string(), envoy.clone()),
            ("ratelimit.yaml".to_string(), "x\n".to_string()),
            ("routes.json".to_string(), envoy),
        ]
        .into(),
        entries: vec![],
    }
    .seal();
    let v1 = store
        .put_bundle(PutBundle {
            sealed: &sealed,
            writer: Writer::Reconciler,
            precondition: Precondition::Absent,
        })
        .await
        .expect("put");
    let LiveHead::Live(live) = store.head_live_unless(None).await.expect("head") else {
        panic!("a published bundle is live");
    };
    assert_eq!(live.version_id, v1);
    assert_eq!(live.hash.as_deref(), Some("sha256:1"));
    assert_eq!(
        store
            .head_live_unless(Some(&live.etag))
            .await
            .expect("conditional head"),
        LiveHead::Unchanged,
        "the etag still matches"
    );
    assert_eq!(
        store
            .head_live_unless(Some("\"another-etag\""))
            .await
            .expect("conditional head"),
        LiveHead::Live(live.clone())
    );

    // The GET returns the canonical bytes (stored compressed) and the metadata the HEAD saw.
    let fetched = store
        .fetch_version(&v1, Some(1 << 20))
        .await
        .expect("fetch");
    let read = gateway_render::Bundle::read(&fetched.bytes).expect("the archive");
    assert_eq!(read.bundle.hash, "sha256:1");
    assert!(read.signature.is_some(), "signed by the store's key");
    assert_eq!(fetched.head.hash, live.hash);
    assert_eq!(fetched.head.writer, Writer::Reconciler);
    assert_eq!(fetched.head.version_id, v1);
}

#[tokio::test]
async fn a_bounded_get_refuses_past_the_bound_and_keeps_s3_failures_whole() {
    let moto = MotoServer::start();
    let store = store(&moto).await;
    // Plain JSON, as versions written before compression are: its stored size is its size.
    let body = vec![b' '; 4096];
    let client = store.client().clone();
    let put = client
        .put_object()
        .bucket(store.bucket())
        .key(BUNDLE_OBJECT)
        .metadata(BUNDLE_META_HASH, "sha256:x")
        .metadata(BUNDLE_META_WRITER, "seed")
        .body(body.clone().into())
        .send()
        .await
        .expect("put");
    let version = put.version_id().expect("versioned").to_string();

    let refused = store
        .fetch_version(&version, Some(1000))
        .await
        .expect_err("past the bound");
    assert!(
        matches!(
            refused,
            ReadError::TooLarge {
                bytes: 4096,
                max: 1000
            }
        ),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        "bundle.json is 4096 bytes or more; at most 1000 (GATEWAY_MAX_BUNDLE_BYTES)"
    );
    // Unbounded on the wire (the store's own reads), the same version reads whole.
    assert_eq!(
        store
            .fetch_version(&version, None)
            .await
            .expect("fetch")
            .bytes,
        body
    );

    // A gzip bomb is bounded by what it decompresses to.
    let small = store.clone().with_max_bundle_bytes(1 << 10);
    let bomb = encoding::compress(&vec![b' '; 1 << 20]);
    let put = client
        .put_object()
        .bucket(store.bucket())
        .key(BUNDLE_OBJECT)
        .metadata(BUNDLE_META_HASH, "sha256:bomb")
        .body(bomb.into())
        .send()
        .await
        .expect("put");
    let bomb_version = put.version_id().expect("versioned").to_string();
    let refused = small
        .fetch_version(&bomb_version, None)
        .await
        .expect_err("bomb");
    assert!(
        matches!(
            refused,
            ReadError::Encoding(encoding::DecodeError::TooLarge { max: 1024 })
        ),
        "{refused:?}"
    );

    // A version that does not exist: S3's error, its code intact, and the store's NotFound.
    let missing = store
        .fetch_version("no-such-version", None)
        .await
        .expect_err("missing");
    let ReadError::Call(call) = &missing else {
        panic!("{missing:?}");
    };
    assert!(
        matches!(call.0.code(), Some("NoSuchVersion") | Some("NoSuchKey")),
        "{:?}",
        call.0.code()
    );
    assert!(matches!(
        store.get_version("no-such-version").await,
        Err(StoreError::NotFound(v)) if v == "no-such-version"
    ));

    // A failed call keeps the SDK's error as its source; the message is unchanged.
    let nowhere = S3Store::new(store.client().clone(), unique_name("absent"));
    let err = nowhere.list_versions(1).await.expect_err("no such bucket");
    assert!(
        err.to_string()
            .starts_with(&format!("S3: s3://{}: NoSuchBucket", nowhere.bucket())),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some(), "{err:?}");
}
