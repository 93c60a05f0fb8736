// Non-stationary 1-D convolution on host (kernels.hpp): each sample's filter interpolated from
// its two neighbouring filters as it is used (no table of nh taps per sample), then whole rows
// of `inner` elements scattered (forward) or gathered (adjoint).
#include <algorithm>

#include "kernels/kernels.hpp"

namespace plm::kernels {

namespace {

// Complex products as (re, im) arithmetic, without C99's inf/nan recovery, as the other kernels.
template <typename T> inline T mul(T a, T b) { return a * b; }
template <typename R> inline std::complex<R> mul(std::complex<R> a, std::complex<R> b)
{
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

template <typename T> class Conv {
public:
    using R = real_t<T>;
    Conv(const NonstatPlan &p, const T *x, const T *before, const T *after)
        : p_(p), hs_(static_cast<const T *>(p.hs)), x_(x), before_(before), after_(after)
    {
    }

    // y[j] for j in [r0, r1): zeroed, then each input row within reach spreads its taps.
    void forward(int64_t r0, int64_t r1, T *y) const
    {
        const int64_t r = p_.nh / 2, inner = p_.inner;
        for (int64_t o = 0; o < p_.outer; ++o) {
            T *yo = y + o * p_.n * inner;
            std::fill(yo + r0 * inner, yo + r1 * inner, T(0));
            const int64_t ilo = std::max(r0 - r, -p_.before), ihi = std::min(r1 + r, p_.n + p_.after);
            Walk walk(*this, p_.row0 + ilo);
            for (int64_t i = ilo; i < ihi; ++i, walk.next()) {
                const Filter f = walk.get();
                const T *xi = row(o, i);
                const int64_t klo = std::max<int64_t>(0, r0 - i + r), khi = std::min(p_.nh, r1 - i + r);
                if (inner == 1) {  // one sample a row: the taps' loop is the contiguous one
                    spread(f, xi[0], klo, khi, yo + (i + klo - r));
                    continue;
                }
                for (int64_t k = klo; k < khi; ++k) {
                    const T c = f.tap(k);
                    T *yj = yo + (i + k - r) * inner;
                    for (int64_t q = 0; q < inner; ++q) yj[q] += mul(c, xi[q]);
                }
            }
        }
    }

    // y[j] = sum_k conj(h_j[k]) x[j + k - r] for j in [r0, r1).
    void adjoint(int64_t r0, int64_t r1, T *y) const
    {
        const int64_t r = p_.nh / 2, inner = p_.inner;
        for (int64_t o = 0; o < p_.outer; ++o) {
            Walk walk(*this, p_.row0 + r0);
            for (int64_t j = r0; j < r1; ++j, walk.next()) {
                const Filter f = walk.get();
                T *yj = y + (o * p_.n + j) * inner;
                std::fill(yj, yj + inner, T(0));
                const int64_t klo = std::max<int64_t>(0, -p_.before - j + r);
                const int64_t khi = std::min(p_.nh, p_.n + p_.after - j + r);
                if (inner == 1 && j + klo - r >= 0 && j + khi - r <= p_.n) {  // all in the block
                    yj[0] = gather(f, x_ + o * p_.n + (j + klo - r), klo, khi);
                    continue;
                }
                for (int64_t k = klo; k < khi; ++k) {
                    const T c = conj_if(f.tap(k));
                    const T *xi = row(o, j + k - r);
                    for (int64_t q = 0; q < inner; ++q) yj[q] += mul(c, xi[q]);
                }
            }
        }
    }

private:
    // The filter of one sample: (1 - w) h0 + w h1 (w = 0: h0 alone).
    struct Filter {
        const T *h0, *h1;
        R w;
        T tap(int64_t k) const { return w == R(0) ? h0[k] : (R(1) - w) * h0[k] + w * h1[k]; }
    };

    // y[k - klo] += tap(k) x for k in [klo, khi) (y points at tap klo's output), the same
    // terms as the general loop, with the interpolation's branch taken once so it vectorises.
    static void spread(const Filter &f, T x, int64_t klo, int64_t khi, T *__restrict y)
    {
        if (f.w == R(0)) {
            for (int64_t k = klo; k < khi; ++k) y[k - klo] += mul(f.h0[k], x);
            return;
        }
        const R w = f.w, v = R(1) - w;
        for (int64_t k = klo; k < khi; ++k) y[k - klo] += mul(v * f.h0[k] + w * f.h1[k], x);
    }

    // sum_k conj(tap(k)) x[k - klo] for k in [klo, khi) (x points at tap klo's input), the
    // same terms as the general loop, with the interpolation's branch taken once.
    static T gather(const Filter &f, const T *__restrict x, int64_t klo, int64_t khi)
    {
        T s = T(0);
        if (f.w == R(0)) {
            for (int64_t k = klo; k < khi; ++k) s += mul(conj_if(f.h0[k]), x[k - klo]);
            return s;
        }
        const R w = f.w, v = R(1) - w;
        for (int64_t k = klo; k < khi; ++k) s += mul(conj_if(v * f.h0[k] + w * f.h1[k]), x[k - klo]);
        return s;
    }

    // PyLops' _interpolate_h for samples g, g + 1, ... in turn: the filters either side of
    // each (the ends held), with q = floor((g - oh) / dh) and its remainder stepped along, so
    // the division runs once a line.
    class Walk {
    public:
        Walk(const Conv &c, int64_t g) : c_(c)
        {
            const int64_t d = g - c.p_.oh, dh = c.p_.dh;
            q_ = d >= 0 ? d / dh : -((-d + dh - 1) / dh);
            rem_ = d - q_ * dh;
        }
        Filter get() const
        {
            const NonstatPlan &p = c_.p_;
            const int64_t q = p.nfilt == 1 || q_ < 0 ? 0 : std::min(q_, p.nfilt - 1);
            const T *h0 = c_.hs_ + q * p.nh;
            if (p.nfilt == 1 || q_ < 0 || q_ >= p.nfilt - 1 || rem_ == 0) return {h0, h0, R(0)};
            return {h0, h0 + p.nh, static_cast<R>(static_cast<double>(rem_) / static_cast<double>(p.dh))};
        }
        void next()
        {
            if (++rem_ == c_.p_.dh) {
                rem_ = 0;
                ++q_;
            }
        }

    private:
        const Conv &c_;
        int64_t q_ = 0, rem_ = 0;
    };

    // Row i of the block (negative: a ghost ahead of it; n and past: a ghost past it).
    const T *row(int64_t o, int64_t i) const
    {
        if (i < 0) return before_ + (i + p_.before) * p_.inner;
        if (i >= p_.n) return after_ + (i - p_.n) * p_.inner;
        return x_ + (o * p_.n + i) * p_.inner;
    }

    const NonstatPlan &p_;
    const T *hs_, *x_, *before_, *after_;
};

}  // namespace

void nonstat_convolve(const Exec &e, DType dt, const NonstatPlan &p, bool adjoint, const void *x,
                      const void *ghost_before, const void *ghost_after, int64_t r0, int64_t r1, void *y)
{
    PLM_REQUIRE(e.space == Space::host, PLM_ERR_NOT_SUPPORTED,
                "the non-stationary convolution runs on host memory only");
    PLM_REQUIRE(p.nh >= 1 && p.nh % 2 == 1 && p.nfilt >= 1 && p.dh >= 1 && 0 <= r0 && r0 <= r1 && r1 <= p.n &&
                    (p.outer == 1 || (p.before == 0 && p.after == 0)),
                PLM_ERR_INTERNAL, "a bad non-stationary convolution plan");
    if (r1 <= r0 || p.outer == 0 || p.inner == 0) return;
    const int64_t reach = p.nh / 2;
    PLM_REQUIRE((!p.before || r0 >= reach || ghost_before) && (!p.after || r1 <= p.n - reach || ghost_after),
                PLM_ERR_INTERNAL, "non-stationary convolution rows [%lld, %lld) read ghost rows that were not passed",
                static_cast<long long>(r0), static_cast<long long>(r1));
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        Conv<T> c(p, static_cast<const T *>(x), static_cast<const T *>(ghost_before),
                  static_cast<const T *>(ghost_after));
        if (adjoint) c.adjoint(r0, r1, static_cast<T *>(y));
        else c.forward(r0, r1, static_cast<T *>(y));
    });
}

}  // namespace plm::kernels
