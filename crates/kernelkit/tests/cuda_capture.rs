//! Calls on a stream that another library captures into a CUDA graph (a raw
//! `cuStreamBeginCapture`, as PyTorch's `torch.cuda.graph` does): a warm
//! variant is captured like any kernel node, its outputs written into given
//! arrays or allocated by kernelkit as graph allocations (allocation nodes
//! of the graph, never blocks of a cache); a cold variant, a host wait, and
//! an allocation the device cannot make under a capture (no memory pool)
//! are typed errors raised before anything reaches the stream, so the
//! capture stays valid (ending it succeeds: the driver invalidates a
//! capture on any call it forbids).
//!
//! On the stand-in driver of `tools/fakecuda` (`scripts/test.sh`), which
//! fails and invalidates the capture on each forbidden call (synchronize,
//! query, `cuMemAlloc`, module load, a free node of memory no allocation
//! node made) and never reuses a graph allocation's address, the errors,
//! the capture's validity and the outputs' addresses are checked; kernels
//! do not run there. On a GPU (`scripts/gpu-remote.sh capture`) the graphs
//! are also instantiated and replayed 1,000 times with new input values
//! written between replays, and every result is checked. Without either,
//! every test skips with the reason.

use cudarc::driver::sys;
use kernelkit::interop::dlpack;
use kernelkit::{Array, CacheMode, Call, CallError, DType, Device, Error, Kernel, Stream};

#[path = "common/gpu.rs"]
mod on_gpu;
use on_gpu::{alone, foreign_stream, gpu, stand_in};

/// Every test of this file also runs against the stand-in driver
/// (`scripts/test.sh` selects the tests of every module named `standin`).
mod standin {
    use super::*;

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

    /// `a[i] = inp[i] + 1`, `b[i] = inp[i] * 2`: one output given, one
    /// allocated.
    fn pair_kernel() -> Kernel {
        Kernel::builder("capture_pair")
            .inputs(["inp"])
            .outputs(["a", "b"])
            .source(
                "uint i = thread_position_in_grid.x; a[i] = inp[i] + 1.0f; b[i] = inp[i] * 2.0f;",
            )
            .build()
            .unwrap()
    }

    /// The device address of element 0 of `array` (through a DLPack export,
    /// deleted at once).
    fn addr(array: &Array) -> u64 {
        let tensor = dlpack::export(array).unwrap();
        // SAFETY: a live export of this test's, read and then deleted once.
        unsafe {
            let at = (*tensor).dl_tensor.data as u64 + (*tensor).dl_tensor.byte_offset;
            ((*tensor).deleter.unwrap())(tensor);
            at
        }
    }

    /// Instantiates `graph` (`flags`: `CUDA_GRAPH_INSTANTIATE_FLAG_*`).
    fn instantiate(graph: sys::CUgraph, flags: u64) -> sys::CUgraphExec {
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: a valid graph; writes one executable graph handle.
        let r = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        exec
    }

    /// Launches `exec` on `raw`: the driver's answer.
    fn launch_graph(exec: sys::CUgraphExec, raw: sys::CUstream) -> sys::CUresult {
        // SAFETY: a live executable graph and a live stream of its context.
        unsafe { sys::cuGraphLaunch(exec, raw) }
    }

    const AUTO_FREE_ON_LAUNCH: u64 =
        sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0 as u64;

    fn begin(raw: sys::CUstream) {
        // SAFETY: a live stream; global mode, as PyTorch's default.
        let r = unsafe {
            sys::cuStreamBeginCapture_v2(
                raw,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            )
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

    /// Under a capture: a cold variant, a strided input it would copy before
    /// its copy kernel was ever loaded, and (on another stream) an input the
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
        let copy = add(&k, &strided, 1, stream).grid([2 * N as u64, 1, 1]);
        let copy = capturing_error(copy.output([2, N as i64], DType::F32).launch());
        assert!(
            copy.contains("input `inp`") && copy.contains("strided-copy kernel is not loaded"),
            "{copy}"
        );
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

    /// Outputs that kernelkit allocates under a capture are graph allocations:
    /// on a kernelkit stream whose raw handle was handed out (so it both may
    /// be captured and keeps spares and cached blocks), calls under a raw
    /// capture allocate their outputs (one filled by `init_value`, one beside
    /// a given output, one dropped inside the capture: a free node) and copy a
    /// strided input (the copy kernel loaded before), and the capture stays
    /// valid. No output is the thread's spare or a cached block of the stream,
    /// and after the capture no ordinary output gets a graph allocation's
    /// address. On a GPU the graph is also launched once and every result
    /// read.
    #[test]
    fn kernelkit_outputs_under_capture_are_graph_allocations() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            let stream = dev.new_stream().unwrap();
            let raw: sys::CUstream = stream.raw_cuda().unwrap() as usize as sys::CUstream;
            let (k, pair) = (add_kernel(), pair_kernel());
            let n = [N as i64];
            let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            // Warm: the variants, the copy kernel (a strided input), a given
            // output for the pair kernel.
            let x = first(
                add(&k, &src, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            let wide = dev.array_from_slice(&[0.0f32; 2 * N], [N, 2]).unwrap();
            let wide = add(&k, &wide, 1, &stream).grid([2 * N as u64, 1, 1]);
            let wide = first(wide.output([N as i64, 2], DType::F32).launch().unwrap());
            let strided = wide.transpose();
            let warm = add(&k, &strided, 1, &stream).grid([2 * N as u64, 1, 1]);
            drop(warm.output([2, N as i64], DType::F32).launch().unwrap());
            let given = first(
                add(&k, &x, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            let grid = [N as u64, 1, 1];
            let pair_call = || pair.call([&x]).grid(grid).on(&stream).output_into(&given);
            drop(pair_call().output(n, DType::F32).launch().unwrap());
            // Two ordinary free blocks of the outputs' size: one in the
            // stream's cache, one the thread's spare.
            let (a, b) = (
                first(
                    add(&k, &x, 1, &stream)
                        .output(n, DType::F32)
                        .launch()
                        .unwrap(),
                ),
                first(
                    add(&k, &x, 1, &stream)
                        .output(n, DType::F32)
                        .launch()
                        .unwrap(),
                ),
            );
            let ordinary = [addr(&a), addr(&b)];
            drop((a, b));

            begin(raw);
            let y = first(
                add(&k, &x, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            let filled = add(&k, &x, 1, &stream).init_value(5.0);
            let filled = first(filled.output(n, DType::F32).launch().unwrap());
            let mid = first(
                add(&k, &x, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            let z = first(
                add(&k, &mid, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            drop(mid); // a free node: the graph frees it itself
            let copied = add(&k, &strided, 1, &stream).grid([2 * N as u64, 1, 1]);
            let copied = first(copied.output([2, N as i64], DType::F32).launch().unwrap());
            let both = pair_call().output(n, DType::F32).launch().unwrap();
            let mut both = both.into_iter();
            let (into, doubled) = (both.next().unwrap(), both.next().unwrap());
            assert_eq!(
                addr(&into),
                addr(&given),
                "the given output is written in place"
            );
            let (r, graph) = end(raw);
            assert_eq!(
                r,
                sys::CUresult::CUDA_SUCCESS,
                "the capture was invalidated"
            );
            assert!(!stream.capturing().unwrap());

            let graph_addrs = [
                addr(&y),
                addr(&filled),
                addr(&z),
                addr(&copied),
                addr(&doubled),
            ];
            for g in graph_addrs {
                assert!(
                    !ordinary.contains(&g),
                    "an output under the capture took an ordinary block ({g:#x})"
                );
            }
            if !stand_in(&dev) {
                // Launched once: the allocations are live, the results there.
                let exec = instantiate(graph, 0);
                assert_eq!(launch_graph(exec, raw), sys::CUresult::CUDA_SUCCESS);
                assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0f32; N]);
                assert_eq!(filled.to_vec::<f32>().unwrap(), vec![3.0f32; N]);
                assert_eq!(z.to_vec::<f32>().unwrap(), vec![4.0f32; N]);
                assert_eq!(copied.to_vec::<f32>().unwrap(), vec![2.0f32; 2 * N]);
                assert_eq!(doubled.to_vec::<f32>().unwrap(), vec![4.0f32; N]);
                assert_eq!(given.to_vec::<f32>().unwrap(), vec![3.0f32; N]);
                // SAFETY: the executable graph, used no more.
                unsafe { sys::cuGraphExecDestroy(exec) };
            } else {
                // The memory stays addressable after the capture.
                assert_eq!(y.to_vec::<f32>().unwrap().len(), N);
            }
            // Freed after the capture (real frees, in the stream's order); no
            // ordinary output gets their addresses while the graph lives.
            drop((y, filled, z, copied, doubled, into));
            for _ in 0..4 {
                let o = first(
                    add(&k, &x, 1, &stream)
                        .output(n, DType::F32)
                        .launch()
                        .unwrap(),
                );
                assert!(
                    !graph_addrs.contains(&addr(&o)),
                    "an ordinary output got a graph allocation's address"
                );
            }
            stream.synchronize().unwrap();
            // SAFETY: the graph this capture made, used no more.
            unsafe { sys::cuGraphDestroy(graph) };
        });
    }

    /// A graph whose output kernelkit allocated under the capture (and whose
    /// intermediate it allocated and freed inside the graph), instantiated
    /// with auto-free-on-launch, replays 1,000 times with new input values
    /// written between replays; the output array keeps its address and holds
    /// each launch's results. GPU only: kernels do not run on the stand-in.
    #[test]
    fn a_graph_with_kernelkit_outputs_replays_with_new_inputs() {
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
            let x = first(x.on(&stream).launch().unwrap());
            let step = |input: &Array, v: i32| {
                let call = add.call([input]).template("V", v).grid(grid).on(&stream);
                first(call.output([N as i64], DType::F32).launch().unwrap())
            };
            drop(step(&step(&x, 1), 10)); // warm both variants

            begin(raw);
            let mid = step(&x, 1);
            let y = step(&mid, 10);
            drop(mid);
            let (r, graph) = end(raw);
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            let exec = instantiate(graph, AUTO_FREE_ON_LAUNCH);
            let at = addr(&y);
            for round in 0..1000 {
                let scale = (round % 97) as f32 * 0.5 + 1.0;
                let b = dev.array_from_slice(&[scale], [1]).unwrap();
                let write = ramp.call([&b]).grid(grid).on(&stream).output_into(&x);
                write.launch().unwrap();
                assert_eq!(launch_graph(exec, raw), sys::CUresult::CUDA_SUCCESS);
                let got: Vec<f32> = y.to_vec().unwrap();
                for (i, g) in got.iter().enumerate() {
                    assert_eq!(*g, scale * i as f32 + 11.0, "round {round}, element {i}");
                }
                assert_eq!(addr(&y), at);
            }
            // The last launch's allocation, freed after it on its stream.
            drop(y);
            stream.synchronize().unwrap();
            // SAFETY: the handles this test made, used no more.
            unsafe {
                sys::cuGraphExecDestroy(exec);
                sys::cuGraphDestroy(graph);
            }
            drop((x, base, stream));
            // SAFETY: every kernelkit object that used the stream is gone.
            unsafe { sys::cuStreamDestroy_v2(raw) };
        });
    }

    /// CUDA's rules without auto-free-on-launch, as `kernel::call::capture`
    /// documents them: a graph whose kernelkit-allocated memory is all freed
    /// inside it (an intermediate dropped during the capture, the output given)
    /// replays any number of times; a graph whose output array outlives the
    /// capture launches once, refuses a second launch while the array lives
    /// (`CUDA_ERROR_INVALID_VALUE`), and launches again once the array was
    /// dropped (its free ordered on the stream). GPU only.
    #[test]
    fn without_auto_free_a_kept_output_is_dropped_before_the_next_launch() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            if stand_in(&dev) {
                println!("skipped: the stand-in driver runs no kernels");
                return;
            }
            let (raw, stream) = foreign_stream(&dev);
            let k = add_kernel();
            let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            let n = [N as i64];
            let out = first(
                add(&k, &src, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );

            // Everything kernelkit allocated is freed inside the graph.
            begin(raw);
            let mid = first(
                add(&k, &src, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            add(&k, &mid, 1, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            drop(mid);
            let (r, scratch) = end(raw);
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            let exec = instantiate(scratch, 0);
            for _ in 0..10 {
                assert_eq!(launch_graph(exec, raw), sys::CUresult::CUDA_SUCCESS);
            }
            assert_eq!(out.to_vec::<f32>().unwrap(), vec![3.0f32; N]);

            // The output outlives the capture.
            begin(raw);
            let y = first(
                add(&k, &src, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            let (r, kept) = end(raw);
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            let kept_exec = instantiate(kept, 0);
            let at = addr(&y);
            assert_eq!(launch_graph(kept_exec, raw), sys::CUresult::CUDA_SUCCESS);
            assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0f32; N]);
            assert_eq!(
                launch_graph(kept_exec, raw),
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                "a graph whose allocation is live launched again"
            );
            drop(y);
            assert_eq!(launch_graph(kept_exec, raw), sys::CUresult::CUDA_SUCCESS);
            // That launch's allocation belongs to no array: freed here.
            // SAFETY: the live graph allocation at `at`, freed once, after the
            // launch on the same stream.
            let r = unsafe { sys::cuMemFreeAsync(at, raw) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            stream.synchronize().unwrap();
            // SAFETY: the handles this test made, used no more.
            unsafe {
                sys::cuGraphExecDestroy(exec);
                sys::cuGraphExecDestroy(kept_exec);
                sys::cuGraphDestroy(scratch);
                sys::cuGraphDestroy(kept);
            }
            drop((out, src, stream));
            // SAFETY: every kernelkit object that used the stream is gone.
            unsafe { sys::cuStreamDestroy_v2(raw) };
        });
    }

    /// A device without stream-ordered memory pools cannot allocate under a
    /// capture (`cuMemAlloc` is forbidden there): an output kernelkit would
    /// allocate is a typed error naming the output and the reason, raised
    /// before anything is queued, and the capture stays valid. Runs where the
    /// driver has no pools: the stand-in with `FAKECUDA_NO_MEMORY_POOLS=1`
    /// (`scripts/test.sh`); skips elsewhere.
    #[test]
    pub(super) fn outputs_under_capture_are_refused_without_a_memory_pool() {
        alone(|| {
            let Some(dev) = gpu() else { return };
            // The allocator's part of the description: "cuMemAlloc" without
            // a pool.
            if !dev.description().contains("cuMemAlloc,") {
                println!("skipped: the device has a stream-ordered memory pool");
                return;
            }
            let (raw, stream) = foreign_stream(&dev);
            let k = add_kernel();
            let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            let n = [N as i64];
            let y = first(
                add(&k, &src, 1, &stream)
                    .output(n, DType::F32)
                    .launch()
                    .unwrap(),
            );
            begin(raw);
            let refused = capturing_error(add(&k, &src, 1, &stream).output(n, DType::F32).launch());
            assert!(
                refused.contains("kernel `capture_add`")
                    && refused.contains("output `out`")
                    && refused.contains("memory pool"),
                "{refused}"
            );
            add(&k, &src, 1, &stream).output_into(&y).launch().unwrap();
            let (r, graph) = end(raw);
            assert_eq!(
                r,
                sys::CUresult::CUDA_SUCCESS,
                "the capture was invalidated"
            );
            // SAFETY: the graph this capture made, used no more.
            unsafe { sys::cuGraphDestroy(graph) };
            stream.synchronize().unwrap();
            drop((y, src, stream));
            // SAFETY: every kernelkit object that used the stream is gone.
            unsafe { sys::cuStreamDestroy_v2(raw) };
        });
    }
}

/// Run against a stand-in GPU without stream-ordered memory pools
/// (`scripts/test.sh` selects the tests of every module named
/// `standin_no_memory_pools` and runs them with `FAKECUDA_NO_MEMORY_POOLS=1`).
mod standin_no_memory_pools {
    #[test]
    fn outputs_under_capture_are_refused_without_a_memory_pool() {
        super::standin::outputs_under_capture_are_refused_without_a_memory_pool();
    }
}
