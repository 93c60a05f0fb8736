/* Multi-dimensional deconvolution (MDD) with the distributed MDC operator, in the pattern of
 * PyLops' MDD: data y(t, s) are the multi-dimensional convolution of a kernel g(t, s, r) with
 * an unknown model x(t, r), and CGLS recovers x from y.
 *
 * The synthetic dataset is made here: g(t, s, r) is a Ricker wavelet delayed by a travel time
 * that grows with the source-receiver offset (a hyperbolic event), taken to the frequency
 * domain by a DFT along time. Its NF frequencies are split over the ranks - each rank computes
 * and passes only its own (plm_op_mdc distributes G by frequency; x and y are BROADCAST). The
 * model is sparse (a few spikes at negative and positive lags: twosided), and y = MDC x.
 *
 * MDD is ill-posed, so CGLS solves a damped problem (DAMP below) to a tolerance.
 *
 * Check: rank 0 builds the dense MDC matrix serially in float64 from the definition (a naive
 * DFT with PyLops' real-FFT conventions, not the library) and solves the same damped normal
 * equations by Cholesky; the program prints VERIFIED and exits 0 only if CGLS stopped on its
 * tolerance and its solution matches the serial one to REL_TOL, at any rank count.
 *
 *   mpiexec -n 4 build/examples/mdc_deconvolution */
#include <complex.h>
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

/* nt samples (odd: twosided), ns sources, nr receivers, one virtual source; all nt/2 + 1 bins. */
enum { NT = 41, NS = 8, NR = 8, NV = 1, NF = NT / 2 + 1, NX = NT * NR * NV, NY = NT * NS * NV, NITER = 2000 };
static const double DT = 0.004, DR = 10.0, PI = 3.14159265358979323846;
/* MDD is ill-posed (the wavelet leaves high frequencies empty): CGLS solves the damped
 * problem min ||y - MDC x||^2 + DAMP^2 ||x||^2 and stops when the normal-equations residual
 * s = MDC^T (y - MDC x) - DAMP^2 x has ||s||^2 < TOL. As the normal matrix is >= DAMP^2 I, the
 * error to the exact damped solution is then at most sqrt(TOL) / DAMP^2 = 1e-9 (||x|| ~ 1).
 * Rounding (summation orders change with the rank count; the serial Cholesky) adds ~1e-13. A
 * wrong operator, adjoint or frequency split gives errors of order 1e-2 to 1. */
static const double DAMP = 0.01, TOL = 1e-26, REL_TOL = 1e-8;

/* Ricker wavelet of peak frequency f0 at time tau (seconds). */
static double ricker(double tau)
{
    const double a = PI * 25.0 * tau;
    return (1 - 2 * a * a) * exp(-a * a);
}

/* The kernel in time: a wavelet arriving at 0.02 s + offset / 2000 m/s. */
static double g_time(int t, int s, int r)
{
    const double t0 = 0.02 + fabs((double)(s - r)) * DR / 2000.0;
    return ricker(t * DT - t0);
}

/* G(k, s, r): the DFT of the kernel along time. */
static double complex g_freq(int k, int s, int r)
{
    double complex v = 0;
    for (int t = 0; t < NT; t++) v += g_time(t, s, r) * cexp(-2.0 * I * PI * k * t / NT);
    return v;
}

/* The true model x(t, r): spikes at lags -6, 0 and +9 samples (t = NT/2 + lag). */
static double x_true(int t, int r)
{
    const int lag = t - NT / 2;
    if (lag == 0 && r == 3) return 1.0;
    if (lag == 9 && r == 5) return -0.6;
    if (lag == -6 && r == 1) return 0.4;
    return 0.0;
}

/* y = MDC x from the definition (see plm_op_mdc): ifftshift, DFT with the ortho and sqrt 2
 * scalings, G dr dt sqrt(nt), the inverse real DFT. G holds every frequency, (NF, NS, NR). */
static void mdc_serial(const double complex *G, const double *x, double *y)
{
    static double complex X[NF][NR * NV], Y[NF][NS * NV];
    const double scale = DR * DT * sqrt((double)NT);
    for (int k = 0; k < NF; k++) {
        const double w = (k >= 1 && k <= (NT - 1) / 2) ? sqrt(2.0) : 1.0;
        for (int rv = 0; rv < NR * NV; rv++) {
            double complex acc = 0;
            for (int t = 0; t < NT; t++) acc += x[((t + NT / 2) % NT) * NR * NV + rv] * cexp(-2.0 * I * PI * k * t / NT);
            X[k][rv] = w * acc / sqrt((double)NT);
        }
        for (int s = 0; s < NS; s++)
            for (int v = 0; v < NV; v++) {
                double complex acc = 0;
                for (int r = 0; r < NR; r++) acc += scale * G[(k * NS + s) * NR + r] * X[k][r * NV + v];
                Y[k][s * NV + v] = acc / w;
            }
    }
    for (int t = 0; t < NT; t++)
        for (int sv = 0; sv < NS * NV; sv++) {
            double acc = creal(Y[0][sv]);  /* odd NT: no Nyquist bin */
            for (int k = 1; k < NF; k++) acc += 2.0 * creal(Y[k][sv] * cexp(2.0 * I * PI * k * t / NT));
            y[t * NS * NV + sv] = acc / sqrt((double)NT);
        }
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* out = A in (A: NY x NX, row-major) or A^T in. */
static void matvec(const double *A, const double *in, double *out, int adjoint)
{
    for (int i = 0; i < (adjoint ? NX : NY); i++) out[i] = 0;
    for (int i = 0; i < NY; i++)
        for (int j = 0; j < NX; j++) {
            if (adjoint) out[j] += A[i * NX + j] * in[i];
            else out[i] += A[i * NX + j] * in[j];
        }
}

/* The damped least-squares solution: (A^T A + DAMP^2 I) x = A^T y by Cholesky. */
static void serial_solution(const double *A, const double *y, double *x)
{
    double *n = calloc((size_t)NX * NX, sizeof *n), *b = malloc(NX * sizeof *b), *u = malloc(NX * sizeof *u);
    for (int i = 0; i < NX; i++)
        for (int j = 0; j < NX; j++) {
            double s = i == j ? DAMP * DAMP : 0.0;
            for (int k = 0; k < NY; k++) s += A[k * NX + i] * A[k * NX + j];
            n[i * NX + j] = s;
        }
    matvec(A, y, b, 1);
    for (int j = 0; j < NX; j++) { /* n = R^T R, R upper triangular, in n's upper triangle */
        for (int k = 0; k < j; k++)
            for (int i = j; i < NX; i++) n[j * NX + i] -= n[k * NX + j] * n[k * NX + i];
        const double r = sqrt(n[j * NX + j]);
        for (int i = j; i < NX; i++) n[j * NX + i] /= r;
    }
    for (int i = 0; i < NX; i++) { /* R^T u = b, then R x = u */
        double s = b[i];
        for (int k = 0; k < i; k++) s -= n[k * NX + i] * u[k];
        u[i] = s / n[i * NX + i];
    }
    for (int i = NX - 1; i >= 0; i--) {
        double s = u[i];
        for (int k = i + 1; k < NX; k++) s -= n[i * NX + k] * x[k];
        x[i] = s / n[i * NX + i];
    }
    free(n), free(b), free(u);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* This rank's frequencies: a contiguous block, the first NF % size ranks one more. */
    const int nf = NF / size + (rank < NF % size), f0 = rank * (NF / size) + (rank < NF % size ? rank : NF % size);
    double complex *g = malloc(sizeof *g * (size_t)(nf * NS * NR + 1));
    for (int k = 0; k < nf; k++)
        for (int s = 0; s < NS; s++)
            for (int r = 0; r < NR; r++) g[(k * NS + s) * NR + r] = g_freq(f0 + k, s, r);
    plm_op_t op = NULL;
    TRY(plm_op_mdc(comm, PLM_COMPLEX128, NT, NV, NF, nf, NS, NR, DT, DR, /*twosided*/ 1, /*conj*/ 0,
                   /*prescaled*/ 0, /*save_gt*/ 1, nf ? g : NULL, (int64_t)(nf * NS * NR * sizeof *g), &op));
    free(g);

    /* the true model, the data y = MDC x_true, and CGLS from x = 0 */
    plm_array_t xt = NULL, x = NULL, y = NULL;
    TRY(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &xt));
    TRY(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    TRY(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    double *v = NULL;
    TRY(plm_array_get_local_write(xt, (void **)&v)); /* BROADCAST: every rank holds all of it */
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < NR; r++) v[t * NR + r] = x_true(t, r);
    TRY(plm_array_restore_local_write(xt, (void **)&v));
    TRY(plm_op_apply(op, xt, y));
    TRY(plm_array_fill(x, 0, 0));
    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_solver_info_set_show(info, 1));
    TRY(plm_solve_cgls(op, y, x, NITER, DAMP, TOL, info));
    int64_t iters = 0;
    plm_stop_reason_t reason = PLM_STOP_NONE;
    TRY(plm_solver_info_iterations(info, &iters));
    TRY(plm_solver_info_reason(info, &reason));

    double *xs = malloc(NX * sizeof *xs), *yg = malloc(NY * sizeof *yg);
    TRY(plm_array_asarray(x, 0, xs, NX * (int64_t)sizeof *xs));
    TRY(plm_array_asarray(y, 0, yg, NY * (int64_t)sizeof *yg));
    int ok = 1;
    if (rank == 0) {
        /* the serial reference: every frequency of G, the dense operator from the definition,
         * the damped normal equations */
        double complex *G = malloc(sizeof *G * NF * NS * NR);
        for (int k = 0; k < NF; k++)
            for (int s = 0; s < NS; s++)
                for (int r = 0; r < NR; r++) G[(k * NS + s) * NR + r] = g_freq(k, s, r);
        double *A = malloc(sizeof *A * NY * NX), *e = calloc(NX, sizeof *e), *col = malloc(NY * sizeof *col);
        for (int j = 0; j < NX; j++) {
            e[j] = 1;
            mdc_serial(G, e, col);
            e[j] = 0;
            for (int i = 0; i < NY; i++) A[i * NX + j] = col[i];
        }
        double *xref = malloc(NX * sizeof *xref), *xtg = malloc(NX * sizeof *xtg), *ax = malloc(NY * sizeof *ax);
        serial_solution(A, yg, xref);
        for (int t = 0; t < NT; t++)
            for (int r = 0; r < NR; r++) xtg[t * NR + r] = x_true(t, r);
        matvec(A, xs, ax, 0);
        double err = 0, nrm = 0, res = 0, rec = 0;
        for (int j = 0; j < NX; j++) {
            err += (xs[j] - xref[j]) * (xs[j] - xref[j]), nrm += xref[j] * xref[j];
            rec += (xs[j] - xtg[j]) * (xs[j] - xtg[j]);
        }
        for (int i = 0; i < NY; i++) res += (yg[i] - ax[i]) * (yg[i] - ax[i]);
        const double rel = sqrt(err / nrm);
        ok = reason == PLM_STOP_TOLERANCE && rel < REL_TOL;
        printf("MDD: nt %d, %d sources, %d receivers, %d frequencies over %d rank(s)\n", NT, NS, NR, NF, size);
        printf("CGLS: %lld iterations, stopped on %s\n", (long long)iters,
               reason == PLM_STOP_TOLERANCE ? "tolerance" : "another reason (not the tolerance)");
        printf("data misfit ||y - MDC x|| / ||y||: %.3e\n", sqrt(res / dot(yg, yg, NY)));
        printf("model error ||x - x_true|| / ||x_true||: %.3e\n", sqrt(rec / dot(xtg, xtg, NX)));
        printf("relative error to the serial float64 solution: %.3e (tolerance %.0e)\n", rel, REL_TOL);
        printf("%s\n", ok ? "VERIFIED" : "FAILED");
        free(G), free(A), free(e), free(col), free(xref), free(xtg), free(ax);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);

    free(xs), free(yg);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&xt);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
