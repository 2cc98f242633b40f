//! `kernelkit precompile SPEC.json... [--device cpu|cuda|cuda:N] [--workers N]`:
//! compiles the variant of each spec file's call, in parallel, without
//! running anything, into the device's caches (the artifact store keeps
//! them for every later process; `kernelkit cache export` ships them).
//!
//! `kernelkit precompile --manifest FILE [--arch sm_80,sm_90a] [--ptx]
//! [--device cpu --target x86-64-v2] --out BUNDLE --signing-key KEY`:
//! compiles every variant a manifest recorded (`KERNELKIT_RECORD`) for
//! each CUDA architecture named (NVRTC only: no GPU needed), their PTX,
//! and the CPU targets named, in parallel, into one signed bundle
//! (`kernelkit::manifest`); every CUDA target also gets kernelkit's own
//! strided-copy kernel.
//!
//! On a terminal, a progress bar on stderr; otherwise one line per spec as
//! it finishes. Then one line per spec (`ok`, `FAILED: why`) and a summary
//! with the wall time and the slowest single item. Exit status: 0 when
//! every spec compiled, 1 when any failed, 2 when no device could be
//! opened.
//!
//! With `--tune`, each spec whose configurations file is given
//! (`--configs`) or lies beside it (`SPEC.configs.json`) is then tuned
//! over them on the device (`kernelkit tune` for one spec): its record is
//! kept in every cache tier, and `kernelkit cache export` ships it.
//!
//! A spec file needs no data here: the variant depends on the inputs'
//! dtypes and shapes only (`SpecFile::placeholder_inputs`).
//!
//! The spec files are read before the device opens, so that a CUDA device
//! opens with as many compile workers as the specs can use (one fewer than
//! the specs: one compile runs in this process). They start as the compiles
//! need them (the library's default, unless `KERNELKIT_START_WORKERS` says
//! otherwise): workers started all at once, each warmed up with a compile,
//! would compete with the real compiles for the cores.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use kernelkit::spec_file::SpecFile;
use kernelkit::{Array, Config, Device, Error, Kernel, Precompile};

/// Arguments of `kernelkit precompile`.
#[derive(clap::Args)]
pub struct Args {
    /// Spec files (the format of `kernelkit run`; data are not needed).
    #[arg(required_unless_present = "manifest", conflicts_with = "manifest")]
    specs: Vec<PathBuf>,
    /// A manifest recorded with KERNELKIT_RECORD: precompile every variant
    /// in it into the bundle --out (with --arch, --ptx, --device cpu).
    #[arg(long, requires_all = ["out", "signing_key"])]
    manifest: Option<PathBuf>,
    /// CUDA architectures to make code for, comma-separated (sm_80,sm_90a);
    /// NVRTC only, no GPU needed.
    #[arg(long, value_delimiter = ',')]
    arch: Vec<String>,
    /// Also make PTX for each --arch's plain virtual architecture
    /// (compute_80, compute_90), which later GPUs load.
    #[arg(long)]
    ptx: bool,
    /// CPU targets with --device cpu, comma-separated: native, x86-64-v2,
    /// x86-64-v3, x86-64-v4 (default: x86-64-v2, which travels).
    #[arg(long, value_delimiter = ',')]
    target: Vec<String>,
    /// The bundle to write (with --manifest).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The private key that signs the bundle (`kernelkit cache keygen`).
    #[arg(long)]
    signing_key: Option<PathBuf>,
    /// The device: cpu, cuda or cuda:N (default: CUDA if present, else cpu).
    #[arg(long)]
    device: Option<String>,
    /// Compiles at once (default: the core count, at most 16).
    #[arg(long)]
    workers: Option<usize>,
    /// Also tune each spec's call over launch configurations (timing them
    /// on the device), keeping the records in the caches (`cache export`
    /// ships them): from `--configs`, else from `SPEC.configs.json` beside
    /// each spec (specs without one are only compiled).
    #[arg(long)]
    tune: bool,
    /// The configurations file for `--tune` (every spec).
    #[arg(long, value_name = "CONFIGS.json", requires = "tune")]
    configs: Option<PathBuf>,
}

/// One spec, read and ready to add (or why not).
struct Loaded {
    spec: SpecFile,
    kernel: Kernel,
    inputs: Vec<Array>,
}

/// Runs `kernelkit precompile`.
pub fn main(args: Args) -> ExitCode {
    if let Some(manifest) = &args.manifest {
        return from_manifest(manifest, &args);
    }
    let read: Vec<Result<(SpecFile, Kernel), String>> =
        args.specs.iter().map(|path| read(path)).collect();
    let compiles = read.iter().filter(|r| r.is_ok()).count();
    let device = match open(args.device.as_deref(), compiles) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("kernelkit precompile: {e}");
            return ExitCode::from(2);
        }
    };
    let loaded: Vec<Result<Loaded, String>> = read
        .into_iter()
        .map(|r| r.and_then(|(spec, kernel)| load(spec, kernel, &device)))
        .collect();
    let mut builder = Precompile::builder();
    if let Some(n) = args.workers {
        builder = builder.workers(n);
    }
    // Specs tuned below are compiled there, one variant per
    // configuration (in parallel); their own call may lack the tuned
    // template values.
    let tuned: Vec<bool> = args
        .specs
        .iter()
        .map(|path| args.tune && configs_of(&args, path).is_some())
        .collect();
    for (l, _) in loaded.iter().zip(&tuned).filter(|(_, t)| !**t) {
        if let Ok(l) = l {
            builder = builder.call(&l.spec.call(&l.kernel, &l.inputs));
        }
    }
    let handle = builder.start();
    let terminal = std::io::stderr().is_terminal();
    let mut last_done = 0;
    loop {
        let p = handle.wait_timeout(Duration::from_millis(100));
        if terminal {
            draw_bar(p.done, p.total, p.failed, p.elapsed);
        } else if p.done != last_done {
            eprintln!(
                "kernelkit precompile: {}/{} done ({:.2} s)",
                p.done,
                p.total,
                p.elapsed.as_secs_f64()
            );
        }
        last_done = p.done;
        if p.finished() {
            break;
        }
    }
    if terminal {
        eprintln!();
    }
    let report = handle.wait();
    let mut results = report.results.iter();
    let mut failed = 0;
    let mut slowest = Duration::ZERO;
    for ((path, l), tuned) in args.specs.iter().zip(&loaded).zip(&tuned) {
        let line = match l {
            Err(why) => {
                failed += 1;
                format!("FAILED: {why}")
            }
            Ok(_) if *tuned => "compiled while tuning (below)".to_string(),
            Ok(_) => match results.next() {
                Some(r) => {
                    slowest = slowest.max(r.time);
                    match &r.result {
                        Ok(()) => format!("ok {} ({:.3} s)", r.function, r.time.as_secs_f64()),
                        Err(e) => {
                            failed += 1;
                            format!("FAILED: {}", one_line(e))
                        }
                    }
                }
                None => "FAILED: no result".to_string(),
            },
        };
        println!("{}: {line}", path.display());
    }
    println!(
        "precompiled {} of {} specs on {} in {:.3} s (slowest single: {:.3} s)",
        args.specs.len() - failed,
        args.specs.len(),
        device.label(),
        report.elapsed.as_secs_f64(),
        slowest.as_secs_f64()
    );
    if args.tune {
        failed += tune_all(&args, &loaded, &device);
        println!("cache: {}", device.cache_stats().summary());
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The configurations file of `spec` under `--tune`: `--configs`, else
/// `SPEC.configs.json` if it exists.
fn configs_of(args: &Args, spec: &std::path::Path) -> Option<PathBuf> {
    match &args.configs {
        Some(c) => Some(c.clone()),
        None => Some(spec.with_extension("configs.json")).filter(|p| p.exists()),
    }
}

/// `--tune`: tunes each loaded spec that has configurations; prints one
/// line per spec; returns how many failed.
fn tune_all(args: &Args, loaded: &[Result<Loaded, String>], device: &Device) -> usize {
    let mut failed = 0;
    for (path, l) in args.specs.iter().zip(loaded) {
        let Ok(l) = l else { continue };
        let Some(configs) = configs_of(args, path) else {
            println!(
                "{}: not tuned (no {})",
                path.display(),
                path.with_extension("configs.json").display()
            );
            continue;
        };
        let tuning = match crate::tune::read_configs(&configs) {
            Ok(t) => t,
            Err(e) => {
                failed += 1;
                println!("{}: tune FAILED: {e}", path.display());
                continue;
            }
        };
        let mut call = l
            .spec
            .call(&l.kernel, &l.inputs)
            .on(device.default_stream());
        if let Some(grid) = l.spec.grid {
            call = call.grid(grid);
        }
        if let Some(v) = l.spec.init_value {
            call = call.init_value(v);
        }
        match tuning.record(&call) {
            Ok(record) => println!(
                "{}: tuned, chose {} among {} configurations",
                path.display(),
                record.choice,
                record.configs.len()
            ),
            Err(e) => {
                failed += 1;
                println!("{}: tune FAILED: {}", path.display(), one_line(&e));
            }
        }
    }
    failed
}

/// Reads a spec and builds its kernel (no device needed).
fn read(path: &std::path::Path) -> Result<(SpecFile, Kernel), String> {
    let spec = SpecFile::from_path(path).map_err(|e| e.to_string())?;
    let kernel = spec.kernel().map_err(|e| one_line(&e))?;
    Ok((spec, kernel))
}

/// Makes the arrays a spec's call needs (placeholders) on `device`.
fn load(spec: SpecFile, kernel: Kernel, device: &Device) -> Result<Loaded, String> {
    let inputs = spec.placeholder_inputs(device).map_err(|e| one_line(&e))?;
    Ok(Loaded {
        spec,
        kernel,
        inputs,
    })
}

/// The settings of a device that will compile `compiles` variants at once:
/// the environment's, with at most `compiles - 1` compile workers (one
/// compile runs here).
fn config_for(compiles: usize) -> Config {
    let mut config = Config::from_env();
    config.cuda.max_workers = config.cuda.max_workers.min(compiles.saturating_sub(1));
    config
}

/// Opens the device `name` (`cpu`, `cuda`, `cuda:N`; none: CUDA GPU 0 if
/// there is one, else the CPU) for `compiles` compiles.
fn open(name: Option<&str>, compiles: usize) -> Result<Device, Error> {
    let builder = || Device::builder().config(config_for(compiles));
    match name {
        None => builder().cuda(0).or_else(|_| builder().cpu()),
        Some("cpu") => builder().cpu(),
        Some("cuda") => builder().cuda(0),
        Some(other) => match other.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
            Some(n) => builder().cuda(n),
            // The library's own wording of a bad name.
            None => Device::from_name(other),
        },
    }
}

/// The first line of an error (a compile error carries the whole log).
fn one_line(e: &Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").to_string();
    match lines.count() {
        0 => first,
        n => format!("{first} (+{n} lines)"),
    }
}

/// `[#####.....] 5/16  1 failed  0.8 s`, redrawn in place.
fn draw_bar(done: usize, total: usize, failed: usize, elapsed: Duration) {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{}{}] {done}/{total}{}  {:.1} s ",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        if failed > 0 {
            format!("  {failed} failed")
        } else {
            String::new()
        },
        elapsed.as_secs_f64()
    );
    let _ = err.flush();
}

/// `--manifest`: every recorded variant, for every target, into a bundle.
fn from_manifest(manifest: &std::path::Path, args: &Args) -> ExitCode {
    use kernelkit::cache::bundle::SecretKey;
    use kernelkit::manifest::{precompile_to_bundle, BundleTargets};
    let (Some(out), Some(key_path)) = (&args.out, &args.signing_key) else {
        eprintln!("kernelkit precompile: --manifest needs --out and --signing-key");
        return ExitCode::from(2);
    };
    let key = match SecretKey::read(key_path) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("kernelkit precompile: {e}");
            return ExitCode::from(2);
        }
    };
    let cpu = match args.device.as_deref() {
        Some("cpu") if args.target.is_empty() => vec!["x86-64-v2".to_string()],
        Some("cpu") => args.target.clone(),
        None | Some("cuda") => Vec::new(),
        Some(other) => {
            eprintln!(
                "kernelkit precompile: with --manifest, --device is cpu or cuda, not {other}"
            );
            return ExitCode::from(2);
        }
    };
    if cpu.is_empty() && args.arch.is_empty() {
        eprintln!(
            "kernelkit precompile: name what to build: --arch sm_90a,... and/or --device cpu"
        );
        return ExitCode::from(2);
    }
    let targets = BundleTargets {
        cpu,
        cuda_archs: args.arch.clone(),
        ptx: args.ptx,
        workers: args.workers,
    };
    match precompile_to_bundle(manifest, &targets, out, &key) {
        Ok(r) => {
            for f in &r.failed {
                println!("FAILED {} on {}: {}", f.kernel, f.target, f.reason);
            }
            // kernelkit's strided copy rides along in every CUDA bundle.
            let builtins = if r.builtins.is_empty() {
                String::new()
            } else {
                format!(" (and kernelkit's {})", r.builtins.join(", "))
            };
            println!(
                "precompiled {} variants{builtins} for {} into {}: {} entries, {} failed, in \
                 {:.3} s ({}), signed by {}",
                r.variants,
                r.targets.join(", "),
                out.display(),
                r.entries,
                r.failed.len(),
                r.compile_time.as_secs_f64(),
                r.producer,
                key.public()
            );
            if r.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("kernelkit precompile: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workers_fit_the_number_of_compiles() {
        let one = config_for(1);
        assert_eq!(
            one.cuda.max_workers, 0,
            "a lone compile runs in this process"
        );
        let many = config_for(1000);
        assert_eq!(many.cuda.max_workers, Config::from_env().cuda.max_workers);
        assert_eq!(
            many.cuda.start_workers,
            Config::from_env().cuda.start_workers,
            "when workers start is the environment's (the library's default: on demand)"
        );
        assert!(config_for(3).cuda.max_workers <= 2);
    }
}
