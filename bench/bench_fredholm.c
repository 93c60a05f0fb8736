/* bench_fredholm: Fredholm1 (plm_op_fredholm1) forward and adjoint, float64, next to floors
 * measured in the same run on the same rank:
 *   - dgemm: the batched cblas_dgemm of this rank's slices (nx x ny times ny x nz each), the
 *     arithmetic of the apply;
 *   - dgemm + allgatherv: the same, then one MPI_Allgatherv of every rank's results (the
 *     communication the apply needs, since x and y are BROADCAST).
 *
 *   mpiexec -n 2 build/bench/bench_fredholm [-s nsl,nx,ny,nz] [-r REPS]
 *   (default nsl = 64 slices in all, nx = ny = 256, nz = 64)
 *
 * Slices are split as evenly as the ranks allow. Times: median over REPS (default 7) of the
 * max over ranks, after one warm-up call; operator and floor timed alternately. A benchmark,
 * not a test: nothing here asserts timings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0, g_size = 1;

typedef struct {
    int64_t nsl, nx, ny, nz, mine, first;
    int adjoint;
    double *g, *in, *out; /* the floors' operands: this rank's slices, whole vectors */
    int *counts, *displs; /* the floor's allgatherv (forward or adjoint results) */
    plm_op_t op;
    plm_array_t x, y;
} bench_t;

static void f_gemms(void *p)
{
    bench_t *b = p;
    const int nx = (int)b->nx, ny = (int)b->ny, nz = (int)b->nz;
    for (int64_t s = 0; s < b->mine; ++s) {
        const double *g = b->g + s * b->nx * b->ny;
        if (!b->adjoint)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nx, nz, ny, 1.0, g, ny,
                        b->in + (b->first + s) * b->ny * b->nz, nz, 0.0, b->out + (b->first + s) * b->nx * b->nz, nz);
        else
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ny, nz, nx, 1.0, g, ny,
                        b->in + (b->first + s) * b->nx * b->nz, nz, 0.0, b->out + (b->first + s) * b->ny * b->nz, nz);
    }
}
static void f_gemms_gather(void *p)
{
    bench_t *b = p;
    f_gemms(b);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, b->out, b->counts, b->displs, MPI_DOUBLE, MPI_COMM_WORLD);
}
static void f_apply(void *p)
{
    bench_t *b = p;
    if (b->adjoint) CHECK(plm_op_apply_adjoint(b->op, b->y, b->x));
    else CHECK(plm_op_apply(b->op, b->x, b->y));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int reps = 7;
    bench_t b = {0};
    b.nsl = 64, b.nx = 256, b.ny = 256, b.nz = 64;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            long long a = 0, c = 0, d = 0, e = 0;
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &a, &c, &d, &e) == 4) b.nsl = a, b.nx = c, b.ny = d, b.nz = e;
        }
    }
    b.counts = malloc(sizeof(int) * (size_t)g_size);
    b.displs = malloc(sizeof(int) * (size_t)g_size);
    int64_t start = 0;
    for (int r = 0; r < g_size; ++r) {
        const int64_t n = b.nsl / g_size + (r < b.nsl % g_size);
        if (r == g_rank) b.mine = n, b.first = start;
        start += n;
    }
    const int64_t nmax = (b.nx > b.ny ? b.nx : b.ny) * b.nz * b.nsl;
    b.g = malloc(sizeof(double) * (size_t)(b.mine * b.nx * b.ny + 1));
    b.in = malloc(sizeof(double) * (size_t)nmax);
    b.out = malloc(sizeof(double) * (size_t)nmax);
    for (int64_t i = 0; i < b.mine * b.nx * b.ny; ++i) b.g[i] = cos(0.37 * (double)(i + b.first));
    for (int64_t i = 0; i < nmax; ++i) b.in[i] = sin(0.11 * (double)i);

    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    CHECK(plm_op_fredholm1(comm, PLM_FLOAT64, b.mine, b.nx, b.ny, b.nz, b.g,
                           b.mine * b.nx * b.ny * (int64_t)sizeof(double), 0, 1, &b.op));
    CHECK(plm_op_new_domain_array(b.op, PLM_MEMORY_HOST, &b.x));
    CHECK(plm_op_new_range_array(b.op, PLM_MEMORY_HOST, &b.y));
    bench_fill(b.x, 1.0);
    bench_fill(b.y, 2.0);
    const double flops = 2.0 * (double)b.nx * (double)b.ny * (double)b.nz * (double)b.nsl / g_size; /* per rank */
    if (g_rank == 0) {
        printf("bench_fredholm: %d ranks, float64, %lld slices of %lld x %lld, nz = %lld, median of %d reps\n\n",
               g_size, (long long)b.nsl, (long long)b.nx, (long long)b.ny, (long long)b.nz, reps);
        printf("| ranks | apply | plm (ms) | GFLOP/s per rank | dgemm (ms) | plm / dgemm | dgemm + allgatherv (ms) | "
               "plm / (dgemm + allgatherv) |\n");
        printf("|---:|---|---:|---:|---:|---:|---:|---:|\n");
    }
    for (int adj = 0; adj < 2; ++adj) {
        b.adjoint = adj;
        int64_t s0 = 0;
        const int64_t per = adj ? b.ny * b.nz : b.nx * b.nz;
        for (int r = 0; r < g_size; ++r) {
            const int64_t n = b.nsl / g_size + (r < b.nsl % g_size);
            b.counts[r] = (int)(n * per);
            b.displs[r] = (int)(s0 * per);
            s0 += n;
        }
        double t = 0, t_gemm = 0, t_op2 = 0, t_floor = 0;
        bench_time_pair(f_apply, &b, f_gemms, &b, reps, &t, &t_gemm);
        bench_time_pair(f_apply, &b, f_gemms_gather, &b, reps, &t_op2, &t_floor);
        if (g_rank == 0)
            printf("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", g_size, adj ? "adjoint" : "forward",
                   t * 1e3, flops / t * 1e-9, t_gemm * 1e3, t / t_gemm, t_floor * 1e3, t_op2 / t_floor);
    }
    CHECK(plm_array_destroy(&b.x));
    CHECK(plm_array_destroy(&b.y));
    CHECK(plm_op_destroy(&b.op));
    plm_comm_destroy(&comm);
    free(b.g), free(b.in), free(b.out), free(b.counts), free(b.displs);
    MPI_Finalize();
    return 0;
}
