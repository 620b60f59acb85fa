//! Hostile input to the entry-level traffic fields (`protocol`, `canary`, `health_check`):
//! whatever a team sends there, the checks do not panic, every rejection names a field under
//! the one that was wrong, one line per problem; and what they accept renders into a header
//! matcher that cannot carry a line break, weights that add up to 100, and clusters that never
//! rename the entry's own.

use gateway_render::check::{check_entry_value, Policy};
use gateway_render::{render, RenderConfig};
use proptest::prelude::*;
use serde_json::{json, Value};

fn policy() -> Policy {
    Policy::new("api.example.com", false)
}

fn base() -> Value {
    json!({"team": "t", "service": "s", "host": "h", "backend": "http://10.0.0.1:8080",
           "routes": [{"path": "/a", "methods": ["GET"]}, {"path": "/b"}]})
}

fn junk() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "x-canary",
            "host",
            "1s",
            "/healthz",
            "http://10.0.0.2",
            "grpc"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "backend", "weight", "header", "name", "value", "path", "interval", "other"
                ])
                .prop_map(String::from),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn anything_in_the_new_fields_is_judged_without_panicking(
        field in prop::sample::select(vec!["protocol", "canary", "health_check"]),
        value in junk(),
    ) {
        let mut doc = base();
        doc[field] = value;
        if let Err(r) = check_entry_value(&doc, &policy()) {
            prop_assert!(!r.problems.is_empty());
            for p in &r.problems {
                prop_assert!(p.field.starts_with(field), "{p} (field {field})");
                prop_assert!(!p.reason.contains(['\n', '\r']) && !p.field.contains(['\n', '\r']), "{p:?}");
            }
        }
    }

    #[test]
    fn an_accepted_cohort_header_renders_as_an_exact_single_line_match(
        name in prop_oneof![
            3 => "x-[a-z0-9-]{1,12}",
            1 => "[a-zA-Z0-9!#$%&'*+.^_`|~:\r\n -]{0,20}",
            1 => prop::sample::select(vec!["host", "x-envoy-a", "x-forwarded-host", "x-request-id", ":path"]).prop_map(String::from),
        ],
        value in prop_oneof![3 => "[ -~]{1,40}", 1 => any::<String>(), 1 => "[a-z]{1,5}\r\n[a-z: ]{1,10}"],
        weight in 0u32..=100,
    ) {
        let mut doc = base();
        doc["canary"] = json!({"backend": "http://10.0.0.2:8080", "weight": weight,
                               "header": {"name": name, "value": value}});
        let Ok(entry) = check_entry_value(&doc, &policy()) else { return Ok(()) };
        prop_assert!(!value.contains(['\r', '\n', '\0']) && !name.contains(['\r', '\n', ':']));
        prop_assert!(!name.starts_with("x-envoy-") && !name.starts_with("x-forwarded-") && name != "host");
        let rendered = render(&[entry], &RenderConfig::new("api.example.com")).expect("renders");
        let routes = &rendered.route_config["virtual_hosts"][0]["routes"];
        let mut cohort = 0;
        for r in routes.as_array().expect("routes") {
            let action = &r["route"];
            if r["name"].as_str().is_some_and(|n| n.ends_with("#canary")) {
                cohort += 1;
                prop_assert_eq!(&action["cluster"], "t.s.canary-first");
                let headers = r["match"]["headers"].as_array().expect("headers");
                prop_assert_eq!(headers.last().expect("cohort matcher"),
                    &json!({"name": name, "string_match": {"exact": value}}));
            } else if let Some(split) = action["weighted_clusters"]["clusters"].as_array() {
                let total: u64 = split.iter().filter_map(|c| c["weight"].as_u64()).sum();
                prop_assert_eq!(total, 100);
                prop_assert!(split.iter().all(|c| c["weight"].as_u64().is_some_and(|w| w > 0)));
            } else if action.is_object() {
                let expected = match weight { 100 => "t.s.canary-first", _ => "t.s.main-first" };
                prop_assert_eq!(&action["cluster"], expected);
            }
        }
        prop_assert_eq!(cohort, 2);
        let names: Vec<&str> = rendered.clusters.iter().filter_map(|c| c["name"].as_str()).collect();
        prop_assert_eq!(names, vec!["t.s", "t.s.canary", "t.s.main-first", "t.s.canary-first"]);
    }

    #[test]
    fn an_accepted_interval_is_within_the_operators_bounds(
        n in 0u64..1_000_000, unit in prop::sample::select(vec!["ms", "s", "m", "h", "", "S"]),
        min in 1u64..=300,
    ) {
        let mut policy = policy();
        policy.min_health_check_interval_ms = min * 1_000;
        let mut doc = base();
        doc["health_check"] = json!({"path": "/healthz", "interval": format!("{n}{unit}")});
        if let Ok(entry) = check_entry_value(&doc, &policy) {
            let ms = n * match unit { "ms" => 1, "s" => 1_000, "m" => 60_000, _ => unreachable!("{unit}") };
            prop_assert!(ms >= min * 1_000 && ms <= 300_000, "{ms}");
            let rendered = render(&[entry], &RenderConfig::new("api.example.com")).expect("renders");
            prop_assert!(rendered.clusters[0]["health_checks"][0]["interval"].is_string());
        }
    }
}
