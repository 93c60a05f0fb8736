// The exception firewall and handle plumbing shared by every extern "C" function.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

#include "array/stacked_array.hpp"
#include "core/alloc.hpp"
#include "ops/operator.hpp"
#include "solvers/proximal.hpp"
#include "solvers/solvers.hpp"

struct plm_comm_s {
    uint32_t magic;
    plm::CommPtr comm;
    bool borrowed = false;  // lent out by another handle: plm_comm_destroy refuses it
};

struct plm_array_s {
    uint32_t magic;
    plm::DistributedArray::Ptr array;
    plm_comm_s comm_handle;  // what plm_array_get_comm() lends out
    int reads_out = 0;
    int writes_out = 0;
    bool borrowed = false;  // lent out by a stack: plm_array_destroy refuses it
};

struct plm_layout_s {
    uint32_t magic;
    std::atomic<int> refs{1};  // plm_layout_retain / plm_layout_destroy
    plm::ArrayLayout::Ptr layout;
    plm_comm_s comm_handle;  // what plm_layout_get_comm() lends out
};

struct plm_op_s {
    uint32_t magic;
    plm::ops::Operator::Ptr op;
};

struct plm_solver_info_s {
    uint32_t magic;
    plm::solvers::Info info;
    bool show = false;
    plm_solver_callback_fn callback = nullptr;
    void *callback_ctx = nullptr;
    void (*callback_destroy)(void *) = nullptr;  // runs on callback_ctx when it is replaced or info goes
};

struct plm_prox_s {
    uint32_t magic;
    plm::solvers::Prox prox;
};

struct plm_comm_config_s {
    uint32_t magic;
    plm::comm::Config config;
};

struct plm_stacked_s {
    uint32_t magic;
    plm::StackedArray::Ptr stack;
    std::vector<plm_array_s *> member_handles;  // lent by plm_stacked_get(), owned here
};

namespace plm::detail {

constexpr uint32_t kCommMagic = 0x504c4d31u, kArrayMagic = 0x504c4d32u, kStackMagic = 0x504c4d33u,
                   kLayoutMagic = 0x504c4d34u, kOpMagic = 0x504c4d35u, kInfoMagic = 0x504c4d36u,
                   kConfigMagic = 0x504c4d37u;

void record_error(const char *message);
const char *last_error();

// Runs f and turns any exception into a status, recording its message as the thread's
// last error. Nothing escapes into C.
// Each call starts and ends before any agreement (core/alloc.hpp).
template <typename F> plm_status_t guard(F &&f) noexcept
{
    struct Phase {
        Phase() { alloc::set_after_agreement(false); }
        ~Phase() { alloc::set_after_agreement(false); }
    } phase;
    try {
        f();
        return PLM_SUCCESS;
    } catch (const Error &e) {
        record_error(e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        record_error("out of memory");
        return PLM_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        record_error(e.what());
        return PLM_ERR_INTERNAL;
    } catch (...) {
        record_error("unknown exception");
        return PLM_ERR_INTERNAL;
    }
}

comm::Communicator &comm_of(const plm_comm_s *h);
DistributedArray &array_of(const plm_array_s *h);
StackedArray &stack_of(const plm_stacked_s *h);
plm_array_s *new_array_handle(DistributedArray::Ptr a);
const ArrayLayout::Ptr &layout_of(const plm_layout_s *h);
const ops::Operator::Ptr &op_of(const plm_op_s *h);
const solvers::Prox &prox_of(const plm_prox_s *h);
plm_layout_s *new_layout_handle(ArrayLayout::Ptr l);
void fill_layout_handle(plm_layout_s *h, ArrayLayout::Ptr l);

// The layout arguments shared by plm_layout_create and plm_array_create_ex, checked
// (throws INVALID_ARG / SIZE_MISMATCH); c is the communicator they are for.
// partition is the raw value (enum_value() of the caller's argument: an invalid enum value must
// not be copied as the enum type).
LayoutSpec layout_spec(const plm_comm_s *comm, int ndim, const int64_t *global_shape, int axis, int partition,
                       int nlocal, const int64_t *local_shapes, int nmask, const int *mask);

// Layout queries shared by plm_layout_* and plm_array_* (out is checked by the caller).
namespace layout_query {
inline void ndim(const ArrayLayout &l, int *out) { *out = l.layout().ndim(); }
inline void global_shape(const ArrayLayout &l, int64_t *out)
{
    std::copy(l.layout().global.begin(), l.layout().global.end(), out);
}
inline void local_shape(const ArrayLayout &l, int64_t *out)
{
    std::copy(l.local_shape().begin(), l.local_shape().end(), out);
}
inline void local_shapes(const ArrayLayout &l, int64_t *out)
{
    for (const Shape &s : l.layout().local) out = std::copy(s.begin(), s.end(), out);
}
inline void local_size(const ArrayLayout &l, int64_t *out) { *out = l.local_size(); }
inline void local_offset(const ArrayLayout &l, int64_t *out) { *out = l.layout().offset(l.rank()); }
inline void axis(const ArrayLayout &l, int *out) { *out = l.layout().axis; }
inline void partition(const ArrayLayout &l, plm_partition_t *out) { *out = l.layout().partition; }
inline void mask(const ArrayLayout &l, int *has_mask, int *out)
{
    *has_mask = l.mask().empty() ? 0 : 1;
    if (out) std::copy(l.mask().begin(), l.mask().end(), out);
}
}  // namespace layout_query

// Checks an output pointer, then clears what it points to.
template <typename T> void clear_out(T **out, const char *name)
{
    PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "%s is NULL", name);
    *out = nullptr;
}

}  // namespace plm::detail
