// Random stencil plans and their reference, shared by the host and device kernel tests: a
// global model, a block of its rows with the ghost rows the plan reads, and the value of each
// output element computed here in double, term by term.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"

namespace stencil_cases {

using plm::kernels::Band;
using plm::kernels::BandRow;
using plm::kernels::kMaxEnds;
using plm::kernels::kMaxTerms;
using plm::kernels::StencilPlan;

using Rng = std::mt19937_64;

inline int uniform(Rng &g, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }

inline double weight(Rng &g)
{
    const int k = uniform(g, 0, 5);
    if (k == 0) return 1;
    if (k == 1) return -1;
    return std::uniform_real_distribution<double>(-2, 2)(g);
}

// A row at point i of an axis of n points: up to kMaxTerms terms within `reach`, on the axis;
// some divided (by 3 or 12, as PyLops' 5-point rows), some with a group (added or subtracted).
inline BandRow random_row(Rng &g, int64_t n, int64_t i, int reach, int min_terms)
{
    BandRow r;
    r.nterms = uniform(g, min_terms, kMaxTerms);
    const int lo = static_cast<int>(std::max<int64_t>(-reach, -i)), hi = static_cast<int>(std::min<int64_t>(reach, n - 1 - i));
    const int divided = uniform(g, 0, 3);  // 0: none, 1: all (the 4-term fast path when 4), 2: some
    for (int t = 0; t < r.nterms; ++t) {
        r.off[t] = uniform(g, lo, hi);
        r.w[t] = weight(g);
        if (divided == 1 || (divided == 2 && uniform(g, 0, 1) == 1)) r.d[t] = uniform(g, 0, 1) ? 3 : 12;
    }
    if (r.nterms > 0 && uniform(g, 0, 4) == 0) {
        r.group = static_cast<unsigned char>(uniform(g, 0, r.nterms - 1));
        r.gend = static_cast<unsigned char>(uniform(g, r.group + 1, kMaxTerms));
        r.gneg = uniform(g, 0, 1) == 1;
    }
    return r;
}

// The axis factors: usually none, else a divisor and / or a weight.
inline void random_factors(Rng &g, plm::kernels::StencilAxis &ax)
{
    const int k = uniform(g, 0, 3);
    ax.div = k == 1 || k == 3 ? std::uniform_real_distribution<double>(0.3, 3)(g) : 1.0;
    ax.weight = k == 2 || k == 3 ? std::uniform_real_distribution<double>(-3, 3)(g) : 1.0;
}

inline void offsets(const BandRow &r, int *lo, int *hi)
{
    *lo = *hi = 0;
    for (int t = 0; t < r.nterms; ++t) {
        *lo = std::min(*lo, r.off[t]);
        *hi = std::max(*hi, r.off[t]);
    }
}

// Random lo / hi / ends / terms; some end rows equal to mid, some empty.
inline Band random_band(Rng &g, int64_t n)
{
    Band b;
    b.n = n;
    const int reach = uniform(g, 0, 3);
    b.mid = random_row(g, 1 << 20, 1 << 19, reach, uniform(g, 0, 5) == 0 ? 0 : 1);
    int mlo = 0, mhi = 0;
    offsets(b.mid, &mlo, &mhi);
    int lo = -mlo + uniform(g, 0, 2), hi = mhi + uniform(g, 0, 2);
    if (lo + hi > std::min<int64_t>(n, kMaxEnds)) {
        if (n <= kMaxEnds) {
            lo = static_cast<int>(n);  // every row listed
            hi = 0;
        } else {
            lo = -mlo;
            hi = mhi;
        }
    }
    b.lo = lo;
    b.hi = hi;
    for (int e = 0; e < lo + hi; ++e) {
        const int64_t i = e < lo ? e : n - hi + (e - lo);
        bool mid_fits = true;
        for (int t = 0; t < b.mid.nterms; ++t) mid_fits = mid_fits && i + b.mid.off[t] >= 0 && i + b.mid.off[t] < n;
        const int k = uniform(g, 0, 4);
        if (k == 0 && mid_fits) b.ends[e] = b.mid;
        else if (k == 1) b.ends[e] = BandRow{};
        else b.ends[e] = random_row(g, n, i, 4, 1);
    }
    return b;
}

inline const BandRow &row_of(const Band &b, int64_t i)
{
    if (i < b.lo) return b.ends[i];
    if (i >= b.n - b.hi) return b.ends[b.lo + (i - (b.n - b.hi))];
    return b.mid;
}

inline int reach_of(const Band &b)
{
    int r = 0, lo = 0, hi = 0;
    for (int e = -1; e < b.lo + b.hi; ++e) {
        offsets(e < 0 ? b.mid : b.ends[e], &lo, &hi);
        r = std::max({r, -lo, hi});
    }
    return r;
}

// A random plan: ndim 1..8 of a few thousand points at most, a random subset of axes in random
// order, a random block (empty and thin ones included) with the ghost rows axis 0 reaches.
inline StencilPlan random_plan(Rng &g, int ndim)
{
    StencilPlan p;
    p.ndim = ndim;
    int64_t total = 1;
    for (int a = 0; a < ndim; ++a) {
        const int64_t cap = std::max<int64_t>(1, 4000 / total / (a == 0 ? 1 : 4));
        const int64_t top = ndim <= 2 ? 40 : ndim <= 4 ? 9 : 4;
        p.dims[a] = std::min<int64_t>(cap, uniform(g, 1, static_cast<int>(a == 0 ? 2 * top : top)));
        total *= p.dims[a];
    }
    std::vector<int> axes(static_cast<size_t>(ndim));
    for (int a = 0; a < ndim; ++a) axes[static_cast<size_t>(a)] = a;
    std::shuffle(axes.begin(), axes.end(), g);
    p.naxes = uniform(g, 0, 4) == 0 ? 0 : uniform(g, 1, ndim);
    for (int s = 0; s < p.naxes; ++s) {
        p.axes[s].axis = axes[static_cast<size_t>(s)];
        random_factors(g, p.axes[s]);
        p.axes[s].band = random_band(g, p.dims[p.axes[s].axis]);
    }
    const int64_t n0 = p.dims[0];
    p.row0 = uniform(g, 0, static_cast<int>(n0));
    const int kind = uniform(g, 0, 3);
    p.nrows = kind == 0 ? 0 : kind == 1 ? std::min<int64_t>(n0 - p.row0, uniform(g, 1, 2)) : uniform(g, 0, static_cast<int>(n0 - p.row0));
    int reach = 0;
    for (int s = 0; s < p.naxes; ++s)
        if (p.axes[s].axis == 0) reach = reach_of(p.axes[s].band);
    p.before = std::min<int64_t>(p.row0, reach);
    p.after = std::min<int64_t>(n0 - p.row0 - p.nrows, reach);
    return p;
}

inline int64_t row_len(const StencilPlan &p)
{
    int64_t n = 1;
    for (int a = 1; a < p.ndim; ++a) n *= p.dims[a];
    return n;
}

// The reference value of local element (r, rest) over the global model xg (w reals per element,
// part `part`): sum over the plan's axes of weight / div * sum_t w_t x[i + off_t] / d_t (the
// group's terms subtracted when gneg), in double; *mag gets the sum of the terms' magnitudes
// (for the tolerance). has: whether any axis had terms.
inline double reference(const StencilPlan &p, const std::vector<double> &xg, int w, int part, int64_t r, int64_t rest,
                        double *mag, bool *has)
{
    int64_t idx[PLM_MAX_NDIM] = {}, inner[PLM_MAX_NDIM] = {};
    int64_t s = 1;
    for (int a = p.ndim - 1; a >= 0; --a) {
        inner[a] = s;
        s *= p.dims[a];
    }
    int64_t rem = rest;
    for (int a = 1; a < p.ndim; ++a) {
        idx[a] = rem / inner[a];
        rem -= idx[a] * inner[a];
    }
    idx[0] = p.row0 + r;
    int64_t flat = 0;
    for (int a = 0; a < p.ndim; ++a) flat += idx[a] * inner[a];
    double v = 0;
    *mag = 0;
    *has = false;
    for (int k = 0; k < p.naxes; ++k) {
        const int a = p.axes[k].axis;
        const BandRow &row = row_of(p.axes[k].band, idx[a]);
        const double f = p.axes[k].weight / p.axes[k].div;
        for (int t = 0; t < row.nterms; ++t) {
            const double sign = t >= row.group && t < row.gend && row.gneg ? -1 : 1;
            const double term =
                sign * f * row.w[t] / row.d[t] * xg[static_cast<size_t>((flat + row.off[t] * inner[a]) * w + part)];
            v += term;
            *mag += std::fabs(term);
            *has = true;
        }
    }
    return v;
}

}  // namespace stencil_cases
