// fftshift / ifftshift of distributed arrays (PyLops-MPI's fftshift_nd / ifftshift_nd).
#pragma once

#include <vector>

#include "array/distributed_array.hpp"

namespace plm {

// A new array on x's layout (dtype, space and distribution kept): x rolled by n / 2 along
// each of axes (fftshift), or by -(n / 2) (ifftshift, inverse); axes empty means every
// axis. Along the distributed axis of a SCATTER array the slices move between ranks (one
// all-to-all exchange of at most the local block); every other axis, and every axis of the
// BROADCAST kinds, rolls locally. Collective on x's communicator through ag (built on it).
DistributedArray::Ptr fftshift(comm::Agreement &ag, const DistributedArray &x, const std::vector<int> &axes,
                               bool inverse);

}  // namespace plm
