/* bench_device: device (CUDA) array kernels and collectives next to floors measured in the same run.
 *
 * 1. Kernels on N float64 per rank (default 1e8): plm_array_dot, plm_array_norm(2) and
 *    plm_array_axpby on device arrays, each timed alternately with a device-to-device
 *    cudaMemcpyAsync of N doubles on the communicator's stream (the floor: the bandwidth the
 *    GPU reaches on a plain stream copy now, since bandwidth drifts). Bytes counted per
 *    element: copy 16 (read + write), dot 16, norm 8, axpby 24 (reads x, y; writes y).
 *    dot and norm return a host value: their time includes a stream synchronisation and, at
 *    more than one rank, an MPI allreduce of one value; at 1 rank it is the kernel alone.
 * 2. Collectives per device backend (mpi_staged; mpi_cuda_aware when MPI is CUDA-aware;
 *    nccl when built and one GPU per rank), on a communicator forcing that backend:
 *    plm_array_asarray (an allgatherv into a device buffer) of 1 MB and 256 MB in total,
 *    next to MPI_Allgatherv of the same counts on host buffers; and dot / norm of the 1 MB
 *    array next to MPI_Allreduce of one double. The public API has no large device
 *    allreduce (operators compute on host twins), so none is timed.
 *
 *   mpiexec -n 1 build/bench/bench_device [-n N] [-r REPS]
 *
 * A time is the max over ranks of one call (after MPI_Barrier), the table shows the median
 * over REPS (default 21). "vs floor" = GB/s / floor GB/s (for equal bytes: floor time / time);
 * 1 = as fast as the floor. A benchmark, not a test: nothing asserts timings. Exits 77 where
 * no CUDA device is visible. See bench/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"

static int g_rank = 0, g_size = 1;

#define CHECK(call)                                                                                           \
    do {                                                                                                      \
        plm_status_t st_ = (call);                                                                            \
        if (st_ != PLM_SUCCESS) {                                                                             \
            fprintf(stderr, "[rank %d] %s: %s\n  %s\n", g_rank, #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                     \
        }                                                                                                     \
    } while (0)

#define CUDA_CHECK(call)                                                                                      \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess) {                                                                              \
            fprintf(stderr, "[rank %d] %s: %s\n", g_rank, #call, cudaGetErrorString(e_));                     \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                     \
        }                                                                                                     \
    } while (0)

typedef struct {
    plm_array_t x, y;
    cudaStream_t stream;
    void *a, *b, *out; /* device: copy source and destination, asarray output */
    size_t bytes;      /* copy size */
    int64_t n_out;     /* asarray elements */
    double *hin, *hout, val;
    int *counts, *displs;
    MPI_Comm mc; /* our own duplicate for the host MPI floors */
} ctx_t;

static void f_copy(void *p)
{
    ctx_t *c = p;
    CUDA_CHECK(cudaMemcpyAsync(c->b, c->a, c->bytes, cudaMemcpyDeviceToDevice, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}
static void f_dot(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_dot(c->x, c->y, 0, &c->val, NULL));
}
static void f_norm(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_norm(c->x, 2.0, &c->val));
}
static void f_axpby(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_axpby(0.5, 0, c->x, 0.5, 0, c->y)); /* x = y = 1: y stays 1 */
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}
static void f_asarray(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_asarray(c->x, 0, c->out, c->n_out * (int64_t)sizeof(double)));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}
static void f_allgatherv(void *p)
{
    ctx_t *c = p;
    MPI_Allgatherv(c->hin, c->counts[g_rank], MPI_DOUBLE, c->hout, c->counts, c->displs, MPI_DOUBLE, c->mc);
}
static void f_allreduce1(void *p)
{
    ctx_t *c = p;
    double one = 1.0, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, c->mc);
}

/* One row: bytes and floor_bytes counted per call (0: a latency row, "-" for GB/s). */
static void report(const char *backend, const char *op, const char *size, double t, double bytes, double tf,
                   double floor_bytes)
{
    if (g_rank != 0) return;
    const double ratio = bytes > 0 ? (bytes / t) / (floor_bytes / tf) : tf / t;
    if (bytes > 0)
        printf("%-15s %-26s %10s %11.1f %8.1f %11.1f %8.1f %8.2f\n", backend, op, size, t * 1e6, bytes / t / 1e9,
               tf * 1e6, floor_bytes / tf / 1e9, ratio);
    else
        printf("%-15s %-26s %10s %11.1f %8s %11.1f %8s %8.2f\n", backend, op, size, t * 1e6, "-", tf * 1e6, "-",
               ratio);
}

static plm_array_t device_array(plm_comm_t comm, int64_t n_global, double value)
{
    plm_array_t a = NULL;
    CHECK(plm_array_create(comm, 1, &n_global, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_DEVICE, &a));
    CHECK(plm_array_fill(a, value, 0));
    return a;
}

static cudaStream_t stream_of(plm_comm_t comm)
{
    void *s = NULL;
    CHECK(plm_comm_get_stream(comm, &s));
    return (cudaStream_t)s;
}

static void check(int bad, const char *what)
{
    if (bad && g_rank == 0) fprintf(stderr, "bench_device: WARNING: wrong result of %s\n", what);
}

/* Section 2 for one backend: asarray of 1 MB and 256 MB, dot / norm of the 1 MB array. */
static void bench_backend(plm_comm_t comm, const char *name, int reps, MPI_Comm mc)
{
    static const struct { const char *label; int64_t bytes; } sizes[] = {{"1 MB", 1 << 20}, {"256 MB", 256 << 20}};
    for (int s = 0; s < 2; ++s) {
        const int64_t n = sizes[s].bytes / 8;
        ctx_t c = {.mc = mc, .n_out = n, .stream = stream_of(comm)};
        c.x = device_array(comm, n, 1.0);
        c.y = device_array(comm, n, 1.0);
        CUDA_CHECK(cudaMalloc(&c.out, (size_t)sizes[s].bytes));
        c.counts = malloc(sizeof(int) * (size_t)g_size);
        c.displs = malloc(sizeof(int) * (size_t)g_size);
        for (int r = 0, d = 0; r < g_size; d += c.counts[r], ++r) {
            c.counts[r] = (int)(n / g_size + (r < n % g_size));
            c.displs[r] = d;
        }
        c.hin = calloc((size_t)c.counts[g_rank] + 1, sizeof(double));
        c.hout = calloc((size_t)n, sizeof(double));
        double t = 0, tf = 0, last = 0;
        bench_time_pair(f_asarray, &c, f_allgatherv, &c, reps, &t, &tf);
        report(name, "asarray (allgatherv)", sizes[s].label, t, (double)sizes[s].bytes, tf, (double)sizes[s].bytes);
        CUDA_CHECK(cudaMemcpy(&last, (double *)c.out + n - 1, sizeof(double), cudaMemcpyDeviceToHost));
        check(last != 1.0, "asarray");
        if (s == 0) {
            bench_time_pair(f_dot, &c, f_allreduce1, &c, reps, &t, &tf);
            report(name, "dot", sizes[s].label, t, 0, tf, 0);
            check(c.val != (double)n, "dot");
            bench_time_pair(f_norm, &c, f_allreduce1, &c, reps, &t, &tf);
            report(name, "norm 2", sizes[s].label, t, 0, tf, 0);
        }
        CUDA_CHECK(cudaFree(c.out));
        free(c.counts);
        free(c.displs);
        free(c.hin);
        free(c.hout);
        plm_array_destroy(&c.x);
        plm_array_destroy(&c.y);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int64_t N = 100000000;
    int reps = 21;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) N = (int64_t)strtod(argv[i + 1], NULL);
        if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
    }
    if (reps < 1) reps = 1;
    int have = 0, all = 0;
    CHECK(plm_memory_available(PLM_MEMORY_DEVICE, &have));
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (g_rank == 0) fprintf(stderr, "bench_device: skipped: no CUDA device (or a host-only build) on some rank\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm mc;
    MPI_Comm_dup(MPI_COMM_WORLD, &mc);
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    int dev = -1, aware = 0;
    plm_backend_t autob = PLM_BACKEND_AUTO;
    plm_cuda_aware_source_t src = PLM_CUDA_AWARE_FROM_DEFAULT;
    CHECK(plm_comm_get_device(comm, &dev));
    CHECK(plm_comm_get_cuda_aware(comm, &aware, &src));
    plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &autob);
    CUDA_CHECK(cudaSetDevice(dev));
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    if (g_rank == 0) {
        printf("bench_device: %d ranks, rank 0 on device %d (%s), CUDA-aware MPI %d (source %d), auto backend %s\n",
               g_size, dev, prop.name, aware, (int)src, plm_backend_name(autob));
        printf("kernels: N = %lld float64 per rank, median of %d\n", (long long)N, reps);
        printf("%-15s %-26s %10s %11s %8s %11s %8s %8s\n", "backend", "operation", "size", "time(us)", "GB/s",
               "floor(us)", "GB/s", "vs floor");
    }

    /* 1. Kernels against the D2D copy of the same bytes on the communicator's stream. */
    ctx_t k = {.mc = mc, .bytes = (size_t)N * sizeof(double), .stream = stream_of(comm)};
    k.x = device_array(comm, N * g_size, 1.0);
    k.y = device_array(comm, N * g_size, 1.0);
    CUDA_CHECK(cudaMalloc(&k.a, k.bytes));
    CUDA_CHECK(cudaMalloc(&k.b, k.bytes));
    CUDA_CHECK(cudaMemset(k.a, 0, k.bytes));
    CUDA_CHECK(cudaMemset(k.b, 0, k.bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    const struct { const char *name; bench_fn f; double bpe; } kern[] = {
        {"dot", f_dot, 16}, {"norm 2", f_norm, 8}, {"axpby", f_axpby, 24}};
    const double nb = (double)N;
    char nlabel[32];
    snprintf(nlabel, sizeof nlabel, "%lld", (long long)N);
    for (int i = 0; i < 3; ++i) {
        double t = 0, tc = 0;
        bench_time_pair(kern[i].f, &k, f_copy, &k, reps, &t, &tc);
        report("kernels", kern[i].name, nlabel, t, kern[i].bpe * nb, tc, 16 * nb);
        if (i == 0) check(k.val != nb * g_size, "dot");
        if (i == 1) check(fabs(k.val - sqrt(nb * g_size)) > 1e-9 * sqrt(nb * g_size), "norm");
    }
    CUDA_CHECK(cudaFree(k.a));
    CUDA_CHECK(cudaFree(k.b));
    plm_array_destroy(&k.x);
    plm_array_destroy(&k.y);

    /* 2. Collectives per device backend, on a communicator forcing it. */
    if (g_rank == 0) printf("collectives: floor of asarray = host MPI_Allgatherv of the same counts, of dot / norm = "
                           "host MPI_Allreduce of one double\n");
    const plm_backend_t backends[] = {PLM_BACKEND_MPI_STAGED, PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_NCCL};
    for (int i = 0; i < 3; ++i) {
        const char *name = plm_backend_name(backends[i]);
        int avail = 0;
        CHECK(plm_backend_available(backends[i], &avail));
        if (!avail || (backends[i] == PLM_BACKEND_MPI_CUDA_AWARE && !aware)) {
            if (g_rank == 0)
                printf("%s: not run (%s)\n", name, !avail ? "not available in this build or machine"
                                                          : "MPI is not CUDA-aware: forcing it would crash MPI");
            continue;
        }
        plm_comm_config_t cfg = NULL;
        plm_comm_config_create(&cfg);
        plm_comm_config_set_backend(cfg, backends[i]);
        plm_comm_t bc = NULL;
        const plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, &bc);
        plm_comm_config_destroy(&cfg);
        if (st != PLM_SUCCESS) { /* collective: fails on every rank alike (e.g. ranks sharing a GPU) */
            if (g_rank == 0) printf("%s: not run (%s: %s)\n", name, plm_status_string(st), plm_last_error());
            continue;
        }
        bench_backend(bc, name, reps, mc);
        plm_comm_destroy(&bc);
    }
    plm_comm_destroy(&comm);
    MPI_Comm_free(&mc);
    MPI_Finalize();
    return 0;
}
