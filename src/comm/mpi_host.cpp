// Buffered MPI on host memory. Counts are 64-bit: a call past max_mpi_count() (INT_MAX)
// elements is split into chunks, and v-collectives whose counts or displacements do not fit
// an int fall back to chunked broadcasts or pairwise exchanges. This works on MPI-3 and
// MPI-4 alike; the MPI-4 large-count "_c" routines are a possible later shortcut.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "comm/backend.hpp"

namespace plm::comm {

namespace {

std::atomic<int64_t> g_max_count{INT_MAX};

MPI_Datatype mpi_type(DType dt)
{
    switch (dt) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::c64: return MPI_C_FLOAT_COMPLEX;
    case DType::c128: return MPI_C_DOUBLE_COMPLEX;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op)
{
    switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::prod: return MPI_PROD;
    }
    return MPI_OP_NULL;
}

int peer(int p) { return p == kNoPeer ? MPI_PROC_NULL : p; }

plm_status_t mpi_error(int rc, const char *what, char *msg)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::snprintf(msg, kMsgLen, "%s: %.*s", what, len, text);
    return PLM_ERR_MPI;
}

#define PLM_MPI_TRY(call)                                        \
    do {                                                         \
        int plm_rc_ = (call);                                    \
        if (plm_rc_ != MPI_SUCCESS) return mpi_error(plm_rc_, #call, msg); \
    } while (0)

// Empty messages may come with NULL buffers: never offset those.
const char *at(const void *p, int64_t elems, DType dt)
{
    return p ? static_cast<const char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)) : nullptr;
}
char *at(void *p, int64_t elems, DType dt)
{
    return p ? static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)) : nullptr;
}

int64_t nchunks(int64_t n, int64_t max) { return n <= 0 ? 1 : (n + max - 1) / max; }

plm_status_t allreduce(const CommView &c, const void *send, void *recv, int64_t count, DType dt, ReduceOp op, char *msg)
{
    if (is_complex(dt) && (op == ReduceOp::max || op == ReduceOp::min)) {
        std::snprintf(msg, kMsgLen, "allreduce MAX/MIN is not defined for complex data");
        return PLM_ERR_NOT_SUPPORTED;
    }
    const bool in_place = send == recv;
    const int64_t max = g_max_count.load();
    for (int64_t off = 0; off < count; off += max) {
        const int n = static_cast<int>(std::min(max, count - off));
        const void *s = in_place ? MPI_IN_PLACE : at(send, off, dt);
        PLM_MPI_TRY(MPI_Allreduce(s, at(recv, off, dt), n, mpi_type(dt), mpi_op(op), c.mpi));
    }
    return PLM_SUCCESS;
}

plm_status_t bcast(const CommView &c, void *buf, int64_t count, DType dt, int root, char *msg)
{
    const int64_t max = g_max_count.load();
    for (int64_t off = 0; off < count; off += max) {
        const int n = static_cast<int>(std::min(max, count - off));
        PLM_MPI_TRY(MPI_Bcast(at(buf, off, dt), n, mpi_type(dt), root, c.mpi));
    }
    return PLM_SUCCESS;
}

// Point-to-point messages of n elements are always sent as nchunks(n) messages (one empty
// message for n == 0), so both sides agree on the count from the same n.
plm_status_t send(const CommView &c, const void *buf, int64_t count, DType dt, int dest, int tag, char *msg)
{
    const int64_t max = g_max_count.load();
    for (int64_t k = 0, m = nchunks(count, max); k < m; ++k) {
        const int n = static_cast<int>(std::min(max, count - k * max));
        PLM_MPI_TRY(MPI_Send(at(buf, k * max, dt), n, mpi_type(dt), peer(dest), tag, c.mpi));
    }
    return PLM_SUCCESS;
}

plm_status_t recv(const CommView &c, void *buf, int64_t count, DType dt, int source, int tag, char *msg)
{
    const int64_t max = g_max_count.load();
    for (int64_t k = 0, m = nchunks(count, max); k < m; ++k) {
        const int n = static_cast<int>(std::min(max, count - k * max));
        PLM_MPI_TRY(MPI_Recv(at(buf, k * max, dt), n, mpi_type(dt), peer(source), tag, c.mpi, MPI_STATUS_IGNORE));
    }
    return PLM_SUCCESS;
}

plm_status_t sendrecv(const CommView &c, const void *sbuf, int64_t scount, int dest, int stag, void *rbuf,
                      int64_t rcount, int source, int rtag, DType dt, char *msg)
{
    const int64_t max = g_max_count.load();
    const int64_t ms = nchunks(scount, max), mr = nchunks(rcount, max);
    for (int64_t k = 0; k < std::max(ms, mr); ++k) {
        const int ns = k < ms ? static_cast<int>(std::min(max, scount - k * max)) : 0;
        const int nr = k < mr ? static_cast<int>(std::min(max, rcount - k * max)) : 0;
        const int d = k < ms ? peer(dest) : MPI_PROC_NULL;
        const int s = k < mr ? peer(source) : MPI_PROC_NULL;
        PLM_MPI_TRY(MPI_Sendrecv(at(sbuf, std::min(k, ms - 1) * max, dt), ns, mpi_type(dt), d, stag,
                                 at(rbuf, std::min(k, mr - 1) * max, dt), nr, mpi_type(dt), s, rtag, c.mpi,
                                 MPI_STATUS_IGNORE));
    }
    return PLM_SUCCESS;
}

bool fits(const int64_t *v, int n, int64_t max)
{
    return std::all_of(v, v + n, [max](int64_t x) { return x >= 0 && x <= max; });
}

std::vector<int> to_int(const int64_t *v, int n) { return std::vector<int>(v, v + n); }

plm_status_t allgatherv(const CommView &c, const void *send, int64_t send_count, void *recv, const int64_t *counts,
                        const int64_t *displs, DType dt, char *msg)
{
    if (send_count != counts[c.rank]) {
        std::snprintf(msg, kMsgLen, "allgatherv: send count %lld differs from counts[%d] = %lld",
                      static_cast<long long>(send_count), c.rank, static_cast<long long>(counts[c.rank]));
        return PLM_ERR_INTERNAL;
    }
    // One rank: a local copy, no MPI call. MPICH 4.0.2 (Debian 12, ch4) ignores displs[0] in
    // MPI_Allgatherv on a 1-rank communicator and writes the block at recv + 0; Open MPI honours
    // it. Doing the copy here is correct on every MPI (and cheaper).
    if (c.size == 1) {
        if (send_count > 0 && send != at(recv, displs[0], dt))
            std::memmove(at(recv, displs[0], dt), send, static_cast<size_t>(send_count) * dtype_size(dt));
        return PLM_SUCCESS;
    }
    const int64_t max = g_max_count.load();
    if (fits(counts, c.size, max) && fits(displs, c.size, max)) {
        bool uniform = true;
        for (int r = 0; r < c.size; ++r) uniform = uniform && counts[r] == counts[0] && displs[r] == r * counts[0];
        if (uniform) {
            PLM_MPI_TRY(MPI_Allgather(send, static_cast<int>(send_count), mpi_type(dt), recv,
                                      static_cast<int>(send_count), mpi_type(dt), c.mpi));
        } else {
            std::vector<int> cnt = to_int(counts, c.size), dsp = to_int(displs, c.size);
            PLM_MPI_TRY(MPI_Allgatherv(send, static_cast<int>(send_count), mpi_type(dt), recv, cnt.data(), dsp.data(),
                                       mpi_type(dt), c.mpi));
        }
        return PLM_SUCCESS;
    }
    // Past int counts or displacements: every rank broadcasts its block in chunks.
    std::memcpy(at(recv, displs[c.rank], dt), send, static_cast<size_t>(send_count) * dtype_size(dt));
    for (int r = 0; r < c.size; ++r) {
        plm_status_t st = bcast(c, at(recv, displs[r], dt), counts[r], dt, r, msg);
        if (st != PLM_SUCCESS) return st;
    }
    return PLM_SUCCESS;
}

plm_status_t alltoallv(const CommView &c, const void *sbuf, const int64_t *scounts, const int64_t *sdispls,
                       void *rbuf, const int64_t *rcounts, const int64_t *rdispls, DType dt, char *msg)
{
    const int64_t max = g_max_count.load();
    // Counts differ between ranks, so the choice of path must be agreed on.
    int fit = fits(scounts, c.size, max) && fits(sdispls, c.size, max) && fits(rcounts, c.size, max) &&
              fits(rdispls, c.size, max);
    PLM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &fit, 1, MPI_INT, MPI_LAND, c.mpi));
    if (fit) {
        std::vector<int> sc = to_int(scounts, c.size), sd = to_int(sdispls, c.size);
        std::vector<int> rc = to_int(rcounts, c.size), rd = to_int(rdispls, c.size);
        PLM_MPI_TRY(MPI_Alltoallv(sbuf, sc.data(), sd.data(), mpi_type(dt), rbuf, rc.data(), rd.data(), mpi_type(dt),
                                  c.mpi));
        return PLM_SUCCESS;
    }
    // Large counts: pairwise exchanges in a shifted order, each chunked by sendrecv.
    for (int k = 0; k < c.size; ++k) {
        const int dest = (c.rank + k) % c.size, src = (c.rank - k + c.size) % c.size;
        plm_status_t st = sendrecv(c, at(sbuf, sdispls[dest], dt), scounts[dest], dest, 7, at(rbuf, rdispls[src], dt),
                                   rcounts[src], src, 7, dt, msg);
        if (st != PLM_SUCCESS) return st;
    }
    return PLM_SUCCESS;
}

const BackendOps kOps = {sizeof(BackendOps), "mpi_host", allreduce, allgatherv, bcast, send, recv, sendrecv, alltoallv};

}  // namespace

const BackendOps &mpi_host_ops() { return kOps; }

const BackendOps *backend_ops(plm_backend_t b)
{
    // mpi_cuda_aware, mpi_staged and nccl tables come with the CUDA build (GPU issue).
    return b == PLM_BACKEND_MPI_HOST ? &kOps : nullptr;
}

void set_max_mpi_count(int64_t n) { g_max_count.store(n > 0 && n <= INT_MAX ? n : INT_MAX); }
int64_t max_mpi_count() { return g_max_count.load(); }

}  // namespace plm::comm
