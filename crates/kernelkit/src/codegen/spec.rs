//! The fixed part of a kernel: names, body, header, flags, and what the body
//! was found to use. Everything here is decided once, when the kernel is
//! built, so no call ever scans the body again.

use crate::codegen::attributes::{Attribute, ATTRIBUTES};
use crate::codegen::lex::CXX_KEYWORDS;
use crate::codegen::math::MathMode;
use crate::codegen::scan::scan;
use crate::codegen::BodyLanguage;
use crate::error::{shown, BuildError};

/// What the body uses of one input's layout, found by name (`inp_shape`,
/// `inp_strides`, `inp_ndim`) exactly as MLX finds it: a substring of the
/// body (never the header), comments and longer identifiers included.
///
/// It is found from the body alone, for every input. Whether the input gets
/// the parameters also depends on the call: as in MLX, a 0-d input
/// ([`PassMode::Scalar`](crate::PassMode::Scalar)) never does, whatever this
/// says, so the generators check the pass mode too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ShapeInfo {
    /// The body mentions `NAME_shape`.
    pub shape: bool,
    /// The body mentions `NAME_strides`.
    pub strides: bool,
    /// The body mentions `NAME_ndim`.
    pub ndim: bool,
}

impl ShapeInfo {
    /// True if any of the three is used.
    pub fn any(&self) -> bool {
        self.shape || self.strides || self.ndim
    }
}

/// A validated kernel definition. Immutable and shared by every clone of a
/// [`Kernel`](crate::Kernel) and by every launch prepared from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSpec {
    pub(crate) name: String,
    pub(crate) input_names: Vec<String>,
    pub(crate) output_names: Vec<String>,
    pub(crate) source: String,
    pub(crate) header: String,
    pub(crate) ensure_row_contiguous: bool,
    pub(crate) atomic_outputs: bool,
    /// Inline (not a separate heap block): every call reads it.
    pub(crate) shape_infos: smallvec::SmallVec<[ShapeInfo; 16]>,
    /// Some input's shape, strides or ndim reach the body: launches pass
    /// more than pointers and the grid.
    pub(crate) any_layout: bool,
    /// Position attributes the body uses, in [`ATTRIBUTES`] order.
    pub(crate) attributes: Vec<&'static Attribute>,
    /// The language of the body (and header): Metal (MLX's `metal_kernel`,
    /// the default) or CUDA C++ (MLX's `cuda_kernel`).
    pub(crate) language: BodyLanguage,
    /// The body uses CUDA's own block or warp collectives: on CUDA it runs
    /// without the grid guard (see `codegen::cuda`). Found, as all of these,
    /// in the code of the body and header, never in comments.
    pub(crate) cuda_group_sync: bool,
    /// The first barrier, SIMD-group or quad function the body or header
    /// calls: the CPU runs the threads of each group as fibers then.
    pub(crate) group_function: Option<&'static str>,
    /// A Metal feature no portable backend has (word, what it is).
    pub(crate) unsupported: Option<(&'static str, &'static str)>,
    /// The first CUDA C++ word of the body or header (a Metal body may use
    /// CUDA C++ on CUDA devices, not on the CPU).
    pub(crate) cuda_word: Option<&'static str>,
    /// The body uses cooperative groups (CUDA only needs the heavy header then).
    pub(crate) uses_cooperative_groups: bool,
    /// The floating-point math mode it is compiled in (`codegen::math`).
    pub(crate) math_mode: MathMode,
    /// Bounds checks (`codegen::bounds`): the body sees checked views of
    /// its array arguments. Off, the source is what it always was.
    pub(crate) check_bounds: bool,
}

impl KernelSpec {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The input names, in call order.
    pub fn input_names(&self) -> &[String] {
        &self.input_names
    }
    /// The output names, in call order.
    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }
    /// The body.
    pub fn source(&self) -> &str {
        &self.source
    }
    /// The header placed before the generated function.
    pub fn header(&self) -> &str {
        &self.header
    }
    /// Whether strided inputs are copied to row-contiguous ones before a call.
    pub fn ensure_row_contiguous(&self) -> bool {
        self.ensure_row_contiguous
    }
    /// Whether outputs are declared atomic.
    pub fn atomic_outputs(&self) -> bool {
        self.atomic_outputs
    }
    /// Per input, which layout parameters the body uses.
    pub fn shape_infos(&self) -> &[ShapeInfo] {
        &self.shape_infos
    }
    /// The position attributes the body uses, in MLX's order.
    pub fn attributes(&self) -> impl Iterator<Item = &'static Attribute> + '_ {
        self.attributes.iter().copied()
    }
    /// The language the body is written in.
    pub fn language(&self) -> BodyLanguage {
        self.language
    }
    /// The floating-point math mode it is compiled in.
    pub fn math_mode(&self) -> MathMode {
        self.math_mode
    }
    /// Whether the body runs with bounds checks (see
    /// [`KernelBuilder::check_bounds`](crate::KernelBuilder::check_bounds)).
    pub fn check_bounds(&self) -> bool {
        self.check_bounds
    }

    /// Validates the names and scans the body. This is the only place a body
    /// is searched.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        name: String,
        input_names: Vec<String>,
        output_names: Vec<String>,
        source: String,
        header: String,
        ensure_row_contiguous: bool,
        atomic_outputs: bool,
    ) -> Result<KernelSpec, BuildError> {
        check_kernel_name(&name)?;
        for (field, text) in [("source", &source), ("header", &header)] {
            if let Some(offset) = text.find('\0') {
                return Err(BuildError::NulByte {
                    kernel: name.clone(),
                    field,
                    offset,
                });
            }
        }
        if output_names.is_empty() {
            return Err(BuildError::NoOutputs { kernel: name });
        }
        let mut seen: Vec<(&str, &'static str)> = Vec::new();
        for (role, names) in [("input", &input_names), ("output", &output_names)] {
            for n in names.iter() {
                check_identifier(&name, n, role)?;
                if let Some((_, taken_role)) = seen.iter().find(|(taken, _)| taken == n) {
                    return Err(BuildError::DuplicateName {
                        kernel: name.clone(),
                        role,
                        name: n.clone(),
                        other: format!("{taken_role} `{n}`"),
                    });
                }
                seen.push((n, role));
            }
        }
        // The generated layout parameters of every input share the namespace.
        for inp in &input_names {
            for suffix in ["_shape", "_strides", "_ndim"] {
                let generated = format!("{inp}{suffix}");
                if let Some((taken, role)) = seen.iter().find(|(taken, _)| *taken == generated) {
                    return Err(BuildError::DuplicateName {
                        kernel: name.clone(),
                        role,
                        name: taken.to_string(),
                        other: format!(
                            "the generated `{generated}` (the layout parameter of input `{inp}`)"
                        ),
                    });
                }
            }
        }
        for (role, names) in [("input", &input_names), ("output", &output_names)] {
            if let Some(n) = names
                .iter()
                .find(|n| ATTRIBUTES.iter().any(|a| a.name == *n))
            {
                return Err(BuildError::InvalidName {
                    kernel: name.clone(),
                    role,
                    name: shown(n),
                    reason: "it is a position attribute name",
                });
            }
        }
        Ok(KernelSpec::scanned(
            name,
            input_names,
            output_names,
            source,
            header,
            ensure_row_contiguous,
            atomic_outputs,
        ))
    }

    /// Scans the body (MLX's substring rules, RULES.md section 5) without
    /// validating any name: [`KernelSpec::new`] after its checks, and tests
    /// that feed the generators MLX's unvalidated quirks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scanned(
        name: String,
        input_names: Vec<String>,
        output_names: Vec<String>,
        source: String,
        header: String,
        ensure_row_contiguous: bool,
        atomic_outputs: bool,
    ) -> KernelSpec {
        let shape_infos = input_names
            .iter()
            .map(|n| ShapeInfo {
                shape: source.contains(&format!("{n}_shape")),
                strides: source.contains(&format!("{n}_strides")),
                ndim: source.contains(&format!("{n}_ndim")),
            })
            .collect::<smallvec::SmallVec<[ShapeInfo; 16]>>();
        let any_layout = shape_infos.iter().any(|i| i.shape || i.strides || i.ndim);
        let attributes = ATTRIBUTES
            .iter()
            .filter(|a| source.contains(a.name))
            .collect();
        // Code only: the word `threadgroup` in a comment is not a use. MLX's
        // CUDA prelude aliases the cooperative groups namespace as `cg`, so
        // bodies written for it say `cg::` without naming the header.
        let uses = scan(&[&source, &header]);
        KernelSpec {
            name,
            input_names,
            output_names,
            source,
            header,
            ensure_row_contiguous,
            atomic_outputs,
            shape_infos,
            any_layout,
            attributes,
            language: BodyLanguage::Metal,
            cuda_group_sync: uses.cuda_group_sync,
            group_function: uses.group_function,
            unsupported: uses.unsupported,
            cuda_word: uses.cuda_word,
            uses_cooperative_groups: uses.cooperative_groups,
            math_mode: MathMode::Safe,
            check_bounds: false,
        }
    }

    /// A display list of names, for count errors.
    pub(crate) fn list(names: &[String]) -> String {
        if names.is_empty() {
            "none".to_string()
        } else {
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// C, Metal and CUDA words a name may not be, besides C++'s keywords
/// ([`CXX_KEYWORDS`]), since names become identifiers in every dialect's
/// source.
const RESERVED: &[&str] = &[
    "constant",
    "device",
    "half",
    "kernel",
    "thread",
    "threadgroup",
    "uint",
    "main",
    "metal",
    "std",
    "uint3",
    "dim3",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    // Type names the generated sources declare or use (preludes, dtypes):
    // a parameter with one of these names would hide the type it names.
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "size_t",
    "float16_t",
    "bfloat16_t",
    "bfloat",
    "complex64_t",
    "atomic",
    "uint2",
    "int2",
    "int3",
    "memory_order",
];

/// The kernel's name only ever appears after a prefix (`custom_kernel_NAME`),
/// so it needs identifier characters but may be a reserved word or start
/// with a digit.
fn check_kernel_name(name: &str) -> Result<(), BuildError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Some("it may hold only ASCII letters, digits and `_`")
    } else if name.len() > 200 {
        Some("it is longer than 200 characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(BuildError::InvalidName {
            kernel: shown(name),
            role: "kernel",
            name: shown(name),
            reason,
        }),
        None => Ok(()),
    }
}

/// Checks that `name` can be pasted into generated source as an identifier.
pub(crate) fn check_identifier(
    kernel: &str,
    name: &str,
    role: &'static str,
) -> Result<(), BuildError> {
    let invalid = |reason| BuildError::InvalidName {
        kernel: kernel.escape_debug().to_string(),
        role,
        name: shown(name),
        reason,
    };
    let mut chars = name.chars();
    match chars.next() {
        None => return Err(invalid("it is empty")),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
            return Err(invalid(
                "it must start with an ASCII letter or `_` (a C identifier)",
            ))
        }
        _ => {}
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(invalid(
            "it may hold only ASCII letters, digits and `_` (a C identifier)",
        ));
    }
    if name.len() > 200 {
        return Err(invalid("it is longer than 200 characters"));
    }
    if name.starts_with("__") || name.starts_with("kk_") {
        return Err(invalid(
            "names starting with `__` or `kk_` are reserved for the compiler and kernelkit",
        ));
    }
    if CXX_KEYWORDS.contains(&name) || RESERVED.contains(&name) {
        return Err(invalid("it is a reserved word in C++, Metal or CUDA"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(inputs: &[&str], outputs: &[&str], body: &str) -> Result<KernelSpec, BuildError> {
        KernelSpec::new(
            "k".into(),
            inputs.iter().map(|s| s.to_string()).collect(),
            outputs.iter().map(|s| s.to_string()).collect(),
            body.into(),
            String::new(),
            true,
            false,
        )
    }

    #[test]
    fn scans_shape_use_and_attributes_once() {
        let s = spec(
            &["a", "b"],
            &["out"],
            "uint i = thread_position_in_grid.x; out[i] = a[i] * a_shape[0] + b_ndim;",
        )
        .unwrap();
        assert_eq!(
            s.shape_infos.as_slice(),
            [
                ShapeInfo {
                    shape: true,
                    strides: false,
                    ndim: false
                },
                ShapeInfo {
                    shape: false,
                    strides: false,
                    ndim: true
                }
            ]
        );
        let names: Vec<_> = s.attributes().map(|a| a.name).collect();
        assert_eq!(names, vec!["thread_position_in_grid"]);
        assert!(s.group_function.is_none());
    }

    #[test]
    fn rejects_bad_names() {
        assert!(matches!(
            spec(&["1a"], &["o"], ""),
            Err(BuildError::InvalidName { .. })
        ));
        assert!(matches!(
            spec(&["a b"], &["o"], ""),
            Err(BuildError::InvalidName { .. })
        ));
        assert!(matches!(
            spec(&["float"], &["o"], ""),
            Err(BuildError::InvalidName { .. })
        ));
        assert!(matches!(
            spec(&["a"], &["a"], ""),
            Err(BuildError::DuplicateName { .. })
        ));
        assert!(matches!(
            spec(&["inp", "inp_shape"], &["o"], ""),
            Err(BuildError::DuplicateName { .. })
        ));
        assert!(matches!(
            spec(&["a"], &[], ""),
            Err(BuildError::NoOutputs { .. })
        ));
        assert!(matches!(
            spec(&["a"], &["o"], "x\0"),
            Err(BuildError::NulByte { .. })
        ));
        assert!(matches!(
            spec(&["thread_position_in_grid"], &["o"], ""),
            Err(BuildError::InvalidName { .. })
        ));
    }

    #[test]
    fn finds_group_functions() {
        let s = spec(
            &["a"],
            &["o"],
            "threadgroup_barrier(mem_flags::mem_threadgroup);",
        )
        .unwrap();
        assert_eq!(s.group_function, Some("threadgroup_barrier"));
        assert!(!s.cuda_group_sync);
        // A word in a comment is not a use.
        let s = spec(
            &["a"],
            &["o"],
            "// One threadgroup per query
out[0] = a[0];",
        )
        .unwrap();
        assert_eq!(s.group_function, None);
    }
}
