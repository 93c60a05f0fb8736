// Single-rank math on local buffers. Each call takes the execution context (space, device,
// stream) of its buffers. One interface for every memory space: host kernels
// are C++ loops, compiled for AVX-512, AVX2 and baseline x86-64 and picked at load time;
// device buffers (e.space == Space::device) go to the CUDA kernels of kernels/device.hpp
// (PLM_ERR_BACKEND_UNAVAILABLE in host-only builds). n counts elements; scalars point to one
// element of dt, in host memory.
//
// Numerics (host; docs/architecture.md, "Numerics"):
// - Sums (dot, sum |x|, sum |x|^2, sum |x|^p) accumulate in double for every dtype, float32
//   terms widened first, in blocks of 2048 terms over 32 independent lanes whose sums are
//   combined pairwise: a few ulps of the exact sum at N = 1e7, not O(N) ulps. The order is
//   fixed, so results are the same on every CPU and every run.
// - NaN propagates through every sum, dot and norm_partial kind (max and min of |x| too, unlike
//   a plain max loop); count_nonzero counts NaN as non-zero (numpy.count_nonzero).
// - Complex products are (re, im) arithmetic without C99's inf/nan recovery, as NumPy.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::kernels {

enum class Binary { add, sub, mul };

// What norm_partial() accumulates: sum |x|^p, max |x|, min |x| or the count of non-zeros.
enum class NormKind { pow_sum, max_abs, min_abs, count_nonzero };

void fill(const Exec &e, DType dt, int64_t n, const void *value, void *x);
void copy(const Exec &e, DType dt, int64_t n, const void *x, void *y);
// x = alpha x. alpha = 0 writes zeros even over NaN and Inf (BLAS convention); alpha = 1 is a
// no-op.
void scale(const Exec &e, DType dt, int64_t n, const void *alpha, void *x);
// y = alpha x + beta y. beta = 0 never reads y (y may hold NaN or garbage: y = alpha x);
// alpha = 0 never reads x (y = beta y); both zero write zeros.
void axpby(const Exec &e, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y);
void binary(const Exec &e, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z);
void conj(const Exec &e, DType dt, int64_t n, const void *x, void *y);

// Stencil rows: y[j] = scale * sum_t w[t] x[t][j] for j < n, or y[j] += that when accumulate.
// Weights and scale are real (a complex dtype scales both parts); nterms <= kMaxTerms, and 0
// terms write zeros (or leave y). The x[t] may overlap each other but not y.
constexpr int kMaxTerms = 5;
void combine(const Exec &e, DType dt, int64_t n, int nterms, const void *const *x, const double *w, double scale,
             bool accumulate, void *y);

// result (one element of dt, host memory) = sum x_i y_i, or sum conj(x_i) y_i, summed in
// double and rounded once to dt (float32 products of 1e20 do not overflow on the way).
void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result);

// View x as [outer, n, inner] (C order) and reduce over the middle index:
// out[o * inner + i] (host, float64). The identity for empty n is 0 (sum, max, count) or +inf (min).
// out[] is NaN where the reduced data hold NaN, for every kind but count_nonzero (callers
// combining partials across ranks must keep it: MPI_MAX/MIN drop NaN). Complex |z| is hypot's
// (|inf + nan i| = inf); pow_sum p = 2 sums re^2 + im^2 as NumPy. Partials are sums of |x|^p
// in double: float32 data never overflow them, float64 sums of squares overflow past ~1e154
// and underflow below ~1e-154 as NumPy's do. The strided case (inner > 1) sums sequentially.
void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out);

// Slab copy along the middle axis of [outer, n, inner] views:
// dst[o, dst_start + k, i] = src[o, src_start + k, i] for k < count.
void copy_slab(const Exec &e, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count);

// N-D box copy between C-order arrays of ndim dimensions:
// dst[dst_start + k] = src[src_start + k] for every index k inside box.
void copy_box(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box);

}  // namespace plm::kernels
