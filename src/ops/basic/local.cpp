// The operator base, Works and their cache, host staging of mixed operands, and the local
// building blocks (dense, diagonal, identity, zero, user callback) on host and device data.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <cblas.h>

#include "core/alloc.hpp"
#include "core/sim.hpp"
#include "ops/operator.hpp"
#ifdef PLM_HAVE_CUDA
#include "ops/device_blas.hpp"
#endif

namespace plm::ops {

Operator::Operator(DType dt, int64_t rows, int64_t cols) : dtype_(dt), rows_(rows), cols_(cols)
{
    cached_.reserve(kCached);
}

Operator::Operator(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range)
    : dtype_(dt), rows_(plm::product(range->layout().global)), cols_(plm::product(domain->layout().global)),
      domain_(std::move(domain)), range_(std::move(range))
{
    cached_.reserve(kCached);
}

bool Operator::native(Space) const { return true; }

void Operator::reserve_staging(const Exec &e, int64_t elems) const
{
    comm().reserve(e.space, checked_bytes(elems, dtype_, "staged messages in bytes"));
}

WorkPtr Operator::make_work(const Exec &) const { return nullptr; }

void Operator::local_apply(const Exec &, bool, const void *, void *, Work *) const
{
    PLM_FAIL(PLM_ERR_INVALID_ARG, "a distributed operator cannot be applied to local buffers (use it on arrays)");
}

void Operator::apply(const DistributedArray &, DistributedArray &, bool, Work *) const
{
    PLM_FAIL(PLM_ERR_INVALID_ARG,
             "a local operator cannot be applied to distributed arrays: put it in a block-diagonal or a stack");
}

void Operator::apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const
{
    PLM_REQUIRE(x.size() == 1 && y.size() == 1, PLM_ERR_INTERNAL, "a plain operator applied to stacks");
    apply(*x.front(), *y.front(), adjoint, w);
}

void Operator::check_parts(const In &x, const Out &y, bool adjoint, bool dtypes) const
{
    const size_t nin = nparts(adjoint), nout = nparts(!adjoint);
    PLM_REQUIRE(x.size() == nin && y.size() == nout, PLM_ERR_SIZE_MISMATCH,
                "the operator maps %zu to %zu arrays; got stacks of %zu and %zu", nin, nout, x.size(), y.size());
    for (const DistributedArray *a : x)
        PLM_REQUIRE(!dtypes || a->dtype() == dtype_, PLM_ERR_DTYPE_MISMATCH, "operator of %s applied to an array of %s",
                    dtype_name(dtype_), dtype_name(a->dtype()));
    for (const DistributedArray *a : y)
        PLM_REQUIRE(!dtypes || a->dtype() == dtype_, PLM_ERR_DTYPE_MISMATCH, "operator of %s writing an array of %s",
                    dtype_name(dtype_), dtype_name(a->dtype()));
    for (size_t i = 0; i < x.size(); ++i)
        PLM_REQUIRE(x[i]->layout_object()->same_as(*part(adjoint, i)), PLM_ERR_SIZE_MISMATCH,
                    "input %zu is not on the operator's %s%s (make arrays from plm_op_domain/plm_op_range)", i,
                    adjoint ? "range" : "domain", stacked() ? " part" : "");
    for (size_t i = 0; i < y.size(); ++i)
        PLM_REQUIRE(y[i]->layout_object()->same_as(*part(!adjoint, i)), PLM_ERR_SIZE_MISMATCH,
                    "output %zu is not on the operator's %s%s (make arrays from plm_op_domain/plm_op_range)", i,
                    adjoint ? "domain" : "range", stacked() ? " part" : "");
    for (const DistributedArray *a : x)
        for (const DistributedArray *b : y)
            PLM_REQUIRE(a->data() != b->data() || a->local_size() == 0, PLM_ERR_INVALID_ARG,
                        "the input and output arrays must be different");
}

WorkPtr parts_work(const std::vector<Operator::Ptr> &parts, const Exec &e)
{
    auto w = std::make_unique<PartsWork>();
    for (const Operator::Ptr &p : parts) w->parts.push_back(p->make_work(e));
    return w;
}

Work *part_of(Work *w, size_t i) { return static_cast<PartsWork *>(w)->parts[i].get(); }

// ---- leases ---------------------------------------------------------------------------------

namespace {
bool same_place(const Exec &a, const Exec &b) { return a.space == b.space && a.device == b.device; }
}  // namespace

WorkLease::WorkLease(const Operator &op, const Exec &e) : op_(&op), exec_(e)
{
    {
        std::lock_guard<std::mutex> g(op.cache_lock_);
        auto &c = op.cached_;
        for (auto it = c.begin(); it != c.end(); ++it)
            if (same_place(it->first, e)) {
                work_ = std::move(it->second);
                c.erase(it);
                return;
            }
    }
    work_ = op.make_work(e);
}

WorkLease::~WorkLease() { give_back(); }

WorkLease::WorkLease(WorkLease &&o) noexcept : op_(o.op_), exec_(o.exec_), work_(std::move(o.work_)) { o.op_ = nullptr; }

WorkLease &WorkLease::operator=(WorkLease &&o) noexcept
{
    if (this != &o) {
        give_back();
        op_ = o.op_;
        exec_ = o.exec_;
        work_ = std::move(o.work_);
        o.op_ = nullptr;
    }
    return *this;
}

void WorkLease::give_back() noexcept
{
    if (!op_ || !work_) return;
    std::lock_guard<std::mutex> g(op_->cache_lock_);
    // Within the reserved capacity: never allocates. A full cache drops the Work.
    if (op_->cached_.size() < Operator::kCached) op_->cached_.emplace_back(exec_, std::move(work_));
    work_.reset();
    op_ = nullptr;
}

// ---- host staging of mixed operands ---------------------------------------------------------

namespace {
std::atomic<int64_t> g_twins{0};

// A host twin of a (device) array; copy_in fills it from the array.
DistributedArray *host_twin(const DistributedArray &a, std::vector<DistributedArray::Ptr> &keep, bool copy_in)
{
    keep.push_back(a.empty_in(Space::host));
    count_twin();
    DistributedArray *t = keep.back().get();
    if (copy_in)
        copy_bytes(Space::host, t->data(), a.space(), a.data(),
                   static_cast<size_t>(a.local_size()) * dtype_size(a.dtype()), a.exec().stream);
    return t;
}
}  // namespace

int64_t twins_made() { return g_twins.load(); }
void count_twin() { ++g_twins; }

HostStage::HostStage(const Operator::In &x, const Operator::Out &y, bool read_outputs) : x_(&x), y_(&y)
{
    bool host = false, device = false;
    for (const DistributedArray *a : x) (a->space() == Space::host ? host : device) = true;
    for (const DistributedArray *a : y) (a->space() == Space::host ? host : device) = true;
    space_ = device && !host ? Space::device : Space::host;
    const bool stage = host && device;  // one space: the operator runs there, no copies
    staged_ = stage;
    if (!stage) return;
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
    if (!staged_) return;
    for (size_t i = 0; i < out_.size(); ++i)
        if (DistributedArray *d = device_out_[i])
            copy_bytes(d->space(), d->data(), Space::host, out_[i]->data(),
                       static_cast<size_t>(d->local_size()) * dtype_size(d->dtype()), d->exec().stream);
}

namespace {

// The dtype conversions of an apply with operands of other dtypes than the operator's
// (ops::apply's rule): the widened inputs, or the real and imaginary parts of complex data on
// a real operator, made before the agreement; run() applies through them.
class Promotion {
public:
    enum Mode { none, widen, split };

    // The mode for inputs of dx and outputs of dy on an operator of dt (DTYPE_MISMATCH when
    // no promotion gives them).
    static Mode mode_for(DType dt, DType dx, DType dy)
    {
        const DType c = promote(dt, dx);
        PLM_REQUIRE(dy == c, PLM_ERR_DTYPE_MISMATCH,
                    "an operator of %s applied to %s data gives %s; the output is %s", dtype_name(dt), dtype_name(dx),
                    dtype_name(c), dtype_name(dy));
        if (c == dt) return dx == dt ? none : widen;
        PLM_REQUIRE(!is_complex(dt) && is_complex(c) && dtype_real(c) == dt, PLM_ERR_DTYPE_MISMATCH,
                    "an operator of %s applied to %s data would compute in %s (it computes in its own precision: make "
                    "the operator %s, or the data %s)",
                    dtype_name(dt), dtype_name(dx), dtype_name(dtype_real(c)), dtype_name(dtype_real(c)), dtype_name(dt));
        return split;
    }

    Promotion() = default;
    Promotion(const Operator &op, Mode m, const Operator::In &x, const Operator::Out &y) : mode_(m), dt_(op.dtype())
    {
        if (m == none) return;
        const DType c = y.front()->dtype();
        for (const DistributedArray *a : x) {
            if (m == widen || a->dtype() != c) in_c_.push_back(a->empty_like_as(c));  // x widened into c
            if (m == split) {
                re_in_.push_back(a->empty_like_as(dt_));
                im_in_.push_back(a->empty_like_as(dt_));
            }
        }
        for (const DistributedArray *b : y)
            if (m == split) {
                re_out_.push_back(b->empty_like_as(dt_));
                im_out_.push_back(b->empty_like_as(dt_));
            }
        for (auto *v : {&re_in_, &im_in_, &in_c_}) lists_in_.emplace_back(ptrs(*v));
        for (auto *v : {&re_out_, &im_out_}) lists_out_.emplace_back(out_ptrs(*v));
    }

    void run(const Operator &op, const Operator::In &x, const Operator::Out &y, bool adjoint, Work *w) const
    {
        if (mode_ == none) return op.apply_parts(x, y, adjoint, w);
        const Operator::In &wide = lists_in_[2];
        for (size_t i = 0; i < wide.size(); ++i)
            kernels::convert(x[i]->exec(), x[i]->dtype(), wide[i]->dtype(), x[i]->local_size(), x[i]->data(),
                             wide[i]->data());
        if (mode_ == widen) return op.apply_parts(wide, y, adjoint, w);
        // y = A re(x) + i A im(x): the parts through the operator one after the other
        const Operator::In &c = wide.empty() ? x : wide;
        for (size_t i = 0; i < c.size(); ++i)
            for (int part = 0; part < 2; ++part)
                kernels::copy_slab(c[i]->exec(), dt_, c[i]->local_size(), 1, c[i]->data(), 2, part,
                                   (part ? im_in_ : re_in_)[i]->data(), 1, 0, 1);
        op.apply_parts(lists_in_[0], lists_out_[0], adjoint, w);
        op.apply_parts(lists_in_[1], lists_out_[1], adjoint, w);
        for (size_t i = 0; i < y.size(); ++i)
            for (int part = 0; part < 2; ++part)
                kernels::copy_slab(y[i]->exec(), dt_, y[i]->local_size(), 1, (part ? im_out_ : re_out_)[i]->data(), 1,
                                   0, y[i]->data(), 2, part, 1);
    }

private:
    static Operator::In ptrs(const std::vector<DistributedArray::Ptr> &v)
    {
        Operator::In p;
        for (const auto &a : v) p.push_back(a.get());
        return p;
    }
    static Operator::Out out_ptrs(const std::vector<DistributedArray::Ptr> &v)
    {
        Operator::Out p;
        for (const auto &a : v) p.push_back(a.get());
        return p;
    }
    Mode mode_ = none;
    DType dt_ = DType::f64;
    std::vector<DistributedArray::Ptr> in_c_, re_in_, im_in_, re_out_, im_out_;
    std::vector<Operator::In> lists_in_;    // re, im, widened
    std::vector<Operator::Out> lists_out_;  // re, im
};

// The one dtype of a list of operands (DTYPE_MISMATCH for a mix).
template <typename List> DType one_dtype(const List &l, const char *what)
{
    for (const DistributedArray *a : l)
        PLM_REQUIRE(a->dtype() == l.front()->dtype(), PLM_ERR_DTYPE_MISMATCH, "%s members of %s and %s", what,
                    dtype_name(l.front()->dtype()), dtype_name(a->dtype()));
    return l.front()->dtype();
}

}  // namespace

void apply(comm::Agreement &ag, const Operator &op, const Operator::In &x, const Operator::Out &y, bool adjoint)
{
    HostStage s;
    WorkLease w;
    Promotion pr;
    int64_t mode = Promotion::none;
    ag.check([&] {
        PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "a local operator has no domain or range layout");
        op.check_parts(x, y, adjoint, false);
        const Promotion::Mode m = Promotion::mode_for(op.dtype(), one_dtype(x, "input"), one_dtype(y, "output"));
        mode = m;
        s = HostStage(x, y);
        if (m != Promotion::none) pr = Promotion(op, m, s.in(), s.out());
        w = WorkLease(op, op.comm().exec(s.space()));
    });
    ag.fold(static_cast<int64_t>(s.space()));  // every rank on the same path
    ag.fold(mode);
    ag.run();
    pr.run(op, s.in(), s.out(), adjoint, w.get());
    s.finish();
}

void agree_on(const Operator &op, const comm::Communicator &c, const std::optional<Error> &local, bool device)
{
    if (!op.may_fail() && !device) {
        if (local) throw *local;  // only an internal error can get here
        return;
    }
    comm::Agreement ag(c, "operator apply");  // inline words: allocates nothing
    ag.add_error(local);
    ag.run();
}

// ---- local building blocks ------------------------------------------------------------------

namespace {

void require_blas_size(int64_t rows, int64_t cols)
{
    PLM_REQUIRE(rows <= INT_MAX && cols <= INT_MAX, PLM_ERR_NOT_SUPPORTED,
                "dense blocks are limited to INT_MAX rows and columns (CBLAS int sizes)");
}

void zero_out(const Exec &e, DType dt, int64_t n, void *out)
{
    const unsigned char zero[16] = {};
    kernels::fill(e, dt, n, zero, out);
}

// A per-device copy of host data an operator applies on device (uploaded by make_work, so
// before the agreement; shared by every Work and thread on that device).
template <typename T> class PerDevice {
public:
    template <typename Make> std::shared_ptr<const T> get(int device, Make &&make) const
    {
        std::lock_guard<std::mutex> g(lock_);
        std::shared_ptr<const T> &slot = by_device_[device];
        if (!slot) slot = make();
        return slot;
    }

private:
    mutable std::mutex lock_;
    mutable std::map<int, std::shared_ptr<const T>> by_device_;
};

template <typename T> struct Held : Work {
    std::shared_ptr<const T> held;
};

class Dense final : public Operator {
public:
    Dense(DType dt, int64_t rows, int64_t cols, const void *a, int64_t a_bytes, bool col_major, bool wrap)
        : Operator(dt, rows, cols), col_major_(col_major)
    {
        require_blas_size(rows, cols);
        PLM_REQUIRE(a || rows * cols == 0, PLM_ERR_INVALID_ARG, "dense matrix data is NULL");
        const size_t bytes = require_buffer_bytes("dense: a", a_bytes, rows * cols, dt);
        if (wrap) {
            data_ = Buffer::wrap(Space::host, const_cast<void *>(a), bytes);
        } else {
            data_ = Buffer::allocate(Space::host, bytes);
            if (bytes) std::memcpy(data_.data(), a, bytes);
        }
    }

#ifdef PLM_HAVE_CUDA
    // The matrix goes to a device at the first Work made there, and stays (blocks are shared:
    // operators on communicators of different devices each get their copy). A wrapped matrix
    // is read at that upload only.
    WorkPtr make_work(const Exec &e) const override
    {
        if (e.space != Space::device) return nullptr;
        auto w = std::make_unique<Held<DeviceDense>>();
        w->held = dev_.get(e.device, [&] {
            return std::make_shared<DeviceDense>(dtype_, rows_, cols_, data_.data(), col_major_, e.device);
        });
        return w;
    }
#endif

    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
#ifdef PLM_HAVE_CUDA
        if (e.space == Space::device) return static_cast<Held<DeviceDense> *>(w)->held->apply(e, adjoint, in, out);
#endif
        (void)w;
        const CBLAS_ORDER order = col_major_ ? CblasColMajor : CblasRowMajor;
        const int m = static_cast<int>(rows_), n = static_cast<int>(cols_);
        const int ld = std::max(1, col_major_ ? m : n);
        const void *a = data_.data();
        if (rows_ == 0 || cols_ == 0) return zero_out(e, dtype_, adjoint ? cols_ : rows_, out);  // BLAS leaves y alone
        sim::compute(PLM_SIM_SITE, {rows_, cols_, int64_t(dtype_), adjoint, col_major_}, 1,
                     [&] { gemv(order, adjoint, m, n, a, ld, in, out); });
    }

private:
    void gemv(CBLAS_ORDER order, bool adjoint, int m, int n, const void *a, int ld, const void *in, void *out) const
    {
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

    bool col_major_;
    Buffer data_;
#ifdef PLM_HAVE_CUDA
    PerDevice<DeviceDense> dev_;
#endif
};

// The diagonal and its conjugate (the adjoint's) in one memory space.
struct DiagonalData {
    Buffer d, dc;
};

class Diagonal final : public Operator {
public:
    Diagonal(DType dt, int64_t n, const void *d, int64_t d_bytes) : Operator(dt, n, n)
    {
        PLM_REQUIRE(d || n == 0, PLM_ERR_INVALID_ARG, "diagonal data is NULL");
        require_buffer_bytes("diagonal: d", d_bytes, n, dt);
        host_ = copy_to(Exec{}, d);
    }
    WorkPtr make_work(const Exec &e) const override
    {
        if (e.space != Space::device) return nullptr;
        auto w = std::make_unique<Held<DiagonalData>>();
        w->held = dev_.get(e.device, [&] { return std::make_shared<DiagonalData>(copy_to(e, host_.d.data())); });
        return w;
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        const DiagonalData &d = e.space == Space::device ? *static_cast<Held<DiagonalData> *>(w)->held : host_;
        kernels::binary(e, dtype_, kernels::Binary::mul, rows_, adjoint ? d.dc.data() : d.d.data(), in, out);
    }

private:
    // The diagonal (host memory) and its conjugate, in e's space.
    DiagonalData copy_to(const Exec &e, const void *d) const
    {
        const size_t bytes = checked_bytes(rows_, dtype_, "the diagonal in bytes");
        if (e.space == Space::device) use_device(e.device);
        DiagonalData out{Buffer::allocate(e.space, bytes), Buffer::allocate(e.space, bytes)};
        if (bytes) copy_bytes(e.space, out.d.data(), Space::host, d, bytes, e.stream);
        kernels::conj(e, dtype_, rows_, out.d.data(), out.dc.data());
        return out;
    }
    DiagonalData host_;
    PerDevice<DiagonalData> dev_;
};

class Identity final : public Operator {
public:
    Identity(DType dt, int64_t n) : Operator(dt, n, n) {}
    void local_apply(const Exec &e, bool, const void *in, void *out, Work *) const override
    {
        kernels::copy(e, dtype_, rows_, in, out);
    }
};

class Zero final : public Operator {
public:
    Zero(DType dt, int64_t rows, int64_t cols) : Operator(dt, rows, cols) {}
    void local_apply(const Exec &e, bool adjoint, const void *, void *out, Work *) const override
    {
        zero_out(e, dtype_, adjoint ? cols_ : rows_, out);
    }
};

// Buffers in the callback's memory space for data that lives in another one.
struct StagingWork : Work {
    Buffer in, out;
};

class Callback final : public Operator {
public:
    Callback(DType dt, int64_t rows, int64_t cols, const CallbackFns &fns, void *ctx, void (*destroy)(void *))
        : Operator(dt, rows, cols), memory_(fns.host[0] || fns.host[1] ? Space::host : Space::device), fns_(fns),
          ctx_(ctx), destroy_(destroy)
    {
    }
    ~Callback() override
    {
        if (destroy_) destroy_(ctx_);
    }
    bool may_fail() const override { return true; }
    bool native(Space s) const override { return s == memory_; }
    WorkPtr make_work(const Exec &e) const override
    {
        if (e.space == memory_) return nullptr;
        // Data in another space go through buffers in the callback's (host twins of device
        // data for a host callback).
        const size_t bytes = checked_bytes(std::max(rows_, cols_), dtype_, "a callback's staging buffer");
        if (memory_ == Space::device) use_device(e.device);
        auto w = std::make_unique<StagingWork>();
        w->in = Buffer::allocate(memory_, bytes);
        w->out = Buffer::allocate(memory_, bytes);
        count_twin();
        return w;
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        const size_t k = adjoint ? 1 : 0;
        PLM_REQUIRE(fns_.host[k] || fns_.device[k], PLM_ERR_NOT_SUPPORTED, "this callback operator has no %s function",
                    adjoint ? "rmatvec" : "matvec");
        const int64_t n_in = adjoint ? rows_ : cols_, n_out = adjoint ? cols_ : rows_;
        const size_t es = dtype_size(dtype_);
        const void *fin = in;
        void *fout = out;
        if (e.space != memory_) {
            const auto *s = static_cast<StagingWork *>(w);
            copy_bytes(memory_, s->in.data(), e.space, in, static_cast<size_t>(n_in) * es, e.stream);
            fin = s->in.data();
            fout = s->out.data();
        }
        // The user's code may allocate: its failure is agreed by the caller (may_fail()).
        int rc = 0;
        {
            alloc::Allowed user_code;
            rc = memory_ == Space::host ? fns_.host[k](ctx_, fin, n_in, fout, n_out, to_public(dtype_), PLM_MEMORY_HOST)
                                        : fns_.device[k](ctx_, fin, n_in, fout, n_out, to_public(dtype_), e.stream.handle);
        }
        PLM_REQUIRE(rc == 0, PLM_ERR_CALLBACK, "the user %s callback returned %d", adjoint ? "rmatvec" : "matvec", rc);
        if (fout != out) copy_bytes(e.space, out, memory_, fout, static_cast<size_t>(n_out) * es, e.stream);
    }

private:
    Space memory_;
    CallbackFns fns_;
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

Operator::Ptr dense(DType dt, int64_t rows, int64_t cols, const void *a, int64_t a_bytes, bool col_major, bool wrap)
{
    require_local_shape(rows, cols);
    return std::make_shared<Dense>(dt, rows, cols, a, a_bytes, col_major, wrap);
}

Operator::Ptr diagonal(DType dt, int64_t n, const void *d, int64_t d_bytes)
{
    require_local_shape(n, n);
    return std::make_shared<Diagonal>(dt, n, d, d_bytes);
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

Operator::Ptr callback(DType dt, int64_t rows, int64_t cols, const CallbackFns &fns, void *ctx,
                       void (*destroy)(void *))
{
    require_local_shape(rows, cols);
    const bool host = fns.host[0] || fns.host[1], device = fns.device[0] || fns.device[1];
    PLM_REQUIRE(host || device, PLM_ERR_INVALID_ARG, "a callback operator needs matvec or rmatvec");
    PLM_REQUIRE(!(host && device), PLM_ERR_INTERNAL, "a callback computes on host or on device memory, not both");
    return std::make_shared<Callback>(dt, rows, cols, fns, ctx, destroy);
}

}  // namespace plm::ops
