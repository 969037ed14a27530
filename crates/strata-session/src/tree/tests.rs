use super::*;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#;

fn message(id: &str, parent: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

/// Lines of every kind the indexer treats specially.
fn awkward_file() -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(HEADER.as_bytes());
    bytes.extend_from_slice(b"\n\n   \n");
    bytes.extend_from_slice(message("a1", "null", "first \\\"quoted\\\" line").as_bytes());
    bytes.extend_from_slice(b"\n  ");
    bytes.extend_from_slice(message("b2", "\"a1\"", "second").as_bytes());
    bytes.extend_from_slice(b" \r\n");
    // A torn write in the middle of the file, then more entries.
    bytes
        .extend_from_slice(br#"{"type":"message","id":"c3","parentId":"b2","message":{"role":"us"#);
    bytes.push(b'\n');
    let mut bad = message("d4", "\"b2\"", "caf\u{e9} XX").into_bytes();
    let at = bad.len() - 20;
    bad[at] = 0xff;
    bytes.extend_from_slice(&bad);
    bytes.push(b'\n');
    bytes.extend_from_slice(message("e5", "\"d4\"", "\u{1F600} fine").as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(br#"{"type":"message","id":"f6","parentId":"e5","mess"#);
    bytes
}

#[test]
fn the_root_first_walk_gives_the_path_and_its_kinds_within_the_limit() {
    let mut text = format!("{HEADER}\n");
    text.push_str(&message("a1", "null", "one"));
    text.push('\n');
    text.push_str(r#"{"type":"thinking_level_change","id":"b2","parentId":"a1","timestamp":"2026-01-15T10:00:01.000Z","thinkingLevel":"high"}"#);
    text.push('\n');
    // A sibling branch, off the path.
    text.push_str(&message("d4", "\"a1\"", "three"));
    text.push('\n');
    text.push_str(&message("c3", "\"b2\"", "two"));
    text.push('\n');
    let (tree, _) = Tree::parse(Path::new("t.jsonl"), text.into_bytes()).expect("tree");
    let (numbers, kinds) = tree
        .numbers_and_kinds_from_root("c3", 3)
        .expect("within the limit");
    assert_eq!(numbers, [0, 1, 3]);
    let ids: Vec<&str> = numbers
        .iter()
        .map(|&n| tree.get_index(n as usize).expect("entry").id().as_str())
        .collect();
    let expected: Vec<&str> = tree
        .path_from_root("c3")
        .iter()
        .map(|id| id.as_str())
        .collect();
    assert_eq!(ids, expected);
    assert_eq!(tree.number_of("c3"), Some(3));
    assert_eq!(
        kinds,
        [
            EntryKind::Message(Role::User),
            EntryKind::ThinkingLevelChange,
            EntryKind::Message(Role::User)
        ]
    );
    assert!(
        tree.numbers_and_kinds_from_root("c3", 2).is_none(),
        "past the limit"
    );
    let (none, no_kinds) = tree.numbers_and_kinds_from_root("zz", 5).expect("unknown");
    assert!(none.is_empty() && no_kinds.is_empty());
    assert!(!tree.has_repeated_ids());
    let repeated = format!(
        "{HEADER}\n{}\n{}\n",
        message("a1", "null", "x"),
        message("a1", "null", "y")
    );
    let (tree, _) = Tree::parse(Path::new("t.jsonl"), repeated.into_bytes()).expect("tree");
    assert!(tree.has_repeated_ids());
}

#[test]
fn children_are_listed_alike_whether_asked_before_or_after_an_append() {
    // `z9` names a parent that comes later in the file.
    let text = format!(
        "{HEADER}\n{}\n{}\n{}\n{}\n",
        message("a1", "null", "x"),
        message("z9", "\"c3\"", "x"),
        message("b2", "\"a1\"", "x"),
        message("c3", "\"a1\"", "x"),
    );
    let line = message("d4", "\"a1\"", "x");
    let entry: Entry = serde_json::from_str(&line).expect("entry");
    let ids = |tree: &Tree, id: &str| -> Vec<String> {
        tree.children(id)
            .iter()
            .map(|id| id.as_str().to_owned())
            .collect()
    };
    let (mut asked_first, _) =
        Tree::parse(Path::new("t.jsonl"), text.clone().into_bytes()).expect("tree");
    assert_eq!(ids(&asked_first, "a1"), ["b2", "c3"]);
    assert_eq!(ids(&asked_first, "c3"), ["z9"]);
    asked_first.push_appended(line.clone(), &entry);
    let (mut asked_after, _) = Tree::parse(Path::new("t.jsonl"), text.into_bytes()).expect("tree");
    asked_after.push_appended(line, &entry);
    for tree in [&asked_first, &asked_after] {
        assert_eq!(ids(tree, "a1"), ["b2", "c3", "d4"]);
        assert_eq!(ids(tree, "c3"), ["z9"]);
        assert!(ids(tree, "d4").is_empty());
    }
}

fn summary(tree: &Tree, diagnostics: &[Diagnostic]) -> Vec<String> {
    let mut out: Vec<String> = tree
        .iter()
        .map(|entry| {
            format!(
                "{} {} {:?} {:?} {}",
                entry.line_number(),
                entry.id(),
                entry.parent_id(),
                entry.kind(),
                entry.raw_line()
            )
        })
        .collect();
    out.extend(diagnostics.iter().map(ToString::to_string));
    out.push(format!(
        "leaf {:?} end {}",
        tree.leaf(),
        tree.ends_without_newline()
    ));
    out
}

/// Streams `bytes` through the indexer in blocks, the text then served from memory.
fn streamed(
    bytes: &[u8],
    hint: usize,
    block: usize,
    overlapped: bool,
) -> Result<(Tree, Vec<Diagnostic>), SessionError> {
    let path = Path::new("awkward.jsonl");
    let mut reader = bytes;
    let (builder, streamed) = if overlapped {
        index_overlapped(path, &mut reader, hint, block)?
    } else {
        index_stream(path, &mut reader, hint, block)?
    };
    assert_eq!(streamed.len, bytes.len());
    builder.finish(
        Text::Memory(bytes.to_vec()),
        streamed.len,
        streamed.ends_without_newline,
    )
}

#[test]
fn reading_in_any_block_size_indexes_like_one_buffer() {
    let bytes = awkward_file();
    let path = Path::new("awkward.jsonl");
    let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
    let expected = summary(&tree, &diagnostics);
    assert_eq!(tree.len(), 4, "{expected:#?}");
    for block in [1, 2, 3, 7, 64, 100, 4096] {
        let (read, read_diagnostics) = streamed(&bytes, 0, block, false).unwrap();
        assert_eq!(summary(&read, &read_diagnostics), expected, "block {block}");
    }
}

#[test]
fn reading_on_a_second_thread_indexes_like_one_buffer() {
    let mut bytes = awkward_file();
    // A line longer than several blocks.
    let long = message("g7", "\"e5\"", &"x".repeat(300));
    let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
    bytes.splice(at..at, format!("{long}\n").into_bytes());
    let path = Path::new("awkward.jsonl");
    let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
    let expected = summary(&tree, &diagnostics);
    assert_eq!(tree.len(), 5, "{expected:#?}");
    let len = bytes.len();
    for block in [1, 2, 3, 7, 64, 100, 4096] {
        // The size read first may be stale: the file grew, or shrank, since.
        for hint in [0, 1, len / 2, len - 1, len, len + 100] {
            let (read, read_diagnostics) = streamed(&bytes, hint, block, true).unwrap();
            assert_eq!(
                summary(&read, &read_diagnostics),
                expected,
                "block {block}, size hint {hint}"
            );
            assert_eq!(read.text_len(), len);
        }
    }
}

#[test]
fn indexing_in_parts_on_threads_indexes_like_one_buffer() {
    let mut bytes = awkward_file();
    // Labels and names set and cleared in different parts; a parent in an earlier part.
    let label = |id: &str, parent: &str, target: &str, text: &str| {
        format!(
            r#"{{"type":"label","id":"{id}","parentId":"{parent}","timestamp":"2026-01-15T10:00:02.000Z","targetId":"{target}","label":{text}}}"#
        )
    };
    let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
    let mut middle = String::new();
    for (n, text) in ["\"one\"", "null", "\"two\""].iter().enumerate() {
        let parent = if n == 0 {
            "e5".to_owned()
        } else {
            format!("l{}", n - 1)
        };
        middle.push_str(&label(&format!("l{n}"), &parent, "a1", text));
        middle.push('\n');
        middle.push_str(&message(&format!("m{n}"), &format!("\"l{n}\""), "filler"));
        middle.push('\n');
    }
    middle.push_str(r#"{"type":"session_info","id":"n1","parentId":"m2","timestamp":"2026-01-15T10:00:03.000Z","name":" named "}"#);
    middle.push('\n');
    bytes.splice(at..at, middle.into_bytes());
    let path = Path::new("awkward.jsonl");
    let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
    let expected = summary(&tree, &diagnostics);
    assert_eq!(tree.label_of("a1"), Some("two"));
    assert_eq!(tree.name(), Some("named"));
    let dir = tempfile::tempdir().unwrap();
    let file_path = dir.path().join("awkward.jsonl");
    std::fs::write(&file_path, &bytes).unwrap();
    let file = File::open(&file_path).unwrap();
    for parts in 2..=7 {
        let (builder, streamed) = index_split(path, &file, bytes.len() as u64, parts)
            .unwrap()
            .unwrap();
        let (read, read_diagnostics) = builder
            .finish(
                Text::Memory(bytes.clone()),
                streamed.len,
                streamed.ends_without_newline,
            )
            .unwrap();
        assert_eq!(summary(&read, &read_diagnostics), expected, "{parts} parts");
        assert_eq!(read.label_of("a1"), Some("two"));
        assert_eq!(read.name(), Some("named"));
    }
}

#[test]
fn a_read_error_on_the_reading_thread_is_reported() {
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(b'\n');
            self.0 -= n;
            Ok(n)
        }
    }
    let error = index_overlapped(Path::new("f.jsonl"), &mut Failing(100), 1000, 16)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("disk gone"), "{error}");
    // A file with no header stops the indexer; the reading thread stops with it.
    let error = index_overlapped(
        Path::new("f.jsonl"),
        &mut b"not a header\n".repeat(1000).as_slice(),
        13_000,
        64,
    )
    .err();
    assert!(matches!(
        error,
        Some(SessionError::MissingHeader { line: 1, .. })
    ));
}

/// A file in Pi's layout (read by the literal scan) indexes exactly like the same file with
/// every entry's keys in another order (read by the full scan): branches, a `leaf` entry
/// that moves the leaf back, labels, a name, a torn line ending in `}` mid-file, a torn
/// last line.
#[test]
fn the_literal_layout_scan_indexes_like_the_full_scan() {
    let ts = "2026-01-15T10:00:01.000Z";
    // (type, id, parent, the rest of the object after the tree fields)
    let entries: Vec<(&str, &str, Option<&str>, String)> = vec![
        (
            "model_change",
            "a1",
            None,
            r#""provider":"p","modelId":"m""#.into(),
        ),
        (
            "message",
            "b2",
            Some("a1"),
            r#""message":{"role":"user","content":"hi {"}"#.into(),
        ),
        (
            "message",
            "c3",
            Some("b2"),
            r#""message":{"role":"assistant","content":[]}"#.into(),
        ),
        // A branch from b2.
        (
            "message",
            "d4",
            Some("b2"),
            r#""message":{"role":"user","content":"other"}"#.into(),
        ),
        (
            "label",
            "e5",
            Some("d4"),
            r#""targetId":"b2","label":"start""#.into(),
        ),
        (
            "session_info",
            "f6",
            Some("e5"),
            r#""name":" named ""#.into(),
        ),
        (
            "message",
            "g7",
            Some("c3"),
            r#""message":{"role":"toolResult","content":[]}"#.into(),
        ),
        // Moves the leaf back to d4: the leaf is not the last entry line.
        ("leaf", "h8", Some("d4"), String::new()),
    ];
    let render = |reordered: bool| {
        let mut text = String::from(HEADER);
        text.push('\n');
        for (n, (kind, id, parent, rest)) in entries.iter().enumerate() {
            let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
            let rest = if rest.is_empty() {
                String::new()
            } else {
                format!(",{rest}")
            };
            let line = if reordered {
                format!(
                    r#"{{"id":"{id}","timestamp":"{ts}","parentId":{parent},"type":"{kind}"{rest}}}"#
                )
            } else {
                format!(
                    r#"{{"type":"{kind}","id":"{id}","parentId":{parent},"timestamp":"{ts}"{rest}}}"#
                )
            };
            text.push_str(&line);
            text.push('\n');
            if n == 2 {
                // A write cut short right after an inner `}`, then the next entries.
                let cut = line.find(r#""content""#).map_or(line.len(), |at| at + 10);
                text.push_str(&line.replace(r#""c3""#, r#""t9""#)[..cut]);
                text.push_str("}\n");
            }
        }
        text.push_str(r#"{"type":"message","id":"z0","parentId":"g7","mess"#);
        text.into_bytes()
    };
    let view = |bytes: Vec<u8>| {
        let (tree, diagnostics) = Tree::parse(Path::new("t.jsonl"), bytes).unwrap();
        let nodes: Vec<String> = tree
            .iter()
            .map(|entry| {
                format!(
                    "{} {} {:?} {:?} {:?}",
                    entry.line_number(),
                    entry.id(),
                    entry.parent_id(),
                    entry.kind(),
                    entry.timestamp_millis()
                )
            })
            .collect();
        let problems: Vec<String> = diagnostics
            .iter()
            .map(|d| {
                let problem = format!("{:?}", d.problem);
                let kind = problem
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or("")
                    .to_owned();
                format!("{} {kind}", d.line)
            })
            .collect();
        let labels: Vec<String> = tree
            .labels()
            .map(|(id, text)| format!("{id}={text}"))
            .collect();
        (
            nodes,
            problems,
            tree.leaf().cloned(),
            labels,
            tree.name().map(str::to_owned),
        )
    };
    let literal = view(render(false));
    let full = view(render(true));
    assert_eq!(literal, full);
    assert_eq!(literal.2.as_ref().map(EntryId::as_str), Some("d4"));
    assert_eq!(literal.0.len(), entries.len());
    assert_eq!(literal.1.len(), 2, "{:?}", literal.1);
    assert_eq!(literal.4.as_deref(), Some("named"));
    assert_eq!(literal.3, ["b2=start"]);
    // The literal scan really is what read the Pi layout.
    let pi = render(false);
    let first = pi.split(|&b| b == b'\n').nth(1).unwrap();
    assert!(scan_pi_tree_fields(first).is_some());
    let other = render(true);
    let first = other.split(|&b| b == b'\n').nth(1).unwrap();
    assert!(scan_pi_tree_fields(first).is_none());
}

/// Torn lines that pass the literal layout scan (cut right after an inner `}`): one with
/// the next write on the same line (Pi appends without a newline), one on a line of its own
/// (strata starts a new line), one as the last entry line. Each is reported as malformed and
/// left out, read from memory and from the file alike; the entries around them stay.
#[test]
fn torn_lines_the_layout_scan_passes_are_found_among_the_childless() {
    let assistant = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"x"}},{{"type":"text","text":"y"}}],"stopReason":"stop","timestamp":1}}}}"#
        )
    };
    let torn = |id: &str, parent: &str| {
        let line = assistant(id, parent);
        let cut = line.find(r#""x"}"#).expect("inner object") + 4;
        line[..cut].to_owned()
    };
    let mut text = format!("{HEADER}\n{}\n", message("a1", "null", "hi"));
    text.push_str(&assistant("b2", "a1"));
    text.push('\n');
    // Line 4: torn t1, and on the same line the next write, c3 (lost with it).
    text.push_str(&torn("t1", "b2"));
    text.push_str(&message("c3", "\"b2\"", "after a crash"));
    text.push('\n');
    // Line 5: d4 continues from c3, which no longer exists.
    text.push_str(&message("d4", "\"c3\"", "next"));
    text.push('\n');
    // Line 6: torn t2 on a line of its own, then e5 from b2 (line 7).
    text.push_str(&torn("t2", "d4"));
    text.push('\n');
    text.push_str(&message("e5", "\"b2\"", "again"));
    text.push('\n');
    // Line 8: a torn last entry line, ended by a newline.
    text.push_str(&torn("t3", "e5"));
    text.push('\n');
    let bytes = text.into_bytes();
    let path = std::env::temp_dir().join(format!("strata-torn-{}.jsonl", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let file = Arc::new(File::open(&path).unwrap());
    let (from_file, file_diagnostics) = Tree::open_file(&path, file).unwrap();
    let (in_memory, diagnostics) = Tree::parse(&path, bytes).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        summary(&from_file, &file_diagnostics),
        summary(&in_memory, &diagnostics)
    );
    let ids: Vec<&str> = in_memory.iter().map(|e| e.id().as_str()).collect();
    assert_eq!(ids, ["a1", "b2", "d4", "e5"]);
    let problems: Vec<(usize, bool)> = diagnostics
        .iter()
        .map(|d| (d.line, matches!(d.problem, Problem::MalformedLine { .. })))
        .collect();
    assert_eq!(
        problems,
        [(4, true), (5, false), (6, true), (8, true)],
        "{diagnostics:?}"
    );
    assert!(matches!(
        &diagnostics[1].problem,
        Problem::UnknownParent { parent, .. } if parent.as_str() == "c3"
    ));
    // The torn last line does not decide the leaf; the entry before it does.
    assert_eq!(in_memory.leaf().map(EntryId::as_str), Some("e5"));
    assert_eq!(in_memory.parent_of("e5").map(EntryId::as_str), Some("b2"));
    assert_eq!(in_memory.children("b2").len(), 1);
    // The torn lines did take the literal layout scan.
    assert!(scan_pi_tree_fields(torn("t2", "d4").as_bytes()).is_some());
    let glued = torn("t1", "b2") + &message("c3", "\"b2\"", "x");
    assert!(scan_pi_tree_fields(glued.as_bytes()).is_some());
}

#[test]
fn the_bracket_count_agrees_with_a_plain_count() {
    let plain = |line: &[u8]| {
        let mut depth = 0i64;
        for &byte in line {
            depth += i64::from(matches!(byte, b'{' | b'['));
            depth -= i64::from(matches!(byte, b'}' | b']'));
        }
        (depth == 0, line.is_ascii())
    };
    // Lengths around the lane width and the flush interval; runs of one bracket long
    // enough to overflow a lane counter that was not flushed.
    let mut seed = 7u64;
    for len in [0, 1, 31, 32, 33, 64, 1919, 1920, 1921, 3841, 5000, 20_000] {
        for pattern in 0..4 {
            let line: Vec<u8> = (0..len)
                .map(|i| match pattern {
                    0 => b'{',
                    1 => [b'{', b'[', b'a'][i % 3],
                    2 => {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        b"{}[]a\"x\xc3"[(seed >> 59) as usize % 8]
                    }
                    _ => {
                        if i < len / 2 {
                            b'['
                        } else {
                            b'}'
                        }
                    }
                })
                .collect();
            assert_eq!(
                bracket_balance_and_ascii(&line),
                plain(&line),
                "length {len}, pattern {pattern}"
            );
        }
    }
}

/// Reading several entries in runs gives each entry exactly as reading it alone does, in
/// any order, with unknown ids, torn and repaired lines among them.
#[test]
fn entries_read_in_runs_are_the_entries_read_one_by_one() {
    let mut bytes = awkward_file();
    let mut more = String::from("\n");
    let mut parent = "e5".to_owned();
    for n in 0..40 {
        let id = format!("r{n:02}");
        more.push_str(&message(
            &id,
            &format!("\"{parent}\""),
            &"y".repeat(n * 500),
        ));
        more.push('\n');
        parent = id;
    }
    // A line of the right shape whose message does not parse as a message.
    more.push_str(r#"{"type":"message","id":"bad","parentId":"r39","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":7}}"#);
    more.push('\n');
    let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
    bytes.splice(at..at, more.into_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let (tree, _) = Tree::open_file(&path, Arc::new(File::open(&path).unwrap())).unwrap();
    let mut ids: Vec<String> = tree.iter().map(|entry| entry.id().to_string()).collect();
    assert!(ids.len() > 40, "{ids:?}");
    let show = |result: Result<Entry, SessionError>| match result {
        Ok(entry) => format!("{entry:?}"),
        Err(error) => format!("error: {error}"),
    };
    for order in 0..3 {
        match order {
            1 => ids.reverse(),
            2 => {
                ids.insert(3, "missing".to_owned());
                ids.swap(10, 20);
                ids.push(ids[5].clone());
            }
            _ => {}
        }
        let alone: Vec<String> = ids.iter().map(|id| show(tree.entry(id))).collect();
        let runs: Vec<String> = tree.entries(&ids).into_iter().map(show).collect();
        assert_eq!(runs, alone, "order {order}");
    }
    assert!(show(tree.entry("bad")).starts_with("error"));
}

#[test]
fn a_line_that_is_not_utf8_is_repaired_reported_and_kept() {
    let (tree, diagnostics) = Tree::parse(Path::new("bad.jsonl"), awkward_file()).unwrap();
    let problems: Vec<(usize, &Problem)> =
        diagnostics.iter().map(|d| (d.line, &d.problem)).collect();
    assert!(
        problems.contains(&(7, &Problem::InvalidUtf8)),
        "{problems:?}"
    );
    assert!(problems.iter().any(|(line, _)| *line == 6), "{problems:?}");
    assert!(problems.iter().any(|(line, _)| *line == 9), "{problems:?}");
    let repaired = tree.get("d4").unwrap();
    assert_eq!(repaired.line_number(), 7);
    assert!(repaired.raw_line().contains('\u{FFFD}'));
    assert!(repaired.raw_line().contains("café"));
    assert!(repaired.entry().is_ok());
    // Its neighbours are untouched and linked through it.
    assert_eq!(tree.parent_of("e5").map(EntryId::as_str), Some("d4"));
    assert!(tree.get("e5").unwrap().raw_line().contains('\u{1F600}'));
    assert_eq!(tree.leaf().map(EntryId::as_str), Some("e5"));
    assert!(tree.ends_without_newline());
}
