// Layout entry points: handle checks and conversions only; the work is in
// src/array/array_layout.cpp.
#include <memory>

#include "c_api/guard.hpp"

using namespace plm;
using detail::guard;
using detail::layout_of;

namespace {

template <typename F> plm_status_t query(plm_const_layout_t l, const void *out, F &&f)
{
    return guard([&] {
        const ArrayLayout &layout = *layout_of(l);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "output pointer is NULL");
        f(layout);
    });
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_layout_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                       plm_partition_t partition, int nlocal, const int64_t *local_shapes, int nmask,
                                       const int *mask, plm_layout_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;  // cleared even when the comm handle is bad
        comm::Communicator &c = detail::comm_of(comm);
        LayoutSpec spec;
        spec.comm = comm->comm;
        comm::Agreement ag(c, "layout_create");
        std::unique_ptr<plm_layout_s> h;
        ag.check([&] {
            detail::clear_out(out, "out");
            spec = detail::layout_spec(comm, ndim, global_shape, axis, enum_value(partition), nlocal, local_shapes, nmask, mask);
        });
        ArrayLayout::Draft d = ArrayLayout::check(ag, spec);
        ag.check([&] { h.reset(new plm_layout_s()); });  // allocated before the agreement
        ag.run();
        detail::fill_layout_handle(h.get(), ArrayLayout::finish(std::move(d)));
        *out = h.release();
    });
}

PLM_API plm_status_t plm_layout_retain(plm_layout_t layout)
{
    return guard([&] {
        layout_of(layout);
        ++layout->refs;
    });
}

PLM_API plm_status_t plm_layout_destroy(plm_layout_t *layout)
{
    return guard([&] {
        if (!layout || !*layout) return;
        layout_of(*layout);
        plm_layout_s *h = *layout;
        *layout = nullptr;
        if (--h->refs > 0) return;
        h->magic = 0;
        delete h;
    });
}

PLM_API plm_status_t plm_layout_ndim(plm_const_layout_t l, int *ndim)
{
    return query(l, ndim, [&](const ArrayLayout &a) { detail::layout_query::ndim(a, ndim); });
}

PLM_API plm_status_t plm_layout_global_shape(plm_const_layout_t l, int64_t *shape)
{
    return query(l, shape, [&](const ArrayLayout &a) { detail::layout_query::global_shape(a, shape); });
}

PLM_API plm_status_t plm_layout_local_shape(plm_const_layout_t l, int64_t *shape)
{
    return query(l, shape, [&](const ArrayLayout &a) { detail::layout_query::local_shape(a, shape); });
}

PLM_API plm_status_t plm_layout_local_shapes(plm_const_layout_t l, int64_t *shapes)
{
    return query(l, shapes, [&](const ArrayLayout &a) { detail::layout_query::local_shapes(a, shapes); });
}

PLM_API plm_status_t plm_layout_local_size(plm_const_layout_t l, int64_t *n)
{
    return query(l, n, [&](const ArrayLayout &a) { detail::layout_query::local_size(a, n); });
}

PLM_API plm_status_t plm_layout_local_offset(plm_const_layout_t l, int64_t *offset)
{
    return query(l, offset, [&](const ArrayLayout &a) { detail::layout_query::local_offset(a, offset); });
}

PLM_API plm_status_t plm_layout_axis(plm_const_layout_t l, int *axis)
{
    return query(l, axis, [&](const ArrayLayout &a) { detail::layout_query::axis(a, axis); });
}

PLM_API plm_status_t plm_layout_partition(plm_const_layout_t l, plm_partition_t *partition)
{
    return query(l, partition, [&](const ArrayLayout &a) { detail::layout_query::partition(a, partition); });
}

PLM_API plm_status_t plm_layout_mask(plm_const_layout_t l, int *has_mask, int *mask)
{
    return query(l, has_mask, [&](const ArrayLayout &a) { detail::layout_query::mask(a, has_mask, mask); });
}

PLM_API plm_status_t plm_layout_get_comm(plm_const_layout_t l, plm_comm_t *comm)
{
    return guard([&] {
        detail::clear_out(comm, "comm");
        layout_of(l);
        *comm = const_cast<plm_comm_s *>(&l->comm_handle);
    });
}

PLM_API plm_status_t plm_layout_equal(plm_const_layout_t a, plm_const_layout_t b, int *equal)
{
    return guard([&] {
        PLM_REQUIRE(equal, PLM_ERR_INVALID_ARG, "equal is NULL");
        *equal = layout_of(a)->same_as(*layout_of(b)) ? 1 : 0;
    });
}

PLM_API plm_status_t plm_array_create_from_layout(plm_const_layout_t layout, plm_dtype_t dtype, plm_memory_t memory,
                                                  void *user_data, int64_t user_bytes, plm_array_t *out)
{
    return guard([&] {
        detail::clear_out(out, "out");
        std::unique_ptr<plm_array_s> h(detail::new_array_handle(nullptr));
        h->array = DistributedArray::create_from_layout(layout_of(layout), enum_value(dtype), enum_value(memory),
                                                        user_data, user_bytes);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

PLM_API plm_status_t plm_array_layout(plm_const_array_t x, plm_layout_t *layout)
{
    return guard([&] {
        detail::clear_out(layout, "layout");
        *layout = detail::new_layout_handle(detail::array_of(x).layout_object());
    });
}

}  // extern "C"
