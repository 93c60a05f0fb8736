/**
 * @file pylopsmpi/stacked.h
 * @brief plm_stacked_t: a stack of distributed arrays treated as one vector.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_STACKED_H
#define PYLOPSMPI_STACKED_H

#include "array.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_stacked Stacked arrays
 *  @brief plm_stacked_t: a stack of distributed arrays treated as one vector.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Stacked arrays                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_stacked_s *plm_stacked_t;               /**< stack of distributed arrays */
typedef const struct plm_stacked_s *plm_const_stacked_t;   /**< stack of distributed arrays, read-only */

/**
 * Stack of arrays treated as one vector (their concatenation). The stack keeps a reference
 * to each member: a member handle may be destroyed while the stack lives. All members must
 * share dtype (else PLM_ERR_DTYPE_MISMATCH) and memory space, and live on the same ranks in
 * the same order: separate communicator handles over the same ranks (two plm_comm_create()
 * of one MPI communicator) are fine; a communicator of another size is
 * PLM_ERR_SIZE_MISMATCH; one of the same size with other ranks or another rank order (a
 * plm_comm_split() with other keys) is PLM_ERR_INVALID_ARG. Why: a stack's dot and norm
 * reduce every member in one agreement on member 0's communicator, and stacks meet operators
 * and other stacks member by member, whose operands must be on the same ranks in the same
 * order (as arrays' operands).
 * @param[in]  n      1 or more
 * @param[in]  arrays n arrays (the handles stay the caller's) \len{n}
 * @param[out] out    new stack; destroy with plm_stacked_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_stacked_create(int n, const plm_array_t *arrays, plm_stacked_t *out);
/** Destroy a stack (members live on while other handles hold them).
 *  @param[in,out] stack address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_destroy(plm_stacked_t *stack);
/** Number of members.
 *  @param[in]  s the stack
 *  @param[out] n number of members
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_narrays(plm_const_stacked_t s, int *n);
/** Member i of a stack.
 *  @param[in]  s      the stack
 *  @param[in]  i      0..n-1
 *  @param[out] member the member (borrowed: valid while the stack lives; do not destroy)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_get(plm_const_stacked_t s, int i, plm_array_t *member);
/** New stack of zero arrays with the members' layouts.
 *  @param[in]  s   the model stack
 *  @param[out] out new stack; destroy with plm_stacked_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_zeros_like(plm_const_stacked_t s, plm_stacked_t *out);
/** Member-wise copy y = x; stacks must match member by member.
 *  @param[in]  x source
 *  @param[out] y destination
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_copy(plm_const_stacked_t x, plm_stacked_t y);
/** Member-wise x = alpha x (scalars as plm_array_scale()).
 *  @param[in,out] x        the stack
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_scale(plm_stacked_t x, double alpha_re, double alpha_im);
/** Member-wise y = alpha x + beta y (scalars as plm_array_axpby()).
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @param[in]     x        the stack scaled by alpha
 *  @param[in]     beta_re  real part of beta
 *  @param[in]     beta_im  imaginary part of beta
 *  @param[in,out] y        the stack scaled by beta; receives the result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_axpby(double alpha_re, double alpha_im, plm_const_stacked_t x, double beta_re,
                                       double beta_im, plm_stacked_t y);
/** Sum of the members' dot products (as plm_array_dot()).
 *  @param[in]  x         first operand
 *  @param[in]  y         second operand
 *  @param[in]  conjugate as in plm_array_dot()
 *  @param[out] re        as in plm_array_dot()
 *  @param[out] im        as in plm_array_dot()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_dot(plm_const_stacked_t x, plm_const_stacked_t y, int conjugate, double *re,
                                     double *im);
/** Norm of the concatenation, combined from member norms.
 *  @param[in]  x      the stack
 *  @param[in]  ord    order of the norm, as in plm_array_norm()
 *  @param[out] result the norm, host memory
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_norm(plm_const_stacked_t x, double ord, double *result);
/** Flattened members' global arrays, concatenated.
 *  @param[in]  x         the stack
 *  @param[out] out       the concatenation, in the members' memory space \mem{array}
 *  @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the members' global element
 *                        counts summed
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_asarray(plm_const_stacked_t x, void *out, int64_t out_bytes);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_STACKED_H */
