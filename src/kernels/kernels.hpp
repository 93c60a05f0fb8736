// Single-rank math on local buffers. One interface for every memory space: host kernels
// are C++ loops and CBLAS; CUDA kernels (GPU issue) plug in behind the same calls, and until
// then device buffers report PLM_ERR_BACKEND_UNAVAILABLE. n counts elements; scalars point
// to one element of dt.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::kernels {

enum class Binary { add, sub, mul };

// What norm_partial() accumulates: sum |x|^p, max |x|, min |x| or the count of non-zeros.
enum class NormKind { pow_sum, max_abs, min_abs, count_nonzero };

void fill(Space s, DType dt, int64_t n, const void *value, void *x);
void copy(Space s, DType dt, int64_t n, const void *x, void *y);
void scale(Space s, DType dt, int64_t n, const void *alpha, void *x);
void axpby(Space s, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y);
void binary(Space s, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z);
void conj(Space s, DType dt, int64_t n, const void *x, void *y);

// result (one element of dt, host memory) = sum x_i y_i, or sum conj(x_i) y_i.
void dot(Space s, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result);

// View x as [outer, n, inner] (C order) and reduce over the middle index:
// out[o * inner + i] (host, float64). The identity for empty n is 0 (sum, max, count) or +inf (min).
void norm_partial(Space s, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out);

// Slab copy along the middle axis of [outer, n, inner] views:
// dst[o, dst_start + k, i] = src[o, src_start + k, i] for k < count.
void copy_slab(Space s, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count);

// N-D box copy between C-order arrays of ndim dimensions:
// dst[dst_start + k] = src[src_start + k] for every index k inside box.
void copy_box(Space s, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box);

}  // namespace plm::kernels
