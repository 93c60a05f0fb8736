/**
 * @file pylopsmpi/prox.h
 * @brief plm_prox_t: L1, L0, Box, L2, L21, user callbacks and their compositions;
 * ProximalGradient (with backtracking), ADMML2, PrimalDual and AdaptivePrimalDual.
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
 *  @brief plm_prox_t: L1, L0, Box, L2, L21, user callbacks and their compositions;
 *  ProximalGradient (with backtracking), ADMML2, PrimalDual and AdaptivePrimalDual.
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
 * L0 proximal operator with PLM_L0_EXACT's threshold (see plm_prox_create_l0_threshold()):
 * f(x) = number of non-zeros (sigma does not scale the value, as in pyproximal); prox with
 * step tau: x_i = 0 where |x_i| <= sqrt(2 tau sigma), the exact prox of tau sigma ||x||_0.
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l0(double sigma, plm_prox_t *out);

/** Where an L0 proximal operator zeroes an element (plm_prox_create_l0_threshold()). */
typedef enum plm_l0_threshold {
    PLM_L0_EXACT = 0,      /**< |x_i| <= sqrt(2 tau sigma): the exact prox of tau sigma ||x||_0 (plm_prox_create_l0) */
    PLM_L0_PYPROXIMAL = 1, /**< |x_i| <= tau sigma: pyproximal's L0 (hard threshold at tau sigma), which PyLops-MPI wraps */
    PLM_L0_THRESHOLD_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_l0_threshold_t;

/**
 * L0 proximal operator with a named threshold rule: f(x) = number of non-zeros (unscaled, as
 * pyproximal's), prox with step tau: x_i = 0 where |x_i| <= sqrt(2 tau sigma)
 * (PLM_L0_EXACT, as plm_prox_create_l0()) or |x_i| <= tau sigma (PLM_L0_PYPROXIMAL,
 * pyproximal's L0 and so PyLops-MPI's; the Python package's L0 uses it); other elements are
 * kept. Complex values on |x_i|; NaN stays NaN.
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[in]  rule  the threshold
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l0_threshold(double sigma, plm_l0_threshold_t rule, plm_prox_t *out);

/**
 * L2,1 proximal operator (PyLops-MPI's MPIL21, pyproximal's L21): on a stack of ndim members
 * of one layout and dtype (a single array: ndim 1), element j of every member forms group j,
 * the column j of pyproximal's ndim x N view. f(x) = sigma sum_j ||x_j||_2; prox with step
 * tau: x_j (1 - tau sigma / max(||x_j||_2, tau sigma)) (row-wise group soft thresholding);
 * its dual (plm_prox_dual()): sigma x_j / max(||x_j||_2, sigma). ||x_j|| sums |x_ij|^2
 * (complex: the modulus squared, as PyLops-MPI) in the data's real precision; a NaN in a
 * group makes the group NaN. Purely local but for f's one reduction.
 * @param[in]  ndim  members of the stacks it takes, >= 1
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l21(int64_t ndim, double sigma, plm_prox_t *out);

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
 * pyproximal's postcomposition (ProxOperator.postcomposition, sigma * f): g(x) = sigma f(x),
 * prox_{tau g}(x) = prox_{sigma tau f}(x), grad g = sigma grad f. g holds f (f may be destroyed
 * first; a user operator's destroy(ctx) runs when the last holder goes).
 * @param[in]  f     the proximal operator
 * @param[in]  sigma the factor, finite and > 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_postcomposition(plm_const_prox_t f, double sigma, plm_prox_t *out);

/**
 * pyproximal's precomposition (ProxOperator.precomposition(a, b)): g(x) = f(a x + b),
 * prox_{tau g}(x) = (prox_{a^2 tau f}(a x + b) - b) / a, grad g(x) = a grad f(a x + b). b is the
 * number b_value, or the array b_array (copied; then g takes single arrays on its layout, not
 * stacks). g holds f.
 * @param[in]  f       the proximal operator
 * @param[in]  a       the factor, finite and non-zero
 * @param[in]  b_value the shift when b_array is NULL, finite
 * @param[in]  b_array the shift as an array, or NULL
 * @param[out] out     the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_precomposition(plm_const_prox_t f, double a, double b_value, plm_const_array_t b_array,
                                             plm_prox_t *out);

/**
 * pyproximal's affine addition (ProxOperator.affine_addition(v), f + v): g(x) = f(x) + v^T x
 * (its value: f(x) + Re(v^T x), unconjugated), prox_{tau g}(x) = prox_{tau f}(x - tau v),
 * grad g = grad f + v. v is copied; g takes single arrays on v's layout (not stacks). g holds f.
 * @param[in]  f   the proximal operator
 * @param[in]  v   the vector
 * @param[out] out the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_affine_addition(plm_const_prox_t f, plm_const_array_t v, plm_prox_t *out);

/**
 * pyproximal's chain (ProxOperator.chain(g)): h with prox_{tau h}(x) = prox_{tau g}(prox_{tau
 * f}(x)), for f and g whose sum's prox is that chain (the caller's knowledge, as in
 * pyproximal). Its value is f(x) + g(x) and its gradient grad f + grad g (pyproximal's chain
 * defines neither for vectors: g(f(x)) and None). h holds f and g.
 * @param[in]  f   the first proximal operator
 * @param[in]  g   the second
 * @param[out] out the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_chain(plm_const_prox_t f, plm_const_prox_t g, plm_prox_t *out);

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
 * out = prox_{tau f*}(x), the prox of the convex conjugate (pyproximal's proxdual): for L1 on
 * real data the projection onto [-sigma, sigma], for L21 sigma x_j / max(||x_j||, sigma), for
 * every other operator (compositions too) the Moreau identity x - tau prox_{f / tau}(x / tau).
 * out may be x. tau must be equal on every rank.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_dual(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out);

/**
 * plm_prox_dual() on a stack (an L21 on its ndim members, the element-wise operators member
 * by member); operators holding arrays (L2, a precomposition with an array, an affine
 * addition) fail with PLM_ERR_NOT_SUPPORTED on every rank. out may be x.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point, a stack
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, a stack matching x member by member
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_dual_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double tau,
                                           plm_stacked_t out);

/**
 * pyproximal's ProxOperator.grad: out = grad f(x) where f has a gradient (as
 * plm_prox_grad(); a composition applies its rule to its inner operators' grads), and for
 * operators without one (L1, L0, Box, L21, a user operator without grad) the gradient of the
 * Moreau envelope, (x - prox_{sigmame f}(x)) / sigmame (pyproximal's sigmame, 1 by default).
 * out must not be x.
 * @param[in]  prox    the proximal operator
 * @param[in]  x       the point
 * @param[in]  sigmame the Moreau envelope's parameter, finite and > 0
 * @param[out] out     the gradient, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_gradient(plm_const_prox_t prox, plm_const_array_t x, double sigmame, plm_array_t out);

/**
 * plm_prox_gradient() on a stack (member by member, an L21's Moreau gradient on its ndim
 * members); operators holding arrays fail with PLM_ERR_NOT_SUPPORTED. out must not be x.
 * @param[in]  prox    the proximal operator
 * @param[in]  x       the point, a stack
 * @param[in]  sigmame the Moreau envelope's parameter, finite and > 0
 * @param[out] out     the gradient, a stack matching x member by member
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_gradient_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double sigmame,
                                               plm_stacked_t out);

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
 * tau is fixed (backtracking: plm_solve_proximal_gradient_backtracking()). With tol > 0 it
 * stops when |1 - J / J_old| < tol,
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
 * plm_solve_proximal_gradient() with pyproximal's backtracking (ProximalGradient with tau None
 * or backtracking True): each iteration's step comes from a line search starting at the last
 * one (tau0 at first): z = prox_{epsg_k tau g}(y - tau grad f(y)) and tau = beta tau until
 * f(z) <= f(y) + Re(grad f(y)^H (z - y)) + ||z - y||^2 / (2 tau) or niterback tries (then tau
 * is the last tau tried times beta, as pyproximal leaves it); x = z, and with eta < 1
 * x = x + eta (prox_{epsg_k tau g}(x - tau grad f(x)) - x). Everything else as
 * plm_solve_proximal_gradient(); the table's last column is the step. proxf needs a gradient
 * and a value (L2, or a user operator with both).
 * @param[in]     proxf the smooth term, with a gradient and a value
 * @param[in]     proxg the proximal term
 * @param[in,out] x     x0 on entry, the solution on return
 * @param[in]     tau0  the first step tried, finite and > 0 (pyproximal: 1 when tau is None)
 * @param[in]     beta  the step's factor per try, in (0, 1) (pyproximal's default 0.5)
 * @param[in]     niterback tries per iteration, >= 1 (pyproximal's default 100)
 * @param[in]     epsg  multipliers of g: one value, or niter values \len{n_epsg}
 * @param[in]     n_epsg 1 or niter
 * @param[in]     eta   relaxation, in (0, 1]
 * @param[in]     niter iterations, >= 0
 * @param[in]     acceleration the acceleration
 * @param[in]     tol   tolerance on the relative change of J; <= 0: none
 * @param[out]    tau   host memory, may be NULL: the last step
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_proximal_gradient_backtracking(plm_const_prox_t proxf, plm_const_prox_t proxg,
                                                              plm_array_t x, double tau0, double beta,
                                                              int64_t niterback, const double *epsg, int64_t n_epsg,
                                                              double eta, int64_t niter, plm_accel_t acceleration,
                                                              double tol, double *tau, plm_solver_info_t info);

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
 * StackedDistributedArray z, as in total-variation problems with A = plm_op_gradient()): A is
 * any distributed operator taking one array on op's domain - a stacked vstack, a gradient, a
 * composite of them (0.5 Grad, Grad + Grad', ...), or a plain operator (a stack of one member)
 * - with member i of z on A's range part i; the x-step runs CGLS on the stacked vstack
 * [Op; A / sqrt(tau)] (A's members flattened in), the z-step is plm_prox_apply_stacked() and
 * g(A x) plm_prox_value_stacked(), so g is L1, L0, Box or a user operator (L2:
 * PLM_ERR_NOT_SUPPORTED). Everything else as plm_solve_admml2(): x and z's members must not
 * be masked.
 * @param[in]     proxg  the proximal term g
 * @param[in]     op     the misfit operator (plain, distributed)
 * @param[in]     b      data on op's range
 * @param[in]     A      the regularisation operator: one array on op's domain to a stack
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

/**
 * PyLops-MPI's and pyproximal's PrimalDual (Chambolle-Pock) for min_x f(x) + g(A x) + z^T x,
 * iterate for iterate: with gfirst, y = prox_{mu_k g*}(y + mu_k A xhat) (plm_prox_dual()),
 * x = prox_{tau_k f}(x - tau_k (A^H y + z)), xhat = x + theta (x - x_old); without, the x-step
 * and xhat first, then the y-step. xhat = x0 and y = y0 (use_y0) or 0 at the start. With show
 * rank 0 prints the reference's table (Itn, x[0], f, g, z^x, J = f + g + z^x; a Box counts 0),
 * kept in the cost history (J per iteration when some rank shows); the callback gets x and J
 * (NaN when not computed). x, y and z must not be masked.
 * @param[in]     proxf  f, applied on A's domain
 * @param[in]     proxg  g, whose dual prox runs on A's range
 * @param[in]     A      a plain distributed operator
 * @param[in,out] x      x0 on entry, the solution on return; on A's domain
 * @param[in,out] y      on A's range: y0 on entry when use_y0, the dual variable on return
 * @param[in]     use_y0 1: y holds y0; 0: y0 = 0 (pyproximal's y0 None)
 * @param[in]     tau    primal steps: one value or niter values, finite and > 0 \len{n_tau}
 * @param[in]     n_tau  1 or niter
 * @param[in]     mu     dual steps: one value or niter values, finite and > 0 \len{n_mu}
 * @param[in]     n_mu   1 or niter
 * @param[in]     z      on x's layout, or NULL (no z term)
 * @param[in]     theta  the extrapolation (1: Chambolle-Pock; 0: Arrow-Hurwicz), finite
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the y-step first (pyproximal's default)
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_primal_dual(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                           plm_array_t x, plm_array_t y, int use_y0, const double *tau,
                                           int64_t n_tau, const double *mu, int64_t n_mu, plm_const_array_t z,
                                           double theta, int64_t niter, int gfirst, plm_solver_info_t info);

/**
 * plm_solve_primal_dual() with y a stack, for a stacked A (plm_op_stacked_vstack(),
 * plm_op_gradient(): total variation with g = L21 on the gradient's ndim members): member i of
 * y on A's range part i; g's dual prox and value run on the stack (g: not an operator holding
 * arrays, PLM_ERR_NOT_SUPPORTED). Everything else as plm_solve_primal_dual().
 * @param[in]     proxf  f, applied on A's domain
 * @param[in]     proxg  g, whose dual prox runs on A's range
 * @param[in]     A      a stacked distributed operator (or a plain one with a stack of one)
 * @param[in,out] x      x0 on entry, the solution on return; on A's domain
 * @param[in,out] y      a stack on A's range: y0 on entry when use_y0, the dual variable on return
 * @param[in]     use_y0 1: y holds y0; 0: y0 = 0
 * @param[in]     tau    primal steps: one value or niter values \len{n_tau}
 * @param[in]     n_tau  1 or niter
 * @param[in]     mu     dual steps: one value or niter values \len{n_mu}
 * @param[in]     n_mu   1 or niter
 * @param[in]     z      on x's layout, or NULL
 * @param[in]     theta  the extrapolation, finite
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the y-step first
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_primal_dual_stacked(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                                   plm_array_t x, plm_stacked_t y, int use_y0, const double *tau,
                                                   int64_t n_tau, const double *mu, int64_t n_mu, plm_const_array_t z,
                                                   double theta, int64_t niter, int gfirst, plm_solver_info_t info);

/**
 * pyproximal's AdaptivePrimalDual (Goldstein et al.'s adaptive steps), iterate for iterate:
 * y = 0 on A's range (a stack for a stacked A), x = prox_{tau f}(x - tau (A^H y + z)),
 * y = prox_{mu g*}(y + mu (2 A x - A x_old)); then the residuals
 * p = ||(x_old - x) / tau - (A^H y_old - A^H y) [- A^H z + z]|| and
 * d = ||(y_old - y) / mu - (A x_old - A x)||: when p > s d delta, tau /= 1 - alpha,
 * mu *= 1 - alpha, alpha *= eta; when p < s d / delta the reverse; it stops after niter
 * iterations or when p <= tol or d <= tol (PLM_STOP_TOLERANCE). r1norm and r2norm
 * (plm_solver_info_norms) hold the last p and d. As pyproximal's, the z term of p applies A^H
 * to z, so z needs a plain A whose range is x's layout. show and the callback as
 * plm_solve_primal_dual().
 * @param[in]     proxf  f
 * @param[in]     proxg  g
 * @param[in]     A      a distributed operator (plain or stacked)
 * @param[in,out] x      x0 on entry, the solution on return; on A's domain
 * @param[in]     z      on x's layout, or NULL
 * @param[in]     tau    the first primal step, finite and > 0
 * @param[in]     mu     the first dual step, finite and > 0
 * @param[in]     alpha  the first adaptivity level, in (0, 1) (pyproximal's default 0.5)
 * @param[in]     eta    alpha's factor at each change, in (0, 1) (0.95)
 * @param[in]     s      the residuals' balance, finite and > 0 (1)
 * @param[in]     delta  the balance's slack, finite and > 0 (1.5)
 * @param[in]     niter  iterations, >= 0
 * @param[in]     tol    the residuals' tolerance (1e-10)
 * @param[out]    steps  host memory, or NULL: tau, then mu, then alpha, niter + 1 values each
 *                       (entries past the iterations run are left as they were) \len{n_steps}
 * @param[in]     n_steps 3 (niter + 1), or 0 with steps NULL
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_adaptive_primal_dual(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                                    plm_array_t x, plm_const_array_t z, double tau, double mu,
                                                    double alpha, double eta, double s, double delta, int64_t niter,
                                                    double tol, double *steps, int64_t n_steps,
                                                    plm_solver_info_t info);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_PROX_H */
