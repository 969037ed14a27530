//! The index sidecar cannot lie: whatever happened to the session file or to the sidecar
//! (edits in place, appends, truncations, forgeries), `--format pi` through the sidecar prints
//! what a fresh open prints, byte for byte.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use strata_context::{build_for_print, write_pi_json};
use strata_session::{Session, sidecar_path};

/// `strata context F --format pi` in the library: the printed context, or `None` when the
/// file does not open or build.
fn printed(path: &Path) -> Option<Vec<u8>> {
    let opened = Session::open(path).ok()?;
    let tree = opened.session.tree();
    let context = build_for_print(tree, tree.leaf()).ok()?;
    let mut out = Vec::new();
    write_pi_json(&context, &mut out).ok()?;
    Some(out)
}

/// A session of about 1.3 MiB (past the size that gets a sidecar): user and assistant
/// messages, a compaction, a context edit, and a branch.
fn session_bytes() -> Vec<u8> {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"0190a000-0000-7000-8000-000000000001","timestamp":"2026-01-15T10:00:01.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let filler = "lorem ipsum dolor sit amet ".repeat(150);
    let mut parent = "null".to_owned();
    for n in 0..320u32 {
        let id = format!("{n:08x}");
        let line = match n {
            200 => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:02.000Z","summary":"earlier work","firstKeptEntryId":"000000b4","tokensBefore":1000}}"#
            ),
            250 => format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:02.000Z","targetId":"000000e6","replacement":null}}"#
            ),
            // A branch: this one continues from further back.
            300 => format!(
                r#"{{"type":"message","id":"{id}","parentId":"00000118","timestamp":"2026-01-15T10:00:02.000Z","message":{{"role":"user","content":"branch {n} {filler}","timestamp":1768471204000}}}}"#
            ),
            _ if n % 2 == 0 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:02.000Z","message":{{"role":"user","content":"question {n} {filler}","timestamp":1768471204000}}}}"#
            ),
            _ => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"answer {n} {filler}"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":1768471205000}}}}"#
            ),
        };
        text.push_str(&line);
        text.push('\n');
        parent = format!("\"{id}\"");
    }
    text.into_bytes()
}

/// The sidecar's own hash as its format describes it, computed by someone without the key.
fn unkeyed_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = 0xCBF2_9CE4_8422_2325u64 ^ (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K).rotate_left(29);
    }
    for &byte in words.remainder() {
        h = (h ^ u64::from(byte)).wrapping_mul(K).rotate_left(29);
    }
    let h = h ^ (h >> 32);
    h.wrapping_mul(K) ^ (h >> 29)
}

#[derive(Debug, Clone)]
enum Op {
    /// A byte of the file replaced by another letter or digit, in place (same length).
    Edit { at: f64, to: u8 },
    /// The same, in an entry's `id` or `parentId` (what the index records).
    EditLink { at: f64, to: u8 },
    /// A whole entry appended (a child of the last line's entry).
    Append { n: u32 },
    /// The file cut at any byte.
    Truncate { at: f64 },
    /// A byte of the sidecar changed and its checksum recomputed, without the key.
    Forge { at: f64, xor: u8 },
    /// A byte of the sidecar changed, nothing recomputed.
    Flip { at: f64, xor: u8 },
    /// Nothing: opened again.
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0.0..1.0f64, 0u8..36).prop_map(|(at, to)| Op::Edit { at, to }),
        (0.0..1.0f64, 0u8..36).prop_map(|(at, to)| Op::EditLink { at, to }),
        (0.0..1.0f64, 0u8..36).prop_map(|(at, to)| Op::EditLink { at, to }),
        (0u32..1000).prop_map(|n| Op::Append { n }),
        (0.5..1.0f64).prop_map(|at| Op::Truncate { at }),
        (0.0..1.0f64, 1u8..=255).prop_map(|(at, xor)| Op::Forge { at, xor }),
        (0.0..1.0f64, 1u8..=255).prop_map(|(at, xor)| Op::Flip { at, xor }),
        Just(Op::Reopen),
    ]
}

fn position(at: f64, len: usize) -> usize {
    ((at * len as f64) as usize).min(len.saturating_sub(1))
}

fn apply(op: &Op, path: &Path) {
    let mut bytes = std::fs::read(path).expect("session");
    let header_end = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    match op {
        Op::Edit { at, to } => {
            let at = header_end + position(*at, bytes.len() - header_end);
            if bytes[at].is_ascii_alphanumeric() {
                bytes[at] = b"abcdefghijklmnopqrstuvwxyz0123456789"[*to as usize];
            }
            std::fs::write(path, &bytes).expect("edited");
        }
        Op::EditLink { at, to } => {
            let links: Vec<usize> = bytes
                .windows(5)
                .enumerate()
                .filter(|(_, window)| *window == b"Id\":\"" || *window == b"id\":\"")
                .map(|(i, _)| i + 5 + 7)
                .filter(|&i| i < bytes.len())
                .collect();
            if let Some(&at) = links.get(position(*at, links.len())) {
                bytes[at] = b"abcdefghijklmnopqrstuvwxyz0123456789"[*to as usize];
                std::fs::write(path, &bytes).expect("edited");
            }
        }
        Op::Append { n } => {
            let last = bytes[..bytes.len().saturating_sub(1)]
                .rsplit(|&b| b == b'\n')
                .next()
                .and_then(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
                .and_then(|entry| entry["id"].as_str().map(|id| format!("\"{id}\"")))
                .unwrap_or_else(|| "null".into());
            let line = format!(
                r#"{{"type":"message","id":"a{n:07x}","parentId":{last},"timestamp":"2026-01-15T10:00:03.000Z","message":{{"role":"user","content":"appended {n}","timestamp":1768471206000}}}}"#
            );
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .expect("append");
            std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).expect("append");
        }
        Op::Truncate { at } => {
            let at = header_end + position(*at, bytes.len() - header_end);
            bytes.truncate(at);
            std::fs::write(path, &bytes).expect("truncated");
        }
        Op::Forge { at, xor } | Op::Flip { at, xor } => {
            let sidecar = sidecar_path(path);
            let Ok(mut side) = std::fs::read(&sidecar) else {
                return;
            };
            if side.len() < 16 {
                return;
            }
            let body = side.len() - 8;
            let at = position(*at, body);
            side[at] ^= xor;
            if matches!(op, Op::Forge { .. }) {
                let sum = unkeyed_hash(&side[..body]);
                side[body..].copy_from_slice(&sum.to_le_bytes());
            }
            std::fs::write(&sidecar, &side).expect("forged");
        }
        Op::Reopen => {}
    }
}

/// What a fresh open of `path`'s bytes prints: a copy in another directory, no sidecar.
fn fresh(path: &Path, scratch: &Path) -> Option<Vec<u8>> {
    let copy: PathBuf = scratch.join("s.jsonl");
    let _ = std::fs::remove_file(sidecar_path(&copy));
    std::fs::write(&copy, std::fs::read(path).expect("session")).expect("copy");
    let out = printed(&copy);
    let _ = std::fs::remove_file(sidecar_path(&copy));
    out
}

fn check(path: &Path, scratch: &Path, what: &str) {
    let through_sidecar = printed(path);
    let expected = fresh(path, scratch);
    assert!(
        through_sidecar == expected,
        "{what}: the sidecar's open printed {} bytes, a fresh open {} bytes",
        through_sidecar.as_ref().map_or(0, Vec::len),
        expected.as_ref().map_or(0, Vec::len),
    );
}

/// Issue 42's case: a same-length edit in the middle, then an append. The sidecar covered the
/// old length and its last bytes still matched, so it served an index of lines that changed.
#[test]
fn an_edit_in_the_middle_and_an_append_are_not_served_from_the_old_sidecar() {
    let dir = tempfile::tempdir().expect("dir");
    let scratch = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, session_bytes()).expect("written");
    check(&path, scratch.path(), "first open");
    assert!(sidecar_path(&path).exists(), "a sidecar was written");
    // Entry 0xdc's id becomes one no child names: the path is cut after the compaction.
    let mut bytes = std::fs::read(&path).expect("session");
    let at = bytes
        .windows(14)
        .position(|window| window == b"\"id\":\"000000dc")
        .expect("entry 0xdc");
    bytes[at + 13] = b'z';
    std::fs::write(&path, &bytes).expect("edited");
    apply(&Op::Append { n: 1 }, &path);
    check(&path, scratch.path(), "after the edit and the append");
}

/// A sidecar changed by someone without the key, its checksum recomputed as the format says,
/// is not used.
#[test]
fn a_forged_sidecar_with_a_recomputed_checksum_is_not_used() {
    let dir = tempfile::tempdir().expect("dir");
    let scratch = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, session_bytes()).expect("written");
    check(&path, scratch.path(), "first open");
    let side = std::fs::read(sidecar_path(&path)).expect("sidecar");
    // Every node's parent byte in turn would be too slow; a spread of places in the records.
    for at in (200..side.len() - 8).step_by(side.len() / 50) {
        apply(
            &Op::Forge {
                at: at as f64 / (side.len() - 8) as f64,
                xor: 1,
            },
            &path,
        );
        check(&path, scratch.path(), &format!("forged at {at}"));
        std::fs::write(sidecar_path(&path), &side).expect("restored");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn through_the_sidecar_the_printed_context_is_always_a_fresh_opens(
        ops in proptest::collection::vec(op(), 1..8)
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let scratch = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, session_bytes()).expect("written");
        check(&path, scratch.path(), "first open");
        for (step, op) in ops.iter().enumerate() {
            apply(op, &path);
            check(&path, scratch.path(), &format!("step {step}: {op:?}"));
        }
    }
}
