// Every allocation of a test program goes through plm::alloc::note(): the global operator
// new is replaced here, so the library's own allocations (std::vector, std::make_shared,
// strings) count as well as its Buffers. C hooks for the tests, which are written in C.
#include <cstddef>
#include <cstdlib>
#include <new>

#include "core/alloc.hpp"

namespace {
void *allocate(std::size_t n, std::size_t align)
{
    plm::alloc::note();  // may throw std::bad_alloc (the armed countdown)
    if (n == 0) n = 1;
    void *p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n);
    if (!p) throw std::bad_alloc();
    return p;
}
void *allocate_nothrow(std::size_t n, std::size_t align) noexcept
{
    try {
        return allocate(n, align);
    } catch (...) {
        return nullptr;
    }
}
}  // namespace

void *operator new(std::size_t n) { return allocate(n, 0); }
void *operator new[](std::size_t n) { return allocate(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
void *operator new[](std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n, 0); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n, 0); }
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
    return allocate_nothrow(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
    return allocate_nothrow(n, static_cast<std::size_t>(a));
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

extern "C" {
void plm_test_fail_nth(long long n) { plm::alloc::fail_nth(n); }
long long plm_test_armed(void) { return plm::alloc::armed(); }
long long plm_test_violations(void) { return plm::alloc::violations(); }
long long plm_test_allocations(void) { return plm::alloc::allocations(); }
void plm_test_reset_violations(void) { plm::alloc::reset_violations(); }
void plm_test_trace_violations(int on) { plm::alloc::trace_violations(on != 0); }
}
