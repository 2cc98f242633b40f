//! The CUDA backend's compiler: a variant's source to a cubin for the
//! device's own architecture, through NVRTC.
//!
//! The policy, in four rules:
//! - **Where a compile runs.** In this process, on its one compile thread
//!   (`thread`), when this process is not compiling already; else on a
//!   compile worker process (`worker`), up to the configured most. NVRTC
//!   runs one compile at a time inside a process, so distinct kernels
//!   compiled from many threads would queue here; workers let them run in
//!   parallel. A worker that cannot start or dies hands its job back to
//!   this process: a compile never fails because of the workers.
//! - **The precompiled prelude** (`pch`). Only on workers, with NVRTC 12.8
//!   or newer and no `--pre-include` option: a worker loads the prelude
//!   from the header it wrote after the first compile that met it, instead
//!   of parsing it again; a compile that asks for it goes to an idle
//!   worker first. This process never writes one (it would write it during
//!   its calls, or while it exits).
//! - **Includes** (`includes`). kernelkit follows the source's `#include`s
//!   itself, the way NVRTC searches (the including file's directory, the
//!   working directory, the `-I` directories), reads each file once and
//!   gives NVRTC those bytes: what NVRTC compiles is what the artifact
//!   store's dependency list hashed. The toolkit's headers are left to NVRTC.
//! - **NVRTC's own cache** (`nvrtc_cache`) is off: kernelkit never asks for
//!   one program twice, so that cache could only cost lookups and writes.
//!
//! The options and the identity:
//! - The target is the device's compute capability, with the `a` suffix
//!   from Hopper on (`sm_90a`), so architecture-specific instructions are
//!   available; NVRTC emits SASS for exactly that chip (a cubin). If this
//!   NVRTC is older than the chip, it emits PTX for the newest architecture
//!   it knows and the driver finishes the job (a slower first load).
//! - Include directories: `include` and, on CUDA 13, `include/cccl` of the
//!   first of the configured toolkits ([`CudaConfig::toolkit_dirs`]), then
//!   of NVIDIA's runtime wheels in the Python site directories, whose
//!   headers are of NVRTC's own major version (else the first toolkit with
//!   headers, with a warning); then the user's
//!   ([`CudaConfig::option_words`]).
//! - The identity (part of every module key) names NVRTC's version, the
//!   target and every option, so a change of any of them compiles anew.
//! - Errors carry NVRTC's log with lines inside the body marked
//!   `[body line N]`.
//!
//! The files: `nvrtc` (every NVRTC call, each a small safe function, as
//! `driver` is for the driver API), `nvrtc_job` (one compile, the same
//! here and on a worker), `nvrtc_cache`, `pch`, `includes`, `thread`, and
//! `worker` (the worker processes, their protocol and their side of it).

mod includes;
pub(super) mod nvrtc;
mod nvrtc_cache;
mod nvrtc_job;
mod pch;
#[cfg(test)]
mod tests;
mod thread;
pub(crate) mod worker;

use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::backend::{CompileJob, Compiled};
use crate::codegen::cuda::{body_of, with_line_marks};
use crate::codegen::map_log_lines;
use crate::config::CudaConfig;
use crate::error::CompileError;
use includes::SearchPath;
use nvrtc_job::{run_nvrtc, Failure, NvrtcJob};
use worker::{Output, WarmUp, Workers};

/// The file name NVRTC reports errors against.
const PROGRAM_NAME: &str = crate::codegen::cuda::FILE_NAME;

/// A prepared NVRTC configuration for one device.
pub(super) struct Nvrtc {
    version: (i32, i32),
    /// `sm_90a`, or `compute_XX` when NVRTC does not know the chip.
    target: String,
    /// The (target, identity) of the PTX this chip also loads (see
    /// `Backend::fallback_identities`).
    ptx_fallback: Vec<(String, String)>,
    /// Cubin when the target is a real architecture, else PTX.
    output: Output,
    /// Every option, as given to NVRTC and sent to workers.
    words: Vec<String>,
    options: Vec<CString>,
    /// Everything besides the source that changes the artifact, in full.
    identity: String,
    /// Where `#include`s are searched (see `includes`).
    search: SearchPath,
    /// Worker processes for compiles that would queue here.
    workers: Option<Workers>,
    /// A worker's options for a compile through the prelude's precompiled
    /// headers (see `pch`), when this NVRTC and the options allow them.
    pch: Option<Vec<String>>,
    /// `-lineinfo` is among the options: sources are compiled with their
    /// body's lines marked (see [`Nvrtc::new`]).
    line_info: bool,
}

/// NVRTC's version, after checking that the library and its symbols load
/// (found where `config` says, see `nvrtc_path`).
pub(super) fn nvrtc_version(config: &CudaConfig) -> Result<(i32, i32), String> {
    super::probe::nvrtc(config)?;
    nvrtc::version().map_err(|e| e.to_string())
}

impl Nvrtc {
    /// Reads NVRTC's version and architectures and fixes the options of a
    /// device of compute capability `cc` configured by `config`.
    pub(super) fn new(cc: (i32, i32), config: &CudaConfig) -> Result<Nvrtc, String> {
        let (major, minor) = nvrtc_version(config)?;
        let archs = nvrtc::supported_archs().map_err(|e| e.to_string())?;
        let want = cc.0 * 10 + cc.1;
        let suffix = if cc.0 >= 9 { "a" } else { "" };
        let (target, cubin) = if archs.contains(&want) {
            (format!("sm_{want}{suffix}"), true)
        } else {
            match archs.iter().copied().filter(|&a| a <= want).max() {
                Some(best) => (format!("compute_{best}"), false),
                None => {
                    return Err(format!(
                        "NVRTC {major}.{minor} supports none of the architectures up to sm_{want} \
                         (it knows {archs:?})"
                    ))
                }
            }
        };
        Nvrtc::with_target((major, minor), target, cubin, config)
    }

    /// A configuration for the named `target` (`sm_90a`: a cubin;
    /// `compute_90`: PTX), with no GPU: what `kernelkit precompile --arch`
    /// compiles with. The options and identity are those a device of that
    /// architecture would have with the same NVRTC and configuration, so
    /// its artifacts are found there.
    pub(super) fn for_target(target: &str, config: &CudaConfig) -> Result<Nvrtc, String> {
        let (major, minor) = nvrtc_version(config)?;
        let archs = nvrtc::supported_archs().map_err(|e| e.to_string())?;
        let (cubin, number) = if let Some(n) = target.strip_prefix("sm_") {
            (true, n.trim_end_matches('a'))
        } else if let Some(n) = target.strip_prefix("compute_") {
            (false, n)
        } else {
            return Err(format!("`{target}` is not sm_XX, sm_XXa or compute_XX"));
        };
        let number: i32 = number
            .parse()
            .map_err(|_| format!("`{target}` is not sm_XX, sm_XXa or compute_XX"))?;
        if !archs.contains(&number) {
            return Err(format!(
                "NVRTC {major}.{minor} does not know {target} (it knows {archs:?})"
            ));
        }
        Nvrtc::with_target((major, minor), target.to_string(), cubin, config)
    }

    /// The (target, identity) of the PTX this configuration's chip loads
    /// when no tier holds its own code.
    pub(super) fn ptx_fallback(&self) -> &[(String, String)] {
        &self.ptx_fallback
    }

    /// `NVRTC 12.8`, for a bundle's producer note.
    pub(super) fn version_name(&self) -> String {
        format!("nvrtc {}.{}", self.version.0, self.version.1)
    }

    fn with_target(
        (major, minor): (i32, i32),
        target: String,
        cubin: bool,
        config: &CudaConfig,
    ) -> Result<Nvrtc, String> {
        // `-default-device`: functions and variables a header declares
        // without `__device__` (as every header written for Metal does) are
        // device code, as they would be in Metal.
        let mut words = vec![
            format!("--gpu-architecture={target}"),
            "--device-as-default-execution-space".to_string(),
        ];
        let toolkit = toolkit_include_dirs(&config.toolkit_dirs, &config.python_site_dirs, major);
        for dir in &toolkit {
            words.push(format!("-I{}", dir.display()));
        }
        words.extend(config.option_words());
        // Line information asked for (`-lineinfo`, or `-G`'s full device
        // debugging, for compute-sanitizer, cuda-gdb, Nsight): compiles mark the body's lines with `#line`
        // (`codegen::cuda::with_line_marks`), so those tools name the
        // user's body and its lines. A `#line` turns off NVRTC's
        // precompiled headers, so such compiles parse the whole prelude.
        let line_info = words.iter().any(|w| {
            matches!(
                w.as_str(),
                "-lineinfo" | "--generate-line-info" | "-G" | "--device-debug"
            )
        });
        let search = SearchPath::from_options(&words, &toolkit);
        let identity = store_identity((major, minor), &target, &portable_words(&words, &toolkit));
        // The PTX a bundle may carry for this chip's plain virtual
        // architecture (`sm_90a` -> `compute_90`): what `for_target` of
        // that architecture would name, with the same options.
        let ptx_fallback = ptx_target_of(&target)
            .filter(|_| cubin)
            .map(|virt| {
                let mut w = words.clone();
                w[0] = format!("--gpu-architecture={virt}");
                let id = store_identity((major, minor), &virt, &portable_words(&w, &toolkit));
                vec![(virt, id)]
            })
            .unwrap_or_default();
        // After the identity: turning NVRTC's own cache off changes no
        // artifact (see `nvrtc_cache`).
        words.extend(nvrtc_cache::option((major, minor), &words));
        let options = words
            .iter()
            .map(|w| CString::new(w.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| "an NVRTC option contains a NUL byte".to_string())?;
        let output = if cubin { Output::Cubin } else { Output::Ptx };
        // Through precompiled preludes on workers only: this process would
        // write its headers in its calls, or while it exits (see `pch`). Not
        // with `--pre-include` files: NVRTC reads them before the prelude,
        // so a header would keep their text as it was when written.
        let pch = (pch::supported((major, minor))
            && !line_info
            && config.max_workers > 0
            && !search.pre_includes_any())
        .then(|| pch::words(&words));
        // With precompiled preludes, a worker started ahead writes the
        // commonest kernel's before it answers its warm-up.
        let warm = pch
            .as_ref()
            .and_then(|w| Some(WarmUp::new(pch::warm_up()?, w.clone())))
            .unwrap_or_else(|| WarmUp::trivial(&words));
        let workers = Workers::find(config, (major, minor), &warm, output);
        let pch = pch.filter(|_| workers.is_some());
        Ok(Nvrtc {
            version: (major, minor),
            ptx_fallback,
            target,
            output,
            words,
            options,
            identity,
            search,
            workers,
            pch,
            line_info,
        })
    }

    /// Every option, as sent to workers.
    #[cfg(test)]
    pub(super) fn words(&self) -> &[String] {
        &self.words
    }

    /// The artifact store's identity of this configuration (see
    /// [`store_identity`]).
    pub(super) fn identity(&self) -> &str {
        &self.identity
    }

    /// `sm_90a`, or `compute_XX` when this NVRTC emits PTX for the chip.
    pub(super) fn target(&self) -> &str {
        &self.target
    }

    /// `NVRTC 13.0 -> sm_90a`.
    pub(super) fn describe(&self) -> String {
        format!(
            "NVRTC {}.{} -> {}{}",
            self.version.0,
            self.version.1,
            self.target,
            match self.output {
                Output::Cubin => "",
                Output::Ptx => " (PTX, JIT by the driver)",
            }
        )
    }

    /// Where compiles run, for the device's description.
    pub(super) fn describe_workers(&self) -> String {
        match &self.workers {
            Some(w) => w.describe(),
            None => "compiles in this process".into(),
        }
    }

    /// Compiles a variant; errors name the kernel and carry the mapped log.
    /// The files its `#include`s reach are read here first (see
    /// `includes`) and handed to NVRTC, so the dependency list holds
    /// exactly what was compiled.
    pub(super) fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
        let (kernel, source) = (job.kernel, job.source);
        let other = |reason: String| CompileError::Compiler {
            kernel: kernel.to_string(),
            compiler: self.describe(),
            reason,
        };
        let cwd = std::env::current_dir().ok();
        let includes = includes::resolve(source, &self.search, cwd.as_deref()).map_err(other)?;
        let headers = &includes.headers;
        let marked = match self.line_info {
            true => with_line_marks(source, kernel),
            false => None,
        };
        let outcome = self.run(marked.as_deref().unwrap_or(source), headers);
        let artifact = outcome.map_err(|failure| match failure {
            Failure::Rejected(log) => CompileError::Rejected {
                kernel: kernel.to_string(),
                function: job.function.to_string(),
                compiler: self.describe(),
                log: map_log_lines(&log, source, body_of(source), &format!("{PROGRAM_NAME}(")),
                generated: job.shared_source.clone(),
            },
            Failure::Other(reason) => other(reason),
        })?;
        Ok(Compiled {
            artifact,
            dependencies: includes.dependencies,
        })
    }

    /// Compiles, in this process, a source that includes nothing of the
    /// user's to the target's artifact (cubin, or NUL-ended PTX): the
    /// tests' plain compile, beside [`Nvrtc::compile`].
    #[cfg(test)]
    pub(super) fn compile_source(&self, source: &str) -> Result<Vec<u8>, Failure> {
        self.run_here(source, &[])
    }

    /// Compiles here or on a worker (see `worker`); on a worker through
    /// the precompiled prelude when NVRTC and the options allow it (a
    /// worker that has its header then parses less than a compile here,
    /// so an idle one is asked first).
    fn run(&self, source: &str, headers: &[(String, Vec<u8>)]) -> Result<Vec<u8>, Failure> {
        let here = || self.run_here(source, headers);
        let Some(workers) = &self.workers else {
            return here();
        };
        let (words, prefer_workers) = match &self.pch {
            Some(words) => (words, true),
            None => (&self.words, false),
        };
        let job = NvrtcJob {
            program: PROGRAM_NAME,
            source,
            headers,
            options: words,
            output: self.output,
        };
        workers.compile(job, prefer_workers, here)
    }

    /// Compiles in this process, on its compile thread (see
    /// `thread`: the compiler's heap is then kept by one thread).
    fn run_here(&self, source: &str, headers: &[(String, Vec<u8>)]) -> Result<Vec<u8>, Failure> {
        let (source, headers) = (source.to_owned(), headers.to_vec());
        let (options, output) = (self.options.clone(), self.output);
        thread::run(move || {
            run_nvrtc(NvrtcJob {
                program: PROGRAM_NAME,
                source: &source,
                headers: &headers,
                options: &options,
                output,
            })
        })
    }
}

/// The plain virtual architecture of a real one: `sm_90a` -> `compute_90`,
/// `sm_80` -> `compute_80`; `None` for anything else.
pub(crate) fn ptx_target_of(target: &str) -> Option<String> {
    let n = target.strip_prefix("sm_")?.trim_end_matches('a');
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| format!("compute_{n}"))
}

/// `words` with each toolkit include directory (`-I/usr/local/cuda/include`)
/// named by the headers' CUDA version and its place in the list instead of
/// its path, so that an identity made with NVRTC's wheel in CI matches a
/// node whose toolkit lives in `/usr/local/cuda` (same version, same
/// headers). User `-I` directories stay as given (the files they give are
/// in each entry's dependency list, by content).
fn portable_words(words: &[String], toolkit: &[PathBuf]) -> Vec<String> {
    let version = toolkit
        .iter()
        .find_map(|dir| headers_version(dir))
        .unwrap_or_else(|| "unknown".to_string());
    words
        .iter()
        .map(|w| {
            match toolkit
                .iter()
                .position(|dir| w.strip_prefix("-I") == Some(&*dir.to_string_lossy()))
            {
                Some(i) => format!("-I<cuda headers {version} #{i}>"),
                None => w.clone(),
            }
        })
        .collect()
}

/// The CUDA version the headers in `dir` declare (`CUDA_VERSION` in
/// `cuda.h`, else `CUDART_VERSION` in `cuda_runtime_api.h`).
fn headers_version(dir: &Path) -> Option<String> {
    [
        ("cuda.h", "CUDA_VERSION"),
        ("cuda_runtime_api.h", "CUDART_VERSION"),
    ]
    .iter()
    .find_map(|(file, name)| {
        let text = std::fs::read_to_string(dir.join(file)).ok()?;
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("#define") && it.next() == Some(name))
                .then(|| it.next().map(str::to_string))
                .flatten()
        })
    })
}

/// What the artifact store hashes besides the source: NVRTC's version, the
/// target and every option in full, each with its length (so no two option
/// lists read the same). Entries live on disk for months and are shared by
/// every process of the user: the store's 128-bit key must not rest on a
/// short hash of the options.
fn store_identity(version: (i32, i32), target: &str, words: &[String]) -> String {
    let mut out = format!("nvrtc {}.{}\ntarget {target}\n", version.0, version.1);
    for w in words {
        out.push_str(&format!("option {}:{w}\n", w.len()));
    }
    out
}

/// The CUDA headers NVRTC compiles against (`include`, and CCCL's where it
/// is: `include/cccl`, or a wheel's `nvidia/cuda_cccl/include`): the first of the toolkits `homes`, then of NVIDIA's
/// runtime wheels in the Python `sites` (`nvidia/cu13/include`,
/// `nvidia/cuda_runtime/include` for CUDA 12), whose `cuda.h` is of
/// NVRTC's own major version; headers of another CUDA version need not
/// parse with this NVRTC. Where none matches, the first toolkit with
/// headers at all (a body that needs no version-specific header still
/// compiles), with a warning.
fn toolkit_include_dirs(homes: &[PathBuf], sites: &[PathBuf], nvrtc_major: i32) -> Vec<PathBuf> {
    let wheels = sites.iter().flat_map(|site| {
        ["cu13", "cuda_runtime"].map(|name| site.join("nvidia").join(name).join("include"))
    });
    let candidates: Vec<PathBuf> = homes
        .iter()
        .map(|h| h.join("include"))
        .chain(wheels)
        .collect();
    let with_headers = |include: &PathBuf| include.join("cuda_fp16.h").is_file();
    let chosen = candidates
        .iter()
        .filter(|include| with_headers(include))
        .find(|include| cuda_major(include) == Some(nvrtc_major))
        .or_else(|| {
            let other = candidates.iter().find(|include| with_headers(include))?;
            tracing::warn!(
                "no CUDA {nvrtc_major} headers found for NVRTC {nvrtc_major} (toolkits, then \
                 NVIDIA's runtime wheels); using {}, of another version: a body that includes \
                 a version-specific header may not compile",
                other.display()
            );
            Some(other)
        });
    let Some(include) = chosen else {
        return Vec::new();
    };
    // CCCL (`nv/target`, `cuda/std`, which `cooperative_groups.h` needs):
    // inside `include` from CUDA 13 on, beside it in CUDA 12's wheels
    // (`nvidia/cuda_cccl/include`).
    let mut out = vec![include.clone()];
    let beside = include
        .parent()
        .and_then(Path::parent)
        .map(|nvidia| nvidia.join("cuda_cccl").join("include"));
    for cccl in [Some(include.join("cccl")), beside].into_iter().flatten() {
        if cccl.is_dir() && !out.contains(&cccl) {
            out.push(cccl);
        }
    }
    out
}

/// The CUDA major version of the headers in `include`, from `cuda.h`'s
/// `#define CUDA_VERSION 12080` (major × 1000 + minor × 10).
fn cuda_major(include: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(include.join("cuda.h")).ok()?;
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("#define")?.trim_start();
        let value = rest.strip_prefix("CUDA_VERSION")?;
        if !value.starts_with(char::is_whitespace) {
            return None;
        }
        value.trim().parse::<i32>().ok().map(|v| v / 1000)
    })
}
