#include "comm/distributed.hpp"

#include <cstring>

namespace plm::comm {

namespace {

const BackendOps &ops_for(const Communicator &c, Space s)
{
    const plm_backend_t b = c.backend_for(s);
    const BackendOps *ops = backend_ops(b);
    PLM_REQUIRE(ops && ops->size >= sizeof(BackendOps), PLM_ERR_BACKEND_UNAVAILABLE,
                "backend %s chosen for %s memory is not in this build", plm_backend_name(b), space_name(s));
    return *ops;
}

void check(plm_status_t st, const char *msg)
{
    if (st != PLM_SUCCESS) PLM_FAIL(st, "%s", msg);
}

void require_peer(const Communicator &c, int p, const char *what)
{
    PLM_REQUIRE(p == kNoPeer || (p >= 0 && p < c.size()), PLM_ERR_INVALID_ARG, "%s rank %d outside 0..%d", what, p,
                c.size() - 1);
}

}  // namespace

void Distributed::allreduce(const Communicator &c, Space s, const void *send, void *recv, int64_t count, DType dt,
                            ReduceOp op) const
{
    char msg[kMsgLen] = "";
    check(ops_for(c, s).allreduce(c.view(), send, recv, count, dt, op, msg), msg);
}

void Distributed::allgatherv(const Communicator &c, Space s, const void *send, void *recv,
                             const std::vector<int64_t> &counts, DType dt, std::vector<int64_t> displs) const
{
    PLM_REQUIRE(static_cast<int>(counts.size()) == c.size(), PLM_ERR_INTERNAL, "allgatherv needs one count per rank");
    if (displs.empty()) {
        displs.resize(counts.size());
        int64_t off = 0;
        for (size_t r = 0; r < counts.size(); ++r) {
            displs[r] = off;
            off += counts[r];
        }
    }
    char msg[kMsgLen] = "";
    check(ops_for(c, s).allgatherv(c.view(), send, counts[c.rank()], recv, counts.data(), displs.data(), dt, msg), msg);
}

void Distributed::bcast(const Communicator &c, Space s, void *buf, int64_t count, DType dt, int root) const
{
    PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "bcast root %d outside 0..%d", root, c.size() - 1);
    char msg[kMsgLen] = "";
    check(ops_for(c, s).bcast(c.view(), buf, count, dt, root, msg), msg);
}

void Distributed::send(const Communicator &c, Space s, const void *buf, int64_t count, DType dt, int dest,
                       int tag) const
{
    require_peer(c, dest, "send destination");
    char msg[kMsgLen] = "";
    check(ops_for(c, s).send(c.view(), buf, count, dt, dest, tag, msg), msg);
}

void Distributed::recv(const Communicator &c, Space s, void *buf, int64_t count, DType dt, int source, int tag) const
{
    require_peer(c, source, "receive source");
    char msg[kMsgLen] = "";
    check(ops_for(c, s).recv(c.view(), buf, count, dt, source, tag, msg), msg);
}

void Distributed::sendrecv(const Communicator &c, Space s, const void *sbuf, int64_t scount, int dest, int stag,
                           void *rbuf, int64_t rcount, int source, int rtag, DType dt) const
{
    require_peer(c, dest, "sendrecv destination");
    require_peer(c, source, "sendrecv source");
    char msg[kMsgLen] = "";
    check(ops_for(c, s).sendrecv(c.view(), sbuf, scount, dest, stag, rbuf, rcount, source, rtag, dt, msg), msg);
}

void Distributed::alltoallv(const Communicator &c, Space s, const void *sbuf, const std::vector<int64_t> &scounts,
                            const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
                            const std::vector<int64_t> &rdispls, DType dt) const
{
    const size_t p = static_cast<size_t>(c.size());
    PLM_REQUIRE(scounts.size() == p && sdispls.size() == p && rcounts.size() == p && rdispls.size() == p,
                PLM_ERR_INTERNAL, "alltoallv needs one count and displacement per rank");
    char msg[kMsgLen] = "";
    check(ops_for(c, s).alltoallv(c.view(), sbuf, scounts.data(), sdispls.data(), rbuf, rcounts.data(),
                                  rdispls.data(), dt, msg),
          msg);
}

void Distributed::neighbour_exchange(const Communicator &c, Space s, DType dt, const Halo &h) const
{
    const int prev = c.rank() > 0 ? c.rank() - 1 : kNoPeer;
    const int next = c.rank() + 1 < c.size() ? c.rank() + 1 : kNoPeer;
    // Both shifts run concurrently along the chain (no rank waits on a ripple): first every
    // rank sends up and receives from below, then the reverse. Zero counts drop a partner,
    // which every backend must accept; a missing partner sends/receives nothing.
    sendrecv(c, s, h.to_next, h.n_to_next, h.n_to_next ? next : kNoPeer, 11, h.from_prev, h.n_from_prev,
             h.n_from_prev ? prev : kNoPeer, 11, dt);
    sendrecv(c, s, h.to_prev, h.n_to_prev, h.n_to_prev ? prev : kNoPeer, 12, h.from_next, h.n_from_next,
             h.n_from_next ? next : kNoPeer, 12, dt);
}

std::vector<int64_t> Distributed::allgather_i64(const Communicator &c, const std::vector<int64_t> &mine) const
{
    const int64_t n = static_cast<int64_t>(mine.size());
    std::vector<int64_t> all(static_cast<size_t>(n) * static_cast<size_t>(c.size()));
    allgatherv(c, Space::host, mine.data(), all.data(), std::vector<int64_t>(static_cast<size_t>(c.size()), n),
               DType::i64);
    return all;
}

int64_t Distributed::allreduce_i64(const Communicator &c, int64_t v, ReduceOp op) const
{
    int64_t out = 0;
    allreduce(c, Space::host, &v, &out, 1, DType::i64, op);
    return out;
}

void Distributed::agree(const Communicator &c, const std::optional<Error> &local) const
{
    const int64_t first = allreduce_i64(c, local ? c.rank() : c.size(), ReduceOp::min);
    if (first == c.size()) return;
    // Everyone learns the root cause from the lowest failing rank.
    struct {
        int64_t status;
        char text[kMsgLen];
    } m{};
    if (first == c.rank()) {
        m.status = local->status();
        std::strncpy(m.text, local->what(), sizeof m.text - 1);
    }
    bcast(c, Space::host, &m, static_cast<int64_t>(sizeof m), DType::u8, static_cast<int>(first));
    if (local) throw *local;
    m.text[sizeof m.text - 1] = '\0';
    std::string text = "on rank " + std::to_string(first) + ": " + m.text;
    throw Error(static_cast<plm_status_t>(m.status), text);
}

}  // namespace plm::comm
