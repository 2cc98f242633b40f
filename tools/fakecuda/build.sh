#!/usr/bin/env bash
# Builds the stand-in CUDA libraries into target/fakecuda (see fakecuda.c).
# Use: LD_LIBRARY_PATH=target/fakecuda CUDA_HOME=/nonexistent <program>
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/fakecuda
mkdir -p "$out"
cc -O2 -shared -fPIC -DFAKECUDA_DRIVER_ONLY -o "$out/libcuda.so.1" tools/fakecuda/fakecuda.c
ln -sf libcuda.so.1 "$out/libcuda.so"
# The driver alone, for use beside a real NVRTC (with-nvrtc.sh).
mkdir -p "$out/driver"
cp "$out/libcuda.so.1" "$out/driver/"
ln -sf libcuda.so.1 "$out/driver/libcuda.so"
cc -O2 -shared -fPIC -o "$out/libnvrtc.so.13" tools/fakecuda/fakecuda.c
ln -sf libnvrtc.so.13 "$out/libnvrtc.so"
# torch's C interface to tensors, for the Python package's stand-in torch
# (crates/kernelkit-py/tests/standin_torch.py): faketorch.c.
mkdir -p "$out/torch/lib"
for lib in libtorch_cpu.so libtorch_cuda.so; do
  cc -O2 -shared -fPIC -o "$out/torch/lib/$lib" tools/fakecuda/faketorch.c
done
echo "$out"
