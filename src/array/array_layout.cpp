#include "array/array_layout.hpp"

#include <algorithm>

namespace plm {

ArrayLayout::Draft ArrayLayout::check(comm::Agreement &ag, const LayoutSpec &s)
{
    const comm::Communicator &c = ag.comm();
    Draft d;
    d.comm = s.comm;
    d.custom = s.my_local_shape != nullptr;
    const int ndim = static_cast<int>(s.global.size());
    Layout &l = d.layout;
    ag.check([&] {
        PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM, PLM_ERR_INVALID_ARG, "ndim %d outside 1..%d", ndim,
                    PLM_MAX_NDIM);
        for (int64_t e : s.global)
            PLM_REQUIRE(e >= 0, PLM_ERR_INVALID_ARG, "global extent %lld is negative", static_cast<long long>(e));
        checked_product(s.global, "the element count of the global shape");
        l.global = s.global;
        l.axis = normalize_axis(s.axis, ndim);
        PLM_REQUIRE(s.partition >= PLM_PARTITION_SCATTER && s.partition <= PLM_PARTITION_UNSAFE_BROADCAST,
                    PLM_ERR_INVALID_ARG, "unknown partition %d", s.partition);
        l.partition = static_cast<plm_partition_t>(s.partition);
        if (s.has_mask) {
            PLM_REQUIRE(static_cast<int>(s.mask.size()) == c.size(), PLM_ERR_SIZE_MISMATCH,
                        "mask has %zu entries, the communicator has %d ranks", s.mask.size(), c.size());
            for (int m : s.mask) PLM_REQUIRE(m >= 0, PLM_ERR_INVALID_ARG, "mask group id %d is negative", m);
            d.mask = s.mask;
        }
        d.mine = d.custom ? Shape(s.my_local_shape, s.my_local_shape + ndim)
                          : default_local_shapes(s.global, l.axis, l.partition, c.size())[static_cast<size_t>(c.rank())];
        validate_own_shape(l, d.mine, c.rank());
        if (d.custom) {
            d.gathered.resize(static_cast<size_t>(ndim) * static_cast<size_t>(c.size()));
        } else if (d.mask.empty()) {  // every rank knows the whole layout: make it now
            Layout full = l;
            full.local = default_local_shapes(l.global, l.axis, l.partition, c.size());
            d.done = make(d.comm, std::move(full), {});
        }
    });
    for (int64_t v : {int64_t(ndim), int64_t(l.axis), int64_t(s.partition), int64_t(d.custom), int64_t(s.has_mask)})
        ag.fold(v);
    ag.fold_all(s.global);
    ag.fold_all(s.mask);
    return d;
}

ArrayLayout::Ptr ArrayLayout::finish(Draft d)
{
    if (d.done) return d.done;
    const comm::Communicator &c = *d.comm;
    if (d.custom)
        comm::allgather_i64(c, d.mine.data(), static_cast<int64_t>(d.mine.size()), d.gathered.data());
    return comm::finish_collective(c, "layout (local shapes, mask group)", {&d.mask}, [&] {
        Layout &l = d.layout;
        if (d.custom) {
            const size_t ndim = d.mine.size();
            const int64_t *all = d.gathered.data();
            for (size_t r = 0; r < static_cast<size_t>(c.size()); ++r)
                l.local.emplace_back(all + r * ndim, all + (r + 1) * ndim);
            validate_local_shapes(l);  // the same data on every rank: the same verdict
        } else {
            l.local = default_local_shapes(l.global, l.axis, l.partition, c.size());
        }
        return make(d.comm, std::move(l), std::move(d.mask));
    });
}

ArrayLayout::Ptr ArrayLayout::make(CommPtr comm, Layout l, std::vector<int> mask)
{
    std::shared_ptr<ArrayLayout> a(new ArrayLayout());
    a->comm_ = std::move(comm);
    a->layout_ = std::move(l);
    a->mask_ = std::move(mask);
    a->group_ = a->mask_.empty() ? a->comm_.get() : &a->comm_->mask_group(a->mask_);
    a->set_derived();
    return a;
}

ArrayLayout::Ptr ArrayLayout::with(const Layout &l) const
{
    std::shared_ptr<ArrayLayout> a(new ArrayLayout(*this));
    a->layout_ = l;
    a->set_derived();
    return a;
}

void ArrayLayout::set_derived()
{
    ids_ = mask_;
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    ngroups_ = std::max<int>(1, static_cast<int>(ids_.size()));
    group_index_ = group_of(rank());
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](int64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xffu;
            h *= 1099511628211ull;
        }
    };
    mix(comm_->size());
    mix(layout_.axis);
    mix(layout_.partition);
    mix(static_cast<int64_t>(layout_.global.size()));
    for (int64_t e : layout_.global) mix(e);
    for (const Shape &sh : layout_.local)
        for (int64_t e : sh) mix(e);
    mix(static_cast<int64_t>(mask_.size()));
    for (int m : mask_) mix(m);
    fingerprint_ = h;
}

int ArrayLayout::group_of(int r) const
{
    if (mask_.empty()) return 0;
    return static_cast<int>(std::lower_bound(ids_.begin(), ids_.end(), mask_[static_cast<size_t>(r)]) - ids_.begin());
}

bool ArrayLayout::same_as(const ArrayLayout &o) const
{
    if (this == &o) return true;
    return fingerprint_ == o.fingerprint_ && comm::same_ranks(*comm_, *o.comm_);
}

void ArrayLayout::require_same(const ArrayLayout &o, const char *what) const
{
    if (this == &o) return;
    PLM_REQUIRE(o.comm_->size() == comm_->size(), PLM_ERR_SIZE_MISMATCH, "%s: communicator sizes differ", what);
    PLM_REQUIRE(fingerprint_ == o.fingerprint_, PLM_ERR_SIZE_MISMATCH,
                "%s: layouts differ (global shape, axis, partition, local shapes or mask)", what);
    PLM_REQUIRE(comm::same_ranks(*comm_, *o.comm_), PLM_ERR_INVALID_ARG,
                "%s: operands live on communicators with other ranks or another rank order", what);
}

void ArrayLayout::fold(comm::Agreement &ag) const
{
    ag.fold(static_cast<int64_t>(fingerprint_));
}

}  // namespace plm
