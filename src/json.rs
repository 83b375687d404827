//! The few JSON values rastore prints (`ra info --json`, `ra cat --json`, `ra stats
//! --json`, fill tokens), written so that strict parsers (`jq`, Python's `json`,
//! JavaScript's `JSON.parse`) read them.
//!
//! JSON has no NaN or infinities. They are written as the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"`, as the protocol-buffers JSON mapping writes them;
//! Python's `float()` and JavaScript's `Number()` turn those strings back into the
//! values. Every other number is a plain JSON number.

/// `s` as a JSON string literal.
pub fn string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `v` as a JSON value: the shortest number that reads back as `v`, or one of the
/// strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub fn float(v: f64) -> String {
    if v.is_nan() {
        "\"NaN\"".into()
    } else if v.is_infinite() {
        if v < 0.0 {
            "\"-Infinity\""
        } else {
            "\"Infinity\""
        }
        .into()
    } else {
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_json() {
        assert_eq!(float(f64::NAN), "\"NaN\"");
        assert_eq!(float(f64::NEG_INFINITY), "\"-Infinity\"");
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(1e300), "1e300");
        assert_eq!(float(-2.5e-8), "-2.5e-8");
        assert_eq!(string("a\"\\\n"), "\"a\\\"\\\\\\u000a\"");
    }
}
