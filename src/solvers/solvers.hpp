// Solvers on distributed operators: CG and CGLS, with PyLops' iteration and stopping rules.
// Work arrays are made once before the loop; each iteration fuses its reductions into one
// agreement per step (two per iteration), and applies the operator as often as the
// algorithm needs (CG: once, CGLS: twice).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops/operator.hpp"

namespace plm::solvers {

struct Info {
    int istop = 0;           // 1: kold < tol; 2: niter reached
    int64_t iterations = 0;  // iterations run
    double r1norm = 0;       // CGLS: kold, the squared norm of the normal-equations residual (PyLops)
    double r2norm = 0;       // CGLS: sqrt(||y - Op x||^2 + damp^2 ||x||^2); CG: ||r||
    std::vector<double> cost;  // ||y - Op x|| per iteration, iterations + 1 values
};

// Per-iteration hooks. show: rank 0 prints an iteration table like PyLops' show=True.
// stop(iteration, cost): a user callback after each iteration; true on any rank stops every
// rank (one extra agreement per iteration, only when set).
struct Monitor {
    bool show = false;
    std::function<bool(int64_t, double)> stop;
};

// Solver vectors: one array, or the members of a stack, on the operator's domain or range
// parts (checked with check_parts). Arrays are not modified unless they are x.
using Parts = std::vector<DistributedArray *>;

// x holds x0 on entry and the solution on return. Collective on the operator's communicator.
// CG: op square (domain == range), Hermitian positive definite; stops when ||r||^2 <= tol.
void cg(const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter, double tol, Info &info,
        const Monitor &mon = {});
// CGLS: min ||y - Op x||^2 + damp^2 ||x||^2; stops when ||Op^H r - damp^2 x||^2 <= tol.
void cgls(const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter, double damp, double tol,
          Info &info, const Monitor &mon = {});

// Largest eigenvalue (by magnitude) of a square operator by power iteration from a start
// vector drawn from seed (the same on every rank count); stops when |l - l_old| < tol |l|.
struct Eigen {
    double re, im;
    int64_t iterations;
};
Eigen power_iteration(const ops::Operator &op, int64_t niter, double tol, uint64_t seed);

// ISTA / FISTA for min 0.5 ||y - Op x||^2 + eps ||x||_1 (PyLops' rules): step alpha (<= 0:
// 1 / |lambda_max(Op^H Op)| by 30 power iterations, seed 0), threshold eps alpha / 2 times
// decay[it] (decay may be empty: ones), kind soft / hard / half; stops after niter or when
// ||x - x_old|| <= tol; monitorres: a growing residual is PLM_ERR_NOT_CONVERGED. cost:
// 0.5 ||r||^2 + eps ||x||_1 per iteration (ISTA: r before the update, FISTA: after).
enum class Thresh { soft, hard, half };
struct Sparse {
    int64_t niter = 10;
    double eps = 0.1, alpha = 0, tol = 1e-10;
    Thresh kind = Thresh::soft;
    std::vector<double> decay;
    bool monitorres = false;
    bool fista = false;
};
void ista(const ops::Operator::Ptr &op, const Parts &y, const Parts &x, const Sparse &o, Info &info,
          const Monitor &mon = {});

// <Op u, v> against <u, Op^H v> for u on the domain and v on the range filled with the same
// pseudo-random values on every rank count. Collective.
struct DotTest {
    double yy_re, yy_im, xx_re, xx_im;
    bool passed;
};
DotTest dottest(const ops::Operator &op, double rtol);

}  // namespace plm::solvers
