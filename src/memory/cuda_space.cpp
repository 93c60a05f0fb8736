// The CUDA memory spaces: device memory and pinned host memory (staging buffers), and the
// helpers the other CUDA-built sources share. Tables exist only when a device is visible,
// so a CUDA build on a machine without a GPU behaves like a host-only one.
#include "memory/cuda.hpp"

#include <cstdio>

#include "core/device_fault.hpp"

namespace plm::cuda {

void check(cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess) return;
    (void)cudaGetLastError();  // clear a sticky non-fatal error so later calls report their own
    char text[512];
    std::snprintf(text, sizeof text, "%s: %s (%s)", what, cudaGetErrorString(rc), cudaGetErrorName(rc));
    device_fault(PLM_ERR_CUDA, text);  // after the agreement: poisons, the call carries on
}

void alloc_failed(cudaError_t rc, const char *what, std::size_t bytes)
{
    (void)cudaGetLastError();
    if (rc == cudaErrorMemoryAllocation)
        PLM_FAIL(PLM_ERR_OUT_OF_MEMORY, "%s of %zu bytes: out of memory (%s)", what, bytes, cudaGetErrorName(rc));
    PLM_FAIL(PLM_ERR_CUDA, "%s of %zu bytes: %s (%s)", what, bytes, cudaGetErrorString(rc), cudaGetErrorName(rc));
}

void activate(const Exec &e)
{
    if (e.device < 0) return;
    int cur = -1;
    check(cudaGetDevice(&cur), "cudaGetDevice");
    if (cur != e.device) check(cudaSetDevice(e.device), "cudaSetDevice");
}

}  // namespace plm::cuda

namespace plm {

namespace {

// Never a null pointer, even for 0 bytes: an empty local block still hands MPI a valid address.
std::size_t at_least_one(std::size_t bytes) { return bytes ? bytes : 1; }

void *device_alloc(std::size_t bytes)
{
    void *p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, at_least_one(bytes));
    if (rc != cudaSuccess) cuda::alloc_failed(rc, "cudaMalloc", bytes);
    return p;
}

void *pinned_alloc(std::size_t bytes)
{
    void *p = nullptr;
    const cudaError_t rc = cudaMallocHost(&p, at_least_one(bytes));
    if (rc != cudaSuccess) cuda::alloc_failed(rc, "cudaMallocHost", bytes);
    return p;
}

// Release paths run in destructors: errors are dropped (a failed free leaks, it never throws).
void device_release(void *p) { (void)cudaFree(p); }
void pinned_release(void *p) { (void)cudaFreeHost(p); }

// Asynchronous on the stream; copy_bytes() waits when host memory is involved.
void cuda_copy(void *dst, const void *src, std::size_t bytes, Stream stream)
{
    if (!bytes || dst == src) return;
    cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream.handle)),
                "cudaMemcpyAsync");
}

void cuda_sync(Stream stream)
{
    cuda::check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle)), "cudaStreamSynchronize");
}

const SpaceOps kDeviceOps = {sizeof(SpaceOps), "device", device_alloc, device_release, cuda_copy, cuda_sync};
const SpaceOps kPinnedOps = {sizeof(SpaceOps), "pinned host", pinned_alloc, pinned_release, cuda_copy, cuda_sync};

}  // namespace

int device_count()
{
    // Asked once: without a driver or a device the runtime answers with an error, which
    // means "no device", not a failure.
    static const int n = [] {
        int c = 0;
        if (cudaGetDeviceCount(&c) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        return c;
    }();
    return n;
}

void use_device(int device) { cuda::activate(Exec{Space::device, device, {}}); }

int device_of(const void *p)
{
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

void *create_stream(int device)
{
    use_device(device);
    cudaStream_t s = nullptr;
    cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
}

void destroy_stream(void *stream) noexcept
{
    // Work still queued on it completes first (cudaStreamDestroy does not cut it short).
    if (stream) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

const SpaceOps *cuda_space_ops(Space s)
{
    if (device_count() == 0) return nullptr;
    if (s == Space::device) return &kDeviceOps;
    if (s == Space::pinned) return &kPinnedOps;
    return nullptr;
}

}  // namespace plm
