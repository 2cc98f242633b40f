//! Golden tests for the CUDA dialect: the generated name and source of a few
//! specs, compared byte for byte with the files in `tests/golden/cuda/`.
//!
//! Every CUDA source holds sections of kernelkit's CUDA prelude for its
//! body's language (`kernelkit::codegen::prelude_sections`: for a Metal
//! body, those of the Metal compatibility layer it needs: up to thousands
//! of lines). The golden files hold each section's first line,
//! `// kernelkit prelude: NAME`, in its place ([`without_prelude`]). So a
//! change of a section's text touches the prelude alone, and a change of
//! which sections a body gets shows in its golden file.
//!
//! To regenerate after an intended change: `KERNELKIT_BLESS=1 cargo test
//! --test cuda_golden`, then review the diff. The same files, with the
//! prelude put back, are compiled by NVRTC on the GPU machine (the library
//! test `backend::cuda::compile::tests::golden_sources_compile`), so a
//! golden source that does not compile cannot stay checked in unnoticed.

use std::borrow::Cow;
use std::path::PathBuf;

use kernelkit::{
    BodyLanguage, DType, Dialect, InputDesc, Kernel, PassMode, TemplateArg, TemplateParam,
    VariantDesc,
};

/// One golden case: a kernel and the variant to generate.
struct Case {
    file: &'static str,
    kernel: Kernel,
    inputs: Vec<InputDesc>,
    outputs: Vec<DType>,
    template: Vec<(&'static str, TemplateArg)>,
}

fn dev(dtype: DType) -> InputDesc {
    InputDesc {
        dtype,
        mode: PassMode::Device,
    }
}

fn cases() -> Vec<Case> {
    let k = |name: &str, inputs: &[&str], outputs: &[&str], body: &str| {
        Kernel::builder(name)
            .inputs(inputs.iter().copied())
            .outputs(outputs.iter().copied())
            .source(body)
    };
    vec![
        Case {
            file: "add_offset",
            kernel: k(
                "add_offset",
                &["inp"],
                &["out"],
                "uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;",
            )
            .build()
            .unwrap(),
            inputs: vec![dev(DType::F32)],
            outputs: vec![DType::F32],
            template: vec![("OFFSET", TemplateArg::Int(3))],
        },
        Case {
            file: "strided_elem_to_loc",
            kernel: k(
                "strided_copy",
                &["inp"],
                &["out"],
                concat!(
                    "uint elem = thread_position_in_grid.x;\n",
                    "int64_t loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);\n",
                    "out[elem] = inp[loc];"
                ),
            )
            .ensure_row_contiguous(false)
            .build()
            .unwrap(),
            inputs: vec![dev(DType::I32)],
            outputs: vec![DType::I32],
            template: vec![],
        },
        Case {
            file: "scalar_small_half_template",
            kernel: k(
                "myexp",
                &["inp", "x", "bias"],
                &["out"],
                concat!(
                    "uint i = thread_position_in_grid.x;\n",
                    "T v = static_cast<T>(float(inp[i]) * x + float(bias[i % 4]));\n",
                    "out[i] = B ? v : T(N);"
                ),
            )
            .build()
            .unwrap(),
            inputs: vec![
                dev(DType::F32),
                InputDesc {
                    dtype: DType::I32,
                    mode: PassMode::Scalar,
                },
                InputDesc {
                    dtype: DType::F32,
                    mode: PassMode::Constant,
                },
            ],
            outputs: vec![DType::F16],
            template: vec![
                ("T", TemplateArg::DType(DType::F16)),
                ("N", TemplateArg::Int(-4)),
                ("B", TemplateArg::Bool(true)),
            ],
        },
        Case {
            file: "atomic_histogram",
            kernel: k(
                "histogram",
                &["values"],
                &["counts", "total"],
                concat!(
                    "uint i = thread_position_in_grid.x;\n",
                    "atomic_fetch_add_explicit(&counts[values[i] % 16], 1u, memory_order_relaxed);\n",
                    "atomic_fetch_add_explicit(&total[0], 1.0f, memory_order_relaxed);\n",
                    "atomic_fetch_max_explicit(&counts[16], values[i], memory_order_relaxed);\n",
                    "atomic_fetch_min_explicit(&total[1], -float(values[i]), memory_order_relaxed);\n",
                    "uint expected = 0;\n",
                    "atomic_compare_exchange_weak_explicit(&counts[17], &expected, 1u, memory_order_relaxed, memory_order_relaxed);\n",
                    "atomic_exchange_explicit(&total[2], 3.0f, memory_order_relaxed);\n",
                    "atomic_fetch_or_explicit(&counts[18], 1u << (values[i] % 32), memory_order_relaxed);"
                ),
            )
            .atomic_outputs(true)
            .build()
            .unwrap(),
            inputs: vec![dev(DType::U32)],
            outputs: vec![DType::U32, DType::F32],
            template: vec![],
        },
        Case {
            file: "threadgroup_reduce",
            kernel: k(
                "block_sum",
                &["inp"],
                &["out"],
                concat!(
                    "threadgroup float partial[32];\n",
                    "uint gid = thread_position_in_grid.x;\n",
                    "float v = gid < threads_per_grid.x ? inp[gid] : 0.0f;\n",
                    "v = simd_sum(v);\n",
                    "if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = v;\n",
                    "threadgroup_barrier(mem_flags::mem_threadgroup);\n",
                    "if (thread_index_in_threadgroup == 0) {\n",
                    "  float s = 0.0f;\n",
                    "  for (uint w = 0; w < simdgroups_per_threadgroup; ++w) s += partial[w];\n",
                    "  out[threadgroup_position_in_grid.x] = s;\n",
                    "}"
                ),
            )
            .build()
            .unwrap(),
            inputs: vec![dev(DType::F32)],
            outputs: vec![DType::F32],
            template: vec![],
        },
        Case {
            file: "complex_bf16_header",
            kernel: k(
                "mixed",
                &["z", "w"],
                &["re", "out"],
                concat!(
                    "uint i = thread_position_in_grid.x;\n",
                    "complex64_t c = z[i] * z[i];\n",
                    "re[i] = scale(c.real);\n",
                    "out[i] = bfloat16_t(float(w[i]) + 1.0f);"
                ),
            )
            .header("__device__ inline float scale(float v) { return 2.0f * v; }")
            .build()
            .unwrap(),
            inputs: vec![dev(DType::Complex64), dev(DType::BF16)],
            outputs: vec![DType::F32, DType::BF16],
            template: vec![],
        },
        Case {
            file: "cooperative_groups",
            kernel: k(
                "cg_sum",
                &["inp"],
                &["out"],
                concat!(
                    "auto block = cg::this_thread_block();\n",
                    "auto warp = cg::tiled_partition<32>(block);\n",
                    "uint i = blockIdx.x * blockDim.x + threadIdx.x;\n",
                    "float v = i < kk_grid.x ? inp[i] : 0.0f;\n",
                    "for (int o = 16; o > 0; o /= 2) v += warp.shfl_down(v, o);\n",
                    "if (warp.thread_rank() == 0) atomicAdd(out, v);"
                ),
            )
            .build()
            .unwrap(),
            inputs: vec![dev(DType::F32)],
            outputs: vec![DType::F32],
            template: vec![],
        },
    ]
}

/// A generated source as its golden file holds it: each prelude section
/// it holds (`kernelkit::codegen::prelude_sections`) reduced to its first
/// line, `// kernelkit prelude: NAME` (so the file shows which sections the
/// body needs). An error when the source holds no section, or one twice.
fn without_prelude(source: &str, language: BodyLanguage) -> Result<String, String> {
    let mut out = source.to_string();
    let mut held = 0;
    for (name, text) in kernelkit::codegen::prelude_sections(Dialect::Cuda, language) {
        match out.matches(text).count() {
            0 => {}
            1 => {
                let first = text.split_inclusive('\n').next().unwrap_or(text);
                out = out.replacen(text, first, 1);
                held += 1;
            }
            n => return Err(format!("holds the prelude section `{name}` {n} times")),
        }
    }
    if held == 0 {
        return Err(format!(
            "holds no section of the {} body's CUDA prelude",
            language.name()
        ));
    }
    Ok(out)
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cuda")
}

/// Generates a case's (name, source).
fn generate(case: &Case) -> kernelkit::Generated {
    let template: Vec<TemplateParam<'_>> = case
        .template
        .iter()
        .map(|(n, v)| TemplateParam {
            name: Cow::Borrowed(*n),
            value: *v,
        })
        .collect();
    case.kernel.generate(
        Dialect::Cuda,
        &VariantDesc {
            inputs: &case.inputs,
            outputs: &case.outputs,
            template: &template,
        },
    )
}

#[test]
fn cuda_sources_match_golden_files() {
    let bless = std::env::var_os("KERNELKIT_BLESS").is_some();
    let dir = golden_dir();
    let mut mismatches = Vec::new();
    for case in cases() {
        let generated = generate(&case);
        let source_path = dir.join(format!("{}.cu", case.file));
        let name_path = dir.join(format!("{}.kernel_name", case.file));
        let source = match without_prelude(&generated.source, case.kernel.spec().language()) {
            Ok(source) => source,
            Err(e) => {
                mismatches.push(format!("{}: the generated source {e}", case.file));
                continue;
            }
        };
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&source_path, &source).unwrap();
            std::fs::write(&name_path, &generated.name).unwrap();
            continue;
        }
        let want_source = std::fs::read_to_string(&source_path)
            .unwrap_or_else(|e| panic!("{}: {e}", source_path.display()));
        let want_name = std::fs::read_to_string(&name_path)
            .unwrap_or_else(|e| panic!("{}: {e}", name_path.display()));
        if source != want_source {
            mismatches.push(format!("{}: source differs", case.file));
        }
        if generated.name != want_name {
            mismatches.push(format!(
                "{}: name {} != {}",
                case.file, generated.name, want_name
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "golden mismatches (KERNELKIT_BLESS=1 regenerates):\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn cuda_names_differ_when_sources_differ() {
    let mut seen: Vec<(String, String)> = Vec::new();
    for case in cases() {
        let g = generate(&case);
        for (name, source) in &seen {
            assert!(name != &g.name || source == &g.source, "{name}");
        }
        seen.push((g.name, g.source));
    }
    // The same kernel with another template value gets another name.
    let case = &cases()[0];
    let a = generate(case);
    let template = [TemplateParam {
        name: Cow::Borrowed("OFFSET"),
        value: TemplateArg::Int(4),
    }];
    let b = case.kernel.generate(
        Dialect::Cuda,
        &VariantDesc {
            inputs: &case.inputs,
            outputs: &case.outputs,
            template: &template,
        },
    );
    assert_ne!(a.name, b.name);
    assert_ne!(a.source, b.source);
}

#[test]
fn heavy_headers_only_when_used() {
    for case in cases() {
        let g = generate(&case);
        let cg = g.source.contains("#include <cooperative_groups.h>");
        assert_eq!(cg, case.file == "cooperative_groups", "{}", case.file);
        let half = g.source.contains("#include <cuda_fp16.h>");
        let wants_half = matches!(
            case.file,
            "scalar_small_half_template" | "complex_bf16_header"
        );
        assert_eq!(half, wants_half, "{}", case.file);
    }
}

#[test]
fn guard_unless_the_body_uses_cuda_collectives() {
    // Metal's barriers and SIMD-group functions keep the guard (an exited
    // thread never holds up a barrier); CUDA's own collectives do not.
    for case in cases() {
        let g = generate(&case);
        let guarded = g
            .source
            .contains("  if (kk_partial) {\n    if (threadIdx.x >= kk_grid.x - blockIdx.x");
        let cuda_collectives = case.file == "cooperative_groups";
        assert_eq!(guarded, !cuda_collectives, "{}", case.file);
    }
}
