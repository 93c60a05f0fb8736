// The Distributed mixin: the communication patterns arrays and operators use. Each call
// picks the backend for the buffer's memory space through the communicator's policy and
// never lets MPI or NCCL details leak upwards. All calls are collective on the
// communicator passed, except send/recv (point-to-point).
#pragma once

#include <new>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"

namespace plm::comm {

class Distributed {
public:
    // send == recv: in place. count elements of dt.
    void allreduce(const Communicator &c, Space s, const void *send, void *recv, int64_t count, DType dt,
                   ReduceOp op) const;
    // Rank r contributes counts[r] elements; they land at displs[r] (exclusive prefix sum of
    // counts when displs is empty). No padding.
    void allgatherv(const Communicator &c, Space s, const void *send, void *recv, const std::vector<int64_t> &counts,
                    DType dt, std::vector<int64_t> displs = {}) const;
    void bcast(const Communicator &c, Space s, void *buf, int64_t count, DType dt, int root) const;
    void send(const Communicator &c, Space s, const void *buf, int64_t count, DType dt, int dest, int tag) const;
    void recv(const Communicator &c, Space s, void *buf, int64_t count, DType dt, int source, int tag) const;
    void sendrecv(const Communicator &c, Space s, const void *sbuf, int64_t scount, int dest, int stag, void *rbuf,
                  int64_t rcount, int source, int rtag, DType dt) const;
    void alltoallv(const Communicator &c, Space s, const void *sbuf, const std::vector<int64_t> &scounts,
                   const std::vector<int64_t> &sdispls, void *rbuf, const std::vector<int64_t> &rcounts,
                   const std::vector<int64_t> &rdispls, DType dt) const;

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
    void neighbour_exchange(const Communicator &c, Space s, DType dt, const Halo &h) const;

    // Host metadata helpers (shapes, counts, flags), always over buffered MPI.
    std::vector<int64_t> allgather_i64(const Communicator &c, const std::vector<int64_t> &mine) const;
    int64_t allreduce_i64(const Communicator &c, int64_t v, ReduceOp op) const;

    // Collective error agreement: if any rank has an error, every rank throws it (status and
    // message of the lowest failing rank). A local error is rethrown as is.
    void agree(const Communicator &c, const std::optional<Error> &local) const;
};

// Runs f() and returns the Error it threw, if any, for agree().
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
