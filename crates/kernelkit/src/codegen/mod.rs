//! Source generation: pure functions from (kernel spec, variant) to
//! (function name, source), one per dialect.
//!
//! Nothing here touches a device or a cache, so every dialect can be
//! generated and inspected on any machine (`Kernel::generate`, `kernelkit
//! source`).
//!
//! It holds its own input vocabulary: the validated kernel definition
//! ([`spec::KernelSpec`]), template arguments ([`template`]) and the
//! variant description ([`variant`]: per input dtype and pass mode, per
//! output dtype). **What this floor may import:** `dtype` and `error` only.
//!
//! The dialects: `metal` (byte-identical to MLX's `metal_kernel`), `cuda`
//! (CUDA C++ for NVRTC) and `cpu` (C++ for the CPU backend), with the
//! Metal compatibility layer of the last two in `prelude`. What they share:
//! `lex` (a small C++ tokenizer), `scan` (what a body uses, found once per
//! kernel), `lower` (Metal bodies and headers to C++), `attributes` (the
//! Metal position attributes, in MLX's order), [`math`] (the math mode)
//! and `parts` (a generated source as what all variants share and what
//! one adds).

pub mod attributes;
pub mod bounds;
pub(crate) mod cpu;
pub(crate) mod cuda;
pub(crate) mod lex;
pub(crate) mod lower;
pub mod math;
pub(crate) mod metal;
pub(crate) mod parts;
pub(crate) mod prelude;
pub(crate) mod scan;
pub mod spec;
pub mod template;
pub mod variant;

use std::fmt::Write;

use crate::codegen::spec::KernelSpec;
use crate::codegen::template::TemplateArg;
use crate::codegen::variant::{PassMode, VariantDesc};

/// The language a variant's source is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dialect {
    /// Metal Shading Language, byte-identical to MLX 0.32.4's output.
    Metal = 0,
    /// CUDA C++ for NVRTC.
    Cuda = 1,
    /// C++20 for the system compiler (the CPU backend).
    Cpu = 2,
}

impl Dialect {
    /// `metal`, `cuda` or `cpu`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Metal => "metal",
            Dialect::Cuda => "cuda",
            Dialect::Cpu => "cpu",
        }
    }

    /// Parses `metal`, `cuda` or `cpu`.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "metal" => Some(Dialect::Metal),
            "cuda" => Some(Dialect::Cuda),
            "cpu" => Some(Dialect::Cpu),
            _ => None,
        }
    }
}

/// The language a kernel's body (and header) is written in: what MLX calls
/// a `metal_kernel` or a `cuda_kernel`.
///
/// A Metal body runs on every backend: the CPU and CUDA preludes carry a
/// Metal compatibility layer (vector types, Metal's standard library,
/// SIMD-group functions, atomics). A CUDA C++ body runs on CUDA devices
/// only, with the plain CUDA prelude, so its own helpers (an
/// `operator+(float4, float4)`, a `dot`) never collide with the layer's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BodyLanguage {
    /// The Metal Shading Language (MLX's `metal_kernel`; the default).
    #[default]
    Metal,
    /// CUDA C++ (MLX's `cuda_kernel`).
    Cuda,
}

impl BodyLanguage {
    /// `metal` or `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            BodyLanguage::Metal => "metal",
            BodyLanguage::Cuda => "cuda",
        }
    }

    /// Parses `metal` or `cuda`.
    pub fn from_name(name: &str) -> Option<BodyLanguage> {
        match name {
            "metal" => Some(BodyLanguage::Metal),
            "cuda" => Some(BodyLanguage::Cuda),
            _ => None,
        }
    }
}

/// The whole prelude a generated source of `dialect` for a body in
/// `language` draws from (empty for Metal, whose sources are MLX's, with
/// none): what tests that compare generated sources set apart. A CUDA
/// source of a Metal body holds only the sections of it that the body
/// needs ([`prelude_sections`]).
pub fn prelude(dialect: Dialect, language: BodyLanguage) -> &'static str {
    match (dialect, language) {
        (Dialect::Metal, _) => "",
        (Dialect::Cpu, _) => prelude::CPU,
        (Dialect::Cuda, BodyLanguage::Metal) => prelude::CUDA_METAL,
        (Dialect::Cuda, BodyLanguage::Cuda) => prelude::CUDA_PLAIN,
    }
}

/// The sections of [`prelude`], as (name, text) in the order a source
/// holds them. A CUDA source holds those its variant needs, each text
/// whole and starting with its line `// kernelkit prelude: NAME`; a CPU
/// source holds its one section (a fixed text, precompiled once); Metal
/// has none.
pub fn prelude_sections(
    dialect: Dialect,
    language: BodyLanguage,
) -> Vec<(&'static str, &'static str)> {
    let table = match (dialect, language) {
        (Dialect::Metal, _) => return Vec::new(),
        (Dialect::Cpu, _) => return vec![("cpu", prelude::CPU)],
        (Dialect::Cuda, BodyLanguage::Metal) => prelude::CUDA_METAL_SECTIONS,
        (Dialect::Cuda, BodyLanguage::Cuda) => prelude::CUDA_PLAIN_SECTIONS,
    };
    table.iter().map(|s| (s.name, s.text)).collect()
}

/// A generated function name and source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The function (host) name.
    pub name: String,
    /// The complete source.
    pub source: String,
}

/// Generates the source of one variant. `variant_id` is a hash of the spec
/// and the variant key; dialects whose readable name could repeat for
/// different sources (CPU, CUDA) append it so the name differs whenever the
/// source does.
///
/// The whole text at once: the shared part ([`shared`]) and the variant's
/// own ([`variant`]) joined. The kernel's variant cache keeps them apart.
pub(crate) fn generate(
    dialect: Dialect,
    spec: &KernelSpec,
    desc: &VariantDesc<'_>,
    variant_id: u64,
) -> Generated {
    let shared = shared(dialect, spec, small_floats(spec, desc));
    let own = variant(dialect, spec, &shared, desc, variant_id);
    Generated {
        source: shared.join(&own.before, &own.after),
        name: own.name,
    }
}

/// What every variant of `spec` in `dialect` and class `small` (see
/// [`small_floats`]; Metal has one class) shares: see [`parts`].
pub(crate) fn shared(dialect: Dialect, spec: &KernelSpec, small: bool) -> parts::SharedText {
    match dialect {
        Dialect::Metal => metal::shared(spec),
        Dialect::Cuda => cuda::shared(spec, small),
        Dialect::Cpu => cpu::shared(spec, small),
    }
}

/// What the variant `desc` adds to `shared` (its kernel's part for the
/// variant's class): its name and the text around the body.
pub(crate) fn variant(
    dialect: Dialect,
    spec: &KernelSpec,
    shared: &parts::SharedText,
    desc: &VariantDesc<'_>,
    variant_id: u64,
) -> parts::VariantText {
    match dialect {
        Dialect::Metal => metal::variant(spec, desc),
        Dialect::Cuda => cuda::variant(spec, shared, desc, variant_id),
        Dialect::Cpu => cpu::variant(spec, shared, desc, variant_id),
    }
}

/// The name shared by the CPU and CUDA dialects:
/// `custom_kernel_{name}_{in dtypes}_{out dtypes}_{variant id}`, with `s`
/// after a 0-d input's dtype and `c` after a small one, as in MLX.
pub(crate) fn portable_name(spec: &KernelSpec, desc: &VariantDesc<'_>, variant_id: u64) -> String {
    let mut name = format!("custom_kernel_{}", spec.name);
    for i in desc.inputs {
        name.push('_');
        name.push_str(i.dtype.name());
        match i.mode {
            PassMode::Scalar => name.push('s'),
            PassMode::Constant => name.push('c'),
            PassMode::Device => {}
        }
    }
    for o in desc.outputs {
        name.push('_');
        name.push_str(o.name());
    }
    let _ = write!(name, "_{variant_id:016x}");
    name
}

/// Whether 16-bit floats are about in a variant: among its dtypes, or named
/// in the body or header (CUDA then needs `cuda_fp16.h` / `cuda_bf16.h`,
/// which NVRTC parses in every compile that includes them; the lowering
/// gives conditionals Metal's types).
pub(crate) fn small_floats(spec: &KernelSpec, desc: &VariantDesc<'_>) -> bool {
    small_float_dtypes(desc) || small_float_text(spec)
}

/// [`small_floats`]' part that depends on the variant: its dtypes.
pub(crate) fn small_float_dtypes(desc: &VariantDesc<'_>) -> bool {
    let half =
        |d: crate::dtype::DType| matches!(d, crate::dtype::DType::F16 | crate::dtype::DType::BF16);
    desc.inputs.iter().any(|i| half(i.dtype))
        || desc.outputs.iter().any(|d| half(*d))
        || desc
            .template
            .iter()
            .any(|t| matches!(t.value, TemplateArg::DType(d) if half(d)))
}

/// [`small_floats`]' part that depends on the kernel only: a search of its
/// body and header (of a large header, worth doing once per kernel).
pub(crate) fn small_float_text(spec: &KernelSpec) -> bool {
    [&spec.source, &spec.header].iter().any(|text| {
        ["half", "bfloat", "float16"]
            .iter()
            .any(|w| text.contains(w))
    })
}

/// `template <typename T, int N, bool B>` for C++ dialects (empty string
/// when there are no template arguments).
pub(crate) fn cxx_template_decl(desc: &VariantDesc<'_>) -> String {
    if desc.template.is_empty() {
        return String::new();
    }
    let params: Vec<String> = desc
        .template
        .iter()
        .map(|t| match t.value {
            TemplateArg::Int(_) => format!("int {}", t.name),
            TemplateArg::Bool(_) => format!("bool {}", t.name),
            TemplateArg::DType(_) => format!("typename {}", t.name),
        })
        .collect();
    format!("template <{}>\n", params.join(", "))
}

/// `<float16_t, 4, true>` for C++ dialects (empty without template arguments).
pub(crate) fn cxx_template_args(desc: &VariantDesc<'_>) -> String {
    if desc.template.is_empty() {
        return String::new();
    }
    let args: Vec<String> = desc
        .template
        .iter()
        .map(|t| match t.value {
            TemplateArg::Int(v) => v.to_string(),
            TemplateArg::Bool(b) => b.to_string(),
            TemplateArg::DType(d) => d.c_name().to_string(),
        })
        .collect();
    format!("<{}>", args.join(", "))
}

/// The user's header as the CPU and CUDA dialects paste it: an `#include`
/// of one of Metal's standard headers (`<metal_stdlib>`, `<metal_simdgroup>`,
/// any `metal_*`) or of MLX's Metal kernel headers
/// (`mlx/backend/metal/kernels/...`) becomes a comment, since the kernelkit
/// prelude provides what portable bodies use of them (line count
/// unchanged, so compiler line numbers stay right).
pub(crate) fn portable_header(header: &str) -> std::borrow::Cow<'_, str> {
    let is_metal_include = |line: &str| {
        let t = line.trim_start();
        t.strip_prefix('#')
            .map(|rest| rest.trim_start())
            .and_then(|rest| rest.strip_prefix("include"))
            .map(|rest| rest.trim())
            .is_some_and(|target| {
                let inner = target.trim_matches(|c| matches!(c, '<' | '>' | '"'));
                let quoted = (target.starts_with('<') && target.ends_with('>'))
                    || (target.starts_with('"') && target.ends_with('"'));
                quoted
                    && (inner.starts_with("metal_") || inner.contains("mlx/backend/metal/kernels/"))
            })
    };
    if !header.contains("metal") || !header.lines().any(is_metal_include) {
        return std::borrow::Cow::Borrowed(header);
    }
    let mut out = String::with_capacity(header.len() + 64);
    for piece in header.split_inclusive('\n') {
        let line = piece.strip_suffix('\n').unwrap_or(piece);
        if is_metal_include(line) {
            out.push_str("// (provided by the kernelkit prelude) ");
        }
        out.push_str(piece);
    }
    std::borrow::Cow::Owned(out)
}

/// The name a body's lines go by in compilers' messages, debuggers and
/// compute-sanitizer: `#line` directives around the body in the CPU and
/// CUDA sources ([`marked_body`]) give its lines their own numbers in a
/// file of this name.
pub(crate) fn body_file(kernel: &str) -> String {
    format!("{kernel}.body")
}

/// The body as a generated CPU or CUDA source holds it: after a `#line`
/// directive that numbers its first line 1, in [`body_file`].
pub(crate) fn marked_body(kernel: &str, body: String) -> String {
    let mut out = String::with_capacity(body.len() + kernel.len() + 20);
    let _ = writeln!(out, "#line 1 \"{}\"", body_file(kernel));
    out.push_str(&body);
    out
}

/// The user's body without the `#line` directives a generator placed
/// around it (the first line, and a last line, when they are directives).
pub(crate) fn strip_line_marks(body: &str) -> &str {
    let mut body = body;
    if body.starts_with("#line ") {
        body = body.split_once('\n').map_or("", |(_, rest)| rest);
    }
    if let Some(at) = body.rfind("\n#line ") {
        if !body[at + 1..].contains('\n') {
            body = &body[..at];
        }
    }
    body
}

/// The number of lines before the body in a generated source: compilers
/// report lines of the whole file, users think in lines of their body.
pub(crate) fn body_first_line(source: &str, body: &str) -> Option<usize> {
    if body.is_empty() {
        return None;
    }
    let at = source.rfind(body)?;
    Some(source[..at].matches('\n').count() + 1)
}

/// Rewrites compiler log lines that point into the body so that they read
/// `body line N` too: references to the body's own file (`NAME.body:N:`,
/// `NAME.body(N)`, from the `#line` directives) and `file:LINE:`
/// references to generated lines inside the body (sources without them).
pub(crate) fn map_log_lines(log: &str, source: &str, body: &str, file_marker: &str) -> String {
    let first = body_first_line(source, body);
    let body_lines = body.matches('\n').count() + 1;
    let mut out = String::with_capacity(log.len() + 64);
    for line in log.lines() {
        out.push_str(line);
        if let Some(n) = body_file_line(line) {
            let _ = write!(out, "    [body line {n}]");
        } else if let (Some(pos), Some(first)) = (line.find(file_marker), first) {
            let rest = &line[pos + file_marker.len()..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse::<usize>() {
                if n >= first && n < first + body_lines {
                    let _ = write!(out, "    [body line {}]", n - first + 1);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The body line a log line points to through the body's own file name
/// (`NAME.body:N` from C++ compilers, `NAME.body(N)` from NVRTC).
fn body_file_line(line: &str) -> Option<usize> {
    let at = line.find(".body")?;
    let rest = &line[at + ".body".len()..];
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('('))?;
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metal_includes_become_comments() {
        let h = "#include <metal_stdlib>\n  #  include \"metal_math\"\nusing namespace metal;\n#include <cmath>\n\
                 #include <metal_simdgroup>\n#include \"mlx/backend/metal/kernels/utils.h\"";
        let p = portable_header(h);
        assert_eq!(
            p,
            "// (provided by the kernelkit prelude) #include <metal_stdlib>\n\
             // (provided by the kernelkit prelude)   #  include \"metal_math\"\n\
             using namespace metal;\n#include <cmath>\n\
             // (provided by the kernelkit prelude) #include <metal_simdgroup>\n\
             // (provided by the kernelkit prelude) #include \"mlx/backend/metal/kernels/utils.h\""
        );
        assert!(matches!(
            portable_header("int x;"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    /// In the CPU source the body's lines go by the body's own file and
    /// numbers, and the generated lines after it by their real numbers
    /// again (with templates, which lengthen the text before the body); a
    /// CUDA source gets the same directives only when compiled with line
    /// information (`cuda::with_line_marks`); Metal's (MLX's, byte for
    /// byte) never.
    #[test]
    fn line_directives_number_the_body_and_then_the_generated_lines() {
        use crate::codegen::template::TemplateParam;
        use crate::codegen::variant::InputDesc;
        let body = "uint i = thread_position_in_grid.x;\nfloat v = inp[i];\nout[i] = v + OFFSET;";
        let spec = KernelSpec::scanned(
            "lined".into(),
            vec!["inp".into()],
            vec!["out".into()],
            body.into(),
            "// a header\n".into(),
            true,
            false,
        );
        let inputs = [InputDesc {
            dtype: crate::DType::F32,
            mode: PassMode::Device,
        }];
        let template = [TemplateParam {
            name: "OFFSET".into(),
            value: TemplateArg::Int(3),
        }];
        for dialect in [Dialect::Cpu, Dialect::Cuda] {
            for template in [&template[..], &[]] {
                let desc = VariantDesc {
                    inputs: &inputs,
                    outputs: &[crate::DType::F32],
                    template,
                };
                let generated = generate(dialect, &spec, &desc, 7).source;
                let (source, file) = match dialect {
                    Dialect::Cpu => (generated.clone(), cpu::FILE_NAME),
                    _ => {
                        assert!(!generated.contains("#line"));
                        (
                            cuda::with_line_marks(&generated, "lined").unwrap(),
                            cuda::FILE_NAME,
                        )
                    }
                };
                let lines: Vec<&str> = source.lines().collect();
                let opening = lines
                    .iter()
                    .position(|l| *l == "#line 1 \"lined.body\"")
                    .expect("the body's directive");
                assert_eq!(lines[opening + 1], "uint i = thread_position_in_grid.x;");
                assert_eq!(lines[opening + 3], "out[i] = v + OFFSET;");
                let (at, restore) = lines
                    .iter()
                    .enumerate()
                    .skip(opening + 1)
                    .find(|(_, l)| l.starts_with("#line "))
                    .expect("the directive after the body");
                let number: usize = restore
                    .strip_prefix("#line ")
                    .and_then(|r| r.split(' ').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                assert!(restore.ends_with(&format!(" \"{file}\"")), "{restore}");
                match dialect {
                    // The CPU source is compiled as generated: the next line
                    // is that line of the file.
                    Dialect::Cpu => assert_eq!(number, at + 2, "{restore}"),
                    // The CUDA lines keep their numbers in the generated
                    // source (the one users see and logs are mapped on).
                    _ => assert_eq!(
                        generated.lines().nth(number - 1),
                        lines.get(at + 1).copied(),
                        "{restore}"
                    ),
                }
                let found = match dialect {
                    Dialect::Cpu => cpu::body_of(&source),
                    _ => cuda::body_of(&generated),
                };
                assert_eq!(found, body, "{dialect:?}");
            }
        }
        let desc = VariantDesc {
            inputs: &inputs,
            outputs: &[crate::DType::F32],
            template: &template,
        };
        assert!(!generate(Dialect::Metal, &spec, &desc, 7)
            .source
            .contains("#line"));
    }

    #[test]
    fn log_lines_name_the_body_file_lines() {
        let log = "lined.body:3:9: error: 'x' was not declared\nlined.body(2): error: bad\n\
                   kernel.cpp:400:1: note: here";
        let mapped = map_log_lines(log, "", "", "kernel.cpp:");
        let lines: Vec<&str> = mapped.lines().collect();
        assert!(lines[0].ends_with("[body line 3]"), "{mapped}");
        assert!(lines[1].ends_with("[body line 2]"), "{mapped}");
        assert!(!lines[2].contains("body line"), "{mapped}");
    }

    #[test]
    fn log_lines_map_into_the_body() {
        let source = "a\nb\nBODY1\nBODY2\nc\n";
        let log = "k.cpp:4:3: error: oops\nk.cpp:5:1: note";
        let mapped = map_log_lines(log, source, "BODY1\nBODY2", "k.cpp:");
        assert!(mapped.contains("error: oops    [body line 2]"), "{mapped}");
        assert!(!mapped.lines().nth(1).unwrap().contains("body line"));
    }
}
