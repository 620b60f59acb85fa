//! The sidecar reads Envoy's admin over the Unix socket the production bootstrap puts it on.

mod common;

use common::*;
use gateway_bootstrap::{gateway_bootstrap, proxy_args, AdminAddress, BootstrapParams};
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::free_port;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_waits_for_envoy_through_the_admin_socket() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let socket_dir = tempfile::tempdir().expect("tempdir");
    let socket = socket_dir.path().join("admin.sock");
    let admin = format!("unix:{}", socket.display());
    let once_args = envoy_mode_args(&bucket.name, &dirs, &admin, &["--once"]);
    let billing = |paths: &[&str]| {
        vec![entry(
            "billing",
            "invoices",
            "billing",
            &backend.url(),
            paths.iter().map(|p| route(p, None, vec![])).collect(),
        )]
    };

    // First delivery before Envoy runs.
    bucket.publish(&billing(&["/invoices"])).await;
    let mut once = SidecarProcess::start(moto, &once_args);
    assert_eq!(
        once.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        once.log_text()
    );

    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let envoy = EnvoyProcess::start_with_admin_socket(
        &socket,
        |ports: EnvoyPorts| {
            let params = BootstrapParams {
                clusters_dir: dirs.clusters.clone(),
                routes_dir: dirs.routes.clone(),
                listen: ports.listener,
                admin: AdminAddress::Unix(socket.clone()),
                ratelimit,
                xff_num_trusted_hops: 0,
            };
            gateway_bootstrap(&params).expect("bootstrap")
        },
        |file: &Path| proxy_args(file, true),
    );
    assert_eq!(
        envoy.listening_tcp_ports(),
        vec![envoy.listener_addr().port()]
    );

    // A new bundle: --once exits 0 only once Envoy's stats (read over the socket) show it.
    let (_, second) = bucket.publish(&billing(&["/invoices", "/refunds"])).await;
    let mut once = SidecarProcess::start(moto, &once_args);
    assert_eq!(
        once.wait_exit(Duration::from_secs(60)),
        Some(0),
        "{}",
        once.log_text()
    );
    let (_, stats) = envoy
        .admin_get("/stats?filter=version_text")
        .expect("stats");
    assert!(
        stats.contains(&format!("cluster_manager.cds.version_text: \"{second}\"")),
        "{stats}"
    );

    // A sidecar pointed at a socket nobody serves says so, naming it.
    let missing = format!("unix:{}", socket_dir.path().join("none.sock").display());
    let (_, third) = bucket
        .publish(&billing(&["/invoices", "/refunds", "/x"]))
        .await;
    assert_ne!(third, second);
    let mut lost = SidecarProcess::start(
        moto,
        &envoy_mode_args(&bucket.name, &dirs, &missing, &["--once"]),
    );
    assert_eq!(
        lost.wait_exit(Duration::from_secs(60)),
        Some(1),
        "{}",
        lost.log_text()
    );
    assert!(lost.log_text().contains("none.sock"), "{}", lost.log_text());
}
