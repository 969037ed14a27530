//! Property tests of the AWS event-stream decoder on arbitrary bytes and on mutations of the
//! real transcripts: no panic, split points never change the outcome, and the buffer never
//! holds more than one maximal message plus the chunk just pushed.

use proptest::prelude::*;
use strata_bedrock::eventstream::EventStreamDecoder;

/// Largest message the decoder accepts (its `MAX_MESSAGE`).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

fn corpus() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    files.sort();
    files
}

/// A real transcript with a few bytes flipped, inserted or cut out.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let corpus = corpus();
    let count = corpus.len();
    (
        0..count,
        proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..8),
    )
        .prop_map(move |(index, edits)| {
            let mut bytes = corpus[index].clone();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    break;
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

/// A decoded message (its event type and payload), or the error that ended decoding.
type Decoded = Result<(Option<String>, Vec<u8>), String>;

/// Messages and the first error, decoding `input` pushed in pieces cut at `cuts`.
fn decode(input: &[u8], cuts: &[usize]) -> Vec<Decoded> {
    let mut decoder = EventStreamDecoder::new();
    let mut out = Vec::new();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.sort_unstable();
    let mut last = 0;
    for cut in points.into_iter().chain(std::iter::once(input.len())) {
        let chunk = &input[last..cut];
        last = cut;
        decoder.push(chunk);
        loop {
            match decoder.next_message() {
                Ok(Some(message)) => out.push(Ok((
                    message.header(":event-type").map(str::to_owned),
                    message.payload.to_vec(),
                ))),
                Ok(None) => break,
                Err(error) => {
                    out.push(Err(error.to_string()));
                    return out;
                }
            }
        }
        assert!(decoder.buffered() <= MAX_MESSAGE + chunk.len());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn decoding_does_not_depend_on_where_chunks_are_cut(
        input in prop_oneof![proptest::collection::vec(any::<u8>(), 0..4096), mutated()],
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        prop_assert_eq!(decode(&input, &[]), decode(&input, &cuts));
    }
}

/// Test cases per property: `PROPTEST_CASES` when set (long runs), else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

#[test]
fn the_corpus_decodes_cleanly() {
    for file in corpus() {
        let messages = decode(&file, &[]);
        assert!(!messages.is_empty());
    }
}
