//! Kill switch level 2: a bundle whose routes answer 503 to every request on every host. It goes
//! out through the same bucket and sidecar as any bundle and survives proxy restarts; restoring
//! the previous bundle version undoes it.

use crate::ratelimit;
use crate::config::RenderConfig;
use crate::renderer::{assemble, Rendered};
use crate::routes::{catch_all_virtual_host, json_error_body, route_config_resource};

pub const KILL_SWITCH_MESSAGE: &str = "gateway kill switch engaged";

/// Zero clusters, one `*` virtual host answering a JSON 503, and rate-limit rules with the
/// domain and no descriptors (the rate-limit service refuses a file without a domain).
pub fn render_kill_switch(cfg: &RenderConfig) -> Rendered {
    // The kill switch does not depend on the registry or the base domain: every host is caught.
    let _ = cfg;
    let route_config = route_config_resource(vec![catch_all_virtual_host(
        503,
        &json_error_body(KILL_SWITCH_MESSAGE),
    )]);
    // Fixed, known-good values: serialising them cannot fail.
    assemble(Vec::new(), route_config, ratelimit::empty_rules(), 0)
        .expect("the kill-switch render is a constant")
}
