//! The null device: kernelkit's whole path of a call, with nothing run at
//! its end (see `backend::null`).

use crate::backend::null::{LaunchRecord, NullBackend, NullOptions};
use crate::backend::StreamHandle;
use crate::config::{CacheConfig, Config};
use crate::device::{Device, DeviceKind};

impl Device {
    /// A device that runs nothing, for tests: of kernelkit, and of programs
    /// that use it. Calls on it are checked, their variants generated (in
    /// the CPU backend's C++) and memoized, their modules "compiled" (the
    /// source is kept as the artifact: no compiler runs) and cached in
    /// memory only (whatever the environment says: a null device's
    /// artifacts have no place in the artifact store; a
    /// [`DeviceBuilder`](crate::DeviceBuilder) can give one a store);
    /// outputs are allocated and filled; then each launch is recorded ([`Device::recorded_launches`]) instead of run.
    ///
    /// Arrays live in host memory: uploads and downloads work, outputs hold
    /// zeros (or the call's `init_value`), never what the kernel would
    /// compute. A source with an `#error` line outside any conditional
    /// block fails to compile, as under a real compiler, so failure paths
    /// can be tested. Each call returns a new device with its own caches;
    /// its limits are the CPU backend's (no dynamic shared memory).
    ///
    /// ```
    /// use kernelkit::{DType, Device, Kernel};
    /// # fn main() -> kernelkit::Result<()> {
    /// let device = Device::new_null();
    /// let kernel = Kernel::builder("add_offset")
    ///     .inputs(["inp"])
    ///     .outputs(["out"])
    ///     .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + 3;")
    ///     .build()?;
    /// let x = device.array_from_slice(&[1.0f32; 100], [100])?;
    /// let out = kernel
    ///     .call([&x])
    ///     .output([100], DType::F32)
    ///     .grid([100, 1, 1])
    ///     .threadgroup([32, 1, 1])
    ///     .launch()?;
    /// assert_eq!(out[0].to_vec::<f32>()?, vec![0.0; 100]); // nothing ran
    /// let launches = device.recorded_launches();
    /// assert_eq!(launches.len(), 1);
    /// assert_eq!(launches[0].kernel, "add_offset");
    /// assert_eq!(launches[0].grid, [100, 1, 1]);
    /// assert_eq!(launches[0].inputs[0].shape, vec![100]);
    /// assert_eq!(device.cache_stats().compiles, 1);
    /// # Ok(()) }
    /// ```
    pub fn new_null() -> Device {
        Device::new_null_with(NullOptions::default())
    }

    /// [`Device::new_null`] with `options`: the dialect to generate (with
    /// the limits of a typical device of that dialect — for CUDA, dynamic
    /// shared memory up to 227 KiB; for Metal, 32 KiB and no 64-bit floats
    /// — and that dialect's checks: the CPU dialect refuses bodies that
    /// synchronize a threadgroup, the others accept them), and how long a
    /// compile takes.
    pub fn new_null_with(options: NullOptions) -> Device {
        Device::open_null(options, &Config::default().cache)
    }

    /// A null device with `options` and the cache settings `cache`.
    pub(crate) fn open_null(options: NullOptions, cache: &CacheConfig) -> Device {
        Device::from_parts(
            DeviceKind::Null,
            0,
            Box::new(NullBackend::new(options)),
            StreamHandle::Host,
            cache,
            None,
        )
    }

    /// The launches this device recorded so far, oldest first: a null
    /// device's (each launch it was asked for); always empty for a device
    /// that runs kernels.
    pub fn recorded_launches(&self) -> Vec<LaunchRecord> {
        self.0
            .backend
            .launch_log()
            .map(|log| log.snapshot())
            .unwrap_or_default()
    }

    /// [`Device::recorded_launches`], leaving none recorded (to look at
    /// the launches of one step of a test at a time).
    pub fn take_recorded_launches(&self) -> Vec<LaunchRecord> {
        self.0
            .backend
            .launch_log()
            .map(|log| log.take())
            .unwrap_or_default()
    }
}
