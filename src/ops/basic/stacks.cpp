// Distributed operators built from each rank's local operators: BlockDiag, VStack, HStack,
// the broadcast wrapper, and the stacked operators over distributed parts.
#include "ops/operator.hpp"

#include <algorithm>

namespace plm::ops {

namespace {

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)); }

// Checks this rank's parts (at least one, all local, one dtype) into ag; returns the dtype.
DType check_parts(comm::Agreement &ag, const std::vector<Operator::Ptr> &parts)
{
    DType dt = DType::f64;
    ag.check([&] {
        PLM_REQUIRE(!parts.empty(), PLM_ERR_INVALID_ARG, "every rank needs at least one local operator");
        for (const Operator::Ptr &p : parts) {
            PLM_REQUIRE(p, PLM_ERR_INVALID_ARG, "a local operator is NULL");
            PLM_REQUIRE(p->is_local(), PLM_ERR_INVALID_ARG,
                        "stacks and block-diagonals take local operators (dense, diagonal, callback, ...)");
            PLM_REQUIRE(p->dtype() == parts.front()->dtype(), PLM_ERR_DTYPE_MISMATCH,
                        "local operators of %s and %s on one rank", dtype_name(parts.front()->dtype()),
                        dtype_name(p->dtype()));
        }
        dt = parts.front()->dtype();
    });
    ag.fold(static_cast<int64_t>(dt));
    return dt;
}

bool all_clinear(const std::vector<Operator::Ptr> &parts)
{
    return std::all_of(parts.begin(), parts.end(), [](const Operator::Ptr &p) { return p->clinear(); });
}

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
        // Adjoint: the local sum of A_i^H x_i, then one allreduce over the ranks, in place.
        void *sum = static_cast<VStackWork *>(w)->sum.data();
        const std::optional<Error> err = comm::capture([&] {
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
        PLM_REQUIRE(p && !p->is_local() && !p->stacked(), PLM_ERR_INVALID_ARG,
                    "stacked operators take plain distributed operators");
        PLM_REQUIRE(p->dtype() == parts.front()->dtype(), PLM_ERR_DTYPE_MISMATCH, "parts of %s and %s",
                    dtype_name(parts.front()->dtype()), dtype_name(p->dtype()));
        PLM_REQUIRE(p->comm().size() == parts.front()->comm().size(), PLM_ERR_SIZE_MISMATCH,
                    "parts on communicators of different sizes");
    }
}

std::vector<ArrayLayout::Ptr> domains(const std::vector<Operator::Ptr> &parts)
{
    std::vector<ArrayLayout::Ptr> v;
    for (const Operator::Ptr &p : parts) v.push_back(p->domain());
    return v;
}

std::vector<ArrayLayout::Ptr> ranges(const std::vector<Operator::Ptr> &parts)
{
    std::vector<ArrayLayout::Ptr> v;
    for (const Operator::Ptr &p : parts) v.push_back(p->range());
    return v;
}

// Member i of the input through part i into member i of the output.
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
        dparts_ = domains(parts_);
        rparts_ = ranges(parts_);
    }
    bool may_fail() const override { return any_may_fail(parts_); }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override { return parts_work(parts_, e); }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->apply(*x[i], *y[i], adjoint, part_of(w, i));
    }

private:
    std::vector<Operator::Ptr> parts_;
};

// The Work of a stacked vstack: its parts' Works and the adjoint's running sum.
struct StackedVStackWork : PartsWork {
    DistributedArray::Ptr sum;
};

// One array through every part into a stack; the adjoint sums the parts' adjoints.
class StackedVStack final : public Operator {
public:
    explicit StackedVStack(std::vector<Operator::Ptr> parts)
        : Operator(parts.front()->dtype(), parts.front()->domain(), parts.front()->range()), parts_(std::move(parts))
    {
        rows_ = 0;
        for (const Operator::Ptr &p : parts_) rows_ = checked_add(rows_, p->rows(), "the stacked vstack's rows");
        dparts_ = {domain_};
        rparts_ = ranges(parts_);
    }
    bool may_fail() const override { return any_may_fail(parts_); }
    bool clinear() const override { return all_clinear(parts_); }
    bool native(Space s) const override { return all_native(parts_, s); }
    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<StackedVStackWork>();
        for (const Operator::Ptr &p : parts_) w->parts.push_back(p->make_work(e));
        w->sum = DistributedArray::create_from_layout(domain_, to_public(dtype_), space_to_public(e.space), nullptr, 0);
        return w;
    }
    const std::vector<Operator::Ptr> &parts() const { return parts_; }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        if (!adjoint) {
            for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->apply(*x[0], *y[i], false, part_of(w, i));
            return;
        }
        DistributedArray &sum = *static_cast<StackedVStackWork *>(w)->sum;
        const Scalar one = make_scalar(dtype_, 1, 0, "stacked vstack");
        for (size_t i = 0; i < parts_.size(); ++i) {
            DistributedArray &out = i == 0 ? *y[0] : sum;
            parts_[i]->apply(*x[i], out, true, part_of(w, i));
            if (i > 0)
                kernels::axpby(y[0]->exec(), dtype_, y[0]->local_size(), one.data(), sum.data(), one.data(),
                               y[0]->data());
        }
    }

private:
    std::vector<Operator::Ptr> parts_;
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
    for (const Operator::Ptr &p : parts)
        PLM_REQUIRE(p->domain()->same_as(*parts.front()->domain()), PLM_ERR_SIZE_MISMATCH,
                    "the parts of a stacked vstack must share one domain");
    return std::make_shared<StackedVStack>(std::move(parts));
}

std::vector<Operator::Ptr> vstack_parts(const Operator::Ptr &a)
{
    PLM_REQUIRE(a && !a->is_local(), PLM_ERR_INVALID_ARG, "a distributed operator is needed");
    if (!a->stacked()) return {a};
    const auto *v = dynamic_cast<const StackedVStack *>(a.get());
    PLM_REQUIRE(v, PLM_ERR_INVALID_ARG, "a plain distributed operator or a stacked vstack is needed");
    return v->parts();
}

Operator::Ptr block_diag(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts,
                         std::vector<int> mask)
{
    const DType dt = check_parts(ag, parts);
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
    const DType dt = check_parts(ag, parts);
    int64_t cols = 0;
    ag.check([&] {
        cols = parts.front()->cols();
        for (const Operator::Ptr &p : parts)
            PLM_REQUIRE(p->cols() == cols, PLM_ERR_SIZE_MISMATCH, "vstack parts with %lld and %lld columns",
                        static_cast<long long>(cols), static_cast<long long>(p->cols()));
        checked_bytes(cols, dt, "the vstack's replicated domain in bytes");  // every rank holds it whole
    });
    ag.fold(cols);  // every rank's parts have the same columns
    const size_t fails = add_may_fail(ag, parts);
    const SizeLanes sz = add_sizes(ag, parts);
    ag.run();
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
    ag.check([&] { parts.push_back(local); });
    check_parts(ag, parts);
    int64_t rows = 0, cols = 0;
    ag.check([&] {
        rows = local->rows();
        cols = local->cols();
    });
    ag.fold(rows);  // the same operator shape on every rank
    ag.fold(cols);
    ag.run();
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
