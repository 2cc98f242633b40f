#!/usr/bin/env bash
# The test command of the README: every test of the workspace, with every
# feature (GPU tests skip with a printed reason where there is no GPU), the
# doc tests, the loom models of the lock-free parts, and the Python
# package's tests (pytest), run against its release wheels installed with
# pip (scripts/wheels.sh: needs maturin, ziglang and auditwheel in python3,
# `python3 -m pip install maturin ziglang auditwheel`, and Python 3.12 and
# 3.9, on PATH or pyenv's).
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests that count compiles must not see artifacts from earlier runs; the
# artifact store tests set their own KERNELKIT_CACHE and directory.
export KERNELKIT_CACHE=memory
cargo nextest run --workspace --all-features --no-fail-fast
cargo test --workspace --all-features --doc
# The CUDA lifecycle tests (devices and contexts freed, a thread's context
# record, dynamic shared memory limits, default-stream errors) once more
# against the stand-in driver of tools/fakecuda, which keeps the driver's
# rules: above they skip without a GPU.
bash tools/fakecuda/build.sh >/dev/null
LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
  cargo nextest run -p kernelkit --all-features --test cuda_lifecycle
# KERNELKIT_NVRTC_PATH on the stand-in driver alone: a file that does not
# load is a typed error naming the setting; NVIDIA's NVRTC 12.8 and 13.0
# (their PyPI wheels, fetched once into target/nvrtc-wheels) each compile
# through it with the options kernelkit gives that version; 12.6, which
# rejects the generated prelude, is refused when the device opens.
nv=target/nvrtc-wheels
for pkg in nvidia-cuda-nvrtc-cu12==12.6.85 nvidia-cuda-nvrtc-cu12==12.8.93 nvidia-cuda-nvrtc==13.0.88; do
  dir="$nv/${pkg#*==}"
  if [ ! -d "$dir/nvidia" ]; then
    python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$nv/wheels" "$pkg"
    python3 -m zipfile -e "$nv/wheels/$(ls "$nv/wheels" | grep -F -- "-${pkg#*==}-" | head -n1)" "$dir"
  fi
done
for lib in "$nv"/12.8.93/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 "$nv"/13.0.88/nvidia/cu13/lib/libnvrtc.so.13; do
  KK_TEST_NVRTC="$PWD/$lib" KK_TEST_OLD_NVRTC="$PWD/$nv/12.6.85/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" \
    LD_LIBRARY_PATH="$PWD/target/fakecuda/driver" KERNELKIT_COMPILE_WORKERS=0 \
    cargo nextest run -p kernelkit --all-features --test nvrtc_setting
done
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

# The Python package as users install it: the release wheels of
# scripts/wheels.sh (cp312-abi3 and cp39-abi3, manylinux_2_28), each
# installed with pip into a fresh virtual environment of its Python (3.12,
# and 3.9, the oldest the package supports) whose PATH has no Rust
# toolchain, then the package's tests against it (with zig from PyPI, which
# test_runtime_needs.py checks as a compiler of CPU kernels).
./scripts/wheels.sh
. scripts/find-python.sh
no_rust_path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && printf '%s:' "$d"
done)
for v in 3.12 3.9; do
  py_env=target/wheel-env-$v
  rm -rf "$py_env"
  "$(find_python "$v")" -m venv "$py_env"
  whl=$(ls dist/kernelkit-*-cp${v/./}-abi3-*.whl)
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore "$whl" pytest ziglang
  (
    export PATH="$PWD/$py_env/bin:$no_rust_path"
    if command -v cargo >/dev/null || command -v rustc >/dev/null; then
      echo "a Rust toolchain is still on PATH" >&2
      exit 1
    fi
    python -c 'import kernelkit, sys; assert "site-packages" in kernelkit.__file__, kernelkit.__file__'
    python -m pytest -q crates/kernelkit-py/tests
  )
done
