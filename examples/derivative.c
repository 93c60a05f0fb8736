/* Derivative of a distributed signal (PyLops-MPI's MPIFirstDerivative and MPISecondDerivative):
 *
 *     x(t) = sin(t) on N points of [0, 2 pi), split over the ranks;
 *     y = D x with the centered order-5 first derivative, z = D2 x with the second derivative.
 *
 * Along axis 0 each rank takes the two rows on either side of its block from its neighbours
 * (one exchange, overlapped with the interior). The program checks y against cos(t) and z
 * against -sin(t) away from the ends (truncation errors of h^4 and h^2), and both against the
 * same formulas computed serially on the gathered signal; it exits 1 unless they agree.
 *
 *   mpiexec -n 4 build/examples/derivative */
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

enum { N = 1000 };

/* y = op x, gathered on every rank into out (N values). */
static void apply_gathered(plm_const_op_t op, plm_const_array_t x, double *out)
{
    plm_array_t y = NULL;
    TRY(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    TRY(plm_op_apply(op, x, y));
    TRY(plm_array_asarray(y, 0, out, N * (int64_t)sizeof(double)));
    plm_array_destroy(&y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    const double h = 2 * acos(-1.0) / N;   /* 2 pi / N (M_PI is not C99) */
    const int64_t dims[1] = {N};
    plm_op_t d1 = NULL, d2 = NULL;
    TRY(plm_op_first_derivative(comm, PLM_FLOAT64, 1, dims, -1, 0, h, PLM_DERIV_CENTERED, 5, 1, &d1));
    TRY(plm_op_second_derivative(comm, PLM_FLOAT64, 1, dims, -1, 0, h, PLM_DERIV_CENTERED, 0, &d2));

    /* x = sin(t) on this rank's points */
    plm_array_t x = NULL;
    TRY(plm_op_new_domain_array(d1, PLM_MEMORY_HOST, &x));
    int64_t off = 0, n = 0;
    double *v = NULL;
    TRY(plm_array_local_offset(x, &off));
    TRY(plm_array_local_size(x, &n));
    TRY(plm_array_get_local_write(x, (void **)&v));
    for (int64_t i = 0; i < n; i++) v[i] = sin((double)(off + i) * h);
    TRY(plm_array_restore_local_write(x, (void **)&v));

    static double xs[N], y[N], z[N];
    apply_gathered(d1, x, y);
    apply_gathered(d2, x, z);
    TRY(plm_array_asarray(x, 0, xs, N * (int64_t)sizeof(double)));

    /* against calculus (interior rows) and against the serial formulas (every row) */
    double e1 = 0, e2 = 0, s1 = 0, s2 = 0;
    for (int i = 2; i < N - 2; i++) {
        const double t = i * h;
        e1 = fmax(e1, fabs(y[i] - cos(t)));
        e2 = fmax(e2, fabs(z[i] - -sin(t)));
        const double ys = (xs[i - 2] / 12 - 2 * xs[i - 1] / 3 + 2 * xs[i + 1] / 3 - xs[i + 2] / 12) / h;
        const double zs = (xs[i + 1] - 2 * xs[i] + xs[i - 1]) / (h * h);
        s1 = fmax(s1, fabs(y[i] - ys));
        s2 = fmax(s2, fabs(z[i] - zs) * h * h);
    }
    s1 = fmax(s1, fabs(y[0] - (xs[1] - xs[0]) / h)); /* edge rows: one-sided differences */
    s1 = fmax(s1, fabs(y[1] - (xs[2] - xs[0]) / (2 * h)));
    s1 = fmax(s1, fabs(y[N - 1] - (xs[N - 1] - xs[N - 2]) / h));
    s2 = fmax(s2, fabs(z[0]) + fabs(z[N - 1])); /* no edge: the end rows are 0 */
    const int ok = e1 < 1e-8 && e2 < 1e-4 && s1 < 1e-10 && s2 < 1e-12;
    if (rank == 0)
        printf("derivative: |D x - cos| = %.2e, |D2 x + sin| = %.2e, vs serial %.2e / %.2e: %s\n", e1, e2, s1, s2,
               ok ? "OK" : "FAILED");

    plm_array_destroy(&x);
    plm_op_destroy(&d1);
    plm_op_destroy(&d2);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
