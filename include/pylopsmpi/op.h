/**
 * @file pylopsmpi/op.h
 * @brief plm_op_t: local blocks, distributed stacks, composites, user operators, queries, applies and the dot test.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_OP_H
#define PYLOPSMPI_OP_H

#include "stacked.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_op Linear operators
 *  @brief plm_op_t: local blocks, distributed stacks, composites, user operators, queries, applies and the dot test.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Linear operators                                                                           */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_op_s *plm_op_t;                         /**< linear operator */
typedef const struct plm_op_s *plm_const_op_t;             /**< linear operator, read-only */

/*
 * Two kinds of plm_op_t. A **local** operator (dense, diagonal, identity, zero, callback) is a
 * matrix on local buffers; it is a building block, applied by the distributed operators that
 * hold it. A **distributed** operator (block-diagonal, vertical or horizontal stack) maps
 * arrays on its domain layout to arrays on its range layout (1-D vectors, as in PyLops-MPI).
 * Composites (adjoint, scale, sum, product) combine two of the same kind. Operators are
 * immutable; a stack or composite keeps its parts alive, so a part's handle may be destroyed
 * at once. Every handle is released with plm_op_destroy().
 */

/** Dense rows x cols local matrix of dtype: y = A x through CBLAS gemv.
 *  @param[in]  dtype     element type
 *  @param[in]  rows      number of rows
 *  @param[in]  cols      number of columns
 *  @param[in]  a         rows x cols elements, host memory, row-major (col_major = 0) or
 *                        column-major \mem{host}
 *  @param[in]  a_bytes   must equal rows * cols * plm_dtype_size(dtype)
 *  @param[in]  col_major 0: a is row-major; 1: column-major
 *  @param[in]  wrap      0: copy a; 1: use a in place (it must outlive the operator)
 *  @param[out] out       new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_dense(plm_dtype_t dtype, int64_t rows, int64_t cols, const void *a, int64_t a_bytes,
                                  int col_major, int wrap, plm_op_t *out);
/** n x n local diagonal matrix.
 *  @param[in]  dtype   element type
 *  @param[in]  n       size of the matrix
 *  @param[in]  d       n elements, host memory, copied \mem{host}
 *  @param[in]  d_bytes must equal n * plm_dtype_size(dtype)
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_diagonal(plm_dtype_t dtype, int64_t n, const void *d, int64_t d_bytes, plm_op_t *out);
/** n x n local identity.
 *  @param[in]  dtype element type
 *  @param[in]  n     size of the matrix
 *  @param[out] out   new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_identity(plm_dtype_t dtype, int64_t n, plm_op_t *out);
/** rows x cols local zero matrix.
 *  @param[in]  dtype element type
 *  @param[in]  rows  number of rows
 *  @param[in]  cols  number of columns
 *  @param[out] out   new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_zero(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_t *out);

/**
 * A user function of a callback operator: out (n_out elements) = A in (n_in elements) for
 * matvec, A^H in for rmatvec; buffers of dtype in **host memory** (memory is always
 * PLM_MEMORY_HOST), not overlapping. Return 0 on success; anything else makes the apply fail
 * with PLM_ERR_CALLBACK on every rank (never a hang). Applied to device arrays, the library
 * copies the data to host buffers and back around each call (host twins; plm_op_native()
 * says 0 for device memory).
 *
 * The return value is the only way a failure reaches the library, for this and every other
 * callback type of the API. A callback written in a language with exceptions must catch them
 * and return non-zero: a Python ctypes callback that raises returns an undefined value to C
 * (often 0, so the apply "succeeds" with whatever out holds: a silent wrong result). cffi
 * callbacks made with error=1 (ffi.callback(..., error=1), or ffi.def_extern(error=1) as a
 * decorator) return 1 on an exception, and the Python package pylopsmpi turns one into a
 * CallbackError on every rank.
 */
typedef int (*plm_op_fn)(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                         plm_memory_t memory);
/** rows x cols local operator defined by user functions.
 *  @param[in]  dtype   element type
 *  @param[in]  rows    number of rows
 *  @param[in]  cols    number of columns
 *  @param[in]  matvec  out = A in; may be NULL (applying it then gives PLM_ERR_NOT_SUPPORTED)
 *  @param[in]  rmatvec out = A^H in; may be NULL (likewise)
 *  @param[in]  ctx     passed to matvec, rmatvec and destroy; the operator takes it. If this
 *                      call fails, ctx stays the caller's. \opaque
 *  @param[in]  destroy destroy(ctx) runs when the operator goes; may be NULL
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_callback(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_fn matvec,
                                     plm_op_fn rmatvec, void *ctx, void (*destroy)(void *ctx), plm_op_t *out);

/**
 * A user function of a device callback operator: out = A in (matvec) or A^H in (rmatvec), where
 * in and out are **CUDA device memory** on the communicator's device (the current device when
 * it is called), and stream is the cudaStream_t to queue the work on (kernels, cuBLAS calls:
 * set your handle's stream to it). The library orders the surrounding work on that stream, so
 * the function may return before its work is done. Return 0 on success (a launch error is
 * the function's to report); anything else fails the apply with PLM_ERR_CALLBACK on every rank.
 */
typedef int (*plm_op_device_fn)(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                                void *stream);
/**
 * rows x cols local operator defined by device functions (either may be NULL). On device
 * arrays it runs with no copy of the data; on host arrays the library copies the data to device
 * buffers around each call (so it needs a CUDA device). Otherwise as plm_op_callback().
 * Available in every build (without CUDA, applying it gives PLM_ERR_BACKEND_UNAVAILABLE).
 * @param[in]  dtype   element type
 * @param[in]  rows    number of rows
 * @param[in]  cols    number of columns
 * @param[in]  matvec  out = A in; may be NULL
 * @param[in]  rmatvec out = A^H in; may be NULL
 * @param[in]  ctx     as in plm_op_callback() \opaque
 * @param[in]  destroy as in plm_op_callback(); may be NULL
 * @param[out] out     new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_callback_device(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_device_fn matvec,
                                            plm_op_device_fn rmatvec, void *ctx, void (*destroy)(void *ctx),
                                            plm_op_t *out);

/* ---- User-defined operators ----------------------------------------------------------------- */

/**
 * A user function of a shell operator: y = A x (matvec) or x = A^H y (rmatvec, called with the
 * range array as x and the domain array as y). x and y are whole distributed arrays, lent for
 * the call only (never destroy them or keep them past it), in the memory space of the operands
 * of the apply. The function runs on **every rank of the operator's communicator**, so it may
 * call any collective of this library on those arrays or on arrays on the same communicator
 * (plm_array_dot, plm_array_norm, plm_op_apply, ...), provided every rank makes the same
 * collective calls in the same order. A rank that fails must not skip a collective the others
 * enter (that hangs): it carries on with the same collective calls (or none, on every rank),
 * and reports its failure by returning non-zero. The library agrees after the function
 * returns: a non-zero return on any rank fails the apply with PLM_ERR_CALLBACK on every rank,
 * the message naming the failing rank. Errors of the library calls it makes are agreed by
 * those calls themselves, so every rank sees them alike.
 */
typedef int (*plm_op_shell_fn)(void *ctx, plm_const_array_t x, plm_array_t y);
/** A distributed operator defined by user functions on whole distributed arrays (the
 *  equivalent of subclassing PyLops-MPI's MPILinearOperator). It composes like any distributed
 *  operator (plm_op_sum, plm_op_product, plm_op_scale, plm_op_adjoint, plm_op_transpose,
 *  plm_op_conj) and runs in every solver. Applies agree on the functions' outcome (see
 *  plm_op_shell_fn).
 *  @param[in]  domain  layout of x (borrowed; the operator keeps its own reference)
 *  @param[in]  range   layout of y = A x, on the communicator of domain (borrowed)
 *  @param[in]  dtype   element type of x and y
 *  @param[in]  matvec  y = A x; may be NULL (applying it then gives PLM_ERR_NOT_SUPPORTED)
 *  @param[in]  rmatvec x = A^H y; may be NULL (likewise); not both NULL
 *  @param[in]  ctx     passed to matvec, rmatvec and destroy; the operator takes it. If this
 *                      call fails, ctx stays the caller's. \opaque
 *  @param[in]  destroy destroy(ctx) runs when the operator goes; may be NULL
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_shell(plm_layout_t domain, plm_layout_t range, plm_dtype_t dtype, plm_op_shell_fn matvec,
                                  plm_op_shell_fn rmatvec, void *ctx, void (*destroy)(void *ctx), plm_op_t *out);

/**
 * Block-diagonal operator (PyLops-MPI's MPIBlockDiag): each rank gives its own diagonal blocks
 * (n local operators, one dtype on every rank). A rank may give none (n = 0, ops may be NULL):
 * it holds no part of x or y; at least one rank must give one (else PLM_ERR_INVALID_ARG on
 * every rank, as when ranks' dtypes differ). Domain and range are 1-D SCATTER arrays whose
 * local sizes are this rank's column and row sums; the mask (optional, as in arrays) is put
 * on both, so reductions in solvers run per group. Applying it needs no communication.
 * @param[in]  comm  communicator
 * @param[in]  n     number of this rank's blocks, >= 0
 * @param[in]  ops   n local operators (NULL when n is 0) \len{n}
 * @param[in]  nmask 0 (with mask NULL) for no mask, else the comm size
 * @param[in]  mask  nmask group ids, as in plm_array_create_ex() \len{nmask}
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_blockdiag(plm_comm_t comm, int n, const plm_const_op_t *ops, int nmask, const int *mask,
                                      plm_op_t *out);
/**
 * Vertical stack (MPIVStack): each rank's n local operators, all with the same columns on
 * every rank, stacked. Domain: 1-D BROADCAST of that length; range: 1-D SCATTER with this
 * rank's row sum. The adjoint reduces over the ranks with one in-place allreduce. A rank may
 * give none (n = 0: no rows of y there); at least one rank must give one.
 * @param[in]  comm communicator
 * @param[in]  n    number of this rank's operators, >= 0
 * @param[in]  ops  n local operators (NULL when n is 0) \len{n}
 * @param[out] out  new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_vstack(plm_comm_t comm, int n, const plm_const_op_t *ops, plm_op_t *out);
/** Horizontal stack (MPIHStack): parts with the same rows on every rank; domain 1-D SCATTER
 *  (column sums), range 1-D BROADCAST; the forward reduces over the ranks. A rank may give
 *  none (n = 0: no columns of x there); at least one rank must give one.
 *  @param[in]  comm communicator
 *  @param[in]  n    number of this rank's operators, >= 0
 *  @param[in]  ops  n local operators (NULL when n is 0) \len{n}
 *  @param[out] out  new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{comm} */
PLM_API plm_status_t plm_op_hstack(plm_comm_t comm, int n, const plm_const_op_t *ops, plm_op_t *out);

/**
 * Stacked operators (PyLops-MPI's MPIStackedBlockDiag / MPIStackedVStack) map stacks of arrays
 * (plm_stacked_t) to stacks; their parts are distributed operators of one dtype on
 * communicators of one size. Apply them with plm_op_apply_stacked() and solve with the
 * *_stacked solvers; a single array is passed as a stack of one member.
 * - stacked block-diagonal: member i of the input through part i into member i of the output;
 * - stacked vstack: one array (the parts share their domain) into a stack of each part's
 *   output; the adjoint sums the parts' adjoints.
 * A part may itself be stacked (a stacked vstack's parts must each take one array): its
 * members join the stack in place, so stacks of stacks are flat. [Op; s Grad] (Grad =
 * plm_op_gradient()) maps x to [Op x, s D_0 x, ..., s D_{n-1} x].
 * Every composite (adjoint, scale, sum, difference, product, transpose, conj, power) takes
 * stacked operators wherever the members agree: sum and difference need the same domain and
 * range members (each member's layout equal), a product A B needs B's range members to be A's
 * domain members, a power the domain members to be the range members; a composite with a
 * stacked operand is stacked, with the members that follow (A B: B's domain, A's range).
 * Otherwise PLM_ERR_SIZE_MISMATCH.
 *
 * This one is the stacked block-diagonal.
 * @param[in]  n   number of parts
 * @param[in]  ops n distributed operators \len{n}
 * @param[out] out new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_stacked_blockdiag(int n, const plm_const_op_t *ops, plm_op_t *out);
/** Stacked vstack (MPIStackedVStack): one array (the parts share their domain) into a stack
 *  of each part's output; see plm_op_stacked_blockdiag().
 *  @param[in]  n   number of parts
 *  @param[in]  ops n distributed operators \len{n}
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_stacked_vstack(int n, const plm_const_op_t *ops, plm_op_t *out);
/** Number of members of the domain and range (1 and 1 for a plain distributed operator).
 *  @param[in]  op       the operator
 *  @param[out] n_domain members of the domain
 *  @param[out] n_range  members of the range
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_parts(plm_const_op_t op, int *n_domain, int *n_range);
/** Layout of member i of the domain.
 *  @param[in]  op     the operator
 *  @param[in]  i      0..n_domain-1 (plm_op_parts())
 *  @param[out] layout new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_domain_part(plm_const_op_t op, int i, plm_layout_t *layout);
/** Layout of member i of the range.
 *  @param[in]  op     the operator
 *  @param[in]  i      0..n_range-1 (plm_op_parts())
 *  @param[out] layout new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_range_part(plm_const_op_t op, int i, plm_layout_t *layout);

/* Composites: both operators local, or both distributed (plain or stacked: see
 * plm_op_stacked_blockdiag() for the rules on members). Not collective. */
/** A^H.
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_adjoint(plm_const_op_t a, plm_op_t *out);
/** alpha A (adjoint: conj(alpha) A^H). An imaginary part for a real dtype is PLM_ERR_INVALID_ARG.
 *  @param[in]  a   the operator A
 *  @param[in]  alpha_re real part of alpha
 *  @param[in]  alpha_im imaginary part of alpha
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_scale(plm_const_op_t a, double alpha_re, double alpha_im, plm_op_t *out);
/** A + B (same shape, or the same domain and range members).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_sum(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);
/** A - B (same shape, or the same domain and range members).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_difference(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);
/** A B (B first; B's range members are A's domain members).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_product(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);

/** A^T = conj(A^H conj(.)) (A^H for real dtypes).
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_transpose(plm_const_op_t a, plm_op_t *out);
/** conj(A) = conj(A conj(.)) (A for real dtypes).
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_conj(plm_const_op_t a, plm_op_t *out);
/** A^p for a square A (domain members == range members) and p >= 0; p = 0 is the identity.
 *  @param[in]  a   the operator A
 *  @param[in]  p   the power, >= 0
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_power(plm_const_op_t a, int p, plm_op_t *out);

/**
 * The same local operator on every rank as a distributed operator on BROADCAST vectors
 * (PyLops-MPI's MPILinearOperator / asmpilinearoperator): domain and range are 1-D BROADCAST
 * of its columns and rows, and each rank computes the whole result. Its shape and dtype must
 * be equal on every rank.
 * @param[in]  comm  communicator
 * @param[in]  local the local operator (the result keeps it alive)
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_broadcast(plm_comm_t comm, plm_const_op_t local, plm_op_t *out);

/** Release an operator handle. Parts held by composites live on.
 *  @param[in,out] op address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_destroy(plm_op_t *op);
/** Local: the matrix shape. Distributed: the global sizes of range (rows) and domain (cols).
 *  @param[in]  op   the operator
 *  @param[out] rows number of rows
 *  @param[out] cols number of columns
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_shape(plm_const_op_t op, int64_t *rows, int64_t *cols);
/** Element type of the operator.
 *  @param[in]  op    the operator
 *  @param[out] dtype the element type
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_dtype(plm_const_op_t op, plm_dtype_t *dtype);
/** Whether op is a local building block or a distributed operator.
 *  @param[in]  op       the operator
 *  @param[out] is_local 1 for a local building block, 0 for a distributed operator
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_is_local(plm_const_op_t op, int *is_local);
/** Whether op is linear over the complex numbers (PyLops' clinear): 1 for every operator but
 *  the real-input FFTs (plm_op_fftnd() with real = 1 or a real dtype: linear over the reals
 *  only, as they keep the real part of their model) and composites or stacks holding one.
 *  @param[in]  op      the operator
 *  @param[out] clinear 1 or 0
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_clinear(plm_const_op_t op, int *clinear);
/**
 * Whether applying op to arrays in `memory` computes there with no host copy of the data
 * (*native = 1): every operator of the library does, on host and device memory alike, except
 * on device memory NonStationaryConvolve1D (host arrays only); otherwise only a
 * callback operator declared for the other memory space
 * (plm_op_callback() on device arrays, plm_op_callback_device() on host arrays), or a composite
 * holding one, stages its data (*native = 0).
 * @param[in]  op     the operator
 * @param[in]  memory memory space of the arrays
 * @param[out] native 1 or 0
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_native(plm_const_op_t op, plm_memory_t memory, int *native);
/* plm_op_domain(), plm_op_range(): the layouts of x and of y = Op x. */
/** The layout of x in y = Op x; make arrays on it with plm_array_create_from_layout().
 *  Plain distributed operators only (stacked ones: plm_op_domain_part()).
 *  @param[in]  op     the operator
 *  @param[out] domain new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_domain(plm_const_op_t op, plm_layout_t *domain);
/** The layout of y in y = Op x; make arrays on it with plm_array_create_from_layout().
 *  Plain distributed operators only (stacked ones: plm_op_range_part()).
 *  @param[in]  op    the operator
 *  @param[out] range new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_range(plm_const_op_t op, plm_layout_t *range);

/** New array of the operator's dtype on its domain (uninitialised).
 *  @param[in]  op     the operator
 *  @param[in]  memory memory space of the array
 *  @param[out] x      new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_new_domain_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *x);
/** New array of the operator's dtype on its range (uninitialised).
 *  @param[in]  op     the operator
 *  @param[in]  memory memory space of the array
 *  @param[out] y      new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_new_range_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *y);

/**
 * y = Op x: x on the domain, y on the range (layouts checked in O(1): made from them, or equal
 * splits; PLM_ERR_SIZE_MISMATCH otherwise), different arrays. Dtypes follow NumPy's promotion
 * (plm_dtype_promote()), as PyLops' operators do: y's dtype must be the promotion of the
 * operator's and x's (PLM_ERR_DTYPE_MISMATCH otherwise). x of the operator's dtype is applied
 * as it is; a narrower x (float32 on a float64 operator, real data on a complex one) is widened
 * into scratch first; complex data on a real operator of the same precision (complex128, or
 * complex64 widened, on a float64 operator) gives the complex y = Op re(x) + i Op im(x), two
 * applies (a real result would have lost the imaginary part). An operator never computes in
 * another precision than its own: float64 data on a float32 operator (or complex128 on a
 * float32 or complex64 one) is PLM_ERR_DTYPE_MISMATCH - make the operator in the wider dtype.
 * Every rank must pass the same dtypes (an agreed error otherwise). The apply
 * runs where the arrays are: host memory, or CUDA device memory (kernels, cuBLAS and the
 * communicator's device backend, all on the communicator's stream; see plm_op_native()). Its
 * scratch is made at the first apply in a memory space and reused by the next ones of the
 * same handle (another thread applying at the same time gets its own). Arrays in a mix of
 * host and device memory: the device ones are copied to host twins and back.
 * @param[in]  op the operator
 * @param[in]  x  array on the domain
 * @param[out] y  array on the range; receives Op x
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_op_apply(plm_const_op_t op, plm_const_array_t x, plm_array_t y);
/** x = Op^H y: y on the range, x on the domain (as plm_op_apply()).
 *  @param[in]  op the operator
 *  @param[in]  y  array on the range
 *  @param[out] x  array on the domain; receives Op^H y
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_adjoint(plm_const_op_t op, plm_const_array_t y, plm_array_t x);
/** plm_op_apply() on stacks: member i of x on domain part i, of y on range part i (any
 *  distributed operator; a plain one takes stacks of one member). The members of x share one
 *  dtype, those of y its promotion with the operator's (as plm_op_apply()).
 *  @param[in]  op the operator
 *  @param[in]  x  stack on the domain
 *  @param[out] y  stack on the range; receives Op x
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_stacked(plm_const_op_t op, plm_const_stacked_t x, plm_stacked_t y);
/** plm_op_apply_adjoint() on stacks: member i of y on range part i, of x on domain part i.
 *  @param[in]  op the operator
 *  @param[in]  y  stack on the range
 *  @param[out] x  stack on the domain; receives Op^H y
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_adjoint_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x);

/**
 * Dot test: with u on the domain and v on the range filled with pseudo-random values (the
 * same for every rank count; on a masked layout by index within the mask group, so data
 * replicated across groups are equal), compares yy = (Op u)^H v with xx = u^H (Op^H v);
 * *passed = |xx - yy| <= rtol max(|xx|, |yy|). An operator linear over the reals only
 * (plm_op_clinear() gives 0) is tested as PyLops' dottest does: complex vectors as vectors of
 * real pairs, yy = Re((Op u)^H v) and xx = Re(u^H (Op^H v)) (imaginary parts reported 0).
 * @param[in]  op     the operator
 * @param[in]  rtol   relative tolerance
 * @param[out] passed 1 or 0
 * @param[out] yy     (Op u)^H v as two doubles (re, im); may be NULL \len{2}
 * @param[out] xx     u^H (Op^H v) as two doubles (re, im); may be NULL \len{2}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_op_dottest(plm_const_op_t op, double rtol, int *passed, double *yy, double *xx);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_OP_H */
