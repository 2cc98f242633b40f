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
# (With the cuda feature: two models are of the CUDA backend's protocols.)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p kernelkit --features cuda --release --lib loom_ -- --test-threads=2
