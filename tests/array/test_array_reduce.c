/* Reductions: dot (plain and conjugated), norm for many ords, norm_axis along the distributed
 * and a non-distributed axis, and their mask-group semantics. */
#include "array_test_util.h"

static const double ORDS[] = {2.0, 1.0, 0.0, INFINITY, -INFINITY, 3.0, 0.5, -1.5};
#define NORDS ((int)(sizeof(ORDS) / sizeof(ORDS[0])))

static int64_t nglob(const tu_case_t *C) { return tu_prod(C->shape, 0, C->ndim); }

static void check_dot(plm_const_array_t x, plm_const_array_t y, plm_dtype_t dt, const double *gx, const double *gy,
                      int64_t n, int conj, const char *what)
{
    double rr, ri, mag;
    tu_ref_dot(gx, gy, n, conj, &rr, &ri, &mag);
    double gr = NAN, gi = tu_cplx(dt) ? NAN : 0;
    TU_CHECK_OK(plm_array_dot(x, y, conj, &gr, tu_cplx(dt) ? &gi : NULL));
    double tol = tu_rtol(dt) * (mag + 1.0);
    TU_EXPECT(hypot(gr - rr, gi - ri) <= tol, "%s dot(conj=%d): got (%.17g, %.17g) expected (%.17g, %.17g)", what, conj,
              gr, gi, rr, ri);
    /* the result is the same on every rank of the comm (no mask here) or group */
    (void)0;
}

/* dot for every dtype, partition, case, default and reversed local shapes, conj 0/1. */
static void test_dot(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 3; p++)
            for (int c = 0; c < TU_NCASES; c++)
                for (int rev = 0; rev < (TU_PARTS[p] == PLM_PARTITION_SCATTER ? 2 : 1); rev++) {
                    const tu_case_t *C = &TU_CASES[c];
                    plm_dtype_t dt = TU_DTYPES[t];
                    char what[200];
                    snprintf(what, sizeof what, "[%s %s %s%s]", C->name, tu_partname(TU_PARTS[p]), tu_dtname(dt),
                             rev ? " reversed" : "");
                    int64_t n = nglob(C);
                    double *gx = tu_alloc(n), *gy = tu_alloc(n);
                    tu_gen(gx, n, c + 10 * t, dt, 0);
                    tu_gen(gy, n, c + 10 * t + 3, dt, 1);
                    if (rev) tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, gx);
                    plm_array_t y = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, gy);
                    check_dot(x, y, dt, gx, gy, n, 0, what);
                    check_dot(x, y, dt, gx, gy, n, 1, what);
                    check_dot(y, x, dt, gy, gx, n, 1, what);
                    check_dot(x, x, dt, gx, gx, n, 1, what); /* |x|^2, real */
                    /* result identical on all ranks */
                    double res[2] = {0, 0}, r0[2];
                    plm_array_dot(x, y, 1, &res[0], &res[1]);
                    memcpy(r0, res, sizeof r0);
                    MPI_Bcast(r0, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                    TU_EXPECT(memcmp(r0, res, sizeof r0) == 0, "%s dot differs between ranks", what);
                    plm_array_destroy(&x);
                    plm_array_destroy(&y);
                    free(gx);
                    free(gy);
                }
    TU_DONE();
}

static void check_norm(plm_const_array_t x, plm_dtype_t dt, const double *g, int64_t n, double ord, const char *what)
{
    char ob[32];
    double ref = tu_ref_norm(g, n, ord);
    double got = NAN;
    TU_CHECK_OK(plm_array_norm(x, ord, &got));
    double rtol = ord == 0 ? 0.0 : tu_rtol(dt) * (fabs(ord) < 1 ? 4 : 1);
    TU_EXPECT(tu_close_rel(got, ref, rtol), "%s norm(ord=%s): got %.17g expected %.17g", what, tu_ordname(ord, ob), got, ref);
}

/* norm for every ord, dtype, partition and case; ord 0 also on data with zeros. */
static void test_norm(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 3; p++)
            for (int c = 0; c < TU_NCASES; c++) {
                const tu_case_t *C = &TU_CASES[c];
                plm_dtype_t dt = TU_DTYPES[t];
                char what[200];
                int rev = TU_PARTS[p] == PLM_PARTITION_SCATTER && (c % 2);
                snprintf(what, sizeof what, "[%s %s %s%s]", C->name, tu_partname(TU_PARTS[p]), tu_dtname(dt),
                         rev ? " reversed" : "");
                int64_t n = nglob(C);
                double *g = tu_alloc(n), *gz = tu_alloc(n);
                tu_gen(g, n, c + 20 * t, dt, 0);
                tu_gen(gz, n, c + 20 * t, dt, 1);
                if (rev) tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                plm_array_t x = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, g);
                plm_array_t xz = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, gz);
                for (int o = 0; o < NORDS; o++) check_norm(x, dt, g, n, ORDS[o], what);
                char wz[220];
                snprintf(wz, sizeof wz, "%s with zeros", what);
                check_norm(xz, dt, gz, n, 0.0, wz);
                check_norm(xz, dt, gz, n, 2.0, wz);
                check_norm(xz, dt, gz, n, 1.0, wz);
                check_norm(xz, dt, gz, n, INFINITY, wz);
                check_norm(xz, dt, gz, n, 3.0, wz);
                plm_array_destroy(&x);
                plm_array_destroy(&xz);
                free(g);
                free(gz);
            }
    TU_DONE();
}

/* norm_axis along every axis (the distributed one and the others). */
static void test_norm_axis(void **state)
{
    (void)state;
    static const double AORDS[] = {2.0, 1.0, INFINITY, -INFINITY, 0.0, 3.0};
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 3; p++)
            for (int c = 0; c < TU_NCASES; c++) {
                const tu_case_t *C = &TU_CASES[c];
                plm_dtype_t dt = TU_DTYPES[t];
                int64_t n = nglob(C);
                double *g = tu_alloc(n);
                tu_gen(g, n, c + 30 * t, dt, 1);
                /* SCATTER: odd cases with the reversed split, so gathered blocks are uneven the other way */
                int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
                int rev = TU_PARTS[p] == PLM_PARTITION_SCATTER && (c % 2);
                if (rev) tu_reversed_rows(C->ndim, C->shape, C->axis, tu_size, rows);
                plm_array_t x = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, g);
                for (int ax = 0; ax < C->ndim; ax++) {
                    int64_t nout = n / (C->shape[ax] ? C->shape[ax] : 1);
                    double *ref = (double *)calloc((size_t)nout + 1, sizeof(double));
                    double *got = (double *)calloc((size_t)nout + 1, sizeof(double));
                    for (int o = 0; o < (int)(sizeof AORDS / sizeof AORDS[0]); o++) {
                        double ord = AORDS[o];
                        char ob[32];
                        tu_ref_norm_axis(g, C->ndim, C->shape, ax, ord, ref);
                        for (int64_t i = 0; i < nout; i++) got[i] = NAN;
                        TU_CHECK_OK(plm_array_norm_axis(x, ord, ax, got, nout));
                        int64_t bad = 0, first = -1;
                        for (int64_t i = 0; i < nout; i++)
                            if (!tu_close_rel(got[i], ref[i], ord == 0 ? 0.0 : tu_rtol(dt))) {
                                if (first < 0) first = i;
                                bad++;
                            }
                        TU_EXPECT(bad == 0,
                                  "[%s %s %s] norm_axis(ord=%s, axis=%d, %s axis): %lld of %lld differ; first %lld got %.17g expected %.17g",
                                  C->name, tu_partname(TU_PARTS[p]), tu_dtname(dt), tu_ordname(ord, ob), ax,
                                  ax == tu_axis(C->axis, C->ndim) ? "distributed" : "local", (long long)bad,
                                  (long long)nout, (long long)first, first >= 0 ? got[first] : 0.0,
                                  first >= 0 ? ref[first] : 0.0);
                    }
                    free(ref);
                    free(got);
                }
                plm_array_destroy(&x);
                free(g);
            }
    TU_DONE();
}

/* Results too many to ride in the agreement (more than 4096 lanes): the second, group-only
 * reduction, with and without a mask. */
static void test_norm_axis_many(void **state)
{
    (void)state;
    const int64_t shape[2] = {tu_size + 2, 4100};
    const int64_t n = shape[0] * shape[1];
    int mask[TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) mask[r] = r % 2;
    double *g = tu_alloc(n), *ref = tu_alloc(n), *got = tu_alloc(n);
    tu_gen(g, n, 5, PLM_FLOAT64, 1);
    for (int m = 0; m < 2; m++) {
        plm_array_t x = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, m ? mask : NULL, g);
        const double ords[] = {2.0, INFINITY};
        for (int o = 0; o < 2; o++) {
            if (m) { /* the group's own rows: a reference over the group's blocks only */
                int64_t off = 0, rows = 0;
                for (int r = 0; r < tu_size; r++) {
                    const int64_t k = tu_split(shape[0], tu_size, r);
                    if (mask[r] == mask[tu_rank]) {
                        memcpy(ref + 2 * rows * shape[1], g + 2 * off * shape[1], (size_t)(2 * k * shape[1]) * sizeof(double));
                        rows += k;
                    }
                    off += k;
                }
                const int64_t sub[2] = {rows, shape[1]};
                double *tmp = tu_alloc(shape[1]);
                tu_ref_norm_axis(ref, 2, sub, 0, ords[o], tmp);
                memcpy(ref, tmp, (size_t)shape[1] * sizeof(double));
                free(tmp);
            } else {
                tu_ref_norm_axis(g, 2, shape, 0, ords[o], ref);
            }
            TU_CHECK_OK(plm_array_norm_axis(x, ords[o], 0, got, shape[1]));
            int64_t bad = 0;
            for (int64_t i = 0; i < shape[1]; i++) bad += !tu_close_rel(got[i], ref[i], 1e-12);
            TU_EXPECT(bad == 0, "norm_axis over %lld results (mask %d, ord %g): %lld differ", (long long)shape[1], m,
                      ords[o], (long long)bad);
        }
        plm_array_destroy(&x);
    }
    free(g);
    free(ref);
    free(got);
    TU_DONE();
}

/* Masked SCATTER arrays: dot and norm reduce over the group's own data; norm_axis along the
 * distributed axis over the group, along another axis over the whole comm. */
static void test_masked_reductions(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS];
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    for (int k = 0; k < TU_NMASKS; k++)
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < TU_NCASES; c++) {
                const tu_case_t *C = &TU_CASES[c];
                plm_dtype_t dt = TU_DTYPES[t];
                char what[200];
                snprintf(what, sizeof what, "[%s SCATTER %s mask kind %d]", C->name, tu_dtname(dt), k);
                tu_mask(k, P, mask);
                int rev = c % 2;
                if (rev)
                    tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                else
                    tu_default_rows(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, P, rows);
                int64_t n = nglob(C);
                double *gx = tu_alloc(n), *gy = tu_alloc(n), *sx = tu_alloc(n), *sy = tu_alloc(n);
                tu_gen(gx, n, c + 40 * t + k, dt, 0);
                tu_gen(gy, n, c + 40 * t + k + 1, dt, 1);
                int64_t gshape[PLM_MAX_NDIM];
                int64_t ng = tu_group_data(gx, C->ndim, C->shape, C->axis, rows, mask, sx, gshape);
                tu_group_data(gy, C->ndim, C->shape, C->axis, rows, mask, sy, gshape);
                plm_array_t x = tu_make(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, dt, rows, mask, gx);
                plm_array_t y = tu_make(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, dt, rows, mask, gy);
                check_dot(x, y, dt, sx, sy, ng, 0, what);
                check_dot(x, y, dt, sx, sy, ng, 1, what);
                /* the ±inf / negative ords of an empty group are not defined the same way; norm is
                 * collective on the whole comm, so every rank skips them if any group is empty */
                const int some_group_empty = !plm_all_ranks(ng != 0);
                for (int o = 0; o < NORDS; o++) {
                    if (some_group_empty && (ORDS[o] < 0 || ORDS[o] == -INFINITY)) continue;
                    check_norm(x, dt, sx, ng, ORDS[o], what);
                }
                /* norm_axis */
                int a = tu_axis(C->axis, C->ndim);
                for (int ax = 0; ax < C->ndim; ax++) {
                    const double *src = ax == a ? sx : gx;
                    const int64_t *shp = ax == a ? gshape : C->shape;
                    int64_t nout = tu_prod(C->shape, 0, C->ndim) / (C->shape[ax] ? C->shape[ax] : 1);
                    double *ref = (double *)calloc((size_t)nout + 1, sizeof(double));
                    double *got = (double *)calloc((size_t)nout + 1, sizeof(double));
                    double ords2[3] = {2.0, 1.0, INFINITY};
                    for (int o = 0; o < 3; o++) {
                        tu_ref_norm_axis(src, C->ndim, shp, ax, ords2[o], ref);
                        TU_CHECK_OK(plm_array_norm_axis(x, ords2[o], ax, got, nout));
                        int64_t bad = 0, first = -1;
                        for (int64_t i = 0; i < nout; i++)
                            if (!tu_close_rel(got[i], ref[i], tu_rtol(dt))) {
                                if (first < 0) first = i;
                                bad++;
                            }
                        TU_EXPECT(bad == 0, "%s masked norm_axis(ord=%g, axis=%d, %s): %lld differ; first %lld got %.17g expected %.17g",
                                  what, ords2[o], ax, ax == a ? "distributed: group" : "local: whole comm",
                                  (long long)bad, (long long)first, first >= 0 ? got[first] : 0.0,
                                  first >= 0 ? ref[first] : 0.0);
                    }
                    free(ref);
                    free(got);
                }
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                free(gx);
                free(gy);
                free(sx);
                free(sy);
            }
    TU_DONE();
}

/* Typical use: the data replicated across groups (mask = r % nsub), each group holding the
 * whole vector split among its members: every group gets the full dot/norm. */
static void test_masked_replicated(void **state)
{
    (void)state;
    int P = tu_size;
    int nsub = P >= 2 && P % 2 == 0 ? 2 : 1;
    int mask[TU_MAX_RANKS];
    for (int r = 0; r < P; r++) mask[r] = r / (P / nsub);
    int gsize = P / nsub, grank = tu_rank % gsize;
    int64_t nvec = 301; /* per-group vector */
    int64_t rows[TU_MAX_RANKS];
    for (int r = 0; r < P; r++) rows[r] = tu_split(nvec, gsize, r % gsize);
    int64_t gshape[1] = {nvec * nsub};
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        double *v = tu_alloc(nvec), *w = tu_alloc(nvec), *gx = tu_alloc(gshape[0]), *gy = tu_alloc(gshape[0]);
        tu_gen(v, nvec, 5 + t, dt, 0);
        tu_gen(w, nvec, 6 + t, dt, 0);
        for (int s = 0; s < nsub; s++) {
            memcpy(gx + 2 * s * nvec, v, sizeof(double) * 2 * (size_t)nvec);
            memcpy(gy + 2 * s * nvec, w, sizeof(double) * 2 * (size_t)nvec);
        }
        (void)grank;
        plm_array_t x = tu_make(1, gshape, 0, PLM_PARTITION_SCATTER, dt, rows, mask, gx);
        plm_array_t y = tu_make(1, gshape, 0, PLM_PARTITION_SCATTER, dt, rows, mask, gy);
        char what[100];
        snprintf(what, sizeof what, "[replicated over %d groups %s]", nsub, tu_dtname(dt));
        check_dot(x, y, dt, v, w, nvec, 0, what);
        check_dot(x, y, dt, v, w, nvec, 1, what);
        for (int o = 0; o < NORDS; o++) check_norm(x, dt, v, nvec, ORDS[o], what);
        /* masked asarray gives the group's vector */
        void *buf = calloc((size_t)nvec, tu_esize(dt));
        TU_CHECK_OK(plm_array_asarray(x, 1, buf, tu_bytes(dt, nvec)));
        tu_check_buf(dt, buf, nvec, v, 0.0, what);
        free(buf);
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        free(v);
        free(w);
        free(gx);
        free(gy);
    }
    TU_DONE();
}

/* BROADCAST (and UNSAFE_BROADCAST) arrays with a mask reduce like their SCATTER twin, as
 * PyLops-MPI's dot does (to_dist, then a reduction over the mask group): each group's dot and
 * norm are those of its ranks' slabs of the default split along axis 0 over the whole
 * communicator (ones(4), mask {0, 1} on 2 ranks: dot 2 in each group, as for SCATTER); norm^2
 * is the group's vdot. norm_axis and masked asarray stay the full array's (computed locally). */
static void test_masked_broadcast_per_group(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS];
    int64_t shape[2] = {7, 9};
    int64_t n = 63, rows[2 * TU_MAX_RANKS];
    for (int r = 0; r < P; r++) {
        rows[2 * r] = tu_split(shape[0], P, r);
        rows[2 * r + 1] = shape[1];
    }
    for (int k = 0; k < TU_NMASKS; k++)
        for (int p = 1; p < 3; p++)
            for (int t = 0; t < 4; t++) {
                plm_dtype_t dt = TU_DTYPES[t];
                tu_mask(k, P, mask);
                char what[160];
                snprintf(what, sizeof what, "[%s masked (kind %d) %s]", tu_partname(TU_PARTS[p]), k, tu_dtname(dt));
                double gx[2 * 63], gy[2 * 63], sx[2 * 63], sy[2 * 63];
                tu_gen(gx, n, 11 + t, dt, 0);
                tu_gen(gy, n, 12 + t, dt, 0);
                int64_t gshape[2];
                const int64_t ng = tu_group_data(gx, 2, shape, 0, rows, mask, sx, gshape);
                tu_group_data(gy, 2, shape, 0, rows, mask, sy, gshape);
                plm_array_t x = tu_make(2, shape, 0, TU_PARTS[p], dt, NULL, mask, gx);
                plm_array_t y = tu_make(2, shape, 0, TU_PARTS[p], dt, NULL, mask, gy);
                check_dot(x, y, dt, sx, sy, ng, 0, what);
                check_dot(x, y, dt, sx, sy, ng, 1, what);
                for (int o = 0; o < NORDS; o++) check_norm(x, dt, sx, ng, ORDS[o], what);
                /* the SCATTER twin (default split, same mask) gives the same values */
                plm_array_t xs = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, dt, NULL, mask, gx);
                double a[2] = {0, 0}, b[2] = {0, 0}, na = 0, nb = 0;
                TU_CHECK_OK(plm_array_dot(x, x, 1, &a[0], &a[1]));
                TU_CHECK_OK(plm_array_dot(xs, xs, 1, &b[0], &b[1]));
                TU_CHECK_OK(plm_array_norm(x, 2.0, &na));
                TU_CHECK_OK(plm_array_norm(xs, 2.0, &nb));
                TU_EXPECT(tu_close_rel(a[0], b[0], tu_rtol(dt)) && tu_close_rel(na, nb, tu_rtol(dt)) &&
                              tu_close_rel(na * na, a[0], 10 * tu_rtol(dt)),
                          "%s vdot %.17g / SCATTER %.17g, norm %.17g / SCATTER %.17g", what, a[0], b[0], na, nb);
                plm_array_destroy(&xs);
                for (int ax = 0; ax < 2; ax++) {
                    double ref[9], got[9];
                    int64_t nout = n / shape[ax];
                    tu_ref_norm_axis(gx, 2, shape, ax, 2.0, ref);
                    TU_CHECK_OK(plm_array_norm_axis(x, 2.0, ax, got, nout));
                    int bad = 0;
                    for (int64_t i = 0; i < nout; i++) bad += !tu_close_rel(got[i], ref[i], tu_rtol(dt));
                    TU_EXPECT(bad == 0, "%s norm_axis(axis=%d) %d values differ (got[0] %.17g ref[0] %.17g)", what, ax,
                              bad, got[0], ref[0]);
                }
                /* masked asarray of a BROADCAST array is the full array */
                void *buf = calloc((size_t)n, tu_esize(dt));
                TU_CHECK_OK(plm_array_asarray(x, 1, buf, tu_bytes(dt, n)));
                tu_check_buf(dt, buf, n, gx, 0.0, what);
                free(buf);
                plm_array_destroy(&x);
                plm_array_destroy(&y);
            }
    /* the case: ones(4), mask {0, 1, ...}: each group's dot is its ranks' share */
    {
        int64_t four = 4;
        double ones[8] = {1, 0, 1, 0, 1, 0, 1, 0};
        for (int r = 0; r < P; r++) mask[r] = r % 2;
        plm_array_t x = tu_make(1, &four, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT64, NULL, mask, ones);
        double d = NAN;
        TU_CHECK_OK(plm_array_dot(x, x, 0, &d, NULL));
        double want = 0;
        for (int r = 0; r < P; r++)
            if (mask[r] == mask[tu_rank]) want += (double)tu_split(4, P, r);
        TU_EXPECT(d == want, "ones(4) masked BROADCAST dot %g, want %g", d, want);
        plm_array_destroy(&x);
    }
    TU_DONE();
}

/* Bad ords: NaN is an error; the result is identical on all ranks for good ords. */
static void test_norm_special(void **state)
{
    (void)state;
    int64_t shape[1] = {97};
    double g[2 * 97];
    tu_gen(g, 97, 1, PLM_FLOAT64, 0);
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g);
    double r = 0;
    TU_EXPECT_ERR(plm_array_norm(x, NAN, &r), PLM_ERR_INVALID_ARG);
    for (int o = 0; o < NORDS; o++) {
        double v = 0, v0;
        TU_CHECK_OK(plm_array_norm(x, ORDS[o], &v));
        v0 = v;
        MPI_Bcast(&v0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        TU_EXPECT(memcmp(&v0, &v, sizeof v) == 0, "norm(ord %g) differs between ranks: %.17g vs rank 0 %.17g", ORDS[o], v, v0);
    }
    /* all-zero array: norms 0, count 0 */
    TU_CHECK_OK(plm_array_fill(x, 0, 0));
    double ords[4] = {2.0, 1.0, 0.0, INFINITY};
    for (int o = 0; o < 4; o++) {
        double v = -1;
        TU_CHECK_OK(plm_array_norm(x, ords[o], &v));
        TU_EXPECT(v == 0.0, "norm(zeros, ord %g) = %g", ords[o], v);
    }
    plm_array_destroy(&x);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_dot),
        TU_TEST(test_norm),
        TU_TEST(test_norm_axis), TU_TEST(test_norm_axis_many),
        TU_TEST(test_masked_reductions),
        TU_TEST(test_masked_replicated),
        TU_TEST(test_masked_broadcast_per_group),
        TU_TEST(test_norm_special),
    };
    return plm_run_group_tests_mpi(tests);
}
