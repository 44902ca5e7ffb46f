//! The parser. Tokens end at bytes found 8 at a time (SWAR) and checked against a byte-class table;
//! names are sliced out of the body's UTF-8-validated text (validated once for the whole body, not
//! per token); numbers are parsed by hand, except floats.
//!
//! Lines are not split up front: the parser finds where a line ends, since a string value may
//! contain newlines. After an error the line ends at the first newline after what was consumed.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::error::{self, ParseError, ParseErrorKind, ValueError};
use crate::{FieldValue, LINE_BYTES_MAX, Line};

/// A line's tags, as [`Lines::next_into`] appends them.
pub type Tags<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;
/// A line's fields, as [`Lines::next_into`] appends them.
pub type Fields<'a> = Vec<(Cow<'a, str>, FieldValue<'a>)>;

/// A line parsed by [`Lines::next_into`]: a [`Line`] whose tags and fields were appended to the
/// caller's vectors (at `tags` and `fields`) instead of vectors of its own, so a body of many lines
/// costs no allocation per line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineHead<'a> {
    /// Unescaped measurement name; never empty.
    pub measurement: Cow<'a, str>,
    /// The series key as written: the measurement and tags up to the space before the fields, escapes
    /// and all. The same key text always parses to the same measurement and tags, so it can stand for
    /// them (the storage engine caches series by it); two texts may name one series (tags in another
    /// order). A line that shares an earlier line's parse ([`Lines::share_repeated_keys`]) has that
    /// line's key: byte for byte its own, but at the earlier line's address, so that a consumer can
    /// tell a repeat by the address alone.
    pub series_key: &'a str,
    /// Where the line's tags are in the tags vector (in the order written; keys unique).
    pub tags: Range<usize>,
    /// Where the line's fields are in the fields vector (keys unique, at least one).
    pub fields: Range<usize>,
    /// Raw timestamp as written, if any: the caller applies the precision.
    pub timestamp: Option<i64>,
    /// 1-based number of the line in the body where this line starts.
    pub line_number: usize,
    /// Set when the line's tags were left out ([`Lines::elide_known_tags`]): what the caller's callback
    /// answered for its series key. `tags` is then empty.
    pub elided: Option<u32>,
}

// Byte classes: a scan stops at the first byte whose class shares a bit with the scan's mask.
const SPACE: u8 = 1;
const COMMA: u8 = 2;
const EQUALS: u8 = 4;
const BACKSLASH: u8 = 8;
/// `\n` and `\r`; a `\r` ends a line only before `\n` or at the end of the body (see [`is_eol`]).
const EOL: u8 = 16;
const QUOTE: u8 = 32;
const NEWLINE: u8 = 64;

static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b' ' as usize] = SPACE;
    table[b',' as usize] = COMMA;
    table[b'=' as usize] = EQUALS;
    table[b'\\' as usize] = BACKSLASH;
    table[b'\n' as usize] = EOL | NEWLINE;
    table[b'\r' as usize] = EOL;
    table[b'"' as usize] = QUOTE;
    table
};

const MEASUREMENT_STOP: u8 = SPACE | COMMA | BACKSLASH | EOL;
const MEASUREMENT_ESCAPES: u8 = SPACE | COMMA;
/// Tag keys, tag values and field keys.
const NAME_STOP: u8 = SPACE | COMMA | EQUALS | BACKSLASH | EOL;
const NAME_ESCAPES: u8 = SPACE | COMMA | EQUALS;
/// Numbers and booleans.
const VALUE_STOP: u8 = SPACE | COMMA | EOL;
const STRING_STOP: u8 = QUOTE | BACKSLASH | NEWLINE;
const TIME_STOP: u8 = SPACE | EOL;

/// Cap on the capacity reserved for a line's tags or fields from the previous line's counts: one
/// line with a million tags must not make every following line reserve a million slots.
const CAPACITY_HINT_MAX: usize = 64;

/// Up to this many keys, duplicates are looked for pairwise (cheaper than sorting for TSBS-sized
/// lines); beyond it by sorting, so a hostile line with many keys stays `n log n`.
const PAIRWISE_MAX: usize = 16;

#[inline(always)]
fn class(b: u8) -> u8 {
    CLASS[usize::from(b)]
}

/// Parses a line-protocol body: an iterator with one item per non-blank, non-comment line.
pub fn parse_lines(body: &[u8]) -> Lines<'_> {
    Lines {
        body,
        pos: 0,
        line_number: 1,
        text: valid_prefix(body),
        text_start: 0,
        line_bytes_max: LINE_BYTES_MAX,
        scratch: Scratch::default(),
        shared: None,
        elide: None,
        fast: true,
    }
}

/// Iterator over the lines of a body, from [`parse_lines`]: yields `Ok(Line)` or `Err(ParseError)`
/// per line, skipping blank and `#` comment lines. An error never stops the iteration.
#[derive(Clone)]
pub struct Lines<'a> {
    body: &'a [u8],
    /// Start of the next line.
    pos: usize,
    /// 1-based line number at `pos`.
    line_number: usize,
    /// `body[text_start..]` up to its first invalid UTF-8 byte; `text_start <= pos`, and that invalid
    /// byte (if any) is the first one at or after `pos`.
    text: &'a str,
    text_start: usize,
    line_bytes_max: usize,
    scratch: Scratch<'a>,
    /// Series keys parsed so far, when [`Lines::share_repeated_keys`] asked for it.
    shared: Option<SharedKeys<'a>>,
    /// Tells which series keys' tags to leave out ([`Lines::elide_known_tags`]).
    elide: Option<&'a dyn Fn(&'a str) -> Option<u32>>,
    /// The fast paths for common shapes are taken ([`Parser::fast`]); off only to check them against
    /// the general paths ([`Lines::without_fast_paths`]).
    fast: bool,
}

/// Most series keys one body's parse keeps for [`Lines::share_repeated_keys`] (a key's slice, name and
/// range are about 60 bytes with the map's slack: 16 K keys are about a megabyte). Keys past it are
/// parsed in full every time they come.
pub const SHARED_KEYS_MAX: usize = 16 * 1024;

/// The series keys (measurement and tags, byte for byte) of a body's lines so far, each with where its
/// parsed tags are in the caller's vector, for [`Lines::share_repeated_keys`].
///
/// Why: a TSBS body of 10,000 lines repeats each host's key once per timestamp (100 times at 100
/// hosts), and splitting and checking its ten tags again each time was most of the parser's work. A
/// repeated key is found by hashing its bytes and comparing them, and is not parsed again.
#[derive(Clone, Default)]
struct SharedKeys<'a> {
    keys: foldhash::HashMap<&'a [u8], SharedKey<'a>>,
    /// Lines that took an earlier line's tags.
    hits: usize,
}

/// Whether to parse the next body with [`Lines::share_repeated_keys`], from how the bodies before fared:
/// kept by the caller across bodies (the server has one).
///
/// Sharing pays when a body repeats its keys (TSBS at 100 hosts: 38 % less parse time, 8 % at 4,000)
/// and costs when it does not: at 100,000 hosts a 10,000-line body has no repeat, and looking each key
/// up and keeping it made the parse 15 % slower. After [`ShareAdvisor::POOR_BODIES`] bodies in a row in
/// which fewer than one line in [`ShareAdvisor::HIT_RATIO_MIN`] took an earlier one's tags, only one
/// body in [`ShareAdvisor::RETRY_EVERY`] shares, to notice when keys repeat again.
///
/// The same rule decides whether to ask for known keys ([`Lines::elide_known_tags`]): a caller keeps
/// one advisor for each, and counts the lines whose tags were left out as "shared".
#[derive(Debug, Default)]
pub struct ShareAdvisor {
    poor_bodies: std::sync::atomic::AtomicU32,
    bodies: std::sync::atomic::AtomicU32,
}

impl ShareAdvisor {
    /// Bodies sharing poorly in a row before sharing is mostly stopped.
    pub const POOR_BODIES: u32 = 2;
    /// A body shares poorly when fewer than one line in this many took an earlier line's tags.
    pub const HIT_RATIO_MIN: usize = 8;
    /// While stopped, one body in this many shares.
    pub const RETRY_EVERY: u32 = 16;

    /// Whether the next body should share repeated keys.
    pub fn advise(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.bodies.fetch_add(1, Relaxed);
        self.poor_bodies.load(Relaxed) < Self::POOR_BODIES || n.is_multiple_of(Self::RETRY_EVERY)
    }

    /// Records a body parsed with sharing: `lines` parsed, `shared` of them took an earlier line's tags
    /// ([`Lines::shared_lines`]).
    pub fn observe(&self, lines: usize, shared: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if shared.saturating_mul(Self::HIT_RATIO_MIN) >= lines {
            self.poor_bodies.store(0, Relaxed);
        } else {
            let _ = self.poor_bodies.fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_add(1)));
        }
    }
}

/// A key's parse: its text (in the line that first had it), its measurement, and where its tags are in
/// the caller's vector (or, `elided`, that they were left out: [`Lines::elide_known_tags`]).
#[derive(Clone)]
struct SharedKey<'a> {
    key: &'a str,
    measurement: Cow<'a, str>,
    tags: Range<usize>,
    elided: Option<u32>,
}

impl<'a> SharedKeys<'a> {
    /// The series key of the line whose first byte is at `first`, if it can be taken without parsing:
    /// it ends at the line's first space, with no backslash (an escape) or `\n` before it. (A `\r`
    /// before that space is not a line end, and names take it as an ordinary byte.)
    ///
    /// `memchr3` looks at 32 bytes at a time where the processor can (AVX2): a TSBS key is ~150 bytes,
    /// and [`find`]'s 8 at a time with a class check per stop was a third of parsing a line whose key
    /// repeats.
    fn key_at(body: &'a [u8], first: usize) -> Option<&'a [u8]> {
        let rest = body.get(first..)?;
        let len = memchr::memchr3(b' ', b'\\', b'\n', rest)?;
        (rest[len] == b' ').then(|| &rest[..len])
    }
}

/// State kept across lines to save allocations and work.
#[derive(Clone, Default)]
struct Scratch<'a> {
    /// Lengths of the previous line's vectors: consecutive lines usually have the same shape, so
    /// one exact allocation each instead of a series of regrowths.
    tags_hint: usize,
    fields_hint: usize,
    /// Where each tag key of the current line starts, to place a duplicate-tag error.
    tag_starts: Vec<usize>,
    /// The field names of the last line parsed, in order (`None` for a name that had escapes): the next
    /// line's are looked for there first ([`Parser::fields`]).
    field_names: Vec<Option<&'a str>>,
    /// The same for the tag keys of the last line whose tags were parsed ([`Parser::tags`]).
    tag_keys: Vec<Option<&'a str>>,
}

impl fmt::Debug for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines")
            .field("body_len", &self.body.len())
            .field("pos", &self.pos)
            .field("line_number", &self.line_number)
            .finish_non_exhaustive()
    }
}

impl<'a> Lines<'a> {
    /// Sets the longest accepted line in bytes (default [`LINE_BYTES_MAX`]).
    pub fn line_bytes_max(mut self, limit: usize) -> Self {
        self.line_bytes_max = limit;
        self
    }

    /// A line whose series key repeats, byte for byte, an earlier line's of this body (up to
    /// [`SHARED_KEYS_MAX`] keys) shares that line's tags: nothing is appended to the tags vector for it,
    /// and its [`LineHead::tags`] is the earlier line's range. Only for [`Lines::next_into`] with the
    /// same tags vector at every call, which the caller does not shorten; the iterator (a vector per
    /// line) never shares.
    ///
    /// `lines` is about how many lines the body has: room for that many keys (at most
    /// [`SHARED_KEYS_MAX`]) is made up front, as growing the map rehashed every key in it.
    pub fn share_repeated_keys(mut self, lines: usize) -> Self {
        let mut shared = SharedKeys::default();
        shared.keys.reserve(lines.min(SHARED_KEYS_MAX));
        self.shared = Some(shared);
        self
    }

    /// Leaves out the tags of a line whose series key `known` answers for (`Some`): nothing is appended
    /// to the tags vector for it, its [`LineHead::tags`] is empty, and [`LineHead::elided`] holds the
    /// answer. The measurement is still parsed, and the fields and time in full.
    ///
    /// For a caller that finds series by their key text and needs the tags only for keys it has not
    /// seen (the server asks the storage engine's cache of series keys): splitting and checking ten
    /// tags was half of parsing a TSBS line. `known` must answer `Some` only for a key text that parsed
    /// without error before (in any body): the text is then not checked again. It is asked only of keys
    /// without escapes, each once per body when sharing ([`Lines::share_repeated_keys`]). Only for
    /// [`Lines::next_into`]; the iterator never leaves tags out.
    pub fn elide_known_tags(mut self, known: &'a dyn Fn(&'a str) -> Option<u32>) -> Self {
        self.elide = Some(known);
        self
    }

    /// Parses every line through the general paths only: no field name taken from the previous line,
    /// no number or timestamp parsed in one pass. For [`crate::check_round_trip`], which checks that
    /// both ways give the same lines and errors.
    pub(crate) fn without_fast_paths(mut self) -> Self {
        self.fast = false;
        self
    }

    /// Lines so far that took an earlier line's tags ([`Lines::share_repeated_keys`]).
    pub fn shared_lines(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.hits)
    }

    fn text_end(&self) -> usize {
        self.text_start + self.text.len()
    }

    /// Moves past a line whose terminating `\n` is at `newline` (or the body's end) and which holds
    /// `newlines` more `\n` inside string values.
    fn advance(&mut self, newline: usize, newlines: usize) {
        let next = newline.saturating_add(1).min(self.body.len());
        if self.text_end() < next {
            // The line held the invalid byte: validate again from the next line on.
            self.text_start = next;
            self.text = valid_prefix(self.body.get(next..).unwrap_or_default());
        }
        self.pos = next;
        self.line_number += 1 + newlines;
    }

    /// Parses the line starting at `start` (its first non-blank byte at `first`), appending its tags
    /// and fields (nothing if it fails), and moves past it.
    fn record(
        &mut self,
        start: usize,
        first: usize,
        tags: &mut Tags<'a>,
        fields: &mut Fields<'a>,
    ) -> Result<LineHead<'a>, ParseError> {
        let mut parser = Parser {
            buf: self.body,
            text: self.text,
            text_start: self.text_start,
            newlines: 0,
            predicted: false,
            tags_predicted: None,
            fast: self.fast,
        };
        let (tags_len, fields_len) = (tags.len(), fields.len());
        let key = if self.shared.is_some() || self.elide.is_some() { SharedKeys::key_at(self.body, first) } else { None };
        let known = key.and_then(|k| self.shared.as_ref()?.keys.get(k));
        // A key not shared yet, which the caller knows: its text, when it is valid UTF-8 (else the full
        // parse reports where it is not).
        let elided = match (key, known, self.elide) {
            (Some(k), None, Some(elide)) if first + k.len() <= self.text_end() => {
                let text = &self.text[first - self.text_start..first - self.text_start + k.len()];
                elide(text).map(|token| SharedKey {
                    key: text,
                    measurement: Cow::Borrowed(text.split_once(',').map_or(text, |(m, _)| m)),
                    tags: tags_len..tags_len,
                    elided: Some(token),
                })
            }
            _ => None,
        };
        let parsed = match (key, known.or(elided.as_ref())) {
            (Some(key), Some(known)) => parser.known_key(first + key.len(), known, &self.scratch.field_names, fields),
            _ => parser.line(first, &mut self.scratch, tags, fields),
        };
        let hit = known.is_some();
        let (outcome, eol, newline, newlines) = match parsed {
            Ok((line, eol)) => (Ok(line), eol, newline_at(self.body, eol), parser.newlines),
            Err(fail) => {
                // Resume after the first newline the parser did not consume as part of a string.
                let newline = find(self.body, fail.resume, NEWLINE);
                let eol = if newline > first && self.body.get(newline - 1) == Some(&b'\r') {
                    newline - 1
                } else {
                    newline
                };
                let newlines = count_newlines(self.body.get(start..newline).unwrap_or_default());
                (Err((fail.kind, fail.at)), eol, newline, newlines)
            }
        };
        let outcome = if eol.saturating_sub(start) > self.line_bytes_max {
            Err((
                ParseErrorKind::LineTooLong {
                    limit: self.line_bytes_max,
                },
                start + self.line_bytes_max,
            ))
        } else if self.text_end() < eol {
            Err((ParseErrorKind::InvalidUtf8, self.text_end()))
        } else {
            outcome
        };
        let line_number = self.line_number;
        self.advance(newline, newlines);
        match outcome {
            Ok(mut line) => {
                line.line_number = line_number;
                if let (Some(key), Some(shared)) = (key, self.shared.as_mut()) {
                    if hit {
                        shared.hits += 1;
                    } else {
                        // No backslash before the first space: the parse's key is those bytes.
                        debug_assert_eq!(key, line.series_key.as_bytes());
                        if shared.keys.len() < SHARED_KEYS_MAX {
                            let known = SharedKey {
                                key: line.series_key,
                                measurement: line.measurement.clone(),
                                tags: line.tags.clone(),
                                elided: line.elided,
                            };
                            shared.keys.insert(key, known);
                        }
                    }
                }
                self.scratch.tags_hint = line.tags.len().min(CAPACITY_HINT_MAX);
                self.scratch.fields_hint = line.fields.len().min(CAPACITY_HINT_MAX);
                if !parser.predicted {
                    remember_names(&mut self.scratch.field_names, fields.get(line.fields.clone()).unwrap_or_default());
                }
                if parser.tags_predicted == Some(false) {
                    remember_names(&mut self.scratch.tag_keys, tags.get(line.tags.clone()).unwrap_or_default());
                }
                Ok(line)
            }
            Err((kind, at)) => Err({
                tags.truncate(tags_len);
                fields.truncate(fields_len);
                ParseError {
                    line_number,
                    column: at.saturating_sub(start) + 1,
                    kind,
                    line_text: error::line_text(self.body.get(first..eol).unwrap_or_default()),
                }
            }),
        }
    }

    /// The next line, like [`Iterator::next`], with its tags and fields appended to `tags` and
    /// `fields` (which the caller may reuse for every line of a body) instead of vectors of its own.
    /// A line that fails appends nothing.
    pub fn next_into(
        &mut self,
        tags: &mut Tags<'a>,
        fields: &mut Fields<'a>,
    ) -> Option<Result<LineHead<'a>, ParseError>> {
        while self.pos < self.body.len() {
            let start = self.pos;
            let first = skip_blanks(self.body, start);
            if !is_eol(self.body, first) && self.body.get(first) != Some(&b'#') {
                return Some(self.record(start, first, tags, fields));
            }
            // Blank or comment line: comments are not checked, not even for UTF-8 (as InfluxDB).
            self.advance(find(self.body, first, NEWLINE), 0);
        }
        None
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Result<Line<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Each line has vectors of its own here: an earlier line's tags are not in them, and every
        // line's own tags are.
        self.shared = None;
        self.elide = None;
        let mut tags = Vec::with_capacity(self.scratch.tags_hint);
        let mut fields = Vec::with_capacity(self.scratch.fields_hint);
        let head = self.next_into(&mut tags, &mut fields)?;
        Some(head.map(|h| Line {
            measurement: h.measurement,
            tags,
            fields,
            timestamp: h.timestamp,
            line_number: h.line_number,
        }))
    }
}

impl std::iter::FusedIterator for Lines<'_> {}

/// Why a line failed: the error, its position, and where to look for the line's end.
struct Fail {
    kind: ParseErrorKind,
    at: usize,
    /// The line ends at the first `\n` at or after this (everything before was consumed by the
    /// parser, including newlines inside complete strings).
    resume: usize,
}

type Parsed<T> = Result<T, Fail>;

fn fail<T>(kind: ParseErrorKind, at: usize) -> Parsed<T> {
    fail_resuming(kind, at, at)
}

fn fail_resuming<T>(kind: ParseErrorKind, at: usize, resume: usize) -> Parsed<T> {
    Err(Fail { kind, at, resume })
}

/// One line's parse. Positions are indexes into the whole body.
struct Parser<'a> {
    buf: &'a [u8],
    /// Valid UTF-8 text of `buf[text_start..]` up to the first invalid byte.
    text: &'a str,
    text_start: usize,
    /// `\n` seen inside string values so far.
    newlines: usize,
    /// Set by [`Parser::fields`]: every field name of the line was the one at its place in the
    /// previous line's (so they are distinct, as those were).
    predicted: bool,
    /// Set by [`Parser::tags`]: whether every tag key was the one at its place in the previous line
    /// whose tags were parsed. `None` when the line's tags were not parsed.
    tags_predicted: Option<bool>,
    /// Names from the previous line and numbers and timestamps in one pass are tried first (see
    /// [`Lines::without_fast_paths`]).
    fast: bool,
}

impl<'a> Parser<'a> {
    /// Parses the line whose first non-blank byte is at `first`; returns it (line number unset) and
    /// the position of its line terminator (or the body's end).
    /// Parses the line whose first non-blank byte is at `first`, appending its tags and fields to
    /// `tags` and `fields`; returns its head (line number unset) and the position of its line
    /// terminator (or the body's end). On failure the vectors may hold part of the line: the caller
    /// truncates them.
    fn line(
        &mut self,
        first: usize,
        scratch: &mut Scratch<'a>,
        tags: &mut Tags<'a>,
        fields: &mut Fields<'a>,
    ) -> Parsed<(LineHead<'a>, usize)> {
        if self.buf.get(first) == Some(&b',') {
            return fail(ParseErrorKind::MissingMeasurement, first);
        }
        let (end, escaped) = self.scan_name(first, MEASUREMENT_STOP, MEASUREMENT_ESCAPES);
        let measurement = self.name(first, end, escaped, MEASUREMENT_ESCAPES)?;
        let tags_start = tags.len();
        let mut pos = end;
        if self.buf.get(pos) == Some(&b',') {
            pos = self.tags(pos, tags, &mut scratch.tag_starts, &scratch.tag_keys)?;
        }
        if self.buf.get(pos) != Some(&b' ') {
            return fail(ParseErrorKind::MissingFields, pos);
        }
        // Keys found where the previous line had them are distinct, as those were.
        let repeat = if self.tags_predicted == Some(true) { None } else { first_repeat(&tags[tags_start..]) };
        if let Some(repeat) = repeat {
            let at = scratch.tag_starts.get(repeat).copied().unwrap_or(pos);
            return fail(ParseErrorKind::DuplicateTags, at);
        }
        // Every byte of it was checked as text with the names in it.
        let series_key = self.str(first, pos)?;
        self.fields_and_time(pos, measurement, series_key, tags_start..tags.len(), &scratch.field_names, fields)
    }

    /// [`Parser::line`] for a line whose series key, the bytes before `space`, an earlier line had: its
    /// measurement, tags and series key are that line's (the key the very same text, at the same
    /// address: see [`LineHead::series_key`]).
    fn known_key(
        &mut self,
        space: usize,
        known: &SharedKey<'a>,
        names: &[Option<&'a str>],
        fields: &mut Fields<'a>,
    ) -> Parsed<(LineHead<'a>, usize)> {
        let mut parsed = self.fields_and_time(space, known.measurement.clone(), known.key, known.tags.clone(), names, fields);
        if let Ok((head, _)) = &mut parsed {
            head.elided = known.elided;
        }
        parsed
    }

    /// The rest of a line after its series key (`space` is the space after it). `names` are the
    /// previous line's field names ([`Scratch::field_names`]).
    fn fields_and_time(
        &mut self,
        space: usize,
        measurement: Cow<'a, str>,
        series_key: &'a str,
        tags: Range<usize>,
        names: &[Option<&'a str>],
        fields: &mut Fields<'a>,
    ) -> Parsed<(LineHead<'a>, usize)> {
        let mut pos = skip_blanks(self.buf, space + 1);
        if is_eol(self.buf, pos) {
            return fail(ParseErrorKind::MissingFields, pos);
        }
        let fields_start = fields.len();
        pos = self.fields(pos, names, fields)?;
        if !self.predicted {
            dedupe_last_wins(fields, fields_start);
        }
        let (timestamp, eol) = self.timestamp(pos)?;
        Ok((
            LineHead {
                measurement,
                series_key,
                tags,
                fields: fields_start..fields.len(),
                timestamp,
                line_number: 0,
                elided: None,
            },
            eol,
        ))
    }

    /// The name at `at` when it is `names[nth]` (the previous line's at the same place) followed by
    /// `=`, and the fast paths are on.
    #[inline(always)]
    fn known_name(&self, names: &[Option<&'a str>], nth: usize, at: usize) -> Option<&'a str> {
        if !self.fast {
            return None;
        }
        names.get(nth).copied().flatten().filter(|n| name_at(self.buf, at, n))
    }

    /// Parses `,key=value` pairs from the comma at `comma`; returns the position of the space that
    /// ends them. A key is first compared with the one at its place in the previous line parsed in
    /// full (`keys`), as [`Parser::fields`] does with field names; [`Parser::tags_predicted`] says
    /// whether every key was found so.
    fn tags(
        &mut self,
        mut comma: usize,
        tags: &mut Vec<(Cow<'a, str>, Cow<'a, str>)>,
        starts: &mut Vec<usize>,
        keys: &[Option<&'a str>],
    ) -> Parsed<usize> {
        starts.clear();
        let mut predicted = true;
        let mut nth = 0;
        loop {
            let key = comma + 1;
            let known = self.known_name(keys, nth, key);
            nth += 1;
            let (key_end, key_name) = if let Some(k) = known {
                (key + k.len(), Cow::Borrowed(k))
            } else {
                predicted = false;
                let bad_start = self.buf.get(key).is_none_or(|&b| class(b) & (SPACE | COMMA | EQUALS) != 0);
                if bad_start || is_eol(self.buf, key) {
                    return fail(ParseErrorKind::MissingTagKey, key);
                }
                let (key_end, key_escaped) = self.scan_name(key, NAME_STOP, NAME_ESCAPES);
                if self.buf.get(key_end) != Some(&b'=') {
                    return fail(ParseErrorKind::MissingTagValue, key_end);
                }
                (key_end, self.name(key, key_end, key_escaped, NAME_ESCAPES)?)
            };
            let value = key_end + 1;
            if matches!(self.buf.get(value), Some(b',' | b' ')) || is_eol(self.buf, value) {
                return fail(ParseErrorKind::MissingTagValue, key_end); // Points at the `=`.
            }
            // InfluxDB takes a value's first byte as is, even an `=` (`a==b` is the value `=b`).
            let from = if self.buf.get(value) == Some(&b'=') {
                value + 1
            } else {
                value
            };
            let (value_end, value_escaped) = self.scan_name(from, NAME_STOP, NAME_ESCAPES);
            let stop = self.buf.get(value_end).copied();
            if stop == Some(b'=') {
                return fail(ParseErrorKind::InvalidTagFormat, value_end);
            }
            let value_name = self.name(value, value_end, value_escaped, NAME_ESCAPES)?;
            push((key_name, value_name), tags);
            starts.push(key);
            match stop {
                Some(b',') => comma = value_end,
                Some(b' ') => {
                    self.tags_predicted = Some(predicted);
                    return Ok(value_end);
                }
                _ => return fail(ParseErrorKind::MissingFields, value_end),
            }
        }
    }

    /// Parses `key=value[,key=value...]` from `key`; returns the position after the last value (a
    /// space or the line's end).
    ///
    /// A name is first compared with the one at its place in the previous line (`names`): most
    /// bodies repeat one set of fields line after line. The same bytes followed by `=` scan to the same
    /// name, and a name without escapes is those bytes, so the earlier line's text is taken as is.
    /// [`Parser::predicted`] says whether every name was found so.
    fn fields(
        &mut self,
        mut key: usize,
        names: &[Option<&'a str>],
        fields: &mut Vec<(Cow<'a, str>, FieldValue<'a>)>,
    ) -> Parsed<usize> {
        let mut predicted = true;
        let mut nth = 0;
        loop {
            let known = self.known_name(names, nth, key);
            let (name, key_end) = match known {
                Some(n) => (Cow::Borrowed(n), key + n.len()),
                None => {
                    predicted = false;
                    let (key_end, escaped) = self.scan_name(key, NAME_STOP, NAME_ESCAPES);
                    let at_equals = self.buf.get(key_end) == Some(&b'=');
                    if key_end == key && at_equals {
                        return fail(ParseErrorKind::MissingFieldKey, key);
                    }
                    if key_end == key || !at_equals {
                        return fail(ParseErrorKind::InvalidFieldFormat, key_end);
                    }
                    (self.name(key, key_end, escaped, NAME_ESCAPES)?, key_end)
                }
            };
            let plain = if self.fast { plain_number(self.buf, key_end + 1) } else { None };
            let (value, end) = match plain {
                Some(parsed) => parsed,
                None => self.field_value(key_end + 1)?,
            };
            push((name, value), fields);
            nth += 1;
            if self.buf.get(end) != Some(&b',') {
                self.predicted = predicted;
                return Ok(end);
            }
            key = end + 1;
        }
    }

    /// Parses the field value at `at`; returns it and the position after it.
    fn field_value(&mut self, at: usize) -> Parsed<(FieldValue<'a>, usize)> {
        // A missing value is reported at the `=` before it.
        let equals = at.saturating_sub(1);
        let Some(&first) = self.buf.get(at) else {
            return fail(ParseErrorKind::MissingFieldValue, equals);
        };
        match first {
            b'"' => self.string(at),
            // `N` and `n` go here as InfluxDB does, so NaN is "invalid number".
            b'0'..=b'9' | b'.' | b'-' | b'N' | b'n' => {
                let end = self.scan_value(at, VALUE_STOP);
                match parse_number(self.buf.get(at..end).unwrap_or_default()) {
                    Ok(value) => Ok((value, end)),
                    Err(e) => fail_resuming(ParseErrorKind::InvalidFieldValue(e), at, end),
                }
            }
            _ if class(first) & (SPACE | COMMA) != 0 || is_eol(self.buf, at) => {
                fail(ParseErrorKind::MissingFieldValue, equals)
            }
            _ => {
                let end = self.scan_value(at, VALUE_STOP);
                match parse_bool(self.buf.get(at..end).unwrap_or_default()) {
                    Ok(value) => Ok((FieldValue::Boolean(value), end)),
                    Err(e) => fail_resuming(ParseErrorKind::InvalidFieldValue(e), at, end),
                }
            }
        }
    }

    /// Parses the string value whose opening quote is at `quote`.
    fn string(&mut self, quote: usize) -> Parsed<(FieldValue<'a>, usize)> {
        let mut pos = quote + 1;
        let mut escaped = false;
        loop {
            pos = find(self.buf, pos, STRING_STOP);
            match self.buf.get(pos) {
                Some(b'"') => break,
                Some(b'\\') if matches!(self.buf.get(pos + 1), Some(b'\\' | b'"')) => {
                    escaped = true;
                    pos += 2;
                }
                Some(b'\\') => pos += 1,
                Some(_) => {
                    self.newlines += 1;
                    pos += 1;
                }
                // Unterminated: for recovery, the line ends at the newline after the quote.
                None => return fail_resuming(ParseErrorKind::UnterminatedString, quote, quote + 1),
            }
        }
        let text = self.str(quote + 1, pos)?;
        let value = if escaped {
            Cow::Owned(unescape_string(text))
        } else {
            Cow::Borrowed(text)
        };
        let end = pos + 1;
        if !matches!(self.buf.get(end), Some(b',' | b' ')) && !is_eol(self.buf, end) {
            return fail(ParseErrorKind::InvalidFieldFormat, end);
        }
        Ok((FieldValue::String(value), end))
    }

    /// Parses the optional timestamp after the fields (`pos` is the space or line end after them);
    /// returns it and the position of the line terminator.
    fn timestamp(&self, pos: usize) -> Parsed<(Option<i64>, usize)> {
        // The common case, ` digits\n`, in one pass; anything else (a sign, more blanks, `\r`, the
        // body's end, more than 19 digits) takes the general path below.
        if self.fast && self.buf.get(pos) == Some(&b' ') {
            let (value, end) = long_digits_at(self.buf, pos + 1);
            let digits = end - (pos + 1);
            // 19 digits (nanoseconds since 2001) fit a u64 unwrapped; the conversion checks the range.
            if (1..=19).contains(&digits)
                && self.buf.get(end) == Some(&b'\n')
                && let Ok(t) = i64::try_from(value)
            {
                return Ok((Some(t), end));
            }
        }
        let start = skip_blanks(self.buf, pos);
        if is_eol(self.buf, start) {
            return Ok((None, start));
        }
        let end = self.scan_value(start, TIME_STOP);
        let timestamp = match parse_i64(self.buf.get(start..end).unwrap_or_default()) {
            Ok(t) => t,
            Err(Digits::Syntax) => {
                return fail_resuming(ParseErrorKind::InvalidTimestamp, start, end);
            }
            Err(Digits::Overflow) => {
                return fail_resuming(ParseErrorKind::TimestampOutOfRange, start, end);
            }
        };
        let mut after = end;
        while self.buf.get(after) == Some(&b' ') {
            after += 1;
        }
        if !is_eol(self.buf, after) {
            return fail(ParseErrorKind::TrailingGarbage, after);
        }
        Ok((Some(timestamp), after))
    }

    /// Finds the end of a name starting at `pos`: the first byte in `stop` not escaped by a
    /// backslash. Returns it and whether an escape was seen.
    #[inline(always)]
    fn scan_name(&self, mut pos: usize, stop: u8, escapes: u8) -> (usize, bool) {
        let mut escaped = false;
        loop {
            pos = find(self.buf, pos, stop);
            match self.buf.get(pos) {
                Some(b'\\')
                    if self
                        .buf
                        .get(pos + 1)
                        .is_some_and(|&b| class(b) & escapes != 0) =>
                {
                    escaped = true;
                    pos += 2;
                }
                // A backslash before anything else is a literal backslash.
                Some(b'\\') => pos += 1,
                Some(b'\r') if !is_eol(self.buf, pos) => pos += 1,
                _ => return (pos, escaped),
            }
        }
    }

    /// Finds the end of a number, boolean or timestamp starting at `pos`.
    #[inline(always)]
    fn scan_value(&self, mut pos: usize, stop: u8) -> usize {
        loop {
            pos = find(self.buf, pos, stop);
            if self.buf.get(pos) == Some(&b'\r') && !is_eol(self.buf, pos) {
                pos += 1;
            } else {
                return pos;
            }
        }
    }

    /// The name `buf[from..to]`, unescaped if `escaped`.
    #[inline(always)]
    fn name(&self, from: usize, to: usize, escaped: bool, escapes: u8) -> Parsed<Cow<'a, str>> {
        let text = self.str(from, to)?;
        Ok(if escaped {
            Cow::Owned(unescape_name(text, escapes))
        } else {
            Cow::Borrowed(text)
        })
    }

    /// `buf[from..to]` as text; fails if it reaches invalid UTF-8.
    #[inline(always)]
    fn str(&self, from: usize, to: usize) -> Parsed<&'a str> {
        let text = match (
            from.checked_sub(self.text_start),
            to.checked_sub(self.text_start),
        ) {
            (Some(from), Some(to)) => self.text.get(from..to),
            _ => None,
        };
        text.ok_or(Fail {
            kind: ParseErrorKind::InvalidUtf8,
            at: from,
            resume: to,
        })
    }
}

/// `vec.push(item)`, written so that the common case (spare capacity) stores `item` straight from
/// registers: with the growth call on the same path, the compiler spills the item to the stack and
/// copies it with wider loads than its stores, a store-forwarding stall per tag and field.
#[inline(always)]
#[allow(clippy::if_same_then_else)] // The branches differ in what the compiler knows.
fn push<T>(item: T, vec: &mut Vec<T>) {
    if vec.len() < vec.capacity() {
        vec.push(item);
    } else {
        vec.push(item);
    }
}

/// Position of the first byte at or after `from` whose class is in `mask`, or the body's length.
///
/// Looks at 8 bytes at a time (SWAR): [`candidates`] flags a superset of the wanted bytes, and the
/// lowest flag is checked against the class table. A byte loop is several times slower on TSBS
/// lines, and this is most of the parser's work.
#[inline(always)]
fn find(buf: &[u8], from: usize, mask: u8) -> usize {
    let mut pos = from;
    while let Some(chunk) = buf.get(pos..pos.saturating_add(8)) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let hits = candidates(word, mask);
        if hits == 0 {
            pos += 8;
            continue;
        }
        let at = pos + (hits.trailing_zeros() / 8) as usize;
        if buf.get(at).is_some_and(|&b| class(b) & mask != 0) {
            return at;
        }
        pos = at + 1; // A control byte flagged as a possible line end.
    }
    match buf.get(pos..) {
        Some(rest) => rest
            .iter()
            .position(|&b| class(b) & mask != 0)
            .map_or(buf.len(), |i| pos + i),
        None => buf.len(),
    }
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Flags (high bit of the byte) every byte of `word` whose class may be in `mask`; the lowest flag
/// is exact for the tests it combines, but `< 0x21` also flags tabs and other control bytes.
#[inline(always)]
fn candidates(word: u64, mask: u8) -> u64 {
    // Lowest-flag-exact tests: a borrow only reaches a byte above a byte that matched.
    let below = |n: u8| word.wrapping_sub(LOW_BITS * u64::from(n)) & !word & HIGH_BITS;
    let equal = |c: u8| {
        let x = word ^ (LOW_BITS * u64::from(c));
        x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
    };
    let mut hits = 0;
    if mask & (SPACE | EOL) != 0 {
        hits |= below(b' ' + 1); // space, `\n`, `\r`
    } else if mask & NEWLINE != 0 {
        hits |= equal(b'\n');
    }
    if mask & COMMA != 0 {
        hits |= equal(b',');
    }
    if mask & EQUALS != 0 {
        hits |= equal(b'=');
    }
    if mask & BACKSLASH != 0 {
        hits |= equal(b'\\');
    }
    if mask & QUOTE != 0 {
        hits |= equal(b'"');
    }
    hits
}

/// Whether a line ends at `pos`: `\n`, `\r\n`, a `\r` ending the body, or the body's end.
#[inline(always)]
fn is_eol(buf: &[u8], pos: usize) -> bool {
    match buf.get(pos) {
        None | Some(b'\n') => true,
        Some(b'\r') => matches!(buf.get(pos + 1), None | Some(b'\n')),
        Some(_) => false,
    }
}

/// Keeps the names of `items` (a line's tags or fields) for the next line's [`Parser::known_name`]:
/// `None` for a name with escapes, which is not the body's text.
fn remember_names<'a, V>(names: &mut Vec<Option<&'a str>>, items: &[(Cow<'a, str>, V)]) {
    names.clear();
    names.extend(items.iter().take(CAPACITY_HINT_MAX).map(|(k, _)| match k {
        Cow::Borrowed(k) => Some(*k),
        Cow::Owned(_) => None,
    }));
}

/// Whether `buf[at..]` starts with `name` and then `=`.
#[inline(always)]
fn name_at(buf: &[u8], at: usize, name: &str) -> bool {
    let n = name.len();
    buf.get(at + n) == Some(&b'=') && buf.get(at..at + n).is_some_and(|b| same_bytes(b, name.as_bytes()))
}

/// `a == b`, slices of 8 to 16 bytes (most names) compared as two overlapping words in registers
/// rather than through a call to `memcmp` (7 % of a TSBS line's parse, a few percent once inlined).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    let word = |s: &[u8], at: usize| s.get(at..at + 8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()));
    if n == b.len() && (8..=16).contains(&n) {
        word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
    } else {
        a == b
    }
}

/// Most digits [`plain_number`] takes as an integer: 18 cannot overflow an `i64`, either sign.
const PLAIN_INTEGER_DIGITS_MAX: usize = 18;
/// Most digits [`plain_number`] takes as a float: the value below 2^53, so exact in an `f64`.
const PLAIN_FLOAT_DIGITS_MAX: usize = 15;

/// The decimal digits at `at`: their value (wrapping past 19 digits; callers bound the count) and
/// where they end.
#[inline(always)]
fn digits_at(buf: &[u8], at: usize) -> (u64, usize) {
    more_digits(buf, at, 0)
}

/// [`digits_at`] continuing a number whose digits before `at` made `value`.
#[inline(always)]
fn more_digits(buf: &[u8], at: usize, mut value: u64) -> (u64, usize) {
    let mut pos = at;
    while let Some(&b) = buf.get(pos) {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        pos += 1;
    }
    (value, pos)
}

/// [`digits_at`] for a run of many digits (a timestamp: 19 in nanoseconds), 8 at a time while they
/// last: a digit at a time is a chain of 19 multiplications, each waiting for the one before.
#[inline(always)]
fn long_digits_at(buf: &[u8], at: usize) -> (u64, usize) {
    let (mut value, mut pos) = (0u64, at);
    for _ in 0..2 {
        let Some(digits) = buf.get(pos..pos + 8).and_then(|w| eight_digits(u64::from_le_bytes(w.try_into().ok()?))) else {
            break;
        };
        value = value.wrapping_mul(100_000_000).wrapping_add(digits);
        pos += 8;
    }
    more_digits(buf, pos, value)
}

/// The value of 8 ASCII digits loaded little-endian (the first digit in the lowest byte), or `None`
/// if a byte is not a digit (SWAR: three multiplications instead of eight).
#[inline(always)]
fn eight_digits(word: u64) -> Option<u64> {
    let d = word.wrapping_sub(0x3030_3030_3030_3030);
    // A byte below `0` sets its high bit in `d`, one above `9` in `d + 0x76`; a borrow or carry
    // between bytes only starts at a byte so flagged.
    if (d | d.wrapping_add(0x7676_7676_7676_7676)) & HIGH_BITS != 0 {
        return None;
    }
    let pairs = d.wrapping_mul(10).wrapping_add(d >> 8);
    let mask = 0x0000_00FF_0000_00FF;
    let quads = (pairs & mask).wrapping_mul(100 + (1_000_000 << 32)).wrapping_add(((pairs >> 16) & mask).wrapping_mul(1 + (10_000 << 32)));
    Some(quads >> 32)
}

/// Powers of ten exact in an `f64`, for [`plain_number`].
const POW10: [f64; PLAIN_FLOAT_DIGITS_MAX + 1] =
    [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/// The number value at `at` and the position after it, in one pass, when it is one of the common
/// shapes: `-?digits` then `i` (up to 18 digits), `digits` then `u` (up to 18), or `-?digits(.digits)?`
/// with at most 15 digits in all, followed by `,`, a space or `\n`. `None` for anything else, which
/// [`Parser::field_value`] parses (and reports) in full.
///
/// Why: scanning a value to its end and then parsing it, floats through `str::parse`, was a fifth of
/// parsing a TSBS line. A float here is its digits as an integer `m`, exact below 2^53, divided by
/// 10^k, exact up to 10^22: one correctly rounded division, so the same `f64` as `str::parse` gives
/// (Clinger's fast path).
#[inline(always)]
fn plain_number(buf: &[u8], at: usize) -> Option<(FieldValue<'static>, usize)> {
    let negative = buf.get(at) == Some(&b'-');
    let start = at + usize::from(negative);
    let (int, int_end) = digits_at(buf, start);
    let int_digits = int_end - start;
    if int_digits == 0 || int_digits > PLAIN_INTEGER_DIGITS_MAX {
        return None;
    }
    let ends_value = |pos: usize| matches!(buf.get(pos), Some(b',' | b' ' | b'\n'));
    let float = |v: f64| FieldValue::Float(if negative { -v } else { v });
    let (value, end) = match buf.get(int_end) {
        Some(b'i') => {
            let v = int as i64;
            (FieldValue::Integer(if negative { -v } else { v }), int_end + 1)
        }
        Some(b'u') if !negative => (FieldValue::UInteger(int), int_end + 1),
        Some(b'.') => {
            let (part, end) = digits_at(buf, int_end + 1);
            let fraction = end - (int_end + 1);
            if int_digits + fraction > PLAIN_FLOAT_DIGITS_MAX {
                return None;
            }
            // Every digit, the point left out: below 10^15.
            let m = int * POW10[fraction] as u64 + part;
            (float(m as f64 / POW10[fraction]), end)
        }
        _ if int_digits <= PLAIN_FLOAT_DIGITS_MAX => (float(int as f64), int_end),
        _ => return None,
    };
    ends_value(end).then_some((value, end))
}

/// The `\n` of the line terminator at `eol` (or the body's length if there is none).
fn newline_at(buf: &[u8], eol: usize) -> usize {
    match buf.get(eol) {
        Some(b'\r') if buf.get(eol + 1) == Some(&b'\n') => eol + 1,
        Some(b'\r') => buf.len(),
        _ => eol,
    }
}

/// Skips spaces, tabs and NULs (InfluxDB's whitespace between sections).
#[inline(always)]
fn skip_blanks(buf: &[u8], mut pos: usize) -> usize {
    while matches!(buf.get(pos), Some(b' ' | b'\t' | 0)) {
        pos += 1;
    }
    pos
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// The longest valid UTF-8 prefix of `bytes`.
///
/// Checked by `simdutf8`, 32 or 64 bytes at a time where the processor can, rather than by
/// `std::str::from_utf8`, which took 2.6–3 % of the server's CPU loading TSBS's 100 hosts (a whole
/// 3.4 MB body checked before its first line is parsed).
fn valid_prefix(bytes: &[u8]) -> &str {
    match simdutf8::compat::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => bytes
            .get(..e.valid_up_to())
            .and_then(|b| simdutf8::compat::from_utf8(b).ok())
            .unwrap_or_default(),
    }
}

/// Removes the backslash of each `\x` with `x` in `escapes`.
fn unescape_name(text: &str, escapes: u8) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut pos) = (0, 0);
    while let Some(&b) = bytes.get(pos) {
        if b == b'\\' && bytes.get(pos + 1).is_some_and(|&n| class(n) & escapes != 0) {
            // Both bytes are ASCII, so these are character boundaries.
            out.push_str(text.get(copied..pos).unwrap_or_default());
            copied = pos + 1;
            pos += 2;
        } else {
            pos += 1;
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Unescapes `\\` and `\"` in a string value; other backslashes stay.
fn unescape_string(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut pos) = (0, 0);
    while let Some(&b) = bytes.get(pos) {
        if b == b'\\' && matches!(bytes.get(pos + 1), Some(b'\\' | b'"')) {
            out.push_str(text.get(copied..pos).unwrap_or_default());
            copied = pos + 1;
            pos += 2;
        } else {
            pos += 1;
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Index of the first entry whose key repeats an earlier entry's key.
#[inline]
fn first_repeat<V>(items: &[(Cow<'_, str>, V)]) -> Option<usize> {
    if items.len() > PAIRWISE_MAX {
        let mut keyed: Vec<(&str, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (&**k, i))
            .collect();
        keyed.sort_unstable();
        return keyed
            .windows(2)
            .filter_map(|w| {
                if let [(a, _), (b, j)] = w {
                    (a == b).then_some(*j)
                } else {
                    None
                }
            })
            .min();
    }
    // Compare cheap fingerprints first: distinct keys nearly always differ in length or last bytes.
    let mut prints = [0u32; PAIRWISE_MAX];
    for (print, (key, _)) in prints.iter_mut().zip(items) {
        *print = fingerprint(key);
    }
    for j in 1..items.len() {
        let print = prints[j % PAIRWISE_MAX];
        for i in 0..j {
            if prints[i % PAIRWISE_MAX] == print
                && items.get(i).map(|e| &e.0) == items.get(j).map(|e| &e.0)
            {
                return Some(j);
            }
        }
    }
    None
}

/// Length and last two bytes (keys of a family, like `usage_user` and `usage_idle`, share their
/// start): equal for equal keys.
#[inline(always)]
fn fingerprint(key: &str) -> u32 {
    let bytes = key.as_bytes();
    let tail = match bytes {
        [.., a, b] => u32::from(*a) << 8 | u32::from(*b),
        [a] => u32::from(*a),
        [] => 0,
    };
    ((bytes.len() as u32) << 16) | tail
}

/// Keeps one field per key: the last value written (as in InfluxDB), at the position of the key's
/// first occurrence. Keeping that position means the first field stays first, and only the first
/// field key cannot start with a tab or NUL (those would be skipped as blanks when written back).
#[inline]
fn dedupe_last_wins(all: &mut Vec<(Cow<'_, str>, FieldValue<'_>)>, from: usize) {
    if all
        .get(from..)
        .is_none_or(|line| first_repeat(line).is_none())
    {
        return;
    }
    // Rare: worked on in a vector of its own, then put back.
    let mut fields = all.split_off(from);
    let mut dropped = vec![false; fields.len()];
    let mut moves = Vec::new();
    {
        let mut keyed: Vec<(&str, usize)> = fields
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (&**k, i))
            .collect();
        keyed.sort_unstable();
        for group in keyed.chunk_by(|a, b| a.0 == b.0) {
            if let (Some(&(_, first)), Some(&(_, last))) = (group.first(), group.last())
                && first != last
            {
                moves.push((first, last));
                for &(_, i) in group.iter().skip(1) {
                    if let Some(d) = dropped.get_mut(i) {
                        *d = true;
                    }
                }
            }
        }
    }
    for (to, from) in moves {
        let value = fields
            .get_mut(from)
            .map(|f| std::mem::replace(&mut f.1, FieldValue::Boolean(false)));
        if let (Some(value), Some(slot)) = (value, fields.get_mut(to)) {
            slot.1 = value;
        }
    }
    let mut index = 0;
    fields.retain(|_| {
        let keep = !dropped.get(index).copied().unwrap_or(false);
        index += 1;
        keep
    });
    all.append(&mut fields);
}

enum Digits {
    Syntax,
    Overflow,
}

/// Parses one or more ASCII digits.
#[inline]
fn parse_u64(digits: &[u8]) -> Result<u64, Digits> {
    if digits.is_empty() {
        return Err(Digits::Syntax);
    }
    if digits.len() <= 19 {
        // Up to 19 digits cannot overflow a u64: skip the checks (timestamps have 19).
        let (value, end) = digits_at(digits, 0);
        return if end == digits.len() { Ok(value) } else { Err(Digits::Syntax) };
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for &d in digits {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return Err(Digits::Syntax);
        }
        // Keep scanning after an overflow: a later bad byte makes it a syntax error instead.
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if overflow {
        Err(Digits::Overflow)
    } else {
        Ok(value)
    }
}

/// Parses `-?digits` as an `i64`.
#[inline]
fn parse_i64(text: &[u8]) -> Result<i64, Digits> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let magnitude = parse_u64(digits)?;
    let value = if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    };
    value.ok_or(Digits::Overflow)
}

/// Parses a number value: `12i`, `12u` or a float.
#[inline]
fn parse_number(token: &[u8]) -> Result<FieldValue<'static>, ValueError> {
    match token.split_last() {
        Some((b'i', text)) => match parse_i64(text) {
            Ok(v) => Ok(FieldValue::Integer(v)),
            Err(Digits::Syntax) => Err(ValueError::Number),
            Err(Digits::Overflow) => Err(ValueError::IntegerOutOfRange),
        },
        Some((b'u', text)) => match parse_u64(text) {
            Ok(v) => Ok(FieldValue::UInteger(v)),
            Err(Digits::Syntax) => Err(ValueError::Number),
            Err(Digits::Overflow) => Err(ValueError::UnsignedOutOfRange),
        },
        _ => parse_float(token).map(FieldValue::Float),
    }
}

/// Parses a float in InfluxDB's syntax, which is narrower than Rust's (no `+`, `inf`, `nan`).
fn parse_float(token: &[u8]) -> Result<f64, ValueError> {
    if !is_float_syntax(token) {
        return Err(ValueError::Number);
    }
    let text = std::str::from_utf8(token).map_err(|_| ValueError::Number)?;
    let value: f64 = text.parse().map_err(|_| ValueError::Number)?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ValueError::FloatOutOfRange)
    }
}

/// `-? digits? (. digits?)? ([eE] [+-]? digits)?` with at least one mantissa digit.
fn is_float_syntax(token: &[u8]) -> bool {
    let digits = |from: usize| {
        token
            .get(from..)
            .map_or(0, |r| r.iter().take_while(|b| b.is_ascii_digit()).count())
    };
    let mut pos = usize::from(token.first() == Some(&b'-'));
    let integer = digits(pos);
    pos += integer;
    let mut fraction = 0;
    if token.get(pos) == Some(&b'.') {
        fraction = digits(pos + 1);
        pos += 1 + fraction;
    }
    if integer + fraction == 0 {
        return false;
    }
    if matches!(token.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(token.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        let exponent = digits(pos);
        if exponent == 0 {
            return false;
        }
        pos += exponent;
    }
    pos == token.len()
}

fn parse_bool(token: &[u8]) -> Result<bool, ValueError> {
    match token {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => Ok(true),
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => Ok(false),
        _ => Err(ValueError::Boolean),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MASKS: [u8; 6] = [
        MEASUREMENT_STOP,
        NAME_STOP,
        VALUE_STOP,
        STRING_STOP,
        TIME_STOP,
        NEWLINE,
    ];

    fn naive(buf: &[u8], from: usize, mask: u8) -> usize {
        (from..buf.len())
            .find(|&i| class(buf[i]) & mask != 0)
            .unwrap_or(buf.len())
    }

    proptest! {
        /// The SWAR scan finds exactly what a byte loop finds, whatever bytes surround the target.
        #[test]
        fn find_matches_a_byte_loop(
            buf in prop::collection::vec(prop_oneof![
                3 => any::<u8>(),
                1 => prop::sample::select(b" ,=\\\n\r\"\t\x00\x7f\x80\xff!".to_vec()),
            ], 0..40),
            from in 0usize..45,
        ) {
            for mask in MASKS {
                prop_assert_eq!(find(&buf, from, mask), naive(&buf, from.min(buf.len()), mask), "mask {:#x}", mask);
            }
        }
    }

    #[test]
    fn find_every_special_at_every_offset() {
        for special in [b' ', b',', b'=', b'\\', b'\n', b'\r', b'"'] {
            for len in 0..20 {
                for at in 0..len {
                    let mut buf = vec![b'a'; len];
                    buf[at] = special;
                    // Bytes that only look special to the SWAR pre-filter must be skipped.
                    if at > 0 {
                        buf[at - 1] = b'\t';
                    }
                    for mask in MASKS {
                        assert_eq!(
                            find(&buf, 0, mask),
                            naive(&buf, 0, mask),
                            "{buf:?} {mask:#x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn digits() {
        assert!(matches!(parse_u64(b"18446744073709551615"), Ok(u64::MAX)));
        assert!(matches!(
            parse_u64(b"18446744073709551616"),
            Err(Digits::Overflow)
        ));
        assert!(matches!(
            parse_u64(b"9999999999999999999"),
            Ok(9_999_999_999_999_999_999)
        ));
        assert!(matches!(
            parse_u64(b"99999999999999999999x"),
            Err(Digits::Syntax)
        ));
        assert!(matches!(parse_u64(b""), Err(Digits::Syntax)));
        assert!(matches!(parse_i64(b"-"), Err(Digits::Syntax)));
        assert!(matches!(parse_i64(b"-0"), Ok(0)));
    }
}
