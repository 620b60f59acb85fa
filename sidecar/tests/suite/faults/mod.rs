//! The fault suite for delivery: a rate-limit-mode sidecar (the real binary) polls the bucket
//! through the project's fault proxy to moto's server, which breaks its S3 calls. Whatever
//! breaks, no partial or unverified file reaches the watched directory, the last good file
//! stays, the failure is named in `/status` and the log, a poll that stops succeeding is reported
//! (`/ready` 503) while it lasts, and once the faults stop the live bundle is delivered.


use gateway_testkit::delivery::*;
use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_render::{Limit, Per, Unit};
use gateway_testkit::fault_proxy::{Call, Fault, FaultProxy};
use std::net::SocketAddr;
use std::time::Duration;

fn limited(requests: u32) -> Vec<gateway_render::Entry> {
    let limit = Limit::Global {
        per: Per::Route,
        header: None,
        requests,
        every: Unit::Minute,
    };
    billing_routes("http://127.0.0.1:9", vec![route("/invoices", None, vec![limit])])
}

/// The watched directory holds exactly the delivered `ratelimit.yaml` of `hash`'s bundle, and
/// nothing half-written beside it.
fn assert_delivered_whole(dirs: &Dirs, entries: &[gateway_render::Entry]) {
    let names = Dirs::list(&dirs.ratelimit);
    assert_eq!(names, [RATE_LIMIT_FILE], "only the delivered file: {names:?}");
    let on_disk = std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("read");
    assert_eq!(on_disk, rendered(entries).files[RATE_LIMIT_FILE], "byte for byte");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_downloads_and_stalled_polls_deliver_nothing_partial_and_say_why() {
    let moto = shared_moto();
    let upstream: SocketAddr = moto.endpoint.trim_start_matches("http://").parse().expect("addr");
    let proxy = FaultProxy::start(upstream);
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let get = Call::S3 { method: "GET", key: "bundle.json" };

    // The first bundle, while its downloads are cut short: nothing is written until one is whole.
    let first = limited(5);
    let (_, hash) = bucket.publish(&first).await;
    proxy.inject(get.clone(), Fault::Truncate, 3);
    let endpoint = proxy.endpoint();
    let sidecar = SidecarProcess::start_with_env(
        moto,
        &ratelimit_mode_args(&bucket.name, &dirs),
        &[("AWS_ENDPOINT_URL", endpoint.as_str())],
    );
    let status = sidecar
        .wait_error_naming("ended before its Content-Length", "a short body named")
        .await;
    assert!(status["live"].is_null(), "nothing delivered from a short body: {status}");
    assert!(Dirs::list(&dirs.ratelimit).is_empty(), "no partial file");
    sidecar.wait_live(&hash, Duration::from_secs(30)).await;
    assert_delivered_whole(&dirs, &first);

    // Each way a later download can break: named, the last good file kept, then delivered.
    let cases: [(Fault, &str); 3] = [
        (Fault::ResetMidBody, "reset"),
        (Fault::Corrupt, "bundle"),
        (Fault::StallMidBody(Duration::from_secs(40)), "stalled"),
    ];
    for (i, (fault, named)) in cases.into_iter().enumerate() {
        let before = limited(10 + i as u32);
        let next = limited(20 + i as u32);
        let (_, next_hash) = bucket.publish(&next).await;
        proxy.inject(get.clone(), fault, 2);
        let status = sidecar
            .wait_status(Duration::from_secs(60), &format!("{fault:?} named"), |s| {
                let e = last_error(s);
                e.contains(named) && s["live"]["hash"] != next_hash.as_str()
            })
            .await;
        let message = last_error(&status).to_string();
        assert!(!message.contains("ServiceError {"), "no SDK dump: {message}");
        let on_disk = std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("read");
        assert_ne!(on_disk, rendered(&next).files[RATE_LIMIT_FILE], "{fault:?}: not delivered broken");
        let _ = before;
        sidecar.wait_live(&next_hash, Duration::from_secs(60)).await;
        assert_delivered_whole(&dirs, &next);
    }

    // The bucket stops answering HEAD at all: the sidecar says it is stalled (not ready, the
    // reason in /status) while the last good file stays; when the bucket answers again, it
    // recovers.
    proxy.inject(Call::S3 { method: "HEAD", key: "bundle.json" }, Fault::Stall(Duration::from_secs(45)), 1000);
    let stalled = sidecar
        .wait_status(Duration::from_secs(60), "a stalled poll reported", |s| {
            s["stalled"].as_str().is_some_and(|w| w.contains("no successful poll"))
        })
        .await;
    let (code, body) = sidecar.ready().await.expect("ready answers");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("no successful poll"), "{body}; status {stalled}");
    assert!(dirs.ratelimit.join(RATE_LIMIT_FILE).exists(), "the last good file stays");
    proxy.clear();
    let last = limited(99);
    let (_, last_hash) = bucket.publish(&last).await;
    sidecar.wait_live(&last_hash, Duration::from_secs(90)).await;
    let (code, _) = sidecar.ready().await.expect("ready answers");
    assert_eq!(code, 200, "recovered");
    assert_delivered_whole(&dirs, &last);
}
