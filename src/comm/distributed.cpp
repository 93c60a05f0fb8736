#include "comm/distributed.hpp"

#include "comm/pool.hpp"
#include "core/checked.hpp"

#include <algorithm>

namespace plm::comm {

namespace {

// Tags of the one-shot exchanges; plans take theirs from Communicator::next_plan_tags().
constexpr int kTagAlltoallv = 7;
constexpr int kTagHaloUp = 11;    // towards rank + 1
constexpr int kTagHaloDown = 12;  // towards rank - 1

void require_peer(const Communicator &c, int p, const char *what)
{
    PLM_REQUIRE(p == kNoPeer || (p >= 0 && p < c.size()), PLM_ERR_INVALID_ARG, "%s rank %d outside 0..%d", what, p,
                c.size() - 1);
}

void require_per_rank(const Communicator &c, const std::vector<int64_t> &v, const char *what)
{
    PLM_REQUIRE(static_cast<int>(v.size()) == c.size(), PLM_ERR_INTERNAL, "%s needs one entry per rank (%zu for %d)",
                what, v.size(), c.size());
}

// The displacements of an allgatherv: displs, or the exclusive sum of counts (in pool memory,
// so a call after an agreement allocates nothing) when displs is empty.
const int64_t *allgatherv_displs(const Communicator &c, const std::vector<int64_t> &counts,
                                 const std::vector<int64_t> &displs, pool::Array<int64_t> &sum)
{
    require_per_rank(c, counts, "allgatherv counts");
    if (!displs.empty()) {
        require_per_rank(c, displs, "allgatherv displacements");
        return displs.data();
    }
    sum = pool::Array<int64_t>(counts.size());
    int64_t off = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        sum[i] = off;
        off = checked_add(off, counts[i], "the displacements of a gather");
    }
    return sum.data();
}

// Both shifts run concurrently along the chain (no rank waits on a ripple). A zero count
// drops a partner; a missing partner sends and receives nothing.
Request halo_requests(const Communicator &c, const Exec &e, DType dt, const Halo &h, int tag_up, int tag_down)
{
    Backend &b = c.backend(e.space);  // even with no partner: the space must be usable
    const int prev = c.rank() > 0 ? c.rank() - 1 : kNoPeer;
    const int next = c.rank() + 1 < c.size() ? c.rank() + 1 : kNoPeer;
    Backend::Message m[4];
    std::size_t n = 0;
    if (h.n_from_prev && prev != kNoPeer) m[n++] = {false, h.from_prev, h.n_from_prev, prev, tag_up};
    if (h.n_from_next && next != kNoPeer) m[n++] = {false, h.from_next, h.n_from_next, next, tag_down};
    if (h.n_to_next && next != kNoPeer) m[n++] = {true, const_cast<void *>(h.to_next), h.n_to_next, next, tag_up};
    if (h.n_to_prev && prev != kNoPeer) m[n++] = {true, const_cast<void *>(h.to_prev), h.n_to_prev, prev, tag_down};
    return b.iexchange(e, dt, m, n);
}

}  // namespace

Request iallreduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt,
                   ReduceOp op)
{
    return c.backend(e.space).iallreduce(e, send, recv, count, dt, op);
}

void allreduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op)
{
    c.backend(e.space).allreduce(e, send, recv, count, dt, op);
}

Request ireduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt,
                ReduceOp op, int root)
{
    PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "reduce root %d outside 0..%d", root, c.size() - 1);
    return c.backend(e.space).ireduce(e, send, recv, count, dt, op, root);
}

void reduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
            int root)
{
    ireduce(c, e, send, recv, count, dt, op, root).wait();
}

Request iallgatherv(const Communicator &c, const Exec &e, const void *send, void *recv,
                    const std::vector<int64_t> &counts, DType dt, const std::vector<int64_t> &displs)
{
    pool::Array<int64_t> sum;  // the backend copies what it keeps
    const int64_t *d = allgatherv_displs(c, counts, displs, sum);
    return c.backend(e.space).iallgatherv(e, send, recv, counts.data(), d, dt);
}

void allgatherv(const Communicator &c, const Exec &e, const void *send, void *recv, const std::vector<int64_t> &counts,
                DType dt, const std::vector<int64_t> &displs)
{
    pool::Array<int64_t> sum;
    const int64_t *d = allgatherv_displs(c, counts, displs, sum);
    c.backend(e.space).allgatherv(e, send, recv, counts.data(), d, dt);
}

void allgatherv(const Communicator &c, const Exec &e, const void *send, void *recv, const int64_t *counts,
                const int64_t *displs, DType dt)
{
    c.backend(e.space).allgatherv(e, send, recv, counts, displs, dt);
}

Request ibcast(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int root)
{
    PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "bcast root %d outside 0..%d", root, c.size() - 1);
    return c.backend(e.space).ibcast(e, buf, count, dt, root);
}

void bcast(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int root)
{
    PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "bcast root %d outside 0..%d", root, c.size() - 1);
    c.backend(e.space).bcast(e, buf, count, dt, root);
}

Request isend(const Communicator &c, const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag)
{
    require_peer(c, dest, "send destination");
    return c.backend(e.space).isend(e, buf, count, dt, dest, tag);
}

void send(const Communicator &c, const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag)
{
    isend(c, e, buf, count, dt, dest, tag).wait();
}

Request irecv(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int source, int tag)
{
    require_peer(c, source, "receive source");
    return c.backend(e.space).irecv(e, buf, count, dt, source, tag);
}

void recv(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int source, int tag)
{
    irecv(c, e, buf, count, dt, source, tag).wait();
}

void sendrecv(const Communicator &c, const Exec &e, const void *sbuf, int64_t scount, int dest, int stag, void *rbuf,
              int64_t rcount, int source, int rtag, DType dt)
{
    require_peer(c, dest, "sendrecv destination");
    require_peer(c, source, "sendrecv source");
    const Backend::Message m[2] = {{false, rbuf, rcount, source, rtag},
                                   {true, const_cast<void *>(sbuf), scount, dest, stag}};
    c.backend(e.space).iexchange(e, dt, m, 2).wait();
}

Request iexchange(const Communicator &c, const Exec &e, DType dt, const Backend::Message *msgs, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) require_peer(c, msgs[i].peer, msgs[i].send ? "send destination" : "receive source");
    return c.backend(e.space).iexchange(e, dt, msgs, n);
}

void exchange(const Communicator &c, const Exec &e, DType dt, const Backend::Message *msgs, std::size_t n)
{
    iexchange(c, e, dt, msgs, n).wait();
}

Request ialltoallv(const Communicator &c, const Exec &e, const void *sbuf, const std::vector<int64_t> &scounts,
                   const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
                   const std::vector<int64_t> &rdispls, DType dt)
{
    for (const auto *v : {&scounts, &sdispls, &rcounts, &rdispls}) require_per_rank(c, *v, "alltoallv");
    return c.backend(e.space).ialltoallv(e, sbuf, scounts.data(), sdispls.data(), rbuf, rcounts.data(),
                                         rdispls.data(), dt, kTagAlltoallv);
}

void alltoallv(const Communicator &c, const Exec &e, const void *sbuf, const std::vector<int64_t> &scounts,
               const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
               const std::vector<int64_t> &rdispls, DType dt)
{
    ialltoallv(c, e, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, dt).wait();
}

Request ineighbour_exchange(const Communicator &c, const Exec &e, DType dt, const Halo &h)
{
    return halo_requests(c, e, dt, h, kTagHaloUp, kTagHaloDown);
}

void neighbour_exchange(const Communicator &c, const Exec &e, DType dt, const Halo &h)
{
    ineighbour_exchange(c, e, dt, h).wait();
}

// What one start of a plan takes from the pool (comm/pool.hpp), at most: its Pending objects
// (a host-staged start: the staged request and the MPI one, and a table of its messages) and,
// for an all-to-all, per-rank arrays (the MPI requests, a copy of the receive counts).
HaloPlan::HaloPlan(const Communicator &c, DType dt, int64_t n_to_prev, int64_t n_from_prev, int64_t n_to_next,
                   int64_t n_from_next)
    : c_(c), dt_(dt), slots_(pool::kSlot, 3)
{
    for (int64_t n : {n_to_prev, n_from_prev, n_to_next, n_from_next})
        PLM_REQUIRE(n >= 0, PLM_ERR_INVALID_ARG, "halo plan counts must be non-negative");
    counts_.n_to_prev = n_to_prev;
    counts_.n_from_prev = n_from_prev;
    counts_.n_to_next = n_to_next;
    counts_.n_from_next = n_from_next;
}

Request HaloPlan::start(const Exec &e, const Halo &h) const
{
    PLM_REQUIRE(h.n_to_prev == counts_.n_to_prev && h.n_from_prev == counts_.n_from_prev &&
                    h.n_to_next == counts_.n_to_next && h.n_from_next == counts_.n_from_next,
                PLM_ERR_INTERNAL, "halo exchange counts differ from its plan's");
    const int t = tag();
    return halo_requests(c_, e, dt_, h, t, t + 1);
}

int HaloPlan::tag() const
{
    if (tag_ < 0) tag_ = c_.next_plan_tags(2);
    return tag_;
}

int AlltoallvPlan::tag() const
{
    if (tag_ < 0) tag_ = c_.next_plan_tags(1);
    return tag_;
}

AlltoallvPlan::AlltoallvPlan(const Communicator &c, DType dt, const std::vector<int64_t> &scounts,
                             const std::vector<int64_t> &sdispls, const std::vector<int64_t> &rcounts,
                             const std::vector<int64_t> &rdispls)
    : c_(c), dt_(dt), slots_(pool::kSlot, 2)
{
    for (const auto *v : {&scounts, &sdispls, &rcounts, &rdispls}) require_per_rank(c, *v, "alltoallv plan");
    const int me = c.rank(), np = c.size();
    // Receives from me-1, me-2, ... and sends to me+1, me+2, ...: every rank's k-th message
    // meets its peer's k-th.
    for (int k = 1; k < np; ++k) {
        const size_t src = static_cast<size_t>((me - k + np) % np);
        if (rcounts[src] > 0) recvs_.push_back({static_cast<int>(src), rcounts[src], rdispls[src]});
    }
    for (int k = 1; k < np; ++k) {
        const size_t dst = static_cast<size_t>((me + k) % np);
        if (scounts[dst] > 0) sends_.push_back({static_cast<int>(dst), scounts[dst], sdispls[dst]});
    }
    const size_t m = static_cast<size_t>(me);
    own_count_ = std::min(scounts[m], rcounts[m]);
    own_sdispl_ = sdispls[m];
    own_rdispl_ = rdispls[m];
    messages_ = pool::Reservation(sizeof(Backend::Message) * (recvs_.size() + sends_.size()), 1);
}

Request AlltoallvPlan::start(const Exec &e, const void *sbuf, void *rbuf) const
{
    const size_t es = dtype_size(dt_), n = recvs_.size() + sends_.size();
    const int t = tag();
    pool::Array<Backend::Message> msgs(n);
    size_t i = 0;
    for (const Peer &p : recvs_) msgs[i++] = {false, static_cast<char *>(rbuf) + p.displ * static_cast<int64_t>(es), p.count, p.rank, t};
    for (const Peer &p : sends_)
        msgs[i++] = {true, const_cast<char *>(static_cast<const char *>(sbuf)) + p.displ * static_cast<int64_t>(es), p.count,
                     p.rank, t};
    Backend &b = c_.backend(e.space);
    Request r = b.iexchange(e, dt_, msgs.data(), n);
    char *own_dst = static_cast<char *>(rbuf) + own_rdispl_ * static_cast<int64_t>(es);
    const char *own_src = static_cast<const char *>(sbuf) + own_sdispl_ * static_cast<int64_t>(es);
    if (own_count_ > 0 && own_dst != own_src)
        b.copy_own_block(e, own_dst, own_src, static_cast<std::size_t>(own_count_) * es);
    return r;
}

std::vector<int64_t> allgather_i64(const Communicator &c, const std::vector<int64_t> &mine)
{
    const int64_t n = static_cast<int64_t>(mine.size());
    std::vector<int64_t> all(static_cast<size_t>(n) * static_cast<size_t>(c.size()));
    allgather_i64(c, mine.data(), n, all.data());
    return all;
}

void allgather_i64(const Communicator &c, const int64_t *mine, int64_t n, int64_t *all)
{
    PLM_REQUIRE(n >= 0, PLM_ERR_INTERNAL, "allgather_i64 of %lld values", static_cast<long long>(n));
    // Every rank's block is n values at rank * n: counts and displacements in pool memory.
    const size_t P = static_cast<size_t>(c.size());
    pool::Array<int64_t> cd(2 * P);
    for (size_t r = 0; r < P; ++r) {
        cd[r] = n;
        cd[P + r] = static_cast<int64_t>(r) * n;
    }
    c.backend(Space::host).allgatherv(Exec{}, mine, all, cd.data(), cd.data() + P, DType::i64);
}

int64_t allreduce_i64(const Communicator &c, int64_t v, ReduceOp op)
{
    int64_t out = 0;
    allreduce(c, Exec{}, &v, &out, 1, DType::i64, op);
    return out;
}

}  // namespace plm::comm
