//! NVRTC's precompiled headers for the generated prelude.
//!
//! Every generated source starts with kernelkit's prelude (the includes a
//! variant needs, then the prelude sections: for a Metal body the parts of
//! the Metal compatibility layer it uses), which ends at [`PRELUDE_END`].
//! NVRTC parses all of it in every compile: a large part of a small
//! kernel's cold compile, and of what concurrent compiles contend for.
//!
//! A compile asked to go through the precompiled prelude (its options hold
//! [`words`]; [`run`] decides, on the worker that runs it) gives NVRTC the
//! prelude as an in-memory header, and the source as an `#include` of it
//! and `#pragma nv_hdrstop`, blank lines up
//! to where the prelude ended, and the rest of the source unchanged (so
//! NVRTC's messages keep the full source's line numbers), with NVRTC's
//! automatic precompiled headers on (`-pch`), which loads the header NVRTC
//! wrote for that prelude instead of parsing its text.
//!
//! Writing a header costs the compile that writes it more than the
//! compile itself, so no call's compile writes one. A process compiles through a prelude only
//! once it has written its header; until then its compiles of that
//! prelude use the full source, and the first such compile queues the
//! header, which [`write_pending`] writes when the worker has nothing else
//! to do: after it answered the job (before it answered, for its warm-up).
//!
//! - The precompiled part ends at `nv_hdrstop`: without it NVRTC's header
//!   would also hold the user's own includes that follow (their text as it
//!   was then, whatever the files say now).
//! - Line numbers are kept by blank lines, not `#line`, which stops NVRTC
//!   from writing a header.
//! - Headers are per process, not shared in a directory: NVRTC maps a
//!   header at the address it was written at, and another process's
//!   address space seldom has it free (NVRTC then refuses the header:
//!   "incompatible precompiled header (PCH) heap allocation address"). NVRTC keeps the
//!   headers it writes in a directory of its own, removed when the process
//!   ends, and picks the one that matches a source (one per prelude).
//! - A compile that fails with a message about the precompiled header is
//!   compiled again from the full source.
//! - Not with `--pre-include` options (the caller's choice): NVRTC reads
//!   those files before the prelude, so a header would keep their text as
//!   it was when written.
//!
//! Only on compile workers: this process would write its headers in its
//! calls, or while it exits (a header written in the background here
//! crashed processes that ended meanwhile). So a compile that asks for
//! the precompiled prelude goes to an idle worker first, and here only
//! when none is idle.
//!
//! Used with NVRTC 12.8 on, whenever the device has compile workers.

use std::collections::HashSet;
use std::ffi::CString;
use std::sync::{Mutex, MutexGuard};

use super::nvrtc_job::{compile_program, Failure, NvrtcJob};
use super::worker::Output;
use crate::codegen::cuda::PRELUDE_END;
use crate::codegen::math::MathMode;
use crate::codegen::spec::KernelSpec;
use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
use crate::codegen::Dialect;
use crate::dtype::DType;

/// NVRTC's options for a compile through its precompiled prelude, after
/// the compile's own: automatic headers; quiet about using or creating
/// them (only their failures are worth a line of the log a user may
/// read) and about the headers of other preludes that do not match
/// (warning 630, once a process wrote two).
const OPTIONS: [&str; 3] = ["-pch", "--pch-messages=false", "--diag-suppress=630"];

/// The option that, in place of the second of [`OPTIONS`], makes the
/// compile that writes a header say that it did.
const SAY_CREATED: &str = "--pch-messages=true";

/// Headers one process writes at most: each takes room in NVRTC's heap
/// for precompiled headers, and a process that meets many preludes gains
/// little from the rarer ones.
const MAX_HEADERS: usize = 16;

/// Whether NVRTC `version` has automatic precompiled headers (12.8 on):
/// an older one refuses the options, which would fail every compile
/// given them.
pub(super) fn supported(version: (i32, i32)) -> bool {
    version >= (12, 8)
}

/// A compile's option `words` with those of the precompiled prelude: a
/// compile given them goes through [`run`].
pub(super) fn words(words: &[String]) -> Vec<String> {
    let extra = OPTIONS.iter().map(|o| o.to_string());
    words.iter().cloned().chain(extra).collect()
}

/// Whether a compile's `options` ask for the precompiled prelude.
pub(super) fn asked(options: &[CString]) -> bool {
    options
        .iter()
        .any(|o| o.as_bytes() == OPTIONS[0].as_bytes())
}

/// `options` without those of the precompiled prelude.
fn plain(options: &[CString]) -> Vec<CString> {
    let ours = |o: &CString| OPTIONS.iter().any(|w| o.as_bytes() == w.as_bytes());
    options.iter().filter(|o| !ours(o)).cloned().collect()
}

/// How one compile goes through its precompiled prelude.
pub(super) struct PchInput {
    /// The source with its prelude replaced by an `#include` of it.
    pub(super) source: String,
    /// The prelude: the header the include names, and its text.
    pub(super) header: (String, Vec<u8>),
}

/// How to compile `source` through its precompiled prelude; `None` when
/// it has no prelude marker (kernelkit's own kernels).
pub(super) fn input(source: &str) -> Option<PchInput> {
    let end = source.find(PRELUDE_END)?;
    let (prelude, rest) = source.split_at(end);
    // Named by its text: one name, one text, in every compile of a process.
    let key = xxhash_rust::xxh3::xxh3_128(prelude.as_bytes());
    let name = format!("kernelkit_prelude_{key:032x}.h");
    // The math mode is read from a source's first line (`run_nvrtc`).
    let marker = MathMode::of_source(source).marker();
    let include = format!("#include \"{name}\"\n#pragma nv_hdrstop\n");
    let used = marker.matches('\n').count() + include.matches('\n').count();
    let blank = prelude.matches('\n').count().saturating_sub(used);
    let mut text = String::with_capacity(marker.len() + include.len() + blank + rest.len());
    text.push_str(marker);
    text.push_str(&include);
    text.extend(std::iter::repeat_n('\n', blank));
    text.push_str(rest);
    Some(PchInput {
        source: text,
        header: (name, prelude.as_bytes().to_vec()),
    })
}

/// A header to write: a compile of a source through it.
struct Pending {
    program: String,
    input: PchInput,
    headers: Vec<(String, Vec<u8>)>,
    options: Vec<CString>,
    output: Output,
}

/// This process's headers, by prelude header name.
#[derive(Default)]
struct Headers {
    /// Written: compiles of these preludes go through them.
    written: HashSet<String>,
    /// Queued or tried (written or not): never queued again.
    seen: HashSet<String>,
    pending: Vec<Pending>,
}

static HEADERS: Mutex<Option<Headers>> = Mutex::new(None);

fn headers() -> MutexGuard<'static, Option<Headers>> {
    HEADERS.lock().unwrap_or_else(|p| p.into_inner())
}

fn with_headers<T>(f: impl FnOnce(&mut Headers) -> T) -> T {
    f(headers().get_or_insert_with(Headers::default))
}

/// Compiles `job` (whose options ask for the precompiled prelude, see
/// [`asked`]) through its prelude's header if this process wrote it, else
/// from the full source, queueing the header (see the module
/// documentation).
pub(super) fn run(job: NvrtcJob<'_>) -> Result<Vec<u8>, Failure> {
    let plain = plain(job.options);
    let full = || {
        let options = &plain;
        compile_program(NvrtcJob { options, ..job }).map(|(a, _)| a)
    };
    let Some(input) = input(job.source) else {
        return full();
    };
    if with_headers(|h| h.written.contains(&input.header.0)) {
        tracing::debug!(
            "`{}` through the precompiled prelude `{}`",
            job.program,
            input.header.0
        );
        let mut with = job.headers.to_vec();
        with.push(input.header.clone());
        let through = NvrtcJob {
            source: &input.source,
            headers: &with,
            ..job
        };
        match compile_program(through) {
            Err(Failure::Rejected(log)) if failed_for_the_header(&log) => {
                tracing::debug!("compiling again without the precompiled prelude: {log}");
                return full();
            }
            outcome => return outcome.map(|(a, _)| a),
        }
    }
    let artifact = full()?;
    with_headers(|h| {
        if h.seen.len() < MAX_HEADERS && h.seen.insert(input.header.0.clone()) {
            let options = job
                .options
                .iter()
                .map(|o| match o.as_bytes() == OPTIONS[1].as_bytes() {
                    true => CString::new(SAY_CREATED).expect("no NUL"),
                    false => o.clone(),
                })
                .collect();
            h.pending.push(Pending {
                program: job.program.to_string(),
                input,
                headers: job.headers.to_vec(),
                options,
                output: job.output,
            });
        }
    });
    Ok(artifact)
}

/// Whether this process wrote the header of `source`'s prelude.
#[cfg(test)]
pub(super) fn is_written(source: &str) -> bool {
    input(source).is_some_and(|i| with_headers(|h| h.written.contains(&i.header.0)))
}

/// Writes the queued headers, if any (each by a compile through it, whose
/// artifact is dropped). Callers that find another writing wait for it,
/// so that a header queued before the call is written, or failed, when it
/// returns.
pub(super) fn write_pending() {
    static WRITING: Mutex<()> = Mutex::new(());
    let _one = WRITING.lock().unwrap_or_else(|p| p.into_inner());
    while let Some(p) = with_headers(|h| h.pending.pop()) {
        let started = std::time::Instant::now();
        let mut with = p.headers;
        with.push(p.input.header.clone());
        let name = p.input.header.0;
        let job = NvrtcJob {
            program: &p.program,
            source: &p.input.source,
            headers: &with,
            options: &p.options,
            output: p.output,
        };
        match compile_program(job) {
            Ok((_, log)) if log.contains("creating precompiled header file") => {
                with_headers(|h| h.written.insert(name.clone()));
                tracing::debug!(
                    "precompiled prelude `{name}` written in {:.1} ms",
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
            Ok((_, log)) => tracing::debug!("NVRTC wrote no header for `{name}`: {log}"),
            Err(e) => tracing::debug!("NVRTC wrote no header for `{name}`: {e}"),
        }
    }
}

/// The commonest kernel's generated source (a Metal body over `float`
/// arrays that uses `thread_position_in_grid`): what a compile worker
/// started ahead compiles first, so that the header of its prelude is
/// written before a real job comes.
pub(super) fn warm_up() -> Option<String> {
    let spec = KernelSpec::new(
        "kernelkit_warm_up".into(),
        vec!["inp".into()],
        vec!["out".into()],
        "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 2.0f + 1.0f;".into(),
        String::new(),
        true,
        false,
    )
    .ok()?;
    let inputs = [InputDesc {
        dtype: DType::F32,
        mode: PassMode::Device,
    }];
    let generated = crate::codegen::generate(
        Dialect::Cuda,
        &spec,
        &VariantDesc {
            inputs: &inputs,
            outputs: &[DType::F32],
            template: &[],
        },
        0,
    );
    Some(generated.source.to_string())
}

/// Whether NVRTC's `log` says it could not use a precompiled header
/// (every such message names the precompiled header; with
/// `--pch-messages=false` nothing else does). A compile that failed so is
/// compiled again from the full source.
pub(super) fn failed_for_the_header(log: &str) -> bool {
    log.lines().any(|line| {
        line.contains("precompiled header")
            && !line.contains("using precompiled header file")
            && !line.contains("creating precompiled header file")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(prelude: &str, rest: &str) -> String {
        format!("{prelude}{PRELUDE_END}{rest}")
    }

    #[test]
    fn the_prelude_becomes_a_header_and_lines_keep_their_numbers() {
        let text = source("// one\n// two\n// three\n", "int body;\n");
        let input = input(&text).unwrap();
        assert_eq!(input.header.1, b"// one\n// two\n// three\n");
        // The marker line is line 4 of the full source, and stays line 4.
        assert_eq!(
            input.source,
            format!(
                "#include \"{}\"\n#pragma nv_hdrstop\n\n{PRELUDE_END}int body;\n",
                input.header.0
            )
        );
        // Another prelude, another name; the same prelude, the same name.
        let other = super::input(&source("// one\n// two\n// 3\n", "int body;\n")).unwrap();
        assert_ne!(other.header.0, input.header.0);
        let again = super::input(&source("// one\n// two\n// three\n", "int x;\n")).unwrap();
        assert_eq!(again.header.0, input.header.0);
    }

    #[test]
    fn the_math_mode_marker_stays_the_first_line() {
        let marker = MathMode::Fast.marker();
        assert!(!marker.is_empty());
        let text = source(&format!("{marker}// one\n// two\n"), "int body;\n");
        let input = input(&text).unwrap();
        assert_eq!(MathMode::of_source(&input.source), MathMode::Fast);
        let line_of_rest = |s: &str| s[..s.find(PRELUDE_END).unwrap()].matches('\n').count();
        assert_eq!(line_of_rest(&input.source), line_of_rest(&text));
    }

    #[test]
    fn the_warm_up_has_a_prelude() {
        let warm = warm_up().expect("the warm-up kernel generates");
        assert!(warm.contains("kernelkit_warm_up"));
        assert!(input(&warm).unwrap().source.contains("#pragma nv_hdrstop"));
    }

    #[test]
    fn only_nvrtc_12_8_on_has_them() {
        assert!(!supported((12, 6)) && !supported((11, 8)));
        assert!(supported((12, 8)) && supported((12, 9)) && supported((13, 0)));
    }

    #[test]
    fn the_options_ask_and_come_off() {
        let c = |w: &[String]| -> Vec<CString> {
            w.iter()
                .map(|w| CString::new(w.as_str()).unwrap())
                .collect()
        };
        let own = vec!["--gpu-architecture=sm_90a".to_string(), "-DX=1".to_string()];
        let with = c(&words(&own));
        assert!(asked(&with));
        assert!(!asked(&c(&own)));
        assert_eq!(plain(&with), c(&own));
    }

    #[test]
    fn a_source_without_the_marker_compiles_as_it_is() {
        assert!(input("extern \"C\" __global__ void k() {}\n").is_none());
    }

    /// NVRTC's own words (13.0), quiet and not.
    #[test]
    fn only_messages_about_a_failure_count() {
        for failed in [
            "Warning #20282-D: incompatible precompiled header (PCH) heap allocation address",
            "Warning #626-D: precompiled header file \"/p.pch\" is either invalid or not generated by this version of the compiler",
            "Warning #629-D: the command line options do not match those used when precompiled header file \"/p.pch\" was created",
            "Catastrophic error: cannot open precompiled header file \"/p.pch\"",
        ] {
            assert!(failed_for_the_header(&format!("{failed}\n\nRemark: ...\n")), "{failed}");
        }
        for fine in [
            "",
            "\"kernel.cu\": using precompiled header file \"/p.pch\"\n",
            "\"kernel.cu\": creating precompiled header file \"/p.pch\"\n",
            "kernel.cu(28): error: identifier \"inpx\" is undefined\n",
        ] {
            assert!(!failed_for_the_header(fine), "{fine}");
        }
    }
}
