// MPI backends: buffered MPI on host memory, and CUDA-aware MPI (the same calls on device
// pointers once the producer's stream is synchronised). Every operation is non-blocking
// (MPI_I*). Counts are 64-bit: a call past max_mpi_count() (INT_MAX) elements is split into
// chunks, and an allgatherv whose counts or displacements do not fit an int becomes chunked
// broadcasts. alltoallv is point-to-point on a tag, so exchanges with different tags can be
// in flight together. Works on MPI-3 and MPI-4, Open MPI and MPICH alike.
#include <algorithm>
#include <atomic>
#include <climits>
#include <stdexcept>
#include <vector>

#include "comm/backend.hpp"
#include "comm/pool.hpp"
#include "core/sim.hpp"
#include "core/error.hpp"

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

// MPI defines MAX and MIN on real types only.
void require_reducible(DType dt, ReduceOp op, const char *what)
{
    PLM_REQUIRE(!is_complex(dt) || op == ReduceOp::sum || op == ReduceOp::prod, PLM_ERR_NOT_SUPPORTED,
                "%s MAX/MIN is not defined for complex data", what);
}

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
int chunk(int64_t n, int64_t k, int64_t max) { return static_cast<int>(std::max<int64_t>(0, std::min(max, n - k * max))); }

bool fits(const int64_t *v, int n, int64_t max)
{
    return std::all_of(v, v + n, [max](int64_t x) { return x >= 0 && x <= max; });
}

#if defined(MPICH)
using QuietOnMpich = ReturnErrors;
#else
struct QuietOnMpich {
};
#endif

// Messages a count of n elements takes (at least one, even when empty, so both sides of a
// point-to-point message agree on the count from the same n), and requests of a collective
// (none for an empty one).
int64_t messages(int64_t n, int64_t max) { return nchunks(n, max); }
int64_t pieces(int64_t n, int64_t max) { return n <= 0 ? 0 : (n + max - 1) / max; }

// The MPI requests of one operation, and the int arrays MPI reads until they complete. Up to
// kInline requests live in the object; more (an alltoallv over many ranks, messages chunked
// past INT_MAX elements) and the int arrays come from the pool (comm/pool.hpp), which every
// agreement tops up for one operation over its ranks: nothing here allocates after one.
class MpiPending final : public Pending {
public:
    static constexpr std::size_t kInline = 8;
    static_assert(sizeof(MPI_Request) <= 8, "pool::op_bytes() counts 8 bytes per MPI request");

    // capacity: the requests this operation will post.
    explicit MpiPending(int64_t capacity) : cap_(static_cast<std::size_t>(capacity))
    {
        if (cap_ > kInline) more_ = pool::Array<MPI_Request>(cap_);
    }
    MpiPending(const MpiPending &) = delete;
    MpiPending &operator=(const MpiPending &) = delete;
    ~MpiPending() override
    {
        // Reached with live requests only when posting failed: MPI may still use the
        // buffers, so let it finish before they can be freed.
        for (MPI_Request &r : live())
            if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    // Adds the request a call made, or throws (the ones posted so far are waited for).
    // r by reference: it is read after the call that sets it has run.
    void post(int rc, const MPI_Request &r, const char *what)
    {
        mpi_check(rc, what);
        PLM_REQUIRE(n_ < cap_, PLM_ERR_INTERNAL, "%s: more MPI requests than counted (%zu)", what, cap_);
        reqs()[n_++] = r;
    }
    // n ints that live as long as the operation (counts and displacements MPI reads).
    int *ints(std::size_t n)
    {
        ints_ = pool::Array<int>(n);
        return ints_.data();
    }
    // Open MPI reports a failed request on its communicator, whose handler returns; MPICH
    // (4.0) reports it on MPI_COMM_WORLD's, fatal by default, so it is made to return.
    bool test() override
    {
        sim::before_mpi();
        [[maybe_unused]] QuietOnMpich quiet;
        for (MPI_Request &r : live()) {
            int flag = 0;
            const int rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) give_up(r, rc, "MPI_Test");
            if (!flag) return false;
        }
        n_ = 0;
        return true;
    }
    void wait() override
    {
        sim::before_mpi();
        [[maybe_unused]] QuietOnMpich quiet;
        for (MPI_Request &r : live()) {
            const int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) give_up(r, rc, "MPI_Wait");
        }
        n_ = 0;
    }

private:
    struct Span {
        MPI_Request *b, *e;
        MPI_Request *begin() const { return b; }
        MPI_Request *end() const { return e; }
    };
    MPI_Request *reqs() { return more_ ? more_.data() : inline_; }
    Span live() { return {reqs(), reqs() + n_}; }

    // The failed request is done; the others are finished before the error is thrown.
    [[noreturn]] void give_up(MPI_Request &failed, int rc, const char *what)
    {
        failed = MPI_REQUEST_NULL;
        for (MPI_Request &r : live())
            if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
        n_ = 0;
        mpi_check(rc, what);
        throw std::logic_error("unreachable");
    }
    std::size_t cap_, n_ = 0;
    MPI_Request inline_[kInline];
    pool::Array<MPI_Request> more_;
    pool::Array<int> ints_;
};

// Collectives are written once for both modes: Blocking runs the blocking MPI call (MPI's
// blocking collectives are the better tuned ones), otherwise the MPI_I* call is posted.
class MpiBackend final : public Backend {
public:
    MpiBackend(const CommView &v, bool cuda_aware)
        : Backend(v), cuda_aware_(cuda_aware), open_(cuda_aware ? std::make_unique<DeviceMemoryOpenToMpi>() : nullptr)
    {
    }

    plm_backend_t kind() const override { return cuda_aware_ ? PLM_BACKEND_MPI_CUDA_AWARE : PLM_BACKEND_MPI_HOST; }

    Request iallreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        return allreduce_<false>(e, send, recv, count, dt, op);
    }
    void allreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        allreduce_<true>(e, send, recv, count, dt, op);
    }
    Request ireduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
                    int root) override
    {
        require_reducible(dt, op, "reduce");
        ready(e);
        const int64_t max = g_max_count.load();
        auto p = std::make_unique<MpiPending>(pieces(count, max));
        const bool is_root = view_.rank == root;
        const bool in_place = is_root && send == recv;  // MPI_IN_PLACE is for the root only
        for (int64_t off = 0; off < count; off += max) {
            const int n = static_cast<int>(std::min(max, count - off));
            const void *s = in_place ? MPI_IN_PLACE : at(send, off, dt);
            void *r = is_root ? at(recv, off, dt) : nullptr;
            MPI_Request q;
            p->post(MPI_Ireduce(s, r, n, mpi_type(dt), mpi_op(op), root, view_.mpi, &q), q, "MPI_Ireduce");
        }
        return Request(std::move(p));
    }
    Request ibcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        ready(e);
        auto p = std::make_unique<MpiPending>(pieces(count, g_max_count.load()));
        bcast_into<false>(p.get(), buf, count, dt, root);
        return Request(std::move(p));
    }
    void bcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        ready(e);
        bcast_into<true>(nullptr, buf, count, dt, root);
    }
    Request iallgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                        DType dt) override
    {
        return allgatherv_<false>(e, send, recv, counts, displs, dt);
    }
    void allgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                    DType dt) override
    {
        allgatherv_<true>(e, send, recv, counts, displs, dt);
    }

    Request isend(const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag) override
    {
        return one_message(e, dt, {true, const_cast<void *>(buf), count, dest, tag});
    }
    Request irecv(const Exec &e, void *buf, int64_t count, DType dt, int source, int tag) override
    {
        return one_message(e, dt, {false, buf, count, source, tag});
    }
    Request iexchange(const Exec &e, DType dt, const Message *msgs, std::size_t n) override
    {
        ready(e);
        const int64_t max = g_max_count.load();
        int64_t reqs = 0;
        for (std::size_t i = 0; i < n; ++i) reqs += messages(msgs[i].count, max);
        auto p = std::make_unique<MpiPending>(reqs);
        for (std::size_t i = 0; i < n; ++i) message_into(*p, msgs[i], dt);
        return Request(std::move(p));
    }

    Request ialltoallv(const Exec &e, const void *sbuf, const int64_t *scounts, const int64_t *sdispls, void *rbuf,
                       const int64_t *rcounts, const int64_t *rdispls, DType dt, int tag) override
    {
        ready(e);
        const int me = view_.rank, np = view_.size;
        const int64_t max = g_max_count.load();
        int64_t reqs = 0;
        for (int k = 0; k < np; ++k) {
            if (k == me) continue;
            if (rcounts[k] > 0) reqs += messages(rcounts[k], max);
            if (scounts[k] > 0) reqs += messages(scounts[k], max);
        }
        auto p = std::make_unique<MpiPending>(reqs);
        // Receives first, so every send finds its match posted; empty blocks send nothing.
        for (int k = 1; k < np; ++k) {
            const int src = (me - k + np) % np;
            if (rcounts[src] > 0) message_into(*p, {false, at(rbuf, rdispls[src], dt), rcounts[src], src, tag}, dt);
        }
        for (int k = 1; k < np; ++k) {
            const int dest = (me + k) % np;
            if (scounts[dest] > 0)
                message_into(*p, {true, const_cast<char *>(at(sbuf, sdispls[dest], dt)), scounts[dest], dest, tag}, dt);
        }
        copy_local(e, at(rbuf, rdispls[me], dt), at(sbuf, sdispls[me], dt), std::min(scounts[me], rcounts[me]), dt);
        return Request(std::move(p));
    }

    std::unique_ptr<Backend> split(const CommView &sub) const override
    {
        return std::make_unique<MpiBackend>(sub, cuda_aware_);
    }

private:
    // CUDA-aware MPI reads device memory as soon as the call is made: the producer's
    // stream must be done with it (that stream only, never the whole device).
    // Also where the SMPI build's sampled computation is charged (core/sim.hpp).
    void ready(const Exec &e) const
    {
        sim::before_mpi();
        if (cuda_aware_) require_space(Space::device).synchronize(e.stream);
    }

    // This rank's own block, on the stream of the work around it.
    void copy_local(const Exec &e, void *dst, const void *src, int64_t n, DType dt) const
    {
        if (n <= 0 || dst == src) return;
        const Space s = cuda_aware_ ? Space::device : Space::host;
        copy_bytes(s, dst, s, src, static_cast<std::size_t>(n) * dtype_size(dt), e.stream);
    }

    template <bool Blocking>
    Request allreduce_(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op)
    {
        require_reducible(dt, op, "allreduce");
        ready(e);
        const int64_t max = g_max_count.load();
        auto p = Blocking ? nullptr : std::make_unique<MpiPending>(pieces(count, max));
        const bool in_place = send == recv;
        for (int64_t off = 0; off < count; off += max) {
            const int n = static_cast<int>(std::min(max, count - off));
            const void *s = in_place ? MPI_IN_PLACE : at(send, off, dt);
            if constexpr (Blocking) {
                mpi_check(MPI_Allreduce(s, at(recv, off, dt), n, mpi_type(dt), mpi_op(op), view_.mpi), "MPI_Allreduce");
            } else {
                MPI_Request r;
                p->post(MPI_Iallreduce(s, at(recv, off, dt), n, mpi_type(dt), mpi_op(op), view_.mpi, &r), r,
                        "MPI_Iallreduce");
            }
        }
        return Blocking ? Request() : Request(std::move(p));
    }

    template <bool Blocking>
    Request allgatherv_(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                        DType dt)
    {
        ready(e);
        const int me = view_.rank, np = view_.size;
        const int64_t n = counts[me];
        // One rank: a local copy. (MPICH 4.0.2 also ignores displs[0] in a 1-rank
        // MPI_Allgatherv and writes at recv + 0; Open MPI honours it.)
        if (np == 1) {
            copy_local(e, at(recv, displs[0], dt), send, n, dt);
            return Request();
        }
        const int64_t max = g_max_count.load();
        // MPI forbids a send buffer that overlaps the receive buffer unless it says so.
        if (send == at(recv, displs[me], dt)) send = MPI_IN_PLACE;
        if (!fits(counts, np, max) || !fits(displs, np, max)) {
            // Past int counts or displacements: every rank broadcasts its block in chunks.
            int64_t reqs = 0;
            for (int k = 0; k < np; ++k) reqs += pieces(counts[k], max);
            auto p = Blocking ? nullptr : std::make_unique<MpiPending>(reqs);
            if (send != MPI_IN_PLACE) copy_local(e, at(recv, displs[me], dt), send, n, dt);
            for (int k = 0; k < np; ++k) bcast_into<Blocking>(p.get(), at(recv, displs[k], dt), counts[k], dt, k);
            return Blocking ? Request() : Request(std::move(p));
        }
        bool uniform = true;
        for (int k = 0; k < np; ++k) uniform = uniform && counts[k] == n && displs[k] == k * n;
        const MPI_Datatype t = mpi_type(dt);
        const int ni = static_cast<int>(n);
        if (uniform) {
            if constexpr (Blocking) {
                mpi_check(MPI_Allgather(send, ni, t, recv, ni, t, view_.mpi), "MPI_Allgather");
                return Request();
            } else {
                auto p = std::make_unique<MpiPending>(1);
                MPI_Request r;
                p->post(MPI_Iallgather(send, ni, t, recv, ni, t, view_.mpi, &r), r, "MPI_Iallgather");
                return Request(std::move(p));
            }
        }
        // int counts and displacements: pool memory, which MPI reads until the operation
        // completes (the request keeps it).
        auto fill = [&](int *c) {
            for (int k = 0; k < np; ++k) {
                c[k] = static_cast<int>(counts[k]);
                c[np + k] = static_cast<int>(displs[k]);
            }
            return c;
        };
        if constexpr (Blocking) {
            pool::Array<int> ints(2 * static_cast<std::size_t>(np));
            const int *c = fill(ints.data());
            mpi_check(MPI_Allgatherv(send, ni, t, recv, c, c + np, t, view_.mpi), "MPI_Allgatherv");
            return Request();
        } else {
            auto p = std::make_unique<MpiPending>(1);
            const int *c = fill(p->ints(2 * static_cast<std::size_t>(np)));
            MPI_Request r;
            p->post(MPI_Iallgatherv(send, ni, t, recv, c, c + np, t, view_.mpi, &r), r, "MPI_Iallgatherv");
            return Request(std::move(p));
        }
    }

    template <bool Blocking> void bcast_into(MpiPending *p, void *buf, int64_t count, DType dt, int root) const
    {
        const int64_t max = g_max_count.load();
        for (int64_t off = 0; off < count; off += max) {
            const int n = static_cast<int>(std::min(max, count - off));
            if constexpr (Blocking) {
                mpi_check(MPI_Bcast(at(buf, off, dt), n, mpi_type(dt), root, view_.mpi), "MPI_Bcast");
            } else {
                MPI_Request r;
                p->post(MPI_Ibcast(at(buf, off, dt), n, mpi_type(dt), root, view_.mpi, &r), r, "MPI_Ibcast");
            }
        }
    }

    // A message of n elements is always nchunks(n) messages (one empty message for n == 0),
    // so both sides agree on the count from the same n.
    void message_into(MpiPending &p, const Message &m, DType dt) const
    {
        const int64_t max = g_max_count.load();
        for (int64_t k = 0, nc = nchunks(m.count, max); k < nc; ++k) {
            MPI_Request r;
            void *b = at(m.buf, k * max, dt);
            const int n = chunk(m.count, k, max);
            if (m.send)
                p.post(MPI_Isend(b, n, mpi_type(dt), peer(m.peer), m.tag, view_.mpi, &r), r, "MPI_Isend");
            else
                p.post(MPI_Irecv(b, n, mpi_type(dt), peer(m.peer), m.tag, view_.mpi, &r), r, "MPI_Irecv");
        }
    }

    bool cuda_aware_;
    std::unique_ptr<DeviceMemoryOpenToMpi> open_;  // MPI reads device memory
};

}  // namespace

std::unique_ptr<Backend> make_mpi_host(const CommView &v) { return std::make_unique<MpiBackend>(v, false); }

std::unique_ptr<Backend> make_mpi_cuda_aware(const CommView &v)
{
    require_space(Space::device);
    return std::make_unique<MpiBackend>(v, true);
}

void set_max_mpi_count(int64_t n) { g_max_count.store(n > 0 && n <= INT_MAX ? n : INT_MAX); }
int64_t max_mpi_count() { return g_max_count.load(); }

}  // namespace plm::comm
