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
    /// The TLS port, for a server started by [`RedisServer::start_tls`].
    pub tls_port: Option<u16>,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// A standalone server with `extra` settings (`["--maxmemory", "1"]`).
    pub fn start(extra: &[&str]) -> RedisServer {
        let mut s = RedisServer {
            port: free_port(),
            tls_port: None,
            dir: tempfile::tempdir().unwrap(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        s.spawn();
        s
    }

    /// A standalone server that also speaks TLS on [`Self::tls_port`],
    /// presenting `cert` (with `key`), not asking clients for one. `Err`
    /// with the reason when this `redis-server` has no TLS built in (it
    /// refuses the settings and exits).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Result<RedisServer, String> {
        let tls_port = free_port();
        let mut s = RedisServer {
            port: free_port(),
            tls_port: Some(tls_port),
            dir: tempfile::tempdir().unwrap(),
            extra: vec![
                "--tls-port".into(),
                tls_port.to_string(),
                "--tls-cert-file".into(),
                cert.display().to_string(),
                "--tls-key-file".into(),
                key.display().to_string(),
                "--tls-auth-clients".into(),
                "no".into(),
            ],
            child: None,
        };
        let child = s.command().spawn().expect("redis-server starts");
        s.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !s.answers() {
            if let Some(status) = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                s.child = None;
                let log = std::fs::read_to_string(s.dir.path().join("log")).unwrap_or_default();
                return Err(format!(
                    "redis-server refused the TLS settings ({status}), no TLS built in? {}",
                    log.lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                ));
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(s)
    }

    /// `rediss://localhost:<tls port>` (the certificate is for
    /// `localhost`).
    pub fn tls_url(&self) -> String {
        format!("rediss://localhost:{}", self.tls_port.expect("a TLS port"))
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's command line; what it prints goes to `log` in its
    /// directory.
    fn command(&self) -> Command {
        let log = std::fs::File::create(self.dir.path().join("log")).expect("a log file");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log file"))
            .stderr(log);
        cmd
    }

    fn spawn(&mut self) {
        let child = self.command().spawn().expect("redis-server starts");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Whether the server answers `PING` (on its plain port).
    fn answers(&self) -> bool {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    }

    /// Waits until the server answers `PING`.
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.answers() {
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
