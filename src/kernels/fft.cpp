// Local FFT plans over FFTW3 (see fft.hpp). Precision-generic through a small traits struct,
// so the double and float paths are one piece of code.
#include "kernels/fft.hpp"

#include <algorithm>
#include <cstdint>

#include "kernels/fft_impl.hpp"

#include "core/error.hpp"
#include "core/sim.hpp"

#ifdef PLM_WITH_FFTW
#include <fftw3.h>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <type_traits>
#endif

namespace plm::kernels {

#ifdef PLM_WITH_FFTW
namespace {

// FFTW's planner is not thread-safe; executing plans is.
std::mutex &planner_mutex()
{
    static std::mutex m;
    return m;
}

template <typename R> struct Fftw;
template <> struct Fftw<double> {
    using plan = fftw_plan;
    using cpx = fftw_complex;
    using iodim = fftw_iodim64;
    static plan dft(int r, const iodim *d, int hr, const iodim *hd, cpx *in, cpx *out, int sign, unsigned f)
    {
        return fftw_plan_guru64_dft(r, d, hr, hd, in, out, sign, f);
    }
    static plan r2c(int r, const iodim *d, int hr, const iodim *hd, double *in, cpx *out, unsigned f)
    {
        return fftw_plan_guru64_dft_r2c(r, d, hr, hd, in, out, f);
    }
    static plan c2r(int r, const iodim *d, int hr, const iodim *hd, cpx *in, double *out, unsigned f)
    {
        return fftw_plan_guru64_dft_c2r(r, d, hr, hd, in, out, f);
    }
    static void exec_dft(plan p, void *in, void *out) { fftw_execute_dft(p, (cpx *)in, (cpx *)out); }
    static void exec_r2c(plan p, void *in, void *out) { fftw_execute_dft_r2c(p, (double *)in, (cpx *)out); }
    static void exec_c2r(plan p, void *in, void *out) { fftw_execute_dft_c2r(p, (cpx *)in, (double *)out); }
    static void destroy(plan p) { fftw_destroy_plan(p); }
    static void *alloc(size_t n) { return fftw_malloc(n); }
    static void release(void *p) { fftw_free(p); }
    static bool aligned(void *p) { return fftw_alignment_of((double *)p) == 0; }
};
template <> struct Fftw<float> {
    using plan = fftwf_plan;
    using cpx = fftwf_complex;
    using iodim = fftwf_iodim64;
    static plan dft(int r, const iodim *d, int hr, const iodim *hd, cpx *in, cpx *out, int sign, unsigned f)
    {
        return fftwf_plan_guru64_dft(r, d, hr, hd, in, out, sign, f);
    }
    static plan r2c(int r, const iodim *d, int hr, const iodim *hd, float *in, cpx *out, unsigned f)
    {
        return fftwf_plan_guru64_dft_r2c(r, d, hr, hd, in, out, f);
    }
    static plan c2r(int r, const iodim *d, int hr, const iodim *hd, cpx *in, float *out, unsigned f)
    {
        return fftwf_plan_guru64_dft_c2r(r, d, hr, hd, in, out, f);
    }
    static void exec_dft(plan p, void *in, void *out) { fftwf_execute_dft(p, (cpx *)in, (cpx *)out); }
    static void exec_r2c(plan p, void *in, void *out) { fftwf_execute_dft_r2c(p, (float *)in, (cpx *)out); }
    static void exec_c2r(plan p, void *in, void *out) { fftwf_execute_dft_c2r(p, (cpx *)in, (float *)out); }
    static void destroy(plan p) { fftwf_destroy_plan(p); }
    static void *alloc(size_t n) { return fftwf_malloc(n); }
    static void release(void *p) { fftwf_free(p); }
    static bool aligned(void *p) { return fftwf_alignment_of((float *)p) == 0; }
};

std::vector<int64_t> c_strides(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
}

int64_t product(const std::vector<int64_t> &shape)
{
    int64_t n = 1;
    for (int64_t v : shape) n *= v;
    return n;
}

}  // namespace

// Two plans of the one transform the options ask for (in place or not): [0] made with the
// options' effort on FFTW's SIMD-aligned scratch arrays, for buffers FFTW sees as aligned (the
// library's allocator gives them); [1] with FFTW_ESTIMATE | FFTW_UNALIGNED, for any buffer
// (user-wrapped arrays need only the real type's alignment); execute() picks by the buffers'
// alignment. Measuring planners overwrite the scratch arrays only. The interleaved real side
// doubles its strides (the real parts of a complex array).
namespace {
unsigned effort_flags(FftEffort e)
{
    switch (e) {
    case FftEffort::measure: return FFTW_MEASURE;
    case FftEffort::patient: return FFTW_PATIENT;
    case FftEffort::exhaustive: return FFTW_EXHAUSTIVE;
    case FftEffort::estimate: break;
    }
    return FFTW_ESTIMATE;
}

template <typename R> struct TypedImpl final : FftPlan::Impl {
    using F = Fftw<R>;
    typename F::plan plan[2] = {nullptr, nullptr};  // [0]: aligned buffers, [1]: any
    FftKind kind;
    bool in_place, empty;

    TypedImpl(FftKind k, const std::vector<int64_t> &shape, const std::vector<int> &axes, const FftOptions &o)
        : kind(k), in_place(o.in_place && (k == FftKind::c2c_forward || k == FftKind::c2c_backward)),
          empty(product(shape) == 0)
    {
        const bool real = k == FftKind::r2c || k == FftKind::c2r;
        std::vector<int64_t> cshape = shape;  // complex-side shape
        if (real) cshape[axes.back()] = shape[axes.back()] / 2 + 1;
        std::vector<int64_t> rs = c_strides(shape);
        const std::vector<int64_t> cs = c_strides(cshape);
        if (real && o.interleaved_real)
            for (int64_t &v : rs) v *= 2;
        const std::vector<int64_t> &is = k == FftKind::r2c ? rs : cs;
        const std::vector<int64_t> &os = k == FftKind::c2r ? rs : cs;

        std::vector<bool> transformed(shape.size(), false);
        std::vector<typename F::iodim> dims, batch;
        for (int a : axes) {
            transformed[a] = true;
            dims.push_back({shape[a], is[a], os[a]});
        }
        for (size_t a = 0; a < shape.size(); ++a)
            if (!transformed[a]) batch.push_back({cshape[a], is[a], os[a]});
        if (o.transposed) {  // [a][b] along axis 1, the spectrum [b][a] (checked by FftPlan)
            const int64_t m = shape[0], n = shape[1];
            const bool fwd = k == FftKind::c2c_forward;
            dims = {{n, fwd ? 1 : m, fwd ? m : 1}};
            batch = {{m, fwd ? n : 1, fwd ? 1 : n}};
        }

        // Scratch arrays to plan on: the real side needs product(shape) reals (twice that
        // interleaved), the complex side product(cshape) complexes (at least one element).
        const size_t rbytes = sizeof(R) * (size_t)std::max<int64_t>(1, product(shape)) * (o.interleaved_real ? 2 : 1);
        const size_t cbytes = 2 * sizeof(R) * (size_t)std::max<int64_t>(1, product(cshape));
        void *a = F::alloc(real ? std::max(rbytes, cbytes) : cbytes), *b = in_place ? a : F::alloc(cbytes);
        {
            std::lock_guard<std::mutex> lock(planner_mutex());
            const int r = (int)dims.size(), hr = (int)batch.size();
            for (int u = 0; u < 2 && a && b; ++u) {
                const unsigned flags = u ? FFTW_ESTIMATE | FFTW_UNALIGNED : effort_flags(o.effort);
                auto *ca = (typename F::cpx *)a, *cb = (typename F::cpx *)b;
                switch (k) {
                case FftKind::c2c_forward:
                case FftKind::c2c_backward: {
                    const int sign = k == FftKind::c2c_forward ? FFTW_FORWARD : FFTW_BACKWARD;
                    plan[u] = F::dft(r, dims.data(), hr, batch.data(), ca, cb, sign, flags);
                    break;
                }
                case FftKind::r2c: plan[u] = F::r2c(r, dims.data(), hr, batch.data(), (R *)a, cb, flags); break;
                case FftKind::c2r: plan[u] = F::c2r(r, dims.data(), hr, batch.data(), cb, (R *)a, flags); break;
                }
            }
        }
        F::release(a);
        if (b != a) F::release(b);
        if (!plan[0] || !plan[1]) {
            release();
            PLM_FAIL(PLM_ERR_OUT_OF_MEMORY, "FFTW could not make a plan (out of memory or unsupported layout)");
        }
    }
    void release()
    {
        std::lock_guard<std::mutex> lock(planner_mutex());
        for (auto &p : plan) {
            if (p) F::destroy(p);
            p = nullptr;
        }
    }
    ~TypedImpl() override { release(); }

    void execute(const Exec &, const void *in, void *out, void *) const override
    {
        if (empty) return;  // nothing to transform (the buffers may both be null)
        PLM_REQUIRE((in == out) == in_place, PLM_ERR_INTERNAL, "an FFT plan made %s run %s",
                    in_place ? "in place" : "out of place", in == out ? "in place" : "out of place");
        void *src = const_cast<void *>(in);  // FFTW's signature; only c2r writes its input
        const int u = F::aligned(src) && F::aligned(out) ? 0 : 1;
        switch (kind) {
        case FftKind::c2c_forward:
        case FftKind::c2c_backward: F::exec_dft(plan[u], src, out); break;
        case FftKind::r2c: F::exec_r2c(plan[u], src, out); break;
        case FftKind::c2r: F::exec_c2r(plan[u], src, out); break;
        }
    }
};

// The wisdom of one precision, as FFTW writes it (a malloc'd string).
template <typename R> std::string export_one()
{
    char *w = nullptr;
    if constexpr (std::is_same_v<R, double>) w = fftw_export_wisdom_to_string();
    else w = fftwf_export_wisdom_to_string();
    PLM_REQUIRE(w, PLM_ERR_OUT_OF_MEMORY, "FFTW could not export its wisdom");
    const std::unique_ptr<char, decltype(&free)> owned(w, &free);  // freed if the copy throws
    return std::string(w);
}
}  // namespace

std::string fft_wisdom_export()
{
    std::lock_guard<std::mutex> lock(planner_mutex());
    return export_one<double>() + export_one<float>();
}

void fft_wisdom_import(const std::string &wisdom)
{
    // The float part starts with the s-expression naming fftwf_wisdom; what is before it is
    // the double part. Either may be missing.
    const size_t tag = wisdom.find("fftwf_wisdom");
    const size_t cut = tag == std::string::npos ? wisdom.size() : wisdom.rfind('(', tag);
    const std::string d = wisdom.substr(0, cut == std::string::npos ? 0 : cut),
                      f = cut == std::string::npos ? wisdom : wisdom.substr(cut);
    const auto blank = [](const std::string &s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; };
    std::lock_guard<std::mutex> lock(planner_mutex());
    PLM_REQUIRE(blank(d) || fftw_import_wisdom_from_string(d.c_str()), PLM_ERR_INVALID_ARG,
                "FFTW could not read the double-precision wisdom given");
    PLM_REQUIRE(blank(f) || fftwf_import_wisdom_from_string(f.c_str()), PLM_ERR_INVALID_ARG,
                "FFTW could not read the single-precision wisdom given");
}

bool fft_available() { return true; }

#else
bool fft_available() { return false; }
std::string fft_wisdom_export() { return {}; }
void fft_wisdom_import(const std::string &) {}
#endif

#ifdef PLM_HAVE_CUDA
bool device_fft_available() { return true; }
#else
bool device_fft_available() { return false; }
#endif

bool device_fft_layout_ok(FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes)
{
    if (kind != FftKind::r2c && kind != FftKind::c2r) return true;
    const size_t r = static_cast<size_t>(axes.back());
    int64_t outer = 1, inner = 1;
    for (size_t a = 0; a < shape.size(); ++a) {
        if (a < r) outer *= shape[a];
        if (a > r) inner *= shape[a];
    }
    return outer <= 1 || inner <= 1 || (shape[r] * inner) % 2 == 0;
}

bool fft_aligned(const void *p, DType dt)
{
    const size_t pair = is_complex(dt) ? dtype_size(dt) : 2 * dtype_size(dt);
    return reinterpret_cast<uintptr_t>(p) % pair == 0;
}

FftPlan::FftPlan(Space space, DType dt, FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes,
                 int device, const FftOptions &options)
    : kind_(kind), space_(space), options_(options)
{
    PLM_REQUIRE(space == Space::host || space == Space::device, PLM_ERR_INVALID_ARG, "FFT plans are for host or device memory");
    PLM_REQUIRE(!axes.empty(), PLM_ERR_INVALID_ARG, "FFT: no axes to transform");
    std::vector<bool> seen(shape.size(), false);
    for (int a : axes) {
        PLM_REQUIRE(a >= 0 && a < (int)shape.size() && !seen[a], PLM_ERR_INVALID_ARG,
                    "FFT: axis %d out of range or repeated", a);
        seen[a] = true;
    }
    for (int64_t v : shape) PLM_REQUIRE(v >= 0, PLM_ERR_INVALID_ARG, "FFT: negative extent");
    PLM_REQUIRE(!options.transposed || (shape.size() == 2 && axes.size() == 1 && axes[0] == 1 &&
                                        (kind == FftKind::c2c_forward || kind == FftKind::c2c_backward) &&
                                        !options.in_place),
                PLM_ERR_INVALID_ARG, "FFT: a transposed spectrum is for out-of-place c2c along axis 1 of 2-D shapes");
    // What the plan's cost depends on, for sampled computation (core/sim.hpp).
    // (a hash: unsigned arithmetic wraps where int64_t would overflow)
    uint64_t key = static_cast<uint64_t>(dt) * 8 + static_cast<uint64_t>(kind);
    for (int64_t v : shape) key = key * 1000003u + static_cast<uint64_t>(v);
    for (int a : axes) key = key * 31u + static_cast<uint64_t>(a);
    shape_key_ = static_cast<int64_t>(key >> 1);
    const bool real = kind == FftKind::r2c || kind == FftKind::c2r;
    const bool complex_dt = dt == DType::c64 || dt == DType::c128;
    PLM_REQUIRE(real ? (dt == DType::f32 || dt == DType::f64) : complex_dt, PLM_ERR_DTYPE_MISMATCH,
                "FFT: %s transforms take a %s dtype", real ? "real" : "complex", real ? "real" : "complex");
    if (space == Space::device) {
#ifdef PLM_HAVE_CUDA
        PLM_REQUIRE(device_count() > 0, PLM_ERR_BACKEND_UNAVAILABLE, "device FFT: no CUDA device is visible");
        PLM_REQUIRE(options.interleaved_real || device_fft_layout_ok(kind, shape, axes), PLM_ERR_NOT_SUPPORTED,
                    "device FFT: a real transform along axis %d with batches on both sides needs an even "
                    "number of reals per batch row",
                    axes.back());
        impl_ = make_device_fft(dt, kind, shape, axes, device, options);
        return;
#else
        (void)device;
        PLM_FAIL(PLM_ERR_BACKEND_UNAVAILABLE, "device FFT plans are not in this build (host-only: built without CUDA)");
#endif
    }
#ifdef PLM_WITH_FFTW
    if (dt == DType::f64 || dt == DType::c128)
        impl_ = std::make_unique<TypedImpl<double>>(kind, shape, axes, options);
    else
        impl_ = std::make_unique<TypedImpl<float>>(kind, shape, axes, options);
#else
    PLM_FAIL(PLM_ERR_NOT_SUPPORTED, "FFT: this build has no FFTW (configure with fftw3 and fftw3f installed)");
#endif
}

FftPlan::~FftPlan() = default;

void FftPlan::execute(const void *in, void *out) const
{
    PLM_REQUIRE(space_ == Space::host, PLM_ERR_INTERNAL, "a device FFT plan executed without its stream");
    sim::compute(PLM_SIM_SITE, {shape_key_, in == out}, 1, [&] { impl_->execute(Exec{}, in, out, nullptr); });
}

void FftPlan::execute(const Exec &e, const void *in, void *out, void *work) const
{
    PLM_REQUIRE(e.space == space_, PLM_ERR_INTERNAL, "an FFT plan for %s memory run on %s memory", space_name(space_),
                space_name(e.space));
    if (space_ == Space::device) return impl_->execute(e, in, out, work);
    sim::compute(PLM_SIM_SITE, {shape_key_, in == out}, 1, [&] { impl_->execute(e, in, out, work); });
}

size_t FftPlan::work_bytes() const { return impl_->work_bytes(); }

}  // namespace plm::kernels
