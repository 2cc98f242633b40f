//! The CUDA backend (being written): until it lands, opening a CUDA device
//! reports that it is unavailable.

use crate::error::{DeviceError, Result};

pub(crate) struct CudaBackend;

impl CudaBackend {
    pub(crate) fn open(ordinal: u32) -> Result<Box<dyn crate::backend::Backend>> {
        Err(DeviceError::Unavailable {
            device: format!("cuda:{ordinal}"),
            reason: "the CUDA backend is not written yet".into(),
        }
        .into())
    }
}
