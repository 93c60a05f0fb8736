// The backend interface: a C-shaped, size-checked ops table per backend kind, so a backend
// built as a separate shared object (NCCL, CUDA) can plug in later without C++ ABI ties.
// Counts and displacements are 64-bit element counts; kNoPeer means "no partner" in
// point-to-point calls (MPI_PROC_NULL on MPI).
#pragma once

#include <cstddef>
#include <cstdint>

#include <mpi.h>

#include "core/dtype.hpp"

namespace plm::comm {

enum class ReduceOp { sum, max, min, prod };

constexpr int kNoPeer = -1;
constexpr std::size_t kMsgLen = 512;

// What a backend sees of a communicator.
struct CommView {
    MPI_Comm mpi;
    int rank;
    int size;
    void *nccl;    // ncclComm_t or nullptr
    void *stream;  // cudaStream_t or nullptr
};

// Every entry returns PLM_SUCCESS or an error with a message written to msg (kMsgLen bytes).
// send == recv in allreduce means in place.
struct BackendOps {
    std::size_t size;  // sizeof(BackendOps) of the provider
    const char *name;
    plm_status_t (*allreduce)(const CommView &c, const void *send, void *recv, int64_t count, DType dt,
                              ReduceOp op, char *msg);
    plm_status_t (*allgatherv)(const CommView &c, const void *send, int64_t send_count, void *recv,
                               const int64_t *counts, const int64_t *displs, DType dt, char *msg);
    plm_status_t (*bcast)(const CommView &c, void *buf, int64_t count, DType dt, int root, char *msg);
    plm_status_t (*send)(const CommView &c, const void *buf, int64_t count, DType dt, int dest, int tag, char *msg);
    plm_status_t (*recv)(const CommView &c, void *buf, int64_t count, DType dt, int source, int tag, char *msg);
    plm_status_t (*sendrecv)(const CommView &c, const void *sbuf, int64_t scount, int dest, int stag, void *rbuf,
                             int64_t rcount, int source, int rtag, DType dt, char *msg);
    plm_status_t (*alltoallv)(const CommView &c, const void *sbuf, const int64_t *scounts, const int64_t *sdispls,
                              void *rbuf, const int64_t *rcounts, const int64_t *rdispls, DType dt, char *msg);
};

// The table of a backend, or nullptr when it is not compiled into this build.
const BackendOps *backend_ops(plm_backend_t b);

// Buffered MPI on host memory (always present).
const BackendOps &mpi_host_ops();

// Largest count handed to one MPI call before chunking (INT_MAX on MPI-3). Tests lower it to
// exercise the chunked paths on small data; pass 0 to restore the default.
void set_max_mpi_count(int64_t n);
int64_t max_mpi_count();

}  // namespace plm::comm
