// Host-only builds: the device kernels report that device memory is not in this build. (No
// device array can exist in such a build; these keep one dispatch path in host.cpp.)
#include "kernels/device.hpp"

namespace plm::kernels::device {

namespace {
[[noreturn]] void unavailable()
{
    PLM_FAIL(PLM_ERR_BACKEND_UNAVAILABLE, "device kernels are not in this build (host-only: built without CUDA)");
}
}  // namespace

void fill(const Exec &, DType, int64_t, const void *, void *) { unavailable(); }
void copy(const Exec &, DType, int64_t, const void *, void *) { unavailable(); }
void scale(const Exec &, DType, int64_t, const void *, void *) { unavailable(); }
void axpby(const Exec &, DType, int64_t, const void *, const void *, const void *, void *) { unavailable(); }
void binary(const Exec &, DType, Binary, int64_t, const void *, const void *, void *) { unavailable(); }
void conj(const Exec &, DType, int64_t, const void *, void *) { unavailable(); }
void convert(const Exec &, DType, DType, int64_t, const void *, void *) { unavailable(); }
void dot(const Exec &, DType, int64_t, const void *, const void *, bool, void *) { unavailable(); }
void norm_partial(const Exec &, DType, NormKind, double, int64_t, int64_t, int64_t, const void *, double *)
{
    unavailable();
}
void copy_slab(const Exec &, DType, int64_t, int64_t, const void *, int64_t, int64_t, void *, int64_t, int64_t, int64_t)
{
    unavailable();
}
void scale_slab(const Exec &, DType, int64_t, int64_t, int64_t, int64_t, int64_t, const void *, void *) { unavailable(); }
void zero_imag(const Exec &, DType, int64_t, int64_t, int64_t, int64_t, void *) { unavailable(); }
void copy_box(const Exec &, DType, int, const void *, const int64_t *, const int64_t *, void *, const int64_t *,
              const int64_t *, const int64_t *)
{
    unavailable();
}

void threshold(const Exec &, DType, const element::ThresholdArgs &, int64_t, void *) { unavailable(); }
void box(const Exec &, DType, bool, double, double, int64_t, const void *, void *) { unavailable(); }
void group_add(const Exec &, DType, int64_t, const void *, bool, void *) { unavailable(); }
void group_scale(const Exec &, DType, Group, double, int64_t, const void *, const void *, void *) { unavailable(); }
void group_norm(const Exec &, DType, int64_t, void *) { unavailable(); }
void stencil(const Exec &, DType, const StencilPlan &, const void *, const void *, const void *, int64_t, int64_t, bool,
             void *)
{
    unavailable();
}
size_t reduction_scratch_bytes() { unavailable(); }
void dot(const Exec &, DType, int64_t, const void *, const void *, bool, void *, double *) { unavailable(); }
void norm_partial(const Exec &, DType, NormKind, double, int64_t, const void *, void *, double *) { unavailable(); }
void collect(const Exec &, const double *, int64_t, double *) { unavailable(); }

}  // namespace plm::kernels::device
