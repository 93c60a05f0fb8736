#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include <cblas.h>

#include "kernels/kernels.hpp"

namespace plm::kernels {

namespace {

void require_host(Space s)
{
    PLM_REQUIRE(s != Space::device, PLM_ERR_BACKEND_UNAVAILABLE,
                "device kernels are not in this build (host-only); device arrays arrive with the CUDA build");
}

template <typename T> const T &val(const void *p) { return *static_cast<const T *>(p); }

// CBLAS takes int counts: longer vectors go in chunks.
constexpr int64_t kBlasChunk = INT_MAX / 2;

template <typename F> void chunked(int64_t n, F &&f)
{
    for (int64_t off = 0; off < n; off += kBlasChunk) f(off, static_cast<int>(std::min(kBlasChunk, n - off)));
}

// A plain loop: the compiler vectorises it, and it streams as fast as a triad (OpenBLAS's
// axpby was up to 2x slower on cache-sized vectors).
template <typename T> void loop_axpby(int64_t n, T a, const T *x, T b, T *y)
{
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
}

template <typename T> void blas_scal(int64_t n, T a, T *x)
{
    chunked(n, [&](int64_t o, int m) {
        if constexpr (std::is_same_v<T, float>) cblas_sscal(m, a, x + o, 1);
        else if constexpr (std::is_same_v<T, double>) cblas_dscal(m, a, x + o, 1);
        else if constexpr (std::is_same_v<T, std::complex<float>>) cblas_cscal(m, &a, x + o, 1);
        else cblas_zscal(m, &a, x + o, 1);
    });
}

template <typename T> T blas_dot(int64_t n, const T *x, const T *y, bool conjugate)
{
    T acc{};
    chunked(n, [&](int64_t o, int m) {
        if constexpr (std::is_same_v<T, float>) {
            acc += static_cast<float>(cblas_dsdot(m, x + o, 1, y + o, 1));  // double accumulation
        } else if constexpr (std::is_same_v<T, double>) {
            acc += cblas_ddot(m, x + o, 1, y + o, 1);
        } else if constexpr (std::is_same_v<T, std::complex<float>>) {
            T r;
            if (conjugate) cblas_cdotc_sub(m, x + o, 1, y + o, 1, &r);
            else cblas_cdotu_sub(m, x + o, 1, y + o, 1, &r);
            acc += r;
        } else {
            T r;
            if (conjugate) cblas_zdotc_sub(m, x + o, 1, y + o, 1, &r);
            else cblas_zdotu_sub(m, x + o, 1, y + o, 1, &r);
            acc += r;
        }
    });
    return acc;
}

template <typename T> double abs2(T v)
{
    if constexpr (is_complex_v<T>) return static_cast<double>(std::norm(v));
    else return static_cast<double>(v) * static_cast<double>(v);
}

template <typename T> double absd(T v) { return static_cast<double>(std::abs(v)); }

// Four independent accumulators keep the reduction streaming instead of waiting on one
// dependency chain.
template <typename T, typename F, typename R> double reduce4(const T *x, int64_t n, double init, F f, R r)
{
    double a0 = init, a1 = init, a2 = init, a3 = init;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a0 = r(a0, f(x[i]));
        a1 = r(a1, f(x[i + 1]));
        a2 = r(a2, f(x[i + 2]));
        a3 = r(a3, f(x[i + 3]));
    }
    for (; i < n; ++i) a0 = r(a0, f(x[i]));
    return r(r(a0, a1), r(a2, a3));
}

// One contiguous run: the common case of a norm over all elements.
template <typename T> double reduce_run(NormKind kind, double p, const T *x, int64_t n)
{
    auto plus = [](double a, double b) { return a + b; };
    switch (kind) {
    case NormKind::pow_sum:
        if (p == 2.0) {
            if constexpr (is_complex_v<T>) return reduce4(x, n, 0.0, [](T v) { return abs2(v); }, plus);
            else return static_cast<double>(blas_dot<T>(n, x, x, false));  // as numpy: sqrt(x.x)
        }
        if (p == 1.0) return reduce4(x, n, 0.0, [](T v) { return absd(v); }, plus);
        return reduce4(x, n, 0.0, [p](T v) { return std::pow(absd(v), p); }, plus);
    case NormKind::max_abs:
        return reduce4(x, n, 0.0, [](T v) { return absd(v); }, [](double a, double b) { return a < b ? b : a; });
    case NormKind::min_abs:
        return reduce4(x, n, std::numeric_limits<double>::infinity(), [](T v) { return absd(v); },
                       [](double a, double b) { return b < a ? b : a; });
    case NormKind::count_nonzero:
        return reduce4(x, n, 0.0, [](T v) { return v != T{} ? 1.0 : 0.0; }, plus);
    }
    return 0.0;
}

template <typename T>
void norm_partial_t(NormKind kind, double p, int64_t outer, int64_t n, int64_t inner, const T *x, double *out)
{
    if (inner == 1) {
        for (int64_t o = 0; o < outer; ++o) out[o] = reduce_run(kind, p, x + o * n, n);
        return;
    }
    // Strided reduction: accumulate whole rows, so the inner loop stays contiguous.
    const double init = kind == NormKind::min_abs ? std::numeric_limits<double>::infinity() : 0.0;
    std::fill(out, out + outer * inner, init);
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t k = 0; k < n; ++k) {
            const T *row = x + (o * n + k) * inner;
            double *acc = out + o * inner;
            switch (kind) {
            case NormKind::pow_sum:
                if (p == 2.0) for (int64_t i = 0; i < inner; ++i) acc[i] += abs2(row[i]);
                else if (p == 1.0) for (int64_t i = 0; i < inner; ++i) acc[i] += absd(row[i]);
                else for (int64_t i = 0; i < inner; ++i) acc[i] += std::pow(absd(row[i]), p);
                break;
            case NormKind::max_abs:
                for (int64_t i = 0; i < inner; ++i) acc[i] = std::max(acc[i], absd(row[i]));
                break;
            case NormKind::min_abs:
                for (int64_t i = 0; i < inner; ++i) acc[i] = std::min(acc[i], absd(row[i]));
                break;
            case NormKind::count_nonzero:
                for (int64_t i = 0; i < inner; ++i) acc[i] += row[i] != T{} ? 1.0 : 0.0;
                break;
            }
        }
    }
}

}  // namespace

void fill(Space s, DType dt, int64_t n, const void *value, void *x)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        std::fill_n(static_cast<T *>(x), n, val<T>(value));
    });
}

void copy(Space s, DType dt, int64_t n, const void *x, void *y)
{
    require_host(s);
    if (n > 0 && x != y) std::memmove(y, x, static_cast<size_t>(n) * dtype_size(dt));
}

void scale(Space s, DType dt, int64_t n, const void *alpha, void *x)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        blas_scal<T>(n, val<T>(alpha), static_cast<T *>(x));
    });
}

void axpby(Space s, DType dt, int64_t n, const void *alpha, const void *x, const void *beta, void *y)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        loop_axpby<T>(n, val<T>(alpha), static_cast<const T *>(x), val<T>(beta), static_cast<T *>(y));
    });
}

void binary(Space s, DType dt, Binary op, int64_t n, const void *x, const void *y, void *z)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        const T *a = static_cast<const T *>(x);
        const T *b = static_cast<const T *>(y);
        T *c = static_cast<T *>(z);
        switch (op) {
        case Binary::add: for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i]; break;
        case Binary::sub: for (int64_t i = 0; i < n; ++i) c[i] = a[i] - b[i]; break;
        case Binary::mul: for (int64_t i = 0; i < n; ++i) c[i] = a[i] * b[i]; break;
        }
    });
}

void conj(Space s, DType dt, int64_t n, const void *x, void *y)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        const T *a = static_cast<const T *>(x);
        T *b = static_cast<T *>(y);
        for (int64_t i = 0; i < n; ++i) b[i] = conj_if(a[i]);
    });
}

void dot(Space s, DType dt, int64_t n, const void *x, const void *y, bool conjugate, void *result)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        *static_cast<T *>(result) = blas_dot<T>(n, static_cast<const T *>(x), static_cast<const T *>(y), conjugate);
    });
}

void norm_partial(Space s, DType dt, NormKind kind, double p, int64_t outer, int64_t n, int64_t inner,
                  const void *x, double *out)
{
    require_host(s);
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        norm_partial_t<T>(kind, p, outer, n, inner, static_cast<const T *>(x), out);
    });
}

void copy_slab(Space s, DType dt, int64_t outer, int64_t inner, const void *src, int64_t src_n, int64_t src_start,
               void *dst, int64_t dst_n, int64_t dst_start, int64_t count)
{
    require_host(s);
    if (count <= 0 || inner <= 0) return;
    const size_t es = dtype_size(dt);
    const size_t run = static_cast<size_t>(count * inner) * es;
    for (int64_t o = 0; o < outer; ++o) {
        const char *from = static_cast<const char *>(src) + static_cast<size_t>((o * src_n + src_start) * inner) * es;
        char *to = static_cast<char *>(dst) + static_cast<size_t>((o * dst_n + dst_start) * inner) * es;
        std::memcpy(to, from, run);
    }
}

namespace {
// Recursive over dimensions; the last one is one contiguous run.
void copy_box_dim(int d, int ndim, size_t es, const char *src, const int64_t *ss, const int64_t *s0, char *dst,
                  const int64_t *ds, const int64_t *d0, const int64_t *box)
{
    int64_t sstride = 1, dstride = 1;
    for (int k = d + 1; k < ndim; ++k) {
        sstride *= ss[k];
        dstride *= ds[k];
    }
    src += static_cast<size_t>(s0[d] * sstride) * es;
    dst += static_cast<size_t>(d0[d] * dstride) * es;
    if (d == ndim - 1) {
        std::memcpy(dst, src, static_cast<size_t>(box[d]) * es);
        return;
    }
    for (int64_t i = 0; i < box[d]; ++i)
        copy_box_dim(d + 1, ndim, es, src + static_cast<size_t>(i * sstride) * es, ss, s0,
                     dst + static_cast<size_t>(i * dstride) * es, ds, d0, box);
}
}  // namespace

void copy_box(Space s, DType dt, int ndim, const void *src, const int64_t *src_shape, const int64_t *src_start,
              void *dst, const int64_t *dst_shape, const int64_t *dst_start, const int64_t *box)
{
    require_host(s);
    for (int d = 0; d < ndim; ++d)
        if (box[d] <= 0) return;
    copy_box_dim(0, ndim, dtype_size(dt), static_cast<const char *>(src), src_shape, src_start,
                 static_cast<char *>(dst), dst_shape, dst_start, box);
}

}  // namespace plm::kernels
