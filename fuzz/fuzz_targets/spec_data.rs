//! The readers of `kernelkit run` on arbitrary input: the library's spec
//! file reader (`kernelkit::spec_file`), its inline data encoder (`data`)
//! and `.npy` reader and writer (`npy`), and the command's JSON output
//! writer (`kernelkit_cli::output`). They
//! read untrusted files, so any bytes must give a value or a one-line
//! error — never a panic, an unbounded recursion, or an allocation sized
//! from a declared shape before the data were checked (run it under an
//! address-space limit: see README.md).
//!
//! An input starting with the `.npy` magic is a `.npy` file: it is read
//! against its own header's dtype and shape (and against a fixed `[2, 3]`
//! float32 input), with and without its length known; whatever reads
//! must write back to the same bytes. Any other input is spec text: every
//! input with inline data is encoded, and what encodes must print as JSON
//! within the printer's bound and survive a `.npy` round trip.

#![no_main]

use std::path::Path;

use kernelkit::spec_file::npy::{self, Descr};
use kernelkit::spec_file::{data, DataSource, SpecFile, MAX_NDIM};
use kernelkit::DType;
use kernelkit_cli::output;
use libfuzzer_sys::fuzz_target;

fn one_line(e: &impl std::fmt::Display) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "not one line: {text}");
}

/// Writes `bytes` as a `.npy` file and reads it back: the same bytes.
fn round_trip(bytes: &[u8], dtype: DType, shape: &[usize]) {
    let mut file = Vec::new();
    npy::write_to(&mut file, bytes, dtype, shape).expect("bytes of the shape write");
    let back = npy::decode(
        &file[..],
        Some(file.len() as u64),
        "x",
        "x.npy",
        dtype,
        shape,
    )
    .expect("a written file reads");
    assert_eq!(back, bytes);
}

fn npy_file(bytes: &[u8]) {
    let len = Some(bytes.len() as u64);
    let declared = npy::read_header(&mut &bytes[..]).ok().and_then(|h| {
        let Descr::Plain(ts) = &h.descr else {
            return None;
        };
        let (dtype, _) = npy::element_type(ts)?;
        let shape: Option<Vec<usize>> = h.shape.iter().map(|&d| usize::try_from(d).ok()).collect();
        Some((dtype, shape?))
    });
    if let Some((dtype, shape)) = declared {
        assert!(shape.len() <= MAX_NDIM);
        match npy::decode(bytes, len, "x", "x.npy", dtype, &shape) {
            Ok(data) => {
                let n: usize = shape.iter().product();
                assert_eq!(data.len(), n * dtype.size());
                round_trip(&data, dtype, &shape);
                let streamed = npy::decode(bytes, None, "x", "x.npy", dtype, &shape)
                    .expect("what reads with its length reads as a stream");
                assert_eq!(streamed, data);
            }
            Err(e) => {
                one_line(&e);
                if let Err(e) = npy::decode(bytes, None, "x", "x.npy", dtype, &shape) {
                    one_line(&e);
                }
            }
        }
    }
    if let Err(e) = npy::decode(bytes, len, "x", "x.npy", DType::F32, &[2, 3]) {
        one_line(&e);
    }
}

fn spec_text(text: &str) {
    let spec = match SpecFile::from_json(text, Path::new("/nonexistent")) {
        Ok(spec) => spec,
        Err(e) => return one_line(&e),
    };
    for port in spec.inputs.iter().chain(&spec.outputs) {
        assert!(port.shape.len() <= MAX_NDIM);
    }
    for port in &spec.inputs {
        let Some(DataSource::Inline(value)) = spec.data_for(&port.name) else {
            continue;
        };
        match data::encode(&port.name, value, port.dtype, &port.shape) {
            Ok(bytes) => {
                let n: usize = port.shape.iter().product();
                assert_eq!(bytes.len(), n * port.dtype.size());
                // An empty array can declare 2^62 empty lists: `kernelkit
                // run` refuses to print what it cannot reserve, and here
                // what would take long.
                let bound = output::text_bound(port.dtype, &port.shape);
                if let Some(bound) = bound.filter(|&b| b <= 1 << 24) {
                    let mut json = String::new();
                    output::write_nested(&mut json, &bytes, port.dtype, &port.shape);
                    assert!(json.len() <= bound, "{} > {bound}: {json}", json.len());
                    serde_json::from_str::<serde_json::Value>(&json).expect("output is JSON");
                }
                round_trip(&bytes, port.dtype, &port.shape);
            }
            Err(e) => one_line(&e),
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    if bytes.starts_with(b"\x93NUMPY") {
        npy_file(bytes);
    } else if let Ok(text) = std::str::from_utf8(bytes) {
        spec_text(text);
    }
});
