//! Host memory for the null device's arrays: the CPU backend's (zeroed,
//! 64-byte aligned), so uploads, downloads, fills and strided copies are
//! real; only kernels do not run.

use crate::backend::cpu::memory as host;
use crate::backend::{ArgRef, Memory};
use crate::error::{DeviceError, Error, Result};

pub(super) fn alloc(len: usize) -> Result<Memory> {
    host::alloc(len).ok_or_else(|| out_of_memory(len))
}

pub(super) fn upload(bytes: &[u8]) -> Result<Memory> {
    let mem = alloc(bytes.len())?;
    host::write(&mem, 0, bytes);
    Ok(mem)
}

pub(super) fn download(mem: &Memory, offset: usize, len: usize) -> Result<Vec<u8>> {
    host::read(mem, offset, len).ok_or_else(|| out_of_memory(len))
}

pub(super) fn fill(mem: &Memory, pattern: &[u8]) {
    host::fill(mem, pattern);
}

pub(super) fn gather(src: &ArgRef<'_>, dst: &Memory) {
    host::gather(src, dst);
}

/// The error for an allocation the system refused.
fn out_of_memory(len: usize) -> Error {
    DeviceError::Driver {
        device: "null".into(),
        operation: "allocate",
        reason: format!("the system cannot provide {len} bytes of host memory"),
    }
    .into()
}
