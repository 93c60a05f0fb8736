// Stencils on host (kernels.hpp): the fused stencil of a plan in one sweep over the block's
// rows. The sweep cuts each row into runs along the contiguous axes where
// every axis of the plan uses one band row, and computes a run axis by axis over chunks small
// enough to stay in L1, so memory sees x read once and y written once. The element arithmetic
// is element.hpp's, the same as the device kernel's.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/sim.hpp"
#include "kernels/device.hpp"
#include "kernels/element.hpp"
#include "kernels/host_simd.hpp"
#include "kernels/kernels.hpp"

namespace plm::kernels {

namespace {

namespace el = element;

// ---------------------------------------------------------------------------------------
// Passes over a run of n reals: y[j] (=, or += when not first) the terms of one or two axes,
// reading source t of an axis at base[t][at[t] + j0 + j].
// ---------------------------------------------------------------------------------------

// One axis's term on the runs of a line: term t reads array base[t] (the block or a ghost
// buffer) at at[t] + j0 + j for real j of the run that starts j0 reals into the line (at[t]
// alone may be negative: only the sum indexes). The arithmetic is kernels.hpp's: term t is
// w[t] x, divided by dv[t] where d[t] != 1; the row's sum (with its group); then, when post,
// divided by f and multiplied by weight. Complex data (recip) multiply by reciprocals instead
// (dv and f hold 1 / d and 1 / div, in R, as element::divide computes them).
template <typename R> struct Src {
    int k = 0;
    const R *base[kMaxTerms];
    int64_t at[kMaxTerms];
    R w[kMaxTerms];
    unsigned char d[kMaxTerms];
    R dv[kMaxTerms];
    int group = kMaxTerms, gend = kMaxTerms;
    bool gneg = false;
    R f = 1, fr = 1, weight = 1;  // the axis divisor and its reciprocal (real data: div_rn)
    bool post = false;   // div or weight is not 1
    bool recip = false;  // complex data
    // How the passes compute it: plain sums of w x (no divisors, no group), PyLops' centered
    // 5-point rows (4 terms, every one divided), or element by element (the rest: end rows).
    enum Kind { plain, divided4, general } kind = plain;
    const R *src(int t, int64_t j0) const { return base[t] + (at[t] + j0); }
};

// The weighted sum of K values in term order.
template <int K, typename R> inline R wsum(const R *w, const R *v)
{
    R s = el::mul(w[0], v[0]);
    for (int t = 1; t < K; ++t) s = el::add(s, el::mul(w[t], v[t]));
    return s;
}

// The axis factors of a row's sum (Post: div or weight is not 1; f == 1 divides exactly).
template <bool Post, bool Recip, typename R> inline R post(R s, R f, R fr, R weight)
{
    if constexpr (Post) {
        s = Recip ? el::mul(f, s) : el::div_rn(s, f, fr);
        s = el::mul(weight, s);
    }
    return s;
}

// One real of a source, whatever its kind: band_sum's arithmetic on reals.
template <typename R> R value_at(const Src<R> &a, int64_t j)
{
    R s{}, g{};
    bool hs = false;
    for (int t = 0; t < a.k; ++t) {
        R v = el::mul(a.w[t], a.src(t, j)[0]);
        if (a.d[t] != 1) v = a.recip ? el::mul(a.dv[t], v) : el::div_small(v, a.d[t]);
        if (t < a.group || t >= a.gend) {
            s = hs ? el::add(s, v) : v;
            hs = true;
            continue;
        }
        g = t == a.group ? v : el::add(g, v);
        if (t == a.gend - 1 || t == a.k - 1) {
            s = hs ? (a.gneg ? el::sub(s, g) : el::add(s, g)) : (a.gneg ? -g : g);
            hs = true;
        }
    }
    if (a.post) {
        s = a.recip ? el::mul(a.f, s) : el::div_rn(s, a.f, a.fr);
        s = el::mul(a.weight, s);
    }
    return s;
}

// K terms known at compile time, so the loop vectorises.
template <typename R, int K, bool Post, bool Recip>
PLM_CLONES_FMA void pass_k(int64_t n, const Src<R> &a, int64_t j0, bool first, R *__restrict y)
{
    const R *p[K];
    R w[K];
    for (int t = 0; t < K; ++t) {
        p[t] = a.src(t, j0);
        w[t] = a.w[t];
    }
    const R f = a.f, fr = a.fr, weight = a.weight;
    auto at = [&](int64_t j) {
        R v[K];
        for (int t = 0; t < K; ++t) v[t] = p[t][j];
        return post<Post, Recip>(wsum<K>(w, v), f, fr, weight);
    };
    if (first)
        for (int64_t j = 0; j < n; ++j) y[j] = at(j);
    else
        for (int64_t j = 0; j < n; ++j) y[j] = el::add(y[j], at(j));
}

// PyLops' centered 5-point rows: four terms, each divided (x / 12.0 - 2 x / 3.0 + ...): real
// data through element::div3 (fused multiply-adds, hence the FMA clones), complex data by
// reciprocals. q[t]: the factor after x / 3 (1/4 for d = 12, 1 for d = 3), exact.
template <typename R, bool Post, bool Recip>
PLM_CLONES_FMA void pass_divided4(int64_t n, const Src<R> &a, int64_t j0, bool first, R *__restrict y)
{
    const R *p[4];
    R w[4], dv[4], q[4];
    for (int t = 0; t < 4; ++t) {
        p[t] = a.src(t, j0);
        w[t] = a.w[t];
        dv[t] = a.dv[t];
        q[t] = a.d[t] == 12 ? R(0.25) : R(1);
    }
    const R f = a.f, fr = a.fr, weight = a.weight;
    auto at = [&](int64_t j) {
        R s{};
        for (int t = 0; t < 4; ++t) {
            R v = el::mul(w[t], p[t][j]);
            if constexpr (Recip) v = el::mul(dv[t], v);
            else v = el::mul(q[t], el::div3(v));  // el::div_small, its branch out of the loop
            s = t == 0 ? v : el::add(s, v);
        }
        return post<Post, Recip>(s, f, fr, weight);
    };
    if (first)
        for (int64_t j = 0; j < n; ++j) y[j] = at(j);
    else
        for (int64_t j = 0; j < n; ++j) y[j] = el::add(y[j], at(j));
}

template <typename R> void pass_general(int64_t n, const Src<R> &a, int64_t j0, bool first, R *y)
{
    for (int64_t j = 0; j < n; ++j) y[j] = first ? value_at(a, j0 + j) : el::add(y[j], value_at(a, j0 + j));
}

template <typename R, bool Post, bool Recip> void pass_plain(int64_t n, const Src<R> &a, int64_t j0, bool first, R *y)
{
    switch (a.k) {
    case 1: return pass_k<R, 1, Post, Recip>(n, a, j0, first, y);
    case 2: return pass_k<R, 2, Post, Recip>(n, a, j0, first, y);
    case 3: return pass_k<R, 3, Post, Recip>(n, a, j0, first, y);
    case 4: return pass_k<R, 4, Post, Recip>(n, a, j0, first, y);
    default: return pass_k<R, 5, Post, Recip>(n, a, j0, first, y);
    }
}

template <typename R> void pass(int64_t n, const Src<R> &a, int64_t j0, bool first, R *y)
{
    if (a.kind == Src<R>::general) return pass_general(n, a, j0, first, y);
    if (a.kind == Src<R>::divided4) {
        if (!a.post) return a.recip ? pass_divided4<R, false, true>(n, a, j0, first, y)
                                    : pass_divided4<R, false, false>(n, a, j0, first, y);
        return a.recip ? pass_divided4<R, true, true>(n, a, j0, first, y)
                       : pass_divided4<R, true, false>(n, a, j0, first, y);
    }
    if (!a.post) return pass_plain<R, false, false>(n, a, j0, first, y);
    return a.recip ? pass_plain<R, true, true>(n, a, j0, first, y) : pass_plain<R, true, false>(n, a, j0, first, y);
}

// Two axes' terms in one loop: y = c1 + c2 (first), or (y + c1) + c2, the sums of two
// passes. For the usual derivative rows (2 or 3 terms): a 2-axis Laplacian reads and writes y
// once, a 3-axis one twice.
template <typename R, int K1, int K2, bool Post, bool Recip>
PLM_CLONES_FMA void pass2_k(int64_t n, const Src<R> &a, const Src<R> &b, int64_t j0, bool first, R *__restrict y)
{
    const R *p[K1], *q[K2];
    R wp[K1], wq[K2];
    for (int t = 0; t < K1; ++t) {
        p[t] = a.src(t, j0);
        wp[t] = a.w[t];
    }
    for (int t = 0; t < K2; ++t) {
        q[t] = b.src(t, j0);
        wq[t] = b.w[t];
    }
    const R fa = a.f, ra = a.fr, wa = a.weight, fb = b.f, rb = b.fr, wb = b.weight;
    auto c1 = [&](int64_t j) {
        R v[K1];
        for (int t = 0; t < K1; ++t) v[t] = p[t][j];
        return post<Post, Recip>(wsum<K1>(wp, v), fa, ra, wa);
    };
    auto c2 = [&](int64_t j) {
        R v[K2];
        for (int t = 0; t < K2; ++t) v[t] = q[t][j];
        return post<Post, Recip>(wsum<K2>(wq, v), fb, rb, wb);
    };
    if (first)
        for (int64_t j = 0; j < n; ++j) y[j] = el::add(c1(j), c2(j));
    else
        for (int64_t j = 0; j < n; ++j) y[j] = el::add(el::add(y[j], c1(j)), c2(j));
}

// Two plain sources of 2 or 3 terms with the same factors' shape (both with or both without).
template <typename R> bool pairable(const Src<R> &a, const Src<R> &b)
{
    return a.kind == Src<R>::plain && b.kind == Src<R>::plain && a.post == b.post && (a.k == 2 || a.k == 3) &&
           (b.k == 2 || b.k == 3);
}

template <typename R, bool Post, bool Recip>
void pass2_of(int64_t n, const Src<R> &a, const Src<R> &b, int64_t j0, bool first, R *y)
{
    if (a.k == 2) {
        if (b.k == 2) return pass2_k<R, 2, 2, Post, Recip>(n, a, b, j0, first, y);
        return pass2_k<R, 2, 3, Post, Recip>(n, a, b, j0, first, y);
    }
    if (b.k == 2) return pass2_k<R, 3, 2, Post, Recip>(n, a, b, j0, first, y);
    return pass2_k<R, 3, 3, Post, Recip>(n, a, b, j0, first, y);
}

template <typename R> void pass2(int64_t n, const Src<R> &a, const Src<R> &b, int64_t j0, bool first, R *y)
{
    if (!a.post) return pass2_of<R, false, false>(n, a, b, j0, first, y);
    return a.recip ? pass2_of<R, true, true>(n, a, b, j0, first, y) : pass2_of<R, true, false>(n, a, b, j0, first, y);
}

constexpr int64_t kChunk = 512;  // reals per pass when a run takes several: all streams stay in L1

// A short run (an end row of the innermost axis, a few reals): element by element, no calls.
template <typename R> void run_short(int64_t m, int ns, const Src<R> *s, int64_t j0, bool accumulate, R *y)
{
    for (int64_t j = 0; j < m; ++j) {
        R acc = y[j];
        for (int i = 0; i < ns; ++i) acc = el::add_term(acc, value_at(s[i], j0 + j), i == 0 && !accumulate);
        y[j] = ns > 0 || accumulate ? acc : R(0);
    }
}

constexpr int64_t kShort = 16;  // reals: runs this short take run_short()

// y[0, m) gets the terms of s[0, ns) in order (the first replaces y unless accumulate), for
// the run j0 reals into their line: one pass over the run, or chunks of passes (two axes at a
// time where they pair). The reals ahead of y's first 64-byte boundary go element by element,
// so the passes store whole cache lines (an AVX-512 store across two lines is slow: a 1-D
// derivative whose middle rows started 8 bytes past a line ran about 5% slower).
template <typename R> void run(int64_t m, int ns, const Src<R> *s, int64_t j0, bool accumulate, R *y)
{
    if (m <= kShort) return run_short(m, ns, s, j0, accumulate, y);
    if (reinterpret_cast<uintptr_t>(y) % sizeof(R) == 0) {
        const int64_t peel = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64 / sizeof(R));
        if (peel > 0) {
            run_short(peel, ns, s, j0, accumulate, y);
            j0 += peel;
            y += peel;
            m -= peel;
        }
    }
    if (ns == 0) {
        if (!accumulate) std::fill_n(y, m, R(0));
        return;
    }
    const bool one_pass = ns == 1 || (ns == 2 && pairable(s[0], s[1]));
    const int64_t chunk = one_pass ? m : kChunk;
    for (int64_t j = 0; j < m; j += chunk) {
        const int64_t len = std::min(chunk, m - j);
        for (int i = 0; i < ns;) {
            const bool first = i == 0 && !accumulate;
            if (i + 1 < ns && pairable(s[i], s[i + 1])) {
                pass2(len, s[i], s[i + 1], j0 + j, first, y + j);
                i += 2;
            } else {
                pass(len, s[i], j0 + j, first, y + j);
                i += 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Plan checks
// ---------------------------------------------------------------------------------------

bool same_row(const BandRow &a, const BandRow &b)
{
    if (a.nterms != b.nterms) return false;
    for (int t = 0; t < a.nterms; ++t)
        if (a.off[t] != b.off[t] || a.w[t] != b.w[t] || a.d[t] != b.d[t]) return false;
    const bool ga = a.group < a.nterms, gb = b.group < b.nterms;
    return ga == gb && (!ga || (a.group == b.group && std::min<int>(a.gend, a.nterms) == std::min<int>(b.gend, b.nterms) &&
                                a.gneg == b.gneg));
}

// The smallest and largest offsets of a row, 0 included.
void span(const BandRow &r, int *lo, int *hi)
{
    *lo = *hi = 0;
    for (int t = 0; t < r.nterms; ++t) {
        *lo = std::min(*lo, r.off[t]);
        *hi = std::max(*hi, r.off[t]);
    }
}

void check_row(const BandRow &r, int axis)
{
    PLM_REQUIRE(r.nterms >= 0 && r.nterms <= kMaxTerms, PLM_ERR_INTERNAL, "stencil axis %d: a row of %d terms",
                axis, r.nterms);
    for (int t = 0; t < r.nterms; ++t)
        PLM_REQUIRE(r.d[t] == 1 || r.d[t] == 3 || r.d[t] == 12, PLM_ERR_INTERNAL,
                    "stencil axis %d: a term divided by %d (1, 3 or 12)", axis, int(r.d[t]));
}

void check_band(const Band &b, int64_t n, int axis)
{
    PLM_REQUIRE(b.n == n, PLM_ERR_INTERNAL, "stencil axis %d: a band of %lld points on an axis of %lld", axis,
                static_cast<long long>(b.n), static_cast<long long>(n));
    PLM_REQUIRE(b.lo >= 0 && b.hi >= 0 && b.lo + b.hi <= kMaxEnds && b.lo + b.hi <= n, PLM_ERR_INTERNAL,
                "stencil axis %d: %d + %d end rows on %lld points", axis, b.lo, b.hi, static_cast<long long>(n));
    check_row(b.mid, axis);
    for (int e = 0; e < b.lo + b.hi; ++e) {
        const BandRow &r = b.ends[e];
        check_row(r, axis);
        const int64_t i = e < b.lo ? e : n - b.hi + (e - b.lo);
        for (int t = 0; t < r.nterms; ++t)
            PLM_REQUIRE(i + r.off[t] >= 0 && i + r.off[t] < n, PLM_ERR_INTERNAL,
                        "stencil axis %d: row %lld reads %lld, off the axis", axis, static_cast<long long>(i),
                        static_cast<long long>(i + r.off[t]));
    }
    int lo = 0, hi = 0;
    span(b.mid, &lo, &hi);
    PLM_REQUIRE(n - b.hi <= b.lo || (b.lo + lo >= 0 && n - b.hi - 1 + hi < n), PLM_ERR_INTERNAL,
                "stencil axis %d: the middle rows reach off the axis", axis);
}

struct Reads {
    bool before = false, after = false;  // whether the rows read ghost rows ahead of / past the block
};

// Axis 0's band on output rows [r0, r1): every read inside the block or its ghosts.
Reads check_reach(const StencilPlan &p, const Band &b, int64_t r0, int64_t r1)
{
    Reads rd;
    const int64_t g0 = p.row0 + r0, g1 = p.row0 + r1, first = p.row0 - p.before, end = p.row0 + p.nrows + p.after;
    auto reads = [&](int64_t lo, int64_t hi) {  // global rows [lo, hi] read
        PLM_REQUIRE(lo >= first && hi < end, PLM_ERR_INTERNAL,
                    "stencil rows of block [%lld, %lld) read rows [%lld, %lld], beyond its ghosts [%lld, %lld)",
                    static_cast<long long>(p.row0), static_cast<long long>(p.row0 + p.nrows),
                    static_cast<long long>(lo), static_cast<long long>(hi), static_cast<long long>(first),
                    static_cast<long long>(end));
        rd.before = rd.before || lo < p.row0;
        rd.after = rd.after || hi >= p.row0 + p.nrows;
    };
    auto row_reads = [&](const BandRow &r, int64_t ga, int64_t gb) {  // rows [ga, gb) with row r
        if (gb <= ga || r.nterms == 0) return;
        int lo = 0, hi = 0;
        span(r, &lo, &hi);
        int tlo = r.off[0], thi = r.off[0];  // the terms' own extent (span() includes 0)
        for (int t = 1; t < r.nterms; ++t) {
            tlo = std::min(tlo, r.off[t]);
            thi = std::max(thi, r.off[t]);
        }
        reads(ga + tlo, gb - 1 + thi);
    };
    for (int e = 0; e < b.lo + b.hi; ++e) {
        const int64_t g = e < b.lo ? e : b.n - b.hi + (e - b.lo);
        if (g >= g0 && g < g1) row_reads(b.ends[e], g, g + 1);
    }
    row_reads(b.mid, std::max<int64_t>(g0, b.lo), std::min(g1, b.n - b.hi));
    return rd;
}

// The checks of stencil() on rows [r0, r1); what they read of the ghosts.
Reads check_rows(const StencilPlan &p, int64_t r0, int64_t r1)
{
    PLM_REQUIRE(p.ndim >= 1 && p.ndim <= PLM_MAX_NDIM, PLM_ERR_INTERNAL, "a stencil plan of %d dimensions", p.ndim);
    PLM_REQUIRE(p.dims[0] >= 0, PLM_ERR_INTERNAL, "a stencil plan of %lld rows", static_cast<long long>(p.dims[0]));
    for (int a = 1; a < p.ndim; ++a)
        PLM_REQUIRE(p.dims[a] >= 1, PLM_ERR_INTERNAL, "stencil plan dimension %d is %lld", a,
                    static_cast<long long>(p.dims[a]));
    PLM_REQUIRE(p.row0 >= 0 && p.nrows >= 0 && p.row0 + p.nrows <= p.dims[0] && p.before >= 0 &&
                    p.before <= p.row0 && p.after >= 0 && p.after <= p.dims[0] - p.row0 - p.nrows,
                PLM_ERR_INTERNAL, "a stencil block of rows [%lld, %lld) with %lld + %lld ghost rows in %lld rows",
                static_cast<long long>(p.row0), static_cast<long long>(p.row0 + p.nrows),
                static_cast<long long>(p.before), static_cast<long long>(p.after), static_cast<long long>(p.dims[0]));
    PLM_REQUIRE(r0 >= 0 && r0 <= r1 && r1 <= p.nrows, PLM_ERR_INTERNAL, "stencil rows [%lld, %lld) of a block of %lld",
                static_cast<long long>(r0), static_cast<long long>(r1), static_cast<long long>(p.nrows));
    PLM_REQUIRE(p.naxes >= 0 && p.naxes <= p.ndim, PLM_ERR_INTERNAL, "a stencil plan of %d axes in %d dimensions",
                p.naxes, p.ndim);
    Reads rd;
    unsigned seen = 0;
    for (int s = 0; s < p.naxes; ++s) {
        const StencilAxis &ax = p.axes[s];
        PLM_REQUIRE(ax.axis >= 0 && ax.axis < p.ndim && !(seen >> ax.axis & 1u), PLM_ERR_INTERNAL,
                    "stencil axis %d: out of range or repeated", ax.axis);
        seen |= 1u << ax.axis;
        PLM_REQUIRE(std::isfinite(ax.div) && ax.div != 0 && std::isfinite(ax.weight), PLM_ERR_INTERNAL,
                    "stencil axis %d: factors %g, %g", ax.axis, ax.div, ax.weight);
        check_band(ax.band, p.dims[ax.axis], ax.axis);
        if (ax.axis == 0) rd = check_reach(p, ax.band, r0, r1);
    }
    return rd;
}

// ---------------------------------------------------------------------------------------
// The sweep
// ---------------------------------------------------------------------------------------

// One axis of the plan, prepared: its rows in [mlo, mhi) are all mid (end rows equal to mid
// included, so the runs are as long as they can be).
struct AxisRun {
    int axis = 0;
    const Band *band = nullptr;
    const StencilAxis *ax = nullptr;  // its factors
    int64_t mlo = 0, mhi = 0;
};

AxisRun prepare(const StencilAxis &ax)
{
    const Band &b = ax.band;
    AxisRun a{ax.axis, &b, &ax, b.lo, b.n - b.hi};
    while (a.mlo > 0 && same_row(el::band_row(b, a.mlo - 1), b.mid)) --a.mlo;
    while (a.mhi < b.n && same_row(el::band_row(b, a.mhi), b.mid)) ++a.mhi;
    return a;
}

template <typename R> class Sweep {
public:
    Sweep(const StencilPlan &p, int width, const R *x, const R *gb, const R *ga, bool accumulate, R *y)
        : p_(p), x_(x), gb_(gb), ga_(ga), y_(y), acc_(accumulate), recip_(width == 2)
    {
        const el::StencilGeom g = el::stencil_geom(p);
        for (int a = 0; a < p.ndim; ++a) step_[a] = g.inner[a] * width;
        row_ = g.row_len * width;
        for (int s = 0; s < p.naxes; ++s) {
            ax_[s] = prepare(p.axes[s]);
            if (ax_[s].axis > 0 && (last_ < 0 || ax_[s].axis > ax_[last_].axis)) last_ = s;
        }
    }

    void rows(int64_t r0, int64_t r1)
    {
        if (last_ >= 0) {
            for (int64_t r = r0; r < r1; ++r) lines(r);
            return;
        }
        if (p_.naxes == 0) {
            run<R>((r1 - r0) * row_, 0, nullptr, 0, acc_, y_ + r0 * row_);
            return;
        }
        // Axis 0 alone: the rows whose mid terms all read inside the block make one run.
        const AxisRun &a = ax_[0];
        int lo = 0, hi = 0;
        span(a.band->mid, &lo, &hi);
        const int64_t i0 = std::clamp(std::max(a.mlo - p_.row0, int64_t(-lo)), r0, r1);
        const int64_t i1 = std::clamp(std::min(a.mhi - p_.row0, p_.nrows - hi), i0, r1);
        for (int64_t r = r0; r < i0; ++r) whole_row(r);
        if (i1 > i0) {
            Src<R> s;
            const int ns = term0(a.band->mid, *a.ax, i0, 0, &s);
            run((i1 - i0) * row_, ns, &s, 0, acc_, y_ + i0 * row_);
        }
        for (int64_t r = i1; r < r1; ++r) whole_row(r);
    }

private:
    // Axis 0's term (row b of its band) for local row r, reading `shift` reals into each
    // source row: 0 when it has no terms, else 1.
    int term0(const BandRow &b, const StencilAxis &ax, int64_t r, int64_t shift, Src<R> *s) const
    {
        for (int t = 0; t < b.nterms; ++t) {
            const int64_t rr = r + b.off[t];  // block row, or a ghost row
            s->base[t] = rr < 0 ? gb_ : rr >= p_.nrows ? ga_ : x_;
            s->at[t] = (rr < 0 ? p_.before + rr : rr >= p_.nrows ? rr - p_.nrows : rr) * row_ + shift;
        }
        return factors(b, ax, s);
    }

    // Axis a's term (row b) for a line starting at real `line` of the block.
    int term(const BandRow &b, int a, const StencilAxis &ax, int64_t line, Src<R> *s) const
    {
        for (int t = 0; t < b.nterms; ++t) {
            s->base[t] = x_;
            s->at[t] = line + b.off[t] * step_[a];
        }
        return factors(b, ax, s);
    }

    // The arithmetic of row b on axis ax, and the pass that computes it.
    int factors(const BandRow &b, const StencilAxis &ax, Src<R> *s) const
    {
        s->k = b.nterms;
        bool divided = false;
        for (int t = 0; t < b.nterms; ++t) {
            s->w[t] = static_cast<R>(b.w[t]);
            s->d[t] = b.d[t];
            s->dv[t] = recip_ ? el::div(R(1), R(b.d[t])) : R(b.d[t]);
            divided = divided || b.d[t] != 1;
        }
        s->group = b.group;
        s->gend = b.gend;
        s->gneg = b.gneg;
        s->recip = recip_;
        s->post = ax.div != 1 || ax.weight != 1;
        s->f = recip_ ? el::div(R(1), R(ax.div)) : R(ax.div);
        s->fr = el::div(R(1), R(ax.div));
        s->weight = R(ax.weight);
        const bool grouped = b.group < b.nterms;
        bool all4 = b.nterms == 4 && !grouped;
        for (int t = 0; t < b.nterms; ++t) all4 = all4 && b.d[t] != 1;
        s->kind = grouped || (divided && !all4) ? Src<R>::general : divided ? Src<R>::divided4 : Src<R>::plain;
        return s->k > 0 ? 1 : 0;
    }

    // Only axis 0 in the plan: row r as one run.
    void whole_row(int64_t r) const
    {
        Src<R> s;
        const int ns = term0(el::band_row(*ax_[0].band, p_.row0 + r), *ax_[0].ax, r, 0, &s);
        run(row_, ns, &s, 0, acc_, y_ + r * row_);
    }

    // Row r: lines along the last axis L of the plan (each dims[L] * step[L] reals), one per
    // index of the axes between 0 and L; every other axis of the plan has one row per line.
    // Each line's terms are listed once, then its runs: the middle rows of L, and L's end rows.
    void lines(int64_t r) const
    {
        const AxisRun &last = ax_[last_];
        const Band &b = *last.band;
        const int L = last.axis;
        const int64_t step = step_[L];
        int64_t idx[PLM_MAX_NDIM] = {};
        int64_t nlines = 1;
        for (int a = 1; a < L; ++a) nlines *= p_.dims[a];
        for (int64_t q = 0; q < nlines; ++q) {
            int64_t line = r * row_;
            for (int a = 1; a < L; ++a) line += idx[a] * step_[a];
            Src<R> s[PLM_MAX_NDIM];
            int owner[PLM_MAX_NDIM], ns = 0;  // s[i] is the term of the plan's axis owner[i]
            for (int k = 0; k < p_.naxes; ++k) {
                const AxisRun &a = ax_[k];
                owner[ns] = k;
                if (a.axis == 0) ns += term0(el::band_row(*a.band, p_.row0 + r), *a.ax, r, line - r * row_, &s[ns]);
                else ns += term(k == last_ ? b.mid : el::band_row(*a.band, idx[a.axis]), a.axis, *a.ax, line, &s[ns]);
            }
            if (last.mhi > last.mlo)
                run((last.mhi - last.mlo) * step, ns, s, last.mlo * step, acc_, y_ + line + last.mlo * step);
            // An end row of L: the same terms, L's row replaced.
            auto end = [&](int64_t j) {
                Src<R> e[PLM_MAX_NDIM];
                int ne = 0;
                for (int k = 0, i = 0; k < p_.naxes; ++k) {
                    const bool listed = i < ns && owner[i] == k;
                    if (k == last_) ne += term(el::band_row(b, j), L, *last.ax, line, &e[ne]);
                    else if (listed) e[ne++] = s[i];
                    i += listed;
                }
                run(step, ne, e, j * step, acc_, y_ + line + j * step);
            };
            for (int64_t j = 0; j < last.mlo; ++j) end(j);
            for (int64_t j = last.mhi; j < b.n; ++j) end(j);
            for (int a = L - 1; a >= 1 && ++idx[a] == p_.dims[a]; --a) idx[a] = 0;
        }
    }

    const StencilPlan &p_;
    const R *x_, *gb_, *ga_;
    R *y_;
    bool acc_;
    bool recip_;  // complex data: divisions multiply by reciprocals (element::divide)
    int64_t step_[PLM_MAX_NDIM] = {}, row_ = 0;  // in reals
    AxisRun ax_[PLM_MAX_NDIM];
    int last_ = -1;  // the plan's entry of its largest axis > 0, or -1
};

}  // namespace

void check_plan(const StencilPlan &p) { check_rows(p, 0, p.nrows); }

void interior_rows(const StencilPlan &p, int64_t *r0, int64_t *r1)
{
    check_plan(p);
    *r0 = 0;
    *r1 = p.nrows;
    for (int s = 0; s < p.naxes; ++s) {
        if (p.axes[s].axis != 0) continue;
        const Band &b = p.axes[s].band;
        int reach = 0, lo = 0, hi = 0;
        for (int e = -1; e < b.lo + b.hi; ++e) {
            span(e < 0 ? b.mid : b.ends[e], &lo, &hi);
            reach = std::max({reach, -lo, hi});
        }
        // Only rows within reach of the block's ends can read outside it.
        for (int64_t r = 0; r < std::min<int64_t>(reach, p.nrows); ++r) {
            span(el::band_row(b, p.row0 + r), &lo, &hi);
            if (r + lo < 0) *r0 = r + 1;
        }
        for (int64_t r = p.nrows - 1; r >= std::max<int64_t>(0, p.nrows - reach); --r) {
            span(el::band_row(b, p.row0 + r), &lo, &hi);
            if (r + hi >= p.nrows) *r1 = r;
        }
        *r1 = std::max(*r0, *r1);
    }
}

void stencil(const Exec &e, DType dt, const StencilPlan &p, const void *x, const void *ghost_before,
             const void *ghost_after, int64_t r0, int64_t r1, bool accumulate, void *y)
{
    const Reads rd = check_rows(p, r0, r1);
    PLM_REQUIRE((!rd.before || ghost_before) && (!rd.after || ghost_after), PLM_ERR_INTERNAL,
                "stencil rows [%lld, %lld) read ghost rows that were not passed", static_cast<long long>(r0),
                static_cast<long long>(r1));
    if (r1 <= r0) return;
    if (e.space == Space::device) return device::stencil(e, dt, p, x, ghost_before, ghost_after, r0, r1, accumulate, y);
    // Sampling (core/sim.hpp): the cost is proportional to the rows, for a plan's shape and terms.
    int64_t terms = 0;
    for (int a = 0; a < p.naxes; ++a) terms = terms * 8 + p.axes[a].band.mid.nterms;
    sim::compute(PLM_SIM_SITE,
                 {p.ndim > 1 ? p.dims[1] : 1, p.ndim > 2 ? p.dims[2] : 1, p.ndim, terms, int64_t(dt), accumulate},
                 r1 - r0, [&] {
                     dispatch_float(dt, [&](auto t) {
                         using T = decltype(t);
                         using R = real_t<T>;
                         Sweep<R> s(p, is_complex_v<T> ? 2 : 1, static_cast<const R *>(x),
                                    static_cast<const R *>(ghost_before), static_cast<const R *>(ghost_after),
                                    accumulate, static_cast<R *>(y));
                         s.rows(r0, r1);
                     });
                 });
}

}  // namespace plm::kernels
