//! Variant keys: the bytes that identify a variant within one kernel, and
//! their packed form.
//!
//! A key encodes the raw call arguments the generated name and source
//! depend on (the dialect, each input's dtype and pass mode, each output's
//! dtype, each template argument's kind, name and value). It is built on
//! the stack from a call's arguments on every call; a call without template
//! arguments and with few arguments also has a *packed* form, one `u128`,
//! which the per-thread cache compares first (one comparison, no bytes
//! written or read). The memo holds keys as owned bytes.

use smallvec::SmallVec;

use crate::codegen::template::{TemplateArg, TemplateParam};
use crate::codegen::variant::{InputDesc, VariantDesc};
use crate::codegen::Dialect;
use crate::dtype::DType;

/// Bytes of a key held inline (on the stack, in the memo's entries).
const KEY_INLINE: usize = 96;

/// The bytes that identify a variant within one kernel: built on the stack
/// for every call, compared against the memo's keys.
pub(crate) type KeyBytes = SmallVec<[u8; KEY_INLINE]>;

/// Encodes the raw call arguments the generated name and source depend on:
/// the dialect, each input's dtype and pass mode, each output's dtype, and
/// each template argument's kind, name and value. Lengths are written before
/// every list and name, so two different calls never encode alike.
pub(crate) fn encode_key(dialect: Dialect, desc: &VariantDesc<'_>, out: &mut KeyBytes) {
    encode_key_parts(
        dialect,
        desc.inputs.iter().copied(),
        desc.outputs.iter().copied(),
        desc.template,
        out,
    );
}

/// [`encode_key`] from a call's parts as they come, so the dispatch path
/// encodes straight from its arrays without building descriptors first.
///
/// This runs on every call, so it sizes the key once and then writes bytes
/// at a running index, into a stack buffer when the key fits inline:
/// pushing byte by byte, or growing the vector with `resize`, would cost
/// more than the rest of a memo hit.
#[inline]
pub(crate) fn encode_key_parts(
    dialect: Dialect,
    inputs: impl ExactSizeIterator<Item = InputDesc>,
    outputs: impl ExactSizeIterator<Item = DType>,
    template: &[TemplateParam<'_>],
    out: &mut KeyBytes,
) {
    let template_len: usize = template
        .iter()
        .map(|t| {
            let value = match t.value {
                TemplateArg::Int(_) => 4,
                TemplateArg::Bool(_) | TemplateArg::DType(_) => 1,
            };
            1 + 4 + t.name.len() + value
        })
        .sum();
    let len = 1 + 4 + inputs.len() + 4 + outputs.len() + 4 + template_len;
    if out.is_empty() && len <= KEY_INLINE {
        let mut buf = [0u8; KEY_INLINE];
        write_key(dialect, inputs, outputs, template, &mut buf[..len]);
        *out = KeyBytes::from_buf_and_len(buf, len);
    } else {
        let start = out.len();
        out.resize(start + len, 0);
        write_key(dialect, inputs, outputs, template, &mut out[start..]);
    }
}

/// A key of a call without template arguments and with few arguments,
/// packed into one word: what the per-thread cache in front of the memo
/// compares first (one comparison, no bytes written or read). Fields of
/// fixed width: the dialect (2 bits), the input and output counts (4 bits
/// each), then 7 bits per input (dtype and pass mode, as in the key) and 5
/// per output, so two keys pack alike only if they are equal.
pub(crate) type PackedKey = u128;

/// The packed form of the key [`encode_key_parts`] would write, if it has
/// one.
#[inline]
pub(crate) fn pack_key(
    dialect: Dialect,
    inputs: impl ExactSizeIterator<Item = InputDesc>,
    outputs: impl ExactSizeIterator<Item = DType>,
    template: &[TemplateParam<'_>],
) -> Option<PackedKey> {
    if !template.is_empty() {
        return None;
    }
    pack(
        dialect as u8,
        inputs.map(|i| i.dtype.key_byte() | ((i.mode as u8) << 5)),
        outputs.map(DType::key_byte),
    )
}

/// Packs a key from its dialect byte and its input and output key bytes
/// (see [`PackedKey`]); `None` when they do not fit.
#[inline(always)]
fn pack(
    dialect: u8,
    inputs: impl ExactSizeIterator<Item = u8>,
    outputs: impl ExactSizeIterator<Item = u8>,
) -> Option<PackedKey> {
    let (n_in, n_out) = (inputs.len(), outputs.len());
    if n_in > 15 || n_out > 15 || 10 + 7 * n_in + 5 * n_out > 128 {
        return None;
    }
    let mut packed = dialect as u128 | (n_in as u128) << 2 | (n_out as u128) << 6;
    let mut at = 10;
    for b in inputs {
        debug_assert!(b < 1 << 7, "an input's key byte has 7 bits");
        packed |= (b as u128) << at;
        at += 7;
    }
    for b in outputs {
        debug_assert!(b < 1 << 5, "an output's key byte has 5 bits");
        packed |= (b as u128) << at;
        at += 5;
    }
    Some(packed)
}

/// The packed form of an encoded key, if it has one: the same value
/// [`pack_key`] gives for the parts that encode to `key`.
pub(crate) fn pack_key_bytes(key: &[u8]) -> Option<PackedKey> {
    let count = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(key.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let dialect = *key.first()?;
    if dialect > Dialect::Cpu as u8 {
        return None;
    }
    let n_in = count(1)?;
    let inputs = key.get(5..5 + n_in)?;
    let n_out = count(5 + n_in)?;
    let outputs = key.get(9 + n_in..9 + n_in + n_out)?;
    let at = 9 + n_in + n_out;
    if count(at)? != 0 || key.len() != at + 4 {
        return None;
    }
    pack(dialect, inputs.iter().copied(), outputs.iter().copied())
}

/// Writes a key into `buf`, sized to fit it exactly.
#[inline(always)]
fn write_key(
    dialect: Dialect,
    inputs: impl ExactSizeIterator<Item = InputDesc>,
    outputs: impl ExactSizeIterator<Item = DType>,
    template: &[TemplateParam<'_>],
    buf: &mut [u8],
) {
    let mut w = KeyWriter { buf, at: 0 };
    w.byte(dialect as u8);
    w.bytes(&(inputs.len() as u32).to_le_bytes());
    for i in inputs {
        w.byte(i.dtype.key_byte() | ((i.mode as u8) << 5));
    }
    w.bytes(&(outputs.len() as u32).to_le_bytes());
    for d in outputs {
        w.byte(d.key_byte());
    }
    w.bytes(&(template.len() as u32).to_le_bytes());
    for t in template {
        w.byte(t.value.kind());
        w.bytes(&(t.name.len() as u32).to_le_bytes());
        w.bytes(t.name.as_bytes());
        match t.value {
            TemplateArg::Int(v) => w.bytes(&v.to_le_bytes()),
            TemplateArg::Bool(b) => w.byte(b as u8),
            TemplateArg::DType(d) => w.byte(d.key_byte()),
        }
    }
    debug_assert_eq!(w.at, w.buf.len(), "the key's size was computed wrongly");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::variant::PassMode;
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
    fn packed_keys_agree_with_encoded_keys_and_tell_keys_apart() {
        let all = [
            InputDesc {
                dtype: DType::F16,
                mode: PassMode::Scalar,
            },
            InputDesc {
                dtype: DType::Complex64,
                mode: PassMode::Device,
            },
            InputDesc {
                dtype: DType::Bool,
                mode: PassMode::Constant,
            },
        ];
        let outs = [DType::U8, DType::F64, DType::BF16];
        let mut seen: Vec<(PackedKey, Vec<u8>)> = Vec::new();
        for dialect in [Dialect::Metal, Dialect::Cuda, Dialect::Cpu] {
            for n_in in 0..=3 {
                for n_out in 0..=3 {
                    for first in [0, 1] {
                        let inputs: Vec<InputDesc> =
                            (0..n_in).map(|i| all[(i + first) % 3]).collect();
                        let outputs: Vec<DType> =
                            (0..n_out).map(|i| outs[(i + first) % 3]).collect();
                        let desc = VariantDesc {
                            inputs: &inputs,
                            outputs: &outputs,
                            template: &[],
                        };
                        let mut k = KeyBytes::new();
                        encode_key(dialect, &desc, &mut k);
                        let packed = pack_key(
                            dialect,
                            inputs.iter().copied(),
                            outputs.iter().copied(),
                            &[],
                        )
                        .unwrap();
                        assert_eq!(pack_key_bytes(&k), Some(packed));
                        for (p, other) in &seen {
                            assert_eq!(*p == packed, other.as_slice() == k.as_slice());
                        }
                        seen.push((packed, k.to_vec()));
                    }
                }
            }
        }
        // Template arguments, and too many arguments, have no packed form.
        let t = [TemplateParam {
            name: Cow::Borrowed("N"),
            value: TemplateArg::Int(1),
        }];
        let inputs = [all[0]; 16];
        assert_eq!(
            pack_key(Dialect::Cuda, all.iter().copied(), [].into_iter(), &t),
            None
        );
        assert_eq!(
            pack_key(Dialect::Cuda, inputs.iter().copied(), [].into_iter(), &[]),
            None
        );
        let mut k = KeyBytes::new();
        encode_key(
            Dialect::Cuda,
            &VariantDesc {
                inputs: &all,
                outputs: &outs,
                template: &t,
            },
            &mut k,
        );
        assert_eq!(pack_key_bytes(&k), None);
        assert_eq!(pack_key_bytes(&k[..3]), None);
    }
}
