/* bench_ops: operator apply and CGLS iteration time next to floors measured in the same run.
 *
 * Operators: BlockDiag of one dense n x n float64 block per rank, and VStack of the same
 * blocks (its adjoint sums over the ranks). Floors: the local dgemv (CBLAS, N and T), a
 * STREAM-like triad and dot loop on the local vectors, and MPI_Allreduce of 8 doubles (what
 * one agreement carries) on a duplicate of the communicator. A CGLS iteration does two applies
 * (forward, adjoint), four vector updates of the triad's cost, three local dots and two
 * agreements, so its floor is gemv N + gemv T + 4 triad + 3 dot + 2 allreduce.
 *
 *   mpiexec -n 2 build/bench/bench_ops [-r REPS] [-n N]...
 *
 * Times: median over REPS of the max over ranks (one CGLS iteration: a 20-iteration solve / 20).
 * A benchmark, not a test: nothing here asserts timings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_util.h"

static int g_rank = 0;
static volatile double g_sink;

typedef void (*op_fn)(void *ctx);

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double time_op(op_fn f, void *ctx, int reps, MPI_Comm comm)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    f(ctx);
    f(ctx);
    for (int k = 0; k < reps; ++k) {
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        f(ctx);
        const double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &t[k], 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    const double med = t[reps / 2];
    free(t);
    return med;
}

typedef struct {
    int64_t n;
    double *a, *u, *v, *w;
    MPI_Comm raw;
    plm_op_t op;
    plm_array_t x, y;
    plm_solver_info_t info;
    int cgls_iters;
} bench_t;

static void f_gemv_n(void *c)
{
    bench_t *b = c;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)b->n, (int)b->n, 1.0, b->a, (int)b->n, b->u, 1, 0.0, b->v, 1);
}
static void f_gemv_t(void *c)
{
    bench_t *b = c;
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)b->n, (int)b->n, 1.0, b->a, (int)b->n, b->v, 1, 0.0, b->u, 1);
}
static void f_triad(void *c)
{
    bench_t *b = c;
    for (int64_t i = 0; i < b->n; ++i) b->w[i] = b->u[i] + 0.5 * b->v[i];
}
static void f_dot(void *c)
{
    bench_t *b = c;
    double s = 0;
    for (int64_t i = 0; i < b->n; ++i) s += b->u[i] * b->v[i];
    g_sink = s;
}
static void f_allreduce(void *c)
{
    bench_t *b = c;
    double in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    MPI_Allreduce(in, out, 8, MPI_DOUBLE, MPI_SUM, b->raw);
    g_sink = out[0];
}
static void f_apply(void *c)
{
    bench_t *b = c;
    CHECK(plm_op_apply(b->op, b->x, b->y));
}
static void f_apply_adj(void *c)
{
    bench_t *b = c;
    CHECK(plm_op_apply_adjoint(b->op, b->y, b->x));
}
static void f_cgls(void *c)
{
    bench_t *b = c;
    CHECK(plm_array_fill(b->x, 0, 0));
    CHECK(plm_solve_cgls(b->op, b->y, b->x, b->cgls_iters, 0.0, 0.0, b->info));
}

static void run(plm_comm_t comm, MPI_Comm raw, int64_t n, int vstack, int reps, int rank)
{
    bench_t b = {0};
    b.n = n;
    b.raw = raw;
    b.cgls_iters = 20;
    b.a = malloc(sizeof(double) * (size_t)(n * n));
    b.u = malloc(sizeof(double) * (size_t)n);
    b.v = malloc(sizeof(double) * (size_t)n);
    b.w = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n * n; ++i) b.a[i] = 0.01 * sin((double)i) + ((i % (n + 1)) == 0 ? 1.0 : 0.0);
    for (int64_t i = 0; i < n; ++i) b.u[i] = b.v[i] = b.w[i] = 1.0 / (double)(i + 1);
    plm_op_t block = NULL;
    CHECK(plm_op_dense(PLM_FLOAT64, n, n, b.a, n * n * (int64_t)sizeof(double), 0, 1, &block));
    if (vstack) CHECK(plm_op_vstack(comm, 1, (const plm_const_op_t *)&block, &b.op));
    else CHECK(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &b.op));
    plm_op_destroy(&block);
    plm_layout_t dom = NULL, ran = NULL;
    CHECK(plm_op_domain(b.op, &dom));
    CHECK(plm_op_range(b.op, &ran));
    CHECK(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &b.x));
    CHECK(plm_array_create_from_layout(ran, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &b.y));
    CHECK(plm_array_fill(b.x, 1, 0));
    CHECK(plm_op_apply(b.op, b.x, b.y));
    CHECK(plm_solver_info_create(&b.info));

    const double gn = time_op(f_gemv_n, &b, reps, raw), gt = time_op(f_gemv_t, &b, reps, raw);
    const double tr = time_op(f_triad, &b, reps, raw), dt = time_op(f_dot, &b, reps, raw);
    const double ar = time_op(f_allreduce, &b, reps, raw);
    const double ap = time_op(f_apply, &b, reps, raw), aa = time_op(f_apply_adj, &b, reps, raw);
    const double it = time_op(f_cgls, &b, reps > 5 ? reps / 5 : 1, raw) / b.cgls_iters;
    const double floor_apply = gn, floor_adj = gt + (vstack ? ar : 0);
    const double floor_it = gn + gt + 4 * tr + 3 * dt + 2 * ar + (vstack ? ar : 0);
    const char *name = vstack ? "VStack" : "BlockDiag";
    if (rank == 0) {
        printf("| %s | %lld | apply | %.2f | gemv N | %.2f | %.2f |\n", name, (long long)n, ap * 1e6, floor_apply * 1e6,
               ap / floor_apply);
        printf("| %s | %lld | apply adjoint | %.2f | gemv T%s | %.2f | %.2f |\n", name, (long long)n, aa * 1e6,
               vstack ? " + allreduce" : "", floor_adj * 1e6, aa / floor_adj);
        printf("| %s | %lld | CGLS iteration | %.2f | gemv N + T, 4 triad, 3 dot, %d allreduce | %.2f | %.2f |\n", name,
               (long long)n, it * 1e6, vstack ? 3 : 2, floor_it * 1e6, it / floor_it);
    }
    plm_solver_info_destroy(&b.info);
    plm_array_destroy(&b.x);
    plm_array_destroy(&b.y);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&b.op);
    free(b.a);
    free(b.u);
    free(b.v);
    free(b.w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = 51;
    int64_t sizes[8];
    int ns = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc && ns < 8) sizes[ns++] = (int64_t)atof(argv[++i]);
    }
    if (ns == 0) {
        sizes[ns++] = 100;
        sizes[ns++] = 1000;
    }
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);
    if (g_rank == 0) {
        printf("bench_ops: %d ranks, float64, one n x n dense block per rank, median of %d reps (us)\n\n", size, reps);
        printf("| operator | n | operation | plm (us) | floor | floor (us) | plm / floor |\n");
        printf("|---|---:|---|---:|---|---:|---:|\n");
    }
    for (int i = 0; i < ns; ++i)
        for (int vs = 0; vs < 2; ++vs) run(comm, raw, sizes[i], vs, reps, g_rank);
    MPI_Comm_free(&raw);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
