/* Element-wise operations (fill, copy, duplicate, zeros_like/empty_like, add, sub, mul, scale,
 * axpby, conj) compared element by element with a serial float64 reference, for all dtypes,
 * SCATTER / BROADCAST / UNSAFE_BROADCAST, axis 0 and non-zero axes, uneven splits, fewer
 * elements than ranks, user local shapes and masks. */
#include "array_test_util.h"

typedef void (*combo_fn)(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows,
                         const int *mask, int seed, const char *what);

/* Every dtype x partition x case, plus (SCATTER) reversed user local shapes and, for every
 * partition, a mask. */
static void for_all_combos(combo_fn fn)
{
    int P = tu_size;
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    int mask[TU_MAX_RANKS];
    int seed = 0;
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 3; p++)
            for (int c = 0; c < TU_NCASES; c++) {
                const tu_case_t *C = &TU_CASES[c];
                char what[200];
                seed++;
                snprintf(what, sizeof what, "[%s %s %s]", C->name, tu_partname(TU_PARTS[p]), tu_dtname(TU_DTYPES[t]));
                fn(C, TU_PARTS[p], TU_DTYPES[t], NULL, NULL, seed, what);
                if (TU_PARTS[p] == PLM_PARTITION_SCATTER) {
                    tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                    snprintf(what, sizeof what, "[%s %s %s reversed-local-shapes]", C->name, tu_partname(TU_PARTS[p]),
                             tu_dtname(TU_DTYPES[t]));
                    fn(C, TU_PARTS[p], TU_DTYPES[t], rows, NULL, seed + 1000, what);
                }
                tu_mask(c % TU_NMASKS, P, mask);
                snprintf(what, sizeof what, "[%s %s %s mask kind %d]", C->name, tu_partname(TU_PARTS[p]),
                         tu_dtname(TU_DTYPES[t]), c % TU_NMASKS);
                fn(C, TU_PARTS[p], TU_DTYPES[t], NULL, mask, seed + 2000, what);
            }
}

static int64_t nglob(const tu_case_t *C) { return tu_prod(C->shape, 0, C->ndim); }

static void expect_rows(const tu_case_t *C, plm_partition_t part, const int64_t *rows, int64_t *out)
{
    if (rows)
        memcpy(out, rows, sizeof(int64_t) * (size_t)(C->ndim * tu_size));
    else
        tu_default_rows(C->ndim, C->shape, C->axis, part, tu_size, out);
}

/* ---- fill ---- */
static void do_fill(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows, const int *mask,
                    int seed, const char *what)
{
    int64_t n = nglob(C);
    double *ref = tu_alloc(n);
    double vr = 1.25 + 0.125 * (seed % 5), vi = -0.75;
    tu_round(dt, &vr, &vi);
    if (!tu_cplx(dt)) vi = 0;
    for (int64_t i = 0; i < n; i++) { ref[2 * i] = vr; ref[2 * i + 1] = vi; }
    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, NULL);
    TU_CHECK_OK(plm_array_fill(x, vr, tu_cplx(dt) ? vi : 0));
    tu_check_local(x, ref, 0.0, what);
    /* fill with zero */
    for (int64_t i = 0; i < 2 * n; i++) ref[i] = 0;
    TU_CHECK_OK(plm_array_fill(x, 0, 0));
    tu_check_local(x, ref, 0.0, what);
    plm_array_destroy(&x);
    free(ref);
}
static void test_fill(void **state) { (void)state; for_all_combos(do_fill); TU_DONE(); }

/* ---- copy, duplicate, zeros_like, empty_like ---- */
static void do_copies(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows, const int *mask,
                      int seed, const char *what)
{
    int64_t n = nglob(C);
    int64_t er[PLM_MAX_NDIM * TU_MAX_RANKS];
    expect_rows(C, part, rows, er);
    double *gx = tu_alloc(n), *gy = tu_alloc(n), *zero = tu_alloc(n);
    tu_gen(gx, n, seed, dt, 0);
    tu_gen(gy, n, seed + 77, dt, 0);
    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
    plm_array_t y = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gy);
    char w[260];
    /* copy */
    TU_CHECK_OK(plm_array_copy(x, y));
    snprintf(w, sizeof w, "%s copy", what);
    tu_check_local(y, gx, 0.0, w);
    tu_check_local(x, gx, 0.0, w);
    /* duplicate: same layout and data, deep */
    plm_array_t d = NULL;
    TU_CHECK_OK(plm_array_duplicate(x, &d));
    if (d) {
        snprintf(w, sizeof w, "%s duplicate", what);
        tu_check_layout(d, C->ndim, C->shape, C->axis, part, dt, er, mask, w);
        tu_check_local(d, gx, 0.0, w);
        TU_CHECK_OK(plm_array_fill(x, 0, 0));
        tu_check_local(d, gx, 0.0, "duplicate is not a deep copy");
        tu_check_local(x, zero, 0.0, w);
        const void *px = NULL, *pd = NULL;
        int64_t nl = 0;
        plm_array_local_size(x, &nl);
        plm_array_get_local_read(x, &px);
        plm_array_get_local_read(d, &pd);
        TU_EXPECT(nl == 0 || px != pd, "%s: duplicate shares storage", what);
        plm_array_restore_local_read(x, &px);
        plm_array_restore_local_read(d, &pd);
    }
    /* zeros_like: layout incl. mask, all zeros */
    plm_array_t z = NULL;
    TU_CHECK_OK(plm_array_zeros_like(y, &z));
    if (z) {
        snprintf(w, sizeof w, "%s zeros_like", what);
        tu_check_layout(z, C->ndim, C->shape, C->axis, part, dt, er, mask, w);
        tu_check_local(z, zero, 0.0, w);
    }
    /* empty_like: layout incl. mask, writable */
    plm_array_t e = NULL;
    TU_CHECK_OK(plm_array_empty_like(y, &e));
    if (e) {
        snprintf(w, sizeof w, "%s empty_like", what);
        tu_check_layout(e, C->ndim, C->shape, C->axis, part, dt, er, mask, w);
        TU_CHECK_OK(plm_array_copy(y, e));
        tu_check_local(e, gx, 0.0, w);
        /* and it combines with the source layout */
        TU_CHECK_OK(plm_array_sub(e, y, e));
        tu_check_local(e, zero, 0.0, w);
    }
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&d);
    plm_array_destroy(&z);
    plm_array_destroy(&e);
    free(gx);
    free(gy);
    free(zero);
}
static void test_copy_duplicate_like(void **state) { (void)state; for_all_combos(do_copies); TU_DONE(); }

/* ---- add, sub, mul (with aliasing) ---- */
static void ref_binary(int op, const double *x, const double *y, double *z, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double xr = x[2 * i], xi = x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1], zr, zi;
        if (op == 0) { zr = xr + yr; zi = xi + yi; }
        else if (op == 1) { zr = xr - yr; zi = xi - yi; }
        else { zr = xr * yr - xi * yi; zi = xr * yi + xi * yr; }
        z[2 * i] = zr;
        z[2 * i + 1] = zi;
    }
}

static void do_binary(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows, const int *mask,
                      int seed, const char *what)
{
    static const char *names[3] = {"add", "sub", "mul"};
    int64_t n = nglob(C);
    double rtol = tu_rtol(dt);
    double *gx = tu_alloc(n), *gy = tu_alloc(n), *gz = tu_alloc(n), *gw = tu_alloc(n);
    tu_gen(gx, n, seed, dt, 0);
    tu_gen(gy, n, seed + 5, dt, 1);
    for (int op = 0; op < 3; op++) {
        char w[260];
        snprintf(w, sizeof w, "%s %s", what, names[op]);
        plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
        plm_array_t y = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gy);
        plm_array_t z = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, NULL);
        plm_status_t (*f)(plm_const_array_t, plm_const_array_t, plm_array_t) =
            op == 0 ? plm_array_add : op == 1 ? plm_array_sub : plm_array_mul;
        ref_binary(op, gx, gy, gz, n);
        TU_CHECK_OK(f(x, y, z));
        tu_check_local(z, gz, rtol, w);
        tu_check_local(x, gx, 0.0, w); /* inputs untouched */
        tu_check_local(y, gy, 0.0, w);
        /* output aliases the first input: x = x op y */
        TU_CHECK_OK(f(x, y, x));
        snprintf(w, sizeof w, "%s %s (out aliases x)", what, names[op]);
        tu_check_local(x, gz, rtol, w);
        /* output aliases the second input: y = z op y (z = x op y from above) */
        ref_binary(op, gz, gy, gw, n);
        TU_CHECK_OK(f(z, y, y));
        snprintf(w, sizeof w, "%s %s (out aliases y)", what, names[op]);
        tu_check_local(y, gw, rtol * 4, w);
        /* all three the same: w = w op w */
        plm_array_t s = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
        ref_binary(op, gx, gx, gw, n);
        TU_CHECK_OK(f(s, s, s));
        snprintf(w, sizeof w, "%s %s (x op x into x)", what, names[op]);
        tu_check_local(s, gw, rtol, w);
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        plm_array_destroy(&z);
        plm_array_destroy(&s);
    }
    free(gx);
    free(gy);
    free(gz);
    free(gw);
}
static void test_add_sub_mul(void **state) { (void)state; for_all_combos(do_binary); TU_DONE(); }

/* ---- scale, axpby ---- */
static void do_scale_axpby(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows,
                           const int *mask, int seed, const char *what)
{
    int64_t n = nglob(C);
    double rtol = tu_rtol(dt);
    double *gx = tu_alloc(n), *gy = tu_alloc(n), *ref = tu_alloc(n);
    tu_gen(gx, n, seed, dt, 0);
    tu_gen(gy, n, seed + 9, dt, 0);
    double ar = 1.5, ai = -0.5, br = -1.25, bi = 0.75;
    tu_round(dt, &ar, &ai);
    tu_round(dt, &br, &bi);
    if (!tu_cplx(dt)) ai = bi = 0;
    char w[260];

    /* scale */
    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
    for (int64_t i = 0; i < n; i++) {
        ref[2 * i] = ar * gx[2 * i] - ai * gx[2 * i + 1];
        ref[2 * i + 1] = ar * gx[2 * i + 1] + ai * gx[2 * i];
    }
    TU_CHECK_OK(plm_array_scale(x, ar, ai));
    snprintf(w, sizeof w, "%s scale", what);
    tu_check_local(x, ref, rtol, w);
    /* scale by 0 gives zeros */
    TU_CHECK_OK(plm_array_scale(x, 0, 0));
    for (int64_t i = 0; i < 2 * n; i++) ref[i] = 0;
    snprintf(w, sizeof w, "%s scale by 0", what);
    tu_check_local(x, ref, 0.0, w);
    plm_array_destroy(&x);

    /* axpby: y = a x + b y */
    x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
    plm_array_t y = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gy);
    for (int64_t i = 0; i < n; i++) {
        double xr = gx[2 * i], xi = gx[2 * i + 1], yr = gy[2 * i], yi = gy[2 * i + 1];
        ref[2 * i] = ar * xr - ai * xi + br * yr - bi * yi;
        ref[2 * i + 1] = ar * xi + ai * xr + br * yi + bi * yr;
    }
    TU_CHECK_OK(plm_array_axpby(ar, ai, x, br, bi, y));
    snprintf(w, sizeof w, "%s axpby", what);
    tu_check_local(y, ref, rtol, w);
    tu_check_local(x, gx, 0.0, w);
    /* axpby with x aliasing y: y = (a + b) y */
    plm_array_t s = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gy);
    for (int64_t i = 0; i < n; i++) {
        double yr = gy[2 * i], yi = gy[2 * i + 1];
        ref[2 * i] = (ar + br) * yr - (ai + bi) * yi;
        ref[2 * i + 1] = (ar + br) * yi + (ai + bi) * yr;
    }
    TU_CHECK_OK(plm_array_axpby(ar, ai, s, br, bi, s));
    snprintf(w, sizeof w, "%s axpby (x aliases y)", what);
    tu_check_local(s, ref, rtol, w);
    /* axpby with alpha = 1, beta = 0 is a copy (y's old values must not leak in) */
    TU_CHECK_OK(plm_array_axpby(1, 0, x, 0, 0, y));
    snprintf(w, sizeof w, "%s axpby(1, x, 0, y)", what);
    tu_check_local(y, gx, rtol, w);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&s);
    free(gx);
    free(gy);
    free(ref);
}
static void test_scale_axpby(void **state) { (void)state; for_all_combos(do_scale_axpby); TU_DONE(); }

/* ---- conj ---- */
static void do_conj(const tu_case_t *C, plm_partition_t part, plm_dtype_t dt, const int64_t *rows, const int *mask,
                    int seed, const char *what)
{
    int64_t n = nglob(C);
    double *gx = tu_alloc(n), *ref = tu_alloc(n);
    tu_gen(gx, n, seed, dt, 0);
    for (int64_t i = 0; i < n; i++) {
        ref[2 * i] = gx[2 * i];
        ref[2 * i + 1] = -gx[2 * i + 1];
    }
    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, gx);
    plm_array_t y = tu_make(C->ndim, C->shape, C->axis, part, dt, rows, mask, NULL);
    char w[260];
    TU_CHECK_OK(plm_array_conj(x, y));
    snprintf(w, sizeof w, "%s conj", what);
    tu_check_local(y, ref, 0.0, w);
    tu_check_local(x, gx, 0.0, w);
    TU_CHECK_OK(plm_array_conj(x, x));
    snprintf(w, sizeof w, "%s conj in place", what);
    tu_check_local(x, ref, 0.0, w);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    free(gx);
    free(ref);
}
static void test_conj(void **state) { (void)state; for_all_combos(do_conj); TU_DONE(); }

/* ---- mixed dtypes: NumPy's promotion ---- */
/* The promoted dtype (numpy.result_type) of the four dtypes, by the test's own table. */
static plm_dtype_t promoted(plm_dtype_t a, plm_dtype_t b)
{
    const int wide = a == PLM_FLOAT64 || a == PLM_COMPLEX128 || b == PLM_FLOAT64 || b == PLM_COMPLEX128;
    const int cplx = tu_cplx(a) || tu_cplx(b);
    return cplx ? (wide ? PLM_COMPLEX128 : PLM_COMPLEX64) : (wide ? PLM_FLOAT64 : PLM_FLOAT32);
}

/* Every pair of dtypes: add, sub, mul into the promoted dtype (the operands widened first, as
 * NumPy computes), widening copies and axpby, dot in the promoted dtype, against the serial
 * reference on the values the narrower operand holds; also plm_dtype_promote itself. SCATTER
 * with user local shapes (reversed: uneven, and empty blocks when fewer elements than ranks)
 * and BROADCAST. */
static void test_mixed_dtypes(void **state)
{
    (void)state;
    const int64_t shapes[2] = {11, 2};
    int64_t rows[TU_MAX_RANKS];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            const plm_dtype_t da = TU_DTYPES[a], db = TU_DTYPES[b], dc = promoted(da, db);
            plm_dtype_t got = (plm_dtype_t)-1;
            TU_CHECK_OK(plm_dtype_promote(da, db, &got));
            TU_EXPECT(got == dc, "plm_dtype_promote(%s, %s) = %d, want %s", tu_dtname(da), tu_dtname(db), (int)got,
                      tu_dtname(dc));
            for (int k = 0; k < 2; k++) {
                const int64_t n = shapes[k];
                const plm_partition_t part = k == 0 ? PLM_PARTITION_SCATTER : PLM_PARTITION_BROADCAST;
                tu_reversed_rows(1, &n, 0, tu_size, rows);
                const int64_t *r = part == PLM_PARTITION_SCATTER ? rows : NULL;
                char what[160];
                snprintf(what, sizeof what, "[%s %s + %s n %lld]", tu_partname(part), tu_dtname(da), tu_dtname(db),
                         (long long)n);
                double *gx = tu_alloc(n), *gy = tu_alloc(n), *gz = tu_alloc(n);
                tu_gen(gx, n, 3 + a, da, 0);
                tu_gen(gy, n, 7 + b, db, 1);
                plm_array_t x = tu_make(1, &n, 0, part, da, r, NULL, gx);
                plm_array_t y = tu_make(1, &n, 0, part, db, r, NULL, gy);
                plm_array_t z = tu_make(1, &n, 0, part, dc, r, NULL, NULL);
                for (int op = 0; op < 3; op++) {
                    plm_status_t (*f)(plm_const_array_t, plm_const_array_t, plm_array_t) =
                        op == 0 ? plm_array_add : op == 1 ? plm_array_sub : plm_array_mul;
                    TU_CHECK_OK(f(x, y, z));
                    ref_binary(op, gx, gy, gz, n);
                    for (int64_t i = 0; i < n; i++) tu_round(dc, &gz[2 * i], &gz[2 * i + 1]);
                    char w[200];
                    snprintf(w, sizeof w, "%s op %d", what, op);
                    tu_check_local(z, gz, tu_rtol(dc), w);
                    /* in place into the wider operand when it has the promoted dtype */
                    if (db == dc) {
                        plm_array_t yy = tu_make(1, &n, 0, part, db, r, NULL, gy);
                        TU_CHECK_OK(f(x, yy, yy));
                        tu_check_local(yy, gz, tu_rtol(dc), w);
                        plm_array_destroy(&yy);
                    } else {
                        TU_EXPECT_ERR(f(x, y, y), PLM_ERR_DTYPE_MISMATCH); /* would truncate */
                    }
                }
                /* widening copy and axpby: y (dc) = x; y = 2 x - y */
                TU_CHECK_OK(plm_array_copy(x, z));
                tu_check_local(z, gx, 0.0, what);
                TU_CHECK_OK(plm_array_axpby(2, 0, y, -1, 0, z));
                for (int64_t i = 0; i < n; i++) {
                    gz[2 * i] = 2 * gy[2 * i] - gx[2 * i];
                    gz[2 * i + 1] = 2 * gy[2 * i + 1] - gx[2 * i + 1];
                    tu_round(dc, &gz[2 * i], &gz[2 * i + 1]);
                }
                tu_check_local(z, gz, tu_rtol(dc), what);
                /* dot and vdot in the promoted dtype */
                for (int conj = 0; conj < 2; conj++) {
                    double rr = 0, ri = 0, mag = 0, re = NAN, im = NAN;
                    tu_ref_dot(gx, gy, n, conj, &rr, &ri, &mag);
                    TU_CHECK_OK(plm_array_dot(x, y, conj, &re, &im));
                    TU_EXPECT(hypot(re - rr, im - ri) <= tu_rtol(dc) * (mag + 1), "%s dot(conj %d) (%g, %g) want (%g, %g)",
                              what, conj, re, im, rr, ri);
                }
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                plm_array_destroy(&z);
                free(gx);
                free(gy);
                free(gz);
            }
        }
    plm_dtype_t bad = PLM_FLOAT32;
    TU_EXPECT_ERR(plm_dtype_promote((plm_dtype_t)7, PLM_FLOAT64, &bad), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_dtype_promote(PLM_FLOAT64, PLM_FLOAT64, NULL), PLM_ERR_INVALID_ARG);
    TU_DONE();
}

/* ---- element-wise chains keep partitions consistent: BROADCAST results agree on all ranks ---- */
static void test_broadcast_results_agree(void **state)
{
    (void)state;
    int64_t shape[2] = {6, 7};
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        double gx[2 * 42], gy[2 * 42];
        tu_gen(gx, 42, 3, dt, 0);
        tu_gen(gy, 42, 4, dt, 0);
        plm_array_t x = tu_make(2, shape, 1, PLM_PARTITION_BROADCAST, dt, NULL, NULL, gx);
        plm_array_t y = tu_make(2, shape, 1, PLM_PARTITION_BROADCAST, dt, NULL, NULL, gy);
        const double ai = tu_cplx(dt) ? 0.25 : 0, bi = tu_cplx(dt) ? -1.0 : 0;
        TU_CHECK_OK(plm_array_mul(x, y, x));
        TU_CHECK_OK(plm_array_axpby(0.5, ai, y, 2.0, bi, x));
        TU_CHECK_OK(plm_array_conj(x, y));
        /* compare every rank's local copy with rank 0's, bit for bit */
        const void *d = NULL;
        TU_CHECK_OK(plm_array_get_local_read(y, &d));
        unsigned char buf[16 * 42], mine[16 * 42];
        memcpy(mine, d, 42 * tu_esize(dt));
        memcpy(buf, d, 42 * tu_esize(dt));
        plm_array_restore_local_read(y, &d);
        MPI_Bcast(buf, (int)(42 * tu_esize(dt)), MPI_BYTE, 0, MPI_COMM_WORLD);
        TU_EXPECT(memcmp(buf, mine, 42 * tu_esize(dt)) == 0, "BROADCAST %s results differ from rank 0's", tu_dtname(dt));
        plm_array_destroy(&x);
        plm_array_destroy(&y);
    }
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_fill),       TU_TEST(test_copy_duplicate_like), TU_TEST(test_add_sub_mul),
        TU_TEST(test_scale_axpby), TU_TEST(test_conj),               TU_TEST(test_broadcast_results_agree),
        TU_TEST(test_mixed_dtypes),
    };
    return plm_run_group_tests_mpi(tests);
}
