//! Compiles of different kernels run in parallel: a compiler wrapper logs
//! when each compile starts and ends, and the intervals of N distinct
//! kernels requested from N threads must overlap (no global compile lock).
//! The wrapper sleeps so that overlap does not depend on machine speed.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Barrier};

use kernelkit::{CacheMode, DType, Device, Kernel};

#[test]
fn distinct_kernels_compile_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("compiles.log");
    let wrapper = dir.path().join("cxx-wrapper");
    let mut f = std::fs::File::create(&wrapper).unwrap();
    writeln!(
        f,
        "#!/bin/sh\ncase \"$*\" in *-shared*) echo \"start $(date +%s%N)\" >> {log};; esac\n\
         sleep 0.5\nc++ \"$@\"; rc=$?\n\
         case \"$*\" in *-shared*) echo \"end $(date +%s%N)\" >> {log};; esac\nexit $rc",
        log = log.display()
    )
    .unwrap();
    drop(f);
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let device = Device::builder()
        .cache_mode(CacheMode::Memory)
        .compiler(wrapper.to_str().unwrap())
        .cpu()
        .unwrap();
    let n = 4;
    let barrier = Arc::new(Barrier::new(n));
    std::thread::scope(|s| {
        for index in 0..n {
            let (device, barrier) = (device.clone(), barrier.clone());
            s.spawn(move || {
                let kernel = Kernel::builder("overlap")
                    .inputs(["inp"])
                    .outputs(["out"])
                    .source(format!(
                        "uint i = thread_position_in_grid.x; out[i] = inp[i] + {index};"
                    ))
                    .build()
                    .unwrap();
                let x = device.array_from_slice(&[1i32; 4], [4]).unwrap();
                barrier.wait();
                let out = kernel
                    .call([&x])
                    .output([4], DType::I32)
                    .grid([4, 1, 1])
                    .launch()
                    .unwrap();
                assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![1 + index as i32; 4]);
            });
        }
    });
    assert_eq!(device.cache_stats().compiles, n as u64);
    let text = std::fs::read_to_string(&log).unwrap();
    let stamps = |tag: &str| -> Vec<u128> {
        text.lines()
            .filter_map(|l| l.strip_prefix(tag))
            .map(|t| t.trim().parse().unwrap())
            .collect()
    };
    let (starts, ends) = (stamps("start "), stamps("end "));
    assert_eq!(starts.len(), n, "log:\n{text}");
    assert_eq!(ends.len(), n, "log:\n{text}");
    // Every compile started before any compile ended: all N overlapped.
    assert!(
        starts.iter().max() < ends.iter().min(),
        "compiles ran one after another:\n{text}"
    );
}
