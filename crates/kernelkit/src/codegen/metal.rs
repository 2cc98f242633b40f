//! Metal Shading Language, byte-identical to MLX 0.32.4 (being written).

use super::Generated;
use crate::kernel::spec::KernelSpec;
use crate::kernel::variant::VariantDesc;

pub(crate) fn generate(spec: &KernelSpec, desc: &VariantDesc<'_>) -> Generated {
    super::cpu::generate(spec, desc, 0)
}
