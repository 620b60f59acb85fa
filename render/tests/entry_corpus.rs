//! The differential corpus that holds the TypeScript copy of the registration checks
//! (`infra/lib/entry-checks.ts`, run by `ExposeOnGateway` at synth) to these Rust checks on every
//! field path and every message (docs/design.md#registration-entry).
//!
//! Every file of `corpus/good` and `corpus/bad` that is a JSON document is a seed. Each seed is
//! mutated by walking its JSON, whatever its fields are: every value is replaced by hostile values
//! (wrong types, null, empty, long, control and non-ASCII characters, CR-LF, negative, zero, huge
//! and fractional numbers, values near each bound, a sibling's value), keys are deleted and
//! unknown ones added, array items dropped, repeated and multiplied. A new entry field is covered
//! as soon as a good or bad corpus file uses it. The mutations are deterministic (a fixed-seed
//! generator picks the sample), so the same checks always write the same file.
//!
//! Each case records the exact text the checks receive and, for each settings profile, every
//! problem `check_entry_bytes` reports, in order, as `[field, reason]`. The text is what the
//! construct sends: `JSON.stringify` of the entry (compact, its number spelling and key order),
//! so `JSON.stringify(JSON.parse(input)) === input` holds for every case.
//!
//! `infra/test/entry-corpus.json` is committed; this test fails when it differs from what the
//! checks say now. `UPDATE_ENTRY_CORPUS=1` rewrites it, and `infra/test/entry-corpus.test.ts`
//! then requires the TypeScript checks to agree with every case.

use gateway_render::check::{check_entry_bytes, Policy};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Cases picked at random from each good seed, on top of the ones every (field, mutation) pair
/// gets: single mutations, and two mutations at once. Fixed per seed, so a new corpus file adds
/// its own cases and leaves the others' alone.
const GOOD_SINGLES: usize = 40;
const GOOD_DOUBLES: usize = 20;
/// The same from each bad seed (its mutations mostly stay rejected).
const BAD_SINGLES: usize = 4;
const BAD_DOUBLES: usize = 2;
/// Fixed generator seed: change it and the whole file changes.
const RNG_SEED: u64 = 0x5eed_0016_c0de_cafe;
/// Stand for lone UTF-16 surrogates (a leading and a trailing one), which a JavaScript string may
/// hold and a Rust string cannot: `js_text` writes them as `JSON.stringify` does, `\ud800` and
/// `\udc00`. Never next to each other (that would be a pair).
const LONE_SURROGATE: char = '\u{10fffe}';
const LONE_TRAILING: char = '\u{10fffd}';
/// Longest input a randomly picked case may have (the file stays a few MB); the cases every
/// (field, mutation) pair gets are kept whatever their size.
const MAX_SAMPLED_INPUT: usize = 4096;

struct Profile {
    name: &'static str,
    base_domain: &'static str,
    allow_loopback_backends: bool,
}

/// The settings the checks are run with. The construct knows the base domain only when the team
/// gives it (`baseDomain`; absent is `""`) and mirrors `GATEWAY_ALLOW_LOOPBACK_BACKENDS`.
const PROFILES: [Profile; 3] = [
    Profile {
        name: "default",
        base_domain: "api.example.com",
        allow_loopback_backends: false,
    },
    Profile {
        name: "local",
        base_domain: "api.example.com",
        allow_loopback_backends: true,
    },
    Profile {
        name: "no-base-domain",
        base_domain: "",
        allow_loopback_backends: false,
    },
];

fn render_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_file() -> PathBuf {
    render_dir().join("../infra/test/entry-corpus.json")
}

/// The corpus as the checks write it now (generated once per test run).
fn generated() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(generate)
}

#[test]
fn committed_entry_corpus_matches_the_rust_checks() {
    let fresh = generated();
    let path = corpus_file();
    if std::env::var("UPDATE_ENTRY_CORPUS").is_ok_and(|v| v == "1") {
        fs::write(&path, fresh).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let committed = fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let old: BTreeMap<&str, &str> = case_lines(&committed).collect();
        let new: Vec<(&str, &str)> = case_lines(fresh).collect();
        let first = new
            .iter()
            .find(|(id, line)| old.get(id) != Some(line))
            .map_or(
                "(cases removed or the header changed)".to_string(),
                |(id, line)| {
                    let was = old
                        .get(id)
                        .map_or("(absent)".to_string(), |l| l.to_string());
                    format!("now: {line}\nwas: {was}")
                },
            );
        panic!(
            "{} is not what the Rust checks say now ({} cases committed, {} generated).\n\
             First new or changed case:\n{first}\n\
             Regenerate it with `UPDATE_ENTRY_CORPUS=1 cargo test -p gateway-render --test entry_corpus`, \
             then make infra/lib/entry-checks.ts agree (`cd infra && npx jest entry-corpus`).",
            path.display(),
            old.len(),
            new.len()
        );
    }
}

#[test]
fn the_corpus_is_large_and_covers_both_verdicts() {
    let cases: Vec<Value> = case_lines(generated())
        .map(|(_, line)| serde_json::from_str(line.trim_end_matches(',')).expect("case line"))
        .collect();
    assert!(cases.len() >= 3000, "only {} cases", cases.len());
    let accepted = cases
        .iter()
        .filter(|c| c["problems"].as_array().is_some_and(Vec::is_empty))
        .count();
    assert!(accepted >= 200, "only {accepted} accepted cases");
    assert!(cases.len() - accepted >= 2000, "too few rejected cases");
    let differing = cases.iter().filter(|c| c.get("profiles").is_some()).count();
    assert!(
        differing >= 50,
        "only {differing} cases differ between profiles"
    );
    // Every field path a seed has is mutated somewhere.
    let fields: BTreeSet<String> = cases
        .iter()
        .flat_map(|c| c["problems"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p[0].as_str().map(pattern_of))
        .collect();
    for f in [
        "team",
        "service",
        "host",
        "backend",
        "routes",
        "routes[]",
        "routes[].path",
        "routes[].methods",
        "routes[].methods[]",
        "routes[].limits",
        "routes[].limits[]",
        "routes[].limits[].per",
        "routes[].limits[].header",
        "routes[].limits[].requests",
        "routes[].limits[].every",
        "routes[].limits[].burst",
        "entry",
    ] {
        assert!(fields.contains(f), "no case rejects {f}");
    }
}

/// `(id, line)` of each case line in the file.
fn case_lines(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter(|l| l.starts_with("{\"id\":")).map(|l| {
        let id = l
            .split("\",\"input\":")
            .next()
            .unwrap_or(l)
            .trim_start_matches("{\"id\":\"");
        (id, l)
    })
}

/// `routes[2].limits[0].every` -> `routes[].limits[].every`.
fn pattern_of(field: &str) -> String {
    let mut out = String::new();
    let mut in_index = false;
    for c in field.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            c if in_index && c.is_ascii_digit() => {}
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Generation

#[derive(Serialize)]
struct Case<'a> {
    id: &'a str,
    input: &'a str,
    problems: &'a [(String, String)],
    /// Profiles whose problems differ from the default profile's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    profiles: BTreeMap<&'static str, Vec<(String, String)>>,
}

fn generate() -> String {
    let mut seeds = seeds();
    let mut chosen: Vec<(String, Value)> = Vec::new();
    // Smallest seeds first: the first seed with a mutation of a field keeps it, and a small
    // document keeps the file small.
    seeds.sort_by_key(|(name, v)| (js_text(v).len(), name.clone()));
    let mut covered: BTreeSet<String> = BTreeSet::new();
    for (name, seed) in &seeds {
        chosen.push((format!("{name} as is"), seed.clone()));
        // One generator per seed: a new corpus file changes its own cases, not everyone's.
        let mut rng = Rng(RNG_SEED ^ fnv1a(name));
        let seed_len = js_text(seed).len();
        let mut rest: Vec<Mutation> = Vec::new();
        for m in mutations(seed) {
            // Every (field, mutation) pair is in the corpus once.
            let field = pattern_of(&m.path);
            let field = field.trim_start_matches("[]").trim_start_matches('.');
            if covered.insert(format!("{field} {}", m.label)) {
                chosen.push((format!("{name} {} {}", m.path, m.label), m.apply(seed)));
            } else if m.size_at_most(seed_len) <= MAX_SAMPLED_INPUT {
                rest.push(m);
            }
        }
        // Good seeds mutate into accepted and rejected entries; bad ones mostly stay rejected.
        let (singles, doubles) = if name.starts_with("good/") {
            (GOOD_SINGLES, GOOD_DOUBLES)
        } else {
            (BAD_SINGLES, BAD_DOUBLES)
        };
        // Two mutations at once: a second one at a random place of a random first one.
        for _ in 0..doubles.min(rest.len()) {
            let first = &rest[rng.below(rest.len())];
            let once = first.apply(seed);
            let once_len = js_text(&once).len();
            let mut places = Vec::new();
            paths(&once, &mut Vec::new(), &mut places);
            let place = &places[rng.below(places.len())];
            let mut second = Vec::new();
            mutations_at(&once, place, &mut second);
            second.retain(|m| m.size_at_most(once_len) <= MAX_SAMPLED_INPUT);
            if !second.is_empty() {
                let then = second.swap_remove(rng.below(second.len()));
                let id = format!(
                    "{name} {} {} + {} {}",
                    first.path, first.label, then.path, then.label
                );
                chosen.push((id, then.apply(&once)));
            }
        }
        // And a sample of the other single mutations.
        for _ in 0..singles.min(rest.len()) {
            let m = rest.swap_remove(rng.below(rest.len()));
            chosen.push((format!("{name} {} {}", m.path, m.label), m.apply(seed)));
        }
    }

    let policies: Vec<(&'static str, Policy)> = PROFILES
        .iter()
        .map(|p| {
            (
                p.name,
                Policy::new(p.base_domain, p.allow_loopback_backends),
            )
        })
        .collect();
    let mut seen_inputs: BTreeSet<String> = BTreeSet::new();
    let mut lines: Vec<String> = Vec::new();
    for (id, value) in chosen {
        let input = js_text(&value);
        if !seen_inputs.insert(input.clone()) {
            continue;
        }
        let verdicts: Vec<(&'static str, Vec<(String, String)>)> = policies
            .iter()
            .map(|(name, policy)| (*name, verdict(&input, policy)))
            .collect();
        let default = &verdicts[0].1;
        let profiles = verdicts[1..]
            .iter()
            .filter(|(_, v)| v != default)
            .map(|(n, v)| (*n, v.clone()))
            .collect();
        let case = Case {
            id: &id,
            input: &input,
            problems: default,
            profiles,
        };
        lines.push(serde_json::to_string(&case).expect("a case serialises"));
    }
    let profiles: Map<String, Value> = PROFILES
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                json!({"baseDomain": p.base_domain, "allowLoopbackBackends": p.allow_loopback_backends}),
            )
        })
        .collect();
    let mut out = String::new();
    out.push_str("{\"about\":\"Generated by render/tests/entry_corpus.rs from render/tests/corpus; do not edit. Regenerate: UPDATE_ENTRY_CORPUS=1 cargo test -p gateway-render --test entry_corpus\",\n");
    out.push_str(&format!(
        "\"profiles\":{},\n\"cases\":[\n",
        Value::Object(profiles)
    ));
    out.push_str(&lines.join(",\n"));
    out.push_str("\n]}\n");
    out
}

fn verdict(input: &str, policy: &Policy) -> Vec<(String, String)> {
    match check_entry_bytes(input.as_bytes(), policy) {
        Ok(_) => Vec::new(),
        Err(r) => r
            .problems
            .into_iter()
            .map(|p| (p.field, p.reason))
            .collect(),
    }
}

/// Every corpus file that is a JSON document, by `good/NAME` or `bad/NAME`, in name order.
fn seeds() -> Vec<(String, Value)> {
    let mut seeds = Vec::new();
    for dir in ["good", "bad"] {
        let mut files: Vec<PathBuf> = fs::read_dir(render_dir().join("tests/corpus").join(dir))
            .unwrap_or_else(|e| panic!("reading corpus/{dir}: {e}"))
            .map(|e| e.expect("corpus entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for path in files {
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                seeds.push((format!("{dir}/{}", file_name(&path)), value));
            }
        }
    }
    seeds
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Mutations

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// The field path the checks would print for `steps` (close enough for ids and coverage keys).
fn path_text(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Key(k)
                if k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                    && !k.is_empty() =>
            {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Key(k) => out.push_str(&format!(
                "[{}]",
                serde_json::to_string(k).unwrap_or_default()
            )),
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() {
        "(entry)".into()
    } else {
        out
    }
}

fn paths(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                prefix.push(Step::Key(k.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            // The first items and the last: further items are the same fields again.
            for (i, child) in items.iter().enumerate() {
                if i >= 3 && i + 1 != items.len() {
                    continue;
                }
                prefix.push(Step::Index(i));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// `steps` as a JSON pointer, so that `Value::pointer` and `Value::pointer_mut` walk them (the
/// steps come from the value's own shape, so a pointer's reading of a numeric key as an index
/// never arises).
fn pointer(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        out.push('/');
        match s {
            Step::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

fn get_mut<'v>(v: &'v mut Value, steps: &[Step]) -> Option<&'v mut Value> {
    v.pointer_mut(&pointer(steps))
}

fn get<'v>(v: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    v.pointer(&pointer(steps))
}

/// Values any field may be replaced by: every JSON type, and the values near each bound.
fn hostile_values() -> Vec<(&'static str, Value)> {
    vec![
        ("null", Value::Null),
        ("true", json!(true)),
        ("false", json!(false)),
        ("0", json!(0)),
        ("-1", json!(-1)),
        ("1", json!(1)),
        ("1.5", json!(1.5)),
        ("-0.5", json!(-0.5)),
        ("1e-7", json!(1e-7)),
        ("0.000001", json!(0.000001)),
        ("1e21", json!(1e21)),
        ("1e300", json!(1e300)),
        ("2^32", json!(4_294_967_296u64)),
        ("2^53", json!(9_007_199_254_740_992u64)),
        ("u64 max", json!(u64::MAX)),
        ("1e19", json!(10_000_000_000_000_000_000u64)),
        ("i64 min", json!(i64::MIN)),
        ("1e9", json!(1_000_000_000)),
        ("1e9+1", json!(1_000_000_001)),
        ("1e6", json!(1_000_000)),
        ("1e6+1", json!(1_000_001)),
        ("123456.789", json!(123456.789)),
        // Where JavaScript and serde_json switch between plain and exponent spellings.
        ("1e15+0.5", json!(1_000_000_000_000_000.5)),
        ("1e20", json!(1e20)),
        ("1.2345678901234568e20", json!(1.234_567_890_123_456_8e20)),
        ("0.00001", json!(0.00001)),
        ("0.30000000000000004", json!(0.1 + 0.2)),
        ("5e-324", json!(5e-324)),
        ("f64 max", json!(f64::MAX)),
        ("empty string", json!("")),
        ("space", json!(" ")),
        ("a", json!("a")),
        ("A", json!("A")),
        ("nul", json!("\u{0}")),
        ("crlf", json!("\r\n")),
        ("line injection", json!("x\nteam: ok")),
        ("e-acute", json!("é")),
        ("emoji", json!("😀")),
        ("rtl override", json!("\u{202e}abc")),
        ("nbsp", json!("a\u{a0}b")),
        ("next line", json!("a\u{85}b")),
        ("bom char", json!("a\u{feff}b")),
        ("lone surrogate", json!(format!("a{LONE_SURROGATE}b"))),
        ("lone surrogate only", json!(LONE_SURROGATE.to_string())),
        (
            "lone trailing surrogate",
            json!(format!("a{LONE_TRAILING}")),
        ),
        (
            "lone surrogate, newline",
            json!(format!("{LONE_SURROGATE}\n")),
        ),
        (
            "lone surrogate, control",
            json!(format!("{LONE_SURROGATE}\u{1}")),
        ),
        (
            "two lone surrogates",
            json!(format!("{LONE_SURROGATE}{LONE_SURROGATE}")),
        ),
        (
            "lone surrogate deep under long keys",
            json!({ "k".repeat(70): { "k".repeat(70): LONE_SURROGATE.to_string() } }),
        ),
        (
            "lone surrogate, e-acute",
            json!(format!("{LONE_SURROGATE}é")),
        ),
        ("line separator", json!("a\u{2028}b")),
        ("del", json!("a\u{7f}b")),
        ("c1 control", json!("a\u{9b}b")),
        ("quote", json!("a\"b")),
        ("backslash", json!("a\\b")),
        ("string 63", json!("a".repeat(63))),
        ("string 64", json!("a".repeat(64))),
        ("string 200", json!("b".repeat(200))),
        ("number string", json!("10")),
        ("empty array", json!([])),
        ("empty object", json!({})),
        ("array of null", json!([null])),
        ("array of string", json!(["GET"])),
        ("object with unknown key", json!({"x": 1})),
    ]
}

/// Changes of a string that keep most of it: case, padding to bounds, characters at each end.
fn string_variants(s: &str) -> Vec<(String, String)> {
    let mut out = vec![
        ("upper".to_string(), s.to_uppercase()),
        ("first upper".to_string(), {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        }),
        ("lower".to_string(), s.to_lowercase()),
        ("doubled".to_string(), format!("{s}{s}")),
        ("without last char".to_string(), {
            let mut c = s.chars();
            c.next_back();
            c.as_str().to_string()
        }),
        (
            "without first char".to_string(),
            s.chars().skip(1).collect(),
        ),
        (
            "trimmed of s".to_string(),
            s.trim_end_matches('s').to_string(),
        ),
        ("plus s".to_string(), format!("{s}s")),
    ];
    for n in [62, 63, 64, 127, 128, 129, 252, 253, 254, 1023, 1024, 1025] {
        if s.chars().count() < n {
            let pad = n - s.chars().count();
            out.push((format!("padded to {n}"), format!("{s}{}", "a".repeat(pad))));
        }
    }
    for add in [
        "-",
        ".",
        "*",
        " ",
        "\t",
        "\n",
        "\r\n",
        "/",
        "%",
        "%2f",
        "%2E",
        "%41",
        "%+1",
        "?",
        "#",
        "@",
        ":",
        ":0",
        ":8080",
        ":15001",
        ":65536",
        "[",
        "]",
        "\\",
        "é",
        "\u{0}",
        ";",
        "..",
        "/..",
        "/./",
        "//",
        "_",
        "A",
        "0",
        "x-envoy-",
        ".nip.io",
        ".api.example.com",
        ":14999",
        ":15000",
        ":15019",
        ":15020",
        ".localhost",
        ".lvh.me",
        ".vcap.me",
        ".localho.st",
        ".localhost.direct",
        "%7f",
        "%7F",
        "\u{85}",
        "\u{feff}",
        "\u{2028}",
    ] {
        out.push((format!("+ {}", short(add)), format!("{s}{add}")));
    }
    let middle = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    for add in [
        "::", ":", ".", "%", "g", "-", "@", "/", "]", "[", "%25", "1.2.3.4",
    ] {
        out.push((
            format!("{} in the middle", short(add)),
            format!("{}{add}{}", &s[..middle], &s[middle..]),
        ));
    }
    for add in ["-", ".", "*", " ", "/", "0", "A", "x-", "é", "\u{0}", "*."] {
        out.push((format!("{} +", short(add)), format!("{add}{s}")));
    }
    out
}

fn short(s: &str) -> String {
    s.escape_debug().to_string()
}

/// Keys no entry object knows, some of them near known ones.
fn unknown_keys(map: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        "extra",
        "",
        "a b",
        "0",
        "12",
        "__proto__",
        "constructor",
        "toString",
        "hasOwnProperty",
        "x\ny",
        "é",
        "k\u{10fffe}",
        "Team",
        "PATH",
        "limitz",
        "brust",
        "teem",
    ]
    .iter()
    .map(|k| (format!("add key {}", short(k)), (*k).to_string()))
    .collect();
    out.push(("add key of 70".into(), "k".repeat(70)));
    out.push(("add key of 200".into(), "k".repeat(200)));
    if let Some(first) = map.keys().next() {
        out.push(("add first key uppercased".into(), first.to_uppercase()));
        out.push(("add first key plus s".into(), format!("{first}s")));
        let mut c = first.chars();
        c.next_back();
        out.push(("add first key minus last".into(), c.as_str().to_string()));
    }
    out.retain(|(_, k)| !map.contains_key(k));
    out
}

/// One change to a document: the value at `steps` replaced, or its key deleted.
struct Mutation {
    path: String,
    steps: Vec<Step>,
    label: String,
    /// `None`: delete the key.
    with: Option<Value>,
}

impl Mutation {
    fn apply(&self, v: &Value) -> Value {
        let mut m = v.clone();
        match (&self.with, self.steps.split_last()) {
            (Some(with), _) => {
                if let Some(slot) = get_mut(&mut m, &self.steps) {
                    *slot = with.clone();
                }
            }
            (None, Some((Step::Key(k), parent))) => {
                if let Some(Value::Object(pm)) = get_mut(&mut m, parent) {
                    pm.remove(k);
                }
            }
            (None, _) => {}
        }
        m
    }

    /// A bound on the mutated document's length, without building it.
    fn size_at_most(&self, document_len: usize) -> usize {
        document_len + self.with.as_ref().map_or(0, |w| js_text(w).len())
    }
}

/// Every mutation of `v`.
fn mutations(v: &Value) -> Vec<Mutation> {
    let mut all_paths = Vec::new();
    paths(v, &mut Vec::new(), &mut all_paths);
    let mut out = Vec::new();
    for steps in &all_paths {
        mutations_at(v, steps, &mut out);
    }
    out
}

/// The mutations of the value at `steps`.
fn mutations_at(v: &Value, steps: &[Step], out: &mut Vec<Mutation>) {
    {
        let path = path_text(steps);
        let Some(here) = get(v, steps) else { return };
        let mut replace = |label: String, with: Value| {
            out.push(Mutation {
                path: path.clone(),
                steps: steps.to_vec(),
                label,
                with: Some(with),
            });
        };
        for (label, with) in hostile_values() {
            if &with != here {
                replace(format!("= {label}"), with);
            }
        }
        replace("wrapped in an array".into(), json!([here.clone()]));
        replace(
            "wrapped in an object".into(),
            json!({ "value": here.clone() }),
        );
        replace("as JSON text".into(), json!(here.to_string()));
        match here {
            Value::String(s) => {
                for (label, with) in string_variants(s) {
                    if &with != s {
                        replace(format!("string {label}"), json!(with));
                    }
                }
            }
            Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    for (label, with) in [
                        ("+1", json!(f + 1.0)),
                        ("-1", json!(f - 1.0)),
                        ("negated", json!(-f)),
                        ("x1000", json!(f * 1000.0)),
                        ("+0.5", json!(f + 0.5)),
                        ("as string", json!(n.to_string())),
                    ] {
                        replace(format!("number {label}"), with);
                    }
                }
            }
            Value::Array(items) => {
                replace("emptied".into(), json!([]));
                let mut rev = items.clone();
                rev.reverse();
                replace("reversed".into(), Value::Array(rev));
                for i in 0..items.len() {
                    let mut dropped = items.clone();
                    dropped.remove(i);
                    replace(format!("without item {i}"), Value::Array(dropped));
                    let mut twice = items.clone();
                    twice.insert(i + 1, items[i].clone());
                    replace(format!("item {i} repeated"), Value::Array(twice));
                }
                if !items.is_empty() {
                    for n in [8, 9, 45, 46, 64, 65] {
                        let cyclic: Vec<Value> = items.iter().cycle().take(n).cloned().collect();
                        replace(format!("grown to {n}"), Value::Array(cyclic));
                        let varied: Vec<Value> =
                            (0..n).map(|i| vary(&items[i % items.len()], i)).collect();
                        replace(
                            format!("grown to {n} with distinct paths"),
                            Value::Array(varied),
                        );
                    }
                }
            }
            Value::Object(map) => {
                for (label, key) in unknown_keys(map) {
                    let mut with = map.clone();
                    with.insert(key, json!("x"));
                    replace(label, Value::Object(with));
                }
                replace("emptied".into(), json!({}));
                // Two unknown keys whose order differs between JavaScript (array indices first)
                // and the checks (by code point).
                let mut two = map.clone();
                two.insert("9".into(), json!("x"));
                two.insert("!".into(), json!("x"));
                replace("add keys 9 and !".into(), Value::Object(two));
                if steps.is_empty() {
                    // Just past the size bound, whatever else the entry holds.
                    let mut with = map.clone();
                    with.insert("padding".into(), json!("p".repeat(64 * 1024)));
                    replace("padded past 64 KiB".into(), Value::Object(with.clone()));
                    // And to exactly the bound, and one byte past it.
                    with.insert("padding".into(), json!(""));
                    let overhead = js_text(&Value::Object(with.clone())).len();
                    for size in [64 * 1024, 64 * 1024 + 1usize] {
                        let pad = "p".repeat(size.saturating_sub(overhead));
                        with.insert("padding".into(), json!(pad));
                        replace(
                            format!("padded to {size} bytes"),
                            Value::Object(with.clone()),
                        );
                    }
                }
            }
            _ => {}
        }
        // A sibling's value, and deleting this value from its parent.
        if let Some((last, parent_steps)) = steps.split_last() {
            if let Some(parent) = get(v, parent_steps) {
                let siblings: Vec<(String, Value)> = match parent {
                    Value::Object(m) => m
                        .iter()
                        .filter(|(k, _)| !matches!(last, Step::Key(l) if l == *k))
                        .map(|(k, x)| (format!("= sibling {k}"), x.clone()))
                        .collect(),
                    Value::Array(a) => a
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !matches!(last, Step::Index(l) if l == i))
                        .map(|(i, x)| (format!("= item {i}"), x.clone()))
                        .take(3)
                        .collect(),
                    _ => Vec::new(),
                };
                for (label, with) in siblings {
                    replace(label, with);
                }
                if let Step::Key(_) = last {
                    out.push(Mutation {
                        path: path.clone(),
                        steps: steps.to_vec(),
                        label: "deleted".into(),
                        with: None,
                    });
                }
            }
        }
    }
}

/// A copy of an item whose path-like strings (starting with `/`) get a distinct last segment.
fn vary(v: &Value, i: usize) -> Value {
    match v {
        Value::String(s) if s.starts_with('/') => {
            let sep = if s.ends_with('/') { "" } else { "/" };
            json!(format!("{s}{sep}v{i}"))
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| vary(x, i)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), vary(x, i))).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// The text `JSON.stringify` writes for a value

/// Compact JSON as JavaScript's `JSON.stringify` writes it: numbers as JavaScript spells a
/// double, keys that are array indices first in numeric order (as a JavaScript object keeps them),
/// then the others in order.
fn js_text(v: &Value) -> String {
    let mut out = String::new();
    write_js(v, &mut out);
    out
}

fn write_js(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => write_js_string(s, out),
        Value::Array(items) => write_js_list(out, ('[', ']'), items, write_js),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| array_index(k).map_or((1, 0), |i| (0, i)));
            write_js_list(out, ('{', '}'), keys, |k, out| {
                write_js_string(k, out);
                out.push(':');
                write_js(&map[k.as_str()], out);
            });
        }
    }
}

/// `items` between `open` and `close`, comma-separated, each written by `write_item`.
fn write_js_list<T>(
    out: &mut String,
    (open, close): (char, char),
    items: impl IntoIterator<Item = T>,
    mut write_item: impl FnMut(T, &mut String),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_item(item, out);
    }
    out.push(close);
}

/// A key JavaScript treats as an array index (`"0"`, `"12"`, not `"012"`).
fn array_index(k: &str) -> Option<u64> {
    let canonical = k == "0" || (!k.starts_with('0') && !k.is_empty());
    if !canonical || !k.bytes().all(|b| b.is_ascii_digit()) || k.len() > 10 {
        return None;
    }
    k.parse::<u64>().ok().filter(|i| *i < u64::from(u32::MAX))
}

fn write_js_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            LONE_SURROGATE => out.push_str("\\ud800"),
            LONE_TRAILING => out.push_str("\\udc00"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `Number.prototype.toString` of a finite double (ECMA-262 Number::toString).
fn js_number(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` writes the shortest digits that read back as the same double, as JS does.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().expect("exponent") + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64: a fixed sequence, so the sample never changes between runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn js_numbers_are_spelled_as_javascript_spells_them() {
    for (f, js) in [
        (1.0, "1"),
        (-0.5, "-0.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (1.5e300, "1.5e+300"),
        (u64::MAX as f64, "18446744073709552000"),
        (123456.789, "123456.789"),
        (-1e-7, "-1e-7"),
    ] {
        assert_eq!(js_number(f), js, "{f}");
    }
    assert_eq!(
        js_text(&json!({"b": 1, "a": [true], "10": 0, "2": null})),
        r#"{"2":null,"10":0,"a":[true],"b":1}"#
    );
}
