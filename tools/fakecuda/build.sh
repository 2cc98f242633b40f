#!/usr/bin/env bash
# Builds the stand-in CUDA libraries into target/fakecuda (see fakecuda.c).
# Use: LD_LIBRARY_PATH=target/fakecuda CUDA_HOME=/nonexistent <program>
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/fakecuda
mkdir -p "$out"
cc -O2 -shared -fPIC -o "$out/libcuda.so.1" tools/fakecuda/fakecuda.c
ln -sf libcuda.so.1 "$out/libcuda.so"
cc -O2 -shared -fPIC -o "$out/libnvrtc.so.13" tools/fakecuda/fakecuda.c
ln -sf libnvrtc.so.13 "$out/libnvrtc.so"
echo "$out"
