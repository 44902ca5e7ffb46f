//! Little-endian and LEB128 primitives used by the WAL, the catalog log and segment footers.
//!
//! All multi-byte integers on disk are little-endian; variable-length integers are unsigned LEB128, and
//! signed ones are zigzag-mapped first. A [`Reader`] never panics on short or hostile input: every read
//! returns `None` when the bytes run out, and the caller turns that into a `Corrupt` error naming the file.

pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

pub fn put_ivarint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, zigzag(v));
}

/// A length-prefixed byte string (uvarint length).
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(b);
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

/// Bounds-checked cursor over a byte slice.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }

    pub fn uvarint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                // The tenth byte may only carry the top bit of a u64.
                return if shift == 63 && b > 1 { None } else { Some(v) };
            }
        }
        None
    }

    pub fn ivarint(&mut self) -> Option<i64> {
        Some(unzigzag(self.uvarint()?))
    }

    /// A uvarint that must fit `usize` and be at most `max` (lengths, counts).
    pub fn len(&mut self, max: usize) -> Option<usize> {
        let v = usize::try_from(self.uvarint()?).ok()?;
        (v <= max).then_some(v)
    }

    pub fn bytes(&mut self, max: usize) -> Option<&'a [u8]> {
        let n = self.len(max)?;
        self.take(n)
    }

    pub fn str(&mut self, max: usize) -> Option<&'a str> {
        std::str::from_utf8(self.bytes(max)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX];
        for &v in &values {
            let mut out = Vec::new();
            put_uvarint(&mut out, v);
            assert_eq!(Reader::new(&out).uvarint(), Some(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -64, 64] {
            let mut out = Vec::new();
            put_ivarint(&mut out, v);
            assert_eq!(Reader::new(&out).ivarint(), Some(v));
        }
    }

    #[test]
    fn overlong_and_truncated_varints_are_rejected() {
        assert_eq!(Reader::new(&[0x80, 0x80]).uvarint(), None);
        assert_eq!(Reader::new(&[0xff; 10]).uvarint(), None);
        assert_eq!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).uvarint(), None);
    }

    #[test]
    fn reads_past_the_end_return_none() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16(), Some(0x0201));
        assert_eq!(r.u32(), None);
        assert_eq!(r.u8(), Some(3));
        assert_eq!(r.u8(), None);
        assert_eq!(Reader::new(&[5, b'a']).bytes(100), None);
        assert_eq!(Reader::new(&[5, b'a']).bytes(2), None);
    }
}
