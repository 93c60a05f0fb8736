/* Public C API of the communicator (plm_comm_*, plm_backend_*), linked against the shared
 * library like a user program. Host-only build: device memory has no backend. */
#define _POSIX_C_SOURCE 200112L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plm_test_mpi.h"

#include "pylopsmpi.h"

static int rank_(void) { return plm_test_rank(); }

/* Watchdog for the tests where a library that does not agree on errors would hang: after a
 * while, say so on stderr and exit, so the run fails with a reason instead of a CTest timeout. */
static const char *watchdog_what = "";
static void watchdog_fire(int sig)
{
    (void)sig;
    static const char head[] = "HANG: a collective call did not return (errors not agreed across ranks?): ";
    if (write(2, head, sizeof head - 1) < 0) _exit(3);
    if (write(2, watchdog_what, strlen(watchdog_what)) < 0) _exit(3);
    if (write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
static void watchdog_arm(const char *what, unsigned seconds)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fire;
    sigaction(SIGALRM, &sa, NULL);
    watchdog_what = what;
    alarm(seconds);
}
static void watchdog_disarm(void) { alarm(0); }
static int size_(void) { return plm_test_size(); }

/* Expect st on every rank; print what this rank saw otherwise. */
static int expect_status(plm_status_t got, plm_status_t want, const char *what)
{
    if (got == want) return 1;
    fprintf(stderr, "[rank %d] %s: got %s, expected %s (last error: %s)\n", rank_(), what, plm_status_string(got),
            plm_status_string(want), plm_last_error());
    return 0;
}

/* What plm_comm_get_backend(device) returns when the policy picked b: success where b is
 * built and a device is visible (CUDA builds on a GPU machine), else BACKEND_UNAVAILABLE. */
static plm_status_t device_status(plm_backend_t b)
{
    int yes = 0;
    plm_backend_available(b, &yes);
    return yes ? PLM_SUCCESS : PLM_ERR_BACKEND_UNAVAILABLE;
}

/* A config object with cuda_aware and backend set; NULL on failure. */
static plm_comm_config_t make_config(int cuda_aware, plm_backend_t backend)
{
    plm_comm_config_t cfg = NULL;
    if (plm_comm_config_create(&cfg) != PLM_SUCCESS || plm_comm_config_set_cuda_aware(cfg, cuda_aware) != PLM_SUCCESS ||
        plm_comm_config_set_backend(cfg, backend) != PLM_SUCCESS)
        plm_comm_config_destroy(&cfg);
    return cfg;
}

/* Not a config object (its magic is zero): what a destroyed or foreign handle looks like. */
static const plm_const_comm_config_t kJunkConfig = (plm_const_comm_config_t)(const void *)"\0\0\0\0\0\0\0\0";

static plm_comm_t create_or_null(plm_const_comm_config_t cfg)
{
    plm_comm_t c = NULL;
    plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, &c);
    if (st != PLM_SUCCESS) {
        fprintf(stderr, "[rank %d] plm_comm_create: %s (%s)\n", rank_(), plm_status_string(st), plm_last_error());
        return NULL;
    }
    return c;
}

static void test_create_default_rank_size(void **state)
{
    (void)state;
    plm_comm_t c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    int r = -1, s = -1;
    int ok = plm_comm_rank(c, &r) == PLM_SUCCESS && plm_comm_size(c, &s) == PLM_SUCCESS;
    ok = ok && r == rank_() && s == size_();
    MPI_Comm m = MPI_COMM_NULL;
    ok = ok && plm_comm_get_mpi(c, &m) == PLM_SUCCESS;
    int cmp = MPI_UNEQUAL;
    if (m != MPI_COMM_NULL) MPI_Comm_compare(m, MPI_COMM_WORLD, &cmp);
    ok = ok && cmp == MPI_CONGRUENT; /* a duplicate: same group, other context */
    /* the duplicate is usable for collectives */
    int one = 1, sum = 0;
    if (m != MPI_COMM_NULL) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, m);
    ok = ok && sum == size_();
    assert_all_ranks_true(ok);
    assert_all_ranks_true(plm_comm_destroy(&c) == PLM_SUCCESS);
    assert_null(c);
}

static void test_get_backend_host_and_device(void **state)
{
    (void)state;
    plm_comm_t c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    plm_backend_t b = PLM_BACKEND_AUTO;
    int ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_HOST, &b), PLM_SUCCESS, "get_backend(host)");
    ok = ok && b == PLM_BACKEND_MPI_HOST;

    /* device: the policy still chooses (staged or CUDA-aware here, no NCCL attached); without
     * a device (host-only build, or no GPU) the backend is unavailable, with a message */
    b = PLM_BACKEND_AUTO;
    plm_clear_last_error();
    const plm_status_t st = plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &b);
    if (b != PLM_BACKEND_MPI_STAGED && b != PLM_BACKEND_MPI_CUDA_AWARE) {
        fprintf(stderr, "[rank %d] get_backend(device) chose %s\n", rank_(), plm_backend_name(b));
        ok = 0;
    }
    ok = expect_status(st, device_status(b), "get_backend(device)") && ok;
    ok = ok && (st == PLM_SUCCESS || strlen(plm_last_error()) > 0);

    /* argument errors */
    ok = expect_status(plm_comm_get_backend(c, (plm_memory_t)42, &b), PLM_ERR_INVALID_ARG, "get_backend(42)") && ok;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_HOST, NULL), PLM_ERR_INVALID_ARG,
                       "get_backend(NULL out)") && ok;
    ok = expect_status(plm_comm_get_backend(NULL, PLM_MEMORY_HOST, &b), PLM_ERR_INVALID_ARG,
                       "get_backend(NULL comm)") && ok;
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);
}

static void test_get_backend_follows_config(void **state)
{
    (void)state;
    int ok = 1;
    plm_comm_config_t cfg = make_config(1, PLM_BACKEND_AUTO);
    plm_backend_t b;

    assert_all_ranks_true(cfg != NULL);
    plm_comm_t c = create_or_null(cfg);
    assert_all_ranks_true(c != NULL);
    b = PLM_BACKEND_AUTO;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &b), device_status(PLM_BACKEND_MPI_CUDA_AWARE), "aware=1") && ok;
    ok = ok && b == PLM_BACKEND_MPI_CUDA_AWARE;
    b = PLM_BACKEND_AUTO;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_HOST, &b), PLM_SUCCESS, "aware=1 host") && ok;
    ok = ok && b == PLM_BACKEND_MPI_HOST;
    plm_comm_destroy(&c);

    plm_comm_config_set_cuda_aware(cfg, 0);
    c = create_or_null(cfg);
    assert_all_ranks_true(c != NULL);
    b = PLM_BACKEND_AUTO;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &b), device_status(PLM_BACKEND_MPI_STAGED), "aware=0") && ok;
    ok = ok && b == PLM_BACKEND_MPI_STAGED;
    plm_comm_destroy(&c);

    plm_comm_config_set_cuda_aware(cfg, 1);
    plm_comm_config_set_backend(cfg, PLM_BACKEND_MPI_STAGED); /* forced beats CUDA-aware */
    c = create_or_null(cfg);
    assert_all_ranks_true(c != NULL);
    b = PLM_BACKEND_AUTO;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &b), device_status(PLM_BACKEND_MPI_STAGED), "forced") && ok;
    ok = ok && b == PLM_BACKEND_MPI_STAGED;
    b = PLM_BACKEND_AUTO;
    ok = expect_status(plm_comm_get_backend(c, PLM_MEMORY_HOST, &b), PLM_SUCCESS, "forced host") && ok;
    ok = ok && b == PLM_BACKEND_MPI_HOST;
    plm_comm_destroy(&c);
    plm_comm_config_destroy(&cfg);
    assert_all_ranks_true(ok);
}

static void test_cuda_aware_sources(void **state)
{
    (void)state;
    int ok = 1, yes = -1;
    plm_cuda_aware_source_t src = (plm_cuda_aware_source_t)-1;
    plm_comm_config_t cfg = make_config(-1, PLM_BACKEND_AUTO);
    assert_all_ranks_true(cfg != NULL);

    /* environment, read at creation */
    setenv("PYLOPS_MPI_CUDA_AWARE", "1", 1);
    plm_comm_t c = create_or_null(NULL);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(env=1)") && ok;
    ok = ok && yes == 1 && src == PLM_CUDA_AWARE_FROM_ENV;
    /* source may be NULL; still the value stays after the variable is gone */
    yes = -1;
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, NULL), PLM_SUCCESS, "get_cuda_aware(NULL src)") && ok;
    ok = ok && yes == 1;
    ok = expect_status(plm_comm_get_cuda_aware(c, NULL, &src), PLM_ERR_INVALID_ARG, "get_cuda_aware(NULL yes)") && ok;
    ok = expect_status(plm_comm_get_cuda_aware(NULL, &yes, &src), PLM_ERR_INVALID_ARG, "get_cuda_aware(NULL)") && ok;
    plm_comm_destroy(&c);

    setenv("PYLOPS_MPI_CUDA_AWARE", "0", 1);
    c = create_or_null(NULL);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(env=0)") && ok;
    ok = ok && yes == 0 && src == PLM_CUDA_AWARE_FROM_ENV;
    plm_comm_destroy(&c);

    /* the config field wins over the environment */
    setenv("PYLOPS_MPI_CUDA_AWARE", "1", 1);
    plm_comm_config_set_cuda_aware(cfg, 0);
    c = create_or_null(cfg);
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(cfg=0, env=1)") && ok;
    ok = ok && yes == 0 && src == PLM_CUDA_AWARE_FROM_CONFIG;
    plm_backend_t b = PLM_BACKEND_AUTO;
    plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &b);
    ok = ok && b == PLM_BACKEND_MPI_STAGED;
    plm_comm_destroy(&c);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");

    setenv("PYLOPS_MPI_CUDA_AWARE", "0", 1);
    plm_comm_config_set_cuda_aware(cfg, 1);
    c = create_or_null(cfg);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(cfg=1, env=0)") && ok;
    ok = ok && yes == 1 && src == PLM_CUDA_AWARE_FROM_CONFIG;
    plm_comm_destroy(&c);

    /* a value other than 0/1 in the environment is ignored: vendor query or default */
    setenv("PYLOPS_MPI_CUDA_AWARE", "garbage", 1);
    c = create_or_null(NULL);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(env=garbage)") && ok;
    ok = ok && (src == PLM_CUDA_AWARE_FROM_VENDOR || (src == PLM_CUDA_AWARE_FROM_DEFAULT && yes == 0));
    plm_comm_destroy(&c);

    /* nothing said */
    c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_get_cuda_aware(c, &yes, &src), PLM_SUCCESS, "get_cuda_aware(default)") && ok;
    ok = ok && (src == PLM_CUDA_AWARE_FROM_VENDOR || (src == PLM_CUDA_AWARE_FROM_DEFAULT && yes == 0));
    plm_comm_destroy(&c);
    plm_comm_config_destroy(&cfg);
    assert_all_ranks_true(ok);
}

/* Device and stream queries: -1 and BACKEND_UNAVAILABLE without a device (host-only build or
 * no GPU); with one, the stream exists and set_stream round-trips. NULL outputs are refused. */
static void test_device_and_stream(void **state)
{
    (void)state;
    int ok = 1, dev = -2, have = 0;
    plm_comm_t c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    plm_memory_available(PLM_MEMORY_DEVICE, &have);
    ok = expect_status(plm_comm_get_device(c, &dev), PLM_SUCCESS, "get_device") && ok;
    ok = ok && (have ? dev >= 0 : dev == -1);
    void *s = (void *)&dev;
    const plm_status_t st = plm_comm_get_stream(c, &s);
    if (have) {
        ok = ok && st == PLM_SUCCESS && s != NULL;
        ok = expect_status(plm_comm_set_stream(c, NULL), PLM_SUCCESS, "set_stream(NULL)") && ok;
    } else {
        ok = ok && st == PLM_ERR_BACKEND_UNAVAILABLE && s == NULL;
        ok = expect_status(plm_comm_set_stream(c, NULL), PLM_ERR_BACKEND_UNAVAILABLE, "set_stream") && ok;
    }
    ok = expect_status(plm_comm_get_device(c, NULL), PLM_ERR_INVALID_ARG, "get_device(NULL)") && ok;
    ok = expect_status(plm_comm_get_stream(c, NULL), PLM_ERR_INVALID_ARG, "get_stream(NULL)") && ok;
    ok = expect_status(plm_comm_get_device(NULL, &dev), PLM_ERR_INVALID_ARG, "get_device(NULL comm)") && ok;
    ok = expect_status(plm_comm_set_stream(NULL, NULL), PLM_ERR_INVALID_ARG, "set_stream(NULL comm)") && ok;
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);
}

static void test_backend_available(void **state)
{
    (void)state;
    int ok = 1, yes = -1;
    int compiled[PLM_BACKEND_NCCL + 1] = {0};
    for (int b = PLM_BACKEND_MPI_HOST; b <= PLM_BACKEND_NCCL; ++b)
        ok = expect_status(plm_backend_compiled((plm_backend_t)b, &compiled[b]), PLM_SUCCESS, "backend_compiled") && ok;
    ok = expect_status(plm_backend_available(PLM_BACKEND_MPI_HOST, &yes), PLM_SUCCESS, "available(mpi_host)") && ok;
    ok = ok && yes == 1 && compiled[PLM_BACKEND_MPI_HOST] == 1;
    ok = expect_status(plm_backend_compiled(PLM_BACKEND_AUTO, &yes), PLM_ERR_INVALID_ARG, "compiled(AUTO)") && ok;
    ok = expect_status(plm_backend_compiled(PLM_BACKEND_NCCL, NULL), PLM_ERR_INVALID_ARG, "compiled(NULL)") && ok;
    /* device memory: whatever the machine has, host memory always */
    int dev = -1, host = -1;
    ok = expect_status(plm_memory_available(PLM_MEMORY_HOST, &host), PLM_SUCCESS, "memory_available(host)") && ok;
    ok = expect_status(plm_memory_available(PLM_MEMORY_DEVICE, &dev), PLM_SUCCESS, "memory_available(device)") && ok;
    ok = ok && host == 1 && (dev == 0 || dev == 1);
    ok = expect_status(plm_memory_available((plm_memory_t)5, &dev), PLM_ERR_INVALID_ARG, "memory_available(5)") && ok;
    ok = expect_status(plm_memory_available(PLM_MEMORY_HOST, NULL), PLM_ERR_INVALID_ARG, "memory_available(NULL)") && ok;
    plm_memory_available(PLM_MEMORY_DEVICE, &dev);
    /* a device backend is available iff it is compiled in and a device is visible */
    const plm_backend_t gpu[] = {PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_MPI_STAGED, PLM_BACKEND_NCCL};
    for (int i = 0; i < 3; ++i) {
        yes = -1;
        ok = expect_status(plm_backend_available(gpu[i], &yes), PLM_SUCCESS, plm_backend_name(gpu[i])) && ok;
        const int built = compiled[gpu[i]];
        if (yes != (built && dev)) {
            fprintf(stderr, "[rank %d] backend %s: available %d, built %d, device %d\n", rank_(),
                    plm_backend_name(gpu[i]), yes, built, dev);
            ok = 0;
        }
    }
    /* the two MPI device paths come together (a CUDA build); NCCL only with them */
    {
        const int aware = compiled[PLM_BACKEND_MPI_CUDA_AWARE], staged = compiled[PLM_BACKEND_MPI_STAGED],
                  nccl = compiled[PLM_BACKEND_NCCL];
        ok = ok && aware == staged && (!nccl || staged);
    }
    ok = expect_status(plm_backend_available(PLM_BACKEND_AUTO, &yes), PLM_ERR_INVALID_ARG, "available(AUTO)") && ok;
    ok = expect_status(plm_backend_available((plm_backend_t)99, &yes), PLM_ERR_INVALID_ARG, "available(99)") && ok;
    ok = expect_status(plm_backend_available(PLM_BACKEND_MPI_HOST, NULL), PLM_ERR_INVALID_ARG,
                       "available(NULL)") && ok;
    ok = ok && strcmp(plm_backend_name(PLM_BACKEND_MPI_HOST), "mpi_host") == 0;
    ok = ok && strcmp(plm_backend_name((plm_backend_t)99), "invalid") == 0;
    assert_all_ranks_true(ok);
}

/* The config object: defaults, setters (bad values refused locally, the object unchanged),
 * NULL-safe destroy, and a communicator made from it. */
static void test_config_object(void **state)
{
    (void)state;
    int ok = 1;
    plm_comm_config_t cfg = NULL;
    ok = expect_status(plm_comm_config_create(&cfg), PLM_SUCCESS, "config_create") && ok && cfg != NULL;
    ok = expect_status(plm_comm_config_create(NULL), PLM_ERR_INVALID_ARG, "config_create(NULL)") && ok;
    ok = expect_status(plm_comm_config_set_cuda_aware(cfg, 7), PLM_ERR_INVALID_ARG, "cuda_aware 7") && ok;
    ok = expect_status(plm_comm_config_set_backend(cfg, (plm_backend_t)99), PLM_ERR_INVALID_ARG, "backend 99") && ok;
    ok = expect_status(plm_comm_config_set_backend(cfg, PLM_BACKEND_MPI_HOST), PLM_ERR_INVALID_ARG, "backend host") && ok;
    ok = expect_status(plm_comm_config_set_device(cfg, -5), PLM_ERR_INVALID_ARG, "device -5") && ok;
    ok = expect_status(plm_comm_config_set_device(NULL, 0), PLM_ERR_INVALID_ARG, "set_device(NULL)") && ok;
    ok = expect_status(plm_comm_config_set_stream(cfg, NULL), PLM_SUCCESS, "set_stream(NULL)") && ok;
    ok = expect_status(plm_comm_config_set_nccl_comm(cfg, NULL), PLM_SUCCESS, "set_nccl_comm(NULL)") && ok;
    ok = expect_status(plm_comm_config_set_device(cfg, -1), PLM_SUCCESS, "device -1") && ok;

    /* the refused values left the defaults: the communicator detects CUDA-awareness */
    plm_comm_t c = create_or_null(cfg);
    assert_all_ranks_true(c != NULL);
    plm_cuda_aware_source_t src = PLM_CUDA_AWARE_FROM_CONFIG;
    int yes = -1;
    plm_comm_get_cuda_aware(c, &yes, &src);
    ok = ok && src != PLM_CUDA_AWARE_FROM_CONFIG;
    plm_comm_destroy(&c);

    ok = expect_status(plm_comm_config_destroy(&cfg), PLM_SUCCESS, "config_destroy") && ok && cfg == NULL;
    ok = expect_status(plm_comm_config_destroy(&cfg), PLM_SUCCESS, "config_destroy(NULL handle)") && ok;
    ok = expect_status(plm_comm_config_destroy(NULL), PLM_SUCCESS, "config_destroy(NULL)") && ok;
    assert_all_ranks_true(ok);
}

/* Every rank passes the same bad config: every rank returns INVALID_ARG and *out = NULL. */
static void check_bad_config_everywhere(plm_const_comm_config_t cfg, const char *what)
{
    plm_comm_t c = (plm_comm_t)(uintptr_t)0x1; /* must be reset to NULL */
    plm_clear_last_error();
    plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, &c);
    int ok = expect_status(st, PLM_ERR_INVALID_ARG, what);
    ok = ok && c == NULL && strlen(plm_last_error()) > 0;
    assert_all_ranks_true(ok);
}

static void test_bad_configs_all_ranks(void **state)
{
    (void)state;
    check_bad_config_everywhere(kJunkConfig, "not a config object");

    /* MPI_COMM_NULL and a NULL output */
    plm_comm_t c = (plm_comm_t)(uintptr_t)0x1;
    int ok = expect_status(plm_comm_create(MPI_COMM_NULL, NULL, &c), PLM_ERR_INVALID_ARG, "MPI_COMM_NULL");
    ok = ok && c == NULL;
    ok = expect_status(plm_comm_create(MPI_COMM_WORLD, NULL, NULL), PLM_ERR_INVALID_ARG, "NULL out") && ok;
    assert_all_ranks_true(ok);
}

/* A bad config on one rank only: the call is collective, so every rank must return the error
 * (DESIGN: "a bad argument on one rank makes all ranks return the error, never a hang"). */
static void test_bad_config_one_rank(void **state)
{
    (void)state;
    const int bad_rank = size_() - 1;
    const char *what[] = {"not a config object on the last rank", "a NULL output on the last rank"};
    for (int k = 0; k < 2; ++k) {
        plm_comm_config_t good = make_config(-1, PLM_BACKEND_AUTO);
        plm_const_comm_config_t cfg = rank_() == bad_rank && k == 0 ? kJunkConfig : good;
        /* must be reset to NULL (where it is passed) */
        plm_comm_t c = rank_() == bad_rank && k == 1 ? NULL : (plm_comm_t)(uintptr_t)0x1;
        watchdog_arm(what[k], 30);
        plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, rank_() == bad_rank && k == 1 ? NULL : &c);
        int ok = expect_status(st, PLM_ERR_INVALID_ARG, what[k]) && c == NULL;
        plm_comm_config_destroy(&good);
        /* destroy (collective) only if every rank got one; a partial success is leaked */
        if (plm_all_ranks(st == PLM_SUCCESS)) plm_comm_destroy(&c);
        watchdog_disarm();
        assert_all_ranks_true(ok);
    }
}

static void test_create_f(void **state)
{
    (void)state;
    plm_comm_t c = NULL;
    int ok = expect_status(plm_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &c), PLM_SUCCESS, "create_f");
    assert_all_ranks_true(ok && c != NULL);
    int r = -1, s = -1;
    ok = plm_comm_rank(c, &r) == PLM_SUCCESS && plm_comm_size(c, &s) == PLM_SUCCESS && r == rank_() && s == size_();
    MPI_Comm m = MPI_COMM_NULL;
    plm_comm_get_mpi(c, &m);
    int cmp = MPI_UNEQUAL;
    if (m != MPI_COMM_NULL) MPI_Comm_compare(m, MPI_COMM_WORLD, &cmp);
    ok = ok && cmp == MPI_CONGRUENT;
    /* the round trip: the library's communicator as a Fortran handle, and back */
    MPI_Fint f = -1;
    ok = expect_status(plm_comm_get_mpi_f(c, &f), PLM_SUCCESS, "get_mpi_f") && ok;
    ok = ok && MPI_Comm_f2c(f) == m;
    ok = expect_status(plm_comm_get_mpi_f(c, NULL), PLM_ERR_INVALID_ARG, "get_mpi_f(NULL)") && ok;
    ok = expect_status(plm_comm_get_mpi_f(NULL, &f), PLM_ERR_INVALID_ARG, "get_mpi_f(NULL comm)") && ok;
    plm_comm_t again = NULL;
    ok = expect_status(plm_comm_create_f(f, NULL, &again), PLM_SUCCESS, "create_f(get_mpi_f)") && ok;
    assert_all_ranks_true(ok && again != NULL);
    plm_comm_destroy(&again);
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);

    /* with a config, and from a user communicator freed right after (it is duplicated) */
    MPI_Comm mine;
    MPI_Comm_dup(MPI_COMM_WORLD, &mine);
    plm_comm_config_t cfg = make_config(1, PLM_BACKEND_AUTO);
    ok = expect_status(plm_comm_create_f(MPI_Comm_c2f(mine), cfg, &c), PLM_SUCCESS, "create_f(cfg)");
    plm_comm_config_destroy(&cfg);
    MPI_Comm_free(&mine);
    assert_all_ranks_true(ok && c != NULL);
    int yes = -1;
    plm_cuda_aware_source_t src;
    ok = plm_comm_get_cuda_aware(c, &yes, &src) == PLM_SUCCESS && yes == 1 && src == PLM_CUDA_AWARE_FROM_CONFIG;
    plm_comm_get_mpi(c, &m);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, m);
    ok = ok && sum == size_();
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);

    /* a bad config through the Fortran entry too */
    c = (plm_comm_t)(uintptr_t)0x1;
    ok = expect_status(plm_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), kJunkConfig, &c), PLM_ERR_INVALID_ARG,
                       "create_f(not a config)") && c == NULL;
    assert_all_ranks_true(ok);
}

static void test_split(void **state)
{
    (void)state;
    const int P = size_(), me = rank_();
    plm_comm_config_t cfg = make_config(1, PLM_BACKEND_AUTO);
    plm_comm_t c = create_or_null(cfg);
    plm_comm_config_destroy(&cfg);
    assert_all_ranks_true(c != NULL);

    /* parity groups, in reverse rank order (key = -rank) */
    plm_comm_t sub = NULL;
    int ok = expect_status(plm_comm_split(c, me % 2, -me, &sub), PLM_SUCCESS, "split");
    assert_all_ranks_true(ok && sub != NULL);
    int want_size = 0, want_rank = 0;
    for (int q = 0; q < P; ++q)
        if (q % 2 == me % 2) {
            ++want_size;
            if (q > me) ++want_rank; /* higher ranks come first */
        }
    int r = -1, s = -1;
    ok = plm_comm_rank(sub, &r) == PLM_SUCCESS && plm_comm_size(sub, &s) == PLM_SUCCESS;
    ok = ok && r == want_rank && s == want_size;
    if (!ok) fprintf(stderr, "[rank %d] split: rank %d size %d, expected %d %d\n", me, r, s, want_rank, want_size);

    /* the sub-communicator works and holds exactly its group: sum of world ranks */
    MPI_Comm m = MPI_COMM_NULL;
    plm_comm_get_mpi(sub, &m);
    int sum = 0, want_sum = 0;
    for (int q = 0; q < P; ++q)
        if (q % 2 == me % 2) want_sum += q;
    if (m != MPI_COMM_NULL) MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, m);
    ok = ok && sum == want_sum;

    /* it inherits the configuration */
    int yes = -1;
    plm_cuda_aware_source_t src;
    ok = ok && plm_comm_get_cuda_aware(sub, &yes, &src) == PLM_SUCCESS && yes == 1 &&
         src == PLM_CUDA_AWARE_FROM_CONFIG;
    plm_backend_t b = PLM_BACKEND_AUTO;
    ok = ok && plm_comm_get_backend(sub, PLM_MEMORY_DEVICE, &b) == device_status(PLM_BACKEND_MPI_CUDA_AWARE) &&
         b == PLM_BACKEND_MPI_CUDA_AWARE;
    b = PLM_BACKEND_AUTO;
    ok = ok && plm_comm_get_backend(sub, PLM_MEMORY_HOST, &b) == PLM_SUCCESS && b == PLM_BACKEND_MPI_HOST;
    assert_all_ranks_true(ok);

    /* a split of the split; destroy the parent first: the children stay valid */
    plm_comm_t subsub = NULL;
    ok = expect_status(plm_comm_split(sub, 0, 0, &subsub), PLM_SUCCESS, "split of split");
    assert_all_ranks_true(ok && subsub != NULL);
    assert_all_ranks_true(plm_comm_destroy(&c) == PLM_SUCCESS && c == NULL);
    s = -1;
    ok = plm_comm_size(subsub, &s) == PLM_SUCCESS && s == want_size;
    assert_all_ranks_true(ok);
    plm_comm_destroy(&subsub);
    plm_comm_destroy(&sub);

    /* one group for everybody */
    c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_split(c, 3, 0, &sub), PLM_SUCCESS, "split(one group)");
    s = -1;
    r = -1;
    ok = ok && plm_comm_size(sub, &s) == PLM_SUCCESS && plm_comm_rank(sub, &r) == PLM_SUCCESS && s == P && r == me;
    assert_all_ranks_true(ok);
    plm_comm_destroy(&sub);

    /* negative color everywhere -> INVALID_ARG everywhere, *out = NULL */
    sub = (plm_comm_t)(uintptr_t)0x1;
    ok = expect_status(plm_comm_split(c, -1, 0, &sub), PLM_ERR_INVALID_ARG, "split(color -1)") && sub == NULL;
    assert_all_ranks_true(ok);
    ok = expect_status(plm_comm_split(c, 0, 0, NULL), PLM_ERR_INVALID_ARG, "split(NULL out)");
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);
}

/* A negative color on one rank only: every rank must get the error, no hang. */
static void test_split_bad_color_one_rank(void **state)
{
    (void)state;
    plm_comm_t c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    plm_comm_t sub = (plm_comm_t)(uintptr_t)0x1;
    const int color = rank_() == size_() - 1 ? -3 : 0;
    watchdog_arm("plm_comm_split with color -3 on the last rank only", 30);
    plm_status_t st = plm_comm_split(c, color, 0, &sub);
    int ok = expect_status(st, PLM_ERR_INVALID_ARG, "split(color -3 on the last rank)") && sub == NULL;
    if (plm_all_ranks(st == PLM_SUCCESS)) plm_comm_destroy(&sub);
    watchdog_disarm();
    assert_all_ranks_true(ok);
    plm_comm_destroy(&c);
}

static void test_destroy_null_safety(void **state)
{
    (void)state;
    int ok = expect_status(plm_comm_destroy(NULL), PLM_SUCCESS, "destroy(NULL)");
    plm_comm_t c = NULL;
    ok = expect_status(plm_comm_destroy(&c), PLM_SUCCESS, "destroy(&NULL)") && ok;
    ok = ok && c == NULL;
    c = create_or_null(NULL);
    assert_all_ranks_true(c != NULL);
    ok = expect_status(plm_comm_destroy(&c), PLM_SUCCESS, "destroy") && ok;
    ok = ok && c == NULL;
    ok = expect_status(plm_comm_destroy(&c), PLM_SUCCESS, "destroy twice") && ok;
    /* queries on a NULL handle */
    int r;
    MPI_Comm m;
    ok = expect_status(plm_comm_rank(NULL, &r), PLM_ERR_INVALID_ARG, "rank(NULL)") && ok;
    ok = expect_status(plm_comm_size(NULL, &r), PLM_ERR_INVALID_ARG, "size(NULL)") && ok;
    ok = expect_status(plm_comm_get_mpi(NULL, &m), PLM_ERR_INVALID_ARG, "get_mpi(NULL)") && ok;
    assert_all_ranks_true(ok);
}

/* A healthy communicator reports no error (and an empty message); bad arguments are refused
 * locally; plm_comm_abort of a bad handle returns instead of aborting. */
static void test_async_error_and_abort_arguments(void **state)
{
    (void)state;
    plm_comm_t c = create_or_null(NULL);
    int ok = c != NULL;
    plm_status_t err = PLM_ERR_INTERNAL;
    char msg[64] = "junk";
    ok &= expect_status(plm_comm_get_async_error(c, &err, msg, sizeof msg), PLM_SUCCESS, "get_async_error");
    ok &= err == PLM_SUCCESS && msg[0] == '\0';
    ok &= expect_status(plm_comm_get_async_error(c, &err, NULL, 0), PLM_SUCCESS, "get_async_error, no message");
    ok &= expect_status(plm_comm_get_async_error(c, NULL, msg, sizeof msg), PLM_ERR_INVALID_ARG, "NULL error");
    ok &= expect_status(plm_comm_get_async_error(NULL, &err, msg, sizeof msg), PLM_ERR_INVALID_ARG, "NULL comm");
    ok &= expect_status(plm_comm_abort(NULL, 3), PLM_ERR_INVALID_ARG, "abort of a NULL comm");
    plm_comm_destroy(&c);
    assert_all_ranks_true(ok);
}

static void test_status_strings(void **state)
{
    (void)state;
    int ok = 1;
    for (int s = 0; s <= 11; ++s) {
        const char *t = plm_status_string((plm_status_t)s);
        ok = ok && t != NULL && strlen(t) > 0;
    }
    ok = ok && plm_status_string((plm_status_t)1000) != NULL;
    plm_clear_last_error();
    ok = ok && plm_last_error() != NULL && plm_last_error()[0] == '\0';
    assert_all_ranks_true(ok);
}

int main(int argc, char **argv)
{
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    unsetenv("PYLOPS_MPI_NCCL");
    unsetenv("NCCL_PYLOPS_MPI");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_async_error_and_abort_arguments),
        cmocka_unit_test(test_create_default_rank_size),
        cmocka_unit_test(test_get_backend_host_and_device),
        cmocka_unit_test(test_get_backend_follows_config),
        cmocka_unit_test(test_cuda_aware_sources),
        cmocka_unit_test(test_backend_available),
        cmocka_unit_test(test_config_object),
        cmocka_unit_test(test_bad_configs_all_ranks),
        cmocka_unit_test(test_create_f),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_destroy_null_safety),
        cmocka_unit_test(test_device_and_stream),
        /* last: a library that does not agree on errors would hang here */
        cmocka_unit_test(test_bad_config_one_rank),
        cmocka_unit_test(test_split_bad_color_one_rank),
    };
    return plm_run_group_tests_mpi(tests);
}
