//! The three validation layers on one render, off the async executor, and the bundle a publish
//! puts, prepared while Envoy runs: what the validate step, the narrowing and the seed share.

use super::{ReconcileError, Stage};
use gateway_adapters::store::encoding;
use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_render::bundle::Sealed;
use gateway_render::{Bundle, Entry, Rendered};
use gateway_validator::{validate_all_beside, ConfigView, ValidateOptions};

/// What validation hands the publish: the render that passed, the entries it holds and, when
/// the first validation passed, the bundle prepared while Envoy ran.
pub(super) type Passed = (Rendered, Vec<Entry>, Option<Prepared>);

/// The render back, with the failing stage and reason when a layer refused it, and the bundle
/// prepared while Envoy validated (when asked for and layers 1 and 2 passed).
pub(super) struct Validated {
    pub rendered: Rendered,
    pub verdict: Result<(), (Stage, String)>,
    pub prepared: Option<Prepared>,
}

/// `bundle.json` as a publish puts it: sealed (its manifest ready to sign), the gzip of its
/// files' part, and the hash.
pub(super) struct Prepared {
    pub hash: String,
    pub sealed: Sealed,
    pub tail_gzip: Vec<u8>,
}

impl Prepared {
    pub fn of(rendered: &Rendered, entries: &[Entry]) -> Prepared {
        let sealed = Bundle::new(rendered, entries).seal();
        let tail_gzip = encoding::compress(&sealed.tail());
        Prepared {
            hash: sealed.hash.clone(),
            sealed,
            tail_gzip,
        }
    }
}

/// The three layers, off the async executor (layer 3 runs the Envoy process). Envoy starts
/// first; layers 1 and 2 and, given `publish_entries`, the bundle's serialisation and gzip run
/// on the other core meanwhile (`validate_all_beside`, which spells the order). The verdict is
/// the same as with the layers one after another.
pub(super) async fn validate(
    rendered: Rendered,
    entry_count: usize,
    publish_entries: Option<Vec<Entry>>,
    opts: &ValidateOptions,
) -> Result<Validated, ReconcileError> {
    let opts = opts.clone();
    tokio::task::spawn_blocking(move || {
        let (verdict, prepared) = {
            let view = ConfigView {
                clusters: &rendered.clusters,
                route_config: &rendered.route_config,
                ratelimit_yaml: rendered
                    .files
                    .get(RATE_LIMIT_FILE)
                    .map(String::as_str)
                    .unwrap_or_default(),
                jwt: rendered.jwt.as_ref(),
            };
            let prepare = || {
                publish_entries
                    .as_deref()
                    .map(|entries| Prepared::of(&rendered, entries))
            };
            validate_all_beside(&view, entry_count, rendered.route_count, &opts, prepare)
        };
        let verdict = verdict.map(|_| ()).map_err(|failure| {
            (
                Stage::Validation(failure.layer.to_string()),
                failure.error.to_string(),
            )
        });
        Validated {
            rendered,
            verdict,
            prepared: prepared.flatten(),
        }
    })
    .await
    .map_err(ReconcileError::ValidationTask)
}
