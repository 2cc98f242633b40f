#!/usr/bin/env bash
# Builds, here, everything the GPU machine runs for the CUDA backend, and
# puts it in /work/main/.gpu/ (the device tool sends /work/main's working
# tree; .gpu/ is ignored through .git/info/exclude and travels with
# `carry: [".gpu"]`):
#   kernelkit          the CLI, with the cuda feature (demo, compile workers)
#   bench.tar.xz       kernelkit-bench (crates/kernelkit-bench, cuda feature):
#                      the bench command, packed; gpu-remote.sh unpacks it
#   cuda_perf          the harness that measures the three ratios of issue 4
#   dispatch_loop      a warm dispatch loop (CPU and CUDA), to compare hosts
#   launch_probe       what host work between raw launches costs there
#   multi_gpu          the harness that measures issue 20's targets on two GPUs
#                      (these four: crates/kernelkit-bench/examples)
#   multi-gpu-tests    tests/multi_gpu.rs (two GPUs: the seed's repro across
#                      devices, churn with max 64, unloads racing launches)
#   cuda-tests         tests/cuda.rs (CUDA-specific tests)
#   behaviour-tests    tests/behaviour.rs (the behavioural suite, run for cuda::;
#                      with the soak, the hot path and the bad-input matrix)
#   fault-tests        tests/cuda_fault.rs (faulting kernels; each test its own process)
#   lifecycle-tests    tests/cuda_lifecycle.rs (devices, contexts, limits; alone in a process)
#   timeout-lib-tests  tests/cuda_timeout.rs (a kernel that outlives a wait; its own process)
#   capture-tests      tests/cuda_capture.rs (calls under a raw CUDA graph capture, replays)
#   tune-tests         tests/cuda_tune.rs (autotuning: event timing, out= once, under capture)
#   tune-tiers         tests/tune_tiers.rs, run on GPU 0 (KK_TUNE_BACKEND=cuda): a second
#                      process reads the record; 16 processes, 16 disks, one Redis tune once
#   unload-tests       tests/cuda_unload.rs (unloads wait for fences, not the context;
#                      a global capture on another thread stays valid)
#   compat-tests       tests/compat.rs (the Metal compatibility layer, run for cuda::)
#   timeout-tests      `kernelkit run --timeout` tests, run there with --device cuda
#   run-tests, views-tests  `kernelkit run` tests, run there with --device cuda
#   corpus-tests       tests/corpus.rs (the real-kernel corpus, run for cuda)
#   corpus-texts/      the corpus's published kernel texts (not committed: the
#                      corpus README, "Texts"), found there through
#                      KERNELKIT_CORPUS_TEXTS
#   kernelkit-lib-tests the library's unit tests (NVRTC compiles among them)
#   wheels/            the Python package's cp312-abi3 wheel (scripts/wheels.sh);
#   nvrtc-cu12.tar.xz  NVIDIA's NVRTC 12.8 (libnvrtc.so.12, builtins), for the nvrtc12 step
#   nojit-bundle/      issue 43: the nojit harness's 100 variants recorded and precompiled
#                      here (NVRTC 13.0 wheel, no GPU) for sm_80,sm_90a + PTX, signed; the
#                      public key (the i43_nojit steps; `nojit` travels in rust.tar.xz), and
#                      cpu.kkb, the same variants for the CPU (x86-64-v2; i43_nojit_cpu)
#   wheels-per-version/ a wheel per CPython of KK_PER_VERSION_PYTHONS (default 3.12; no abi3) and
#   wheels-abi3-py312/ an abi3 wheel for 3.12+, for python_bench's second
#                      and third runs (KK_PER_VERSION_WHEELS=0: none); and
#   python-tests/      its pytest suite, run there on the CPU and on CUDA
#                      (torch and CuPy tests included: the machine has both)
#   compare.py         the Python package's benchmark against raw launches,
#                      CuPy and Triton (crates/kernelkit-py/bench)
#   nvrtc_control.py   the cold burst's control: 16 NVRTC processes at once vs one
#                      (and the other scripts of crates/kernelkit-py/bench:
#                      mlx_cold.py, torch_native.py, overhead.py)
#   candle.tar.xz      candle_fused (examples/candle_fused.rs on candle's CUDA
#                      tensors) and candle-tests (tests/candle.rs), built with
#                      candle's CUDA backend by scripts/candle-cuda.sh, which
#                      needs nvcc: NVIDIA's PyPI wheels, fetched once by
#                      `scripts/candle-cuda.sh setup` (skipped, with a message,
#                      until then); unpacked there
#   gpu-remote.sh, gpu_baselines.py   what runs there
# Binaries are stripped of debug info, and all but the CLI travel packed in
# rust.tar.xz (gpu-remote.sh unpacks it), to stay under the 64 MiB limit.
# Then it prints the one `run` call to make.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${KK_GPU_DIR:-/work/main/.gpu}
MAIN=$(dirname "$DEST")

cargo build --release -p kernelkit-cli --features cuda
cargo build --release -p kernelkit-bench --features cuda --bin kernelkit-bench \
  --example cuda_perf --example dispatch_loop --example launch_probe --example multi_gpu \
  --example nvtx_overhead --example nojit
tests_json=$(cargo test --release -p kernelkit-rs --features cuda --no-run \
  --message-format=json 2>/dev/null)
exe() { # $1: target kind, $2: target name
  jq -r --arg k "$1" --arg n "$2" \
    'select(.reason=="compiler-artifact" and .target.name==$n
            and (.target.kind|index($k)) and .profile.test and .executable)
     | .executable' <<<"$tests_json" | tail -n1
}
cli_json=$(cargo test --release -p kernelkit-cli --features cuda --no-run \
  --message-format=json 2>/dev/null)
cli_exe() { # $1: test target name
  jq -r --arg n "$1" \
    'select(.reason=="compiler-artifact" and .target.name==$n and .profile.test and .executable)
     | .executable' <<<"$cli_json" | tail -n1
}
run_tests=$(cli_exe run_known)
views_tests=$(cli_exe views)
corpus_tests=$(cli_exe corpus)
timeout_tests=$(cli_exe timeout)
cuda_tests=$(exe test cuda)
lib_tests=$(exe lib kernelkit)
behaviour_tests=$(exe test behaviour)
fault_tests=$(exe test cuda_fault)
lifecycle_tests=$(exe test cuda_lifecycle)
timeout_lib_tests=$(exe test cuda_timeout)
capture_tests=$(exe test cuda_capture)
unload_tests=$(exe test cuda_unload)
compat_tests=$(exe test compat)
multi_gpu_tests=$(exe test multi_gpu)
planted_tests=$(exe test bounds_planted)
golden_checked_tests=$(exe test bounds_golden)
debug_tests=$(exe test debug_tools)
tune_tests=$(exe test cuda_tune)
tune_tiers_tests=$(exe test tune_tiers)
# candle's CUDA tensors: its own target directory and RUSTFLAGS (see
# scripts/candle-cuda.sh); the first build compiles candle's kernels.
candle_tests=
if bash scripts/candle-cuda.sh nvcc-found; then
  bash scripts/candle-cuda.sh cargo build --release -p kernelkit-rs --features candle,cuda --example candle_fused
  candle_tests=$(bash scripts/candle-cuda.sh cargo test --release -p kernelkit-rs --features candle,cuda \
    --test candle --no-run --message-format=json 2>/dev/null |
    jq -r 'select(.reason=="compiler-artifact" and .target.name=="candle" and .profile.test and .executable)
           | .executable' | tail -n1)
  [ -x "$candle_tests" ] || { echo "candle test executable not found" >&2; exit 1; }
else
  echo "candle on CUDA: skipped (no nvcc here; scripts/candle-cuda.sh setup fetches it from PyPI)" >&2
fi
for t in "$cuda_tests" "$lib_tests" "$behaviour_tests" "$fault_tests" "$lifecycle_tests" "$run_tests" \
         "$views_tests" "$corpus_tests" "$timeout_lib_tests" "$compat_tests" "$timeout_tests" \
         "$capture_tests" "$unload_tests" "$multi_gpu_tests" "$planted_tests" "$golden_checked_tests" \
         "$debug_tests" "$tune_tests" "$tune_tiers_tests"; do
  [ -x "$t" ] || { echo "test executables not found" >&2; exit 1; }
done

mkdir -p "$DEST"
exclude=$(git -C "$MAIN" rev-parse --git-path info/exclude)
case "$exclude" in /*) ;; *) exclude="$MAIN/$exclude" ;; esac
grep -qxF '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
rm -rf "$DEST/corpus-texts" "$DEST/wheels" "$DEST/wheels-per-version" "$DEST/wheels-abi3-py312" "$DEST/python-tests" "$DEST/redis"
find "$DEST" -maxdepth 1 -type f -delete
strip --strip-debug -o "$DEST/kernelkit" target/release/kernelkit
# The bench command travels packed on its own (about a fifth of its size),
# beside the CLI in every call whatever KK_GPU_PARTS says.
rm -f "$DEST/bench.tar.xz"
mkdir -p "$DEST/bench"
strip --strip-debug -o "$DEST/bench/kernelkit-bench" target/release/kernelkit-bench
tar cf - -C "$DEST/bench" kernelkit-bench | xz -9 -T2 >"$DEST/bench.tar.xz"
rm -rf "$DEST/bench"
strip --strip-debug -o "$DEST/cuda_perf" target/release/examples/cuda_perf
strip --strip-debug -o "$DEST/dispatch_loop" target/release/examples/dispatch_loop
strip --strip-debug -o "$DEST/launch_probe" target/release/examples/launch_probe
strip --strip-debug -o "$DEST/multi_gpu" target/release/examples/multi_gpu
strip --strip-debug -o "$DEST/nvtx_overhead" target/release/examples/nvtx_overhead
strip --strip-debug -o "$DEST/nojit" target/release/examples/nojit
strip --strip-debug -o "$DEST/multi-gpu-tests" "$multi_gpu_tests"
strip --strip-debug -o "$DEST/cuda-tests" "$cuda_tests"
strip --strip-debug -o "$DEST/kernelkit-lib-tests" "$lib_tests"
strip --strip-debug -o "$DEST/behaviour-tests" "$behaviour_tests"
strip --strip-debug -o "$DEST/fault-tests" "$fault_tests"
strip --strip-debug -o "$DEST/lifecycle-tests" "$lifecycle_tests"
strip --strip-debug -o "$DEST/run-tests" "$run_tests"
strip --strip-debug -o "$DEST/views-tests" "$views_tests"
strip --strip-debug -o "$DEST/corpus-tests" "$corpus_tests"
strip --strip-debug -o "$DEST/timeout-lib-tests" "$timeout_lib_tests"
strip --strip-debug -o "$DEST/capture-tests" "$capture_tests"
strip --strip-debug -o "$DEST/unload-tests" "$unload_tests"
strip --strip-debug -o "$DEST/planted-tests" "$planted_tests"
strip --strip-debug -o "$DEST/golden-checked-tests" "$golden_checked_tests"
strip --strip-debug -o "$DEST/compat-tests" "$compat_tests"
strip --strip-debug -o "$DEST/timeout-tests" "$timeout_tests"
strip --strip-debug -o "$DEST/debug-tests" "$debug_tests"
# The NVTX tool of the NVTX tests and of nvtx_overhead (issue 45), built
# here: the GPU machine may have no C compiler.
cc -shared -fPIC -O2 -o "$DEST/libkk_nvtx_record.so" crates/kernelkit/tests/nvtx_tool/record.c -lpthread
strip --strip-debug -o "$DEST/tune-tests" "$tune_tests"
strip --strip-debug -o "$DEST/tune-tiers" "$tune_tiers_tests"
if [ -n "$candle_tests" ]; then
  # One xz archive: the two binaries share most of their bytes (candle's
  # kernels, kernelkit), which xz's window finds (about 6 MB for both,
  # against 22 MB gzipped apart).
  candle_dir=${KK_CANDLE_TARGET:-target/candle-cuda}
  mkdir -p "$DEST/candle"
  strip --strip-debug -o "$DEST/candle/candle_fused" "$candle_dir/release/examples/candle_fused"
  strip --strip-debug -o "$DEST/candle/candle-tests" "$candle_tests"
  tar cf - -C "$DEST/candle" candle_fused candle-tests | xz -9 -T2 >"$DEST/candle.tar.xz"
  rm -rf "$DEST/candle"
  du -h "$DEST/candle.tar.xz"
fi
rm -rf "$DEST/corpus-texts"
for text in crates/kernelkit-cli/tests/corpus/*/source.metal crates/kernelkit-cli/tests/corpus/*/header.metal; do
  [ -f "$text" ] || continue
  entry=$(basename "$(dirname "$text")")
  mkdir -p "$DEST/corpus-texts/$entry"
  cp "$text" "$DEST/corpus-texts/$entry/"
done
# KK_BASE=path/to/an/older/cuda_perf: sent as cuda_perf_base, for the `ab`
# step (older and newer dispatch measured in turns on one machine).
# KK_MID=another: sent as cuda_perf_mid, measured in the same turns.
if [ -n "${KK_BASE:-}" ]; then strip --strip-debug -o "$DEST/cuda_perf_base" "$KK_BASE"; fi
if [ -n "${KK_MID:-}" ]; then strip --strip-debug -o "$DEST/cuda_perf_mid" "$KK_MID"; fi
# KK_BASE_CLI=path/to/an/older/kernelkit-bench (or an older kernelkit CLI with
# its `bench` subcommand): sent as kernelkit_base, for `ab_bench`.
if [ -n "${KK_BASE_CLI:-}" ]; then strip --strip-debug -o "$DEST/kernelkit_base" "$KK_BASE_CLI"; fi
# The Rust executables other than the CLI, packed into one xz archive that
# gpu-remote.sh unpacks where it finds it: about 75 MiB apart, 6 MiB packed
# (they share most of their bytes, kernelkit itself, which xz's window finds).
rust_exes=()
for f in "$DEST"/*; do
  [ -f "$f" ] && [ -x "$f" ] && [ "$(basename "$f")" != kernelkit ] && [[ $f != *.sh && $f != *.py ]] &&
    rust_exes+=("$(basename "$f")")
done
rm -f "$DEST/rust.tar.xz"
tar cf - -C "$DEST" "${rust_exes[@]}" | xz -9 -T2 >"$DEST/rust.tar.xz"
(cd "$DEST" && rm -f "${rust_exes[@]}")
# KK_BASE_WHEEL=path/to/an/older/kernelkit-*.whl: sent in wheels-old/, for `ab_python`.
rm -rf "$DEST/wheels-old"
if [ -n "${KK_BASE_WHEEL:-}" ]; then mkdir -p "$DEST/wheels-old" && cp "$KK_BASE_WHEEL" "$DEST/wheels-old/"; fi
# The Python package: the cp312-abi3 wheel of scripts/wheels.sh (stripped,
# manylinux_2_28: the one CI installs and tests; the GPU machine's python3
# is 3.12), and its tests.
rm -rf "$DEST/wheels" "$DEST/wheels-per-version" "$DEST/wheels-abi3-py312" "$DEST/python-tests"
WHEEL_PYTHONS=3.12 scripts/wheels.sh
mkdir -p "$DEST/wheels" && cp dist/kernelkit-*-cp312-abi3-*_x86_64.whl "$DEST/wheels/"
# NVRTC 12 for the `nvrtc12` step: 12.8 (the oldest that compiles the
# generated prelude), from NVIDIA's wheel (88 MB, over the carry limit):
# its libnvrtc.so.12 and builtins only, packed (31 MB). KK_NVRTC12=0: none.
rm -rf "$DEST/nvrtc-cu12" "$DEST/nvrtc-cu12.tar.xz"
if [ "${KK_NVRTC12:-1}" != 0 ]; then
  nv=target/nvrtc-wheels/12.8.93
  if [ ! -f "$nv/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
    python3 -m pip download --quiet --no-deps -d target/nvrtc-wheels/wheels nvidia-cuda-nvrtc-cu12==12.8.93
    python3 -m zipfile -e target/nvrtc-wheels/wheels/nvidia_cuda_nvrtc_cu12-12.8.93-*.whl "$nv"
  fi
  # CUDA 12's headers too (NVIDIA's cu12 runtime wheel), which NVRTC 12
  # compiles against there (found under site/, KERNELKIT_PYTHON_SITE),
  # since that machine's toolkit headers are CUDA 13's.
  rt=target/nvrtc-wheels/runtime-12.8.90
  if [ ! -f "$rt/nvidia/cuda_runtime/include/cuda_fp16.h" ]; then
    python3 -m pip download --quiet --no-deps -d target/nvrtc-wheels/wheels nvidia-cuda-runtime-cu12==12.8.90
    python3 -m zipfile -e target/nvrtc-wheels/wheels/nvidia_cuda_runtime_cu12-12.8.90-*.whl "$rt"
  fi
  cc=target/nvrtc-wheels/cccl-12.8.90
  if [ ! -f "$cc/nvidia/cuda_cccl/include/nv/target" ]; then
    python3 -m pip download --quiet --no-deps -d target/nvrtc-wheels/wheels nvidia-cuda-cccl-cu12==12.8.90
    python3 -m zipfile -e target/nvrtc-wheels/wheels/nvidia_cuda_cccl_cu12-12.8.90-*.whl "$cc"
  fi
  rm -rf "$nv/site" && mkdir -p "$nv/site/nvidia/cuda_runtime" "$nv/site/nvidia/cuda_cccl"
  cp -r "$rt/nvidia/cuda_runtime/include" "$nv/site/nvidia/cuda_runtime/"
  cp -r "$cc/nvidia/cuda_cccl/include" "$nv/site/nvidia/cuda_cccl/"
  cp "$nv/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" "$nv/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.8" "$nv/"
  tar cf - -C "$nv" libnvrtc.so.12 libnvrtc-builtins.so.12.8 site |
    xz -6 -T2 >"$DEST/nvrtc-cu12.tar.xz"
fi
# Issue 43 (the i43_nojit steps): the 100-variant workload of
# crates/kernelkit-bench/examples/nojit.rs recorded HERE (on the CPU),
# precompiled HERE with NVIDIA's NVRTC 13.0 wheel and its CUDA 13.0 headers
# (runtime and CCCL wheels), no GPU, for sm_80,sm_90a with PTX, into a
# bundle signed by a key made here (the private key stays in target/); the
# GPU imports it and replays it with its own toolkit (/usr/local/cuda).
w13=target/nvrtc-wheels/site13
if [ ! -f "$w13/nvidia/cu13/lib/libnvrtc.so.13" ] || [ ! -d "$w13/nvidia/cu13/include/cccl" ]; then
  python3 -m pip download --quiet --no-deps -d target/nvrtc-wheels/wheels \
    nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  for whl in nvidia_cuda_nvrtc-13.0.88 nvidia_cuda_runtime-13.0.96 nvidia_cuda_cccl-13.0.85; do
    python3 -m zipfile -e target/nvrtc-wheels/wheels/"$whl"-*.whl "$w13"
  done
fi
rm -rf "$DEST/nojit-bundle" && mkdir -p "$DEST/nojit-bundle"
rm -f target/nojit-ci.key target/nojit-ci.key.pub
target/release/kernelkit cache keygen --out target/nojit-ci.key --comment gpu-check >/dev/null
cp target/nojit-ci.key.pub "$DEST/nojit-bundle/ci.key.pub"
KERNELKIT_CACHE=memory target/release/examples/nojit record --manifest "$DEST/nojit-bundle/generated.jsonl"
# The corpus's real kernels join the workload: each entry run here on the
# CPU by `kernelkit run` (plain and bounds-checked), recorded by the same
# manifest mechanism (a manifest does not depend on its backend); the GPU
# replays the corpus from the bundle with compiling forbidden
# (i43_corpus_forbid).
rm -f "$DEST/nojit-bundle/corpus.jsonl"
if ! ls crates/kernelkit-cli/tests/corpus/*/source.metal >/dev/null 2>&1; then
  echo "the corpus texts are missing (a fresh checkout): fetch the repositories the corpus README" \
    "names and run python3 tools/corpus_gen.py --extract /work/.mirror" >&2
  exit 1
fi
KERNELKIT_RECORD="$DEST/nojit-bundle/corpus.jsonl" KERNELKIT_TEST_BIN="$PWD/target/release/kernelkit" \
  KERNELKIT_TEST_DEVICE=cpu KERNELKIT_CORPUS_REQUIRE_TEXTS=1 "$corpus_tests" real_kernels >/dev/null
cat "$DEST/nojit-bundle/generated.jsonl" "$DEST/nojit-bundle/corpus.jsonl" >"$DEST/nojit-bundle/manifest.jsonl"
echo "nojit workload: $(wc -l <"$DEST/nojit-bundle/generated.jsonl") generated variants, $(wc -l <"$DEST/nojit-bundle/corpus.jsonl") of the corpus"
# Two bundles: the 100 generated variants (the timed replay and the import
# time of a 100-variant bundle: i43_nojit), and the whole workload, the
# corpus's kernels with them (i43_corpus_forbid).
for b in nojit:generated workload:manifest; do
  KERNELKIT_NVRTC_PATH="$PWD/$w13/nvidia/cu13/lib/libnvrtc.so.13" KERNELKIT_PYTHON_SITE="$PWD/$w13" \
    CUDA_HOME=/nonexistent CUDA_PATH=/nonexistent \
    target/release/kernelkit precompile --manifest "$DEST/nojit-bundle/${b#*:}.jsonl" \
      --arch sm_80,sm_90a --ptx --out "$DEST/nojit-bundle/${b%%:*}.kkb" \
      --signing-key target/nojit-ci.key | tee "$DEST/nojit-bundle/precompile-${b%%:*}.txt"
  target/release/kernelkit cache inspect "$DEST/nojit-bundle/${b%%:*}.kkb" | tail -n1
done
cp "$DEST/nojit-bundle/precompile-nojit.txt" "$DEST/nojit-bundle/precompile.txt"
# The same 100 variants for the CPU (x86-64-v2), signed by the same key: the
# GPU machine's i43_nojit step imports it too, so that the import's cost per
# file is seen on that filesystem for a bundle of another backend.
target/release/kernelkit precompile --manifest "$DEST/nojit-bundle/generated.jsonl" --device cpu \
  --target x86-64-v2 --out "$DEST/nojit-bundle/cpu.kkb" --signing-key target/nojit-ci.key
# Per-version wheels (no abi3: PyO3 calls methods through vectorcall), for
# the python_bench step's second run beside the abi3 wheel: one for each
# CPython of KK_PER_VERSION_PYTHONS found here (default 3.12, the GPU
# machine's python3; each is a release build of the extension);
# KK_PER_VERSION_WHEELS=0 skips them.
if [ "${KK_PER_VERSION_WHEELS:-1}" != 0 ]; then
  # pythonX.Y that runs: on PATH, else one of pyenv's installed versions
  # (pyenv's shims answer only for the versions it has activated).
  find_python() {
    local py
    for py in $(command -v "python$1") "$(pyenv root 2>/dev/null)"/versions/"$1".*/bin/"python$1"; do
      [ -x "$py" ] && "$py" -c '' 2>/dev/null && { echo "$py"; return; }
    done
  }
  for v in ${KK_PER_VERSION_PYTHONS:-3.12}; do
    py=$(find_python "$v")
    [ -n "$py" ] || { echo "no python$v here: no per-version wheel for it"; continue; }
    python3 -m maturin build --release --strip --quiet --no-default-features --features cuda \
      -i "$py" --out "$DEST/wheels-per-version" || echo "no per-version wheel for $v"
  done
  # And the abi3 wheel 3.12 builds (the package's abi3 is at the level of
  # the building Python: the limited API has vectorcall from 3.12).
  py=$(find_python 3.12)
  if [ -n "$py" ]; then
    python3 -m maturin build --release --strip --quiet \
      -i "$py" --out "$DEST/wheels-abi3-py312" || echo "no abi3-py312 wheel"
  fi
fi
cp -r crates/kernelkit-py/tests "$DEST/python-tests"
# Every benchmark and control of the package (compare.py, nvrtc_control.py,
# mlx_cold.py, torch_native.py, overhead.py): BENCHMARKS.md runs them from here.
cp crates/kernelkit-py/bench/*.py "$DEST/"
cp crates/kernelkit-py/bench/*.cc "$DEST/"
rm -rf "$DEST/python-tests/__pycache__"
cp scripts/gpu-remote.sh scripts/gpu_baselines.py tools/fsprobe.py "$DEST/"
[ -f scripts/bench-gpu-baselines.py ] && cp scripts/bench-gpu-baselines.py "$DEST/"
[ -f scripts/fleet-check.sh ] && cp scripts/fleet-check.sh "$DEST/"
# The GPU machine has no Redis (and no network): Debian's redis-server and
# redis-cli from here, with the libraries they need; gpu-remote.sh puts
# lib/ first on the library path and lib2/ (common ones) last.
rm -rf "$DEST/redis"
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  mkdir -p "$DEST/redis/lib" "$DEST/redis/lib2"
  cp "$(readlink -f "$(command -v redis-server)")" "$DEST/redis/redis-server"
  cp "$(readlink -f "$(command -v redis-cli)")" "$DEST/redis/redis-cli"
  for l in liblzf.so.1 libjemalloc.so.2 libatomic.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$DEST/redis/lib/" 2>/dev/null || true
  done
  for l in libssl.so.3 libcrypto.so.3 libsystemd.so.0 libcap.so.2 libgcrypt.so.20 libgpg-error.so.0 \
           liblz4.so.1 libzstd.so.1 liblzma.so.5; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$DEST/redis/lib2/" 2>/dev/null || true
  done
fi
# The device tool carries at most 64 MiB a call, the working tree included
# (about 5 MiB); all of the above is about 45 MiB, too much beside MLX's
# build (.mlxa/.mlxb, 37 MiB each). KK_GPU_PARTS names the parts kept
# (default all; a part left out is deleted from $DEST):
#   rust    rust.tar.xz (the test executables and examples), candle.tar.xz
#           and the corpus texts
#   python  the wheels and the pytest suite
#   fleet   redis-server and its libraries
# The CLI, the bench command and the scripts always stay (compare.py's
# compile workers are the CLI). A run then names only the steps whose part
# was sent (KK_STEPS).
parts=" ${KK_GPU_PARTS:-rust python fleet} "
[[ $parts == *" rust "* ]] || rm -rf "$DEST/rust.tar.xz" "$DEST/candle.tar.xz" "$DEST/corpus-texts"
[[ $parts == *" python "* ]] ||
  rm -rf "$DEST/wheels" "$DEST/wheels-old" "$DEST/wheels-per-version" "$DEST/wheels-abi3-py312" "$DEST/python-tests"
[[ $parts == *" fleet "* ]] || rm -rf "$DEST/redis"
size_mib=$(du -s --apparent-size -m "$DEST" | cut -f1)
echo "$DEST: $size_mib MiB (parts:$parts)"
if [ "$size_mib" -gt 58 ]; then
  echo "warning: over what one device call carries beside the working tree (64 MiB in all);" \
    "send fewer parts at a time (KK_GPU_PARTS=rust, KK_GPU_PARTS='python fleet', ...)" >&2
fi
echo
echo 'run(command="bash .gpu/gpu-remote.sh", carry=[".gpu"], timeout_s=600)'
