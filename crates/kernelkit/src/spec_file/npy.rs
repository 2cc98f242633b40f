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
//! stack overflow); a shape has at most [`MAX_NDIM`](super::MAX_NDIM) axes; and the data are
//! read only once the header matches the declared input, after the file
//! was found long enough to hold them, into room reserved fallibly.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use super::message::short;
use crate::dtype::DType;

mod header;

pub use header::read_header;

/// The longest header read. NumPy itself refuses headers over 10,000
/// bytes by default (`max_header_size`); a header of [`MAX_NDIM`](super::MAX_NDIM) axes
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
mod tests;
