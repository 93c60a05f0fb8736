// StackedDistributedArray: a list of arrays treated as their concatenation.
#pragma once

#include "array/distributed_array.hpp"

namespace plm {

class StackedArray {
public:
    using Ptr = std::shared_ptr<StackedArray>;
    static Ptr create(std::vector<DistributedArray::Ptr> members);  // not collective

    const std::vector<DistributedArray::Ptr> &members() const { return members_; }
    DType dtype() const { return members_.front()->dtype(); }

    Ptr zeros_like() const;
    void require_compatible(const StackedArray &o, const char *what) const;
    void copy_from(const StackedArray &x);
    void scale(const Scalar &alpha);
    void axpby(const Scalar &alpha, const StackedArray &x, const Scalar &beta);  // this = alpha x + beta this
    // Collective, through one agreement on the members' communicator (ag built on base()).
    const comm::Communicator &base() const { return members_.front()->base(); }
    void dot(comm::Agreement &ag, const StackedArray *y, bool conjugate, double *re, double *im) const;
    double norm(comm::Agreement &ag, double ord) const;
    int64_t global_size() const;
    void asarray(comm::Agreement &ag, void *out, int64_t out_bytes) const;

private:
    std::vector<DistributedArray::Ptr> members_;
};

}  // namespace plm
