// Solvers on distributed operators: CG, CGLS, ISTA/FISTA, power iteration and the dot test,
// with PyLops' iteration and stopping rules, on host or device arrays alike (the kernels and
// the operator run where the data are; no host copy of device data is made).
//
// Each is collective and continues the agreement the caller built on the operator's
// communicator (with the operands resolved inside it): it checks and folds its own arguments,
// makes everything the solve will need (work vectors in the operands' memory space, the
// operator's Work, one agreement per reduction point, the reduction slots its partials go into,
// the history's room) and runs it; the iterations then allocate nothing. Each reduction point
// enqueues its local partials (dot products, 1-norms) into their slots and collects them in one
// copy to the host (on device: one stream synchronisation per reduction point, not one per
// partial), then agrees: one agreement that also carries the stop callback's answer of the
// iteration before, so a callback set on some ranks only, or failing on one, never pairs
// agreements wrongly.
//
// Masked operands (mask groups): every group runs its own solve - its own reductions, step
// sizes and stopping rule, the same iterates as a solve on that group alone - while the loop
// runs until every group has stopped; a group that has stopped keeps its x. Reductions of a
// masked solve add each rank's partial in rank order within its group, so groups holding the
// same data (replicated) stay bitwise equal. Info on each rank describes its group's solve.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/operator.hpp"

namespace plm::solvers {

// Why a solve stopped: plm_stop_reason_t's values.
enum class Stop : int {
    none = 0,        // still running (or no solve yet)
    tolerance = 1,   // the tolerance was met
    iterations = 2,  // niter iterations ran
    callback = 3,    // a stop callback asked
    breakdown = 4,   // a zero step denominator
    nan = 5,         // a NaN or infinity in the reductions
    diverged = 6     // monitorres: the residual grew
};

struct Info {
    Stop reason = Stop::none;
    int64_t iterations = 0;  // iterations run (by this rank's mask group)
    double r1norm = 0;       // CGLS: kold, the squared norm of the normal-equations residual (PyLops)
    double r2norm = 0;       // CGLS: sqrt(||y - Op x||^2 + damp^2 ||x||^2); CG: ||r||
    std::vector<double> cost;  // per iteration, iterations + 1 values (ISTA/FISTA: iterations)
};

// Per-iteration hooks. show: rank 0 prints an iteration table like PyLops' show=True.
// stop(iteration, cost): a user callback after each iteration (on the ranks that set one);
// true on any rank stops every rank; a failure (an exception) on any rank fails every rank.
struct Monitor {
    bool show = false;
    std::function<bool(int64_t, double)> stop;
};

// Solver vectors: one array, or the members of a stack, on the operator's domain or range
// parts. Arrays are not modified unless they are x.
using Parts = std::vector<DistributedArray *>;

// x holds x0 on entry and the solution on return.
// CG: op square (domain == range), Hermitian positive definite; stops when ||r||^2 <= tol.
void cg(comm::Agreement &ag, const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter, double tol,
        Info &info, const Monitor &mon);
// CGLS: min ||y - Op x||^2 + damp^2 ||x||^2; stops when ||Op^H r - damp^2 x||^2 <= tol.
void cgls(comm::Agreement &ag, const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter, double damp,
          double tol, Info &info, const Monitor &mon);

// CGLS made once and run many times (an outer solver's inner solve: ADMML2's x-step): the
// constructor checks, folds and plans into the caller's agreement (work vectors, the operator's
// Work, the reduction points, info's history room); after that agreement has run, each run()
// solves from x's current values with y's current values and allocates nothing. y, x, op and
// info must outlive it. run(nullptr): no rank has a monitor (no callback to settle at the end:
// one reduction fewer than cgls()).
class Cgls {
public:
    Cgls(comm::Agreement &ag, const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter, double damp,
         double tol, Info &info);
    ~Cgls();
    Cgls(const Cgls &) = delete;
    Cgls &operator=(const Cgls &) = delete;
    void run(const Monitor *mon);

private:
    struct Impl;
    std::unique_ptr<Impl> m_;
};

// Largest eigenvalue (by magnitude) of a square operator by power iteration from a start
// vector drawn from seed (the same on every rank count); stops when |l - l_old| < tol |l|.
// Masked operators: each group's eigenvalue (this rank's group's is returned).
struct Eigen {
    double re, im;
    int64_t iterations;
};
Eigen power_iteration(comm::Agreement &ag, const ops::Operator &op, int64_t niter, double tol, uint64_t seed);

// ISTA / FISTA for min 0.5 ||y - Op x||^2 + eps ||x||_1 (PyLops' rules): step alpha (<= 0:
// 1 / |lambda_max(Op^H Op)| by 30 power iterations, seed 0), threshold eps alpha / 2 times
// decay[it] (decay may be empty: ones), kind soft / hard / half (a plm_thresh_t value, checked
// here); stops after niter or when ||x - x_old|| <= tol; monitorres: a growing residual is
// PLM_ERR_NOT_CONVERGED on every rank. cost: 0.5 ||r||^2 + eps ||x||_1 per iteration (ISTA: r
// before the update, FISTA: after).
struct Sparse {
    int64_t niter = 10;
    double eps = 0.1, alpha = 0, tol = 1e-10;
    int kind = PLM_THRESH_SOFT;
    std::vector<double> decay;
    bool monitorres = false;
    bool fista = false;
};
void ista(comm::Agreement &ag, const ops::Operator::Ptr &op, const Parts &y, const Parts &x, const Sparse &o,
          Info &info, const Monitor &mon);

// <Op u, v> against <u, Op^H v> for u on the domain and v on the range filled with the same
// pseudo-random values on every rank count (masked: by index within the group). For an
// operator linear over the reals only (!clinear()) the real parts of both (the dot product of
// complex vectors as vectors of real pairs), with zero imaginary parts.
struct DotTest {
    double yy_re, yy_im, xx_re, xx_im;
    bool passed;
};
DotTest dottest(comm::Agreement &ag, const ops::Operator &op, double rtol);

}  // namespace plm::solvers
