// The emulated device itself (PLM_DEVICE_EMULATION builds; one process, no MPI): what it must
// catch for the device suites to mean anything. Streams are deferred (a read before the
// producer's stream is synchronised sees stale data; events and the legacy stream's implicit
// order are honoured), CUDA's copy rules hold (a synchronous copy from pageable memory to the
// device lands later), host code touching device memory faults, writes past an allocation are
// found when it is freed, kernels run per thread with __syncthreads, bad launches and library
// calls fail as on a GPU (cuBLAS argument checks and out-of-bounds operands, cuFFT without a work
// area), and an injected kernel fault is sticky until cleared.
#include <cublas_v2.h>
#include <cufft.h>
#include <plm_device_emu.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/launch.hpp"

using namespace plm;

namespace {

int g_failures = 0;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++g_failures;                                                                 \
        }                                                                                 \
    } while (0)

constexpr int kN = 1000;

double *device_doubles(int n)
{
    void *p = nullptr;
    CHECK(cudaMalloc(&p, sizeof(double) * n) == cudaSuccess);
    return static_cast<double *>(p);
}

std::vector<double> to_host(const double *d, int n)
{
    std::vector<double> h(static_cast<size_t>(n));
    CHECK(cudaMemcpy(h.data(), d, sizeof(double) * n, cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
}

bool all_equal(const std::vector<double> &h, double v)
{
    for (double x : h)
        if (x != v) return false;
    return true;
}

// A kernel on a non-blocking stream runs only when that stream is synchronised: the legacy
// stream's synchronous copy does not wait for it, so it reads the poisoned (NaN) allocation.
void deferral()
{
    cudaStream_t s = nullptr;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    double *d = device_doubles(kN);
    const double v = 2.5;
    const long long ops = plm_emu_count("ops");
    kernels::fill(Exec{Space::device, 0, {s}}, DType::f64, kN, &v, d);
    CHECK(plm_emu_count("ops") == ops);  // queued, not run
    const std::vector<double> early = to_host(d, kN);
    CHECK(std::isnan(early[0]) && std::isnan(early[kN - 1]));
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK(all_equal(to_host(d, kN), v));
    // With deferral off the same read sees the value: what deferral adds.
    plm_emu_set_eager(1);
    const double w = -1;
    kernels::fill(Exec{Space::device, 0, {s}}, DType::f64, kN, &w, d);
    CHECK(all_equal(to_host(d, kN), w));
    plm_emu_set_eager(0);
    cudaFree(d);
    cudaStreamDestroy(s);
}

// A synchronous copy from pageable memory lands when the legacy stream runs ("the DMA to final
// destination may not have completed"): work on a non-blocking stream does not wait for it, work
// on a blocking stream does (the legacy stream's implicit order), and so does an event.
void copy_rules()
{
    std::vector<double> h(kN, 7.0);
    cudaStream_t nb = nullptr, bl = nullptr;
    CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaStreamCreate(&bl) == cudaSuccess);
    double *src = device_doubles(kN), *dst = device_doubles(kN);
    CHECK(cudaMemcpy(src, h.data(), sizeof(double) * kN, cudaMemcpyHostToDevice) == cudaSuccess);
    kernels::copy(Exec{Space::device, 0, {nb}}, DType::f64, kN, src, dst);
    CHECK(cudaStreamSynchronize(nb) == cudaSuccess);
    CHECK(std::isnan(to_host(dst, kN)[0]));  // read before the upload landed
    CHECK(all_equal(to_host(src, kN), 7.0));  // the legacy stream has run it by now

    double *again = device_doubles(kN);
    CHECK(cudaMemcpy(src, h.data(), sizeof(double) * kN, cudaMemcpyHostToDevice) == cudaSuccess);
    kernels::copy(Exec{Space::device, 0, {bl}}, DType::f64, kN, src, again);
    CHECK(cudaStreamSynchronize(bl) == cudaSuccess);
    CHECK(all_equal(to_host(again, kN), 7.0));  // a blocking stream waits for the legacy one

    // An event orders two non-blocking streams.
    cudaStream_t nb2 = nullptr;
    cudaEvent_t ev = nullptr;
    CHECK(cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess);
    const double v = 3.0;
    kernels::fill(Exec{Space::device, 0, {nb}}, DType::f64, kN, &v, src);
    CHECK(cudaEventRecord(ev, nb) == cudaSuccess);
    CHECK(cudaStreamWaitEvent(nb2, ev, 0) == cudaSuccess);
    kernels::copy(Exec{Space::device, 0, {nb2}}, DType::f64, kN, src, dst);
    CHECK(cudaStreamSynchronize(nb2) == cudaSuccess);
    CHECK(all_equal(to_host(dst, kN), 3.0));

    // Explicit kinds must match the pointers; copies must stay inside their allocations.
    CHECK(cudaMemcpy(dst, src, 8, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(dst + kN - 1, h.data(), 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    (void)cudaGetLastError();
    cudaEventDestroy(ev);
    cudaFree(src);
    cudaFree(dst);
    cudaFree(again);
    cudaStreamDestroy(nb);
    cudaStreamDestroy(nb2);
    cudaStreamDestroy(bl);
}

// Runs f in a child process; the signal that ended it (0: it exited).
template <typename F> int in_child(F &&f)
{
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        const rlimit none{0, 0};
        setrlimit(RLIMIT_CORE, &none);
        f();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

// Host code reading device memory faults, as on a GPU; a kernel writing past its allocation is
// found when the allocation is freed.
void memory_faults()
{
    double *d = device_doubles(kN);
    CHECK(cudaMemset(d, 0, sizeof(double) * kN) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    const int touched = in_child([&] {
        volatile double x = d[3];
        (void)x;
    });
    CHECK(touched == SIGSEGV);
    const int overran = in_child([&] {
        const double v = 1.0;
        kernels::fill(Exec{Space::device, 0, {}}, DType::f64, kN + 3, &v, d);  // 3 past the end
        cudaDeviceSynchronize();
        cudaFree(d);
    });
    CHECK(overran == SIGABRT);
    cudaFree(d);
}

// A block reduction through __shared__ memory and __syncthreads, run as fibers.
__global__ void block_sum(const double *x, double *out)
{
    __shared__ double s[256];
    const unsigned t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned w = 128; w > 0; w /= 2) {
        if (t < w) s[t] += s[t + w];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

// Only some threads of a block reach __syncthreads: undefined on a GPU, a fault here.
__global__ void divergent(double *out)
{
    if (threadIdx.x == 5) __syncthreads();
    out[threadIdx.x] = 1;
}

void kernels_and_launches()
{
    std::vector<double> h(4 * 256);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<double>(i % 17);
    double *x = device_doubles(4 * 256), *out = device_doubles(4);
    CHECK(cudaMemcpy(x, h.data(), sizeof(double) * h.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    PLM_LAUNCH(4, 256, 0, nullptr, block_sum)(x, out);
    CHECK(cudaGetLastError() == cudaSuccess);
    const std::vector<double> got = to_host(out, 4);
    for (int b = 0; b < 4; ++b) {
        double want = 0;
        for (int i = 0; i < 256; ++i) want += h[static_cast<size_t>(b * 256 + i)];
        CHECK(got[static_cast<size_t>(b)] == want);
    }
    PLM_LAUNCH(1, 2048, 0, nullptr, block_sum)(x, out);  // more threads than a block holds
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    double *wide = device_doubles(64);
    PLM_LAUNCH(1, 64, 0, nullptr, divergent)(wide);
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    CHECK(cudaMalloc(reinterpret_cast<void **>(&x), 8) == cudaErrorLaunchFailure);  // sticky
    plm_emu_clear_errors();
    // An injected fault: the kernel does not run, the context fails until cleared.
    x = device_doubles(4 * 256);
    plm_emu_fail_kernel(1);
    const double v = 1;
    kernels::fill(Exec{Space::device, 0, {}}, DType::f64, 256, &v, x);
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    CHECK(cudaStreamSynchronize(nullptr) == cudaErrorLaunchFailure);
    plm_emu_clear_errors();
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(x);
    cudaFree(out);
    cudaFree(wide);
}

// cuBLAS checks its arguments as cuBLAS does; an operand that runs past its allocation is a
// device fault (sticky illegal address), not a quiet wrong answer.
void cublas_rules()
{
    cublasHandle_t h = nullptr;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    double *a = device_doubles(6), *x = device_doubles(3), *y = device_doubles(2);
    const double one = 1, zero = 0;
    CHECK(cublasDgemv(h, CUBLAS_OP_N, 2, 3, &one, a, 1, x, 1, &zero, y, 1) == CUBLAS_STATUS_INVALID_VALUE);  // lda < m
    CHECK(cublasDgemv(h, CUBLAS_OP_N, 2, 3, &one, a, 2, x, 1, &zero, y, 1) == CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(cublasDgemv(h, CUBLAS_OP_N, 2, 3, &one, a, 3, x, 1, &zero, y, 1) == CUBLAS_STATUS_SUCCESS);  // A spans 8 of 6
    CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    plm_emu_clear_errors();
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(x);
    cudaFree(y);
}

// cuFFT without auto-allocation needs its work area; c2r overwrites its input.
void cufft_rules()
{
    cufftHandle p = 0;
    CHECK(cufftCreate(&p) == CUFFT_SUCCESS);
    CHECK(cufftSetAutoAllocation(p, 0) == CUFFT_SUCCESS);
    long long n = 16, embed_in = 9, embed_out = 16;
    size_t work = 0;
    CHECK(cufftMakePlanMany64(p, 1, &n, &embed_in, 1, 9, &embed_out, 1, 16, CUFFT_Z2D, 1, &work) == CUFFT_SUCCESS);
    CHECK(work > 0);
    void *in = nullptr, *out = nullptr, *w = nullptr;
    CHECK(cudaMalloc(&in, 9 * 16) == cudaSuccess);
    CHECK(cudaMalloc(&out, 16 * 8) == cudaSuccess);
    CHECK(cudaMemset(in, 0, 9 * 16) == cudaSuccess);
    auto *zin = static_cast<cufftDoubleComplex *>(in);
    auto *dout = static_cast<cufftDoubleReal *>(out);
    CHECK(cufftExecZ2D(p, zin, dout) == CUFFT_NO_WORKSPACE);
    CHECK(cudaMalloc(&w, work) == cudaSuccess);
    CHECK(cufftSetWorkArea(p, w) == CUFFT_SUCCESS);
    const double dc[2] = {16, 0};
    CHECK(cudaMemcpy(in, dc, sizeof dc, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(cufftExecZ2D(p, zin, dout) == CUFFT_SUCCESS);
    const std::vector<double> r = to_host(static_cast<double *>(out), 16);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(all_equal(r, 16.0));  // the inverse of a DC bin of 16: 16 everywhere (unnormalised)
    double back[2];
    CHECK(cudaMemcpy(back, in, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(back[0] != 16.0);  // the input was overwritten
    cufftDestroy(p);
    cudaFree(in);
    cudaFree(out);
    cudaFree(w);
}

}  // namespace

int main()
{
    deferral();
    copy_rules();
    memory_faults();
    kernels_and_launches();
    cublas_rules();
    cufft_rules();
    std::printf("test_emu: %s (%d failed checks)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
}
