//! `kernelkit compile-worker` speaks the worker protocol on stdin/stdout
//! and nothing else: it answers the handshake with one frame (ready with
//! NVRTC's version where NVRTC is installed, refused with the reason where
//! it is not) and exits when its input ends.

#![cfg(feature = "cuda")]

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// The protocol version this test speaks (2: compile jobs carry headers;
/// 3: a job asking for the precompiled prelude is compiled as the worker
/// decides).
const PROTOCOL: u32 = 3;

/// The handshake frame, written out by hand: the test checks the wire
/// format, not the library's encoder.
fn hello(protocol: u32) -> Vec<u8> {
    let mut body = vec![1u8];
    body.extend_from_slice(b"KKCW");
    body.extend_from_slice(&protocol.to_le_bytes());
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn the_worker_answers_the_handshake_and_exits_at_end_of_input() {
    assert_eq!(kernelkit::compile_worker::WORKER_ARG, "compile-worker");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kernelkit"))
        .arg(kernelkit::compile_worker::WORKER_ARG)
        .env_remove("KERNELKIT_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kernelkit binary runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&hello(PROTOCOL)).unwrap();
    drop(stdin); // end of input after the handshake
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    assert!(out.len() >= 9, "one frame expected, got {out:?}");
    let len = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
    assert_eq!(out.len(), 4 + len, "exactly one frame on stdout: {out:?}");
    let body = &out[4..];
    assert_eq!(&body[1..5], b"KKCW");
    match body[0] {
        2 => {
            // Ready: protocol, NVRTC major, minor.
            assert_eq!(body.len(), 1 + 4 + 12);
            assert_eq!(u32::from_le_bytes(body[5..9].try_into().unwrap()), PROTOCOL);
            let major = u32::from_le_bytes(body[9..13].try_into().unwrap());
            assert!(major >= 11, "NVRTC {major}");
        }
        3 => {
            // Refused: the reason names NVRTC.
            let reason = String::from_utf8_lossy(&body[9..]);
            assert!(reason.contains("NVRTC"), "{reason}");
        }
        tag => panic!("unexpected answer tag {tag}"),
    }
}

#[test]
fn garbage_makes_the_worker_exit_with_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kernelkit"))
        .arg("compile-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kernelkit binary runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\x03\0\0\0abc").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("compile-worker"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
