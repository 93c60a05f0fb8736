// Distributed operators built from each rank's local operators: BlockDiag, VStack, HStack,
// the broadcast wrapper, and the stacked operators over distributed parts.
#include <limits>
#include <optional>

#include "ops/operator.hpp"

#include <algorithm>

namespace plm::ops {

namespace {

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)); }

// A value every rank with local operators passes, gathered through two imax lanes (the
// largest value and the largest negated one): a rank with none (no local work) does not know
// it, so it cannot be folded into the fingerprint. Read with agreed() after the run.
struct SharedLanes {
    size_t hi, neg;
};

SharedLanes add_shared(comm::Agreement &ag, std::optional<int64_t> mine)
{
    const SharedLanes l{ag.add_lanes(1, comm::LaneOp::imax), ag.add_lanes(1, comm::LaneOp::imax)};
    if (mine && ag.ok()) {
        ag.set_int(l.hi, *mine);
        ag.set_int(l.neg, -*mine);
    }
    return l;
}

// After the run: the value, the same on every rank; INVALID_ARG on every rank when ranks passed
// different ones (what the fingerprint would say) or none passed any.
int64_t agreed(const comm::Agreement &ag, SharedLanes l, const char *what)
{
    const int64_t hi = ag.get_int(l.hi), neg = ag.get_int(l.neg);
    // Lanes no rank set hold int64's minimum (checked before negating it)
    PLM_REQUIRE(hi != std::numeric_limits<int64_t>::min() && neg != std::numeric_limits<int64_t>::min(),
                PLM_ERR_INVALID_ARG, "no rank has a local operator: the %s is unknown", what);
    const int64_t lo = -neg;
    PLM_REQUIRE(hi == lo, PLM_ERR_INVALID_ARG, "ranks passed local operators of different %ss (%lld and %lld)", what,
                static_cast<long long>(lo), static_cast<long long>(hi));
    return hi;
}

// Checks this rank's parts (any number: a rank may hold no local work; all local, one dtype)
// into ag; the dtype every rank's parts share is agreed through lanes (dtype_of after the run).
SharedLanes check_parts(comm::Agreement &ag, const std::vector<Operator::Ptr> &parts)
{
    std::optional<int64_t> dt;
    ag.check([&] {
        for (const Operator::Ptr &p : parts) {
            PLM_REQUIRE(p, PLM_ERR_INVALID_ARG, "a local operator is NULL");
            PLM_REQUIRE(p->is_local(), PLM_ERR_INVALID_ARG,
                        "stacks and block-diagonals take local operators (dense, diagonal, callback, ...)");
            PLM_REQUIRE(p->dtype() == parts.front()->dtype(), PLM_ERR_DTYPE_MISMATCH,
                        "local operators of %s and %s on one rank", dtype_name(parts.front()->dtype()),
                        dtype_name(p->dtype()));
        }
        if (!parts.empty()) dt = static_cast<int64_t>(parts.front()->dtype());
    });
    return add_shared(ag, dt);
}

bool all_clinear(const std::vector<Operator::Ptr> &parts)
{
    return std::all_of(parts.begin(), parts.end(), [](const Operator::Ptr &p) { return p->clinear(); });
}
DType dtype_of(const comm::Agreement &ag, SharedLanes l) { return static_cast<DType>(agreed(ag, l, "dtype")); }

bool any_may_fail(const std::vector<Operator::Ptr> &parts)
{
    for (const Operator::Ptr &p : parts)
        if (p->may_fail()) return true;
    return false;
}

bool all_native(const std::vector<Operator::Ptr> &parts, Space s)
{
    for (const Operator::Ptr &p : parts)
        if (!p->native(s)) return false;
    return true;
}

// Whether a local apply may fail on some rank (a callback part there), agreed at construction:
// then every rank agrees on each apply's outcome.
size_t add_may_fail(comm::Agreement &ag, const std::vector<Operator::Ptr> &parts)
{
    const size_t lane = ag.add_lanes(1, comm::LaneOp::max);
    if (ag.ok()) ag.set(lane, any_may_fail(parts));
    return lane;
}

// This rank's row and column sums, gathered through the agreement.
struct SizeLanes {
    size_t rows, cols;
};

SizeLanes add_sizes(comm::Agreement &ag, const std::vector<Operator::Ptr> &parts)
{
    int64_t rows = 0, cols = 0;
    ag.check([&] {  // this rank's own sums: its argument
        for (const Operator::Ptr &p : parts) {
            rows = checked_add(rows, p->rows(), "the sizes of this rank's local operators summed");
            cols = checked_add(cols, p->cols(), "the sizes of this rank's local operators summed");
        }
    });
    return {ag.add_gather(rows), ag.add_gather(cols)};
}

std::vector<int64_t> gathered(const comm::Agreement &ag, size_t lane)
{
    std::vector<int64_t> v;
    for (int r = 0; r < ag.comm().size(); ++r) v.push_back(ag.gathered(lane, r));
    return v;
}

// Applies each part to its slice of in and out, then agrees on the outcome when a part may fail.
void apply_local_parts(const Operator &op, const std::vector<Operator::Ptr> &parts, const DistributedArray &x,
                       DistributedArray &y, bool adjoint, Work *w)
{
    const DType dt = op.dtype();
    const Exec e = x.exec();
    const std::optional<Error> err = comm::capture([&] {
        int64_t in = 0, out = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
            const Operator &p = *parts[i];
            p.local_apply(e, adjoint, at(x.data(), in, dt), at(y.data(), out, dt), part_of(w, i));
            in += adjoint ? p.rows() : p.cols();
            out += adjoint ? p.cols() : p.rows();
        }
    });
    agree_on(op, op.comm(), err, e.space == Space::device);
}

class BlockDiag final : public Operator {
public:
    BlockDiag(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, std::vector<Operator::Ptr> parts, bool fails)
        : Operator(dt, std::move(domain), std::move(range)), parts_(std::move(parts)), fails_(fails)
    {
    }
    bool may_fail() const override { return fails_; }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override { return parts_work(parts_, e); }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        apply_local_parts(*this, parts_, x, y, adjoint, w);
    }

private:
    std::vector<Operator::Ptr> parts_;
    bool fails_;
};

// The Work of a vstack: its parts' Works and, for the adjoint's local sum, a vector of cols.
struct VStackWork : PartsWork {
    Buffer sum;
};

class VStack final : public Operator {
public:
    VStack(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, std::vector<Operator::Ptr> parts, bool fails)
        : Operator(dt, std::move(domain), std::move(range)), parts_(std::move(parts)), fails_(fails)
    {
    }
    bool may_fail() const override { return fails_; }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<VStackWork>();
        for (const Operator::Ptr &p : parts_) w->parts.push_back(p->make_work(e));
        if (e.space == Space::device) use_device(e.device);
        w->sum = Buffer::allocate(e.space, static_cast<size_t>(cols_) * dtype_size(dtype_));
        reserve_staging(e, 2 * cols_);  // the adjoint's allreduce: out and back
        return w;
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        if (!adjoint) {  // every rank has all of x: its parts fill its rows of y
            const std::optional<Error> err = comm::capture([&] {
                int64_t out = 0;
                for (size_t i = 0; i < parts_.size(); ++i) {
                    parts_[i]->local_apply(e, false, x.data(), at(y.data(), out, dtype_), part_of(w, i));
                    out += parts_[i]->rows();
                }
            });
            agree_on(*this, comm(), err, e.space == Space::device);
            return;
        }
        // Adjoint: the local sum of A_i^H x_i (zeros on a rank with no parts), then one
        // allreduce over the ranks, in place.
        void *sum = static_cast<VStackWork *>(w)->sum.data();
        const std::optional<Error> err = comm::capture([&] {
            if (parts_.empty()) {
                const unsigned char zero[16] = {};
                kernels::fill(e, dtype_, cols_, zero, y.data());
            }
            int64_t in = 0;
            const Scalar one = make_scalar(dtype_, 1, 0, "vstack");
            for (size_t i = 0; i < parts_.size(); ++i) {
                const Operator &p = *parts_[i];
                p.local_apply(e, true, at(x.data(), in, dtype_), i == 0 ? y.data() : sum, part_of(w, i));
                if (i > 0) kernels::axpby(e, dtype_, cols_, one.data(), sum, one.data(), y.data());
                in += p.rows();
            }
        });
        agree_on(*this, comm(), err, e.space == Space::device);
        comm::allreduce(comm(), e, y.data(), y.data(), cols_, dtype_, comm::ReduceOp::sum);
    }

private:
    std::vector<Operator::Ptr> parts_;
    bool fails_;
};

class Broadcast final : public Operator {
public:
    Broadcast(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, Operator::Ptr local)
        : Operator(local->dtype(), std::move(domain), std::move(range)), local_(std::move(local))
    {
    }
    bool may_fail() const override { return local_->may_fail(); }
    bool clinear() const override { return local_->clinear(); }
    bool native(Space s) const override { return local_->native(s); }
    WorkPtr make_work(const Exec &e) const override { return local_->make_work(e); }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        agree_on(*this, comm(), comm::capture([&] { local_->local_apply(e, adjoint, x.data(), y.data(), w); }),
                 e.space == Space::device);
    }

private:
    Operator::Ptr local_;
};

void require_stackable(const std::vector<Operator::Ptr> &parts)
{
    PLM_REQUIRE(!parts.empty(), PLM_ERR_INVALID_ARG, "a stacked operator needs at least one part");
    for (const Operator::Ptr &p : parts) {
        PLM_REQUIRE(p && !p->is_local(), PLM_ERR_INVALID_ARG, "stacked operators take distributed operators");
        PLM_REQUIRE(p->dtype() == parts.front()->dtype(), PLM_ERR_DTYPE_MISMATCH, "parts of %s and %s",
                    dtype_name(parts.front()->dtype()), dtype_name(p->dtype()));
        PLM_REQUIRE(p->comm().size() == parts.front()->comm().size(), PLM_ERR_SIZE_MISMATCH,
                    "parts on communicators of different sizes");
    }
}

// The members of a stack of parts, in order: each part's own members (a stacked part adds
// all of its members: stacks of stacks are flattened).
std::vector<ArrayLayout::Ptr> members(const std::vector<Operator::Ptr> &parts, bool range)
{
    std::vector<ArrayLayout::Ptr> v;
    for (const Operator::Ptr &p : parts)
        for (const ArrayLayout::Ptr &l : range ? p->range_parts() : p->domain_parts()) v.push_back(l);
    return v;
}

// Where each part's members start in a flattened stack (one entry per part, then the total).
std::vector<size_t> starts(const std::vector<Operator::Ptr> &parts, bool range)
{
    std::vector<size_t> v{0};
    for (const Operator::Ptr &p : parts) v.push_back(v.back() + (range ? p->range_parts() : p->domain_parts()).size());
    return v;
}

// Operand lists of one part's apply, made with the Work (so an apply fills them without
// allocating): the part's slices of the stacked input and output.
struct Slices {
    Operator::In in;
    Operator::Out out;
};

// The Work of a stack of parts: each part's Work and operand lists, and (stacked vstack) the
// adjoint's running sum.
struct StackWork : PartsWork {
    std::vector<Slices> slices;
    DistributedArray::Ptr sum;
    Operator::Out dst = Operator::Out(1);  // the adjoint's output of one part
};

WorkPtr stack_work(const std::vector<Operator::Ptr> &parts, const Exec &e)
{
    auto w = std::make_unique<StackWork>();
    for (const Operator::Ptr &p : parts) {
        w->parts.push_back(p->make_work(e));
        w->slices.push_back({Operator::In(p->domain_parts().size() + p->range_parts().size()),
                             Operator::Out(p->domain_parts().size() + p->range_parts().size())});
    }
    return w;
}

// Part p applied to members [xi, xi + nin) of x into members [yi, yi + nout) of y: a plain
// part directly, a stacked one on its slices (filled into the Work's lists, no allocation).
void apply_part(const Operator &p, const Operator::In &x, size_t xi, size_t nin, const Operator::Out &y, size_t yi,
                size_t nout, bool adjoint, Work *w, Slices &s)
{
    if (!p.stacked()) return p.apply(*x[xi], *y[yi], adjoint, w);
    s.in.resize(nin);  // within the capacity made with the Work: no allocation
    s.out.resize(nout);
    for (size_t k = 0; k < nin; ++k) s.in[k] = x[xi + k];
    for (size_t k = 0; k < nout; ++k) s.out[k] = y[yi + k];
    p.apply_parts(s.in, s.out, adjoint, w);
}

// Member i of the input through part i into member i of the output (stacked parts: their
// members in turn).
class StackedBlockDiag final : public Operator {
public:
    explicit StackedBlockDiag(std::vector<Operator::Ptr> parts)
        : Operator(parts.front()->dtype(), parts.front()->domain(), parts.front()->range()), parts_(std::move(parts))
    {
        rows_ = cols_ = 0;
        for (const Operator::Ptr &p : parts_) {
            rows_ = checked_add(rows_, p->rows(), "the stacked block-diagonal's rows");
            cols_ = checked_add(cols_, p->cols(), "the stacked block-diagonal's columns");
        }
        dparts_ = members(parts_, false);
        rparts_ = members(parts_, true);
        dstart_ = starts(parts_, false);
        rstart_ = starts(parts_, true);
    }
    bool may_fail() const override { return any_may_fail(parts_); }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override { return stack_work(parts_, e); }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        StackWork &sw = *static_cast<StackWork *>(w);
        const std::vector<size_t> &xs = adjoint ? rstart_ : dstart_, &ys = adjoint ? dstart_ : rstart_;
        for (size_t i = 0; i < parts_.size(); ++i)
            apply_part(*parts_[i], x, xs[i], xs[i + 1] - xs[i], y, ys[i], ys[i + 1] - ys[i], adjoint, part_of(w, i),
                       sw.slices[i]);
    }

private:
    std::vector<Operator::Ptr> parts_;
    std::vector<size_t> dstart_, rstart_;
};

// One array through every part into a stack (stacked parts add all their members); the
// adjoint sums the parts' adjoints.
class StackedVStack final : public Operator {
public:
    explicit StackedVStack(std::vector<Operator::Ptr> parts)
        : Operator(parts.front()->dtype(), parts.front()->domain(), parts.front()->range()), parts_(std::move(parts))
    {
        rows_ = 0;
        for (const Operator::Ptr &p : parts_) rows_ = checked_add(rows_, p->rows(), "the stacked vstack's rows");
        dparts_ = {domain_};
        rparts_ = members(parts_, true);
        rstart_ = starts(parts_, true);
    }
    bool may_fail() const override { return any_may_fail(parts_); }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override
    {
        WorkPtr w = stack_work(parts_, e);
        static_cast<StackWork &>(*w).sum =
            DistributedArray::create_from_layout(domain_, to_public(dtype_), space_to_public(e.space), nullptr, 0);
        return w;
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        StackWork &sw = *static_cast<StackWork *>(w);
        if (!adjoint) {
            for (size_t i = 0; i < parts_.size(); ++i)
                apply_part(*parts_[i], x, 0, 1, y, rstart_[i], rstart_[i + 1] - rstart_[i], false, part_of(w, i),
                           sw.slices[i]);
            return;
        }
        DistributedArray &sum = *sw.sum;
        const Scalar one = make_scalar(dtype_, 1, 0, "stacked vstack");
        for (size_t i = 0; i < parts_.size(); ++i) {
            sw.dst[0] = i == 0 ? y[0] : &sum;
            apply_part(*parts_[i], x, rstart_[i], rstart_[i + 1] - rstart_[i], sw.dst, 0, 1, true, part_of(w, i),
                       sw.slices[i]);
            if (i > 0)
                kernels::axpby(y[0]->exec(), dtype_, y[0]->local_size(), one.data(), sum.data(), one.data(),
                               y[0]->data());
        }
    }

private:
    std::vector<Operator::Ptr> parts_;
    std::vector<size_t> rstart_;
};

}  // namespace

ArrayLayout::Ptr vector_layout(const CommPtr &c, const std::vector<int64_t> &n, plm_partition_t part,
                               std::vector<int> mask)
{
    Layout l;
    l.partition = part;
    l.global = {part == PLM_PARTITION_SCATTER ? checked_sum(n, "the local sizes summed over the ranks",
                                                            PLM_ERR_SIZE_MISMATCH)
                                              : n.front()};
    for (int64_t v : n) l.local.push_back({v});
    return ArrayLayout::make(c, std::move(l), std::move(mask));
}

Operator::Ptr stacked_block_diag(std::vector<Operator::Ptr> parts)
{
    require_stackable(parts);
    return std::make_shared<StackedBlockDiag>(std::move(parts));
}

Operator::Ptr stacked_vstack(std::vector<Operator::Ptr> parts)
{
    require_stackable(parts);
    for (const Operator::Ptr &p : parts) {
        PLM_REQUIRE(p->domain_parts().size() == 1, PLM_ERR_SIZE_MISMATCH,
                    "the parts of a stacked vstack take one array (a part takes a stack of %zu)",
                    p->domain_parts().size());
        PLM_REQUIRE(p->domain()->same_as(*parts.front()->domain()), PLM_ERR_SIZE_MISMATCH,
                    "the parts of a stacked vstack must share one domain");
    }
    return std::make_shared<StackedVStack>(std::move(parts));
}

Operator::Ptr block_diag(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts,
                         std::vector<int> mask)
{
    const SharedLanes dtl = check_parts(ag, parts);
    ag.check([&] {
        if (mask.empty()) return;
        PLM_REQUIRE(static_cast<int>(mask.size()) == c->size(), PLM_ERR_SIZE_MISMATCH,
                    "mask has %zu entries, the communicator has %d ranks", mask.size(), c->size());
        for (int m : mask) PLM_REQUIRE(m >= 0, PLM_ERR_INVALID_ARG, "mask group id %d is negative", m);
    });
    ag.fold_all(mask);
    const size_t fails = add_may_fail(ag, parts);
    const SizeLanes sz = add_sizes(ag, parts);
    ag.run();
    const DType dt = dtype_of(ag, dtl);
    return comm::finish_collective(*c, "op_blockdiag", {&mask}, [&] {
        ArrayLayout::Ptr domain = vector_layout(c, gathered(ag, sz.cols), PLM_PARTITION_SCATTER, mask);
        ArrayLayout::Ptr range = vector_layout(c, gathered(ag, sz.rows), PLM_PARTITION_SCATTER, mask);
        return std::make_shared<BlockDiag>(dt, std::move(domain), std::move(range), std::move(parts),
                                           ag.get(fails) > 0);
    });
}

namespace {
// A vstack, or (adjoint) the hstack of the parts' adjoints.
Operator::Ptr make_vstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts, bool adjoint_of)
{
    const SharedLanes dtl = check_parts(ag, parts);
    std::optional<int64_t> mine;  // this rank's columns, when it has parts
    ag.check([&] {
        if (parts.empty()) return;
        const int64_t cols = parts.front()->cols();
        for (const Operator::Ptr &p : parts)
            PLM_REQUIRE(p->cols() == cols, PLM_ERR_SIZE_MISMATCH, "vstack parts with %lld and %lld columns",
                        static_cast<long long>(cols), static_cast<long long>(p->cols()));
        checked_bytes(cols, parts.front()->dtype(), "the vstack's replicated domain in bytes");  // held whole
        mine = cols;
    });
    const SharedLanes coll = add_shared(ag, mine);  // every rank's parts have the same columns
    const size_t fails = add_may_fail(ag, parts);
    const SizeLanes sz = add_sizes(ag, parts);
    ag.run();
    const DType dt = dtype_of(ag, dtl);
    const int64_t cols = agreed(ag, coll, "column count");
    return comm::finish_collective(*c, adjoint_of ? "op_hstack" : "op_vstack", {}, [&] {
        ArrayLayout::Ptr domain = vector_layout(c, std::vector<int64_t>(static_cast<size_t>(c->size()), cols),
                                                PLM_PARTITION_BROADCAST, {});
        ArrayLayout::Ptr range = vector_layout(c, gathered(ag, sz.rows), PLM_PARTITION_SCATTER, {});
        Operator::Ptr v =
            std::make_shared<VStack>(dt, std::move(domain), std::move(range), std::move(parts), ag.get(fails) > 0);
        return adjoint_of ? adjoint(v) : v;
    });
}
}  // namespace

Operator::Ptr vstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts)
{
    return make_vstack(ag, c, std::move(parts), false);
}

Operator::Ptr broadcast(comm::Agreement &ag, const CommPtr &c, Operator::Ptr local)
{
    std::vector<Operator::Ptr> parts;
    ag.check([&] {
        PLM_REQUIRE(local, PLM_ERR_INVALID_ARG, "a local operator is NULL");
        parts.push_back(local);
    });
    const SharedLanes dtl = check_parts(ag, parts);
    int64_t rows = 0, cols = 0;
    ag.check([&] {
        rows = local->rows();
        cols = local->cols();
    });
    ag.fold(rows);  // the same operator shape on every rank
    ag.fold(cols);
    ag.run();
    dtype_of(ag, dtl);
    return comm::finish_collective(*c, "op_broadcast", {}, [&] {
        const size_t P = static_cast<size_t>(c->size());
        ArrayLayout::Ptr domain = vector_layout(c, std::vector<int64_t>(P, cols), PLM_PARTITION_BROADCAST, {});
        ArrayLayout::Ptr range = vector_layout(c, std::vector<int64_t>(P, rows), PLM_PARTITION_BROADCAST, {});
        return std::make_shared<Broadcast>(std::move(domain), std::move(range), std::move(local));
    });
}

Operator::Ptr hstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts)
{
    // [A_1 ... A_n] = [A_1^H; ...; A_n^H]^H: the forward sums over the ranks.
    std::vector<Operator::Ptr> adj;
    ag.check([&] {
        for (const Operator::Ptr &p : parts) adj.push_back(p && p->is_local() ? adjoint(p) : p);
    });
    if (!ag.ok()) adj = parts;
    return make_vstack(ag, c, std::move(adj), true);
}

}  // namespace plm::ops
