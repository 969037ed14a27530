//! Indexing a session file: one streaming pass, a reading thread beside the indexer for
//! large files, and parts indexed on several threads and joined.

use super::*;

/// What a streaming pass learned about the text besides its lines.
pub(super) struct Streamed {
    pub(super) len: usize,
    pub(super) ends_without_newline: bool,
}

/// Feeds blocks of a text to a [`Builder`], carrying a line cut by a block's end over to the
/// next block: only that line is copied, never the whole text.
pub(super) struct Stream {
    pub(super) builder: Builder,
    /// The text from `carry_from` on that is not indexed yet.
    pub(super) carry: Vec<u8>,
    pub(super) carry_from: usize,
    pub(super) len: usize,
    pub(super) last_byte: Option<u8>,
}

impl Stream {
    pub(super) fn new(builder: Builder) -> Self {
        let start = builder.next_line;
        Self {
            builder,
            carry: Vec::new(),
            carry_from: start,
            len: start,
            last_byte: None,
        }
    }

    pub(super) fn push(&mut self, block: &[u8]) -> Result<(), SessionError> {
        if block.is_empty() {
            return Ok(());
        }
        let base = self.len;
        self.len += block.len();
        self.last_byte = block.last().copied();
        let mut rest = block;
        if !self.carry.is_empty() {
            let Some(newline) = memchr::memchr(b'\n', block) else {
                // A line longer than a block: indexed once its end has arrived.
                self.carry.extend_from_slice(block);
                return Ok(());
            };
            self.carry.extend_from_slice(&block[..=newline]);
            self.builder.feed(&self.carry, self.carry_from, false)?;
            let indexed = self
                .builder
                .next_line
                .saturating_sub(self.carry_from)
                .min(self.carry.len());
            self.carry.drain(..indexed);
            self.carry_from += indexed;
            rest = &block[newline + 1..];
            if !self.carry.is_empty() {
                self.carry.extend_from_slice(rest);
                return Ok(());
            }
        }
        let rest_base = base + (block.len() - rest.len());
        self.builder.feed(rest, rest_base, false)?;
        let indexed = self
            .builder
            .next_line
            .saturating_sub(rest_base)
            .min(rest.len());
        self.carry_from = rest_base + indexed;
        self.carry.extend_from_slice(&rest[indexed..]);
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<(Builder, Streamed), SessionError> {
        self.builder.feed(&self.carry, self.carry_from, true)?;
        let streamed = Streamed {
            len: self.len,
            ends_without_newline: self.last_byte.is_some_and(|byte| byte != b'\n'),
        };
        Ok((self.builder, streamed))
    }
}

/// Indexes `reader` block by block on this thread.
pub(super) fn index_stream(
    path: &Path,
    reader: &mut impl Read,
    size_hint: usize,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    index_part(Builder::new(path, size_hint), path, reader, block)
}

/// Feeds what `reader` yields to `builder`, which starts at the reader's first byte.
pub(super) fn index_part(
    builder: Builder,
    path: &Path,
    reader: &mut impl Read,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    let mut stream = Stream::new(builder);
    let mut buffer = vec![0u8; block.max(1)];
    loop {
        let read = fill(reader, &mut buffer).map_err(|e| SessionError::io(path, e))?;
        if read == 0 {
            break;
        }
        stream.push(&buffer[..read])?;
    }
    stream.finish()
}

/// Indexes `reader` while a second thread reads ahead into a few recycled blocks.
///
/// Reading a large file is mostly the kernel copying it, about as long as indexing it; on two
/// cores the two overlap. Memory stays at a few blocks whatever the file's size.
pub(super) fn index_overlapped(
    path: &Path,
    reader: &mut (impl Read + Send),
    size_hint: usize,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    let block = block.max(1);
    let mut stream = Stream::new(Builder::new(path, size_hint));
    std::thread::scope(|scope| {
        let (full, filled) =
            std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(BLOCKS_IN_FLIGHT);
        let (recycle, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
        let source = &mut *reader;
        scope.spawn(move || {
            let mut fresh = BLOCKS_IN_FLIGHT + 1;
            loop {
                let mut buffer = match recycled.try_recv() {
                    Ok(buffer) => buffer,
                    Err(_) if fresh > 0 => {
                        fresh -= 1;
                        vec![0u8; block]
                    }
                    // Wait for the indexer to hand one back; it hung up: nothing more to do.
                    Err(_) => match recycled.recv() {
                        Ok(buffer) => buffer,
                        Err(_) => return,
                    },
                };
                buffer.resize(block, 0);
                let result = fill(source, &mut buffer).map(|read| {
                    buffer.truncate(read);
                    buffer
                });
                let last = !matches!(&result, Ok(buffer) if !buffer.is_empty());
                if full.send(result).is_err() || last {
                    return;
                }
            }
        });
        for result in filled {
            let buffer = result.map_err(|e| SessionError::io(path, e))?;
            if buffer.is_empty() {
                break;
            }
            stream.push(&buffer)?;
            // The reader may have finished already: then the block is simply dropped.
            let _ = recycle.send(buffer);
        }
        Ok::<(), SessionError>(())
    })?;
    stream.finish()
}

/// The most parts a file is cut into for indexing on several threads.
pub(super) const MAX_PARTS: usize = 8;

/// Parts smaller than this are not worth a thread.
pub(super) const MIN_PART: u64 = 8 << 20;

/// Indexes a large file in parts on several threads, each reading its own byte range; `None`
/// when the file does not lend itself (one processor, no header where expected, a legacy
/// version whose ids come from line positions), for the caller to index it in one stream.
pub(super) fn index_in_parts(
    path: &Path,
    file: &File,
    size: u64,
) -> Option<Result<(Builder, Streamed), SessionError>> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let parts = threads.min(MAX_PARTS).min((size / MIN_PART) as usize);
    if parts < 2 {
        return None;
    }
    index_split(path, file, size, parts)
}

/// [`index_in_parts`] with the number of parts given.
pub(super) fn index_split(
    path: &Path,
    file: &File,
    size: u64,
    parts: usize,
) -> Option<Result<(Builder, Streamed), SessionError>> {
    let (header, _) = header_of(file)?;
    if header.effective_version() < 2 {
        return None;
    }
    // Each part starts after a newline, so that no line is cut between two parts.
    let mut starts = vec![0u64];
    for part in 1..parts {
        let guess = size / parts as u64 * part as u64;
        let start = line_start_after(file, guess.max(starts[starts.len() - 1]))?;
        if start < size {
            starts.push(start);
        }
    }
    let mut ends: Vec<Option<u64>> = starts.iter().skip(1).map(|&start| Some(start)).collect();
    // The last part reads to the end, wherever it is by then.
    ends.push(None);
    let outcome = std::thread::scope(|scope| {
        let workers: Vec<_> = starts
            .iter()
            .zip(&ends)
            .skip(1)
            .map(|(&start, &end)| {
                let header = &header;
                scope.spawn(move || {
                    let text_len = end.unwrap_or(size).saturating_sub(start) as usize;
                    let builder = Builder::for_part(path, header, start as usize, text_len);
                    let mut reader = RangeReader {
                        file,
                        position: start,
                        end,
                    };
                    index_part(builder, path, &mut reader, READ_BLOCK)
                })
            })
            .collect();
        let mut reader = RangeReader {
            file,
            position: 0,
            end: ends[0],
        };
        let first = index_part(
            Builder::new(path, starts.get(1).copied().unwrap_or(size) as usize),
            path,
            &mut reader,
            READ_BLOCK,
        );
        let rest: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                worker.join().unwrap_or_else(|_| {
                    Err(SessionError::io(
                        path,
                        std::io::Error::other("an indexing thread panicked"),
                    ))
                })
            })
            .collect();
        (first, rest)
    });
    let (first, rest) = outcome;
    Some((|| {
        let (mut builder, mut streamed) = first?;
        for part in rest {
            let (next, next_streamed) = part?;
            builder.join(next);
            streamed = next_streamed;
        }
        Ok((builder, streamed))
    })())
}

/// The header of a file and where the line after it starts, from its first megabyte.
pub(super) fn header_of(file: &File) -> Option<(SessionHeader, u64)> {
    let mut prefix = vec![0u8; 1 << 20];
    let read = read_at_most(file, &mut prefix, 0).ok()?;
    let prefix = &prefix[..read];
    let mut start = 0;
    loop {
        let end = start + memchr::memchr(b'\n', &prefix[start..])?;
        let line = &prefix[start..end];
        if !line.iter().all(|byte| matches!(byte, b' ' | b'\t' | b'\r')) {
            let header = SessionHeader::parse(std::str::from_utf8(line).ok()?)?;
            return Some((header, end as u64 + 1));
        }
        start = end + 1;
    }
}

/// The offset just after the first newline at or after `from` (within the next megabyte).
pub(super) fn line_start_after(file: &File, from: u64) -> Option<u64> {
    let mut window = vec![0u8; 1 << 20];
    let read = read_at_most(file, &mut window, from).ok()?;
    memchr::memchr(b'\n', &window[..read]).map(|at| from + at as u64 + 1)
}
