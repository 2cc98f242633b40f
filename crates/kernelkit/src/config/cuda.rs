//! The CUDA backend's settings, and the compile options a user can give a
//! CUDA device.
//!
//! NVRTC options come from two places, both applied: the configuration's
//! [`CudaConfig::nvrtc_flags`] (`KERNELKIT_NVRTC_FLAGS`, for every CUDA
//! device a configuration opens) and a device's own [`CudaCompileOptions`]
//! ([`Device::new_cuda_with`](crate::Device::new_cuda_with),
//! [`DeviceBuilder::cuda_options`](crate::device::DeviceBuilder::cuda_options)).
//! Every option is part of the module key, so kernels compiled with
//! different options never share a module.
//!
//! The types are always built, so code that sets options compiles with or
//! without the `cuda` feature.
//!
//! [`CompileWorkers`] says where compiles run. NVRTC compiles one program
//! at a time inside a process, so distinct kernels compiled from many
//! threads would queue; the CUDA backend therefore hands a compile to a
//! worker process when this process is already compiling.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::{warn_once, Vars};

/// Workers at most by default, whatever the core count.
const DEFAULT_MAX_WORKERS: usize = 16;

/// The CUDA backend's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CudaConfig {
    /// The device's own compile options.
    pub options: CudaCompileOptions,
    /// NVRTC options for every device this configuration opens, after the
    /// device's own (`KERNELKIT_NVRTC_FLAGS`, whitespace-separated).
    pub nvrtc_flags: Vec<String>,
    /// CUDA toolkit roots, searched in order for NVRTC (when the loader
    /// does not find it) and for `include` (`CUDA_HOME`, `CUDA_PATH`, then
    /// `/usr/local/cuda`). NVRTC is loaded once per process: the first
    /// CUDA device's list finds it.
    pub toolkit_dirs: Vec<PathBuf>,
    /// The NVRTC library to load (`KERNELKIT_NVRTC_PATH`, a path to a
    /// `libnvrtc.so.*`): first in NVRTC's search, and a file that does not
    /// load is an error rather than a reason to look elsewhere, so that a
    /// machine with several CUDA versions uses the one asked for.
    pub nvrtc_path: Option<PathBuf>,
    /// Python site directories searched for NVIDIA's NVRTC wheels
    /// (`nvidia-cuda-nvrtc`, `nvidia-cuda-nvrtc-cu12`) after
    /// [`CudaConfig::nvrtc_path`] and before the toolkits: those wheels are
    /// how most Python users have NVRTC (PyTorch's CUDA wheels depend on
    /// them). `KERNELKIT_PYTHON_SITE` (`:`-separated; the `kernelkit`
    /// Python package sets it at import from `sys.path`), else the
    /// `site-packages` of the active `VIRTUAL_ENV` and `CONDA_PREFIX`.
    pub python_site_dirs: Vec<PathBuf>,
    /// The worker program [`CompileWorkers::Auto`] uses
    /// (`KERNELKIT_WORKER`); `None`: a `kernelkit` executable next to the
    /// running program, if there is one.
    pub worker: Option<PathBuf>,
    /// Arguments given to the worker program before `compile-worker`
    /// (e.g. `-c CODE` when the program is a Python interpreter that serves
    /// through the `kernelkit` package); none by default.
    pub worker_args: Vec<OsString>,
    /// When the compile workers are started (`KERNELKIT_START_WORKERS`).
    pub start_workers: StartWorkers,
    /// The most compile worker processes per worker program
    /// (`KERNELKIT_COMPILE_WORKERS`); 0: none, every compile runs in this
    /// process.
    pub max_workers: usize,
    /// Whether each stream keeps the device blocks its arrays freed, for
    /// its next allocations (on by default). Off is a debugging mode
    /// (`KERNELKIT_CUDA_ALLOC=exact`): every allocation then asks the
    /// device's allocator for a block of exactly its size, and no block is
    /// reused by kernelkit, so a kernel that writes past its output lands
    /// in memory no live array owns, where guard regions and
    /// compute-sanitizer see it instead of another array's data.
    pub block_cache: bool,
}

/// No extra options, `/usr/local/cuda`, a worker found next to the
/// program, workers up to the core count (at most 16), the block cache on.
impl Default for CudaConfig {
    fn default() -> CudaConfig {
        CudaConfig {
            options: CudaCompileOptions::default(),
            nvrtc_flags: Vec::new(),
            toolkit_dirs: vec![PathBuf::from("/usr/local/cuda")],
            nvrtc_path: None,
            python_site_dirs: Vec::new(),
            worker: None,
            worker_args: Vec::new(),
            start_workers: StartWorkers::default(),
            max_workers: default_max_workers(),
            block_cache: true,
        }
    }
}

/// The core count, at most [`DEFAULT_MAX_WORKERS`].
fn default_max_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(DEFAULT_MAX_WORKERS)
}

/// Set once the workers' count was warned about.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Set once `KERNELKIT_START_WORKERS` was warned about.
static WARNED_START: AtomicBool = AtomicBool::new(false);

/// Set once `KERNELKIT_CUDA_ALLOC` was warned about.
static WARNED_ALLOC: AtomicBool = AtomicBool::new(false);

impl CudaConfig {
    /// `KERNELKIT_NVRTC_FLAGS`, `CUDA_HOME`, `CUDA_PATH`,
    /// `KERNELKIT_NVRTC_PATH`, `KERNELKIT_PYTHON_SITE` (else
    /// `VIRTUAL_ENV`, `CONDA_PREFIX`), `KERNELKIT_WORKER`,
    /// `KERNELKIT_COMPILE_WORKERS`, `KERNELKIT_START_WORKERS`,
    /// `KERNELKIT_CUDA_ALLOC`.
    pub(super) fn from_vars(vars: &Vars<'_>) -> CudaConfig {
        let defaults = CudaConfig::default();
        let nvrtc_flags = vars
            .text("KERNELKIT_NVRTC_FLAGS")
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let mut toolkit_dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(|name| vars.os_nonempty(name))
            .map(PathBuf::from)
            .collect();
        toolkit_dirs.extend(defaults.toolkit_dirs);
        toolkit_dirs.dedup();
        let max_workers = match vars.trimmed("KERNELKIT_COMPILE_WORKERS") {
            None => defaults.max_workers,
            Some(v) => v.parse::<usize>().unwrap_or_else(|_| {
                warn_once(
                    &WARNED,
                    &format!(
                        "KERNELKIT_COMPILE_WORKERS={v:?} is not a number of workers; using {}",
                        defaults.max_workers
                    ),
                );
                defaults.max_workers
            }),
        };
        let start_workers = match vars.trimmed("KERNELKIT_START_WORKERS") {
            None => defaults.start_workers,
            Some(v) => StartWorkers::parse(&v).unwrap_or_else(|| {
                warn_once(
                    &WARNED_START,
                    &format!(
                        "KERNELKIT_START_WORKERS={v:?} is not `demand` or `first`; using `demand`"
                    ),
                );
                defaults.start_workers
            }),
        };
        CudaConfig {
            options: CudaCompileOptions::default(),
            nvrtc_flags,
            toolkit_dirs,
            nvrtc_path: vars.os_nonempty("KERNELKIT_NVRTC_PATH").map(PathBuf::from),
            python_site_dirs: python_site_dirs(vars),
            worker: vars.os_nonempty("KERNELKIT_WORKER").map(PathBuf::from),
            worker_args: Vec::new(),
            start_workers,
            max_workers,
            block_cache: match vars.trimmed("KERNELKIT_CUDA_ALLOC") {
                None => defaults.block_cache,
                Some(v) => match v.as_str() {
                    // `pool`: the value's first spelling.
                    "exact" | "pool" => false,
                    "cached" => true,
                    _ => {
                        warn_once(
                            &WARNED_ALLOC,
                            &format!(
                                "KERNELKIT_CUDA_ALLOC={v:?} is not `cached` or `exact`; \
                                 using `cached`"
                            ),
                        );
                        defaults.block_cache
                    }
                },
            },
        }
    }

    /// Every NVRTC option of a device besides kernelkit's own
    /// (`--gpu-architecture`, the toolkit's include directories), in
    /// order: the device's options, then [`CudaConfig::nvrtc_flags`].
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn option_words(&self) -> Vec<String> {
        let mut out = self.options.words();
        out.extend(self.nvrtc_flags.iter().cloned());
        out
    }
}

/// `KERNELKIT_PYTHON_SITE`'s directories, else the `site-packages` of
/// the environments `VIRTUAL_ENV` and `CONDA_PREFIX` name
/// (`lib/python3.*/site-packages`, newest Python first).
fn python_site_dirs(vars: &Vars<'_>) -> Vec<PathBuf> {
    if let Some(list) = vars.os_nonempty("KERNELKIT_PYTHON_SITE") {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    let mut out = Vec::new();
    for prefix in ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|name| vars.os_nonempty(name))
    {
        let lib = PathBuf::from(prefix).join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        let mut sites: Vec<(u32, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let minor = name.strip_prefix("python3.")?.parse::<u32>().ok()?;
                let site = e.path().join("site-packages");
                site.is_dir().then_some((minor, site))
            })
            .collect();
        sites.sort_by_key(|site| std::cmp::Reverse(site.0));
        out.extend(sites.into_iter().map(|(_, site)| site));
    }
    out.dedup();
    out
}

/// When a process starts its compile workers.
///
/// A worker pays its start (a process, NVRTC loaded) once; a burst of
/// distinct cold kernels that finds no worker ready pays it inside the
/// burst. Starting them ahead, in the background, takes that off the
/// burst, at the price of processes that a program compiling only one
/// kernel never uses (each holds NVRTC, tens of megabytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StartWorkers {
    /// One at a time, by the compile that finds no worker idle
    /// (`demand`): nothing runs beside a program's first compiles.
    #[default]
    OnDemand,
    /// All of them (up to [`CudaConfig::max_workers`]) in the background
    /// when the process's first compile starts (`first`): a program that
    /// never compiles (every kernel found in a cache) starts none. The
    /// Python package's default.
    AtFirstCompile,
}

impl StartWorkers {
    /// `demand` or `first`.
    pub fn parse(text: &str) -> Option<StartWorkers> {
        match text {
            "demand" => Some(StartWorkers::OnDemand),
            "first" => Some(StartWorkers::AtFirstCompile),
            _ => None,
        }
    }
}

/// NVRTC options beyond kernelkit's own (`--gpu-architecture`, the CUDA
/// include directories).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaCompileOptions {
    /// Adds `--use_fast_math` (approximate division, square root and
    /// transcendentals; flush denormals to zero).
    pub fast_math: bool,
    /// More include directories (`-I`), searched after kernelkit's.
    pub include_dirs: Vec<PathBuf>,
    /// Any other NVRTC options, passed as given (e.g. `-lineinfo`,
    /// `--maxrregcount=64`, `-DTILE=32`).
    pub flags: Vec<String>,
    /// Where compiles run (not part of the module key: a worker produces
    /// the same artifact as this process).
    pub workers: CompileWorkers,
}

/// Where the CUDA backend's compiles run.
///
/// A worker is a program run as `PROGRAM compile-worker` that serves
/// compile jobs on its standard input and output: the `kernelkit` command
/// is one, and any program can be one by calling
/// `kernelkit::compile_worker::serve_stdio()` when it gets that argument.
/// Whatever the setting, a compile never fails because of the workers: a
/// worker that cannot start or dies leaves the job to this process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompileWorkers {
    /// The configuration's [`CudaConfig::worker`] (`KERNELKIT_WORKER`),
    /// else a `kernelkit` executable next to the running program, else
    /// none (compile in this process).
    #[default]
    Auto,
    /// Always compile in this process.
    InProcess,
    /// This worker program.
    Program(PathBuf),
}

impl CudaCompileOptions {
    /// Turns fast math on or off.
    pub fn fast_math(mut self, yes: bool) -> Self {
        self.fast_math = yes;
        self
    }

    /// Adds an include directory.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// Adds an NVRTC option.
    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.push(flag.into());
        self
    }

    /// Sets where compiles run.
    pub fn workers(mut self, workers: CompileWorkers) -> Self {
        self.workers = workers;
        self
    }

    /// The NVRTC option words, in order.
    fn words(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.fast_math {
            out.push("--use_fast_math".to_string());
        }
        for dir in &self.include_dirs {
            out.push(format!("-I{}", dir.display()));
        }
        out.extend(self.flags.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_order() {
        let o = CudaCompileOptions::default()
            .fast_math(true)
            .include_dir("/opt/inc")
            .flag("-lineinfo");
        assert_eq!(
            o.words(),
            vec!["--use_fast_math", "-I/opt/inc", "-lineinfo"]
        );
    }

    /// The NVRTC setting is a path; the Python site list is split at `:`
    /// and, unset, comes from a virtual environment's `site-packages`.
    #[test]
    fn nvrtc_path_and_python_sites() {
        let c = crate::config::tests::config_of(&[
            ("KERNELKIT_NVRTC_PATH", "/opt/nv/libnvrtc.so.12"),
            ("KERNELKIT_PYTHON_SITE", "/a/site:/b/site"),
        ])
        .cuda;
        assert_eq!(c.nvrtc_path, Some(PathBuf::from("/opt/nv/libnvrtc.so.12")));
        assert_eq!(
            c.python_site_dirs,
            vec![PathBuf::from("/a/site"), PathBuf::from("/b/site")]
        );

        let env = tempfile::tempdir().unwrap();
        for minor in ["9", "12"] {
            let site = env
                .path()
                .join(format!("lib/python3.{minor}/site-packages"));
            std::fs::create_dir_all(site).unwrap();
        }
        std::fs::create_dir_all(env.path().join("lib/python3.11")).unwrap();
        let venv = env.path().to_str().unwrap();
        let c = crate::config::tests::config_of(&[("VIRTUAL_ENV", venv)]).cuda;
        assert_eq!(
            c.python_site_dirs,
            vec![
                env.path().join("lib/python3.12/site-packages"),
                env.path().join("lib/python3.9/site-packages"),
            ]
        );
        assert_eq!(crate::config::tests::config_of(&[]).cuda.nvrtc_path, None);
    }

    /// The environment's flags come after the device's own, as they did
    /// when the device's options were joined with the environment's.
    #[test]
    fn the_environment_flags_follow_the_device_options() {
        let mut c = crate::config::tests::config_of(&[("KERNELKIT_NVRTC_FLAGS", "-DENV=1")]).cuda;
        c.options = CudaCompileOptions::default()
            .fast_math(true)
            .flag("-DOWN=1");
        assert_eq!(
            c.option_words(),
            vec!["--use_fast_math", "-DOWN=1", "-DENV=1"]
        );
    }
}
