// CUDA kernels behind kernels.hpp for device memory (see device.hpp for what lives where).
// What each element gets is element.hpp's, shared with the host loops; this file holds the
// launches. Element arithmetic goes through the __*_rn intrinsics, which nvcc never contracts
// into FMAs, so element-wise results match the host's (built with -ffp-contract=off) bit for
// bit. Reductions accumulate in double in a fixed order (per-thread strided chains, then
// fixed trees), so results repeat run to run; their order differs from the host's.
// Launches go through PLM_LAUNCH (kernels/launch.hpp), so the emulated device (src/emu) runs
// this same file compiled for the host.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/alloc.hpp"
#include "kernels/device.hpp"
#include "kernels/element.hpp"
#include "kernels/launch.hpp"
#include "memory/cuda.hpp"

namespace plm::kernels::device {

namespace {

constexpr int kThreads = 256;        // threads per block, every kernel
constexpr int64_t kMaxGrid = 8192;   // elementwise kernels: grid-stride past this many blocks
constexpr int64_t kMaxBlocks = 1024; // reductions: partial sums per reduction, about one wave

namespace el = element;
using el::Cx;

template <typename T> struct Parts {
    using real = T;
    static constexpr bool complex = false;
};
template <typename R> struct Parts<Cx<R>> {
    using real = R;
    static constexpr bool complex = true;
};

// The device type of each floating dtype.
template <typename F> void dispatch(DType dt, F &&f)
{
    switch (dt) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::c64: return f(Cx<float>{});
    case DType::c128: return f(Cx<double>{});
    default: break;
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "dtype %s is not a floating dtype", dtype_name(dt));
}

template <typename T> T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Host-side tests on scalars, as host.cpp's a == T{} and a == T(1).
bool is_zero(float v) { return v == 0.0f; }
bool is_zero(double v) { return v == 0.0; }
template <typename R> bool is_zero(Cx<R> v) { return v.re == R(0) && v.im == R(0); }
bool is_one(float v) { return v == 1.0f; }
bool is_one(double v) { return v == 1.0; }
template <typename R> bool is_one(Cx<R> v) { return v.re == R(1) && v.im == R(0); }
template <typename T> bool zero_bytes(const T &v)
{
    const T z{};
    return std::memcmp(&v, &z, sizeof v) == 0;
}

// ---------------------------------------------------------------------------------------
// Elementwise kernels: one functor call per index, 64-bit grid-stride loop.
// ---------------------------------------------------------------------------------------

template <typename F> __global__ void map_kernel(int64_t n, F f)
{
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) f(i);
}

template <typename F> void launch_map(const Exec &e, int64_t n, const F &f, const char *what)
{
    if (n <= 0) return;
    const int64_t blocks = std::min((n + kThreads - 1) / kThreads, kMaxGrid);
    PLM_LAUNCH(unsigned(blocks), kThreads, 0, cuda::stream_of(e), map_kernel)(n, f);
    cuda::check(cudaGetLastError(), what);
}

template <typename T> struct Fill {
    T *x;
    T v;
    __device__ void operator()(int64_t i) const { x[i] = v; }
};

// y = a x (x may be y).
template <typename T> struct Scal {
    const T *x;
    T *y;
    T a;
    __device__ void operator()(int64_t i) const { y[i] = el::scal(a, x[i]); }
};

// The i-th element of the [outer, count, inner] slab starting at start of an [outer, n, inner]
// view: a times it, or zero (scale()'s alpha = 0: zeros over NaN and Inf too).
template <typename T> struct ScalSlab {
    T *x;
    T a;
    bool zero;
    int64_t n, inner, start, count;
    __device__ void operator()(int64_t i) const
    {
        const int64_t run = count * inner, o = i / run, r = i - o * run;
        T *p = x + (o * n + start) * inner + r;
        *p = zero ? T{} : el::scal(a, *p);
    }
};

template <typename R> struct ZeroImag {
    Cx<R> *x;
    int64_t n, inner, bin;
    __device__ void operator()(int64_t i) const
    {
        const int64_t o = i / inner, k = i - o * inner;
        x[(o * n + bin) * inner + k].im = R(0);
    }
};

template <typename T> struct Axpby {
    const T *x;
    T *y;
    T a, b;
    __device__ void operator()(int64_t i) const { y[i] = el::axpby(a, x[i], b, y[i]); }
};

template <typename T, Binary Op> struct Bin {
    const T *x, *y;
    T *z;
    __device__ void operator()(int64_t i) const
    {
        if constexpr (Op == Binary::add) z[i] = el::add(x[i], y[i]);
        else if constexpr (Op == Binary::sub) z[i] = el::sub(x[i], y[i]);
        else z[i] = el::mul(x[i], y[i]);
    }
};

template <typename R> struct Conj {
    const Cx<R> *x;
    Cx<R> *y;
    __device__ void operator()(int64_t i) const { y[i] = el::conj(x[i]); }
};

template <typename A, typename B> struct Widen {
    const A *x;
    B *y;
    __device__ void operator()(int64_t i) const { y[i] = el::widen<B>(x[i]); }
};

template <typename T> struct Thresh {
    T *x;
    el::ThresholdArgs a;
    __device__ void operator()(int64_t i) const { x[i] = el::threshold(x[i], a); }
};

template <typename T> struct GroupAdd {
    const T *x;
    typename Parts<T>::real *n2;
    bool first;
    __device__ void operator()(int64_t i) const { n2[i] = el::group_add(n2[i], first, el::abs2_r(x[i])); }
};

template <typename T> struct GroupScale {
    const T *x;
    T *y;
    const typename Parts<T>::real *n2;
    Group kind;
    typename Parts<T>::real t;
    __device__ void operator()(int64_t i) const { y[i] = el::mul(el::group_factor(n2[i], kind, t), x[i]); }
};

template <typename R> struct Sqrt {
    R *v;
    __device__ void operator()(int64_t i) const { v[i] = el::sqrt_(v[i]); }
};

template <typename R> struct BoxMap {
    const R *x;
    R *y;
    bool mark;
    double lo, hi;
    __device__ void operator()(int64_t i) const { y[i] = el::box(x[i], mark, lo, hi); }
};

// Zeros of any floating dtype are all-zero bytes.
void zero(const Exec &e, DType dt, int64_t n, void *x)
{
    if (n <= 0) return;
    cuda::check(cudaMemsetAsync(x, 0, size_t(n) * dtype_size(dt), cuda::stream_of(e)), "cudaMemsetAsync");
}

// ---------------------------------------------------------------------------------------
// Stream-ordered scratch memory, released on the stream when the scope ends (also when a
// later call throws).
// ---------------------------------------------------------------------------------------

class Scratch {
public:
    Scratch(size_t bytes, cudaStream_t s) : s_(s)
    {
        alloc::note();
        // Stream-ordered pools where the device has them (cheap, no device-wide sync), else
        // plain cudaMalloc (which frees synchronously; correct, slower).
        pooled_ = pools_supported();
        const cudaError_t rc = pooled_ ? cudaMallocAsync(&p_, bytes, s) : cudaMalloc(&p_, bytes);
        if (rc == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            PLM_FAIL(PLM_ERR_OUT_OF_MEMORY, "%s of %zu bytes of device scratch failed",
                     pooled_ ? "cudaMallocAsync" : "cudaMalloc", bytes);
        }
        cuda::check(rc, pooled_ ? "cudaMallocAsync" : "cudaMalloc");
    }
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
    ~Scratch() { (void)(pooled_ ? cudaFreeAsync(p_, s_) : cudaFree(p_)); }
    template <typename A> A *as() const { return static_cast<A *>(p_); }

private:
    static bool pools_supported()
    {
        int dev = 0, yes = 0;
        cuda::check(cudaGetDevice(&dev), "cudaGetDevice");
        cuda::check(cudaDeviceGetAttribute(&yes, cudaDevAttrMemoryPoolsSupported, dev), "cudaDeviceGetAttribute");
        return yes != 0;
    }
    void *p_ = nullptr;
    cudaStream_t s_;
    bool pooled_ = false;
};

// ---------------------------------------------------------------------------------------
// Reductions. A is the accumulator (double, or Sums4 for complex dot), Op folds two of them.
// ---------------------------------------------------------------------------------------

using el::Sums4;

struct Add {
    template <typename A> __device__ A operator()(A a, A b) const { return el::add(a, b); }
};
struct Max {
    __device__ double operator()(double a, double v) const { return el::nan_max(a, v); }
};
struct Min {
    __device__ double operator()(double a, double v) const { return el::nan_min(a, v); }
};

// Folds get(k) for k = first, first + stride, ... < n in four independent chains (more
// loads in flight), combined in a fixed order.
template <typename A, typename Op, typename Get>
__device__ __forceinline__ A thread_fold(int64_t first, int64_t stride, int64_t n, A init, Op op, const Get &get)
{
    A a0 = init, a1 = init, a2 = init, a3 = init;
    int64_t k = first;
    for (; k + 3 * stride < n; k += 4 * stride) {
        a0 = op(a0, get(k));
        a1 = op(a1, get(k + stride));
        a2 = op(a2, get(k + 2 * stride));
        a3 = op(a3, get(k + 3 * stride));
    }
    for (; k < n; k += stride) a0 = op(a0, get(k));
    return op(op(a0, a1), op(a2, a3));
}

// Fixed-shape tree over the block's kThreads values; every thread gets the result.
template <typename A, typename Op> __device__ A block_fold(A v, Op op)
{
    __shared__ A s[kThreads];
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
        if (t < w) s[t] = op(s[t], s[t + w]);
        __syncthreads();
    }
    return s[0];
}

// Row blockIdx.y, split over gridDim.x blocks: part[row * gridDim.x + blockIdx.x].
template <typename A, typename Op, typename Rows>
__global__ void partials_kernel(int64_t n, A init, Op op, Rows rows, A *part)
{
    const auto row = rows.row(blockIdx.y);
    A acc = thread_fold(int64_t(blockIdx.x) * kThreads + threadIdx.x, int64_t(gridDim.x) * kThreads, n, init, op, row);
    acc = block_fold(acc, op);
    if (threadIdx.x == 0) part[int64_t(blockIdx.y) * gridDim.x + blockIdx.x] = acc;
}

// Block r folds the `blocks` partials of row r into out[r].
template <typename A, typename Op> __global__ void fold_kernel(int64_t blocks, A init, Op op, const A *part, A *out)
{
    const A *p = part + int64_t(blockIdx.x) * blocks;
    A acc = thread_fold(int64_t(threadIdx.x), int64_t(kThreads), blocks, init, op, [p](int64_t k) { return p[k]; });
    acc = block_fold(acc, op);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// One thread per row, summing in index order as host.cpp's strided case does.
template <typename Op, typename Rows>
__global__ void rows_kernel(int64_t nrows, int64_t n, double init, Op op, Rows rows, double *out)
{
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    for (int64_t r = int64_t(blockIdx.x) * kThreads + threadIdx.x; r < nrows; r += stride) {
        const auto row = rows.row(r);
        double acc = init;
        for (int64_t k = 0; k < n; ++k) acc = op(acc, row(k));
        out[r] = acc;
    }
}

// Partial-sum blocks per row: enough for a few terms per thread, about kMaxBlocks in all.
int64_t blocks_per_row(int64_t n, int64_t nrows)
{
    return std::max<int64_t>(1, std::min((n + 4 * kThreads - 1) / (4 * kThreads), kMaxBlocks / nrows));
}

// Reduces nrows (<= 65535) rows of n terms each into out[nrows] (device): partials, then a fold.
template <typename A, typename Op, typename Rows>
void reduce_rows_split(const Exec &e, int64_t nrows, int64_t n, A init, Op op, const Rows &rows, A *part, A *out)
{
    const cudaStream_t s = cuda::stream_of(e);
    const int64_t bx = blocks_per_row(n, nrows);
    PLM_LAUNCH(dim3(unsigned(bx), unsigned(nrows)), kThreads, 0, s, partials_kernel)(n, init, op, rows, part);
    cuda::check(cudaGetLastError(), "partial sums kernel");
    PLM_LAUNCH(unsigned(nrows), kThreads, 0, s, fold_kernel)(bx, init, op, part, out);
    cuda::check(cudaGetLastError(), "fold kernel");
}

// ----- terms -----

template <typename T> struct DotReal {
    const T *x, *y;
    __device__ const DotReal &row(int64_t) const { return *this; }
    __device__ double operator()(int64_t k) const { return el::dot_term(x[k], y[k]); }
};

template <typename R> struct DotCx {
    const Cx<R> *x, *y;
    __device__ const DotCx &row(int64_t) const { return *this; }
    __device__ Sums4 operator()(int64_t k) const { return el::cross_terms(x[k], y[k]); }
};

struct Sq {
    template <typename T> __device__ double operator()(T v) const { return el::abs2_of(v); }
};
struct Abs {
    template <typename T> __device__ double operator()(T v) const { return el::abs_of(v); }
};
struct Pow {
    double p;
    template <typename T> __device__ double operator()(T v) const { return pow(el::abs_of(v), p); }
};
struct Nz {
    template <typename T> __device__ double operator()(T v) const { return el::nonzero(v) ? 1.0 : 0.0; }
};

// x viewed as [outer, n, inner]: row r = o * inner + i holds x[(o * n + k) * inner + i], k < n.
template <typename T, typename F> struct NormRows {
    const T *x;
    int64_t n, inner;
    F f;
    struct Row {
        const T *p;
        int64_t inner;
        F f;
        __device__ double operator()(int64_t k) const { return f(p[k * inner]); }
    };
    __device__ Row row(int64_t r) const
    {
        const int64_t o = r / inner, i = r - o * inner;
        return {x + o * n * inner + i, inner, f};
    }
};

// Calls go(init, term, fold) with what norm_partial's kind accumulates.
template <typename Go> void with_norm(NormKind kind, double p, Go &&go)
{
    constexpr double inf = std::numeric_limits<double>::infinity();
    switch (kind) {
    case NormKind::pow_sum:
        if (p == 2.0) return go(0.0, Sq{}, Add{});
        if (p == 1.0) return go(0.0, Abs{}, Add{});
        return go(0.0, Pow{p}, Add{});
    case NormKind::max_abs: return go(0.0, Abs{}, Max{});
    case NormKind::min_abs: return go(inf, Abs{}, Min{});
    case NormKind::count_nonzero: return go(0.0, Nz{}, Add{});
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "unknown norm kind %d", enum_value(kind));
}

// ----- reductions into slots: partial sums, then one block folds them into the slot -----

// What a slot holds: two doubles from the folded accumulator.
template <typename T> struct DotRealSlot {
    __device__ void operator()(double s, double *o) const
    {
        o[0] = double(T(s));  // rounded to the dtype, as dot() returns it
        o[1] = 0;
    }
};
template <typename R> struct DotCxSlot {
    bool conjugate;
    __device__ void operator()(Sums4 s, double *o) const
    {
        const Cx<R> d = el::dot_from<R>(s, conjugate);
        o[0] = d.re;
        o[1] = d.im;
    }
};
struct NormSlot {
    __device__ void operator()(double v, double *o) const
    {
        o[0] = v;
        o[1] = 0;
    }
};

template <typename A, typename Op, typename Put>
__global__ void fold_slot_kernel(int64_t blocks, A init, Op op, const A *part, Put put, double *slot)
{
    A acc = thread_fold(int64_t(threadIdx.x), int64_t(kThreads), blocks, init, op, [part](int64_t k) { return part[k]; });
    acc = block_fold(acc, op);
    if (threadIdx.x == 0) put(acc, slot);
}

// The partials of one reduction, at most kMaxBlocks of the widest accumulator.
constexpr size_t kScratchBytes = size_t(kMaxBlocks) * sizeof(Sums4);

template <typename A, typename Op, typename Rows, typename Put>
void reduce_slot(const Exec &e, int64_t n, A init, Op op, const Rows &rows, Put put, void *scratch, double *slot)
{
    const cudaStream_t s = cuda::stream_of(e);
    const int64_t bx = blocks_per_row(std::max<int64_t>(n, 0), 1);
    A *part = static_cast<A *>(scratch);
    PLM_LAUNCH(unsigned(bx), kThreads, 0, s, partials_kernel)(std::max<int64_t>(n, 0), init, op, rows, part);
    cuda::check(cudaGetLastError(), "partial sums kernel");
    PLM_LAUNCH(1, kThreads, 0, s, fold_slot_kernel)(bx, init, op, part, put, slot);
    cuda::check(cudaGetLastError(), "fold kernel");
}

template <typename T> void dot_slot(const Exec &e, int64_t n, const T *x, const T *y, bool conjugate, void *scratch, double *slot)
{
    if constexpr (!Parts<T>::complex) {
        reduce_slot(e, n, 0.0, Add{}, DotReal<T>{x, y}, DotRealSlot<T>{}, scratch, slot);
    } else {
        using R = typename Parts<T>::real;
        reduce_slot(e, n, Sums4{}, Add{}, DotCx<R>{x, y}, DotCxSlot<R>{conjugate}, scratch, slot);
    }
}

template <typename T>
void norm_slot(const Exec &e, NormKind kind, double p, int64_t n, const T *x, void *scratch, double *slot)
{
    with_norm(kind, p, [&](double init, auto f, auto op) {
        reduce_slot(e, n, init, op, NormRows<T, decltype(f)>{x, n, 1, f}, NormSlot{}, scratch, slot);
    });
}

void copy_to_host(const Exec &e, const double *dev, int64_t count, double *host)
{
    const cudaStream_t s = cuda::stream_of(e);
    cuda::check(cudaMemcpyAsync(host, dev, size_t(count) * sizeof(double), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    cuda::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

// ----- norms along an axis ([outer, n, inner] with outer * inner > 1) -----

template <typename T, typename F, typename Op>
void norm_rows(const Exec &e, int64_t outer, int64_t n, int64_t inner, const T *x, double init, F f, Op op, double *out)
{
    const int64_t nrows = outer * inner;
    if (n <= 0) {
        std::fill(out, out + nrows, init);
        return;
    }
    const cudaStream_t s = cuda::stream_of(e);
    const NormRows<T, F> rows{x, n, inner, f};
    // Split rows across blocks when they are long and few; otherwise one thread per row
    // (coalesced across threads when inner > 1).
    const bool split = nrows <= 65535 && n >= kThreads && (inner == 1 || nrows < 8192);
    const int64_t bx = split ? blocks_per_row(n, nrows) : 0;
    Scratch scratch(size_t(nrows * (bx + 1)) * sizeof(double), s);
    double *part = scratch.as<double>(), *res = part + nrows * bx;
    if (split) {
        reduce_rows_split(e, nrows, n, init, op, rows, part, res);
    } else {
        const int64_t blocks = std::min((nrows + kThreads - 1) / kThreads, kMaxGrid);
        PLM_LAUNCH(unsigned(blocks), kThreads, 0, s, rows_kernel)(nrows, n, init, op, rows, res);
        cuda::check(cudaGetLastError(), "norm rows kernel");
    }
    copy_to_host(e, res, nrows, out);
}

// ---------------------------------------------------------------------------------------
// Stencils: one thread per output element, element.hpp's stencil_point(). The plan rides in
// the kernel's parameters (__grid_constant__: read in place, never copied to local memory).
// I is the index type of the divisions: 32-bit when the block allows.
// ---------------------------------------------------------------------------------------

template <typename V> struct StencilArgs {
    StencilPlan p;
    el::StencilGeom g;
    const V *x, *gb, *ga;
    V *y;
    int64_t first, count;  // elements [first, first + count) of the block
    bool accumulate;
};
static_assert(sizeof(StencilArgs<Cx<double>>) < 32000, "kernel parameters are limited to 32764 bytes");

template <typename V, typename I> __global__ void stencil_kernel(const __grid_constant__ StencilArgs<V> a)
{
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    const I row_len = I(a.g.row_len);
    for (int64_t k = int64_t(blockIdx.x) * kThreads + threadIdx.x; k < a.count; k += stride) {
        const I at = I(a.first + k), r = row_len == 1 ? at : at / row_len, rest = at - r * row_len;
        const V y0 = a.accumulate ? a.y[a.first + k] : V{};
        a.y[a.first + k] = el::stencil_point<I>(a.p, a.g, a.x, a.gb, a.ga, int64_t(r), rest, y0, a.accumulate);
    }
}

// ---------------------------------------------------------------------------------------
// Box copies: dims of box 1 (but the innermost) are dropped and dims contiguous in both
// arrays merged, so most boxes become one memcpy or one 2-D memcpy; the rest use a kernel.
// ---------------------------------------------------------------------------------------

struct Box {
    int nd = 0;  // one spare dimension for split_words()
    int64_t len[PLM_MAX_NDIM + 1] = {}, sstride[PLM_MAX_NDIM + 1] = {}, dstride[PLM_MAX_NDIM + 1] = {};  // elements
};

// Elements as k words each: a new innermost dimension of k, strides scaled by k.
Box split_words(const Box &b, int64_t k)
{
    Box w = b;
    for (int d = 0; d < b.nd; ++d) {
        w.sstride[d] *= k;
        w.dstride[d] *= k;
    }
    w.len[b.nd] = k;
    w.sstride[b.nd] = w.dstride[b.nd] = 1;
    w.nd = b.nd + 1;
    return w;
}

template <int Size> struct Word;
template <> struct Word<1> { using type = uint8_t; };
template <> struct Word<2> { using type = uint16_t; };
template <> struct Word<4> { using type = uint32_t; };
template <> struct Word<8> { using type = uint64_t; };
struct Pair64 {
    uint64_t a, b;
};
template <> struct Word<16> { using type = Pair64; };

template <typename W> __global__ void box_kernel(int64_t total, Box b, const W *src, W *dst)
{
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total; idx += stride) {
        int64_t rest = idx, so = 0, dof = 0;
        for (int d = b.nd - 1; d >= 0; --d) {
            const int64_t q = rest / b.len[d], c = rest - q * b.len[d];
            so += c * b.sstride[d];
            dof += c * b.dstride[d];
            rest = q;
        }
        dst[dof] = src[so];
    }
}

template <int Size> void launch_box(const Exec &e, const Box &b, const void *src, void *dst)
{
    using W = typename Word<Size>::type;
    int64_t total = 1;
    for (int d = 0; d < b.nd; ++d) total *= b.len[d];
    const int64_t blocks = std::min((total + kThreads - 1) / kThreads, kMaxGrid);
    PLM_LAUNCH(unsigned(blocks), kThreads, 0, cuda::stream_of(e), box_kernel)(total, b, static_cast<const W *>(src),
                                                                               static_cast<W *>(dst));
    cuda::check(cudaGetLastError(), "box copy kernel");
}

size_t max_pitch()
{
    int dev = 0, v = 0;
    cuda::check(cudaGetDevice(&dev), "cudaGetDevice");
    cuda::check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxPitch, dev), "cudaDeviceGetAttribute");
    return size_t(v);
}

void copy_strided(const Exec &e, size_t es, const Box &b, const char *src, char *dst)
{
    const cudaStream_t s = cuda::stream_of(e);
    const int nd = b.nd;
    const bool unit = nd == 0 || (b.sstride[nd - 1] == 1 && b.dstride[nd - 1] == 1);
    if (unit && nd <= 1) {
        const size_t bytes = (nd ? size_t(b.len[0]) : 1) * es;
        cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
        return;
    }
    if (unit && nd == 2) {
        const size_t spitch = size_t(b.sstride[0]) * es, dpitch = size_t(b.dstride[0]) * es;
        if (std::max(spitch, dpitch) <= max_pitch()) {
            cuda::check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, size_t(b.len[1]) * es, size_t(b.len[0]),
                                          cudaMemcpyDeviceToDevice, s),
                        "cudaMemcpy2DAsync");
            return;
        }
    }
    // The widest word both addresses allow: a complex64 pointer need only be 4-byte aligned.
    size_t w = es;
    while (w > 1 && (reinterpret_cast<uintptr_t>(src) % w || reinterpret_cast<uintptr_t>(dst) % w)) w /= 2;
    const Box bw = w < es ? split_words(b, int64_t(es / w)) : b;
    switch (w) {
    case 1: return launch_box<1>(e, bw, src, dst);
    case 2: return launch_box<2>(e, bw, src, dst);
    case 4: return launch_box<4>(e, bw, src, dst);
    case 8: return launch_box<8>(e, bw, src, dst);
    case 16: return launch_box<16>(e, bw, src, dst);
    default: break;
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "box copy of %zu-byte elements", es);
}

}  // namespace

void fill(const Exec &e, DType dt, int64_t n, const void *value, void *x)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        const T v = load<T>(value);
        if (zero_bytes(v)) return zero(e, dt, n, x);  // +0 only: -0.0 needs the kernel
        launch_map(e, n, Fill<T>{static_cast<T *>(x), v}, "fill kernel");
    });
}

void copy(const Exec &e, DType dt, int64_t n, const void *x, void *y)
{
    cuda::activate(e);
    if (n <= 0 || x == y) return;
    const size_t bytes = size_t(n) * dtype_size(dt);
    const cudaStream_t s = cuda::stream_of(e);
    const char *a = static_cast<const char *>(x);
    char *b = static_cast<char *>(y);
    const uintptr_t ia = reinterpret_cast<uintptr_t>(a), ib = reinterpret_cast<uintptr_t>(b);
    if (ia < ib + bytes && ib < ia + bytes) {  // overlap: memmove semantics through a bounce buffer
        Scratch tmp(bytes, s);
        cuda::check(cudaMemcpyAsync(tmp.as<char>(), a, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
        cuda::check(cudaMemcpyAsync(b, tmp.as<char>(), bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
        return;
    }
    cuda::check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
}

void scale(const Exec &e, DType dt, int64_t n, const void *alpha, void *x)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        const T a = load<T>(alpha);
        if (is_zero(a)) return zero(e, dt, n, x);  // zeros over NaN and Inf too
        if (is_one(a)) return;
        T *p = static_cast<T *>(x);
        launch_map(e, n, Scal<T>{p, p, a}, "scale kernel");
    });
}

void scale_slab(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t count,
                const void *alpha, void *x)
{
    cuda::activate(e);
    if (outer <= 0 || count <= 0 || inner <= 0) return;
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        const T a = load<T>(alpha);
        if (is_one(a)) return;
        launch_map(e, outer * count * inner, ScalSlab<T>{static_cast<T *>(x), a, is_zero(a), n, inner, start, count},
                   "scale_slab kernel");
    });
}

void zero_imag(const Exec &e, DType dt, int64_t outer, int64_t n, int64_t inner, int64_t bin, void *x)
{
    cuda::activate(e);
    if (outer <= 0 || inner <= 0 || bin < 0 || bin >= n) return;
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        if constexpr (Parts<T>::complex) {
            using R = typename Parts<T>::real;
            launch_map(e, outer * inner, ZeroImag<R>{static_cast<Cx<R> *>(x), n, inner, bin}, "zero_imag kernel");
        } else {
            PLM_FAIL(PLM_ERR_INTERNAL, "zero_imag of real %s data", dtype_name(dt));
        }
    });
}

void axpby(const Exec &e, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        const T a = load<T>(alpha), b = load<T>(beta);
        const T *xp = static_cast<const T *>(x);
        T *yp = static_cast<T *>(y);
        // Zero coefficients never read their operand (it may hold NaN or garbage).
        if (is_zero(a) && is_zero(b)) zero(e, dt, n, y);
        else if (is_zero(b)) launch_map(e, n, Scal<T>{xp, yp, a}, "axpby kernel");
        else if (is_zero(a)) launch_map(e, n, Scal<T>{yp, yp, b}, "axpby kernel");
        else launch_map(e, n, Axpby<T>{xp, yp, a, b}, "axpby kernel");
    });
}

void binary(const Exec &e, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        const T *a = static_cast<const T *>(x);
        const T *b = static_cast<const T *>(y);
        T *c = static_cast<T *>(z);
        switch (op) {
        case Binary::add: return launch_map(e, n, Bin<T, Binary::add>{a, b, c}, "binary add kernel");
        case Binary::sub: return launch_map(e, n, Bin<T, Binary::sub>{a, b, c}, "binary sub kernel");
        case Binary::mul: return launch_map(e, n, Bin<T, Binary::mul>{a, b, c}, "binary mul kernel");
        }
        PLM_FAIL(PLM_ERR_INTERNAL, "unknown binary op %d", enum_value(op));
    });
}

void conj(const Exec &e, DType dt, int64_t n, const void *x, void *y)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        if constexpr (!Parts<T>::complex) {
            device::copy(e, dt, n, x, y);
        } else {
            using R = typename Parts<T>::real;
            launch_map(e, n, Conj<R>{static_cast<const T *>(x), static_cast<T *>(y)}, "conj kernel");
        }
    });
}

void convert(const Exec &e, DType from, DType to, int64_t n, const void *x, void *y)
{
    cuda::activate(e);
    dispatch(from, [&](auto a) {
        dispatch(to, [&](auto b) {
            using A = decltype(a);
            using B = decltype(b);
            if constexpr (!el::IsCxT<A>::value || el::IsCxT<B>::value)
                launch_map(e, n, Widen<A, B>{static_cast<const A *>(x), static_cast<B *>(y)}, "convert kernel");
        });
    });
}

// Into host results: scratch for the partials and one slot, then the slot back.
void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result)
{
    cuda::activate(e);
    double v[2] = {0, 0};
    if (n > 0) {
        Scratch scratch(kScratchBytes + sizeof v, cuda::stream_of(e));
        double *slot = reinterpret_cast<double *>(scratch.as<char>() + kScratchBytes);
        dot(e, dt, n, x, y, conjugate, scratch.as<void>(), slot);
        copy_to_host(e, slot, 2, v);
    }
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        using R = typename Parts<T>::real;
        const R parts[2] = {R(v[0]), R(v[1])};  // exact: the slot holds values of the dtype
        std::memcpy(result, parts, sizeof(T));
    });
}

void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out)
{
    cuda::activate(e);
    if (outer <= 0 || inner <= 0) return;
    if (outer == 1 && inner == 1) {
        double v[2];
        Scratch scratch(kScratchBytes + sizeof v, cuda::stream_of(e));
        double *slot = reinterpret_cast<double *>(scratch.as<char>() + kScratchBytes);
        norm_partial(e, dt, kind, p, n, x, scratch.as<void>(), slot);
        copy_to_host(e, slot, 2, v);
        *out = v[0];
        return;
    }
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        with_norm(kind, p, [&](double init, auto f, auto op) {
            norm_rows(e, outer, n, inner, static_cast<const T *>(x), init, f, op, out);
        });
    });
}

size_t reduction_scratch_bytes() { return kScratchBytes; }

void dot(const Exec &e, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *scratch, double *slot)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        dot_slot<T>(e, n, static_cast<const T *>(x), static_cast<const T *>(y), conjugate, scratch, slot);
    });
}

void norm_partial(const Exec &e, DType dt, NormKind kind, double p, int64_t n, const void *x, void *scratch,
                  double *slot)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        norm_slot<T>(e, kind, p, n, static_cast<const T *>(x), scratch, slot);
    });
}

void collect(const Exec &e, const double *slots, int64_t count, double *host)
{
    cuda::activate(e);
    copy_to_host(e, slots, count, host);
}

void threshold(const Exec &e, DType dt, const el::ThresholdArgs &a, int64_t n, void *x)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        launch_map(e, n, Thresh<T>{static_cast<T *>(x), a}, "threshold kernel");
    });
}

void group_add(const Exec &e, DType dt, int64_t n, const void *x, bool first, void *n2)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        using R = typename Parts<T>::real;
        launch_map(e, n, GroupAdd<T>{static_cast<const T *>(x), static_cast<R *>(n2), first}, "group_add kernel");
    });
}

void group_scale(const Exec &e, DType dt, Group kind, double t, int64_t n, const void *n2, const void *x, void *y)
{
    cuda::activate(e);
    dispatch(dt, [&](auto z) {
        using T = decltype(z);
        using R = typename Parts<T>::real;
        launch_map(e, n, GroupScale<T>{static_cast<const T *>(x), static_cast<T *>(y), static_cast<const R *>(n2), kind, R(t)},
                   "group_scale kernel");
    });
}

void group_norm(const Exec &e, DType rdt, int64_t n, void *n2)
{
    cuda::activate(e);
    if (rdt == DType::f32) launch_map(e, n, Sqrt<float>{static_cast<float *>(n2)}, "group_norm kernel");
    else launch_map(e, n, Sqrt<double>{static_cast<double *>(n2)}, "group_norm kernel");
}

void box(const Exec &e, DType dt, bool mark, double lo, double hi, int64_t n, const void *x, void *y)
{
    cuda::activate(e);
    if (dt == DType::f32)
        launch_map(e, n, BoxMap<float>{static_cast<const float *>(x), static_cast<float *>(y), mark, lo, hi}, "box kernel");
    else
        launch_map(e, n, BoxMap<double>{static_cast<const double *>(x), static_cast<double *>(y), mark, lo, hi},
                   "box kernel");
}

void stencil(const Exec &e, DType dt, const StencilPlan &p, const void *x, const void *ghost_before,
             const void *ghost_after, int64_t r0, int64_t r1, bool accumulate, void *y)
{
    cuda::activate(e);
    dispatch(dt, [&](auto t) {
        using T = decltype(t);
        StencilArgs<T> a{p, el::stencil_geom(p), static_cast<const T *>(x), static_cast<const T *>(ghost_before),
                         static_cast<const T *>(ghost_after), static_cast<T *>(y), 0, 0, accumulate};
        a.first = r0 * a.g.row_len;
        a.count = (r1 - r0) * a.g.row_len;
        if (a.count <= 0) return;
        const int64_t blocks = std::min((a.count + kThreads - 1) / kThreads, kMaxGrid);
        const cudaStream_t s = cuda::stream_of(e);
        if (a.first + a.count <= int64_t(UINT32_MAX))
            PLM_LAUNCH(unsigned(blocks), kThreads, 0, s, stencil_kernel<T, uint32_t>)(a);
        else
            PLM_LAUNCH(unsigned(blocks), kThreads, 0, s, stencil_kernel<T, uint64_t>)(a);
        cuda::check(cudaGetLastError(), "stencil kernel");
    });
}

void copy_slab(const Exec &e, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count)
{
    // A 3-D box: one memcpy when the slab is contiguous in both, else one 2-D memcpy.
    const int64_t ss[3] = {outer, src_n, inner}, s0[3] = {0, src_start, 0};
    const int64_t ds[3] = {outer, dst_n, inner}, d0[3] = {0, dst_start, 0};
    const int64_t box[3] = {outer, count, inner};
    copy_box(e, dt, 3, src, ss, s0, dst, ds, d0, box);
}

void copy_box(const Exec &e, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box)
{
    cuda::activate(e);
    PLM_REQUIRE(ndim >= 0 && ndim <= PLM_MAX_NDIM, PLM_ERR_INTERNAL, "a box copy of %d dimensions", ndim);
    for (int d = 0; d < ndim; ++d)
        if (box[d] <= 0) return;
    const size_t es = dtype_size(dt);
    // C-order strides, innermost first; the starts become base offsets.
    int64_t sstride = 1, dstride = 1, soff = 0, doff = 0;
    int64_t len[PLM_MAX_NDIM], ss[PLM_MAX_NDIM], ds[PLM_MAX_NDIM];
    for (int d = ndim - 1; d >= 0; --d) {
        len[d] = box[d];
        ss[d] = sstride;
        ds[d] = dstride;
        soff += src_start[d] * sstride;
        doff += dst_start[d] * dstride;
        sstride *= src_shape[d];
        dstride *= dst_shape[d];
    }
    Box b;
    for (int d = 0; d < ndim; ++d) {
        if (len[d] == 1 && d < ndim - 1) continue;  // the innermost stays: memcpy paths want unit stride
        const int k = b.nd - 1;
        if (k >= 0 && b.sstride[k] == len[d] * ss[d] && b.dstride[k] == len[d] * ds[d]) {
            b.len[k] *= len[d];  // contiguous after the previous kept dim in both arrays
            b.sstride[k] = ss[d];
            b.dstride[k] = ds[d];
            continue;
        }
        b.len[b.nd] = len[d];
        b.sstride[b.nd] = ss[d];
        b.dstride[b.nd] = ds[d];
        ++b.nd;
    }
    copy_strided(e, es, b, static_cast<const char *>(src) + size_t(soff) * es, static_cast<char *>(dst) + size_t(doff) * es);
}

}  // namespace plm::kernels::device
