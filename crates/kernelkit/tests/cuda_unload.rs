//! How a CUDA module that the bounded module cache let go is unloaded:
//! once the work queued before has finished (events recorded after its
//! launches, checked without waiting), never under queued work, and
//! without a call that would invalidate a CUDA graph that another thread
//! captures in the driver's global mode (PyTorch's default).
//!
//! On the stand-in driver of `tools/fakecuda` (`scripts/test.sh`): work can
//! be held queued there (its `fakecuda_hold_work` hook), and it aborts on a
//! `cuModuleUnload` of a module whose function has queued work; every call
//! the driver forbids during a capture fails and invalidates the capture.
//! On a GPU (`scripts/gpu-remote.sh unload`) the same tests run against the
//! real driver (work is not held there: kernels finish by themselves).
//! Without either, every test skips with the reason.

use cudarc::driver::sys;
use kernelkit::{Array, CacheMode, Call, DType, Device, Kernel, Stream};

#[path = "common/gpu.rs"]
mod on_gpu;
use on_gpu::{alone, foreign_stream, stand_in};

/// Every test of this file also runs against the stand-in driver
/// (`scripts/test.sh` selects the tests of every module named `standin`).
mod standin {
    use super::*;

    const N: usize = 256;

    fn add_kernel() -> Kernel {
        Kernel::builder("unload_add")
            .inputs(["inp"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + float(V);")
            .build()
            .unwrap()
    }

    /// A CUDA device that keeps one module loaded, or `None` (reason printed).
    fn bounded_gpu() -> Option<Device> {
        match Device::builder()
            .cache_mode(CacheMode::Memory)
            .max_loaded_modules(1)
            .cuda(0)
        {
            Ok(d) => Some(d),
            Err(e) => {
                println!("skipped: {e}");
                None
            }
        }
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

    /// The stand-in driver's hooks that hold launched work queued (absent
    /// from a real driver).
    struct Hold {
        lib: libloading::Library,
    }

    impl Hold {
        /// The hooks, if the loaded driver is the stand-in.
        fn find() -> Option<Hold> {
            // SAFETY: the driver library is loaded already (the device was
            // opened); loading it again only takes a reference.
            let lib = unsafe { libloading::Library::new("libcuda.so.1") }.ok()?;
            // SAFETY: a symbol lookup only.
            unsafe { lib.get::<unsafe extern "C" fn(i32)>(b"fakecuda_hold_work") }.ok()?;
            Some(Hold { lib })
        }

        /// Holds work launched from now on (`true`), or finishes all of it
        /// and stops holding (`false`).
        fn hold(&self, on: bool) {
            // SAFETY: the stand-in's `void fakecuda_hold_work(int)`.
            unsafe {
                let f = self
                    .lib
                    .get::<unsafe extern "C" fn(i32)>(b"fakecuda_hold_work")
                    .unwrap();
                f(on as i32);
            }
        }

        /// Finishes the work launched so far (later launches are held).
        fn complete(&self) {
            // SAFETY: the stand-in's `void fakecuda_complete_work(void)`.
            unsafe {
                let f = self
                    .lib
                    .get::<unsafe extern "C" fn()>(b"fakecuda_complete_work")
                    .unwrap();
                f();
            }
        }
    }

    /// A module evicted while a launch of it is still queued is not unloaded
    /// until that launch has finished: it waits (`pending_unloads`), and goes
    /// at the first cold path after its fence passed. On the stand-in the
    /// launches are held queued, and unloading under them would abort the
    /// process; on a GPU only the end state is checked (no timing).
    #[test]
    fn an_unload_waits_for_the_work_queued_before_it() {
        alone(|| {
            let Some(dev) = bounded_gpu() else { return };
            let hold = if stand_in(&dev) {
                Some(Hold::find().expect("the stand-in driver has fakecuda_hold_work"))
            } else {
                None
            };
            let stream = dev.new_stream().unwrap();
            let k = add_kernel();
            let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            let out = first(
                add(&k, &src, 1, &stream)
                    .output([N as i64], DType::F32)
                    .launch()
                    .unwrap(),
            );
            stream.synchronize().unwrap();
            let pending = |dev: &Device| dev.cache_stats().pending_unloads;
            assert_eq!(pending(&dev), 0);

            if let Some(h) = &hold {
                h.hold(true);
            }
            // V=1 queued (held on the stand-in), then V=2 loaded: V=1 is let
            // go while its launch is queued.
            add(&k, &src, 1, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            add(&k, &src, 2, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            let stats = dev.cache_stats();
            assert_eq!(stats.unloaded, 1, "{stats:?}");
            if hold.is_some() {
                assert_eq!(stats.pending_unloads, 1, "V=1 waits for its launch");
            }
            // A load reaps, but V=1's launch is still queued; V=2 joins it.
            add(&k, &src, 3, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            if hold.is_some() {
                assert_eq!(pending(&dev), 2, "nothing passed: both wait");
            }
            // The launches so far finish; V=3 is launched again (held); the
            // next load unloads V=1 and V=2, and lets V=3 go, whose second
            // launch is queued still.
            if let Some(h) = &hold {
                h.complete();
            }
            add(&k, &src, 3, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            add(&k, &src, 4, &stream)
                .output_into(&out)
                .launch()
                .unwrap();
            if hold.is_some() {
                assert_eq!(pending(&dev), 1, "V=3 waits, V=1 and V=2 went");
            }
            if let Some(h) = &hold {
                h.hold(false);
            }
            // A host wait reaps too.
            stream.synchronize().unwrap();
            let stats = dev.cache_stats();
            assert_eq!(stats.pending_unloads, 0, "{stats:?}");
            assert_eq!(stats.unloaded, 3, "{stats:?}");
            if hold.is_none() {
                assert_eq!(out.to_vec::<f32>().unwrap(), vec![5.0f32; N]);
            }
        });
    }

    /// While this thread captures a raw stream in the driver's global mode (as
    /// `torch.cuda.graph` does), another thread's calls load new variants and
    /// so evict and unload modules (one module kept): loads, unloads and the
    /// fences they record are made in the relaxed capture mode, nothing waits
    /// for the context, so the capture ends valid. (Before, each unload began
    /// with `cuCtxSynchronize`, which invalidates a capture from any thread.)
    /// Afterwards the modules that waited for a fence of the captured stream
    /// (asked of its next launch) are unloaded.
    #[test]
    fn unloads_on_another_thread_leave_a_global_capture_valid() {
        alone(|| {
            let Some(dev) = bounded_gpu() else { return };
            let (raw, stream) = foreign_stream(&dev);
            let k = add_kernel();
            let src = dev.array_from_slice(&[1.0f32; N], [N]).unwrap();
            // Work queued on the stream to be captured, before the capture.
            let y = first(
                add(&k, &src, 1, &stream)
                    .output([N as i64], DType::F32)
                    .launch()
                    .unwrap(),
            );
            let own = dev.new_stream().unwrap();
            let out = first(
                add(&k, &src, 100, &own)
                    .output([N as i64], DType::F32)
                    .launch()
                    .unwrap(),
            );
            own.synchronize().unwrap();
            let before = dev.cache_stats();

            // SAFETY: a live stream; global mode, as PyTorch's default.
            let r = unsafe {
                sys::cuStreamBeginCapture_v2(
                    raw,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
                )
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            let worker = {
                let (k, src, out) = (k.clone(), src.clone(), out.clone());
                std::thread::spawn(move || {
                    for v in 200..208 {
                        add(&k, &src, v, &own).output_into(&out).launch().unwrap();
                    }
                    own
                })
            };
            let own = worker.join().unwrap();
            let mut graph: sys::CUgraph = std::ptr::null_mut();
            // SAFETY: the stream this thread began capturing; writes a graph.
            let r = unsafe { sys::cuStreamEndCapture(raw, &mut graph) };
            assert_eq!(
                r,
                sys::CUresult::CUDA_SUCCESS,
                "the capture was invalidated"
            );
            if !graph.is_null() {
                // SAFETY: the graph this capture made, used no more.
                unsafe { sys::cuGraphDestroy(graph) };
            }
            let during = dev.cache_stats();
            assert!(
                during.unloaded >= before.unloaded + 8,
                "{before:?} {during:?}"
            );

            // The next launch on the captured stream records the fence that
            // the unloads asked of it; a host wait then unloads them all.
            add(&k, &src, 300, &stream)
                .output_into(&y)
                .launch()
                .unwrap();
            stream.synchronize().unwrap();
            own.synchronize().unwrap();
            let after = dev.cache_stats();
            assert_eq!(after.pending_unloads, 0, "{after:?}");
            if !stand_in(&dev) {
                assert_eq!(y.to_vec::<f32>().unwrap(), vec![301.0f32; N]);
                assert_eq!(out.to_vec::<f32>().unwrap(), vec![208.0f32; N]);
            }
            drop((y, out, src, own, stream));
            // SAFETY: every kernelkit object that used the stream is gone.
            unsafe { sys::cuStreamDestroy_v2(raw) };
        });
    }
}
