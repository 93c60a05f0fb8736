/**
 * @file pylopsmpi/stencil.h
 * @brief Derivatives, Laplacian, gradient and halo on arrays split along axis 0.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_STENCIL_H
#define PYLOPSMPI_STENCIL_H

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_stencil Stencil operators
 *  @brief Derivatives, Laplacian, gradient and halo on arrays split along axis 0.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Stencil operators: derivatives, Laplacian, gradient, halo                                  */
/* ------------------------------------------------------------------------------------------ */

/*
 * The model of a stencil operator is an N-D array of global shape dims[0..ndim-1] (C order)
 * distributed along axis 0 in blocks of whole rows, passed as a 1-D SCATTER vector: this
 * rank's local size is local_rows * dims[1] * ... * dims[ndim-1]. local_rows is this rank's
 * rows along axis 0 (they must sum to dims[0]; a rank may have none), or -1 on every rank
 * for the default split (as in arrays: the first dims[0] % P ranks get one extra row).
 * Domain and range are that layout. Along axis 0 a stencil takes the rows it needs from
 * whichever ranks hold them (one persistent exchange, overlapped with the interior); along
 * another axis it is local. Any block size works, including blocks thinner than the stencil
 * and empty blocks.
 */

/** Finite-difference kinds (PyLops' kind="forward" / "backward" / "centered"). */
typedef enum plm_deriv_kind {
    PLM_DERIV_FORWARD = 0,  /**< forward differences */
    PLM_DERIV_BACKWARD = 1, /**< backward differences */
    PLM_DERIV_CENTERED = 2, /**< centered differences */
    PLM_DERIV_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_deriv_kind_t;

/**
 * First derivative along `axis` (negative counts from the end) of the model above
 * (PyLops-MPI's MPIFirstDerivative, extended to any axis), divided by `sampling`:
 * - forward  y[i] = x[i+1] - x[i]; the last row is 0;
 * - backward y[i] = x[i] - x[i-1]; the first row is 0;
 * - centered order 3: (x[i+1] - x[i-1]) / 2, order 5: (x[i-2] - 8x[i-1] + 8x[i+1] - x[i+2]) / 12;
 *   the end rows (1 or 2 per side) are 0, or with `edge` one-sided differences (order 3:
 *   y[0] = x[1] - x[0]; order 5 also y[1] = (x[2] - x[0]) / 2, and mirrored at the end).
 * order is 3 or 5 for centered, and ignored (pass 3) otherwise; edge is used by centered only.
 * The adjoint is the exact transpose. dtype: any of the four.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis (negative counts from the end)
 * @param[in]  sampling   sampling step
 * @param[in]  kind       forward, backward or centered
 * @param[in]  order      3 or 5 for centered; ignored (pass 3) otherwise
 * @param[in]  edge       1: one-sided differences at the ends (centered only); 0: zero rows
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_first_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                             int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                             int order, int edge, plm_op_t *out);
/**
 * Second derivative along `axis` (MPISecondDerivative), divided by sampling^2:
 * forward x[i+2] - 2x[i+1] + x[i] (last two rows 0), backward x[i] - 2x[i-1] + x[i-2]
 * (first two rows 0), centered x[i+1] - 2x[i] + x[i-1] (end rows 0, or with edge
 * y[0] = x[0] - 2x[1] + x[2] and its mirror).
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis (negative counts from the end)
 * @param[in]  sampling   sampling step
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       1: the edge rows above (centered only); 0: zero rows
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_second_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                              int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                              int edge, plm_op_t *out);
/**
 * Laplacian (MPILaplacian): sum over k of weights[k] * second derivative along axes[k] with
 * sampling[k]. axes: naxes distinct axes (negative count from the end); weights and sampling
 * may be NULL (all 1). Applied in one operator: the axis-0 term writes y, the others add to
 * it in the order of axes. Any ndim works as long as axis 0, each other axis in axes and each
 * run of consecutive axes not in axes add up to at most PLM_MAX_NDIM (else
 * PLM_ERR_INVALID_ARG).
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  naxes      number of axes
 * @param[in]  axes       naxes distinct axes \len{naxes}
 * @param[in]  weights    naxes weights, or NULL (all 1) \len{naxes}
 * @param[in]  sampling   naxes sampling steps, or NULL (all 1) \len{naxes}
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       as in plm_op_second_derivative()
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_laplacian(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                      int64_t local_rows, int naxes, const int *axes, const double *weights,
                                      const double *sampling, plm_deriv_kind_t kind, int edge, plm_op_t *out);
/**
 * Gradient (MPIGradient): a stacked operator (stacked vstack) from the model to a stack of
 * ndim members, member i the first derivative along axis i with sampling[i] (sampling may be
 * NULL: all 1; kind and edge as above, order 3). Its adjoint sums the members' adjoints.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  sampling   ndim sampling steps, or NULL (all 1) \len{ndim}
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       as in plm_op_first_derivative()
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_gradient(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                     int64_t local_rows, const double *sampling, plm_deriv_kind_t kind, int edge,
                                     plm_op_t *out);
/**
 * Halo operator (MPIHalo) on an N-D process grid. The global array (dims, C order) is cut
 * into grid[0] x ... x grid[ndim-1] blocks (grid NULL: all ranks on the last axis; the
 * product must be the rank count); rank r is the block at the row-major grid coordinate of r.
 * Along an axis of g points on p ranks, coordinate c covers [min(g, c b), min(g, (c+1) b))
 * with b = ceil(g / p). Domain: 1-D SCATTER of the blocks (C order inside each); range: 1-D
 * SCATTER of the blocks grown by the halo widths, whose ghost cells are filled from the
 * neighbours (axis by axis, so edges and corners too) and zero where there is none.
 * halo (this rank's widths, >= 0): nhalo = 1, one width for every side but 0 on sides at
 * the grid boundary; nhalo = ndim, per axis (both sides); nhalo = 2 ndim, (minus, plus) per
 * axis. Sides facing a neighbour must agree (my plus width = the neighbour's minus width)
 * and not exceed this rank's block. The adjoint extracts the block (the core), as in
 * PyLops-MPI: it is a restriction, not the transpose of the exchange.
 * @param[in]  comm  communicator
 * @param[in]  dtype element type
 * @param[in]  ndim  number of dimensions
 * @param[in]  dims  global shape, C order \len{ndim}
 * @param[in]  grid  ndim ranks per axis, or NULL (all ranks on the last axis) \len{ndim}
 * @param[in]  nhalo 1, ndim or 2 ndim
 * @param[in]  halo  nhalo widths of this rank, >= 0 \len{nhalo}
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_halo(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, const int *grid,
                                 int nhalo, const int64_t *halo, plm_op_t *out);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_STENCIL_H */
