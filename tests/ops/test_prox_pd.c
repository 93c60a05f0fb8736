/* The newer proximal solvers against serial float64 implementations of pyproximal's iterations
 * written here: ProximalGradient with backtracking (eta 1 and < 1, accelerations, the last
 * step), PrimalDual (gfirst or not, y0, z, step sequences, theta) with a plain A (block-diagonal
 * dense, SCATTER with uneven blocks; a broadcast dense A, BROADCAST) and with a stacked A
 * ([G1; G2], total variation's shape) and an L21 g on the stacked y, and AdaptivePrimalDual
 * (its steps, its stop on the residuals, with and without z), to 1e-10 at 1-4 ranks. Bad
 * arguments on one rank fail on every rank. */
#include "ops/ops_test_util.h"

#define TOL 1e-10

/* ---- a distributed operator and its global matrix --------------------------------------- */

typedef struct {
    int64_t M, N;
    double *G; /* M x N, row-major */
    plm_op_t op;
} lin_t;

static double entry(int64_t i, int64_t j, int seed)
{
    return (i == j ? 1.5 : 0.0) + 0.3 * sin(0.7 * (double)i + 1.3 * (double)j + seed);
}

/* bcast: one dense M x N on every rank (BROADCAST vectors); else block-diagonal, rank r's block
 * on rows and columns split(M|N, P, r) (SCATTER, uneven; some ranks may hold none). */
static lin_t make_lin(int bcast, int64_t M, int64_t N, int seed)
{
    lin_t L = {M, N, calloc((size_t)(M * N), sizeof(double)), NULL};
    int64_t ro = 0, co = 0, mr = 0, mc = 0, mro = 0, mco = 0;
    for (int r = 0; r < (bcast ? 1 : tu_size); r++) {
        const int64_t m = bcast ? M : tu_split(M, tu_size, r), n = bcast ? N : tu_split(N, tu_size, r);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) L.G[(ro + i) * N + co + j] = entry(ro + i, co + j, seed);
        if (bcast || r == tu_rank) mr = m, mc = n, mro = ro, mco = co;
        ro += m;
        co += n;
    }
    double *blk = calloc((size_t)(mr * mc + 1), sizeof(double));
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < mc; j++) blk[i * mc + j] = L.G[(mro + i) * N + mco + j];
    plm_op_t d = NULL;
    TU_OK(plm_op_dense(PLM_FLOAT64, mr, mc, blk, tu_bytes(PLM_FLOAT64, mr * mc), 0, 0, &d));
    if (bcast) TU_OK(plm_op_broadcast(tu_comm, d, &L.op));
    else TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&d, 0, NULL, &L.op));
    plm_op_destroy(&d);
    free(blk);
    return L;
}

static void free_lin(lin_t *L)
{
    free(L->G);
    plm_op_destroy(&L->op);
}

/* An array on op's domain (range) holding the global values g (NULL: zeros). */
static plm_array_t arr(plm_const_op_t op, int range, const double *g)
{
    plm_layout_t l = NULL;
    plm_array_t x = NULL;
    TU_OK(range ? plm_op_range(op, &l) : plm_op_domain(op, &l));
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    int64_t n = 0;
    TU_OK(plm_layout_global_shape(l, &n));
    if (g) TU_OK(plm_array_set_global(x, g, tu_bytes(PLM_FLOAT64, n)));
    else TU_OK(plm_array_fill(x, 0, 0));
    plm_layout_destroy(&l);
    return x;
}

static double *seq(int64_t n, int seed)
{
    double *v = calloc((size_t)n + 1, sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = sin(0.9 * (double)i + seed) + 0.1 * seed;
    return v;
}

static void expect_global(plm_const_array_t x, const double *want, int64_t n, const char *what)
{
    double *got = calloc((size_t)n + 1, sizeof(double));
    TU_CHECK_OK(plm_array_asarray(x, 0, got, tu_bytes(PLM_FLOAT64, n)));
    double scale = 0, err = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        err = fmax(err, fabs(got[i] - want[i]));
    }
    TU_EXPECT(err <= TOL * (scale + 1e-300) && !isnan(err), "%s: max error %.3g (scale %.3g)", what, err, scale);
    free(got);
}

/* ---- serial building blocks -------------------------------------------------------------- */

static void mv(const double *G, int64_t M, int64_t N, const double *x, double *y, int adj)
{
    for (int64_t k = 0; k < (adj ? N : M); k++) y[k] = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            if (adj) y[j] += G[i * N + j] * x[i];
            else y[i] += G[i * N + j] * x[j];
        }
}

static double dotv(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double soft1(double v, double t) { return fabs(v) <= t ? 0 : v - copysign(t, v); }
static double clip(double v, double s) { return fmin(fmax(v, -s), s); }

/* f(x) = 1/2 ||G x - b||^2 and its gradient (L2 with an operator, sigma 1). */
static double l2f(const lin_t *L, const double *b, const double *x, double *grad)
{
    double *r = calloc((size_t)L->M + 1, sizeof(double));
    mv(L->G, L->M, L->N, x, r, 0);
    for (int64_t i = 0; i < L->M; i++) r[i] -= b[i];
    if (grad) mv(L->G, L->M, L->N, r, grad, 1);
    const double f = 0.5 * dotv(r, r, L->M);
    free(r);
    return f;
}

/* ---- ProximalGradient with backtracking ---------------------------------------------------- */

/* pyproximal's ProximalGradient with tau None (backtracking from tau0), g = sg ||x||_1. */
static double ref_pg_bt(const lin_t *L, const double *b, double *x, double tau, double beta, int64_t niterback,
                        double eps, double sg, double eta, int64_t niter, int accel)
{
    const int64_t N = L->N;
    double *y = calloc((size_t)N + 1, 8), *xold = calloc((size_t)N + 1, 8), *gr = calloc((size_t)N + 1, 8);
    double *z = calloc((size_t)N + 1, 8), *d = calloc((size_t)N + 1, 8);
    memcpy(y, x, (size_t)N * 8);
    double t = 1;
    for (int64_t it = 0; it < niter; it++) {
        memcpy(xold, x, (size_t)N * 8);
        const double fy = l2f(L, b, y, gr);
        for (int64_t ib = 0; ib < niterback; ib++) {
            for (int64_t i = 0; i < N; i++) z[i] = soft1(y[i] - tau * gr[i], eps * tau * sg);
            for (int64_t i = 0; i < N; i++) d[i] = z[i] - y[i];
            const double ft = fy + dotv(gr, d, N) + (1.0 / (2.0 * tau)) * dotv(d, d, N);
            if (l2f(L, b, z, NULL) <= ft) break;
            tau *= beta;
        }
        memcpy(x, z, (size_t)N * 8);
        if (eta != 1.0) {
            l2f(L, b, x, gr);
            for (int64_t i = 0; i < N; i++) x[i] = x[i] + eta * (soft1(x[i] - tau * gr[i], eps * tau * sg) - x[i]);
        }
        double omega = 0;
        if (accel == PLM_ACCEL_VANDENBERGHE) omega = (double)it / (double)(it + 3);
        else if (accel == PLM_ACCEL_FISTA) {
            const double told = t;
            t = (1.0 + sqrt(1.0 + 4.0 * t * t)) / 2.0;
            omega = (told - 1.0) / t;
        }
        for (int64_t i = 0; i < N; i++) y[i] = x[i] + omega * (x[i] - xold[i]);
    }
    free(y), free(xold), free(gr), free(z), free(d);
    return tau;
}

static void test_pg_backtracking(void **state)
{
    (void)state;
    const int64_t M = 3 * tu_size + 5, N = 2 * tu_size + 3;
    for (int bcast = 0; bcast < 2; bcast++) {
        lin_t L = make_lin(bcast, M, N, 1);
        double *b = seq(M, 2), *x0 = seq(N, 3);
        plm_array_t ba = arr(L.op, 1, b), x = arr(L.op, 0, x0);
        plm_prox_t f = NULL, g = NULL;
        TU_OK(plm_prox_create_l2(L.op, ba, NULL, 1.0, 1.0, 1, 10, 0.0, x, 1, PLM_L2_CGLS, &f));
        TU_OK(plm_prox_create_l1(0.3, &g));
        const int accels[3] = {PLM_ACCEL_NONE, PLM_ACCEL_VANDENBERGHE, PLM_ACCEL_FISTA};
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 2; e++)
                for (int nb = 0; nb < 2; nb++) {
                    const double eta = e ? 0.7 : 1.0, eps = 0.5;
                    const int64_t niterback = nb ? 2 : 100; /* 2: the search often runs out */
                    double *want = seq(N, 3);
                    const double tref = ref_pg_bt(&L, b, want, 5.0, 0.5, niterback, eps, 0.3, eta, 12, accels[a]);
                    TU_OK(plm_array_set_global(x, x0, tu_bytes(PLM_FLOAT64, N)));
                    double tau = -1;
                    TU_CHECK_OK(plm_solve_proximal_gradient_backtracking(f, g, x, 5.0, 0.5, niterback, &eps, 1, eta, 12,
                                                                         (plm_accel_t)accels[a], 0.0, &tau, NULL));
                    char what[120];
                    snprintf(what, sizeof what, "PG backtracking %s accel %d eta %g niterback %lld",
                             bcast ? "BROADCAST" : "SCATTER", accels[a], eta, (long long)niterback);
                    expect_global(x, want, N, what);
                    TU_EXPECT(tau == tref, "%s: last tau %.17g want %.17g", what, tau, tref);
                    free(want);
                }
        /* bad arguments on one rank */
        const int last = tu_rank == tu_size - 1;
        const double eps = 0.5;
        TU_EXPECT_ERR(plm_solve_proximal_gradient_backtracking(f, g, x, 1.0, last ? 1.0 : 0.5, 10, &eps, 1, 1.0, 2,
                                                               PLM_ACCEL_NONE, 0.0, NULL, NULL),
                      PLM_ERR_INVALID_ARG);
        TU_EXPECT_ERR(plm_solve_proximal_gradient_backtracking(f, g, x, 1.0, 0.5, last ? 0 : 10, &eps, 1, 1.0, 2,
                                                               PLM_ACCEL_NONE, 0.0, NULL, NULL),
                      PLM_ERR_INVALID_ARG);
        TU_EXPECT_ERR(plm_solve_proximal_gradient_backtracking(g, g, x, 1.0, 0.5, 10, &eps, 1, 1.0, 2, PLM_ACCEL_NONE,
                                                               0.0, NULL, NULL),
                      PLM_ERR_NOT_SUPPORTED); /* L1 has no gradient */
        plm_prox_destroy(&f);
        plm_prox_destroy(&g);
        plm_array_destroy(&ba);
        plm_array_destroy(&x);
        free(b), free(x0);
        free_lin(&L);
    }
    TU_DONE();
}

/* ---- PrimalDual ------------------------------------------------------------------------------ */

/* pyproximal's PrimalDual with f = sf/2 ||x - d||^2 (L2 without an operator) and g = sg ||.||_1
 * (its dual prox: the clip to [-sg, sg]) on nparts stacked blocks of A (A_k: M x N each; plain:
 * one). x: N values, y: nparts M values. */
typedef struct {
    const double *G[3];
    int nparts;
    int64_t M, N;
} sys_t;

static void sys_mv(const sys_t *S, const double *x, double *y)
{
    for (int k = 0; k < S->nparts; k++) mv(S->G[k], S->M, S->N, x, y + k * S->M, 0);
}

static void sys_rmv(const sys_t *S, const double *y, double *x)
{
    double *t = calloc((size_t)S->N + 1, 8);
    for (int64_t j = 0; j < S->N; j++) x[j] = 0;
    for (int k = 0; k < S->nparts; k++) {
        mv(S->G[k], S->M, S->N, y + k * S->M, t, 1);
        for (int64_t j = 0; j < S->N; j++) x[j] += t[j];
    }
    free(t);
}

/* The dual prox of g on y (in place): L1 (l21 0) clips each element, L21 scales each group
 * (element i of every part) by sg / max(||group||, sg). */
static void g_dual(const sys_t *S, int l21, double sg, double *y)
{
    for (int64_t i = 0; i < S->M; i++) {
        if (!l21) {
            for (int k = 0; k < S->nparts; k++) y[k * S->M + i] = clip(y[k * S->M + i], sg);
            continue;
        }
        double s = 0;
        for (int k = 0; k < S->nparts; k++) s += y[k * S->M + i] * y[k * S->M + i];
        s = sqrt(s);
        const double f = sg / (s > sg ? s : sg);
        for (int k = 0; k < S->nparts; k++) y[k * S->M + i] *= f;
    }
}

static void ref_pd(const sys_t *S, int l21, double sf, const double *dv, double sg, double *x, double *y,
                   const double *tau, const double *mu, int nsteps, const double *z, double theta, int64_t niter,
                   int gfirst)
{
    const int64_t N = S->N, MY = S->M * S->nparts;
    double *xold = calloc((size_t)N + 1, 8), *xhat = calloc((size_t)N + 1, 8), *aty = calloc((size_t)N + 1, 8);
    double *ax = calloc((size_t)MY + 1, 8);
    memcpy(xhat, x, (size_t)N * 8);
    for (int64_t it = 0; it < niter; it++) {
        const double t = tau[nsteps > 1 ? it : 0], m = mu[nsteps > 1 ? it : 0];
        memcpy(xold, x, (size_t)N * 8);
        for (int step = 0; step < 2; step++) {
            if ((step == 0) == (gfirst != 0)) { /* the y-step */
                sys_mv(S, xhat, ax);
                for (int64_t i = 0; i < MY; i++) y[i] = y[i] + m * ax[i];
                g_dual(S, l21, sg, y);
            } else { /* the x-step */
                sys_rmv(S, y, aty);
                if (z)
                    for (int64_t j = 0; j < N; j++) aty[j] += z[j];
                for (int64_t j = 0; j < N; j++) {
                    const double u = x[j] - t * aty[j];
                    x[j] = (u + t * sf * dv[j]) / (1 + t * sf);
                }
                for (int64_t j = 0; j < N; j++) xhat[j] = x[j] + theta * (x[j] - xold[j]);
            }
        }
    }
    free(xold), free(xhat), free(aty), free(ax);
}

static void test_primal_dual(void **state)
{
    (void)state;
    const int64_t M = 2 * tu_size + 3, N = 3 * tu_size + 1, niter = 9;
    const double sf = 0.8, sg = 0.35;
    for (int bcast = 0; bcast < 2; bcast++) {
        lin_t L = make_lin(bcast, M, N, 4);
        double *d = seq(N, 5), *x0 = seq(N, 6), *y0 = seq(M, 7), *zv = seq(N, 8);
        plm_array_t da = arr(L.op, 0, d), x = arr(L.op, 0, x0), y = arr(L.op, 1, y0), za = arr(L.op, 0, zv);
        plm_prox_t f = NULL, g = NULL;
        TU_OK(plm_prox_create_l2(NULL, da, NULL, sf, 1.0, 1, 10, 0.0, NULL, 1, PLM_L2_CGLS, &f));
        TU_OK(plm_prox_create_l1(sg, &g));
        double taus[9], mus[9];
        for (int i = 0; i < 9; i++) taus[i] = 0.3 + 0.02 * i, mus[i] = 0.4 - 0.01 * i;
        const sys_t S = {{L.G}, 1, M, N};
        for (int gfirst = 0; gfirst < 2; gfirst++)
            for (int usey0 = 0; usey0 < 2; usey0++)
                for (int withz = 0; withz < 2; withz++)
                    for (int seqsteps = 0; seqsteps < 2; seqsteps++) {
                        const double theta = withz ? 0.6 : 1.0;
                        double *wx = seq(N, 6), *wy = usey0 ? seq(M, 7) : calloc((size_t)M + 1, 8);
                        ref_pd(&S, 0, sf, d, sg, wx, wy, taus, mus, seqsteps ? 9 : 1, withz ? zv : NULL, theta, niter,
                               gfirst);
                        TU_OK(plm_array_set_global(x, x0, tu_bytes(PLM_FLOAT64, N)));
                        TU_OK(plm_array_set_global(y, y0, tu_bytes(PLM_FLOAT64, M)));
                        const int64_t ns = seqsteps ? 9 : 1;
                        TU_CHECK_OK(plm_solve_primal_dual(f, g, L.op, x, y, usey0, taus, ns, mus, ns, withz ? za : NULL,
                                                          theta, niter, gfirst, NULL));
                        char what[160];
                        snprintf(what, sizeof what, "PrimalDual %s gfirst %d y0 %d z %d steps %lld",
                                 bcast ? "BROADCAST" : "SCATTER", gfirst, usey0, withz, (long long)ns);
                        expect_global(x, wx, N, what);
                        expect_global(y, wy, M, what);
                        free(wx), free(wy);
                    }
        /* with show: the cost history holds J = f + g(A x) + z^T x per iteration */
        plm_solver_info_t quiet = NULL;
        TU_OK(plm_solver_info_create(&quiet));
        TU_OK(plm_solver_info_set_show(quiet, 1)); /* prints on rank 0: the table is part of the API */
        TU_OK(plm_array_set_global(x, x0, tu_bytes(PLM_FLOAT64, N)));
        TU_CHECK_OK(plm_solve_primal_dual(f, g, L.op, x, y, 0, taus, 1, mus, 1, za, 1.0, 3, 1, quiet));
        double cost[3] = {0};
        int64_t nw = 0, its = 0;
        TU_CHECK_OK(plm_solver_info_cost(quiet, cost, 3, &nw));
        TU_CHECK_OK(plm_solver_info_iterations(quiet, &its));
        TU_EXPECT(nw == 3 && its == 3, "PrimalDual show: %lld costs, %lld iterations", (long long)nw, (long long)its);
        {
            double *wx = seq(N, 6), *wy = calloc((size_t)M + 1, 8), *ax = calloc((size_t)M + 1, 8);
            ref_pd(&S, 0, sf, d, sg, wx, wy, taus, mus, 1, zv, 1.0, 3, 1);
            mv(L.G, M, N, wx, ax, 0);
            double J = 0;
            for (int64_t j = 0; j < N; j++) J += 0.5 * sf * (wx[j] - d[j]) * (wx[j] - d[j]) + zv[j] * wx[j];
            for (int64_t i = 0; i < M; i++) J += sg * fabs(ax[i]);
            TU_EXPECT(fabs(cost[2] - J) <= 1e-10 * (fabs(J) + 1), "PrimalDual J %.17g want %.17g", cost[2], J);
            free(wx), free(wy), free(ax);
        }
        plm_solver_info_destroy(&quiet);
        /* bad arguments on one rank */
        const int last = tu_rank == tu_size - 1;
        const double one = 1.0, bad = -1.0;
        TU_EXPECT_ERR(plm_solve_primal_dual(f, g, L.op, x, y, 0, last ? &bad : &one, 1, &one, 1, NULL, 1.0, 2, 1, NULL),
                      PLM_ERR_INVALID_ARG);
        TU_EXPECT_ERR(plm_solve_primal_dual(f, g, L.op, x, y, 0, taus, last ? 2 : 1, &one, 1, NULL, 1.0, 9, 1, NULL),
                      PLM_ERR_SIZE_MISMATCH);
        TU_EXPECT_ERR2(plm_solve_primal_dual(f, g, L.op, x, last ? x : y, 0, &one, 1, &one, 1, NULL, 1.0, 2, 1, NULL),
                       PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
        TU_EXPECT_ERR(plm_solve_primal_dual(f, g, last ? NULL : L.op, x, y, 0, &one, 1, &one, 1, NULL, 1.0, 2, 1, NULL),
                      PLM_ERR_INVALID_ARG);
        plm_prox_destroy(&f);
        plm_prox_destroy(&g);
        plm_array_destroy(&da), plm_array_destroy(&x), plm_array_destroy(&y), plm_array_destroy(&za);
        free(d), free(x0), free(y0), free(zv);
        free_lin(&L);
    }
    TU_DONE();
}

/* PrimalDual with y a stack on A = [G1; G2] (plm_op_stacked_vstack), g = L21(2) or L1 on the
 * stack: total variation's shape. */
static void test_primal_dual_stacked(void **state)
{
    (void)state;
    const int64_t M = 2 * tu_size + 1, N = 2 * tu_size + 2, niter = 8;
    const double sf = 1.1, sg = 0.25;
    lin_t L1 = make_lin(0, M, N, 9), L2 = make_lin(0, M, N, 10);
    const plm_const_op_t parts[2] = {L1.op, L2.op};
    plm_op_t A = NULL;
    TU_OK(plm_op_stacked_vstack(2, parts, &A));
    double *d = seq(N, 11), *x0 = seq(N, 12);
    plm_array_t da = arr(L1.op, 0, d), x = arr(L1.op, 0, x0), ym[2] = {arr(L1.op, 1, NULL), arr(L2.op, 1, NULL)};
    plm_stacked_t y = NULL;
    TU_OK(plm_stacked_create(2, ym, &y));
    plm_prox_t f = NULL, gs[2] = {NULL, NULL}, l2g = NULL;
    TU_OK(plm_prox_create_l2(NULL, da, NULL, sf, 1.0, 1, 10, 0.0, NULL, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(sg, &gs[0]));
    TU_OK(plm_prox_create_l21(2, sg, &gs[1]));
    const sys_t S = {{L1.G, L2.G}, 2, M, N};
    const double tau = 0.3, mu = 0.45;
    for (int l21 = 0; l21 < 2; l21++)
        for (int gfirst = 0; gfirst < 2; gfirst++) {
            double *wx = seq(N, 12), *wy = calloc((size_t)(2 * M) + 1, 8);
            ref_pd(&S, l21, sf, d, sg, wx, wy, &tau, &mu, 1, NULL, 1.0, niter, gfirst);
            TU_OK(plm_array_set_global(x, x0, tu_bytes(PLM_FLOAT64, N)));
            TU_CHECK_OK(plm_solve_primal_dual_stacked(f, gs[l21], A, x, y, 0, &tau, 1, &mu, 1, NULL, 1.0, niter, gfirst,
                                                      NULL));
            char what[120];
            snprintf(what, sizeof what, "PrimalDual stacked %s gfirst %d", l21 ? "L21" : "L1", gfirst);
            expect_global(x, wx, N, what);
            expect_global(ym[0], wy, M, what);
            expect_global(ym[1], wy + M, M, what);
            free(wx), free(wy);
        }
    /* an operator holding arrays cannot run on the stacked y; the plain call needs a plain A */
    TU_OK(plm_prox_create_l2(NULL, NULL, NULL, 1.0, 1.0, 1, 10, 0.0, NULL, 1, PLM_L2_CGLS, &l2g));
    TU_EXPECT_ERR(plm_solve_primal_dual_stacked(f, l2g, A, x, y, 0, &tau, 1, &mu, 1, NULL, 1.0, 2, 1, NULL),
                  PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_solve_primal_dual(f, gs[0], A, x, ym[0], 0, &tau, 1, &mu, 1, NULL, 1.0, 2, 1, NULL),
                  PLM_ERR_INVALID_ARG);
    plm_prox_destroy(&l2g);
    plm_prox_destroy(&f), plm_prox_destroy(&gs[0]), plm_prox_destroy(&gs[1]);
    plm_stacked_destroy(&y);
    plm_array_destroy(&ym[0]), plm_array_destroy(&ym[1]), plm_array_destroy(&x), plm_array_destroy(&da);
    plm_op_destroy(&A);
    free(d), free(x0);
    free_lin(&L1), free_lin(&L2);
    TU_DONE();
}

/* ---- AdaptivePrimalDual ------------------------------------------------------------------------ */

static double norm2(const double *v, int64_t n) { return sqrt(dotv(v, v, n)); }

/* pyproximal's AdaptivePrimalDual (f, g as in ref_pd); z needs a square A (the A^H z term).
 * Returns the iterations run; steps: taus, mus, alphas (niter + 1 each). */
static int64_t ref_apd(const sys_t *S, int l21, double sf, const double *dv, double sg, double *x, const double *z,
                       double tau, double mu, double alpha, double eta, double s, double delta, int64_t niter, double tol,
                       double *steps)
{
    const int64_t N = S->N, MY = S->M * S->nparts, n1 = niter + 1;
    double *y = calloc((size_t)MY + 1, 8), *ax = calloc((size_t)MY + 1, 8), *aty = calloc((size_t)N + 1, 8);
    double *xold = calloc((size_t)N + 1, 8), *yold = calloc((size_t)MY + 1, 8), *axold = calloc((size_t)MY + 1, 8);
    double *atyold = calloc((size_t)N + 1, 8), *atz = calloc((size_t)N + 1, 8), *r = calloc((size_t)N + 1, 8);
    double *ry = calloc((size_t)MY + 1, 8);
    if (z) sys_rmv(S, z, atz); /* a square plain A: z on its range */
    steps[0] = tau, steps[n1] = mu, steps[2 * n1] = alpha;
    double p = tol + 1, d = tol + 1;
    int64_t it = 0;
    while (it < niter && p > tol && d > tol) {
        memcpy(xold, x, (size_t)N * 8);
        memcpy(yold, y, (size_t)MY * 8);
        memcpy(axold, ax, (size_t)MY * 8);
        memcpy(atyold, aty, (size_t)N * 8);
        if (z)
            for (int64_t j = 0; j < N; j++) aty[j] += z[j];
        for (int64_t j = 0; j < N; j++) {
            const double u = x[j] - tau * aty[j];
            x[j] = (u + tau * sf * dv[j]) / (1 + tau * sf);
        }
        sys_mv(S, x, ax);
        for (int64_t i = 0; i < MY; i++) y[i] = y[i] + mu * (2 * ax[i] - axold[i]);
        g_dual(S, l21, sg, y);
        sys_rmv(S, y, aty);
        for (int64_t j = 0; j < N; j++)
            r[j] = (xold[j] - x[j]) / tau - (atyold[j] - aty[j]) + (z ? -atz[j] + z[j] : 0);
        for (int64_t i = 0; i < MY; i++) ry[i] = (yold[i] - y[i]) / mu - (axold[i] - ax[i]);
        p = norm2(r, N);
        d = norm2(ry, MY);
        if (p > s * d * delta) {
            tau /= 1 - alpha;
            mu *= 1 - alpha;
            alpha *= eta;
        } else if (p < s * d / delta) {
            tau *= 1 - alpha;
            mu /= 1 - alpha;
            alpha *= eta;
        }
        it++;
        steps[it] = tau, steps[n1 + it] = mu, steps[2 * n1 + it] = alpha;
    }
    free(y), free(ax), free(aty), free(xold), free(yold), free(axold), free(atyold), free(atz), free(r), free(ry);
    return it;
}

static void test_adaptive_primal_dual(void **state)
{
    (void)state;
    const int64_t N = 3 * tu_size + 2, niter = 15;
    const double sf = 0.9, sg = 0.3;
    lin_t L = make_lin(0, N, N, 13), L2 = make_lin(0, N, N, 14); /* square, range = domain */
    const plm_const_op_t parts[2] = {L.op, L2.op};
    plm_op_t A2 = NULL;
    TU_OK(plm_op_stacked_vstack(2, parts, &A2));
    double *d = seq(N, 15), *x0 = seq(N, 16), *zv = seq(N, 17);
    plm_array_t da = arr(L.op, 0, d), x = arr(L.op, 0, x0), za = arr(L.op, 0, zv);
    plm_prox_t f = NULL, g = NULL, g21 = NULL;
    TU_OK(plm_prox_create_l2(NULL, da, NULL, sf, 1.0, 1, 10, 0.0, NULL, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(sg, &g));
    TU_OK(plm_prox_create_l21(2, sg, &g21));
    const int64_t n1 = niter + 1;
    double *steps = calloc((size_t)(3 * n1), 8), *wsteps = calloc((size_t)(3 * n1), 8);
    for (int c = 0; c < 4; c++) { /* plain A without and with z; the stacked A with L1 and L21 */
        const int stacked = c >= 2, withz = c == 1, l21 = c == 3;
        const sys_t S = stacked ? (sys_t){{L.G, L2.G}, 2, N, N} : (sys_t){{L.G}, 1, N, N};
        double *wx = seq(N, 16);
        const int64_t wit = ref_apd(&S, l21, sf, d, sg, wx, withz ? zv : NULL, 0.6, 0.5, 0.5, 0.95, 1.0, 1.5, niter,
                                    1e-10, wsteps);
        TU_OK(plm_array_set_global(x, x0, tu_bytes(PLM_FLOAT64, N)));
        for (int64_t i = 0; i < 3 * n1; i++) steps[i] = -7;
        plm_solver_info_t info = NULL;
        TU_OK(plm_solver_info_create(&info));
        TU_CHECK_OK(plm_solve_adaptive_primal_dual(f, l21 ? g21 : g, stacked ? A2 : L.op, x, withz ? za : NULL, 0.6, 0.5,
                                                   0.5, 0.95, 1.0, 1.5, niter, 1e-10, steps, 3 * n1, info));
        int64_t its = -1;
        TU_CHECK_OK(plm_solver_info_iterations(info, &its));
        char what[120];
        snprintf(what, sizeof what, "AdaptivePrimalDual %s%s%s", stacked ? "stacked" : "plain", withz ? " z" : "",
                 l21 ? " L21" : "");
        TU_EXPECT(its == wit, "%s: %lld iterations, want %lld", what, (long long)its, (long long)wit);
        expect_global(x, wx, N, what);
        int bad = 0;
        for (int k = 0; k < 3; k++)
            for (int64_t i = 0; i <= wit; i++) {
                const double a = steps[k * n1 + i], b = wsteps[k * n1 + i];
                bad += !(fabs(a - b) <= 1e-12 * fabs(b));
            }
        TU_EXPECT(bad == 0, "%s: %d steps differ", what, bad);
        plm_solver_info_destroy(&info);
        free(wx);
    }
    /* arguments: z with a stacked A, steps of the wrong length, alpha out of (0, 1) on one rank */
    const int last = tu_rank == tu_size - 1;
    TU_EXPECT_ERR(plm_solve_adaptive_primal_dual(f, g, A2, x, za, 0.6, 0.5, 0.5, 0.95, 1, 1.5, 3, 1e-10, NULL, 0, NULL),
                  PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_solve_adaptive_primal_dual(f, g, L.op, x, NULL, 0.6, 0.5, 0.5, 0.95, 1, 1.5, 3, 1e-10, steps,
                                                 last ? 5 : 12, NULL),
                  PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_solve_adaptive_primal_dual(f, g, L.op, x, NULL, 0.6, 0.5, last ? 1.0 : 0.5, 0.95, 1, 1.5, 3, 1e-10,
                                                 NULL, 0, NULL),
                  PLM_ERR_INVALID_ARG);
    plm_prox_destroy(&f), plm_prox_destroy(&g), plm_prox_destroy(&g21);
    plm_array_destroy(&da), plm_array_destroy(&x), plm_array_destroy(&za);
    plm_op_destroy(&A2);
    free(d), free(x0), free(zv), free(steps), free(wsteps);
    free_lin(&L), free_lin(&L2);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_pg_backtracking),
        TU_TEST(test_primal_dual),
        TU_TEST(test_primal_dual_stacked),
        TU_TEST(test_adaptive_primal_dual),
    };
    return plm_run_group_tests_mpi(tests);
}
