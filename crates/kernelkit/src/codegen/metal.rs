//! Metal Shading Language, byte-identical to MLX 0.32.4's
//! `mx.fast.metal_kernel`.
//!
//! The rules are written down, with the golden files they were checked
//! against, in `tests/golden/metal/RULES.md`; the section numbers below refer
//! to it. In short, a variant's source is
//!
//! ```text
//! {header}{template <...>\n}[[kernel]] void {name}(
//!   {inputs, each followed by its _shape/_strides/_ndim buffers},
//!   {outputs},
//!   {position attributes, in MLX's fixed order}) {
//! {body}
//! }
//! {\ntemplate [[host_name("{name}")]] [[kernel]] decltype({name}<...>) {name}<...>;\n}
//! ```
//!
//! What the body uses (layout buffers, position attributes) was found once by
//! [`KernelSpec::new`] with MLX's plain substring rules; this module only
//! writes text.
//!
//! # Where kernelkit differs from MLX
//!
//! * **The malformed signature (RULES.md section 7).** MLX decides whether an
//!   output is the last parameter by comparing its buffer index with
//!   `n_inputs + n_outputs - 1`, which forgets the `_shape`/`_strides`/`_ndim`
//!   buffers. When an input uses one of them, there are two or more outputs
//!   and the body uses no position attribute, MLX closes the parameter list
//!   with `) {` more than once and the source does not compile. kernelkit
//!   writes `,` after every parameter but the last and `) {` once, after the
//!   last one. That is the only difference: in every other case the same rule
//!   gives exactly MLX's bytes, and the kernel name never changes.
//! * **Names are validated** by [`KernelSpec::new`] and
//!   [`Call::generate`](crate::Call::generate) (MLX pastes any string in), and
//!   `float64` inputs and outputs are refused with
//!   [`CallError::UnsupportedDType`](crate::CallError::UnsupportedDType)
//!   before generation, where MLX prints the source and then raises. The
//!   generator itself follows MLX there too (names pasted in as given,
//!   `double` arguments): `metal/golden_unchecked.rs` checks it on every MLX
//!   source, quirks included.
//!
//! # Kernel names can repeat
//!
//! MLX's name records only the kernel name, the template *values*, and each
//! argument's dtype and pass mode. Two variants with different sources can
//! therefore share a name: the int `1` and the bool `true` both render as
//! `1` (`template <int V>` vs `template <bool V>`), and the dtype list does
//! not say which inputs use `_shape`. The Metal dialect keeps MLX's names
//! anyway, because byte-identity with MLX is its purpose. Nothing in
//! kernelkit is confused by it: the variant memo is keyed by the template
//! argument's kind as well as its value, and the module key
//! ([`ModuleKey`](crate::cache::key::ModuleKey)) that the kernel caches
//! use includes the hash of the source, so two sources never share a
//! compiled module. (The CPU and CUDA dialects append a variant id to the
//! name instead, so their names are unique.)

use std::fmt::Write;

use super::parts::{SharedText, VariantText};
use crate::codegen::spec::KernelSpec;
use crate::codegen::template::TemplateArg;
use crate::codegen::variant::{PassMode, VariantDesc};
use crate::dtype::DType;
use std::borrow::Cow;

/// The Metal spelling of a dtype (RULES.md section 2), used for parameter
/// types, in the kernel name and for dtype template values.
///
/// Kept here rather than shared with the C++ dialects so that a change to
/// their preludes can never change Metal's bytes.
fn metal_type(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "uint8_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::F16 => "float16_t",
        DType::BF16 => "bfloat16_t",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::Complex64 => "complex64_t",
    }
}

/// Writes a template value as C++ prints it in MLX's instantiation: ints in
/// decimal, bools as `1`/`0` (an `ostream` without `boolalpha`), dtypes as
/// their Metal type.
fn write_value(out: &mut String, value: TemplateArg) {
    match value {
        TemplateArg::Int(v) => {
            let _ = write!(out, "{v}");
        }
        TemplateArg::Bool(b) => out.push(if b { '1' } else { '0' }),
        TemplateArg::DType(d) => out.push_str(metal_type(d)),
    }
}

/// The kernel (host) name (RULES.md section 4):
/// `custom_kernel_{name}{_ then _value per template argument}` followed by
/// `_{type}{s|c|}` per input and `_{type}` per output. In the template part
/// a negative int's `-` becomes `_`.
fn kernel_name(spec: &KernelSpec, desc: &VariantDesc<'_>) -> String {
    let mut name = String::with_capacity(
        "custom_kernel_".len()
            + spec.name.len()
            + 16 * (1 + desc.template.len() + desc.inputs.len() + desc.outputs.len()),
    );
    name.push_str("custom_kernel_");
    name.push_str(&spec.name);
    if !desc.template.is_empty() {
        name.push('_');
        for t in desc.template {
            name.push('_');
            match t.value {
                TemplateArg::Int(v) if v < 0 => {
                    let _ = write!(name, "_{}", v.unsigned_abs());
                }
                value => write_value(&mut name, value),
            }
        }
    }
    for input in desc.inputs {
        name.push('_');
        name.push_str(metal_type(input.dtype));
        match input.mode {
            PassMode::Scalar => name.push('s'),
            PassMode::Constant => name.push('c'),
            PassMode::Device => {}
        }
    }
    for &output in desc.outputs {
        name.push('_');
        name.push_str(metal_type(output));
    }
    name
}

/// What every Metal variant of `spec` shares: the header, verbatim, with no
/// separator after it (section 1), and the body, verbatim (sections 5-6).
pub(crate) fn shared(spec: &KernelSpec) -> SharedText {
    SharedText::new(
        vec![Cow::Owned(spec.header.clone())],
        spec.source.clone(),
        Vec::new(),
    )
}

/// The whole Metal source of one variant (the unchecked goldens' entry).
#[cfg(test)]
pub(crate) fn generate(spec: &KernelSpec, desc: &VariantDesc<'_>) -> super::Generated {
    super::generate(super::Dialect::Metal, spec, desc, 0)
}

/// What one Metal variant adds to its kernel's [`shared`] part (see the
/// module docs): the template declaration and signature before the body,
/// the closing brace and the instantiation after it.
pub(crate) fn variant(spec: &KernelSpec, desc: &VariantDesc<'_>) -> VariantText {
    let name = kernel_name(spec, desc);

    // Parameter lines are short; the instantiation repeats the name 3 times.
    let params = desc.inputs.len() * 4 + desc.outputs.len() + spec.attributes.len();
    let mut src = String::with_capacity(4 * name.len() + 64 * (params + desc.template.len() + 2));

    // 2. Template declaration.
    if !desc.template.is_empty() {
        src.push_str("template <");
        for (i, t) in desc.template.iter().enumerate() {
            if i > 0 {
                src.push_str(", ");
            }
            src.push_str(match t.value {
                TemplateArg::Int(_) => "int ",
                TemplateArg::Bool(_) => "bool ",
                TemplateArg::DType(_) => "typename ",
            });
            src.push_str(&t.name);
        }
        src.push_str(">\n");
    }

    // 3-4. Signature. One counter numbers every buffer; each parameter but
    // the first is preceded by `,\n`, and `) {\n` follows the last one (MLX
    // writes the same except in its malformed case, see the module docs).
    src.push_str("[[kernel]] void ");
    src.push_str(&name);
    src.push_str("(\n");
    let mut buffer = 0usize;
    let mut first = true;
    let mut separate = |src: &mut String| {
        if !std::mem::take(&mut first) {
            src.push_str(",\n");
        }
    };
    for ((input, d), info) in spec
        .input_names
        .iter()
        .zip(desc.inputs)
        .zip(&spec.shape_infos)
    {
        separate(&mut src);
        let ty = metal_type(d.dtype);
        let (space, decl) = match d.mode {
            PassMode::Scalar => ("constant", '&'),
            PassMode::Constant => ("constant", '*'),
            PassMode::Device => ("device", '*'),
        };
        let _ = write!(
            src,
            "  const {space} {ty}{decl} {input} [[buffer({buffer})]]"
        );
        buffer += 1;
        // 0-d inputs never get layout buffers, whatever the body says.
        if d.mode == PassMode::Scalar {
            continue;
        }
        for (used, ty, suffix) in [
            (info.shape, "const constant int*", "_shape"),
            (info.strides, "const constant int64_t*", "_strides"),
            (info.ndim, "const constant int&", "_ndim"),
        ] {
            if used {
                separate(&mut src);
                let _ = write!(src, "  {ty} {input}{suffix} [[buffer({buffer})]]");
                buffer += 1;
            }
        }
    }
    for (output, &dtype) in spec.output_names.iter().zip(desc.outputs) {
        separate(&mut src);
        let ty = metal_type(dtype);
        if spec.atomic_outputs {
            let _ = write!(src, "  device atomic<{ty}>* {output} [[buffer({buffer})]]");
        } else {
            let _ = write!(src, "  device {ty}* {output} [[buffer({buffer})]]");
        }
        buffer += 1;
    }
    for a in &spec.attributes {
        separate(&mut src);
        let _ = write!(src, "  {} {} [[{}]]", a.ty, a.name, a.name);
    }
    src.push_str(") {\n");

    // 5-6. Body, verbatim (the shared part's).
    let mut after = String::from("\n}\n");

    // 7. Explicit instantiation under the host name.
    if !desc.template.is_empty() {
        let mut inst = String::with_capacity(name.len() + 16 * desc.template.len() + 2);
        inst.push_str(&name);
        inst.push('<');
        for (i, t) in desc.template.iter().enumerate() {
            if i > 0 {
                inst.push_str(", ");
            }
            write_value(&mut inst, t.value);
        }
        inst.push('>');
        let _ = writeln!(
            after,
            "\ntemplate [[host_name(\"{name}\")]] [[kernel]] decltype({inst}) {inst};"
        );
    }
    VariantText {
        name,
        before: src,
        after,
    }
}

#[cfg(test)]
mod golden_unchecked;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::template::TemplateParam;
    use crate::codegen::variant::InputDesc;
    use crate::codegen::Generated;

    fn spec(inputs: &[&str], outputs: &[&str], body: &str) -> KernelSpec {
        KernelSpec::new(
            "k".into(),
            inputs.iter().map(|s| s.to_string()).collect(),
            outputs.iter().map(|s| s.to_string()).collect(),
            body.into(),
            String::new(),
            true,
            false,
        )
        .unwrap()
    }

    fn gen(spec: &KernelSpec, inputs: &[InputDesc], template: &[TemplateParam<'_>]) -> Generated {
        let outputs = vec![DType::F32; spec.output_names.len()];
        super::super::generate(
            super::super::Dialect::Metal,
            spec,
            &VariantDesc {
                inputs,
                outputs: &outputs,
                template,
            },
            0,
        )
    }

    fn device(dtype: DType) -> InputDesc {
        InputDesc {
            dtype,
            mode: PassMode::Device,
        }
    }

    #[test]
    fn negative_ints_use_underscores_in_the_name_only() {
        let s = spec(&["a"], &["o"], "o[0] = a[0] + N;");
        let g = gen(
            &s,
            &[device(DType::F32)],
            &[TemplateParam {
                name: Cow::Borrowed("N"),
                value: TemplateArg::Int(i32::MIN),
            }],
        );
        assert_eq!(g.name, "custom_kernel_k___2147483648_float_float");
        assert!(g
            .source
            .ends_with("decltype(custom_kernel_k___2147483648_float_float<-2147483648>) custom_kernel_k___2147483648_float_float<-2147483648>;\n"));
    }

    #[test]
    fn layout_buffers_close_the_signature_once() {
        // MLX's malformed case (RULES.md section 7): layout buffers, two
        // outputs, no position attribute.
        let s = spec(&["x"], &["o1", "o2"], "o1[0] = x_shape[0]; o2[0] = x_ndim;");
        let g = gen(&s, &[device(DType::F32)], &[]);
        assert_eq!(
            g.source,
            "[[kernel]] void custom_kernel_k_float_float_float(\n\
             \x20 const device float* x [[buffer(0)]],\n\
             \x20 const constant int* x_shape [[buffer(1)]],\n\
             \x20 const constant int& x_ndim [[buffer(2)]],\n\
             \x20 device float* o1 [[buffer(3)]],\n\
             \x20 device float* o2 [[buffer(4)]]) {\n\
             o1[0] = x_shape[0]; o2[0] = x_ndim;\n}\n"
        );
    }

    #[test]
    fn scalars_never_get_layout_buffers() {
        let s = spec(
            &["x"],
            &["o"],
            "o[0] = x + x_shape[0] + x_strides[0] + x_ndim;",
        );
        let g = gen(
            &s,
            &[InputDesc {
                dtype: DType::I32,
                mode: PassMode::Scalar,
            }],
            &[],
        );
        assert!(
            g.source.contains(
                "  const constant int32_t& x [[buffer(0)]],\n  device float* o [[buffer(1)]]) {\n"
            ),
            "{}",
            g.source
        );
        assert_eq!(g.name, "custom_kernel_k_int32_ts_float");
    }

    /// The Metal dialect keeps MLX's names, so an int 1 and a bool true share
    /// a name; the module key, which the kernel caches use, still differs.
    #[test]
    fn int_one_and_bool_true_share_a_name_but_not_a_module_key() {
        let s = spec(&["a"], &["o"], "o[0] = a[0] + V;");
        let inputs = [device(DType::F32)];
        let tpl = |value| {
            [TemplateParam {
                name: Cow::Borrowed("V"),
                value,
            }]
        };
        let int = gen(&s, &inputs, &tpl(TemplateArg::Int(1)));
        let boolean = gen(&s, &inputs, &tpl(TemplateArg::Bool(true)));
        // Same name, other source: the module key, which hashes both, differs.
        assert_eq!(int.name, boolean.name);
        assert_ne!(int.source, boolean.source);
    }
}
