//! The bytes a tuning signature is built from.

/// The bytes of a call's tuning signature: on the stack up to
/// [`SignatureBytes::INLINE`] bytes, else on the heap.
///
/// A warm tuned call writes a dozen small pieces (dtypes, extents,
/// template values) before it can look up its choice; with a `SmallVec`
/// each `extend_from_slice` is a generic insert (a capacity check, a
/// possible grow, a move of the tail), and those inserts were most of
/// what a warm tuned call cost beyond an untuned one. Here a write is one
/// bounds check and a copy of a size known where it is called. Public so
/// that bindings keeping their own memo of choices (kernelkit's Python
/// package) write their signatures the same way.
pub struct SignatureBytes {
    len: usize,
    inline: [u8; SignatureBytes::INLINE],
    /// Every byte once `len` passed `INLINE` (empty before).
    heap: Vec<u8>,
}

impl SignatureBytes {
    /// Bytes held without a heap allocation.
    pub const INLINE: usize = 192;

    /// No bytes yet.
    #[inline]
    pub fn new() -> SignatureBytes {
        SignatureBytes {
            len: 0,
            inline: [0; SignatureBytes::INLINE],
            heap: Vec::new(),
        }
    }

    /// Appends one byte.
    #[inline(always)]
    pub fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    /// Appends `bytes`.
    #[inline(always)]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end <= SignatureBytes::INLINE {
            self.inline[self.len..end].copy_from_slice(bytes);
            self.len = end;
        } else {
            self.spill(bytes);
        }
    }

    #[cold]
    fn spill(&mut self, bytes: &[u8]) {
        if self.len <= SignatureBytes::INLINE {
            self.heap.extend_from_slice(&self.inline[..self.len]);
        }
        self.heap.extend_from_slice(bytes);
        self.len += bytes.len();
    }
}

impl Default for SignatureBytes {
    fn default() -> Self {
        SignatureBytes::new()
    }
}

impl std::ops::Deref for SignatureBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        if self.len <= SignatureBytes::INLINE {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

impl PartialEq for SignatureBytes {
    fn eq(&self, other: &SignatureBytes) -> bool {
        **self == **other
    }
}

impl Eq for SignatureBytes {}

impl std::fmt::Debug for SignatureBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SignatureBytes").field(&&**self).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_back_in_order_across_the_spill() {
        let mut sig = SignatureBytes::new();
        let mut want = Vec::new();
        for i in 0..100u64 {
            sig.push(i as u8);
            sig.extend_from_slice(&i.to_le_bytes());
            want.push(i as u8);
            want.extend_from_slice(&i.to_le_bytes());
            assert_eq!(&*sig, &want[..], "after {} bytes", want.len());
        }
        assert!(want.len() > SignatureBytes::INLINE);
        let mut other = SignatureBytes::new();
        other.extend_from_slice(&want);
        assert_eq!(sig, other, "one write or many, the same bytes");
        other.push(0);
        assert_ne!(sig, other);
    }
}
