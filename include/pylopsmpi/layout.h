/**
 * @file pylopsmpi/layout.h
 * @brief plm_layout_t: how a global array is split over the ranks (partition, local shapes, mask).
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_LAYOUT_H
#define PYLOPSMPI_LAYOUT_H

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_layout Layouts
 *  @brief plm_layout_t: how a global array is split over the ranks (partition, local shapes, mask).
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Layouts                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/** How an array is laid out over the ranks of its communicator. */
typedef enum plm_partition {
    PLM_PARTITION_SCATTER = 0,         /**< each rank owns a block along the distributed axis */
    PLM_PARTITION_BROADCAST = 1,       /**< every rank holds all of it; writes follow rank 0 */
    PLM_PARTITION_UNSAFE_BROADCAST = 2, /**< every rank holds all of it; no consistency traffic */
    PLM_PARTITION_FORCE_INT32 = 0x7fffffff /**< not a partition: keeps the enum 32 bits wide */
} plm_partition_t;

typedef struct plm_layout_s *plm_layout_t;                 /**< how a global array is split over ranks */
typedef const struct plm_layout_s *plm_const_layout_t;     /**< layout, read-only */

/**
 * Create a layout: how an array of global_shape is split over comm's ranks along axis -
 * partition, local shapes and mask as in plm_array_create_ex(). A layout is immutable and
 * reference-counted: every array made from it (plm_array_create_from_layout()) or asked for
 * it (plm_array_layout()) shares it, queries need no communication, and operands with
 * the same layout object are checked in O(1). Operators describe their domain and range
 * with layouts. A mask's group communicator is made once per distinct mask and cached on
 * comm. Every argument but the caller's own local-shape row must be equal on every rank.
 * @param[in]  comm         communicator (the layout keeps a reference)
 * @param[in]  ndim         1..PLM_MAX_NDIM
 * @param[in]  global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in]  axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in]  partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in]  nlocal       as in plm_array_create_ex()
 * @param[in]  local_shapes as in plm_array_create_ex() \len{nlocal*ndim}
 * @param[in]  nmask        as in plm_array_create_ex()
 * @param[in]  mask         as in plm_array_create_ex() \len{nmask}
 * @param[out] out          new layout holding one reference; release it with plm_layout_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_layout_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                       plm_partition_t partition, int nlocal, const int64_t *local_shapes, int nmask,
                                       const int *mask, plm_layout_t *out);

/**
 * Add a reference to a layout handle (each needs its own plm_layout_destroy()).
 * @param[in] layout the layout
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_layout_retain(plm_layout_t layout);

/** Drop one reference and set *layout to NULL; arrays made from it keep the layout alive.
 *  NULL or *layout NULL: no-op.
 *  @param[in,out] layout address of the handle
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_destroy(plm_layout_t *layout);

/* Layout queries: host memory outputs, no communication; not collective. Each returns
 * PLM_SUCCESS, or an error status (plm_last_error()). */
/** Number of dimensions.
 *  @param[in]  layout the layout
 *  @param[out] ndim   1..PLM_MAX_NDIM
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_ndim(plm_const_layout_t layout, int *ndim);
/** Global shape.
 *  @param[in]  layout the layout
 *  @param[out] shape ndim extents \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_global_shape(plm_const_layout_t layout, int64_t *shape);
/** The caller's local shape.
 *  @param[in]  layout the layout
 *  @param[out] shape ndim extents of the caller's block \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_shape(plm_const_layout_t layout, int64_t *shape);
/** Every rank's local shape.
 *  @param[in]  layout the layout
 *  @param[out] shapes size x ndim extents, rank-major \len{size*ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_shapes(plm_const_layout_t layout, int64_t *shapes);
/** Number of local elements.
 *  @param[in]  layout the layout
 *  @param[out] n elements of the caller's block
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_size(plm_const_layout_t layout, int64_t *n);
/** Offset of the caller's block.
 *  @param[in]  layout the layout
 *  @param[out] offset global index along the axis of the caller's first entry (0 for BROADCAST kinds)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_offset(plm_const_layout_t layout, int64_t *offset);
/** The distributed axis.
 *  @param[in]  layout the layout
 *  @param[out] axis the distributed axis, 0..ndim-1
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_axis(plm_const_layout_t layout, int *axis);
/** Partition.
 *  @param[in]  layout    the layout
 *  @param[out] partition the partition
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_partition(plm_const_layout_t layout, plm_partition_t *partition);
/** Mask.
 *  @param[in]  layout   the layout
 *  @param[out] has_mask 1 or 0
 *  @param[out] mask     size group ids when has_mask (may be NULL) \len{size}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_mask(plm_const_layout_t layout, int *has_mask, int *mask);
/** The layout's communicator, lent: valid while the layout handle lives; never destroy it.
 *  @param[in]  layout the layout
 *  @param[out] comm   the communicator (borrowed)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_get_comm(plm_const_layout_t layout, plm_comm_t *comm);
/** *equal = 1 when a and b describe the same split (global shape, axis, partition, local
 *  shapes, mask) over the same ranks in the same order, else 0. O(1) in the rank count.
 *  @param[in]  a     a layout
 *  @param[in]  b     another layout
 *  @param[out] equal 1 or 0
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_equal(plm_const_layout_t a, plm_const_layout_t b, int *equal);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_LAYOUT_H */
