"""kernelkit's in-process cold calls, eight in a row after one, nothing
between (KERNELKIT_COMPILE_WORKERS=0, torch CUDA tensors): the steady cold
call, without the first compiles' warm-up or another thread's compiles
interleaved.  python cold_alone.py LABEL"""
import os, sys, time, uuid, statistics
os.environ["KERNELKIT_COMPILE_WORKERS"] = "0"
import torch, kernelkit as kk
x = torch.ones(1024, device="cuda"); torch.cuda.synchronize()
def once():
    tag = uuid.uuid4().hex
    k = kk.metal_kernel(name="c_" + tag[:8], input_names=["inp"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + 32.0f; /* %s */" % tag)
    t = time.perf_counter()
    k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
once()
v = [once() for _ in range(8)]
print(sys.argv[1], "kernelkit cold call in process, alone: median", round(statistics.median(v), 1), [round(t, 1) for t in v])
