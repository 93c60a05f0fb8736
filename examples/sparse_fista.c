/* Sparse recovery with ISTA and FISTA (PyLops-MPI's ista/fista): a block-diagonal operator
 * (each rank's 30 x 30 dense block) and a model with a few spikes per rank, y = A x_true. The
 * step is 0.95 / lambda_max(A^T A) from plm_power_iteration; both solvers run 100 iterations
 * with the soft threshold; the program repeats FISTA serially on
 * the assembled global matrix (every rank can build every block) and exits 1 unless the
 * distributed and serial results agree to 1e-8 and FISTA's recovery error is below 5%.
 *
 *   mpiexec -n 4 build/examples/sparse_fista */
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

enum { NB = 30, NITER = 100 };
static const double EPS = 0.01;
static double ALPHA; /* 0.95 / lambda_max(A^T A), from the library's power iteration */

static double a_entry(int r, int i, int j) { return (i == j ? 1.0 : 0.0) + 0.15 * sin(1.0 + r + 0.9 * i + 1.7 * j); }
static double x_entry(int r, int i) { return (i * 7 + r * 3) % 10 == 0 ? 1.0 + 0.5 * r : 0.0; } /* spikes */

/* Serial FISTA (PyLops' rules, soft threshold) on the global block-diagonal matrix. */
static void serial_fista(int P, const double *y, double *x)
{
    const int n = P * NB;
    double *xo = calloc((size_t)n, 8), *z = calloc((size_t)n, 8), *r = calloc((size_t)n, 8), *g = calloc((size_t)n, 8);
    double t = 1;
    for (int k = 0; k < n; k++) x[k] = 0;
    for (int it = 0; it < NITER; it++) {
        for (int k = 0; k < n; k++) xo[k] = x[k];
        for (int b = 0; b < P; b++)
            for (int i = 0; i < NB; i++) {
                double s = y[b * NB + i];
                for (int j = 0; j < NB; j++) s -= a_entry(b, i, j) * z[b * NB + j];
                r[b * NB + i] = s;
            }
        for (int b = 0; b < P; b++)
            for (int j = 0; j < NB; j++) {
                double s = 0;
                for (int i = 0; i < NB; i++) s += a_entry(b, i, j) * r[b * NB + i];
                g[b * NB + j] = s;
            }
        for (int k = 0; k < n; k++) {
            const double v = z[k] + ALPHA * g[k], a = fabs(v), m = a - EPS * ALPHA * 0.5;
            x[k] = a == 0 || m <= 0 ? 0 : v * (m / a);
        }
        const double told = t;
        t = (1 + sqrt(1 + 4 * t * t)) / 2;
        for (int k = 0; k < n; k++) z[k] = x[k] + ((told - 1) / t) * (x[k] - xo[k]);
    }
    free(xo);
    free(z);
    free(r);
    free(g);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    double a[NB * NB];
    for (int i = 0; i < NB; i++)
        for (int j = 0; j < NB; j++) a[i * NB + j] = a_entry(rank, i, j);
    plm_op_t block = NULL, A = NULL;
    TRY(plm_op_dense(PLM_FLOAT64, NB, NB, a, sizeof a, 0, 0, &block));
    TRY(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &A));
    plm_op_destroy(&block);

    plm_op_t AH = NULL, AHA = NULL;
    double eig[2];
    TRY(plm_op_adjoint(A, &AH));
    TRY(plm_op_product(AH, A, &AHA));
    TRY(plm_power_iteration(AHA, 200, 1e-10, /*seed*/ 1, eig, NULL));
    ALPHA = 0.95 / eig[0];
    plm_op_destroy(&AH);
    plm_op_destroy(&AHA);

    plm_array_t xt = NULL, x = NULL, y = NULL;
    TRY(plm_op_new_domain_array(A, PLM_MEMORY_HOST, &xt));
    TRY(plm_op_new_domain_array(A, PLM_MEMORY_HOST, &x));
    TRY(plm_op_new_range_array(A, PLM_MEMORY_HOST, &y));
    double *v = NULL;
    TRY(plm_array_get_local_write(xt, (void **)&v));
    for (int i = 0; i < NB; i++) v[i] = x_entry(rank, i);
    TRY(plm_array_restore_local_write(xt, (void **)&v));
    TRY(plm_op_apply(A, xt, y));

    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    double err_ista = 0, err_fista = 0, ref = 0;
    TRY(plm_array_norm(xt, 2.0, &ref));
    for (int fista = 0; fista < 2; fista++) {
        TRY(plm_array_fill(x, 0, 0));
        if (fista) TRY(plm_solve_fista(A, y, x, NITER, EPS, ALPHA, PLM_THRESH_SOFT, NULL, 0, 0.0, info));
        else TRY(plm_solve_ista(A, y, x, NITER, EPS, ALPHA, PLM_THRESH_SOFT, NULL, 0, 0.0, info));
        plm_array_t d = NULL;
        TRY(plm_array_duplicate(x, &d));
        TRY(plm_array_axpby(-1.0, 0.0, xt, 1.0, 0.0, d)); /* d = x - x_true */
        TRY(plm_array_norm(d, 2.0, fista ? &err_fista : &err_ista));
        plm_array_destroy(&d);
    }

    /* the serial FISTA on every rank: gather y to every rank, compare this rank's block */
    double *yg = malloc(sizeof(double) * (size_t)(size * NB)), *xs = malloc(sizeof(double) * (size_t)(size * NB));
    TRY(plm_array_asarray(y, 0, yg, (int64_t)sizeof(double) * size * NB));
    serial_fista(size, yg, xs);
    const double *xl = NULL;
    double diff = 0, scale = 0;
    TRY(plm_array_get_local_read(x, (const void **)&xl));
    for (int i = 0; i < NB; i++) {
        diff = fmax(diff, fabs(xl[i] - xs[rank * NB + i]));
        scale = fmax(scale, fabs(xs[rank * NB + i]));
    }
    TRY(plm_array_restore_local_read(x, (const void **)&xl));
    int ok = diff <= 1e-8 * (scale + 1e-300) && err_fista / ref < 0.05, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sparse_fista: lambda_max(A^T A) %.4f; %d iterations; recovery error ISTA %.3e, FISTA %.3e; FISTA vs serial %.1e: %s\n",
               eig[0], NITER, err_ista / ref, err_fista / ref, diff, all ? "OK" : "FAILED");

    free(yg);
    free(xs);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&xt);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&A);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return all ? 0 : 1;
}
