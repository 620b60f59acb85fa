//! Step 4, guard: drift is the live bundle's hash differing from the one this reconciler last
//! recorded. An operator's kill switch or restore is exactly that, and a team's deploy must never
//! undo it; a publish of this reconciler whose end it never saw is adopted instead.

use super::read::Standing;
use super::run::{now, Run, Step};
use super::{Outcome, ReconcileError};
use gateway_adapters::registry::{PublishedState, Registry};
use gateway_adapters::store::{BundleHead, ConfigStore, Precondition, Writer};
use gateway_render::Rendered;
use tracing::info;

/// What the guard lets the run go on with: the recorded publish (adopted, when it was), the live
/// bundle's head and the precondition the publish puts under.
pub(super) type Guarded = (Option<PublishedState>, Option<BundleHead>, Precondition);

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    pub(super) async fn guard(
        &mut self,
        standing: Standing,
        rendered: &Rendered,
    ) -> Result<Step<Guarded>, ReconcileError> {
        let Standing {
            state,
            live,
            pending,
            ..
        } = standing;
        let Some(head) = live.as_ref() else {
            // No bundle at all (never seeded, or deleted): only create, never overwrite a racer.
            return Ok(Step::Next((state, live, Precondition::Absent)));
        };
        let hash = match drift(state.as_ref(), head, pending.as_deref(), &rendered.hash) {
            Drift::Clear => {
                let precondition = Precondition::Matches(head.etag.clone());
                return Ok(Step::Next((state, live, precondition)));
            }
            Drift::Held => {
                return Ok(Step::Decided(Outcome::HeldDrift {
                    live_hash: head.hash.clone(),
                    recorded_hash: state.map(|s| s.hash),
                }))
            }
            Drift::OwnUnrecorded | Drift::OwnPending => head.hash.clone().unwrap_or_default(),
        };
        let adopted = PublishedState {
            version_id: head.version_id.clone(),
            hash,
            published_at: now(),
        };
        self.registry.record_published(state.as_ref(), &adopted).await?;
        if adopted.hash == rendered.hash {
            info!(version_id = %head.version_id, "adopted the reconciler's own unrecorded publish");
            let outcome = self.unchanged(Some(adopted), rendered.hash.clone());
            return Ok(Step::Decided(outcome));
        }
        info!(version_id = %head.version_id, "adopted the reconciler's own pending publish");
        let precondition = Precondition::Matches(head.etag.clone());
        Ok(Step::Next((Some(adopted), live, precondition)))
    }

    /// Ends the run unchanged when the render is what is recorded and live.
    pub(super) fn unless_unchanged(
        &mut self,
        state: Option<&PublishedState>,
        live: Option<&BundleHead>,
        rendered: &Rendered,
    ) -> Step<()> {
        let live_hash = live.and_then(|l| l.hash.as_deref());
        match state {
            Some(s) if s.hash == rendered.hash && live_hash == Some(&rendered.hash) => {
                Step::Decided(self.unchanged(Some(s.clone()), rendered.hash.clone()))
            }
            _ => Step::Next(()),
        }
    }
}

/// The guard's verdict on a live bundle.
#[derive(Debug, PartialEq)]
enum Drift {
    /// What this reconciler recorded is live.
    Clear,
    /// A publish of ours whose state write failed (DynamoDB fell over between the two): the live
    /// object says the reconciler wrote it and it is exactly what would be published now.
    OwnUnrecorded,
    /// A publish of ours that this run did not render (registrations landed since): the pending
    /// record says the reconciler was about to put exactly this hash.
    OwnPending,
    /// Someone else wrote.
    Held,
}

fn drift(
    state: Option<&PublishedState>,
    live: &BundleHead,
    pending: Option<&str>,
    rendered: &str,
) -> Drift {
    let recorded = state.map(|s| s.hash.as_str());
    let live_hash = live.hash.as_deref();
    if recorded.is_some() && live_hash == recorded {
        return Drift::Clear;
    }
    let ours = live.writer == Writer::Reconciler;
    if ours && live_hash == Some(rendered) {
        return Drift::OwnUnrecorded;
    }
    if ours && live_hash.is_some() && live_hash == pending {
        return Drift::OwnPending;
    }
    Drift::Held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(hash: Option<&str>, writer: Writer) -> BundleHead {
        BundleHead {
            version_id: "v2".into(),
            etag: "\"e\"".into(),
            hash: hash.map(String::from),
            writer,
            written_by: None,
            last_modified: None,
        }
    }

    fn state(hash: &str) -> PublishedState {
        PublishedState {
            version_id: "v1".into(),
            hash: hash.into(),
            published_at: 1,
        }
    }

    #[test]
    fn the_recorded_publish_live_is_clear() {
        let live = head(Some("h1"), Writer::Reconciler);
        assert_eq!(drift(Some(&state("h1")), &live, None, "h2"), Drift::Clear);
        // Whoever wrote it: an operator's restore of the recorded hash is that publish.
        let live = head(Some("h1"), Writer::Restore);
        assert_eq!(drift(Some(&state("h1")), &live, None, "h2"), Drift::Clear);
    }

    #[test]
    fn an_operator_write_is_held_whatever_it_holds() {
        let live = head(Some("h2"), Writer::Restore);
        assert_eq!(drift(Some(&state("h1")), &live, Some("h2"), "h2"), Drift::Held);
        assert_eq!(drift(None, &head(None, Writer::Restore), None, "h2"), Drift::Held);
    }

    #[test]
    fn our_own_write_is_adopted_when_rendered_now_or_pending() {
        let live = head(Some("h2"), Writer::Reconciler);
        assert_eq!(drift(Some(&state("h1")), &live, None, "h2"), Drift::OwnUnrecorded);
        assert_eq!(drift(Some(&state("h1")), &live, Some("h2"), "h3"), Drift::OwnPending);
        assert_eq!(drift(Some(&state("h1")), &live, Some("h9"), "h3"), Drift::Held);
    }

    #[test]
    fn a_live_bundle_without_a_hash_is_never_ours() {
        let live = head(None, Writer::Reconciler);
        assert_eq!(drift(None, &live, None, "h2"), Drift::Held);
    }
}
