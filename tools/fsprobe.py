"""What a fresh store's batch write (a bundle's import) costs on a filesystem, by
part: the subdirectories, the files, one thread and sixteen (issue 43).
Usage: python3 fsprobe.py [DIR]"""
import os, sys, time, tempfile, secrets
from concurrent.futures import ThreadPoolExecutor
base = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
keys = [secrets.token_hex(16) for _ in range(202)]
data = os.urandom(10000)

def fresh():
    d = tempfile.mkdtemp(dir=base)
    return d

def mk(d, k):
    try:
        os.mkdir(os.path.join(d, k[:2]), 0o700)
    except FileExistsError:
        pass

def create(d, k):
    p = os.path.join(d, k[:2], "." + k + ".x.tmp")
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.write(fd, data)
    os.close(fd)

def both(d, k):
    mk(d, k); create(d, k)

def timed(label, f):
    t = time.perf_counter(); f(); print(f"{label}: {(time.perf_counter() - t) * 1e3:.2f} ms", flush=True)

for rep in range(2):
    d = fresh(); timed("mkdir serial (%d dirs)" % len({k[:2] for k in keys}), lambda: [mk(d, k) for k in keys])
    timed("create serial in made dirs", lambda: [create(d, k) for k in keys])
    d = fresh(); [mk(d, k) for k in keys]
    with ThreadPoolExecutor(16) as ex:
        timed("create 16 threads in made dirs", lambda: list(ex.map(lambda k: create(d, k), keys)))
    d = fresh()
    with ThreadPoolExecutor(16) as ex:
        timed("mkdir+create 16 threads", lambda: list(ex.map(lambda k: both(d, k), keys)))
    d = fresh()
    timed("mkdir+create serial", lambda: [both(d, k) for k in keys])
    t = time.perf_counter(); os.sync(); print(f"sync: {(time.perf_counter() - t) * 1e3:.2f} ms")
