//! Where an entry is live: on how many of the currently reporting proxies its published revision
//! is served (docs/design.md#proxy-reports).
//!
//! A proxy counts when the bundle it reports is the one the entry's published revision first
//! went live in (same hash), or when that bundle (read by the version id the proxy reports) holds
//! the entry exactly as the publishing bundle holds it: later publishes keep serving an unchanged
//! entry, and a kill switch, a restore to an older version or a bundle without the entry do not.

use crate::registry::{EntryStatus, ProxyReport};
use crate::store::ConfigStore;
use gateway_render::{Bundle, Entry};
use std::collections::HashMap;
use std::sync::Arc;

/// One proxy and whether it serves the entry's published revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyVerdict {
    pub proxy: ProxyReport,
    pub live: bool,
    /// Why not, when not.
    pub why: Option<String>,
}

/// The verdict for every currently reporting proxy, sorted by proxy id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LiveOn {
    pub proxies: Vec<ProxyVerdict>,
}

impl LiveOn {
    pub fn live(&self) -> usize {
        self.proxies.iter().filter(|p| p.live).count()
    }

    pub fn reporting(&self) -> usize {
        self.proxies.len()
    }

    /// Live on every reporting proxy, and at least one reports.
    pub fn everywhere(&self) -> bool {
        self.reporting() > 0 && self.live() == self.reporting()
    }

    pub fn summary(&self) -> String {
        format!("live on {} of {} proxies", self.live(), self.reporting())
    }

    pub fn to_json(&self, now: u64) -> serde_json::Value {
        serde_json::json!({
            "live": self.live(),
            "reporting": self.reporting(),
            "proxies": self.proxies.iter().map(|v| {
                let mut doc = v.proxy.to_json(now);
                doc["live"] = serde_json::Value::Bool(v.live);
                doc["why"] = serde_json::json!(v.why);
                doc
            }).collect::<Vec<_>>(),
        })
    }
}

/// Bundles read by version id, once each (a version never changes).
pub struct BundleCache<'a, S> {
    store: &'a S,
    bundles: HashMap<String, Result<Arc<Bundle>, String>>,
}

impl<'a, S: ConfigStore + Sync> BundleCache<'a, S> {
    pub fn new(store: &'a S) -> Self {
        BundleCache {
            store,
            bundles: HashMap::new(),
        }
    }

    async fn get(&mut self, version_id: &str) -> Result<Arc<Bundle>, String> {
        if let Some(found) = self.bundles.get(version_id) {
            return found.clone();
        }
        let read = match self.store.get_version(version_id).await {
            Ok(bytes) => Bundle::parse(&bytes)
                .map(Arc::new)
                .map_err(|e| format!("bundle version {version_id} does not parse: {e}")),
            Err(e) => Err(format!("reading bundle version {version_id}: {e}")),
        };
        // A transient S3 failure is not remembered: the next look tries again.
        if read.is_ok() {
            self.bundles.insert(version_id.to_string(), read.clone());
        }
        read
    }
}

fn entry_in<'b>(bundle: &'b Bundle, id: &str) -> Option<&'b Entry> {
    bundle.entries.iter().find(|e| e.id() == id)
}

/// Which of `proxies` serve `status`'s published revision of entry `id`.
pub async fn live_on<S: ConfigStore + Sync>(
    cache: &mut BundleCache<'_, S>,
    id: &str,
    status: &EntryStatus,
    proxies: &[ProxyReport],
) -> LiveOn {
    let mut out = LiveOn::default();
    let published = match (&status.revision_published, &status.version_id, &status.hash) {
        (Some(_), Some(version), Some(hash)) => Some((version.as_str(), hash.as_str())),
        _ => None,
    };
    for proxy in proxies {
        let verdict = match published {
            None => Err(format!("{id} has never been published")),
            Some((_, hash)) if proxy.hash == hash => Ok(()),
            Some((version, _)) => serves_same(cache, id, version, proxy).await,
        };
        out.proxies.push(ProxyVerdict {
            proxy: proxy.clone(),
            live: verdict.is_ok(),
            why: verdict.err(),
        });
    }
    out.proxies
        .sort_by(|a, b| a.proxy.proxy_id.cmp(&b.proxy.proxy_id));
    out
}

/// Whether the proxy's bundle holds `id` exactly as the bundle it was published in does.
async fn serves_same<S: ConfigStore + Sync>(
    cache: &mut BundleCache<'_, S>,
    id: &str,
    published_version: &str,
    proxy: &ProxyReport,
) -> Result<(), String> {
    let publishing = cache.get(published_version).await?;
    let Some(want) = entry_in(&publishing, id) else {
        return Err(format!(
            "bundle version {published_version}, where {id} was published, does not hold it"
        ));
    };
    let serving = cache.get(&proxy.version_id).await?;
    if serving.hash != proxy.hash {
        return Err(format!(
            "the proxy reports hash {} for bundle version {}, which has hash {}",
            proxy.hash, proxy.version_id, serving.hash
        ));
    }
    match entry_in(&serving, id) {
        Some(have) if have == want => Ok(()),
        Some(_) => Err(format!(
            "serves bundle {} holding another version of {id}",
            proxy.hash
        )),
        None => Err(format!("serves bundle {} without {id}", proxy.hash)),
    }
}
