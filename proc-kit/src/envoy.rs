//! The Envoy a local run starts, and whether it is ready. Which binary: the validator's one
//! lookup (`gateway_validator::lookup_envoy`) with the checkout's pinned `.venv/bin/envoy` as
//! the local choice, then checked to exist so a missing binary fails before anything starts.

use gateway_envoy_admin::AdminClient;
use gateway_validator::{find_executable, lookup_envoy, EnvoyBin};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why no Envoy binary could be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvoyNotFound {
    /// `--envoy-bin` or `ENVOY_BIN` named a path that is no file, or a name not on PATH.
    Explicit(PathBuf),
    /// Nothing was named, the checkout has no `.venv/bin/envoy` and PATH has no `envoy`.
    Missing { local: PathBuf },
}

impl fmt::Display for EnvoyNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvoyNotFound::Explicit(bin) if bin.components().count() > 1 => write!(
                f,
                "Envoy binary {} (--envoy-bin or ENVOY_BIN) does not exist",
                bin.display()
            ),
            EnvoyNotFound::Explicit(bin) => write!(
                f,
                "Envoy binary {:?} (--envoy-bin or ENVOY_BIN) is not on PATH",
                bin.display().to_string()
            ),
            EnvoyNotFound::Missing { local } => write!(
                f,
                "Envoy not found: set ENVOY_BIN, put envoy on PATH, or run scripts/setup-python.sh to install the pinned Envoy into {}",
                local.display()
            ),
        }
    }
}

impl std::error::Error for EnvoyNotFound {}

/// The Envoy binary a run from the checkout `repo` uses: `explicit` (a flag), else `ENVOY_BIN`,
/// else the checkout's `.venv/bin/envoy`, else `envoy` on PATH; the file it names.
pub fn local_envoy(repo: &Path, explicit: Option<&Path>) -> Result<PathBuf, EnvoyNotFound> {
    let local = crate::venv_envoy(repo);
    match lookup_envoy(explicit, Some(&local)) {
        EnvoyBin::Explicit(bin) => find_executable(&bin).ok_or(EnvoyNotFound::Explicit(bin)),
        EnvoyBin::Local(bin) => Ok(bin),
        EnvoyBin::OnPath => {
            find_executable(&EnvoyBin::OnPath.path()).ok_or(EnvoyNotFound::Missing { local })
        }
    }
}

/// True once Envoy's admin `/ready` answers 200 (it initialised from its config).
pub async fn is_ready(admin: &AdminClient) -> bool {
    admin
        .get("/ready")
        .await
        .is_ok_and(|response| response.status == 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_binary_must_exist_and_its_absence_names_it() {
        let repo = tempfile::tempdir().expect("tempdir");
        let missing = repo.path().join("no-such-envoy");
        let e = local_envoy(repo.path(), Some(&missing)).expect_err("missing");
        assert_eq!(e, EnvoyNotFound::Explicit(missing.clone()));
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = local_envoy(repo.path(), Some(Path::new("no-such-envoy-name"))).expect_err("name");
        assert!(e.to_string().contains("is not on PATH"), "{e}");
        let venv = crate::venv_envoy(repo.path());
        std::fs::create_dir_all(venv.parent().expect("parent")).expect("mkdir");
        std::fs::write(&venv, "").expect("write");
        std::fs::write(&missing, "").expect("write");
        assert_eq!(local_envoy(repo.path(), Some(&missing)), Ok(missing));
    }
}
