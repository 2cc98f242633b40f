//! CUDA C++ for NVRTC (being written).

use super::Generated;
use crate::kernel::spec::KernelSpec;
use crate::kernel::variant::VariantDesc;

pub(crate) fn generate(spec: &KernelSpec, desc: &VariantDesc<'_>, variant_id: u64) -> Generated {
    super::cpu::generate(spec, desc, variant_id)
}
