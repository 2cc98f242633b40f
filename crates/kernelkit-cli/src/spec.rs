//! Kernel spec files (JSON), shared by `source` and `run`. Being written.
