//! Render's integration tests in one binary (`cargo test -p gateway-render --test suite`): the
//! registration checks over the corpus (`tests/corpus`) and generated input, the entry's JSON
//! Schema, the render against golden files (`tests/golden`) and its properties, and the render
//! in the real Envoy.

mod check_corpus;
mod check_corpus_renders;
mod check_entry_policy_messages;
mod check_entry_policy_props;
mod check_props;
mod entry_schema;
mod render_archive;
mod render_bundle;
mod render_delivery;
mod render_envoy;
mod render_envoy_bounds;
mod render_envoy_live;
mod render_golden;
mod render_golden_entry_policy;
mod render_properties;
mod render_route_policy;
mod render_rollout;
mod render_routes;
mod support;
