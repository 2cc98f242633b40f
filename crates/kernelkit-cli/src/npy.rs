//! `.npy` files in and out, through the `npyz` crate.
//!
//! Every kernelkit dtype has a NumPy type string, written the way NumPy
//! writes it (`|b1`, `<f2`, `<c8`, ...). NumPy has no bfloat16; the
//! `ml_dtypes` package (what JAX and MLX use from NumPy) saves its bfloat16
//! arrays as the 2-byte raw type `<V2`, so kernelkit does the same: `np.load`
//! returns a `|V2` array and `.view(ml_dtypes.bfloat16)` restores it. A
//! `V2` file is read as little-endian bfloat16 bits, and only for an input
//! declared `bfloat16`.
//!
//! Reading checks the file against the input's declared dtype and shape and
//! refuses a mismatch instead of converting: a `float64` file for a
//! `float32` input is an error that says so. Fortran-order files are
//! reordered to row-major; big-endian files are converted by `npyz`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::Path;

use kernelkit::{bf16, f16, Complex32, DType, Element};
use npyz::{FixedSizeBytes, NpyFile, Order, TypeChar, TypeStr, WriterBuilder};

/// A `.npy` file that cannot be read as an input, or written as an output.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file cannot be opened or parsed.
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
    /// An output file cannot be written.
    #[error("cannot write {path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
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

/// The kernelkit dtype a NumPy type string holds, if any (`V2` counts as
/// bfloat16, the `ml_dtypes` convention).
fn dtype_of(ts: &TypeStr) -> Option<DType> {
    Some(match (ts.type_char(), ts.size_field()) {
        (TypeChar::Bool, 1) => DType::Bool,
        (TypeChar::Uint, 1) => DType::U8,
        (TypeChar::Uint, 2) => DType::U16,
        (TypeChar::Uint, 4) => DType::U32,
        (TypeChar::Uint, 8) => DType::U64,
        (TypeChar::Int, 1) => DType::I8,
        (TypeChar::Int, 2) => DType::I16,
        (TypeChar::Int, 4) => DType::I32,
        (TypeChar::Int, 8) => DType::I64,
        (TypeChar::Float, 2) => DType::F16,
        (TypeChar::Float, 4) => DType::F32,
        (TypeChar::Float, 8) => DType::F64,
        (TypeChar::Complex, 8) => DType::Complex64,
        (TypeChar::RawData, 2) => DType::BF16,
        _ => return None,
    })
}

/// Reads `path` as the data of `input`, which is declared `dtype` and
/// `shape`; returns row-major little-endian element bytes.
pub fn read(path: &Path, input: &str, dtype: DType, shape: &[usize]) -> Result<Vec<u8>, NpyError> {
    let shown = path.display().to_string();
    let read_error = |reason: String| NpyError::Read {
        input: input.to_string(),
        path: shown.clone(),
        reason,
    };
    let file = File::open(path).map_err(|e| read_error(e.to_string()))?;
    let npy = NpyFile::new(BufReader::new(file)).map_err(|e| read_error(e.to_string()))?;
    let ts = match npy.dtype() {
        npyz::DType::Plain(ts) => ts,
        other => {
            return Err(NpyError::DType {
                input: input.to_string(),
                path: shown,
                found: format!("the structured dtype {}", other.descr().trim()),
                dtype,
            })
        }
    };
    if dtype_of(&ts) != Some(dtype) {
        let meaning = match dtype_of(&ts) {
            Some(d) => d.name().to_string(),
            None => "no kernelkit dtype".to_string(),
        };
        return Err(NpyError::DType {
            input: input.to_string(),
            path: shown,
            found: format!("{ts} ({meaning})"),
            dtype,
        });
    }
    let file_shape = npy.shape().to_vec();
    if file_shape.len() != shape.len() || file_shape.iter().zip(shape).any(|(&f, &d)| f != d as u64)
    {
        return Err(NpyError::Shape {
            input: input.to_string(),
            path: shown,
            found: file_shape,
            declared: shape.to_vec(),
        });
    }
    let order = npy.order();
    let bytes = match dtype {
        DType::Bool => elements::<bool, _>(npy),
        DType::U8 => elements::<u8, _>(npy),
        DType::U16 => elements::<u16, _>(npy),
        DType::U32 => elements::<u32, _>(npy),
        DType::U64 => elements::<u64, _>(npy),
        DType::I8 => elements::<i8, _>(npy),
        DType::I16 => elements::<i16, _>(npy),
        DType::I32 => elements::<i32, _>(npy),
        DType::I64 => elements::<i64, _>(npy),
        DType::F16 => elements::<f16, _>(npy),
        DType::BF16 => npy
            .into_vec::<FixedSizeBytes<2>>()
            .map(|v| v.iter().flat_map(|b| b.0).collect()),
        DType::F32 => elements::<f32, _>(npy),
        DType::F64 => elements::<f64, _>(npy),
        DType::Complex64 => elements::<Complex32, _>(npy),
    }
    .map_err(|e| read_error(e.to_string()))?;
    Ok(match order {
        Order::C => bytes,
        Order::Fortran => fortran_to_row_major(&bytes, shape, dtype.size()),
    })
}

fn elements<T, R>(npy: NpyFile<R>) -> io::Result<Vec<u8>>
where
    T: npyz::Deserialize + Element,
    R: io::Read,
{
    let values: Vec<T> = npy.into_vec()?;
    let width = T::DTYPE.size();
    let mut out = vec![0u8; values.len() * width];
    for (v, chunk) in values.iter().zip(out.chunks_exact_mut(width)) {
        v.write_le(chunk);
    }
    Ok(out)
}

/// Reorders column-major (Fortran) element bytes to row-major.
fn fortran_to_row_major(bytes: &[u8], shape: &[usize], width: usize) -> Vec<u8> {
    let n = bytes.len() / width.max(1);
    let mut col_strides = vec![1usize; shape.len()];
    for axis in 1..shape.len() {
        col_strides[axis] = col_strides[axis - 1] * shape[axis - 1];
    }
    let mut out = Vec::with_capacity(bytes.len());
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
    out
}

/// Writes row-major little-endian element bytes of `dtype` and `shape` to
/// `path` as a C-order `.npy` file.
pub fn write(path: &Path, bytes: &[u8], dtype: DType, shape: &[usize]) -> Result<(), NpyError> {
    let fail = |e: io::Error| NpyError::Write {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let file = File::create(path).map_err(fail)?;
    let mut w = BufWriter::new(file);
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    match dtype {
        DType::Bool => write_as::<bool>(&mut w, bytes, dtype, &shape),
        DType::U8 => write_as::<u8>(&mut w, bytes, dtype, &shape),
        DType::U16 => write_as::<u16>(&mut w, bytes, dtype, &shape),
        DType::U32 => write_as::<u32>(&mut w, bytes, dtype, &shape),
        DType::U64 => write_as::<u64>(&mut w, bytes, dtype, &shape),
        DType::I8 => write_as::<i8>(&mut w, bytes, dtype, &shape),
        DType::I16 => write_as::<i16>(&mut w, bytes, dtype, &shape),
        DType::I32 => write_as::<i32>(&mut w, bytes, dtype, &shape),
        DType::I64 => write_as::<i64>(&mut w, bytes, dtype, &shape),
        DType::F16 => write_as::<f16>(&mut w, bytes, dtype, &shape),
        DType::BF16 => write_bf16(&mut w, bytes, &shape),
        DType::F32 => write_as::<f32>(&mut w, bytes, dtype, &shape),
        DType::F64 => write_as::<f64>(&mut w, bytes, dtype, &shape),
        DType::Complex64 => write_as::<Complex32>(&mut w, bytes, dtype, &shape),
    }
    .and_then(|()| w.flush())
    .map_err(fail)
}

fn header(dtype: DType) -> io::Result<npyz::DType> {
    let ts: TypeStr = type_str(dtype)
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?;
    Ok(npyz::DType::Plain(ts))
}

fn write_as<T>(w: &mut impl Write, bytes: &[u8], dtype: DType, shape: &[u64]) -> io::Result<()>
where
    T: npyz::Serialize + Element,
{
    let mut writer = npyz::WriteOptions::<T>::new()
        .dtype(header(dtype)?)
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    for chunk in bytes.chunks_exact(dtype.size()) {
        writer.push(&T::read_le(chunk))?;
    }
    writer.finish()
}

fn write_bf16(w: &mut impl Write, bytes: &[u8], shape: &[u64]) -> io::Result<()> {
    let mut writer = npyz::WriteOptions::<FixedSizeBytes<2>>::new()
        .dtype(header(DType::BF16)?)
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    for chunk in bytes.chunks_exact(2) {
        let bits = bf16::read_le(chunk).to_bits().to_le_bytes();
        writer.push(&FixedSizeBytes(bits))?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_dtype_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        for dtype in DType::ALL {
            for shape in [vec![], vec![5], vec![2, 3]] {
                let n: usize = shape.iter().product();
                let bytes = sample(dtype, n);
                let path = dir.path().join(format!("{dtype}.npy"));
                write(&path, &bytes, dtype, &shape).unwrap();
                let text = std::fs::read(&path).unwrap();
                let header = String::from_utf8_lossy(&text[..64.min(text.len())]).to_string();
                assert!(header.contains(type_str(dtype)), "{dtype}: {header}");
                let back = read(&path, "x", dtype, &shape).unwrap();
                assert_eq!(back, bytes, "{dtype} {shape:?}");
            }
        }
    }

    #[test]
    fn fortran_order_is_reordered() {
        // A 2x3 array [[0, 1, 2], [3, 4, 5]] stored column-major.
        let col_major = [0u8, 3, 1, 4, 2, 5];
        assert_eq!(
            fortran_to_row_major(&col_major, &[2, 3], 1),
            [0, 1, 2, 3, 4, 5]
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.npy");
        let mut w = BufWriter::new(File::create(&path).unwrap());
        let mut writer = npyz::WriteOptions::<u8>::new()
            .dtype(header(DType::U8).unwrap())
            .shape(&[2, 3])
            .order(Order::Fortran)
            .writer(&mut w)
            .begin_nd()
            .unwrap();
        writer.extend(col_major).unwrap();
        writer.finish().unwrap();
        drop(w);
        assert_eq!(
            read(&path, "x", DType::U8, &[2, 3]).unwrap(),
            [0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn big_endian_files_are_converted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("be.npy");
        let mut w = BufWriter::new(File::create(&path).unwrap());
        let mut writer = npyz::WriteOptions::<i32>::new()
            .dtype(npyz::DType::Plain(">i4".parse().unwrap()))
            .shape(&[2])
            .writer(&mut w)
            .begin_nd()
            .unwrap();
        writer.extend([1i32, -70000]).unwrap();
        writer.finish().unwrap();
        drop(w);
        let bytes = read(&path, "x", DType::I32, &[2]).unwrap();
        assert_eq!(i32::read_le(&bytes[4..]), -70000);
    }

    #[test]
    fn mismatches_are_errors_naming_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        write(&path, &sample(DType::F64, 3), DType::F64, &[3]).unwrap();
        let e = read(&path, "a", DType::F32, &[3]).unwrap_err().to_string();
        assert!(
            e.contains("input `a`") && e.contains("holds <f8 (float64), but the input is float32"),
            "{e}"
        );
        let e = read(&path, "a", DType::F64, &[1, 3])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has shape [3], but the input is declared with shape [1, 3]"),
            "{e}"
        );
        let e = read(&dir.path().join("missing.npy"), "b", DType::F64, &[3])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("input `b`: cannot read"), "{e}");
        // Raw 2-byte data is bfloat16 only.
        write(&path, &sample(DType::BF16, 3), DType::BF16, &[3]).unwrap();
        let e = read(&path, "a", DType::U16, &[3]).unwrap_err().to_string();
        assert!(e.contains("<V2 (bfloat16)"), "{e}");
        std::fs::write(&path, b"not a npy file").unwrap();
        assert!(read(&path, "a", DType::U8, &[3]).is_err());
    }
}
