/* Fredholm1 (plm_op_fredholm1) through the public API at every rank count, against a dense
 * serial reference built here in complex double: the block-diagonal matrix of the slices
 * (row (k, i, z), column (k, j, z) holds G[k][i][j]).
 * - every dtype, save_gt on and off, usematmul on and off;
 * - splits of the slices over the ranks: the default one, everything on the last rank (the
 *   others own none), one slice per rank (which PyLops-MPI refuses), growing counts, and more
 *   ranks than slices;
 * - forward and adjoint against the dense product, and a dot test (check_against);
 * - the operator's shape, dtype and BROADCAST layouts;
 * - bad arguments on one rank (sizes, g_bytes, NULL G, dtype) fail on every rank. */
#include "ops_test_util.h"

/* G[k][i][j] of the global kernel, rounded to dt. */
static double complex gker(int64_t k, int64_t i, int64_t j, plm_dtype_t dt)
{
    double re = cos(0.9 * (double)k + 0.4 * (double)i - 0.3 * (double)j) + 0.1 * (double)j;
    double im = tu_cplx(dt) ? sin(0.5 * (double)k - 0.7 * (double)i + 0.2 * (double)j) : 0.0;
    tu_round(dt, &re, &im);
    return re + I * im;
}

enum { SPLIT_DEFAULT, SPLIT_LAST, SPLIT_ONE_EACH, SPLIT_GROWING, NSPLITS };
static const char *SPLIT_NAMES[NSPLITS] = {"default", "all on the last rank", "one per rank", "growing"};

/* Slices of rank r of P for a split; *total gets the sum. */
static int64_t slices_of(int split, int P, int r, int64_t *total)
{
    int64_t n[TU_MAX_RANKS], t = 0;
    for (int q = 0; q < P; q++) {
        switch (split) {
        case SPLIT_DEFAULT: n[q] = tu_split(5, P, q); break;
        case SPLIT_LAST: n[q] = q == P - 1 ? 4 : 0; break;
        case SPLIT_ONE_EACH: n[q] = 1; break;
        default: n[q] = q + (q % 2); break; /* 0, 2, 2, 4: zero on rank 0 */
        }
        t += n[q];
    }
    *total = t;
    return n[r];
}

static int64_t first_of(int split, int P, int r)
{
    int64_t t, f = 0;
    for (int q = 0; q < r; q++) f += slices_of(split, P, q, &t);
    return f;
}

typedef struct {
    int64_t nx, ny, nz;
} dims_t;

static const dims_t DIMS[] = {{3, 2, 4}, {1, 1, 1}, {2, 5, 1}, {4, 3, 2}};
#define NDIMS ((int)(sizeof DIMS / sizeof DIMS[0]))

static void check_one(plm_dtype_t dt, int split, dims_t d, int save_gt, int usematmul)
{
    int64_t total;
    const int64_t nsl = slices_of(split, tu_size, tu_rank, &total), first = first_of(split, tu_size, tu_rank);
    const int64_t nloc = nsl * d.nx * d.ny;
    void *g = calloc((size_t)nloc + 1, tu_esize(dt));
    for (int64_t s = 0; s < nsl; s++)
        for (int64_t i = 0; i < d.nx; i++)
            for (int64_t j = 0; j < d.ny; j++) {
                const double complex v = gker(first + s, i, j, dt);
                tu_set(dt, g, (s * d.nx + i) * d.ny + j, creal(v), cimag(v));
            }
    plm_op_t op = NULL;
    TU_OK(plm_op_fredholm1(tu_comm, dt, nsl, d.nx, d.ny, d.nz, nsl ? g : NULL, tu_bytes(dt, nloc), save_gt,
                           usematmul, &op));
    const int64_t M = total * d.nx * d.nz, N = total * d.ny * d.nz;
    int64_t rows = -1, cols = -1;
    plm_dtype_t odt = PLM_FLOAT32;
    TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
    TU_CHECK_OK(plm_op_dtype(op, &odt));
    TU_EXPECT(rows == M && cols == N && odt == dt, "shape %lld x %lld (want %lld x %lld), dtype %d", (long long)rows,
              (long long)cols, (long long)M, (long long)N, (int)odt);
    plm_layout_t dom = NULL;
    TU_CHECK_OK(plm_op_domain(op, &dom));
    plm_partition_t part = PLM_PARTITION_SCATTER;
    TU_CHECK_OK(plm_layout_partition(dom, &part));
    TU_EXPECT(part == PLM_PARTITION_BROADCAST, "the domain is not BROADCAST");
    plm_layout_destroy(&dom);

    double complex *G = calloc((size_t)(M * N) + 1, sizeof *G);
    for (int64_t k = 0; k < total; k++)
        for (int64_t i = 0; i < d.nx; i++)
            for (int64_t j = 0; j < d.ny; j++)
                for (int64_t z = 0; z < d.nz; z++)
                    G[((k * d.nx + i) * d.nz + z) * N + (k * d.ny + j) * d.nz + z] = gker(k, i, j, dt);
    char what[160];
    snprintf(what, sizeof what, "fredholm1 %s, nx %lld ny %lld nz %lld, save_gt %d usematmul %d", SPLIT_NAMES[split],
             (long long)d.nx, (long long)d.ny, (long long)d.nz, save_gt, usematmul);
    check_against(op, G, M, N, dt, what);
    free(G);
    free(g);
    plm_op_destroy(&op);
}

static void test_forward_adjoint(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int split = 0; split < NSPLITS; split++)
            for (int k = 0; k < NDIMS; k++) {
                TU_MARK();
                check_one(TU_DTYPES[t], split, DIMS[k], k % 2, (k / 2 + split) % 2);
            }
    /* save_gt both ways on one case of every dtype */
    for (int t = 0; t < 4; t++) {
        check_one(TU_DTYPES[t], SPLIT_GROWING, DIMS[0], 1, 0);
        check_one(TU_DTYPES[t], SPLIT_GROWING, DIMS[0], 0, 1);
    }
    TU_DONE();
}

/* One rank (the last) passes a bad argument: every rank gets the error, out cleared. */
static void expect_err(plm_status_t want, const char *what, plm_dtype_t dt, int64_t nsl, int64_t nx, int64_t ny,
                       int64_t nz, int null_g, int64_t bytes_off)
{
    double g[64] = {0};
    plm_op_t op = (plm_op_t)(void *)&tu_fail;
    const plm_status_t st = plm_op_fredholm1(tu_comm, dt, nsl, nx, ny, nz, null_g ? NULL : g,
                                             tu_bytes(dt, nsl * nx * ny) + bytes_off, 1, 1, &op);
    int all[TU_MAX_RANKS] = {0}, mine = (int)st;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < tu_size; r++)
        TU_EXPECT(all[r] == (int)want, "%s: rank %d returned %s, expected %s", what, r,
                  plm_status_string((plm_status_t)all[r]), plm_status_string(want));
    if (want != PLM_SUCCESS) TU_EXPECT(op == NULL, "%s: out not cleared", what);
    if (st == PLM_SUCCESS) plm_op_destroy(&op);
}

static void test_errors(void **state)
{
    (void)state;
    const int last = tu_rank == tu_size - 1;
    expect_err(PLM_ERR_INVALID_ARG, "negative slices on the last rank", PLM_FLOAT64, last ? -1 : 2, 2, 2, 1, 0, 0);
    expect_err(PLM_ERR_INVALID_ARG, "g_bytes short on the last rank", PLM_FLOAT64, 2, 2, 2, 1, 0, last ? -8 : 0);
    expect_err(PLM_ERR_INVALID_ARG, "NULL G on the last rank", PLM_FLOAT64, 2, 2, 2, 1, last, 0);
    expect_err(PLM_ERR_INVALID_ARG, "unknown dtype", (plm_dtype_t)42, 2, 2, 2, 1, 0, 0);
    if (tu_size > 1) {
        expect_err(PLM_ERR_INVALID_ARG, "nx differs on the last rank", PLM_FLOAT64, 2, last ? 3 : 2, 2, 1, 0, 0);
        expect_err(PLM_ERR_INVALID_ARG, "nz differs on the last rank", PLM_FLOAT64, 2, 2, 2, last ? 2 : 1, 0, 0);
    }
    /* No slices anywhere: an operator of empty vectors. */
    expect_err(PLM_SUCCESS, "no slices", PLM_FLOAT64, 0, 2, 2, 1, 1, 0);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_forward_adjoint),
        TU_TEST(test_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
