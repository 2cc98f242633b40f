//! What host work between two `cuLaunchKernel`s costs, on the machine it
//! runs on: a raw launch loop of a trivial kernel (the driver API alone, no
//! kernelkit), then the same loop with a known piece of host work between
//! the launches (arithmetic, memory touched, atomic read-modify-writes, heap
//! allocations, a mutex), each against that work's cost alone. If work
//! between launches costs more than alone, the driver and the work evict
//! each other's caches, and a dispatch path must touch less, not only run
//! fewer instructions.
//!
//! Run: `cargo run --release -p kernelkit-bench --features cuda --example
//! launch_probe`.

use std::ffi::{c_void, CString};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn ok(r: sys::CUresult, what: &str) -> Res<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what}: {r:?}").into())
    }
}

fn ptx(source: &str) -> Res<CString> {
    let src = CString::new(source)?;
    let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: plain NVRTC calls on a program this function owns.
    unsafe {
        let r = nvrtc::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            std::ptr::null(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        );
        if r != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            return Err(format!("nvrtcCreateProgram: {r:?}").into());
        }
        let r = nvrtc::nvrtcCompileProgram(prog, 0, std::ptr::null());
        if r != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            return Err(format!("nvrtcCompileProgram: {r:?}").into());
        }
        let mut n = 0usize;
        nvrtc::nvrtcGetPTXSize(prog, &mut n);
        let mut buf = vec![0u8; n];
        nvrtc::nvrtcGetPTX(prog, buf.as_mut_ptr().cast());
        nvrtc::nvrtcDestroyProgram(&mut prog);
        buf.truncate(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()));
        Ok(CString::new(buf)?)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Host work to put between launches.
struct Work {
    name: &'static str,
    run: Box<dyn FnMut()>,
}

/// Writes one word per cache line of a private `kb`-KiB block.
fn touch(name: &'static str, kb: usize) -> Work {
    let mut mem = vec![0u64; kb * 1024 / 8];
    Work {
        name,
        run: Box::new(move || {
            for w in mem.iter_mut().step_by(8) {
                *w += 1;
            }
            black_box(&mem);
        }),
    }
}

fn work_items() -> Vec<Work> {
    let counter: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let mutex: &'static Mutex<u64> = Box::leak(Box::new(Mutex::new(0)));
    vec![
        Work {
            name: "nothing",
            run: Box::new(|| {}),
        },
        Work {
            name: "arith_200",
            run: Box::new(|| {
                let mut x = black_box(1u64);
                for _ in 0..200 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                black_box(x);
            }),
        },
        touch("touch_4kb", 4),
        touch("touch_32kb", 32),
        touch("touch_256kb", 256),
        Work {
            name: "rmw_x10",
            run: Box::new(move || {
                for _ in 0..10 {
                    black_box(counter).fetch_add(1, Ordering::Relaxed);
                }
            }),
        },
        Work {
            name: "malloc_free_x2",
            run: Box::new(|| {
                black_box(Box::new(black_box([1u64; 8])));
                black_box(Box::new(black_box([1u64; 4])));
            }),
        },
        Work {
            name: "mutex_x2",
            run: Box::new(move || {
                *black_box(mutex).lock().unwrap() += 1;
                *black_box(mutex).lock().unwrap() += 1;
            }),
        },
    ]
}

fn main() -> Res<()> {
    // SAFETY (this block): driver calls with valid handles this function
    // creates; the kernel reads `n` floats and writes `n` floats of two
    // allocations of that size.
    unsafe {
        ok(sys::cuInit(0), "cuInit")?;
        let mut dev = 0;
        ok(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet")?;
        let mut ctx = std::ptr::null_mut();
        ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "retain")?;
        ok(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
        let code = ptx(
            "extern \"C\" __global__ void k(const float* a, float* b, unsigned n) {\n\
             unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = a[i]; }",
        )?;
        let mut module = std::ptr::null_mut();
        ok(
            sys::cuModuleLoadData(&mut module, code.as_ptr().cast()),
            "cuModuleLoadData",
        )?;
        let mut f = std::ptr::null_mut();
        ok(
            sys::cuModuleGetFunction(&mut f, module, c"k".as_ptr()),
            "cuModuleGetFunction",
        )?;
        let mut stream = std::ptr::null_mut();
        ok(
            sys::cuStreamCreate(
                &mut stream,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
            ),
            "cuStreamCreate",
        )?;
        let (mut a, mut b) = (0u64, 0u64);
        ok(sys::cuMemAlloc_v2(&mut a, 1024), "alloc")?;
        ok(sys::cuMemAlloc_v2(&mut b, 1024), "alloc")?;
        let mut n = 256u32;
        let mut params: [*mut c_void; 3] = [
            (&mut a as *mut u64).cast(),
            (&mut b as *mut u64).cast(),
            (&mut n as *mut u32).cast(),
        ];
        let mut launch = || {
            let r = sys::cuLaunchKernel(
                f,
                1,
                1,
                1,
                256,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            );
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        };
        let iters = 2000u32;
        let mut items = work_items();
        for _ in 0..500 {
            launch();
        }
        ok(sys::cuStreamSynchronize(stream), "sync")?;
        let mut alone: Vec<Vec<f64>> = vec![Vec::new(); items.len()];
        let mut between: Vec<Vec<f64>> = vec![Vec::new(); items.len()];
        for _ in 0..9 {
            for (i, w) in items.iter_mut().enumerate() {
                let t = Instant::now();
                for _ in 0..iters {
                    (w.run)();
                }
                alone[i].push(t.elapsed().as_secs_f64() * 1e9 / iters as f64);
                ok(sys::cuStreamSynchronize(stream), "sync")?;
                let t = Instant::now();
                for _ in 0..iters {
                    launch();
                    (w.run)();
                }
                between[i].push(t.elapsed().as_secs_f64() * 1e9 / iters as f64);
                ok(sys::cuStreamSynchronize(stream), "sync")?;
            }
        }
        let raw = median(between[0].clone());
        println!("probe.raw_launch_ns = {raw:.0}");
        for (i, w) in items.iter().enumerate().skip(1) {
            let alone = median(alone[i].clone());
            let added = median(between[i].clone()) - raw;
            println!(
                "probe.{} alone_ns = {alone:.1}  added_to_launch_ns = {added:.1}  (x{:.2})",
                w.name,
                added / alone
            );
        }
    }
    Ok(())
}
