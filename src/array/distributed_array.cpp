#include "array/distributed_array.hpp"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>

namespace plm {

using comm::ReduceOp;

namespace {

constexpr size_t kScalarBytes = 16;  // one element of the widest dtype

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)); }

uint64_t fnv(uint64_t h, int64_t v)
{
    for (int i = 0; i < 8; ++i) {
        h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xffu;
        h *= 1099511628211ull;
    }
    return h;
}

struct NormPlan {
    kernels::NormKind kind;
    ReduceOp op;
    double p;
};

NormPlan plan_norm(double ord)
{
    PLM_REQUIRE(!std::isnan(ord), PLM_ERR_INVALID_ARG, "norm order is NaN");
    if (ord == 0) return {kernels::NormKind::count_nonzero, ReduceOp::sum, 0};
    if (std::isinf(ord) && ord > 0) return {kernels::NormKind::max_abs, ReduceOp::max, ord};
    if (std::isinf(ord)) return {kernels::NormKind::min_abs, ReduceOp::min, ord};
    return {kernels::NormKind::pow_sum, ReduceOp::sum, ord};
}

double finish_norm(const NormPlan &n, double v)
{
    if (n.kind != kernels::NormKind::pow_sum) return v;
    if (n.p == 2.0) return std::sqrt(v);
    if (n.p == 1.0) return v;
    return std::pow(v, 1.0 / n.p);
}

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

DistributedArray::Ptr DistributedArray::create(const ArraySpec &s, std::optional<Error> local_error)
{
    const comm::Communicator &c = *s.comm;
    Ptr a(new DistributedArray());
    a->base_ = s.comm;
    const int ndim = static_cast<int>(s.global.size());
    if (!local_error) {
        local_error = comm::capture([&] {
            PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM, PLM_ERR_INVALID_ARG, "ndim %d outside 1..%d", ndim,
                        PLM_MAX_NDIM);
            for (int64_t e : s.global)
                PLM_REQUIRE(e >= 0, PLM_ERR_INVALID_ARG, "global extent %lld is negative", static_cast<long long>(e));
            a->layout_.axis = normalize_axis(s.axis, ndim);
            PLM_REQUIRE(s.partition >= PLM_PARTITION_SCATTER && s.partition <= PLM_PARTITION_UNSAFE_BROADCAST,
                        PLM_ERR_INVALID_ARG, "unknown partition %d", s.partition);
            a->dtype_ = from_public(s.dtype);
            a->space_ = space_from_public(s.memory);
            require_space(a->space_);
            if (s.has_mask) {
                PLM_REQUIRE(static_cast<int>(s.mask.size()) == c.size(), PLM_ERR_SIZE_MISMATCH,
                            "mask has %zu entries, the communicator has %d ranks", s.mask.size(), c.size());
                for (int m : s.mask) PLM_REQUIRE(m >= 0, PLM_ERR_INVALID_ARG, "mask group id %d is negative", m);
            }
        });
    }
    a->agree(c, local_error);

    // Every rank must describe the same array: compare a fingerprint of the arguments.
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : {int64_t(ndim), int64_t(a->layout_.axis), int64_t(s.partition), int64_t(s.dtype),
                      int64_t(s.memory), int64_t(s.my_local_shape != nullptr), int64_t(s.has_mask)})
        h = fnv(h, v);
    for (int64_t e : s.global) h = fnv(h, e);
    for (int m : s.mask) h = fnv(h, m);
    int64_t fp[2] = {static_cast<int64_t>(h >> 2), -static_cast<int64_t>(h >> 2)};
    a->allreduce(c, Space::host, fp, fp, 2, DType::i64, ReduceOp::max);
    PLM_REQUIRE(fp[0] == -fp[1], PLM_ERR_INVALID_ARG,
                "ranks passed different shapes, axis, partition, dtype, memory, local-shape or mask arguments");

    a->layout_.global = s.global;
    a->layout_.partition = static_cast<plm_partition_t>(s.partition);
    if (s.my_local_shape) {
        Shape mine(s.my_local_shape, s.my_local_shape + ndim);
        std::vector<int64_t> all = a->allgather_i64(c, mine);
        for (int r = 0; r < c.size(); ++r) a->layout_.local.emplace_back(all.begin() + r * ndim, all.begin() + (r + 1) * ndim);
    } else {
        a->layout_.local = default_local_shapes(s.global, a->layout_.axis, a->layout_.partition, c.size());
    }
    validate_local_shapes(a->layout_);  // same data on every rank: the same verdict

    if (s.has_mask) {
        a->mask_ = s.mask;
        a->group_ = c.split(s.mask[static_cast<size_t>(c.rank())], c.rank());
    } else {
        a->group_ = a->base_;
    }
    const size_t bytes = static_cast<size_t>(a->local_size()) * dtype_size(a->dtype_);
    a->agree(c, comm::capture([&] {
        a->buffer_ = s.user_data ? Buffer::wrap(a->space_, s.user_data, bytes) : Buffer::allocate(a->space_, bytes);
    }));
    return a;
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
    a->buffer_ = Buffer::allocate(space_, static_cast<size_t>(a->local_size()) * dtype_size(dtype_));
    return a;
}

DistributedArray::Ptr DistributedArray::empty_like() const { return with_layout(layout_); }

DistributedArray::Ptr DistributedArray::zeros_like() const
{
    Ptr a = empty_like();
    unsigned char zero[kScalarBytes] = {};
    kernels::fill(space_, dtype_, a->local_size(), zero, a->data());
    return a;
}

DistributedArray::Ptr DistributedArray::duplicate() const
{
    Ptr a = empty_like();
    kernels::copy(space_, dtype_, local_size(), data(), a->data());
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
}

void DistributedArray::sync_broadcast()
{
    if (layout_.partition == PLM_PARTITION_BROADCAST) bcast(*base_, space_, data(), local_size(), dtype_, 0);
}

void DistributedArray::fill(const Scalar &value)
{
    Scalar v = value;
    if (layout_.partition == PLM_PARTITION_BROADCAST) bcast(*base_, Space::host, v.bytes, 1, dtype_, 0);
    kernels::fill(space_, dtype_, local_size(), v.data(), data());
}

void DistributedArray::binary(kernels::Binary op, const DistributedArray &x, const DistributedArray &y)
{
    require_compatible(x, "element-wise operation");
    require_compatible(y, "element-wise operation");
    kernels::binary(space_, dtype_, op, local_size(), x.data(), y.data(), data());
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

void DistributedArray::dot(const DistributedArray &y, bool conjugate, double *re, double *im) const
{
    const bool bad = !re || (is_complex(dtype_) && !im);
    void *result = bad ? nullptr : re;
    require_compatible(y, "dot");
    int64_t begin = 0, count = local_size();
    if (!layout_.scattered()) replicated_share(&begin, &count);
    // Element 1 carries "this rank got a bad argument" through the same reduction.
    unsigned char part[2 * kScalarBytes] = {}, total[2 * kScalarBytes] = {};
    kernels::dot(space_, dtype_, count, at(data(), begin, dtype_), at(y.data(), begin, dtype_), conjugate, part);
    bool others_bad = false;
    dispatch_float(dtype_, [&](auto t) {
        using T = decltype(t);
        reinterpret_cast<T *>(part)[1] = T(result ? 0 : 1);
        allreduce(*group_, Space::host, part, total, 2, dtype_, ReduceOp::sum);
        others_bad = reinterpret_cast<T *>(total)[1] != T(0);
    });
    PLM_REQUIRE(re, PLM_ERR_INVALID_ARG, "dot: re is NULL");
    PLM_REQUIRE(result, PLM_ERR_INVALID_ARG, "dot: im is NULL for a complex array");
    PLM_REQUIRE(!others_bad, PLM_ERR_INVALID_ARG, "dot: a NULL result on another rank of the group");
    dispatch_float(dtype_, [&](auto t) {
        using T = decltype(t);
        const T v = *reinterpret_cast<const T *>(total);
        *re = static_cast<double>(std::real(v));
        if (im) *im = static_cast<double>(std::imag(v));
    });
}

double DistributedArray::norm(double ord, bool bad_arg) const
{
    // The order decides the reduction op, so ranks must agree on it before reducing.
    NormPlan n{};
    agree(*group_, comm::capture([&] {
        n = plan_norm(ord);
        PLM_REQUIRE(!bad_arg, PLM_ERR_INVALID_ARG, "norm: result is NULL");
    }));
    int64_t begin = 0, count = local_size();
    if (!layout_.scattered()) replicated_share(&begin, &count);
    double part = 0, total = 0;
    kernels::norm_partial(space_, dtype_, n.kind, n.p, 1, count, 1, at(data(), begin, dtype_), &part);
    allreduce(*group_, Space::host, &part, &total, 1, DType::f64, n.op);
    return finish_norm(n, total);
}

void DistributedArray::norm_axis(double ord, int axis, double *out, int64_t n_out) const
{
    int ax = 0;
    NormPlan n{};
    Shape out_shape;
    agree(*base_, comm::capture([&] {
        n = plan_norm(ord);
        ax = normalize_axis(axis, layout_.ndim());
        out_shape = drop_axis(layout_.global, ax);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "norm_axis: out is NULL");
        PLM_REQUIRE(n_out == product(out_shape), PLM_ERR_SIZE_MISMATCH, "norm along axis %d has %lld values, n_out is %lld",
                    ax, static_cast<long long>(product(out_shape)), static_cast<long long>(n_out));
    }));
    const Shape &L = local_shape();
    const int64_t outer = Layout::outer(L, ax), inner = Layout::inner(L, ax);
    if (!layout_.scattered() || ax == layout_.axis) {
        // Partial norms of the local block; along the distributed axis they are combined
        // over the mask group, BROADCAST kinds hold everything already.
        kernels::norm_partial(space_, dtype_, n.kind, n.p, outer, L[static_cast<size_t>(ax)], inner, data(), out);
        if (layout_.scattered()) allreduce(*group_, Space::host, out, out, n_out, DType::f64, n.op);
        for (int64_t i = 0; i < n_out; ++i) out[i] = finish_norm(n, out[i]);
        return;
    }
    // Along a local axis: finish locally, then gather the blocks along the (shifted)
    // distributed axis over the whole communicator.
    std::vector<double> mine(static_cast<size_t>(outer * inner));
    kernels::norm_partial(space_, dtype_, n.kind, n.p, outer, L[static_cast<size_t>(ax)], inner, data(), mine.data());
    for (double &v : mine) v = finish_norm(n, v);
    std::vector<Shape> shapes;
    for (const Shape &s : layout_.local) shapes.push_back(drop_axis(s, ax));
    gather_blocks(*base_, Space::host, DType::f64, shapes, layout_.axis - (ax < layout_.axis ? 1 : 0), mine.data(), out);
}

void DistributedArray::gather_blocks(const comm::Communicator &c, Space sp, DType dt, const std::vector<Shape> &shapes,
                                     int axis, const void *mine, void *out) const
{
    std::vector<int64_t> counts;
    for (const Shape &s : shapes) counts.push_back(product(s));
    const Shape &s0 = shapes[0];
    const int64_t outer = Layout::outer(s0, axis), inner = Layout::inner(s0, axis);
    if (outer == 1) {  // rank blocks are contiguous in rank order: gather in place
        allgatherv(c, sp, mine, out, counts, dt);
        return;
    }
    int64_t total = 0, n_axis = 0;
    for (size_t r = 0; r < shapes.size(); ++r) {
        total += counts[r];
        n_axis += shapes[r][static_cast<size_t>(axis)];
    }
    Buffer tmp = Buffer::allocate(sp, static_cast<size_t>(total) * dtype_size(dt));
    allgatherv(c, sp, mine, tmp.data(), counts, dt);
    int64_t displ = 0, start = 0;
    for (size_t r = 0; r < shapes.size(); ++r) {
        const int64_t n_r = shapes[r][static_cast<size_t>(axis)];
        kernels::copy_slab(sp, dt, outer, inner, at(tmp.data(), displ, dt), n_r, 0, out, n_axis, start, n_r);
        displ += counts[r];
        start += n_r;
    }
}

void DistributedArray::asarray(bool masked, void *out, int64_t n_out) const
{
    std::vector<Shape> shapes;
    if (!masked || !has_mask()) {
        shapes = layout_.local;
    } else {
        for (int r = 0; r < base_->size(); ++r)
            if (mask_[static_cast<size_t>(r)] == mask_[static_cast<size_t>(rank())]) shapes.push_back(layout_.local[static_cast<size_t>(r)]);
    }
    const comm::Communicator &c = masked ? *group_ : *base_;
    int64_t want = layout_.scattered() ? 0 : product(layout_.global);
    if (layout_.scattered())
        for (const Shape &s : shapes) want += product(s);
    agree(c, comm::capture([&] {
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "asarray: out is NULL");
        PLM_REQUIRE(n_out == want, PLM_ERR_SIZE_MISMATCH, "asarray gathers %lld elements, n_out is %lld",
                    static_cast<long long>(want), static_cast<long long>(n_out));
    }));
    if (!layout_.scattered()) {
        kernels::copy(space_, dtype_, n_out, data(), out);
        return;
    }
    gather_blocks(c, space_, dtype_, shapes, layout_.axis, data(), out);
}

void DistributedArray::set_global(const void *global)
{
    if (layout_.scattered()) {
        const Shape &L = local_shape();
        const int ax = layout_.axis;
        kernels::copy_slab(space_, dtype_, Layout::outer(L, ax), Layout::inner(L, ax), global,
                           layout_.global[static_cast<size_t>(ax)], layout_.offset(rank()), data(),
                           L[static_cast<size_t>(ax)], 0, L[static_cast<size_t>(ax)]);
        return;
    }
    if (layout_.partition == PLM_PARTITION_UNSAFE_BROADCAST || rank() == 0)
        kernels::copy(space_, dtype_, local_size(), global, data());
    sync_broadcast();
}

Shape DistributedArray::ghost_shape(int64_t before, int64_t after) const
{
    PLM_REQUIRE(layout_.scattered(), PLM_ERR_INVALID_ARG, "ghost cells need a SCATTER array");
    PLM_REQUIRE(before >= 0 && after >= 0, PLM_ERR_INVALID_ARG, "ghost cell counts must be non-negative");
    Shape s = local_shape();
    const int P = base_->size();
    s[static_cast<size_t>(layout_.axis)] += (rank() > 0 ? before : 0) + (rank() < P - 1 ? after : 0);
    return s;
}

void DistributedArray::add_ghost_cells(int64_t before, int64_t after, void *out, int64_t n_out) const
{
    // Local checks travel with the counts, so all ranks learn of any failure in one gather.
    std::optional<Error> local = comm::capture([&] {
        Shape g = ghost_shape(before, after);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "add_ghost_cells: out is NULL");
        PLM_REQUIRE(n_out == product(g), PLM_ERR_SIZE_MISMATCH, "ghost block has %lld elements, n_out is %lld",
                    static_cast<long long>(product(g)), static_cast<long long>(n_out));
    });
    const int P = base_->size(), me = rank(), ax = layout_.axis;
    std::vector<int64_t> all = allgather_i64(*base_, {before, after, local ? int64_t(local->status()) : 0});
    if (local) throw *local;
    for (int r = 0; r < P; ++r)
        if (all[static_cast<size_t>(3 * r + 2)])
            PLM_FAIL(static_cast<plm_status_t>(all[static_cast<size_t>(3 * r + 2)]),
                     "add_ghost_cells: invalid arguments on rank %d", r);
    auto cells_before = [&](int r) { return all[static_cast<size_t>(3 * r)]; };
    auto cells_after = [&](int r) { return all[static_cast<size_t>(3 * r + 1)]; };
    auto held = [&](int r) { return layout_.local[static_cast<size_t>(r)][static_cast<size_t>(ax)]; };
    for (int r = 0; r < P; ++r) {
        if (r > 0 && cells_before(r) > held(r - 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells before it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     r, static_cast<long long>(cells_before(r)), r - 1, static_cast<long long>(held(r - 1)), ax,
                     static_cast<long long>(layout_.global[static_cast<size_t>(ax)]));
        if (r < P - 1 && cells_after(r) > held(r + 1))
            PLM_FAIL(PLM_ERR_SIZE_MISMATCH,
                     "rank %d asks for %lld cells after it, rank %d holds %lld along axis %d; use at most "
                     "max(1, %lld / cells) ranks",
                     r, static_cast<long long>(cells_after(r)), r + 1, static_cast<long long>(held(r + 1)), ax,
                     static_cast<long long>(layout_.global[static_cast<size_t>(ax)]));
    }
    const Shape &L = local_shape();
    const int64_t outer = Layout::outer(L, ax), inner = Layout::inner(L, ax), n = held(me);
    const int64_t send_next = me < P - 1 ? cells_before(me + 1) : 0;  // my last slices, for rank+1
    const int64_t send_prev = me > 0 ? cells_after(me - 1) : 0;       // my first slices, for rank-1
    const int64_t recv_prev = me > 0 ? before : 0, recv_next = me < P - 1 ? after : 0;
    const int64_t total = recv_prev + n + recv_next, slab = outer * inner;

    Halo h;
    h.n_to_next = send_next * slab;
    h.n_to_prev = send_prev * slab;
    h.n_from_prev = recv_prev * slab;
    h.n_from_next = recv_next * slab;
    Buffer pack;
    if (outer == 1) {  // slices are contiguous: send from the array, receive into out
        h.to_next = at(data(), (n - send_next) * inner, dtype_);
        h.to_prev = data();
        h.from_prev = out;
        h.from_next = at(out, (recv_prev + n) * inner, dtype_);
    } else {
        pack = Buffer::allocate(space_, static_cast<size_t>(h.n_to_next + h.n_to_prev + h.n_from_prev + h.n_from_next) *
                                            dtype_size(dtype_));
        void *p0 = pack.data(), *p1 = at(p0, h.n_to_next, dtype_), *p2 = at(p1, h.n_to_prev, dtype_),
             *p3 = at(p2, h.n_from_prev, dtype_);
        kernels::copy_slab(space_, dtype_, outer, inner, data(), n, n - send_next, p0, send_next, 0, send_next);
        kernels::copy_slab(space_, dtype_, outer, inner, data(), n, 0, p1, send_prev, 0, send_prev);
        h.to_next = p0;
        h.to_prev = p1;
        h.from_prev = p2;
        h.from_next = p3;
    }
    neighbour_exchange(*base_, space_, dtype_, h);
    kernels::copy_slab(space_, dtype_, outer, inner, data(), n, 0, out, total, recv_prev, n);
    if (outer != 1) {
        kernels::copy_slab(space_, dtype_, outer, inner, h.from_prev, recv_prev, 0, out, total, 0, recv_prev);
        kernels::copy_slab(space_, dtype_, outer, inner, h.from_next, recv_next, 0, out, total, recv_prev + n, recv_next);
    }
}

DistributedArray::Ptr DistributedArray::redistribute(int axis) const
{
    const int b = normalize_axis(axis, layout_.ndim());
    if (!layout_.scattered() || b == layout_.axis) return duplicate();
    const int a = layout_.axis, P = base_->size(), me = rank(), nd = layout_.ndim();
    Layout target = layout_;
    target.axis = b;
    target.local = default_local_shapes(layout_.global, b, layout_.partition, P);
    Ptr y = with_layout(target);

    // Send to d: my block restricted to d's new range along b. Receive from s: s's old
    // range along a, my new range along b, placed at s's old offset.
    const Shape &L = local_shape();
    const Shape &N = target.local[static_cast<size_t>(me)];
    std::vector<int64_t> sc(P), sd(P), rc(P), rd(P);
    std::vector<Shape> sbox(P), rbox(P);
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
    const size_t es = dtype_size(dtype_);
    Buffer sbuf = Buffer::allocate(space_, static_cast<size_t>(soff) * es);
    Buffer rbuf = Buffer::allocate(space_, static_cast<size_t>(roff) * es);
    const Shape zero(static_cast<size_t>(nd), 0);
    for (int r = 0; r < P; ++r) {
        Shape start = zero;
        start[b] = target.offset(r);
        kernels::copy_box(space_, dtype_, nd, data(), L.data(), start.data(), at(sbuf.data(), sd[r], dtype_),
                          sbox[r].data(), zero.data(), sbox[r].data());
    }
    alltoallv(*base_, space_, sbuf.data(), sc, sd, rbuf.data(), rc, rd, dtype_);
    for (int r = 0; r < P; ++r) {
        Shape start = zero;
        start[a] = layout_.offset(r);
        kernels::copy_box(space_, dtype_, nd, at(rbuf.data(), rd[r], dtype_), rbox[r].data(), zero.data(), y->data(),
                          N.data(), start.data(), rbox[r].data());
    }
    return y;
}

}  // namespace plm
