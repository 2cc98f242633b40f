//! `remote_hit_ms`: a node's first call of a kernel that another node
//! compiled. One child (a node with an empty disk store) runs the start
//! kernel and shares it through the fleet tier; then each measured child,
//! each with a new empty disk store, starts, loads that kernel from Redis,
//! runs it and exits. The time is from spawning it to its exit, as for
//! `warm_start_ms` (the same child with the kernel on its disk), so the two
//! side by side show what the fleet costs over a warm disk.
//!
//! The Redis server: the one `KERNELKIT_REMOTE_CACHE` (with
//! `KERNELKIT_REMOTE_KEY_FILE`) names, else a `redis-server` from the
//! `PATH` started on a free loopback port for the run (and stopped after
//! it), with a fresh key. Without either the figure is left out, with a
//! note.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::measure;
use super::startup::{spawn, ChildReport, ChildTask};
use super::workload::BackendName;
use super::BenchError;

/// What the figure needs from a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FleetFigures {
    /// Median ms of a child that loads the kernel from the fleet tier.
    pub(crate) remote_hit_ms: f64,
    /// What the last such child reported.
    pub(crate) report: ChildReport,
}

/// A `redis-server` this run started; stopped when dropped.
struct OwnServer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Measures the figure with `runs` children; `Ok(None)` (and a note on
/// stderr) when there is no Redis to use.
pub(crate) fn measure(
    backend: BackendName,
    runs: usize,
) -> Result<Option<FleetFigures>, BenchError> {
    let tmp = tempfile::tempdir().map_err(|e| BenchError::Io("a temporary directory", e))?;
    let configured = kernelkit::Config::from_env().cache.remote;
    let (_server, url, key) = match configured {
        c if c.is_configured() && !c.key_files.is_empty() => {
            let keys = std::env::join_paths(&c.key_files)
                .map_err(|e| BenchError::Child(format!("the key files: {e}")))?;
            (None, c.urls.join(","), keys)
        }
        _ => match start_server(&tmp)? {
            Some((server, url)) => {
                let key = write_key(&tmp)?;
                (Some(server), url, key.into_os_string())
            }
            None => {
                eprintln!(
                    "bench: remote_hit_ms left out: no KERNELKIT_REMOTE_CACHE and no redis-server on the PATH"
                );
                return Ok(None);
            }
        },
    };
    let fleet = Some((url.as_str(), key.as_os_str()));
    let store = |n: usize| tmp.path().join(format!("node{n}"));
    // The node that compiles and shares.
    spawn(backend, ChildTask::Kernel, &store(0), fleet)?;
    let mut report = ChildReport::default();
    let mut n = 0;
    let remote_hit_ms = measure::repeated(runs, || {
        n += 1;
        let (ms, r) = spawn(backend, ChildTask::Kernel, &store(n), fleet)?;
        report = r;
        Ok(ms)
    })?;
    Ok(Some(FleetFigures {
        remote_hit_ms,
        report,
    }))
}

/// A secret of 32 random bytes in a file only this user can read.
fn write_key(tmp: &tempfile::TempDir) -> Result<PathBuf, BenchError> {
    let io = |e| BenchError::Io("the fleet key file", e);
    let mut secret = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .map_err(io)?;
    let path = tmp.path().join("fleet.key");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(&path)
        .and_then(|mut f| f.write_all(&secret))
        .map_err(io)?;
    Ok(path)
}

/// Starts `redis-server` on a free loopback port; `None` if there is none.
fn start_server(tmp: &tempfile::TempDir) -> Result<Option<(OwnServer, String)>, BenchError> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| BenchError::Io("a loopback port", e))?
        .port();
    let dir = tempfile::tempdir_in(tmp.path()).map_err(|e| BenchError::Io("a directory", e))?;
    let spawned = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BenchError::Io("redis-server", e)),
    };
    let server = OwnServer { child, _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pong(port) {
        if Instant::now() > deadline {
            return Err(BenchError::Child(format!(
                "redis-server on port {port} did not answer"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some((server, format!("redis://127.0.0.1:{port}"))))
}

/// Whether a server on `port` answers `PING`.
fn pong(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
