/* Stencil operators through the public API, at every rank count, against dense global matrices
 * built here in float64 from PyLops' formulas (written as PyLops writes them, on whole lines):
 * - FirstDerivative (forward, backward, centered order 3 and 5, edge on and off) and
 *   SecondDerivative along every axis of 1-D, 2-D and 3-D models, every dtype, with the default
 *   split, one-row blocks, an empty block and fewer rows than ranks: forward, adjoint and dot test;
 * - models of more dimensions than PLM_MAX_NDIM (the kernel's plans merge the axes without a
 *   stencil), and the Laplacian that cannot fit a plan;
 * - Laplacian over several axis sets with weights and samplings; Gradient as a stacked operator;
 * - NaN and Inf reach exactly the outputs whose stencil touches them; huge and tiny values;
 * - Halo on 1-D, 2-D and 3-D process grids with scalar, per-axis and per-side widths, against
 *   the blocks of the global array;
 * - bad arguments (kinds, orders, short axes, splits, halos that do not match) fail on every rank. */
#include "ops/ops_test_util.h"

/* ---- PyLops' formulas on one line of n points ------------------------------------------------ */

static void serial_line(int deriv, int kind, int order, int edge, int64_t n, const double complex *x,
                        double complex *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = 0;
    if (deriv == 1 && kind == PLM_DERIV_FORWARD) {
        for (int64_t i = 0; i < n - 1; i++) y[i] = x[i + 1] - x[i];
    } else if (deriv == 1 && kind == PLM_DERIV_BACKWARD) {
        for (int64_t i = 1; i < n; i++) y[i] = x[i] - x[i - 1];
    } else if (deriv == 1 && order == 3) {
        for (int64_t i = 1; i < n - 1; i++) y[i] = 0.5 * (x[i + 1] - x[i - 1]);
        if (edge) {
            y[0] = x[1] - x[0];
            y[n - 1] = x[n - 1] - x[n - 2];
        }
    } else if (deriv == 1) {
        for (int64_t i = 2; i < n - 2; i++)
            y[i] = x[i - 2] / 12.0 - 2.0 * x[i - 1] / 3.0 + 2.0 * x[i + 1] / 3.0 - x[i + 2] / 12.0;
        if (edge) {
            y[0] = x[1] - x[0];
            y[1] = 0.5 * (x[2] - x[0]);
            y[n - 2] = 0.5 * (x[n - 1] - x[n - 3]);
            y[n - 1] = x[n - 1] - x[n - 2];
        }
    } else if (kind == PLM_DERIV_FORWARD) {
        for (int64_t i = 0; i < n - 2; i++) y[i] = x[i + 2] - 2.0 * x[i + 1] + x[i];
    } else if (kind == PLM_DERIV_BACKWARD) {
        for (int64_t i = 2; i < n; i++) y[i] = x[i] - 2.0 * x[i - 1] + x[i - 2];
    } else {
        for (int64_t i = 1; i < n - 1; i++) y[i] = x[i + 1] - 2.0 * x[i] + x[i - 1];
        if (edge) {
            y[0] = x[0] - 2.0 * x[1] + x[2];
            y[n - 1] = x[n - 3] - 2.0 * x[n - 2] + x[n - 1];
        }
    }
}

typedef struct {
    int deriv, kind, order, edge;
} stencil_t;

static const stencil_t FIRST[] = {{1, PLM_DERIV_FORWARD, 3, 0},  {1, PLM_DERIV_BACKWARD, 3, 0},
                                  {1, PLM_DERIV_CENTERED, 3, 0}, {1, PLM_DERIV_CENTERED, 3, 1},
                                  {1, PLM_DERIV_CENTERED, 5, 0}, {1, PLM_DERIV_CENTERED, 5, 1}};
static const stencil_t SECOND[] = {{2, PLM_DERIV_FORWARD, 3, 0},
                                   {2, PLM_DERIV_BACKWARD, 3, 0},
                                   {2, PLM_DERIV_CENTERED, 3, 0},
                                   {2, PLM_DERIV_CENTERED, 3, 1}};
#define NFIRST ((int)(sizeof FIRST / sizeof FIRST[0]))
#define NSECOND ((int)(sizeof SECOND / sizeof SECOND[0]))

/* The smallest axis on which PyLops' formulas stay inside the line. */
static int64_t min_points(stencil_t s)
{
    if (s.deriv == 1) return s.edge ? (s.order == 5 ? 3 : 2) : 1;
    return s.kind == PLM_DERIV_CENTERED && s.edge ? 3 : 1;
}

/* G (N x N, N the model size) += scale * (the stencil along axis a), from serial_line on unit
 * vectors of one line. */
static void add_axis(double complex *G, int ndim, const int64_t *dims, int a, stencil_t s, double scale)
{
    const int64_t n = dims[a], N = tu_prod(dims, 0, ndim), inner = tu_prod(dims, a + 1, ndim);
    const int64_t outer = N / (n * inner);
    double complex *e = calloc((size_t)n, sizeof *e), *col = calloc((size_t)n, sizeof *col);
    for (int64_t j = 0; j < n; j++) {
        e[j] = 1;
        serial_line(s.deriv, s.kind, s.order, s.edge, n, e, col);
        e[j] = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < inner; in++)
                for (int64_t i = 0; i < n; i++)
                    G[((o * n + i) * inner + in) * N + (o * n + j) * inner + in] += scale * col[i];
    }
    free(e);
    free(col);
}

typedef struct {
    int ndim;
    int64_t dims[10];
} shape_t;

static const shape_t SHAPES[] = {{1, {13}}, {1, {3}}, {2, {7, 5}}, {2, {2, 3}}, {3, {5, 3, 4}}};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static plm_status_t make_deriv(stencil_t s, plm_dtype_t dt, shape_t sh, int64_t rows, int axis, double sampling,
                               plm_op_t *op)
{
    if (s.deriv == 1)
        return plm_op_first_derivative(tu_comm, dt, sh.ndim, sh.dims, rows, axis, sampling, s.kind, s.order, s.edge,
                                       op);
    return plm_op_second_derivative(tu_comm, dt, sh.ndim, sh.dims, rows, axis, sampling, s.kind, s.edge, op);
}

static void check_derivatives(const stencil_t *set, int nset)
{
    const double sampling = 0.7;
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < NSHAPES; k++)
            for (int split = 0; split < NROW_SPLITS; split++)
                for (int a = 0; a < SHAPES[k].ndim; a++)
                    for (int c = 0; c < nset; c++) {
                        const plm_dtype_t dt = TU_DTYPES[t];
                        const shape_t sh = SHAPES[k];
                        if (sh.dims[a] < min_points(set[c])) continue;
                        const int64_t rows = rows_for(split, sh.dims[0], tu_size, tu_rank);
                        const int axis = (a + c) % 2 ? a - sh.ndim : a; /* negative axes too */
                        plm_op_t op = NULL;
                        TU_OK(make_deriv(set[c], dt, sh, rows, axis, sampling, &op));
                        const int64_t N = tu_prod(sh.dims, 0, sh.ndim);
                        double complex *G = calloc((size_t)(N * N), sizeof *G);
                        add_axis(G, sh.ndim, sh.dims, a, set[c], 1.0 / pow(sampling, set[c].deriv));
                        char what[160];
                        snprintf(what, sizeof what, "d%d kind %d order %d edge %d, %dD dims[0] %lld, axis %d, %s split",
                                 set[c].deriv, set[c].kind, set[c].order, set[c].edge, sh.ndim, (long long)sh.dims[0],
                                 axis, ROW_SPLIT_NAMES[split]);
                        check_against(op, G, N, N, dt, what);
                        free(G);
                        plm_op_destroy(&op);
                    }
}

static void test_first_derivative(void **state)
{
    (void)state;
    check_derivatives(FIRST, NFIRST);
    TU_DONE();
}

static void test_second_derivative(void **state)
{
    (void)state;
    check_derivatives(SECOND, NSECOND);
    TU_DONE();
}

/* ---- Laplacian and Gradient ----------------------------------------------------------------- */

typedef struct {
    int k;        /* index into SHAPES */
    int naxes;
    int axes[3];
} axes_t;

static const axes_t LAPLACE[] = {{2, 2, {0, 1}}, {2, 1, {-1}}, {2, 1, {0}},       {4, 3, {0, 1, 2}},
                                 {4, 2, {1, 2}}, {4, 2, {-3, -1}}, {3, 2, {-2, -1}}};
#define NLAPLACE ((int)(sizeof LAPLACE / sizeof LAPLACE[0]))

static void test_laplacian(void **state)
{
    (void)state;
    const double weights[3] = {1.5, -0.5, 2.0}, sampling[3] = {0.7, 1.3, 0.9};
    for (int t = 0; t < 4; t++)
        for (int l = 0; l < NLAPLACE; l++)
            for (int split = 0; split < NROW_SPLITS; split++)
                for (int c = 0; c < NSECOND; c++) {
                    const plm_dtype_t dt = TU_DTYPES[t];
                    const shape_t sh = SHAPES[LAPLACE[l].k];
                    const axes_t ax = LAPLACE[l];
                    int fits = 1;
                    for (int i = 0; i < ax.naxes; i++) fits &= sh.dims[tu_axis(ax.axes[i], sh.ndim)] >= min_points(SECOND[c]);
                    if (!fits) continue;
                    const int64_t rows = rows_for(split, sh.dims[0], tu_size, tu_rank);
                    plm_op_t op = NULL;
                    const int plain = (l + c) % 2; /* NULL weights and sampling mean 1 */
                    TU_OK(plm_op_laplacian(tu_comm, dt, sh.ndim, sh.dims, rows, ax.naxes, ax.axes, plain ? NULL : weights,
                                           plain ? NULL : sampling, SECOND[c].kind, SECOND[c].edge, &op));
                    const int64_t N = tu_prod(sh.dims, 0, sh.ndim);
                    double complex *G = calloc((size_t)(N * N), sizeof *G);
                    for (int i = 0; i < ax.naxes; i++)
                        add_axis(G, sh.ndim, sh.dims, tu_axis(ax.axes[i], sh.ndim), SECOND[c],
                                 plain ? 1.0 : weights[i] / (sampling[i] * sampling[i]));
                    char what[128];
                    snprintf(what, sizeof what, "laplacian set %d kind %d edge %d, %s split", l, SECOND[c].kind,
                             SECOND[c].edge, ROW_SPLIT_NAMES[split]);
                    check_against(op, G, N, N, dt, what);
                    free(G);
                    plm_op_destroy(&op);
                }
    TU_DONE();
}

/* Gradient: member i of the forward is the first derivative along axis i; the adjoint sums. */
static void test_gradient(void **state)
{
    (void)state;
    const double sampling[3] = {0.7, 1.3, 0.9};
    const int shapes[] = {0, 2, 4};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 3; k++)
            for (int split = 0; split < NROW_SPLITS; split++)
                for (int c = 0; c < 4; c++) {
                    const plm_dtype_t dt = TU_DTYPES[t];
                    const shape_t sh = SHAPES[shapes[k]];
                    const stencil_t s = FIRST[c];
                    const int64_t rows = rows_for(split, sh.dims[0], tu_size, tu_rank);
                    plm_op_t op = NULL;
                    TU_OK(plm_op_gradient(tu_comm, dt, sh.ndim, sh.dims, rows, c % 2 ? sampling : NULL, s.kind,
                                          s.edge, &op));
                    const int64_t N = tu_prod(sh.dims, 0, sh.ndim), M = sh.ndim * N;
                    double complex *G = calloc((size_t)(M * N > 0 ? M * N : 1), sizeof *G);
                    for (int a = 0; a < sh.ndim; a++)
                        add_axis(G + a * N * N, sh.ndim, sh.dims, a, s, c % 2 ? 1.0 / sampling[a] : 1.0);
                    plm_array_t xm[1], ym[3], vm[3], um[1];
                    int nx = 0, ny = 0;
                    plm_stacked_t x = stack_on(op, 0, dt, 1, xm, &nx), y = stack_on(op, 1, dt, 2, ym, &ny);
                    plm_stacked_t v = stack_on(op, 1, dt, 3, vm, &ny), u = stack_on(op, 0, dt, 4, um, &nx);
                    TU_EXPECT(nx == 1 && ny == sh.ndim, "gradient parts %d, %d", nx, ny);
                    TU_CHECK_OK(plm_op_apply_stacked(op, x, y));
                    TU_CHECK_OK(plm_op_apply_adjoint_stacked(op, v, u));
                    double complex *xg = gathered_stack(x, dt, N), *vg = gathered_stack(v, dt, M);
                    double complex *got = gathered_stack(y, dt, M), *want = matvec(G, M, N, xg, 0);
                    expect_close(got, want, M, dt, "gradient forward");
                    free(got);
                    free(want);
                    got = gathered_stack(u, dt, N);
                    want = matvec(G, M, N, vg, 1);
                    expect_close(got, want, N, dt, "gradient adjoint");
                    free(got);
                    free(want);
                    free(xg);
                    free(vg);
                    plm_stacked_destroy(&x);
                    plm_stacked_destroy(&y);
                    plm_stacked_destroy(&v);
                    plm_stacked_destroy(&u);
                    for (int i = 0; i < nx; i++) plm_array_destroy(&xm[i]), plm_array_destroy(&um[i]);
                    for (int i = 0; i < ny; i++) plm_array_destroy(&ym[i]), plm_array_destroy(&vm[i]);
                    free(G);
                    plm_op_destroy(&op);
                }
    TU_DONE();
}

/* A 10-D model (PLM_MAX_NDIM is 8): derivatives along the first, a middle and the last axis, a
 * Laplacian on three axes and a gradient; a Laplacian on every axis of a 9-D model needs more
 * dimensions than a plan has and is refused on every rank. */
static void test_many_axes(void **state)
{
    (void)state;
    const shape_t sh = {10, {5, 1, 2, 1, 3, 1, 1, 2, 1, 3}};
    const int64_t N = tu_prod(sh.dims, 0, sh.ndim);
    for (int split = 0; split < NROW_SPLITS; split++) {
        const int64_t rows = rows_for(split, sh.dims[0], tu_size, tu_rank);
        const int axes[3] = {0, 4, 9};
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < NFIRST + NSECOND; c++) {
                const stencil_t s = c < NFIRST ? FIRST[c] : SECOND[c - NFIRST];
                if (sh.dims[axes[i]] < min_points(s)) continue;
                plm_op_t op = NULL;
                TU_OK(make_deriv(s, PLM_FLOAT64, sh, rows, axes[i], 0.7, &op));
                double complex *G = calloc((size_t)(N * N), sizeof *G);
                add_axis(G, sh.ndim, sh.dims, axes[i], s, 1.0 / pow(0.7, s.deriv));
                char what[128];
                snprintf(what, sizeof what, "10-D, d%d kind %d order %d edge %d, axis %d, %s split", s.deriv, s.kind,
                         s.order, s.edge, axes[i], ROW_SPLIT_NAMES[split]);
                check_against(op, G, N, N, PLM_FLOAT64, what);
                free(G);
                plm_op_destroy(&op);
            }
        const int lap[3] = {7, 0, -1};
        const double weights[3] = {1.5, -0.5, 2.0};
        plm_op_t op = NULL;
        TU_OK(plm_op_laplacian(tu_comm, PLM_COMPLEX128, sh.ndim, sh.dims, rows, 3, lap, weights, NULL,
                               PLM_DERIV_CENTERED, 0, &op));
        double complex *G = calloc((size_t)(N * N), sizeof *G);
        for (int i = 0; i < 3; i++) add_axis(G, sh.ndim, sh.dims, tu_axis(lap[i], sh.ndim), SECOND[2], weights[i]);
        check_against(op, G, N, N, PLM_COMPLEX128, "10-D Laplacian on axes 7, 0, -1");
        free(G);
        plm_op_destroy(&op);
        TU_OK(plm_op_gradient(tu_comm, PLM_FLOAT32, sh.ndim, sh.dims, rows, NULL, PLM_DERIV_FORWARD, 0, &op));
        plm_op_destroy(&op);
    }
    const int64_t d9[9] = {3, 3, 3, 3, 3, 3, 3, 3, 3};
    const int all[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    plm_op_t op = NULL;
    TU_EXPECT_ERR(plm_op_laplacian(tu_comm, PLM_FLOAT64, 9, d9, -1, 9, all, NULL, NULL, PLM_DERIV_CENTERED, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT(op == NULL, "a refused Laplacian left an operator");
    TU_DONE();
}

/* ---- edge data ------------------------------------------------------------------------------- */

/* yg = op xg for float64 global vectors of n values (the same on every rank). */
static void apply_global(plm_const_op_t op, const double *xg, double *yg, int64_t n)
{
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    TU_CHECK_OK(plm_array_set_global(x, xg, tu_bytes(PLM_FLOAT64, n)));
    TU_CHECK_OK(plm_op_apply(op, x, y));
    TU_CHECK_OK(plm_array_asarray(y, 0, yg, tu_bytes(PLM_FLOAT64, n)));
    plm_array_destroy(&x);
    plm_array_destroy(&y);
}

/* NaN and Inf at one point reach exactly the outputs whose row touches it; huge and tiny
 * values scale the result without overflow or flush. */
static void test_edge_values(void **state)
{
    (void)state;
    const shape_t sh = {1, {13}};
    const int64_t N = 13, bad = 6;
    for (int c = 0; c < NFIRST; c++)
        for (int split = 0; split < NROW_SPLITS; split++) {
            const int64_t rows = rows_for(split, N, tu_size, tu_rank);
            plm_op_t op = NULL;
            TU_OK(make_deriv(FIRST[c], PLM_FLOAT64, sh, rows, 0, 1.0, &op));
            double complex *G = calloc((size_t)(N * N), sizeof *G);
            add_axis(G, 1, sh.dims, 0, FIRST[c], 1.0);
            double xg[13], yg[13];
            const double special[2] = {NAN, INFINITY};
            for (int k = 0; k < 2; k++) {
                for (int64_t i = 0; i < N; i++) xg[i] = i == bad ? special[k] : 1.0 + 0.1 * (double)i;
                apply_global(op, xg, yg, N);
                for (int64_t i = 0; i < N; i++) {
                    const int touched = creal(G[i * N + bad]) != 0;
                    TU_EXPECT(touched == !isfinite(yg[i]), "stencil %d, %s at %lld: y[%lld] = %g", c,
                              k ? "Inf" : "NaN", (long long)bad, (long long)i, yg[i]);
                }
            }
            const double scales[2] = {1e300, 1e-300};
            for (int k = 0; k < 2; k++) {
                double complex xc[13], *want;
                for (int64_t i = 0; i < N; i++) xc[i] = xg[i] = scales[k] * sin(0.9 * (double)i);
                want = matvec(G, N, N, xc, 0);
                apply_global(op, xg, yg, N);
                double complex got[13];
                for (int64_t i = 0; i < N; i++) got[i] = yg[i];
                expect_close(got, want, N, PLM_FLOAT64, k ? "tiny values" : "huge values");
                free(want);
            }
            free(G);
            plm_op_destroy(&op);
        }
    TU_DONE();
}

/* ---- Halo ------------------------------------------------------------------------------------ */

/* Rank r's block of the grid (row-major coordinates; ceil-sized blocks, trailing ones smaller). */
static void halo_block(int ndim, const int64_t *dims, const int *grid, int r, int64_t *lo, int64_t *hi)
{
    int rest = r;
    for (int d = ndim - 1; d >= 0; d--) {
        const int c = rest % grid[d];
        rest /= grid[d];
        const int64_t b = (dims[d] + grid[d] - 1) / grid[d];
        lo[d] = c * b < dims[d] ? c * b : dims[d];
        hi[d] = (c + 1) * b < dims[d] ? (c + 1) * b : dims[d];
    }
}

/* (minus, plus) widths of rank r as plm_op_halo reads them. */
static void halo_widths(int ndim, const int *grid, int r, int nh, const int64_t *h, int64_t *w)
{
    int coord[3], rest = r;
    for (int d = ndim - 1; d >= 0; d--) {
        coord[d] = rest % grid[d];
        rest /= grid[d];
    }
    for (int d = 0; d < ndim; d++)
        for (int s = 0; s < 2; s++) {
            int64_t v = nh == 1 ? h[0] : nh == ndim ? h[d] : h[2 * d + s];
            const int edge = s ? coord[d] == grid[d] - 1 : coord[d] == 0;
            if (nh == 1 && edge) v = 0;
            w[2 * d + s] = v;
        }
}

/* The global vectors of the halo: the cores of every rank in rank order (x), and their
 * extents with the ghost cells from the global array or zero past its ends (y). */
static void halo_reference(int ndim, const int64_t *dims, const int *grid, int nh, const int64_t *h,
                           const double complex *A, double complex *x, double complex *y, int64_t *nx, int64_t *ny)
{
    *nx = *ny = 0;
    for (int r = 0; r < tu_size; r++) {
        int64_t lo[3], hi[3], w[6], ext[3] = {1, 1, 1}, core[3] = {1, 1, 1};
        halo_block(ndim, dims, grid, r, lo, hi);
        halo_widths(ndim, grid, r, nh, h, w);
        for (int d = 0; d < ndim; d++) {
            core[d] = hi[d] - lo[d];
            ext[d] = core[d] + w[2 * d] + w[2 * d + 1];
        }
        const int64_t next = ext[0] * (ndim > 1 ? ext[1] : 1) * (ndim > 2 ? ext[2] : 1);
        for (int64_t k = 0; k < next; k++) {
            int64_t idx[3] = {0, 0, 0}, rest = k, g = 0, inside = 1, in_core = 1;
            for (int d = ndim - 1; d >= 0; d--) {
                idx[d] = rest % ext[d];
                rest /= ext[d];
            }
            for (int d = 0; d < ndim; d++) {
                const int64_t gi = lo[d] + idx[d] - w[2 * d];
                inside &= gi >= 0 && gi < dims[d];
                in_core &= idx[d] >= w[2 * d] && idx[d] < w[2 * d] + core[d];
                g = g * dims[d] + gi;
            }
            y[(*ny)++] = inside ? A[g] : 0;
            if (in_core) x[(*nx)++] = A[g];
        }
    }
}

typedef struct {
    int ndim;
    int64_t dims[3];
    int grid[3]; /* grid[0] = 0: the default (all ranks on the last axis) */
    int nh;
    int64_t h[6];
} halo_case_t;

static void check_halo(const halo_case_t *hc, plm_dtype_t dt)
{
    int grid[3];
    for (int d = 0; d < hc->ndim; d++) grid[d] = hc->grid[0] ? hc->grid[d] : (d == hc->ndim - 1 ? tu_size : 1);
    plm_op_t op = NULL;
    TU_OK(plm_op_halo(tu_comm, dt, hc->ndim, hc->dims, hc->grid[0] ? grid : NULL, hc->nh, hc->h, &op));
    const int64_t N = tu_prod(hc->dims, 0, hc->ndim);
    double complex *A = calloc((size_t)N, sizeof *A), *x = calloc((size_t)N + 1, sizeof *x);
    double complex *y = calloc((size_t)(64 * N), sizeof *y);
    for (int64_t i = 0; i < N; i++) A[i] = gval(i, 5, dt);
    int64_t nx = 0, ny = 0;
    halo_reference(hc->ndim, hc->dims, grid, hc->nh, hc->h, A, x, y, &nx, &ny);
    int64_t rows = 0, cols = 0;
    TU_OK(plm_op_shape(op, &rows, &cols));
    TU_EXPECT(rows == ny && cols == nx, "halo shape %lld x %lld, want %lld x %lld", (long long)rows, (long long)cols,
              (long long)ny, (long long)nx);
    plm_array_t xa = NULL, ya = NULL, back = NULL;
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &xa));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &ya));
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &back));
    void *raw = calloc((size_t)ny + 1, tu_esize(dt));
    for (int64_t i = 0; i < nx; i++) tu_set(dt, raw, i, creal(x[i]), cimag(x[i]));
    TU_CHECK_OK(plm_array_set_global(xa, raw, tu_bytes(dt, nx)));
    TU_CHECK_OK(plm_op_apply(op, xa, ya));
    double complex *got = gathered(ya, dt, ny);
    expect_close(got, y, ny, dt, "halo forward");
    free(got);
    TU_CHECK_OK(plm_op_apply_adjoint(op, ya, back));
    got = gathered(back, dt, nx);
    expect_close(got, x, nx, dt, "halo adjoint (core extraction)");
    free(got);
    free(raw);
    free(A);
    free(x);
    free(y);
    plm_array_destroy(&xa);
    plm_array_destroy(&ya);
    plm_array_destroy(&back);
    plm_op_destroy(&op);
}

static void test_halo(void **state)
{
    (void)state;
    const int P = tu_size;
    const int p2a = P % 2 == 0 ? 2 : 1, p2b = P / p2a; /* a 2-D grid: 2 x P/2 when P is even */
    const halo_case_t cases[] = {
        {1, {4 * P + 3}, {0}, 1, {2}},
        {1, {4 * P + 3}, {0}, 2, {2, 2}},
        {2, {3 * P, 5}, {P, 1}, 1, {1}},
        {2, {3 * P, 5}, {P, 1}, 2, {2, 1}},
        {2, {6, 4 * P + 2}, {0}, 4, {1, 1, 2, 2}},
        {2, {4 * p2a + 1, 3 * p2b + 2}, {p2a, p2b}, 1, {1}},
        {2, {4 * p2a + 1, 3 * p2b + 2}, {p2a, p2b}, 4, {1, 1, 1, 1}},
        {3, {2 * p2a + 1, 3, 3 * p2b}, {p2a, 1, p2b}, 3, {1, 0, 2}},
        {3, {3 * P, 4, 2}, {P, 1, 1}, 1, {0}},
    };
    for (int t = 0; t < 4; t++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) check_halo(&cases[k], TU_DTYPES[t]);
    TU_DONE();
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    const int64_t d1[1] = {13}, d2[1] = {2};
    plm_op_t op = NULL;
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, -1, 0, 1.0, PLM_DERIV_CENTERED, 4, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, -1, 0, 1.0, (plm_deriv_kind_t)7, 3, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d2, -1, 0, 1.0, PLM_DERIV_CENTERED, 5, 1, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, -1, 1, 1.0, PLM_DERIV_FORWARD, 3, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_second_derivative(tu_comm, PLM_FLOAT64, 1, d1, -1, 0, 0.0, PLM_DERIV_FORWARD, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, (plm_dtype_t)9, 1, d1, -1, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &op),
                  PLM_ERR_INVALID_ARG);
    /* Rows that do not add up to dims[0]: every rank learns it from the gathered rows. */
    const int64_t rows = tu_split(13, tu_size, tu_rank) - (tu_rank == 0);
    TU_EXPECT_ERR(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, rows, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &op),
                  PLM_ERR_SIZE_MISMATCH);
    const int64_t d3[2] = {7, 5};
    const int twice[2] = {1, -1};
    TU_EXPECT_ERR(plm_op_laplacian(tu_comm, PLM_FLOAT64, 2, d3, -1, 2, twice, NULL, NULL, PLM_DERIV_CENTERED, 0, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_gradient(tu_comm, PLM_FLOAT64, 0, d3, -1, NULL, PLM_DERIV_CENTERED, 0, &op),
                  PLM_ERR_INVALID_ARG);
    /* Halo: a grid that does not hold the ranks, widths past a block, neighbours that disagree. */
    const int64_t hd[1] = {4 * tu_size}, one = 1, big = 5;
    const int bad_grid[1] = {tu_size + 1};
    TU_EXPECT_ERR(plm_op_halo(tu_comm, PLM_FLOAT64, 1, hd, bad_grid, 1, &one, &op), PLM_ERR_INVALID_ARG);
    if (tu_size > 1) {
        TU_EXPECT_ERR(plm_op_halo(tu_comm, PLM_FLOAT64, 1, hd, NULL, 1, &big, &op), PLM_ERR_INVALID_ARG);
        const int64_t w = tu_rank == 0 ? 2 : 1;
        TU_EXPECT_ERR(plm_op_halo(tu_comm, PLM_FLOAT64, 1, hd, NULL, 1, &w, &op), PLM_ERR_INVALID_ARG);
    }
    /* An apply on the wrong layout. */
    TU_OK(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, -1, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &op));
    plm_op_t other = NULL;
    TU_OK(plm_op_first_derivative(tu_comm, PLM_FLOAT64, 1, d1, rows_for(ROWS_THIN, 13, tu_size, tu_rank), 0, 1.0,
                                  PLM_DERIV_FORWARD, 3, 0, &other));
    plm_array_t x = NULL, y = NULL;
    TU_OK(plm_op_new_domain_array(other, PLM_MEMORY_HOST, &x));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    if (tu_size > 1) TU_EXPECT_ERR(plm_op_apply(op, x, y), PLM_ERR_SIZE_MISMATCH);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    plm_op_destroy(&other);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_first_derivative), TU_TEST(test_second_derivative), TU_TEST(test_laplacian),
        TU_TEST(test_gradient),         TU_TEST(test_many_axes),         TU_TEST(test_edge_values),
        TU_TEST(test_halo),             TU_TEST(test_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
