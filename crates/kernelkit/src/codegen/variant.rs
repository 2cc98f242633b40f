//! The variant description: what one call contributes to a generated
//! source beyond the kernel's spec (each input's dtype and pass mode, each
//! output's dtype, the template arguments). The generators read it; the
//! kernel's variant cache keys on the same parts.

use crate::codegen::template::TemplateParam;
use crate::dtype::DType;

/// How an input reaches the kernel. The same split as MLX's signature
/// writer: it changes the generated parameter (Metal address space, or a
/// value instead of a pointer), so it is part of the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PassMode {
    /// A 0-d array: passed as a value (`const constant T&`).
    Scalar = 0,
    /// Fewer than 8 elements: the `constant` address space.
    Constant = 1,
    /// Everything else: a `device` pointer.
    Device = 2,
}

impl PassMode {
    /// The mode MLX picks for an array of `ndim` dimensions and `size` elements.
    pub fn of(ndim: usize, size: usize) -> PassMode {
        if ndim == 0 {
            PassMode::Scalar
        } else if size < 8 {
            PassMode::Constant
        } else {
            PassMode::Device
        }
    }
}

/// An input as the generators see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputDesc {
    /// Element type.
    pub dtype: DType,
    /// Pass mode.
    pub mode: PassMode,
}

/// Everything a generator needs from a call beyond the kernel spec.
#[derive(Clone, Debug)]
pub struct VariantDesc<'a> {
    /// Per input, in order.
    pub inputs: &'a [InputDesc],
    /// Per output dtype, in order.
    pub outputs: &'a [DType],
    /// Template arguments, in order.
    pub template: &'a [TemplateParam<'a>],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_modes_follow_mlx() {
        assert_eq!(PassMode::of(0, 1), PassMode::Scalar);
        assert_eq!(PassMode::of(1, 7), PassMode::Constant);
        assert_eq!(PassMode::of(2, 8), PassMode::Device);
    }
}
