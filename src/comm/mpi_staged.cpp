// Host-staged MPI for memory MPI cannot read (device memory when MPI is not CUDA-aware):
// copy the outgoing data to host staging memory on the producer's stream, wait for that
// stream, run buffered MPI on the staging memory, and copy the incoming data back when the
// request completes. Large blocking allreduces and broadcasts are pipelined in chunks:
// copies of one chunk overlap MPI on the next.
//
// Staging memory (pinned host on CUDA builds) is one arena per backend family (a backend and
// its splits), lent out in pieces: reserve() sizes it inside an agreement's check, so the
// operations after the agreement allocate nothing; without a reservation it grows by itself
// to the most staged at once (up to cache_bytes), and a loan that does not fit gets memory
// of its own. A device copy that fails after the agreement cannot be agreed: the MPI part
// still runs (the peers must not hang), then the operation fails and poisons the
// communicator.
#include <algorithm>
#include <mutex>

#include "comm/backend.hpp"
#include "comm/pool.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"

namespace plm::comm {

namespace {

constexpr std::size_t kAlign = 64;

std::size_t rounded(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A block of staging memory lent out in pieces (first fit, kAlign-aligned). The table of live
// pieces has a fixed capacity, so lending and taking back allocate nothing.
class Arena {
public:
    Arena(Space s, std::size_t bytes, std::size_t max_loans) : buf_(Buffer::allocate(s, rounded(std::max<std::size_t>(bytes, 1))))
    {
        live_.reserve(max_loans);
    }

    // n > 0 bytes, or nullptr when they do not fit.
    char *take(std::size_t n)
    {
        n = rounded(n);
        std::lock_guard<std::mutex> g(lock_);
        if (live_.size() == live_.capacity()) return nullptr;
        std::size_t at = 0;
        auto it = live_.begin();
        for (; it != live_.end() && it->off - at < n; ++it) at = it->off + it->len;
        if (it == live_.end() && at + n > buf_.bytes()) return nullptr;
        live_.insert(it, Piece{at, n});
        used_ += n;
        return static_cast<char *>(buf_.data()) + at;
    }

    void give(const char *p) noexcept
    {
        const std::size_t off = static_cast<std::size_t>(p - static_cast<const char *>(buf_.data()));
        std::lock_guard<std::mutex> g(lock_);
        for (auto it = live_.begin(); it != live_.end(); ++it)
            if (it->off == off) {
                used_ -= it->len;
                live_.erase(it);
                return;
            }
    }

    std::size_t bytes() const { return buf_.bytes(); }
    std::size_t used()
    {
        std::lock_guard<std::mutex> g(lock_);
        return used_;
    }

private:
    struct Piece {
        std::size_t off, len;
    };
    std::mutex lock_;
    Buffer buf_;
    std::vector<Piece> live_;  // sorted by offset
    std::size_t used_ = 0;
};

// A piece of staging memory, given back when the loan goes.
class Loan {
public:
    Loan() = default;
    Loan(std::shared_ptr<Arena> a, char *p) : arena_(std::move(a)), p_(p) {}
    Loan(Loan &&o) noexcept : arena_(std::move(o.arena_)), p_(o.p_) { o.p_ = nullptr; }
    Loan &operator=(Loan &&o) noexcept
    {
        Loan t(std::move(o));
        std::swap(arena_, t.arena_);
        std::swap(p_, t.p_);
        return *this;
    }
    ~Loan()
    {
        if (arena_ && p_) arena_->give(p_);
    }
    char *data() const { return p_; }

private:
    std::shared_ptr<Arena> arena_;  // null for an empty loan
    char *p_ = nullptr;
};

// The staging memory of a backend and its splits. Loans come from the current arena, which
// reserve() makes big enough; a loan that does not fit gets an arena of its own, and the
// current one is replaced by a bigger one at the next loan (up to `keep` bytes): steady
// use without a reservation also allocates nothing after the first call. Arenas go when
// their last loan does.
class Staging {
public:
    Staging(Space s, std::size_t keep, int ranks)
        : space_(s), keep_(keep), max_loans_(2 * static_cast<std::size_t>(std::max(ranks, 1)) + 16)
    {
    }

    void reserve(std::size_t bytes)
    {
        const std::size_t want = bytes + kAlign * max_loans_;  // alignment slack of every loan
        std::lock_guard<std::mutex> g(lock_);
        if (!arena_ || arena_->bytes() < want) arena_ = std::make_shared<Arena>(space_, want, max_loans_);
    }

    Loan take(std::size_t n)
    {
        alignas(kAlign) static char empty[kAlign];  // MPI gets a valid address for 0 elements
        if (n == 0) return Loan(nullptr, empty);
        std::shared_ptr<Arena> a;
        {
            std::lock_guard<std::mutex> g(lock_);
            if (want_ <= keep_ && want_ > (arena_ ? arena_->bytes() : 0))
                arena_ = std::make_shared<Arena>(space_, want_, max_loans_);
            a = arena_;
        }
        if (a)
            if (char *p = a->take(n)) return Loan(std::move(a), p);
        {
            std::lock_guard<std::mutex> g(lock_);
            want_ = std::max(want_, (a ? a->used() : 0) + rounded(n) + kAlign * max_loans_);
        }
        auto own = std::make_shared<Arena>(space_, n, 1);
        char *p = own->take(n);
        return Loan(std::move(own), p);
    }

private:
    Space space_;
    std::size_t keep_, max_loans_;
    std::mutex lock_;
    std::shared_ptr<Arena> arena_;
    std::size_t want_ = 0;  // the arena a loan that did not fit asked for
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

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + bytes_of(elems, dt); }
const char *at(const void *p, int64_t elems, DType dt) { return at(const_cast<void *>(p), elems, dt); }

// Copies between memory and staging on e's stream, and the stream synchronisations that
// order them with MPI. A failure is remembered, not thrown: the MPI part of the operation
// still runs, so the peers do not wait forever; fail() then reports it, poisoning.
class Copier {
public:
    Copier(Space memory, const Exec &e, Poison *poison) : memory_(memory), e_(e), poison_(poison) {}

    void copy(void *dst, const void *src, std::size_t n)
    {
        if (n) guarded([&] { copy_on(memory_, dst, src, n, e_.stream); });
    }
    void sync()
    {
        guarded([&] { require_space(memory_).synchronize(e_.stream); });
    }
    bool failed() const { return fault_ != PLM_SUCCESS; }
    // Throws the remembered failure (the communicator is poisoned with it already).
    [[noreturn]] void fail() const
    {
        char text[kMsgLen] = "a device copy of the host-staged backend failed";
        if (poison_ && poison_->set()) poison_->message(text, sizeof text);
        fail_unagreed(poison_, Error(fault_, text));
    }
    void throw_if_failed() const
    {
        if (failed()) fail();
    }

private:
    template <typename F> void guarded(F &&f)
    {
        if (failed()) return;  // the stream is broken: later copies would only fail too
        try {
            f();
        } catch (const Error &x) {
            fault_ = x.status();
            if (poison_) poison_->mark(x.status(), x.what());
        }
    }
    Space memory_;
    Exec e_;
    Poison *poison_;
    plm_status_t fault_ = PLM_SUCCESS;
};

// A staged operation in flight: the MPI request on staging memory, its loans, and what to copy
// back into memory when it completes - a few pieces, or the blocks of a v-collective.
class StagedPending final : public Pending {
public:
    StagedPending(Space memory, const Exec &e, Poison *poison) : copier(memory, e, poison) {}

    Copier copier;
    Loan loans[2];
    Request inner;  // after the loans: destroyed (completed) before they go back

    // Makes room for n pieces of back() (a few fit inline; more come from the pool).
    void expect_pieces(std::size_t n)
    {
        if (n > kInlinePieces) more_ = pool::Array<Piece>(n);
    }
    // n bytes from staging src to dst, at completion.
    void back(void *dst, const char *src, std::size_t n)
    {
        if (!n) return;
        const std::size_t cap = more_ ? more_.size() : kInlinePieces;
        PLM_REQUIRE(npieces_ < cap, PLM_ERR_INTERNAL, "staged copies past the %zu counted", cap);
        (more_ ? more_.data() : piece_)[npieces_++] = {static_cast<char *>(dst), src, n};
    }
    // Blocks (counts[k], displs[k]) of k < n from staging src to dst, at completion.
    void back_blocks(void *dst, const char *src, const int64_t *counts, const int64_t *displs, int n, DType dt)
    {
        blocks_ = pool::Array<int64_t>(2 * static_cast<std::size_t>(n));
        std::copy(counts, counts + n, blocks_.data());
        std::copy(displs, displs + n, blocks_.data() + n);
        bdst_ = static_cast<char *>(dst);
        bsrc_ = src;
        dt_ = dt;
    }

    bool test() override
    {
        if (!inner.test()) return false;
        finish();
        return true;
    }
    void wait() override
    {
        inner.wait();
        finish();
    }

private:
    struct Piece {
        char *dst;
        const char *src;
        std::size_t n;
    };
    static constexpr std::size_t kInlinePieces = 2;

    void finish()
    {
        copier.throw_if_failed();
        const Piece *p = more_ ? more_.data() : piece_;
        for (std::size_t i = 0; i < npieces_; ++i) copier.copy(p[i].dst, p[i].src, p[i].n);
        const std::size_t nb = blocks_.size() / 2;
        for (std::size_t k = 0; k < nb; ++k) {
            const int64_t c = blocks_[k], d = blocks_[nb + k];
            if (c > 0) copier.copy(at(bdst_, d, dt_), at(bsrc_, d, dt_), bytes_of(c, dt_));
        }
        if (npieces_ || nb) copier.sync();
        copier.throw_if_failed();
    }

    Piece piece_[kInlinePieces];
    std::size_t npieces_ = 0;
    pool::Array<Piece> more_;
    pool::Array<int64_t> blocks_;
    char *bdst_ = nullptr;
    const char *bsrc_ = nullptr;
    DType dt_ = DType::u8;
};
static_assert(sizeof(StagedPending) <= pool::kSlot, "a staged request fills one pool slot");

class StagedBackend final : public Backend {
public:
    StagedBackend(const CommView &v, Space memory, Space staging, std::size_t chunk_bytes,
                  std::shared_ptr<Staging> st)
        : Backend(v), memory_(memory), staging_(staging), chunk_bytes_(chunk_bytes), st_(std::move(st)),
          host_(make_mpi_host(v))
    {
        require_space(memory);
        require_space(staging);
    }

    plm_backend_t kind() const override { return PLM_BACKEND_MPI_STAGED; }
    void reserve(std::size_t bytes) override { st_->reserve(bytes); }

    // Blocking allreduce and bcast of large messages go in chunks, so the copies of one chunk
    // overlap MPI on another (pipeline()); smaller ones are one staged operation.
    void allreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        const int64_t c = chunk_elems(dt);
        if (count <= c) return iallreduce(e, send, recv, count, dt, op).wait();
        Loan s = st_->take(bytes_of(count, dt));
        Copier cp(memory_, e, view_.poison);
        pipeline(cp, count, c, [&](int64_t off, int64_t n) { cp.copy(at(s.data(), off, dt), at(send, off, dt), bytes_of(n, dt)); },
                 [&](int64_t off, int64_t n) {
                     return host_->iallreduce(Exec{}, at(s.data(), off, dt), at(s.data(), off, dt), n, dt, op);
                 },
                 [&](int64_t off, int64_t n) { cp.copy(at(recv, off, dt), at(s.data(), off, dt), bytes_of(n, dt)); });
    }

    void bcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        const int64_t c = chunk_elems(dt);
        if (count <= c) return ibcast(e, buf, count, dt, root).wait();
        Loan s = st_->take(bytes_of(count, dt));
        Copier cp(memory_, e, view_.poison);
        const bool me = root == view_.rank;
        pipeline(cp, count, c,
                 [&](int64_t off, int64_t n) {
                     if (me) cp.copy(at(s.data(), off, dt), at(buf, off, dt), bytes_of(n, dt));
                 },
                 [&](int64_t off, int64_t n) { return host_->ibcast(Exec{}, at(s.data(), off, dt), n, dt, root); },
                 [&](int64_t off, int64_t n) {
                     if (!me) cp.copy(at(buf, off, dt), at(s.data(), off, dt), bytes_of(n, dt));
                 });
    }

    Request iallreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op) override
    {
        const std::size_t n = bytes_of(count, dt);
        auto p = start(e, n);
        char *s = p->loans[0].data();
        staged_out(*p, s, send, n);
        p->inner = host_->iallreduce(Exec{}, s, s, count, dt, op);
        p->back(recv, s, n);
        return Request(std::move(p));
    }

    Request ireduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
                    int root) override
    {
        const std::size_t n = bytes_of(count, dt);
        auto p = start(e, n);
        char *s = p->loans[0].data();
        staged_out(*p, s, send, n);
        p->inner = host_->ireduce(Exec{}, s, s, count, dt, op, root);
        if (root == view_.rank) p->back(recv, s, n);
        return Request(std::move(p));
    }

    Request ibcast(const Exec &e, void *buf, int64_t count, DType dt, int root) override
    {
        const std::size_t n = bytes_of(count, dt);
        auto p = start(e, n);
        char *s = p->loans[0].data();
        const bool me = root == view_.rank;
        if (me) staged_out(*p, s, buf, n);
        p->inner = host_->ibcast(Exec{}, s, count, dt, root);
        if (!me) p->back(buf, s, n);
        return Request(std::move(p));
    }

    Request isend(const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag) override
    {
        return one_message(e, dt, {true, const_cast<void *>(buf), count, dest, tag});
    }

    Request irecv(const Exec &e, void *buf, int64_t count, DType dt, int source, int tag) override
    {
        return one_message(e, dt, {false, buf, count, source, tag});
    }

    // One staging loan for the whole batch: sends staged out together, receives copied back
    // when all messages are done.
    Request iexchange(const Exec &e, DType dt, const Message *msgs, std::size_t n) override
    {
        std::size_t total = 0, receives = 0;
        for (std::size_t i = 0; i < n; ++i) {
            total += bytes_of(msgs[i].count, dt);
            receives += msgs[i].send ? 0 : 1;
        }
        auto p = start(e, total);
        p->expect_pieces(receives);
        pool::Array<Message> staged(n);
        char *s = p->loans[0].data();
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t b = bytes_of(msgs[i].count, dt);
            staged[i] = msgs[i];
            staged[i].buf = s;
            if (msgs[i].send) p->copier.copy(s, msgs[i].buf, b);
            s += b;
        }
        p->copier.sync();
        p->inner = host_->iexchange(Exec{}, dt, staged.data(), n);
        for (std::size_t i = 0; i < n; ++i)
            if (!msgs[i].send) p->back(msgs[i].buf, static_cast<const char *>(staged[i].buf), bytes_of(msgs[i].count, dt));
        return Request(std::move(p));
    }

    Request iallgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                        DType dt) override
    {
        const int me = view_.rank, np = view_.size;
        auto p = start(e, bytes_of(extent(counts, displs, np), dt));
        char *s = p->loans[0].data();
        char *mine = at(s, displs[me], dt);
        staged_out(*p, mine, send, bytes_of(counts[me], dt));
        p->inner = host_->iallgatherv(Exec{}, mine, s, counts, displs, dt);
        p->back_blocks(recv, s, counts, displs, np, dt);
        return Request(std::move(p));
    }

    Request ialltoallv(const Exec &e, const void *sbuf, const int64_t *scounts, const int64_t *sdispls, void *rbuf,
                       const int64_t *rcounts, const int64_t *rdispls, DType dt, int tag) override
    {
        const int np = view_.size;
        auto p = start(e, bytes_of(extent(scounts, sdispls, np), dt));
        p->loans[1] = st_->take(bytes_of(extent(rcounts, rdispls, np), dt));
        char *s = p->loans[0].data(), *r = p->loans[1].data();
        for (int k = 0; k < np; ++k)
            if (scounts[k] > 0) p->copier.copy(at(s, sdispls[k], dt), at(sbuf, sdispls[k], dt), bytes_of(scounts[k], dt));
        p->copier.sync();
        p->inner = host_->ialltoallv(Exec{}, s, scounts, sdispls, r, rcounts, rdispls, dt, tag);
        p->back_blocks(rbuf, r, rcounts, rdispls, np, dt);
        return Request(std::move(p));
    }

    void copy_own_block(const Exec &e, void *dst, const void *src, std::size_t bytes) override
    {
        copy_bytes(memory_, dst, memory_, src, bytes, e.stream);
    }

    std::unique_ptr<Backend> split(const CommView &sub) const override
    {
        return std::make_unique<StagedBackend>(sub, memory_, staging_, chunk_bytes_, st_);
    }

private:
    // A pending operation with a staging loan of n bytes.
    std::unique_ptr<StagedPending> start(const Exec &e, std::size_t n) const
    {
        auto p = std::make_unique<StagedPending>(memory_, e, view_.poison);
        p->loans[0] = st_->take(n);
        return p;
    }

    // Memory to staging, then the stream synchronised: MPI may read it.
    static void staged_out(StagedPending &p, void *dst, const void *src, std::size_t n)
    {
        p.copier.copy(dst, src, n);
        p.copier.sync();
    }

    int64_t chunk_elems(DType dt) const
    {
        return std::max<int64_t>(1, static_cast<int64_t>(chunk_bytes_ / dtype_size(dt)));
    }

    // Chunk k's MPI runs while the stream copies chunk k+1 out and chunk k-1 back in. One
    // stream synchronisation per chunk orders them: chunk k+1 is staged before its MPI starts,
    // and chunk k is received before it is copied in. A failed copy skips the copies after it
    // but not the MPI, then fails the call.
    template <typename Out, typename Mpi, typename In>
    void pipeline(Copier &cp, int64_t count, int64_t chunk, Out &&copy_out, Mpi &&mpi, In &&copy_in) const
    {
        auto piece = [&](int64_t k, auto &&f) { f(k * chunk, std::min(chunk, count - k * chunk)); };
        const int64_t pieces = (count + chunk - 1) / chunk;
        piece(0, copy_out);
        cp.sync();
        for (int64_t k = 0; k < pieces; ++k) {
            Request r;
            piece(k, [&](int64_t off, int64_t n) { r = mpi(off, n); });
            if (k + 1 < pieces) piece(k + 1, copy_out);
            r.wait();
            cp.sync();
            piece(k, copy_in);
        }
        cp.sync();
        cp.throw_if_failed();
    }

    Space memory_, staging_;
    std::size_t chunk_bytes_;
    std::shared_ptr<Staging> st_;
    std::unique_ptr<Backend> host_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_staged(const CommView &v, Space memory, Space staging, std::size_t cache_bytes,
                                         std::size_t chunk_bytes)
{
    PLM_REQUIRE(chunk_bytes > 0, PLM_ERR_INTERNAL, "staging chunks of 0 bytes");
    return std::make_unique<StagedBackend>(v, memory, staging, chunk_bytes,
                                           std::make_shared<Staging>(staging, cache_bytes, v.size));
}

}  // namespace plm::comm
