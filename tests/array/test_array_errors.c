/* Bad input: every case must return the documented status on every rank (no hang), with a
 * non-empty plm_last_error(); output handles are NULL after a failure; destroy is NULL-safe.
 * Where the header documents one status the test requires it; where two readings are
 * possible (a length that is not the comm size: "out of range" INVALID_ARG or "lengths
 * differ" SIZE_MISMATCH) it accepts either, but still requires it on every rank. */
#include "array_test_util.h"

#define A PLM_ERR_INVALID_ARG
#define S PLM_ERR_SIZE_MISMATCH
#define D PLM_ERR_DTYPE_MISMATCH

/* Creation with bad arguments, the same on every rank. */
static void test_create_bad_args(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t g1[1] = {29}, g2[2] = {7, 5}, neg[2] = {7, -1};
    int64_t rows[2 * P], brow[2 * P]; /* sized by the rank count: no upper limit on ranks */
    int mask[P + 1];
    const plm_dtype_t F = PLM_FLOAT64;
    const plm_partition_t SC = PLM_PARTITION_SCATTER;
    const plm_memory_t H = PLM_MEMORY_HOST;

    CE("NULL out", A, A, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, 0, NULL, 1);
    CE("NULL comm", A, A, NULL, 1, g1, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("NULL global_shape", A, A, tu_comm, 1, NULL, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("ndim 0", A, A, tu_comm, 0, g1, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("ndim -1", A, A, tu_comm, -1, g1, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    {
        int64_t g9[PLM_MAX_NDIM + 1];
        for (int i = 0; i <= PLM_MAX_NDIM; i++) g9[i] = 2;
        CE("ndim > PLM_MAX_NDIM", A, A, tu_comm, PLM_MAX_NDIM + 1, g9, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    }
    CE("negative extent", A, A, tu_comm, 2, neg, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("axis = ndim", A, A, tu_comm, 2, g2, 2, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("axis = -ndim-1", A, A, tu_comm, 2, g2, -3, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("axis huge", A, A, tu_comm, 1, g1, 1000, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("partition 3", A, A, tu_comm, 1, g1, 0, (plm_partition_t)3, F, H, 0, NULL, 0, NULL, 0);
    CE("partition -1", A, A, tu_comm, 1, g1, 0, (plm_partition_t)-1, F, H, 0, NULL, 0, NULL, 0);
    CE("dtype 4", A, A, tu_comm, 1, g1, 0, SC, (plm_dtype_t)4, H, 0, NULL, 0, NULL, 0);
    CE("dtype -1", A, A, tu_comm, 1, g1, 0, SC, (plm_dtype_t)-1, H, 0, NULL, 0, NULL, 0);
    CE("memory 7", A, A, tu_comm, 1, g1, 0, SC, F, (plm_memory_t)7, 0, NULL, 0, NULL, 0);
    if (!tu_has_device_backend())
        CE("device memory in a host-only build", PLM_ERR_BACKEND_UNAVAILABLE, PLM_ERR_BACKEND_UNAVAILABLE, tu_comm, 1,
           g1, 0, SC, F, PLM_MEMORY_DEVICE, 0, NULL, 0, NULL, 0);

    /* local shapes */
    tu_default_rows(2, g2, 0, SC, P, rows);
    CE("nlocal = P, local_shapes NULL", A, A, tu_comm, 2, g2, 0, SC, F, H, P, NULL, 0, NULL, 0);
    {
        int64_t big[2 * (P + 1)];
        tu_default_rows(2, g2, 0, SC, P + 1, big);
        CE("nlocal = P + 1", S, A, tu_comm, 2, g2, 0, SC, F, H, P + 1, big, 0, NULL, 0);
        CE("nlocal = -1", A, S, tu_comm, 2, g2, 0, SC, F, H, -1, rows, 0, NULL, 0);
        if (P > 1) CE("nlocal = 1 < P", S, A, tu_comm, 2, g2, 0, SC, F, H, 1, rows, 0, NULL, 0);
    }
    tu_default_rows(2, g2, 0, SC, P, rows);
    rows[0] += 1; /* rank 0's axis extent: the sum is one too many */
    CE("local shapes sum to more than the global", S, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    tu_default_rows(2, g2, 0, SC, P, rows);
    rows[0] -= 1; /* one too few (rank 0: with more ranks than rows the last ones hold none) */
    CE("local shapes sum to less than the global", S, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    tu_default_rows(2, g2, 0, SC, P, rows);
    for (int r = 0; r < P; r++) rows[r * 2 + 1] = 6; /* non-axis extent differs from the global 5 */
    CE("local shapes with a wrong non-axis extent", S, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    if (P > 1) {
        tu_default_rows(2, g2, 0, SC, P, rows);
        for (int r = 0; r < P; r++) rows[r * 2] = 0;
        rows[0] = 8; /* 8 + (-1) = 7: the sum is right, but one extent is negative */
        rows[2] = -1;
        CE("negative local extent", A, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    }
    for (int p = 1; p < 3; p++) {
        for (int r = 0; r < P; r++) {
            brow[2 * r] = 7;
            brow[2 * r + 1] = 5;
        }
        brow[2 * tu_rank] = tu_split(7, P, tu_rank); /* a SCATTER row for a BROADCAST array */
        if (P > 1 || tu_split(7, P, 0) != 7)
            CE("BROADCAST local shape != global", S, S, tu_comm, 2, g2, 0, TU_PARTS[p], F, H, P, brow, 0, NULL, 0);
        brow[2 * tu_rank] = 7;
        brow[2 * tu_rank + 1] = 4;
        CE("BROADCAST local shape non-axis != global", S, S, tu_comm, 2, g2, 0, TU_PARTS[p], F, H, P, brow, 0, NULL, 0);
    }

    /* masks */
    tu_mask(0, P + 1, mask);
    CE("nmask = P + 1", S, A, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, P + 1, mask, 0);
    CE("nmask = -1", A, S, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, -1, mask, 0);
    if (P > 1) CE("nmask = 1 < P", S, A, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, 1, mask, 0);
    CE("nmask = P, mask NULL", A, A, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, P, NULL, 0);
    tu_mask(0, P, mask);
    mask[P - 1] = -2;
    CE("negative mask id", A, A, tu_comm, 1, g1, 0, SC, F, H, 0, NULL, P, mask, 0);

    /* the simple constructor too */
    {
        plm_array_t out = SENTINEL;
        TU_EXPECT_ERR(plm_array_create(tu_comm, 2, g2, 5, SC, F, H, &out), A);
        TU_EXPECT(out == NULL, "plm_array_create: out not NULL after failure");
        out = SENTINEL;
        TU_EXPECT_ERR(plm_array_create(NULL, 2, g2, 0, SC, F, H, &out), A);
        TU_EXPECT(out == NULL, "plm_array_create(NULL comm): out not NULL after failure");
        TU_EXPECT_ERR(plm_array_create(tu_comm, 2, g2, 0, SC, F, H, NULL), A);
    }
    /* still usable afterwards */
    plm_array_t x = tu_make(1, g1, 0, SC, F, NULL, NULL, NULL);
    double nrm = -1;
    TU_CHECK_OK(plm_array_fill(x, 1, 0));
    TU_CHECK_OK(plm_array_norm(x, 1.0, &nrm));
    TU_EXPECT(nrm == 29.0, "norm after errors %g", nrm);
    plm_array_destroy(&x);
    TU_DONE();
}

/* NULL handles and pointers in non-collective calls; out handles NULL on failure; destroy is
 * NULL-safe. */
static void test_null_args(void **state)
{
    (void)state;
    int64_t g1[1] = {13};
    plm_array_t x = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    int n = 0;
    int64_t sh[PLM_MAX_NDIM * tu_size]; /* room for every rank's row (local_shapes) */
    int mk[tu_size];
    plm_partition_t pa;
    plm_dtype_t dt;
    plm_memory_t mem;
    plm_comm_t c = NULL;
    const void *rd = NULL;
    void *wd = NULL;

    /* queries */
    TU_EXPECT_ERR(plm_array_ndim(NULL, &n), A);
    TU_EXPECT_ERR(plm_array_ndim(x, NULL), A);
    TU_EXPECT_ERR(plm_array_global_shape(NULL, sh), A);
    TU_EXPECT_ERR(plm_array_global_shape(x, NULL), A);
    TU_EXPECT_ERR(plm_array_local_shape(NULL, sh), A);
    TU_EXPECT_ERR(plm_array_local_shape(x, NULL), A);
    TU_EXPECT_ERR(plm_array_local_shapes(NULL, sh), A);
    TU_EXPECT_ERR(plm_array_local_shapes(x, NULL), A);
    TU_EXPECT_ERR(plm_array_local_size(NULL, sh), A);
    TU_EXPECT_ERR(plm_array_local_size(x, NULL), A);
    TU_EXPECT_ERR(plm_array_local_offset(NULL, sh), A);
    TU_EXPECT_ERR(plm_array_local_offset(x, NULL), A);
    TU_EXPECT_ERR(plm_array_axis(NULL, &n), A);
    TU_EXPECT_ERR(plm_array_axis(x, NULL), A);
    TU_EXPECT_ERR(plm_array_partition(NULL, &pa), A);
    TU_EXPECT_ERR(plm_array_partition(x, NULL), A);
    TU_EXPECT_ERR(plm_array_dtype(NULL, &dt), A);
    TU_EXPECT_ERR(plm_array_dtype(x, NULL), A);
    TU_EXPECT_ERR(plm_array_memory(NULL, &mem), A);
    TU_EXPECT_ERR(plm_array_memory(x, NULL), A);
    TU_EXPECT_ERR(plm_array_mask(NULL, &n, mk), A);
    TU_EXPECT_ERR(plm_array_mask(x, NULL, mk), A);
    TU_EXPECT_ERR(plm_array_get_comm(NULL, &c), A);
    TU_EXPECT_ERR(plm_array_get_comm(x, NULL), A);
    TU_EXPECT_ERR(plm_array_get_local_read(NULL, &rd), A);
    TU_EXPECT_ERR(plm_array_get_local_read(x, NULL), A);
    TU_EXPECT_ERR(plm_array_get_local_write(NULL, &wd), A);
    TU_EXPECT_ERR(plm_array_get_local_write(x, NULL), A);
    TU_EXPECT_ERR(plm_array_restore_local_read(x, NULL), A);
    TU_EXPECT_ERR(plm_array_restore_local_write(x, NULL), A);
    TU_EXPECT_ERR(plm_array_ghost_shape(NULL, 1, 1, sh), A);
    TU_EXPECT_ERR(plm_array_ghost_shape(x, 1, 1, NULL), A);
    TU_EXPECT_ERR(plm_array_ghost_shape(x, -1, 0, sh), A);
    TU_EXPECT_ERR(plm_array_ghost_shape(x, 0, -1, sh), A);

    /* constructors of the same layout */
    plm_array_t out = SENTINEL;
    TU_EXPECT_ERR(plm_array_zeros_like(NULL, &out), A);
    TU_EXPECT(out == NULL, "zeros_like: out not NULL after failure");
    out = SENTINEL;
    TU_EXPECT_ERR(plm_array_empty_like(NULL, &out), A);
    TU_EXPECT(out == NULL, "empty_like: out not NULL after failure");
    out = SENTINEL;
    TU_EXPECT_ERR(plm_array_duplicate(NULL, &out), A);
    TU_EXPECT(out == NULL, "duplicate: out not NULL after failure");
    TU_EXPECT_ERR(plm_array_zeros_like(x, NULL), A);
    TU_EXPECT_ERR(plm_array_empty_like(x, NULL), A);
    TU_EXPECT_ERR(plm_array_duplicate(x, NULL), A);

    /* element-wise */
    TU_EXPECT_ERR(plm_array_fill(NULL, 1, 0), A);
    TU_EXPECT_ERR(plm_array_fill(x, 1, 0.5), A); /* imaginary part for a real array */
    TU_EXPECT_ERR(plm_array_fill(x, 1, NAN), A);
    TU_EXPECT_ERR(plm_array_copy(NULL, y), A);
    TU_EXPECT_ERR(plm_array_copy(x, NULL), A);
    TU_EXPECT_ERR(plm_array_add(NULL, y, y), A);
    TU_EXPECT_ERR(plm_array_add(x, NULL, y), A);
    TU_EXPECT_ERR(plm_array_add(x, y, NULL), A);
    TU_EXPECT_ERR(plm_array_sub(NULL, y, y), A);
    TU_EXPECT_ERR(plm_array_mul(x, y, NULL), A);
    TU_EXPECT_ERR(plm_array_scale(NULL, 1, 0), A);
    TU_EXPECT_ERR(plm_array_scale(x, 1, -1), A);
    TU_EXPECT_ERR(plm_array_axpby(1, 1, x, 1, 0, y), A);
    TU_EXPECT_ERR(plm_array_axpby(1, 0, NULL, 1, 0, y), A);
    TU_EXPECT_ERR(plm_array_axpby(1, 0, x, 1, 2, y), A);
    TU_EXPECT_ERR(plm_array_axpby(1, 0, x, 1, 0, NULL), A);
    TU_EXPECT_ERR(plm_array_conj(NULL, y), A);
    TU_EXPECT_ERR(plm_array_conj(x, NULL), A);

    /* collective calls with the same NULL on every rank */
    double r = 0;
    double buf[2 * 13];
    TU_EXPECT_ERR(plm_array_dot(NULL, y, 0, &r, NULL), A);
    TU_EXPECT_ERR(plm_array_dot(x, NULL, 0, &r, NULL), A);
    TU_EXPECT_ERR(plm_array_dot(x, y, 0, NULL, &r), A);
    TU_EXPECT_ERR(plm_array_norm(NULL, 2.0, &r), A);
    TU_EXPECT_ERR(plm_array_norm(x, 2.0, NULL), A);
    TU_EXPECT_ERR(plm_array_norm_axis(NULL, 2.0, 0, buf, 1), A);
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 0, NULL, 1), A);
    TU_EXPECT_ERR(plm_array_asarray(NULL, 0, buf, 13 * 8), A);
    TU_EXPECT_ERR(plm_array_asarray(x, 0, NULL, 13 * 8), A);
    TU_EXPECT_ERR(plm_array_set_global(NULL, buf, 13 * 8), A);
    TU_EXPECT_ERR(plm_array_set_global(x, NULL, 13 * 8), A);
    TU_EXPECT_ERR(plm_array_add_ghost_cells(NULL, 1, 1, buf, 13 * 8), A);
    TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 0, 0, NULL, 13 * 8), A);
    out = SENTINEL;
    TU_EXPECT_ERR(plm_array_redistribute(NULL, 0, &out), A);
    TU_EXPECT(out == NULL, "redistribute(NULL): out not NULL after failure");
    TU_EXPECT_ERR(plm_array_redistribute(x, 0, NULL), A);

    /* destroy is NULL-safe and idempotent */
    plm_array_t nul = NULL;
    TU_CHECK_OK(plm_array_destroy(NULL));
    TU_CHECK_OK(plm_array_destroy(&nul));
    TU_EXPECT(nul == NULL, "destroy of NULL changed the handle");
    plm_stacked_t snul = NULL;
    TU_CHECK_OK(plm_stacked_destroy(NULL));
    TU_CHECK_OK(plm_stacked_destroy(&snul));
    TU_CHECK_OK(plm_array_destroy(&x));
    TU_EXPECT(x == NULL, "destroy did not set the handle to NULL");
    TU_CHECK_OK(plm_array_destroy(&x)); /* second time: NULL handle */
    plm_array_destroy(&y);
    TU_DONE();
}

/* Operands that cannot be combined: dtype and layout mismatches in element-wise ops and dot. */
static void test_mismatch(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t g1[1] = {29}, g30[1] = {30}, g2[2] = {6, 6}, rows[P];
    int maskA[P], maskB[P];
    for (int r = 0; r < P; r++) { maskA[r] = 0; maskB[r] = r % 2; }
    const plm_partition_t SC = PLM_PARTITION_SCATTER;
    plm_array_t x64 = tu_make(1, g1, 0, SC, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y64 = tu_make(1, g1, 0, SC, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t x32 = tu_make(1, g1, 0, SC, PLM_FLOAT32, NULL, NULL, NULL);
    plm_array_t xc = tu_make(1, g1, 0, SC, PLM_COMPLEX128, NULL, NULL, NULL);
    plm_array_t xc64 = tu_make(1, g1, 0, SC, PLM_COMPLEX64, NULL, NULL, NULL);
    plm_array_t xs = tu_make(1, g30, 0, SC, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t xb = tu_make(1, g1, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t xu = tu_make(1, g1, 0, PLM_PARTITION_UNSAFE_BROADCAST, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t xm = tu_make(1, g1, 0, SC, PLM_FLOAT64, NULL, maskA, NULL);
    plm_array_t xm2 = tu_make(1, g1, 0, SC, PLM_FLOAT64, NULL, maskB, NULL);
    plm_array_t a0 = tu_make(2, g2, 0, SC, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t a1 = tu_make(2, g2, 1, SC, PLM_FLOAT64, NULL, NULL, NULL);
    tu_reversed_rows(1, g1, 0, P, rows);
    plm_array_t xr = tu_make(1, g1, 0, SC, PLM_FLOAT64, rows, NULL, NULL);
    double res[2];
    plm_array_t all[] = {x64, y64, x32, xc, xc64, xs, xb, xu, xm, xm2, a0, a1, xr};
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) TU_OK(plm_array_fill(all[i], 0, 0));

    /* dtype: the output of a mixed operation must have the promoted dtype (NumPy's result_type;
     * never a truncation), copies and axpby only widen, conj keeps the dtype */
    TU_EXPECT_ERR(plm_array_add(x64, x32, x32), D);  /* float64 into float32 */
    TU_EXPECT_ERR(plm_array_add(x64, y64, x32), D);
    TU_EXPECT_ERR(plm_array_sub(xc, x64, x64), D);   /* complex128 into float64 */
    TU_EXPECT_ERR(plm_array_mul(xc64, x64, xc64), D); /* complex128 into complex64 */
    TU_EXPECT_ERR(plm_array_mul(x32, x32, x64), D);  /* float32 into float64: the result is float32 */
    TU_EXPECT_ERR(plm_array_copy(x64, x32), D);
    TU_EXPECT_ERR(plm_array_copy(xc, xc64), D);
    TU_EXPECT_ERR(plm_array_copy(xc64, x64), D);
    TU_EXPECT_ERR(plm_array_axpby(1, 0, xc, 1, 0, x64), D);
    TU_EXPECT_ERR(plm_array_conj(xc, x64), D);
    TU_EXPECT_ERR(plm_array_conj(x32, x64), D);
    TU_EXPECT_ERR(plm_array_dot(xc, x64, 1, &res[0], NULL), PLM_ERR_INVALID_ARG); /* a complex dot needs im */
    TU_OK(plm_array_add(x64, x32, y64));   /* promotions succeed */
    TU_OK(plm_array_sub(xc, x64, xc));
    TU_OK(plm_array_mul(xc64, xc, xc));
    TU_OK(plm_array_axpby(1, 0, x64, 1, 0, xc));
    TU_OK(plm_array_dot(x64, x32, 0, &res[0], &res[1]));
    TU_OK(plm_array_dot(xc, xc64, 1, &res[0], &res[1]));

    /* global shape */
    TU_EXPECT_ERR(plm_array_add(x64, xs, y64), S);
    TU_EXPECT_ERR(plm_array_add(x64, y64, xs), S);
    TU_EXPECT_ERR(plm_array_copy(x64, xs), S);
    TU_EXPECT_ERR(plm_array_axpby(1, 0, xs, 1, 0, x64), S);
    TU_EXPECT_ERR(plm_array_conj(xs, x64), S);
    TU_EXPECT_ERR(plm_array_dot(x64, xs, 0, &res[0], NULL), S);
    /* partition */
    TU_EXPECT_ERR(plm_array_add(x64, xb, y64), S);
    TU_EXPECT_ERR(plm_array_sub(xb, xu, xb), S);
    TU_EXPECT_ERR(plm_array_copy(xb, x64), S);
    TU_EXPECT_ERR(plm_array_dot(x64, xb, 0, &res[0], NULL), S);
    TU_EXPECT_ERR(plm_array_dot(xb, xu, 0, &res[0], NULL), S);
    /* mask: present vs absent, and different groupings */
    TU_EXPECT_ERR(plm_array_add(x64, xm, y64), S);
    TU_EXPECT_ERR(plm_array_mul(xm, y64, xm), S);
    TU_EXPECT_ERR(plm_array_copy(xm, x64), S);
    TU_EXPECT_ERR(plm_array_dot(xm, x64, 0, &res[0], NULL), S);
    if (P > 1) {
        TU_EXPECT_ERR(plm_array_add(xm, xm2, xm), S);
        TU_EXPECT_ERR(plm_array_dot(xm, xm2, 1, &res[0], NULL), S);
    }
    /* axis (same global shape) */
    TU_EXPECT_ERR(plm_array_add(a0, a1, a0), S);
    TU_EXPECT_ERR(plm_array_copy(a0, a1), S);
    TU_EXPECT_ERR(plm_array_dot(a0, a1, 0, &res[0], NULL), S);
    /* local shapes */
    if (P > 1) {
        TU_EXPECT_ERR(plm_array_add(x64, xr, y64), S);
        TU_EXPECT_ERR(plm_array_axpby(1, 0, xr, 1, 0, x64), S);
        TU_EXPECT_ERR(plm_array_copy(x64, xr), S);
        TU_EXPECT_ERR(plm_array_dot(xr, x64, 0, &res[0], NULL), S);
    }
    /* the arrays are untouched by the failed calls */
    double nrm = -1;
    TU_CHECK_OK(plm_array_norm(y64, 1.0, &nrm));
    TU_EXPECT(nrm == 0.0, "failed calls wrote into an output: norm %g", nrm);
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) plm_array_destroy(&all[i]);
    TU_DONE();
}

/* Reductions and layout calls with bad arguments, the same on every rank (the rank-dependent
 * variants are in test_array_errors_rankdep.c, where a disagreement cannot poison these). */
static void test_collective_bad_args(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t g2[2] = {4 * P + 1, 3}; /* each rank holds >= 4 rows */
    int64_t n = g2[0] * 3;
    double *buf = tu_alloc(n);
    plm_array_t x = tu_make(2, g2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t xb = tu_make(2, g2, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    TU_OK(plm_array_fill(xb, 1, 0));
    double res = 0;

    TU_EXPECT_ERR(plm_array_norm(x, NAN, &res), A);
    TU_EXPECT_ERR(plm_array_norm(xb, NAN, &res), A);
    /* norm_axis: out-of-range axis, NaN ord, wrong n_out */
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 2, buf, 3), A);
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, -5, buf, 3), A);
    TU_EXPECT_ERR(plm_array_norm_axis(x, NAN, 0, buf, 3), A);
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 0, buf, 4), S); /* needs 3 */
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 1, buf, 3), S); /* needs 4P+1 */
    TU_EXPECT_ERR(plm_array_norm_axis(xb, 2.0, 1, buf, 3), S);
    /* asarray out_bytes: one element short or long, one byte short, float32-sized */
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT64, n - 1)), A);
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT64, n + 1)), A);
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT64, n) - 1), A);
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT32, n)), A);
    TU_EXPECT(strstr(plm_last_error(), "expected") != NULL, "asarray size message: %s", plm_last_error());
    TU_EXPECT_ERR(plm_array_asarray(x, 1, buf, tu_bytes(PLM_FLOAT64, n - 1)), A);
    TU_EXPECT_ERR(plm_array_asarray(xb, 0, buf, tu_bytes(PLM_FLOAT64, n - 1)), A);
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, -8), A);
    /* ghost cells */
    {
        int64_t gs[2];
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, -1, 0, buf, tu_bytes(PLM_FLOAT64, n)), A);
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 0, -2, buf, tu_bytes(PLM_FLOAT64, n)), A);
        TU_CHECK_OK(plm_array_ghost_shape(x, 1, 1, gs));
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 1, 1, buf, tu_bytes(PLM_FLOAT64, gs[0] * gs[1] + 3)), A);
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 1, 1, buf, tu_bytes(PLM_FLOAT64, gs[0] * gs[1] - 3)), A);
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 1, 1, buf, tu_bytes(PLM_FLOAT32, gs[0] * gs[1])), A);
        /* BROADCAST arrays: SCATTER only */
        TU_EXPECT_ERR2(plm_array_add_ghost_cells(xb, 0, 0, buf, tu_bytes(PLM_FLOAT64, n)), PLM_ERR_NOT_SUPPORTED, A);
        if (P > 1) {
            /* every rank asks its neighbours for more than they hold */
            int64_t big = 4 * P + 1;
            double *huge = tu_alloc(3 * (3 * big + 8));
            int64_t ls[2];
            TU_OK(plm_array_local_shape(x, ls));
            int64_t b = tu_rank > 0 ? big : 0, f = tu_rank < P - 1 ? big : 0;
            TU_EXPECT_ERR(plm_array_add_ghost_cells(x, big, big, huge, tu_bytes(PLM_FLOAT64, (ls[0] + b + f) * 3)), S);
            free(huge);
        }
    }
    /* redistribute: bad axis */
    {
        plm_array_t out = SENTINEL;
        TU_EXPECT_ERR(plm_array_redistribute(x, 2, &out), A);
        TU_EXPECT(out == NULL, "redistribute: out not NULL after failure");
        out = SENTINEL;
        TU_EXPECT_ERR(plm_array_redistribute(x, -3, &out), A);
        TU_EXPECT(out == NULL, "redistribute: out not NULL after failure");
    }
    /* still consistent afterwards */
    double nrm = -1;
    TU_CHECK_OK(plm_array_norm(x, 1.0, &nrm));
    TU_EXPECT(nrm == (double)n, "norm after errors %g expected %lld", nrm, (long long)n);
    plm_array_destroy(&x);
    plm_array_destroy(&xb);
    free(buf);
    TU_DONE();
}

/* Stacked arrays with bad input. */
static void test_stacked_bad_args(void **state)
{
    (void)state;
    int P = tu_size;
    int64_t g1[1] = {17}, g2[1] = {18};
    plm_array_t a = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t b = tu_make(1, g2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t c = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, NULL);
    plm_array_t d = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, NULL);
    TU_OK(plm_array_fill(a, 0, 0));
    TU_OK(plm_array_fill(b, 0, 0));
    TU_OK(plm_array_fill(c, 0, 0));
    TU_OK(plm_array_fill(d, 0, 0));
    plm_stacked_t out = (plm_stacked_t)(void *)&tu_fail;
    plm_array_t ab[2] = {a, b}, ba[2] = {b, a}, ac[2] = {a, c}, an[2] = {a, NULL}, cc[2] = {c, d};

    TU_EXPECT_ERR(plm_stacked_create(0, ab, &out), A);
    TU_EXPECT(out == NULL, "stacked_create(0): out not NULL");
    out = (plm_stacked_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_stacked_create(-1, ab, &out), A);
    TU_EXPECT(out == NULL, "stacked_create(-1): out not NULL");
    out = (plm_stacked_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_stacked_create(2, NULL, &out), A);
    TU_EXPECT(out == NULL, "stacked_create(NULL): out not NULL");
    out = (plm_stacked_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_stacked_create(2, an, &out), A);
    TU_EXPECT(out == NULL, "stacked_create(NULL member): out not NULL");
    out = (plm_stacked_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_stacked_create(2, ac, &out), D);
    TU_EXPECT(out == NULL, "stacked_create(mixed dtypes): out not NULL");
    TU_EXPECT_ERR(plm_stacked_create(2, ab, NULL), A);
    if (P > 1) {
        /* a member on a communicator of another size */
        plm_comm_t self = NULL;
        TU_OK(plm_comm_create(MPI_COMM_SELF, NULL, &self));
        plm_array_t e = NULL;
        TU_OK(plm_array_create(self, 1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &e));
        plm_array_t ae[2] = {a, e};
        out = (plm_stacked_t)(void *)&tu_fail;
        TU_EXPECT_ERR2(plm_stacked_create(2, ae, &out), S, A);
        TU_EXPECT(out == NULL, "stacked_create(comm sizes differ): out not NULL");
        plm_array_destroy(&e);
        plm_comm_destroy(&self);
    }

    plm_stacked_t sab = NULL, sba = NULL, sa = NULL, scc = NULL;
    TU_OK(plm_stacked_create(2, ab, &sab));
    TU_OK(plm_stacked_create(2, ba, &sba));
    TU_OK(plm_stacked_create(1, ab, &sa));
    TU_OK(plm_stacked_create(2, cc, &scc));
    double res[2] = {0, 0};
    int nn = 0;
    plm_array_t m = NULL;
    TU_EXPECT_ERR(plm_stacked_narrays(NULL, &nn), A);
    TU_EXPECT_ERR(plm_stacked_narrays(sab, NULL), A);
    TU_EXPECT_ERR(plm_stacked_get(sab, 2, &m), A);
    TU_EXPECT_ERR(plm_stacked_get(sab, -1, &m), A);
    TU_EXPECT_ERR(plm_stacked_get(NULL, 0, &m), A);
    TU_EXPECT_ERR(plm_stacked_get(sab, 0, NULL), A);
    /* member count and member shapes differ */
    TU_EXPECT_ERR(plm_stacked_copy(sab, sa), S);
    TU_EXPECT_ERR(plm_stacked_copy(sab, sba), S);
    TU_EXPECT_ERR(plm_stacked_axpby(0, 0, sab, 0, 0, sba), S);
    TU_EXPECT_ERR(plm_stacked_axpby(0, 0, sa, 0, 0, sab), S);
    TU_EXPECT_ERR(plm_stacked_dot(sab, sba, 0, &res[0], NULL), S);
    TU_EXPECT_ERR(plm_stacked_dot(sab, sa, 0, &res[0], NULL), S);
    /* dtypes differ between stacks */
    {
        plm_array_t cd[2] = {c, d};
        plm_stacked_t s2 = NULL;
        plm_array_t bb = tu_make(1, g1, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
        plm_array_t a2[2] = {a, bb};
        plm_stacked_t s64 = NULL;
        TU_OK(plm_stacked_create(2, cd, &s2));
        TU_OK(plm_stacked_create(2, a2, &s64));
        TU_EXPECT_ERR(plm_stacked_copy(s64, s2), D);
        TU_EXPECT_ERR(plm_stacked_dot(s64, s2, 0, &res[0], NULL), D);
        TU_EXPECT_ERR(plm_stacked_axpby(0, 0, s64, 0, 0, s2), D);
        plm_stacked_destroy(&s2);
        plm_stacked_destroy(&s64);
        plm_array_destroy(&bb);
    }
    /* NULLs */
    TU_EXPECT_ERR(plm_stacked_copy(NULL, sab), A);
    TU_EXPECT_ERR(plm_stacked_copy(sab, NULL), A);
    TU_EXPECT_ERR(plm_stacked_scale(sab, 0, 1), A); /* imaginary part for real members */
    TU_EXPECT_ERR(plm_stacked_scale(NULL, 0, 0), A);
    TU_EXPECT_ERR(plm_stacked_axpby(0, 0, NULL, 0, 0, sab), A);
    TU_EXPECT_ERR(plm_stacked_axpby(0, 1, sab, 0, 0, sab), A);
    TU_EXPECT_ERR(plm_stacked_dot(sab, sab, 0, NULL, NULL), A);
    TU_EXPECT_ERR(plm_stacked_norm(sab, 2.0, NULL), A);
    TU_EXPECT_ERR(plm_stacked_norm(NULL, 2.0, res), A);
    TU_EXPECT_ERR(plm_stacked_norm(sab, NAN, res), A);
    {
        plm_stacked_t zo = (plm_stacked_t)(void *)&tu_fail;
        TU_EXPECT_ERR(plm_stacked_zeros_like(NULL, &zo), A);
        TU_EXPECT(zo == NULL, "stacked_zeros_like(NULL): out not NULL");
        TU_EXPECT_ERR(plm_stacked_zeros_like(sab, NULL), A);
    }
    /* asarray length */
    double buf[2 * 40];
    TU_EXPECT_ERR(plm_stacked_asarray(sab, buf, 34 * 8), A); /* needs 35 float64 */
    TU_EXPECT_ERR(plm_stacked_asarray(sab, buf, 36 * 8), A);
    TU_EXPECT_ERR(plm_stacked_asarray(sab, buf, 35 * 4), A); /* float32-sized */
    TU_EXPECT_ERR(plm_stacked_asarray(sab, NULL, 35 * 8), A);
    TU_CHECK_OK(plm_stacked_asarray(sab, buf, 35 * 8));
    plm_stacked_destroy(&sab);
    plm_stacked_destroy(&sba);
    plm_stacked_destroy(&sa);
    plm_stacked_destroy(&scc);
    TU_EXPECT(sab == NULL, "stacked_destroy did not set NULL");
    plm_array_destroy(&a);
    plm_array_destroy(&b);
    plm_array_destroy(&c);
    plm_array_destroy(&d);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_create_bad_args), TU_TEST(test_null_args),
        TU_TEST(test_mismatch),        TU_TEST(test_collective_bad_args),   TU_TEST(test_stacked_bad_args),
    };
    return plm_run_group_tests_mpi(tests);
}
