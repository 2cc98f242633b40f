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
