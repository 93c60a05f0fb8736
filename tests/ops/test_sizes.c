/* Sizes past 64 bits (issue 16): each known wrap, reproduced at any rank count, must give the
 * same error on every rank (a rank's own overflow: INVALID_ARG; sizes that overflow only when
 * summed over the ranks: SIZE_MISMATCH), never a wrapped size, a crash or a hang. Zero and
 * callback operators and layouts hold no memory, so huge shapes are cheap. Registered WIDE:
 * the halo and stencil sums can only pass 2^63 from 5 ranks on (each rank's block must fit in
 * bytes), which the 7-rank run covers; below that those cases check the boundary instead. */
#include <stdint.h>

#include "ops_test_util.h"

#define A PLM_ERR_INVALID_ARG
#define S PLM_ERR_SIZE_MISMATCH

static const int64_t G = INT64_MAX;

/* Expect st on every rank, and a message that says what overflowed. */
static void expect_overflow(plm_status_t st, plm_status_t want, const char *what)
{
    TU_EXPECT(st == want, "%s: returned %d (%s), expected %d (%s): %s", what, (int)st, plm_status_string(st),
              (int)want, plm_status_string(want), plm_last_error());
    TU_EXPECT(strstr(plm_last_error(), "overflows 64 bits") != NULL, "%s: message: %s", what, plm_last_error());
}

/* Local extents along the axis that sum past 2^64: at 4 ranks (G, G, G, 2) wraps to exactly
 * the global extent G, so a wrapping sum would accept the layout. */
static void test_layout_extents_past_2_64(void **state)
{
    (void)state;
    int64_t *rows = calloc((size_t)tu_size, sizeof *rows);
    for (int r = 0; r < tu_size; r++) rows[r] = r < 3 ? G : r == 3 ? 2 : 0;
    plm_layout_t l = (plm_layout_t)(void *)&tu_fail;
    plm_clear_last_error();
    plm_status_t st = plm_layout_create(tu_comm, 1, &G, 0, PLM_PARTITION_SCATTER, tu_size, rows, 0, NULL, &l);
    if (tu_size == 1) { /* one extent of G: valid */
        TU_CHECK_OK(st);
        int64_t n = 0;
        TU_CHECK_OK(plm_layout_local_size(l, &n));
        TU_EXPECT(n == G, "local size %lld", (long long)n);
        plm_layout_destroy(&l);
    } else {
        expect_overflow(st, S, "plm_layout_create");
        TU_EXPECT(l == NULL, "out not cleared");
    }
    free(rows);
    TU_DONE();
}

/* The local byte count of set_data: 2^61 + 1 float64 elements are 2^64 + 8 bytes. */
static void test_array_bytes_past_2_63(void **state)
{
    (void)state;
    const int64_t n = ((int64_t)1 << 61) + 1;
    for (int p = 0; p < 2; p++) {
        const plm_partition_t part = p ? PLM_PARTITION_BROADCAST : PLM_PARTITION_SCATTER;
        plm_array_t x = (plm_array_t)(void *)&tu_fail;
        plm_clear_last_error();
        expect_overflow(plm_array_create(tu_comm, 1, &n, 0, part, PLM_FLOAT64, PLM_MEMORY_HOST, &x), A,
                        "plm_array_create");
        TU_EXPECT(x == NULL, "out not cleared");
        /* the layout itself is fine (no memory); an array on it is refused locally */
        plm_layout_t l = NULL;
        TU_OK(plm_layout_create(tu_comm, 1, &n, 0, part, 0, NULL, 0, NULL, &l));
        plm_clear_last_error();
        expect_overflow(plm_array_create_from_layout(l, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x), A,
                        "plm_array_create_from_layout");
        plm_layout_destroy(&l);
    }
    TU_DONE();
}

/* Zero blocks of 2^62 rows: 4 of them, dealt round-robin to the ranks. Where one rank holds
 * two, its own sum overflows (INVALID_ARG, at 1-3 ranks); at 4 ranks and more only the sum over
 * the ranks does (SIZE_MISMATCH). Also vstack, and hstack on the columns. */
static void test_stacks_past_2_63(void **state)
{
    (void)state;
    const int64_t big = (int64_t)1 << 62;
    plm_op_t ops[4] = {NULL}, tops[4] = {NULL};
    int n = 0;
    for (int b = 0; b < 4; b++)
        if (b % tu_size == tu_rank) { /* rank-dependent: soft (local) checks only */
            TU_CHECK_OK(plm_op_zero(PLM_FLOAT64, big, 1, &ops[n]));
            TU_CHECK_OK(plm_op_zero(PLM_FLOAT64, 1, big, &tops[n]));
            n++;
        }
    if (n == 0) { /* more than 4 ranks: an empty block */
        TU_CHECK_OK(plm_op_zero(PLM_FLOAT64, 0, 1, &ops[n]));
        TU_CHECK_OK(plm_op_zero(PLM_FLOAT64, 1, 0, &tops[n]));
        n++;
    }
    const plm_status_t want = tu_size < 4 ? A : S;
    plm_op_t op = (plm_op_t)(void *)&tu_fail;
    plm_clear_last_error();
    expect_overflow(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)ops, 0, NULL, &op), want, "blockdiag");
    TU_EXPECT(op == NULL, "out not cleared");
    plm_clear_last_error();
    expect_overflow(plm_op_vstack(tu_comm, n, (const plm_const_op_t *)ops, &op), want, "vstack");
    plm_clear_last_error();
    expect_overflow(plm_op_hstack(tu_comm, n, (const plm_const_op_t *)tops, &op), want, "hstack");
    /* One block per rank, 2^62 rows each: fine on one rank, past 2^63 summed from two ranks. */
    plm_op_t one = NULL;
    TU_OK(plm_op_zero(PLM_FLOAT64, big, 1, &one));
    plm_clear_last_error();
    plm_status_t st = plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&one, 0, NULL, &op);
    if (tu_size == 1) {
        TU_CHECK_OK(st);
        int64_t rows = 0, cols = 0;
        TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
        TU_EXPECT(rows == big && cols == 1, "shape %lld x %lld", (long long)rows, (long long)cols);
        plm_op_destroy(&op);
    } else {
        expect_overflow(st, S, "blockdiag of one 2^62-row block per rank");
    }
    /* vstack: columns are not summed over the ranks (the domain is replicated), but the
     * adjoint's scratch vector of 2^62 float64 is past 2^63 bytes. */
    plm_op_t wide = NULL;
    TU_OK(plm_op_zero(PLM_FLOAT64, 1, big, &wide));
    plm_clear_last_error();
    expect_overflow(plm_op_vstack(tu_comm, 1, (const plm_const_op_t *)&wide, &op), A,
                    "vstack of 2^62 float64 columns (its adjoint's scratch vector)");
    plm_op_destroy(&op);
    plm_op_destroy(&wide);
    plm_op_destroy(&one);
    for (int i = 0; i < n; i++) {
        plm_op_destroy(&ops[i]);
        plm_op_destroy(&tops[i]);
    }
    TU_DONE();
}

/* Halo widths near INT64_MAX: a block grown past 64 bits on one rank is refused on every rank. */
static void test_halo_widths_near_int64_max(void **state)
{
    (void)state;
    const int64_t dims[1] = {4 * (int64_t)tu_size};
    const int64_t huge[2] = {G, G};
    plm_op_t op = (plm_op_t)(void *)&tu_fail;
    plm_clear_last_error();
    expect_overflow(plm_op_halo(tu_comm, PLM_FLOAT64, 1, dims, NULL, 2, huge, &op), A, "halo, every width G");
    TU_EXPECT(op == NULL, "out not cleared");
    for (int bad = 0; bad < tu_size; bad++) { /* one rank grows its minus side by G - 1 */
        int64_t w[2] = {tu_rank > 0 ? 1 : 0, tu_rank < tu_size - 1 ? 1 : 0};
        if (tu_rank == bad) w[0] = G - 1;
        plm_clear_last_error();
        expect_overflow(plm_op_halo(tu_comm, PLM_FLOAT64, 1, dims, NULL, 2, w, &op), A, "halo, one width G - 1");
    }
    TU_DONE();
}

/* Grown blocks that fit on each rank but not summed over the ranks. On a 1 x P grid every
 * rank is at the boundary of axis 0, so each may grow it by any width; float32 blocks of
 * 2^61 - 4 elements fit in bytes, and from 5 ranks on they sum past 2^63. */
static void test_halo_blocks_summed_past_2_63(void **state)
{
    (void)state;
    const int64_t dims[2] = {1, 4 * (int64_t)tu_size};
    const int grid[2] = {1, tu_size};
    const int64_t w[4] = {((int64_t)1 << 59) - 2, 0, 0, 0}; /* grown block: (2^59 - 1) x 4 */
    const int64_t block = (((int64_t)1 << 59) - 1) * 4;
    plm_op_t op = NULL;
    plm_clear_last_error();
    plm_status_t st = plm_op_halo(tu_comm, PLM_FLOAT32, 2, dims, grid, 4, w, &op);
    if (tu_size < 5) {
        TU_CHECK_OK(st);
        int64_t rows = 0, cols = 0;
        TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
        TU_EXPECT(rows == block * tu_size && cols == dims[1], "shape %lld x %lld", (long long)rows, (long long)cols);
        plm_op_destroy(&op);
    } else {
        expect_overflow(st, S, "halo, grown blocks summed");
        TU_EXPECT(op == NULL, "out not cleared");
    }
    TU_DONE();
}

/* Stencil local_rows: every rank claims all 2^61 - 1 rows of a float32 model (the largest
 * whose bytes fit). One rank: valid. Several: a mismatch, from 5 ranks on a sum past 2^63. */
static void test_stencil_rows_summed(void **state)
{
    (void)state;
    const int64_t dims[1] = {((int64_t)1 << 61) - 1};
    plm_op_t op = NULL;
    plm_clear_last_error();
    plm_status_t st = plm_op_first_derivative(tu_comm, PLM_FLOAT32, 1, dims, dims[0], 0, 1.0, PLM_DERIV_FORWARD, 3, 0,
                                              &op);
    if (tu_size == 1) {
        TU_CHECK_OK(st);
        plm_op_destroy(&op);
    } else if (tu_size < 5) {
        TU_EXPECT(st == S, "local_rows summing to %d dims[0]: %d %s", tu_size, (int)st, plm_last_error());
    } else {
        expect_overflow(st, S, "stencil local_rows");
    }
    /* a model whose bytes overflow: 2^61 float32 rows */
    const int64_t over[1] = {(int64_t)1 << 61};
    plm_clear_last_error();
    expect_overflow(plm_op_first_derivative(tu_comm, PLM_FLOAT32, 1, over, -1, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &op), A,
                    "stencil model bytes");
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_layout_extents_past_2_64),    TU_TEST(test_array_bytes_past_2_63),
        TU_TEST(test_stacks_past_2_63),            TU_TEST(test_halo_widths_near_int64_max),
        TU_TEST(test_halo_blocks_summed_past_2_63), TU_TEST(test_stencil_rows_summed),
    };
    tu_watchdog_s = 60;
    return plm_run_group_tests_mpi(tests);
}
