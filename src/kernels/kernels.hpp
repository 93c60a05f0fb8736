// Single-rank math on local buffers. Each call takes the execution context (space, device,
// stream) of its buffers. One interface for every memory space: host kernels
// are C++ loops, compiled for AVX-512, AVX2 and baseline x86-64 and picked at load time;
// device buffers (e.space == Space::device) go to the CUDA kernels of kernels/device.hpp
// (PLM_ERR_BACKEND_UNAVAILABLE in host-only builds). n counts elements; scalars point to one
// element of dt, in host memory. What each element gets is written once, for both spaces, in
// kernels/element.hpp: element-wise results are bitwise the same on host and device.
// Device calls are stream-ordered and return without waiting, except those that return host
// values (dot, norm_partial into host results, collect).
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
// y (dtype to) = x (dtype from), n elements, a widening conversion (widens(from, to):
// float32 to float64, a real dtype to a complex one (imaginary parts 0), complex64 to
// complex128): exact. x and y must not overlap; from == to copies.
void convert(const Exec &e, DType from, DType to, int64_t n, const void *x, void *y);

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

// x[o, start + k, i] = alpha x[o, start + k, i] for k < count, of an [outer, n, inner] view
// (scale()'s arithmetic and rules, on a slab).
void scale_slab(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t count,
                const void *alpha, void *x);

// N-D box copy between C-order arrays of ndim dimensions:
// dst[dst_start + k] = src[src_start + k] for every index k inside box.
void copy_box(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box);

// Real weights by index along one axis of a box: the entries whose index along `axis` (of
// the box, counted from `first`: global index first + k for box index k) lies in [b0, b1) are
// multiplied by `in`, the others by `out` (complex data: each part times the real factor).
// axis < 0: no weights.
struct BoxScale {
    int axis = -1;
    int64_t first = 0, b0 = 0, b1 = 0;
    double in = 1, out = 1;
    bool none() const { return axis < 0 || (in == 1 && out == 1); }
};

// copy_box() with the weights of w on the box's entries. Host: one pass. Device: the copy,
// then the weights on dst's box, which must be contiguous there (dst_shape equal to box past
// dimension 0, dst_start zero past dimension 0; PLM_ERR_INTERNAL otherwise).
void copy_box_scaled(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape,
                     const int64_t *src_start, void *dst, const int64_t *dst_shape, const int64_t *dst_start,
                     const int64_t *box, const BoxScale &w);
// x (a contiguous C-order block of shape box) times the weights of w, in place.
void scale_box(const Exec &e, DType dt, int ndim, const int64_t *box, const BoxScale &w, void *x);

// Complex data (dt c64 / c128) and their real parts: re[i] = real(z[i]) (real_parts), and
// z[i] = (re[i], 0) (from_real), n elements. Host: one pass each; device: strided copies (and
// a fill of the imaginary parts).
void real_parts(const Exec &e, DType dt, int64_t n, const void *z, void *re);
void from_real(const Exec &e, DType dt, int64_t n, const void *re, void *z);

// numpy.roll of a C-order block of ndim dimensions along axis by shift (any sign):
// dst[..., (i + shift) mod n, ...] = src[..., i, ...]. src and dst must not overlap.
void roll(const Exec &e, DType dt, int ndim, const int64_t *shape, int axis, int64_t shift, const void *src, void *dst);

// ---------------------------------------------------------------------------------------
// ISTA/FISTA thresholds, in place: x_i = threshold(x_i) with parameter t (PyLops' soft, hard
// and half thresholds; complex values on |x_i|, the phase kept). NaN stays NaN.
//   soft: |x| == 0 ? 0 : x * (max(|x| - t, 0) / |x|)
//   hard: |x| <= sqrt(2 t) ? 0 : x
//   hard_at: |x| <= t ? 0 : x  (pyproximal's L0 hard threshold at tau sigma)
//   half: |x| <= cbrt(54) / 4 * t^(2/3) ? 0 : x * 2/3 (1 + cos(2 pi / 3 - 2/3 acos(c))),
//         c = clamp(t / 8 * (|x| / 3)^(-3/2), -1, 1)
// |x| is |x| in R (float32 and complex64: hypotf), the factors are double, rounded to R.
// ---------------------------------------------------------------------------------------
enum class Threshold { soft, hard, half, hard_at };
void threshold(const Exec &e, DType dt, Threshold kind, double t, int64_t n, void *x);

// L2,1 group steps (PyLops-MPI's MPIL21 on a stack of ndim members of one layout, element i of
// every member forming group i). n2 holds each group's squared norm in the real type R of dt
// (float for f32 and c64), the arithmetic in R as NumPy's on R arrays:
//   group_add:   n2 = (first ? 0 : n2) + |x|^2      (complex |x|: hypot, then squared)
//   group_scale: s = sqrt(n2), m = max(s, t) (NaN kept); prox: y = (1 - t / m) x (the group
//                soft threshold), dual: y = (t / m) x (the projection on the t-ball); y may be x
//   group_norm:  n2 = sqrt(n2) in place (rdt: the real dtype of n2)
enum class Group { prox, dual };
void group_add(const Exec &e, DType dt, int64_t n, const void *x, bool first, void *n2);
void group_scale(const Exec &e, DType dt, Group kind, double t, int64_t n, const void *n2, const void *x, void *y);
void group_norm(const Exec &e, DType rdt, int64_t n, void *n2);

// Box (pyproximal's Box and BoxProj), on real dtypes, from x into y (y may be x):
//   project: y = min(max(x, lo), hi) (NaN stays NaN, as np.maximum / np.minimum; lo > hi
//            gives hi); the bounds are rounded to the dtype
//   mark:    y = 0 where lo <= x <= hi, else 1 (NaN is outside: numpy's comparisons)
void box(const Exec &e, DType dt, bool mark, double lo, double hi, int64_t n, const void *x, void *y);

// ---------------------------------------------------------------------------------------
// A sum of banded stencils along several axes of an N-D block, in one pass over the data.
//
// The model (global shape dims, C order) is split along axis 0 in whole rows: the block holds
// global rows [row0, row0 + nrows); axis-0 terms may read the `before` rows just ahead of it
// and the `after` rows just past it, which the caller passes as two separate buffers of whole
// rows (ghost_before holds global rows [row0 - before, row0), ghost_after
// [row0 + nrows, row0 + nrows + after)). Other axes are wholly in the block.
//
// The band of an axis of n points: row i (output index i) lists terms (off, w, d) and reads
// input i + off. Rows [0, lo) are ends[0 .. lo), rows [n - hi, n) are ends[lo .. lo + hi), every
// other row is mid. Adjoint bands are bands too (negative and positive offsets, asymmetric
// ends). Weights, divisors and the axis factors are real; complex data get them on both parts.
//
// The arithmetic is PyLops' (its derivatives are numpy expressions; the operators build their
// bands so that they evaluate the same expression in the same order, bit for bit):
//   term t:  v_t = w_t x[i + off_t], then divided by d_t when d_t != 1 (x / 12.0, 2 x / 3.0;
//            d_t is 1, 3 or 12, and the quotient is computed without a division: equal to it
//            wherever it is a normal number, element::div_small);
//   row:     s = v_0 + v_1 + ... in term order, except the terms [group, gend), summed apart
//            in order into g, which joins s after its last term as s + g (s - g when gneg;
//            g or -g when nothing came before): PyLops' y[0] -= x[0] + 0.5 x[1];
//   axis:    c = s / div when div != 1 (y /= sampling; without a division either, equal to
//            the quotient for every s but -0, element::div_rn), then c = weight c when
//            weight != 1 (the Laplacian's weight * SecondDerivative).
// Complex data divide as NumPy does (Smith's formula with a real divisor): by multiplying both
// parts by 1 / d in the dtype's precision. Products and sums are in the dtype's precision, never
// fused. Every output element gets, for each axis of the plan in plan order whose row there has
// terms, its c: the first c replaces y (or adds to it when accumulate), later ones add. An
// element where no axis has terms gets 0 (or keeps y when accumulate). Host and device give
// bitwise the same results. One call per axis, in the same order, the first replacing y and the
// others accumulating, gives the same values (where an axis has no terms such a call writes a 0
// first, so a -0 of the fused call may come out +0 there).
//
// Plain data (about 12 KB), so a plan goes to a device kernel by value.
// ---------------------------------------------------------------------------------------
constexpr int kMaxTerms = 5;  // terms of a band row
constexpr int kMaxEnds = 16;  // end rows of a band, both ends together

struct BandRow {
    int nterms = 0;  // <= kMaxTerms
    int off[kMaxTerms] = {};
    double w[kMaxTerms] = {};
    unsigned char d[kMaxTerms] = {1, 1, 1, 1, 1};  // divisors: 1 (none), 3 or 12
    unsigned char group = kMaxTerms;  // the group: terms [group, gend) (group >= nterms: none)
    unsigned char gend = kMaxTerms;
    bool gneg = false;               // the group is subtracted
};

struct Band {
    int64_t n = 0;  // points on the axis (dims[axis])
    int lo = 0, hi = 0;  // lo + hi <= min(n, kMaxEnds)
    BandRow mid;
    BandRow ends[kMaxEnds];
};

struct StencilAxis {
    int axis = 0;
    double div = 1;     // the rows' sums are divided by it (1: not)
    double weight = 1;  // then multiplied by it (1: not)
    Band band;
};

struct StencilPlan {
    int ndim = 0;  // 1..PLM_MAX_NDIM
    int64_t dims[PLM_MAX_NDIM] = {};  // global shape; dims[0] counts global rows
    int64_t row0 = 0, nrows = 0;  // the block: global rows [row0, row0 + nrows)
    int64_t before = 0, after = 0;  // ghost rows received ahead of and past the block
    int naxes = 0;  // 0..ndim, each axis at most once
    StencilAxis axes[PLM_MAX_NDIM];
};

// Checks a plan (the shapes, every term inside its axis, the ends of each band, axis 0's
// reach inside the block and its ghosts); PLM_ERR_INTERNAL when it does not hold. stencil()
// checks the same, cheaply, on every call.
void check_plan(const StencilPlan &p);

// The rows [*r0, *r1) of the block whose stencils read no ghost row (0 <= r0 <= r1 <= nrows).
// Compute those while the ghosts are in flight, the rows [0, r0) and [r1, nrows) after.
void interior_rows(const StencilPlan &p, int64_t *r0, int64_t *r1);

// y (the block, nrows x row elements) = the plan's stencils of x (the block) on local output
// rows [r0, r1); other rows of y are not touched. ghost_before / ghost_after may be null when
// the rows computed read none. y must not overlap x or the ghosts. Host: one sweep over the
// rows, vectorised along the contiguous axes; device: one launch, one thread per element,
// stream-ordered, no allocation.
void stencil(const Exec &e, DType dt, const StencilPlan &p, const void *x, const void *ghost_before,
             const void *ghost_after, int64_t r0, int64_t r1, bool accumulate, void *y);

// ---------------------------------------------------------------------------------------
// Non-stationary 1-D convolution (PyLops' NonStationaryConvolve1D) along the middle axis of a
// block viewed as [outer, n, inner] (C order). Sample g of the axis (global index) has the
// filter h_g of nh (odd) taps, r = nh / 2: with q = floor((g - oh) / dh), h_g = hs[0] when
// q < 0, hs[nfilt - 1] when q >= nfilt - 1, else (1 - w) hs[q] + w hs[q + 1] with
// w = (g - oh - q dh) / dh (one filter: h_g = hs[0]). Forward: x[g] spreads as
// y[g + k - r] += h_g[k] x[g]; adjoint: y[g] = sum_k conj(h_g[k]) x[g + k - r] (the exact
// adjoint; PyLops' rmatvec for real data). Terms outside the axis are dropped.
// The block holds samples [row0, row0 + n) of the axis; when outer == 1 the samples just
// ahead of it and just past it arrive as ghost rows of inner elements each: ghost_before
// holds [row0 - before, row0), ghost_after [row0 + n, row0 + n + after). Samples outside
// [row0 - before, row0 + n + after) do not exist (the axis ends there).
// ---------------------------------------------------------------------------------------
struct NonstatPlan {
    int64_t outer = 1, n = 0, inner = 1;
    int64_t row0 = 0, before = 0, after = 0;
    int64_t nfilt = 1, nh = 1, oh = 0, dh = 1;
    const void *hs = nullptr;  // nfilt x nh of the dtype, host memory
};

// y rows [r0, r1) of the block (every outer index) from x and the ghosts; other rows of y
// are not touched. Rows [r, n - r) read no ghost. y must not overlap x or the ghosts. Host
// memory only (PLM_ERR_NOT_SUPPORTED for device buffers). Allocates nothing.
void nonstat_convolve(const Exec &e, DType dt, const NonstatPlan &p, bool adjoint, const void *x,
                      const void *ghost_before, const void *ghost_after, int64_t r0, int64_t r1, void *y);

// ---------------------------------------------------------------------------------------
// Reductions into slots: room for `slots` results of dot() and norm_partial(), made once
// (it allocates: before an agreement) and reused every step. Each slot holds two doubles: a
// dot's re and im, a norm partial's value and 0, exactly as dot() and norm_partial() return
// them (same numerics and NaN rules, the dot rounded to the dtype; a fixed order, so results
// repeat run to run). On host the results are computed at once; on device they stay on the
// device, enqueued on the stream of e, until collect() copies every slot to the host in one
// copy and one stream synchronisation. Nothing allocates after construction. Calls on one
// Reductions must use its stream (they share scratch, in stream order).
// ---------------------------------------------------------------------------------------
class Reductions {
public:
    Reductions() = default;
    Reductions(const Exec &e, int slots);
    int slots() const { return slots_; }
    const Exec &exec() const { return e_; }
    double *slot(int s) const;  // slot s's two doubles (host or device memory)
    void *scratch() const { return scratch_.data(); }  // device partial sums

private:
    Exec e_;
    int slots_ = 0;
    Buffer results_, scratch_;
};

void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, Reductions &r, int slot);
void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t n, const void *x, Reductions &r, int slot);
// host[2 s], host[2 s + 1] = slot s, for every slot (2 * r.slots() doubles).
void collect(const Exec &e, const Reductions &r, double *host);

}  // namespace plm::kernels
