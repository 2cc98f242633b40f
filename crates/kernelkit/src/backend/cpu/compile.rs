//! Runs the system C++ compiler on a variant's source.
//!
//! The compiler is `$CXX`, else the first of `c++`, `g++`, `clang++` on the
//! `PATH`. Its identity (the output of `--version`, run once per process
//! and compiler) and the host's CPU features are part of the module key and
//! of the artifact store's key, since the library is built with
//! `-march=native`.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::pch::Pch;
use crate::codegen::map_log_lines;
use crate::error::CompileError;
use crate::kernel::variant::Variant;

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

/// How long one compile may run before it is killed (seconds), unless
/// `KERNELKIT_COMPILE_TIMEOUT` says otherwise.
const DEFAULT_TIMEOUT_S: u64 = 300;

pub(crate) struct Compiler {
    program: String,
    identity: OnceLock<Arc<str>>,
    options: OnceLock<String>,
    artifact_identity: OnceLock<String>,
    timeout: Duration,
    pch: OnceLock<Pch>,
}

impl Compiler {
    pub(crate) fn from_env() -> Compiler {
        let program = std::env::var("CXX")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| {
                ["c++", "g++", "clang++"]
                    .into_iter()
                    .find(|p| on_path(p))
                    .unwrap_or("c++")
                    .to_string()
            });
        Compiler::with_program(program)
    }

    pub(crate) fn with_program(program: String) -> Compiler {
        let timeout = std::env::var("KERNELKIT_COMPILE_TIMEOUT")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(Duration::from_secs(DEFAULT_TIMEOUT_S));
        Compiler {
            program,
            identity: OnceLock::new(),
            options: OnceLock::new(),
            artifact_identity: OnceLock::new(),
            timeout,
            pch: OnceLock::new(),
        }
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
    pub(crate) fn artifact_identity(&self) -> &str {
        self.artifact_identity.get_or_init(|| {
            format!(
                "compiler: {}\n{}\nflags: {}\ntarget: {}",
                self.program,
                self.identity(),
                FLAGS.join(" "),
                cpu_features()
            )
        })
    }

    /// `cpu-{compiler}-{flags}-{cpu features}` as short hashes, for the
    /// module key (which also names the artifact).
    pub(crate) fn options(&self) -> &str {
        self.options.get_or_init(|| {
            let id = xxhash_rust::xxh3::xxh3_64(
                format!("{}\0{}\0{}", self.program, self.identity(), FLAGS.join(" ")).as_bytes(),
            );
            let features = xxhash_rust::xxh3::xxh3_64(cpu_features().as_bytes());
            format!("cpu{:08x}{:08x}", id as u32, features as u32)
        })
    }

    pub(crate) fn compile(&self, kernel: &str, variant: &Variant) -> Result<Vec<u8>, CompileError> {
        let fail = |reason: String| CompileError::Compiler {
            kernel: kernel.to_string(),
            compiler: self.program.clone(),
            reason,
        };
        let dir = tempfile::Builder::new()
            .prefix("kernelkit-cc-")
            .tempdir()
            .map_err(|e| fail(format!("cannot create a temporary directory: {e}")))?;
        let src = dir.path().join("kernel.cpp");
        let lib = dir.path().join("kernel.so");
        let (program, timeout) = (self.program.clone(), self.timeout);
        let input = self.pch().input_for(variant.source(), move |header, gch| {
            let dir = header.parent().unwrap_or(header);
            let mut args: Vec<OsString> = FLAGS
                .iter()
                .filter(|f| **f != "-shared")
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
        let text = input.as_deref().unwrap_or(variant.source());
        std::fs::write(&src, text.as_bytes())
            .map_err(|e| fail(format!("cannot write the source: {e}")))?;
        let mut args: Vec<OsString> = FLAGS.iter().map(OsString::from).collect();
        args.extend(["-o".into(), lib.clone().into(), src.into()]);
        let outcome = run(&self.program, &args, dir.path(), self.timeout);
        self.pch().finish_build();
        let (ok, log) = outcome.map_err(fail)?;
        if !ok {
            return Err(CompileError::Rejected {
                kernel: kernel.to_string(),
                function: variant.name().to_string(),
                compiler: self.describe(),
                log: map_log_lines(&log, variant.source(), body_of(variant), "kernel.cpp:"),
                generated: variant.shared_source().clone(),
            });
        }
        std::fs::read(&lib).map_err(|e| fail(format!("it produced no library: {e}")))
    }

    fn pch(&self) -> &Pch {
        self.pch.get_or_init(|| {
            Pch::new(xxhash_rust::xxh3::xxh3_64(
                format!("{}\0{}\0{}", self.program, self.identity(), FLAGS.join(" ")).as_bytes(),
            ))
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
    let log_path = dir.join(format!("log-{}.txt", std::process::id()));
    let log_file =
        std::fs::File::create(&log_path).map_err(|e| format!("cannot create the log: {e}"))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| format!("cannot create the log: {e}"))?;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("cannot start it: {e} (set CXX to a C++20 compiler)"))?;
    let status = match wait_bounded(&mut child, timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = std::fs::remove_file(&log_path);
            return Err(format!(
                "it did not finish within {:.1} s (KERNELKIT_COMPILE_TIMEOUT)",
                timeout.as_secs_f64()
            ));
        }
        Err(e) => return Err(format!("cannot wait for it: {e}")),
    };
    let mut log = String::new();
    if let Ok(mut f) = std::fs::File::open(&log_path) {
        let _ = f.read_to_string(&mut log);
    }
    let _ = std::fs::remove_file(&log_path);
    if !status.success() && log.trim().is_empty() {
        log = match status.code() {
            Some(code) => format!("(the compiler printed nothing; it exited with code {code})"),
            None => "(the compiler printed nothing; it was ended by a signal)".to_string(),
        };
    }
    Ok((status.success(), log))
}

/// Waits for `child` at most `timeout`; kills it (and reaps it) and returns
/// `None` when it runs longer.
fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The user's body inside a generated CPU source: between the `kk_body`
/// signature line and the closing brace before the entry point.
fn body_of(variant: &Variant) -> &str {
    let src = variant.source();
    let Some(start) = src.find("static inline void kk_body(") else {
        return "";
    };
    let Some(open) = src[start..].find(") {\n") else {
        return "";
    };
    let body_start = start + open + 4;
    let Some(end) = src[body_start..].find("\n}\n\nextern \"C\"") else {
        return "";
    };
    &src[body_start..body_start + end]
}

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
    let child = Command::new(program)
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
