// Shell operators (plm_op_shell): a distributed operator whose applies run user code on whole
// distributed arrays, the equivalent of subclassing PyLops-MPI's MPILinearOperator.
#include <optional>

#include "core/alloc.hpp"
#include "ops/operator.hpp"

namespace plm::ops {
namespace {

class Shell final : public Operator {
public:
    Shell(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, const ShellFns &fns)
        : Operator(dt, std::move(domain), std::move(range)), fns_(fns)
    {
    }
    ~Shell() override
    {
        if (fns_.destroy) fns_.destroy(fns_.ctx);
    }
    bool may_fail() const override { return true; }
    bool native(Space) const override { return true; }
    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *) const override
    {
        // Every rank runs the user's code (which may run collectives of its own, each agreed),
        // then the ranks agree on its outcome: a non-zero return on one rank fails every rank.
        const plm_op_shell_fn fn = fns_.fn[adjoint ? 1 : 0];
        std::optional<Error> local;
        if (!fn) {
            local = Error(PLM_ERR_NOT_SUPPORTED, adjoint ? "this shell operator has no rmatvec function"
                                                         : "this shell operator has no matvec function");
        } else {
            int rc = 0;
            {
                alloc::Allowed user_code;  // its allocations fail inside its own agreed calls
                rc = fns_.call(fn, fns_.ctx, x, y);
            }
            if (rc != 0)
                local = Error(PLM_ERR_CALLBACK, std::string("the user shell ") + (adjoint ? "rmatvec" : "matvec") +
                                                    " callback returned " + std::to_string(rc));
        }
        agree_on(*this, comm(), local);
    }

private:
    ShellFns fns_;
};

}  // namespace

Operator::Ptr shell(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, const ShellFns &fns)
{
    PLM_REQUIRE(domain && range, PLM_ERR_INVALID_ARG, "a shell operator needs a domain and a range layout");
    PLM_REQUIRE(&domain->comm() == &range->comm(), PLM_ERR_INVALID_ARG,
                "a shell operator's domain and range layouts must be on one communicator");
    PLM_REQUIRE(fns.fn[0] || fns.fn[1], PLM_ERR_INVALID_ARG, "a shell operator needs matvec or rmatvec");
    PLM_REQUIRE(fns.call, PLM_ERR_INTERNAL, "a shell operator needs its caller");
    return std::make_shared<Shell>(dt, std::move(domain), std::move(range), fns);
}

}  // namespace plm::ops
