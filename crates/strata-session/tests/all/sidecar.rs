//! The index sidecar: a warm open through it, an appended file, and damaged or stale sidecars
//! all give the tree a cold scan gives.

use std::fmt::Write as _;
use std::path::Path;

use strata_session::{Session, sidecar_path};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/p"}"#;

/// `count` message lines from entry `first` on, each continuing the one before, with a label
/// and a name among them, and a branch back to an earlier entry.
fn lines(first: usize, count: usize) -> String {
    let mut out = String::new();
    let pad = "x".repeat(400);
    for n in first..first + count {
        let parent = if n == 0 {
            "null".to_owned()
        } else if n % 97 == 0 {
            format!("\"e{}\"", n / 2)
        } else {
            format!("\"e{}\"", n - 1)
        };
        let line = match n % 500 {
            7 => format!(
                r#"{{"type":"label","id":"e{n}","parentId":{parent},"timestamp":"2026-01-15T10:00:00.000Z","targetId":"e{}","label":"mark {n}"}}"#,
                n - 1
            ),
            9 => format!(
                r#"{{"type":"session_info","id":"e{n}","parentId":{parent},"timestamp":"2026-01-15T10:00:00.000Z","name":"name {n}"}}"#
            ),
            _ => format!(
                r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2026-01-15T10:00:00.000Z","message":{{"role":"user","content":"{pad} {n}","timestamp":1}}}}"#
            ),
        };
        writeln!(out, "{line}").ok();
    }
    out
}

/// Everything an open tells: diagnostics, leaf, name, labels and each entry on the leaf's path
/// with its parent, kind, line and raw text.
fn opened(path: &Path) -> Vec<String> {
    let opened = Session::open(path).unwrap();
    let tree = opened.session.tree();
    let mut out: Vec<String> = opened.diagnostics.iter().map(|d| d.to_string()).collect();
    out.push(format!(
        "leaf {:?} name {:?} len {}",
        tree.leaf(),
        tree.name(),
        tree.len()
    ));
    let mut labels: Vec<String> = tree.labels().map(|(id, l)| format!("{id}={l}")).collect();
    labels.sort();
    out.extend(labels);
    for entry in tree.iter() {
        // Looked up by id too: a warm open takes the id table from the sidecar.
        let found = tree.get(entry.id()).map(|found| found.line_number());
        out.push(format!(
            "{} {:?} {:?} {} {found:?} {}",
            entry.id(),
            entry.parent_id(),
            entry.kind(),
            entry.line_number(),
            entry.raw_line()
        ));
    }
    if let Some(leaf) = tree.leaf() {
        out.push(format!("{:?}", tree.path_from_root(leaf.as_str())));
    }
    out
}

fn large_session(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("big.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}", lines(0, 3000))).unwrap();
    path
}

#[test]
fn a_warm_open_through_the_sidecar_is_the_cold_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = large_session(dir.path());
    let cold = opened(&path);
    let sidecar = sidecar_path(&path);
    assert!(sidecar.exists(), "a large file gets a sidecar");
    assert!(!sidecar.to_string_lossy().ends_with(".jsonl"));
    let stamp = std::fs::metadata(&sidecar).unwrap().modified().unwrap();
    assert_eq!(opened(&path), cold);
    assert_eq!(
        std::fs::metadata(&sidecar).unwrap().modified().unwrap(),
        stamp,
        "a warm open does not rewrite the sidecar"
    );
}

#[test]
fn long_and_repeated_ids_open_warm_as_they_open_cold() {
    // Ids past what a record holds in place, and one id twice (reported on every open; the
    // sidecar then stores no id table and the warm open builds it, as the cold one did).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    let text = lines(0, 3000)
        .replace("\"e5\"", "\"an-entry-id-longer-than-fourteen-bytes\"")
        .replacen("\"id\":\"e9\"", "\"id\":\"e8\"", 1);
    std::fs::write(&path, format!("{HEADER}\n{text}")).unwrap();
    let cold = opened(&path);
    assert!(sidecar_path(&path).exists());
    assert!(
        cold.iter()
            .any(|line| line.contains("an-entry-id-longer-than-fourteen-bytes"))
    );
    assert!(
        cold.iter().any(|line| line.contains("e8")),
        "{:?}",
        &cold[..3]
    );
    assert_eq!(opened(&path), cold);
}

#[test]
fn a_small_file_gets_no_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}", lines(0, 10))).unwrap();
    opened(&path);
    assert!(!sidecar_path(&path).exists());
}

#[test]
fn only_session_files_get_a_sidecar() {
    // A fork is staged as `.fork-PID.jsonl.tmp`, read, then renamed: a sidecar written for
    // the staging name would be left behind.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".fork-1.jsonl.tmp");
    std::fs::write(&path, format!("{HEADER}\n{}", lines(0, 3000))).unwrap();
    let staged = opened(&path);
    assert!(!sidecar_path(&path).exists());
    let renamed = dir.path().join("forked.jsonl");
    std::fs::rename(&path, &renamed).unwrap();
    assert_eq!(opened(&renamed), staged);
    assert!(sidecar_path(&renamed).exists());
}

#[test]
fn lines_appended_after_the_sidecar_was_written_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = large_session(dir.path());
    opened(&path);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, lines(3000, 20).as_bytes()).unwrap();
    drop(file);
    let warm = opened(&path);
    assert!(warm.iter().any(|line| line.starts_with("e3019 ")));
    std::fs::remove_file(sidecar_path(&path)).unwrap();
    assert_eq!(warm, opened(&path));
}

#[test]
fn a_damaged_or_stale_sidecar_falls_back_to_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let path = large_session(dir.path());
    let cold = opened(&path);
    let sidecar = sidecar_path(&path);
    let good = std::fs::read(&sidecar).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x20;
    let mut bad_version = good.clone();
    bad_version[8] ^= 1;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 3].to_vec()),
        ("flipped byte", flipped),
        ("other version", bad_version),
        ("empty", Vec::new()),
        ("garbage", b"not a sidecar at all".to_vec()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&sidecar, &bytes).unwrap();
        assert_eq!(opened(&path), cold, "{what}");
    }
    // Stale: the file was rewritten with other content, shorter or of the same length.
    std::fs::write(&sidecar, &good).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let same_len = text.replacen("e2999", "f2999", 1);
    std::fs::write(&path, &same_len).unwrap();
    let rewritten = opened(&path);
    std::fs::remove_file(&sidecar).unwrap();
    assert_eq!(rewritten, opened(&path), "same length, other tail");
    std::fs::write(&sidecar, &good).unwrap();
    let shorter = format!("{HEADER}\n{}", lines(0, 2900));
    std::fs::write(&path, &shorter).unwrap();
    let short = opened(&path);
    std::fs::remove_file(&sidecar).unwrap();
    assert_eq!(short, opened(&path), "shorter");
}

#[test]
fn a_torn_last_line_is_reported_on_every_open_and_a_completed_one_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = large_session(dir.path());
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"type":"message","id":"torn","parentId":"e2999","message":{"role":"us"#);
    std::fs::write(&path, &text).unwrap();
    let cold = opened(&path);
    assert!(
        cold[0].contains("torn") || cold[0].contains("line"),
        "{cold:?}"
    );
    assert_eq!(opened(&path), cold);
    // A pass that reported anything leaves no sidecar to restore a stale torn state from.
    assert!(!sidecar_path(&path).exists());
    text.push_str("er\",\"content\":\"done\",\"timestamp\":1}}\n");
    std::fs::write(&path, &text).unwrap();
    let completed = opened(&path);
    std::fs::remove_file(sidecar_path(&path)).ok();
    assert_eq!(completed, opened(&path));
}
