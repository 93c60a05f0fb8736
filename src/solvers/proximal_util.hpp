// Helpers shared by the proximal operators and the proximal solvers.
#pragma once

#include <limits>
#include <optional>

#include "array/distributed_array.hpp"
#include "core/alloc.hpp"
#include "solvers/local_math.hpp"
#include "solvers/proximal.hpp"

namespace plm::solvers {

namespace prox_util {
// p, or fallback where a failed check left p unset (the agreement then throws before use).
const DistributedArray &or_else(const DistributedArray::Ptr &p, const DistributedArray &fallback);
// Folds what makes two L2 operators the same on every rank.
void fold_l2(comm::Agreement &ag, const L2 &p);
// Folds what makes two proximal operators the same on every rank: kind, parameters, a user
// operator's functions present, a composition's arrays' layouts and inner operators.
void fold_prox(comm::Agreement &ag, const Prox &p);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// PyLops-MPI's rule for a table row after iteration it (from 0).
inline bool row(int64_t it, int64_t niter)
{
    return it < 10 || niter - it < 10 || (niter >= 10 && it % (niter / 10) == 0);
}

inline void require_plain_distributed(const ops::Operator::Ptr &op, const char *what)
{
    PLM_REQUIRE(op, PLM_ERR_INVALID_ARG, "%s is NULL", what);
    PLM_REQUIRE(!op->is_local() && !op->stacked(), PLM_ERR_INVALID_ARG, "%s must be a plain distributed operator", what);
}

// The per-iteration callback: called on the ranks that set one, its answer (stop, or its
// failure) agreed when some rank has a callback.
class Callback {
public:
    Callback(const Monitor &m, const comm::Communicator &c, const char *what) : m_(m), c_(c), what_(what) {}
    // Adds the "some rank has a callback or shows" lanes to the solve's agreement.
    void add(comm::Agreement &ag)
    {
        lane_ = ag.add_lanes(2, comm::LaneOp::max);
        ag.set(lane_, m_.stop ? 1 : 0);
        ag.set(lane_ + 1, m_.show ? 1 : 0);
    }
    void read(const comm::Agreement &ag)
    {
        any_ = ag.get(lane_) > 0;
        any_show_ = ag.get(lane_ + 1) > 0;
    }
    bool any_show() const { return any_show_; }
    bool any() const { return any_; }
    // True when some rank's callback asks to stop; a failure on any rank throws on every rank.
    bool stop(int64_t it, double cost)
    {
        if (!any_) return false;
        bool stop = false;
        std::optional<Error> err;
        if (m_.stop) {
            alloc::Allowed user_code;
            err = comm::capture([&] { stop = m_.stop(it, cost); });
        }
        comm::Agreement a(c_, what_);
        a.add_error(err);
        const size_t l = a.add_lanes(1, comm::LaneOp::max);
        a.set(l, stop ? 1 : 0);
        a.run();
        return a.get(l) > 0;
    }

private:
    const Monitor &m_;
    const comm::Communicator &c_;
    const char *what_;
    size_t lane_ = 0;
    bool any_ = false, any_show_ = false;
};
}  // namespace prox_util

// "L1", "L0", "Box", "L2", "user", "L21" or a composition's name, for the solvers' tables.
const char *prox_name(const Prox &p);

}  // namespace plm::solvers
