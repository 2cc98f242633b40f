//! The arrays a call returns.
//!
//! Most kernels have one or two outputs. Returning them in a `Vec` would be
//! a heap allocation and a free per call on the dispatch path, whose every
//! touched line counts on a GPU host;
//! [`Outputs`] holds up to two arrays inline and spills to the heap beyond.
//! It reads like a slice (`outs[0]`, `outs.len()`, `outs.iter()`) and
//! converts into a `Vec` for those who want one.

use std::ops::{Deref, DerefMut};

use smallvec::SmallVec;

use crate::array::Array;

/// Arrays held inline before spilling to the heap.
const INLINE: usize = 2;

/// The outputs of one call, in the order of the kernel's output names.
#[derive(Clone, Debug, Default)]
pub struct Outputs(SmallVec<[Array; INLINE]>);

impl Outputs {
    pub(crate) fn push(&mut self, array: Array) {
        self.0.push(array);
    }

    /// Takes output `index` out, shifting the later ones down (as
    /// `Vec::remove`). Panics if `index` is out of bounds.
    pub fn remove(&mut self, index: usize) -> Array {
        self.0.remove(index)
    }

    /// Takes the last output out, if any.
    pub fn pop(&mut self) -> Option<Array> {
        self.0.pop()
    }

    /// The outputs as a `Vec`.
    pub fn into_vec(self) -> Vec<Array> {
        self.0.into_vec()
    }
}

impl Deref for Outputs {
    type Target = [Array];
    fn deref(&self) -> &[Array] {
        &self.0
    }
}

impl DerefMut for Outputs {
    fn deref_mut(&mut self) -> &mut [Array] {
        &mut self.0
    }
}

impl IntoIterator for Outputs {
    type Item = Array;
    type IntoIter = smallvec::IntoIter<[Array; INLINE]>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Outputs {
    type Item = &'a Array;
    type IntoIter = std::slice::Iter<'a, Array>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<Outputs> for Vec<Array> {
    fn from(outputs: Outputs) -> Vec<Array> {
        outputs.into_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    fn outputs(n: usize) -> Outputs {
        let dev = Device::cpu();
        let mut out = Outputs::default();
        for i in 0..n {
            out.push(dev.array_from_slice(&[i as i32], [1]).unwrap());
        }
        out
    }

    fn values(arrays: &[Array]) -> Vec<i32> {
        arrays
            .iter()
            .map(|a| a.to_vec::<i32>().unwrap()[0])
            .collect()
    }

    #[test]
    fn reads_like_a_slice_and_keeps_order_inline_and_spilled() {
        for n in [0, 1, 2, 3, 5] {
            let out = outputs(n);
            assert_eq!(out.len(), n);
            assert_eq!(values(&out), (0..n as i32).collect::<Vec<_>>());
            let by_ref: Vec<i32> = (&out)
                .into_iter()
                .map(|a| a.to_vec::<i32>().unwrap()[0])
                .collect();
            assert_eq!(by_ref, values(&out));
            assert_eq!(values(&out.clone().into_vec()), values(&out));
            let owned: Vec<Array> = out.into_iter().collect();
            assert_eq!(values(&owned), (0..n as i32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn remove_and_pop_take_arrays_out() {
        let mut out = outputs(3);
        assert_eq!(values(&[out.remove(1)]), [1]);
        assert_eq!(values(&out), [0, 2]);
        assert_eq!(values(&[out.pop().unwrap()]), [2]);
        assert_eq!(values(&Vec::from(out)), [0]);
    }
}
