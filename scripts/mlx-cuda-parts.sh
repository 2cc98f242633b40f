#!/usr/bin/env bash
# MLX's CUDA build for the GPU machine, in two parts of under 40 MB each
# (the device tool carries at most 64 MiB a call; the build is 90 MB as
# MLX ships it): mlx and mlx-cuda-13 for CPython 3.12 (the GPU machine's
# python3), their shared library stripped, packed with xz and split into
# .mlxa/ and .mlxb/ (both ignored by git: add `/.mlxa/` and `/.mlxb/` to
# .git/info/exclude). The GPU machine has the CUDA 13 libraries mlx-cuda-13
# needs (cuBLAS, cuFFT, cuSOLVER, NVRTC, cuDNN, NCCL: PyTorch's wheels).
#
# Two device calls in a row then measure it (the machine keeps /tmp between
# calls while it stays warm, 30 s):
#   run(carry=[".gpu", ".mlxa"], command="KK_STEPS=mlx_stash bash .gpu/gpu-remote.sh")
#   run(carry=[".gpu", ".mlxb"], command="KK_STEPS=mlx bash .gpu/gpu-remote.sh")
set -euo pipefail
version=${MLX_VERSION:-0.32.4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_35_x86_64 -d "$work/wheels" "mlx==$version" "mlx-cuda-13==$version"
mkdir -p "$work/site"
for w in "$work"/wheels/*.whl; do python3 -m zipfile -e "$w" "$work/site"; done
strip --strip-unneeded "$work/site/mlx/lib/libmlx.so"
tar -C "$work/site" -cf - mlx mlx_cuda_13.libs "mlx-$version.dist-info" | xz -9e -T0 > "$work/mlx.tar.xz"
rm -rf .mlxa .mlxb
mkdir -p .mlxa .mlxb
split -n 2 -d "$work/mlx.tar.xz" "$work/part."
mv "$work/part.00" .mlxa/mlxpart.00
mv "$work/part.01" .mlxb/mlxpart.01
sha256sum "$work/mlx.tar.xz" | cut -d' ' -f1 > .mlxb/sha256
ls -l .mlxa .mlxb
