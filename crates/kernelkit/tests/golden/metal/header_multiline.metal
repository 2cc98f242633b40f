#include <metal_stdlib>
using namespace metal;

constant int K = 3;

namespace helpers {
template <typename T>
T twice(T x) {
  return x + x;
}
} // namespace helpers

[[kernel]] void custom_kernel_header_multiline_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
o[i] = helpers::twice(a[i]) + K;
}
