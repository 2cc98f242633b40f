//! The worker's side: answer the handshake, then compile job after job.

use std::ffi::CString;
use std::io::{self, Read, Write};

use super::frame::{read_frame, write_frame, Message};
use super::{PROTOCOL, WARM_UP_PROGRAM};
use crate::backend::cuda::compile::nvrtc_job::{run_nvrtc, Failure, NvrtcJob};
use crate::backend::cuda::compile::nvrtc_version;
use crate::backend::cuda::compile::pch;

/// Serves compile jobs from `input` to `output` until `input` ends.
///
/// Answers the parent's handshake with NVRTC's version (or with the reason
/// it cannot compile, and returns), then answers every compile job with the
/// artifact, NVRTC's log of a rejected source, or why NVRTC could not run.
/// A frame that is not the expected message is an error: the parent then
/// kills this worker and compiles the job itself. A parent that is gone
/// (an answer's write finds the pipe closed: it exited, or was killed,
/// while this worker started or compiled) ends the worker quietly.
pub fn serve(input: impl Read, output: impl Write) -> io::Result<()> {
    match answer(input, output) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        done => done,
    }
}

/// [`serve`], a closed pipe an error.
fn answer(mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    let Some(body) = read_frame(&mut input)? else {
        return Ok(());
    };
    let refuse = |output: &mut dyn Write, reason: String| {
        write_frame(output, &Message::Refused { reason }.encode())
    };
    match Message::decode(&body).map_err(invalid)? {
        Message::Hello { protocol } if protocol == PROTOCOL => {}
        Message::Hello { protocol } => {
            return refuse(
                &mut output,
                format!("the worker speaks protocol {PROTOCOL}, the parent {protocol}"),
            )
        }
        other => return Err(unexpected(&other)),
    }
    let loading = std::time::Instant::now();
    // A worker is a process's entry point, as opening a device is: it
    // reads its configuration (where the CUDA toolkit is) the same way.
    let config = crate::config::Config::from_env().cuda;
    let nvrtc = match nvrtc_version(&config) {
        Ok((major, minor)) => (major as u32, minor as u32),
        Err(reason) => return refuse(&mut output, reason),
    };
    tracing::debug!(
        "compile worker {}: NVRTC loaded in {:.1} ms",
        std::process::id(),
        loading.elapsed().as_secs_f64() * 1e3
    );
    write_frame(
        &mut output,
        &Message::Ready {
            protocol: PROTOCOL,
            nvrtc,
        }
        .encode(),
    )?;
    while let Some(body) = read_frame(&mut input)? {
        let Message::Compile {
            program,
            source,
            headers,
            options,
            output: kind,
        } = Message::decode(&body).map_err(invalid)?
        else {
            return Err(invalid("expected a compile job"));
        };
        let reply = match options
            .into_iter()
            .map(CString::new)
            .collect::<Result<Vec<_>, _>>()
        {
            Err(_) => Message::Failed {
                reason: "an NVRTC option contains a NUL byte".into(),
            },
            Ok(options) => {
                let started = std::time::Instant::now();
                let before = tracing::enabled!(tracing::Level::DEBUG)
                    .then(ThreadUsage::now)
                    .flatten();
                let outcome = run_nvrtc(NvrtcJob {
                    program: &program,
                    source: &source,
                    headers: &headers,
                    options: &options,
                    output: kind,
                });
                if program == WARM_UP_PROGRAM {
                    pch::write_pending();
                }
                // Read again only where it was read before (debug logging on).
                let usage = before
                    .and_then(|b| ThreadUsage::now().map(|a| format!(" ({})", a.since(&b))))
                    .unwrap_or_default();
                tracing::debug!(
                    "compile worker {}: NVRTC took {:.1} ms{usage}",
                    std::process::id(),
                    started.elapsed().as_secs_f64() * 1e3
                );
                match outcome {
                    Ok(artifact) => Message::Done { artifact },
                    Err(Failure::Rejected(log)) => Message::Rejected { log },
                    Err(Failure::Other(reason)) => Message::Failed { reason },
                }
            }
        };
        write_frame(&mut output, &reply.encode())?;
        // Answered: the precompiled preludes this job queued are written
        // now, before the next job is read (see `compile::pch`).
        pch::write_pending();
    }
    Ok(())
}

/// [`serve`] on this process's standard input and output, as a worker
/// program runs it. On Unix, file descriptor 1 is first pointed at standard
/// error, so anything else in the process that prints to standard output
/// cannot corrupt the frames.
pub fn serve_stdio() -> io::Result<()> {
    let input = io::stdin().lock();
    #[cfg(unix)]
    {
        // A new descriptor (close-on-exec) for what fd 1 is now, owned by
        // the `File`; then fd 1 becomes a copy of fd 2, still open for
        // whatever else writes to it.
        let frames = rustix::io::fcntl_dupfd_cloexec(io::stdout(), 3)?;
        rustix::stdio::dup2_stdout(io::stderr())?;
        serve(input, io::BufWriter::new(std::fs::File::from(frames)))
    }
    #[cfg(not(unix))]
    {
        serve(input, io::BufWriter::new(io::stdout().lock()))
    }
}

/// What this thread has used so far: CPU time and page faults. A
/// compile's wall time beside the CPU it used and the pages it touched
/// for the first time says whether it worked, waited for a core, or
/// faulted memory in (the debug log's line per compile).
struct ThreadUsage {
    user_ms: f64,
    system_ms: f64,
    minor_faults: i64,
    major_faults: i64,
}

impl ThreadUsage {
    #[cfg(target_os = "linux")]
    fn now() -> Option<ThreadUsage> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one `rusage` through the pointer, which
        // points at a zeroed one of ours; RUSAGE_THREAD asks for this thread.
        let usage = unsafe {
            if libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) != 0 {
                return None;
            }
            usage.assume_init()
        };
        let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
        Some(ThreadUsage {
            user_ms: ms(usage.ru_utime),
            system_ms: ms(usage.ru_stime),
            minor_faults: usage.ru_minflt as i64,
            major_faults: usage.ru_majflt as i64,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn now() -> Option<ThreadUsage> {
        None
    }

    /// `user U ms, system S ms, F page faults (D from disk)`.
    fn since(&self, before: &ThreadUsage) -> String {
        format!(
            "user {:.1} ms, system {:.1} ms, {} page faults ({} from disk)",
            self.user_ms - before.user_ms,
            self.system_ms - before.system_ms,
            self.minor_faults - before.minor_faults,
            self.major_faults - before.major_faults
        )
    }
}

fn invalid(e: impl ToString) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn unexpected(m: &Message) -> io::Error {
    invalid(format!("expected the handshake, got {m:?}"))
}

#[cfg(test)]
mod tests {
    use super::super::frame::Output;
    use super::*;

    fn frames(messages: &[Message]) -> Vec<u8> {
        let mut wire = Vec::new();
        for m in messages {
            write_frame(&mut wire, &m.encode()).unwrap();
        }
        wire
    }

    fn answers(mut wire: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some(body) = read_frame(&mut wire).unwrap() {
            out.push(Message::decode(&body).unwrap());
        }
        out
    }

    #[test]
    fn answers_the_handshake_and_compiles_or_refuses_without_nvrtc() {
        let input = frames(&[
            Message::Hello { protocol: PROTOCOL },
            Message::Compile {
                program: "kernel.cu".into(),
                source: "#include \"value.h\"\nextern \"C\" __global__ void k(float* x) { x[0] = VALUE; }".into(),
                headers: vec![("value.h".into(), b"#define VALUE 1.0f\n".to_vec())],
                options: vec!["--gpu-architecture=sm_90a".into()],
                output: Output::Cubin,
            },
            Message::Compile {
                program: "kernel.cu".into(),
                source: "extern \"C\" __global__ void k() { undefined_name; }".into(),
                headers: vec![],
                options: vec!["--gpu-architecture=sm_90a".into()],
                output: Output::Cubin,
            },
        ]);
        let mut output = Vec::new();
        serve(input.as_slice(), &mut output).unwrap();
        let got = answers(&output);
        match nvrtc_version(&crate::config::Config::from_env().cuda) {
            Err(reason) => {
                println!("no NVRTC here: {reason}");
                assert_eq!(got, vec![Message::Refused { reason }]);
            }
            Ok((major, minor)) => {
                assert_eq!(got.len(), 3, "{got:?}");
                assert_eq!(
                    got[0],
                    Message::Ready {
                        protocol: PROTOCOL,
                        nvrtc: (major as u32, minor as u32)
                    }
                );
                let Message::Done { artifact } = &got[1] else {
                    panic!("{:?}", got[1])
                };
                assert_eq!(&artifact[..4], b"\x7fELF");
                let Message::Rejected { log } = &got[2] else {
                    panic!("{:?}", got[2])
                };
                assert!(log.contains("kernel.cu(1)") && log.contains("undefined_name"));
            }
        }
    }

    /// Takes `room` bytes, then answers as a pipe whose reader is gone.
    struct Gone {
        room: usize,
    }

    impl Write for Gone {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.room {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.room -= buf.len();
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A parent that exits while its worker compiles is the end of the
    /// worker's work, not an error it reports.
    #[test]
    fn a_parent_gone_before_the_answer_ends_the_worker_quietly() {
        let Ok((major, minor)) = nvrtc_version(&crate::config::Config::from_env().cuda) else {
            println!("skipped: no NVRTC here");
            return;
        };
        let ready = frames(&[Message::Ready {
            protocol: PROTOCOL,
            nvrtc: (major as u32, minor as u32),
        }]);
        let input = frames(&[
            Message::Hello { protocol: PROTOCOL },
            Message::Compile {
                program: "kernel.cu".into(),
                source: "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }".into(),
                headers: vec![],
                options: vec!["--gpu-architecture=sm_90a".into()],
                output: Output::Cubin,
            },
        ]);
        let gone = Gone { room: ready.len() };
        assert!(serve(input.as_slice(), gone).is_ok());
        // Gone before the handshake's answer (it exited as workers started).
        let input = frames(&[Message::Hello { protocol: PROTOCOL }]);
        assert!(serve(input.as_slice(), Gone { room: 0 }).is_ok());
    }

    /// A job that asks for the precompiled prelude is answered from the
    /// full source the first time, and its prelude's header is written
    /// then (after the answer), so the next job of that prelude goes
    /// through it; both answers are the same cubin.
    #[test]
    fn a_worker_writes_the_header_of_a_prelude_it_met() {
        let config = crate::config::Config::from_env().cuda;
        let Ok(nvrtc) = crate::backend::cuda::compile::Nvrtc::new((9, 0), &config) else {
            println!("skipped: no NVRTC here");
            return;
        };
        // A prelude no other test meets: the warm-up's, with a line of its own.
        let source = format!("// {}\n{}", module_path!(), pch::warm_up().unwrap());
        let job = Message::Compile {
            program: "kernel.cu".into(),
            source: source.clone(),
            headers: vec![],
            options: pch::words(nvrtc.words()),
            output: Output::Cubin,
        };
        let input = frames(&[Message::Hello { protocol: PROTOCOL }, job.clone(), job]);
        assert!(!pch::is_written(&source));
        let mut output = Vec::new();
        serve(input.as_slice(), &mut output).unwrap();
        let got = answers(&output);
        assert!(pch::is_written(&source));
        let [Message::Ready { .. }, Message::Done { artifact: a }, Message::Done { artifact: b }] =
            &got[..]
        else {
            panic!("{got:?}")
        };
        assert_eq!(a, b);
    }

    #[test]
    fn another_protocol_is_refused() {
        let input = frames(&[Message::Hello {
            protocol: PROTOCOL + 1,
        }]);
        let mut output = Vec::new();
        serve(input.as_slice(), &mut output).unwrap();
        let got = answers(&output);
        assert!(
            matches!(&got[..], [Message::Refused { reason }] if reason.contains("protocol")),
            "{got:?}"
        );
    }

    #[test]
    fn an_unexpected_or_broken_frame_is_an_error() {
        // A compile job before the handshake.
        let input = frames(&[Message::Done { artifact: vec![] }]);
        assert!(serve(input.as_slice(), Vec::new()).is_err());
        // Garbage in place of the handshake.
        let mut input = Vec::new();
        write_frame(&mut input, b"\x01nonsense").unwrap();
        assert!(serve(input.as_slice(), Vec::new()).is_err());
        // A frame cut short.
        assert!(serve(&[9u8, 0, 0, 0, 1][..], Vec::new()).is_err());
        // No input at all: a clean end.
        assert!(serve(&[][..], Vec::new()).is_ok());
    }

    /// The debug line's usage counts what the thread did in between: CPU
    /// time spent and pages touched for the first time.
    #[cfg(target_os = "linux")]
    #[test]
    fn thread_usage_counts_work_and_faults_in_between() {
        let before = ThreadUsage::now().expect("getrusage answers on Linux");
        // Fresh memory, touched once a page: at least one fault (huge pages
        // may make it few).
        let mut pages = vec![0u8; 8 << 20];
        for p in pages.iter_mut().step_by(4096) {
            *p = 1;
        }
        std::hint::black_box(&pages);
        // Work until the thread's CPU time has grown by the threshold below
        // (however busy the machine is), or fail after a bounded wall time.
        let started = std::time::Instant::now();
        let mut x = 0u64;
        let used = loop {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let now = ThreadUsage::now().unwrap();
            let ms = now.user_ms + now.system_ms - before.user_ms - before.system_ms;
            if ms >= 5.0 {
                break now;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the thread's CPU time did not grow: {ms} ms"
            );
        };
        assert!(used.minor_faults > before.minor_faults, "8 MiB touched");
        let line = used.since(&before);
        assert!(
            line.starts_with("user ") && line.contains(" page faults ("),
            "{line}"
        );
    }
}
