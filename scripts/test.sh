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
    cargo nextest run -p kernelkit --all-features -E "test(/(^|::)$module::/)"
}
standin standin
standin standin_no_memory_pools FAKECUDA_NO_MEMORY_POOLS=1
standin standin_two_gpus FAKECUDA_DEVICES=2 KK_CHURN=2000
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
# The PyTorch example, where torch is installed (the GPU machine runs it too).
if "$py_env/bin/python" -c 'import torch' 2>/dev/null; then
  "$py_env/bin/python" crates/kernelkit/examples/python/torch_custom_op.py
else
  echo "examples/python/torch_custom_op.py: skipped (PyTorch is not installed here)"
fi
