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

}  // namespace plm::detail
