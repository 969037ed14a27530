//! Positional reads of a session file, so that threads and the tree's lazy line reads share
//! one handle.

use super::*;

/// A byte range of a file read with positioned reads, so that threads share the handle.
pub(super) struct RangeReader<'a> {
    pub(super) file: &'a File,
    pub(super) position: u64,
    /// Exclusive; `None`: to the end of the file.
    pub(super) end: Option<u64>,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let want = match self.end {
            Some(end) => buffer.len().min(end.saturating_sub(self.position) as usize),
            None => buffer.len(),
        };
        if want == 0 {
            return Ok(0);
        }
        let read = read_some_at(self.file, &mut buffer[..want], self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

/// Reads at `offset` until `buffer` is full or the file ends; returns how much was read.
pub(super) fn read_at_most(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buffer.len() {
        match read_some_at(file, &mut buffer[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(read) => done += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(done)
}

/// One positioned read.
pub(super) fn read_some_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buffer, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        file.seek_read(buffer, offset)
    }
}

/// Reads exactly `buffer.len()` bytes at `offset` without moving the file's position.
pub(crate) fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buffer, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < buffer.len() {
            match file.seek_read(&mut buffer[done..], offset + done as u64) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(read) => done += read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// Reads until `block` is full or the input ends; returns how much was read.
pub(super) fn fill(reader: &mut impl Read, block: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < block.len() {
        match reader.read(&mut block[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}
