// Local arithmetic on arrays of one layout, shared by the proximal operators and solvers.
#pragma once

#include "array/distributed_array.hpp"
#include "solvers/proximal.hpp"

namespace plm::solvers {

namespace prox_util {
void copy(const DistributedArray &x, DistributedArray &y);                    // y = x (nothing when x is y)
void axpby(double a, const DistributedArray &x, double b, DistributedArray &y);  // y = a x + b y
void scale(double a, DistributedArray &y);                                      // y = a y
// p, or fallback where a failed check left p unset (the agreement then throws before use).
const DistributedArray &or_else(const DistributedArray::Ptr &p, const DistributedArray &fallback);
}  // namespace prox_util

// "L1", "L0", "Box", "L2" or "user", for the solvers' tables.
const char *prox_name(const Prox &p);

}  // namespace plm::solvers
