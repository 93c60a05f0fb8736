/* A device fault on one rank, in the middle of a collective call on device arrays, ends in an
 * error on every rank and never in a hang (emulated device: plm_device_emu.h injects it). For
 * each device backend, the last rank's next kernel fails (as a faulting kernel: the error is
 * sticky on that rank) during a norm, a stencil apply or a CGLS solve; with NCCL, also the
 * last rank's next NCCL operation (NCCL reports it asynchronously; the peers learn of it when
 * that rank aborts its NCCL communicator). Each time no rank hangs (a watchdog ends a hung
 * run), and either the call fails on every rank with one status (the fault was agreed), or the
 * next collective call on device arrays does (it surfaced later - a kernel's fault is reported
 * at the next synchronisation, as on a GPU - or the communicator was poisoned).
 * Usage: test_device_faults [mpi_staged|mpi_cuda_aware|nccl] (all three without an argument). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <plm_device_emu.h>

#include "pylopsmpi.h"

static int fails = 0, rank = 0, nranks = 1;
static long long g_fired = 0; /* injected faults fired before the call under test */

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "[rank %d] %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            ++fails;                                                        \
        }                                                                   \
    } while (0)
#define OK(call) CHECK((call) == PLM_SUCCESS, "%s: %s", #call, plm_last_error())

enum fault { KERNEL, NCCL_OP };
enum call { NORM, STENCIL, CGLS };
static const char *call_names[] = {"norm", "stencil apply", "CGLS"};

static plm_comm_t make_comm(plm_backend_t b)
{
    plm_comm_config_t cfg = NULL;
    plm_comm_config_create(&cfg);
    plm_comm_config_set_backend(cfg, b);
    if (b == PLM_BACKEND_MPI_CUDA_AWARE) plm_comm_config_set_cuda_aware(cfg, 1);
    plm_comm_t comm = NULL;
    OK(plm_comm_create(MPI_COMM_WORLD, cfg, &comm));
    plm_comm_config_destroy(&cfg);
    return comm;
}

/* The call under test on device arrays of comm, armed on the last rank just before it. */
static plm_status_t faulty_call(plm_comm_t comm, enum call c, enum fault f)
{
    const int64_t n = 40 * nranks;
    plm_op_t op = NULL;
    plm_array_t x = NULL, y = NULL;
    OK(plm_op_first_derivative(comm, PLM_FLOAT64, 1, &n, -1, 0, 1.0, PLM_DERIV_CENTERED, 3, 1, &op));
    OK(plm_op_new_domain_array(op, PLM_MEMORY_DEVICE, &x));
    OK(plm_op_new_range_array(op, PLM_MEMORY_DEVICE, &y));
    OK(plm_array_fill(x, 1.0, 0.0));
    OK(plm_op_apply(op, x, y)); /* healthy first: the fault is the armed one */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == nranks - 1) {
        if (f == KERNEL) plm_emu_fail_kernel(1);
        else plm_emu_fail_nccl(1);
    }
    g_fired = plm_emu_count("faults");
    plm_status_t st = PLM_SUCCESS;
    double r = 0;
    switch (c) {
    case NORM: st = plm_array_norm(x, 2, &r); break;
    case STENCIL: st = plm_op_apply(op, x, y); break;
    case CGLS: st = plm_solve_cgls(op, x, y, 5, 0.0, 0.0, NULL); break;
    }
    /* (a kernel's fault fires when its stream runs, which may be in a later call) */
    if (rank == nranks - 1) plm_emu_fail_kernel(0);
    if (rank == nranks - 1) plm_emu_fail_nccl(0);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return st;
}

/* The lowest and highest status of st over the ranks. */
static void spread(plm_status_t st, int *lo, int *hi)
{
    *lo = *hi = (int)st;
    MPI_Allreduce(MPI_IN_PLACE, lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_device_faults: WATCHDOG: a rank still waits after 120 s (a hang)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(124);
    _exit(124);
}

static void run_case(plm_backend_t b, enum call c, enum fault f)
{
    char what[96];
    snprintf(what, sizeof what, "%s, %s fault in a %s", plm_backend_name(b), f == KERNEL ? "kernel" : "NCCL",
             call_names[c]);
    plm_comm_t comm = make_comm(b);
    alarm(120);
    const plm_status_t st = faulty_call(comm, c, f);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", st == PLM_SUCCESS ? "" : plm_last_error());
    if (getenv("PLM_TEST_VERBOSE")) fprintf(stderr, "[rank %d] %s: %s %s\n", rank, what, plm_status_string(st), msg);
    int lo = 0, hi = 0;
    spread(st, &lo, &hi);
    const int agreed = lo == hi && lo != PLM_SUCCESS;
    plm_status_t next = PLM_SUCCESS;
    /* Otherwise the fault surfaces in a later collective call on device arrays, on every rank
     * alike: the next one, or (a fault found after that call's agreement poisons the
     * communicator) the one after it. */
    for (int attempt = 0; !agreed && attempt < 2 && next == PLM_SUCCESS; ++attempt) {
        const int64_t n = 8 * nranks;
        plm_array_t d = NULL;
        next = plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_DEVICE, &d);
        double r = 0;
        if (next == PLM_SUCCESS) { /* the fill is local: the norm runs on every rank whatever it gave */
            const plm_status_t filled = plm_array_fill(d, 1.0, 0.0);
            next = plm_array_norm(d, 2, &r);
            if (next == PLM_SUCCESS) next = filled;
        }
        plm_array_destroy(&d);
        int nlo = 0, nhi = 0;
        spread(next, &nlo, &nhi);
        CHECK(nlo == nhi, "%s: the call gave statuses %d..%d (here %s: %s), then call %d %d..%d (here %s)", what, lo, hi,
              plm_status_string(st), msg, attempt + 1, nlo, nhi, plm_last_error());
        if (nhi != PLM_SUCCESS) next = (plm_status_t)nhi;
    }
    CHECK(agreed || next != PLM_SUCCESS, "%s: the fault never surfaced", what);
    if (rank == nranks - 1) CHECK(plm_emu_count("faults") == g_fired + 1, "%s: the injected fault did not fire", what);
    alarm(0);
    if (rank == nranks - 1)
        printf("%s: %s on the faulting rank (%s)%s%s\n", what, plm_status_string(st), msg,
               agreed ? ", agreed by every rank" : "; then ", agreed ? "" : plm_status_string(next));
    plm_emu_clear_errors(); /* the faulting rank's device, reset */
    plm_comm_destroy(&comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    signal(SIGALRM, on_alarm);
    /* NCCL waits this long for a peer before giving up (the default is 600 s) */
    setenv("PYLOPS_MPI_NCCL_TIMEOUT", "30", 0);
    const plm_backend_t all[] = {PLM_BACKEND_MPI_STAGED, PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_NCCL};
    for (int k = 0; k < 3; ++k) {
        if (argc > 1 && strcmp(argv[1], plm_backend_name(all[k])) != 0) continue;
        for (int c = NORM; c <= CGLS; ++c) run_case(all[k], (enum call)c, KERNEL);
        if (all[k] == PLM_BACKEND_NCCL && nranks > 1) /* a norm's partials ride in its agreement: no NCCL call */
            for (int c = STENCIL; c <= CGLS; ++c) run_case(all[k], (enum call)c, NCCL_OP);
    }
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_device_faults on %d rank(s): %s (%d failed checks)\n", nranks,
                          total ? "FAILED" : "passed", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
