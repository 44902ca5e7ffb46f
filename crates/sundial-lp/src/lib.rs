//! A fast, zero-copy parser for the InfluxDB line protocol (the body of `POST /write` and
//! `POST /api/v2/write`).
//!
//! ```text
//! measurement[,tag_key=tag_value...] field_key=field_value[,field_key=field_value...] [timestamp]
//! ```
//!
//! [`parse_lines`] walks a whole body (`&[u8]`, after gzip decoding) and yields one
//! `Result<`[`Line`]`, `[`ParseError`]`>` per line. Blank lines and `#` comment lines are skipped. A bad
//! line yields an error and parsing goes on with the next line, so a caller can keep the valid lines
//! ("partial write", as InfluxDB does). Names and string values borrow from the body
//! ([`Cow::Borrowed`]) unless they contain escapes.
//!
//! ```
//! use sundial_lp::{FieldValue, parse_lines};
//!
//! let body = b"cpu,host=a usage=0.5,count=3i 1700000000000000000\n# a comment\ncpu,host=b usage=\n";
//! let mut lines = parse_lines(body);
//!
//! let line = lines.next().unwrap().unwrap();
//! assert_eq!(line.measurement, "cpu");
//! assert_eq!(line.tags, [("host".into(), "a".into())]);
//! assert_eq!(line.fields, [("usage".into(), FieldValue::Float(0.5)), ("count".into(), FieldValue::Integer(3))]);
//! assert_eq!(line.timestamp, Some(1_700_000_000_000_000_000));
//!
//! let err = lines.next().unwrap().unwrap_err();
//! assert_eq!(err.to_string(), "line 3, column 17: unable to parse 'cpu,host=b usage=': missing field value");
//! assert!(lines.next().is_none());
//! ```
//!
//! # Grammar
//!
//! The rules are InfluxDB 1.x/2.x's (`models/points.go`), written down here because that parser is
//! defined by its code:
//!
//! - Leading spaces, tabs and NULs of a line are ignored; a line whose first other byte is `#` is a
//!   comment. Lines end at `\n` or `\r\n` (a `\r` elsewhere is an ordinary byte, except at the very
//!   end of the body).
//! - The measurement runs to the first unescaped `,` (tags follow) or space (fields follow). It may not
//!   start with `,`. Escapes: `\,` and `\ `.
//! - Tags are `key=value` pairs separated by `,`. Keys and values may not be empty; an unescaped `=`
//!   inside a value is an error (InfluxDB accepts one as the value's first byte, and so do we). Tags
//!   are returned in the order written: the caller sorts. Two tags with the same key are an error.
//! - One or more spaces, tabs or NULs separate the key section from the fields.
//! - Fields are `key=value` pairs separated by `,`; at least one is required. Key escapes: `\,`, `\=`,
//!   `\ `. Values:
//!   - float: `1`, `-1.5`, `1.`, `.5`, `1e10`, `1.5E-3`; NaN and infinities are rejected, as is a value
//!     that overflows `f64`;
//!   - integer: `12i` (range-checked `i64`); unsigned: `12u` (range-checked `u64`, no sign);
//!   - string: `"..."`, which may contain newlines; escapes `\"` and `\\`;
//!   - boolean: `t`, `T`, `true`, `True`, `TRUE`, `f`, `F`, `false`, `False`, `FALSE`.
//!
//!   When a key repeats, the last value wins (as in InfluxDB), kept at the position of the key's
//!   first occurrence.
//! - An optional timestamp follows after spaces, tabs or NULs: a signed decimal integer in `i64`
//!   range, returned raw (the caller applies the precision). Only spaces may follow it.
//! - A backslash that does not precede one of the characters escapable at that place is a literal
//!   backslash. In names a character counts as escaped exactly when a backslash precedes it, as in
//!   InfluxDB, so `a\\,b` is the tag value `a\,b`, and a name cannot end with a backslash.
//! - Invalid UTF-8 anywhere in a line (comments aside) rejects that line.
//! - A line longer than [`LINE_BYTES_MAX`] is rejected whole ([`Lines::line_bytes_max`] changes the
//!   limit).
//!
//! Where InfluxDB 1.x is inconsistent or lossy this parser picks one rule: a backslash before a
//! newline does not continue the line (InfluxDB joins the lines); a field key follows the same escape
//! rule as tag keys (InfluxDB skips `\x` pairs there, so `a\\=1` differs); a quote opens a string only
//! as the first byte of a field value, and a line whose string is never closed ends, for recovery, at
//! the first newline after its opening quote (InfluxDB swallows the rest of the body); bytes after a
//! closing quote other than `,`, space or end of line are an error. InfluxDB's 64 KiB series-key limit
//! is left to the storage layer.
//!
//! [`write_line`] serialises a [`Line`] back to line protocol; every line the parser returns survives
//! `write_line` and a second parse unchanged.

#![warn(missing_docs)]

use std::borrow::Cow;

mod error;
mod parse;
mod write;

#[cfg(test)]
mod tests;

pub use error::{ParseError, ParseErrorKind, ValueError};
pub use parse::{Fields, LineHead, Lines, SHARED_KEYS_MAX, ShareAdvisor, Tags, parse_lines};
pub use write::write_line;

/// Longest accepted line, in bytes, counted from the line's first byte to its end (without the line
/// terminator). A longer line yields [`ParseErrorKind::LineTooLong`]; the HTTP layer's body limit is
/// what normally bounds the input, this only stops one line from being unbounded.
pub const LINE_BYTES_MAX: usize = 64 * 1024 * 1024;

/// A field value, typed by its syntax.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// `1.5`, `1`, `-3e2`: a number without a suffix.
    Float(f64),
    /// `12i`.
    Integer(i64),
    /// `12u`.
    UInteger(u64),
    /// `"text"`, unescaped.
    String(Cow<'a, str>),
    /// `true`, `f`, ...
    Boolean(bool),
}

impl FieldValue<'_> {
    /// Copies borrowed text so the value no longer borrows the body.
    pub fn into_owned(self) -> FieldValue<'static> {
        match self {
            FieldValue::Float(v) => FieldValue::Float(v),
            FieldValue::Integer(v) => FieldValue::Integer(v),
            FieldValue::UInteger(v) => FieldValue::UInteger(v),
            FieldValue::String(s) => FieldValue::String(Cow::Owned(s.into_owned())),
            FieldValue::Boolean(v) => FieldValue::Boolean(v),
        }
    }
}

/// One parsed line (a point).
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    /// Unescaped measurement name; never empty.
    pub measurement: Cow<'a, str>,
    /// Unescaped tags in the order written (the caller sorts); keys are unique, values non-empty.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// Unescaped fields in the order written, at least one. Keys are unique: of a repeated key, the
    /// last value written is kept at the position of the first.
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// Raw timestamp as written, if any: the caller applies the precision.
    pub timestamp: Option<i64>,
    /// 1-based number of the line in the body where this line starts.
    pub line_number: usize,
}

impl Line<'_> {
    /// Copies borrowed text so the line no longer borrows the body.
    pub fn into_owned(self) -> Line<'static> {
        let own = |s: Cow<'_, str>| Cow::Owned(s.into_owned());
        Line {
            measurement: own(self.measurement),
            tags: self
                .tags
                .into_iter()
                .map(|(k, v)| (own(k), own(v)))
                .collect(),
            fields: self
                .fields
                .into_iter()
                .map(|(k, v)| (own(k), v.into_owned()))
                .collect(),
            timestamp: self.timestamp,
            line_number: self.line_number,
        }
    }
}

/// Parses `body` and checks that every line that parses survives [`write_line`] and a second parse
/// unchanged (the fuzz target's property; also run over the fuzz corpus by the tests).
/// Returns a description of the first violation.
#[doc(hidden)]
pub fn check_round_trip(body: &[u8]) -> Result<(), String> {
    // Every line and error is also what the general paths alone give.
    let general: Vec<_> = parse_lines(body).without_fast_paths().collect();
    let (mut previous_line, mut items) = (0, 0);
    for (i, item) in parse_lines(body).enumerate() {
        items += 1;
        if general.get(i) != Some(&item) {
            return Err(format!("item {i}: {item:?} with the fast paths, {:?} without", general.get(i)));
        }
        let number = match &item {
            Ok(line) => line.line_number,
            Err(e) => e.line_number,
        };
        if number <= previous_line {
            return Err(format!(
                "line numbers not increasing: {number} after {previous_line}"
            ));
        }
        previous_line = number;
        match item {
            Ok(line) => check_line(&line)?,
            Err(e) => check_error(body, &e)?,
        }
    }
    if items != general.len() {
        return Err(format!("{items} items with the fast paths, {} without", general.len()));
    }
    check_into(body, false)?;
    check_into(body, true)?;
    check_elided(body, false)?;
    check_elided(body, true)
}

/// With [`Lines::elide_known_tags`] told every series key a line of the body parsed with, each line is
/// what plain [`Lines::next_into`] gives, except that a line whose key has no backslash (the keys the
/// callback is asked) has no tags and the callback's answer; `share` adds
/// [`Lines::share_repeated_keys`].
fn check_elided(body: &[u8], share: bool) -> Result<(), String> {
    let (mut tags, mut fields) = (Vec::new(), Vec::new());
    let mut plain = Vec::new();
    let mut lines = parse_lines(body);
    while let Some(item) = lines.next_into(&mut tags, &mut fields) {
        plain.push(item.map(|h| {
            let f = fields[h.fields.clone()].to_vec();
            (h, f)
        }));
    }
    let known: Vec<&str> = plain.iter().filter_map(|p| p.as_ref().ok()).map(|(h, _)| h.series_key).collect();
    let answer = |key: &str| known.iter().position(|k| *k == key).and_then(|i| u32::try_from(i).ok());
    let (mut got_tags, mut got_fields) = (Vec::new(), Vec::new());
    let mut elided = parse_lines(body).elide_known_tags(&answer);
    if share {
        elided = elided.share_repeated_keys(4);
    }
    for want in &plain {
        let got = elided
            .next_into(&mut got_tags, &mut got_fields)
            .ok_or_else(|| "eliding tags ended early".to_string())?;
        match (want, got) {
            (Ok((w, w_fields)), Ok(g)) => {
                let asked = !w.series_key.contains('\\');
                let tags_ok = if asked {
                    g.elided == answer(w.series_key) && g.tags.is_empty()
                } else {
                    g.elided.is_none() && got_tags[g.tags.clone()] == tags[w.tags.clone()]
                };
                let same = tags_ok
                    && g.series_key == w.series_key
                    && g.measurement == w.measurement
                    && got_fields[g.fields.clone()] == w_fields[..]
                    && g.timestamp == w.timestamp
                    && g.line_number == w.line_number;
                if !same {
                    return Err(format!("eliding tags (share {share}): {g:?} where next_into gave {w:?}"));
                }
            }
            (Err(a), Err(b)) if *a == b => {}
            (want, got) => return Err(format!("eliding tags (share {share}): {got:?} where next_into gave {want:?}")),
        }
    }
    match elided.next_into(&mut got_tags, &mut got_fields) {
        None => Ok(()),
        Some(extra) => Err(format!("eliding tags gave {extra:?} after next_into ended")),
    }
}

/// [`Lines::next_into`] gives what the iterator gives, and a series key that parses back to the line's
/// measurement and tags. Its lines' tags and fields are appended one after another to the shared
/// vectors; with `share` ([`Lines::share_repeated_keys`]), a line repeating an earlier line's key
/// (one it could take without parsing: no backslash in it) appends no tags, its
/// range is that line's, and its key is that line's text, at that line's address.
fn check_into(body: &[u8], share: bool) -> Result<(), String> {
    let (mut tags, mut fields) = (Vec::new(), Vec::new());
    let mut into = parse_lines(body);
    if share {
        into = into.share_repeated_keys(4);
    }
    let how = if share { "next_into sharing keys" } else { "next_into" };
    // Each distinct key's tags range as first appended.
    let mut keys: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
    for item in parse_lines(body) {
        let (tags_len, fields_len) = (tags.len(), fields.len());
        let got = into
            .next_into(&mut tags, &mut fields)
            .ok_or_else(|| format!("{how} ended before the iterator"))?;
        match (item, got) {
            (Ok(line), Ok(head)) => {
                let first_key = keys.iter().find(|(k, _)| *k == head.series_key);
                let first = first_key.map(|(_, r)| r.clone());
                let shares = share
                    && first.is_some()
                    && !head.series_key.contains('\\')
                    && keys.len() < SHARED_KEYS_MAX;
                let tags_placed = if shares {
                    tags.len() == tags_len
                        && Some(&head.tags) == first.as_ref()
                        && first_key.is_some_and(|(k, _)| k.as_ptr() == head.series_key.as_ptr())
                } else {
                    head.tags == (tags_len..tags.len())
                };
                if !tags_placed || head.fields != (fields_len..fields.len()) {
                    return Err(format!(
                        "{how}: {head:?}: ranges are not the appended items ({tags_len}, {fields_len} before; \
                         the key's first range {first:?})"
                    ));
                }
                let same = head.measurement == line.measurement
                    && tags[head.tags.clone()] == line.tags[..]
                    && fields[head.fields.clone()] == line.fields[..]
                    && head.timestamp == line.timestamp
                    && head.line_number == line.line_number;
                if !same {
                    return Err(format!("{how}: {head:?} differs from {line:?}"));
                }
                let text = format!("{} f=1", head.series_key);
                let key = parse_lines(text.as_bytes()).next();
                if !matches!(&key, Some(Ok(k)) if k.measurement == line.measurement && k.tags == line.tags)
                {
                    return Err(format!(
                        "{how}: series key {:?} of {line:?} parsed as {key:?}",
                        head.series_key
                    ));
                }
                if first.is_none() {
                    keys.push((head.series_key, head.tags.clone()));
                }
            }
            (Err(a), Err(b)) if a == b && tags.len() == tags_len && fields.len() == fields_len => {}
            (item, got) => {
                return Err(format!(
                    "{how} gave {got:?} where the iterator gave {item:?}"
                ));
            }
        }
    }
    match into.next_into(&mut tags, &mut fields) {
        None => Ok(()),
        Some(extra) => Err(format!("{how} gave {extra:?} after the iterator ended")),
    }
}

fn check_line(line: &Line<'_>) -> Result<(), String> {
    let mut text = String::new();
    write_line(&mut text, line);
    if text.len() > LINE_BYTES_MAX {
        return Ok(()); // Escaping can lengthen a line past the limit: nothing to compare.
    }
    let mut again = parse_lines(text.as_bytes());
    let reparsed = match (again.next(), again.next()) {
        (Some(Ok(l)), None) => l,
        (first, second) => {
            return Err(format!(
                "{line:?} wrote {text:?}, which parsed as {first:?} then {second:?}"
            ));
        }
    };
    let expected = Line {
        line_number: 1,
        ..line.clone()
    };
    if !same_line(&reparsed, &expected) {
        return Err(format!(
            "{line:?} wrote {text:?}, which parsed as {reparsed:?}"
        ));
    }
    Ok(())
}

/// Equality with floats compared bit for bit (so `-0.0` differs from `0.0`).
fn same_line(a: &Line<'_>, b: &Line<'_>) -> bool {
    let same_value = |x: &FieldValue<'_>, y: &FieldValue<'_>| match (x, y) {
        (FieldValue::Float(x), FieldValue::Float(y)) => x.to_bits() == y.to_bits(),
        _ => x == y,
    };
    a.measurement == b.measurement
        && a.tags == b.tags
        && a.timestamp == b.timestamp
        && a.line_number == b.line_number
        && a.fields.len() == b.fields.len()
        && a.fields
            .iter()
            .zip(&b.fields)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

fn check_error(body: &[u8], e: &ParseError) -> Result<(), String> {
    let lines = body.iter().filter(|&&b| b == b'\n').count() + 1;
    if e.column == 0 || e.line_number == 0 || e.line_number > lines {
        return Err(format!("error position out of range: {e:?}"));
    }
    if e.line_text.len() > error::LINE_TEXT_MAX + 3 {
        return Err(format!(
            "line text not truncated: {} bytes",
            e.line_text.len()
        ));
    }
    let _ = e.to_string();
    Ok(())
}
