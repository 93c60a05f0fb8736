/* Proximal operators (L1, L0): prox and value against serial float64 references computed here,
 * for every dtype, SCATTER and BROADCAST, the shapes of TU_CASES (uneven splits, fewer elements
 * than ranks), in place and out of place; NaN data; bad arguments fail on every rank. */
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

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_prox_vs_serial),
        TU_TEST(test_prox_nan),
        TU_TEST(test_prox_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
