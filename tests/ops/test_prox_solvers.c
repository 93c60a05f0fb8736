/* The L2 proximal operator (with and without an operator; inner CG and CGLS; warm start;
 * value and gradient) and the proximal solvers (ProximalGradient with every acceleration, eta
 * and epsg form, tol; ADMML2 with gfirst and z0, and with a stacked z on a stacked vstack A)
 * against serial float64 implementations of the
 * same iterations written here, on a block-diagonal operator (SCATTER, uneven blocks) and a
 * broadcast one (BROADCAST), to 1e-10. Bad arguments fail on every rank. */
#include "ops/ops_test_util.h"

#define TOL 1e-10

/* ---- a distributed operator and its global matrix --------------------------------------- */

typedef struct {
    int64_t M, N;
    double *G; /* M x N, row-major, the global matrix */
    plm_op_t op;
} lin_t;

static double entry(int64_t i, int64_t j, int seed)
{
    return (i == j ? 2.0 : 0.0) + 0.3 * sin(0.7 * (double)i + 1.3 * (double)j + seed);
}

/* bcast: the same dense M x N on every rank (BROADCAST vectors); else block-diagonal with
 * rank r's block on rows and columns split(M|N, P, r) (SCATTER, uneven). */
static lin_t make_lin(int bcast, int64_t M, int64_t N, int seed)
{
    lin_t L = {M, N, calloc((size_t)(M * N), sizeof(double)), NULL};
    int64_t ro = 0, co = 0, mine_r = 0, mine_c = 0, my_ro = 0, my_co = 0;
    for (int r = 0; r < (bcast ? 1 : tu_size); r++) {
        const int64_t m = bcast ? M : tu_split(M, tu_size, r), n = bcast ? N : tu_split(N, tu_size, r);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) L.G[(ro + i) * N + co + j] = entry(ro + i, co + j, seed);
        if (bcast || r == tu_rank) {
            mine_r = m;
            mine_c = n;
            my_ro = ro;
            my_co = co;
        }
        ro += m;
        co += n;
    }
    double *blk = calloc((size_t)(mine_r * mine_c + 1), sizeof(double));
    for (int64_t i = 0; i < mine_r; i++)
        for (int64_t j = 0; j < mine_c; j++) blk[i * mine_c + j] = L.G[(my_ro + i) * N + my_co + j];
    plm_op_t d = NULL;
    TU_OK(plm_op_dense(PLM_FLOAT64, mine_r, mine_c, blk, tu_bytes(PLM_FLOAT64, mine_r * mine_c), 0, 0, &d));
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

/* An array on op's domain (range) holding the global values g. */
static plm_array_t arr(plm_const_op_t op, int range, const double *g)
{
    plm_layout_t l = NULL;
    plm_array_t x = NULL;
    TU_OK(range ? plm_op_range(op, &l) : plm_op_domain(op, &l));
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    int64_t n = 0; /* 1-D layouts */
    TU_OK(plm_layout_global_shape(l, &n));
    if (g) TU_OK(plm_array_set_global(x, g, tu_bytes(PLM_FLOAT64, n)));
    plm_layout_destroy(&l);
    return x;
}

static void global_of(plm_const_array_t x, double *out, int64_t n)
{
    TU_CHECK_OK(plm_array_asarray(x, 0, out, tu_bytes(PLM_FLOAT64, n)));
}

static double *seq(int64_t n, int seed)
{
    double *v = calloc((size_t)n + 1, sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = sin(0.9 * (double)i + seed) + 0.1 * seed;
    return v;
}

static void expect_vec(const double *got, const double *want, int64_t n, const char *what)
{
    double scale = 0, err = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        err = fmax(err, fabs(got[i] - want[i]));
    }
    TU_EXPECT(err <= TOL * (scale + 1e-300) && !isnan(err), "%s: max error %.3g (scale %.3g)", what, err, scale);
}

/* ---- serial building blocks --------------------------------------------------------------- */

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

/* [s1 G1; s2 G2] with G2 NULL for the identity (M2 = N). */
typedef struct {
    const double *G1, *G2;
    int64_t M1, M2, N;
    double s1, s2;
} stack2_t;

static void stack_mv(const stack2_t *S, const double *x, double *y, int adj)
{
    double *t = calloc((size_t)(S->M1 + S->M2 + S->N) + 1, sizeof(double));
    if (!adj) {
        mv(S->G1, S->M1, S->N, x, y, 0);
        for (int64_t i = 0; i < S->M1; i++) y[i] *= S->s1;
        if (S->G2) mv(S->G2, S->M2, S->N, x, y + S->M1, 0);
        else
            for (int64_t i = 0; i < S->N; i++) y[S->M1 + i] = x[i];
        for (int64_t i = 0; i < S->M2; i++) y[S->M1 + i] *= S->s2;
    } else {
        mv(S->G1, S->M1, S->N, x, y, 1);
        if (S->G2) mv(S->G2, S->M2, S->N, x + S->M1, t, 1);
        else
            for (int64_t i = 0; i < S->N; i++) t[i] = x[S->M1 + i];
        for (int64_t j = 0; j < S->N; j++) y[j] = S->s1 * y[j] + S->s2 * t[j];
    }
    free(t);
}

/* CGLS (PyLops' rules, no damping) from x. */
static void serial_cgls_from(const stack2_t *S, const double *y, double *x, int64_t niter, double tol)
{
    const int64_t M = S->M1 + S->M2, N = S->N;
    double *s = calloc((size_t)M, 8), *q = calloc((size_t)M, 8), *r = calloc((size_t)N, 8), *c = calloc((size_t)N, 8);
    stack_mv(S, x, s, 0);
    for (int64_t i = 0; i < M; i++) s[i] = y[i] - s[i];
    stack_mv(S, s, r, 1);
    for (int64_t j = 0; j < N; j++) c[j] = r[j];
    stack_mv(S, c, q, 0);
    double kold = dotv(r, r, N);
    for (int64_t it = 0; it < niter && kold > tol; it++) {
        const double a = kold / dotv(q, q, M);
        for (int64_t j = 0; j < N; j++) x[j] += a * c[j];
        for (int64_t i = 0; i < M; i++) s[i] -= a * q[i];
        stack_mv(S, s, r, 1);
        const double k = dotv(r, r, N);
        for (int64_t j = 0; j < N; j++) c[j] = r[j] + (k / kold) * c[j];
        stack_mv(S, c, q, 0);
        kold = k;
    }
    free(s);
    free(q);
    free(r);
    free(c);
}

/* CG on (I + ts G^T G) x = y from x. */
static void serial_cg_l2(const double *G, int64_t M, int64_t N, double ts, const double *y, double *x, int64_t niter,
                         double tol)
{
    double *r = calloc((size_t)N, 8), *c = calloc((size_t)N, 8), *ac = calloc((size_t)N, 8), *t = calloc((size_t)M, 8);
#define APPLY(in, out)                                                              \
    do {                                                                            \
        mv(G, M, N, in, t, 0);                                                      \
        mv(G, M, N, t, out, 1);                                                     \
        for (int64_t j = 0; j < N; j++) out[j] = in[j] + ts * out[j];               \
    } while (0)
    APPLY(x, r);
    for (int64_t j = 0; j < N; j++) c[j] = r[j] = y[j] - r[j];
    double kold = dotv(r, r, N);
    for (int64_t it = 0; it < niter && kold > tol; it++) {
        APPLY(c, ac);
        const double a = kold / dotv(c, ac, N);
        for (int64_t j = 0; j < N; j++) {
            x[j] += a * c[j];
            r[j] -= a * ac[j];
        }
        const double k = dotv(r, r, N);
        for (int64_t j = 0; j < N; j++) c[j] = r[j] + (k / kold) * c[j];
        kold = k;
    }
#undef APPLY
    free(r);
    free(c);
    free(ac);
    free(t);
}

/* The serial L2 of this file: f = sigma/2 ||G x - b||^2 + alpha q.x. */
typedef struct {
    const double *G, *b, *q;
    int64_t M, N, niter;
    double sigma, alpha, tol;
    int cg, warm;
    double *x0;
} sl2_t;

static void sl2_prox(sl2_t *p, const double *x, double tau, double *out)
{
    const int64_t N = p->N, M = p->M;
    const double ts = tau * p->sigma;
    double *sol = calloc((size_t)N + 1, 8);
    memcpy(sol, p->x0, (size_t)N * 8);
    if (p->cg) {
        double *optb = calloc((size_t)N + 1, 8), *y = calloc((size_t)N + 1, 8);
        mv(p->G, M, N, p->b, optb, 1);
        for (int64_t j = 0; j < N; j++) y[j] = x[j] + tau * (p->sigma * optb[j]) - (p->q ? tau * p->alpha * p->q[j] : 0);
        serial_cg_l2(p->G, M, N, ts, y, sol, p->niter, p->tol);
        free(optb);
        free(y);
    } else {
        double *y = calloc((size_t)(M + N) + 1, 8);
        for (int64_t i = 0; i < M; i++) y[i] = sqrt(ts) * p->b[i];
        for (int64_t j = 0; j < N; j++) y[M + j] = x[j] - (p->q ? tau * p->alpha * p->q[j] : 0);
        stack2_t S = {p->G, NULL, M, N, N, sqrt(ts), 1.0};
        serial_cgls_from(&S, y, sol, p->niter, p->tol);
        free(y);
    }
    memcpy(out, sol, (size_t)N * 8);
    if (p->warm) memcpy(p->x0, sol, (size_t)N * 8);
    free(sol);
}

static void sl2_grad(const sl2_t *p, const double *x, double *g)
{
    double *r = calloc((size_t)p->M + 1, 8);
    mv(p->G, p->M, p->N, x, r, 0);
    for (int64_t i = 0; i < p->M; i++) r[i] -= p->b[i];
    mv(p->G, p->M, p->N, r, g, 1);
    for (int64_t j = 0; j < p->N; j++) g[j] = p->sigma * g[j] + (p->q ? p->alpha * p->q[j] : 0);
    free(r);
}

static double sl2_value(const sl2_t *p, const double *x)
{
    double *r = calloc((size_t)p->M + 1, 8);
    mv(p->G, p->M, p->N, x, r, 0);
    for (int64_t i = 0; i < p->M; i++) r[i] -= p->b[i];
    double f = p->sigma / 2 * dotv(r, r, p->M) + (p->q ? p->alpha * dotv(p->q, x, p->N) : 0);
    free(r);
    return f;
}

static double soft(double v, double t) { return v == 0 ? 0 : v * (fmax(fabs(v) - t, 0) / fabs(v)); }

/* ---- L2 prox, value, gradient --------------------------------------------------------------- */

static void test_l2_with_operator(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11;
    for (int bc = 0; bc < 2; bc++)
        for (int cg = 0; cg < 2; cg++)
            for (int withq = 0; withq < 2; withq++) {
                lin_t L = make_lin(bc, M, N, 1);
                double *b = seq(M, 2), *q = seq(N, 3), *x0 = seq(N, 4), *xin = seq(N, 5);
                double *want = calloc((size_t)N, 8), *got = calloc((size_t)N, 8);
                plm_array_t ba = arr(L.op, 1, b), qa = arr(L.op, 0, q), x0a = arr(L.op, 0, x0), xa = arr(L.op, 0, xin),
                            out = arr(L.op, 0, NULL);
                plm_prox_t p = NULL;
                TU_OK(plm_prox_create_l2(L.op, ba, withq ? qa : NULL, 0.7, 0.3, 1, 6, 1e-14, x0a, 1,
                                         cg ? PLM_L2_CG : PLM_L2_CGLS, &p));
                sl2_t s = {L.G, b, withq ? q : NULL, M, N, 6, 0.7, 0.3, 1e-14, cg, 1, x0};
                char what[128];
                for (int call = 0; call < 2; call++) { /* the second call starts warm */
                    snprintf(what, sizeof what, "L2 prox %s %s%s call %d", bc ? "BROADCAST" : "SCATTER",
                             cg ? "CG" : "CGLS", withq ? " q" : "", call);
                    TU_CHECK_OK(plm_prox_apply(p, xa, 0.4, out));
                    sl2_prox(&s, xin, 0.4, want);
                    global_of(out, got, N);
                    expect_vec(got, want, N, what);
                }
                double v = 0;
                TU_CHECK_OK(plm_prox_value(p, xa, &v));
                const double vref = sl2_value(&s, xin);
                TU_EXPECT(fabs(v - vref) <= TOL * fabs(vref), "L2 value %.17g want %.17g", v, vref);
                TU_CHECK_OK(plm_prox_grad(p, xa, out));
                sl2_grad(&s, xin, want);
                global_of(out, got, N);
                expect_vec(got, want, N, "L2 grad");
                /* x0 given by the caller is copied: changing it later changes nothing. */
                TU_CHECK_OK(plm_array_fill(x0a, 100, 0));
                plm_prox_destroy(&p);
                plm_array_t arrays[] = {ba, qa, x0a, xa, out};
                for (int i = 0; i < 5; i++) plm_array_destroy(&arrays[i]);
                free(b), free(q), free(x0), free(xin), free(want), free(got);
                free_lin(&L);
            }
    TU_DONE();
}

/* Without an operator: closed-form prox, value and gradient for every dtype and partition. */
static void test_l2_closed_form(void **state)
{
    (void)state;
    const double sigma = 0.8, alpha = 0.4, tau = 0.3;
    for (int c = 0; c < TU_NCASES; c++)
        for (int d = 0; d < 4; d++)
            for (int pi = 0; pi < 2; pi++)
                for (int form = 0; form < 3; form++) { /* b and q, b only, neither */
                    const tu_case_t *k = &TU_CASES[c];
                    const plm_dtype_t dt = TU_DTYPES[d];
                    const int64_t n = tu_prod(k->shape, 0, k->ndim);
                    double *x = tu_alloc(n), *b = tu_alloc(n), *q = tu_alloc(n), *want = tu_alloc(n),
                           *gwant = tu_alloc(n);
                    tu_gen(x, n, c + d, dt, 1);
                    tu_gen(b, n, c + 5, dt, 0);
                    tu_gen(q, n, c + 9, dt, 0);
                    const int hb = form < 2, hq = form == 0;
                    double vref = 0, qx = 0;
                    for (int64_t i = 0; i < 2 * n; i++) {
                        const double bi = hb ? b[i] : 0, qi = hq ? q[i] : 0;
                        want[i] = (x[i] + tau * sigma * bi - tau * alpha * qi) / (1 + tau * sigma);
                        gwant[i] = sigma * (x[i] - bi) + alpha * qi;
                        vref += (x[i] - bi) * (x[i] - bi);
                    }
                    for (int64_t i = 0; i < n; i++) { /* Re(q^T x) */
                        if (hq) qx += q[2 * i] * x[2 * i] - q[2 * i + 1] * x[2 * i + 1];
                        tu_round(dt, &want[2 * i], &want[2 * i + 1]);
                        tu_round(dt, &gwant[2 * i], &gwant[2 * i + 1]);
                    }
                    vref = sigma / 2 * vref + alpha * qx;
                    plm_array_t xa = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, x),
                                ba = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, b),
                                qa = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, q),
                                out = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                    plm_prox_t p = NULL;
                    TU_OK(plm_prox_create_l2(NULL, hb ? ba : NULL, hq ? qa : NULL, sigma, alpha, 1, 10, 0, NULL, 1,
                                             PLM_L2_CGLS, &p));
                    char what[160];
                    snprintf(what, sizeof what, "L2 closed form %d %s %s %s", form, k->name, tu_dtname(dt),
                             tu_partname(TU_PARTS[pi]));
                    TU_CHECK_OK(plm_prox_apply(p, xa, tau, out));
                    tu_check_local(out, want, tu_rtol(dt) * 10, what);
                    TU_CHECK_OK(plm_prox_grad(p, xa, out));
                    tu_check_local(out, gwant, tu_rtol(dt) * 10, what);
                    double v = 0;
                    TU_CHECK_OK(plm_prox_value(p, xa, &v));
                    TU_EXPECT(fabs(v - vref) <= tu_rtol(dt) * 10 * (fabs(vref) + 1), "%s: value %.17g want %.17g", what,
                              v, vref);
                    TU_CHECK_OK(plm_prox_apply(p, xa, tau, xa)); /* in place */
                    tu_check_local(xa, want, tu_rtol(dt) * 10, what);
                    plm_prox_destroy(&p);
                    plm_array_t arrays[] = {xa, ba, qa, out};
                    for (int i = 0; i < 4; i++) plm_array_destroy(&arrays[i]);
                    free(x), free(b), free(q), free(want), free(gwant);
                }
    TU_DONE();
}

/* ---- ProximalGradient ------------------------------------------------------------------------- */

/* Serial ProximalGradient with f = L2(G, b, sigma_f), g = L1(sigma_g), as PyLops-MPI's loop. */
static int64_t serial_pg(const sl2_t *f, double sg, double *x, double tau, const double *epsg, int neps, double eta,
                         int64_t niter, int accel, double tol, double *J)
{
    const int64_t N = f->N;
    double *y = calloc((size_t)N, 8), *xold = calloc((size_t)N, 8), *gr = calloc((size_t)N, 8),
           *w = calloc((size_t)N, 8);
    memcpy(y, x, (size_t)N * 8);
    double t = 1, pfg = INFINITY;
    int64_t it = 0;
    for (; it < niter;) {
        const double eps = neps == 1 ? epsg[0] : epsg[it];
        memcpy(xold, x, (size_t)N * 8);
        const double *base = eta == 1 ? y : x;
        sl2_grad(f, base, gr);
        for (int64_t j = 0; j < N; j++) w[j] = soft(base[j] - tau * gr[j], eps * tau * sg);
        for (int64_t j = 0; j < N; j++) x[j] = eta == 1 ? w[j] : x[j] + eta * (w[j] - x[j]);
        double omega = 0;
        if (accel == PLM_ACCEL_VANDENBERGHE) omega = (double)it / (double)(it + 3);
        if (accel == PLM_ACCEL_FISTA) {
            const double told = t;
            t = (1 + sqrt(1 + 4 * t * t)) / 2;
            omega = (told - 1) / t;
        }
        for (int64_t j = 0; j < N; j++) y[j] = x[j] + omega * (x[j] - xold[j]);
        it++;
        if (tol > 0) {
            double l1 = 0;
            for (int64_t j = 0; j < N; j++) l1 += fabs(x[j]);
            const double old = pfg;
            pfg = sl2_value(f, x) + eps * sg * l1;
            *J = pfg;
            if (fabs(1 - pfg / old) < tol) break;
        }
    }
    free(y), free(xold), free(gr), free(w);
    return it;
}

static void test_proximal_gradient(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11, niter = 30;
    double epsv[30];
    for (int i = 0; i < 30; i++) epsv[i] = 1.0 + 0.02 * i;
    for (int bc = 0; bc < 2; bc++)
        for (int accel = 0; accel < 3; accel++)
            for (int variant = 0; variant < 3; variant++) { /* eta 1; eta 0.7 and epsg per iteration; tol */
                lin_t L = make_lin(bc, M, N, 3);
                double *b = seq(M, 6), *x0 = seq(N, 7), *want = seq(N, 7), *got = calloc((size_t)N, 8);
                plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0);
                plm_prox_t f = NULL, g = NULL;
                TU_OK(plm_prox_create_l2(L.op, ba, NULL, 0.9, 1.0, 1, 10, 1e-4, xa, 1, PLM_L2_CGLS, &f));
                TU_OK(plm_prox_create_l1(0.2, &g));
                const double eta = variant == 1 ? 0.7 : 1.0, tol = variant == 2 ? 1e-7 : 0.0, eps1 = 0.5;
                const double *eps = variant == 1 ? epsv : &eps1;
                const int neps = variant == 1 ? (int)niter : 1;
                sl2_t s = {L.G, b, NULL, M, N, 10, 0.9, 1.0, 1e-4, 0, 1, NULL};
                double Jref = NAN;
                const int64_t its_ref = serial_pg(&s, 0.2, want, 0.1, eps, neps, eta, niter, accel, tol, &Jref);
                plm_solver_info_t info = NULL;
                TU_OK(plm_solver_info_create(&info));
                TU_CHECK_OK(plm_solve_proximal_gradient(f, g, xa, 0.1, eps, neps, eta, niter, (plm_accel_t)accel, tol,
                                                        info));
                global_of(xa, got, N);
                char what[128];
                snprintf(what, sizeof what, "ProximalGradient %s accel %d variant %d", bc ? "BROADCAST" : "SCATTER",
                         accel, variant);
                expect_vec(got, want, N, what);
                int64_t its = -1, nc = 0;
                plm_stop_reason_t why = PLM_STOP_NONE;
                TU_CHECK_OK(plm_solver_info_iterations(info, &its));
                TU_CHECK_OK(plm_solver_info_reason(info, &why));
                TU_CHECK_OK(plm_solver_info_cost(info, NULL, 0, &nc));
                TU_EXPECT(its == its_ref, "%s: %lld iterations, serial %lld", what, (long long)its, (long long)its_ref);
                if (tol > 0) {
                    double cost[30];
                    TU_CHECK_OK(plm_solver_info_cost(info, cost, 30, &nc));
                    TU_EXPECT(nc == its && why == (its < niter ? PLM_STOP_TOLERANCE : PLM_STOP_MAX_ITERATIONS),
                              "%s: cost values %lld, reason %d", what, (long long)nc, (int)why);
                    TU_EXPECT(nc > 0 && fabs(cost[nc - 1] - Jref) <= TOL * fabs(Jref), "%s: J %.17g want %.17g", what,
                              nc > 0 ? cost[nc - 1] : NAN, Jref);
                } else {
                    TU_EXPECT(nc == 0 && why == PLM_STOP_MAX_ITERATIONS, "%s: cost values %lld, reason %d", what,
                              (long long)nc, (int)why);
                }
                plm_solver_info_destroy(&info);
                plm_prox_destroy(&f);
                plm_prox_destroy(&g);
                plm_array_destroy(&ba);
                plm_array_destroy(&xa);
                free(b), free(x0), free(want), free(got);
                free_lin(&L);
            }
    TU_DONE();
}

/* The callback sees x, the array passed to the solve, holding the current iterate at every
 * iteration (ProximalGradient moves its iterates between work arrays and x). */
typedef struct {
    int64_t n, calls;
    double *seen; /* niter x n: this rank's local block at each callback */
} seen_t;

static int record_x(void *ctx, int64_t it, plm_const_array_t x, double cost)
{
    (void)cost;
    seen_t *s = ctx;
    const void *d = NULL;
    if (plm_array_get_local_read(x, &d) != PLM_SUCCESS) return 1;
    memcpy(s->seen + (it - 1) * s->n, d, (size_t)s->n * sizeof(double));
    plm_array_restore_local_read(x, &d);
    s->calls++;
    return 0;
}

static void test_proximal_gradient_callback_x(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11, niter = 6;
    for (int accel = 0; accel < 3; accel++)
        for (int variant = 0; variant < 2; variant++) { /* eta 1; eta 0.7 with J (tol) */
            lin_t L = make_lin(0, M, N, 3);
            double *b = seq(M, 6), *x0 = seq(N, 7), *want = calloc((size_t)N + 1, 8);
            plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0);
            plm_prox_t f = NULL, g = NULL;
            TU_OK(plm_prox_create_l2(L.op, ba, NULL, 0.9, 1.0, 1, 10, 1e-4, xa, 1, PLM_L2_CGLS, &f));
            TU_OK(plm_prox_create_l1(0.2, &g));
            const double eta = variant ? 0.7 : 1.0, tol = variant ? 1e-300 : 0.0, eps = 0.5;
            int64_t nl = 0, off = 0;
            TU_OK(plm_array_local_size(xa, &nl));
            TU_OK(plm_array_local_offset(xa, &off));
            seen_t rec = {nl, 0, calloc((size_t)(niter * nl + 1), sizeof(double))};
            plm_solver_info_t info = NULL;
            TU_OK(plm_solver_info_create(&info));
            TU_OK(plm_solver_info_set_callback(info, record_x, &rec, NULL));
            TU_CHECK_OK(plm_solve_proximal_gradient(f, g, xa, 0.1, &eps, 1, eta, niter, (plm_accel_t)accel, tol, info));
            char what[128];
            snprintf(what, sizeof what, "ProximalGradient callback x, accel %d variant %d", accel, variant);
            TU_EXPECT(rec.calls == niter, "%s: %lld callbacks", what, (long long)rec.calls);
            sl2_t sf = {L.G, b, NULL, M, N, 10, 0.9, 1.0, 1e-4, 0, 1, NULL};
            for (int64_t k = 1; k <= niter && rec.calls == niter; k++) {
                double J = NAN;
                memcpy(want, x0, (size_t)N * 8);
                serial_pg(&sf, 0.2, want, 0.1, &eps, 1, eta, k, accel, tol, &J);
                char w2[160];
                snprintf(w2, sizeof w2, "%s, iteration %lld", what, (long long)k);
                expect_vec(rec.seen + (k - 1) * nl, want + off, nl, w2);
            }
            free(rec.seen);
            plm_solver_info_destroy(&info);
            plm_prox_destroy(&f);
            plm_prox_destroy(&g);
            plm_array_destroy(&ba);
            plm_array_destroy(&xa);
            free(b), free(x0), free(want);
            free_lin(&L);
        }
    TU_DONE();
}

/* ---- ADMML2 ---------------------------------------------------------------------------------- */

static void serial_admm(const lin_t *L, const lin_t *A, const double *b, double sg, double *x, double *z, int use_z0,
                        double tau, int64_t niter, int gfirst, int64_t inner_niter, double inner_tol)
{
    const int64_t N = L->N, M = L->M, K = A->M;
    double *u = calloc((size_t)K, 8), *ax = calloc((size_t)K, 8), *y = calloc((size_t)(M + K), 8);
    if (!use_z0) mv(A->G, K, N, x, z, 0);
    const double st = 1 / sqrt(tau);
    stack2_t S = {L->G, A->G, M, K, N, 1.0, st};
    for (int64_t it = 0; it < niter; it++) {
        for (int step = 0; step < 2; step++) {
            if ((step == 0) == (gfirst != 0)) { /* z-step */
                mv(A->G, K, N, x, ax, 0);
                for (int64_t k = 0; k < K; k++) z[k] = soft(ax[k] + u[k], tau * sg);
            } else { /* x-step */
                for (int64_t i = 0; i < M; i++) y[i] = b[i];
                for (int64_t k = 0; k < K; k++) y[M + k] = st * (z[k] - u[k]);
                serial_cgls_from(&S, y, x, inner_niter, inner_tol);
            }
        }
        for (int64_t k = 0; k < K; k++) u[k] = u[k] + ax[k] - z[k];
    }
    free(u), free(ax), free(y);
}

static void test_admml2(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11;
    for (int bc = 0; bc < 2; bc++)
        for (int gfirst = 0; gfirst < 2; gfirst++)
            for (int use_z0 = 0; use_z0 < 2; use_z0++) {
                lin_t L = make_lin(bc, M, N, 5), A = make_lin(bc, N, N, 8);
                double *b = seq(M, 1), *x0 = seq(N, 2), *z0 = seq(N, 3), *xw = seq(N, 2), *zw = seq(N, 3);
                double *got = calloc((size_t)N, 8);
                plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0), za = arr(A.op, 1, z0);
                plm_prox_t g = NULL;
                TU_OK(plm_prox_create_l1(0.3, &g));
                plm_solver_info_t info = NULL;
                TU_OK(plm_solver_info_create(&info));
                TU_CHECK_OK(plm_solve_admml2(g, L.op, ba, A.op, xa, za, use_z0, 0.8, 12, gfirst, 5, 0.0, info));
                serial_admm(&L, &A, b, 0.3, xw, zw, use_z0, 0.8, 12, gfirst, 5, 0.0);
                char what[128];
                snprintf(what, sizeof what, "ADMML2 %s gfirst %d z0 %d: x", bc ? "BROADCAST" : "SCATTER", gfirst, use_z0);
                global_of(xa, got, N);
                expect_vec(got, xw, N, what);
                global_of(za, got, N);
                what[strlen(what) - 1] = 'z';
                expect_vec(got, zw, N, what);
                int64_t its = 0;
                TU_CHECK_OK(plm_solver_info_iterations(info, &its));
                TU_EXPECT(its == 12, "%s: %lld iterations", what, (long long)its);
                plm_solver_info_destroy(&info);
                plm_prox_destroy(&g);
                plm_array_destroy(&ba);
                plm_array_destroy(&xa);
                plm_array_destroy(&za);
                free(b), free(x0), free(z0), free(xw), free(zw), free(got);
                free_lin(&L);
                free_lin(&A);
            }
    TU_DONE();
}

/* ADMML2 with a stacked z: A = stacked vstack [A1; A2] (N x N and K2 x N), or the composite
 * 0.7 [A1; A2] - 0.2 [A1; A2] (a stacked sum of scaled stacks), g = L1, against serial_admm on
 * the dense [A1; A2] (L1 is separable: its prox on the stack is the prox of the concatenation).
 * Also: a one-member stack with a plain A gives plm_solve_admml2's iterates. */
static void test_admml2_stacked(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11, K2 = 7, K = N + K2;
    for (int bc = 0; bc < 2; bc++)
        for (int gfirst = 0; gfirst < 2; gfirst++)
            for (int use_z0 = 0; use_z0 < 2; use_z0++) {
                const int composite = (bc + gfirst + use_z0) % 2;
                lin_t L = make_lin(bc, M, N, 5), A1 = make_lin(bc, N, N, 8), A2 = make_lin(bc, K2, N, 9);
                lin_t Acat = {K, N, calloc((size_t)(K * N), sizeof(double)), NULL};
                memcpy(Acat.G, A1.G, sizeof(double) * (size_t)(N * N));
                memcpy(Acat.G + N * N, A2.G, sizeof(double) * (size_t)(K2 * N));
                plm_op_t A = NULL;
                const plm_const_op_t parts[2] = {A1.op, A2.op};
                TU_OK(plm_op_stacked_vstack(2, parts, &A));
                if (composite) {
                    plm_op_t a7 = NULL, a2 = NULL, d = NULL;
                    TU_OK(plm_op_scale(A, 0.7, 0, &a7));
                    TU_OK(plm_op_scale(A, 0.2, 0, &a2));
                    TU_OK(plm_op_difference(a7, a2, &d));
                    plm_op_destroy(&a7);
                    plm_op_destroy(&a2);
                    plm_op_destroy(&A);
                    A = d;
                    for (int64_t i = 0; i < K * N; i++) Acat.G[i] = 0.7 * Acat.G[i] - 0.2 * Acat.G[i];
                }
                double *b = seq(M, 1), *x0 = seq(N, 2), *zw = seq(K, 3), *xw = seq(N, 2);
                double *got = calloc((size_t)K, 8);
                plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0);
                plm_array_t zm[2] = {arr(A1.op, 1, zw), arr(A2.op, 1, zw + N)};
                plm_stacked_t z = NULL;
                TU_OK(plm_stacked_create(2, zm, &z));
                plm_prox_t g = NULL;
                TU_OK(plm_prox_create_l1(0.3, &g));
                plm_solver_info_t info = NULL;
                TU_OK(plm_solver_info_create(&info));
                TU_CHECK_OK(plm_solve_admml2_stacked(g, L.op, ba, A, xa, z, use_z0, 0.8, 12, gfirst, 5, 0.0, info));
                serial_admm(&L, &Acat, b, 0.3, xw, zw, use_z0, 0.8, 12, gfirst, 5, 0.0);
                char what[128];
                snprintf(what, sizeof what, "stacked ADMML2 %s%s gfirst %d z0 %d: x", bc ? "BROADCAST" : "SCATTER",
                         composite ? " (composite A)" : "", gfirst, use_z0);
                global_of(xa, got, N);
                expect_vec(got, xw, N, what);
                global_of(zm[0], got, N);
                global_of(zm[1], got + N, K2);
                what[strlen(what) - 1] = 'z';
                expect_vec(got, zw, K, what);
                int64_t its = 0;
                TU_CHECK_OK(plm_solver_info_iterations(info, &its));
                TU_EXPECT(its == 12, "%s: %lld iterations", what, (long long)its);
                plm_solver_info_destroy(&info);
                plm_prox_destroy(&g);
                plm_stacked_destroy(&z);
                plm_op_destroy(&A);
                plm_array_destroy(&ba);
                plm_array_destroy(&xa);
                plm_array_destroy(&zm[0]);
                plm_array_destroy(&zm[1]);
                free(b), free(x0), free(zw), free(xw), free(got);
                free(Acat.G);
                free_lin(&L);
                free_lin(&A1);
                free_lin(&A2);
            }
    /* One member, a plain A, Box g: the array call's iterates exactly. */
    lin_t L = make_lin(0, M, N, 5), A1 = make_lin(0, N, N, 8);
    double *b = seq(M, 1), *x0 = seq(N, 2), *z0 = seq(N, 3), *g1 = calloc((size_t)N, 8), *g2 = calloc((size_t)N, 8);
    plm_array_t ba = arr(L.op, 1, b), x1 = arr(L.op, 0, x0), x2 = arr(L.op, 0, x0);
    plm_array_t z1 = arr(A1.op, 1, z0), z2 = arr(A1.op, 1, z0);
    plm_stacked_t z = NULL;
    TU_OK(plm_stacked_create(1, &z2, &z));
    plm_prox_t box = NULL;
    TU_OK(plm_prox_create_box(-0.2, 0.4, &box));
    TU_CHECK_OK(plm_solve_admml2(box, L.op, ba, A1.op, x1, z1, 0, 0.8, 6, 0, 5, 0.0, NULL));
    TU_CHECK_OK(plm_solve_admml2_stacked(box, L.op, ba, A1.op, x2, z, 0, 0.8, 6, 0, 5, 0.0, NULL));
    global_of(x1, g1, N);
    global_of(x2, g2, N);
    TU_EXPECT(memcmp(g1, g2, sizeof(double) * (size_t)N) == 0, "one member: x differs from the array call's");
    global_of(z1, g1, N);
    global_of(z2, g2, N);
    TU_EXPECT(memcmp(g1, g2, sizeof(double) * (size_t)N) == 0, "one member: z differs from the array call's");
    plm_prox_destroy(&box);
    plm_stacked_destroy(&z);
    plm_array_destroy(&ba);
    plm_array_destroy(&x1);
    plm_array_destroy(&x2);
    plm_array_destroy(&z1);
    plm_array_destroy(&z2);
    free(b), free(x0), free(z0), free(g1), free(g2);
    free_lin(&L);
    free_lin(&A1);
    TU_DONE();
}

/* Bad arguments of the stacked ADMML2 fail on every rank. */
static void test_admml2_stacked_errors(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11;
    lin_t L = make_lin(0, M, N, 5), A1 = make_lin(0, N, N, 8), A2 = make_lin(0, 5, N, 9);
    plm_op_t A = NULL, D = NULL;
    const plm_const_op_t parts[2] = {A1.op, A2.op};
    TU_OK(plm_op_stacked_vstack(2, parts, &A));
    TU_OK(plm_op_stacked_blockdiag(2, parts, &D));
    double *b = seq(M, 1), *x0 = seq(N, 2);
    plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0);
    plm_array_t zm[2] = {arr(A1.op, 1, NULL), arr(A2.op, 1, NULL)};
    plm_stacked_t z = NULL, z1 = NULL;
    TU_OK(plm_stacked_create(2, zm, &z));
    TU_OK(plm_stacked_create(1, zm, &z1));
    plm_prox_t g = NULL, l2 = NULL;
    TU_OK(plm_prox_create_l1(0.3, &g));
    TU_OK(plm_prox_create_l2(NULL, NULL, NULL, 1.0, 1.0, 1, 10, 0, NULL, 1, PLM_L2_CGLS, &l2));
    const int last = tu_rank == tu_size - 1;
    TU_EXPECT_ERR(plm_solve_admml2_stacked(l2, L.op, ba, A, xa, z, 0, 0.8, 2, 0, 3, 0.0, NULL), PLM_ERR_NOT_SUPPORTED);
    /* a stacked block-diagonal maps stacks, not x, to z */
    TU_EXPECT_ERR(plm_solve_admml2_stacked(g, L.op, ba, D, xa, z, 0, 0.8, 2, 0, 3, 0.0, NULL), PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_solve_admml2(g, L.op, ba, A, xa, zm[0], 0, 0.8, 2, 0, 3, 0.0, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_solve_admml2_stacked(g, L.op, ba, A, xa, last ? z1 : z, 0, 0.8, 2, 0, 3, 0.0, NULL),
                  PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_solve_admml2_stacked(g, L.op, ba, A, xa, last ? NULL : z, 0, 0.8, 2, 0, 3, 0.0, NULL),
                  PLM_ERR_INVALID_ARG);
    if (tu_size > 1)
        TU_EXPECT_ERR(plm_solve_admml2_stacked(g, L.op, ba, A, xa, z, 0, last ? 0.5 : 0.8, 2, 0, 3, 0.0, NULL),
                      PLM_ERR_INVALID_ARG);
    plm_prox_destroy(&g);
    plm_prox_destroy(&l2);
    plm_stacked_destroy(&z);
    plm_stacked_destroy(&z1);
    plm_op_destroy(&A);
    plm_op_destroy(&D);
    plm_array_destroy(&ba);
    plm_array_destroy(&xa);
    plm_array_destroy(&zm[0]);
    plm_array_destroy(&zm[1]);
    free(b), free(x0);
    free_lin(&L);
    free_lin(&A1);
    free_lin(&A2);
    TU_DONE();
}

/* ---- callbacks and bad arguments --------------------------------------------------------------- */

static int stop_at_3(void *ctx, int64_t it, plm_const_array_t x, double cost)
{
    (void)ctx, (void)x, (void)cost;
    return it >= 3 && tu_rank == tu_size - 1; /* one rank asks */
}

static void test_solver_callback_and_errors(void **state)
{
    (void)state;
    const int64_t M = 13, N = 11;
    lin_t L = make_lin(0, M, N, 3);
    double *b = seq(M, 6), *x0 = seq(N, 7);
    plm_array_t ba = arr(L.op, 1, b), xa = arr(L.op, 0, x0), za = arr(L.op, 1, b);
    plm_prox_t f = NULL, g = NULL;
    TU_OK(plm_prox_create_l2(L.op, ba, NULL, 1.0, 1.0, 1, 10, 1e-4, xa, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(0.2, &g));
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    TU_OK(plm_solver_info_set_callback(info, stop_at_3, NULL, NULL));
    const double eps = 1, eps2[2] = {1, 1}; /* eps2: n_epsg = 2 must point at 2 values */
    TU_CHECK_OK(plm_solve_proximal_gradient(f, g, xa, 0.1, &eps, 1, 1.0, 20, PLM_ACCEL_FISTA, 0, info));
    int64_t its = 0;
    plm_stop_reason_t why = PLM_STOP_NONE;
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    TU_CHECK_OK(plm_solver_info_reason(info, &why));
    TU_EXPECT(its == 3 && why == PLM_STOP_CALLBACK, "callback stop: %lld iterations, reason %d", (long long)its, (int)why);
    TU_CHECK_OK(plm_solve_admml2(g, L.op, ba, L.op, xa, za, 0, 1.0, 20, 0, 3, 0.0, info));
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    TU_EXPECT(its == 3, "ADMML2 callback stop: %lld iterations", (long long)its);
    const int last = tu_rank == tu_size - 1;
    /* proxf without a gradient; bad tau, eta, epsg count, acceleration on one rank */
    TU_EXPECT_ERR(plm_solve_proximal_gradient(last ? g : f, g, xa, 0.1, &eps, 1, 1.0, 5, PLM_ACCEL_NONE, 0, NULL),
                  PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_solve_proximal_gradient(f, g, xa, last ? -1 : 0.1, &eps, 1, 1.0, 5, PLM_ACCEL_NONE, 0, NULL),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_solve_proximal_gradient(f, g, xa, 0.1, &eps, 1, last ? 1.5 : 1.0, 5, PLM_ACCEL_NONE, 0, NULL),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_solve_proximal_gradient(f, g, xa, 0.1, eps2, last ? 2 : 1, 1.0, 5, PLM_ACCEL_NONE, 0, NULL),
                  PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_solve_proximal_gradient(f, g, xa, 0.1, &eps, 1, 1.0, 5, (plm_accel_t)(last ? 7 : 0), 0, NULL),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_solve_admml2(g, L.op, ba, L.op, xa, last ? xa : za, 0, 1.0, 2, 0, 3, 0.0, NULL),
                  PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_solve_admml2(last ? NULL : g, L.op, ba, L.op, xa, za, 0, 1.0, 2, 0, 3, 0.0, NULL),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_grad(g, za, ba), PLM_ERR_NOT_SUPPORTED); /* L1 has no gradient */
    TU_EXPECT_ERR(plm_prox_grad(f, xa, xa), PLM_ERR_INVALID_ARG);  /* out is x */
    /* L2 constructor arguments (not collective) */
    plm_prox_t bad = (plm_prox_t)1;
    TU_EXPECT_ERR(plm_prox_create_l2(L.op, NULL, NULL, 1, 1, 1, 10, 0, xa, 1, PLM_L2_CG, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT(bad == NULL, "out cleared on failure");
    TU_EXPECT_ERR(plm_prox_create_l2(L.op, ba, NULL, 1, 1, 1, 10, 0, NULL, 1, PLM_L2_CG, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_create_l2(L.op, xa, NULL, 1, 1, 1, 10, 0, xa, 1, PLM_L2_CG, &bad), PLM_ERR_SIZE_MISMATCH,
                   PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_create_l2(NULL, ba, NULL, NAN, 1, 1, 10, 0, NULL, 1, PLM_L2_CG, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_create_l2(NULL, ba, NULL, 1, 1, 1, 10, 0, NULL, 1, (plm_l2_solver_t)5, &bad),
                  PLM_ERR_INVALID_ARG);
    plm_solver_info_destroy(&info);
    plm_prox_destroy(&f);
    plm_prox_destroy(&g);
    plm_array_destroy(&ba);
    plm_array_destroy(&xa);
    plm_array_destroy(&za);
    free(b), free(x0);
    free_lin(&L);
    TU_DONE();
}

/* ---- a proximal operator of another kind on one rank ----------------------------------------- */

static int copy_prox(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dt)
{
    (void)ctx, (void)tau, (void)dt;
    memcpy(out, x, (size_t)n * sizeof(double));
    return 0;
}

static int sq_value(void *ctx, const void *x, int64_t n, double *value, plm_dtype_t dt)
{
    (void)ctx, (void)dt;
    const double *v = x;
    *value = 0;
    for (int64_t i = 0; i < n; i++) *value += v[i] * v[i];
    return 0;
}

static int copy_grad(void *ctx, const void *x, int64_t n, void *grad, plm_dtype_t dt)
{
    (void)ctx, (void)dt;
    memcpy(grad, x, (size_t)n * sizeof(double));
    return 0;
}

/* The call failed on every rank with the same status. */
static void expect_failed_everywhere(plm_status_t st, const char *what)
{
    int mine = (int)st, lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    TU_EXPECT(lo == hi && lo != PLM_SUCCESS, "%s: statuses %d..%d over the ranks", what, lo, hi);
}

/* Every pair of kinds (L1, L0, Box, closed-form L2, L2 with CGLS, L2 with CG, user), the last
 * rank holding the second: prox, value and gradient fail on every rank, none hangs. The kinds
 * run different reductions and solvers, so the kind must be agreed before any of them. */
static void test_prox_kind_differs(void **state)
{
    (void)state;
    if (tu_size < 2) return;
    enum { NK = 7 };
    static const char *names[NK] = {"L1", "L0", "Box", "L2", "L2+op CGLS", "L2+op CG", "user"};
    const int64_t N = 9;
    lin_t L = make_lin(0, N, N, 5);
    double *g = seq(N, 1);
    plm_array_t xa = arr(L.op, 0, g), ba = arr(L.op, 1, g), x0 = arr(L.op, 0, NULL), out = arr(L.op, 0, NULL);
    plm_prox_t p[NK] = {NULL};
    TU_OK(plm_prox_create_l1(1.0, &p[0]));
    TU_OK(plm_prox_create_l0(1.0, &p[1]));
    TU_OK(plm_prox_create_box(-0.5, 0.5, &p[2]));
    TU_OK(plm_prox_create_l2(NULL, xa, NULL, 1.0, 1.0, 1, 10, 0, NULL, 0, PLM_L2_CGLS, &p[3]));
    TU_OK(plm_prox_create_l2(L.op, ba, NULL, 1.0, 1.0, 1, 5, 0, x0, 0, PLM_L2_CGLS, &p[4]));
    TU_OK(plm_prox_create_l2(L.op, ba, NULL, 1.0, 1.0, 1, 5, 0, x0, 0, PLM_L2_CG, &p[5]));
    TU_OK(plm_prox_create_callback(copy_prox, sq_value, copy_grad, NULL, NULL, &p[6]));
    const int last = tu_rank == tu_size - 1;
    for (int a = 0; a < NK; a++)
        for (int b = 0; b < NK; b++) {
            if (a == b) continue;
            plm_const_prox_t mine = last ? p[b] : p[a];
            char what[96];
            double v = 0;
            snprintf(what, sizeof what, "prox %s, %s on the last rank", names[a], names[b]);
            expect_failed_everywhere(plm_prox_apply(mine, xa, 0.5, out), what);
            snprintf(what, sizeof what, "value %s, %s on the last rank", names[a], names[b]);
            expect_failed_everywhere(plm_prox_value(mine, xa, &v), what);
            snprintf(what, sizeof what, "grad %s, %s on the last rank", names[a], names[b]);
            expect_failed_everywhere(plm_prox_grad(mine, xa, out), what);
        }
    for (int k = 0; k < NK; k++) plm_prox_destroy(&p[k]);
    plm_array_destroy(&xa);
    plm_array_destroy(&ba);
    plm_array_destroy(&x0);
    plm_array_destroy(&out);
    free(g);
    free_lin(&L);
    TU_DONE();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_l2_with_operator),  TU_TEST(test_l2_closed_form), TU_TEST(test_proximal_gradient), TU_TEST(test_proximal_gradient_callback_x),
        TU_TEST(test_admml2),            TU_TEST(test_solver_callback_and_errors),
        TU_TEST(test_admml2_stacked),    TU_TEST(test_admml2_stacked_errors),
        TU_TEST(test_prox_kind_differs),
    };
    return plm_run_group_tests_mpi(tests);
}
