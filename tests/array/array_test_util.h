/* Shared helpers of the distributed-array tests (tests/array).
 *
 * Every test builds a deterministic global array in float64 (interleaved real/imaginary
 * pairs, imaginary parts 0 for real dtypes, values rounded to the dtype's precision so the
 * reference sees exactly what the library stores), computes the expected result serially in
 * double, and compares the library's local blocks / gathered buffers with it element by
 * element.
 *
 * Checks are "soft": a failing comparison prints a message (with the rank) and is counted;
 * TU_DONE() at the end of each test reduces the counts over all ranks with
 * assert_all_ranks_true(), so ranks never leave a test alone. Calls that later code depends
 * on (array creation) use TU_OK, which asserts on all ranks at once. */
#ifndef PLM_ARRAY_TEST_UTIL_H
#define PLM_ARRAY_TEST_UTIL_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L /* alarm() for the watchdog */
#endif
#include <math.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plm_test_mpi.h"
#include <pylopsmpi.h>
#if defined(PLM_TEST_DEVICE)
#include <cuda_runtime.h>
#endif

#if defined(__GNUC__)
#define TU_UNUSED __attribute__((unused))
#else
#define TU_UNUSED
#endif

/* ------------------------------------------------------------------------------------------ */
/* Per-test state                                                                             */
/* ------------------------------------------------------------------------------------------ */

static plm_comm_t tu_comm TU_UNUSED = NULL;
static int tu_rank TU_UNUSED = 0;
static int tu_size TU_UNUSED = 1;
static int tu_fail TU_UNUSED = 0;   /* soft failures of the running test on this rank */
static int tu_checks TU_UNUSED = 0; /* comparisons made by the running test on this rank */
/* The memory space of the arrays tu_make makes and of the tables' operands and data buffers:
 * PLM_TEST_MEMORY=device runs them on device memory (the tables' device rows; in a build with
 * PLM_TEST_DEVICE, CUDA or the emulated device). */
static plm_memory_t tu_mem TU_UNUSED = PLM_MEMORY_HOST;

/* Watchdog: a test still running after tu_watchdog_s seconds is a hang (typically ranks that
 * disagreed on an error and wait in different collectives). The rank prints the last check it
 * started and exits, so mpiexec ends the job quickly instead of waiting for the CTest timeout.
 * PLM_TEST_WATCHDOG=<seconds> overrides (0 disables). */
static int tu_watchdog_s TU_UNUSED = 60;
static volatile int tu_where TU_UNUSED = 0;            /* line of the last check started */
static const char *volatile tu_where_file TU_UNUSED = "";

static TU_UNUSED void tu_on_alarm(int sig)
{
    char msg[320];
    int n = snprintf(msg, sizeof msg,
                     "[rank %d/%d] WATCHDOG: test still running after %d s (a hang?); last check started at %s:%d\n",
                     tu_rank, tu_size, tu_watchdog_s, tu_where_file, tu_where);
    if (n > 0 && write(2, msg, (size_t)n) < 0) (void)sig;
    _exit(124);
}

#define TU_MARK() (tu_where_file = __FILE__, tu_where = __LINE__)

/* Rank-sized scratch arrays in the tests hold this many ranks; tu_setup refuses more, with a
 * message, instead of overrunning them. */
#define TU_MAX_RANKS 256

static TU_UNUSED int tu_setup(void **state)
{
    (void)state;
    const char *w = getenv("PLM_TEST_WATCHDOG");
    if (w) tu_watchdog_s = atoi(w);
    if (tu_watchdog_s > 0) {
        signal(SIGALRM, tu_on_alarm);
        alarm((unsigned)tu_watchdog_s);
    }
    tu_where = 0;
    tu_rank = plm_test_rank();
    tu_size = plm_test_size();
    tu_fail = 0;
    tu_checks = 0;
    tu_comm = NULL;
    const char *mem = getenv("PLM_TEST_MEMORY");
    tu_mem = mem && !strcmp(mem, "device") ? PLM_MEMORY_DEVICE : PLM_MEMORY_HOST;
#if !defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        if (tu_rank == 0) fprintf(stderr, "PLM_TEST_MEMORY=device: this test was built without PLM_TEST_DEVICE\n");
        return -1;
    }
#endif
    if (tu_size > TU_MAX_RANKS) {
        if (tu_rank == 0) fprintf(stderr, "these tests run on at most %d ranks (TU_MAX_RANKS)\n", TU_MAX_RANKS);
        return -1;
    }
    /* PLM_TEST_BACKEND=<plm_backend_name>: the device backend the tables' device rows use */
    plm_comm_config_t cfg = NULL;
    const char *want = getenv("PLM_TEST_BACKEND");
    if (want) {
        plm_comm_config_create(&cfg);
        for (int b = PLM_BACKEND_MPI_CUDA_AWARE; b <= PLM_BACKEND_NCCL; ++b)
            if (!strcmp(want, plm_backend_name((plm_backend_t)b))) {
                plm_comm_config_set_backend(cfg, (plm_backend_t)b);
                if (b == PLM_BACKEND_MPI_CUDA_AWARE) plm_comm_config_set_cuda_aware(cfg, 1);
            }
    }
    plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, &tu_comm);
    plm_comm_config_destroy(&cfg);
    if (st != PLM_SUCCESS)
        fprintf(stderr, "[rank %d/%d] plm_comm_create failed: %d %s\n", tu_rank, tu_size, (int)st, plm_last_error());
    return plm_all_ranks(st == PLM_SUCCESS) ? 0 : -1;
}

static TU_UNUSED int tu_teardown(void **state)
{
    (void)state;
    alarm(0);
    plm_status_t st = plm_comm_destroy(&tu_comm);
    return plm_all_ranks(st == PLM_SUCCESS && tu_comm == NULL) ? 0 : -1;
}

#define TU_TEST(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)

/* Soft check: count and report, continue. */
#define TU_EXPECT(cond, ...)                                                                          \
    do {                                                                                              \
        tu_checks++;                                                                                  \
        if (!(cond)) {                                                                                \
            tu_fail++;                                                                                \
            if (tu_fail <= 25) {                                                                      \
                fprintf(stderr, "[rank %d/%d] %s:%d: check failed (%s): ", tu_rank, tu_size, __FILE__, \
                        __LINE__, #cond);                                                             \
                fprintf(stderr, __VA_ARGS__);                                                         \
                fprintf(stderr, "\n");                                                                \
            }                                                                                         \
        }                                                                                             \
    } while (0)

/* End of a test: every rank must have had no soft failure, and the test must have compared
 * something. */
#define TU_DONE()                                                                              \
    do {                                                                                       \
        int f_ = tu_fail, c_ = tu_checks;                                                      \
        tu_fail = 0;                                                                           \
        tu_checks = 0;                                                                         \
        if (f_ > 25) fprintf(stderr, "[rank %d/%d] ... %d failed checks in all\n", tu_rank, tu_size, f_); \
        if (getenv("PLM_TEST_VERBOSE") && tu_rank == 0) printf("    (%d checks on rank 0)\n", c_);  \
        assert_all_ranks_true(f_ == 0);                                                        \
        assert_all_ranks_true(c_ > 0);                                                         \
    } while (0)

/* Hard check of a call: all ranks fail together. */
#define TU_OK(call)                                                                                   \
    do {                                                                                              \
        TU_MARK();                                                                                    \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS)                                                                       \
            fprintf(stderr, "[rank %d/%d] %s:%d: %s returned %d (%s): %s\n", tu_rank, tu_size, __FILE__, \
                    __LINE__, #call, (int)st_, plm_status_string(st_), plm_last_error());             \
        assert_all_ranks_true(st_ == PLM_SUCCESS);                                                    \
    } while (0)

/* Soft check that a call succeeds. */
#define TU_CHECK_OK(call)                                                                       \
    do {                                                                                        \
        TU_MARK();                                                                              \
        plm_status_t st_ = (call);                                                              \
        TU_EXPECT(st_ == PLM_SUCCESS, "%s returned %d (%s): %s", #call, (int)st_,               \
                  plm_status_string(st_), plm_last_error());                                    \
    } while (0)

static TU_UNUSED void tu_expect_err_(plm_status_t st, plm_status_t e1, plm_status_t e2, const char *call,
                                     const char *file, int line)
{
    const char *m = plm_last_error();
    tu_checks++;
    if (st != e1 && st != e2) {
        tu_fail++;
        if (tu_fail <= 25)
            fprintf(stderr, "[rank %d/%d] %s:%d: %s returned %d (%s), expected %d (%s)%s: %s\n", tu_rank, tu_size,
                    file, line, call, (int)st, plm_status_string(st), (int)e1, plm_status_string(e1),
                    e1 != e2 ? " or another documented status" : "", m ? m : "(null)");
    } else if (!m || !m[0]) {
        tu_fail++;
        if (tu_fail <= 25)
            fprintf(stderr, "[rank %d/%d] %s:%d: %s returned %d as expected but plm_last_error() is empty\n",
                    tu_rank, tu_size, file, line, call, (int)st);
    }
}

/* Expect a given failing status and a non-empty plm_last_error(). */
#define TU_EXPECT_ERR(call, expected)                                       \
    do {                                                                    \
        TU_MARK();                                                          \
        plm_clear_last_error();                                             \
        plm_status_t ste_ = (call);                                         \
        tu_expect_err_(ste_, (expected), (expected), #call, __FILE__, __LINE__); \
    } while (0)

/* Where the documentation allows either of two statuses. */
#define TU_EXPECT_ERR2(call, e1, e2)                                  \
    do {                                                              \
        TU_MARK();                                                    \
        plm_clear_last_error();                                       \
        plm_status_t ste_ = (call);                                   \
        tu_expect_err_(ste_, (e1), (e2), #call, __FILE__, __LINE__);  \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Dtypes and elements                                                                        */
/* ------------------------------------------------------------------------------------------ */

static const plm_dtype_t TU_DTYPES[4] TU_UNUSED = {PLM_FLOAT32, PLM_FLOAT64, PLM_COMPLEX64, PLM_COMPLEX128};
static const plm_partition_t TU_PARTS[3] TU_UNUSED = {PLM_PARTITION_SCATTER, PLM_PARTITION_BROADCAST,
                                                     PLM_PARTITION_UNSAFE_BROADCAST};

static TU_UNUSED const char *tu_dtname(plm_dtype_t dt)
{
    switch (dt) {
    case PLM_FLOAT32: return "float32";
    case PLM_FLOAT64: return "float64";
    case PLM_COMPLEX64: return "complex64";
    case PLM_COMPLEX128: return "complex128";
    default: break;
    }
    return "?";
}

static TU_UNUSED const char *tu_partname(plm_partition_t p)
{
    switch (p) {
    case PLM_PARTITION_SCATTER: return "SCATTER";
    case PLM_PARTITION_BROADCAST: return "BROADCAST";
    case PLM_PARTITION_UNSAFE_BROADCAST: return "UNSAFE_BROADCAST";
    default: break;
    }
    return "?";
}

static inline int tu_cplx(plm_dtype_t dt) { return dt == PLM_COMPLEX64 || dt == PLM_COMPLEX128; }
static inline int tu_single(plm_dtype_t dt) { return dt == PLM_FLOAT32 || dt == PLM_COMPLEX64; }
static inline double tu_rtol(plm_dtype_t dt) { return tu_single(dt) ? 1e-4 : 1e-12; }
static inline size_t tu_esize(plm_dtype_t dt)
{
    return dt == PLM_FLOAT32 ? 4 : (dt == PLM_FLOAT64 || dt == PLM_COMPLEX64) ? 8 : 16;
}
/* The *_bytes argument for a buffer of n elements of dt. */
static inline int64_t tu_bytes(plm_dtype_t dt, int64_t n) { return n * (int64_t)tu_esize(dt); }
/* The a_bytes of plm_op_matrix_mult on this rank: its block of A, in dt. */
static inline int64_t tu_matmul_a_bytes(plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dt, int64_t n, int64_t k,
                                        int64_t m)
{
    int grid[4];
    int64_t ab[4], xb[4], yb[4];
    if (plm_matmul_blocks(kind, tu_size, tu_rank, grid_rows, n, k, m, grid, ab, xb, yb) != PLM_SUCCESS) return -1;
    return tu_bytes(dt, (ab[1] - ab[0]) * (ab[3] - ab[2]));
}

static inline void tu_get(plm_dtype_t dt, const void *p, int64_t i, double *re, double *im)
{
    *re = *im = 0;
    switch (dt) {
    case PLM_FLOAT32: *re = ((const float *)p)[i]; *im = 0; break;
    case PLM_FLOAT64: *re = ((const double *)p)[i]; *im = 0; break;
    case PLM_COMPLEX64: *re = ((const float *)p)[2 * i]; *im = ((const float *)p)[2 * i + 1]; break;
    case PLM_COMPLEX128: *re = ((const double *)p)[2 * i]; *im = ((const double *)p)[2 * i + 1]; break;
    default: break;
    }
}

static inline void tu_set(plm_dtype_t dt, void *p, int64_t i, double re, double im)
{
    switch (dt) {
    case PLM_FLOAT32: ((float *)p)[i] = (float)re; break;
    case PLM_FLOAT64: ((double *)p)[i] = re; break;
    case PLM_COMPLEX64: ((float *)p)[2 * i] = (float)re; ((float *)p)[2 * i + 1] = (float)im; break;
    case PLM_COMPLEX128: ((double *)p)[2 * i] = re; ((double *)p)[2 * i + 1] = im; break;
    default: break;
    }
}

/* A scalar of dtype dt in buf (16 bytes, aligned); im is dropped for real dtypes. */
typedef union { double d[2]; float f[4]; unsigned char b[16]; } tu_scalar_t;
static inline tu_scalar_t tu_scalar(plm_dtype_t dt, double re, double im)
{
    tu_scalar_t s;
    memset(&s, 0, sizeof s);
    switch (dt) {
    case PLM_FLOAT32: s.f[0] = (float)re; break;
    case PLM_FLOAT64: s.d[0] = re; break;
    case PLM_COMPLEX64: s.f[0] = (float)re; s.f[1] = (float)im; break;
    case PLM_COMPLEX128: s.d[0] = re; s.d[1] = im; break;
    default: break;
    }
    return s;
}
/* The value a scalar really holds (rounded to dt; imaginary part 0 for real dtypes). */
static inline void tu_scalar_value(plm_dtype_t dt, double re, double im, double *ore, double *oim)
{
    volatile float fr = (float)re, fi = (float)im;
    switch (dt) {
    case PLM_FLOAT32: *ore = (double)fr; *oim = 0; break;
    case PLM_FLOAT64: *ore = re; *oim = 0; break;
    case PLM_COMPLEX64: *ore = (double)fr; *oim = (double)fi; break;
    default: *ore = re; *oim = im; break;
    }
}

/* |got - ref| <= rtol * (|ref| + 1) (data magnitudes are O(1), so the +1 covers cancellation). */
static inline int tu_close(double gr, double gi, double rr, double ri, double rtol)
{
    double d = hypot(gr - rr, gi - ri);
    return d <= rtol * (hypot(rr, ri) + 1.0);
}

/* Relative closeness of two (non-negative) reals; equal infinities match, NaN never. */
static inline int tu_close_rel(double got, double ref, double rtol)
{
    if (isinf(ref) || isinf(got)) return got == ref;
    if (isnan(got) || isnan(ref)) return 0;
    return fabs(got - ref) <= rtol * fabs(ref) + 1e-300;
}

/* ------------------------------------------------------------------------------------------ */
/* Shapes and layouts                                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int ndim;
    int64_t shape[PLM_MAX_NDIM];
    int axis; /* as passed to the library; may be negative */
    const char *name;
} tu_case_t;

/* Distributed extents not divisible by 3 or 4 (uneven splits), 2-D and 3-D shapes, a non-zero
 * and a negative axis, and cases with fewer entries along the axis than ranks. */
static const tu_case_t TU_CASES[] TU_UNUSED = {
    {1, {1001}, 0, "1d-1001"},
    {2, {7, 13}, 0, "2d-7x13-ax0"},
    {2, {6, 11}, 1, "2d-6x11-ax1"},
    {2, {9, 5}, -1, "2d-9x5-ax-1"},
    {3, {5, 7, 3}, 1, "3d-5x7x3-ax1"},
    {3, {4, 3, 11}, 2, "3d-4x3x11-ax2"},
    {3, {10, 3, 2}, 0, "3d-10x3x2-ax0"},
    {1, {2}, 0, "1d-2 (fewer than ranks)"},
    {2, {3, 2}, 1, "2d-3x2-ax1 (fewer than ranks)"},
};
#define TU_NCASES ((int)(sizeof(TU_CASES) / sizeof(TU_CASES[0])))

static inline int tu_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

static inline int64_t tu_prod(const int64_t *s, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++) p *= s[i];
    return p;
}

static inline int64_t tu_split(int64_t n, int P, int r) { return n / P + (r < n % P ? 1 : 0); }

/* rows: P x ndim local shapes of the default split. */
static TU_UNUSED void tu_default_rows(int ndim, const int64_t *g, int axis, plm_partition_t part, int P,
                                      int64_t *rows)
{
    int a = tu_axis(axis, ndim);
    for (int r = 0; r < P; r++) {
        for (int d = 0; d < ndim; d++) rows[r * ndim + d] = g[d];
        if (part == PLM_PARTITION_SCATTER) rows[r * ndim + a] = tu_split(g[a], P, r);
    }
}

/* The default split reversed across ranks (rank r gets the count of rank P-1-r). */
static TU_UNUSED void tu_reversed_rows(int ndim, const int64_t *g, int axis, int P, int64_t *rows)
{
    int a = tu_axis(axis, ndim);
    for (int r = 0; r < P; r++) {
        for (int d = 0; d < ndim; d++) rows[r * ndim + d] = g[d];
        rows[r * ndim + a] = tu_split(g[a], P, P - 1 - r);
    }
}

static TU_UNUSED void tu_offsets(int ndim, const int64_t *rows, int axis, int P, int64_t *offs)
{
    int a = tu_axis(axis, ndim);
    int64_t acc = 0;
    for (int r = 0; r < P; r++) {
        offs[r] = acc;
        acc += rows[r * ndim + a];
    }
}

/* Global flat index of local flat index l of a block with shape lshape starting at global
 * index off along axis a. */
static inline int64_t tu_l2g(int ndim, const int64_t *g, int a, const int64_t *lshape, int64_t off, int64_t l)
{
    int64_t inner = tu_prod(g, a + 1, ndim);
    int64_t nl = lshape[a];
    int64_t o = l / (nl * inner), rem = l % (nl * inner);
    int64_t la = rem / inner, in = rem % inner;
    return (o * g[a] + off + la) * inner + in;
}

/* ------------------------------------------------------------------------------------------ */
/* Data                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static inline double *tu_alloc(int64_t n) { return (double *)calloc((size_t)(2 * n + 2), sizeof(double)); }

/* Deterministic data, a different value per element, never zero (|re| >= 0.2) unless `zeros`
 * is set, in which case every 7th element (i % 7 == 3) is exactly 0. Rounded to dt. */
static TU_UNUSED void tu_gen(double *g, int64_t n, int seed, plm_dtype_t dt, int zeros)
{
    for (int64_t i = 0; i < n; i++) {
        double re = (0.2 + fabs(sin(0.37 * (double)i + 1.3 * seed))) * (((i + seed) % 3 == 0) ? -1.0 : 1.0);
        double im = tu_cplx(dt) ? 0.5 * cos(0.23 * (double)i + 0.7 * seed) + 0.01 * (double)(i % 5) : 0.0;
        if (zeros && i % 7 == 3) re = im = 0.0;
        tu_scalar_value(dt, re, im, &g[2 * i], &g[2 * i + 1]);
    }
}

static inline void tu_round(plm_dtype_t dt, double *re, double *im) { tu_scalar_value(dt, *re, *im, re, im); }

/* ------------------------------------------------------------------------------------------ */
/* Arrays                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Data buffers in tu_mem (for the calls whose buffers are in the array's memory space:
 * set_global, asarray, add_ghost_cells, stacked_asarray), zeroed. */
static TU_UNUSED void *tu_buf(int64_t bytes)
{
    const size_t n = (size_t)(bytes > 0 ? bytes : 1);
#if defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        void *d = NULL;
        if (cudaMalloc(&d, n) != cudaSuccess || cudaMemset(d, 0, n) != cudaSuccess || cudaDeviceSynchronize())
            return NULL;
        return d;
    }
#endif
    return calloc(n, 1);
}

static TU_UNUSED void tu_buf_free(void *p)
{
#if defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        cudaFree(p);
        return;
    }
#endif
    free(p);
}

/* A tu_buf holding a copy of n bytes of host memory h. */
static TU_UNUSED void *tu_buf_of(const void *h, int64_t bytes)
{
    void *b = tu_buf(bytes);
#if defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        if (b && bytes > 0 && (cudaMemcpy(b, h, (size_t)bytes, cudaMemcpyHostToDevice) || cudaDeviceSynchronize()))
            return NULL;
        return b;
    }
#endif
    if (b && bytes > 0) memcpy(b, h, (size_t)bytes);
    return b;
}

#if defined(PLM_TEST_DEVICE)
/* The stream x's device work is queued on. */
static TU_UNUSED cudaStream_t tu_stream_of(plm_const_array_t x)
{
    plm_comm_t c = NULL;
    void *s = NULL;
    if (plm_array_get_comm(x, &c) != PLM_SUCCESS || plm_comm_get_stream(c, &s) != PLM_SUCCESS) return NULL;
    return (cudaStream_t)s;
}
#endif

/* n elements of x's local data (from get_local_*) into host memory h, and back. On device
 * memory, through copies ordered on x's stream (get_local_* synchronised it). */
static TU_UNUSED void tu_local_to_host(plm_const_array_t x, const void *d, void *h, size_t bytes)
{
#if defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        if (bytes) cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
        return;
    }
#endif
    (void)x;
    if (bytes) memcpy(h, d, bytes);
}

static TU_UNUSED void tu_local_from_host(plm_const_array_t x, void *d, const void *h, size_t bytes)
{
#if defined(PLM_TEST_DEVICE)
    if (tu_mem == PLM_MEMORY_DEVICE) {
        const cudaStream_t s = tu_stream_of(x);
        if (bytes) cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
        return;
    }
#endif
    (void)x;
    if (bytes) memcpy(d, h, bytes);
}

/* Create an array (rows NULL: default split; mask NULL: none) and, if g is given, fill it with
 * the blocks of the global array g. Asserts (all ranks) on failure. */
static TU_UNUSED plm_array_t tu_make(int ndim, const int64_t *shape, int axis, plm_partition_t part, plm_dtype_t dt,
                                     const int64_t *rows, const int *mask, const double *g);

static TU_UNUSED void tu_fill(plm_array_t x, const double *g)
{
    int ndim = 0, a = 0;
    int64_t gs[PLM_MAX_NDIM], ls[PLM_MAX_NDIM], off = 0, n = 0;
    plm_dtype_t dt = PLM_FLOAT64;
    plm_status_t st = PLM_SUCCESS;
    void *d = NULL;
    if (!st) st = plm_array_ndim(x, &ndim);
    if (!st) st = plm_array_global_shape(x, gs);
    if (!st) st = plm_array_local_shape(x, ls);
    if (!st) st = plm_array_axis(x, &a);
    if (!st) st = plm_array_local_offset(x, &off);
    if (!st) st = plm_array_local_size(x, &n);
    if (!st) st = plm_array_dtype(x, &dt);
    if (!st) st = plm_array_get_local_write(x, &d);
    if (st)
        fprintf(stderr, "[rank %d/%d] tu_fill: queries / get_local_write failed: %d %s\n", tu_rank, tu_size, (int)st,
                plm_last_error());
    assert_all_ranks_true(st == PLM_SUCCESS);
    const size_t bytes = (size_t)n * tu_esize(dt);
    void *h = malloc(bytes ? bytes : 1);
    for (int64_t l = 0; l < n; l++) {
        int64_t gi = tu_l2g(ndim, gs, a, ls, off, l);
        tu_set(dt, h, l, g[2 * gi], g[2 * gi + 1]);
    }
    tu_local_from_host(x, d, h, bytes);
    free(h);
    TU_OK(plm_array_restore_local_write(x, &d));
}

static TU_UNUSED plm_array_t tu_make(int ndim, const int64_t *shape, int axis, plm_partition_t part, plm_dtype_t dt,
                                     const int64_t *rows, const int *mask, const double *g)
{
    plm_array_t x = NULL;
    plm_status_t st = plm_array_create_ex(tu_comm, ndim, shape, axis, part, dt, tu_mem, rows ? tu_size : 0,
                                          rows, mask ? tu_size : 0, mask, NULL, 0, &x);
    if (st != PLM_SUCCESS || x == NULL)
        fprintf(stderr, "[rank %d/%d] tu_make: plm_array_create_ex(ndim %d, axis %d, %s, %s) returned %d (%s): %s\n",
                tu_rank, tu_size, ndim, axis, tu_partname(part), tu_dtname(dt), (int)st, plm_status_string(st),
                plm_last_error());
    assert_all_ranks_true(st == PLM_SUCCESS && x != NULL);
    if (g) tu_fill(x, g);
    return x;
}

/* Compare x's local block with the matching block of the global reference g. */
static TU_UNUSED void tu_check_local(plm_const_array_t x, const double *g, double rtol, const char *what)
{
    int ndim = 0, a = 0;
    int64_t gs[PLM_MAX_NDIM], ls[PLM_MAX_NDIM], off = 0, n = 0;
    plm_dtype_t dt = PLM_FLOAT64;
    plm_status_t st = PLM_SUCCESS;
    if (!st) st = plm_array_ndim(x, &ndim);
    if (!st) st = plm_array_global_shape(x, gs);
    if (!st) st = plm_array_local_shape(x, ls);
    if (!st) st = plm_array_axis(x, &a);
    if (!st) st = plm_array_local_offset(x, &off);
    if (!st) st = plm_array_local_size(x, &n);
    if (!st) st = plm_array_dtype(x, &dt);
    const void *d = NULL;
    if (!st) st = plm_array_get_local_read(x, &d);
    TU_EXPECT(st == PLM_SUCCESS, "%s: queries failed: %s", what, plm_last_error());
    if (st) return;
    const size_t bytes = (size_t)n * tu_esize(dt);
    void *h = malloc(bytes ? bytes : 1);
    tu_local_to_host(x, d, h, bytes);
    int64_t bad = 0, first = -1;
    double fr = 0, fi = 0, rr = 0, ri = 0;
    for (int64_t l = 0; l < n; l++) {
        int64_t gi = tu_l2g(ndim, gs, a, ls, off, l);
        double vr, vi;
        tu_get(dt, h, l, &vr, &vi);
        if (!tu_close(vr, vi, g[2 * gi], g[2 * gi + 1], rtol)) {
            if (first < 0) {
                first = l;
                fr = vr; fi = vi; rr = g[2 * gi]; ri = g[2 * gi + 1];
            }
            bad++;
        }
    }
    free(h);
    plm_array_restore_local_read(x, &d);
    TU_EXPECT(bad == 0, "%s: %lld of %lld local elements differ; first at local %lld: got (%.17g, %.17g) expected (%.17g, %.17g)",
              what, (long long)bad, (long long)n, (long long)first, fr, fi, rr, ri);
}

/* Compare a buffer of n elements of dt with a reference (interleaved doubles). */
static TU_UNUSED void tu_check_buf(plm_dtype_t dt, const void *buf, int64_t n, const double *ref, double rtol,
                                   const char *what)
{
    int64_t bad = 0, first = -1;
    double fr = 0, fi = 0;
    for (int64_t i = 0; i < n; i++) {
        double vr, vi;
        tu_get(dt, buf, i, &vr, &vi);
        if (!tu_close(vr, vi, ref[2 * i], ref[2 * i + 1], rtol)) {
            if (first < 0) { first = i; fr = vr; fi = vi; }
            bad++;
        }
    }
    TU_EXPECT(bad == 0, "%s: %lld of %lld elements differ; first at %lld: got (%.17g, %.17g) expected (%.17g, %.17g)",
              what, (long long)bad, (long long)n, (long long)first, fr, fi, first >= 0 ? ref[2 * first] : 0.0,
              first >= 0 ? ref[2 * first + 1] : 0.0);
}

/* Check every query of x against the expected layout. rows: P x ndim expected local shapes;
 * mask: expected mask or NULL. */
static TU_UNUSED void tu_check_layout(plm_const_array_t x, int ndim, const int64_t *gshape, int axis,
                                      plm_partition_t part, plm_dtype_t dt, const int64_t *rows, const int *mask,
                                      const char *what)
{
    int P = tu_size, r = tu_rank, a = tu_axis(axis, ndim);
    int nd = -1, ax = -1, has = -1;
    int64_t gs[PLM_MAX_NDIM], ls[PLM_MAX_NDIM], off = -1, n = -1;
    int64_t *all = (int64_t *)calloc((size_t)(P * PLM_MAX_NDIM + 1), sizeof(int64_t));
    int *mk = (int *)calloc((size_t)P + 1, sizeof(int));
    int64_t *offs = (int64_t *)calloc((size_t)P + 1, sizeof(int64_t));
    plm_partition_t pa = (plm_partition_t)-1;
    plm_dtype_t d = (plm_dtype_t)-1;
    plm_memory_t mem = (plm_memory_t)-1;
    TU_CHECK_OK(plm_array_ndim(x, &nd));
    TU_EXPECT(nd == ndim, "%s: ndim %d expected %d", what, nd, ndim);
    TU_CHECK_OK(plm_array_global_shape(x, gs));
    TU_CHECK_OK(plm_array_local_shape(x, ls));
    TU_CHECK_OK(plm_array_local_shapes(x, all));
    for (int i = 0; i < ndim; i++) {
        TU_EXPECT(gs[i] == gshape[i], "%s: global_shape[%d] = %lld expected %lld", what, i, (long long)gs[i],
                  (long long)gshape[i]);
        TU_EXPECT(ls[i] == rows[r * ndim + i], "%s: local_shape[%d] = %lld expected %lld", what, i,
                  (long long)ls[i], (long long)rows[r * ndim + i]);
    }
    for (int q = 0; q < P; q++)
        for (int i = 0; i < ndim; i++)
            TU_EXPECT(all[q * ndim + i] == rows[q * ndim + i], "%s: local_shapes[%d][%d] = %lld expected %lld", what,
                      q, i, (long long)all[q * ndim + i], (long long)rows[q * ndim + i]);
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_EXPECT(n == tu_prod(rows + r * ndim, 0, ndim), "%s: local_size %lld expected %lld", what, (long long)n,
              (long long)tu_prod(rows + r * ndim, 0, ndim));
    tu_offsets(ndim, rows, a, P, offs);
    TU_CHECK_OK(plm_array_local_offset(x, &off));
    int64_t eoff = part == PLM_PARTITION_SCATTER ? offs[r] : 0;
    TU_EXPECT(off == eoff, "%s: local_offset %lld expected %lld", what, (long long)off, (long long)eoff);
    TU_CHECK_OK(plm_array_axis(x, &ax));
    TU_EXPECT(ax == a, "%s: axis %d expected %d", what, ax, a);
    TU_CHECK_OK(plm_array_partition(x, &pa));
    TU_EXPECT(pa == part, "%s: partition %d expected %d", what, (int)pa, (int)part);
    TU_CHECK_OK(plm_array_dtype(x, &d));
    TU_EXPECT(d == dt, "%s: dtype %d expected %d", what, (int)d, (int)dt);
    TU_CHECK_OK(plm_array_memory(x, &mem));
    TU_EXPECT(mem == PLM_MEMORY_HOST, "%s: memory %d", what, (int)mem);
    TU_CHECK_OK(plm_array_mask(x, &has, mk));
    TU_EXPECT(has == (mask != NULL), "%s: has_mask %d expected %d", what, has, mask != NULL);
    if (mask && has == 1)
        for (int q = 0; q < P; q++) TU_EXPECT(mk[q] == mask[q], "%s: mask[%d] = %d expected %d", what, q, mk[q], mask[q]);
    free(all);
    free(mk);
    free(offs);
}

/* ------------------------------------------------------------------------------------------ */
/* Masks and serial references                                                                */
/* ------------------------------------------------------------------------------------------ */

/* Mask kinds: 0: r % 2 (interleaved groups), 1: r * 2 / P (contiguous groups), 2: r % 3. */
#define TU_NMASKS 3
static TU_UNUSED void tu_mask(int kind, int P, int *mask)
{
    for (int r = 0; r < P; r++) mask[r] = kind == 0 ? r % 2 : kind == 1 ? (r * 2) / P : r % 3;
}

/* The data of the caller's mask group for a SCATTER array: the concatenation along axis a of
 * the group members' blocks in rank order. Writes the group's global shape to gshape_out and
 * the data to out (interleaved); returns the element count. */
static TU_UNUSED int64_t tu_group_data(const double *g, int ndim, const int64_t *gshape, int axis,
                                       const int64_t *rows, const int *mask, double *out, int64_t *gshape_out)
{
    int P = tu_size, a = tu_axis(axis, ndim);
    int64_t *offs = (int64_t *)calloc((size_t)P + 1, sizeof(int64_t));
    tu_offsets(ndim, rows, a, P, offs);
    int64_t A = 0;
    for (int q = 0; q < P; q++)
        if (mask[q] == mask[tu_rank]) A += rows[q * ndim + a];
    int64_t *idx = (int64_t *)calloc((size_t)A + 1, sizeof(int64_t));
    int64_t k = 0;
    for (int q = 0; q < P; q++)
        if (mask[q] == mask[tu_rank])
            for (int64_t j = 0; j < rows[q * ndim + a]; j++) idx[k++] = offs[q] + j;
    for (int d = 0; d < ndim; d++) gshape_out[d] = gshape[d];
    gshape_out[a] = A;
    int64_t outer = tu_prod(gshape, 0, a), inner = tu_prod(gshape, a + 1, ndim), N = gshape[a];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < A; j++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t dst = (o * A + j) * inner + i, src = (o * N + idx[j]) * inner + i;
                out[2 * dst] = g[2 * src];
                out[2 * dst + 1] = g[2 * src + 1];
            }
    free(idx);
    free(offs);
    return outer * A * inner;
}

/* sum x_i y_i (conj = 0) or sum conj(x_i) y_i; *mag = sum |x_i||y_i| (error scale). */
static TU_UNUSED void tu_ref_dot(const double *x, const double *y, int64_t n, int conj, double *re, double *im,
                                 double *mag)
{
    double sr = 0, si = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        double xr = x[2 * i], xi = conj ? -x[2 * i + 1] : x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1];
        sr += xr * yr - xi * yi;
        si += xr * yi + xi * yr;
        m += hypot(xr, xi) * hypot(yr, yi);
    }
    *re = sr;
    *im = si;
    *mag = m;
}

/* Vector norm of n elements of a strided vector (element k at x[2*(start + k*stride)]). */
static TU_UNUSED double tu_ref_norm_strided(const double *x, int64_t start, int64_t n, int64_t stride, double ord)
{
    if (ord == INFINITY || ord == -INFINITY) {
        double m = ord > 0 ? 0.0 : INFINITY;
        for (int64_t k = 0; k < n; k++) {
            double v = hypot(x[2 * (start + k * stride)], x[2 * (start + k * stride) + 1]);
            m = ord > 0 ? (v > m ? v : m) : (v < m ? v : m);
        }
        return m;
    }
    if (ord == 0) {
        double c = 0;
        for (int64_t k = 0; k < n; k++)
            c += (x[2 * (start + k * stride)] != 0 || x[2 * (start + k * stride) + 1] != 0) ? 1 : 0;
        return c;
    }
    double s = 0;
    for (int64_t k = 0; k < n; k++) s += pow(hypot(x[2 * (start + k * stride)], x[2 * (start + k * stride) + 1]), ord);
    return pow(s, 1.0 / ord);
}

static inline double tu_ref_norm(const double *x, int64_t n, double ord) { return tu_ref_norm_strided(x, 0, n, 1, ord); }

/* Norm along axis a of a C-order array: out has the shape without a. */
static TU_UNUSED void tu_ref_norm_axis(const double *x, int ndim, const int64_t *shape, int a, double ord, double *out)
{
    int64_t outer = tu_prod(shape, 0, a), inner = tu_prod(shape, a + 1, ndim), n = shape[a];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) out[o * inner + i] = tu_ref_norm_strided(x, o * n * inner + i, n, inner, ord);
}

static TU_UNUSED const char *tu_ordname(double ord, char *buf)
{
    if (ord == INFINITY) return "inf";
    if (ord == -INFINITY) return "-inf";
    sprintf(buf, "%g", ord);
    return buf;
}

/* Bad-input helpers of test_array_errors*.c. SENTINEL marks an out handle the call must clear. */
static struct plm_array_s *const SENTINEL TU_UNUSED = (struct plm_array_s *)(void *)&tu_fail;

/* plm_array_create_ex expected to fail with e1 or e2, and to set out to NULL (null_out: pass
 * out = NULL). */
static TU_UNUSED void tu_create_err_(const char *file, int line, const char *desc, plm_status_t e1, plm_status_t e2,
                                     plm_comm_t comm, int ndim, const int64_t *gs, int axis, plm_partition_t p,
                                     plm_dtype_t dt, plm_memory_t mem, int nlocal, const int64_t *ls, int nmask,
                                     const int *mask, int null_out)
{
    plm_array_t out = SENTINEL;
    tu_where_file = file;
    tu_where = line;
    plm_clear_last_error();
    plm_status_t st = plm_array_create_ex(comm, ndim, gs, axis, p, dt, mem, nlocal, ls, nmask, mask, NULL,
                                          0, null_out ? NULL : &out);
    tu_expect_err_(st, e1, e2, desc, file, line);
    if (!null_out) {
        TU_EXPECT(out == NULL, "line %d: %s: out handle not set to NULL on failure (%p)", line, desc, (void *)out);
        if (out != SENTINEL && out != NULL) plm_array_destroy(&out);
    }
}
#define CE(desc, e1, e2, ...) tu_create_err_(__FILE__, __LINE__, desc, e1, e2, __VA_ARGS__)

/* Whether this build has any device backend (device memory then does not fail as unavailable). */
static TU_UNUSED int tu_has_device_backend(void)
{
    int any = 0;
    for (int b = PLM_BACKEND_MPI_CUDA_AWARE; b <= PLM_BACKEND_NCCL; ++b) {
        int yes = 0;
        plm_backend_compiled((plm_backend_t)b, &yes);
        any = any || yes;
    }
    return any;
}

#endif
