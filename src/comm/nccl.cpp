// NCCL backend: collectives and point-to-point on device memory through an NCCL communicator,
// enqueued on the caller's stream. A request is a CUDA event recorded after the operation;
// polling it also polls NCCL's asynchronous error, so a failed peer is reported rather than
// waited for forever. Complex data travels as float pairs (sum only). NCCL has no
// allgatherv: it becomes grouped broadcasts, without padding. Tags are ignored: NCCL matches
// messages by call order, which the callers keep. Built only with PLM_HAVE_NCCL.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <nccl.h>

#include "comm/nccl.hpp"
#include "comm/select.hpp"
#include "core/error.hpp"
#include "memory/cuda.hpp"

namespace plm::comm {

// ---- The pure parts (nccl.hpp), tested without a GPU by tests/comm/test_nccl_logic. ----

std::size_t Wire::elems(int64_t count) const
{
    PLM_REQUIRE(count >= 0, PLM_ERR_INVALID_ARG, "negative element count %lld", static_cast<long long>(count));
    return static_cast<std::size_t>(count) * per;
}

Wire wire(DType dt)
{
    switch (dt) {
    case DType::f32: return {ncclFloat32, 1};
    case DType::f64: return {ncclFloat64, 1};
    case DType::c64: return {ncclFloat32, 2};
    case DType::c128: return {ncclFloat64, 2};
    case DType::i32: return {ncclInt32, 1};
    case DType::i64: return {ncclInt64, 1};
    case DType::u8: return {ncclUint8, 1};
    }
    PLM_FAIL(PLM_ERR_NOT_SUPPORTED, "NCCL has no type for dtype %d", enum_value(dt));
}

ncclRedOp_t nccl_op(DType dt, ReduceOp op)
{
    PLM_REQUIRE(!is_complex(dt) || op == ReduceOp::sum, PLM_ERR_NOT_SUPPORTED,
                "NCCL reduces complex data as float pairs, so only sum is supported; use an MPI backend");
    switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::prod: return ncclProd;
    }
    PLM_FAIL(PLM_ERR_INVALID_ARG, "unknown reduction %d", enum_value(op));
}

bool uniform_blocks(const int64_t *counts, const int64_t *displs, int n)
{
    for (int r = 0; r < n; ++r)
        if (counts[r] != counts[0] || displs[r] != r * counts[0]) return false;
    return true;
}

// Two ranks on one GPU make NCCL hang or fail obscurely. Every rank holds the same table and
// reports the same pair: the lowest ranks of the lowest-ranked shared GPU.
void require_own_gpus(const std::vector<GpuPlace> &all)
{
    auto same = [&](int a, int b) {
        return all[a].host_hash == all[b].host_hash && !std::memcmp(all[a].uuid, all[b].uuid, sizeof all[a].uuid);
    };
    std::vector<int> idx(all.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) {
        if (all[a].host_hash != all[b].host_hash) return all[a].host_hash < all[b].host_hash;
        const int c = std::memcmp(all[a].uuid, all[b].uuid, sizeof all[a].uuid);
        return c != 0 ? c < 0 : a < b;
    });
    int first = -1, second = -1;
    for (std::size_t k = 1; k < idx.size(); ++k) {
        if (!same(idx[k - 1], idx[k]) || (first >= 0 && idx[k - 1] > first)) continue;
        first = idx[k - 1];
        second = idx[k];
    }
    if (first >= 0)
        PLM_FAIL(PLM_ERR_NCCL,
                 "ranks %d and %d share GPU %s on host %s: NCCL needs one GPU per rank; use the MPI backends "
                 "(PYLOPS_MPI_NCCL=0) or one rank per GPU",
                 first, second, all[first].bus, all[first].host);
}

namespace {

constexpr const char *kInitFailed = "NCCL initialisation failed";

void nccl_check(ncclResult_t rc, const char *what, ncclComm_t comm = nullptr)
{
    if (rc == ncclSuccess) return;
    const char *last = ncclGetLastError(comm);
    const bool more = last && *last;
    PLM_FAIL(PLM_ERR_NCCL, "%s: %s%s%s", what, ncclGetErrorString(rc), more ? ": " : "", more ? last : "");
}

// The NCCL communicator, shared by the backend and its requests: a request polled after the
// backend is gone must not touch a destroyed communicator. It is closed once: finalised and
// destroyed in an ordered teardown (Communicator's), or aborted (an error, a timeout, a
// disorderly teardown, plm_comm_abort); a borrowed one is never destroyed, only aborted by
// plm_comm_abort. Its requests take CUDA events from a small cache made with it, so starting
// an operation after an agreement makes no CUDA object.
struct Comm {
    ncclComm_t nccl = nullptr;
    bool owned = false;
    int device = 0;

    Comm() = default;
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    ~Comm()
    {
        // Not closed in order (a failed creation, a backend made outside a Communicator):
        // aborting never waits, destroying might.
        if (owned) abort();
        std::lock_guard<std::mutex> g(lock);
        for (cudaEvent_t e : events) cudaEventDestroy(e);
    }

    bool open() const { return nccl != nullptr; }

    void abort() noexcept
    {
        std::lock_guard<std::mutex> g(lock);
        if (nccl) ncclCommAbort(nccl);
        nccl = nullptr;
    }

    // Finalises (flushing its work, in step with the other ranks) and destroys it; an error
    // on the way aborts it instead.
    void finalize() noexcept
    {
        std::lock_guard<std::mutex> g(lock);
        if (!nccl) return;
        ncclResult_t st = ncclSuccess;
        const bool ok = ncclCommFinalize(nccl) == ncclSuccess && ncclCommGetAsyncError(nccl, &st) == ncclSuccess &&
                        st == ncclSuccess;
        if (ok)
            ncclCommDestroy(nccl);
        else
            ncclCommAbort(nccl);
        nccl = nullptr;
    }

    // The asynchronous error NCCL reports, if any: ncclSuccess while healthy.
    ncclResult_t async_error() const
    {
        if (!nccl) return ncclSuccess;
        ncclResult_t st = ncclSuccess;
        const ncclResult_t rc = ncclCommGetAsyncError(nccl, &st);
        if (rc != ncclSuccess) return rc;
        return st == ncclInProgress ? ncclSuccess : st;
    }

    // The event cache: kEvents made with the communicator, more only if that many requests
    // are in flight at once.
    static constexpr std::size_t kEvents = 16;
    void make_events()
    {
        events.reserve(kEvents);
        while (events.size() < kEvents) {
            cudaEvent_t e = nullptr;
            cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
            events.push_back(e);
        }
    }
    cudaEvent_t take_event()
    {
        {
            std::lock_guard<std::mutex> g(lock);
            if (!events.empty()) {
                cudaEvent_t e = events.back();
                events.pop_back();
                return e;
            }
        }
        cudaEvent_t e = nullptr;
        cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        return e;
    }
    void give_event(cudaEvent_t e) noexcept
    {
        std::lock_guard<std::mutex> g(lock);
        if (events.size() < events.capacity())
            events.push_back(e);
        else
            cudaEventDestroy(e);
    }

    mutable std::mutex lock;
    std::vector<cudaEvent_t> events;
};

// Completion of the work enqueued on a stream before record(). Polling also polls NCCL's
// asynchronous error, and a wait gives up after PYLOPS_MPI_NCCL_TIMEOUT seconds: either
// aborts the NCCL communicator (its peers then fail too, instead of waiting) and poisons the
// communicator, so a failed peer is reported rather than waited for forever.
class NcclPending final : public Pending {
public:
    NcclPending(std::shared_ptr<Comm> comm, Poison *poison) : comm_(std::move(comm)), poison_(poison)
    {
        event_ = comm_->take_event();
    }
    NcclPending(const NcclPending &) = delete;
    NcclPending &operator=(const NcclPending &) = delete;
    ~NcclPending() override
    {
        if (event_) comm_->give_event(event_);
    }

    void record(cudaStream_t s) { cuda::check(cudaEventRecord(event_, s), "cudaEventRecord"); }

    bool test() override
    {
        if (done_) return true;
        const cudaError_t rc = cudaEventQuery(event_);
        if (rc == cudaSuccess) return done_ = true;
        if (rc != cudaErrorNotReady) {
            (void)cudaGetLastError();
            fail(PLM_ERR_CUDA, "cudaEventQuery on an NCCL operation: %s (%s)", cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
        }
        const ncclResult_t err = comm_->async_error();
        if (err != ncclSuccess) fail(PLM_ERR_NCCL, "NCCL operation failed: %s", ncclGetErrorString(err));
        if (!comm_->open()) fail(PLM_ERR_NCCL, "the NCCL communicator was aborted while an operation was in flight");
        return false;
    }
    // Polls rather than cudaEventSynchronize, which would never return after a peer failure.
    void wait() override
    {
        const double limit = nccl_timeout_from_env(std::getenv("PYLOPS_MPI_NCCL_TIMEOUT"));
        if (!poll_for([&] { return test(); }, limit))
            fail(PLM_ERR_NCCL,
                 "an NCCL operation did not complete within %g s (PYLOPS_MPI_NCCL_TIMEOUT): a peer failed or "
                 "never took part",
                 limit);
    }

private:
    // Aborts the NCCL communicator, poisons and throws: the failure cannot be agreed.
    [[noreturn]] void fail(plm_status_t status, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
    {
        comm_->abort();
        char text[kMsgLen];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        fail_unagreed(poison_, Error(status, std::string(text) + "; its NCCL communicator was aborted"));
    }

    std::shared_ptr<Comm> comm_;
    Poison *poison_;
    cudaEvent_t event_ = nullptr;
    bool done_ = false;
};

// Empty blocks may come with NULL buffers: never offset those.
char *at(void *p, int64_t elems, DType dt)
{
    return p ? static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)) : nullptr;
}
const char *at(const void *p, int64_t elems, DType dt) { return at(const_cast<void *>(p), elems, dt); }

// ncclGroupStart/End. A group left by an exception is closed unchecked: NCCL drops a group
// in which a call failed (arguments are checked before a group opens, so that is rare).
class Group {
public:
    Group() { nccl_check(ncclGroupStart(), "ncclGroupStart"); }
    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;
    ~Group()
    {
        if (open_) ncclGroupEnd();
    }
    void end(ncclComm_t comm)
    {
        open_ = false;
        nccl_check(ncclGroupEnd(), "ncclGroupEnd", comm);
    }

private:
    bool open_ = true;
};

std::shared_ptr<Comm> create(const CommView &v, int device);

class NcclBackend final : public Backend {
public:
    // comm may be null: a split's communicator is made on first use (below).
    NcclBackend(const CommView &v, std::shared_ptr<Comm> comm, int device)
        : Backend(v), comm_(std::move(comm)), device_(device)
    {
    }

    plm_backend_t kind() const override { return PLM_BACKEND_NCCL; }

    Request iallreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        const Wire w = wire(dt);
        const ncclRedOp_t o = nccl_op(dt, op);
        const std::size_t n = w.elems(count);
        return launch(e, [&](cudaStream_t s) {
            check(ncclAllReduce(send, recv, n, w.type, o, nccl(), s), "ncclAllReduce");
        });
    }

    Request ireduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
                    int root) override
    {
        const Wire w = wire(dt);
        const ncclRedOp_t o = nccl_op(dt, op);
        const std::size_t n = w.elems(count);
        require_rank(root, "root");
        // NCCL reads recvbuff on the root only; elsewhere it gets a valid pointer it ignores.
        void *out = view_.rank == root ? recv : const_cast<void *>(send);
        return launch(e, [&](cudaStream_t s) {
            check(ncclReduce(send, out, n, w.type, o, root, nccl(), s), "ncclReduce");
        });
    }

    Request ibcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        const Wire w = wire(dt);
        const std::size_t n = w.elems(count);
        require_rank(root, "root");
        return launch(e, [&](cudaStream_t s) {
            check(ncclBroadcast(buf, buf, n, w.type, root, nccl(), s), "ncclBroadcast");
        });
    }

    Request iallgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                        DType dt) override
    {
        const Wire w = wire(dt);
        const int me = view_.rank, np = view_.size;
        for (int r = 0; r < np; ++r) w.elems(counts[r]);
        if (uniform_blocks(counts, displs, np))  // NCCL works in place when send already sits at recv + displs[me]
            return launch(e, [&](cudaStream_t s) {
                check(ncclAllGather(send, recv, w.elems(counts[0]), w.type, nccl(), s), "ncclAllGather");
            });
        return launch(e, [&](cudaStream_t s) {
            Group g;
            for (int r = 0; r < np; ++r) {
                if (counts[r] == 0) continue;
                char *block = at(recv, displs[r], dt);
                const void *from = r == me ? send : block;
                check(ncclBroadcast(from, block, w.elems(counts[r]), w.type, r, nccl(), s), "ncclBroadcast");
            }
            g.end(nccl());
        });
    }

    Request isend(const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag) override
    {
        return one_message(e, dt, {true, const_cast<void *>(buf), count, dest, tag});
    }

    Request irecv(const Exec &e, void *buf, int64_t count, DType dt, int source, int tag) override
    {
        return one_message(e, dt, {false, buf, count, source, tag});
    }

    // Empty messages and kNoPeer are skipped on both sides alike, so call order still matches.
    Request iexchange(const Exec &e, DType dt, const Message *msgs, std::size_t n) override
    {
        const Wire w = wire(dt);
        bool any = false;
        for (std::size_t i = 0; i < n; ++i) {
            w.elems(msgs[i].count);
            if (msgs[i].peer != kNoPeer) require_rank(msgs[i].peer, "peer");
            any = any || (msgs[i].peer != kNoPeer && msgs[i].count > 0);
        }
        if (!any) return Request();
        return launch(e, [&](cudaStream_t s) {
            Group g;
            for (std::size_t i = 0; i < n; ++i)
                if (msgs[i].peer != kNoPeer && msgs[i].count > 0)
                    p2p(msgs[i].send, msgs[i].buf, w.elems(msgs[i].count), w.type, msgs[i].peer, s);
            g.end(nccl());
        });
    }

    Request ialltoallv(const Exec &e, const void *sbuf, const int64_t *scounts, const int64_t *sdispls, void *rbuf,
                       const int64_t *rcounts, const int64_t *rdispls, DType dt, int /*tag*/) override
    {
        const Wire w = wire(dt);
        const int me = view_.rank, np = view_.size;
        for (int r = 0; r < np; ++r) {
            w.elems(scounts[r]);
            w.elems(rcounts[r]);
        }
        return launch(e, [&](cudaStream_t s) {
            const int64_t own = std::min(scounts[me], rcounts[me]);
            char *dst = at(rbuf, rdispls[me], dt);
            const char *src = at(sbuf, sdispls[me], dt);
            const std::size_t bytes = static_cast<std::size_t>(own) * dtype_size(dt);  // own >= 0: checked
            if (bytes && dst != src)
                cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
            Group g;
            for (int r = 0; r < np; ++r) {
                if (r == me) continue;
                if (rcounts[r] > 0) p2p(false, at(rbuf, rdispls[r], dt), w.elems(rcounts[r]), w.type, r, s);
                if (scounts[r] > 0)
                    p2p(true, const_cast<char *>(at(sbuf, sdispls[r], dt)), w.elems(scounts[r]), w.type, r, s);
            }
            g.end(nccl());
        });
    }

    // A communicator of its own, from a new unique id over sub, on this backend's device,
    // made by prepare() (Communicator::prepare_mask_group, plm_comm_split: before their
    // agreements) or, failing that, at its first device operation.
    std::unique_ptr<Backend> split(const CommView &sub) const override;
    void prepare() override { ensure(); }

    // Every NCCL backend takes part in the ordered teardown until closed, made or not, so all
    // ranks of a communicator take the same steps.
    bool needs_ordered_close() const override { return !closed_; }
    void close(bool orderly) noexcept override
    {
        closed_ = true;
        if (!comm_ || !comm_->owned) return;  // a borrowed communicator is the user's
        if (orderly)
            comm_->finalize();
        else
            comm_->abort();
    }
    plm_status_t async_error() override
    {
        if (!comm_) return PLM_SUCCESS;
        const ncclResult_t err = comm_->async_error();
        if (err == ncclSuccess) return PLM_SUCCESS;
        comm_->abort();
        char text[kMsgLen];
        std::snprintf(text, sizeof text, "NCCL reported an asynchronous error: %s; its NCCL communicator was aborted",
                      ncclGetErrorString(err));
        if (view_.poison) view_.poison->mark(PLM_ERR_NCCL, text);
        return PLM_ERR_NCCL;
    }
    void abort() noexcept override
    {
        if (comm_) comm_->abort();
    }

private:
    void ensure() const
    {
        if (!comm_) comm_ = create(view_, device_);
    }
    ncclComm_t nccl() const { return comm_->nccl; }
    void check(ncclResult_t rc, const char *what) const { nccl_check(rc, what, nccl()); }

    void require_rank(int r, const char *what) const
    {
        PLM_REQUIRE(r >= 0 && r < view_.size, PLM_ERR_INVALID_ARG, "%s %d is not a rank of this %d-rank communicator",
                    what, r, view_.size);
    }

    void p2p(bool send, void *buf, std::size_t n, ncclDataType_t t, int peer, cudaStream_t s) const
    {
        if (send)
            check(ncclSend(buf, n, t, peer, nccl(), s), "ncclSend");
        else
            check(ncclRecv(buf, n, t, peer, nccl(), s), "ncclRecv");
    }

    // Runs enqueue(stream) on the communicator's device and e's stream; the request completes
    // when the stream has passed the enqueued work.
    template <typename F> Request launch(const Exec &e, F &&enqueue) const
    {
        // Mask groups and splits have their NCCL communicator made before the agreement of
        // the call that needs it (prepare(), through Communicator::prepare_mask_group and
        // split); a caller that did not is served here, at the group's first device operation
        // (a collective, so every rank of the group takes part), not agreed.
        ensure();
        PLM_REQUIRE(comm_->open(), PLM_ERR_NCCL, "the NCCL communicator was aborted (the communicator is poisoned)");
        PLM_REQUIRE(e.device < 0 || e.device == comm_->device, PLM_ERR_INVALID_ARG,
                    "the NCCL communicator is on CUDA device %d, the data on device %d", comm_->device, e.device);
        Exec here = e;
        here.device = comm_->device;
        cuda::activate(here);
        auto p = std::make_unique<NcclPending>(comm_, view_.poison);  // first: nothing enqueued goes untracked
        const cudaStream_t s = cuda::stream_of(e);
        try {
            enqueue(s);
            p->record(s);
        } catch (const Error &x) {
            // Arguments were checked before: an NCCL or CUDA failure here, on this rank only,
            // while the peers' parts are queued. Abort, so they fail too, and poison.
            comm_->abort();
            fail_unagreed(view_.poison, x);
        }
        return Request(std::move(p));
    }

    mutable std::shared_ptr<Comm> comm_;
    int device_;
    bool closed_ = false;
};

// ---- Creation: every step ends in an agreement, so all ranks fail alike. ----

// What a step of the creation did on this rank: PLM_SUCCESS, or the status and message of the
// error it threw (std::bad_alloc: PLM_ERR_OUT_OF_MEMORY, so an allocation that fails on one rank
// is agreed as such; other errors: `status`).
struct Outcome {
    plm_status_t status = PLM_SUCCESS;
    std::string err;
};

template <typename F> Outcome attempt(F &&f, plm_status_t status)
{
    try {
        f();
        return {};
    } catch (const std::bad_alloc &) {
        return {PLM_ERR_OUT_OF_MEMORY, "out of memory"};
    } catch (const std::exception &x) {
        return {status, *x.what() ? x.what() : "unknown error"};
    } catch (...) {
        return {status, "unknown error"};
    }
}

// Every rank's outcome of a step, agreed: PLM_SUCCESS, or the largest failing status.
plm_status_t agree(MPI_Comm c, const Outcome &o)
{
    int in = static_cast<int>(o.status), out = 0;
    mpi_check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c), "MPI_Allreduce");
    return static_cast<plm_status_t>(out);
}

// Throws the agreed status on every rank once some rank failed: its own message where it failed.
void fail_together(plm_status_t agreed, const Outcome &o, const char *what)
{
    if (agreed == PLM_SUCCESS) return;
    if (!o.err.empty()) PLM_FAIL(agreed, "%s: %s", what, o.err.c_str());
    PLM_FAIL(agreed, "%s on another rank", what);
}

uint64_t fnv1a(const char *s, int n)
{
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
    return h;
}

GpuPlace locate(int device)
{
    PLM_REQUIRE(device >= 0, PLM_ERR_INVALID_ARG, "NCCL needs a CUDA device ordinal, got %d", device);
    cuda::check(cudaSetDevice(device), "cudaSetDevice");
    GpuPlace w{};
    cudaDeviceProp prop{};
    cuda::check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    std::memcpy(w.uuid, prop.uuid.bytes, sizeof w.uuid);
    cuda::check(cudaDeviceGetPCIBusId(w.bus, sizeof w.bus, device), "cudaDeviceGetPCIBusId");
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    mpi_check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
    w.host_hash = fnv1a(name, len);
    std::memcpy(w.host, name, std::min<std::size_t>(static_cast<std::size_t>(len), sizeof w.host - 1));
    w.ok = 1;
    return w;
}

// Every step that may fail (allocations included) is agreed before the next collective, so a
// rank that fails never leaves the others waiting in one.
void check_placement(const CommView &v, int device)
{
    GpuPlace me{};
    std::vector<GpuPlace> all;
    const Outcome o = attempt([&] {
        all.resize(static_cast<std::size_t>(v.size));
        me = locate(device);
    }, PLM_ERR_NCCL);
    fail_together(agree(v.mpi, o), o, kInitFailed);
    const int bytes = static_cast<int>(sizeof(GpuPlace));
    mpi_check(MPI_Allgather(&me, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, v.mpi), "MPI_Allgather");
    const Outcome shared = attempt([&] { require_own_gpus(all); }, PLM_ERR_NCCL);
    fail_together(agree(v.mpi, shared), shared, kInitFailed);
}

ncclUniqueId share_id(const CommView &v)
{
    struct {
        int status;
        ncclUniqueId id;
    } msg{};
    Outcome o;
    if (v.rank == 0) o = attempt([&] { nccl_check(ncclGetUniqueId(&msg.id), "ncclGetUniqueId"); }, PLM_ERR_NCCL);
    msg.status = static_cast<int>(o.status);
    mpi_check(MPI_Bcast(&msg, static_cast<int>(sizeof msg), MPI_BYTE, 0, v.mpi), "MPI_Bcast");
    fail_together(static_cast<plm_status_t>(msg.status), o, kInitFailed);
    return msg.id;
}

std::shared_ptr<Comm> create(const CommView &v, int device)
{
    check_placement(v, device);  // also makes device current, as ncclCommInitRank needs
    const ncclUniqueId id = share_id(v);
    // The library's own memory first, agreed: ncclCommInitRank is collective, and a rank whose
    // allocation failed before it would leave the others waiting in it for ever (the emulated
    // NCCL's fault table rows found that hang).
    std::shared_ptr<Comm> c;
    const Outcome made = attempt([&] {
        c = std::make_shared<Comm>();
        c->owned = true;
        c->device = device;
        c->events.reserve(Comm::kEvents);
    }, PLM_ERR_NCCL);
    fail_together(agree(v.mpi, made), made, kInitFailed);
    const Outcome o = attempt([&] {
        nccl_check(ncclCommInitRank(&c->nccl, v.size, id, v.rank), "ncclCommInitRank");
        c->make_events();
    }, PLM_ERR_NCCL);
    const plm_status_t agreed = agree(v.mpi, o);
    if (agreed != PLM_SUCCESS && c && c->nccl) {  // a failed init may still hand back a half-made communicator
        ncclCommAbort(c->nccl);
        c->nccl = nullptr;
    }
    fail_together(agreed, o, kInitFailed);
    return c;
}

std::shared_ptr<Comm> adopt(const CommView &v, ncclComm_t nccl)
{
    std::shared_ptr<Comm> c;
    const Outcome o = attempt([&] {
        c = std::make_shared<Comm>();
        c->nccl = nccl;
        int n = 0, r = 0;
        nccl_check(ncclCommCount(nccl, &n), "ncclCommCount", nccl);
        nccl_check(ncclCommUserRank(nccl, &r), "ncclCommUserRank", nccl);
        nccl_check(ncclCommCuDevice(nccl, &c->device), "ncclCommCuDevice", nccl);
        PLM_REQUIRE(n == v.size && r == v.rank, PLM_ERR_INVALID_ARG,
                    "it is rank %d of %d, the MPI communicator rank %d of %d", r, n, v.rank, v.size);
        cuda::check(cudaSetDevice(c->device), "cudaSetDevice");  // its events live there
        c->make_events();
    }, PLM_ERR_INVALID_ARG);
    fail_together(agree(v.mpi, o), o, "the NCCL communicator does not match the MPI communicator");
    return c;
}

std::unique_ptr<Backend> NcclBackend::split(const CommView &sub) const
{
    return std::make_unique<NcclBackend>(sub, nullptr, comm_ ? comm_->device : device_);
}

}  // namespace

std::unique_ptr<Backend> make_nccl(const CommView &v, void *nccl_comm, int device)
{
    std::shared_ptr<Comm> c = nccl_comm ? adopt(v, static_cast<ncclComm_t>(nccl_comm)) : create(v, device);
    const int d = c->device;
    return std::make_unique<NcclBackend>(v, std::move(c), d);
}

int nccl_comm_device(void *nccl_comm)
{
    int d = -1;
    auto c = static_cast<ncclComm_t>(nccl_comm);
    nccl_check(ncclCommCuDevice(c, &d), "ncclCommCuDevice", c);
    return d;
}

}  // namespace plm::comm
