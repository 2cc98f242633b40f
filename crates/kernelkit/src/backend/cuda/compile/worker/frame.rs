//! The compile workers' wire format: length-prefixed binary frames.
//!
//! A frame is a little-endian `u32` body length, then the body. A body is a
//! tag byte and the message's fields: `u32` (little-endian), byte strings
//! and UTF-8 strings (a `u32` length, then the bytes), string lists (a `u32`
//! count, then the strings). Nothing else: no padding, no trailing bytes.
//!
//! Both ends trust nothing they read. A length over [`MAX_FRAME`], a frame
//! cut short, an unknown tag, bad UTF-8, a list longer than its bytes could
//! hold or bytes left over are errors, never a panic or a huge allocation;
//! the parent kills a worker that sends one and compiles in-process.

use std::io::{self, Read, Write};

use thiserror::Error;

/// The largest body either end accepts (a cubin or a source with a large
/// header is far smaller).
pub(crate) const MAX_FRAME: usize = 256 << 20;

/// First bytes of both handshake messages.
const MAGIC: [u8; 4] = *b"KKCW";

/// Reads one frame's body; `Ok(None)` at a clean end of input (before the
/// first byte of a frame).
pub(crate) fn read_frame(input: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match input.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(cut_short("length")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the {MAX_FRAME}-byte limit"),
        ));
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            cut_short("body")
        } else {
            e
        }
    })?;
    Ok(Some(body))
}

fn cut_short(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the input ended inside a frame's {what}"),
    )
}

/// Writes one frame and flushes it.
pub(crate) fn write_frame(output: &mut (impl Write + ?Sized), body: &[u8]) -> io::Result<()> {
    if body.len() > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a frame of {} bytes is over the {MAX_FRAME}-byte limit",
                body.len()
            ),
        ));
    }
    output.write_all(&(body.len() as u32).to_le_bytes())?;
    output.write_all(body)?;
    output.flush()
}

/// Which artifact NVRTC hands back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// SASS for a real architecture.
    Cubin,
    /// PTX (NUL-terminated), for the driver to finish.
    Ptx,
}

/// Every message of the protocol. The parent sends `Hello`, the worker
/// answers `Ready` or `Refused`; then, one at a time, the parent sends
/// `Compile` and the worker answers `Done`, `Rejected` or `Failed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// The parent's opening: the protocol it speaks.
    Hello {
        /// [`PROTOCOL`](super::PROTOCOL) of the parent.
        protocol: u32,
    },
    /// The worker can compile: its protocol and NVRTC version.
    Ready {
        /// The worker's protocol.
        protocol: u32,
        /// NVRTC's major and minor version in the worker.
        nvrtc: (u32, u32),
    },
    /// The worker cannot compile (no NVRTC, another protocol).
    Refused {
        /// Why, for the parent's log.
        reason: String,
    },
    /// One compile job.
    Compile {
        /// The file name NVRTC reports errors against.
        program: String,
        /// The CUDA source.
        source: String,
        /// The files its `#include`s read: include name and contents.
        headers: Vec<(String, Vec<u8>)>,
        /// Every NVRTC option, the architecture among them.
        options: Vec<String>,
        /// What to hand back.
        output: Output,
    },
    /// The artifact.
    Done {
        /// Cubin or PTX bytes.
        artifact: Vec<u8>,
    },
    /// NVRTC rejected the source.
    Rejected {
        /// NVRTC's log, as NVRTC wrote it.
        log: String,
    },
    /// NVRTC could not run the job (not a fault of the source).
    Failed {
        /// What went wrong.
        reason: String,
    },
}

/// Why a body is not a message.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The body ended inside a field.
    #[error("the message ends inside its {0}")]
    Truncated(&'static str),
    /// The first byte names no message.
    #[error("unknown message tag {0}")]
    UnknownTag(u8),
    /// A handshake without the protocol's magic bytes.
    #[error("not a kernelkit compile worker message (bad magic)")]
    BadMagic,
    /// A string field is not UTF-8.
    #[error("the {0} is not UTF-8")]
    NotUtf8(&'static str),
    /// An enumeration field out of range.
    #[error("bad {0} value {1}")]
    BadValue(&'static str, u32),
    /// Bytes after the last field.
    #[error("{0} bytes after the end of the message")]
    Trailing(usize),
}

const HELLO: u8 = 1;
const READY: u8 = 2;
const REFUSED: u8 = 3;
const COMPILE: u8 = 4;
const DONE: u8 = 5;
const REJECTED: u8 = 6;
const FAILED: u8 = 7;

impl Message {
    /// The message's body (without the frame's length).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let u32_ = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
        let bytes = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        };
        match self {
            Message::Hello { protocol } => {
                out.push(HELLO);
                out.extend_from_slice(&MAGIC);
                u32_(&mut out, *protocol);
            }
            Message::Ready { protocol, nvrtc } => {
                out.push(READY);
                out.extend_from_slice(&MAGIC);
                u32_(&mut out, *protocol);
                u32_(&mut out, nvrtc.0);
                u32_(&mut out, nvrtc.1);
            }
            Message::Refused { reason } => {
                out.push(REFUSED);
                out.extend_from_slice(&MAGIC);
                bytes(&mut out, reason.as_bytes());
            }
            Message::Compile {
                program,
                source,
                headers,
                options,
                output,
            } => {
                out.push(COMPILE);
                bytes(&mut out, program.as_bytes());
                bytes(&mut out, source.as_bytes());
                u32_(&mut out, headers.len() as u32);
                for (name, text) in headers {
                    bytes(&mut out, name.as_bytes());
                    bytes(&mut out, text);
                }
                u32_(&mut out, options.len() as u32);
                for o in options {
                    bytes(&mut out, o.as_bytes());
                }
                u32_(&mut out, *output as u32);
            }
            Message::Done { artifact } => {
                out.push(DONE);
                bytes(&mut out, artifact);
            }
            Message::Rejected { log } => {
                out.push(REJECTED);
                bytes(&mut out, log.as_bytes());
            }
            Message::Failed { reason } => {
                out.push(FAILED);
                bytes(&mut out, reason.as_bytes());
            }
        }
        out
    }

    /// Parses a body; see the module documentation for what is refused.
    pub(crate) fn decode(body: &[u8]) -> Result<Message, DecodeError> {
        let mut r = Reader(body);
        let tag = r.take(1, "tag")?[0];
        let message = match tag {
            HELLO => {
                r.magic()?;
                Message::Hello {
                    protocol: r.u32("protocol")?,
                }
            }
            READY => {
                r.magic()?;
                Message::Ready {
                    protocol: r.u32("protocol")?,
                    nvrtc: (r.u32("NVRTC version")?, r.u32("NVRTC version")?),
                }
            }
            REFUSED => {
                r.magic()?;
                Message::Refused {
                    reason: r.string("reason")?,
                }
            }
            COMPILE => {
                let program = r.string("program name")?;
                let source = r.string("source")?;
                let count = r.u32("header count")? as usize;
                // Each header takes at least its two 4-byte lengths.
                if count > r.0.len() / 8 {
                    return Err(DecodeError::Truncated("headers"));
                }
                let headers = (0..count)
                    .map(|_| Ok((r.string("header name")?, r.bytes("header")?.to_vec())))
                    .collect::<Result<_, DecodeError>>()?;
                let count = r.u32("option count")? as usize;
                // Each option takes at least its 4-byte length: a count the
                // remaining bytes cannot hold is refused before allocating.
                if count > r.0.len() / 4 {
                    return Err(DecodeError::Truncated("options"));
                }
                let options = (0..count)
                    .map(|_| r.string("option"))
                    .collect::<Result<_, _>>()?;
                let output = match r.u32("output kind")? {
                    0 => Output::Cubin,
                    1 => Output::Ptx,
                    other => return Err(DecodeError::BadValue("output kind", other)),
                };
                Message::Compile {
                    program,
                    source,
                    headers,
                    options,
                    output,
                }
            }
            DONE => Message::Done {
                artifact: r.bytes("artifact")?.to_vec(),
            },
            REJECTED => Message::Rejected {
                log: r.string("log")?,
            },
            FAILED => Message::Failed {
                reason: r.string("reason")?,
            },
            other => return Err(DecodeError::UnknownTag(other)),
        };
        if !r.0.is_empty() {
            return Err(DecodeError::Trailing(r.0.len()));
        }
        Ok(message)
    }
}

/// A cursor over a body.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }

    fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let b = self.bytes(what)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| DecodeError::NotUtf8(what))
    }

    fn magic(&mut self) -> Result<(), DecodeError> {
        if self.take(4, "magic")? == MAGIC {
            Ok(())
        } else {
            Err(DecodeError::BadMagic)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Message> {
        vec![
            Message::Hello { protocol: 3 },
            Message::Ready {
                protocol: 3,
                nvrtc: (13, 0),
            },
            Message::Refused {
                reason: "no NVRTC".into(),
            },
            Message::Compile {
                program: "kernel.cu".into(),
                source: "extern \"C\" __global__ void k() { /* é */ }".into(),
                headers: vec![
                    ("/abs/params.h".into(), b"#define VAL 1.0f\n".to_vec()),
                    ("empty.h".into(), vec![]),
                ],
                options: vec!["--gpu-architecture=sm_90a".into(), String::new()],
                output: Output::Cubin,
            },
            Message::Compile {
                program: String::new(),
                source: String::new(),
                headers: vec![],
                options: vec![],
                output: Output::Ptx,
            },
            Message::Done {
                artifact: vec![0x7f, b'E', b'L', b'F', 0, 255],
            },
            Message::Done { artifact: vec![] },
            Message::Rejected {
                log: "kernel.cu(3): error: identifier \"x\" is undefined".into(),
            },
            Message::Failed {
                reason: "out of memory".into(),
            },
        ]
    }

    #[test]
    fn messages_round_trip_through_frames() {
        let mut wire = Vec::new();
        for m in all() {
            write_frame(&mut wire, &m.encode()).unwrap();
        }
        let mut input = wire.as_slice();
        for m in all() {
            let body = read_frame(&mut input).unwrap().expect("a frame");
            assert_eq!(Message::decode(&body).unwrap(), m);
        }
        assert!(read_frame(&mut input).unwrap().is_none(), "clean end");
    }

    #[test]
    fn a_frame_cut_anywhere_is_an_error() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &all()[3].encode()).unwrap();
        for cut in 1..wire.len() {
            let err = read_frame(&mut &wire[..cut]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    #[test]
    fn an_oversized_length_is_refused_before_allocating() {
        let wire = u32::MAX.to_le_bytes();
        let err = read_frame(&mut &wire[..]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(write_frame(&mut Vec::new(), &vec![0u8; MAX_FRAME + 1]).is_err());
    }

    #[test]
    fn truncated_bodies_are_errors() {
        for m in all() {
            let body = m.encode();
            for cut in 0..body.len() {
                assert!(
                    Message::decode(&body[..cut]).is_err(),
                    "{m:?} cut at {cut} decoded"
                );
            }
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(Message::decode(&[0]), Err(DecodeError::UnknownTag(0)));
        assert_eq!(
            Message::decode(&[99, 1, 2]),
            Err(DecodeError::UnknownTag(99))
        );
        assert_eq!(
            Message::decode(b"\x01XXXX\x03\0\0\0"),
            Err(DecodeError::BadMagic)
        );
        let mut trailing = Message::Hello { protocol: 1 }.encode();
        trailing.push(0);
        assert_eq!(Message::decode(&trailing), Err(DecodeError::Trailing(1)));
        // A log that is not UTF-8.
        assert_eq!(
            Message::decode(&[REJECTED, 2, 0, 0, 0, 0xff, 0xfe]),
            Err(DecodeError::NotUtf8("log"))
        );
        // A compile job claiming four billion options in a few bytes.
        let mut huge_headers = vec![COMPILE, 0, 0, 0, 0, 0, 0, 0, 0];
        huge_headers.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Message::decode(&huge_headers),
            Err(DecodeError::Truncated("headers"))
        );
        let mut huge = vec![COMPILE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Message::decode(&huge),
            Err(DecodeError::Truncated("options"))
        );
        // Output kind out of range.
        let mut bad = vec![COMPILE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        bad.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            Message::decode(&bad),
            Err(DecodeError::BadValue("output kind", 7))
        );
        // A deterministic stream of pseudo-random bodies: every one is
        // answered with a message or an error.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let len = (x % 64) as usize;
            let body: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 9) as u8 // small bytes hit the real tags often
                })
                .collect();
            if let Ok(m) = Message::decode(&body) {
                assert_eq!(m.encode(), body, "a decoded body re-encodes to itself");
            }
        }
    }
}
