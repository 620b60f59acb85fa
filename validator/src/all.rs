//! The three layers in order; the first that fails stops the run and says which it was.

use crate::{
    validate_not_empty, validate_rules, validate_with_envoy, ConfigView, EnvoyOptions,
    EnvoyVerdict, ValidationError,
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
    validate_rules(view).map_err(|v| ValidationFailure {
        layer: Layer::Rules,
        error: ValidationError::Rules(v),
    })?;
    validate_not_empty(entry_count, route_count).map_err(|error| ValidationFailure {
        layer: Layer::EmptyRender,
        error,
    })?;
    let envoy = if opts.skip_envoy {
        None
    } else {
        Some(
            validate_with_envoy(view, &opts.envoy).map_err(|error| ValidationFailure {
                layer: Layer::Envoy,
                error,
            })?,
        )
    };
    Ok(Report {
        entry_count,
        route_count,
        envoy,
    })
}
