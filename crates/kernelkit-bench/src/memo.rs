//! The variant memo under many variants of one kernel: `Call::prepare` in a
//! loop over N variants that differ only in an `int` template value (no
//! compile: `prepare` finds or builds the variant and stops there), each
//! figure paired with the seed's memo (`KernelBuilder::seed_memo`: 64
//! variants, cleared whole when full, every variant generated, hashed and
//! kept whole) measured in the same run.
//!
//! - `memo_cycle_ns`: the variants 0, 1, …, N−1 in turn, for N = 32, 64,
//!   65, 80, 1,000, with the default bounds; and N = 80 with the entry cap
//!   at the seed's 64 (`_cap64`: every call then misses under CLOCK too,
//!   so it is the cost of a miss).
//! - `memo_zipf_ns`: a Zipf(1.0) draw over 1,000 variants (a fixed
//!   sequence, the same for both sides), with the hit rate of each side
//!   (1 − variants built / calls, over the first 4,096 draws, 64 with
//!   `--quick`, after the timing), with the default bounds and with the
//!   entry cap at 64.
//!
//! Before each figure both kernels run the sequence's first lap (at most
//! as many calls as the hit-rate pass), so that the timing starts from a
//! filled memo.
//! - `memo_bytes`: what each memo holds afterwards (`Kernel::memo_bytes`).
//!
//! Each (N, policy) gets kernels of its own, so no figure starts from
//! another's memo; the short and the 95 KB header kernels are the host
//! figures' (`workload`).

use std::hint::black_box;

use kernelkit::{Array, DType, Kernel, KernelBuilder, MemoConfig, Stream};
use serde::Serialize;

use super::measure::{self, Plan};
use super::workload;
use super::BenchError;

/// The cycle lengths of `memo_cycle_ns`.
pub(crate) const CYCLES: [usize; 5] = [32, 64, 65, 80, 1000];

/// Variants of the Zipf figure.
pub(crate) const ZIPF_VARIANTS: usize = 1000;

/// Draws in the Zipf sequence (cycled through).
const ZIPF_DRAWS: usize = 1 << 16;

/// One figure beside the seed's, with what each memo held afterwards.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Paired {
    /// With kernelkit's memo, ns per call.
    pub(crate) ns: f64,
    /// With the seed's memo, ns per call.
    pub(crate) seed_ns: f64,
    /// Bytes kernelkit's memo held afterwards.
    pub(crate) bytes: usize,
    /// Bytes the seed's memo held afterwards.
    pub(crate) seed_bytes: usize,
    /// Variants kernelkit's memo held afterwards.
    pub(crate) entries: usize,
    /// Variants the seed's memo held afterwards.
    pub(crate) seed_entries: usize,
    /// Share of calls answered without building a variant (Zipf figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hit_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seed_hit_rate: Option<f64>,
    /// (Zipf figures) The figure timed again, in alternation with the
    /// all-hit call (one variant, `prepare` in a loop), and that call, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vs_all_hit: Option<(f64, f64)>,
}

/// The figures of one kernel (short or 95 KB header).
#[derive(Clone, Debug, Default)]
pub(crate) struct MemoFigures {
    /// `""` (short) or `"_95kb"`: the JSON keys' suffix.
    pub(crate) suffix: &'static str,
    /// By cycle length, with the default bounds.
    pub(crate) cycle: Vec<(usize, Paired)>,
    /// 80 variants with the entry cap at 64.
    pub(crate) cycle_cap64_80: Paired,
    /// Zipf(1.0) over 1,000 variants, default bounds.
    pub(crate) zipf: Paired,
    /// The same with the entry cap at 64.
    pub(crate) zipf_cap64: Paired,
}

/// Flat JSON keys: `memo_cycle_ns{suffix}` → `{"32": ns, …}`, each with a
/// `_seed` twin, then the capped, Zipf and byte figures.
impl Serialize for MemoFigures {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use std::collections::BTreeMap;
        let sfx = self.suffix;
        let by_n = |f: &dyn Fn(&Paired) -> f64| -> BTreeMap<usize, f64> {
            self.cycle.iter().map(|(n, p)| (*n, f(p))).collect()
        };
        let bytes = |f: &dyn Fn(&Paired) -> usize| -> BTreeMap<usize, usize> {
            self.cycle.iter().map(|(n, p)| (*n, f(p))).collect()
        };
        let mut map = s.serialize_map(None)?;
        map.serialize_entry(&format!("memo_cycle_ns{sfx}"), &by_n(&|p| p.ns))?;
        map.serialize_entry(&format!("memo_cycle_ns{sfx}_seed"), &by_n(&|p| p.seed_ns))?;
        map.serialize_entry(
            &format!("memo_cycle_ns{sfx}_cap64"),
            &BTreeMap::from([(80, self.cycle_cap64_80.ns)]),
        )?;
        map.serialize_entry(
            &format!("memo_cycle_ns{sfx}_cap64_seed"),
            &BTreeMap::from([(80, self.cycle_cap64_80.seed_ns)]),
        )?;
        map.serialize_entry(&format!("memo_bytes{sfx}"), &bytes(&|p| p.bytes))?;
        map.serialize_entry(&format!("memo_bytes{sfx}_seed"), &bytes(&|p| p.seed_bytes))?;
        map.serialize_entry(&format!("memo_entries{sfx}"), &bytes(&|p| p.entries))?;
        map.serialize_entry(
            &format!("memo_entries{sfx}_seed"),
            &bytes(&|p| p.seed_entries),
        )?;
        for (name, z) in [("", &self.zipf), ("_cap64", &self.zipf_cap64)] {
            map.serialize_entry(&format!("memo_zipf_ns{sfx}{name}"), &z.ns)?;
            map.serialize_entry(&format!("memo_zipf_ns{sfx}{name}_seed"), &z.seed_ns)?;
            map.serialize_entry(&format!("memo_zipf_hit_rate{sfx}{name}"), &z.hit_rate)?;
            map.serialize_entry(
                &format!("memo_zipf_hit_rate{sfx}{name}_seed"),
                &z.seed_hit_rate,
            )?;
            map.serialize_entry(&format!("memo_zipf_bytes{sfx}{name}"), &z.bytes)?;
            if let Some((zipf, all_hit)) = z.vs_all_hit {
                map.serialize_entry(&format!("memo_zipf_ns{sfx}{name}_paired"), &zipf)?;
                map.serialize_entry(&format!("memo_zipf_all_hit_ns{sfx}{name}"), &all_hit)?;
            }
        }
        map.end()
    }
}

impl MemoFigures {
    /// The figure for a cycle of `n`.
    pub(crate) fn cycle_of(&self, n: usize) -> Option<&Paired> {
        self.cycle.iter().find(|(m, _)| *m == n).map(|(_, p)| p)
    }
}

/// What the memo figures need.
pub(crate) struct Setup<'a> {
    pub(crate) stream: &'a Stream,
    pub(crate) x: &'a Array,
    pub(crate) plan: Plan,
    /// Calls of the warm-up before a figure (a cycle's lap, if shorter),
    /// and of the pass that counts a Zipf figure's hit rate.
    pub(crate) warm_calls: usize,
}

/// Which kernel of the host figures.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    Short,
    LargeHeader,
}

impl Shape {
    /// A fresh kernel of this shape, its builder passed through `memo`.
    fn kernel(
        self,
        memo: impl FnOnce(KernelBuilder) -> KernelBuilder,
    ) -> Result<Kernel, BenchError> {
        let (name, body, header) = match self {
            Shape::Short => (
                "bench_short_0".to_string(),
                workload::trivial_body(0),
                String::new(),
            ),
            Shape::LargeHeader => {
                let k = workload::large_header_kernel()?;
                (
                    k.name().to_string(),
                    k.spec().source().to_string(),
                    k.spec().header().to_string(),
                )
            }
        };
        let builder = Kernel::builder(name)
            .inputs(["inp"])
            .outputs(["out"])
            .header(header)
            .source(body);
        Ok(memo(builder).build()?)
    }
}

impl Setup<'_> {
    /// `prepare` of variant `v` of `kernel`.
    fn prepare(&self, kernel: &Kernel, v: i32) -> Result<(), BenchError> {
        let call = kernel
            .call([self.x])
            .template("OFFSET", v)
            .output([workload::ELEMENTS as i64], DType::F32)
            .grid([1, 1, 1])
            .threadgroup([1, 1, 1])
            .on(self.stream);
        black_box(call.prepare()?);
        Ok(())
    }

    /// Times the sequence `values` (cycled) on a kernel with the bounds
    /// `memo` and on one with the seed's memo, paired.
    fn paired(
        &self,
        shape: Shape,
        memo: MemoConfig,
        values: &[i32],
        hit_rates: bool,
    ) -> Result<Paired, BenchError> {
        let ours = shape.kernel(|b| b.memo(memo))?;
        let seed = shape.kernel(|b| b.seed_memo())?;
        // Warm up: the first variant of a kernel builds the text its
        // variants share (the 95 KB header lowered: about a millisecond
        // here), and the first lap fills the memo; a batch calibrated on
        // those would time a handful of calls.
        let warm = &values[..values.len().min(self.warm_calls)];
        for &v in warm {
            self.prepare(&ours, v)?;
            self.prepare(&seed, v)?;
        }
        let (mut i, mut j) = (warm.len() - 1, warm.len() - 1);
        let (ns, seed_ns) = measure::paired(
            self.plan,
            &mut || {
                i = (i + 1) % values.len();
                self.prepare(&ours, values[i])
            },
            &mut || {
                j = (j + 1) % values.len();
                self.prepare(&seed, values[j])
            },
        )?;
        let mut p = Paired {
            ns,
            seed_ns,
            ..Paired::default()
        };
        if hit_rates {
            let mut k = 0usize;
            let fixed = values[0];
            p.vs_all_hit = Some(measure::paired(
                self.plan,
                &mut || {
                    k = (k + 1) % values.len();
                    self.prepare(&ours, values[k])
                },
                &mut || self.prepare(&ours, fixed),
            )?);
            let pass = &values[..values.len().min(self.warm_calls)];
            p.hit_rate = Some(self.hit_rate(&ours, pass)?);
            p.seed_hit_rate = Some(self.hit_rate(&seed, pass)?);
        }
        p.bytes = ours.memo_bytes();
        p.seed_bytes = seed.memo_bytes();
        p.entries = ours.memoized_variants();
        p.seed_entries = seed.memoized_variants();
        Ok(p)
    }

    /// The share of one pass over `values` answered without a build.
    fn hit_rate(&self, kernel: &Kernel, values: &[i32]) -> Result<f64, BenchError> {
        let before = kernel.variants_built();
        for &v in values {
            self.prepare(kernel, v)?;
        }
        let built = kernel.variants_built() - before;
        Ok(1.0 - built as f64 / values.len() as f64)
    }

    /// Every memo figure of `shape`.
    pub(crate) fn figures(&self, shape: Shape) -> Result<MemoFigures, BenchError> {
        let default = MemoConfig::default();
        let cap64 = MemoConfig::default().max_entries(64);
        let mut f = MemoFigures {
            suffix: match shape {
                Shape::Short => "",
                Shape::LargeHeader => "_95kb",
            },
            ..MemoFigures::default()
        };
        for n in CYCLES {
            let values: Vec<i32> = (0..n as i32).collect();
            f.cycle
                .push((n, self.paired(shape, default, &values, false)?));
        }
        let eighty: Vec<i32> = (0..80).collect();
        f.cycle_cap64_80 = self.paired(shape, cap64, &eighty, false)?;
        let draws = zipf_draws(ZIPF_VARIANTS, ZIPF_DRAWS, 0x5eed_2026);
        f.zipf = self.paired(shape, default, &draws, true)?;
        f.zipf_cap64 = self.paired(shape, cap64, &draws, true)?;
        Ok(f)
    }
}

/// `count` draws of a Zipf(1.0) variable over `0..n` (value `k` with
/// weight 1/(k+1)), from a fixed xorshift sequence seeded by `seed`.
pub(crate) fn zipf_draws(n: usize, count: usize, seed: u64) -> Vec<i32> {
    let mut cumulative = Vec::with_capacity(n);
    let mut total = 0.0f64;
    for k in 0..n {
        total += 1.0 / (k + 1) as f64;
        cumulative.push(total);
    }
    let mut state = seed.max(1);
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64 * total;
            cumulative.partition_point(|&c| c < u).min(n - 1) as i32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_draws_favour_small_values_and_cover_the_range() {
        let d = zipf_draws(1000, 100_000, 7);
        assert!(d.iter().all(|&v| (0..1000).contains(&v)));
        let zeros = d.iter().filter(|&&v| v == 0).count() as f64 / d.len() as f64;
        // P(0) = 1 / H(1000) ≈ 0.1336.
        assert!((0.12..0.15).contains(&zeros), "{zeros}");
        let ones = d.iter().filter(|&&v| v == 1).count() as f64 / d.len() as f64;
        assert!((ones / zeros - 0.5).abs() < 0.05, "{}", ones / zeros);
        assert!(d.iter().any(|&v| v > 900));
        assert_eq!(d, zipf_draws(1000, 100_000, 7), "deterministic");
    }
}
