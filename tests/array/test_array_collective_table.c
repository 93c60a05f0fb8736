/* One row per collective entry point of include/pylopsmpi.h: one rank ("the bad rank") passes
 * a bad argument, or a valid one that differs from the other ranks'. Each row runs with every
 * rank in turn being the bad one; every rank must return the same error status, and a
 * following collective (a dot on a fresh array) must still work.
 *
 * test_every_collective_has_a_row reads the header (PLM_HEADER_PATH), lists every plm_*
 * function whose doc comment says "Collective" (and not "Not collective"), and fails for any
 * without a row here, so a new collective function cannot arrive untested. */
#include "array_test_util.h"
#include "header_scan.h"

#define A PLM_ERR_INVALID_ARG
#define S PLM_ERR_SIZE_MISMATCH

static int64_t G2[2] = {0, 3}; /* (4P+1) x 3: every rank holds >= 4 rows; set in rows_setup */

static plm_array_t ones(plm_partition_t part, const int *mask)
{
    plm_array_t x = tu_make(2, G2, 0, part, PLM_FLOAT64, NULL, mask, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    return x;
}

static int64_t nones(void) { return G2[0] * G2[1]; }

/* Two mask groups: even and odd ranks. */
static void alternating_mask(int *mask)
{
    for (int r = 0; r < tu_size; r++) mask[r] = r % 2;
}

/* ---- the rows: each returns the status of the call under test on this rank ---------------- */

static plm_status_t row_comm_create(int bad)
{
    plm_comm_t c = NULL;
    plm_status_t st = plm_comm_create(MPI_COMM_WORLD, NULL, bad ? NULL : &c);
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_comm_create_f(int bad)
{
    plm_comm_t c = NULL;
    static const int64_t junk[2] = {0, 0}; /* not a config object */
    plm_comm_config_t cfg = NULL;
    plm_comm_config_create(&cfg);
    plm_const_comm_config_t use = bad ? (plm_const_comm_config_t)(const void *)junk : cfg;
    plm_status_t st = plm_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), use, &c);
    plm_comm_config_destroy(&cfg);
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_comm_split(int bad)
{
    plm_comm_t c = NULL;
    plm_status_t st = plm_comm_split(tu_comm, bad ? -1 : 0, tu_rank, &c);
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_array_create(int bad)
{
    plm_array_t x = NULL;
    plm_status_t st = plm_array_create(tu_comm, 2, G2, bad ? 1 : 0, PLM_PARTITION_SCATTER, PLM_FLOAT64,
                                       tu_mem, &x); /* a valid axis, but another one */
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_array_create_ex(int bad)
{
    plm_array_t x = NULL;
    int mask[TU_MAX_RANKS];
    alternating_mask(mask);
    if (bad) mask[0] = 5; /* a valid mask, but another one */
    plm_status_t st = plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, tu_mem, 0,
                                          NULL, tu_size, mask, NULL, 0, &x);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_array_create_null_out(int bad)
{
    plm_array_t x = NULL;
    plm_status_t st = plm_array_create(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, tu_mem,
                                       bad ? NULL : &x);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_restore_local_write(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    void *d = NULL, *wrong = (void *)&tu_fail;
    plm_status_t st = plm_array_get_local_write(x, &d);
    if (st == PLM_SUCCESS) st = plm_array_restore_local_write(x, bad ? &wrong : &d);
    if (d) plm_array_restore_local_write(x, &d); /* the failed restore left it out everywhere */
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_fill(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    plm_status_t st = plm_array_fill(x, 2, bad ? 1 : 0); /* an imaginary part for a real array */
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_dot_conjugate(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double r = 0;
    plm_status_t st = plm_array_dot(x, x, bad ? 1 : 0, &r, NULL);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_dot_null_y(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double r = 0;
    plm_status_t st = plm_array_dot(x, bad ? NULL : x, 0, &r, NULL);
    plm_array_destroy(&x);
    return st;
}

/* y of float32 on the bad rank, float64 elsewhere: a valid mix alone, but the ranks would
 * reduce in other dtypes (the agreement's fingerprint holds y's dtype). */
static plm_status_t row_dot_mixed_dtype(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL), y = NULL;
    plm_layout_t l = NULL;
    TU_OK(plm_array_layout(x, &l));
    TU_OK(plm_array_create_from_layout(l, bad ? PLM_FLOAT32 : PLM_FLOAT64, tu_mem, NULL, 0, &y));
    TU_OK(plm_array_fill(y, 1, 0));
    double r = 0;
    plm_status_t st = plm_array_dot(x, y, 0, &r, NULL);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&l);
    return st;
}

static plm_status_t row_norm_ord(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double r = 0;
    plm_status_t st = plm_array_norm(x, bad ? 1.0 : 2.0, &r);
    plm_array_destroy(&x);
    return st;
}

/* A masked array: the bad rank's group fails, the other group must not be left waiting. */
static plm_status_t row_norm_masked_nan(int bad)
{
    int mask[TU_MAX_RANKS];
    alternating_mask(mask);
    plm_array_t x = ones(PLM_PARTITION_SCATTER, mask);
    double r = 0;
    plm_status_t st = plm_array_norm(x, bad ? NAN : 2.0, &r);
    plm_array_destroy(&x);
    return st;
}

/* A masked array on the bad rank, an unmasked one elsewhere: the agreements differ in length
 * (one lane per mask group), and must fail on the fingerprint, not in MPI. */
static plm_status_t row_norm_mask_differs(int bad)
{
    int mask[TU_MAX_RANKS];
    alternating_mask(mask);
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL), m = ones(PLM_PARTITION_SCATTER, mask);
    double r = 0;
    plm_status_t st = plm_array_norm(bad ? m : x, 2.0, &r);
    plm_array_destroy(&x);
    plm_array_destroy(&m);
    return st;
}

static plm_status_t row_dot_mask_differs(int bad)
{
    int mask[TU_MAX_RANKS];
    alternating_mask(mask);
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL), m = ones(PLM_PARTITION_SCATTER, mask);
    double re = 0, im = 0;
    plm_status_t st = plm_array_dot(bad ? m : x, bad ? m : x, 0, &re, &im);
    plm_array_destroy(&x);
    plm_array_destroy(&m);
    return st;
}

static plm_status_t row_norm_axis(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double *out = tu_alloc(G2[0] + 3);
    /* axis 0 gives 3 values, axis 1 gives 4P+1: both valid, but different */
    plm_status_t st = plm_array_norm_axis(x, 2.0, bad ? 1 : 0, out, bad ? G2[0] : 3);
    free(out);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_asarray_masked(int bad)
{
    int mask[TU_MAX_RANKS];
    alternating_mask(mask);
    plm_array_t x = ones(PLM_PARTITION_SCATTER, mask);
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, nones()));
    int64_t n_full = nones(), n_group = 0, ls[2];
    TU_OK(plm_array_local_shape(x, ls));
    /* the caller's group size, for a valid n_out with masked = 1 */
    for (int r = 0; r < tu_size; r++)
        if (mask[r] == mask[tu_rank]) n_group += tu_split(G2[0], tu_size, r) * G2[1];
    plm_status_t st = plm_array_asarray(x, bad ? 1 : 0, buf, tu_bytes(PLM_FLOAT64, bad ? n_group : n_full));
    tu_buf_free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_set_global(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    void *g = tu_buf(tu_bytes(PLM_FLOAT64, nones()));
    plm_status_t st = plm_array_set_global(x, bad ? NULL : g, tu_bytes(PLM_FLOAT64, nones()));
    tu_buf_free(g);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_layout_create(int bad)
{
    plm_layout_t l = NULL;
    plm_status_t st = plm_layout_create(tu_comm, 2, G2, bad ? 1 : 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, &l);
    plm_layout_destroy(&l);
    return st;
}

static plm_status_t row_layout_create_null_out(int bad)
{
    plm_layout_t l = NULL;
    plm_status_t st = plm_layout_create(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, bad ? NULL : &l);
    plm_layout_destroy(&l);
    return st;
}

/* root: 0 on good ranks; on the bad rank the last rank (differing) or one past it (invalid) */
static plm_status_t row_gather_to(int bad, int invalid)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double *g = tu_alloc(nones());
    plm_status_t st = plm_array_gather_to(x, bad ? tu_size - 1 + invalid : 0, g, tu_bytes(PLM_FLOAT64, nones()));
    free(g);
    plm_array_destroy(&x);
    return st;
}
static plm_status_t row_gather_to_root_differs(int bad) { return row_gather_to(bad, 0); }
static plm_status_t row_gather_to_root_invalid(int bad) { return row_gather_to(bad, 1); }

static plm_status_t row_scatter_from(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double *g = tu_alloc(nones());
    for (int64_t i = 0; i < nones(); i++) g[i] = 1.0;
    plm_status_t st = plm_array_scatter_from(x, bad ? tu_size - 1 : 0, g, tu_bytes(PLM_FLOAT64, nones()));
    free(g);
    plm_array_destroy(&x);
    return st;
}

/* ---- operators and solvers: a block-diagonal of one 3 x 2 dense block per rank ---------- */

static plm_op_t dense_block(plm_dtype_t dt)
{
    const double a[6] = {2, 0.5, -1, 1, 0.25, 3};
    float af[6];
    for (int i = 0; i < 6; i++) af[i] = (float)a[i];
    plm_op_t op = NULL;
    TU_OK(plm_op_dense(dt, 3, 2, dt == PLM_FLOAT32 ? (const void *)af : (const void *)a, tu_bytes(dt, 6), 0, 0, &op));
    return op;
}

static plm_op_t block_op(void)
{
    plm_op_t d = dense_block(PLM_FLOAT64), op = NULL;
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&d, 0, NULL, &op));
    plm_op_destroy(&d);
    return op;
}

static plm_array_t on_space(plm_const_op_t op, int range)
{
    plm_layout_t l = NULL;
    plm_array_t x = NULL;
    TU_OK(range ? plm_op_range(op, &l) : plm_op_domain(op, &l));
    TU_OK(plm_array_create_from_layout(l, PLM_FLOAT64, tu_mem, NULL, 0, &x));
    TU_OK(plm_array_fill(x, 1, 0));
    plm_layout_destroy(&l);
    return x;
}

static plm_status_t row_op_blockdiag(int bad)
{
    plm_op_t d = dense_block(bad ? PLM_FLOAT32 : PLM_FLOAT64), op = NULL; /* a valid dtype, but another */
    plm_status_t st = plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&d, 0, NULL, &op);
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_op_stack(int bad, int horizontal)
{
    plm_op_t d = dense_block(PLM_FLOAT64), op = NULL;
    plm_status_t st = horizontal ? plm_op_hstack(tu_comm, bad ? -1 : 1, (const plm_const_op_t *)&d, &op)
                                 : plm_op_vstack(tu_comm, bad ? -1 : 1, (const plm_const_op_t *)&d, &op);
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_op_vstack(int bad) { return row_op_stack(bad, 0); }
static plm_status_t row_op_hstack(int bad) { return row_op_stack(bad, 1); }

/* MatrixMult: one rank passes another n, or no A although its block is not empty, or an
 * a_bytes one element short. */
static plm_status_t row_matrix_mult(int bad, int what)
{
    const int64_t d = 4 * (int64_t)tu_size; /* every rank's A block is non-empty */
    double *a = calloc((size_t)((d + 1) * d), sizeof(double));
    const int64_t n = bad && what == 0 ? d + 1 : d;
    const int64_t a_bytes = tu_matmul_a_bytes(PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, n, d, d);
    plm_op_t op = NULL;
    plm_status_t st = plm_op_matrix_mult(tu_comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, n, d, d,
                                         bad && what == 1 ? NULL : a, bad && what == 2 ? a_bytes - 8 : a_bytes, &op);
    plm_op_destroy(&op);
    free(a);
    return st;
}
static plm_status_t row_matrix_mult_n(int bad) { return row_matrix_mult(bad, 0); }
static plm_status_t row_matrix_mult_null_a(int bad) { return row_matrix_mult(bad, 1); }
static plm_status_t row_matrix_mult_a_bytes(int bad) { return row_matrix_mult(bad, 2); }

/* Fredholm1: one rank passes another nz, or a g_bytes one element short. */
static plm_status_t row_fredholm1(int bad, int what)
{
    const double g[2 * 3 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const int64_t nz = bad && what == 0 ? 3 : 2, g_bytes = (int64_t)sizeof g - (bad && what == 1 ? 8 : 0);
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fredholm1(tu_comm, PLM_FLOAT64, 2, 3, 2, nz, g, g_bytes, 0, 1, &op);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_fredholm1_nz(int bad) { return row_fredholm1(bad, 0); }
static plm_status_t row_fredholm1_g_bytes(int bad) { return row_fredholm1(bad, 1); }

/* MDC (nt 9, 5 frequencies split evenly): one rank passes
 * another dt, or one frequency too many (the sum then misses nfreq on every rank). Without
 * FFTW every rank is refused alike. */
static plm_status_t row_mdc(int bad, int what)
{
    double g[2 * 6 * 2 * 2] = {0}; /* up to 6 frequencies of 2 x 2 complex values */
    const int64_t nfreq = 5, nf = tu_split(nfreq, tu_size, tu_rank) + (bad && what == 1 ? 1 : 0);
    plm_op_t op = NULL;
    plm_status_t st = plm_op_mdc(tu_comm, PLM_COMPLEX128, 9, 2, nfreq, nf, 2, 2, bad && what == 0 ? 0.008 : 0.004, 1.0,
                                 1, 0, 0, 1, g, nf * 2 * 2 * 16, &op);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_mdc_dt(int bad) { return row_mdc(bad, 0); }
static plm_status_t row_mdc_nf(int bad) { return row_mdc(bad, 1); }

/* Stencils: one rank asks for another sampling, axis, kind or edge; or a negative halo. */
static const int64_t STENCIL_DIMS[2] = {9, 4};

static plm_status_t row_first_derivative(int bad)
{
    plm_op_t op = NULL;
    plm_status_t st = plm_op_first_derivative(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 0, bad ? 0.5 : 1.0,
                                              PLM_DERIV_CENTERED, 3, 0, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_second_derivative(int bad)
{
    plm_op_t op = NULL;
    plm_status_t st = plm_op_second_derivative(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, bad ? 1 : 0, 1.0,
                                               PLM_DERIV_CENTERED, 0, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_laplacian(int bad)
{
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_laplacian(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 2, axes, NULL, NULL,
                                       bad ? PLM_DERIV_FORWARD : PLM_DERIV_CENTERED, 0, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_gradient(int bad)
{
    plm_op_t op = NULL;
    plm_status_t st = plm_op_gradient(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, NULL, PLM_DERIV_CENTERED, bad, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_halo(int bad)
{
    const int64_t dims[1] = {4 * (int64_t)tu_size}, h = bad ? -1 : 1;
    plm_op_t op = NULL;
    plm_status_t st = plm_op_halo(tu_comm, PLM_FLOAT64, 1, dims, NULL, 2, (const int64_t[2]){h, h}, &op);
    plm_op_destroy(&op);
    return st;
}

/* Non-stationary convolution: one rank asks for other taps, other filters, or an even length. */
static plm_status_t row_nonstat(int bad, int what)
{
    const int64_t ih[2] = {1, 6};
    double hs[2 * 5] = {1, 2, 3, 2, 1, 0.5, 1, 2, 1, 0.5};
    const int64_t nh = bad && what == 0 ? 3 : bad && what == 2 ? 4 : 5;
    if (bad && what == 1) hs[7] = 2.5;
    plm_op_t op = NULL;
    plm_status_t st = plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 0, 2, nh, hs,
                                                      2 * nh * (int64_t)sizeof(double), ih, &op);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_nonstat_nh(int bad) { return row_nonstat(bad, 0); }
static plm_status_t row_nonstat_hs(int bad) { return row_nonstat(bad, 1); }
static plm_status_t row_nonstat_even(int bad) { return row_nonstat(bad, 2); }

/* Sizes past 64 bits on the bad rank alone: its grown block (a width near INT64_MAX), its
 * blocks' row sum (two zero blocks of 2^62 rows). */
static plm_status_t row_halo_huge(int bad)
{
    const int64_t dims[1] = {4 * (int64_t)tu_size};
    const int64_t w[2] = {bad ? INT64_MAX - 1 : (tu_rank > 0), tu_rank < tu_size - 1};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_halo(tu_comm, PLM_FLOAT64, 1, dims, NULL, 2, w, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_op_blockdiag_huge(int bad)
{
    plm_op_t z[2] = {NULL, NULL}, d = dense_block(PLM_FLOAT64), op = NULL;
    TU_OK(plm_op_zero(PLM_FLOAT64, (int64_t)1 << 62, 1, &z[0]));
    TU_OK(plm_op_zero(PLM_FLOAT64, (int64_t)1 << 62, 1, &z[1]));
    plm_status_t st = plm_op_blockdiag(tu_comm, bad ? 2 : 1, (const plm_const_op_t *)(bad ? z : &d), 0, NULL, &op);
    plm_op_destroy(&z[0]);
    plm_op_destroy(&z[1]);
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

/* Sizes that fit on every rank but not summed over the ranks: the bad rank's rows (vstack) or
 * local extent (layout) near INT64_MAX. One rank alone: valid. */
static plm_status_t row_op_vstack_sum(int bad)
{
    plm_op_t z = NULL, d = NULL, op = NULL;
    TU_OK(plm_op_zero(PLM_FLOAT64, INT64_MAX - 2, 1, &z));
    TU_OK(plm_op_zero(PLM_FLOAT64, 3, 1, &d));
    plm_status_t st = plm_op_vstack(tu_comm, 1, (const plm_const_op_t *)(bad ? &z : &d), &op);
    plm_op_destroy(&z);
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_layout_extents_sum(int bad)
{
    const int64_t g[1] = {INT64_MAX};
    int64_t rows[TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) rows[r] = 1;
    if (bad) rows[tu_rank] = INT64_MAX;
    plm_layout_t l = NULL;
    plm_status_t st = plm_layout_create(tu_comm, 1, g, 0, PLM_PARTITION_SCATTER, tu_size, rows, 0, NULL, &l);
    plm_layout_destroy(&l);
    return st;
}

static plm_status_t row_op_apply(int bad, int adjoint)
{
    plm_op_t op = block_op();
    plm_array_t x = on_space(op, 0), y = on_space(op, 1);
    plm_status_t st = adjoint ? plm_op_apply_adjoint(op, bad ? x : y, x) /* x is not on the range */
                              : plm_op_apply(op, x, bad ? x : y);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_op_apply_fwd(int bad) { return row_op_apply(bad, 0); }

/* Complex data on the real operator (applied to the real and imaginary parts) on the bad rank
 * only, real data elsewhere: each valid alone, the ranks would take different paths. */
static plm_status_t row_op_apply_promoted(int bad)
{
    plm_op_t op = block_op();
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(op, &dom));
    TU_OK(plm_op_range(op, &ran));
    const plm_dtype_t dt = bad ? PLM_COMPLEX128 : PLM_FLOAT64;
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_array_create_from_layout(dom, dt, PLM_MEMORY_HOST, NULL, 0, &x));
    TU_OK(plm_array_create_from_layout(ran, dt, PLM_MEMORY_HOST, NULL, 0, &y));
    TU_OK(plm_array_fill(x, 1, 0));
    plm_status_t st = plm_op_apply(op, x, y);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&op);
    return st;
}

/* A complex output of a real operator on real data, on the bad rank only: DTYPE_MISMATCH there,
 * agreed on every rank. */
static plm_status_t row_op_apply_bad_output(int bad)
{
    plm_op_t op = block_op();
    plm_layout_t ran = NULL;
    TU_OK(plm_op_range(op, &ran));
    plm_array_t x = on_space(op, 0), y = NULL;
    TU_OK(plm_array_create_from_layout(ran, bad ? PLM_COMPLEX128 : PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y));
    plm_status_t st = plm_op_apply(op, x, y);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&ran);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_op_apply_adj(int bad) { return row_op_apply(bad, 1); }

static plm_status_t row_op_dottest(int bad)
{
    plm_op_t op = block_op();
    int passed = 0;
    plm_status_t st = plm_op_dottest(op, bad ? 1e-3 : 1e-6, &passed, NULL, NULL); /* rtol differs */
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_solve(int bad, int cg)
{
    plm_op_t op = block_op(), ah = NULL, sq = NULL;
    TU_OK(plm_op_adjoint(op, &ah));
    TU_OK(plm_op_product(ah, op, &sq));
    plm_const_op_t use = cg ? sq : op;
    plm_array_t x = on_space(use, 0), y = on_space(use, 1);
    plm_status_t st = cg ? plm_solve_cg(use, y, x, bad ? 5 : 4, 0.0, NULL) /* niter differs */
                         : plm_solve_cgls(use, y, x, 4, bad ? 0.5 : 0.0, 0.0, NULL); /* damp differs */
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&ah);
    plm_op_destroy(&sq);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_solve_cg(int bad) { return row_solve(bad, 1); }

/* A stacked block-diagonal of two block-diagonals, on stacks of ones. */
static plm_status_t row_stacked(int bad, int what)
{
    plm_op_t a = block_op(), b = block_op(), parts[2] = {a, b}, op = NULL, ah = NULL, sq = NULL;
    TU_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)parts, &op));
    TU_OK(plm_op_adjoint(op, &ah));
    plm_array_t x[2] = {on_space(a, 0), on_space(b, 0)}, y[2] = {on_space(a, 1), on_space(b, 1)};
    plm_stacked_t xs = NULL, ys = NULL, wrong = NULL;
    TU_OK(plm_stacked_create(2, x, &xs));
    TU_OK(plm_stacked_create(2, y, &ys));
    TU_OK(plm_stacked_create(1, x, &wrong)); /* one member where two are needed */
    plm_status_t st = PLM_SUCCESS;
    if (what == 0) st = plm_op_apply_stacked(op, bad ? wrong : xs, ys);
    if (what == 1) st = plm_op_apply_adjoint_stacked(op, bad ? wrong : ys, xs);
    if (what == 2) st = plm_solve_cgls_stacked(op, ys, xs, bad ? 3 : 2, 0.0, 0.0, NULL); /* niter differs */
    if (what == 3) {
        /* CG on the stacked block-diagonal of A^H A parts */
        plm_op_t sq1 = NULL, sq2 = NULL, ah1 = NULL;
        TU_OK(plm_op_adjoint(a, &ah1));
        TU_OK(plm_op_product(ah1, a, &sq1));
        TU_OK(plm_op_product(ah1, a, &sq2));
        plm_op_t sqp[2] = {sq1, sq2};
        TU_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)sqp, &sq));
        plm_array_t u[2] = {on_space(sq1, 0), on_space(sq2, 0)}, v[2] = {on_space(sq1, 1), on_space(sq2, 1)};
        plm_stacked_t us = NULL, vs = NULL;
        TU_OK(plm_stacked_create(2, u, &us));
        TU_OK(plm_stacked_create(2, v, &vs));
        st = plm_solve_cg_stacked(sq, vs, us, 3, bad ? 1e-3 : 0.0, NULL); /* tol differs */
        plm_stacked_destroy(&us);
        plm_stacked_destroy(&vs);
        for (int i = 0; i < 2; i++) {
            plm_array_destroy(&u[i]);
            plm_array_destroy(&v[i]);
        }
        plm_op_destroy(&sq1);
        plm_op_destroy(&sq2);
        plm_op_destroy(&ah1);
    }
    plm_stacked_destroy(&xs);
    plm_stacked_destroy(&ys);
    plm_stacked_destroy(&wrong);
    for (int i = 0; i < 2; i++) {
        plm_array_destroy(&x[i]);
        plm_array_destroy(&y[i]);
    }
    plm_op_destroy(&a);
    plm_op_destroy(&b);
    plm_op_destroy(&op);
    plm_op_destroy(&ah);
    plm_op_destroy(&sq);
    return st;
}
static plm_status_t row_apply_stacked(int bad) { return row_stacked(bad, 0); }
static plm_status_t row_apply_adjoint_stacked(int bad) { return row_stacked(bad, 1); }
static plm_status_t row_cgls_stacked(int bad) { return row_stacked(bad, 2); }
static plm_status_t row_cg_stacked(int bad) { return row_stacked(bad, 3); }

static plm_status_t row_op_broadcast(int bad)
{
    plm_op_t d = dense_block(bad ? PLM_FLOAT32 : PLM_FLOAT64), op = NULL; /* another dtype */
    plm_status_t st = plm_op_broadcast(tu_comm, d, &op);
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_sparse(int bad, int fista)
{
    plm_op_t op = block_op();
    plm_array_t x = on_space(op, 0), y = on_space(op, 1);
    const double eps = bad ? 0.2 : 0.1; /* eps differs */
    plm_status_t st = fista ? plm_solve_fista(op, y, x, 3, eps, 0.1, PLM_THRESH_SOFT, NULL, 0, 0.0, NULL)
                            : plm_solve_ista(op, y, x, 3, eps, 0.1, PLM_THRESH_SOFT, NULL, 0, 0.0, NULL);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_solve_ista(int bad) { return row_sparse(bad, 0); }
static plm_status_t row_solve_fista(int bad) { return row_sparse(bad, 1); }

static plm_status_t row_power_iteration(int bad)
{
    plm_op_t op = block_op(), ah = NULL, sq = NULL;
    TU_OK(plm_op_adjoint(op, &ah));
    TU_OK(plm_op_product(ah, op, &sq));
    double eig[2];
    plm_status_t st = plm_power_iteration(sq, 5, 0.0, bad ? 2 : 1, eig, NULL); /* seed differs */
    plm_op_destroy(&ah);
    plm_op_destroy(&sq);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_solve_cgls(int bad) { return row_solve(bad, 0); }

static plm_status_t row_add_ghost_cells(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    int64_t gs[2];
    TU_OK(plm_array_ghost_shape(x, 1, 1, gs));
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, nones() + 8));
    plm_status_t st = plm_array_add_ghost_cells(x, 1, 1, buf, tu_bytes(PLM_FLOAT64, gs[0] * gs[1] - (bad ? 1 : 0)));
    tu_buf_free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_redistribute(int bad)
{
    int64_t g3[3] = {3, 2 * tu_size + 1, 5};
    plm_array_t x = tu_make(3, g3, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = NULL;
    plm_status_t st = plm_array_redistribute(x, bad ? 2 : 1, &y); /* valid axes, but different */
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_stacked_dot(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    plm_stacked_t s = NULL;
    double r = 0;
    TU_OK(plm_stacked_create(1, &x, &s));
    plm_status_t st = plm_stacked_dot(s, s, 0, bad ? NULL : &r, NULL);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_stacked_norm(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    plm_stacked_t s = NULL;
    double r = 0;
    TU_OK(plm_stacked_create(1, &x, &s));
    plm_status_t st = plm_stacked_norm(s, bad ? INFINITY : 2.0, &r);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_stacked_asarray(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    plm_stacked_t s = NULL;
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, nones()));
    TU_OK(plm_stacked_create(1, &x, &s));
    plm_status_t st = plm_stacked_asarray(s, buf, tu_bytes(PLM_FLOAT64, nones() - (bad ? 1 : 0)));
    tu_buf_free(buf);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    return st;
}

/* The FFT operator and shifts. In a build without FFTW every plm_op_fftnd returns
 * PLM_ERR_NOT_SUPPORTED, so its row stands in with the expected status there. */
static const int64_t FFT_DIMS[3] = {5, 4, 3};

static int fft_built(void)
{
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    const plm_status_t st = plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, NULL, PLM_FFT_NORM_NONE, 0,
                                         NULL, NULL, &op);
    plm_op_destroy(&op);
    return st == PLM_SUCCESS;
}

static plm_status_t row_fftnd(int bad)
{
    if (!fft_built()) return tu_size == 1 ? PLM_SUCCESS : A;
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, NULL,
                                   bad ? PLM_FFT_NORM_1_N : PLM_FFT_NORM_NONE, 0, NULL, NULL, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fftnd_ex_output(int bad)
{
    if (!fft_built()) return tu_size == 1 ? PLM_SUCCESS : A;
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fftnd_ex(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, NULL, PLM_FFT_NORM_NONE, 0, NULL,
                                      NULL, bad ? PLM_FFT_OUTPUT_AXIS0 : PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fftnd_axis(int bad)
{
    const int axes[2] = {0, bad ? 0 : 1}; /* a repeated axis: refused before the FFTW check */
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, NULL, PLM_FFT_NORM_NONE, 0, NULL,
                                   NULL, &op);
    plm_op_destroy(&op);
    return fft_built() || st != PLM_ERR_NOT_SUPPORTED ? st : A;
}

static plm_status_t row_fftnd_plan_planning(int bad)
{
    if (!fft_built()) return tu_size == 1 ? PLM_SUCCESS : A;
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, NULL, NULL, PLM_FFT_NORM_NONE, 0,
                                        NULL, NULL, PLM_FFT_OUTPUT_AXIS0,
                                        bad ? PLM_FFT_PLANNING_ESTIMATE : PLM_FFT_PLANNING_MEASURE, &op);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fftnd_plan_nffts(int bad)
{
    if (!fft_built()) return tu_size == 1 ? PLM_SUCCESS : A;
    const int axes[2] = {0, 1};
    const int64_t nffts[2] = {bad ? 6 : 5, 8};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, FFT_DIMS, 2, axes, nffts, NULL, PLM_FFT_NORM_NONE,
                                        0, NULL, NULL, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, PLM_FFT_PLANNING_ESTIMATE, &op);
    plm_op_destroy(&op);
    return st;
}

/* The wisdom: a buffer one byte short on one rank; an empty text on one rank where the others
 * give the exported one (rank 0 itself: the others' text differs from its). */
static plm_status_t row_fft_wisdom_export(int bad)
{
    int64_t len = 0;
    plm_status_t st = plm_fft_wisdom_export(tu_comm, NULL, 0, &len);
    if (st != PLM_SUCCESS) return st;
    char *buf = calloc((size_t)len + 1, 1);
    st = plm_fft_wisdom_export(tu_comm, buf, bad ? len : len + 1, &len);
    free(buf);
    return st;
}

static plm_status_t row_fft_wisdom_import(int bad)
{
    if (!fft_built()) return tu_size == 1 ? PLM_SUCCESS : A; /* (its measured plans leave wisdom) */
    int64_t len = 0;
    TU_OK(plm_fft_wisdom_export(tu_comm, NULL, 0, &len));
    char *buf = calloc((size_t)len + 1, 1);
    TU_OK(plm_fft_wisdom_export(tu_comm, buf, len + 1, &len));
    const plm_status_t st = plm_fft_wisdom_import(tu_comm, bad ? "" : buf);
    free(buf);
    return st;
}

static plm_status_t row_fftshift(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL), y = NULL;
    const int axes[1] = {0};
    plm_status_t st = plm_array_fftshift(x, 1, axes, bad, &y);
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    return st;
}

typedef struct {
    const char *fn;        /* the entry point under test */
    const char *what;      /* the bad or differing argument */
    plm_status_t expect;   /* status on every rank */
    int differing;         /* a valid value that differs between ranks: succeeds on one rank */
    plm_status_t (*run)(int bad);
} row_t;

static plm_status_t row_prox_apply_tau(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    plm_prox_t p = NULL;
    plm_status_t st = plm_prox_create_l1(1, &p);
    if (!st) st = plm_prox_apply(p, x, bad ? 0.5 : 1.0, x);
    plm_prox_destroy(&p);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_prox_value_null(int bad)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    plm_prox_t p = NULL;
    double v = 0;
    plm_status_t st = plm_prox_create_l0(1, &p);
    if (!st) st = plm_prox_value(p, x, bad ? NULL : &v);
    plm_prox_destroy(&p);
    plm_array_destroy(&x);
    return st;
}

/* A stack of a SCATTER and a BROADCAST array of ones. */
static plm_stacked_t ones_stack(plm_array_t m[2])
{
    m[0] = ones(PLM_PARTITION_SCATTER, NULL);
    m[1] = ones(PLM_PARTITION_BROADCAST, NULL);
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(2, m, &s));
    return s;
}

static plm_status_t row_prox_apply_stacked_tau(int bad)
{
    plm_array_t m[2];
    plm_stacked_t s = ones_stack(m);
    plm_prox_t p = NULL;
    plm_status_t st = plm_prox_create_l1(1, &p);
    if (!st) st = plm_prox_apply_stacked(p, s, bad ? 0.5 : 1.0, s);
    plm_prox_destroy(&p);
    plm_stacked_destroy(&s);
    plm_array_destroy(&m[0]);
    plm_array_destroy(&m[1]);
    return st;
}

static plm_status_t row_prox_value_stacked_null(int bad)
{
    plm_array_t m[2];
    plm_stacked_t s = ones_stack(m);
    plm_prox_t p = NULL;
    double v = 0;
    plm_status_t st = plm_prox_create_box(0, 2, &p);
    if (!st) st = plm_prox_value_stacked(p, s, bad ? NULL : &v);
    plm_prox_destroy(&p);
    plm_stacked_destroy(&s);
    plm_array_destroy(&m[0]);
    plm_array_destroy(&m[1]);
    return st;
}

/* The proximal layer on a block-diagonal: L2 (with the operator) and L1. */
static plm_status_t row_prox2(int bad, int what)
{
    plm_op_t op = block_op();
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), z = on_space(op, 1), g = on_space(op, 0);
    plm_prox_t f = NULL, l1 = NULL;
    TU_OK(plm_prox_create_l2(op, y, NULL, 1.0, 1.0, 1, 3, 0.0, x, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(0.1, &l1));
    plm_status_t st;
    const double eps = 0.5;
    if (what == 0) {
        st = plm_prox_grad(f, x, bad ? NULL : g); /* NULL out */
    } else if (what == 1) {
        st = plm_solve_proximal_gradient(f, l1, x, bad ? 0.2 : 0.1, &eps, 1, 1.0, 3, PLM_ACCEL_FISTA, 0.0, NULL);
    } else {
        st = plm_solve_admml2(l1, op, y, op, x, z, 0, 1.0, bad ? 3 : 2, 0, 2, 0.0, NULL); /* niter differs */
    }
    plm_prox_destroy(&f);
    plm_prox_destroy(&l1);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_array_destroy(&g);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_prox_grad(int bad) { return row_prox2(bad, 0); }
static plm_status_t row_proximal_gradient(int bad) { return row_prox2(bad, 1); }
static plm_status_t row_admml2(int bad) { return row_prox2(bad, 2); }

/* ADMML2 with a stacked z on a stacked vstack [op; op]: tau differs. */
static plm_status_t row_admml2_stacked(int bad)
{
    plm_op_t op = block_op(), A = NULL;
    const plm_const_op_t parts[2] = {op, op};
    TU_OK(plm_op_stacked_vstack(2, parts, &A));
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), zm[2] = {on_space(op, 1), on_space(op, 1)};
    plm_stacked_t z = NULL;
    TU_OK(plm_stacked_create(2, zm, &z));
    plm_prox_t l1 = NULL;
    TU_OK(plm_prox_create_l1(0.1, &l1));
    plm_status_t st = plm_solve_admml2_stacked(l1, op, y, A, x, z, 0, bad ? 0.5 : 1.0, 2, 0, 2, 0.0, NULL);
    plm_prox_destroy(&l1);
    plm_stacked_destroy(&z);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&zm[0]);
    plm_array_destroy(&zm[1]);
    plm_op_destroy(&A);
    plm_op_destroy(&op);
    return st;
}

/* The dual and the gradient on an array and on a stack (L1), the differing argument: tau or
 * sigmame; the stacked gradient: out is x on one rank. */
static plm_status_t row_prox_step(int bad, int what)
{
    plm_array_t m[2];
    plm_stacked_t s = ones_stack(m), o = NULL;
    plm_array_t n[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_BROADCAST, NULL)};
    TU_OK(plm_stacked_create(2, n, &o));
    plm_prox_t p = NULL;
    plm_status_t st = plm_prox_create_l1(1, &p);
    const double t = bad ? 0.5 : 1.0;
    if (!st) {
        switch (what) {
        case 0: st = plm_prox_dual(p, m[0], t, n[0]); break;
        case 1: st = plm_prox_dual_stacked(p, s, t, s); break;
        case 2: st = plm_prox_gradient(p, m[0], t, n[0]); break;
        default: st = plm_prox_gradient_stacked(p, s, 1.0, bad ? s : o); break;
        }
    }
    plm_prox_destroy(&p);
    plm_stacked_destroy(&s);
    plm_stacked_destroy(&o);
    for (int i = 0; i < 2; i++) {
        plm_array_destroy(&m[i]);
        plm_array_destroy(&n[i]);
    }
    return st;
}
static plm_status_t row_prox_dual(int bad) { return row_prox_step(bad, 0); }
static plm_status_t row_prox_dual_stacked(int bad) { return row_prox_step(bad, 1); }
static plm_status_t row_prox_gradient(int bad) { return row_prox_step(bad, 2); }
static plm_status_t row_prox_gradient_stacked(int bad) { return row_prox_step(bad, 3); }

/* The newer solvers on the block-diagonal (L2 with the operator, L1, L21): one argument differs. */
static plm_status_t row_prox3(int bad, int what)
{
    plm_op_t op = block_op(), A = NULL;
    const plm_const_op_t parts[2] = {op, op};
    TU_OK(plm_op_stacked_vstack(2, parts, &A));
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), ym[2] = {on_space(op, 1), on_space(op, 1)};
    plm_stacked_t ys = NULL;
    TU_OK(plm_stacked_create(2, ym, &ys));
    plm_prox_t f = NULL, l1 = NULL, l21 = NULL;
    TU_OK(plm_prox_create_l2(op, y, NULL, 1.0, 1.0, 1, 3, 0.0, x, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(0.1, &l1));
    TU_OK(plm_prox_create_l21(2, 0.1, &l21));
    const double eps = 0.5, tau = 0.3, mu = bad ? 0.2 : 0.4;
    plm_status_t st;
    switch (what) {
    case 0:
        st = plm_solve_proximal_gradient_backtracking(f, l1, x, 1.0, bad ? 0.25 : 0.5, 10, &eps, 1, 1.0, 2,
                                                      PLM_ACCEL_NONE, 0.0, NULL, NULL);
        break;
    case 1: st = plm_solve_primal_dual(l1, l1, op, x, y, 0, &tau, 1, &tau, 1, NULL, bad ? 0.5 : 1.0, 2, 1, NULL); break;
    case 2: st = plm_solve_primal_dual_stacked(l1, l21, A, x, ys, 0, &tau, 1, &mu, 1, NULL, 1.0, 2, 1, NULL); break;
    default:
        st = plm_solve_adaptive_primal_dual(l1, l21, A, x, NULL, 0.3, 0.3, 0.5, 0.95, 1.0, bad ? 2.0 : 1.5, 2, 1e-10,
                                            NULL, 0, NULL);
        break;
    }
    plm_prox_destroy(&f);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&l21);
    plm_stacked_destroy(&ys);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&ym[0]);
    plm_array_destroy(&ym[1]);
    plm_op_destroy(&A);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_pg_backtracking(int bad) { return row_prox3(bad, 0); }
static plm_status_t row_primal_dual(int bad) { return row_prox3(bad, 1); }
static plm_status_t row_primal_dual_stacked(int bad) { return row_prox3(bad, 2); }
static plm_status_t row_adaptive_primal_dual(int bad) { return row_prox3(bad, 3); }

static const row_t ROWS[] = {
    {"plm_comm_create", "NULL out", A, 0, row_comm_create},
    {"plm_comm_create_f", "bad config magic", A, 0, row_comm_create_f},
    {"plm_comm_split", "negative color", A, 0, row_comm_split},
    {"plm_array_create", "another axis", A, 1, row_array_create},
    {"plm_array_create", "NULL out", A, 0, row_array_create_null_out},
    {"plm_array_create_ex", "another mask", A, 1, row_array_create_ex},
    {"plm_array_restore_local_write", "BROADCAST, wrong pointer", A, 0, row_restore_local_write},
    {"plm_array_fill", "BROADCAST, imaginary part for float64", A, 0, row_fill},
    {"plm_array_dot", "conjugate differs", A, 1, row_dot_conjugate},
    {"plm_array_dot", "NULL y", A, 0, row_dot_null_y},
    {"plm_array_dot", "y's dtype differs (float32 on one rank)", A, 1, row_dot_mixed_dtype},
    {"plm_array_norm", "ord differs", A, 1, row_norm_ord},
    {"plm_array_norm", "masked array, NaN ord in one group", A, 0, row_norm_masked_nan},
    {"plm_array_norm", "a masked array on one rank only", A, 1, row_norm_mask_differs},
    {"plm_array_dot", "masked operands on one rank only", A, 1, row_dot_mask_differs},
    {"plm_array_norm_axis", "axis differs", A, 1, row_norm_axis},
    {"plm_array_asarray", "masked differs", A, 1, row_asarray_masked},
    {"plm_array_set_global", "NULL global", A, 0, row_set_global},
    {"plm_layout_create", "another axis", A, 1, row_layout_create},
    {"plm_layout_create", "NULL out", A, 0, row_layout_create_null_out},
    {"plm_layout_create", "local extents summing past INT64_MAX", S, 1, row_layout_extents_sum},
    {"plm_array_gather_to", "root differs", A, 1, row_gather_to_root_differs},
    {"plm_array_gather_to", "root out of range", A, 0, row_gather_to_root_invalid},
    {"plm_array_scatter_from", "root differs", A, 1, row_scatter_from},
    {"plm_op_blockdiag", "another dtype", PLM_ERR_INVALID_ARG, 1, row_op_blockdiag},
    {"plm_op_blockdiag", "rows of one rank's blocks summing past INT64_MAX", A, 0, row_op_blockdiag_huge},
    {"plm_op_vstack", "a negative count", A, 0, row_op_vstack},
    {"plm_op_vstack", "rows summing past INT64_MAX over the ranks", S, 1, row_op_vstack_sum},
    {"plm_op_hstack", "a negative count", A, 0, row_op_hstack},
    {"plm_op_matrix_mult", "n differs", A, 1, row_matrix_mult_n},
    {"plm_op_matrix_mult", "NULL a with a non-empty block", A, 0, row_matrix_mult_null_a},
    {"plm_op_matrix_mult", "a_bytes one element short", A, 0, row_matrix_mult_a_bytes},
    {"plm_op_apply", "output on the domain", S, 0, row_op_apply_fwd},
    {"plm_op_apply", "complex data on a real operator on one rank only", A, 1, row_op_apply_promoted},
    {"plm_op_apply", "a complex output of real data", PLM_ERR_DTYPE_MISMATCH, 0, row_op_apply_bad_output},
    {"plm_op_apply_adjoint", "input on the domain", S, 0, row_op_apply_adj},
    {"plm_op_dottest", "rtol differs", A, 1, row_op_dottest},
    {"plm_solve_cg", "niter differs", A, 1, row_solve_cg},
    {"plm_solve_cgls", "damp differs", A, 1, row_solve_cgls},
    {"plm_op_broadcast", "another dtype", A, 1, row_op_broadcast},
    {"plm_op_first_derivative", "sampling differs", A, 1, row_first_derivative},
    {"plm_op_second_derivative", "axis differs", A, 1, row_second_derivative},
    {"plm_op_laplacian", "kind differs", A, 1, row_laplacian},
    {"plm_op_gradient", "edge differs", A, 1, row_gradient},
    {"plm_op_halo", "a negative width", A, 0, row_halo},
    {"plm_op_nonstationary_convolve1d", "nh differs", A, 1, row_nonstat_nh},
    {"plm_op_nonstationary_convolve1d", "filters differ", A, 1, row_nonstat_hs},
    {"plm_op_nonstationary_convolve1d", "an even nh", A, 0, row_nonstat_even},
    {"plm_op_halo", "a width near INT64_MAX", A, 0, row_halo_huge},
    {"plm_op_apply_stacked", "a stack of one member", S, 0, row_apply_stacked},
    {"plm_op_apply_adjoint_stacked", "a stack of one member", S, 0, row_apply_adjoint_stacked},
    {"plm_solve_cgls_stacked", "niter differs", A, 1, row_cgls_stacked},
    {"plm_solve_cg_stacked", "tol differs", A, 1, row_cg_stacked},
    {"plm_solve_ista", "eps differs", A, 1, row_solve_ista},
    {"plm_solve_fista", "eps differs", A, 1, row_solve_fista},
    {"plm_power_iteration", "seed differs", A, 1, row_power_iteration},
    {"plm_array_add_ghost_cells", "out_bytes one element short", A, 0, row_add_ghost_cells},
    {"plm_array_redistribute", "axis differs", A, 1, row_redistribute},
    {"plm_stacked_dot", "NULL re", A, 0, row_stacked_dot},
    {"plm_stacked_norm", "ord differs", A, 1, row_stacked_norm},
    {"plm_stacked_asarray", "out_bytes one element short", A, 0, row_stacked_asarray},
    {"plm_prox_apply", "tau differs", A, 1, row_prox_apply_tau},
    {"plm_prox_value", "NULL value", A, 0, row_prox_value_null},
    {"plm_prox_apply_stacked", "tau differs", A, 1, row_prox_apply_stacked_tau},
    {"plm_prox_value_stacked", "NULL value", A, 0, row_prox_value_stacked_null},
    {"plm_op_fredholm1", "nz differs", A, 1, row_fredholm1_nz},
    {"plm_op_fredholm1", "g_bytes one element short", A, 0, row_fredholm1_g_bytes},
#ifdef PLM_TEST_WITH_FFTW
    {"plm_op_mdc", "dt differs", A, 1, row_mdc_dt},
    {"plm_op_mdc", "one frequency too many on one rank", A, 0, row_mdc_nf},
#else
    {"plm_op_mdc", "no FFTW in this build", PLM_ERR_NOT_SUPPORTED, 0, row_mdc_dt},
#endif
    {"plm_op_fftnd", "norm differs", A, 1, row_fftnd},
    {"plm_op_fftnd", "a repeated axis", A, 0, row_fftnd_axis},
    {"plm_op_fftnd_ex", "output differs", A, 1, row_fftnd_ex_output},
    {"plm_op_fftnd_plan", "planning differs", A, 1, row_fftnd_plan_planning},
    {"plm_op_fftnd_plan", "nffts differ", A, 1, row_fftnd_plan_nffts},
    {"plm_fft_wisdom_export", "buf one byte short", A, 0, row_fft_wisdom_export},
    {"plm_fft_wisdom_import", "another text than rank 0's", A, 1, row_fft_wisdom_import},
    {"plm_array_fftshift", "inverse differs", A, 1, row_fftshift},
    {"plm_prox_grad", "NULL out", A, 0, row_prox_grad},
    {"plm_solve_proximal_gradient", "tau differs", A, 1, row_proximal_gradient},
    {"plm_solve_admml2", "niter differs", A, 1, row_admml2},
    {"plm_solve_admml2_stacked", "tau differs", A, 1, row_admml2_stacked},
    {"plm_prox_dual", "tau differs", A, 1, row_prox_dual},
    {"plm_prox_dual_stacked", "tau differs", A, 1, row_prox_dual_stacked},
    {"plm_prox_gradient", "sigmame differs", A, 1, row_prox_gradient},
    {"plm_prox_gradient_stacked", "out is x", A, 0, row_prox_gradient_stacked},
    {"plm_solve_proximal_gradient_backtracking", "beta differs", A, 1, row_pg_backtracking},
    {"plm_solve_primal_dual", "theta differs", A, 1, row_primal_dual},
    {"plm_solve_primal_dual_stacked", "mu differs", A, 1, row_primal_dual_stacked},
    {"plm_solve_adaptive_primal_dual", "delta differs", A, 1, row_adaptive_primal_dual},
};
#define NROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

/* Collective by the header but with no agreement step, and why. */
static const char *const EXEMPT[][2] = {
    {"plm_comm_destroy", "NULL-safe by convention: a rank passing NULL returns at once, so it cannot agree"},
};

/* A following collective works: a dot of a fresh array of ones. */
static void sane(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double r = -1;
    TU_CHECK_OK(plm_array_dot(x, x, 0, &r, NULL));
    TU_EXPECT(r == (double)nones(), "sanity dot after the row: %g expected %lld", r, (long long)nones());
    plm_array_destroy(&x);
}

static void run_row(const row_t *row)
{
    for (int bad = 0; bad < tu_size; bad++) {
        TU_MARK();
        plm_clear_last_error();
        plm_status_t st = row->run(tu_rank == bad);
        const plm_status_t want = row->differing && tu_size == 1 ? PLM_SUCCESS : row->expect;
        int all[TU_MAX_RANKS] = {0};
        int mine = (int)st;
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < tu_size; r++)
            TU_EXPECT(all[r] == (int)want, "%s (%s, bad rank %d): rank %d returned %d (%s), expected %d", row->fn,
                      row->what, bad, r, all[r], plm_status_string((plm_status_t)all[r]), (int)want);
        if (want != PLM_SUCCESS)
            TU_EXPECT(plm_last_error()[0] != '\0', "%s (%s): no message", row->fn, row->what);
        sane();
    }
}

static void test_rows(void **state)
{
    (void)state;
    G2[0] = 4 * tu_size + 1;
    for (int i = 0; i < NROWS; i++) run_row(&ROWS[i]);
    TU_DONE();
}

/* ---- every collective function of the header has a row ------------------------------------ */

static void test_every_collective_has_a_row(void **state)
{
    (void)state;
    const char *rows[NROWS], *exempt[sizeof EXEMPT / sizeof EXEMPT[0]];
    for (int i = 0; i < NROWS; i++) rows[i] = ROWS[i].fn;
    for (size_t i = 0; i < sizeof EXEMPT / sizeof EXEMPT[0]; i++) exempt[i] = EXEMPT[i][0];
    hs_table_t t = {rows, exempt, NROWS, (int)(sizeof EXEMPT / sizeof EXEMPT[0]), "tests/array/test_array_collective_table.c", 0};
    const int problems = hs_check_table(&t);
    TU_EXPECT(problems == 0, "the table does not match the header's collective functions (%d; see stderr)",
              problems);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_every_collective_has_a_row),
        TU_TEST(test_rows),
    };
    tu_watchdog_s = 60; /* a hang in any row is a failure */
    return plm_run_group_tests_mpi(tests);
}
