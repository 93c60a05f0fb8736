/* The newer proximal operators against serial float64 references written here (pyproximal's
 * and PyLops-MPI's formulas): L0 with both threshold rules, L21 on stacks of 1-3 members
 * (prox, dual, value, Moreau gradient), the compositions (postcomposition, precomposition with
 * a number or an array, affine addition, chain) of L1, Box, L2 and user operators, duals
 * (pyproximal's explicit L1 and L21 ones, the Moreau identity for the rest) and gradients
 * (pyproximal's ProxOperator.grad: the Moreau envelope's where there is none). Every dtype,
 * SCATTER and BROADCAST, the shapes of TU_CASES (uneven splits, fewer elements than ranks, so
 * ranks with no local elements); NaN and Inf data; ownership of composed user operators;
 * arguments bad on one rank fail on every rank. */
#include "array/array_test_util.h"

#include <complex.h>

/* ---- serial references, on interleaved (re, im) doubles ----------------------------------- */

static double complex at(const double *g, int64_t i) { return g[2 * i] + I * g[2 * i + 1]; }

static void put(double *out, int64_t i, double complex v, plm_dtype_t dt)
{
    out[2 * i] = creal(v);
    out[2 * i + 1] = cimag(v);
    tu_round(dt, &out[2 * i], &out[2 * i + 1]);
}

static double complex soft(double complex v, double t)
{
    const double m = cabs(v);
    return m == 0 ? 0 : v * (fmax(m - t, 0) / m);
}

/* The operators of these tests, as serial functions of one element. */
enum { K_L1, K_L0_EXACT, K_L0_PYPROX, K_BOX };
static double complex ref_elem(int kind, double sigma, double tau, double lo, double hi, double complex v)
{
    switch (kind) {
    case K_L1: return soft(v, tau * sigma);
    case K_L0_EXACT: return cabs(v) <= sqrt(2 * tau * sigma) ? 0 : v;
    case K_L0_PYPROX: return cabs(v) <= tau * sigma ? 0 : v;
    default: return fmin(fmax(creal(v), lo), hi);
    }
}


/* ---- L0: both rules ------------------------------------------------------------------------ */

static void test_l0_rules(void **state)
{
    (void)state;
    const double sigma = 2.5, tau = 0.2; /* tau sigma = 0.5: elements at 0.5 and 0.75 tell the rules apart */
    plm_prox_t exact = NULL, pyprox = NULL, plain = NULL;
    TU_OK(plm_prox_create_l0_threshold(sigma, PLM_L0_EXACT, &exact));
    TU_OK(plm_prox_create_l0_threshold(sigma, PLM_L0_PYPROXIMAL, &pyprox));
    TU_OK(plm_prox_create_l0(sigma, &plain));
    for (int c = 0; c < TU_NCASES; c++)
        for (int d = 0; d < 4; d++)
            for (int pi = 0; pi < 2; pi++) {
                const tu_case_t *k = &TU_CASES[c];
                const plm_dtype_t dt = TU_DTYPES[d];
                const int64_t n = tu_prod(k->shape, 0, k->ndim);
                double *g = tu_alloc(n), *want = tu_alloc(n);
                tu_gen(g, n, c + 5 * d, dt, 1);
                for (int64_t i = 0; i < n; i++) {
                    if (i % 5 == 1) g[2 * i] = -0.5, g[2 * i + 1] = 0; /* exactly tau sigma */
                    if (i % 5 == 2) g[2 * i] = 0.75, g[2 * i + 1] = 0; /* between the thresholds */
                }
                char what[160];
                snprintf(what, sizeof what, "L0 %s %s %s", k->name, tu_dtname(dt), tu_partname(TU_PARTS[pi]));
                plm_array_t x = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, g);
                plm_array_t y = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                for (int rule = 0; rule < 3; rule++) {
                    const int kind = rule == 1 ? K_L0_PYPROX : K_L0_EXACT;
                    for (int64_t i = 0; i < n; i++) put(want, i, ref_elem(kind, sigma, tau, 0, 0, at(g, i)), dt);
                    TU_CHECK_OK(plm_prox_apply(rule == 0 ? exact : rule == 1 ? pyprox : plain, x, tau, y));
                    tu_check_local(y, want, 0, what); /* a threshold: exact values */
                    double v = -1, vref = 0;
                    for (int64_t i = 0; i < n; i++) vref += cabs(at(g, i)) != 0;
                    TU_CHECK_OK(plm_prox_value(rule == 1 ? pyprox : exact, x, &v));
                    TU_EXPECT(v == vref, "%s: value %g want %g", what, v, vref);
                }
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                free(g);
                free(want);
            }
    /* the rules on the edge values: 0.5 goes under both, 0.75 only under the exact one */
    plm_prox_t q = (plm_prox_t)1;
    TU_EXPECT_ERR(plm_prox_create_l0_threshold(1, (plm_l0_threshold_t)7, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT(q == NULL, "out cleared");
    TU_EXPECT_ERR(plm_prox_create_l0_threshold(-1, PLM_L0_PYPROXIMAL, &q), PLM_ERR_INVALID_ARG);
    plm_prox_destroy(&exact);
    plm_prox_destroy(&pyprox);
    plm_prox_destroy(&plain);
    TU_DONE();
}

/* ---- L21 on stacks ------------------------------------------------------------------------- */

#define MAXM 3
typedef struct {
    int nm;
    int64_t n;
    double *g[MAXM];
    plm_array_t x[MAXM], y[MAXM];
    plm_stacked_t sx, sy;
} l21_case_t;

static void l21_make(l21_case_t *t, const tu_case_t *k, plm_partition_t part, plm_dtype_t dt, int nm, int seed)
{
    t->nm = nm;
    t->n = tu_prod(k->shape, 0, k->ndim);
    for (int m = 0; m < nm; m++) {
        t->g[m] = tu_alloc(t->n);
        tu_gen(t->g[m], t->n, seed + 7 * m, dt, 1);
        t->x[m] = tu_make(k->ndim, k->shape, k->axis, part, dt, NULL, NULL, t->g[m]);
        t->y[m] = tu_make(k->ndim, k->shape, k->axis, part, dt, NULL, NULL, NULL);
    }
    TU_OK(plm_stacked_create(nm, t->x, &t->sx));
    TU_OK(plm_stacked_create(nm, t->y, &t->sy));
}

static void l21_free(l21_case_t *t)
{
    plm_stacked_destroy(&t->sx);
    plm_stacked_destroy(&t->sy);
    for (int m = 0; m < t->nm; m++) {
        plm_array_destroy(&t->x[m]);
        plm_array_destroy(&t->y[m]);
        free(t->g[m]);
    }
}

/* The group norm at global index i. */
static double l21_norm(const l21_case_t *t, int64_t i)
{
    double s = 0;
    for (int m = 0; m < t->nm; m++) s += cabs(at(t->g[m], i)) * cabs(at(t->g[m], i));
    return sqrt(s);
}

/* Member m of prox (dual 0) or dual (1) with parameter th (tau sigma, or sigma). */
static void l21_ref(const l21_case_t *t, int m, int dual, double th, plm_dtype_t dt, double *want)
{
    for (int64_t i = 0; i < t->n; i++) {
        const double s = l21_norm(t, i), mx = isnan(s) || s > th ? s : th;
        const double f = dual ? th / mx : 1 - th / mx;
        put(want, i, f * at(t->g[m], i), dt);
    }
}

static void test_l21(void **state)
{
    (void)state;
    const double sigma = 0.7, tau = 0.9;
    for (int nm = 1; nm <= 3; nm++) {
        plm_prox_t p = NULL;
        TU_OK(plm_prox_create_l21(nm, sigma, &p));
        for (int c = 0; c < TU_NCASES; c++)
            for (int d = 0; d < 4; d++)
                for (int pi = 0; pi < 2; pi++) {
                    const plm_dtype_t dt = TU_DTYPES[d];
                    l21_case_t t;
                    l21_make(&t, &TU_CASES[c], TU_PARTS[pi], dt, nm, c + d);
                    char what[160];
                    snprintf(what, sizeof what, "L21 ndim %d %s %s %s", nm, TU_CASES[c].name, tu_dtname(dt),
                             tu_partname(TU_PARTS[pi]));
                    double *want = tu_alloc(t.n);
                    const double rtol = tu_rtol(dt) * 10;
                    TU_CHECK_OK(plm_prox_apply_stacked(p, t.sx, tau, t.sy));
                    for (int m = 0; m < nm; m++) {
                        l21_ref(&t, m, 0, tau * sigma, dt, want);
                        tu_check_local(t.y[m], want, rtol, what);
                    }
                    TU_CHECK_OK(plm_prox_dual_stacked(p, t.sx, tau, t.sy));
                    for (int m = 0; m < nm; m++) {
                        l21_ref(&t, m, 1, sigma, dt, want);
                        tu_check_local(t.y[m], want, rtol, what);
                    }
                    /* the Moreau gradient (x - prox_{sigmame f}(x)) / sigmame */
                    TU_CHECK_OK(plm_prox_gradient_stacked(p, t.sx, 0.5, t.sy));
                    for (int m = 0; m < nm; m++) {
                        l21_ref(&t, m, 0, 0.5 * sigma, dt, want);
                        for (int64_t i = 0; i < t.n; i++) put(want, i, (at(t.g[m], i) - at(want, i)) / 0.5, dt);
                        tu_check_local(t.y[m], want, rtol, what);
                    }
                    double v = -1, vref = 0;
                    for (int64_t i = 0; i < t.n; i++) vref += l21_norm(&t, i);
                    vref *= sigma;
                    TU_CHECK_OK(plm_prox_value_stacked(p, t.sx, &v));
                    TU_EXPECT(fabs(v - vref) <= rtol * (vref + 1), "%s: value %.17g want %.17g", what, v, vref);
                    if (nm == 1) { /* a single array is a stack of one */
                        double v1 = -1;
                        TU_CHECK_OK(plm_prox_value(p, t.x[0], &v1));
                        TU_EXPECT(fabs(v1 - vref) <= rtol * (vref + 1), "%s: single value %.17g", what, v1);
                        TU_CHECK_OK(plm_prox_apply(p, t.x[0], tau, t.y[0]));
                        l21_ref(&t, 0, 0, tau * sigma, dt, want);
                        tu_check_local(t.y[0], want, rtol, what);
                    }
                    TU_CHECK_OK(plm_prox_apply_stacked(p, t.sx, tau, t.sx)); /* in place */
                    free(want);
                    l21_free(&t);
                }
        plm_prox_destroy(&p);
    }
    TU_DONE();
}

/* NaN and Inf in a group; member counts and layouts that do not fit fail on every rank. */
static void test_l21_edges(void **state)
{
    (void)state;
    const int64_t shape[1] = {9}, other[1] = {10};
    double a[18], b[18];
    tu_gen(a, 9, 1, PLM_FLOAT64, 0);
    tu_gen(b, 9, 2, PLM_FLOAT64, 0);
    a[2 * 3] = NAN;
    b[2 * 5] = INFINITY;
    a[2 * 7] = 0, b[2 * 7] = 0; /* a zero group */
    plm_array_t x[2] = {tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, a),
                        tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, b)};
    plm_array_t w = tu_make(1, other, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_stacked_t s = NULL, bad = NULL, one = NULL;
    TU_OK(plm_stacked_create(2, x, &s));
    plm_array_t xw[2] = {x[0], w};
    TU_OK(plm_stacked_create(2, xw, &bad));
    TU_OK(plm_stacked_create(1, x, &one));
    plm_prox_t p = NULL;
    TU_OK(plm_prox_create_l21(2, 1.0, &p));
    double v = 0;
    TU_CHECK_OK(plm_prox_value_stacked(p, s, &v));
    TU_EXPECT(isnan(v), "L21 value with a NaN group: %g", v);
    TU_CHECK_OK(plm_prox_apply_stacked(p, s, 0.5, s));
    double ga[9], gb[9];
    TU_CHECK_OK(plm_array_asarray(x[0], 0, ga, sizeof ga));
    TU_CHECK_OK(plm_array_asarray(x[1], 0, gb, sizeof gb));
    TU_EXPECT(isnan(ga[3]) && isnan(gb[3]), "the NaN's group is NaN: %g %g", ga[3], gb[3]);
    TU_EXPECT(ga[5] == a[2 * 5] && isinf(gb[5]), "the Inf's group keeps its values: %g %g", ga[5], gb[5]);
    TU_EXPECT(ga[7] == 0 && gb[7] == 0, "a zero group stays zero: %g %g", ga[7], gb[7]);
    const int last = tu_rank == tu_size - 1;
    TU_EXPECT_ERR(plm_prox_value_stacked(p, one, &v), PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_prox_apply_stacked(p, one, 0.5, one), PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_prox_apply_stacked(p, bad, 0.5, bad), PLM_ERR_SIZE_MISMATCH);
    TU_EXPECT_ERR(plm_prox_dual_stacked(p, s, last ? -1.0 : 1.0, s), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_value(p, x[0], &v), PLM_ERR_SIZE_MISMATCH); /* a single array is a stack of one */
    plm_prox_t q = (plm_prox_t)1;
    TU_EXPECT_ERR(plm_prox_create_l21(0, 1.0, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT(q == NULL, "out cleared");
    plm_prox_destroy(&p);
    plm_stacked_destroy(&s);
    plm_stacked_destroy(&bad);
    plm_stacked_destroy(&one);
    plm_array_destroy(&x[0]);
    plm_array_destroy(&x[1]);
    plm_array_destroy(&w);
    TU_DONE();
}

/* ---- compositions, duals and gradients ----------------------------------------------------- */

static int g_destroyed = 0;
static void count_destroy(void *ctx)
{
    (void)ctx;
    g_destroyed++;
}
/* The user operator f(x) = ||x||_1 (real data). */
static int user_prox(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dt)
{
    (void)ctx;
    if (dt != PLM_FLOAT64) return 1;
    for (int64_t i = 0; i < n; i++) ((double *)out)[i] = creal(soft(((const double *)x)[i], tau));
    return 0;
}
static int user_value(void *ctx, const void *x, int64_t n, double *value, plm_dtype_t dt)
{
    (void)ctx;
    (void)dt;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += fabs(((const double *)x)[i]);
    *value = s;
    return 0;
}

/* The operators composed here and their serial prox / value / gradient on the global g. */
typedef struct {
    const char *name;
    plm_prox_t p;
    int has_grad;
} comp_t;

enum { C_POST, C_PRE, C_PRE_ARRAY, C_AFFINE, C_CHAIN, C_POST_L2, C_PRE_L2, C_AFFINE_USER, NCOMP };
static const double SIG = 0.6, PA = -1.5, PB = 0.25, LO = -0.4, HI = 0.8, L2S = 1.3;

/* b for C_PRE_ARRAY and v for C_AFFINE: a second seeded vector; b2 the L2's data. */
static void comp_ref(int which, const double *g, const double *bv, const double *b2, int64_t n, double tau,
                     plm_dtype_t dt, double *prox, double *value, double *dual, double *grad, double sme)
{
    double val = 0;
    for (int64_t i = 0; i < n; i++) {
        const double complex x = at(g, i), b = at(bv, i), d2 = at(b2, i);
        double complex p = 0, gr = 0, pd = 0;
        /* pd: the prox with step 1 / tau of x / tau (for the Moreau dual); gr: the gradient */
        switch (which) {
        case C_POST: /* 2 L1(SIG) */
            p = soft(x, 2 * tau * SIG);
            pd = soft(x / tau, 2 * SIG / tau);
            gr = 2 * (x - soft(x, sme * SIG)) / sme;
            val += 2 * SIG * cabs(x);
            break;
        case C_PRE: /* L1(SIG)(PA x + PB) */
            p = (soft(PA * x + PB, PA * PA * tau * SIG) - PB) / PA;
            pd = (soft(PA * x / tau + PB, PA * PA * SIG / tau) - PB) / PA;
            gr = PA * ((PA * x + PB) - soft(PA * x + PB, sme * SIG)) / sme;
            val += SIG * cabs(PA * x + PB);
            break;
        case C_PRE_ARRAY: /* L1(SIG)(PA x + b) */
            p = (soft(PA * x + b, PA * PA * tau * SIG) - b) / PA;
            pd = (soft(PA * x / tau + b, PA * PA * SIG / tau) - b) / PA;
            gr = PA * ((PA * x + b) - soft(PA * x + b, sme * SIG)) / sme;
            val += SIG * cabs(PA * x + b);
            break;
        case C_AFFINE: /* L1(SIG) + v^T x */
            p = soft(x - tau * b, tau * SIG);
            pd = soft(x / tau - b / tau, SIG / tau);
            gr = (x - soft(x, sme * SIG)) / sme + b;
            val += SIG * cabs(x) + creal(b * x);
            break;
        case C_CHAIN: /* Box(LO, HI) after L1(SIG) */
            p = fmin(fmax(creal(soft(x, tau * SIG)), LO), HI);
            pd = fmin(fmax(creal(soft(x / tau, SIG / tau)), LO), HI);
            gr = (x - soft(x, sme * SIG)) / sme + (x - fmin(fmax(creal(x), LO), HI)) / sme;
            val += SIG * cabs(x);
            break;
        case C_POST_L2: /* 2 L2(L2S, b2): prox (x + 2 tau L2S b2) / (1 + 2 tau L2S) */
            p = (x + 2 * tau * L2S * d2) / (1 + 2 * tau * L2S);
            pd = (x / tau + 2 * L2S * d2 / tau) / (1 + 2 * L2S / tau);
            gr = 2 * L2S * (x - d2);
            val += 2 * (L2S / 2) * cabs(x - d2) * cabs(x - d2);
            break;
        case C_PRE_L2: /* L2(L2S, b2)(PA x + PB) */
            p = ((PA * x + PB + PA * PA * tau * L2S * d2) / (1 + PA * PA * tau * L2S) - PB) / PA;
            pd = ((PA * x / tau + PB + PA * PA * L2S * d2 / tau) / (1 + PA * PA * L2S / tau) - PB) / PA;
            gr = PA * L2S * (PA * x + PB - d2);
            val += (L2S / 2) * cabs(PA * x + PB - d2) * cabs(PA * x + PB - d2);
            break;
        default: /* C_AFFINE_USER: user L1 + v^T x */
            p = soft(x - tau * b, tau);
            pd = soft(x / tau - b / tau, 1 / tau);
            gr = (x - soft(x, sme)) / sme + b;
            val += cabs(x) + creal(b * x);
            break;
        }
        put(prox, i, p, dt);
        put(dual, i, x - tau * pd, dt);
        put(grad, i, gr, dt);
    }
    *value = val;
}

static void make_comps(comp_t *c, plm_const_array_t bvec, plm_const_array_t b2)
{
    plm_prox_t l1 = NULL, box = NULL, l2 = NULL, user = NULL;
    TU_OK(plm_prox_create_l1(SIG, &l1));
    TU_OK(plm_prox_create_box(LO, HI, &box));
    TU_OK(plm_prox_create_l2(NULL, b2, NULL, L2S, 1.0, 1, 10, 1e-4, NULL, 1, PLM_L2_CGLS, &l2));
    TU_OK(plm_prox_create_callback(user_prox, user_value, NULL, NULL, count_destroy, &user));
    TU_OK(plm_prox_postcomposition(l1, 2.0, &c[C_POST].p));
    TU_OK(plm_prox_precomposition(l1, PA, PB, NULL, &c[C_PRE].p));
    TU_OK(plm_prox_precomposition(l1, PA, 0.0, bvec, &c[C_PRE_ARRAY].p));
    TU_OK(plm_prox_affine_addition(l1, bvec, &c[C_AFFINE].p));
    TU_OK(plm_prox_chain(l1, box, &c[C_CHAIN].p));
    TU_OK(plm_prox_postcomposition(l2, 2.0, &c[C_POST_L2].p));
    TU_OK(plm_prox_precomposition(l2, PA, PB, NULL, &c[C_PRE_L2].p));
    TU_OK(plm_prox_affine_addition(user, bvec, &c[C_AFFINE_USER].p));
    const char *names[NCOMP] = {"post", "pre", "pre(array b)", "affine", "chain", "post(L2)", "pre(L2)", "affine(user)"};
    for (int k = 0; k < NCOMP; k++) {
        c[k].name = names[k];
        c[k].has_grad = k == C_POST_L2 || k == C_PRE_L2;
    }
    /* the composed operators hold their parts: these handles may go first */
    plm_prox_destroy(&l1);
    plm_prox_destroy(&box);
    plm_prox_destroy(&l2);
    plm_prox_destroy(&user);
}

static void test_compositions(void **state)
{
    (void)state;
    const double tau = 0.35, sme = 0.8;
    g_destroyed = 0;
    for (int c = 0; c < TU_NCASES; c++)
        for (int d = 1; d < 4; d += 2) /* float64 and complex128 */
            for (int pi = 0; pi < 2; pi++) {
                const tu_case_t *k = &TU_CASES[c];
                const plm_dtype_t dt = TU_DTYPES[d];
                const int64_t n = tu_prod(k->shape, 0, k->ndim);
                double *g = tu_alloc(n), *bv = tu_alloc(n), *b2 = tu_alloc(n);
                double *wp = tu_alloc(n), *wd = tu_alloc(n), *wg = tu_alloc(n);
                tu_gen(g, n, c + d, dt, 1);
                tu_gen(bv, n, 11 + c, dt, 0);
                tu_gen(b2, n, 17 + c, dt, 0);
                plm_array_t x = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, g);
                plm_array_t y = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                plm_array_t bvec = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, bv);
                plm_array_t b2a = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, b2);
                comp_t comps[NCOMP];
                make_comps(comps, bvec, b2a);
                plm_array_destroy(&bvec); /* copied at creation */
                plm_array_destroy(&b2a);
                for (int w = 0; w < NCOMP; w++) {
                    if ((w == C_CHAIN || w == C_AFFINE_USER) && tu_cplx(dt)) continue; /* Box, the user L1: real */
                    char what[200];
                    snprintf(what, sizeof what, "%s %s %s %s", comps[w].name, k->name, tu_dtname(dt),
                             tu_partname(TU_PARTS[pi]));
                    double vref = 0, v = -1;
                    comp_ref(w, g, bv, b2, n, tau, dt, wp, &vref, wd, wg, sme);
                    TU_CHECK_OK(plm_prox_apply(comps[w].p, x, tau, y));
                    tu_check_local(y, wp, 1e-11, what);
                    TU_CHECK_OK(plm_prox_dual(comps[w].p, x, tau, y));
                    tu_check_local(y, wd, 1e-11, what);
                    TU_CHECK_OK(plm_prox_gradient(comps[w].p, x, sme, y));
                    tu_check_local(y, wg, 1e-11, what);
                    TU_CHECK_OK(plm_prox_value(comps[w].p, x, &v));
                    if (w != C_CHAIN) /* chain: f + g, with a Box's 0/1 */
                        TU_EXPECT(fabs(v - vref) <= 1e-11 * (fabs(vref) + 1), "%s: value %.17g want %.17g", what, v,
                                  vref);
                    if (comps[w].has_grad) {
                        TU_CHECK_OK(plm_prox_grad(comps[w].p, x, y)); /* its own gradient */
                        tu_check_local(y, wg, 1e-11, what);
                    } else {
                        TU_EXPECT_ERR(plm_prox_grad(comps[w].p, x, y), PLM_ERR_NOT_SUPPORTED);
                    }
                }
                for (int w = 0; w < NCOMP; w++) plm_prox_destroy(&comps[w].p);
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                free(g), free(bv), free(b2), free(wp), free(wd), free(wg);
            }
    /* one user operator per case, its ctx destroyed once, with its last holder */
    TU_EXPECT(g_destroyed == TU_NCASES * 2 * 2, "user ctx destroyed %d times, want %d", g_destroyed, TU_NCASES * 4);
    TU_DONE();
}

/* The explicit duals and the Moreau identity agree; L1's dual on complex data (Moreau) is the
 * projection onto the sigma-ball; Box, L0 and L2 duals by Moreau; gradients of L2 agree. */
static void test_duals(void **state)
{
    (void)state;
    const int64_t shape[1] = {37};
    const double tau = 0.45, sigma = 0.9;
    for (int d = 0; d < 4; d++) {
        const plm_dtype_t dt = TU_DTYPES[d];
        double *g = tu_alloc(37), *want = tu_alloc(37);
        tu_gen(g, 37, d, dt, 1);
        plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, dt, NULL, NULL, g);
        plm_array_t y = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, dt, NULL, NULL, NULL);
        plm_prox_t l1 = NULL, l0 = NULL, box = NULL;
        TU_OK(plm_prox_create_l1(sigma, &l1));
        TU_OK(plm_prox_create_l0_threshold(sigma, PLM_L0_PYPROXIMAL, &l0));
        TU_OK(plm_prox_create_box(-0.3, 0.5, &box));
        for (int64_t i = 0; i < 37; i++) {
            const double complex v = at(g, i);
            put(want, i, cabs(v) <= sigma ? v : v * (sigma / cabs(v)), dt); /* the sigma-ball */
        }
        TU_CHECK_OK(plm_prox_dual(l1, x, tau, y));
        tu_check_local(y, want, tu_rtol(dt) * 10, "L1 dual");
        for (int64_t i = 0; i < 37; i++) {
            const double complex v = at(g, i);
            put(want, i, v - tau * ref_elem(K_L0_PYPROX, sigma, 1 / tau, 0, 0, v / tau), dt);
        }
        TU_CHECK_OK(plm_prox_dual(l0, x, tau, y));
        tu_check_local(y, want, tu_rtol(dt) * 10, "L0 dual");
        if (!tu_cplx(dt)) {
            for (int64_t i = 0; i < 37; i++) {
                const double complex v = at(g, i);
                put(want, i, v - tau * ref_elem(K_BOX, 0, 0, -0.3, 0.5, v / tau), dt);
            }
            TU_CHECK_OK(plm_prox_dual(box, x, tau, y));
            tu_check_local(y, want, tu_rtol(dt) * 10, "Box dual");
        }
        TU_CHECK_OK(plm_prox_dual(l1, x, tau, x)); /* in place */
        plm_prox_destroy(&l1);
        plm_prox_destroy(&l0);
        plm_prox_destroy(&box);
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        free(g);
        free(want);
    }
    TU_DONE();
}

/* Arguments bad on one rank fail on every rank; operators holding arrays refuse stacks. */
static void test_ext_errors(void **state)
{
    (void)state;
    const int64_t shape[1] = {7}, shape2[1] = {8};
    const int last = tu_rank == tu_size - 1;
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t z = tu_make(1, shape2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 0.5, 0));
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(1, &x, &s));
    plm_prox_t l1 = NULL, aff = NULL, q = (plm_prox_t)1;
    TU_OK(plm_prox_create_l1(1, &l1));
    TU_OK(plm_prox_affine_addition(l1, x, &aff));
    TU_EXPECT_ERR(plm_prox_postcomposition(l1, 0.0, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT(q == NULL, "out cleared");
    TU_EXPECT_ERR(plm_prox_postcomposition(NULL, 1.0, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_precomposition(l1, 0.0, 1.0, NULL, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_precomposition(l1, 1.0, NAN, NULL, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_affine_addition(l1, NULL, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_chain(l1, NULL, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_dual(l1, x, last ? 0.0 : 1.0, y), PLM_ERR_INVALID_ARG);
    if (tu_size > 1) TU_EXPECT_ERR(plm_prox_dual(l1, x, last ? 0.5 : 1.0, y), PLM_ERR_INVALID_ARG); /* tau differs */
    TU_EXPECT_ERR(plm_prox_dual(last ? NULL : l1, x, 1.0, y), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_dual(l1, x, 1.0, last ? z : y), PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_gradient(l1, x, last ? -1.0 : 1.0, y), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_gradient(l1, x, 1.0, last ? x : y), PLM_ERR_INVALID_ARG); /* out is x */
    TU_EXPECT_ERR(plm_prox_gradient(aff, z, 1.0, z), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_apply(aff, last ? z : x, 1.0, last ? z : y), PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_apply_stacked(aff, s, 1.0, s), PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_prox_dual_stacked(aff, s, 1.0, s), PLM_ERR_NOT_SUPPORTED);
    double v;
    TU_EXPECT_ERR(plm_prox_value_stacked(aff, s, &v), PLM_ERR_NOT_SUPPORTED);
    /* the composition of a stack-taking operator takes stacks */
    plm_prox_t post = NULL;
    TU_OK(plm_prox_postcomposition(l1, 3.0, &post));
    TU_CHECK_OK(plm_prox_value_stacked(post, s, &v));
    TU_EXPECT(fabs(v - 3.0 * 0.5 * 7) < 1e-12, "post value on a stack %g", v);
    plm_prox_destroy(&post);
    plm_prox_destroy(&aff);
    plm_prox_destroy(&l1);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_l0_rules), TU_TEST(test_l21),       TU_TEST(test_l21_edges),
        TU_TEST(test_compositions), TU_TEST(test_duals), TU_TEST(test_ext_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
