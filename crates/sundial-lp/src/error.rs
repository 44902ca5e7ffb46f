//! Parse errors: what went wrong, where, and InfluxDB's wording for it.

use std::fmt;

/// Longest [`ParseError::line_text`] kept, in bytes (plus `...` when cut).
pub(crate) const LINE_TEXT_MAX: usize = 200;

/// A line that could not be parsed.
///
/// `Display` reads like InfluxDB's message with the position in front:
/// `line 3, column 17: unable to parse 'cpu,host=a usage=': missing field value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based number of the line in the body where the bad line starts.
    pub line_number: usize,
    /// 1-based byte offset of the problem from the start of the line (leading blanks included). For a
    /// line that spans several lines through a multi-line string, it keeps counting across the
    /// newlines.
    pub column: usize,
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// The offending line without leading blanks and line terminator (invalid UTF-8 replaced by
    /// U+FFFD), cut to about 200 bytes with `...` appended when longer.
    pub line_text: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: unable to parse '{}': {}",
            self.line_number, self.column, self.line_text, self.kind
        )
    }
}

impl std::error::Error for ParseError {}

/// Why a line was rejected. `Display` gives InfluxDB's message where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The line starts with `,`.
    MissingMeasurement,
    /// A `,` after the measurement or a tag is not followed by a tag key.
    MissingTagKey,
    /// A tag key has no `=` (the column points where it should be) or nothing after it (the column
    /// points at the `=`).
    MissingTagValue,
    /// A tag value contains an unescaped `=`.
    InvalidTagFormat,
    /// Two tags have the same key.
    DuplicateTags,
    /// The line ends before any field.
    MissingFields,
    /// A field has nothing before its `=`.
    MissingFieldKey,
    /// A field has nothing after its `=` (the column points at the `=`).
    MissingFieldValue,
    /// The field section is not a list of `key=value` (a key without `=`, a stray `,`, junk after a
    /// string value).
    InvalidFieldFormat,
    /// A field value that is not a valid number, boolean or in range.
    InvalidFieldValue(ValueError),
    /// A string field value without its closing quote.
    UnterminatedString,
    /// The timestamp is not a decimal integer.
    InvalidTimestamp,
    /// The timestamp does not fit in an `i64`.
    TimestampOutOfRange,
    /// Something other than spaces follows the timestamp.
    TrailingGarbage,
    /// The line contains invalid UTF-8 (the column points at the first bad byte).
    InvalidUtf8,
    /// The line is longer than `limit` bytes ([`crate::LINE_BYTES_MAX`] by default).
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Self::MissingMeasurement => "missing measurement",
            Self::MissingTagKey => "missing tag key",
            Self::MissingTagValue => "missing tag value",
            Self::InvalidTagFormat => "invalid tag format",
            Self::DuplicateTags => "duplicate tags",
            Self::MissingFields => "missing fields",
            Self::MissingFieldKey => "missing field key",
            Self::MissingFieldValue => "missing field value",
            Self::InvalidFieldFormat => "invalid field format",
            Self::InvalidFieldValue(e) => return e.fmt(f),
            Self::UnterminatedString => "unbalanced quotes",
            Self::InvalidTimestamp => "bad timestamp",
            Self::TimestampOutOfRange => "bad timestamp: value out of range",
            Self::TrailingGarbage => "point is invalid: unexpected text after timestamp",
            Self::InvalidUtf8 => "invalid UTF-8",
            Self::LineTooLong { limit } => return write!(f, "line is longer than {limit} bytes"),
        };
        f.write_str(text)
    }
}

/// Why a field value was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a number: bad syntax, a bad suffix, NaN or infinity.
    Number,
    /// An `i` integer outside the `i64` range.
    IntegerOutOfRange,
    /// A `u` integer outside the `u64` range.
    UnsignedOutOfRange,
    /// A float that overflows `f64`.
    FloatOutOfRange,
    /// Not one of the boolean spellings.
    Boolean,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Number => "invalid number",
            Self::IntegerOutOfRange => "unable to parse integer: value out of range",
            Self::UnsignedOutOfRange => "unable to parse unsigned: value out of range",
            Self::FloatOutOfRange => "invalid float: value out of range",
            Self::Boolean => "invalid boolean",
        })
    }
}

/// The text shown for a bad line: lossy UTF-8, at most [`LINE_TEXT_MAX`] bytes plus `...`.
pub(crate) fn line_text(bytes: &[u8]) -> String {
    let cut = bytes.len().min(LINE_TEXT_MAX);
    let mut text = String::from_utf8_lossy(bytes.get(..cut).unwrap_or_default()).into_owned();
    // Replacement characters take 3 bytes each, so the lossy text can outgrow the cut.
    let lossy_len = text.len();
    let mut keep = lossy_len.min(LINE_TEXT_MAX);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    text.truncate(keep);
    if cut < bytes.len() || keep < lossy_len {
        text.push_str("...");
    }
    text
}
