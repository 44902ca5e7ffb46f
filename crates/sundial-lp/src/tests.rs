//! Tests of the parser and writer: every syntax rule, every error with its position, and property
//! tests (round trip through `write_line`, arbitrary bytes never panic).

use std::borrow::Cow;
use std::cell::RefCell;

use proptest::prelude::*;

use crate::{
    FieldValue, LINE_BYTES_MAX, Line, ParseError, ParseErrorKind as K, ValueError as V,
    check_round_trip, parse_lines, write_line,
};

fn all(body: &[u8]) -> Vec<Result<Line<'_>, ParseError>> {
    parse_lines(body).collect()
}

/// The only line of `body`, which must parse.
fn one(body: &str) -> Line<'_> {
    let mut items = all(body.as_bytes());
    assert_eq!(items.len(), 1, "{body:?} gave {items:?}");
    match items.pop() {
        Some(Ok(line)) => line,
        other => panic!("{body:?} gave {other:?}"),
    }
}

/// The only line of `body`, which must fail.
fn err(body: impl AsRef<[u8]>) -> ParseError {
    let body = body.as_ref();
    let mut items = all(body);
    assert_eq!(
        items.len(),
        1,
        "{:?} gave {items:?}",
        String::from_utf8_lossy(body)
    );
    match items.pop() {
        Some(Err(e)) => e,
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(body)),
    }
}

/// Error kind and column of the only line of `body`.
fn fails(body: &str) -> (K, usize) {
    let e = err(body);
    (e.kind, e.column)
}

fn field(body: &str) -> FieldValue<'_> {
    let mut line = one(body);
    assert_eq!(line.fields.len(), 1);
    line.fields.remove(0).1
}

fn value(text: &str) -> FieldValue<'static> {
    field(&format!("m v={text}")).into_owned()
}

fn bad_value(text: &str) -> (K, usize) {
    fails(&format!("m v={text}"))
}

fn c(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

const TSBS: &str = "cpu,hostname=host_0,region=eu-central-1,datacenter=eu-central-1a,rack=6,os=Ubuntu15.10,\
arch=x86,team=SF,service=19,service_version=1,service_environment=test usage_user=58i,usage_system=2i,\
usage_idle=24i,usage_nice=61i,usage_iowait=22i,usage_irq=63i,usage_softirq=6i,usage_steal=44i,\
usage_guest=80i,usage_guest_nice=38i 1451606400000000000";

#[test]
fn tsbs_line_borrows_everything() {
    let line = one(TSBS);
    assert_eq!(line.measurement, "cpu");
    assert_eq!(line.tags.len(), 10);
    assert_eq!(line.tags[0], (c("hostname"), c("host_0")));
    assert_eq!(line.tags[9], (c("service_environment"), c("test")));
    assert_eq!(line.fields.len(), 10);
    assert_eq!(line.fields[0], (c("usage_user"), FieldValue::Integer(58)));
    assert_eq!(
        line.fields[9],
        (c("usage_guest_nice"), FieldValue::Integer(38))
    );
    assert_eq!(line.timestamp, Some(1_451_606_400_000_000_000));
    assert_eq!(line.line_number, 1);
    assert!(matches!(line.measurement, Cow::Borrowed(_)));
    assert!(
        line.tags
            .iter()
            .all(|(k, v)| matches!((k, v), (Cow::Borrowed(_), Cow::Borrowed(_))))
    );
    assert!(
        line.fields
            .iter()
            .all(|(k, _)| matches!(k, Cow::Borrowed(_)))
    );
}

#[test]
fn minimal_lines() {
    let line = one("m f=1");
    assert_eq!(
        (line.measurement.as_ref(), line.tags.len(), line.timestamp),
        ("m", 0, None)
    );
    assert_eq!(line.fields, [(c("f"), FieldValue::Float(1.0))]);
    let line = one("m,t=1 f=1,g=2i -5");
    assert_eq!(line.tags, [(c("t"), c("1"))]);
    assert_eq!(line.fields[1], (c("g"), FieldValue::Integer(2)));
    assert_eq!(line.timestamp, Some(-5));
}

#[test]
fn floats() {
    let cases = [
        ("1", 1.0),
        ("1.5", 1.5),
        ("-1e10", -1e10),
        ("1.", 1.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("-1.", -1.0),
        ("1E5", 1e5),
        ("1e+5", 1e5),
        ("1.5e-3", 1.5e-3),
        ("1.e2", 100.0),
        ("00.5", 0.5),
        ("0", 0.0),
        ("1e-400", 0.0),
    ];
    for (text, expected) in cases {
        assert_eq!(value(text), FieldValue::Float(expected), "{text}");
    }
    assert_eq!(value(&format!("{}", f64::MAX)), FieldValue::Float(f64::MAX));
    assert_eq!(
        value(&format!("{}", f64::MIN_POSITIVE)),
        FieldValue::Float(f64::MIN_POSITIVE)
    );
    let FieldValue::Float(negative_zero) = value("-0") else {
        panic!()
    };
    assert!(negative_zero == 0.0 && negative_zero.is_sign_negative());
}

#[test]
fn bad_floats() {
    let number = K::InvalidFieldValue(V::Number);
    for text in [
        "1.1.1", "1e", "1e+", "-", ".", "-.", "1-2", "1..", ".e5", "1e5.5", "1e5e5", "1_000",
        "0x10", "NaN", "nan", "n", "-Inf", "-inf", "12a", "1.5f",
    ] {
        let text = text.split(',').next().unwrap_or(text);
        assert_eq!(bad_value(text), (number, 5), "{text}");
    }
    assert_eq!(
        bad_value("1e400"),
        (K::InvalidFieldValue(V::FloatOutOfRange), 5)
    );
    assert_eq!(
        bad_value(&"9".repeat(400)),
        (K::InvalidFieldValue(V::FloatOutOfRange), 5)
    );
    // InfluxDB reads these as booleans, which they are not either.
    for text in ["Inf", "+1", "infinity", "x", "e5", "E5"] {
        assert_eq!(
            bad_value(text),
            (K::InvalidFieldValue(V::Boolean), 5),
            "{text}"
        );
    }
}

#[test]
fn integers() {
    assert_eq!(value("12i"), FieldValue::Integer(12));
    assert_eq!(value("-12i"), FieldValue::Integer(-12));
    assert_eq!(value("0i"), FieldValue::Integer(0));
    assert_eq!(value("-0i"), FieldValue::Integer(0));
    assert_eq!(value("007i"), FieldValue::Integer(7));
    assert_eq!(value("9223372036854775807i"), FieldValue::Integer(i64::MAX));
    assert_eq!(
        value("-9223372036854775808i"),
        FieldValue::Integer(i64::MIN)
    );
    let range = (K::InvalidFieldValue(V::IntegerOutOfRange), 5);
    assert_eq!(bad_value("9223372036854775808i"), range);
    assert_eq!(bad_value("-9223372036854775809i"), range);
    assert_eq!(bad_value(&format!("{}i", "9".repeat(100))), range);
    let number = (K::InvalidFieldValue(V::Number), 5);
    for text in [
        "1.5i",
        "1e5i",
        "1ii",
        "1i2",
        "-i",
        "i1",
        ".i",
        "99999999999999999999xi",
    ] {
        let got = bad_value(text);
        assert!(
            got == number || got == (K::InvalidFieldValue(V::Boolean), 5),
            "{text}: {got:?}"
        );
    }
    assert_eq!(bad_value("1.5i"), number);
    assert_eq!(bad_value("99999999999999999999xi"), number);
}

#[test]
fn unsigned() {
    assert_eq!(value("12u"), FieldValue::UInteger(12));
    assert_eq!(value("0u"), FieldValue::UInteger(0));
    assert_eq!(
        value("18446744073709551615u"),
        FieldValue::UInteger(u64::MAX)
    );
    assert_eq!(
        bad_value("18446744073709551616u"),
        (K::InvalidFieldValue(V::UnsignedOutOfRange), 5)
    );
    for text in ["-1u", "-0u", "1.5u", "1e3u", "1uu", "u"] {
        let got = bad_value(text);
        let expected = if text == "u" { V::Boolean } else { V::Number };
        assert_eq!(got, (K::InvalidFieldValue(expected), 5), "{text}");
    }
}

#[test]
fn booleans() {
    for text in ["t", "T", "true", "True", "TRUE"] {
        assert_eq!(value(text), FieldValue::Boolean(true), "{text}");
    }
    for text in ["f", "F", "false", "False", "FALSE"] {
        assert_eq!(value(text), FieldValue::Boolean(false), "{text}");
    }
    for text in ["tru", "truE", "TRue", "yes", "fals", "falsey", "t\"", "tt"] {
        assert_eq!(
            bad_value(text),
            (K::InvalidFieldValue(V::Boolean), 5),
            "{text}"
        );
    }
}

#[test]
fn strings() {
    assert_eq!(value(r#""""#), FieldValue::String(c("")));
    assert_eq!(value(r#""a b,c=d""#), FieldValue::String(c("a b,c=d")));
    let escaped = value(r#""say \"hi\" \\o/""#);
    assert_eq!(escaped, FieldValue::String(c(r#"say "hi" \o/"#)));
    // Other backslashes are literal, including one before a newline or at the end.
    assert_eq!(value(r#""a\nb\,c\\""#), FieldValue::String(c(r"a\nb\,c\")));
    assert_eq!(value(r#""\\\"""#), FieldValue::String(c(r#"\""#)));
    assert_eq!(value("\"日本\t\""), FieldValue::String(c("日本\t")));
    assert!(matches!(
        field(r#"m v="plain""#),
        FieldValue::String(Cow::Borrowed("plain"))
    ));
    assert!(matches!(
        field(r#"m v="a\"b""#),
        FieldValue::String(Cow::Owned(_))
    ));
    let line = one(r#"m a="x",b="y" 7"#);
    assert_eq!(
        line.fields,
        [
            (c("a"), FieldValue::String(c("x"))),
            (c("b"), FieldValue::String(c("y")))
        ]
    );
    assert_eq!(line.timestamp, Some(7));
    assert_eq!(fails(r#"m v="x"y"#), (K::InvalidFieldFormat, 8));
    assert_eq!(fails(r#"m v="x""y""#), (K::InvalidFieldFormat, 8));
}

#[test]
fn multi_line_strings() {
    let body = "m v=\"one\ntwo\r\nthree\" 5\nm v=2\n\"\nm v=\"a\\\nb\",w=1\nm v=3";
    let items = all(body.as_bytes());
    assert_eq!(items.len(), 5, "{items:?}");
    let first = items[0].as_ref().unwrap();
    assert_eq!(
        first.fields[0].1,
        FieldValue::String(c("one\ntwo\r\nthree"))
    );
    assert_eq!((first.line_number, first.timestamp), (1, Some(5)));
    assert_eq!(items[1].as_ref().unwrap().line_number, 4);
    // A line that is just a quote: a measurement without fields.
    let stray = items[2].as_ref().unwrap_err();
    assert_eq!((stray.line_number, stray.kind), (5, K::MissingFields));
    let fourth = items[3].as_ref().unwrap();
    assert_eq!(fourth.fields[0].1, FieldValue::String(c("a\\\nb")));
    assert_eq!(fourth.line_number, 6);
    assert_eq!(items[4].as_ref().unwrap().line_number, 8);
    // Quotes only open strings at the start of a field value; elsewhere they are plain bytes.
    let items = all(b"m\"x v=1\nm,t=\"a v=\"b\"\nm,t=a\" v=1");
    assert_eq!(items[0].as_ref().unwrap().measurement, "m\"x");
    assert_eq!(items[1].as_ref().unwrap().tags[0].1, "\"a");
    assert_eq!(items[2].as_ref().unwrap().line_number, 3);
}

#[test]
fn unterminated_string_ends_at_next_newline() {
    let items = all(b"m v=1\nm,t=a v=\"open\nm v=2\nm v=3");
    assert_eq!(items.len(), 4);
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(
        (e.line_number, e.column, e.kind),
        (2, 9, K::UnterminatedString)
    );
    assert_eq!(e.line_text, "m,t=a v=\"open");
    assert_eq!(
        e.to_string(),
        "line 2, column 9: unable to parse 'm,t=a v=\"open': unbalanced quotes"
    );
    assert_eq!(items[2].as_ref().unwrap().line_number, 3);
    assert_eq!(items[3].as_ref().unwrap().line_number, 4);
}

#[test]
fn measurement_escapes() {
    assert_eq!(one(r"c\,p\ u v=1").measurement, "c,p u");
    assert!(matches!(one(r"c\ u v=1").measurement, Cow::Owned(_)));
    // `=` is not escapable in a measurement, and other backslashes are literal.
    assert_eq!(one(r"a\=b v=1").measurement, r"a\=b");
    assert_eq!(one(r"a=b v=1").measurement, "a=b");
    assert_eq!(one(r"a\\b\x v=1").measurement, r"a\\b\x");
    assert_eq!(one(r"a\\,t=1 v=1").measurement, r"a\,t=1");
    assert_eq!(one(r"\ m v=1").measurement, " m");
    assert_eq!(one("m\"#\u{e9} v=1").measurement, "m\"#\u{e9}");
}

#[test]
fn tag_escapes() {
    let line = one(r"m,k\,e\=y\ 1=v\,a\=l\ 1,k2=a\b\\c v=1");
    assert_eq!(
        line.tags,
        [(c("k,e=y 1"), c("v,a=l 1")), (c("k2"), c(r"a\b\\c"))]
    );
    // A value cannot end with a backslash: it escapes the separator after it.
    assert_eq!(fails(r"m,t=a\ f=1"), (K::InvalidTagFormat, 9));
    assert_eq!(fails(r"m,t=a\\ f=1"), (K::InvalidTagFormat, 10));
    // A special character counts as escaped whenever a backslash precedes it (InfluxDB's rule).
    assert_eq!(one(r"m,t=a\\,u v=1").tags, [(c("t"), c(r"a\,u"))]);
    assert_eq!(fails(r"m,t=a\\,u=b v=1"), (K::InvalidTagFormat, 10));
    assert_eq!(one(r"m,t\\=x=a v=1").tags, [(c(r"t\=x"), c("a"))]);
    // InfluxDB accepts an `=` as a tag value's first byte.
    assert_eq!(one("m,t==x v=1").tags, [(c("t"), c("=x"))]);
    assert_eq!(one("m,t=\"q\" v=1").tags, [(c("t"), c("\"q\""))]);
}

#[test]
fn field_key_escapes() {
    let line = one(r"m f\,i\=e\ ld=1,g\\h=2,\ =3");
    let keys: Vec<&str> = line.fields.iter().map(|(k, _)| k.as_ref()).collect();
    assert_eq!(keys, ["f,i=e ld", r"g\\h", " "]);
    assert_eq!(one("m \"k\"=1").fields[0].0, "\"k\"");
}

#[test]
fn whitespace() {
    let line = one("  \t m,t=a  \t f=1   \t 12   ");
    assert_eq!((line.measurement.as_ref(), line.timestamp), ("m", Some(12)));
    assert_eq!(one("m f=1   ").timestamp, None);
    assert_eq!(one("m \u{0}\t f=1 \u{0}5").fields[0].0, "f");
    // Blanks separate sections but do not end a name.
    assert_eq!(fails("m\u{0}f=1"), (K::MissingFields, 6));
    // A tab does not end the measurement (it is part of the name), so this line has no fields.
    assert_eq!(fails("m\tf=1"), (K::MissingFields, 6));
    assert_eq!(fails("m f=1\t5"), (K::InvalidFieldValue(V::Number), 5));
    assert_eq!(fails("m f=1 5\t"), (K::InvalidTimestamp, 7));
}

#[test]
fn timestamps() {
    assert_eq!(one("m f=1 0").timestamp, Some(0));
    assert_eq!(one("m f=1 -1").timestamp, Some(-1));
    assert_eq!(one("m f=1 9223372036854775807").timestamp, Some(i64::MAX));
    assert_eq!(one("m f=1 -9223372036854775808").timestamp, Some(i64::MIN));
    assert_eq!(one("m f=1 0001").timestamp, Some(1));
    assert_eq!(
        fails("m f=1 9223372036854775808"),
        (K::TimestampOutOfRange, 7)
    );
    assert_eq!(
        fails("m f=1 -9223372036854775809"),
        (K::TimestampOutOfRange, 7)
    );
    assert_eq!(
        fails(&format!("m f=1 {}", "1".repeat(50))),
        (K::TimestampOutOfRange, 7)
    );
    for bad in ["abc", "12a", "-", "1.5", "+1", "1e9", "--1", "1-"] {
        assert_eq!(
            fails(&format!("m f=1 {bad}")),
            (K::InvalidTimestamp, 7),
            "{bad}"
        );
    }
    assert_eq!(fails("m f=1 1 2"), (K::TrailingGarbage, 9));
    assert_eq!(fails("m f=1 1  x"), (K::TrailingGarbage, 10));
    assert_eq!(one("m f=1 1   ").timestamp, Some(1));
}

#[test]
fn key_section_errors() {
    assert_eq!(fails(",m f=1"), (K::MissingMeasurement, 1));
    assert_eq!(fails("  ,m f=1"), (K::MissingMeasurement, 3));
    assert_eq!(fails("m, f=1"), (K::MissingTagKey, 3));
    assert_eq!(fails("m,=a f=1"), (K::MissingTagKey, 3));
    assert_eq!(fails("m,,a=b f=1"), (K::MissingTagKey, 3));
    assert_eq!(fails("m,t=a, f=1"), (K::MissingTagKey, 7));
    assert_eq!(fails("m,"), (K::MissingTagKey, 3));
    assert_eq!(fails("m,t f=1"), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t,u=1 f=1"), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t"), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t= f=1"), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t=,u=1 f=1"), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t="), (K::MissingTagValue, 4));
    assert_eq!(fails("m,t=a=b f=1"), (K::InvalidTagFormat, 6));
    assert_eq!(fails("m,t=a,u=b,t=c f=1"), (K::DuplicateTags, 11));
    assert_eq!(fails("m"), (K::MissingFields, 2));
    assert_eq!(fails("m,t=a"), (K::MissingFields, 6));
    assert_eq!(fails("m "), (K::MissingFields, 3));
    assert_eq!(fails("m,t=a   "), (K::MissingFields, 9));
    assert_eq!(fails(r"m\ "), (K::MissingFields, 4));
}

#[test]
fn field_section_errors() {
    assert_eq!(fails("m =1"), (K::MissingFieldKey, 3));
    assert_eq!(fails("m f=1,=2"), (K::MissingFieldKey, 7));
    assert_eq!(fails("m f="), (K::MissingFieldValue, 4));
    assert_eq!(fails("m f=,g=1"), (K::MissingFieldValue, 4));
    assert_eq!(fails("m f= 1"), (K::MissingFieldValue, 4));
    assert_eq!(fails("m f=1,g= 1"), (K::MissingFieldValue, 8));
    assert_eq!(fails("m f"), (K::InvalidFieldFormat, 4));
    assert_eq!(fails("m f 1"), (K::InvalidFieldFormat, 4));
    assert_eq!(fails("m f=1,"), (K::InvalidFieldFormat, 7));
    assert_eq!(fails("m f=1,g"), (K::InvalidFieldFormat, 8));
    assert_eq!(fails("m f=1, g=2"), (K::InvalidFieldFormat, 7));
    assert_eq!(fails("m f=1,,g=2"), (K::InvalidFieldFormat, 7));
    assert_eq!(fails("m f=\"x"), (K::UnterminatedString, 5));
    assert_eq!(fails("m f=\"x\\\""), (K::UnterminatedString, 5));
}

#[test]
fn error_display_reads_like_influxdb() {
    let body = "cpu,host=a usage=1\n\ncpu,host=a usage=\n";
    let e = all(body.as_bytes()).remove(1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 3, column 17: unable to parse 'cpu,host=a usage=': missing field value"
    );
    let e = err("  m f=1 x");
    assert_eq!(
        e.to_string(),
        "line 1, column 9: unable to parse 'm f=1 x': bad timestamp"
    );
    let e = err("m f=1i2");
    assert_eq!(
        e.to_string(),
        "line 1, column 5: unable to parse 'm f=1i2': invalid number"
    );
    let e = err("m f=99999999999999999999i");
    assert!(
        e.to_string()
            .ends_with("unable to parse integer: value out of range"),
        "{e}"
    );
}

#[test]
fn duplicate_fields_last_wins() {
    // The last value, at the first occurrence's position.
    let line = one("m a=1,b=2,a=3,c=4,b=5");
    assert_eq!(
        line.fields,
        [
            (c("a"), FieldValue::Float(3.0)),
            (c("b"), FieldValue::Float(5.0)),
            (c("c"), FieldValue::Float(4.0))
        ]
    );
    // Many keys take the sorting path.
    let fields: Vec<String> = (0..40).map(|i| format!("k{}={i}i", i % 25)).collect();
    let body = format!("m {}", fields.join(","));
    let line = one(&body);
    assert_eq!(line.fields.len(), 25);
    assert_eq!(line.fields[0], (c("k0"), FieldValue::Integer(25)));
    assert_eq!(line.fields[14], (c("k14"), FieldValue::Integer(39)));
    assert_eq!(line.fields[24], (c("k24"), FieldValue::Integer(24)));
}

/// Regression (found by `cargo fuzz`, seed `regress_dedupe_blank_key.lp`): duplicate fields used to
/// be resolved by dropping the earlier ones, which could move a later field to the front. A field
/// key after a comma may start with a NUL or tab, but the first one cannot (blanks before the field
/// section are skipped), so `m a=1,\0b=2,a=3` parsed to fields `\0b, a` and wrote back as
/// `m \0b=2.0,a=3.0`, which parses to the key `b`. Now the last value takes the first position.
#[test]
fn duplicate_fields_keep_the_first_field_first() {
    let line = one("m a=1,\u{0}b=2,a=3");
    assert_eq!(
        line.fields,
        [
            (c("a"), FieldValue::Float(3.0)),
            (c("\u{0}b"), FieldValue::Float(2.0))
        ]
    );
    assert_eq!(check_round_trip(b"m a=1,\0b=2,a=3"), Ok(()));
}

#[test]
fn duplicate_tags_among_many() {
    let tags: Vec<String> = (0..30).map(|i| format!("t{i}=v")).collect();
    let unique = format!("m,{} f=1", tags.join(","));
    assert_eq!(one(&unique).tags.len(), 30);
    let repeated = format!("m,{},t7=w,t3=x f=1", tags.join(","));
    let column = repeated.find("t7=w").unwrap() + 1;
    assert_eq!(fails(&repeated), (K::DuplicateTags, column));
}

#[test]
fn blank_and_comment_lines() {
    let body = "\n   \n\t\n# comment v=\"open\n  # indented comment\n\r\nm f=1\n#\n\nm f=2\n\n";
    let lines: Vec<usize> = all(body.as_bytes())
        .into_iter()
        .map(|r| r.unwrap().line_number)
        .collect();
    assert_eq!(lines, [7, 10]);
    assert!(all(b"").is_empty());
    assert!(all(b"\n\n   ").is_empty());
    assert!(all(b"# only a comment").is_empty());
}

#[test]
fn crlf() {
    let items = all(b"m f=1\r\nm,t=a g=2i 5\r\n\r\nm h=\"x\"\r\nm f=\r\nm f=1 5 \r\nm f=1\r");
    let ok: Vec<_> = items.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(ok.len(), 5, "{items:?}");
    assert_eq!(ok[1].timestamp, Some(5));
    assert_eq!(ok[2].fields[0].1, FieldValue::String(c("x")));
    assert_eq!((ok[3].line_number, ok[4].line_number), (6, 7));
    let e = items[3].as_ref().unwrap_err();
    assert_eq!(
        (e.line_number, e.column, e.kind),
        (5, 4, K::MissingFieldValue)
    );
    assert_eq!(e.line_text, "m f=");
    // A `\r` that does not end a line is an ordinary byte.
    assert_eq!(one("m\r f=1").measurement, "m\r");
    assert_eq!(one("m,t=a\rb f=1").tags[0].1, "a\rb");
    assert_eq!(fails("m f=1\r\r\n"), (K::InvalidFieldValue(V::Number), 5));
    assert_eq!(fails("m f=1 5\r\r\n"), (K::InvalidTimestamp, 7));
}

#[test]
fn partial_bodies_keep_going() {
    let body = b"m f=1\nm f=x\nbad\n,m f=1\nm f=2 1\nm,t=a f=1 9999999999999999999\nm f=3";
    let summary: Vec<(usize, bool)> = all(body)
        .into_iter()
        .map(|r| match r {
            Ok(l) => (l.line_number, true),
            Err(e) => (e.line_number, false),
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, true),
            (2, false),
            (3, false),
            (4, false),
            (5, true),
            (6, false),
            (7, true)
        ]
    );
}

#[test]
fn invalid_utf8_rejects_only_its_line() {
    let body = b"m f=1\nm,t=a\xff f=1\nm f=\"\xc3\x28\"\nm f=2\n# \xff comment\nm f=3\nm\xe6\x97 f=1\nm f=4\n\xf0";
    let items = all(body);
    let summary: Vec<String> = items
        .iter()
        .map(|r| match r {
            Ok(l) => format!("ok {}", l.line_number),
            Err(e) => format!("{:?} {}:{}", e.kind, e.line_number, e.column),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "ok 1",
            "InvalidUtf8 2:6",
            "InvalidUtf8 3:6",
            "ok 4",
            "ok 6",
            "InvalidUtf8 7:2",
            "ok 8",
            "InvalidUtf8 9:1",
        ]
    );
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(e.line_text, "m,t=a\u{fffd} f=1");
    // Invalid UTF-8 wins over a syntax error later in the line, and inside a multi-line string.
    assert_eq!(err(b"m,t=\xff").kind, K::InvalidUtf8);
    let items = all(b"m f=\"a\n\xff\nb\"\nm f=1");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap_err().kind, K::InvalidUtf8);
    assert_eq!(items[1].as_ref().unwrap().line_number, 4);
}

#[test]
fn line_too_long() {
    let body = "m f=1\nm,t=abcdef f=1\nm f=2";
    let items: Vec<_> = parse_lines(body.as_bytes()).line_bytes_max(10).collect();
    assert!(items[0].is_ok() && items[2].is_ok());
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(
        (e.line_number, e.column, e.kind),
        (2, 11, K::LineTooLong { limit: 10 })
    );
    assert_eq!(e.kind.to_string(), "line is longer than 10 bytes");
    // Exactly at the limit is fine; the `\r\n` does not count.
    assert_eq!(
        parse_lines(b"m f=12345\r\n")
            .line_bytes_max(9)
            .filter(Result::is_ok)
            .count(),
        1
    );
}

#[test]
fn line_too_long_at_the_real_limit() {
    let mut body = b"m f=1\nm,t=".to_vec();
    body.resize(body.len() + LINE_BYTES_MAX, b'a');
    body.extend_from_slice(b" f=1\nm f=2\n");
    let items = all(&body);
    assert_eq!(items.len(), 3);
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(
        e.kind,
        K::LineTooLong {
            limit: LINE_BYTES_MAX
        }
    );
    assert_eq!(e.line_text.len(), 203, "cut to 200 bytes plus ...");
    assert!(e.line_text.ends_with("aaa..."));
    assert_eq!(items[2].as_ref().unwrap().line_number, 3);
}

#[test]
fn error_text_is_cut() {
    let long = format!("m,t={} f=", "é".repeat(300));
    let e = err(&long);
    assert!(
        e.line_text.len() <= 203
            && e.line_text.ends_with("...")
            && e.line_text.starts_with("m,t=éé")
    );
    let e = err([b"m,t=".as_slice(), &[0xff; 300], b" f=1"].concat());
    assert!(
        e.line_text.len() <= 203 && e.line_text.ends_with("\u{fffd}..."),
        "{}",
        e.line_text
    );
}

#[test]
fn huge_numbers() {
    let digits = "1".repeat(10_000);
    assert_eq!(
        bad_value(&format!("{digits}i")),
        (K::InvalidFieldValue(V::IntegerOutOfRange), 5)
    );
    assert_eq!(
        bad_value(&format!("{digits}u")),
        (K::InvalidFieldValue(V::UnsignedOutOfRange), 5)
    );
    assert_eq!(
        bad_value(&digits),
        (K::InvalidFieldValue(V::FloatOutOfRange), 5)
    );
    assert_eq!(
        value(&format!("0.{digits}")),
        FieldValue::Float(0.111_111_111_111_111_1)
    );
    assert_eq!(
        fails(&format!("m f=1 {digits}")),
        (K::TimestampOutOfRange, 7)
    );
}

#[test]
fn writer_output() {
    let line = Line {
        measurement: c("c,p u=x"),
        tags: vec![(c("k ,="), c("v ,=\\")), (c("a"), c("=b"))],
        fields: vec![
            (c("f ,="), FieldValue::String(c("q\"b\\n\nx"))),
            (c("i"), FieldValue::Integer(-3)),
            (c("u"), FieldValue::UInteger(3)),
            (c("b"), FieldValue::Boolean(false)),
            (c("x"), FieldValue::Float(1.0)),
            (c("y"), FieldValue::Float(1e300)),
        ],
        timestamp: Some(-7),
        line_number: 99,
    };
    let mut out = String::new();
    write_line(&mut out, &line);
    assert_eq!(
        out,
        r#"c\,p\ u=x,k\ \,\==v\ \,\=\,a=\=b f\ \,\=="q\"b\\n"#.to_owned()
            + "\nx\",i=-3i,u=3u,b=false,x=1.0,y=1e300 -7"
    );
    // The value `v ,=\` ends with a backslash, which cannot be written; everything else round-trips.
    let mut fixed = line.clone();
    fixed.tags[0].1 = c("v ,=\\w");
    out.clear();
    write_line(&mut out, &fixed);
    let parsed = one(&out);
    assert_eq!(
        parsed,
        Line {
            line_number: 1,
            ..fixed
        }
    );
}

#[test]
fn into_owned_keeps_values() {
    let body = String::from(r#"m\ x,t=a\,b s="q\"",f=1.5 3"#);
    let line = one(&body).into_owned();
    drop(body);
    assert_eq!(line.measurement, "m x");
    assert_eq!(line.tags, [(c("t"), c("a,b"))]);
    assert_eq!(line.fields[0].1, FieldValue::String(c("q\"")));
}

#[test]
fn fuzz_corpus_round_trips() {
    let dir =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())).join("../../fuzz/corpus/line_protocol");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_file() {
            let body = std::fs::read(&path).unwrap();
            if let Err(problem) = check_round_trip(&body) {
                panic!("{}: {problem}", path.display());
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "only {checked} corpus files in {}",
        dir.display()
    );
}

// ---- property tests ----

/// Names mixing every special character; see `write_line` for what cannot be written.
fn name(first_can_be_blank: bool) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z0-9_]{1,4}",
        1 => Just(" ".to_owned()),
        1 => Just(",".to_owned()),
        1 => Just("=".to_owned()),
        1 => Just("\\".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("#".to_owned()),
        1 => Just("\t".to_owned()),
        1 => Just("\r".to_owned()),
        1 => Just("\u{0}".to_owned()),
        1 => Just("é日".to_owned()),
    ];
    prop::collection::vec(piece, 1..5).prop_map(move |pieces| {
        let mut name = pieces.concat();
        if name.ends_with('\\') {
            name.push('x');
        }
        if !first_can_be_blank && name.starts_with(['\t', '\u{0}']) {
            name.insert(0, 'a');
        }
        name
    })
}

fn field_value() -> impl Strategy<Value = FieldValue<'static>> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(FieldValue::Float),
        any::<i64>().prop_map(FieldValue::Integer),
        any::<u64>().prop_map(FieldValue::UInteger),
        any::<bool>().prop_map(FieldValue::Boolean),
        "(\\PC|[\"\\\\\n\r\t ,=])*".prop_map(|s| FieldValue::String(Cow::Owned(s))),
    ]
}

fn line() -> impl Strategy<Value = Line<'static>> {
    let measurement = name(false).prop_map(|m| {
        if m.starts_with('#') {
            format!("m{m}")
        } else {
            m
        }
    });
    let tags = prop::collection::btree_map(name(true), name(true), 0..4);
    // Only the first field key cannot start with a blank.
    let first = (name(false), field_value());
    let rest = prop::collection::btree_map(name(true), field_value(), 0..3);
    let fields = (first, rest).prop_map(|(first, mut rest)| {
        rest.remove(&first.0);
        std::iter::once(first).chain(rest).collect::<Vec<_>>()
    });
    (measurement, tags, fields, any::<Option<i64>>()).prop_map(|(m, tags, fields, timestamp)| {
        Line {
            measurement: Cow::Owned(m),
            tags: tags
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Cow::Owned(v)))
                .collect(),
            fields: fields
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), v))
                .collect(),
            timestamp,
            line_number: 0,
        }
    })
}

/// With `share_repeated_keys`, a line repeating an earlier line's series key appends no tags and
/// points at that line's; a key with an escape, a line that failed, or a key ending the line are parsed
/// in full; errors and fields are as without sharing.
#[test]
fn repeated_keys_share_their_tags() {
    let body: &[u8] = b"cpu,host=a,dc=x f=1 1\n\
        cpu,host=b,dc=x f=2 2\n\
        cpu,host=a,dc=x f=3 3\n\
        cpu,host=a,dc=x f= 4\n\
        cpu,host=a,dc=x g=5i 5\n\
        cpu,host=a\\ b,dc=x f=6 6\n\
        cpu,host=a\\ b,dc=x f=7 7\n\
        cpu,host=c,host=c f=1\n\
        cpu,host=c,host=c f=2\n\
        cpu,host=a,dc=x\n\
        cpu,host=b,dc=x f=8 8\n";
    let (mut tags, mut fields) = (Vec::new(), Vec::new());
    let mut lines = parse_lines(body).share_repeated_keys(4);
    let mut got = Vec::new();
    while let Some(item) = lines.next_into(&mut tags, &mut fields) {
        got.push(item.map(|h| (h.line_number, h.tags, h.series_key)).map_err(|e| (e.line_number, e.kind)));
    }
    let a = "cpu,host=a,dc=x";
    let b = "cpu,host=b,dc=x";
    let escaped = "cpu,host=a\\ b,dc=x";
    assert_eq!(
        got,
        vec![
            Ok((1, 0..2, a)),
            Ok((2, 2..4, b)),
            Ok((3, 0..2, a)),
            Err((4, K::MissingFieldValue)),
            Ok((5, 0..2, a)),
            Ok((6, 4..6, escaped)),
            Ok((7, 6..8, escaped)),
            Err((8, K::DuplicateTags)),
            Err((9, K::DuplicateTags)),
            Err((10, K::MissingFields)),
            Ok((11, 2..4, b)),
        ]
    );
    assert_eq!(lines.shared_lines(), 3, "lines 3, 5 and 11");
    assert_eq!(tags.len(), 8, "{tags:?}");
    assert_eq!(tags[4..6], [(Cow::Borrowed("host"), Cow::Owned::<str>("a b".into())), (Cow::Borrowed("dc"), Cow::Borrowed("x"))]);
    assert_eq!(check_round_trip(body), Ok(()));
}

/// With `elide_known_tags`, a line whose series key the callback knows appends no tags and carries the
/// callback's answer; other lines are parsed in full; a key with an escape is never asked; with
/// sharing, each key is asked once per body. Measurements, fields, times and errors are as without.
#[test]
fn known_keys_leave_their_tags_out() {
    let body: &[u8] = b"cpu,host=a,dc=x f=1 1\n\
        cpu,host=b,dc=x f=2 2\n\
        cpu,host=a,dc=x f=3 3\n\
        cpu,host=a,dc=x f= 4\n\
        cpu,host=a\\ b,dc=x f=5 5\n\
        mem f=6i 6\n";
    type Got<'a> = Vec<Result<(usize, Cow<'a, str>, Vec<(Cow<'a, str>, FieldValue<'a>)>, Option<i64>), (usize, K)>>;
    type Heads = Vec<(usize, std::ops::Range<usize>, Option<u32>)>;
    fn parse<'a>(lines: &mut crate::Lines<'a>) -> (Got<'a>, Heads, usize) {
        let (mut tags, mut fields) = (Vec::new(), Vec::new());
        let mut got: Got<'a> = Vec::new();
        let mut heads = Vec::new();
        while let Some(item) = lines.next_into(&mut tags, &mut fields) {
            got.push(
                item.map(|h| {
                    heads.push((h.line_number, h.tags.clone(), h.elided));
                    (h.line_number, h.measurement, fields[h.fields].to_vec(), h.timestamp)
                })
                .map_err(|e| (e.line_number, e.kind)),
            );
        }
        (got, heads, tags.len())
    }
    let (want, _, _) = parse(&mut parse_lines(body));
    for share in [false, true] {
        let asked = RefCell::new(Vec::new());
        let known = |key: &str| {
            let mut asked = asked.borrow_mut();
            asked.push(key.to_owned());
            (key == "cpu,host=a,dc=x" || key == "mem").then_some(asked.len() as u32 * 10)
        };
        let mut lines = parse_lines(body).elide_known_tags(&known);
        if share {
            lines = lines.share_repeated_keys(8);
        }
        let (got, heads, tags) = parse(&mut lines);
        assert_eq!(got, want, "share: {share}");
        let a = "cpu,host=a,dc=x".to_owned();
        if share {
            // Line 3 and 4 take line 1's key; line 5's has an escape.
            assert_eq!(*asked.borrow(), [a, "cpu,host=b,dc=x".to_owned(), "mem".to_owned()]);
            assert_eq!(heads, [(1, 0..0, Some(10)), (2, 0..2, None), (3, 0..0, Some(10)), (5, 2..4, None), (6, 4..4, Some(30))]);
        } else {
            assert_eq!(*asked.borrow(), [a.clone(), "cpu,host=b,dc=x".to_owned(), a.clone(), a, "mem".to_owned()]);
            assert_eq!(heads, [(1, 0..0, Some(10)), (2, 0..2, None), (3, 2..2, Some(30)), (5, 2..4, None), (6, 4..4, Some(50))]);
        }
        assert_eq!(tags, 4, "only lines 2 and 5 append tags");
    }
    // The iterator, a line's own vectors each, never leaves tags out.
    let known = |_: &str| Some(0);
    let first = parse_lines(body).elide_known_tags(&known).next().unwrap().unwrap();
    assert_eq!(first.tags.len(), 2);
}

proptest! {
    #[test]
    fn written_lines_parse_back(lines in prop::collection::vec(line(), 1..6), crlf: bool) {
        let mut body = String::new();
        let mut expected_numbers = Vec::new();
        for line in &lines {
            expected_numbers.push(body.matches('\n').count() + 1);
            write_line(&mut body, line);
            body.push_str(if crlf { "\r\n" } else { "\n" });
        }
        let parsed: Vec<_> = parse_lines(body.as_bytes()).collect();
        prop_assert_eq!(parsed.len(), lines.len(), "{:?}", body);
        for ((got, want), number) in parsed.into_iter().zip(&lines).zip(expected_numbers) {
            let got = got.map_err(|e| TestCaseError::fail(format!("{e} in {body:?}")))?;
            prop_assert_eq!(got, Line { line_number: number, ..want.clone() });
        }
    }

    /// Bodies that repeat lines (some copies broken by one inserted byte) parse the same with
    /// [`crate::Lines::share_repeated_keys`] as without (`check_round_trip` compares them).
    #[test]
    fn repeated_lines_share_keys_exactly(
        lines in prop::collection::vec(line(), 1..4),
        picks in prop::collection::vec((any::<prop::sample::Index>(), any::<Option<(prop::sample::Index, u8)>>()), 1..12),
    ) {
        let mut body = Vec::new();
        for (pick, mutation) in picks {
            let mut text = String::new();
            write_line(&mut text, pick.get(&lines));
            let mut bytes = text.into_bytes();
            if let Some((at, byte)) = mutation {
                let at = at.index(bytes.len() + 1);
                bytes.insert(at, byte);
            }
            body.extend_from_slice(&bytes);
            body.push(b'\n');
        }
        check_round_trip(&body).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..200)) {
        check_round_trip(&body).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_lines_never_panic(line in line(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut text = String::new();
        write_line(&mut text, &line);
        let mut body = text.into_bytes();
        let at = at.index(body.len() + 1);
        body.insert(at, byte);
        check_round_trip(&body).map_err(TestCaseError::fail)?;
    }
}

/// Numbers of the common shapes, parsed in one pass, are the values the general path gives: the same
/// `f64` bits as `str::parse` (negative zero included) and the same integers, on lines whose field
/// names come from the line before.
#[test]
fn plain_numbers_are_what_the_general_path_gives() {
    let texts = [
        "0", "-0", "1", "-1", "0.1", "-0.1", "1.", "-1.", "0.30000000000000004", "123456789012345", "1234567890123456",
        "9007199254740993", "0.000000000000001", "99999999999999.9", "2.5e3", ".5", "-.5", "007", "1.5i", "--1",
    ];
    for text in texts {
        let body = format!("m a=1i,v={text} 1\nm a=2i,v={text} 2\n");
        let fast: Vec<_> = parse_lines(body.as_bytes()).collect();
        let general: Vec<_> = parse_lines(body.as_bytes()).without_fast_paths().collect();
        assert_eq!(fast, general, "{text}");
        let expected = text.parse::<f64>().ok().filter(|f| f.is_finite() && !text.starts_with('+'));
        for item in &fast {
            match (item.as_ref().map(|l| &l.fields[1].1), expected) {
                (Ok(FieldValue::Float(got)), Some(want)) => assert_eq!(got.to_bits(), want.to_bits(), "{text}"),
                (Err(e), None) => assert_eq!(e.kind, K::InvalidFieldValue(V::Number), "{text}"),
                (got, want) => panic!("{text}: {got:?}, expected {want:?}"),
            }
        }
    }
    for text in ["0i", "-0i", "42i", "-42i", "999999999999999999i", "-999999999999999999i", "9223372036854775807i",
        "-9223372036854775808i", "9223372036854775808i", "42u", "18446744073709551615u", "-1u", "1.5u", "12ix"] {
        let body = format!("m v={text}\nm v={text}\n");
        let fast: Vec<_> = parse_lines(body.as_bytes()).collect();
        assert_eq!(fast, parse_lines(body.as_bytes()).without_fast_paths().collect::<Vec<_>>(), "{text}");
    }
    assert!(matches!(value("-0"), FieldValue::Float(z) if z.is_sign_negative()));
}

/// A line's field names are looked for first where the line before had them: a name that only starts
/// like the predicted one, an escaped name, a repeated name after predicted ones, fewer and more
/// fields all parse as on their own.
#[test]
fn field_names_predicted_from_the_previous_line() {
    let body: &[u8] = b"m usage_user=1i,usage_idle=2i 1\n\
        m usage_user=3i,usage_idle=4i 2\n\
        m usage_user2=5i,usage_idle=6i 3\n\
        m usage_user=7i,usage_idle=8i,usage_user=9i 4\n\
        m usage_user=10i 5\n\
        m usage_user=11i,usage_idle=12i,extra=13i 6\n\
        m usage\\ user=14i,usage_idle=15i 7\n\
        m usage\\ user=16i,usage_idle=17i 8\n\
        m usage_user=18i,usage_idle 9\n";
    let lines = all(body);
    let names = |i: usize| -> Vec<(String, FieldValue<'static>)> {
        lines[i].as_ref().unwrap().fields.iter().map(|(k, v)| (k.to_string(), v.clone().into_owned())).collect()
    };
    let f = |k: &str, v: i64| (k.to_string(), FieldValue::Integer(v));
    assert_eq!(names(1), [f("usage_user", 3), f("usage_idle", 4)]);
    assert_eq!(names(2), [f("usage_user2", 5), f("usage_idle", 6)]);
    assert_eq!(names(3), [f("usage_user", 9), f("usage_idle", 8)], "the last value of a repeated name wins");
    assert_eq!(names(4), [f("usage_user", 10)]);
    assert_eq!(names(5), [f("usage_user", 11), f("usage_idle", 12), f("extra", 13)]);
    assert_eq!(names(6), [f("usage user", 14), f("usage_idle", 15)]);
    assert_eq!(names(7), [f("usage user", 16), f("usage_idle", 17)]);
    assert_eq!(lines[8].as_ref().unwrap_err().kind, K::InvalidFieldFormat);
    assert_eq!(check_round_trip(body), Ok(()));
}

/// Tag keys likewise: a repeated key after keys found where the line before had them is still refused,
/// and a key that only starts like the expected one, or has an escape, is parsed as on its own.
#[test]
fn tag_keys_predicted_from_the_previous_line() {
    let body: &[u8] = b"m,host=a,rack=1 f=1
        m,host=b,rack=2 f=1
        m,host=c,rack=3,host=d f=1
        m,host=c,host=d f=1
        m,hostname=e,rack=4 f=1
        m,host\\ x=f,rack=5 f=1
        m,host\\ x=g,rack=6 f=1
        m,host=h f=1
        m,host=i,rack=7,dc=x f=1
";
    let lines = all(body);
    let tags = |i: usize| -> Vec<(String, String)> {
        lines[i].as_ref().unwrap().tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let t = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(tags(1), [t("host", "b"), t("rack", "2")]);
    assert_eq!(lines[2].as_ref().unwrap_err().kind, K::DuplicateTags);
    assert_eq!(lines[3].as_ref().unwrap_err().kind, K::DuplicateTags);
    assert_eq!(tags(4), [t("hostname", "e"), t("rack", "4")]);
    assert_eq!(tags(5), [t("host x", "f"), t("rack", "5")]);
    assert_eq!(tags(6), [t("host x", "g"), t("rack", "6")]);
    assert_eq!(tags(7), [t("host", "h")]);
    assert_eq!(tags(8), [t("host", "i"), t("rack", "7"), t("dc", "x")]);
    assert_eq!(check_round_trip(body), Ok(()));
}

proptest! {
    /// Lines with the same field names and tag keys (in one order or another, a tag key repeated,
    /// values of every type) parse the same with the fast paths as through the general paths alone, one
    /// byte inserted or not.
    #[test]
    fn lines_sharing_field_names_parse_as_the_general_path_does(
        values in prop::collection::vec((prop::collection::vec(field_value(), 3), prop::collection::vec(name(true), 3), 0u8..4), 1..8),
        mutation in any::<Option<(prop::sample::Index, u8)>>(),
    ) {
        let mut body = String::new();
        for (i, (values, tag_values, shape)) in values.into_iter().enumerate() {
            let (mut names, mut keys) = (vec!["usage_user", "usage_idle", "x"], vec!["hostname", "rack", "r"]);
            match shape {
                1 => names.swap(0, 1),
                2 => keys.swap(1, 2),
                3 => keys[2] = "hostname",
                _ => {}
            }
            let fields = names.into_iter().zip(values).map(|(k, v)| (Cow::Borrowed(k), v)).collect();
            let tags = keys.into_iter().zip(tag_values).map(|(k, v)| (Cow::Borrowed(k), Cow::Owned(v))).collect();
            let line = Line { measurement: c("cpu"), tags, fields, timestamp: Some(i as i64), line_number: 0 };
            write_line(&mut body, &line);
            body.push('\n');
        }
        let mut body = body.into_bytes();
        if let Some((at, byte)) = mutation {
            let at = at.index(body.len() + 1);
            body.insert(at, byte);
        }
        check_round_trip(&body).map_err(TestCaseError::fail)?;
    }

    /// Decimal numbers of up to 17 digits, a point anywhere or nowhere, either sign: the fast path's
    /// float is `str::parse`'s, bit for bit.
    #[test]
    fn decimal_floats_match_str_parse(negative: bool, digits in "[0-9]{1,17}", point in any::<Option<prop::sample::Index>>()) {
        let mut text = digits.clone();
        if let Some(at) = point {
            text.insert(at.index(digits.len()) + 1, '.');
        }
        if negative {
            text.insert(0, '-');
        }
        let body = format!("m v={text} 1\n");
        let want = text.parse::<f64>().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        match parse_lines(body.as_bytes()).next() {
            Some(Ok(line)) => match line.fields[0].1 {
                FieldValue::Float(got) => prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", text),
                ref other => prop_assert!(false, "{text}: {other:?}"),
            },
            other => prop_assert!(false, "{text}: {other:?}"),
        }
    }
}

/// The advisor stops sharing after bodies with few repeats, tries one body in `RETRY_EVERY` meanwhile,
/// and shares again once a body repeats its keys.
#[test]
fn share_advisor_follows_the_bodies() {
    use crate::ShareAdvisor;
    let advisor = ShareAdvisor::default();
    assert!(advisor.advise(), "shares at first");
    for _ in 0..ShareAdvisor::POOR_BODIES {
        advisor.observe(10_000, 10_000 / ShareAdvisor::HIT_RATIO_MIN - 1);
    }
    let advised: Vec<bool> = (0..ShareAdvisor::RETRY_EVERY * 2).map(|_| advisor.advise()).collect();
    assert_eq!(advised.iter().filter(|a| **a).count(), 2, "{advised:?}");
    advisor.observe(10_000, 10_000 / ShareAdvisor::HIT_RATIO_MIN);
    assert!((0..4).all(|_| advisor.advise()), "shares again after a body that repeats");
}
