// The emulated cuFFT: plans of cufftMakePlanMany64's advanced layout (rank, n, embeds, strides,
// distances, batch) executed with FFTW's plans of the same layout (fftw_plan_many_dft and its
// real forms), queued on the plan's stream. cuFFT's rules that a caller can get wrong hold:
// - with auto-allocation off, a work area of the reported size must be set before executing
//   (CUFFT_NO_WORKSPACE otherwise), and it is scribbled on by every execute, so two executes
//   sharing one work area at the same time corrupt each other as on a GPU;
// - c2r transforms overwrite their input (scribbled after each execute);
// - the data must be device memory, and every element the layout addresses must lie in the
//   buffer: otherwise the execute is a device fault (sticky cudaErrorIllegalAddress);
// - a NULL inembed / onembed means the basic (contiguous) layout: strides and distances are
//   then ignored, as cuFFT ignores them.
#include <cufft.h>
#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "emu.hpp"

using namespace plm_emu;

namespace {

struct Plan {
    bool made = false;
    bool auto_alloc = true;
    cufftType type = CUFFT_C2C;
    std::vector<int> n, inembed, onembed;  // embeds: the basic layout's when NULL was given
    long long istride = 1, idist = 0, ostride = 1, odist = 0, batch = 1;
    size_t work_size = 0;
    void *work = nullptr, *own_work = nullptr;
    cudaStream_t stream = nullptr;
};

std::mutex g_plans_lock;
std::map<cufftHandle, std::unique_ptr<Plan>> g_plans;
cufftHandle g_next = 1;
std::mutex g_fftw_lock;  // FFTW's planner is not thread-safe

Plan *find(cufftHandle h)
{
    std::lock_guard<std::mutex> g(g_plans_lock);
    auto it = g_plans.find(h);
    return it == g_plans.end() ? nullptr : it->second.get();
}

bool complex_in(cufftType t) { return t != CUFFT_R2C && t != CUFFT_D2Z; }
bool complex_out(cufftType t) { return t != CUFFT_C2R && t != CUFFT_Z2D; }
bool dbl(cufftType t) { return t == CUFFT_Z2Z || t == CUFFT_D2Z || t == CUFFT_Z2D; }
size_t real_size(cufftType t) { return dbl(t) ? sizeof(double) : sizeof(float); }

// Elements one side's layout addresses: the last element's index + 1.
long long extent(const std::vector<int> &len, const std::vector<int> &embed, long long stride, long long dist,
                 long long batch)
{
    long long last = 0, inner = 1;
    for (size_t d = len.size(); d-- > 0;) {
        last += (len[d] - 1) * inner;
        inner *= d == 0 ? 1 : embed[d];
    }
    return (batch - 1) * dist + last * stride + 1;
}

// The logical lengths of each side: the complex side of a real transform is n/2+1 long last.
std::vector<int> side_lengths(const Plan &p, bool input)
{
    std::vector<int> len = p.n;
    const bool half = input ? (p.type == CUFFT_C2R || p.type == CUFFT_Z2D) : (p.type == CUFFT_R2C || p.type == CUFFT_D2Z);
    if (half) len.back() = len.back() / 2 + 1;
    return len;
}

void scribble(void *p, size_t bytes) { std::memset(p, 0xA5, bytes); }

// One execute: FFTW plans of the layout (made and destroyed under the planner lock), run now.
void run(const Plan &p, void *in, void *out, int sign)
{
    const int rank = static_cast<int>(p.n.size());
    const int howmany = static_cast<int>(p.batch);
    const int is = static_cast<int>(p.istride), id = static_cast<int>(p.idist);
    const int os = static_cast<int>(p.ostride), od = static_cast<int>(p.odist);
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    auto go = [&](auto plan, auto destroy, auto execute) {
        if (!plan) fault(cudaErrorLaunchFailure, "cuFFT execute: FFTW could not plan the layout");
        execute(plan);
        std::lock_guard<std::mutex> g(g_fftw_lock);
        destroy(plan);
    };
    std::unique_lock<std::mutex> g(g_fftw_lock);
    switch (p.type) {
    case CUFFT_Z2Z: {
        fftw_plan f = fftw_plan_many_dft(rank, p.n.data(), howmany, static_cast<fftw_complex *>(in), p.inembed.data(),
                                         is, id, static_cast<fftw_complex *>(out), p.onembed.data(), os, od, sign, flags);
        g.unlock();
        return go(f, fftw_destroy_plan, fftw_execute);
    }
    case CUFFT_C2C: {
        fftwf_plan f = fftwf_plan_many_dft(rank, p.n.data(), howmany, static_cast<fftwf_complex *>(in),
                                           p.inembed.data(), is, id, static_cast<fftwf_complex *>(out),
                                           p.onembed.data(), os, od, sign, flags);
        g.unlock();
        return go(f, fftwf_destroy_plan, fftwf_execute);
    }
    case CUFFT_D2Z: {
        fftw_plan f = fftw_plan_many_dft_r2c(rank, p.n.data(), howmany, static_cast<double *>(in), p.inembed.data(), is,
                                             id, static_cast<fftw_complex *>(out), p.onembed.data(), os, od, flags);
        g.unlock();
        return go(f, fftw_destroy_plan, fftw_execute);
    }
    case CUFFT_R2C: {
        fftwf_plan f = fftwf_plan_many_dft_r2c(rank, p.n.data(), howmany, static_cast<float *>(in), p.inembed.data(),
                                               is, id, static_cast<fftwf_complex *>(out), p.onembed.data(), os, od,
                                               flags);
        g.unlock();
        return go(f, fftwf_destroy_plan, fftwf_execute);
    }
    case CUFFT_Z2D: {
        fftw_plan f = fftw_plan_many_dft_c2r(rank, p.n.data(), howmany, static_cast<fftw_complex *>(in),
                                             p.inembed.data(), is, id, static_cast<double *>(out), p.onembed.data(), os,
                                             od, flags);
        g.unlock();
        return go(f, fftw_destroy_plan, fftw_execute);
    }
    case CUFFT_C2R: {
        fftwf_plan f = fftwf_plan_many_dft_c2r(rank, p.n.data(), howmany, static_cast<fftwf_complex *>(in),
                                               p.inembed.data(), is, id, static_cast<float *>(out), p.onembed.data(),
                                               os, od, flags);
        g.unlock();
        return go(f, fftwf_destroy_plan, fftwf_execute);
    }
    }
}

cufftResult exec(cufftHandle h, cufftType type, void *in, void *out, int sign)
{
    Plan *p = find(h);
    if (!p || !p->made) return CUFFT_INVALID_PLAN;
    if (p->type != type) return CUFFT_INVALID_TYPE;
    if ((type == CUFFT_C2C || type == CUFFT_Z2Z) && sign != CUFFT_FORWARD && sign != CUFFT_INVERSE)
        return CUFFT_INVALID_VALUE;
    if (!in || !out) return CUFFT_INVALID_VALUE;
    if (p->work_size && !p->work) return CUFFT_NO_WORKSPACE;
    const size_t in_elem = complex_in(type) ? 2 * real_size(type) : real_size(type);
    const size_t out_elem = complex_out(type) ? 2 * real_size(type) : real_size(type);
    const size_t in_bytes =
        static_cast<size_t>(extent(side_lengths(*p, true), p->inembed, p->istride, p->idist, p->batch)) * in_elem;
    const size_t out_bytes =
        static_cast<size_t>(extent(side_lengths(*p, false), p->onembed, p->ostride, p->odist, p->batch)) * out_elem;
    const bool ok = device_range(in, in_bytes) && device_range(out, out_bytes) &&
                    (!p->work_size || device_range(p->work, p->work_size));
    const Plan plan = *p;  // the execute uses the plan as it is now
    const bool c2r = !complex_out(type);
    const cudaError_t e = enqueue(plan.stream, fn_op([=] {
        if (!ok)
            fault(cudaErrorIllegalAddress, "a cuFFT execute addresses memory outside its device buffers (check n, "
                                           "embeds, strides, distances and batch)");
        if (plan.work_size) scribble(plan.work, plan.work_size);
        run(plan, in, out, sign);
        if (c2r && in != out) scribble(in, in_bytes);  // cuFFT's c2r may overwrite its input
    }));
    return e == cudaSuccess ? CUFFT_SUCCESS : CUFFT_EXEC_FAILED;
}

}  // namespace

extern "C" {

cufftResult cufftCreate(cufftHandle *plan)
{
    if (!plan) return CUFFT_INVALID_VALUE;
    if (device_count() == 0) return CUFFT_INVALID_DEVICE;
    std::lock_guard<std::mutex> g(g_plans_lock);
    *plan = g_next++;
    g_plans[*plan] = std::make_unique<Plan>();
    return CUFFT_SUCCESS;
}

cufftResult cufftDestroy(cufftHandle plan)
{
    std::unique_ptr<Plan> p;
    {
        std::lock_guard<std::mutex> g(g_plans_lock);
        auto it = g_plans.find(plan);
        if (it == g_plans.end()) return CUFFT_INVALID_PLAN;
        p = std::move(it->second);
        g_plans.erase(it);
    }
    if (p->own_work) cudaFree(p->own_work);
    return CUFFT_SUCCESS;
}

cufftResult cufftSetAutoAllocation(cufftHandle plan, int auto_allocate)
{
    Plan *p = find(plan);
    if (!p) return CUFFT_INVALID_PLAN;
    if (p->made) return CUFFT_INVALID_VALUE;  // before the plan is made
    p->auto_alloc = auto_allocate != 0;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetWorkArea(cufftHandle plan, void *work)
{
    Plan *p = find(plan);
    if (!p) return CUFFT_INVALID_PLAN;
    if (work && kind_of(work) != Mem::device) return CUFFT_INVALID_VALUE;
    p->work = work;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream)
{
    Plan *p = find(plan);
    if (!p) return CUFFT_INVALID_PLAN;
    if (check_stream(stream) != cudaSuccess) return CUFFT_INVALID_VALUE;
    p->stream = stream;
    return CUFFT_SUCCESS;
}

cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long *n, long long *inembed, long long istride,
                                long long idist, long long *onembed, long long ostride, long long odist, cufftType type,
                                long long batch, size_t *work_size)
{
    Plan *p = find(plan);
    if (!p) return CUFFT_INVALID_PLAN;
    if (p->made) return CUFFT_INVALID_PLAN;
    if (rank < 1 || rank > 3 || !n || batch < 1) return CUFFT_INVALID_SIZE;
    switch (type) {
    case CUFFT_R2C: case CUFFT_C2R: case CUFFT_C2C: case CUFFT_D2Z: case CUFFT_Z2D: case CUFFT_Z2Z: break;
    default: return CUFFT_INVALID_TYPE;
    }
    const long long kMax = 0x7fffffff;  // FFTW's int layout
    p->type = type;
    p->n.assign(static_cast<size_t>(rank), 0);
    for (int d = 0; d < rank; ++d) {
        if (n[d] < 1 || n[d] > kMax) return CUFFT_INVALID_SIZE;
        p->n[static_cast<size_t>(d)] = static_cast<int>(n[d]);
    }
    const std::vector<int> in_len = side_lengths(*p, true), out_len = side_lengths(*p, false);
    auto embed = [&](long long *e, const std::vector<int> &len, std::vector<int> &into) {
        into = len;
        if (!e) return true;
        for (int d = 1; d < rank; ++d) {  // embed[0] is not used (FFTW and cuFFT alike)
            if (e[d] < len[static_cast<size_t>(d)] || e[d] > kMax) return false;
            into[static_cast<size_t>(d)] = static_cast<int>(e[d]);
        }
        return true;
    };
    if (!embed(inembed, in_len, p->inembed) || !embed(onembed, out_len, p->onembed)) return CUFFT_INVALID_VALUE;
    auto count = [](const std::vector<int> &len) {
        long long c = 1;
        for (int v : len) c *= v;
        return c;
    };
    // NULL embeds: the basic layout, whatever strides and distances say.
    p->istride = inembed ? istride : 1;
    p->idist = inembed ? idist : count(in_len);
    p->ostride = onembed ? ostride : 1;
    p->odist = onembed ? odist : count(out_len);
    p->batch = batch;
    if (p->istride < 1 || p->ostride < 1 || p->idist < 0 || p->odist < 0 || p->istride > kMax || p->ostride > kMax ||
        p->idist > kMax || p->odist > kMax || batch > kMax)
        return CUFFT_INVALID_VALUE;
    // A work area of one batch's complex data (cuFFT asks for about that on sizes that are not
    // small powers of two): never 0, so a missing work area is always found.
    p->work_size = static_cast<size_t>(count(out_len) > count(in_len) ? count(out_len) : count(in_len)) * 2 *
                   real_size(type) * static_cast<size_t>(std::min<long long>(batch, 4));
    if (p->auto_alloc) {
        if (cudaMalloc(&p->own_work, p->work_size) != cudaSuccess) return CUFFT_ALLOC_FAILED;
        p->work = p->own_work;
    }
    if (work_size) *work_size = p->work_size;
    p->made = true;
    return CUFFT_SUCCESS;
}

cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *in, cufftComplex *out, int direction)
{
    return exec(plan, CUFFT_C2C, in, out, direction);
}
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *in, cufftDoubleComplex *out, int direction)
{
    return exec(plan, CUFFT_Z2Z, in, out, direction);
}
cufftResult cufftExecR2C(cufftHandle plan, cufftReal *in, cufftComplex *out)
{
    return exec(plan, CUFFT_R2C, in, out, CUFFT_FORWARD);
}
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *in, cufftDoubleComplex *out)
{
    return exec(plan, CUFFT_D2Z, in, out, CUFFT_FORWARD);
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *in, cufftReal *out)
{
    return exec(plan, CUFFT_C2R, in, out, CUFFT_INVERSE);
}
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *in, cufftDoubleReal *out)
{
    return exec(plan, CUFFT_Z2D, in, out, CUFFT_INVERSE);
}

}  // extern "C"
