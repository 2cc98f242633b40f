// kernelkit: element index -> memory offset of a strided array (MLX's
// `elem_to_loc`). Shape and strides are pointers on the CPU and by-value
// `kk_shape` / `kk_strides` on CUDA; both index like arrays.
template <typename IdxT = int64_t, typename Shape, typename Strides>
KK_FN IdxT elem_to_loc(IdxT elem, const Shape& shape, const Strides& strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}
