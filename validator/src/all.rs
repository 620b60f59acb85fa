//! The three layers in order; the first that fails stops the run and says which it was.

use crate::{
    start_envoy_validation, validate_not_empty, validate_rules, ConfigView, EnvoyOptions,
    EnvoyValidation, EnvoyVerdict, ValidationError,
};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Rules,
    EmptyRender,
    Envoy,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Rules => "layer 1 (gateway rules)",
            Layer::EmptyRender => "layer 2 (empty render)",
            Layer::Envoy => "layer 3 (envoy --mode validate)",
        })
    }
}

#[derive(Debug, Clone)]
pub struct ValidateOptions {
    pub envoy: EnvoyOptions,
    /// Skip layer 3. Only ever on explicit request (`--skip-envoy`); the report says so.
    pub skip_envoy: bool,
}

/// Which layer failed, and why.
#[derive(Debug, thiserror::Error)]
#[error("{layer} failed: {error}")]
pub struct ValidationFailure {
    pub layer: Layer,
    #[source]
    pub error: ValidationError,
}

/// What passed.
#[derive(Debug, Clone)]
pub struct Report {
    pub entry_count: usize,
    pub route_count: usize,
    /// `None` exactly when layer 3 was skipped on request.
    pub envoy: Option<EnvoyVerdict>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "valid: {} entries, {} routes; gateway rules ok; not empty",
            self.entry_count, self.route_count
        )?;
        match &self.envoy {
            Some(v) => write!(
                f,
                "; envoy {} accepted it in {:.2} s",
                v.envoy_version,
                v.elapsed.as_secs_f64()
            ),
            None => write!(f, "; envoy validation SKIPPED on request"),
        }
    }
}

pub fn validate_all(
    view: &ConfigView<'_>,
    entry_count: usize,
    route_count: usize,
    opts: &ValidateOptions,
) -> Result<Report, ValidationFailure> {
    validate_all_beside(view, entry_count, route_count, opts, || ()).0
}

/// The three layers, with `beside` done while Envoy validates; the verdict is the one
/// [`validate_all`] gives, the first failing layer in order, as if they ran one after another.
///
/// The order, on two cores: Envoy (layer 3, seconds on one core) is started and fed the
/// validation bootstrap first, as it can do nothing until the bootstrap is whole; then, while
/// Envoy parses it on the other core, this thread runs layers 1 and 2 and then `beside` (a
/// caller's work that needs no verdict, such as preparing the publish). A refusal by layer 1 or
/// 2 kills Envoy and skips `beside`; a layer 3 failure to start (wrong release, no binary) is
/// reported only after layers 1 and 2 passed. `beside`'s result comes back whenever it ran,
/// whatever Envoy said.
pub fn validate_all_beside<T>(
    view: &ConfigView<'_>,
    entry_count: usize,
    route_count: usize,
    opts: &ValidateOptions,
    beside: impl FnOnce() -> T,
) -> (Result<Report, ValidationFailure>, Option<T>) {
    let envoy = (!opts.skip_envoy).then(|| start_envoy_validation(view, &opts.envoy));
    let first_two = pure_layers(view, entry_count, route_count);
    let beside = first_two.is_ok().then(beside);
    if let Err(failure) = first_two {
        // Dropping the started Envoy kills it.
        return (Err(failure), beside);
    }
    let envoy = match envoy {
        None => None,
        Some(started) => match started.and_then(EnvoyValidation::verdict) {
            Ok(verdict) => Some(verdict),
            Err(error) => {
                let layer = Layer::Envoy;
                return (Err(ValidationFailure { layer, error }), beside);
            }
        },
    };
    let report = Report {
        entry_count,
        route_count,
        envoy,
    };
    (Ok(report), beside)
}

/// Layers 1 and 2: pure, on the values.
fn pure_layers(
    view: &ConfigView<'_>,
    entry_count: usize,
    route_count: usize,
) -> Result<(), ValidationFailure> {
    validate_rules(view).map_err(|v| ValidationFailure {
        layer: Layer::Rules,
        error: ValidationError::Rules(v),
    })?;
    validate_not_empty(entry_count, route_count).map_err(|error| ValidationFailure {
        layer: Layer::EmptyRender,
        error,
    })
}
