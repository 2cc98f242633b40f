#!/usr/bin/env bash
# The fleet tier's targets (issue 23), measured side by side in one run:
#
#   fleet    16 processes (16 "nodes", each with its own empty disk store)
#            start at once and run the same 16 new kernels (`kernelkit demo
#            --threads 16 --salt S`) with a live Redis: total compiles
#            (target: 16; without the fleet tier: 256).
#   none     the same workload (new kernels) with no fleet tier configured.
#   stopped  the same workload with the fleet tier pointing at a Redis that
#            was stopped: every result right, wall time at most 10% over
#            `none`.
#
# `none` and `stopped` alternate ROUNDS times each; the medians are
# compared, of the wall time and of the CPU time (user + system) of the 16
# processes and the compilers they ran: on a shared machine the wall time
# moves with the other work, the CPU time much less. Every demo checks
# every result (a wrong one fails the script).
#
# Usage: scripts/fleet-check.sh [DEVICE] [ROUNDS]   (DEVICE: cpu or cuda;
# default cpu, 2 rounds). KK_CLI names the kernelkit binary (default: a
# release build, made if missing). Needs redis-server on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu}
rounds=${2:-2}
target_dir=${CARGO_TARGET_DIR:-target}
cli=${KK_CLI:-$target_dir/release/kernelkit}
if [ -z "${KK_CLI:-}" ]; then
  cargo build --release -p kernelkit-cli $([ "$device" = cuda ] && echo --features cuda) >&2
fi
command -v redis-server >/dev/null || { echo "redis-server is not on the PATH"; exit 2; }

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done
head -c 32 /dev/urandom >"$work/fleet.key"
chmod 600 "$work/fleet.key"

# run_batch NAME URL: 16 demos at once, each on its own empty disk; prints
# "<wall ms> <total compiles> <total remote_hits> <total remote_errors>
# <CPU ms of the demos and their children>".
run_batch() {
  local name=$1 url=$2 salt="$1 $RANDOM$RANDOM $(date +%s%N)"
  local dir="$work/$name-$RANDOM"
  mkdir -p "$dir"
  local start end
  start=$(date +%s%N)
  for i in $(seq 0 15); do
    env KERNELKIT_CACHE=disk KERNELKIT_CACHE_DIR="$dir/node$i" \
      ${url:+KERNELKIT_REMOTE_CACHE=$url KERNELKIT_REMOTE_KEY_FILE=$work/fleet.key} \
      "$cli" demo --device "$device" --threads 16 --salt "$salt" >"$dir/out$i" 2>&1 &
  done
  local failed=0
  for job in $(jobs -p); do
    [ "$job" = "$server_pid" ] && continue
    wait "$job" || failed=1
  done
  end=$(date +%s%N)
  # The children's user and system time (the second line of `times`).
  local cpu_ms
  times >"$dir/times" # a builtin in this shell: a pipe would fork first
  cpu_ms=$(sed -n 2p "$dir/times" | awk '{
    t = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
    printf "%d", t * 1000 }')
  if [ "$failed" = 1 ] || [ "$(grep -l 'all results right' "$dir"/out* | wc -l)" != 16 ]; then
    echo "batch $name: a demo failed:" >&2
    cat "$dir"/out* >&2
    exit 1
  fi
  awk -v ms=$(((end - start) / 1000000)) -v cpu="$cpu_ms" '
    /^cache: / { for (i = 2; i <= NF; i++) { split($i, kv, "="); t[kv[1]] += kv[2] } }
    END { printf "%d %d %d %d %d\n", ms, t["compiles"], t["remote_hits"], t["remote_errors"], cpu }
  ' "$dir"/out*
}

echo "== fleet: 16 nodes x 16 new kernels, one Redis (device $device)"
read -r ms compiles hits errors _ < <(run_batch fleet "redis://127.0.0.1:$port")
echo "fleet: ${ms} ms, compiles=$compiles (target 16; 256 without the tier), remote_hits=$hits, remote_errors=$errors"
[ "$compiles" = 16 ] || echo "fleet: MISSED (compiles=$compiles)"

# The server stopped for good: the address now refuses connections.
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=

none=()
stopped=()
none_cpu=()
stopped_cpu=()
for r in $(seq "$rounds"); do
  read -r ms compiles _ _ cpu < <(run_batch none "")
  echo "round $r: none:    ${ms} ms wall, ${cpu} ms CPU, compiles=$compiles"
  none+=("$ms")
  none_cpu+=("$cpu")
  read -r ms compiles hits errors cpu < <(run_batch stopped "redis://127.0.0.1:$port")
  echo "round $r: stopped: ${ms} ms wall, ${cpu} ms CPU, compiles=$compiles, remote_errors=$errors"
  stopped+=("$ms")
  stopped_cpu+=("$cpu")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
compare() {
  awk -v what="$1" -v a="$2" -v b="$3" 'BEGIN {
    r = (b - a) / a * 100
    printf "stopped vs none, %s (medians): %.0f ms vs %.0f ms: %+.1f%% (target <= +10%%): %s\n", what, b, a, r, (r <= 10) ? "met" : "MISSED"
  }'
}
compare "wall time" "$(median "${none[@]}")" "$(median "${stopped[@]}")"
compare "CPU time" "$(median "${none_cpu[@]}")" "$(median "${stopped_cpu[@]}")"
