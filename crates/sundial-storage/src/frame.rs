//! Checksummed record framing shared by the WAL and the catalog log.
//!
//! ```text
//! file   := header record*
//! header := magic[8] version:u32 reserved:u32          (16 bytes)
//! record := len:u32 crc:u32 payload[len]               crc = CRC32C(payload)
//! ```
//! A record is valid only if its whole payload is present and its checksum matches. Reading stops at the
//! first invalid record: everything from there on is a *torn tail* (a write cut short by a crash), which
//! the owner truncates; it never stops start-up.

use crate::encoding::{Reader, put_u32};

pub const HEADER_BYTES: usize = 16;
pub const RECORD_OVERHEAD_BYTES: usize = 8;

pub fn header(magic: &[u8; 8], version: u32) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h
}

/// Checks a file header; returns the version, or `None` if the magic does not match or it is short.
pub fn check_header(buf: &[u8], magic: &[u8; 8]) -> Option<u32> {
    if buf.len() < HEADER_BYTES {
        return None;
    }
    let mut r = Reader::new(buf);
    if r.take(8)? != magic {
        return None;
    }
    r.u32()
}

/// Appends one framed record holding `payload`.
pub fn put_record(out: &mut Vec<u8>, payload: &[u8]) {
    // Readers take a zero-length record for a zero-filled tail (the CRC32C of nothing is 0, so eight zero
    // bytes would otherwise read as a valid record): never write one.
    assert!(!payload.is_empty(), "a framed record must not be empty");
    put_u32(out, payload.len() as u32);
    put_u32(out, crc32c::crc32c(payload));
    out.extend_from_slice(payload);
}

/// Iterates over the valid records of `buf` (the bytes after the header). After the iterator ends,
/// [`Frames::valid_len`] is the length of the valid prefix and [`Frames::torn`] tells if bytes followed it.
pub struct Frames<'a> {
    buf: &'a [u8],
    pos: usize,
    max_len: usize,
    torn: Option<&'static str>,
}

impl<'a> Frames<'a> {
    pub fn new(buf: &'a [u8], max_len: usize) -> Self {
        Frames { buf, pos: 0, max_len, torn: None }
    }

    pub fn valid_len(&self) -> usize {
        self.pos
    }

    /// Why reading stopped before the end, if it did.
    pub fn torn(&self) -> Option<&'static str> {
        self.torn
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.torn.is_some() || self.pos == self.buf.len() {
            return None;
        }
        let mut r = Reader::new(&self.buf[self.pos..]);
        let (Some(len), Some(crc)) = (r.u32(), r.u32()) else {
            self.torn = Some("record header cut short");
            return None;
        };
        let len = len as usize;
        if len == 0 {
            // Eight zero bytes: a file extended with zeros by a crash (no writer writes empty records).
            self.torn = Some("zero-filled tail");
            return None;
        }
        if len > self.max_len {
            self.torn = Some("record length over the limit");
            return None;
        }
        let Some(payload) = r.take(len) else {
            self.torn = Some("record payload cut short");
            return None;
        };
        if crc32c::crc32c(payload) != crc {
            self.torn = Some("record checksum mismatch");
            return None;
        }
        self.pos += RECORD_OVERHEAD_BYTES + len;
        Some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_truncation_and_bit_flip_yields_a_valid_prefix() {
        let mut buf = Vec::new();
        for i in 0..5u8 {
            put_record(&mut buf, &vec![i; 10 + i as usize]);
        }
        let all: Vec<_> = Frames::new(&buf, 1 << 20).map(<[u8]>::to_vec).collect();
        assert_eq!(all.len(), 5);
        for cut in 0..buf.len() {
            let mut f = Frames::new(&buf[..cut], 1 << 20);
            let got: Vec<_> = f.by_ref().map(<[u8]>::to_vec).collect();
            assert_eq!(&all[..got.len()], &got[..]);
            assert_eq!(f.torn().is_some(), f.valid_len() != cut);
        }
        for byte in 0..buf.len() {
            let mut b = buf.clone();
            b[byte] ^= 0x10;
            let got: Vec<_> = Frames::new(&b, 1 << 20).map(<[u8]>::to_vec).collect();
            assert!(got.len() < 5, "flip at {byte} went unnoticed");
            assert_eq!(&all[..got.len()], &got[..]);
        }
    }

    /// Regression (found while documenting the format): eight zero bytes after the last record read as a
    /// valid empty record (the CRC32C of nothing is 0), which then failed to decode and stopped start-up.
    #[test]
    fn a_zero_filled_tail_is_torn_not_a_record() {
        let mut buf = Vec::new();
        put_record(&mut buf, b"payload");
        let valid = buf.len();
        buf.extend_from_slice(&[0u8; 64]);
        let mut f = Frames::new(&buf, 1 << 20);
        assert_eq!(f.by_ref().count(), 1);
        assert_eq!(f.valid_len(), valid);
        assert_eq!(f.torn(), Some("zero-filled tail"));
    }

    #[test]
    fn a_short_header_is_not_a_header() {
        let h = header(b"SDTEST\0\0", 1);
        assert_eq!(check_header(&h, b"SDTEST\0\0"), Some(1));
        assert_eq!(check_header(&h[..12], b"SDTEST\0\0"), None);
    }
}
