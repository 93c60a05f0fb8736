/**
 * @file pylopsmpi/solver.h
 * @brief CG, CGLS, ISTA, FISTA, power iteration and the solver-info object.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_SOLVER_H
#define PYLOPSMPI_SOLVER_H

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_solver Solvers
 *  @brief CG, CGLS, ISTA, FISTA, power iteration and the solver-info object.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Solvers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_solver_info_s *plm_solver_info_t;       /**< what a solver reports */
typedef const struct plm_solver_info_s *plm_const_solver_info_t; /**< solver report, read-only */

/* Solvers run where their arrays are (host or CUDA device memory; y and x in one space): work
 * vectors, the operator's scratch and every reduction are made in that space before the
 * solve's agreement, and no host copy of device data is made. Masked operators (mask groups):
 * each group runs its own solve (its own reductions, step sizes and stopping rule, as a solve
 * on that group alone would) while the loop runs until every group has stopped; a group that
 * stopped keeps its x, and groups holding the same data stay bitwise equal. The info object on
 * each rank reports the solve of that rank's group. */

/** An object a solver fills: iterations, stopping reason, residual norms and the cost
 *  history. Reusable across solves.
 *  @param[out] info new object; destroy with plm_solver_info_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_create(plm_solver_info_t *info);
/** Destroy an info object (and its callback's ctx, plm_solver_info_set_callback()).
 *  @param[in,out] info address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_destroy(plm_solver_info_t *info);
/** Whether later solves with this info print an iteration table.
 *  @param[in,out] info the info object
 *  @param[in]     show 1: rank 0 prints an iteration table during solves, like PyLops'
 *                      show=True (the first 10 iterations, every 10th, the last 10); 0: no
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_set_show(plm_solver_info_t info, int show);

/**
 * A per-iteration callback: called after each iteration, on the ranks whose info has one set
 * (some ranks may have none), with the iteration number (from 1), the current solution x (the
 * array passed to the solve; device arrays are read through plm_array_get_local_read) and the
 * current cost (CG/CGLS: r2norm; ISTA/FISTA: the objective). Return 0 to go on; non-zero on
 * any rank stops the solve on every rank after that iteration. The answer travels with the
 * next iteration's first reduction (no extra communication per iteration).
 */
typedef int (*plm_solver_callback_fn)(void *ctx, int64_t iteration, plm_const_array_t x, double cost);
/**
 * Sets (or, with fn NULL, clears) the callback used by later solves with this info. The info
 * takes ctx: destroy(ctx) (destroy may be NULL) runs when the callback is replaced or cleared
 * and when info is destroyed. With fn NULL, ctx and destroy are ignored; if this call fails,
 * ctx stays the caller's.
 * @param[in,out] info    the info object
 * @param[in]     fn      the callback, or NULL to clear it
 * @param[in]     ctx     passed to fn and destroy \opaque
 * @param[in]     destroy destroy(ctx) when the callback goes; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_solver_info_set_callback(plm_solver_info_t info, plm_solver_callback_fn fn, void *ctx,
                                                  void (*destroy)(void *ctx));

/** Why a solve stopped. PLM_STOP_TOLERANCE and PLM_STOP_MAX_ITERATIONS are PyLops' istop 1 and 2. */
typedef enum plm_stop_reason {
    PLM_STOP_NONE = 0,           /**< no solve has run with this info yet */
    PLM_STOP_TOLERANCE = 1,      /**< the stopping rule's tolerance was met */
    PLM_STOP_MAX_ITERATIONS = 2, /**< niter iterations ran */
    PLM_STOP_CALLBACK = 3,       /**< a stop callback (on some rank) returned non-zero */
    PLM_STOP_BREAKDOWN = 4,      /**< a step's denominator was zero (CG: p^H Op p; CGLS: ||Op p||^2
                                      + damp^2 ||p||^2): x is the last iterate, no NaN made */
    PLM_STOP_NAN = 5,            /**< a NaN or infinity appeared in the solver's reductions (from
                                      the data, the operator or overflow); x holds it */
    PLM_STOP_DIVERGED = 6,       /**< ISTA/FISTA with monitorres: the residual norm grew (the solve
                                      also returns PLM_ERR_NOT_CONVERGED) */
    PLM_STOP_FORCE_INT32 = 0x7fffffff /**< not a reason: keeps the enum 32 bits wide */
} plm_stop_reason_t;

/** Why the last solve with this info stopped.
 *  @param[in]  info   the info object
 *  @param[out] reason the reason (PLM_STOP_NONE before the first solve)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_reason(plm_const_solver_info_t info, plm_stop_reason_t *reason);
/** Iterations of the last solve with this info.
 *  @param[in]  info       the info object
 *  @param[out] iterations number of iterations
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_iterations(plm_const_solver_info_t info, int64_t *iterations);
/** CGLS: r1norm = ||Op^H (y - Op x) - damp^2 x||^2 at the end (PyLops' definition, a squared
 *  normal-equations residual), r2norm = sqrt(||y - Op x||^2 + damp^2 ||x||^2).
 *  CG: r1norm = ||y - Op x||^2, r2norm = ||y - Op x||.
 *  @param[in]  info   the info object
 *  @param[out] r1norm r1norm of the last solve
 *  @param[out] r2norm r2norm of the last solve
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_norms(plm_const_solver_info_t info, double *r1norm, double *r2norm);
/** ||y - Op x|| before the first iteration and after each: iterations + 1 values.
 *  @param[in]  info      the info object
 *  @param[out] cost      room for n values, or NULL to ask \len{n}
 *  @param[in]  n         values that fit at cost
 *  @param[out] n_written how many were written (with cost NULL: how many there are)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_cost(plm_const_solver_info_t info, double *cost, int64_t n, int64_t *n_written);

/**
 * Conjugate gradient for a square Hermitian positive definite operator (domain == range):
 * x holds x0 on entry and the solution on return; stops after niter iterations or when
 * ||y - Op x||^2 <= tol (PyLops' rule: tol compares with the squared norm). A solve that
 * does not meet tol still returns PLM_SUCCESS (PLM_STOP_MAX_ITERATIONS).
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     tol   tolerance on ||y - Op x||^2
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_cg(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double tol,
                                  plm_solver_info_t info);
/** plm_solve_cg() on stacks (members on the operator's parts; the callback gets x = NULL).
 *  @param[in]     op    the operator
 *  @param[in]     y     data, a stack on the range parts
 *  @param[in,out] x     x0 on entry, the solution on return; a stack on the domain parts
 *  @param[in]     niter maximum number of iterations
 *  @param[in]     tol   as in plm_solve_cg()
 *  @param[in,out] info  filled with the solve's report; may be NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_solve_cg_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x, int64_t niter,
                                          double tol, plm_solver_info_t info);
/** plm_solve_cgls() on stacks (members on the operator's parts; the callback gets x = NULL).
 *  @param[in]     op    the operator
 *  @param[in]     y     data, a stack on the range parts
 *  @param[in,out] x     x0 on entry, the solution on return; a stack on the domain parts
 *  @param[in]     niter maximum number of iterations
 *  @param[in]     damp  as in plm_solve_cgls()
 *  @param[in]     tol   as in plm_solve_cgls()
 *  @param[in,out] info  filled with the solve's report; may be NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_solve_cgls_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x,
                                            int64_t niter, double damp, double tol, plm_solver_info_t info);

/**
 * CGLS: minimises ||y - Op x||^2 + damp^2 ||x||^2. x holds x0 on entry and the solution on
 * return; stops after niter iterations or when ||Op^H r - damp^2 x||^2 < tol (PyLops' rule).
 * Unlike PyLops, damp is squared everywhere (PyLops uses it unsquared in the first residual).
 *
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     damp  damping
 * @param[in]     tol   tolerance on ||Op^H r - damp^2 x||^2
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_cgls(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter,
                                    double damp, double tol, plm_solver_info_t info);

/** Thresholds of ISTA / FISTA (PyLops' threshkind). */
typedef enum plm_thresh {
    PLM_THRESH_SOFT = 0, /**< max(|x| - t, 0) x / |x| */
    PLM_THRESH_HARD = 1, /**< 0 where |x| <= sqrt(2 t) */
    PLM_THRESH_HALF = 2, /**< the half-threshold of Xu et al. (PyLops' "half") */
    PLM_THRESH_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_thresh_t;

/**
 * ISTA for min 0.5 ||y - Op x||^2 + eps ||x||_1 (PyLops' ista): x holds x0 and gets the
 * solution; step alpha (<= 0: 1 / |lambda_max(Op^H Op)| from 30 power iterations); threshold
 * eps alpha / 2 times decay[k] at iteration k (decay: niter values, or NULL for ones); stops
 * after niter iterations or when ||x - x_old|| <= tol. monitorres = 1: a residual norm that
 * grows fails the solve with PLM_ERR_NOT_CONVERGED. The cost history holds
 * 0.5 ||r||^2 + eps ||x||_1 per iteration; r1norm is the last ||x - x_old||, r2norm ||r||.
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     eps        weight of the L1 term
 * @param[in]     alpha      step; <= 0 for 1 / |lambda_max(Op^H Op)|
 * @param[in]     kind       the threshold
 * @param[in]     decay      niter factors of the threshold, or NULL for ones \len{niter}
 * @param[in]     monitorres 1: fail when the residual norm grows; 0: no check
 * @param[in]     tol        tolerance on ||x - x_old||
 * @param[in,out] info       filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or PLM_ERR_NOT_CONVERGED when monitorres = 1 and the residual norm
 *          grew, or another error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_ista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                    double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                    plm_solver_info_t info);
/** FISTA (PyLops' fista): ISTA with Nesterov's momentum; the cost uses the residual after the
 *  update.
 *  @param[in]     op         the operator
 *  @param[in]     y          data, on the range
 *  @param[in,out] x          x0 on entry, the solution on return; on the domain
 *  @param[in]     niter      as in plm_solve_ista()
 *  @param[in]     eps        as in plm_solve_ista()
 *  @param[in]     alpha      as in plm_solve_ista()
 *  @param[in]     kind       as in plm_solve_ista()
 *  @param[in]     decay      as in plm_solve_ista() \len{niter}
 *  @param[in]     monitorres as in plm_solve_ista()
 *  @param[in]     tol        as in plm_solve_ista()
 *  @param[in,out] info       filled with the solve's report; may be NULL
 *  @returns as plm_solve_ista()
 *  \collective{op} */
PLM_API plm_status_t plm_solve_fista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                     double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                     plm_solver_info_t info);

/**
 * Largest eigenvalue (by magnitude) of a square operator by power iteration, from a start
 * vector drawn from seed (the same values on every rank count, unlike PyLops-MPI); stops
 * after niter iterations or when |l - l_old| < tol |l| (|.| of complex values, where PyLops
 * compares complex numbers).
 * @param[in]  op         a square operator
 * @param[in]  niter      maximum number of iterations
 * @param[in]  tol        relative tolerance
 * @param[in]  seed       seed of the start vector
 * @param[out] eig        two doubles: the eigenvalue (re, im), b^H Op b for the last b \len{2}
 * @param[out] iterations iterations run; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_power_iteration(plm_const_op_t op, int64_t niter, double tol, uint64_t seed, double *eig,
                                         int64_t *iterations);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_SOLVER_H */
