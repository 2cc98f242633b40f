"""Baselines measured with CuPy in the same run as kernelkit's numbers:
the driver's device-to-device copy bandwidth (1 GiB, bytes read + written),
a CuPy RawKernel launch of a trivial kernel (host time per call, enqueue
only), and the same y = a*x + b float4 kernel through RawKernel."""
import time
import cupy as cp

N = 1 << 28  # 1 GiB of float32
stream = cp.cuda.Stream(non_blocking=True)


def timed(fn, iters):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        fn()
    start.record(stream)
    for _ in range(iters):
        fn()
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / iters


with stream:
    x = cp.full(N, 1.5, dtype=cp.float32)
    y = cp.empty_like(x)
    nbytes = x.nbytes

    def d2d():
        cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)

    copies = [2 * nbytes / timed(d2d, 20) / 1e12 for _ in range(3)]
    print(f"cupy.d2d_copy_tbs = {sorted(copies)[1]:.3f}")

    axpb = cp.RawKernel(r'''
    extern "C" __global__ void axpb(const float* x, float a, float b, float* y) {
      unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
      float4 v = reinterpret_cast<const float4*>(x)[i];
      reinterpret_cast<float4*>(y)[i] = make_float4(a*v.x+b, a*v.y+b, a*v.z+b, a*v.w+b);
    }''', 'axpb')
    grid = (N // 4 // 256,)
    run = lambda: axpb(grid, (256,), (x, cp.float32(2.0), cp.float32(0.25), y))
    bws = [2 * nbytes / timed(run, 20) / 1e12 for _ in range(3)]
    print(f"cupy.axpb_rawkernel_tbs = {sorted(bws)[1]:.3f}")
    assert float(y[12345]) == 3.25

    triv = cp.RawKernel(r'''
    extern "C" __global__ void triv(const float* a, float* b) {
      unsigned i = blockIdx.x * blockDim.x + threadIdx.x; b[i] = a[i];
    }''', 'triv')
    a = cp.ones(256, dtype=cp.float32)
    b = cp.empty_like(a)
    for _ in range(200):
        triv((1,), (256,), (a, b))
    stream.synchronize()
    per = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(2000):
            triv((1,), (256,), (a, b))
        per.append((time.perf_counter() - t) / 2000 * 1e6)
        stream.synchronize()
    print(f"cupy.rawkernel_launch_us = {sorted(per)[3]:.3f}")
