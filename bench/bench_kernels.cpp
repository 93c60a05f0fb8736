// Single-rank host kernels (src/kernels) next to vectorised floor loops measured in the same
// run: dot, every norm kind and axpby for the four floating dtypes; then stencils on 2-D
// float64 blocks (the fused kernel, and one call per axis as the operators' sweeps before it)
// next to a triad and a one-pass 3-point stencil over the same block, timed
// alternately. Prints tables; asserts nothing. See README.md.
//
// With -d (CUDA builds, a visible GPU; else exits 77): device stencils on large blocks (a
// first derivative along each axis, a 2-axis Laplacian, float64 and float32) next to a
// device-to-device copy of the same bytes, timed alternately in batches: GB/s (x read once,
// y written once) and the ratio to the copy's GB/s.
//
//   bench_kernels [-n N]... [-r REPS] [-s] [-d]    (-s: the stencil table only; -d: device)
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
#include "memory/space.hpp"

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

// ---------------------------------------------------------------------------------------
// Stencils
// ---------------------------------------------------------------------------------------

// The floor of a stencil: one pass reading x once and writing y once.
FLOOR void floor_stencil3(double *__restrict y, const double *__restrict x, int64_t n)
{
    y[0] = x[0];
    for (int64_t i = 1; i + 1 < n; ++i) y[i] = x[i - 1] - 2 * x[i] + x[i + 1];
    y[n - 1] = x[n - 1];
}

// f and g alternately, reps times each after a warm-up: their medians, in us.
void time_pair(int reps, const std::function<void()> &f, const std::function<void()> &g, double *tf, double *tg)
{
    std::vector<double> a, b;
    auto once = [](const std::function<void()> &h) {
        auto t0 = std::chrono::steady_clock::now();
        h();
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    };
    f();
    g();
    for (int k = 0; k < reps; ++k) {
        a.push_back(once(f));
        b.push_back(once(g));
    }
    std::nth_element(a.begin(), a.begin() + reps / 2, a.end());
    std::nth_element(b.begin(), b.begin() + reps / 2, b.end());
    *tf = a[static_cast<size_t>(reps / 2)];
    *tg = b[static_cast<size_t>(reps / 2)];
}

// PyLops' bands on an axis of n points, listed as the operators build them (3 end rows each
// side): the centered second derivative (edge rows empty), the centered first derivative of
// order 3 (edge rows empty) and its adjoint.
kernels::Band second_band(int64_t n)
{
    kernels::Band b;
    b.n = n;
    b.lo = b.hi = 3;
    b.mid = {3, {-1, 0, 1}, {1, -2, 1}};
    for (int e = 0; e < 6; ++e) b.ends[e] = e == 0 || e == 5 ? kernels::BandRow{} : b.mid;
    return b;
}

kernels::Band first_band(int64_t n, bool adjoint)
{
    kernels::Band b;
    b.n = n;
    b.lo = b.hi = adjoint ? 4 : 3;
    b.mid = adjoint ? kernels::BandRow{2, {-1, 1}, {0.5, -0.5}} : kernels::BandRow{2, {-1, 1}, {-0.5, 0.5}};
    for (int e = 0; e < b.lo + b.hi; ++e) {
        const int64_t i = e < b.lo ? e : n - b.hi + (e - b.lo);
        kernels::BandRow &r = b.ends[e];
        // Forward rows 1..n-2 are mid; the adjoint's column j holds rows j - 1 and j + 1.
        if (!adjoint) r = i >= 1 && i <= n - 2 ? b.mid : kernels::BandRow{};
        else {
            if (i - 1 >= 1) r.off[r.nterms] = -1, r.w[r.nterms++] = 0.5;
            if (i + 1 <= n - 2) r.off[r.nterms] = 1, r.w[r.nterms++] = -0.5;
        }
    }
    return b;
}

kernels::StencilPlan plan_2d(int64_t n0, int64_t n1, std::initializer_list<std::pair<int, kernels::Band>> axes)
{
    kernels::StencilPlan p;
    p.ndim = 2;
    p.dims[0] = n0;
    p.dims[1] = n1;
    p.nrows = n0;
    for (const auto &[a, b] : axes) {
        p.axes[p.naxes].axis = a;
        p.axes[p.naxes].band = b;
        ++p.naxes;
    }
    return p;
}

// One stencil() call per axis of the plan (a plan of that axis alone; the first writes y, the
// others add to it): y read and written once more per axis, as the operators' per-axis sweeps
// before the fused kernel.
void per_axis(const kernels::StencilPlan &p, const double *x, double *y)
{
    for (int k = 0; k < p.naxes; ++k) {
        kernels::StencilPlan one = p;
        one.naxes = 1;
        one.axes[0] = p.axes[k];
        kernels::stencil(Exec{}, DType::f64, one, x, nullptr, nullptr, 0, p.nrows, k > 0, y);
    }
}

void bench_stencils(int reps)
{
    std::printf("\n%-30s %-11s %10s %8s %10s %10s %9s %9s\n", "stencil (float64, 1 rank)", "block", "median[us]", "GB/s",
                "3pt[us]", "triad[us]", "/3pt", "/triad");
    const int64_t shapes[][2] = {{2000, 2000}, {4000, 1000}};
    for (const auto &sh : shapes) {
        const int64_t n0 = sh[0], n1 = sh[1], n = n0 * n1;
        std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), z(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 1.0 + double(i % 7) / 8;
        z = x;
        const struct {
            const char *name;
            kernels::StencilPlan p;
            bool per_axis;  // one call per axis
        } cases[] = {
            {"Laplacian (axes 1, 0), fused", plan_2d(n0, n1, {{1, second_band(n1)}, {0, second_band(n0)}}), false},
            {"Laplacian, one call per axis", plan_2d(n0, n1, {{1, second_band(n1)}, {0, second_band(n0)}}), true},
            {"d/dx0 centered 3, fused", plan_2d(n0, n1, {{0, first_band(n0, false)}}), false},
            {"d/dx0 adjoint, fused", plan_2d(n0, n1, {{0, first_band(n0, true)}}), false},
            {"d/dx1 centered 3, fused", plan_2d(n0, n1, {{1, first_band(n1, false)}}), false},
            {"d/dx1 adjoint, fused", plan_2d(n0, n1, {{1, first_band(n1, true)}}), false},
        };
        char block[32];
        std::snprintf(block, sizeof block, "%lldx%lld", static_cast<long long>(n0), static_cast<long long>(n1));
        for (const auto &c : cases) {
            auto op = [&] {
                if (c.per_axis) per_axis(c.p, x.data(), y.data());
                else kernels::stencil(Exec{}, DType::f64, c.p, x.data(), nullptr, nullptr, 0, n0, false, y.data());
            };
            double t = 0, t3 = 0, tt = 0, t_ = 0;
            time_pair(reps, op, [&] { floor_stencil3(y.data(), x.data(), n); }, &t, &t3);
            time_pair(reps, op, [&] { floor_triad(z.data(), x.data(), 0.5, y.data(), n); }, &t_, &tt);
            std::printf("%-30s %-11s %10.1f %8.2f %10.1f %10.1f %9.2f %9.2f\n", c.name, block, t,
                        16.0 * double(n) / t * 1e-3, t3, tt, t / t3, t / tt);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Device stencils
// ---------------------------------------------------------------------------------------

template <typename R> void bench_device_dtype(DType dt, const char *name, int reps)
{
    const Exec dev{Space::device, 0, {}};
    const SpaceOps &ops = require_space(Space::device);
    const int64_t n0 = 16384, n1 = 8192, n = n0 * n1;  // 1 GiB of float64
    const size_t bytes = static_cast<size_t>(n) * sizeof(R);
    Buffer x = Buffer::allocate(Space::device, bytes), y = Buffer::allocate(Space::device, bytes);
    const R one = 1;
    kernels::fill(dev, dt, n, &one, x.data());
    kernels::StencilPlan d1 = plan_2d(n, 1, {{0, first_band(n, false)}});
    d1.ndim = 1;
    const struct {
        const char *name;
        kernels::StencilPlan p;
    } cases[] = {
        {"d/dx 1-D centered 3", d1},
        {"d/dx0 centered 3 (2-D)", plan_2d(n0, n1, {{0, first_band(n0, false)}})},
        {"d/dx1 centered 3 (2-D)", plan_2d(n0, n1, {{1, first_band(n1, false)}})},
        {"d/dx1 adjoint (2-D)", plan_2d(n0, n1, {{1, first_band(n1, true)}})},
        {"Laplacian axes 1, 0 (2-D)", plan_2d(n0, n1, {{1, second_band(n1)}, {0, second_band(n0)}})},
    };
    constexpr int kBatch = 10;  // launches per timed sample, one synchronisation
    auto batch = [&](const std::function<void()> &f) {
        return [&, f] {
            for (int k = 0; k < kBatch; ++k) f();
            ops.synchronize(Stream{});
        };
    };
    for (const auto &c : cases) {
        const int64_t rows = c.p.dims[0];
        double t = 0, tc = 0;
        time_pair(reps, batch([&] { kernels::stencil(dev, dt, c.p, x.data(), nullptr, nullptr, 0, rows, false, y.data()); }),
                  batch([&] { kernels::copy(dev, dt, n, x.data(), y.data()); }), &t, &tc);
        const double gbs = 2.0 * double(bytes) * kBatch / t * 1e-3, cgbs = 2.0 * double(bytes) * kBatch / tc * 1e-3;
        std::printf("%-28s %-5s %12.1f %9.1f %12.1f %9.1f %7.2f\n", c.name, name, t / kBatch, gbs, tc / kBatch, cgbs,
                    gbs / cgbs);
    }
}

int bench_device(int reps)
{
    if (device_count() == 0) {
        std::printf("bench_kernels -d: no CUDA device visible\n");
        return 77;
    }
    std::printf("%-28s %-5s %12s %9s %12s %9s %7s\n", "device stencil (16384x8192)", "dtype", "median[us]", "GB/s",
                "copy[us]", "GB/s", "ratio");
    bench_device_dtype<double>(DType::f64, "f64", reps);
    bench_device_dtype<float>(DType::f32, "f32", reps);
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    std::vector<int64_t> sizes;
    int reps = 0;
    bool stencils_only = false, device = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-s")) stencils_only = true;
        if (!std::strcmp(argv[i], "-d")) device = true;
        if (i + 1 >= argc) continue;
        if (!std::strcmp(argv[i], "-n")) sizes.push_back(static_cast<int64_t>(std::atof(argv[i + 1])));
        if (!std::strcmp(argv[i], "-r")) reps = std::atoi(argv[i + 1]);
    }
    if (device) return bench_device(reps ? reps : 11);
    if (stencils_only) {
        bench_stencils(reps ? reps : 21);
        return 0;
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
    bench_stencils(reps ? reps : 21);
    return 0;
}
