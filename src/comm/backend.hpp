// The backend seam. A Backend is one object per (communicator, memory space), chosen once
// when the communicator is created and agreed across its ranks. It owns its state (the MPI
// communicator it talks on, staging buffers, later an NCCL communicator) and implements
// non-blocking operations that return a Request; blocking calls are i* + wait. Entries a
// backend lacks throw PLM_ERR_NOT_SUPPORTED from the base class, never a NULL call.
//
// Counts and displacements are 64-bit element counts; kNoPeer means "no partner" in
// point-to-point calls (MPI_PROC_NULL on MPI). Buffers live in the backend's memory space.
//
// After an agreement nothing may allocate (core/alloc.hpp): Pending objects and the arrays an
// operation keeps until it completes come from comm/pool.hpp, topped up by every agreement;
// a host-staged backend's staging memory is reserved by reserve() inside the agreement's
// check. A failure the ranks cannot agree on any more poisons the communicator (Poison).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <mpi.h>

#include "core/device_fault.hpp"
#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::comm {

enum class ReduceOp { sum, max, min, prod };

constexpr int kNoPeer = -1;
constexpr std::size_t kMsgLen = 512;

// Whether a family of communicators (one plm_comm_create, its splits and mask groups) is
// still usable. A failure after an agreement that the ranks can no longer agree on (a device
// fault mid-collective, an NCCL error or timeout, an MPI error mid-operation) poisons it:
// every later agreement on it fails on every rank (Agreement::run() carries it), and
// plm_comm_get_async_error() reports it. The first cause is kept. Thread-safe.
class Poison final : public FaultSink {
public:
    bool set() const { return set_.load(std::memory_order_acquire); }
    // Records the cause unless one is recorded already. Never allocates. (Also where the
    // device faults of a call go once its agreement has run: core/device_fault.hpp.)
    void mark(plm_status_t status, const char *message) noexcept override;
    // PLM_SUCCESS while healthy.
    plm_status_t status() const;
    // The cause, NUL-terminated, truncated to n - 1 characters ("" while healthy).
    void message(char *out, std::size_t n) const;
    // The error later calls fail with (allocates: only once set()).
    Error error() const;

private:
    mutable std::mutex lock_;
    std::atomic<bool> set_{false};
    plm_status_t status_ = PLM_SUCCESS;
    char text_[kMsgLen] = "";
};

// The one way code after an agreement reports a failure it cannot agree on: poisons p (when
// not null) with e, then throws e's status with a message saying the communicator is unusable.
[[noreturn]] void fail_unagreed(Poison *p, const Error &e);

// What a backend talks on: an MPI communicator it does not own, its rank and size, and the
// health of its communicator (null for a backend made outside a Communicator).
struct CommView {
    MPI_Comm mpi = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    Poison *poison = nullptr;
};

// One operation in flight. test() and wait() throw the operation's error; once either has
// reported completion, both return at once. Pending objects live in the pool
// (comm/pool.hpp): starting an operation after an agreement allocates nothing.
class Pending {
public:
    virtual ~Pending() = default;
    virtual bool test() = 0;
    virtual void wait() = 0;

    static void *operator new(std::size_t bytes);
    static void operator delete(void *p, std::size_t bytes) noexcept;
};

// A move-only handle to a non-blocking operation. An empty Request is complete. The buffers
// of an operation belong to it until it completes; a Request destroyed while still in
// flight waits for it (and drops its error), so memory is never released under MPI.
class Request {
public:
    Request() = default;
    explicit Request(std::unique_ptr<Pending> p) : p_(std::move(p)) {}
    Request(Request &&) noexcept = default;
    Request &operator=(Request &&o) noexcept;
    Request(const Request &) = delete;
    Request &operator=(const Request &) = delete;
    ~Request();

    bool test();  // true once complete
    void wait();
    bool done() const { return !p_; }

    // One request that completes when all of rs have; their completion actions run in order.
    // Takes the vector over without allocating (reserve it before an agreement).
    static Request all(std::vector<Request> rs);
    // Runs f after this request completes (on the rank's thread, inside test/wait). A
    // std::function with captures past its inline buffer allocates: before agreements only.
    Request then(std::function<void()> f) &&;

private:
    void finish_quietly() noexcept;
    std::unique_ptr<Pending> p_;
};

class Backend {
public:
    explicit Backend(const CommView &v) : view_(v) {}
    virtual ~Backend() = default;
    Backend(const Backend &) = delete;
    Backend &operator=(const Backend &) = delete;

    virtual plm_backend_t kind() const = 0;
    const char *name() const;
    const CommView &view() const { return view_; }

    // send == recv: in place.
    virtual Request iallreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op);
    // Every rank's send combined into recv on root (recv is not read elsewhere: may be NULL).
    // send == recv on root: in place.
    virtual Request ireduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
                            int root);
    // This rank sends counts[rank] elements; rank r's land at recv + displs[r]. No padding.
    virtual Request iallgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts,
                                const int64_t *displs, DType dt);
    virtual Request ibcast(const Exec &e, void *buf, int64_t count, DType dt, int root);
    virtual Request isend(const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag);
    virtual Request irecv(const Exec &e, void *buf, int64_t count, DType dt, int source, int tag);
    // One message of a point-to-point batch: buf to (send) or from (receive) peer on tag.
    struct Message {
        bool send;
        void *buf;
        int64_t count;
        int peer;
        int tag;
    };
    // Posts a batch of sends and receives as one request (a halo exchange, a sendrecv).
    virtual Request iexchange(const Exec &e, DType dt, const Message *msgs, std::size_t n);
    // Copies a rank's own block between two buffers of this backend's memory (an all-to-all's
    // block that stays here), queued on e's stream.
    virtual void copy_own_block(const Exec &e, void *dst, const void *src, std::size_t bytes);
    // Point-to-point exchanges on tag, so concurrent exchanges with different tags never mix.
    virtual Request ialltoallv(const Exec &e, const void *sbuf, const int64_t *scounts, const int64_t *sdispls,
                               void *rbuf, const int64_t *rcounts, const int64_t *rdispls, DType dt, int tag);
    // Blocking collectives: i* + wait, unless a backend has a faster blocking path (MPI's
    // blocking collectives are tuned better than its non-blocking ones: at 2 ranks and 1e3
    // doubles, Open MPI 4.1's MPI_Iallreduce + MPI_Wait takes twice MPI_Allreduce's time).
    virtual void allreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op);
    virtual void allgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                            DType dt);
    virtual void bcast(const Exec &e, void *buf, int64_t count, DType dt, int root);

    // The split hook: this backend's counterpart on a sub-communicator of its own (sub), with
    // its own state (an NCCL backend splits its NCCL communicator here).
    virtual std::unique_ptr<Backend> split(const CommView &sub) const;
    // Makes now the state a split backend would make at its first operation (an NCCL
    // communicator). Collective on the backend's ranks.
    virtual void prepare() {}
    // Makes operations that stage at most `bytes` at any one time take memory that exists
    // already (the host-staged backend: its staging arena, shared with its splits); others
    // need nothing. Call it inside an agreement's check(): it allocates and may throw.
    virtual void reserve(std::size_t bytes) { (void)bytes; }

    // Teardown and faults of device state that outlives single operations (an owned NCCL
    // communicator). needs_ordered_close(): the state must be closed collectively, in one
    // order on every rank (the same answer on every rank of a communicator, prepared or not).
    // close(orderly): orderly - the ranks met and agree it is healthy - finalises it
    // collectively; otherwise aborts it locally, never waiting. async_error(): an error
    // the device state reported on its own (NCCL's asynchronous errors); it aborts the state
    // and poisons the view. abort(): for plm_comm_abort, locally and at once.
    virtual bool needs_ordered_close() const { return false; }
    virtual void close(bool orderly) noexcept { (void)orderly; }
    virtual plm_status_t async_error() { return PLM_SUCCESS; }
    virtual void abort() noexcept {}

protected:
    [[noreturn]] void unsupported(const char *what) const;
    // isend/irecv as a batch of one, for backends whose iexchange is the native path.
    Request one_message(const Exec &e, DType dt, Message m) { return iexchange(e, dt, &m, 1); }
    CommView view_;
};

// Buffered MPI on host memory (and pinned host memory).
std::unique_ptr<Backend> make_mpi_host(const CommView &v);
// MPI given device pointers: synchronises the producer's stream (e.stream), then MPI.
std::unique_ptr<Backend> make_mpi_cuda_aware(const CommView &v);
// MPI on host staging buffers: copy out of `memory` on the stream, MPI, copy back. The
// staging buffers (in `staging`, pinned host on CUDA builds) are cached per backend, up to
// cache_bytes kept between calls, and freed with it. Blocking allreduce and bcast of more
// than chunk_bytes go in chunks whose copies overlap MPI on the neighbouring chunks. Tests
// pass memory = Space::host to run the staging logic without a GPU.
std::unique_ptr<Backend> make_mpi_staged(const CommView &v, Space memory, Space staging,
                                         std::size_t cache_bytes = std::size_t{64} << 20,
                                         std::size_t chunk_bytes = std::size_t{4} << 20);

// NCCL builds (comm/nccl.cpp): NCCL on device memory. nccl_comm: a borrowed ncclComm_t over
// exactly v's ranks in v's order, or nullptr to create one (owned) from v.mpi through an
// ncclUniqueId broadcast, on CUDA device `device`. Collective on v.mpi; fails on every rank
// alike (two ranks on one GPU, a failed initialisation, a borrowed comm of other ranks).
std::unique_ptr<Backend> make_nccl(const CommView &v, void *nccl_comm, int device);
// The CUDA device of an ncclComm_t (NCCL builds). Not collective.
int nccl_comm_device(void *nccl_comm);

// Is backend b compiled in and usable in this build?
bool backend_built(plm_backend_t b);

// Largest count handed to one MPI call before chunking (INT_MAX on MPI-3). Tests lower it to
// exercise the chunked paths on small data; pass 0 to restore the default.
void set_max_mpi_count(int64_t n);
int64_t max_mpi_count();

// Throws PLM_ERR_MPI with MPI_Error_string when rc is not MPI_SUCCESS.
void mpi_check(int rc, const char *what);

// Calls done() until it returns true or `seconds` have passed (yielding between calls);
// false on timeout. done() may throw.
template <typename F> bool poll_for(F &&done, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::yield();
    }
    return true;
}

// While alive, MPI returns errors it raises outside any communicator we own (a bad handle
// is reported on MPI_COMM_SELF or MPI_COMM_WORLD, whose default handler aborts; MPICH also
// reports failed requests there) instead of aborting. Restores the user's handlers.
class ReturnErrors {
public:
    ReturnErrors();
    ~ReturnErrors();
    ReturnErrors(const ReturnErrors &) = delete;
    ReturnErrors &operator=(const ReturnErrors &) = delete;

private:
    MPI_Comm comms_[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
    MPI_Errhandler old_[2] = {MPI_ERRHANDLER_NULL, MPI_ERRHANDLER_NULL};
};

}  // namespace plm::comm
