//! Device memory as the backend hands it out: allocations in a stream's
//! order (from that stream's block cache, `cuda_stream`), uploads, downloads and
//! fills. The same jobs as the CPU backend's `memory`; strided copies are
//! the built-in gather kernel's (`gather`).

use std::sync::Arc;

use super::cuda_stream::{alloc_fresh_on, alloc_on, CudaStream};
use super::driver::{self, memset};
use crate::backend::{Memory, StreamHandle};
use crate::error::{DeviceError, Result};

/// The CUDA stream of `home`, where its memory is allocated.
fn cuda_of(home: &StreamHandle) -> Result<&Arc<CudaStream>, DeviceError> {
    home.cuda().ok_or_else(|| DeviceError::Driver {
        device: "cuda".into(),
        operation: "allocation",
        reason: "the stream is not a CUDA stream".into(),
    })
}

/// `len` bytes in the order of `home`.
pub(super) fn alloc(len: usize, home: &StreamHandle) -> Result<Memory> {
    alloc_on(cuda_of(home)?, len)
}

/// [`alloc`], never a block from the stream's cache.
pub(super) fn alloc_fresh(len: usize, home: &StreamHandle) -> Result<Memory> {
    alloc_fresh_on(cuda_of(home)?, len)
}

/// A new block holding `bytes` (`fresh`: never one from the stream's
/// cache); the copy has finished when this returns.
pub(super) fn upload(bytes: &[u8], home: &StreamHandle, fresh: bool) -> Result<Memory> {
    let stream = cuda_of(home)?;
    let buf = if fresh {
        alloc_fresh_on(stream, bytes.len())?
    } else {
        alloc_on(stream, bytes.len())?
    };
    stream.ctx.bind()?;
    if bytes.is_empty() {
        stream.synchronize()?;
    } else {
        // The block holds at least `bytes.len()` bytes; the copy waits for
        // the stream.
        driver::copy_to_device(buf.addr, bytes, stream.raw, &stream.ctx.label)?;
    }
    Ok(buf)
}

/// Copies `len` bytes at `offset` to the host, in `stream`'s order.
pub(super) fn download(
    stream: &Arc<CudaStream>,
    buf: &Memory,
    offset: usize,
    len: usize,
) -> Result<Vec<u8>> {
    // Reserved fallibly: a huge output is an error, not an abort.
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        return Err(DeviceError::Driver {
            device: stream.ctx.label.clone(),
            operation: "allocate",
            reason: format!("the system cannot provide {len} bytes of host memory"),
        }
        .into());
    }
    out.resize(len, 0);
    if len == 0 {
        return Ok(out);
    }
    if offset.checked_add(len).is_none_or(|end| end > buf.len) {
        return Err(DeviceError::Driver {
            device: stream.ctx.label.clone(),
            operation: "cuMemcpyDtoHAsync",
            reason: format!(
                "bytes {offset}..{} are outside the {}-byte buffer",
                offset.saturating_add(len),
                buf.len
            ),
        }
        .into());
    }
    stream.ctx.bind()?;
    buf.used_on(stream);
    // In bounds (checked above); the copy waits for the stream.
    driver::copy_to_host(
        &mut out,
        buf.addr + offset as u64,
        stream.raw,
        &stream.ctx.label,
    )?;
    Ok(out)
}

/// Repeats `pattern` (1, 2, 4 or 8 bytes) over the buffer, in stream order.
pub(super) fn fill(stream: &Arc<CudaStream>, buf: &Memory, pattern: &[u8]) -> Result<()> {
    let label = &stream.ctx.label;
    let n = buf.len / pattern.len().max(1);
    if n == 0 {
        return Ok(());
    }
    stream.ctx.bind()?;
    buf.used_on(stream);
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    // Every arm writes `n` elements of the pattern's size inside the buffer
    // (`n * size <= len`), in stream order.
    let (addr, s) = (buf.addr, stream.raw);
    match pattern.len() {
        1 => memset::d8(addr, pattern[0], n, s, label)?,
        2 => memset::d16(
            addr,
            u16::from_le_bytes([pattern[0], pattern[1]]),
            n,
            s,
            label,
        )?,
        4 => memset::d32(addr, word(pattern), n, s, label)?,
        8 if pattern[..4] == pattern[4..] => memset::d32(addr, word(pattern), n * 2, s, label)?,
        8 => {
            // Low and high words as two strided fills (pitch 8 bytes).
            memset::d32_strided(addr, 8, word(&pattern[..4]), n, s, label)?;
            memset::d32_strided(addr + 4, 8, word(&pattern[4..]), n, s, label)?;
        }
        other => {
            return Err(DeviceError::Driver {
                device: label.clone(),
                operation: "fill",
                reason: format!("no fill for {other}-byte elements"),
            }
            .into())
        }
    }
    Ok(())
}
