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
# The examples for users (crates/kernelkit/examples): each checks its own
# results and fails if they are wrong; candle_fused on a small matrix.
# Every cargo command here builds the workspace with every feature, so the
# test binaries above are built once and reused: `-p` alone would unify
# other features and build a second copy of each (CI's disk is small).
cargo build --quiet --workspace --all-features --examples
for example in quick_start mlx_metal_port precompile_bundle; do
  "target/debug/examples/$example"
done
target/debug/examples/candle_fused 64 64
# Against the stand-in driver of tools/fakecuda, which keeps the driver's
# rules but runs no kernel (above, without a GPU, the CUDA tests skip). A
# test declares that it runs there by the module it is in: `standin::`
# (the CUDA lifecycle, captures and unloads, and the behavioural suite's
# CUDA tests that read no kernel result), `standin_no_memory_pools::` (a
# stand-in GPU without stream-ordered memory pools) and `standin_two_gpus::`
# (two stand-in GPUs; churn of 2,000 values here, 10,000 on the H200).
bash tools/fakecuda/build.sh >/dev/null
standin() { # FILTER_MODULE, then the stand-in's settings as NAME=VALUE...
  local module=$1; shift
  env "$@" LD_LIBRARY_PATH="$PWD/target/fakecuda" KERNELKIT_COMPILE_WORKERS=0 \
    cargo nextest run --workspace --all-features -E "package(kernelkit-rs) and test(/(^|::)$module::/)"
}
standin standin
standin standin_no_memory_pools FAKECUDA_NO_MEMORY_POOLS=1
standin standin_two_gpus FAKECUDA_DEVICES=2 KK_CHURN=2000
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
    cargo nextest run --workspace --all-features --test nvrtc_setting
  # Issue 43: a bundle precompiled by a compile-only device (NVRTC, no GPU)
  # for the stand-in's sm_90a, with PTX, is found by the device with JIT
  # forbidden: its code, else its compute_90 PTX (ptx_loads).
  KERNELKIT_NVRTC_PATH="$PWD/$lib" LD_LIBRARY_PATH="$PWD/target/fakecuda/driver" \
    KERNELKIT_COMPILE_WORKERS=0 CUDA_HOME=/nonexistent \
    cargo nextest run --workspace --all-features --test nojit_cuda
  # Every CUDA bundle carries kernelkit's strided-copy kernel (code and
  # PTX), listed by `cache inspect`.
  KERNELKIT_NVRTC_PATH="$PWD/$lib" KERNELKIT_COMPILE_WORKERS=0 CUDA_HOME=/nonexistent \
    cargo nextest run --workspace --all-features --test bundles \
    -E 'package(kernelkit-cli) and test(a_cuda_bundle_carries_kernelkits_strided_copy_kernel)'
done
# (With the cuda feature: two models are of the CUDA backend's protocols.)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p kernelkit-rs --features cuda --release --lib loom_ -- --test-threads=2

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
  whl=$(ls dist/kernelkit-*-cp${v/./}-abi3-*_x86_64.whl)
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore "$whl" pytest ziglang
  # JAX's CPU wheel for kernelkit.jax's tests (pinned by .ci/run), where
  # the Python has it (3.11 and later); without it those tests skip.
  if [ -n "${CI_JAX_WHEEL:-}" ] && [ "$v" != 3.9 ]; then
    "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check \
      --root-user-action=ignore "$CI_JAX_WHEEL" flatbuffers
  fi
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
# The module's declaration that it needs the GIL (`Py_mod_gil`) exists only
# in builds for Python 3.13 and later: one such build (no abi3), its
# definition read by the test file run as a script (no NumPy needed).
py313=
for c in $(command -v python3.13 || true) "$HOME"/.pyenv/versions/3.13*/bin/python3.13; do
  if [ -x "$c" ] && "$c" -c pass 2>/dev/null; then py313=$c; break; fi
done
if [ -n "$py313" ]; then
  rm -rf target/wheels-py313 target/py313-ext
  python3 -m maturin build --quiet --no-default-features --features cuda -i "$py313" --out target/wheels-py313
  "$py313" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
    target/wheels-py313/kernelkit-*-cp313-*.whl target/py313-ext
  "$py313" crates/kernelkit-py/tests/test_module_def.py target/py313-ext/kernelkit/_kernelkit.*.so
else
  echo "no python3.13 here: the module's Py_mod_gil slot is not checked"
fi
# The PyTorch example, where torch is installed (the GPU machine runs it too),
# with the installed cp312 wheel.
if target/wheel-env-3.12/bin/python -c 'import torch' 2>/dev/null; then
  target/wheel-env-3.12/bin/python crates/kernelkit/examples/python/torch_custom_op.py
else
  echo "examples/python/torch_custom_op.py: skipped (PyTorch is not installed here)"
fi
# grid_sample written once, run under NumPy, and PyTorch and JAX where
# they are installed (each part says when it skips).
KERNELKIT_CACHE=memory target/wheel-env-3.12/bin/python crates/kernelkit/examples/python/grid_sample_three_ways.py
