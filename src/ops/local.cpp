// The operator base and the local building blocks.
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <cblas.h>

#include "ops/operator.hpp"
#ifdef PLM_HAVE_CUDA
#include "ops/device_blas.hpp"
#endif

namespace plm::ops {

Operator::Operator(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range)
    : dtype_(dt), rows_(plm::product(range->layout().global)), cols_(plm::product(domain->layout().global)),
      domain_(std::move(domain)), range_(std::move(range))
{
}

void Operator::local_apply(bool, const void *, void *) const
{
    PLM_FAIL(PLM_ERR_INVALID_ARG, "a distributed operator cannot be applied to local buffers (use it on arrays)");
}

void Operator::local_apply_device(const Exec &, bool, const void *, void *) const
{
    PLM_FAIL(PLM_ERR_INTERNAL, "this operator has no device path (it runs on host twins)");
}

void Operator::apply(const DistributedArray &, DistributedArray &, bool) const
{
    PLM_FAIL(PLM_ERR_INVALID_ARG,
             "a local operator cannot be applied to distributed arrays: put it in a block-diagonal or a stack");
}

void Operator::apply_parts(const In &x, const Out &y, bool adjoint) const
{
    PLM_REQUIRE(x.size() == 1 && y.size() == 1, PLM_ERR_INTERNAL, "a plain operator applied to stacks");
    apply(*x.front(), *y.front(), adjoint);
}

namespace {
// A host twin of a (device) array; copy_in fills it from the array.
DistributedArray *host_twin(const DistributedArray &a, std::vector<DistributedArray::Ptr> &keep, bool copy_in)
{
    keep.push_back(a.empty_in(Space::host));
    DistributedArray *t = keep.back().get();
    if (copy_in)
        copy_bytes(Space::host, t->data(), a.space(), a.data(),
                   static_cast<size_t>(a.local_size()) * dtype_size(a.dtype()), a.exec().stream);
    return t;
}
}  // namespace

HostStage::HostStage(const Operator::In &x, const Operator::Out &y, bool read_outputs, bool stage)
{
    for (const DistributedArray *a : x)
        in_.push_back(!stage || a->space() == Space::host ? a : host_twin(*a, twins_, true));
    for (DistributedArray *a : y) {
        const bool twin = stage && a->space() != Space::host;
        out_.push_back(twin ? host_twin(*a, twins_, read_outputs) : a);
        device_out_.push_back(twin ? a : nullptr);
    }
}

void HostStage::finish() const
{
    for (size_t i = 0; i < out_.size(); ++i)
        if (DistributedArray *d = device_out_[i])
            copy_bytes(d->space(), d->data(), Space::host, out_[i]->data(),
                       static_cast<size_t>(d->local_size()) * dtype_size(d->dtype()), d->exec().stream);
}

void Operator::check_parts(const In &x, const Out &y, bool adjoint) const
{
    const std::vector<ArrayLayout::Ptr> in = adjoint ? range_parts() : domain_parts(),
                                         out = adjoint ? domain_parts() : range_parts();
    PLM_REQUIRE(x.size() == in.size() && y.size() == out.size(), PLM_ERR_SIZE_MISMATCH,
                "the operator maps %zu to %zu arrays; got stacks of %zu and %zu", in.size(), out.size(), x.size(),
                y.size());
    for (const DistributedArray *a : x)
        PLM_REQUIRE(a->dtype() == dtype_, PLM_ERR_DTYPE_MISMATCH, "operator of %s applied to an array of %s",
                    dtype_name(dtype_), dtype_name(a->dtype()));
    for (const DistributedArray *a : y)
        PLM_REQUIRE(a->dtype() == dtype_, PLM_ERR_DTYPE_MISMATCH, "operator of %s writing an array of %s",
                    dtype_name(dtype_), dtype_name(a->dtype()));
    for (size_t i = 0; i < x.size(); ++i)
        PLM_REQUIRE(x[i]->layout_object()->same_as(*in[i]), PLM_ERR_SIZE_MISMATCH,
                    "input %zu is not on the operator's %s%s (make arrays from plm_op_domain/plm_op_range)", i,
                    adjoint ? "range" : "domain", stacked() ? " part" : "");
    for (size_t i = 0; i < y.size(); ++i)
        PLM_REQUIRE(y[i]->layout_object()->same_as(*out[i]), PLM_ERR_SIZE_MISMATCH,
                    "output %zu is not on the operator's %s%s (make arrays from plm_op_domain/plm_op_range)", i,
                    adjoint ? "domain" : "range", stacked() ? " part" : "");
    for (const DistributedArray *a : x)
        for (const DistributedArray *b : y)
            PLM_REQUIRE(a->data() != b->data() || a->local_size() == 0, PLM_ERR_INVALID_ARG,
                        "the input and output arrays must be different");
}

void agree_on(const Operator &op, const comm::Communicator &c, const std::optional<Error> &local, bool device)
{
    if (!op.may_fail() && !device) {
        if (local) throw *local;  // only an internal error can get here
        return;
    }
    comm::Agreement ag(c, "operator apply");
    ag.add_error(local);
    ag.run();
}

namespace {

void require_blas_size(int64_t rows, int64_t cols)
{
    PLM_REQUIRE(rows <= INT_MAX && cols <= INT_MAX, PLM_ERR_NOT_SUPPORTED,
                "dense blocks are limited to INT_MAX rows and columns (CBLAS int sizes)");
}

class Dense final : public Operator {
public:
    Dense(DType dt, int64_t rows, int64_t cols, const void *a, bool col_major, bool wrap)
        : Operator(dt, rows, cols), col_major_(col_major)
    {
        require_blas_size(rows, cols);
        PLM_REQUIRE(a || rows * cols == 0, PLM_ERR_INVALID_ARG, "dense matrix data is NULL");
        const size_t bytes = checked_bytes(rows * cols, dt, "the dense matrix in bytes");
        if (wrap) {
            data_ = Buffer::wrap(Space::host, const_cast<void *>(a), bytes);
        } else {
            data_ = Buffer::allocate(Space::host, bytes);
            if (bytes) std::memcpy(data_.data(), a, bytes);
        }
    }

#ifdef PLM_HAVE_CUDA
    bool on_device() const override { return true; }
    // The matrix goes to a device at the first apply there, and stays (blocks are shared:
    // operators on communicators of different devices each get their copy). A wrapped matrix
    // is read at that upload only.
    void local_apply_device(const Exec &e, bool adjoint, const void *in, void *out) const override
    {
        std::shared_ptr<const DeviceDense> d;
        {
            std::lock_guard<std::mutex> g(lock_);
            std::shared_ptr<const DeviceDense> &slot = dev_[e.device];
            if (!slot) slot = std::make_shared<DeviceDense>(dtype_, rows_, cols_, data_.data(), col_major_, e.device);
            d = slot;
        }
        d->apply(e, adjoint, in, out);
    }
#endif

    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        const CBLAS_ORDER order = col_major_ ? CblasColMajor : CblasRowMajor;
        const int m = static_cast<int>(rows_), n = static_cast<int>(cols_);
        const int ld = std::max(1, col_major_ ? m : n);
        const void *a = data_.data();
        if (rows_ == 0 || cols_ == 0) {  // BLAS leaves y alone when there is nothing to sum
            const int64_t n_out = adjoint ? cols_ : rows_;
            std::memset(out, 0, static_cast<size_t>(n_out) * dtype_size(dtype_));
            return;
        }
        switch (dtype_) {
        case DType::f32:
            cblas_sgemv(order, adjoint ? CblasTrans : CblasNoTrans, m, n, 1.0f, static_cast<const float *>(a), ld,
                        static_cast<const float *>(in), 1, 0.0f, static_cast<float *>(out), 1);
            break;
        case DType::f64:
            cblas_dgemv(order, adjoint ? CblasTrans : CblasNoTrans, m, n, 1.0, static_cast<const double *>(a), ld,
                        static_cast<const double *>(in), 1, 0.0, static_cast<double *>(out), 1);
            break;
        case DType::c64: {
            const float one[2] = {1, 0}, zero[2] = {0, 0};
            cblas_cgemv(order, adjoint ? CblasConjTrans : CblasNoTrans, m, n, one, a, ld, in, 1, zero, out, 1);
            break;
        }
        case DType::c128: {
            const double one[2] = {1, 0}, zero[2] = {0, 0};
            cblas_zgemv(order, adjoint ? CblasConjTrans : CblasNoTrans, m, n, one, a, ld, in, 1, zero, out, 1);
            break;
        }
        default: PLM_FAIL(PLM_ERR_INTERNAL, "dense operator of %s", dtype_name(dtype_));
        }
    }

private:
    bool col_major_;
    Buffer data_;
#ifdef PLM_HAVE_CUDA
    mutable std::mutex lock_;
    mutable std::map<int, std::shared_ptr<const DeviceDense>> dev_;  // by device
#endif
};

class Diagonal final : public Operator {
public:
    Diagonal(DType dt, int64_t n, const void *d) : Operator(dt, n, n)
    {
        PLM_REQUIRE(d || n == 0, PLM_ERR_INVALID_ARG, "diagonal data is NULL");
        const size_t bytes = checked_bytes(n, dt, "the diagonal in bytes");
        d_ = Buffer::allocate(Space::host, bytes);
        dc_ = Buffer::allocate(Space::host, bytes);
        if (bytes) std::memcpy(d_.data(), d, bytes);
        kernels::conj(Exec{}, dt, n, d_.data(), dc_.data());  // the adjoint's diagonal
    }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        kernels::binary(Exec{}, dtype_, kernels::Binary::mul, rows_, adjoint ? dc_.data() : d_.data(), in, out);
    }

private:
    Buffer d_, dc_;
};

class Identity final : public Operator {
public:
    Identity(DType dt, int64_t n) : Operator(dt, n, n) {}
    void local_apply(bool, const void *in, void *out) const override { kernels::copy(Exec{}, dtype_, rows_, in, out); }
};

class Zero final : public Operator {
public:
    Zero(DType dt, int64_t rows, int64_t cols) : Operator(dt, rows, cols) {}
    void local_apply(bool adjoint, const void *, void *out) const override
    {
        std::memset(out, 0, static_cast<size_t>(adjoint ? cols_ : rows_) * dtype_size(dtype_));
    }
};

class Callback final : public Operator {
public:
    Callback(DType dt, int64_t rows, int64_t cols, CallbackFn matvec, CallbackFn rmatvec, void *ctx,
             void (*destroy)(void *))
        : Operator(dt, rows, cols), matvec_(matvec), rmatvec_(rmatvec), ctx_(ctx), destroy_(destroy)
    {
    }
    ~Callback() override
    {
        if (destroy_) destroy_(ctx_);
    }
    bool may_fail() const override { return true; }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        CallbackFn f = adjoint ? rmatvec_ : matvec_;
        PLM_REQUIRE(f, PLM_ERR_NOT_SUPPORTED, "this callback operator has no %s function",
                    adjoint ? "rmatvec" : "matvec");
        const int64_t n_in = adjoint ? rows_ : cols_, n_out = adjoint ? cols_ : rows_;
        const int rc = f(ctx_, in, n_in, out, n_out, to_public(dtype_), PLM_MEMORY_HOST);
        PLM_REQUIRE(rc == 0, PLM_ERR_CALLBACK, "the user %s callback returned %d", adjoint ? "rmatvec" : "matvec", rc);
    }

private:
    CallbackFn matvec_, rmatvec_;
    void *ctx_;
    void (*destroy_)(void *);
};

void require_local_shape(int64_t rows, int64_t cols)
{
    PLM_REQUIRE(rows >= 0 && cols >= 0, PLM_ERR_INVALID_ARG, "operator shape %lld x %lld is negative",
                static_cast<long long>(rows), static_cast<long long>(cols));
    checked_mul(rows, cols, "the operator's element count (rows x cols)");
}

}  // namespace

Operator::Ptr dense(DType dt, int64_t rows, int64_t cols, const void *a, bool col_major, bool wrap)
{
    require_local_shape(rows, cols);
    return std::make_shared<Dense>(dt, rows, cols, a, col_major, wrap);
}

Operator::Ptr diagonal(DType dt, int64_t n, const void *d)
{
    require_local_shape(n, n);
    return std::make_shared<Diagonal>(dt, n, d);
}

Operator::Ptr identity(DType dt, int64_t n)
{
    require_local_shape(n, n);
    return std::make_shared<Identity>(dt, n);
}

Operator::Ptr zero(DType dt, int64_t rows, int64_t cols)
{
    require_local_shape(rows, cols);
    return std::make_shared<Zero>(dt, rows, cols);
}

Operator::Ptr callback(DType dt, int64_t rows, int64_t cols, CallbackFn matvec, CallbackFn rmatvec, void *ctx,
                       void (*destroy)(void *))
{
    require_local_shape(rows, cols);
    PLM_REQUIRE(matvec || rmatvec, PLM_ERR_INVALID_ARG, "a callback operator needs matvec or rmatvec");
    return std::make_shared<Callback>(dt, rows, cols, matvec, rmatvec, ctx, destroy);
}

}  // namespace plm::ops
