//! Where device blocks come from when no stream's cache has one: a
//! kernelkit-owned stream-ordered memory pool whose release threshold
//! keeps freed memory mapped, or `cuMemAlloc` where the driver has no
//! pools. The per-stream block caches (`cuda_stream`) sit in front of it.

use std::sync::Arc;

use super::driver::{self, DevicePtr, RawPool, RawStream};
use super::Context;
use crate::error::Result;

/// One device's source of blocks.
pub(super) struct Allocator {
    pub(super) ctx: Arc<Context>,
    /// A kernelkit-owned memory pool (stream-ordered), if the driver has them.
    pool: Option<RawPool>,
    /// Keep freed blocks in per-stream caches (the configuration's
    /// `block_cache`).
    pub(super) cache: bool,
}

impl Allocator {
    /// The allocator of device `ordinal`, from a pool of its own if the
    /// driver has `pools`; `cache`: whether streams keep freed blocks.
    pub(super) fn new(
        ctx: Arc<Context>,
        ordinal: u32,
        pools: bool,
        cache: bool,
    ) -> Result<Allocator> {
        let mut pool = None;
        if pools {
            ctx.bind()?;
            pool = Some(driver::mem_pool_create(ordinal, &ctx.label)?);
        }
        Ok(Allocator { ctx, pool, cache })
    }

    /// The kernelkit-owned stream-ordered pool, if the driver has pools:
    /// graph allocations (`graph`) take their properties from it.
    pub(super) fn pool(&self) -> Option<RawPool> {
        self.pool
    }

    pub(super) fn describe(&self) -> &'static str {
        match (self.pool.is_some(), self.cache) {
            (true, true) => "per-stream cache over a stream-ordered pool",
            (true, false) => "stream-ordered pool",
            (false, true) => "per-stream cache over cuMemAlloc",
            (false, false) => "cuMemAlloc",
        }
    }

    /// `bytes` of device memory, usable in `stream`'s order (the context
    /// is current).
    pub(super) fn allocate(&self, bytes: usize, stream: RawStream) -> Result<DevicePtr> {
        Ok(match self.pool {
            Some(pool) => driver::mem_alloc_from_pool(bytes, pool, stream, &self.ctx.label)?,
            None => driver::mem_alloc(bytes, &self.ctx.label)?,
        })
    }

    /// Gives `ptr` (from [`Allocator::allocate`]) back, once every use of
    /// it queued on `stream` so far is done (see `cuda_stream`: every use of a
    /// block is ordered before this point on `stream`).
    pub(super) fn free(&self, ptr: DevicePtr, stream: RawStream) {
        match self.pool {
            Some(_) => driver::mem_free_async(ptr, stream),
            None => driver::mem_free(ptr),
        }
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        if let (Some(pool), Ok(())) = (self.pool, self.ctx.bind()) {
            // Every stream (and so every block) is gone: each holds an
            // `Arc` of this allocator. Waiting for the context ends their
            // queued work first.
            let _ = driver::ctx_synchronize(&self.ctx.label);
            driver::mem_pool_destroy(pool);
        }
    }
}
