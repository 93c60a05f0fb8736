#include "array/distributed_array.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>

namespace plm {


namespace {

constexpr size_t kScalarBytes = 16;  // one element of the widest dtype
// Up to this many lanes (16 bytes each), norm_axis partials ride in the agreement.
constexpr size_t kFusedNormLanes = 4096;

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)); }

struct NormPlan {
    kernels::NormKind kind;
    comm::LaneOp op;
    double p;
};

NormPlan plan_norm(double ord)
{
    PLM_REQUIRE(!std::isnan(ord), PLM_ERR_INVALID_ARG, "norm order is NaN");
    if (ord == 0) return {kernels::NormKind::count_nonzero, comm::LaneOp::sum, 0};
    if (std::isinf(ord) && ord > 0) return {kernels::NormKind::max_abs, comm::LaneOp::max, ord};
    if (std::isinf(ord)) return {kernels::NormKind::min_abs, comm::LaneOp::min, ord};
    return {kernels::NormKind::pow_sum, comm::LaneOp::sum, ord};
}

double finish_norm(kernels::NormKind kind, double p, double v)
{
    if (kind != kernels::NormKind::pow_sum) return v;
    if (p == 2.0) return std::sqrt(v);
    if (p == 1.0) return v;
    return std::pow(v, 1.0 / p);
}

// Element alignment a dtype's data need (complex: that of its real part).
size_t element_alignment(DType dt) { return is_complex(dt) ? dtype_size(dt) / 2 : dtype_size(dt); }

}  // namespace

Scalar make_scalar(DType dt, double re, double im, const char *what)
{
    PLM_REQUIRE(is_complex(dt) || im == 0, PLM_ERR_INVALID_ARG,
                "%s: imaginary part %g given for a real (%s) array", what, im, dtype_name(dt));
    Scalar s;
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        using R = real_t<T>;
        T v;
        if constexpr (is_complex_v<T>) v = T(static_cast<R>(re), static_cast<R>(im));
        else v = static_cast<T>(re);
        std::memcpy(s.bytes, &v, sizeof v);
    });
    return s;
}

// Checks dtype, memory and user data for a local block of shape mine, and allocates or wraps it.
void DistributedArray::set_data(const comm::Communicator &c, const Shape &mine, int dtype, int memory,
                                void *user_data, int64_t user_bytes)
{
    dtype_ = from_public(dtype);
    space_ = space_from_public(memory);
    require_space(space_);
    if (space_ == Space::device) {
        use_device(c.device());  // allocate on the communicator's device
        (void)c.stream();        // made here, inside the agreement, not later inside a collective
    }
    const size_t bytes = checked_bytes(product(mine), dtype_, "the local block in bytes");
    PLM_REQUIRE(user_data || user_bytes == 0, PLM_ERR_INVALID_ARG,
                "user_data is NULL (allocate) but user_bytes = %lld; pass 0 with NULL", static_cast<long long>(user_bytes));
    if (user_data) {
        require_buffer_bytes("user", user_bytes, product(mine), dtype_);
        PLM_REQUIRE(reinterpret_cast<uintptr_t>(user_data) % element_alignment(dtype_) == 0, PLM_ERR_INVALID_ARG,
                    "user_data %p is not aligned for %s elements", user_data, dtype_name(dtype_));
        if (space_ == Space::device)
            PLM_REQUIRE(device_of(user_data) == c.device(), PLM_ERR_INVALID_ARG,
                        "user_data %p is not device memory of CUDA device %d (the communicator's)", user_data,
                        c.device());
        buffer_ = Buffer::wrap(space_, user_data, bytes);
    } else {
        buffer_ = Buffer::allocate(space_, bytes);
    }
}

Buffer DistributedArray::scratch(Space s, size_t bytes) const
{
    if (s == Space::device) use_device(lay_->comm().device());
    return Buffer::allocate(s, bytes);
}

void DistributedArray::finish_device_work() const
{
    if (space_ == Space::device) require_space(space_).synchronize(exec().stream);
}

DistributedArray::Ptr DistributedArray::create(comm::Agreement &ag, const ArraySpec &s)
{
    Ptr a;
    ArrayLayout::Draft d = ArrayLayout::check(ag, s.layout);
    ag.check([&] {
        checked_bytes(product(d.layout.global), from_public(s.dtype), "the global array in bytes");
        // Allocate before agreeing, so a failed allocation fails every rank.
        a.reset(new DistributedArray());
        a->set_data(*s.layout.comm, d.mine, s.dtype, s.memory, s.user_data, s.user_bytes);
    });
    ag.fold(s.dtype);
    ag.fold(s.memory);
    ag.run();
    a->lay_ = ArrayLayout::finish(std::move(d));
    return a;
}

DistributedArray::Ptr DistributedArray::create_from_layout(ArrayLayout::Ptr l, int dtype, int memory, void *user_data,
                                                           int64_t user_bytes)
{
    checked_bytes(product(l->layout().global), from_public(dtype), "the global array in bytes");
    Ptr a(new DistributedArray());
    a->set_data(l->comm(), l->local_shape(), dtype, memory, user_data, user_bytes);
    a->lay_ = std::move(l);
    return a;
}

DistributedArray::Ptr DistributedArray::with_layout(ArrayLayout::Ptr l, Space s) const
{
    Ptr a(new DistributedArray());
    a->dtype_ = dtype_;
    a->space_ = s;
    a->buffer_ = scratch(s, checked_bytes(l->local_size(), dtype_, "the local block in bytes"));  // l: same communicator
    a->lay_ = std::move(l);
    return a;
}

DistributedArray::Ptr DistributedArray::empty_like() const { return with_layout(lay_, space_); }

DistributedArray::Ptr DistributedArray::empty_in(Space s) const { return with_layout(lay_, s); }

DistributedArray::Ptr DistributedArray::empty_like_as(DType dt) const
{
    Ptr a(new DistributedArray());
    a->dtype_ = dt;
    a->space_ = space_;
    a->buffer_ = scratch(space_, checked_bytes(local_size(), dt, "the local block in bytes"));
    a->lay_ = lay_;
    return a;
}

DistributedArray::Ptr DistributedArray::zeros_like() const
{
    Ptr a = empty_like();
    unsigned char zero[kScalarBytes] = {};
    kernels::fill(exec(), dtype_, a->local_size(), zero, a->data());
    return a;
}

DistributedArray::Ptr DistributedArray::duplicate() const
{
    Ptr a = empty_like();
    kernels::copy(exec(), dtype_, local_size(), data(), a->data());
    return a;
}

void DistributedArray::require_compatible(const DistributedArray &o, const char *what) const
{
    PLM_REQUIRE(o.dtype_ == dtype_, PLM_ERR_DTYPE_MISMATCH, "%s: dtypes %s and %s differ", what, dtype_name(dtype_),
                dtype_name(o.dtype_));
    require_same_place(o, what);
}

void DistributedArray::require_same_place(const DistributedArray &o, const char *what) const
{
    PLM_REQUIRE(o.space_ == space_, PLM_ERR_INVALID_ARG, "%s: memory spaces %s and %s differ", what,
                space_name(space_), space_name(o.space_));
    lay_->require_same(*o.lay_, what);
}

const void *DistributedArray::data_as(DType dt, Buffer &scratch) const
{
    if (dt == dtype_) return data();
    PLM_REQUIRE(widens(dtype_, dt), PLM_ERR_INTERNAL, "data_as: %s does not widen into %s", dtype_name(dtype_),
                dtype_name(dt));
    scratch = this->scratch(space_, checked_bytes(local_size(), dt, "a converted operand in bytes"));
    kernels::convert(exec(), dtype_, dt, local_size(), data(), scratch.data());
    return scratch.data();
}

namespace {
// The output dtype out of an operation whose result has dtype res: equal, else DTYPE_MISMATCH
// saying why (NumPy would truncate in place; this library never does).
void require_result(DType res, DType out, const char *what, DType a, DType b)
{
    PLM_REQUIRE(res == out, PLM_ERR_DTYPE_MISMATCH, "%s of %s and %s gives %s; the output is %s (%s)", what,
                dtype_name(a), dtype_name(b), dtype_name(res), dtype_name(out),
                widens(res, out) ? "the result's dtype is required" : "it would truncate the result");
}
}  // namespace

void DistributedArray::reserve_staging(int64_t elems) const
{
    lay_->comm().reserve(space_, checked_bytes(elems, dtype_, "staged messages in bytes"));
}

void DistributedArray::fold_layout(comm::Agreement &ag) const
{
    ag.fold(static_cast<int64_t>(dtype_));
    ag.fold(static_cast<int64_t>(space_));
    lay_->fold(ag);
}

void DistributedArray::sync_broadcast()
{
    if (lay_->layout().partition == PLM_PARTITION_BROADCAST) comm::bcast(lay_->comm(), exec(), data(), local_size(), dtype_, 0);
}

void DistributedArray::fill(const Scalar &value) { kernels::fill(exec(), dtype_, local_size(), value.data(), data()); }

void DistributedArray::binary(kernels::Binary op, const DistributedArray &x, const DistributedArray &y)
{
    require_same_place(x, "element-wise operation");
    require_same_place(y, "element-wise operation");
    require_result(promote(x.dtype_, y.dtype_), dtype_, "element-wise operation", x.dtype_, y.dtype_);
    Buffer tx, ty;  // widened operands (mixed dtypes only)
    const void *px = x.data_as(dtype_, tx), *py = y.data_as(dtype_, ty);
    kernels::binary(exec(), dtype_, op, local_size(), px, py, data());
}

void DistributedArray::copy_from(const DistributedArray &x)
{
    require_same_place(x, "copy");
    require_result(promote(x.dtype_, dtype_), dtype_, "copy (a widening conversion)", x.dtype_, dtype_);
    kernels::convert(exec(), x.dtype_, dtype_, local_size(), x.data(), data());
}

void DistributedArray::axpby(const Scalar &alpha, const DistributedArray &x, const Scalar &beta)
{
    require_same_place(x, "axpby");
    require_result(promote(x.dtype_, dtype_), dtype_, "axpby", x.dtype_, dtype_);
    Buffer tx;
    kernels::axpby(exec(), dtype_, local_size(), alpha.data(), x.data_as(dtype_, tx), beta.data(), data());
}

void DistributedArray::reduce_share(int64_t *begin, int64_t *count) const
{
    *begin = 0;
    *count = local_size();
    if (lay_->layout().scattered()) return;
    // Rank r's share is its slab of the default split over the whole communicator (PyLops-MPI
    // reduces the to_dist of a BROADCAST array over the mask group): unmasked, every element
    // counts once; masked, each group reduces its own ranks' slabs, as a SCATTER array does.
    const int64_t rows = lay_->layout().global[0];
    const int64_t row_elems = Layout::inner(lay_->layout().global, 0);
    const int g = lay_->comm().size(), me = lay_->comm().rank();
    *begin = split_start(rows, g, me) * row_elems;  // O(1): every solver reduction asks
    *count = split_count(rows, g, me) * row_elems;
}

size_t DistributedArray::add_dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate) const
{
    ag.check([&] {
        PLM_REQUIRE(y, PLM_ERR_INVALID_ARG, "dot: y is NULL");
        require_same_place(*y, "dot");
    });
    fold_layout(ag);
    ag.fold(y ? static_cast<int64_t>(y->dtype_) : -1);  // (its layout is x's: checked above)
    ag.fold(conjugate);
    const size_t lane = ag.add_lanes(2 * static_cast<size_t>(lay_->ngroups()), comm::LaneOp::sum);
    if (ag.ok()) set_dot(ag, lane, *y, conjugate);
    return lane;
}

void DistributedArray::set_dot(comm::Agreement &ag, size_t lane, const DistributedArray &y, bool conjugate) const
{
    int64_t begin = 0, count = 0;
    reduce_share(&begin, &count);
    alignas(16) unsigned char part[16] = {};
    // Mixed dtypes: the dot in the promoted dtype (NumPy's), the narrower operand widened
    // into scratch. Device kernels may fail (scratch, CUDA errors): inside the agreement, like
    // any check.
    const DType dt = promote(dtype_, y.dtype_);
    if (!ag.check([&] {
            Buffer tx, ty;
            const void *px = data_as(dt, tx), *py = y.data_as(dt, ty);
            kernels::dot(exec(), dt, count, at(const_cast<void *>(px), begin, dt), at(const_cast<void *>(py), begin, dt),
                         conjugate, part);
        }))
        return;
    dispatch_float(dt, [&](auto t) {
        using T = decltype(t);
        T v;
        std::memcpy(&v, part, sizeof v);
        ag.set(lane + 2 * static_cast<size_t>(lay_->group_index()), static_cast<double>(std::real(v)));
        ag.set(lane + 2 * static_cast<size_t>(lay_->group_index()) + 1, static_cast<double>(std::imag(v)));
    });
}

void DistributedArray::read_dot(const comm::Agreement &ag, size_t lane, double *re, double *im) const
{
    *re = ag.get(lane + 2 * static_cast<size_t>(lay_->group_index()));
    if (im) *im = ag.get(lane + 2 * static_cast<size_t>(lay_->group_index()) + 1);
}

void DistributedArray::dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate, double *re,
                           double *im) const
{
    ag.check([&] {
        PLM_REQUIRE(re, PLM_ERR_INVALID_ARG, "dot: re is NULL");
        PLM_REQUIRE(im || (!is_complex(dtype_) && !(y && is_complex(y->dtype_))), PLM_ERR_INVALID_ARG,
                    "dot: im is NULL for a complex array");
    });
    const size_t lane = add_dot(ag, y, conjugate);
    ag.run();
    read_dot(ag, lane, re, im);
}

DistributedArray::NormLanes DistributedArray::add_norm(comm::Agreement &ag, double ord) const
{
    NormPlan n{kernels::NormKind::pow_sum, comm::LaneOp::sum, 2.0};
    ag.check([&] { n = plan_norm(ord); });
    fold_layout(ag);
    ag.fold_double(ord);
    const NormLanes l{static_cast<int>(n.kind), n.p, ag.add_lanes(static_cast<size_t>(lay_->ngroups()), n.op)};
    set_norm(ag, l);
    return l;
}

void DistributedArray::set_norm(comm::Agreement &ag, const NormLanes &n) const
{
    int64_t begin = 0, count = 0;
    reduce_share(&begin, &count);
    double part = 0;
    if (ag.check([&] {
            kernels::norm_partial(exec(), dtype_, static_cast<kernels::NormKind>(n.kind), n.p, 1, count, 1,
                                  at(data(), begin, dtype_), &part);
        }))
        ag.set(n.lane + static_cast<size_t>(lay_->group_index()), part);
}

double DistributedArray::read_norm(const comm::Agreement &ag, const NormLanes &n) const
{
    return finish_norm(static_cast<kernels::NormKind>(n.kind), n.p, ag.get(n.lane + static_cast<size_t>(lay_->group_index())));
}

double DistributedArray::norm(comm::Agreement &ag, double ord) const
{
    const NormLanes n = add_norm(ag, ord);
    ag.run();
    return read_norm(ag, n);
}

void DistributedArray::norm_axis(comm::Agreement &ag, double ord, int axis, double *out, int64_t n_out) const
{
    int ax = 0;
    NormPlan n{};
    std::vector<double> mine, summed;
    Gather g{};
    ag.check([&] {
        n = plan_norm(ord);
        ax = normalize_axis(axis, lay_->layout().ndim());
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "norm_axis: out is NULL");
        const int64_t want = product(drop_axis(lay_->layout().global, ax));
        PLM_REQUIRE(n_out == want, PLM_ERR_SIZE_MISMATCH, "norm along axis %d has %lld values, n_out is %lld", ax,
                    static_cast<long long>(want), static_cast<long long>(n_out));
        const Shape &L = local_shape();
        mine.resize(static_cast<size_t>(Layout::outer(L, ax) * Layout::inner(L, ax)));
        if (lay_->layout().scattered() && ax == lay_->layout().axis) summed.resize(mine.size());
        if (lay_->layout().scattered() && ax != lay_->layout().axis) {
            std::vector<Shape> shapes;
            for (const Shape &sh : lay_->layout().local) shapes.push_back(drop_axis(sh, ax));
            g = plan_gather(lay_->comm(), Space::host, DType::f64, std::move(shapes), lay_->layout().axis - (ax < lay_->layout().axis ? 1 : 0));
        }
    });
    fold_layout(ag);
    ag.fold_double(ord);
    ag.fold(ax);
    const Layout &lg = lay_->layout();
    const bool along = lg.scattered() && ax == lg.axis;
    // Along the distributed axis the partial norms combine over the mask group. When they are
    // few they travel with the agreement itself: the lane count must not depend on the
    // arguments (ranks may differ in axis until the agreement says so), so each group gets a
    // slot as large as the largest result of any axis.
    size_t slot = 0;  // the largest product of all extents but one
    for (int a2 = 0; a2 < lg.ndim(); ++a2) {
        int64_t p = 1;
        for (int k = 0; k < lg.ndim(); ++k)
            if (k != a2) p *= lg.global[static_cast<size_t>(k)];
        slot = std::max(slot, static_cast<size_t>(p));
    }
    const size_t groups = static_cast<size_t>(lay_->ngroups());
    const bool fused = lg.scattered() && slot * groups <= kFusedNormLanes;
    const size_t lane = fused ? ag.add_lanes(slot * groups, n.op) : 0;
    const size_t mine_at = lane + slot * static_cast<size_t>(lay_->group_index());
    const Shape &L = local_shape();
    const int64_t outer = Layout::outer(L, ax), inner = Layout::inner(L, ax);
    if (ag.check([&] {
            kernels::norm_partial(exec(), dtype_, n.kind, n.p, outer, L[static_cast<size_t>(ax)], inner, data(),
                                  mine.data());
        })) {
        if (along && fused)
            for (size_t i = 0; i < mine.size(); ++i) ag.set(mine_at + i, mine[i]);
    }
    ag.run();
    if (along && fused) {
        for (size_t i = 0; i < mine.size(); ++i) out[i] = finish_norm(n.kind, n.p, ag.get(mine_at + i));
        return;
    }
    if (along) {
        // Many partials: one allreduce over the group into the buffer made in the checks.
        const comm::ReduceOp op = n.op == comm::LaneOp::max   ? comm::ReduceOp::max
                                  : n.op == comm::LaneOp::min ? comm::ReduceOp::min
                                                              : comm::ReduceOp::sum;
        comm::allreduce(lay_->group(), Exec{}, mine.data(), summed.data(), static_cast<int64_t>(mine.size()),
                        DType::f64, op);
        for (size_t i = 0; i < mine.size(); ++i) out[i] = finish_norm(n.kind, n.p, summed[i]);
        return;
    }
    for (double &v : mine) v = finish_norm(n.kind, n.p, v);
    if (!lay_->layout().scattered()) {  // BROADCAST kinds hold everything already
        std::copy(mine.begin(), mine.end(), out);
        return;
    }
    // Along a local axis: gather the finished blocks along the (shifted) distributed axis.
    gather_blocks(g, Space::host, DType::f64, mine.data(), out);
}

DistributedArray::Gather DistributedArray::plan_gather(const comm::Communicator &c, Space sp, DType dt,
                                                      std::vector<Shape> shapes, int axis) const
{
    Gather g{&c, std::move(shapes), axis, {}, {}, {}};
    int64_t total = 0;
    for (const Shape &s : g.shapes) {
        g.counts.push_back(product(s));
        g.displs.push_back(total);
        total = checked_add(total, g.counts.back(), "the gathered element count");
    }
    if (Layout::outer(g.shapes[0], axis) != 1)  // blocks interleave: gather into scratch, then place
        g.scratch = scratch(sp, checked_bytes(total, dt, "the gathered array in bytes"));
    const int64_t most = *std::max_element(g.counts.begin(), g.counts.end());  // what this rank sends, at most
    c.reserve(sp, checked_bytes(checked_add(total, most, "the gathered element count"), dt, "a gather in bytes"));
    return g;
}

void DistributedArray::gather_blocks(Gather &g, Space sp, DType dt, const void *mine, void *out) const
{
    const std::vector<int64_t> &counts = g.counts;
    const Exec e = g.c->exec(sp);
    if (!g.scratch.data()) {  // rank blocks are contiguous in rank order: gather in place
        comm::allgatherv(*g.c, e, mine, out, counts.data(), g.displs.data(), dt);
        return;
    }
    const int axis = g.axis;
    const Shape &s0 = g.shapes[0];
    const int64_t outer = Layout::outer(s0, axis), inner = Layout::inner(s0, axis);
    int64_t n_axis = 0;
    for (const Shape &s : g.shapes) n_axis += s[static_cast<size_t>(axis)];
    comm::allgatherv(*g.c, e, mine, g.scratch.data(), counts.data(), g.displs.data(), dt);
    int64_t displ = 0, start = 0;
    for (size_t r = 0; r < g.shapes.size(); ++r) {
        const int64_t n_r = g.shapes[r][static_cast<size_t>(axis)];
        kernels::copy_slab(g.c->exec(sp), dt, outer, inner, at(g.scratch.data(), displ, dt), n_r, 0, out, n_axis, start, n_r);
        displ += counts[r];
        start += n_r;
    }
}

int64_t DistributedArray::gathered_size(bool masked) const
{
    if (!lay_->layout().scattered()) return product(lay_->layout().global);
    int64_t n = 0;
    for (int r = 0; r < lay_->comm().size(); ++r)
        if (!masked || !has_mask() || lay_->mask()[static_cast<size_t>(r)] == lay_->mask()[static_cast<size_t>(rank())])
            n = checked_add(n, lay_->layout().local_size(r), "the gathered element count");
    return n;
}

DistributedArray::Gather DistributedArray::plan_asarray(bool masked) const
{
    if (!lay_->layout().scattered()) return Gather{&lay_->comm(), {}, 0, {}, {}, {}};
    std::vector<Shape> shapes;
    for (int r = 0; r < lay_->comm().size(); ++r)
        if (!masked || !has_mask() || lay_->mask()[static_cast<size_t>(r)] == lay_->mask()[static_cast<size_t>(rank())])
            shapes.push_back(lay_->layout().local[static_cast<size_t>(r)]);
    return plan_gather(masked ? lay_->group() : lay_->comm(), space_, dtype_, std::move(shapes), lay_->layout().axis);
}

void DistributedArray::gather_into(Gather &g, void *out) const
{
    if (!lay_->layout().scattered()) {
        kernels::copy(exec(), dtype_, local_size(), data(), out);
        return;
    }
    gather_blocks(g, space_, dtype_, data(), out);
}

void DistributedArray::asarray(comm::Agreement &ag, bool masked, void *out, int64_t out_bytes) const
{
    Gather g{};
    ag.check([&] {
        PLM_REQUIRE(out || gathered_size(masked) == 0, PLM_ERR_INVALID_ARG, "asarray: out is NULL");
        require_buffer_bytes("asarray: out", out_bytes, gathered_size(masked), dtype_);
        g = plan_asarray(masked);
    });
    fold_layout(ag);
    ag.fold(masked && has_mask());
    ag.run();
    gather_into(g, out);
}

void DistributedArray::set_global(comm::Agreement &ag, const void *global, int64_t global_bytes)
{
    ag.check([&] {
        PLM_REQUIRE(global || product(lay_->layout().global) == 0, PLM_ERR_INVALID_ARG, "set_global: global is NULL");
        require_buffer_bytes("set_global: global", global_bytes, product(lay_->layout().global), dtype_);
        if (lay_->layout().partition == PLM_PARTITION_BROADCAST) reserve_staging(local_size());
    });
    fold_layout(ag);
    ag.run();
    if (lay_->layout().scattered()) {
        const Shape &L = local_shape();
        const int ax = lay_->layout().axis;
        kernels::copy_slab(exec(), dtype_, Layout::outer(L, ax), Layout::inner(L, ax), global,
                           lay_->layout().global[static_cast<size_t>(ax)], lay_->layout().offset(rank()), data(),
                           L[static_cast<size_t>(ax)], 0, L[static_cast<size_t>(ax)]);
        return;
    }
    if (lay_->layout().partition == PLM_PARTITION_UNSAFE_BROADCAST || rank() == 0)
        kernels::copy(exec(), dtype_, local_size(), global, data());
    sync_broadcast();
}

namespace {
constexpr int kTagGatherTo = 31, kTagScatterFrom = 32;
}

DistributedArray::Blocks DistributedArray::blocks() const
{
    const Layout &l = lay_->layout();
    Blocks b;
    for (int r = 0; r < l.nranks(); ++r) {
        b.count.push_back(l.local_size(r));
        b.displ.push_back(b.total);
        b.total = checked_add(b.total, b.count.back(), "the global element count");
    }
    return b;
}

// Rank blocks are slabs along the axis: [outer, n_r, inner] inside [outer, n, inner].
// to_global: packed (rank-order blocks) into the global array; else the other way.
void DistributedArray::copy_blocks(const Blocks &b, void *packed, void *global, bool to_global) const
{
    const Layout &l = lay_->layout();
    const int ax = l.axis;
    const int64_t outer = Layout::outer(l.global, ax), inner = Layout::inner(l.global, ax);
    const int64_t n = l.global[static_cast<size_t>(ax)];
    for (int r = 0; r < l.nranks(); ++r) {
        const int64_t n_r = l.local[static_cast<size_t>(r)][static_cast<size_t>(ax)];
        void *blk = at(packed, b.displ[static_cast<size_t>(r)], dtype_);
        if (to_global)
            kernels::copy_slab(Exec{}, dtype_, outer, inner, blk, n_r, 0, global, n, l.offset(r), n_r);
        else
            kernels::copy_slab(Exec{}, dtype_, outer, inner, global, n, l.offset(r), blk, n_r, 0, n_r);
    }
}

void DistributedArray::gather_to(comm::Agreement &ag, int root, void *out, int64_t out_bytes) const
{
    const comm::Communicator &c = lay_->comm();
    const bool me_root = c.rank() == root;
    const Layout &l = lay_->layout();
    Blocks b;
    Buffer packed, host;
    std::vector<comm::Backend::Message> msgs;  // the root's receives, made in the checks
    ag.check([&] {
        PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "gather_to: root %d outside 0..%d", root,
                    c.size() - 1);
        reserve_staging(local_size());  // a non-root's send
        if (!me_root) return;
        const int64_t want = product(l.global);
        PLM_REQUIRE(out || want == 0, PLM_ERR_INVALID_ARG, "gather_to: out is NULL on the root");
        require_buffer_bytes("gather_to: out", out_bytes, want, dtype_);  // the root's only
        if (!l.scattered()) return;
        b = blocks();
        const size_t bytes = checked_bytes(b.total, dtype_, "the global array in bytes");
        packed = scratch(space_, bytes);
        if (space_ != Space::host) host = scratch(Space::host, bytes);
        msgs = block_messages(b, root, false, packed.data());
        reserve_staging(b.total);
    });
    fold_layout(ag);
    ag.fold(root);
    ag.run();
    const size_t esize = dtype_size(dtype_);
    const Exec e = exec();
    if (!l.scattered()) {  // every rank holds the whole array
        if (me_root)
            c.unagreed([&] {
                copy_bytes(Space::host, out, space_, data(), static_cast<size_t>(local_size()) * esize, e.stream);
            });
        return;
    }
    if (!me_root) {
        if (local_size() > 0) comm::send(c, e, data(), local_size(), dtype_, root, kTagGatherTo);
        return;
    }
    comm::Request rq = comm::iexchange(c, e, dtype_, msgs.data(), msgs.size());
    c.unagreed([&] {
        void *mine = at(packed.data(), b.displ[static_cast<size_t>(root)], dtype_);
        copy_bytes(space_, mine, space_, data(), static_cast<size_t>(local_size()) * esize, e.stream);
    });
    rq.wait();
    const void *src = packed.data();
    if (host.data()) {
        c.unagreed([&] {
            copy_bytes(Space::host, host.data(), space_, packed.data(), static_cast<size_t>(b.total) * esize,
                       e.stream);
        });
        src = host.data();
    }
    copy_blocks(b, const_cast<void *>(src), out, true);
}

std::vector<comm::Backend::Message> DistributedArray::block_messages(const Blocks &b, int root, bool send,
                                                                     void *packed) const
{
    std::vector<comm::Backend::Message> msgs;
    const int P = lay_->comm().size();
    msgs.reserve(static_cast<size_t>(P));
    const int tag = send ? kTagScatterFrom : kTagGatherTo;
    for (int r = 0; r < P; ++r) {
        const int64_t n = b.count[static_cast<size_t>(r)];
        if (r != root && n > 0) msgs.push_back({send, at(packed, b.displ[static_cast<size_t>(r)], dtype_), n, r, tag});
    }
    return msgs;
}

void DistributedArray::scatter_from(comm::Agreement &ag, int root, const void *global, int64_t global_bytes)
{
    const comm::Communicator &c = lay_->comm();
    const bool me_root = c.rank() == root;
    const Layout &l = lay_->layout();
    Blocks b;
    Buffer packed, dev;
    std::vector<comm::Backend::Message> msgs;  // the root's sends, made in the checks
    ag.check([&] {
        PLM_REQUIRE(root >= 0 && root < c.size(), PLM_ERR_INVALID_ARG, "scatter_from: root %d outside 0..%d", root,
                    c.size() - 1);
        reserve_staging(local_size());  // a non-root's receive, or the broadcast
        if (!me_root) return;
        PLM_REQUIRE(global || product(l.global) == 0, PLM_ERR_INVALID_ARG, "scatter_from: global is NULL on the root");
        require_buffer_bytes("scatter_from: global", global_bytes, product(l.global), dtype_);  // the root's only
        if (!l.scattered()) return;
        b = blocks();
        const size_t bytes = checked_bytes(b.total, dtype_, "the global array in bytes");
        packed = scratch(Space::host, bytes);
        if (space_ != Space::host) dev = scratch(space_, bytes);
        msgs = block_messages(b, root, true, dev.data() ? dev.data() : packed.data());
        reserve_staging(b.total);
    });
    fold_layout(ag);
    ag.fold(root);
    ag.run();
    const size_t esize = dtype_size(dtype_);
    const Exec e = exec();
    if (!l.scattered()) {  // the root's global array goes to every rank
        if (me_root)
            c.unagreed([&] {
                copy_bytes(space_, data(), Space::host, global, static_cast<size_t>(local_size()) * esize, e.stream);
            });
        comm::bcast(c, e, data(), local_size(), dtype_, root);
        return;
    }
    if (!me_root) {
        if (local_size() > 0) comm::recv(c, e, data(), local_size(), dtype_, root, kTagScatterFrom);
        return;
    }
    copy_blocks(b, packed.data(), const_cast<void *>(global), false);
    const void *src = packed.data();
    if (dev.data()) {
        c.unagreed([&] {
            copy_bytes(space_, dev.data(), Space::host, packed.data(), static_cast<size_t>(b.total) * esize, e.stream);
        });
        src = dev.data();
    }
    comm::Request rq = comm::iexchange(c, e, dtype_, msgs.data(), msgs.size());
    c.unagreed([&] {
        const void *blk = at(const_cast<void *>(src), b.displ[static_cast<size_t>(root)], dtype_);
        copy_bytes(space_, data(), space_, blk, static_cast<size_t>(local_size()) * esize, e.stream);
    });
    rq.wait();
}

Shape DistributedArray::ghost_shape(int64_t before, int64_t after) const
{
    PLM_REQUIRE(lay_->layout().scattered(), PLM_ERR_INVALID_ARG, "ghost cells need a SCATTER array");
    PLM_REQUIRE(before >= 0 && after >= 0, PLM_ERR_INVALID_ARG, "ghost cell counts must be non-negative");
    const int64_t n = lay_->layout().global[static_cast<size_t>(lay_->layout().axis)];
    PLM_REQUIRE(before <= n && after <= n, PLM_ERR_SIZE_MISMATCH,
                "ghost cell counts %lld and %lld exceed the global extent %lld along axis %d",
                static_cast<long long>(before), static_cast<long long>(after), static_cast<long long>(n), lay_->layout().axis);
    Shape s = local_shape();
    const int P = lay_->comm().size();
    int64_t &e = s[static_cast<size_t>(lay_->layout().axis)];
    e = checked_sum({e, rank() > 0 ? before : 0, rank() < P - 1 ? after : 0}, "the ghost block's extent");
    checked_product(s, "the ghost block's element count");
    return s;
}

void DistributedArray::add_ghost_cells(comm::Agreement &ag, int64_t before, int64_t after, void *out,
                                       int64_t out_bytes) const
{
    const int P = lay_->comm().size(), me = rank(), ax = lay_->layout().axis;
    auto held = [&](int r) { return lay_->layout().local[static_cast<size_t>(r)][static_cast<size_t>(ax)]; };
    const int64_t recv_prev = me > 0 ? before : 0, recv_next = me < P - 1 ? after : 0;
    Buffer pack;
    ag.check([&] {
        Shape g = ghost_shape(before, after);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "add_ghost_cells: out is NULL");
        require_buffer_bytes("add_ghost_cells: out", out_bytes, product(g), dtype_);
        // Each rank checks its own request against its neighbours' blocks, known locally.
        if (me > 0 && before > held(me - 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells before it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     me, static_cast<long long>(before), me - 1, static_cast<long long>(held(me - 1)), ax,
                     static_cast<long long>(lay_->layout().global[static_cast<size_t>(ax)]));
        if (me < P - 1 && after > held(me + 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells after it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     me, static_cast<long long>(after), me + 1, static_cast<long long>(held(me + 1)), ax,
                     static_cast<long long>(lay_->layout().global[static_cast<size_t>(ax)]));
        const Shape &L = local_shape();
        const int64_t slab = Layout::outer(L, ax) * Layout::inner(L, ax);
        const int64_t rows = checked_sum({held(me), held(me), recv_prev, recv_next}, "the ghost pack");
        reserve_staging(checked_mul(rows, slab, "the ghost pack"));  // neighbours take at most my block each
        if (Layout::outer(L, ax) != 1) {  // slabs are strided: pack
            pack = scratch(space_, checked_bytes(checked_mul(rows, slab, "the ghost pack"), dtype_,
                                                 "the ghost pack in bytes"));
        }
    });
    fold_layout(ag);
    ag.run();

    // What my neighbours want from me: their counts travel with one tiny halo exchange.
    int64_t next_before = 0, prev_after = 0;
    comm::Halo counts;
    counts.to_prev = &before;
    counts.n_to_prev = me > 0 ? 1 : 0;
    counts.from_next = &next_before;
    counts.n_from_next = me < P - 1 ? 1 : 0;
    counts.to_next = &after;
    counts.n_to_next = me < P - 1 ? 1 : 0;
    counts.from_prev = &prev_after;
    counts.n_from_prev = me > 0 ? 1 : 0;
    comm::neighbour_exchange(lay_->comm(), Exec{}, DType::i64, counts);

    const Shape &L = local_shape();
    const int64_t outer = Layout::outer(L, ax), inner = Layout::inner(L, ax), n = held(me);
    const int64_t send_next = next_before, send_prev = prev_after;
    const int64_t total = recv_prev + n + recv_next, slab = outer * inner;
    comm::Halo h;
    h.n_to_next = send_next * slab;
    h.n_to_prev = send_prev * slab;
    h.n_from_prev = recv_prev * slab;
    h.n_from_next = recv_next * slab;
    if (outer == 1) {  // slices are contiguous: send from the array, receive into out
        h.to_next = at(data(), (n - send_next) * inner, dtype_);
        h.to_prev = data();
        h.from_prev = out;
        h.from_next = at(out, (recv_prev + n) * inner, dtype_);
    } else {
        void *p0 = pack.data(), *p1 = at(p0, h.n_to_next, dtype_), *p2 = at(p1, h.n_to_prev, dtype_),
             *p3 = at(p2, h.n_from_prev, dtype_);
        kernels::copy_slab(exec(), dtype_, outer, inner, data(), n, n - send_next, p0, send_next, 0, send_next);
        kernels::copy_slab(exec(), dtype_, outer, inner, data(), n, 0, p1, send_prev, 0, send_prev);
        h.to_next = p0;
        h.to_prev = p1;
        h.from_prev = p2;
        h.from_next = p3;
    }
    comm::neighbour_exchange(lay_->comm(), exec(), dtype_, h);
    kernels::copy_slab(exec(), dtype_, outer, inner, data(), n, 0, out, total, recv_prev, n);
    if (outer != 1) {
        kernels::copy_slab(exec(), dtype_, outer, inner, h.from_prev, recv_prev, 0, out, total, 0, recv_prev);
        kernels::copy_slab(exec(), dtype_, outer, inner, h.from_next, recv_next, 0, out, total, recv_prev + n, recv_next);
    }
}

}  // namespace plm
