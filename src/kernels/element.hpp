// What each element gets, written once for host and device: the host loops (host.cpp,
// stencil.cpp) and the CUDA kernels (device.cu) call these; only the loops and launches
// differ, so host tests exercise the arithmetic the GPU runs.
//
// - PLM_HD marks a function for both spaces under nvcc and is empty elsewhere.
// - add/sub/mul/div are never contracted into FMAs: device code uses the __*_rn intrinsics,
//   and the host files that include this header are built with -ffp-contract=off. So
//   element-wise results are bitwise the same on host and device, except where libm is
//   called (hypot, pow, acos, cos: glibc and CUDA may differ by an ulp or so).
// - Complex values are Cx<R> pairs, the layout of std::complex<R>. Products are the plain
//   (re, im) formulas, without C99's inf/nan recovery, as NumPy's.
// - Sums and norms accumulate in double (float terms widened first); NaN propagates through
//   max and min too; complex |z| is hypot's, so |inf + nan i| = inf.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernels.hpp"

#if defined(__CUDACC__)
#define PLM_HD __host__ __device__
#else
#define PLM_HD
#endif
#if defined(__CUDA_ARCH__)
#define PLM_UNROLL _Pragma("unroll")
#else
#define PLM_UNROLL
#endif

namespace plm::kernels::element {

template <typename R> struct Cx {
    R re, im;
};

template <typename V> struct real_part { using type = V; };
template <typename R> struct real_part<Cx<R>> { using type = R; };
template <typename V> struct IsCxT { static constexpr bool value = false; };
template <typename R> struct IsCxT<Cx<R>> { static constexpr bool value = true; };

// ---------------------------------------------------------------------------------------
// Uncontracted arithmetic.
// ---------------------------------------------------------------------------------------

#if defined(__CUDA_ARCH__)
PLM_HD inline float add(float a, float b) { return __fadd_rn(a, b); }
PLM_HD inline double add(double a, double b) { return __dadd_rn(a, b); }
PLM_HD inline float sub(float a, float b) { return __fsub_rn(a, b); }
PLM_HD inline double sub(double a, double b) { return __dsub_rn(a, b); }
PLM_HD inline float mul(float a, float b) { return __fmul_rn(a, b); }
PLM_HD inline double mul(double a, double b) { return __dmul_rn(a, b); }
PLM_HD inline float div(float a, float b) { return __fdiv_rn(a, b); }
PLM_HD inline double div(double a, double b) { return __ddiv_rn(a, b); }
#else
PLM_HD inline float add(float a, float b) { return a + b; }
PLM_HD inline double add(double a, double b) { return a + b; }
PLM_HD inline float sub(float a, float b) { return a - b; }
PLM_HD inline double sub(double a, double b) { return a - b; }
PLM_HD inline float mul(float a, float b) { return a * b; }
PLM_HD inline double mul(double a, double b) { return a * b; }
PLM_HD inline float div(float a, float b) { return a / b; }
PLM_HD inline double div(double a, double b) { return a / b; }
#endif

// libm, by the name each space spells it.
#if defined(__CUDA_ARCH__)
PLM_HD inline float fma_(float a, float b, float c) { return __fmaf_rn(a, b, c); }
PLM_HD inline double fma_(double a, double b, double c) { return __fma_rn(a, b, c); }
PLM_HD inline float fabs_(float v) { return fabsf(v); }
PLM_HD inline double fabs_(double v) { return fabs(v); }
PLM_HD inline float hypot_(float a, float b) { return hypotf(a, b); }
PLM_HD inline double hypot_(double a, double b) { return hypot(a, b); }
PLM_HD inline double pow_(double a, double b) { return pow(a, b); }
PLM_HD inline double acos_(double v) { return acos(v); }
PLM_HD inline double cos_(double v) { return cos(v); }
PLM_HD inline float sqrt_(float v) { return sqrtf(v); }
PLM_HD inline double sqrt_(double v) { return sqrt(v); }
#else
PLM_HD inline float fma_(float a, float b, float c) { return std::fma(a, b, c); }
PLM_HD inline double fma_(double a, double b, double c) { return std::fma(a, b, c); }
PLM_HD inline float fabs_(float v) { return std::fabs(v); }
PLM_HD inline double fabs_(double v) { return std::fabs(v); }
PLM_HD inline float hypot_(float a, float b) { return std::hypot(a, b); }
PLM_HD inline double hypot_(double a, double b) { return std::hypot(a, b); }
PLM_HD inline double pow_(double a, double b) { return std::pow(a, b); }
PLM_HD inline double acos_(double v) { return std::acos(v); }
PLM_HD inline double cos_(double v) { return std::cos(v); }
PLM_HD inline float sqrt_(float v) { return std::sqrt(v); }
PLM_HD inline double sqrt_(double v) { return std::sqrt(v); }
#endif

template <typename R> PLM_HD inline Cx<R> add(Cx<R> a, Cx<R> b) { return {add(a.re, b.re), add(a.im, b.im)}; }
template <typename R> PLM_HD inline Cx<R> sub(Cx<R> a, Cx<R> b) { return {sub(a.re, b.re), sub(a.im, b.im)}; }
template <typename R> PLM_HD inline Cx<R> mul(Cx<R> a, Cx<R> b)
{
    return {sub(mul(a.re, b.re), mul(a.im, b.im)), add(mul(a.re, b.im), mul(a.im, b.re))};
}
// A real factor scales both parts; a real divisor divides both (the stencils use it for real
// data only: complex data multiply by 1 / d, as NumPy's complex division by a real does).
template <typename R> PLM_HD inline Cx<R> mul(R a, Cx<R> b) { return {mul(a, b.re), mul(a, b.im)}; }
template <typename R> PLM_HD inline Cx<R> div(Cx<R> a, R b) { return {div(a.re, b), div(a.im, b)}; }
template <typename V> PLM_HD inline V neg(V v) { return -v; }
template <typename R> PLM_HD inline Cx<R> neg(Cx<R> v) { return {-v.re, -v.im}; }

// ---------------------------------------------------------------------------------------
// Streaming updates (the BLAS zero conventions are the callers': they pick the formula).
// ---------------------------------------------------------------------------------------

// A widening conversion of one element (kernels::convert): real to real, real to complex
// (imaginary part 0), complex to complex.
template <typename B, typename A> PLM_HD inline B widen(A v)
{
    if constexpr (IsCxT<B>::value && IsCxT<A>::value) return {decltype(B::re)(v.re), decltype(B::re)(v.im)};
    else if constexpr (IsCxT<B>::value) return {decltype(B::re)(v), decltype(B::re)(0)};
    else return B(v);
}

template <typename V> PLM_HD inline V scal(V a, V x) { return mul(a, x); }
template <typename V> PLM_HD inline V axpby(V a, V x, V b, V y) { return add(mul(a, x), mul(b, y)); }
template <typename V> PLM_HD inline V conj(V v) { return v; }
template <typename R> PLM_HD inline Cx<R> conj(Cx<R> v) { return {v.re, -v.im}; }

// ---------------------------------------------------------------------------------------
// Stencil terms.
// ---------------------------------------------------------------------------------------

// PyLops' arithmetic (kernels.hpp): w[0] v[0] + ... + w[k-1] v[k-1], 1 <= k <= K, in term
// order, each term divided by d[t] unless d[t] == 1 (complex data: multiplied by 1 / d[t]);
// the terms [group, gend) summed apart and added (or subtracted, gneg) after the last of them.

// x / b rounded to nearest without a division, r = RN(1 / b): Markstein's correction of
// q = RN(x r) by its exact remainder x - q b (two fused multiply-adds, the only ones in these
// kernels). Bit for bit x / b for every x and b but -0 / b (gives +0); an infinite or NaN q is
// returned as it is (x / b is infinite or NaN then too). Checked for every float32 x over 2000
// divisors and for 4e8 random float64 pairs; a division costs 4 to 8 times more on CPUs.
template <typename R> PLM_HD inline R div_rn(R x, R b, R r)
{
    const R q = mul(x, r);
    const R c = fma_(fma_(-q, b, x), r, q);
    return sub(q, q) == R(0) ? c : q;
}
PLM_HD inline float div3(float x) { return div_rn(x, 3.0f, 1.0f / 3); }
PLM_HD inline double div3(double x) { return div_rn(x, 3.0, 1.0 / 3); }

// v / d for the stencils' divisors d = 3 or 12 (PyLops' x / 12.0 and 2 x / 3.0): x / 12 as
// (x / 3) / 4, exact scaling, so equal to the quotient wherever it stays a normal number.
template <typename R> PLM_HD inline R div_small(R v, int d)
{
    const R t = div3(v);
    return d == 12 ? mul(R(0.25), t) : t;
}

// A term's divisor: div_small for real data, v * (1 / d) for complex data (NumPy's complex
// division by a real: both parts times the reciprocal, rounded in the dtype).
template <typename R, typename V> PLM_HD inline V divide_term(V v, int d)
{
    if constexpr (IsCxT<V>::value) return mul(div(R(1), R(d)), v);
    else return div_small(v, d);
}

// An axis' divisor: v / d for real data (div_rn), v * (1 / d) for complex data.
template <typename R, typename V> PLM_HD inline V divide(V v, R d)
{
    if constexpr (IsCxT<V>::value) return mul(div(R(1), d), v);
    else return div_rn(v, d, div(R(1), d));
}

template <int K, typename R, typename V>
PLM_HD inline V band_sum(int k, const R *w, const unsigned char *d, int group, int gend, bool gneg, const V *v)
{
    V s{}, g{};
    bool hs = false;
    PLM_UNROLL
    for (int t = 0; t < K; ++t) {
        if (t >= k) continue;
        V term = mul(w[t], v[t]);
        if (d[t] != 1) term = divide_term<R>(term, d[t]);
        if (t < group || t >= gend) {
            s = hs ? add(s, term) : term;
            hs = true;
            continue;
        }
        g = t == group ? term : add(g, term);
        if (t == gend - 1 || t == k - 1) {  // the group joins the sum
            s = hs ? (gneg ? sub(s, g) : add(s, g)) : (gneg ? neg(g) : g);
            hs = true;
        }
    }
    return s;
}

// The axis factors: c / div (unless div == 1), then weight c (unless weight == 1).
template <typename R, typename V> PLM_HD inline V axis_post(V c, double div_, double weight)
{
    if (div_ != 1) c = divide(c, R(div_));
    if (weight != 1) c = mul(R(weight), c);
    return c;
}

// An axis's term c added to an element: the first replaces it.
template <typename V> PLM_HD inline V add_term(V acc, V c, bool first) { return first ? c : add(acc, c); }

// ---------------------------------------------------------------------------------------
// Reduction terms, in double.
// ---------------------------------------------------------------------------------------

PLM_HD inline double widen(float v) { return double(v); }
PLM_HD inline double widen(double v) { return v; }

template <typename R> PLM_HD inline double dot_term(R x, R y) { return mul(widen(x), widen(y)); }

// The four cross sums of a complex dot: re re, im im, re im, im re.
struct Sums4 {
    double rr, ii, ri, ir;
};
PLM_HD inline Sums4 add(Sums4 a, Sums4 b) { return {add(a.rr, b.rr), add(a.ii, b.ii), add(a.ri, b.ri), add(a.ir, b.ir)}; }
template <typename R> PLM_HD inline Sums4 cross_terms(Cx<R> x, Cx<R> y)
{
    const double xr = x.re, xi = x.im, yr = y.re, yi = y.im;
    return {mul(xr, yr), mul(xi, yi), mul(xr, yi), mul(xi, yr)};
}
// The dot from its cross sums, rounded to R: x^T y, or x^H y when conjugate.
template <typename R> PLM_HD inline Cx<R> dot_from(Sums4 s, bool conjugate)
{
    if (conjugate) return {R(add(s.rr, s.ii)), R(sub(s.ri, s.ir))};
    return {R(sub(s.rr, s.ii)), R(add(s.ri, s.ir))};
}

// |x| in double; complex: hypot, so no overflow or underflow on the way.
template <typename R> PLM_HD inline double abs_of(R v) { return fabs_(widen(v)); }
template <typename R> PLM_HD inline double abs_of(Cx<R> v) { return hypot_(widen(v.re), widen(v.im)); }

// |x|^2; complex: re^2 + im^2 as NumPy's 2-norm (not hypot squared).
template <typename R> PLM_HD inline double abs2_of(R v) { return mul(widen(v), widen(v)); }
template <typename R> PLM_HD inline double abs2_of(Cx<R> v)
{
    const double re = v.re, im = v.im;
    return add(mul(re, re), mul(im, im));
}

// NaN counts as non-zero (numpy.count_nonzero).
template <typename R> PLM_HD inline bool nonzero(R v) { return v != R(0); }
template <typename R> PLM_HD inline bool nonzero(Cx<R> v) { return v.re != R(0) || v.im != R(0); }

// max and min that keep a NaN from either side.
PLM_HD inline double nan_max(double a, double v) { return v > a || v != v ? v : a; }
PLM_HD inline double nan_min(double a, double v) { return v < a || v != v ? v : a; }

// ---------------------------------------------------------------------------------------
// Thresholds (kernels.hpp). The parameters that depend on t only are computed once, on host,
// by threshold_args(), so host and device use the same bits.
// ---------------------------------------------------------------------------------------

struct ThresholdArgs {
    Threshold kind;
    double t, limit;  // limit: hard sqrt(2 t), hard_at t, half cbrt(54) / 4 t^(2/3)
};

inline ThresholdArgs threshold_args(Threshold kind, double t)
{
    double limit = 0;
    if (kind == Threshold::hard) limit = std::sqrt(2 * t);
    if (kind == Threshold::hard_at) limit = t;
    if (kind == Threshold::half) limit = std::cbrt(54.0) / 4 * std::pow(t, 2.0 / 3);
    return {kind, t, limit};
}

// |v| in R, as std::abs: hypotf for complex64.
template <typename R> PLM_HD inline R mag(R v) { return fabs_(v); }
template <typename R> PLM_HD inline R mag(Cx<R> v) { return hypot_(v.re, v.im); }

template <typename V> PLM_HD inline V scaled(V v, double f)
{
    using R = typename real_part<V>::type;
    return mul(R(f), v);
}

template <typename V> PLM_HD inline V threshold(V v, const ThresholdArgs &a)
{
    const double m = mag(v);
    switch (a.kind) {
    case Threshold::soft: {
        double d = sub(m, a.t);
        d = d < 0.0 ? 0.0 : d;  // std::max(d, 0.0): NaN stays
        return m == 0 ? V{} : scaled(v, div(d, m));
    }
    case Threshold::hard:
    case Threshold::hard_at: return m <= a.limit ? V{} : v;
    case Threshold::half: {
        if (m <= a.limit) return V{};
        double c = mul(div(a.t, 8.0), pow_(div(m, 3.0), -1.5));
        c = c < -1.0 ? -1.0 : 1.0 < c ? 1.0 : c;  // std::clamp: NaN stays
        const double phi = mul(2.0 / 3, acos_(c));
        return scaled(v, mul(2.0 / 3, add(1.0, cos_(sub(2 * 3.14159265358979323846 / 3, phi)))));
    }
    }
    return v;
}

// L2,1 group steps (kernels.hpp), in the real type R of the data, as NumPy on R arrays.
template <typename R> PLM_HD inline R abs2_r(R v) { return mul(v, v); }
template <typename R> PLM_HD inline R abs2_r(Cx<R> v)
{
    const R m = hypot_(v.re, v.im);
    return mul(m, m);
}
template <typename R> PLM_HD inline R group_add(R n2, bool first, R a2) { return first ? a2 : add(n2, a2); }
// The factor of a member element whose group has squared norm n2: s = sqrt(n2), m = max(s, t)
// (NaN kept); prox 1 - t / m, dual t / m.
template <typename R> PLM_HD inline R group_factor(R n2, Group kind, R t)
{
    const R s = sqrt_(n2);
    const R m = (s > t || s != s) ? s : t;
    const R q = div(t, m);
    return kind == Group::prox ? sub(R(1), q) : q;
}

// Box (kernels.hpp): the projection onto [lo, hi], max first then min, or 1 outside / 0 inside.
template <typename R> PLM_HD inline R box(R v, bool mark, double lo, double hi)
{
    if (mark) return (widen(v) >= lo && widen(v) <= hi) ? R(0) : R(1);
    if (v != v) return v;
    const R l = R(lo), h = R(hi);
    const R t = v < l ? l : v;
    return t > h ? h : t;
}

// ---------------------------------------------------------------------------------------
// Stencils (kernels.hpp): the value of one output element, as the device computes every
// element and the host its reference path.
// ---------------------------------------------------------------------------------------

// Steps of a plan's block in elements: row_len per row (axis 0), inner[a] along axis a.
struct StencilGeom {
    int64_t row_len = 1;
    int64_t inner[PLM_MAX_NDIM] = {};
};

inline StencilGeom stencil_geom(const StencilPlan &p)
{
    StencilGeom g;
    int64_t s = 1;
    for (int a = p.ndim - 1; a >= 0; --a) {
        g.inner[a] = s;
        s *= p.dims[a];
    }
    g.row_len = p.ndim > 0 ? g.inner[0] : 1;
    return g;
}

// The index along axis a >= 1 of element `rest` of a row; the division and the modulo only
// where they do something (integer division is slow on device).
template <typename I> PLM_HD inline int64_t axis_index(const StencilGeom &g, int a, int64_t n, I rest)
{
    const I q = g.inner[a] == 1 ? rest : rest / I(g.inner[a]);
    return int64_t(g.inner[a] * n == g.row_len ? q : q % I(n));
}

// A read of the block or its ghosts: through the read-only cache on device (they are never
// written while a stencil runs).
// (Complex parts one by one: a complex pointer need only be aligned as its parts.)
template <typename R> PLM_HD inline R load(const R *p)
{
#if defined(__CUDA_ARCH__)
    return __ldg(p);
#else
    return *p;
#endif
}
template <typename R> PLM_HD inline Cx<R> load(const Cx<R> *p) { return {load(&p->re), load(&p->im)}; }

PLM_HD inline const BandRow &band_row(const Band &b, int64_t i)
{
    if (i < b.lo) return b.ends[i];
    if (i >= b.n - b.hi) return b.ends[b.lo + (i - (b.n - b.hi))];
    return b.mid;
}

// One axis's term at an element: the row's sum of the terms of `row` (nterms > 0) over
// x[i + off[t]], then the axis factors. Axis 0 reads the block or a ghost buffer; other axes
// read the block.
template <typename I, typename V>
PLM_HD inline V axis_term(const BandRow &row, const StencilAxis &ax, bool along0, int64_t step, const StencilPlan &p,
                          const StencilGeom &g, const V *x, const V *gb, const V *ga, int64_t r, I rest)
{
    using R = typename real_part<V>::type;
    const int64_t at = r * g.row_len + int64_t(rest);
    R w[kMaxTerms] = {};
    V v[kMaxTerms] = {};
    PLM_UNROLL
    for (int t = 0; t < kMaxTerms; ++t) {
        if (t >= row.nterms) continue;
        w[t] = R(row.w[t]);
        if (!along0) {
            v[t] = load(x + at + row.off[t] * step);
            continue;
        }
        const int64_t rr = r + row.off[t];  // the source row, local
        if (rr < 0) v[t] = load(gb + (p.before + rr) * g.row_len + int64_t(rest));
        else if (rr >= p.nrows) v[t] = load(ga + (rr - p.nrows) * g.row_len + int64_t(rest));
        else v[t] = load(x + at + row.off[t] * step);
    }
    return axis_post<R>(band_sum<kMaxTerms>(row.nterms, w, row.d, row.group, row.gend, row.gneg, v), ax.div,
                        ax.weight);
}

// Element `rest` (< row_len) of local row r, given y0 (its value, read only when accumulate).
// I is the index type of the divisions (32-bit where the block allows: cheaper on device).
// The loop over the axes unrolls, and the middle rows take their own branch, so on device the
// plan's fields are read at fixed offsets of the kernel parameters (no indexed loads) except
// on the few end rows.
template <typename I, typename V>
PLM_HD inline V stencil_point(const StencilPlan &p, const StencilGeom &g, const V *x, const V *gb, const V *ga,
                              int64_t r, I rest, V y0, bool accumulate)
{
    V acc = y0;
    bool started = accumulate;
    PLM_UNROLL
    for (int s = 0; s < PLM_MAX_NDIM; ++s) {
        if (s >= p.naxes) break;
        const StencilAxis &ax = p.axes[s];
        const Band &b = ax.band;
        const bool along0 = ax.axis == 0;
        const int64_t step = along0 ? g.row_len : g.inner[ax.axis];
        const int64_t i = along0 ? p.row0 + r : axis_index(g, ax.axis, b.n, rest);
        V c;
        if (i >= b.lo && i < b.n - b.hi) {
            if (b.mid.nterms == 0) continue;
            c = axis_term(b.mid, ax, along0, step, p, g, x, gb, ga, r, rest);
        } else {
            const BandRow &row = band_row(b, i);
            if (row.nterms == 0) continue;
            c = axis_term(row, ax, along0, step, p, g, x, gb, ga, r, rest);
        }
        acc = add_term(acc, c, !started);
        started = true;
    }
    return started ? acc : V{};
}

}  // namespace plm::kernels::element
