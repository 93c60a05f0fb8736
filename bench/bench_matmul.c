/* bench_matmul: MatrixMult (SUMMA and block kinds) forward and adjoint, float64, next to a
 * local cblas_dgemm doing the same flops per rank (n x k x ceil(m / P)), measured in the
 * same run.
 *
 *   mpiexec -n 2 build/bench/bench_matmul [-n N | -s n,k,m] [-r REPS]   (default n = k = m = 1024)
 *
 * -s takes any shape, e.g. -s 4096,256,64 (a thin X and Y).
 *
 * Times: median over REPS (default 7) of the max over ranks, after one warm-up call; the
 * operator and the dgemm are timed alternately, so both see the same machine load. GFLOP/s
 * per rank: 2 n k m / P / time. A benchmark, not a test: nothing here asserts timings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0;

typedef struct {
    int64_t n, k, m, mloc;
    double *a, *b, *c; /* the local dgemm's operands */
    plm_op_t op;
    plm_array_t x, y;
} bench_t;

static void f_dgemm(void *p)
{
    bench_t *b = p;
    const int n = (int)b->n, k = (int)b->k, m = (int)b->mloc;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, m, k, 1.0, b->a, k, b->b, m, 0.0, b->c, m);
}
static void f_apply(void *p)
{
    bench_t *b = p;
    CHECK(plm_op_apply(b->op, b->x, b->y));
}
static void f_apply_adj(void *p)
{
    bench_t *b = p;
    CHECK(plm_op_apply_adjoint(b->op, b->y, b->x));
}

static void run(plm_comm_t comm, bench_t *b, plm_matmul_kind_t kind, int size, int reps)
{
    const int64_t n = b->n, k = b->k, m = b->m;
    int grid[4];
    int64_t ab[4];
    CHECK(plm_matmul_blocks(kind, size, g_rank, 0, n, k, m, grid, ab, NULL, NULL));
    const int64_t na = (ab[1] - ab[0]) * (ab[3] - ab[2]);
    double *a = malloc(sizeof(double) * (size_t)(na + 1));
    for (int64_t i = 0; i < na; ++i) a[i] = cos(0.37 * (double)i);
    CHECK(plm_op_matrix_mult(comm, kind, 0, PLM_FLOAT64, n, k, m, a, na * (int64_t)sizeof(double), &b->op));
    free(a);
    CHECK(plm_op_new_domain_array(b->op, PLM_MEMORY_HOST, &b->x));
    CHECK(plm_op_new_range_array(b->op, PLM_MEMORY_HOST, &b->y));
    bench_fill(b->x, 1.0);
    bench_fill(b->y, 2.0);
    const double flops = 2.0 * (double)n * (double)k * (double)m / size; /* per rank */
    const char *name = kind == PLM_MATMUL_SUMMA ? "summa" : "block";
    for (int adj = 0; adj < 2; ++adj) {
        double t = 0, t_gemm = 0;
        bench_time_pair(adj ? f_apply_adj : f_apply, b, f_dgemm, b, reps, &t, &t_gemm);
        if (g_rank == 0)
            printf("| %d | %d x %d | %s | %s | %.1f | %.2f | %.1f | %.2f | %.2f |\n", size, grid[0], grid[1], name,
                   adj ? "adjoint" : "forward", t * 1e3, flops / t * 1e-9, t_gemm * 1e3, flops / t_gemm * 1e-9,
                   t / t_gemm);
    }
    CHECK(plm_array_destroy(&b->x));
    CHECK(plm_array_destroy(&b->y));
    CHECK(plm_op_destroy(&b->op));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = 7;
    int64_t n = 1024, k = 1024, m = 1024;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = k = m = (int64_t)atof(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            long long a = 0, c = 0, d = 0;
            if (sscanf(argv[++i], "%lld,%lld,%lld", &a, &c, &d) == 3) n = a, k = c, m = d;
        }
    }
    bench_t b = {0};
    b.n = n;
    b.k = k;
    b.m = m;
    b.mloc = (m + size - 1) / size;
    b.a = malloc(sizeof(double) * (size_t)(n * k));
    b.b = malloc(sizeof(double) * (size_t)(k * b.mloc));
    b.c = malloc(sizeof(double) * (size_t)(n * b.mloc));
    for (int64_t i = 0; i < n * k; ++i) b.a[i] = cos(0.37 * (double)i);
    for (int64_t i = 0; i < k * b.mloc; ++i) b.b[i] = sin(0.11 * (double)i);

    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    if (g_rank == 0) {
        printf("bench_matmul: %d ranks, float64, n = %lld, k = %lld, m = %lld, median of %d reps\n\n", size,
               (long long)n, (long long)k, (long long)m, reps);
        printf("| ranks | grid | kind | apply | plm (ms) | plm GFLOP/s per rank | dgemm (ms) | dgemm GFLOP/s | "
               "plm / dgemm |\n");
        printf("|---:|---|---|---|---:|---:|---:|---:|---:|\n");
    }
    run(comm, &b, PLM_MATMUL_SUMMA, size, reps);
    run(comm, &b, PLM_MATMUL_BLOCK, size, reps);
    plm_comm_destroy(&comm);
    free(b.a);
    free(b.b);
    free(b.c);
    MPI_Finalize();
    return 0;
}
