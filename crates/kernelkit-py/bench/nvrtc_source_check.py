"""On the GPU: the source kernelkit compiles at run time (captured from
verbose=True) against the CLI's, compiled by ctypes NVRTC in this process,
beside kernelkit's own in-process compile."""
import ctypes, os, sys, tempfile, time, uuid, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["KERNELKIT_COMPILE_WORKERS"] = "0"
import torch, kernelkit as kk
import nvrtc_control as nc
x = torch.ones(1024, device="cuda"); torch.cuda.synchronize()
def new_kernel():
    tag = uuid.uuid4().hex
    return kk.metal_kernel(name="c_" + tag[:8], input_names=["inp"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + 32.0f; /* %s */" % tag), tag
def call(k, verbose=False):
    k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype], verbose=verbose)
    torch.cuda.synchronize()
# Capture the runtime source: fd 1 to a file around a verbose call.
k, tag = new_kernel()
f = tempfile.TemporaryFile(mode="w+b"); sys.stdout.flush(); saved = os.dup(1); os.dup2(f.fileno(), 1)
call(k, verbose=True)
sys.stdout.flush(); os.dup2(saved, 1); f.seek(0)
runtime = f.read().decode(errors="replace")
start = runtime.find("// kernelkit prelude")
runtime = runtime[start:] if start >= 0 else runtime
runtime = runtime.replace(tag, "TAG")
cli = nc.generated_source(sys.argv[1])
print("runtime source bytes", len(runtime), "CLI source bytes", len(cli))
print("includes in runtime:", [l for l in runtime.splitlines() if l.startswith("#include")][:10])
lib = ctypes.CDLL("/usr/local/cuda/lib64/libnvrtc.so.13"); inc = "/usr/local/cuda/include"
def ct(src):
    t = time.perf_counter(); nc.compile_once(lib, inc, src, "sm_90a"); return (time.perf_counter() - t) * 1e3
def kk_once():
    k, _ = new_kernel(); t = time.perf_counter(); call(k); return (time.perf_counter() - t) * 1e3
ct(cli); ct(runtime); kk_once()
a, b, c = [], [], []
for _ in range(6):
    a.append(ct(cli)); b.append(ct(runtime)); c.append(kk_once())
med = lambda v: round(statistics.median(v), 1)
print("ctypes CLI source ms", med(a), [round(v, 1) for v in a])
print("ctypes runtime source ms", med(b), [round(v, 1) for v in b])
print("kernelkit in-process call ms", med(c), [round(v, 1) for v in c])
open(os.path.join(os.environ.get("OUT", "/tmp"), "runtime.cu"), "w").write(runtime)
