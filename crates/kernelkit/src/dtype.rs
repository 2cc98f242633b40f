//! Element types of arrays, and how each dialect spells them.
//!
//! One enum serves every layer: the variant key stores a `DType` as one byte,
//! the generators ask it for its name in their dialect, and arrays use it to
//! size and read their buffers.

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex32;

/// The element type of an array or of a template argument.
///
/// The names follow MLX (`float32`, `bfloat16`, `complex64`, ...), so kernel
/// specs written for MLX read the same here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DType {
    /// One byte, 0 or 1.
    Bool = 0,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Two f32: real then imaginary part.
    Complex64,
}

impl DType {
    /// Every dtype, in the order of their discriminants.
    pub const ALL: [DType; 14] = [
        DType::Bool,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::Complex64,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 | DType::Complex64 => 8,
        }
    }

    /// The MLX name (`float32`, `bool`, ...), used in specs, JSON and messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::Complex64 => "complex64",
        }
    }

    /// Parses an MLX dtype name; also accepts `bool_` and the short Rust-like
    /// names (`f32`, `i64`, `bf16`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" | "bool_" => DType::Bool,
            "uint8" | "u8" => DType::U8,
            "uint16" | "u16" => DType::U16,
            "uint32" | "u32" => DType::U32,
            "uint64" | "u64" => DType::U64,
            "int8" | "i8" => DType::I8,
            "int16" | "i16" => DType::I16,
            "int32" | "i32" => DType::I32,
            "int64" | "i64" => DType::I64,
            "float16" | "f16" | "half" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "float32" | "f32" | "float" => DType::F32,
            "float64" | "f64" | "double" => DType::F64,
            "complex64" | "c64" => DType::Complex64,
            _ => return None,
        })
    }

    /// The dtype for a key byte written by [`DType::key_byte`].
    #[cfg(test)]
    pub(crate) fn from_key_byte(b: u8) -> Option<DType> {
        DType::ALL.get(b as usize).copied()
    }

    /// A stable one-byte encoding (the discriminant).
    pub(crate) const fn key_byte(self) -> u8 {
        self as u8
    }

    /// True for the floating point and complex types.
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::Complex64
        )
    }

    /// The C/C++ type name shared by the CPU and CUDA preludes and by Metal
    /// (`float`, `int32_t`, `float16_t`, `bfloat16_t`, `complex64_t`, ...).
    pub const fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8_t",
            DType::U16 => "uint16_t",
            DType::U32 => "uint32_t",
            DType::U64 => "uint64_t",
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int32_t",
            DType::I64 => "int64_t",
            DType::F16 => "float16_t",
            DType::BF16 => "bfloat16_t",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::Complex64 => "complex64_t",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be the element of an [`Array`](crate::Array).
///
/// Conversion goes through little-endian bytes so that reading a buffer a
/// kernel wrote never reinterprets invalid bit patterns (a `bool` byte of 2
/// reads as `true`, not as undefined behaviour).
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype of arrays of this element.
    const DTYPE: DType;
    /// Writes the element's bytes (exactly `DTYPE.size()` of them).
    fn write_le(&self, out: &mut [u8]);
    /// Reads an element from `DTYPE.size()` bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! element_num {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn write_le(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(&bytes[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}

element_num!(
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn write_le(&self, out: &mut [u8]) {
        out[0] = *self as u8;
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

impl Element for Complex32 {
    const DTYPE: DType = DType::Complex64;
    fn write_le(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.re.to_le_bytes());
        out[4..8].copy_from_slice(&self.im.to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> Self {
        Complex32::new(f32::read_le(&bytes[..4]), f32::read_le(&bytes[4..8]))
    }
}

/// A fill value (a call's `init_value`) as the bytes of one element of
/// `dtype`, if the value fits the type exactly (integers in range, bools 0
/// or 1; floats round as the type does).
pub(crate) fn fill_pattern(v: f64, dtype: DType) -> Option<smallvec::SmallVec<[u8; 8]>> {
    let int_ok = |lo: f64, hi: f64| v.fract() == 0.0 && v >= lo && v <= hi;
    let mut out: smallvec::SmallVec<[u8; 8]> = smallvec::SmallVec::from_elem(0, dtype.size());
    match dtype {
        DType::Bool if v == 0.0 || v == 1.0 => (v == 1.0).write_le(&mut out),
        DType::U8 if int_ok(0.0, u8::MAX as f64) => (v as u8).write_le(&mut out),
        DType::U16 if int_ok(0.0, u16::MAX as f64) => (v as u16).write_le(&mut out),
        DType::U32 if int_ok(0.0, u32::MAX as f64) => (v as u32).write_le(&mut out),
        DType::U64 if int_ok(0.0, u64::MAX as f64) => (v as u64).write_le(&mut out),
        DType::I8 if int_ok(i8::MIN as f64, i8::MAX as f64) => (v as i8).write_le(&mut out),
        DType::I16 if int_ok(i16::MIN as f64, i16::MAX as f64) => (v as i16).write_le(&mut out),
        DType::I32 if int_ok(i32::MIN as f64, i32::MAX as f64) => (v as i32).write_le(&mut out),
        DType::I64 if int_ok(i64::MIN as f64, i64::MAX as f64) => (v as i64).write_le(&mut out),
        DType::F16 => half::f16::from_f64(v).write_le(&mut out),
        DType::BF16 => half::bf16::from_f64(v).write_le(&mut out),
        DType::F32 => (v as f32).write_le(&mut out),
        DType::F64 => v.write_le(&mut out),
        DType::Complex64 => num_complex::Complex32::new(v as f32, 0.0).write_le(&mut out),
        _ => return None,
    }
    Some(out)
}

/// Encodes a slice of elements as little-endian bytes.
pub(crate) fn to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    let size = T::DTYPE.size();
    let mut out = vec![0u8; data.len() * size];
    for (chunk, value) in out.chunks_exact_mut(size).zip(data) {
        value.write_le(chunk);
    }
    out
}

/// Decodes little-endian bytes into elements.
pub(crate) fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(T::DTYPE.size())
        .map(T::read_le)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(DType::from_key_byte(d.key_byte()), Some(d));
        }
        assert_eq!(DType::from_name("bool_"), Some(DType::Bool));
        assert_eq!(DType::from_name("float8"), None);
    }

    #[test]
    fn bytes_round_trip_and_bool_is_lenient() {
        let v = vec![1.5f32, -2.0, 3.25];
        assert_eq!(from_bytes::<f32>(&to_bytes(&v)), v);
        let c = vec![Complex32::new(1.0, -2.0)];
        assert_eq!(from_bytes::<Complex32>(&to_bytes(&c)), c);
        assert_eq!(from_bytes::<bool>(&[0, 1, 2]), vec![false, true, true]);
    }
}
