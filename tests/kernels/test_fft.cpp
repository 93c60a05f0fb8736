// White-box tests of the local FFT plans (src/kernels/fft.hpp) against a naive multi-axis DFT
// computed here in double: c2c forward and backward over non-trailing axes with batch axes
// between them, in place and out of place, estimated and measured, on aligned and unaligned
// buffers; r2c and c2r along an odd and an even last axis, on real arrays and on the real
// parts of complex ones; an empty batch; float and double; wisdom export and import. Single rank. Skipped (77) in a build without FFTW, after
// checking that making a plan is refused there with PLM_ERR_NOT_SUPPORTED.
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}
#undef fail

#include "core/error.hpp"
#include "kernels/fft.hpp"

using plm::DType;
using plm::Space;
using plm::kernels::FftEffort;
using plm::kernels::FftKind;
using plm::kernels::FftOptions;
using plm::kernels::FftPlan;
using cd = std::complex<double>;

namespace {

std::vector<int64_t> strides_of(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
}

int64_t size_of(const std::vector<int64_t> &shape)
{
    int64_t n = 1;
    for (int64_t v : shape) n *= v;
    return n;
}

// Naive DFT of x (C order, shape) over axes, one axis at a time; sign -1 forward, +1 backward.
std::vector<cd> naive_dft(std::vector<cd> x, const std::vector<int64_t> &shape, const std::vector<int> &axes, int sign)
{
    const std::vector<int64_t> st = strides_of(shape);
    for (int a : axes) {
        const int64_t n = shape[a], s = st[a];
        std::vector<cd> y(x.size());
        for (int64_t i = 0; i < (int64_t)x.size(); ++i) {
            const int64_t k = (i / s) % n, base = i - k * s;
            cd acc = 0;
            for (int64_t j = 0; j < n; ++j)
                acc += x[base + j * s] * std::polar(1.0, sign * 2.0 * M_PI * (double)(j * k % n) / (double)n);
            y[i] = acc;
        }
        x.swap(y);
    }
    return x;
}

std::vector<cd> random_complex(int64_t n, unsigned seed)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<cd> v(n);
    for (auto &z : v) z = cd(u(g), u(g));
    return v;
}

template <typename R> double max_err(const std::vector<std::complex<R>> &got, const std::vector<cd> &ref)
{
    double e = 0, m = 1e-300;
    for (size_t i = 0; i < ref.size(); ++i) {
        e = std::max(e, std::abs(cd(got[i]) - ref[i]));
        m = std::max(m, std::abs(ref[i]));
    }
    return e / m;
}

template <typename R> void check_c2c(const std::vector<int64_t> &shape, const std::vector<int> &axes, double tol)
{
    const DType dt = sizeof(R) == 8 ? DType::c128 : DType::c64;
    const std::vector<cd> x = random_complex(size_of(shape), 7);
    std::vector<std::complex<R>> in(x.begin(), x.end()), out(x.size());
    for (int sign : {-1, +1})
        for (FftEffort effort : {FftEffort::estimate, FftEffort::measure}) {
            const FftKind k = sign < 0 ? FftKind::c2c_forward : FftKind::c2c_backward;
            FftPlan p(Space::host, dt, k, shape, axes, -1, {effort, false, false});
            const std::vector<cd> ref = naive_dft(x, shape, axes, sign);
            p.execute(in.data(), out.data());
            assert_true(max_err(out, ref) < tol);
            FftPlan q(Space::host, dt, k, shape, axes, -1, {effort, true, false});  // in place
            std::vector<std::complex<R>> inplace = in;
            q.execute(inplace.data(), inplace.data());
            assert_true(max_err(inplace, ref) < tol);
            // an unaligned buffer (aligned for the real type only) runs the unaligned plan
            std::vector<std::complex<R>> shifted(in.size() + 1);
            R *base = reinterpret_cast<R *>(shifted.data()) + 1;
            std::copy(in.begin(), in.end(), reinterpret_cast<std::complex<R> *>(base));
            p.execute(base, out.data());
            assert_true(max_err(out, ref) < tol);
            // planned in place, run out of place: refused
            plm_status_t st = PLM_SUCCESS;
            try {
                q.execute(in.data(), out.data());
            } catch (const plm::Error &e) {
                st = e.status();
            }
            assert_int_equal(st, size_of(shape) > 0 ? PLM_ERR_INTERNAL : PLM_SUCCESS);  // empty: nothing runs
        }
}

template <typename R> void check_real(const std::vector<int64_t> &shape, const std::vector<int> &axes, double tol)
{
    const DType dt = sizeof(R) == 8 ? DType::f64 : DType::f32;
    std::vector<cd> xc = random_complex(size_of(shape), 11);
    for (auto &z : xc) z = z.real();
    std::vector<R> x(xc.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = (R)xc[i].real();
    std::vector<int64_t> hshape = shape;
    hshape[axes.back()] = shape[axes.back()] / 2 + 1;

    // r2c: the first n/2+1 bins of the full complex DFT along the last axis.
    const std::vector<cd> full = naive_dft(xc, shape, axes, -1);
    std::vector<cd> ref(size_of(hshape));
    const std::vector<int64_t> fs = strides_of(shape), hs = strides_of(hshape);
    for (int64_t i = 0; i < (int64_t)ref.size(); ++i) {
        int64_t rem = i, fi = 0;
        for (size_t d = 0; d < shape.size(); ++d) {
            fi += (rem / hs[d]) * fs[d];
            rem %= hs[d];
        }
        ref[i] = full[fi];
    }
    FftPlan fwd(Space::host, dt, FftKind::r2c, shape, axes);
    std::vector<std::complex<R>> spec(ref.size());
    fwd.execute(x.data(), spec.data());
    assert_true(max_err(spec, ref) < tol);

    // c2r of the half spectrum gives back n * x (unnormalised), the input overwritten.
    FftPlan bwd(Space::host, dt, FftKind::c2r, shape, axes);
    std::vector<R> back(x.size());
    std::vector<std::complex<R>> spec2 = spec;
    bwd.execute(spec.data(), back.data());
    double n = 1, e = 0;
    for (int a : axes) n *= (double)shape[a];
    for (size_t i = 0; i < x.size(); ++i) e = std::max(e, std::abs((double)back[i] / n - (double)x[i]));
    assert_true(e < tol);

    // The real side interleaved in a complex array (its real parts), planned measuring: r2c
    // reads only the real parts, c2r writes only them.
    const FftOptions il{FftEffort::measure, false, true};
    std::vector<std::complex<R>> xi(x.size());
    for (size_t i = 0; i < x.size(); ++i) xi[i] = std::complex<R>(x[i], (R)(1e30));  // imaginary parts ignored
    FftPlan fwd_i(Space::host, dt, FftKind::r2c, shape, axes, -1, il);
    std::vector<std::complex<R>> spec_i(ref.size());
    fwd_i.execute(xi.data(), spec_i.data());
    assert_true(max_err(spec_i, ref) < tol);
    FftPlan bwd_i(Space::host, dt, FftKind::c2r, shape, axes, -1, il);
    std::vector<std::complex<R>> back_i(x.size(), std::complex<R>(0, 7));
    bwd_i.execute(spec2.data(), back_i.data());
    e = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        e = std::max(e, std::abs((double)back_i[i].real() / n - (double)x[i]));
        assert_true(back_i[i].imag() == (R)7);
    }
    assert_true(e < tol);
}

void test_c2c(void **)
{
    check_c2c<double>({3, 5, 4}, {0, 2}, 1e-13);
    check_c2c<double>({6, 7}, {1}, 1e-13);
    check_c2c<double>({2, 3, 5}, {2, 1, 0}, 1e-13);
    check_c2c<float>({3, 5, 4}, {0, 2}, 1e-5);
    check_c2c<double>({0, 4}, {1}, 1e-13);  // empty batch
}

void test_real(void **)
{
    check_real<double>({4, 7}, {1}, 1e-13);
    check_real<double>({3, 4, 6}, {0, 2}, 1e-13);
    check_real<double>({5, 3, 2}, {1}, 1e-13);  // the real axis is not the last one
    check_real<float>({4, 9}, {0, 1}, 1e-5);
}

// Measured plans leave wisdom; exported, it reads back in (both precisions in one string),
// and a string FFTW cannot read is refused.
void test_wisdom(void **)
{
    FftPlan(Space::host, DType::c128, FftKind::c2c_forward, {16, 12}, {0, 1}, -1, {FftEffort::measure, false, false});
    FftPlan(Space::host, DType::f32, FftKind::r2c, {10}, {0}, -1, {FftEffort::measure, false, false});
    const std::string w = plm::kernels::fft_wisdom_export();
    assert_true(w.find("fftw_wisdom") != std::string::npos && w.find("fftwf_wisdom") != std::string::npos);
    plm::kernels::fft_wisdom_import(w);
    plm::kernels::fft_wisdom_import("");
    plm_status_t st = PLM_SUCCESS;
    try {
        plm::kernels::fft_wisdom_import("(not wisdom");
    } catch (const plm::Error &e) {
        st = e.status();
    }
    assert_int_equal(st, PLM_ERR_INVALID_ARG);
}

void test_refusals(void **)
{
    auto status_of = [](auto &&make) {
        try {
            make();
        } catch (const plm::Error &e) {
            return e.status();
        }
        return PLM_SUCCESS;
    };
    // device plans: cuFFT where a device is visible (tests/kernels/test_kernels_device runs
    // them), BACKEND_UNAVAILABLE in host-only builds and without a device
    assert_int_equal(status_of([] { FftPlan(Space::device, DType::c128, FftKind::c2c_forward, {4}, {0}); }),
                     plm::device_count() > 0 ? PLM_SUCCESS : PLM_ERR_BACKEND_UNAVAILABLE);
    assert_int_equal(status_of([] { FftPlan(Space::host, DType::c128, FftKind::c2c_forward, {4}, {1}); }),
                     PLM_ERR_INVALID_ARG);
    assert_int_equal(status_of([] { FftPlan(Space::host, DType::f64, FftKind::c2c_forward, {4}, {0}); }),
                     PLM_ERR_DTYPE_MISMATCH);
}

}  // namespace

int main()
{
    if (!plm::kernels::fft_available()) {
        bool refused = false;
        try {
            FftPlan(Space::host, DType::c128, FftKind::c2c_forward, {4}, {0});
        } catch (const plm::Error &e) {
            refused = e.status() == PLM_ERR_NOT_SUPPORTED;
        }
        return refused ? 77 : 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c2c),
        cmocka_unit_test(test_real),
        cmocka_unit_test(test_wisdom),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
