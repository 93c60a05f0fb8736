// Composite operators: adjoint, scaled, sum, product, transpose/conj and power, of local or of
// distributed operators, plain or stacked (mapping stacks of arrays: then every intermediate
// is a stack too, and the operands' members must match member by member). Their intermediate
// vectors live in the Work of each apply (a buffer for local parts, an array - or a stack of
// arrays with its operand lists - for distributed ones, in the data's memory space), next to
// the Works of their parts, so an apply allocates nothing.
#include <algorithm>
#include <complex>
#include <cstring>

#include "ops/operator.hpp"

namespace plm::ops {

namespace {

// One intermediate vector of a composite: n_local elements in e's space for local operators,
// or an array on a layout.
struct Temp {
    Buffer host;
    DistributedArray::Ptr array;
};

Temp make_temp(DType dt, const Exec &e, int64_t n_local, const ArrayLayout::Ptr &layout)
{
    Temp t;
    if (layout) {
        t.array = DistributedArray::create_from_layout(layout, to_public(dt), space_to_public(e.space), nullptr, 0);
    } else {
        if (e.space == Space::device) use_device(e.device);
        t.host = Buffer::allocate(e.space, checked_bytes(n_local, dt, "an intermediate vector in bytes"));
    }
    return t;
}

void *temp_data(const Temp &t) { return t.array ? t.array->data() : t.host.data(); }

// Intermediate stacks of a stacked composite: an array on each layout and the operand lists
// that pass them (as inputs or outputs) to the parts' apply_parts.
struct Stack {
    std::vector<DistributedArray::Ptr> arrays;
    Operator::In in;
    Operator::Out out;
};

Stack make_stack(DType dt, const Exec &e, const std::vector<ArrayLayout::Ptr> &layouts)
{
    Stack s;
    for (const ArrayLayout::Ptr &l : layouts) {
        s.arrays.push_back(DistributedArray::create_from_layout(l, to_public(dt), space_to_public(e.space), nullptr, 0));
        s.in.push_back(s.arrays.back().get());
        s.out.push_back(s.arrays.back().get());
    }
    return s;
}

// A composite's Work: its temporaries (plain) or intermediate stacks (stacked), and its
// parts' Works.
struct CompositeWork : Work {
    std::vector<Temp> temps;
    std::vector<Stack> stacks;
    WorkPtr a, b;
};

CompositeWork &cw(Work *w) { return *static_cast<CompositeWork *>(w); }

void require_same_kind(const Operator &a, const Operator &b, const char *what)
{
    PLM_REQUIRE(a.dtype() == b.dtype(), PLM_ERR_DTYPE_MISMATCH, "%s of operators of %s and %s", what,
                dtype_name(a.dtype()), dtype_name(b.dtype()));
    PLM_REQUIRE(a.is_local() == b.is_local(), PLM_ERR_INVALID_ARG, "%s of a local and a distributed operator", what);
}

// Whether two lists of member layouts agree member by member.
bool same_members(const std::vector<ArrayLayout::Ptr> &a, const std::vector<ArrayLayout::Ptr> &b)
{
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!a[i]->same_as(*b[i])) return false;
    return true;
}

void scale_all(const Operator::Out &y, DType dt, const Scalar &alpha)
{
    for (DistributedArray *m : y) kernels::scale(m->exec(), dt, m->local_size(), alpha.data(), m->data());
}

void conj_all(const Operator::In &x, const Operator::Out &y, DType dt)
{
    for (size_t i = 0; i < x.size(); ++i) kernels::conj(y[i]->exec(), dt, y[i]->local_size(), x[i]->data(), y[i]->data());
}

class Adjoint final : public Operator {
public:
    explicit Adjoint(Operator::Ptr a) : Operator(a->dtype(), a->cols(), a->rows()), a_(std::move(a))
    {
        domain_ = a_->range();
        range_ = a_->domain();
        if (a_->stacked()) {
            dparts_ = a_->range_parts();
            rparts_ = a_->domain_parts();
        }
    }
    bool may_fail() const override { return a_->may_fail(); }
    bool clinear() const override { return a_->clinear(); }
    bool native(Space s) const override { return a_->native(s); }
    WorkPtr make_work(const Exec &e) const override { return a_->make_work(e); }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        a_->apply_parts(x, y, !adjoint, w);
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        a_->local_apply(e, !adjoint, in, out, w);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        a_->apply(x, y, !adjoint, w);
    }

private:
    Operator::Ptr a_;
};

class Scaled final : public Operator {
public:
    Scaled(Operator::Ptr a, const Scalar &alpha)
        : Operator(a->dtype(), a->rows(), a->cols()), a_(std::move(a)), alpha_(alpha)
    {
        domain_ = a_->domain();
        range_ = a_->range();
        if (a_->stacked()) {
            dparts_ = a_->domain_parts();
            rparts_ = a_->range_parts();
        }
        dispatch_float(dtype_, [&](auto t) {  // the adjoint scales by conj(alpha)
            using T = decltype(t);
            T v;
            std::memcpy(&v, alpha_.bytes, sizeof v);
            if constexpr (is_complex_v<T>) v = std::conj(v);
            std::memcpy(conj_.bytes, &v, sizeof v);
        });
    }
    bool may_fail() const override { return a_->may_fail(); }
    bool clinear() const override { return a_->clinear(); }
    bool native(Space s) const override { return a_->native(s); }
    WorkPtr make_work(const Exec &e) const override { return a_->make_work(e); }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        a_->local_apply(e, adjoint, in, out, w);
        kernels::scale(e, dtype_, adjoint ? cols_ : rows_, (adjoint ? conj_ : alpha_).data(), out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        a_->apply(x, y, adjoint, w);
        kernels::scale(y.exec(), dtype_, y.local_size(), (adjoint ? conj_ : alpha_).data(), y.data());
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        a_->apply_parts(x, y, adjoint, w);
        scale_all(y, dtype_, adjoint ? conj_ : alpha_);
    }

private:
    Operator::Ptr a_;
    Scalar alpha_, conj_;
};

// A pair of parts (sum, product): their Works and the temporaries of the composite.
class Pair : public Operator {
public:
    bool may_fail() const override { return a_->may_fail() || b_->may_fail(); }
    bool clinear() const override { return a_->clinear() && b_->clinear(); }
    bool native(Space s) const override { return a_->native(s) && b_->native(s); }

protected:
    Pair(DType dt, int64_t rows, int64_t cols, Operator::Ptr a, Operator::Ptr b)
        : Operator(dt, rows, cols), a_(std::move(a)), b_(std::move(b))
    {
    }
    // The pair's Work with temporaries of n_local elements (local) or on layouts (plain
    // distributed), or intermediate stacks on lists of member layouts (stacked).
    WorkPtr pair_work(const Exec &e, std::initializer_list<std::pair<int64_t, ArrayLayout::Ptr>> temps,
                      std::initializer_list<std::vector<ArrayLayout::Ptr>> stacks) const
    {
        auto w = std::make_unique<CompositeWork>();
        if (stacked())
            for (const std::vector<ArrayLayout::Ptr> &l : stacks) w->stacks.push_back(make_stack(dtype_, e, l));
        else
            for (const auto &[n, l] : temps) w->temps.push_back(make_temp(dtype_, e, n, l));
        w->a = a_->make_work(e);
        w->b = b_->make_work(e);
        return w;
    }
    Operator::Ptr a_, b_;
};

class Sum final : public Pair {
public:
    Sum(Operator::Ptr a, Operator::Ptr b) : Pair(a->dtype(), a->rows(), a->cols(), a, b)
    {
        domain_ = a_->domain();
        range_ = a_->range();
        if (a_->stacked() || b_->stacked()) {
            dparts_ = a_->domain_parts();
            rparts_ = a_->range_parts();
        }
    }
    WorkPtr make_work(const Exec &e) const override
    {
        return pair_work(e, {{rows_, range_}, {cols_, domain_}}, {range_parts(), domain_parts()});  // fwd, adj
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        CompositeWork &c = cw(w);
        void *t = temp_data(c.temps[adjoint ? 1 : 0]);
        a_->local_apply(e, adjoint, in, out, c.a.get());
        b_->local_apply(e, adjoint, in, t, c.b.get());
        add(e, adjoint ? cols_ : rows_, t, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        CompositeWork &c = cw(w);
        DistributedArray &t = *c.temps[adjoint ? 1 : 0].array;
        a_->apply(x, y, adjoint, c.a.get());
        b_->apply(x, t, adjoint, c.b.get());
        add(y.exec(), y.local_size(), t.data(), y.data());
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        if (!stacked()) return apply(*x[0], *y[0], adjoint, w);
        CompositeWork &c = cw(w);
        const Stack &t = c.stacks[adjoint ? 1 : 0];
        a_->apply_parts(x, y, adjoint, c.a.get());
        b_->apply_parts(x, t.out, adjoint, c.b.get());
        for (size_t i = 0; i < y.size(); ++i) add(y[i]->exec(), y[i]->local_size(), t.arrays[i]->data(), y[i]->data());
    }

private:
    void add(const Exec &e, int64_t n, const void *t, void *y) const
    {
        const Scalar one = make_scalar(dtype_, 1, 0, "sum");
        kernels::axpby(e, dtype_, n, one.data(), t, one.data(), y);
    }
};

// a b: b is applied first; the intermediate vector lives on b's range (a's domain).
class Product final : public Pair {
public:
    Product(Operator::Ptr a, Operator::Ptr b) : Pair(a->dtype(), a->rows(), b->cols(), a, b)
    {
        domain_ = b_->domain();
        range_ = a_->range();
        if (a_->stacked() || b_->stacked()) {
            dparts_ = b_->domain_parts();
            rparts_ = a_->range_parts();
        }
    }
    WorkPtr make_work(const Exec &e) const override
    {
        return pair_work(e, {{b_->rows(), b_->range()}}, {b_->range_parts()});
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        CompositeWork &c = cw(w);
        void *m = temp_data(c.temps[0]);
        if (!adjoint) {
            b_->local_apply(e, false, in, m, c.b.get());
            a_->local_apply(e, false, m, out, c.a.get());
        } else {
            a_->local_apply(e, true, in, m, c.a.get());
            b_->local_apply(e, true, m, out, c.b.get());
        }
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        CompositeWork &c = cw(w);
        DistributedArray &m = *c.temps[0].array;
        if (!adjoint) {
            b_->apply(x, m, false, c.b.get());
            a_->apply(m, y, false, c.a.get());
        } else {
            a_->apply(x, m, true, c.a.get());
            b_->apply(m, y, true, c.b.get());
        }
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        if (!stacked()) return apply(*x[0], *y[0], adjoint, w);
        CompositeWork &c = cw(w);
        const Stack &m = c.stacks[0];
        if (!adjoint) {
            b_->apply_parts(x, m.out, false, c.b.get());
            a_->apply_parts(m.in, y, false, c.a.get());
        } else {
            a_->apply_parts(x, m.out, true, c.a.get());
            b_->apply_parts(m.in, y, true, c.b.get());
        }
    }
};

// out = conj(a' conj(in)) where a' is a (conj) or a^H (transpose). Real dtypes skip the
// conjugations: then conj(a) = a and a^T = a^H.
class ConjSandwich final : public Operator {
public:
    ConjSandwich(Operator::Ptr a, bool flip)
        : Operator(a->dtype(), flip ? a->cols() : a->rows(), flip ? a->rows() : a->cols()), a_(std::move(a)),
          flip_(flip)
    {
        domain_ = flip_ ? a_->range() : a_->domain();
        range_ = flip_ ? a_->domain() : a_->range();
        if (a_->stacked()) {
            dparts_ = flip_ ? a_->range_parts() : a_->domain_parts();
            rparts_ = flip_ ? a_->domain_parts() : a_->range_parts();
        }
    }
    bool may_fail() const override { return a_->may_fail(); }
    bool clinear() const override { return a_->clinear(); }
    bool native(Space s) const override { return a_->native(s); }
    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<CompositeWork>();
        if (is_complex(dtype_)) {  // the conjugated input, forward and adjoint
            if (stacked()) {
                w->stacks.push_back(make_stack(dtype_, e, domain_parts()));
                w->stacks.push_back(make_stack(dtype_, e, range_parts()));
            } else {
                w->temps.push_back(make_temp(dtype_, e, cols_, domain_));
                w->temps.push_back(make_temp(dtype_, e, rows_, range_));
            }
        }
        w->a = a_->make_work(e);
        return w;
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        CompositeWork &c = cw(w);
        const bool inner = adjoint != flip_;
        if (!is_complex(dtype_)) return a_->local_apply(e, inner, in, out, c.a.get());
        void *t = temp_data(c.temps[adjoint ? 1 : 0]);
        const int64_t n_in = adjoint ? rows_ : cols_, n_out = adjoint ? cols_ : rows_;
        kernels::conj(e, dtype_, n_in, in, t);
        a_->local_apply(e, inner, t, out, c.a.get());
        kernels::conj(e, dtype_, n_out, out, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        CompositeWork &c = cw(w);
        const bool inner = adjoint != flip_;
        if (!is_complex(dtype_)) return a_->apply(x, y, inner, c.a.get());
        DistributedArray &t = *c.temps[adjoint ? 1 : 0].array;
        kernels::conj(t.exec(), dtype_, t.local_size(), x.data(), t.data());
        a_->apply(t, y, inner, c.a.get());
        kernels::conj(y.exec(), dtype_, y.local_size(), y.data(), y.data());
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        if (!stacked()) return apply(*x[0], *y[0], adjoint, w);
        CompositeWork &c = cw(w);
        const bool inner = adjoint != flip_;
        if (!is_complex(dtype_)) return a_->apply_parts(x, y, inner, c.a.get());
        const Stack &t = c.stacks[adjoint ? 1 : 0];
        conj_all(x, t.out, dtype_);
        a_->apply_parts(t.in, y, inner, c.a.get());
        for (DistributedArray *m : y) kernels::conj(m->exec(), dtype_, m->local_size(), m->data(), m->data());
    }

private:
    Operator::Ptr a_;
    bool flip_;
};

// a^p by repeated application through two temporaries; p = 0 copies.
class Power final : public Operator {
public:
    Power(Operator::Ptr a, int p) : Operator(a->dtype(), a->rows(), a->cols()), a_(std::move(a)), p_(p)
    {
        domain_ = a_->domain();
        range_ = a_->range();
        if (a_->stacked()) {
            dparts_ = a_->domain_parts();
            rparts_ = a_->range_parts();
        }
    }
    bool may_fail() const override { return a_->may_fail(); }
    bool clinear() const override { return a_->clinear(); }
    bool native(Space s) const override { return a_->native(s); }
    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<CompositeWork>();
        for (int i = 0; i < std::min(p_ - 1, 2); ++i) {
            if (stacked()) w->stacks.push_back(make_stack(dtype_, e, domain_parts()));
            else w->temps.push_back(make_temp(dtype_, e, rows_, domain_));
        }
        w->a = a_->make_work(e);
        return w;
    }
    void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const override
    {
        CompositeWork &c = cw(w);
        const void *cur = in;
        for (int k = 0; k < p_; ++k) {
            void *next = k == p_ - 1 ? out : temp_data(c.temps[static_cast<size_t>(k % 2)]);
            a_->local_apply(e, adjoint, cur, next, c.a.get());
            cur = next;
        }
        if (p_ == 0) kernels::copy(e, dtype_, rows_, in, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        CompositeWork &c = cw(w);
        const DistributedArray *cur = &x;
        for (int k = 0; k < p_; ++k) {
            DistributedArray &next = k == p_ - 1 ? y : *c.temps[static_cast<size_t>(k % 2)].array;
            a_->apply(*cur, next, adjoint, c.a.get());
            cur = &next;
        }
        if (p_ == 0) kernels::copy(y.exec(), dtype_, y.local_size(), x.data(), y.data());
    }
    void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const override
    {
        if (!stacked()) return apply(*x[0], *y[0], adjoint, w);
        CompositeWork &c = cw(w);
        const In *cur = &x;
        for (int k = 0; k < p_; ++k) {
            const Stack &t = c.stacks[static_cast<size_t>(k % 2)];
            a_->apply_parts(*cur, k == p_ - 1 ? y : t.out, adjoint, c.a.get());
            cur = &t.in;
        }
        if (p_ == 0)
            for (size_t i = 0; i < y.size(); ++i)
                kernels::copy(y[i]->exec(), dtype_, y[i]->local_size(), x[i]->data(), y[i]->data());
    }

private:
    Operator::Ptr a_;
    int p_;
};

// The checks of the composites on distributed operators, member by member.
void require_square(const Operator &a, const char *what)
{
    if (a.is_local())
        PLM_REQUIRE(a.rows() == a.cols(), PLM_ERR_SIZE_MISMATCH, "%s of a %lld x %lld operator", what,
                    static_cast<long long>(a.rows()), static_cast<long long>(a.cols()));
    else
        PLM_REQUIRE(same_members(a.domain_parts(), a.range_parts()), PLM_ERR_SIZE_MISMATCH,
                    "%s of an operator whose domain is not its range", what);
}

}  // namespace

Operator::Ptr transpose(Operator::Ptr a)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    return std::make_shared<ConjSandwich>(std::move(a), true);
}

Operator::Ptr conjugate(Operator::Ptr a)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    return std::make_shared<ConjSandwich>(std::move(a), false);
}

Operator::Ptr power(Operator::Ptr a, int p)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    PLM_REQUIRE(p >= 0, PLM_ERR_INVALID_ARG, "power %d is negative", p);
    require_square(*a, "power");
    return std::make_shared<Power>(std::move(a), p);
}

Operator::Ptr adjoint(Operator::Ptr a)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    return std::make_shared<Adjoint>(std::move(a));
}

Operator::Ptr scaled(Operator::Ptr a, const Scalar &alpha)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    return std::make_shared<Scaled>(std::move(a), alpha);
}

Operator::Ptr sum(Operator::Ptr a, Operator::Ptr b)
{
    PLM_REQUIRE(a && b, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_same_kind(*a, *b, "sum");
    if (a->is_local())
        PLM_REQUIRE(a->rows() == b->rows() && a->cols() == b->cols(), PLM_ERR_SIZE_MISMATCH,
                    "sum of %lld x %lld and %lld x %lld operators", static_cast<long long>(a->rows()),
                    static_cast<long long>(a->cols()), static_cast<long long>(b->rows()),
                    static_cast<long long>(b->cols()));
    else
        PLM_REQUIRE(same_members(a->domain_parts(), b->domain_parts()) &&
                        same_members(a->range_parts(), b->range_parts()),
                    PLM_ERR_SIZE_MISMATCH, "sum of operators with other domains or ranges (member by member)");
    return std::make_shared<Sum>(std::move(a), std::move(b));
}

Operator::Ptr product(Operator::Ptr a, Operator::Ptr b)
{
    PLM_REQUIRE(a && b, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_same_kind(*a, *b, "product");
    if (a->is_local())
        PLM_REQUIRE(a->cols() == b->rows(), PLM_ERR_SIZE_MISMATCH, "product of %lld x %lld and %lld x %lld operators",
                    static_cast<long long>(a->rows()), static_cast<long long>(a->cols()),
                    static_cast<long long>(b->rows()), static_cast<long long>(b->cols()));
    else
        PLM_REQUIRE(same_members(a->domain_parts(), b->range_parts()), PLM_ERR_SIZE_MISMATCH,
                    "product A B: B's range is not A's domain (member by member)");
    return std::make_shared<Product>(std::move(a), std::move(b));
}

}  // namespace plm::ops
