//! NVRTC: a variant's source to a cubin for the device's own architecture.
//!
//! - The target is the device's compute capability, with the `a` suffix
//!   from Hopper on (`sm_90a` on an H100/H200), so Hopper-only instructions
//!   are available; NVRTC emits SASS for exactly that chip (a cubin). If this
//!   NVRTC is older than the chip, it emits PTX for the newest architecture
//!   it knows and the driver finishes the job (a slower first load).
//! - Include directories: `include` and, on CUDA 13, `include/cccl` of the
//!   first of the configured toolkits ([`CudaConfig::toolkit_dirs`]: `CUDA_HOME`,
//!   `CUDA_PATH`, `/usr/local/cuda`) that has them, then the user's
//!   ([`CudaConfig::option_words`]).
//! - The identity (part of every module key) names NVRTC's version, the target and
//!   hash of every option, so a change of any of them compiles anew; the
//!   artifact store's identity holds every option in full.
//! - Errors carry NVRTC's log with lines inside the body marked
//!   `[body line N]`.
//! - The files the source `#include`s are found and read before the
//!   compile (`super::includes`) and given to NVRTC as its headers: what
//!   NVRTC compiles is what the artifact store's dependency list records.
//!
//! NVRTC serializes compiles inside one process (measured on the H200:
//! 16 threads compile no faster than one), so distinct kernels compiled
//! from many threads of one process would take about the sum of their
//! times: a compile that finds this process already compiling goes to a
//! worker process instead (`super::worker`), with the same options and the
//! same error mapping.

use std::ffi::CString;
use std::path::PathBuf;

use super::compile_thread;
use super::includes::{self, SearchPath};
use super::nvrtc;
use super::nvrtc_cache;
use super::nvrtc_job::{run_nvrtc, Failure, NvrtcJob};
use super::pch;
use super::worker::{Output, WarmUp, Workers};
use crate::backend::{CompileJob, Compiled};
use crate::codegen::{cuda::body_of, map_log_lines};
use crate::config::CudaConfig;
use crate::error::CompileError;

/// The file name NVRTC reports errors against.
const PROGRAM_NAME: &str = "kernel.cu";

/// A prepared NVRTC configuration for one device.
pub(super) struct Nvrtc {
    version: (i32, i32),
    /// `sm_90a`, or `compute_XX` when NVRTC does not know the chip.
    target: String,
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
    /// headers (see `pch`), when the configuration asks for them.
    pch: Option<Vec<String>>,
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
        // `-default-device`: functions and variables a header declares
        // without `__device__` (as every header written for Metal does) are
        // device code, as they would be in Metal.
        let mut words = vec![
            format!("--gpu-architecture={target}"),
            "--device-as-default-execution-space".to_string(),
        ];
        let toolkit = toolkit_include_dirs(&config.toolkit_dirs);
        for dir in &toolkit {
            words.push(format!("-I{}", dir.display()));
        }
        words.extend(config.option_words());
        let search = SearchPath::from_options(&words, &toolkit);
        let identity = store_identity((major, minor), &target, &words);
        // After the identity: turning NVRTC's own cache off changes no
        // artifact (see `nvrtc_cache`).
        words.extend(nvrtc_cache::option(
            (major, minor),
            config.nvrtc_cache,
            &words,
        ));
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
        let pch = (config.nvrtc_pch
            && pch::supported((major, minor))
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
            target,
            output,
            words,
            options,
            identity,
            search,
            workers,
            pch,
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
        let outcome = self.run(source, headers);
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
    /// user's (kernelkit's own kernels) to the target's artifact (cubin, or
    /// NUL-ended PTX).
    pub(super) fn compile_source(&self, source: &str) -> Result<Vec<u8>, Failure> {
        self.run_here(source, &[])
    }

    /// Compiles here or on a worker (see `worker`); on a worker through
    /// the precompiled prelude when the configuration asks for it (a
    /// worker that has its header is then faster than a compile here, so
    /// an idle one is asked first).
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
    /// `compile_thread`: the compiler's heap is then kept by one thread).
    fn run_here(&self, source: &str, headers: &[(String, Vec<u8>)]) -> Result<Vec<u8>, Failure> {
        let (source, headers) = (source.to_owned(), headers.to_vec());
        let (options, output) = (self.options.clone(), self.output);
        compile_thread::run(move || {
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

/// `include` and `include/cccl` of the first CUDA toolkit among `homes`
/// that has them.
fn toolkit_include_dirs(homes: &[PathBuf]) -> Vec<PathBuf> {
    for home in homes {
        let include = home.join("include");
        if include.join("cuda_fp16.h").is_file() {
            let mut out = vec![include.clone()];
            let cccl = include.join("cccl");
            if cccl.is_dir() {
                out.push(cccl);
            }
            return out;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::spec::KernelSpec;
    use crate::{DType, Dialect, InputDesc, PassMode, TemplateArg, TemplateParam, VariantDesc};

    /// NVRTC for an H200, or `None` (with the reason printed) where NVRTC is
    /// not installed: these tests need no GPU, only the library.
    fn nvrtc() -> Option<Nvrtc> {
        let config = crate::config::Config::from_env().cuda;
        if let Err(reason) = super::super::probe::nvrtc(&config) {
            println!("skipped: {reason}");
            return None;
        }
        Some(Nvrtc::new((9, 0), &config).expect("NVRTC knows sm_90"))
    }

    /// What a compile asked to go through the precompiled prelude (as a
    /// worker's) does with `source`, after which this process writes the
    /// headers it queued: the first of a prelude compiles the full source
    /// and its header is written, the next ones go through the header.
    fn through_pch(nvrtc: &Nvrtc, source: &str) -> Result<Vec<u8>, Failure> {
        let cwd = std::env::current_dir().ok();
        let headers = includes::resolve(source, &nvrtc.search, cwd.as_deref())
            .unwrap()
            .headers;
        let options = pch_options(nvrtc);
        let outcome = run_nvrtc(NvrtcJob {
            program: PROGRAM_NAME,
            source,
            headers: &headers,
            options: &options,
            output: Output::Cubin,
        });
        pch::write_pending();
        outcome
    }

    /// A worker's options for a compile through the precompiled prelude.
    fn pch_options(nvrtc: &Nvrtc) -> Vec<CString> {
        let words = pch::words(&nvrtc.words).into_iter();
        words.map(|w| CString::new(w).unwrap()).collect()
    }

    fn rejected(outcome: Result<Vec<u8>, Failure>) -> String {
        match outcome {
            Err(Failure::Rejected(log)) => log,
            Err(Failure::Other(reason)) => panic!("{reason}"),
            Ok(_) => panic!("compiled"),
        }
    }

    /// A generated function name and source, as a compile job borrows them.
    struct Source {
        name: String,
        source: std::sync::Arc<str>,
    }

    impl Source {
        fn job(&self) -> CompileJob<'_> {
            CompileJob {
                kernel: "k",
                function: &self.name,
                source: &self.source,
                shared_source: &self.source,
            }
        }
    }

    fn variant(body: &str) -> Source {
        variant_with_header("", body)
    }

    fn variant_with_header(header: &str, body: &str) -> Source {
        let spec = KernelSpec::new(
            "k".into(),
            vec!["inp".into(), "s".into()],
            vec!["out".into()],
            body.into(),
            header.into(),
            true,
            false,
        )
        .unwrap();
        let inputs = [
            InputDesc {
                dtype: DType::F16,
                mode: PassMode::Device,
            },
            InputDesc {
                dtype: DType::F32,
                mode: PassMode::Scalar,
            },
        ];
        let template = [TemplateParam {
            name: "T".into(),
            value: TemplateArg::DType(DType::BF16),
        }];
        let g = crate::codegen::generate(
            Dialect::Cuda,
            &spec,
            &VariantDesc {
                inputs: &inputs,
                outputs: &[DType::F32],
                template: &template,
            },
            0,
        );
        Source {
            name: g.name,
            source: g.source.into(),
        }
    }

    /// The identity holds every option in full: two option lists whose
    /// short hashes (of the module key this backend once had) collide still
    /// get different module keys.
    #[test]
    fn option_lists_with_colliding_short_hashes_have_different_identities() {
        let words = |i: u32| {
            vec![
                "--gpu-architecture=sm_90a".to_string(),
                format!("-DTILE={i}"),
            ]
        };
        let short = |i: u32| xxhash_rust::xxh3::xxh3_64(words(i).join("\0").as_bytes()) as u32;
        let mut seen = std::collections::HashMap::new();
        let (a, b) = (0u32..1 << 22)
            .find_map(|i| seen.insert(short(i), i).map(|j| (j, i)))
            .expect("a 32-bit hash collides within 2^22 option lists");
        assert_eq!(short(a), short(b));
        let identity = |i| store_identity((13, 0), "sm_90a", &words(i));
        // The identity is what the cache key hashes (`cache::key`, a floor
        // above, holds that test).
        assert_ne!(identity(a), identity(b), "-DTILE={a} and -DTILE={b}");
        // Words are delimited: moving a character between two is a change.
        assert_ne!(
            store_identity((13, 0), "sm_90a", &["-DA".into(), "B".into()]),
            store_identity((13, 0), "sm_90a", &["-D".into(), "AB".into()])
        );
    }

    #[test]
    fn compiles_a_cubin_for_sm_90a() {
        let Some(nvrtc) = nvrtc() else { return };
        assert!(
            nvrtc.identity().contains("target sm_90a"),
            "{}",
            nvrtc.identity()
        );
        let v = variant(
            "uint i = thread_position_in_grid.x;\nT t = T(float(inp[i]) * s);\nout[i] = float(t) + inp_shape[0];",
        );
        let compiled = nvrtc.compile(&v.job()).unwrap();
        assert_eq!(
            &compiled.artifact[..4],
            b"\x7fELF",
            "a cubin is an ELF image"
        );
        assert!(compiled.dependencies.is_ok_and(|d| d.files.is_empty()));
        let gather = nvrtc.compile_source(super::super::gather::GATHER_SOURCE);
        assert!(
            gather.is_ok(),
            "{}",
            gather.err().map(|e| e.to_string()).unwrap_or_default()
        );
    }

    /// NVRTC's own cache is off in every compile (NVRTC 12.9 on) and kept
    /// when the configuration asks; either way the identity, and so every
    /// stored artifact's key, is the same, and the compile works.
    #[test]
    fn nvrtcs_own_cache_is_off_unless_kept_and_keys_do_not_change() {
        let Some(off) = nvrtc() else { return };
        let mut config = crate::config::Config::from_env().cuda;
        config.nvrtc_cache = true;
        let kept = Nvrtc::new((9, 0), &config).expect("NVRTC knows sm_90");
        let no_cache = |n: &Nvrtc| n.words().iter().any(|w| w == "--no-cache");
        assert_eq!(no_cache(&off), off.version >= (12, 9), "{:?}", off.words());
        assert!(!no_cache(&kept), "{:?}", kept.words());
        assert_eq!(off.identity(), kept.identity());
        let v = variant("uint i = thread_position_in_grid.x;\nout[i] = inp[i];");
        for n in [&off, &kept] {
            let artifact = n.compile(&v.job()).unwrap().artifact;
            assert_eq!(&artifact[..4], b"\x7fELF");
        }
    }

    /// A variant whose header includes `params.h`, which includes
    /// `scale.h` beside it (both in the returned directory).
    fn including_scale() -> (tempfile::TempDir, std::path::PathBuf, Source) {
        let dir = tempfile::tempdir().unwrap();
        let params = dir.path().join("params.h");
        std::fs::write(
            &params,
            "#include \"scale.h\"\n#define VAL (3.0f * SCALE)\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("scale.h"), "#define SCALE 2.0f\n").unwrap();
        let v = variant_with_header(
            &format!("#include \"{}\"\n", params.display()),
            "uint i = thread_position_in_grid.x;\nout[i] = float(inp[i]) * s + VAL;",
        );
        (dir, params, v)
    }

    /// What a header includes is read by kernelkit, given to NVRTC, and
    /// listed with its hash; a file that includes another by a relative
    /// name finds it beside itself.
    #[test]
    fn included_files_are_compiled_and_listed() {
        let Some(nvrtc) = nvrtc() else { return };
        let (dir, params, v) = including_scale();
        let compiled = nvrtc.compile(&v.job()).unwrap();
        assert_eq!(&compiled.artifact[..4], b"\x7fELF");
        let deps = compiled.dependencies.unwrap();
        let files: Vec<&std::path::Path> = deps.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(
            files,
            vec![params.as_path(), dir.path().join("scale.h").as_path()]
        );
        assert_eq!(deps.check(), Ok(()));
        std::fs::remove_file(dir.path().join("scale.h")).unwrap();
        let Err(err) = nvrtc.compile(&v.job()) else {
            panic!("compiled without scale.h");
        };
        let log = err.log().unwrap_or_default().to_string();
        assert!(log.contains("scale.h"), "{err}");
    }

    /// NVRTC compiles the header bytes it is given, not the file on disk
    /// under the same name (else the dependency list could hash one thing
    /// and the compile read another), for absolute and relative names.
    #[test]
    fn nvrtc_compiles_the_headers_it_is_given() {
        let Some(nvrtc) = nvrtc() else { return };
        let dir = tempfile::tempdir().unwrap();
        let on_disk = dir.path().join("given.h");
        std::fs::write(&on_disk, "#error read from the disk\n").unwrap();
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(&on_disk, &cwd);
        for name in [on_disk.display().to_string(), relative] {
            let source = format!(
                "#include \"{name}\"\nextern \"C\" __global__ void k(float* x) {{ x[0] = GIVEN; }}\n"
            );
            let headers = vec![(name.clone(), b"#define GIVEN 1.0f\n".to_vec())];
            let out = run_nvrtc(NvrtcJob {
                program: PROGRAM_NAME,
                source: &source,
                headers: &headers,
                options: &nvrtc.options,
                output: nvrtc.output,
            });
            assert!(out.is_ok(), "`{name}`: {}", out.err().unwrap());
        }
    }

    /// `path` relative to `base` (both absolute), with `..` as needed.
    fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
        let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
        let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let mut out = std::path::PathBuf::new();
        for _ in common..b.len() {
            out.push("..");
        }
        for c in &p[common..] {
            out.push(c);
        }
        out.display().to_string()
    }

    #[test]
    fn errors_point_into_the_body() {
        let Some(nvrtc) = nvrtc() else { return };
        let v = variant("uint i = thread_position_in_grid.x;\nout[i] = undefined_name;");
        let Err(err) = nvrtc.compile(&v.job()) else {
            panic!("an undefined name compiled");
        };
        let log = err.log().expect("a rejected compile has a log").to_string();
        assert!(log.contains("undefined_name"), "{log}");
        assert!(log.contains("[body line 2]"), "{log}");
        assert!(err.to_string().contains("kernel `k`"));
    }

    /// A variant compiled through its precompiled prelude (the compile that
    /// writes the header, then one that uses it) is the cubin compiled from
    /// the full source.
    #[test]
    fn the_precompiled_prelude_gives_the_same_cubin() {
        let Some(nvrtc) = nvrtc() else { return };
        let body = "uint i = thread_position_in_grid.x;\nout[i] = float(inp[i]) * s + 1.0f;";
        let v = variant(body);
        let expected = nvrtc.compile_source(&v.source).ok().unwrap();
        let written = through_pch(&nvrtc, &v.source).ok().unwrap();
        assert!(pch::is_written(&v.source));
        let used = through_pch(&nvrtc, &v.source).ok().unwrap();
        assert_eq!(written, expected);
        assert_eq!(used, expected);
        // Another body with the same prelude.
        let other = variant("uint i = thread_position_in_grid.x;\nout[i] = s;");
        assert_eq!(
            through_pch(&nvrtc, &other.source).ok().unwrap(),
            nvrtc.compile_source(&other.source).ok().unwrap()
        );
        // The warm-up a worker runs compiles.
        let warm = pch::warm_up().unwrap();
        assert!(through_pch(&nvrtc, &warm).is_ok());
        assert!(pch::is_written(&warm));
    }

    /// An error in the body is reported at its body line through the
    /// precompiled prelude, as from the full source.
    #[test]
    fn errors_through_the_precompiled_prelude_point_into_the_body() {
        let Some(nvrtc) = nvrtc() else { return };
        through_pch(
            &nvrtc,
            &variant("uint i = thread_position_in_grid.x;\nout[i] = s;").source,
        )
        .ok()
        .unwrap();
        let v = variant("uint i = thread_position_in_grid.x;\nout[i] = undefined_name;");
        assert!(pch::is_written(&v.source), "the same prelude");
        let map = |log: &str| map_log_lines(log, &v.source, body_of(&v.source), "kernel.cu(");
        let through = map(&rejected(through_pch(&nvrtc, &v.source)));
        let full = map(&rejected(nvrtc.compile_source(&v.source)));
        assert!(through.contains("[body line 2]"), "{through}");
        assert_eq!(through, full);
        assert!(!pch::failed_for_the_header(&through), "{through}");
    }

    /// The user's own includes are read in every compile, not kept in the
    /// precompiled header with the prelude: a file removed after a compile
    /// that wrote the header is missed by the next.
    #[test]
    fn the_precompiled_prelude_holds_none_of_the_users_includes() {
        let Some(nvrtc) = nvrtc() else { return };
        let (dir, _, v) = including_scale();
        through_pch(&nvrtc, &v.source).ok().unwrap();
        through_pch(&nvrtc, &v.source).ok().unwrap();
        assert!(pch::is_written(&v.source));
        std::fs::remove_file(dir.path().join("scale.h")).unwrap();
        let log = rejected(through_pch(&nvrtc, &v.source));
        assert!(log.contains("scale.h"), "{log}");
    }

    /// The compiling half of the prelude's dependency check (the lexical
    /// half is `codegen::prelude::tests::a_section_names_only_what_its_dependencies_declare`):
    /// each section, with only the sections it depends on (and those in
    /// every source), compiles, with and without the 16-bit float types.
    #[test]
    fn each_prelude_section_compiles_with_its_dependencies() {
        use crate::codegen::prelude::{Selection, CUDA_METAL_SECTIONS};
        let Some(nvrtc) = nvrtc() else { return };
        let kernel = "\nextern \"C\" __global__ void k(float* o) { o[threadIdx.x] = 1.0f; }\n";
        let mut failed = Vec::new();
        for (i, section) in CUDA_METAL_SECTIONS.iter().enumerate() {
            let only = Selection::of_index(i);
            for small in [false, true] {
                let mut source = String::new();
                if small {
                    source.push_str(
                        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#define KK_HALF_TYPES 1\n",
                    );
                }
                for s in only.sections() {
                    source.push_str(s.text);
                }
                source.push_str(kernel);
                if let Err(e) = nvrtc.compile_source(&source) {
                    failed.push(format!("{} (16-bit floats: {small}): {e}", section.name));
                }
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    }

    #[test]
    fn golden_sources_compile() {
        let Some(nvrtc) = nvrtc() else { return };
        macro_rules! golden {
            ($($name:literal),*) => {
                [$(($name, include_str!(concat!("../../../tests/golden/cuda/", $name, ".cu")))),*]
            };
        }
        let sources = golden!(
            "add_offset",
            "atomic_histogram",
            "complex_bf16_header",
            "cooperative_groups",
            "scalar_small_half_template",
            "strided_elem_to_loc",
            "threadgroup_reduce"
        );
        // The golden files hold the first line of each prelude section
        // their source holds (so a change of the prelude touches one
        // file): put the sections back. (The plain prelude's sections are
        // the Metal prelude's first ones.)
        use crate::codegen::{prelude_sections, BodyLanguage, Dialect};
        for (name, golden) in sources {
            let mut source = golden.to_string();
            let mut held = 0;
            for (_, text) in prelude_sections(Dialect::Cuda, BodyLanguage::Metal) {
                let first = text.split_inclusive('\n').next().unwrap_or(text);
                if source.contains(first) {
                    source = source.replacen(first, text, 1);
                    held += 1;
                }
            }
            assert!(held > 0, "golden {name}: no prelude section");
            if let Err(e) = nvrtc.compile_source(&source) {
                panic!("golden {name} does not compile: {e}");
            }
        }
    }
}
