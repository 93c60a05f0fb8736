/* StackedDistributedArray (plm_stacked_*): dot, norm of the concatenation, axpby, scale, copy,
 * zeros_like, asarray, member access and member lifetime. */
#include "array_test_util.h"

#define NM 4
typedef struct {
    int ndim;
    int64_t shape[3];
    int axis;
    plm_partition_t part;
    int reversed;
} member_t;

static const member_t MEMBERS[NM] = {
    {1, {101}, 0, PLM_PARTITION_SCATTER, 0},
    {2, {5, 7}, 1, PLM_PARTITION_SCATTER, 1},
    {1, {9}, 0, PLM_PARTITION_BROADCAST, 0},
    {3, {3, 4, 2}, 0, PLM_PARTITION_SCATTER, 0},
};

static int64_t msize(int i) { return tu_prod(MEMBERS[i].shape, 0, MEMBERS[i].ndim); }
static int64_t total(void)
{
    int64_t t = 0;
    for (int i = 0; i < NM; i++) t += msize(i);
    return t;
}

/* Members filled from g[i] (seeded by seed + i; member `zero_member` with zeros). */
static void make_members(plm_dtype_t dt, int seed, int zero_member, const int *mask0, plm_array_t *a, double **g)
{
    int64_t rows[3 * 8];
    for (int i = 0; i < NM; i++) {
        const member_t *M = &MEMBERS[i];
        g[i] = tu_alloc(msize(i));
        tu_gen(g[i], msize(i), seed + 7 * i, dt, i == zero_member);
        if (M->reversed) tu_reversed_rows(M->ndim, M->shape, M->axis, tu_size, rows);
        a[i] = tu_make(M->ndim, M->shape, M->axis, M->part, dt, M->reversed ? rows : NULL, i == 0 ? mask0 : NULL, g[i]);
    }
}

static double *concat(double **g)
{
    double *c = tu_alloc(total());
    int64_t k = 0;
    for (int i = 0; i < NM; i++) {
        memcpy(c + 2 * k, g[i], sizeof(double) * 2 * (size_t)msize(i));
        k += msize(i);
    }
    return c;
}

static void free_members(plm_array_t *a, double **g)
{
    for (int i = 0; i < NM; i++) {
        plm_array_destroy(&a[i]);
        free(g[i]);
        g[i] = NULL;
    }
}

static void check_stack_asarray(plm_const_stacked_t s, plm_dtype_t dt, const double *ref, const char *what)
{
    int64_t n = total();
    void *buf = calloc((size_t)n, tu_esize(dt));
    TU_CHECK_OK(plm_stacked_asarray(s, buf, tu_bytes(dt, n)));
    tu_check_buf(dt, buf, n, ref, tu_rtol(dt), what);
    free(buf);
}

static void test_stacked_dot_norm(void **state)
{
    (void)state;
    static const double ORDS[] = {2.0, 1.0, 0.0, INFINITY, -INFINITY, 3.0, 0.5, -1.5};
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        plm_array_t xa[NM], ya[NM], za[NM];
        double *gx[NM], *gy[NM], *gz[NM];
        make_members(dt, 10 * t, -1, NULL, xa, gx);
        make_members(dt, 10 * t + 3, -1, NULL, ya, gy);
        make_members(dt, 10 * t + 5, 2, NULL, za, gz); /* member 2 has zeros */
        plm_stacked_t x = NULL, y = NULL, z = NULL;
        TU_OK(plm_stacked_create(NM, xa, &x));
        TU_OK(plm_stacked_create(NM, ya, &y));
        TU_OK(plm_stacked_create(NM, za, &z));
        double *cx = concat(gx), *cy = concat(gy), *cz = concat(gz);
        int64_t n = total();
        char what[100];
        snprintf(what, sizeof what, "[stacked %s]", tu_dtname(dt));
        int nn = 0;
        TU_CHECK_OK(plm_stacked_narrays(x, &nn));
        TU_EXPECT(nn == NM, "%s narrays %d", what, nn);
        for (int conj = 0; conj < 2; conj++) {
            double rr, ri, mag, gr, gi;
            tu_ref_dot(cx, cy, n, conj, &rr, &ri, &mag);
            gi = 0;
            TU_CHECK_OK(plm_stacked_dot(x, y, conj, &gr, tu_cplx(dt) ? &gi : NULL));
            TU_EXPECT(hypot(gr - rr, gi - ri) <= tu_rtol(dt) * (mag + 1), "%s dot(conj=%d) got (%.17g, %.17g) expected (%.17g, %.17g)",
                      what, conj, gr, gi, rr, ri);
            /* the sum of the member dots */
            double sr = 0, si = 0;
            for (int i = 0; i < NM; i++) {
                double mr = 0, mi = 0;
                TU_CHECK_OK(plm_array_dot(xa[i], ya[i], conj, &mr, &mi));
                sr += mr;
                si += mi;
            }
            TU_EXPECT(hypot(gr - sr, gi - si) <= tu_rtol(dt) * (mag + 1), "%s dot is not the sum of member dots", what);
        }
        for (int o = 0; o < (int)(sizeof ORDS / sizeof ORDS[0]); o++) {
            char ob[32];
            double ref = tu_ref_norm(cx, n, ORDS[o]), got = NAN;
            TU_CHECK_OK(plm_stacked_norm(x, ORDS[o], &got));
            double rtol = ORDS[o] == 0 ? 0 : 10 * tu_rtol(dt);
            TU_EXPECT(tu_close_rel(got, ref, rtol), "%s norm(ord=%s) got %.17g expected %.17g", what, tu_ordname(ORDS[o], ob),
                      got, ref);
            if (ORDS[o] >= 0) {
                ref = tu_ref_norm(cz, n, ORDS[o]);
                got = NAN;
                TU_CHECK_OK(plm_stacked_norm(z, ORDS[o], &got));
                TU_EXPECT(tu_close_rel(got, ref, rtol), "%s (with zeros) norm(ord=%s) got %.17g expected %.17g", what,
                          tu_ordname(ORDS[o], ob), got, ref);
            }
        }
        check_stack_asarray(x, dt, cx, what);
        plm_stacked_destroy(&x);
        plm_stacked_destroy(&y);
        plm_stacked_destroy(&z);
        free_members(xa, gx);
        free_members(ya, gy);
        free_members(za, gz);
        free(cx);
        free(cy);
        free(cz);
    }
    TU_DONE();
}

static void test_stacked_axpby_scale_copy(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        double rtol = tu_rtol(dt);
        plm_array_t xa[NM], ya[NM];
        double *gx[NM], *gy[NM];
        make_members(dt, 40 + t, -1, NULL, xa, gx);
        make_members(dt, 50 + t, -1, NULL, ya, gy);
        plm_stacked_t x = NULL, y = NULL;
        TU_OK(plm_stacked_create(NM, xa, &x));
        TU_OK(plm_stacked_create(NM, ya, &y));
        double ar = 0.75, ai = -0.5, br = 1.5, bi = 0.25;
        tu_round(dt, &ar, &ai);
        tu_round(dt, &br, &bi);
        if (!tu_cplx(dt)) ai = bi = 0;
        char what[120];
        /* axpby: y = a x + b y */
        TU_CHECK_OK(plm_stacked_axpby(ar, ai, x, br, bi, y));
        double *ref[NM];
        for (int i = 0; i < NM; i++) {
            int64_t n = msize(i);
            ref[i] = tu_alloc(n);
            for (int64_t k = 0; k < n; k++) {
                double xr = gx[i][2 * k], xi = gx[i][2 * k + 1], yr = gy[i][2 * k], yi = gy[i][2 * k + 1];
                ref[i][2 * k] = ar * xr - ai * xi + br * yr - bi * yi;
                ref[i][2 * k + 1] = ar * xi + ai * xr + br * yi + bi * yr;
            }
            snprintf(what, sizeof what, "[stacked %s axpby member %d]", tu_dtname(dt), i);
            tu_check_local(ya[i], ref[i], rtol, what);
            tu_check_local(xa[i], gx[i], 0.0, what);
        }
        double *c = concat(ref);
        snprintf(what, sizeof what, "[stacked %s axpby asarray]", tu_dtname(dt));
        check_stack_asarray(y, dt, c, what);
        free(c);
        /* scale: x = a x */
        TU_CHECK_OK(plm_stacked_scale(x, ar, ai));
        for (int i = 0; i < NM; i++) {
            int64_t n = msize(i);
            for (int64_t k = 0; k < n; k++) {
                double xr = gx[i][2 * k], xi = gx[i][2 * k + 1];
                ref[i][2 * k] = ar * xr - ai * xi;
                ref[i][2 * k + 1] = ar * xi + ai * xr;
            }
            snprintf(what, sizeof what, "[stacked %s scale member %d]", tu_dtname(dt), i);
            tu_check_local(xa[i], ref[i], rtol, what);
        }
        /* copy: y = x */
        TU_CHECK_OK(plm_stacked_copy(x, y));
        for (int i = 0; i < NM; i++) {
            snprintf(what, sizeof what, "[stacked %s copy member %d]", tu_dtname(dt), i);
            tu_check_local(ya[i], ref[i], rtol, what);
        }
        /* zeros_like: new members, same layouts, zeros; independent of x */
        plm_stacked_t z = NULL;
        TU_CHECK_OK(plm_stacked_zeros_like(x, &z));
        if (z) {
            int nn = 0;
            TU_CHECK_OK(plm_stacked_narrays(z, &nn));
            TU_EXPECT(nn == NM, "zeros_like narrays %d", nn);
            for (int i = 0; i < NM && i < nn; i++) {
                plm_array_t m = NULL;
                TU_CHECK_OK(plm_stacked_get(z, i, &m));
                if (!m) continue;
                const member_t *M = &MEMBERS[i];
                int64_t rows[3 * 8];
                if (M->reversed)
                    tu_reversed_rows(M->ndim, M->shape, M->axis, tu_size, rows);
                else
                    tu_default_rows(M->ndim, M->shape, M->axis, M->part, tu_size, rows);
                double *zero = tu_alloc(msize(i));
                snprintf(what, sizeof what, "[stacked %s zeros_like member %d]", tu_dtname(dt), i);
                tu_check_layout(m, M->ndim, M->shape, M->axis, M->part, dt, rows, NULL, what);
                tu_check_local(m, zero, 0.0, what);
                free(zero);
            }
            /* combine with x: z = 1*x + 0*z gives x's data in new storage */
            TU_CHECK_OK(plm_stacked_axpby(1, 0, x, 0, 0, z));
            for (int i = 0; i < NM; i++) {
                plm_array_t m = NULL;
                TU_CHECK_OK(plm_stacked_get(z, i, &m));
                snprintf(what, sizeof what, "[stacked %s zeros_like+axpby member %d]", tu_dtname(dt), i);
                if (m) tu_check_local(m, ref[i], rtol, what);
            }
            TU_CHECK_OK(plm_stacked_scale(z, 0, 0));
            for (int i = 0; i < NM; i++) {
                snprintf(what, sizeof what, "[stacked %s zeros_like shares storage with x, member %d]", tu_dtname(dt), i);
                tu_check_local(xa[i], ref[i], rtol, what);
            }
            plm_stacked_destroy(&z);
        }
        for (int i = 0; i < NM; i++) free(ref[i]);
        plm_stacked_destroy(&x);
        plm_stacked_destroy(&y);
        free_members(xa, gx);
        free_members(ya, gy);
    }
    TU_DONE();
}

/* The stack keeps its members alive: destroy the member handles, then use the stack; and
 * destroying the stack leaves member handles usable. */
static void test_stacked_member_lifetime(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t += 3) {
        plm_dtype_t dt = TU_DTYPES[t];
        plm_array_t xa[NM];
        double *gx[NM];
        make_members(dt, 70 + t, -1, NULL, xa, gx);
        double *cx = concat(gx);
        int64_t n = total();
        plm_stacked_t s = NULL;
        TU_OK(plm_stacked_create(NM, xa, &s));
        for (int i = 0; i < NM; i++) {
            TU_CHECK_OK(plm_array_destroy(&xa[i]));
            TU_EXPECT(xa[i] == NULL, "member handle not NULL after destroy");
        }
        char what[100];
        snprintf(what, sizeof what, "[stacked %s after member handles destroyed]", tu_dtname(dt));
        check_stack_asarray(s, dt, cx, what);
        double ref = tu_ref_norm(cx, n, 2.0), got = NAN;
        TU_CHECK_OK(plm_stacked_norm(s, 2.0, &got));
        TU_EXPECT(tu_close_rel(got, ref, 10 * tu_rtol(dt)), "%s norm %.17g expected %.17g", what, got, ref);
        for (int i = 0; i < NM; i++) {
            plm_array_t m = NULL;
            TU_CHECK_OK(plm_stacked_get(s, i, &m));
            if (m) tu_check_local(m, gx[i], 0.0, what);
        }
        /* a second stack sharing members via zeros_like + copy, then destroy the first */
        plm_stacked_t s2 = NULL;
        TU_CHECK_OK(plm_stacked_zeros_like(s, &s2));
        if (s2) TU_CHECK_OK(plm_stacked_copy(s, s2));
        plm_stacked_destroy(&s);
        TU_EXPECT(s == NULL, "stacked handle not NULL after destroy");
        if (s2) check_stack_asarray(s2, dt, cx, "[copy of the stack after the source was destroyed]");
        plm_stacked_destroy(&s2);

        for (int i = 0; i < NM; i++) free(gx[i]); /* the first members' data; handles are gone */

        /* stack destroyed while member handles live: members stay valid */
        make_members(dt, 80 + t, -1, NULL, xa, gx);
        TU_OK(plm_stacked_create(NM, xa, &s));
        /* the same array twice in one stack is a valid stack */
        plm_array_t twice[2] = {xa[0], xa[0]};
        plm_stacked_t s3 = NULL;
        TU_CHECK_OK(plm_stacked_create(2, twice, &s3));
        plm_stacked_destroy(&s);
        for (int i = 0; i < NM; i++) tu_check_local(xa[i], gx[i], 0.0, "member after stack destroyed");
        if (s3) {
            double r2 = NAN, ref2 = tu_ref_norm(gx[0], msize(0), 2.0) * sqrt(2.0);
            TU_CHECK_OK(plm_stacked_norm(s3, 2.0, &r2));
            TU_EXPECT(tu_close_rel(r2, ref2, 10 * tu_rtol(dt)), "norm of [x, x] %.17g expected %.17g", r2, ref2);
        }
        plm_stacked_destroy(&s3);
        free_members(xa, gx);
        free(cx);
    }
    TU_DONE();
}

/* A masked member: the stack's dot and norm combine the members' own reductions, so the masked
 * member contributes its group's part. */
static void test_stacked_masked_member(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS];
    tu_mask(0, P, mask);
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        plm_array_t xa[NM], ya[NM];
        double *gx[NM], *gy[NM];
        make_members(dt, 90 + t, -1, mask, xa, gx);
        make_members(dt, 95 + t, -1, mask, ya, gy);
        /* reference: member 0 replaced by its group's data */
        int64_t rows[TU_MAX_RANKS], gs[1];
        tu_default_rows(1, MEMBERS[0].shape, 0, PLM_PARTITION_SCATTER, P, rows);
        double *sx = tu_alloc(msize(0)), *sy = tu_alloc(msize(0));
        int64_t ng = tu_group_data(gx[0], 1, MEMBERS[0].shape, 0, rows, mask, sx, gs);
        tu_group_data(gy[0], 1, MEMBERS[0].shape, 0, rows, mask, sy, gs);
        int64_t n = ng;
        for (int i = 1; i < NM; i++) n += msize(i);
        double *cx = tu_alloc(n), *cy = tu_alloc(n);
        memcpy(cx, sx, sizeof(double) * 2 * (size_t)ng);
        memcpy(cy, sy, sizeof(double) * 2 * (size_t)ng);
        int64_t k = ng;
        for (int i = 1; i < NM; i++) {
            memcpy(cx + 2 * k, gx[i], sizeof(double) * 2 * (size_t)msize(i));
            memcpy(cy + 2 * k, gy[i], sizeof(double) * 2 * (size_t)msize(i));
            k += msize(i);
        }
        plm_stacked_t x = NULL, y = NULL;
        TU_OK(plm_stacked_create(NM, xa, &x));
        TU_OK(plm_stacked_create(NM, ya, &y));
        double rr, ri, mag, gr, gi;
        tu_ref_dot(cx, cy, n, 1, &rr, &ri, &mag);
        gi = 0;
        TU_CHECK_OK(plm_stacked_dot(x, y, 1, &gr, tu_cplx(dt) ? &gi : NULL));
        TU_EXPECT(hypot(gr - rr, gi - ri) <= tu_rtol(dt) * (mag + 1),
                  "[stacked masked %s] vdot got (%.17g, %.17g) expected (%.17g, %.17g)", tu_dtname(dt), gr, gi, rr, ri);
        double ords[4] = {2.0, 1.0, INFINITY, 0.0};
        for (int o = 0; o < 4; o++) {
            double ref = tu_ref_norm(cx, n, ords[o]), got = NAN;
            TU_CHECK_OK(plm_stacked_norm(x, ords[o], &got));
            TU_EXPECT(tu_close_rel(got, ref, ords[o] == 0 ? 0 : 10 * tu_rtol(dt)),
                      "[stacked masked %s] norm(ord=%g) got %.17g expected %.17g", tu_dtname(dt), ords[o], got, ref);
        }
        /* zeros_like keeps the member's mask */
        plm_stacked_t z = NULL;
        TU_CHECK_OK(plm_stacked_zeros_like(x, &z));
        if (z) {
            plm_array_t m = NULL;
            int has = 0, got[TU_MAX_RANKS];
            TU_CHECK_OK(plm_stacked_get(z, 0, &m));
            if (m) {
                TU_CHECK_OK(plm_array_mask(m, &has, got));
                TU_EXPECT(has == 1, "stacked zeros_like dropped a member's mask");
                for (int q = 0; q < P && has; q++) TU_EXPECT(got[q] == mask[q], "stacked zeros_like mask[%d]", q);
            }
            plm_stacked_destroy(&z);
        }
        plm_stacked_destroy(&x);
        plm_stacked_destroy(&y);
        free_members(xa, gx);
        free_members(ya, gy);
        free(sx);
        free(sy);
        free(cx);
        free(cy);
    }
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_stacked_dot_norm),
        TU_TEST(test_stacked_axpby_scale_copy),
        TU_TEST(test_stacked_member_lifetime),
        TU_TEST(test_stacked_masked_member),
    };
    return plm_run_group_tests_mpi(tests);
}
