//! The CPU backend's settings: which compiler, how long a compile may run,
//! where the precompiled prelude header lives.

use std::path::PathBuf;
use std::time::Duration;

use super::Vars;

/// How long one CPU compile may run before it is killed, by default.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// The CPU backend's compiler settings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuConfig {
    /// The C++20 compiler command (`CXX`); `None`: the first of `c++`,
    /// `g++`, `clang++` on the `PATH`. Its identity and version are part
    /// of every module key.
    pub compiler: Option<String>,
    /// How long one compile may run (`KERNELKIT_COMPILE_TIMEOUT`); the
    /// compiler and every process it started are killed then.
    pub compile_timeout: Duration,
    /// Where the CPU prelude's precompiled header lives
    /// (`KERNELKIT_PCH_DIR`); `None`: no precompiled header. Used only
    /// when the directory is the user's own and not writable by group or
    /// others (it is created with mode 0700 if missing).
    pub pch_dir: Option<PathBuf>,
}

/// The compiler from the `PATH`, the default timeout, no precompiled
/// header (its default place is in the temporary directory, which the
/// environment names: [`Config::from_env`](super::Config::from_env) finds it).
impl Default for CpuConfig {
    fn default() -> CpuConfig {
        CpuConfig {
            compiler: None,
            compile_timeout: DEFAULT_COMPILE_TIMEOUT,
            pch_dir: None,
        }
    }
}

impl CpuConfig {
    /// `CXX`, `KERNELKIT_COMPILE_TIMEOUT`, `KERNELKIT_PCH_DIR` (and
    /// `TMPDIR` for the default PCH directory).
    pub(super) fn from_vars(vars: &Vars<'_>) -> CpuConfig {
        let compiler = vars.text("CXX").filter(|s| !s.trim().is_empty());
        // Seconds, positive, and a duration at all (`inf` or 1e300 are not).
        let compile_timeout = vars
            .text("KERNELKIT_COMPILE_TIMEOUT")
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .unwrap_or(DEFAULT_COMPILE_TIMEOUT);
        let pch_dir = match vars.os("KERNELKIT_PCH_DIR") {
            Some(d) if d.is_empty() => None,
            Some(d) => Some(PathBuf::from(d)),
            None => {
                // What `std::env::temp_dir` answers on Unix.
                let tmp = vars
                    .os_nonempty("TMPDIR")
                    .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
                let uid = rustix::process::geteuid().as_raw();
                Some(tmp.join(format!("kernelkit-pch-{uid}")))
            }
        };
        CpuConfig {
            compiler,
            compile_timeout,
            pch_dir,
        }
    }
}
