"""What ran on the machine's CPUs while each kind of compile ran: reads
``perf script -F comm,tid,time,ip,sym,dso`` of a ``perf record -a -k
CLOCK_MONOTONIC`` run and the windows ``heap_check.py --windows`` wrote,
and prints, per kind of window, the samples per window by command and
library, and the top symbols.

  python perf_windows.py SCRIPT.txt WINDOWS.jsonl [--top 12]
"""

import argparse
import collections
import json
import re

LINE = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+(\S+)\s+(.*?)\s+\((.*)\)\s*$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("windows")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--pages", help="a library (e.g. libnvrtc): compare its samples by 16 KiB of "
                    "code between the kinds of window (same code slower, or other code?)")
    a = ap.parse_args()
    windows = [json.loads(line) for line in open(a.windows)]
    windows.sort(key=lambda w: w[1])
    starts = [w[1] for w in windows]
    import bisect

    by_kind = collections.defaultdict(collections.Counter)
    syms = collections.defaultdict(collections.Counter)
    pages = collections.defaultdict(collections.Counter)
    count = collections.Counter(w[0] for w in windows)
    span = collections.Counter()
    for w in windows:
        span[w[0]] += w[2] - w[1]
    for line in open(a.script, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        comm, _tid, t, ip, sym, dso = m.groups()
        t = float(t)
        i = bisect.bisect_right(starts, t) - 1
        if i < 0 or t > windows[i][2]:
            continue
        kind = windows[i][0]
        dso = dso.rsplit("/", 1)[-1]
        by_kind[kind][(comm, dso)] += 1
        syms[kind][(comm, sym[:60], dso)] += 1
        if a.pages and a.pages in dso:
            pages[kind][int(ip, 16) >> 14] += 1
    for kind in sorted(by_kind):
        n = count[kind]
        total = sum(by_kind[kind].values())
        print(f"== {kind}: {n} windows, {span[kind] / n * 1e3:.1f} ms each, {total / n:.0f} samples each")
        for (comm, dso), v in by_kind[kind].most_common(a.top):
            print(f"   {v / n:8.1f}  {comm:18s} {dso}")
        for (comm, sym, dso), v in syms[kind].most_common(a.top):
            print(f"   {v / n:8.1f}  {comm:18s} {sym} ({dso})")
    if a.pages:
        compare_pages(pages, count, a.top)


def compare_pages(pages, count, top):
    """Per pair of kinds: the samples per window of the busiest code
    blocks in each, and how much of the difference the top blocks hold."""
    kinds = sorted(pages)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            pa = {k: v / count[a] for k, v in pages[a].items()}
            pb = {k: v / count[b] for k, v in pages[b].items()}
            ta, tb = sum(pa.values()), sum(pb.values())
            if not ta or not tb:
                continue
            print(f"== code blocks, {a} ({ta:.1f}/window) vs {b} ({tb:.1f}/window)")
            both = sorted(set(pa) | set(pb), key=lambda k: -(pa.get(k, 0) + pb.get(k, 0)))
            for k in both[:top]:
                x, y = pa.get(k, 0), pb.get(k, 0)
                print(f"   {k << 14:#x}: {x:6.2f} vs {y:6.2f}  ratio {y / x if x else float('inf'):.2f}")
            # Share of each kind's samples in blocks the other barely touches.
            only_b = sum(v for k, v in pb.items() if pa.get(k, 0) < 0.1 * v)
            only_a = sum(v for k, v in pa.items() if pb.get(k, 0) < 0.1 * v)
            print(f"   in blocks the other barely runs: {a} {only_a / ta:.1%}, {b} {only_b / tb:.1%}")


if __name__ == "__main__":
    main()
