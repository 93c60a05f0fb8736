// Stencil operator constructors (pylopsmpi/stencil.h): handle checks and conversions only; the
// work is in src/ops/basic/stencil.cpp and src/ops/basic/halo.cpp.
#include <memory>

#include "c_api/op_api.hpp"

using namespace plm;
using namespace plm::detail;

extern "C" {

PLM_API plm_status_t plm_op_first_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                             int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                             int order, int edge, plm_op_t *out)
{
    return make_on(comm, "op_first_derivative", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::first_derivative(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, sampling,
                                     enum_value(kind), order, edge != 0);
    });
}

PLM_API plm_status_t plm_op_second_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                              int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                              int edge, plm_op_t *out)
{
    return make_on(comm, "op_second_derivative", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::second_derivative(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, sampling,
                                      enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_laplacian(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                      int64_t local_rows, int naxes, const int *axes, const double *weights,
                                      const double *sampling, plm_deriv_kind_t kind, int edge, plm_op_t *out)
{
    return make_on(comm, "op_laplacian", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ag.check([&] { PLM_REQUIRE(axes, PLM_ERR_INVALID_ARG, "axes is NULL"); });
        const std::vector<int> a = values(ag, naxes, axes, 0, "axes");
        const std::vector<double> w = values(ag, naxes, weights, 1.0, "weights");
        const std::vector<double> s = values(ag, naxes, sampling, 1.0, "sampling");
        return ops::laplacian(ag, c, {enum_value(dtype), ndim, dims, local_rows}, a, w, s, enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_gradient(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                     int64_t local_rows, const double *sampling, plm_deriv_kind_t kind, int edge,
                                     plm_op_t *out)
{
    return make_on(comm, "op_gradient", out, [&](comm::Agreement &ag, const CommPtr &c) {
        const std::vector<double> s = values(ag, sampling ? ndim : 0, sampling, 1.0, "sampling");
        return ops::gradient(ag, c, {enum_value(dtype), ndim, dims, local_rows}, s, enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_halo(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, const int *grid,
                                 int nhalo, const int64_t *halo, plm_op_t *out)
{
    return make_on(comm, "op_halo", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ag.check([&] {
            PLM_REQUIRE(ndim >= 1 && dims, PLM_ERR_INVALID_ARG, "halo needs ndim >= 1 and dims (ndim = %d)", ndim);
            PLM_REQUIRE(nhalo >= 1 && halo, PLM_ERR_INVALID_ARG, "halo needs nhalo >= 1 widths (nhalo = %d)", nhalo);
        });
        const std::vector<int64_t> d = values(ag, ag.ok() ? ndim : 0, dims, int64_t{0}, "dims");
        const std::vector<int> g = values(ag, grid && ag.ok() ? ndim : 0, grid, 0, "grid");
        const std::vector<int64_t> h = values(ag, ag.ok() ? nhalo : 0, halo, int64_t{0}, "halo");
        return ops::halo(ag, c, enum_value(dtype), d, g, h);
    });
}

}  // extern "C"
