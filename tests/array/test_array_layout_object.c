/* The layout object (plm_layout_t) and root-based gather/scatter.
 *
 * Layouts: queries against the split computed here (default, custom rows, masks, every
 * TU_CASES shape), sharing between arrays (create_from_layout, get_layout, *_like), O(1)
 * equality, reference counting (handles destroyed before the arrays), not-collective
 * create_from_layout (a local error stays local), and masked reductions on arrays made from
 * two layouts with the same mask (one cached group).
 *
 * gather_to / scatter_from: every dtype, every TU_CASES shape and partition, every root,
 * against the global array built here; the global buffers are host memory, held by the root
 * only (other ranks pass NULL); a wrong n_out on the root fails every rank. */
#include "array_test_util.h"

static int64_t g_rows[TU_MAX_RANKS * PLM_MAX_NDIM];

static void expect_layout(plm_const_layout_t l, const tu_case_t *c, plm_partition_t part, const int64_t *rows,
                          const int *mask)
{
    int ndim = 0, axis = -9, has_mask = -1, m[TU_MAX_RANKS];
    plm_partition_t p = PLM_PARTITION_BROADCAST;
    int64_t gs[PLM_MAX_NDIM], ls[PLM_MAX_NDIM], all[TU_MAX_RANKS * PLM_MAX_NDIM], n = -1, off = -1, offs[TU_MAX_RANKS];
    TU_CHECK_OK(plm_layout_ndim(l, &ndim));
    TU_CHECK_OK(plm_layout_global_shape(l, gs));
    TU_CHECK_OK(plm_layout_local_shape(l, ls));
    TU_CHECK_OK(plm_layout_local_shapes(l, all));
    TU_CHECK_OK(plm_layout_local_size(l, &n));
    TU_CHECK_OK(plm_layout_local_offset(l, &off));
    TU_CHECK_OK(plm_layout_axis(l, &axis));
    TU_CHECK_OK(plm_layout_partition(l, &p));
    TU_CHECK_OK(plm_layout_mask(l, &has_mask, m));
    const int a = tu_axis(c->axis, c->ndim);
    tu_offsets(c->ndim, rows, a, tu_size, offs);
    TU_EXPECT(ndim == c->ndim && axis == a && p == part, "%s: ndim %d axis %d partition %d", c->name, ndim, axis, p);
    for (int d = 0; d < c->ndim; d++) {
        TU_EXPECT(gs[d] == c->shape[d], "%s: global extent %d", c->name, d);
        TU_EXPECT(ls[d] == rows[tu_rank * c->ndim + d], "%s: local extent %d", c->name, d);
    }
    for (int i = 0; i < tu_size * c->ndim; i++) TU_EXPECT(all[i] == rows[i], "%s: local_shapes[%d]", c->name, i);
    TU_EXPECT(n == tu_prod(rows + tu_rank * c->ndim, 0, c->ndim), "%s: local size %lld", c->name, (long long)n);
    TU_EXPECT(off == (part == PLM_PARTITION_SCATTER ? offs[tu_rank] : 0), "%s: offset %lld", c->name, (long long)off);
    TU_EXPECT(has_mask == (mask != NULL), "%s: has_mask %d", c->name, has_mask);
    for (int r = 0; mask && r < tu_size; r++) TU_EXPECT(m[r] == mask[r], "%s: mask[%d]", c->name, r);
}

static void test_layout_queries(void **state)
{
    (void)state;
    int mask[TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) mask[r] = r % 2;
    for (int i = 0; i < TU_NCASES; i++) {
        const tu_case_t *c = &TU_CASES[i];
        for (int k = 0; k < 3; k++) {
            const plm_partition_t part = TU_PARTS[k];
            plm_layout_t l = NULL;
            tu_default_rows(c->ndim, c->shape, c->axis, part, tu_size, g_rows);
            TU_OK(plm_layout_create(tu_comm, c->ndim, c->shape, c->axis, part, 0, NULL, 0, NULL, &l));
            expect_layout(l, c, part, g_rows, NULL);
            TU_OK(plm_layout_destroy(&l));
            TU_EXPECT(l == NULL, "destroy clears the handle");
        }
        /* custom rows (the default split reversed) and a mask */
        plm_layout_t l = NULL;
        tu_reversed_rows(c->ndim, c->shape, c->axis, tu_size, g_rows);
        TU_OK(plm_layout_create(tu_comm, c->ndim, c->shape, c->axis, PLM_PARTITION_SCATTER, tu_size, g_rows, tu_size,
                                mask, &l));
        expect_layout(l, c, PLM_PARTITION_SCATTER, g_rows, mask);
        plm_comm_t lc = NULL;
        int size = 0;
        TU_CHECK_OK(plm_layout_get_comm(l, &lc));
        TU_CHECK_OK(plm_comm_size(lc, &size));
        TU_EXPECT(size == tu_size, "layout comm size %d", size);
        TU_EXPECT_ERR(plm_comm_destroy(&lc), PLM_ERR_INVALID_ARG); /* lent, not owned */
        TU_OK(plm_layout_destroy(&l));
    }
    TU_DONE();
}

static void test_layout_sharing(void **state)
{
    (void)state;
    int64_t g[2] = {4 * tu_size + 3, 5};
    plm_layout_t l = NULL, got = NULL, other = NULL, same = NULL;
    plm_array_t x = NULL, y = NULL, z = NULL, w = NULL, v = NULL;
    TU_OK(plm_layout_create(tu_comm, 2, g, 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, &l));
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y));
    /* two references: the first destroy clears the caller's pointer, the second frees the
     * handle; the arrays keep the layout */
    plm_layout_t keep = l;
    TU_OK(plm_layout_retain(l));
    TU_OK(plm_layout_destroy(&l));
    TU_EXPECT(l == NULL, "destroy clears the caller's pointer even when references remain");
    int64_t n0 = -1;
    TU_CHECK_OK(plm_layout_local_size(keep, &n0));
    TU_OK(plm_layout_destroy(&keep));
    TU_CHECK_OK(plm_array_layout(x, &got));
    int eq = -1;
    TU_CHECK_OK(plm_layout_equal(got, got, &eq));
    TU_EXPECT(eq == 1, "a layout equals itself");
    int64_t n1 = -2;
    TU_CHECK_OK(plm_layout_local_size(got, &n1));
    TU_EXPECT(n0 == n1, "the array's layout outlives the handle it was made from");

    TU_OK(plm_array_fill(x, 2, 0));
    TU_OK(plm_array_fill(y, 3, 0));
    double d = 0;
    TU_CHECK_OK(plm_array_dot(x, y, 0, &d, NULL));
    TU_EXPECT(d == 6.0 * (double)(g[0] * g[1]), "dot of arrays sharing a layout: %g", d);

    /* an equal layout made separately: equal by fingerprint, operands compatible */
    TU_OK(plm_array_create(tu_comm, 2, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &z));
    TU_CHECK_OK(plm_array_layout(z, &same));
    TU_CHECK_OK(plm_layout_equal(got, same, &eq));
    TU_EXPECT(eq == 1, "equal splits made separately compare equal");
    TU_CHECK_OK(plm_array_add(x, y, z));

    /* another split of the same shape: not equal, refused as an operand on every rank */
    tu_reversed_rows(2, g, 0, tu_size, g_rows);
    TU_OK(plm_layout_create(tu_comm, 2, g, 0, PLM_PARTITION_SCATTER, tu_size, g_rows, 0, NULL, &other));
    TU_CHECK_OK(plm_layout_equal(got, other, &eq));
    int differs = 0;
    for (int r = 0; r < tu_size; r++) differs |= tu_split(g[0], tu_size, r) != g_rows[r * 2];
    TU_EXPECT(eq == !differs, "another split compares %d", eq);
    TU_OK(plm_array_create_from_layout(other, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &w));
    if (differs) TU_EXPECT_ERR(plm_array_add(x, w, z), PLM_ERR_SIZE_MISMATCH);

    /* *_like share the layout object */
    TU_OK(plm_array_zeros_like(w, &v));
    plm_layout_t vl = NULL;
    TU_CHECK_OK(plm_array_layout(v, &vl));
    TU_CHECK_OK(plm_layout_equal(vl, other, &eq));
    TU_EXPECT(eq == 1, "zeros_like keeps the layout");
    plm_layout_destroy(&vl);

    /* create_from_layout is not collective: a misaligned wrap fails on one rank only */
    double buf[64];
    int64_t n = 0;
    TU_CHECK_OK(plm_layout_local_size(other, &n));
    plm_array_t u = NULL;
    void *p = tu_rank == 0 ? (void *)((char *)buf + 1) : (void *)buf;
    plm_status_t st = n <= 63 ? plm_array_create_from_layout(other, PLM_FLOAT64, PLM_MEMORY_HOST, p, n * 8, &u) : PLM_SUCCESS;
    if (n <= 63) TU_EXPECT(st == (tu_rank == 0 ? PLM_ERR_INVALID_ARG : PLM_SUCCESS), "wrap: %s", plm_status_string(st));
    plm_array_destroy(&u);
    TU_EXPECT_ERR(plm_array_create_from_layout(NULL, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &u), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_array_create_from_layout(other, (plm_dtype_t)99, PLM_MEMORY_HOST, NULL, 0, &u), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_layout_retain(NULL), PLM_ERR_INVALID_ARG);

    plm_layout_destroy(&got);
    plm_layout_destroy(&same);
    plm_layout_destroy(&other);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_array_destroy(&w);
    plm_array_destroy(&v);
    TU_DONE();
}

/* Two layouts with one mask: masked norms agree with the group sums computed here. */
static void test_layout_mask_groups(void **state)
{
    (void)state;
    int mask[TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) mask[r] = (r * 7) % 3;
    int64_t g1[1] = {3 * tu_size + 2}, g2[2] = {2 * tu_size + 1, 3};
    plm_layout_t a = NULL, b = NULL;
    TU_OK(plm_layout_create(tu_comm, 1, g1, 0, PLM_PARTITION_SCATTER, 0, NULL, tu_size, mask, &a));
    TU_OK(plm_layout_create(tu_comm, 2, g2, 0, PLM_PARTITION_SCATTER, 0, NULL, tu_size, mask, &b));
    for (int k = 0; k < 2; k++) {
        plm_array_t x = NULL;
        TU_OK(plm_array_create_from_layout(k ? b : a, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
        TU_OK(plm_array_fill(x, 1, 0));
        const int64_t *g = k ? g2 : g1, inner = k ? g2[1] : 1;
        double want = 0, got = -1;
        for (int r = 0; r < tu_size; r++)
            if (mask[r] == mask[tu_rank]) want += (double)(tu_split(g[0], tu_size, r) * inner);
        TU_CHECK_OK(plm_array_norm(x, 1, &got));
        TU_EXPECT(got == want, "masked 1-norm on layout %d: %g, expected %g", k, got, want);
        plm_array_destroy(&x);
    }
    plm_layout_destroy(&a);
    plm_layout_destroy(&b);
    TU_DONE();
}

static void check_gather_scatter(const tu_case_t *c, plm_partition_t part, plm_dtype_t dt, int root)
{
    const int64_t total = tu_prod(c->shape, 0, c->ndim);
    const size_t es = tu_esize(dt);
    double *ref = tu_alloc(total);
    tu_gen(ref, total, 7 + root, dt, 1);
    /* the root's global array, in the dtype */
    void *global = tu_rank == root ? calloc((size_t)total + 1, es) : NULL;
    void *back = tu_rank == root ? calloc((size_t)total + 1, es) : NULL;
    for (int64_t i = 0; global && i < total; i++) tu_set(dt, global, i, ref[2 * i], ref[2 * i + 1]);
    plm_array_t x = tu_make(c->ndim, c->shape, c->axis, part, dt, NULL, NULL, NULL);
    TU_CHECK_OK(plm_array_scatter_from(x, root, global, tu_rank == root ? tu_bytes(dt, total) : 0));
    /* every rank's block is the global array's */
    int64_t ls[PLM_MAX_NDIM], off = 0, n = 0;
    const void *d = NULL;
    TU_CHECK_OK(plm_array_local_shape(x, ls));
    TU_CHECK_OK(plm_array_local_offset(x, &off));
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_CHECK_OK(plm_array_get_local_read(x, &d));
    const int a = tu_axis(c->axis, c->ndim);
    int bad = 0;
    for (int64_t l = 0; d && l < n && !bad; l++) {
        const int64_t gi = part == PLM_PARTITION_SCATTER ? tu_l2g(c->ndim, c->shape, a, ls, off, l) : l;
        double re, im;
        tu_get(dt, d, l, &re, &im);
        bad = re != ref[2 * gi] || im != ref[2 * gi + 1];
    }
    TU_EXPECT(!bad, "scatter_from %s %s %s root %d: a local element differs", c->name, tu_partname(part), tu_dtname(dt),
              root);
    plm_array_restore_local_read(x, &d);
    /* and gathering it back on the root gives the global array */
    TU_CHECK_OK(plm_array_gather_to(x, root, back, tu_rank == root ? tu_bytes(dt, total) : 0));
    if (tu_rank == root)
        TU_EXPECT(memcmp(back, global, (size_t)total * es) == 0, "gather_to %s %s %s root %d differs", c->name,
                  tu_partname(part), tu_dtname(dt), root);
    /* a wrong out_bytes on the root fails every rank; elsewhere it is ignored */
    TU_EXPECT_ERR(plm_array_gather_to(x, root, back, tu_rank == root ? tu_bytes(dt, total - 1) : -1),
                  PLM_ERR_INVALID_ARG);
    plm_array_destroy(&x);
    free(ref);
    free(global);
    free(back);
}

static void test_gather_scatter_root(void **state)
{
    (void)state;
    for (int i = 0; i < TU_NCASES; i++)
        for (int k = 0; k < 3; k++)
            for (int t = 0; t < 4; t++)
                for (int root = 0; root < tu_size; root++) check_gather_scatter(&TU_CASES[i], TU_PARTS[k], TU_DTYPES[t], root);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_layout_queries),
        TU_TEST(test_layout_sharing),
        TU_TEST(test_layout_mask_groups),
        TU_TEST(test_gather_scatter_root),
    };
    return plm_run_group_tests_mpi(tests);
}
