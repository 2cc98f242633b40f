//! The spec file format in brief, after the options in `kernelkit run
//! --help` and `kernelkit source --help` (the format itself is
//! `kernelkit::spec_file`'s).

/// The spec format in brief, for `kernelkit run --help` and `kernelkit source --help`.
pub const HELP: &str = "\
Spec file (JSON), e.g. examples/specs/basic.json:
  name, source                 strings (required)
  inputs, outputs              [[name, dtype, shape], ...] (required); dtypes as in MLX:
                               bool uint8..uint64 int8..int64 float16 bfloat16 float32 float64 complex64
  header                       string (default \"\")
  ensure_row_contiguous        bool (default true)
  atomic_outputs               bool (default false)
  language                     \"metal\" (default; MLX's metal_kernel) or \"cuda\" (CUDA C++; CUDA devices only)
  compile_options              MLX's {\"math_mode\": \"safe\" (default) | \"relaxed\" | \"fast\"}
  template                     [[name, value], ...]: string = dtype, integer = int, true/false = bool
  grid, threadgroup            [x, y, z] in threads (grid required by `run`)
  init_value                   number, \"inf\", \"-inf\", \"nan\" or null: fills the outputs first
  data                         {input: number | flat list | nested list | \"file.npy\" (relative to the spec)}
  views                        {input: {\"transpose\": axes} | {\"slice\": [[start, stop, step], ...]}
                                       | {\"broadcast\": shape} | a list of these, applied in order}
Unknown fields are errors. Floats may be written \"nan\", \"inf\", \"-inf\" in data; complex values as [re, im].
Limits: at most 64 axes per shape; a spec file of at most 16 MiB (larger data go in .npy files).
bfloat16 .npy files use the ml_dtypes convention: raw 2-byte '<V2' (np.load(f).view(ml_dtypes.bfloat16)).";

#[cfg(test)]
mod tests {
    use kernelkit::spec_file::{MAX_NDIM, MAX_SPEC_BYTES};

    #[test]
    fn the_limits_are_the_readers() {
        let limits = format!(
            "Limits: at most {MAX_NDIM} axes per shape; a spec file of at most {} MiB",
            MAX_SPEC_BYTES >> 20
        );
        assert!(super::HELP.contains(&limits), "{limits}");
    }
}
