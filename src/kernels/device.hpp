// CUDA versions of the kernels in kernels.hpp, which host.cpp and stencil.cpp call when e.space is
// Space::device (device.cu; device_none.cpp in host-only builds). Same semantics and numerics
// contract as the host kernels.
// - The arrays x, y, z, src, dst and the ghost rows are device memory. The scalars (value,
//   alpha, beta), the plan of stencil(), and the outputs result (dot) and out (norm_partial)
//   are host memory.
// - All work is enqueued on cuda::stream_of(e) on device e.device. dot(), norm_partial() and
//   collect() return host values, so they synchronise that stream (never the whole device);
//   the other calls, the slot reductions included, return without waiting.
// - Only dot() and norm_partial() into host results and an overlapping copy() allocate
//   (stream-ordered scratch, noted by plm::alloc); stencil, threshold and the slot
//   reductions never do.
// - Failures throw plm::Error (PLM_ERR_CUDA for CUDA errors).
#pragma once

#include <cstdint>

#include "kernels/element.hpp"
#include "kernels/kernels.hpp"

namespace plm::kernels::device {

void fill(const Exec &e, DType dt, int64_t n, const void *value, void *x);
void copy(const Exec &e, DType dt, int64_t n, const void *x, void *y);
void scale(const Exec &e, DType dt, int64_t n, const void *alpha, void *x);
void axpby(const Exec &e, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y);
void binary(const Exec &e, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z);
void conj(const Exec &e, DType dt, int64_t n, const void *x, void *y);
void convert(const Exec &e, DType from, DType to, int64_t n, const void *x, void *y);
void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result);
void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out);
void copy_slab(const Exec &e, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count);
void scale_slab(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t count,
                const void *alpha, void *x);
// x[o, bin, i].im = 0 for every o and i of a complex [outer, n, inner] view (the DC and
// Nyquist bins a c2r transform must read as real: kernels/fft_cuda.cpp).
void zero_imag(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t bin, void *x);
void copy_box(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box);
void threshold(const Exec &e, DType dt, const element::ThresholdArgs &a, int64_t n, void *x);
void box(const Exec &e, DType dt, bool mark, double lo, double hi, int64_t n, const void *x, void *y);
void group_add(const Exec &e, DType dt, int64_t n, const void *x, bool first, void *n2);
void group_scale(const Exec &e, DType dt, Group kind, double t, int64_t n, const void *n2, const void *x, void *y);
void group_norm(const Exec &e, DType rdt, int64_t n, void *n2);
// The plan is checked by the caller (kernels::stencil); r0 < r1.
void stencil(const Exec &e, DType dt, const StencilPlan &p, const void *x, const void *ghost_before,
             const void *ghost_after, int64_t r0, int64_t r1, bool accumulate, void *y);

// Slot reductions (kernels::Reductions): scratch is reduction_scratch_bytes() of device
// memory, slot two device doubles.
size_t reduction_scratch_bytes();
void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *scratch, double *slot);
void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t n, const void *x, void *scratch,
                  double *slot);
void collect(const Exec &e, const double *slots, int64_t count, double *host);

}  // namespace plm::kernels::device
