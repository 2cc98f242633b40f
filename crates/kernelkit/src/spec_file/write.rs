//! A [`SpecFile`](super::SpecFile) written back as a spec file: the
//! `Serialize` of its parts in the format's own shapes (a port is
//! `[name, dtype, shape]`, a template argument `[name, value]`, data and
//! views objects keyed by input), so that what is written reads back to
//! the same spec.

use serde::ser::{Error as _, SerializeMap, SerializeSeq, SerializeTuple};
use serde::{Serialize, Serializer};

use super::{DataSource, Port};
use crate::codegen::math::MathMode;
use crate::codegen::template::TemplateArg;
use crate::codegen::BodyLanguage;

impl Serialize for Port {
    /// `[name, dtype, shape]`, the dtype by its MLX name.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(3)?;
        t.serialize_element(&self.name)?;
        t.serialize_element(self.dtype.name())?;
        t.serialize_element(&self.shape)?;
        t.end()
    }
}

impl Serialize for DataSource {
    /// Inline data as they were given; a `.npy` file as its path, which
    /// must be UTF-8 (JSON text cannot hold other bytes).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DataSource::Inline(value) => value.serialize(s),
            DataSource::Npy(path) => match path.to_str() {
                Some(text) => s.serialize_str(text),
                None => Err(S::Error::custom(format!(
                    "the .npy path {} is not UTF-8",
                    path.display()
                ))),
            },
        }
    }
}

/// `template`: `[[name, value], ...]`, a value as a JSON integer, bool or
/// dtype name.
pub(super) fn template<S: Serializer>(
    args: &[(String, TemplateArg)],
    s: S,
) -> Result<S::Ok, S::Error> {
    /// One `[name, value]`.
    struct Entry<'a>(&'a str, &'a TemplateArg);
    impl Serialize for Entry<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut t = s.serialize_tuple(2)?;
            t.serialize_element(self.0)?;
            match self.1 {
                TemplateArg::Int(i) => t.serialize_element(i)?,
                TemplateArg::Bool(b) => t.serialize_element(b)?,
                TemplateArg::DType(d) => t.serialize_element(d.name())?,
            }
            t.end()
        }
    }
    let mut seq = s.serialize_seq(Some(args.len()))?;
    for (name, value) in args {
        seq.serialize_element(&Entry(name, value))?;
    }
    seq.end()
}

/// `init_value`: a number, `"nan"`, `"inf"` or `"-inf"` (JSON has no
/// literal for those), or null.
/// Whether the body is Metal (the default, so not written).
pub(super) fn is_metal(language: &BodyLanguage) -> bool {
    *language == BodyLanguage::Metal
}

pub(super) fn is_safe(mode: &MathMode) -> bool {
    *mode == MathMode::Safe
}

/// A math mode as MLX's `compile_options` object (`{"math_mode": "fast"}`).
pub(super) fn compile_options<S: Serializer>(mode: &MathMode, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(1))?;
    map.serialize_entry("math_mode", mode.name())?;
    map.end()
}

/// A body language as its name (`"cuda"`).
pub(super) fn language<S: Serializer>(language: &BodyLanguage, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(language.name())
}

pub(super) fn init_value<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        None => s.serialize_none(),
        Some(x) if x.is_nan() => s.serialize_str("nan"),
        Some(x) if x == f64::INFINITY => s.serialize_str("inf"),
        Some(x) if x == f64::NEG_INFINITY => s.serialize_str("-inf"),
        Some(x) => s.serialize_f64(x),
    }
}

/// `data` and `views`: an object keyed by input name.
pub(super) fn by_input<S: Serializer, T: Serialize>(
    entries: &[(String, T)],
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(entries.len()))?;
    for (name, value) in entries {
        map.serialize_entry(name, value)?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use proptest::prelude::*;

    use super::super::{DataSource, Port, SpecFile, View};
    use crate::codegen::math::MathMode;
    use crate::codegen::template::TemplateArg;
    use crate::codegen::BodyLanguage;
    use crate::dtype::DType;

    fn read(text: &str) -> SpecFile {
        SpecFile::from_json(text, Path::new("/specs")).unwrap()
    }

    #[test]
    fn a_written_spec_reads_back_the_same() {
        let spec = read(
            r#"{"name": "basic",
             "inputs": [["a", "float32", [2, 2]], ["b", "int32", [3]], ["d", "complex64", []]],
             "outputs": [["out1", "bfloat16", [2, 2]]],
             "source": "x\n\"y\"", "header": "// h", "ensure_row_contiguous": false,
             "atomic_outputs": true,
             "template": [["T", "float16"], ["f", -3], ["e", true]],
             "grid": [4], "threadgroup": [2, 1, 1], "init_value": 0.1,
             "data": {"d": [1.5, -2], "b": "sub/b.npy", "a": [[1, 2], [3, "nan"]]},
             "views": {"a": [{"transpose": [1, 0]}, {"slice": [[0, 2], [1, 2, 1]]}],
                       "b": {"broadcast": [2, 3]}}}"#,
        );
        let text = spec.to_json().unwrap();
        // Paths were joined to the spec's folder: they read back from here.
        assert_eq!(SpecFile::from_json(&text, Path::new("")).unwrap(), spec);
        assert!(
            text.contains(r#""inputs":[["a","float32",[2,2]],"#),
            "{text}"
        );
        assert!(text.contains(r#""template":[["T","float16"],["f",-3],["e",true]]"#));
        assert!(text.contains(r#""views":{"a":[{"transpose":[1,0]},{"slice":[[0,2,1],[1,2,1]]}]"#));
        assert!(text.contains(r#""b":"/specs/sub/b.npy""#), "{text}");
    }

    #[test]
    fn defaults_and_special_floats_are_written() {
        let mut spec = read(
            r#"{"name": "k", "inputs": [], "outputs": [["o", "float32", [1]]], "source": ""}"#,
        );
        let text = spec.to_json().unwrap();
        assert!(
            text.contains(r#""ensure_row_contiguous":true,"atomic_outputs":false"#),
            "{text}"
        );
        assert!(!text.contains("grid") && text.contains(r#""init_value":null"#));
        for (value, written) in [
            (f64::NAN, r#""nan""#),
            (f64::INFINITY, r#""inf""#),
            (f64::NEG_INFINITY, r#""-inf""#),
            (-0.0, "-0.0"),
            (1e300, "1e+300"),
        ] {
            spec.init_value = Some(value);
            let text = spec.to_json().unwrap();
            assert!(
                text.contains(&format!(r#""init_value":{written}"#)),
                "{text}"
            );
            let back = SpecFile::from_json(&text, Path::new("")).unwrap();
            let got = back.init_value.unwrap();
            assert!(got.to_bits() == value.to_bits() || (got.is_nan() && value.is_nan()));
        }
        spec.template = vec![("T".into(), TemplateArg::DType(DType::Complex64))];
        assert!(spec.to_json().unwrap().contains(r#"["T","complex64"]"#));
    }

    fn port() -> impl Strategy<Value = Port> {
        (
            "[a-z][a-z0-9_]{0,6}",
            0..DType::ALL.len(),
            proptest::collection::vec(0usize..5, 0..4),
        )
            .prop_map(|(name, d, shape)| Port {
                name,
                dtype: DType::ALL[d],
                shape,
            })
    }

    fn template_arg() -> impl Strategy<Value = TemplateArg> {
        prop_oneof![
            any::<i32>().prop_map(TemplateArg::Int),
            any::<bool>().prop_map(TemplateArg::Bool),
            (0..DType::ALL.len()).prop_map(|d| TemplateArg::DType(DType::ALL[d])),
        ]
    }

    proptest! {
        /// Any spec written reads back the same: names, ports, template
        /// values, launch fields, any `init_value` (NaN and infinities
        /// too) and any finite double in the data, bit for bit.
        #[test]
        fn any_written_spec_reads_back_the_same(
            inputs in proptest::collection::vec(port(), 1..4),
            outputs in proptest::collection::vec(port(), 0..3),
            text in "[ -~\n\t\u{e9}\u{1F600}]{0,40}",
            flags in any::<(bool, bool)>(),
            template in proptest::collection::vec(("[A-Z][a-z]{0,3}", template_arg()), 0..4),
            grid in proptest::option::of(any::<[u64; 3]>()),
            init_value in proptest::option::of(any::<f64>()),
            values in proptest::collection::vec(
                any::<f64>().prop_filter("finite", |x| x.is_finite()),
                0..6,
            ),
            npy in any::<bool>(),
        ) {
            let first = inputs[0].name.clone();
            let data = if npy {
                DataSource::Npy(PathBuf::from(format!("/d/{first}.npy")))
            } else {
                DataSource::Inline(serde_json::Value::from(values))
            };
            let views = vec![(first.clone(), vec![View::Slice(vec![[0, 1, 1]])])];
            let mode = [MathMode::Safe, MathMode::Relaxed, MathMode::Fast][text.len() % 3];
            let spec = SpecFile {
                name: "k".into(),
                inputs,
                outputs,
                source: text.clone(),
                header: text,
                ensure_row_contiguous: flags.0,
                atomic_outputs: flags.1,
                language: if flags.1 { BodyLanguage::Cuda } else { BodyLanguage::Metal },
                math_mode: mode,
                template,
                grid,
                threadgroup: grid.map(|[x, _, _]| [x, 1, 1]),
                init_value,
                data: vec![(first, data)],
                views,
            };
            let back = SpecFile::from_json(&spec.to_json().unwrap(), Path::new("")).unwrap();
            prop_assert_eq!(format!("{back:?}"), format!("{spec:?}"));
            if let (Some(a), Some(b)) = (back.init_value, spec.init_value) {
                prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_cannot_be_written() {
        use std::os::unix::ffi::OsStrExt;
        let mut spec = read(
            r#"{"name": "k", "inputs": [["a", "float32", [1]]], "outputs": [], "source": ""}"#,
        );
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/specs/\xff.npy"));
        spec.data = vec![("a".into(), DataSource::Npy(path))];
        let e = spec.to_json().unwrap_err().to_string();
        assert!(e.contains("is not UTF-8"), "{e}");
    }
}
