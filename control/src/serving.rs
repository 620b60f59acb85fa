//! Where an entry is live: on how many of the currently reporting proxies its published revision
//! is served (docs/design.md#proxy-reports).
//!
//! A proxy counts when the bundle it reports is the one the entry's published revision first
//! went live in (same hash), or when that bundle (read by the version id the proxy reports) holds
//! the entry exactly as the publishing bundle holds it: later publishes keep serving an unchanged
//! entry, and a kill switch, a restore to an older version or a bundle without the entry do not.

use gateway_adapters::registry::{EntryStatus, ProxyReport};
use gateway_adapters::store::ConfigStore;
use gateway_render::{Bundle, Entry};
use serde::Serialize;
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

    /// As `gatewayctl status ID` shows it: each proxy's report (its age at `now`) with its
    /// verdict.
    pub fn to_json(&self, now: u64) -> serde_json::Value {
        crate::to_json(&LiveOnDoc {
            live: self.live(),
            reporting: self.reporting(),
            proxies: self
                .proxies
                .iter()
                .map(|v| VerdictDoc {
                    report: v.proxy.to_json(now),
                    live: v.live,
                    why: v.why.as_deref(),
                })
                .collect(),
        })
    }
}

#[derive(Serialize)]
struct LiveOnDoc<'a> {
    live: usize,
    reporting: usize,
    proxies: Vec<VerdictDoc<'a>>,
}

#[derive(Serialize)]
struct VerdictDoc<'a> {
    /// The report's own fields (`ProxyReport::to_json`).
    #[serde(flatten)]
    report: serde_json::Value,
    live: bool,
    why: Option<&'a str>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_adapters::store::{BundleHead, BundleVersion, PutBundle, StoreError};

    /// A bucket that holds nothing: what `live_on` decides without reading a bundle.
    struct Empty;

    impl ConfigStore for Empty {
        async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
            Ok(None)
        }
        async fn head_version(&self, v: &str) -> Result<BundleHead, StoreError> {
            Err(StoreError::NotFound(v.into()))
        }
        async fn get_version(&self, v: &str) -> Result<Vec<u8>, StoreError> {
            Err(StoreError::NotFound(v.into()))
        }
        async fn put_bundle(&self, _: PutBundle<'_>) -> Result<String, StoreError> {
            Err(StoreError::Refused("read-only".into()))
        }
        async fn keep_failed(&self, _: &str, _: &[u8]) -> Result<(), StoreError> {
            Err(StoreError::Refused("read-only".into()))
        }
        async fn list_versions(&self, _: usize) -> Result<Vec<BundleVersion>, StoreError> {
            Ok(vec![])
        }
        async fn restore_version(&self, v: &str, _: &str) -> Result<String, StoreError> {
            Err(StoreError::NotFound(v.into()))
        }
    }

    fn proxy(id: &str, hash: &str, version: &str) -> ProxyReport {
        ProxyReport {
            proxy_id: id.into(),
            hash: hash.into(),
            version_id: version.into(),
            delivered_at: 1,
            lag_seconds: None,
            reported_at: 2,
            expires_at: 100,
        }
    }

    fn published(version: &str, hash: &str) -> EntryStatus {
        EntryStatus {
            id: "billing/invoices".into(),
            revision_published: Some(3),
            version_id: Some(version.into()),
            hash: Some(hash.into()),
            published_at: Some(1),
            quarantine: None,
        }
    }

    /// Where billing/invoices, published as v1 with hash sha256:a, is live among `proxies`,
    /// over a bucket that holds nothing.
    async fn live_on_published_v1(proxies: &[ProxyReport]) -> LiveOn {
        let mut cache = BundleCache::new(&Empty);
        live_on(
            &mut cache,
            "billing/invoices",
            &published("v1", "sha256:a"),
            proxies,
        )
        .await
    }

    #[tokio::test]
    async fn the_publishing_hash_counts_without_reading_a_bundle() {
        let on =
            live_on_published_v1(&[proxy("p2", "sha256:a", "v1"), proxy("p1", "sha256:a", "v1")])
                .await;
        assert_eq!(on.summary(), "live on 2 of 2 proxies");
        assert!(on.everywhere());
        assert_eq!(on.proxies[0].proxy.proxy_id, "p1", "sorted by proxy id");
        assert_eq!(
            serde_json::to_string(&on.to_json(10)).expect("json"),
            concat!(
                r#"{"live":2,"proxies":["#,
                r#"{"age_seconds":8,"delivered_at":1,"expires_at":100,"hash":"sha256:a","lag_seconds":null,"#,
                r#""live":true,"proxy":"p1","reported_at":2,"version_id":"v1","why":null},"#,
                r#"{"age_seconds":8,"delivered_at":1,"expires_at":100,"hash":"sha256:a","lag_seconds":null,"#,
                r#""live":true,"proxy":"p2","reported_at":2,"version_id":"v1","why":null}"#,
                r#"],"reporting":2}"#
            )
        );
    }

    #[tokio::test]
    async fn an_unreadable_bundle_or_no_publish_is_not_live_and_says_why() {
        let on = live_on_published_v1(&[proxy("p1", "sha256:b", "v2")]).await;
        assert_eq!(on.summary(), "live on 0 of 1 proxies");
        let why = on.proxies[0].why.as_deref().unwrap_or_default();
        assert!(why.contains("reading bundle version v1"), "{why}");

        let never = EntryStatus {
            id: "billing/invoices".into(),
            ..EntryStatus::default()
        };
        let mut cache = BundleCache::new(&Empty);
        let on = live_on(
            &mut cache,
            "billing/invoices",
            &never,
            &[proxy("p1", "sha256:a", "v1")],
        )
        .await;
        assert!(!on.everywhere());
        assert!(on.proxies[0]
            .why
            .as_deref()
            .unwrap_or_default()
            .contains("never been published"));
    }

    #[test]
    fn nobody_reporting_is_not_everywhere() {
        assert!(!LiveOn::default().everywhere());
        assert_eq!(LiveOn::default().summary(), "live on 0 of 0 proxies");
    }
}
