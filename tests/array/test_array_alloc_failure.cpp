// Allocate, then agree: an allocation that fails on one rank only (plm::alloc::fail_nth)
// must make every rank return PLM_ERR_OUT_OF_MEMORY, with no hang, and leave the library
// usable. White-box: links the internal archive for the hook, calls the public C API.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/alloc.hpp"
#include "pylopsmpi.h"

// cmocka 1.1 has no extern "C" guards of its own: include it (and what it needs) as C.
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
#include "plm_test_mpi.h"

namespace {

plm_comm_t g_comm = nullptr;
int g_rank = 0, g_size = 1;

int setup(void **)
{
    g_rank = plm_test_rank();
    g_size = plm_test_size();
    return plm_all_ranks(plm_comm_create(MPI_COMM_WORLD, nullptr, &g_comm) == PLM_SUCCESS) ? 0 : -1;
}

int teardown(void **)
{
    plm::alloc::fail_nth(0);
    return plm_all_ranks(plm_comm_destroy(&g_comm) == PLM_SUCCESS) ? 0 : -1;
}

// A (rows x 3P+1) float64 array of ones split along `axis`.
plm_array_t ones(int64_t rows, int axis)
{
    const int64_t shape[2] = {rows, 3 * g_size + 1};
    plm_array_t x = nullptr;
    assert_all_ranks_true(plm_array_create(g_comm, 2, shape, axis, PLM_PARTITION_SCATTER, PLM_FLOAT64,
                                           PLM_MEMORY_HOST, &x) == PLM_SUCCESS);
    assert_all_ranks_true(plm_array_fill(x, 1, 0) == PLM_SUCCESS);
    return x;
}

// Runs op with the nth allocation failing on rank `bad`, for every bad rank; every rank
// must report out-of-memory, then a dot must still work.
template <typename Op> void expect_oom_everywhere(const char *what, int nth, Op &&op)
{
    for (int bad = 0; bad < g_size; ++bad) {
        if (g_rank == bad) plm::alloc::fail_nth(nth);
        const plm_status_t st = op();
        plm::alloc::fail_nth(0);
        if (st != PLM_ERR_OUT_OF_MEMORY)
            fprintf(stderr, "[rank %d] %s (allocation %d fails on rank %d): status %d: %s\n", g_rank, what, nth, bad,
                    static_cast<int>(st), plm_last_error());
        assert_all_ranks_true(st == PLM_ERR_OUT_OF_MEMORY);
        plm_array_t x = ones(5, 1);
        double d = 0;
        assert_all_ranks_true(plm_array_dot(x, x, 0, &d, nullptr) == PLM_SUCCESS && d == 5.0 * (3 * g_size + 1));
        plm_array_destroy(&x);
    }
}

void test_create(void **)
{
    const int64_t shape[2] = {7, 4};
    expect_oom_everywhere("plm_array_create", 1, [&] {
        plm_array_t y = reinterpret_cast<plm_array_t>(&g_rank);
        const plm_status_t st = plm_array_create(g_comm, 2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64,
                                                 PLM_MEMORY_HOST, &y);
        assert_all_ranks_true(y == nullptr);
        return st;
    });
}

void test_asarray(void **)
{
    plm_array_t x = ones(4, 1);  // split along axis 1: the gather needs a scratch buffer
    std::vector<double> out(static_cast<size_t>(4 * (3 * g_size + 1)));
    expect_oom_everywhere("plm_array_asarray", 1,
                          [&] { return plm_array_asarray(x, 0, out.data(), static_cast<int64_t>(out.size() * sizeof(double))); });
    plm_array_destroy(&x);
}

void test_ghost_cells(void **)
{
    plm_array_t x = ones(4, 1);  // ghost slabs along axis 1 are strided: packed in a buffer
    int64_t gs[2];
    assert_all_ranks_true(plm_array_ghost_shape(x, 1, 1, gs) == PLM_SUCCESS);
    std::vector<double> out(static_cast<size_t>(gs[0] * gs[1]));
    expect_oom_everywhere("plm_array_add_ghost_cells", 1, [&] {
        return plm_array_add_ghost_cells(x, 1, 1, out.data(), static_cast<int64_t>(out.size() * sizeof(double)));
    });
    plm_array_destroy(&x);
}

void test_redistribute(void **)
{
    plm_array_t x = ones(2 * g_size + 1, 0);
    const auto fails = [&] {
        plm_array_t y = reinterpret_cast<plm_array_t>(&g_rank);
        const plm_status_t st = plm_array_redistribute(x, 1, &y);
        assert_all_ranks_true(y == nullptr);
        return st;
    };
    // The first call makes the plan: 1: its scratch buffer (the packed sends), 2: the new
    // array's data. A failed call keeps no plan, so each of these calls is a first one.
    for (int nth = 1; nth <= 2; ++nth) expect_oom_everywhere("plm_array_redistribute (new plan)", nth, fails);
    // With the plan kept and its last result alive (no buffer to reuse), the new array's data is
    // the one allocation.
    plm_array_t kept = nullptr;
    assert_all_ranks_true(plm_array_redistribute(x, 1, &kept) == PLM_SUCCESS);
    expect_oom_everywhere("plm_array_redistribute (kept plan)", 1, fails);
    plm_array_destroy(&kept);
    plm_array_destroy(&x);
}

}  // namespace

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_asarray, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ghost_cells, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redistribute, setup, teardown),
    };
    return plm_run_group_tests_mpi(tests);
}
