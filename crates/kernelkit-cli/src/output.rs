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
//!
//! The nesting is written by a loop over an index per axis, not by
//! recursion, so no shape can exhaust the stack; and [`text_bound`] lets
//! a caller reserve the whole text (or refuse it) before writing.

use std::fmt::Write;

use kernelkit::{bf16, f16, Complex32, DType, Element};

/// Appends `bytes` (row-major little-endian elements of `dtype`) as a nested
/// JSON list of `shape` (a bare value for 0-d). Elements missing from
/// `bytes` are left out rather than invented.
pub fn write_nested(out: &mut String, bytes: &[u8], dtype: DType, shape: &[usize]) {
    let mut elements = bytes.chunks_exact(dtype.size());
    if shape.is_empty() {
        if let Some(e) = elements.next() {
            write_element(out, e, dtype);
        }
        return;
    }
    // `index[axis]`: how many items of the open list at `axis` are written.
    let mut index = vec![0usize; shape.len()];
    let mut axis = 0;
    out.push('[');
    loop {
        if index[axis] == shape[axis] {
            out.push(']');
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            continue;
        }
        if index[axis] > 0 {
            out.push_str(", ");
        }
        if axis + 1 == shape.len() {
            if let Some(e) = elements.next() {
                write_element(out, e, dtype);
            }
            index[axis] += 1;
        } else {
            axis += 1;
            index[axis] = 0;
            out.push('[');
        }
    }
}

/// An upper bound on the length of the text [`write_nested`] appends for
/// an array of `dtype` and `shape`, or `None` if it overflows `usize`.
pub fn text_bound(dtype: DType, shape: &[usize]) -> Option<usize> {
    // The longest element: 20 digits and a sign for 64-bit integers, the
    // shortest round-trip float32 text is at most 15 characters (`-1.1754944e-38`)
    // and float64 at most 24 (`-2.2250738585072014e-308`); a margin on each.
    let element = match dtype {
        DType::Bool => 5,
        DType::U8 | DType::I8 | DType::U16 | DType::I16 => 6,
        DType::U32 | DType::I32 => 11,
        DType::U64 | DType::I64 => 20,
        DType::F16 | DType::BF16 | DType::F32 => 24,
        DType::F64 => 32,
        DType::Complex64 => 2 * 24 + 4,
    };
    // Each element with its ", "; each list (at every depth: the product
    // of the extents before it) with its brackets and its own ", ".
    let mut lists = 1usize;
    let mut total = 0usize;
    for &d in shape {
        total = total.checked_add(lists.checked_mul(4)?)?;
        lists = lists.checked_mul(d)?;
    }
    total.checked_add(lists.checked_mul(element + 2)?)
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
        assert_eq!(text::<i8>(&[], &[2, 0]), "[[], []]");
        assert_eq!(text::<i8>(&[], &[2, 0, 3]), "[[], []]");
        assert_eq!(
            text(&[1u8, 2, 3, 4, 5, 6, 7, 8], &[2, 2, 2]),
            "[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]"
        );
    }

    #[test]
    fn many_axes_do_not_recurse() {
        // 200,000 nested lists once overflowed the stack (one call per axis).
        let shape = vec![1usize; 200_000];
        let t = text(&[7u8], &shape);
        assert_eq!(t.len(), 400_001);
        assert!(t.starts_with("[[[") && t.contains("[7]") && t.ends_with("]]]"));
    }

    #[test]
    fn the_bound_holds_for_the_longest_elements() {
        let within = |t: String, dtype: DType, shape: &[usize]| {
            let bound = text_bound(dtype, shape).unwrap();
            assert!(t.len() <= bound, "{t}: {} > {bound}", t.len());
        };
        let f32s = [-f32::MIN_POSITIVE, -9.999999e15, f32::NEG_INFINITY];
        within(text(&f32s, &[3]), DType::F32, &[3]);
        let f64s = [-2.2250738585072014e-308f64, -1234567890123456.8];
        within(text(&f64s, &[2]), DType::F64, &[2]);
        within(text(&[i64::MIN; 2], &[1, 2]), DType::I64, &[1, 2]);
        within(text(&[u64::MAX; 6], &[2, 1, 3]), DType::U64, &[2, 1, 3]);
        let c = [Complex32::new(-1.1754944e-38, -9.999999e15)];
        within(text(&c, &[1, 1, 1]), DType::Complex64, &[1, 1, 1]);
        within(text(&[false; 4], &[2, 2]), DType::Bool, &[2, 2]);
        within(text::<i8>(&[], &[3, 0, 5]), DType::I8, &[3, 0, 5]);
        assert_eq!(text_bound(DType::F64, &[usize::MAX, 2]), None);
    }
}
