//! Serialising a [`Line`] back to line protocol.

use std::fmt::Write as _;

use crate::{FieldValue, Line};

/// Appends `line` to `out` as line protocol, without a trailing newline. `line_number` is ignored.
///
/// Escapes `,` and space in the measurement; `,`, `=` and space in tag keys, tag values and field
/// keys; `"` and `\` in string values. Floats are written in Rust's shortest round-trip form.
///
/// Every line [`crate::parse_lines`] returns parses back identically. Some values the parser never
/// returns cannot be expressed in line protocol, and their output will not parse back as they were:
/// empty names, names containing a newline or ending with a backslash (it would escape the
/// separator after it), a measurement starting with `#`, a measurement or first field key starting
/// with a tab or NUL (skipped as blanks), a line without fields, repeated keys, and NaN or infinite
/// floats.
pub fn write_line(out: &mut String, line: &Line<'_>) {
    escape(out, &line.measurement, b", ");
    for (key, value) in &line.tags {
        out.push(',');
        escape(out, key, b", =");
        out.push('=');
        escape(out, value, b", =");
    }
    let mut separator = ' ';
    for (key, value) in &line.fields {
        out.push(separator);
        separator = ',';
        escape(out, key, b", =");
        out.push('=');
        write_value(out, value);
    }
    if let Some(timestamp) = line.timestamp {
        // Writing to a String cannot fail.
        let _ = write!(out, " {timestamp}");
    }
}

fn write_value(out: &mut String, value: &FieldValue<'_>) {
    // Writing to a String cannot fail.
    let _ = match value {
        // `{:?}` is the shortest text that parses back to the same bits, in exponent form when long.
        FieldValue::Float(v) => write!(out, "{v:?}"),
        FieldValue::Integer(v) => write!(out, "{v}i"),
        FieldValue::UInteger(v) => write!(out, "{v}u"),
        FieldValue::Boolean(v) => write!(out, "{v}"),
        FieldValue::String(s) => {
            out.push('"');
            escape(out, s, b"\"\\");
            out.push('"');
            Ok(())
        }
    };
}

/// Appends `text` with a backslash before every byte in `special` (all ASCII).
fn escape(out: &mut String, text: &str, special: &[u8]) {
    if !text.bytes().any(|b| special.contains(&b)) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if c.is_ascii() && special.contains(&(c as u8)) {
            out.push('\\');
        }
        out.push(c);
    }
}
