// ArrayLayout: what a plm_layout_t is. Immutable and shared (by every array made from it,
// and later by operators as their domain and range): the communicator, the layout math
// (global shape, axis, partition, every rank's local shape), the mask and its group
// communicator, and a fingerprint of all of it, so operand checks are O(1).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "array/layout.hpp"
#include "comm/agreement.hpp"

namespace plm {

using CommPtr = std::shared_ptr<comm::Communicator>;

// The caller's arguments, unchecked (raw enum values).
struct LayoutSpec {
    CommPtr comm;
    Shape global;
    int axis = 0;  // may be negative
    int partition = PLM_PARTITION_SCATTER;
    const int64_t *my_local_shape = nullptr;  // this rank's row, or nullptr for the default split
    std::vector<int> mask;                    // empty: no mask
    bool has_mask = false;
};

class ArrayLayout {
public:
    using Ptr = std::shared_ptr<const ArrayLayout>;

    // Collective creation in two steps around the caller's agreement: check() validates the
    // caller's arguments into ag, folds them and makes what finish() needs; after ag.run(),
    // finish() completes the layout: with the default split and no mask it was made in
    // check(); otherwise it gathers the given local shapes, validates them and makes the
    // mask group, in an agreement of its own.
    struct Draft {
        CommPtr comm;
        Layout layout;
        Shape mine;
        bool custom = false;
        std::vector<int> mask;
        std::vector<int64_t> gathered;           // custom local shapes, gathered after the agreement
        Ptr done;                               // made in check()
    };
    static Draft check(comm::Agreement &ag, const LayoutSpec &s);
    static Ptr finish(Draft d);

    // A layout from complete, valid math that every rank holds alike (operators compute it
    // from gathered sizes). Collective on comm only for a new mask's group.
    static Ptr make(CommPtr comm, Layout l, std::vector<int> mask);
    // The same communicator, mask and group with other layout math (redistribute). Not collective.
    Ptr with(const Layout &l) const;

    const Layout &layout() const { return layout_; }
    const comm::Communicator &comm() const { return *comm_; }
    const CommPtr &comm_ptr() const { return comm_; }
    const comm::Communicator &group() const { return *group_; }  // the caller's mask group
    const std::vector<int> &mask() const { return mask_; }
    int group_index() const { return group_index_; }  // the caller's group among the distinct ids
    int group_of(int r) const;                         // rank r's group index
    int ngroups() const { return ngroups_; }
    uint64_t fingerprint() const { return fingerprint_; }
    int rank() const { return comm_->rank(); }
    const Shape &local_shape() const { return layout_.local[static_cast<size_t>(rank())]; }
    int64_t local_size() const { return layout_.local_size(rank()); }

    // Same layout on the same ranks: the same object, or an equal fingerprint on a
    // communicator with the same ranks in the same order. O(1) in the rank count.
    bool same_as(const ArrayLayout &o) const;
    // Throws SIZE_MISMATCH (or INVALID_ARG for other ranks) naming what differs.
    void require_same(const ArrayLayout &o, const char *what) const;
    // Folds what every rank must agree on about this layout.
    void fold(comm::Agreement &ag) const;

    // The plans of DistributedArray::redistribute for arrays of this layout (array/
    // redistribute.cpp), kept for the next call: take one made for (axis, dtype, space), or
    // nullptr; give it back after use (most recent first; the oldest of kPlans goes). Not
    // collective; give allocates nothing. Layouts made by with() start with none.
    struct Redistribution;
    static constexpr size_t kPlans = 4;
    std::shared_ptr<Redistribution> take_redistribution(int axis, DType dt, Space s) const;
    void give_redistribution(std::shared_ptr<Redistribution> p) const;

private:
    struct PlanCache {
        PlanCache() = default;
        PlanCache(const PlanCache &) {}  // a copy (with()) starts empty
        PlanCache &operator=(const PlanCache &) { return *this; }
        std::mutex lock;
        std::array<std::shared_ptr<Redistribution>, kPlans> slots;
    };

    ArrayLayout() = default;
    void set_derived();  // group index, group count, fingerprint

    CommPtr comm_;
    const comm::Communicator *group_ = nullptr;  // owned by comm_'s mask-group cache, or comm_
    Layout layout_;
    std::vector<int> mask_;
    std::vector<int> ids_;  // the distinct group ids, ascending
    int group_index_ = 0;
    int ngroups_ = 1;
    uint64_t fingerprint_ = 0;
    mutable PlanCache plans_;
};

}  // namespace plm
