//! Real Redis servers for the fleet tier's tests: each test starts its own
//! `redis-server` processes on free loopback ports (no persistence, a
//! temporary directory), standalone or as a three-master cluster, and can
//! kill, stall (SIGSTOP), resume and restart them. No mocks.
//!
//! Without `redis-server` on the `PATH` the tests skip with a printed
//! reason (CI installs it: `.ci/run`).

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `redis-server` and `redis-cli` can be run; prints why not.
pub fn available(test: &str) -> bool {
    let runs = |p: &str| {
        Command::new(p)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if runs("redis-server") && runs("redis-cli") {
        return true;
    }
    println!("{test}: skipped: redis-server/redis-cli not found on the PATH (Debian: apt-get install redis-server)");
    false
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// One `redis-server` process.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// A standalone server with `extra` settings (`["--maxmemory", "1"]`).
    pub fn start(extra: &[&str]) -> RedisServer {
        let mut s = RedisServer {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        s.spawn();
        s
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the server answers `PING`.
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pong = redis::Client::open(self.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if pong.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on {} did not start",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A plain connection (to look at or tamper with what is stored).
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection_with_timeout(Duration::from_secs(2))
            .unwrap()
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("the server runs").id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: `kill` on the pid of a child this test started and has
        // not reaped; no memory is involved.
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0, "signal {sig} to redis-server");
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart_empty(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Stalls the server (SIGSTOP): connections open, nothing answers.
    pub fn stall(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Resumes a stalled server.
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            // A stalled server does not die of SIGKILL until resumed on
            // some systems' views; resume first, harmlessly.
            let _ = self.child.as_ref().map(|c| {
                // SAFETY: as in `signal`.
                unsafe { libc::kill(c.id() as i32, libc::SIGCONT) }
            });
        }
        self.kill();
    }
}

/// Three masters in one cluster (no replicas).
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_ok();
        cluster
    }

    /// The seed list, comma-separated (the `KERNELKIT_REMOTE_CACHE` form).
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(RedisServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until every node says the cluster is up and knows every slot.
    fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &self.nodes {
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut n.connection())
                    .unwrap_or_default();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not come up");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Writes a secret of `len` bytes (mode 0600) into `dir`; returns its path.
pub fn key_file(dir: &std::path::Path, name: &str, byte: u8, len: usize) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, vec![byte; len]).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}
