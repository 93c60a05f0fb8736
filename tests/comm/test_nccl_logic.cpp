// White-box tests of the NCCL backend's logic that needs no GPU (src/comm/nccl.hpp): the
// dtype to NCCL type mapping (complex as float pairs), which reductions complex data allow,
// when allgatherv becomes one ncclAllGather instead of grouped broadcasts, and the detection
// of two ranks sharing one GPU (every rank must report the same pair); and the status of a
// failed device allocation (out of memory only for cudaErrorMemoryAllocation). NCCL builds
// only; single process, no MPI, no GPU.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// cmocka 1.1 has no extern "C" guards of its own: include it (and what it needs) as C first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}
#undef fail  // cmocka's fail() would rewrite plm::fail in PLM_FAIL

#include "comm/nccl.hpp"
#include "memory/cuda.hpp"

using namespace plm;
using namespace plm::comm;

namespace {

template <typename F> plm_status_t status_of(F &&f, std::string *what = nullptr)
{
    try {
        f();
    } catch (const Error &e) {
        if (what) *what = e.what();
        return e.status();
    }
    return PLM_SUCCESS;
}

void test_wire_types(void **)
{
    struct Row {
        DType dt;
        ncclDataType_t type;
        std::size_t per;
    } rows[] = {{DType::f32, ncclFloat32, 1}, {DType::f64, ncclFloat64, 1}, {DType::c64, ncclFloat32, 2},
                {DType::c128, ncclFloat64, 2}, {DType::i32, ncclInt32, 1},   {DType::i64, ncclInt64, 1},
                {DType::u8, ncclUint8, 1}};
    for (const Row &r : rows) {
        const Wire w = wire(r.dt);
        assert_int_equal(w.type, r.type);
        assert_int_equal(w.per, r.per);
        // The bytes on the wire are the bytes of the data.
        assert_int_equal(w.elems(7) * (r.type == ncclFloat32 || r.type == ncclInt32 ? 4 : r.type == ncclUint8 ? 1 : 8),
                         7 * dtype_size(r.dt));
        assert_int_equal(w.elems(0), 0);
        assert_int_equal(status_of([&] { w.elems(-1); }), PLM_ERR_INVALID_ARG);
    }
    // Counts past 32 bits stay exact (NCCL takes size_t).
    assert_true(wire(DType::c128).elems(int64_t{3} << 31) == (std::size_t{3} << 32));
}

void test_reductions(void **)
{
    const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::prod};
    const ncclRedOp_t want[] = {ncclSum, ncclMax, ncclMin, ncclProd};
    for (DType dt : {DType::f32, DType::f64, DType::i64})
        for (int k = 0; k < 4; ++k) assert_int_equal(nccl_op(dt, ops[k]), want[k]);
    for (DType dt : {DType::c64, DType::c128}) {
        assert_int_equal(nccl_op(dt, ReduceOp::sum), ncclSum);
        for (int k = 1; k < 4; ++k) {
            std::string what;
            assert_int_equal(status_of([&] { nccl_op(dt, ops[k]); }, &what), PLM_ERR_NOT_SUPPORTED);
            assert_true(what.find("only sum") != std::string::npos);
        }
    }
}

void test_uniform_blocks(void **)
{
    const int64_t c4[] = {4, 4, 4}, d4[] = {0, 4, 8};
    assert_true(uniform_blocks(c4, d4, 3));
    const int64_t d_gap[] = {0, 5, 10};  // padding between blocks: not an ncclAllGather
    assert_false(uniform_blocks(c4, d_gap, 3));
    const int64_t c_uneven[] = {4, 3, 3};  // uneven split: grouped broadcasts, no padding
    assert_false(uniform_blocks(c_uneven, d4, 3));
    const int64_t d_swap[] = {4, 0, 8};  // out of rank order
    assert_false(uniform_blocks(c4, d_swap, 3));
    const int64_t c0[] = {0, 0}, d0[] = {0, 0};  // all empty: trivially one (empty) allgather
    assert_true(uniform_blocks(c0, d0, 2));
    const int64_t c1[] = {9}, d1[] = {0};
    assert_true(uniform_blocks(c1, d1, 1));
}

GpuPlace place(const char *host, int gpu)
{
    GpuPlace p{};
    p.ok = 1;
    p.uuid[0] = static_cast<unsigned char>(gpu);
    std::snprintf(p.bus, sizeof p.bus, "0000:%02x:00.0", gpu);
    std::snprintf(p.host, sizeof p.host, "%s", host);
    p.host_hash = std::hash<std::string>{}(host);
    return p;
}

void test_shared_gpu(void **)
{
    // One GPU per rank, also the same GPU index on different hosts: fine.
    std::vector<GpuPlace> ok = {place("a", 0), place("a", 1), place("b", 0), place("b", 1)};
    assert_int_equal(status_of([&] { require_own_gpus(ok); }), PLM_SUCCESS);
    assert_int_equal(status_of([&] { require_own_gpus({place("a", 0)}); }), PLM_SUCCESS);

    // Ranks 1 and 3 share host a's GPU 1; ranks 2 and 4 share host b's GPU 0: the lowest pair
    // is named, the same whatever order the table was filled in.
    std::vector<GpuPlace> bad = {place("a", 0), place("a", 1), place("b", 0), place("a", 1), place("b", 0)};
    std::string what;
    assert_int_equal(status_of([&] { require_own_gpus(bad); }, &what), PLM_ERR_NCCL);
    assert_true(what.find("ranks 1 and 3 share GPU 0000:01:00.0 on host a") != std::string::npos);
    assert_true(what.find("PYLOPS_MPI_NCCL=0") != std::string::npos);

    // Two ranks on one GPU of a one-GPU machine (the single-GPU test machine at 2 ranks).
    std::vector<GpuPlace> two = {place("gpu1", 0), place("gpu1", 0)};
    assert_int_equal(status_of([&] { require_own_gpus(two); }, &what), PLM_ERR_NCCL);
    assert_true(what.find("ranks 0 and 1 share") != std::string::npos);
}

}  // namespace

void test_alloc_failure_status(void **)
{
    std::string what;
    assert_int_equal(status_of([] { cuda::alloc_failed(cudaErrorMemoryAllocation, "cudaMalloc", 64); }, &what),
                     PLM_ERR_OUT_OF_MEMORY);
    assert_true(what.find("cudaMalloc of 64 bytes") != std::string::npos);
    assert_int_equal(status_of([] { cuda::alloc_failed(cudaErrorInvalidValue, "cudaMallocHost", 8); }, &what),
                     PLM_ERR_CUDA);
    assert_true(what.find("cudaMallocHost of 8 bytes") != std::string::npos &&
                what.find("cudaErrorInvalidValue") != std::string::npos);
}

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_types),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_uniform_blocks),
        cmocka_unit_test(test_shared_gpu),
        cmocka_unit_test(test_alloc_failure_status),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
