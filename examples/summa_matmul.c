/* Distributed matrix multiplication with SUMMA (PyLops-MPI's MPIMatrixMult, kind="summa").
 *
 * Y = A X with A (n x k) and X (k x m) cut into the blocks of a process grid (any rank count;
 * grid_rows 0 chooses the grid for the shape: 3 x 2 on 6 ranks for this one, 2 x 2 on 4).
 * plm_matmul_blocks says which block of A, X and Y this rank
 * holds; each rank fills its blocks of A and X, applies the operator, and gathers Y (the
 * blocks in rank order). Every rank then compares every block with a serial product computed
 * here, likewise the adjoint A^H Y, and the program exits 1 if any relative error exceeds 1e-12.
 *
 *   mpiexec -n 6 build/examples/summa_matmul */
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

enum { N = 50, K = 37, M = 41 };

static double a_at(int64_t i, int64_t j) { return sin(0.3 * (double)i + 0.7 * (double)j) + (i == j ? 1 : 0); }
static double x_at(int64_t i, int64_t j) { return cos(0.2 * (double)i - 0.5 * (double)j); }

/* Fills buf with the block b = {row_begin, row_end, col_begin, col_end} of f, row-major. */
static void fill(double *buf, const int64_t b[4], double (*f)(int64_t, int64_t))
{
    for (int64_t i = b[0]; i < b[1]; i++)
        for (int64_t j = b[2]; j < b[3]; j++) *buf++ = f(i, j);
}

/* Relative error of the gathered blocks (rank order; range: Y blocks, else X blocks) against
 * the serial matrix ref (cols columns). */
static double check(const double *gathered, int nranks, int range, const double *ref, int64_t cols)
{
    double err = 0, nrm = 0;
    for (int q = 0; q < nranks; q++) {
        int64_t x[4], y[4];
        TRY(plm_matmul_blocks(PLM_MATMUL_SUMMA, nranks, q, 0, N, K, M, NULL, NULL, x, y));
        const int64_t *b = range ? y : x;
        for (int64_t i = b[0]; i < b[1]; i++)
            for (int64_t j = b[2]; j < b[3]; j++) {
                const double d = *gathered++ - ref[i * cols + j];
                err += d * d;
                nrm += ref[i * cols + j] * ref[i * cols + j];
            }
    }
    return sqrt(err / nrm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, nranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* this rank's blocks (grid_rows 0: the grid chosen for the shape) */
    int grid[4];
    int64_t ab[4], xb[4], yb[4];
    TRY(plm_matmul_blocks(PLM_MATMUL_SUMMA, nranks, rank, 0, N, K, M, grid, ab, xb, yb));
    double *a = malloc(sizeof(double) * (size_t)((ab[1] - ab[0]) * (ab[3] - ab[2]) + 1));
    fill(a, ab, a_at);
    plm_op_t op = NULL;
    TRY(plm_op_matrix_mult(comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, N, K, M, a,
                           (int64_t)sizeof(double) * (ab[1] - ab[0]) * (ab[3] - ab[2]), &op)); /* collective; copies a */
    free(a);

    plm_array_t x = NULL, y = NULL, xh = NULL;
    TRY(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    TRY(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &xh));
    TRY(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    double *v = NULL;
    TRY(plm_array_get_local_write(x, (void **)&v));
    fill(v, xb, x_at);
    TRY(plm_array_restore_local_write(x, (void **)&v));
    TRY(plm_op_apply(op, x, y));          /* Y = A X */
    TRY(plm_op_apply_adjoint(op, y, xh)); /* A^H Y */

    /* serial references: A, X, Y = A X, Z = A^T Y */
    double *A = malloc(sizeof(double) * N * K), *X = malloc(sizeof(double) * K * M);
    double *Y = calloc(N * M, sizeof(double)), *Z = calloc(K * M, sizeof(double));
    const int64_t all_a[4] = {0, N, 0, K}, all_x[4] = {0, K, 0, M};
    fill(A, all_a, a_at);
    fill(X, all_x, x_at);
    for (int i = 0; i < N; i++)
        for (int l = 0; l < K; l++)
            for (int j = 0; j < M; j++) Y[i * M + j] += A[i * K + l] * X[l * M + j];
    for (int l = 0; l < K; l++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < M; j++) Z[l * M + j] += A[i * K + l] * Y[i * M + j];

    double *gy = malloc(sizeof(double) * N * M), *gz = malloc(sizeof(double) * K * M);
    TRY(plm_array_asarray(y, 0, gy, (int64_t)sizeof(double) * N * M)); /* collective: every rank gets every block */
    TRY(plm_array_asarray(xh, 0, gz, (int64_t)sizeof(double) * K * M));
    const double ey = check(gy, nranks, 1, Y, M), ez = check(gz, nranks, 0, Z, M);
    const int ok = ey < 1e-12 && ez < 1e-12;
    if (rank == 0)
        printf("SUMMA on a %d x %d grid: Y = A X (%d x %d x %d) relative error %.2e, A^H Y %.2e: %s\n", grid[0],
               grid[1], N, K, M, ey, ez, ok ? "ok" : "MISMATCH");

    free(A);
    free(X);
    free(Y);
    free(Z);
    free(gy);
    free(gz);
    plm_array_destroy(&x);
    plm_array_destroy(&xh);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
