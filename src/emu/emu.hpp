// The emulated device's runtime, shared by its parts (runtime.cpp: memory, streams, events,
// kernels; cublas.cpp, cufft.cpp, nccl.cpp: the libraries on top). Not part of pylopsmpi: a
// stand-in for libcudart, cuBLAS, cuFFT and NCCL in PLM_DEVICE_EMULATION builds.
//
// The model (docs/gpu.md, "The emulated device"):
// - Device memory is host memory in one reserved region, made inaccessible (PROT_NONE) to the
//   process except while the runtime itself runs device work, so host code that touches it
//   faults as on a GPU; allocations are poisoned (0xFF bytes: NaN) and end in a canary that
//   cudaFree checks. Pinned host memory is separate host allocations.
// - Streams are deferred: work is queued and runs only when something waits for it (stream or
//   device synchronisation, an event waited or queried, a copy to pageable host memory, a
//   synchronous copy on the legacy stream). Streams are independent unless an event or the
//   legacy default stream's implicit synchronisation orders them.
// - A fault injected into a kernel (plm_device_emu.h) poisons the context as a real one does:
//   the error is sticky, every later call returns it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace plm_emu {

// Held by every entry point of the emulated libraries.
std::recursive_mutex &big_lock();

// A failure while device work runs (an injected kernel fault, a library call on memory it may
// not touch): becomes the context's sticky error.
struct Fault {
    cudaError_t error;
    std::string message;
};

// One piece of queued device work. start() runs it, or starts it (asynchronous work: test()
// says when it is complete; it may be polled many times).
class Op {
public:
    virtual ~Op() = default;
    virtual void start() = 0;
    virtual bool test() { return true; }
};
std::unique_ptr<Op> fn_op(std::function<void()> f);

// Queues op on stream s (nullptr or cudaStreamLegacy: the legacy default stream).
cudaError_t enqueue(cudaStream_t s, std::unique_ptr<Op> op);
// Runs s's queued work (cudaStreamSynchronize).
cudaError_t sync_stream(cudaStream_t s);
// cudaErrorInvalidResourceHandle unless s is a live stream (or a default one).
cudaError_t check_stream(cudaStream_t s);
// The device s belongs to.
int stream_device(cudaStream_t s);

// What memory p is.
enum class Mem { device, pinned, host };
Mem kind_of(const void *p);
// [p, p + bytes) lies in one live device allocation (bytes 0: p is in one or its end).
bool device_range(const void *p, size_t bytes);
// Records a device fault found while work runs: prints it and throws Fault.
[[noreturn]] void fault(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// While an Access lives, the runtime's own code may touch device memory; hold() / release()
// do the same for work that outlives a call (MPI requests of the emulated NCCL).
class Access {
public:
    Access();
    ~Access();
    Access(const Access &) = delete;
    Access &operator=(const Access &) = delete;
};
void hold_access();
void release_access();

// The sticky error of the context (cudaSuccess while healthy), and the calling thread's device.
cudaError_t sticky_error();
int current_device();
int device_count();

// Fault injection counters (plm_device_emu.h): true when this event is the armed one.
bool take_kernel_fault();
bool take_nccl_fault();

}  // namespace plm_emu
