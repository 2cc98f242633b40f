//! A pool of worker processes that answer one frame with one frame.
//!
//! The pool knows nothing about compiling: it is given how to start a worker
//! (a command), the handshake (a frame to send, a check of the answer), and
//! for each job a request frame, a decoder of the answer and a local
//! function that does the same job in this process. [`Pool::run`] always
//! returns the job's result; the pool itself never fails a job.
//!
//! Where a job runs, first choice first:
//! 1. in this process, if no other job of this pool runs here now (the
//!    compiler this pool stands in for serializes inside one process, so a
//!    second local job would only queue; the first job of a quiet program
//!    therefore pays nothing for the pool);
//! 2. on an idle worker;
//! 3. on a worker this thread starts, while fewer than `max` are alive;
//! 4. else the thread waits for one of the above.
//!
//! Workers can also be started ahead ([`Pool::start_ahead`]): in background
//! threads, all at once, each greeted and then given the launcher's warm-up
//! job (so the compiler's first-use costs are paid before a real job comes),
//! then left idle. Jobs meanwhile plan as above; a worker still starting
//! counts as alive, so a job that finds none idle and the most alive waits
//! for the first one ready.
//!
//! A worker that cannot be started or fails its handshake turns the pool
//! off (every later job runs locally). A worker that dies, sends a broken
//! frame or an answer the decoder refuses is killed and its job runs
//! locally; after [`MAX_DEATHS`] such deaths the pool turns off too.

use std::io::{BufReader, BufWriter};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::frame::{read_frame, write_frame};

/// Worker deaths after which the pool stops starting workers.
pub(crate) const MAX_DEATHS: u64 = 4;

/// Checks the body of a worker's handshake answer.
pub(crate) type Accept = Box<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// How the pool starts and greets a worker.
pub(crate) struct Launcher {
    /// A fresh command for one worker (stdin, stdout are set by the pool).
    pub(crate) command: Box<dyn Fn() -> Command + Send + Sync>,
    /// The body of the first frame sent to a new worker.
    pub(crate) hello: Vec<u8>,
    /// Checks the body of the worker's first answer.
    pub(crate) accept: Accept,
    /// A job sent to a worker started ahead, after the handshake (its
    /// answer is read and dropped); `None`: none.
    pub(crate) warm: Option<Vec<u8>>,
}

/// What happened so far (for tests).
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolStats {
    /// Workers started and greeted successfully.
    pub(crate) started: u64,
    /// Jobs answered by a worker.
    pub(crate) remote: u64,
    /// Jobs run in this process.
    pub(crate) local: u64,
    /// Workers killed after a failure (death, broken frame, refused answer).
    pub(crate) deaths: u64,
}

struct State {
    idle: Vec<Worker>,
    /// Workers alive or starting (idle ones included).
    alive: usize,
    /// A job runs in this process.
    local_busy: bool,
    /// Why the pool was turned off.
    off: Option<String>,
}

/// See the module documentation.
pub(crate) struct Pool {
    launcher: Launcher,
    max: usize,
    state: Mutex<State>,
    changed: Condvar,
    started: AtomicU64,
    remote: AtomicU64,
    local: AtomicU64,
    deaths: AtomicU64,
    /// Set by the first job ([`Pool::first_job`]).
    had_job: AtomicBool,
}

/// Where one job goes.
enum Plan {
    /// Here; `slot`: holding the local slot (not when the pool is off).
    Local {
        slot: bool,
    },
    Worker(Worker),
    Start,
}

impl Pool {
    /// A pool of at most `max` workers (none is started before it is needed).
    pub(crate) fn new(launcher: Launcher, max: usize) -> Pool {
        Pool {
            launcher,
            max,
            state: Mutex::new(State {
                idle: Vec::new(),
                alive: 0,
                local_busy: false,
                off: None,
            }),
            changed: Condvar::new(),
            started: AtomicU64::new(0),
            remote: AtomicU64::new(0),
            local: AtomicU64::new(0),
            deaths: AtomicU64::new(0),
            had_job: AtomicBool::new(false),
        }
    }

    /// True once: for the pool's first job (the moment a pool that starts
    /// its workers at the first compile starts them).
    pub(crate) fn first_job(&self) -> bool {
        !self.had_job.swap(true, Ordering::Relaxed)
    }

    /// Starts workers in background threads until `count` are alive (at
    /// most the pool's most), each greeted and warmed up, then idle.
    /// Returns at once; a worker that cannot start turns the pool off, as
    /// on demand. Returns how many starts were begun.
    pub(crate) fn start_ahead(self: &Arc<Self>, count: usize) -> usize {
        let begun = {
            let mut state = self.lock();
            if state.off.is_some() {
                return 0;
            }
            let n = count.min(self.max).saturating_sub(state.alive);
            state.alive += n;
            n
        };
        for _ in 0..begun {
            let pool = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("kernelkit-worker-start".into())
                .spawn(move || pool.start_one_ahead());
            if spawned.is_err() {
                // No thread: this slot is given back (jobs start it).
                self.lock().alive -= 1;
                self.changed.notify_all();
            }
        }
        begun
    }

    /// One start of [`Pool::start_ahead`] (its slot is counted alive).
    fn start_one_ahead(&self) {
        let started = Worker::start(&self.launcher).and_then(|mut worker| {
            if let Some(warm) = &self.launcher.warm {
                worker
                    .exchange(warm)
                    .map_err(|e| format!("the warm-up job failed: {e}"))?;
            }
            Ok(worker)
        });
        let mut state = self.lock();
        match started {
            Ok(worker) => {
                let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::info!(
                    "compile worker {n} started ahead (pid {})",
                    worker.child.id()
                );
                if state.off.is_some() {
                    state.alive -= 1;
                } else {
                    state.idle.push(worker);
                }
            }
            Err(reason) => {
                tracing::warn!("compile workers are off, compiling in this process: {reason}");
                state.alive -= 1;
                state.off.get_or_insert(reason);
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts so far.
    #[cfg(test)]
    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            started: self.started.load(Ordering::Relaxed),
            remote: self.remote.load(Ordering::Relaxed),
            local: self.local.load(Ordering::Relaxed),
            deaths: self.deaths.load(Ordering::Relaxed),
        }
    }

    /// Why the pool is off, if it is.
    pub(crate) fn off_reason(&self) -> Option<String> {
        self.lock().off.clone()
    }

    /// Runs one job (see the module documentation): `request` goes to a
    /// worker whose answer `decode` turns into the result, or `local`
    /// computes it here. `decode` returning `None` means the answer is
    /// unusable: the worker is killed and the job runs locally.
    pub(crate) fn run<T>(
        &self,
        request: &[u8],
        prefer_idle: bool,
        decode: impl FnOnce(&[u8]) -> Option<T>,
        local: impl FnOnce() -> T,
    ) -> T {
        match self.plan(prefer_idle) {
            Plan::Local { slot } => {
                tracing::debug!("compile job: in this process");
                self.run_local(local, slot)
            }
            Plan::Worker(worker) => {
                tracing::debug!("compile job: on worker pid {}", worker.child.id());
                self.run_on(worker, request, decode, local)
            }
            Plan::Start => match Worker::start(&self.launcher) {
                Ok(worker) => {
                    let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
                    tracing::info!("compile worker {n} started (pid {})", worker.child.id());
                    self.run_on(worker, request, decode, local)
                }
                Err(reason) => {
                    tracing::warn!("compile workers are off, compiling in this process: {reason}");
                    let mut state = self.lock();
                    state.alive -= 1;
                    state.off.get_or_insert(reason);
                    drop(state);
                    self.changed.notify_all();
                    self.run_local(local, false)
                }
            },
        }
    }

    /// Picks where the job runs, waiting while nothing is free;
    /// `prefer_idle`: an idle worker before this process (the one idle
    /// longest, so that jobs go round the workers).
    fn plan(&self, prefer_idle: bool) -> Plan {
        let mut state = self.lock();
        loop {
            if state.off.is_some() {
                return Plan::Local { slot: false };
            }
            if prefer_idle && !state.idle.is_empty() {
                return Plan::Worker(state.idle.remove(0));
            }
            if !state.local_busy {
                state.local_busy = true;
                return Plan::Local { slot: true };
            }
            if let Some(worker) = state.idle.pop() {
                return Plan::Worker(worker);
            }
            if state.alive < self.max {
                state.alive += 1;
                return Plan::Start;
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Runs `local`; `slot` says this job holds the local slot (it may also
    /// run without it, as a fallback, queueing inside the compiler).
    fn run_local<T>(&self, local: impl FnOnce() -> T, slot: bool) -> T {
        let _release = slot.then(|| LocalSlot(self));
        self.local.fetch_add(1, Ordering::Relaxed);
        local()
    }

    /// Takes the local slot (waiting for it) until the guard drops, so that
    /// jobs run meanwhile go to workers.
    #[cfg(test)]
    pub(crate) fn hold_local_slot(&self) -> impl Drop + '_ {
        let mut state = self.lock();
        while state.local_busy {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.local_busy = true;
        LocalSlot(self)
    }

    fn run_on<T>(
        &self,
        mut worker: Worker,
        request: &[u8],
        decode: impl FnOnce(&[u8]) -> Option<T>,
        local: impl FnOnce() -> T,
    ) -> T {
        let answer = worker.exchange(request);
        let failure = match answer {
            Ok(body) => match decode(&body) {
                Some(result) => {
                    self.remote.fetch_add(1, Ordering::Relaxed);
                    self.lock().idle.push(worker);
                    self.changed.notify_all();
                    return result;
                }
                None => "its answer could not be used".to_string(),
            },
            Err(e) => e.to_string(),
        };
        drop(worker);
        let deaths = self.deaths.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!("a compile worker failed ({failure}); compiling in this process");
        let mut state = self.lock();
        state.alive -= 1;
        if deaths >= MAX_DEATHS {
            state.off.get_or_insert_with(|| {
                format!("{deaths} compile workers failed, the last one: {failure}")
            });
        }
        drop(state);
        self.changed.notify_all();
        self.run_local(local, false)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Idle workers are killed (and reaped) by their own drop.
        self.lock().idle.clear();
    }
}

/// The local slot, held by a job running in this process; freed on drop
/// (also when the job panics).
struct LocalSlot<'a>(&'a Pool);

impl Drop for LocalSlot<'_> {
    fn drop(&mut self) {
        self.0.lock().local_busy = false;
        self.0.changed.notify_all();
    }
}

/// One worker process and its pipes.
struct Worker {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
}

impl Worker {
    /// Starts a worker and completes the handshake.
    fn start(launcher: &Launcher) -> Result<Worker, String> {
        let mut command = (launcher.command)();
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{program}`: {e}"))?;
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("`{program}` started without pipes"));
        };
        let mut worker = Worker {
            child,
            to: BufWriter::new(to),
            from: BufReader::new(from),
        };
        let hello = worker
            .exchange(&launcher.hello)
            .map_err(|e| format!("`{program}` did not answer the handshake: {e}"))?;
        (launcher.accept)(&hello).map_err(|e| format!("`{program}`: {e}"))?;
        Ok(worker)
    }

    /// Sends one frame and reads the answer; a clean end of output is an
    /// error here (the worker died).
    fn exchange(&mut self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        write_frame(&mut self.to, request)?;
        read_frame(&mut self.from)?.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the worker exited without answering",
            )
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // A worker is dropped when it failed or the pool goes away: it is
        // killed rather than asked to finish, and reaped so no zombie stays.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Barrier;

    const HELLO: &[u8] = b"hello worker";

    /// A pool whose workers are `sh -c SCRIPT`; `cat` echoes every frame,
    /// so a worker's answer is its request.
    fn pool(script: &'static str, max: usize) -> Pool {
        Pool::new(
            Launcher {
                command: Box::new(move || {
                    let mut c = Command::new("sh");
                    c.arg("-c").arg(script);
                    c
                }),
                hello: HELLO.to_vec(),
                accept: Box::new(|b| {
                    if b == HELLO {
                        Ok(())
                    } else {
                        Err(format!("unexpected handshake {b:?}"))
                    }
                }),
                warm: None,
            },
            max,
        )
    }

    /// Waits (bounded) until `n` workers were started; false if not.
    fn wait_started(p: &Pool, n: u64) -> bool {
        for _ in 0..2000 {
            if p.stats().started >= n {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn workers_started_ahead_are_idle_for_the_jobs() {
        let mut p = pool("cat", 3);
        p.launcher.warm = Some(b"warm".to_vec());
        let p = Arc::new(p);
        assert!(p.first_job());
        assert!(!p.first_job(), "only the first job is the first");
        assert_eq!(p.start_ahead(8), 3, "at most the pool's most");
        assert!(wait_started(&p, 3), "{:?}", p.stats());
        assert_eq!(p.start_ahead(8), 0, "all alive already");
        // Three jobs at once, the local slot busy: each on a worker started
        // ahead, none started for them.
        let inside = Barrier::new(3);
        with_local_busy(&p, || {
            std::thread::scope(|s| {
                for i in 0..3 {
                    let (p, inside) = (&p, &inside);
                    s.spawn(move || {
                        let r = p.run(
                            format!("job{i}").as_bytes(),
                            false,
                            |b| {
                                inside.wait();
                                Some(String::from_utf8_lossy(b).into_owned())
                            },
                            || "local".to_string(),
                        );
                        assert_eq!(r, format!("job{i}"));
                    });
                }
            })
        });
        let s = p.stats();
        assert_eq!((s.started, s.remote, s.deaths), (3, 3, 0), "{s:?}");
    }

    #[test]
    fn a_worker_that_cannot_start_ahead_turns_the_pool_off() {
        let p = Arc::new(Pool::new(
            Launcher {
                command: Box::new(|| Command::new("/nonexistent/kernelkit-worker")),
                hello: HELLO.to_vec(),
                accept: Box::new(|_| Ok(())),
                warm: None,
            },
            2,
        ));
        assert_eq!(p.start_ahead(2), 2);
        for _ in 0..2000 {
            if p.lock().alive == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(p.lock().alive, 0);
        assert!(p.off_reason().expect("off").contains("/nonexistent"));
        with_local_busy(&p, || assert_eq!(echo(&p, "a"), "local a"));
        assert_eq!(p.start_ahead(2), 0, "an off pool starts nothing");
    }

    #[test]
    fn a_worker_whose_warm_up_fails_is_not_kept() {
        // Answers the handshake, then exits before the warm-up's answer.
        let mut p = pool("head -c 16", 2);
        p.launcher.warm = Some(b"warm".to_vec());
        let p = Arc::new(p);
        assert_eq!(p.start_ahead(1), 1);
        for _ in 0..2000 {
            if p.lock().alive == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let state = p.lock();
        assert_eq!((state.alive, state.idle.len()), (0, 0));
        assert!(state.off.as_deref().unwrap_or("").contains("warm-up"));
    }

    /// Runs `body` while the pool's local slot is taken, so every job in
    /// `body` must go to a worker.
    fn with_local_busy<R>(pool: &Pool, body: impl FnOnce() -> R) -> R {
        let _slot = pool.hold_local_slot();
        body()
    }

    fn echo(pool: &Pool, job: &str) -> String {
        pool.run(
            job.as_bytes(),
            false,
            |b| Some(format!("remote {}", String::from_utf8_lossy(b))),
            || format!("local {job}"),
        )
    }

    /// Jobs that prefer workers go to idle ones while this process is
    /// free, and run here when none is idle (starting none).
    #[test]
    fn jobs_that_prefer_workers_take_idle_ones_first() {
        let prefer = |p: &Pool, job: &str| {
            let remote = |b: &[u8]| Some(format!("remote {}", String::from_utf8_lossy(b)));
            p.run(job.as_bytes(), true, remote, || format!("local {job}"))
        };
        let p = pool("cat", 2);
        assert_eq!(prefer(&p, "a"), "local a");
        assert_eq!(p.stats().started, 0);
        let mut p = pool("cat", 2);
        p.launcher.warm = Some(b"warm".to_vec());
        let p = Arc::new(p);
        assert_eq!(p.start_ahead(2), 2);
        assert!(wait_started(&p, 2), "{:?}", p.stats());
        for i in 0..4 {
            assert_eq!(prefer(&p, &format!("j{i}")), format!("remote j{i}"));
        }
        let s = p.stats();
        assert_eq!((s.started, s.remote, s.local), (2, 4, 0), "{s:?}");
        // Without the preference, the free local slot first.
        assert_eq!(echo(&p, "b"), "local b");
    }

    #[test]
    fn a_lone_job_runs_locally_and_starts_nothing() {
        let p = pool("cat", 4);
        for i in 0..3 {
            assert_eq!(echo(&p, &format!("job{i}")), format!("local job{i}"));
        }
        assert_eq!(p.stats().started, 0);
        assert_eq!(p.stats().local, 3);
    }

    #[test]
    fn a_busy_local_slot_sends_jobs_to_one_reused_worker() {
        let p = pool("cat", 4);
        with_local_busy(&p, || {
            for i in 0..5 {
                assert_eq!(echo(&p, &format!("job{i}")), format!("remote job{i}"));
            }
        });
        let s = p.stats();
        assert_eq!((s.started, s.remote, s.deaths), (1, 5, 0), "{s:?}");
        assert!(p.off_reason().is_none());
    }

    #[test]
    fn concurrent_jobs_start_workers_up_to_the_limit() {
        // Four jobs held inside their decoders at once need four workers.
        let p = pool("cat", 4);
        let inside = Barrier::new(4);
        with_local_busy(&p, || {
            std::thread::scope(|s| {
                for i in 0..4 {
                    let (p, inside) = (&p, &inside);
                    s.spawn(move || {
                        let r = p.run(
                            format!("job{i}").as_bytes(),
                            false,
                            |b| {
                                inside.wait();
                                Some(String::from_utf8_lossy(b).into_owned())
                            },
                            || "local".to_string(),
                        );
                        assert_eq!(r, format!("job{i}"));
                    });
                }
            })
        });
        assert_eq!(p.stats().started, 4);

        // With a limit of one, many threads share a single worker.
        let p = pool("cat", 1);
        with_local_busy(&p, || {
            std::thread::scope(|s| {
                for t in 0..4 {
                    let p = &p;
                    s.spawn(move || {
                        for i in 0..5 {
                            let job = format!("t{t}j{i}");
                            assert_eq!(echo(p, &job), format!("remote {job}"));
                        }
                    });
                }
            })
        });
        let s = p.stats();
        assert_eq!((s.started, s.remote), (1, 20), "{s:?}");
    }

    #[test]
    fn a_worker_that_cannot_start_turns_the_pool_off() {
        let p = Pool::new(
            Launcher {
                command: Box::new(|| Command::new("/nonexistent/kernelkit-worker")),
                hello: HELLO.to_vec(),
                accept: Box::new(|_| Ok(())),
                warm: None,
            },
            4,
        );
        with_local_busy(&p, || assert_eq!(echo(&p, "a"), "local a"));
        let reason = p.off_reason().expect("off");
        assert!(reason.contains("/nonexistent/kernelkit-worker"), "{reason}");
        // Off: jobs run locally even while the slot is busy, nothing starts.
        with_local_busy(&p, || assert_eq!(echo(&p, "b"), "local b"));
        assert_eq!(p.stats().started, 0);
    }

    #[test]
    fn a_refused_handshake_turns_the_pool_off() {
        let p = pool("printf '\\004\\0\\0\\0nope'; cat", 4);
        with_local_busy(&p, || assert_eq!(echo(&p, "a"), "local a"));
        let reason = p.off_reason().expect("off");
        assert!(reason.contains("unexpected handshake"), "{reason}");
    }

    #[test]
    fn garbage_instead_of_a_handshake_turns_the_pool_off() {
        let p = pool("printf '\\377\\377\\377\\377'; cat", 4);
        with_local_busy(&p, || assert_eq!(echo(&p, "a"), "local a"));
        assert!(p.off_reason().expect("off").contains("limit"));
    }

    #[test]
    fn a_worker_dying_mid_job_is_replaced_and_the_job_runs_locally() {
        // Echoes the handshake (a 4-byte length and the hello), then exits.
        let p = pool("head -c 16", 4);
        assert_eq!(HELLO.len() + 4, 16);
        with_local_busy(&p, || {
            assert_eq!(echo(&p, "a"), "local a");
            assert_eq!(echo(&p, "b"), "local b");
        });
        let s = p.stats();
        assert_eq!(
            (s.started, s.deaths, s.remote),
            (2, 2, 0),
            "{s:?} {:?}",
            p.off_reason()
        );
        assert!(p.off_reason().is_none(), "two deaths do not turn it off");
        with_local_busy(&p, || {
            for j in ["c", "d"] {
                assert_eq!(echo(&p, j), format!("local {j}"));
            }
        });
        assert_eq!(p.stats().deaths, MAX_DEATHS);
        assert!(p.off_reason().expect("off").contains("failed"));
    }

    #[test]
    fn a_garbage_answer_or_a_refused_one_kills_the_worker() {
        // A valid handshake, then a length over the limit.
        let p = pool("head -c 16; printf 'zzzz'", 4);
        with_local_busy(&p, || assert_eq!(echo(&p, "a"), "local a"));
        assert_eq!(p.stats().deaths, 1);

        let p = pool("cat", 4);
        with_local_busy(&p, || {
            let r = p.run(b"x", false, |_| None, || "local".to_string());
            assert_eq!(r, "local");
            assert_eq!(echo(&p, "y"), "remote y", "a new worker took over");
        });
        let s = p.stats();
        assert_eq!((s.started, s.deaths, s.remote), (2, 1, 1), "{s:?}");
    }

    #[test]
    fn a_panicking_local_job_frees_the_slot() {
        let p = pool("cat", 4);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.run(b"x", false, |_| Some(()), || panic!("boom"))
        }));
        assert!(r.is_err());
        assert_eq!(echo(&p, "after"), "local after", "the slot is free again");
        assert_eq!(p.stats().started, 0);
    }
}
