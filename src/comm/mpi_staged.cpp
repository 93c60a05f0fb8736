// Host-staged MPI for memory MPI cannot read (device memory when MPI is not CUDA-aware):
// copy the outgoing data to a host staging buffer on the producer's stream, wait for that
// stream, run buffered MPI on the staging buffers, and copy the incoming data back when the
// request completes. Staging buffers come from a per-backend cache (pinned host memory on
// CUDA builds), so steady-state calls allocate nothing. Large blocking allreduces and
// broadcasts are pipelined in chunks: copies of one chunk overlap MPI on the next.
#include <algorithm>
#include <mutex>

#include "comm/backend.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"

namespace plm::comm {

namespace {

// Keeps released staging buffers for reuse, up to `limit` bytes; freed with the backend.
class StagingCache {
public:
    StagingCache(Space s, std::size_t limit) : space_(s), limit_(limit) {}

    Buffer take(std::size_t bytes)
    {
        {
            std::lock_guard<std::mutex> g(lock_);
            // The smallest cached buffer that is big enough.
            auto best = free_.end();
            for (auto it = free_.begin(); it != free_.end(); ++it)
                if (it->bytes() >= bytes && (best == free_.end() || it->bytes() < best->bytes())) best = it;
            if (best != free_.end()) {
                Buffer b = std::move(*best);
                free_.erase(best);
                kept_ -= b.bytes();
                return b;
            }
        }
        return Buffer::allocate(space_, std::max<std::size_t>(bytes, 1));
    }

    void give(Buffer b)
    {
        std::lock_guard<std::mutex> g(lock_);
        if (b.bytes() > limit_) return;
        // Make room by dropping the oldest buffers.
        while (!free_.empty() && kept_ + b.bytes() > limit_) {
            kept_ -= free_.front().bytes();
            free_.erase(free_.begin());
        }
        kept_ += b.bytes();
        free_.push_back(std::move(b));
    }

private:
    Space space_;
    std::size_t limit_;
    std::mutex lock_;
    std::vector<Buffer> free_;
    std::size_t kept_ = 0;
};

// A staging buffer on loan: goes back to the cache when the operation is done with it.
struct Loan {
    std::shared_ptr<StagingCache> cache;
    Buffer buf;
    Loan(std::shared_ptr<StagingCache> c, std::size_t bytes) : cache(std::move(c)), buf(cache->take(bytes)) {}
    Loan(Loan &&) = default;
    ~Loan()
    {
        if (cache && buf.data()) cache->give(std::move(buf));
    }
    char *data() const { return static_cast<char *>(buf.data()); }
};

std::size_t bytes_of(int64_t n, DType dt) { return checked_bytes(std::max<int64_t>(n, 0), dt, "a staged message in bytes"); }

// Elements spanned by blocks (count, displ): the extent a v-collective touches.
int64_t extent(const int64_t *counts, const int64_t *displs, int n)
{
    int64_t e = 0;
    for (int k = 0; k < n; ++k)
        if (counts[k] > 0) e = std::max(e, checked_add(displs[k], counts[k], "the extent of a staged exchange"));
    return e;
}

void sync(Space memory, const Exec &e) { require_space(memory).synchronize(e.stream); }

// Staging to memory, ordered on the stream and waited for: the staging buffer goes back to
// the cache as soon as the request completes.
void stage_in(Space memory, Space staging, const Exec &e, void *dst, const void *src, std::size_t n)
{
    if (!n) return;
    copy_bytes(memory, dst, staging, src, n, e.stream);
    sync(memory, e);
}

class StagedBackend final : public Backend {
public:
    StagedBackend(const CommView &v, Space memory, Space staging, std::size_t cache_bytes, std::size_t chunk_bytes)
        : Backend(v), memory_(memory), staging_(staging), cache_bytes_(cache_bytes), chunk_bytes_(chunk_bytes),
          cache_(std::make_shared<StagingCache>(staging, cache_bytes)), host_(make_mpi_host(v))
    {
        require_space(memory);
        require_space(staging);
    }

    // Blocking allreduce and bcast of large messages go in chunks, so the copies of one chunk
    // overlap MPI on another (pipeline()); smaller ones are one staged operation.
    void allreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        const int64_t c = chunk_elems(dt);
        if (count <= c) return iallreduce(e, send, recv, count, dt, op).wait();
        Loan s(cache_, bytes_of(count, dt));
        pipeline(e, count, c, [&](int64_t off, int64_t n) { out(e, s.data(), send, off, n, dt); },
                 [&](int64_t off, int64_t n) {
                     return host_->iallreduce(host_exec(), at(s.data(), off, dt), at(s.data(), off, dt), n, dt, op);
                 },
                 [&](int64_t off, int64_t n) { in(e, recv, s.data(), off, n, dt); });
    }

    void bcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        const int64_t c = chunk_elems(dt);
        if (count <= c) return ibcast(e, buf, count, dt, root).wait();
        Loan s(cache_, bytes_of(count, dt));
        const bool me = root == view_.rank;
        pipeline(e, count, c, [&](int64_t off, int64_t n) { if (me) out(e, s.data(), buf, off, n, dt); },
                 [&](int64_t off, int64_t n) { return host_->ibcast(host_exec(), at(s.data(), off, dt), n, dt, root); },
                 [&](int64_t off, int64_t n) { if (!me) in(e, buf, s.data(), off, n, dt); });
    }

    plm_backend_t kind() const override { return PLM_BACKEND_MPI_STAGED; }

    Request iallreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        auto s = std::make_shared<Loan>(cache_, bytes_of(count, dt));
        stage_out(e, s->data(), send, bytes_of(count, dt));
        Request r = host_->iallreduce(host_exec(), s->data(), s->data(), count, dt, op);
        return std::move(r).then([m = memory_, st = staging_, e, s, recv, n = bytes_of(count, dt)] { stage_in(m, st, e, recv, s->data(), n); });
    }

    Request ireduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
                    int root) override
    {
        auto s = std::make_shared<Loan>(cache_, bytes_of(count, dt));
        stage_out(e, s->data(), send, bytes_of(count, dt));
        const bool root_rank = root == view_.rank;
        Request r = host_->ireduce(host_exec(), s->data(), s->data(), count, dt, op, root);
        return std::move(r).then([m = memory_, st = staging_, e, s, recv, root_rank, n = bytes_of(count, dt)] {
            if (root_rank) stage_in(m, st, e, recv, s->data(), n);
        });
    }

    Request ibcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        auto s = std::make_shared<Loan>(cache_, bytes_of(count, dt));
        const bool root_rank = root == view_.rank;
        if (root_rank) stage_out(e, s->data(), buf, bytes_of(count, dt));
        Request r = host_->ibcast(host_exec(), s->data(), count, dt, root);
        return std::move(r).then([m = memory_, st = staging_, e, s, buf, root_rank, n = bytes_of(count, dt)] {
            if (!root_rank) stage_in(m, st, e, buf, s->data(), n);
        });
    }

    Request isend(const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag) override
    {
        auto s = std::make_shared<Loan>(cache_, bytes_of(count, dt));
        stage_out(e, s->data(), buf, bytes_of(count, dt));
        Request r = host_->isend(host_exec(), s->data(), count, dt, dest, tag);
        return std::move(r).then([s] {});
    }

    Request irecv(const Exec &e, void *buf, int64_t count, DType dt, int source, int tag) override
    {
        auto s = std::make_shared<Loan>(cache_, bytes_of(count, dt));
        Request r = host_->irecv(host_exec(), s->data(), count, dt, source, tag);
        return std::move(r).then([m = memory_, st = staging_, e, s, buf, n = bytes_of(count, dt)] { stage_in(m, st, e, buf, s->data(), n); });
    }

    Request iallgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                        DType dt) override
    {
        const int me = view_.rank, np = view_.size;
        auto s = std::make_shared<Loan>(cache_, bytes_of(extent(counts, displs, np), dt));
        char *mine = s->data() + bytes_of(displs[me], dt);
        stage_out(e, mine, send, bytes_of(counts[me], dt));
        Request r = host_->iallgatherv(host_exec(), mine, s->data(), counts, displs, dt);
        std::vector<int64_t> c(counts, counts + np), d(displs, displs + np);
        return std::move(r).then([m = memory_, st = staging_, e, s, recv, dt, c = std::move(c), d = std::move(d)] {
            for (size_t k = 0; k < c.size(); ++k)
                stage_in(m, st, e, static_cast<char *>(recv) + bytes_of(d[k], dt), s->data() + bytes_of(d[k], dt),
                         bytes_of(c[k], dt));
        });
    }

    Request ialltoallv(const Exec &e, const void *sbuf, const int64_t *scounts, const int64_t *sdispls, void *rbuf,
                       const int64_t *rcounts, const int64_t *rdispls, DType dt, int tag) override
    {
        const int np = view_.size;
        auto s = std::make_shared<Loan>(cache_, bytes_of(extent(scounts, sdispls, np), dt));
        auto r = std::make_shared<Loan>(cache_, bytes_of(extent(rcounts, rdispls, np), dt));
        for (int k = 0; k < np; ++k)
            stage_out(e, s->data() + bytes_of(sdispls[k], dt), static_cast<const char *>(sbuf) + bytes_of(sdispls[k], dt),
                      bytes_of(scounts[k], dt), false);
        sync(e);
        Request q = host_->ialltoallv(host_exec(), s->data(), scounts, sdispls, r->data(), rcounts, rdispls, dt, tag);
        std::vector<int64_t> c(rcounts, rcounts + np), d(rdispls, rdispls + np);
        return std::move(q).then([m = memory_, st = staging_, e, s, r, rbuf, dt, c = std::move(c), d = std::move(d)] {
            for (size_t k = 0; k < c.size(); ++k)
                stage_in(m, st, e, static_cast<char *>(rbuf) + bytes_of(d[k], dt), r->data() + bytes_of(d[k], dt),
                         bytes_of(c[k], dt));
        });
    }

    std::unique_ptr<Backend> split(const CommView &sub) const override
    {
        return std::make_unique<StagedBackend>(sub, memory_, staging_, cache_bytes_, chunk_bytes_);
    }

private:
    static Exec host_exec() { return Exec{}; }
    static char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + bytes_of(elems, dt); }
    static const char *at(const void *p, int64_t elems, DType dt) { return at(const_cast<void *>(p), elems, dt); }

    int64_t chunk_elems(DType dt) const
    {
        return std::max<int64_t>(1, static_cast<int64_t>(chunk_bytes_ / dtype_size(dt)));
    }

    // Queued on the stream, not waited for: pipeline() orders them.
    void out(const Exec &e, char *staging, const void *src, int64_t off, int64_t n, DType dt) const
    {
        require_space(memory_).copy(at(staging, off, dt), at(src, off, dt), bytes_of(n, dt), e.stream);
    }
    void in(const Exec &e, void *dst, const char *staging, int64_t off, int64_t n, DType dt) const
    {
        require_space(memory_).copy(at(dst, off, dt), at(staging, off, dt), bytes_of(n, dt), e.stream);
    }

    // Chunk k's MPI runs while the stream copies chunk k+1 out and chunk k-1 back in. One
    // stream synchronisation per chunk orders them: chunk k+1 is staged before its MPI starts,
    // and chunk k is received before it is copied in.
    template <typename Out, typename Mpi, typename In>
    void pipeline(const Exec &e, int64_t count, int64_t chunk, Out &&copy_out, Mpi &&mpi, In &&copy_in) const
    {
        auto piece = [&](int64_t k, auto &&f) { f(k * chunk, std::min(chunk, count - k * chunk)); };
        const int64_t pieces = (count + chunk - 1) / chunk;
        piece(0, copy_out);
        sync(e);
        for (int64_t k = 0; k < pieces; ++k) {
            Request r;
            piece(k, [&](int64_t off, int64_t n) { r = mpi(off, n); });
            if (k + 1 < pieces) piece(k + 1, copy_out);
            r.wait();
            sync(e);
            piece(k, copy_in);
        }
        sync(e);
    }

    void sync(const Exec &e) const { comm::sync(memory_, e); }

    // Device to staging, ordered on the producer's stream; MPI may read it once synced.
    void stage_out(const Exec &e, void *dst, const void *src, std::size_t n, bool then_sync = true) const
    {
        if (n) copy_bytes(staging_, dst, memory_, src, n, e.stream);
        if (then_sync) sync(e);
    }

    Space memory_, staging_;
    std::size_t cache_bytes_, chunk_bytes_;
    std::shared_ptr<StagingCache> cache_;
    std::unique_ptr<Backend> host_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_staged(const CommView &v, Space memory, Space staging, std::size_t cache_bytes,
                                         std::size_t chunk_bytes)
{
    PLM_REQUIRE(chunk_bytes > 0, PLM_ERR_INTERNAL, "staging chunks of 0 bytes");
    return std::make_unique<StagedBackend>(v, memory, staging, cache_bytes, chunk_bytes);
}

}  // namespace plm::comm
