//! The fast path: how a session file is opened and a context printed without parsing the
//! file into typed values. Everything here trades generality for speed under invariants the
//! rest of the crate keeps; each trick is here because a measurement on the 100k-entry bench
//! file (about 104 MiB, `cargo xtask bench`, figures in docs/benchmarks.md, "Sessions at
//! scale") showed it paid.
//!
//! The parts, in the order a reopen uses them:
//!
//! - **The index sidecar** (`tree/sidecar.rs`): `<file>.idx` holds the index pass's result
//!   (fixed 36-byte node records, the finished id table), so a reopen reads a few MiB instead of
//!   the file. Invariant: it is used only when the file's length and mtime match and it was
//!   written well after that mtime, or when every byte it indexed hashes the same again; its
//!   own hash is keyed with a per-user secret, so a copied or forged sidecar never checks out.
//!   Measured: `session_bench --child-open` 17.7 → 10.0 ms; reopen 26.3x Pi 1.6.0.
//! - **The index pass** (`tree/indexer.rs`, `tree/builder.rs`): one streaming pass, a reading
//!   thread beside the indexer from 8 MiB, parts on several threads from 16 MiB and joined.
//!   Invariant: memory grows with the number of entries, never with their bytes — a line is
//!   copied only when a block boundary cuts it. Measured: 1 GB first open 0.785 → 0.646 s,
//!   peak 0.097x the file.
//! - **The line scan** ([`scan`]): `type`, `id`, `parentId`, `timestamp` and the message role
//!   picked out of a line without a JSON tree, with a bracket count written for the compiler's
//!   vector code (per-lane counters, no branch on the bytes). Invariant: the structure check is
//!   exact for strings, objects and arrays and loose for scalars, so a line that passes here
//!   but is not JSON fails at its typed read, with its line number — never silently.
//! - **The id table** (`tree/ids.rs`): open addressing over node indices, 4 bytes a slot; the
//!   ids live once, in the nodes (about 1 MB per 100,000 entries).
//! - **Canonical JSON** ([`canonical`]): a message line in `JSON.stringify`'s form is checked
//!   against the shape its type reads (tables the reader macros generate) and re-indented from
//!   its bytes in one pass of our own. Invariant: it keeps exactly the messages a typed read
//!   keeps; anything not canonical, or not of its type's shape, takes the typed path. Measured:
//!   CPU 0.81x, wall 0.92x of parsing and printing (21 pairs); a serde-based check was no
//!   faster (its string scan steps through every escape).
//! - **Lazy messages** ([`lazy`]): such a message stays a span of the file, read again a chunk
//!   at a time into a reused buffer when printed. Invariant: the file is only appended to, so
//!   a span of the opened text never changes under the tree. Measured: wall 0.89x, peak
//!   26.2 → 22.8 MiB.
//!
//! Tried and not kept (docs/benchmarks.md): simd-json as the line parser (no gain: the parse
//! is bound by building values), mimalloc (peak over 0.5x the file for 6%).

pub mod canonical;
pub(crate) mod lazy;
pub(crate) mod scan;
