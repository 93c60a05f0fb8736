/* MatrixMult through the public API (plm_op_matrix_mult, kinds block and SUMMA, and
 * plm_matmul_blocks), at every rank count, against dense serial references built here in
 * complex double:
 * - plm_matmul_blocks against an independent computation of the grid and the ceil-rule
 *   blocks for 1..9 ranks and every grid, the blocks covering A, X and Y (once for SUMMA, once
 *   per grid row / column for the block kind), and its argument errors;
 * - forward Y = A X and adjoint X = A^H V of both kinds, every dtype, grid_rows 0 and every
 *   divisor of the rank count, shapes smaller than the grid, with empty blocks, and k, n or
 *   m = 0: every rank's block of the gathered result (every copy for the block kind) against
 *   the serial product, relative error <= 1e-12 (float64, complex128) or 1e-4 (single);
 * - the operator's shape and dtype, the masks of its domain and range, a dot test;
 * - block kind: dot and norm on the masked domain and range equal the values of one copy;
 * - bad or differing arguments fail on every rank with the same status and out cleared.
 * With --quick (the 6-rank registration): SUMMA at the default grid (2 x 3) only. */
#include <complex.h>

#include "array/array_test_util.h"

static int g_quick = 0;

typedef struct {
    int64_t n, k, m;
} shape_t;

/* Tiny and uneven shapes; (4,4,4) and (5,3,2) leave trailing blocks empty on 3 and 4 ranks. */
/* (24, 4, 3) and (3, 4, 24): thin, grid_rows 0 picks one grid column or one grid row for SUMMA. */
static const shape_t SHAPES[] = {{7, 5, 6}, {12, 9, 10}, {1, 1, 1}, {2, 1, 3}, {1, 4, 2},  {4, 4, 4},
                                 {5, 3, 2}, {3, 0, 4},   {0, 3, 2}, {3, 2, 0}, {24, 4, 3}, {3, 4, 24}};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

typedef struct {
    int grid[4];
    int64_t a[4], x[4], y[4];
} blk_t;

static const char *kind_name(plm_matmul_kind_t k) { return k == PLM_MATMUL_SUMMA ? "summa" : "block"; }
static int64_t nrows(const int64_t *v) { return v[1] - v[0]; }
static int64_t ncols(const int64_t *v) { return v[3] - v[2]; }
static int64_t bsize(const int64_t *v) { return nrows(v) * ncols(v); }

static blk_t blocks_of(plm_matmul_kind_t kind, int P, int rank, int grid_rows, shape_t s)
{
    blk_t b;
    memset(&b, 0, sizeof b);
    TU_CHECK_OK(plm_matmul_blocks(kind, P, rank, grid_rows, s.n, s.k, s.m, b.grid, b.a, b.x, b.y));
    return b;
}

/* ---- plm_matmul_blocks against an independent computation --------------------------------- */

/* grid_rows 0: the divisor R of P with the smallest cost in elements per rank (Q = P / R),
 * ties to the largest divisor not above sqrt(P), then to the smallest R (plm_matmul_blocks). */
static double grid_cost(plm_matmul_kind_t kind, int P, int R, shape_t s)
{
    const double Q = P / R, n = (double)s.n, k = (double)s.k, m = (double)s.m;
    if (kind == PLM_MATMUL_SUMMA) return n * k * (Q - 1) / (R * Q) + k * m * (R - 1) / (R * Q);
    return n * k / Q + (k + n) * m / R + (Q - 1) / Q * m / R * (n + 2 * k) / 2;
}

static int chosen_rows(plm_matmul_kind_t kind, int P, shape_t s)
{
    int best = 1;
    for (int r = 1; r <= P; r++)
        if (P % r == 0 && (int64_t)r * r <= P) best = r;
    for (int r = 1; r <= P; r++)
        if (P % r == 0 && grid_cost(kind, P, r, s) < grid_cost(kind, P, best, s) * (1 - 1e-12)) best = r;
    return best;
}

/* Block i of d split in q with blocks of ceil(d / q): [min(d, i b), min(d, (i + 1) b)). */
static void ceil_span(int64_t d, int q, int i, int64_t *lo, int64_t *hi)
{
    const int64_t b = (d + q - 1) / q;
    *lo = i * b < d ? i * b : d;
    *hi = (i + 1) * b < d ? (i + 1) * b : d;
}

static void expect_block(const int64_t *got, int64_t d0, int q0, int i0, int64_t d1, int q1, int i1,
                         const char *which, const char *what)
{
    int64_t want[4];
    ceil_span(d0, q0, i0, &want[0], &want[1]);
    ceil_span(d1, q1, i1, &want[2], &want[3]);
    TU_EXPECT(memcmp(got, want, sizeof want) == 0, "%s: %s block {%lld %lld %lld %lld} expected {%lld %lld %lld %lld}",
              what, which, (long long)got[0], (long long)got[1], (long long)got[2], (long long)got[3],
              (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
}

/* Every element of a rows x cols matrix lies in `times` of the blocks (v: P blocks of 4). */
static void expect_cover(const int64_t *v, int P, int64_t rows, int64_t cols, int times, const char *which,
                         const char *what)
{
    int *count = calloc((size_t)(rows * cols + 1), sizeof(int));
    for (int q = 0; q < P; q++)
        for (int64_t i = v[4 * q]; i < v[4 * q + 1]; i++)
            for (int64_t j = v[4 * q + 2]; j < v[4 * q + 3]; j++) count[i * cols + j]++;
    int64_t bad = 0;
    for (int64_t e = 0; e < rows * cols; e++) bad += count[e] != times;
    TU_EXPECT(bad == 0, "%s: %lld elements of %s not covered %d times", what, (long long)bad, which, times);
    free(count);
}

static void check_blocks_case(plm_matmul_kind_t kind, int P, int grid_rows, shape_t s)
{
    char what[128];
    snprintf(what, sizeof what, "blocks %s P %d grid_rows %d (%lld,%lld,%lld)", kind_name(kind), P, grid_rows,
             (long long)s.n, (long long)s.k, (long long)s.m);
    const int R = grid_rows ? grid_rows : chosen_rows(kind, P, s), Q = P / R;
    int64_t *all = calloc((size_t)(12 * P), sizeof(int64_t));
    for (int r = 0; r < P; r++) {
        blk_t b = blocks_of(kind, P, r, grid_rows, s);
        const int row = r / Q, col = r % Q;
        TU_EXPECT(b.grid[0] == R && b.grid[1] == Q && b.grid[2] == row && b.grid[3] == col,
                  "%s rank %d: grid {%d %d %d %d} expected {%d %d %d %d}", what, r, b.grid[0], b.grid[1], b.grid[2],
                  b.grid[3], R, Q, row, col);
        if (kind == PLM_MATMUL_SUMMA) {
            expect_block(b.a, s.n, R, row, s.k, Q, col, "A", what);
            expect_block(b.x, s.k, R, row, s.m, Q, col, "X", what);
            expect_block(b.y, s.n, R, row, s.m, Q, col, "Y", what);
        } else {
            expect_block(b.a, s.n, Q, col, s.k, 1, 0, "A", what);
            expect_block(b.x, s.k, 1, 0, s.m, R, row, "X", what);
            expect_block(b.y, s.n, 1, 0, s.m, R, row, "Y", what);
        }
        memcpy(all + 4 * r, b.a, sizeof b.a);
        memcpy(all + 4 * (P + r), b.x, sizeof b.x);
        memcpy(all + 4 * (2 * P + r), b.y, sizeof b.y);
    }
    const int summa = kind == PLM_MATMUL_SUMMA;
    expect_cover(all, P, s.n, s.k, summa ? 1 : R, "A", what);
    expect_cover(all + 4 * P, P, s.k, s.m, summa ? 1 : Q, "X", what);
    expect_cover(all + 8 * P, P, s.n, s.m, summa ? 1 : Q, "Y", what);
    free(all);
}

static void test_blocks(void **state)
{
    (void)state;
    const shape_t extra[] = {{0, 0, 0}, {9, 1, 13}, {3, 10, 1}};
    for (int P = 1; P <= 9; P++)
        for (int g = 0; g <= P; g++) {
            if (g && P % g) continue;
            for (int t = 0; t < 2; t++) {
                const plm_matmul_kind_t kind = t ? PLM_MATMUL_SUMMA : PLM_MATMUL_BLOCK;
                for (int i = 0; i < NSHAPES; i++) check_blocks_case(kind, P, g, SHAPES[i]);
                for (int i = 0; i < 3; i++) check_blocks_case(kind, P, g, extra[i]);
            }
        }
    /* The grids grid_rows 0 picks, literally: square products keep the squarest grid, thin
     * SUMMA products get one grid column (tall A, thin X and Y) or one grid row (wide X, Y). */
    const struct {
        plm_matmul_kind_t kind;
        int P;
        shape_t s;
        int rows;
    } picks[] = {{PLM_MATMUL_SUMMA, 2, {1024, 1024, 1024}, 1}, {PLM_MATMUL_SUMMA, 4, {1024, 1024, 1024}, 2},
                 {PLM_MATMUL_SUMMA, 6, {600, 600, 600}, 2},    {PLM_MATMUL_SUMMA, 2, {4096, 256, 64}, 2},
                 {PLM_MATMUL_SUMMA, 2, {8192, 64, 64}, 2},     {PLM_MATMUL_SUMMA, 4, {8192, 64, 64}, 4},
                 {PLM_MATMUL_SUMMA, 2, {64, 256, 4096}, 1},    {PLM_MATMUL_SUMMA, 4, {64, 256, 4096}, 1},
                 {PLM_MATMUL_BLOCK, 2, {1024, 1024, 1024}, 2}, {PLM_MATMUL_BLOCK, 2, {4096, 256, 64}, 1}};
    for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
        blk_t b = blocks_of(picks[i].kind, picks[i].P, 0, 0, picks[i].s);
        TU_EXPECT(b.grid[0] == picks[i].rows, "%s on %d ranks, %lld x %lld x %lld: %d grid rows, expected %d",
                  kind_name(picks[i].kind), picks[i].P, (long long)picks[i].s.n, (long long)picks[i].s.k,
                  (long long)picks[i].s.m, b.grid[0], picks[i].rows);
    }
    /* outputs may be NULL */
    TU_CHECK_OK(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, 3, 0, 5, 5, 5, NULL, NULL, NULL, NULL));
    int64_t y[4] = {-1, -1, -1, -1};
    TU_CHECK_OK(plm_matmul_blocks(PLM_MATMUL_SUMMA, 6, 5, 0, 5, 7, 9, NULL, NULL, NULL, y));
    TU_EXPECT(y[0] == 3 && y[1] == 5 && y[2] == 6 && y[3] == 9, "6 ranks, rank 5: Y block {%lld %lld %lld %lld}",
              (long long)y[0], (long long)y[1], (long long)y[2], (long long)y[3]);
    int grid[4];
    const plm_matmul_kind_t bad_kind = (plm_matmul_kind_t)7;
    TU_EXPECT_ERR(plm_matmul_blocks(bad_kind, 4, 0, 0, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 0, 0, 0, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, -1, 0, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_BLOCK, 4, 4, 0, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, 0, 3, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, 0, -2, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_BLOCK, 4, 0, 5, 2, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, 0, 0, -1, 2, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_BLOCK, 4, 0, 0, 2, -1, 2, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_matmul_blocks(PLM_MATMUL_SUMMA, 4, 0, 0, 2, 2, -3, grid, NULL, NULL, NULL), PLM_ERR_INVALID_ARG);
    TU_DONE();
}

/* ---- the operator against serial products ------------------------------------------------- */

/* Global matrices (rows x cols, row-major): which = 0 A, 1 X, 2 V (the adjoint's input). */
static double complex *global(int which, int64_t rows, int64_t cols, plm_dtype_t dt)
{
    double complex *G = calloc((size_t)(rows * cols + 1), sizeof *G);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double re = 0.4 + sin(1.3 * (double)i + 0.7 * (double)j + 0.9 * which);
            double im = tu_cplx(dt) ? cos(0.5 * (double)i - 1.1 * (double)j + which) : 0.0;
            tu_round(dt, &re, &im);
            G[i * cols + j] = re + I * im;
        }
    return G;
}

/* A (n x k) times B (k x m), or with adjoint A^H (k x n) times B (n x m). */
static double complex *matmul(const double complex *A, const double complex *B, int64_t n, int64_t k, int64_t m,
                              int adjoint)
{
    const int64_t rows = adjoint ? k : n, inner = adjoint ? n : k;
    double complex *C = calloc((size_t)(rows * m + 1), sizeof *C);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t l = 0; l < inner; l++) {
            const double complex a = adjoint ? conj(A[l * k + i]) : A[i * k + l];
            for (int64_t j = 0; j < m; j++) C[i * m + j] += a * B[l * m + j];
        }
    return C;
}

/* Writes block v of G (cols gc) into buf, row-major. */
static void pack(void *buf, const int64_t *v, const double complex *G, int64_t gc, plm_dtype_t dt)
{
    for (int64_t i = 0; i < nrows(v); i++)
        for (int64_t j = 0; j < ncols(v); j++) {
            const double complex g = G[(v[0] + i) * gc + v[2] + j];
            tu_set(dt, buf, i * ncols(v) + j, creal(g), cimag(g));
        }
}

static void fill_block(plm_array_t x, const int64_t *v, const double complex *G, int64_t gc, plm_dtype_t dt,
                       const char *what)
{
    int64_t n = -1;
    void *d = NULL;
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_EXPECT(n == bsize(v), "%s: local size %lld, block %lld", what, (long long)n, (long long)bsize(v));
    TU_OK(plm_array_get_local_write(x, &d));
    pack(d, v, G, gc, dt);
    TU_OK(plm_array_restore_local_write(x, &d));
}

/* The gathered array (the blocks in rank order) against W (cols gc): every rank's block. */
static void check_gathered(plm_const_array_t arr, plm_matmul_kind_t kind, int grid_rows, shape_t s, int range,
                           const double complex *W, int64_t gc, plm_dtype_t dt, const char *what)
{
    int64_t total = 0;
    for (int q = 0; q < tu_size; q++) {
        blk_t b = blocks_of(kind, tu_size, q, grid_rows, s);
        total += bsize(range ? b.y : b.x);
    }
    void *raw = calloc((size_t)total + 1, tu_esize(dt));
    TU_CHECK_OK(plm_array_asarray(arr, 0, raw, tu_bytes(dt, total)));
    double err = 0, nrm = 0;
    int64_t off = 0;
    for (int q = 0; q < tu_size; q++) {
        blk_t b = blocks_of(kind, tu_size, q, grid_rows, s);
        const int64_t *v = range ? b.y : b.x;
        for (int64_t i = 0; i < nrows(v); i++)
            for (int64_t j = 0; j < ncols(v); j++) {
                double re, im;
                tu_get(dt, raw, off + i * ncols(v) + j, &re, &im);
                const double complex w = W[(v[0] + i) * gc + v[2] + j];
                err += pow(cabs(re + I * im - w), 2);
                nrm += pow(cabs(w), 2);
            }
        off += bsize(v);
    }
    const double tol = tu_single(dt) ? 1e-4 : 1e-12;
    TU_EXPECT(nrm > 0 ? sqrt(err) <= tol * sqrt(nrm) : err == 0, "%s: relative error %g (|want| %g)", what,
              nrm > 0 ? sqrt(err / nrm) : sqrt(err), sqrt(nrm));
    free(raw);
}

static void check_mask(plm_const_array_t x, plm_matmul_kind_t kind, int grid_cols, const char *what)
{
    int has = -1, mk[TU_MAX_RANKS];
    TU_CHECK_OK(plm_array_mask(x, &has, mk));
    TU_EXPECT(has == (kind == PLM_MATMUL_BLOCK), "%s: has_mask %d", what, has);
    for (int q = 0; has == 1 && q < tu_size; q++)
        TU_EXPECT(mk[q] == q % grid_cols, "%s: mask[%d] = %d expected %d", what, q, mk[q], q % grid_cols);
}

/* Block kind: dot and norm over the masked layout see one copy of the replicated data. */
static void check_one_copy(plm_const_array_t a, plm_const_array_t b, const double complex *A,
                           const double complex *B, int64_t n, plm_dtype_t dt, const char *what)
{
    double sq = 0, mag = 0;
    double complex dot = 0;
    for (int64_t i = 0; i < n; i++) {
        sq += pow(cabs(A[i]), 2);
        dot += conj(A[i]) * B[i];
        mag += cabs(A[i]) * cabs(B[i]);
    }
    const double tol = tu_single(dt) ? 1e-4 : 1e-12;
    double nrm = -1, re = 0, im = 0;
    TU_CHECK_OK(plm_array_norm(a, 2.0, &nrm));
    TU_EXPECT(fabs(nrm - sqrt(sq)) <= tol * sqrt(sq), "%s: norm %.17g, one copy %.17g", what, nrm, sqrt(sq));
    TU_CHECK_OK(plm_array_dot(a, b, 1, &re, &im));
    TU_EXPECT(cabs(re + I * im - dot) <= tol * mag, "%s: dot %g%+gi, one copy %g%+gi", what, re, im, creal(dot),
              cimag(dot));
}

static void check_case(plm_matmul_kind_t kind, int grid_rows, shape_t s, plm_dtype_t dt)
{
    char what[160], w2[200];
    snprintf(what, sizeof what, "%s grid_rows %d (n %lld, k %lld, m %lld) %s", kind_name(kind), grid_rows,
             (long long)s.n, (long long)s.k, (long long)s.m, tu_dtname(dt));
    const blk_t me = blocks_of(kind, tu_size, tu_rank, grid_rows, s);
    double complex *A = global(0, s.n, s.k, dt), *X = global(1, s.k, s.m, dt), *V = global(2, s.n, s.m, dt);
    void *a = calloc((size_t)bsize(me.a) + 1, tu_esize(dt));
    pack(a, me.a, A, s.k, dt);
    plm_op_t op = NULL;
    TU_OK(plm_op_matrix_mult(tu_comm, kind, grid_rows, dt, s.n, s.k, s.m, bsize(me.a) ? a : NULL,
                             tu_bytes(dt, bsize(me.a)), &op));
    free(a);

    const int64_t copies = kind == PLM_MATMUL_BLOCK ? me.grid[1] : 1;
    int64_t rows = -1, cols = -1;
    plm_dtype_t odt = (plm_dtype_t)-1;
    TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
    TU_CHECK_OK(plm_op_dtype(op, &odt));
    TU_EXPECT(rows == copies * s.n * s.m && cols == copies * s.k * s.m && odt == dt, "%s: shape %lld x %lld, dtype %d",
              what, (long long)rows, (long long)cols, (int)odt);

    plm_array_t x = NULL, y = NULL, v = NULL, xh = NULL;
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x));
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &xh));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &y));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &v));
    fill_block(x, me.x, X, s.m, dt, what);
    fill_block(v, me.y, V, s.m, dt, what);
    TU_CHECK_OK(plm_op_apply(op, x, y));
    TU_CHECK_OK(plm_op_apply_adjoint(op, v, xh));
    double complex *Y = matmul(A, X, s.n, s.k, s.m, 0), *XH = matmul(A, V, s.n, s.k, s.m, 1);
    snprintf(w2, sizeof w2, "%s forward", what);
    check_gathered(y, kind, grid_rows, s, 1, Y, s.m, dt, w2);
    snprintf(w2, sizeof w2, "%s adjoint", what);
    check_gathered(xh, kind, grid_rows, s, 0, XH, s.m, dt, w2);
    check_mask(x, kind, me.grid[1], what);
    check_mask(y, kind, me.grid[1], what);

    int passed = 0;
    double yy[2], xx[2];
    TU_CHECK_OK(plm_op_dottest(op, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
    TU_EXPECT(passed, "%s: dot test %g%+gi vs %g%+gi", what, yy[0], yy[1], xx[0], xx[1]);
    if (kind == PLM_MATMUL_BLOCK) {
        snprintf(w2, sizeof w2, "%s domain", what);
        check_one_copy(x, xh, X, XH, s.k * s.m, dt, w2);
        snprintf(w2, sizeof w2, "%s range", what);
        check_one_copy(y, v, Y, V, s.n * s.m, dt, w2);
    }
    free(A);
    free(X);
    free(V);
    free(Y);
    free(XH);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&v);
    plm_array_destroy(&xh);
    plm_op_destroy(&op);
}

static void run_kind(plm_matmul_kind_t kind)
{
    for (int g = 0; g <= tu_size; g++) {
        if ((g && tu_size % g) || (g_quick && g)) continue;
        for (int i = 0; i < NSHAPES; i++)
            for (int t = 0; t < 4; t++) check_case(kind, g, SHAPES[i], TU_DTYPES[t]);
    }
}

static void test_summa(void **state)
{
    (void)state;
    run_kind(PLM_MATMUL_SUMMA);
    TU_DONE();
}

static void test_block(void **state)
{
    (void)state;
    run_kind(PLM_MATMUL_BLOCK);
    TU_DONE();
}

/* ---- bad arguments: the same status on every rank, out cleared ---------------------------- */

static void expect_op_err(plm_status_t want, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dt, shape_t s,
                          int null_a, int null_out, const char *what)
{
    double a[64] = {0}; /* any A block of the 6 x 6 x 6 cases */
    plm_op_t out = (plm_op_t)(void *)&g_quick; /* must be cleared */
    plm_clear_last_error();
    TU_MARK();
    plm_status_t st = plm_op_matrix_mult(tu_comm, kind, grid_rows, dt, s.n, s.k, s.m, null_a ? NULL : a,
                                         tu_matmul_a_bytes(kind, grid_rows, dt, s.n, s.k, s.m),
                                         null_out ? NULL : &out);
    tu_expect_err_(st, want, want, what, __FILE__, __LINE__);
    TU_EXPECT(null_out || out == NULL, "%s: out not cleared", what);
    if (!null_out && out != NULL && out != (plm_op_t)(void *)&g_quick) plm_op_destroy(&out);
}

static void test_errors(void **state)
{
    (void)state;
    const shape_t s = {6, 6, 6};
    const int last = tu_rank == tu_size - 1;
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_SUMMA, tu_size + 1, PLM_FLOAT64, s, 0, 0, "grid_rows not a divisor");
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_BLOCK, -1, PLM_FLOAT64, s, 0, 0, "negative grid_rows");
    expect_op_err(PLM_ERR_INVALID_ARG, (plm_matmul_kind_t)9, 0, PLM_FLOAT64, s, 0, 0, "unknown kind");
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_SUMMA, 0, (plm_dtype_t)99, s, 0, 0, "unknown dtype");
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, (shape_t){6, -1, 6}, 0, 0, "negative k");
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, s, tu_rank == 0, 0, "NULL a on rank 0");
    expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_BLOCK, 0, PLM_FLOAT64, s, 0, last, "NULL out on the last rank");
    if (tu_size > 1) {
        expect_op_err(PLM_ERR_INVALID_ARG, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, (shape_t){last ? 5 : 6, 6, 6}, 0, 0,
                      "n differs on the last rank");
        expect_op_err(PLM_ERR_INVALID_ARG, last ? PLM_MATMUL_BLOCK : PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, s, 0, 0,
                      "kind differs on the last rank");
    }
    /* A rank whose A block is empty may pass NULL (k = 1: only the first grid column has A). */
    const shape_t thin = {6, 1, 6};
    const blk_t me = blocks_of(PLM_MATMUL_SUMMA, tu_size, tu_rank, 0, thin);
    double a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    plm_op_t op = NULL;
    TU_CHECK_OK(plm_op_matrix_mult(tu_comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, thin.n, thin.k, thin.m,
                                   bsize(me.a) ? a : NULL, tu_bytes(PLM_FLOAT64, bsize(me.a)), &op));
    plm_op_destroy(&op);
    TU_DONE();
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--quick") == 0) g_quick = 1;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_blocks),
        TU_TEST(test_summa),
        TU_TEST(test_block),
        TU_TEST(test_errors),
    };
    const struct CMUnitTest quick[] = {
        TU_TEST(test_blocks),
        TU_TEST(test_summa),
        TU_TEST(test_errors),
    };
    if (g_quick) return plm_run_group_tests_mpi(quick);
    return plm_run_group_tests_mpi(tests);
}
