//! Calls on a stream that another library captures into a CUDA graph (a raw
//! `cuStreamBeginCapture`, as PyTorch's `torch.cuda.graph` does): a warm
//! variant writing into given outputs is captured like any kernel node; a
//! cold variant, an output kernelkit would allocate, a host wait are typed
//! errors raised before anything reaches the stream, so the capture stays
//! valid (ending it succeeds: the driver invalidates a capture on any call
//! it forbids).
//!
//! On the stand-in driver of `tools/fakecuda` (`scripts/test.sh`), which
//! fails and invalidates the capture on each forbidden call (synchronize,
//! query, `cuMemAlloc`, module load), the errors and the capture's validity
//! are checked; kernels do not run there. On a GPU (`scripts/gpu-remote.sh
//! capture`) the graph is also instantiated and replayed 1,000 times with
//! new input values written between replays, and every result is checked.
//! Without either, every test skips with the reason.

use cudarc::driver::sys;
use kernelkit::{Array, CacheMode, Call, CallError, DType, Device, Error, Kernel, Stream};

#[path = "common/gpu.rs"]
mod on_gpu;
use on_gpu::{alone, gpu, stand_in};

const N: usize = 256;

fn add_kernel() -> Kernel {
    Kernel::builder("capture_add")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + float(V);")
        .build()
        .unwrap()
}

/// `out[i] = base[0] * i`: writes new input values between replays.
fn ramp_kernel() -> Kernel {
    Kernel::builder("capture_ramp")
        .inputs(["base"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = base[0] * float(i);")
        .build()
        .unwrap()
}

/// A raw stream of the current context, as another library makes it, and
/// kernelkit's stream over it. The caller destroys the raw stream after
/// every kernelkit object using it is gone.
fn foreign_stream(device: &Device) -> (sys::CUstream, Stream) {
    let mut raw: sys::CUstream = std::ptr::null_mut();
    // SAFETY: the device was opened on this thread, so its context is
    // current; writes one stream handle.
    let r = unsafe {
        sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
    };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    // SAFETY: `raw` is a live stream of the device's context, destroyed by
    // the caller only after the returned stream and its arrays are gone.
    let stream = unsafe { Stream::from_raw_cuda(device, raw.cast()) }.unwrap();
    (raw, stream)
}

fn begin(raw: sys::CUstream) {
    // SAFETY: a live stream; global mode, as PyTorch's default.
    let r = unsafe {
        sys::cuStreamBeginCapture_v2(raw, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
    };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
}

/// Ends the capture: the driver's answer (an invalidated capture fails).
fn end(raw: sys::CUstream) -> (sys::CUresult, sys::CUgraph) {
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: a stream this test began capturing; writes one graph handle.
    let r = unsafe { sys::cuStreamEndCapture(raw, &mut graph) };
    (r, graph)
}

fn capturing_error(result: kernelkit::Result<kernelkit::Outputs>) -> String {
    match result {
        Err(Error::Call(e @ CallError::Capturing { .. })) => e.to_string(),
        Err(other) => panic!("expected CallError::Capturing, got {other}"),
        Ok(_) => panic!("expected CallError::Capturing, the call was accepted"),
    }
}

/// Under a capture: a cold variant, an output kernelkit would allocate, a
/// strided input it would copy and (on another stream) an input the
/// captured stream produced are refused with typed errors naming the
/// kernel (and the argument); a warm call into a given output is accepted;
/// the stream reports the capture; ending the capture succeeds (no call the
/// driver forbids was made).
#[test]
fn refused_calls_leave_the_capture_valid() {
    alone(|| {
        let Some(dev) = gpu() else { return };
        let (raw, stream) = foreign_stream(&dev);
        refused_calls_on(&dev, &stream, raw);
        drop(stream);
        // SAFETY: every kernelkit object that used the stream is gone
        // (the thread's spare output skips raw foreign streams).
        unsafe { sys::cuStreamDestroy_v2(raw) };
    });
}

/// `k` on `x` with template value `v`, on `stream`, over `N` threads.
fn add<'a>(k: &'a Kernel, x: &'a Array, v: i32, stream: &'a Stream) -> Call<'a> {
    k.call([x])
        .template("V", v)
        .grid([N as u64, 1, 1])
        .on(stream)
}

fn first(outputs: kernelkit::Outputs) -> Array {
    outputs.into_iter().next().unwrap()
}

fn refused_calls_on(dev: &Device, stream: &Stream, raw: sys::CUstream) {
    let k = add_kernel();
    let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
    // Inputs and outputs produced on the captured stream (no host wait),
    // the variant V=1 compiled and loaded before the capture.
    let x = first(
        add(&k, &src, 1, stream)
            .output([N as i64], DType::F32)
            .launch()
            .unwrap(),
    );
    let y = first(
        add(&k, &x, 1, stream)
            .output([N as i64], DType::F32)
            .launch()
            .unwrap(),
    );
    let wide = dev.array_from_slice(&[0.0f32; 2 * N], [N, 2]).unwrap();
    let wide = add(&k, &wide, 1, stream).grid([2 * N as u64, 1, 1]);
    let wide = first(wide.output([N as i64, 2], DType::F32).launch().unwrap());
    let strided = wide.transpose();
    assert!(!stream.capturing().unwrap());

    begin(raw);
    assert!(stream.capturing().unwrap());
    let cold = capturing_error(add(&k, &x, 2, stream).output_into(&y).launch());
    assert!(
        cold.contains("kernel `capture_add`") && cold.contains("compile it before capture"),
        "{cold}"
    );
    let alloc = add(&k, &x, 1, stream).output([N as i64], DType::F32);
    let alloc = capturing_error(alloc.launch());
    assert!(
        alloc.contains("kernel `capture_add`") && alloc.contains("output `out`"),
        "{alloc}"
    );
    let copy = add(&k, &strided, 1, stream).grid([2 * N as u64, 1, 1]);
    let copy = capturing_error(copy.output([2, N as i64], DType::F32).launch());
    assert!(copy.contains("input `inp`"), "{copy}");
    // A call on a stream that is not captured, whose input was produced on
    // the captured one: waiting for it would synchronize the capture.
    let own = dev.new_stream().unwrap();
    let across = add(&k, &x, 1, &own).output([N as i64], DType::F32);
    let across = capturing_error(across.launch());
    assert!(
        across.contains("input `inp`") && across.contains("another stream"),
        "{across}"
    );
    // The warm call: captured.
    add(&k, &x, 1, stream).output_into(&y).launch().unwrap();
    let (r, graph) = end(raw);
    assert_eq!(
        r,
        sys::CUresult::CUDA_SUCCESS,
        "the capture was invalidated"
    );
    assert!(!graph.is_null());
    assert!(!stream.capturing().unwrap());
    // SAFETY: the graph this capture made, used no more.
    unsafe { sys::cuGraphDestroy(graph) };
    // After the capture the cold variant compiles as usual.
    add(&k, &x, 2, stream).output_into(&y).launch().unwrap();
    stream.synchronize().unwrap();
}

/// A graph captured from warm kernelkit calls (two kernels in a chain,
/// outputs given) is instantiated and replayed 1,000 times; before each
/// replay new input values are written (by another kernelkit call on the
/// same stream, outside the graph); every result is right. GPU only:
/// kernels do not run on the stand-in.
#[test]
fn a_captured_graph_replays_with_new_inputs() {
    alone(|| {
        let Some(dev) = gpu() else { return };
        if stand_in(&dev) {
            println!("skipped: the stand-in driver runs no kernels");
            return;
        }
        let (raw, stream) = foreign_stream(&dev);
        let (add, ramp) = (add_kernel(), ramp_kernel());
        let grid = [N as u64, 1, 1];
        let base = dev.array_from_slice(&[0.0f32], [1]).unwrap();
        let x = ramp.call([&base]).grid(grid).output([N as i64], DType::F32);
        let x = x.on(&stream).launch().unwrap().into_iter().next().unwrap();
        let mid = add.call([&x]).template("V", 1).grid(grid).on(&stream);
        let mid = mid.output([N as i64], DType::F32).launch().unwrap();
        let mid = mid.into_iter().next().unwrap();
        let y = add.call([&mid]).template("V", 10).grid(grid).on(&stream);
        let y = y.output([N as i64], DType::F32).launch().unwrap();
        let y = y.into_iter().next().unwrap();

        begin(raw);
        add.call([&x])
            .template("V", 1)
            .grid(grid)
            .on(&stream)
            .output_into(&mid)
            .launch()
            .unwrap();
        add.call([&mid])
            .template("V", 10)
            .grid(grid)
            .on(&stream)
            .output_into(&y)
            .launch()
            .unwrap();
        let (r, graph) = end(raw);
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: a valid graph; writes one executable graph handle.
        let r = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);

        for round in 0..1000 {
            let scale = (round % 97) as f32 * 0.5 + 1.0;
            let b = dev.array_from_slice(&[scale], [1]).unwrap();
            ramp.call([&b])
                .grid(grid)
                .on(&stream)
                .output_into(&x)
                .launch()
                .unwrap();
            // SAFETY: an instantiated graph on a live stream of its context.
            let r = unsafe { sys::cuGraphLaunch(exec, raw) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            let got: Vec<f32> = y.to_vec().unwrap();
            for (i, g) in got.iter().enumerate() {
                let want = scale * i as f32 + 11.0;
                assert_eq!(*g, want, "round {round}, element {i}");
            }
        }
        // SAFETY: the handles this test made, used no more.
        unsafe {
            sys::cuGraphExecDestroy(exec);
            sys::cuGraphDestroy(graph);
        }
        stream.synchronize().unwrap();
        drop((x, mid, y, base, stream));
        // SAFETY: every kernelkit object that used the stream is gone.
        unsafe { sys::cuStreamDestroy_v2(raw) };
    });
}

/// A module whose function a capture launched is never unloaded by the
/// bounded module cache (the graph may replay it at any time): on a device
/// that keeps one module loaded, the captured variant survives three newer
/// ones and is called again without a reload, while the others are
/// unloaded; on a GPU the graph still replays right after the churn.
#[test]
fn a_captured_module_outlives_the_module_bound() {
    alone(|| {
        let dev = match Device::builder()
            .cache_mode(CacheMode::Memory)
            .max_loaded_modules(1)
            .cuda(0)
        {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: {e}");
                return;
            }
        };
        let (raw, stream) = foreign_stream(&dev);
        let k = add_kernel();
        let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
        let y = first(
            add(&k, &src, 1, &stream)
                .output([N as i64], DType::F32)
                .launch()
                .unwrap(),
        );
        begin(raw);
        add(&k, &src, 1, &stream).output_into(&y).launch().unwrap();
        let (r, graph) = end(raw);
        assert_eq!(
            r,
            sys::CUresult::CUDA_SUCCESS,
            "the capture was invalidated"
        );
        // Three newer variants through a cache bound to one module.
        for v in 2..5 {
            add(&k, &src, v, &stream).output_into(&y).launch().unwrap();
        }
        let before = dev.cache_stats();
        assert!(before.unloaded >= 2, "{before:?}");
        add(&k, &src, 1, &stream).output_into(&y).launch().unwrap();
        let after = dev.cache_stats();
        assert_eq!(
            after.reloads, 0,
            "the captured module was unloaded: {after:?}"
        );
        if !stand_in(&dev) {
            let mut exec: sys::CUgraphExec = std::ptr::null_mut();
            // SAFETY: `graph` is the capture's graph; writes one handle.
            let r = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            // Another value first, so the replay's write is seen.
            add(&k, &src, 3, &stream).output_into(&y).launch().unwrap();
            // SAFETY: a live executable graph and stream.
            let r = unsafe { sys::cuGraphLaunch(exec, raw) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            stream.synchronize().unwrap();
            assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0f32; N]);
            // SAFETY: the executable graph, used no more.
            unsafe { sys::cuGraphExecDestroy(exec) };
        }
        // SAFETY: the graph this capture made, used no more.
        unsafe { sys::cuGraphDestroy(graph) };
        stream.synchronize().unwrap();
        drop((y, src, stream));
        // SAFETY: every kernelkit object that used the stream is gone.
        unsafe { sys::cuStreamDestroy_v2(raw) };
    });
}
