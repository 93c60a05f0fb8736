/* Fault injection through every collective entry point of include/pylopsmpi.h: nothing fails
 * after an agreement.
 *
 * Every allocation of this program - the library's Buffers and every operator new, through
 * fault_hooks.cpp - counts. For each row, each rank in turn is "the bad rank", and for
 * N = 1, 2, ... the N-th allocation of the call fails on that rank alone, until the call makes
 * fewer than N allocations there. Each time:
 *   - every rank returns PLM_ERR_OUT_OF_MEMORY (the failure was agreed: no hang, no rank
 *     succeeding while another fails), with outputs cleared;
 *   - a following collective on the same communicator works;
 * and when the call succeeds, no rank allocated after an agreement had run (the library's
 * allocation accounting, core/alloc.hpp).
 *
 * test_every_collective_has_a_row fails for any function documented "Collective" without a
 * row here (or an exemption with its reason), so a new collective entry point cannot arrive
 * without one. Runs at 2 and 3 ranks (and 1, where the loop shows the single-rank paths
 * allocate nothing after their agreement). PLM_TEST_TRACE_ALLOC=1 prints a backtrace of every
 * allocation made after an agreement. */
#include "../array/array_test_util.h"
#include "header_scan.h"

void plm_test_fail_nth(long long n);
long long plm_test_armed(void);
long long plm_test_violations(void);
void plm_test_reset_violations(void);
void plm_test_trace_violations(int on);

/* ---- arming --------------------------------------------------------------------------------- */

static int g_bad = -1;     /* the rank whose allocation fails */
static long long g_nth = 0; /* which allocation of the call */
static long long g_left = 0; /* the countdown after the call: > 0 when the call made fewer */
static long long g_viol = 0; /* allocations after an agreement during the call */
static int g_verbose = 0;    /* PLM_TEST_FAULT_VERBOSE: name each call on rank 0 */

/* Right before the call under test: nothing may allocate between ARM and the call. */
#define ARM()                                                      \
    do {                                                           \
        plm_test_reset_violations();                               \
        if (tu_rank == g_bad) plm_test_fail_nth(g_nth);            \
    } while (0)

#define DISARM()                                                   \
    do {                                                           \
        g_left = tu_rank == g_bad ? plm_test_armed() : 0;          \
        plm_test_fail_nth(0);                                      \
        g_viol = plm_test_violations();                            \
    } while (0)

/* Runs call between ARM and DISARM and returns its status. */
#define UNDER_TEST(st, call) \
    do {                     \
        ARM();               \
        st = (call);         \
        DISARM();            \
    } while (0)

/* ---- operands ------------------------------------------------------------------------------- */

static int64_t G2[2] = {0, 3}; /* (4P+1) x 3 */

static plm_array_t ones(plm_partition_t part, const int *mask)
{
    plm_array_t x = tu_make(2, G2, 0, part, PLM_FLOAT64, NULL, mask, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    return x;
}

static int64_t nones(void) { return G2[0] * G2[1]; }

static plm_op_t dense_block(void)
{
    const double a[6] = {2, 0.5, -1, 1, 0.25, 3};
    plm_op_t op = NULL;
    TU_OK(plm_op_dense(PLM_FLOAT64, 3, 2, a, sizeof a, 0, 0, &op));
    return op;
}

static int cb_scale(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dt,
                    plm_memory_t mem)
{
    (void)ctx;
    (void)dt;
    (void)mem;
    const double *x = in;
    double *y = out;
    for (int64_t i = 0; i < n_out; i++) y[i] = i < n_in ? 2 * x[i] : 0;
    return 0;
}

/* A block-diagonal of one dense 3 x 2 block per rank, or (with a callback) of a callback block
 * (2 x 2) next to it. */
static plm_op_t block_op(int with_callback)
{
    plm_op_t parts[2] = {dense_block(), NULL}, op = NULL;
    if (with_callback) TU_OK(plm_op_callback(PLM_FLOAT64, 2, 2, cb_scale, cb_scale, NULL, NULL, &parts[1]));
    TU_OK(plm_op_blockdiag(tu_comm, with_callback ? 2 : 1, (const plm_const_op_t *)parts, 0, NULL, &op));
    plm_op_destroy(&parts[0]);
    plm_op_destroy(&parts[1]);
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

static const int64_t STENCIL_DIMS[2] = {9, 4};

static plm_op_t laplacian(void)
{
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    TU_OK(plm_op_laplacian(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &op));
    return op;
}

/* A 3-D Laplacian (edge rows on): axes 1 and 2 step inside the rows of axis 0. */
static plm_op_t laplacian3(void)
{
    const int64_t dims[3] = {9, 3, 4};
    const int axes[3] = {2, 0, 1};
    plm_op_t op = NULL;
    TU_OK(plm_op_laplacian(tu_comm, PLM_FLOAT64, 3, dims, -1, 3, axes, NULL, NULL, PLM_DERIV_CENTERED, 1, &op));
    return op;
}

static void mask_of(int *mask)
{
    for (int r = 0; r < tu_size; r++) mask[r] = r % 2;
}

/* ---- rows: each runs one collective call under test and returns its status ------------------ */

static plm_status_t row_comm_create(void)
{
    plm_comm_t c = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_comm_create(MPI_COMM_WORLD, NULL, &c));
    TU_EXPECT(st == PLM_SUCCESS || c == NULL, "comm_create failed without clearing out");
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_comm_create_f(void)
{
    plm_comm_t c = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &c));
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_comm_split(void)
{
    plm_comm_t c = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_comm_split(tu_comm, tu_rank % 2, tu_rank, &c));
    plm_comm_destroy(&c);
    return st;
}

static plm_status_t row_array_create(void)
{
    plm_array_t x = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_array_create(tu_comm, 2, G2, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, tu_mem, &x));
    TU_EXPECT(st == PLM_SUCCESS || x == NULL, "array_create failed without clearing out");
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_array_create_ex(void)
{
    plm_array_t x = NULL;
    int mask[TU_MAX_RANKS];
    mask_of(mask);
    mask[0] = 7; /* a mask no earlier row made: its group is created in this call */
    int64_t shapes[2 * TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) {
        shapes[2 * r] = tu_split(G2[0], tu_size, tu_size - 1 - r); /* a custom split */
        shapes[2 * r + 1] = G2[1];
    }
    plm_status_t st;
    UNDER_TEST(st, plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, tu_mem, tu_size,
                                       shapes, tu_size, mask, NULL, 0, &x));
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_layout_create(void)
{
    plm_layout_t l = NULL;
    int mask[TU_MAX_RANKS];
    for (int r = 0; r < tu_size; r++) mask[r] = r == tu_size - 1 ? 9 : 3;
    plm_status_t st;
    UNDER_TEST(st, plm_layout_create(tu_comm, 2, G2, 1, PLM_PARTITION_SCATTER, 0, NULL, tu_size, mask, &l));
    plm_layout_destroy(&l);
    return st;
}

static plm_status_t row_restore_local_write(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    void *d = NULL;
    TU_OK(plm_array_get_local_write(x, &d));
    plm_status_t st;
    UNDER_TEST(st, plm_array_restore_local_write(x, &d));
    if (d) plm_array_restore_local_write(x, &d);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_fill(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    plm_status_t st;
    UNDER_TEST(st, plm_array_fill(x, 2, 0));
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_dot(void)
{
    int mask[TU_MAX_RANKS];
    mask_of(mask);
    plm_array_t x = ones(PLM_PARTITION_SCATTER, mask);
    double r = 0;
    plm_status_t st;
    UNDER_TEST(st, plm_array_dot(x, x, 0, &r, NULL));
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_norm(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    double r = 0;
    plm_status_t st;
    UNDER_TEST(st, plm_array_norm(x, 3.0, &r));
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_norm_axis(int axis, int long_axis)
{
    /* long_axis: along the distributed axis with more partials than ride in the agreement */
    int64_t g[2] = {G2[0], long_axis ? 5000 : G2[1]};
    plm_array_t x = tu_make(2, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    const int64_t n = axis == 0 ? g[1] : g[0];
    double *out = tu_alloc(n);
    plm_status_t st;
    UNDER_TEST(st, plm_array_norm_axis(x, 2.0, axis, out, n));
    free(out);
    plm_array_destroy(&x);
    return st;
}
static plm_status_t row_norm_axis_local(void) { return row_norm_axis(1, 0); }
static plm_status_t row_norm_axis_along(void) { return row_norm_axis(0, 1); }

static plm_status_t row_asarray(void)
{
    int64_t g[2] = {3, 2 * tu_size + 1}; /* split along axis 1: blocks interleave */
    plm_array_t x = tu_make(2, g, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    void *out = tu_buf(tu_bytes(PLM_FLOAT64, g[0] * g[1]));
    plm_status_t st;
    UNDER_TEST(st, plm_array_asarray(x, 0, out, tu_bytes(PLM_FLOAT64, g[0] * g[1])));
    tu_buf_free(out);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_set_global(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    double *h = tu_alloc(nones());
    for (int64_t i = 0; i < nones(); i++) h[i] = (double)i;
    void *g = tu_buf_of(h, tu_bytes(PLM_FLOAT64, nones()));
    free(h);
    plm_status_t st;
    UNDER_TEST(st, plm_array_set_global(x, g, tu_bytes(PLM_FLOAT64, nones())));
    tu_buf_free(g);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_gather_to(void)
{
    int64_t g[2] = {3, 2 * tu_size + 1};
    plm_array_t x = tu_make(2, g, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    const int root = tu_size - 1;
    double *out = tu_alloc(g[0] * g[1]);
    plm_status_t st;
    UNDER_TEST(st, plm_array_gather_to(x, root, tu_rank == root ? out : NULL,
                                       tu_rank == root ? tu_bytes(PLM_FLOAT64, g[0] * g[1]) : 0));
    free(out);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_scatter_from(void)
{
    int64_t g[2] = {3, 2 * tu_size + 1};
    plm_array_t x = tu_make(2, g, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    double *in = tu_alloc(g[0] * g[1]);
    for (int64_t i = 0; i < g[0] * g[1]; i++) in[i] = (double)i;
    plm_status_t st;
    UNDER_TEST(st, plm_array_scatter_from(x, 0, tu_rank == 0 ? in : NULL, tu_rank == 0 ? tu_bytes(PLM_FLOAT64, g[0] * g[1]) : 0));
    free(in);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_add_ghost_cells(void)
{
    int64_t g[2] = {3, 4 * tu_size + 1}; /* along axis 1: slabs are packed */
    plm_array_t x = tu_make(2, g, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    int64_t gs[2];
    TU_OK(plm_array_ghost_shape(x, 1, 2, gs));
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, gs[0] * gs[1]));
    plm_status_t st;
    UNDER_TEST(st, plm_array_add_ghost_cells(x, 1, 2, buf, tu_bytes(PLM_FLOAT64, gs[0] * gs[1])));
    tu_buf_free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_redistribute(void)
{
    int64_t g3[3] = {3, 2 * tu_size + 1, 5};
    plm_array_t x = tu_make(3, g3, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    plm_array_t y = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_array_redistribute(x, 1, &y));
    TU_EXPECT(st == PLM_SUCCESS || y == NULL, "redistribute failed without clearing out");
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t row_stacked(int what)
{
    plm_array_t m[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_BROADCAST, NULL)};
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(2, m, &s));
    double r = 0;
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, 2 * nones()));
    plm_status_t st;
    if (what == 0) UNDER_TEST(st, plm_stacked_dot(s, s, 0, &r, NULL));
    else if (what == 1) UNDER_TEST(st, plm_stacked_norm(s, 1.0, &r));
    else UNDER_TEST(st, plm_stacked_asarray(s, buf, tu_bytes(PLM_FLOAT64, 2 * nones())));
    tu_buf_free(buf);
    plm_stacked_destroy(&s);
    plm_array_destroy(&m[0]);
    plm_array_destroy(&m[1]);
    return st;
}
static plm_status_t row_stacked_dot(void) { return row_stacked(0); }
static plm_status_t row_stacked_norm(void) { return row_stacked(1); }
static plm_status_t row_stacked_asarray(void) { return row_stacked(2); }

/* ---- operator constructors ------------------------------------------------------------------ */

static plm_status_t row_op_blockdiag(void)
{
    plm_op_t d = dense_block(), op = NULL;
    int mask[TU_MAX_RANKS];
    mask_of(mask);
    mask[0] = 11;
    plm_status_t st;
    UNDER_TEST(st, plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&d, tu_size, mask, &op));
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_op_stack(int horizontal)
{
    plm_op_t d = dense_block(), op = NULL;
    plm_status_t st;
    if (horizontal) UNDER_TEST(st, plm_op_hstack(tu_comm, 1, (const plm_const_op_t *)&d, &op));
    else UNDER_TEST(st, plm_op_vstack(tu_comm, 1, (const plm_const_op_t *)&d, &op));
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_op_vstack(void) { return row_op_stack(0); }
static plm_status_t row_op_hstack(void) { return row_op_stack(1); }

static plm_status_t row_op_broadcast(void)
{
    plm_op_t d = dense_block(), op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_broadcast(tu_comm, d, &op));
    plm_op_destroy(&d);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_matrix_mult(int kind)
{
    const int64_t n = 2 * (int64_t)tu_size + 1, k = 3 * (int64_t)tu_size, m = 5;
    double *a = calloc((size_t)(n * k), sizeof(double));
    plm_op_t op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_matrix_mult(tu_comm, kind, 0, PLM_FLOAT64, n, k, m, a,
                                       tu_matmul_a_bytes(kind, 0, PLM_FLOAT64, n, k, m), &op));
    plm_op_destroy(&op);
    free(a);
    return st;
}
static plm_status_t row_matrix_mult_summa(void) { return row_matrix_mult(PLM_MATMUL_SUMMA); }
static plm_status_t row_matrix_mult_block(void) { return row_matrix_mult(PLM_MATMUL_BLOCK); }

static plm_status_t row_first_derivative(void)
{
    plm_op_t op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_first_derivative(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 0, 1.0, PLM_DERIV_CENTERED, 5,
                                           1, &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_second_derivative(void)
{
    plm_op_t op = NULL;
    const int64_t rows = tu_rank == 0 ? STENCIL_DIMS[0] - (tu_size - 1) : 1; /* a custom split */
    plm_status_t st;
    UNDER_TEST(st, plm_op_second_derivative(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, rows, 0, 1.0, PLM_DERIV_CENTERED, 1,
                                            &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_laplacian(void)
{
    const int axes[2] = {0, 1};
    plm_op_t op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_laplacian(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED,
                                    0, &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_gradient(void)
{
    plm_op_t op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_gradient(tu_comm, PLM_FLOAT64, 2, STENCIL_DIMS, -1, NULL, PLM_DERIV_FORWARD, 0, &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_halo(void)
{
    const int64_t dims[2] = {4, 3 * (int64_t)tu_size};
    const int64_t w = 1;
    plm_op_t op = NULL;
    plm_status_t st;
    UNDER_TEST(st, plm_op_halo(tu_comm, PLM_FLOAT64, 2, dims, NULL, 1, &w, &op));
    plm_op_destroy(&op);
    return st;
}

/* Non-stationary convolution along axis 0 (ghost exchange) with a thin split; the call under
 * test when armed. */
static plm_status_t nonstat(int armed, plm_op_t *op)
{
    const int64_t dims[2] = {4 * (int64_t)tu_size + 1, 3}, ih[3] = {0, 2, 4};
    const int64_t rows = tu_rank < tu_size - 1 ? 1 : dims[0] - (tu_size - 1);
    const double hs[3 * 5] = {1, 2, 3, 2, 1, 0.5, 1, 2, 1, 0.5, 0, 1, 0, 1, 0};
    plm_status_t st;
    if (armed) UNDER_TEST(st, plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 2, dims, rows, 0, 3, 5, hs,
                                                              sizeof hs, ih, op));
    else st = plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 2, dims, rows, 0, 3, 5, hs, sizeof hs, ih, op);
    return st;
}

static plm_status_t row_nonstat(void)
{
    plm_op_t op = NULL;
    const plm_status_t st = nonstat(1, &op);
    plm_op_destroy(&op);
    return st;
}

/* Fredholm1 with uneven slices (rank r owns r + 1: 1, 2, 3), G^H kept. */
static plm_op_t fredholm_op(int save_gt, plm_status_t *st_out)
{
    const int64_t nsl = tu_rank + 1, nx = 3, ny = 2, nz = 2;
    double g[3 * 3 * 2];
    for (int i = 0; i < 3 * 3 * 2; i++) g[i] = 1.0 / (i + 1 + tu_rank);
    plm_op_t op = NULL;
    plm_status_t st;
    if (st_out) UNDER_TEST(st, plm_op_fredholm1(tu_comm, PLM_FLOAT64, nsl, nx, ny, nz, g, nsl * nx * ny * 8, save_gt, 1, &op));
    else TU_OK(st = plm_op_fredholm1(tu_comm, PLM_FLOAT64, nsl, nx, ny, nz, g, nsl * nx * ny * 8, save_gt, 1, &op));
    if (st_out) *st_out = st;
    return op;
}

static plm_status_t row_fredholm1(void)
{
    plm_status_t st;
    plm_op_t op = fredholm_op(1, &st);
    plm_op_destroy(&op);
    return st;
}

#ifdef PLM_TEST_WITH_FFTW
/* MDC, nt 9 twosided, 5 frequencies split as evenly as the ranks allow. */
static plm_op_t mdc_op(plm_status_t *st_out)
{
    const int64_t nt = 9, nv = 2, ns = 2, nr = 3, nfreq = 5;
    const int64_t nf = tu_split(nfreq, tu_size, tu_rank);
    double g[2 * 5 * 2 * 3];
    for (int i = 0; i < 2 * 5 * 2 * 3; i++) g[i] = 1.0 / (i + 1);
    plm_op_t op = NULL;
    plm_status_t st;
    if (st_out) UNDER_TEST(st, plm_op_mdc(tu_comm, PLM_COMPLEX128, nt, nv, nfreq, nf, ns, nr, 0.004, 1.0, 1, 0, 0, 1, g,
                                          nf * ns * nr * 16, &op));
    else TU_OK(st = plm_op_mdc(tu_comm, PLM_COMPLEX128, nt, nv, nfreq, nf, ns, nr, 0.004, 1.0, 1, 0, 0, 1, g,
                               nf * ns * nr * 16, &op));
    if (st_out) *st_out = st;
    return op;
}

static plm_status_t row_mdc(void)
{
    plm_status_t st;
    plm_op_t op = mdc_op(&st);
    plm_op_destroy(&op);
    return st;
}
#endif

/* ---- applies and solvers -------------------------------------------------------------------- */

/* The operators the applies and solvers run on. */
enum { OP_BLOCK, OP_CALLBACK, OP_PRODUCT, OP_SUM, OP_VSTACK, OP_LAPLACIAN, OP_LAPLACIAN3, OP_HALO, OP_SUMMA, OP_BLOCKMM,
       OP_TRANSPOSE, OP_POWER, OP_NONSTAT, OP_FREDHOLM, OP_MDC };

static plm_op_t make_op(int which)
{
    plm_op_t op = NULL, a = NULL, b = NULL;
    switch (which) {
    case OP_BLOCK: return block_op(0);
    case OP_CALLBACK: return block_op(1);
    case OP_PRODUCT: /* (A^H A) on the domain: scratch on the range */
        a = block_op(0);
        TU_OK(plm_op_adjoint(a, &b));
        TU_OK(plm_op_product(b, a, &op));
        break;
    case OP_SUM:
        a = laplacian();
        TU_OK(plm_op_sum(a, a, &op));
        break;
    case OP_VSTACK: {
        plm_op_t d = dense_block();
        TU_OK(plm_op_vstack(tu_comm, 1, (const plm_const_op_t *)&d, &op));
        plm_op_destroy(&d);
        return op;
    }
    case OP_LAPLACIAN: return laplacian();
    case OP_LAPLACIAN3: return laplacian3();
    case OP_HALO: {
        const int64_t dims[2] = {4, 3 * (int64_t)tu_size}, w = 1;
        TU_OK(plm_op_halo(tu_comm, PLM_FLOAT64, 2, dims, NULL, 1, &w, &op));
        return op;
    }
    case OP_SUMMA:
    case OP_BLOCKMM: {
        const int64_t n = 2 * (int64_t)tu_size + 1, k = 3 * (int64_t)tu_size, m = 5;
        double *am = calloc((size_t)(n * k), sizeof(double));
        for (int64_t i = 0; i < n * k; i++) am[i] = 1.0 / (double)(i + 1);
        const plm_matmul_kind_t kind = which == OP_SUMMA ? PLM_MATMUL_SUMMA : PLM_MATMUL_BLOCK;
        TU_OK(plm_op_matrix_mult(tu_comm, kind, 0, PLM_FLOAT64, n, k, m, am,
                                 tu_matmul_a_bytes(kind, 0, PLM_FLOAT64, n, k, m), &op));
        free(am);
        return op;
    }
    case OP_TRANSPOSE:
        a = laplacian();
        TU_OK(plm_op_transpose(a, &op));
        break;
    case OP_NONSTAT: TU_OK(nonstat(0, &op)); return op;
    case OP_POWER:
        a = laplacian();
        TU_OK(plm_op_power(a, 3, &op));
        break;
    case OP_FREDHOLM: return fredholm_op(0, NULL);
#ifdef PLM_TEST_WITH_FFTW
    case OP_MDC: return mdc_op(NULL);
#endif
    }
    plm_op_destroy(&a);
    plm_op_destroy(&b);
    return op;
}

static plm_status_t apply_row(int which, int adjoint)
{
    plm_op_t op = make_op(which);
    /* NonStationaryConvolve1D applies to host arrays only (device rows too) */
    const plm_memory_t mem = tu_mem;
    if (which == OP_NONSTAT) tu_mem = PLM_MEMORY_HOST;
    plm_array_t x = on_space(op, adjoint), y = on_space(op, !adjoint);
    tu_mem = mem;
    plm_status_t st;
    if (adjoint) UNDER_TEST(st, plm_op_apply_adjoint(op, x, y));
    else UNDER_TEST(st, plm_op_apply(op, x, y));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}
/* Operands of other dtypes than the operator's (NumPy's promotion): the conversions' arrays are
 * the call's allocations. */
static plm_status_t promoted_row(plm_dtype_t xdt, plm_dtype_t ydt, int adjoint)
{
    plm_op_t op = laplacian();
    plm_layout_t lx = NULL, ly = NULL;
    TU_OK(adjoint ? plm_op_range(op, &lx) : plm_op_domain(op, &lx));
    TU_OK(adjoint ? plm_op_domain(op, &ly) : plm_op_range(op, &ly));
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_array_create_from_layout(lx, xdt, PLM_MEMORY_HOST, NULL, 0, &x));
    TU_OK(plm_array_create_from_layout(ly, ydt, PLM_MEMORY_HOST, NULL, 0, &y));
    TU_OK(plm_array_fill(x, 1, 0));
    plm_status_t st;
    if (adjoint) UNDER_TEST(st, plm_op_apply_adjoint(op, x, y));
    else UNDER_TEST(st, plm_op_apply(op, x, y));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&lx);
    plm_layout_destroy(&ly);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_apply_complex_on_real(void) { return promoted_row(PLM_COMPLEX64, PLM_COMPLEX128, 0); }
static plm_status_t row_apply_widened(void) { return promoted_row(PLM_FLOAT32, PLM_FLOAT64, 1); }

static plm_status_t row_dot_mixed(void)
{
    plm_array_t x = tu_make(2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = tu_make(2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    TU_OK(plm_array_fill(y, 2, 0));
    double r = 0;
    plm_status_t st;
    UNDER_TEST(st, plm_array_dot(x, y, 0, &r, NULL));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    return st;
}

static plm_status_t row_apply_block(void) { return apply_row(OP_BLOCK, 0); }
static plm_status_t row_apply_callback(void) { return apply_row(OP_CALLBACK, 1); }
static plm_status_t row_apply_product(void) { return apply_row(OP_PRODUCT, 0); }
static plm_status_t row_apply_sum(void) { return apply_row(OP_SUM, 1); }
static plm_status_t row_apply_vstack_adj(void) { return apply_row(OP_VSTACK, 1); }
static plm_status_t row_apply_laplacian(void) { return apply_row(OP_LAPLACIAN, 0); }
static plm_status_t row_apply_laplacian3(void) { return apply_row(OP_LAPLACIAN3, 1); }
static plm_status_t row_apply_halo(void) { return apply_row(OP_HALO, 0); }
static plm_status_t row_apply_summa(void) { return apply_row(OP_SUMMA, 0); }
static plm_status_t row_apply_summa_adj(void) { return apply_row(OP_SUMMA, 1); }
static plm_status_t row_apply_blockmm(void) { return apply_row(OP_BLOCKMM, 0); }
static plm_status_t row_apply_transpose(void) { return apply_row(OP_TRANSPOSE, 1); }
static plm_status_t row_apply_power(void) { return apply_row(OP_POWER, 0); }
static plm_status_t row_apply_nonstat(void) { return apply_row(OP_NONSTAT, 0); }
static plm_status_t row_apply_nonstat_adj(void) { return apply_row(OP_NONSTAT, 1); }
static plm_status_t row_apply_fredholm_adj(void) { return apply_row(OP_FREDHOLM, 1); }
#ifdef PLM_TEST_WITH_FFTW
static plm_status_t row_apply_mdc(void) { return apply_row(OP_MDC, 0); }
static plm_status_t row_apply_mdc_adj(void) { return apply_row(OP_MDC, 1); }
#endif

static int stop_on_rank0(void *ctx, int64_t it, plm_const_array_t x, double cost)
{
    (void)ctx;
    (void)x;
    (void)cost;
    return tu_rank == 0 && it >= 2; /* rank 0 alone asks to stop */
}

/* kind: 0 CG, 1 CGLS, 2 ISTA, 3 FISTA (automatic step), 4 CGLS with a callback on one rank */
static plm_status_t solve_row(int kind)
{
    plm_op_t op = make_op(kind == 0 ? OP_PRODUCT : kind == 1 ? OP_LAPLACIAN : OP_CALLBACK);
    plm_array_t x = on_space(op, 0), y = on_space(op, 1);
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    if (kind == 4 && tu_rank == 0) TU_EXPECT(plm_solver_info_set_callback(info, stop_on_rank0, NULL, NULL) == PLM_SUCCESS, "cb");
    const double decay[4] = {1, 0.9, 0.8, 0.7};
    plm_status_t st;
    switch (kind) {
    case 0: UNDER_TEST(st, plm_solve_cg(op, y, x, 4, 0.0, info)); break;
    case 1: UNDER_TEST(st, plm_solve_cgls(op, y, x, 4, 0.5, 0.0, info)); break;
    case 2: UNDER_TEST(st, plm_solve_ista(op, y, x, 4, 0.1, 0.05, PLM_THRESH_SOFT, decay, 1, 0.0, info)); break;
    case 3: UNDER_TEST(st, plm_solve_fista(op, y, x, 4, 0.1, 0.0, PLM_THRESH_HALF, NULL, 0, 0.0, info)); break;
    default: UNDER_TEST(st, plm_solve_cgls(op, y, x, 4, 0.0, 0.0, info)); break;
    }
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_solve_cg(void) { return solve_row(0); }
static plm_status_t row_solve_cgls(void) { return solve_row(1); }
static plm_status_t row_solve_ista(void) { return solve_row(2); }
static plm_status_t row_solve_fista(void) { return solve_row(3); }
static plm_status_t row_solve_cgls_callback(void) { return solve_row(4); }

/* Stacks of operators: a stacked vstack of [L; L] on one domain, and a stacked block-diagonal,
 * through composites of stacked operators (their intermediate stacks are allocations):
 * S + 2 S for the vstack, S^T S for the block-diagonal. */
static plm_status_t stacked_row(int what)
{
    plm_op_t l = laplacian(), parts[2] = {l, l}, s = NULL, t = NULL, op = NULL;
    const int vstack = what == 0 || what == 2;
    TU_OK(vstack ? plm_op_stacked_vstack(2, (const plm_const_op_t *)parts, &s)
                 : plm_op_stacked_blockdiag(2, (const plm_const_op_t *)parts, &s));
    TU_OK(vstack ? plm_op_scale(s, 2, 0, &t) : plm_op_transpose(s, &t));
    TU_OK(vstack ? plm_op_sum(s, t, &op) : plm_op_product(t, s, &op));
    int nd = 0, nr = 0;
    TU_OK(plm_op_parts(op, &nd, &nr));
    plm_array_t xs[2] = {NULL, NULL}, ys[2] = {NULL, NULL};
    for (int i = 0; i < nd; i++) xs[i] = on_space(l, 0);
    for (int i = 0; i < nr; i++) ys[i] = on_space(l, 1);
    plm_stacked_t x = NULL, y = NULL;
    TU_OK(plm_stacked_create(nd, xs, &x));
    TU_OK(plm_stacked_create(nr, ys, &y));
    plm_status_t st;
    switch (what) {
    case 0: UNDER_TEST(st, plm_op_apply_adjoint_stacked(op, y, x)); break;
    case 1: UNDER_TEST(st, plm_op_apply_stacked(op, x, y)); break;
    case 2: UNDER_TEST(st, plm_solve_cgls_stacked(op, y, x, 3, 0.0, 0.0, NULL)); break;
    default: UNDER_TEST(st, plm_solve_cg_stacked(op, y, x, 3, 0.0, NULL)); break;
    }
    plm_stacked_destroy(&x);
    plm_stacked_destroy(&y);
    for (int i = 0; i < 2; i++) {
        plm_array_destroy(&xs[i]);
        plm_array_destroy(&ys[i]);
    }
    plm_op_destroy(&op);
    plm_op_destroy(&s);
    plm_op_destroy(&t);
    plm_op_destroy(&l);
    return st;
}
static plm_status_t row_apply_adjoint_stacked(void) { return stacked_row(0); }
static plm_status_t row_apply_stacked(void) { return stacked_row(1); }
static plm_status_t row_cgls_stacked(void) { return stacked_row(2); }
static plm_status_t row_cg_stacked(void) { return stacked_row(3); }

static plm_status_t row_dottest(void)
{
    plm_op_t op = make_op(OP_SUMMA);
    int passed = 0;
    plm_status_t st;
    UNDER_TEST(st, plm_op_dottest(op, 1e-10, &passed, NULL, NULL));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_power_iteration(void)
{
    plm_op_t op = make_op(OP_LAPLACIAN);
    double eig[2];
    plm_status_t st;
    UNDER_TEST(st, plm_power_iteration(op, 5, 0.0, 3, eig, NULL));
    plm_op_destroy(&op);
    return st;
}

/* ---- the table ------------------------------------------------------------------------------ */

/* The FFT operator (skipped, as a success, in a build without FFTW) and shifts. */
static int fft_op(int real, plm_fft_output_t output, plm_op_t *op)
{
    const int64_t dims[3] = {2 * (int64_t)tu_size + 1, 4, 3};
    const int axes[3] = {0, 1, 2}, shifts[3] = {1, 0, 1};
    return plm_op_fftnd_ex(tu_comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, PLM_FFT_NORM_1_N, real, shifts, shifts,
                           output, op) == PLM_SUCCESS;
}

static plm_status_t row_fftnd(void)
{
    plm_op_t op = NULL;
    if (!fft_op(0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op)) return PLM_SUCCESS;
    plm_op_destroy(&op);
    plm_status_t st;
    const int64_t dims[3] = {2 * (int64_t)tu_size + 1, 4, 3};
    const int axes[2] = {2, 0};
    UNDER_TEST(st, plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, dims, 2, axes, NULL, PLM_FFT_NORM_NONE, 1, NULL, NULL, &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fftnd_ex(void)
{
    plm_op_t op = NULL;
    if (!fft_op(0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op)) return PLM_SUCCESS;
    plm_op_destroy(&op);
    plm_status_t st;
    const int64_t dims[3] = {2 * (int64_t)tu_size + 1, 4, 3};
    const int axes[2] = {2, 0};
    UNDER_TEST(st, plm_op_fftnd_ex(tu_comm, PLM_COMPLEX128, 3, dims, 2, axes, NULL, PLM_FFT_NORM_NONE, 1, NULL, NULL,
                                   PLM_FFT_OUTPUT_AXIS0, &op));
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fftnd_plan(void)
{
    plm_op_t op = NULL;
    if (!fft_op(0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op)) return PLM_SUCCESS;
    plm_op_destroy(&op);
    plm_status_t st;
    const int64_t dims[3] = {2 * (int64_t)tu_size + 1, 4, 3}, nffts[2] = {5, 2 * (int64_t)tu_size + 3};
    const int axes[2] = {2, 0}, shifts[2] = {1, 1};
    UNDER_TEST(st, plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, dims, 2, axes, nffts, NULL, PLM_FFT_NORM_1_N, 1,
                                     shifts, NULL, PLM_FFT_OUTPUT_AXIS0, PLM_FFT_PLANNING_MEASURE, &op));
    plm_op_destroy(&op);
    return st;
}

/* The 1-D FFT (three exchanges, twiddles, distributed shifts): its applies. */
static plm_status_t row_apply_fftnd_1d(void)
{
    plm_op_t op = NULL;
    if (!fft_op(0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op)) return PLM_SUCCESS;
    plm_op_destroy(&op);
    const int64_t dims[1] = {6 * (int64_t)tu_size + 2}, nffts[1] = {12};
    const int axes[1] = {0}, shifts[1] = {1};
    TU_OK(plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 1, dims, 1, axes, nffts, NULL, PLM_FFT_NORM_1_N, 1, shifts,
                            shifts, PLM_FFT_OUTPUT_FEWEST_EXCHANGES, PLM_FFT_PLANNING_ESTIMATE, &op));
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    TU_OK(plm_array_fill(x, 1, 0.5));
    plm_status_t st;
    UNDER_TEST(st, plm_op_apply(op, x, y));
    if (st == PLM_SUCCESS) UNDER_TEST(st, plm_op_apply_adjoint(op, y, x));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}

static plm_status_t row_fft_wisdom_export(void)
{
    plm_status_t st;
    int64_t len = 0;
    UNDER_TEST(st, plm_fft_wisdom_export(tu_comm, NULL, 0, &len));
    return st;
}

static plm_status_t row_fft_wisdom_import(void)
{
    int64_t len = 0;
    TU_OK(plm_fft_wisdom_export(tu_comm, NULL, 0, &len));
    char *buf = calloc((size_t)len + 1, 1);
    TU_OK(plm_fft_wisdom_export(tu_comm, buf, len + 1, &len));
    plm_status_t st;
    UNDER_TEST(st, plm_fft_wisdom_import(tu_comm, buf));
    free(buf);
    return st;
}

static plm_status_t fft_apply_row(int real, int adjoint, plm_fft_output_t output)
{
    plm_op_t op = NULL;
    if (!fft_op(real, output, &op)) return PLM_SUCCESS;
    plm_layout_t dl = NULL, rl = NULL;
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_op_domain(op, &dl));
    TU_OK(plm_op_range(op, &rl));
    TU_OK(plm_array_create_from_layout(adjoint ? rl : dl, PLM_COMPLEX128, tu_mem, NULL, 0, &x));
    TU_OK(plm_array_create_from_layout(adjoint ? dl : rl, PLM_COMPLEX128, tu_mem, NULL, 0, &y));
    TU_OK(plm_array_fill(x, 1, 0.5));
    plm_status_t st;
    if (adjoint) UNDER_TEST(st, plm_op_apply_adjoint(op, x, y));
    else UNDER_TEST(st, plm_op_apply(op, x, y));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&dl);
    plm_layout_destroy(&rl);
    plm_op_destroy(&op);
    return st;
}
static plm_status_t row_apply_fftnd(void) { return fft_apply_row(0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES); }
static plm_status_t row_apply_adjoint_fftnd_real(void) { return fft_apply_row(1, 1, PLM_FFT_OUTPUT_FEWEST_EXCHANGES); }
static plm_status_t row_apply_fftnd_rows(void) { return fft_apply_row(0, 0, PLM_FFT_OUTPUT_AXIS0); }
static plm_status_t row_apply_adjoint_fftnd_rows(void) { return fft_apply_row(1, 1, PLM_FFT_OUTPUT_AXIS0); }

static plm_status_t row_fftshift(void)
{
    int64_t g3[3] = {2 * tu_size + 1, 3, 4};
    plm_array_t x = tu_make(3, g3, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX64, NULL, NULL, NULL), y = NULL;
    TU_OK(plm_array_fill(x, 1, 2));
    plm_status_t st;
    UNDER_TEST(st, plm_array_fftshift(x, 0, NULL, 1, &y));
    TU_EXPECT(st == PLM_SUCCESS || y == NULL, "fftshift failed without clearing out");
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    return st;
}

typedef struct {
    const char *fn;   /* the entry point under test */
    const char *what; /* the case */
    plm_status_t (*run)(void);
} row_t;

static plm_status_t row_prox_apply(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL), y = ones(PLM_PARTITION_SCATTER, NULL);
    plm_prox_t p = NULL;
    TU_OK(plm_prox_create_l1(0.5, &p));
    plm_status_t st;
    UNDER_TEST(st, plm_prox_apply(p, x, 1.0, y));
    plm_prox_destroy(&p);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    return st;
}

static plm_status_t row_prox_value(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST, NULL);
    plm_prox_t p = NULL;
    TU_OK(plm_prox_create_l1(0.5, &p));
    double v = 0;
    plm_status_t st;
    UNDER_TEST(st, plm_prox_value(p, x, &v));
    plm_prox_destroy(&p);
    plm_array_destroy(&x);
    return st;
}

/* A user prox that copies (its scratch copies are the stacked prox's allocations). */
static int copy_prox(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dt)
{
    (void)ctx;
    (void)tau;
    memcpy(out, x, (size_t)n * (dt == PLM_FLOAT32 ? 4 : dt == PLM_COMPLEX128 ? 16 : 8));
    return 0;
}

/* Stacks of a SCATTER and a BROADCAST member: Box value (a mask per member), the user prox
 * (a scratch copy per member) and L1, out of place. */
static plm_status_t stacked_prox_row(int what)
{
    /* user proxes take host memory only (device rows too) */
    const plm_memory_t mem = tu_mem;
    if (what == 1) tu_mem = PLM_MEMORY_HOST;
    plm_array_t m[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_BROADCAST, NULL)};
    plm_array_t n[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_BROADCAST, NULL)};
    tu_mem = mem;
    plm_stacked_t x = NULL, y = NULL;
    TU_OK(plm_stacked_create(2, m, &x));
    TU_OK(plm_stacked_create(2, n, &y));
    plm_prox_t p = NULL;
    if (what == 0) TU_OK(plm_prox_create_box(0, 2, &p));
    else if (what == 1) TU_OK(plm_prox_create_callback(copy_prox, NULL, NULL, NULL, NULL, &p));
    else TU_OK(plm_prox_create_l1(0.5, &p));
    double v = 0;
    plm_status_t st;
    if (what == 0) UNDER_TEST(st, plm_prox_value_stacked(p, x, &v));
    else UNDER_TEST(st, plm_prox_apply_stacked(p, x, 1.0, y));
    plm_prox_destroy(&p);
    plm_stacked_destroy(&x);
    plm_stacked_destroy(&y);
    for (int i = 0; i < 2; i++) {
        plm_array_destroy(&m[i]);
        plm_array_destroy(&n[i]);
    }
    return st;
}
/* ADMML2 with a stacked z on 0.5 [L; L], a composite of a stacked vstack of a Laplacian
 * (gfirst). */
static plm_status_t row_admml2_stacked(void)
{
    plm_op_t op = laplacian(), S = NULL, A = NULL;
    const plm_const_op_t parts[2] = {op, op};
    TU_OK(plm_op_stacked_vstack(2, parts, &S));
    TU_OK(plm_op_scale(S, 0.5, 0, &A));
    plm_op_destroy(&S);
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), zm[2] = {on_space(op, 1), on_space(op, 1)};
    plm_stacked_t z = NULL;
    TU_OK(plm_stacked_create(2, zm, &z));
    plm_prox_t l1 = NULL;
    TU_OK(plm_prox_create_l1(0.1, &l1));
    plm_status_t st;
    UNDER_TEST(st, plm_solve_admml2_stacked(l1, op, y, A, x, z, 0, 1.0, 2, 1, 2, 0.0, NULL));
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
static plm_status_t row_prox_value_stacked_box(void) { return stacked_prox_row(0); }
static plm_status_t row_prox_apply_stacked_user(void) { return stacked_prox_row(1); }
static plm_status_t row_prox_apply_stacked_l1(void) { return stacked_prox_row(2); }

/* The proximal layer on a Laplacian: L2 with the operator (inner CGLS), L1, Box. */
static plm_status_t prox2_row(int what)
{
    plm_op_t op = laplacian();
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), z = on_space(op, 1), g = on_space(op, 0);
    plm_prox_t f = NULL, l1 = NULL;
    TU_OK(plm_prox_create_l2(op, y, NULL, 1.0, 1.0, 1, 3, 0.0, x, 1, what == 3 ? PLM_L2_CG : PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(0.1, &l1));
    const double eps = 0.5;
    plm_status_t st;
    switch (what) {
    case 0: UNDER_TEST(st, plm_prox_grad(f, x, g)); break;
    case 1: UNDER_TEST(st, plm_solve_proximal_gradient(f, l1, x, 0.05, &eps, 1, 0.8, 3, PLM_ACCEL_FISTA, 1e-12, NULL)); break;
    case 2: UNDER_TEST(st, plm_solve_admml2(l1, op, y, op, x, z, 0, 1.0, 2, 1, 2, 0.0, NULL)); break;
    default: UNDER_TEST(st, plm_prox_apply(f, x, 0.5, g)); break;
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
/* The dual and the gradient (Moreau's where there is none) of compositions: an L21 on a stack
 * (scratch norms), a precomposition of L1 with an array b (scratch a x + b), a chain (scratch
 * between its steps), an affine addition of an L2 (its own gradient plus v). */
static plm_status_t comp_row(int what)
{
    plm_array_t m[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_SCATTER, NULL)};
    plm_array_t n[2] = {ones(PLM_PARTITION_SCATTER, NULL), ones(PLM_PARTITION_SCATTER, NULL)};
    plm_stacked_t x = NULL, y = NULL;
    TU_OK(plm_stacked_create(2, m, &x));
    TU_OK(plm_stacked_create(2, n, &y));
    plm_prox_t l1 = NULL, l21 = NULL, box = NULL, l2 = NULL, c = NULL;
    TU_OK(plm_prox_create_l1(0.5, &l1));
    TU_OK(plm_prox_create_l21(2, 0.5, &l21));
    TU_OK(plm_prox_create_box(0, 2, &box));
    TU_OK(plm_prox_create_l2(NULL, m[1], NULL, 1.0, 1.0, 1, 3, 0.0, NULL, 1, PLM_L2_CGLS, &l2));
    plm_status_t st;
    switch (what) {
    case 0: UNDER_TEST(st, plm_prox_dual_stacked(l21, x, 0.7, y)); break;
    case 1:
        TU_OK(plm_prox_precomposition(l1, 2.0, 0.0, m[1], &c));
        UNDER_TEST(st, plm_prox_dual(c, m[0], 0.7, n[0]));
        break;
    case 2:
        TU_OK(plm_prox_chain(l1, box, &c));
        UNDER_TEST(st, plm_prox_gradient(c, m[0], 0.5, n[0]));
        break;
    default: UNDER_TEST(st, plm_prox_gradient_stacked(l21, x, 0.5, y)); break;
    }
    plm_prox_destroy(&c);
    plm_prox_destroy(&l1);
    plm_prox_destroy(&l21);
    plm_prox_destroy(&box);
    plm_prox_destroy(&l2);
    plm_stacked_destroy(&x);
    plm_stacked_destroy(&y);
    for (int i = 0; i < 2; i++) {
        plm_array_destroy(&m[i]);
        plm_array_destroy(&n[i]);
    }
    return st;
}
static plm_status_t row_prox_dual_stacked(void) { return comp_row(0); }
static plm_status_t row_prox_dual(void) { return comp_row(1); }
static plm_status_t row_prox_gradient(void) { return comp_row(2); }
static plm_status_t row_prox_gradient_stacked(void) { return comp_row(3); }

/* The newer solvers, one iteration each (the row's cost grows with the square of a call's
 * allocations): backtracking on L2 (no operator) + L1 with eta < 1 and tol, PrimalDual on a
 * block-diagonal with y0, z and the x-step first, on [B; B] with an L21, AdaptivePrimalDual. */
static plm_status_t solver3_row(int what)
{
    plm_op_t op = block_op(0), A = NULL;
    const plm_const_op_t parts[2] = {op, op};
    TU_OK(plm_op_stacked_vstack(2, parts, &A));
    plm_array_t x = on_space(op, 0), y = on_space(op, 1), ym[2] = {on_space(op, 1), on_space(op, 1)};
    plm_stacked_t ys = NULL;
    TU_OK(plm_stacked_create(2, ym, &ys));
    plm_prox_t f = NULL, l1 = NULL, l21 = NULL;
    TU_OK(plm_prox_create_l2(NULL, x, NULL, 1.0, 1.0, 1, 3, 0.0, NULL, 1, PLM_L2_CGLS, &f));
    TU_OK(plm_prox_create_l1(0.1, &l1));
    TU_OK(plm_prox_create_l21(2, 0.1, &l21));
    const double eps = 0.5, tau = 0.2, mu = 0.3;
    double steps[6], last = 0;
    plm_status_t st;
    switch (what) {
    case 0:
        UNDER_TEST(st, plm_solve_proximal_gradient_backtracking(f, l1, x, 2.0, 0.5, 2, &eps, 1, 0.8, 1, PLM_ACCEL_FISTA,
                                                                1e-12, &last, NULL));
        break;
    case 1: UNDER_TEST(st, plm_solve_primal_dual(f, l1, op, x, y, 1, &tau, 1, &mu, 1, x, 0.5, 1, 0, NULL)); break;
    case 2: UNDER_TEST(st, plm_solve_primal_dual_stacked(f, l21, A, x, ys, 0, &tau, 1, &mu, 1, NULL, 1.0, 1, 1, NULL)); break;
    default:
        UNDER_TEST(st, plm_solve_adaptive_primal_dual(f, l1, op, x, NULL, 0.2, 0.3, 0.5, 0.95, 1.0, 1.5, 1, 1e-10, steps,
                                                      6, NULL));
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
static plm_status_t row_pg_backtracking(void) { return solver3_row(0); }
static plm_status_t row_primal_dual(void) { return solver3_row(1); }
static plm_status_t row_primal_dual_stacked(void) { return solver3_row(2); }
static plm_status_t row_adaptive_primal_dual(void) { return solver3_row(3); }

static plm_status_t row_prox_grad(void) { return prox2_row(0); }
static plm_status_t row_proximal_gradient(void) { return prox2_row(1); }
static plm_status_t row_admml2(void) { return prox2_row(2); }
static plm_status_t row_prox_apply_l2(void) { return prox2_row(3); }

static const row_t ROWS[] = {
    {"plm_comm_create", "duplicate and agree", row_comm_create},
    {"plm_comm_create_f", "from a Fortran handle", row_comm_create_f},
    {"plm_comm_split", "two colours", row_comm_split},
    {"plm_array_create", "split along axis 1", row_array_create},
    {"plm_array_create_ex", "custom split, a new mask", row_array_create_ex},
    {"plm_layout_create", "a new mask", row_layout_create},
    {"plm_array_restore_local_write", "BROADCAST", row_restore_local_write},
    {"plm_array_fill", "BROADCAST", row_fill},
    {"plm_array_dot", "masked", row_dot},
    {"plm_array_norm", "BROADCAST, ord 3", row_norm},
    {"plm_array_norm_axis", "along a local axis", row_norm_axis_local},
    {"plm_array_norm_axis", "along the distributed axis, many partials", row_norm_axis_along},
    {"plm_array_asarray", "interleaved blocks", row_asarray},
    {"plm_array_set_global", "BROADCAST", row_set_global},
    {"plm_array_gather_to", "to the last rank", row_gather_to},
    {"plm_array_scatter_from", "from rank 0", row_scatter_from},
    {"plm_array_add_ghost_cells", "strided slabs", row_add_ghost_cells},
    {"plm_array_redistribute", "axis 0 to 1", row_redistribute},
    {"plm_stacked_dot", "SCATTER and BROADCAST members", row_stacked_dot},
    {"plm_stacked_norm", "ord 1", row_stacked_norm},
    {"plm_stacked_asarray", "two members", row_stacked_asarray},
    {"plm_op_blockdiag", "with a new mask", row_op_blockdiag},
    {"plm_op_vstack", "one dense part", row_op_vstack},
    {"plm_op_hstack", "one dense part", row_op_hstack},
    {"plm_op_broadcast", "a dense block", row_op_broadcast},
    {"plm_op_matrix_mult", "SUMMA", row_matrix_mult_summa},
    {"plm_op_matrix_mult", "block", row_matrix_mult_block},
    {"plm_op_first_derivative", "centered order 5, edge", row_first_derivative},
    {"plm_op_second_derivative", "custom split", row_second_derivative},
    {"plm_op_laplacian", "two axes", row_laplacian},
    {"plm_op_gradient", "forward", row_gradient},
    {"plm_op_halo", "width 1", row_halo},
    {"plm_op_nonstationary_convolve1d", "axis 0, thin split", row_nonstat},
    {"plm_op_apply", "block-diagonal", row_apply_block},
    {"plm_op_apply", "float64 Laplacian on complex64 data (parts, widened)", row_apply_complex_on_real},
    {"plm_op_apply_adjoint", "float64 Laplacian on float32 data (widened)", row_apply_widened},
    {"plm_array_dot", "float64 with float32 (widened)", row_dot_mixed},
    {"plm_op_apply_adjoint", "block-diagonal with a callback block", row_apply_callback},
    {"plm_op_apply", "product A^H A", row_apply_product},
    {"plm_op_apply_adjoint", "sum of Laplacians", row_apply_sum},
    {"plm_op_apply_adjoint", "vstack (allreduce)", row_apply_vstack_adj},
    {"plm_op_apply", "Laplacian", row_apply_laplacian},
    {"plm_op_apply_adjoint", "3-D Laplacian", row_apply_laplacian3},
    {"plm_op_apply", "halo", row_apply_halo},
    {"plm_op_apply", "SUMMA", row_apply_summa},
    {"plm_op_apply_adjoint", "SUMMA", row_apply_summa_adj},
    {"plm_op_apply", "block MatrixMult", row_apply_blockmm},
    {"plm_op_apply_adjoint", "transpose of a Laplacian", row_apply_transpose},
    {"plm_op_apply", "cube of a Laplacian", row_apply_power},
    {"plm_op_apply", "non-stationary convolution, thin split", row_apply_nonstat},
    {"plm_op_apply_adjoint", "non-stationary convolution, thin split", row_apply_nonstat_adj},
    {"plm_op_apply_stacked", "stacked block-diagonal", row_apply_stacked},
    {"plm_op_apply_adjoint_stacked", "stacked vstack", row_apply_adjoint_stacked},
    {"plm_op_dottest", "SUMMA", row_dottest},
    {"plm_power_iteration", "Laplacian", row_power_iteration},
    {"plm_solve_cg", "A^H A", row_solve_cg},
    {"plm_solve_cgls", "Laplacian, damped", row_solve_cgls},
    {"plm_solve_cgls", "stop callback on rank 0 only", row_solve_cgls_callback},
    {"plm_solve_ista", "decay, monitorres", row_solve_ista},
    {"plm_solve_fista", "automatic step, half threshold", row_solve_fista},
    {"plm_solve_cgls_stacked", "stacked vstack", row_cgls_stacked},
    {"plm_solve_cg_stacked", "stacked block-diagonal", row_cg_stacked},
    {"plm_prox_apply", "SCATTER, out of place", row_prox_apply},
    {"plm_prox_value", "BROADCAST", row_prox_value},
    {"plm_prox_value_stacked", "Box, SCATTER and BROADCAST members", row_prox_value_stacked_box},
    {"plm_prox_apply_stacked", "user prox, out of place", row_prox_apply_stacked_user},
    {"plm_prox_apply_stacked", "L1, out of place", row_prox_apply_stacked_l1},
    {"plm_solve_admml2_stacked", "L1, 0.5 [L; L] (a stacked composite), gfirst", row_admml2_stacked},
    {"plm_op_fredholm1", "uneven slices, G^H kept", row_fredholm1},
    {"plm_op_apply_adjoint", "Fredholm1", row_apply_fredholm_adj},
#ifdef PLM_TEST_WITH_FFTW
    {"plm_op_mdc", "twosided, uneven frequencies", row_mdc},
    {"plm_op_apply", "MDC", row_apply_mdc},
    {"plm_op_apply_adjoint", "MDC", row_apply_mdc_adj},
#endif
    {"plm_op_fftnd", "real, last axis 0", row_fftnd},
    {"plm_op_apply", "fftnd, every axis, shifts", row_apply_fftnd},
    {"plm_op_apply_adjoint", "real fftnd, shifts", row_apply_adjoint_fftnd_real},
    {"plm_op_fftnd_ex", "real, last axis 0, output split along axis 0", row_fftnd_ex},
    {"plm_op_fftnd_plan", "real, nffts, measured, output along axis 0", row_fftnd_plan},
    {"plm_op_apply", "1-D fftnd, real, nffts, shifts; then its adjoint", row_apply_fftnd_1d},
    {"plm_fft_wisdom_export", "length only", row_fft_wisdom_export},
    {"plm_fft_wisdom_import", "the exported text", row_fft_wisdom_import},
    {"plm_op_apply", "fftnd, output split along axis 0 (two exchanges)", row_apply_fftnd_rows},
    {"plm_op_apply_adjoint", "real fftnd, output split along axis 0", row_apply_adjoint_fftnd_rows},
    {"plm_array_fftshift", "every axis, distributed one included", row_fftshift},
    {"plm_prox_apply", "L2 with an operator, inner CG", row_prox_apply_l2},
    {"plm_prox_grad", "L2 with an operator", row_prox_grad},
    {"plm_solve_proximal_gradient", "L2 + L1, fista, eta < 1, tol", row_proximal_gradient},
    {"plm_solve_admml2", "L1, gfirst", row_admml2},
    {"plm_prox_dual", "precomposition with an array b", row_prox_dual},
    {"plm_prox_dual_stacked", "L21", row_prox_dual_stacked},
    {"plm_prox_gradient", "chain of L1 and Box (Moreau)", row_prox_gradient},
    {"plm_prox_gradient_stacked", "L21 (Moreau)", row_prox_gradient_stacked},
    {"plm_solve_proximal_gradient_backtracking", "L2 + L1, fista, eta < 1, tol", row_pg_backtracking},
    {"plm_solve_primal_dual", "L2 + L1, y0, z, not gfirst", row_primal_dual},
    {"plm_solve_primal_dual_stacked", "L2 + L21 on [B; B]", row_primal_dual_stacked},
    {"plm_solve_adaptive_primal_dual", "L2 + L1", row_adaptive_primal_dual},
};
#define NROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

/* Collective by the header, but with nothing to inject, and why. */
static const char *const EXEMPT[][2] = {
    {"plm_comm_destroy", "frees, with no agreement (NULL-safe); NCCL teardown meets in bounded reductions "
                         "that carry poisoning, not errors"},
#ifndef PLM_TEST_WITH_FFTW
    {"plm_op_mdc", "this build has no FFTW: MDC is refused (PLM_ERR_NOT_SUPPORTED, tests/ops/test_mdc.c)"},
#endif
};

/* A following collective works: a dot of a fresh array of ones. */
static void sane(const row_t *row)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER, NULL);
    double r = -1;
    const plm_status_t st = plm_array_dot(x, x, 0, &r, NULL);
    TU_EXPECT(st == PLM_SUCCESS && r == (double)nones(), "%s (%s): the dot after it failed: %d %g", row->fn,
              row->what, (int)st, r);
    plm_array_destroy(&x);
}

static void run_row(const row_t *row)
{
    /* PLM_TEST_FAULT_LAST=1: the last rank alone fails (the device rows, to halve their cost) */
    const int first = getenv("PLM_TEST_FAULT_LAST") ? tu_size - 1 : 0;
    for (int bad = first; bad < tu_size; bad++) {
        for (g_nth = 1;; g_nth++) {
            alarm((unsigned)tu_watchdog_s); /* each call under test gets the whole watchdog */
            TU_MARK();
            if (g_verbose && tu_rank == 0) fprintf(stderr, "%s (%s): allocation %lld fails on rank %d\n", row->fn,
                                                   row->what, g_nth, bad);
            g_bad = bad;
            plm_clear_last_error();
            const plm_status_t st = row->run();
            int mine[3] = {(int)st, g_left > 0, (int)g_viol}, lo[3], hi[3];
            MPI_Allreduce(mine, lo, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(mine, hi, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            const int done = hi[1] == 1; /* the call made fewer than N allocations on the bad rank */
            TU_EXPECT(lo[0] == hi[0], "%s (%s): allocation %lld failing on rank %d: statuses differ (%d..%d); "
                      "here %d: %s", row->fn, row->what, g_nth, bad, lo[0], hi[0], (int)st, plm_last_error());
            if (done) {
                TU_EXPECT(st == PLM_SUCCESS, "%s (%s): fails without an injected fault: %d %s", row->fn, row->what,
                          (int)st, plm_last_error());
                TU_EXPECT(g_viol == 0, "%s (%s): %lld allocation(s) after an agreement on rank %d "
                          "(PLM_TEST_TRACE_ALLOC=1 shows where)", row->fn, row->what, g_viol, tu_rank);
            } else if (lo[0] == hi[0] && st != PLM_SUCCESS) {
                TU_EXPECT(st == PLM_ERR_OUT_OF_MEMORY, "%s (%s): allocation %lld failing on rank %d gave %d: %s",
                          row->fn, row->what, g_nth, bad, (int)st, plm_last_error());
            }
            sane(row);
            if (done || g_nth >= 20000 || tu_fail > 0) break;
        }
        if (tu_fail > 0) break;
    }
    g_bad = -1;
}

static void test_rows(void **state)
{
    (void)state;
    G2[0] = 4 * tu_size + 1;
    const char *only = getenv("PLM_TEST_ROW"); /* one entry point, for debugging */
    for (int i = 0; i < NROWS && tu_fail == 0; i++)
        if (!only || strcmp(only, ROWS[i].fn) == 0) run_row(&ROWS[i]);
    TU_DONE();
}

/* ---- every collective function of the header has a row ------------------------------------ */

static void test_every_collective_has_a_row(void **state)
{
    (void)state;
    const char *rows[NROWS], *exempt[sizeof EXEMPT / sizeof EXEMPT[0]];
    for (int i = 0; i < NROWS; i++) rows[i] = ROWS[i].fn;
    for (size_t i = 0; i < sizeof EXEMPT / sizeof EXEMPT[0]; i++) exempt[i] = EXEMPT[i][0];
    hs_table_t t = {rows, exempt, NROWS, (int)(sizeof EXEMPT / sizeof EXEMPT[0]), "tests/fault/test_fault_table.c", 0};
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
    tu_watchdog_s = 60; /* per call under test (run_row re-arms it) */
    if (getenv("PLM_TEST_TRACE_ALLOC")) plm_test_trace_violations(1);
    g_verbose = getenv("PLM_TEST_FAULT_VERBOSE") != NULL;
    return plm_run_group_tests_mpi(tests);
}
