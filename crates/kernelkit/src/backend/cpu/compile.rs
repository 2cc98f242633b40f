//! Runs the system C++ compiler on a variant's source.
//!
//! The compiler is the configured one (`CXX`, see [`CpuConfig`]), else the
//! first of `c++`, `g++`, `clang++` on the `PATH`. Its identity (the output of `--version`, run once per process
//! and compiler) and the host's CPU features are part of the module key and
//! of the artifact store's key, since the library is built with
//! `-march=native`.
//!
//! Each compile runs in a private scratch directory (`scratch`), in a
//! process group of its own that a timeout kills whole, and writes the list
//! of files it read (`depfile`) for the artifact store.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::depfile;
use super::pch::Pch;
use super::scratch;
use crate::backend::{CompileJob, Compiled};
use crate::codegen::cpu::body_of;
use crate::codegen::map_log_lines;
use crate::codegen::math::MathMode;
use crate::config::CpuConfig;
use crate::error::CompileError;

/// Flags every CPU compile uses; part of the module key. Public (as
/// `kernelkit::CPU_COMPILE_FLAGS`) so a compile can be reproduced by hand.
pub const FLAGS: &[&str] = &[
    "-std=c++20",
    "-O2",
    "-march=native",
    "-fPIC",
    "-shared",
    "-fno-exceptions",
    // Metal's `char` is signed (aarch64's C++ `char` is not).
    "-fsigned-char",
];

pub(crate) struct Compiler {
    program: String,
    /// `native`, or a portable level (`x86-64-v2`, see `portable`).
    target: String,
    identity: OnceLock<Arc<str>>,
    artifact_identity: OnceLock<String>,
    timeout: Duration,
    /// Where the precompiled header goes, as configured (checked when the
    /// first compile needs it).
    pch_dir: Option<PathBuf>,
    pch: OnceLock<Pch>,
}

impl Compiler {
    /// The compiler `config` names, else the first of `c++`, `g++`,
    /// `clang++` on the `PATH`.
    pub(crate) fn new(config: &CpuConfig) -> Compiler {
        let program = config.compiler.clone().unwrap_or_else(|| {
            ["c++", "g++", "clang++"]
                .into_iter()
                .find(|p| on_path(p))
                .unwrap_or("c++")
                .to_string()
        });
        Compiler {
            program,
            target: "native".to_string(),
            identity: OnceLock::new(),
            artifact_identity: OnceLock::new(),
            timeout: config.compile_timeout,
            pch_dir: config.pch_dir.clone(),
            pch: OnceLock::new(),
        }
    }

    /// The same compiler building for the portable level `target` (see
    /// `portable`) instead of this machine's CPU; `None` for a level
    /// kernelkit does not know.
    pub(crate) fn for_target(config: &CpuConfig, target: &str) -> Option<Compiler> {
        if target == "native" {
            return Some(Compiler::new(config));
        }
        super::portable::is_known(target).then(|| Compiler {
            target: target.to_string(),
            ..Compiler::new(config)
        })
    }

    /// `native` or the portable level it builds for.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// The flags of its compiles.
    fn flags(&self) -> Vec<String> {
        super::portable::flags(&self.target)
    }

    /// The compiler's whole `--version` output (or why it could not run).
    fn identity(&self) -> &str {
        self.identity
            .get_or_init(|| version_of(&self.program, self.timeout))
    }

    pub(crate) fn describe(&self) -> String {
        let first_line = self.identity().lines().next().unwrap_or("").trim();
        format!("{} = {}", self.program, first_line)
    }

    /// The compiler command, its full version output, the flags and the
    /// CPU's features: what the artifact store's key needs besides the
    /// source.
    ///
    /// For a portable level, the level's identity alone (see `portable`):
    /// nothing of this machine or its compiler.
    pub(crate) fn artifact_identity(&self) -> &str {
        self.artifact_identity.get_or_init(|| {
            if self.target != "native" {
                return super::portable::identity(&self.target);
            }
            format!(
                "compiler: {}\n{}\nflags: {}\ntarget: {}",
                self.program,
                self.identity(),
                FLAGS.join(" "),
                cpu_features()
            )
        })
    }

    /// Compiles a variant into a shared library, with the list of files
    /// the compile read (the compiler's `-MMD` output, see `depfile`).
    pub(crate) fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
        let kernel = job.kernel;
        let fail = |reason: String| CompileError::Compiler {
            kernel: kernel.to_string(),
            compiler: self.program.clone(),
            reason,
        };
        let dir = scratch::private_dir("kernelkit-cc-")
            .map_err(|e| fail(format!("cannot create a temporary directory: {e}")))?;
        let src = dir.path().join(crate::codegen::cpu::FILE_NAME);
        let lib = dir.path().join("kernel.so");
        let (program, timeout) = (self.program.clone(), self.timeout);
        let flags = self.flags();
        let input = self.pch().input_for(job.source, move |header, gch| {
            let dir = header.parent().unwrap_or(header);
            let mut args: Vec<OsString> = flags
                .iter()
                .filter(|f| *f != "-shared")
                .map(OsString::from)
                .collect();
            args.extend([
                "-x".into(),
                "c++-header".into(),
                header.into(),
                "-o".into(),
                gch.into(),
            ]);
            matches!(run(&program, &args, dir, timeout), Ok((true, _)))
        });
        let rule = dir.path().join("kernel.d");
        let mut args: Vec<OsString> = self.flags().iter().map(OsString::from).collect();
        // The math mode the source was generated for (its first line).
        let mode = MathMode::of_source(job.source);
        args.extend(mode.cxx_flags().iter().map(OsString::from));
        args.extend(depfile::args(&rule));
        args.extend(["-o".into(), lib.clone().into(), src.clone().into()]);
        let started = SystemTime::now();
        let compile = |text: &str| {
            let _ = std::fs::remove_file(&src);
            scratch::write_private(&src, text.as_bytes())
                .map_err(|e| format!("cannot write the source: {e}"))?;
            run(&self.program, &args, dir.path(), self.timeout)
        };
        let mut outcome = compile(input.as_deref().unwrap_or(job.source));
        if input.is_some() && matches!(outcome, Ok((false, _))) && !self.pch().present() {
            // The header vanished between the check and the compile.
            tracing::debug!(
                "the precompiled header vanished during a compile; compiling again without it"
            );
            outcome = compile(job.source);
        }
        self.pch().finish_build();
        let (ok, log) = outcome.map_err(fail)?;
        if !ok {
            return Err(CompileError::Rejected {
                kernel: kernel.to_string(),
                function: job.function.to_string(),
                compiler: self.describe(),
                log: map_log_lines(&log, job.source, body_of(job.source), "kernel.cpp:"),
                generated: job.shared_source.clone(),
            });
        }
        let artifact =
            std::fs::read(&lib).map_err(|e| fail(format!("it produced no library: {e}")))?;
        let dependencies = depfile::read(&rule, dir.path(), started, |p| self.pch().holds(p));
        Ok(Compiled {
            artifact,
            dependencies,
        })
    }

    fn pch(&self) -> &Pch {
        self.pch.get_or_init(|| {
            Pch::new(
                super::pch::usable_dir(self.pch_dir.as_deref()),
                xxhash_rust::xxh3::xxh3_64(
                    format!(
                        "{}\0{}\0{}",
                        self.program,
                        self.identity(),
                        self.flags().join(" ")
                    )
                    .as_bytes(),
                ),
            )
        })
    }
}

/// Runs the compiler in `dir` with a timeout; returns whether it succeeded
/// and its output (stdout and stderr together).
fn run(
    program: &str,
    args: &[OsString],
    dir: &Path,
    timeout: Duration,
) -> Result<(bool, String), String> {
    // A name of its own (mode 0600): `dir` may be the shared PCH directory.
    let log_tmp = tempfile::Builder::new()
        .prefix("log-")
        .suffix(".txt")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create the log: {e}"))?;
    let handle = || {
        log_tmp
            .as_file()
            .try_clone()
            .map_err(|e| format!("cannot create the log: {e}"))
    };
    let (log_file, log_err) = (handle()?, handle()?);
    let mut child = compiler_command(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .spawn()
        .map_err(|e| cannot_start(program, &e))?;
    let status = match wait_bounded(&mut child, timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            return Err(format!(
                "it did not finish within {:.1} s (KERNELKIT_COMPILE_TIMEOUT)",
                timeout.as_secs_f64()
            ));
        }
        Err(e) => return Err(format!("cannot wait for it: {e}")),
    };
    let mut log = String::new();
    if let Ok(mut f) = log_tmp.reopen() {
        let _ = f.read_to_string(&mut log);
    }
    if !status.success() && log.trim().is_empty() {
        log = match status.code() {
            Some(code) => format!("(the compiler printed nothing; it exited with code {code})"),
            None => "(the compiler printed nothing; it was ended by a signal)".to_string(),
        };
    }
    Ok((status.success(), log))
}

/// A command for the compiler, in a process group of its own: a driver
/// (`g++`) runs the real compiler (`cc1plus`) and the assembler as its
/// children, and a timeout must end them all, not only the driver.
///
/// `program` is a command's words separated by whitespace, as `make`'s
/// `CXX` is: `zig c++` (zig from PyPI's `ziglang`) is a compiler too.
fn compiler_command(program: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let mut words = program.split_whitespace();
    let mut command = Command::new(words.next().unwrap_or(program));
    command.args(words);
    command.process_group(0);
    command
}

/// Why the compiler did not start, and, when it is not there, the ways to
/// get one: kernels of the CPU backend are compiled on the user's machine.
fn cannot_start(program: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        format!(
            "no C++ compiler: `{program}` was not found. CPU kernels are compiled at run time \
             by a C++20 compiler: install the system's (`apt install g++`, `dnf install \
             gcc-c++`, `apk add g++`), or `pip install ziglang` and set CXX=\"<python> -m \
             ziglang c++\" with <python> the full path of that Python, or set CXX to another \
             compiler"
        )
    } else {
        format!("cannot start it: {e} (set CXX to a C++20 compiler)")
    }
}

/// Waits for `child` (the leader of its own process group, see
/// [`compiler_command`]) at most `timeout`; when it runs longer, kills the
/// whole group, reaps the child and returns `None`.
fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    use rustix::process::{kill_process_group, Pid, Signal};
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > timeout {
            // The group's id is the child's pid; the child is not reaped
            // yet, so the id cannot have been reused.
            if kill_process_group(Pid::from_child(child), Signal::KILL).is_err() {
                let _ = child.kill();
            }
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether `program` is a file in a directory of the `PATH`. This is the
/// operating system's search for a program, not a setting, so it reads
/// `PATH` here rather than through [`crate::config::Config`] (as the
/// `Command` that runs the compiler does).
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &PathBuf) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// `program --version`, run once per process for each program.
fn version_of(program: &str, timeout: Duration) -> Arc<str> {
    static SEEN: Mutex<Vec<(String, Arc<str>)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = seen.iter().find(|(p, _)| p == program) {
        return v.clone();
    }
    // Bounded like a compile: a compiler that hangs must not hang (with
    // this lock held) every first call that asks for a module key.
    let child = compiler_command(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let version: Arc<str> = match child {
        Err(e) => format!("unavailable ({e})").into(),
        Ok(mut child) => match wait_bounded(&mut child, timeout) {
            Ok(Some(_)) => {
                let mut out = String::new();
                if let Some(mut stdout) = child.stdout.take() {
                    let _ = stdout.read_to_string(&mut out);
                }
                out.trim().into()
            }
            Ok(None) => format!(
                "unavailable (`--version` did not finish within {:.1} s)",
                timeout.as_secs_f64()
            )
            .into(),
            Err(e) => format!("unavailable ({e})").into(),
        },
    };
    seen.push((program.to_string(), version.clone()));
    version
}

/// The host CPU's feature flags (what `-march=native` sees), read once.
fn cpu_features() -> &'static str {
    static FEATURES: OnceLock<String> = OnceLock::new();
    FEATURES.get_or_init(read_cpu_features)
}

fn read_cpu_features() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .unwrap_or("");
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .unwrap_or("");
    format!("{}\n{}\n{}", std::env::consts::ARCH, model, flags)
}
