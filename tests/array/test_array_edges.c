/* Edge cases of v0.2: sizes that overflow, misaligned wrapped memory, ghost-cell counts near
 * INT64_MAX, operands on communicators with another rank order, a config struct shorter than
 * any release, invalid Fortran handles, NaN data across ranks, typed scalars; the contracts of
 * stack members' communicators and of ord 0 with NaN. */
#include <stdint.h>

#include "array_test_util.h"

#define A PLM_ERR_INVALID_ARG
#define S PLM_ERR_SIZE_MISMATCH

static void test_sizes_that_overflow(void **state)
{
    (void)state;
    const int64_t big[2] = {(int64_t)1 << 32, (int64_t)1 << 32}; /* 2^64 elements */
    const int64_t bytes[2] = {(int64_t)1 << 31, (int64_t)1 << 28}; /* 2^59 elements, 2^63 bytes as complex128 */
    const int64_t huge[1] = {INT64_MAX};
    CE("2^32 x 2^32 complex128", A, A, tu_comm, 2, big, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, PLM_MEMORY_HOST, 0,
       NULL, 0, NULL, 0);
    CE("2^59 complex128 elements (2^63 bytes)", A, A, tu_comm, 2, bytes, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128,
       PLM_MEMORY_HOST, 0, NULL, 0, NULL, 0);
    CE("INT64_MAX float32 elements", A, A, tu_comm, 1, huge, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT32,
       PLM_MEMORY_HOST, 0, NULL, 0, NULL, 0);
    /* the message says what overflowed */
    plm_array_t x = NULL;
    plm_array_create(tu_comm, 2, big, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, PLM_MEMORY_HOST, &x);
    TU_EXPECT(strstr(plm_last_error(), "overflows") != NULL, "message: %s", plm_last_error());
    TU_DONE();
}

static void test_misaligned_user_data(void **state)
{
    (void)state;
    const int64_t g[1] = {4 * tu_size};
    double *mem = (double *)calloc(8, sizeof(double));
    for (int bad = 0; bad < tu_size; bad++) {
        void *p = tu_rank == bad ? (void *)((char *)mem + 1) : (void *)mem;
        plm_array_t x = SENTINEL;
        TU_EXPECT_ERR(plm_array_create_ex(tu_comm, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0,
                                          NULL, 0, NULL, p, 4 * (int64_t)sizeof(double), &x),
                      A);
        TU_EXPECT(x == NULL, "out not cleared");
    }
    /* aligned memory is wrapped without copy */
    plm_array_t x = NULL;
    TU_CHECK_OK(plm_array_create_ex(tu_comm, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, 0, NULL,
                                    0, NULL, mem, 4 * (int64_t)sizeof(double), &x));
    const void *d = NULL;
    TU_CHECK_OK(plm_array_get_local_read(x, &d));
    TU_EXPECT(d == mem, "wrapped data copied");
    TU_CHECK_OK(plm_array_restore_local_read(x, &d));
    plm_array_destroy(&x);
    free(mem);
    TU_DONE();
}

static void test_ghost_counts_near_int64_max(void **state)
{
    (void)state;
    const int64_t g[2] = {4 * tu_size + 1, 3};
    plm_array_t x = tu_make(2, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    int64_t shape[2];
    TU_EXPECT_ERR(plm_array_ghost_shape(x, INT64_MAX, INT64_MAX, shape), S);
    TU_EXPECT_ERR(plm_array_ghost_shape(x, 1, INT64_MAX - 1, shape), S);
    double buf[64];
    int64_t ls[2];
    TU_OK(plm_array_local_shape(x, ls));
    for (int bad = 0; bad < tu_size; bad++) /* the others pass valid counts */
        TU_EXPECT_ERR(plm_array_add_ghost_cells(x, tu_rank == bad ? INT64_MAX : 0, tu_rank == bad ? INT64_MAX : 0,
                                                buf, tu_bytes(PLM_FLOAT64, ls[0] * ls[1])),
                      S);
    TU_CHECK_OK(plm_array_fill(x, 1, 0));
    double r = 0;
    TU_CHECK_OK(plm_array_norm(x, 1, &r));
    TU_EXPECT(r == (double)(g[0] * g[1]), "sanity norm %g", r);
    plm_array_destroy(&x);
    TU_DONE();
}

/* Same size, other rank order: refused. Same ranks through another plm_comm_t: accepted. */
static void test_operands_on_other_communicators(void **state)
{
    (void)state;
    const int64_t g[1] = {3 * tu_size + 2};
    plm_comm_t rev = NULL, twin = NULL;
    TU_OK(plm_comm_split(tu_comm, 0, tu_size - tu_rank, &rev));
    TU_OK(plm_comm_create(MPI_COMM_WORLD, NULL, &twin));
    plm_array_t x = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t y = NULL, t = NULL;
    TU_OK(plm_array_create(rev, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &y));
    TU_OK(plm_array_create(twin, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &t));
    TU_OK(plm_array_fill(x, 1, 0));
    TU_OK(plm_array_fill(y, 2, 0));
    TU_OK(plm_array_fill(t, 3, 0));
    double r = 0;
    if (tu_size > 1) {
        TU_EXPECT_ERR(plm_array_add(x, y, x), A);
        TU_EXPECT_ERR(plm_array_axpby(1, 0, y, 1, 0, x), A);
        TU_EXPECT_ERR(plm_array_dot(x, y, 0, &r, NULL), A);
        plm_stacked_t s = NULL;
        plm_array_t xy[2] = {x, y};
        TU_EXPECT_ERR(plm_stacked_create(2, xy, &s), A);
    }
    TU_CHECK_OK(plm_array_add(x, t, x));
    TU_CHECK_OK(plm_array_dot(x, t, 0, &r, NULL));
    TU_EXPECT(r == 12.0 * (double)g[0], "dot across twin communicators: %g", r);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&t);
    plm_comm_destroy(&rev);
    plm_comm_destroy(&twin);
    TU_DONE();
}

/* The contract of plm_stacked_create: members on the same ranks in the same order. Another
 * plm_comm_t over the same ranks is fine; a communicator of another size is SIZE_MISMATCH;
 * the same size with another rank order is INVALID_ARG. Not collective: each rank's verdict. */
static void test_stack_member_communicators(void **state)
{
    (void)state;
    const int64_t g[1] = {3 * tu_size + 2};
    plm_comm_t twin = NULL, rev = NULL, half = NULL;
    TU_OK(plm_comm_create(MPI_COMM_WORLD, NULL, &twin));
    TU_OK(plm_comm_split(tu_comm, 0, tu_size - tu_rank, &rev));   /* same ranks, reversed order */
    TU_OK(plm_comm_split(tu_comm, tu_rank == 0, tu_rank, &half)); /* rank 0 alone, the others together */
    plm_array_t x = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
    plm_array_t t = NULL, r = NULL, h = NULL;
    TU_OK(plm_array_create(twin, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &t));
    TU_OK(plm_array_create(rev, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &r));
    TU_OK(plm_array_create(half, 1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &h));
    TU_OK(plm_array_fill(x, 1, 0));
    TU_OK(plm_array_fill(t, 2, 0));

    plm_stacked_t s = NULL;
    plm_array_t xt[2] = {x, t}, xr[2] = {x, r}, xh[2] = {x, h};
    TU_CHECK_OK(plm_stacked_create(2, xt, &s));
    double dot = 0;
    TU_CHECK_OK(plm_stacked_dot(s, s, 0, &dot, NULL));
    TU_EXPECT(dot == 5.0 * (double)g[0], "stack over twin communicators: dot %g", dot);
    plm_stacked_destroy(&s);

    s = (plm_stacked_t)(void *)&tu_fail;
    if (tu_size > 1) { /* at one rank the reversed order is the same order */
        TU_EXPECT_ERR(plm_stacked_create(2, xr, &s), A);
        TU_EXPECT(s == NULL, "out not cleared");
        TU_EXPECT(strstr(plm_last_error(), "rank order") != NULL, "message: %s", plm_last_error());
    } else {
        TU_CHECK_OK(plm_stacked_create(2, xr, &s));
        plm_stacked_destroy(&s);
    }
    if (tu_size > 1) { /* each half is smaller than the whole */
        s = (plm_stacked_t)(void *)&tu_fail;
        TU_EXPECT_ERR(plm_stacked_create(2, xh, &s), S);
        TU_EXPECT(s == NULL, "out not cleared");
    }
    plm_array_destroy(&x);
    plm_array_destroy(&t);
    plm_array_destroy(&r);
    plm_array_destroy(&h);
    plm_comm_destroy(&twin);
    plm_comm_destroy(&rev);
    plm_comm_destroy(&half);
    TU_DONE();
}

/* A small foreign object passed as a config: only its magic word may be read (ASan checks the rest). */
static void test_short_config(void **state)
{
    (void)state;
    uint32_t *cfg = (uint32_t *)malloc(sizeof(uint32_t));
    *cfg = 0;
    plm_comm_t c = (plm_comm_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_comm_create(MPI_COMM_WORLD, (plm_const_comm_config_t)(void *)cfg, &c), A);
    TU_EXPECT(c == NULL, "out not cleared");
    free(cfg);
    TU_DONE();
}

static void test_invalid_fortran_handle(void **state)
{
    (void)state;
    plm_comm_t c = (plm_comm_t)(void *)&tu_fail;
    TU_EXPECT_ERR(plm_comm_create_f((MPI_Fint)987654, NULL, &c), A);
    TU_EXPECT(c == NULL, "out not cleared");
    TU_EXPECT_ERR(plm_comm_create_f((MPI_Fint)-3, NULL, &c), A);
    TU_CHECK_OK(plm_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &c));
    plm_comm_destroy(&c);
    TU_DONE();
}

/* NaN on one rank reaches every rank (sums; max/min lanes are covered white-box). */
static void test_nan_on_one_rank(void **state)
{
    (void)state;
    const int64_t g[1] = {2 * tu_size};
    for (int bad = 0; bad < tu_size; bad++) {
        plm_array_t x = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
        TU_OK(plm_array_fill(x, 1, 0));
        double *d = NULL;
        TU_OK(plm_array_get_local_write(x, (void **)&d));
        if (tu_rank == bad) d[0] = NAN;
        TU_OK(plm_array_restore_local_write(x, (void **)&d));
        double r2 = 0, r1 = 0, dot = 0;
        TU_CHECK_OK(plm_array_norm(x, 2, &r2));
        TU_CHECK_OK(plm_array_norm(x, 1, &r1));
        TU_CHECK_OK(plm_array_dot(x, x, 0, &dot, NULL));
        TU_EXPECT(isnan(r2) && isnan(r1) && isnan(dot), "NaN lost: %g %g %g", r2, r1, dot);
        plm_array_destroy(&x);
    }
    TU_DONE();
}

/* ord 0 counts NaN as a non-zero (numpy.count_nonzero); every other ord gives NaN. */
static void test_norm_ord0_counts_nan(void **state)
{
    (void)state;
    const int64_t g[1] = {3 * tu_size + 1};
    for (int bad = 0; bad < tu_size; bad++) {
        plm_array_t x = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, NULL, NULL, NULL);
        TU_OK(plm_array_fill(x, 0, 0));
        double *d = NULL;
        int64_t n = 0;
        TU_OK(plm_array_local_size(x, &n));
        TU_OK(plm_array_get_local_write(x, (void **)&d));
        if (tu_rank == bad) d[0] = NAN;     /* every rank holds >= 3 entries */
        if (tu_rank == 0) d[n - 1] = 2.0; /* one ordinary non-zero */
        TU_OK(plm_array_restore_local_write(x, (void **)&d));
        double r0 = -1, rinf = 0, rminf = 0, r2 = 0;
        TU_CHECK_OK(plm_array_norm(x, 0, &r0));
        TU_CHECK_OK(plm_array_norm(x, INFINITY, &rinf));
        TU_CHECK_OK(plm_array_norm(x, -INFINITY, &rminf));
        TU_CHECK_OK(plm_array_norm(x, 2, &r2));
        TU_EXPECT(r0 == 2.0, "ord 0 with one NaN and one 2.0: %g, expected 2", r0);
        TU_EXPECT(isnan(rinf) && isnan(rminf) && isnan(r2), "NaN lost: %g %g %g", rinf, rminf, r2);
        /* a stack: the members' counts add up, NaN included */
        plm_stacked_t s = NULL;
        plm_array_t xx[2] = {x, x};
        TU_OK(plm_stacked_create(2, xx, &s));
        TU_CHECK_OK(plm_stacked_norm(s, 0, &r0));
        TU_EXPECT(r0 == 4.0, "stacked ord 0: %g, expected 4", r0);
        plm_stacked_destroy(&s);
        plm_array_destroy(&x);
    }
    TU_DONE();
}

/* Scalars as (re, im) doubles: rounded to the dtype; imaginary parts need a complex dtype;
 * dot's im may be NULL only for real dtypes. */
static void test_typed_scalars(void **state)
{
    (void)state;
    const int64_t g[1] = {2 * tu_size + 1};
    plm_array_t z = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX64, NULL, NULL, NULL);
    plm_array_t f = tu_make(1, g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, NULL, NULL, NULL);
    TU_CHECK_OK(plm_array_fill(z, 1.0, -2.0));
    TU_CHECK_OK(plm_array_fill(f, 0.1, 0.0));
    TU_EXPECT_ERR(plm_array_fill(f, 0.1, 1e-300), A);
    double re = 0, im = 0;
    TU_EXPECT_ERR(plm_array_dot(z, z, 1, &re, NULL), A);
    TU_CHECK_OK(plm_array_dot(z, z, 1, &re, &im)); /* sum |z|^2 = 5 n */
    TU_EXPECT(re == 5.0 * (double)g[0] && im == 0.0, "vdot (%g, %g)", re, im);
    TU_CHECK_OK(plm_array_dot(z, z, 0, &re, &im)); /* sum z^2 = (-3 - 4i) n */
    TU_EXPECT(re == -3.0 * (double)g[0] && im == -4.0 * (double)g[0], "dot (%g, %g)", re, im);
    TU_CHECK_OK(plm_array_scale(z, 0.0, 1.0)); /* i (1 - 2i) = 2 + i */
    TU_CHECK_OK(plm_array_axpby(1.0, 0.0, z, 0.5, 0.0, z)); /* 1.5 (2 + i) = 3 + 1.5i */
    TU_CHECK_OK(plm_array_dot(z, z, 1, &re, &im));
    TU_EXPECT(re == 11.25 * (double)g[0], "after scale/axpby: %g", re);
    const void *d = NULL;
    TU_CHECK_OK(plm_array_get_local_read(f, &d));
    TU_EXPECT(((const float *)d)[0] == 0.1f, "float32 value rounded: %.9g", (double)((const float *)d)[0]);
    TU_CHECK_OK(plm_array_restore_local_read(f, &d));
    plm_array_destroy(&z);
    plm_array_destroy(&f);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_sizes_that_overflow),       TU_TEST(test_misaligned_user_data),
        TU_TEST(test_ghost_counts_near_int64_max), TU_TEST(test_operands_on_other_communicators),
        TU_TEST(test_short_config),              TU_TEST(test_invalid_fortran_handle),
        TU_TEST(test_nan_on_one_rank),           TU_TEST(test_typed_scalars),
        TU_TEST(test_stack_member_communicators), TU_TEST(test_norm_ord0_counts_nan),
    };
    tu_watchdog_s = 60;
    return plm_run_group_tests_mpi(tests);
}
