#!/usr/bin/env bash
# Runs ON the GPU machine, from the repo root, with .gpu/ carried (built by
# scripts/gpu-check.sh): the CUDA test suite, the demo on CUDA, kernelkit's
# performance ratios (examples/cuda_perf.rs), CuPy baselines, and `kernelkit
# bench` when it exists. Logs go to $OUT; a short summary is printed last.
set -u
G=.gpu
OUT=${OUT:-/tmp/kernelkit-gpu}
mkdir -p "$OUT"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH="$CUDA_HOME/lib64:$CUDA_HOME/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
status=()

step() { # name, command...
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  status+=("$name: $([ "$rc" = 0 ] && echo ok || echo "FAILED (rc $rc)") in $((SECONDS - t0)) s")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 | tee "$OUT/gpu.txt"
step tests "$G/cuda-tests" --test-threads=4
step unit "$G/kernelkit-lib-tests" backend::cuda
step demo "$G/kernelkit" demo --device cuda --threads 16 --rounds 20
step perf "$G/cuda_perf"
# The same with the per-stream block cache off (every output from the pool).
step perf_pool env KERNELKIT_CUDA_ALLOC=pool "$G/cuda_perf"
step baselines python3 "$G/gpu_baselines.py"
if "$G/kernelkit" bench --help 2>/dev/null | grep -q -- '--backend'; then
  step bench "$G/kernelkit" bench --backend cuda --json "$OUT/bench.json"
else
  status+=("bench: not in this build of the CLI")
fi

echo
echo "===== SUMMARY ====="
printf '%s\n' "${status[@]}"
grep -h "^test result" "$OUT/tests.log" "$OUT/unit.log" 2>/dev/null
grep -h "^cache:" "$OUT/demo.log" 2>/dev/null
grep -hE "^(dispatch\.(raw_us|warm_us|without_memo_us|ratio)|bandwidth\.|cold\.(nvrtc_ms|kernelkit_ms|ratio)|parallel_cold\.(wall|mean)|cupy\.)" "$OUT/perf.log" "$OUT/baselines.log" 2>/dev/null
d2d=$(sed -n 's/^cupy.d2d_copy_tbs = //p' "$OUT/baselines.log" 2>/dev/null)
axpb=$(sed -n 's/^bandwidth.axpb_tbs = //p' "$OUT/perf.log" 2>/dev/null)
if [ -n "$d2d" ] && [ -n "$axpb" ]; then
  python3 -c "print(f'bandwidth.ratio_to_d2d_copy = {$axpb/$d2d:.3f} (target >= 0.85)')"
fi
echo "allocator=pool only: $(grep -h '^dispatch.warm_us =' "$OUT/perf_pool.log" 2>/dev/null)"
grep -h "^SUMMARY" "$OUT/perf.log" 2>/dev/null
