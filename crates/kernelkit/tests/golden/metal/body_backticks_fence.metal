[[kernel]] void custom_kernel_body_backticks_fence_float_float(
  const device float* a [[buffer(0)]],
  device float* o [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
/*
```
not the end of the printed block
```
*/
o[i] = a[i];
}
