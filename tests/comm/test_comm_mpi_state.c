/* Calls before MPI_Init and after MPI_Finalize return PLM_ERR_INVALID_ARG instead of aborting.
 * Plain main: the cmocka runner would initialise MPI itself. Each rank exits non-zero on a
 * failed check (no collective verdict is possible outside MPI). */
#include <math.h>
#include <stdio.h>

#include <mpi.h>
#include <pylopsmpi.h>

static int failures = 0;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, plm_last_error()); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    plm_comm_t c = NULL, late = NULL;
    plm_array_t x = NULL;
    const int64_t n = 10;
    double r = 0;

    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &c) == PLM_ERR_INVALID_ARG && c == NULL);
    CHECK(plm_comm_create_f(0, NULL, &c) == PLM_ERR_INVALID_ARG && c == NULL);

    MPI_Init(&argc, &argv);
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &c) == PLM_SUCCESS);
    CHECK(plm_array_create(c, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x) == PLM_SUCCESS);
    CHECK(plm_array_fill(x, 1, 0) == PLM_SUCCESS);
    CHECK(plm_array_norm(x, 1.0, &r) == PLM_SUCCESS && r == 10.0);
    MPI_Finalize();

    CHECK(plm_array_norm(x, 1.0, &r) == PLM_ERR_INVALID_ARG);
    CHECK(plm_array_dot(x, x, 0, &r, NULL) == PLM_ERR_INVALID_ARG);
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &late) == PLM_ERR_INVALID_ARG && late == NULL);
    CHECK(plm_comm_create_f(0, NULL, &late) == PLM_ERR_INVALID_ARG && late == NULL);
    /* destroy stays safe: handles are released without MPI */
    CHECK(plm_array_destroy(&x) == PLM_SUCCESS && x == NULL);
    CHECK(plm_comm_destroy(&c) == PLM_SUCCESS && c == NULL);
    return failures ? 1 : 0;
}
