//! The Metal position attributes a body may use, in MLX's order.
//!
//! A body uses an attribute when its name occurs in the body (a plain
//! substring search, as MLX does). Metal gets it as a parameter; the CPU and
//! CUDA wrappers compute it, so a simple Metal body runs unchanged there.

/// One position attribute.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Attribute {
    /// Its name, which is also the Metal attribute.
    pub name: &'static str,
    /// Its Metal type: `uint` or `uint3`.
    pub ty: &'static str,
}

macro_rules! attrs {
    ($($name:literal : $ty:literal),* $(,)?) => {
        /// Every attribute MLX knows, in the order MLX writes them.
        pub const ATTRIBUTES: &[Attribute] = &[$(Attribute { name: $name, ty: $ty }),*];
    };
}

attrs!(
    "dispatch_quadgroups_per_threadgroup": "uint",
    "dispatch_simdgroups_per_threadgroup": "uint",
    "dispatch_threads_per_threadgroup": "uint3",
    "grid_origin": "uint3",
    "grid_size": "uint3",
    "quadgroup_index_in_threadgroup": "uint",
    "quadgroups_per_threadgroup": "uint",
    "simdgroup_index_in_threadgroup": "uint",
    "simdgroups_per_threadgroup": "uint",
    "thread_execution_width": "uint",
    "thread_index_in_quadgroup": "uint",
    "thread_index_in_simdgroup": "uint",
    "thread_index_in_threadgroup": "uint",
    "thread_position_in_grid": "uint3",
    "thread_position_in_threadgroup": "uint3",
    "threadgroup_position_in_grid": "uint3",
    "threadgroups_per_grid": "uint3",
    "threads_per_grid": "uint3",
    "threads_per_simdgroup": "uint",
    "threads_per_threadgroup": "uint3",
);

/// The expression, in the CPU and CUDA wrappers, that computes an attribute
/// from the wrapper's local names: `kk_grid`, `kk_tg` (threads per group),
/// `kk_groups` (groups per grid), `kk_group` (group position), `kk_local`
/// (thread position in group), `kk_lid` (linear index in group), `kk_simd`
/// (SIMD/warp width).
pub(crate) fn portable_expr(name: &str) -> &'static str {
    match name {
        "dispatch_quadgroups_per_threadgroup" | "quadgroups_per_threadgroup" => {
            "(uint)((kk_tg.x * kk_tg.y * kk_tg.z + 3) / 4)"
        }
        "dispatch_simdgroups_per_threadgroup" | "simdgroups_per_threadgroup" => {
            "(uint)((kk_tg.x * kk_tg.y * kk_tg.z + kk_simd - 1) / kk_simd)"
        }
        "dispatch_threads_per_threadgroup" | "threads_per_threadgroup" => "kk_tg",
        "grid_origin" => "uint3{0u, 0u, 0u}",
        "grid_size" | "threads_per_grid" => "kk_grid",
        "quadgroup_index_in_threadgroup" => "(uint)(kk_lid / 4)",
        "simdgroup_index_in_threadgroup" => "(uint)(kk_lid / kk_simd)",
        "thread_execution_width" | "threads_per_simdgroup" => "(uint)kk_simd",
        "thread_index_in_quadgroup" => "(uint)(kk_lid % 4)",
        "thread_index_in_simdgroup" => "(uint)(kk_lid % kk_simd)",
        "thread_index_in_threadgroup" => "(uint)kk_lid",
        "thread_position_in_grid" => {
            "uint3{kk_group.x * kk_tg.x + kk_local.x, kk_group.y * kk_tg.y + kk_local.y, kk_group.z * kk_tg.z + kk_local.z}"
        }
        "thread_position_in_threadgroup" => "kk_local",
        "threadgroup_position_in_grid" => "kk_group",
        "threadgroups_per_grid" => "kk_groups",
        _ => "0u",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_has_an_expression() {
        for a in ATTRIBUTES {
            assert_ne!(portable_expr(a.name), "0u", "{}", a.name);
            assert!(a.ty == "uint" || a.ty == "uint3");
        }
    }
}
