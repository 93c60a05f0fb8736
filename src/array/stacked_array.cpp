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
        // Reductions over the stack agree on member 0's communicator: it must hold the same ranks.
        PLM_REQUIRE(comm::same_ranks(m.base(), m0.base()), PLM_ERR_INVALID_ARG,
                    "stack member %zu lives on a communicator with other ranks or another rank order", i);
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
        kernels::copy(members_[i]->exec(), dtype(), members_[i]->local_size(), x.members_[i]->data(), members_[i]->data());
}

void StackedArray::scale(const Scalar &alpha)
{
    for (const auto &m : members_) kernels::scale(m->exec(), dtype(), m->local_size(), alpha.data(), m->data());
}

void StackedArray::axpby(const Scalar &alpha, const StackedArray &x, const Scalar &beta)
{
    require_compatible(x, "stacked axpby");
    for (size_t i = 0; i < members_.size(); ++i)
        kernels::axpby(members_[i]->exec(), dtype(), members_[i]->local_size(), alpha.data(), x.members_[i]->data(),
                       beta.data(), members_[i]->data());
}

void StackedArray::dot(comm::Agreement &ag, const StackedArray *y, bool conjugate, double *re, double *im) const
{
    ag.check([&] {
        PLM_REQUIRE(y, PLM_ERR_INVALID_ARG, "stacked dot: y is NULL");
        PLM_REQUIRE(re, PLM_ERR_INVALID_ARG, "stacked dot: re is NULL");
        PLM_REQUIRE(im || !is_complex(dtype()), PLM_ERR_INVALID_ARG, "stacked dot: im is NULL for complex members");
        require_compatible(*y, "stacked dot");
    });
    ag.fold(static_cast<int64_t>(members_.size()));
    std::vector<size_t> lanes;
    ag.check([&] { lanes.resize(members_.size()); });
    for (size_t i = 0; i < members_.size(); ++i) {
        const size_t l = members_[i]->add_dot(ag, ag.ok() ? y->members_[i].get() : members_[i].get(), conjugate);
        if (i < lanes.size()) lanes[i] = l;
    }
    ag.run();
    double sum_re = 0, sum_im = 0;
    for (size_t i = 0; i < members_.size(); ++i) {
        double pr = 0, pi = 0;
        members_[i]->read_dot(ag, lanes[i], &pr, &pi);
        sum_re += pr;
        sum_im += pi;
    }
    *re = sum_re;
    if (im) *im = sum_im;
}

double StackedArray::norm(comm::Agreement &ag, double ord) const
{
    ag.fold(static_cast<int64_t>(members_.size()));
    std::vector<DistributedArray::NormLanes> lanes;
    ag.check([&] { lanes.resize(members_.size()); });
    for (size_t i = 0; i < members_.size(); ++i) {
        const DistributedArray::NormLanes l = members_[i]->add_norm(ag, ord);
        if (i < lanes.size()) lanes[i] = l;
    }
    ag.run();
    // Combine member norms as the norm of the concatenation.
    double acc = ord == -INFINITY ? INFINITY : 0.0;
    for (size_t i = 0; i < members_.size(); ++i) {
        const double v = members_[i]->read_norm(ag, lanes[i]);
        if (std::isnan(v)) acc = v;
        else if (std::isnan(acc)) continue;
        else if (ord == 0) acc += v;
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
    for (const auto &m : members_) n = checked_add(n, product(m->layout().global), "the stack's element count");
    return n;
}

void StackedArray::asarray(comm::Agreement &ag, void *out, int64_t out_bytes) const
{
    std::vector<DistributedArray::Gather> gathers;
    ag.check([&] {
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "stacked asarray: out is NULL");
        require_buffer_bytes("stacked asarray: out", out_bytes, global_size(), dtype());
        for (const auto &m : members_) gathers.push_back(m->plan_asarray(false));
    });
    ag.fold(static_cast<int64_t>(members_.size()));
    for (const auto &m : members_) m->fold_layout(ag);
    ag.run();
    int64_t off = 0;
    const size_t es = dtype_size(dtype());
    for (size_t i = 0; i < members_.size(); ++i) {
        members_[i]->gather_into(gathers[i], static_cast<char *>(out) + off * static_cast<int64_t>(es));
        off += product(members_[i]->layout().global);
    }
}

}  // namespace plm
