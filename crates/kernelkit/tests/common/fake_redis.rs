//! A hostile Redis for the fleet tier's tests: a loopback server that
//! speaks just enough of the protocol to be taken for a standalone Redis
//! (`INFO` says it is no cluster), then answers the tier's reads as a test
//! asks: slowly (a byte every half second, for ever) or with a length it
//! does not mean (a bulk header of a gigabyte, then that many bytes as fast
//! as the socket takes them). Each connection is served by a thread of its own;
//! the server counts the commands it was sent, by name.
//!
//! With the `remote-tls` feature it also speaks TLS (`rediss://`,
//! [`FakeRedis::start_tls`]): a rustls server with a self-signed
//! certificate for `localhost` and `127.0.0.1` that `openssl` makes at test
//! time ([`TestCert`]), trusted by the tier through `SSL_CERT_FILE`. The
//! answers are the same, each written (and flushed) as it is over TCP: a
//! trickle is a TLS record per byte.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server answers a command.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    /// `*2 $-1 $-1`: neither key exists (an `MGET`'s "nothing here").
    Nothing,
    /// `$-1`.
    Nil,
    /// `:1`.
    One,
    /// The start of a reply, then a byte every half second, never
    /// finished.
    Trickle,
    /// A whole reply (a long simple string) written at once, then let out
    /// by the socket a byte every half second: over TLS, the bytes of one
    /// record arrive slowly (what a client that reads whole records with a
    /// timeout per socket read waits on far past any deadline).
    TrickleBytes,
    /// `-MOVED 0 127.0.0.1:<port>`: the key's slot is served there.
    Moved(u16),
    /// `*2`, `$1073741824`, then that many bytes as fast as they are
    /// taken, then `$-1`: a whole reply, of an entry no node accepts.
    Gigabyte,
}

/// How a [`FakeRedis`] is spoken to.
#[derive(Clone)]
pub enum Transport {
    /// `redis://`.
    Plain,
    /// `rediss://`, with this server configuration.
    #[cfg(feature = "remote-tls")]
    Tls(Arc<rustls::ServerConfig>),
}

/// See the module documentation.
pub struct FakeRedis {
    pub port: u16,
    tls: bool,
    seen: Arc<Mutex<HashMap<String, usize>>>,
}

/// Whether the server says it is a cluster node (`INFO`), serving every
/// slot itself (`CLUSTER SLOTS`).
#[derive(Clone, Copy)]
struct Mode {
    cluster: bool,
    port: u16,
}

impl FakeRedis {
    /// A server that answers command `NAME` (upper case) with what
    /// `answer` gives for it and the number of `NAME`s seen before it.
    pub fn start(answer: impl Fn(&str, usize) -> Answer + Send + Sync + 'static) -> FakeRedis {
        FakeRedis::start_as(false, Transport::Plain, answer)
    }

    /// [`FakeRedis::start`], over `transport`.
    pub fn start_over(
        transport: Transport,
        answer: impl Fn(&str, usize) -> Answer + Send + Sync + 'static,
    ) -> FakeRedis {
        FakeRedis::start_as(false, transport, answer)
    }

    /// [`FakeRedis::start`] for a server that says it is a cluster's only
    /// master.
    pub fn start_cluster(
        answer: impl Fn(&str, usize) -> Answer + Send + Sync + 'static,
    ) -> FakeRedis {
        FakeRedis::start_as(true, Transport::Plain, answer)
    }

    /// [`FakeRedis::start_cluster`], over `transport`.
    pub fn start_cluster_over(
        transport: Transport,
        answer: impl Fn(&str, usize) -> Answer + Send + Sync + 'static,
    ) -> FakeRedis {
        FakeRedis::start_as(true, transport, answer)
    }

    fn start_as(
        cluster: bool,
        transport: Transport,
        answer: impl Fn(&str, usize) -> Answer + Send + Sync + 'static,
    ) -> FakeRedis {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let mode = Mode { cluster, port };
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let answer = Arc::new(answer);
        let tls = !matches!(transport, Transport::Plain);
        {
            let seen = seen.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { return };
                    let (seen, answer) = (seen.clone(), answer.clone());
                    let transport = transport.clone();
                    let stream = Slow {
                        tcp: stream,
                        slow: Arc::new(AtomicBool::new(false)),
                    };
                    std::thread::spawn(move || match transport {
                        Transport::Plain => serve(stream, mode, &seen, &*answer),
                        #[cfg(feature = "remote-tls")]
                        Transport::Tls(config) => {
                            let Ok(conn) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            let s = rustls::StreamOwned::new(conn, stream);
                            serve(s, mode, &seen, &*answer)
                        }
                    });
                }
            });
        }
        FakeRedis { port, tls, seen }
    }

    /// `redis://127.0.0.1:<port>` (`rediss://` over TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// How many commands `name` (upper case) were sent.
    pub fn seen(&self, name: &str) -> usize {
        self.seen.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

/// The server's socket: it writes a byte every half second once `slow`
/// is set ([`Answer::TrickleBytes`]).
struct Slow {
    tcp: std::net::TcpStream,
    slow: Arc<AtomicBool>,
}

impl Read for Slow {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.tcp.read(buf)
    }
}

impl Write for Slow {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.slow.load(Ordering::Relaxed) || buf.is_empty() {
            return self.tcp.write(buf);
        }
        std::thread::sleep(Duration::from_millis(500));
        self.tcp.write(&buf[..1])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// A server-side stream and the switch of its [`Slow`] socket.
trait Served: Read + Write {
    fn slow(&self) -> &AtomicBool;
}

impl Served for Slow {
    fn slow(&self) -> &AtomicBool {
        &self.slow
    }
}

#[cfg(feature = "remote-tls")]
impl Served for rustls::StreamOwned<rustls::ServerConnection, Slow> {
    fn slow(&self) -> &AtomicBool {
        &self.sock.slow
    }
}

/// One complete command at the start of `buf`: its words and its length.
fn command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    fn line(buf: &[u8], at: usize) -> Option<(usize, usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (count, mut at) = line(buf, 0)?;
    let mut words = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, start) = line(buf, at)?;
        let word = buf.get(start..start + len)?.to_vec();
        at = start + len + 2;
        if buf.len() < at {
            return None;
        }
        words.push(word);
    }
    Some((words, at))
}

fn serve(
    mut s: impl Served,
    mode: Mode,
    seen: &Mutex<HashMap<String, usize>>,
    answer: &(dyn Fn(&str, usize) -> Answer + Send + Sync),
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let Some((words, used)) = command(&buf) else {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        buf.drain(..used);
        let name = String::from_utf8_lossy(&words[0]).to_ascii_uppercase();
        let before = {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(name.clone()).or_insert(0);
            *n += 1;
            *n - 1
        };
        let sent = match name.as_str() {
            "INFO" => {
                let info = format!(
                    "# Cluster\r\ncluster_enabled:{}\r\n",
                    u8::from(mode.cluster)
                );
                s.write_all(format!("${}\r\n{info}\r\n", info.len()).as_bytes())
            }
            "AUTH" | "SELECT" | "PING" | "ASKING" => s.write_all(b"+OK\r\n"),
            "CLUSTER" => s.write_all(
                format!(
                    "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:{}\r\n",
                    mode.port
                )
                .as_bytes(),
            ),
            _ => match answer(&name, before) {
                Answer::Nothing => s.write_all(b"*2\r\n$-1\r\n$-1\r\n"),
                Answer::Nil => s.write_all(b"$-1\r\n"),
                Answer::One => s.write_all(b":1\r\n"),
                Answer::Moved(port) => {
                    s.write_all(format!("-MOVED 0 127.0.0.1:{port}\r\n").as_bytes())
                }
                Answer::Trickle => {
                    // A simple string whose line never ends.
                    for b in b"*2\r\n$-1\r\n+".iter().chain(std::iter::repeat(&b'x')) {
                        if s.write_all(&[*b]).and_then(|()| s.flush()).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    return;
                }
                Answer::TrickleBytes => {
                    s.slow().store(true, Ordering::Relaxed);
                    let mut reply = b"*2\r\n$-1\r\n+".to_vec();
                    reply.extend_from_slice(&[b'x'; 200]);
                    reply.extend_from_slice(b"\r\n");
                    s.write_all(&reply)
                }
                Answer::Gigabyte => {
                    let header = s.write_all(b"*2\r\n$1073741824\r\n");
                    if header.and_then(|()| s.flush()).is_err() {
                        return;
                    }
                    let junk = vec![b'x'; 64 * 1024];
                    for _ in 0..(1usize << 30) / junk.len() {
                        if s.write_all(&junk).is_err() {
                            return;
                        }
                    }
                    s.write_all(b"\r\n$-1\r\n")
                }
            },
        };
        if sent.and_then(|()| s.flush()).is_err() {
            return;
        }
    }
}

/// A self-signed certificate for `localhost` and `127.0.0.1`, made by the
/// `openssl` command, in a directory of its own.
#[cfg(feature = "remote-tls")]
pub struct TestCert {
    pub dir: tempfile::TempDir,
}

#[cfg(feature = "remote-tls")]
impl TestCert {
    /// The certificate, or why there is none (no `openssl` command).
    pub fn make() -> Result<TestCert, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
            // A server's certificate, not an authority's (which rustls
            // refuses as a server's even when it trusts it).
            .args(["-addext", "basicConstraints=critical,CA:FALSE"])
            .args(["-addext", "extendedKeyUsage=serverAuth"])
            .arg("-keyout")
            .arg(dir.path().join("key.pem"))
            .arg("-out")
            .arg(dir.path().join("cert.pem"))
            .output()
            .map_err(|e| format!("no `openssl` command to make a certificate: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`openssl req` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(TestCert { dir })
    }

    pub fn cert(&self) -> std::path::PathBuf {
        self.dir.path().join("cert.pem")
    }

    pub fn key(&self) -> std::path::PathBuf {
        self.dir.path().join("key.pem")
    }

    /// The process's one certificate, made on first use and trusted
    /// ([`TestCert::trust`]) from then on: tests that run as threads of
    /// one process (`cargo test`) must not swap `SSL_CERT_FILE` under each
    /// other. It stays in the temporary directory after the process.
    pub fn shared() -> Result<&'static TestCert, String> {
        static CERT: std::sync::OnceLock<Result<TestCert, String>> = std::sync::OnceLock::new();
        CERT.get_or_init(|| {
            let cert = TestCert::make()?;
            cert.trust();
            Ok(cert)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Makes this process (the fleet tier in it) trust the certificate,
    /// and only it.
    pub fn trust(&self) {
        std::env::set_var("SSL_CERT_FILE", self.cert());
        std::env::remove_var("SSL_CERT_DIR");
    }

    /// A rustls server configuration that presents the certificate.
    pub fn server(&self) -> Transport {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(self.cert())
            .expect("the certificate file")
            .collect::<Result<_, _>>()
            .expect("a PEM certificate");
        let key = PrivateKeyDer::from_pem_file(self.key()).expect("a PEM key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("a usable certificate and key");
        Transport::Tls(Arc::new(config))
    }
}
