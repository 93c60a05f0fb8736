/* Layout operations: asarray (plain and masked), set_global (to_dist), add_ghost_cells,
 * redistribute, and the BROADCAST / UNSAFE_BROADCAST consistency rules. */
#include "array_test_util.h"

static int64_t nglob(const tu_case_t *C) { return tu_prod(C->shape, 0, C->ndim); }

/* asarray for every dtype, partition, case, default and reversed local shapes. */
static void test_asarray(void **state)
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
                    snprintf(what, sizeof what, "[%s %s %s%s] asarray", C->name, tu_partname(TU_PARTS[p]),
                             tu_dtname(dt), rev ? " reversed" : "");
                    int64_t n = nglob(C);
                    double *g = tu_alloc(n);
                    tu_gen(g, n, c + 7 * t, dt, 0);
                    if (rev) tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, TU_PARTS[p], dt, rev ? rows : NULL, NULL, g);
                    unsigned char *buf = (unsigned char *)calloc((size_t)n + 1, tu_esize(dt));
                    TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(dt, n)));
                    tu_check_buf(dt, buf, n, g, 0.0, what);
                    /* masked = 1 without a mask: the whole array */
                    memset(buf, 0, (size_t)n * tu_esize(dt));
                    TU_CHECK_OK(plm_array_asarray(x, 1, buf, tu_bytes(dt, n)));
                    tu_check_buf(dt, buf, n, g, 0.0, what);
                    free(buf);
                    plm_array_destroy(&x);
                    free(g);
                }
    TU_DONE();
}

/* Masked asarray of SCATTER arrays: the group's blocks in group rank order; the unmasked
 * asarray of a masked array is still the whole array. */
static void test_asarray_masked(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS];
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    for (int k = 0; k < TU_NMASKS; k++)
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < TU_NCASES; c++)
                for (int rev = 0; rev < 2; rev++) {
                    const tu_case_t *C = &TU_CASES[c];
                    plm_dtype_t dt = TU_DTYPES[t];
                    char what[200];
                    snprintf(what, sizeof what, "[%s %s mask kind %d%s] masked asarray", C->name, tu_dtname(dt), k,
                             rev ? " reversed" : "");
                    tu_mask(k, P, mask);
                    if (rev)
                        tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                    else
                        tu_default_rows(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, P, rows);
                    int64_t n = nglob(C);
                    double *g = tu_alloc(n), *s = tu_alloc(n);
                    tu_gen(g, n, c + 3 * t + k, dt, 0);
                    int64_t gs[PLM_MAX_NDIM];
                    int64_t ng = tu_group_data(g, C->ndim, C->shape, C->axis, rows, mask, s, gs);
                    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, PLM_PARTITION_SCATTER, dt, rows, mask, g);
                    unsigned char *buf = (unsigned char *)calloc((size_t)n + 1, tu_esize(dt));
                    TU_CHECK_OK(plm_array_asarray(x, 1, buf, tu_bytes(dt, ng)));
                    tu_check_buf(dt, buf, ng, s, 0.0, what);
                    memset(buf, 0, (size_t)n * tu_esize(dt));
                    TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(dt, n)));
                    tu_check_buf(dt, buf, n, g, 0.0, "unmasked asarray of a masked array");
                    free(buf);
                    plm_array_destroy(&x);
                    free(g);
                    free(s);
                }
    TU_DONE();
}

/* set_global: each rank copies its block; BROADCAST: rank 0's copy wins. */
static void test_set_global(void **state)
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
                    plm_partition_t part = TU_PARTS[p];
                    char what[200];
                    snprintf(what, sizeof what, "[%s %s %s%s] set_global", C->name, tu_partname(part), tu_dtname(dt),
                             rev ? " reversed" : "");
                    int64_t n = nglob(C);
                    double *g = tu_alloc(n), *g0 = tu_alloc(n);
                    /* BROADCAST kinds get rank-dependent globals to see whose copy is used */
                    int rdep = part != PLM_PARTITION_SCATTER;
                    tu_gen(g, n, c + 5 * t + (rdep ? 100 * tu_rank : 0), dt, 0);
                    tu_gen(g0, n, c + 5 * t, dt, 0);
                    unsigned char *buf = (unsigned char *)calloc((size_t)n + 1, tu_esize(dt));
                    for (int64_t i = 0; i < n; i++) tu_set(dt, buf, i, g[2 * i], g[2 * i + 1]);
                    if (rev) tu_reversed_rows(C->ndim, C->shape, C->axis, P, rows);
                    plm_array_t x = tu_make(C->ndim, C->shape, C->axis, part, dt, rev ? rows : NULL, NULL, NULL);
                    TU_CHECK_OK(plm_array_set_global(x, buf, tu_bytes(dt, n)));
                    /* SCATTER: own block; BROADCAST: rank 0's; UNSAFE_BROADCAST: documented only as
                     * "every rank holds it", the caller's own copy (no consistency traffic) */
                    const double *expect = part == PLM_PARTITION_BROADCAST ? g0 : g;
                    tu_check_local(x, expect, 0.0, what);
                    memset(buf, 0, (size_t)n * tu_esize(dt));
                    TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(dt, n)));
                    tu_check_buf(dt, buf, n, expect, 0.0, what);
                    free(buf);
                    plm_array_destroy(&x);
                    free(g);
                    free(g0);
                }
    TU_DONE();
}

/* Expected ghost block: global axis range [lo, hi) of the global array, whole along the others. */
static void ghost_ref(const double *g, int ndim, const int64_t *shape, int a, int64_t lo, int64_t hi, double *out)
{
    int64_t outer = tu_prod(shape, 0, a), inner = tu_prod(shape, a + 1, ndim), N = shape[a], m = hi - lo;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < m; j++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t d = (o * m + j) * inner + i, s = (o * N + lo + j) * inner + i;
                out[2 * d] = g[2 * s];
                out[2 * d + 1] = g[2 * s + 1];
            }
}

static void run_ghost_m(int ndim, const int64_t *shape, int axis, plm_dtype_t dt, const int64_t *rows,
                        const int *mask, const int64_t *before, const int64_t *after, const char *what);
static void run_ghost(int ndim, const int64_t *shape, int axis, plm_dtype_t dt, const int64_t *rows,
                      const int64_t *before, const int64_t *after, const char *what)
{
    run_ghost_m(ndim, shape, axis, dt, rows, NULL, before, after, what);
}

/* mask: ghost cells ignore it (they use the whole communicator). */
static void run_ghost_m(int ndim, const int64_t *shape, int axis, plm_dtype_t dt, const int64_t *rows,
                        const int *mask, const int64_t *before, const int64_t *after, const char *what)
{
    int P = tu_size, r = tu_rank, a = tu_axis(axis, ndim);
    int64_t n = tu_prod(shape, 0, ndim);
    int64_t er[PLM_MAX_NDIM * TU_MAX_RANKS], offs[TU_MAX_RANKS];
    if (rows)
        memcpy(er, rows, sizeof(int64_t) * (size_t)(ndim * P));
    else
        tu_default_rows(ndim, shape, axis, PLM_PARTITION_SCATTER, P, er);
    tu_offsets(ndim, er, a, P, offs);
    double *g = tu_alloc(n);
    tu_gen(g, n, 13 + ndim, dt, 0);
    plm_array_t x = tu_make(ndim, shape, axis, PLM_PARTITION_SCATTER, dt, rows, mask, g);
    int64_t b = r > 0 ? before[r] : 0, f = r < P - 1 ? after[r] : 0;
    int64_t lo = offs[r] - b, hi = offs[r] + er[r * ndim + a] + f;
    int64_t eshape[PLM_MAX_NDIM], gsh[PLM_MAX_NDIM];
    for (int d = 0; d < ndim; d++) eshape[d] = shape[d];
    eshape[a] = hi - lo;
    TU_CHECK_OK(plm_array_ghost_shape(x, before[r], after[r], gsh));
    for (int d = 0; d < ndim; d++)
        TU_EXPECT(gsh[d] == eshape[d], "%s ghost_shape[%d] = %lld expected %lld (before %lld after %lld)", what, d,
                  (long long)gsh[d], (long long)eshape[d], (long long)before[r], (long long)after[r]);
    int64_t m = tu_prod(eshape, 0, ndim);
    double *ref = tu_alloc(m);
    ghost_ref(g, ndim, shape, a, lo, hi, ref);
    unsigned char *out = (unsigned char *)calloc((size_t)m + 1, tu_esize(dt));
    TU_CHECK_OK(plm_array_add_ghost_cells(x, before[r], after[r], out, tu_bytes(dt, m)));
    tu_check_buf(dt, out, m, ref, 0.0, what);
    /* the array itself is unchanged */
    tu_check_local(x, g, 0.0, what);
    free(out);
    free(ref);
    free(g);
    plm_array_destroy(&x);
}

/* add_ghost_cells with various before/after per rank, axis 0 and non-zero axes, default and
 * user local shapes, every dtype. */
static void test_ghost_cells(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t before[8], after[8], rows[PLM_MAX_NDIM * TU_MAX_RANKS];
    struct { int ndim; int64_t shape[3]; int axis; } shp[] = {
        {1, {4 * 4 + 3}, 0}, {2, {19, 3}, 0}, {2, {3, 23}, 1}, {3, {2, 17, 3}, 1}, {3, {3, 2, 18}, -1},
    };
    for (int s = 0; s < (int)(sizeof shp / sizeof shp[0]); s++)
        for (int t = 0; t < 4; t++)
            for (int pat = 0; pat < 5; pat++) {
                plm_dtype_t dt = TU_DTYPES[t];
                for (int r = 0; r < P; r++) {
                    switch (pat) {
                    case 0: before[r] = 0; after[r] = 0; break;
                    case 1: before[r] = 1; after[r] = 1; break;
                    case 2: before[r] = 1 + r % 3; after[r] = (r + 1) % 3; break;
                    case 3: before[r] = 0; after[r] = 2; break;
                    case 4: before[r] = 3; after[r] = 0; break;
                    }
                }
                char what[200];
                snprintf(what, sizeof what, "[ghost %dD axis %d %s pattern %d]", shp[s].ndim, shp[s].axis,
                         tu_dtname(dt), pat);
                run_ghost(shp[s].ndim, shp[s].shape, shp[s].axis, dt, NULL, before, after, what);
                /* reversed split (each rank still holds >= 4 along the axis) */
                tu_reversed_rows(shp[s].ndim, shp[s].shape, shp[s].axis, P, rows);
                snprintf(what, sizeof what, "[ghost %dD axis %d %s pattern %d reversed]", shp[s].ndim, shp[s].axis,
                         tu_dtname(dt), pat);
                run_ghost(shp[s].ndim, shp[s].shape, shp[s].axis, dt, rows, before, after, what);
            }
    /* A whole neighbour block as halo (before = previous rank's count, after = next rank's). */
    {
        int64_t shape[2] = {4 * P + 1, 3};
        tu_default_rows(2, shape, 0, PLM_PARTITION_SCATTER, P, rows);
        for (int r = 0; r < P; r++) {
            before[r] = r > 0 ? rows[(r - 1) * 2] : 0;
            after[r] = r < P - 1 ? rows[(r + 1) * 2] : 0;
        }
        run_ghost(2, shape, 0, PLM_FLOAT64, NULL, before, after, "[ghost whole neighbour blocks]");
        /* the same with a mask: halos still come from the neighbours in the whole comm */
        int mask[TU_MAX_RANKS];
        for (int k = 0; k < TU_NMASKS; k++) {
            tu_mask(k, P, mask);
            run_ghost_m(2, shape, 0, PLM_COMPLEX64, NULL, mask, before, after, "[ghost masked array]");
        }
    }
    /* fewer entries than ranks (some blocks empty), no halo requested */
    {
        int64_t shape[2] = {2, 3};
        for (int r = 0; r < P; r++) before[r] = after[r] = 0;
        run_ghost(2, shape, 0, PLM_FLOAT32, NULL, before, after, "[ghost empty blocks, no halo]");
        /* one halo slice from a non-empty neighbour: rank 1 asks rank 0 (which holds 1 row) */
        if (P >= 2) {
            before[1] = 1;
            run_ghost(2, shape, 0, PLM_FLOAT32, NULL, before, after, "[ghost one slice next to empty blocks]");
        }
    }
    TU_DONE();
}

/* redistribute to another axis: asarray unchanged, balanced new local shapes, mask and dtype
 * kept; same axis and BROADCAST kinds: an independent copy. */
static void test_redistribute(void **state)
{
    (void)state;
    int P = tu_size;
    int mask[TU_MAX_RANKS];
    int64_t rows[PLM_MAX_NDIM * TU_MAX_RANKS], er[PLM_MAX_NDIM * TU_MAX_RANKS];
    struct { int ndim; int64_t shape[3]; int from, to; } cs[] = {
        {2, {7, 10}, 0, 1}, {2, {7, 10}, 1, 0}, {3, {5, 3, 7}, 0, 2}, {3, {5, 3, 7}, 2, 1},
        {3, {2, 9, 5}, 1, 0}, {2, {3, 2}, 0, 1}, {2, {6, 5}, 1, 1},
    };
    for (int c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++)
        for (int t = 0; t < 4; t++)
            for (int v = 0; v < 3; v++) { /* 0 default, 1 reversed input shapes, 2 masked */
                plm_dtype_t dt = TU_DTYPES[t];
                int ndim = cs[c].ndim;
                int64_t n = tu_prod(cs[c].shape, 0, ndim);
                char what[200];
                snprintf(what, sizeof what, "[redistribute %dD axis %d->%d %s variant %d]", ndim, cs[c].from, cs[c].to,
                         tu_dtname(dt), v);
                if (v == 1) tu_reversed_rows(ndim, cs[c].shape, cs[c].from, P, rows);
                tu_mask(1, P, mask);
                double *g = tu_alloc(n);
                tu_gen(g, n, 4 * c + t, dt, 0);
                plm_array_t x = tu_make(ndim, cs[c].shape, cs[c].from, PLM_PARTITION_SCATTER, dt, v == 1 ? rows : NULL,
                                        v == 2 ? mask : NULL, g);
                plm_array_t y = NULL;
                TU_CHECK_OK(plm_array_redistribute(x, cs[c].to, &y));
                if (!y) { plm_array_destroy(&x); free(g); continue; }
                /* another axis: the default (balanced) split; the same axis: a copy, same layout */
                if (cs[c].from == cs[c].to && v == 1)
                    memcpy(er, rows, sizeof(int64_t) * (size_t)(ndim * P));
                else
                    tu_default_rows(ndim, cs[c].shape, cs[c].to, PLM_PARTITION_SCATTER, P, er);
                tu_check_layout(y, ndim, cs[c].shape, cs[c].to, PLM_PARTITION_SCATTER, dt, er, v == 2 ? mask : NULL, what);
                tu_check_local(y, g, 0.0, what);
                unsigned char *buf = (unsigned char *)calloc((size_t)n + 1, tu_esize(dt));
                TU_CHECK_OK(plm_array_asarray(y, 0, buf, tu_bytes(dt, n)));
                tu_check_buf(dt, buf, n, g, 0.0, what);
                free(buf);
                /* independent of the source */
                TU_CHECK_OK(plm_array_fill(x, 0, 0));
                tu_check_local(y, g, 0.0, "redistribute result shares data with its source");
                plm_array_destroy(&x);
                plm_array_destroy(&y);
                free(g);
            }
    /* BROADCAST kinds: a copy, layout unchanged */
    for (int p = 1; p < 3; p++) {
        int64_t shape[2] = {4, 5};
        double g[40];
        tu_gen(g, 20, 1, PLM_FLOAT64, 0);
        plm_array_t x = tu_make(2, shape, 0, TU_PARTS[p], PLM_FLOAT64, NULL, NULL, g);
        plm_array_t y = NULL;
        TU_CHECK_OK(plm_array_redistribute(x, 1, &y));
        if (y) {
            tu_default_rows(2, shape, 0, TU_PARTS[p], P, er);
            int pa = -1;
            plm_partition_t pp;
            TU_CHECK_OK(plm_array_partition(y, &pp));
            pa = (int)pp;
            TU_EXPECT(pa == (int)TU_PARTS[p], "redistribute of %s changed the partition to %d", tu_partname(TU_PARTS[p]), pa);
            int64_t ls[2];
            TU_CHECK_OK(plm_array_local_shape(y, ls));
            TU_EXPECT(ls[0] == 4 && ls[1] == 5, "redistribute of %s: local shape %lldx%lld", tu_partname(TU_PARTS[p]),
                      (long long)ls[0], (long long)ls[1]);
            tu_check_local(y, g, 0.0, "redistribute broadcast");
            TU_CHECK_OK(plm_array_fill(x, 0, 0));
            tu_check_local(y, g, 0.0, "redistribute broadcast result shares data");
        }
        plm_array_destroy(&x);
        plm_array_destroy(&y);
    }
    TU_DONE();
}

/* x's local block against the matching block of g, exactly; NaN matches NaN. */
static void check_local_exact(plm_const_array_t x, const double *g, const char *what)
{
    int ndim = 0, a = 0;
    int64_t gs[PLM_MAX_NDIM], ls[PLM_MAX_NDIM], off = 0, n = 0;
    plm_dtype_t dt = PLM_FLOAT64;
    const void *d = NULL;
    TU_CHECK_OK(plm_array_ndim(x, &ndim));
    TU_CHECK_OK(plm_array_global_shape(x, gs));
    TU_CHECK_OK(plm_array_local_shape(x, ls));
    TU_CHECK_OK(plm_array_axis(x, &a));
    TU_CHECK_OK(plm_array_local_offset(x, &off));
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_CHECK_OK(plm_array_dtype(x, &dt));
    TU_CHECK_OK(plm_array_get_local_read(x, &d));
    int64_t bad = 0;
    for (int64_t l = 0; l < n && d; l++) {
        const int64_t gi = tu_l2g(ndim, gs, a, ls, off, l);
        double vr, vi;
        tu_get(dt, d, l, &vr, &vi);
        const double rr = g[2 * gi], ri = g[2 * gi + 1];
        bad += !((vr == rr || (isnan(vr) && isnan(rr))) && (vi == ri || (isnan(vi) && isnan(ri))));
    }
    plm_array_restore_local_read(x, &d);
    TU_EXPECT(bad == 0, "%s: %lld of %lld local elements differ", what, (long long)bad, (long long)n);
}

/* Redistribution plans are kept by the source layout and reused: the same arrays (and arrays
 * of other dtypes on the same layout) redistributed again and again, with new data each round,
 * to every other axis and back, more (axis, dtype) pairs than the layout keeps plans for (so
 * plans are dropped and made again), with NaN and Inf in the data, and shapes with fewer rows
 * than ranks (empty blocks). */
static void test_redistribute_reuse(void **state)
{
    (void)state;
    struct { int ndim; int64_t shape[4]; int from; } cs[] = {
        {4, {5, 3, 4, 2}, 0}, {3, {4, 7, 3}, 2}, {2, {1, 6}, 0}, {3, {2, 1, 3}, 1},
    };
    for (int c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++) {
        const int ndim = cs[c].ndim, from = cs[c].from;
        const int64_t n = tu_prod(cs[c].shape, 0, ndim);
        plm_array_t xs[4] = {NULL, NULL, NULL, NULL};
        xs[0] = tu_make(ndim, cs[c].shape, from, PLM_PARTITION_SCATTER, TU_DTYPES[0], NULL, NULL, NULL);
        plm_layout_t lay = NULL;
        TU_OK(plm_array_layout(xs[0], &lay));
        for (int t = 1; t < 4; t++)
            TU_OK(plm_array_create_from_layout(lay, TU_DTYPES[t], PLM_MEMORY_HOST, NULL, 0, &xs[t]));
        double *g = tu_alloc(n);
        for (int round = 0; round < 3; round++)
            for (int t = 0; t < 4; t++) {
                const plm_dtype_t dt = TU_DTYPES[t];
                tu_gen(g, n, 7 * round + t, dt, 1);
                if (n > 2) {
                    g[0] = NAN;
                    g[2 * (n - 1)] = (round % 2) ? -INFINITY : INFINITY;
                }
                tu_fill(xs[t], g);
                for (int to = 0; to < ndim; to++) {
                    if (to == from) continue;
                    char what[160];
                    snprintf(what, sizeof what, "[redistribute reuse %dD %d->%d %s round %d]", ndim, from, to,
                             tu_dtname(dt), round);
                    plm_array_t y = NULL, z = NULL;
                    TU_CHECK_OK(plm_array_redistribute(xs[t], to, &y));
                    if (!y) continue;
                    check_local_exact(y, g, what);
                    TU_CHECK_OK(plm_array_redistribute(y, from, &z)); /* and back: y's layout's plan */
                    if (z) check_local_exact(z, g, what);
                    plm_array_destroy(&z);
                    plm_array_destroy(&y);
                }
            }
        free(g);
        for (int t = 0; t < 4; t++) plm_array_destroy(&xs[t]);
        plm_layout_destroy(&lay);
    }
    TU_DONE();
}

/* BROADCAST: restore_local_write broadcasts rank 0's data; fill uses rank 0's value. */
static void test_broadcast_consistency(void **state)
{
    (void)state;
    int64_t shape[2] = {5, 7};
    int64_t n = 35;
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        double g0[70], mine[70];
        tu_gen(g0, n, 0, dt, 0);
        tu_gen(mine, n, 50 * tu_rank, dt, 0); /* rank 0: g0 */
        plm_array_t x = tu_make(2, shape, 1, PLM_PARTITION_BROADCAST, dt, NULL, NULL, mine);
        char what[100];
        snprintf(what, sizeof what, "[BROADCAST %s write/restore]", tu_dtname(dt));
        tu_check_local(x, g0, 0.0, what);
        /* fill: rank 0's value */
        double vr = 1.5 + tu_rank, vi = -0.5 - tu_rank, v0r = 1.5, v0i = -0.5;
        tu_round(dt, &v0r, &v0i);
        if (!tu_cplx(dt)) v0i = 0;
        TU_CHECK_OK(plm_array_fill(x, vr, tu_cplx(dt) ? vi : 0));
        double ref[70];
        for (int64_t i = 0; i < n; i++) { ref[2 * i] = v0r; ref[2 * i + 1] = v0i; }
        snprintf(what, sizeof what, "[BROADCAST %s fill with rank-dependent value]", tu_dtname(dt));
        tu_check_local(x, ref, 0.0, what);
        /* a partial write of one element on a non-zero rank is overwritten by rank 0's */
        void *d = NULL;
        TU_OK(plm_array_get_local_write(x, &d));
        if (tu_rank != 0) tu_set(dt, d, 3, 99.0, 99.0);
        TU_OK(plm_array_restore_local_write(x, &d));
        snprintf(what, sizeof what, "[BROADCAST %s partial write on rank != 0]", tu_dtname(dt));
        tu_check_local(x, ref, 0.0, what);
        plm_array_destroy(&x);
    }
    TU_DONE();
}

/* UNSAFE_BROADCAST does not communicate: different data per rank stay different, through
 * write/restore and local element-wise ops; asarray returns the caller's own copy. */
static void test_unsafe_broadcast_local(void **state)
{
    (void)state;
    int64_t shape[1] = {23};
    int64_t n = 23;
    for (int t = 0; t < 4; t++) {
        plm_dtype_t dt = TU_DTYPES[t];
        double mine[46], ref[46];
        tu_gen(mine, n, 17 * tu_rank + 1, dt, 0);
        plm_array_t x = tu_make(1, shape, 0, PLM_PARTITION_UNSAFE_BROADCAST, dt, NULL, NULL, mine);
        char what[100];
        snprintf(what, sizeof what, "[UNSAFE_BROADCAST %s]", tu_dtname(dt));
        tu_check_local(x, mine, 0.0, what);
        TU_CHECK_OK(plm_array_scale(x, 2, 0));
        for (int64_t i = 0; i < 2 * n; i++) ref[i] = 2 * mine[i];
        tu_check_local(x, ref, 0.0, what);
        unsigned char buf[16 * 23];
        TU_CHECK_OK(plm_array_asarray(x, 0, buf, tu_bytes(dt, n)));
        tu_check_buf(dt, buf, n, ref, 0.0, what);
        plm_array_t d = NULL;
        TU_CHECK_OK(plm_array_duplicate(x, &d));
        if (d) tu_check_local(d, ref, 0.0, what);
        plm_array_destroy(&d);
        plm_array_destroy(&x);
    }
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_asarray),        TU_TEST(test_asarray_masked),        TU_TEST(test_set_global),
        TU_TEST(test_ghost_cells),    TU_TEST(test_redistribute),          TU_TEST(test_redistribute_reuse),          TU_TEST(test_broadcast_consistency),
        TU_TEST(test_unsafe_broadcast_local),
    };
    return plm_run_group_tests_mpi(tests);
}
