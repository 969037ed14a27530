//! Pi-compatible JSONL session trees: typed entries, append-only store, tree navigation, legacy migration.
