//! The Metal compatibility layer (`compat_suite/`), function by function,
//! instantiated for every backend. A backend that is not present here is
//! skipped with a printed reason.

mod compat_suite;

use kernelkit::Device;

fn cpu() -> Option<Device> {
    std::env::set_var("KERNELKIT_CACHE", "memory");
    Some(Device::new_cpu())
}

fn cuda() -> Option<Device> {
    std::env::set_var("KERNELKIT_CACHE", "memory");
    match Device::new_cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device: {e}");
            None
        }
    }
}

macro_rules! backend_suite {
    ($backend:ident: $($module:ident::$test:ident),* $(,)?) => {
        mod $backend {
            $(
                #[test]
                fn $test() {
                    if let Some(device) = super::$backend() {
                        super::compat_suite::$module::$test(device);
                    }
                }
            )*
        }
    };
}

macro_rules! all_backends {
    ($($module:ident::$test:ident),* $(,)?) => {
        backend_suite!(cpu: $($module::$test),*);
        backend_suite!(cuda: $($module::$test),*);
    };
}

all_backends!(
    types::vectors_constructors_swizzles_and_operators,
    types::vector_layout_and_pointer_casts,
    types::as_type_numeric_limits_and_constants,
    types::half_and_bfloat_arithmetic,
    math::unary_math_functions_per_dtype,
    math::binary_and_ternary_functions_per_dtype,
    math::integer_functions_per_dtype,
    math::relational_functions,
    math::geometric_and_matrix_functions,
    atomics::device_atomics_through_pointer_casts,
    atomics::threadgroup_atomics_and_atomic_outputs,
    simd::simd_and_quad_functions_with_full_and_partial_lanes,
    simd::simd_functions_on_vectors_and_wide_values,
    simd::simdgroup_matrices,
    sync::barrier_tree_reduction_over_group_shapes,
    sync::barriers_in_partial_groups_and_after_early_returns,
    sync::simdgroup_reductions_through_threadgroup_memory,
    sync::threadgroup_words_in_comments_are_not_uses,
    mlx::mlx_utils,
);
