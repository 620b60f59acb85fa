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
use std::time::{Duration, Instant};

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

/// How long an answer is used without asking again, how long past that it still stands in for
/// a refresh that does not come in time, and how fast the resolver is asked
/// (docs/design.md#backend-policy). `gatewayctl` runs once, so only a process that lives across
/// runs (a warm reconcile Lambda, the register function) keeps answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolveCaching {
    /// An answer younger than this is used as it is (0: every run asks again).
    pub fresh_for: Duration,
    /// An older answer, up to this age, is asked again within `refresh_budget` and used when no
    /// answer comes by then.
    pub stale_for: Duration,
    /// What a run waits for the refresh of names it already has answers for; new names get the
    /// whole budget.
    pub refresh_budget: Duration,
    /// Queries started per second at most: a VPC resolver answers at most 1,024 packets per
    /// second per network interface.
    pub queries_per_second: u32,
}

impl Default for ResolveCaching {
    fn default() -> Self {
        ResolveCaching {
            fresh_for: Duration::from_secs(300),
            stale_for: Duration::from_secs(3600),
            refresh_budget: Duration::from_secs(1),
            queries_per_second: 800,
        }
    }
}

/// Answers kept between runs: name → (addresses, when they were asked for). Only answers with
/// addresses are kept; an error is asked again next time.
#[derive(Debug, Default)]
struct AnswerCache(std::sync::Mutex<BTreeMap<String, (Vec<IpAddr>, Instant)>>);

/// Lookups between runs: the names being asked now (a lookup a run stopped waiting for goes on
/// and leaves its answer in the cache, so it is never started twice), and the names asked before
/// without addresses (no answer in time, or an error), which a run waits for only as long as for
/// a stale answer: a resolver too slow for a whole registry's names in one budget cannot hold
/// every run for the whole budget.
#[derive(Debug, Default)]
struct Lookups {
    in_flight: std::sync::Mutex<BTreeSet<String>>,
    unanswered: std::sync::Mutex<BTreeSet<String>>,
}

/// How backend names are resolved and how long a check may wait for them.
#[derive(Debug, Clone)]
pub struct BackendLookup {
    pub resolver: Arc<dyn Resolver>,
    pub budget: Duration,
    pub caching: ResolveCaching,
    cache: Arc<AnswerCache>,
    lookups: Arc<Lookups>,
    /// Lookups running at once, across runs (a lookup outlives the run that started it).
    permits: Arc<tokio::sync::Semaphore>,
}

impl Default for BackendLookup {
    fn default() -> Self {
        BackendLookup::new(SystemResolver)
    }
}

impl BackendLookup {
    pub fn new(resolver: impl Resolver + 'static) -> Self {
        BackendLookup {
            resolver: Arc::new(resolver),
            budget: DEFAULT_RESOLVE_BUDGET,
            caching: ResolveCaching::default(),
            cache: Arc::default(),
            lookups: Arc::default(),
            permits: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_LOOKUPS)),
        }
    }

    pub fn with_caching(mut self, caching: ResolveCaching) -> Self {
        self.caching = caching;
        self
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
        let answers = self.answers(names).await;
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

    /// Every name's answer: a fresh cached one as it is; new names asked first with the whole
    /// budget, then stale ones within the refresh budget, each falling back to its cached
    /// answer; every answer with addresses kept for the next run.
    async fn answers(&self, names: BTreeSet<String>) -> BTreeMap<String, Answer> {
        let now = Instant::now();
        let c = self.caching;
        let (mut answers, mut stale, mut new) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
        {
            let cache = self.cache.0.lock().unwrap_or_else(|e| e.into_inner());
            for name in names {
                match cache.get(&name) {
                    Some((addrs, at)) if now.duration_since(*at) < c.fresh_for => {
                        answers.insert(name, Ok(addrs.clone()));
                    }
                    Some((addrs, at)) if now.duration_since(*at) < c.stale_for => {
                        stale.insert(name, addrs.clone());
                    }
                    _ => new.push(name),
                }
            }
        }
        let refresh_budget = c.refresh_budget.min(self.budget);
        // Names never asked first, with the whole budget; names asked before without an answer
        // in time, and stale ones, within the refresh budget.
        let unanswered = self.lookups.unanswered.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (waited, new): (Vec<String>, Vec<String>) = new.into_iter().partition(|n| unanswered.contains(n));
        let deadlines = new
            .into_iter()
            .map(|n| (n, self.budget))
            .chain(waited.into_iter().map(|n| (n, refresh_budget)))
            .chain(stale.keys().map(|n| (n.clone(), refresh_budget)));
        let asked = self.resolve_all(deadlines.collect()).await;
        let mut cache = self.cache.0.lock().unwrap_or_else(|e| e.into_inner());
        for (name, answer) in asked {
            if let Ok(addrs) = &answer {
                cache.insert(name.clone(), (addrs.clone(), Instant::now()));
            }
            answers.insert(name, answer);
        }
        for (name, addrs) in stale {
            // No answer in time: the last one stands in (its age is bounded by `stale_for`).
            if !matches!(answers.get(&name), Some(Ok(_)) | Some(Err(LookupError::System(_)))) {
                answers.insert(name, Ok(addrs));
            }
        }
        answers
    }

    /// Asks for each name, in the order given, at most `queries_per_second` started per second
    /// and `CONCURRENT_LOOKUPS` at once, each waited for within its own budget from now. A lookup
    /// still running at its budget goes on without the run: its answer, when one comes, is kept
    /// in the cache for the next run, and the name is marked unanswered until then. A name whose
    /// lookup an earlier run started is not asked again while it runs.
    async fn resolve_all(&self, names: Vec<(String, Duration)>) -> BTreeMap<String, Answer> {
        let start = tokio::time::Instant::now();
        let gap = Duration::from_secs(1) / self.caching.queries_per_second.max(1);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Answer)>();
        let mut budgets = BTreeMap::new();
        let mut longest = Duration::ZERO;
        let mut asked = 0u32;
        for (name, budget) in names {
            longest = longest.max(budget);
            budgets.insert(name.clone(), budget);
            if !self.lookups.in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone()) {
                continue;
            }
            let (resolver, permits, cache, lookups, tx) = (
                self.resolver.clone(),
                self.permits.clone(),
                self.cache.clone(),
                self.lookups.clone(),
                tx.clone(),
            );
            let slot = start + gap * asked;
            asked = asked.saturating_add(1);
            tokio::spawn(async move {
                tokio::time::sleep_until(slot).await;
                let answer = {
                    let _permit = permits.acquire_owned().await;
                    resolver.lookup(&name).await
                };
                // Addresses are kept, and the name is waited for with the whole budget again; an
                // error (no such name, or the resolver's own timeout) leaves it unanswered: it
                // came once already, so the refresh budget is enough for it.
                let mut unanswered = lookups.unanswered.lock().unwrap_or_else(|e| e.into_inner());
                match &answer {
                    Ok(addrs) => {
                        let mut cache = cache.0.lock().unwrap_or_else(|e| e.into_inner());
                        cache.insert(name.clone(), (addrs.clone(), Instant::now()));
                        unanswered.remove(&name);
                    }
                    Err(_) => {
                        unanswered.insert(name.clone());
                    }
                }
                drop(unanswered);
                lookups.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                // The run may have stopped waiting; the answer is in the cache then.
                let _ = tx.send((name, answer));
            });
        }
        drop(tx);
        let mut answers = BTreeMap::new();
        let deadline = start + longest.min(self.budget);
        while answers.len() < budgets.len() {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((name, answer))) => {
                    let in_time = budgets.get(&name).is_some_and(|b| start.elapsed() <= *b);
                    if in_time {
                        answers.insert(name, answer);
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Asked and not answered in time: waited for only within the refresh budget next run.
        let mut unanswered = self.lookups.unanswered.lock().unwrap_or_else(|e| e.into_inner());
        let in_flight = self.lookups.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        for (name, budget) in &budgets {
            if !answers.contains_key(name) {
                if in_flight.contains(name) {
                    unanswered.insert(name.clone());
                }
                answers.insert(name.clone(), Err(LookupError::Timeout(*budget)));
            }
        }
        answers
    }
}

/// The names an entry sends traffic to, with the field each came from (`Entry::upstreams`:
/// `backend`, with a canary `canary.backend`, and each route's `mirror.backend`, judged by the
/// same rule), and the origins of its `jwt` providers' key sets (Envoy fetches them too).
fn backend_names(entry: &Entry) -> Vec<(String, String)> {
    let jwks = entry
        .jwks_uris()
        .into_iter()
        .map(|(field, uri)| (field, gateway_render::names::jwks_origin(uri)));
    entry
        .upstreams()
        .into_iter()
        .chain(jwks)
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

    /// Answers every name with `10.0.0.5` (or never, once `hang` is set), recording each ask.
    #[derive(Debug, Default)]
    struct Recording {
        asked: std::sync::Mutex<Vec<String>>,
        hang: std::sync::atomic::AtomicBool,
    }

    impl Resolver for Arc<Recording> {
        fn lookup<'a>(&'a self, name: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
            Box::pin(async move {
                self.asked.lock().expect("lock").push(name.to_string());
                if self.hang.load(std::sync::atomic::Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                Ok(vec!["10.0.0.5".parse().expect("address")])
            })
        }
    }

    fn asked(r: &Recording) -> Vec<String> {
        r.asked.lock().expect("lock").clone()
    }

    #[tokio::test]
    async fn a_fresh_answer_is_not_asked_for_again() {
        let r = Arc::new(Recording::default());
        let lookup = BackendLookup::new(r.clone());
        let e = entry("s", "http://a.internal.example");
        for _ in 0..3 {
            assert!(lookup.problems(std::slice::from_ref(&e), &strict()).await.is_empty());
        }
        assert_eq!(asked(&r), ["a.internal.example"], "asked once, then answered from the cache");
        // A clone shares the answers (the reconcile config is cloned into each run).
        assert!(lookup.clone().problems(&[e], &strict()).await.is_empty());
        assert_eq!(asked(&r).len(), 1);
    }

    #[tokio::test]
    async fn a_stale_answer_stands_in_for_a_refresh_that_does_not_come_and_new_names_go_first() {
        let r = Arc::new(Recording::default());
        let caching = ResolveCaching {
            fresh_for: Duration::ZERO,
            stale_for: Duration::from_secs(3600),
            refresh_budget: Duration::from_millis(300),
            queries_per_second: 1,
        };
        let lookup = BackendLookup::new(r.clone()).with_caching(caching);
        let old = entry("old", "http://old.internal.example");
        assert!(lookup.problems(std::slice::from_ref(&old), &strict()).await.is_empty());
        // Now the resolver never answers, and a new name arrives: the new name is asked first
        // (one query a second), the old name's refresh slot falls past its 300 ms and its last
        // answer stands in, so the run does not wait out the 10 s budget on it.
        r.hang.store(true, std::sync::atomic::Ordering::SeqCst);
        let new = entry("new", "http://new.internal.example");
        let lookup = lookup.with_budget(Duration::from_secs(2));
        // Where names must resolve, an unanswered one is refused: so the report shows which
        // names had an answer.
        let mut must = strict();
        must.require_resolvable_backends = true;
        let problems = lookup.problems(&[old, new], &must).await;
        // The old name's refresh still starts in its slot (1 s), past its 300 ms: it goes on
        // without the run, which had stopped waiting for it.
        assert_eq!(asked(&r), ["old.internal.example", "new.internal.example", "old.internal.example"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "t/new", "only the new name, which never answered: {problems:?}");
        assert!(problems[0].1.reason.contains("no answer within 2s"), "{problems:?}");
    }

    /// A resolver slower than a run's budget: the first run waits the budget out, the lookup
    /// goes on and its answer serves the next run without asking again; a name still without an
    /// answer is waited for only within the refresh budget, never the whole budget again, and
    /// is not asked a second time while its lookup runs.
    #[tokio::test]
    async fn a_resolver_slower_than_the_budget_stalls_one_run_and_not_the_next() {
        let slow = FixedResolver::new()
            .answer("slow.internal.example", &["10.0.0.7"])
            .delay(Duration::from_millis(1500));
        let lookup = BackendLookup::new(slow).with_budget(Duration::from_millis(500));
        let mut must = strict();
        must.require_resolvable_backends = true;
        let e = entry("s", "http://slow.internal.example");
        let started = Instant::now();
        let first = lookup.problems(std::slice::from_ref(&e), &must).await;
        assert!(started.elapsed() >= Duration::from_millis(450), "the first run waits the budget");
        assert!(first[0].1.reason.contains("no answer within 500ms"), "{first:?}");
        // The next run, while the lookup still runs: within the refresh budget, not asked again.
        let started = Instant::now();
        let second = lookup.problems(std::slice::from_ref(&e), &must).await;
        assert!(started.elapsed() < Duration::from_millis(450), "waited {:?}", started.elapsed());
        assert_eq!(second.len(), 1, "{second:?}");
        // Once the lookup answered, the answer is kept: no wait, no problem.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let started = Instant::now();
        assert!(lookup.problems(&[e], &must).await.is_empty());
        assert!(started.elapsed() < Duration::from_millis(100), "answered from the cache");
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
