//! Property tests of the stream decoders on arbitrary bytes and on mutations of real
//! provider streams: they never panic, split points never change what is decoded, and
//! partial JSON never panics however deep or broken the document is.

use proptest::prelude::*;
use strata_provider::transport::{Flow, FrameDecoder, SseDecoder, parse_partial};

/// The real SSE streams checked in for the Anthropic adapter (the corpus to mutate).
fn sse_corpus() -> Vec<Vec<u8>> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../strata-anthropic/tests/fixtures");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files.sort();
    files
}

/// A real file with a few bytes flipped, inserted or cut out.
fn mutated(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let count = corpus.len();
    (
        0..count,
        proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..12),
    )
        .prop_map(move |(index, edits)| {
            let mut bytes = corpus[index].clone();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    bytes.push(byte);
                    continue;
                }
                let at = at % bytes.len();
                match kind {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ => bytes.truncate(at),
                }
            }
            bytes
        })
}

/// Frames decoded from `input` fed in pieces cut at `cuts`.
fn decode(input: &[u8], cuts: &[usize]) -> Vec<(Option<String>, String)> {
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    let mut sink = |f: strata_provider::transport::Frame<'_>| {
        frames.push((f.event.map(str::to_owned), f.data.to_owned()));
        Flow::Continue
    };
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.sort_unstable();
    let mut last = 0;
    for cut in points.into_iter().chain(std::iter::once(input.len())) {
        decoder.decode(&input[last..cut], &mut sink).unwrap();
        last = cut;
    }
    decoder.finish(&mut sink).unwrap();
    frames
}

fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2048),
        // Bytes from SSE's own alphabet, so that fields, blank lines and CRs meet often.
        proptest::collection::vec(
            prop_oneof![
                Just(b'\n'),
                Just(b'\r'),
                Just(b':'),
                Just(b' '),
                Just(0xEF),
                Just(0xBB),
                Just(0xBF),
                Just(b'd'),
                any::<u8>()
            ],
            0..2048
        )
        .prop_map(|mut v| {
            v.splice(0..0, b"data: ".iter().copied());
            v
        }),
        mutated(sse_corpus()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn sse_decoding_does_not_depend_on_where_chunks_are_cut(
        input in sse_bytes(),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = decode(&input, &[]);
        let pieces = decode(&input, &cuts);
        prop_assert_eq!(whole, pieces);
    }

    #[test]
    fn partial_json_never_panics_on_arbitrary_text(text in ".{0,512}") {
        let _ = parse_partial(&text);
    }

    #[test]
    fn partial_json_of_a_complete_document_is_the_document(value in json_value()) {
        let text = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(parse_partial(&text), Some(value));
        // Every prefix parses without panicking (a UI calls it on every delta).
        for end in (0..text.len()).filter(|i| text.is_char_boundary(*i)) {
            let _ = parse_partial(&text[..end]);
        }
    }
}

/// Test cases per property: `PROPTEST_CASES` when set (long runs), else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[^\"]{0,12}".prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{0,6}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn partial_json_survives_deep_nesting() {
    for open in ["[", "{\"a\":", "[{\"k\":["] {
        let text = open.repeat(200_000);
        let _ = parse_partial(&text);
    }
}
