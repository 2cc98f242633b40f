#!/usr/bin/env bash
# Instructions and instruction-cache misses per warm call, from callgrind
# (deterministic, unlike timings on a shared machine), with the stand-in
# driver evicting the instruction cache at every launch as a real one does.
#
#   tools/fakecuda/footprint.sh [dispatch_loop binary] [call|run|host]
#
# Prints Ir/call and I1-misses/call of everything but the stand-in driver:
# the second is the number of 64-byte lines of code a call runs that a
# launch evicted, what a warm call pays for on a GPU host.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release/examples/dispatch_loop}
mode=${2:-call}
lib=$(bash tools/fakecuda/build.sh)
measure() { # calls -> "Ir I1mr" outside libcuda
  local out=/tmp/kk-footprint.$$.$1
  LD_LIBRARY_PATH=$PWD/$lib KERNELKIT_COMPILE_WORKERS=0 KERNELKIT_CACHE=memory \
    FAKECUDA_CODE_KB=32 FAKECUDA_DATA_KB=0 \
    valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
    --LL=2097152,16,64 --callgrind-out-file="$out" "$bin" cuda "$1" "$mode" >/dev/null 2>&1
  callgrind_annotate --auto=no --show=Ir,I1mr --threshold=100 "$out" 2>/dev/null |
    awk '/file:function/ {go=1; next}
         go && NF >= 3 && $0 !~ /libcuda\.so/ {
           gsub(",", "", $1); ir += $1; n = split($0, f, " ");
           for (i = 2; i <= n; i++) if (f[i] ~ /^[0-9,]+$/ && f[i-1] ~ /%\)$/) { gsub(",", "", f[i]); mr += f[i]; break }
         }
         END { printf "%d %d\n", ir, mr }'
  rm -f "$out"
}
read -r ir1 mr1 < <(measure 5000)
read -r ir2 mr2 < <(measure 15000)
awk -v a="$ir1" -v b="$ir2" -v c="$mr1" -v d="$mr2" -v m="$mode" \
  'BEGIN { printf "%s: %.0f instructions/call, %.1f I1 misses/call (outside the driver)\n", m, (b-a)/10000, (d-c)/10000 }'
