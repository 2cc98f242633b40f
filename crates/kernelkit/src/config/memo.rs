//! The variant memo's bounds: how much each kernel keeps of the variants it
//! generated (see `kernel::variants::memo`).

use std::sync::atomic::AtomicBool;

use super::{parse_size, warn_once, Vars};

/// The default byte budget of one kernel's memo: 4 MiB. A kernel with a
/// 95 KB header holds its header and prelude once, so this is less than the
/// seed's 64 full copies of such a source (64 × 95 KB ≈ 6 MB, before the
/// prelude), and a short kernel, whose variants take about 2 KB each,
/// keeps about two thousand of them.
pub const DEFAULT_MEMO_BYTES: usize = 4 << 20;

/// The default most variants one kernel's memo keeps: 4,096.
pub const DEFAULT_MEMO_ENTRIES: usize = 4096;

/// Bounds of each kernel's variant memo. Both hold at once: when a new
/// variant would take the memo past either, the memo evicts variants not
/// used since the clock hand last passed them (a launch already prepared
/// keeps its variant). The memo always keeps the variant it just built,
/// whatever its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoConfig {
    /// Bytes one kernel's memo may hold (`KERNELKIT_MEMO_BYTES`): the
    /// prelude, header and body the kernel's variants share (once per
    /// dialect and class) plus each variant's own part. An estimate of
    /// heap bytes, not counting the compiled modules (the device's).
    pub max_bytes: usize,
    /// Variants one kernel's memo may hold (`KERNELKIT_MEMO_ENTRIES`, at
    /// least 1).
    pub max_entries: usize,
}

impl Default for MemoConfig {
    fn default() -> MemoConfig {
        MemoConfig {
            max_bytes: DEFAULT_MEMO_BYTES,
            max_entries: DEFAULT_MEMO_ENTRIES,
        }
    }
}

/// Set once the memo's settings were warned about.
static WARNED: AtomicBool = AtomicBool::new(false);

impl MemoConfig {
    /// Sets the byte budget.
    pub fn max_bytes(mut self, bytes: usize) -> MemoConfig {
        self.max_bytes = bytes;
        self
    }

    /// Sets the most variants (at least 1).
    pub fn max_entries(mut self, entries: usize) -> MemoConfig {
        self.max_entries = entries.max(1);
        self
    }

    /// The settings of kernels built without their own: the environment's,
    /// read once per process ([`Config::from_env`](super::Config::from_env)).
    pub fn process() -> MemoConfig {
        static PROCESS: std::sync::OnceLock<MemoConfig> = std::sync::OnceLock::new();
        *PROCESS.get_or_init(|| super::Config::from_env().memo)
    }

    /// `KERNELKIT_MEMO_BYTES` (a size: bytes, or with a `K`, `M`, `G`
    /// suffix) and `KERNELKIT_MEMO_ENTRIES` (a count).
    pub(super) fn from_vars(vars: &Vars<'_>) -> MemoConfig {
        let warn = |message: String| {
            warn_once(&WARNED, &format!("kernelkit variant memo: {message}"));
        };
        let max_bytes = match vars.trimmed("KERNELKIT_MEMO_BYTES") {
            None => DEFAULT_MEMO_BYTES,
            Some(v) => parse_size(&v)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or_else(|| {
                    warn(format!(
                        "KERNELKIT_MEMO_BYTES={v:?} is not a size (e.g. 4194304, 4M); using 4 MiB"
                    ));
                    DEFAULT_MEMO_BYTES
                }),
        };
        let max_entries = match vars.trimmed("KERNELKIT_MEMO_ENTRIES") {
            None => DEFAULT_MEMO_ENTRIES,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    warn(format!(
                        "KERNELKIT_MEMO_ENTRIES={v:?} is not a count of at least 1; using 4096"
                    ));
                    DEFAULT_MEMO_ENTRIES
                }
            },
        };
        MemoConfig {
            max_bytes,
            max_entries,
        }
    }
}
