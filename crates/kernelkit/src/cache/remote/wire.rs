//! A connection to one Redis server (plain TCP, or TLS for `rediss://`)
//! that reads the protocol itself, so that what a server sends is bounded
//! in time and in size.
//!
//! The `redis` crate's synchronous client reads a reply with a timeout per
//! socket read and grows its buffer to whatever length a bulk header
//! (`$N`) announces. A server that trickles a byte now and then never trips
//! the first; one that announces a huge length (it may lie) makes the
//! second allocate it. Here:
//!
//! - **One deadline per command.** Every write and read is given the time
//!   left until the command's deadline, and the command fails with
//!   [`WireError::Timeout`] once it has passed, however the bytes arrive.
//! - **Bounded replies.** A reply is framed (headers parsed, lengths
//!   checked) before any of it is kept: a bulk string longer than
//!   [`Bounds::max_bulk`] is refused from its header, before its bytes are
//!   read or any room is reserved for them, and a whole reply (an `MGET`'s
//!   array, nested arrays) longer than [`Bounds::max_reply`] is refused as
//!   soon as its framing says so. The bytes kept for one reply never exceed
//!   `max_reply`; parsing them into a [`redis::Value`] copies them once.
//!
//! Both hold over TLS: every read and write the TLS layer makes on the
//! socket goes through [`Timed`], which gives it the time left until the
//! command's deadline (and fails it once none is left), so a server that
//! trickles the bytes of its TLS records is stopped like one that trickles
//! its reply; the TLS layer keeps at most a record or so of its own, and the
//! reply above it is framed and bounded as over plain TCP. The handshake
//! runs within the connect deadline.
//!
//! Commands are packed by the `redis` crate ([`redis::Cmd`]) and the framed
//! reply is parsed by it ([`redis::parse_redis_value`]): only the framing,
//! where the bounds are enforced, is done here. The protocol spoken is
//! RESP2 (no `HELLO`), so the reply types are the five of RESP2.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(feature = "remote-tls")]
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much a reply may hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// The longest bulk string (one value) accepted.
    pub(crate) max_bulk: u64,
    /// The most bytes one reply (all its values and framing) may take.
    pub(crate) max_reply: u64,
}

/// Why a command on the wire did not give a reply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    /// The deadline passed before the reply was complete.
    #[error("no complete reply within the deadline ({0} bytes of it received)")]
    Timeout(usize),
    /// The socket failed or the server closed it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The reply is larger than its bound (said by its framing: nothing
    /// past the header was kept).
    #[error("the reply announces {announced} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// What the header (or the framing so far) announced.
        announced: u64,
        /// The bound it passed.
        limit: u64,
    },
    /// The TLS connection could not be set up (a certificate not trusted,
    /// a name no certificate can be for, a failed handshake).
    #[cfg(feature = "remote-tls")]
    #[error("TLS: {0}")]
    Tls(String),
    /// The bytes are not a RESP2 reply.
    #[error("not a Redis reply: {0}")]
    Protocol(String),
}

/// How connections are made: plain TCP, or TLS with one configuration.
#[derive(Clone)]
pub(crate) enum Transport {
    /// `redis://`.
    Plain,
    /// `rediss://`.
    #[cfg(feature = "remote-tls")]
    Tls(Arc<rustls::ClientConfig>),
}

/// A socket whose every read and write ends by `deadline`: each is given
/// the time left as the socket's timeout, and fails with
/// [`ErrorKind::TimedOut`] once none is left. The TLS layer reads and
/// writes through it, so however it splits a command into socket calls
/// none outlives the deadline.
pub(crate) struct Timed {
    tcp: TcpStream,
    deadline: Instant,
}

impl Timed {
    /// The time left, as a socket timeout (at least a millisecond: zero
    /// means "none"), or the error that ends the call.
    fn left(&self) -> std::io::Result<Duration> {
        let now = Instant::now();
        if now >= self.deadline {
            return Err(std::io::Error::new(
                ErrorKind::TimedOut,
                "the command's deadline passed",
            ));
        }
        Ok((self.deadline - now).max(Duration::from_millis(1)))
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.tcp.set_read_timeout(Some(self.left()?))?;
        self.tcp.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tcp.set_write_timeout(Some(self.left()?))?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// The byte stream a [`Wire`] speaks over.
enum Link {
    Plain(Timed),
    #[cfg(feature = "remote-tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, Timed>>),
}

impl Link {
    /// Holds every later read and write to `deadline`.
    fn set_deadline(&mut self, deadline: Instant) {
        match self {
            Link::Plain(t) => t.deadline = deadline,
            #[cfg(feature = "remote-tls")]
            Link::Tls(s) => s.sock.deadline = deadline,
        }
    }
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Link::Plain(t) => t.read(buf),
            #[cfg(feature = "remote-tls")]
            Link::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Link::Plain(t) => t.write(buf),
            #[cfg(feature = "remote-tls")]
            Link::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Link::Plain(t) => t.flush(),
            #[cfg(feature = "remote-tls")]
            Link::Tls(s) => s.flush(),
        }
    }
}

/// See the module documentation.
pub(crate) struct Wire {
    link: Link,
    bounds: Bounds,
}

/// The time left until `deadline`, or a timeout error when none is left.
fn left(deadline: Instant, received: usize) -> Result<Duration, WireError> {
    let now = Instant::now();
    if now >= deadline {
        return Err(WireError::Timeout(received));
    }
    // A socket timeout of zero means "none": at least a millisecond.
    Ok((deadline - now).max(Duration::from_millis(1)))
}

/// Whether an I/O error is a socket timeout.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl Wire {
    /// Connects to `host:port`, trying each of its addresses, and makes
    /// the TLS handshake where `transport` asks for it, all before
    /// `deadline`.
    pub(crate) fn connect(
        host: &str,
        port: u16,
        deadline: Instant,
        bounds: Bounds,
        transport: &Transport,
    ) -> Result<Wire, WireError> {
        let tcp = Wire::dial(host, port, deadline)?;
        let timed = Timed { tcp, deadline };
        let link = match transport {
            Transport::Plain => Link::Plain(timed),
            #[cfg(feature = "remote-tls")]
            Transport::Tls(config) => {
                let conn = super::tls::client(config, host).map_err(WireError::Tls)?;
                let mut s = rustls::StreamOwned::new(conn, timed);
                while s.conn.is_handshaking() {
                    match s.conn.complete_io(&mut s.sock) {
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if timed_out(&e) => {
                            left(deadline, 0)?;
                        }
                        Err(e) => return Err(WireError::Tls(e.to_string())),
                    }
                }
                Link::Tls(Box::new(s))
            }
        };
        Ok(Wire { link, bounds })
    }

    /// A TCP connection to `host:port`, made before `deadline`.
    fn dial(host: &str, port: u16, deadline: Instant) -> Result<TcpStream, WireError> {
        let mut last = None;
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, left(deadline, 0)?) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(WireError::Io(last.unwrap_or_else(|| {
            std::io::Error::new(ErrorKind::NotFound, format!("{host} has no address"))
        })))
    }

    /// Sends one packed command and reads its reply, all before
    /// `deadline`. After any error the connection is in an unknown state
    /// and must be dropped.
    pub(crate) fn command(
        &mut self,
        packed: &[u8],
        deadline: Instant,
    ) -> Result<redis::Value, WireError> {
        self.link.set_deadline(deadline);
        self.send(packed, deadline)?;
        let reply = self.receive(deadline)?;
        redis::parse_redis_value(&reply).map_err(|e| WireError::Protocol(e.to_string()))
    }

    fn send(&mut self, mut bytes: &[u8], deadline: Instant) -> Result<(), WireError> {
        while !bytes.is_empty() {
            left(deadline, 0)?;
            match self.link.write(bytes) {
                Ok(0) => return Err(WireError::Io(ErrorKind::WriteZero.into())),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // TLS may hold the last record back until flushed.
        loop {
            left(deadline, 0)?;
            match self.link.flush() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads exactly one reply's bytes (see the module documentation).
    fn receive(&mut self, deadline: Instant) -> Result<Vec<u8>, WireError> {
        let max_reply = self.bounds.max_reply;
        let mut buf: Vec<u8> = Vec::new();
        // Where the next header starts, and how many values are still to
        // come (an array's header adds its elements).
        let mut pos = 0usize;
        let mut values: u64 = 1;
        // Where the search for the current header's end resumes.
        let mut scanned = 0usize;
        while values > 0 {
            // One header line: a type byte, text, CRLF.
            let end = loop {
                if let Some(i) = find_crlf(&buf[scanned.max(pos)..]) {
                    break scanned.max(pos) + i;
                }
                scanned = buf.len().saturating_sub(1);
                let want = buf.len() + 1;
                self.fill(&mut buf, want, deadline)?;
            };
            let line = &buf[pos + 1..end];
            let kind = buf[pos];
            let mut next = end + 2;
            values -= 1;
            match kind {
                b'+' | b'-' | b':' => {}
                b'$' => {
                    let n = number(line)?;
                    if n >= 0 {
                        let n = n as u64;
                        if n > self.bounds.max_bulk {
                            return Err(WireError::TooLarge {
                                announced: n,
                                limit: self.bounds.max_bulk,
                            });
                        }
                        let total = next as u64 + n + 2;
                        if total > max_reply {
                            return Err(WireError::TooLarge {
                                announced: total,
                                limit: max_reply,
                            });
                        }
                        next = total as usize;
                        self.fill(&mut buf, next, deadline)?;
                        if &buf[next - 2..next] != b"\r\n" {
                            return Err(WireError::Protocol(
                                "a bulk string longer than its header says".into(),
                            ));
                        }
                    }
                }
                b'*' => {
                    let n = number(line)?;
                    if n > 0 {
                        // Each value takes at least 3 bytes (`+\r\n`).
                        let least = (next as u64)
                            .saturating_add((values.saturating_add(n as u64)).saturating_mul(3));
                        if least > max_reply {
                            return Err(WireError::TooLarge {
                                announced: least,
                                limit: max_reply,
                            });
                        }
                        values += n as u64;
                    }
                }
                other => {
                    return Err(WireError::Protocol(format!(
                        "a reply starting with byte {other:#04x}"
                    )))
                }
            }
            pos = next;
            scanned = pos;
        }
        if buf.len() > pos {
            return Err(WireError::Protocol(format!(
                "{} bytes after the reply",
                buf.len() - pos
            )));
        }
        Ok(buf)
    }

    /// Reads until `buf` holds at least `want` bytes (at most `max_reply`
    /// in all), before `deadline`.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize, deadline: Instant) -> Result<(), WireError> {
        let max_reply = self.bounds.max_reply;
        if want as u64 > max_reply {
            return Err(WireError::TooLarge {
                announced: want as u64,
                limit: max_reply,
            });
        }
        let mut chunk = [0u8; 16 * 1024];
        while buf.len() < want {
            left(deadline, buf.len())?;
            // Read no further than the bound allows.
            let room = (max_reply as usize - buf.len()).min(chunk.len());
            match self.link.read(&mut chunk[..room]) {
                Ok(0) => {
                    return Err(WireError::Io(std::io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )))
                }
                Ok(n) => {
                    // Room for what is wanted and one more read: the
                    // buffer never grows past the bound by doubling.
                    if buf.capacity() < buf.len() + n {
                        buf.reserve_exact(want.max(buf.len() + n) - buf.len() + chunk.len());
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// The position of the first CRLF in `bytes`.
fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

/// A header's length or count.
fn number(line: &[u8]) -> Result<i64, WireError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|n| *n >= -1)
        .ok_or_else(|| {
            WireError::Protocol(format!(
                "a length that is not a number: {:?}",
                String::from_utf8_lossy(&line[..line.len().min(32)])
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers the first command with `reply` (sent in
    /// pieces of `piece` bytes), and a wire connected to it.
    fn serve(reply: Vec<u8>, piece: usize, bounds: Bounds) -> Wire {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = [0u8; 256];
            let _ = s.read(&mut request);
            for p in reply.chunks(piece) {
                if s.write_all(p).is_err() {
                    return;
                }
            }
            std::thread::sleep(Duration::from_secs(2));
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        Wire::connect("127.0.0.1", port, deadline, bounds, &Transport::Plain).unwrap()
    }

    const BOUNDS: Bounds = Bounds {
        max_bulk: 16,
        max_reply: 64,
    };

    fn ask(reply: &[u8], piece: usize) -> Result<redis::Value, WireError> {
        let mut w = serve(reply.to_vec(), piece, BOUNDS);
        let packed = redis::cmd("MGET").arg("a").arg("b").get_packed_command();
        w.command(&packed, Instant::now() + Duration::from_secs(5))
    }

    #[test]
    fn replies_within_the_bounds_parse_whole_in_any_pieces() {
        let reply = b"*3\r\n$5\r\nhello\r\n$-1\r\n*2\r\n:7\r\n+OK\r\n";
        for piece in [1, 2, 3, 7, reply.len()] {
            let v = ask(reply, piece).unwrap();
            let (a, b, c): (Vec<u8>, Option<Vec<u8>>, (i64, String)) =
                redis::from_redis_value(v).unwrap();
            assert_eq!(
                (a.as_slice(), b, c),
                (&b"hello"[..], None, (7, "OK".into()))
            );
        }
        let err = ask(b"-ERR no\r\n", 1).unwrap().extract_error().unwrap_err();
        assert!(err.to_string().contains("no"), "{err}");
    }

    #[test]
    fn a_bulk_or_a_reply_over_its_bound_is_refused_from_its_framing() {
        let e = ask(b"$1073741824\r\nxxxx", 4).unwrap_err();
        assert!(
            matches!(
                e,
                WireError::TooLarge {
                    announced: 1073741824,
                    limit: 16
                }
            ),
            "{e}"
        );
        // Each bulk fits, the array does not.
        let mut many = b"*5\r\n".to_vec();
        for _ in 0..5 {
            many.extend_from_slice(b"$16\r\n0123456789abcdef\r\n");
        }
        assert!(matches!(ask(&many, 5), Err(WireError::TooLarge { .. })));
        // A count no reply of 64 bytes can hold.
        assert!(matches!(
            ask(b"*1000000000\r\n", 3),
            Err(WireError::TooLarge { .. })
        ));
        // A header line that never ends stops at the bound.
        let endless = vec![b'+'; 200];
        assert!(matches!(ask(&endless, 10), Err(WireError::TooLarge { .. })));
    }

    #[test]
    fn malformed_replies_are_protocol_errors() {
        for bad in [&b"$3\r\nabcdef\r\n"[..], b"?x\r\n", b"$x\r\n", b"*-5\r\n"] {
            assert!(
                matches!(ask(bad, 64), Err(WireError::Protocol(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_trickled_reply_stops_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = [0u8; 256];
            let _ = s.read(&mut request);
            for b in b"*2\r\n$5\r\nhello\r\n$-1\r\n".iter().cycle() {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let bounds = Bounds {
            max_bulk: 1 << 20,
            max_reply: 1 << 20,
        };
        let mut w = Wire::connect(
            "127.0.0.1",
            port,
            Instant::now() + Duration::from_secs(5),
            bounds,
            &Transport::Plain,
        )
        .unwrap();
        let started = Instant::now();
        let packed = redis::cmd("GET").arg("a").get_packed_command();
        let e = w
            .command(&packed, started + Duration::from_millis(300))
            .unwrap_err();
        assert!(matches!(e, WireError::Timeout(_)), "{e}");
        // Generous: the deadline is 0.3 s, a byte comes every 0.1 s.
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
