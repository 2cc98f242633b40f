//! The one thread this process's NVRTC compiles run on.
//!
//! An NVRTC compile allocates tens of megabytes on the C heap and frees
//! them at its end. glibc's malloc gives each thread that allocates under
//! contention an arena of its own and keeps what a thread freed in that
//! arena for its next allocations. Run on the caller's thread, every
//! thread that ever compiled in this process keeps its own copy of the
//! compiler's peak, and resident memory grows with the number of threads
//! that compiled. Run here, that peak is kept once, whichever threads ask.
//!
//! It costs no parallelism: NVRTC runs one compile at a time per process
//! (compiles that would queue go to worker processes, `worker`), and a
//! hand-over is two channel messages against a compile of tens of
//! milliseconds.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send>;

/// The compile thread's queue: started at the first compile, it lives as
/// long as the process. `None` when the thread could not be started, or in
/// a child forked after it started, which has no such thread (then
/// compiles run on the caller's thread, as they would without it).
fn queue() -> Option<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Option<(u32, mpsc::Sender<Job>)>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (send, jobs) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("kernelkit-nvrtc".into())
                // NVRTC's front end recurses with the source's nesting; the
                // main thread's size, not a spawned thread's 2 MiB.
                .stack_size(8 << 20)
                .spawn(move || {
                    for job in jobs {
                        job();
                    }
                })
                .map_err(|e| {
                    tracing::warn!("no NVRTC thread ({e}): compiling on the calling threads")
                })
                .ok()
                .map(|_| (std::process::id(), send))
        })
        .as_ref()
        .filter(|(pid, _)| *pid == std::process::id())
        .map(|(_, send)| send)
}

/// Runs `compile` on the compile thread and returns its result (a panic
/// inside it is raised again here), waiting meanwhile.
pub(super) fn run<T: Send + 'static>(compile: impl FnOnce() -> T + Send + 'static) -> T {
    let Some(queue) = queue() else {
        return compile();
    };
    let (send, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        // The caller may be gone only if it panicked itself; nothing to tell.
        let _ = send.send(catch_unwind(AssertUnwindSafe(compile)));
    });
    if let Err(mpsc::SendError(job)) = queue.send(job) {
        // The thread is gone (it cannot end while the process runs, but a
        // compile must not fail for it): run the job here.
        job();
    }
    // Every job sends its answer before it is dropped (its channel holds
    // one answer, so the send never waits).
    match answer.recv() {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => unreachable!("a compile job ended without its answer"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_from_many_threads_run_on_one_thread_and_return_their_results() {
        let ids: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || {
                    run(move || (i * 2, std::thread::current().name().map(str::to_owned)))
                })
            })
            .map(|h| h.join().unwrap())
            .collect();
        for (i, (doubled, name)) in ids.into_iter().enumerate() {
            assert_eq!(doubled, i * 2);
            assert_eq!(name.as_deref(), Some("kernelkit-nvrtc"));
        }
    }

    #[test]
    fn a_panic_in_a_job_reaches_its_caller_and_the_thread_goes_on() {
        let caught = std::panic::catch_unwind(|| run(|| panic!("inside the compile")));
        let message = caught.unwrap_err();
        assert_eq!(message.downcast_ref::<&str>(), Some(&"inside the compile"));
        assert_eq!(run(|| 7), 7);
    }

    /// A child forked after the thread started has no compile thread: its
    /// compiles run on its own thread instead of waiting for ever.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_compiles_on_its_own_thread() {
        assert_eq!(run(|| 1), 1);
        // SAFETY: the child runs a job from one new thread and exits
        // without unwinding; an alarm ends it if the job never returns.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            unsafe { libc::alarm(10) };
            // From a thread of the child's own, as most compiles come.
            let ok = std::thread::spawn(|| {
                let here = std::thread::current().id();
                run(move || std::thread::current().id() == here)
            })
            .join()
            .unwrap_or(false);
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child's compile did not run on its thread (status {status:#x})"
        );
    }
}
