// Distributed operators built from each rank's local operators: BlockDiag, VStack, HStack.
#include "ops/operator.hpp"

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

bool any_may_fail(const std::vector<Operator::Ptr> &parts)
{
    for (const Operator::Ptr &p : parts)
        if (p->may_fail()) return true;
    return false;
}

// What the parts on every rank allow, agreed at construction: a callback block on one rank
// makes every rank agree on an apply's outcome, and the device path needs device-capable
// blocks on every rank (ranks must take the same path, or their collectives would not match).
struct Traits {
    bool may_fail = false, on_device = false;
};
struct TraitLanes {
    size_t fail, device;
};

TraitLanes add_traits(comm::Agreement &ag, const std::vector<Operator::Ptr> &parts)
{
    const TraitLanes t{ag.add_lanes(1, comm::LaneOp::max), ag.add_lanes(1, comm::LaneOp::min)};
    if (!ag.ok()) return t;  // the parts may be invalid; the agreement fails anyway
    bool dev = !parts.empty();
    for (const Operator::Ptr &p : parts) dev = dev && p->on_device();
    ag.set(t.fail, any_may_fail(parts));
    ag.set(t.device, dev);
    return t;
}

Traits read_traits(const comm::Agreement &ag, const TraitLanes &t) { return {ag.get(t.fail) > 0, ag.get(t.device) > 0}; }

class BlockDiag final : public Operator {
public:
    BlockDiag(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, std::vector<Operator::Ptr> parts, Traits t)
        : Operator(dt, std::move(domain), std::move(range)), parts_(std::move(parts)), traits_(t)
    {
    }
    bool may_fail() const override { return traits_.may_fail; }
    bool on_device() const override { return traits_.on_device; }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        const bool device = x.space() == Space::device;
        const std::optional<Error> err = comm::capture([&] {
            int64_t in = 0, out = 0;
            for (const Operator::Ptr &p : parts_) {
                void *to = at(y.data(), out, dtype_);
                const void *from = at(x.data(), in, dtype_);
                if (device)
                    p->local_apply_device(x.exec(), adjoint, from, to);
                else
                    p->local_apply(adjoint, from, to);
                in += adjoint ? p->rows() : p->cols();
                out += adjoint ? p->cols() : p->rows();
            }
        });
        agree_on(*this, comm(), err, device);
    }

private:
    std::vector<Operator::Ptr> parts_;
    Traits traits_;
};

class VStack final : public Operator {
public:
    VStack(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, std::vector<Operator::Ptr> parts, Buffer scratch,
           bool fails)
        : Operator(dt, std::move(domain), std::move(range)), parts_(std::move(parts)), fails_(fails),
          scratch_(std::move(scratch))
    {
    }
    bool may_fail() const override { return fails_; }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        if (!adjoint) {  // every rank has all of x: its parts fill its rows of y
            const std::optional<Error> err = comm::capture([&] {
                int64_t out = 0;
                for (const Operator::Ptr &p : parts_) {
                    p->local_apply(false, x.data(), at(y.data(), out, dtype_));
                    out += p->rows();
                }
            });
            agree_on(*this, comm(), err);
            return;
        }
        // Adjoint: the local sum of A_i^H x_i, then one allreduce over the ranks, in place.
        const std::optional<Error> err = comm::capture([&] {
            int64_t in = 0;
            for (size_t i = 0; i < parts_.size(); ++i) {
                const Operator &p = *parts_[i];
                if (i == 0) {
                    p.local_apply(true, at(x.data(), in, dtype_), y.data());
                } else {
                    p.local_apply(true, at(x.data(), in, dtype_), scratch_.data());
                    const Scalar one = make_scalar(dtype_, 1, 0, "vstack");
                    kernels::axpby(y.exec(), dtype_, cols_, one.data(), scratch_.data(), one.data(), y.data());
                }
                in += p.rows();
            }
        });
        agree_on(*this, comm(), err);
        comm::allreduce(comm(), y.exec(), y.data(), y.data(), cols_, dtype_, comm::ReduceOp::sum);
    }

private:
    std::vector<Operator::Ptr> parts_;
    bool fails_;
    Buffer scratch_;  // cols elements, for the adjoint's local sum
};

class Broadcast final : public Operator {
public:
    Broadcast(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, Operator::Ptr local)
        : Operator(local->dtype(), std::move(domain), std::move(range)), local_(std::move(local))
    {
    }
    bool may_fail() const override { return local_->may_fail(); }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        agree_on(*this, comm(), comm::capture([&] { local_->local_apply(adjoint, x.data(), y.data()); }));
    }

private:
    Operator::Ptr local_;
};

// The sum of this rank's parts' rows (or columns): checked inside the agreement, as the
// rank's own argument.
int64_t local_sum(const std::vector<Operator::Ptr> &parts, bool rows)
{
    int64_t n = 0;
    for (const Operator::Ptr &p : parts)
        n = checked_add(n, rows ? p->rows() : p->cols(), "the sizes of this rank's local operators summed");
    return n;
}

std::vector<int64_t> column(const std::vector<int64_t> &pairs, int k)
{
    std::vector<int64_t> v;
    for (size_t i = static_cast<size_t>(k); i < pairs.size(); i += 2) v.push_back(pairs[i]);
    return v;
}

// Every rank's (rows, cols) sums, gathered after the agreement. Their totals over the ranks
// (the rows, and the columns when they are summed too) are the global lengths: checked in a
// second agreement, which every rank, holding the same sums, passes or fails alike.
std::vector<int64_t> gathered_sizes(const comm::Communicator &c, int64_t rows, int64_t cols, bool sum_cols)
{
    std::vector<int64_t> all = comm::allgather_i64(c, {rows, cols});
    comm::check_gathered(c, "operator sizes", [&] {
        for (int k = 0; k < (sum_cols ? 2 : 1); ++k)
            checked_sum(column(all, k), "the sizes of the local operators summed over the ranks",
                        PLM_ERR_SIZE_MISMATCH);
    });
    return all;
}

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
    void apply_parts(const In &x, const Out &y, bool adjoint) const override
    {
        for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->apply(*x[i], *y[i], adjoint);
    }

private:
    std::vector<Operator::Ptr> parts_;
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
        sum_ = DistributedArray::create_from_layout(domain_, to_public(dtype_), PLM_MEMORY_HOST, nullptr);
    }
    bool may_fail() const override { return any_may_fail(parts_); }
    void apply_parts(const In &x, const Out &y, bool adjoint) const override
    {
        if (!adjoint) {
            for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->apply(*x[0], *y[i], false);
            return;
        }
        const Scalar one = make_scalar(dtype_, 1, 0, "stacked vstack");
        for (size_t i = 0; i < parts_.size(); ++i) {
            DistributedArray &out = i == 0 ? *y[0] : *sum_;
            parts_[i]->apply(*x[i], out, true);
            if (i > 0) kernels::axpby(y[0]->exec(), dtype_, y[0]->local_size(), one.data(), sum_->data(), one.data(),
                                      y[0]->data());
        }
    }

private:
    std::vector<Operator::Ptr> parts_;
    DistributedArray::Ptr sum_;
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

Operator::Ptr block_diag(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts,
                         std::vector<int> mask)
{
    const DType dt = check_parts(ag, parts);
    int64_t rows = 0, cols = 0;
    ag.check([&] {
        rows = local_sum(parts, true);
        cols = local_sum(parts, false);
        if (mask.empty()) return;
        PLM_REQUIRE(static_cast<int>(mask.size()) == c->size(), PLM_ERR_SIZE_MISMATCH,
                    "mask has %zu entries, the communicator has %d ranks", mask.size(), c->size());
        for (int m : mask) PLM_REQUIRE(m >= 0, PLM_ERR_INVALID_ARG, "mask group id %d is negative", m);
    });
    ag.fold_all(mask);
    const TraitLanes t = add_traits(ag, parts);
    ag.run();
    const std::vector<int64_t> sizes = gathered_sizes(*c, rows, cols, true);
    ArrayLayout::Ptr domain = vector_layout(c, column(sizes, 1), PLM_PARTITION_SCATTER, mask);
    ArrayLayout::Ptr range = vector_layout(c, column(sizes, 0), PLM_PARTITION_SCATTER, mask);
    return std::make_shared<BlockDiag>(dt, std::move(domain), std::move(range), std::move(parts), read_traits(ag, t));
}

Operator::Ptr vstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts)
{
    const DType dt = check_parts(ag, parts);
    int64_t rows = 0, cols = 0;
    Buffer scratch;
    ag.check([&] {
        cols = parts.front()->cols();
        for (const Operator::Ptr &p : parts)
            PLM_REQUIRE(p->cols() == cols, PLM_ERR_SIZE_MISMATCH, "vstack parts with %lld and %lld columns",
                        static_cast<long long>(cols), static_cast<long long>(p->cols()));
        rows = local_sum(parts, true);
        scratch = Buffer::allocate(Space::host, checked_bytes(cols, dt, "the vstack's scratch vector"));
    });
    ag.fold(cols);  // every rank's parts have the same columns
    const TraitLanes t = add_traits(ag, parts);
    ag.run();
    const std::vector<int64_t> sizes = gathered_sizes(*c, rows, cols, false);
    ArrayLayout::Ptr domain = vector_layout(c, std::vector<int64_t>(static_cast<size_t>(c->size()), cols),
                                            PLM_PARTITION_BROADCAST, {});
    ArrayLayout::Ptr range = vector_layout(c, column(sizes, 0), PLM_PARTITION_SCATTER, {});
    return std::make_shared<VStack>(dt, std::move(domain), std::move(range), std::move(parts), std::move(scratch),
                                    read_traits(ag, t).may_fail);
}

Operator::Ptr broadcast(comm::Agreement &ag, const CommPtr &c, Operator::Ptr local)
{
    check_parts(ag, {local});
    int64_t rows = 0, cols = 0;
    ag.check([&] {
        rows = local->rows();
        cols = local->cols();
    });
    ag.fold(rows);  // the same operator shape on every rank
    ag.fold(cols);
    ag.run();
    const size_t P = static_cast<size_t>(c->size());
    ArrayLayout::Ptr domain = vector_layout(c, std::vector<int64_t>(P, cols), PLM_PARTITION_BROADCAST, {});
    ArrayLayout::Ptr range = vector_layout(c, std::vector<int64_t>(P, rows), PLM_PARTITION_BROADCAST, {});
    return std::make_shared<Broadcast>(std::move(domain), std::move(range), std::move(local));
}

Operator::Ptr hstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts)
{
    // [A_1 ... A_n] = [A_1^H; ...; A_n^H]^H: the forward sums over the ranks.
    std::vector<Operator::Ptr> adj;
    ag.check([&] {
        for (const Operator::Ptr &p : parts) adj.push_back(p && p->is_local() ? adjoint(p) : p);
    });
    if (!ag.ok()) adj = parts;
    return adjoint(vstack(ag, c, std::move(adj)));
}

}  // namespace plm::ops
