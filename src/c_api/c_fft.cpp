// The distributed FFT operator and the fft shifts of arrays: handle checks and conversions
// only; the work is in src/ops/signal/fft.cpp and src/array/fftshift.cpp.
#include <algorithm>
#include <memory>

#include "array/fftshift.hpp"
#include "c_api/guard.hpp"
#include "ops/signal/fft.hpp"

using namespace plm;
using detail::guard;

namespace {

// n entries of a caller's array, or n copies of fallback when it is NULL.
template <typename T> std::vector<T> entries(int n, const T *v, T fallback)
{
    return v ? std::vector<T>(v, v + n) : std::vector<T>(static_cast<size_t>(n), fallback);
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_op_fftnd(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                  const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                  const int *ifftshift_before, const int *fftshift_after, plm_op_t *out)
{
    return plm_op_fftnd_ex(comm, dtype, ndim, dims, naxes, axes, sampling, norm, real, ifftshift_before,
                           fftshift_after, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, out);
}

PLM_API plm_status_t plm_op_fftnd_ex(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                     const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                     const int *ifftshift_before, const int *fftshift_after,
                                     plm_fft_output_t output, plm_op_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        comm::Communicator &c = detail::comm_of(comm);
        comm::Agreement ag(c, "op_fftnd");
        std::unique_ptr<plm_op_s> h;
        ops::FftSpec s;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(new plm_op_s());
            PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM && dims, PLM_ERR_INVALID_ARG,
                        "the FFT needs 1 <= ndim <= %d and dims (ndim = %d)", PLM_MAX_NDIM, ndim);
            PLM_REQUIRE(naxes >= 1 && naxes <= ndim && axes, PLM_ERR_INVALID_ARG,
                        "the FFT needs 1 <= naxes <= ndim axes (naxes = %d)", naxes);
            s.dtype = enum_value(dtype);
            s.dims.assign(dims, dims + ndim);
            s.axes.assign(axes, axes + naxes);
            s.sampling = entries(naxes, sampling, 1.0);
            s.norm = enum_value(norm);
            s.real = real;
            s.ifftshift_before = entries(naxes, ifftshift_before, 0);
            s.fftshift_after = entries(naxes, fftshift_after, 0);
            s.output = enum_value(output);
        });
        h->op = ops::fftnd(ag, comm->comm, s);
        h->magic = detail::kOpMagic;
        *out = h.release();
    });
}

PLM_API plm_status_t plm_op_fft_range(plm_const_op_t op, int ndim, int64_t *dimsd, int *axis)
{
    return guard([&] {
        PLM_REQUIRE(dimsd && axis, PLM_ERR_INVALID_ARG, "dimsd and axis must not be NULL");
        Shape d;
        int a = 0;
        ops::fft_range(*detail::op_of(op), &d, &a);
        PLM_REQUIRE(ndim == static_cast<int>(d.size()), PLM_ERR_INVALID_ARG, "the FFT operator has %zu dimensions, not %d",
                    d.size(), ndim);
        std::copy(d.begin(), d.end(), dimsd);
        *axis = a;
    });
}

PLM_API plm_status_t plm_op_fft_frequencies(plm_const_op_t op, int i, int64_t n, double *f)
{
    return guard([&] {
        const std::vector<double> v = ops::fft_frequencies(*detail::op_of(op), i);
        PLM_REQUIRE(f && n == static_cast<int64_t>(v.size()), PLM_ERR_INVALID_ARG,
                    "FFT axis %d has %zu frequencies: n (%lld) must say so and f must not be NULL", i, v.size(),
                    static_cast<long long>(n));
        std::copy(v.begin(), v.end(), f);
    });
}

PLM_API plm_status_t plm_array_fftshift(plm_const_array_t x, int naxes, const int *axes, int inverse, plm_array_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        const DistributedArray &a = detail::array_of(x);
        comm::Agreement ag(a.base(), "array_fftshift");
        std::unique_ptr<plm_array_s> h;
        std::vector<int> list;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(detail::new_array_handle(nullptr));
            PLM_REQUIRE(naxes >= 0 && naxes <= PLM_MAX_NDIM && (axes || naxes == 0), PLM_ERR_INVALID_ARG,
                        "naxes must be 0..%d with axes (naxes = %d)", PLM_MAX_NDIM, naxes);
            PLM_REQUIRE(inverse == 0 || inverse == 1, PLM_ERR_INVALID_ARG, "inverse must be 0 or 1 (got %d)", inverse);
            list.assign(axes, axes + naxes);
        });
        h->array = fftshift(ag, a, list, inverse != 0);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

}  // extern "C"
