/**
 * @file pylopsmpi/prox.h
 * @brief plm_prox_t: L1, L0, Box, L2, user callbacks; ProximalGradient and ADMML2.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_PROX_H
#define PYLOPSMPI_PROX_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_prox Proximal operators and solvers
 *  @brief plm_prox_t: L1, L0, Box, L2, user callbacks; ProximalGradient and ADMML2.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Proximal operators                                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_prox_s *plm_prox_t;             /**< proximal operator */
typedef const struct plm_prox_s *plm_const_prox_t; /**< proximal operator, read-only */

/**
 * L1 proximal operator (pyproximal's L1 without g): f(x) = sigma sum |x_i|; prox with step
 * tau is the soft threshold by tau sigma (complex values on |x_i|, the phase kept).
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l1(double sigma, plm_prox_t *out);

/**
 * L0 proximal operator (pyproximal's L0): f(x) = number of non-zeros (sigma does not scale
 * the value, as in the reference); prox with step tau is the hard threshold by tau sigma:
 * x_i = 0 where |x_i| <= sqrt(2 tau sigma).
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l0(double sigma, plm_prox_t *out);

/**
 * Box proximal operator (pyproximal's Box): the indicator of [lower, upper]; prox with any
 * tau is the projection min(max(x, lower), upper) (NaN stays NaN; lower > upper gives
 * upper). Real dtypes only (a complex array fails plm_prox_apply with PLM_ERR_DTYPE_MISMATCH).
 * Its value (plm_prox_value) is 1 when every element of the array lies in [lower, upper]
 * (NaN does not), else 0: PyLops-MPI's logical AND over the ranks.
 * @param[in]  lower lower bound; -INFINITY for none; not NaN
 * @param[in]  upper upper bound; INFINITY for none; not NaN
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_box(double lower, double upper, plm_prox_t *out);

/** Which inner solver the L2 proximal operator with an operator uses (PyLops-MPI's MPIL2 solver). */
typedef enum plm_l2_solver {
    PLM_L2_CGLS = 0, /**< CGLS on [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b; x - tau alpha q] (the default) */
    PLM_L2_CG = 1,   /**< CG on (I + tau sigma Op^H Op) x = x + tau sigma Op^H b - tau alpha q */
    PLM_L2_SOLVER_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_l2_solver_t;

/**
 * L2 proximal operator (PyLops-MPI's MPIL2): f(x) = sigma/2 ||Op x - b||^2 + alpha Re(q^T x),
 * with Op x replaced by x when op is NULL, b by 0 when b is NULL and the q term dropped when q
 * is NULL. Its prox solves the regularised system with op (niter iterations of CG or CGLS
 * with tolerance tol, from x0, PyLops-MPI's defaults being niter 10, tol 1e-4) and is closed
 * form without op: (x + tau sigma b - tau alpha q) / (1 + tau sigma). Its gradient is
 * sigma Op^H (Op x - b) (+ alpha q when qgrad). b, q and x0 are copied (the prox keeps its own
 * warm start: with warm = 1 each prox with op starts from the previous solution, so the prox
 * is not reentrant). Unlike the reference, op without b is refused (PyLops-MPI silently
 * ignores op then).
 * @param[in]  op     the operator, or NULL; a plain distributed operator
 * @param[in]  b      data on op's range (on x's layout without op), or NULL
 * @param[in]  q      on op's domain (x's layout), or NULL
 * @param[in]  sigma  multiplier of the L2 term, finite
 * @param[in]  alpha  multiplier of the q term, finite
 * @param[in]  qgrad  1: the gradient has the alpha q term; 0: not
 * @param[in]  niter  iterations of the inner solver, >= 0
 * @param[in]  tol    tolerance of the inner solver (as plm_solve_cg / plm_solve_cgls)
 * @param[in]  x0     start of the inner solver on op's domain; required with op, else NULL
 * @param[in]  warm   1: warm start from the last prox's solution; 0: always from x0
 * @param[in]  solver the inner solver
 * @param[out] out    the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l2(plm_const_op_t op, plm_const_array_t b, plm_const_array_t q, double sigma,
                                        double alpha, int qgrad, int64_t niter, double tol, plm_const_array_t x0,
                                        int warm, plm_l2_solver_t solver, plm_prox_t *out);

/** A user proximal step on one rank's local block: out = prox_{tau f}(x), n elements of dtype
 *  in host memory (out does not overlap x). Return 0 on success; anything else fails the call
 *  with PLM_ERR_CALLBACK on every rank. */
typedef int (*plm_prox_fn)(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dtype);
/** A user proximal value on a slice of one rank's local block (n elements of dtype in host
 *  memory): *value is that slice's part of f. The parts of the ranks of x's mask group are
 *  summed, so f must be separable (a sum over elements). Return 0 on success. */
typedef int (*plm_prox_value_fn)(void *ctx, const void *x, int64_t n, double *value, plm_dtype_t dtype);
/** A user gradient on one rank's local block: grad = grad f(x), n elements of dtype in host
 *  memory. Return 0 on success. */
typedef int (*plm_prox_grad_fn)(void *ctx, const void *x, int64_t n, void *grad, plm_dtype_t dtype);

/**
 * A proximal operator defined by user functions on local data (host arrays only: device
 * arrays fail with PLM_ERR_NOT_SUPPORTED). prox runs on each rank's whole local block; value
 * on the rank's share of the group's elements (SCATTER: its local block; BROADCAST: its share
 * of the replicated rows, as plm_array_norm()), summed over the mask group; grad (may be
 * NULL: no gradient) on the whole local block. A non-zero return on any rank fails the call
 * with PLM_ERR_CALLBACK on every rank. The functions may not call collective functions.
 * destroy(ctx) (may be NULL) runs when the operator is destroyed; if this call fails, ctx
 * stays the caller's.
 * @param[in]  prox    the proximal step; not NULL
 * @param[in]  value   the value, or NULL (plm_prox_value then fails with PLM_ERR_NOT_SUPPORTED)
 * @param[in]  grad    the gradient, or NULL
 * @param[in]  ctx     passed to the functions and destroy \opaque
 * @param[in]  destroy destroy(ctx) when the operator goes; may be NULL
 * @param[out] out     the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_callback(plm_prox_fn prox, plm_prox_value_fn value, plm_prox_grad_fn grad,
                                              void *ctx, void (*destroy)(void *ctx), plm_prox_t *out);

/**
 * Frees a proximal operator and sets *prox to NULL; NULL or *prox NULL does nothing.
 * @param[in,out] prox the proximal operator
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_destroy(plm_prox_t *prox);

/**
 * out = prox_{tau f}(x). out may be x (in place). tau must be equal on every rank.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_apply(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out);

/**
 * f(x), reduced over x's mask group (through plm_array_norm()'s reductions), the same on
 * every rank of the group.
 * @param[in]  prox  the proximal operator
 * @param[in]  x     the point
 * @param[out] value host memory; f(x)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_value(plm_const_prox_t prox, plm_const_array_t x, double *value);

/**
 * plm_prox_apply() on a stack, member by member (PyLops-MPI's MPIProxOperator.prox on a
 * StackedDistributedArray): member i of out = prox_{tau f}(member i of x), for L1, L0, Box
 * and user proximal operators (a user prox runs once per member); L2 fails with
 * PLM_ERR_NOT_SUPPORTED on every rank. out may be x (member i of out may be member i of x,
 * no other member of x). tau must be equal on every rank.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point, a stack
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, a stack matching x member by member (layout, dtype, memory space)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_apply_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double tau,
                                            plm_stacked_t out);

/**
 * plm_prox_value() on a stack (PyLops-MPI's MPIProxOperator on a StackedDistributedArray):
 * L1, L0 and user values summed over the members, Box 1 when every member lies in
 * [lower, upper] (the reference's `all`), else 0; every member reduced over its own mask
 * group, all in one agreement; the same on every rank of a member's group. L2 fails with
 * PLM_ERR_NOT_SUPPORTED on every rank.
 * @param[in]  prox  the proximal operator
 * @param[in]  x     the point, a stack
 * @param[out] value host memory; f(x)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_value_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double *value);

/**
 * out = grad f(x) for a proximal operator with a gradient (L2, or a user operator with grad);
 * others fail with PLM_ERR_NOT_SUPPORTED. out must not be x.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point
 * @param[out] out  the gradient, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_grad(plm_const_prox_t prox, plm_const_array_t x, plm_array_t out);

/* ------------------------------------------------------------------------------------------ */
/* Proximal solvers                                                                           */
/* ------------------------------------------------------------------------------------------ */

/** Acceleration of plm_solve_proximal_gradient() (pyproximal's acceleration). */
typedef enum plm_accel {
    PLM_ACCEL_NONE = 0,         /**< omega = 0 */
    PLM_ACCEL_VANDENBERGHE = 1, /**< omega = k / (k + 3) at iteration k (from 0) */
    PLM_ACCEL_FISTA = 2,        /**< omega = (t_k - 1) / t_{k+1}, t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2, t_0 = 1 */
    PLM_ACCEL_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_accel_t;

/**
 * (Accelerated) proximal gradient (PyLops-MPI's ProximalGradient) for
 * min f(x) + epsg g(x): with eta = 1, x = prox_{epsg_k tau g}(y - tau grad f(y)), else
 * x = x + eta (prox_{epsg_k tau g}(x - tau grad f(x)) - x); then y = x + omega (x - x_old).
 * tau is required (no backtracking). With tol > 0 it stops when |1 - J / J_old| < tol,
 * J = f(x) + epsg_k g(x). x must not be masked. Every iteration calls the info's callback
 * (cost: J when it is computed, else NaN); with show, rank 0 prints PyLops-MPI's table
 * (Itn, x[0], f, g, J, tau). The cost history holds J per iteration when tol > 0 or some
 * rank shows, else nothing.
 * @param[in]     proxf the smooth term, with a gradient (plm_prox_grad())
 * @param[in]     proxg the proximal term
 * @param[in,out] x     x0 on entry, the solution on return
 * @param[in]     tau   the step, finite and > 0
 * @param[in]     epsg  multipliers of g: one value, or niter values (one per iteration) \len{n_epsg}
 * @param[in]     n_epsg 1 or niter
 * @param[in]     eta   relaxation, in (0, 1]
 * @param[in]     niter iterations, >= 0
 * @param[in]     acceleration the acceleration
 * @param[in]     tol   tolerance on the relative change of J; <= 0: none
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_proximal_gradient(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_array_t x,
                                                 double tau, const double *epsg, int64_t n_epsg, double eta,
                                                 int64_t niter, plm_accel_t acceleration, double tol,
                                                 plm_solver_info_t info);

/**
 * ADMM for an L2 misfit (PyLops-MPI's ADMML2): min 0.5 ||Op x - b||^2 + g(z) s.t. A x = z.
 * Each iteration: x from inner_niter CGLS iterations (tolerance inner_tol, warm-started from x)
 * on [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)], then z = prox_{tau g}(A x + u) (gfirst:
 * the z-step first) and u = u + A x - z, with u = 0 at the start. The callback gets x and, when
 * computed, J = 0.5 ||Op x - b||^2 + g(A x) (else NaN); with show, rank 0 prints PyLops-MPI's
 * table (Itn, x[0], f, g, J) and the cost history holds J. x and z must not be masked.
 * @param[in]     proxg  the proximal term g
 * @param[in]     op     the misfit operator (plain, distributed)
 * @param[in]     b      data on op's range
 * @param[in]     A      the regularisation operator (plain, distributed), with op's domain
 * @param[in,out] x      x0 on entry, the solution on return; on op's domain
 * @param[in,out] z      on A's range: z0 on entry when use_z0 = 1 (else overwritten by A x0);
 *                       the auxiliary variable on return
 * @param[in]     use_z0 1: z holds z0; 0: z0 = A x0
 * @param[in]     tau    the step, finite and > 0
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the z-step before the x-step in each iteration
 * @param[in]     inner_niter CGLS iterations of each x-step (PyLops-MPI's default 10)
 * @param[in]     inner_tol   CGLS tolerance of each x-step (PyLops-MPI's default 1e-4)
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_admml2(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                      plm_const_op_t A, plm_array_t x, plm_array_t z, int use_z0, double tau,
                                      int64_t niter, int gfirst, int64_t inner_niter, double inner_tol,
                                      plm_solver_info_t info);

/**
 * plm_solve_admml2() with z a stack (PyLops-MPI's ADMML2 with an MPIStackedVStack A and a
 * StackedDistributedArray z, as in total-variation problems with A = [D1; D2]): A is a stacked
 * vstack (plm_op_stacked_vstack(); a plain distributed operator takes a stack of one member)
 * with op's domain, member i of z on A's range part i; the x-step runs CGLS on
 * [Op; A_1 / sqrt(tau); ...; A_k / sqrt(tau)], the z-step is plm_prox_apply_stacked() and
 * g(A x) plm_prox_value_stacked(), so g is L1, L0, Box or a user operator (L2:
 * PLM_ERR_NOT_SUPPORTED). Everything else as plm_solve_admml2(): x and z's members must not
 * be masked.
 * @param[in]     proxg  the proximal term g
 * @param[in]     op     the misfit operator (plain, distributed)
 * @param[in]     b      data on op's range
 * @param[in]     A      the regularisation operator: a stacked vstack with op's domain
 * @param[in,out] x      x0 on entry, the solution on return; on op's domain
 * @param[in,out] z      a stack on A's range: z0 on entry when use_z0 = 1 (else overwritten by
 *                       A x0); the auxiliary variable on return
 * @param[in]     use_z0 1: z holds z0; 0: z0 = A x0
 * @param[in]     tau    the step, finite and > 0
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the z-step before the x-step in each iteration
 * @param[in]     inner_niter CGLS iterations of each x-step (PyLops-MPI's default 10)
 * @param[in]     inner_tol   CGLS tolerance of each x-step (PyLops-MPI's default 1e-4)
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_admml2_stacked(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                              plm_const_op_t A, plm_array_t x, plm_stacked_t z, int use_z0,
                                              double tau, int64_t niter, int gfirst, int64_t inner_niter,
                                              double inner_tol, plm_solver_info_t info);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_PROX_H */
