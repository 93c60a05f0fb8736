/* Block-diagonal least squares with CGLS (PyLops-MPI's MPIBlockDiag + cgls pattern).
 *
 * Each rank owns one dense block A_r (rows x cols, different on every rank); the global
 * operator is diag(A_0, ..., A_{P-1}). The data are y = A x_true, so the least-squares
 * solution is x_true: the program solves from x = 0, checks the error against x_true (a serial
 * reference known in advance) and exits 1 if it is above 1e-8.
 *
 *   mpiexec -n 4 build/examples/blockdiag_cgls */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pylopsmpi.h>

#define TRY(call)                                                                                     \
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
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* this rank's block: (cols + 5) x cols, diagonally dominant, so well conditioned; sizes
     * repeat every 8 ranks, so the conditioning (and the iterations CGLS needs) does not grow
     * with the rank count */
    const int64_t cols = 40 + 7 * (rank % 8), rows = cols + 5;
    double *a = malloc(sizeof(double) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) a[i * cols + j] = 0.1 * sin(1.0 + rank + 0.3 * i + 0.7 * j) + (i == j ? 1 : 0);
    plm_op_t block = NULL, A = NULL;
    TRY(plm_op_dense(PLM_FLOAT64, rows, cols, a, (int64_t)sizeof(double) * rows * cols, /*col_major*/ 0, /*wrap*/ 0, &block));
    TRY(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &A)); /* collective */
    plm_op_destroy(&block); /* A keeps it */
    free(a);

    int passed = 0;
    TRY(plm_op_dottest(A, 1e-12, &passed, NULL, NULL));

    /* x_true on the domain, y = A x_true on the range */
    plm_layout_t dom = NULL, ran = NULL;
    TRY(plm_op_domain(A, &dom));
    TRY(plm_op_range(A, &ran));
    plm_array_t xt = NULL, x = NULL, y = NULL;
    TRY(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &xt));
    TRY(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    TRY(plm_array_create_from_layout(ran, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y));
    int64_t n = 0, off = 0;
    double *v = NULL;
    TRY(plm_layout_local_size(dom, &n));
    TRY(plm_layout_local_offset(dom, &off));
    TRY(plm_array_get_local_write(xt, (void **)&v));
    for (int64_t i = 0; i < n; i++) v[i] = 1.0 + 0.1 * (double)(off + i);
    TRY(plm_array_restore_local_write(xt, (void **)&v));
    TRY(plm_op_apply(A, xt, y));

    /* CGLS from zero */
    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_array_fill(x, 0, 0));
    TRY(plm_solve_cgls(A, y, x, /*niter*/ 200, /*damp*/ 0.0, /*tol*/ 1e-24, info));
    int64_t iters = 0;
    plm_stop_reason_t reason = PLM_STOP_NONE;
    double r1 = 0, r2 = 0;
    TRY(plm_solver_info_iterations(info, &iters));
    TRY(plm_solver_info_reason(info, &reason));
    TRY(plm_solver_info_norms(info, &r1, &r2));

    /* relative error against x_true: ||x - x_true|| / ||x_true|| */
    double err = 0, ref = 0;
    TRY(plm_array_norm(xt, 2.0, &ref));
    TRY(plm_array_axpby(-1.0, 0.0, xt, 1.0, 0.0, x)); /* x = x - x_true */
    TRY(plm_array_norm(x, 2.0, &err));
    const int ok = passed && err / ref < 1e-8;
    if (rank == 0)
        printf("blockdiag_cgls: dot test %s; CGLS %lld iterations (stop reason %d), r2norm %.3e, relative error %.3e: %s\n",
               passed ? "passed" : "FAILED", (long long)iters, (int)reason, r2, err / ref, ok ? "OK" : "FAILED");

    plm_solver_info_destroy(&info);
    plm_array_destroy(&xt);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
