#include "c_api/guard.hpp"

#include <cstring>

namespace plm::detail {

namespace {
thread_local char t_last_error[1024] = "";
}

void record_error(const char *message)
{
    std::strncpy(t_last_error, message ? message : "", sizeof t_last_error - 1);
    t_last_error[sizeof t_last_error - 1] = '\0';
}

const char *last_error() { return t_last_error; }

comm::Communicator &comm_of(const plm_comm_s *h)
{
    PLM_REQUIRE(h, PLM_ERR_INVALID_ARG, "plm_comm_t is NULL");
    PLM_REQUIRE(h->magic == kCommMagic && h->comm, PLM_ERR_INVALID_ARG, "plm_comm_t is not a valid communicator");
    return *h->comm;
}

DistributedArray &array_of(const plm_array_s *h)
{
    PLM_REQUIRE(h, PLM_ERR_INVALID_ARG, "plm_array_t is NULL");
    PLM_REQUIRE(h->magic == kArrayMagic && h->array, PLM_ERR_INVALID_ARG, "plm_array_t is not a valid array");
    return *h->array;
}

StackedArray &stack_of(const plm_stacked_s *h)
{
    PLM_REQUIRE(h, PLM_ERR_INVALID_ARG, "plm_stacked_t is NULL");
    PLM_REQUIRE(h->magic == kStackMagic && h->stack, PLM_ERR_INVALID_ARG, "plm_stacked_t is not a valid stack");
    return *h->stack;
}

plm_array_s *new_array_handle(DistributedArray::Ptr a)
{
    auto *h = new plm_array_s();
    h->magic = kArrayMagic;
    h->comm_handle.magic = kCommMagic;
    if (a) h->comm_handle.comm = a->base_ptr();
    h->comm_handle.borrowed = true;
    h->array = std::move(a);
    return h;
}

const ArrayLayout::Ptr &layout_of(const plm_layout_s *h)
{
    PLM_REQUIRE(h, PLM_ERR_INVALID_ARG, "plm_layout_t is NULL");
    PLM_REQUIRE(h->magic == kLayoutMagic && h->layout, PLM_ERR_INVALID_ARG, "plm_layout_t is not a valid layout");
    return h->layout;
}

const ops::Operator::Ptr &op_of(const plm_op_s *h)
{
    PLM_REQUIRE(h, PLM_ERR_INVALID_ARG, "plm_op_t is NULL");
    PLM_REQUIRE(h->magic == kOpMagic && h->op, PLM_ERR_INVALID_ARG, "plm_op_t is not a valid operator");
    return h->op;
}

plm_layout_s *new_layout_handle(ArrayLayout::Ptr l)
{
    auto *h = new plm_layout_s();
    fill_layout_handle(h, std::move(l));
    return h;
}

void fill_layout_handle(plm_layout_s *h, ArrayLayout::Ptr l)
{
    h->magic = kLayoutMagic;
    h->comm_handle.magic = kCommMagic;
    h->comm_handle.comm = l->comm_ptr();
    h->comm_handle.borrowed = true;
    h->layout = std::move(l);
}

LayoutSpec layout_spec(const plm_comm_s *comm, int ndim, const int64_t *global_shape, int axis, int partition,
                       int nlocal, const int64_t *local_shapes, int nmask, const int *mask)
{
    const comm::Communicator &c = comm_of(comm);
    LayoutSpec spec;
    spec.comm = comm->comm;
    PLM_REQUIRE(ndim >= 1 && ndim <= PLM_MAX_NDIM, PLM_ERR_INVALID_ARG, "ndim %d outside 1..%d", ndim, PLM_MAX_NDIM);
    PLM_REQUIRE(global_shape, PLM_ERR_INVALID_ARG, "global_shape is NULL");
    spec.global.assign(global_shape, global_shape + ndim);
    spec.axis = axis;
    spec.partition = partition;
    PLM_REQUIRE(nlocal == 0 || nlocal == c.size(), PLM_ERR_SIZE_MISMATCH,
                "local_shapes has %d rows, the communicator has %d ranks", nlocal, c.size());
    PLM_REQUIRE((nlocal == 0) == (local_shapes == nullptr), PLM_ERR_INVALID_ARG,
                "local_shapes must be NULL exactly when nlocal is 0");
    if (local_shapes) spec.my_local_shape = local_shapes + static_cast<int64_t>(c.rank()) * ndim;
    PLM_REQUIRE(nmask >= 0, PLM_ERR_INVALID_ARG, "nmask is negative");
    PLM_REQUIRE((nmask == 0) == (mask == nullptr), PLM_ERR_INVALID_ARG, "mask must be NULL exactly when nmask is 0");
    if (mask) {
        spec.has_mask = true;
        spec.mask.assign(mask, mask + nmask);
    }
    return spec;
}

}  // namespace plm::detail
