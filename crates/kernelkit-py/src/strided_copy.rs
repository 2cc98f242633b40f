//! How a strided NumPy array is rebuilt as a kernelkit view of one copied
//! block, so that a kernel built with `ensure_row_contiguous=False` sees the
//! array's real layout (its `_strides`), as in MLX.
//!
//! kernelkit's public views are slices (start, stop, step ≥ 1), axis
//! permutations and broadcasts, over an array created row-major. A NumPy
//! view made by basic indexing, transposes and `broadcast_to` is one of
//! those over a row-major block, and this module finds that block. Layouts
//! it cannot express (negative or overlapping strides, strides that are not
//! whole elements, or a block far larger than the view) get `None`, and the
//! caller copies the array row-contiguous instead: the kernel then sees
//! row-major strides, which a body that reads `_strides` handles the same.
//!
//! Pure arithmetic, no Python: unit-tested here.

/// A block to upload and the views that turn it into the array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ViewPlan {
    /// The row-major shape of the uploaded block.
    pub block: Vec<usize>,
    /// Elements to copy from the array's first element; the rest of the
    /// block (past the array's reach) is padding, zero-filled.
    pub span: usize,
    /// `[start, stop, step]` per block axis.
    pub slices: Vec<[usize; 3]>,
    /// Axis `i` of the array is axis `perm[i]` of the sliced block.
    pub perm: Vec<usize>,
    /// True when some axis is broadcast (stride 0, extent > 1): the
    /// permuted view is then broadcast to the array's shape.
    pub broadcast: bool,
}

/// A copied block may be this many times the array's own size (plus a
/// little) before a row-contiguous copy is made instead.
const MAX_BLOW_UP: usize = 4;
const SLACK: usize = 4096;

/// The plan for an array of `shape` whose strides are `byte_strides`, of
/// elements of `itemsize` bytes, or `None` when a row-contiguous copy is
/// the way (see the module docs).
pub(crate) fn plan_view(
    shape: &[usize],
    byte_strides: &[isize],
    itemsize: usize,
) -> Option<ViewPlan> {
    if shape.len() != byte_strides.len() || itemsize == 0 || shape.contains(&0) {
        return None;
    }
    let mut strides = Vec::with_capacity(shape.len());
    for &s in byte_strides {
        if s % itemsize as isize != 0 {
            return None;
        }
        strides.push(s / itemsize as isize);
    }
    // Core axes carry data (extent > 1, stride ≠ 0); the rest are extent 1
    // in the block (broadcast axes are expanded again at the end).
    let mut core: Vec<usize> = (0..shape.len())
        .filter(|&i| shape[i] > 1 && strides[i] != 0)
        .collect();
    if core.iter().any(|&i| strides[i] < 0) {
        return None;
    }
    core.sort_by(|&a, &b| strides[b].cmp(&strides[a]).then(a.cmp(&b)));
    let free: Vec<usize> = (0..shape.len()).filter(|i| !core.contains(i)).collect();

    let m = core.len();
    let ext = |k: usize| shape[core[k]];
    let stride = |k: usize| strides[core[k]] as usize;
    // Core block extents, outermost first. The innermost axis is sliced
    // with its stride as the step; every other axis has step 1 and a block
    // stride equal to its own stride, so each block extent is the ratio of
    // the strides around it.
    let mut block_core = vec![0usize; m];
    let mut slices_core = vec![[0usize; 3]; m];
    if m > 0 {
        let inner = m - 1;
        let step = stride(inner);
        let reach = (ext(inner) - 1).checked_mul(step)?.checked_add(1)?;
        block_core[inner] = if m == 1 { reach } else { stride(inner - 1) };
        if block_core[inner] < reach {
            return None; // The inner axis overlaps the next one.
        }
        slices_core[inner] = [0, reach, step];
        for k in (0..inner).rev() {
            block_core[k] = if k == 0 {
                ext(0)
            } else {
                if stride(k - 1) % stride(k) != 0 {
                    return None;
                }
                stride(k - 1) / stride(k)
            };
            if block_core[k] < ext(k) {
                return None; // Overlapping axes.
            }
            slices_core[k] = [0, ext(k), 1];
        }
    }
    let total = block_core
        .iter()
        .try_fold(1usize, |acc, &b| acc.checked_mul(b))?;
    let size: usize = shape.iter().product();
    if total > size.saturating_mul(MAX_BLOW_UP).saturating_add(SLACK) {
        return None;
    }
    let mut span = 1usize;
    for k in 0..m {
        span = span.checked_add((ext(k) - 1).checked_mul(stride(k))?)?;
    }

    let mut block = vec![1usize; free.len()];
    block.extend_from_slice(&block_core);
    let mut slices = vec![[0usize, 1, 1]; free.len()];
    slices.extend_from_slice(&slices_core);
    let order: Vec<usize> = free.iter().chain(&core).copied().collect();
    let mut perm = vec![0usize; shape.len()];
    for (position, &axis) in order.iter().enumerate() {
        perm[axis] = position;
    }
    let broadcast = free.iter().any(|&i| shape[i] > 1);
    Some(ViewPlan {
        block,
        span: span.min(total),
        slices,
        perm,
        broadcast,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads element `index` of a view described by `plan` over a block
    /// filled with 0, 1, 2, ... (the source's element offsets), the way
    /// kernelkit's slice, permute and broadcast compose.
    fn read(plan: &ViewPlan, shape: &[usize], index: &[usize]) -> usize {
        let rank = plan.block.len();
        let mut block_strides = vec![1usize; rank];
        for k in (0..rank.saturating_sub(1)).rev() {
            block_strides[k] = block_strides[k + 1] * plan.block[k + 1];
        }
        let mut offset = 0;
        for (axis, &i) in index.iter().enumerate() {
            let b = plan.perm[axis];
            let i = if plan.broadcast && shape[axis] > 1 && plan.block[b] == 1 {
                0
            } else {
                i
            };
            let [start, _, step] = plan.slices[b];
            offset += (start + i * step) * block_strides[b];
        }
        offset
    }

    /// Checks a plan against NumPy's meaning of the strides: element
    /// `index` lies at `sum(index * stride)` elements from the first.
    fn check(shape: &[usize], strides: &[isize]) -> ViewPlan {
        let bytes: Vec<isize> = strides.iter().map(|s| s * 4).collect();
        let plan = plan_view(shape, &bytes, 4).expect("a plan");
        let total: usize = plan.block.iter().product();
        assert!(plan.span <= total);
        let n: usize = shape.iter().product();
        let mut index = vec![0usize; shape.len()];
        for _ in 0..n {
            let want: isize = index
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as isize * s)
                .sum();
            let got = read(&plan, shape, &index);
            assert_eq!(
                got as isize, want,
                "shape {shape:?} strides {strides:?} at {index:?}"
            );
            assert!(got < plan.span, "element {index:?} past the copied span");
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        plan
    }

    #[test]
    fn contiguous_is_the_block_itself() {
        let plan = check(&[2, 3, 4], &[12, 4, 1]);
        assert_eq!(plan.block, vec![2, 3, 4]);
        assert_eq!(plan.perm, vec![0, 1, 2]);
        assert_eq!(plan.span, 24);
    }

    #[test]
    fn transposes_permute_the_block() {
        // a.T of a (3, 5) array; a (2, 3, 4) array with axes (2, 0, 1).
        check(&[5, 3], &[1, 5]);
        let plan = check(&[4, 2, 3], &[1, 12, 4]);
        assert_eq!(plan.block, vec![2, 3, 4]);
    }

    #[test]
    fn slices_with_steps_and_offsets() {
        // a[:, 1:3] of (4, 5); a[::2, ::3] of (6, 7); a[1:, ::2].T
        check(&[4, 2], &[5, 1]);
        check(&[3, 3], &[14, 3]);
        check(&[4, 5], &[2, 10]);
        // The span stops at the last element: a[:, 3:] of (3, 5) read
        // from its first element must not run past the source's end.
        let plan = check(&[3, 2], &[5, 1]);
        assert_eq!(plan.span, 12);
    }

    #[test]
    fn broadcasts_expand_unit_axes() {
        // np.broadcast_to(x[:, None], (3, 4)); a stride-0 leading axis.
        let plan = check(&[3, 4], &[1, 0]);
        assert!(plan.broadcast);
        check(&[5, 2, 3], &[0, 3, 1]);
        check(&[1, 1, 7], &[0, 0, 1]);
    }

    #[test]
    fn unexpressible_layouts_are_copied() {
        // Negative strides (a[::-1]).
        assert_eq!(plan_view(&[3], &[-4], 4), None);
        // Overlapping rows (sliding_window_view-like).
        assert_eq!(plan_view(&[4, 3], &[4, 4], 4), None);
        // A stride that is not a whole element.
        assert_eq!(plan_view(&[3], &[6], 4), None);
        // Strides that do not divide: element (i, j, k) at 7i + 3j + k
        // (no overlap, but no row-major block has those strides).
        assert_eq!(plan_view(&[2, 2, 2], &[28, 12, 4], 4), None);
        // Empty arrays.
        assert_eq!(plan_view(&[0, 3], &[12, 4], 4), None);
        // A tiny view of a huge row: copying the block would be wasteful.
        assert_eq!(plan_view(&[3, 2], &[4_000_000, 4], 4), None);
    }
}
