#!/usr/bin/env bash
# Builds the Python package's release wheels into dist/: stripped abi3
# wheels for x86_64 Linux at manylinux_2_28, linked by zig (PyPI's
# `ziglang`) against glibc 2.28's symbols, so they install on RHEL 8,
# Ubuntu 20.04 and later without a compiler. Two wheels: `cp312-abi3`
# (vectorcall, the fast call path; for 3.12 on) and `cp39-abi3` (the
# package's oldest supported Python, for 3.9 to 3.11). The CUDA backend is
# built in: the driver and NVRTC are loaded at run time, so the wheels
# depend on no CUDA package (docs/install.md says what a machine needs).
#
# Then `auditwheel show` checks each wheel's tag and the size limit.
#
#   scripts/wheels.sh            both wheels
#   WHEEL_PYTHONS="3.12" scripts/wheels.sh   only the cp312 one
#   WHEEL_ARCHS="x86_64 aarch64" scripts/wheels.sh   for aarch64 too (zig
#                                cross-links it; `rustup target add
#                                aarch64-unknown-linux-gnu` first)
#
# Needs: cargo, and python3 with maturin, ziglang and auditwheel
# (`python3 -m pip install maturin ziglang auditwheel`), and the builders'
# Pythons: `python3.12`/`python3.9` on PATH, or pyenv's versions.
set -euo pipefail
cd "$(dirname "$0")/.."

platform=manylinux_2_28
max_bytes=$((10 * 1024 * 1024))
pythons=${WHEEL_PYTHONS:-"3.12 3.9"}

. scripts/find-python.sh

mkdir -p dist
# Line tables are not shipped (the wheel is stripped): do not build them.
export CARGO_PROFILE_RELEASE_DEBUG=0
for arch in ${WHEEL_ARCHS:-x86_64}; do
  for v in $pythons; do
    py=$(find_python "$v") || exit 1
    echo "== wheel for Python $v ($py), $arch"
    rm -f dist/kernelkit-*-cp${v/./}-abi3-*_"$arch".whl
    python3 -m maturin build --release --strip --zig \
      --compatibility "$platform" --target "$arch-unknown-linux-gnu" \
      --interpreter "$py" --out dist
  done
done

status=0
for whl in dist/kernelkit-*-abi3-*.whl; do
  size=$(stat -c %s "$whl")
  echo "== $whl: $size bytes"
  report=$(python3 -m auditwheel show "$whl")
  echo "$report"
  # auditwheel wraps its lines: match the report as one line.
  flat=$(tr '\n' ' ' <<<"$report" | tr -s ' ')
  if ! grep -Eq 'consistent with the following platform tag: "manylinux_2_([5-9]|1[0-9]|2[0-8])_' <<<"$flat"; then
    echo "$whl: not $platform or older" >&2
    status=1
  fi
  if [ "$size" -gt "$max_bytes" ]; then
    echo "$whl: $size bytes, over the limit of $max_bytes" >&2
    status=1
  fi
done
exit $status
