//! Tests of the NVRTC configuration and compiles; they need NVRTC (no GPU)
//! and skip, with the reason printed, where it is not installed.

use super::*;
use crate::codegen::spec::KernelSpec;
use crate::{DType, Dialect, InputDesc, PassMode, TemplateArg, TemplateParam, VariantDesc};

/// NVRTC for an sm_90 device, or `None` (with the reason printed) where NVRTC is
/// not installed: these tests need no GPU, only the library.
fn nvrtc() -> Option<Nvrtc> {
    let config = crate::config::Config::from_env().cuda;
    if let Err(reason) = crate::backend::cuda::probe::nvrtc(&config) {
        println!("skipped: {reason}");
        return None;
    }
    Some(Nvrtc::new((9, 0), &config).expect("NVRTC knows sm_90"))
}

/// What a compile asked to go through the precompiled prelude (as a
/// worker's) does with `source`, after which this process writes the
/// headers it queued: the first of a prelude compiles the full source
/// and its header is written, the next ones go through the header.
fn through_pch(nvrtc: &Nvrtc, source: &str) -> Result<Vec<u8>, Failure> {
    let cwd = std::env::current_dir().ok();
    let headers = includes::resolve(source, &nvrtc.search, cwd.as_deref())
        .unwrap()
        .headers;
    let options = pch_options(nvrtc);
    let outcome = run_nvrtc(NvrtcJob {
        program: PROGRAM_NAME,
        source,
        headers: &headers,
        options: &options,
        output: Output::Cubin,
    });
    pch::write_pending();
    outcome
}

/// A worker's options for a compile through the precompiled prelude.
fn pch_options(nvrtc: &Nvrtc) -> Vec<CString> {
    let words = pch::words(&nvrtc.words).into_iter();
    words.map(|w| CString::new(w).unwrap()).collect()
}

fn rejected(outcome: Result<Vec<u8>, Failure>) -> String {
    match outcome {
        Err(Failure::Rejected(log)) => log,
        Err(Failure::Other(reason)) => panic!("{reason}"),
        Ok(_) => panic!("compiled"),
    }
}

/// A generated function name and source, as a compile job borrows them.
struct Source {
    name: String,
    source: std::sync::Arc<str>,
}

impl Source {
    fn job(&self) -> CompileJob<'_> {
        CompileJob {
            kernel: "k",
            function: &self.name,
            source: &self.source,
            shared_source: &self.source,
        }
    }
}

fn variant(body: &str) -> Source {
    variant_with_header("", body)
}

fn variant_with_header(header: &str, body: &str) -> Source {
    let spec = KernelSpec::new(
        "k".into(),
        vec!["inp".into(), "s".into()],
        vec!["out".into()],
        body.into(),
        header.into(),
        true,
        false,
    )
    .unwrap();
    let inputs = [
        InputDesc {
            dtype: DType::F16,
            mode: PassMode::Device,
        },
        InputDesc {
            dtype: DType::F32,
            mode: PassMode::Scalar,
        },
    ];
    let template = [TemplateParam {
        name: "T".into(),
        value: TemplateArg::DType(DType::BF16),
    }];
    let g = crate::codegen::generate(
        Dialect::Cuda,
        &spec,
        &VariantDesc {
            inputs: &inputs,
            outputs: &[DType::F32],
            template: &template,
        },
        0,
    );
    Source {
        name: g.name,
        source: g.source.into(),
    }
}

/// The identity holds every option in full: two option lists whose
/// short hashes (of the module key this backend once had) collide still
/// get different module keys.
#[test]
fn option_lists_with_colliding_short_hashes_have_different_identities() {
    let words = |i: u32| {
        vec![
            "--gpu-architecture=sm_90a".to_string(),
            format!("-DTILE={i}"),
        ]
    };
    let short = |i: u32| xxhash_rust::xxh3::xxh3_64(words(i).join("\0").as_bytes()) as u32;
    let mut seen = std::collections::HashMap::new();
    let (a, b) = (0u32..1 << 22)
        .find_map(|i| seen.insert(short(i), i).map(|j| (j, i)))
        .expect("a 32-bit hash collides within 2^22 option lists");
    assert_eq!(short(a), short(b));
    let identity = |i| store_identity((13, 0), "sm_90a", &words(i));
    // The identity is what the cache key hashes (`cache::key`, a floor
    // above, holds that test).
    assert_ne!(identity(a), identity(b), "-DTILE={a} and -DTILE={b}");
    // Words are delimited: moving a character between two is a change.
    assert_ne!(
        store_identity((13, 0), "sm_90a", &["-DA".into(), "B".into()]),
        store_identity((13, 0), "sm_90a", &["-D".into(), "AB".into()])
    );
}

#[test]
fn compiles_a_cubin_for_sm_90a() {
    let Some(nvrtc) = nvrtc() else { return };
    assert!(
        nvrtc.identity().contains("target sm_90a"),
        "{}",
        nvrtc.identity()
    );
    let v = variant(
        "uint i = thread_position_in_grid.x;\nT t = T(float(inp[i]) * s);\nout[i] = float(t) + inp_shape[0];",
    );
    let compiled = nvrtc.compile(&v.job()).unwrap();
    assert_eq!(
        &compiled.artifact[..4],
        b"\x7fELF",
        "a cubin is an ELF image"
    );
    assert!(compiled.dependencies.is_ok_and(|d| d.files.is_empty()));
    // kernelkit's strided copy compiles as a variant does (the resolver
    // compiles it through `compile`), reading no file: it is stored.
    let copy = &crate::backend::copy::STRIDED_COPY;
    let source: std::sync::Arc<str> = copy.source.into();
    let gather = nvrtc.compile(&CompileJob {
        kernel: copy.kernel,
        function: copy.function,
        source: &source,
        shared_source: &source,
    });
    match gather {
        Ok(c) => assert!(c.dependencies.is_ok_and(|d| d.files.is_empty())),
        Err(e) => panic!("{e}"),
    }
}

/// NVRTC's own cache is off in every compile (NVRTC 12.9 on), the option
/// is not part of the identity (so no stored artifact's key depends on
/// it), and the compile works.
#[test]
fn nvrtcs_own_cache_is_off_and_keys_do_not_name_it() {
    let Some(nvrtc) = nvrtc() else { return };
    let no_cache = nvrtc.words().iter().any(|w| w == "--no-cache");
    assert_eq!(no_cache, nvrtc.version >= (12, 9), "{:?}", nvrtc.words());
    assert!(
        !nvrtc.identity().contains("no-cache"),
        "{}",
        nvrtc.identity()
    );
    let v = variant("uint i = thread_position_in_grid.x;\nout[i] = inp[i];");
    let artifact = nvrtc.compile(&v.job()).unwrap().artifact;
    assert_eq!(&artifact[..4], b"\x7fELF");
}

/// A variant whose header includes `params.h`, which includes
/// `scale.h` beside it (both in the returned directory).
fn including_scale() -> (tempfile::TempDir, std::path::PathBuf, Source) {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("params.h");
    std::fs::write(
        &params,
        "#include \"scale.h\"\n#define VAL (3.0f * SCALE)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("scale.h"), "#define SCALE 2.0f\n").unwrap();
    let v = variant_with_header(
        &format!("#include \"{}\"\n", params.display()),
        "uint i = thread_position_in_grid.x;\nout[i] = float(inp[i]) * s + VAL;",
    );
    (dir, params, v)
}

/// What a header includes is read by kernelkit, given to NVRTC, and
/// listed with its hash; a file that includes another by a relative
/// name finds it beside itself.
#[test]
fn included_files_are_compiled_and_listed() {
    let Some(nvrtc) = nvrtc() else { return };
    let (dir, params, v) = including_scale();
    let compiled = nvrtc.compile(&v.job()).unwrap();
    assert_eq!(&compiled.artifact[..4], b"\x7fELF");
    let deps = compiled.dependencies.unwrap();
    let files: Vec<&std::path::Path> = deps.files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(
        files,
        vec![params.as_path(), dir.path().join("scale.h").as_path()]
    );
    assert_eq!(deps.check(), Ok(()));
    std::fs::remove_file(dir.path().join("scale.h")).unwrap();
    let Err(err) = nvrtc.compile(&v.job()) else {
        panic!("compiled without scale.h");
    };
    let log = err.log().unwrap_or_default().to_string();
    assert!(log.contains("scale.h"), "{err}");
}

/// NVRTC compiles the header bytes it is given, not the file on disk
/// under the same name (else the dependency list could hash one thing
/// and the compile read another), for absolute and relative names.
#[test]
fn nvrtc_compiles_the_headers_it_is_given() {
    let Some(nvrtc) = nvrtc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let on_disk = dir.path().join("given.h");
    std::fs::write(&on_disk, "#error read from the disk\n").unwrap();
    let cwd = std::env::current_dir().unwrap();
    let relative = pathdiff(&on_disk, &cwd);
    for name in [on_disk.display().to_string(), relative] {
        let source = format!(
            "#include \"{name}\"\nextern \"C\" __global__ void k(float* x) {{ x[0] = GIVEN; }}\n"
        );
        let headers = vec![(name.clone(), b"#define GIVEN 1.0f\n".to_vec())];
        let out = run_nvrtc(NvrtcJob {
            program: PROGRAM_NAME,
            source: &source,
            headers: &headers,
            options: &nvrtc.options,
            output: nvrtc.output,
        });
        assert!(out.is_ok(), "`{name}`: {}", out.err().unwrap());
    }
}

/// `path` relative to `base` (both absolute), with `..` as needed.
fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = std::path::PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out.display().to_string()
}

#[test]
fn errors_point_into_the_body() {
    let Some(nvrtc) = nvrtc() else { return };
    let v = variant("uint i = thread_position_in_grid.x;\nout[i] = undefined_name;");
    let Err(err) = nvrtc.compile(&v.job()) else {
        panic!("an undefined name compiled");
    };
    let log = err.log().expect("a rejected compile has a log").to_string();
    assert!(log.contains("undefined_name"), "{log}");
    assert!(log.contains("[body line 2]"), "{log}");
    assert!(err.to_string().contains("kernel `k`"));
}

/// A variant compiled through its precompiled prelude (the compile that
/// writes the header, then one that uses it) is the cubin compiled from
/// the full source.
#[test]
fn the_precompiled_prelude_gives_the_same_cubin() {
    let Some(nvrtc) = nvrtc() else { return };
    let body = "uint i = thread_position_in_grid.x;\nout[i] = float(inp[i]) * s + 1.0f;";
    let v = variant(body);
    let expected = nvrtc.compile_source(&v.source).ok().unwrap();
    let written = through_pch(&nvrtc, &v.source).ok().unwrap();
    assert!(pch::is_written(&v.source));
    let used = through_pch(&nvrtc, &v.source).ok().unwrap();
    assert_eq!(written, expected);
    assert_eq!(used, expected);
    // Another body with the same prelude.
    let other = variant("uint i = thread_position_in_grid.x;\nout[i] = s;");
    assert_eq!(
        through_pch(&nvrtc, &other.source).ok().unwrap(),
        nvrtc.compile_source(&other.source).ok().unwrap()
    );
    // The warm-up a worker runs compiles.
    let warm = pch::warm_up().unwrap();
    assert!(through_pch(&nvrtc, &warm).is_ok());
    assert!(pch::is_written(&warm));
}

/// An error in the body is reported at its body line through the
/// precompiled prelude, as from the full source.
#[test]
fn errors_through_the_precompiled_prelude_point_into_the_body() {
    let Some(nvrtc) = nvrtc() else { return };
    through_pch(
        &nvrtc,
        &variant("uint i = thread_position_in_grid.x;\nout[i] = s;").source,
    )
    .ok()
    .unwrap();
    let v = variant("uint i = thread_position_in_grid.x;\nout[i] = undefined_name;");
    assert!(pch::is_written(&v.source), "the same prelude");
    let map = |log: &str| map_log_lines(log, &v.source, body_of(&v.source), "kernel.cu(");
    let through = map(&rejected(through_pch(&nvrtc, &v.source)));
    let full = map(&rejected(nvrtc.compile_source(&v.source)));
    assert!(through.contains("[body line 2]"), "{through}");
    assert_eq!(through, full);
    assert!(!pch::failed_for_the_header(&through), "{through}");
}

/// The user's own includes are read in every compile, not kept in the
/// precompiled header with the prelude: a file removed after a compile
/// that wrote the header is missed by the next.
#[test]
fn the_precompiled_prelude_holds_none_of_the_users_includes() {
    let Some(nvrtc) = nvrtc() else { return };
    let (dir, _, v) = including_scale();
    through_pch(&nvrtc, &v.source).ok().unwrap();
    through_pch(&nvrtc, &v.source).ok().unwrap();
    assert!(pch::is_written(&v.source));
    std::fs::remove_file(dir.path().join("scale.h")).unwrap();
    let log = rejected(through_pch(&nvrtc, &v.source));
    assert!(log.contains("scale.h"), "{log}");
}

/// The compiling half of the prelude's dependency check (the lexical
/// half is `codegen::prelude::tests::a_section_names_only_what_its_dependencies_declare`):
/// each section, with only the sections it depends on (and those in
/// every source), compiles, with and without the 16-bit float types.
#[test]
fn each_prelude_section_compiles_with_its_dependencies() {
    use crate::codegen::prelude::{Selection, CUDA_METAL_SECTIONS};
    let Some(nvrtc) = nvrtc() else { return };
    let kernel = "\nextern \"C\" __global__ void k(float* o) { o[threadIdx.x] = 1.0f; }\n";
    let mut failed = Vec::new();
    for (i, section) in CUDA_METAL_SECTIONS.iter().enumerate() {
        let only = Selection::of_index(i);
        for small in [false, true] {
            let mut source = String::new();
            if small {
                source.push_str(
                    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#define KK_HALF_TYPES 1\n",
                );
            }
            for s in only.sections() {
                source.push_str(s.text);
            }
            source.push_str(kernel);
            if let Err(e) = nvrtc.compile_source(&source) {
                failed.push(format!("{} (16-bit floats: {small}): {e}", section.name));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn golden_sources_compile() {
    let Some(nvrtc) = nvrtc() else { return };
    macro_rules! golden {
        ($($name:literal),*) => {
            [$(($name, include_str!(concat!("../../../../tests/golden/cuda/", $name, ".cu")))),*]
        };
    }
    let sources = golden!(
        "add_offset",
        "atomic_histogram",
        "complex_bf16_header",
        "cooperative_groups",
        "scalar_small_half_template",
        "strided_elem_to_loc",
        "threadgroup_reduce"
    );
    // The golden files hold the first line of each prelude section
    // their source holds (so a change of the prelude touches one
    // file): put the sections back. (The plain prelude's sections are
    // the Metal prelude's first ones.)
    use crate::codegen::{prelude_sections, BodyLanguage, Dialect};
    for (name, golden) in sources {
        let mut source = golden.to_string();
        let mut held = 0;
        for (_, text) in prelude_sections(Dialect::Cuda, BodyLanguage::Metal) {
            let first = text.split_inclusive('\n').next().unwrap_or(text);
            if source.contains(first) {
                source = source.replacen(first, text, 1);
                held += 1;
            }
        }
        assert!(held > 0, "golden {name}: no prelude section");
        if let Err(e) = nvrtc.compile_source(&source) {
            panic!("golden {name} does not compile: {e}");
        }
    }
}

/// A fake CUDA `include` directory of version `version` (as `cuda.h`
/// spells it) under `root`.
fn fake_include(root: &std::path::Path, version: u32) -> PathBuf {
    let include = root.join("include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(include.join("cuda_fp16.h"), "").unwrap();
    std::fs::write(
        include.join("cuda.h"),
        format!(
            "#ifndef CUDA_H\n#define CUDA_VERSION_X 1\n#define CUDA_VERSION {version}\n#endif\n"
        ),
    )
    .unwrap();
    include
}

#[test]
fn headers_of_nvrtcs_own_version_are_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let toolkit13 = dir.path().join("cuda-13");
    let include13 = fake_include(&toolkit13, 13000);
    let site = dir.path().join("site");
    let wheel12 = fake_include(&site.join("nvidia").join("cuda_runtime"), 12080);
    let homes = [toolkit13.clone()];
    let sites = [site.clone()];
    assert_eq!(cuda_major(&include13), Some(13));
    assert_eq!(cuda_major(&wheel12), Some(12));
    // NVRTC 13: the toolkit's; NVRTC 12: the cu12 runtime wheel's.
    assert_eq!(
        toolkit_include_dirs(&homes, &sites, 13),
        vec![include13.clone()]
    );
    assert_eq!(
        toolkit_include_dirs(&homes, &sites, 12),
        vec![wheel12.clone()]
    );
    // CUDA 12's CCCL comes in a wheel of its own, beside the runtime's.
    let cccl12 = site.join("nvidia").join("cuda_cccl").join("include");
    std::fs::create_dir_all(&cccl12).unwrap();
    assert_eq!(
        toolkit_include_dirs(&homes, &sites, 12),
        vec![wheel12, cccl12]
    );
    // No headers of NVRTC's version anywhere: the first with headers.
    assert_eq!(toolkit_include_dirs(&homes, &[], 12), vec![include13]);
    assert!(toolkit_include_dirs(&[], &[], 12).is_empty());
}
