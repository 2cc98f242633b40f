//! Modules, functions and launches.

use std::ffi::{c_void, CStr};

use cudarc::driver::sys;

use super::{check, driver_error, out, RawFunction, RawModule, RawStream};
use crate::error::DeviceError;

/// `cuModuleLoadData` of a cubin or of NUL-terminated PTX. An image that
/// is neither (an ELF image whose tables or sections lie outside it, or
/// text without a NUL) is refused before the driver reads it.
pub(in crate::backend::cuda) fn module_load(
    image: &[u8],
    label: &str,
) -> Result<RawModule, DeviceError> {
    if let Err(reason) = check_image(image) {
        return Err(DeviceError::Driver {
            device: label.to_string(),
            operation: "cuModuleLoadData",
            reason,
        });
    }
    // SAFETY: the image is a cubin whose headers and sections lie inside
    // the slice, or text with a NUL inside it (checked above), so the
    // driver reads only the slice; it copies what it keeps.
    unsafe {
        out(label, "cuModuleLoadData", |m| {
            sys::cuModuleLoadData(m, image.as_ptr().cast())
        })
    }
    .map(RawModule)
}

/// `cuModuleUnload`. Its result is ignored (it runs in a `Drop`).
pub(in crate::backend::cuda) fn module_unload(module: RawModule) {
    // SAFETY: unloads a module; the caller uses it and its functions no
    // more (and waited for work that may run them).
    unsafe {
        sys::cuModuleUnload(module.0);
    }
}

/// `cuModuleGetFunction`.
pub(in crate::backend::cuda) fn module_function(
    module: RawModule,
    name: &CStr,
    label: &str,
) -> Result<RawFunction, DeviceError> {
    // SAFETY: writes one function handle; `name` is NUL-terminated.
    unsafe {
        out(label, "cuModuleGetFunction", |f| {
            sys::cuModuleGetFunction(f, module.0, name.as_ptr())
        })
    }
    .map(RawFunction)
}

/// What the compiled function itself allows a launch, whatever the device
/// does: its most threads per block (fewer than the device's when it uses
/// many registers), its static shared memory, its registers per thread.
#[derive(Clone, Copy, Debug)]
pub(in crate::backend::cuda) struct FunctionLimits {
    pub(in crate::backend::cuda) max_threads: u32,
    pub(in crate::backend::cuda) static_shared: u32,
    pub(in crate::backend::cuda) registers: u32,
}

/// `cuFuncGetAttribute` of the attributes of [`FunctionLimits`].
pub(in crate::backend::cuda) fn function_limits(
    function: RawFunction,
    label: &str,
) -> Result<FunctionLimits, DeviceError> {
    use sys::CUfunction_attribute as A;
    let get = |attribute: A| {
        // SAFETY: writes one int, an attribute of the driver's function.
        unsafe {
            out(label, "cuFuncGetAttribute", |v| {
                sys::cuFuncGetAttribute(v, attribute, function.0)
            })
        }
        .map(|v: i32| v.max(0) as u32)
    };
    Ok(FunctionLimits {
        max_threads: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        static_shared: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
    })
}

/// `cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`.
pub(in crate::backend::cuda) fn set_max_dynamic_shared(
    function: RawFunction,
    bytes: u32,
    label: &str,
) -> Result<(), DeviceError> {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: sets an attribute of the driver's function.
    check(
        unsafe {
            sys::cuFuncSetAttribute(
                function.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes,
            )
        },
        label,
        "cuFuncSetAttribute",
    )
}

/// A launch the driver refused: its result, made the device's error by
/// [`LaunchFailed::into_error`] (off the launch path, which keeps nothing
/// for the message).
#[derive(Clone, Copy, Debug)]
pub(in crate::backend::cuda) struct LaunchFailed(sys::CUresult);

impl LaunchFailed {
    /// The error of `operation` (`cuLaunchKernel`, or what the launch is
    /// for) on device `label`, with `what` in front of the driver's reason.
    #[cold]
    #[inline(never)]
    pub(in crate::backend::cuda) fn into_error(
        self,
        label: &str,
        operation: &'static str,
        what: String,
    ) -> DeviceError {
        driver_error(self.0, label, operation, what)
    }
}

/// `cuLaunchKernel` of `function` on `blocks` × `threads`, with `shared`
/// bytes of dynamic shared memory, in `stream`'s order.
///
/// # Safety
///
/// `params` must hold one pointer per parameter of `function`, in the
/// order of its signature, each to a value of that parameter's type and
/// size, readable during the call (the driver copies them). Nothing checks
/// this: a wrong list makes the kernel read garbage, or the driver read
/// host memory past a value.
#[inline(always)]
pub(in crate::backend::cuda) unsafe fn launch_kernel(
    function: RawFunction,
    blocks: [u32; 3],
    threads: [u32; 3],
    shared: u32,
    stream: RawStream,
    params: &mut [*mut c_void],
) -> Result<(), LaunchFailed> {
    // SAFETY: the caller's contract covers `params`; the rest are values.
    let r = unsafe {
        sys::cuLaunchKernel(
            function.0,
            blocks[0],
            blocks[1],
            blocks[2],
            threads[0],
            threads[1],
            threads[2],
            shared,
            stream.0,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(LaunchFailed(r));
    }
    Ok(())
}

/// Whether the driver may read `image` as a module without reading past
/// it: a 64-bit ELF image (a cubin) whose header, program and section
/// header tables and every section with contents lie inside the slice;
/// anything else must hold a NUL (the end of PTX text).
fn check_image(image: &[u8]) -> Result<(), String> {
    if !image.starts_with(b"\x7fELF") {
        return if image.contains(&0) {
            Ok(())
        } else {
            Err("the image is neither a cubin nor NUL-terminated PTX".into())
        };
    }
    let bad = |what: &str| Err(format!("the cubin is malformed: {what}"));
    // ELF64, little endian (what NVRTC writes).
    if image.get(4) != Some(&2) || image.get(5) != Some(&1) || image.len() < 64 {
        return bad("not a little-endian 64-bit ELF image");
    }
    let u16_at = |o: usize| u16::from_le_bytes([image[o], image[o + 1]]) as u64;
    let u32_at = |o: usize| u32::from_le_bytes(image[o..o + 4].try_into().unwrap_or([0; 4])) as u64;
    let u64_at = |o: usize| u64::from_le_bytes(image[o..o + 8].try_into().unwrap_or([0; 8]));
    let len = image.len() as u64;
    let inside = |start: u64, size: u64| start.checked_add(size).is_some_and(|end| end <= len);
    let (phoff, shoff) = (u64_at(0x20), u64_at(0x28));
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let (shentsize, shnum) = (u16_at(0x3A), u16_at(0x3C));
    if !inside(phoff, phentsize * phnum) {
        return bad("its program headers lie outside it");
    }
    if !inside(shoff, shentsize * shnum) || (shnum > 0 && shentsize < 64) {
        return bad("its section headers lie outside it");
    }
    for i in 0..shnum {
        let header = (shoff + i * shentsize) as usize;
        const NOBITS: u64 = 8;
        let (kind, offset, size) = (
            u32_at(header + 4),
            u64_at(header + 0x18),
            u64_at(header + 0x20),
        );
        if kind != NOBITS && !inside(offset, size) {
            return bad("a section lies outside it");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_image;

    /// A minimal ELF64 image: the header and one section header.
    fn elf(section_offset: u64, section_size: u64) -> Vec<u8> {
        let mut image = vec![0u8; 64 + 64];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2;
        image[5] = 1;
        image[0x28..0x30].copy_from_slice(&64u64.to_le_bytes()); // e_shoff
        image[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        image[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes()); // e_shnum
        let sh = 64;
        image[sh + 4..sh + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        image[sh + 0x18..sh + 0x20].copy_from_slice(&section_offset.to_le_bytes());
        image[sh + 0x20..sh + 0x28].copy_from_slice(&section_size.to_le_bytes());
        image
    }

    #[test]
    fn only_images_the_driver_reads_inside_are_loaded() {
        assert!(check_image(b".version 8.0\n.target sm_90\0").is_ok());
        assert!(check_image(b"fakecuda image\0").is_ok());
        assert!(check_image(b".version 8.0 without an end").is_err());
        assert!(check_image(&elf(0, 64)).is_ok());
        assert!(check_image(&elf(64, 64)).is_ok());
        assert!(
            check_image(&elf(100, 64)).is_err(),
            "a section past the end"
        );
        assert!(
            check_image(&elf(u64::MAX, 2)).is_err(),
            "an offset that wraps"
        );
        let mut truncated = elf(0, 64);
        truncated.truncate(100);
        assert!(check_image(&truncated).is_err(), "section headers cut off");
        assert!(check_image(b"\x7fELF\x01\x01").is_err(), "32-bit or short");
    }
}
