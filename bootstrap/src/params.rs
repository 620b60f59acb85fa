use crate::BootstrapError;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

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
    /// Envoy's admin endpoint; loopback only.
    pub admin: SocketAddr,
    /// The rate-limit service (gRPC, HTTP/2).
    pub ratelimit: SocketAddr,
    /// Proxies in front of Envoy that append to X-Forwarded-For (a CDN and a load balancer).
    pub xff_num_trusted_hops: u32,
}

impl BootstrapParams {
    /// The proxy image's layout: a CDN and a load balancer in front, the rate-limit service and
    /// the sidecar next to Envoy in the same task.
    pub fn production() -> Self {
        BootstrapParams {
            clusters_dir: PathBuf::from("/etc/envoy/cds"),
            routes_dir: PathBuf::from("/etc/envoy/rds"),
            listen: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 8080)),
            admin: SocketAddr::from((Ipv4Addr::LOCALHOST, 9901)),
            ratelimit: SocketAddr::from((Ipv4Addr::LOCALHOST, 8081)),
            xff_num_trusted_hops: 2,
        }
    }

    /// Refuses parameters that would make an unsafe or broken bootstrap.
    pub fn check(&self) -> Result<(), BootstrapError> {
        if !self.admin.ip().is_loopback() {
            return Err(BootstrapError::AdminNotLoopback(self.admin));
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
    fn production_admin_is_loopback_and_accepted() {
        let p = BootstrapParams::production();
        assert!(p.admin.ip().is_loopback());
        assert!(p.check().is_ok());
    }

    #[test]
    fn non_loopback_admin_is_refused() {
        let mut p = BootstrapParams::production();
        p.admin = "0.0.0.0:9901".parse().expect("literal address");
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
