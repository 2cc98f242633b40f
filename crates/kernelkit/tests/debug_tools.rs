//! The tools of debugging (docs/debugging.md): NVTX ranges seen by a tool
//! (a small injection library, `tests/nvtx_tool/record.c`, built here with
//! the C compiler, or given by `KERNELKIT_TEST_NVTX_TOOL`), `printf` in
//! bodies, and compile errors that name the body's line. CPU tests run
//! everywhere a C compiler is; the `cuda_` tests skip without a GPU.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use kernelkit::{DType, Device, Kernel};

/// The NVTX tool library: `KERNELKIT_TEST_NVTX_TOOL`, else built from
/// `tests/nvtx_tool/record.c` with `cc`; `None` (printed) without a
/// compiler.
fn nvtx_tool(dir: &Path) -> Option<PathBuf> {
    if let Some(given) = std::env::var_os("KERNELKIT_TEST_NVTX_TOOL") {
        return Some(PathBuf::from(given));
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nvtx_tool/record.c");
    let lib = dir.join("libkk_nvtx_record.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&source)
        .arg("-lpthread")
        .status();
    match built {
        Ok(s) if s.success() => Some(lib),
        other => {
            println!("skipped: no NVTX tool ({cc} did not build it: {other:?})");
            None
        }
    }
}

/// The device a child test runs on: `cpu`, or `cuda` (None, printed, when
/// there is none).
fn device(kind: &str) -> Option<Device> {
    match kind {
        "cpu" => Some(Device::new_cpu()),
        _ => match Device::new_cuda(0) {
            Ok(d) => Some(d),
            Err(e) => {
                println!("skipped: {e}");
                None
            }
        },
    }
}

fn add_one() -> Kernel {
    Kernel::builder("nvtx_add_one")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x;\nout[i] = inp[i] + 1.0f;")
        .build()
        .unwrap()
}

/// In the child: two calls of one kernel (a compile, a load, two launches).
fn two_calls(kind: &str) {
    let Some(device) = device(kind) else { return };
    let stream = device.new_stream().unwrap();
    let kernel = add_one();
    let x = device.array_from_slice(&[1.0f32; 64], [64]).unwrap();
    for _ in 0..2 {
        let out = kernel
            .call([&x])
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .threadgroup([32, 1, 1])
            .on(&stream)
            .launch()
            .unwrap();
        // (The stand-in driver runs no kernel.)
        if !stand_in(&device) {
            assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0f32; 64]);
        }
    }
}

/// The stand-in driver of `tools/fakecuda`: it compiles and runs nothing.
fn stand_in(device: &Device) -> bool {
    device.description().contains("fakecuda")
}

/// Runs `test` in a child with NVTX `on` and the tool at `tool`, and
/// returns what the tool recorded (empty when it was never loaded).
fn recorded(test: &str, on: bool, tool: &Path, log: &Path) -> Vec<String> {
    let mut env: Vec<(&str, OsString)> = vec![
        ("NVTX_INJECTION64_PATH", tool.into()),
        ("KK_NVTX_LOG", log.into()),
    ];
    env.push(("KERNELKIT_NVTX", if on { "1" } else { "0" }.into()));
    assert!(!common::in_child(test, &env));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Checks the ranges of [`two_calls`]: a compile, a load, two launches,
/// each named by the kernel and the variant's function, each popped.
fn check_ranges(lines: &[String]) {
    assert_eq!(
        lines.first().map(String::as_str),
        Some("init"),
        "{lines:#?}"
    );
    let pushes: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("push "))
        .map(|l| l.split_once(' ').unwrap().1)
        .collect();
    let pops = lines.iter().filter(|l| l.starts_with("pop ")).count();
    assert_eq!(pops, pushes.len(), "every range ends: {lines:#?}");
    let named = |what: &str| {
        pushes
            .iter()
            .filter(|m| {
                m.starts_with(&format!(
                    "{what} nvtx_add_one custom_kernel_nvtx_add_one_float32_float32_"
                ))
            })
            .count()
    };
    assert_eq!(named("compile"), 1, "{pushes:#?}");
    assert_eq!(named("load"), 1, "{pushes:#?}");
    assert_eq!(named("launch"), 2, "{pushes:#?}");
    // Nothing else, and every range closed before the next opened (none
    // of them nests another on this path).
    assert_eq!(pushes.len(), 4, "{pushes:#?}");
    assert!(
        lines
            .iter()
            .filter(|l| l.starts_with("pop "))
            .all(|l| l.ends_with(" 0")),
        "{lines:#?}"
    );
}

fn nvtx_case(test: &str, kind: &str) {
    if common::is_child(test) {
        two_calls(kind);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(tool) = nvtx_tool(dir.path()) else {
        return;
    };
    let on = recorded(test, true, &tool, &dir.path().join("on.log"));
    if kind == "cuda" && on.len() <= 1 {
        println!("skipped: the child found no CUDA device");
        return;
    }
    check_ranges(&on);
    // Off: the tool is never loaded, nothing recorded.
    let off = recorded(test, false, &tool, &dir.path().join("off.log"));
    assert!(off.is_empty(), "{off:#?}");
}

#[test]
fn nvtx_ranges_name_the_compile_load_and_launches_on_the_cpu() {
    nvtx_case(
        "nvtx_ranges_name_the_compile_load_and_launches_on_the_cpu",
        "cpu",
    );
}

#[test]
fn cuda_nvtx_ranges_name_the_compile_load_and_launches() {
    nvtx_case(
        "cuda_nvtx_ranges_name_the_compile_load_and_launches",
        "cuda",
    );
}

/// A tool library that does not load is a warning, never a failed call.
#[test]
fn an_nvtx_tool_that_does_not_load_changes_nothing() {
    const TEST: &str = "an_nvtx_tool_that_does_not_load_changes_nothing";
    if common::is_child(TEST) {
        two_calls("cpu");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-tool.so");
    let lines = recorded(TEST, true, &missing, &dir.path().join("log"));
    assert!(lines.is_empty());
}

/// In the child: a Metal-dialect body that prints one line per thread.
fn printing(kind: &str) {
    let Some(device) = device(kind) else { return };
    if stand_in(&device) {
        println!("skipped: the stand-in driver runs no kernel");
        return;
    }
    let kernel = Kernel::builder("prints")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             printf(\"kk-printf %u %.1f\\n\", i, inp[i]);\n\
             out[i] = inp[i];",
        )
        .build()
        .unwrap();
    let x = device
        .array_from_slice(&[0.5f32, 1.5, 2.5, 3.5], [4])
        .unwrap();
    let out = kernel
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .threadgroup([2, 1, 1])
        .launch()
        .unwrap();
    // On a GPU the text comes out at the synchronization.
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![0.5, 1.5, 2.5, 3.5]);
    // A body with a barrier (on the CPU its threads run as fibers).
    let grouped = Kernel::builder("prints_in_groups")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             if (i == 0) printf(\"kk-printf-barrier %.1f\\n\", inp[3]);\n\
             out[i] = inp[i];",
        )
        .build()
        .unwrap();
    let out = grouped
        .call([&x])
        .output([4], DType::F32)
        .grid([4, 1, 1])
        .threadgroup([4, 1, 1])
        .launch()
        .unwrap();
    out[0].to_vec::<f32>().unwrap();
    println!("kk-printf-done");
}

fn printf_case(test: &str, kind: &str) {
    if common::is_child(test) {
        printing(kind);
        return;
    }
    let out = common::child(test, &[]).output().unwrap();
    common::check_child(test, &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.contains("skipped:") {
        println!("{stdout}");
        return;
    }
    let mut printed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("kk-printf ").map(|at| &l[at..]))
        .filter(|l| !l.starts_with("kk-printf-"))
        .collect();
    printed.sort();
    assert_eq!(
        printed,
        [
            "kk-printf 0 0.5",
            "kk-printf 1 1.5",
            "kk-printf 2 2.5",
            "kk-printf 3 3.5"
        ],
        "{stdout}"
    );
    assert!(stdout.contains("kk-printf-barrier 3.5"), "{stdout}");
    // Flushed by the launch, before the host's own line after it.
    let last_kernel_line = stdout.rfind("kk-printf ").unwrap();
    assert!(
        stdout.find("kk-printf-done").unwrap() > last_kernel_line,
        "{stdout}"
    );
}

#[test]
fn printf_in_a_metal_body_prints_on_the_cpu() {
    printf_case("printf_in_a_metal_body_prints_on_the_cpu", "cpu");
}

#[test]
fn cuda_printf_in_a_metal_body_prints() {
    printf_case("cuda_printf_in_a_metal_body_prints", "cuda");
}

/// A compile error names the line of the body it is on: kernelkit's
/// `[body line 3]` always, and the compiler's own message (`NAME.body:3`,
/// from `#line` directives) where they are generated: on the CPU always,
/// on CUDA when compiling with line information (`-lineinfo`, which
/// compute-sanitizer and cuda-gdb read).
fn compile_error_case(kind: &str, line_info: bool) {
    let builder = Device::builder().cache_mode(kernelkit::CacheMode::Memory);
    let opened = match kind {
        "cpu" => builder.cpu(),
        _ if line_info => builder
            .cuda_options(kernelkit::CudaCompileOptions::default().flag("-lineinfo"))
            .cuda(0),
        _ => builder.cuda(0),
    };
    let device = match opened {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let kernel = Kernel::builder("line_three")
        .inputs(["inp"])
        .outputs(["out"])
        .source(
            "uint i = thread_position_in_grid.x;\nfloat v = inp[i];\nout[i] = v + not_declared;\n",
        )
        .build()
        .unwrap();
    let x = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let result = kernel
        .call([&x])
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .launch();
    // The stand-in's own NVRTC accepts anything (with a real NVRTC beside
    // the stand-in driver, the error is real).
    if result.is_ok() && stand_in(&device) {
        println!("skipped: the stand-in NVRTC compiles nothing");
        return;
    }
    let err = result.unwrap_err();
    let kernelkit::Error::Compile(kernelkit::CompileError::Rejected { log, .. }) = &err else {
        panic!("expected a rejected compile, got {err}");
    };
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("not_declared")).collect();
    assert!(!lines.is_empty(), "{log}");
    assert!(lines.iter().any(|l| l.contains("[body line 3]")), "{log}");
    let own = match kind {
        "cpu" => Some("line_three.body:3:"),
        _ if line_info => Some("line_three.body(3)"),
        _ => None,
    };
    if let Some(own) = own {
        assert!(lines.iter().any(|l| l.contains(own)), "{log}");
    }
}

#[test]
fn a_compile_error_names_the_body_line_on_the_cpu() {
    compile_error_case("cpu", false);
}

#[test]
fn cuda_a_compile_error_names_the_body_line() {
    compile_error_case("cuda", false);
}

#[test]
fn cuda_a_compile_error_with_line_information_names_the_body_file() {
    compile_error_case("cuda", true);
}

/// Launches over the compiled function's own limits (CUDA): refused before
/// the launch, naming the limit. On the stand-in driver the kernels'
/// names give them their limits (`tools/fakecuda`); on a GPU the shared
/// memory case is real (48,000 static bytes beside the dynamic ones).
mod standin {
    use kernelkit::{
        BodyLanguage, CacheMode, CallError, DType, Device, Error, Kernel, LaunchLimit,
    };

    fn cuda() -> Option<Device> {
        match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
            Ok(d) => Some(d),
            Err(e) => {
                println!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn static_and_dynamic_shared_memory_over_the_device_is_refused() {
        let Some(device) = cuda() else { return };
        let kernel = Kernel::builder("fakecuda_static_shared")
            .inputs(["inp"])
            .outputs(["out"])
            .language(BodyLanguage::Cuda)
            .source(
                "__shared__ float big[12000];\n\
                 unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 big[threadIdx.x] = inp[i];\n\
                 __syncthreads();\n\
                 out[i] = big[threadIdx.x];",
            )
            .build()
            .unwrap();
        let x = device.array_from_slice(&[1.0f32; 256], [256]).unwrap();
        let max = device.limits().max_shared_bytes as u32;
        let err = kernel
            .call([&x])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .threadgroup([256, 1, 1])
            .shared_memory(max - 1024)
            .launch()
            .unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Call(CallError::Dims {
                    what: "shared memory",
                    limit: Some(LaunchLimit::SharedBytes),
                    ..
                })
            ),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("static shared memory") && text.contains("fakecuda_static_shared"),
            "{text}"
        );
        // Within the limit, the same kernel runs.
        kernel
            .call([&x])
            .output([256], DType::F32)
            .grid([256, 1, 1])
            .threadgroup([256, 1, 1])
            .launch()
            .unwrap();
    }

    #[test]
    fn a_threadgroup_over_the_functions_register_limit_is_refused() {
        let Some(device) = cuda() else { return };
        if !device.description().contains("fakecuda") {
            println!("skipped: the stand-in driver gives this kernel its register limit");
            return;
        }
        let kernel = Kernel::builder("fakecuda_regs")
            .inputs(["inp"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x;\nout[i] = inp[i];")
            .build()
            .unwrap();
        let x = device.array_from_slice(&[1.0f32; 1024], [1024]).unwrap();
        let call = |tg: u64| {
            kernel
                .call([&x])
                .output([1024], DType::F32)
                .grid([1024, 1, 1])
                .threadgroup([tg, 1, 1])
                .launch()
        };
        let err = call(512).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Call(CallError::Dims {
                    what: "threadgroup",
                    limit: Some(LaunchLimit::FunctionThreads),
                    ..
                })
            ),
            "{err}"
        );
        assert!(err.to_string().contains("at most 256 threads"), "{err}");
        call(256).unwrap();
    }
}
