//! `.npy` files in and out.
//!
//! Every kernelkit dtype has a NumPy type string, written the way NumPy
//! writes it (`|b1`, `<f2`, `<c8`, ...). NumPy has no bfloat16; the
//! `ml_dtypes` package (what JAX and MLX use from NumPy) saves its bfloat16
//! arrays as the 2-byte raw type `V2`, so kernelkit does the same (`<V2`):
//! `np.load` returns a `|V2` array and `.view(ml_dtypes.bfloat16)` restores
//! it. A `V2` file is read as little-endian bfloat16 bits, and only for an
//! input declared `bfloat16`.
//!
//! Reading checks the file against the input's declared dtype and shape and
//! refuses a mismatch instead of converting: a `float64` file for a
//! `float32` input is an error that says so. Fortran-order files are
//! reordered to row-major, big-endian ones byte-swapped, and a `bool`
//! byte other than 0 or 1 is refused.
//!
//! The format (NumPy's `numpy/lib/format.py`): the magic `\x93NUMPY`, a
//! version (1.0, 2.0 or 3.0), the header's length (2 bytes in version 1,
//! 4 after), the header — a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, padded
//! with spaces and a newline to a multiple of 64 bytes — then the elements.
//!
//! The reader is kernelkit's own, because a file is untrusted input: the
//! header is read only up to [`MAX_HEADER_BYTES`] and parsed by a loop, not
//! by recursion (a shape nested 50,000 parentheses deep is an error, not a
//! stack overflow); a shape has at most [`MAX_NDIM`] axes; and the data are
//! read only once the header matches the declared input, after the file
//! was found long enough to hold them, into room reserved fallibly.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use super::message::short;
use super::MAX_NDIM;
use crate::dtype::DType;

/// The longest header read. NumPy itself refuses headers over 10,000
/// bytes by default (`max_header_size`); a header of [`MAX_NDIM`] axes
/// needs under 2,000.
pub const MAX_HEADER_BYTES: usize = 64 << 10;

/// A `.npy` file that cannot be read as an input.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file cannot be opened, is not a `.npy` file, or does not hold
    /// the data its header promises.
    #[error("input `{input}`: cannot read {path}: {reason}")]
    Read {
        /// The input's name.
        input: String,
        /// The file.
        path: String,
        /// The I/O or format error.
        reason: String,
    },
    /// The file's dtype is not the input's.
    #[error("input `{input}`: {path} holds {found}, but the input is {dtype}")]
    DType {
        /// The input's name.
        input: String,
        /// The file.
        path: String,
        /// The file's type string and its meaning.
        found: String,
        /// The declared dtype.
        dtype: DType,
    },
    /// The file's shape is not the input's.
    #[error("input `{input}`: {path} has shape {found:?}, but the input is declared with shape {declared:?}")]
    Shape {
        /// The input's name.
        input: String,
        /// The file.
        path: String,
        /// The file's shape.
        found: Vec<u64>,
        /// The declared shape.
        declared: Vec<usize>,
    },
}

/// The NumPy type string kernelkit writes for a dtype.
pub fn type_str(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::BF16 => "<V2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::Complex64 => "<c8",
    }
}

/// A header's `descr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Descr {
    /// A type string such as `<f4`.
    Plain(String),
    /// A structured dtype (a list of fields), kept as text for messages
    /// (cut short).
    Structured(String),
}

/// What a `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The element type.
    pub descr: Descr,
    /// Column-major element order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Where the data start: the bytes before them.
    pub data_offset: u64,
}

/// The kernelkit dtype of a plain type string, and whether its elements
/// are stored big-endian (`V2` counts as bfloat16 bits, little-endian:
/// the `ml_dtypes` convention; raw bytes have no byte order).
pub fn element_type(type_str: &str) -> Option<(DType, bool)> {
    let (order, rest) = match type_str.as_bytes().first()? {
        b'<' | b'>' | b'|' | b'=' => (type_str.as_bytes()[0], &type_str[1..]),
        _ => (b'=', type_str),
    };
    let kind = rest.chars().next()?;
    let size: usize = rest[kind.len_utf8()..].parse().ok()?;
    let dtype = match (kind, size) {
        ('b', 1) => DType::Bool,
        ('u', 1) => DType::U8,
        ('u', 2) => DType::U16,
        ('u', 4) => DType::U32,
        ('u', 8) => DType::U64,
        ('i', 1) => DType::I8,
        ('i', 2) => DType::I16,
        ('i', 4) => DType::I32,
        ('i', 8) => DType::I64,
        ('f', 2) => DType::F16,
        ('f', 4) => DType::F32,
        ('f', 8) => DType::F64,
        ('c', 8) => DType::Complex64,
        ('V', 2) => return Some((DType::BF16, false)),
        _ => return None,
    };
    let big = match order {
        b'>' => true,
        b'<' | b'|' => false,
        _ => cfg!(target_endian = "big"),
    };
    Some((dtype, big))
}

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

/// Reads `path` as the data of `input`, which is declared `dtype` and
/// `shape`; returns row-major little-endian element bytes.
pub fn read(path: &Path, input: &str, dtype: DType, shape: &[usize]) -> Result<Vec<u8>, NpyError> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| NpyError::Read {
        input: input.to_string(),
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    // Only a regular file's length says how much data it holds.
    let len = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    decode(BufReader::new(file), len, input, &shown, dtype, shape)
}

/// Reads `.npy` bytes from `r` as the data of `input` (declared `dtype`
/// and `shape`; `path` names the file in messages); `len` is the length of
/// the whole stream when known, so that a file too short for its shape is
/// refused before room is reserved for its data.
pub fn decode(
    mut r: impl Read,
    len: Option<u64>,
    input: &str,
    path: &str,
    dtype: DType,
    shape: &[usize],
) -> Result<Vec<u8>, NpyError> {
    let read_error = |reason: String| NpyError::Read {
        input: input.to_string(),
        path: path.to_string(),
        reason,
    };
    let header = read_header(&mut r).map_err(read_error)?;
    let (found, big) = match &header.descr {
        Descr::Plain(ts) => match element_type(ts) {
            Some((d, big)) if d == dtype => (d, big),
            other => {
                let meaning = other.map_or("no kernelkit dtype", |(d, _)| d.name());
                return Err(NpyError::DType {
                    input: input.to_string(),
                    path: path.to_string(),
                    found: format!("{} ({meaning})", short(ts)),
                    dtype,
                });
            }
        },
        Descr::Structured(text) => {
            return Err(NpyError::DType {
                input: input.to_string(),
                path: path.to_string(),
                found: format!("the structured dtype {text}"),
                dtype,
            })
        }
    };
    if header.shape.len() != shape.len()
        || header.shape.iter().zip(shape).any(|(&f, &d)| f != d as u64)
    {
        return Err(NpyError::Shape {
            input: input.to_string(),
            path: path.to_string(),
            found: header.shape,
            declared: shape.to_vec(),
        });
    }
    // The header's shape is the declared one, whose element count the
    // header parser found to fit 64 bits; its bytes may still not.
    let want = shape
        .iter()
        .try_fold(found.size(), |a, &d| a.checked_mul(d))
        .ok_or_else(|| read_error(format!("shape {shape:?} has more bytes than memory")))?;
    if let Some(len) = len {
        let have = len.saturating_sub(header.data_offset);
        if have < want as u64 {
            return Err(read_error(format!(
                "it holds {have} bytes of data, but shape {shape:?} of {} needs {want}",
                found.name()
            )));
        }
    }
    // A file found long enough gets its room at once; a stream of unknown
    // length (a pipe) grows it as data arrive, so the declared size alone
    // never reserves memory. Growth is fallible too (`read_to_end`).
    let room = if len.is_some() {
        want
    } else {
        want.min(1 << 20)
    };
    let mut data = Vec::new();
    data.try_reserve_exact(room)
        .map_err(|_| read_error(format!("cannot allocate {want} bytes for its data")))?;
    r.take(want as u64)
        .read_to_end(&mut data)
        .map_err(|e| read_error(e.to_string()))?;
    if data.len() < want {
        return Err(read_error(format!(
            "its data end after {} of the {want} bytes its shape needs",
            data.len()
        )));
    }
    if big {
        // Complex numbers swap each of their two parts.
        let unit = if found == DType::Complex64 {
            4
        } else {
            found.size()
        };
        for element in data.chunks_exact_mut(unit) {
            element.reverse();
        }
    }
    if found == DType::Bool {
        if let Some(i) = data.iter().position(|&b| b > 1) {
            return Err(read_error(format!(
                "its element {i} is the byte {}, not a bool (0 or 1)",
                data[i]
            )));
        }
    }
    if header.fortran_order && shape.len() > 1 {
        data = fortran_to_row_major(&data, shape, found.size())
            .ok_or_else(|| read_error(format!("cannot allocate {want} bytes to reorder it")))?;
    }
    Ok(data)
}

/// Reorders column-major (Fortran) element bytes of `shape` to row-major;
/// `None` if the copy cannot be allocated.
fn fortran_to_row_major(bytes: &[u8], shape: &[usize], width: usize) -> Option<Vec<u8>> {
    let n = bytes.len() / width.max(1);
    let mut out = Vec::new();
    out.try_reserve_exact(bytes.len()).ok()?;
    if n == 0 {
        return Some(out);
    }
    // With at least one element, every prefix product is at most `n`.
    let mut col_strides = vec![1usize; shape.len()];
    for axis in 1..shape.len() {
        col_strides[axis] = col_strides[axis - 1] * shape[axis - 1];
    }
    let mut index = vec![0usize; shape.len()];
    for _ in 0..n {
        let at: usize = index.iter().zip(&col_strides).map(|(i, s)| i * s).sum();
        out.extend_from_slice(&bytes[at * width..][..width]);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Some(out)
}

/// The bytes before the data of a C-order `.npy` file of `dtype` and
/// `shape`: magic, version (1.0, or 2.0 when the header needs more than
/// 65,535 bytes), header length and header, as NumPy writes them.
pub fn header(dtype: DType, shape: &[usize]) -> io::Result<Vec<u8>> {
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': (",
        type_str(dtype)
    );
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            dict.push_str(", ");
        }
        let _ = write!(dict, "{d}");
    }
    if shape.len() == 1 {
        dict.push(',');
    }
    dict.push_str("), }");
    // The text, its spaces and its newline end on a multiple of 64 bytes.
    let padded = |before: usize| {
        let pad = (64 - (before + dict.len() + 1) % 64) % 64;
        dict.len() + pad + 1
    };
    let mut out = b"\x93NUMPY".to_vec();
    let len = match u16::try_from(padded(10)) {
        Ok(len) => {
            out.extend([1, 0]);
            out.extend(len.to_le_bytes());
            len as usize
        }
        Err(_) => {
            let len = u32::try_from(padded(12)).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the .npy header would exceed 4 GiB",
                )
            })?;
            out.extend([2, 0]);
            out.extend(len.to_le_bytes());
            len as usize
        }
    };
    let end = out.len() + len;
    out.extend(dict.as_bytes());
    out.resize(end - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// Writes row-major little-endian element bytes of `dtype` and `shape` to
/// `w` as a C-order `.npy` file (bools as 0 or 1). An error if `bytes` is
/// not the size of `shape`.
pub fn write_to(w: &mut impl Write, bytes: &[u8], dtype: DType, shape: &[usize]) -> io::Result<()> {
    let want = shape
        .iter()
        .try_fold(dtype.size(), |a, &d| a.checked_mul(d));
    if want != Some(bytes.len()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} bytes are not an array of shape {shape:?} of {}",
                bytes.len(),
                dtype.name()
            ),
        ));
    }
    w.write_all(&header(dtype, shape)?)?;
    if dtype != DType::Bool {
        return w.write_all(bytes);
    }
    let mut chunk = [0u8; 4096];
    for part in bytes.chunks(chunk.len()) {
        for (o, &b) in chunk.iter_mut().zip(part) {
            *o = u8::from(b != 0);
        }
        w.write_all(&chunk[..part.len()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Element;
    use half::{bf16, f16};
    use num_complex::Complex32;

    /// Distinct, non-trivial bytes for `n` elements of `dtype`, valid for it.
    fn sample(dtype: DType, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n * dtype.size()];
        for (i, chunk) in out.chunks_exact_mut(dtype.size()).enumerate() {
            let x = i as f64 * 1.25 - 3.0;
            match dtype {
                DType::Bool => (i % 3 == 0).write_le(chunk),
                DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
                    for (k, b) in chunk.iter_mut().enumerate() {
                        *b = (i * 7 + k * 31 + 1) as u8;
                    }
                }
                DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                    for (k, b) in chunk.iter_mut().enumerate() {
                        *b = (i * 13 + k * 17 + 200) as u8;
                    }
                }
                DType::F16 => f16::from_f64(x).write_le(chunk),
                DType::BF16 => bf16::from_f64(x).write_le(chunk),
                DType::F32 => (x as f32).write_le(chunk),
                DType::F64 => (x / 3.0).write_le(chunk),
                DType::Complex64 => Complex32::new(x as f32, -(i as f32)).write_le(chunk),
            }
        }
        out
    }

    fn encoded(bytes: &[u8], dtype: DType, shape: &[usize]) -> Vec<u8> {
        let mut file = Vec::new();
        write_to(&mut file, bytes, dtype, shape).unwrap();
        file
    }

    fn decoded(file: &[u8], dtype: DType, shape: &[usize]) -> Result<Vec<u8>, NpyError> {
        decode(file, Some(file.len() as u64), "x", "x.npy", dtype, shape)
    }

    /// A file with `header` as its dict text, padded as NumPy pads it.
    fn with_header(header: &str, data: &[u8]) -> Vec<u8> {
        let pad = (64 - (10 + header.len() + 1) % 64) % 64;
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend(((header.len() + pad + 1) as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(std::iter::repeat_n(b' ', pad));
        out.push(b'\n');
        out.extend(data);
        out
    }

    fn reason(file: &[u8], dtype: DType, shape: &[usize]) -> String {
        let e = decoded(file, dtype, shape).unwrap_err().to_string();
        assert!(e.starts_with("input `x`: "), "{e}");
        assert!(!e.contains('\n') && e.len() < 300, "{e}");
        e
    }

    #[test]
    fn every_dtype_round_trips() {
        for dtype in DType::ALL {
            for shape in [vec![], vec![5], vec![2, 3], vec![2, 0, 3]] {
                let n: usize = shape.iter().product();
                let bytes = sample(dtype, n);
                let file = encoded(&bytes, dtype, &shape);
                assert_eq!((file.len() - bytes.len()) % 64, 0);
                let text = String::from_utf8_lossy(&file[..64]).to_string();
                assert!(text.contains(type_str(dtype)), "{dtype}: {text}");
                assert_eq!(
                    decoded(&file, dtype, &shape).unwrap(),
                    bytes,
                    "{dtype} {shape:?}"
                );
            }
        }
    }

    #[test]
    fn headers_are_written_as_numpy_writes_them() {
        let file = encoded(&[0; 24], DType::F32, &[2, 3]);
        assert_eq!(file.len(), 128 + 24);
        let text = String::from_utf8_lossy(&file[10..128]);
        assert!(text.ends_with(" \n"), "{text:?}");
        assert_eq!(
            text.trim_end(),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
        );
        assert!(String::from_utf8_lossy(&encoded(&[0; 5], DType::U8, &[5])).contains("(5,)"));
        assert!(String::from_utf8_lossy(&encoded(&[0], DType::U8, &[])).contains("()"));
        // A header too long for version 1 makes a version 2 file.
        let shape = vec![1usize; 30_000];
        let file = encoded(&[0], DType::U8, &shape);
        assert_eq!(&file[6..8], &[2, 0]);
        let len = u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize;
        assert_eq!((12 + len) % 64, 0);
        assert_eq!(file[12 + len - 1], b'\n');
        assert_eq!(file.len(), 12 + len + 1);
    }

    #[test]
    fn numpy_spellings_are_read() {
        let cases = [
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
            "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i4\"}",
            "{'descr':'=i4','fortran_order':False,'shape':(2,)}",
            "{ 'fortran_order' : False , 'descr' : 'i4' , 'shape' : ( 2 , ) , }",
        ];
        for header in cases {
            let file = with_header(header, &[1, 0, 0, 0, 2, 0, 0, 0]);
            assert_eq!(decoded(&file, DType::I32, &[2]).unwrap()[4], 2, "{header}");
        }
    }

    #[test]
    fn fortran_order_is_reordered() {
        // A 2x3 array [[0, 1, 2], [3, 4, 5]] stored column-major.
        let file = with_header(
            "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }",
            &[0, 3, 1, 4, 2, 5],
        );
        assert_eq!(
            decoded(&file, DType::U8, &[2, 3]).unwrap(),
            [0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn big_endian_files_are_converted() {
        let mut data = 1i32.to_be_bytes().to_vec();
        data.extend((-70000i32).to_be_bytes());
        let file = with_header(
            "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
            &data,
        );
        let bytes = decoded(&file, DType::I32, &[2]).unwrap();
        assert_eq!(i32::read_le(&bytes[4..]), -70000);
        let mut data = 1.5f32.to_be_bytes().to_vec();
        data.extend((-2.0f32).to_be_bytes());
        let file = with_header(
            "{'descr': '>c8', 'fortran_order': False, 'shape': (), }",
            &data,
        );
        let bytes = decoded(&file, DType::Complex64, &[]).unwrap();
        assert_eq!(Complex32::read_le(&bytes), Complex32::new(1.5, -2.0));
    }

    #[test]
    fn mismatches_are_errors_naming_the_input() {
        let file = encoded(&sample(DType::F64, 3), DType::F64, &[3]);
        let e = reason(&file, DType::F32, &[3]);
        assert!(
            e.contains("holds <f8 (float64), but the input is float32"),
            "{e}"
        );
        let e = reason(&file, DType::F64, &[1, 3]);
        assert!(
            e.contains("has shape [3], but the input is declared with shape [1, 3]"),
            "{e}"
        );
        // Raw 2-byte data is bfloat16 only.
        let file = encoded(&sample(DType::BF16, 3), DType::BF16, &[3]);
        assert!(reason(&file, DType::U16, &[3]).contains("<V2 (bfloat16)"));
        let file = with_header(
            "{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }",
            &[],
        );
        assert!(reason(&file, DType::U8, &[3]).contains("<U5 (no kernelkit dtype)"));
        let file = with_header(
            "{'descr': [('a', '<f4'), ('b', [('c', '<i4')])], 'fortran_order': False, 'shape': (3,), }",
            &[],
        );
        assert!(reason(&file, DType::F32, &[3]).contains("the structured dtype [('a'"));
        let e = read(Path::new("/nonexistent/b.npy"), "b", DType::F64, &[3]).unwrap_err();
        assert!(e.to_string().starts_with("input `b`: cannot read"), "{e}");
    }

    #[test]
    fn malformed_files_are_refused() {
        let head = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let f32s = [0u8; 8];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not a npy file".to_vec(), "no \\x93NUMPY magic"),
            (b"\x93NUM".to_vec(), "too short"),
            (b"\x93NUMPY\x09\x00\x10\x00".to_vec(), "version 9.0"),
            (
                [
                    &b"\x93NUMPY\x02\x00"[..],
                    &u32::MAX.to_le_bytes(),
                    b"{'descr'",
                ]
                .concat(),
                "4294967295 bytes long",
            ),
            (
                b"\x93NUMPY\x01\x00\x40\x00{'descr'".to_vec(),
                "header ends before",
            ),
            (
                with_header("{'descr': '<f4', 'shape': (2,), }", &f32s),
                "no 'fortran_order'",
            ),
            (
                with_header(&head.replace("False", "0"), &f32s),
                "not True or False",
            ),
            (
                with_header(&head.replace("(2,)", "(2)"), &f32s),
                "not the tuple",
            ),
            (
                with_header(&head.replace("(2,)", "(-2,)"), &f32s),
                "non-negative",
            ),
            (
                with_header(&head.replace("(2,)", "[2]"), &f32s),
                "a tuple for 'shape'",
            ),
            (
                with_header(&head.replace("(2,)", "(99999999999999999999,)"), &f32s),
                "does not fit 64 bits",
            ),
            (
                with_header(&head.replace("(2,)", "(4294967296, 4294967296, 2)"), &f32s),
                "more elements than 64 bits",
            ),
            (
                with_header(
                    &head.replace("(2,)", &format!("({})", "1, ".repeat(65))),
                    &f32s,
                ),
                "more than 64 axes",
            ),
            (
                with_header(
                    &head.replace(
                        "(2,)",
                        &format!("{}2,{}", "(".repeat(9000), ")".repeat(9000)),
                    ),
                    &f32s,
                ),
                "not a tuple of non-negative integers",
            ),
            (
                with_header(&head.replace("}", "'x': 1}"), &f32s),
                "unknown key 'x'",
            ),
            (
                with_header(&format!("{head}, 'shape': (2,)"), &f32s),
                "text after",
            ),
            (
                with_header(
                    "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                    &f32s,
                ),
                "'descr' twice",
            ),
            (with_header("{'descr': '<f4", &f32s), "unterminated string"),
            (
                with_header(head, &f32s[..7]),
                "holds 7 bytes of data, but shape [2] of float32 needs 8",
            ),
        ];
        for (file, expected) in cases {
            let e = reason(&file, DType::F32, &[2]);
            assert!(e.contains(expected), "{e:?} lacks {expected:?}");
        }
        // Without a length, a short file is found short when read.
        let file = with_header(head, &f32s[..5]);
        let e = decode(&file[..], None, "x", "x.npy", DType::F32, &[2]).unwrap_err();
        assert!(
            e.to_string()
                .contains("its data end after 5 of the 8 bytes"),
            "{e}"
        );
        // A declared 10^12 elements against a tiny file: refused unread.
        let big = with_header(&head.replace("(2,)", "(1000000000000,)"), &f32s);
        let e = reason(&big, DType::F32, &[1_000_000_000_000]);
        assert!(e.contains("holds 8 bytes of data"), "{e}");
        let bools = with_header(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            &[0, 1, 2],
        );
        assert!(reason(&bools, DType::Bool, &[3]).contains("element 2 is the byte 2"));
    }

    #[test]
    fn writing_refuses_bytes_of_another_size() {
        let mut out = Vec::new();
        assert!(write_to(&mut out, &[0; 5], DType::F32, &[2]).is_err());
        assert!(out.is_empty());
        assert!(write_to(&mut out, &[], DType::F32, &[usize::MAX, 2]).is_err());
        // Bools are written as 0 or 1 whatever byte the kernel left.
        write_to(&mut out, &[0, 7, 1], DType::Bool, &[3]).unwrap();
        assert_eq!(&out[out.len() - 3..], &[0, 1, 1]);
    }
}
