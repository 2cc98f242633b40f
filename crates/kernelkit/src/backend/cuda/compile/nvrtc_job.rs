//! One NVRTC compile in this process: the job (what is compiled, how) and
//! its run, the same whether [`super::Nvrtc`] asked for it here
//! or a compile worker received it (`super::worker`); a job whose options
//! ask for the precompiled prelude goes through `super::pch`.

use std::ffi::CString;

use super::nvrtc::Program;
use super::pch;
use super::worker::Output;
use crate::codegen::math::MathMode;

/// One NVRTC compile: what it compiles and how, as this process runs it
/// (`O` = `CString`, NVRTC's own) or sends it to a worker (`O` = `String`).
pub(super) struct NvrtcJob<'a, O = CString> {
    /// The file name NVRTC's messages name.
    pub(super) program: &'a str,
    pub(super) source: &'a str,
    /// Include name and contents of each header given to NVRTC.
    pub(super) headers: &'a [(String, Vec<u8>)],
    pub(super) options: &'a [O],
    pub(super) output: Output,
}

// By hand: a derive would ask `O: Copy`, and only references are copied.
impl<O> Clone for NvrtcJob<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for NvrtcJob<'_, O> {}

/// Runs `job` in this process: what [`super::Nvrtc::compile`]
/// and a worker both do.
pub(super) fn run_nvrtc(job: NvrtcJob<'_>) -> Result<Vec<u8>, Failure> {
    if pch::asked(job.options) {
        return pch::run(job);
    }
    compile_program(job).map(|(artifact, _)| artifact)
}

/// One NVRTC compile of `job`'s source as it is: [`run_nvrtc`] without the
/// precompiled prelude; the artifact and NVRTC's log.
pub(super) fn compile_program(job: NvrtcJob<'_>) -> Result<(Vec<u8>, String), Failure> {
    let NvrtcJob {
        program,
        source,
        headers,
        options,
        output,
    } = job;
    let src = CString::new(source)
        .map_err(|_| Failure::Other("the source contains a NUL byte".into()))?;
    let name = CString::new(program)
        .map_err(|_| Failure::Other("the program name contains a NUL byte".into()))?;
    let mut names = Vec::with_capacity(headers.len());
    let mut texts = Vec::with_capacity(headers.len());
    for (n, text) in headers {
        let nul =
            |what: &str| Failure::Other(format!("the {what} of header `{n}` contains a NUL byte"));
        names.push(CString::new(n.as_str()).map_err(|_| nul("name"))?);
        texts.push(CString::new(text.as_slice()).map_err(|_| nul("text"))?);
    }
    let prog =
        Program::create(&src, &name, &texts, &names).map_err(|e| Failure::Other(e.to_string()))?;
    // The math mode the source was generated for (its first line), here so
    // that a worker compiling the source does the same.
    let mode = MathMode::of_source(source).nvrtc_options();
    let with_mode: Vec<CString>;
    let options = if mode.is_empty() {
        options
    } else {
        with_mode = options
            .iter()
            .cloned()
            .chain(mode.iter().map(|o| CString::new(*o).expect("no NUL")))
            .collect();
        &with_mode
    };
    tracing::trace!(
        "NVRTC compiles `{program}` ({} bytes, {} headers) with {options:?}",
        source.len(),
        headers.len()
    );
    if let Err(e) = prog.compile(options) {
        let log = prog.log();
        return Err(if e.rejected_source() {
            Failure::Rejected(log)
        } else {
            Failure::Other(format!("nvrtcCompileProgram: {}\n{log}", e.result()))
        });
    }
    let artifact = match output {
        Output::Cubin => prog.cubin(),
        Output::Ptx => prog.ptx(),
    }
    .map_err(Failure::Other)?;
    Ok((artifact, prog.log()))
}

/// Why a compile failed.
pub(in crate::backend::cuda) enum Failure {
    /// NVRTC rejected the source; its log.
    Rejected(String),
    /// NVRTC could not run.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Rejected(log) => write!(f, "NVRTC rejected the source:\n{log}"),
            Failure::Other(reason) => f.write_str(reason),
        }
    }
}
