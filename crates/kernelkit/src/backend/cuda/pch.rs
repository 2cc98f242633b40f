//! NVRTC's precompiled headers for the generated prelude.
//!
//! Every generated source starts with kernelkit's prelude (the includes a
//! variant needs, then the prelude sections: for a Metal body the parts of
//! the Metal compatibility layer it uses), which ends at [`PRELUDE_END`].
//! NVRTC parses all of it in every compile; on the H200 that is about a
//! quarter of a trivial kernel's cold compile, and more of what 16
//! compiles at once contend for.
//!
//! So a compile on a worker gives NVRTC the prelude as an in-memory header and the
//! source as an `#include` of it and `#pragma nv_hdrstop`, blank lines up
//! to where the prelude ended, and the rest of the source unchanged (so
//! NVRTC's messages keep the full source's line numbers), with NVRTC's
//! automatic precompiled headers on (`-pch`): the worker's first compile
//! of a prelude writes its header (to a directory of NVRTC's own, removed
//! when the process ends), and later compiles of any kernel with that
//! prelude load it instead of parsing the text.
//!
//! - The precompiled part ends at `nv_hdrstop`: without it NVRTC's header
//!   would also hold the user's own includes that follow (their text as it
//!   was then, whatever the files say now).
//! - Line numbers are kept by blank lines, not `#line`, which stops NVRTC
//!   from writing a header.
//! - Headers are per process, not shared in a directory: NVRTC maps a
//!   header at the address it was written at, and another process's
//!   address space seldom has it free (measured on the H200: a header
//!   written by one process was refused by the next, "incompatible
//!   precompiled header (PCH) heap allocation address"). A compile worker
//!   therefore writes its own on its first compile of a prelude.
//! - A compile that fails with a message about the precompiled header is
//!   compiled again from the full source.
//! - Not with `--pre-include` options: NVRTC reads those files before the
//!   prelude, so a header would keep their text as it was when written.
//!
//! Compiles in the calling process do not: writing a header costs the compile
//! that writes it about 150 ms on the H200 (a process's first cold call
//! took 244 ms against 92 ms), which a worker started ahead pays in its
//! warm-up, off every call's path ([`warm_up`]: the commonest prelude).
//!
//! Off unless [`crate::config::CudaConfig::nvrtc_pch`]
//! (`KERNELKIT_NVRTC_PCH=1`): the H200 measured it in another form
//! (headers in every process, this one's included), where 16 new kernels
//! at once took 73 ms against 87 ms without and a steady cold compile 48
//! ms against 64 ms; this form (workers only, warmed up) has not run on a
//! GPU yet.

use crate::codegen::cuda::PRELUDE_END;
use crate::codegen::math::MathMode;
use crate::codegen::spec::KernelSpec;
use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
use crate::codegen::Dialect;
use crate::dtype::DType;

/// NVRTC's options for a compile through its precompiled prelude, after
/// the compile's own: automatic headers, quiet about using or creating
/// them (only their failures are worth a line of the log a user may read).
const OPTIONS: [&str; 2] = ["-pch", "--pch-messages=false"];

/// A compile's option `words` with those of the precompiled prelude.
pub(super) fn words(words: &[String]) -> Vec<String> {
    let extra = OPTIONS.iter().map(|o| o.to_string());
    words.iter().cloned().chain(extra).collect()
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

/// The commonest kernel's source through its precompiled prelude (a Metal
/// body over `float` arrays that uses `thread_position_in_grid`): what a
/// compile worker started ahead compiles first, so that the header of
/// that prelude is written before a real job comes (writing one costs a
/// compile about 150 ms on the H200).
pub(super) fn warm_up() -> Option<PchInput> {
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
    input(&generated.source)
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
    fn the_warm_up_goes_through_a_prelude() {
        let warm = warm_up().expect("the warm-up kernel generates");
        assert!(warm.source.contains("#pragma nv_hdrstop"));
        assert!(warm.source.contains("kernelkit_warm_up"));
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
