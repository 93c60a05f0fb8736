// White-box tests of the host kernels' numerics (src/kernels): every norm kind and dot for
// the four floating dtypes against references computed here in long double (compensated
// where the reference itself must be exact), on NaN, +-Inf, huge, tiny and denormal values;
// the BLAS conventions of axpby and scale; the accuracy of long sums (ulps at N = 1e7,
// float32 at N = 1e6); the fused stencil on random plans against a reference computed here in
// double and, bit for bit, against element.hpp's per-element path (the device's) and one call
// per axis; the thresholds against the solvers' formulas; reductions into slots; and the
// weighted box copies of the FFT's exchanges. Single rank: the kernels do not communicate.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

// cmocka 1.1 has no extern "C" guards of its own: include it (and what it needs) as C first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}
// cmocka defines a fail() macro, which would rewrite plm::fail in PLM_FAIL; we never use it.
#undef fail

#include "core/alloc.hpp"
#include "kernels/element.hpp"
#include "kernels/kernels.hpp"
#include "stencil_cases.hpp"

using namespace plm;
using namespace plm::kernels;
using c64 = std::complex<float>;
using c128 = std::complex<double>;
using ld = long double;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

template <typename T> constexpr DType dtype_of()
{
    if constexpr (std::is_same_v<T, float>) return DType::f32;
    else if constexpr (std::is_same_v<T, double>) return DType::f64;
    else if constexpr (std::is_same_v<T, c64>) return DType::c64;
    else return DType::c128;
}

template <typename T> T make(double re, double im = 0)
{
    if constexpr (is_complex_v<T>) return T(static_cast<real_t<T>>(re), static_cast<real_t<T>>(im));
    else return static_cast<T>(re);
}

template <typename T> ld abs_ld(T v)
{
    if constexpr (is_complex_v<T>) return std::hypot(ld(v.real()), ld(v.imag()));
    else return std::fabs(ld(v));
}

// re^2 + im^2, as NumPy's 2-norm (no hypot).
template <typename T> ld sq_ld(T v)
{
    const ld re = std::real(v), im = std::imag(v);
    return re * re + im * im;
}

// Neumaier's compensated sum: exact enough to count the kernels' ulps.
struct ExactSum {
    ld s = 0, c = 0;
    void add(ld v)
    {
        const ld t = s + v;
        c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    ld value() const { return std::isfinite(s) ? s + c : s; }
};

// The reference of norm_partial on one contiguous run, NaN rules included.
template <typename T> double ref_norm(NormKind kind, double p, const T *x, int64_t n)
{
    ExactSum s;
    ld lo = INFINITY, hi = 0;
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
        const ld a = abs_ld(x[i]);
        nan = nan || std::isnan(a);
        if (kind == NormKind::pow_sum)
            s.add(p == 2 ? sq_ld(x[i]) : p == 1 ? a : std::pow(a, ld(p)));
        if (kind == NormKind::count_nonzero) s.add(x[i] != T{} ? 1 : 0);
        lo = std::min(lo, a);
        hi = std::max(hi, a);
    }
    switch (kind) {
    case NormKind::pow_sum:
    case NormKind::count_nonzero: return static_cast<double>(s.value());
    case NormKind::max_abs: return nan ? kNaN : static_cast<double>(hi);
    case NormKind::min_abs: return nan ? kNaN : static_cast<double>(lo);
    }
    return 0;
}

double norm1(DType dt, NormKind kind, double p, int64_t n, const void *x)
{
    double out = -1;
    norm_partial(Exec{}, dt, kind, p, 1, n, 1, x, &out);
    return out;
}

bool close(double got, double want, double rtol)
{
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    // Denormal results carry few significant bits: allow a few of the smallest steps.
    return std::fabs(got - want) <= rtol * std::fabs(want) || std::fabs(got - want) <= 8 * DBL_TRUE_MIN;
}

struct Kind {
    NormKind kind;
    double p;
};
const Kind kKinds[] = {{NormKind::pow_sum, 1}, {NormKind::pow_sum, 2}, {NormKind::pow_sum, 3},
                       {NormKind::max_abs, 0}, {NormKind::min_abs, 0}, {NormKind::count_nonzero, 0}};

template <typename T> bool check_all_kinds(const std::vector<T> &x, double rtol, const char *what)
{
    bool ok = true;
    for (const Kind &k : kKinds) {
        const double got = norm1(dtype_of<T>(), k.kind, k.p, static_cast<int64_t>(x.size()), x.data());
        const double want = ref_norm(k.kind, k.p, x.data(), static_cast<int64_t>(x.size()));
        if (!close(got, want, rtol)) {
            std::fprintf(stderr, "%s %s n=%zu kind=%d p=%g: got %.17g want %.17g\n", what, dtype_name(dtype_of<T>()),
                         x.size(), static_cast<int>(k.kind), k.p, got, want);
            ok = false;
        }
    }
    return ok;
}

template <typename T> std::vector<T> random_vec(int64_t n, double lo, double hi, uint64_t seed)
{
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<T> v(static_cast<size_t>(n));
    for (T &e : v) {
        const double re = u(g);
        e = make<T>(re, is_complex_v<T> ? u(g) : 0);
    }
    return v;
}

// ---------------------------------------------------------------------------------------
// Norms
// ---------------------------------------------------------------------------------------

template <typename T> void random_lengths()
{
    // Around the lane and block sizes (32, 2048) and a few blocks.
    for (int64_t n : {0, 1, 2, 7, 31, 33, 2047, 2048, 2049, 6145, 100003}) {
        std::vector<T> x = random_vec<T>(n, -2, 2, static_cast<uint64_t>(n) + 1);
        if (n > 3) x[1] = T{};  // count_nonzero sees a zero
        assert_true(check_all_kinds(x, 1e-12, "random"));
    }
}

void test_norms_random(void **)
{
    random_lengths<float>();
    random_lengths<double>();
    random_lengths<c64>();
    random_lengths<c128>();
}

// A NaN anywhere (first, inside the lanes, in the tail, in a later block) makes every kind but
// count_nonzero NaN; count_nonzero counts it.
template <typename T> void nan_everywhere()
{
    for (int64_t n : {1, 5, 64, 3000}) {
        for (int64_t at : {int64_t(0), n / 2, n - 1}) {
            std::vector<T> x = random_vec<T>(n, 0.5, 1, 7);
            x[static_cast<size_t>(at)] = make<T>(kNaN, 0);
            assert_true(check_all_kinds(x, 1e-12, "nan"));
            if (is_complex_v<T>) {  // NaN in the imaginary part only
                x[static_cast<size_t>(at)] = make<T>(1, kNaN);
                assert_true(check_all_kinds(x, 1e-12, "nan-imag"));
            }
        }
        std::vector<T> all(static_cast<size_t>(n), make<T>(kNaN, kNaN));
        assert_true(check_all_kinds(all, 0, "all-nan"));
        assert_true(norm1(dtype_of<T>(), NormKind::count_nonzero, 0, n, all.data()) == double(n));
    }
}

void test_norms_nan(void **)
{
    nan_everywhere<float>();
    nan_everywhere<double>();
    nan_everywhere<c64>();
    nan_everywhere<c128>();
}

template <typename T> void special_values()
{
    using R = real_t<T>;
    const double big = std::is_same_v<R, float> ? 1e20 : 1e300;
    const double tiny = std::is_same_v<R, float> ? 1e-30 : 1e-300;
    const double denorm = std::numeric_limits<R>::denorm_min();
    const std::vector<std::vector<double>> cases = {
        {kInf, 1, -2},  {-kInf, 3},       {kInf, -kInf},  {big, -big, big}, {tiny, -tiny, tiny},
        {denorm, 0, denorm}, {big, tiny, denorm, 0}, {0, 0, 0}, {-0.0, 0.0},
    };
    for (const auto &c : cases) {
        std::vector<T> x;
        for (double v : c) x.push_back(make<T>(v, 0));
        // A real f64 sum of squares of 1e300 overflows the partial (as in NumPy), so the
        // reference does too: compare huge values only where the partial can hold them.
        assert_true(check_all_kinds(x, 1e-12, "special"));
        if (is_complex_v<T>) {
            std::vector<T> y;
            for (double v : c) y.push_back(make<T>(v, v));
            assert_true(check_all_kinds(y, 1e-12, "special-complex"));
        }
    }
}

void test_norms_special_values(void **)
{
    special_values<float>();
    special_values<double>();
    special_values<c64>();
    special_values<c128>();
}

// float32 data near 1e20: squares are summed in double, so nothing overflows.
void test_norm_f32_no_overflow(void **)
{
    std::vector<float> x(1000, 1e20f);
    x[3] = -3e20f;
    const double s = norm1(DType::f32, NormKind::pow_sum, 2, 1000, x.data());
    assert_true(std::isfinite(s) && close(s, ref_norm(NormKind::pow_sum, 2, x.data(), 1000), 1e-12));
    std::vector<c64> z(100, c64(3e37f, 4e37f));
    assert_true(close(norm1(DType::c64, NormKind::pow_sum, 2, 100, z.data()), 100 * ref_norm(NormKind::pow_sum, 2, z.data(), 1), 1e-12));
    assert_true(close(norm1(DType::c64, NormKind::max_abs, 0, 100, z.data()), ref_norm(NormKind::max_abs, 0, z.data(), 1), 1e-12));
    // float's largest values: the 1-norm of a few does not overflow either.
    std::vector<float> m(4, FLT_MAX);
    assert_true(close(norm1(DType::f32, NormKind::pow_sum, 1, 4, m.data()), 4.0 * FLT_MAX, 1e-15));
}

// c128 magnitudes beyond the range where re^2 + im^2 fits a double: hypot's answer.
void test_norm_c128_extreme(void **)
{
    for (double v : {1e200, 1e-200, 1e-310}) {
        std::vector<c128> z = {c128(v, v), c128(2 * v, -v), c128(-v, 3 * v)};
        assert_true(check_all_kinds(z, 1e-12, "c128-extreme"));
    }
    std::vector<c128> z = {c128(1e300, 1), c128(1, 1), c128(1e-300, 0)};
    assert_true(check_all_kinds(z, 1e-12, "c128-mixed"));
    // hypot(inf, nan) = inf, as NumPy's abs.
    std::vector<c128> w = {c128(kInf, kNaN), c128(1, 1)};
    assert_true(norm1(DType::c128, NormKind::max_abs, 0, 2, w.data()) == kInf);
}

// The strided path ([outer, n, inner] with inner > 1) follows the same NaN rules.
template <typename T> void strided()
{
    const int64_t outer = 2, n = 5, inner = 3;
    std::vector<T> x = random_vec<T>(outer * n * inner, -1, 1, 11);
    x[static_cast<size_t>((1 * n + 2) * inner + 1)] = make<T>(kNaN, 0);  // column (o=1, i=1)
    for (const Kind &k : kKinds) {
        std::vector<double> out(static_cast<size_t>(outer * inner));
        norm_partial(Exec{}, dtype_of<T>(), k.kind, k.p, outer, n, inner, x.data(), out.data());
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                std::vector<T> col;
                for (int64_t j = 0; j < n; ++j) col.push_back(x[static_cast<size_t>((o * n + j) * inner + i)]);
                const double want = ref_norm(k.kind, k.p, col.data(), n), got = out[static_cast<size_t>(o * inner + i)];
                if (!close(got, want, 1e-12))
                    std::fprintf(stderr, "strided %s kind=%d p=%g: got %.17g want %.17g\n", dtype_name(dtype_of<T>()),
                                 static_cast<int>(k.kind), k.p, got, want);
                assert_true(close(got, want, 1e-12));
            }
    }
}

void test_norms_strided(void **)
{
    strided<float>();
    strided<double>();
    strided<c64>();
    strided<c128>();
}

// ---------------------------------------------------------------------------------------
// Accuracy of long sums
// ---------------------------------------------------------------------------------------

double ulps(double got, ld exact)
{
    const double e = static_cast<double>(exact);
    return static_cast<double>(std::fabs(ld(got) - exact)) / (std::nextafter(e, kInf) - e);
}

// N = 1e7 float64: dot and the 1- and 2-norm sums within a few ulps of the exact value
// (plain sequential summation is ~100 ulps off here).
void test_sums_ulps_1e7(void **)
{
    const int64_t n = 10000000;
    std::vector<double> x = random_vec<double>(n, -1, 1, 21), y = random_vec<double>(n, 0, 1, 22);
    for (double &v : x) v = std::fabs(v);  // condition number 1: ulps measure the summation
    ExactSum d, a, q;
    for (int64_t i = 0; i < n; ++i) {
        d.add(ld(x[i]) * ld(y[i]));
        a.add(ld(x[i]));
        q.add(ld(x[i]) * ld(x[i]));
    }
    double dot_got = 0;
    dot(Exec{}, DType::f64, n, x.data(), y.data(), false, &dot_got);
    const double u_dot = ulps(dot_got, d.value());
    const double u_1 = ulps(norm1(DType::f64, NormKind::pow_sum, 1, n, x.data()), a.value());
    const double u_2 = ulps(norm1(DType::f64, NormKind::pow_sum, 2, n, x.data()), q.value());
    std::printf("N=1e7 f64 ulps: dot %.1f, sum|x| %.1f, sum x^2 %.1f\n", u_dot, u_1, u_2);
    assert_true(u_dot <= 4 && u_1 <= 4 && u_2 <= 4);
}

// float32 sums are accumulated in double: at N = 1e6 they agree with a float64 reference to
// double precision, and dot's float result is the correctly rounded exact value (or next to it).
void test_f32_sums_1e6(void **)
{
    const int64_t n = 1000000;
    std::vector<float> x = random_vec<float>(n, -1, 1, 31), y = random_vec<float>(n, 0, 1, 32);
    ExactSum d, a, q;
    for (int64_t i = 0; i < n; ++i) {
        d.add(ld(x[i]) * ld(y[i]));
        a.add(std::fabs(ld(x[i])));
        q.add(ld(x[i]) * ld(x[i]));
    }
    float got = 0;
    dot(Exec{}, DType::f32, n, x.data(), y.data(), false, &got);
    const float want = static_cast<float>(d.value());
    assert_true(got == want || got == std::nextafter(want, 1e30f) || got == std::nextafter(want, -1e30f));
    assert_true(close(norm1(DType::f32, NormKind::pow_sum, 1, n, x.data()), double(a.value()), 1e-14));
    assert_true(close(norm1(DType::f32, NormKind::pow_sum, 2, n, x.data()), double(q.value()), 1e-14));
}

// ---------------------------------------------------------------------------------------
// dot
// ---------------------------------------------------------------------------------------

template <typename T> void dot_case(int64_t n, bool conjugate)
{
    std::vector<T> x = random_vec<T>(n, -1, 1, 41), y = random_vec<T>(n, -1, 1, 42);
    ExactSum re, im;
    ld scale = 0;
    for (int64_t i = 0; i < n; ++i) {
        const std::complex<ld> a(ld(std::real(x[i])), ld(std::imag(x[i]))), b(ld(std::real(y[i])), ld(std::imag(y[i])));
        const std::complex<ld> p = (conjugate ? std::conj(a) : a) * b;
        re.add(p.real());
        im.add(p.imag());
        scale += std::abs(a) * std::abs(b);
    }
    T got{};
    dot(Exec{}, dtype_of<T>(), n, x.data(), y.data(), conjugate, &got);
    // Error relative to sum |x||y| (the condition of a signed dot), plus the final rounding.
    const ld eps = std::numeric_limits<real_t<T>>::epsilon();
    assert_true(std::fabs(ld(std::real(got)) - re.value()) <= 8 * eps * (scale + std::fabs(re.value())));
    assert_true(std::fabs(ld(std::imag(got)) - im.value()) <= 8 * eps * (scale + std::fabs(im.value())));
}

template <typename T> void dot_cases()
{
    for (int64_t n : {0, 1, 3, 17, 2049, 50001}) {
        dot_case<T>(n, false);
        dot_case<T>(n, true);
    }
    // NaN and Inf propagate; inf * 0 is NaN, as in NumPy.
    std::vector<T> x = {make<T>(1, 1), make<T>(kNaN, 0), make<T>(2, 0)}, y(3, make<T>(1, 0));
    T got{};
    dot(Exec{}, dtype_of<T>(), 3, x.data(), y.data(), false, &got);
    assert_true(std::isnan(std::real(got)));
    x[1] = make<T>(kInf, 0);
    y[1] = make<T>(0, 0);
    dot(Exec{}, dtype_of<T>(), 3, x.data(), y.data(), false, &got);
    assert_true(std::isnan(std::real(got)));
}

void test_dot(void **)
{
    dot_cases<float>();
    dot_cases<double>();
    dot_cases<c64>();
    dot_cases<c128>();
    // float32 products of 1e20 (1e40) do not overflow: they are summed in double.
    std::vector<float> x = {1e20f, -1e20f}, y = {1e20f, 1e20f};
    float got = -1;
    dot(Exec{}, DType::f32, 2, x.data(), y.data(), false, &got);
    assert_true(got == 0.0f);
}

// ---------------------------------------------------------------------------------------
// axpby and scale: BLAS conventions, whatever the BLAS
// ---------------------------------------------------------------------------------------

template <typename T> bool same(T a, T b)
{
    auto eq = [](double u, double v) { return u == v || (std::isnan(u) && std::isnan(v)); };
    return eq(std::real(a), std::real(b)) && eq(std::imag(a), std::imag(b));
}


// Products are the plain formula's on every CPU, unfused (this file is built without FMA
// contraction, as the kernels are): the same bits, also where the loader picks AVX-512.
template <typename T> void blas_conventions()
{
    const DType dt = dtype_of<T>();
    const int64_t n = 37;
    const std::vector<T> junk = {make<T>(kNaN, kNaN), make<T>(kInf, -kInf), make<T>(-kInf, kNaN)};
    std::vector<T> x = random_vec<T>(n, -1, 1, 51), y(static_cast<size_t>(n));
    auto fill_junk = [&](std::vector<T> &v) {
        for (size_t i = 0; i < v.size(); ++i) v[i] = junk[i % 3];
    };
    const T two = make<T>(2, 1), zero{}, half = make<T>(0.5, -0.25);

    // beta = 0: y is never read, y = alpha x exactly.
    fill_junk(y);
    axpby(Exec{}, dt, n, &two, x.data(), &zero, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], T(two * x[i])));

    // alpha = 0: x is never read, y = beta y.
    std::vector<T> xj(static_cast<size_t>(n)), y0 = random_vec<T>(n, -1, 1, 52);
    fill_junk(xj);
    y = y0;
    axpby(Exec{}, dt, n, &zero, xj.data(), &half, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], T(half * y0[i])));

    // Both zero: zeros, neither read.
    fill_junk(y);
    axpby(Exec{}, dt, n, &zero, xj.data(), &zero, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], zero));

    // General case: alpha x + beta y.
    y = y0;
    axpby(Exec{}, dt, n, &two, x.data(), &half, y.data());
    for (int64_t i = 0; i < n; ++i) {
        assert_true(same(y[i], T(two * x[i] + half * y0[i])));
    }

    // scale by 0 writes zeros over NaN and Inf; by 1 changes nothing.
    fill_junk(y);
    scale(Exec{}, dt, n, &zero, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], zero));
    y = x;
    const T one = make<T>(1, 0);
    scale(Exec{}, dt, n, &one, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], x[i]));
    scale(Exec{}, dt, n, &two, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], T(two * x[i])));
}

void test_axpby_scale_conventions(void **)
{
    blas_conventions<float>();
    blas_conventions<double>();
    blas_conventions<c64>();
    blas_conventions<c128>();
}

// Complex products are spelled out (no C99 inf/nan recovery, as NumPy): check them against the
// formula; conj is exact.
template <typename T> void complex_mul_conj()
{
    const int64_t n = 41;
    std::vector<T> x = random_vec<T>(n, -2, 2, 61), y = random_vec<T>(n, -2, 2, 62), z(static_cast<size_t>(n));
    binary(Exec{}, dtype_of<T>(), Binary::mul, n, x.data(), y.data(), z.data());
    for (int64_t i = 0; i < n; ++i) {
        const T a = x[i], b = y[i];
        const T want(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
        assert_true(same(z[i], want));
    }
    conj(Exec{}, dtype_of<T>(), n, x.data(), z.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(z[i], std::conj(x[i])));
}

void test_complex_mul_conj(void **)
{
    complex_mul_conj<c64>();
    complex_mul_conj<c128>();
}

// ---------------------------------------------------------------------------------------
// Fused stencils
// ---------------------------------------------------------------------------------------

using stencil_cases::Rng;
namespace el = plm::kernels::element;

// One block of a random model: the block, its ghosts and y, as reals (2 per complex element).
template <typename T> struct Block {
    using R = real_t<T>;
    static constexpr int W = is_complex_v<T> ? 2 : 1;
    const StencilPlan &p;
    int64_t rl;  // reals per row
    std::vector<double> xg;  // the global model, as the R values it holds
    std::vector<R> x, gb, ga, y0;

    Block(const StencilPlan &plan, Rng &g) : p(plan), rl(stencil_cases::row_len(plan) * W)
    {
        std::uniform_real_distribution<double> u(-1, 1);
        xg.resize(static_cast<size_t>(p.dims[0] * rl));
        for (double &v : xg) v = static_cast<double>(static_cast<R>(u(g)));
        auto rows = [&](int64_t g0, int64_t g1) {
            return std::vector<R>(xg.begin() + g0 * rl, xg.begin() + g1 * rl);
        };
        x = rows(p.row0, p.row0 + p.nrows);
        gb = rows(p.row0 - p.before, p.row0);
        ga = rows(p.row0 + p.nrows, p.row0 + p.nrows + p.after);
        y0.resize(x.size());
        for (R &v : y0) v = static_cast<R>(u(g));
    }
    const void *before() const { return gb.empty() ? nullptr : gb.data(); }
    const void *after() const { return ga.empty() ? nullptr : ga.data(); }

    std::vector<R> fused(int64_t r0, int64_t r1, bool accumulate) const
    {
        std::vector<R> y = y0;
        kernels::stencil(Exec{}, dtype_of<T>(), p, x.data(), before(), after(), r0, r1, accumulate, y.data());
        return y;
    }

    // element.hpp's per-element path, which the device kernel runs.
    std::vector<R> pointwise(int64_t r0, int64_t r1, bool accumulate) const
    {
        using V = std::conditional_t<is_complex_v<T>, el::Cx<R>, R>;
        std::vector<R> y = y0;
        const el::StencilGeom geom = el::stencil_geom(p);
        auto v = [](const std::vector<R> &a) { return reinterpret_cast<const V *>(a.data()); };
        V *yv = reinterpret_cast<V *>(y.data());
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t i = 0; i < geom.row_len; ++i) {
                V &out = yv[r * geom.row_len + i];
                out = el::stencil_point<int64_t>(p, geom, v(x), v(gb), v(ga), r, i, out, accumulate);
            }
        return y;
    }

    // Rows [r0, r1) against the reference in double; other rows untouched.
    bool check(const std::vector<R> &y, int64_t r0, int64_t r1, bool accumulate) const
    {
        const double eps = std::numeric_limits<R>::epsilon();
        for (int64_t r = 0; r < p.nrows; ++r)
            for (int64_t i = 0; i < rl; ++i) {
                const size_t k = static_cast<size_t>(r * rl + i);
                if (r < r0 || r >= r1) {
                    if (std::memcmp(&y[k], &y0[k], sizeof(R)) != 0) return false;
                    continue;
                }
                double mag = 0;
                bool has = false;
                double want = stencil_cases::reference(p, xg, W, static_cast<int>(i % W), r, i / W, &mag, &has);
                if (accumulate) {
                    want += y0[k];
                    mag += std::fabs(double(y0[k]));
                }
                if (std::fabs(double(y[k]) - want) > 16 * eps * mag || (!has && !accumulate && y[k] != R(0))) {
                    std::fprintf(stderr, "stencil %s row %lld real %lld: got %.17g want %.17g\n",
                                 dtype_name(dtype_of<T>()), static_cast<long long>(r), static_cast<long long>(i),
                                 double(y[k]), want);
                    return false;
                }
            }
        return true;
    }
};

template <typename R> bool same_bits(const std::vector<R> &a, const std::vector<R> &b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(R)) == 0);
}

template <typename T> void stencil_random(int ndim, int cases, uint64_t seed)
{
    Rng g(seed);
    for (int c = 0; c < cases; ++c) {
        const StencilPlan p = stencil_cases::random_plan(g, ndim);
        Block<T> b(p, g);
        int64_t r0 = stencil_cases::uniform(g, 0, static_cast<int>(p.nrows));
        int64_t r1 = stencil_cases::uniform(g, static_cast<int>(r0), static_cast<int>(p.nrows));
        if (c % 3 == 0) {  // the whole block, often
            r0 = 0;
            r1 = p.nrows;
        }
        const bool acc = c % 2 == 1;
        const auto y = b.fused(r0, r1, acc);
        if (!b.check(y, r0, r1, acc) || !same_bits(y, b.pointwise(r0, r1, acc))) {
            std::fprintf(stderr, "stencil case %d (ndim %d, seed %llu) failed\n", c, ndim, static_cast<unsigned long long>(seed));
            assert_true(false);
        }
    }
}

void test_stencil_random(void **)
{
    for (int ndim = 1; ndim <= PLM_MAX_NDIM; ++ndim) {
        const int cases = ndim <= 3 ? 150 : 50;
        stencil_random<float>(ndim, cases, 100 + ndim);
        stencil_random<double>(ndim, cases, 200 + ndim);
        stencil_random<c64>(ndim, cases, 300 + ndim);
        stencil_random<c128>(ndim, cases, 400 + ndim);
    }
}

// Large blocks: the runs are long and chunked, axis 0 alone takes its one-run path.
template <typename T> void stencil_large(uint64_t seed)
{
    Rng g(seed);
    const int64_t shapes[][3] = {{3000, 1, 1}, {61, 1003, 1}, {40, 30, 37}};
    for (const auto &sh : shapes) {
        for (int c = 0; c < 4; ++c) {
            StencilPlan p;
            p.ndim = sh[2] > 1 ? 3 : sh[1] > 1 ? 2 : 1;
            for (int a = 0; a < p.ndim; ++a) p.dims[a] = sh[a];
            p.naxes = c == 0 ? 1 : p.ndim;
            for (int s = 0; s < p.naxes; ++s) {
                p.axes[s].axis = (s + c) % p.ndim;
                p.axes[s].div = s == 1 ? 1.0 : 0.5 + s;  // (s = 1: no division)
                p.axes[s].weight = s == 2 ? -1.5 : 1.0;
                p.axes[s].band = stencil_cases::random_band(g, p.dims[p.axes[s].axis]);
            }
            p.row0 = p.dims[0] / 3;
            p.nrows = p.dims[0] / 2;
            int reach = 0;
            for (int s = 0; s < p.naxes; ++s)
                if (p.axes[s].axis == 0) reach = stencil_cases::reach_of(p.axes[s].band);
            p.before = std::min<int64_t>(p.row0, reach);
            p.after = std::min<int64_t>(p.dims[0] - p.row0 - p.nrows, reach);
            Block<T> b(p, g);
            for (bool acc : {false, true}) {
                const auto y = b.fused(0, p.nrows, acc);
                assert_true(b.check(y, 0, p.nrows, acc));
                assert_true(same_bits(y, b.pointwise(0, p.nrows, acc)));
            }
        }
    }
}

void test_stencil_large(void **)
{
    stencil_large<float>(1);
    stencil_large<double>(2);
    stencil_large<c64>(3);
    stencil_large<c128>(4);
}

// The interior rows read no ghost (null ghosts there); interior, then the boundary rows after,
// gives the whole block's result bit for bit, and so do arbitrary splits into sub-ranges.
template <typename T> void stencil_subranges(uint64_t seed)
{
    Rng g(seed);
    for (int c = 0; c < 200; ++c) {
        const StencilPlan p = stencil_cases::random_plan(g, 1 + c % 4);
        Block<T> b(p, g);
        const bool acc = c % 2 == 0;
        const auto whole = b.fused(0, p.nrows, acc);
        int64_t i0 = -1, i1 = -1;
        interior_rows(p, &i0, &i1);
        assert_true(0 <= i0 && i0 <= i1 && i1 <= p.nrows);
        auto y = b.y0;
        kernels::stencil(Exec{}, dtype_of<T>(), p, b.x.data(), nullptr, nullptr, i0, i1, acc, y.data());
        kernels::stencil(Exec{}, dtype_of<T>(), p, b.x.data(), b.before(), b.after(), 0, i0, acc, y.data());
        kernels::stencil(Exec{}, dtype_of<T>(), p, b.x.data(), b.before(), b.after(), i1, p.nrows, acc, y.data());
        assert_true(same_bits(y, whole));
        y = b.y0;
        for (int64_t r = 0; r < p.nrows;) {
            const int64_t e = std::min<int64_t>(p.nrows, r + stencil_cases::uniform(g, 1, 3));
            kernels::stencil(Exec{}, dtype_of<T>(), p, b.x.data(), b.before(), b.after(), r, e, acc, y.data());
            r = e;
        }
        assert_true(same_bits(y, whole));
    }
}

void test_stencil_subranges(void **)
{
    stencil_subranges<float>(11);
    stencil_subranges<double>(12);
    stencil_subranges<c64>(13);
    stencil_subranges<c128>(14);
}

// One stencil() call per axis (a plan of that axis alone), the first replacing y and the others
// accumulating: the fused call gives the same values (a -0 may come out +0 where an axis has
// no terms).
template <typename T> void stencil_per_axis(uint64_t seed)
{
    Rng g(seed);
    for (int c = 0; c < 200; ++c) {
        const StencilPlan p = stencil_cases::random_plan(g, 1 + c % 4);
        if (p.naxes == 0) continue;  // no axis to call
        Block<T> b(p, g);
        const bool acc = c % 2 == 0;
        const auto fused = b.fused(0, p.nrows, acc);
        auto y = b.y0;
        for (int k = 0; k < p.naxes; ++k) {
            StencilPlan one = p;
            one.naxes = 1;
            one.axes[0] = p.axes[k];
            stencil(Exec{}, dtype_of<T>(), one, b.x.data(), b.before(), b.after(), 0, p.nrows, acc || k > 0, y.data());
        }
        for (size_t i = 0; i < y.size(); ++i) assert_true(y[i] == fused[i]);
    }
}

void test_stencil_per_axis(void **)
{
    stencil_per_axis<float>(21);
    stencil_per_axis<double>(22);
    stencil_per_axis<c64>(23);
    stencil_per_axis<c128>(24);
}

bool rejects(const std::function<void()> &f)
{
    try {
        f();
    } catch (const plm::Error &e) {
        return e.status() == PLM_ERR_INTERNAL;
    }
    return false;
}

// Plans that do not hold are PLM_ERR_INTERNAL, before anything is read or written.
void test_stencil_checks(void **)
{
    StencilPlan p;
    p.ndim = 2;
    p.dims[0] = 10;
    p.dims[1] = 6;
    p.row0 = 4;
    p.nrows = 3;
    p.before = 1;
    p.after = 1;
    p.naxes = 1;
    Band &b = p.axes[0].band;
    b.n = 10;
    b.lo = b.hi = 1;
    b.mid = {3, {-1, 0, 1}, {1, -2, 1}};
    std::vector<double> x(18), gb(6), ga(6), y(18);
    auto call = [&](const StencilPlan &q, int64_t r0, int64_t r1, const void *before = nullptr) {
        return [&, q, r0, r1, before] {
            kernels::stencil(Exec{}, DType::f64, q, x.data(), before ? before : gb.data(), ga.data(), r0, r1, false, y.data());
        };
    };
    call(p, 0, 3)();  // holds
    check_plan(p);
    StencilPlan q = p;
    q.after = 0;  // the last row reads a row past the block
    assert_true(rejects(call(q, 0, 3)));
    assert_true(rejects([&] { check_plan(q); }));
    call(q, 0, 2)();  // the rows before it do not
    q = p;
    q.axes[0].band.mid.off[2] = 2;  // the middle rows reach off the axis
    assert_true(rejects([&] { check_plan(q); }));
    q = p;
    q.axes[0].band.n = 9;
    assert_true(rejects(call(q, 0, 3)));
    q = p;
    q.axes[0].band.ends[0] = {1, {-1}, {1}};  // row 0 reads row -1
    assert_true(rejects([&] { check_plan(q); }));
    q = p;
    q.axes[1] = q.axes[0];
    q.naxes = 2;  // axis 0 twice
    assert_true(rejects(call(q, 0, 3)));
    q = p;
    q.before = 5;  // more ghost rows than rows ahead of the block
    assert_true(rejects(call(q, 0, 3)));
    assert_true(rejects(call(p, 2, 4)));  // rows past the block
    assert_true(rejects(call(p, 2, 1)));
    q = p;
    q.axes[0].band.mid.nterms = kMaxTerms + 1;
    assert_true(rejects(call(q, 0, 3)));
    // A ghost that the rows read must be passed; the interior rows need none.
    assert_true(rejects([&] { kernels::stencil(Exec{}, DType::f64, p, x.data(), nullptr, ga.data(), 0, 3, false, y.data()); }));
    int64_t i0 = 0, i1 = 0;
    interior_rows(p, &i0, &i1);
    assert_true(i0 == 1 && i1 == 2);
    kernels::stencil(Exec{}, DType::f64, p, x.data(), nullptr, nullptr, i0, i1, false, y.data());
}

// 1-D and 8-D Laplacian-like plans of PyLops' centered second derivative (edge rows zero)
// against hand-computed values.
void test_stencil_known(void **)
{
    StencilPlan p;
    p.ndim = 1;
    p.dims[0] = 6;
    p.row0 = 2;
    p.nrows = 2;
    p.before = 1;
    p.after = 1;
    p.naxes = 1;
    Band &b = p.axes[0].band;
    b.n = 6;
    b.lo = b.hi = 1;  // rows 0 and 5 have no terms
    b.mid = {3, {-1, 0, 1}, {1, -2, 1}};
    p.axes[0].div = 2;
    const double xg[6] = {0, 1, 4, 9, 16, 25};  // i^2: second difference 2
    double y[2] = {-7, -7};
    kernels::stencil(Exec{}, DType::f64, p, xg + 2, xg + 1, xg + 4, 0, 2, false, y);
    assert_true(y[0] == 1 && y[1] == 1);
    p.row0 = 4;
    p.after = 0;
    kernels::stencil(Exec{}, DType::f64, p, xg + 4, xg + 3, nullptr, 0, 2, true, y);
    assert_true(y[0] == 2 && y[1] == 1);  // row 5 has no terms: kept

    // 8-D, 3 points per axis, every axis: the centre point sees 8 axes of 1 - 2 + 1 on x = sum of squares.
    StencilPlan q;
    q.ndim = 8;
    for (int a = 0; a < 8; ++a) q.dims[a] = 3;
    q.nrows = 3;
    q.naxes = 8;
    for (int a = 0; a < 8; ++a) {
        q.axes[a].axis = 7 - a;
        q.axes[a].band = b;
        q.axes[a].band.n = 3;
    }
    std::vector<double> x(6561), out(6561, -1);
    for (int64_t i = 0; i < 6561; ++i) {
        double v = 0;
        for (int64_t k = i, a = 0; a < 8; ++a, k /= 3) v += double((k % 3) * (k % 3));
        x[static_cast<size_t>(i)] = v;
    }
    kernels::stencil(Exec{}, DType::f64, q, x.data(), nullptr, nullptr, 0, 3, false, out.data());
    assert_true(out[3280] == 16);  // the centre: 8 axes, each (1 - 2 + 1) * ... = 2
    assert_true(out[0] == 0);  // a corner: every row empty
}

// ---------------------------------------------------------------------------------------
// Thresholds: the solvers' formulas (std::complex, libm), bit for bit
// ---------------------------------------------------------------------------------------

template <typename T> T ref_threshold(T v, double t, Threshold kind)
{
    const double a = std::abs(v);
    switch (kind) {
    case Threshold::soft: {
        const double m = std::max(a - t, 0.0);
        return a == 0 ? T(0) : static_cast<T>(v * static_cast<real_t<T>>(m / a));
    }
    case Threshold::hard: return a <= std::sqrt(2 * t) ? T(0) : v;
    case Threshold::hard_at: return a <= t ? T(0) : v;
    case Threshold::half: {
        if (a <= std::cbrt(54.0) / 4 * std::pow(t, 2.0 / 3)) return T(0);
        const double arg = std::clamp(t / 8 * std::pow(a / 3, -1.5), -1.0, 1.0);
        const double phi = 2.0 / 3 * std::acos(arg);
        return static_cast<T>(v * static_cast<real_t<T>>(2.0 / 3 * (1 + std::cos(2 * M_PI / 3 - phi))));
    }
    }
    return v;
}

template <typename T> void thresholds()
{
    std::vector<T> x = random_vec<T>(2000, -3, 3, 71);
    const std::vector<double> specials = {0.0, -0.0, kNaN, kInf, -kInf, 1e-30, 0.3, 0.5, 1.0, std::sqrt(2.0)};
    for (double v : specials) {
        x.push_back(make<T>(v, 0));
        if (is_complex_v<T>) x.push_back(make<T>(0, v));
    }
    for (double t : {0.0, 0.1, 0.5, 1.0, 2.5}) {
        for (Threshold k : {Threshold::soft, Threshold::hard, Threshold::half, Threshold::hard_at}) {
            std::vector<T> y = x;
            threshold(Exec{}, dtype_of<T>(), k, t, static_cast<int64_t>(y.size()), y.data());
            for (size_t i = 0; i < x.size(); ++i) {
                const T want = ref_threshold(x[i], t, k);
                if (std::memcmp(&y[i], &want, sizeof(T)) != 0 && !(std::isnan(std::real(want)) && std::isnan(std::real(y[i])))) {
                    std::fprintf(stderr, "threshold %s kind %d t %g x %.17g: got %.17g want %.17g\n",
                                 dtype_name(dtype_of<T>()), static_cast<int>(k), t, double(std::real(x[i])),
                                 double(std::real(y[i])), double(std::real(want)));
                    assert_true(false);
                }
            }
        }
    }
}

void test_threshold(void **)
{
    thresholds<float>();
    thresholds<double>();
    thresholds<c64>();
    thresholds<c128>();
}

// ---------------------------------------------------------------------------------------
// L2,1 group steps: NumPy's formulas on R arrays (|x|**2 summed in member order, sqrt,
// maximum, 1 - t / m or t / m), bit for bit; NaN groups stay NaN
// ---------------------------------------------------------------------------------------

template <typename T> void group_steps()
{
    using R = real_t<T>;
    const int64_t n = 700;
    std::vector<std::vector<T>> m;
    for (int k = 0; k < 3; ++k) m.push_back(random_vec<T>(n, -2, 2, 90 + k));
    // a zero group, a NaN, an infinity and a tiny group at the end
    for (int k = 0; k < 3; ++k) {
        m[k][n - 1] = T(0);
        m[k][n - 4] = make<T>(1e-30, 0);
    }
    m[1][n - 2] = make<T>(kNaN, 0);
    m[2][n - 3] = make<T>(kInf, 0);
    for (double t : {0.25, 1.0, 3.0}) {
        std::vector<R> n2(n, R(-1));
        for (int k = 0; k < 3; ++k) group_add(Exec{}, dtype_of<T>(), n, m[k].data(), k == 0, n2.data());
        for (int64_t i = 0; i < n; ++i) {
            R want = 0;
            for (int k = 0; k < 3; ++k) {
                const R a = std::abs(m[k][i]);
                want = k == 0 ? R(a * a) : R(want + R(a * a));
            }
            assert_true(std::memcmp(&want, &n2[i], sizeof(R)) == 0 || (std::isnan(want) && std::isnan(n2[i])));
        }
        for (Group kind : {Group::prox, Group::dual}) {
            std::vector<T> y(n);
            group_scale(Exec{}, dtype_of<T>(), kind, t, n, n2.data(), m[0].data(), y.data());
            for (int64_t i = 0; i < n; ++i) {
                const R s = std::sqrt(n2[i]), tt = R(t);
                const R mx = (s > tt || std::isnan(s)) ? s : tt;
                const R f = kind == Group::prox ? R(R(1) - R(tt / mx)) : R(tt / mx);
                const T want = static_cast<T>(m[0][i] * f);
                const bool nan = std::isnan(std::real(want)) || std::isnan(std::imag(want));
                assert_true(std::memcmp(&want, &y[i], sizeof(T)) == 0 ||
                            (nan && (std::isnan(std::real(y[i])) || std::isnan(std::imag(y[i])))));
            }
            assert_true(y[n - 1] == T(0) || kind == Group::dual);  // a zero group
            assert_true(std::isnan(std::real(y[n - 2])) || std::isnan(std::imag(y[n - 2])));  // the NaN's group
        }
        std::vector<R> s = n2;
        group_norm(Exec{}, dtype_of<R>(), n, s.data());
        for (int64_t i = 0; i < n; ++i) {
            const R want = std::sqrt(n2[i]);
            assert_true(std::memcmp(&want, &s[i], sizeof(R)) == 0 || (std::isnan(want) && std::isnan(s[i])));
        }
    }
}

void test_group_steps(void **)
{
    group_steps<float>();
    group_steps<double>();
    group_steps<c64>();
    group_steps<c128>();
}

// ---------------------------------------------------------------------------------------
// Reductions into slots (host): what dot() and norm_partial() return, no allocation
// ---------------------------------------------------------------------------------------

template <typename T> void slots_case()
{
    const DType dt = dtype_of<T>();
    const int64_t n = 5001;
    std::vector<T> x = random_vec<T>(n, -1, 1, 81), y = random_vec<T>(n, -1, 1, 82);
    Reductions r(Exec{}, 2 + 6);
    alloc::reset_violations();
    alloc::set_after_agreement(true);  // what follows runs after an agreement: no allocation
    dot(Exec{}, dt, n, x.data(), y.data(), false, r, 0);
    dot(Exec{}, dt, n, x.data(), y.data(), true, r, 1);
    for (int k = 0; k < 6; ++k) norm_partial(Exec{}, dt, kKinds[k].kind, kKinds[k].p, n, x.data(), r, 2 + k);
    std::vector<double> got(16, -1);
    collect(Exec{}, r, got.data());
    alloc::set_after_agreement(false);
    assert_true(alloc::violations() == 0);
    for (int c = 0; c < 2; ++c) {
        T d{};
        dot(Exec{}, dt, n, x.data(), y.data(), c == 1, &d);
        assert_true(got[2 * c] == double(std::real(d)) && got[2 * c + 1] == double(std::imag(d)));
    }
    for (int k = 0; k < 6; ++k) {
        assert_true(got[4 + 2 * k] == norm1(dt, kKinds[k].kind, kKinds[k].p, n, x.data()));
        assert_true(got[5 + 2 * k] == 0);
    }
    // A slot is overwritten by its next reduction; slots out of range are errors.
    dot(Exec{}, dt, 0, x.data(), y.data(), false, r, 0);
    collect(Exec{}, r, got.data());
    assert_true(got[0] == 0 && got[1] == 0);
    assert_true(rejects([&] { dot(Exec{}, dt, n, x.data(), y.data(), false, r, 8); }));
    assert_true(rejects([&] { norm_partial(Exec{}, dt, NormKind::max_abs, 0, n, x.data(), r, -1); }));
}

void test_reductions_slots(void **)
{
    slots_case<float>();
    slots_case<double>();
    slots_case<c64>();
    slots_case<c128>();
}

// copy_box_scaled and scale_box against a naive loop: every weights axis of a 3-D box inside
// larger arrays, complex and real, bins clipped at either end; the copy's weights and
// scale_box's on the copied block agree bit for bit (each part times the real factor).
template <typename T> void box_scaled_case()
{
    const int64_t ss[3] = {4, 5, 7}, s0[3] = {1, 0, 2}, ds[3] = {3, 6, 5}, d0[3] = {0, 1, 0}, box[3] = {3, 4, 5};
    std::vector<T> src(4 * 5 * 7);
    for (size_t i = 0; i < src.size(); ++i) {
        if constexpr (std::is_same_v<T, c64> || std::is_same_v<T, c128>) src[i] = T(0.5 + i, -0.25 * i);
        else src[i] = T(0.5 + i);
    }
    const DType dt = std::is_same_v<T, float> ? DType::f32 : std::is_same_v<T, double> ? DType::f64
                     : std::is_same_v<T, c64> ? DType::c64 : DType::c128;
    for (int axis = -1; axis < 3; ++axis)
        for (int64_t first : {0, 2}) {
            BoxScale w;
            w.axis = axis;
            w.first = first;
            w.b0 = 1;
            w.b1 = 4;
            w.in = 1.4142135623730951;
            w.out = 0.125;
            std::vector<T> dst(3 * 6 * 5, T(-7)), block(box[0] * box[1] * box[2]);
            copy_box_scaled(Exec{}, dt, 3, src.data(), ss, s0, dst.data(), ds, d0, box, w);
            const int64_t zero[3] = {0, 0, 0};
            copy_box(Exec{}, dt, 3, src.data(), ss, s0, block.data(), box, zero, box);
            scale_box(Exec{}, dt, 3, box, w, block.data());
            for (int64_t i = 0; i < 3 * 6 * 5; ++i) {
                const int64_t a = i / 30, b = i / 5 % 6, c = i % 5;
                const int64_t k[3] = {a - d0[0], b - d0[1], c - d0[2]};
                const bool inside = k[0] >= 0 && k[0] < box[0] && k[1] >= 0 && k[1] < box[1] && k[2] >= 0 && k[2] < box[2];
                if (!inside) {
                    assert_true(dst[i] == T(-7));
                    continue;
                }
                const double f = axis < 0 ? 1 : first + k[axis] >= 1 && first + k[axis] < 4 ? w.in : w.out;
                using R = decltype(std::real(T{}));
                const T v = src[((k[0] + s0[0]) * 5 + (k[1] + s0[1])) * 7 + (k[2] + s0[2])];
                T want;
                if constexpr (std::is_same_v<T, c64> || std::is_same_v<T, c128>)
                    want = T(v.real() * static_cast<R>(f), v.imag() * static_cast<R>(f));
                else
                    want = v * static_cast<R>(f);
                assert_true(dst[i] == want);
                assert_true(block[(k[0] * box[1] + k[1]) * box[2] + k[2]] == want);
            }
        }
}

// real_parts / from_real: the real parts out, (re, 0) back in, float and double.
template <typename R> void real_parts_case()
{
    const DType dt = sizeof(R) == 4 ? DType::c64 : DType::c128;
    const int64_t n = 37;
    std::vector<std::complex<R>> z(n), back(n, std::complex<R>(9, 9));
    for (int64_t i = 0; i < n; ++i) z[i] = std::complex<R>(R(0.5) * R(i) - 3, R(i) + 1);
    std::vector<R> re(n, R(-1));
    real_parts(Exec{}, dt, n, z.data(), re.data());
    from_real(Exec{}, dt, n, re.data(), back.data());
    for (int64_t i = 0; i < n; ++i) {
        assert_true(re[i] == z[i].real());
        assert_true(back[i] == std::complex<R>(z[i].real(), 0));
    }
}

void test_box_scaled(void **)
{
    real_parts_case<float>();
    real_parts_case<double>();
    box_scaled_case<float>();
    box_scaled_case<double>();
    box_scaled_case<c64>();
    box_scaled_case<c128>();
}

}  // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norms_random),
        cmocka_unit_test(test_norms_nan),
        cmocka_unit_test(test_norms_special_values),
        cmocka_unit_test(test_norm_f32_no_overflow),
        cmocka_unit_test(test_norm_c128_extreme),
        cmocka_unit_test(test_norms_strided),
        cmocka_unit_test(test_sums_ulps_1e7),
        cmocka_unit_test(test_f32_sums_1e6),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_axpby_scale_conventions),
        cmocka_unit_test(test_complex_mul_conj),
        cmocka_unit_test(test_stencil_random),
        cmocka_unit_test(test_stencil_large),
        cmocka_unit_test(test_stencil_subranges),
        cmocka_unit_test(test_stencil_per_axis),
        cmocka_unit_test(test_stencil_checks),
        cmocka_unit_test(test_stencil_known),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_group_steps),
        cmocka_unit_test(test_reductions_slots),
        cmocka_unit_test(test_box_scaled),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
