// The communication layer arrays and operators use (the "mixin", as plain functions: the
// state lives in the Communicator and its backends). Each call takes an execution context;
// its memory space picks the communicator's backend for that space, so callers never see
// MPI, NCCL or staging. Every i* call returns a Request and its blocking form is i* + wait.
// All calls are collective on the communicator passed, except send/recv (point-to-point).
// Buffers must stay untouched until the request completes.
//
// After an agreement (core/alloc.hpp) every call here allocates nothing: what an operation
// keeps until it completes comes from the pool that each Agreement tops up for one operation
// over its communicator's ranks (comm/pool.hpp), plans reserve what their starts take, and
// host-staged device memory is staged in memory reserved by Communicator::reserve() inside
// the agreement's check. Exceptions, allocating: allgather_i64's vector form, Request::then()
// with large captures, a Request::all() vector grown after the agreement, messages chunked
// past INT_MAX elements into more pieces than an operation's reserve holds, and more
// operations in flight at once than the pool keeps (16 requests, 4 per-rank arrays of each
// size): a gather's or scatter's P messages go as one iexchange(), not P requests.
#pragma once

#include <new>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/pool.hpp"

namespace plm::comm {

// send == recv: in place. count elements of dt.
Request iallreduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt,
                   ReduceOp op);
void allreduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt,
               ReduceOp op);

// Every rank's send combined into recv on root; recv is not used elsewhere (may be NULL).
// send == recv on root: in place.
Request ireduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt,
                ReduceOp op, int root);
void reduce(const Communicator &c, const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op,
            int root);

// Rank r contributes counts[r] elements; they land at displs[r] (exclusive prefix sum of
// counts when displs is empty). No padding. send may be recv + displs[rank] (in place).
Request iallgatherv(const Communicator &c, const Exec &e, const void *send, void *recv,
                    const std::vector<int64_t> &counts, DType dt, const std::vector<int64_t> &displs = {});
void allgatherv(const Communicator &c, const Exec &e, const void *send, void *recv, const std::vector<int64_t> &counts,
                DType dt, const std::vector<int64_t> &displs = {});
// The same with counts and displacements given (size() each) and checked by the caller: for
// gathers planned before an agreement.
void allgatherv(const Communicator &c, const Exec &e, const void *send, void *recv, const int64_t *counts,
                const int64_t *displs, DType dt);

Request ibcast(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int root);
void bcast(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int root);

// Point-to-point; kNoPeer sends or receives nothing.
Request isend(const Communicator &c, const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag);
void send(const Communicator &c, const Exec &e, const void *buf, int64_t count, DType dt, int dest, int tag);
Request irecv(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int source, int tag);
void recv(const Communicator &c, const Exec &e, void *buf, int64_t count, DType dt, int source, int tag);
void sendrecv(const Communicator &c, const Exec &e, const void *sbuf, int64_t scount, int dest, int stag, void *rbuf,
              int64_t rcount, int source, int rtag, DType dt);
// A batch of point-to-point messages (Backend::Message: send or receive, buffer, count, peer
// or kNoPeer, tag) as one request: a root's receives from every rank (gather), its sends to
// every rank (scatter). One request object and one array of MPI requests however many
// messages, both from the pool (up to one message per rank, no allocation after an
// agreement); msgs is read during the call only.
Request iexchange(const Communicator &c, const Exec &e, DType dt, const Backend::Message *msgs, std::size_t n);
void exchange(const Communicator &c, const Exec &e, DType dt, const Backend::Message *msgs, std::size_t n);

// Rank r sends scounts[k] elements at sdispls[k] to rank k and receives rcounts[k] at
// rdispls[k] from it. For repeated exchanges of the same shape use AlltoallvPlan.
Request ialltoallv(const Communicator &c, const Exec &e, const void *sbuf, const std::vector<int64_t> &scounts,
                   const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
                   const std::vector<int64_t> &rdispls, DType dt);
void alltoallv(const Communicator &c, const Exec &e, const void *sbuf, const std::vector<int64_t> &scounts,
               const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
               const std::vector<int64_t> &rdispls, DType dt);

// Halo exchange with the previous (rank-1) and next (rank+1) ranks of a 1-D chain:
// to_prev goes to rank-1 and arrives there as from_next, and to_next likewise. Counts of
// 0 skip a direction; the chain ends have no partner.
struct Halo {
    const void *to_prev = nullptr;
    int64_t n_to_prev = 0;
    void *from_prev = nullptr;
    int64_t n_from_prev = 0;
    const void *to_next = nullptr;
    int64_t n_to_next = 0;
    void *from_next = nullptr;
    int64_t n_from_next = 0;
};
Request ineighbour_exchange(const Communicator &c, const Exec &e, DType dt, const Halo &h);
void neighbour_exchange(const Communicator &c, const Exec &e, DType dt, const Halo &h);

// Persistent exchange plans: the shape is fixed at creation (it allocates, and reserves pool
// storage for its starts: make plans inside an agreement's check or before it), then start()
// runs one exchange per call, allocating nothing. A plan takes its private tags at its first
// start (or tag()), not at creation, so a creation that fails on some ranks takes none; plans
// are started for the first time in the same order on every rank (they are collective),
// which gives each the same tags everywhere. Plans with different tags can be in flight together; one plan has
// at most one exchange in flight. A plan must not outlive its communicator.
class HaloPlan {
public:
    // Counts as in Halo; the buffers are given to start().
    HaloPlan(const Communicator &c, DType dt, int64_t n_to_prev, int64_t n_from_prev, int64_t n_to_next,
             int64_t n_from_next);
    Request start(const Exec &e, const Halo &h) const;  // h's counts must be the plan's
    int tag() const;

private:
    const Communicator &c_;
    DType dt_;
    Halo counts_;
    mutable int tag_ = -1;
    pool::Reservation slots_;  // what one start takes from the pool
};

// An all-to-all of fixed counts, kept as the ranks this rank exchanges with (non-empty blocks
// only): a start posts one message a peer and copies this rank's own block, with no loop over
// the communicator (a halo has two peers of 1024) and memory for the peers only.
class AlltoallvPlan {
public:
    AlltoallvPlan(const Communicator &c, DType dt, const std::vector<int64_t> &scounts,
                  const std::vector<int64_t> &sdispls, const std::vector<int64_t> &rcounts,
                  const std::vector<int64_t> &rdispls);
    Request start(const Exec &e, const void *sbuf, void *rbuf) const;
    int tag() const;

private:
    struct Peer {
        int rank;
        int64_t count, displ;
    };
    const Communicator &c_;
    DType dt_;
    std::vector<Peer> recvs_, sends_;  // in the order they are posted (receives first)
    int64_t own_count_ = 0, own_sdispl_ = 0, own_rdispl_ = 0;  // this rank's block to itself
    mutable int tag_ = -1;
    pool::Reservation slots_, messages_;  // what one start takes from the pool
};

// Host metadata helpers (shapes, counts, flags), always on the host backend.
std::vector<int64_t> allgather_i64(const Communicator &c, const std::vector<int64_t> &mine);
// The same into all (n * size values, rank r's at r * n): allocates nothing.
void allgather_i64(const Communicator &c, const int64_t *mine, int64_t n, int64_t *all);
int64_t allreduce_i64(const Communicator &c, int64_t v, ReduceOp op);

// Runs f() and returns the Error it threw, if any (for Agreement::add_error).
template <typename F> std::optional<Error> capture(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    } catch (const std::bad_alloc &) {
        return Error(PLM_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception &e) {
        return Error(PLM_ERR_INTERNAL, e.what());
    }
    return std::nullopt;
}

}  // namespace plm::comm
