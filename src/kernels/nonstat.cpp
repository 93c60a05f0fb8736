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
            for (int64_t i = ilo; i < ihi; ++i) {
                const Filter f = filter(p_.row0 + i);
                const T *xi = row(o, i);
                const int64_t klo = std::max<int64_t>(0, r0 - i + r), khi = std::min(p_.nh, r1 - i + r);
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
        for (int64_t o = 0; o < p_.outer; ++o)
            for (int64_t j = r0; j < r1; ++j) {
                const Filter f = filter(p_.row0 + j);
                T *yj = y + (o * p_.n + j) * inner;
                std::fill(yj, yj + inner, T(0));
                const int64_t klo = std::max<int64_t>(0, -p_.before - j + r);
                const int64_t khi = std::min(p_.nh, p_.n + p_.after - j + r);
                for (int64_t k = klo; k < khi; ++k) {
                    const T c = conj_if(f.tap(k));
                    const T *xi = row(o, j + k - r);
                    for (int64_t q = 0; q < inner; ++q) yj[q] += mul(c, xi[q]);
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

    // PyLops' _interpolate_h: the filters either side of global sample g, the ends held.
    Filter filter(int64_t g) const
    {
        int64_t q = 0;
        R w = 0;
        if (p_.nfilt > 1) {
            const int64_t d = g - p_.oh;
            q = d >= 0 ? d / p_.dh : -((-d + p_.dh - 1) / p_.dh);  // floor
            if (q < 0) {
                q = 0;
            } else if (q >= p_.nfilt - 1) {
                q = p_.nfilt - 1;
            } else {
                w = static_cast<R>(static_cast<double>(d - q * p_.dh) / static_cast<double>(p_.dh));
            }
        }
        const T *h0 = hs_ + q * p_.nh;
        return {h0, w == R(0) ? h0 : h0 + p_.nh, w};
    }

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
