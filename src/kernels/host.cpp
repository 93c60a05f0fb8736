#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/sim.hpp"
#include "kernels/device.hpp"
#include "kernels/element.hpp"
#include "kernels/host_simd.hpp"
#include "kernels/kernels.hpp"

namespace plm::kernels {

namespace {

using element::Cx;
namespace el = element;

template <typename T> const T &val(const void *p) { return *static_cast<const T *>(p); }

// The shared element type of a host value type: Cx<R> for std::complex<R>.
template <typename T> struct el_of { using type = T; };
template <typename R> struct el_of<std::complex<R>> { using type = Cx<R>; };
template <typename T> typename el_of<T>::type as_el(T v) { return v; }
template <typename R> Cx<R> as_el(std::complex<R> v) { return {v.real(), v.imag()}; }
template <typename R> Cx<R> pair_at(const R *x, int64_t i) { return {x[2 * i], x[2 * i + 1]}; }

// ---------------------------------------------------------------------------------------
// Sums: blocks of kBlock terms go into L independent double lanes (so the loop streams and
// vectorises without reordering by the compiler), lanes are folded pairwise, and block sums
// are combined pairwise. The rounding error grows like kBlock / L + log2(n / kBlock), not n.
// ---------------------------------------------------------------------------------------

constexpr int64_t kBlock = 2048;

template <int K> using Part = std::array<double, K>;

// A binary counter of partial sums: after b blocks it holds one sum per set bit of b, so the
// additions form a balanced tree over the blocks while streaming.
template <int K> struct Cascade {
    Part<K> level[64];
    int top = 0;
    uint64_t blocks = 0;

    static void add(Part<K> &s, const Part<K> &t)
    {
        for (int k = 0; k < K; ++k) s[k] += t[k];
    }
    void push(Part<K> s)
    {
        for (uint64_t c = blocks++; c & 1; c >>= 1) add(s, level[--top]);
        level[top++] = s;
    }
    Part<K> total() const
    {
        Part<K> s{};
        for (int t = top; t-- > 0;) add(s, level[t]);
        return s;
    }
};

// K sums over terms 0..n-1; term(i, j, acc) adds term i + j into acc[k][j]. Returns, per k,
// the even lanes' sum then the odd lanes' (the real and imaginary parts of interleaved
// complex data; blocks start at even indices, so lane parity is index parity).
// Software prefetch a fixed distance ahead of one or two streams of Scale reals per term.
// Past L2 the hardware prefetcher alone left plm_array_dot at ~20 GB/s here (1e5 doubles,
// 60-85 us); with this it runs at 18-35 us, like OpenBLAS's ddot. The complex sums pass
// NoAhead (no measured gain on this machine).
template <typename R, int Scale = 1> struct Ahead {
    const R *a;
    const R *b = nullptr;
    PLM_INLINE void operator()(int64_t i, int terms) const
    {
        constexpr int64_t ahead = 2048 / sizeof(R), line = 64 / sizeof(R);
        for (int64_t k = i * Scale + ahead, last = (i + terms) * Scale + ahead; k < last; k += line) {
            __builtin_prefetch(a + k);
            if (b) __builtin_prefetch(b + k);
        }
    }
};

struct NoAhead {
    void operator()(int64_t, int) const {}
};

template <int K, int L, typename Term, typename Prefetch>
PLM_INLINE Part<2 * K> sum_blocked(int64_t n, Term term, Prefetch prefetch)
{
    Cascade<2 * K> c;
    for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t end = std::min(n, b + kBlock);
        double acc[K][L] = {};
        int64_t i = b;
        for (; i + L <= end; i += L) {
            prefetch(i, L);
            for (int j = 0; j < L; ++j) term(i, j, acc);
        }
        for (int j = 0; i + j < end; ++j) term(i, j, acc);
        // Fold the lanes pairwise, keeping even and odd lanes apart.
        Part<2 * K> s;
        for (int k = 0; k < K; ++k) {
            for (int w = L / 2; w >= 2; w /= 2)
                for (int j = 0; j < w; ++j) acc[k][j] += acc[k][j + w];
            s[2 * k] = acc[k][0];
            s[2 * k + 1] = acc[k][1];
        }
        c.push(s);
    }
    return c.total();
}

double both(Part<2> s) { return s[0] + s[1]; }

// Real data. float terms are widened to double first (a float product is exact in double).
template <typename R> PLM_CLONES double sum_abs(const R *x, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x](int64_t i, int j, auto &a) { a[0][j] += el::abs_of(x[i + j]); }, Ahead<R>{x}));
}

template <typename R> PLM_CLONES double sum_sq(const R *x, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x](int64_t i, int j, auto &a) { a[0][j] += el::abs2_of(x[i + j]); }, Ahead<R>{x}));
}

template <typename R> PLM_CLONES double sum_xy(const R *x, const R *y, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x, y](int64_t i, int j, auto &a) { a[0][j] += el::dot_term(x[i + j], y[i + j]); }, Ahead<R>{x, y}));
}

template <typename R> PLM_CLONES double count_nz(const R *x, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x](int64_t i, int j, auto &a) { a[0][j] += el::nonzero(x[i + j]) ? 1.0 : 0.0; }, Ahead<R>{x}));
}

// Complex x, y as n (re, im) pairs: the sums of re_x re_y, im_x im_y, re_x im_y, im_x re_y.
template <typename R> PLM_CLONES Part<8> sum_cross(const R *x, const R *y, int64_t n)
{
    return sum_blocked<4, 8>(n, [x, y](int64_t i, int j, auto &a) {
        const el::Sums4 t = el::cross_terms(pair_at(x, i + j), pair_at(y, i + j));
        a[0][j] += t.rr;
        a[1][j] += t.ii;
        a[2][j] += t.ri;
        a[3][j] += t.ir;
    }, NoAhead{});
}

// |z| = sqrt(re^2 + im^2) in double: exact range for c64; c128 callers check the range.
template <typename R> PLM_CLONES double sum_cabs(const R *x, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x](int64_t i, int j, auto &a) {
        const double re = x[2 * (i + j)], im = x[2 * (i + j) + 1];
        a[0][j] += std::sqrt(re * re + im * im);
    }, NoAhead{}));
}

template <typename R> PLM_CLONES double count_nz_pairs(const R *x, int64_t n)
{
    return both(sum_blocked<1, 32>(n, [x](int64_t i, int j, auto &a) {
        a[0][j] += el::nonzero(pair_at(x, i + j)) ? 1.0 : 0.0;
    }, NoAhead{}));
}

// |x| in double; complex: hypot, so no overflow or underflow in between.
template <typename T> double absd(T v) { return el::abs_of(as_el(v)); }

// Exact (hypot) magnitudes and general powers: libm calls, not vectorised; same blocking.
template <typename T> double sum_pow(const T *x, int64_t n, double p)
{
    return both(sum_blocked<1, 4>(n, [x, p](int64_t i, int j, auto &a) { a[0][j] += std::pow(absd(x[i + j]), p); }, NoAhead{}));
}

template <typename T> double sum_absd(const T *x, int64_t n)
{
    return both(sum_blocked<1, 4>(n, [x](int64_t i, int j, auto &a) { a[0][j] += absd(x[i + j]); }, NoAhead{}));
}

// ---------------------------------------------------------------------------------------
// max |x| and min |x|. With the sign bit cleared, a float's bits ordered as an integer order
// it by magnitude, and every NaN sorts above +inf: an integer max streams (vectorises with no
// NaN branches) and a NaN anywhere shows up as hi > inf.
// ---------------------------------------------------------------------------------------

template <typename R> using Key = std::conditional_t<sizeof(R) == 4, int32_t, int64_t>;

template <typename R> PLM_INLINE Key<R> key(R v)
{
    Key<R> k;
    std::memcpy(&k, &v, sizeof k);
    return k & std::numeric_limits<Key<R>>::max();
}

template <typename R> double from_key(Key<R> k)
{
    R v;
    std::memcpy(&v, &k, sizeof v);
    return v;
}

template <typename R> Key<R> inf_key() { return key(std::numeric_limits<R>::infinity()); }

// The smallest (when lo is not null) and largest key of get(0..n-1).
template <typename R, int L, typename Get> PLM_INLINE void key_range(int64_t n, Get get, Key<R> *lo, Key<R> *hi)
{
    Key<R> l[L], h[L];
    for (int j = 0; j < L; ++j) {
        l[j] = inf_key<R>();
        h[j] = 0;
    }
    auto step = [&](int64_t i, int j) {
        const Key<R> k = get(i + j);
        if (lo) l[j] = k < l[j] ? k : l[j];
        h[j] = h[j] < k ? k : h[j];
    };
    int64_t i = 0;
    for (; i + L <= n; i += L)
        for (int j = 0; j < L; ++j) step(i, j);
    for (int j = 0; i + j < n; ++j) step(i, j);
    if (lo) *lo = *std::min_element(l, l + L);
    *hi = *std::max_element(h, h + L);
}

// Real x: max |x| and, when lo is not null, min |x|; NaN in both when x holds NaN; 0 and inf
// when n = 0.
template <typename R> PLM_CLONES void abs_range(const R *x, int64_t n, double *lo, double *hi)
{
    Key<R> l = 0, h = 0;
    key_range<R, 128 / sizeof(R)>(n, [x](int64_t i) { return key(x[i]); }, lo ? &l : nullptr, &h);
    const bool nan = h > inf_key<R>();
    if (lo) *lo = nan ? std::numeric_limits<double>::quiet_NaN() : from_key<R>(l);
    *hi = from_key<R>(h);
}

// Complex x (n pairs): the range of re^2 + im^2 in double (NaN when a part is NaN).
template <typename R> PLM_CLONES void cabs2_range(const R *x, int64_t n, double *lo, double *hi)
{
    Key<double> l, h;
    key_range<double, 8>(n, [x](int64_t i) {
        const double re = x[2 * i], im = x[2 * i + 1];
        return key(re * re + im * im);
    }, &l, &h);
    *lo = from_key<double>(l);
    *hi = from_key<double>(h);
}

using el::nan_max;
using el::nan_min;

template <typename T> void abs_range_exact(const T *x, int64_t n, double *lo, double *hi)
{
    *lo = std::numeric_limits<double>::infinity();
    *hi = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double v = absd(x[i]);
        *lo = nan_min(*lo, v);
        *hi = nan_max(*hi, v);
    }
}

// The fast complex magnitudes square the parts in double: exact for c64, but c128 squares
// leave double's range past ~1e154 and below ~1e-154. Fast results outside the ranges below
// (and NaN, since hypot(inf, nan) = inf as in NumPy) are recomputed with hypot.
template <typename R> bool cabs_sum_ok(double s, int64_t n)
{
    if (sizeof(R) == 4) return !std::isnan(s);
    return s <= 1e150 && s >= static_cast<double>(n) * 1e-128;
}

template <typename R> bool cabs2_ok(double v)
{
    if (sizeof(R) == 4) return !std::isnan(v);
    return v >= 1e-290 && v <= 1e290;
}

template <typename T> double complex_norm(NormKind kind, double p, const T *x, int64_t n)
{
    using R = real_t<T>;
    const R *r = reinterpret_cast<const R *>(x);
    double lo = 0, hi = 0;
    switch (kind) {
    case NormKind::pow_sum:
        if (p == 2.0) return sum_sq(r, 2 * n);  // as NumPy: re.re + im.im
        if (p != 1.0) return sum_pow(x, n, p);
        lo = sum_cabs(r, n);
        return cabs_sum_ok<R>(lo, n) ? lo : sum_absd(x, n);
    case NormKind::max_abs:
    case NormKind::min_abs: {
        cabs2_range(r, n, &lo, &hi);
        const bool max = kind == NormKind::max_abs;
        if (cabs2_ok<R>(hi) && (max || cabs2_ok<R>(lo))) return std::sqrt(max ? hi : lo);
        abs_range_exact(x, n, &lo, &hi);
        return max ? hi : lo;
    }
    case NormKind::count_nonzero: return count_nz_pairs(r, n);
    }
    return 0.0;
}

// One contiguous run: the common case of a norm over all elements.
template <typename T> double reduce_run(NormKind kind, double p, const T *x, int64_t n)
{
    if constexpr (is_complex_v<T>) {
        return complex_norm(kind, p, x, n);
    } else {
        double lo = 0, hi = 0;
        switch (kind) {
        case NormKind::pow_sum: return p == 2.0 ? sum_sq(x, n) : p == 1.0 ? sum_abs(x, n) : sum_pow(x, n, p);
        case NormKind::max_abs: abs_range(x, n, nullptr, &hi); return hi;
        case NormKind::min_abs: abs_range(x, n, &lo, &hi); return lo;
        case NormKind::count_nonzero: return count_nz(x, n);
        }
        return 0.0;
    }
}

template <typename T> double abs2(T v) { return el::abs2_of(as_el(v)); }

template <typename T>
void norm_partial_t(NormKind kind, double p, int64_t outer, int64_t n, int64_t inner, const T *x, double *out)
{
    if (inner == 1) {
        for (int64_t o = 0; o < outer; ++o) out[o] = reduce_run(kind, p, x + o * n, n);
        return;
    }
    // Strided reduction: accumulate whole rows, so the inner loop stays contiguous.
    const double init = kind == NormKind::min_abs ? std::numeric_limits<double>::infinity() : 0.0;
    std::fill(out, out + outer * inner, init);
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t k = 0; k < n; ++k) {
            const T *row = x + (o * n + k) * inner;
            double *acc = out + o * inner;
            switch (kind) {
            case NormKind::pow_sum:
                if (p == 2.0) for (int64_t i = 0; i < inner; ++i) acc[i] += abs2(row[i]);
                else if (p == 1.0) for (int64_t i = 0; i < inner; ++i) acc[i] += absd(row[i]);
                else for (int64_t i = 0; i < inner; ++i) acc[i] += std::pow(absd(row[i]), p);
                break;
            case NormKind::max_abs:
                for (int64_t i = 0; i < inner; ++i) acc[i] = nan_max(acc[i], absd(row[i]));
                break;
            case NormKind::min_abs:
                for (int64_t i = 0; i < inner; ++i) acc[i] = nan_min(acc[i], absd(row[i]));
                break;
            case NormKind::count_nonzero:
                for (int64_t i = 0; i < inner; ++i) acc[i] += el::nonzero(as_el(row[i])) ? 1.0 : 0.0;
                break;
            }
        }
    }
}

template <typename T> T dot_t(int64_t n, const T *x, const T *y, bool conjugate)
{
    if constexpr (is_complex_v<T>) {
        using R = real_t<T>;
        const Part<8> s = sum_cross(reinterpret_cast<const R *>(x), reinterpret_cast<const R *>(y), n);
        const Cx<R> d = el::dot_from<R>({s[0] + s[1], s[2] + s[3], s[4] + s[5], s[6] + s[7]}, conjugate);
        return {d.re, d.im};
    } else {
        return static_cast<T>(sum_xy(x, y, n));
    }
}

// ---------------------------------------------------------------------------------------
// Streaming updates. BLAS conventions, whatever the BLAS: a zero beta never reads y, a zero
// alpha never reads x, scaling by zero writes zeros. Complex products are spelled out on
// (re, im) pairs, so they vectorise (std::complex's operator* calls __mulsc3 for C99 inf/nan
// recovery; NumPy does not recover either).
// ---------------------------------------------------------------------------------------

template <typename R> PLM_CLONES void axpby_real(int64_t n, R a, const R *x, R b, R *y)
{
    if (a == R(0) && b == R(0)) std::fill_n(y, n, R(0));
    else if (b == R(0)) for (int64_t i = 0; i < n; ++i) y[i] = el::scal(a, x[i]);
    else if (a == R(0)) for (int64_t i = 0; i < n; ++i) y[i] = el::scal(b, y[i]);
    else for (int64_t i = 0; i < n; ++i) y[i] = el::axpby(a, x[i], b, y[i]);
}

// y = a x on n (re, im) pairs; x may be y.
template <typename R> PLM_CLONES_NO512 void cmul_scalar(int64_t n, R ar, R ai, const R *x, R *y)
{
    const Cx<R> a{ar, ai};
    for (int64_t i = 0; i < n; ++i) {
        const Cx<R> v = el::scal(a, pair_at(x, i));
        y[2 * i] = v.re;
        y[2 * i + 1] = v.im;
    }
}

template <typename R> PLM_CLONES_NO512 void caxpby(int64_t n, R ar, R ai, const R *x, R br, R bi, R *y)
{
    const Cx<R> a{ar, ai}, b{br, bi};
    for (int64_t i = 0; i < n; ++i) {
        const Cx<R> v = el::axpby(a, pair_at(x, i), b, pair_at(y, i));
        y[2 * i] = v.re;
        y[2 * i + 1] = v.im;
    }
}

template <typename T> void axpby_t(int64_t n, T a, const T *x, T b, T *y)
{
    if constexpr (is_complex_v<T>) {
        using R = real_t<T>;
        const R *xr = reinterpret_cast<const R *>(x);
        R *yr = reinterpret_cast<R *>(y);
        if (a == T{} && b == T{}) std::fill_n(y, n, T{});
        else if (b == T{}) cmul_scalar(n, a.real(), a.imag(), xr, yr);
        else if (a == T{}) cmul_scalar(n, b.real(), b.imag(), yr, yr);
        else caxpby(n, a.real(), a.imag(), xr, b.real(), b.imag(), yr);
    } else {
        axpby_real(n, a, x, b, y);
    }
}

template <typename T> void scale_t(int64_t n, T a, T *x)
{
    if (a == T{}) std::fill_n(x, n, T{});
    else if (a == T(1)) return;
    else if constexpr (is_complex_v<T>) {
        using R = real_t<T>;
        cmul_scalar(n, a.real(), a.imag(), reinterpret_cast<const R *>(x), reinterpret_cast<R *>(x));
    } else {
        axpby_real(n, a, x, T(0), x);
    }
}

template <typename R> PLM_CLONES_NO512 void cmul(int64_t n, const R *x, const R *y, R *z)
{
    for (int64_t i = 0; i < n; ++i) {
        const Cx<R> v = el::mul(pair_at(x, i), pair_at(y, i));
        z[2 * i] = v.re;
        z[2 * i + 1] = v.im;
    }
}

}  // namespace

void fill(const Exec &e, DType dt, int64_t n, const void *value, void *x)
{
    if (e.space == Space::device) return device::fill(e, dt, n, value, x);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            std::fill_n(static_cast<T *>(x), n, val<T>(value));
        });
    });
}

void copy(const Exec &e, DType dt, int64_t n, const void *x, void *y)
{
    if (e.space == Space::device) return device::copy(e, dt, n, x, y);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        if (n > 0 && x != y) std::memmove(y, x, static_cast<size_t>(n) * dtype_size(dt));
    });
}

void scale(const Exec &e, DType dt, int64_t n, const void *alpha, void *x)
{
    if (e.space == Space::device) return device::scale(e, dt, n, alpha, x);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            scale_t<T>(n, val<T>(alpha), static_cast<T *>(x));
        });
    });
}

void axpby(const Exec &e, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y)
{
    if (e.space == Space::device) return device::axpby(e, dt, n, alpha, x, beta, y);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            axpby_t<T>(n, val<T>(alpha), static_cast<const T *>(x), val<T>(beta), static_cast<T *>(y));
        });
    });
}

void binary(const Exec &e, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z)
{
    if (e.space == Space::device) return device::binary(e, dt, op, n, x, y, z);
    sim::compute(PLM_SIM_SITE, {int64_t(dt), int64_t(op)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            using R = real_t<T>;
            const R *a = static_cast<const R *>(x);
            const R *b = static_cast<const R *>(y);
            R *c = static_cast<R *>(z);
            const int64_t m = is_complex_v<T> ? 2 * n : n;  // add and sub act on the parts
            switch (op) {
            case Binary::add: for (int64_t i = 0; i < m; ++i) c[i] = el::add(a[i], b[i]); break;
            case Binary::sub: for (int64_t i = 0; i < m; ++i) c[i] = el::sub(a[i], b[i]); break;
            case Binary::mul:
                if constexpr (is_complex_v<T>) cmul(n, a, b, c);
                else for (int64_t i = 0; i < n; ++i) c[i] = el::mul(a[i], b[i]);
                break;
            }
        });
    });
}

void conj(const Exec &e, DType dt, int64_t n, const void *x, void *y)
{
    if (e.space == Space::device) return device::conj(e, dt, n, x, y);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            using R = real_t<T>;
            if constexpr (is_complex_v<T>) {
                const R *a = static_cast<const R *>(x);
                R *b = static_cast<R *>(y);
                for (int64_t i = 0; i < n; ++i) {
                    const Cx<R> v = el::conj(pair_at(a, i));
                    b[2 * i] = v.re;
                    b[2 * i + 1] = v.im;
                }
            } else {
                std::copy_n(static_cast<const T *>(x), n, static_cast<T *>(y));
            }
        });
    });
}

namespace {
// The element type of a dtype as element.hpp names it, for a widening from A.
template <typename A, typename B> void widen_loop(int64_t n, const void *x, void *y)
{
    const A *a = static_cast<const A *>(x);
    B *b = static_cast<B *>(y);
    for (int64_t i = 0; i < n; ++i) b[i] = el::widen<B>(a[i]);
}

template <typename F> void dispatch_el(DType dt, F &&f)
{
    switch (dt) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::c64: return f(Cx<float>{});
    case DType::c128: return f(Cx<double>{});
    default: PLM_FAIL(PLM_ERR_INTERNAL, "dtype %s is not a floating dtype", dtype_name(dt));
    }
}
}  // namespace

void convert(const Exec &e, DType from, DType to, int64_t n, const void *x, void *y)
{
    PLM_REQUIRE(widens(from, to), PLM_ERR_INTERNAL, "convert %s to %s narrows", dtype_name(from), dtype_name(to));
    if (from == to) return copy(e, from, n, x, y);
    if (e.space == Space::device) return device::convert(e, from, to, n, x, y);
    dispatch_el(from, [&](auto a) {
        dispatch_el(to, [&](auto b) {
            using A = decltype(a);
            using B = decltype(b);
            if constexpr (!element::IsCxT<A>::value || element::IsCxT<B>::value) widen_loop<A, B>(n, x, y);
        });
    });
}

void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result)
{
    if (e.space == Space::device) return device::dot(e, dt, n, x, y, conjugate, result);
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            *static_cast<T *>(result) = dot_t<T>(n, static_cast<const T *>(x), static_cast<const T *>(y), conjugate);
        });
    });
}

void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out)
{
    if (e.space == Space::device) return device::norm_partial(e, dt, kind, p, outer, n, inner, x, out);
    sim::compute(PLM_SIM_SITE, {inner > 1, int64_t(dt), int64_t(kind), p == 2 ? 2 : p == 1 ? 1 : 0}, outer * n * inner, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            norm_partial_t<T>(kind, p, outer, n, inner, static_cast<const T *>(x), out);
        });
    });
}

void copy_slab(const Exec &e, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count)
{
    if (e.space == Space::device) return device::copy_slab(e, dt, outer, inner, src, src_n, src_start, dst, dst_n, dst_start, count);
    sim::compute(PLM_SIM_SITE, {inner * count, int64_t(dt)}, outer, [&] {
        if (count <= 0 || inner <= 0) return;
        const size_t es = dtype_size(dt);
        const size_t run = static_cast<size_t>(count * inner) * es;
        for (int64_t o = 0; o < outer; ++o) {
            const char *from = static_cast<const char *>(src) + static_cast<size_t>((o * src_n + src_start) * inner) * es;
            char *to = static_cast<char *>(dst) + static_cast<size_t>((o * dst_n + dst_start) * inner) * es;
            std::memcpy(to, from, run);
        }
    });
}

void scale_slab(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t count,
                const void *alpha, void *x)
{
    if (e.space == Space::device) return device::scale_slab(e, dt, outer, n, inner, start, count, alpha, x);
    if (count <= 0 || inner <= 0) return;
    const size_t es = dtype_size(dt);
    for (int64_t o = 0; o < outer; ++o)
        scale(e, dt, count * inner, alpha, static_cast<char *>(x) + static_cast<size_t>((o * n + start) * inner) * es);
}

namespace {
// Recursive over dimensions; the last one is one contiguous run.
void copy_box_dim(int d, int ndim, size_t es, const char *src, const int64_t *ss, const int64_t *s0, char *dst,
                  const int64_t *ds, const int64_t *d0, const int64_t *box)
{
    int64_t sstride = 1, dstride = 1;
    for (int k = d + 1; k < ndim; ++k) {
        sstride *= ss[k];
        dstride *= ds[k];
    }
    src += static_cast<size_t>(s0[d] * sstride) * es;
    dst += static_cast<size_t>(d0[d] * dstride) * es;
    if (d == ndim - 1) {
        std::memcpy(dst, src, static_cast<size_t>(box[d]) * es);
        return;
    }
    for (int64_t i = 0; i < box[d]; ++i)
        copy_box_dim(d + 1, ndim, es, src + static_cast<size_t>(i * sstride) * es, ss, s0,
                     dst + static_cast<size_t>(i * dstride) * es, ds, d0, box);
}
}  // namespace

void copy_box(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box)
{
    if (e.space == Space::device) return device::copy_box(e, dt, ndim, src, src_shape, src_start, dst, dst_shape, dst_start, box);
    // The key: the box but its first extent (the work) and the dtype.
    sim::compute(PLM_SIM_SITE, {ndim, ndim > 1 ? box[1] : 0, ndim > 2 ? box[2] : 0, box[ndim - 1], int64_t(dt)},
                 ndim > 0 ? box[0] : 0, [&] {
        for (int d = 0; d < ndim; ++d)
            if (box[d] <= 0) return;
        copy_box_dim(0, ndim, dtype_size(dt), static_cast<const char *>(src), src_shape, src_start,
                     static_cast<char *>(dst), dst_shape, dst_start, box);
    });
}

namespace {
// dst[i] = f src[i] for the n reals of a run (complex data: both parts).
template <typename R> PLM_CLONES void times_run(int64_t n, const R *src, R *dst, R f)
{
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * f;
}

// copy_box_dim with weights, on the reals of a box of elements of w reals each (w = 2 for
// complex): f is the factor of every entry below dimension d once the recursion has passed
// the weights' axis (< 0 before).
template <typename R>
void copy_box_scaled_dim(int d, int ndim, int w, const R *src, const int64_t *ss, const int64_t *s0, R *dst,
                         const int64_t *ds, const int64_t *d0, const int64_t *box, const BoxScale &bw, double f)
{
    int64_t sstride = w, dstride = w;
    for (int k = d + 1; k < ndim; ++k) {
        sstride *= ss[k];
        dstride *= ds[k];
    }
    src += s0[d] * sstride;
    dst += d0[d] * dstride;
    const int64_t n = box[d];
    if (d == ndim - 1) {
        if (bw.axis != d) return times_run<R>(n * w, src, dst, static_cast<R>(f));
        // the weights' axis innermost: three runs of one factor each
        const int64_t lo = std::clamp<int64_t>(bw.b0 - bw.first, 0, n), hi = std::clamp<int64_t>(bw.b1 - bw.first, lo, n);
        times_run<R>(lo * w, src, dst, static_cast<R>(bw.out));
        times_run<R>((hi - lo) * w, src + lo * w, dst + lo * w, static_cast<R>(bw.in));
        times_run<R>((n - hi) * w, src + hi * w, dst + hi * w, static_cast<R>(bw.out));
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        const double g = bw.axis != d ? f : bw.first + i >= bw.b0 && bw.first + i < bw.b1 ? bw.in : bw.out;
        copy_box_scaled_dim<R>(d + 1, ndim, w, src + i * sstride, ss, s0, dst + i * dstride, ds, d0, box, bw, g);
    }
}
}  // namespace

void copy_box_scaled(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape,
                     const int64_t *src_start, void *dst, const int64_t *dst_shape, const int64_t *dst_start,
                     const int64_t *box, const BoxScale &w)
{
    if (w.none()) return copy_box(e, dt, ndim, src, src_shape, src_start, dst, dst_shape, dst_start, box);
    for (int d = 0; d < ndim; ++d)
        if (box[d] <= 0) return;
    PLM_REQUIRE(w.axis < ndim, PLM_ERR_INTERNAL, "box weights along axis %d of %d", w.axis, ndim);
    if (e.space == Space::device) {
        for (int d = 1; d < ndim; ++d)
            PLM_REQUIRE(dst_shape[d] == box[d] && dst_start[d] == 0, PLM_ERR_INTERNAL,
                        "a weighted box copy on the device needs a contiguous destination box");
        copy_box(e, dt, ndim, src, src_shape, src_start, dst, dst_shape, dst_start, box);
        int64_t inner = 1;
        for (int d = 1; d < ndim; ++d) inner *= dst_shape[d];
        return scale_box(e, dt, ndim, box, w,
                         static_cast<char *>(dst) + static_cast<size_t>(dst_start[0] * inner) * dtype_size(dt));
    }
    const int parts = is_complex(dt) ? 2 : 1;
    if (dt == DType::f32 || dt == DType::c64)
        copy_box_scaled_dim<float>(0, ndim, parts, static_cast<const float *>(src), src_shape, src_start,
                                   static_cast<float *>(dst), dst_shape, dst_start, box, w, -1.0);
    else
        copy_box_scaled_dim<double>(0, ndim, parts, static_cast<const double *>(src), src_shape, src_start,
                                    static_cast<double *>(dst), dst_shape, dst_start, box, w, -1.0);
}

void scale_box(const Exec &e, DType dt, int ndim, const int64_t *box, const BoxScale &w, void *x)
{
    if (w.none()) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ndim; ++d) {
        if (box[d] <= 0) return;
        if (d < w.axis) outer *= box[d];
        if (d > w.axis) inner *= box[d];
    }
    const int64_t n = box[w.axis];
    const int64_t lo = std::clamp<int64_t>(w.b0 - w.first, 0, n), hi = std::clamp<int64_t>(w.b1 - w.first, lo, n);
    const int64_t cut[4] = {0, lo, hi, n};
    // complex data as twice as many reals: each part times the real factor, as copy_box_scaled
    const DType rdt = dt == DType::c64 ? DType::f32 : dt == DType::c128 ? DType::f64 : dt;
    const int64_t rinner = inner * (is_complex(dt) ? 2 : 1);
    for (int k = 0; k < 3; ++k) {
        if (cut[k + 1] <= cut[k]) continue;
        const double f = k == 1 ? w.in : w.out;
        alignas(8) unsigned char a[8] = {};  // f as one real of the precision
        if (rdt == DType::f32) {
            const float v = static_cast<float>(f);
            std::memcpy(a, &v, sizeof v);
        } else {
            std::memcpy(a, &f, sizeof f);
        }
        scale_slab(e, rdt, outer, n, rinner, cut[k], cut[k + 1] - cut[k], a, x);
    }
}

namespace {
template <typename R> PLM_CLONES void real_parts_t(int64_t n, const R *z, R *re)
{
    for (int64_t i = 0; i < n; ++i) re[i] = z[2 * i];
}
template <typename R> PLM_CLONES void from_real_t(int64_t n, const R *re, R *z)
{
    for (int64_t i = 0; i < n; ++i) {
        z[2 * i] = re[i];
        z[2 * i + 1] = R(0);
    }
}

}  // namespace

void real_parts(const Exec &e, DType dt, int64_t n, const void *z, void *re)
{
    PLM_REQUIRE(is_complex(dt), PLM_ERR_INTERNAL, "real_parts of a real dtype");
    const DType rdt = dt == DType::c64 ? DType::f32 : DType::f64;
    if (e.space == Space::device) return copy_slab(e, rdt, n, 1, z, 2, 0, re, 1, 0, 1);
    if (rdt == DType::f32) return real_parts_t(n, static_cast<const float *>(z), static_cast<float *>(re));
    real_parts_t(n, static_cast<const double *>(z), static_cast<double *>(re));
}

void from_real(const Exec &e, DType dt, int64_t n, const void *re, void *z)
{
    PLM_REQUIRE(is_complex(dt), PLM_ERR_INTERNAL, "from_real into a real dtype");
    const DType rdt = dt == DType::c64 ? DType::f32 : DType::f64;
    if (e.space == Space::device) {
        const unsigned char zero[16] = {};
        fill(e, dt, n, zero, z);
        return copy_slab(e, rdt, n, 1, re, 1, 0, z, 2, 0, 1);
    }
    if (rdt == DType::f32) return from_real_t(n, static_cast<const float *>(re), static_cast<float *>(z));
    from_real_t(n, static_cast<const double *>(re), static_cast<double *>(z));
}

namespace {
template <typename T> void threshold_t(int64_t n, T *x, const el::ThresholdArgs &a)
{
    if constexpr (is_complex_v<T>) {
        using R = real_t<T>;
        R *r = reinterpret_cast<R *>(x);
        for (int64_t i = 0; i < n; ++i) {
            const Cx<R> v = el::threshold(pair_at(r, i), a);
            r[2 * i] = v.re;
            r[2 * i + 1] = v.im;
        }
    } else {
        for (int64_t i = 0; i < n; ++i) x[i] = el::threshold(x[i], a);
    }
}
}  // namespace

void threshold(const Exec &e, DType dt, Threshold kind, double t, int64_t n, void *x)
{
    PLM_REQUIRE(kind == Threshold::soft || kind == Threshold::hard || kind == Threshold::half ||
                    kind == Threshold::hard_at,
                PLM_ERR_INTERNAL,
                "unknown threshold kind %d", enum_value(kind));
    const el::ThresholdArgs a = el::threshold_args(kind, t);
    if (e.space == Space::device) return device::threshold(e, dt, a, n, x);
    dispatch_float(dt, [&](auto z) {
        using T = decltype(z);
        threshold_t<T>(n, static_cast<T *>(x), a);
    });
}

namespace {
template <typename T> void group_add_t(int64_t n, const T *x, bool first, real_t<T> *n2)
{
    using R = real_t<T>;
    if constexpr (is_complex_v<T>) {
        const R *r = reinterpret_cast<const R *>(x);
        for (int64_t i = 0; i < n; ++i) n2[i] = el::group_add(n2[i], first, el::abs2_r(pair_at(r, i)));
    } else {
        for (int64_t i = 0; i < n; ++i) n2[i] = el::group_add(n2[i], first, el::abs2_r(x[i]));
    }
}

template <typename T> void group_scale_t(Group kind, real_t<T> t, int64_t n, const real_t<T> *n2, const T *x, T *y)
{
    using R = real_t<T>;
    if constexpr (is_complex_v<T>) {
        const R *r = reinterpret_cast<const R *>(x);
        R *o = reinterpret_cast<R *>(y);
        for (int64_t i = 0; i < n; ++i) {
            const Cx<R> v = el::mul(el::group_factor(n2[i], kind, t), pair_at(r, i));
            o[2 * i] = v.re;
            o[2 * i + 1] = v.im;
        }
    } else {
        for (int64_t i = 0; i < n; ++i) y[i] = el::mul(el::group_factor(n2[i], kind, t), x[i]);
    }
}
}  // namespace

void group_add(const Exec &e, DType dt, int64_t n, const void *x, bool first, void *n2)
{
    if (e.space == Space::device) return device::group_add(e, dt, n, x, first, n2);
    dispatch_float(dt, [&](auto z) {
        using T = decltype(z);
        group_add_t<T>(n, static_cast<const T *>(x), first, static_cast<real_t<T> *>(n2));
    });
}

void group_scale(const Exec &e, DType dt, Group kind, double t, int64_t n, const void *n2, const void *x, void *y)
{
    PLM_REQUIRE(kind == Group::prox || kind == Group::dual, PLM_ERR_INTERNAL, "unknown group step %d", enum_value(kind));
    if (e.space == Space::device) return device::group_scale(e, dt, kind, t, n, n2, x, y);
    dispatch_float(dt, [&](auto z) {
        using T = decltype(z);
        using R = real_t<T>;
        group_scale_t<T>(kind, R(t), n, static_cast<const R *>(n2), static_cast<const T *>(x), static_cast<T *>(y));
    });
}

void group_norm(const Exec &e, DType rdt, int64_t n, void *n2)
{
    PLM_REQUIRE(!is_complex(rdt), PLM_ERR_INTERNAL, "group_norm on a complex dtype");
    if (e.space == Space::device) return device::group_norm(e, rdt, n, n2);
    dispatch_float(rdt, [&](auto z) {
        using R = decltype(z);
        if constexpr (!is_complex_v<R>) {
            R *v = static_cast<R *>(n2);
            for (int64_t i = 0; i < n; ++i) v[i] = el::sqrt_(v[i]);
        }
    });
}

void box(const Exec &e, DType dt, bool mark, double lo, double hi, int64_t n, const void *x, void *y)
{
    PLM_REQUIRE(!is_complex(dt), PLM_ERR_INTERNAL, "box on a complex dtype");
    if (e.space == Space::device) return device::box(e, dt, mark, lo, hi, n, x, y);
    dispatch_float(dt, [&](auto z) {
        using T = decltype(z);
        if constexpr (!is_complex_v<T>) {
            const T *a = static_cast<const T *>(x);
            T *b = static_cast<T *>(y);
            for (int64_t i = 0; i < n; ++i) b[i] = el::box(a[i], mark, lo, hi);
        }
    });
}

// ---------------------------------------------------------------------------------------
// Reductions into slots
// ---------------------------------------------------------------------------------------

Reductions::Reductions(const Exec &e, int slots) : e_(e), slots_(slots)
{
    PLM_REQUIRE(slots >= 0, PLM_ERR_INTERNAL, "%d reduction slots", slots);
    const size_t bytes = 2 * static_cast<size_t>(slots) * sizeof(double);
    if (e.space != Space::device) {
        results_ = Buffer::allocate(Space::host, bytes);
        std::fill_n(slot(0), 2 * slots, 0.0);
        return;
    }
    use_device(e.device);
    results_ = Buffer::allocate(Space::device, bytes);
    scratch_ = Buffer::allocate(Space::device, device::reduction_scratch_bytes());
    const double zero = 0;
    device::fill(e, DType::f64, 2 * slots, &zero, results_.data());  // collect() never reads garbage
}

double *Reductions::slot(int s) const { return static_cast<double *>(results_.data()) + 2 * static_cast<size_t>(s); }

namespace {
void check_slot(const Exec &e, const Reductions &r, int slot)
{
    PLM_REQUIRE(slot >= 0 && slot < r.slots(), PLM_ERR_INTERNAL, "reduction slot %d of %d", slot, r.slots());
    PLM_REQUIRE((e.space == Space::device) == (r.exec().space == Space::device), PLM_ERR_INTERNAL,
                "reduction slots made for %s memory used on %s memory", space_name(r.exec().space), space_name(e.space));
}
}  // namespace

void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, Reductions &r, int slot)
{
    check_slot(e, r, slot);
    if (e.space == Space::device) return device::dot(e, dt, n, x, y, conjugate, r.scratch(), r.slot(slot));
    sim::compute(PLM_SIM_SITE, {int64_t(dt)}, n, [&] {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            const T v = dot_t<T>(n, static_cast<const T *>(x), static_cast<const T *>(y), conjugate);
            r.slot(slot)[0] = static_cast<double>(std::real(v));
            r.slot(slot)[1] = static_cast<double>(std::imag(v));
        });
    });
}

void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t n, const void *x, Reductions &r, int slot)
{
    check_slot(e, r, slot);
    if (e.space == Space::device) return device::norm_partial(e, dt, kind, p, n, x, r.scratch(), r.slot(slot));
    norm_partial(e, dt, kind, p, 1, n, 1, x, r.slot(slot));
    r.slot(slot)[1] = 0;
}

void collect(const Exec &e, const Reductions &r, double *host)
{
    const size_t count = 2 * static_cast<size_t>(r.slots());
    if (count == 0) return;
    check_slot(e, r, 0);
    if (e.space == Space::device) return device::collect(e, r.slot(0), static_cast<int64_t>(count), host);
    std::memcpy(host, r.slot(0), count * sizeof(double));
}

}  // namespace plm::kernels
