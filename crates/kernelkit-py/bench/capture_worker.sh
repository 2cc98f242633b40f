#!/usr/bin/env bash
# A compile worker that records what it is given: run as the package's
# worker program (KERNELKIT_WORKER=.../capture_worker.sh, KK_REAL_WORKER=the
# CLI), it keeps in $KK_CAPTURE (default /tmp/kk-capture) each worker's
# input frames (in.PID), environment, limits and process status, then
# serves through the real worker. burst_anatomy.py --replay replays them.
d=${KK_CAPTURE:-/tmp/kk-capture}
mkdir -p "$d"
env | sort > "$d/env.$$"
ulimit -a > "$d/ulimit.$$"
cat /proc/self/status > "$d/status.$$"
cat /proc/self/cgroup > "$d/cgroup.$$" 2>/dev/null
tee "$d/in.$$" | "$KK_REAL_WORKER" "$@"
