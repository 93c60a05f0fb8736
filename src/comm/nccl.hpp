// The parts of the NCCL backend (comm/nccl.cpp) that need no GPU, declared for white-box
// tests (tests/comm/test_nccl_logic.cpp). NCCL builds only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <nccl.h>

#include "comm/backend.hpp"

namespace plm::comm {

// An NCCL type and how many of its elements make one element of the dtype (complex: 2).
struct Wire {
    ncclDataType_t type;
    std::size_t per;
    std::size_t elems(int64_t count) const;  // INVALID_ARG for a negative count
};
Wire wire(DType dt);

// The NCCL reduction; complex data only sum (NOT_SUPPORTED otherwise, with a message).
ncclRedOp_t nccl_op(DType dt, ReduceOp op);

// Blocks (counts[r] at displs[r]) equal and in rank order: one ncclAllGather does them.
bool uniform_blocks(const int64_t *counts, const int64_t *displs, int n);

// Where a rank runs: its GPU and a hash of its host name (a prefix kept for messages).
struct GpuPlace {
    int ok;
    unsigned char uuid[16];
    char bus[32];
    char host[64];
    uint64_t host_hash;
};
// Throws PLM_ERR_NCCL naming the lowest pair of ranks that share a GPU on one host, if any.
void require_own_gpus(const std::vector<GpuPlace> &all);

}  // namespace plm::comm
