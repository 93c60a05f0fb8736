/**
 * @file pylopsmpi/array.h
 * @brief plm_array_t: arrays on a layout, their local data, element-wise math, reductions and layout changes.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_ARRAY_H
#define PYLOPSMPI_ARRAY_H

#include "layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_array Distributed arrays
 *  @brief plm_array_t: arrays on a layout, their local data, element-wise math, reductions and layout changes.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Distributed arrays                                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_array_s *plm_array_t;                   /**< distributed array */
typedef const struct plm_array_s *plm_const_array_t;       /**< distributed array, read-only */

/**
 * New array on a layout, uninitialised. Not collective because the layout was agreed on when
 * it was made: an error here is the caller's alone.
 * @param[in] layout     the layout (the array keeps a reference)
 * @param[in] dtype      element type
 * @param[in] memory     memory space of the local data
 * @param[in] user_data  NULL to allocate, or the caller's memory in `memory` as in
 *                       plm_array_create_ex() \mem{memory} \len{user_bytes}
 * @param[in] user_bytes 0 with user_data NULL; else it must equal the local size *
 *                       plm_dtype_size(dtype) (PLM_ERR_INVALID_ARG otherwise)
 * @param[out] out       new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_create_from_layout(plm_const_layout_t layout, plm_dtype_t dtype, plm_memory_t memory,
                                                  void *user_data, int64_t user_bytes, plm_array_t *out);

/** The array's layout as a new handle. Arrays made by *_like, duplicate and
 *  plm_array_create_from_layout share it.
 *  @param[in]  x      the array
 *  @param[out] layout new handle holding one reference; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_layout(plm_const_array_t x, plm_layout_t *layout);

/**
 * Create an array with the default layout: along `axis`, rank r of P gets n/P + 1 entries if
 * r < n % P, else n/P. Data are uninitialised.
 * @param[in]  comm         communicator (the array keeps a reference)
 * @param[in]  ndim         1..PLM_MAX_NDIM
 * @param[in]  global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in]  axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in]  partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in]  dtype        element type
 * @param[in]  memory       PLM_MEMORY_HOST, or PLM_MEMORY_DEVICE (PLM_ERR_BACKEND_UNAVAILABLE
 *                          without CUDA or a visible device: plm_memory_available())
 * @param[out] out          new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_array_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                      plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                      plm_array_t *out);

/**
 * plm_array_create() with every option. A global shape whose element or byte count overflows
 * 64 bits is PLM_ERR_INVALID_ARG.
 * @param[in] comm         communicator (the array keeps a reference)
 * @param[in] ndim         1..PLM_MAX_NDIM
 * @param[in] global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in] axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in] partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in] dtype        element type
 * @param[in] memory       memory space of the local data
 * @param[in] nlocal       number of rows in local_shapes: 0 (with local_shapes NULL) for the
 *                         default split, else the comm size
 * @param[in] local_shapes nlocal x ndim extents, rank-major: rank r's local shape. Only the
 *                         caller's row is used on each rank; the rows must together give the
 *                         global shape (SCATTER: axis extents sum to it, other extents equal;
 *                         BROADCAST kinds: every row equals it). \len{nlocal*ndim}
 * @param[in] nmask        0 (with mask NULL) for no mask, else the comm size
 * @param[in] mask         nmask non-negative group ids, one per rank: dot, norm and masked
 *                         asarray reduce over the ranks of the caller's group \len{nmask}
 * @param[in] user_data    NULL to allocate, or the caller's memory of the local size in
 *                         `memory`, wrapped without copy, aligned for the dtype's real type
 *                         (PLM_ERR_INVALID_ARG otherwise); it must outlive the array and every
 *                         stack holding it. With BROADCAST the wrapped data are not made equal
 *                         at create: write them through get/restore_local_write. \mem{memory}
 *                         \len{user_bytes}
 * @param[in] user_bytes   0 with user_data NULL; else it must equal this rank's local size *
 *                         plm_dtype_size(dtype) (a rank passing another makes every rank
 *                         return PLM_ERR_INVALID_ARG)
 * @param[out] out         new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_array_create_ex(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                         plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                         int nlocal, const int64_t *local_shapes, int nmask, const int *mask,
                                         void *user_data, int64_t user_bytes, plm_array_t *out);

/** Destroy an array (and free its data unless wrapped).
 *  @param[in,out] array address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_destroy(plm_array_t *array);

/** New array with the layout (shapes, axis, partition, mask, dtype, memory) of x, all zeros.
 *  Unlike PyLops-MPI's zeros_like, the mask is kept.
 *  @param[in]  x   the model array
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_zeros_like(plm_const_array_t x, plm_array_t *out);

/** New array with the layout of x, uninitialised.
 *  @param[in]  x   the model array
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_empty_like(plm_const_array_t x, plm_array_t *out);

/** New array with the layout and data of x (deep copy).
 *  @param[in]  x   the array to copy
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_duplicate(plm_const_array_t x, plm_array_t *out);

/* Queries: all not collective; shapes are cached at creation. Outputs are host memory the
 * caller owns, of the size given. Each returns PLM_SUCCESS, or an error status
 * (plm_last_error()). */

/** Number of dimensions.
 *  @param[in]  x    the array
 *  @param[out] ndim 1..PLM_MAX_NDIM
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_ndim(plm_const_array_t x, int *ndim);
/** Global shape.
 *  @param[in]  x     the array
 *  @param[out] shape ndim extents \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_global_shape(plm_const_array_t x, int64_t *shape);
/** The caller's local shape.
 *  @param[in]  x     the array
 *  @param[out] shape ndim extents of the caller's block \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_shape(plm_const_array_t x, int64_t *shape);
/** Every rank's local shape.
 *  @param[in]  x      the array
 *  @param[out] shapes size x ndim extents, rank-major \len{size*ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_shapes(plm_const_array_t x, int64_t *shapes);
/** Number of local elements.
 *  @param[in]  x the array
 *  @param[out] n elements of the caller's block
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_size(plm_const_array_t x, int64_t *n);
/** Offset of the caller's block.
 *  @param[in]  x      the array
 *  @param[out] offset global index along the distributed axis of the caller's first local
 *                     entry (0 unless SCATTER)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_offset(plm_const_array_t x, int64_t *offset);
/** The distributed axis.
 *  @param[in]  x    the array
 *  @param[out] axis the distributed axis, 0..ndim-1
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_axis(plm_const_array_t x, int *axis);
/** Partition.
 *  @param[in]  x         the array
 *  @param[out] partition the partition
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_partition(plm_const_array_t x, plm_partition_t *partition);
/** Element type.
 *  @param[in]  x     the array
 *  @param[out] dtype the element type
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_dtype(plm_const_array_t x, plm_dtype_t *dtype);
/** Memory space of the local data.
 *  @param[in]  x      the array
 *  @param[out] memory the memory space
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_memory(plm_const_array_t x, plm_memory_t *memory);
/** Mask: writes size group ids and *has_mask = 1, or *has_mask = 0 and nothing.
 *  @param[in]  x        the array
 *  @param[out] has_mask 1 or 0
 *  @param[out] mask     size group ids when has_mask (may be NULL) \len{size}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_mask(plm_const_array_t x, int *has_mask, int *mask);
/** Communicator of the array.
 *  @param[in]  x    the array
 *  @param[out] comm the communicator (borrowed: do not destroy; valid while x lives)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_get_comm(plm_const_array_t x, plm_comm_t *comm);

/**
 * Read access to the local data, C order, in the array's memory space. Pair with
 * plm_array_restore_local_read(). Device arrays: waits for the work queued on the
 * communicator's stream (plm_comm_get_stream()), so the data may be read on any stream or
 * copied to the host at once.
 * @param[in]  x    the array
 * @param[out] data the local data \mem{array}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_get_local_read(plm_const_array_t x, const void **data);
/** End read access.
 *  @param[in]     x    the array
 *  @param[in,out] data the pointer plm_array_get_local_read() gave; set to NULL \mem{array}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_restore_local_read(plm_const_array_t x, const void **data);
/** Write access to the local data. Pair with plm_array_restore_local_write(). Device arrays:
 *  waits for the communicator's stream as get_local_read does; finish your own writes (or
 *  queue them on that stream) before the restore.
 *  @param[in]  x    the array
 *  @param[out] data the local data \mem{array}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_get_local_write(plm_array_t x, void **data);
/**
 * End write access. For BROADCAST arrays rank 0's data are broadcast so that all ranks agree
 * (the only re-broadcast of BROADCAST data besides plm_array_fill and plm_array_set_global;
 * element-wise math stays local).
 * @param[in]     x    the array
 * @param[in,out] data the pointer plm_array_get_local_write() gave; set to NULL \mem{array}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collectivebroadcast{x}
 */
PLM_API plm_status_t plm_array_restore_local_write(plm_array_t x, void **data);

/* Element-wise math. Operands must share layout: partition, global and local shapes, axis
 * and mask (PLM_ERR_SIZE_MISMATCH), and live on communicators with the same ranks in the same
 * order (PLM_ERR_INVALID_ARG otherwise: two plm_comm_t made from the same MPI communicator
 * qualify, a reordered one does not). Outputs may alias inputs. Not collective: layouts are
 * known on every rank, so all ranks agree on any layout error.
 *
 * Dtypes follow NumPy's promotion (plm_dtype_promote()): add, sub and mul take operands of any
 * dtypes and write an output of exactly their promoted dtype (float32 + float64 into float64,
 * float64 * complex64 into complex128), computed as NumPy does, the narrower operand widened
 * first; copy and axpby widen x into y's dtype (float32 into float64, real into complex). An
 * output that would truncate the result (complex into real, float64 into float32: NumPy's
 * in-place `x += y` does that silently) is PLM_ERR_DTYPE_MISMATCH, as is a conj into another
 * dtype. Mixed operations allocate a widened copy of the narrower operand.
 *
 * Scalars cross the API as a real and an imaginary part (double, by value) whatever the
 * dtype: they are rounded to the dtype, and a non-zero (or NaN) imaginary part for a real
 * dtype is PLM_ERR_INVALID_ARG. They must be equal on all ranks (BROADCAST fill: rank 0's
 * value wins). */

/**
 * Set every element to value_re + i value_im. For BROADCAST, rank 0's value wins, and an
 * imaginary part for a real dtype on any rank fails all.
 * @param[in,out] x        the array
 * @param[in]     value_re real part
 * @param[in]     value_im imaginary part
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collectivebroadcast{x}
 */
PLM_API plm_status_t plm_array_fill(plm_array_t x, double value_re, double value_im);
/** y = x (same layout).
 *  @param[in]  x source
 *  @param[out] y destination
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_copy(plm_const_array_t x, plm_array_t y);
/** z = x + y.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_add(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** z = x - y.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_sub(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** z = x * y element-wise.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_mul(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** x = alpha * x.
 *  @param[in,out] x        the array
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_scale(plm_array_t x, double alpha_re, double alpha_im);
/** y = alpha * x + beta * y.
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @param[in]     x        the array scaled by alpha
 *  @param[in]     beta_re  real part of beta
 *  @param[in]     beta_im  imaginary part of beta
 *  @param[in,out] y        the array scaled by beta; receives the result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_axpby(double alpha_re, double alpha_im, plm_const_array_t x, double beta_re,
                                     double beta_im, plm_array_t y);
/** y = conj(x) (a copy for real dtypes).
 *  @param[in]  x source
 *  @param[out] y result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_conj(plm_const_array_t x, plm_array_t y);

/* Reductions: collective on the array's communicator. */

/**
 * Global dot product: sum x_i y_i (conjugate = 0, PyLops-MPI's dot) or sum conj(x_i) y_i
 * (conjugate = 1, vdot), in the promoted dtype of x and y (plm_dtype_promote(): a float32 and
 * a float64 array give the float64 dot; y's dtype must be equal on every rank), reduced over
 * the caller's mask group (the whole comm without a
 * mask). BROADCAST arrays reduce like their SCATTER twin: each rank contributes its slab of
 * the default split (along axis 0, over the whole communicator), so unmasked every element
 * counts once, and masked each group sums its own ranks' slabs (PyLops-MPI's dot: ones(4),
 * mask {0, 1} on 2 ranks gives 2 in each group, as the SCATTER array does). Every rank of the communicator takes
 * part, even with a mask: conjugate must be equal on every rank; y may be NULL on a rank (an
 * error on all). The ranks' partial sums are combined in double, in the one reduction that also
 * carries the agreement.
 * @param[in]  x         first operand
 * @param[in]  y         second operand
 * @param[in]  conjugate 0: sum x_i y_i; 1: sum conj(x_i) y_i
 * @param[out] re host memory; the real part, the same on every rank of the group
 * @param[out] im host memory; the imaginary part. May be NULL when both dtypes are real (it
 *                would be 0), must not be NULL when either is complex.
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_dot(plm_const_array_t x, plm_const_array_t y, int conjugate, double *re,
                                   double *im);

/**
 * Global vector norm of all elements, over the caller's mask group, as float64 (BROADCAST
 * arrays: over the group's slabs, as plm_array_dot(), so norm^2 = vdot(x, x) in each group;
 * PyLops-MPI's norm drops the mask of a BROADCAST array instead):
 * ord 2: sqrt(sum |x|^2); 1: sum |x|; INFINITY: max |x|; -INFINITY: min |x|;
 * 0: number of non-zeros; any other p: (sum |x|^p)^(1/p). NaN ord: PLM_ERR_INVALID_ARG.
 * NaN data give NaN on every rank of the group for every ord but 0 (also INFINITY and
 * -INFINITY); ord 0 counts a NaN as a non-zero, as numpy.count_nonzero does.
 * ord must be equal on every rank.
 * @param[in]  x      the array
 * @param[in]  ord    order of the norm
 * @param[out] result the norm, host memory
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_norm(plm_const_array_t x, double ord, double *result);

/**
 * Norm along one axis. The result has the global shape without `axis` (C order, n_out
 * elements, float64, in host memory) and is the same on every rank. Along the distributed axis the partial
 * norms are reduced over the mask group; along another axis each rank's block is computed
 * locally and gathered over the whole communicator (BROADCAST arrays: computed locally).
 * ord and axis must be equal on every rank.
 * @param[in]  x     the array
 * @param[in]  ord   order of the norm (as in plm_array_norm())
 * @param[in]  axis  the axis the norm runs along
 * @param[out] out   the norms, host memory \len{n_out}
 * @param[in]  n_out number of elements at out: the global element count without `axis`
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_norm_axis(plm_const_array_t x, double ord, int axis, double *out, int64_t n_out);

/* Layout changes: collective on the array's communicator. */

/**
 * Gather the global array on every rank into out (C order). masked = 1 gathers only the
 * caller's mask group, in group rank order (its global shape along the axis is the group's
 * sum). BROADCAST kinds copy locally.
 * Every rank of the communicator takes part, also when masked: masked must be equal on every
 * rank.
 * @param[in]  x         the array
 * @param[in]  masked    1: gather the caller's mask group only; 0: the whole array
 * @param[out] out       the gathered elements, in the array's memory space (may be NULL when
 *                       there are none) \mem{array}
 * @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the global element count (the
 *                       group's with masked = 1)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_asarray(plm_const_array_t x, int masked, void *out, int64_t out_bytes);

/**
 * Set the array from a global array `global` (global shape, C order, in the array's memory
 * space) that every rank holds: each rank copies its block (PyLops-MPI's to_dist).
 * BROADCAST: rank 0's copy wins. For data that only one rank holds, use
 * plm_array_scatter_from().
 * @param[in,out] x            the array
 * @param[in]     global       the global array, in the array's memory space, on every rank (may be
 *                             NULL when it has no elements)
 *                             \mem{array}
 * @param[in]     global_bytes must equal N * plm_dtype_size(dtype), N the global element
 *                             count, on every rank
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_set_global(plm_array_t x, const void *global, int64_t global_bytes);

/**
 * Gather the global array (global shape, C order) on `root` only - PETSc's scatter-to-zero -
 * so no other rank holds more than its block. Point-to-point to the root through the
 * communication layer. BROADCAST kinds: the root copies its own data.
 * root must be equal on every rank.
 * @param[in]  x         the array
 * @param[in]  root      0..size-1
 * @param[out] out       on root: the global array in **host memory** (also for device
 *                       arrays); ignored elsewhere (may be NULL) \mem{host}
 * @param[in]  out_bytes on root: must equal N * plm_dtype_size(dtype), N the global element
 *                       count (PLM_ERR_INVALID_ARG on every rank otherwise); ignored elsewhere
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_gather_to(plm_const_array_t x, int root, void *out, int64_t out_bytes);

/**
 * Set the array from a global array (global shape, C order) that only `root` holds: each
 * rank receives its block from the root. BROADCAST kinds: the root's array is broadcast.
 * root must be equal on every rank.
 * @param[in,out] x            the array
 * @param[in]     root         0..size-1
 * @param[in]     global       on root: the global array in **host memory** (also for device
 *                             arrays); ignored elsewhere (may be NULL) \mem{host}
 * @param[in]     global_bytes on root: must equal N * plm_dtype_size(dtype), N the global
 *                             element count (PLM_ERR_INVALID_ARG on every rank otherwise);
 *                             ignored elsewhere
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_scatter_from(plm_array_t x, int root, const void *global, int64_t global_bytes);

/**
 * Shape of the block plm_array_add_ghost_cells() returns: the local shape with the axis
 * extent grown by `before` (except on rank 0) and `after` (except on the last rank).
 * @param[in]  x      the array
 * @param[in]  before slices taken from the previous rank
 * @param[in]  after  slices taken from the next rank
 * @param[out] shape  ndim extents of the block \len{ndim}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_ghost_shape(plm_const_array_t x, int64_t before, int64_t after, int64_t *shape);

/**
 * Local block with halos along the distributed axis: the last `before` slices of the previous
 * rank, the local data, then the first `after` slices of the next rank (each rank passes its
 * own counts). SCATTER arrays only. A rank asked for more slices than it holds makes every
 * rank return PLM_ERR_SIZE_MISMATCH (each rank checks its own counts against its
 * neighbours' blocks; only the counts themselves travel, to the two neighbours).
 * @param[in]  x         the array
 * @param[in]  before    slices from the previous rank
 * @param[in]  after     slices from the next rank
 * @param[out] out       the block laid out as plm_array_ghost_shape() says, in the array's
 *                       memory space \mem{array}
 * @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the ghost shape's element count
 *                       (this rank's own; PLM_ERR_INVALID_ARG on every rank otherwise)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_add_ghost_cells(plm_const_array_t x, int64_t before, int64_t after, void *out,
                                               int64_t out_bytes);

/**
 * New array with x's data distributed along another axis with the default split (one
 * all-to-all exchange). Same axis or a BROADCAST kind: a copy. Mask, dtype kept. axis must
 * be equal on every rank. The exchange's plan (counts, blocks, one scratch buffer of at most
 * x's local size, and the data buffer of the last array it returned, once that array is
 * destroyed) is made by the first call for an (axis, dtype, memory) and kept with x's layout
 * (up to 4 plans, freed with the layout), so a later call on arrays of that layout whose last
 * result is gone allocates no buffer; this rank's own block is copied from x to the new array
 * directly, and blocks that are contiguous in x (or in the new array) are sent (received)
 * without a copy.
 * @param[in]  x    the array
 * @param[in]  axis the new distributed axis
 * @param[out] out  new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_redistribute(plm_const_array_t x, int axis, plm_array_t *out);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_ARRAY_H */
