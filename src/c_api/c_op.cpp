// Operator entry points (pylopsmpi/op.h): local blocks, stacks, composites, user operators,
// queries, applies and the dot test; handle checks and conversions only, the work is in src/ops/.
#include <deque>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "c_api/op_api.hpp"

using namespace plm;
using namespace plm::detail;

namespace {

// A stack or block-diagonal: the handles become this rank's parts inside the agreement.
template <typename F>
plm_status_t make_stack(plm_comm_t comm, int n, const plm_const_op_t *parts, const char *what, plm_op_t *out, F &&build)
{
    return make_on(comm, what, out, [&](comm::Agreement &ag, const CommPtr &c) {
        std::vector<ops::Operator::Ptr> list;
        ag.check([&] {
            // n = 0: a rank with no local work (its blocks, rows or columns are elsewhere).
            PLM_REQUIRE(n >= 0 && (parts || n == 0), PLM_ERR_INVALID_ARG,
                        "%s needs n >= 0 local operators and the list of them (n = %d)", what, n);
            for (int i = 0; i < n; ++i) list.push_back(op_of(parts[i]));
        });
        return build(ag, c, std::move(list));
    });
}

// The operand lists of an apply, kept per thread and nesting depth (an apply made from a user
// operator's callback inside another takes the next pair) and cleared, not freed: once a depth
// has been used, applies allocate nothing (the SMPI guard counts allocations per apply).
class Operands {
public:
    Operands() : d_(depth())
    {
        // The depth counts only once the lists exist: a failed allocation here leaves it as it was.
        while (lists().size() <= d_) lists().emplace_back();
        x().clear();
        y().clear();
        ++depth();
    }
    ~Operands() { --depth(); }
    Operands(const Operands &) = delete;
    Operands &operator=(const Operands &) = delete;
    ops::Operator::In &x() { return lists()[d_].first; }
    ops::Operator::Out &y() { return lists()[d_].second; }

private:
    static size_t &depth()
    {
        thread_local size_t d = 0;
        return d;
    }
    static std::deque<std::pair<ops::Operator::In, ops::Operator::Out>> &lists()
    {
        thread_local std::deque<std::pair<ops::Operator::In, ops::Operator::Out>> l;  // grows: no reference moves
        return l;
    }
    size_t d_;
};

void add_operands(plm_const_array_t a, ops::Operator::In &x) { x.push_back(&array_of(a)); }
void add_operands(plm_const_array_t a, ops::Operator::Out &y) { y.push_back(const_cast<DistributedArray *>(&array_of(a))); }
template <typename List> void add_operands(plm_const_stacked_t s, List &l)
{
    for (const DistributedArray::Ptr &m : stack_of(s).members()) l.push_back(m.get());
}

// An apply on arrays or stacks: the handles are resolved inside the operator's agreement, the
// rest is ops::apply's.
template <typename In, typename Out> plm_status_t apply(plm_const_op_t op, In in, Out out, bool adjoint)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), adjoint ? "op_apply_adjoint" : "op_apply");
        std::optional<Operands> lists;
        ag.check([&] {
            lists.emplace();
            add_operands(in, lists->x());
            add_operands(out, lists->y());
        });
        static const ops::Operator::In none_in;
        static const ops::Operator::Out none_out;
        ops::apply(ag, o, lists ? lists->x() : none_in, lists ? lists->y() : none_out, adjoint);
    });
}

// Layout of member i of the domain or the range, as a new handle.
plm_status_t part_layout(plm_const_op_t op, int i, plm_layout_t *layout, bool range)
{
    return guard([&] {
        detail::clear_out(layout, "layout");
        const ops::Operator &o = distributed_op(op);
        const std::vector<ArrayLayout::Ptr> p = range ? o.range_parts() : o.domain_parts();
        PLM_REQUIRE(i >= 0 && i < static_cast<int>(p.size()), PLM_ERR_INVALID_ARG, "part %d outside 0..%zu", i,
                    p.size() - 1);
        *layout = detail::new_layout_handle(p[static_cast<size_t>(i)]);
    });
}

plm_status_t new_array_on(plm_const_op_t op, int memory, plm_array_t *out, bool range)
{
    return guard([&] {
        detail::clear_out(out, "out");
        const ops::Operator &o = plain_op(op);
        std::unique_ptr<plm_array_s> h(detail::new_array_handle(nullptr));
        h->array = DistributedArray::create_from_layout(range ? o.range() : o.domain(), to_public(o.dtype()),
                                                        memory, nullptr, 0);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_op_dense(plm_dtype_t dtype, int64_t rows, int64_t cols, const void *a, int64_t a_bytes,
                                  int col_major, int wrap, plm_op_t *out)
{
    return make_op(out, [&] {
        return ops::dense(from_public(enum_value(dtype)), rows, cols, a, a_bytes, col_major != 0, wrap != 0);
    });
}

PLM_API plm_status_t plm_op_diagonal(plm_dtype_t dtype, int64_t n, const void *d, int64_t d_bytes, plm_op_t *out)
{
    return make_op(out, [&] { return ops::diagonal(from_public(enum_value(dtype)), n, d, d_bytes); });
}

PLM_API plm_status_t plm_op_identity(plm_dtype_t dtype, int64_t n, plm_op_t *out)
{
    return make_op(out, [&] { return ops::identity(from_public(enum_value(dtype)), n); });
}

PLM_API plm_status_t plm_op_zero(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_t *out)
{
    return make_op(out, [&] { return ops::zero(from_public(enum_value(dtype)), rows, cols); });
}

PLM_API plm_status_t plm_op_callback(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_fn matvec,
                                     plm_op_fn rmatvec, void *ctx, void (*destroy)(void *), plm_op_t *out)
{
    return make_op(out, [&] {
        ops::CallbackFns f;
        f.host[0] = matvec;
        f.host[1] = rmatvec;
        return ops::callback(from_public(enum_value(dtype)), rows, cols, f, ctx, destroy);
    });
}

PLM_API plm_status_t plm_op_callback_device(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_device_fn matvec,
                                            plm_op_device_fn rmatvec, void *ctx, void (*destroy)(void *),
                                            plm_op_t *out)
{
    return make_op(out, [&] {
        ops::CallbackFns f;
        f.device[0] = matvec;
        f.device[1] = rmatvec;
        return ops::callback(from_public(enum_value(dtype)), rows, cols, f, ctx, destroy);
    });
}

// Runs a shell function on handles lent for the duration of the call: they own nothing (an
// aliasing pointer allocates nothing), plm_array_destroy() refuses them, and they end with the call.
static int call_shell(plm_op_shell_fn fn, void *ctx, const DistributedArray &x, DistributedArray &y)
{
    auto lend = [](plm_array_s &h, DistributedArray &a) {
        h.magic = detail::kArrayMagic;
        h.array = DistributedArray::Ptr(std::shared_ptr<void>(), &a);
        h.comm_handle.magic = detail::kCommMagic;
        h.comm_handle.comm = a.base_ptr();
        h.comm_handle.borrowed = true;
        h.borrowed = true;
    };
    plm_array_s hx, hy;
    lend(hx, const_cast<DistributedArray &>(x));
    lend(hy, y);
    return fn(ctx, &hx, &hy);
}

PLM_API plm_status_t plm_op_shell(plm_layout_t domain, plm_layout_t range, plm_dtype_t dtype, plm_op_shell_fn matvec,
                                  plm_op_shell_fn rmatvec, void *ctx, void (*destroy)(void *), plm_op_t *out)
{
    return make_op(out, [&] {
        ops::ShellFns f;
        f.fn[0] = matvec;
        f.fn[1] = rmatvec;
        f.ctx = ctx;
        f.destroy = destroy;
        f.call = call_shell;
        return ops::shell(from_public(enum_value(dtype)), detail::layout_of(domain), detail::layout_of(range), f);
    });
}

PLM_API plm_status_t plm_op_blockdiag(plm_comm_t comm, int n, const plm_const_op_t *parts, int nmask, const int *mask,
                                      plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_blockdiag", out, [&](comm::Agreement &ag, const CommPtr &c, auto list) {
        std::vector<int> m;
        ag.check([&] {
            PLM_REQUIRE(nmask >= 0 && (nmask == 0) == (mask == nullptr), PLM_ERR_INVALID_ARG,
                        "mask must be NULL exactly when nmask is 0");
            if (mask) m.assign(mask, mask + nmask);
        });
        return ops::block_diag(ag, c, std::move(list), std::move(m));
    });
}

PLM_API plm_status_t plm_op_vstack(plm_comm_t comm, int n, const plm_const_op_t *parts, plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_vstack", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::vstack(ag, c, std::move(list));
    });
}

PLM_API plm_status_t plm_op_hstack(plm_comm_t comm, int n, const plm_const_op_t *parts, plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_hstack", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::hstack(ag, c, std::move(list));
    });
}

PLM_API plm_status_t plm_op_stacked_blockdiag(int n, const plm_const_op_t *ops, plm_op_t *out)
{
    return make_op(out, [&] { return ops::stacked_block_diag(op_list(n, ops)); });
}

PLM_API plm_status_t plm_op_stacked_vstack(int n, const plm_const_op_t *ops, plm_op_t *out)
{
    return make_op(out, [&] { return ops::stacked_vstack(op_list(n, ops)); });
}

PLM_API plm_status_t plm_op_parts(plm_const_op_t op, int *n_domain, int *n_range)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        PLM_REQUIRE(n_domain && n_range, PLM_ERR_INVALID_ARG, "n_domain or n_range is NULL");
        *n_domain = static_cast<int>(o.domain_parts().size());
        *n_range = static_cast<int>(o.range_parts().size());
    });
}

PLM_API plm_status_t plm_op_domain_part(plm_const_op_t op, int i, plm_layout_t *layout)
{
    return part_layout(op, i, layout, false);
}

PLM_API plm_status_t plm_op_range_part(plm_const_op_t op, int i, plm_layout_t *layout)
{
    return part_layout(op, i, layout, true);
}

PLM_API plm_status_t plm_op_adjoint(plm_const_op_t a, plm_op_t *out)
{
    return make_op(out, [&] { return ops::adjoint(op_of(a)); });
}

PLM_API plm_status_t plm_op_scale(plm_const_op_t a, double alpha_re, double alpha_im, plm_op_t *out)
{
    return make_op(out, [&] {
        const ops::Operator::Ptr &o = op_of(a);
        return ops::scaled(o, make_scalar(o->dtype(), alpha_re, alpha_im, "plm_op_scale"));
    });
}

PLM_API plm_status_t plm_op_sum(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make_op(out, [&] { return ops::sum(op_of(a), op_of(b)); });
}

PLM_API plm_status_t plm_op_difference(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make_op(out, [&] {
        const ops::Operator::Ptr &ob = op_of(b);
        return ops::sum(op_of(a), ops::scaled(ob, make_scalar(ob->dtype(), -1, 0, "plm_op_difference")));
    });
}

PLM_API plm_status_t plm_op_product(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make_op(out, [&] { return ops::product(op_of(a), op_of(b)); });
}

PLM_API plm_status_t plm_op_transpose(plm_const_op_t a, plm_op_t *out)
{
    return make_op(out, [&] { return ops::transpose(op_of(a)); });
}

PLM_API plm_status_t plm_op_conj(plm_const_op_t a, plm_op_t *out)
{
    return make_op(out, [&] { return ops::conjugate(op_of(a)); });
}

PLM_API plm_status_t plm_op_power(plm_const_op_t a, int p, plm_op_t *out)
{
    return make_op(out, [&] { return ops::power(op_of(a), p); });
}

PLM_API plm_status_t plm_op_broadcast(plm_comm_t comm, plm_const_op_t local, plm_op_t *out)
{
    return make_stack(comm, 1, &local, "op_broadcast", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::broadcast(ag, c, list.empty() ? nullptr : list.front());  // empty: a check failed
    });
}

PLM_API plm_status_t plm_op_destroy(plm_op_t *op)
{
    return guard([&] {
        if (!op || !*op) return;
        op_of(*op);
        (*op)->magic = 0;
        delete *op;
        *op = nullptr;
    });
}

PLM_API plm_status_t plm_op_shape(plm_const_op_t op, int64_t *rows, int64_t *cols)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(rows && cols, PLM_ERR_INVALID_ARG, "rows or cols is NULL");
        *rows = o.rows();
        *cols = o.cols();
    });
}

PLM_API plm_status_t plm_op_dtype(plm_const_op_t op, plm_dtype_t *dtype)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(dtype, PLM_ERR_INVALID_ARG, "dtype is NULL");
        *dtype = to_public(o.dtype());
    });
}

PLM_API plm_status_t plm_op_is_local(plm_const_op_t op, int *is_local)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(is_local, PLM_ERR_INVALID_ARG, "is_local is NULL");
        *is_local = o.is_local() ? 1 : 0;
    });
}

PLM_API plm_status_t plm_op_clinear(plm_const_op_t op, int *clinear)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(clinear, PLM_ERR_INVALID_ARG, "clinear is NULL");
        *clinear = o.clinear() ? 1 : 0;
    });
}

PLM_API plm_status_t plm_op_native(plm_const_op_t op, plm_memory_t memory, int *native)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(native, PLM_ERR_INVALID_ARG, "native is NULL");
        *native = o.native(space_from_public(enum_value(memory))) ? 1 : 0;
    });
}

PLM_API plm_status_t plm_op_domain(plm_const_op_t op, plm_layout_t *domain)
{
    return guard([&] {
        detail::clear_out(domain, "domain");
        *domain = detail::new_layout_handle(plain_op(op).domain());
    });
}

PLM_API plm_status_t plm_op_range(plm_const_op_t op, plm_layout_t *range)
{
    return guard([&] {
        detail::clear_out(range, "range");
        *range = detail::new_layout_handle(plain_op(op).range());
    });
}

PLM_API plm_status_t plm_op_new_domain_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *x)
{
    return new_array_on(op, enum_value(memory), x, false);
}

PLM_API plm_status_t plm_op_new_range_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *y)
{
    return new_array_on(op, enum_value(memory), y, true);
}

PLM_API plm_status_t plm_op_apply(plm_const_op_t op, plm_const_array_t x, plm_array_t y)
{
    return apply(op, x, static_cast<plm_const_array_t>(y), false);
}

PLM_API plm_status_t plm_op_apply_adjoint(plm_const_op_t op, plm_const_array_t y, plm_array_t x)
{
    return apply(op, y, static_cast<plm_const_array_t>(x), true);
}

PLM_API plm_status_t plm_op_apply_stacked(plm_const_op_t op, plm_const_stacked_t x, plm_stacked_t y)
{
    return apply(op, x, static_cast<plm_const_stacked_t>(y), false);
}

PLM_API plm_status_t plm_op_apply_adjoint_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x)
{
    return apply(op, y, static_cast<plm_const_stacked_t>(x), true);
}

PLM_API plm_status_t plm_op_dottest(plm_const_op_t op, double rtol, int *passed, double *yy, double *xx)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), "op_dottest");
        ag.check([&] { PLM_REQUIRE(passed, PLM_ERR_INVALID_ARG, "passed is NULL"); });
        const solvers::DotTest t = solvers::dottest(ag, o, rtol);
        *passed = t.passed ? 1 : 0;
        if (yy) {
            yy[0] = t.yy_re;
            yy[1] = t.yy_im;
        }
        if (xx) {
            xx[0] = t.xx_re;
            xx[1] = t.xx_im;
        }
    });
}

}  // extern "C"
