//! The sidecar reads Envoy's admin over the Unix socket the production bootstrap puts it on.

use gateway_testkit::delivery as common;

use common::*;
use gateway_bootstrap::{gateway_bootstrap, proxy_args, AdminAddress, BootstrapParams};
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::free_port;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_waits_for_envoy_through_the_admin_socket() {
    let (moto, backend, bucket, dirs) = billing_fixture().await;
    let socket_dir = tempfile::tempdir().expect("tempdir");
    let socket = socket_dir.path().join("admin.sock");
    let admin = format!("unix:{}", socket.display());
    let once_args = envoy_mode_args(&bucket.name, &dirs, &admin, &["--once"]);
    let entries = |paths: &[&str]| billing(&backend.url(), paths);

    // First delivery before Envoy runs.
    bucket.publish(&entries(&["/invoices"])).await;
    SidecarProcess::run_to_exit(moto, &once_args, Duration::from_secs(30), 0);

    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let envoy = EnvoyProcess::start_with_admin_socket(
        &socket,
        |ports: EnvoyPorts| {
            let params = BootstrapParams::local(
                (&dirs.clusters, &dirs.routes),
                (ports.listener, AdminAddress::Unix(socket.clone())),
                ratelimit,
                0,
            );
            gateway_bootstrap(&params).expect("bootstrap")
        },
        |file: &Path| proxy_args(file, true),
    );
    assert_eq!(
        envoy.listening_tcp_ports(),
        vec![envoy.listener_addr().port()]
    );

    // A new bundle: --once exits 0 only once Envoy's stats (read over the socket) show it.
    let (_, second) = bucket.publish(&entries(&["/invoices", "/refunds"])).await;
    SidecarProcess::run_to_exit(moto, &once_args, Duration::from_secs(60), 0);
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
        .publish(&entries(&["/invoices", "/refunds", "/x"]))
        .await;
    assert_ne!(third, second);
    let lost_args = envoy_mode_args(&bucket.name, &dirs, &missing, &["--once"]);
    let log = SidecarProcess::run_to_exit(moto, &lost_args, Duration::from_secs(60), 1);
    assert!(log.contains("none.sock"), "{log}");
}
