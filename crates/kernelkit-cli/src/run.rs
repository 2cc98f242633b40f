//! `kernelkit run SPEC.json [--device cpu|cuda|cuda:N] [--out-dir DIR]`:
//! runs one kernel call from a spec file on real data and prints its
//! outputs, so a kernel can be tried, or checked against known results,
//! without writing a program.
//!
//! The spec is the one of `kernelkit source` plus the launch (`grid`,
//! `threadgroup`, `init_value`), the `data` of every input and optional
//! `views` (see [`kernelkit::spec_file`]). Output, on one line of stdout:
//!
//! ```json
//! {"device": "cpu", "kernel_name": "custom_kernel_basic_...",
//!  "outputs": {"out1": {"dtype": "float32", "shape": [2, 2], "data": [[9.3, 10.3], [11.3, 12.3]]}}}
//! ```
//!
//! With `--out-dir DIR`, each output is written to `DIR/NAME.npy` (the
//! folder is created if needed; see [`crate::out_dir`] for how files are
//! put in place) and its entry has `"file": "DIR/NAME.npy"` in place of
//! `"data"`. Any failure (spec, data, compile, launch, an output too large
//! to print) exits with code 2 and one line on stderr, then the compiler's
//! log if any; no input makes it abort or panic.
//!
//! With `--check-bounds`, the kernel runs with bounds checks
//! ([`kernelkit::KernelBuilder::check_bounds`]); an access out of bounds
//! fails the run with exit code [`OUT_OF_BOUNDS`](crate::failure::OUT_OF_BOUNDS) (3) and one line on
//! stderr naming the kernel, the argument, the index and the thread.
//!
//! With `--timeout SECONDS`, a kernel that has not finished that long after
//! its launch (compiling is not counted) fails the run with exit code
//! [`TIMED_OUT`] (124) and one line on stderr. A GPU kernel cannot be
//! stopped: the device is marked unusable and the process exits. A CPU
//! kernel runs on one of this process's threads, which cannot be killed
//! either: the process exits without waiting for it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use kernelkit::spec_file::{Port, SpecError, SpecFile};
use kernelkit::{Array, Device, DeviceError};
use kernelkit_cli::output;

use crate::failure::{print_exact, CommandError};
use crate::out_dir::Staged;

/// Exit code of a run whose kernel did not finish within `--timeout`.
pub const TIMED_OUT: u8 = 124;

/// How long, past `--timeout`, the command waits for a GPU's own timeout
/// report before it gives up on the thread that launched the kernel.
const REPORT_GRACE: Duration = Duration::from_secs(2);

/// Arguments of `kernelkit run`.
#[derive(clap::Args, Clone)]
#[command(after_long_help = crate::spec_help::HELP)]
pub struct Args {
    /// The spec file (JSON): name, inputs, outputs, source, (header,
    /// ensure_row_contiguous, atomic_outputs, template), grid, (threadgroup,
    /// init_value), data, (views).
    spec: PathBuf,
    /// `cpu`, `cuda` or `cuda:N` (default: CUDA GPU 0 if there is one, else
    /// the CPU).
    #[arg(long)]
    device: Option<String>,
    /// Write each output to DIR/NAME.npy instead of printing its data.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Fail (exit code 124) if the kernel has not finished SECONDS after
    /// its launch; the device is then unusable and the process exits.
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Run the kernel with bounds checks: an access outside an argument's
    /// view, or a write past the end of an output, fails the run with exit
    /// code 3 naming the argument, the index and the thread
    /// (docs/bounds-checks.md). Default: `KERNELKIT_CHECK_BOUNDS`.
    #[arg(long)]
    check_bounds: bool,
}

/// What the thread that runs the call tells the command.
enum Progress {
    /// Compiled and about to launch: the timeout starts now.
    Launching(String),
    /// Finished: the JSON line to print, or the failure.
    Done(Result<String, CommandError>),
}

/// Runs `kernelkit run`.
pub fn main(args: Args) -> ExitCode {
    let Some(seconds) = args.timeout else {
        return finish(run(&args, None));
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e9) {
        return CommandError::Unsupported(format!(
            "--timeout {seconds}: expected a number of seconds above 0"
        ))
        .report("run");
    }
    let limit = Duration::from_secs_f64(seconds);
    let (tx, rx) = mpsc::channel();
    let worker = args.clone();
    let spawned = std::thread::Builder::new()
        .name("kernelkit-run".into())
        .spawn(move || {
            let progress = tx.clone();
            let result = run(&worker, Some((limit, &progress)));
            let _ = tx.send(Progress::Done(result));
        });
    if let Err(e) = spawned {
        return CommandError::Unsupported(format!("cannot start the run's thread: {e}"))
            .report("run");
    }
    let mut device = String::from("the device");
    loop {
        // Compiling has its own bound (KERNELKIT_COMPILE_TIMEOUT): wait for
        // the launch, then for at most the timeout.
        let message = match rx.recv() {
            Ok(Progress::Launching(label)) => {
                device = label;
                rx.recv_timeout(limit + REPORT_GRACE)
            }
            Ok(done) => Ok(done),
            Err(_) => Err(mpsc::RecvTimeoutError::Disconnected),
        };
        match message {
            Ok(Progress::Done(result)) => return finish(result),
            Ok(Progress::Launching(_)) => continue,
            Err(mpsc::RecvTimeoutError::Timeout) => timed_out(&format!(
                "kernelkit run: the kernel did not finish within {seconds} s on {device}; a kernel \
                 cannot be stopped, so the process exits without it"
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return CommandError::Unsupported(
                    "the run's thread stopped without a result".into(),
                )
                .report("run")
            }
        }
    }
}

/// Prints the result line or reports the failure.
fn finish(result: Result<String, CommandError>) -> ExitCode {
    match result.and_then(|text| print_exact(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CommandError::Kernel(kernelkit::Error::Device(e @ DeviceError::TimedOut { .. }))) => {
            timed_out(&format!("kernelkit run: {e}"))
        }
        Err(e) => e.report("run"),
    }
}

/// Reports a timeout and ends the process at once: the kernel still runs,
/// and tearing down its device (or joining its thread) would wait for it.
fn timed_out(line: &str) -> ! {
    eprintln!("{line}");
    std::process::exit(i32::from(TIMED_OUT))
}

/// Runs the call and returns the JSON line to print. With a timeout, says
/// when the launch starts and waits at most that long for a GPU to finish.
fn run(
    args: &Args,
    timeout: Option<(Duration, &mpsc::Sender<Progress>)>,
) -> Result<String, CommandError> {
    let spec = SpecFile::from_path(&args.spec)?;
    let grid = spec.grid.ok_or(SpecError::Missing {
        field: "grid",
        why: " (required by `kernelkit run`)",
    })?;
    let mut builder = spec.builder();
    if args.check_bounds {
        builder = builder.check_bounds(true);
    }
    let kernel = builder.build()?;
    let device = match &args.device {
        Some(name) => Device::from_name(name)?,
        None => Device::default_device()?,
    };
    let inputs = spec.input_arrays(&device)?;
    // The inputs were uploaded on the default stream: run there too, so the
    // launch is ordered after the uploads on every backend.
    let mut call = spec
        .call(&kernel, &inputs)
        .grid(grid)
        .on(device.default_stream());
    if let Some(tg) = spec.threadgroup {
        call = call.threadgroup(tg);
    }
    if let Some(v) = spec.init_value {
        call = call.init_value(v);
    }
    let launch = call.prepare()?;
    if let Some((_, progress)) = timeout {
        let _ = progress.send(Progress::Launching(device.label().to_string()));
    }
    let outputs = launch.run()?;
    if let Some((limit, _)) = timeout {
        device.default_stream().synchronize_timeout(limit)?;
    }
    render(
        device.label(),
        launch.variant().name(),
        &spec.outputs,
        &outputs,
        args.out_dir.as_deref(),
    )
}

/// The result line: device, kernel name, and per output its dtype, shape
/// and data (or the `.npy` file it was written to, under `out_dir`).
fn render(
    device: &str,
    kernel_name: &str,
    ports: &[Port],
    outputs: &[Array],
    out_dir: Option<&Path>,
) -> Result<String, CommandError> {
    let mut staged = out_dir.map(Staged::new).transpose()?;
    let mut json = String::new();
    json.push_str("{\"device\": ");
    output::string(&mut json, device);
    json.push_str(", \"kernel_name\": ");
    output::string(&mut json, kernel_name);
    json.push_str(", \"outputs\": {");
    for (i, (port, array)) in ports.iter().zip(outputs).enumerate() {
        if i > 0 {
            json.push_str(", ");
        }
        let bytes = array.to_bytes()?;
        output::string(&mut json, &port.name);
        json.push_str(": {\"dtype\": ");
        output::string(&mut json, port.dtype.name());
        json.push_str(&format!(", \"shape\": {:?}", array.shape()));
        match staged.as_mut() {
            Some(staged) => {
                let path = staged.add(&port.name, &bytes, port.dtype, array.shape())?;
                json.push_str(", \"file\": ");
                output::string(&mut json, &path.display().to_string());
            }
            None => {
                // Room for the whole text first: an output too large to
                // print is an error, not an abort midway.
                let room = output::text_bound(port.dtype, array.shape())
                    .filter(|&n| json.try_reserve(n).is_ok());
                if room.is_none() {
                    return Err(CommandError::Write {
                        what: format!("output `{}` as JSON", port.name),
                        reason: format!(
                            "{} elements are too many to hold as text; write it with --out-dir",
                            bytes.len() / port.dtype.size()
                        ),
                    });
                }
                json.push_str(", \"data\": ");
                output::write_nested(&mut json, &bytes, port.dtype, array.shape());
            }
        }
        json.push('}');
    }
    json.push_str("}}\n");
    if let Some(staged) = staged {
        staged.publish()?;
    }
    Ok(json)
}
