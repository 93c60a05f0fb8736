// Single-rank host kernels (src/kernels) next to vectorised floor loops measured in the same
// run: dot, every norm kind and axpby for the four floating dtypes. Prints a table; asserts
// nothing. See README.md.
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"

using namespace plm;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

namespace {

// The floors: simple loops with enough independent lanes to stream, compiled for AVX2.
// They read the same bytes as the kernel they stand next to (complex = 2n reals).
#define FLOOR __attribute__((target("avx2"), noinline))

template <typename R> FLOOR R floor_sum(const R *x, int64_t n)
{
    R a[32] = {};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 32; ++j) a[j] += x[i + j];
    for (; i < n; ++i) a[0] += x[i];
    R s = 0;
    for (R v : a) s += v;
    return s;
}

template <typename R> FLOOR R floor_dot(const R *x, const R *y, int64_t n)
{
    R a[32] = {};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 32; ++j) a[j] += x[i + j] * y[i + j];
    for (; i < n; ++i) a[0] += x[i] * y[i];
    R s = 0;
    for (R v : a) s += v;
    return s;
}

template <typename R> FLOOR R floor_max(const R *x, int64_t n)
{
    R a[32] = {};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 32; ++j) a[j] = a[j] < x[i + j] ? x[i + j] : a[j];
    for (; i < n; ++i) a[0] = a[0] < x[i] ? x[i] : a[0];
    return *std::max_element(a, a + 32);
}

template <typename R> FLOOR void floor_triad(R *a, const R *b, R s, const R *c, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

volatile double g_sink;

double median_us(int reps, const std::function<void()> &f)
{
    f();
    std::vector<double> t(static_cast<size_t>(reps));
    for (auto &v : t) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        v = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
    return t[static_cast<size_t>(reps / 2)];
}

void row(int64_t n, const char *dt, const std::string &op, double us, double bytes, const char *floor_name,
         double floor_us)
{
    std::printf("%-9lld %-5s %-12s %10.2f %8.2f   %-10s %10.2f %8.2f %6.2f\n", static_cast<long long>(n), dt,
                op.c_str(), us, bytes / us * 1e-3, floor_name, floor_us, bytes / floor_us * 1e-3, us / floor_us);
}

template <typename T> void bench_dtype(DType dt, const char *name, int64_t n, int reps)
{
    using R = real_t<T>;
    constexpr int w = is_complex_v<T> ? 2 : 1;
    const int64_t m = n * w;  // reals
    std::vector<R> x(static_cast<size_t>(m)), y(static_cast<size_t>(m)), z(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
        x[static_cast<size_t>(i)] = R(1) + R(i % 8) / R(8);
        y[static_cast<size_t>(i)] = R(1) - R(i % 5) / R(8);
    }
    const double b1 = double(sizeof(R)) * double(m), b2 = 2 * b1, b3 = 3 * b1;
    const double fsum = median_us(reps, [&] { g_sink = floor_sum(x.data(), m); });
    const double fdot = median_us(reps, [&] { g_sink = floor_dot(x.data(), y.data(), m); });
    const double fmax = median_us(reps, [&] { g_sink = floor_max(x.data(), m); });
    const double ftriad = median_us(reps, [&] { floor_triad(z.data(), x.data(), R(0.5), y.data(), m); });

    T r{};
    row(n, name, "dot", median_us(reps, [&] { kernels::dot(Exec{}, dt, n, x.data(), y.data(), false, &r); }), b2,
        "dot-floor", fdot);
    if (is_complex_v<T>)
        row(n, name, "dotc", median_us(reps, [&] { kernels::dot(Exec{}, dt, n, x.data(), y.data(), true, &r); }),
            b2, "dot-floor", fdot);
    struct K { const char *op; kernels::NormKind k; double p; bool is_max; };
    const K kinds[] = {{"norm 1", kernels::NormKind::pow_sum, 1, false},
                       {"norm 2", kernels::NormKind::pow_sum, 2, false},
                       {"norm inf", kernels::NormKind::max_abs, 0, true},
                       {"norm -inf", kernels::NormKind::min_abs, 0, true},
                       {"norm 0", kernels::NormKind::count_nonzero, 0, false},
                       {"norm 3", kernels::NormKind::pow_sum, 3, false}};
    for (const K &k : kinds) {
        double out = 0;
        const double us = median_us(reps, [&] {
            kernels::norm_partial(Exec{}, dt, k.k, k.p, 1, n, 1, x.data(), &out);
            g_sink = out;
        });
        row(n, name, k.op, us, b1, k.is_max ? "max-floor" : "sum-floor", k.is_max ? fmax : fsum);
    }
    const T a = T(R(0.5)), b = T(R(0.5));
    row(n, name, "axpby",
        median_us(reps, [&] { kernels::axpby(Exec{}, dt, n, &a, x.data(), &b, z.data()); }), b3, "triad",
        ftriad);
}

}  // namespace

int main(int argc, char **argv)
{
    std::vector<int64_t> sizes;
    int reps = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "-n")) sizes.push_back(static_cast<int64_t>(std::atof(argv[i + 1])));
        if (!std::strcmp(argv[i], "-r")) reps = std::atoi(argv[i + 1]);
    }
    if (sizes.empty()) sizes = {1000, 100000, 10000000};
    std::printf("%-9s %-5s %-12s %10s %8s   %-10s %10s %8s %6s\n", "N", "dtype", "kernel", "median[us]", "GB/s",
                "floor", "floor[us]", "GB/s", "ratio");
    for (int64_t n : sizes) {
        const int r = reps ? reps : n >= 10000000 ? 11 : n >= 100000 ? 101 : 2001;
        bench_dtype<float>(DType::f32, "f32", n, r);
        bench_dtype<double>(DType::f64, "f64", n, r);
        bench_dtype<c64>(DType::c64, "c64", n, r);
        bench_dtype<c128>(DType::c128, "c128", n, r);
    }
    return 0;
}
