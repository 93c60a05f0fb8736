/* The public header as a C99 user sees it: this file is compiled with
 * -std=c99 -Wall -Wextra -Werror -pedantic (tests/api/CMakeLists.txt), so any C++ or non-C99
 * construct or warning in pylopsmpi.h / pylopsmpi_version.h fails the build. It uses every enum
 * value, the config object and the version macros, and checks the library-wide
 * conventions the header promises: version values, status strings, the version handshake,
 * plm_last_error() semantics, *out = NULL on failure, NULL-safe destroy, dtype sizes. */
#include "pylopsmpi.h"

#include <string.h>

#include "plm_test_mpi.h"

/* ---- compile-time checks of the version macros ---- */
#if !defined(PLM_VERSION_MAJOR) || !defined(PLM_VERSION_MINOR) || !defined(PLM_VERSION_PATCH)
#error "version macros missing"
#endif
#if PLM_VERSION_CODE != PLM_VERSION_MAJOR * 10000 + PLM_VERSION_MINOR * 100 + PLM_VERSION_PATCH
#error "PLM_VERSION_CODE encoding changed"
#endif
#if !PLM_VERSION_GE(PLM_VERSION_MAJOR, PLM_VERSION_MINOR, PLM_VERSION_PATCH)
#error "PLM_VERSION_GE(current) must hold"
#endif
#if PLM_VERSION_GE(PLM_VERSION_MAJOR, PLM_VERSION_MINOR, PLM_VERSION_PATCH + 1)
#error "PLM_VERSION_GE(newer patch) must not hold"
#endif
#if !PLM_VERSION_GE(0, 2, 0)
#error "this library is at least 0.2.0"
#endif
/* Arguments must be parenthesised inside the macro: 1 ? 0 : 1 == 0 */
#if PLM_VERSION_GE(PLM_VERSION_MAJOR + 1 - 1, PLM_VERSION_MINOR, 1 ? PLM_VERSION_PATCH : 999) != 1
#error "PLM_VERSION_GE does not parenthesise its arguments"
#endif

/* Every enumerator, with the value the header promises never to change. */
typedef struct {
    int value;
    int expected;
    const char *name;
} enum_value;

#define EV(x, v) { (int)(x), (v), #x }

static const enum_value all_enum_values[] = {
    EV(PLM_SUCCESS, 0), EV(PLM_ERR_INVALID_ARG, 1), EV(PLM_ERR_OUT_OF_MEMORY, 2),
    EV(PLM_ERR_NOT_SUPPORTED, 3), EV(PLM_ERR_BACKEND_UNAVAILABLE, 4), EV(PLM_ERR_MPI, 5),
    EV(PLM_ERR_CUDA, 6), EV(PLM_ERR_NCCL, 7), EV(PLM_ERR_SIZE_MISMATCH, 8),
    EV(PLM_ERR_NOT_CONVERGED, 9), EV(PLM_ERR_INTERNAL, 10), EV(PLM_ERR_DTYPE_MISMATCH, 11),
    EV(PLM_FLOAT32, 0), EV(PLM_FLOAT64, 1), EV(PLM_COMPLEX64, 2), EV(PLM_COMPLEX128, 3),
    EV(PLM_MEMORY_HOST, 0), EV(PLM_MEMORY_DEVICE, 1),
    EV(PLM_PARTITION_SCATTER, 0), EV(PLM_PARTITION_BROADCAST, 1), EV(PLM_PARTITION_UNSAFE_BROADCAST, 2),
    EV(PLM_BACKEND_AUTO, 0), EV(PLM_BACKEND_MPI_HOST, 1), EV(PLM_BACKEND_MPI_CUDA_AWARE, 2),
    EV(PLM_BACKEND_MPI_STAGED, 3), EV(PLM_BACKEND_NCCL, 4),
    EV(PLM_CUDA_AWARE_FROM_CONFIG, 0), EV(PLM_CUDA_AWARE_FROM_ENV, 1), EV(PLM_CUDA_AWARE_FROM_VENDOR, 2),
    EV(PLM_CUDA_AWARE_FROM_DEFAULT, 3), EV(PLM_CUDA_AWARE_FROM_AGREEMENT, 4), EV(PLM_ERR_CALLBACK, 12),
    EV(PLM_DERIV_FORWARD, 0), EV(PLM_DERIV_BACKWARD, 1), EV(PLM_DERIV_CENTERED, 2),
    EV(PLM_MATMUL_BLOCK, 0), EV(PLM_MATMUL_SUMMA, 1),
    EV(PLM_THRESH_SOFT, 0), EV(PLM_THRESH_HARD, 1), EV(PLM_THRESH_HALF, 2),
    EV(PLM_STOP_NONE, 0), EV(PLM_STOP_TOLERANCE, 1), EV(PLM_STOP_MAX_ITERATIONS, 2), EV(PLM_STOP_CALLBACK, 3),
    EV(PLM_STOP_BREAKDOWN, 4), EV(PLM_STOP_NAN, 5), EV(PLM_STOP_DIVERGED, 6),
};

/* Every enum is 32 bits wide (the ABI's promise; the *_FORCE_INT32 members). */
typedef char enums_are_32_bits[(sizeof(plm_status_t) == 4 && sizeof(plm_dtype_t) == 4 && sizeof(plm_memory_t) == 4 &&
                                sizeof(plm_partition_t) == 4 && sizeof(plm_backend_t) == 4 &&
                                sizeof(plm_cuda_aware_source_t) == 4 && sizeof(plm_deriv_kind_t) == 4 &&
                                sizeof(plm_matmul_kind_t) == 4 && sizeof(plm_thresh_t) == 4 &&
                                sizeof(plm_stop_reason_t) == 4)
                                   ? 1
                                   : -1];

static const struct {
    plm_status_t status;
    const char *name;
} all_statuses[] = {
    {PLM_SUCCESS, "PLM_SUCCESS"},
    {PLM_ERR_INVALID_ARG, "PLM_ERR_INVALID_ARG"},
    {PLM_ERR_OUT_OF_MEMORY, "PLM_ERR_OUT_OF_MEMORY"},
    {PLM_ERR_NOT_SUPPORTED, "PLM_ERR_NOT_SUPPORTED"},
    {PLM_ERR_BACKEND_UNAVAILABLE, "PLM_ERR_BACKEND_UNAVAILABLE"},
    {PLM_ERR_MPI, "PLM_ERR_MPI"},
    {PLM_ERR_CUDA, "PLM_ERR_CUDA"},
    {PLM_ERR_NCCL, "PLM_ERR_NCCL"},
    {PLM_ERR_SIZE_MISMATCH, "PLM_ERR_SIZE_MISMATCH"},
    {PLM_ERR_NOT_CONVERGED, "PLM_ERR_NOT_CONVERGED"},
    {PLM_ERR_INTERNAL, "PLM_ERR_INTERNAL"},
    {PLM_ERR_DTYPE_MISMATCH, "PLM_ERR_DTYPE_MISMATCH"},
    {PLM_ERR_CALLBACK, "PLM_ERR_CALLBACK"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* True if msg contains "<name>.<ext>:<digits>", the file:line the header promises. */
static int has_file_line(const char *msg)
{
    const char *p;
    for (p = msg; *p; ++p) {
        if (*p == ':' && p > msg && p[1] >= '0' && p[1] <= '9') {
            const char *q = p - 1;
            while (q > msg && (q[-1] != '.' && q[-1] != ' ' && q[-1] != '/')) --q;
            if (q > msg && q[-1] == '.') return 1;
        }
    }
    return 0;
}

static void test_enum_values(void **state)
{
    size_t i;
    (void)state;
    for (i = 0; i < COUNT(all_enum_values); ++i) {
        if (all_enum_values[i].value != all_enum_values[i].expected)
            fail_msg("%s is %d, must stay %d", all_enum_values[i].name, all_enum_values[i].value,
                     all_enum_values[i].expected);
    }
}

static void test_version(void **state)
{
    int major = -1, minor = -1, patch = -1;
    char expect[32];
    (void)state;
    assert_int_equal(plm_version(&major, &minor, &patch), PLM_SUCCESS);
    assert_int_equal(major, PLM_VERSION_MAJOR);
    assert_int_equal(minor, PLM_VERSION_MINOR);
    assert_int_equal(patch, PLM_VERSION_PATCH);
    assert_int_equal(plm_version(NULL, NULL, NULL), PLM_SUCCESS);
    snprintf(expect, sizeof expect, "%d.%d.%d", major, minor, patch);
    assert_string_equal(plm_version_string(), expect);
    assert_ptr_equal(plm_version_string(), plm_version_string()); /* static */
    assert_non_null(plm_git_hash());
    assert_true(strlen(plm_git_hash()) > 0);
    assert_int_equal(plm_max_ndim(), PLM_MAX_NDIM);
    {
        char expect[32];
        snprintf(expect, sizeof expect, "%d.%d.%d", PLM_VERSION_MAJOR, PLM_VERSION_MINOR, PLM_VERSION_PATCH);
        assert_string_equal(expect, PLM_VERSION_STRING);
    }
}

static void test_version_handshake(void **state)
{
    const char *msg;
    (void)state;
    plm_clear_last_error();
    assert_int_equal(plm_check_header_version(), PLM_SUCCESS);
    assert_int_equal(plm_check_version(PLM_VERSION_MAJOR, PLM_VERSION_MINOR), PLM_SUCCESS);
    assert_string_equal(plm_last_error(), "");

    /* in 0.x a different minor is a different ABI; from 1.0 on only the major counts */
    if (PLM_VERSION_MAJOR == 0) {
        assert_int_equal(plm_check_version(PLM_VERSION_MAJOR, PLM_VERSION_MINOR + 1), PLM_ERR_NOT_SUPPORTED);
        msg = plm_last_error();
        assert_non_null(msg);
        assert_true(strlen(msg) > 0);
        if (PLM_VERSION_MINOR > 0)
            assert_int_equal(plm_check_version(PLM_VERSION_MAJOR, PLM_VERSION_MINOR - 1), PLM_ERR_NOT_SUPPORTED);
    }
    assert_int_equal(plm_check_version(PLM_VERSION_MAJOR + 1, PLM_VERSION_MINOR), PLM_ERR_NOT_SUPPORTED);
    assert_true(strlen(plm_last_error()) > 0);
    plm_clear_last_error();
    assert_string_equal(plm_last_error(), "");
}

static void test_status_strings(void **state)
{
    size_t i, j;
    (void)state;
    for (i = 0; i < COUNT(all_statuses); ++i) {
        const char *s = plm_status_string(all_statuses[i].status);
        if (!s) fail_msg("plm_status_string(%s) is NULL", all_statuses[i].name);
        if (strncmp(s, all_statuses[i].name, strlen(all_statuses[i].name)) != 0)
            fail_msg("plm_status_string(%s) = \"%s\" does not start with the enum name", all_statuses[i].name, s);
        for (j = 0; j < i; ++j)
            if (strcmp(s, plm_status_string(all_statuses[j].status)) == 0)
                fail_msg("%s and %s have the same string", all_statuses[i].name, all_statuses[j].name);
    }
    /* never NULL, even for values this header does not know */
    assert_non_null(plm_status_string((plm_status_t)999));
    assert_non_null(plm_status_string((plm_status_t)-1));
}

static void test_last_error(void **state)
{
    int yes = 7;
    const char *first;
    char saved[512];
    (void)state;

    plm_clear_last_error();
    assert_string_equal(plm_last_error(), "");

    /* a failing call records its root cause with file:line */
    assert_int_equal(plm_backend_available(PLM_BACKEND_MPI_HOST, NULL), PLM_ERR_INVALID_ARG);
    first = plm_last_error();
    assert_non_null(first);
    assert_true(strlen(first) > 0);
    if (!has_file_line(first)) fail_msg("plm_last_error() has no file:line: \"%s\"", first);
    snprintf(saved, sizeof saved, "%s", first);

    /* a successful call does not erase it */
    assert_int_equal(plm_backend_available(PLM_BACKEND_MPI_HOST, &yes), PLM_SUCCESS);
    assert_int_equal(yes, 1);
    assert_string_equal(plm_last_error(), saved);

    /* the next failure replaces it */
    assert_int_equal(plm_comm_config_create(NULL), PLM_ERR_INVALID_ARG);
    assert_true(strlen(plm_last_error()) > 0);
    assert_true(has_file_line(plm_last_error()));

    /* the copy into a caller's buffer: length only, truncated, whole */
    {
        char small[8], whole[1024];
        int64_t len = -1;
        const size_t n = strlen(plm_last_error());
        strncpy(whole, plm_last_error(), sizeof whole - 1);
        whole[sizeof whole - 1] = '\0';
        assert_int_equal(plm_last_error_copy(NULL, 0, &len), PLM_SUCCESS);
        assert_int_equal(len, (int64_t)n);
        assert_int_equal(plm_last_error_copy(small, sizeof small, &len), PLM_SUCCESS);
        assert_int_equal(strlen(small), sizeof small - 1);
        assert_memory_equal(small, whole, sizeof small - 1);
        assert_int_equal(plm_last_error_copy(whole, sizeof whole, NULL), PLM_SUCCESS);
        assert_string_equal(whole, plm_last_error());
        /* a bad call records its own error */
        assert_int_equal(plm_last_error_copy(NULL, 5, &len), PLM_ERR_INVALID_ARG);
        assert_int_equal(plm_last_error_copy(small, -1, &len), PLM_ERR_INVALID_ARG);
    }

    plm_clear_last_error();
    assert_string_equal(plm_last_error(), "");
}

static void test_dtype_size(void **state)
{
    (void)state;
    assert_int_equal(plm_dtype_size(PLM_FLOAT32), 4);
    assert_int_equal(plm_dtype_size(PLM_FLOAT64), 8);
    assert_int_equal(plm_dtype_size(PLM_COMPLEX64), 8);
    assert_int_equal(plm_dtype_size(PLM_COMPLEX128), 16);
    assert_int_equal(plm_dtype_size((plm_dtype_t)42), 0);
    assert_int_equal(plm_dtype_size((plm_dtype_t)-1), 0);
}

static void test_backends(void **state)
{
    static const struct {
        plm_backend_t b;
        const char *name;
    } named[] = {
        {PLM_BACKEND_MPI_HOST, "mpi_host"},
        {PLM_BACKEND_MPI_CUDA_AWARE, "mpi_cuda_aware"},
        {PLM_BACKEND_MPI_STAGED, "mpi_staged"},
        {PLM_BACKEND_NCCL, "nccl"},
    };
    size_t i;
    int yes, built;
    (void)state;
    for (i = 0; i < COUNT(named); ++i) {
        assert_non_null(plm_backend_name(named[i].b));
        assert_string_equal(plm_backend_name(named[i].b), named[i].name);
        yes = -1;
        assert_int_equal(plm_backend_available(named[i].b, &yes), PLM_SUCCESS);
        assert_true(yes == 0 || yes == 1);
        /* available only if compiled in */
        built = -1;
        assert_int_equal(plm_backend_compiled(named[i].b, &built), PLM_SUCCESS);
        assert_true(built == 0 || built == 1);
        if (yes) assert_int_equal(built, 1);
    }
    assert_int_equal(plm_backend_available(PLM_BACKEND_MPI_HOST, &yes), PLM_SUCCESS);
    assert_int_equal(yes, 1);
    assert_non_null(plm_backend_name(PLM_BACKEND_AUTO));
    assert_string_equal(plm_backend_name((plm_backend_t)99), "invalid");
    assert_int_equal(plm_backend_available((plm_backend_t)99, &yes), PLM_ERR_INVALID_ARG);
    assert_int_not_equal(plm_backend_available(PLM_BACKEND_AUTO, &yes), PLM_SUCCESS);
}

static void test_config(void **state)
{
    plm_comm_config_t cfg = PLM_NULL_HANDLE;
    (void)state;
    assert_int_equal(plm_comm_config_create(&cfg), PLM_SUCCESS);
    assert_non_null(cfg);
    assert_int_equal(plm_comm_config_set_backend(cfg, PLM_BACKEND_MPI_STAGED), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_set_backend(cfg, PLM_BACKEND_MPI_HOST), PLM_ERR_INVALID_ARG);
    assert_int_equal(plm_comm_config_set_cuda_aware(cfg, 2), PLM_ERR_INVALID_ARG);
    assert_int_equal(plm_comm_config_set_device(cfg, -2), PLM_ERR_INVALID_ARG);
    assert_int_equal(plm_comm_config_set_stream(cfg, NULL), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_set_nccl_comm(cfg, NULL), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_destroy(&cfg), PLM_SUCCESS);
    assert_null(cfg);
    assert_int_equal(plm_comm_config_destroy(&cfg), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_set_device(cfg, 0), PLM_ERR_INVALID_ARG);
}

/* Collective: every rank takes the same branches. */
static void test_handles(void **state)
{
    plm_comm_config_t cfg = PLM_NULL_HANDLE;
    static const int64_t bad[2] = {0, 0}; /* not a config object */
    plm_comm_t comm = (plm_comm_t)(void *)&cfg; /* not NULL: the failing calls must reset it */
    plm_comm_t none = PLM_NULL_HANDLE;
    plm_array_t a = PLM_NULL_HANDLE, b = PLM_NULL_HANDLE, dev = PLM_NULL_HANDLE;
    plm_stacked_t st = PLM_NULL_HANDLE;
    plm_op_t op = PLM_NULL_HANDLE;
    plm_const_op_t cop = op;
    const plm_partition_t parts[] = {PLM_PARTITION_SCATTER, PLM_PARTITION_BROADCAST,
                                     PLM_PARTITION_UNSAFE_BROADCAST};
    const int64_t shape[1] = {10};
    int rank = -1, size = -1, yes = -1, devyes = 1;
    plm_cuda_aware_source_t source = (plm_cuda_aware_source_t)-1;
    plm_backend_t backend = PLM_BACKEND_AUTO;
    size_t i;
    (void)state;
    (void)cop;

    /* NULL-safe destroys */
    assert_int_equal(plm_comm_destroy(NULL), PLM_SUCCESS);
    assert_int_equal(plm_comm_destroy(&none), PLM_SUCCESS);
    assert_int_equal(plm_array_destroy(NULL), PLM_SUCCESS);
    assert_int_equal(plm_array_destroy(&a), PLM_SUCCESS);
    assert_int_equal(plm_stacked_destroy(&st), PLM_SUCCESS);

    /* failure sets *out = NULL */
    assert_int_equal(plm_comm_create(MPI_COMM_WORLD, (plm_const_comm_config_t)(const void *)bad, &comm),
                     PLM_ERR_INVALID_ARG);
    assert_null(comm);
    assert_true(strlen(plm_last_error()) > 0);
    assert_int_equal(plm_comm_create(MPI_COMM_WORLD, NULL, NULL), PLM_ERR_INVALID_ARG);

    assert_int_equal(plm_comm_config_create(&cfg), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_set_cuda_aware(cfg, 0), PLM_SUCCESS);
    assert_int_equal(plm_comm_create(MPI_COMM_WORLD, cfg, &comm), PLM_SUCCESS);
    assert_int_equal(plm_comm_config_destroy(&cfg), PLM_SUCCESS);
    assert_non_null(comm);
    assert_int_equal(plm_comm_rank(comm, &rank), PLM_SUCCESS);
    assert_int_equal(plm_comm_size(comm, &size), PLM_SUCCESS);
    assert_int_equal(rank, plm_test_rank());
    assert_int_equal(size, plm_test_size());
    assert_int_equal(plm_comm_get_cuda_aware(comm, &yes, &source), PLM_SUCCESS);
    assert_int_equal(yes, 0);
    assert_int_equal(source, PLM_CUDA_AWARE_FROM_CONFIG);
    assert_int_equal(plm_comm_get_backend(comm, PLM_MEMORY_HOST, &backend), PLM_SUCCESS);
    assert_int_equal(backend, PLM_BACKEND_MPI_HOST);

    for (i = 0; i < COUNT(parts); ++i) {
        plm_partition_t p = PLM_PARTITION_SCATTER;
        plm_dtype_t dt = PLM_FLOAT32;
        plm_memory_t m = PLM_MEMORY_DEVICE;
        assert_int_equal(plm_array_create(comm, 1, shape, 0, parts[i], PLM_FLOAT64, PLM_MEMORY_HOST, &a),
                         PLM_SUCCESS);
        assert_int_equal(plm_array_partition(a, &p), PLM_SUCCESS);
        assert_int_equal(p, parts[i]);
        assert_int_equal(plm_array_dtype(a, &dt), PLM_SUCCESS);
        assert_int_equal(dt, PLM_FLOAT64);
        assert_int_equal(plm_array_memory(a, &m), PLM_SUCCESS);
        assert_int_equal(m, PLM_MEMORY_HOST);
        assert_int_equal(plm_array_destroy(&a), PLM_SUCCESS);
        assert_null(a);
        assert_int_equal(plm_array_destroy(&a), PLM_SUCCESS); /* idempotent */
    }

    /* device memory: unavailable unless a device backend is built and usable */
    assert_int_equal(plm_backend_available(PLM_BACKEND_MPI_STAGED, &devyes), PLM_SUCCESS);
    if (!devyes) {
        dev = (plm_array_t)&cfg;
        assert_int_equal(plm_array_create(comm, 1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32,
                                          PLM_MEMORY_DEVICE, &dev),
                         PLM_ERR_BACKEND_UNAVAILABLE);
        assert_null(dev);
    }

    /* a bad argument on every rank: all fail, out is NULL */
    b = (plm_array_t)&cfg;
    assert_int_equal(plm_array_create(comm, 0, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT32, PLM_MEMORY_HOST, &b),
                     PLM_ERR_INVALID_ARG);
    assert_null(b);

    assert_int_equal(plm_comm_destroy(&comm), PLM_SUCCESS);
    assert_null(comm);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enum_values),   cmocka_unit_test(test_version),
        cmocka_unit_test(test_version_handshake), cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_last_error),    cmocka_unit_test(test_dtype_size),
        cmocka_unit_test(test_backends),      cmocka_unit_test(test_config),
        cmocka_unit_test(test_handles),
    };
    return plm_run_group_tests_mpi(tests);
}
