// Fredholm1 (PyLops-MPI's MPIFredholm1): y[k] = G[k] x[k] for every slice k, G split along its
// slices over the ranks, x and y BROADCAST. Each rank multiplies its own slices (one gemm
// each) and an allgatherv of the per-slice results fills y on every rank; the adjoint is the
// same with G^H. Any rank may own 0, 1 or many slices (PyLops-MPI refuses a rank with one).
// The slice products (Slices) are MDC's core too (mdc.cpp). Device data are computed on the
// device: G uploaded once per device, one strided-batched cuBLAS gemm for this rank's slices,
// the allgatherv through the communicator's device backend.
#include <climits>
#include <complex>
#include <cstring>

#include "ops/host_blas.hpp"
#include "ops/signal/slices.hpp"

namespace plm::ops {

namespace {

char *at(const void *p, int64_t elems, DType dt)
{
    return static_cast<char *>(const_cast<void *>(p)) + elems * static_cast<int64_t>(dtype_size(dt));
}

// dst[k] = scale * (conj ? conj(src[k]) : src[k]) for n elements of T.
template <typename T> void scaled_copy(const T *src, T *dst, int64_t n, double scale, bool conj)
{
    for (int64_t k = 0; k < n; ++k) dst[k] = (conj ? conj_if(src[k]) : src[k]) * static_cast<real_t<T>>(scale);
}

// gh[s] = g[s]^H for ns slices of rows x cols.
template <typename T> void adjoint_slices(const T *g, T *gh, int64_t ns, int64_t rows, int64_t cols)
{
    for (int64_t s = 0; s < ns; ++s, g += rows * cols, gh += rows * cols)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) gh[j * rows + i] = conj_if(g[i * cols + j]);
}

}  // namespace

Slices::Slices(DType dt, int64_t nsl, int64_t nx, int64_t ny, int64_t nz, const void *g, int64_t g_bytes,
               bool save_gt, double scale, bool conj)
    : dt_(dt), nsl_(nsl), nx_(nx), ny_(ny), nz_(nz)
{
    PLM_REQUIRE(dt == DType::f32 || dt == DType::f64 || is_complex(dt), PLM_ERR_INVALID_ARG,
                "G takes float32, float64, complex64 or complex128, not %s", dtype_name(dt));
    PLM_REQUIRE(nsl >= 0 && nx >= 0 && ny >= 0 && nz >= 0, PLM_ERR_INVALID_ARG,
                "negative sizes: slices %lld, nx %lld, ny %lld, nz %lld", static_cast<long long>(nsl),
                static_cast<long long>(nx), static_cast<long long>(ny), static_cast<long long>(nz));
    PLM_REQUIRE(nx <= INT_MAX && ny <= INT_MAX && nz <= INT_MAX, PLM_ERR_NOT_SUPPORTED,
                "slices are limited to INT_MAX rows and columns (CBLAS int sizes)");
    const int64_t n = checked_product({nsl, nx, ny}, "this rank's slices of G");
    PLM_REQUIRE(g || n == 0, PLM_ERR_INVALID_ARG, "G is NULL but this rank's %lld slices hold %lld elements",
                static_cast<long long>(nsl), static_cast<long long>(n));
    const size_t bytes = require_buffer_bytes("G", g_bytes, n, dt);
    g_ = Buffer::allocate(Space::host, bytes);
    if (save_gt) gh_ = Buffer::allocate(Space::host, bytes);
    dev_ = std::make_shared<ByDevice>();
    if (n == 0) return;
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        scaled_copy(static_cast<const T *>(g), static_cast<T *>(g_.data()), n, scale, conj);
        if (save_gt)
            adjoint_slices(static_cast<const T *>(g_.data()), static_cast<T *>(gh_.data()), nsl, nx, ny);
    });
}

void Slices::plan(const std::vector<int64_t> &counts, int rank)
{
    total_ = checked_sum(counts, "the slices summed over the ranks");
    checked_product({total_, std::max(nx_, ny_), nz_}, "the operator's vectors");
    const int64_t per[2] = {nx_ * nz_, ny_ * nz_};  // result elements per slice: forward, adjoint
    int64_t start = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
        if (static_cast<int>(r) == rank) first_ = start;
        for (int d = 0; d < 2; ++d) {
            counts_[d].push_back(counts[r] * per[d]);
            displs_[d].push_back(start * per[d]);
        }
        start += counts[r];
    }
}

void Slices::prepare(const Exec &e, SlicesWork &w) const
{
    if (e.space != Space::device) return;
#ifdef PLM_HAVE_CUDA
    {
        std::lock_guard<std::mutex> g(dev_->lock);
        std::shared_ptr<const DeviceKernel> &slot = dev_->kernels[e.device];
        if (!slot) {
            use_device(e.device);
            auto k = std::make_shared<DeviceKernel>();
            k->g = Buffer::allocate(Space::device, g_.bytes());
            if (g_.bytes()) copy_bytes(Space::device, k->g.data(), Space::host, g_.data(), g_.bytes(), e.stream);
            if (gh_.data()) {
                k->gh = Buffer::allocate(Space::device, gh_.bytes());
                if (gh_.bytes()) copy_bytes(Space::device, k->gh.data(), Space::host, gh_.data(), gh_.bytes(), e.stream);
            }
            slot = std::move(k);
        }
        w.dev = slot;
    }
    w.blas = std::make_unique<BlasHandle>(e.device);
#else
    (void)w;
    PLM_FAIL(PLM_ERR_BACKEND_UNAVAILABLE, "device memory is not in this build (host-only: built without CUDA)");
#endif
}

void Slices::multiply(const Exec &e, bool adjoint, const void *in, void *out, const SlicesWork &w) const
{
    const int64_t rin = adjoint ? nx_ : ny_, rout = adjoint ? ny_ : nx_, f0 = first_;
    if (e.space == Space::device) {
#ifdef PLM_HAVE_CUDA
        const void *xs = at(in, f0 * rin * nz_, dt_);
        void *ys = at(out, f0 * rout * nz_, dt_);
        const int64_t gstep = nx_ * ny_;
        if (!adjoint)
            device_gemm_batched(*w.blas, e, dt_, false, nx_, nz_, ny_, w.dev->g.data(), ny_, gstep, xs, ny_ * nz_, ys,
                                nx_ * nz_, nsl_);
        else if (w.dev->gh.data())
            device_gemm_batched(*w.blas, e, dt_, false, ny_, nz_, nx_, w.dev->gh.data(), nx_, gstep, xs, nx_ * nz_, ys,
                                ny_ * nz_, nsl_);
        else
            device_gemm_batched(*w.blas, e, dt_, true, ny_, nz_, nx_, w.dev->g.data(), ny_, gstep, xs, nx_ * nz_, ys,
                                ny_ * nz_, nsl_);
        return;
#endif
    }
    (void)w;
    for (int64_t s = 0; s < nsl_; ++s) {
        const void *xs = at(in, (f0 + s) * rin * nz_, dt_);
        void *ys = at(out, (f0 + s) * rout * nz_, dt_);
        const void *gs = at(g_.data(), s * nx_ * ny_, dt_);
        if (!adjoint)
            host_gemm(dt_, false, nx_, nz_, ny_, gs, ny_, xs, false, ys);
        else if (gh_.data())
            host_gemm(dt_, false, ny_, nz_, nx_, at(gh_.data(), s * nx_ * ny_, dt_), nx_, xs, false, ys);
        else
            host_gemm(dt_, true, ny_, nz_, nx_, gs, ny_, xs, false, ys);
    }
}

void Slices::gather(const comm::Communicator &c, const Exec &e, bool adjoint, void *out) const
{
    const int64_t rout = adjoint ? ny_ : nx_, f0 = first_;
    const int d = adjoint ? 1 : 0;
    comm::allgatherv(c, e, at(out, f0 * rout * nz_, dt_), out, counts_[d].data(), displs_[d].data(), dt_);
}

namespace {

class Fredholm1 final : public Operator {
public:
    Fredholm1(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, DType dt, Slices s)
        : Operator(dt, std::move(domain), std::move(range)), s_(std::move(s))
    {
    }
    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<SlicesWork>();
        s_.prepare(e, *w);
        reserve_staging(e, s_.gathered());
        return w;
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        // the products are agreed before the gather: a device fault on one rank fails them all
        agree_on(*this, comm(),
                 comm::capture([&] { s_.multiply(e, adjoint, x.data(), y.data(), *static_cast<SlicesWork *>(w)); }),
                 e.space == Space::device);
        s_.gather(comm(), e, adjoint, y.data());
    }

private:
    Slices s_;
};

}  // namespace

Operator::Ptr fredholm1(comm::Agreement &ag, const CommPtr &c, int dtype, int64_t nsl, int64_t nx, int64_t ny,
                        int64_t nz, const void *g, int64_t g_bytes, bool save_gt)
{
    DType dt = DType::f64;
    Slices s;
    ag.check([&] {
        dt = from_public(dtype);
        s = Slices(dt, nsl, nx, ny, nz, g, g_bytes, save_gt);
    });
    for (int64_t v : {int64_t{dtype}, nx, ny, nz}) ag.fold(v);
    const size_t lane = ag.add_gather(nsl);
    ag.run();
    return comm::finish_collective(*c, "op_fredholm1", {}, [&]() -> Operator::Ptr {
        std::vector<int64_t> counts;
        for (int r = 0; r < c->size(); ++r) counts.push_back(ag.gathered(lane, r));
        s.plan(counts, c->rank());
        auto layout = [&](int64_t rows) {
            return vector_layout(c, std::vector<int64_t>(counts.size(), s.total() * rows * nz),
                                 PLM_PARTITION_BROADCAST, {});
        };
        return std::make_shared<Fredholm1>(layout(ny), layout(nx), dt, std::move(s));
    });
}

}  // namespace plm::ops
