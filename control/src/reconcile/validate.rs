//! Step 5, validate: the three layers on the render, Envoy's included; a refusal is narrowed
//! down to the entries responsible (`narrow.rs`), and the rest validated again.

use super::layers::{validate, Passed};
use super::narrow::narrow;
use super::publish::reject;
use super::run::{now, Run, Step};
use super::{verdicts, ReconcileError};
use gateway_adapters::registry::Registry;
use gateway_adapters::store::ConfigStore;
use gateway_render::Rendered;

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    pub(super) async fn validate(&mut self, rendered: Rendered) -> Result<Step<Passed>, ReconcileError> {
        let cfg = self.cfg;
        let entries = self.cand.list();
        let prepare = Some(entries.clone());
        let validated = validate(rendered, entries.len(), prepare, &cfg.validate).await?;
        self.facts.validations += 1;
        let Err((stage, reason)) = validated.verdict else {
            return Ok(Step::Next((validated.rendered, entries, validated.prepared)));
        };
        let (cand, prev, facts) = self.with_previous().await?;
        let narrowed = Box::pin(narrow(cand, prev, cfg, &stage, &reason, &mut facts.validations)).await?;
        facts.verdicts.next = Some(verdicts::to_keep(cand, &facts.verdicts.read, now()));
        match narrowed {
            Ok((rendered, entries)) => Ok(Step::Next((rendered, entries, None))),
            Err(why) => {
                let reason = format!("{reason}\n{why}");
                let rejected = reject(self.store, stage, reason, Some(&validated.rendered)).await?;
                Ok(Step::Decided(rejected))
            }
        }
    }
}

