#include "memory/space.hpp"

#include "core/alloc.hpp"
#include "core/sim.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#ifdef PLM_DEVICE_EMULATION
#include <plm_device_emu.h>
#endif

namespace plm {

namespace {

constexpr std::size_t kAlign = 64;

void *host_alloc(std::size_t bytes)
{
    // Round up so aligned_alloc's size rule holds; never return NULL for 0 bytes, so a
    // rank with an empty block still has a valid pointer to hand to MPI.
    std::size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
    if (n == 0) n = kAlign;
#ifdef PLM_SMPI
    if (void *s = sim::alloc(n)) return s;  // sampled timing runs only (core/sim.hpp)
#endif
    void *p = std::aligned_alloc(kAlign, n);
    if (!p) throw std::bad_alloc();
    return p;
}

void host_release(void *p)
{
#ifdef PLM_SMPI
    if (sim::release(p)) return;
#endif
    std::free(p);
}

void host_copy(void *dst, const void *src, std::size_t bytes, Stream)
{
    if (bytes) std::memmove(dst, src, bytes);
}

void host_sync(Stream) {}

const SpaceOps kHostOps = {sizeof(SpaceOps), "host", host_alloc, host_release, host_copy, host_sync};

}  // namespace

Space space_from_public(int m)
{
    switch (m) {
    case PLM_MEMORY_HOST: return Space::host;
    case PLM_MEMORY_DEVICE: return Space::device;
    }
    PLM_FAIL(PLM_ERR_INVALID_ARG, "unknown memory space %d", m);
}

plm_memory_t space_to_public(Space s) { return s == Space::device ? PLM_MEMORY_DEVICE : PLM_MEMORY_HOST; }

const char *space_name(Space s)
{
    switch (s) {
    case Space::host: return "host";
    case Space::device: return "device";
    case Space::pinned: return "pinned host";
    }
    return "invalid";
}

#ifdef PLM_HAVE_CUDA
bool cuda_built() { return true; }
#else
bool cuda_built() { return false; }
const SpaceOps *cuda_space_ops(Space) { return nullptr; }
int device_count() { return 0; }
void use_device(int) {}
int device_of(const void *) { return -1; }
void *create_stream(int) { PLM_FAIL(PLM_ERR_BACKEND_UNAVAILABLE, "CUDA streams need a CUDA build"); }
void destroy_stream(void *) noexcept {}
#endif

#ifdef PLM_DEVICE_EMULATION
DeviceMemoryOpenToMpi::DeviceMemoryOpenToMpi() { plm_emu_open_device_memory(1); }
DeviceMemoryOpenToMpi::~DeviceMemoryOpenToMpi() { plm_emu_open_device_memory(0); }
#else
DeviceMemoryOpenToMpi::DeviceMemoryOpenToMpi() = default;
DeviceMemoryOpenToMpi::~DeviceMemoryOpenToMpi() = default;
#endif

const SpaceOps *space_ops(Space s) { return s == Space::host ? &kHostOps : cuda_space_ops(s); }

const SpaceOps &require_space(Space s)
{
    const SpaceOps *ops = space_ops(s);
    PLM_REQUIRE(ops && ops->size >= sizeof(SpaceOps), PLM_ERR_BACKEND_UNAVAILABLE,
                "memory space '%s' is not available: %s", space_name(s),
                cuda_built() ? "no CUDA device is visible to this process" : "this build is host-only");
    return *ops;
}

Buffer Buffer::allocate(Space s, std::size_t bytes)
{
    const SpaceOps &ops = require_space(s);
    alloc::note();
    Buffer b;
    b.ptr_ = ops.alloc(bytes);
    b.bytes_ = bytes;
    b.space_ = s;
    b.owned_ = true;
    return b;
}

Buffer Buffer::wrap(Space s, void *p, std::size_t bytes)
{
    require_space(s);
    Buffer b;
    b.ptr_ = p;
    b.bytes_ = bytes;
    b.space_ = s;
    b.owned_ = false;
    return b;
}

Buffer::~Buffer()
{
    if (owned_ && ptr_) {
        if (const SpaceOps *ops = space_ops(space_)) ops->release(ptr_);
    }
}

void Buffer::swap(Buffer &o) noexcept
{
    std::swap(space_, o.space_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(owned_, o.owned_);
}

namespace {
thread_local int64_t t_copy_countdown = 0;

void copy_fault_hook()
{
    if (t_copy_countdown > 0 && --t_copy_countdown == 0)
        PLM_FAIL(PLM_ERR_CUDA, "cudaMemcpyAsync: injected device copy failure (test hook)");
}
}  // namespace

namespace fault {
void fail_copy_nth(int64_t n) { t_copy_countdown = n; }
}  // namespace fault

void copy_on(Space s, void *dst, const void *src, std::size_t bytes, Stream stream)
{
    const SpaceOps &ops = require_space(s);
    copy_fault_hook();
    ops.copy(dst, src, bytes, stream);
}

void copy_bytes(Space dst_space, void *dst, Space src_space, const void *src, std::size_t bytes, Stream stream)
{
    // The device's table (else the non-host side's) knows how to move data to and from it.
    Space s = dst_space == Space::device || src_space == Space::device ? Space::device
              : dst_space != Space::host                               ? dst_space
                                                                       : src_space;
    const SpaceOps &ops = require_space(s);
    copy_fault_hook();
    ops.copy(dst, src, bytes, stream);
    // A copy touching host memory is done when this returns: the caller may read the
    // destination or reuse the source at once. Device-to-device copies stay on the stream.
    if (dst_space != Space::device || src_space != Space::device) ops.synchronize(stream);
}

}  // namespace plm
