//! The CUDA backend's side: which program serves as a worker, one pool per
//! program for the whole process, and compile jobs through it.
//!
//! The program is, first found first: the one a [`CompileWorkers::Program`]
//! setting names; the configuration's worker (`KERNELKIT_WORKER`, see
//! [`CudaConfig`]); a `kernelkit` executable next to the running program.
//! It is run as `PROGRAM ARGS... compile-worker`, where `ARGS` are the
//! configuration's [`CudaConfig::worker_args`] (the Python package runs its
//! interpreter this way). A worker must report the NVRTC version this
//! process uses (the version is part of every module key), else the pool
//! turns off.
//!
//! Workers start when [`CudaConfig::start_workers`] says: one at a time as
//! compiles need them, or all at the process's first compile; started
//! ahead, each is warmed up with a compile so that NVRTC's first-use costs
//! are paid before a real job comes.
//!
//! Pools are shared by every device of the process (a job carries all its
//! options, so any worker can compile for any device): NVRTC serializes
//! compiles across the whole process, not per device.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use super::frame::{Message, Output};
use super::process_pool::{Launcher, Pool};
use super::{PROTOCOL, WARM_UP_PROGRAM, WORKER_ARG};
use crate::backend::cuda::compile::nvrtc_job::{Failure, NvrtcJob};
use crate::config::{CompileWorkers, CudaConfig, StartWorkers};

/// The source of the trivial warm-up compile.
const WARM_UP_SOURCE: &str =
    "extern \"C\" __global__ void kernelkit_warm_up(float* x) { x[0] = 1.0f; }";

/// The compile a worker started ahead runs before its first job, so that
/// what a worker pays once (NVRTC's first use; a precompiled prelude, see
/// `compile::pch`) is paid before a real job comes.
pub(crate) struct WarmUp {
    source: String,
    options: Vec<String>,
}

impl WarmUp {
    /// A trivial kernel compiled with `options`.
    pub(crate) fn trivial(options: &[String]) -> WarmUp {
        WarmUp::new(WARM_UP_SOURCE.to_string(), options.to_vec())
    }

    /// `source` compiled with `options`.
    pub(crate) fn new(source: String, options: Vec<String>) -> WarmUp {
        WarmUp { source, options }
    }
}

/// A handle on the process-wide pool of one worker program.
pub(crate) struct Workers {
    program: PathBuf,
    pool: Arc<Pool>,
    max: usize,
    start: StartWorkers,
}

/// A worker program and the arguments before `compile-worker`: one pool
/// each.
type Program = (PathBuf, Vec<OsString>);

impl Workers {
    /// The workers for a device's configuration, or `None` to compile in
    /// this process (no program found, or at most 0 workers). Starts none:
    /// they start with the compiles ([`CudaConfig::start_workers`]).
    /// `warm` and `output`: the warm-up compile and its artifact (the first
    /// device's, per program).
    pub(crate) fn find(
        config: &CudaConfig,
        nvrtc: (i32, i32),
        warm: &WarmUp,
        output: Output,
    ) -> Option<Workers> {
        let max = config.max_workers;
        if max == 0 {
            return None;
        }
        let program = program(&config.options.workers, config.worker.as_deref())?;
        // Arguments come with the configured program only.
        let args = match &config.options.workers {
            CompileWorkers::Auto if config.worker.is_some() => config.worker_args.clone(),
            _ => Vec::new(),
        };
        let key: Program = (program, args);
        static POOLS: Mutex<Vec<(Program, Arc<Pool>)>> = Mutex::new(Vec::new());
        let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
        let pool = match pools.iter().find(|(p, _)| *p == key) {
            Some((_, pool)) => pool.clone(),
            None => {
                let warm = Message::Compile {
                    program: WARM_UP_PROGRAM.to_string(),
                    source: warm.source.clone(),
                    headers: Vec::new(),
                    options: warm.options.clone(),
                    output,
                }
                .encode();
                let pool = Arc::new(Pool::new(launcher(&key.0, &key.1, nvrtc, warm), max));
                pools.push((key.clone(), pool.clone()));
                pool
            }
        };
        drop(pools);
        Some(Workers {
            program: key.0,
            pool,
            max,
            start: config.start_workers,
        })
    }

    /// `compile workers: up to N × PROGRAM`, and why they are off if so.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!(
            "compile workers: up to {} x {}",
            self.max,
            self.program.display()
        );
        if let Some(reason) = self.pool.off_reason() {
            s.push_str(&format!(" (off: {reason})"));
        }
        s
    }

    /// Compiles `job` in this process with `local` when it is not compiling
    /// already, else on a worker (`prefer_workers`: on an idle worker
    /// first); any failure of a worker runs `local`.
    pub(crate) fn compile(
        &self,
        job: NvrtcJob<'_, String>,
        prefer_workers: bool,
        local: impl FnOnce() -> Result<Vec<u8>, Failure>,
    ) -> Result<Vec<u8>, Failure> {
        let request = Message::Compile {
            program: job.program.to_string(),
            source: job.source.to_string(),
            headers: job.headers.to_vec(),
            options: job.options.to_vec(),
            output: job.output,
        }
        .encode();
        if self.start == StartWorkers::AtFirstCompile && self.pool.first_job() {
            self.pool.start_ahead(self.max);
        }
        self.pool.run(&request, prefer_workers, decode, local)
    }

    #[cfg(test)]
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// A worker's answer as a compile result; `None` for anything that is not
/// the source's own outcome (the job then runs in this process).
fn decode(body: &[u8]) -> Option<Result<Vec<u8>, Failure>> {
    match Message::decode(body).ok()? {
        Message::Done { artifact } if !artifact.is_empty() => Some(Ok(artifact)),
        Message::Rejected { log } => Some(Err(Failure::Rejected(log))),
        Message::Failed { reason } => {
            tracing::debug!("a compile worker could not run NVRTC: {reason}");
            None
        }
        _ => None,
    }
}

/// How to start, greet and warm up a worker of `program` run with `args`
/// before `compile-worker`.
fn launcher(program: &Path, args: &[OsString], nvrtc: (i32, i32), warm: Vec<u8>) -> Launcher {
    let exe = program.to_path_buf();
    let args = args.to_vec();
    let want = (nvrtc.0 as u32, nvrtc.1 as u32);
    Launcher {
        command: Box::new(move || {
            let mut c = Command::new(&exe);
            c.args(&args).arg(WORKER_ARG);
            c
        }),
        warm: Some(warm),
        hello: Message::Hello { protocol: PROTOCOL }.encode(),
        accept: Box::new(move |body| match Message::decode(body) {
            Ok(Message::Ready { protocol, nvrtc }) if protocol == PROTOCOL && nvrtc == want => {
                Ok(())
            }
            Ok(Message::Ready { protocol, nvrtc }) => Err(format!(
                "the worker has protocol {protocol} and NVRTC {}.{}, this process {PROTOCOL} \
                 and {}.{}",
                nvrtc.0, nvrtc.1, want.0, want.1
            )),
            Ok(Message::Refused { reason }) => Err(format!("the worker refused: {reason}")),
            Ok(other) => Err(format!("unexpected handshake {other:?}")),
            Err(e) => Err(format!("bad handshake: {e}")),
        }),
    }
}

/// The worker program for a setting, where `auto` is the configured
/// program for [`CompileWorkers::Auto`]; see the module documentation.
fn program(setting: &CompileWorkers, auto: Option<&Path>) -> Option<PathBuf> {
    match setting {
        CompileWorkers::InProcess => None,
        CompileWorkers::Program(p) => Some(p.clone()),
        CompileWorkers::Auto => {
            if let Some(p) = auto {
                return Some(p.to_path_buf());
            }
            let exe = std::env::current_exe().ok()?;
            let sibling = exe
                .parent()?
                .join(format!("kernelkit{}", std::env::consts::EXE_SUFFIX));
            sibling.is_file().then_some(sibling)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_picks_the_program() {
        let configured = Some(Path::new("/opt/configured"));
        assert_eq!(program(&CompileWorkers::InProcess, configured), None);
        assert_eq!(
            program(&CompileWorkers::Program("/opt/w".into()), configured),
            Some(PathBuf::from("/opt/w"))
        );
        assert_eq!(
            program(&CompileWorkers::Auto, configured),
            Some(PathBuf::from("/opt/configured"))
        );
        // Auto without a configured program: a test binary lives in
        // target/*/deps, where no `kernelkit` executable is.
        let found = program(&CompileWorkers::Auto, None);
        let exe = std::env::current_exe().unwrap();
        assert_eq!(
            found.is_some(),
            exe.parent().unwrap().join("kernelkit").is_file()
        );
    }

    #[test]
    fn no_workers_when_the_count_is_zero() {
        let mut config = CudaConfig {
            worker: Some("/opt/w".into()),
            ..CudaConfig::default()
        };
        assert!(Workers::find(&config, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).is_some());
        config.max_workers = 0;
        assert!(Workers::find(&config, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).is_none());
    }

    #[test]
    fn arguments_go_before_the_worker_argument_of_the_configured_program() {
        let l = launcher(
            Path::new("/usr/bin/python3"),
            &["-c".into(), "serve()".into()],
            (13, 0),
            b"warm".to_vec(),
        );
        let c = (l.command)();
        assert_eq!(c.get_program(), "/usr/bin/python3");
        let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
        assert_eq!(args, ["-c", "serve()", WORKER_ARG]);
        assert_eq!(l.warm.as_deref(), Some(&b"warm"[..]));
        // The pools of one program with other arguments are distinct, and a
        // program given by the setting takes no configured arguments.
        let config = CudaConfig {
            worker: Some("/opt/py".into()),
            worker_args: vec!["-c".into(), "a".into()],
            ..CudaConfig::default()
        };
        let other = CudaConfig {
            worker_args: vec!["-c".into(), "b".into()],
            ..config.clone()
        };
        let a = Workers::find(&config, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).unwrap();
        let b = Workers::find(&other, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).unwrap();
        let a2 = Workers::find(&config, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).unwrap();
        assert!(!Arc::ptr_eq(&a.pool, &b.pool));
        assert!(Arc::ptr_eq(&a.pool, &a2.pool));
        let mut named = config.clone();
        named.options.workers = CompileWorkers::Program("/opt/py".into());
        let n = Workers::find(&named, (13, 0), &WarmUp::trivial(&[]), Output::Cubin).unwrap();
        assert!(!Arc::ptr_eq(&a.pool, &n.pool));
    }

    /// When workers start follows the setting: a program that cannot
    /// start turns its pool off the moment a start is tried.
    #[test]
    fn the_start_setting_decides_when_workers_start() {
        let config = |start, tag: &str| CudaConfig {
            worker: Some("/nonexistent/kernelkit-start-test".into()),
            // A pool per case: pools are per program and arguments.
            worker_args: vec![tag.into()],
            max_workers: 2,
            start_workers: start,
            ..CudaConfig::default()
        };
        let tried = |w: &Workers| {
            (0..2000).any(|_| {
                let off = w.pool.off_reason().is_some();
                if !off {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                off
            })
        };
        let local = || Ok(vec![7u8]);
        let job = NvrtcJob {
            program: "k.cu",
            source: "",
            headers: &[],
            options: &[],
            output: Output::Cubin,
        };
        let compile = |w: &Workers| w.compile(job, false, local);

        let demand = Workers::find(
            &config(StartWorkers::OnDemand, "demand"),
            (13, 0),
            &WarmUp::trivial(&[]),
            Output::Cubin,
        )
        .unwrap();
        assert!(matches!(compile(&demand), Ok(a) if a == [7]));
        assert!(
            demand.pool.off_reason().is_none(),
            "a lone compile starts nothing"
        );

        let first = Workers::find(
            &config(StartWorkers::AtFirstCompile, "first"),
            (13, 0),
            &WarmUp::trivial(&[]),
            Output::Cubin,
        )
        .unwrap();
        assert!(
            first.pool.off_reason().is_none(),
            "nothing before the first compile"
        );
        assert!(
            matches!(compile(&first), Ok(a) if a == [7]),
            "the first compile runs here"
        );
        assert!(tried(&first), "the first compile starts the workers");
    }

    #[test]
    fn answers_that_are_not_a_compile_outcome_are_refused() {
        let done = Message::Done {
            artifact: vec![1, 2],
        };
        assert!(matches!(decode(&done.encode()), Some(Ok(a)) if a == [1, 2]));
        let rejected = Message::Rejected { log: "bad".into() };
        assert!(matches!(
            decode(&rejected.encode()),
            Some(Err(Failure::Rejected(l))) if l == "bad"
        ));
        for m in [
            Message::Done { artifact: vec![] },
            Message::Failed {
                reason: "oom".into(),
            },
            Message::Hello { protocol: 1 },
        ] {
            assert!(decode(&m.encode()).is_none(), "{m:?}");
        }
        assert!(decode(b"garbage").is_none());
    }

    #[test]
    fn the_handshake_checks_protocol_and_nvrtc_version() {
        let l = launcher(Path::new("/x"), &[], (13, 0), Vec::new());
        let ready = |protocol, nvrtc| Message::Ready { protocol, nvrtc }.encode();
        assert!((l.accept)(&ready(PROTOCOL, (13, 0))).is_ok());
        assert!((l.accept)(&ready(PROTOCOL, (12, 8))).is_err());
        assert!((l.accept)(&ready(PROTOCOL + 1, (13, 0))).is_err());
        let refused = Message::Refused {
            reason: "no NVRTC".into(),
        };
        let e = (l.accept)(&refused.encode()).unwrap_err();
        assert!(e.contains("no NVRTC"), "{e}");
        assert!((l.accept)(b"\xff").is_err());
        let args: Vec<_> = (l.command)().get_args().map(|a| a.to_owned()).collect();
        assert_eq!(args, [WORKER_ARG]);
    }

    /// On a machine with NVRTC and a `kernelkit` worker next to the test
    /// binary (the GPU script puts them side by side), jobs sent to a
    /// worker come back exactly as compiled here: the same artifact kind
    /// and, for a rejected source, the same log.
    #[test]
    fn a_worker_compiles_like_this_process() {
        use crate::backend::cuda::compile::nvrtc_job::{run_nvrtc, NvrtcJob};
        let config = crate::config::Config::from_env().cuda;
        let Ok(nvrtc) = crate::backend::cuda::compile::nvrtc_version(&config) else {
            println!("skipped: no NVRTC");
            return;
        };
        let mut config = config;
        // One worker, started by this test's job (none ahead).
        config.start_workers = StartWorkers::OnDemand;
        let Some(workers) = Workers::find(&config, nvrtc, &WarmUp::trivial(&[]), Output::Cubin)
        else {
            println!("skipped: no worker program next to the test binary");
            return;
        };
        let options = vec!["--gpu-architecture=sm_90a".to_string()];
        let c: Vec<_> = options
            .iter()
            .map(|o| std::ffi::CString::new(o.as_str()).unwrap())
            .collect();
        let good = "extern \"C\" __global__ void k(float* x) { x[0] = 2.0f; }";
        let bad = "extern \"C\" __global__ void k() {\n  undefined_name; }";
        // The same job, for a worker (option words) and for NVRTC here.
        let jobs = |source| {
            let job = NvrtcJob {
                program: "kernel.cu",
                source,
                headers: &[],
                options: &options,
                output: Output::Cubin,
            };
            let here = NvrtcJob {
                program: job.program,
                source,
                headers: job.headers,
                options: &c,
                output: job.output,
            };
            (job, here)
        };
        let before = workers.pool().stats().remote;
        {
            let _slot = workers.pool().hold_local_slot();
            let (remote, here) = jobs(good);
            let remote = workers
                .compile(remote, false, || {
                    panic!("ran locally: {}", workers.describe())
                })
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&remote[..4], b"\x7fELF");
            let local = run_nvrtc(here).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                remote == local,
                "the worker's cubin differs from this process's"
            );
            let (remote, here) = jobs(bad);
            let Err(Failure::Rejected(remote)) =
                workers.compile(remote, false, || panic!("ran locally"))
            else {
                panic!("the bad source was not rejected")
            };
            let Err(Failure::Rejected(local)) = run_nvrtc(here) else {
                panic!("the bad source was not rejected here")
            };
            assert_eq!(remote, local);
        }
        // Other tests may use the process-wide pool at the same time.
        assert!(workers.pool().stats().remote >= before + 2);
    }
}
