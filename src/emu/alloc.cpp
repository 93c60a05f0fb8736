// The emulated device's own operator new and delete (malloc), kept out of the dynamic symbol
// table by emu.map: the runtime's bookkeeping (queues, closures, plans) is not the library's
// allocation, as a real CUDA runtime's is not, so a test that counts or fails the program's
// allocations (tests/fault/fault_hooks.cpp) sees the library's alone.
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
void *get(std::size_t n, std::size_t align)
{
    if (n == 0) n = 1;
    void *p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n);
    if (!p) throw std::bad_alloc();
    return p;
}
}  // namespace

void *operator new(std::size_t n) { return get(n, 0); }
void *operator new[](std::size_t n) { return get(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) { return get(n, static_cast<std::size_t>(a)); }
void *operator new[](std::size_t n, std::align_val_t a) { return get(n, static_cast<std::size_t>(a)); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
