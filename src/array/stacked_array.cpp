#include "array/stacked_array.hpp"

#include <cmath>
#include <complex>
#include <cstring>

namespace plm {

StackedArray::Ptr StackedArray::create(std::vector<DistributedArray::Ptr> members)
{
    PLM_REQUIRE(!members.empty(), PLM_ERR_INVALID_ARG, "a stack needs at least one array");
    const DistributedArray &m0 = *members.front();
    for (size_t i = 0; i < members.size(); ++i) {
        const DistributedArray &m = *members[i];
        PLM_REQUIRE(m.dtype() == m0.dtype(), PLM_ERR_DTYPE_MISMATCH, "stack member %zu is %s, member 0 is %s", i,
                    dtype_name(m.dtype()), dtype_name(m0.dtype()));
        PLM_REQUIRE(m.space() == m0.space(), PLM_ERR_INVALID_ARG, "stack members have mismatching memory spaces");
        PLM_REQUIRE(m.base().size() == m0.base().size(), PLM_ERR_SIZE_MISMATCH,
                    "stack members live on communicators of different sizes");
    }
    Ptr s(new StackedArray());
    s->members_ = std::move(members);
    return s;
}

StackedArray::Ptr StackedArray::zeros_like() const
{
    std::vector<DistributedArray::Ptr> z;
    for (const auto &m : members_) z.push_back(m->zeros_like());
    return create(std::move(z));
}

void StackedArray::require_compatible(const StackedArray &o, const char *what) const
{
    PLM_REQUIRE(o.members_.size() == members_.size(), PLM_ERR_SIZE_MISMATCH, "%s: stacks have %zu and %zu members",
                what, members_.size(), o.members_.size());
    for (size_t i = 0; i < members_.size(); ++i) members_[i]->require_compatible(*o.members_[i], what);
}

void StackedArray::copy_from(const StackedArray &x)
{
    require_compatible(x, "stacked copy");
    for (size_t i = 0; i < members_.size(); ++i)
        kernels::copy(members_[i]->space(), dtype(), members_[i]->local_size(), x.members_[i]->data(), members_[i]->data());
}

void StackedArray::scale(const Scalar &alpha)
{
    for (const auto &m : members_) kernels::scale(m->space(), dtype(), m->local_size(), alpha.data(), m->data());
}

void StackedArray::axpby(const Scalar &alpha, const StackedArray &x, const Scalar &beta)
{
    require_compatible(x, "stacked axpby");
    for (size_t i = 0; i < members_.size(); ++i)
        kernels::axpby(members_[i]->space(), dtype(), members_[i]->local_size(), alpha.data(), x.members_[i]->data(),
                       beta.data(), members_[i]->data());
}

void StackedArray::dot(const StackedArray &y, bool conjugate, double *re, double *im) const
{
    require_compatible(y, "stacked dot");
    double sum_re = 0, sum_im = 0;
    for (size_t i = 0; i < members_.size(); ++i) {
        double pr = 0, pi = 0;
        members_[i]->dot(*y.members_[i], conjugate, re ? &pr : nullptr, im ? &pi : nullptr);  // NULL fails on all ranks
        sum_re += pr;
        sum_im += pi;
    }
    *re = sum_re;
    if (im) *im = sum_im;
}

double StackedArray::norm(double ord, bool bad_arg) const
{
    // Combine member norms as the norm of the concatenation.
    double acc = ord == -INFINITY ? INFINITY : 0.0;
    for (const auto &m : members_) {
        const double v = m->norm(ord, bad_arg);
        if (ord == 0) acc += v;
        else if (ord == INFINITY) acc = std::fmax(acc, v);
        else if (ord == -INFINITY) acc = std::fmin(acc, v);
        else acc += std::pow(v, ord);
    }
    if (ord == 0 || std::isinf(ord)) return acc;
    return std::pow(acc, 1.0 / ord);
}

int64_t StackedArray::global_size() const
{
    int64_t n = 0;
    for (const auto &m : members_) n += product(m->layout().global);
    return n;
}

void StackedArray::asarray(void *out, int64_t n_out) const
{
    const int64_t want = global_size();
    members_.front()->agree(members_.front()->base(), comm::capture([&] {
        PLM_REQUIRE(n_out == want, PLM_ERR_SIZE_MISMATCH, "stacked asarray gathers %lld elements, n_out is %lld",
                    static_cast<long long>(want), static_cast<long long>(n_out));
    }));
    int64_t off = 0;
    const size_t es = dtype_size(dtype());
    for (const auto &m : members_) {
        const int64_t n = product(m->layout().global);
        m->asarray(false, static_cast<char *>(out) + off * static_cast<int64_t>(es), n);
        off += n;
    }
}

}  // namespace plm
