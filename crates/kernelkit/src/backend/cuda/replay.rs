//! Graphs kernelkit captured from its own stream, launched again on any
//! stream of the device: autotuning times a batch of one configuration's
//! launches as one graph launch, so the batch runs back to back as a
//! captured loop does, whatever the host's launch rate.

use std::sync::Arc;

use super::cuda_stream::CudaStream;
use super::driver::{self, RawGraphExec};
use super::Context;
use crate::error::Result;

/// An executable graph and the context it belongs to; destroyed with it.
pub(crate) struct CudaReplay {
    exec: RawGraphExec,
    ctx: Arc<Context>,
}

impl CudaReplay {
    /// The work `run` queues on `stream` (private to the caller), captured;
    /// `None` where the driver has no graphs.
    pub(super) fn capture(
        stream: &CudaStream,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<CudaReplay>> {
        if !driver::graphs_available() {
            return Ok(None);
        }
        let exec = stream.capture(run)?;
        Ok(Some(CudaReplay {
            exec,
            ctx: stream.ctx.clone(),
        }))
    }

    /// Queues the graph's work on `stream`.
    pub(super) fn launch_on(&self, stream: &Arc<CudaStream>) -> Result<()> {
        stream.replay(self.exec)
    }
}

impl Drop for CudaReplay {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            driver::graph_exec_destroy(self.exec);
        }
    }
}
