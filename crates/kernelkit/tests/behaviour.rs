//! The behavioural suite (`suite/mod.rs`) instantiated for every backend.
//! A backend that is not present here is skipped with a printed reason.

mod suite;

use kernelkit::{CacheMode, Device, DeviceBuilder};

/// These tests count compiles: artifacts left on disk by an earlier run
/// must not answer for them, so their devices have no disk tier.
fn memory_only() -> DeviceBuilder {
    Device::builder().cache_mode(CacheMode::Memory)
}

/// A fresh CPU device per test, so cache counters start at zero.
fn cpu() -> Option<Device> {
    Some(memory_only().cpu().expect("a CPU device opens"))
}

/// A fresh CUDA device per test, or `None` (with the reason printed).
fn cuda() -> Option<Device> {
    match memory_only().cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device: {e}");
            None
        }
    }
}

macro_rules! backend_suite {
    ($backend:ident: $($test:ident),* $(,)?) => {
        mod $backend {
            $(
                #[test]
                fn $test() {
                    if let Some(device) = super::$backend() {
                        super::suite::$test(device);
                    }
                }
            )*
        }
    };
}

macro_rules! all_backends {
    ($($test:ident),* $(,)?) => {
        backend_suite!(cpu: $($test),*);
        backend_suite!(cuda: $($test),*);
    };
}

all_backends!(
    int_one_and_bool_true_are_different_variants,
    memoized_variant_equals_fresh_generation,
    clones_share_one_memo_across_threads,
    bounded_memo_evicts_without_breaking_launches,
    concurrent_distinct_kernels,
    single_flight_compiles_once,
    compile_errors_are_reported_and_not_cached,
    strided_views_with_and_without_row_contiguous,
    init_value_with_atomic_outputs,
    scalar_and_small_inputs,
    every_dtype,
    uneven_3d_grid_runs_each_thread_once,
);
