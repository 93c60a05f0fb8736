// Backend selection policy: pure functions of the buffer's memory space and the
// communicator's state, so every combination is unit-tested without hardware.
#pragma once

#include "memory/space.hpp"

namespace plm::comm {

struct PolicyState {
    plm_backend_t forced = PLM_BACKEND_AUTO;  // config.backend: applies to device memory only
    bool nccl_attached = false;               // an NCCL communicator is attached
    bool nccl_enabled = true;                 // environment does not disable NCCL
    bool cuda_aware = false;                  // MPI takes device pointers
};

plm_backend_t select_backend(Space space, const PolicyState &state);

struct CudaAwareDecision {
    bool yes;
    plm_cuda_aware_source_t source;
};

// config_value: plm_comm_config_t.cuda_aware (-1 auto, 0, 1). env_value: the text of
// PYLOPS_MPI_CUDA_AWARE or nullptr; only "0" and "1" count. vendor: -1 no answer, 0, 1.
CudaAwareDecision decide_cuda_aware(int config_value, const char *env_value, int vendor);

// NCCL is disabled when PYLOPS_MPI_NCCL or NCCL_PYLOPS_MPI (PyLops-MPI's name) is "0".
bool nccl_enabled_from_env(const char *pylops_mpi_nccl, const char *nccl_pylops_mpi);

// How long, in seconds, a wait for an NCCL operation and each step of an NCCL teardown may
// take before the NCCL communicator is aborted and the communicator poisoned: the value of
// PYLOPS_MPI_NCCL_TIMEOUT when it is a finite number of seconds > 0 (fractions allowed,
// surrounding blanks ignored), else kNcclTimeoutDefault (unset, empty, 0, negative, junk).
constexpr double kNcclTimeoutDefault = 600;
double nccl_timeout_from_env(const char *value);

}  // namespace plm::comm
