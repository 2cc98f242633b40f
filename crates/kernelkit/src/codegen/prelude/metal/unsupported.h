// ---- What the CPU and CUDA backends cannot provide: a clear compile-time
// error where a header names it (bodies are refused before compiling, with
// a typed error naming the feature; see codegen/scan.rs).
namespace kk {
template <class... T> struct never : no {};
}  // namespace kk
namespace metal {
enum class access { sample, read, write, read_write };
#define KK_NO_TEXTURE(NAME)                                                                            \
  template <class T = float, access A = access::sample, class... R> struct NAME {                     \
    static_assert(kk::never<T, R...>::value,                                                           \
                  "kernelkit: Metal textures (`" #NAME "`) are not supported on the CPU and CUDA backends"); \
  };
KK_NO_TEXTURE(texture1d)
KK_NO_TEXTURE(texture1d_array)
KK_NO_TEXTURE(texture2d)
KK_NO_TEXTURE(texture2d_array)
KK_NO_TEXTURE(texture2d_ms)
KK_NO_TEXTURE(texture3d)
KK_NO_TEXTURE(texturecube)
KK_NO_TEXTURE(texturecube_array)
KK_NO_TEXTURE(texture_buffer)
KK_NO_TEXTURE(depth2d)
KK_NO_TEXTURE(depth2d_array)
KK_NO_TEXTURE(depthcube)
#undef KK_NO_TEXTURE
template <int = 0> struct kk_sampler {
  static_assert(kk::never<kk_sampler>::value, "kernelkit: Metal samplers (`sampler`) are not supported on the CPU and CUDA backends");
};
typedef kk_sampler<> sampler;
}  // namespace metal
