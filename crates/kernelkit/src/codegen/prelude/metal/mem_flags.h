// ---- 6.9.1 Threadgroup synchronization flags (the argument of the
// barriers of group_cpu.h / group_cuda.h).
namespace metal {
namespace mem_flags {
enum { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8, mem_object_data = 16 };
}  // namespace mem_flags
}  // namespace metal
