// Layout math of a distributed array: global shape, distributed axis, partition and every
// rank's local shape. Pure functions, no communication.
#pragma once

#include <cstdint>
#include <vector>

#include "core/checked.hpp"

namespace plm {

using Shape = std::vector<int64_t>;

// The element count of a shape already known to fit (checked_product for caller-given shapes).
int64_t product(const Shape &s);

// PyLops-MPI's local_split: the first n % P ranks get one extra entry.
int64_t split_count(int64_t n, int nranks, int rank);
// Where rank's share of that split starts (the sum of the shares before it), in O(1).
int64_t split_start(int64_t n, int nranks, int rank);
// Start of part i when n entries are cut into nparts parts of ceil(n / nparts) (PyLops-MPI's
// SUMMA and Halo blocks): trailing parts are smaller or empty, never negative. i <= nparts.
int64_t ceil_split_start(int64_t n, int64_t nparts, int64_t i);

struct Layout {
    Shape global;
    int axis = 0;
    plm_partition_t partition = PLM_PARTITION_SCATTER;
    std::vector<Shape> local;  // one per rank

    int ndim() const { return static_cast<int>(global.size()); }
    int nranks() const { return static_cast<int>(local.size()); }
    // Global index along axis of rank r's first entry (0 for the BROADCAST kinds).
    int64_t offset(int r) const;
    int64_t local_size(int r) const { return product(local[static_cast<size_t>(r)]); }
    // The [outer, n, inner] view of shape s around axis a.
    static int64_t outer(const Shape &s, int a);
    static int64_t inner(const Shape &s, int a);
    bool scattered() const { return partition == PLM_PARTITION_SCATTER; }
    bool same_as(const Layout &o) const;
};

// Local shapes of the default split.
std::vector<Shape> default_local_shapes(const Shape &global, int axis, plm_partition_t p, int nranks);

// Checks a full set of local shapes against the global shape (SIZE_MISMATCH with the
// offending rank named, also when the extents along the axis sum past 64 bits).
void validate_local_shapes(const Layout &l);

// Checks the caller's own local shape before any gather: non-negative, equal to the global
// shape off the distributed axis (everywhere for the BROADCAST kinds), at most the global
// extent along it. So every later product of local extents fits in 64 bits.
void validate_own_shape(const Layout &l, const Shape &mine, int rank);

// Normalises an axis in -ndim..ndim-1 to 0..ndim-1, or throws INVALID_ARG.
int normalize_axis(int axis, int ndim);

// shape without axis a
Shape drop_axis(const Shape &s, int a);

}  // namespace plm
