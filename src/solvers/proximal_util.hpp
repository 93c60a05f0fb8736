// Helpers shared by the proximal operators and the proximal solvers.
#pragma once

#include "array/distributed_array.hpp"
#include "solvers/local_math.hpp"
#include "solvers/proximal.hpp"

namespace plm::solvers {

namespace prox_util {
// p, or fallback where a failed check left p unset (the agreement then throws before use).
const DistributedArray &or_else(const DistributedArray::Ptr &p, const DistributedArray &fallback);
// Folds what makes two L2 operators the same on every rank.
void fold_l2(comm::Agreement &ag, const L2 &p);
}  // namespace prox_util

// "L1", "L0", "Box", "L2" or "user", for the solvers' tables.
const char *prox_name(const Prox &p);

}  // namespace plm::solvers
