// Composite operators: adjoint, scaled, sum and product, of local or of distributed operators.
// Scratch (a host buffer for local parts, arrays for distributed ones) is made here, once.
#include <algorithm>
#include <complex>
#include <cstring>

#include "ops/operator.hpp"

namespace plm::ops {

namespace {

// Scratch for one intermediate vector of an operator pair: n_local host elements, or an
// array on a layout.
struct Scratch {
    Buffer host;
    DistributedArray::Ptr array;
};

Scratch make_scratch(DType dt, int64_t n_local, const ArrayLayout::Ptr &layout)
{
    Scratch s;
    if (layout) s.array = DistributedArray::create_from_layout(layout, to_public(dt), PLM_MEMORY_HOST, nullptr);
    else s.host = Buffer::allocate(Space::host, checked_bytes(n_local, dt, "an intermediate vector in bytes"));
    return s;
}

void require_plain(const Operator &a, const char *what)
{
    PLM_REQUIRE(!a.stacked(), PLM_ERR_NOT_SUPPORTED, "%s of a stacked operator is not supported (adjoint is)", what);
}

void require_same_kind(const Operator &a, const Operator &b, const char *what)
{
    PLM_REQUIRE(a.dtype() == b.dtype(), PLM_ERR_DTYPE_MISMATCH, "%s of operators of %s and %s", what,
                dtype_name(a.dtype()), dtype_name(b.dtype()));
    PLM_REQUIRE(a.is_local() == b.is_local(), PLM_ERR_INVALID_ARG, "%s of a local and a distributed operator", what);
}

class Adjoint final : public Operator {
public:
    explicit Adjoint(Operator::Ptr a)
        : Operator(a->dtype(), a->cols(), a->rows()), a_(std::move(a))
    {
        domain_ = a_->range();
        range_ = a_->domain();
        if (a_->stacked()) {
            dparts_ = a_->range_parts();
            rparts_ = a_->domain_parts();
        }
    }
    void apply_parts(const In &x, const Out &y, bool adjoint) const override { a_->apply_parts(x, y, !adjoint); }
    bool may_fail() const override { return a_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override { a_->local_apply(!adjoint, in, out); }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        a_->apply(x, y, !adjoint);
    }

private:
    Operator::Ptr a_;
};

class Scaled final : public Operator {
public:
    Scaled(Operator::Ptr a, const Scalar &alpha) : Operator(a->dtype(), a->rows(), a->cols()), a_(std::move(a)), alpha_(alpha)
    {
        domain_ = a_->domain();
        range_ = a_->range();
        dispatch_float(dtype_, [&](auto t) {  // the adjoint scales by conj(alpha)
            using T = decltype(t);
            T v;
            std::memcpy(&v, alpha_.bytes, sizeof v);
            if constexpr (is_complex_v<T>) v = std::conj(v);
            std::memcpy(conj_.bytes, &v, sizeof v);
        });
    }
    bool may_fail() const override { return a_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        a_->local_apply(adjoint, in, out);
        kernels::scale(Exec{}, dtype_, adjoint ? cols_ : rows_, (adjoint ? conj_ : alpha_).data(), out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        a_->apply(x, y, adjoint);
        kernels::scale(y.exec(), dtype_, y.local_size(), (adjoint ? conj_ : alpha_).data(), y.data());
    }

private:
    Operator::Ptr a_;
    Scalar alpha_, conj_;
};

class Sum final : public Operator {
public:
    Sum(Operator::Ptr a, Operator::Ptr b) : Operator(a->dtype(), a->rows(), a->cols()), a_(std::move(a)), b_(std::move(b))
    {
        domain_ = a_->domain();
        range_ = a_->range();
        fwd_ = make_scratch(dtype_, rows_, range_);
        adj_ = make_scratch(dtype_, cols_, domain_);
    }
    bool may_fail() const override { return a_->may_fail() || b_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        void *t = (adjoint ? adj_ : fwd_).host.data();
        a_->local_apply(adjoint, in, out);
        b_->local_apply(adjoint, in, t);
        add(Exec{}, adjoint ? cols_ : rows_, t, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        DistributedArray &t = *(adjoint ? adj_ : fwd_).array;
        a_->apply(x, y, adjoint);
        b_->apply(x, t, adjoint);
        add(y.exec(), y.local_size(), t.data(), y.data());
    }

private:
    void add(const Exec &e, int64_t n, const void *t, void *y) const
    {
        const Scalar one = make_scalar(dtype_, 1, 0, "sum");
        kernels::axpby(e, dtype_, n, one.data(), t, one.data(), y);
    }
    Operator::Ptr a_, b_;
    Scratch fwd_, adj_;
};

// a b: b is applied first; the intermediate vector lives on b's range (a's domain).
class Product final : public Operator {
public:
    Product(Operator::Ptr a, Operator::Ptr b)
        : Operator(a->dtype(), a->rows(), b->cols()), a_(std::move(a)), b_(std::move(b))
    {
        domain_ = b_->domain();
        range_ = a_->range();
        mid_ = make_scratch(dtype_, b_->rows(), b_->range());
    }
    bool may_fail() const override { return a_->may_fail() || b_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        void *m = mid_.host.data();
        if (!adjoint) {
            b_->local_apply(false, in, m);
            a_->local_apply(false, m, out);
        } else {
            a_->local_apply(true, in, m);
            b_->local_apply(true, m, out);
        }
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        DistributedArray &m = *mid_.array;
        if (!adjoint) {
            b_->apply(x, m, false);
            a_->apply(m, y, false);
        } else {
            a_->apply(x, m, true);
            b_->apply(m, y, true);
        }
    }

private:
    Operator::Ptr a_, b_;
    Scratch mid_;
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
        if (is_complex(dtype_)) {
            in_fwd_ = make_scratch(dtype_, cols_, domain_);
            in_adj_ = make_scratch(dtype_, rows_, range_);
        }
    }
    bool may_fail() const override { return a_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        const bool inner = adjoint != flip_;
        if (!is_complex(dtype_)) return a_->local_apply(inner, in, out);
        const Buffer &t = adjoint ? in_adj_.host : in_fwd_.host;
        const int64_t n_in = adjoint ? rows_ : cols_, n_out = adjoint ? cols_ : rows_;
        kernels::conj(Exec{}, dtype_, n_in, in, t.data());
        a_->local_apply(inner, t.data(), out);
        kernels::conj(Exec{}, dtype_, n_out, out, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        const bool inner = adjoint != flip_;
        if (!is_complex(dtype_)) return a_->apply(x, y, inner);
        DistributedArray &t = *(adjoint ? in_adj_ : in_fwd_).array;
        kernels::conj(t.exec(), dtype_, t.local_size(), x.data(), t.data());
        a_->apply(t, y, inner);
        kernels::conj(y.exec(), dtype_, y.local_size(), y.data(), y.data());
    }

private:
    Operator::Ptr a_;
    bool flip_;
    Scratch in_fwd_, in_adj_;
};

// a^p by repeated application through two scratch vectors; p = 0 copies.
class Power final : public Operator {
public:
    Power(Operator::Ptr a, int p) : Operator(a->dtype(), a->rows(), a->cols()), a_(std::move(a)), p_(p)
    {
        domain_ = a_->domain();
        range_ = a_->range();
        t0_ = make_scratch(dtype_, rows_, domain_);
        t1_ = make_scratch(dtype_, rows_, domain_);
    }
    bool may_fail() const override { return a_->may_fail(); }
    void local_apply(bool adjoint, const void *in, void *out) const override
    {
        const void *cur = in;
        for (int k = 0; k < p_; ++k) {
            void *next = k == p_ - 1 ? out : (k % 2 ? t1_ : t0_).host.data();
            a_->local_apply(adjoint, cur, next);
            cur = next;
        }
        if (p_ == 0) kernels::copy(Exec{}, dtype_, rows_, in, out);
    }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const override
    {
        const DistributedArray *cur = &x;
        for (int k = 0; k < p_; ++k) {
            DistributedArray &next = k == p_ - 1 ? y : *(k % 2 ? t1_ : t0_).array;
            a_->apply(*cur, next, adjoint);
            cur = &next;
        }
        if (p_ == 0) kernels::copy(y.exec(), dtype_, y.local_size(), x.data(), y.data());
    }

private:
    Operator::Ptr a_;
    int p_;
    Scratch t0_, t1_;
};

}  // namespace

Operator::Ptr transpose(Operator::Ptr a)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_plain(*a, "transpose");
    return std::make_shared<ConjSandwich>(std::move(a), true);
}

Operator::Ptr conjugate(Operator::Ptr a)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_plain(*a, "conj");
    return std::make_shared<ConjSandwich>(std::move(a), false);
}

Operator::Ptr power(Operator::Ptr a, int p)
{
    PLM_REQUIRE(a, PLM_ERR_INVALID_ARG, "operator is NULL");
    PLM_REQUIRE(p >= 0, PLM_ERR_INVALID_ARG, "power %d is negative", p);
    require_plain(*a, "power");
    if (a->is_local())
        PLM_REQUIRE(a->rows() == a->cols(), PLM_ERR_SIZE_MISMATCH, "power of a %lld x %lld operator",
                    static_cast<long long>(a->rows()), static_cast<long long>(a->cols()));
    else
        PLM_REQUIRE(a->domain()->same_as(*a->range()), PLM_ERR_SIZE_MISMATCH,
                    "power of an operator whose domain is not its range");
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
    require_plain(*a, "scale");
    return std::make_shared<Scaled>(std::move(a), alpha);
}

Operator::Ptr sum(Operator::Ptr a, Operator::Ptr b)
{
    PLM_REQUIRE(a && b, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_plain(*a, "sum");
    require_plain(*b, "sum");
    require_same_kind(*a, *b, "sum");
    if (a->is_local())
        PLM_REQUIRE(a->rows() == b->rows() && a->cols() == b->cols(), PLM_ERR_SIZE_MISMATCH,
                    "sum of %lld x %lld and %lld x %lld operators", static_cast<long long>(a->rows()),
                    static_cast<long long>(a->cols()), static_cast<long long>(b->rows()),
                    static_cast<long long>(b->cols()));
    else
        PLM_REQUIRE(a->domain()->same_as(*b->domain()) && a->range()->same_as(*b->range()), PLM_ERR_SIZE_MISMATCH,
                    "sum of operators with other domains or ranges");
    return std::make_shared<Sum>(std::move(a), std::move(b));
}

Operator::Ptr product(Operator::Ptr a, Operator::Ptr b)
{
    PLM_REQUIRE(a && b, PLM_ERR_INVALID_ARG, "operator is NULL");
    require_plain(*a, "product");
    require_plain(*b, "product");
    require_same_kind(*a, *b, "product");
    if (a->is_local())
        PLM_REQUIRE(a->cols() == b->rows(), PLM_ERR_SIZE_MISMATCH, "product of %lld x %lld and %lld x %lld operators",
                    static_cast<long long>(a->rows()), static_cast<long long>(a->cols()),
                    static_cast<long long>(b->rows()), static_cast<long long>(b->cols()));
    else
        PLM_REQUIRE(a->domain()->same_as(*b->range()), PLM_ERR_SIZE_MISMATCH,
                    "product A B: B's range is not A's domain");
    return std::make_shared<Product>(std::move(a), std::move(b));
}

}  // namespace plm::ops
