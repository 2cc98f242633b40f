//! Output arrays as JSON text.
//!
//! Written by hand rather than through `serde_json::Value`, because a
//! `Value` holds floats as f64: a float32 result would print as its f64
//! expansion (`7.300000190734863`) instead of the shortest text that reads
//! back to the same float32 (`7.3`). Each element prints as:
//! - floats: the shortest decimal that round-trips in their own type;
//!   float16 and bfloat16 as their exact float32 values, printed the float32
//!   way; NaN and infinities as the strings `"nan"`, `"inf"`, `"-inf"`
//!   (JSON has no literal for them; `kernelkit run` reads them back);
//! - complex64: `[re, im]`;
//! - integers exactly, bools as `true`/`false`.

use std::fmt::Write;

use kernelkit::{bf16, f16, Complex32, DType, Element};

/// Appends `bytes` (row-major little-endian elements of `dtype`) as a nested
/// JSON list of `shape` (a bare value for 0-d).
pub fn write_nested(out: &mut String, bytes: &[u8], dtype: DType, shape: &[usize]) {
    let width = dtype.size();
    let mut elements = bytes.chunks_exact(width);
    nest(out, &mut elements, dtype, shape);
}

fn nest<'b>(
    out: &mut String,
    elements: &mut impl Iterator<Item = &'b [u8]>,
    dtype: DType,
    shape: &[usize],
) {
    match shape.split_first() {
        None => {
            if let Some(e) = elements.next() {
                write_element(out, e, dtype);
            }
        }
        Some((&extent, rest)) => {
            out.push('[');
            for i in 0..extent {
                if i > 0 {
                    out.push_str(", ");
                }
                nest(out, elements, dtype, rest);
            }
            out.push(']');
        }
    }
}

/// Appends one element.
pub fn write_element(out: &mut String, e: &[u8], dtype: DType) {
    match dtype {
        DType::Bool => out.push_str(if bool::read_le(e) { "true" } else { "false" }),
        DType::U8 => push(out, u8::read_le(e)),
        DType::U16 => push(out, u16::read_le(e)),
        DType::U32 => push(out, u32::read_le(e)),
        DType::U64 => push(out, u64::read_le(e)),
        DType::I8 => push(out, i8::read_le(e)),
        DType::I16 => push(out, i16::read_le(e)),
        DType::I32 => push(out, i32::read_le(e)),
        DType::I64 => push(out, i64::read_le(e)),
        DType::F16 => float32(out, f16::read_le(e).to_f32()),
        DType::BF16 => float32(out, bf16::read_le(e).to_f32()),
        DType::F32 => float32(out, f32::read_le(e)),
        DType::F64 => float64(out, f64::read_le(e)),
        DType::Complex64 => {
            let c = Complex32::read_le(e);
            out.push('[');
            float32(out, c.re);
            out.push_str(", ");
            float32(out, c.im);
            out.push(']');
        }
    }
}

fn push(out: &mut String, v: impl std::fmt::Display) {
    let _ = write!(out, "{v}");
}

/// NaN and infinities as strings; otherwise Rust's `Debug` form, which is
/// the shortest round-trip text and valid JSON (`1.0`, `7.3`, `1e-7`).
fn special(out: &mut String, nan: bool, inf: bool, negative: bool) -> bool {
    if nan {
        out.push_str("\"nan\"");
    } else if inf {
        out.push_str(if negative { "\"-inf\"" } else { "\"inf\"" });
    } else {
        return false;
    }
    true
}

fn float32(out: &mut String, v: f32) {
    if !special(out, v.is_nan(), v.is_infinite(), v < 0.0) {
        let _ = write!(out, "{v:?}");
    }
}

fn float64(out: &mut String, v: f64) {
    if !special(out, v.is_nan(), v.is_infinite(), v < 0.0) {
        let _ = write!(out, "{v:?}");
    }
}

/// A JSON string literal.
pub fn string(out: &mut String, s: &str) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<T: Element>(values: &[T], shape: &[usize]) -> String {
        let mut bytes = vec![0u8; values.len() * T::DTYPE.size()];
        for (v, c) in values.iter().zip(bytes.chunks_exact_mut(T::DTYPE.size())) {
            v.write_le(c);
        }
        let mut out = String::new();
        write_nested(&mut out, &bytes, T::DTYPE, shape);
        out
    }

    #[test]
    fn floats_print_shortest_and_round_trip() {
        assert_eq!(
            text(&[7.3f32, 1.0, -0.0, 1e-7, 3e38], &[5]),
            "[7.3, 1.0, -0.0, 1e-7, 3e38]"
        );
        assert_eq!(text(&[0.1f64], &[]), "0.1");
        assert_eq!(
            text(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY], &[3]),
            r#"["nan", "inf", "-inf"]"#
        );
        // float16 0.1 is 0.0999755859375: printed as the shortest float32 text.
        assert_eq!(text(&[f16::from_f32(0.1)], &[1]), "[0.099975586]");
        assert_eq!(text(&[bf16::from_f32(3.0)], &[1]), "[3.0]");
        for v in [0.1f32, 1.0 / 3.0, 16777217.0, f32::MIN_POSITIVE, f32::MAX] {
            let t = text(&[v], &[]);
            assert_eq!(t.parse::<f32>().unwrap(), v, "{t}");
            serde_json::from_str::<serde_json::Value>(&t).unwrap();
        }
    }

    #[test]
    fn nesting_follows_the_shape() {
        assert_eq!(
            text(&[1i32, 2, 3, 4, 5, 6], &[2, 3]),
            "[[1, 2, 3], [4, 5, 6]]"
        );
        assert_eq!(text(&[u64::MAX], &[1, 1]), "[[18446744073709551615]]");
        assert_eq!(text(&[true, false], &[2]), "[true, false]");
        assert_eq!(text(&[Complex32::new(1.5, -2.0)], &[]), "[1.5, -2.0]");
        assert_eq!(text::<i8>(&[], &[0, 2]), "[]");
    }
}
