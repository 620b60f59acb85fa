//! Skipping the render of an unchanged run (docs/design.md#skipping-an-unchanged-render).
//!
//! A render is a pure function of the entries it is given, the render configuration and the
//! renderer's own code. The render input digest covers all three (the code as a
//! [`BuildIdentity`]), plus every registered revision and the quarantine set. A run records the
//! digest and the hash its render gave (`STATE` / `RENDERED`); a later run whose digest is the
//! recorded one, whose recorded publish has that hash and whose live bundle is still that publish
//! ends `unchanged` without rendering. Anything else renders as before.

use super::quarantine::{Candidate, Quarantined};
use gateway_adapters::registry::{PublishedState, RenderRecord};
use gateway_adapters::store::BundleHead;
use gateway_render::RenderConfig;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;
use tracing::warn;

/// Which build of the renderer runs: a digest of the running executable
/// ([`BuildIdentity::running`]), or a name a test gives. Unknown means a render is never skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdentity(Option<String>);

impl BuildIdentity {
    /// The sha256 of the running executable, read once per process (a Lambda container pays it
    /// on its cold start only). Any change to the binary — the renderer, a dependency, the
    /// compiler — is a new identity, so a new image over an unchanged registry renders again.
    /// Unknown when the executable cannot be read: every run then renders.
    pub fn running() -> BuildIdentity {
        static RUNNING: OnceLock<Option<String>> = OnceLock::new();
        let digest = RUNNING.get_or_init(|| match executable_digest() {
            Ok(digest) => Some(digest),
            Err(e) => {
                warn!(error = %e, "cannot read the running executable; every run renders");
                None
            }
        });
        BuildIdentity(digest.clone())
    }

    /// A build named by the caller (tests stand for two builds with two names).
    pub fn named(name: impl Into<String>) -> BuildIdentity {
        BuildIdentity(Some(name.into()))
    }

    /// No identity: every run renders.
    pub fn unknown() -> BuildIdentity {
        BuildIdentity(None)
    }
}

/// sha256 of the executable this process runs. `/proc/self/exe` opens the running file itself,
/// even when a new one was put at its path (or it was deleted) since the process started;
/// elsewhere, the path the process was started from.
fn executable_digest() -> std::io::Result<String> {
    let mut file = match std::fs::File::open("/proc/self/exe") {
        Ok(f) => f,
        Err(_) => std::fs::File::open(std::env::current_exe()?)?,
    };
    let mut sha = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sha.update(&buf[..n]);
    }
    Ok(format!("exe:{:x}", sha.finalize()))
}

/// Every field of the render configuration by name: one added to it fails to compile here until
/// it is part of both digests.
fn render_config_fields(render: &RenderConfig, field: &mut dyn FnMut(&[u8])) {
    let RenderConfig {
        base_domain,
        upstream_ca_file,
        client_ipv6_prefix,
        max_websocket_seconds,
    } = render;
    field(base_domain.as_bytes());
    field(upstream_ca_file.as_bytes());
    field(&[*client_ipv6_prefix]);
    field(&max_websocket_seconds.to_le_bytes());
}

/// A digest of the build, every field of the render configuration and whatever `rest` adds, each
/// field length-prefixed so no two inputs read alike; `layout` names the layout. `None` when the
/// build is unknown.
fn keyed_digest(
    layout: &str,
    build: &BuildIdentity,
    render: &RenderConfig,
    rest: impl FnOnce(&mut dyn FnMut(&[u8])),
) -> Option<String> {
    let build = build.0.as_deref()?;
    let mut sha = Sha256::new();
    let mut field = |bytes: &[u8]| {
        sha.update((bytes.len() as u64).to_le_bytes());
        sha.update(bytes);
    };
    field(build.as_bytes());
    // Every field by name: one added to the render configuration fails to compile here until it
    // is part of the digest.
    render_config_fields(render, &mut field);
    rest(&mut field);
    Some(format!("{layout}:{:x}", sha.finalize()))
}

/// The render input digest of `cand` as it is about to be rendered; `None` when the build is
/// unknown. `v1:` names the layout.
pub(super) fn input_digest(
    build: &BuildIdentity,
    render: &RenderConfig,
    cand: &Candidate,
) -> Option<String> {
    keyed_digest("v1", build, render, |field| {
        let mut json = Vec::new();
        for (id, entry) in &cand.entries {
            json.clear();
            // An entry is plain data (strings, numbers, BTreeMaps): it always serialises.
            serde_json::to_writer(&mut json, entry).expect("an entry serialises");
            field(id.as_bytes());
            field(&json);
        }
        field(b"revisions");
        for (id, revision) in &cand.revisions {
            field(id.as_bytes());
            field(&revision.to_le_bytes());
        }
        field(b"quarantined");
        let quarantined: BTreeMap<&str, &Quarantined> = cand
            .quarantined
            .iter()
            .map(|q| (q.id.as_str(), q))
            .collect();
        for (id, q) in quarantined {
            field(id.as_bytes());
            field(q.stage.to_string().as_bytes());
            field(q.kept.as_str().as_bytes());
        }
    })
}

/// What a validation's verdict on one entry revision was given, as a digest: the build (which
/// pins the renderer and the Envoy release it validates with), the render configuration and the
/// entry as registered. `None` when the build is unknown: nothing is then remembered.
pub(super) fn verdict_key(
    build: &BuildIdentity,
    render: &RenderConfig,
    entry: &gateway_render::Entry,
) -> Option<String> {
    keyed_digest("verdict-v1", build, render, |field| {
        // An entry is plain data (strings, numbers, BTreeMaps): it always serialises.
        field(&serde_json::to_vec(entry).expect("an entry serialises"));
    })
}

/// The hash this run's render would give, when it is known without rendering: the recorded
/// render had this input, the recorded publish is that render, and the live bundle is still that
/// publish (so the drift guard has nothing to say and the run is `unchanged`).
pub(super) fn reusable_hash(
    input: Option<&str>,
    record: Option<&RenderRecord>,
    state: Option<&PublishedState>,
    live: Option<&BundleHead>,
) -> Option<String> {
    let (input, record, state, live) = (input?, record?, state?, live?);
    let same_render = record.input_digest == input;
    let published = record.hash == state.hash && live.hash.as_deref() == Some(state.hash.as_str());
    (same_render && published).then(|| state.hash.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::{Kept, Stage};
    use gateway_adapters::store::Writer;

    fn candidate() -> Candidate {
        let entry = gateway_render::Entry {
            rollout: None,
            serving: None,
            team: "billing".into(),
            service: "invoices".into(),
            host: "invoices".into(),
            backend: "http://127.0.0.1:9".into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: vec![gateway_render::Route {
                path: "/invoices".into(),
                ..Default::default()
            }],
        };
        let mut cand = Candidate::default();
        cand.entries.insert(entry.id(), entry);
        cand.revisions.insert("billing/invoices".into(), 1);
        cand
    }

    fn digest(build: &str, render: &RenderConfig, cand: &Candidate) -> String {
        input_digest(&BuildIdentity::named(build), render, cand).expect("a known build")
    }

    #[test]
    fn the_digest_changes_with_every_input_of_the_render() {
        let render = RenderConfig::new("api.example.com");
        let cand = candidate();
        let first = digest("a", &render, &cand);
        assert_eq!(first, digest("a", &render, &cand), "deterministic");
        assert!(first.starts_with("v1:"), "{first}");

        let mut other_ca = render.clone();
        other_ca.upstream_ca_file = "/etc/gateway/upstream-ca.pem".into();
        let mut changed = cand.clone();
        if let Some(e) = changed.entries.values_mut().next() {
            e.backend = "http://127.0.0.1:10".into();
        }
        let mut bumped = cand.clone();
        bumped.revisions.insert("billing/invoices".into(), 2);
        let mut set_aside = cand.clone();
        set_aside.quarantined.push(Quarantined {
            id: "catalog/products".into(),
            team: "catalog".into(),
            stage: Stage::Registry,
            reason: "why".into(),
            kept: Kept::LeftOut,
        });
        let others = [
            digest("b", &render, &cand),
            digest("a", &RenderConfig::new("api.example.org"), &cand),
            digest("a", &other_ca, &cand),
            digest("a", &render, &changed),
            digest("a", &render, &bumped),
            digest("a", &render, &set_aside),
            digest("a", &render, &Candidate::default()),
        ];
        for (i, other) in others.iter().enumerate() {
            assert_ne!(&first, other, "variation {i}");
        }
        assert_eq!(
            input_digest(&BuildIdentity::unknown(), &render, &cand),
            None
        );
    }

    #[test]
    fn the_running_build_is_known_and_read_once() {
        let running = BuildIdentity::running();
        assert!(
            matches!(&running.0, Some(d) if d.starts_with("exe:") && d.len() == 4 + 64),
            "{running:?}"
        );
        assert_eq!(running, BuildIdentity::running());
    }

    #[test]
    fn a_render_is_reused_only_when_recorded_published_and_live() {
        let record = RenderRecord {
            input_digest: "v1:in".into(),
            hash: "sha256:h".into(),
        };
        let state = PublishedState {
            version_id: "v1".into(),
            hash: "sha256:h".into(),
            published_at: 1,
        };
        let live = BundleHead {
            version_id: "v1".into(),
            etag: "e".into(),
            hash: Some("sha256:h".into()),
            writer: Writer::Reconciler,
            written_by: None,
            last_modified: None,
        };
        let reuse = |input, record: Option<&RenderRecord>, state, live| {
            reusable_hash(input, record, state, live)
        };
        assert_eq!(
            reuse(Some("v1:in"), Some(&record), Some(&state), Some(&live)).as_deref(),
            Some("sha256:h")
        );
        let other_hash = RenderRecord {
            hash: "sha256:other".into(),
            ..record.clone()
        };
        let killed = BundleHead {
            hash: Some("sha256:kill".into()),
            writer: Writer::KillSwitch,
            ..live.clone()
        };
        for (i, reused) in [
            reuse(Some("v1:other"), Some(&record), Some(&state), Some(&live)),
            reuse(None, Some(&record), Some(&state), Some(&live)),
            reuse(Some("v1:in"), None, Some(&state), Some(&live)),
            reuse(Some("v1:in"), Some(&other_hash), Some(&state), Some(&live)),
            reuse(Some("v1:in"), Some(&record), None, Some(&live)),
            reuse(Some("v1:in"), Some(&record), Some(&state), None),
            reuse(Some("v1:in"), Some(&record), Some(&state), Some(&killed)),
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(reused, None, "case {i}");
        }
    }
}
