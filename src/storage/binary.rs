//! The pieces binary records are made of: LEB128 varints, length-prefixed bytes, and a
//! reader that turns every overrun or malformed part into a typed
//! [`Error::Corruption`] naming the record's key (never a panic).

use crate::engine::error::Error;
use crate::storage::keys;

/// Appends `n` as an unsigned LEB128 varint (1 to 10 bytes).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends `bytes` after their length as a varint.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads the parts of the record stored under `key`, front to back.
pub(crate) struct Reader<'a> {
    /// What is left to read.
    pub(crate) rest: &'a [u8],
    key: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `value`, the record stored under `key`.
    pub(crate) fn new(key: &'a [u8], value: &'a [u8]) -> Self {
        Reader { rest: value, key }
    }

    /// The key of the record it reads.
    pub(crate) fn key(&self) -> &'a [u8] {
        self.key
    }

    /// The `corruption` of this record, with `detail`.
    pub(crate) fn corrupt(&self, detail: &str) -> Error {
        Error::Corruption {
            key: keys::display(self.key),
            detail: detail.to_owned(),
        }
    }

    /// One byte.
    pub(crate) fn byte(&mut self) -> Result<u8, Error> {
        let (&b, rest) = self
            .rest
            .split_first()
            .ok_or_else(|| self.corrupt("record ends early"))?;
        self.rest = rest;
        Ok(b)
    }

    /// A varint written by [`put_varint`]; one above `u64::MAX` is `corruption`.
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        // Most numbers are one byte.
        if let Some((&b, rest)) = self.rest.split_first()
            && b < 0x80
        {
            self.rest = rest;
            return Ok(u64::from(b));
        }
        self.long_varint()
    }

    /// [`Reader::varint`] of more than one byte (or none).
    #[cold]
    fn long_varint(&mut self) -> Result<u64, Error> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                break;
            }
            n |= part << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(self.corrupt("record holds an overlong number"))
    }

    /// A varint that must fit a `u32`; `what` names it in the error.
    pub(crate) fn small(&mut self, what: &str) -> Result<u32, Error> {
        let n = self.varint()?;
        u32::try_from(n).map_err(|_| self.corrupt(&format!("{what} {n} is out of range")))
    }

    /// A count of the items that follow, each taking at least `min_bytes`: a count
    /// beyond what the rest of the record can hold is `corruption` (so it is never
    /// allocated).
    pub(crate) fn count(&mut self, min_bytes: usize) -> Result<usize, Error> {
        let n = self.varint()?;
        let left = self.rest.len() / min_bytes.max(1);
        if n > left as u64 {
            return Err(self.corrupt(&format!("{n} items in {left} bytes")));
        }
        Ok(n as usize)
    }

    /// Eight bytes, little-endian.
    pub(crate) fn fixed64(&mut self) -> Result<u64, Error> {
        if self.rest.len() < 8 {
            return Err(self.corrupt("record ends early"));
        }
        let (bytes, rest) = self.rest.split_at(8);
        self.rest = rest;
        let mut out = [0u8; 8];
        out.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(out))
    }

    /// Bytes written by [`put_bytes`].
    #[inline]
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let len = self.varint()?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.rest.len())
            .ok_or_else(|| self.corrupt("record ends early"))?;
        let (bytes, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(bytes)
    }

    /// UTF-8 text written by [`put_bytes`].
    pub(crate) fn text(&mut self) -> Result<String, Error> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.corrupt("record text is not UTF-8"))
    }

    /// Fails unless everything was read.
    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt("record holds trailing bytes"))
        }
    }
}

#[cfg(test)]
#[path = "tests/binary.rs"]
mod tests;
