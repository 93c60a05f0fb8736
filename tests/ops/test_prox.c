/* Proximal operators (L1, L0, Box, user callbacks): prox and value against serial float64 references computed here,
 * for every dtype, SCATTER and BROADCAST, the shapes of TU_CASES (uneven splits, fewer elements
 * than ranks), in place and out of place; NaN data; bad arguments fail on every rank. Stacks
 * (plm_prox_apply_stacked / plm_prox_value_stacked) member by member, a masked member included. */
#include "array/array_test_util.h"

#include <complex.h>

/* pyproximal's soft threshold (phase kept) and hard threshold (zero where |x| <= sqrt(2 t)). */
static void ref_prox(int l1, double t, const double *g, int64_t n, plm_dtype_t dt, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        double re = g[2 * i], im = g[2 * i + 1], m = hypot(re, im), f;
        if (l1) f = m == 0 ? 0 : fmax(m - t, 0) / m;
        else f = m <= sqrt(2 * t) ? 0 : 1;
        out[2 * i] = re * f;
        out[2 * i + 1] = im * f;
        tu_round(dt, &out[2 * i], &out[2 * i + 1]);
    }
}

static double ref_value(int l1, double sigma, const double *g, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        double m = hypot(g[2 * i], g[2 * i + 1]);
        s += l1 ? m : (m != 0);
    }
    return l1 ? sigma * s : s;
}

static void test_prox_vs_serial(void **state)
{
    (void)state;
    const double sigma = 2, tau = 0.15;
    for (int l1 = 0; l1 < 2; l1++) {
        plm_prox_t p = NULL;
        TU_OK(l1 ? plm_prox_create_l1(sigma, &p) : plm_prox_create_l0(sigma, &p));
        for (int c = 0; c < TU_NCASES; c++)
            for (int d = 0; d < 4; d++)
                for (int pi = 0; pi < 2; pi++) {
                    const tu_case_t *k = &TU_CASES[c];
                    const plm_dtype_t dt = TU_DTYPES[d];
                    int64_t n = tu_prod(k->shape, 0, k->ndim);
                    double *g = tu_alloc(n), *want = tu_alloc(n);
                    tu_gen(g, n, c + 3 * d, dt, 1);
                    ref_prox(l1, tau * sigma, g, n, dt, want);
                    char what[160];
                    snprintf(what, sizeof what, "%s %s %s %s", l1 ? "L1" : "L0", k->name, tu_dtname(dt),
                             tu_partname(TU_PARTS[pi]));
                    plm_array_t x = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, g);
                    plm_array_t y = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                    TU_CHECK_OK(plm_prox_apply(p, x, tau, y));
                    tu_check_local(y, want, tu_rtol(dt), what);
                    double v = -1, vref = ref_value(l1, sigma, g, n);
                    TU_CHECK_OK(plm_prox_value(p, x, &v));
                    TU_EXPECT(fabs(v - vref) <= tu_rtol(dt) * (fabs(vref) + 1), "%s: value %.17g want %.17g", what, v,
                              vref);
                    TU_CHECK_OK(plm_prox_apply(p, x, tau, x)); /* in place */
                    tu_check_local(x, want, tu_rtol(dt), what);
                    plm_array_destroy(&x);
                    plm_array_destroy(&y);
                    free(g);
                    free(want);
                }
        TU_OK(plm_prox_destroy(&p));
        TU_EXPECT(p == NULL, "destroy sets NULL");
    }
    TU_DONE();
}

/* NaN in the data: L1's value is NaN on every rank, L0 counts it as a non-zero, prox keeps it. */
static void test_prox_nan(void **state)
{
    (void)state;
    const int64_t shape[1] = {11};
    double g[22];
    tu_gen(g, 11, 1, PLM_FLOAT64, 0);
    g[2 * 5] = NAN;
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g);
    plm_prox_t l1 = NULL, l0 = NULL;
    TU_OK(plm_prox_create_l1(1, &l1));
    TU_OK(plm_prox_create_l0(1, &l0));
    double v1 = 0, v0 = 0;
    TU_CHECK_OK(plm_prox_value(l1, x, &v1));
    TU_CHECK_OK(plm_prox_value(l0, x, &v0));
    TU_EXPECT(isnan(v1), "L1 value of NaN data: %g", v1);
    TU_EXPECT(v0 == 11, "L0 value of NaN data: %g", v0);
    TU_CHECK_OK(plm_prox_apply(l1, x, 0.1, x));
    double out[11];
    TU_CHECK_OK(plm_array_asarray(x, 0, out, sizeof out));
    TU_EXPECT(isnan(out[5]), "soft threshold of NaN: %g", out[5]);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&l0);
    plm_array_destroy(&x);
    TU_DONE();
}

/* Arguments bad on one rank only fail on every rank. */
static void test_prox_errors(void **state)
{
    (void)state;
    const int64_t shape[1] = {7}, shape2[1] = {8};
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t z = tu_make(1, shape2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_prox_t p = NULL, q = (plm_prox_t)1;
    const int last = tu_rank == tu_size - 1;
    TU_EXPECT_ERR(plm_prox_create_l1(-1, &q), PLM_ERR_INVALID_ARG);
    TU_EXPECT(q == NULL, "out cleared on failure");
    TU_EXPECT_ERR(plm_prox_create_l0(NAN, &q), PLM_ERR_INVALID_ARG);
    TU_OK(plm_prox_create_l1(1, &p));
    TU_EXPECT_ERR(plm_prox_apply(p, x, last ? 0.0 : 1.0, x), PLM_ERR_INVALID_ARG);
    if (tu_size > 1) TU_EXPECT_ERR(plm_prox_apply(p, x, last ? 0.5 : 1.0, x), PLM_ERR_INVALID_ARG); /* tau differs */
    TU_EXPECT_ERR(plm_prox_apply(last ? NULL : p, x, 1.0, x), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_apply(p, x, 1.0, last ? z : x), PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
    double v;
    TU_EXPECT_ERR(plm_prox_value(p, x, last ? NULL : &v), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_value(last ? NULL : p, x, &v), PLM_ERR_INVALID_ARG);
    TU_OK(plm_prox_destroy(&p));
    TU_OK(plm_prox_destroy(NULL));
    plm_array_destroy(&x);
    plm_array_destroy(&z);
    TU_DONE();
}

/* ---- Box ----------------------------------------------------------------------------------- */

static void test_box_vs_serial(void **state)
{
    (void)state;
    const double bounds[2][2] = {{-0.5, 0.7}, {-INFINITY, INFINITY}};
    for (int bi = 0; bi < 2; bi++) {
        const double lo = bounds[bi][0], hi = bounds[bi][1];
        plm_prox_t p = NULL;
        TU_OK(plm_prox_create_box(lo, hi, &p));
        for (int c = 0; c < TU_NCASES; c++)
            for (int d = 0; d < 2; d++) /* the real dtypes */
                for (int pi = 0; pi < 2; pi++) {
                    const tu_case_t *k = &TU_CASES[c];
                    const plm_dtype_t dt = TU_DTYPES[d];
                    const int64_t n = tu_prod(k->shape, 0, k->ndim);
                    double *g = tu_alloc(n), *want = tu_alloc(n);
                    tu_gen(g, n, c + 2 * d, dt, 1);
                    int inside = 1;
                    for (int64_t i = 0; i < n; i++) {
                        want[2 * i] = fmin(fmax(g[2 * i], lo), hi);
                        tu_round(dt, &want[2 * i], &want[2 * i + 1]);
                        inside = inside && g[2 * i] >= lo && g[2 * i] <= hi;
                    }
                    char what[160];
                    snprintf(what, sizeof what, "Box [%g, %g] %s %s %s", lo, hi, k->name, tu_dtname(dt),
                             tu_partname(TU_PARTS[pi]));
                    plm_array_t x = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, g);
                    plm_array_t y = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                    double v = -1;
                    TU_CHECK_OK(plm_prox_value(p, x, &v));
                    TU_EXPECT(v == (inside ? 1.0 : 0.0), "%s: value %g, inside %d", what, v, inside);
                    TU_CHECK_OK(plm_prox_apply(p, x, 0.3, y));
                    tu_check_local(y, want, 0, what); /* a projection is exact */
                    TU_CHECK_OK(plm_prox_value(p, y, &v));
                    TU_EXPECT(v == 1.0, "%s: the projection is inside: %g", what, v);
                    TU_CHECK_OK(plm_prox_apply(p, x, 0.3, x)); /* in place */
                    tu_check_local(x, want, 0, what);
                    plm_array_destroy(&x);
                    plm_array_destroy(&y);
                    free(g);
                    free(want);
                }
        plm_prox_destroy(&p);
    }
    TU_DONE();
}

/* NaN stays NaN and is outside; infinities inside infinite bounds are inside; complex refused. */
static void test_box_edges(void **state)
{
    (void)state;
    const int64_t shape[1] = {9};
    double g[18] = {0};
    for (int i = 0; i < 9; i++) g[2 * i] = 0.1 * i - 0.4;
    g[2 * 2] = INFINITY;
    g[2 * 6] = -INFINITY;
    plm_prox_t open = NULL, half = NULL, bad = (plm_prox_t)1;
    TU_OK(plm_prox_create_box(-INFINITY, INFINITY, &open));
    TU_OK(plm_prox_create_box(-1.0, INFINITY, &half));
    TU_EXPECT_ERR(plm_prox_create_box(NAN, 1.0, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT(bad == NULL, "out cleared on failure");
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g);
    double v = -1, out[9];
    TU_CHECK_OK(plm_prox_value(open, x, &v));
    TU_EXPECT(v == 1.0, "infinities inside (-inf, inf): %g", v);
    TU_CHECK_OK(plm_prox_value(half, x, &v));
    TU_EXPECT(v == 0.0, "-inf outside [-1, inf): %g", v);
    TU_CHECK_OK(plm_prox_apply(half, x, 1.0, x));
    TU_CHECK_OK(plm_array_asarray(x, 0, out, sizeof out));
    TU_EXPECT(out[6] == -1.0 && out[2] == INFINITY && out[0] == g[0], "projection of infinities: %g %g", out[6], out[2]);
    g[2 * 4] = NAN;
    plm_array_t y = tu_make(1, shape, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT64, NULL, NULL, g);
    TU_CHECK_OK(plm_prox_value(open, y, &v));
    TU_EXPECT(v == 0.0, "NaN is outside: %g", v);
    TU_CHECK_OK(plm_prox_apply(open, y, 1.0, y));
    TU_CHECK_OK(plm_array_asarray(y, 0, out, sizeof out));
    TU_EXPECT(isnan(out[4]), "NaN stays: %g", out[4]);
    plm_array_t z = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, NULL, NULL, g);
    TU_EXPECT_ERR(plm_prox_apply(open, z, 1.0, z), PLM_ERR_DTYPE_MISMATCH);
    TU_EXPECT_ERR(plm_prox_value(open, z, &v), PLM_ERR_DTYPE_MISMATCH);
    plm_prox_destroy(&open);
    plm_prox_destroy(&half);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    TU_DONE();
}

/* ---- user callbacks ------------------------------------------------------------------------ */

static int g_destroyed = 0;
static int g_fail_rank = -1; /* the rank whose callbacks fail */

static void user_destroy(void *ctx)
{
    (void)ctx;
    g_destroyed++;
}

/* pyproximal's L1 (sigma in ctx): soft threshold, sum |x|, and the gradient 2 x. */
static int user_prox(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dt)
{
    const double t = tau * *(const double *)ctx;
    if (tu_rank == g_fail_rank) return 3;
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, x, i, &re, &im);
        const double m = fabs(re), f = m == 0 ? 0 : fmax(m - t, 0) / m;
        tu_set(dt, out, i, re * f, 0);
    }
    return 0;
}

static int user_value(void *ctx, const void *x, int64_t n, double *value, plm_dtype_t dt)
{
    if (tu_rank == g_fail_rank) return 4;
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, x, i, &re, &im);
        s += fabs(re);
    }
    *value = *(const double *)ctx * s;
    return 0;
}

static int user_grad(void *ctx, const void *x, int64_t n, void *grad, plm_dtype_t dt)
{
    (void)ctx;
    if (tu_rank == g_fail_rank) return 5;
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, x, i, &re, &im);
        tu_set(dt, grad, i, 2 * re, 0);
    }
    return 0;
}

static void test_user_prox(void **state)
{
    (void)state;
    static double sigma = 0.7;
    plm_prox_t u = NULL, l1 = NULL;
    g_destroyed = 0;
    TU_OK(plm_prox_create_callback(user_prox, user_value, user_grad, &sigma, user_destroy, &u));
    TU_OK(plm_prox_create_l1(sigma, &l1));
    for (int c = 0; c < TU_NCASES; c++)
        for (int d = 0; d < 2; d++)
            for (int pi = 0; pi < 2; pi++) {
                const tu_case_t *k = &TU_CASES[c];
                const plm_dtype_t dt = TU_DTYPES[d];
                const int64_t n = tu_prod(k->shape, 0, k->ndim);
                double *g = tu_alloc(n), *want = tu_alloc(n), *grad = tu_alloc(n);
                tu_gen(g, n, c + d, dt, 1);
                ref_prox(1, 0.25 * sigma, g, n, dt, want);
                for (int64_t i = 0; i < n; i++) grad[2 * i] = 2 * g[2 * i];
                char what[160];
                snprintf(what, sizeof what, "user %s %s %s", k->name, tu_dtname(dt), tu_partname(TU_PARTS[pi]));
                plm_array_t x = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, g);
                plm_array_t y = tu_make(k->ndim, k->shape, k->axis, TU_PARTS[pi], dt, NULL, NULL, NULL);
                TU_CHECK_OK(plm_prox_apply(u, x, 0.25, y));
                tu_check_local(y, want, tu_rtol(dt), what);
                TU_CHECK_OK(plm_prox_grad(u, x, y));
                tu_check_local(y, grad, tu_rtol(dt), what);
                double v = -1, vref = -2;
                TU_CHECK_OK(plm_prox_value(u, x, &v));
                TU_CHECK_OK(plm_prox_value(l1, x, &vref));
                TU_EXPECT(fabs(v - vref) <= 1e-12 * (fabs(vref) + 1), "%s: value %.17g, L1's %.17g", what, v, vref);
                TU_CHECK_OK(plm_prox_apply(u, x, 0.25, x)); /* in place */
                tu_check_local(x, want, tu_rtol(dt), what);
                if (tu_size > 1) { /* a failure on rank 0 (never without a share) is agreed on every rank */
                    g_fail_rank = 0;
                    double v2 = 0;
                    TU_EXPECT_ERR(plm_prox_apply(u, x, 0.25, y), PLM_ERR_CALLBACK);
                    TU_EXPECT_ERR(plm_prox_value(u, x, &v2), PLM_ERR_CALLBACK);
                    TU_EXPECT_ERR(plm_prox_grad(u, x, y), PLM_ERR_CALLBACK);
                    g_fail_rank = -1;
                }
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                free(g);
                free(want);
                free(grad);
            }
    /* Without value and grad functions those calls are refused on every rank. */
    plm_prox_t bare = NULL, bad = (plm_prox_t)1;
    TU_OK(plm_prox_create_callback(user_prox, NULL, NULL, &sigma, NULL, &bare));
    TU_EXPECT_ERR(plm_prox_create_callback(NULL, user_value, NULL, &sigma, NULL, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT(bad == NULL, "out cleared on failure");
    const int64_t shape[1] = {5};
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    double v;
    TU_EXPECT_ERR(plm_prox_value(bare, x, &v), PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_prox_grad(bare, x, y), PLM_ERR_NOT_SUPPORTED);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_prox_destroy(&bare);
    plm_prox_destroy(&l1);
    TU_EXPECT(g_destroyed == 0, "destroy ran early");
    plm_prox_destroy(&u);
    TU_EXPECT(g_destroyed == 1, "destroy(ctx) ran %d times", g_destroyed);
    TU_DONE();
}

/* ProximalGradient with the user L1 as g and a closed-form L2 as f gives L1's iterates. */
static void test_user_prox_in_solver(void **state)
{
    (void)state;
    static double sigma = 0.3;
    const int64_t shape[1] = {23};
    double g[46];
    tu_gen(g, 23, 2, PLM_FLOAT64, 0);
    plm_prox_t u = NULL, l1 = NULL, f = NULL;
    plm_array_t b = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g);
    plm_array_t x1 = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t x2 = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_prox_create_callback(user_prox, user_value, NULL, &sigma, NULL, &u));
    TU_OK(plm_prox_create_l1(sigma, &l1));
    TU_OK(plm_prox_create_l2(NULL, b, NULL, 1.0, 1.0, 1, 10, 0, NULL, 1, PLM_L2_CGLS, &f));
    const double eps = 1;
    TU_CHECK_OK(plm_array_fill(x1, 0, 0));
    TU_CHECK_OK(plm_array_fill(x2, 0, 0));
    TU_CHECK_OK(plm_solve_proximal_gradient(f, u, x1, 0.5, &eps, 1, 1.0, 15, PLM_ACCEL_FISTA, 1e-9, NULL));
    TU_CHECK_OK(plm_solve_proximal_gradient(f, l1, x2, 0.5, &eps, 1, 1.0, 15, PLM_ACCEL_FISTA, 1e-9, NULL));
    double a1[23], a2[23], err = 0;
    TU_CHECK_OK(plm_array_asarray(x1, 0, a1, sizeof a1));
    TU_CHECK_OK(plm_array_asarray(x2, 0, a2, sizeof a2));
    for (int i = 0; i < 23; i++) err = fmax(err, fabs(a1[i] - a2[i]));
    TU_EXPECT(err <= 1e-12, "user L1 against L1 in ProximalGradient: %g", err);
    plm_prox_destroy(&u);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&f);
    plm_array_destroy(&b);
    plm_array_destroy(&x1);
    plm_array_destroy(&x2);
    TU_DONE();
}

/* ---- stacks (PyLops-MPI's MPIProxOperator on a StackedDistributedArray) ------------------- */

/* Member 0: a TU_CASES shape, SCATTER; 1: a BROADCAST 3x5; 2: 2 elements (fewer than ranks,
 * empty blocks); 3: 13 elements SCATTER with contiguous mask groups (its value is its group's). */
#define NMEM 4
typedef struct {
    plm_array_t x[NMEM], y[NMEM];
    double *g[NMEM];          /* each member's global data */
    double *mine[NMEM];       /* the part each member's value sees on this rank (group data) */
    int64_t n[NMEM], nmine[NMEM];
    plm_stacked_t sx, sy;
} stack_case_t;

static void stack_case_make(stack_case_t *t, int c, plm_dtype_t dt, int seed)
{
    const tu_case_t *k = &TU_CASES[c];
    const int64_t s1[2] = {3, 5}, s2[1] = {2}, s3[1] = {13};
    const int ndim[NMEM] = {k->ndim, 2, 1, 1}, axis[NMEM] = {k->axis, 0, 0, 0};
    const int64_t *shape[NMEM] = {k->shape, s1, s2, s3};
    const plm_partition_t part[NMEM] = {PLM_PARTITION_SCATTER, PLM_PARTITION_BROADCAST, PLM_PARTITION_SCATTER,
                                        PLM_PARTITION_SCATTER};
    int *mask = (int *)calloc((size_t)tu_size, sizeof(int));
    int64_t *rows = (int64_t *)calloc((size_t)tu_size, sizeof(int64_t));
    tu_mask(1, tu_size, mask);
    for (int m = 0; m < NMEM; m++) {
        t->n[m] = tu_prod(shape[m], 0, ndim[m]);
        t->g[m] = tu_alloc(t->n[m]);
        tu_gen(t->g[m], t->n[m], seed + 5 * m, dt, 1);
        const int *mk = m == 3 ? mask : NULL;
        t->x[m] = tu_make(ndim[m], shape[m], axis[m], part[m], dt, NULL, mk, t->g[m]);
        t->y[m] = tu_make(ndim[m], shape[m], axis[m], part[m], dt, NULL, mk, NULL);
        t->mine[m] = tu_alloc(t->n[m]);
        if (m == 3) {
            int64_t gs[1];
            tu_default_rows(1, s3, 0, PLM_PARTITION_SCATTER, tu_size, rows);
            t->nmine[m] = tu_group_data(t->g[m], 1, s3, 0, rows, mask, t->mine[m], gs);
        } else {
            memcpy(t->mine[m], t->g[m], sizeof(double) * (size_t)(2 * t->n[m]));
            t->nmine[m] = t->n[m];
        }
    }
    TU_OK(plm_stacked_create(NMEM, t->x, &t->sx));
    TU_OK(plm_stacked_create(NMEM, t->y, &t->sy));
    free(mask);
    free(rows);
}

static void stack_case_free(stack_case_t *t)
{
    plm_stacked_destroy(&t->sx);
    plm_stacked_destroy(&t->sy);
    for (int m = 0; m < NMEM; m++) {
        plm_array_destroy(&t->x[m]);
        plm_array_destroy(&t->y[m]);
        free(t->g[m]);
        free(t->mine[m]);
    }
}

/* kind 0: L0, 1: L1, 2: Box, 3: user (pyproximal's L1 through callbacks). */
static void stack_ref(int kind, double sigma, double tau, double lo, double hi, const double *g, int64_t n,
                      plm_dtype_t dt, double *want)
{
    if (kind != 2) {
        ref_prox(kind == 3 ? 1 : kind, tau * sigma, g, n, dt, want);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        want[2 * i] = fmin(fmax(g[2 * i], lo), hi);
        want[2 * i + 1] = 0;
        tu_round(dt, &want[2 * i], &want[2 * i + 1]);
    }
}

static void test_prox_stacked_vs_serial(void **state)
{
    (void)state;
    static double sigma = 0.8;
    const double tau = 0.3, lo = -0.5, hi = 0.9;
    plm_prox_t p[4] = {NULL, NULL, NULL, NULL};
    TU_OK(plm_prox_create_l0(sigma, &p[0]));
    TU_OK(plm_prox_create_l1(sigma, &p[1]));
    TU_OK(plm_prox_create_box(lo, hi, &p[2]));
    TU_OK(plm_prox_create_callback(user_prox, user_value, NULL, &sigma, NULL, &p[3]));
    for (int kind = 0; kind < 4; kind++)
        for (int c = 0; c < TU_NCASES; c++)
            for (int d = 0; d < (kind < 2 ? 4 : 2); d++) { /* Box and the user L1: real dtypes */
                const plm_dtype_t dt = TU_DTYPES[d];
                stack_case_t t;
                stack_case_make(&t, c, dt, c + kind);
                char what[160];
                snprintf(what, sizeof what, "stacked %s %s %s", kind == 0 ? "L0" : kind == 1 ? "L1" : kind == 2 ? "Box" : "user",
                         TU_CASES[c].name, tu_dtname(dt));
                /* The value: the members' sum (their groups' parts), Box: all inside. */
                double vref = 0;
                int inside = 1;
                for (int m = 0; m < NMEM; m++) {
                    if (kind < 2) vref += ref_value(kind, sigma, t.mine[m], t.nmine[m]);
                    else if (kind == 3) vref += ref_value(1, sigma, t.mine[m], t.nmine[m]);
                    else
                        for (int64_t i = 0; i < t.nmine[m]; i++)
                            inside = inside && t.mine[m][2 * i] >= lo && t.mine[m][2 * i] <= hi;
                }
                if (kind == 2) vref = inside;
                double v = -1;
                TU_CHECK_OK(plm_prox_value_stacked(p[kind], t.sx, &v));
                TU_EXPECT(fabs(v - vref) <= tu_rtol(dt) * (fabs(vref) + 1), "%s: value %.17g want %.17g", what, v, vref);
                TU_CHECK_OK(plm_prox_apply_stacked(p[kind], t.sx, tau, t.sy));
                for (int m = 0; m < NMEM; m++) {
                    double *want = tu_alloc(t.n[m]);
                    stack_ref(kind, sigma, tau, lo, hi, t.g[m], t.n[m], dt, want);
                    tu_check_local(t.y[m], want, tu_rtol(dt), what);
                    free(want);
                }
                if (kind == 2) {
                    TU_CHECK_OK(plm_prox_value_stacked(p[kind], t.sy, &v));
                    TU_EXPECT(v == 1.0, "%s: the projection is inside: %g", what, v);
                }
                TU_CHECK_OK(plm_prox_apply_stacked(p[kind], t.sx, tau, t.sx)); /* in place */
                for (int m = 0; m < NMEM; m++) {
                    double *want = tu_alloc(t.n[m]);
                    stack_ref(kind, sigma, tau, lo, hi, t.g[m], t.n[m], dt, want);
                    tu_check_local(t.x[m], want, tu_rtol(dt), what);
                    free(want);
                }
                stack_case_free(&t);
            }
    for (int kind = 0; kind < 4; kind++) plm_prox_destroy(&p[kind]);
    TU_DONE();
}

/* A stack of one member gives plm_prox_apply / plm_prox_value's results. */
static void test_prox_stacked_one_member(void **state)
{
    (void)state;
    const int64_t shape[2] = {7, 4};
    double g[56];
    tu_gen(g, 28, 4, PLM_FLOAT64, 1);
    plm_array_t x = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g);
    plm_array_t y = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t z = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_stacked_t sx = NULL, sz = NULL;
    TU_OK(plm_stacked_create(1, &x, &sx));
    TU_OK(plm_stacked_create(1, &z, &sz));
    plm_prox_t p = NULL;
    TU_OK(plm_prox_create_l1(0.4, &p));
    double v1 = -1, v2 = -2, a[28], b[28];
    TU_CHECK_OK(plm_prox_value(p, x, &v1));
    TU_CHECK_OK(plm_prox_value_stacked(p, sx, &v2));
    TU_EXPECT(v1 == v2, "one member: value %.17g, the array's %.17g", v2, v1);
    TU_CHECK_OK(plm_prox_apply(p, x, 0.7, y));
    TU_CHECK_OK(plm_prox_apply_stacked(p, sx, 0.7, sz));
    TU_CHECK_OK(plm_array_asarray(y, 0, a, sizeof a));
    TU_CHECK_OK(plm_array_asarray(z, 0, b, sizeof b));
    TU_EXPECT(memcmp(a, b, sizeof a) == 0, "one member: prox differs from the array's");
    plm_prox_destroy(&p);
    plm_stacked_destroy(&sx);
    plm_stacked_destroy(&sz);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    TU_DONE();
}

/* Bad arguments on one rank fail on every rank; L2, complex Box and failing callbacks too. */
static void test_prox_stacked_errors(void **state)
{
    (void)state;
    static double sigma = 0.5;
    const int64_t s1[1] = {7}, s2[1] = {8};
    const int last = tu_rank == tu_size - 1;
    plm_array_t a = tu_make(1, s1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t b = tu_make(1, s2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t c = tu_make(1, s1, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, NULL, NULL, NULL);
    plm_array_t ab[2] = {a, b}, aa[2] = {a, a};
    plm_stacked_t s = NULL, s_other = NULL, s_short = NULL, s_c = NULL;
    TU_OK(plm_stacked_create(2, ab, &s));
    TU_OK(plm_stacked_create(2, aa, &s_other)); /* member 1 of another shape */
    TU_OK(plm_stacked_create(1, ab, &s_short));
    TU_OK(plm_stacked_create(1, &c, &s_c));
    TU_CHECK_OK(plm_array_fill(a, 0.3, 0));
    TU_CHECK_OK(plm_array_fill(b, -0.2, 0));
    plm_prox_t l1 = NULL, box = NULL, l2 = NULL, u = NULL;
    TU_OK(plm_prox_create_l1(1, &l1));
    TU_OK(plm_prox_create_box(0, 1, &box));
    TU_OK(plm_prox_create_l2(NULL, NULL, NULL, 1.0, 1.0, 1, 10, 0, NULL, 1, PLM_L2_CGLS, &l2));
    TU_OK(plm_prox_create_callback(user_prox, user_value, NULL, &sigma, NULL, &u));
    double v = 0;
    TU_EXPECT_ERR(plm_prox_apply_stacked(l1, s, last ? 0.0 : 1.0, s), PLM_ERR_INVALID_ARG);
    if (tu_size > 1) TU_EXPECT_ERR(plm_prox_apply_stacked(l1, s, last ? 0.5 : 1.0, s), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_apply_stacked(last ? NULL : l1, s, 1.0, s), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_apply_stacked(l1, s, 1.0, last ? NULL : s), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_apply_stacked(l1, s, 1.0, last ? s_other : s), PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR2(plm_prox_apply_stacked(l1, s, 1.0, last ? s_short : s), PLM_ERR_SIZE_MISMATCH, PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_value_stacked(l1, s, last ? NULL : &v), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_value_stacked(last ? NULL : l1, s, &v), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_prox_apply_stacked(l2, s, 1.0, s), PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_prox_value_stacked(l2, s, &v), PLM_ERR_NOT_SUPPORTED);
    TU_EXPECT_ERR(plm_prox_apply_stacked(box, s_c, 1.0, s_c), PLM_ERR_DTYPE_MISMATCH);
    TU_EXPECT_ERR(plm_prox_value_stacked(box, s_c, &v), PLM_ERR_DTYPE_MISMATCH);
    TU_CHECK_OK(plm_prox_value_stacked(box, s, &v));
    TU_EXPECT(v == 0.0, "Box: member 1 is outside [0, 1]: %g", v);
    if (tu_size > 1) { /* a callback failing on rank 0 fails every rank */
        g_fail_rank = 0;
        TU_EXPECT_ERR(plm_prox_apply_stacked(u, s, 0.25, s), PLM_ERR_CALLBACK);
        TU_EXPECT_ERR(plm_prox_value_stacked(u, s, &v), PLM_ERR_CALLBACK);
        g_fail_rank = -1;
    }
    double out[8];
    TU_CHECK_OK(plm_array_asarray(b, 0, out, sizeof out));
    TU_EXPECT(out[0] == -0.2 && out[7] == -0.2, "a failed call wrote: %g %g", out[0], out[7]);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&box);
    plm_prox_destroy(&l2);
    plm_prox_destroy(&u);
    plm_stacked_destroy(&s);
    plm_stacked_destroy(&s_other);
    plm_stacked_destroy(&s_short);
    plm_stacked_destroy(&s_c);
    plm_array_destroy(&a);
    plm_array_destroy(&b);
    plm_array_destroy(&c);
    TU_DONE();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_prox_vs_serial),
        TU_TEST(test_prox_nan),
        TU_TEST(test_prox_errors),
        TU_TEST(test_box_vs_serial),
        TU_TEST(test_box_edges),
        TU_TEST(test_user_prox),
        TU_TEST(test_user_prox_in_solver),
        TU_TEST(test_prox_stacked_vs_serial),
        TU_TEST(test_prox_stacked_one_member),
        TU_TEST(test_prox_stacked_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
