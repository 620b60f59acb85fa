use crate::ValidationError;

/// Layer 2: entries that render zero routes are a renderer bug, never an intent. Publishing
/// them would replace every team's routes with nothing.
pub fn validate_not_empty(entry_count: usize, route_count: usize) -> Result<(), ValidationError> {
    if entry_count > 0 && route_count == 0 {
        return Err(ValidationError::EmptyRender {
            entries: entry_count,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_without_routes_fail() {
        let err = validate_not_empty(3, 0).expect_err("3 entries, 0 routes");
        assert!(
            err.to_string()
                .starts_with("3 entries rendered zero routes"),
            "{err}"
        );
    }

    #[test]
    fn entries_with_routes_pass() {
        assert!(validate_not_empty(3, 7).is_ok());
    }

    #[test]
    fn no_entries_is_not_this_layers_business() {
        // The kill-switch render has no entries and no team routes; the reconciler's own guard
        // keeps an empty registry read from publishing.
        assert!(validate_not_empty(0, 0).is_ok());
    }
}
