//! `gatewayctl validate`: the three validation layers on rendered files.

use super::common::EnvoyArg;
use super::{CmdError, CmdResult};
use gateway_render::contract::{BUNDLE_OBJECT, CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use gateway_render::Bundle;
use gateway_validator::{count_routes, validate_all, EnvoyOptions, ParsedConfig, ValidateOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Run the three validation layers on a rendered config
///
/// PATH is a directory written by `render` (clusters.json, routes.json, ratelimit.yaml and
/// bundle.json, whose entries give the entry count), or a bundle.json file (for example one kept
/// under failed/ in the bucket). Layers: 1 gateway rules and the rate-limit service's rules,
/// 2 entries that render zero routes, 3 the pinned Envoy's `--mode validate` on the gateway's
/// listener with the config inlined. Exit 1 names the failing layer and why (Envoy's own message
/// for layer 3).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rendered directory, or a bundle.json file
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Skip layer 3 (Envoy). Never the default: the report says it was skipped
    #[arg(long)]
    pub skip_envoy: bool,
    #[command(flatten)]
    pub envoy: EnvoyArg,
}

pub fn run(args: Args) -> CmdResult {
    let (files, entry_count) = load(&args.path)?;
    let parsed = ParsedConfig::from_files(&files).map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
    let route_count = count_routes(&parsed.route_config);
    let opts = ValidateOptions {
        envoy: EnvoyOptions::new(args.envoy.bin()),
        skip_envoy: args.skip_envoy,
    };
    let report = validate_all(&parsed.view(), entry_count, route_count, &opts)
        .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
    if let Some(verdict) = &report.envoy {
        if !verdict.warnings.trim().is_empty() {
            eprintln!("envoy warnings:\n{}", verdict.warnings.trim_end());
        }
    }
    println!("{report}");
    Ok(())
}

/// The three files and the entry count, from a bundle file or a rendered directory.
fn load(path: &Path) -> Result<(BTreeMap<String, String>, usize), CmdError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| CmdError::failed(format!("{}: cannot read: {e}", p.display())))
    };
    let parse_bundle = |p: &Path| -> Result<Bundle, CmdError> {
        let bundle = Bundle::parse(&read(p)?)
            .map_err(|e| CmdError::failed(format!("{}: {e}", p.display())))?;
        bundle
            .verify()
            .map_err(|e| CmdError::failed(format!("{}: {e}", p.display())))?;
        Ok(bundle)
    };
    if path.is_file() {
        let bundle = parse_bundle(path)?;
        return Ok((bundle.files, bundle.entries.len()));
    }
    if !path.is_dir() {
        return Err(CmdError::failed(format!(
            "{}: no such file or directory",
            path.display()
        )));
    }
    let bundle_path = path.join(BUNDLE_OBJECT);
    if !bundle_path.is_file() {
        return Err(CmdError::failed(format!(
            "{}: missing; layer 2 needs the entry count from it (gatewayctl render writes it)",
            bundle_path.display()
        )));
    }
    let bundle = parse_bundle(&bundle_path)?;
    let mut files = BTreeMap::new();
    for name in [CLUSTERS_FILE, ROUTES_FILE, RATE_LIMIT_FILE] {
        let file = path.join(name);
        let text = String::from_utf8(read(&file)?)
            .map_err(|_| CmdError::failed(format!("{}: not UTF-8", file.display())))?;
        // The loose files are what is validated (an operator may be trying an edit); the entry
        // count comes from the bundle, so say when the two no longer match.
        if bundle.files.get(name) != Some(&text) {
            eprintln!(
                "warning: {}: differs from the copy in {BUNDLE_OBJECT}; validating the file",
                file.display()
            );
        }
        files.insert(name.to_string(), text);
    }
    Ok((files, bundle.entries.len()))
}
