//! Format 1, read only: `bundle.json` as one canonical JSON document with the files as strings.
//! Kept while a bucket's history holds format-1 versions, so `gatewayctl restore` can publish
//! one again as format 2 (docs/design.md#bundle-format-and-hash); nothing writes it.

use super::{Bundle, BundleError};
use crate::entry::Entry;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

pub const FORMAT: u32 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1 {
    entries: Vec<Entry>,
    files: BTreeMap<String, String>,
    #[allow(unused)]
    format: u32,
    hash: String,
}

/// A format-1 document (its format checked before anything else).
pub(super) fn parse(bytes: &[u8]) -> Result<Bundle, BundleError> {
    let json = |e: serde_json::Error| BundleError::Json {
        what: "bundle".into(),
        reason: e.to_string(),
    };
    let value: Value = serde_json::from_slice(bytes).map_err(json)?;
    super::check_format(&value, FORMAT)?;
    let v1: V1 = serde_json::from_value(value).map_err(json)?;
    Ok(Bundle {
        entries: v1.entries,
        files: v1.files,
        hash: v1.hash,
    })
}
