"""What each form of a grid guard costs a small kernel node, in a captured
loop of 100 launches (issue 17's replay target), measured apart from
kernelkit: every form is the same `y[i] = x[i] + 1` over 4096 floats,
compiled and launched by CuPy `RawKernel` into CuPy graphs, so the launch
path and the graph wrapper are the same for all; only the kernel's code and
parameters differ. Interleaved rounds, medians, ratios to CuPy's usual
`if (i < n)` kernel. The forms: kernelkit's guards before (`guard64`: 64-bit
positions on all three axes; `guard_new*`: 32-bit "threads left from the
block's start", y/z only when the launch is not whole there) and now
(`flag_only`: all of that behind the launch's `kk_partial` word, which is 0
for launches of whole blocks), and controls (`no_guard`, x only, a flag
word unused).

Usage (on a GPU machine with CuPy): python3 guard_forms.py [ROUNDS]
"""
import statistics, sys
import cupy
N, LAUNCHES = 4096, 100
BODY = "unsigned i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i] + 1.0f;"
G64 = """if ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x >= kk_grid.x ||
      (unsigned long long)blockIdx.y * blockDim.y + threadIdx.y >= kk_grid.y ||
      (unsigned long long)blockIdx.z * blockDim.z + threadIdx.z >= kk_grid.z) return;"""
GNEW = """if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x ||
      ((kk_grid.y != gridDim.y * blockDim.y || kk_grid.z != gridDim.z * blockDim.z) &&
       (threadIdx.y >= kk_grid.y - blockIdx.y * blockDim.y ||
        threadIdx.z >= kk_grid.z - blockIdx.z * blockDim.z))) return;"""
GNEW2 = """if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x) return;
  if (kk_grid.y != gridDim.y * blockDim.y || kk_grid.z != gridDim.z * blockDim.z) {
    if (threadIdx.y >= kk_grid.y - blockIdx.y * blockDim.y ||
        threadIdx.z >= kk_grid.z - blockIdx.z * blockDim.z) return;
  }"""
GX = "if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x) return;"
GX32 = "if (blockIdx.x * blockDim.x + threadIdx.x >= kk_grid.x) return;"
GW = """if (threadIdx.x >= kk_grid.x - blockIdx.x * blockDim.x) return;
  if (kk_partial && (threadIdx.y >= kk_grid.y - blockIdx.y * blockDim.y ||
        threadIdx.z >= kk_grid.z - blockIdx.z * blockDim.z)) return;"""
def src(name, guard, extra=""):
    return ("struct kk_u3 { unsigned x, y, z; };\n"
            f'extern "C" __global__ void {name}(const float* x, float* y, unsigned gx, unsigned gy, unsigned gz{extra}) {{\n'
            "  const kk_u3 kk_grid{gx, gy, gz};\n  " + guard + "\n  " + BODY + "\n}\n")
variants = {
    "cupy_int_n": ('extern "C" __global__ void k(const float* x, float* y, int n) {\n'
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] + 1.0f;\n}\n", "k", 1),
    "guard64": (src("k", G64), "k", 3),
    "guard_new": (src("k", GNEW), "k", 3),
    "guard_new_split": (src("k", GNEW2), "k", 3),
    "guard_x_only": (src("k", GX), "k", 3),
    "guard_x32_only": (src("k", GX32), "k", 3),
    "guard_flag": (src("k", GW, ", unsigned kk_partial"), "k", 4),
    "no_guard": (src("k", ""), "k", 3),
    "no_guard_4args": (src("k", "", ", unsigned kk_partial"), "k", 4),
    "flag_only": (src("k", "if (kk_partial) {\n" + GNEW + "\n  }", ", unsigned kk_partial"), "k", 4),
    "flag_only_x": (src("k", "if (kk_partial) {\n" + GX + "\n  }", ", unsigned kk_partial"), "k", 4),
    "flag_in_grid": (src("k", "if (kk_grid.x & 0x80000000u) {\n" + GX + "\n  }"), "k", 3),
}
stream = cupy.cuda.Stream(non_blocking=True)
graphs = {}
for name, (code, fn, nargs) in variants.items():
    raw = cupy.RawKernel(code, fn, options=("--std=c++17",))
    a, b = cupy.zeros(N, dtype=cupy.float32), cupy.zeros(N, dtype=cupy.float32)
    extra = (cupy.int32(N),) if nargs == 1 else (cupy.uint32(N), cupy.uint32(1), cupy.uint32(1)) + ((cupy.uint32(0),) if nargs == 4 else ())
    with stream:
        raw((N // 256,), (256,), (a, b) + extra); stream.synchronize()
        stream.begin_capture()
        s, d = a, b
        for _ in range(LAUNCHES):
            raw((N // 256,), (256,), (s, d) + extra); s, d = d, s
        g = stream.end_capture()
    a.fill(0); cupy.cuda.Device().synchronize(); g.launch(stream); stream.synchronize()
    assert bool((a == LAUNCHES).all()), name
    graphs[name] = g
def timed(g, repeats=50):
    st, en = cupy.cuda.Event(), cupy.cuda.Event()
    cupy.cuda.Device().synchronize(); st.record(stream)
    for _ in range(repeats): g.launch(stream)
    en.record(stream); en.synchronize()
    return cupy.cuda.get_elapsed_time(st, en) * 1e3 / (repeats * LAUNCHES)
times = {n: [] for n in graphs}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 21):
    for n, g in graphs.items(): times[n].append(timed(g))
base = statistics.median(times["cupy_int_n"])
for n, v in times.items():
    m = statistics.median(v)
    print(f"guards.{n}: {m:.4f} us per launch, {m / base:.3f}x cupy_int_n")
