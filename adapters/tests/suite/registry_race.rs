//! Concurrent registrations against moto's serialised server: the registry's own guards, not
//! moto's, decide who wins (stock moto is not atomic under concurrent requests:
//! docs/design.md#aws-and-moto).

use gateway_testkit::registry as registry_support;

use gateway_adapters::registry::{DynamoRegistry, RegisterOutcome, RegistryError};
use gateway_render::Entry;
use registry_support::{entry, holder, registry};
use std::collections::BTreeMap;
use std::sync::Arc;

const RACERS: usize = 30;
const ROUNDS: usize = 3;

/// Registers every entry at once, each on its own task; the results in the entries' order.
async fn race(
    reg: &Arc<DynamoRegistry>,
    entries: Vec<Entry>,
) -> Vec<(Entry, Result<RegisterOutcome, RegistryError>)> {
    let tasks: Vec<_> = entries
        .into_iter()
        .map(|e| {
            let reg = reg.clone();
            tokio::spawn(async move {
                let result = reg.register(&e).await;
                (e, result)
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task"));
    }
    results
}

/// A round's results split into the winners (each `named`) and the holders every conflict names;
/// `check_what` judges each conflict's subject (racer index, its entry, the subject). Any other
/// error fails the test.
fn winners_and_holders(
    round: usize,
    results: Vec<(Entry, Result<RegisterOutcome, RegistryError>)>,
    named: impl Fn(&Entry) -> String,
    check_what: impl Fn(usize, &Entry, &str),
) -> (Vec<String>, Vec<String>) {
    let mut winners = Vec::new();
    let mut holders = Vec::new();
    for (i, (e, result)) in results.into_iter().enumerate() {
        match result {
            Ok(_) => winners.push(named(&e)),
            Err(RegistryError::Conflict { what, holder }) => {
                check_what(i, &e, &what);
                holders.push(holder);
            }
            Err(other) => {
                panic!("round {round}: racer {i} got {other:?}, expected a win or a conflict")
            }
        }
    }
    (winners, holders)
}

/// One team won the round, every other racer lost to a conflict naming it, and the registry
/// holds the winner's entry alone.
async fn assert_one_team_holds_it(
    reg: &DynamoRegistry,
    round: usize,
    winners: &[String],
    holders: &[String],
) {
    assert_one_winner_named_by_every_loser(round, winners, holders);
    assert_eq!(holders.len(), RACERS - 1, "round {round}");
    let snapshot = reg.list().await.expect("list");
    assert_eq!(snapshot.entries.len(), 1, "round {round}");
    assert_eq!(snapshot.entries[0].entry.team, winners[0]);
}

/// Exactly one racer won, and every loser that was told of a conflict names it.
fn assert_one_winner_named_by_every_loser(round: usize, winners: &[String], holders: &[String]) {
    assert_eq!(
        winners.len(),
        1,
        "round {round}: exactly one winner, got {winners:?}"
    );
    assert!(
        holders.iter().all(|h| *h == winners[0]),
        "round {round}: losers name {holders:?}, winner {winners:?}"
    );
}

/// Rounds of teams (`team{i}`, each with service `api` on `/api`) racing at once for the host
/// `host_of(round, racer)`: one team holds it all and every loser names it;
/// `check_what(round, racer, its entry, the subject)` judges each conflict's subject.
async fn teams_race_for_hosts(
    host_of: impl Fn(usize, usize) -> String,
    check_what: impl Fn(usize, usize, &Entry, &str),
) {
    for round in 0..ROUNDS {
        let reg = Arc::new(registry().await);
        let racers = (0..RACERS)
            .map(|i| entry(&format!("team{i}"), "api", &host_of(round, i), &["/api"]))
            .collect();
        let results = race(&reg, racers).await;
        let (winners, holders) = winners_and_holders(
            round,
            results,
            |e| e.team.clone(),
            |i, e, what| check_what(round, i, e, what),
        );
        assert_one_team_holds_it(&reg, round, &winners, &holders).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_team_wins_a_host_and_every_loser_names_it() {
    teams_race_for_hosts(
        |round, _| format!("contested{round}"),
        |round, _, _, what| {
            assert_eq!(what, format!("host contested{round}.api.example.com"));
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_service_wins_a_path_and_every_loser_names_it() {
    for round in 0..ROUNDS {
        let reg = Arc::new(registry().await);
        let racers = (0..RACERS)
            .map(|i| entry("billing", &format!("svc{i}"), "invoices", &["/invoices"]))
            .collect();
        let results = race(&reg, racers).await;
        let (winners, holders) = winners_and_holders(
            round,
            results,
            |e| e.id(),
            |_, _, what| {
                assert!(
                    what.starts_with("path /invoices on invoices.api.example.com"),
                    "{what}"
                );
            },
        );
        assert_one_winner_named_by_every_loser(round, &winners, &holders);
        let snapshot = reg.list().await.expect("list");
        assert_eq!(
            snapshot
                .entries
                .iter()
                .map(|s| s.entry.id())
                .collect::<Vec<_>>(),
            winners
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_registration_on_a_shared_host_is_kept() {
    const SERVICES: usize = 12;
    let reg = Arc::new(registry().await);
    let racers = (0..SERVICES)
        .map(|i| {
            entry(
                "billing",
                &format!("svc{i}"),
                "shared",
                &[&format!("/svc{i}")],
            )
        })
        .collect();
    let mut acknowledged = Vec::new();
    for (e, result) in race(&reg, racers).await {
        match result {
            Ok(_) => acknowledged.push(e),
            // The first claims the host and the others may race it; none conflicts.
            Err(RegistryError::Retryable(_)) => {}
            Err(other) => panic!("{}: {other:?}", e.id()),
        }
    }
    assert!(!acknowledged.is_empty());
    let snapshot = reg.list().await.expect("list");
    for e in &acknowledged {
        assert!(
            snapshot.entries.iter().any(|s| s.entry == *e),
            "{} was acknowledged but is missing",
            e.id()
        );
    }
    assert_eq!(
        snapshot.entries.len(),
        acknowledged.len(),
        "nothing unacknowledged was written"
    );
    // Every acknowledged service holds its path guard; the host guard's version counts
    // ownership changes only (the one claim), its `claims` counter every commit.
    let rows = registry_support::rows(&reg).await;
    for e in &acknowledged {
        let guard = registry_support::pair(
            "HOST#shared.api.example.com",
            &format!("PATH#{}", e.routes[0].path),
        );
        assert!(rows.contains(&guard), "missing guard {guard:?}");
    }
    let host = registry_support::row(&reg, "HOST#shared.api.example.com", "HOST")
        .await
        .expect("host guard");
    let number = |name: &str| -> usize {
        host[name]
            .as_n()
            .expect("number")
            .parse()
            .expect("integer")
    };
    assert_eq!(number("version"), 1);
    assert_eq!(number("claims"), acknowledged.len());
}

/// The last service of a host leaving (which releases the host) races another service of the
/// team arriving on it. Whatever the order, no service is left on a host its team no longer
/// holds, and the host is released exactly when nothing is left on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_release_and_an_arrival_on_the_same_host_never_strand_a_service() {
    // One arrival: a second one could re-claim a host the first was stranded on and hide it.
    const ARRIVALS: usize = 1;
    const RELEASE_ROUNDS: usize = 40;
    for round in 0..RELEASE_ROUNDS {
        let reg = Arc::new(registry().await);
        let host = format!("leaving{round}");
        let fqdn = format!("HOST#{host}.api.example.com");
        reg.register(&entry("billing", "last", &host, &["/last"]))
            .await
            .expect("the last service");
        let mut tasks = Vec::new();
        {
            // Swept across the rounds so the release reads before some arrival commits and
            // commits after it, whatever the machine's speed.
            let reg = reg.clone();
            let delay = std::time::Duration::from_millis(2 * round as u64);
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                reg.deregister("billing/last").await.map(|_| ())
            }));
        }
        for i in 0..ARRIVALS {
            let reg = reg.clone();
            let e = entry("billing", &format!("new{i}"), &host, &[&format!("/new{i}")]);
            tasks.push(tokio::spawn(async move { reg.register(&e).await.map(|_| ()) }));
        }
        for task in tasks {
            match task.await.expect("task") {
                Ok(()) | Err(RegistryError::Retryable(_)) => {}
                Err(other) => panic!("round {round}: {other:?}"),
            }
        }
        let entries = reg.list().await.expect("list").entries;
        let on_host: Vec<_> = entries.iter().filter(|s| s.entry.host == host).collect();
        let guard = registry_support::row(&reg, &fqdn, "HOST")
            .await
            .expect("host guard");
        let team = guard.get("team").and_then(|t| t.as_s().ok()).cloned();
        let rows = registry_support::rows(&reg).await;
        if on_host.is_empty() {
            assert_eq!(team, None, "round {round}: nothing left, host still held");
        } else {
            assert_eq!(
                team.as_deref(),
                Some("billing"),
                "round {round}: {} services on a released host",
                on_host.len()
            );
        }
        for s in &on_host {
            let path = registry_support::pair(&fqdn, &format!("PATH#{}", s.entry.routes[0].path));
            assert!(rows.contains(&path), "round {round}: {} lost its guard", s.entry.id());
        }
    }
}

/// Nested prefixes of one team's services coexist; the same prefix (spelled with or without a
/// trailing `/`, so under two guard keys) has one holder. The racers claim a chain of nested
/// prefixes, two racers per prefix: only the host guard's claim counter of their first segment
/// (`seg:n`) stops the two of one prefix committing together. At every depth at most one wins,
/// its rival names it, and the winners of different depths are all registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nested_prefixes_all_commit_and_each_prefix_has_one_winner() {
    for round in 0..ROUNDS {
        let reg = Arc::new(registry().await);
        // The host guard exists before the race, so its creation cannot be what decides it.
        reg.register(&entry("billing", "anchor", "nested", &["/anchor"]))
            .await
            .expect("anchor");
        let depth = |i: usize| i / 2;
        let racers = (0..RACERS)
            .map(|i| {
                let slash = if i % 2 == 1 { "/" } else { "" };
                let path = format!("/n{}{slash}", "/s".repeat(depth(i)));
                entry("billing", &format!("svc{i}"), "nested", &[&path])
            })
            .collect();
        let mut winners: BTreeMap<usize, String> = BTreeMap::new();
        let mut losers: Vec<(usize, String)> = Vec::new();
        for (i, (_, result)) in race(&reg, racers).await.into_iter().enumerate() {
            match result {
                Ok(_) => {
                    let earlier = winners.insert(depth(i), format!("billing/svc{i}"));
                    assert!(earlier.is_none(), "round {round}: two winners at depth {}: {earlier:?} and svc{i}", depth(i));
                }
                Err(RegistryError::Conflict { holder, .. }) => losers.push((depth(i), holder)),
                // Racers that kept losing the counter race may run out of rounds.
                Err(RegistryError::Retryable(_)) => {}
                Err(other) => panic!("round {round}: racer {i} got {other:?}"),
            }
        }
        for (d, holder) in &losers {
            assert_eq!(winners.get(d), Some(holder), "round {round}: a loser at depth {d} names {holder}, winners {winners:?}");
        }
        assert!(winners.len() >= 2, "round {round}: nested prefixes commit side by side: {winners:?}");
        assert_eq!(
            reg.list().await.expect("list").entries.len(),
            1 + winners.len(),
            "the anchor and the winners"
        );
    }
}

/// Hosts inside hosts, raced: half the teams claim `a.nest{round}`, half `nest{round}`, all at
/// once. Exactly one team ends up holding anything in that tree, and every loser names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_team_wins_a_host_or_its_subdomain_and_every_loser_names_it() {
    teams_race_for_hosts(
        |round, i| {
            let outer = format!("nest{round}");
            if i % 2 == 0 {
                format!("a.{outer}")
            } else {
                outer
            }
        },
        |round, i, e, what| {
            let fqdn = format!("{}.api.example.com", e.host);
            assert!(
                what.starts_with("host ") && what.contains(&fqdn)
                    || what.contains(&format!("nest{round}.api.example.com")),
                "round {round}: racer {i} on {fqdn}: {what}"
            );
        },
    )
    .await;
}

/// Two teams that each hold a sibling (`a.x`, `b.x`) both block a third team from `x`, and the
/// enclosing host's record of what lies inside it survives their races.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn siblings_race_and_both_keep_the_enclosing_host_closed() {
    let reg = Arc::new(registry().await);
    let racers = (0..RACERS)
        .map(|i| {
            let host = if i % 2 == 0 { "a.x" } else { "b.x" };
            entry(&format!("team{i}"), "api", host, &["/api"])
        })
        .collect();
    let results = race(&reg, racers).await;
    let winners: Vec<&str> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(e, _)| e.host.as_str())
        .collect();
    let mut sorted = winners.clone();
    sorted.sort();
    assert_eq!(sorted, ["a.x", "b.x"], "one winner per sibling host");
    let (what, _) = holder(reg.register(&entry("outsider", "api", "x", &["/api"])).await);
    assert!(
        what.ends_with("(inside x.api.example.com)"),
        "x encloses both: {what}"
    );
}

/// Teams, each on a host of its own, race for one backend nobody holds yet: one team holds it,
/// every loser is told that team holds it, and only the winner's entry was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_team_wins_a_new_backend_and_every_loser_names_it() {
    const BACKEND: &str = "https://contested.internal.example:8443";
    for round in 0..ROUNDS {
        let reg = Arc::new(registry().await);
        let racers = (0..RACERS)
            .map(|i| {
                let team = format!("team{i}");
                Entry {
                    backend: BACKEND.into(),
                    ..entry(&team, "api", &team, &["/api"])
                }
            })
            .collect();
        let results = race(&reg, racers).await;
        let (winners, holders) = winners_and_holders(
            round,
            results,
            |e| e.team.clone(),
            |_, _, what| assert_eq!(what, "backend contested.internal.example:8443"),
        );
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        assert_eq!(holders.len(), RACERS - 1, "round {round}");
        let named = format!(
            "team {} (operators can share it: gatewayctl backend share contested.internal.example:8443 ",
            winners[0]
        );
        assert!(
            holders.iter().all(|h| h.starts_with(&named)),
            "round {round}: losers name {holders:?}, winner {winners:?}"
        );
        let snapshot = reg.list().await.expect("list");
        assert_eq!(snapshot.entries.len(), 1, "round {round}");
        let claim = reg
            .backend_claims()
            .claim("contested.internal.example:8443")
            .await
            .expect("read")
            .expect("claimed");
        assert_eq!(claim.team, winners[0]);
        assert_eq!(
            claim.users.into_iter().collect::<Vec<_>>(),
            [format!("{}/api", winners[0])]
        );
    }
}
