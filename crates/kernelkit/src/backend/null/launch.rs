//! Records launches instead of running them.

use std::sync::Mutex;

use crate::backend::{ArgRef, Function, LaunchDesc};
use crate::dtype::DType;
use crate::error::{DeviceError, Result};

/// One launch a null device received instead of running it: what a GPU
/// backend would have handed its driver. Read with
/// `Device::recorded_launches`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchRecord {
    /// The kernel's name.
    pub kernel: String,
    /// The generated function (variant) launched.
    pub function: String,
    /// The grid, in threads (as Metal counts it).
    pub grid: [u32; 3],
    /// The threadgroup, after clamping to the grid.
    pub threadgroup: [u32; 3],
    /// Dynamic shared (threadgroup) memory, in bytes.
    pub shared_mem_bytes: u32,
    /// The inputs as the kernel sees them: a strided input of a kernel that
    /// asks for row-contiguous inputs appears as its contiguous copy.
    pub inputs: Vec<ArgRecord>,
    /// The outputs, allocated (and filled) for this launch.
    pub outputs: Vec<ArgRecord>,
}

/// One argument of a [`LaunchRecord`]: where its element 0 was and its
/// layout.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgRecord {
    /// The host address of element 0 (two arguments with one address share
    /// memory).
    pub addr: u64,
    /// The element type.
    pub dtype: DType,
    /// The shape, in elements.
    pub shape: Vec<usize>,
    /// The strides, in elements.
    pub strides: Vec<isize>,
}

impl ArgRecord {
    fn of(arg: &ArgRef<'_>) -> ArgRecord {
        ArgRecord {
            addr: arg.addr,
            dtype: arg.dtype,
            shape: arg.shape.to_vec(),
            strides: arg.strides.to_vec(),
        }
    }
}

/// A null backend's launches, in the order they arrived.
#[derive(Default)]
pub(crate) struct LaunchLog {
    records: Mutex<Vec<LaunchRecord>>,
}

impl LaunchLog {
    /// Records `desc` (`desc.iters` launches of the same arguments).
    pub(super) fn record(&self, desc: &LaunchDesc<'_>) -> Result<()> {
        let Function::Null(function) = desc.function else {
            // Variants keep a function per device object, so a function
            // of another backend never reaches this one.
            return Err(DeviceError::Driver {
                device: "null".into(),
                operation: "launch",
                reason: format!(
                    "kernel `{}`: the function was not resolved by a null device",
                    desc.spec.name
                ),
            }
            .into());
        };
        let unloaded = || -> crate::Error {
            DeviceError::Faulted {
                device: "null".into(),
                reason: format!(
                    "kernel `{}`: launched `{}`, a function of an unloaded module",
                    desc.spec.name, function.name
                ),
            }
            .into()
        };
        if !function.module_loaded() {
            return Err(unloaded());
        }
        let record = LaunchRecord {
            kernel: desc.spec.name.clone(),
            function: function.name.to_string(),
            grid: desc.grid,
            threadgroup: desc.threadgroup,
            shared_mem_bytes: desc.shared_mem_bytes,
            inputs: desc.inputs.iter().map(ArgRecord::of).collect(),
            outputs: desc.outputs.iter().map(ArgRecord::of).collect(),
        };
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        for _ in 1..desc.iters {
            records.push(record.clone());
        }
        records.push(record);
        drop(records);
        // Still loaded after the "run": nothing unloaded it meanwhile.
        if !function.module_loaded() {
            return Err(unloaded());
        }
        Ok(())
    }

    /// A copy of the records so far.
    pub(crate) fn snapshot(&self) -> Vec<LaunchRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The records so far, leaving none.
    pub(crate) fn take(&self) -> Vec<LaunchRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Checks that a strided copy of a null device of the CUDA dialect got the
/// entry point of the copy kernel for `size`-byte elements, of a null
/// module still loaded: what a GPU would launch (see `backend::copy`).
pub(super) fn check_copy_function(function: Option<&Function>, size: usize) -> Result<()> {
    let want = crate::backend::copy::ENTRIES[crate::backend::copy::entry_index(size)];
    let reason = match function {
        Some(Function::Null(f)) if &*f.name == want && f.module_loaded() => return Ok(()),
        Some(Function::Null(f)) if &*f.name != want => {
            format!("the copy of {size}-byte elements was given `{}`", f.name)
        }
        Some(Function::Null(f)) => format!("`{}` is of an unloaded module", f.name),
        Some(_) => "the copy kernel was not resolved by a null device".to_string(),
        None => format!("no copy kernel was given for {size}-byte elements"),
    };
    Err(DeviceError::Driver {
        device: "null".into(),
        operation: "strided copy",
        reason,
    }
    .into())
}
