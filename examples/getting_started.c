/* The program of docs/getting-started-c.md: a communicator, a distributed array, a distributed
 * operator and a CGLS solve. The operator is block-diagonal: each rank holds a diagonal block
 * A_r = (rank % 4 + 1) diag(1, 2, 3, 4, 5, 1, 2, ...) for its part of the vector (at most 20
 * distinct values at any rank count, so CGLS needs the same few iterations); CGLS solves
 * A x = y with y all ones, so x_i = 1 / A_ii. Exits 1 unless ||A x - y|| / ||y|| < 1e-10.
 *
 *   mpiexec -n 4 ./getting_started */
#include <stdio.h>
#include <stdlib.h>
#include <pylopsmpi.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(plm_check_header_version()); /* the header matches the library */

    /* 1. a communicator (a duplicate of MPI_COMM_WORLD; NULL: default configuration) */
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* 2. a distributed array: 1000 float64 values split over the ranks */
    const int64_t shape[1] = {1000};
    plm_array_t y = NULL;
    CHECK(plm_array_create(comm, 1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &y));
    CHECK(plm_array_fill(y, 1.0, 0.0));
    int64_t n = 0;
    CHECK(plm_array_local_size(y, &n)); /* this rank's share */

    /* 3. an operator: this rank's diagonal block, put on the ranks' diagonal */
    double *diag = malloc((size_t)(n > 0 ? n : 1) * sizeof *diag);
    for (int64_t i = 0; i < n; i++) diag[i] = (double)(1 + i % 5) * (rank % 4 + 1);
    plm_op_t block = NULL, A = NULL;
    CHECK(plm_op_diagonal(PLM_FLOAT64, n, diag, n * (int64_t)sizeof *diag, &block)); /* copies diag */
    free(diag);
    const plm_const_op_t blocks[1] = {block};
    CHECK(plm_op_blockdiag(comm, 1, blocks, 0, NULL, &A));

    /* 4. solve min ||y - A x||^2 with CGLS from x = 0 */
    plm_array_t x = NULL, r = NULL;
    CHECK(plm_op_new_domain_array(A, PLM_MEMORY_HOST, &x));
    CHECK(plm_op_new_range_array(A, PLM_MEMORY_HOST, &r));
    CHECK(plm_array_fill(x, 0.0, 0.0));
    plm_solver_info_t info = NULL;
    CHECK(plm_solver_info_create(&info));
    CHECK(plm_solve_cgls(A, y, x, 100, 0.0, 1e-24, info));
    int64_t iterations = 0;
    CHECK(plm_solver_info_iterations(info, &iterations));

    /* 5. check: ||A x - y|| / ||y|| (collective calls: every rank makes them) */
    double ry = 0, rr = 0;
    CHECK(plm_op_apply(A, x, r));
    CHECK(plm_array_norm(y, 2.0, &ry));
    CHECK(plm_array_axpby(-1.0, 0.0, y, 1.0, 0.0, r)); /* r = -y + r */
    CHECK(plm_array_norm(r, 2.0, &rr));
    const int ok = rr / ry < 1e-10;
    if (rank == 0)
        printf("getting_started: CGLS %lld iterations, ||A x - y|| / ||y|| = %.2e: %s\n", (long long)iterations,
               rr / ry, ok ? "OK" : "FAILED");

    /* 6. release every handle (NULL-safe; each sets the handle to NULL), then MPI */
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&r);
    plm_array_destroy(&y);
    plm_op_destroy(&A);
    plm_op_destroy(&block);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
