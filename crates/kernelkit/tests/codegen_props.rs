//! Properties of source generation in every dialect, for random valid specs
//! and calls: it never panics, it is deterministic, Metal's signature is
//! well formed, and the CPU and CUDA names differ whenever the variant does.

use std::borrow::Cow;
use std::collections::HashMap;

use kernelkit::codegen::attributes::ATTRIBUTES;
use kernelkit::{
    Array, DType, Device, Dialect, InputDesc, Kernel, PassMode, TemplateArg, TemplateParam,
    VariantDesc,
};
use proptest::prelude::*;

/// An argument name that validation always accepts: letters (never starting
/// with `k`, so never `kk_`), then `_` and the argument's index, so names are
/// distinct, never reserved words, never position attributes and never
/// another input's `_shape`/`_strides`/`_ndim`.
fn arg_name(stem: &str, index: usize) -> String {
    format!("{stem}_{index}")
}

fn stem() -> impl Strategy<Value = String> {
    "[a-jl-z][a-z]{0,5}"
}

fn dtype() -> impl Strategy<Value = DType> {
    proptest::sample::select(DType::ALL.to_vec())
}

fn template_value() -> impl Strategy<Value = TemplateArg> {
    prop_oneof![
        any::<i32>().prop_map(TemplateArg::Int),
        (-3i32..3).prop_map(TemplateArg::Int),
        any::<bool>().prop_map(TemplateArg::Bool),
        dtype().prop_map(TemplateArg::DType),
    ]
}

/// A random kernel and one call of it.
#[derive(Debug, Clone)]
struct Case {
    name: String,
    inputs: Vec<(String, DType, Vec<usize>)>,
    outputs: Vec<(String, DType)>,
    /// Which layout names of which input the body mentions (shape, strides, ndim).
    layout_uses: Vec<(usize, usize)>,
    attributes: Vec<usize>,
    filler: String,
    header: String,
    atomic: bool,
    template: Vec<(String, TemplateArg)>,
}

impl Case {
    fn body(&self) -> String {
        let mut body = String::new();
        for &(input, which) in &self.layout_uses {
            if let Some((name, _, _)) = self.inputs.get(input) {
                let suffix = ["_shape[0]", "_strides[0]", "_ndim"][which];
                body.push_str(&format!("int v{input}{which} = {name}{suffix};\n"));
            }
        }
        for &a in &self.attributes {
            body.push_str(&format!("(void){};\n", ATTRIBUTES[a].name));
        }
        body.push_str(&self.filler);
        body
    }

    fn kernel(&self) -> Kernel {
        Kernel::builder(self.name.clone())
            .inputs(self.inputs.iter().map(|i| i.0.clone()))
            .outputs(self.outputs.iter().map(|o| o.0.clone()))
            .source(self.body())
            .header(self.header.clone())
            .atomic_outputs(self.atomic)
            .build()
            .expect("the strategy only makes valid specs")
    }
}

fn case() -> impl Strategy<Value = Case> {
    let inputs = prop::collection::vec(
        (stem(), dtype(), prop::collection::vec(0usize..4, 0..4)),
        0..=4,
    );
    let outputs = prop::collection::vec((stem(), dtype()), 1..=3);
    let template = prop::collection::vec(("[A-Z]{1,3}", template_value()), 0..=3);
    (
        "[a-z_][a-z0-9_]{0,12}",
        inputs,
        outputs,
        prop::collection::vec((0usize..4, 0usize..3), 0..4),
        prop::collection::vec(0..ATTRIBUTES.len(), 0..3),
        "[ -~\t\né]{0,24}",
        prop_oneof![Just(String::new()), Just("// header\n".to_string())],
        any::<bool>(),
        template,
    )
        .prop_map(
            |(name, inputs, outputs, layout_uses, attributes, filler, header, atomic, template)| {
                Case {
                    name,
                    inputs: inputs
                        .into_iter()
                        .enumerate()
                        .map(|(i, (s, d, shape))| (arg_name(&s, i), d, shape))
                        .collect(),
                    outputs: outputs
                        .into_iter()
                        .enumerate()
                        .map(|(i, (s, d))| (arg_name(&s, 10 + i), d))
                        .collect(),
                    layout_uses,
                    attributes,
                    filler,
                    header,
                    atomic,
                    template: template
                        .into_iter()
                        .enumerate()
                        .map(|(i, (s, v))| (arg_name(&s, i), v))
                        .collect(),
                }
            },
        )
}

/// Generates the case's call in `dialect`, through the public API; errors
/// become their message so that two runs can be compared.
fn generate(
    kernel: &Kernel,
    case: &Case,
    arrays: &[Array],
    dialect: Dialect,
) -> Result<(String, String), String> {
    let mut call = kernel.call(arrays.iter());
    for (_, dtype) in &case.outputs {
        call = call.output([4], *dtype);
    }
    for (name, value) in &case.template {
        call = call.template(name.as_str(), *value);
    }
    call.generate(dialect)
        .map(|g| (g.name, g.source))
        .map_err(|e| e.to_string())
}

/// Metal's signature: one `[[buffer(i)]]` per input, layout buffer and
/// output, numbered from 0, and `) {` once, right before the body.
fn check_metal(case: &Case, kernel: &Kernel, name: &str, source: &str) {
    let body = case.body();
    let open = format!("[[kernel]] void {name}(\n");
    let start = source.find(&open).expect("signature") + open.len();
    let close = start + source[start..].find(") {\n").expect("`) {`");
    assert!(
        source[close + 4..].starts_with(&body),
        "body after the signature"
    );
    let signature = &source[start..close];
    let layout: usize = case
        .inputs
        .iter()
        .zip(kernel.spec().shape_infos())
        .filter(|((_, _, shape), _)| !shape.is_empty())
        .map(|(_, info)| info.shape as usize + info.strides as usize + info.ndim as usize)
        .sum();
    let buffers = case.inputs.len() + layout + case.outputs.len();
    for b in 0..buffers {
        assert_eq!(
            signature.matches(&format!("[[buffer({b})]]")).count(),
            1,
            "{signature}"
        );
    }
    assert!(!signature.contains(&format!("[[buffer({buffers})]]")));
    let params = buffers + kernel.spec().attributes().count();
    assert_eq!(signature.lines().count(), params, "{signature}");
    assert_eq!(signature.matches(",\n").count(), params - 1, "{signature}");
    assert!(name.starts_with(&format!("custom_kernel_{}_", case.name)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn generation_never_panics_and_is_deterministic(case in case()) {
        let cpu = Device::cpu();
        let arrays: Vec<Array> = case
            .inputs
            .iter()
            .map(|(_, d, shape)| Array::zeros(&cpu, shape.iter().copied(), *d).unwrap())
            .collect();
        let kernel = case.kernel();
        // A second kernel from the same spec: a fresh memo and fingerprint.
        let again = case.kernel();
        for dialect in [Dialect::Metal, Dialect::Cuda, Dialect::Cpu] {
            let first = generate(&kernel, &case, &arrays, dialect);
            prop_assert_eq!(&first, &generate(&kernel, &case, &arrays, dialect));
            prop_assert_eq!(&first, &generate(&again, &case, &arrays, dialect));
            match (&first, dialect) {
                (Ok((name, source)), Dialect::Metal) => check_metal(&case, &kernel, name, source),
                (Err(e), Dialect::Metal) => {
                    // Metal refuses float64 arguments, and only those.
                    prop_assert!(e.contains("float64"), "{}", e);
                }
                (Err(e), _) => prop_assert!(false, "{} refused a valid call: {}", dialect.name(), e),
                (Ok(_), _) => {}
            }
        }
    }

    /// Distinct variants of one kernel never share a CPU or CUDA name. (Metal
    /// keeps MLX's names, which can repeat: see `codegen::metal`.)
    #[test]
    fn cpu_and_cuda_names_differ_whenever_the_variant_does(
        case in case(),
        variants in prop::collection::vec(
            (
                prop::collection::vec(
                    (dtype(), prop::sample::select(vec![PassMode::Scalar, PassMode::Constant, PassMode::Device])),
                    4,
                ),
                prop::collection::vec(dtype(), 3),
                prop::collection::vec((prop::sample::select(vec!["T", "N", "Flag"]), template_value()), 0..3),
            ),
            2..12,
        ),
    ) {
        let kernel = case.kernel();
        for dialect in [Dialect::Cpu, Dialect::Cuda] {
            let mut seen: HashMap<String, _> = HashMap::new();
            for (inputs, outputs, template) in &variants {
                let inputs: Vec<InputDesc> = inputs
                    .iter()
                    .take(case.inputs.len())
                    .map(|&(dtype, mode)| InputDesc { dtype, mode })
                    .collect();
                let outputs = &outputs[..case.outputs.len()];
                let template: Vec<TemplateParam<'_>> = template
                    .iter()
                    .map(|&(name, value)| TemplateParam { name: Cow::Borrowed(name), value })
                    .collect();
                let g = kernel.generate(
                    dialect,
                    &VariantDesc { inputs: &inputs, outputs, template: &template },
                );
                let key = (inputs.clone(), outputs.to_vec(), template.clone());
                if let Some(other) = seen.insert(g.name.clone(), key.clone()) {
                    prop_assert_eq!(&other, &key, "{} name {} reused", dialect.name(), g.name);
                }
            }
        }
    }
}
