//! Properties of the hot path that the seed's memo promises: a memo hit
//! allocates nothing (here, per backend), and the public handles are
//! `Send + Sync` (`handles_are_send_and_sync` in `behaviour.rs`).
//!
//! The allocation count comes from this binary's global allocator, which
//! counts per thread, so tests running beside each other do not disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kernelkit::{DType, Device, Kernel};

/// Counts allocations made by the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; the counter is a
// thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// A memo hit on `device` makes no allocation, and returns the variant the
/// miss made.
pub fn a_memo_hit_allocates_nothing(device: Device) {
    let kernel = Kernel::builder("hit")
        .inputs(["a", "s"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = a[i] * s + V;")
        .build()
        .unwrap();
    let a = device.array_from_slice(&[1.0f32; 64], [64]).unwrap();
    let s = device.array_from_slice(&[2.0f32], []).unwrap();
    let variant = |k: &Kernel| {
        k.call([&a, &s])
            .template("V", 3)
            .template("T", DType::F16)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .variant_on(&device)
            .unwrap()
    };
    let first = variant(&kernel); // miss: generates and memoizes
    for _ in 0..3 {
        let before = allocations();
        let hit = variant(&kernel);
        let after = allocations();
        assert_eq!(after - before, 0, "a memo hit allocated");
        assert!(std::sync::Arc::ptr_eq(&first, &hit));
    }
    // Three variants in turn: a thread keeps two per kernel in front of the
    // memo, so each of these calls is answered by the memo itself (its
    // shard snapshot, the referenced bit, and the recent line it refills).
    let of = |v: i32| {
        kernel
            .call([&a, &s])
            .template("V", v)
            .template("T", DType::F16)
            .output([64], DType::F32)
            .grid([64, 1, 1])
            .variant_on(&device)
            .unwrap()
    };
    let built: Vec<_> = (10..13).map(of).collect();
    for round in 0..3 {
        for (i, v) in (10..13).enumerate() {
            let before = allocations();
            let hit = of(v);
            let after = allocations();
            assert_eq!(after - before, 0, "a memo hit allocated (round {round})");
            assert!(std::sync::Arc::ptr_eq(&built[i], &hit));
        }
    }
}
