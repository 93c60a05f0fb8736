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

// a * b, or INVALID_ARG naming what overflowed.
int64_t checked_mul(int64_t a, int64_t b, const char *what)
{
    int64_t r = 0;
    PLM_REQUIRE(!__builtin_mul_overflow(a, b, &r), PLM_ERR_INVALID_ARG, "%s overflows 64 bits", what);
    return r;
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

int normalize_axis(int axis, int ndim)
{
    PLM_REQUIRE(axis >= -ndim && axis < ndim, PLM_ERR_INVALID_ARG, "axis %d out of range for %d dimensions", axis,
                ndim);
    return axis < 0 ? axis + ndim : axis;
}

DistributedArray::Ptr DistributedArray::create(comm::Agreement &ag, const ArraySpec &s)
{
    const comm::Communicator &c = ag.comm();
    Ptr a(new DistributedArray());
    a->base_ = s.comm;
    const int ndim = static_cast<int>(s.global.size());
    Layout &l = a->layout_;
    Shape mine;
    ag.check([&] {
        PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM, PLM_ERR_INVALID_ARG, "ndim %d outside 1..%d", ndim,
                    PLM_MAX_NDIM);
        for (int64_t e : s.global)
            PLM_REQUIRE(e >= 0, PLM_ERR_INVALID_ARG, "global extent %lld is negative", static_cast<long long>(e));
        l.global = s.global;
        l.axis = normalize_axis(s.axis, ndim);
        PLM_REQUIRE(s.partition >= PLM_PARTITION_SCATTER && s.partition <= PLM_PARTITION_UNSAFE_BROADCAST,
                    PLM_ERR_INVALID_ARG, "unknown partition %d", s.partition);
        l.partition = static_cast<plm_partition_t>(s.partition);
        a->dtype_ = from_public(s.dtype);
        a->space_ = space_from_public(s.memory);
        require_space(a->space_);
        checked_mul(product_checked(s.global), static_cast<int64_t>(dtype_size(a->dtype_)), "global size in bytes");
        if (s.has_mask) {
            PLM_REQUIRE(static_cast<int>(s.mask.size()) == c.size(), PLM_ERR_SIZE_MISMATCH,
                        "mask has %zu entries, the communicator has %d ranks", s.mask.size(), c.size());
            for (int m : s.mask) PLM_REQUIRE(m >= 0, PLM_ERR_INVALID_ARG, "mask group id %d is negative", m);
        }
        mine = s.my_local_shape ? Shape(s.my_local_shape, s.my_local_shape + ndim)
                                : default_local_shapes(s.global, l.axis, l.partition, c.size())[static_cast<size_t>(c.rank())];
        validate_own_shape(l, mine, c.rank());
        // Allocate before agreeing, so a failed allocation fails every rank.
        const size_t bytes = static_cast<size_t>(product(mine)) * dtype_size(a->dtype_);
        if (s.user_data) {
            PLM_REQUIRE(reinterpret_cast<uintptr_t>(s.user_data) % element_alignment(a->dtype_) == 0,
                        PLM_ERR_INVALID_ARG, "user_data %p is not aligned for %s elements", s.user_data,
                        dtype_name(a->dtype_));
            a->buffer_ = Buffer::wrap(a->space_, s.user_data, bytes);
        } else {
            a->buffer_ = Buffer::allocate(a->space_, bytes);
        }
    });
    for (int64_t v : {int64_t(ndim), int64_t(l.axis), int64_t(s.partition), int64_t(s.dtype), int64_t(s.memory),
                      int64_t(s.my_local_shape != nullptr), int64_t(s.has_mask)})
        ag.fold(v);
    ag.fold_all(s.global);
    ag.fold_all(s.mask);
    ag.run();

    if (s.my_local_shape) {
        std::vector<int64_t> all = comm::allgather_i64(c, mine);
        for (int r = 0; r < c.size(); ++r) l.local.emplace_back(all.begin() + r * ndim, all.begin() + (r + 1) * ndim);
        validate_local_shapes(l);  // the same data on every rank: the same verdict
    } else {
        l.local = default_local_shapes(s.global, l.axis, l.partition, c.size());
    }
    a->mask_ = s.mask;
    a->group_ = s.has_mask ? c.split(s.mask[static_cast<size_t>(c.rank())], c.rank()) : a->base_;
    a->set_groups();
    return a;
}

void DistributedArray::set_groups()
{
    std::vector<int> ids(mask_);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    ngroups_ = std::max<int>(1, static_cast<int>(ids.size()));
    group_index_ = mask_.empty() ? 0
                                 : static_cast<int>(std::lower_bound(ids.begin(), ids.end(), mask_[static_cast<size_t>(rank())]) - ids.begin());
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](int64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xffu;
            h *= 1099511628211ull;
        }
    };
    for (const Shape &sh : layout_.local)
        for (int64_t e : sh) mix(e);
    for (int m : mask_) mix(m);
    layout_hash_ = h;
}

DistributedArray::Ptr DistributedArray::with_layout(const Layout &l) const
{
    Ptr a(new DistributedArray());
    a->layout_ = l;
    a->dtype_ = dtype_;
    a->space_ = space_;
    a->base_ = base_;
    a->group_ = group_;
    a->mask_ = mask_;
    a->set_groups();
    a->buffer_ = Buffer::allocate(space_, static_cast<size_t>(a->local_size()) * dtype_size(dtype_));
    return a;
}

DistributedArray::Ptr DistributedArray::empty_like() const { return with_layout(layout_); }

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
    PLM_REQUIRE(o.space_ == space_, PLM_ERR_INVALID_ARG, "%s: memory spaces %s and %s differ", what,
                space_name(space_), space_name(o.space_));
    PLM_REQUIRE(o.layout_.partition == layout_.partition, PLM_ERR_SIZE_MISMATCH, "%s: partitions differ", what);
    PLM_REQUIRE(o.layout_.same_as(layout_), PLM_ERR_SIZE_MISMATCH,
                "%s: global shapes, distributed axes or local shapes differ", what);
    PLM_REQUIRE(o.mask_ == mask_, PLM_ERR_SIZE_MISMATCH, "%s: masks differ", what);
    PLM_REQUIRE(o.base_->size() == base_->size(), PLM_ERR_SIZE_MISMATCH, "%s: communicator sizes differ", what);
    PLM_REQUIRE(comm::same_ranks(*o.base_, *base_), PLM_ERR_INVALID_ARG,
                "%s: operands live on communicators with other ranks or another rank order", what);
}

void DistributedArray::fold_layout(comm::Agreement &ag) const
{
    ag.fold(static_cast<int64_t>(dtype_));
    ag.fold(static_cast<int64_t>(space_));
    ag.fold(layout_.axis);
    ag.fold(layout_.partition);
    ag.fold_all(layout_.global);
    ag.fold(static_cast<int64_t>(layout_hash_));
}

void DistributedArray::sync_broadcast()
{
    if (layout_.partition == PLM_PARTITION_BROADCAST) comm::bcast(*base_, exec(), data(), local_size(), dtype_, 0);
}

void DistributedArray::fill(const Scalar &value) { kernels::fill(exec(), dtype_, local_size(), value.data(), data()); }

void DistributedArray::binary(kernels::Binary op, const DistributedArray &x, const DistributedArray &y)
{
    require_compatible(x, "element-wise operation");
    require_compatible(y, "element-wise operation");
    kernels::binary(exec(), dtype_, op, local_size(), x.data(), y.data(), data());
}

void DistributedArray::replicated_share(int64_t *begin, int64_t *count) const
{
    const int64_t rows = layout_.global[0];
    const int64_t row_elems = Layout::inner(layout_.global, 0);
    const int g = group_->size(), me = group_->rank();
    int64_t first = 0;
    for (int q = 0; q < me; ++q) first += split_count(rows, g, q);
    *begin = first * row_elems;
    *count = split_count(rows, g, me) * row_elems;
}

size_t DistributedArray::add_dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate) const
{
    ag.check([&] {
        PLM_REQUIRE(y, PLM_ERR_INVALID_ARG, "dot: y is NULL");
        require_compatible(*y, "dot");
    });
    fold_layout(ag);
    ag.fold(conjugate);
    const size_t lane = ag.add_lanes(2 * static_cast<size_t>(ngroups_), comm::LaneOp::sum);
    if (!ag.ok()) return lane;
    int64_t begin = 0, count = local_size();
    if (!layout_.scattered()) replicated_share(&begin, &count);
    alignas(16) unsigned char part[16] = {};
    kernels::dot(exec(), dtype_, count, at(data(), begin, dtype_), at(y->data(), begin, dtype_), conjugate, part);
    dispatch_float(dtype_, [&](auto t) {
        using T = decltype(t);
        T v;
        std::memcpy(&v, part, sizeof v);
        ag.set(lane + 2 * static_cast<size_t>(group_index_), static_cast<double>(std::real(v)));
        ag.set(lane + 2 * static_cast<size_t>(group_index_) + 1, static_cast<double>(std::imag(v)));
    });
    return lane;
}

void DistributedArray::read_dot(const comm::Agreement &ag, size_t lane, double *re, double *im) const
{
    *re = ag.get(lane + 2 * static_cast<size_t>(group_index_));
    if (im) *im = ag.get(lane + 2 * static_cast<size_t>(group_index_) + 1);
}

void DistributedArray::dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate, double *re,
                           double *im) const
{
    ag.check([&] {
        PLM_REQUIRE(re, PLM_ERR_INVALID_ARG, "dot: re is NULL");
        PLM_REQUIRE(im || !is_complex(dtype_), PLM_ERR_INVALID_ARG, "dot: im is NULL for a complex array");
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
    const size_t lane = ag.add_lanes(static_cast<size_t>(ngroups_), n.op);
    if (ag.ok()) {
        int64_t begin = 0, count = local_size();
        if (!layout_.scattered()) replicated_share(&begin, &count);
        double part = 0;
        kernels::norm_partial(exec(), dtype_, n.kind, n.p, 1, count, 1, at(data(), begin, dtype_), &part);
        ag.set(lane + static_cast<size_t>(group_index_), part);
    }
    return {static_cast<int>(n.kind), n.p, lane};
}

double DistributedArray::read_norm(const comm::Agreement &ag, const NormLanes &n) const
{
    return finish_norm(static_cast<kernels::NormKind>(n.kind), n.p, ag.get(n.lane + static_cast<size_t>(group_index_)));
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
    std::vector<double> mine;
    Gather g{};
    ag.check([&] {
        n = plan_norm(ord);
        ax = normalize_axis(axis, layout_.ndim());
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "norm_axis: out is NULL");
        const int64_t want = product(drop_axis(layout_.global, ax));
        PLM_REQUIRE(n_out == want, PLM_ERR_SIZE_MISMATCH, "norm along axis %d has %lld values, n_out is %lld", ax,
                    static_cast<long long>(want), static_cast<long long>(n_out));
        const Shape &L = local_shape();
        mine.resize(static_cast<size_t>(Layout::outer(L, ax) * Layout::inner(L, ax)));
        if (layout_.scattered() && ax != layout_.axis) {
            std::vector<Shape> shapes;
            for (const Shape &sh : layout_.local) shapes.push_back(drop_axis(sh, ax));
            g = plan_gather(*base_, Space::host, DType::f64, std::move(shapes), layout_.axis - (ax < layout_.axis ? 1 : 0));
        }
    });
    fold_layout(ag);
    ag.fold_double(ord);
    ag.fold(ax);
    ag.run();
    const Shape &L = local_shape();
    const int64_t outer = Layout::outer(L, ax), inner = Layout::inner(L, ax);
    kernels::norm_partial(exec(), dtype_, n.kind, n.p, outer, L[static_cast<size_t>(ax)], inner, data(), mine.data());
    if (layout_.scattered() && ax == layout_.axis) {
        // Partial norms combine over the mask group; after the agreement nothing can fail
        // locally, so a second, payload-only agreement on the group carries them (NaN kept).
        comm::Agreement sum(*group_, "norm_axis partials");
        const size_t lane = sum.add_lanes(mine.size(), n.op);
        for (size_t i = 0; i < mine.size(); ++i) sum.set(lane + i, mine[i]);
        sum.run();
        for (size_t i = 0; i < mine.size(); ++i) out[i] = finish_norm(n.kind, n.p, sum.get(lane + i));
        return;
    }
    for (double &v : mine) v = finish_norm(n.kind, n.p, v);
    if (!layout_.scattered()) {  // BROADCAST kinds hold everything already
        std::copy(mine.begin(), mine.end(), out);
        return;
    }
    // Along a local axis: gather the finished blocks along the (shifted) distributed axis.
    gather_blocks(g, Space::host, DType::f64, mine.data(), out);
}

DistributedArray::Gather DistributedArray::plan_gather(const comm::Communicator &c, Space sp, DType dt,
                                                      std::vector<Shape> shapes, int axis) const
{
    Gather g{&c, std::move(shapes), axis, {}};
    const Shape &s0 = g.shapes[0];
    if (Layout::outer(s0, axis) != 1) {  // blocks interleave: gather into scratch, then place
        int64_t total = 0;
        for (const Shape &s : g.shapes) total += product(s);
        g.scratch = Buffer::allocate(sp, static_cast<size_t>(total) * dtype_size(dt));
    }
    return g;
}

void DistributedArray::gather_blocks(Gather &g, Space sp, DType dt, const void *mine, void *out) const
{
    std::vector<int64_t> counts;
    for (const Shape &s : g.shapes) counts.push_back(product(s));
    if (!g.scratch.data()) {  // rank blocks are contiguous in rank order: gather in place
        comm::allgatherv(*g.c, g.c->exec(sp), mine, out, counts, dt);
        return;
    }
    const int axis = g.axis;
    const Shape &s0 = g.shapes[0];
    const int64_t outer = Layout::outer(s0, axis), inner = Layout::inner(s0, axis);
    int64_t n_axis = 0;
    for (const Shape &s : g.shapes) n_axis += s[static_cast<size_t>(axis)];
    comm::allgatherv(*g.c, g.c->exec(sp), mine, g.scratch.data(), counts, dt);
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
    if (!layout_.scattered()) return product(layout_.global);
    int64_t n = 0;
    for (int r = 0; r < base_->size(); ++r)
        if (!masked || !has_mask() || mask_[static_cast<size_t>(r)] == mask_[static_cast<size_t>(rank())])
            n += layout_.local_size(r);
    return n;
}

DistributedArray::Gather DistributedArray::plan_asarray(bool masked) const
{
    if (!layout_.scattered()) return Gather{base_.get(), {}, 0, {}};
    std::vector<Shape> shapes;
    for (int r = 0; r < base_->size(); ++r)
        if (!masked || !has_mask() || mask_[static_cast<size_t>(r)] == mask_[static_cast<size_t>(rank())])
            shapes.push_back(layout_.local[static_cast<size_t>(r)]);
    return plan_gather(masked ? *group_ : *base_, space_, dtype_, std::move(shapes), layout_.axis);
}

void DistributedArray::gather_into(Gather &g, void *out) const
{
    if (!layout_.scattered()) {
        kernels::copy(exec(), dtype_, local_size(), data(), out);
        return;
    }
    gather_blocks(g, space_, dtype_, data(), out);
}

void DistributedArray::asarray(comm::Agreement &ag, bool masked, void *out, int64_t n_out) const
{
    Gather g{};
    ag.check([&] {
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "asarray: out is NULL");
        const int64_t want = gathered_size(masked);
        PLM_REQUIRE(n_out == want, PLM_ERR_SIZE_MISMATCH, "asarray gathers %lld elements, n_out is %lld",
                    static_cast<long long>(want), static_cast<long long>(n_out));
        g = plan_asarray(masked);
    });
    fold_layout(ag);
    ag.fold(masked && has_mask());
    ag.run();
    gather_into(g, out);
}

void DistributedArray::set_global(comm::Agreement &ag, const void *global)
{
    ag.check([&] { PLM_REQUIRE(global, PLM_ERR_INVALID_ARG, "set_global: global is NULL"); });
    fold_layout(ag);
    ag.run();
    if (layout_.scattered()) {
        const Shape &L = local_shape();
        const int ax = layout_.axis;
        kernels::copy_slab(exec(), dtype_, Layout::outer(L, ax), Layout::inner(L, ax), global,
                           layout_.global[static_cast<size_t>(ax)], layout_.offset(rank()), data(),
                           L[static_cast<size_t>(ax)], 0, L[static_cast<size_t>(ax)]);
        return;
    }
    if (layout_.partition == PLM_PARTITION_UNSAFE_BROADCAST || rank() == 0)
        kernels::copy(exec(), dtype_, local_size(), global, data());
    sync_broadcast();
}

Shape DistributedArray::ghost_shape(int64_t before, int64_t after) const
{
    PLM_REQUIRE(layout_.scattered(), PLM_ERR_INVALID_ARG, "ghost cells need a SCATTER array");
    PLM_REQUIRE(before >= 0 && after >= 0, PLM_ERR_INVALID_ARG, "ghost cell counts must be non-negative");
    const int64_t n = layout_.global[static_cast<size_t>(layout_.axis)];
    // Bounded by the global extent, so the grown shape below cannot overflow.
    PLM_REQUIRE(before <= n && after <= n, PLM_ERR_SIZE_MISMATCH,
                "ghost cell counts %lld and %lld exceed the global extent %lld along axis %d",
                static_cast<long long>(before), static_cast<long long>(after), static_cast<long long>(n), layout_.axis);
    Shape s = local_shape();
    const int P = base_->size();
    s[static_cast<size_t>(layout_.axis)] += (rank() > 0 ? before : 0) + (rank() < P - 1 ? after : 0);
    return s;
}

void DistributedArray::add_ghost_cells(comm::Agreement &ag, int64_t before, int64_t after, void *out,
                                       int64_t n_out) const
{
    const int P = base_->size(), me = rank(), ax = layout_.axis;
    auto held = [&](int r) { return layout_.local[static_cast<size_t>(r)][static_cast<size_t>(ax)]; };
    const int64_t recv_prev = me > 0 ? before : 0, recv_next = me < P - 1 ? after : 0;
    Buffer pack;
    ag.check([&] {
        Shape g = ghost_shape(before, after);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "add_ghost_cells: out is NULL");
        PLM_REQUIRE(n_out == product(g), PLM_ERR_SIZE_MISMATCH, "ghost block has %lld elements, n_out is %lld",
                    static_cast<long long>(product(g)), static_cast<long long>(n_out));
        // Each rank checks its own request against its neighbours' blocks, known locally.
        if (me > 0 && before > held(me - 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells before it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     me, static_cast<long long>(before), me - 1, static_cast<long long>(held(me - 1)), ax,
                     static_cast<long long>(layout_.global[static_cast<size_t>(ax)]));
        if (me < P - 1 && after > held(me + 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells after it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     me, static_cast<long long>(after), me + 1, static_cast<long long>(held(me + 1)), ax,
                     static_cast<long long>(layout_.global[static_cast<size_t>(ax)]));
        const Shape &L = local_shape();
        if (Layout::outer(L, ax) != 1) {  // slabs are strided: pack; neighbours take at most my block each
            const int64_t slab = Layout::outer(L, ax) * Layout::inner(L, ax);
            pack = Buffer::allocate(space_, static_cast<size_t>((2 * held(me) + recv_prev + recv_next) * slab) *
                                                dtype_size(dtype_));
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
    comm::neighbour_exchange(*base_, Exec{}, DType::i64, counts);

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
    comm::neighbour_exchange(*base_, exec(), dtype_, h);
    kernels::copy_slab(exec(), dtype_, outer, inner, data(), n, 0, out, total, recv_prev, n);
    if (outer != 1) {
        kernels::copy_slab(exec(), dtype_, outer, inner, h.from_prev, recv_prev, 0, out, total, 0, recv_prev);
        kernels::copy_slab(exec(), dtype_, outer, inner, h.from_next, recv_next, 0, out, total, recv_prev + n, recv_next);
    }
}

DistributedArray::Ptr DistributedArray::redistribute(comm::Agreement &ag, int axis) const
{
    int b = layout_.axis;
    const int a = layout_.axis, P = base_->size(), me = rank(), nd = layout_.ndim();
    Ptr y;
    Layout target = layout_;
    std::vector<int64_t> sc(P), sd(P), rc(P), rd(P);
    std::vector<Shape> sbox(P), rbox(P);
    Buffer sbuf, rbuf;
    ag.check([&] {
        b = normalize_axis(axis, nd);
        if (!layout_.scattered() || b == a) {
            y = duplicate();
            return;
        }
        target.axis = b;
        target.local = default_local_shapes(layout_.global, b, layout_.partition, P);
        y = with_layout(target);
        // Send to d: my block restricted to d's new range along b. Receive from s: s's old
        // range along a, my new range along b, placed at s's old offset.
        const Shape &L = local_shape();
        const Shape &N = target.local[static_cast<size_t>(me)];
        int64_t soff = 0, roff = 0;
        for (int r = 0; r < P; ++r) {
            sbox[r] = L;
            sbox[r][b] = target.local[static_cast<size_t>(r)][b];
            rbox[r] = N;
            rbox[r][a] = layout_.local[static_cast<size_t>(r)][a];
            sc[r] = product(sbox[r]);
            rc[r] = product(rbox[r]);
            sd[r] = soff;
            rd[r] = roff;
            soff += sc[r];
            roff += rc[r];
        }
        sbuf = Buffer::allocate(space_, static_cast<size_t>(soff) * dtype_size(dtype_));
        rbuf = Buffer::allocate(space_, static_cast<size_t>(roff) * dtype_size(dtype_));
    });
    fold_layout(ag);
    ag.fold(b);
    ag.run();
    if (!layout_.scattered() || b == a) return y;

    const Shape &L = local_shape();
    const Shape &N = target.local[static_cast<size_t>(me)];
    const Shape zero(static_cast<size_t>(nd), 0);
    for (int r = 0; r < P; ++r) {
        Shape start = zero;
        start[b] = target.offset(r);
        kernels::copy_box(exec(), dtype_, nd, data(), L.data(), start.data(), at(sbuf.data(), sd[r], dtype_),
                          sbox[r].data(), zero.data(), sbox[r].data());
    }
    comm::alltoallv(*base_, exec(), sbuf.data(), sc, sd, rbuf.data(), rc, rd, dtype_);
    for (int r = 0; r < P; ++r) {
        Shape start = zero;
        start[a] = layout_.offset(r);
        kernels::copy_box(exec(), dtype_, nd, at(rbuf.data(), rd[r], dtype_), rbox[r].data(), zero.data(), y->data(),
                          N.data(), start.data(), rbox[r].data());
    }
    return y;
}

}  // namespace plm
