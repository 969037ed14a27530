//! Reading a window of lines from a text file with bounded memory, however large the file.

use std::io::{self, BufRead, BufReader, Read};

/// How many leading bytes decide whether a file is binary.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8192;

/// What a scan found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// A NUL byte near the start: not text.
    Binary,
    /// Text: the kept lines of the window and the counts around them.
    Text(Window),
}

/// Lines `start..` of a file, kept until `keep_lines` lines or more than `keep_bytes` bytes
/// (a line is cut at `keep_bytes + 1` bytes, so an over-long line still shows as over-long).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// Lines in the file; a final newline ends the last line, it does not start another.
    pub(crate) total_lines: usize,
    /// The kept lines, without their newlines.
    pub(crate) kept: Vec<Vec<u8>>,
    /// Full length in bytes of the window's first line.
    pub(crate) first_line_bytes: u64,
    /// Bytes of the window's lines `start..start + window_lines`, newlines between them counted.
    pub(crate) window_bytes: u64,
}

/// Scans `reader` once, keeping at most `keep_lines` lines from line `start` (0-indexed) and
/// counting the bytes of the `window_lines` lines from `start`.
pub(crate) fn scan_lines<R: Read>(
    reader: R,
    start: usize,
    window_lines: usize,
    keep_lines: usize,
    keep_bytes: usize,
) -> io::Result<Scan> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut sniffed = false;
    let mut line = 0usize;
    let mut line_len = 0u64;
    let mut current: Vec<u8> = Vec::new();
    let mut window = Window {
        total_lines: 0,
        kept: Vec::new(),
        first_line_bytes: 0,
        window_bytes: 0,
    };
    let mut kept_bytes = 0usize;
    let mut keeping = true;
    let window_end = start.saturating_add(window_lines);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        if !sniffed {
            sniffed = true;
            if buf[..buf.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
                return Ok(Scan::Binary);
            }
        }
        let mut pos = 0;
        while pos < buf.len() {
            let newline = memchr::memchr(b'\n', &buf[pos..]);
            let end = newline.map_or(buf.len(), |i| pos + i);
            let segment = &buf[pos..end];
            let in_window = line >= start && line < window_end;
            if in_window && keeping && window.kept.len() < keep_lines {
                let room = (keep_bytes + 1).saturating_sub(current.len());
                current.extend_from_slice(&segment[..segment.len().min(room)]);
            }
            line_len += segment.len() as u64;
            if newline.is_some() {
                finish_line(
                    &mut window,
                    &mut current,
                    line,
                    line_len,
                    start,
                    window_end,
                    (&mut keeping, &mut kept_bytes, keep_lines, keep_bytes),
                );
                line += 1;
                line_len = 0;
                pos = end + 1;
            } else {
                pos = end;
            }
        }
        let consumed = buf.len();
        reader.consume(consumed);
    }
    if line_len > 0 {
        finish_line(
            &mut window,
            &mut current,
            line,
            line_len,
            start,
            window_end,
            (&mut keeping, &mut kept_bytes, keep_lines, keep_bytes),
        );
        line += 1;
    }
    window.total_lines = line;
    Ok(Scan::Text(window))
}

fn finish_line(
    window: &mut Window,
    current: &mut Vec<u8>,
    line: usize,
    line_len: u64,
    start: usize,
    window_end: usize,
    (keeping, kept_bytes, keep_lines, keep_bytes): (&mut bool, &mut usize, usize, usize),
) {
    if line < start || line >= window_end {
        return;
    }
    if line == start {
        window.first_line_bytes = line_len;
    } else {
        window.window_bytes += 1;
    }
    window.window_bytes += line_len;
    if *keeping && window.kept.len() < keep_lines {
        *kept_bytes += current.len() + usize::from(!window.kept.is_empty());
        window.kept.push(std::mem::take(current));
        if *kept_bytes > keep_bytes {
            *keeping = false;
        }
    }
    current.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(scan: Scan) -> Window {
        match scan {
            Scan::Text(window) => window,
            Scan::Binary => panic!("expected text"),
        }
    }

    #[test]
    fn counts_lines_with_and_without_a_final_newline() {
        let w = text(scan_lines(&b"a\nb\n"[..], 0, usize::MAX, 10, 100).unwrap());
        assert_eq!(w.total_lines, 2);
        assert_eq!(w.kept, vec![b"a".to_vec(), b"b".to_vec()]);
        let w = text(scan_lines(&b"a\nb"[..], 0, usize::MAX, 10, 100).unwrap());
        assert_eq!(w.total_lines, 2);
        let w = text(scan_lines(&b""[..], 0, usize::MAX, 10, 100).unwrap());
        assert_eq!(w.total_lines, 0);
    }

    #[test]
    fn keeps_only_the_window_and_counts_its_bytes() {
        let w = text(scan_lines(&b"l1\nl2\nl3\nl4\n"[..], 1, 2, 10, 100).unwrap());
        assert_eq!(w.kept, vec![b"l2".to_vec(), b"l3".to_vec()]);
        assert_eq!(w.window_bytes, 5);
        assert_eq!(w.first_line_bytes, 2);
        assert_eq!(w.total_lines, 4);
    }

    #[test]
    fn stops_keeping_past_the_byte_budget_and_caps_a_long_line() {
        let data = format!("{}\nshort\n", "x".repeat(1000));
        let w = text(scan_lines(data.as_bytes(), 0, usize::MAX, 10, 10).unwrap());
        assert_eq!(w.kept.len(), 1);
        assert_eq!(w.kept[0].len(), 11);
        assert_eq!(w.first_line_bytes, 1000);
        assert_eq!(w.total_lines, 2);
    }

    #[test]
    fn a_nul_byte_at_the_start_means_binary() {
        assert_eq!(
            scan_lines(&b"ab\0cd"[..], 0, 1, 1, 1).unwrap(),
            Scan::Binary
        );
    }
}
