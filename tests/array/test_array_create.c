/* Creation of distributed arrays: default and user local shapes, offsets, queries, wrapped
 * user memory (zero copy), BROADCAST kinds, negative axes, masks, local data access. */
#include "array_test_util.h"

/* Default split for every case, partition and dtype; layout queries and local data access. */
static void test_default_layout(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[4 * PLM_MAX_NDIM * 8];
    for (int c = 0; c < TU_NCASES; c++) {
        const tu_case_t *C = &TU_CASES[c];
        for (int p = 0; p < 3; p++)
            for (int t = 0; t < 4; t++) {
                char what[160];
                snprintf(what, sizeof what, "%s %s %s", C->name, tu_partname(TU_PARTS[p]), tu_dtname(TU_DTYPES[t]));
                plm_array_t x = NULL;
                TU_OK(plm_array_create(tu_comm, C->ndim, C->shape, C->axis, TU_PARTS[p], TU_DTYPES[t], PLM_MEMORY_HOST, &x));
                tu_default_rows(C->ndim, C->shape, C->axis, TU_PARTS[p], P, rows);
                tu_check_layout(x, C->ndim, C->shape, C->axis, TU_PARTS[p], TU_DTYPES[t], rows, NULL, what);
                /* Explicit local split formula on the axis. */
                int a = tu_axis(C->axis, C->ndim);
                int64_t ls[PLM_MAX_NDIM];
                TU_CHECK_OK(plm_array_local_shape(x, ls));
                int64_t n = C->shape[a];
                int64_t expect = TU_PARTS[p] == PLM_PARTITION_SCATTER ? (tu_rank < n % P ? n / P + 1 : n / P) : n;
                TU_EXPECT(ls[a] == expect, "%s: local extent %lld expected %lld", what, (long long)ls[a], (long long)expect);
                /* Communicator query. */
                plm_comm_t cc = NULL;
                int cs = 0;
                TU_CHECK_OK(plm_array_get_comm(x, &cc));
                TU_CHECK_OK(plm_comm_size(cc, &cs));
                TU_EXPECT(cs == P, "%s: comm size %d", what, cs);
                /* Local data round trip through write/read. */
                double *g = tu_alloc(tu_prod(C->shape, 0, C->ndim));
                tu_gen(g, tu_prod(C->shape, 0, C->ndim), c + 3 * p, TU_DTYPES[t], 0);
                tu_fill(x, g);
                tu_check_local(x, g, 0.0, what);
                const void *rd = (const void *)&rd;
                TU_CHECK_OK(plm_array_get_local_read(x, &rd));
                TU_CHECK_OK(plm_array_restore_local_read(x, &rd));
                TU_EXPECT(rd == NULL, "%s: restore_local_read did not set NULL", what);
                void *wd = NULL;
                TU_CHECK_OK(plm_array_get_local_write(x, &wd));
                TU_CHECK_OK(plm_array_restore_local_write(x, &wd));
                TU_EXPECT(wd == NULL, "%s: restore_local_write did not set NULL", what);
                tu_check_local(x, g, 0.0, what);
                free(g);
                TU_OK(plm_array_destroy(&x));
                TU_EXPECT(x == NULL, "%s: destroy did not set NULL", what);
            }
    }
    TU_DONE();
}

/* User local shapes: the default split reversed across ranks, everything on rank 0, everything
 * on the last rank. */
static void test_user_local_shapes(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[4 * PLM_MAX_NDIM];
    for (int c = 0; c < TU_NCASES; c++) {
        const tu_case_t *C = &TU_CASES[c];
        int a = tu_axis(C->axis, C->ndim);
        for (int kind = 0; kind < 3; kind++)
            for (int t = 0; t < 4; t += 3) {
                char what[160];
                snprintf(what, sizeof what, "%s user-shapes kind %d %s", C->name, kind, tu_dtname(TU_DTYPES[t]));
                if (kind == 0) {
                    tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                } else {
                    tu_default_rows(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, P, rows);
                    for (int r = 0; r < P; r++)
                        rows[r * C->ndim + a] = (r == (kind == 1 ? 0 : P - 1)) ? C->shape[a] : 0;
                }
                plm_array_t x = tu_make(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, TU_DTYPES[t], rows, NULL, NULL);
                tu_check_layout(x, C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, TU_DTYPES[t], rows, NULL, what);
                /* Data placement follows the user shapes: asarray of filled data is the global. */
                int64_t n = tu_prod(C->shape, 0, C->ndim);
                double *g = tu_alloc(n);
                tu_gen(g, n, c, TU_DTYPES[t], 0);
                tu_fill(x, g);
                void *buf = calloc((size_t)n + 1, tu_esize(TU_DTYPES[t]));
                TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(TU_DTYPES[t], n)));
                tu_check_buf(TU_DTYPES[t], buf, n, g, 0.0, what);
                free(buf);
                free(g);
                plm_array_destroy(&x);
            }
    }
    /* BROADCAST kinds with explicit local shapes equal to the global. */
    for (int p = 1; p < 3; p++) {
        int64_t gshape[2] = {5, 4};
        int64_t brow[2 * 8];
        for (int r = 0; r < P; r++) {
            brow[2 * r] = 5;
            brow[2 * r + 1] = 4;
        }
        plm_array_t x = tu_make(2, gshape, 1, TU_PARTS[p], PLM_FLOAT64, brow, NULL, NULL);
        tu_check_layout(x, 2, gshape, 1, TU_PARTS[p], PLM_FLOAT64, brow, NULL, "broadcast explicit shapes");
        plm_array_destroy(&x);
    }
    TU_DONE();
}

/* Wrapping user memory: no copy (same pointer), data shared in both directions, memory not
 * freed by destroy. */
static void test_wrap_user_memory(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[4 * PLM_MAX_NDIM];
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 3; p++)
            for (int c = 0; c < TU_NCASES; c++) {
                const tu_case_t *C = &TU_CASES[c];
                plm_dtype_t dt = TU_DTYPES[t];
                plm_partition_t part = TU_PARTS[p];
                char what[160];
                snprintf(what, sizeof what, "wrap %s %s %s", C->name, tu_partname(part), tu_dtname(dt));
                int use_rev = (c % 2 == 1) && part == PLM_PARTITION_SCATTER;
                if (use_rev)
                    tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                else
                    tu_default_rows(C->ndim, C->shape, C->axis, part, P, rows);
                int64_t nloc = tu_prod(rows + tu_rank * C->ndim, 0, C->ndim);
                int64_t n = tu_prod(C->shape, 0, C->ndim);
                int64_t offs[TU_MAX_RANKS];
                tu_offsets(C->ndim, rows, C->axis, P, offs);
                int a = tu_axis(C->axis, C->ndim);
                double *g = tu_alloc(n);
                tu_gen(g, n, 7 + c, dt, 0);
                /* user buffer holds this rank's block */
                void *user = calloc((size_t)nloc + 1, tu_esize(dt));
                int64_t off = part == PLM_PARTITION_SCATTER ? offs[tu_rank] : 0;
                for (int64_t l = 0; l < nloc; l++) {
                    int64_t gi = tu_l2g(C->ndim, C->shape, a, rows + tu_rank * C->ndim, off, l);
                    tu_set(dt, user, l, g[2 * gi], g[2 * gi + 1]);
                }
                plm_array_t x = NULL;
                TU_OK(plm_array_create_ex(tu_comm, C->ndim, C->shape, C->axis, part, dt, PLM_MEMORY_HOST,
                                          use_rev ? P : 0, use_rev ? rows : NULL, 0, NULL, user, tu_bytes(dt, nloc), &x));
                tu_check_layout(x, C->ndim, C->shape, C->axis, part, dt, rows, NULL, what);
                const void *rd = NULL;
                TU_CHECK_OK(plm_array_get_local_read(x, &rd));
                TU_EXPECT(rd == user || nloc == 0, "%s: get_local_read %p is not the user pointer %p", what, rd, user);
                plm_array_restore_local_read(x, &rd);
                void *wd = NULL;
                TU_CHECK_OK(plm_array_get_local_write(x, &wd));
                TU_EXPECT(wd == user || nloc == 0, "%s: get_local_write %p is not the user pointer %p", what, wd, user);
                plm_array_restore_local_write(x, &wd);
                /* user data visible through the array */
                tu_check_local(x, g, 0.0, what);
                /* library writes visible in the user buffer: scale by 2 */
                TU_CHECK_OK(plm_array_scale(x, 2.0, 0.0));
                int64_t bad = 0;
                for (int64_t l = 0; l < nloc; l++) {
                    int64_t gi = tu_l2g(C->ndim, C->shape, a, rows + tu_rank * C->ndim, off, l);
                    double vr, vi;
                    tu_get(dt, user, l, &vr, &vi);
                    if (!tu_close(vr, vi, 2 * g[2 * gi], 2 * g[2 * gi + 1], 0.0)) bad++;
                }
                TU_EXPECT(bad == 0, "%s: %lld user elements not scaled in place", what, (long long)bad);
                TU_OK(plm_array_destroy(&x));
                /* memory still ours: write it after destroy (a double free / use after free would show
                 * under sanitizers) */
                memset(user, 0, (size_t)nloc * tu_esize(dt));
                free(user);
                free(g);
            }
    TU_DONE();
}

/* Negative axes are normalised: -1 is the last axis, -ndim the first. */
static void test_negative_axis(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t shape[3] = {5, 6, 7};
    int64_t rows[3 * 8];
    for (int ax = -3; ax <= -1; ax++) {
        plm_array_t x = NULL;
        TU_OK(plm_array_create(tu_comm, 3, shape, ax, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
        int got = -9;
        TU_CHECK_OK(plm_array_axis(x, &got));
        TU_EXPECT(got == ax + 3, "axis %d normalised to %d", ax, got);
        tu_default_rows(3, shape, ax, PLM_PARTITION_SCATTER, P, rows);
        tu_check_layout(x, 3, shape, ax, PLM_PARTITION_SCATTER, PLM_FLOAT64, rows, NULL, "negative axis");
        /* same layout as the positive axis: element-wise ops combine them */
        plm_array_t y = NULL;
        TU_OK(plm_array_create(tu_comm, 3, shape, ax + 3, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &y));
        double g[2 * 210];
        tu_gen(g, 210, 1, PLM_FLOAT64, 0);
        tu_fill(x, g);
        TU_CHECK_OK(plm_array_copy(x, y));
        tu_check_local(y, g, 0.0, "copy negative->positive axis");
        plm_array_destroy(&x);
        plm_array_destroy(&y);
    }
    TU_DONE();
}

/* Mask queries; masks kept by duplicate, zeros_like and empty_like. */
static void test_mask_query(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS], got[TU_MAX_RANKS];
    int64_t shape[2] = {11, 3};
    int64_t rows[2 * 8];
    tu_default_rows(2, shape, 0, PLM_PARTITION_SCATTER, P, rows);
    for (int k = 0; k < TU_NMASKS; k++) {
        tu_mask(k, P, mask);
        plm_array_t x = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX64, NULL, mask, NULL);
        tu_check_layout(x, 2, shape, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX64, rows, mask, "mask");
        int has = -1;
        TU_CHECK_OK(plm_array_mask(x, &has, NULL));
        TU_EXPECT(has == 1, "has_mask %d with NULL mask out", has);
        plm_array_t d = NULL, z = NULL, e = NULL;
        TU_CHECK_OK(plm_array_duplicate(x, &d));
        TU_CHECK_OK(plm_array_zeros_like(x, &z));
        TU_CHECK_OK(plm_array_empty_like(x, &e));
        plm_array_t outs[3] = {d, z, e};
        for (int i = 0; i < 3; i++) {
            has = -1;
            for (int q = 0; q < P; q++) got[q] = -1;
            TU_CHECK_OK(plm_array_mask(outs[i], &has, got));
            TU_EXPECT(has == 1, "copy %d lost the mask", i);
            for (int q = 0; q < P; q++) TU_EXPECT(got[q] == mask[q], "copy %d mask[%d] = %d", i, q, got[q]);
            plm_array_destroy(&outs[i]);
        }
        plm_array_destroy(&x);
    }
    plm_array_t x = tu_make(2, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, NULL);
    int has = -1;
    got[0] = 12345;
    TU_CHECK_OK(plm_array_mask(x, &has, got));
    TU_EXPECT(has == 0, "has_mask %d without mask", has);
    TU_EXPECT(got[0] == 12345, "mask written without a mask");
    plm_array_destroy(&x);
    TU_DONE();
}

/* Edge shapes: zero-size global array, PLM_MAX_NDIM dimensions, 1-element arrays. */
static void test_edge_shapes(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    /* empty */
    int64_t z1[1] = {0};
    plm_array_t x = tu_make(1, z1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    tu_default_rows(1, z1, 0, PLM_PARTITION_SCATTER, P, rows);
    tu_check_layout(x, 1, z1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, rows, NULL, "empty 1-D");
    double nrm = -1;
    TU_CHECK_OK(plm_array_norm(x, 2.0, &nrm));
    TU_EXPECT(nrm == 0.0, "norm of empty array %g", nrm);
    double dot = -1;
    TU_CHECK_OK(plm_array_dot(x, x, 0, &dot, NULL));
    TU_EXPECT(dot == 0.0, "dot of empty array %g", dot);
    plm_array_destroy(&x);
    /* empty along a non-distributed axis */
    int64_t z2[2] = {5, 0};
    x = tu_make(2, z2, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, NULL, NULL, NULL);
    tu_default_rows(2, z2, 0, PLM_PARTITION_SCATTER, P, rows);
    tu_check_layout(x, 2, z2, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, rows, NULL, "5x0");
    plm_array_destroy(&x);
    /* PLM_MAX_NDIM dims, distributed along the last */
    int64_t big[PLM_MAX_NDIM];
    for (int i = 0; i < PLM_MAX_NDIM; i++) big[i] = 2;
    big[PLM_MAX_NDIM - 1] = 5;
    int64_t n = tu_prod(big, 0, PLM_MAX_NDIM);
    double *g = tu_alloc(n);
    tu_gen(g, n, 2, PLM_FLOAT32, 0);
    x = tu_make(PLM_MAX_NDIM, big, PLM_MAX_NDIM - 1, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, g);
    tu_default_rows(PLM_MAX_NDIM, big, PLM_MAX_NDIM - 1, PLM_PARTITION_SCATTER, P, rows);
    tu_check_layout(x, PLM_MAX_NDIM, big, PLM_MAX_NDIM - 1, PLM_PARTITION_SCATTER, PLM_FLOAT32, rows, NULL, "8-D");
    float *buf = (float *)calloc((size_t)n, sizeof(float));
    TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT32, n)));
    tu_check_buf(PLM_FLOAT32, buf, n, g, 0.0, "8-D asarray");
    free(buf);
    free(g);
    plm_array_destroy(&x);
    /* one element */
    int64_t one[1] = {1};
    double g1[2] = {3.5, 0};
    x = tu_make(1, one, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, g1);
    tu_default_rows(1, one, 0, PLM_PARTITION_SCATTER, P, rows);
    tu_check_layout(x, 1, one, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, rows, NULL, "1 element");
    TU_CHECK_OK(plm_array_norm(x, 1.0, &nrm));
    TU_EXPECT(nrm == 3.5, "norm of [3.5] = %g", nrm);
    plm_array_destroy(&x);
    TU_DONE();
}

/* Library-level facts the arrays rely on. */
static void test_dtype_size_and_status(void **state)
{
    (void)state;
    TU_EXPECT(plm_dtype_size(PLM_FLOAT32) == 4, "float32 size");
    TU_EXPECT(plm_dtype_size(PLM_FLOAT64) == 8, "float64 size");
    TU_EXPECT(plm_dtype_size(PLM_COMPLEX64) == 8, "complex64 size");
    TU_EXPECT(plm_dtype_size(PLM_COMPLEX128) == 16, "complex128 size");
    TU_EXPECT(plm_dtype_size((plm_dtype_t)17) == 0, "invalid dtype size");
    for (int s = 0; s <= 11; s++) {
        const char *m = plm_status_string((plm_status_t)s);
        TU_EXPECT(m != NULL && m[0] != 0, "status string %d", s);
    }
    plm_clear_last_error();
    const char *e = plm_last_error();
    TU_EXPECT(e != NULL && e[0] == 0, "last error not empty after clear");
    /* a successful call leaves it empty */
    int64_t shape[1] = {10};
    plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    e = plm_last_error();
    TU_EXPECT(e != NULL && e[0] == 0, "last error set by a successful create: %s", e ? e : "(null)");
    plm_array_destroy(&x);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_default_layout),  TU_TEST(test_user_local_shapes), TU_TEST(test_wrap_user_memory),
        TU_TEST(test_negative_axis),   TU_TEST(test_mask_query),        TU_TEST(test_edge_shapes),
        TU_TEST(test_dtype_size_and_status),
    };
    return plm_run_group_tests_mpi(tests);
}
