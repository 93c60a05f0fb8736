// The emulated NCCL: NCCL's semantics over MPI, for the NCCL backend's logic in CI.
// - A communicator is an MPI communicator of its members in NCCL rank order, bootstrapped from
//   the unique id over MPI_COMM_WORLD (the id names the process that made it, which gathers
//   the members), plus a second one that carries abort notices.
// - Operations are queued on the caller's stream and posted as non-blocking MPI when the stream
//   reaches them; they complete when their MPI requests do, so polling the event recorded
//   after them (cudaEventQuery) is what moves them on, as the GPU would.
// - Calls between ncclGroupStart and ncclGroupEnd are posted together at ncclGroupEnd; outside
//   a group each call is its own step, and point-to-point sends are synchronous (MPI_Issend):
//   a send and a receive that are not grouped block each other as they do in NCCL.
// - Errors: arguments are checked as NCCL checks them (ncclInvalidArgument, device buffers);
//   an MPI failure or an injected fault (plm_emu_fail_nccl) makes ncclCommGetAsyncError report
//   ncclSystemError and leaves the operation hanging, as a failed collective; ncclCommAbort
//   ends the operations in flight and tells the peers, whose operations then report
//   ncclRemoteError.
// - There is no allgatherv (NCCL has none).
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "emu.hpp"

using namespace plm_emu;

namespace {

struct State {
    MPI_Comm mpi = MPI_COMM_NULL, ctl = MPI_COMM_NULL;
    int rank = 0, size = 1, device = 0;
    ncclResult_t async = ncclSuccess;
    bool aborted = false;
    std::string last_error;
    std::set<cudaStream_t> streams;

    // A peer's abort notice turns a healthy communicator's state into ncclRemoteError.
    void poll_notices()
    {
        if (aborted || ctl == MPI_COMM_NULL) return;
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, 1, ctl, &flag, &st);
        if (!flag) return;
        int dummy = 0;
        MPI_Recv(&dummy, 1, MPI_INT, st.MPI_SOURCE, 1, ctl, MPI_STATUS_IGNORE);
        if (async == ncclSuccess) {
            async = ncclRemoteError;
            last_error = "a peer aborted its communicator (emulated NCCL)";
        }
    }
};

}  // namespace

struct ncclComm {
    std::shared_ptr<State> s;
};

namespace {

thread_local std::string t_last_error;

ncclResult_t fail(ncclResult_t rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t rc, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    t_last_error = text;
    return rc;
}

MPI_Datatype mpi_type(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;  // half floats: not emulated
    }
}

size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

MPI_Op mpi_op(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum: return MPI_SUM;
    case ncclProd: return MPI_PROD;
    case ncclMax: return MPI_MAX;
    case ncclMin: return MPI_MIN;
    default: return MPI_OP_NULL;  // ncclAvg: not emulated
    }
}

// One call: what to post when its step starts.
struct Call {
    enum Kind { allreduce, reduce, bcast, allgather, send, recv } kind;
    std::shared_ptr<State> s;
    const void *send_buf;
    void *recv_buf;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;  // or peer
    bool grouped;
};

// A step of the stream: the calls of one group (or one ungrouped call), posted together.
class Step final : public Op {
public:
    explicit Step(std::vector<Call> calls) : calls_(std::move(calls)) {}
    ~Step() override { finish(); }

    void start() override
    {
        for (const Call &c : calls_) states_.insert(c.s.get());
        for (State *s : states_)
            if (s->aborted) {
                ended_ = true;
                return;
            }
        if (take_nccl_fault()) {
            for (State *s : states_) {
                s->async = ncclSystemError;
                s->last_error = "injected NCCL failure (plm_emu_fail_nccl)";
            }
            std::fprintf(stderr, "[emulated NCCL, pid %d] injected failure: the operation hangs until its communicator "
                                 "is aborted\n",
                         static_cast<int>(getpid()));
            hung_ = true;
            return;
        }
        hold_access();  // MPI reads and writes device memory until the requests complete
        held_ = true;
        for (const Call &c : calls_) post(c);
    }

    bool test() override
    {
        if (ended_) return true;
        for (State *s : states_)
            if (s->aborted) {  // the abort ends the operation (its data never arrives)
                finish();
                return true;
            }
        if (!hung_) {
            int done = 0;
            const int rc = reqs_.empty() ? MPI_SUCCESS
                                         : MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &done,
                                                       MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS) {
                for (State *s : states_) {
                    s->async = ncclSystemError;
                    s->last_error = "an MPI call of the emulated NCCL failed";
                }
                hung_ = true;
            } else if (done || reqs_.empty()) {
                reqs_.clear();
                finish();
                return true;
            }
        }
        for (State *s : states_) s->poll_notices();
        return false;
    }

private:
    void post(const Call &c)
    {
        State &s = *c.s;
        const MPI_Datatype t = mpi_type(c.type);
        const int n = static_cast<int>(c.count);
        MPI_Request r = MPI_REQUEST_NULL;
        int rc = MPI_SUCCESS;
        switch (c.kind) {
        case Call::allreduce:
            rc = MPI_Iallreduce(c.send_buf == c.recv_buf ? MPI_IN_PLACE : c.send_buf, c.recv_buf, n, t, mpi_op(c.op),
                                s.mpi, &r);
            break;
        case Call::reduce: {
            const bool root = s.rank == c.root;
            rc = MPI_Ireduce(root && c.send_buf == c.recv_buf ? MPI_IN_PLACE : c.send_buf, root ? c.recv_buf : nullptr,
                             n, t, mpi_op(c.op), c.root, s.mpi, &r);
            break;
        }
        case Call::bcast:
            if (s.rank == c.root && c.send_buf != c.recv_buf && c.count)
                std::memmove(c.recv_buf, c.send_buf, c.count * type_size(c.type));
            rc = MPI_Ibcast(c.recv_buf, n, t, c.root, s.mpi, &r);
            break;
        case Call::allgather: {
            const char *mine = static_cast<const char *>(c.recv_buf) + c.count * type_size(c.type) * s.rank;
            rc = MPI_Iallgather(c.send_buf == mine ? MPI_IN_PLACE : c.send_buf, n, t, c.recv_buf, n, t, s.mpi, &r);
            break;
        }
        case Call::send:
            // Synchronous: completes only when the peer receives, as an NCCL send does.
            rc = MPI_Issend(c.send_buf, n, t, c.root, 0, s.mpi, &r);
            break;
        case Call::recv: rc = MPI_Irecv(c.recv_buf, n, t, c.root, 0, s.mpi, &r); break;
        }
        if (rc != MPI_SUCCESS) {
            s.async = ncclSystemError;
            s.last_error = "an MPI call of the emulated NCCL failed";
            hung_ = true;
            return;
        }
        reqs_.push_back(r);
    }

    // Gives up whatever is still posted (an abort) and the hold on device memory.
    void finish() noexcept
    {
        int fin = 0;
        MPI_Finalized(&fin);
        for (MPI_Request &r : reqs_)
            if (r != MPI_REQUEST_NULL && !fin) {
                MPI_Cancel(&r);
                MPI_Request_free(&r);
            }
        reqs_.clear();
        if (held_) release_access();
        held_ = false;
        ended_ = true;
    }

    std::vector<Call> calls_;
    std::set<State *> states_;
    std::vector<MPI_Request> reqs_;
    bool held_ = false, hung_ = false, ended_ = false;
};

// The group being built on this thread (depth > 0).
thread_local int t_depth = 0;
thread_local std::vector<std::pair<cudaStream_t, Call>> t_group;
thread_local ncclResult_t t_group_error = ncclSuccess;

// A call's argument error inside a group also fails the group.
ncclResult_t noted(ncclResult_t rc)
{
    if (rc != ncclSuccess && t_depth > 0) t_group_error = rc;
    return rc;
}

ncclResult_t submit(cudaStream_t stream, Call c)
{
    c.s->streams.insert(stream);
    if (t_depth > 0) {
        c.grouped = true;
        t_group.emplace_back(stream, std::move(c));
        return ncclSuccess;
    }
    std::vector<Call> one;
    one.push_back(std::move(c));
    if (enqueue(stream, std::make_unique<Step>(std::move(one))) != cudaSuccess)
        return fail(ncclUnhandledCudaError, "the stream of an NCCL call failed: %s", cudaGetErrorString(sticky_error()));
    return ncclSuccess;
}

// NCCL's argument checks: a live communicator, a type and op it has, device buffers that hold
// count elements.
ncclResult_t check(ncclComm_t comm, ncclDataType_t type, const void *buf, size_t count, const char *what)
{
    if (!comm || !comm->s) return fail(ncclInvalidArgument, "%s: NULL communicator", what);
    if (comm->s->aborted) return fail(ncclInvalidUsage, "%s: the communicator was aborted", what);
    if (mpi_type(type) == MPI_DATATYPE_NULL) return fail(ncclInvalidArgument, "%s: data type %d", what, type);
    if (count > 0x7fffffffu) return fail(ncclInvalidArgument, "%s: count %zu past the emulation's int", what, count);
    if (count == 0) return ncclSuccess;
    if (!buf) return fail(ncclInvalidArgument, "%s: NULL buffer", what);
    if (kind_of(buf) != Mem::device)
        return fail(ncclInvalidArgument, "%s: buffer %p is not device memory", what, buf);
    if (!device_range(buf, count * type_size(type)))
        return fail(ncclInvalidArgument, "%s: %zu elements at %p run past their device allocation", what, count, buf);
    return ncclSuccess;
}

ncclResult_t check_rank(ncclComm_t comm, int r, const char *what)
{
    return r >= 0 && r < comm->s->size ? ncclSuccess
                                       : fail(ncclInvalidArgument, "%s %d out of range (%d ranks)", what, r, comm->s->size);
}

#define TRY(x)                                    \
    do {                                          \
        const ncclResult_t rc_ = (x);             \
        if (rc_ != ncclSuccess) return rc_;       \
    } while (0)

int g_tag_ub = 0;
int tag_ub()
{
    if (!g_tag_ub) {
        int *v = nullptr, flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
        g_tag_ub = flag && v ? *v : 32767;
    }
    return g_tag_ub;
}

struct Id {
    char magic[8];
    int world_rank;
    unsigned serial;
};
unsigned g_serial = 0;

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: NULL id");
    int init = 0;
    MPI_Initialized(&init);
    if (!init) return fail(ncclSystemError, "the emulated NCCL bootstraps over MPI: call MPI_Init first");
    Id x{};
    std::memcpy(x.magic, "plmemu", 7);
    MPI_Comm_rank(MPI_COMM_WORLD, &x.world_rank);
    x.serial = ++g_serial;
    std::memset(id, 0, sizeof *id);
    std::memcpy(id->internal, &x, sizeof x);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId uid, int rank)
{
    if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: NULL comm");
    *comm = nullptr;
    Id id;
    std::memcpy(&id, uid.internal, sizeof id);
    if (std::memcmp(id.magic, "plmemu", 7) != 0) return fail(ncclInvalidArgument, "ncclCommInitRank: not a unique id");
    if (nranks < 1 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d", rank, nranks);
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return fail(ncclUnhandledCudaError, "ncclCommInitRank: no device");
    // Gather the members' world ranks at the id's maker, in NCCL rank order, and share them.
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const int tag = tag_ub() - 2 - static_cast<int>(id.serial % 100000) * 2;
    std::vector<int> world(static_cast<size_t>(nranks), -1);
    if (me == id.world_rank) {
        world[static_cast<size_t>(rank)] = me;
        for (int k = 1; k < nranks; ++k) {
            int msg[2];
            MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (msg[0] >= 0 && msg[0] < nranks) world[static_cast<size_t>(msg[0])] = msg[1];
        }
        for (int k = 0; k < nranks; ++k)
            if (k != rank) MPI_Send(world.data(), nranks, MPI_INT, world[static_cast<size_t>(k)], tag + 1, MPI_COMM_WORLD);
    } else {
        const int msg[2] = {rank, me};
        MPI_Send(msg, 2, MPI_INT, id.world_rank, tag, MPI_COMM_WORLD);
        MPI_Recv(world.data(), nranks, MPI_INT, id.world_rank, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int w : world)
        if (w < 0) return fail(ncclInvalidUsage, "ncclCommInitRank: two members claimed one rank");
    auto s = std::make_shared<State>();
    MPI_Group all, members;
    MPI_Comm_group(MPI_COMM_WORLD, &all);
    MPI_Group_incl(all, nranks, world.data(), &members);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &s->mpi);
    MPI_Group_free(&members);
    MPI_Group_free(&all);
    if (rc != MPI_SUCCESS || MPI_Comm_dup(s->mpi, &s->ctl) != MPI_SUCCESS)
        return fail(ncclSystemError, "ncclCommInitRank: MPI could not make the communicator");
    MPI_Comm_set_errhandler(s->mpi, MPI_ERRORS_RETURN);
    s->rank = rank;
    s->size = nranks;
    s->device = dev;
    *comm = new ncclComm{s};
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    if (!comm || !comm->s) return fail(ncclInvalidArgument, "ncclCommFinalize: NULL comm");
    // Flushes the operations queued on it.
    for (cudaStream_t st : comm->s->streams)
        if (check_stream(st) == cudaSuccess && sync_stream(st) != cudaSuccess)
            return fail(ncclUnhandledCudaError, "ncclCommFinalize: its stream failed");
    return comm->s->async;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return fail(ncclInvalidArgument, "ncclCommDestroy: NULL comm");
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && !comm->s->aborted) {
        MPI_Comm_free(&comm->s->mpi);
        MPI_Comm_free(&comm->s->ctl);
    }
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm) return ncclSuccess;
    State &s = *comm->s;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!s.aborted && !fin) {
        // Tell the peers (fire and forget), so their operations fail instead of waiting.
        for (int p = 0; p < s.size; ++p) {
            if (p == s.rank) continue;
            static const int one = 1;
            MPI_Request r;
            if (MPI_Isend(&one, 1, MPI_INT, p, 1, s.ctl, &r) == MPI_SUCCESS) MPI_Request_free(&r);
        }
    }
    s.aborted = true;  // in-flight operations end at their next poll; the MPI communicators are left
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async_error)
{
    if (!comm || !async_error) return ncclInvalidArgument;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    comm->s->poll_notices();
    *async_error = comm->s->async;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count) return ncclInvalidArgument;
    *count = comm->s->size;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device) return ncclInvalidArgument;
    *device = comm->s->device;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank) return ncclInvalidArgument;
    *rank = comm->s->rank;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    if (comm && comm->s && !comm->s->last_error.empty()) return comm->s->last_error.c_str();
    return t_last_error.c_str();
}

ncclResult_t ncclGroupStart(void)
{
    if (t_depth++ == 0) {
        t_group.clear();
        t_group_error = ncclSuccess;
    }
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (t_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--t_depth > 0) return ncclSuccess;
    auto group = std::move(t_group);
    t_group.clear();
    if (t_group_error != ncclSuccess) return t_group_error;  // NCCL drops a group in which a call failed
    // One step per stream, in the order the streams first appear.
    std::vector<cudaStream_t> order;
    for (auto &sc : group)
        if (std::find(order.begin(), order.end(), sc.first) == order.end()) order.push_back(sc.first);
    for (cudaStream_t st : order) {
        std::vector<Call> calls;
        for (auto &sc : group)
            if (sc.first == st) calls.push_back(sc.second);
        if (enqueue(st, std::make_unique<Step>(std::move(calls))) != cudaSuccess)
            return fail(ncclUnhandledCudaError, "ncclGroupEnd: the stream failed: %s", cudaGetErrorString(sticky_error()));
    }
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, sendbuff, count, "ncclAllReduce sendbuff")));
    TRY(noted(check(comm, datatype, recvbuff, count, "ncclAllReduce recvbuff")));
    if (mpi_op(op) == MPI_OP_NULL) return noted(fail(ncclInvalidArgument, "ncclAllReduce: op %d", op));
    return noted(submit(stream, {Call::allreduce, comm->s, sendbuff, recvbuff, count, datatype, op, 0, false}));
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, sendbuff, count, "ncclReduce sendbuff")));
    TRY(noted(check_rank(comm, root, "ncclReduce: root")));
    if (comm->s->rank == root) TRY(noted(check(comm, datatype, recvbuff, count, "ncclReduce recvbuff")));
    if (mpi_op(op) == MPI_OP_NULL) return noted(fail(ncclInvalidArgument, "ncclReduce: op %d", op));
    return noted(submit(stream, {Call::reduce, comm->s, sendbuff, recvbuff, count, datatype, op, root, false}));
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, recvbuff, count, "ncclBroadcast recvbuff")));
    TRY(noted(check_rank(comm, root, "ncclBroadcast: root")));
    if (comm->s->rank == root) TRY(noted(check(comm, datatype, sendbuff, count, "ncclBroadcast sendbuff")));
    return noted(submit(stream, {Call::bcast, comm->s, sendbuff, recvbuff, count, datatype, ncclSum, root, false}));
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, sendbuff, sendcount, "ncclAllGather sendbuff")));
    TRY(noted(check(comm, datatype, recvbuff, sendcount * static_cast<size_t>(comm->s->size), "ncclAllGather recvbuff")));
    return noted(submit(stream, {Call::allgather, comm->s, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, false}));
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, sendbuff, count, "ncclSend")));
    TRY(noted(check_rank(comm, peer, "ncclSend: peer")));
    return noted(submit(stream, {Call::send, comm->s, sendbuff, nullptr, count, datatype, ncclSum, peer, false}));
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    TRY(noted(check(comm, datatype, recvbuff, count, "ncclRecv")));
    TRY(noted(check_rank(comm, peer, "ncclRecv: peer")));
    return noted(submit(stream, {Call::recv, comm->s, nullptr, recvbuff, count, datatype, ncclSum, peer, false}));
}

}  // extern "C"
