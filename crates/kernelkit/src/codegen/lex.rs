//! A small C++ tokenizer for kernel bodies and headers: enough to find
//! identifiers, punctuation and the extent of comments, string literals and
//! preprocessor lines, which the scanners (what does a body use?) and the
//! Metal lowering (what must change for C++ and CUDA?) need. It never fails:
//! text it does not understand becomes one-character punctuation.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Ident,
    /// A numeric literal, suffix included (`1.5f`, `0x1Fu`, `.5h`).
    Number,
    /// An operator or punctuator (`::`, `->`, `<<=`, `;`, ...).
    Punct,
    /// A string or character literal, quotes included.
    Literal,
}

/// One token: its kind, its byte range in the text, and whether it sits on
/// a preprocessor line (`#define ...`, `#if ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) directive: bool,
}

impl Token {
    /// The token's text in `src`.
    pub(crate) fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

/// Punctuators of three and two characters, longest first.
/// C++'s keywords (its alternative operator spellings, `and`, `not`, ...
/// included): no generated name may be one, and none names anything a
/// prelude section declares.
pub(crate) const CXX_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "const_cast",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "nullptr",
    "operator",
    "or",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "xor",
];

const PUNCT3: &[&str] = &["<<=", ">>=", "->*", "..."];
const PUNCT2: &[&str] = &[
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "##", ".*",
];

/// The tokens of `src`. Comments and line continuations are skipped.
pub(crate) fn tokens(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Whether only white space was seen since the last new line, and
    // whether the current (logical) line is a preprocessor line.
    let mut line_start = true;
    let mut directive = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                directive = false;
                i += 1;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => i += 3,
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    // A continued `//` comment goes on on the next line.
                    if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
            }
            _ => {
                if c == b'#' && line_start {
                    directive = true;
                }
                line_start = false;
                let start = i;
                let kind = if c == b'"' || c == b'\'' {
                    i = literal_end(b, i);
                    Kind::Literal
                } else if c == b'R' && b.get(i + 1) == Some(&b'"') {
                    i = raw_string_end(b, i + 1);
                    Kind::Literal
                } else if c.is_ascii_digit()
                    || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
                {
                    i = number_end(b, i);
                    Kind::Number
                } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
                    while i < b.len()
                        && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80)
                    {
                        i += 1;
                    }
                    // `u8"..."`, `L'x'`: a prefixed literal is one literal.
                    if matches!(&src[start..i], "u8" | "u" | "U" | "L")
                        && matches!(b.get(i), Some(b'"') | Some(b'\''))
                    {
                        i = literal_end(b, i);
                        Kind::Literal
                    } else {
                        Kind::Ident
                    }
                } else {
                    let rest = &src[i..];
                    let len = PUNCT3
                        .iter()
                        .chain(PUNCT2)
                        .find(|p| rest.starts_with(**p))
                        .map_or_else(
                            || rest.chars().next().map_or(1, char::len_utf8),
                            |p| p.len(),
                        );
                    i += len;
                    Kind::Punct
                };
                out.push(Token {
                    kind,
                    start,
                    end: i,
                    directive,
                });
            }
        }
    }
    out
}

/// The end of a quoted literal starting at `i` (its quote), escapes honoured;
/// an unterminated literal ends at the end of its line.
fn literal_end(b: &[u8], i: usize) -> usize {
    let quote = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The end of a raw string `R"delim( ... )delim"` whose `"` is at `i`.
fn raw_string_end(b: &[u8], i: usize) -> usize {
    let Some(open) = b[i..].iter().position(|&c| c == b'(').map(|p| i + p) else {
        return b.len();
    };
    let delim = &b[i + 1..open];
    let mut j = open + 1;
    while j < b.len() {
        if b[j] == b')'
            && b[j + 1..].starts_with(delim)
            && b.get(j + 1 + delim.len()) == Some(&b'"')
        {
            return j + delim.len() + 2;
        }
        j += 1;
    }
    b.len()
}

/// The end of a numeric literal (a pp-number: digits, letters, `.`, `'`,
/// and a sign after an exponent letter).
fn number_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        let c = b[j];
        let digit_separator = c == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphanumeric);
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || digit_separator {
            j += 1;
        } else if (c == b'+' || c == b'-') && matches!(b[j - 1], b'e' | b'E' | b'p' | b'P') {
            let hex = b[i..j].starts_with(b"0x") || b[i..j].starts_with(b"0X");
            let exp = matches!(b[j - 1], b'p' | b'P') || !hex;
            if !exp {
                break;
            }
            j += 1;
        } else {
            break;
        }
    }
    j
}

/// Replaces byte ranges of `src` (sorted, not overlapping).
pub(crate) fn apply(src: &str, edits: &[(usize, usize, String)]) -> String {
    let mut out = String::with_capacity(src.len() + edits.len() * 24);
    let mut at = 0;
    for (start, end, text) in edits {
        out.push_str(&src[at..*start]);
        out.push_str(text);
        at = *end;
    }
    out.push_str(&src[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<&str> {
        tokens(src).iter().map(|t| t.text(src)).collect()
    }

    #[test]
    fn splits_code_into_tokens() {
        assert_eq!(
            texts("a.xy += b->c[1.5f] >>= 2; // x.yz\n/* q */ s::t"),
            [
                "a", ".", "xy", "+=", "b", "->", "c", "[", "1.5f", "]", ">>=", "2", ";", "s", "::",
                "t"
            ]
        );
        assert_eq!(
            texts("x = .5h + 1e-3f - 0x1p+3"),
            ["x", "=", ".5h", "+", "1e-3f", "-", "0x1p+3"]
        );
        assert_eq!(texts(r#"f("a\"b", 'c') R"(q"x)" u8"z""#).len(), 8);
    }

    #[test]
    fn marks_preprocessor_lines() {
        let src = "#define A(x) \\\n  x.xy\nint b;\n  # if 1\n";
        let t = tokens(src);
        let dir: Vec<(&str, bool)> = t.iter().map(|t| (t.text(src), t.directive)).collect();
        assert_eq!(
            dir,
            [
                ("#", true),
                ("define", true),
                ("A", true),
                ("(", true),
                ("x", true),
                (")", true),
                ("x", true),
                (".", true),
                ("xy", true),
                ("int", false),
                ("b", false),
                (";", false),
                ("#", true),
                ("if", true),
                ("1", true)
            ]
        );
    }
}
