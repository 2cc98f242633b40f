#!/usr/bin/env bash
# Builds kernelkit with candle's CUDA tensors (`interop::candle` on CUDA),
# here, without a GPU or a CUDA toolkit:
#
#   scripts/candle-cuda.sh setup            # once: nvcc etc. from PyPI, link stubs
#   scripts/candle-cuda.sh cargo build --release -p kernelkit-rs --features candle,cuda --example candle_fused
#   LD_LIBRARY_PATH=target/nv/link:target/nv/nvidia/cu13/lib target/candle-cuda/release/examples/candle_fused
#                                           # here: the CPU part (the stand-ins say "no device")
#
# Why a script: candle-core's `cuda` feature compiles candle's kernels with
# `nvcc` when it is built (candle-kernels, through cudaforge), and turns on
# cudarc's `dynamic-linking`: the program links against libcuda, libnvrtc,
# libcublas, libcublasLt, libcurand and libcudart. So:
# - nvcc 13.0 comes from NVIDIA's PyPI wheels (nvidia-cuda-nvcc with
#   nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime, nvidia-cuda-cccl,
#   nvidia-cuda-nvrtc; 13.0 to match the H200 machine's driver, which
#   JIT-compiles no newer PTX), unpacked under target/nv;
# - the libraries it links against are stand-ins made here (a function of
#   each name cudarc declares, with the real library's soname), except
#   libnvrtc and libcudart, which the wheels have: the program loads the
#   real ones where it runs (CUDA 13's libraries on LD_LIBRARY_PATH).
# - it is not a cargo feature (`--all-features` must build without nvcc, for
#   CI and clippy): `RUSTFLAGS=--cfg kernelkit_candle_cuda` turns on
#   candle-core's `cuda` (crates/kernelkit/Cargo.toml) and kernelkit's code
#   for it. Its own target directory (target/candle-cuda, or
#   KK_CANDLE_TARGET), so the usual builds are not rebuilt.
# The first build compiles candle's kernels (a few minutes per core).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
nv=${KK_NV_DIR:-$top/target/nv}
cu="$nv/nvidia/cu13"
links="$nv/link"

setup() {
  if [ ! -x "$cu/bin/nvcc" ] || [ ! -x "$cu/nvvm/bin/cicc" ]; then
    mkdir -p "$nv/wheels"
    python3 -m pip download -q --no-deps -d "$nv/wheels" \
      nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
      nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cuda-nvrtc==13.0.88
    for w in "$nv"/wheels/*.whl; do python3 -m zipfile -e "$w" "$nv"; done
    chmod +x "$cu"/bin/* "$cu"/bin/crt/* "$cu"/nvvm/bin/* 2>/dev/null || true
  fi
  # Stand-ins to link against: every function cudarc declares for the
  # library, failing (the driver's say CUDA_ERROR_NO_DEVICE, so a program
  # run here with them on LD_LIBRARY_PATH finds no GPU and runs its CPU
  # part). Where the program runs on a GPU they are not loaded: the
  # sonames name the real libraries.
  local sys
  sys=$(cd "$top" && cargo metadata --format-version 1 2>/dev/null |
    python3 -c "import json,sys; print(next(p['manifest_path'] for p in json.load(sys.stdin)['packages'] if p['name']=='cudarc').rsplit('/',1)[0] + '/src')")
  mkdir -p "$links"
  local spec mod so
  for spec in driver:libcuda.so.1:100 cublas:libcublas.so.13:1 cublaslt:libcublasLt.so.13:1 curand:libcurand.so.10:1; do
    IFS=: read -r mod so fail <<<"$spec"
    grep -oE '^pub unsafe fn \w+\(' "$sys/$mod/sys/mod.rs" |
      sed -E "s/pub unsafe fn (\\w+)\\(/int \\1(void) { return $fail; }/" | sort -u >"$links/$mod.c"
    cc -shared -fPIC -o "$links/$so" -Wl,-soname,"$so" "$links/$mod.c"
    ln -sf "$so" "$links/${so%%.so*}.so"
  done
  ln -sf "$cu/lib/libnvrtc.so.13" "$links/libnvrtc.so"
  ln -sf "$cu/lib/libcudart.so.13" "$links/libcudart.so"
  echo "nvcc: $("$cu/bin/nvcc" --version | tail -n2 | head -n1)"
}

case "${1:-}" in
  setup) setup ;;
  nvcc-found) [ -x "$cu/bin/nvcc" ] && [ -e "$links/libcuda.so" ] ;;
  "") sed -n '2,6p' "$0"; exit 2 ;;
  *)
    [ -x "$cu/bin/nvcc" ] && [ -e "$links/libcuda.so" ] ||
      { echo "no nvcc under $nv: run scripts/candle-cuda.sh setup first" >&2; exit 1; }
    export PATH="$cu/bin:$PATH" CUDA_ROOT="$nv" CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
    # cudarc's link search: $CUDA_ROOT/lib (made here as a link to the stand-ins).
    ln -sfn link "$nv/lib"
    export NVCC="$cu/bin/nvcc"
    export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-2}
    export CARGO_TARGET_DIR=${KK_CANDLE_TARGET:-$top/target/candle-cuda}
    export RUSTFLAGS="${RUSTFLAGS:-} --cfg kernelkit_candle_cuda"
    exec "$@"
    ;;
esac
