//! The floating-point math mode a kernel is compiled in: MLX's
//! `compile_options={"math_mode": ...}` of `metal_kernel`.
//!
//! The mode travels **in the generated source**: a source of a mode other
//! than [`MathMode::Safe`] starts with one line, `MathMode::marker`,
//! which the backends read back (`MathMode::of_source`) to choose their
//! compiler flags. So the source alone says how it is compiled, wherever
//! it is compiled (this process, a compile worker), and the module key,
//! which hashes the source, keeps the modes of one kernel apart in every
//! cache tier. A safe source is unchanged: kernels that never ask for a
//! mode keep their sources, names and cache entries.
//!
//! What each mode is, as Metal defines them and as the backends map them:
//!
//! | mode | meaning | CPU (GCC, Clang) | CUDA (NVRTC) |
//! | --- | --- | --- | --- |
//! | `safe` | IEEE 754, special values kept (`exp(-inf) == 0`) | default flags | default flags |
//! | `relaxed` | reassociation and approximations, but infinities and NaNs kept | `-ffast-math -fno-finite-math-only` | `--prec-div=false --prec-sqrt=false` |
//! | `fast` | everything `relaxed` allows, and finite values assumed | `-ffast-math` | `--use_fast_math` |
//!
//! A `fast` source also defines `__FAST_MATH__` on CUDA, which NVRTC does
//! not, as Metal's and the C++ compilers' fast modes do: a body may test
//! for it the same way everywhere.

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MathMode {
    /// IEEE 754 arithmetic (MLX's default).
    #[default]
    Safe = 0,
    /// Unsafe optimizations that keep infinities and NaNs.
    Relaxed = 1,
    /// Every unsafe optimization, finite values assumed.
    Fast = 2,
}

/// The first line of a relaxed source.
const RELAXED_MARKER: &str = "#define KK_MATH_MODE_RELAXED 1\n";
/// The first line of a fast source.
const FAST_MARKER: &str = "#define KK_MATH_MODE_FAST 1\n";

impl MathMode {
    /// `safe`, `relaxed` or `fast` (MLX's names).
    pub fn name(self) -> &'static str {
        match self {
            MathMode::Safe => "safe",
            MathMode::Relaxed => "relaxed",
            MathMode::Fast => "fast",
        }
    }

    /// Parses MLX's names.
    pub fn from_name(name: &str) -> Option<MathMode> {
        match name {
            "safe" => Some(MathMode::Safe),
            "relaxed" => Some(MathMode::Relaxed),
            "fast" => Some(MathMode::Fast),
            _ => None,
        }
    }

    /// The line a generated source of this mode starts with (none for
    /// safe sources).
    pub(crate) fn marker(self) -> &'static str {
        match self {
            MathMode::Safe => "",
            MathMode::Relaxed => RELAXED_MARKER,
            MathMode::Fast => FAST_MARKER,
        }
    }

    /// The mode a generated source was made for, from its first line.
    pub(crate) fn of_source(source: &str) -> MathMode {
        if source.starts_with(FAST_MARKER) {
            MathMode::Fast
        } else if source.starts_with(RELAXED_MARKER) {
            MathMode::Relaxed
        } else {
            MathMode::Safe
        }
    }

    /// The C++ compiler's flags for this mode (GCC's and Clang's spelling).
    pub(crate) fn cxx_flags(self) -> &'static [&'static str] {
        match self {
            MathMode::Safe => &[],
            MathMode::Relaxed => &["-ffast-math", "-fno-finite-math-only"],
            MathMode::Fast => &["-ffast-math"],
        }
    }

    /// NVRTC's options for this mode.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn nvrtc_options(self) -> &'static [&'static str] {
        match self {
            MathMode::Safe => &[],
            MathMode::Relaxed => &["--prec-div=false", "--prec-sqrt=false"],
            MathMode::Fast => &["--use_fast_math"],
        }
    }
}

impl std::fmt::Display for MathMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_names_its_mode_by_its_first_line_only() {
        for mode in [MathMode::Safe, MathMode::Relaxed, MathMode::Fast] {
            let source = format!("{}#include <x>\nbody\n", mode.marker());
            assert_eq!(MathMode::of_source(&source), mode);
            assert_eq!(MathMode::from_name(mode.name()), Some(mode));
        }
        // The line elsewhere (a user's header, say) is no marker.
        assert_eq!(
            MathMode::of_source(&format!("#include <x>\n{FAST_MARKER}")),
            MathMode::Safe
        );
        assert_eq!(MathMode::from_name("precise"), None);
    }

    #[test]
    fn only_fast_assumes_finite_values() {
        assert!(!MathMode::Relaxed.cxx_flags().is_empty());
        assert!(MathMode::Relaxed
            .cxx_flags()
            .contains(&"-fno-finite-math-only"));
        assert_eq!(MathMode::Fast.cxx_flags(), ["-ffast-math"]);
        assert!(MathMode::Safe.cxx_flags().is_empty() && MathMode::Safe.nvrtc_options().is_empty());
    }
}
