"""Resident memory of the compile workers after three bursts of 16 new
kernels (torch tensors on CUDA), beside this process's: what the
precompiled preludes cost the workers (run with KERNELKIT_NVRTC_PCH=0 and
without).

  KERNELKIT_CACHE=memory python rss.py
"""
import os, time, threading, uuid
import torch, kernelkit as kk
x = torch.ones(1024, device="cuda"); torch.cuda.synchronize()
def call(tag):
    k = kk.metal_kernel(name="r" + tag[:8], input_names=["inp"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 3.0f + %d.0f; /* %s */" % (len(tag) + hash(tag) % 1000, tag))
    k(inputs=[x], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
call(uuid.uuid4().hex); time.sleep(3)
for _ in range(3):
    ts = [threading.Thread(target=call, args=(uuid.uuid4().hex,)) for _ in range(16)]
    [t.start() for t in ts]; [t.join() for t in ts]
torch.cuda.synchronize(); time.sleep(1)
me, rss = os.getpid(), []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            if int(st[1]) == me:
                rss.append(int([l for l in open(f"/proc/{p}/status") if l.startswith("VmRSS")][0].split()[1]) // 1024)
        except Exception:
            pass
own = int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) // 1024
print(f"PCH={os.environ.get('KERNELKIT_NVRTC_PCH', 'default')}: {len(rss)} workers, RSS MB each {sorted(rss)}, sum {sum(rss)}; this process {own} MB")
