use crate::BootstrapError;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where Envoy's admin endpoint listens. Production puts it on a Unix socket: no route, whatever
/// its backend resolves to, can reach a socket file, and only processes that share the socket's
/// directory can. A loopback `HOST:PORT` stays available for local runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAddress {
    /// `unix:PATH`: Envoy's `admin.address.pipe`.
    Unix(PathBuf),
    /// `HOST:PORT` on loopback.
    Tcp(SocketAddr),
}

impl From<SocketAddr> for AdminAddress {
    fn from(addr: SocketAddr) -> Self {
        AdminAddress::Tcp(addr)
    }
}

impl fmt::Display for AdminAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminAddress::Unix(path) => write!(f, "unix:{}", path.display()),
            AdminAddress::Tcp(addr) => write!(f, "{addr}"),
        }
    }
}

impl FromStr for AdminAddress {
    type Err = String;

    /// `unix:/ABSOLUTE/PATH` or `HOST:PORT` (an IP address and a port).
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(format!(
                    "{s:?}: a Unix socket path must be absolute, e.g. unix:/run/envoy/admin.sock"
                ));
            }
            return Ok(AdminAddress::Unix(path));
        }
        s.parse::<SocketAddr>()
            .map(AdminAddress::Tcp)
            .map_err(|_| format!("{s:?}: expected unix:/PATH or HOST:PORT (e.g. 127.0.0.1:9901)"))
    }
}

/// The rate-limit service's gRPC port in the proxy task: inside the range of ports backends may
/// not use (`gateway_render::check::PROXY_RESERVED_PORTS`).
pub const PRODUCTION_RATE_LIMIT_PORT: u16 = 15001;
/// More trusted proxies than any deployment has; a typo, not a topology.
const MAX_TRUSTED_HOPS: u32 = 4;

/// Where the production image's Envoy puts its admin socket: a directory shared only with the
/// sidecar (a task volume), so the sidecar reads stats and operators reach it with ECS Exec.
pub const PRODUCTION_ADMIN_SOCKET: &str = "/run/envoy/admin.sock";

/// Where the proxy reads its config and listens. The production values are the image's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapParams {
    /// Watched directory holding `clusters.json` (CDS).
    pub clusters_dir: PathBuf,
    /// Watched directory holding `routes.json` (RDS). Separate from the clusters so that a routes
    /// swap does not re-parse the clusters.
    pub routes_dir: PathBuf,
    /// The gateway listener.
    pub listen: SocketAddr,
    /// Envoy's admin endpoint: a Unix socket, or loopback for local runs.
    pub admin: AdminAddress,
    /// The rate-limit service (gRPC, HTTP/2); loopback, on one of the ports backends may not use.
    pub ratelimit: SocketAddr,
    /// Proxies in front of Envoy that append to X-Forwarded-For: the load balancer alone is 1, a
    /// CDN in front of it makes 2. Infra sets it from what it deploys. One more than there really
    /// are lets a client choose its own address by writing X-Forwarded-For.
    pub xff_num_trusted_hops: u32,
}

impl BootstrapParams {
    /// The proxy image's layout: the load balancer alone in front, admin on a Unix socket, the
    /// rate-limit service and the sidecar next to Envoy in the same task.
    pub fn production() -> Self {
        BootstrapParams {
            clusters_dir: PathBuf::from("/etc/envoy/cds"),
            routes_dir: PathBuf::from("/etc/envoy/rds"),
            listen: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 8080)),
            admin: AdminAddress::Unix(PathBuf::from(PRODUCTION_ADMIN_SOCKET)),
            ratelimit: SocketAddr::from((Ipv4Addr::LOCALHOST, PRODUCTION_RATE_LIMIT_PORT)),
            xff_num_trusted_hops: 1,
        }
    }

    /// A local run's layout (the demo, tests): the caller's watched directories, listener, admin
    /// address and rate-limit service, with `xff_num_trusted_hops` proxies in front (0: none, the
    /// client's address is the peer's).
    pub fn local(
        (clusters_dir, routes_dir): (&Path, &Path),
        (listen, admin): (SocketAddr, AdminAddress),
        ratelimit: SocketAddr,
        xff_num_trusted_hops: u32,
    ) -> Self {
        BootstrapParams {
            clusters_dir: clusters_dir.to_path_buf(),
            routes_dir: routes_dir.to_path_buf(),
            listen,
            admin,
            ratelimit,
            xff_num_trusted_hops,
        }
    }

    /// Refuses parameters that would make an unsafe or broken bootstrap.
    pub fn check(&self) -> Result<(), BootstrapError> {
        if let AdminAddress::Tcp(addr) = self.admin {
            if !addr.ip().is_loopback() {
                return Err(BootstrapError::AdminNotLoopback(addr));
            }
        }
        if !self.ratelimit.ip().is_loopback() {
            return Err(BootstrapError::Invalid {
                field: "ratelimit",
                reason: format!(
                    "{} is not a loopback address; the rate-limit service runs in the proxy's task",
                    self.ratelimit
                ),
            });
        }
        if self.xff_num_trusted_hops > MAX_TRUSTED_HOPS {
            return Err(BootstrapError::Invalid {
                field: "xff_num_trusted_hops",
                reason: format!(
                    "{} is out of range; 0 (nothing in front, local runs) to {MAX_TRUSTED_HOPS}",
                    self.xff_num_trusted_hops
                ),
            });
        }
        if self.clusters_dir == self.routes_dir {
            return Err(BootstrapError::Invalid {
                field: "routes_dir",
                reason: format!(
                    "{} is also the clusters directory; CDS and RDS need separate watched directories",
                    self.routes_dir.display()
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_admin_is_a_unix_socket_and_one_hop_is_trusted() {
        let p = BootstrapParams::production();
        assert_eq!(
            p.admin,
            AdminAddress::Unix(PathBuf::from("/run/envoy/admin.sock"))
        );
        assert_eq!(p.xff_num_trusted_hops, 1);
        assert!(gateway_render::check::PROXY_RESERVED_PORTS.contains(&p.ratelimit.port()));
        assert!(p.check().is_ok());
    }

    #[test]
    fn admin_addresses_parse() {
        assert_eq!(
            "unix:/run/envoy/admin.sock".parse::<AdminAddress>(),
            Ok(AdminAddress::Unix(PathBuf::from("/run/envoy/admin.sock")))
        );
        assert_eq!(
            "127.0.0.1:9901"
                .parse::<AdminAddress>()
                .map(|a| a.to_string()),
            Ok("127.0.0.1:9901".to_string())
        );
        assert!("unix:relative.sock"
            .parse::<AdminAddress>()
            .unwrap_err()
            .contains("absolute"));
        assert!("localhost:9901".parse::<AdminAddress>().is_err());
    }

    #[test]
    fn a_public_rate_limit_service_and_silly_hop_counts_are_refused() {
        let mut p = BootstrapParams::production();
        p.ratelimit = "10.0.0.9:15001".parse().expect("literal");
        assert!(p
            .check()
            .expect_err("public")
            .to_string()
            .starts_with("ratelimit:"));
        for hops in [5, 100] {
            let mut p = BootstrapParams::production();
            p.xff_num_trusted_hops = hops;
            let e = p.check().expect_err("hops").to_string();
            assert!(e.starts_with("xff_num_trusted_hops:"), "{e}");
        }
    }

    #[test]
    fn non_loopback_admin_is_refused() {
        let mut p = BootstrapParams::production();
        p.admin = AdminAddress::Tcp("0.0.0.0:9901".parse().expect("literal address"));
        let err = p.check().expect_err("0.0.0.0 admin must be refused");
        assert!(err.to_string().contains("0.0.0.0:9901"), "{err}");
        assert!(err.to_string().contains("loopback"), "{err}");
    }

    #[test]
    fn shared_watched_directory_is_refused() {
        let mut p = BootstrapParams::production();
        p.routes_dir = p.clusters_dir.clone();
        let err = p
            .check()
            .expect_err("one directory for CDS and RDS must be refused");
        assert!(err.to_string().starts_with("routes_dir:"), "{err}");
    }
}
