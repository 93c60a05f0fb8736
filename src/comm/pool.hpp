// Storage for what the communication layer needs per operation - the Pending object behind a
// Request, the MPI requests of one operation, the counts MPI reads until it completes - taken
// from free lists that are topped up before agreements, so an operation started after an
// agreement allocates nothing (core/alloc.hpp).
//
// Blocks come in size classes of 256 bytes times 4^k (256 B .. 1 MiB). top_up(ranks), called
// by every Agreement's constructor, keeps 16 256-byte blocks free (the requests of one call)
// and 4 blocks of every class up to op_bytes(ranks) (the per-rank arrays of one call); a
// Reservation raises those numbers while a persistent plan lives. A request bigger than the largest class is plain
// memory, allocated each time. One lock; blocks may be given back on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace plm::comm::pool {

constexpr std::size_t kSlot = 256;  // the smallest class: a Pending object fits one

// n bytes of storage, from a free list when one has a block. Allocating counts through
// alloc::note() and may throw std::bad_alloc.
void *take(std::size_t bytes);
// Back to its free list (bytes as given to take()).
void give(void *p, std::size_t bytes) noexcept;

// Bytes of a per-rank array one operation on n ranks may take: 32 bytes per rank (the MPI
// requests of an alltoallv, the counts and displacements of a v-collective, a host-staged
// exchange's message table with one message per rank).
std::size_t op_bytes(int ranks);

// Makes sure the free lists hold what one collective call on a communicator of `ranks` ranks
// needs after its agreement (and what live Reservations ask for). Cheap when they do; else
// allocates (and may throw std::bad_alloc).
void top_up(int ranks);

// While alive, top_up() keeps `count` more blocks of `bytes` free; made at once. For the
// life of a persistent plan, whose every start takes them.
class Reservation {
public:
    Reservation() = default;
    Reservation(std::size_t bytes, int count);
    Reservation(Reservation &&o) noexcept { swap(o); }
    Reservation &operator=(Reservation &&o) noexcept
    {
        Reservation t(std::move(o));
        swap(t);
        return *this;
    }
    ~Reservation();

private:
    void swap(Reservation &o) noexcept
    {
        std::swap(cls_, o.cls_);
        std::swap(count_, o.count_);
    }
    int cls_ = -1;
    int count_ = 0;
};

// n elements of T (trivial types) from the pool, given back when it goes.
template <typename T> class Array {
public:
    Array() = default;
    explicit Array(std::size_t n) : n_(n) { p_ = n ? static_cast<T *>(take(n * sizeof(T))) : nullptr; }
    Array(Array &&o) noexcept { swap(o); }
    Array &operator=(Array &&o) noexcept
    {
        Array t(std::move(o));
        swap(t);
        return *this;
    }
    Array(const Array &) = delete;
    Array &operator=(const Array &) = delete;
    ~Array()
    {
        if (p_) give(p_, n_ * sizeof(T));
    }
    T *data() const { return p_; }
    std::size_t size() const { return n_; }
    T &operator[](std::size_t i) const { return p_[i]; }
    explicit operator bool() const { return p_ != nullptr; }

private:
    void swap(Array &o) noexcept
    {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
    }
    T *p_ = nullptr;
    std::size_t n_ = 0;
};

// Tests: frees every free block (the next top_up() allocates again), and counts the free
// blocks of the class that serves `bytes`.
void trim() noexcept;
std::size_t free_blocks(std::size_t bytes);

}  // namespace plm::comm::pool
