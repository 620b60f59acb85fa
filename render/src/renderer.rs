//! entries → the three files and their hash. Pure: the same entries, in any order, give the same
//! bytes.

use crate::canonical::Document;
use crate::clusters;
pub use crate::config::{
    RenderConfig, DEFAULT_CLIENT_IPV6_PREFIX, DEFAULT_MAX_WEBSOCKET_SECONDS,
    DEFAULT_UPSTREAM_CA_FILE,
};
use crate::contract::{
    CLUSTERS_FILE, CLUSTER_TYPE_URL, JWT_FILE, RATE_LIMIT_FILE, ROUTES_FILE,
    ROUTE_CONFIG_TYPE_URL, TYPED_EXTENSION_CONFIG_TYPE_URL,
};
use crate::entry::Entry;
pub use crate::error::RenderError;
use crate::hash::FilesHasher;
use crate::ratelimit::{self, RateLimitConfig};
use crate::routes;
use crate::value::object;
use serde_json::Value;
use std::collections::BTreeMap;

/// What a render produced: the values (for the validator, which inlines them) and the exact
/// file bytes (for the bundle).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// Cluster resources, each with `@type`.
    pub clusters: Vec<Value>,
    /// The one RouteConfiguration, with `@type`.
    pub route_config: Value,
    /// The JWT filter's `TypedExtensionConfig` (`jwt.json`), when an entry declares `jwt`.
    pub jwt: Option<Value>,
    pub ratelimit: RateLimitConfig,
    /// Routes rendered that forward to a cluster: team routes and their CORS preflight routes
    /// (fallback and catch-all routes not counted).
    pub route_count: usize,
    /// `clusters.json`, `routes.json`, `ratelimit.yaml` and, when an entry declares `jwt`,
    /// `jwt.json`; each Envoy file's `version_info` is `hash`.
    pub files: BTreeMap<String, String>,
    /// `sha256:<64 hex>`, see `bundle::compute_hash`.
    pub hash: String,
}

impl Rendered {
    /// `jwt.json` as a proxy gets it: the render's, or (when no entry declares `jwt`) the JWT
    /// filter with no provider at this hash, as the sidecar writes it.
    pub fn jwt_file(&self) -> String {
        match self.files.get(JWT_FILE) {
            Some(text) => text.clone(),
            None => crate::jwt::jwt_file(crate::jwt::empty_jwt_config(), &self.hash),
        }
    }
}

/// Renders the registry. Entries are sorted by id first, so the input order never matters.
///
/// The clusters, the route configuration and the rate-limit rules depend only on the entries, not
/// on one another, so each is built (and each Envoy document serialised) on a thread of its own.
/// The error is the one a render in that order would meet first: the clusters', else the routes',
/// else the rules'.
pub fn render(entries: &[Entry], cfg: &RenderConfig) -> Result<Rendered, RenderError> {
    let mut sorted: Vec<(String, &Entry)> = entries.iter().map(|e| (e.id(), e)).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(pair) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(RenderError::DuplicateEntry {
            entry: pair[0].0.clone(),
        });
    }
    let sorted: Vec<&Entry> = sorted.into_iter().map(|(_, e)| e).collect();
    // A rollout renders both revisions (docs/design.md#rollout).
    let units = crate::rollout::expand(&sorted);
    let sorted: Vec<&Entry> = units.iter().map(|u| u.entry.as_ref()).collect();
    let (clusters, routes, ratelimit) = std::thread::scope(|scope| {
        let clusters = scope.spawn(|| {
            let mut clusters = Vec::with_capacity(sorted.len());
            for entry in &sorted {
                clusters.extend(clusters::clusters(entry, cfg)?);
            }
            Ok(Serialised::of(clusters, CLUSTER_TYPE_URL))
        });
        let ratelimit = scope.spawn(|| {
            ratelimit::rule_tree(sorted.iter().copied()).map(|tree| {
                let rules = ratelimit::to_yaml(&tree);
                (tree, rules)
            })
        });
        let routes = routes::route_configuration_of(&units, cfg)
            .map(|(config, count)| (Serialised::of(vec![config], ROUTE_CONFIG_TYPE_URL), count));
        (joined(clusters), routes, joined(ratelimit))
    });
    let clusters: Serialised = clusters?;
    let (routes, route_count) = routes?;
    let (ratelimit, rules) = ratelimit?;
    let jwt = crate::jwt::jwt_config(&sorted).map(|c| Serialised::of(vec![c], TYPED_EXTENSION_CONFIG_TYPE_URL));
    finish(clusters, routes, jwt, ratelimit, rules?, route_count)
}

/// A scoped thread's result; its panic goes on.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// A DiscoveryResponse document and its canonical bytes, without `version_info` yet.
struct Serialised {
    doc: Value,
    file: Document,
}

impl Serialised {
    fn of(resources: Vec<Value>, type_url: &str) -> Serialised {
        let doc = document(resources, type_url);
        // `document` builds objects.
        let file = Document::of(&doc).expect("a document is an object");
        Serialised { doc, file }
    }
}

/// Serialises the three files, hashes them, and stamps the hash into the Envoy files'
/// `version_info`. The hash is taken over the files without `version_info`, so it does not
/// depend on itself. Each document is serialised once: the file is its members plus
/// `version_info`.
pub(crate) fn assemble(
    clusters: Vec<Value>,
    route_config: Value,
    ratelimit: RateLimitConfig,
    route_count: usize,
) -> Result<Rendered, RenderError> {
    let clusters = Serialised::of(clusters, CLUSTER_TYPE_URL);
    let routes = Serialised::of(vec![route_config], ROUTE_CONFIG_TYPE_URL);
    let rules = ratelimit::to_yaml(&ratelimit)?;
    finish(clusters, routes, None, ratelimit, rules, route_count)
}

fn finish(
    clusters: Serialised,
    routes: Serialised,
    jwt: Option<Serialised>,
    ratelimit: RateLimitConfig,
    rules: String,
    route_count: usize,
) -> Result<Rendered, RenderError> {
    // Name order: clusters.json, jwt.json, ratelimit.yaml, routes.json.
    let mut hasher = FilesHasher::new();
    hasher.bytes(CLUSTERS_FILE, clusters.file.bytes());
    if let Some(jwt) = &jwt {
        hasher.bytes(JWT_FILE, jwt.file.bytes());
    }
    hasher.text(RATE_LIMIT_FILE, &rules);
    hasher.bytes(ROUTES_FILE, routes.file.bytes());
    let hash = hasher.finish();

    let version_info = Value::String(hash.clone());
    let Serialised {
        doc: clusters_doc,
        file: clusters_file,
    } = clusters;
    let Serialised {
        doc: routes_doc,
        file: routes_file,
    } = routes;
    let mut files = BTreeMap::from([
        (
            CLUSTERS_FILE.to_string(),
            clusters_file.with_member("version_info", &version_info, &clusters_doc),
        ),
        (
            ROUTES_FILE.to_string(),
            routes_file.with_member("version_info", &version_info, &routes_doc),
        ),
        (RATE_LIMIT_FILE.to_string(), rules),
    ]);
    let jwt = jwt.map(|Serialised { doc, file }| {
        files.insert(JWT_FILE.to_string(), file.with_member("version_info", &version_info, &doc));
        resources(doc).into_iter().next().unwrap_or(Value::Null)
    });

    let clusters = resources(clusters_doc);
    let route_config = resources(routes_doc)
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    Ok(Rendered {
        clusters,
        route_config,
        jwt,
        ratelimit,
        route_count,
        files,
        hash,
    })
}

/// A DiscoveryResponse document around `resources` (moved in, not copied).
fn document(resources: Vec<Value>, type_url: &str) -> Value {
    object([
        ("resources", Value::Array(resources)),
        ("type_url", Value::String(type_url.to_string())),
    ])
}

/// The resources back out of a `document`.
fn resources(document: Value) -> Vec<Value> {
    match document {
        Value::Object(mut map) => match map.remove("resources") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}
