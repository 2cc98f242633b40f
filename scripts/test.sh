#!/usr/bin/env bash
# The test command of the README: every test of the workspace, with every
# feature (GPU tests skip with a printed reason where there is no GPU), the
# doc tests, the loom models of the lock-free parts, and the Python
# package's tests (pytest; needs maturin, pytest and NumPy in python3:
# `python3 -m pip install maturin pytest numpy`).
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests that count compiles must not see artifacts from earlier runs; the
# artifact store tests set their own KERNELKIT_CACHE and directory.
export KERNELKIT_CACHE=memory
cargo nextest run --workspace --all-features --no-fail-fast
cargo test --workspace --all-features --doc
# The examples for users (crates/kernelkit/examples): each checks its own
# results and fails if they are wrong; candle_fused on a small matrix.
for example in quick_start mlx_metal_port precompile_bundle; do
  cargo run --quiet -p kernelkit --all-features --example "$example"
done
cargo run --quiet -p kernelkit --all-features --example candle_fused -- 64 64
# The CUDA lifecycle tests (devices and contexts freed, a thread's context
# record, dynamic shared memory limits, default-stream errors) once more
# against the stand-in driver of tools/fakecuda, which keeps the driver's
# rules: above they skip without a GPU.
bash tools/fakecuda/build.sh >/dev/null
LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test cuda_lifecycle
# Calls under a CUDA graph capture: the stand-in fails (and invalidates
# the capture on) every call the driver forbids while capturing.
LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test cuda_capture
# ... and on a stand-in GPU without stream-ordered memory pools, where an
# output kernelkit would allocate under a capture is a typed refusal.
FAKECUDA_NO_MEMORY_POOLS=1 LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test cuda_capture \
  -E 'test(=outputs_under_capture_are_refused_without_a_memory_pool)'
# How modules are unloaded: after the work queued before (the stand-in holds
# work queued on request and aborts on an unload under queued work), and
# without invalidating another thread's global-mode capture.
LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test cuda_unload
# The behavioural suite's CUDA instances that read no kernel results (the
# stand-in runs no kernel, and its NVRTC rejects nothing): the bad-input
# matrix with CUDA's expectations, the memo, devices of other kinds.
LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test behaviour -E 'test(/^cuda::/) & (
    test(/::every_bad_input_is_a_typed_error_naming_its_argument$/)
    | test(/::the_unchanged_call_is_accepted$/)
    | test(/::arrays_of_another_device_(object_are_accepted|kind_are_refused)$/)
    | test(/::a_memo_hit_allocates_nothing$/)
    | test(/::memoized_variant_equals_fresh_generation$/))'
# Several GPUs and the bounded module cache (tests/multi_gpu.rs) on two
# stand-in GPUs: one compile per kernel for both, unloads racing queued
# launches (the stand-in refuses a launch of an unloaded module's
# function), churn with max 64 (2,000 values here, 10,000 on the H200).
FAKECUDA_DEVICES=2 KK_CHURN=2000 LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test multi_gpu
# (With the cuda feature: two models are of the CUDA backend's protocols.)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p kernelkit --features cuda --release --lib loom_ -- --test-threads=2

# The Python package: built in the dev profile (reusing the debug build
# above) into a virtual environment under target/ that sees python3's own
# packages, so the user's environment is left as it is.
py_env=target/python-env
[ -x "$py_env/bin/python" ] || python3 -m venv --system-site-packages "$py_env"
VIRTUAL_ENV="$PWD/$py_env" python3 -m maturin develop --quiet
"$py_env/bin/python" -m pytest -q crates/kernelkit-py/tests
# The PyTorch example, where torch is installed (the GPU machine runs it too).
if "$py_env/bin/python" -c 'import torch' 2>/dev/null; then
  "$py_env/bin/python" crates/kernelkit/examples/python/torch_custom_op.py
else
  echo "examples/python/torch_custom_op.py: skipped (PyTorch is not installed here)"
fi
