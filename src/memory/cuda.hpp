// CUDA helpers (memory/cuda_space.cpp) for the CUDA-built sources: memory spaces, device
// kernels, the NCCL backend. Included only in CUDA builds (PLM_HAVE_CUDA).
#pragma once

#include <cuda_runtime.h>

#include "memory/space.hpp"

namespace plm::cuda {

// Unless rc is cudaSuccess: PLM_ERR_CUDA "what: <CUDA's error string>", thrown before the
// agreement of the thread's call, recorded after it (core/device_fault.hpp).
void check(cudaError_t rc, const char *what);

// An allocation (cudaMalloc, cudaMallocHost) of bytes failed with rc: throws
// PLM_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation, else PLM_ERR_CUDA with CUDA's message.
[[noreturn]] void alloc_failed(cudaError_t rc, const char *what, std::size_t bytes);

inline cudaStream_t stream_of(const Exec &e) { return static_cast<cudaStream_t>(e.stream.handle); }

// Makes e.device the calling thread's current device when it is set (>= 0).
void activate(const Exec &e);

}  // namespace plm::cuda
