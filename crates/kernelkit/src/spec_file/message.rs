//! How the spec file readers quote what they read: every error is one line
//! and costs no more for a huge value or name than for a small one, so a
//! message quotes at most [`QUOTED_CHARS`] characters of it.

use serde_json::Value;

/// How many characters of a name or a value a message quotes.
pub(crate) const QUOTED_CHARS: usize = 64;

/// `s` for a one-line message: cut to [`QUOTED_CHARS`] characters, with
/// control characters (a newline, say) escaped.
pub(crate) fn short(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    for c in chars.by_ref().take(QUOTED_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// A JSON value as text for a message, cut to [`QUOTED_CHARS`] bytes
/// (serialization stops there: a huge value costs no more than a small one).
pub(crate) fn brief(v: &Value) -> String {
    /// Keeps the first `room` bytes, then refuses more (which stops serde).
    struct Prefix {
        text: Vec<u8>,
        room: usize,
    }
    impl std::io::Write for Prefix {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::other("enough"));
            }
            let n = buf.len().min(self.room);
            self.text.extend_from_slice(&buf[..n]);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Prefix {
        text: Vec::new(),
        room: QUOTED_CHARS + 1,
    };
    let whole = serde_json::to_writer(&mut w, v).is_ok() && w.room > 0;
    let mut text = String::from_utf8_lossy(&w.text).into_owned();
    if !whole {
        // Cut at a character boundary, below the byte that was one too many.
        let mut end = text.len().min(QUOTED_CHARS);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// A short description of a JSON value's type, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_are_cut_and_stay_on_one_line() {
        assert_eq!(short("a\nb"), "a\\nb");
        let long = "x".repeat(1000);
        assert_eq!(short(&long).chars().count(), QUOTED_CHARS + 1);
        assert!(short(&long).ends_with('…'));
        assert_eq!(brief(&json!([1, 2])), "[1,2]");
        let cut = brief(&json!(vec![123456; 10_000]));
        assert!(cut.len() <= QUOTED_CHARS + '…'.len_utf8() && cut.ends_with('…'));
        // A cut never splits a character.
        let wide = brief(&json!("é".repeat(100)));
        assert!(wide.ends_with('…'));
    }
}
