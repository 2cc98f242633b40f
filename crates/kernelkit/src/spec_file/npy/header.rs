//! The `.npy` header reader: magic, version, length, then the Python dict
//! literal, parsed by a loop over a cursor (never by recursion) and bounded
//! by [`MAX_HEADER_BYTES`] and [`MAX_NDIM`] axes.

use std::io::{self, Read};

use super::{Descr, Header, MAX_HEADER_BYTES};
use crate::spec_file::message::short;
use crate::spec_file::MAX_NDIM;

/// Reads the magic, version and header from `r`, leaving it at the data.
/// The error is the reason alone.
pub fn read_header(r: &mut impl Read) -> Result<Header, String> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => "not a .npy file (too short for its magic)".to_string(),
        _ => e.to_string(),
    })?;
    if &magic[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (major, minor) = (magic[6], magic[7]);
    let (len, before) = match major {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b)
                .map_err(|_| "the header length is cut short")?;
            (u16::from_le_bytes(b) as usize, 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b)
                .map_err(|_| "the header length is cut short")?;
            (u32::from_le_bytes(b) as usize, 12)
        }
        _ => return Err(format!("unsupported .npy version {major}.{minor}")),
    };
    if len > MAX_HEADER_BYTES {
        return Err(format!(
            "its header is {len} bytes long, more than the {MAX_HEADER_BYTES} kernelkit reads"
        ));
    }
    let mut text = vec![0u8; len];
    r.read_exact(&mut text).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => format!("its header ends before its {len} bytes"),
        _ => e.to_string(),
    })?;
    let mut header = parse_header(&text)?;
    header.data_offset = (before + len) as u64;
    Ok(header)
}

/// Parses the header dict (`data_offset` is left 0).
fn parse_header(text: &[u8]) -> Result<Header, String> {
    let mut c = Cursor { text, at: 0 };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    c.expect(b'{', "`{`")?;
    loop {
        if c.eat(b'}') {
            break;
        }
        let key = c.string()?;
        c.expect(b':', "`:`")?;
        match key.as_str() {
            "descr" if descr.is_none() => descr = Some(c.descr()?),
            "fortran_order" if fortran_order.is_none() => fortran_order = Some(c.boolean()?),
            "shape" if shape.is_none() => shape = Some(c.shape()?),
            "descr" | "fortran_order" | "shape" => {
                return Err(format!("its header has '{key}' twice"))
            }
            _ => return Err(format!("its header has an unknown key '{}'", short(&key))),
        }
        if c.eat(b',') {
            continue;
        }
        c.expect(b'}', "`,` or `}`")?;
        break;
    }
    c.skip_space();
    if c.at != text.len() {
        return Err(format!(
            "its header has text after the dict (byte {})",
            c.at
        ));
    }
    let missing = |key| format!("its header has no '{key}'");
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_offset: 0,
    })
}

/// A position in header text. Every method is a loop: no input nests the
/// call stack.
struct Cursor<'t> {
    text: &'t [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Consumes `b` (after spaces) if it is next.
    fn eat(&mut self, b: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8, what: &str) -> Result<(), String> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!(
                "its header is not a dict literal: expected {what} at byte {}",
                self.at
            ))
        }
    }

    /// A quoted Python string (`'...'` or `"..."`; a backslash keeps the
    /// next byte as it is).
    fn string(&mut self) -> Result<String, String> {
        self.skip_space();
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "its header is not a dict literal: expected a string at byte {}",
                    self.at
                ))
            }
        };
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err("its header has an unterminated string".into()),
                Some(b'\\') => {
                    self.at += 1;
                    let Some(b) = self.peek() else { continue };
                    out.push(b);
                }
                Some(b) if b == quote => {
                    self.at += 1;
                    break;
                }
                Some(b) => out.push(b),
            }
            self.at += 1;
        }
        String::from_utf8(out).map_err(|_| "its header has a string that is not UTF-8".into())
    }

    /// `descr`: a type string, or a structured dtype (a list), skipped by
    /// counting brackets.
    fn descr(&mut self) -> Result<Descr, String> {
        self.skip_space();
        if self.peek() != Some(b'[') {
            return Ok(Descr::Plain(self.string()?));
        }
        let start = self.at;
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err("its header has an unterminated 'descr' list".into()),
                Some(b'\'' | b'"') => {
                    self.string()?;
                    continue;
                }
                Some(b'[' | b'(' | b'{') => depth += 1,
                Some(b']' | b')' | b'}') => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        let text = String::from_utf8_lossy(&self.text[start..self.at]);
                        return Ok(Descr::Structured(short(&text)));
                    }
                }
                Some(_) => {}
            }
            self.at += 1;
        }
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.skip_space();
        let rest = &self.text[self.at..];
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if rest.starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err("its 'fortran_order' is not True or False".into())
    }

    /// A non-negative integer (Python 2 files may end it with `L`).
    fn integer(&mut self) -> Result<u64, String> {
        self.skip_space();
        let start = self.at;
        let mut n = 0u64;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or("its shape has an extent that does not fit 64 bits")?;
            self.at += 1;
        }
        if self.at == start {
            return Err(format!(
                "its 'shape' is not a tuple of non-negative integers (byte {})",
                self.at
            ));
        }
        if matches!(self.peek(), Some(b'L' | b'l')) {
            self.at += 1;
        }
        Ok(n)
    }

    /// `shape`: a tuple of at most [`MAX_NDIM`] integers whose product
    /// fits 64 bits.
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(', "a tuple for 'shape'")?;
        let mut dims = Vec::new();
        let mut comma = false;
        loop {
            if self.eat(b')') {
                break;
            }
            if dims.len() == MAX_NDIM {
                return Err(format!(
                    "its shape has more than {MAX_NDIM} axes, the most kernelkit supports"
                ));
            }
            dims.push(self.integer()?);
            comma = self.eat(b',');
            if !comma {
                self.expect(b')', "`,` or `)` in 'shape'")?;
                break;
            }
        }
        if dims.len() == 1 && !comma {
            return Err("its 'shape' is `(n)`, not the tuple `(n,)`".into());
        }
        if dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .is_none()
        {
            return Err(format!(
                "its shape {dims:?} has more elements than 64 bits count"
            ));
        }
        Ok(dims)
    }
}
