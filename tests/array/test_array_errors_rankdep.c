/* Arguments that differ between ranks. The header: "A bad argument found on one rank makes
 * every rank return the error (no hang)". Each case is its own test; a library that lets ranks
 * disagree leaves them in different collectives, which poisons every later call in the
 * process, so these live apart from test_array_errors.c. Run one case alone with
 *   mpiexec -n 3 ./test_array_errors_rankdep <test-name-pattern>
 * Every case ends with a collective sanity check (norm of a known array). */
#include "array_test_util.h"

#define A PLM_ERR_INVALID_ARG
#define S PLM_ERR_SIZE_MISMATCH

/* A SCATTER (4P+1) x 3 float64 array of ones (every rank holds >= 4 rows), and its BROADCAST twin. */
static plm_array_t ones(plm_partition_t part)
{
    int64_t g2[2] = {4 * tu_size + 1, 3};
    plm_array_t x = tu_make(2, g2, 0, part, PLM_FLOAT64, NULL, NULL, NULL);
    TU_OK(plm_array_fill(x, 1, 0));
    return x;
}
static int64_t nones(void) { return (4 * tu_size + 1) * 3; }

/* The comm still works and ranks are in step: a norm of a known array. */
static void sane(plm_const_array_t x)
{
    double nrm = -1;
    TU_CHECK_OK(plm_array_norm(x, 1.0, &nrm));
    TU_EXPECT(nrm == (double)nones(), "sanity norm after the error: %g expected %lld", nrm, (long long)nones());
}

#define LAST (tu_size - 1)

/* Arguments that differ between ranks: one rank's bad value makes every rank fail. */
static void test_create_rank_dependent(void **state)
{
    (void)state;
    int P = tu_size, r = tu_rank;
    int64_t g2[2] = {7, 5}, neg[2] = {7, -3};
    int64_t rows[2 * P]; /* sized by the rank count: no upper limit on ranks */
    int mask[P];
    const plm_dtype_t F = PLM_FLOAT64;
    const plm_partition_t SC = PLM_PARTITION_SCATTER;
    const plm_memory_t H = tu_mem; /* PLM_TEST_MEMORY=device: the device rows */
    int last = P - 1;

    CE("bad axis on rank 0 only", A, A, tu_comm, 2, g2, r == 0 ? 2 : 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("bad axis on the last rank only", A, A, tu_comm, 2, g2, r == last ? -7 : 1, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("bad partition on the last rank only", A, A, tu_comm, 2, g2, 0, r == last ? (plm_partition_t)9 : SC, F, H, 0,
       NULL, 0, NULL, 0);
    CE("bad dtype on rank 0 only", A, A, tu_comm, 2, g2, 0, SC, r == 0 ? (plm_dtype_t)12 : F, H, 0, NULL, 0, NULL, 0);
    CE("negative extent on rank 0 only", A, A, tu_comm, 2, r == 0 ? neg : g2, 0, SC, F, H, 0, NULL, 0, NULL, 0);
    CE("NULL global_shape on the last rank only", A, A, tu_comm, 2, r == last ? NULL : g2, 0, SC, F, H, 0, NULL, 0,
       NULL, 0);
    CE("NULL out on rank 0 only", A, A, tu_comm, 2, g2, 0, SC, F, H, 0, NULL, 0, NULL, r == 0);
    if (!tu_has_device_backend())
        CE("device memory on the last rank only", PLM_ERR_BACKEND_UNAVAILABLE, PLM_ERR_BACKEND_UNAVAILABLE, tu_comm, 2,
           g2, 0, SC, F, r == last ? PLM_MEMORY_DEVICE : H, 0, NULL, 0, NULL, 0);
    /* local shapes: only the last rank's own row is wrong (non-axis extent) */
    tu_default_rows(2, g2, 0, SC, P, rows);
    if (r == last) rows[last * 2 + 1] = 4;
    CE("wrong non-axis local extent on the last rank only", S, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    /* local shapes: only rank 0's own row has one more entry along the axis */
    tu_default_rows(2, g2, 0, SC, P, rows);
    if (r == 0) rows[0] += 1;
    CE("axis extent one too many on rank 0 only", S, S, tu_comm, 2, g2, 0, SC, F, H, P, rows, 0, NULL, 0);
    /* nlocal only on rank 0 */
    tu_default_rows(2, g2, 0, SC, P, rows);
    CE("local_shapes NULL on rank 0 only", A, A, tu_comm, 2, g2, 0, SC, F, H, P, r == 0 ? NULL : rows, 0, NULL, 0);
    /* mask with a negative id on rank 0 only */
    tu_mask(0, P, mask);
    if (r == 0) mask[0] = -1;
    CE("negative mask id on rank 0 only", A, A, tu_comm, 2, g2, 0, SC, F, H, 0, NULL, P, mask, 0);
    tu_mask(0, P, mask);
    CE("mask NULL on the last rank only", A, A, tu_comm, 2, g2, 0, SC, F, H, 0, NULL, P, r == last ? NULL : mask, 0);

    /* and the communicator still works */
    plm_array_t x = tu_make(2, g2, 0, SC, F, NULL, NULL, NULL);
    double nrm = -1;
    TU_CHECK_OK(plm_array_fill(x, 1, 0));
    TU_CHECK_OK(plm_array_norm(x, 1.0, &nrm));
    TU_EXPECT(nrm == 35.0, "norm after errors %g", nrm);
    plm_array_destroy(&x);
    TU_DONE();
}


static void test_norm_nan_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double r = 0;
    TU_EXPECT_ERR(plm_array_norm(x, tu_rank == 0 ? NAN : 2.0, &r), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_null_result_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double r = 0;
    TU_EXPECT_ERR(plm_array_norm(x, 2.0, tu_rank == LAST ? NULL : &r), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_broadcast_nan_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_BROADCAST);
    double r = 0;
    TU_EXPECT_ERR(plm_array_norm(x, tu_rank == LAST ? NAN : 1.0, &r), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_dot_null_result_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double r = 0;
    TU_EXPECT_ERR(plm_array_dot(x, x, 0, tu_rank == 0 ? NULL : &r, NULL), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_axis_bad_axis_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double buf[3];
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, tu_rank == LAST ? 7 : 0, buf, 3), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_axis_nan_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double buf[3];
    TU_EXPECT_ERR(plm_array_norm_axis(x, tu_rank == 0 ? NAN : 2.0, 0, buf, 3), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_axis_n_out_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double buf[3];
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 0, buf, tu_rank == 0 ? 2 : 3), S);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_norm_axis_null_out_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double buf[3];
    TU_EXPECT_ERR(plm_array_norm_axis(x, 2.0, 0, tu_rank == LAST ? NULL : buf, 3), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_asarray_out_bytes_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_array_asarray(x, 0, buf, tu_bytes(PLM_FLOAT64, tu_rank == 0 ? nones() - 3 : nones())), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_asarray_null_out_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_array_asarray(x, 0, tu_rank == LAST ? NULL : (void *)buf, tu_bytes(PLM_FLOAT64, nones())), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_set_global_null_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_array_set_global(x, tu_rank == LAST ? NULL : (void *)buf, tu_bytes(PLM_FLOAT64, nones())), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_set_global_broadcast_null_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_BROADCAST);
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_array_set_global(x, tu_rank == 0 ? NULL : (void *)buf, tu_bytes(PLM_FLOAT64, nones())), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_fill_broadcast_imag_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_BROADCAST);
    TU_EXPECT_ERR(plm_array_fill(x, 1, tu_rank == 0 ? 0.5 : 0), A);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_ghost_negative_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    int64_t ls[2];
    TU_OK(plm_array_local_shape(x, ls));
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 0, tu_rank == 0 ? -2 : 0, buf, tu_bytes(PLM_FLOAT64, ls[0] * 3)), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_ghost_out_bytes_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    int64_t gs[2];
    TU_CHECK_OK(plm_array_ghost_shape(x, 1, 1, gs));
    double *buf = tu_alloc(nones() + 8);
    int64_t m = gs[0] * gs[1];
    TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 1, 1, buf, tu_bytes(PLM_FLOAT64, tu_rank == LAST ? m - 3 : m)), A);
    sane(x);
    free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

/* Documented explicitly: "A rank asked for more slices than it holds makes every rank return
 * PLM_ERR_SIZE_MISMATCH". Rank 1 asks rank 0 for its whole block + 1 (before). */
static void test_ghost_too_many_before_from_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    int64_t ls[2];
    TU_OK(plm_array_local_shape(x, ls));
    int64_t rows0 = tu_split(4 * tu_size + 1, tu_size, 0);
    int64_t before = tu_rank == 1 ? rows0 + 1 : 0;
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, 3 * (ls[0] + before) + 8)); /* in x's memory space */
    if (tu_size > 1)
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, before, 0, buf, tu_bytes(PLM_FLOAT64, (ls[0] + (tu_rank > 0 ? before : 0)) * 3)),
                      S);
    else
        TU_CHECK_OK(plm_array_add_ghost_cells(x, before, 0, buf, tu_bytes(PLM_FLOAT64, ls[0] * 3))); /* one rank: nothing to ask */
    sane(x);
    tu_buf_free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

/* The last-but-one rank asks the last rank for more than it holds (after). */
static void test_ghost_too_many_after_from_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    int64_t ls[2];
    TU_OK(plm_array_local_shape(x, ls));
    int64_t rl = tu_split(4 * tu_size + 1, tu_size, LAST);
    int64_t after = tu_rank == LAST - 1 ? rl + 2 : 0;
    void *buf = tu_buf(tu_bytes(PLM_FLOAT64, 3 * (ls[0] + after) + 8)); /* in x's memory space */
    if (tu_size > 1)
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, 0, after, buf, tu_bytes(PLM_FLOAT64, (ls[0] + after) * 3)), S);
    else
        TU_CHECK_OK(plm_array_add_ghost_cells(x, 0, 0, buf, tu_bytes(PLM_FLOAT64, ls[0] * 3)));
    sane(x);
    tu_buf_free(buf);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_redistribute_bad_axis_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    plm_array_t out = SENTINEL;
    TU_EXPECT_ERR(plm_array_redistribute(x, tu_rank == 0 ? -9 : 1, &out), A);
    TU_EXPECT(out == NULL, "redistribute: out not NULL after failure");
    if (out != NULL && out != SENTINEL) plm_array_destroy(&out);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_redistribute_null_out_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    plm_array_t out = SENTINEL;
    TU_EXPECT_ERR(plm_array_redistribute(x, 1, tu_rank == LAST ? NULL : &out), A);
    if (tu_rank != LAST) TU_EXPECT(out == NULL, "redistribute: out not NULL after failure");
    if (out != NULL && out != SENTINEL) plm_array_destroy(&out);
    sane(x);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_stacked_norm_nan_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(1, &x, &s));
    double r = 0;
    TU_EXPECT_ERR(plm_stacked_norm(s, tu_rank == 0 ? NAN : 2.0, &r), A);
    sane(x);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_stacked_dot_null_on_last(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(1, &x, &s));
    double r = 0;
    TU_EXPECT_ERR(plm_stacked_dot(s, s, 1, tu_rank == LAST ? NULL : &r, NULL), A);
    sane(x);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    TU_DONE();
}

static void test_stacked_asarray_out_bytes_on_rank0(void **state)
{
    (void)state;
    plm_array_t x = ones(PLM_PARTITION_SCATTER);
    plm_stacked_t s = NULL;
    TU_OK(plm_stacked_create(1, &x, &s));
    double *buf = tu_alloc(nones());
    TU_EXPECT_ERR(plm_stacked_asarray(s, buf, tu_bytes(PLM_FLOAT64, tu_rank == 0 ? nones() - 1 : nones())), A);
    sane(x);
    free(buf);
    plm_stacked_destroy(&s);
    plm_array_destroy(&x);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_create_rank_dependent),
        TU_TEST(test_norm_nan_on_rank0),
        TU_TEST(test_norm_null_result_on_last),
        TU_TEST(test_norm_broadcast_nan_on_last),
        TU_TEST(test_dot_null_result_on_rank0),
        TU_TEST(test_norm_axis_bad_axis_on_last),
        TU_TEST(test_norm_axis_nan_on_rank0),
        TU_TEST(test_norm_axis_n_out_on_rank0),
        TU_TEST(test_norm_axis_null_out_on_last),
        TU_TEST(test_asarray_out_bytes_on_rank0),
        TU_TEST(test_asarray_null_out_on_last),
        TU_TEST(test_set_global_null_on_last),
        TU_TEST(test_set_global_broadcast_null_on_rank0),
        TU_TEST(test_fill_broadcast_imag_on_rank0),
        TU_TEST(test_ghost_negative_on_rank0),
        TU_TEST(test_ghost_out_bytes_on_last),
        TU_TEST(test_ghost_too_many_before_from_rank0),
        TU_TEST(test_ghost_too_many_after_from_last),
        TU_TEST(test_redistribute_bad_axis_on_rank0),
        TU_TEST(test_redistribute_null_out_on_last),
        TU_TEST(test_stacked_norm_nan_on_rank0),
        TU_TEST(test_stacked_dot_null_on_last),
        TU_TEST(test_stacked_asarray_out_bytes_on_rank0),
    };
    tu_watchdog_s = 20; /* each case takes well under a second; a hang is a failure */
    /* Optional first argument: a cmocka test-name pattern, to run one case alone. */
    if (argc > 1 && argv[1][0] != '-') cmocka_set_test_filter(argv[1]);
    return plm_run_group_tests_mpi(tests);
}
