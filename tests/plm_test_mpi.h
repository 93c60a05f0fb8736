/* CMocka under MPI: every rank runs the group; verdicts are reduced so all ranks fail
 * together. Only rank 0 prints progress (stdout); errors (stderr) come from every rank.
 * Use assert_all_ranks_true() for anything that may differ between ranks, so no rank leaves a
 * test while others wait in a collective. */
#ifndef PLM_TEST_MPI_H
#define PLM_TEST_MPI_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <mpi.h>

/* Exit code CTest reads as "skipped" (SKIP_RETURN_CODE). */
#define PLM_TEST_SKIP 77

static inline int plm_test_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int plm_test_size(void)
{
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

/* True on every rank iff x is true on every rank. */
static inline int plm_all_ranks(int x)
{
    int in = x ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return out;
}

#define assert_all_ranks_true(x) assert_true(plm_all_ranks(x))

static inline int plm_run_group_tests_mpi_(const char *name, const struct CMUnitTest *tests, size_t n,
                                           int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    if (plm_test_rank() != 0 && !getenv("PLM_TEST_VERBOSE")) {
        if (!freopen("/dev/null", "w", stdout)) return 1;
    }
    int failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    int worst = 0;
    MPI_Allreduce(&failed, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}

/* Use in main(int argc, char **argv): return plm_run_group_tests_mpi(tests); */
#define plm_run_group_tests_mpi(tests) \
    plm_run_group_tests_mpi_(#tests, tests, sizeof(tests) / sizeof((tests)[0]), &argc, &argv)

#endif
