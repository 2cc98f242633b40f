//! A spec's inputs as arrays: from its `data` and `views` (to run the
//! call), or as placeholders that generate the same variant (to see or
//! compile its source without data).

use super::{data, npy, DataError, DataSource, NpyError, Port, SpecFile, View};
use crate::array::Array;
use crate::device::Device;

/// An input whose data or views cannot make its array. Each message is one
/// line and names the input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No data, inline data that do not fit the input, or a view the data
    /// do not allow.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A `.npy` file that cannot be read as the input.
    #[error(transparent)]
    Npy(#[from] NpyError),
    /// The device refused the array (it cannot hold its bytes).
    #[error(transparent)]
    Array(#[from] crate::Error),
}

impl SpecFile {
    /// The call's inputs on `device`, in order: each input's data (inline
    /// or from its `.npy` file, checked against its declared dtype and
    /// shape), with its views applied in order. The data are uploaded on
    /// the device's default stream: run the call there (or after it), so
    /// that it is ordered after the uploads on every backend.
    pub fn input_arrays(&self, device: &Device) -> Result<Vec<Array>, InputError> {
        self.inputs
            .iter()
            .map(|port| self.input_array(port, device))
            .collect()
    }

    /// Arrays that generate the same variant as the call's inputs, without
    /// their data or memory: a variant depends only on an input's dtype,
    /// number of axes and element count (which pick its pass mode), so one
    /// zero element broadcast to the declared shape stands in for it. For
    /// seeing or compiling a spec's source (`kernelkit source`) when its
    /// data are absent or large.
    pub fn placeholder_inputs(&self, device: &Device) -> crate::Result<Vec<Array>> {
        self.inputs
            .iter()
            .map(|port| {
                Array::zeros(device, vec![1; port.shape.len()], port.dtype)?
                    .broadcast_to(&port.shape)
            })
            .collect()
    }

    fn input_array(&self, port: &Port, device: &Device) -> Result<Array, InputError> {
        let bytes = match self.data_for(&port.name) {
            None => {
                return Err(DataError {
                    input: port.name.clone(),
                    reason: "no data given (add it to `data`: a value, a list, or a .npy path)"
                        .into(),
                }
                .into())
            }
            Some(DataSource::Inline(value)) => {
                data::encode(&port.name, value, port.dtype, &port.shape)?
            }
            Some(DataSource::Npy(path)) => npy::read(path, &port.name, port.dtype, &port.shape)?,
        };
        let mut array = Array::from_bytes(device, &bytes, port.shape.iter().copied(), port.dtype)?;
        for view in self.views_for(&port.name) {
            array = apply(&array, view).map_err(|e| DataError {
                input: port.name.clone(),
                reason: format!("view {}: {e}", describe(view)),
            })?;
        }
        Ok(array)
    }
}

/// One view through the library's own view operations.
fn apply(array: &Array, view: &View) -> crate::Result<Array> {
    match view {
        View::Transpose(axes) => array.permute(axes),
        View::Slice(ranges) => array.slice(ranges),
        View::Broadcast(shape) => array.broadcast_to(shape),
    }
}

fn describe(view: &View) -> String {
    match view {
        View::Transpose(axes) => format!("transpose {axes:?}"),
        View::Slice(ranges) => format!("slice {ranges:?}"),
        View::Broadcast(shape) => format!("broadcast {shape:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(extra: &str) -> SpecFile {
        SpecFile::from_json(
            &format!(
                r#"{{"name": "k", "inputs": [["a", "int32", [2, 3]], ["s", "float32", []]],
                   "outputs": [["o", "int32", [3, 2]]], "source": "" {extra}}}"#
            ),
            Path::new("/nonexistent"),
        )
        .unwrap()
    }

    #[test]
    fn inputs_take_their_data_then_their_views() {
        let s = spec(
            r#", "data": {"a": [[1, 2, 3], [4, 5, 6]], "s": 0.5},
                 "views": {"a": {"transpose": [1, 0]}}"#,
        );
        let arrays = s.input_arrays(&Device::cpu()).unwrap();
        assert_eq!(arrays[0].shape(), [3, 2]);
        assert_eq!(arrays[0].to_vec::<i32>().unwrap(), [1, 4, 2, 5, 3, 6]);
        assert_eq!(arrays[1].to_vec::<f32>().unwrap(), [0.5]);
    }

    #[test]
    fn input_errors_name_the_input() {
        let e = spec(r#", "data": {"a": [1, 2, 3, 4, 5, 6]}"#)
            .input_arrays(&Device::cpu())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "input `s`: no data given (add it to `data`: a value, a list, or a .npy path)"
        );
        let e = spec(
            r#", "data": {"a": [1, 2, 3, 4, 5, 6], "s": 1}, "views": {"a": {"broadcast": [4]}}"#,
        );
        let e = e.input_arrays(&Device::cpu()).unwrap_err().to_string();
        assert!(e.starts_with("input `a`: view broadcast [4]: "), "{e}");
        let e = spec(r#", "data": {"a": "a.npy", "s": 1}"#)
            .input_arrays(&Device::cpu())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("input `a`: cannot read /nonexistent/a.npy"),
            "{e}"
        );
    }

    #[test]
    fn placeholders_generate_the_variant_of_real_inputs() {
        let s = spec(r#", "data": {"a": [1, 2, 3, 4, 5, 6], "s": 1}"#);
        let kernel = s.kernel().unwrap();
        let device = Device::cpu();
        let real = s.input_arrays(&device).unwrap();
        let stand_ins = s.placeholder_inputs(&device).unwrap();
        assert_eq!(stand_ins[0].shape(), [2, 3]);
        for dialect in [crate::Dialect::Cpu, crate::Dialect::Metal] {
            let a = s.call(&kernel, &real).generate(dialect).unwrap();
            let b = s.call(&kernel, &stand_ins).generate(dialect).unwrap();
            assert_eq!((a.name, a.source), (b.name, b.source));
        }
    }
}
