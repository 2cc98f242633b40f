//! Graph allocations: memory for a call's outputs (and strided inputs'
//! copies) while its stream is being captured into a CUDA graph.
//!
//! `cuMemAllocFromPoolAsync` on a capturing stream queues nothing: the
//! driver records an *allocation node* in the graph, whose address is
//! fixed for the life of the graph, and whose memory the graph owns (the
//! pool only lends its properties). The memory is live from each launch
//! of the graph that reaches the node until it is freed. `cuMemFreeAsync`
//! of it on a capturing stream records a *free node*; on a stream that no
//! longer captures it is a real free in that stream's order.
//!
//! Such memory must never enter a stream's block cache (`cuda_stream`) or be
//! handed to ordinary allocations: its address belongs to the graph, and
//! the graph writes it at every launch. So a [`GraphMem`] is its own owner:
//! it is no thread's spare, and its release frees it with the driver (after
//! ordering every other stream's use of it before its home stream's next
//! work, as a block's release does). The rules a user must follow around
//! it (when it may be read, when the graph may be launched again) are
//! CUDA's, written in `kernel::call::capture`.

use std::sync::Arc;

use super::cuda_stream::{CudaStream, DeviceMem};
use super::driver;
use crate::backend::{Memory, Owner, StreamHandle};
use crate::error::{DeviceError, Result};

/// Why a device cannot allocate under a capture: it has no stream-ordered
/// pool, so an allocation would be `cuMemAlloc`, which a capture forbids.
pub(super) const NO_POOL: &str = "graph allocations need a stream-ordered memory pool, and \
     this driver or GPU has none (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)";

/// Owns one graph allocation; frees it with the driver, in its home
/// stream's order, when its memory is released.
pub(crate) struct GraphMem {
    /// The streams that used it (no size class: never cached).
    uses: DeviceMem,
}

impl GraphMem {
    /// Records that work on `stream` uses the memory.
    #[inline]
    pub(crate) fn used_on(&self, stream: &Arc<CudaStream>) {
        self.uses.used_on(stream);
    }

    /// Frees the memory on `home`, the stream it was allocated on, once
    /// every other stream's use of it is ordered before that stream's next
    /// work: a free node of the graph while `home` is still capturing, a
    /// real free after. Its result is ignored (a drop cannot fail): a free
    /// the driver refuses (the capture was invalidated and its graph
    /// discarded, or no launch of the graph made the allocation live)
    /// leaves nothing kernelkit could reuse.
    pub(crate) fn release(&mut self, addr: u64, home: &StreamHandle) {
        let Some(home) = home.cuda() else {
            return; // Not reached: graph memory is allocated on CUDA streams.
        };
        self.uses.order_uses(home);
        if home.ctx.bind().is_ok() {
            driver::mem_free_async(addr, home.raw);
        }
    }
}

/// `len` bytes as a graph allocation on `stream`, which is being captured
/// (the caller asked): from the device's pool, bypassing the stream's
/// block cache. An error when the device has no pool ([`NO_POOL`]).
pub(super) fn alloc_in_graph(stream: &Arc<CudaStream>, len: usize) -> Result<Memory> {
    let label = &stream.ctx.label;
    let Some(pool) = stream.allocator().pool() else {
        return Err(DeviceError::Driver {
            device: label.clone(),
            operation: "cuMemAllocFromPoolAsync",
            reason: NO_POOL.into(),
        }
        .into());
    };
    stream.ctx.bind()?;
    // At least one byte: the driver refuses empty allocations.
    let addr = driver::mem_alloc_from_pool(len.max(1), pool, stream.raw, label)?;
    Ok(Memory {
        addr,
        len,
        owner: Owner::Graph(GraphMem {
            uses: DeviceMem::uses_only(stream),
        }),
    })
}
