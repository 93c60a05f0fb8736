/* NonStationaryConvolve1D through the public API, at every rank count, against a serial
 * reference written here in float64 from PyLops' definition (its _matvec and _rmatvec on one
 * line: the filter of each sample linearly interpolated between the two filter positions
 * around it, held at the ends):
 * - 1-D models of 7, 13 and 31 samples and 2-D and 3-D models convolved along axis 0 (the
 *   distributed one: ghost samples from the neighbours) and along other axes (local), every
 *   dtype, with the default split (uneven), one-row blocks, an empty block, fewer filters than
 *   ranks, one filter, filters longer than a block or the whole axis: forward, adjoint and
 *   dot test;
 * - the serial adjoint is checked against the transpose of the serial forward, so the
 *   reference itself is consistent;
 * - bad arguments (even nh, irregular, decreasing or out-of-range positions, hs_bytes, filters
 *   that differ on one rank, rows that do not add up) fail on every rank. */
#include "ops/ops_test_util.h"

/* ---- PyLops' NonStationaryConvolve1D on one line of n samples ---------------------------- */

typedef struct {
    int64_t nfilt, nh, oh, dh;
    const double complex *hs; /* nfilt x nh */
} filters_t;

/* _interpolate_h: h (nh values) of sample ix. */
static void interpolate(const filters_t *f, int64_t ix, double complex *h)
{
    const double pos = f->nfilt > 1 ? (double)(ix - f->oh) / (double)f->dh : -1.0;
    const int64_t c = (int64_t)floor(pos);
    for (int64_t k = 0; k < f->nh; k++) {
        if (f->nfilt == 1 || c < 0) h[k] = f->hs[k];
        else if (c >= f->nfilt - 1) h[k] = f->hs[(f->nfilt - 1) * f->nh + k];
        else {
            const double w = pos - (double)c;
            h[k] = (1 - w) * f->hs[c * f->nh + k] + w * f->hs[(c + 1) * f->nh + k];
        }
    }
}

/* _matvec: each sample spreads its filter; _rmatvec: each sample gathers with its filter
 * (conjugated: the exact adjoint, as the library's for complex data). */
static void serial_line(const filters_t *f, int64_t n, const double complex *x, double complex *y, int adjoint)
{
    const int64_t r = f->nh / 2;
    double complex *h = calloc((size_t)f->nh, sizeof *h);
    for (int64_t i = 0; i < n; i++) y[i] = 0;
    for (int64_t ix = 0; ix < n; ix++) {
        interpolate(f, ix, h);
        for (int64_t k = 0; k < f->nh; k++) {
            const int64_t j = ix + k - r;
            if (j < 0 || j >= n) continue;
            if (adjoint) y[ix] += conj(h[k]) * x[j];
            else y[j] += h[k] * x[ix];
        }
    }
    free(h);
}

/* G (N x N) of the convolution along axis a, from serial_line on unit vectors of one line. */
static double complex *dense(int ndim, const int64_t *dims, int a, const filters_t *f)
{
    const int64_t n = dims[a], N = tu_prod(dims, 0, ndim), inner = tu_prod(dims, a + 1, ndim);
    const int64_t outer = N / (n * inner);
    double complex *G = calloc((size_t)(N * N), sizeof *G);
    double complex *e = calloc((size_t)n, sizeof *e), *col = calloc((size_t)n, sizeof *col);
    for (int64_t j = 0; j < n; j++) {
        e[j] = 1;
        serial_line(f, n, e, col, 0);
        e[j] = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < inner; in++)
                for (int64_t i = 0; i < n; i++) G[((o * n + i) * inner + in) * N + (o * n + j) * inner + in] = col[i];
    }
    free(e);
    free(col);
    return G;
}

/* The serial adjoint equals the transpose-conjugate of the serial forward on one line. */
static void check_reference(const filters_t *f, int64_t n)
{
    const int64_t dims[1] = {n};
    double complex *G = dense(1, dims, 0, f), *y = calloc((size_t)n, sizeof *y), *got = calloc((size_t)n, sizeof *got);
    for (int64_t i = 0; i < n; i++) y[i] = sin(0.9 * (double)i + 0.3) + I * cos(0.4 * (double)i);
    serial_line(f, n, y, got, 1);
    double complex *want = matvec(G, n, n, y, 1);
    for (int64_t j = 0; j < n; j++)
        TU_EXPECT(cabs(got[j] - want[j]) <= 1e-13 * (1 + cabs(want[j])), "serial rmatvec vs matvec^H at %lld",
                  (long long)j);
    free(G);
    free(y);
    free(got);
    free(want);
}

/* nfilt filters of nh taps in the dtype (hs, for the library) and their values as the test
 * reads them (ref, rounded to the dtype). */
static void make_filters(plm_dtype_t dt, int64_t nfilt, int64_t nh, void **hs, double complex **ref)
{
    *hs = calloc((size_t)(nfilt * nh) + 1, tu_esize(dt));
    *ref = calloc((size_t)(nfilt * nh) + 1, sizeof **ref);
    for (int64_t f = 0; f < nfilt; f++)
        for (int64_t k = 0; k < nh; k++) {
            double re = sin(1.3 * (double)f + 0.7 * (double)k) + 0.2 * (double)(k == nh / 2);
            double im = tu_cplx(dt) ? cos(0.5 * (double)f - 1.1 * (double)k) : 0.0;
            tu_round(dt, &re, &im);
            tu_set(dt, *hs, f * nh + k, re, im);
            (*ref)[f * nh + k] = re + I * im;
        }
}

/* ---- cases ------------------------------------------------------------------------------------ */

typedef struct {
    int ndim;
    int64_t dims[3];
    int axis;
    int64_t nfilt, nh, oh, dh;
} case_t;

static const case_t CASES[] = {
    {1, {7}, 0, 2, 3, 1, 4},        /* fewer filters than ranks from 3 ranks */
    {1, {7}, 0, 1, 5, 3, 1},        /* one filter: stationary */
    {1, {13}, 0, 3, 5, 2, 4},       /* positions not at 0, interpolated between */
    {1, {13}, -1, 13, 3, 0, 1},     /* a filter on every sample */
    {1, {13}, 0, 4, 1, 0, 4},       /* one tap: a diagonal */
    {1, {31}, 0, 5, 9, 3, 6},       /* filters longer than a block at 4 ranks */
    {1, {31}, 0, 2, 7, 0, 30},      /* two filters at the ends of the axis */
    {1, {3}, 0, 2, 3, 0, 2},        /* fewer samples than ranks at 4 ranks */
    {1, {7}, 0, 2, 15, 0, 6},       /* filters longer than the axis */
    {2, {13, 5}, 0, 3, 5, 1, 5},    /* along the distributed axis of a 2-D model */
    {2, {13, 5}, 1, 2, 3, 1, 2},    /* along the local axis */
    {2, {7, 6}, -1, 3, 5, 0, 2},    /* along the local axis, negative */
    {3, {5, 3, 4}, 1, 2, 3, 0, 2},  /* along a middle axis */
    {3, {9, 2, 3}, 0, 3, 3, 2, 3},  /* along axis 0 of a 3-D model */
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static plm_status_t make_op(plm_dtype_t dt, const case_t *c, int64_t rows, const void *hs, plm_op_t *op)
{
    int64_t ih[64];
    for (int64_t k = 0; k < c->nfilt; k++) ih[k] = c->oh + k * c->dh;
    return plm_op_nonstationary_convolve1d(tu_comm, dt, c->ndim, c->dims, rows, c->axis, c->nfilt, c->nh, hs,
                                           tu_bytes(dt, c->nfilt * c->nh), ih, op);
}

static void check_case(const case_t *c, plm_dtype_t dt, int split)
{
    void *hs = NULL;
    double complex *ref = NULL;
    make_filters(dt, c->nfilt, c->nh, &hs, &ref);
    const filters_t f = {c->nfilt, c->nh, c->oh, c->nfilt > 1 ? c->dh : 1, ref};
    const int a = tu_axis(c->axis, c->ndim);
    const int64_t rows = rows_for(split, c->dims[0], tu_size, tu_rank);
    plm_op_t op = NULL;
    TU_OK(make_op(dt, c, rows, hs, &op));
    const int64_t N = tu_prod(c->dims, 0, c->ndim);
    double complex *G = dense(c->ndim, c->dims, a, &f);
    check_reference(&f, c->dims[a]);
    char what[100];
    snprintf(what, sizeof what, "%dD n0 %lld ax %d, %lld x %lld taps at %lld+k%lld, %s",
             c->ndim, (long long)c->dims[0], c->axis, (long long)c->nfilt, (long long)c->nh, (long long)c->oh,
             (long long)c->dh, ROW_SPLIT_NAMES[split]);
    check_against(op, G, N, N, dt, what);
    free(G);
    free(hs);
    free(ref);
    plm_op_destroy(&op);
}

static void test_against_serial(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < NCASES; k++)
            for (int split = 0; split < NROW_SPLITS; split++) check_case(&CASES[k], TU_DTYPES[t], split);
    TU_DONE();
}

/* ---- errors ------------------------------------------------------------------------------------ */

static plm_status_t try_make(int64_t nfilt, int64_t nh, const int64_t *ih, int64_t hs_bytes, int differ, int64_t rows)
{
    const int64_t dims[2] = {13, 2};
    double hs[64];
    for (int i = 0; i < 64; i++) hs[i] = 0.1 * i;
    if (differ) hs[1] += 1;
    plm_op_t op = NULL;
    plm_status_t st = plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 2, dims, rows, 0, nfilt, nh, hs,
                                                      hs_bytes < 0 ? nfilt * nh * 8 : hs_bytes, ih, &op);
    TU_EXPECT(st != PLM_SUCCESS || op != NULL, "no operator on success");
    TU_EXPECT(st == PLM_SUCCESS || op == NULL, "an operator on failure");
    plm_op_destroy(&op);
    return st;
}

static void test_errors(void **state)
{
    (void)state;
    const int64_t good[3] = {1, 5, 9}, irregular[3] = {1, 5, 10}, decreasing[3] = {9, 5, 1}, outside[3] = {5, 9, 13},
                  negative[3] = {-3, 1, 5}, same[3] = {4, 4, 4};
    TU_EXPECT(try_make(3, 5, good, -1, 0, -1) == PLM_SUCCESS, "good arguments fail: %s", plm_last_error());
    TU_EXPECT_ERR(try_make(3, 4, good, -1, 0, -1), PLM_ERR_INVALID_ARG);  /* even length */
    TU_EXPECT_ERR(try_make(3, 0, good, -1, 0, -1), PLM_ERR_INVALID_ARG);  /* no taps */
    TU_EXPECT_ERR(try_make(0, 5, good, -1, 0, -1), PLM_ERR_INVALID_ARG);  /* no filters */
    TU_EXPECT_ERR(try_make(3, 5, NULL, -1, 0, -1), PLM_ERR_INVALID_ARG);  /* no positions */
    TU_EXPECT_ERR(try_make(3, 5, irregular, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, decreasing, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, same, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, outside, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, negative, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, good, 3 * 5 * 8 - 8, 0, -1), PLM_ERR_INVALID_ARG);  /* hs_bytes short */
    /* One rank alone with a bad argument, or other filters: every rank fails. */
    const int me_bad = tu_rank == tu_size - 1;
    TU_EXPECT_ERR(try_make(3, me_bad ? 4 : 5, good, -1, 0, -1), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(try_make(3, 5, me_bad ? irregular : good, -1, 0, -1), PLM_ERR_INVALID_ARG);
    if (tu_size > 1) {
        TU_EXPECT_ERR(try_make(3, 5, good, -1, me_bad, -1), PLM_ERR_INVALID_ARG);
        /* Rows that do not add up to dims[0]: every rank learns it from the gathered rows. */
        const int64_t rows = tu_split(13, tu_size, tu_rank) - (tu_rank == 0);
        TU_EXPECT_ERR(try_make(3, 5, good, -1, 0, rows), PLM_ERR_SIZE_MISMATCH);
    }
    /* An axis outside the model. */
    const int64_t dims[1] = {13};
    double hs[3] = {1, 2, 1};
    plm_op_t op = NULL;
    TU_EXPECT_ERR(plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 1, dims, -1, 1, 1, 3, hs, sizeof hs, good, &op),
                  PLM_ERR_INVALID_ARG);
    /* Host memory only: the operator says so. */
    TU_OK(plm_op_nonstationary_convolve1d(tu_comm, PLM_FLOAT64, 1, dims, -1, 0, 1, 3, hs, sizeof hs, good, &op));
    int native = -1;
    TU_CHECK_OK(plm_op_native(op, PLM_MEMORY_HOST, &native));
    TU_EXPECT(native == 1, "not native on host");
    TU_CHECK_OK(plm_op_native(op, PLM_MEMORY_DEVICE, &native));
    TU_EXPECT(native == 0, "native on device");
    plm_op_destroy(&op);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_against_serial),
        TU_TEST(test_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
