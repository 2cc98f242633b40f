//! Variants: one kernel specialised for one call's dtypes, pass modes and
//! template arguments, with its generated name and source.

use std::sync::{Arc, OnceLock};

use smallvec::SmallVec;

use crate::codegen::Dialect;
use crate::device::DeviceId;
use crate::dtype::DType;
use crate::kernel::template::{TemplateArg, TemplateParam};

/// How an input reaches the kernel. The same split as MLX's signature
/// writer: it changes the generated parameter (Metal address space, or a
/// value instead of a pointer), so it is part of the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PassMode {
    /// A 0-d array: passed as a value (`const constant T&`).
    Scalar = 0,
    /// Fewer than 8 elements: the `constant` address space.
    Constant = 1,
    /// Everything else: a `device` pointer.
    Device = 2,
}

impl PassMode {
    /// The mode MLX picks for an array of `ndim` dimensions and `size` elements.
    pub fn of(ndim: usize, size: usize) -> PassMode {
        if ndim == 0 {
            PassMode::Scalar
        } else if size < 8 {
            PassMode::Constant
        } else {
            PassMode::Device
        }
    }
}

/// An input as the generators see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputDesc {
    /// Element type.
    pub dtype: DType,
    /// Pass mode.
    pub mode: PassMode,
}

/// Everything a generator needs from a call beyond the kernel spec.
#[derive(Clone, Debug)]
pub struct VariantDesc<'a> {
    /// Per input, in order.
    pub inputs: &'a [InputDesc],
    /// Per output dtype, in order.
    pub outputs: &'a [DType],
    /// Template arguments, in order.
    pub template: &'a [TemplateParam<'a>],
}

/// The bytes that identify a variant within one kernel: built on the stack
/// for every call, compared against the memo's keys.
pub(crate) type KeyBytes = SmallVec<[u8; 96]>;

/// Encodes the raw call arguments the generated name and source depend on:
/// the dialect, each input's dtype and pass mode, each output's dtype, and
/// each template argument's kind, name and value. Lengths are written before
/// every list and name, so two different calls never encode alike.
///
/// This runs on every call, so it sizes the key once and then writes bytes
/// at a running index: pushing byte by byte would load and store the
/// buffer's length around every byte, which cost a fifth of a memo hit.
pub(crate) fn encode_key(dialect: Dialect, desc: &VariantDesc<'_>, out: &mut KeyBytes) {
    let template_len: usize = desc
        .template
        .iter()
        .map(|t| {
            let value = match t.value {
                TemplateArg::Int(_) => 4,
                TemplateArg::Bool(_) | TemplateArg::DType(_) => 1,
            };
            1 + 4 + t.name.len() + value
        })
        .sum();
    let len = 1 + 4 + desc.inputs.len() + 4 + desc.outputs.len() + 4 + template_len;
    let start = out.len();
    out.resize(start + len, 0);
    let mut w = KeyWriter {
        buf: &mut out[start..],
        at: 0,
    };
    w.byte(dialect as u8);
    w.bytes(&(desc.inputs.len() as u32).to_le_bytes());
    for i in desc.inputs {
        w.byte(i.dtype.key_byte() | ((i.mode as u8) << 5));
    }
    w.bytes(&(desc.outputs.len() as u32).to_le_bytes());
    for d in desc.outputs {
        w.byte(d.key_byte());
    }
    w.bytes(&(desc.template.len() as u32).to_le_bytes());
    for t in desc.template {
        w.byte(t.value.kind());
        w.bytes(&(t.name.len() as u32).to_le_bytes());
        w.bytes(t.name.as_bytes());
        match t.value {
            TemplateArg::Int(v) => w.bytes(&v.to_le_bytes()),
            TemplateArg::Bool(b) => w.byte(b as u8),
            TemplateArg::DType(d) => w.byte(d.key_byte()),
        }
    }
    debug_assert_eq!(w.at, len, "the key's size was computed wrongly");
}

/// Writes into a key already sized to fit.
struct KeyWriter<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl KeyWriter<'_> {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }
    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
}

/// A loaded function, resolved once and shared by every launch of a variant.
/// The backend downcasts it; it keeps its module alive.
pub(crate) type Function = Arc<dyn std::any::Any + Send + Sync>;

/// One kernel specialised for one call signature.
///
/// Built once per key (the memo), then shared by every launch through an
/// `Arc`: a launch prepared before its memo entry was cleared still owns its
/// source and runs.
pub struct Variant {
    pub(crate) dialect: Dialect,
    pub(crate) name: Arc<str>,
    pub(crate) source: Arc<str>,
    pub(crate) source_hash: u64,
    /// The function for the first device this variant ran on, so that a hit
    /// on that device takes no lock at all. Other devices go through their
    /// kernel cache.
    pub(crate) function: OnceLock<(DeviceId, Function)>,
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variant")
            .field("dialect", &self.dialect)
            .field("name", &self.name)
            .field("source_hash", &format_args!("{:016x}", self.source_hash))
            .finish_non_exhaustive()
    }
}

impl Variant {
    pub(crate) fn new(dialect: Dialect, name: String, source: String) -> Variant {
        let source_hash = xxhash_rust::xxh3::xxh3_64(source.as_bytes());
        Variant {
            dialect,
            name: name.into(),
            source: source.into(),
            source_hash,
            function: OnceLock::new(),
        }
    }

    /// The generated function name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The generated source.
    pub fn source(&self) -> &str {
        &self.source
    }
    /// The source, shared: it lives as long as any launch holds it.
    pub fn shared_source(&self) -> &Arc<str> {
        &self.source
    }
    /// The hash of the source (xxh3-64), computed once.
    pub fn source_hash(&self) -> u64 {
        self.source_hash
    }
    /// The dialect the source is written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
    /// The module key: `{kernel name}_{source hash as hex}_{options}`, the
    /// format MLX uses for its library cache.
    pub fn module_key(&self, options: &str) -> String {
        format!("{}_{:x}_{}", self.name, self.source_hash, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn key(template: &[TemplateParam<'_>]) -> KeyBytes {
        let mut k = KeyBytes::new();
        let inputs = [InputDesc {
            dtype: DType::F32,
            mode: PassMode::Device,
        }];
        encode_key(
            Dialect::Cpu,
            &VariantDesc {
                inputs: &inputs,
                outputs: &[DType::F32],
                template,
            },
            &mut k,
        );
        k
    }

    #[test]
    fn int_one_and_bool_true_differ() {
        let a = key(&[TemplateParam {
            name: Cow::Borrowed("V"),
            value: TemplateArg::Int(1),
        }]);
        let b = key(&[TemplateParam {
            name: Cow::Borrowed("V"),
            value: TemplateArg::Bool(true),
        }]);
        assert_ne!(a, b);
    }

    #[test]
    fn names_are_length_prefixed() {
        let a = key(&[TemplateParam {
            name: Cow::Borrowed("AB"),
            value: TemplateArg::Bool(true),
        }]);
        let b = key(&[TemplateParam {
            name: Cow::Borrowed("A"),
            value: TemplateArg::Bool(true),
        }]);
        assert_ne!(a, b);
    }

    /// The byte-at-a-time encoder that `encode_key` replaced, kept as the
    /// reference for its layout.
    fn reference_key(dialect: Dialect, desc: &VariantDesc<'_>) -> Vec<u8> {
        let mut out = vec![dialect as u8];
        out.extend_from_slice(&(desc.inputs.len() as u32).to_le_bytes());
        for i in desc.inputs {
            out.push(i.dtype.key_byte() | ((i.mode as u8) << 5));
        }
        out.extend_from_slice(&(desc.outputs.len() as u32).to_le_bytes());
        out.extend(desc.outputs.iter().map(|d| d.key_byte()));
        out.extend_from_slice(&(desc.template.len() as u32).to_le_bytes());
        for t in desc.template {
            out.push(t.value.kind());
            out.extend_from_slice(&(t.name.len() as u32).to_le_bytes());
            out.extend_from_slice(t.name.as_bytes());
            match t.value {
                TemplateArg::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                TemplateArg::Bool(b) => out.push(b as u8),
                TemplateArg::DType(d) => out.push(d.key_byte()),
            }
        }
        out
    }

    #[test]
    fn sized_encoder_writes_the_reference_layout() {
        let inputs = [
            InputDesc {
                dtype: DType::F16,
                mode: PassMode::Scalar,
            },
            InputDesc {
                dtype: DType::I64,
                mode: PassMode::Constant,
            },
            InputDesc {
                dtype: DType::F32,
                mode: PassMode::Device,
            },
        ];
        let long_name = "T".repeat(120);
        let template = [
            TemplateParam {
                name: Cow::Borrowed("N"),
                value: TemplateArg::Int(-7),
            },
            TemplateParam {
                name: Cow::Borrowed("FLAG"),
                value: TemplateArg::Bool(true),
            },
            TemplateParam {
                name: Cow::Borrowed(long_name.as_str()),
                value: TemplateArg::DType(DType::BF16),
            },
        ];
        for n_in in 0..=inputs.len() {
            for n_t in 0..=template.len() {
                for dialect in [Dialect::Metal, Dialect::Cuda, Dialect::Cpu] {
                    let desc = VariantDesc {
                        inputs: &inputs[..n_in],
                        outputs: &[DType::U8, DType::Complex64],
                        template: &template[..n_t],
                    };
                    let mut k = KeyBytes::new();
                    encode_key(dialect, &desc, &mut k);
                    assert_eq!(k.as_slice(), reference_key(dialect, &desc).as_slice());
                }
            }
        }
    }

    #[test]
    fn pass_modes_follow_mlx() {
        assert_eq!(PassMode::of(0, 1), PassMode::Scalar);
        assert_eq!(PassMode::of(1, 7), PassMode::Constant);
        assert_eq!(PassMode::of(2, 8), PassMode::Device);
    }
}
