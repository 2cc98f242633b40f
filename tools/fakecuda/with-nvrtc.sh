#!/usr/bin/env bash
# Runs a command with the real NVRTC 13.0 (from NVIDIA's PyPI wheels: it
# compiles without a GPU) and the stand-in driver: CUDA sources are compiled
# for real here, kernels still do not run. For checking generated CUDA code
# and preludes before a GPU run.
#   tools/fakecuda/with-nvrtc.sh target/release/kernelkit source --dialect cuda --compile SPEC
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
nv="$top/target/nvrtc"
if [ ! -f "$nv/nvidia/cu13/lib/libnvrtc.so.13" ]; then
  mkdir -p "$nv/wheels"
  python3 -m pip download -q --no-deps -d "$nv/wheels" \
    nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  for w in "$nv"/wheels/*.whl; do python3 -m zipfile -e "$w" "$nv"; done
fi
fake=$(cd "$top" && bash tools/fakecuda/build.sh)
export LD_LIBRARY_PATH="$nv/nvidia/cu13/lib:$top/$fake/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_HOME="$nv/nvidia/cu13"
exec "$@"
