//! A prepared call: it owns its kernel, variant, stream, inputs and output
//! shapes, so it runs later, on any thread, even after the memo dropped the
//! variant.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::array::outputs::Outputs;
use crate::array::Array;
use crate::device::dispatch::{dispatch, Dispatch, OutputSpec};
use crate::device::Stream;
use crate::error::Result;
use crate::kernel::variant::Variant;
use crate::kernel::Kernel;

/// A prepared call: owns its kernel, variant, stream, inputs and output
/// shapes. Running it does no generation and no memo lookup.
pub struct Launch {
    pub(super) kernel: Kernel,
    pub(super) variant: Arc<Variant>,
    pub(super) stream: Stream,
    pub(super) inputs: SmallVec<[Array; 8]>,
    pub(super) outputs: SmallVec<[OutputSpec; 2]>,
    pub(super) grid: [u32; 3],
    pub(super) threadgroup: [u32; 3],
    pub(super) init_value: Option<f64>,
    pub(super) shared_mem_bytes: u32,
    /// Outputs written into arrays the caller gave (`Call::output_into`).
    pub(super) targets: Vec<(usize, Array)>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.kernel.name())
            .field("variant", &self.variant.name())
            .field("grid", &self.grid)
            .field("threadgroup", &self.threadgroup)
            .finish_non_exhaustive()
    }
}

impl Launch {
    /// The variant this launch runs (it owns it).
    pub fn variant(&self) -> &Arc<Variant> {
        &self.variant
    }

    /// The grid in threads and the threadgroup after clamping.
    pub fn dims(&self) -> ([u32; 3], [u32; 3]) {
        (self.grid, self.threadgroup)
    }

    /// Compiles (or finds in the caches) this launch's function without
    /// running it: a warm-up, or a check that a body compiles on a device.
    pub fn compile(&self) -> Result<()> {
        self.variant
            .function_on(self.stream.device(), self.kernel.name())?;
        Ok(())
    }

    /// Compiles or finds this launch's module and pins it on its device:
    /// it is never unloaded while the device lives, whatever
    /// `max_loaded_modules` says. For work that launches it without asking
    /// kernelkit again (a captured CUDA graph replays its kernel nodes).
    pub fn pin_module(&self) -> Result<()> {
        self.variant
            .pin_on(self.stream.device(), self.kernel.name())?;
        Ok(())
    }

    /// Compiles or finds the function, allocates the outputs and launches.
    pub fn run(&self) -> Result<Outputs> {
        self.run_inner(None)
    }

    /// Runs once to set up (function, inputs, outputs), then times `iters`
    /// launches of the same job by the backend alone, arguments marshalled
    /// once: the floor that dispatch is measured against. For benchmarks.
    #[cfg(feature = "bench")]
    pub fn time_raw_launches(&self, iters: u32) -> Result<std::time::Duration> {
        let mut elapsed = std::time::Duration::ZERO;
        self.run_inner(Some((iters, &mut elapsed)))?;
        Ok(elapsed)
    }

    #[inline(always)]
    fn run_inner(&self, raw: Option<(u32, &mut std::time::Duration)>) -> Result<Outputs> {
        let spec = self.kernel.spec();
        let function = super::capture::function_for(
            &self.variant,
            self.stream.device(),
            &self.stream,
            &spec.name,
        )?;
        let inputs: SmallVec<[&Array; 8]> = self.inputs.iter().collect();
        let targets: Vec<(usize, &Array)> = self.targets.iter().map(|(i, a)| (*i, a)).collect();
        let mut outputs = Outputs::default();
        dispatch(
            &Dispatch {
                spec,
                function: &function,
                inputs: &inputs,
                outputs: &self.outputs,
                init_value: self.init_value,
                grid: self.grid,
                threadgroup: self.threadgroup,
                shared_mem_bytes: self.shared_mem_bytes,
                stream: &self.stream,
                targets: &targets,
            },
            &mut outputs,
            raw,
        )?;
        Ok(outputs)
    }
}
