//! Which Envoy binary to run: the one lookup every part of the gateway uses (the reconcile
//! Lambda, gatewayctl, `gatewayctl demo`, the test kit), in the order docs/design.md
//! ("Settings") describes.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The setting that names the Envoy binary.
pub const ENVOY_BIN_SETTING: &str = "ENVOY_BIN";

/// The name run when nothing else names a binary (looked up on PATH when run).
pub const ENVOY_ON_PATH: &str = "envoy";

/// Where the lookup found the Envoy binary, in the order it looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvoyBin {
    /// 1. The caller's flag (gatewayctl's `--envoy-bin`), else `ENVOY_BIN` when set and not
    ///    empty: a path, or a bare name looked up on PATH when run.
    Explicit(PathBuf),
    /// 2. The pinned Envoy in a checkout's `.venv/bin/envoy`, for the callers that run from a
    ///    checkout (the test kit, `gatewayctl demo`), when that file exists.
    Local(PathBuf),
    /// 3. `envoy`, looked up on PATH when run.
    OnPath,
}

impl EnvoyBin {
    /// What to run.
    pub fn path(&self) -> PathBuf {
        match self {
            EnvoyBin::Explicit(bin) | EnvoyBin::Local(bin) => bin.clone(),
            EnvoyBin::OnPath => PathBuf::from(ENVOY_ON_PATH),
        }
    }
}

/// The Envoy binary: `explicit` (a flag's value), else `ENVOY_BIN`, else `local` when that file
/// exists, else `envoy` on PATH. Nothing is run or required to exist here (except `local`): a
/// missing binary fails where it is run, naming what was chosen.
pub fn lookup_envoy(explicit: Option<&Path>, local: Option<&Path>) -> EnvoyBin {
    let setting = std::env::var_os(ENVOY_BIN_SETTING);
    choose(explicit, setting.as_deref(), local)
}

fn choose(explicit: Option<&Path>, setting: Option<&OsStr>, local: Option<&Path>) -> EnvoyBin {
    let explicit = explicit
        .map(Path::as_os_str)
        .or(setting)
        .filter(|v| !v.is_empty());
    if let Some(bin) = explicit {
        return EnvoyBin::Explicit(PathBuf::from(bin));
    }
    match local {
        Some(local) if local.is_file() => EnvoyBin::Local(local.to_path_buf()),
        _ => EnvoyBin::OnPath,
    }
}

/// `bin` as an existing file: a path (anything with a `/`) as given, a bare name in the first
/// directory of PATH that has it.
pub fn find_executable(bin: &Path) -> Option<PathBuf> {
    if bin.components().count() > 1 || bin.is_absolute() {
        return bin.is_file().then(|| bin.to_path_buf());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(bin))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_beats_the_setting_which_beats_the_checkout_which_beats_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("envoy");
        let flag = Path::new("/opt/envoy-flag");
        let setting = OsStr::new("envoy-setting");
        assert_eq!(
            choose(Some(flag), Some(setting), Some(&local)),
            EnvoyBin::Explicit(flag.into())
        );
        assert_eq!(
            choose(None, Some(setting), Some(&local)),
            EnvoyBin::Explicit("envoy-setting".into())
        );
        // An empty setting counts as unset; a checkout without the file falls through to PATH.
        assert_eq!(
            choose(None, Some(OsStr::new("")), Some(&local)),
            EnvoyBin::OnPath
        );
        std::fs::write(&local, "").expect("write");
        assert_eq!(
            choose(None, None, Some(&local)),
            EnvoyBin::Local(local.clone())
        );
        assert_eq!(choose(None, None, None).path(), PathBuf::from("envoy"));
    }

    #[test]
    fn finds_paths_as_given_and_names_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("bin");
        assert_eq!(find_executable(&file), None);
        std::fs::write(&file, "").expect("write");
        assert_eq!(find_executable(&file), Some(file.clone()));
        assert_eq!(find_executable(Path::new("no-such-program-anywhere")), None);
        // `sh` is on PATH on every machine these tests run on.
        assert!(find_executable(Path::new("sh")).is_some());
    }
}
