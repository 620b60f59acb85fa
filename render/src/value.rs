//! Building rendered values by moving parts in. `json!` serialises every embedded `Value` into a
//! fresh copy; at 50k routes those copies were most of the render's time.

use serde_json::Value;

/// A JSON object of the given members, moved in as they are.
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    )
}
