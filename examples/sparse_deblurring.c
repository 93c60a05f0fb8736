/* Sparse and total-variation deblurring with the proximal solvers (PyLops-MPI's
 * ProximalGradient and ADMML2) on a distributed 1-D signal of N samples.
 *
 * The blur is built from existing distributed operators: B = (I + D2 / 4)^4, with D2 the
 * centered second derivative (zero end rows) and I = D2^0 - a 9-tap binomial smoother that
 * runs with halo exchanges between the ranks. Two problems:
 *   - spikes: min 1/2 ||B x - y||^2 + eps ||x||_1 by ProximalGradient with FISTA acceleration
 *     (f = L2 with the operator, g = L1);
 *   - blocks: min 1/2 ||B x - y||^2 + sigma ||D1 x||_1 (total variation, D1 the forward first
 *     derivative) by ADMML2.
 * Both print their solver tables (rank 0). The program repeats both solves serially on the
 * assembled dense matrices (every rank) with the same iterations and exits 1 unless the
 * distributed and serial solutions agree to 1e-8 and each deblurred signal is closer to the
 * truth than the blurred data.
 *
 *   mpiexec -n 4 build/examples/sparse_deblurring */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pylopsmpi.h>

#define TRY(call)                                                                                     \
    do {                                                                                              \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

enum { N = 240, PG_NITER = 150, ADMM_NITER = 40, INNER = 10 };
static const double EPS = 0.02, TAU_PG = 0.95, SIGMA_TV = 0.05, TAU_ADMM = 1.0;

static double spikes(int i) { return i % 37 == 11 ? 1.0 + 0.01 * i : 0.0; }
static double blocks(int i) { return i < 60 ? 0.0 : i < 110 ? 1.0 : i < 170 ? -0.5 : i < 200 ? 0.8 : 0.0; }

/* ---- serial dense algebra (n x n, row-major) ----------------------------------------------- */

static void mv(const double *G, const double *x, double *y, int adj)
{
    for (int k = 0; k < N; k++) y[k] = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            if (adj) y[j] += G[i * N + j] * x[i];
            else y[i] += G[i * N + j] * x[j];
        }
}

static double dotv(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double soft(double v, double t) { return v == 0 ? 0 : v * (fmax(fabs(v) - t, 0) / fabs(v)); }

/* B = (I + D2 / 4)^4 and D1 (forward, last row 0) as dense matrices. */
static void serial_operators(double *B, double *D1)
{
    double *S = calloc(N * N, 8), *T = calloc(N * N, 8);
    for (int i = 0; i < N; i++) {
        S[i * N + i] = 1;
        if (i > 0 && i < N - 1) {
            S[i * N + i - 1] += 0.25;
            S[i * N + i] += -0.5;
            S[i * N + i + 1] += 0.25;
        }
        if (i < N - 1) {
            D1[i * N + i] = -1;
            D1[i * N + i + 1] = 1;
        }
        B[i * N + i] = 1;
    }
    for (int p = 0; p < 4; p++) { /* B = S B */
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < N; k++) s += S[i * N + k] * B[k * N + j];
                T[i * N + j] = s;
            }
        memcpy(B, T, sizeof(double) * N * N);
    }
    free(S);
    free(T);
}

/* ProximalGradient, FISTA, eta = 1: f = 1/2 ||B x - y||^2, g = L1. */
static void serial_pg(const double *B, const double *y, double *x)
{
    double *z = calloc(N, 8), *xo = calloc(N, 8), *r = calloc(N, 8), *g = calloc(N, 8);
    double t = 1;
    for (int k = 0; k < N; k++) z[k] = x[k];
    for (int it = 0; it < PG_NITER; it++) {
        memcpy(xo, x, sizeof(double) * N);
        mv(B, z, r, 0);
        for (int i = 0; i < N; i++) r[i] -= y[i];
        mv(B, r, g, 1);
        for (int k = 0; k < N; k++) x[k] = soft(z[k] - TAU_PG * g[k], EPS * TAU_PG);
        const double told = t;
        t = (1 + sqrt(1 + 4 * t * t)) / 2;
        for (int k = 0; k < N; k++) z[k] = x[k] + ((told - 1) / t) * (x[k] - xo[k]);
    }
    free(z), free(xo), free(r), free(g);
}

/* [B; D1 / sqrt(tau)] and its adjoint. */
static void reg_mv(const double *B, const double *D1, double st, const double *x, double *y, int adj)
{
    double *t = calloc(N, 8);
    if (!adj) {
        mv(B, x, y, 0);
        mv(D1, x, y + N, 0);
        for (int i = 0; i < N; i++) y[N + i] *= st;
    } else {
        mv(B, x, y, 1);
        mv(D1, x + N, t, 1);
        for (int j = 0; j < N; j++) y[j] += st * t[j];
    }
    free(t);
}

/* ADMML2 with an inner CGLS of INNER iterations (tolerance 0), z0 = D1 x0, u0 = 0. */
static void serial_admm(const double *B, const double *D1, const double *y, double *x)
{
    double *z = calloc(N, 8), *u = calloc(N, 8), *ax = calloc(N, 8), *b = calloc(2 * N, 8), *s = calloc(2 * N, 8),
           *q = calloc(2 * N, 8), *r = calloc(N, 8), *c = calloc(N, 8);
    const double st = 1 / sqrt(TAU_ADMM);
    mv(D1, x, z, 0);
    for (int it = 0; it < ADMM_NITER; it++) {
        for (int i = 0; i < N; i++) {
            b[i] = y[i];
            b[N + i] = st * (z[i] - u[i]);
        }
        reg_mv(B, D1, st, x, s, 0); /* CGLS from x */
        for (int i = 0; i < 2 * N; i++) s[i] = b[i] - s[i];
        reg_mv(B, D1, st, s, r, 1);
        memcpy(c, r, sizeof(double) * N);
        reg_mv(B, D1, st, c, q, 0);
        double kold = dotv(r, r, N);
        for (int k = 0; k < INNER && kold > 0; k++) {
            const double a = kold / dotv(q, q, 2 * N);
            for (int j = 0; j < N; j++) x[j] += a * c[j];
            for (int i = 0; i < 2 * N; i++) s[i] -= a * q[i];
            reg_mv(B, D1, st, s, r, 1);
            const double kk = dotv(r, r, N);
            for (int j = 0; j < N; j++) c[j] = r[j] + (kk / kold) * c[j];
            reg_mv(B, D1, st, c, q, 0);
            kold = kk;
        }
        mv(D1, x, ax, 0);
        for (int i = 0; i < N; i++) z[i] = soft(ax[i] + u[i], TAU_ADMM * SIGMA_TV);
        for (int i = 0; i < N; i++) u[i] = u[i] + ax[i] - z[i];
    }
    free(z), free(u), free(ax), free(b), free(s), free(q), free(r), free(c);
}

/* ---- the distributed run ------------------------------------------------------------------ */

static plm_array_t on_domain(plm_const_op_t op, double (*f)(int))
{
    plm_array_t x = NULL;
    TRY(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    double g[N];
    for (int i = 0; i < N; i++) g[i] = f ? f(i) : 0.0;
    TRY(plm_array_set_global(x, g, sizeof g));
    return x;
}

static double rel_err(const double *a, double (*truth)(int))
{
    double e = 0, t = 0;
    for (int i = 0; i < N; i++) {
        e += (a[i] - truth(i)) * (a[i] - truth(i));
        t += truth(i) * truth(i);
    }
    return sqrt(e / t);
}

static double max_diff(const double *a, const double *b, double *scale)
{
    double d = 0;
    *scale = 0;
    for (int i = 0; i < N; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        *scale = fmax(*scale, fabs(b[i]));
    }
    return d;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* B = (I + D2 / 4)^4 and the forward derivative, on one default split of N samples */
    const int64_t dims[1] = {N};
    plm_op_t D2 = NULL, I = NULL, D2s = NULL, S = NULL, B = NULL, D1 = NULL;
    TRY(plm_op_second_derivative(comm, PLM_FLOAT64, 1, dims, -1, 0, 1.0, PLM_DERIV_CENTERED, 0, &D2));
    TRY(plm_op_power(D2, 0, &I));
    TRY(plm_op_scale(D2, 0.25, 0, &D2s));
    TRY(plm_op_sum(I, D2s, &S));
    TRY(plm_op_power(S, 4, &B));
    TRY(plm_op_first_derivative(comm, PLM_FLOAT64, 1, dims, -1, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &D1));

    double *Bd = calloc(N * N, 8), *D1d = calloc(N * N, 8);
    serial_operators(Bd, D1d);

    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_solver_info_set_show(info, 1));
    double xg[N], yg[N], xs[N], scale = 0;
    int ok = 1;

    /* spikes: ProximalGradient (FISTA) with L2(B, y) and L1 */
    plm_array_t xt = on_domain(B, spikes), x = on_domain(B, NULL), y = NULL;
    TRY(plm_op_new_range_array(B, PLM_MEMORY_HOST, &y));
    TRY(plm_op_apply(B, xt, y));
    plm_prox_t f = NULL, l1 = NULL;
    TRY(plm_prox_create_l2(B, y, NULL, 1.0, 1.0, 1, 10, 1e-4, x, 1, PLM_L2_CGLS, &f));
    TRY(plm_prox_create_l1(1.0, &l1));
    TRY(plm_solve_proximal_gradient(f, l1, x, TAU_PG, &EPS, 1, 1.0, PG_NITER, PLM_ACCEL_FISTA, 0.0, info));
    TRY(plm_array_asarray(x, 0, xg, sizeof xg));
    TRY(plm_array_asarray(y, 0, yg, sizeof yg));
    for (int i = 0; i < N; i++) xs[i] = 0;
    serial_pg(Bd, yg, xs);
    const double d_pg = max_diff(xg, xs, &scale), s_pg = scale;
    const double e_pg = rel_err(xg, spikes), e_blur_pg = rel_err(yg, spikes);
    ok = ok && d_pg <= 1e-8 * s_pg && e_pg < e_blur_pg;

    /* blocks: ADMML2 with L1 on D1 x (total variation) */
    plm_array_t bt = on_domain(B, blocks), xb = on_domain(B, NULL), z = NULL;
    TRY(plm_op_new_range_array(D1, PLM_MEMORY_HOST, &z));
    TRY(plm_op_apply(B, bt, y));
    plm_prox_t tv = NULL;
    TRY(plm_prox_create_l1(SIGMA_TV, &tv));
    TRY(plm_solve_admml2(tv, B, y, D1, xb, z, 0, TAU_ADMM, ADMM_NITER, 0, INNER, 0.0, info));
    TRY(plm_array_asarray(xb, 0, xg, sizeof xg));
    TRY(plm_array_asarray(y, 0, yg, sizeof yg));
    for (int i = 0; i < N; i++) xs[i] = 0;
    serial_admm(Bd, D1d, yg, xs);
    const double d_admm = max_diff(xg, xs, &scale), s_admm = scale;
    const double e_admm = rel_err(xg, blocks), e_blur_admm = rel_err(yg, blocks);
    ok = ok && d_admm <= 1e-8 * s_admm && e_admm < e_blur_admm;

    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("sparse_deblurring: spikes (ProximalGradient, fista): error %.3e (blurred data %.3e), vs serial %.1e\n",
               e_pg, e_blur_pg, d_pg / s_pg);
        printf("sparse_deblurring: blocks (ADMML2, TV): error %.3e (blurred data %.3e), vs serial %.1e\n", e_admm,
               e_blur_admm, d_admm / s_admm);
        printf("%s\n", all ? "VERIFIED" : "FAILED");
    }

    free(Bd);
    free(D1d);
    plm_prox_destroy(&f);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&tv);
    plm_solver_info_destroy(&info);
    plm_array_t arrays[] = {xt, x, y, bt, xb, z};
    for (int i = 0; i < 6; i++) plm_array_destroy(&arrays[i]);
    plm_op_t ops[] = {D2, I, D2s, S, B, D1};
    for (int i = 0; i < 6; i++) plm_op_destroy(&ops[i]);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return all ? 0 : 1;
}
