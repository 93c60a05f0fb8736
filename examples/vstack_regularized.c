/* Regularised least squares with a vertical stack (PyLops-MPI's MPIVStack pattern):
 *
 *     min ||y - A x||^2 + ||eps D x||^2,   A = [A_0; A_1; ...; A_{P-1}],
 *
 * where rank r owns the data rows A_r (the model x is replicated: a BROADCAST vector) and rank
 * 0 also owns the regularisation rows eps D (first differences). CGLS solves it on the stack
 * [A; eps D]; the program then solves the normal equations serially in float64 (every rank can
 * build every block, so rank 0 assembles them) and exits 1 unless the two agree to 1e-8.
 *
 *   mpiexec -n 4 build/examples/vstack_regularized */
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

enum { NX = 24 };
static const double EPS = 0.5;

static int64_t data_rows(int r) { return 10 + 3 * r; }
static double a_entry(int r, int64_t i, int64_t j) { return sin(0.3 + r + 0.7 * (double)i + 1.1 * (double)j); }
static double y_entry(int r, int64_t i) { return cos(0.2 * (double)i + r); }

/* The serial reference: x = (A^T A + eps^2 D^T D)^{-1} A^T y by Gaussian elimination. */
static void serial_solution(int P, double *x)
{
    double N[NX][NX + 1] = {{0}};
    for (int r = 0; r < P; r++)
        for (int64_t i = 0; i < data_rows(r); i++)
            for (int j = 0; j < NX; j++) {
                for (int k = 0; k < NX; k++) N[j][k] += a_entry(r, i, j) * a_entry(r, i, k);
                N[j][NX] += a_entry(r, i, j) * y_entry(r, i);
            }
    for (int i = 0; i + 1 < NX; i++) { /* D: row i is x[i+1] - x[i] */
        N[i][i] += EPS * EPS;
        N[i + 1][i + 1] += EPS * EPS;
        N[i][i + 1] -= EPS * EPS;
        N[i + 1][i] -= EPS * EPS;
    }
    for (int c = 0; c < NX; c++) /* symmetric positive definite: no pivoting needed */
        for (int r = c + 1; r < NX; r++) {
            const double f = N[r][c] / N[c][c];
            for (int k = c; k <= NX; k++) N[r][k] -= f * N[c][k];
        }
    for (int r = NX - 1; r >= 0; r--) {
        double s = N[r][NX];
        for (int k = r + 1; k < NX; k++) s -= N[r][k] * x[k];
        x[r] = s / N[r][r];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* this rank's rows: its data block, and on rank 0 also eps D */
    const int64_t m = data_rows(rank);
    double *a = malloc(sizeof(double) * (size_t)(m * NX)), d[(NX - 1) * NX] = {0};
    for (int64_t i = 0; i < m; i++)
        for (int j = 0; j < NX; j++) a[i * NX + j] = a_entry(rank, i, j);
    for (int i = 0; i + 1 < NX; i++) {
        d[i * NX + i] = -EPS;
        d[i * NX + i + 1] = EPS;
    }
    plm_op_t parts[2] = {NULL, NULL}, A = NULL;
    TRY(plm_op_dense(PLM_FLOAT64, m, NX, a, (int64_t)sizeof(double) * m * NX, 0, 0, &parts[0]));
    TRY(plm_op_dense(PLM_FLOAT64, NX - 1, NX, d, sizeof d, 0, 0, &parts[1]));
    TRY(plm_op_vstack(comm, rank == 0 ? 2 : 1, (const plm_const_op_t *)parts, &A)); /* collective */
    plm_op_destroy(&parts[0]);
    plm_op_destroy(&parts[1]);
    free(a);

    /* data: this rank's y block, and zeros for the regularisation rows */
    plm_array_t x = NULL, y = NULL;
    TRY(plm_op_new_domain_array(A, PLM_MEMORY_HOST, &x)); /* BROADCAST: NX on every rank */
    TRY(plm_op_new_range_array(A, PLM_MEMORY_HOST, &y));  /* SCATTER: this rank's rows */
    int64_t n = 0;
    double *v = NULL;
    TRY(plm_array_local_size(y, &n));
    TRY(plm_array_get_local_write(y, (void **)&v));
    for (int64_t i = 0; i < n; i++) v[i] = i < m ? y_entry(rank, i) : 0.0;
    TRY(plm_array_restore_local_write(y, (void **)&v));

    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_array_fill(x, 0, 0));
    TRY(plm_solve_cgls(A, y, x, 4 * NX, 0.0, 1e-28, info));
    int64_t iters = 0;
    TRY(plm_solver_info_iterations(info, &iters));

    /* compare with the serial solution (every rank holds all of x) */
    double ref[NX], err = 0, nrm = 0;
    serial_solution(size, ref);
    const double *xs = NULL;
    TRY(plm_array_get_local_read(x, (const void **)&xs));
    for (int j = 0; j < NX; j++) {
        err += (xs[j] - ref[j]) * (xs[j] - ref[j]);
        nrm += ref[j] * ref[j];
    }
    TRY(plm_array_restore_local_read(x, (const void **)&xs));
    const double rel = sqrt(err / nrm);
    int ok = rel < 1e-8, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("vstack_regularized: CGLS %lld iterations, relative error to the serial solution %.3e: %s\n",
               (long long)iters, rel, all ? "OK" : "FAILED");

    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&A);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return all ? 0 : 1;
}
