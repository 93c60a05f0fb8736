// A library communicator: a private duplicate of the user's MPI communicator (errors
// return, never abort), plus the state the backend policy reads: CUDA-awareness and its
// source, an optional NCCL communicator, the device and the stream.
#pragma once

#include <memory>

#include "comm/backend.hpp"
#include "comm/select.hpp"

namespace plm::comm {

struct Config {
    plm_backend_t backend = PLM_BACKEND_AUTO;
    int cuda_aware = -1;
    int device = -1;
    void *stream = nullptr;
    void *nccl_comm = nullptr;
};

// Reads a user config (validating struct_size, magic and field values); nullptr -> defaults.
Config read_config(const plm_comm_config_t *cfg);

class Communicator {
public:
    // Collective on user. Duplicates it; a bad config on any rank fails on every rank.
    static std::shared_ptr<Communicator> create(MPI_Comm user, const plm_comm_config_t *cfg);
    ~Communicator();
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;

    // Collective: ranks with the same color form the result, ordered by (key, rank).
    std::shared_ptr<Communicator> split(int color, int key) const;

    int rank() const { return view_.rank; }
    int size() const { return view_.size; }
    MPI_Comm mpi() const { return view_.mpi; }
    const CommView &view() const { return view_; }
    const Config &config() const { return cfg_; }
    const PolicyState &policy() const { return policy_; }
    plm_cuda_aware_source_t cuda_aware_source() const { return cuda_aware_source_; }
    Stream stream() const { return Stream{cfg_.stream}; }

    // What the policy picks for buffers in space s.
    plm_backend_t backend_for(Space s) const { return select_backend(s, policy_); }

private:
    Communicator() { view_.mpi = MPI_COMM_NULL; }
    CommView view_{};
    Config cfg_{};
    PolicyState policy_{};
    plm_cuda_aware_source_t cuda_aware_source_ = PLM_CUDA_AWARE_FROM_DEFAULT;
};

// What the MPI library says about CUDA support: 1, 0, or -1 when it has no query.
int vendor_cuda_aware_query();

// Throws PLM_ERR_MPI with MPI_Error_string when rc is not MPI_SUCCESS.
void mpi_check(int rc, const char *what);

}  // namespace plm::comm
