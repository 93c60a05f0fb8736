// Signal processing operators (pylopsmpi/signal.h): NonStationaryConvolve1D, Fredholm1, MDC, the
// distributed FFT and the fft shifts of arrays; handle checks and conversions only, the work is
// in src/ops/signal/ and src/array/fftshift.cpp.
#include <algorithm>
#include <memory>
#include <string>

#include "array/fftshift.hpp"
#include "c_api/op_api.hpp"
#include "ops/signal/fft.hpp"

using namespace plm;
using namespace plm::detail;

extern "C" {

PLM_API plm_status_t plm_op_nonstationary_convolve1d(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                                     int64_t local_rows, int axis, int64_t nfilt, int64_t nh,
                                                     const void *hs, int64_t hs_bytes, const int64_t *ih,
                                                     plm_op_t *out)
{
    return make_on(comm, "op_nonstationary_convolve1d", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::nonstat_convolve1d(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, nfilt, nh, hs,
                                       hs_bytes, ih);
    });
}

PLM_API plm_status_t plm_op_fredholm1(plm_comm_t comm, plm_dtype_t dtype, int64_t nsl, int64_t nx, int64_t ny,
                                      int64_t nz, const void *g, int64_t g_bytes, int save_gt, int usematmul,
                                      plm_op_t *out)
{
    (void)usematmul;  // a hint: every path is one gemm per slice
    return make_on(comm, "op_fredholm1", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::fredholm1(ag, c, enum_value(dtype), nsl, nx, ny, nz, g, g_bytes, save_gt != 0);
    });
}

PLM_API plm_status_t plm_op_mdc(plm_comm_t comm, plm_dtype_t dtype, int64_t nt, int64_t nv, int64_t nfreq, int64_t nf,
                                int64_t ns, int64_t nr, double dt, double dr, int twosided, int conj, int prescaled,
                                int save_gt, const void *g, int64_t g_bytes, plm_op_t *out)
{
    return make_on(comm, "op_mdc", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ops::MdcArgs a;
        a.dtype = enum_value(dtype);
        a.nt = nt;
        a.nv = nv;
        a.nfreq = nfreq;
        a.nf = nf;
        a.ns = ns;
        a.nr = nr;
        a.dt = dt;
        a.dr = dr;
        a.twosided = twosided != 0;
        a.conj = conj != 0;
        a.prescaled = prescaled != 0;
        a.save_gt = save_gt != 0;
        a.g = g;
        a.g_bytes = g_bytes;
        return ops::mdc(ag, c, a);
    });
}

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
    return plm_op_fftnd_plan(comm, dtype, ndim, dims, naxes, axes, nullptr, sampling, norm, real, ifftshift_before,
                             fftshift_after, output, PLM_FFT_PLANNING_DEFAULT, out);
}

static_assert(int{PLM_FFT_PLANNING_DEFAULT} == ops::kPlanningDefault &&
                  int{PLM_FFT_PLANNING_ESTIMATE} == ops::kPlanningEstimate &&
                  int{PLM_FFT_PLANNING_MEASURE} == ops::kPlanningMeasure &&
                  int{PLM_FFT_PLANNING_PATIENT} == ops::kPlanningPatient &&
                  int{PLM_FFT_PLANNING_EXHAUSTIVE} == ops::kPlanningExhaustive,
              "the planning efforts of the C API and of the operator");

PLM_API plm_status_t plm_op_fftnd_plan(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                       const int *axes, const int64_t *nffts, const double *sampling,
                                       plm_fft_norm_t norm, int real, const int *ifftshift_before,
                                       const int *fftshift_after, plm_fft_output_t output,
                                       plm_fft_planning_t planning, plm_op_t *out)
{
    return make_on(comm, "op_fftnd", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ops::FftSpec s;
        ag.check([&] {
            PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM && dims, PLM_ERR_INVALID_ARG,
                        "the FFT needs 1 <= ndim <= %d and dims (ndim = %d)", PLM_MAX_NDIM, ndim);
            PLM_REQUIRE(naxes >= 1 && naxes <= ndim && axes, PLM_ERR_INVALID_ARG,
                        "the FFT needs 1 <= naxes <= ndim axes (naxes = %d)", naxes);
            s.dtype = enum_value(dtype);
            s.dims.assign(dims, dims + ndim);
            s.axes.assign(axes, axes + naxes);
            s.norm = enum_value(norm);
            s.real = real;
            s.output = enum_value(output);
            s.planning = enum_value(planning);
            if (nffts) s.nffts.assign(nffts, nffts + naxes);
        });
        s.sampling = values(ag, naxes, sampling, 1.0, "sampling");
        s.ifftshift_before = values(ag, naxes, ifftshift_before, 0, "ifftshift_before");
        s.fftshift_after = values(ag, naxes, fftshift_after, 0, "fftshift_after");
        return ops::fftnd(ag, c, s);
    });
}

PLM_API plm_status_t plm_fft_wisdom_export(plm_comm_t comm, char *buf, int64_t size, int64_t *length)
{
    return guard([&] {
        comm::Communicator &c = comm_of(comm);
        comm::Agreement ag(c, "fft_wisdom_export");
        ag.check([&] {
            PLM_REQUIRE(length, PLM_ERR_INVALID_ARG, "length is NULL");
            PLM_REQUIRE(size >= 0 && (buf || size == 0), PLM_ERR_INVALID_ARG,
                        "buf must be NULL with size 0, or size (%lld) bytes", static_cast<long long>(size));
        });
        std::string text;
        ops::fft_wisdom_export(ag, comm->comm, &text);
        *length = static_cast<int64_t>(text.size());
        if (!buf) return;
        comm::Agreement fit(c, "fft_wisdom_export");  // the text is the same everywhere; the sizes may not be
        fit.check([&] {
            PLM_REQUIRE(size > static_cast<int64_t>(text.size()), PLM_ERR_INVALID_ARG,
                        "the wisdom has %zu bytes and its NUL: size %lld is too small", text.size(),
                        static_cast<long long>(size));
        });
        fit.run();
        std::copy(text.begin(), text.end(), buf);
        buf[text.size()] = '\0';
    });
}

PLM_API plm_status_t plm_fft_wisdom_import(plm_comm_t comm, const char *wisdom)
{
    return guard([&] {
        comm::Communicator &c = comm_of(comm);
        comm::Agreement ag(c, "fft_wisdom_import");
        ops::fft_wisdom_import(ag, comm->comm, wisdom);
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
