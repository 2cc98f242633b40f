//! Hits under contention: T threads call cached kernels as fast as they
//! can, through kernelkit and through the MLX-scheme baseline.
//!
//! Every thread owns a stream and an input and cycles through the same
//! `KERNELS` kernel objects (clones of shared handles, so the threads share
//! each kernel's memo and the device's cache). A call is a whole dispatch:
//! build the call, prepare, run (on the CPU the one-thread kernel runs; on a
//! GPU it is enqueued). Threads start together at a barrier; the figure is
//! all calls over the wall time from the first start to the last finish.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use kernelkit::{Device, Kernel};

use super::measure;
use super::rwlock_cache::RwLockCache;
use super::sched;
use super::workload;
use super::BenchError;

/// A figure by thread count, in increasing thread order (calls per second,
/// or the share of time spent waiting for a CPU).
pub(crate) type Scaling = Vec<(usize, f64)>;

/// What the contention figures found.
pub(crate) struct ContentionFigures {
    /// Calls per second through kernelkit.
    pub(crate) ours: Scaling,
    /// Calls per second through the MLX-scheme baseline.
    pub(crate) rwlock: Scaling,
    /// Host-side hits per second (variant and function found, no launch).
    pub(crate) lookup: Scaling,
    /// The same through the MLX-scheme baseline's lookup.
    pub(crate) lookup_rwlock: Scaling,
    /// The share of its time each kernelkit thread was ready to run but
    /// waited for a CPU (other work on the machine), where the system
    /// reports it: a sample that waited could not show real scaling.
    pub(crate) cpu_wait: Option<Scaling>,
}

/// One sample: calls per second, and the share of thread time spent
/// waiting for a CPU.
struct Sample {
    ops_per_s: f64,
    cpu_wait: Option<f64>,
}

/// One thread's share of a sample.
struct Span {
    start: Instant,
    end: Instant,
    /// Nanoseconds this thread was runnable but not running, if known.
    waited_ns: Option<u64>,
}

/// Which path the threads call through.
#[derive(Clone, Copy)]
enum Path<'a> {
    Kernelkit,
    RwLock(&'a RwLockCache),
    /// The host side of a hit alone (variant and function found, nothing
    /// launched): what the caches themselves cost under contention.
    KernelkitLookup,
    RwLockLookup(&'a RwLockCache),
}

/// The kernels and the baseline cache, compiled and warm.
pub(crate) struct Contention {
    device: Device,
    kernels: Vec<Kernel>,
    rwlock: RwLockCache,
}

impl Contention {
    /// Builds `count` kernels and compiles each through both paths.
    pub(crate) fn new(device: Device, count: usize) -> Result<Contention, BenchError> {
        let kernels = (0..count.max(1))
            .map(workload::short_kernel)
            .collect::<Result<Vec<_>, _>>()?;
        let options = format!(
            "{}{:016x}",
            device.label(),
            xxhash_rust::xxh3::xxh3_64(device.description().as_bytes())
        );
        let rwlock = RwLockCache::new(options);
        let stream = device.new_stream()?;
        let x = workload::input(&device)?;
        for (k, kernel) in kernels.iter().enumerate() {
            let out = workload::call(kernel, &x, &stream).launch()?;
            workload::check_output(kernel, &out, k)?;
            let out = rwlock.launch(workload::call(kernel, &x, &stream))?;
            workload::check_output(kernel, &out, k)?;
        }
        debug_assert_eq!(rwlock.len(), kernels.len());
        Ok(Contention {
            device,
            kernels,
            rwlock,
        })
    }

    /// Calls per second for each thread count, through kernelkit and
    /// through the baseline, sampled in alternation (thread counts too); `batch` is how long
    /// one thread's share of a sample takes.
    pub(crate) fn scaling(
        &self,
        threads: &[usize],
        samples: usize,
        batch: Duration,
    ) -> Result<ContentionFigures, BenchError> {
        let calls = self.calibrate(batch)?;
        // Every round samples every thread count on both paths, so a change
        // in the machine's load falls on all of them alike.
        let mut ours: Vec<Vec<Sample>> = threads.iter().map(|_| Vec::new()).collect();
        let mut theirs: Vec<Vec<Sample>> = threads.iter().map(|_| Vec::new()).collect();
        let mut ours_lookup: Vec<Vec<Sample>> = threads.iter().map(|_| Vec::new()).collect();
        let mut theirs_lookup: Vec<Vec<Sample>> = threads.iter().map(|_| Vec::new()).collect();
        // Lookups are ~10x cheaper than launches: more of them per sample.
        let lookups = calls.saturating_mul(8);
        for _ in 0..samples.max(1) {
            for (i, &t) in threads.iter().enumerate() {
                ours[i].push(self.run(t, calls, Path::Kernelkit)?);
                theirs[i].push(self.run(t, calls, Path::RwLock(&self.rwlock))?);
                ours_lookup[i].push(self.run(t, lookups, Path::KernelkitLookup)?);
                theirs_lookup[i].push(self.run(t, lookups, Path::RwLockLookup(&self.rwlock))?);
            }
        }
        let medians = |v: &[Vec<Sample>], f: &dyn Fn(&Sample) -> Option<f64>| -> Option<Scaling> {
            threads
                .iter()
                .zip(v)
                .map(|(&t, s)| {
                    let values = s.iter().map(f).collect::<Option<Vec<f64>>>()?;
                    Some((t, measure::median(&values)))
                })
                .collect()
        };
        let rate = |s: &Sample| Some(s.ops_per_s);
        Ok(ContentionFigures {
            ours: medians(&ours, &rate).unwrap_or_default(),
            rwlock: medians(&theirs, &rate).unwrap_or_default(),
            lookup: medians(&ours_lookup, &rate).unwrap_or_default(),
            lookup_rwlock: medians(&theirs_lookup, &rate).unwrap_or_default(),
            cpu_wait: medians(&ours, &|s: &Sample| s.cpu_wait),
        })
    }

    /// Calls per thread that take about `batch` on one thread.
    fn calibrate(&self, batch: Duration) -> Result<u64, BenchError> {
        let probe = 256u64;
        let per_s = self.run(1, probe, Path::Kernelkit)?.ops_per_s;
        Ok(((batch.as_secs_f64() * per_s) as u64).max(probe))
    }

    /// One sample: `threads` threads each make `calls` calls; calls per
    /// second over the wall time.
    fn run(&self, threads: usize, calls: u64, path: Path<'_>) -> Result<Sample, BenchError> {
        let barrier = Barrier::new(threads);
        let spans: Vec<Result<Span, BenchError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|index| {
                    let barrier = &barrier;
                    scope.spawn(move || self.worker(index, calls, path, barrier))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or(Err(BenchError::Thread("a contention worker")))
                })
                .collect()
        });
        let spans = spans.into_iter().collect::<Result<Vec<Span>, _>>()?;
        let busy_ns: f64 = spans
            .iter()
            .map(|s| s.end.duration_since(s.start).as_nanos() as f64)
            .sum();
        let cpu_wait = spans
            .iter()
            .map(|s| s.waited_ns)
            .sum::<Option<u64>>()
            .map(|w| w as f64 / busy_ns.max(1.0));
        let wall = measure::wall_of(spans.iter().map(|s| Ok((s.start, s.end))).collect())?;
        Ok(Sample {
            ops_per_s: (threads as u64 * calls) as f64 / wall.as_secs_f64().max(1e-9),
            cpu_wait,
        })
    }

    /// One thread's share of a sample: its own stream and input, the
    /// shared kernels in turn, starting at a different kernel per thread.
    fn worker(
        &self,
        index: usize,
        calls: u64,
        path: Path<'_>,
        barrier: &Barrier,
    ) -> Result<Span, BenchError> {
        let stream = self.device.new_stream()?;
        let x = workload::input(&self.device)?;
        let kernels: Vec<Kernel> = self.kernels.clone();
        let n = kernels.len();
        barrier.wait();
        let waited_before = sched::waited_ns();
        let start = Instant::now();
        for c in 0..calls {
            let kernel = &kernels[(index + c as usize) % n];
            let call = workload::call(kernel, &x, &stream);
            match path {
                Path::Kernelkit => {
                    black_box(call.launch()?);
                }
                Path::RwLock(cache) => {
                    black_box(cache.launch(call)?);
                }
                Path::KernelkitLookup => call.compile()?,
                Path::RwLockLookup(cache) => cache.lookup(call, &self.device)?,
            }
            if c % 1024 == 1023 {
                stream.synchronize()?;
            }
        }
        stream.synchronize()?;
        let end = Instant::now();
        let waited_ns = match (waited_before, sched::waited_ns()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        Ok(Span {
            start,
            end,
            waited_ns,
        })
    }
}

/// 1, 2, 4, … up to `cores` (and `cores` itself when it is not a power of
/// two), then on to `at_least` the same way.
pub(crate) fn thread_counts(cores: usize, at_least: usize) -> Vec<usize> {
    let top = cores.max(at_least).max(1);
    let mut counts = Vec::new();
    let mut t = 1;
    while t < top {
        counts.push(t);
        t *= 2;
    }
    counts.push(top);
    if cores < top && !counts.contains(&cores) {
        counts.push(cores);
        counts.sort_unstable();
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_double_up_to_the_cores() {
        assert_eq!(thread_counts(2, 1), vec![1, 2]);
        assert_eq!(thread_counts(1, 1), vec![1]);
        assert_eq!(thread_counts(12, 1), vec![1, 2, 4, 8, 12]);
        assert_eq!(thread_counts(16, 16), vec![1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(2, 16), vec![1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(12, 16), vec![1, 2, 4, 8, 12, 16]);
    }
}
