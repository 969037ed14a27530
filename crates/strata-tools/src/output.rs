//! Collecting a command's output with bounded memory, spilling the whole of it to a temp file
//! once it outgrows the limits.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::truncate::{Truncation, truncate_tail};

/// Collects output bytes: keeps a bounded tail in memory and, past the limits, the full output
/// in a temp file.
#[derive(Debug)]
pub(crate) struct OutputSink {
    max_lines: usize,
    max_bytes: usize,
    temp_dir: PathBuf,
    /// Most bytes the full-output file may hold; the rest is counted, not kept.
    max_file_bytes: u64,
    total_bytes: u64,
    newlines: usize,
    /// Bytes since the last newline: the length of the line being written, however long.
    current_line_bytes: u64,
    /// Bytes written to the full-output file.
    file_bytes: u64,
    /// Everything so far, until the output spills to a file.
    head: Vec<u8>,
    /// The most recent bytes (bounded), for the tail shown to the model.
    tail: Vec<u8>,
    /// Whether `tail` was cut at a point that is not a line start.
    tail_cut_mid_line: bool,
    file: Option<(File, PathBuf)>,
    file_error: Option<String>,
}

/// What the model sees of the output so far.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) truncation: Truncation,
    pub(crate) full_output_path: Option<PathBuf>,
}

impl Snapshot {
    /// `{truncation?, fullOutputPath?}` for a result's details.
    pub(crate) fn details(&self) -> Value {
        let mut map = serde_json::Map::new();
        if self.truncation.truncated {
            map.insert("truncation".to_owned(), json!(self.truncation));
        }
        if let Some(path) = &self.full_output_path {
            map.insert(
                "fullOutputPath".to_owned(),
                json!(path.display().to_string()),
            );
        }
        Value::Object(map)
    }
}

impl OutputSink {
    pub(crate) fn new(
        max_lines: usize,
        max_bytes: usize,
        max_file_bytes: u64,
        temp_dir: &Path,
    ) -> Self {
        Self {
            max_lines,
            max_bytes,
            max_file_bytes,
            temp_dir: temp_dir.to_path_buf(),
            total_bytes: 0,
            newlines: 0,
            current_line_bytes: 0,
            file_bytes: 0,
            head: Vec::new(),
            tail: Vec::new(),
            tail_cut_mid_line: false,
            file: None,
            file_error: None,
        }
    }

    fn over_limits(&self) -> bool {
        self.total_bytes > self.max_bytes as u64 || self.newlines + 1 > self.max_lines
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.newlines += memchr_count(chunk);
        self.current_line_bytes = match chunk.iter().rposition(|&b| b == b'\n') {
            Some(i) => (chunk.len() - i - 1) as u64,
            None => self.current_line_bytes + chunk.len() as u64,
        };
        self.tail.extend_from_slice(chunk);
        let keep = self.max_bytes.saturating_mul(2).max(1);
        if self.tail.len() > keep.saturating_mul(2) {
            let cut = self.tail.len() - keep;
            self.tail_cut_mid_line = self.tail[cut - 1] != b'\n';
            self.tail.drain(..cut);
        }
        if self.file.is_some() {
            self.write_to_file(chunk);
            return;
        }
        self.head.extend_from_slice(chunk);
        if self.over_limits() {
            self.spill();
        }
    }

    fn spill(&mut self) {
        if self.file_error.is_some() {
            self.head.clear();
            return;
        }
        let created = tempfile::Builder::new()
            .prefix("strata-bash-")
            .suffix(".log")
            .tempfile_in(&self.temp_dir)
            .and_then(|temp| temp.keep().map_err(|e| e.error));
        match created {
            Ok((file, path)) => {
                self.file = Some((file, path));
                let head = std::mem::take(&mut self.head);
                self.write_to_file(&head);
            }
            Err(e) => self.file_error = Some(e.to_string()),
        }
        self.head = Vec::new();
    }

    /// Appends to the full-output file up to its size limit.
    fn write_to_file(&mut self, chunk: &[u8]) {
        let Some((file, _)) = &mut self.file else {
            return;
        };
        let room = self.max_file_bytes.saturating_sub(self.file_bytes);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len());
        if take == 0 {
            return;
        }
        match file.write_all(&chunk[..take]) {
            Ok(()) => self.file_bytes += take as u64,
            Err(e) => self.file_error = Some(e.to_string()),
        }
    }

    /// Whether the full-output file stopped at its size limit before the output ended.
    pub(crate) fn file_capped(&self) -> Option<u64> {
        (self.file.is_some() && self.total_bytes > self.file_bytes).then_some(self.file_bytes)
    }

    /// Flushes the full-output file, if there is one.
    pub(crate) fn finish(&mut self) {
        if let Some((file, _)) = &mut self.file
            && let Err(e) = file.flush()
        {
            self.file_error = Some(e.to_string());
        }
    }

    /// A problem writing the full-output file, if one happened.
    pub(crate) fn file_error(&self) -> Option<&str> {
        self.file_error.as_deref()
    }

    /// Bytes of the last (unfinished or final) line, counted over the whole output.
    pub(crate) fn last_line_bytes(&self) -> u64 {
        self.current_line_bytes
    }

    /// The tail of the output that fits the limits, and the facts about the cut.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut start = 0;
        if self.tail_cut_mid_line
            && let Some(i) = self.tail.iter().position(|&b| b == b'\n')
        {
            start = i + 1;
        }
        while start < self.tail.len() && (self.tail[start] & 0xC0) == 0x80 {
            start += 1;
        }
        let text = String::from_utf8_lossy(&self.tail[start..]);
        let mut truncation = truncate_tail(&text, self.max_lines, self.max_bytes);
        let truncated = self.over_limits();
        truncation.truncated = truncated;
        if truncated && truncation.truncated_by.is_none() {
            truncation.truncated_by = Some(if self.total_bytes > self.max_bytes as u64 {
                crate::truncate::TruncatedBy::Bytes
            } else {
                crate::truncate::TruncatedBy::Lines
            });
        }
        truncation.total_lines = self.newlines + 1;
        truncation.total_bytes = usize::try_from(self.total_bytes).unwrap_or(usize::MAX);
        Snapshot {
            truncation,
            full_output_path: self.file.as_ref().map(|(_, path)| path.clone()),
        }
    }
}

fn memchr_count(chunk: &[u8]) -> usize {
    chunk.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(10, 100, u64::MAX, dir.path());
        sink.push(b"a\nb\n");
        sink.finish();
        let snap = sink.snapshot();
        assert!(!snap.truncation.truncated);
        assert_eq!(snap.truncation.content, "a\nb\n");
        assert!(snap.full_output_path.is_none());
    }

    #[test]
    fn large_output_spills_everything_to_a_file_and_keeps_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(5, 1000, u64::MAX, dir.path());
        let mut all = String::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.push_str(&line);
            sink.push(line.as_bytes());
        }
        sink.finish();
        let snap = sink.snapshot();
        assert!(snap.truncation.truncated);
        assert_eq!(
            snap.truncation.content,
            "line 996\nline 997\nline 998\nline 999\n"
        );
        assert_eq!(snap.truncation.total_lines, 1001);
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), all);
    }

    #[test]
    fn a_line_longer_than_the_kept_tail_is_measured_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(2000, 50 * 1024, 1024, dir.path());
        sink.push(b"first\n");
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..160 {
            sink.push(&chunk);
        }
        assert_eq!(sink.last_line_bytes(), 160 * 64 * 1024);
        sink.push(b"\nend");
        assert_eq!(sink.last_line_bytes(), 3);
    }

    #[test]
    fn the_full_output_file_stops_at_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(5, 100, 4096, dir.path());
        let chunk = vec![b'y'; 1000];
        for _ in 0..100 {
            sink.push(&chunk);
        }
        sink.finish();
        let path = sink.snapshot().full_output_path.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert_eq!(sink.file_capped(), Some(4096));
        assert_eq!(sink.snapshot().truncation.total_bytes, 100_000);
    }
}
