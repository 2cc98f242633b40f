//! NVTX ranges around kernelkit's compiles, loads and launches, so that
//! Nsight Systems (and any NVTX tool) shows each kernel's work by name.
//!
//! Turned on by `KERNELKIT_NVTX=1` ([`NvtxConfig`]): the first device opened
//! with it loads the tool ([`inject`]) and sets a process-wide flag; from
//! then on every compile, module load and launch of every device of the
//! process is a range on the calling thread, named
//! `"{what} {kernel} {function}"` (`launch add_one
//! custom_kernel_add_one_float32_float32_…`: the function name holds the
//! variant). Off, a launch pays one relaxed load of that flag.
//!
//! A launch range covers the host side of the launch (marshalling and the
//! driver call, or the whole run on the CPU): a profiler correlates the
//! range with the kernel it enqueued.
//!
//! No NVTX library is linked: NVTX v3 is a header-only protocol, and
//! [`inject`] speaks its loader's side of it (the tool's injection library
//! from `NVTX_INJECTION64_PATH`, else `libnvToolsExt.so.1` if the loader
//! finds one).

mod inject;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::config::NvtxConfig;

/// Set once a device was opened with NVTX on and a tool was found.
static ON: AtomicBool = AtomicBool::new(false);

/// The tool's entry points, loaded once per process.
static TOOL: OnceLock<Option<inject::Tool>> = OnceLock::new();

/// Turns ranges on for the process if `config` asks and a tool is there
/// (called when a device opens). A config with NVTX off changes nothing:
/// another device may have turned it on.
pub(crate) fn configure(config: &NvtxConfig) {
    if !config.enabled {
        return;
    }
    let tool = TOOL.get_or_init(|| {
        let tool = inject::Tool::load(config.injection.as_deref());
        match &tool {
            Ok(t) => tracing::debug!("NVTX ranges on, through {}", t.describe()),
            Err(why) => tracing::warn!("KERNELKIT_NVTX=1, but no NVTX range is emitted: {why}"),
        }
        tool.ok()
    });
    if tool.is_some() {
        ON.store(true, Ordering::Release);
    }
}

/// Whether ranges are on: the only cost of NVTX on a launch while off.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns ranges off or (where a tool was loaded) on again for the process:
/// the A/B of the benchmarks, in one process.
#[cfg(feature = "bench")]
pub fn set_on(on: bool) -> bool {
    let loaded = matches!(TOOL.get(), Some(Some(_)));
    ON.store(on && loaded, Ordering::Release);
    on && loaded
}

/// What a range covers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum What {
    /// A compile by the backend's compiler.
    Compile,
    /// Loading a module (a stored or fresh artifact).
    Load,
    /// One launch.
    Launch,
}

impl What {
    fn word(self) -> &'static str {
        match self {
            What::Compile => "compile",
            What::Load => "load",
            What::Launch => "launch",
        }
    }
}

/// An open range: popped when dropped (on the thread that pushed it).
#[must_use = "a range ends when this is dropped"]
pub(crate) struct Range {
    tool: &'static inject::Tool,
    /// Not `Send`: NVTX's push/pop ranges are per thread.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Range {
    fn drop(&mut self) {
        self.tool.pop();
    }
}

thread_local! {
    /// Each thread's message buffer: a range's name is written here, with
    /// its NUL, so a launch range allocates nothing once it is warm (NVTX
    /// tools copy the message during the push).
    static MESSAGE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Opens a range named `"{what} {kernel} {function}"` if ranges are on.
#[inline]
pub(crate) fn range(what: What, kernel: &str, function: &str) -> Option<Range> {
    if !on() {
        return None;
    }
    push(what, kernel, function)
}

#[cold]
#[inline(never)]
fn push(what: What, kernel: &str, function: &str) -> Option<Range> {
    let tool = TOOL.get()?.as_ref()?;
    MESSAGE.with(|m| {
        let mut m = m.borrow_mut();
        m.clear();
        m.extend_from_slice(what.word().as_bytes());
        m.push(b' ');
        // Kernel and function names are C identifiers: no NUL inside.
        m.extend_from_slice(kernel.as_bytes());
        m.push(b' ');
        m.extend_from_slice(function.as_bytes());
        m.push(0);
        tool.push(&m);
    });
    Some(Range {
        tool,
        _thread: std::marker::PhantomData,
    })
}
