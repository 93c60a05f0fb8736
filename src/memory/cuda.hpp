// CUDA helpers (memory/cuda_space.cpp) for the CUDA-built sources: memory spaces, device
// kernels, the NCCL backend. Included only in CUDA builds (PLM_HAVE_CUDA).
#pragma once

#include <cuda_runtime.h>

#include "memory/space.hpp"

namespace plm::cuda {

// Throws PLM_ERR_CUDA "what: <CUDA's error string>" unless rc is cudaSuccess.
void check(cudaError_t rc, const char *what);

inline cudaStream_t stream_of(const Exec &e) { return static_cast<cudaStream_t>(e.stream.handle); }

// Makes e.device the calling thread's current device when it is set (>= 0).
void activate(const Exec &e);

}  // namespace plm::cuda
