//! The behavioural suite (`suite/`) instantiated for every backend, as
//! CubeCL instantiates its suite: one module of tests per backend, each
//! test a call of the suite's function of the same name with a fresh
//! device of that backend.
//!
//! - `cpu::`: the CPU backend (always here).
//! - `cuda::`: CUDA GPU 0; where none can be opened (no `cuda` feature, no
//!   driver, no GPU) each test passes after printing why it was skipped.
//!   The GPU machine runs them (`scripts/gpu-remote.sh`, filter `cuda::`).
//!   Those in `cuda::standin::` read no kernel result: `scripts/test.sh`
//!   runs them again against the stand-in driver (`tools/fakecuda`), which
//!   runs no kernel and whose NVRTC rejects nothing.
//! - `null::`, `null_cuda_dialect::`: the null device, which runs nothing
//!   (with the CPU's dialect and with CUDA's, so that what the CUDA
//!   dialect accepts and refuses is checked without a GPU). It runs the
//!   tests that do not need a kernel's results.

mod suite;

use std::time::Duration;

use kernelkit::{CacheMode, Device, DeviceBuilder, Dialect, NullOptions};

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

/// How long a null device's compile takes here: long enough that threads
/// asking for one new kernel meet at its compile (single flight is then
/// exercised, as with a real compiler), short enough for the suite's
/// ~250 compiles per device.
const NULL_COMPILE_TIME: Duration = Duration::from_millis(10);

/// A fresh null device per test.
fn null() -> Option<Device> {
    Some(memory_only().null(NullOptions::default().compile_time(NULL_COMPILE_TIME)))
}

/// A fresh null device that generates CUDA sources.
fn null_cuda_dialect() -> Option<Device> {
    Some(
        memory_only().null(
            NullOptions::default()
                .dialect(Dialect::Cuda)
                .compile_time(NULL_COMPILE_TIME),
        ),
    )
}

/// The tests of `$backend`, in a module of that name; those after
/// `standin:` in its submodule `standin` (see `all_backends`).
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
    ($backend:ident: $($test:ident),* $(,)?; standin: $($standin:ident),* $(,)?) => {
        mod $backend {
            $(
                #[test]
                fn $test() {
                    if let Some(device) = super::$backend() {
                        super::suite::$test(device);
                    }
                }
            )*
            /// Also run against the stand-in driver (`scripts/test.sh`
            /// selects the tests of every module named `standin`).
            mod standin {
                $(
                    #[test]
                    fn $standin() {
                        if let Some(device) = super::super::$backend() {
                            super::super::suite::$standin(device);
                        }
                    }
                )*
            }
        }
    };
}

/// `every` runs on every backend; `results` only where kernels run (their
/// checks are of what kernels compute); `standin` on every backend too,
/// and for CUDA in `cuda::standin::`: they read no kernel result, so the
/// stand-in driver (which runs no kernel) can run them as well.
macro_rules! all_backends {
    (
        every: [$($every:ident),* $(,)?],
        standin: [$($standin:ident),* $(,)?],
        results: [$($results:ident),* $(,)?]
    ) => {
        backend_suite!(cpu: $($every,)* $($standin,)* $($results,)*);
        backend_suite!(cuda: $($every,)* $($results,)*; standin: $($standin,)*);
        backend_suite!(null: $($every,)* $($standin,)*);
        backend_suite!(null_cuda_dialect: $($every,)* $($standin,)*);
    };
}

all_backends!(
    every: [
        int_one_and_bool_true_are_different_variants,
        clones_share_one_memo_across_threads,
        bounded_memo_evicts_without_breaking_launches,
        a_hot_variant_survives_a_long_tail,
        memo_bytes_stay_within_the_budget,
        concurrent_distinct_kernels,
        single_flight_compiles_once,
        compile_errors_are_reported_and_not_cached,
        math_modes_reach_the_compiler,
        a_rebindable_launch_runs_with_new_addresses,
        a_rebindable_launch_checks_its_addresses,
        calls_that_need_more_than_a_launch_are_not_rebindable,
        a_donated_call_writes_its_input_in_place,
        // Was tests/soak.rs.
        soak_random_kernels_on_many_threads,
        precompiled_variants_are_compiled_once_and_calls_find_them,
        precompile_reports_each_variants_error,
        a_dropped_precompile_still_fills_the_cache,
    ],
    standin: [
        memoized_variant_equals_fresh_generation,
        // Was tests/hot_path.rs.
        a_memo_hit_allocates_nothing,
        // Were tests/bad_input.rs (the last, for the CPU alone there).
        every_bad_input_is_a_typed_error_naming_its_argument,
        the_unchanged_call_is_accepted,
        arrays_of_another_device_object_are_accepted,
        arrays_of_another_device_kind_are_refused,
    ],
    results: [
        strided_views_with_and_without_row_contiguous,
        init_value_with_atomic_outputs,
        scalar_and_small_inputs,
        every_dtype,
        uneven_3d_grid_runs_each_thread_once,
    ]
);

/// The public handles can be shared and sent between threads (a property
/// of the types, so not per backend; was in tests/hot_path.rs).
#[test]
fn handles_are_send_and_sync() {
    use kernelkit::{Array, Kernel, Launch, Stream};
    fn check<T: Send + Sync + Clone>() {}
    check::<Kernel>();
    check::<Device>();
    check::<Stream>();
    check::<Array>();
    fn check_launch<T: Send + Sync>() {}
    check_launch::<Launch>();
}
