//! Timing configurations side by side, writing nothing the caller owns.
//!
//! Every timing launch writes scratch arrays: outputs the caller gave
//! (`output_into`, Python's `out=`) are replaced by copies of their
//! contents, made again before each repetition (so a kernel that reads
//! its output, `out[i] += inp[i]`, sees the same data every time), and an
//! input that shares memory with such an output (in place) is replaced by
//! the same copy. Outputs kernelkit allocates go to scratch arrays made
//! once per tuning; atomic outputs without an `init_value` are zeroed
//! again before each repetition (with one, the launch fills them itself).
//! Scratch arrays are dropped when the tuning ends. The caller's arrays
//! are written only by the final run, after the choice.
//!
//! Configurations are compiled first, in parallel (compile time is not
//! tuning time), warmed up, then timed in rounds that visit each
//! remaining configuration once, on the call's stream. A sample is a
//! batch of back-to-back launches lasting about `SAMPLE_TIME` (sized by one
//! probe launch of each configuration), divided by its count: one short
//! launch alone would time the timer and the launch's latency more than
//! the kernel. On a GPU, each batch follows a delay kernel (see [`Delay`])
//! and one untimed launch of the same configuration, so that it is timed
//! as a loop's launches run: back to back, on a GPU warm from the kernel.
//! (Scratch that must be made again before each repetition keeps one
//! launch per sample.)
//! On a GPU that captures graphs, each batch is captured once (per
//! configuration and scratch set, on a private stream) and replayed as
//! one graph launch (see [`Graphs`]): its launches then run back to back
//! as a captured loop's do, which launched one at a time ranked some
//! configurations otherwise (docs/autotune.md).
//! On a GPU, the scratch outputs are made in several sets (`placements`)
//! and each round writes the next set: a configuration's samples come from
//! several places in memory.
//! After `min_reps` rounds, a configuration whose lower quartile is above
//! the best one's upper quartile is clearly slower and is timed no more;
//! the ranking is clear when one remains, or `max_reps` or the time
//! budget is reached.

use std::time::Duration;

use smallvec::SmallVec;

use super::config::Tuning;
use crate::array::Array;
use crate::backend::Replay;
use crate::cache::loaded::FunctionRef;
use crate::cache::tuning::Records;
use crate::device::{Device, Stream};
use crate::error::Result;
use crate::kernel::call::{Call, Swap};
use crate::kernel::Kernel;

/// One configuration's outcome: its median time, or why it failed.
pub(super) type Outcome = std::result::Result<Duration, String>;

/// What a timing run writes instead of the caller's arrays.
struct Scratch {
    /// Per output: the array the timing launch writes.
    outputs: Vec<Array>,
    /// Per output: the bytes it is made from again before each repetition
    /// (`None`: made once).
    fresh: Vec<Option<Vec<u8>>>,
    /// Per input: the output whose scratch stands for it (in place).
    aliased: Vec<Option<usize>>,
}

impl Scratch {
    /// The scratch arrays of `call`'s timing launches on `stream`. Those
    /// made once are filled on `stream` itself: an array filled on
    /// another stream would make every timing launch wait for that stream
    /// on the host, and time the wait. All are new memory, never a block
    /// a cache kept: a kernel was seen to run slower into a reused block
    /// than into new memory, which would rank configurations by the block
    /// each happened to get.
    fn new(call: &Call<'_>, stream: &Stream) -> Result<Scratch> {
        let (targets, _) = call.target_arrays();
        let reinit_atomic = call.atomic_outputs() && call.init_value_given().is_none();
        let mut outputs = Vec::new();
        let mut fresh = Vec::new();
        for (i, (shape, dtype)) in call.output_specs().enumerate() {
            let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            let bytes = match targets.iter().find(|(t, _)| *t == i) {
                Some((_, target)) => Some(target.to_bytes()?),
                None if reinit_atomic => {
                    let n: usize = shape.iter().product();
                    Some(vec![0u8; n * dtype.size()])
                }
                None => None,
            };
            let array = match &bytes {
                Some(b) => Array::fresh_from_bytes_on(stream, b, shape, dtype)?,
                None => Array::fresh_zeros_on(stream, shape, dtype)?,
            };
            outputs.push(array);
            fresh.push(bytes);
        }
        let aliased = call
            .input_arrays()
            .iter()
            .map(|input| {
                targets
                    .iter()
                    .find(|(_, t)| t.overlaps(input))
                    .map(|(i, _)| *i)
            })
            .collect();
        Ok(Scratch {
            outputs,
            fresh,
            aliased,
        })
    }

    /// Makes again the scratch arrays that must start each repetition
    /// with the caller's contents (or zeros).
    fn refresh(&mut self, stream: &Stream) -> Result<()> {
        for (array, bytes) in self.outputs.iter_mut().zip(&self.fresh) {
            if let Some(bytes) = bytes {
                *array = Array::fresh_from_bytes_on(
                    stream,
                    bytes,
                    array.shape().to_vec(),
                    array.dtype(),
                )?;
            }
        }
        Ok(())
    }

    /// The bytes its arrays hold.
    fn bytes(&self) -> usize {
        self.outputs
            .iter()
            .map(|a| a.shape().iter().product::<usize>() * a.dtype().size())
            .sum()
    }

    fn needs_refresh(&self) -> bool {
        self.fresh.iter().any(Option::is_some)
    }

    /// The arrays a timing launch of `call` uses.
    fn swap<'s, 'a: 's>(&'s self, call: &Call<'a>) -> Swap<'s> {
        let inputs: SmallVec<[&'s Array; 8]> = call
            .input_arrays()
            .iter()
            .zip(&self.aliased)
            .map(|(input, alias)| match alias {
                Some(o) => &self.outputs[*o],
                None => *input,
            })
            .collect();
        Swap {
            inputs,
            targets: self.outputs.iter().enumerate().collect(),
            allow_overlap: self.aliased.iter().any(Option::is_some),
        }
    }
}

/// What keeps a GPU waiting while the host queues a timed batch: a
/// kernel that holds its stream for a while (the GPU's global timer) is
/// launched first, and the batch's start event follows it, so the batch
/// runs back to back once the wait ends and is timed alone. Without it, a
/// batch of kernels shorter than their launch times the host's launch
/// rate, not the kernels (the GPU idles between them). Only on a GPU whose
/// kernels run (the CPU times synchronous launches by the wall clock);
/// where the delay kernel cannot be built, batches are timed as they come.
struct Delay {
    /// The delay kernel and its one argument, made again when the wait
    /// changes: (nanoseconds, the array holding them).
    kernel: Option<Kernel>,
    arg: Option<(u64, Array)>,
    /// The delay kernel's output, made once on the timed stream: a timed
    /// sample allocates nothing.
    done: Option<Array>,
    /// The longest the host took to queue one launch, seen so far.
    per_launch: Duration,
    /// Timed batches in a row that the host took as long to queue as the
    /// GPU waited.
    starved_in_a_row: u32,
}

/// Starved batches in a row after which the delay kernel is dropped.
const MAX_STARVED: u32 = 4;

/// The delay kernel's body: thread 0 spins on the global timer for
/// `ns[0]` nanoseconds.
const DELAY_BODY: &str = "\
if (thread_position_in_grid.x == 0) {
  unsigned long long t0, t;
  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));
  do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < ns[0]);
  done[0] = 1u;
}";

impl Delay {
    fn for_device(device: &Device) -> Delay {
        let kernel = (device.backend().name() == "cuda")
            .then(|| {
                Kernel::builder("kernelkit_tune_delay")
                    .inputs(["ns"])
                    .outputs(["done"])
                    .source(DELAY_BODY)
                    .build()
                    .ok()
            })
            .flatten();
        Delay {
            kernel,
            arg: None,
            done: None,
            per_launch: Duration::ZERO,
            starved_in_a_row: 0,
        }
    }

    /// Notes how long an untimed batch of `batch` launches took to queue.
    fn saw_enqueue(&mut self, took: Duration, batch: u32) {
        self.per_launch = self.per_launch.max(took / batch.max(1));
    }

    /// Whether a timed batch's queueing took about as long as the wait
    /// (the GPU may have idled); if so, waits longer from now on. After
    /// [`MAX_STARVED`] such batches in a row the host is not queueing
    /// ahead of the GPU at all (something in the launch waits for the
    /// stream): the delay only adds time, and is dropped for this tuning.
    fn starved(&mut self, took: Duration, batch: u32) -> bool {
        let waited = self.wait(batch);
        self.saw_enqueue(took, batch);
        let starved = self.kernel.is_some() && took.as_nanos() * 10 > waited.as_nanos() * 9;
        self.starved_in_a_row = if starved {
            self.starved_in_a_row + 1
        } else {
            0
        };
        if self.starved_in_a_row >= MAX_STARVED {
            tracing::debug!(
                "autotune: launches did not queue ahead of the delay kernel ({took:?} to queue \
                 {batch} against a wait of {waited:?}); timing without it"
            );
            self.kernel = None;
            self.arg = None;
        }
        starved
    }

    /// How long the GPU waits before a batch of `batch` launches: twice
    /// what the host took to queue as many, plus a fixed margin.
    fn wait(&self, batch: u32) -> Duration {
        (self.per_launch * batch.max(1) * 2 + Duration::from_micros(20))
            .min(Duration::from_millis(20))
    }

    /// Makes the delay kernel's argument for a batch of `batch` launches
    /// on `stream` (again only when the wait changed), and its output
    /// (once).
    fn prepare(&mut self, batch: u32, stream: &Stream) -> Result<()> {
        let ns = u64::try_from(self.wait(batch).as_nanos()).unwrap_or(u64::MAX);
        if self.kernel.is_some() && self.arg.as_ref().is_none_or(|(n, _)| *n != ns) {
            let array = Array::from_slice(stream.device(), &[ns; 8], [8])?;
            self.arg = Some((ns, array));
        }
        if self.kernel.is_some() && self.done.is_none() {
            self.done = Some(Array::zeros_on(stream, [1], crate::dtype::DType::U32)?);
        }
        Ok(())
    }

    /// Compiles the delay kernel on `stream`'s device (after
    /// [`Delay::prepare`]); false where it cannot be (batches are then
    /// timed without it).
    fn compile(&self, stream: &Stream) -> bool {
        match (&self.kernel, &self.arg, &self.done) {
            (Some(kernel), Some((_, arg)), Some(done)) => {
                let compiled = kernel
                    .call([arg])
                    .output_into(done)
                    .grid([1, 1, 1])
                    .threadgroup([1, 1, 1])
                    .on(stream)
                    .prepare()
                    .and_then(|launch| launch.compile());
                if let Err(e) = &compiled {
                    tracing::debug!("autotune: no delay kernel ({e}); batches timed as they come");
                }
                compiled.is_ok()
            }
            _ => true,
        }
    }

    /// The work queued before a timed batch on `stream` (after
    /// [`Delay::prepare`]): the delay kernel, or nothing.
    fn hold<'s>(&'s self, stream: &'s Stream) -> impl FnMut() -> Result<()> + 's {
        let kernel = self.kernel.as_ref();
        let arg = self.arg.as_ref().map(|(_, a)| a);
        let done = self.done.as_ref();
        move || -> Result<()> {
            if let (Some(kernel), Some(arg), Some(done)) = (kernel, arg, done) {
                kernel
                    .call([arg])
                    .output_into(done)
                    .grid([1, 1, 1])
                    .threadgroup([1, 1, 1])
                    .on(stream)
                    .launch()?;
            }
            Ok(())
        }
    }
}

/// Every timed batch captured as a graph, replayed on the call's stream:
/// per candidate (by position) and scratch set, the graph of its batch of
/// launches into that set. All or none: configurations compared must be
/// timed the same way, so a capture that fails (or a device that captures
/// nothing) leaves every batch timed as launched.
struct Graphs {
    /// `replays[candidate][placement]`; `None` for a candidate that failed.
    replays: Vec<Vec<Option<Replay>>>,
    /// The functions the graphs launch, held while they live: a capture
    /// pins no module, and the bounded module cache must not unload one a
    /// graph still runs.
    _functions: Vec<FunctionRef>,
    /// The private stream they were captured on (dropped last).
    _stream: Stream,
}

impl Graphs {
    /// The graphs of `candidates`' batches into each of `scratches`; `None`
    /// where batches cannot be replayed (scratch made again per launch, a
    /// device without graphs, a capture that failed).
    fn capture(
        tuning: &Tuning,
        call: &Call<'_>,
        device: &Device,
        candidates: &[Candidate],
        scratches: &[Scratch],
    ) -> Option<Graphs> {
        if scratches.iter().any(Scratch::needs_refresh) {
            return None;
        }
        let captured = (|| -> Result<Option<Graphs>> {
            let private = device.new_stream()?;
            let mut functions = Vec::new();
            let mut replays = Vec::with_capacity(candidates.len());
            for c in candidates {
                let mut row = Vec::with_capacity(scratches.len());
                if c.failed.is_some() {
                    row.resize_with(scratches.len(), || None);
                    replays.push(row);
                    continue;
                }
                let config = &tuning.inner.configs[c.index];
                let grid = tuning.grid_of(config, call);
                for scratch in scratches {
                    let run = call
                        .configured(config, grid, Some(scratch.swap(call)))
                        .on(&private);
                    if row.is_empty() {
                        let launch = run.prepare()?;
                        functions.push(launch.variant().function_on(device, call.kernel().name())?);
                    }
                    let batch = c.batch;
                    let replay = private
                        .capture(&mut || (0..batch).try_for_each(|_| run.launch().map(drop)))?;
                    let Some(replay) = replay else {
                        return Ok(None);
                    };
                    row.push(Some(replay));
                }
                replays.push(row);
            }
            Ok(Some(Graphs {
                replays,
                _functions: functions,
                _stream: private,
            }))
        })();
        captured.unwrap_or_else(|e| {
            tracing::debug!("autotune: batches timed as launched, not as graphs ({e})");
            None
        })
    }
}

/// One configuration being timed.
struct Candidate {
    index: usize,
    /// Per-launch times: each a batch's time over its launches.
    samples: Vec<Duration>,
    failed: Option<String>,
    done: bool,
    /// Launches per timed sample, so that one sample lasts about
    /// [`SAMPLE_TIME`] (a single short launch is mostly the timer's own
    /// resolution and the launch's latency, not the kernel).
    batch: u32,
}

/// How long one timed sample should last: launches of a short kernel are
/// batched up to it, as back-to-back launches run in the caller's loop.
const SAMPLE_TIME: Duration = Duration::from_micros(100);
/// Most launches in one timed sample.
const MAX_BATCH: u32 = 64;

/// The launches per sample of a configuration whose one launch took
/// `probe`.
fn batch_for(probe: Duration) -> u32 {
    let probe = probe.as_nanos().max(1);
    let n = SAMPLE_TIME.as_nanos().div_ceil(probe);
    u32::try_from(n).unwrap_or(MAX_BATCH).clamp(1, MAX_BATCH)
}

impl Candidate {
    fn sorted(&self) -> Vec<Duration> {
        let mut s = self.samples.clone();
        s.sort();
        s
    }
    /// The `q` quantile of the samples (none yet: the longest time, so
    /// the configuration is never taken for the fastest).
    fn quantile(&self, q: f64) -> Duration {
        let s = self.sorted();
        match s.len() {
            0 => Duration::MAX,
            n => s[((n - 1) as f64 * q).round() as usize],
        }
    }
}

/// Scratch outputs of all placements together stay within this.
const PLACEMENT_BYTES: usize = 256 << 20;

/// How many sets of scratch outputs a tuning times into, in turn: each set
/// is allocated apart, so it lies at another place in device memory, and a
/// kernel whose speed depends on where its output lies (a write pattern
/// with a power-of-two stride was seen to favour one threadgroup in one
/// buffer and another in the next) is ranked on several places, as its
/// later calls' outputs land anywhere, not on the one its first scratch
/// got. [`TuneOptions::placements`](super::TuneOptions::placements), fewer
/// when the outputs are large (together within [`PLACEMENT_BYTES`]), one
/// on the CPU (where no such dependence was seen).
fn placements(options: &super::TuneOptions, device: &Device, bytes: usize) -> usize {
    if device.backend().name() != "cuda" {
        return 1;
    }
    let fit = PLACEMENT_BYTES / bytes.max(1);
    (options.placements as usize).min(fit).max(1)
}

/// Times the configurations `indices` of `tuning` for `call` on `stream`;
/// each one's outcome, in the order of `indices`.
pub(super) fn time_configs(
    tuning: &Tuning,
    call: &Call<'_>,
    indices: &[usize],
    device: &Device,
    stream: &Stream,
    records: &Records,
) -> Result<Vec<(usize, Outcome)>> {
    let options = tuning.inner.options;
    let mut candidates: Vec<Candidate> = indices
        .iter()
        .map(|&index| Candidate {
            index,
            samples: Vec::new(),
            failed: None,
            done: false,
            batch: 1,
        })
        .collect();

    // Compiles, in parallel: each configuration is its own variant (and
    // the delay kernel one more, on a GPU).
    let mut delay = Delay::for_device(device);
    delay.prepare(1, stream)?;
    let (compiled, delay_ok): (Vec<Option<String>>, bool) = std::thread::scope(|scope| {
        let delay = &delay;
        let delay_compile = scope.spawn(move || delay.compile(stream));
        let handles: Vec<_> = candidates
            .iter()
            .map(|c| {
                let config = &tuning.inner.configs[c.index];
                let grid = tuning.grid_of(config, call);
                scope.spawn(move || {
                    call.configured(config, grid, None)
                        .compile()
                        .err()
                        .map(|e| e.to_string())
                })
            })
            .collect();
        let compiled = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Some("the compile panicked".into()))
            })
            .collect();
        (compiled, delay_compile.join().unwrap_or(false))
    });
    for (c, error) in candidates.iter_mut().zip(compiled) {
        c.failed = error;
    }
    if !delay_ok {
        delay.kernel = None;
    }

    // Scratch outputs in `placements` sets, timed into in turn, round by
    // round (see `placements`).
    let first = Scratch::new(call, stream)?;
    let sets = placements(&options, device, first.bytes());
    let mut scratches = vec![first];
    for _ in 1..sets {
        scratches.push(Scratch::new(call, stream)?);
    }
    let mut scratch = &mut scratches[0];
    let mut launches = 0u64;
    let mut spent = Duration::ZERO;
    // One launch of `c`'s configuration into scratch arrays; timed, its
    // time on the stream.
    // `replay`: the batch captured as a graph (see `Graphs`), launched
    // as one instead of launch by launch.
    let mut run_one = |c: &mut Candidate,
                       timed: bool,
                       scratch: &mut Scratch,
                       replay: Option<&Replay>|
     -> Result<Duration> {
        if scratch.needs_refresh() {
            scratch.refresh(stream)?;
        }
        let config = &tuning.inner.configs[c.index];
        let grid = tuning.grid_of(config, call);
        let swap = scratch.swap(call);
        let run = call.configured(config, grid, Some(swap));
        // Scratch made again per repetition cannot be batched: one launch
        // per sample then.
        let batch = if scratch.needs_refresh() { 1 } else { c.batch };
        // What the host queues per timed sample: one graph, or the batch.
        let queued = if replay.is_some() { 1 } else { batch };
        let enqueued = std::cell::Cell::new(Duration::ZERO);
        let mut launch = || {
            let started = std::time::Instant::now();
            let result = match replay {
                Some(replay) => stream.replay(replay),
                None => (0..batch).try_for_each(|_| run.launch().map(drop)),
            };
            enqueued.set(started.elapsed());
            result
        };
        if timed {
            // A batch the host took about as long to queue as the GPU
            // waited may have timed the host: timed again with a longer
            // wait (twice at most; the last time is kept either way).
            let mut last = Duration::ZERO;
            for attempt in 0..3 {
                delay.prepare(queued, stream)?;
                // Behind the wait, one untimed launch of the same
                // configuration first: a batch starts on a GPU that has
                // just run this kernel, as the launches of a loop do
                // (after an idle wait, the first launch runs slower, by an
                // amount that differs between configurations).
                let timed = {
                    let mut hold = delay.hold(stream);
                    let mut before = || -> Result<()> {
                        hold()?;
                        run.launch().map(drop)
                    };
                    stream.time(&mut before, &mut launch)
                };
                match timed {
                    Ok(t) => {
                        last = t;
                        if delay.starved(enqueued.get(), queued) && attempt < 2 {
                            continue;
                        }
                        c.samples.push(t / batch);
                    }
                    Err(e) => c.failed = Some(e.to_string()),
                }
                break;
            }
            return Ok(last);
        } else {
            match launch().and_then(|()| stream.synchronize()) {
                Ok(()) => delay.saw_enqueue(enqueued.get(), queued),
                Err(e) => c.failed = Some(e.to_string()),
            }
        }
        Ok(Duration::ZERO)
    };

    for _ in 0..options.warmup {
        for c in candidates.iter_mut().filter(|c| c.failed.is_none()) {
            launches += 1;
            run_one(c, false, scratch, None)?;
        }
    }
    // One timed launch of each sets its batch; the probe is not a sample.
    for c in candidates.iter_mut().filter(|c| c.failed.is_none()) {
        launches += 2;
        let probe = run_one(c, true, scratch, None)?;
        spent += probe;
        c.samples.clear();
        c.batch = batch_for(probe);
    }
    let graphs = Graphs::capture(tuning, call, device, &candidates, &scratches);
    let min_reps = options.min_reps.max(1);
    for round in 0..options.max_reps.max(min_reps) {
        let alive: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].failed.is_none() && !candidates[i].done)
            .collect();
        if alive.is_empty() {
            break;
        }
        // Rotate the order each round so no configuration always runs
        // right after another's launch, and the scratch set each round
        // writes.
        let start = round as usize % alive.len();
        let place = round as usize % scratches.len();
        scratch = &mut scratches[place];
        for k in 0..alive.len() {
            let i = alive[(start + k) % alive.len()];
            let replay = graphs.as_ref().and_then(|g| g.replays[i][place].as_ref());
            let c = &mut candidates[i];
            // The batch, and the untimed launch before it.
            launches += 1 + u64::from(if scratch.needs_refresh() { 1 } else { c.batch });
            spent += run_one(c, true, scratch, replay)?;
        }
        if round + 1 < min_reps {
            continue;
        }
        let alive: Vec<usize> = alive
            .into_iter()
            .filter(|&i| candidates[i].failed.is_none())
            .collect();
        let Some(&best) = alive.iter().min_by_key(|&&i| candidates[i].quantile(0.5)) else {
            break;
        };
        let best_q3 = candidates[best].quantile(0.75);
        for &i in &alive {
            if i != best && candidates[i].quantile(0.25) > best_q3 {
                candidates[i].done = true;
            }
        }
        let remaining = alive.iter().filter(|&&i| !candidates[i].done).count();
        if remaining <= 1 || spent >= options.budget {
            break;
        }
    }
    records.count_launches(launches);
    Ok(candidates
        .into_iter()
        .map(|c| {
            let outcome = match c.failed {
                Some(e) => Err(e),
                None if c.samples.is_empty() => Err("no sample was timed".to_string()),
                None => Ok(c.quantile(0.5)),
            };
            (c.index, outcome)
        })
        .collect())
}
