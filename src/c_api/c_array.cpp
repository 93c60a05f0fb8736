// Distributed array entry points: handle checks and conversions only; the work is in
// src/array/.
#include <cstring>
#include <memory>

#include "c_api/guard.hpp"

using namespace plm;
using detail::array_of;
using detail::guard;

namespace {

plm_status_t create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis, plm_partition_t partition,
                    plm_dtype_t dtype, plm_memory_t memory, int nlocal, const int64_t *local_shapes, int nmask,
                    const int *mask, void *user_data, int64_t user_bytes, plm_array_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;  // cleared even when the comm handle is bad
        comm::Communicator &c = detail::comm_of(comm);
        ArraySpec spec;
        spec.layout.comm = comm->comm;
        comm::Agreement ag(c, "array_create");
        ag.check([&] {
            detail::clear_out(out, "out");
            spec.layout = detail::layout_spec(comm, ndim, global_shape, axis, enum_value(partition), nlocal, local_shapes, nmask,
                                              mask);
            spec.dtype = enum_value(dtype);
            spec.memory = enum_value(memory);
            spec.user_data = user_data;
            spec.user_bytes = user_bytes;
        });
        // The handle is allocated before the agreement too.
        std::unique_ptr<plm_array_s> h;
        ag.check([&] { h.reset(detail::new_array_handle(nullptr)); });
        h->array = DistributedArray::create(ag, spec);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

template <typename F> plm_status_t make_like(plm_const_array_t x, plm_array_t *out, F &&make)
{
    return guard([&] {
        detail::clear_out(out, "out");
        *out = detail::new_array_handle(make(array_of(x)));
    });
}

plm_status_t binary(kernels::Binary op, plm_const_array_t x, plm_const_array_t y, plm_array_t z)
{
    return guard([&] { array_of(z).binary(op, array_of(x), array_of(y)); });
}

// The operand of a collective call other than the array it runs on: a bad handle becomes
// this rank's error inside the agreement instead of leaving the other ranks waiting.
template <typename H, typename T> const T *operand(comm::Agreement &ag, H h, T &(*of)(H))
{
    const T *p = nullptr;
    ag.check([&] { p = &of(h); });
    return p;
}

// BROADCAST writes communicate, so they agree on their checks; writes to other partitions
// stay local and fail alone.
template <typename F> void checked_write(const DistributedArray &a, const char *what, F &&check)
{
    if (a.layout().partition != PLM_PARTITION_BROADCAST) {
        check();
        return;
    }
    comm::Agreement ag(a.base(), what);
    ag.check(check);
    ag.run();
}

template <typename F> plm_status_t query(plm_const_array_t x, const void *out, F &&f)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "output pointer is NULL");
        f(a);
    });
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_array_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                      plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                      plm_array_t *out)
{
    return create(comm, ndim, global_shape, axis, partition, dtype, memory, 0, nullptr, 0, nullptr, nullptr, 0, out);
}

PLM_API plm_status_t plm_array_create_ex(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                         plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                         int nlocal, const int64_t *local_shapes, int nmask, const int *mask,
                                         void *user_data, int64_t user_bytes, plm_array_t *out)
{
    return create(comm, ndim, global_shape, axis, partition, dtype, memory, nlocal, local_shapes, nmask, mask,
                  user_data, user_bytes, out);
}

PLM_API plm_status_t plm_array_destroy(plm_array_t *array)
{
    return guard([&] {
        if (!array || !*array) return;
        array_of(*array);
        PLM_REQUIRE(!(*array)->borrowed, PLM_ERR_INVALID_ARG,
                    "this plm_array_t was lent by plm_stacked_get() and must not be destroyed");
        (*array)->magic = 0;
        delete *array;
        *array = nullptr;
    });
}

PLM_API plm_status_t plm_array_zeros_like(plm_const_array_t x, plm_array_t *out)
{
    return make_like(x, out, [](const DistributedArray &a) { return a.zeros_like(); });
}

PLM_API plm_status_t plm_array_empty_like(plm_const_array_t x, plm_array_t *out)
{
    return make_like(x, out, [](const DistributedArray &a) { return a.empty_like(); });
}

PLM_API plm_status_t plm_array_duplicate(plm_const_array_t x, plm_array_t *out)
{
    return make_like(x, out, [](const DistributedArray &a) { return a.duplicate(); });
}

PLM_API plm_status_t plm_array_ndim(plm_const_array_t x, int *ndim)
{
    return query(x, ndim, [&](const DistributedArray &a) { detail::layout_query::ndim(*a.layout_object(), ndim); });
}

PLM_API plm_status_t plm_array_global_shape(plm_const_array_t x, int64_t *shape)
{
    return query(x, shape, [&](const DistributedArray &a) { detail::layout_query::global_shape(*a.layout_object(), shape); });
}

PLM_API plm_status_t plm_array_local_shape(plm_const_array_t x, int64_t *shape)
{
    return query(x, shape, [&](const DistributedArray &a) { detail::layout_query::local_shape(*a.layout_object(), shape); });
}

PLM_API plm_status_t plm_array_local_shapes(plm_const_array_t x, int64_t *shapes)
{
    return query(x, shapes, [&](const DistributedArray &a) { detail::layout_query::local_shapes(*a.layout_object(), shapes); });
}

PLM_API plm_status_t plm_array_local_size(plm_const_array_t x, int64_t *n)
{
    return query(x, n, [&](const DistributedArray &a) { detail::layout_query::local_size(*a.layout_object(), n); });
}

PLM_API plm_status_t plm_array_local_offset(plm_const_array_t x, int64_t *offset)
{
    return query(x, offset, [&](const DistributedArray &a) { detail::layout_query::local_offset(*a.layout_object(), offset); });
}

PLM_API plm_status_t plm_array_axis(plm_const_array_t x, int *axis)
{
    return query(x, axis, [&](const DistributedArray &a) { detail::layout_query::axis(*a.layout_object(), axis); });
}

PLM_API plm_status_t plm_array_partition(plm_const_array_t x, plm_partition_t *partition)
{
    return query(x, partition, [&](const DistributedArray &a) { detail::layout_query::partition(*a.layout_object(), partition); });
}

PLM_API plm_status_t plm_array_dtype(plm_const_array_t x, plm_dtype_t *dtype)
{
    return query(x, dtype, [&](const DistributedArray &a) { *dtype = to_public(a.dtype()); });
}

PLM_API plm_status_t plm_array_memory(plm_const_array_t x, plm_memory_t *memory)
{
    return query(x, memory, [&](const DistributedArray &a) { *memory = space_to_public(a.space()); });
}

PLM_API plm_status_t plm_array_mask(plm_const_array_t x, int *has_mask, int *mask)
{
    return query(x, has_mask, [&](const DistributedArray &a) { detail::layout_query::mask(*a.layout_object(), has_mask, mask); });
}

PLM_API plm_status_t plm_array_get_comm(plm_const_array_t x, plm_comm_t *comm)
{
    return guard([&] {
        detail::clear_out(comm, "comm");
        array_of(x);
        *comm = const_cast<plm_comm_s *>(&x->comm_handle);
    });
}

PLM_API plm_status_t plm_array_get_local_read(plm_const_array_t x, const void **data)
{
    return guard([&] {
        detail::clear_out(data, "data");
        const DistributedArray &a = array_of(x);
        a.finish_device_work();  // the caller may read on any stream, or copy to the host
        *data = a.data();
        ++const_cast<plm_array_s *>(x)->reads_out;
    });
}

PLM_API plm_status_t plm_array_restore_local_read(plm_const_array_t x, const void **data)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        PLM_REQUIRE(data && *data == a.data(), PLM_ERR_INVALID_ARG,
                    "restore_local_read needs the pointer get_local_read returned");
        PLM_REQUIRE(x->reads_out > 0, PLM_ERR_INVALID_ARG, "restore_local_read without get_local_read");
        --const_cast<plm_array_s *>(x)->reads_out;
        *data = nullptr;
    });
}

PLM_API plm_status_t plm_array_get_local_write(plm_array_t x, void **data)
{
    return guard([&] {
        detail::clear_out(data, "data");
        const DistributedArray &a = array_of(x);
        a.finish_device_work();
        *data = a.data();
        ++x->writes_out;
    });
}

PLM_API plm_status_t plm_array_restore_local_write(plm_array_t x, void **data)
{
    return guard([&] {
        DistributedArray &a = array_of(x);
        checked_write(a, "restore_local_write", [&] {
            PLM_REQUIRE(data && *data == a.data(), PLM_ERR_INVALID_ARG,
                        "restore_local_write needs the pointer get_local_write returned");
            PLM_REQUIRE(x->writes_out > 0, PLM_ERR_INVALID_ARG, "restore_local_write without get_local_write");
            if (a.layout().partition == PLM_PARTITION_BROADCAST) a.reserve_staging(a.local_size());
        });
        --x->writes_out;
        *data = nullptr;
        a.sync_broadcast();
    });
}

PLM_API plm_status_t plm_array_fill(plm_array_t x, double value_re, double value_im)
{
    return guard([&] {
        DistributedArray &a = array_of(x);
        auto check = [&] { make_scalar(a.dtype(), value_re, value_im, "fill value"); };
        double re = value_re, im = value_im;
        if (a.layout().partition == PLM_PARTITION_BROADCAST) {
            // Rank 0's value wins; it rides on the agreement as two sum lanes.
            comm::Agreement ag(a.base(), "fill");
            ag.check(check);
            const size_t lane = ag.add_lanes(2, comm::LaneOp::sum);
            if (a.rank() == 0) {
                ag.set(lane, re);
                ag.set(lane + 1, im);
            }
            ag.run();
            re = ag.get(lane);
            im = ag.get(lane + 1);
        }
        a.fill(make_scalar(a.dtype(), re, im, "fill value"));
    });
}

PLM_API plm_status_t plm_array_copy(plm_const_array_t x, plm_array_t y)
{
    return guard([&] {
        array_of(y).copy_from(array_of(x));
    });
}

PLM_API plm_status_t plm_array_add(plm_const_array_t x, plm_const_array_t y, plm_array_t z)
{
    return binary(kernels::Binary::add, x, y, z);
}

PLM_API plm_status_t plm_array_sub(plm_const_array_t x, plm_const_array_t y, plm_array_t z)
{
    return binary(kernels::Binary::sub, x, y, z);
}

PLM_API plm_status_t plm_array_mul(plm_const_array_t x, plm_const_array_t y, plm_array_t z)
{
    return binary(kernels::Binary::mul, x, y, z);
}

PLM_API plm_status_t plm_array_scale(plm_array_t x, double alpha_re, double alpha_im)
{
    return guard([&] {
        DistributedArray &a = array_of(x);
        const Scalar alpha = make_scalar(a.dtype(), alpha_re, alpha_im, "scale alpha");
        kernels::scale(a.exec(), a.dtype(), a.local_size(), alpha.data(), a.data());
    });
}

PLM_API plm_status_t plm_array_axpby(double alpha_re, double alpha_im, plm_const_array_t x, double beta_re,
                                     double beta_im, plm_array_t y)
{
    return guard([&] {
        DistributedArray &b = array_of(y);
        const DistributedArray &a = array_of(x);
        const Scalar alpha = make_scalar(b.dtype(), alpha_re, alpha_im, "axpby alpha");
        const Scalar beta = make_scalar(b.dtype(), beta_re, beta_im, "axpby beta");
        b.axpby(alpha, a, beta);
    });
}

PLM_API plm_status_t plm_array_conj(plm_const_array_t x, plm_array_t y)
{
    return guard([&] {
        DistributedArray &b = array_of(y);
        const DistributedArray &a = array_of(x);
        b.require_compatible(a, "conj");
        kernels::conj(b.exec(), b.dtype(), b.local_size(), a.data(), b.data());
    });
}

PLM_API plm_status_t plm_array_dot(plm_const_array_t x, plm_const_array_t y, int conjugate, double *re,
                                   double *im)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "dot");
        a.dot(ag, operand(ag, y, array_of), conjugate != 0, re, im);
    });
}

PLM_API plm_status_t plm_array_norm(plm_const_array_t x, double ord, double *result)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "norm");
        ag.check([&] { PLM_REQUIRE(result, PLM_ERR_INVALID_ARG, "norm: result is NULL"); });
        *result = a.norm(ag, ord);
    });
}

PLM_API plm_status_t plm_array_norm_axis(plm_const_array_t x, double ord, int axis, double *out, int64_t n_out)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "norm_axis");
        a.norm_axis(ag, ord, axis, out, n_out);
    });
}

PLM_API plm_status_t plm_array_asarray(plm_const_array_t x, int masked, void *out, int64_t out_bytes)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "asarray");
        a.asarray(ag, masked != 0, out, out_bytes);
    });
}

PLM_API plm_status_t plm_array_set_global(plm_array_t x, const void *global, int64_t global_bytes)
{
    return guard([&] {
        DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "set_global");
        a.set_global(ag, global, global_bytes);
    });
}

PLM_API plm_status_t plm_array_gather_to(plm_const_array_t x, int root, void *out, int64_t out_bytes)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "gather_to");
        a.gather_to(ag, root, out, out_bytes);
    });
}

PLM_API plm_status_t plm_array_scatter_from(plm_array_t x, int root, const void *global, int64_t global_bytes)
{
    return guard([&] {
        DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "scatter_from");
        a.scatter_from(ag, root, global, global_bytes);
    });
}

PLM_API plm_status_t plm_array_ghost_shape(plm_const_array_t x, int64_t before, int64_t after, int64_t *shape)
{
    return query(x, shape, [&](const DistributedArray &a) {
        Shape s = a.ghost_shape(before, after);
        std::copy(s.begin(), s.end(), shape);
    });
}

PLM_API plm_status_t plm_array_add_ghost_cells(plm_const_array_t x, int64_t before, int64_t after, void *out,
                                               int64_t out_bytes)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "add_ghost_cells");
        a.add_ghost_cells(ag, before, after, out, out_bytes);
    });
}

PLM_API plm_status_t plm_array_redistribute(plm_const_array_t x, int axis, plm_array_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "redistribute");
        std::unique_ptr<plm_array_s> h;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(detail::new_array_handle(nullptr));
        });
        h->array = a.redistribute(ag, axis);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

}  // extern "C"
