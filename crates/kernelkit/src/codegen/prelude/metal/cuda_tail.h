// kernelkit CUDA prelude, Metal tail: a 0-d input (kk_scalar) is a
// scalar to the Metal layer, and Metal's names are visible unqualified.
namespace kk {
template <class T> struct scalar<::kk_scalar<T>> : yes {};
template <class T> struct value_of<::kk_scalar<T>> { typedef T type; };
}  // namespace kk
using namespace metal;
