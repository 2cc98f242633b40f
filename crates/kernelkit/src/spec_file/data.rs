//! Input data written in JSON, turned into the little-endian element bytes
//! of an array of a given dtype and shape.
//!
//! Accepted forms, for an input of shape `S` with `N` elements:
//! - a nested list of shape `S` (for a 0-d input: the value itself);
//! - a flat list of `N` values, in row-major order;
//! - a bare value when `N` is 1.
//!
//! Values: JSON numbers; `true`/`false` for `bool` (0 and 1 too); for
//! floating types also `"nan"`, `"inf"`, `"-inf"` (JSON has no literal for
//! them); for `complex64` a number (the real part) or `[re, im]`. A value
//! that does not fit the dtype is refused rather than rounded into
//! something else: a non-integer or out-of-range integer, or a finite
//! number that overflows to infinity in a narrow float type.
//!
//! Nothing is sized from the declared shape before the data are checked
//! against it: the elements are gathered from the JSON value first (so
//! their number is bounded by the value in hand), and a declared shape of
//! 10^12 elements with one value given is a mismatch, not an allocation.

use half::{bf16, f16};
use num_complex::Complex32;
use serde_json::Value;

use super::message::{brief, kind};
use super::MAX_NDIM;
use crate::dtype::{DType, Element};

/// Data that does not fit its input.
#[derive(Debug, thiserror::Error)]
#[error("input `{input}`: {reason}")]
pub struct DataError {
    /// The input's name.
    pub input: String,
    /// What does not fit, and where.
    pub reason: String,
}

/// The row-major little-endian bytes of `value` as an array of `dtype` and
/// `shape`; errors name `input`.
pub fn encode(
    input: &str,
    value: &Value,
    dtype: DType,
    shape: &[usize],
) -> Result<Vec<u8>, DataError> {
    let fail = |reason: String| DataError {
        input: input.to_string(),
        reason,
    };
    if shape.len() > MAX_NDIM {
        return Err(fail(format!(
            "shape with {} axes; at most {MAX_NDIM} are supported",
            shape.len()
        )));
    }
    let size = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| fail(format!("shape {shape:?} is too large")))?;
    // `elements` holds exactly `size` values here, all present in `value`:
    // the byte buffer below is sized from data in hand.
    let elements = elements(value, dtype, shape, size).map_err(fail)?;
    let width = dtype.size();
    let mut bytes = vec![0u8; elements.len() * width];
    for (i, (v, out)) in elements
        .iter()
        .zip(bytes.chunks_exact_mut(width))
        .enumerate()
    {
        write_value(v, dtype, out).map_err(|why| {
            fail(format!(
                "element {} = {} {why}",
                position(i, shape),
                brief(v)
            ))
        })?;
    }
    Ok(bytes)
}

/// `[i][j]...` of the `flat`-th element in row-major order.
fn position(mut flat: usize, shape: &[usize]) -> String {
    let mut index = vec![0usize; shape.len()];
    for (axis, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            index[axis] = flat % d;
            flat /= d;
        }
    }
    if index.is_empty() {
        return "[]".to_string();
    }
    index.iter().map(|i| format!("[{i}]")).collect()
}

/// True when `v` is one element of `dtype` rather than a list of them (a
/// complex element may itself be a two-item list).
fn is_element(v: &Value, dtype: DType) -> bool {
    match v {
        Value::Array(items) => {
            dtype == DType::Complex64 && items.len() == 2 && items.iter().all(|x| !x.is_array())
        }
        _ => true,
    }
}

/// The elements of `value` in row-major order, after checking its form.
fn elements<'v>(
    value: &'v Value,
    dtype: DType,
    shape: &[usize],
    size: usize,
) -> Result<Vec<&'v Value>, String> {
    let Value::Array(items) = value else {
        return if size == 1 {
            Ok(vec![value])
        } else {
            Err(format!(
                "a single value was given for shape {shape:?} ({size} elements); give a flat list of {size} values or a nested list of shape {shape:?}"
            ))
        };
    };
    // Grown as elements are found, never reserved from `size`: the
    // declared shape is what is being checked.
    let mut out = Vec::new();
    let nested = nested(value, dtype, shape, size, &mut String::new(), &mut out);
    if nested.is_ok() {
        return Ok(out);
    }
    if shape.len() != 1 && items.len() == size && items.iter().all(|v| is_element(v, dtype)) {
        return Ok(items.iter().collect());
    }
    if size == 1 && is_element(value, dtype) {
        // A one-element complex array given as a bare `[re, im]`.
        return Ok(vec![value]);
    }
    nested.map(|()| Vec::new())
}

/// Walks a nested list that must match `shape` exactly; `size` is the
/// element count of the whole input, for messages. Recursion is one level
/// per axis: at most [`MAX_NDIM`] deep (checked by [`encode`]).
fn nested<'v>(
    value: &'v Value,
    dtype: DType,
    shape: &[usize],
    size: usize,
    at: &mut String,
    out: &mut Vec<&'v Value>,
) -> Result<(), String> {
    let Some((&extent, rest)) = shape.split_first() else {
        if is_element(value, dtype) {
            out.push(value);
            return Ok(());
        }
        return Err(format!(
            "data{at} is a list where a single {} value belongs",
            dtype.name()
        ));
    };
    let found = match value {
        Value::Array(items) if items.len() == extent => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                nested(item, dtype, rest, size, at, out)?;
                at.truncate(len);
            }
            return Ok(());
        }
        Value::Array(items) => format!("a list of {}", items.len()),
        other => kind(other).to_string(),
    };
    let whole = if at.is_empty() && shape.len() > 1 {
        format!(" (or a flat list of {size} values)")
    } else {
        String::new()
    };
    Err(format!(
        "data{at} should be a list of {extent}{whole} to match shape {}, found {found}",
        shape_text(at, shape)
    ))
}

/// The full declared shape is not known inside the walk; show the part
/// from this depth on, which is what the message is about.
fn shape_text(at: &str, shape: &[usize]) -> String {
    if at.is_empty() {
        format!("{shape:?}")
    } else {
        format!("{shape:?} at this depth")
    }
}

fn write_value(v: &Value, dtype: DType, out: &mut [u8]) -> Result<(), String> {
    match dtype {
        DType::Bool => match v {
            Value::Bool(b) => b.write_le(out),
            Value::Number(n) if n.as_u64() == Some(0) => false.write_le(out),
            Value::Number(n) if n.as_u64() == Some(1) => true.write_le(out),
            _ => return Err("is not a bool (true, false, 0 or 1)".into()),
        },
        DType::U8 => int::<u8>(v)?.write_le(out),
        DType::U16 => int::<u16>(v)?.write_le(out),
        DType::U32 => int::<u32>(v)?.write_le(out),
        DType::U64 => int::<u64>(v)?.write_le(out),
        DType::I8 => int::<i8>(v)?.write_le(out),
        DType::I16 => int::<i16>(v)?.write_le(out),
        DType::I32 => int::<i32>(v)?.write_le(out),
        DType::I64 => int::<i64>(v)?.write_le(out),
        DType::F16 => {
            narrow(float(v)?, f16::from_f64, |x| x.is_infinite(), "float16")?.write_le(out)
        }
        DType::BF16 => {
            narrow(float(v)?, bf16::from_f64, |x| x.is_infinite(), "bfloat16")?.write_le(out)
        }
        DType::F32 => {
            narrow(float(v)?, |x| x as f32, |x| x.is_infinite(), "float32")?.write_le(out)
        }
        DType::F64 => float(v)?.write_le(out),
        DType::Complex64 => {
            let (re, im) = match v {
                Value::Array(parts) => match parts.as_slice() {
                    [re, im] => (float(re)?, float(im)?),
                    _ => return Err("is not a complex value (a number or [re, im])".into()),
                },
                other => (float(other)?, 0.0),
            };
            let part = |x| narrow(x, |x| x as f32, |x| x.is_infinite(), "complex64");
            Complex32::new(part(re)?, part(im)?).write_le(out)
        }
    }
    Ok(())
}

/// A float written as a JSON number or as `"nan"`, `"inf"`, `"-inf"`
/// (JSON has no literal for those): data and `init_value` read them alike.
pub(crate) fn float_value(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "nan" | "NaN" => Some(f64::NAN),
            "inf" | "+inf" | "infinity" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-infinity" | "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn float(v: &Value) -> Result<f64, String> {
    float_value(v).ok_or_else(|| "is not a number (or \"nan\", \"inf\", \"-inf\")".to_string())
}

/// Converts to a narrower float, refusing finite values that overflow.
fn narrow<T>(
    x: f64,
    convert: impl Fn(f64) -> T,
    is_inf: impl Fn(T) -> bool,
    name: &str,
) -> Result<T, String>
where
    T: Copy,
{
    let y = convert(x);
    if x.is_finite() && is_inf(y) {
        return Err(format!("overflows {name}"));
    }
    Ok(y)
}

/// An integer of type `T`: a JSON integer in range, or an integral float
/// (as `1e3` or `2.0`) in range.
fn int<T>(v: &Value) -> Result<T, String>
where
    T: TryFrom<i64> + TryFrom<u64> + Bounded,
{
    let Value::Number(n) = v else {
        return Err("is not an integer".into());
    };
    let out_of_range = || {
        format!(
            "is out of range for {} ({} to {})",
            T::NAME,
            T::MIN_TEXT,
            T::MAX_TEXT
        )
    };
    if let Some(i) = n.as_i64() {
        return T::try_from(i).map_err(|_| out_of_range());
    }
    if let Some(u) = n.as_u64() {
        return T::try_from(u).map_err(|_| out_of_range());
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(format!("is not an integer, as {} requires", T::NAME));
    }
    // Integral floats beyond the i64/u64 range are out of every range.
    let two_63 = 2f64.powi(63);
    if (-two_63..two_63).contains(&f) {
        T::try_from(f as i64).map_err(|_| out_of_range())
    } else if (0.0..2.0 * two_63).contains(&f) {
        T::try_from(f as u64).map_err(|_| out_of_range())
    } else {
        Err(out_of_range())
    }
}

/// Names and bounds of the integer element types, for messages.
trait Bounded {
    const NAME: &'static str;
    const MIN_TEXT: &'static str;
    const MAX_TEXT: &'static str;
}

macro_rules! bounded {
    ($($t:ty => $name:literal, $min:literal, $max:literal;)*) => {$(
        impl Bounded for $t {
            const NAME: &'static str = $name;
            const MIN_TEXT: &'static str = $min;
            const MAX_TEXT: &'static str = $max;
        }
    )*};
}

bounded! {
    u8 => "uint8", "0", "255";
    u16 => "uint16", "0", "65535";
    u32 => "uint32", "0", "4294967295";
    u64 => "uint64", "0", "18446744073709551615";
    i8 => "int8", "-128", "127";
    i16 => "int16", "-32768", "32767";
    i32 => "int32", "-2147483648", "2147483647";
    i64 => "int64", "-9223372036854775808", "9223372036854775807";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T: Element>(bytes: &[u8]) -> Vec<T> {
        bytes
            .chunks_exact(T::DTYPE.size())
            .map(T::read_le)
            .collect()
    }

    #[test]
    fn nested_flat_and_bare_forms_agree() {
        let nested = encode("a", &json!([[1, 2, 3], [4, 5, 6]]), DType::I32, &[2, 3]).unwrap();
        let flat = encode("a", &json!([1, 2, 3, 4, 5, 6]), DType::I32, &[2, 3]).unwrap();
        assert_eq!(nested, flat);
        assert_eq!(read::<i32>(&nested), [1, 2, 3, 4, 5, 6]);
        let scalar = encode("d", &json!(7.25), DType::F32, &[]).unwrap();
        assert_eq!(read::<f32>(&scalar), [7.25]);
        let listed = encode("d", &json!([7.25]), DType::F32, &[]).unwrap();
        assert_eq!(scalar, listed);
        assert_eq!(encode("d", &json!(5), DType::U8, &[1, 1]).unwrap(), [5]);
    }

    #[test]
    fn every_dtype_encodes() {
        assert_eq!(
            encode("x", &json!([true, 0, 1]), DType::Bool, &[3]).unwrap(),
            [1, 0, 1]
        );
        assert_eq!(
            read::<u64>(&encode("x", &json!([u64::MAX]), DType::U64, &[1]).unwrap()),
            [u64::MAX]
        );
        assert_eq!(
            read::<i64>(&encode("x", &json!([i64::MIN]), DType::I64, &[1]).unwrap()),
            [i64::MIN]
        );
        assert_eq!(
            read::<i16>(&encode("x", &json!([2e3, -1.0]), DType::I16, &[2]).unwrap()),
            [2000, -1]
        );
        assert_eq!(
            read::<f16>(&encode("x", &json!([0.5]), DType::F16, &[1]).unwrap()),
            [f16::from_f32(0.5)]
        );
        assert_eq!(
            read::<bf16>(&encode("x", &json!([-2]), DType::BF16, &[1]).unwrap()),
            [bf16::from_f32(-2.0)]
        );
        assert_eq!(
            read::<f64>(&encode("x", &json!([0.1]), DType::F64, &[1]).unwrap()),
            [0.1]
        );
        let c = encode("x", &json!([[1.5, -2], 3]), DType::Complex64, &[2]).unwrap();
        assert_eq!(
            read::<Complex32>(&c),
            [Complex32::new(1.5, -2.0), Complex32::new(3.0, 0.0)]
        );
        // A 2x2 complex array: nested pairs one level deeper.
        let c = encode(
            "x",
            &json!([[[1, 2], [3, 4]], [5, [6, 7]]]),
            DType::Complex64,
            &[2, 2],
        )
        .unwrap();
        assert_eq!(read::<Complex32>(&c)[3], Complex32::new(6.0, 7.0));
        // Two reals, not one pair; and a bare pair for a one-element array.
        let c = encode("x", &json!([1, 2]), DType::Complex64, &[2]).unwrap();
        assert_eq!(read::<Complex32>(&c)[1], Complex32::new(2.0, 0.0));
        let c = encode("x", &json!([3, 4]), DType::Complex64, &[1]).unwrap();
        assert_eq!(read::<Complex32>(&c), [Complex32::new(3.0, 4.0)]);
        let specials =
            read::<f32>(&encode("x", &json!(["nan", "inf", "-inf"]), DType::F32, &[3]).unwrap());
        assert!(
            specials[0].is_nan()
                && specials[1] == f32::INFINITY
                && specials[2] == f32::NEG_INFINITY
        );
    }

    #[test]
    fn numbers_read_as_the_nearest_double() {
        // The shortest text of this double (as Rust, Python and the output
        // writer print it); serde_json's default parser reads it one ulp
        // low, as 2.666666666666666e84.
        let value: Value = serde_json::from_str("[2.6666666666666665e84]").unwrap();
        let got = read::<f64>(&encode("x", &value, DType::F64, &[1]).unwrap());
        assert_eq!(got[0].to_bits(), 2.6666666666666665e84f64.to_bits());
    }

    fn error(value: Value, dtype: DType, shape: &[usize]) -> String {
        let e = encode("inp", &value, dtype, shape).unwrap_err().to_string();
        assert!(e.starts_with("input `inp`: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn values_that_do_not_fit_are_refused() {
        assert!(
            error(json!([1.5]), DType::I32, &[1]).contains("element [0] = 1.5 is not an integer")
        );
        assert!(error(json!([1, 300]), DType::U8, &[2])
            .contains("element [1] = 300 is out of range for uint8"));
        assert!(error(json!([-1]), DType::U32, &[1]).contains("out of range for uint32"));
        assert!(error(json!([1e30]), DType::I64, &[1]).contains("out of range for int64"));
        assert!(error(json!([1e6]), DType::F16, &[1]).contains("overflows float16"));
        assert!(error(json!([1e39]), DType::F32, &[1]).contains("overflows float32"));
        assert!(error(json!([2]), DType::Bool, &[1]).contains("is not a bool"));
        assert!(error(json!(["x"]), DType::F32, &[1]).contains("is not a number"));
        assert!(
            error(json!([[1, 2], [3, 4.5]]), DType::I8, &[2, 2]).contains("element [1][1] = 4.5")
        );
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        assert!(error(json!([1, 2, 3]), DType::F32, &[2, 2]).contains("should be a list of 2"));
        assert!(error(json!([[1, 2], [3]]), DType::F32, &[2, 2])
            .contains("data[1] should be a list of 2"));
        assert!(
            error(json!(3), DType::F32, &[2]).contains("a single value was given for shape [2]")
        );
        assert!(error(json!([[1], [2]]), DType::F32, &[2]).contains("data[0] is a list"));
        assert!(error(json!({"a": 1}), DType::F32, &[]).contains("is not a number"));
    }
}
