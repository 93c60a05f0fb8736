// White-box tests of the host kernels' numerics (src/kernels): every norm kind and dot for
// the four floating dtypes against references computed here in long double (compensated
// where the reference itself must be exact), on NaN, +-Inf, huge, tiny and denormal values;
// the BLAS conventions of axpby and scale; and the accuracy of long sums (ulps at N = 1e7,
// float32 at N = 1e6). Single rank: the kernels do not communicate.
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
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

#include "kernels/kernels.hpp"

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

// Complex products may differ by an ulp between CPUs: GCC fuses the AVX-512 clone's complex
// multiply into fmaddsub even without FMA contraction.
template <typename T> bool near(T got, T want)
{
    return std::abs(got - want) <= 4 * std::numeric_limits<real_t<T>>::epsilon() * (std::abs(want) + 1);
}

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
    for (int64_t i = 0; i < n; ++i) assert_true(near(y[i], T(two * x[i])));

    // alpha = 0: x is never read, y = beta y.
    std::vector<T> xj(static_cast<size_t>(n)), y0 = random_vec<T>(n, -1, 1, 52);
    fill_junk(xj);
    y = y0;
    axpby(Exec{}, dt, n, &zero, xj.data(), &half, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(near(y[i], T(half * y0[i])));

    // Both zero: zeros, neither read.
    fill_junk(y);
    axpby(Exec{}, dt, n, &zero, xj.data(), &zero, y.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(y[i], zero));

    // General case: alpha x + beta y.
    y = y0;
    axpby(Exec{}, dt, n, &two, x.data(), &half, y.data());
    for (int64_t i = 0; i < n; ++i) {
        assert_true(near(y[i], T(two * x[i] + half * y0[i])));
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
    for (int64_t i = 0; i < n; ++i) assert_true(near(y[i], T(two * x[i])));
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
        assert_true(near(z[i], want));
    }
    conj(Exec{}, dtype_of<T>(), n, x.data(), z.data());
    for (int64_t i = 0; i < n; ++i) assert_true(same(z[i], std::conj(x[i])));
}

void test_complex_mul_conj(void **)
{
    complex_mul_conj<c64>();
    complex_mul_conj<c128>();
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
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
