//! The published unit: `bundle.json` = format, hash, the three files, and the exact entries.
