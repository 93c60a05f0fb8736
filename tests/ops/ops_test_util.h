/* Helpers of the operator tests: seeded vectors on operator layouts, gathering, and checks of
 * an operator against a dense global matrix built by the test (forward, adjoint, dot test). */
#ifndef PLM_OPS_TEST_UTIL_H
#define PLM_OPS_TEST_UTIL_H

#include <complex.h>

#include "array/array_test_util.h"

/* ---- vectors on operator layouts --------------------------------------------------------- */

static TU_UNUSED double complex gval(int64_t g, int seed, plm_dtype_t dt)
{
    double re = 0.5 + sin(0.7 * (double)g + seed), im = tu_cplx(dt) ? cos(0.3 * (double)g - seed) : 0.0;
    tu_round(dt, &re, &im);
    return re + I * im;
}

/* An array on layout l holding gval(global index) (replicated for BROADCAST). */
static TU_UNUSED plm_array_t vec_on(plm_layout_t l, plm_dtype_t dt, int seed)
{
    plm_array_t x = NULL;
    TU_OK(plm_array_create_from_layout(l, dt, PLM_MEMORY_HOST, NULL, 0, &x));
    int64_t off = 0, n = 0;
    void *d = NULL;
    TU_CHECK_OK(plm_array_local_offset(x, &off));
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_CHECK_OK(plm_array_get_local_write(x, &d));
    for (int64_t i = 0; i < n; i++) {
        double complex v = gval(off + i, seed, dt);
        tu_set(dt, d, i, creal(v), cimag(v));
    }
    TU_CHECK_OK(plm_array_restore_local_write(x, &d));
    return x;
}

/* Gathers a 1-D array into complex doubles (n values). */
static TU_UNUSED double complex *gathered(plm_const_array_t x, plm_dtype_t dt, int64_t n)
{
    void *raw = calloc((size_t)n + 1, tu_esize(dt));
    double complex *out = calloc((size_t)n + 1, sizeof *out);
    TU_CHECK_OK(plm_array_asarray(x, 0, raw, tu_bytes(dt, n)));
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, raw, i, &re, &im);
        out[i] = re + I * im;
    }
    free(raw);
    return out;
}

static TU_UNUSED void expect_close(const double complex *got, const double complex *want, int64_t n, plm_dtype_t dt,
                         const char *what)
{
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, cabs(want[i]));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (cabs(got[i] - want[i]) > tu_rtol(dt) * 10 * (scale + 1e-300)) {
            if (first < 0) first = i;
            bad++;
        }
    TU_EXPECT(bad == 0, "%s (%s): %lld of %lld differ; first [%lld] got %g%+gi want %g%+gi", what, tu_dtname(dt),
              (long long)bad, (long long)n, (long long)first, first >= 0 ? creal(got[first]) : 0.0,
              first >= 0 ? cimag(got[first]) : 0.0, first >= 0 ? creal(want[first]) : 0.0,
              first >= 0 ? cimag(want[first]) : 0.0);
}

/* y = G x (adjoint: G^H x) for the global dense G (M x N). */
static TU_UNUSED double complex *matvec(const double complex *G, int64_t M, int64_t N, const double complex *x, int adjoint)
{
    const int64_t n_out = adjoint ? N : M;
    double complex *y = calloc((size_t)n_out + 1, sizeof *y);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            if (adjoint) y[j] += conj(G[i * N + j]) * x[i];
            else y[i] += G[i * N + j] * x[j];
        }
    return y;
}

/* ||got - want|| / ||want|| over n values. */
static TU_UNUSED double rel_err(const double complex *got, const double complex *want, int64_t n)
{
    double err = 0, nrm = 0;
    for (int64_t j = 0; j < n; j++) {
        err += pow(cabs(got[j] - want[j]), 2);
        nrm += pow(cabs(want[j]), 2);
    }
    return sqrt(err / nrm);
}

/* Applies op forward and adjoint on seeded vectors and compares with G (M x N). */
static TU_UNUSED void check_against(plm_const_op_t op, const double complex *G, int64_t M, int64_t N, plm_dtype_t dt,
                          const char *what)
{
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(op, &dom));
    TU_OK(plm_op_range(op, &ran));
    plm_array_t x = vec_on(dom, dt, 1), y = vec_on(ran, dt, 2), ax = vec_on(ran, dt, 3), ahy = vec_on(dom, dt, 4);
    TU_CHECK_OK(plm_op_apply(op, x, ax));
    TU_CHECK_OK(plm_op_apply_adjoint(op, y, ahy));
    double complex *xg = gathered(x, dt, N), *yg = gathered(y, dt, M);
    double complex *got = gathered(ax, dt, M), *want = matvec(G, M, N, xg, 0);
    char buf[192]; /* room for the callers' descriptions (up to 160) and the suffix */
    snprintf(buf, sizeof buf, "%s forward", what);
    expect_close(got, want, M, dt, buf);
    free(got);
    free(want);
    got = gathered(ahy, dt, N);
    want = matvec(G, M, N, yg, 1);
    snprintf(buf, sizeof buf, "%s adjoint", what);
    expect_close(got, want, N, dt, buf);
    int passed = 0;
    double yy[2], xx[2];
    TU_CHECK_OK(plm_op_dottest(op, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
    TU_EXPECT(passed, "%s (%s): dot test %g%+gi vs %g%+gi", what, tu_dtname(dt), yy[0], yy[1], xx[0], xx[1]);
    free(got);
    free(want);
    free(xg);
    free(yg);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&ax);
    plm_array_destroy(&ahy);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
}

/* Row splits of axis 0 for the operators on the stencil model (stencils, NonStationaryConvolve1D). */
enum { ROWS_DEFAULT, ROWS_THIN, ROWS_EMPTY, NROW_SPLITS };
static TU_UNUSED const char *const ROW_SPLIT_NAMES[NROW_SPLITS] = {"default", "thin", "empty"};

/* This rank's rows of axis 0 for a split kind (-1: the library's default split). */
static TU_UNUSED int64_t rows_for(int split, int64_t n, int P, int r)
{
    if (split == ROWS_DEFAULT) return -1;
    if (split == ROWS_THIN) { /* one row per rank while they last, the rest on the last rank */
        if (r < P - 1) return r < n ? 1 : 0;
        return n > P - 1 ? n - (P - 1) : 0;
    }
    if (P == 1) return n; /* ROWS_EMPTY: rank 1 holds nothing, the others share n */
    if (r == 1) return 0;
    return tu_split(n, P - 1, r == 0 ? 0 : r - 1);
}

/* Serial CGLS with PyLops' rules (damp squared throughout), on the global dense G. */
static TU_UNUSED void serial_cgls(const double *G, int64_t M, int64_t N, const double *y, int64_t niter, double damp, double tol,
                        double *x, int *istop, int64_t *iters, double *r1, double *r2)
{
    double *s = calloc((size_t)M, 8), *q = calloc((size_t)M, 8), *r = calloc((size_t)N, 8), *c = calloc((size_t)N, 8);
    const double d2 = damp * damp;
    for (int64_t j = 0; j < N; j++) x[j] = 0;
    for (int64_t i = 0; i < M; i++) s[i] = y[i];
    for (int64_t j = 0; j < N; j++) {
        r[j] = 0;
        for (int64_t i = 0; i < M; i++) r[j] += G[i * N + j] * s[i];
        c[j] = r[j];
    }
    double kold = 0;
    for (int64_t j = 0; j < N; j++) kold += r[j] * r[j];
    for (int64_t i = 0; i < M; i++) {
        q[i] = 0;
        for (int64_t j = 0; j < N; j++) q[i] += G[i * N + j] * c[j];
    }
    int64_t it = 0;
    double r2n = 0;
    while (it < niter && kold > tol) {
        double qq = 0, cc = 0;
        for (int64_t i = 0; i < M; i++) qq += q[i] * q[i];
        for (int64_t j = 0; j < N; j++) cc += c[j] * c[j];
        const double a = kold / (qq + d2 * cc);
        for (int64_t j = 0; j < N; j++) x[j] += a * c[j];
        for (int64_t i = 0; i < M; i++) s[i] -= a * q[i];
        double k = 0;
        for (int64_t j = 0; j < N; j++) {
            r[j] = -d2 * x[j];
            for (int64_t i = 0; i < M; i++) r[j] += G[i * N + j] * s[i];
            k += r[j] * r[j];
        }
        const double b = k / kold;
        for (int64_t j = 0; j < N; j++) c[j] = r[j] + b * c[j];
        for (int64_t i = 0; i < M; i++) {
            q[i] = 0;
            for (int64_t j = 0; j < N; j++) q[i] += G[i * N + j] * c[j];
        }
        kold = k;
        it++;
    }
    double ss = 0, xx = 0;
    for (int64_t i = 0; i < M; i++) ss += s[i] * s[i];
    for (int64_t j = 0; j < N; j++) xx += x[j] * x[j];
    r2n = sqrt(ss + d2 * xx);
    *istop = kold < tol ? 1 : 2;
    *iters = it;
    *r1 = kold;
    *r2 = r2n;
    free(s);
    free(q);
    free(r);
    free(c);
}

/* ---- stacks ------------------------------------------------------------------------------- */

/* A stack of arrays on an operator's parts (domain or range), seeded per member. */
static TU_UNUSED plm_stacked_t stack_on(plm_const_op_t op, int range, plm_dtype_t dt, int seed, plm_array_t *members, int *n)
{
    int nd = 0, nr = 0;
    TU_OK(plm_op_parts(op, &nd, &nr));
    *n = range ? nr : nd;
    for (int i = 0; i < *n; i++) {
        plm_layout_t l = NULL;
        TU_OK(range ? plm_op_range_part(op, i, &l) : plm_op_domain_part(op, i, &l));
        members[i] = vec_on(l, dt, seed + 10 * i);
        plm_layout_destroy(&l);
    }
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(*n, members, &s));
    return s;
}

static TU_UNUSED double complex *gathered_stack(plm_const_stacked_t s, plm_dtype_t dt, int64_t n)
{
    void *raw = calloc((size_t)n + 1, tu_esize(dt));
    double complex *out = calloc((size_t)n + 1, sizeof *out);
    TU_CHECK_OK(plm_stacked_asarray(s, raw, tu_bytes(dt, n)));
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, raw, i, &re, &im);
        out[i] = re + I * im;
    }
    free(raw);
    return out;
}

#endif
