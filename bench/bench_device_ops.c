/* bench_device_ops: device-native operators and solvers next to floors measured in the same run.
 *
 * Model: a 2-D float64 array of R x C (default 8192 x 4096, 256 MB) split along axis 0.
 * 1. Stencil applies on device arrays through plm_op_apply: a centered first derivative along
 *    axis 0 and along axis 1, and a 2-axis Laplacian; each next to a device-to-device copy of
 *    the same array (the floor: the bandwidth the GPU reaches on a plain copy now). Bytes per
 *    element: 16 (x read once, y written once) for both, so "vs floor" is copy time / apply
 *    time (1 = streaming at copy speed; the target is >= 0.8).
 * 2. A CGLS iteration on device arrays (a 20-iteration solve of the Laplacian / 20) next to the
 *    sum of its parts timed alone on the same arrays: two applies (forward and adjoint), three
 *    axpby, and the reductions (three dot products, each with its synchronisation; CGLS fuses
 *    them into two). Target: iteration <= 1.3 x that sum.
 * 3. The same 20-iteration CGLS on host arrays plus the copies the host-twin path of v0.2 made
 *    (y and x0 to host, x back), against the device solve. Target: device >= 5 x faster.
 *
 *   mpiexec -n 1 build/bench/bench_device_ops [-s R,C] [-r REPS]
 *
 * Times: median over REPS (default 7) of the max over ranks, after a warm-up; the operation
 * and its floor are timed alternately. The last column: for the applies, floor time / time
 * (1 = copy speed); for the iteration, time / floor; for the solve, host-twin time / device
 * time. A benchmark, not a test: nothing asserts timings.
 * Exits 77 where no CUDA device is visible. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"

static int g_rank = 0;

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

enum { ITERS = 20 };

typedef struct {
    plm_op_t op;
    plm_array_t x, y, xh, yh; /* device and host arrays on op's domain and range */
    cudaStream_t stream;
    void *a, *b;  /* device copy floor */
    size_t bytes; /* local bytes of x */
    double dummy;
} bench_t;

static void sync_stream(bench_t *b) { CUDA_CHECK(cudaStreamSynchronize(b->stream)); }

static void f_apply(void *p)
{
    bench_t *b = p;
    CHECK(plm_op_apply(b->op, b->x, b->y));
    sync_stream(b);
}
static void f_copy(void *p)
{
    bench_t *b = p;
    CUDA_CHECK(cudaMemcpyAsync(b->b, b->a, b->bytes, cudaMemcpyDeviceToDevice, b->stream));
    sync_stream(b);
}
static void f_cgls(void *p)
{
    bench_t *b = p;
    CHECK(plm_array_fill(b->x, 0, 0));
    CHECK(plm_solve_cgls(b->op, b->y, b->x, ITERS, 0.0, 0.0, NULL));
    sync_stream(b);
}
/* The parts of one CGLS iteration, one after another. */
static void f_parts(void *p)
{
    bench_t *b = p;
    double re = 0;
    CHECK(plm_op_apply(b->op, b->x, b->y));
    CHECK(plm_op_apply_adjoint(b->op, b->y, b->x));
    for (int i = 0; i < 3; ++i) CHECK(plm_array_axpby(0.5, 0, b->x, 0.5, 0, b->x));
    for (int i = 0; i < 3; ++i) CHECK(plm_array_dot(b->x, b->x, 1, &re, NULL));
    b->dummy += re;
    sync_stream(b);
}
/* v0.2's path: the solve on host twins, y and x0 copied to the host and x back. */
static void f_twins(void *p)
{
    bench_t *b = p;
    const void *dy = NULL;
    void *hy = NULL, *hx = NULL, *dx = NULL;
    CHECK(plm_array_get_local_read(b->y, &dy));
    CHECK(plm_array_get_local_write(b->yh, &hy));
    CUDA_CHECK(cudaMemcpy(hy, dy, b->bytes, cudaMemcpyDeviceToHost));
    CHECK(plm_array_restore_local_write(b->yh, &hy));
    CHECK(plm_array_restore_local_read(b->y, &dy));
    CHECK(plm_array_get_local_write(b->x, &dx));
    CHECK(plm_array_get_local_write(b->xh, &hx));
    CUDA_CHECK(cudaMemcpy(hx, dx, b->bytes, cudaMemcpyDeviceToHost));
    CHECK(plm_array_fill(b->xh, 0, 0));
    CHECK(plm_solve_cgls(b->op, b->yh, b->xh, ITERS, 0.0, 0.0, NULL));
    CUDA_CHECK(cudaMemcpy(dx, hx, b->bytes, cudaMemcpyHostToDevice));
    CHECK(plm_array_restore_local_write(b->xh, &hx));
    CHECK(plm_array_restore_local_write(b->x, &dx));
}

static void seed(plm_array_t x, int s)
{
    int64_t n = 0;
    plm_memory_t m;
    CHECK(plm_array_local_size(x, &n));
    CHECK(plm_array_memory(x, &m));
    double *h = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; ++i) h[i] = sin(0.001 * (double)i + s);
    void *d = NULL;
    CHECK(plm_array_get_local_write(x, &d));
    if (m == PLM_MEMORY_HOST) memcpy(d, h, sizeof(double) * (size_t)n);
    else CUDA_CHECK(cudaMemcpy(d, h, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice));
    CHECK(plm_array_restore_local_write(x, &d));
    free(h);
}

static void arrays(bench_t *b, plm_comm_t comm)
{
    CHECK(plm_op_new_domain_array(b->op, PLM_MEMORY_DEVICE, &b->x));
    CHECK(plm_op_new_range_array(b->op, PLM_MEMORY_DEVICE, &b->y));
    CHECK(plm_op_new_domain_array(b->op, PLM_MEMORY_HOST, &b->xh));
    CHECK(plm_op_new_range_array(b->op, PLM_MEMORY_HOST, &b->yh));
    seed(b->x, 1);
    seed(b->y, 2);
    seed(b->xh, 1);
    seed(b->yh, 2);
    int64_t n = 0;
    CHECK(plm_array_local_size(b->x, &n));
    b->bytes = sizeof(double) * (size_t)n;
    void *s = NULL;
    CHECK(plm_comm_get_stream(comm, &s));
    b->stream = (cudaStream_t)s;
}

static void drop(bench_t *b)
{
    CHECK(plm_array_destroy(&b->x));
    CHECK(plm_array_destroy(&b->y));
    CHECK(plm_array_destroy(&b->xh));
    CHECK(plm_array_destroy(&b->yh));
    CHECK(plm_op_destroy(&b->op));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    int have = 0, size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_memory_available(PLM_MEMORY_DEVICE, &have);
    int all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        if (g_rank == 0) printf("bench_device_ops: skipped (no CUDA device visible)\n");
        MPI_Finalize();
        return 77;
    }
    int reps = 7;
    int64_t dims[2] = {8192, 4096};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            long long r = 0, c = 0;
            if (sscanf(argv[++i], "%lld,%lld", &r, &c) == 2) dims[0] = r, dims[1] = c;
        }
    }
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    plm_backend_t backend;
    CHECK(plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &backend));
    bench_t b = {0};
    const size_t bytes = sizeof(double) * (size_t)(dims[0] * dims[1] / size + dims[1]);
    CUDA_CHECK(cudaMalloc(&b.a, bytes));
    CUDA_CHECK(cudaMalloc(&b.b, bytes));
    CUDA_CHECK(cudaMemset(b.a, 0, bytes));
    if (g_rank == 0) {
        printf("bench_device_ops: %d rank(s), backend %s, float64 %lld x %lld split along axis 0, median of %d\n\n",
               size, plm_backend_name(backend), (long long)dims[0], (long long)dims[1], reps);
        printf("| operation | time (ms) | GB/s | floor | floor (ms) | floor GB/s | ratio |\n");
        printf("|---|---:|---:|---|---:|---:|---:|\n");
    }
    const int axes[2] = {0, 1};
    for (int which = 0; which < 3; ++which) {
        if (which < 2)
            CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 2, dims, -1, which, 1.0, PLM_DERIV_CENTERED, 3, 0, &b.op));
        else
            CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &b.op));
        arrays(&b, comm);
        double t = 0, tc = 0;
        bench_time_pair(f_apply, &b, f_copy, &b, reps, &t, &tc);
        const double gb = 2.0 * (double)b.bytes * 1e-9;
        const char *name = which == 0 ? "first derivative, axis 0" : which == 1 ? "first derivative, axis 1"
                                                                                : "Laplacian, axes 0 and 1";
        if (g_rank == 0)
            printf("| %s | %.3f | %.0f | d2d copy | %.3f | %.0f | %.2f |\n", name, t * 1e3, gb / t, tc * 1e3, gb / tc,
                   tc / t);
        if (which == 2) {
            double ti = 0, tp = 0, th = 0;
            bench_time_pair(f_cgls, &b, f_parts, &b, reps, &ti, &tp);
            if (g_rank == 0)
                printf("| CGLS iteration (Laplacian) | %.3f | - | 2 applies, 3 axpby, 3 dot | %.3f | - | %.2f |\n",
                       ti / ITERS * 1e3, tp * 1e3, ti / ITERS / tp);
            bench_time_pair(f_cgls, &b, f_twins, &b, reps > 3 ? 3 : reps, &ti, &th);
            if (g_rank == 0)
                printf("| CGLS solve, %d iterations, device | %.1f | - | host-twin path (v0.2) | %.1f | - | %.1f x "
                       "faster |\n",
                       ITERS, ti * 1e3, th * 1e3, th / ti);
        }
        drop(&b);
    }
    cudaFree(b.a);
    cudaFree(b.b);
    CHECK(plm_comm_destroy(&comm));
    MPI_Finalize();
    return 0;
}
