//! Compiling ahead of time: a set of variants (of one kernel or many, from
//! calls or from descriptions) compiled in parallel in the background,
//! without running anything, so that their first calls find them compiled.
//!
//! ```no_run
//! use kernelkit::{DType, Device, InputDesc, Kernel, PassMode, Precompile, VariantDesc};
//! # fn main() -> kernelkit::Result<()> {
//! let device = Device::cpu();
//! let kernel = Kernel::builder("scale")
//!     .inputs(["x"])
//!     .outputs(["y"])
//!     .source("uint i = thread_position_in_grid.x; y[i] = x[i] * 2;")
//!     .build()?;
//! let mut precompile = Precompile::builder();
//! for dtype in [DType::F32, DType::F16, DType::I32] {
//!     let inputs = [InputDesc { dtype, mode: PassMode::Device }];
//!     let desc = VariantDesc { inputs: &inputs, outputs: &[dtype], template: &[] };
//!     precompile = precompile.variant(&kernel, &device, &desc);
//! }
//! let handle = precompile.start();
//! println!("{:?}", handle.poll());        // how far it got, without waiting
//! for r in handle.wait().results {        // or drop it: the compiles go on
//!     if let Err(e) = r.result {
//!         eprintln!("{} failed: {e}", r.kernel);
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! - **Parallel.** Items are compiled by up to [`PrecompileBuilder::workers`]
//!   threads (default: the machine's cores, at most 16). Each compile goes
//!   through the device's module resolver like a call's: one compile per
//!   module key however many ask (a call made meanwhile waits for the same
//!   compile instead of starting another), the artifact store first and
//!   after. The CPU compiler runs as a process of its own, and CUDA
//!   compiles that find NVRTC busy in this process go to compile worker
//!   processes, so the compiles run in parallel on both backends.
//! - **The handle** ([`Precompile`]) can be polled ([`Precompile::poll`]),
//!   waited on ([`Precompile::wait`], [`Precompile::wait_timeout`]), or
//!   dropped: the threads own what they compile and finish it for the
//!   caches (a module the device keeps, an entry in the store) as long as
//!   the process lives.
//! - **Per-variant errors.** Each item has its own result
//!   ([`PrecompileResult`]); a failed compile does not stop the others, and
//!   an item whose variant cannot even be generated (wrong number of
//!   inputs, a template name that collides) fails on its own too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::codegen::variant::VariantDesc;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::call::Call;
use crate::kernel::variant::Variant;
use crate::kernel::Kernel;

/// The most threads a precompile starts by default.
const DEFAULT_MAX_WORKERS: usize = 16;

/// One thing to compile: a variant on a device, or why there is none.
enum Item {
    Compile {
        kernel: String,
        device: Device,
        variant: Arc<Variant>,
    },
    Failed {
        kernel: String,
        error: Error,
    },
}

/// Collects what to compile; [`PrecompileBuilder::start`] starts it.
#[derive(Default)]
pub struct PrecompileBuilder {
    items: Vec<Item>,
    workers: Option<usize>,
}

impl std::fmt::Debug for PrecompileBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrecompileBuilder")
            .field("items", &self.items.len())
            .field("workers", &self.workers)
            .finish()
    }
}

impl PrecompileBuilder {
    /// Adds the variant `call` runs, on the device it runs on. The call
    /// needs its inputs, outputs and template arguments, not a grid; its
    /// arrays are not kept (a variant depends on their dtypes and pass
    /// modes only).
    pub fn call(mut self, call: &Call<'_>) -> Self {
        let kernel = call.kernel_name().to_string();
        self.items.push(match call.device_and_variant() {
            Ok((device, variant)) => Item::Compile {
                kernel,
                device,
                variant,
            },
            Err(error) => Item::Failed { kernel, error },
        });
        self
    }

    /// Adds the variant of `kernel` that `desc` describes, on `device`
    /// (see [`Kernel::variant_on`]): a variant named without arrays.
    pub fn variant(mut self, kernel: &Kernel, device: &Device, desc: &VariantDesc<'_>) -> Self {
        let name = kernel.name().to_string();
        self.items.push(match kernel.variant_on(device, desc) {
            Ok(variant) => Item::Compile {
                kernel: name,
                device: device.clone(),
                variant,
            },
            Err(error) => Item::Failed {
                kernel: name,
                error,
            },
        });
        self
    }

    /// Sets how many compiles run at once (at least 1).
    pub fn workers(mut self, count: usize) -> Self {
        self.workers = Some(count.max(1));
        self
    }

    /// Starts compiling in the background and returns the handle.
    pub fn start(self) -> Precompile {
        let total = self.items.len();
        let workers = self
            .workers
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(DEFAULT_MAX_WORKERS)
            })
            .min(total)
            .max(1);
        let shared = Arc::new(Shared {
            items: self.items,
            next: AtomicUsize::new(0),
            state: Mutex::new(State {
                results: (0..total).map(|_| None).collect(),
                done: 0,
                failed: 0,
            }),
            changed: Condvar::new(),
            started: Instant::now(),
        });
        for _ in 0..workers.min(total) {
            let shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("kernelkit-precompile".into())
                .spawn(move || shared.work());
            if spawned.is_err() {
                // No thread: this one's share falls to the others, or, with
                // none at all, to `wait` (see `Precompile::wait`).
                break;
            }
        }
        Precompile { shared }
    }
}

/// What the compiling threads share with the handle.
struct Shared {
    items: Vec<Item>,
    /// The next item to take.
    next: AtomicUsize,
    state: Mutex<State>,
    changed: Condvar,
    started: Instant,
}

struct State {
    results: Vec<Option<(Result<()>, Duration)>>,
    done: usize,
    failed: usize,
}

impl Shared {
    /// Takes items until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.items.get(i) else {
                return;
            };
            let started = Instant::now();
            let result = match item {
                Item::Compile {
                    kernel,
                    device,
                    variant,
                } => variant.compile_on(device, kernel).map(|_| ()),
                Item::Failed { error, .. } => Err(error.clone()),
            };
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.done += 1;
            state.failed += usize::from(result.is_err());
            state.results[i] = Some((result, started.elapsed()));
            drop(state);
            self.changed.notify_all();
        }
    }

    fn progress(&self, state: &State) -> Progress {
        Progress {
            total: self.items.len(),
            done: state.done,
            failed: state.failed,
            elapsed: self.started.elapsed(),
        }
    }
}

/// A precompile under way. Dropping it does not stop the compiles.
pub struct Precompile {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Precompile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Precompile").field(&self.poll()).finish()
    }
}

/// How far a precompile got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Items in all.
    pub total: usize,
    /// Items finished (compiled, found compiled, or failed).
    pub done: usize,
    /// Items that failed.
    pub failed: usize,
    /// Time since the precompile started.
    pub elapsed: Duration,
}

impl Progress {
    /// Whether every item is finished.
    pub fn finished(&self) -> bool {
        self.done == self.total
    }
}

/// One item's outcome.
#[derive(Debug)]
pub struct PrecompileResult {
    /// The kernel's name.
    pub kernel: String,
    /// The generated function's name (empty when the variant could not be
    /// generated).
    pub function: String,
    /// Compiled (or found compiled), or why not.
    pub result: Result<()>,
    /// How long the item took (a compile, a load, or a wait for a compile
    /// another thread ran).
    pub time: Duration,
}

/// Every item's outcome, in the order they were added.
#[derive(Debug)]
pub struct PrecompileReport {
    /// One per item.
    pub results: Vec<PrecompileResult>,
    /// Wall time from start to the last item.
    pub elapsed: Duration,
}

impl PrecompileReport {
    /// The items that failed.
    pub fn failures(&self) -> impl Iterator<Item = &PrecompileResult> {
        self.results.iter().filter(|r| r.result.is_err())
    }
}

impl Precompile {
    /// A builder to add items to.
    pub fn builder() -> PrecompileBuilder {
        PrecompileBuilder::default()
    }

    /// How far it got, without waiting.
    pub fn poll(&self) -> Progress {
        let state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        self.shared.progress(&state)
    }

    /// Waits at most `timeout` for every item; returns the progress then.
    pub fn wait_timeout(&self, timeout: Duration) -> Progress {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.done < self.shared.items.len() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = match self.shared.changed.wait_timeout(state, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        self.shared.progress(&state)
    }

    /// Waits for every item and returns their outcomes.
    pub fn wait(self) -> PrecompileReport {
        // Takes items too: a precompile whose threads could not be
        // started is compiled here, and one that is nearly done is not
        // slowed by this thread idling.
        self.shared.work();
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.done < self.shared.items.len() {
            state = match self.shared.changed.wait(state) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        let elapsed = self.shared.started.elapsed();
        let results = state
            .results
            .iter_mut()
            .zip(&self.shared.items)
            .map(|(slot, item)| {
                let (result, time) = slot.take().unwrap_or((Ok(()), Duration::ZERO));
                let (kernel, function) = match item {
                    Item::Compile {
                        kernel, variant, ..
                    } => (kernel.clone(), variant.name().to_string()),
                    Item::Failed { kernel, .. } => (kernel.clone(), String::new()),
                };
                PrecompileResult {
                    kernel,
                    function,
                    result,
                    time,
                }
            })
            .collect();
        PrecompileReport { results, elapsed }
    }
}
