//! Bounds-checked reading of a chunk, with errors that name the field being read, and the LEB128 varint
//! primitives the codecs share (writers reuse [`crate::encoding`]).

use super::{CodecError, Result};

/// A read position in a chunk. Every read checks the remaining length first and reports what it was
/// reading, so a corrupt chunk says which field ran out.
#[derive(Clone, Debug)]
pub(super) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let available = self.remaining();
        if n > available {
            return Err(CodecError::Truncated { what, needed: n, available });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// The next byte, not consumed.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub fn uvarint(&mut self, what: &'static str) -> Result<u64> {
        match get_uvarint(self.buf, &mut self.pos) {
            Some(v) => Ok(v),
            None if self.pos >= self.buf.len() => Err(CodecError::Truncated { what, needed: 1, available: 0 }),
            None => Err(CodecError::Corrupt { what }),
        }
    }

    /// A uvarint count or length that must be at most `max`.
    pub fn len(&mut self, max: usize, what: &'static str) -> Result<usize> {
        let v = self.uvarint(what)?;
        match usize::try_from(v) {
            Ok(v) if v <= max => Ok(v),
            _ => Err(CodecError::Corrupt { what }),
        }
    }

    /// Everything not read yet (the "to end" fields of the format).
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    /// Fails if bytes are left over: a decoded chunk must account for every byte.
    pub fn finish(&self, what: &'static str) -> Result<()> {
        if self.remaining() != 0 {
            return Err(CodecError::LengthMismatch { what, expected: self.pos, actual: self.buf.len() });
        }
        Ok(())
    }
}

/// Reads one unsigned LEB128 value at `*pos`, advancing it. `None` when the bytes run out (then `*pos`
/// is left at the end) or the value overflows 64 bits. The one-byte case is tested first because small
/// values (delta-of-delta zero, short lengths) dominate.
#[inline]
pub(super) fn get_uvarint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let &b = buf.get(*pos)?;
    if b < 0x80 {
        *pos += 1;
        return Some(u64::from(b));
    }
    get_uvarint_slow(buf, pos)
}

/// On overflow `*pos` is put back at the start of the value, so that callers can tell "ran out of
/// bytes" (position at the end) from "malformed" (position inside the buffer).
#[cold]
fn get_uvarint_slow(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let start = *pos;
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*pos) else {
            *pos = buf.len();
            return None;
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            // The tenth byte may only carry bit 63.
            if shift == 63 && b > 1 {
                break;
            }
            return Some(v);
        }
    }
    *pos = start;
    None
}

/// Bytes `put_uvarint(v)` writes.
pub(super) fn uvarint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::put_uvarint;

    #[test]
    fn uvarint_round_trips_and_len_matches() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX >> 1, u64::MAX] {
            let mut out = Vec::new();
            put_uvarint(&mut out, v);
            assert_eq!(out.len(), uvarint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(get_uvarint(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn bad_uvarints_are_errors() {
        let mut c = Cursor::new(&[0x80, 0x80]);
        assert!(matches!(c.uvarint("x"), Err(CodecError::Truncated { .. })));
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
        assert!(matches!(c.uvarint("x"), Err(CodecError::Corrupt { .. })));
        let mut c = Cursor::new(&[0xff; 11]);
        assert!(c.uvarint("x").is_err());
        let mut c = Cursor::new(&[5]);
        assert!(matches!(c.len(4, "x"), Err(CodecError::Corrupt { .. })));
    }

    #[test]
    fn reads_past_the_end_are_truncation_errors() {
        let mut c = Cursor::new(&[1, 2, 3]);
        assert_eq!(c.u8("a"), Ok(1));
        assert_eq!(c.u64("b"), Err(CodecError::Truncated { what: "b", needed: 8, available: 2 }));
        assert!(c.finish("c").is_err());
        assert_eq!(c.rest(), &[2, 3]);
        assert!(c.finish("c").is_ok());
    }
}
