// Solvers on distributed operators: CG and CGLS, with PyLops' iteration and stopping rules.
// Work arrays are made once before the loop; each iteration fuses its reductions into one
// agreement per step (two per iteration), and applies the operator as often as the
// algorithm needs (CG: once, CGLS: twice).
#pragma once

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

// x holds x0 on entry and the solution on return. Collective on the operator's communicator.
// CG: op square (domain == range), Hermitian positive definite; stops when ||r||^2 <= tol.
void cg(const ops::Operator &op, const DistributedArray &y, DistributedArray &x, int64_t niter, double tol, Info &info);
// CGLS: min ||y - Op x||^2 + damp^2 ||x||^2; stops when ||Op^H r - damp^2 x||^2 <= tol.
void cgls(const ops::Operator &op, const DistributedArray &y, DistributedArray &x, int64_t niter, double damp,
          double tol, Info &info);

// <Op u, v> against <u, Op^H v> for u on the domain and v on the range filled with the same
// pseudo-random values on every rank count. Collective.
struct DotTest {
    double yy_re, yy_im, xx_re, xx_im;
    bool passed;
};
DotTest dottest(const ops::Operator &op, double rtol);

}  // namespace plm::solvers
