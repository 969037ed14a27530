//! Work on a long list split into chunks that the machine's processors take one at a time, so
//! that a thread that is slowed (fresh memory to fault in, longer items) takes fewer of them
//! instead of holding the others up at the end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};

/// The processors this process may use, asked once (the answer reads cgroup files each time).
pub(crate) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `map` of each chunk of `items`, concatenated in order; chunks are taken by up to
/// `threads` threads (the caller's among them). A chunk whose thread panicked is mapped again
/// on the caller's thread, where a bug shows.
pub(crate) fn map_chunks<T, R, F>(items: &[T], chunk: usize, threads: usize, map: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> Vec<R> + Sync,
{
    let chunks: Vec<&[T]> = items.chunks(chunk.max(1)).collect();
    let helpers = threads.min(chunks.len()).saturating_sub(1);
    if helpers == 0 {
        return chunks.into_iter().flat_map(&map).collect();
    }
    let next = AtomicUsize::new(0);
    let take_chunks = || {
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(index) else {
                return done;
            };
            done.push((index, map(chunk)));
        }
    };
    let mut mapped: Vec<Option<Vec<R>>> =
        std::iter::repeat_with(|| None).take(chunks.len()).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..helpers).map(|_| scope.spawn(take_chunks)).collect();
        let mine = take_chunks();
        for done in workers
            .into_iter()
            .filter_map(|worker| worker.join().ok())
            .chain([mine])
        {
            for (index, results) in done {
                mapped[index] = Some(results);
            }
        }
    });
    mapped
        .into_iter()
        .zip(&chunks)
        .flat_map(|(results, chunk)| results.unwrap_or_else(|| map(chunk)))
        .collect()
}

/// What [`write_chunks`] prints each chunk with, into a buffer: printers write a few bytes at
/// a time, or copy whole runs of bytes they already hold.
pub(crate) trait ChunkPrinter<T>: Sync {
    /// The printer's error.
    type Error: Send;

    /// Appends chunk `index` of the items to `out`.
    fn print(&self, index: usize, chunk: &[T], out: &mut Vec<u8>) -> Result<(), Self::Error>;

    /// The error a failed write to the writer is.
    fn io_error(&self, error: std::io::Error) -> Self::Error;
}

/// Writes `printer`'s print of each chunk of `items` to `writer`, in order, the chunks
/// printed by up to `threads` threads. The caller's thread writes: each chunk is printed into
/// a buffer that is written when its turn comes and then reused, so the memory held is the
/// chunks printed ahead of the writer, not the whole output.
pub(crate) fn write_chunks<T, W, P>(
    items: &[T],
    chunk: usize,
    threads: usize,
    writer: &mut W,
    printer: &P,
) -> Result<(), P::Error>
where
    T: Sync,
    W: std::io::Write,
    P: ChunkPrinter<T>,
{
    let chunks: Vec<&[T]> = items.chunks(chunk.max(1)).collect();
    let helpers = threads.min(chunks.len()).saturating_sub(1);
    if helpers == 0 {
        let mut buffer = Vec::new();
        for (index, chunk) in chunks.iter().enumerate() {
            buffer.clear();
            printer.print(index, chunk, &mut buffer)?;
            writer
                .write_all(&buffer)
                .map_err(|error| printer.io_error(error))?;
        }
        return Ok(());
    }
    let shared = Printed::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (0..helpers)
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(index) else {
                            return;
                        };
                        // Filed even if `print` panics: the writer then prints it itself.
                        let mut slot = Slot {
                            shared: &shared,
                            index,
                            printed: None,
                        };
                        let mut buffer = shared.spare_buffer();
                        slot.printed =
                            Some(printer.print(index, chunk, &mut buffer).map(|()| buffer));
                    }
                })
            })
            .collect();
        let written = write_in_order(&chunks, &next, &shared, writer, printer);
        if written.is_err() {
            // Nothing more is worth printing.
            next.store(chunks.len(), Ordering::Relaxed);
        }
        // Joined here, so that a helper's panic (its chunk already printed again) is not
        // raised again by the scope.
        for helper in helpers {
            let _ = helper.join();
        }
        written
    })
}

/// The writer's side of [`write_chunks`]: the next chunk from the helpers when it is there,
/// else one more taken and printed here.
fn write_in_order<T, W, P>(
    chunks: &[&[T]],
    next: &AtomicUsize,
    shared: &Printed<P::Error>,
    writer: &mut W,
    printer: &P,
) -> Result<(), P::Error>
where
    W: std::io::Write,
    P: ChunkPrinter<T>,
{
    let mut written = 0;
    while written < chunks.len() {
        if let Some(ready) = shared.take(written) {
            match ready {
                Some(Ok(buffer)) => {
                    writer
                        .write_all(&buffer)
                        .map_err(|error| printer.io_error(error))?;
                    shared.recycle(buffer);
                }
                Some(Err(error)) => return Err(error),
                None => print_now(written, chunks[written], shared, writer, printer)?,
            }
            written += 1;
            continue;
        }
        let index = next.fetch_add(1, Ordering::Relaxed);
        match chunks.get(index) {
            Some(chunk) if index == written => {
                print_now(index, chunk, shared, writer, printer)?;
                written += 1;
            }
            Some(chunk) => {
                let mut buffer = shared.spare_buffer();
                let printed = printer.print(index, chunk, &mut buffer).map(|()| buffer);
                shared.file(index, Some(printed));
            }
            // Everything is taken: wait for the chunk that is next.
            None => shared.wait_for(written),
        }
    }
    Ok(())
}

/// Prints chunk `index`, which is next, and writes it.
fn print_now<T, W, P>(
    index: usize,
    chunk: &[T],
    shared: &Printed<P::Error>,
    writer: &mut W,
    printer: &P,
) -> Result<(), P::Error>
where
    W: std::io::Write,
    P: ChunkPrinter<T>,
{
    let mut buffer = shared.spare_buffer();
    printer.print(index, chunk, &mut buffer)?;
    writer
        .write_all(&buffer)
        .map_err(|error| printer.io_error(error))?;
    shared.recycle(buffer);
    Ok(())
}

/// What a chunk's printer hands back: its bytes, its error, or `None` when it panicked.
type Ready<E> = Option<Result<Vec<u8>, E>>;

/// The chunks printed ahead of the writer, and buffers to print into.
struct Printed<E> {
    ready: Mutex<BTreeMap<usize, Ready<E>>>,
    filed: Condvar,
    spare: Mutex<Vec<Vec<u8>>>,
}

impl<E> Default for Printed<E> {
    fn default() -> Self {
        Self {
            ready: Mutex::new(BTreeMap::new()),
            filed: Condvar::new(),
            spare: Mutex::new(Vec::new()),
        }
    }
}

impl<E> Printed<E> {
    fn file(&self, index: usize, printed: Ready<E>) {
        self.ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(index, printed);
        self.filed.notify_all();
    }

    fn take(&self, index: usize) -> Option<Ready<E>> {
        self.ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&index)
    }

    fn wait_for(&self, index: usize) {
        let ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        drop(
            self.filed
                .wait_while(ready, |ready| !ready.contains_key(&index))
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    fn spare_buffer(&self) -> Vec<u8> {
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_default()
    }

    fn recycle(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(buffer);
    }
}

/// A chunk a helper took: filed when dropped, with what it printed or, after a panic, `None`.
struct Slot<'a, E> {
    shared: &'a Printed<E>,
    index: usize,
    printed: Ready<E>,
}

impl<E> Drop for Slot<'_, E> {
    fn drop(&mut self) {
        self.shared.file(self.index, self.printed.take());
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn chunks_map_in_order_on_any_number_of_threads() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            for chunk in [1, 7, 256, 5000] {
                let mapped = map_chunks(&items, chunk, threads, |part| {
                    part.iter().map(|n| n * 2).collect()
                });
                let expected: Vec<usize> = items.iter().map(|n| n * 2).collect();
                assert_eq!(mapped, expected, "{threads} threads, chunks of {chunk}");
            }
        }
    }

    #[test]
    fn a_chunk_whose_thread_panicked_is_mapped_again() {
        let items: Vec<usize> = (0..100).collect();
        // Every helper panics on the first chunk it takes.
        let caller = std::thread::current().id();
        let mapped = map_chunks(&items, 10, 2, |part| {
            assert!(std::thread::current().id() == caller, "a helper's bug");
            part.to_vec()
        });
        assert_eq!(mapped, items);
    }

    /// Prints `index:n,` for each item; fails on the item `fail`, and panics on every thread
    /// but `panic_off`.
    struct Numbers {
        fail: Option<usize>,
        panic_off: Option<std::thread::ThreadId>,
    }

    const PLAIN: Numbers = Numbers {
        fail: None,
        panic_off: None,
    };

    impl ChunkPrinter<usize> for Numbers {
        type Error = std::io::Error;

        fn print(&self, index: usize, part: &[usize], out: &mut Vec<u8>) -> std::io::Result<()> {
            if let Some(caller) = self.panic_off {
                assert!(std::thread::current().id() == caller, "a helper's bug");
            }
            if self.fail.is_some_and(|fail| part.contains(&fail)) {
                return Err(std::io::Error::other("no"));
            }
            for n in part {
                write!(out, "{index}:{n},")?;
            }
            Ok(())
        }

        fn io_error(&self, error: std::io::Error) -> std::io::Error {
            error
        }
    }

    #[test]
    fn chunks_are_written_in_order_on_any_number_of_threads() {
        let items: Vec<usize> = (0..500).collect();
        let mut expected = Vec::new();
        for (index, part) in items.chunks(9).enumerate() {
            PLAIN.print(index, part, &mut expected).expect("printed");
        }
        for threads in [1, 2, 4] {
            let mut written = Vec::new();
            write_chunks(&items, 9, threads, &mut written, &PLAIN).expect("written");
            assert_eq!(written, expected, "{threads} threads");
        }
    }

    #[test]
    fn a_printer_error_is_returned_and_a_panicked_chunk_printed_by_the_writer() {
        let items: Vec<usize> = (0..200).collect();
        let failing = Numbers {
            fail: Some(150),
            panic_off: None,
        };
        let mut written = Vec::new();
        let error = write_chunks(&items, 10, 2, &mut written, &failing).expect_err("fails");
        assert_eq!(error.to_string(), "no");

        // Every helper panics on the first chunk it takes.
        let panicking = Numbers {
            fail: None,
            panic_off: Some(std::thread::current().id()),
        };
        let mut expected = Vec::new();
        write_chunks(&items, 10, 1, &mut expected, &PLAIN).expect("written");
        let mut written = Vec::new();
        write_chunks(&items, 10, 2, &mut written, &panicking).expect("written");
        assert_eq!(written, expected);
    }
}
