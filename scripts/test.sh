#!/usr/bin/env bash
# The test command of the README: every test of the workspace, with every
# feature (GPU tests skip with a printed reason where there is no GPU), the
# doc tests, and the loom models of the lock-free parts.
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
# (With the cuda feature: two models are of the CUDA backend's protocols.)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p kernelkit --features cuda --release --lib loom_ -- --test-threads=2
