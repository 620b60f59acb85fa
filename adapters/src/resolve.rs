//! Backends judged by what their names resolve to, at registration and at every reconcile. The
//! judgement is render's (`check_resolved`, pure); the lookups are I/O and live here, behind a
//! trait so tests answer with fixed addresses.
//!
//! Envoy resolves names again at run time, so this catches a name that already leads somewhere
//! forbidden, not one that changes later (DNS rebinding): the proxy task's egress rules close
//! the network for that (infra/README.md).

use gateway_render::check::{check_resolved, parse_backend, BackendHost, Policy};
use gateway_render::{Entry, Problem};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Whole-run budget for the lookups of one check: a name without an answer by then counts as
/// unresolved (refused only where backends must resolve).
pub const DEFAULT_RESOLVE_BUDGET: Duration = Duration::from_secs(10);
/// Lookups in flight at once: thousands of entries must not wait on DNS one name at a time, nor
/// open thousands of sockets.
const CONCURRENT_LOOKUPS: usize = 64;

/// One lookup's answer: the addresses, or why there are none.
pub type Answer = Result<Vec<IpAddr>, LookupError>;

/// Why a name has no addresses. Its text is what a rejection says after `cannot be resolved`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LookupError {
    /// The system resolver's error (no such host, no network, …), shared by every entry that
    /// names the host.
    #[error("{0}")]
    System(#[source] Arc<std::io::Error>),
    #[error("no such name (fixed answers)")]
    NotInFixedAnswers,
    /// The check's budget ran out first.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// Resolves a backend name.
pub trait Resolver: Send + Sync + fmt::Debug {
    fn lookup<'a>(&'a self, name: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

/// The system resolver (getaddrinfo: /etc/hosts, then DNS), as Envoy's own would see the name.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, name: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            tokio::net::lookup_host((name, 0))
                .await
                .map(|addrs| addrs.map(|a| a.ip()).collect())
                .map_err(|e| LookupError::System(Arc::new(e)))
        })
    }
}

/// Fixed answers, optionally slow: for tests and for checking against a recorded zone.
#[derive(Debug, Clone, Default)]
pub struct FixedResolver {
    answers: BTreeMap<String, Answer>,
    delay: Duration,
}

impl FixedResolver {
    pub fn new() -> Self {
        FixedResolver::default()
    }

    pub fn answer(mut self, name: &str, addresses: &[&str]) -> Self {
        let parsed = addresses
            .iter()
            .map(|a| {
                a.parse()
                    .unwrap_or_else(|_| panic!("{a} is not an IP address"))
            })
            .collect();
        self.answers.insert(name.to_string(), Ok(parsed));
        self
    }

    /// Every lookup takes this long first.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl Resolver for FixedResolver {
    fn lookup<'a>(&'a self, name: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.answers
                .get(name)
                .cloned()
                .unwrap_or(Err(LookupError::NotInFixedAnswers))
        })
    }
}

/// How backend names are resolved and how long a check may wait for them.
#[derive(Debug, Clone)]
pub struct BackendLookup {
    pub resolver: Arc<dyn Resolver>,
    pub budget: Duration,
}

impl Default for BackendLookup {
    fn default() -> Self {
        BackendLookup {
            resolver: Arc::new(SystemResolver),
            budget: DEFAULT_RESOLVE_BUDGET,
        }
    }
}

impl BackendLookup {
    pub fn new(resolver: impl Resolver + 'static) -> Self {
        BackendLookup {
            resolver: Arc::new(resolver),
            budget: DEFAULT_RESOLVE_BUDGET,
        }
    }

    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    /// Resolves every distinct backend name of `entries` (concurrently, within the budget) and
    /// judges the answers. Each problem is `(entry id, backend: reason)`; entries with a literal
    /// address have nothing to resolve (the offline checks judged them).
    pub async fn problems(&self, entries: &[Entry], policy: &Policy) -> Vec<(String, Problem)> {
        let names: BTreeSet<String> = entries
            .iter()
            .flat_map(backend_names)
            .map(|(_, name)| name)
            .collect();
        let answers = self.resolve_all(names).await;
        let mut problems = Vec::new();
        for entry in entries {
            for (field, name) in backend_names(entry) {
                // The rule (render's, pure) judges the answer's text.
                let answer = match answers.get(&name) {
                    Some(answer) => answer.clone(),
                    None => Err(LookupError::Timeout(self.budget)),
                }
                .map_err(|e| e.to_string());
                if let Err(reason) = check_resolved(&name, &answer, policy) {
                    problems.push((
                        entry.id(),
                        Problem {
                            field: field.into(),
                            reason,
                        },
                    ));
                }
            }
        }
        problems
    }

    async fn resolve_all(&self, names: BTreeSet<String>) -> BTreeMap<String, Answer> {
        let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_LOOKUPS));
        let mut lookups = tokio::task::JoinSet::new();
        for name in names {
            let resolver = self.resolver.clone();
            let permits = permits.clone();
            lookups.spawn(async move {
                let _permit = permits.acquire_owned().await;
                let answer = resolver.lookup(&name).await;
                (name, answer)
            });
        }
        let mut answers = BTreeMap::new();
        let deadline = tokio::time::Instant::now() + self.budget;
        while let Ok(Some(done)) = tokio::time::timeout_at(deadline, lookups.join_next()).await {
            if let Ok((name, answer)) = done {
                answers.insert(name, answer);
            }
        }
        // Lookups still running past the budget are abandoned (JoinSet aborts them on drop).
        answers
    }
}

/// The names an entry sends traffic to, with the field each came from (`Entry::upstreams`:
/// `backend`, with a canary `canary.backend`, and each route's `mirror.backend`, judged by the
/// same rule).
fn backend_names(entry: &Entry) -> Vec<(String, String)> {
    entry
        .upstreams()
        .into_iter()
        .filter_map(|(field, url)| match parse_backend(url).ok()?.host {
            BackendHost::Name(name) => Some((field, name)),
            BackendHost::V4(_) | BackendHost::V6(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::check::check_entry_bytes;

    fn entry(service: &str, backend: &str) -> Entry {
        let doc = serde_json::json!({"team": "t", "service": service, "host": "h",
            "backend": backend, "routes": [{"path": format!("/{service}")}]});
        check_entry_bytes(
            doc.to_string().as_bytes(),
            &Policy::new("api.example.com", false),
        )
        .expect("valid entry")
    }

    fn strict() -> Policy {
        Policy::new("api.example.com", false)
    }

    #[tokio::test]
    async fn each_refused_answer_names_the_entry_the_name_the_address_and_why() {
        let lookup = BackendLookup::new(
            FixedResolver::new()
                .answer("good.internal.example", &["10.0.0.5"])
                .answer("sneaky.example", &["10.0.0.6", "127.0.0.1"])
                .answer("imds.example", &["169.254.169.254"])
                .answer("mapped.example", &["::ffff:169.254.170.2"]),
        );
        let entries = [
            entry("a", "http://good.internal.example"),
            entry("b", "http://sneaky.example:9901"),
            entry("c", "https://imds.example"),
            entry("d", "http://mapped.example"),
            entry("e", "http://private.only-in-vpc.example"),
            entry("f", "http://10.0.0.7"),
        ];
        let problems = lookup.problems(&entries, &strict()).await;
        let got: Vec<(String, String)> = problems
            .iter()
            .map(|(id, p)| (id.clone(), p.to_string()))
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].0, "t/b");
        assert!(
            got[0]
                .1
                .starts_with("backend: sneaky.example resolves to 127.0.0.1 is a loopback address"),
            "{got:?}"
        );
        assert!(got[1]
            .1
            .contains("imds.example resolves to 169.254.169.254 is a link-local/metadata address"));
        assert!(got[2].1.contains("IPv4-mapped") && got[2].1.contains("169.254.170.2"));
        // Loopback allowed (local runs): only the metadata answers stay refused.
        let local = Policy::new("api.example.com", true);
        assert_eq!(lookup.problems(&entries, &local).await.len(), 2);
        // Names that resolve nowhere pass unless backends must resolve.
        let mut must = strict();
        must.require_resolvable_backends = true;
        let problems = lookup.problems(&entries, &must).await;
        assert!(problems.iter().any(|(id, p)| id == "t/e"
            && p.reason
                .contains("private.only-in-vpc.example does not resolve")));
    }

    #[tokio::test]
    async fn a_canary_name_is_judged_by_what_it_resolves_to_like_the_backend() {
        let lookup = BackendLookup::new(
            FixedResolver::new()
                .answer("good.internal.example", &["10.0.0.5"])
                .answer("canary.internal.example", &["169.254.169.254"]),
        );
        let doc = serde_json::json!({"team": "t", "service": "s", "host": "h",
            "backend": "http://good.internal.example",
            "canary": {"backend": "http://canary.internal.example:8080", "weight": 10},
            "routes": [{"path": "/s"}]});
        let e = check_entry_bytes(doc.to_string().as_bytes(), &strict()).expect("valid entry");
        let problems = lookup.problems(&[e], &strict()).await;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "t/s");
        assert_eq!(problems[0].1.field, "canary.backend");
        assert!(problems[0]
            .1
            .reason
            .contains("canary.internal.example resolves to 169.254.169.254"));
    }

    #[tokio::test]
    async fn a_mirror_name_is_judged_by_what_it_resolves_to_like_the_backend() {
        let lookup = BackendLookup::new(
            FixedResolver::new()
                .answer("good.internal.example", &["10.0.0.5"])
                .answer("shadow.internal.example", &["127.0.0.1"]),
        );
        let doc = serde_json::json!({"team": "t", "service": "s", "host": "h",
            "backend": "http://good.internal.example",
            "routes": [{"path": "/a"},
                       {"path": "/s", "mirror": {"backend": "http://shadow.internal.example", "percent": 50}}]});
        let e = check_entry_bytes(doc.to_string().as_bytes(), &strict()).expect("valid entry");
        let problems = lookup.problems(&[e], &strict()).await;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].1.field, "routes[1].mirror.backend");
        assert!(problems[0].1.reason.contains("shadow.internal.example resolves to 127.0.0.1"), "{problems:?}");
    }

    #[tokio::test]
    async fn lookups_run_concurrently_within_the_budget() {
        let mut resolver = FixedResolver::new().delay(Duration::from_millis(300));
        let mut entries = Vec::new();
        for i in 0..200 {
            let name = format!("svc{i}.internal.example");
            resolver = resolver.answer(&name, &["10.0.0.1"]);
            entries.push(entry(&format!("s{i}"), &format!("http://{name}")));
        }
        // 200 lookups of 300 ms each, 64 at a time, fit a 5 s budget only when concurrent.
        let lookup = BackendLookup::new(resolver.clone()).with_budget(Duration::from_secs(5));
        assert!(lookup.problems(&entries, &strict()).await.is_empty());
        // Past the budget, unanswered names count as unresolved: refused only when they must resolve.
        let slow = BackendLookup::new(resolver.delay(Duration::from_secs(30)))
            .with_budget(Duration::from_millis(200));
        assert!(slow.problems(&entries, &strict()).await.is_empty());
        let mut must = strict();
        must.require_resolvable_backends = true;
        let problems = slow.problems(&entries[..3], &must).await;
        assert_eq!(problems.len(), 3);
        assert!(
            problems[0].1.reason.contains("no answer within"),
            "{problems:?}"
        );
    }

    #[tokio::test]
    async fn the_system_resolver_reads_etc_hosts() {
        // localhost is refused by name already; here the answer itself is judged, so every
        // /etc/hosts name that leads to loopback is caught the same way.
        let answer = SystemResolver
            .lookup("localhost")
            .await
            .map_err(|e| e.to_string());
        let err = check_resolved("localhost", &answer, &strict()).expect_err("loopback");
        assert!(err.contains("loopback"), "{err}");
        let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
        let loopback_names: Vec<&str> = hosts
            .lines()
            .filter(|l| l.starts_with("127.") || l.starts_with("::1"))
            .flat_map(|l| l.split_whitespace().skip(1))
            .filter(|n| !n.starts_with('#') && *n != "localhost" && !n.ends_with(".localhost"))
            .filter(|n| {
                gateway_render::check::check_backend(&format!("http://{n}"), &strict()).is_ok()
            })
            .collect();
        for name in loopback_names {
            let e = entry("x", &format!("http://{name}:8080"));
            let problems = BackendLookup::default().problems(&[e], &strict()).await;
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            assert!(problems[0].1.reason.contains("loopback"), "{problems:?}");
        }
    }

    #[tokio::test]
    async fn a_failed_system_lookup_keeps_the_resolver_error() {
        use std::error::Error;
        // `.invalid` never resolves (RFC 6761).
        let err = SystemResolver
            .lookup("no-such-host.invalid")
            .await
            .expect_err("unresolvable");
        assert!(matches!(err, LookupError::System(_)), "{err:?}");
        let source = err.source().expect("the resolver's error");
        assert_eq!(source.to_string(), err.to_string());
        assert_eq!(
            LookupError::Timeout(Duration::from_millis(200)).to_string(),
            "no answer within 200ms"
        );
    }
}
