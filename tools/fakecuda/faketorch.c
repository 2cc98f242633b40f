/*
 * A stand-in for the part of torch's stable C interface kernelkit reads
 * tensors through (`aoti_torch_get_*`, torch/csrc/inductor/aoti_torch/c/
 * shim.h), for measuring the Python package's torch path without torch
 * (`crates/kernelkit-py/tests/standin_torch.py`, `bench/overhead.py`).
 *
 * As in torch, a tensor handle is the address of an `at::Tensor`, one
 * pointer to the tensor's implementation; here that implementation is a
 * `struct fake_impl` made by `faketorch_new`. The codes are torch's own
 * (c10's ScalarType, DeviceType and Layout numbering), so the package
 * cannot tell the two apart by them.
 *
 * Built twice by build.sh, as `libtorch_cpu.so` and `libtorch_cuda.so`
 * (the package looks for the stream function in the second).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_MAX_DIM 8

struct fake_impl {
    void *data;
    int64_t dim;
    int64_t sizes[FAKE_MAX_DIM];
    int64_t strides[FAKE_MAX_DIM];
    int32_t dtype;
    int32_t device_type;
    int32_t device_index;
    int32_t layout;
    int64_t version;
};

typedef struct fake_impl *const *handle;

/* A new tensor implementation (never freed: a stand-in's tensors live for
 * the benchmark). Null for more than FAKE_MAX_DIM axes. */
struct fake_impl *faketorch_new(void *data, int64_t dim, const int64_t *sizes, const int64_t *strides,
                                int32_t dtype, int32_t device_type, int32_t device_index) {
    if (dim < 0 || dim > FAKE_MAX_DIM) return NULL;
    struct fake_impl *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->data = data;
    t->dim = dim;
    memcpy(t->sizes, sizes, (size_t)dim * sizeof *sizes);
    memcpy(t->strides, strides, (size_t)dim * sizeof *strides);
    t->dtype = dtype;
    t->device_type = device_type;
    t->device_index = device_index;
    t->layout = 0;
    return t;
}

/* c10::ScalarType */
int32_t aoti_torch_dtype_uint8(void) { return 0; }
int32_t aoti_torch_dtype_int8(void) { return 1; }
int32_t aoti_torch_dtype_int16(void) { return 2; }
int32_t aoti_torch_dtype_int32(void) { return 3; }
int32_t aoti_torch_dtype_int64(void) { return 4; }
int32_t aoti_torch_dtype_float16(void) { return 5; }
int32_t aoti_torch_dtype_float32(void) { return 6; }
int32_t aoti_torch_dtype_float64(void) { return 7; }
int32_t aoti_torch_dtype_complex64(void) { return 9; }
int32_t aoti_torch_dtype_bool(void) { return 11; }
int32_t aoti_torch_dtype_bfloat16(void) { return 15; }
int32_t aoti_torch_dtype_uint16(void) { return 27; }
int32_t aoti_torch_dtype_uint32(void) { return 28; }
int32_t aoti_torch_dtype_uint64(void) { return 29; }
/* c10::DeviceType, c10::Layout */
int32_t aoti_torch_device_type_cpu(void) { return 0; }
int32_t aoti_torch_device_type_cuda(void) { return 1; }
int32_t aoti_torch_layout_strided(void) { return 0; }

int32_t aoti_torch_get_data_ptr(handle h, void **ret) { *ret = (*h)->data; return 0; }
int32_t aoti_torch_get_dim(handle h, int64_t *ret) { *ret = (*h)->dim; return 0; }
int32_t aoti_torch_get_sizes(handle h, const int64_t **ret) { *ret = (*h)->sizes; return 0; }
int32_t aoti_torch_get_strides(handle h, const int64_t **ret) { *ret = (*h)->strides; return 0; }
int32_t aoti_torch_get_dtype(handle h, int32_t *ret) { *ret = (*h)->dtype; return 0; }
int32_t aoti_torch_get_device_type(handle h, int32_t *ret) { *ret = (*h)->device_type; return 0; }
int32_t aoti_torch_get_device_index(handle h, int32_t *ret) { *ret = (*h)->device_index; return 0; }
int32_t aoti_torch_get_layout(handle h, int32_t *ret) { *ret = (*h)->layout; return 0; }

/* The stand-in's tensors describe memory they were made over, so their
 * storage is taken to hold them: it starts where they do and is as large as
 * a storage can be. */
int32_t aoti_torch_get_storage_offset(handle h, int64_t *ret) { (void)h; *ret = 0; return 0; }
int32_t aoti_torch_get_storage_size(handle h, int64_t *ret) { (void)h; *ret = INT64_MAX; return 0; }

/* Grad mode is on, as in torch by default. */
_Bool aoti_torch_grad_mode_is_enabled(void) { return 1; }

/* The C++ functions the package calls by their Itanium-mangled names
 * (torch exports them from libtorch_cpu): the stand-in has no lazily
 * conjugated or negated views, no autograd and no inference tensors; a
 * write bumps a version counter of its own. */
_Bool _ZN2at6native7is_conjERKNS_6TensorE(handle h) { (void)h; return 0; }
_Bool _ZN2at6native6is_negERKNS_6TensorE(handle h) { (void)h; return 0; }
_Bool _ZN2at6native12is_inferenceERKNS_6TensorE(handle h) { (void)h; return 0; }
_Bool _ZNK3c1010TensorImpl13requires_gradEv(const struct fake_impl *self) { (void)self; return 0; }
void _ZN5torch8autograd4impl12bump_versionERKN2at6TensorE(handle h) { (*h)->version += 1; }

/* torch's current stream of every device: the legacy default stream, as
 * in a program that never sets one. */
int32_t aoti_torch_get_current_cuda_stream(int32_t device_index, void **ret) {
    (void)device_index;
    *ret = NULL;
    return 0;
}
