// Local arithmetic on arrays of one layout, shared by the solvers and the proximal layer: no
// communication, so callable anywhere after an agreement.
#pragma once

#include "array/distributed_array.hpp"

namespace plm::solvers::local {

void copy(const DistributedArray &x, DistributedArray &y);                    // y = x (nothing when x is y)
void axpby(double a, const DistributedArray &x, double b, DistributedArray &y);  // y = a x + b y
void scale(double a, DistributedArray &y);                                      // y = a y
// x[0] of this rank's block as a real number (0 when empty), for the solvers' tables; read back
// from device memory if need be.
double first(const DistributedArray &a);

}  // namespace plm::solvers::local
