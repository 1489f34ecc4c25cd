//! Reading a log a slice of whole lines at a time, for the parsers that stream
//! ([`spool::import::parse_slice`]): what a host holds of a file is one slice (or its
//! longest line), whatever the file's size.

use std::io::BufRead;

/// Slices of whole lines of a reader, each at most `max_bytes` unless one line is
/// longer (it is then a slice of its own), the last ending where the reader ends (a
/// line cut short there included).
///
/// ```
/// use spool_host::LineSlices;
///
/// let mut slices = LineSlices::new(&b"one\ntwo\nthree\ncut"[..], 8);
/// let mut slice = Vec::new();
/// let mut seen = Vec::new();
/// while let Some(last) = slices.next_into(&mut slice)? {
///     seen.push((String::from_utf8(slice.clone()).unwrap(), last));
/// }
/// assert_eq!(seen, [("one\ntwo\n".into(), false), ("three\ncut".into(), true)]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct LineSlices<R> {
    reader: R,
    max_bytes: usize,
    /// Bytes handed out so far.
    read: u64,
    done: bool,
}

impl<R: BufRead> LineSlices<R> {
    /// Slices of `reader` of about `max_bytes` each.
    pub fn new(reader: R, max_bytes: usize) -> Self {
        LineSlices {
            reader,
            max_bytes,
            read: 0,
            done: false,
        }
    }

    /// Reads the next slice into `slice` (replacing what it held): `Some(last)`, where
    /// `last` says it ends the reader, or `None` when nothing is left.
    pub fn next_into(&mut self, slice: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
        slice.clear();
        if self.done {
            return Ok(None);
        }
        let last = loop {
            let n = self.reader.read_until(b'\n', slice)?;
            if n == 0 || !slice.ends_with(b"\n") {
                break true;
            }
            if slice.len() >= self.max_bytes {
                // The next read tells whether this slice is the last.
                break self.reader.fill_buf()?.is_empty();
            }
        };
        self.done = last;
        self.read += slice.len() as u64;
        if slice.is_empty() {
            return Ok(None);
        }
        Ok(Some(last))
    }

    /// Bytes read so far.
    pub fn read(&self) -> u64 {
        self.read
    }
}
