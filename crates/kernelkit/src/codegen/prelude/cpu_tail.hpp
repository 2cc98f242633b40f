// kernelkit CPU prelude, tail: Metal's names in the global namespace (a
// Metal body sees them unqualified), and the launch description the
// generated entry point reads.
using namespace metal;

// CUDA's function qualifiers, so that a header written for both compiles
// here too (CUDA-only operations in a Metal body are refused before
// compiling, see codegen/scan.rs).
#define __device__
#define __host__
#define __forceinline__

struct kk_launch {
  uint32_t grid[3];
  uint32_t tg[3];
  uint32_t groups[3];
  uint32_t simd;
  uint64_t group_begin;
  uint64_t group_end;
  // Fiber stacks for bodies that synchronise: `stack_count` stacks of
  // `stack_stride` bytes (the lowest `stack_guard` of each are a guard),
  // owned by the backend; null otherwise.
  char* stacks;
  uint64_t stack_stride;
  uint64_t stack_guard;
  uint32_t stack_count;
  // Set (bitwise or) by the code when a body misuses the runtime: 1 = a
  // barrier or SIMD-group call outside a fiber launch, 2 = too few stacks.
  uint32_t* status;
};
