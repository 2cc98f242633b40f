//! The results: one JSON object, and a table for people with each figure,
//! its baseline, the ratio and the target.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::contention::Scaling;
use super::memo::MemoFigures;
use super::store::StoreFigures;
use super::table::{ms, ns, per_s, table, times, Row};

/// Everything one run measured. The field names are the JSON keys; the
/// first group is the set the issue asks for, the rest explain them.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    /// `cpu` or `cuda`.
    pub(crate) backend: String,
    /// The device's description (model, cores, compiler).
    pub(crate) device: String,
    /// Hardware threads of this machine.
    pub(crate) cores: usize,
    /// Whether this was a `--quick` run.
    pub(crate) quick: bool,
    /// The 1-minute load average when the run started and when it ended
    /// (Linux): other work on the machine shows in the figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) load_avg_start: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) load_avg_end: Option<f64>,

    pub(crate) build_hit_ns: f64,
    pub(crate) build_hit_ns_95kb: f64,
    pub(crate) build_nomemo_ns: f64,
    pub(crate) build_nomemo_ns_95kb: f64,
    pub(crate) dispatch_hit_ns: f64,
    pub(crate) dispatch_hit_ns_95kb: f64,
    pub(crate) dispatch_nomemo_ns: f64,
    pub(crate) dispatch_nomemo_ns_95kb: f64,
    pub(crate) raw_launch_ns: f64,
    /// Dispatch with a foreign input (DLPack-imported), and with the owned
    /// input in the same pairs, ns.
    pub(crate) dispatch_foreign_ns: f64,
    pub(crate) dispatch_owned_ns: f64,
    #[serde(serialize_with = "by_threads")]
    pub(crate) hit_ops_per_s: Scaling,
    #[serde(serialize_with = "by_threads")]
    pub(crate) hit_ops_per_s_rwlock: Scaling,
    /// The host side of a hit alone (`Call::compile` on a warm cache: memo,
    /// kernel cache, no launch), per thread count: what the caches scale to
    /// when the driver's own launch path is out of the picture.
    #[serde(serialize_with = "by_threads")]
    pub(crate) hit_lookup_ops_per_s: Scaling,
    /// The same through the MLX-scheme baseline's lookup.
    #[serde(serialize_with = "by_threads")]
    pub(crate) hit_lookup_ops_per_s_rwlock: Scaling,
    pub(crate) cold_compile_ms: f64,
    pub(crate) parallel_compile_speedup: f64,
    pub(crate) herd_compiles: u64,
    pub(crate) cold_start_ms: f64,
    pub(crate) warm_start_ms: f64,

    /// `Call::prepare` alone on a memo hit (checks, variant, the launch
    /// object), ns.
    pub(crate) prepare_hit_ns: f64,
    pub(crate) prepare_hit_ns_95kb: f64,
    /// `Call::prepare_without_memo` alone, ns.
    pub(crate) prepare_nomemo_ns: f64,
    pub(crate) prepare_nomemo_ns_95kb: f64,
    /// Building the `Call` object alone, ns (short header).
    pub(crate) call_build_ns: f64,
    /// Size of the large header, bytes.
    pub(crate) header_bytes: usize,
    /// Per thread count, the share of the kernelkit threads' time spent
    /// waiting for a CPU (other work on the machine), median over samples.
    #[serde(
        serialize_with = "by_threads_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hit_cpu_wait: Option<Scaling>,
    /// Distinct kernels the contention threads share.
    pub(crate) hit_kernels: usize,
    /// The system compiler alone on the same kind of source (CPU only), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cold_compile_bare_ms: Option<f64>,
    /// N of the parallel compile figure.
    pub(crate) parallel_compile_kernels: usize,
    /// N kernels one after another, ms (median round).
    pub(crate) serial_compile_ms: f64,
    /// N kernels from N threads, ms (median round).
    pub(crate) parallel_compile_ms: f64,
    /// Threads of the herd figure.
    pub(crate) herd_threads: usize,
    /// The herd's first start to last finish, ms.
    pub(crate) herd_ms: f64,
    /// A child that opens the device and runs no kernel, ms.
    pub(crate) start_floor_ms: f64,
    /// Compiles in the last cold child.
    pub(crate) cold_start_compiles: u64,
    /// Compiles in the last warm child (0 once the artifact store works).
    pub(crate) warm_start_compiles: u64,
    /// Modules the last warm child loaded from the store.
    pub(crate) warm_start_disk_hits: u64,
    /// A child with an empty disk store whose kernel another node compiled
    /// and shared through the fleet tier (Redis), ms; absent without a
    /// Redis to use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_ms: Option<f64>,
    /// Compiles in the last such child (0 when the fleet tier works).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_compiles: Option<u64>,
    /// Modules the last such child loaded from the fleet tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_remote_hits: Option<u64>,
    /// (CPU) A 256-thread group reduction with barriers, per group, ns:
    /// the threads run as fibers switched at each of its 9 barriers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) group_reduce_barrier_ns: Option<f64>,
    /// (CPU) The same sums by one thread per group, no barrier, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) group_reduce_plain_ns: Option<f64>,
    /// The variant memo by variants cycled and under a Zipf draw, beside the
    /// seed's memo (short header, then 95 KB).
    #[serde(flatten)]
    pub(crate) memo: MemoFigures,
    #[serde(flatten)]
    pub(crate) memo_95kb: MemoFigures,
    /// Artifact store writes by store size, and `cache stats`.
    #[serde(flatten)]
    pub(crate) store: StoreFigures,
}

/// The report of `kernelkit-bench --only-store`: the store figures alone.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StoreReport {
    /// Hardware threads of this machine.
    pub(crate) cores: usize,
    /// Whether this was a `--quick` run.
    pub(crate) quick: bool,
    #[serde(flatten)]
    pub(crate) store: StoreFigures,
}

/// The report of `kernelkit-bench --only-memo`: the memo figures alone.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct MemoReport {
    pub(crate) backend: String,
    pub(crate) device: String,
    pub(crate) cores: usize,
    pub(crate) quick: bool,
    /// `Call::prepare` on a hit of the memo (one variant), ns.
    pub(crate) prepare_hit_ns: f64,
    pub(crate) prepare_hit_ns_95kb: f64,
    #[serde(flatten)]
    pub(crate) memo: MemoFigures,
    #[serde(flatten)]
    pub(crate) memo_95kb: MemoFigures,
}

impl MemoReport {
    /// The table for people.
    pub(crate) fn table(&self) -> String {
        let title = format!(
            "kernelkit-bench --only-memo: {} on {} ({} cores){}\n",
            self.backend,
            self.device,
            self.cores,
            if self.quick { ", --quick" } else { "" }
        );
        let mut rows = vec![
            Row::new("prepare_hit_ns", ns(self.prepare_hit_ns)),
            Row::new("prepare_hit_ns_95kb", ns(self.prepare_hit_ns_95kb)),
        ];
        rows.extend(memo_rows(&self.memo));
        rows.extend(memo_rows(&self.memo_95kb));
        table(title, &rows)
    }
}

/// `{"1000": v, "100000": v}`: a figure by store size, in order.
pub(crate) fn by_count<S: Serializer>(values: &[(u64, f64)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(values.len()))?;
    for (count, v) in values {
        map.serialize_entry(&count.to_string(), v)?;
    }
    map.end()
}

/// `{"1": v, "2": v, …}` in thread order.
fn by_threads<S: Serializer>(scaling: &Scaling, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(scaling.len()))?;
    for (threads, ops) in scaling {
        map.serialize_entry(&threads.to_string(), ops)?;
    }
    map.end()
}

/// As `by_threads`, for a figure the system may not report.
fn by_threads_opt<S: Serializer>(scaling: &Option<Scaling>, s: S) -> Result<S::Ok, S::Error> {
    match scaling {
        Some(v) => by_threads(v, s),
        None => s.serialize_none(),
    }
}

/// The store figures' rows: the write into the large store against the
/// write into the small one, `cache stats` against a count of the files
/// (their targets are in BENCHMARKS.md), and the write that evicts, with its cost per entry
/// removed (what each later write into the room it made adds, spread).
fn store_rows(f: &StoreFigures) -> Vec<Row> {
    let mut rows = Vec::new();
    if let [(small_n, small), .., (large_n, large)] = f.write_us[..] {
        let ratio = large / small;
        let mut row = Row::new(
            format!("store_write_us @{large_n}"),
            format!("{large:.0} µs"),
        )
        .baseline(
            format!("store_write_us @{small_n}"),
            format!("{small:.0} µs"),
            times(ratio),
        );
        if large_n >= 100_000 {
            row = row.target("≤ 1.2×", ratio <= 1.2);
        }
        rows.push(row);
        let mut row = Row::new(format!("store_stats_ms @{large_n}"), ms(f.stats_ms)).baseline(
            "cache stats --recount",
            ms(f.recount_ms),
            times(f.recount_ms / f.stats_ms),
        );
        if large_n >= 100_000 {
            row = row.target("≤ 10 ms", f.stats_ms <= 10.0);
        }
        rows.push(row);
        // Spread over the writes that fill the room it made.
        let per_write_us = f.evicting_write_ms * 1e3 / f.evicted as f64;
        rows.push(
            Row::new(
                format!("store_evicting_write_ms @{large_n}"),
                ms(f.evicting_write_ms),
            )
            .baseline(
                format!("{} entries removed", f.evicted),
                format!("{per_write_us:.0} µs"),
                "per entry".to_string(),
            ),
        );
    }
    rows
}

/// The memo figures of one kernel: each beside the seed's memo, with the
/// issue's targets (the cycle and miss targets were set with an 84 KB
/// header; the 95 KB one is held to them).
fn memo_rows(m: &MemoFigures) -> Vec<Row> {
    let sfx = m.suffix;
    let mut rows = Vec::new();
    let at32 = m.cycle_of(32).map_or(f64::NAN, |p| p.ns);
    for (n, p) in &m.cycle {
        let mut row = Row::new(format!("memo_cycle_ns{sfx} @{n}"), ns(p.ns)).baseline(
            "seed (clear at 64)",
            ns(p.seed_ns),
            times(p.seed_ns / p.ns),
        );
        if *n == 80 {
            let r = p.ns / at32;
            row = row.target(format!("≤ 3× @32 (is {r:.2}×)"), r <= 3.0);
        }
        rows.push(row);
    }
    let c = &m.cycle_cap64_80;
    let share = c.ns / c.seed_ns;
    rows.push(
        Row::new(format!("memo_cycle_ns{sfx}_cap64 @80"), ns(c.ns))
            .baseline(
                "seed @80 (every call a miss)",
                ns(c.seed_ns),
                times(c.seed_ns / c.ns),
            )
            .target(
                format!("miss ≤ 25% of seed (is {:.0}%)", share * 100.0),
                share <= 0.25,
            ),
    );
    for (name, z) in [("", &m.zipf), ("_cap64", &m.zipf_cap64)] {
        let rate =
            |r: Option<f64>| r.map_or("n/a".to_string(), |r| format!("{:.1}% hits", r * 100.0));
        let row = Row::new(format!("memo_zipf_ns{sfx}{name}"), ns(z.ns)).baseline(
            format!("seed ({})", rate(z.seed_hit_rate)),
            ns(z.seed_ns),
            times(z.seed_ns / z.ns),
        );
        rows.push(row);
        if let (true, Some((zipf, all_hit))) = (name.is_empty(), z.vs_all_hit) {
            let r = zipf / all_hit;
            rows.push(
                Row::new(format!("memo_zipf_ns{sfx} (paired)"), ns(zipf))
                    .baseline("all-hit prepare, same kernel", ns(all_hit), times(r))
                    .target(format!("≤ 2× all-hit (is {r:.2}×)"), r <= 2.0),
            );
        }
        rows.push(Row::new(
            format!("memo_zipf_hit_rate{sfx}{name}"),
            rate(z.hit_rate),
        ));
    }
    for n in [64, 1000] {
        if let Some(p) = m.cycle_of(n) {
            let mut row = Row::new(
                format!("memo_bytes{sfx} @{n}"),
                format!("{} KiB / {}", p.bytes / 1024, p.entries),
            )
            .baseline(
                "seed (bytes / variants)",
                format!("{} KiB / {}", p.seed_bytes / 1024, p.seed_entries),
                times(p.seed_bytes as f64 / p.bytes as f64),
            );
            if n == 64 {
                row = row.target("≤ seed's", p.bytes <= p.seed_bytes);
            }
            rows.push(row);
        }
    }
    rows
}

impl Report {
    fn rows(&self) -> Vec<Row> {
        let cuda = self.backend == "cuda";
        let mut rows = Vec::new();
        for (suffix, hit, nomemo, want) in [
            ("", self.build_hit_ns, self.build_nomemo_ns, 10.0),
            (
                "_95kb",
                self.build_hit_ns_95kb,
                self.build_nomemo_ns_95kb,
                100.0,
            ),
        ] {
            let ratio = nomemo / hit;
            rows.push(
                Row::new(format!("build_hit_ns{suffix}"), ns(hit))
                    .baseline(format!("build_nomemo_ns{suffix}"), ns(nomemo), times(ratio))
                    .target(
                        format!("≤ 100 ns, ≥ {want:.0}× below"),
                        hit <= 100.0 && ratio >= want,
                    ),
            );
        }
        for (suffix, hit, nomemo) in [
            ("", self.prepare_hit_ns, self.prepare_nomemo_ns),
            (
                "_95kb",
                self.prepare_hit_ns_95kb,
                self.prepare_nomemo_ns_95kb,
            ),
        ] {
            rows.push(
                Row::new(format!("prepare_hit_ns{suffix}"), ns(hit)).baseline(
                    format!("prepare_nomemo_ns{suffix}"),
                    ns(nomemo),
                    times(nomemo / hit),
                ),
            );
        }
        rows.push(Row::new("call_build_ns", ns(self.call_build_ns)));
        for (suffix, hit, nomemo) in [
            ("", self.dispatch_hit_ns, self.dispatch_nomemo_ns),
            (
                "_95kb",
                self.dispatch_hit_ns_95kb,
                self.dispatch_nomemo_ns_95kb,
            ),
        ] {
            rows.push(
                Row::new(format!("dispatch_hit_ns{suffix}"), ns(hit)).baseline(
                    format!("dispatch_nomemo_ns{suffix}"),
                    ns(nomemo),
                    times(nomemo / hit),
                ),
            );
        }
        let over_owned = self.dispatch_foreign_ns - self.dispatch_owned_ns;
        let mut row = Row::new("dispatch_foreign_ns", ns(self.dispatch_foreign_ns)).baseline(
            "dispatch_hit_ns (owned input, same pairs)",
            ns(self.dispatch_owned_ns),
            format!("{over_owned:+.0} ns"),
        );
        if cuda {
            row = row.target("≤ +200 ns", over_owned <= 200.0);
        }
        rows.push(row);
        let over_raw = self.dispatch_hit_ns - self.raw_launch_ns;
        let mut row = Row::new("dispatch_hit_ns − raw", ns(over_raw)).baseline(
            "raw_launch_ns (the floor)",
            ns(self.raw_launch_ns),
            times(self.dispatch_hit_ns / self.raw_launch_ns),
        );
        if cuda {
            row = row.target("≤ 300 ns", over_raw <= 300.0);
        }
        rows.push(row);

        let one = |s: &Scaling| s.first().map(|(_, v)| *v).unwrap_or(f64::NAN);
        let (ours_1, theirs_1) = (one(&self.hit_ops_per_s), one(&self.hit_ops_per_s_rwlock));
        for (i, (&(t, ours), &(_, theirs))) in self
            .hit_ops_per_s
            .iter()
            .zip(&self.hit_ops_per_s_rwlock)
            .enumerate()
        {
            let scale = ours / ours_1;
            let waited = match self.hit_cpu_wait.as_ref().and_then(|w| w.get(i)) {
                Some((_, w)) if *w >= 0.01 => format!(", waited {:.0}% for a CPU", w * 100.0),
                _ => String::new(),
            };
            let mut row = Row::new(
                format!("hit_ops_per_s @{t}"),
                format!("{} ({:.2}× @1{waited})", per_s(ours), scale),
            )
            .baseline(
                format!("rwlock @{t}"),
                format!("{} ({:.2}× @1)", per_s(theirs), theirs / theirs_1),
                times(ours / theirs),
            );
            let want = match t {
                2 => Some(1.6),
                16 => Some(12.0),
                _ => None,
            };
            if let Some(w) = want {
                row = row.target(format!("≥ {w}× @1"), scale >= w);
            }
            rows.push(row);
        }

        let (ours_1, theirs_1) = (
            one(&self.hit_lookup_ops_per_s),
            one(&self.hit_lookup_ops_per_s_rwlock),
        );
        for (&(t, ours), &(_, theirs)) in self
            .hit_lookup_ops_per_s
            .iter()
            .zip(&self.hit_lookup_ops_per_s_rwlock)
        {
            rows.push(
                Row::new(
                    format!("hit_lookup_ops_per_s @{t}"),
                    format!("{} ({:.2}× @1)", per_s(ours), ours / ours_1),
                )
                .baseline(
                    format!("rwlock lookup @{t}"),
                    format!("{} ({:.2}× @1)", per_s(theirs), theirs / theirs_1),
                    times(ours / theirs),
                ),
            );
        }

        let mut row = Row::new("cold_compile_ms", ms(self.cold_compile_ms));
        if let Some(bare) = self.cold_compile_bare_ms {
            row = row.baseline(
                "the C++ compiler alone",
                ms(bare),
                times(self.cold_compile_ms / bare),
            );
        }
        rows.push(row);
        let n = self.parallel_compile_kernels;
        let want = 0.75 * n.min(self.cores) as f64;
        rows.push(
            Row::new(
                format!("parallel_compile_speedup (N={n})"),
                times(self.parallel_compile_speedup),
            )
            .baseline(
                format!("{n} one after another"),
                ms(self.serial_compile_ms),
                format!("{} in parallel", ms(self.parallel_compile_ms)),
            )
            .target(
                format!("≥ {want:.2}×"),
                self.parallel_compile_speedup >= want,
            ),
        );
        rows.push(
            Row::new("herd_compiles", self.herd_compiles.to_string())
                .baseline(
                    format!("{} threads asking", self.herd_threads),
                    self.herd_threads.to_string(),
                    ms(self.herd_ms),
                )
                .target("= 1", self.herd_compiles == 1),
        );
        rows.push(
            Row::new(
                "cold_start_ms",
                format!(
                    "{} ({} compiles)",
                    ms(self.cold_start_ms),
                    self.cold_start_compiles
                ),
            )
            .baseline(
                "start_floor_ms (no kernel)",
                ms(self.start_floor_ms),
                times(self.cold_start_ms / self.start_floor_ms),
            ),
        );
        let share = self.warm_start_ms / self.cold_start_ms;
        rows.push(
            Row::new(
                "warm_start_ms",
                format!(
                    "{} ({} compiles)",
                    ms(self.warm_start_ms),
                    self.warm_start_compiles
                ),
            )
            .baseline(
                "cold_start_ms",
                ms(self.cold_start_ms),
                format!("{:.1}%", share * 100.0),
            )
            .target("≤ 5% of cold", share <= 0.05),
        );
        rows.extend(remote_row(
            self.remote_hit_ms,
            self.remote_hit_compiles,
            self.warm_start_ms,
        ));
        if cuda {
            let over = self.warm_start_ms - self.start_floor_ms;
            rows.push(
                Row::new("warm_start_ms − floor", ms(over))
                    .baseline("start_floor_ms", ms(self.start_floor_ms), String::new())
                    .target("< 2 ms", over < 2.0),
            );
        }
        if let (Some(barrier), Some(plain)) =
            (self.group_reduce_barrier_ns, self.group_reduce_plain_ns)
        {
            rows.push(Row::new("group_reduce_barrier_ns", ns(barrier)).baseline(
                "group_reduce_plain_ns",
                ns(plain),
                times(barrier / plain),
            ));
        }
        for memo in [&self.memo, &self.memo_95kb] {
            rows.extend(memo_rows(memo));
        }
        rows.extend(store_rows(&self.store));
        rows
    }

    /// The table for people.
    pub(crate) fn table(&self) -> String {
        let load = match (self.load_avg_start, self.load_avg_end) {
            (Some(a), Some(b)) => format!(", load average {a:.2} → {b:.2}"),
            _ => String::new(),
        };
        let title = format!(
            "kernelkit-bench: {} on {} ({} cores){}{load}\n",
            self.backend,
            self.device,
            self.cores,
            if self.quick { ", --quick" } else { "" }
        );
        table(title, &self.rows())
    }
}

impl StoreReport {
    /// The table for people.
    pub(crate) fn table(&self) -> String {
        let title = format!(
            "kernelkit-bench --only-store ({} cores){}\n",
            self.cores,
            if self.quick { ", --quick" } else { "" }
        );
        table(title, &store_rows(&self.store))
    }
}

/// The table of `--only-bundles`.
pub(crate) fn bundle_table(f: &super::bundle::BundleFigures, quick: bool) -> String {
    let title = format!(
        "kernelkit-bench --only-bundles: {} ({} cores){}\n",
        f.backend,
        f.cores,
        if quick { ", --quick" } else { "" }
    );
    let us = |v: f64| format!("{v:.0} µs");
    let over = f.first_call_imported_us - f.first_call_warm_disk_us;
    let pre_ratio = f.precompile_ms / f.slowest_single_compile_ms;
    let rows = [
        Row::new("first_call_imported_us", us(f.first_call_imported_us))
            .baseline(
                "first_call_warm_disk_us",
                us(f.first_call_warm_disk_us),
                format!("{over:+.0} µs"),
            )
            .target(
                "within 1 ms, no compile",
                over.abs() <= 1000.0 && f.imported_compiled_nothing,
            ),
        Row::new("first_call_imported_us", us(f.first_call_imported_us)).baseline(
            "first_call_compile_us",
            us(f.first_call_compile_us),
            times(f.first_call_imported_us / f.first_call_compile_us),
        ),
        Row::new("import_ms", ms(f.import_ms)).baseline(
            "bundle_bytes",
            format!("{}", f.bundle_bytes),
            String::new(),
        ),
        Row::new(
            format!("precompile_{}_ms", f.precompile_kernels),
            ms(f.precompile_ms),
        )
        .baseline(
            "slowest_single_compile_ms",
            ms(f.slowest_single_compile_ms),
            times(pre_ratio),
        )
        .target("≤ 1.5× (H200)", pre_ratio <= 1.5),
        Row::new(
            format!("precompile_{}_ms", f.precompile_kernels),
            ms(f.precompile_ms),
        )
        .baseline(
            "serial_compile_ms",
            ms(f.serial_compile_ms),
            times(f.precompile_ms / f.serial_compile_ms),
        ),
    ];
    table(title, &rows)
}

/// The `remote_hit_ms` row beside `warm_start_ms`, if it was measured.
fn remote_row(remote: Option<f64>, compiles: Option<u64>, warm: f64) -> Option<Row> {
    let remote = remote?;
    let over = remote - warm;
    Some(
        Row::new(
            "remote_hit_ms",
            format!("{} ({} compiles)", ms(remote), compiles.unwrap_or(0)),
        )
        .baseline("warm_start_ms", ms(warm), format!("{over:+.2} ms"))
        .target(
            "≤ warm + 5 ms, 0 compiles",
            over <= 5.0 && compiles == Some(0),
        ),
    )
}

/// The report of `kernelkit-bench --only-starts`: a cold compile and the
/// process start figures, with the fleet tier's.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StartsReport {
    /// `cpu` or `cuda`.
    pub(crate) backend: String,
    /// Hardware threads of this machine.
    pub(crate) cores: usize,
    /// Whether this was a `--quick` run.
    pub(crate) quick: bool,
    pub(crate) cold_compile_ms: f64,
    pub(crate) cold_start_ms: f64,
    pub(crate) warm_start_ms: f64,
    pub(crate) start_floor_ms: f64,
    pub(crate) cold_start_compiles: u64,
    pub(crate) warm_start_compiles: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_compiles: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remote_hit_remote_hits: Option<u64>,
}

impl StartsReport {
    /// The table for people.
    pub(crate) fn table(&self) -> String {
        let title = format!(
            "kernelkit-bench --only-starts: {} ({} cores){}\n",
            self.backend,
            self.cores,
            if self.quick { ", --quick" } else { "" }
        );
        let mut rows = vec![
            Row::new("cold_compile_ms", ms(self.cold_compile_ms)),
            Row::new(
                "cold_start_ms",
                format!(
                    "{} ({} compiles)",
                    ms(self.cold_start_ms),
                    self.cold_start_compiles
                ),
            )
            .baseline(
                "start_floor_ms (no kernel)",
                ms(self.start_floor_ms),
                times(self.cold_start_ms / self.start_floor_ms),
            ),
            Row::new(
                "warm_start_ms",
                format!(
                    "{} ({} compiles)",
                    ms(self.warm_start_ms),
                    self.warm_start_compiles
                ),
            ),
        ];
        rows.extend(remote_row(
            self.remote_hit_ms,
            self.remote_hit_compiles,
            self.warm_start_ms,
        ));
        table(title, &rows)
    }
}
