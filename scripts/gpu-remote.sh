#!/usr/bin/env bash
# Runs ON the GPU machine, from the repo root, with .gpu/ carried (built by
# scripts/gpu-check.sh): the CUDA test suite, the demo on CUDA, kernelkit's
# performance ratios (crates/kernelkit-bench/examples/cuda_perf.rs), CuPy
# baselines, and `kernelkit-bench` when it was sent. Logs go to $LOGS and,
# packed, to $OUT/logs.tgz (the device tool brings back at most 8 files); a
# short summary is printed last.
# KK_STEPS="tests parallel ..." runs only the named steps (default: all).
# KK_AB_TURNS=N: turns of the `ab` step (default 4).
# Compile workers: the binaries find .gpu/kernelkit next to themselves.
set -u
G=.gpu
OUT=${OUT:-/tmp/kernelkit-gpu}
LOGS=${LOGS:-/tmp/kernelkit-gpu-logs}
mkdir -p "$OUT" "$LOGS"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH="$CUDA_HOME/lib64:$CUDA_HOME/lib:${LD_LIBRARY_PATH:-}"
# Redis for the fleet steps, carried by gpu-check.sh (see there).
if [ -x "$G/redis/redis-server" ]; then
  export PATH="$PWD/$G/redis:$PATH"
  export LD_LIBRARY_PATH="$PWD/$G/redis/lib:$LD_LIBRARY_PATH:$PWD/$G/redis/lib2"
fi
export PYTHONUNBUFFERED=1
# The Rust executables travel packed (gpu-check.sh): unpacked at every
# call (a second or two), so a call never runs an earlier call's.
[ -f "$G/rust.tar.xz" ] && tar -C "$G" -xJf "$G/rust.tar.xz"
[ -f "$G/bench.tar.xz" ] && tar -C "$G" -xJf "$G/bench.tar.xz"
status=()

step() { # name, command...
  local name=$1; shift
  case " ${KK_STEPS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
  echo "=== $name: $*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  status+=("$name: $([ "$rc" = 0 ] && echo ok || echo "FAILED (rc $rc)") in $((SECONDS - t0)) s")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 | tee "$LOGS/gpu.txt"
step tests "$G/cuda-tests" --test-threads=4
# The behavioural suite for cuda:: (with the soak, the hot path and the
# bad-input matrix; `null_cuda_dialect::` does not match the filter).
step behaviour "$G/behaviour-tests" cuda:: --test-threads=4
step unit "$G/kernelkit-lib-tests" backend::cuda
# A fault ruins the process's CUDA context: one process per fault test.
step fault "$G/fault-tests" --exact a_faulting_kernel_is_an_error_and_the_device_stays_unusable --nocapture
step fault_default "$G/fault-tests" --exact a_device_that_faulted_before_its_default_stream_was_used_reports_the_fault --nocapture
# Devices and contexts created and destroyed: no other device in the process.
step lifecycle "$G/lifecycle-tests" --test-threads=4
# The Metal compatibility layer function by function (SIMD functions over
# partial warps among them), and a kernel that outlives a wait (own process).
step compat "$G/compat-tests" cuda:: --test-threads=2
step timeout_lib "$G/timeout-lib-tests" --nocapture
# Calls on a stream under a raw CUDA graph capture: typed errors that leave
# the capture valid; a captured graph replayed 1,000 times with new inputs.
step capture "$G/capture-tests" --test-threads=1 --nocapture
# Unloads past max_loaded_modules wait for events after the module's
# launches, not for the context, and leave another thread's global-mode
# capture valid (module loads and unloads in the relaxed capture mode).
step unload "$G/unload-tests" --test-threads=1 --nocapture
step demo "$G/kernelkit" demo --device cuda --threads 16 --rounds 20
# Every MLX golden spec (Metal bodies) generated for CUDA and compiled by NVRTC.
golden_cuda() {
  local fail=0 n=0 f
  for f in crates/kernelkit/tests/golden/metal/*.json; do
    [ -e "${f%.json}.mlx_error" ] && continue
    n=$((n + 1))
    if ! "$G/kernelkit" source --dialect cuda --compile "$f" >/dev/null 2>"$LOGS/golden.err"; then
      fail=$((fail + 1)); echo "FAILED $f: $(head -c 600 "$LOGS/golden.err")"
    fi
  done
  echo "golden_cuda: $((n - fail)) of $n compiled with NVRTC"
  [ "$fail" = 0 ]
}
step golden_cuda golden_cuda
# `kernelkit run` on the GPU: the known-result and view tests, device cuda.
step run_cuda env KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda "$G/run-tests" --test-threads=4
step views_cuda env KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda "$G/views-tests" --test-threads=4
step timeout_cuda env KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda "$G/timeout-tests" --test-threads=1
# The real-kernel corpus on CUDA (ratchet: known_failures/cuda.txt); the
# failures seen are written to $LOGS/corpus_cuda_seen.txt in the list's format.
step corpus_cuda env KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda \
  KERNELKIT_CORPUS_TEXTS="$G/corpus-texts" KERNELKIT_CORPUS_REQUIRE_TEXTS=1 \
  KERNELKIT_CORPUS_RECORD="$LOGS/corpus_cuda_seen.txt" KERNELKIT_CORPUS_TIMEOUT=60 \
  "$G/corpus-tests" real_kernels --nocapture
step soak "$G/kernelkit" demo --device cuda --threads 16 --rounds 100
# Bounds checks (issue 45): the planted-bug corpus on CUDA, each group's
# catches counted apart (groups A and B: >= 90% caught), and the correct
# controls' results checked against unchecked runs.
step i45_planted "$G/planted-tests" cuda:: --test-threads=1 --nocapture
# The real-kernel corpus with `--check-bounds`: every kernel's outputs the
# same as unchecked (no false positive), the slowdown printed.
# The MLX golden bodies run checked and unchecked: the same output bytes.
step i45_golden_checked "$G/golden-checked-tests" cuda:: --test-threads=1 --nocapture
step i45_corpus_checked env KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda \
  KERNELKIT_CORPUS_TEXTS="$G/corpus-texts" KERNELKIT_CORPUS_REQUIRE_TEXTS=1 KERNELKIT_CORPUS_TIMEOUT=60 \
  "$G/corpus-tests" checked_bounds_change_no_result --nocapture
# The CUDA suites, the corpus and the Python package's tests again with
# NVRTC 12.8 (from NVIDIA's cu12 wheel, carried as nvrtc-cu12.tar.xz)
# instead of 13:
# KERNELKIT_NVRTC_PATH is obeyed or is an error, so each run compiled with
# 12.x. Corpus failures are written to $LOGS/corpus_nvrtc12_seen.txt.
nvrtc12() {
  local dir=/tmp/kernelkit-nvrtc-cu12 rc=0
  [ -f "$G/nvrtc-cu12.tar.xz" ] || { echo "no $G/nvrtc-cu12.tar.xz (gpu-check.sh)"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xJf "$G/nvrtc-cu12.tar.xz"
  # Memory only: nothing compiled by NVRTC 13 in earlier steps is reused.
  # CUDA 12's headers from the cu12 runtime wheel (the toolkit here is 13).
  export KERNELKIT_CACHE=memory KERNELKIT_NVRTC_PATH="$dir/libnvrtc.so.12" \
    KERNELKIT_PYTHON_SITE="$dir/site"
  echo "KERNELKIT_NVRTC_PATH=$KERNELKIT_NVRTC_PATH KERNELKIT_PYTHON_SITE=$KERNELKIT_PYTHON_SITE"
  # cudarc asks the loader for `libnvrtc.so` first, and the toolkit's (in
  # the loader's cache here) would win over the setting, which is then a
  # typed error: a directory first on LD_LIBRARY_PATH with a `libnvrtc.so`
  # link to NVRTC 12 (the workaround the error names).
  mkdir -p "$dir/ld" && ln -sfn "$dir/libnvrtc.so.12" "$dir/ld/libnvrtc.so"
  export LD_LIBRARY_PATH="$dir/ld:$LD_LIBRARY_PATH"
  ldconfig -p | grep -i nvrtc || echo "(no NVRTC in the loader's cache)"
  # Every suite below skips without a usable device: first make sure the
  # device opens with this NVRTC, and say which one.
  "$G/kernelkit" run --device cuda examples/specs/basic.json || return 1
  "$G/cuda-tests" --test-threads=4 || rc=1
  "$G/behaviour-tests" cuda:: --test-threads=4 || rc=1
  "$G/kernelkit-lib-tests" backend::cuda || rc=1
  "$G/capture-tests" --test-threads=1 || rc=1
  KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda \
    KERNELKIT_CORPUS_TEXTS="$G/corpus-texts" KERNELKIT_CORPUS_REQUIRE_TEXTS=1 \
    KERNELKIT_CORPUS_RECORD="$LOGS/corpus_nvrtc12_seen.txt" KERNELKIT_CORPUS_TIMEOUT=60 \
    "$G/corpus-tests" real_kernels --nocapture || rc=1
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory python3 -m pytest -q -rs "$G/python-tests" || rc=1
  return $rc
}
step nvrtc12 nvrtc12
# Issue 43: the bundle gpu-check.sh precompiled on the CPU machine (NVRTC
# 12.8 from NVIDIA's wheel, no GPU) for sm_80,sm_90a + PTX, imported into a
# fresh store and replayed with KERNELKIT_JIT=forbid with the same NVRTC
# (the identity holds its version): 0 compiles, every result right (ten
# calls have a strided input that kernelkit's strided-copy kernel, from the
# bundle like the variants, copies first), first calls beside warm-disk
# first calls, the import time; then, on a store of the bundle without the
# copy kernel, a strided call must be JitForbidden naming it and the device
# must go on. Then without the sm_90a code: every variant and the copy
# kernel from PTX (ptx_loads 101), 0 compiles. Then the warm call with
# recording off and on.
nojit_replay() {
  [ -f "$G/nojit-bundle/nojit.kkb" ] || { echo "no $G/nojit-bundle/nojit.kkb (gpu-check.sh)"; return 1; }
  tail -n1 "$G/nojit-bundle/precompile.txt" 2>/dev/null
  # This machine's own NVRTC and headers (its toolkit), not the wheels the
  # bundle was made with: the keys travel.
  # The carried files just unpacked (tens of MB) are written back first:
  # the import's one syncfs should flush the import's own writes.
  sync
  # The import's phases (files, renames, sync) in kernelkit's debug log.
  KERNELKIT_LOG=kernelkit::cache::store=debug \
    timeout 120 "$G/nojit" replay --backend cuda --bundle "$G/nojit-bundle/nojit.kkb" \
    --trusted "$G/nojit-bundle/ci.key.pub" "$@"
}
step i43_nojit nojit_replay
# The CPU bundle of the same variants, imported and replayed on this
# machine's CPU: its import pays the same filesystem (a file per entry).
if [ -f "$G/nojit-bundle/cpu.kkb" ]; then
  step i43_nojit_cpu env KERNELKIT_LOG=kernelkit::cache::store=debug timeout 120 "$G/nojit" replay \
    --backend cpu --bundle "$G/nojit-bundle/cpu.kkb" --trusted "$G/nojit-bundle/ci.key.pub"
fi
# What a fresh store's batch write costs on this machine's filesystem, by
# part (subdirectories, files; one thread and sixteen): the import's floor.
if [ -f "$G/fsprobe.py" ]; then
  step i43_fsprobe python3 "$G/fsprobe.py" "${TMPDIR:-/tmp}"
fi
step i43_nojit_ptx nojit_replay --exclude-target sm_90a
step i43_nojit_warm timeout 120 "$G/nojit" warm --backend cuda
# The corpus's kernels (recorded on the CPU machine, in the same bundle)
# replayed on CUDA from a fresh store holding only the imported bundle,
# with compiling forbidden: every entry right (the ratchet of
# known_failures/cuda.txt), no compile (one would be a JitForbidden
# failure).
i43_corpus_forbid() {
  local d
  d=$(mktemp -d)
  "$G/kernelkit" cache import --dir "$d/store" --trusted-keys "$G/nojit-bundle/ci.key.pub" \
    "$G/nojit-bundle/workload.kkb" || return 1
  env KERNELKIT_JIT=forbid KERNELKIT_CORPUS_CACHE=disk KERNELKIT_CACHE_DIR="$d/store" \
    KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda \
    KERNELKIT_CORPUS_TEXTS="$G/corpus-texts" KERNELKIT_CORPUS_REQUIRE_TEXTS=1 KERNELKIT_CORPUS_TIMEOUT=60 \
    "$G/corpus-tests" real_kernels --nocapture
}
step i43_corpus_forbid i43_corpus_forbid
# The Python package (wheel built here by gpu-check.sh) on the CPU and CUDA:
# MLX's interface, arrays, errors, and the seed's reproduction, 100 rounds;
# then the PyTorch example (crates/kernelkit/examples/python).
python_tests() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_SEED_ROUNDS=100 KERNELKIT_CACHE=memory python3 -m pytest -q -rs "$G/python-tests" &&
    KERNELKIT_CACHE=memory python3 crates/kernelkit/examples/python/torch_custom_op.py
}
step python python_tests
# The Python package against raw cuLaunchKernel, CuPy RawKernel and Triton,
# in one process, interleaved, medians; 16 threads on cold kernels with the
# CLI as compile worker and without; import time (BENCHMARKS.md, issue 16).
python_bench() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory timeout 400 python3 "$G/compare.py" --worker "$PWD/$G/kernelkit" --json "$OUT/python_bench.json"
  # The cold burst's control: 16 NVRTC processes at once against one, no
  # kernelkit (what this machine's cores give; nvrtc_control.py).
  lscpu | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\))" || true
  timeout 200 python3 "$G/nvrtc_control.py" --cli "$PWD/$G/kernelkit" --json "$OUT/nvrtc_control.json"
  # The warm figures again with this Python's per-version wheel (no abi3),
  # named per_version.*; then the abi3 wheel back.
  local tag pv
  tag=$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  pv=$(ls "$G"/wheels-per-version/kernelkit-*-"$tag"-"$tag"-*.whl 2>/dev/null | head -n1)
  if [ -n "$pv" ]; then
    python3 -m pip install --quiet --no-deps --force-reinstall "$pv" &&
      KERNELKIT_CACHE=memory timeout 200 python3 "$G/compare.py" --skip import,parallel --label per_version \
        --json "$OUT/python_bench_per_version.json"
    python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl
  else
    echo "per_version: no per-version wheel for $tag"
  fi
  # The abi3 wheel for 3.12 and later, where this Python is one (abi3_py312.*).
  pv=$(ls "$G"/wheels-abi3-py312/kernelkit-*-cp312-abi3-*.whl 2>/dev/null | head -n1)
  if [ -n "$pv" ] && python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    python3 -m pip install --quiet --no-deps --force-reinstall "$pv" &&
      KERNELKIT_CACHE=memory timeout 200 python3 "$G/compare.py" --skip import,parallel --label abi3_py312 \
        --json "$OUT/python_bench_abi3_py312.json"
    python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl
  fi
}
step python_bench python_bench
# MLX's cuda_kernel beside kernelkit, CuPy and Triton (compare.py's warm
# figures, with mlx importable) and MLX's own cold burst (mlx_cold.py):
# MLX's CUDA build comes in two parts, one a call (scripts/mlx-cuda-parts.sh
# says how); `mlx_stash` keeps the first in /tmp, `mlx` joins them.
MLX_DIR=/tmp/kernelkit-mlx
mlx_stash() {
  mkdir -p "$MLX_DIR" && cp .mlxa/mlxpart.00 "$MLX_DIR/" && ls -l "$MLX_DIR"
}
step mlx_stash mlx_stash
mlx_bench() {
  [ -f "$MLX_DIR/mlxpart.00" ] || { echo "no first part in $MLX_DIR: run mlx_stash first, on this machine"; return 1; }
  cat "$MLX_DIR/mlxpart.00" .mlxb/mlxpart.01 > "$MLX_DIR/mlx.tar.xz" &&
    { [ ! -f .mlxb/sha256 ] || [ "$(sha256sum "$MLX_DIR/mlx.tar.xz" | cut -d' ' -f1)" = "$(cat .mlxb/sha256)" ]; } &&
    mkdir -p "$MLX_DIR/site" && tar -C "$MLX_DIR/site" -xJf "$MLX_DIR/mlx.tar.xz" || return 1
  # libmlx finds CUDA's libraries at ../../nvidia/* beside it: PyTorch's.
  ln -sfn "$(python3 -c 'import site; print(site.getsitepackages()[0])')/nvidia" "$MLX_DIR/site/nvidia"
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    PYTHONPATH="$MLX_DIR/site" python3 -c 'import mlx.core as mx; print("mlx", mx.__version__, mx.default_device())' &&
    PYTHONPATH="$MLX_DIR/site" KERNELKIT_CACHE=memory timeout 300 python3 "$G/compare.py" --skip import,parallel \
      --json "$OUT/python_bench_mlx.json" &&
    PYTHONPATH="$MLX_DIR/site" timeout 200 python3 "$G/mlx_cold.py" --turns 3
}
step mlx mlx_bench
# Every spelling of a warm call (issue 42): out= and allocating calls as
# MLX users write them, donation, CuPy arrays, NumPy on the CPU, each beside
# CuPy RawKernel and raw cuLaunchKernel, in one process, interleaved; the
# route each took and the targets' verdicts (needs the wheel).
i42_call_shapes() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory timeout 110 python3 "$G/call_shapes.py" --rounds 5 --batch 10000 \
      --json "$OUT/i42_call_shapes.json"
}
step i42_call_shapes i42_call_shapes
# kernelkit ops inside PyTorch (issue 17): torch.compile graph breaks, a
# captured decode-style loop against CuPy RawKernel under capture, the
# grid_sample pair's fused backward against torch's (needs the wheel).
torch_native() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory timeout 500 python3 "$G/torch_native.py" --json "$OUT/torch_native.json"
}
step torch_native torch_native
# kernelkit kernels inside JAX (issue 46): the JAX tests on CUDA (JAX's
# CUDA plugin as installed there), then the per-call benchmark, command
# buffers on and off: 100 chained calls of a trivial kernel through
# kernelkit's FFI handler against a C++ FFI handler built here with nvcc,
# and jax.numpy and Pallas reported.
i46_jax() {
  python3 -c 'import jax; print("jax", jax.__version__, jax.devices())' || return 1
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory timeout 300 python3 -m pytest -q -rs "$G/python-tests/test_jax.py" &&
    KERNELKIT_CACHE=memory timeout 120 python3 crates/kernelkit/examples/python/grid_sample_three_ways.py &&
    for cb in on off; do
      KERNELKIT_CACHE=memory timeout 150 python3 "$G/jax_bench.py" --command-buffers $cb \
        --json "$OUT/jax_bench_$cb.json" || return 1
    done
}
step i46_jax i46_jax
# candle's CUDA tensors (built by gpu-check.sh only where nvcc was set up:
# scripts/candle-cuda.sh setup): the candle tests on CUDA, then fused ops
# against candle's unfused sequence. The binaries link CUDA 13's libcuda,
# libnvrtc, libcublas, libcublasLt, libcurand and libcudart: from the
# toolkit ($CUDA_HOME) or, failing that, NVIDIA's wheels of the python.
candle_cuda() {
  [ -f "$G/candle.tar.xz" ] || {
    echo "no $G/candle.tar.xz (gpu-check.sh builds it where scripts/candle-cuda.sh setup ran)"
    return 0
  }
  local bin=/tmp/kernelkit-candle wheels
  mkdir -p "$bin"
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$G/candle.tar.xz" "$bin" &&
    chmod +x "$bin/candle_fused" "$bin/candle-tests" ||
    return 1
  wheels=$(python3 -c "import glob, site; print(':'.join(sorted(set(d for p in site.getsitepackages() for d in glob.glob(p + '/nvidia/*/lib')))))" 2>/dev/null)
  (
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$wheels"
    ldd "$bin/candle_fused" | grep -E 'cuda|nvrtc|cublas|curand|not found'
    "$bin/candle-tests" --test-threads=1 && "$bin/candle_fused"
  )
}
step candle candle_cuda
# Issue 20, several GPUs: the tests (seed's repro across two GPUs, churn of
# 10,000 values with max 64, unloads racing launches) and the targets'
# table (crates/kernelkit-bench/examples/multi_gpu.rs); both say "skipped"
# and pass on one GPU.
# Run on the nvidia-h200-x2 kind: KK_STEPS=multi_gpu.
multi_gpu() {
  KERNELKIT_CACHE=memory "$G/multi-gpu-tests" --test-threads=1 --nocapture || return 1
  KERNELKIT_CACHE=memory KERNELKIT_MAX_LOADED_MODULES=64 "$G/multi_gpu" "${KK_CHURN:-10000}"
}
step multi_gpu multi_gpu
step perf "$G/cuda_perf"
# Host speed against the development machine: the same CPU-backend dispatch
# loop here and there (a C++ compiler is needed for the CPU backend), then
# the CUDA one.
calib() {
  KERNELKIT_CACHE=memory "$G/dispatch_loop" cpu 2000000 || echo "(no CPU backend here)"
  for m in call run host; do "$G/dispatch_loop" cuda 200000 $m; done
  "$G/launch_probe"
}
step calib calib
# An older build's dispatch against this one's, in turns on this machine
# (machines differ more than most changes: compare only within one).
ab() {
  [ -x "$G/cuda_perf_base" ] || { echo "no $G/cuda_perf_base (KK_BASE)"; return 0; }
  local b
  for i in $(seq "${KK_AB_TURNS:-4}"); do
    for b in cuda_perf_base cuda_perf_mid cuda_perf; do
      [ -x "$G/$b" ] || continue
      echo "$b: $("$G/$b" dispatch | grep -E '^dispatch\.(raw_us|warm_us|ratio|prepared|host)' | grep -v '\.all' | tr '\n' ' ')"
    done
  done
}
step ab ab
# The Python package's warm figures: an older wheel (KK_BASE_WHEEL at the
# build, sent in wheels-old/) and this one, in alternating turns.
ab_python() {
  [ -d "$G/wheels-old" ] || { echo "no $G/wheels-old (KK_BASE_WHEEL)"; return 0; }
  local turn w dir
  for turn in $(seq "${KK_AB_TURNS:-3}"); do
    for w in old new; do
      dir=wheels; [ "$w" = old ] && dir=wheels-old
      python3 -m pip install --quiet --no-deps --force-reinstall "$G"/$dir/kernelkit-*.whl &&
        KERNELKIT_CACHE=memory python3 "$G/compare.py" --skip import,parallel --label "$w$turn" |
        grep -E "\.(warm_out\.(kernelkit_us|kernelkit_method_us|entry_saves_us|raw_launch_us|cupy_rawkernel_us|over_raw_us)|warm_alloc\.(kernelkit_us|cupy_us)|breakdown\.read_one_tensor_us) "
    done
  done
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl
}
step ab_python ab_python
# The same turns for `kernelkit-bench --quick` of an older build (KK_BASE_CLI,
# sent as kernelkit_base: a kernelkit-bench, or an older CLI with its `bench`
# subcommand) and this one: memo hits, host dispatch, parallel compiles,
# side by side.
ab_bench() {
  [ -x "$G/kernelkit_base" ] || { echo "no $G/kernelkit_base (KK_BASE_CLI)"; return 0; }
  local b i sub
  for i in $(seq "${KK_AB_BENCH_TURNS:-2}"); do
    for b in kernelkit_base kernelkit-bench; do
      sub=()
      "$G/$b" bench --help >/dev/null 2>&1 && sub=(bench)
      timeout 240 "$G/$b" ${sub[@]+"${sub[@]}"} --backend cuda --quick --json "$LOGS/bench_${b}_$i.json" >/dev/null 2>&1
      echo "$b turn $i: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); f=d.get('figures',d); print(' '.join(f'{k}={f[k]}' for k in sorted(f) if any(w in k for w in ('build_hit','dispatch_hit','hit_lookup','parallel_compile','herd'))))" "$LOGS/bench_${b}_$i.json" 2>&1 | head -c 900)"
    done
  done
}
step ab_bench ab_bench
# The same in the allocator's debugging mode (no per-stream block cache:
# every output an exact-size block from the device's allocator).
step perf_pool env KERNELKIT_CUDA_ALLOC=exact "$G/cuda_perf"
# Compiles in parallel: in-process against compile workers, then the same
# with the workers turned off by the environment.
# (KERNELKIT_LOG=debug: each worker logs how long NVRTC took inside it.)
step parallel env KERNELKIT_CACHE=memory KERNELKIT_LOG=kernelkit=debug "$G/cuda_perf" parallel
step parallel_off env KERNELKIT_CACHE=memory KERNELKIT_COMPILE_WORKERS=0 "$G/cuda_perf" parallel
step baselines python3 "$G/gpu_baselines.py"
# CuPy, Triton and raw-launch figures for BENCHMARKS.md, on this machine.
bench_baselines() { timeout 200 python3 "$G/bench-gpu-baselines.py" > "$OUT/baselines.json"; cat "$OUT/baselines.json"; }
step bench_baselines bench_baselines
if [ -x "$G/kernelkit-bench" ]; then
  step bench timeout 300 "$G/kernelkit-bench" --backend cuda --json "$OUT/bench.json"
elif [ -z "${KK_STEPS:-}" ]; then
  status+=("bench: no $G/kernelkit-bench (gpu-check.sh sends it as bench.tar.xz)")
fi

# Cold start (issue 22): a fresh process's first call after a compile, on a
# warm store and after a signed bundle's import; 16 kernels precompiled by
# the library beside the slowest single compile.
if [ -x "$G/kernelkit-bench" ]; then
  step cold_start timeout 300 "$G/kernelkit-bench" --only-bundles --backend cuda --json "$OUT/bundles.json"
fi
# `kernelkit precompile` of 16 CUDA specs on an empty store, beside each
# spec precompiled alone (a process each, on an empty store of its own).
precompile_cuda() {
  local d i
  d=$(mktemp -d)
  for i in $(seq 0 15); do
    printf '{"name": "pre_%d", "inputs": [["a", "float32", [64]]], "outputs": [["out", "float32", [64]]], "source": "uint i = thread_position_in_grid.x; out[i] = a[i] * %d.0f + %d.0f;"}\n' \
      "$i" "$i" "$RANDOM" > "$d/pre_$i.json"
  done
  # Beside the CLI's own figure (from the start of the compiles), the
  # whole process's wall time (the device's open included).
  local t0 t1
  for i in $(seq 0 15); do
    t0=$(date +%s.%N)
    KERNELKIT_CACHE=disk KERNELKIT_CACHE_DIR="$d/one_$i" "$G/kernelkit" precompile --device cuda "$d/pre_$i.json" | tail -n1 | sed "s/^/alone $i: /"
    t1=$(date +%s.%N)
    echo "alone $i: process wall $(awk "BEGIN{printf \"%.3f\", $t1 - $t0}") s"
  done
  # Three turns of the 16 together: workers started all at the first
  # compile (the Python package's default) and on demand (the library's),
  # each on an empty store, so the process walls compare the two ways to
  # start them.
  local turn how
  for turn in 1 2 3; do
    for how in first demand; do
      t0=$(date +%s.%N)
      KERNELKIT_START_WORKERS=$how KERNELKIT_CACHE=disk KERNELKIT_CACHE_DIR="$d/all_${how}_$turn" \
        "$G/kernelkit" precompile --device cuda "$d"/pre_*.json | tail -n1 | sed "s/^/all 16 ($how): /"
      t1=$(date +%s.%N)
      echo "all 16 ($how): process wall $(awk "BEGIN{printf \"%.3f\", $t1 - $t0}") s"
    done
  done
  rm -rf "$d"
}
if "$G/kernelkit" --help 2>/dev/null | grep -q precompile; then
  step precompile_cuda precompile_cuda
fi
# The fleet tier (issue 23): remote_hit_ms beside warm_start_ms (a redis-server
# on the PATH is started for it; without one the figure is left out, with a
# note), then 16 processes x 16 new kernels with one Redis, and the same with
# the Redis stopped against none configured.
if [ -x "$G/kernelkit-bench" ]; then
  step fleet_starts timeout 300 "$G/kernelkit-bench" --backend cuda --only-starts --json "$OUT/fleet-starts.json"
  if command -v redis-server >/dev/null && [ -f "$G/fleet-check.sh" ]; then
    step fleet_check env KK_CLI="$G/kernelkit" timeout 900 bash "$G/fleet-check.sh" cuda 2
  elif [ -z "${KK_STEPS:-}" ]; then
    status+=("fleet_check: no redis-server on the PATH")
  fi
fi

# Issue 45: the debugging tools on the GPU. NVTX ranges recorded by the
# test tool (libkk_nvtx_record.so, built by gpu-check.sh), printf from a
# Metal body, compile errors at the body's line (NVRTC), the compiled
# function's own launch limits; then NVTX's added time per launch.
i45_nvtx() {
  local rc=0
  KERNELKIT_TEST_NVTX_TOOL="$PWD/$G/libkk_nvtx_record.so" KERNELKIT_CACHE=memory \
    "$G/debug-tests" cuda_ standin:: --test-threads=1 --nocapture || rc=1
  KERNELKIT_NVTX=1 NVTX_INJECTION64_PATH="$PWD/$G/libkk_nvtx_record.so" KERNELKIT_CACHE=memory \
    "$G/nvtx_overhead" cuda 200000 7 || rc=1
  return $rc
}
step i45_nvtx i45_nvtx
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck over a
# subset of the behavioural suite (the CUDA tests that check results), the
# real-kernel corpus (every `kernelkit run` child followed; the store the
# corpus_cuda step warmed spares the compiles) and a short demo. Exact-size
# allocations (KERNELKIT_CUDA_ALLOC=exact) so that an overrun leaves its
# block; compiles in-process (no worker process to follow). Prints each
# run's error count; initcheck's are reported, not required (MLX lets a
# kernel leave parts of an output unwritten). Skips, saying why, where the
# tool is missing or refuses the device.
i45_sanitizer() {
  local cs="$CUDA_HOME/bin/compute-sanitizer" tool target log n rc=0 t0
  [ -x "$cs" ] || cs=$(command -v compute-sanitizer || true)
  [ -n "$cs" ] && [ -x "$cs" ] || { echo "i45_sanitizer: skipped: no compute-sanitizer in $CUDA_HOME/bin or on the PATH"; return 0; }
  # Line information: reports name the body's file and line (NAME.body:N).
  export KERNELKIT_CUDA_ALLOC=exact KERNELKIT_COMPILE_WORKERS=0 KERNELKIT_NVRTC_FLAGS=-lineinfo
  log="$LOGS/sanitizer_probe.log"
  timeout 120 "$cs" --tool memcheck "$G/kernelkit" run --device cuda examples/specs/basic.json >"$log" 2>&1
  if ! grep -q "ERROR SUMMARY" "$log"; then
    echo "i45_sanitizer: skipped: compute-sanitizer refuses this device or process:"
    head -n 20 "$log"
    return 0
  fi
  local suite=(cuda::strided_views cuda::every_dtype cuda::uneven_3d_grid cuda::init_value_with_atomic
               cuda::scalar_and_small_inputs cuda::a_rebindable_launch_runs cuda::concurrent_distinct)
  for tool in memcheck racecheck synccheck initcheck; do
    for target in suite corpus demo; do
      log="$LOGS/sanitizer_${tool}_$target.log"
      t0=$SECONDS
      case $target in
        suite) KERNELKIT_CACHE=memory timeout 50 "$cs" --tool "$tool" --print-limit 20 \
                 "$G/behaviour-tests" "${suite[@]}" --test-threads=1 >"$log" 2>&1 ;;
        corpus) KERNELKIT_TEST_BIN="$G/kernelkit" KERNELKIT_TEST_DEVICE=cuda \
                 KERNELKIT_CORPUS_TEXTS="$G/corpus-texts" KERNELKIT_CORPUS_TIMEOUT=60 KERNELKIT_CORPUS_JOBS=8 \
                 KERNELKIT_CORPUS_RECORD="$LOGS/sanitizer_${tool}_corpus_seen.txt" \
                 timeout 70 "$cs" --tool "$tool" --target-processes all --print-limit 20 \
                 "$G/corpus-tests" real_kernels --nocapture >"$log" 2>&1 ;;
        demo) timeout 30 "$cs" --tool "$tool" --print-limit 20 \
                 "$G/kernelkit" demo --device cuda --threads 4 --rounds 2 >"$log" 2>&1 ;;
      esac
      local status=$?
      # One summary per sanitized process: the sum of their errors.
      # (racecheck words its summary "RACECHECK SUMMARY: N hazards
      # displayed (E errors, W warnings)".)
      n=$(grep -hoE "(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazards displayed \([0-9]+ error)" "$log" |
        grep -oE "[0-9]+ error" | awk '{s += $1} END {print s + 0}')
      local note=""
      [ "$status" = 124 ] && note=" (timed out)"
      grep -qE "(ERROR|RACECHECK) SUMMARY" "$log" || note="$note (no summary: see $(basename "$log"))"
      echo "sanitizer.$tool.$target = $n errors, $((SECONDS - t0)) s, rc $status$note"
      if [ "$tool" != initcheck ] && [ "$n" != 0 ]; then
        rc=1
        grep -m 12 -E "^========= (Invalid|Race|Barrier|Uninitialized|Program hit|    at |Error)" "$log"
      fi
    done
  done
  return $rc
}
step i45_sanitizer i45_sanitizer
# Autotuning (issue 44): the CUDA tests (event timing, out= written once,
# a tuned key under capture), the bench figures (a warm tuned call beside
# the same call untuned; 16 configurations of a ~10 us kernel tuned,
# compiles excluded), `kernelkit tune` / `precompile --tune` on CUDA, and
# the quality suite (8 kernels x 3 shapes against exhaustive timing, beside
# Triton's @autotune).
if [ -x "$G/tune-tests" ]; then
  step i44_tune_tests "$G/tune-tests" --test-threads=1 --nocapture
fi
# The tiers on the GPU: a second process reads the record from the disk
# store; 16 processes on 16 fresh disks sharing one Redis (carried, see
# above) tune one new kernel once.
if [ -x "$G/tune-tiers" ]; then
  step i44_tune_tiers env KK_TUNE_BACKEND=cuda "$G/tune-tiers" --test-threads=1 --nocapture
fi
# The bench step: the Rust figures (when kernelkit-bench was sent), then
# the Python tuned call beside the same call untuned (bench/tune_call.py:
# torch tensors on CUDA and NumPy on the CPU, alternating, medians; the
# target is a warm tuned call within 0.1 us of the untuned one; needs the
# wheel).
i44_tune_bench() {
  local rc=0
  if [ -x "$G/kernelkit-bench" ]; then
    timeout 120 "$G/kernelkit-bench" --only-tune --backend cuda --json "$OUT/tune.json" || rc=$?
  fi
  if [ -f "$G/tune_call.py" ]; then
    python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
      KERNELKIT_CACHE=memory timeout 200 python3 "$G/tune_call.py" --rounds 200 --batch 2000 \
        --json "$OUT/i44_tune_call.json" || rc=$?
  fi
  return $rc
}
step i44_tune_bench i44_tune_bench
i44_cli() {
  local d
  d=$(mktemp -d)
  printf '{"name": "tiled_scale", "inputs": [["inp", "float32", [4194304]]], "outputs": [["out", "float32", [4194304]]], "source": "uint base = thread_position_in_grid.x * TILE; for (int k = 0; k < TILE; k++) { uint i = base + k; if (i < inp_shape[0]) out[i] = inp[i] * 3.0f; }", "grid": [4194304, 1, 1]}\n' > "$d/spec.json"
  printf '[{"threadgroup": [128], "template": {"TILE": 1}}, {"threadgroup": [256], "template": {"TILE": 1}}, {"threadgroup": [256], "template": {"TILE": 4}, "grid": [1048576]}, {"threadgroup": [512], "template": {"TILE": 2}, "grid": [2097152]}]\n' > "$d/spec.configs.json"
  KERNELKIT_CACHE=disk KERNELKIT_CACHE_DIR="$d/store" "$G/kernelkit" precompile --tune --device cuda "$d/spec.json" &&
    KERNELKIT_CACHE=disk KERNELKIT_CACHE_DIR="$d/store" "$G/kernelkit" tune "$d/spec.json" --configs "$d/spec.configs.json" --device cuda
  local rc=$?
  rm -rf "$d"
  return $rc
}
if "$G/kernelkit" --help 2>/dev/null | grep -q "^  tune"; then
  step i44_cli i44_cli
fi
i44_quality() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory KERNELKIT_LOG=kernelkit::kernel::tune=debug timeout 170 \
      python3 "$G/autotune_quality.py" --json "$OUT/autotune_quality.json" &&
    KERNELKIT_CACHE=memory timeout 170 python3 "$G/autotune_quality.py" --reference loop \
      --json "$OUT/autotune_quality_loop.json"
}
if [ -f "$G/autotune_quality.py" ]; then
  step i44_quality i44_quality
fi
# Timing methods side by side, and the output's placement (what the
# quality reference averages over): tune_placement.py's docstring.
i44_placement() {
  python3 -m pip install --quiet --no-deps --force-reinstall "$G"/wheels/kernelkit-*.whl &&
    KERNELKIT_CACHE=memory KERNELKIT_LOG=kernelkit::kernel::tune=debug timeout 200 \
      python3 "$G/tune_placement.py"
}
if [ -f "$G/tune_placement.py" ]; then
  step i44_placement i44_placement
fi

echo
echo "===== SUMMARY ====="
printf '%s\n' "${status[@]}"
grep -h "^test result" "$LOGS/tests.log" "$LOGS/unit.log" 2>/dev/null
grep -h "^cache:" "$LOGS/demo.log" 2>/dev/null
grep -hE "^(dispatch\.(raw_us|warm_us|without_memo_us|prepared_run_us|host_hit_us|ratio)|bandwidth\.|cold\.(nvrtc_ms|kernelkit_ms|ratio)|parallel_cold\.(wall|mean)|cupy\.)" "$LOGS/perf.log" "$LOGS/baselines.log" 2>/dev/null
d2d=$(sed -n 's/^cupy.d2d_copy_tbs = //p' "$LOGS/baselines.log" 2>/dev/null)
axpb=$(sed -n 's/^bandwidth.axpb_tbs = //p' "$LOGS/perf.log" 2>/dev/null)
if [ -n "$d2d" ] && [ -n "$axpb" ]; then
  python3 -c "print(f'bandwidth.ratio_to_d2d_copy = {$axpb/$d2d:.3f} (target >= 0.85)')"
fi
echo "allocator=pool only: $(grep -h '^dispatch.warm_us =' "$LOGS/perf_pool.log" 2>/dev/null)"
grep -h "^SUMMARY" "$LOGS/perf.log" 2>/dev/null
grep -h "ns per \|^probe\." "$LOGS/calib.log" 2>/dev/null
grep -h "^cuda_perf" "$LOGS/ab.log" 2>/dev/null
grep -h "^kernelkit" "$LOGS/ab_bench.log" 2>/dev/null
grep -h "^parallel\.\(first_compile_ms\|n[0-9]*\.speedup\)" "$LOGS/parallel.log" 2>/dev/null
echo "workers off by KERNELKIT_COMPILE_WORKERS=0: $(grep -h '^SUMMARY' "$LOGS/parallel_off.log" 2>/dev/null)"
grep -h "^SUMMARY" "$LOGS/parallel.log" 2>/dev/null
grep -h "^test result" "$LOGS/behaviour.log" "$LOGS/fault.log" "$LOGS/fault_default.log" "$LOGS/lifecycle.log" \
  "$LOGS/run_cuda.log" "$LOGS/views_cuda.log" "$LOGS/compat.log" "$LOGS/timeout_lib.log" "$LOGS/timeout_cuda.log" "$LOGS/capture.log" 2>/dev/null
grep -h "^corpus totals" "$LOGS/corpus_cuda.log" 2>/dev/null
grep -h "^golden_cuda" "$LOGS/golden_cuda.log" 2>/dev/null
grep -h "^nvtx\.\|^test result" "$LOGS/i45_nvtx.log" 2>/dev/null
grep -h "^sanitizer\.\|^i45_sanitizer" "$LOGS/i45_sanitizer.log" 2>/dev/null
grep -hE "^test result|us, candle unfused|max \|fused" "$LOGS/candle.log" 2>/dev/null
grep -h "^cache:" "$LOGS/soak.log" 2>/dev/null
# (-o: libtest prints a test's first line after its name, on one line.)
grep -hoE "(SUMMARY warm|multi_gpu: skipped|repro:|churn:|test result).*" "$LOGS/multi_gpu.log" 2>/dev/null
grep -h "passed\|failed" "$LOGS/python.log" 2>/dev/null | tail -n 2
grep -hE "^((per_version|abi3_py312)\.)?(import|warm|warm_out|warm_alloc|parallel|breakdown|control)\.|^target |^Thread|^Core" "$LOGS/python_bench.log" 2>/dev/null
grep -hE "^(torch_native\.|guards\.|target torch_native)" "$LOGS/torch_native.log" 2>/dev/null
grep -hE "^(first_call|precompile_|import_ms|targets missed)" "$LOGS/cold_start.log" 2>/dev/null
grep -hE "^(alone|all 16)" "$LOGS/precompile_cuda.log" 2>/dev/null
grep -hE "^(import|verify|replay|largest|precompiled|warm)|a batch of" "$LOGS"/i43_nojit*.log 2>/dev/null
cat "$LOGS/i43_fsprobe.log" 2>/dev/null
grep -hE "^(corpus totals|imported)" "$LOGS/i43_corpus_forbid.log" 2>/dev/null
grep -h "^test result" "$LOGS/i44_tune_tests.log" 2>/dev/null
grep -hE "^(sixteen processes|test result)" "$LOGS/i44_tune_tiers.log" 2>/dev/null
grep -hE "^(warm call|tuning |target (gpu|cpu)\.|(gpu|cpu)\.[a-z]+\.(diff|same_route) )" "$LOGS/i44_tune_bench.log" 2>/dev/null
grep -hE "^(chosen:|cache:)" "$LOGS/i44_cli.log" 2>/dev/null
grep -h "^autotune_quality\." "$LOGS/i44_quality.log" 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null
