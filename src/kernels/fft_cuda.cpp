// Local FFT plans on CUDA devices through cuFFT (see fft.hpp). A multi-axis transform is a
// sequence of batched 1-D passes, one per axis (separable: the same transform FFTW's multi-
// axis plan computes), each a cuFFT plan over the axis viewed as [outer, n, inner]:
//   inner == 1: one execute, outer transforms of contiguous rows;
//   outer == 1: one execute, inner transforms of stride inner;
//   otherwise: one execute per outer slice (inner transforms each), or for c2c one per inner
//   column (outer transforms each) when that is fewer.
// A c2r pass first zeroes the imaginary parts of its DC bin (and Nyquist bin, n even): FFTW and
// numpy's irfft never read them, cuFFT's algorithms may (the adjoint of the real FFT and MDC
// hand c2r spectra where they are not zero).
// Plans are made with cuFFT's auto-allocation off: execute() takes the caller's work area
// (work_bytes()), so one plan serves concurrent applies that each have a Work. Every cuFFT
// status is turned into a plm::Error (PLM_ERR_OUT_OF_MEMORY for CUFFT_ALLOC_FAILED,
// PLM_ERR_CUDA otherwise); nothing aborts.
#include <cufft.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "core/device_fault.hpp"
#include "core/error.hpp"
#include "kernels/device.hpp"
#include "kernels/fft_impl.hpp"
#include "memory/cuda.hpp"

namespace plm::kernels {

namespace {

const char *cufft_name(cufftResult rc)
{
    switch (rc) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT status";
    }
}

void cufft_check(cufftResult rc, const char *what)
{
    if (rc == CUFFT_SUCCESS) return;
    if (rc == CUFFT_ALLOC_FAILED)
        PLM_FAIL(PLM_ERR_OUT_OF_MEMORY, "%s: cuFFT could not allocate device memory (CUFFT_ALLOC_FAILED)", what);
    char text[512];
    std::snprintf(text, sizeof text, "%s: %s (cuFFT status %d)", what, cufft_name(rc), static_cast<int>(rc));
    device_fault(PLM_ERR_CUDA, text);  // thrown before the call's agreement, recorded after it
}

// Which buffer a pass reads or writes: the execute's input or its output.
enum class Side { in, out };

struct Pass {
    cufftHandle plan = 0;
    cufftType type = CUFFT_C2C;
    int direction = CUFFT_FORWARD;  // c2c passes
    Side src = Side::in, dst = Side::out;
    int64_t count = 1;              // executes
    int64_t src_step = 0, dst_step = 0;  // between executes, in elements of the src / dst type
    size_t src_elem = 0, dst_elem = 0;   // bytes
    size_t work = 0;                // cuFFT's work area
    // c2r: the [outer, nc, inner] input's bins whose imaginary parts are zeroed first
    int64_t outer = 0, nc = 0, inner = 0, nyquist = -1;
};

int64_t prod(const std::vector<int64_t> &s, size_t from, size_t to)
{
    int64_t n = 1;
    for (size_t a = from; a < to; ++a) n *= s[a];
    return n;
}

class DeviceFft final : public FftPlan::Impl {
public:
    DeviceFft(DType dt, FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes, int device,
              const FftOptions &o)
        : il_(o.interleaved_real)
    {
        cuda::activate(Exec{Space::device, device, {}});  // a cuFFT plan belongs to the current device
        if (device < 0) cuda::check(cudaGetDevice(&device), "cudaGetDevice");
        device_ = device;
        dbl_ = dt == DType::f64 || dt == DType::c128;
        const bool real = kind == FftKind::r2c || kind == FftKind::c2r;
        std::vector<int64_t> cshape = shape;  // the complex side
        if (real) cshape[static_cast<size_t>(axes.back())] = shape[static_cast<size_t>(axes.back())] / 2 + 1;
        if (prod(shape, 0, shape.size()) == 0) return;  // nothing to transform: no passes
        const cufftType c2c = dbl_ ? CUFFT_Z2Z : CUFFT_C2C;
        try {
            if (o.transposed) {
                add_transposed(dbl_ ? CUFFT_Z2Z : CUFFT_C2C, kind, shape[0], shape[1]);
                return;
            }
            switch (kind) {
            case FftKind::c2c_forward:
            case FftKind::c2c_backward: {
                const int dir = kind == FftKind::c2c_forward ? CUFFT_FORWARD : CUFFT_INVERSE;
                for (size_t i = 0; i < axes.size(); ++i)  // the first pass reads in, the others work in out
                    add(c2c, dir, i == 0 ? Side::in : Side::out, Side::out, cshape, cshape, axes[i]);
                break;
            }
            case FftKind::r2c:
                add(dbl_ ? CUFFT_D2Z : CUFFT_R2C, CUFFT_FORWARD, Side::in, Side::out, shape, cshape, axes.back());
                for (size_t i = 0; i + 1 < axes.size(); ++i)
                    add(c2c, CUFFT_FORWARD, Side::out, Side::out, cshape, cshape, axes[i]);
                break;
            case FftKind::c2r:  // the c2c passes overwrite the input (fft.hpp: c2r's input is scratch)
                for (size_t i = 0; i + 1 < axes.size(); ++i)
                    add(c2c, CUFFT_INVERSE, Side::in, Side::in, cshape, cshape, axes[i]);
                add(dbl_ ? CUFFT_Z2D : CUFFT_C2R, CUFFT_INVERSE, Side::in, Side::out, cshape, shape, axes.back());
                break;
            }
        } catch (...) {
            release();
            throw;
        }
    }

    ~DeviceFft() override { release(); }

    size_t work_bytes() const override
    {
        size_t w = 0;
        for (const Pass &p : passes_) w = std::max(w, p.work);
        return w;
    }

    void execute(const Exec &e, const void *in, void *out, void *work) const override
    {
        if (passes_.empty()) return;
        PLM_REQUIRE(e.device < 0 || e.device == device_, PLM_ERR_INTERNAL,
                    "a device FFT plan of device %d run on device %d", device_, e.device);
        PLM_REQUIRE(work || work_bytes() == 0, PLM_ERR_INTERNAL, "a device FFT run without its work area");
        const size_t pair = 2 * (dbl_ ? sizeof(double) : sizeof(float));
        PLM_REQUIRE(reinterpret_cast<uintptr_t>(in) % pair == 0 && reinterpret_cast<uintptr_t>(out) % pair == 0,
                    PLM_ERR_INVALID_ARG, "device FFT: buffers %p and %p are not aligned to %zu bytes (cuFFT data)", in,
                    out, pair);
        cuda::activate(Exec{Space::device, device_, e.stream});
        char *bufs[2] = {static_cast<char *>(const_cast<void *>(in)), static_cast<char *>(out)};
        // The plans' stream and work area are per plan state: set and used under one lock, so
        // threads sharing the plan enqueue one at a time (execution itself stays asynchronous).
        std::lock_guard<std::mutex> g(lock_);
        for (const Pass &p : passes_) {
            cufft_check(cufftSetStream(p.plan, cuda::stream_of(e)), "cufftSetStream");
            if (p.work) cufft_check(cufftSetWorkArea(p.plan, work), "cufftSetWorkArea");
            char *src = bufs[p.src == Side::in ? 0 : 1], *dst = bufs[p.dst == Side::in ? 0 : 1];
            if (p.type == CUFFT_C2R || p.type == CUFFT_Z2D) {  // c2r's input is scratch (fft.hpp)
                const DType cdt = dbl_ ? DType::c128 : DType::c64;
                const Exec de{Space::device, device_, e.stream};
                device::zero_imag(de, cdt, p.outer, p.nc, p.inner, 0, src);
                if (p.nyquist > 0) device::zero_imag(de, cdt, p.outer, p.nc, p.inner, p.nyquist, src);
            }
            for (int64_t j = 0; j < p.count; ++j)
                run(p, src + static_cast<size_t>(j * p.src_step) * p.src_elem,
                    dst + static_cast<size_t>(j * p.dst_step) * p.dst_elem);
        }
    }

private:
    // A pass along axis a from a block of shape from (src side) to one of shape to (dst side):
    // the two differ at most along a (the real and complex lengths of r2c / c2r). An
    // interleaved real side (FftOptions) has every stride and step of its reals doubled.
    void add(cufftType type, int dir, Side src, Side dst, const std::vector<int64_t> &from,
             const std::vector<int64_t> &to, int axis)
    {
        const size_t a = static_cast<size_t>(axis);
        const int64_t outer = prod(from, 0, a), inner = prod(from, a + 1, from.size());
        long long n_in = from[a], n_out = to[a];
        long long n = type == CUFFT_C2R || type == CUFFT_Z2D ? n_out : n_in;  // the logical (real) length
        const bool complex_in = type != CUFFT_R2C && type != CUFFT_D2Z;
        const bool complex_out = type != CUFFT_C2R && type != CUFFT_Z2D;
        const size_t real_size = dbl_ ? sizeof(double) : sizeof(float);
        Pass p;
        p.type = type;
        p.direction = dir;
        p.src = src;
        p.dst = dst;
        p.src_elem = complex_in ? 2 * real_size : real_size;
        p.dst_elem = complex_out ? 2 * real_size : real_size;
        if (!complex_out) {
            p.outer = outer;
            p.nc = n_in;
            p.inner = inner;
            p.nyquist = n % 2 == 0 ? n / 2 : -1;
        }
        long long istride = 1, ostride = 1, idist = n_in, odist = n_out, batch = outer;
        if (inner > 1) {
            istride = ostride = inner;
            // one execute per outer slice (real passes always: steps of whole rows keep real
            // data aligned, see device_fft_layout_ok), or per inner column when fewer (c2c)
            const bool by_column = (type == CUFFT_C2C || type == CUFFT_Z2Z) && inner < outer;
            if (outer <= 1 || !by_column) {
                idist = odist = 1;
                batch = inner;
                p.count = outer;
                p.src_step = n_in * inner;
                p.dst_step = n_out * inner;
            } else {
                idist = n_in * inner;
                odist = n_out * inner;
                batch = outer;
                p.count = inner;
                p.src_step = p.dst_step = 1;
            }
        }
        if (il_ && !complex_in) {  // the reals are every other one of a complex array
            istride *= 2;
            idist *= 2;
            p.src_step *= 2;
        }
        if (il_ && !complex_out) {
            ostride *= 2;
            odist *= 2;
            p.dst_step *= 2;
        }
        cufft_check(cufftCreate(&p.plan), "cufftCreate");
        passes_.push_back(p);  // released with the others if making it fails
        Pass &made = passes_.back();
        cufft_check(cufftSetAutoAllocation(made.plan, 0), "cufftSetAutoAllocation");
        long long inembed[1] = {n_in}, onembed[1] = {n_out};
        cufft_check(cufftMakePlanMany64(made.plan, 1, &n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                                        &made.work),
                    "cufftMakePlanMany64");
    }

    // c2c of [m][n] along axis 1 with the spectrum [n][m] (FftOptions::transposed): one pass.
    void add_transposed(cufftType type, FftKind kind, int64_t m, int64_t n)
    {
        const bool fwd = kind == FftKind::c2c_forward;
        Pass p;
        p.type = type;
        p.direction = fwd ? CUFFT_FORWARD : CUFFT_INVERSE;
        p.src_elem = p.dst_elem = 2 * (dbl_ ? sizeof(double) : sizeof(float));
        long long len = n, istride = fwd ? 1 : m, idist = fwd ? n : 1, ostride = fwd ? m : 1, odist = fwd ? 1 : n;
        cufft_check(cufftCreate(&p.plan), "cufftCreate");
        passes_.push_back(p);
        Pass &made = passes_.back();
        cufft_check(cufftSetAutoAllocation(made.plan, 0), "cufftSetAutoAllocation");
        long long embed[1] = {len};
        cufft_check(cufftMakePlanMany64(made.plan, 1, &len, embed, istride, idist, embed, ostride, odist, type, m,
                                        &made.work),
                    "cufftMakePlanMany64");
    }

    static void run(const Pass &p, char *src, char *dst)
    {
        switch (p.type) {
        case CUFFT_C2C:
            return cufft_check(cufftExecC2C(p.plan, reinterpret_cast<cufftComplex *>(src),
                                            reinterpret_cast<cufftComplex *>(dst), p.direction),
                               "cufftExecC2C");
        case CUFFT_Z2Z:
            return cufft_check(cufftExecZ2Z(p.plan, reinterpret_cast<cufftDoubleComplex *>(src),
                                            reinterpret_cast<cufftDoubleComplex *>(dst), p.direction),
                               "cufftExecZ2Z");
        case CUFFT_R2C:
            return cufft_check(cufftExecR2C(p.plan, reinterpret_cast<cufftReal *>(src),
                                            reinterpret_cast<cufftComplex *>(dst)),
                               "cufftExecR2C");
        case CUFFT_D2Z:
            return cufft_check(cufftExecD2Z(p.plan, reinterpret_cast<cufftDoubleReal *>(src),
                                            reinterpret_cast<cufftDoubleComplex *>(dst)),
                               "cufftExecD2Z");
        case CUFFT_C2R:
            return cufft_check(cufftExecC2R(p.plan, reinterpret_cast<cufftComplex *>(src),
                                            reinterpret_cast<cufftReal *>(dst)),
                               "cufftExecC2R");
        case CUFFT_Z2D:
            return cufft_check(cufftExecZ2D(p.plan, reinterpret_cast<cufftDoubleComplex *>(src),
                                            reinterpret_cast<cufftDoubleReal *>(dst)),
                               "cufftExecZ2D");
        default: break;
        }
        PLM_FAIL(PLM_ERR_INTERNAL, "cuFFT pass of type %d", static_cast<int>(p.type));
    }

    void release() noexcept
    {
        if (passes_.empty()) return;
        try {
            cuda::activate(Exec{Space::device, device_, {}});  // the plans belong to device_
        } catch (...) {
        }
        for (const Pass &p : passes_) (void)cufftDestroy(p.plan);
        passes_.clear();
    }

    int device_ = -1;
    bool dbl_ = true;
    bool il_ = false;  // the real side interleaved in a complex array
    std::vector<Pass> passes_;
    mutable std::mutex lock_;
};

}  // namespace

std::unique_ptr<FftPlan::Impl> make_device_fft(DType dt, FftKind kind, const std::vector<int64_t> &shape,
                                               const std::vector<int> &axes, int device, const FftOptions &options)
{
    // cuFFT passes are out of place from in to out (a c2c plan in place runs each pass in out)
    return std::make_unique<DeviceFft>(dt, kind, shape, axes, device, options);
}

}  // namespace plm::kernels
