//! Properties of the registration checks over generated input: nothing panics, every
//! rejection is well formed, and entries built only from valid parts are always accepted.

use gateway_render::check::{check_entry, check_entry_bytes, check_entry_value, Policy, Rejection};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn policy() -> Policy {
    Policy::new("api.example.com", false)
}

fn assert_well_formed(r: &Rejection) -> Result<(), TestCaseError> {
    prop_assert!(!r.problems.is_empty());
    for p in &r.problems {
        prop_assert!(!p.field.is_empty() && !p.reason.is_empty(), "{:?}", p);
        prop_assert!(
            !p.field.contains(['\n', '\r']) && !p.reason.contains(['\n', '\r']),
            "{:?}",
            p
        );
    }
    prop_assert_eq!(r.to_string().lines().count(), r.problems.len());
    Ok(())
}

/// Field names of every level, so generated objects reach deep into the walk.
const KEYS: [&str; 14] = [
    "team", "service", "host", "backend", "routes", "path", "methods", "limits", "per", "header",
    "requests", "every", "burst", "other",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![4 => prop::sample::select(&KEYS[..]).prop_map(String::from), 1 => any::<String>()]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "billing",
            "/",
            "/a",
            "/a/../b",
            "GET",
            "get",
            "minute",
            "fortnight",
            "client-ip",
            "header",
            "route",
            "x-api-key",
            "http://10.0.0.1",
            "http://169.254.169.254",
            "https://a.b:0",
            "http://[::1]",
            "*",
            "",
        ])
        .prop_map(|s| Value::String(s.into())),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

// ---- valid parts only ----

fn identifier() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9-]{0,61}[a-z0-9])?"
}

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?"
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec("[A-Za-z0-9_~-][A-Za-z0-9._~:@!$&'()*+,;=-]{0,12}", 0..5)
        .prop_map(|segments| format!("/{}", segments.join("/")))
        .prop_filter("dot segments are invalid", |p| {
            !p.split('/').any(|s| s == "." || s == "..")
        })
}

fn spells_an_address(host: &str) -> bool {
    let numeric = |l: &str| !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit());
    let labels: Vec<&str> = host.split('.').collect();
    labels.windows(4).any(|w| w.iter().all(|l| numeric(l)))
        || labels.iter().any(|l| {
            let tail = l.rsplit('-').next().unwrap_or(l);
            let dashed: Vec<&str> = l.rsplitn(5, '-').collect();
            l.contains("--")
                || (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()))
                || (dashed.len() >= 4 && dashed[..4].iter().all(|p| numeric(p)))
        })
}

fn backend() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        prop::collection::vec(label(), 1..4)
            .prop_map(|l| l.join("."))
            // A last label that is a number, decimal or 0x-hex ("0x" alone is zero), makes
            // a URL parser read the host as IPv4.
            .prop_filter("numeric last label reads as IPv4", |h| {
                !h.rsplit('.').next().is_some_and(|l| {
                    l.bytes().all(|b| b.is_ascii_digit())
                        || l.strip_prefix("0x")
                            .is_some_and(|x| x.bytes().all(|b| b.is_ascii_hexdigit()))
                })
            })
            // Names that spell an address (wildcard DNS: 0.0.0.0.a, x-0-0-0-0, ffffffff, --1)
            // are judged as that address; the valid-parts generator stays clear of them.
            .prop_filter("spells an address", |h| !spells_an_address(h)),
        (10u8..=10, any::<u8>(), any::<u8>(), 1u8..=254)
            .prop_map(|(a, b, c, d)| format!("{a}.{b}.{c}.{d}")),
        Just("[2001:db8::7]".to_string()),
    ];
    (
        prop::bool::ANY,
        host,
        // The proxy task's own ports are refused (PROXY_RESERVED_PORTS).
        prop::option::of((1u16..=65535).prop_filter("reserved port", |p| {
            !gateway_render::check::PROXY_RESERVED_PORTS.contains(p)
        })),
        prop::bool::ANY,
    )
        .prop_map(|(tls, host, port, slash)| {
            let scheme = if tls { "https" } else { "http" };
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            format!("{scheme}://{host}{port}{}", if slash { "/" } else { "" })
        })
}

fn limits() -> impl Strategy<Value = Vec<Value>> {
    let units = ["second", "minute", "hour", "day"];
    (
        prop::option::of(1u32..=1_000_000),
        prop::sample::subsequence(units.to_vec(), 0..=2),
        prop::sample::subsequence(units.to_vec(), 0..=2),
        prop::option::of(("x-[a-z0-9]{1,20}", prop::sample::select(units.to_vec()))),
        1u32..=1_000_000_000,
    )
        .prop_map(|(burst, ip_units, route_units, header, requests)| {
            let mut out: Vec<Value> = burst.map(|b| json!({"burst": b})).into_iter().collect();
            out.extend(
                ip_units
                    .iter()
                    .map(|u| json!({"per": "client-ip", "requests": requests, "every": u})),
            );
            out.extend(
                route_units
                    .iter()
                    .map(|u| json!({"per": "route", "requests": requests, "every": u})),
            );
            if let Some((h, u)) = header {
                out.push(json!({"per": "header", "header": h, "requests": requests, "every": u}));
            }
            out
        })
}

fn valid_entry() -> impl Strategy<Value = Value> {
    let methods = prop::option::of(prop::sample::subsequence(
        vec![
            "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
        ],
        1..=9,
    ));
    let route = (methods, limits());
    (
        identifier(),
        identifier(),
        prop::collection::vec(label(), 1..3).prop_map(|l| l.join(".")),
        backend(),
        prop::collection::btree_map(path(), route, 1..10),
    )
        .prop_map(|(team, service, host, backend, routes)| {
            // Distinct paths (the map's keys), so no two routes can collide.
            let routes: Vec<Value> = routes
                .into_iter()
                .map(|(path, (methods, limits))| {
                    let mut r = json!({"path": path, "limits": limits});
                    if let Some(mut m) = methods {
                        m.reverse();
                        r["methods"] = json!(m);
                    }
                    r
                })
                .collect();
            json!({"team": team, "service": service, "host": host, "backend": backend, "routes": routes})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        if let Err(r) = check_entry_bytes(&bytes, &policy()) {
            assert_well_formed(&r)?;
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,512}") {
        if let Err(r) = check_entry_bytes(text.as_bytes(), &policy()) {
            assert_well_formed(&r)?;
        }
    }

    #[test]
    fn arbitrary_json_values_never_panic(value in json_value()) {
        let direct = check_entry_value(&value, &policy());
        if let Err(r) = &direct {
            assert_well_formed(r)?;
        }
        // Bytes and value agree whenever the bytes are within the size limit.
        let bytes = serde_json::to_vec(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(check_entry_bytes(&bytes, &policy()).is_ok(), direct.is_ok());
    }

    #[test]
    fn mutated_design_example_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)
    ) {
        let mut bytes = include_bytes!("../corpus/good/design-example.json").to_vec();
        for (at, byte, op) in edits {
            let i = at.index(bytes.len().max(1));
            match op {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i.min(bytes.len()), byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => {}
            }
        }
        match check_entry_bytes(&bytes, &policy()) {
            Ok(entry) => prop_assert_eq!(check_entry(&entry, &policy()), Ok(())),
            Err(r) => assert_well_formed(&r)?,
        }
    }

    #[test]
    fn entries_of_valid_parts_are_accepted_and_canonical(value in valid_entry()) {
        let entry = match check_entry_value(&value, &policy()) {
            Ok(entry) => entry,
            Err(r) => return Err(TestCaseError::fail(format!("{value}\nrejected:\n{r}"))),
        };
        prop_assert_eq!(check_entry(&entry, &policy()), Ok(()));
        for route in &entry.routes {
            if let Some(m) = &route.methods {
                prop_assert!(m.windows(2).all(|w| w[0] < w[1]), "{:?}", m);
            }
        }
        let stored = serde_json::to_vec(&entry).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(check_entry_bytes(&stored, &policy()), Ok(entry.clone()));
        // What the checks accept, the renderer can render.
        let rendered = gateway_render::render(&[entry], &gateway_render::RenderConfig::new("api.example.com"));
        prop_assert!(rendered.is_ok(), "{}: {:?}", value, rendered.err());
    }
}
