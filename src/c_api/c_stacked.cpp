// Stacked array entry points.
#include "c_api/guard.hpp"

using namespace plm;
using detail::guard;
using detail::stack_of;

namespace {

plm_stacked_s *new_stack_handle(StackedArray::Ptr s)
{
    auto *h = new plm_stacked_s();
    h->magic = detail::kStackMagic;
    h->stack = std::move(s);
    return h;
}

void release_members(plm_stacked_s *h)
{
    for (plm_array_s *m : h->member_handles) {
        if (!m) continue;
        m->magic = 0;
        delete m;
    }
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_stacked_create(int n, const plm_array_t *arrays, plm_stacked_t *out)
{
    return guard([&] {
        detail::clear_out(out, "out");
        PLM_REQUIRE(n >= 1, PLM_ERR_INVALID_ARG, "a stack needs at least one array (n = %d)", n);
        PLM_REQUIRE(arrays, PLM_ERR_INVALID_ARG, "arrays is NULL");
        std::vector<DistributedArray::Ptr> members;
        for (int i = 0; i < n; ++i) {
            detail::array_of(arrays[i]);
            members.push_back(arrays[i]->array);
        }
        *out = new_stack_handle(StackedArray::create(std::move(members)));
    });
}

PLM_API plm_status_t plm_stacked_destroy(plm_stacked_t *stack)
{
    return guard([&] {
        if (!stack || !*stack) return;
        stack_of(*stack);
        release_members(*stack);
        (*stack)->magic = 0;
        delete *stack;
        *stack = nullptr;
    });
}

PLM_API plm_status_t plm_stacked_narrays(plm_const_stacked_t s, int *n)
{
    return guard([&] {
        PLM_REQUIRE(n, PLM_ERR_INVALID_ARG, "n is NULL");
        *n = static_cast<int>(stack_of(s).members().size());
    });
}

PLM_API plm_status_t plm_stacked_get(plm_const_stacked_t s, int i, plm_array_t *member)
{
    return guard([&] {
        detail::clear_out(member, "member");
        const StackedArray &st = stack_of(s);
        const int n = static_cast<int>(st.members().size());
        PLM_REQUIRE(i >= 0 && i < n, PLM_ERR_INVALID_ARG, "member %d outside 0..%d", i, n - 1);
        auto *h = const_cast<plm_stacked_s *>(s);
        if (h->member_handles.empty()) h->member_handles.assign(static_cast<size_t>(n), nullptr);
        plm_array_s *&slot = h->member_handles[static_cast<size_t>(i)];
        if (!slot) {
            slot = detail::new_array_handle(st.members()[static_cast<size_t>(i)]);
            slot->borrowed = true;
        }
        *member = slot;
    });
}

PLM_API plm_status_t plm_stacked_zeros_like(plm_const_stacked_t s, plm_stacked_t *out)
{
    return guard([&] {
        detail::clear_out(out, "out");
        *out = new_stack_handle(stack_of(s).zeros_like());
    });
}

PLM_API plm_status_t plm_stacked_copy(plm_const_stacked_t x, plm_stacked_t y)
{
    return guard([&] { stack_of(y).copy_from(stack_of(x)); });
}

PLM_API plm_status_t plm_stacked_scale(plm_stacked_t x, double alpha_re, double alpha_im)
{
    return guard([&] {
        StackedArray &s = stack_of(x);
        s.scale(make_scalar(s.dtype(), alpha_re, alpha_im, "stacked scale alpha"));
    });
}

PLM_API plm_status_t plm_stacked_axpby(double alpha_re, double alpha_im, plm_const_stacked_t x, double beta_re,
                                       double beta_im, plm_stacked_t y)
{
    return guard([&] {
        StackedArray &s = stack_of(y);
        const StackedArray &a = stack_of(x);
        s.axpby(make_scalar(s.dtype(), alpha_re, alpha_im, "stacked axpby alpha"), a,
                make_scalar(s.dtype(), beta_re, beta_im, "stacked axpby beta"));
    });
}

PLM_API plm_status_t plm_stacked_dot(plm_const_stacked_t x, plm_const_stacked_t y, int conjugate, double *re,
                                     double *im)
{
    return guard([&] {
        const StackedArray &s = stack_of(x);
        comm::Agreement ag(s.base(), "stacked_dot");
        const StackedArray *t = nullptr;
        ag.check([&] { t = &stack_of(y); });
        s.dot(ag, t, conjugate != 0, re, im);
    });
}

PLM_API plm_status_t plm_stacked_norm(plm_const_stacked_t x, double ord, double *result)
{
    return guard([&] {
        const StackedArray &s = stack_of(x);
        comm::Agreement ag(s.base(), "stacked_norm");
        ag.check([&] { PLM_REQUIRE(result, PLM_ERR_INVALID_ARG, "stacked norm: result is NULL"); });
        *result = s.norm(ag, ord);
    });
}

PLM_API plm_status_t plm_stacked_asarray(plm_const_stacked_t x, void *out, int64_t out_bytes)
{
    return guard([&] {
        const StackedArray &s = stack_of(x);
        comm::Agreement ag(s.base(), "stacked_asarray");
        s.asarray(ag, out, out_bytes);
    });
}

}  // extern "C"
