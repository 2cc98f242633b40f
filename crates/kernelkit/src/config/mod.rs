//! Configuration: every setting of a device in one value, read from the
//! environment in one place.
//!
//! A [`Config`] holds the artifact store's settings ([`CacheConfig`], with
//! the fleet tier's, [`RemoteConfig`]), the CPU compiler's ([`CpuConfig`]),
//! the CUDA backend's ([`CudaConfig`]) and each kernel's variant memo's
//! ([`MemoConfig`]); one file each (`cache`, `remote`, `cpu`, `cuda`,
//! `memo`).
//! [`Config::from_env`] is the only code of the library that reads
//! environment variables; everything below the device floor (backends, the
//! store) takes its part of a `Config` as an argument. A device reads
//! `Config::from_env()` when it is created by the plain constructors
//! ([`Device::cpu`](crate::Device::cpu), [`Device::new_cuda`](crate::Device::new_cuda), ...),
//! so a program that sets variables before opening a device behaves as it
//! always did; a program or a test that wants to set things directly gives
//! a `Config` (or single settings) to [`Device::builder`](crate::Device::builder).
//!
//! | variable | setting | default |
//! |---|---|---|
//! | `KERNELKIT_CACHE` | [`CacheConfig::mode`]: `disk` (memory and disk tiers); `memory` or `off` (no disk tier) | `disk` |
//! | `KERNELKIT_CACHE_DIR` | [`CacheConfig::dir`] | `$XDG_CACHE_HOME/kernelkit`, else `$HOME/.cache/kernelkit` (`~/Library/Caches/kernelkit` on macOS) |
//! | `KERNELKIT_CACHE_MAX_BYTES` | [`CacheConfig::max_bytes`]: bytes, or with a `K`, `M`, `G` suffix (powers of 1024) | 1 GiB |
//! | `KERNELKIT_TRUSTED_KEYS` | [`CacheConfig::trusted_keys`]: a file of Ed25519 public keys (one a line) whose signed bundles `kernelkit cache import` accepts | none: no bundle is imported |
//! | `KERNELKIT_BUNDLE_MAX_BYTES` | [`CacheConfig::bundle_max_bytes`]: the largest bundle file `kernelkit cache import` reads (it is held whole in memory), bytes or with a `K`, `M`, `G` suffix; a larger one is refused before it is read | 1 GiB |
//! | `KERNELKIT_REMOTE_CACHE` | [`RemoteConfig::urls`]: the fleet tier's Redis, `redis://host:port/db` (`rediss://` for TLS), or a cluster's seed nodes separated by commas | none (no fleet tier) |
//! | `KERNELKIT_REMOTE_KEY_FILE` | [`RemoteConfig::key_files`]: the files of the secrets that sign entries, separated by `:` (the first signs, all verify) | none (no fleet tier) |
//! | `KERNELKIT_REMOTE_TTL` | [`RemoteConfig::ttl`], seconds; `0`: no expiry | 604800 (7 days) |
//! | `KERNELKIT_REMOTE_WAIT` | [`RemoteConfig::wait`]: the longest wait for another process's compile, seconds | 30 |
//! | `KERNELKIT_REMOTE_TIMEOUT` | [`RemoteConfig::connect_timeout`] and [`RemoteConfig::op_timeout`] (a deadline for each whole command), seconds | 1 |
//! | `CXX` | [`CpuConfig::compiler`] | the first of `c++`, `g++`, `clang++` on the `PATH` |
//! | `KERNELKIT_COMPILE_TIMEOUT` | [`CpuConfig::compile_timeout`], seconds | 300 |
//! | `KERNELKIT_PCH_DIR` | [`CpuConfig::pch_dir`]; empty: no precompiled header | `kernelkit-pch-<uid>` in `$TMPDIR` (else `/tmp`) |
//! | `KERNELKIT_NVRTC_FLAGS` | [`CudaConfig::nvrtc_flags`], whitespace-separated | none |
//! | `KERNELKIT_NVRTC_PATH` | [`CudaConfig::nvrtc_path`]: the `libnvrtc.so.*` to load, before any other | none |
//! | `KERNELKIT_PYTHON_SITE` | [`CudaConfig::python_site_dirs`], `:`-separated: where NVIDIA's NVRTC wheels are looked for | set by the Python package at import; else the `site-packages` of `VIRTUAL_ENV`, `CONDA_PREFIX` |
//! | `CUDA_HOME`, `CUDA_PATH` | [`CudaConfig::toolkit_dirs`], before `/usr/local/cuda` | `/usr/local/cuda` |
//! | `KERNELKIT_WORKER` | [`CudaConfig::worker`] | a `kernelkit` executable next to the running program |
//! | `KERNELKIT_COMPILE_WORKERS` | [`CudaConfig::max_workers`]; `0`: none | the core count, at most 16 |
//! | `KERNELKIT_START_WORKERS` | [`CudaConfig::start_workers`]: `demand` (one at a time, as compiles need them), `first` (all, in the background, at the first compile) | `demand` |
//! | `KERNELKIT_CUDA_ALLOC` | [`CudaConfig::block_cache`]: `cached` (per-stream block caches), `exact` (a debugging mode: exact-size blocks, none reused; `pool` is its first spelling) | `cached` |
//! | `KERNELKIT_MAX_LOADED_MODULES` | [`CacheConfig::max_loaded_modules`]: modules one device keeps loaded; the least recently used is unloaded past it | 4096 |
//! | `KERNELKIT_MEMO_BYTES` | [`MemoConfig::max_bytes`]: each kernel's variant memo, bytes or with a `K`, `M`, `G` suffix | 4 MiB |
//! | `KERNELKIT_MEMO_ENTRIES` | [`MemoConfig::max_entries`]: variants per kernel | 4096 |
//! | `KERNELKIT_CHECK_BOUNDS` | [`Config::check_bounds`]: `1` (or `true`, `on`, `yes`) checks the bounds of kernels built without saying | off |
//! | `KERNELKIT_NVTX` | [`NvtxConfig::enabled`]: NVTX ranges around compiles, loads and launches (`1` on, `0` off) | off |
//! | `NVTX_INJECTION64_PATH` | [`NvtxConfig::injection`]: the NVTX tool's injection library (set by the tool) | none (then `libnvToolsExt.so.1`, if found) |
//! | `KERNELKIT_JIT` | [`Config::jit`]: `allow`, `warn` (compile, log each variant once), `forbid` (a variant no tier holds is [`CallError::JitForbidden`](crate::CallError::JitForbidden)) | `allow` |
//! | `KERNELKIT_RECORD` | [`Config::record`]: a manifest file each variant the process resolves is appended to (JSON lines) | none |
//!
//! The memo's settings belong to kernels, not devices: a kernel built
//! without its own ([`KernelBuilder::memo`](crate::KernelBuilder::memo))
//! takes [`MemoConfig::process`], the environment's, read once.
//!
//! A value that cannot be parsed is reported once (a `tracing` warning) and
//! the default is used. Two things the operating system decides are not
//! settings and are looked up where they are used: the `PATH` search for
//! a compiler program that names no directory, and the temporary directory
//! that compiles work in.

mod cache;
mod cpu;
mod cuda;
mod memo;
mod nvtx;
mod production;
mod remote;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use cache::{
    parse_size, CacheConfig, CacheMode, DEFAULT_BUNDLE_MAX_BYTES, DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LOADED_MODULES,
};
pub use cpu::{CpuConfig, DEFAULT_COMPILE_TIMEOUT};
pub use cuda::{CompileWorkers, CudaCompileOptions, CudaConfig, StartWorkers};
pub use memo::{MemoConfig, DEFAULT_MEMO_BYTES, DEFAULT_MEMO_ENTRIES};
pub use nvtx::NvtxConfig;
pub use production::JitPolicy;
pub(crate) use production::{jit_policy, set_jit_policy};
pub use remote::{
    parse_remote_urls, RemoteAddressError, RemoteConfig, DEFAULT_BREAKER_COOLDOWN,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_LEASE, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_OP_TIMEOUT,
    DEFAULT_TTL, DEFAULT_WAIT,
};

/// Every setting of a device. `Config::default()` is the settings of an
/// empty environment, less what only the environment can tell (a home
/// directory, a temporary directory): it has no disk tier and no
/// precompiled header until they are given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// The artifact store (the disk tier under each device's kernel cache).
    pub cache: CacheConfig,
    /// The CPU backend's compiler.
    pub cpu: CpuConfig,
    /// The CUDA backend: NVRTC options, the toolkit, compile workers,
    /// memory.
    pub cuda: CudaConfig,
    /// Each kernel's variant memo (read by kernels, not devices: see the
    /// module documentation).
    pub memo: MemoConfig,
    /// Whether kernels built without saying check their bounds
    /// (`KERNELKIT_CHECK_BOUNDS=1`; see
    /// [`KernelBuilder::check_bounds`](crate::KernelBuilder::check_bounds)).
    /// Read by kernels, not devices, as the memo's settings.
    pub check_bounds: bool,
    /// NVTX ranges for profilers (`KERNELKIT_NVTX`): a device opened with
    /// them on turns them on for the process (the tool's library is one
    /// per process).
    pub nvtx: NvtxConfig,
    /// Whether the process may compile. The process's, not a device's:
    /// `kernel::jit` reads it from the environment at first use, and
    /// `kernel::jit::set_policy` changes it (a `Config` given to a device
    /// builder does not).
    pub jit: JitPolicy,
    /// The manifest the process records its variants in. The process's:
    /// `kernel::record` reads it from the environment at first use, and
    /// `kernel::record::start` changes it.
    pub record: Option<PathBuf>,
}

impl Config {
    /// The settings the environment gives (see the module documentation
    /// for the variables). This is the one place where the library reads
    /// environment variables.
    pub fn from_env() -> Config {
        Config::from_vars(&Vars(&|name| std::env::var_os(name)))
    }

    /// The settings that `vars` give: [`Config::from_env`] without the
    /// process (the tests give a map).
    pub(crate) fn from_vars(vars: &Vars<'_>) -> Config {
        Config {
            cache: CacheConfig::from_vars(vars),
            cpu: CpuConfig::from_vars(vars),
            cuda: CudaConfig::from_vars(vars),
            memo: MemoConfig::from_vars(vars),
            check_bounds: check_bounds_from_vars(vars),
            nvtx: NvtxConfig::from_vars(vars),
            jit: production::jit_from_vars(vars),
            record: production::record_from_vars(vars),
        }
    }

    /// The bounds-check default of kernels built without their own: the
    /// environment's, read once per process.
    pub fn process_check_bounds() -> bool {
        static PROCESS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *PROCESS.get_or_init(|| Config::from_env().check_bounds)
    }

    /// Sets which cache tiers are used.
    pub fn cache_mode(mut self, mode: CacheMode) -> Config {
        self.cache.mode = mode;
        self
    }

    /// Keeps the artifact store in `dir` (and turns the disk tier on).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Config {
        self.cache.dir = Some(dir.into());
        self.cache.mode = CacheMode::Disk;
        self
    }

    /// Trusts the bundle signers whose public keys are in `file` (see
    /// [`crate::cache::bundle`]).
    pub fn trusted_keys(mut self, file: impl Into<PathBuf>) -> Config {
        self.cache.trusted_keys = Some(file.into());
        self
    }

    /// Sets how many modules one device keeps loaded (at least 1): see
    /// [`CacheConfig::max_loaded_modules`].
    pub fn max_loaded_modules(mut self, n: usize) -> Config {
        self.cache.max_loaded_modules = n.max(1);
        self
    }

    /// Sets the artifact store's size limit, in bytes.
    pub fn cache_max_bytes(mut self, bytes: u64) -> Config {
        self.cache.max_bytes = bytes;
        self
    }

    /// Uses the Redis server at `urls` (one URL, or a cluster's seed nodes
    /// separated by commas: the format of `KERNELKIT_REMOTE_CACHE`) as the
    /// fleet tier; it is on only with a key ([`Config::remote_key_files`]).
    pub fn remote_cache(mut self, urls: &str) -> Result<Config, RemoteAddressError> {
        self.cache.remote.urls = parse_remote_urls(urls)?;
        Ok(self)
    }

    /// Signs the fleet tier's entries with the secret in the first file and
    /// accepts entries signed with any of them (a rotation).
    pub fn remote_key_files<P: Into<PathBuf>>(
        mut self,
        files: impl IntoIterator<Item = P>,
    ) -> Config {
        self.cache.remote.key_files = files.into_iter().map(Into::into).collect();
        self
    }

    /// Sets every setting of the fleet tier at once.
    pub fn remote(mut self, remote: RemoteConfig) -> Config {
        self.cache.remote = remote;
        self
    }

    /// Compiles CPU kernels with `program` (a C++20 compiler command).
    pub fn compiler(mut self, program: impl Into<String>) -> Config {
        self.cpu.compiler = Some(program.into());
        self
    }

    /// Kills a CPU compile (and every process it started) after `timeout`.
    pub fn compile_timeout(mut self, timeout: Duration) -> Config {
        self.cpu.compile_timeout = timeout;
        self
    }

    /// Keeps the CPU prelude's precompiled header in `dir` (`None`: no
    /// precompiled header).
    pub fn pch_dir(mut self, dir: Option<PathBuf>) -> Config {
        self.cpu.pch_dir = dir;
        self
    }

    /// Sets a CUDA device's own compile options (see [`CudaCompileOptions`]).
    pub fn cuda_options(mut self, options: CudaCompileOptions) -> Config {
        self.cuda.options = options;
        self
    }

    /// Turns the CUDA per-stream block cache on or off.
    pub fn block_cache(mut self, on: bool) -> Config {
        self.cuda.block_cache = on;
        self
    }

    /// Turns NVTX ranges on or off (`KERNELKIT_NVTX`); see [`NvtxConfig`].
    pub fn nvtx(mut self, on: bool) -> Config {
        self.nvtx.enabled = on;
        self
    }

    /// Sets each kernel's variant memo budget, in bytes (for kernels that
    /// take [`Config::memo`], see [`KernelBuilder::memo`](crate::KernelBuilder::memo)).
    pub fn memo_max_bytes(mut self, bytes: usize) -> Config {
        self.memo.max_bytes = bytes;
        self
    }

    /// Sets the most variants each kernel's memo keeps (at least 1).
    pub fn memo_max_entries(mut self, entries: usize) -> Config {
        self.memo = self.memo.max_entries(entries);
        self
    }

    /// Sets the most CUDA compile worker processes (0: none).
    pub fn max_workers(mut self, count: usize) -> Config {
        self.cuda.max_workers = count;
        self
    }
}

/// Environment variables, looked up by name: the process's in
/// [`Config::from_env`], a map in tests.
pub(crate) struct Vars<'a>(pub(crate) &'a dyn Fn(&str) -> Option<OsString>);

impl Vars<'_> {
    /// The value, if set.
    fn os(&self, name: &str) -> Option<OsString> {
        (self.0)(name)
    }

    /// The value, if set and not empty.
    fn os_nonempty(&self, name: &str) -> Option<OsString> {
        self.os(name).filter(|v| !v.is_empty())
    }

    /// The value as text, if set and valid UTF-8 (a value that is not is
    /// treated as unset, as `std::env::var` does).
    fn text(&self, name: &str) -> Option<String> {
        self.os(name).and_then(|v| v.into_string().ok())
    }

    /// The value as text, trimmed, if set and not blank.
    fn trimmed(&self, name: &str) -> Option<String> {
        self.text(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }
}

/// Set once `KERNELKIT_CHECK_BOUNDS` was warned about.
static CHECK_BOUNDS_WARNED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// `KERNELKIT_CHECK_BOUNDS`: `1`, `true`, `on`, `yes` turn the checks on;
/// `0`, `false`, `off`, `no` or unset leave them off; anything else is
/// warned about once and leaves them off.
fn check_bounds_from_vars(vars: &Vars<'_>) -> bool {
    let Some(v) = vars.trimmed("KERNELKIT_CHECK_BOUNDS") else {
        return false;
    };
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => true,
        "0" | "false" | "off" | "no" => false,
        _ => {
            warn_once(
                &CHECK_BOUNDS_WARNED,
                &format!("KERNELKIT_CHECK_BOUNDS={v:?} is not 1 or 0; bounds checks stay off"),
            );
            false
        }
    }
}

/// Logs a configuration problem once per process and `kind` of problem.
fn warn_once(flag: &std::sync::atomic::AtomicBool, message: &str) {
    if !flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("{message}");
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The config that `pairs` (name, value) give as the whole environment.
    pub(crate) fn config_of(pairs: &[(&str, &str)]) -> Config {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_vars(&Vars(&|name| map.get(name).cloned()))
    }

    #[test]
    fn check_bounds_reads_its_variable() {
        assert!(!config_of(&[]).check_bounds);
        for on in ["1", "true", " ON ", "yes"] {
            assert!(
                config_of(&[("KERNELKIT_CHECK_BOUNDS", on)]).check_bounds,
                "{on}"
            );
        }
        for off in ["0", "false", "off", "", "maybe"] {
            assert!(
                !config_of(&[("KERNELKIT_CHECK_BOUNDS", off)]).check_bounds,
                "{off}"
            );
        }
    }

    #[test]
    fn an_empty_environment_gives_the_documented_defaults() {
        let c = config_of(&[]);
        assert_eq!(c.cache.mode, CacheMode::Disk);
        assert_eq!(c.cache.dir, None, "no HOME: no directory");
        assert_eq!(c.cache.max_bytes, DEFAULT_MAX_BYTES);
        assert_eq!(c.cache.bundle_max_bytes, DEFAULT_BUNDLE_MAX_BYTES);
        assert_eq!(c.cpu.compiler, None);
        assert_eq!(c.cpu.compile_timeout, DEFAULT_COMPILE_TIMEOUT);
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(
            c.cpu.pch_dir,
            Some(PathBuf::from(format!("/tmp/kernelkit-pch-{uid}")))
        );
        assert!(c.cuda.nvrtc_flags.is_empty());
        assert_eq!(c.cuda.toolkit_dirs, vec![PathBuf::from("/usr/local/cuda")]);
        assert_eq!(c.cuda.worker, None);
        assert!(c.cuda.worker_args.is_empty());
        assert_eq!(c.cuda.start_workers, StartWorkers::OnDemand);
        assert!(c.cuda.max_workers >= 1 && c.cuda.max_workers <= 16);
        assert!(c.cuda.block_cache);
        assert_eq!(c.cuda.options, CudaCompileOptions::default());
        assert_eq!(c.memo, MemoConfig::default());
        assert_eq!(c.memo.max_bytes, DEFAULT_MEMO_BYTES);
        assert_eq!(c.memo.max_entries, DEFAULT_MEMO_ENTRIES);
        assert_eq!(c.nvtx, NvtxConfig::default());
    }

    #[test]
    fn every_variable_lands_in_its_field() {
        let c = config_of(&[
            ("KERNELKIT_CACHE", " memory "),
            ("KERNELKIT_CACHE_DIR", "/store"),
            ("KERNELKIT_CACHE_MAX_BYTES", "512M"),
            ("KERNELKIT_BUNDLE_MAX_BYTES", "64M"),
            ("CXX", "clang++-18"),
            ("KERNELKIT_COMPILE_TIMEOUT", "2.5"),
            ("KERNELKIT_PCH_DIR", "/pch"),
            ("KERNELKIT_NVRTC_FLAGS", " -lineinfo  --maxrregcount=64 "),
            ("CUDA_HOME", "/opt/cuda-13"),
            ("CUDA_PATH", "/opt/cuda-12"),
            ("KERNELKIT_WORKER", "/bin/worker"),
            ("KERNELKIT_COMPILE_WORKERS", " 3 "),
            ("KERNELKIT_START_WORKERS", " first "),
            ("KERNELKIT_CUDA_ALLOC", " exact "),
            ("KERNELKIT_TRUSTED_KEYS", "/etc/kernelkit/trusted"),
            ("HOME", "/home/u"),
            ("KERNELKIT_MEMO_BYTES", "16M"),
            ("KERNELKIT_MEMO_ENTRIES", " 64 "),
            ("KERNELKIT_MAX_LOADED_MODULES", " 64 "),
            ("KERNELKIT_NVTX", " 1 "),
            ("NVTX_INJECTION64_PATH", "/opt/tool/libinject.so"),
        ]);
        assert!(c.nvtx.enabled);
        assert_eq!(
            c.nvtx.injection,
            Some(PathBuf::from("/opt/tool/libinject.so"))
        );
        assert_eq!(c.cache.mode, CacheMode::Memory);
        assert_eq!(c.cache.max_loaded_modules, 64);
        assert_eq!(
            c.cache.trusted_keys,
            Some(PathBuf::from("/etc/kernelkit/trusted"))
        );
        assert_eq!(c.cache.home, Some(PathBuf::from("/home/u")));
        assert_eq!(c.cache.dir, Some(PathBuf::from("/store")));
        assert_eq!(c.cache.max_bytes, 512 << 20);
        assert_eq!(c.cache.bundle_max_bytes, 64 << 20);
        assert_eq!(c.cpu.compiler.as_deref(), Some("clang++-18"));
        assert_eq!(c.cpu.compile_timeout, Duration::from_millis(2500));
        assert_eq!(c.cpu.pch_dir, Some(PathBuf::from("/pch")));
        assert_eq!(c.cuda.nvrtc_flags, vec!["-lineinfo", "--maxrregcount=64"]);
        assert_eq!(
            c.cuda.toolkit_dirs,
            ["/opt/cuda-13", "/opt/cuda-12", "/usr/local/cuda"]
                .map(PathBuf::from)
                .to_vec()
        );
        assert_eq!(c.cuda.worker, Some(PathBuf::from("/bin/worker")));
        assert_eq!(c.cuda.max_workers, 3);
        assert_eq!(c.cuda.start_workers, StartWorkers::AtFirstCompile);
        assert!(!c.cuda.block_cache);
        assert_eq!(c.memo.max_bytes, 16 << 20);
        assert_eq!(c.memo.max_entries, 64);
    }

    #[test]
    fn the_cache_directory_follows_xdg_then_home() {
        let home = config_of(&[("HOME", "/home/u")]);
        let xdg = config_of(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]);
        let relative = config_of(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "rel")]);
        if cfg!(target_os = "macos") {
            let want = Some(PathBuf::from("/home/u/Library/Caches/kernelkit"));
            assert_eq!(home.cache.dir, want);
            assert_eq!(xdg.cache.dir, want);
        } else {
            assert_eq!(
                home.cache.dir,
                Some(PathBuf::from("/home/u/.cache/kernelkit"))
            );
            assert_eq!(xdg.cache.dir, Some(PathBuf::from("/xdg/kernelkit")));
            assert_eq!(
                relative.cache.dir,
                Some(PathBuf::from("/home/u/.cache/kernelkit")),
                "a relative XDG_CACHE_HOME is ignored"
            );
        }
        let own = config_of(&[("HOME", "/home/u"), ("KERNELKIT_CACHE_DIR", "/mine")]);
        assert_eq!(own.cache.dir, Some(PathBuf::from("/mine")));
    }

    #[test]
    fn values_that_do_not_parse_give_the_defaults() {
        let c = config_of(&[
            ("KERNELKIT_CACHE", "sometimes"),
            ("KERNELKIT_CACHE_MAX_BYTES", "1T"),
            ("KERNELKIT_COMPILE_TIMEOUT", "-1"),
            ("KERNELKIT_COMPILE_WORKERS", "many"),
            ("KERNELKIT_START_WORKERS", "sometimes"),
            ("KERNELKIT_CUDA_ALLOC", "cache"),
            ("KERNELKIT_MEMO_BYTES", "lots"),
            ("KERNELKIT_MEMO_ENTRIES", "0"),
            ("KERNELKIT_MAX_LOADED_MODULES", "0"),
        ]);
        let d = config_of(&[]);
        assert_eq!(c.cache.mode, CacheMode::Disk);
        assert_eq!(c.cache.max_bytes, DEFAULT_MAX_BYTES);
        assert_eq!(c.cache.bundle_max_bytes, DEFAULT_BUNDLE_MAX_BYTES);
        assert_eq!(c.cache.max_loaded_modules, DEFAULT_MAX_LOADED_MODULES);
        assert_eq!(c.cpu.compile_timeout, DEFAULT_COMPILE_TIMEOUT);
        assert_eq!(c.cuda.max_workers, d.cuda.max_workers);
        assert_eq!(c.cuda.start_workers, StartWorkers::OnDemand);
        assert!(c.cuda.block_cache);
        assert_eq!(c.memo, MemoConfig::default());
    }

    /// The allocator's debugging mode has two spellings (`pool` was the
    /// first); `cached` is the default said aloud.
    #[test]
    fn the_exact_allocator_is_exact_or_pool() {
        for (v, cache) in [("exact", false), ("pool", false), (" cached ", true)] {
            let c = config_of(&[("KERNELKIT_CUDA_ALLOC", v)]);
            assert_eq!(c.cuda.block_cache, cache, "{v}");
        }
    }

    /// Values that only compared two builds are no longer settings: an old
    /// `open` is warned about and gives the default.
    #[test]
    fn starting_workers_at_the_open_is_no_longer_a_value() {
        let c = config_of(&[("KERNELKIT_START_WORKERS", "open")]);
        assert_eq!(c.cuda.start_workers, StartWorkers::OnDemand);
    }

    /// A timeout too large for a `Duration` (or infinite) is the default,
    /// not a panic (`Duration::from_secs_f64` panics on them).
    #[test]
    fn a_timeout_beyond_any_duration_is_the_default() {
        for v in ["inf", "1e300", "NaN", "0"] {
            let c = config_of(&[("KERNELKIT_COMPILE_TIMEOUT", v)]);
            assert_eq!(c.cpu.compile_timeout, DEFAULT_COMPILE_TIMEOUT, "{v}");
        }
    }

    #[test]
    fn empty_values_mean_unset_except_for_the_pch_dir() {
        let c = config_of(&[
            ("KERNELKIT_CACHE", ""),
            ("KERNELKIT_CACHE_DIR", ""),
            ("CXX", "  "),
            ("KERNELKIT_WORKER", ""),
            ("CUDA_HOME", ""),
            ("KERNELKIT_COMPILE_WORKERS", ""),
            ("KERNELKIT_PCH_DIR", ""),
        ]);
        let d = config_of(&[]);
        assert_eq!(c.cache, d.cache);
        assert_eq!(c.cpu.compiler, None);
        assert_eq!(c.cuda, d.cuda);
        assert_eq!(
            c.cpu.pch_dir, None,
            "empty turns the precompiled header off"
        );
    }

    #[test]
    fn off_is_memory_and_the_variable_is_trimmed() {
        for v in ["off", "memory", " off"] {
            assert_eq!(
                config_of(&[("KERNELKIT_CACHE", v)]).cache.mode,
                CacheMode::Memory
            );
        }
        assert_eq!(
            config_of(&[("KERNELKIT_CACHE", "disk")]).cache.mode,
            CacheMode::Disk
        );
    }

    #[test]
    fn the_default_reads_nothing_and_has_no_disk_tier() {
        let c = Config::default();
        assert_eq!(c.cache.mode, CacheMode::Memory);
        assert_eq!(c.cache.dir, None);
        assert_eq!(c.cpu.pch_dir, None);
        let with_dir = Config::default().cache_dir("/store");
        assert_eq!(
            with_dir.cache.mode,
            CacheMode::Disk,
            "a directory turns it on"
        );
        assert_eq!(
            with_dir.cache_mode(CacheMode::Memory).cache.mode,
            CacheMode::Memory
        );
    }
}
