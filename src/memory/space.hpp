// Memory spaces and RAII buffers. Each space is a small ops table; spaces a build lacks
// (CUDA device and pinned host in host-only builds) have no table and report
// PLM_ERR_BACKEND_UNAVAILABLE, so the layers above never branch on the build.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.hpp"

namespace plm {

enum class Space { host, device, pinned };

Space space_from_public(int m);  // a plm_memory_t value; INVALID_ARG for unknown ones
plm_memory_t space_to_public(Space s);
const char *space_name(Space s);

// A CUDA stream (cudaStream_t) or nullptr for the default one; host work ignores it.
struct Stream {
    void *handle = nullptr;
};

// Where and how work runs: every kernel and every communication call takes one, so CUDA
// kernels and stream-ordered communication fit without changing signatures. Host work
// ignores device and stream.
struct Exec {
    Space space = Space::host;
    int device = -1;  // CUDA device ordinal, -1 for the current one
    Stream stream{};
};

struct SpaceOps {
    std::size_t size;  // sizeof(SpaceOps) of the provider, checked before use
    const char *name;
    void *(*alloc)(std::size_t bytes);
    void (*release)(void *p);
    // Copies bytes from src to dst (either may be host or this space), ordered on stream.
    void (*copy)(void *dst, const void *src, std::size_t bytes, Stream stream);
    void (*synchronize)(Stream stream);
};

// nullptr when the space is not in this build, or (CUDA builds) no device is visible.
const SpaceOps *space_ops(Space s);
// CUDA builds (memory/cuda_space.cpp): the device and pinned host tables, nullptr without a device.
const SpaceOps *cuda_space_ops(Space s);
// Whether this build has CUDA (whatever the machine has).
bool cuda_built();
// CUDA devices visible to this process (0 in host-only builds or without a driver).
int device_count();
// Makes device (>= 0) the calling thread's current CUDA device; -1 and host-only builds: nothing.
void use_device(int device);
// The CUDA device that holds p (device or managed memory), or -1 for any other pointer.
int device_of(const void *p);
// A new non-blocking CUDA stream on device (the caller destroys it); PLM_ERR_CUDA on failure,
// PLM_ERR_BACKEND_UNAVAILABLE without CUDA.
void *create_stream(int device);
void destroy_stream(void *stream) noexcept;
// The ops of s, or throws PLM_ERR_BACKEND_UNAVAILABLE.
const SpaceOps &require_space(Space s);

class Buffer {
public:
    Buffer() = default;
    static Buffer allocate(Space s, std::size_t bytes);
    static Buffer wrap(Space s, void *p, std::size_t bytes);  // not owned
    Buffer(Buffer &&o) noexcept { swap(o); }
    Buffer &operator=(Buffer &&o) noexcept
    {
        Buffer tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer();

    void *data() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }
    Space space() const { return space_; }
    bool owned() const { return owned_; }

private:
    void swap(Buffer &o) noexcept;
    Space space_ = Space::host;
    void *ptr_ = nullptr;
    std::size_t bytes_ = 0;
    bool owned_ = false;
};

// Copy between any two spaces of this build, ordered on stream. Returns when done if either
// side is host memory; device-to-device copies are asynchronous on the stream.
void copy_bytes(Space dst_space, void *dst, Space src_space, const void *src, std::size_t bytes,
                Stream stream = {});
// Space s's copy (either side may be host memory or s), queued on stream and not waited for.
void copy_on(Space s, void *dst, const void *src, std::size_t bytes, Stream stream);

// While one lives, code outside the device runtime may read and write device memory: MPI
// does, when it is CUDA-aware (the mpi_cuda_aware backend holds one). Nothing on a real device;
// the emulated device (PLM_DEVICE_EMULATION, src/emu) stops faulting host accesses to its
// memory while any lives.
class DeviceMemoryOpenToMpi {
public:
    DeviceMemoryOpenToMpi();
    ~DeviceMemoryOpenToMpi();
    DeviceMemoryOpenToMpi(const DeviceMemoryOpenToMpi &) = delete;
    DeviceMemoryOpenToMpi &operator=(const DeviceMemoryOpenToMpi &) = delete;
};

namespace fault {
// Tests: the n-th copy from now on (copy_bytes, copy_on) on this thread throws PLM_ERR_CUDA,
// as a device fault would, without copying; 0 disarms. Runs device-fault paths on host memory.
void fail_copy_nth(int64_t n);
}  // namespace fault

}  // namespace plm
