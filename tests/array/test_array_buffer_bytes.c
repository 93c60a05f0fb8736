/* The *_bytes argument after every void * data buffer (ABI 0.3): it must equal what the call
 * reads or writes. For each function that takes one, the last rank alone passes a buffer one
 * element short, one sized for float32 elements (the arrays are float64), or one element long:
 * - collective calls: every rank returns PLM_ERR_INVALID_ARG (the check is in the agreement,
 *   so nobody hangs) and a following collective (a norm) still works;
 * - not collective calls (create_from_layout, op_dense, op_diagonal): only the last rank fails.
 * The message names the argument and both sizes ("out_bytes = 400, expected 800 (100 float64
 * elements)"). Where a buffer is ignored (gather_to / scatter_from off the root) its size is
 * ignored too, and NULL user_data with 0 bytes allocates. */
#include "array_test_util.h"

#define A PLM_ERR_INVALID_ARG
#define LAST (tu_size - 1)

enum { GOOD, SHORT, F32, LONG, NKINDS };
static const char *const KIND_NAME[NKINDS] = {"exact", "one element short", "float32-sized", "one element long"};
static int g_kind = GOOD;

static int64_t G2[2] = {0, 3}; /* (4P+1) x 3: every rank holds >= 4 rows; set by each test */
static int64_t nones(void) { return G2[0] * G2[1]; }
static void set_g2(void) { G2[0] = 4 * (int64_t)tu_size + 1; }

/* The bytes this rank passes for count float64 elements: exact except on the last rank. */
static int64_t nbytes(int64_t count)
{
    if (tu_rank != LAST) return count * 8;
    switch (g_kind) {
    case SHORT: return (count - 1) * 8;
    case F32: return count * 4;
    case LONG: return (count + 1) * 8;
    default: return count * 8;
    }
}

static plm_array_t ones(plm_partition_t part)
{
    plm_array_t x = tu_make(2, G2, 0, part, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    return x;
}

/* The communicator still works and the ranks are in step: a norm of a fresh array. */
static void sane(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double r = -1;
    TU_CHECK_OK(plm_array_norm(x, 1.0, &r));
    TU_EXPECT(r == (double)nones(), "sanity norm after the case: %g expected %lld", r, (long long)nones());
    plm_array_destroy(&x);
}

/* ---- the cases: each returns the status of the call under test on this rank ------------- */

static plm_status_t case_create_ex(void)
{
    const int64_t nloc = tu_split(G2[0], tu_size, tu_rank) * G2[1];
    double *user = tu_alloc(nloc + 1);
    plm_array_t x = NULL;
    plm_status_t st = plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0,
                                          NULL, 0, NULL, user, nbytes(nloc), &x);
    if (st != PLM_SUCCESS) TU_EXPECT(x == NULL, "create_ex: out not cleared");
    plm_array_destroy(&x);
    free(user);
    return st;
}

static plm_status_t case_asarray(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *buf = tu_alloc(nones() + 1);
    plm_status_t st = plm_array_asarray(x, 0, buf, nbytes(nones()));
    free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t case_asarray_broadcast(void)
{
    plm_array_t x = ones(PLM_PARTITION_BROADCAST); /* copies locally, still agrees */
    double *buf = tu_alloc(nones() + 1);
    plm_status_t st = plm_array_asarray(x, 0, buf, nbytes(nones()));
    free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t case_set_global(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *g = tu_alloc(nones() + 1);
    plm_status_t st = plm_array_set_global(x, g, nbytes(nones()));
    free(g);
    plm_array_destroy(&x);
    return st;
}

/* root: the last rank, whose out_bytes is the one checked; the others pass a NULL buffer
 * with a meaningless size, ignored. */
static plm_status_t case_gather_to(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *g = tu_alloc(nones() + 1);
    plm_status_t st = plm_array_gather_to(x, LAST, tu_rank == LAST ? g : NULL, tu_rank == LAST ? nbytes(nones()) : -7);
    free(g);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t case_scatter_from(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *g = tu_alloc(nones() + 1);
    plm_status_t st =
        plm_array_scatter_from(x, LAST, tu_rank == LAST ? g : NULL, tu_rank == LAST ? nbytes(nones()) : 12345);
    free(g);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t case_add_ghost_cells(void)
{
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    int64_t gs[2];
    TU_OK(plm_array_ghost_shape(x, 1, 1, gs));
    double *buf = tu_alloc(gs[0] * gs[1] + 1);
    plm_status_t st = plm_array_add_ghost_cells(x, 1, 1, buf, nbytes(gs[0] * gs[1]));
    free(buf);
    plm_array_destroy(&x);
    return st;
}

static plm_status_t case_stacked_asarray(void)
{
    plm_array_t m[2] = {ones(PLM_PARTITION_SCATTER), ones(PLM_PARTITION_BROADCAST)};
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(2, m, &s));
    double *buf = tu_alloc(2 * nones() + 1);
    plm_status_t st = plm_stacked_asarray(s, buf, nbytes(2 * nones()));
    free(buf);
    plm_stacked_destroy(&s);
    plm_array_destroy(&m[0]);
    plm_array_destroy(&m[1]);
    return st;
}

static plm_status_t case_matrix_mult(plm_matmul_kind_t kind)
{
    const int64_t d = 4 * (int64_t)tu_size; /* every rank's A block is non-empty */
    double *a = calloc((size_t)((d + 1) * d), sizeof(double));
    const int64_t na = tu_matmul_a_bytes(kind, 0, PLM_FLOAT64, d, d, d) / 8;
    plm_op_t op = NULL;
    plm_status_t st = plm_op_matrix_mult(tu_comm, kind, 0, PLM_FLOAT64, d, d, d, a, nbytes(na), &op);
    if (st != PLM_SUCCESS) TU_EXPECT(op == NULL, "matrix_mult: out not cleared");
    plm_op_destroy(&op);
    free(a);
    return st;
}
static plm_status_t case_matrix_mult_summa(void) { return case_matrix_mult(PLM_MATMUL_SUMMA); }
static plm_status_t case_matrix_mult_block(void) { return case_matrix_mult(PLM_MATMUL_BLOCK); }

/* not collective */

static plm_status_t case_create_from_layout(void)
{
    plm_layout_t l = NULL;
    TU_OK(plm_layout_create(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, &l));
    int64_t n = 0;
    TU_OK(plm_layout_local_size(l, &n));
    double *user = tu_alloc(n + 1);
    plm_array_t x = NULL;
    plm_status_t st = plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, user, nbytes(n), &x);
    if (st != PLM_SUCCESS) TU_EXPECT(x == NULL, "create_from_layout: out not cleared");
    plm_array_destroy(&x);
    plm_layout_destroy(&l);
    free(user);
    return st;
}

static plm_status_t case_op_dense(void)
{
    const double a[8] = {2, 0.5, -1, 1, 0.25, 3, 0, 0};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_dense(PLM_FLOAT64, 3, 2, a, nbytes(6), 0, 0, &op);
    if (st != PLM_SUCCESS) TU_EXPECT(op == NULL, "op_dense: out not cleared");
    plm_op_destroy(&op);
    return st;
}

static plm_status_t case_op_diagonal(void)
{
    const double d[6] = {1, 2, 3, 4, 5, 6};
    plm_op_t op = NULL;
    plm_status_t st = plm_op_diagonal(PLM_FLOAT64, 5, d, nbytes(5), &op);
    if (st != PLM_SUCCESS) TU_EXPECT(op == NULL, "op_diagonal: out not cleared");
    plm_op_destroy(&op);
    return st;
}

typedef struct {
    const char *fn;
    int collective;
    plm_status_t (*run)(void);
} case_t;

static const case_t CASES[] = {
    {"plm_array_create_ex", 1, case_create_ex},
    {"plm_array_asarray", 1, case_asarray},
    {"plm_array_asarray (BROADCAST)", 1, case_asarray_broadcast},
    {"plm_array_set_global", 1, case_set_global},
    {"plm_array_gather_to", 1, case_gather_to},
    {"plm_array_scatter_from", 1, case_scatter_from},
    {"plm_array_add_ghost_cells", 1, case_add_ghost_cells},
    {"plm_stacked_asarray", 1, case_stacked_asarray},
    {"plm_op_matrix_mult (SUMMA)", 1, case_matrix_mult_summa},
    {"plm_op_matrix_mult (block)", 1, case_matrix_mult_block},
    {"plm_array_create_from_layout", 0, case_create_from_layout},
    {"plm_op_dense", 0, case_op_dense},
    {"plm_op_diagonal", 0, case_op_diagonal},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static void run_case(const case_t *c)
{
    for (int kind = 0; kind < NKINDS; kind++) {
        g_kind = kind;
        TU_MARK();
        plm_clear_last_error();
        const plm_status_t st = c->run();
        const int fails = kind != GOOD && (c->collective || tu_rank == LAST);
        const plm_status_t want = fails ? A : PLM_SUCCESS;
        int all[TU_MAX_RANKS] = {0}, mine = (int)st;
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        if (tu_rank == 0)
            for (int r = 0; r < tu_size; r++) {
                const int want_r = kind != GOOD && (c->collective || r == LAST) ? (int)A : (int)PLM_SUCCESS;
                TU_EXPECT(all[r] == want_r, "%s, %s on rank %d: rank %d returned %d (%s), expected %d", c->fn,
                          KIND_NAME[kind], LAST, r, all[r], plm_status_string((plm_status_t)all[r]), want_r);
            }
        TU_EXPECT(st == want, "%s, %s: returned %d (%s): %s", c->fn, KIND_NAME[kind], (int)st, plm_status_string(st),
                  plm_last_error());
        if (fails)
            TU_EXPECT(strstr(plm_last_error(), "_bytes = ") != NULL, "%s, %s: the message names no size: %s", c->fn,
                      KIND_NAME[kind], plm_last_error());
        sane();
    }
    g_kind = GOOD;
}

static void test_every_buffer_function(void **state)
{
    (void)state;
    set_g2();
    for (int i = 0; i < NCASES; i++) run_case(&CASES[i]);
    TU_DONE();
}

/* The message gives both sizes and the element count, on every rank. */
static void test_message(void **state)
{
    (void)state;
    set_g2();
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *buf = tu_alloc(nones() + 1);
    const int64_t n = nones();
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_rank == LAST ? 4 * n : 8 * n), A);
    char want[160];
    snprintf(want, sizeof want, "out_bytes = %lld, expected %lld (%lld float64 elements)", (long long)(4 * n),
             (long long)(8 * n), (long long)n);
    TU_EXPECT(strstr(plm_last_error(), want) != NULL, "message \"%s\" lacks \"%s\"", plm_last_error(), want);
    sane();
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

/* NULL user_data with 0 bytes allocates; NULL with bytes, or data with 0 bytes, is refused. */
static void test_user_data_null(void **state)
{
    (void)state;
    set_g2();
    const int64_t nloc = tu_split(G2[0], tu_size, tu_rank) * G2[1];
    double *user = tu_alloc(nloc + 1);
    plm_array_t x = NULL;
    TU_CHECK_OK(plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0, NULL,
                                    0, NULL, NULL, 0, &x));
    plm_array_destroy(&x);
    /* collective: the last rank alone is wrong, every rank fails */
    TU_EXPECT_ERR(plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0, NULL,
                                      0, NULL, NULL, tu_rank == LAST ? nloc * 8 : 0, &x),
                  A);
    sane();
    TU_EXPECT_ERR(plm_array_create_ex(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0, NULL,
                                      0, NULL, user, tu_rank == LAST ? 0 : nloc * 8, &x),
                  A);
    sane();
    /* not collective: local */
    plm_layout_t l = NULL;
    TU_OK(plm_layout_create(tu_comm, 2, G2, 0, PLM_PARTITION_SCATTER, 0, NULL, 0, NULL, &l));
    TU_CHECK_OK(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    plm_array_destroy(&x);
    TU_EXPECT_ERR(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 8, &x), A);
    TU_EXPECT_ERR(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, user, 0, &x), A);
    /* the float32 array on the same memory takes half the bytes */
    TU_CHECK_OK(plm_array_create_from_layout(l, PLM_FLOAT32, PLM_MEMORY_HOST, user, nloc * 4, &x));
    plm_array_destroy(&x);
    plm_layout_destroy(&l);
    /* an empty matrix-mult block: NULL with 0 bytes */
    plm_op_t op = NULL;
    TU_CHECK_OK(plm_op_matrix_mult(tu_comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, 0, 0, 0, NULL, 0, &op));
    plm_op_destroy(&op);
    TU_CHECK_OK(plm_op_dense(PLM_FLOAT64, 0, 3, NULL, 0, 0, 0, &op));
    plm_op_destroy(&op);
    free(user);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_every_buffer_function),
        TU_TEST(test_message),
        TU_TEST(test_user_data_null),
    };
    tu_watchdog_s = 60; /* a hang (ranks disagreeing) is a failure */
    return plm_run_group_tests_mpi(tests);
}
