//! Time literals: the strings InfluxQL compares `time` with (`time >= '2016-01-01T00:00:00Z'`).
//!
//! Accepted, as InfluxDB does: `YYYY-MM-DD` (midnight), `YYYY-MM-DD HH:MM:SS[.fraction]` and RFC 3339
//! `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. A fraction has 1 to 9 digits. Without a zone the time
//! is in the query's `tz()` zone, else UTC: [`parse_time_literal_parts`] hands the wall-clock time
//! and the explicit offset (if any) to a caller that knows the zone.

const NS_PER_SEC: i128 = 1_000_000_000;
const SECS_PER_DAY: i128 = 86_400;

/// A time literal taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLiteralParts {
    /// Nanoseconds since 1970-01-01T00:00:00 of the wall-clock time written, as if it were UTC.
    pub wall_ns: i128,
    /// The zone offset written (`Z` is `Some(0)`, `+02:00` is `Some(7200)`), in seconds east of UTC;
    /// `None` if the literal names no zone.
    pub offset_secs: Option<i32>,
}

impl TimeLiteralParts {
    /// Nanoseconds since the epoch, UTC: the written offset if any, else `default_offset_secs`
    /// (the `tz()` zone's offset at that time, or 0). `None` outside the `i64` range
    /// (1677-09-21 to 2262-04-11).
    pub fn to_utc_ns(&self, default_offset_secs: i32) -> Option<i64> {
        let offset = self.offset_secs.unwrap_or(default_offset_secs);
        i64::try_from(self.wall_ns - i128::from(offset) * NS_PER_SEC).ok()
    }
}

/// True if `s` starts like a date (`YYYY-MM-DD`), which is how InfluxDB decides a string compared
/// with `time` is meant as a time literal (and must then be valid).
pub fn looks_like_time_literal(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Parses a time literal to nanoseconds since the epoch, reading it as UTC if it names no zone.
/// `None` if malformed or out of range.
///
/// `'2016-01-01T00:00:00Z'`, `'2016-01-01T01:00:00+01:00'`, `'2016-01-01 00:00:00'` and
/// `'2016-01-01'` are all `1451606400000000000`.
pub fn parse_time_literal(s: &str) -> Option<i64> {
    parse_time_literal_parts(s)?.to_utc_ns(0)
}

/// Parses a time literal into its wall-clock time and explicit offset (see [`TimeLiteralParts`]).
pub fn parse_time_literal_parts(s: &str) -> Option<TimeLiteralParts> {
    let mut c = Cursor { b: s.as_bytes(), i: 0 };
    let year = c.digits(4)?;
    c.byte(b'-')?;
    let month = c.digits(2)?;
    c.byte(b'-')?;
    let day = c.digits(2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if c.done() {
        return Some(TimeLiteralParts { wall_ns: days * SECS_PER_DAY * NS_PER_SEC, offset_secs: None });
    }
    let separator = c.next()?;
    if !matches!(separator, b'T' | b't' | b' ') {
        return None;
    }
    let hour = c.digits(2)?;
    c.byte(b':')?;
    let minute = c.digits(2)?;
    c.byte(b':')?;
    let second = c.digits(2)?;
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut nanos: i128 = 0;
    if c.peek() == Some(b'.') {
        c.i += 1;
        let start = c.i;
        while c.peek().is_some_and(|b| b.is_ascii_digit()) {
            c.i += 1;
        }
        let n = c.i - start;
        if n == 0 || n > 9 {
            return None;
        }
        let frac: i128 = s[start..c.i].parse().ok()?;
        nanos = frac * 10i128.pow(9 - n as u32);
    }
    let offset_secs = match c.next() {
        None => None,
        Some(b'Z' | b'z') => Some(0),
        Some(sign @ (b'+' | b'-')) => {
            let h = c.digits(2)?;
            c.byte(b':')?;
            let m = c.digits(2)?;
            if h > 23 || m > 59 {
                return None;
            }
            let secs = (h * 3600 + m * 60) as i32;
            Some(if sign == b'-' { -secs } else { secs })
        }
        Some(_) => return None,
    };
    if !c.done() {
        return None;
    }
    let secs = days * SECS_PER_DAY + i128::from(hour * 3600 + minute * 60 + second);
    Some(TimeLiteralParts { wall_ns: secs * NS_PER_SEC + nanos, offset_secs })
}

/// Formats nanoseconds since the epoch as RFC 3339 in UTC with the shortest exact fraction, as
/// InfluxDB prints times: `2016-01-01T00:00:00Z`, `2016-01-01T00:00:00.5Z`.
pub fn format_time_rfc3339(ns: i64) -> String {
    let mut out = String::with_capacity(30);
    write_time_rfc3339(&mut out, ns);
    out
}

/// [`format_time_rfc3339`] appended to `out` (a result renders one per row: no allocation each).
pub fn write_time_rfc3339(out: &mut String, ns: i64) {
    Rfc3339Writer::default().format(out, ns);
}

/// [`write_time_rfc3339`] for the many times of one answer: the times written last are kept as text
/// (a rollup's answer repeats its buckets' times in every series: 4,000 hosts times 12 hours are 12
/// times), and the date of the last day formatted, so a time on the same day (a result's rows mostly
/// are) costs its time of day alone.
#[derive(Default)]
pub struct Rfc3339Writer {
    /// The day (since the epoch) whose `YYYY-MM-DD` is in `date`.
    day: Option<i64>,
    date: [u8; 10],
    /// Times written, as text, each at a place its value picks (one of [`RFC3339_KEPT`]).
    kept: Vec<(i64, String)>,
}

/// How many formatted times an [`Rfc3339Writer`] keeps.
const RFC3339_KEPT: usize = 64;

impl Rfc3339Writer {
    pub fn write(&mut self, out: &mut String, ns: i64) {
        if self.kept.is_empty() {
            self.kept = vec![(i64::MIN, String::new()); RFC3339_KEPT];
        }
        // Fibonacci hashing: times a bucket apart land apart.
        let at = (ns as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RFC3339_KEPT.trailing_zeros());
        let mut slot = std::mem::take(&mut self.kept[at as usize]);
        if slot.0 != ns || slot.1.is_empty() {
            slot.1.clear();
            self.format(&mut slot.1, ns);
            slot.0 = ns;
        }
        out.push_str(&slot.1);
        self.kept[at as usize] = slot;
    }

    fn format(&mut self, out: &mut String, ns: i64) {
        // Digits written by hand: this runs once per result row, and `write!` with its formatting
        // machinery cost several times the arithmetic (a 720-row answer spent 7 % of its CPU here).
        let secs = ns.div_euclid(NS_PER_SEC as i64);
        let nanos = ns.rem_euclid(NS_PER_SEC as i64);
        let days = secs.div_euclid(SECS_PER_DAY as i64);
        let sod = secs.rem_euclid(SECS_PER_DAY as i64);
        let put = |b: &mut [u8], at: usize, width: usize, mut v: i64| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        if self.day != Some(days) {
            let (year, month, day) = civil_from_days(days);
            // An i64 of nanoseconds spans the years 1677 to 2262: always four digits.
            let mut date = *b"0000-00-00";
            put(&mut date, 0, 4, year);
            put(&mut date, 5, 2, month);
            put(&mut date, 8, 2, day);
            (self.day, self.date) = (Some(days), date);
        }
        let mut b = *b"0000-00-00T00:00:00";
        b[..10].copy_from_slice(&self.date);
        put(&mut b, 11, 2, sod / 3600);
        put(&mut b, 14, 2, sod / 60 % 60);
        put(&mut b, 17, 2, sod % 60);
        out.push_str(std::str::from_utf8(&b).expect("ASCII digits"));
        if nanos != 0 {
            // The fraction without trailing zeros.
            let mut frac = *b".000000000";
            let mut v = nanos;
            for d in frac[1..].iter_mut().rev() {
                *d = b'0' + (v % 10) as u8;
                v /= 10;
            }
            let end = frac.iter().rposition(|d| *d != b'0').map_or(1, |i| i + 1);
            out.push_str(std::str::from_utf8(&frac[..end]).expect("ASCII digits"));
        }
        out.push('Z');
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn done(&self) -> bool {
        self.i == self.b.len()
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn digits(&mut self, n: usize) -> Option<i64> {
        let digits = self.b.get(self.i..self.i + n)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(digits.iter().fold(0, |acc, d| acc * 10 + i64::from(d - b'0')))
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i128 {
    let y = i128::from(if month <= 2 { year - 1 } else { year });
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i128::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i128::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (inverse of [`days_from_civil`]). In `i64`, not `i128`:
/// this runs once per result row, and `i128` division is a library call (the days of an `i64` of
/// nanoseconds are within ±110,000).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
