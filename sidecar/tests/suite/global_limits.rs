//! Global limits proven on a running system: the rendered descriptors (Envoy's rate-limit
//! actions) and the rendered `ratelimit.yaml` (delivered by the rate-limit sidecar) must agree,
//! or requests are counted wrongly. The real Envoy asks `gateway-ratelimit` (the local stand-in
//! for envoyproxy/ratelimit, served over gRPC on loopback) for every request: per client address
//! (the load balancer's X-Forwarded-For, one trusted hop), per route, per header value, every
//! time unit, the strictest of several limits, a limit changed by a new publish, and fail-open
//! when the service goes away or has no rules loaded. The `x-ratelimit-*` headers come from
//! Envoy (the bootstrap's `enable_x_ratelimit_headers`), computed from the service's descriptor
//! statuses, on every answer a global limit counted, as in production.

use gateway_testkit::delivery as common;

use common::*;
use gateway_ratelimit::{serve, Listen, ServeOptions};
use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_render::{Entry, Limit, Per, Unit};
use gateway_testkit::backend::Backend;
use gateway_testkit::{free_addr, MotoServer};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// `gateway-ratelimit` served in this process on a loopback port, reading the rate-limit
/// sidecar's directory.
struct LocalLimiter {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), gateway_ratelimit::ServeError>>,
}

impl LocalLimiter {
    async fn start(config_dir: &Path) -> LocalLimiter {
        let addr = free_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let options = ServeOptions {
            config_dir: config_dir.to_path_buf(),
            listen: Listen::Tcp(addr),
            reload_every: Duration::from_millis(50),
        };
        let task = tokio::spawn(serve(options, async {
            let _ = stopped.await;
        }));
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "gateway-ratelimit never listened on {addr}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        LocalLimiter {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let served = (&mut self.task).await.expect("limiter task");
        served.expect("limiter served until stopped");
    }
}

/// Publishes `entries`, runs both sidecar modes and the limiter, and starts Envoy behind one
/// trusted hop, pointing its rate-limit cluster at the limiter.
async fn start_stack(
    moto: &MotoServer,
    entries: &[Entry],
) -> (Gateway, SidecarProcess, LocalLimiter) {
    let bucket = Bucket::create(moto).await;
    let first = bucket.publish(entries).await;
    let dirs = Dirs::new();
    let ratelimit_sidecar = SidecarProcess::start(moto, &ratelimit_mode_args(&bucket.name, &dirs));
    ratelimit_sidecar
        .wait_live(&first.1, Duration::from_secs(30))
        .await;
    let limiter = LocalLimiter::start(&dirs.ratelimit).await;
    let gw = Gateway::deliver(moto, bucket, first, dirs, &[], |dirs, ports| {
        start_envoy_with_limiter_budget(dirs, ports, limiter.addr, 1, "1s")
    })
    .await;
    (gw, ratelimit_sidecar, limiter)
}

struct Answer {
    code: u16,
    headers: reqwest::header::HeaderMap,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// One GET through Envoy to `billing`'s host with extra headers.
async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = gw
        .client
        .get(format!("http://{}{path}", gw.listener()))
        .header(reqwest::header::HOST, format!("billing.{DOMAIN}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    Answer {
        code: response.status().as_u16(),
        headers: response.headers().clone(),
    }
}

/// An Envoy counter summed over the clusters that have it (`ratelimit.error`, …).
fn summed_stat(gw: &Gateway, suffix: &str) -> u64 {
    let Some((200, text)) = gw.envoy.admin_get(&format!("/stats?filter={suffix}")) else {
        return 0;
    };
    text.lines()
        .filter_map(|l| l.rsplit_once(": ")?.1.trim().parse::<u64>().ok())
        .sum()
}

/// Requests Envoy let through because the rate-limit call failed or timed out (summed over
/// clusters).
fn limiter_failed_open(gw: &Gateway) -> u64 {
    summed_stat(gw, "ratelimit.failure_mode_allowed")
}

async fn codes(gw: &Gateway, path: &str, headers: &[(&str, &str)], n: usize) -> Vec<u16> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(get(gw, path, headers).await.code);
    }
    out
}

/// Envoy's first call opens its HTTP/2 connection to the limiter and may outlast the 25 ms
/// budget (the request then passes uncounted by design, with no statuses and so no headers):
/// call through `path` until an answer carries the limiter's statuses.
async fn warm_up(gw: &Gateway, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(gw, path, &[])
        .await
        .header("x-ratelimit-limit")
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "no answer of the limiter reached Envoy in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// As the load balancer sends it: the client's address is the last X-Forwarded-For entry.
fn from(client: &str) -> (&'static str, &str) {
    ("x-forwarded-for", client)
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
}

/// Fixed windows start on the unit's boundary: wait until at least `need` seconds of the current
/// minute remain, so a sequence of requests is counted in one window.
async fn clear_of_minute_boundary(need: u64) {
    while unix_now().as_secs() % 60 + need >= 60 {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn global(per: Per, header: Option<&str>, requests: u32, every: Unit) -> Limit {
    Limit::Global {
        per,
        header: header.map(str::to_string),
        requests,
        every,
    }
}

fn billing(backend: &Backend, routes: Vec<gateway_render::Route>) -> Vec<Entry> {
    billing_routes(&backend.url(), routes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_global_limit_is_counted_as_registered() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    // (path, per, header, requests, every): one limit a route, then a route with two.
    let single = [
        ("/per-ip", Per::ClientIp, None, 3, Unit::Minute),
        ("/per-ip6", Per::ClientIp, None, 2, Unit::Minute),
        ("/per-route", Per::Route, None, 2, Unit::Minute),
        ("/per-header", Per::Header, Some("x-api-key"), 2, Unit::Hour),
        ("/per-second", Per::Route, None, 2, Unit::Second),
        ("/per-day", Per::Route, None, 1, Unit::Day),
    ];
    let mut routes: Vec<_> = single
        .into_iter()
        .map(|(path, per, header, requests, every)| {
            route(path, None, vec![global(per, header, requests, every)])
        })
        .collect();
    routes.push(route("/free", None, Vec::new()));
    routes.push(route(
        "/warm-up",
        None,
        vec![global(Per::Route, None, 1000, Unit::Minute)],
    ));
    routes.push(route(
        "/strictest",
        None,
        vec![
            global(Per::Route, None, 4, Unit::Minute),
            global(Per::ClientIp, None, 2, Unit::Minute),
        ],
    ));
    let entries = billing(&backend, routes);
    let (gw, _rl_sidecar, _limiter) = start_stack(moto, &entries).await;
    warm_up(&gw, "/warm-up").await;
    clear_of_minute_boundary(30).await;

    // Per client address: each address has its own quota of 3. Envoy's headers say so on
    // every answer the limit counted (draft 03: the limit, then each quota policy).
    let a = from("203.0.113.10");
    let b = from("203.0.113.20");
    let first = get(&gw, "/per-ip", &[a]).await;
    assert_eq!(first.code, 200);
    assert_eq!(first.header("x-ratelimit-limit"), Some("3, 3;w=60"));
    assert_eq!(first.header("x-ratelimit-remaining"), Some("2"));
    assert_eq!(codes(&gw, "/per-ip", &[a], 2).await, [200, 200]);
    let before = backend.requests();
    let refused = get(&gw, "/per-ip", &[a]).await;
    assert_eq!(
        refused.code, 429,
        "the 4th request of one client in a minute"
    );
    assert_eq!(
        backend.requests(),
        before,
        "a refused request never reaches the backend"
    );
    assert_eq!(refused.header("x-envoy-ratelimited"), Some("true"));
    assert_eq!(refused.header("x-ratelimit-limit"), Some("3, 3;w=60"));
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    let reset: u64 = refused
        .header("x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("x-ratelimit-reset");
    assert!(
        (1..=60).contains(&reset),
        "a minute window resets within 60 s, said {reset}"
    );
    assert_eq!(
        get(&gw, "/per-ip", &[b]).await.code,
        200,
        "another client is counted apart"
    );
    // A route without a global limit asks the limiter nothing, so has no such headers.
    let free = get(&gw, "/free", &[a]).await;
    assert_eq!(free.code, 200);
    assert_eq!(free.header("x-ratelimit-limit"), None);
    // A client cannot escape its bucket by writing its own X-Forwarded-For prefix: with one
    // trusted hop the load balancer's last entry is the client.
    let spoofed = ("x-forwarded-for", "198.51.100.1, 203.0.113.10");
    assert_eq!(get(&gw, "/per-ip", &[spoofed]).await.code, 429);

    // An IPv6 client is counted by its /64 (GATEWAY_CLIENT_IPV6_PREFIX): the addresses of one
    // prefix share a quota, so a client cannot mint itself new buckets; another /64 is apart.
    let six_a = from("2001:db8:1:2::10");
    let six_b = from("2001:db8:1:2:ffff::20");
    let six_other = from("2001:db8:1:3::10");
    assert_eq!(codes(&gw, "/per-ip6", &[six_a], 1).await, [200]);
    assert_eq!(codes(&gw, "/per-ip6", &[six_b], 2).await, [200, 429]);
    assert_eq!(codes(&gw, "/per-ip6", &[six_other], 1).await, [200]);

    // Per route: every client shares the quota of 2.
    assert_eq!(codes(&gw, "/per-route", &[a], 1).await, [200]);
    assert_eq!(codes(&gw, "/per-route", &[b], 2).await, [200, 429]);

    // Per header value: each value has its own quota; requests without the header are not
    // counted by this limit.
    let k1 = ("x-api-key", "key-one");
    let k2 = ("x-api-key", "key-two");
    assert_eq!(codes(&gw, "/per-header", &[k1], 3).await, [200, 200, 429]);
    assert_eq!(codes(&gw, "/per-header", &[k2], 1).await, [200]);
    assert_eq!(codes(&gw, "/per-header", &[], 5).await, [200; 5]);
    let hour_reset: u64 = get(&gw, "/per-header", &[k1])
        .await
        .header("x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("x-ratelimit-reset on the refused keyed request");
    assert!((1..=3600).contains(&hour_reset), "{hour_reset}");

    // Per day.
    assert_eq!(codes(&gw, "/per-day", &[a], 2).await, [200, 429]);

    // Several limits on one route: the strictest refuses, and each counts every request it
    // sees (envoyproxy/ratelimit counts refused hits too). Route quota 4, client quota 2:
    // a, a (route 2), a refused by its client limit (route 3), b (route 4), b refused by the
    // route limit (route 5). All five in one minute window: a window that ends in between
    // starts both counts again, so never start in the window's last seconds.
    let into_minute = unix_now().as_secs() % 60;
    if into_minute >= 50 {
        tokio::time::sleep(Duration::from_secs(61 - into_minute)).await;
    }
    assert_eq!(codes(&gw, "/strictest", &[a], 2).await, [200, 200]);
    let third = get(&gw, "/strictest", &[a]).await;
    assert_eq!(third.code, 429);
    assert_eq!(
        third.header("x-ratelimit-limit"),
        Some("2, 4;w=60, 2;w=60"),
        "the client limit refused; both limits' policies are listed"
    );
    assert_eq!(codes(&gw, "/strictest", &[b], 2).await, [200, 429]);

    // Per second: the window starts on the second; a new second has a new quota. A burst that
    // crossed into the next second, or during which the limiter call timed out and Envoy let a
    // request through (failure mode allow, by design), proves nothing: try again in a new second.
    for attempt in 1..=5 {
        loop {
            if unix_now().subsec_millis() < 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let second = unix_now().as_secs();
        let failed_open = limiter_failed_open(&gw);
        let burst = codes(&gw, "/per-second", &[a], 3).await;
        let inconclusive = unix_now().as_secs() != second || limiter_failed_open(&gw) > failed_open;
        if !inconclusive || attempt == 5 {
            if unix_now().as_secs() == second {
                assert_eq!(burst, [200, 200, 429]);
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        codes(&gw, "/per-second", &[a], 1).await,
        [200],
        "a new second"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_changed_by_a_publish_applies_without_a_restart() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let limited = |n: u32| {
        billing(
            &backend,
            vec![
                route("/change", None, vec![global(Per::Route, None, n, Unit::Minute)]),
                // Its own count: opens Envoy's connection to the limiter without spending
                // /change's one request.
                route("/warm", None, vec![global(Per::Route, None, 1000, Unit::Minute)]),
            ],
        )
    };
    let (gw, rl_sidecar, _limiter) = start_stack(moto, &limited(1)).await;
    let envoy_pid = gw.envoy.pid();
    warm_up(&gw, "/warm").await;
    clear_of_minute_boundary(40).await;
    assert_eq!(codes(&gw, "/change", &[], 2).await, [200, 429]);

    // The same route at 3 a minute: the descriptors are unchanged, only the rules file changes.
    let (_, hash) = gw.bucket.publish(&limited(3)).await;
    rl_sidecar.wait_live(&hash, Duration::from_secs(30)).await;
    let delivered =
        std::fs::read_to_string(gw.dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("rules");
    assert!(delivered.contains("requests_per_unit: 3"), "{delivered}");
    // The service looks at the file every 50 ms.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The window's count carries on: it is 2 (one passed, one refused); 3 is the new limit.
    assert_eq!(codes(&gw, "/change", &[], 2).await, [200, 429]);
    assert_eq!(gw.envoy.pid(), envoy_pid, "Envoy was not restarted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limiter_going_away_fails_open_and_is_reported() {
    // Its own moto: RateLimiterErrors is checked in CloudWatch, which is not per bucket.
    let moto = MotoServer::start();
    let backend = Backend::start("billing");
    let entries = billing(
        &backend,
        vec![
            route("/limited", None, vec![global(Per::Route, None, 1, Unit::Minute)]),
            route("/warm", None, vec![global(Per::Route, None, 1000, Unit::Minute)]),
        ],
    );
    let (gw, _rl_sidecar, limiter) = start_stack(&moto, &entries).await;
    warm_up(&gw, "/warm").await;
    clear_of_minute_boundary(20).await;
    assert_eq!(
        codes(&gw, "/limited", &[], 2).await,
        [200, 429],
        "the limiter is counting"
    );

    limiter.stop().await;
    gw.pass_until_limiter_errors_reported("/limited").await;
    let listed = gateway_metrics(&moto, "RateLimiterErrors").await;
    assert_eq!(listed.metrics().len(), 1, "{listed:?}");
}

/// `text` with `shadow_mode: true` on every rule that has a `rate_limit` (the line before it,
/// at its indentation).
fn in_shadow_mode(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start() == "rate_limit:" {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}shadow_mode: true\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Writes `text` as `dir/ratelimit.yaml` the way the sidecar does (a temp file outside the
/// directory, renamed in).
fn put_rules(dir: &Path, text: &str) {
    let staging = dir.with_extension("staging");
    std::fs::create_dir_all(&staging).expect("staging dir");
    std::fs::create_dir_all(dir).expect("rules dir");
    let tmp = staging.join(".ratelimit.yaml.tmp");
    std::fs::write(&tmp, text).expect("write rules");
    std::fs::rename(&tmp, dir.join(RATE_LIMIT_FILE)).expect("rename rules");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_rules_loaded_fails_open_and_a_shadow_mode_limit_never_refuses() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let entries = billing(
        &backend,
        vec![route(
            "/limited",
            None,
            vec![global(Per::Route, None, 1, Unit::Minute)],
        )],
    );
    let bucket = Bucket::create(moto).await;
    let first = bucket.publish(&entries).await;
    let dirs = Dirs::new();
    let rl_sidecar = SidecarProcess::start(moto, &ratelimit_mode_args(&bucket.name, &dirs));
    rl_sidecar
        .wait_live(&first.1, Duration::from_secs(30))
        .await;
    let delivered =
        std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("delivered rules");
    // The limiter's own directory, empty of rules until the test puts them there: nothing is
    // loaded, so every call fails (production: "no rate limit configuration loaded").
    let limiter_dir = dirs.ratelimit.with_file_name("limiter-rules");
    let limiter = LocalLimiter::start(&limiter_dir).await;
    let gw = Gateway::deliver(moto, bucket, first, dirs, &[], |dirs, ports| {
        start_envoy_with_limiter_budget(dirs, ports, limiter.addr, 1, "1s")
    })
    .await;

    // Every request passes, each call is an error Envoy counts, and the sidecar reports it.
    let errors_before = summed_stat(&gw, "ratelimit.error");
    let (passed, _) = gw.pass_until_limiter_errors_reported("/limited").await;
    assert!(passed >= 1);
    assert!(
        summed_stat(&gw, "ratelimit.error") > errors_before,
        "Envoy counted the failed calls"
    );
    let passing = get(&gw, "/limited", &[]).await;
    assert_eq!(passing.code, 200);
    assert_eq!(
        passing.header("x-ratelimit-limit"),
        None,
        "no status, no headers"
    );

    // The rendered rules with the route's rule in shadow mode: counted, over, never refused.
    clear_of_minute_boundary(20).await;
    put_rules(&limiter_dir, &in_shadow_mode(&delivered));
    let deadline = Instant::now() + Duration::from_secs(10);
    let counted = loop {
        let answer = get(&gw, "/limited", &[]).await;
        if answer.header("x-ratelimit-limit").is_some() {
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "the shadow-mode rules never loaded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(counted.code, 200);
    for _ in 0..3 {
        let over = get(&gw, "/limited", &[]).await;
        assert_eq!(over.code, 200, "shadow mode never refuses");
        assert_eq!(
            over.header("x-ratelimit-remaining"),
            Some("0"),
            "but counts"
        );
    }

    // The same rules enforced: the window's count carries on, so the next request is refused.
    put_rules(&limiter_dir, &delivered);
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&gw, "/limited", &[]).await.code != 429 {
        assert!(
            Instant::now() < deadline,
            "the enforced rules never refused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(rl_sidecar);
    limiter.stop().await;
}
