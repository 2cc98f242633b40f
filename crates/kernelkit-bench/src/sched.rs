//! How long the calling thread has waited for a CPU, from the scheduler's
//! own accounting (Linux: `/proc/thread-self/schedstat`).
//!
//! On a machine shared with other work, N benchmark threads may not get N
//! CPUs; a thread that is ready but not running shows up here, so a reader
//! can tell a scaling figure that measured contention from one that
//! measured a busy machine.

/// Nanoseconds the calling thread has spent runnable but not running, since
/// it started; `None` where the system does not say.
pub(crate) fn waited_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    // "<ns on a CPU> <ns waiting on a run queue> <time slices>"
    stat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn waiting_time_never_goes_back() {
        if let Some(a) = super::waited_ns() {
            std::thread::yield_now();
            let b = super::waited_ns().expect("read once, readable again");
            assert!(b >= a);
        }
    }
}
