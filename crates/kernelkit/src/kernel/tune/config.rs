//! Launch configurations ([`TuneConfig`]), how hard to time them
//! ([`TuneOptions`]), and a set of them with its grid and key rules
//! ([`Tuning`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::array::Array;
use crate::codegen::template::TemplateArg;
use crate::kernel::variant::Variant;

/// One launch configuration: template values and a threadgroup, and the
/// grid when it is fixed for this configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneConfig {
    template: Vec<(String, TemplateArg)>,
    threadgroup: [u64; 3],
    grid: Option<[u64; 3]>,
    id: String,
}

impl TuneConfig {
    /// A configuration launching threadgroups of `threadgroup` threads.
    pub fn new(threadgroup: [u64; 3]) -> TuneConfig {
        let mut c = TuneConfig {
            template: Vec::new(),
            threadgroup,
            grid: None,
            id: String::new(),
        };
        c.id = c.make_id();
        c
    }

    /// Adds a template value (replacing one of the same name).
    pub fn template(mut self, name: impl Into<String>, value: impl Into<TemplateArg>) -> Self {
        let name = name.into();
        self.template.retain(|(n, _)| *n != name);
        self.template.push((name, value.into()));
        self.template.sort_by(|a, b| a.0.cmp(&b.0));
        self.id = self.make_id();
        self
    }

    /// Fixes the grid (in threads) for this configuration; otherwise the
    /// tuning's grid function, or the call's grid, gives it.
    pub fn grid(mut self, grid: [u64; 3]) -> Self {
        self.grid = Some(grid);
        self.id = self.make_id();
        self
    }

    /// The template values, sorted by name.
    pub fn template_values(&self) -> impl Iterator<Item = (&str, &TemplateArg)> {
        self.template.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// The threadgroup.
    pub fn threadgroup(&self) -> [u64; 3] {
        self.threadgroup
    }

    /// The fixed grid, if any.
    pub fn fixed_grid(&self) -> Option<[u64; 3]> {
        self.grid
    }

    /// The canonical text of this configuration, which names it in tuning
    /// records: `threadgroup=128,1,1 TILE=4 ...` (template values sorted
    /// by name; the grid when fixed).
    pub fn id(&self) -> &str {
        &self.id
    }

    fn make_id(&self) -> String {
        let [x, y, z] = self.threadgroup;
        let mut s = format!("threadgroup={x},{y},{z}");
        if let Some([x, y, z]) = self.grid {
            let _ = write!(s, " grid={x},{y},{z}");
        }
        for (name, value) in &self.template {
            let _ = match value {
                TemplateArg::Int(v) => write!(s, " {name}={v}"),
                TemplateArg::Bool(v) => write!(s, " {name}={v}"),
                TemplateArg::DType(d) => write!(s, " {name}=dtype:{}", d.name()),
            };
        }
        s
    }
}

impl std::fmt::Display for TuneConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id)
    }
}

/// How configurations are timed. The defaults suit kernels of microseconds
/// to milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuneOptions {
    /// Untimed launches of each configuration first (caches, clocks).
    pub warmup: u32,
    /// Timed launches of each configuration before the ranking may be
    /// called clear.
    pub min_reps: u32,
    /// Most timed launches of one configuration.
    pub max_reps: u32,
    /// Measuring stops once this much launch time was spent (after
    /// `min_reps` each), clear ranking or not.
    pub budget: Duration,
    /// Sets of scratch outputs timed into, in turn, each at another place
    /// in device memory: a kernel whose speed depends on where its output
    /// lies is ranked on several places rather than on one (on a GPU;
    /// fewer where the outputs are large; one on the CPU).
    pub placements: u32,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            warmup: 2,
            min_reps: 5,
            max_reps: 100,
            budget: Duration::from_millis(400),
            placements: 3,
        }
    }
}

/// The grid of a configuration for a call's inputs.
pub type GridFn = dyn Fn(&TuneConfig, &[&Array]) -> [u64; 3] + Send + Sync;
/// The user's tuning key of a call's inputs (replacing their shapes and
/// dtypes in the key).
pub type KeyFn = dyn Fn(&[&Array]) -> String + Send + Sync;

/// Launch configurations to choose from, with how the grid and the tuning
/// key follow from a call. Give it to calls with `Call::tuned`; cheap to
/// clone (clones share what they have chosen).
#[derive(Clone)]
pub struct Tuning {
    pub(super) inner: Arc<TuningInner>,
}

pub(super) struct TuningInner {
    pub(super) configs: Vec<TuneConfig>,
    pub(super) grid: Option<Arc<GridFn>>,
    pub(super) key: Option<Arc<KeyFn>>,
    pub(super) options: TuneOptions,
    /// The last signature chosen for and its configuration's index + 1, as
    /// a seqlock: `seq` odd while written.
    pub(super) seq: AtomicU64,
    pub(super) last_sig: AtomicU64,
    pub(super) last_choice: AtomicU64,
    /// Every signature chosen for (beyond the last).
    pub(super) chosen: RwLock<HashMap<u64, usize>>,
    /// Whether the forbidden-JIT fallback was logged.
    pub(super) logged_fallback: AtomicBool,
    /// What tells this tuning from every other in the process (clones
    /// share it): the tag of its choices in each thread's recent ones
    /// (`recent`).
    pub(super) id: u64,
    /// The variant run for every signature launched (each thread keeps the
    /// few it launched last in `recent`: the warm path of a tuned call, no
    /// copy of the call, no variant lookup).
    pub(super) launched: RwLock<HashMap<u64, Arc<Chosen>>>,
}

/// The id of the next tuning made (`TuningInner::id`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A signature's choice with the variant it runs (built with the
/// configuration's template values).
pub(super) struct Chosen {
    pub(super) index: usize,
    pub(super) variant: Arc<Variant>,
}

impl std::fmt::Debug for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuning")
            .field("configs", &self.inner.configs)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Tuning {
    /// A tuning over `configs`, in order (the first is the one run when
    /// nothing may be timed).
    pub fn new(configs: impl IntoIterator<Item = TuneConfig>) -> Tuning {
        Tuning::from_parts(
            configs.into_iter().collect(),
            None,
            None,
            TuneOptions::default(),
        )
    }

    fn from_parts(
        configs: Vec<TuneConfig>,
        grid: Option<Arc<GridFn>>,
        key: Option<Arc<KeyFn>>,
        options: TuneOptions,
    ) -> Tuning {
        Tuning {
            inner: Arc::new(TuningInner {
                configs,
                grid,
                key,
                options,
                seq: AtomicU64::new(0),
                last_sig: AtomicU64::new(0),
                last_choice: AtomicU64::new(0),
                chosen: RwLock::new(HashMap::new()),
                logged_fallback: AtomicBool::new(false),
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                launched: RwLock::new(HashMap::new()),
            }),
        }
    }

    fn rebuilt(
        &self,
        f: impl FnOnce(&mut (Option<Arc<GridFn>>, Option<Arc<KeyFn>>, TuneOptions)),
    ) -> Tuning {
        let i = &self.inner;
        let mut parts = (i.grid.clone(), i.key.clone(), i.options);
        f(&mut parts);
        Tuning::from_parts(i.configs.clone(), parts.0, parts.1, parts.2)
    }

    /// The grid of each configuration as a function of it and the call's
    /// inputs (a configuration's fixed grid still wins).
    pub fn grid_fn(
        &self,
        grid: impl Fn(&TuneConfig, &[&Array]) -> [u64; 3] + Send + Sync + 'static,
    ) -> Tuning {
        self.rebuilt(|p| p.0 = Some(Arc::new(grid)))
    }

    /// The tuning key of a call from its inputs, instead of their shapes
    /// and dtypes (calls whose key is the same share a choice).
    pub fn key_fn(&self, key: impl Fn(&[&Array]) -> String + Send + Sync + 'static) -> Tuning {
        self.rebuilt(|p| p.1 = Some(Arc::new(key)))
    }

    /// How hard to time.
    pub fn options(&self, options: TuneOptions) -> Tuning {
        self.rebuilt(|p| p.2 = options)
    }

    /// The configurations, in order.
    pub fn configs(&self) -> &[TuneConfig] {
        &self.inner.configs
    }

    /// The choice this tuning made for `sig` in this process, if any: the
    /// warm path of a tuned call.
    #[inline]
    pub(super) fn remembered(&self, sig: u64) -> Option<usize> {
        let i = &self.inner;
        let seq = i.seq.load(Ordering::Acquire);
        if seq & 1 == 0 {
            let (s, c) = (
                i.last_sig.load(Ordering::Acquire),
                i.last_choice.load(Ordering::Acquire),
            );
            std::sync::atomic::fence(Ordering::Acquire);
            if i.seq.load(Ordering::Acquire) == seq && s == sig && c != 0 {
                return Some(c as usize - 1);
            }
        }
        self.remembered_slow(sig)
    }

    #[cold]
    fn remembered_slow(&self, sig: u64) -> Option<usize> {
        let found = *self
            .inner
            .chosen
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sig)?;
        self.remember_last(sig, found);
        Some(found)
    }

    /// The choice and variant launched for `sig` before (on any thread),
    /// if any, kept as one of this thread's recent ones.
    #[cold]
    pub(super) fn launched_slow(&self, sig: u64) -> Option<Arc<Chosen>> {
        let found = self
            .inner
            .launched
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sig)?
            .clone();
        super::recent::keep(self.inner.id, sig, found.clone());
        Some(found)
    }

    /// Keeps `variant` as what `sig`'s choice `index` runs.
    pub(super) fn keep_launched(&self, sig: u64, index: usize, variant: Arc<Variant>) {
        let chosen = Arc::new(Chosen { index, variant });
        self.inner
            .launched
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sig, chosen.clone());
        super::recent::keep(self.inner.id, sig, chosen);
    }

    /// Keeps `index` as the choice for `sig`.
    pub(super) fn remember(&self, sig: u64, index: usize) {
        self.inner
            .chosen
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sig, index);
        self.remember_last(sig, index);
    }

    fn remember_last(&self, sig: u64, index: usize) {
        let i = &self.inner;
        // One writer at a time: take the sequence from even to odd.
        let mut seq = i.seq.load(Ordering::Relaxed);
        loop {
            if seq & 1 == 1 {
                return; // another thread is writing; the map has ours
            }
            match i
                .seq
                .compare_exchange_weak(seq, seq + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => seq = now,
            }
        }
        i.last_sig.store(sig, Ordering::Release);
        i.last_choice.store(index as u64 + 1, Ordering::Release);
        i.seq.store(seq + 2, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_canonical() {
        let a = TuneConfig::new([128, 1, 1])
            .template("TILE", 4)
            .template("A", true);
        let b = TuneConfig::new([128, 1, 1])
            .template("A", true)
            .template("TILE", 4);
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id(), "threadgroup=128,1,1 A=true TILE=4");
        assert_ne!(a.id(), a.clone().grid([4, 1, 1]).id());
    }

    #[test]
    fn remembered_choices_come_back() {
        let t = Tuning::new([TuneConfig::new([1, 1, 1]), TuneConfig::new([2, 1, 1])]);
        assert_eq!(t.remembered(7), None);
        t.remember(7, 1);
        t.remember(9, 0);
        assert_eq!(t.remembered(7), Some(1));
        assert_eq!(t.remembered(9), Some(0));
        assert_eq!(t.remembered(8), None);
    }
}
