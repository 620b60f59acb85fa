//! Every document a file in the repository cites exists in the repository, and every section it
//! cites (`docs/design.md#registry-table`) is a heading of that document. A comment that points a
//! maintainer at a contract must point somewhere they can read.
//!
//! A citation is a path ending in `.md`, optionally followed by `#anchor` or by a quoted heading
//! (`docs/design.md, "Registry table"`), resolved against the citing file's directory and then the
//! repository root. In Markdown files, links to `#anchor` in the same file are checked too. Anchors are headings as GitHub spells them (lowercase,
//! spaces as `-`, punctuation dropped, `-1`, `-2` for repeats). URLs and build outputs under
//! `target/` are not citations.

use crate::repo_files;

use repo_files::{files_under, repo_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Reports the benches and tests write at run time (under `target/`), named bare in the code that
/// writes them.
const GENERATED: &[&str] = &[
    "bench-render.md",
    "propagation.md",
    "bench-quarantine.md",
    "bench-envelope.md",
    "bench-bundle-wire.md",
    "bench-register.md",
    "bench.md",
];

/// One document reference found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Citation {
    line: usize,
    /// The path as written; empty for a same-file `#anchor` link.
    path: String,
    anchor: Option<String>,
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '#')
}

/// Every `….md[#anchor]` in `text`, and in Markdown also every `](#anchor)` link.
fn citations_in(text: &str, markdown: bool) -> Vec<Citation> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut k = 0;
        while k < chars.len() {
            if !is_path_char(chars[k].1) {
                k += 1;
                continue;
            }
            let start = chars[k].0;
            while k < chars.len() && is_path_char(chars[k].1) {
                k += 1;
            }
            let end = chars.get(k).map_or(line.len(), |(at, _)| *at);
            let token = &line[start..end];
            let before = &line[..start];
            if let Some(mut c) = citation(token, before) {
                if c.anchor.is_none() && token.ends_with(".md") {
                    c.anchor = quoted_heading(&line[end..]).map(|h| slug(&h));
                }
                found.push(Citation { line: i + 1, ..c });
            }
        }
        if markdown {
            let mut rest = line;
            while let Some(at) = rest.find("](#") {
                let after = &rest[at + 3..];
                let anchor: String = after.chars().take_while(|c| *c != ')').collect();
                found.push(Citation {
                    line: i + 1,
                    path: String::new(),
                    anchor: Some(anchor),
                });
                rest = after;
            }
        }
    }
    found
}

/// The citation in one run of path characters, if it is one.
fn citation(token: &str, before: &str) -> Option<Citation> {
    let md = token.find(".md")?;
    let (path, rest) = token.split_at(md + 3);
    // `.mdx`, `.md5`: another extension.
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let path = path.trim_start_matches("./");
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == ".md" || before.ends_with(':') || before.ends_with('*') {
        // `*.md`, or a URL (`https://host/x/README.md`).
        return None;
    }
    if path.starts_with("target/") || GENERATED.contains(&path) {
        return None;
    }
    let anchor = rest
        .strip_prefix('#')
        .map(|a| a.trim_end_matches(['.', ',']).to_string())
        .filter(|a| !a.is_empty());
    Some(Citation {
        line: 0,
        path: path.to_string(),
        anchor,
    })
}

/// A heading named right after a document path: `, "Registry table"` or ` "Registry table"`.
fn quoted_heading(after: &str) -> Option<String> {
    let rest = after.strip_prefix(',').unwrap_or(after).strip_prefix(' ')?;
    let inner = rest.strip_prefix('"')?;
    let heading = &inner[..inner.find('"')?];
    (!heading.trim().is_empty()).then(|| heading.to_string())
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown document's headings (outside code fences).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// Every broken citation under `root`, as `file:line: why`.
fn broken_citations(root: &Path) -> (usize, Vec<String>) {
    let files = files_under(root);
    let mut checked = 0;
    let mut broken = Vec::new();
    let mut anchor_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        // Binary and non-UTF-8 files cite nothing.
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let markdown = file.extension().is_some_and(|e| e == "md");
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        let dir = file.parent().unwrap_or(root);
        for c in citations_in(&text, markdown) {
            checked += 1;
            let target = if c.path.is_empty() {
                Some(file.clone())
            } else {
                [dir.join(&c.path), root.join(&c.path)]
                    .into_iter()
                    .find(|p| p.is_file())
            };
            let Some(target) = target else {
                broken.push(format!(
                    "{shown}:{}: cites {}, which is not in the repository",
                    c.line, c.path
                ));
                continue;
            };
            let Some(anchor) = &c.anchor else { continue };
            let known = anchor_cache.entry(target.clone()).or_insert_with(|| {
                anchors(&std::fs::read_to_string(&target).unwrap_or_default())
            });
            if !known.contains(anchor) {
                let doc = if c.path.is_empty() { &shown } else { &c.path };
                broken.push(format!(
                    "{shown}:{}: cites {doc}#{anchor}, but {doc} has no heading with that anchor",
                    c.line
                ));
            }
        }
    }
    (checked, broken)
}

#[test]
fn every_cited_document_and_section_exists() {
    let root = repo_root();
    assert!(
        root.join("docs/design.md").is_file(),
        "docs/design.md is missing"
    );
    let (checked, broken) = broken_citations(root);
    assert!(
        checked > 20,
        "found only {checked} citations under {}",
        root.display()
    );
    assert!(
        broken.is_empty(),
        "{} broken document citation(s):\n{}\ncite a document in the repository (docs/design.md and one of its headings)",
        broken.len(),
        broken.join("\n")
    );
    eprintln!("{checked} document citations, all found");
}

#[test]
fn design_document_has_the_sections_code_relies_on() {
    let design = std::fs::read_to_string(repo_root().join("docs/design.md")).expect("readable");
    let known = anchors(&design);
    for section in [
        "registration-entry",
        "registry-table",
        "bundle-format-and-hash",
        "bucket-layout-and-metadata",
        "delivery",
        "metrics-and-alarms",
        "settings",
        "exit-codes",
        "trust-boundaries",
        "failure-modes",
    ] {
        assert!(known.contains(section), "docs/design.md#{section} missing");
    }
}

#[test]
fn a_missing_document_or_heading_is_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    // Names assembled at run time so that this file cites no missing document itself.
    let guide = format!("docs/{}.md", "guide");
    let gone = format!("{}.md", "DESIGN");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::write(
        root.join(&guide),
        "# Guide\n\n## Registry table\n\n```\n## Not a heading\n```\n\n## Registry table\n\nSee [the table](#registry-table) and [gone](#gone).\n",
    )
    .expect("write");
    std::fs::write(
        root.join("lib.rs"),
        format!(
            "//! rules of {gone}, \"Registry table\"\n// see {guide}#registry-table-1\n// see {guide}#not-a-heading\n// https://example.com/{gone} is a URL\n// ({guide}, \"Registry table\") and ({guide}, \"Trust boundaries\")\n"
        ),
    )
    .expect("write");
    let (checked, broken) = broken_citations(root);
    assert_eq!(checked, 7, "{broken:?}");
    assert_eq!(
        broken,
        [
            format!("{guide}:11: cites {guide}#gone, but {guide} has no heading with that anchor"),
            format!("lib.rs:1: cites {gone}, which is not in the repository"),
            format!("lib.rs:3: cites {guide}#not-a-heading, but {guide} has no heading with that anchor"),
            format!("lib.rs:5: cites {guide}#trust-boundaries, but {guide} has no heading with that anchor"),
        ]
    );
}

#[test]
fn anchors_follow_github() {
    let known = anchors("# Design and contracts\n## Kill switch (three levels)\n### `gatewayctl`\n## Who may change an entry?\n## Kill switch (three levels)\n#not a heading\n");
    let expected: BTreeSet<String> = [
        "design-and-contracts",
        "kill-switch-three-levels",
        "gatewayctl",
        "who-may-change-an-entry",
        "kill-switch-three-levels-1",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(known, expected);
}

#[test]
fn citations_are_found_in_prose_code_and_links() {
    let md = format!("{}.md", "design");
    let text = format!(
        "see docs/{md}#registry-table.\n[x]({md}#delivery) and [y](#failure-modes)\n`*.md` target/bench.md ./README.md\n(docs/{md}, \"Trust boundaries\") and docs/{md} \"Kill switch\"."
    );
    let found = citations_in(&text, true);
    let got: Vec<(usize, &str, Option<&str>)> = found
        .iter()
        .map(|c| (c.line, c.path.as_str(), c.anchor.as_deref()))
        .collect();
    let design = format!("docs/{md}");
    assert_eq!(
        got,
        [
            (1, design.as_str(), Some("registry-table")),
            (2, md.as_str(), Some("delivery")),
            (2, "", Some("failure-modes")),
            (3, "README.md", None),
            (4, design.as_str(), Some("trust-boundaries")),
            (4, design.as_str(), Some("kill-switch")),
        ]
    );
}
