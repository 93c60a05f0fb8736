/* bench_prox: the proximal solvers (ProximalGradient with each acceleration, ADMML2) per
 * iteration, next to a hand-written floor of the same iterations measured in the same run.
 *
 *   mpiexec -n 2 --bind-to core build/bench/bench_prox [-n N]... [-r REPS] [-i NITER]
 *
 * Problem: a BlockDiag of one dense n x n float64 block A per rank (n = 100 and 1000 by
 * default), b = A 1; ProximalGradient on f = L2(Op, b) (sigma 1), g = L1 (epsg 0.1), tau 0.1;
 * ADMML2 on 0.5 ||Op x - b||^2 + L1(z), z = D x with D a second BlockDiag of dense blocks,
 * tau 1, inner CGLS of 10 iterations (tol 0).
 *
 * The floor is the same iterations written by hand on the local block: cblas_dgemv for the
 * operators, plain loops for the vector steps (one loop per step of the method, fused as one
 * writes them by hand), and one MPI_Allreduce (on a duplicate of the communicator) per
 * reduction the method needs: none for ProximalGradient without a tolerance (the blocks are
 * independent), one of 2 doubles per iteration with one (f(x) and g(x) for J), two per inner
 * CGLS iteration plus one per x-step for ADMML2.
 *
 * Times: each solve and its floor alternately (bench_timing.h), after a warm-up of each;
 * median of REPS (default 15) solves of NITER iterations (default 50; ADMML2 NITER / 5),
 * slowest rank, per iteration. A benchmark, not a test: nothing here asserts timings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0;

typedef struct {
    int n;
    int64_t niter;
    double *a, *d, *bl;                        /* A, D, b (local) */
    double *x, *y, *xo, *r, *g;                /* ProximalGradient floor vectors */
    double *s1, *s2, *q1, *q2, *rr, *c, *bz; /* ADMML2 floor vectors (x-step CGLS) */
    double *z, *u, *ax;
    MPI_Comm raw;
    /* library side */
    plm_op_t op, dop;
    plm_array_t b, px, x0, pz;
    plm_prox_t f, l1, l1z;
    plm_accel_t accel;
    double tol;
    plm_solver_info_t info;
} bench_t;

static const double kTau = 0.1, kEps = 0.1, kAdmmTau = 1.0, kSigmaZ = 0.1;
static const int kInner = 10;

static double soft(double v, double t) { return v > t ? v - t : v < -t ? v + t : 0.0; }

/* ---- ProximalGradient ------------------------------------------------------------------ */

static void lib_pg(void *p)
{
    bench_t *b = p;
    CHECK(plm_array_fill(b->px, 0, 0));
    const double eps = kEps;
    CHECK(plm_solve_proximal_gradient(b->f, b->l1, b->px, kTau, &eps, 1, 1.0, b->niter, b->accel, b->tol, b->info));
}

/* f(x) = 0.5 ||A x - b||^2 and g(x) = ||x||_1, summed over the ranks by one allreduce. */
static void floor_values(bench_t *b, double *out)
{
    const int n = b->n;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, b->a, n, b->x, 1, 0.0, b->r, 1);
    double part[2] = {0, 0};
    for (int i = 0; i < n; ++i) {
        const double e = b->r[i] - b->bl[i];
        part[0] += e * e;
        part[1] += fabs(b->x[i]);
    }
    MPI_Allreduce(part, out, 2, MPI_DOUBLE, MPI_SUM, b->raw);
}

static void floor_pg(void *p)
{
    bench_t *b = p;
    const int n = b->n;
    memset(b->x, 0, sizeof(double) * (size_t)n);
    memcpy(b->y, b->x, sizeof(double) * (size_t)n);
    double t = 1, J_old = INFINITY;
    for (int64_t it = 0; it < b->niter; ++it) {
        /* grad f(y) = A^T (A y - b) */
        cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, b->a, n, b->y, 1, 0.0, b->r, 1);
        for (int i = 0; i < n; ++i) b->r[i] -= b->bl[i];
        cblas_dgemv(CblasRowMajor, CblasTrans, n, n, 1.0, b->a, n, b->r, 1, 0.0, b->g, 1);
        /* x_old = x; x = soft(y - tau grad, tau eps) */
        for (int i = 0; i < n; ++i) {
            b->xo[i] = b->x[i];
            b->x[i] = soft(b->y[i] - kTau * b->g[i], kTau * kEps);
        }
        double omega = 0;
        if (b->accel == PLM_ACCEL_VANDENBERGHE) omega = (double)it / (double)(it + 3);
        else if (b->accel == PLM_ACCEL_FISTA) {
            const double told = t;
            t = (1.0 + sqrt(1.0 + 4.0 * t * t)) / 2.0;
            omega = (told - 1.0) / t;
        }
        for (int i = 0; i < n; ++i) b->y[i] = b->x[i] + omega * (b->x[i] - b->xo[i]);
        if (b->tol > 0) {
            double v[2];
            floor_values(b, v);
            const double J = 0.5 * v[0] + kEps * v[1];
            if (fabs(1.0 - J / J_old) < b->tol) break;
            J_old = J;
        }
    }
}

/* ---- ADMML2 ---------------------------------------------------------------------------- */

static void lib_admm(void *p)
{
    bench_t *b = p;
    CHECK(plm_array_fill(b->px, 0, 0));
    CHECK(plm_solve_admml2(b->l1z, b->op, b->b, b->dop, b->px, b->pz, 0, kAdmmTau, b->niter, 0, kInner, 0.0,
                           b->info));
}

/* [s1; s2] = [A; D / sqrt(tau)] v */
static void stack_fwd(bench_t *b, const double *v, double *o1, double *o2)
{
    const int n = b->n;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, b->a, n, v, 1, 0.0, o1, 1);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0 / sqrt(kAdmmTau), b->d, n, v, 1, 0.0, o2, 1);
}
/* o = A^T v1 + D^T v2 / sqrt(tau) */
static void stack_adj(bench_t *b, const double *v1, const double *v2, double *o)
{
    const int n = b->n;
    cblas_dgemv(CblasRowMajor, CblasTrans, n, n, 1.0, b->a, n, v1, 1, 0.0, o, 1);
    cblas_dgemv(CblasRowMajor, CblasTrans, n, n, 1.0 / sqrt(kAdmmTau), b->d, n, v2, 1, 1.0, o, 1);
}

/* PyLops' CGLS (damp 0) on the stack from x, kInner iterations. */
static void floor_cgls(bench_t *b)
{
    const int n = b->n;
    stack_fwd(b, b->x, b->s1, b->s2);
    for (int i = 0; i < n; ++i) {
        b->s1[i] = b->bl[i] - b->s1[i];
        b->s2[i] = b->bz[i] - b->s2[i];
    }
    stack_adj(b, b->s1, b->s2, b->rr);
    memcpy(b->c, b->rr, sizeof(double) * (size_t)n);
    stack_fwd(b, b->c, b->q1, b->q2);
    double part[2] = {0, 0}, red[2];
    for (int i = 0; i < n; ++i) {
        part[0] += b->rr[i] * b->rr[i];
        part[1] += b->s1[i] * b->s1[i] + b->s2[i] * b->s2[i];
    }
    MPI_Allreduce(part, red, 2, MPI_DOUBLE, MPI_SUM, b->raw);
    double kold = red[0];
    for (int it = 0; it < kInner && kold > 0; ++it) {
        double qq = 0, qqs;
        for (int i = 0; i < n; ++i) qq += b->q1[i] * b->q1[i] + b->q2[i] * b->q2[i];
        MPI_Allreduce(&qq, &qqs, 1, MPI_DOUBLE, MPI_SUM, b->raw);
        const double a = kold / qqs;
        for (int i = 0; i < n; ++i) {
            b->x[i] += a * b->c[i];
            b->s1[i] -= a * b->q1[i];
            b->s2[i] -= a * b->q2[i];
        }
        stack_adj(b, b->s1, b->s2, b->rr);
        part[0] = part[1] = 0;
        for (int i = 0; i < n; ++i) {
            part[0] += b->rr[i] * b->rr[i];
            part[1] += b->s1[i] * b->s1[i] + b->s2[i] * b->s2[i];
        }
        MPI_Allreduce(part, red, 2, MPI_DOUBLE, MPI_SUM, b->raw);
        const double beta = red[0] / kold;
        for (int i = 0; i < n; ++i) b->c[i] = b->rr[i] + beta * b->c[i];
        stack_fwd(b, b->c, b->q1, b->q2);
        kold = red[0];
    }
}

static void floor_admm(void *p)
{
    bench_t *b = p;
    const int n = b->n;
    const double st = 1.0 / sqrt(kAdmmTau);
    memset(b->x, 0, sizeof(double) * (size_t)n);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, b->d, n, b->x, 1, 0.0, b->z, 1); /* z0 = D x0 */
    memset(b->u, 0, sizeof(double) * (size_t)n);
    for (int64_t it = 0; it < b->niter; ++it) {
        for (int i = 0; i < n; ++i) b->bz[i] = st * (b->z[i] - b->u[i]);
        floor_cgls(b);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, b->d, n, b->x, 1, 0.0, b->ax, 1);
        for (int i = 0; i < n; ++i) {
            const double w = b->ax[i] + b->u[i];
            b->z[i] = soft(w, kAdmmTau * kSigmaZ);
            b->u[i] = w - b->z[i];
        }
    }
}

/* ---- setup ----------------------------------------------------------------------------- */

static double *vec(int n) { return calloc((size_t)n, sizeof(double)); }

static plm_op_t blockdiag(plm_comm_t comm, int n, const double *m)
{
    plm_op_t block = NULL, op = NULL;
    CHECK(plm_op_dense(PLM_FLOAT64, n, n, m, (int64_t)n * n * (int64_t)sizeof(double), 0, 1, &block));
    CHECK(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &op));
    plm_op_destroy(&block);
    return op;
}

static void row(const char *name, int n, int64_t niter, double t, double tf, const char *floor)
{
    if (g_rank == 0)
        printf("| %s | %d | %.2f | %.2f | %.2f | %s |\n", name, n, t / (double)niter * 1e6, tf / (double)niter * 1e6,
               t / tf, floor);
}

static void run(plm_comm_t comm, MPI_Comm raw, int n, int64_t niter, int reps)
{
    bench_t b = {0};
    b.n = n;
    b.raw = raw;
    b.a = vec(n * n);
    b.d = vec(n * n);
    b.bl = vec(n);
    for (int64_t i = 0; i < (int64_t)n * n; ++i) {
        const int on_diag = (i % (n + 1)) == 0;
        b.a[i] = 0.3 * sin((double)i + g_rank) / sqrt((double)n) + (on_diag ? 1.0 : 0.0);
        b.d[i] = (on_diag ? 1.0 : 0.0) - ((i % (n + 1)) == 1 ? 1.0 : 0.0); /* a first difference */
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) b.bl[i] += b.a[(int64_t)i * n + j] * (j % 7 == 0 ? 1.0 : 0.0);
    double **v[] = {&b.x, &b.y, &b.xo, &b.r, &b.g, &b.s1, &b.s2, &b.q1, &b.q2, &b.rr, &b.c, &b.bz, &b.z, &b.u, &b.ax};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) *v[i] = vec(n);

    b.op = blockdiag(comm, n, b.a);
    b.dop = blockdiag(comm, n, b.d);
    CHECK(plm_op_new_range_array(b.op, PLM_MEMORY_HOST, &b.b));
    double *bd = NULL;
    CHECK(plm_array_get_local_write(b.b, (void **)&bd));
    memcpy(bd, b.bl, sizeof(double) * (size_t)n);
    CHECK(plm_array_restore_local_write(b.b, (void **)&bd));
    CHECK(plm_op_new_domain_array(b.op, PLM_MEMORY_HOST, &b.px));
    CHECK(plm_op_new_domain_array(b.op, PLM_MEMORY_HOST, &b.x0));
    CHECK(plm_op_new_range_array(b.dop, PLM_MEMORY_HOST, &b.pz));
    CHECK(plm_array_fill(b.x0, 0, 0));
    CHECK(plm_prox_create_l2(b.op, b.b, NULL, 1.0, 0.0, 1, 10, 0.0, b.x0, 1, PLM_L2_CGLS, &b.f));
    CHECK(plm_prox_create_l1(1.0, &b.l1));
    CHECK(plm_prox_create_l1(kSigmaZ, &b.l1z));
    CHECK(plm_solver_info_create(&b.info));

    const char *names[3] = {"ProximalGradient none", "ProximalGradient vandenberghe", "ProximalGradient fista"};
    for (int acc = 0; acc < 4; ++acc) {
        b.niter = niter;
        b.accel = acc < 3 ? (plm_accel_t)acc : PLM_ACCEL_FISTA;
        b.tol = acc < 3 ? 0.0 : 1e-300; /* J every iteration, never met */
        double t = 0, tf = 0;
        bench_time_pair(lib_pg, &b, floor_pg, &b, reps, &t, &tf);
        row(acc < 3 ? names[acc] : "ProximalGradient fista, tol (J)", n, niter, t, tf,
            acc < 3 ? "gemv N + T, 3 loops" : "gemv N + T, 3 loops; gemv N, 1 loop, 1 allreduce (J)");
    }
    b.niter = niter / 5 > 0 ? niter / 5 : 1;
    double t = 0, tf = 0;
    bench_time_pair(lib_admm, &b, floor_admm, &b, reps, &t, &tf);
    row("ADMML2 (inner CGLS 10)", n, b.niter, t, tf, "per CGLS it.: 4 gemv, 3 loops, 2 allreduce");

    plm_solver_info_destroy(&b.info);
    plm_prox_destroy(&b.f);
    plm_prox_destroy(&b.l1);
    plm_prox_destroy(&b.l1z);
    plm_array_destroy(&b.b);
    plm_array_destroy(&b.px);
    plm_array_destroy(&b.x0);
    plm_array_destroy(&b.pz);
    plm_op_destroy(&b.op);
    plm_op_destroy(&b.dop);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) free(*v[i]);
    free(b.a);
    free(b.d);
    free(b.bl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = 15, ns = 0, sizes[8];
    int64_t niter = 50;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) niter = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc && ns < 8) sizes[ns++] = atoi(argv[++i]);
    }
    if (ns == 0) {
        sizes[ns++] = 100;
        sizes[ns++] = 1000;
    }
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);
    if (g_rank == 0) {
        printf("bench_prox: %d ranks, float64, one n x n dense block per rank, %lld iterations, median of %d (us per "
               "iteration)\n\n",
               size, (long long)niter, reps);
        printf("| solver | n | plm (us/it) | floor (us/it) | plm / floor | floor per iteration |\n");
        printf("|---|---:|---:|---:|---:|---|\n");
    }
    for (int i = 0; i < ns; ++i) run(comm, raw, sizes[i], niter, reps);
    MPI_Comm_free(&raw);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
