//! What reaches a terminal: file names, messages and trailers with their control
//! characters (C0, DEL and C1, U+009B included) shown as escapes, so that a hostile
//! name or trailer cannot move the cursor, retitle the window or hide a line.

use std::fmt::Write as _;

/// `text` with every control character escaped (`\x1b`, `\u{9b}`); `keep` names
/// controls to pass through (newline and tab in multi-line text).
fn escape(text: &str, keep: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && !keep.contains(&c) {
            if (c as u32) < 0x80 {
                let _ = write!(out, "\\x{:02x}", c as u32);
            } else {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One line for a terminal: a file name or a message.
pub fn line(text: &str) -> String {
    escape(text, &[])
}

/// A path for a terminal, lossy for names that are not UTF-8.
pub fn path(p: &std::path::Path) -> String {
    line(&p.to_string_lossy())
}

/// Bytes shown as text on a terminal: controls escaped except newline and tab, and
/// bytes that are not UTF-8 as `\xNN`.
pub fn text(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape(chunk.valid(), &['\n', '\t']));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        assert_eq!(line("a\x1b[2Jb\x07\r\nc"), "a\\x1b[2Jb\\x07\\x0d\\x0ac");
        assert_eq!(line("x\u{9b}31m\u{7f}é"), "x\\u{9b}31m\\x7fé");
        assert_eq!(text(b"k: v\n\tw\x1b\xff"), "k: v\n\tw\\x1b\\xff");
    }
}
