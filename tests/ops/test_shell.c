/* Shell operators (plm_op_shell): user functions on whole distributed arrays that communicate
 * through the library's collectives. The operator A = diag(d) + w 1^T couples every element
 * (a global sum in matvec, a global dot in rmatvec); it is checked against its dense matrix
 * built here, forward, adjoint and dot test, alone and composed, solved with CGLS and CG, and
 * a failure on one rank is agreed. */
#include "ops/ops_test_util.h"

typedef struct {
    plm_dtype_t dt;
    plm_array_t ones, w; /* on the operator's layout */
    int bad_rank;        /* this rank's functions return 3 (after the same collectives) */
    int *freed;
} shell_ctx;

static double dval(int64_t g) { return 2.0 + 0.1 * (double)g; }

/* y_i = d_i x_i + c w_i (matvec, c = sum x) or y_i = d_i x_i + c (rmatvec, c = w^H x). */
static int shell_apply(shell_ctx *s, plm_const_array_t x, plm_array_t y, int adjoint)
{
    double c[2] = {0, 0};
    if (adjoint ? plm_array_dot(s->w, x, 1, &c[0], &c[1]) : plm_array_dot(s->ones, x, 0, &c[0], &c[1])) return 1;
    int64_t off = 0, n = 0;
    const void *xd = NULL, *wd = NULL;
    void *yd = NULL;
    if (plm_array_local_offset(x, &off) || plm_array_local_size(x, &n)) return 1;
    if (plm_array_get_local_read(x, &xd) || plm_array_get_local_read(s->w, &wd) || plm_array_get_local_write(y, &yd))
        return 1;
    const double complex cc = c[0] + I * c[1];
    for (int64_t i = 0; i < n; i++) {
        double xr, xi, wr, wi;
        tu_get(s->dt, xd, i, &xr, &xi);
        tu_get(s->dt, wd, i, &wr, &wi);
        double complex v = dval(off + i) * (xr + I * xi) + (adjoint ? cc : cc * (wr + I * wi));
        tu_set(s->dt, yd, i, creal(v), cimag(v));
    }
    if (plm_array_restore_local_read(x, &xd) || plm_array_restore_local_read(s->w, &wd) ||
        plm_array_restore_local_write(y, &yd))
        return 1;
    return tu_rank == s->bad_rank ? 3 : 0;
}
static int shell_mv(void *ctx, plm_const_array_t x, plm_array_t y) { return shell_apply(ctx, x, y, 0); }
static int shell_rmv(void *ctx, plm_const_array_t x, plm_array_t y) { return shell_apply(ctx, x, y, 1); }
static void shell_free(void *ctx)
{
    shell_ctx *s = ctx;
    *s->freed += 1;
    plm_array_destroy(&s->ones);
    plm_array_destroy(&s->w);
    free(s);
}

/* A global n with local sizes split unevenly (rank r gets r-dependent counts, some empty). */
static plm_layout_t shell_layout(int64_t n)
{
    int64_t g[1] = {n};
    plm_layout_t l = NULL;
    TU_OK(plm_layout_create(tu_comm, 1, g, 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, &l));
    return l;
}

static plm_op_t shell_op(plm_layout_t l, plm_dtype_t dt, int bad, int *freed, double complex **G, int64_t n)
{
    shell_ctx *s = calloc(1, sizeof *s);
    s->dt = dt;
    s->bad_rank = bad;
    s->freed = freed;
    s->w = vec_on(l, dt, 9);
    TU_OK(plm_array_create_from_layout(l, dt, PLM_MEMORY_HOST, NULL, 0, &s->ones));
    TU_CHECK_OK(plm_array_fill(s->ones, 1.0, 0.0));
    plm_op_t A = NULL;
    TU_OK(plm_op_shell(l, l, dt, shell_mv, shell_rmv, s, shell_free, &A));
    if (G) {
        double complex *w = gathered(s->w, dt, n);
        *G = calloc((size_t)(n * n) + 1, sizeof **G);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) (*G)[i * n + j] = (i == j ? dval(i) : 0.0) + w[i];
        free(w);
    }
    return A;
}

static void test_shell_reference(void **state)
{
    (void)state;
    const plm_dtype_t dts[] = {PLM_FLOAT32, PLM_FLOAT64, PLM_COMPLEX64, PLM_COMPLEX128};
    const int64_t sizes[] = {1, 3, 7, 10};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (size_t t = 0; t < 4; t++) {
            int freed = 0;
            int64_t n = sizes[k];
            double complex *G = NULL;
            plm_layout_t l = shell_layout(n);
            plm_op_t A = shell_op(l, dts[t], -1, &freed, &G, n);
            check_against(A, G, n, n, dts[t], "shell");
            /* composed: 2 A + A^H A */
            plm_op_t AH = NULL, AHA = NULL, A2 = NULL, C = NULL;
            TU_OK(plm_op_adjoint(A, &AH));
            TU_OK(plm_op_product(AH, A, &AHA));
            TU_OK(plm_op_scale(A, 2.0, 0.0, &A2));
            TU_OK(plm_op_sum(A2, AHA, &C));
            double complex *GC = calloc((size_t)(n * n) + 1, sizeof *GC);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    double complex v = 2.0 * G[i * n + j];
                    for (int64_t m = 0; m < n; m++) v += conj(G[m * n + i]) * G[m * n + j];
                    GC[i * n + j] = v;
                }
            check_against(C, GC, n, n, dts[t], "2 shell + shell^H shell");
            plm_op_destroy(&A);
            plm_op_destroy(&AH);
            plm_op_destroy(&A2);
            plm_op_destroy(&C);
            TU_EXPECT(freed == 0, "composites keep the shell alive");
            plm_op_destroy(&AHA);
            TU_EXPECT(freed == 1, "the shell's ctx is destroyed once, with the last reference (%d)", freed);
            free(G);
            free(GC);
            plm_layout_destroy(&l);
        }
    TU_DONE();
}

/* CGLS on A and CG on A^H A recover a known model. */
static void test_shell_solve(void **state)
{
    (void)state;
    const int64_t n = 9;
    int freed = 0;
    plm_layout_t l = shell_layout(n);
    plm_op_t A = shell_op(l, PLM_FLOAT64, -1, &freed, NULL, n), AH = NULL, AHA = NULL;
    TU_OK(plm_op_adjoint(A, &AH));
    TU_OK(plm_op_product(AH, A, &AHA));
    plm_array_t xt = vec_on(l, PLM_FLOAT64, 4), y = vec_on(l, PLM_FLOAT64, 0), z = vec_on(l, PLM_FLOAT64, 0),
                x = NULL;
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    TU_CHECK_OK(plm_op_apply(A, xt, y));
    TU_CHECK_OK(plm_op_apply(AH, y, z));
    for (int pass = 0; pass < 2; pass++) {
        TU_CHECK_OK(plm_array_fill(x, 0.0, 0.0));
        if (pass == 0) TU_CHECK_OK(plm_solve_cgls(A, y, x, 60, 0.0, 0.0, NULL));
        else TU_CHECK_OK(plm_solve_cg(AHA, z, x, 60, 0.0, NULL));
        double complex *got = gathered(x, PLM_FLOAT64, n), *want = gathered(xt, PLM_FLOAT64, n);
        double e = rel_err(got, want, n);
        TU_EXPECT(e < 1e-8, "%s on a shell operator: relative error %g", pass ? "CG" : "CGLS", e);
        free(got);
        free(want);
    }
    plm_array_destroy(&xt);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_array_destroy(&x);
    plm_op_destroy(&A);
    plm_op_destroy(&AH);
    plm_op_destroy(&AHA);
    plm_layout_destroy(&l);
    TU_DONE();
}

/* A non-zero return on one rank fails every rank, in an apply and in a solve. */
static void test_shell_error(void **state)
{
    (void)state;
    const int64_t n = 5;
    for (int bad = 0; bad < tu_size; bad++) {
        int freed = 0;
        plm_layout_t l = shell_layout(n);
        plm_op_t A = shell_op(l, PLM_FLOAT64, bad, &freed, NULL, n);
        plm_array_t x = vec_on(l, PLM_FLOAT64, 1), y = vec_on(l, PLM_FLOAT64, 2);
        TU_EXPECT_ERR(plm_op_apply(A, x, y), PLM_ERR_CALLBACK);
        /* the failing rank keeps its own message; the others learn which rank failed */
        char want[32];
        if (tu_rank == bad) snprintf(want, sizeof want, "callback returned 3");
        else snprintf(want, sizeof want, "on rank %d:", bad);
        TU_EXPECT(strstr(plm_last_error(), want) != NULL, "the message has '%s': %s", want, plm_last_error());
        TU_EXPECT_ERR(plm_op_apply_adjoint(A, y, x), PLM_ERR_CALLBACK);
        TU_EXPECT_ERR(plm_solve_cgls(A, y, x, 5, 0.0, 0.0, NULL), PLM_ERR_CALLBACK);
        double v = 0;
        TU_CHECK_OK(plm_array_dot(x, x, 0, &v, NULL)); /* the next collective works */
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        plm_op_destroy(&A);
        plm_layout_destroy(&l);
    }
    TU_DONE();
}

/* Bad arguments of the (local) constructor. */
static void test_shell_args(void **state)
{
    (void)state;
    plm_layout_t l = shell_layout(4);
    plm_op_t A = NULL;
    TU_EXPECT_ERR(plm_op_shell(l, l, PLM_FLOAT64, NULL, NULL, NULL, NULL, &A), PLM_ERR_INVALID_ARG);
    TU_EXPECT(A == NULL, "out is NULL on failure");
    TU_EXPECT_ERR(plm_op_shell(NULL, l, PLM_FLOAT64, shell_mv, NULL, NULL, NULL, &A), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_shell(l, l, (plm_dtype_t)99, shell_mv, NULL, NULL, NULL, &A), PLM_ERR_INVALID_ARG);
    plm_layout_destroy(&l);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_shell_reference),
        TU_TEST(test_shell_solve),
        TU_TEST(test_shell_error),
        TU_TEST(test_shell_args),
    };
    return plm_run_group_tests_mpi(tests);
}
