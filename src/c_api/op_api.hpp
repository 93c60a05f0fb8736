// Helpers shared by the operator, solver and proximal entry points (c_op.cpp, c_stencil.cpp,
// c_signal.cpp, c_matmul.cpp, c_solver.cpp, c_prox.cpp): making operator handles, reading
// operands inside an agreement, and running a solve.
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "c_api/guard.hpp"

namespace plm::detail {

// Wraps a new operator in a handle (allocated first, so a failure leaks nothing).
template <typename F> plm_status_t make_op(plm_op_t *out, F &&build)
{
    return guard([&] {
        clear_out(out, "out");
        std::unique_ptr<plm_op_s> h(new plm_op_s());
        h->op = build();
        h->magic = kOpMagic;
        *out = h.release();
    });
}

inline const ops::Operator &distributed_op(plm_const_op_t op)
{
    const ops::Operator &o = *op_of(op);
    PLM_REQUIRE(!o.is_local(), PLM_ERR_INVALID_ARG, "a local operator has no domain or range layout");
    return o;
}

// A distributed operator with one domain member and one range member (a plain one, or a
// stacked composite such as S^H S that maps one array to one array).
inline const ops::Operator &plain_op(plm_const_op_t op)
{
    const ops::Operator &o = distributed_op(op);
    PLM_REQUIRE(!o.stacked() || (o.domain_parts().size() == 1 && o.range_parts().size() == 1), PLM_ERR_INVALID_ARG,
                "a stacked operator maps stacks: use plm_op_domain_part / plm_op_range_part and the *_stacked calls");
    return o;
}

inline std::vector<ops::Operator::Ptr> op_list(int n, const plm_const_op_t *ops)
{
    PLM_REQUIRE(n >= 1 && ops, PLM_ERR_INVALID_ARG, "n must be >= 1 with a list of operators (n = %d)", n);
    std::vector<ops::Operator::Ptr> v;
    for (int i = 0; i < n; ++i) v.push_back(op_of(ops[i]));
    return v;
}

// A collective constructor on comm: the handle is allocated inside the agreement, which
// build() runs.
template <typename F> plm_status_t make_on(plm_comm_t comm, const char *what, plm_op_t *out, F &&build)
{
    return guard([&] {
        if (out) *out = nullptr;
        comm::Communicator &c = comm_of(comm);
        comm::Agreement ag(c, what);
        std::unique_ptr<plm_op_s> h;
        ag.check([&] {
            clear_out(out, "out");
            h.reset(new plm_op_s());
        });
        h->op = build(ag, comm->comm);
        h->magic = kOpMagic;
        *out = h.release();
    });
}

// n values of a caller's array (NULL: n copies of fallback), read inside the agreement.
template <typename T> std::vector<T> values(comm::Agreement &ag, int n, const T *v, T fallback, const char *what)
{
    std::vector<T> out;
    ag.check([&] {
        PLM_REQUIRE(n >= 0, PLM_ERR_INVALID_ARG, "%s: a negative count (%d)", what, n);
        out = v ? std::vector<T>(v, v + n) : std::vector<T>(static_cast<size_t>(n), fallback);
    });
    return out;
}

// Operands are arrays or stacks: either becomes a list of arrays (stack members in order).
inline solvers::Parts parts_of(plm_const_array_t a)
{
    return {const_cast<DistributedArray *>(&array_of(a))};
}

inline solvers::Parts parts_of(plm_const_stacked_t s)
{
    solvers::Parts p;
    for (const DistributedArray::Ptr &m : stack_of(s).members()) p.push_back(m.get());
    return p;
}

inline solvers::Info &info_of(plm_solver_info_s *h)
{
    PLM_REQUIRE(h && h->magic == kInfoMagic, PLM_ERR_INVALID_ARG, "plm_solver_info_t is not valid");
    return h->info;
}

inline const solvers::Info &info_of(const plm_solver_info_s *h) { return info_of(const_cast<plm_solver_info_s *>(h)); }

// The info's show flag and callback as a solver monitor; the callback sees x when it is an
// array, NULL for a stack.
template <typename XT> solvers::Monitor monitor_of(const plm_solver_info_s *info, XT x)
{
    solvers::Monitor mon;
    if (!info) return mon;
    mon.show = info->show;
    if (plm_solver_callback_fn fn = info->callback) {
        void *ctx = info->callback_ctx;
        plm_const_array_t xa = nullptr;
        if constexpr (std::is_same_v<XT, plm_array_t>) xa = x;
        mon.stop = [fn, ctx, xa](int64_t it, double cost) { return fn(ctx, it, xa, cost) != 0; };
    }
    return mon;
}

// A solve on arrays or stacks: the handles (operands, info) are resolved inside the operator's
// agreement, the rest is the solver's.
template <typename YT, typename XT, typename F>
plm_status_t solve(const char *what, plm_const_op_t op, YT y, XT x, plm_solver_info_t info, F &&run)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), what);
        solvers::Parts yp, xp;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            yp = parts_of(y);
            xp = parts_of(x);
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        run(ag, o, yp, xp, *inf, mon);
    });
}

}  // namespace plm::detail
