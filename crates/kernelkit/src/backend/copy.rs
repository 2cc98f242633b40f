//! kernelkit's own strided → contiguous copy kernel, as GPU backends
//! launch it: its source, its module's name and its four entry points (one
//! per element size). The floors above resolve its module like any
//! variant's (memory, the artifact tiers, bundles, the JIT policy, see
//! `device::copy`) and hand the backend the function to launch
//! ([`Backend::gather`](super::Backend::gather)); a backend that copies on
//! the host (the CPU) names no such kernel
//! ([`Backend::copy_kernel`](super::Backend::copy_kernel)).
//!
//! Not behind the `cuda` feature: the null device of the CUDA dialect
//! stands in for a GPU with it (see `backend::null`), and its text and
//! names are what keys, manifests and bundles name.

/// A kernel of kernelkit's own, described as a variant's module is.
#[derive(Debug)]
pub(crate) struct BuiltinKernel {
    /// The kernel name its messages and artifact entries use (an
    /// identifier, as entries' kernel names are).
    pub(crate) kernel: &'static str,
    /// The module's name in its key (as a variant's generated name is).
    pub(crate) function: &'static str,
    /// The whole source.
    pub(crate) source: &'static str,
    /// What a manifest line names it by (`{"builtin": "strided_copy"}`).
    pub(crate) manifest_name: &'static str,
}

impl BuiltinKernel {
    /// The xxh3-128 hash of the source: the module key's content part.
    pub(crate) fn source_hash(&self) -> u128 {
        xxhash_rust::xxh3::xxh3_128(self.source.as_bytes())
    }
}

/// The strided copy: `kk_gather_N` copies an array of `N`-byte elements
/// of any strides (at most [`MAX_NDIM`](crate::codegen::cuda::MAX_NDIM)
/// non-unit axes) row-major into a new buffer.
pub(crate) static STRIDED_COPY: BuiltinKernel = BuiltinKernel {
    kernel: "kernelkit_strided_copy",
    function: "kk_gather",
    source: STRIDED_COPY_SOURCE,
    manifest_name: "strided_copy",
};

/// The entry points of [`STRIDED_COPY`], by [`entry_index`].
pub(crate) const ENTRIES: [&str; 4] = ["kk_gather_1", "kk_gather_2", "kk_gather_4", "kk_gather_8"];

/// The index in [`ENTRIES`] of the entry point that copies elements of
/// `size` bytes.
pub(crate) fn entry_index(size: usize) -> usize {
    match size {
        1 => 0,
        2 => 1,
        4 => 2,
        _ => 3,
    }
}

/// The source of [`STRIDED_COPY`] (CUDA C++; no `#include`: it reads no
/// file, so its artifact's dependency list is empty and it is stored).
const STRIDED_COPY_SOURCE: &str = r#"
struct kk_layout { long long shape[10]; long long strides[10]; int ndim; };
template <typename T>
__device__ void kk_gather(const T* src, T* dst, const kk_layout& l, unsigned long long n) {
  unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    long long rem = (long long)i, loc = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      loc += (rem % l.shape[d]) * l.strides[d];
      rem /= l.shape[d];
    }
    dst[i] = src[loc];
  }
}
extern "C" __global__ void kk_gather_1(const unsigned char* s, unsigned char* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_2(const unsigned short* s, unsigned short* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_4(const unsigned int* s, unsigned int* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
extern "C" __global__ void kk_gather_8(const unsigned long long* s, unsigned long long* d, kk_layout l, unsigned long long n) { kk_gather(s, d, l, n); }
"#;

#[cfg(test)]
mod tests {
    use super::{entry_index, ENTRIES, STRIDED_COPY};

    /// Every entry point is defined by the source, and each element size
    /// of a dtype picks the entry of its own size.
    #[test]
    fn each_element_size_has_its_entry_point() {
        for (i, name) in ENTRIES.iter().enumerate() {
            assert!(
                STRIDED_COPY.source.contains(&format!("void {name}(")),
                "{name}"
            );
            assert_eq!(entry_index(1 << i), i);
        }
        for dtype in crate::dtype::DType::ALL {
            let name = ENTRIES[entry_index(dtype.size())];
            assert_eq!(name, format!("kk_gather_{}", dtype.size()), "{dtype:?}");
        }
    }
}
