#include "comm/pool.hpp"

#include <cstdlib>
#include <mutex>
#include <new>

#include "core/alloc.hpp"

namespace plm::comm::pool {

namespace {

constexpr int kClasses = 7;        // 256 B, 1 KiB, ..., 1 MiB
constexpr int kSmallFree = 16;     // 256-byte blocks kept free: requests of one call
constexpr int kOpFree = 4;         // blocks of each class up to op_bytes(ranks) kept free

std::size_t capacity(int cls) { return kSlot << (2 * cls); }

// The smallest class that holds n bytes, or -1 beyond the largest.
int class_of(std::size_t n)
{
    for (int k = 0; k < kClasses; ++k)
        if (n <= capacity(k)) return k;
    return -1;
}

// A free block holds the link to the next one.
struct Free {
    Free *next;
};

struct Lists {
    std::mutex lock;
    Free *head[kClasses] = {};
    int free[kClasses] = {};
    int reserved[kClasses] = {};  // by live Reservations
};

// Never destroyed: blocks may be given back during static destruction.
Lists &lists()
{
    static Lists *l = new Lists();
    return *l;
}

void *fresh(std::size_t bytes)
{
    alloc::note();
    void *p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    return p;
}

// Under the lock: at least n free blocks of class k.
void fill(Lists &l, int k, int n)
{
    while (l.free[k] < n) {
        Free *b = static_cast<Free *>(fresh(capacity(k)));
        b->next = l.head[k];
        l.head[k] = b;
        ++l.free[k];
    }
}

}  // namespace

void *take(std::size_t bytes)
{
    const int k = class_of(bytes);
    if (k < 0) return fresh(bytes);
    Lists &l = lists();
    {
        std::lock_guard<std::mutex> g(l.lock);
        if (Free *b = l.head[k]) {
            l.head[k] = b->next;
            --l.free[k];
            return b;
        }
    }
    return fresh(capacity(k));
}

void give(void *p, std::size_t bytes) noexcept
{
    if (!p) return;
    const int k = class_of(bytes);
    if (k < 0) {
        std::free(p);
        return;
    }
    Lists &l = lists();
    std::lock_guard<std::mutex> g(l.lock);
    Free *b = static_cast<Free *>(p);
    b->next = l.head[k];
    l.head[k] = b;
    ++l.free[k];
}

std::size_t op_bytes(int ranks) { return 32 * static_cast<std::size_t>(ranks > 0 ? ranks : 1); }

void top_up(int ranks)
{
    Lists &l = lists();
    int want[kClasses];
    std::lock_guard<std::mutex> g(l.lock);
    for (int k = 0; k < kClasses; ++k) want[k] = l.reserved[k];
    want[0] += kSmallFree;
    // Per-rank arrays come in several sizes up to op_bytes(): a few free in every class.
    int big = class_of(op_bytes(ranks));
    if (big < 0) big = kClasses - 1;
    for (int k = 0; k <= big; ++k) want[k] += kOpFree;
    for (int k = 0; k < kClasses; ++k)
        if (l.free[k] < want[k]) fill(l, k, want[k]);
}

Reservation::Reservation(std::size_t bytes, int count)
{
    const int k = class_of(bytes);
    if (k < 0 || count <= 0) return;  // beyond the classes: plain memory each time
    Lists &l = lists();
    std::lock_guard<std::mutex> g(l.lock);
    fill(l, k, l.free[k] + count);  // first: a failure leaves nothing reserved
    l.reserved[k] += count;
    cls_ = k;
    count_ = count;
}

Reservation::~Reservation()
{
    if (cls_ < 0) return;
    Lists &l = lists();
    std::lock_guard<std::mutex> g(l.lock);
    l.reserved[cls_] -= count_;
    // Free what no one reserves any more, beyond what top_up() keeps anyway.
    for (int i = 0; i < count_ && l.free[cls_] > l.reserved[cls_] + kSmallFree && l.head[cls_]; ++i) {
        Free *b = l.head[cls_];
        l.head[cls_] = b->next;
        --l.free[cls_];
        std::free(b);
    }
}

void trim() noexcept
{
    Lists &l = lists();
    std::lock_guard<std::mutex> g(l.lock);
    for (int k = 0; k < kClasses; ++k) {
        while (Free *b = l.head[k]) {
            l.head[k] = b->next;
            std::free(b);
        }
        l.free[k] = 0;
    }
}

std::size_t free_blocks(std::size_t bytes)
{
    const int k = class_of(bytes);
    if (k < 0) return 0;
    Lists &l = lists();
    std::lock_guard<std::mutex> g(l.lock);
    return static_cast<std::size_t>(l.free[k]);
}

}  // namespace plm::comm::pool
