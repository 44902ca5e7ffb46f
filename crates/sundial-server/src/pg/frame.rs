//! Framing and decoding of frontend messages, with Sundial's limits.
//!
//! A PostgreSQL frontend message is `type:u8, len:i32 (BE, counts itself), body`; the very first message of a
//! connection (SSLRequest, GSSENCRequest, CancelRequest or StartupMessage) has no type byte. The header is
//! checked *before* the body is buffered, so a hostile length costs nothing: anything over
//! [`MESSAGE_BYTES_MAX`] (or [`STARTUP_BYTES_MAX`] before start-up) is refused with a named error and the
//! connection is closed after an ErrorResponse (the stream position is lost, there is no way to resync).
//!
//! Decoding of a complete frame is pgwire's ([`PgWireFrontendMessage::decode`]); [`decode_frame`] is the
//! pure function the fuzz target and the corpus test drive.

use bytes::{Buf, BytesMut};
use pgwire::messages::{DecodeContext, PgWireFrontendMessage, ProtocolVersion};

/// Largest frontend message after start-up (a Query, Parse, Bind or CopyData), in bytes. PostgreSQL's own
/// limit is 1 GiB; 64 MiB matches the HTTP body limit (`--max-body-mib`) and keeps one connection's
/// buffer bounded. Send bigger ingests as several COPY data messages (psql and drivers already do).
pub const MESSAGE_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Largest start-up packet, as in PostgreSQL (`MAX_STARTUP_PACKET_LENGTH`).
pub const STARTUP_BYTES_MAX: usize = 10_000;

const _: () = assert!(STARTUP_BYTES_MAX < MESSAGE_BYTES_MAX);

/// Request codes carried by untyped start-up packets.
pub const SSL_REQUEST_CODE: i32 = 80_877_103;
pub const GSSENC_REQUEST_CODE: i32 = 80_877_104;
pub const CANCEL_REQUEST_CODE: i32 = 80_877_102;

/// Where in the connection we are: before the start-up packet (untyped frames) or after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Startup,
    Normal,
}

/// Why a frame was refused. Every variant ends the connection (after an ErrorResponse when possible).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error(
        "message of {len} bytes exceeds the {limit}-byte limit ({what}); send smaller statements or COPY chunks"
    )]
    TooLarge {
        len: usize,
        limit: usize,
        what: &'static str,
    },
    #[error("invalid message length {len} (a message counts at least its own 4-byte length)")]
    BadLength { len: i64 },
    #[error("unknown message type {0:#04x} ({0:?} as a byte)")]
    UnknownType(u8),
    #[error("malformed {what} message: {reason}")]
    Malformed { what: &'static str, reason: String },
    #[error("unsupported frontend protocol {major}.{minor}: Sundial speaks protocol 3.0")]
    UnsupportedProtocol { major: u16, minor: u16 },
}

/// An untyped start-up packet, classified.
#[derive(Debug)]
pub enum StartupFrame {
    SslRequest,
    GssEncRequest,
    /// Cancel or Startup, decoded by pgwire.
    Message(PgWireFrontendMessage),
}

/// Splits one complete frame off the front of `buf`, or returns `None` if more bytes are needed.
/// The header is validated as soon as it is complete, before the body arrives.
pub fn split_frame(buf: &mut BytesMut, phase: Phase) -> Result<Option<BytesMut>, FrameError> {
    let (offset, limit, what) = match phase {
        Phase::Startup => (0, STARTUP_BYTES_MAX, "start-up packet, STARTUP_BYTES_MAX"),
        Phase::Normal => (1, MESSAGE_BYTES_MAX, "MESSAGE_BYTES_MAX"),
    };
    if buf.len() < offset + 4 {
        return Ok(None);
    }
    if phase == Phase::Normal && !is_frontend_type(buf[0]) {
        return Err(FrameError::UnknownType(buf[0]));
    }
    let len = i32::from_be_bytes([
        buf[offset],
        buf[offset + 1],
        buf[offset + 2],
        buf[offset + 3],
    ]);
    let min = if phase == Phase::Startup { 8 } else { 4 };
    if (len as i64) < min {
        return Err(FrameError::BadLength { len: len as i64 });
    }
    let len = len as usize;
    if len > limit {
        return Err(FrameError::TooLarge { len, limit, what });
    }
    if buf.len() < offset + len {
        return Ok(None);
    }
    Ok(Some(buf.split_to(offset + len)))
}

fn is_frontend_type(b: u8) -> bool {
    matches!(
        b,
        b'Q' | b'P' | b'B' | b'E' | b'D' | b'C' | b'H' | b'S' | b'X' | b'd' | b'c' | b'f' | b'p'
    )
}

fn normal_context() -> DecodeContext {
    let mut ctx = DecodeContext::new(ProtocolVersion::PROTOCOL3_0);
    ctx.awaiting_frontend_ssl = false;
    ctx.awaiting_frontend_startup = false;
    ctx
}

/// pgwire 0.42's body decoders index past the end of some truncated bodies (they panic instead of
/// returning an error; found by `random_and_mutated_inputs_never_panic`). [`validate`] rejects those
/// layouts first; should another one slip through, the panic is contained here and becomes a protocol
/// error (the frame is complete and bounded).
fn decode_contained(
    frame: &mut BytesMut,
    ctx: &DecodeContext,
) -> Result<Option<PgWireFrontendMessage>, String> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        PgWireFrontendMessage::decode(frame, ctx)
    }));
    match r {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => {
            CONTAINED_PANICS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(
                "pgwire panicked decoding a malformed message (contained); please report the input"
            );
            Err("the message body is shorter than its fields".to_string())
        }
    }
}

/// Decoder panics contained by [`decode_contained`] since start (0 while [`validate`] covers them all).
pub static CONTAINED_PANICS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Decodes one complete untyped start-up frame.
pub fn decode_startup(mut frame: BytesMut) -> Result<StartupFrame, FrameError> {
    if frame.len() < 8 {
        return Err(FrameError::BadLength {
            len: frame.len() as i64,
        });
    }
    let code = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    match code {
        SSL_REQUEST_CODE => return Ok(StartupFrame::SslRequest),
        GSSENC_REQUEST_CODE => return Ok(StartupFrame::GssEncRequest),
        CANCEL_REQUEST_CODE => {}
        _ => {
            let (major, minor) = ((code >> 16) as u16, (code & 0xffff) as u16);
            if major != 3 {
                return Err(FrameError::UnsupportedProtocol { major, minor });
            }
        }
    }
    let mut ctx = DecodeContext::new(ProtocolVersion::PROTOCOL3_0);
    ctx.awaiting_frontend_ssl = false;
    ctx.awaiting_frontend_startup = true;
    let what = if code == CANCEL_REQUEST_CODE {
        "CancelRequest"
    } else {
        "StartupMessage"
    };
    match decode_contained(&mut frame, &ctx) {
        Ok(Some(m)) => Ok(StartupFrame::Message(m)),
        Ok(None) => Err(FrameError::Malformed {
            what,
            reason: "truncated".into(),
        }),
        Err(reason) => Err(FrameError::Malformed { what, reason }),
    }
}

/// A cursor over a message body that checks every read (the structure pgwire's decoders assume).
struct Body<'a>(&'a [u8]);

impl Body<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err(format!("needs {n} more bytes, {} left", self.0.len()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn cstring(&mut self) -> Result<(), String> {
        let end = self
            .0
            .iter()
            .position(|b| *b == 0)
            .ok_or("a string is not NUL-terminated")?;
        self.0 = &self.0[end + 1..];
        Ok(())
    }
    fn i16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn count(&mut self) -> Result<usize, String> {
        usize::try_from(self.i16()?).map_err(|_| "a negative count".to_string())
    }
    fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes", self.0.len()))
        }
    }
}

/// Checks the layout of the messages whose pgwire decoders trust their input, so malformed input is a
/// protocol error here and never reaches them.
fn validate(ty: u8, body: &[u8]) -> Result<(), String> {
    let mut b = Body(body);
    match ty {
        b'Q' | b'f' => b.cstring()?,
        b'P' => {
            b.cstring()?;
            b.cstring()?;
            let n = b.count()?;
            b.take(n * 4)?;
        }
        b'B' => {
            b.cstring()?;
            b.cstring()?;
            let formats = b.count()?;
            b.take(formats * 2)?;
            for _ in 0..b.count()? {
                let len = b.i32()?;
                if len > 0 {
                    b.take(len as usize)?;
                } else if len < -1 {
                    return Err(format!("invalid parameter length {len}"));
                }
            }
            let results = b.count()?;
            b.take(results * 2)?;
        }
        b'E' => {
            b.cstring()?;
            b.i32()?;
        }
        b'D' | b'C' => {
            b.take(1)?;
            b.cstring()?;
        }
        b'H' | b'S' | b'X' | b'c' => {}
        _ => return Ok(()),
    }
    b.end()
}

/// Decodes one complete typed frame (after start-up).
pub fn decode_frame(mut frame: BytesMut) -> Result<PgWireFrontendMessage, FrameError> {
    let ty = *frame.first().ok_or(FrameError::BadLength { len: 0 })?;
    let what = message_name(ty);
    let declared = frame.len();
    if frame.len() >= 5 {
        validate(ty, &frame[5..]).map_err(|reason| FrameError::Malformed { what, reason })?;
    }
    match decode_contained(&mut frame, &normal_context()) {
        Ok(Some(m)) if frame.has_remaining() => {
            drop(m);
            Err(FrameError::Malformed {
                what,
                reason: format!("{} trailing bytes of {declared}", frame.remaining()),
            })
        }
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(FrameError::Malformed {
            what,
            reason: "truncated".into(),
        }),
        Err(reason) => Err(FrameError::Malformed { what, reason }),
    }
}

fn message_name(ty: u8) -> &'static str {
    match ty {
        b'Q' => "Query",
        b'P' => "Parse",
        b'B' => "Bind",
        b'E' => "Execute",
        b'D' => "Describe",
        b'C' => "Close",
        b'H' => "Flush",
        b'S' => "Sync",
        b'X' => "Terminate",
        b'd' => "CopyData",
        b'c' => "CopyDone",
        b'f' => "CopyFail",
        b'p' => "password",
        _ => "unknown",
    }
}

/// Runs the whole decoder over arbitrary bytes, as a connection would: the fuzz target's body. Never panics
/// (that is the property); returns how many messages decoded.
pub fn decode_all(bytes: &[u8]) -> usize {
    let mut buf = BytesMut::from(bytes);
    let mut phase = Phase::Startup;
    let mut n = 0;
    loop {
        match split_frame(&mut buf, phase) {
            Ok(Some(frame)) => {
                let ok = match phase {
                    Phase::Startup => match decode_startup(frame) {
                        Ok(StartupFrame::Message(_)) => {
                            phase = Phase::Normal;
                            true
                        }
                        Ok(_) => true,
                        Err(_) => false,
                    },
                    Phase::Normal => decode_frame(frame).is_ok(),
                };
                if !ok {
                    return n;
                }
                n += 1;
            }
            Ok(None) | Err(_) => return n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup_bytes() -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for s in ["user", "u", "database", "db", ""] {
            body.extend_from_slice(s.as_bytes());
            body.push(0);
        }
        let mut out = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        out.extend(body);
        out
    }

    fn typed(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![ty];
        out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_valid_session_decodes() {
        let mut bytes = startup_bytes();
        bytes.extend(typed(b'Q', b"SELECT 1\0"));
        bytes.extend(typed(b'P', b"s1\0SELECT $1\0\0\x01\0\0\0\x17"));
        bytes.extend(typed(b'S', b""));
        bytes.extend(typed(b'X', b""));
        assert_eq!(decode_all(&bytes), 5);
    }

    #[test]
    fn oversized_headers_are_refused_before_the_body_arrives() {
        let mut buf = BytesMut::from(&[b'Q', 0x7f, 0xff, 0xff, 0xff][..]);
        let e = split_frame(&mut buf, Phase::Normal).unwrap_err();
        assert!(
            matches!(
                e,
                FrameError::TooLarge {
                    limit: MESSAGE_BYTES_MAX,
                    ..
                }
            ),
            "{e:?}"
        );
        let mut buf = BytesMut::from(&[0x00, 0x01, 0x00, 0x00][..]);
        assert!(matches!(
            split_frame(&mut buf, Phase::Startup),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn bad_lengths_and_types_are_errors() {
        let mut buf = BytesMut::from(&[b'Q', 0, 0, 0, 3][..]);
        assert_eq!(
            split_frame(&mut buf, Phase::Normal),
            Err(FrameError::BadLength { len: 3 })
        );
        let mut buf = BytesMut::from(&[b'Z', 0, 0, 0, 4][..]);
        assert_eq!(
            split_frame(&mut buf, Phase::Normal),
            Err(FrameError::UnknownType(b'Z'))
        );
        let mut buf = BytesMut::from(&[b'Q', 0, 0][..]);
        assert_eq!(split_frame(&mut buf, Phase::Normal), Ok(None));
    }

    /// Every input the random test found to panic inside pgwire is now refused by `validate` first.
    #[test]
    fn validation_refuses_what_pgwire_would_panic_on() {
        for (ty, body) in [
            (b'B', &b"\0\0\0\0\x03\xe8"[..]),
            (b'P', b"s\0SELECT 1"),
            (b'B', b"\0\0\0\x01\0\x01\0\x01\0\0\0\x09ab"),
            (b'E', b"\0\0"),
        ] {
            let frame = BytesMut::from(&typed(ty, body)[..]);
            assert!(
                matches!(decode_frame(frame), Err(FrameError::Malformed { .. })),
                "{}",
                ty as char
            );
        }
        let ok =
            BytesMut::from(&typed(b'B', b"p\0s\0\0\x01\0\x01\0\x01\0\0\0\x02ab\0\x01\0\x01")[..]);
        assert!(decode_frame(ok).is_ok());
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        // Bind claiming 1000 parameters with no bytes behind them.
        let frame = BytesMut::from(&typed(b'B', b"\0\0\0\0\x03\xe8")[..]);
        assert!(decode_frame(frame).is_err());
        // Query without its terminating NUL: pgwire tolerates it or refuses it, but never panics.
        let _ = decode_frame(BytesMut::from(&typed(b'Q', b"SELECT 1")[..]));
        // Describe with an invalid target.
        let _ = decode_frame(BytesMut::from(&typed(b'D', b"Zx\0")[..]));
    }

    /// Random and mutated byte strings through the whole decoder: no panic (issue 6). The fuzz target
    /// `fuzz/fuzz_targets/pg_messages.rs` runs the same function under libFuzzer.
    #[test]
    fn random_and_mutated_inputs_never_panic() {
        let mut seed: u64 = 0x5eed_0006;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut valid = startup_bytes();
        valid.extend(typed(b'P', b"\0SELECT $1, $2\0\0\x02\0\0\0\x14\0\0\0\x19"));
        valid.extend(typed(
            b'B',
            b"\0\0\0\x01\0\x01\0\x02\0\0\0\x08\0\0\0\0\0\0\0\x07\xff\xff\xff\xff\0\x01\0\x01",
        ));
        valid.extend(typed(b'D', b"P\0"));
        valid.extend(typed(b'E', b"\0\0\0\0\0"));
        valid.extend(typed(b'C', b"S\0"));
        valid.extend(typed(b'd', b"1\t2\n"));
        valid.extend(typed(b'f', b"oops\0"));
        valid.extend(typed(b'S', b""));
        assert_eq!(decode_all(&valid), 9);
        for round in 0..20_000 {
            let mut input = valid.clone();
            let edits = 1 + next() % 8;
            for _ in 0..edits {
                let i = (next() as usize) % input.len();
                match next() % 4 {
                    0 => input[i] = next() as u8,
                    1 => input.truncate(i),
                    2 => input.insert(i, next() as u8),
                    _ => input[i] ^= 0x80,
                }
                if input.is_empty() {
                    break;
                }
            }
            if round % 5 == 0 {
                input = (0..(next() % 64)).map(|_| next() as u8).collect();
            }
            let _ = decode_all(&input);
        }
        assert_eq!(
            CONTAINED_PANICS.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "validate() let a panicking input through"
        );
    }
}
