// Device kernels against the host kernels (CUDA builds; exits 77 where no GPU is visible).
// Element-wise operations and stencils run element.hpp's arithmetic on both sides, unfused:
// their results must be the same bits (random stencil plans of 1 to 8 dimensions, every
// dtype, ghost rows, sub-ranges, accumulate). Thresholds call libm (hypot for complex
// magnitudes; pow, acos and cos for the half threshold), which CUDA and glibc may round
// differently: those are compared to a few ulps. Reductions sum in another (fixed) order on
// device: compared to a tolerance, with the NaN rules, bitwise run to run, and with no
// allocation after the Reductions are made. Device FFT plans (cuFFT) are compared with the
// host's (FFTW) to a tolerance: every pass layout (contiguous rows, strided batches, one
// execute per outer slice or per inner column), c2c both ways and in place, r2c and c2r, float
// and double. No test framework: the GPU machines run the
// program without the build's libraries (tests/gpu/bundle.sh).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/alloc.hpp"
#include "kernels/fft.hpp"
#include "kernels/kernels.hpp"
#include "memory/space.hpp"
#include "stencil_cases.hpp"

using namespace plm;
using namespace plm::kernels;
using c64 = std::complex<float>;
using c128 = std::complex<double>;
using stencil_cases::Rng;

namespace {

int g_failures = 0;

// Counts a failure and goes on (the other checks still say something).
#define assert_true(cond)                                                         \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++g_failures;                                                         \
        }                                                                         \
    } while (0)

const double kNaN = std::numeric_limits<double>::quiet_NaN();

const Exec kDev{Space::device, 0, {}};

template <typename T> constexpr DType dtype_of()
{
    if constexpr (std::is_same_v<T, float>) return DType::f32;
    else if constexpr (std::is_same_v<T, double>) return DType::f64;
    else if constexpr (std::is_same_v<T, c64>) return DType::c64;
    else return DType::c128;
}

template <typename T> std::vector<T> random_vec(size_t n, uint64_t seed)
{
    Rng g(seed);
    std::uniform_real_distribution<double> u(-2, 2);
    std::vector<T> v(n);
    for (T &e : v) {
        if constexpr (is_complex_v<T>) e = T(static_cast<real_t<T>>(u(g)), static_cast<real_t<T>>(u(g)));
        else e = static_cast<T>(u(g));
    }
    return v;
}

// A device copy of host data, and back.
struct Dev {
    Buffer b;
    size_t bytes = 0;
    template <typename T> explicit Dev(const std::vector<T> &v) : bytes(v.size() * sizeof(T))
    {
        b = Buffer::allocate(Space::device, std::max<size_t>(bytes, 1));
        if (bytes) copy_bytes(Space::device, b.data(), Space::host, v.data(), bytes);
    }
    void *data() const { return b.data(); }
    template <typename T> std::vector<T> get() const
    {
        std::vector<T> v(bytes / sizeof(T));
        if (bytes) copy_bytes(Space::host, v.data(), Space::device, b.data(), bytes);
        return v;
    }
};

template <typename T> bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Runs f(exec, x, y) on host copies and device copies of x and y; the y's must match bitwise.
template <typename T, typename F> void host_vs_device(const char *what, const std::vector<T> &x, const std::vector<T> &y0, F f)
{
    std::vector<T> yh = y0;
    f(Exec{}, x.data(), yh.data());
    Dev dx(x), dy(y0);
    f(kDev, static_cast<const T *>(dx.data()), static_cast<T *>(dy.data()));
    const std::vector<T> yd = dy.get<T>();
    if (!same_bits(yh, yd)) {
        std::fprintf(stderr, "%s %s: device and host differ\n", what, dtype_name(dtype_of<T>()));
        assert_true(false);
    }
}

// ---------------------------------------------------------------------------------------

template <typename T> void elementwise()
{
    const DType dt = dtype_of<T>();
    const int64_t n = 100003;
    const std::vector<T> x = random_vec<T>(n, 1), y = random_vec<T>(n, 2);
    const T a = random_vec<T>(1, 3)[0], b = random_vec<T>(1, 4)[0], zero{}, one = T(1);
    host_vs_device("fill", x, y, [&](Exec e, const T *, T *p) { fill(e, dt, n, &a, p); });
    host_vs_device("scale", x, y, [&](Exec e, const T *, T *p) { scale(e, dt, n, &a, p); });
    host_vs_device("scale 1", x, y, [&](Exec e, const T *, T *p) { scale(e, dt, n, &one, p); });
    host_vs_device("axpby", x, y, [&](Exec e, const T *q, T *p) { axpby(e, dt, n, &a, q, &b, p); });
    host_vs_device("axpby b=0", x, y, [&](Exec e, const T *q, T *p) { axpby(e, dt, n, &a, q, &zero, p); });
    host_vs_device("axpby a=0", x, y, [&](Exec e, const T *q, T *p) { axpby(e, dt, n, &zero, q, &b, p); });
    for (Binary op : {Binary::add, Binary::sub, Binary::mul})
        host_vs_device("binary", x, y, [&](Exec e, const T *q, T *p) { binary(e, dt, op, n, q, p, p); });
    host_vs_device("conj", x, y, [&](Exec e, const T *q, T *p) { conj(e, dt, n, q, p); });
}

// scale_slab: a slab of an [outer, n, inner] view, element.hpp's arithmetic on both sides.
template <typename T> void slab()
{
    const DType dt = dtype_of<T>();
    const int64_t outer = 7, n = 11, inner = 13;
    const std::vector<T> x = random_vec<T>(outer * n * inner, 5);
    const T a = random_vec<T>(1, 6)[0], zero{}, one = T(1);
    for (const T *f : {&a, &zero, &one})
        host_vs_device("scale_slab", x, x, [&](Exec e, const T *, T *p) { scale_slab(e, dt, outer, n, inner, 2, 6, f, p); });
}

void test_elementwise_bitwise()
{
    elementwise<float>();
    elementwise<double>();
    elementwise<c64>();
    elementwise<c128>();
    slab<float>();
    slab<double>();
    slab<c64>();
    slab<c128>();
}

// ---------------------------------------------------------------------------------------

template <typename T> void thresholds()
{
    using R = real_t<T>;
    const DType dt = dtype_of<T>();
    std::vector<T> x = random_vec<T>(20000, 5);
    x.push_back(T(R(kNaN)));
    x.push_back(T(0));
    for (double t : {0.0, 0.2, 1.0, 2.5}) {
        for (Threshold k : {Threshold::soft, Threshold::hard, Threshold::half, Threshold::hard_at}) {
            std::vector<T> h = x;
            threshold(Exec{}, dt, k, t, static_cast<int64_t>(h.size()), h.data());
            Dev d(x);
            threshold(kDev, dt, k, t, static_cast<int64_t>(x.size()), d.data());
            const std::vector<T> g = d.get<T>();
            // Real soft and hard thresholds call no libm: the same bits.
            if (!is_complex_v<T> && k != Threshold::half) {
                assert_true(same_bits(g, h));
                continue;
            }
            const double eps = std::numeric_limits<R>::epsilon();
            size_t differ = 0;
            for (size_t i = 0; i < x.size(); ++i) {
                if (std::memcmp(&g[i], &h[i], sizeof(T)) == 0) continue;
                ++differ;
                // Relative to the input: near |x| = t the soft threshold's |x| - t cancels, so an
                // ulp of libm's |x| is an ulp of x in the result, not of the result.
                const bool nan = std::isnan(std::abs(h[i]));
                assert_true(nan ? std::isnan(std::abs(g[i])) : std::abs(g[i] - h[i]) <= 8 * eps * std::abs(x[i]));
            }
            if (differ)
                std::printf("threshold %s kind %d t %g: %zu of %zu values differ by ulps (libm)\n", dtype_name(dt),
                            static_cast<int>(k), t, differ, x.size());
        }
    }
}

void test_threshold()
{
    thresholds<float>();
    thresholds<double>();
    thresholds<c64>();
    thresholds<c128>();
}

// L2,1 group steps: real data the same bits (sqrt and the divisions are correctly rounded on
// both sides); complex magnitudes call hypot (libm), so a few ulps.
template <typename T> void group_steps()
{
    using R = real_t<T>;
    const DType dt = dtype_of<T>();
    const int64_t n = 30001;
    std::vector<T> a = random_vec<T>(n, 8), b = random_vec<T>(n, 9);
    a[0] = T(R(kNaN));
    a[1] = T(0);
    b[1] = T(0);
    const auto close = [](const std::vector<R> &g, const std::vector<R> &h) {
        for (size_t i = 0; i < g.size(); ++i) {
            if (std::memcmp(&g[i], &h[i], sizeof(R)) == 0) continue;
            if (is_complex_v<T> && std::abs(g[i] - h[i]) <= 8 * std::numeric_limits<R>::epsilon() * (1 + std::abs(h[i])))
                continue;
            return false;
        }
        return true;
    };
    std::vector<R> hn(n);
    group_add(Exec{}, dt, n, a.data(), true, hn.data());
    group_add(Exec{}, dt, n, b.data(), false, hn.data());
    Dev da(a), db(b), dn(hn);
    group_add(kDev, dt, n, da.data(), true, dn.data());
    group_add(kDev, dt, n, db.data(), false, dn.data());
    const std::vector<R> gn = dn.get<R>();
    assert_true(close(gn, hn));
    for (Group kind : {Group::prox, Group::dual}) {
        std::vector<T> hy(n);
        group_scale(Exec{}, dt, kind, 0.7, n, hn.data(), a.data(), hy.data());
        Dev dhn(hn), dy(hy);
        group_scale(kDev, dt, kind, 0.7, n, dhn.data(), da.data(), dy.data());
        const std::vector<T> gy = dy.get<T>();
        if (!is_complex_v<T>) assert_true(same_bits(gy, hy));
    }
    std::vector<R> hs = hn;
    group_norm(Exec{}, is_complex_v<T> ? (dt == DType::c64 ? DType::f32 : DType::f64) : dt, n, hs.data());
    Dev ds(hn);
    group_norm(kDev, is_complex_v<T> ? (dt == DType::c64 ? DType::f32 : DType::f64) : dt, n, ds.data());
    assert_true(same_bits(ds.get<R>(), hs));
}

void test_group_steps()
{
    group_steps<float>();
    group_steps<double>();
    group_steps<c64>();
    group_steps<c128>();
}

// ---------------------------------------------------------------------------------------

template <typename T> void stencils(int ndim, int cases, uint64_t seed)
{
    using R = real_t<T>;
    constexpr int W = is_complex_v<T> ? 2 : 1;
    const DType dt = dtype_of<T>();
    Rng g(seed);
    for (int c = 0; c < cases; ++c) {
        const StencilPlan p = stencil_cases::random_plan(g, ndim);
        const int64_t rl = stencil_cases::row_len(p) * W;
        std::vector<R> x = random_vec<R>(static_cast<size_t>(p.nrows * rl), g()),
                       gb = random_vec<R>(static_cast<size_t>(p.before * rl), g()),
                       ga = random_vec<R>(static_cast<size_t>(p.after * rl), g()),
                       y = random_vec<R>(static_cast<size_t>(p.nrows * rl), g());
        const int64_t r0 = stencil_cases::uniform(g, 0, static_cast<int>(p.nrows));
        const int64_t r1 = c % 2 ? p.nrows : stencil_cases::uniform(g, static_cast<int>(r0), static_cast<int>(p.nrows));
        const bool acc = c % 3 == 0;
        std::vector<R> yh = y;
        stencil(Exec{}, dt, p, x.data(), gb.data(), ga.data(), r0, r1, acc, yh.data());
        Dev dx(x), dgb(gb), dga(ga), dy(y);
        stencil(kDev, dt, p, dx.data(), dgb.data(), dga.data(), r0, r1, acc, dy.data());
        if (!same_bits(yh, dy.get<R>())) {
            std::fprintf(stderr, "stencil %s ndim %d case %d: device and host differ\n", dtype_name(dt), ndim, c);
            assert_true(false);
        }
    }
}

void test_stencil_bitwise()
{
    for (int ndim = 1; ndim <= PLM_MAX_NDIM; ++ndim) {
        const int cases = ndim <= 3 ? 60 : 20;
        stencils<float>(ndim, cases, 500 + ndim);
        stencils<double>(ndim, cases, 600 + ndim);
        stencils<c64>(ndim, cases, 700 + ndim);
        stencils<c128>(ndim, cases, 800 + ndim);
    }
}

// ---------------------------------------------------------------------------------------

struct Kind {
    NormKind kind;
    double p;
};
const Kind kKinds[] = {{NormKind::pow_sum, 1}, {NormKind::pow_sum, 2}, {NormKind::pow_sum, 3},
                       {NormKind::max_abs, 0}, {NormKind::min_abs, 0}, {NormKind::count_nonzero, 0}};
constexpr int kSlots = 2 + 6;

// Every dot and norm of x, y into slots on e, collected.
template <typename T> std::vector<double> reduce_all(const Exec &e, Reductions &r, int64_t n, const void *x, const void *y)
{
    const DType dt = dtype_of<T>();
    dot(e, dt, n, x, y, false, r, 0);
    dot(e, dt, n, x, y, true, r, 1);
    for (int k = 0; k < 6; ++k) norm_partial(e, dt, kKinds[k].kind, kKinds[k].p, n, x, r, 2 + k);
    std::vector<double> out(2 * kSlots);
    collect(e, r, out.data());
    return out;
}

bool close(double got, double want, double rtol)
{
    if (std::isnan(want)) return std::isnan(got);
    return got == want || std::fabs(got - want) <= rtol * std::fabs(want);
}

template <typename T> void reductions(int64_t n, bool with_nan)
{
    std::vector<T> x = random_vec<T>(static_cast<size_t>(n), 11), y = random_vec<T>(static_cast<size_t>(n), 12);
    if (with_nan && n > 7) x[7] = T(static_cast<real_t<T>>(kNaN));
    Reductions rh(Exec{}, kSlots), rd(kDev, kSlots);
    Dev dx(x), dy(y);
    const std::vector<double> h = reduce_all<T>(Exec{}, rh, n, x.data(), y.data());
    alloc::reset_violations();
    alloc::set_after_agreement(true);  // nothing below may allocate
    const std::vector<double> d1 = reduce_all<T>(kDev, rd, n, dx.data(), dy.data());
    const std::vector<double> d2 = reduce_all<T>(kDev, rd, n, dx.data(), dy.data());
    alloc::set_after_agreement(false);
    assert_true(alloc::violations() == 0);
    assert_true(same_bits(d1, d2));  // a fixed order: the same bits every run
    // Sums of n terms in two orders; dots are rounded to the dtype at the end.
    const double rtol = 1e-12 * std::sqrt(double(n) + 1), rtol_dot = std::max(rtol, 4.0 * std::numeric_limits<real_t<T>>::epsilon());
    for (size_t i = 0; i < h.size(); ++i) {
        if (!close(d1[i], h[i], i < 4 ? rtol_dot : rtol)) {
            std::fprintf(stderr, "reduction %s n=%lld slot value %zu: device %.17g host %.17g\n",
                         dtype_name(dtype_of<T>()), static_cast<long long>(n), i, d1[i], h[i]);
            assert_true(false);
        }
    }
    // The entry points into host results run the same kernels.
    T d{};
    kernels::dot(kDev, dtype_of<T>(), n, dx.data(), dy.data(), true, &d);
    assert_true(same_bits(std::vector<double>{double(std::real(d)), double(std::imag(d))},
                          std::vector<double>{d1[2], d1[3]}));
    for (int k = 0; k < 6; ++k) {
        double v = -1;
        norm_partial(kDev, dtype_of<T>(), kKinds[k].kind, kKinds[k].p, 1, n, 1, dx.data(), &v);
        assert_true(same_bits(std::vector<double>{v}, std::vector<double>{d1[4 + 2 * k]}));
    }
}

template <typename T> void reductions_all()
{
    for (int64_t n : {0, 1, 255, 1000, 100003, 3000000}) reductions<T>(n, false);
    reductions<T>(5000, true);
}

void test_reductions()
{
    reductions_all<float>();
    reductions_all<double>();
    reductions_all<c64>();
    reductions_all<c128>();
}

// Norms along an axis keep their own path.
void test_norm_strided()
{
    const int64_t outer = 3, n = 700, inner = 5;
    const std::vector<double> x = random_vec<double>(static_cast<size_t>(outer * n * inner), 21);
    Dev dx(x);
    for (const Kind &k : kKinds) {
        std::vector<double> h(outer * inner), d(outer * inner);
        norm_partial(Exec{}, DType::f64, k.kind, k.p, outer, n, inner, x.data(), h.data());
        norm_partial(kDev, DType::f64, k.kind, k.p, outer, n, inner, dx.data(), d.data());
        for (size_t i = 0; i < h.size(); ++i) assert_true(close(d[i], h[i], 1e-12));
    }
}

// |a - b| <= tol max |b|, element by element.
template <typename T> bool close_all(const std::vector<T> &a, const std::vector<T> &b, double tol)
{
    if (a.size() != b.size()) return false;
    double big = 0;
    for (const T &v : b) big = std::max(big, static_cast<double>(std::abs(v)));
    for (size_t i = 0; i < a.size(); ++i)
        if (!(std::abs(a[i] - b[i]) <= tol * (big + 1e-300))) return false;
    return true;
}

// One plan of kind on shape / axes, host (FFTW) and device (cuFFT), on the same input.
template <typename R> void fft_case(FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes)
{
    using C = std::complex<R>;
    const bool real = kind == FftKind::r2c || kind == FftKind::c2r;
    const DType dt = real ? dtype_of<R>() : dtype_of<C>();
    std::vector<int64_t> cshape = shape;
    if (real) cshape[static_cast<size_t>(axes.back())] = shape[static_cast<size_t>(axes.back())] / 2 + 1;
    int64_t nr = 1, nc = 1;
    for (size_t a = 0; a < shape.size(); ++a) {
        nr *= shape[a];
        nc *= cshape[a];
    }
    const double tol = std::is_same_v<R, float> ? 2e-5 : 1e-12;
    FftPlan host(Space::host, dt, kind, shape, axes), dev(Space::device, dt, kind, shape, axes, 0);
    Buffer work = Buffer::allocate(Space::device, std::max<size_t>(dev.work_bytes(), 1));
    bool ok = true;
    if (kind == FftKind::r2c) {
        const std::vector<R> x = random_vec<R>(static_cast<size_t>(nr), 7);
        std::vector<C> yh(static_cast<size_t>(nc));
        host.execute(x.data(), yh.data());
        Dev dx(x), dy(std::vector<C>(static_cast<size_t>(nc)));
        dev.execute(kDev, dx.data(), dy.data(), work.data());
        ok = close_all(dy.get<C>(), yh, tol);
    } else if (kind == FftKind::c2r) {  // the input is overwritten: each side gets its copy
        // a spectrum of real data (imaginary DC and Nyquist parts: see the operator tests)
        std::vector<R> r = random_vec<R>(static_cast<size_t>(nr), 8);
        std::vector<C> x(static_cast<size_t>(nc));
        FftPlan(Space::host, dt, FftKind::r2c, shape, axes).execute(r.data(), x.data());
        std::vector<C> xh = x;
        std::vector<R> yh(static_cast<size_t>(nr));
        host.execute(xh.data(), yh.data());
        Dev dx(x), dy(std::vector<R>(static_cast<size_t>(nr)));
        dev.execute(kDev, dx.data(), dy.data(), work.data());
        ok = close_all(dy.get<R>(), yh, tol);
    } else {
        const std::vector<C> x = random_vec<C>(static_cast<size_t>(nc), 9);
        std::vector<C> yh(static_cast<size_t>(nc));
        host.execute(x.data(), yh.data());
        Dev dx(x), dy(std::vector<C>(static_cast<size_t>(nc)));
        dev.execute(kDev, dx.data(), dy.data(), work.data());
        ok = close_all(dy.get<C>(), yh, tol) && close_all(dx.get<C>(), x, 0);  // input untouched
        dev.execute(kDev, dx.data(), dx.data(), work.data());  // in place
        ok = ok && close_all(dx.get<C>(), yh, tol);
    }
    if (!ok) {
        std::fprintf(stderr, "device FFT kind %d of %s, %zu dims, %zu axes: differs from FFTW\n", static_cast<int>(kind),
                     dtype_name(dt), shape.size(), axes.size());
        assert_true(false);
    }
}

template <typename R> void fft_cases()
{
    using K = FftKind;
    for (K k : {K::c2c_forward, K::c2c_backward}) {
        fft_case<R>(k, {64}, {0});
        fft_case<R>(k, {6, 7}, {1});            // contiguous rows
        fft_case<R>(k, {6, 7}, {0});            // strided, one execute
        fft_case<R>(k, {5, 6, 4}, {1});         // one execute per inner column (4 < 5)
        fft_case<R>(k, {3, 8, 7}, {1});         // one per outer slice (3 < 7)
        fft_case<R>(k, {2, 3, 4, 5}, {3, 1, 0});
    }
    for (K k : {K::r2c, K::c2r}) {
        fft_case<R>(k, {10}, {0});
        fft_case<R>(k, {9}, {0});
        fft_case<R>(k, {6, 7}, {1});
        fft_case<R>(k, {7, 6}, {0});
        fft_case<R>(k, {4, 6, 3}, {0, 1});      // r2c axis 1: one execute per outer slice
        fft_case<R>(k, {3, 5, 2}, {2, 1});
        fft_case<R>(k, {3, 4, 5}, {0, 1, 2});
    }
}

void test_fft()
{
    if (!fft_available()) {
        std::printf("(no FFTW in this build: device FFT plans not compared)\n");
        return;
    }
    fft_cases<double>();
    fft_cases<float>();
    // the layout cuFFT's real passes do not take is refused when the plan is made
    assert_true(!device_fft_layout_ok(FftKind::r2c, {4, 3, 5}, {0, 1}));
    bool refused = false;
    try {
        FftPlan(Space::device, DType::f64, FftKind::r2c, {4, 3, 5}, {0, 1}, 0);
    } catch (const Error &e) {
        refused = e.status() == PLM_ERR_NOT_SUPPORTED;
    }
    assert_true(refused);
}

// Stencils and thresholds allocate nothing on device.
void test_no_allocation()
{
    stencil_cases::Rng g(31);
    StencilPlan p = stencil_cases::random_plan(g, 3);
    while (p.nrows == 0) p = stencil_cases::random_plan(g, 3);
    const int64_t rl = stencil_cases::row_len(p);
    Dev x(std::vector<double>(static_cast<size_t>((p.nrows + p.before + p.after) * rl), 1.0)),
        y(std::vector<double>(static_cast<size_t>(p.nrows * rl), 0.0));
    const double *gb = static_cast<const double *>(x.data()) + p.nrows * rl;
    alloc::reset_violations();
    alloc::set_after_agreement(true);
    stencil(kDev, DType::f64, p, x.data(), gb, gb + p.before * rl, 0, p.nrows, false, y.data());
    threshold(kDev, DType::f64, Threshold::soft, 0.5, p.nrows * rl, y.data());
    alloc::set_after_agreement(false);
    assert_true(alloc::violations() == 0);
}

}  // namespace

int main()
{
    if (device_count() == 0) {
        std::printf("no CUDA device visible: skipped\n");
        return 77;
    }
    const struct {
        const char *name;
        void (*run)();
    } tests[] = {
        {"elementwise_bitwise", test_elementwise_bitwise}, {"threshold", test_threshold},
        {"group_steps", test_group_steps},
        {"stencil_bitwise", test_stencil_bitwise},         {"reductions", test_reductions},
        {"norm_strided", test_norm_strided},               {"no_allocation", test_no_allocation},
        {"fft", test_fft},
    };
    for (const auto &t : tests) {
        const int before = g_failures;
        t.run();
        std::printf("[%s] %s\n", g_failures == before ? "  OK  " : "FAILED", t.name);
    }
    std::printf("%s\n", g_failures ? "FAILED" : "all passed");
    return g_failures ? 1 : 0;
}
