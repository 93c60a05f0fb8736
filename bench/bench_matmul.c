/* bench_matmul: MatrixMult (SUMMA and block kinds) forward and adjoint, float64, next to a
 * local cblas_dgemm doing the same product with the same flops per rank (forward: Y = A X,
 * n x k x ceil(m / P); adjoint: X = A^T Y, the same sizes with A transposed) and, in builds that
 * found ScaLAPACK, pdgemm on its best grid and block size, all measured in the same run.
 *
 *   mpiexec -n 2 build/bench/bench_matmul [-n N | -s n,k,m] [-r REPS] [-g GRID_ROWS] [-a]
 *
 * -s takes any shape, e.g. -s 4096,256,64 (a thin X and Y); -g forces the grid's rows (default
 * 0: the library chooses for the shape); -a also runs every other grid of the rank count.
 *
 * Times: median over REPS (default 7) of the max over ranks, after one warm-up call; the
 * operator, the dgemm and pdgemm are timed in interleaved rounds, so all see the same machine
 * load. pdgemm's best configuration (process grid x block size, forward and adjoint apart) is
 * picked first from a shorter pass over every grid of the rank count and block sizes 64, 256 and
 * one block per process; its data is laid out before timing (the product alone is timed, as
 * the operator's). GFLOP/s per rank: 2 n k m / P / time. A benchmark, not a test: nothing here
 * asserts timings. */
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
    double *a, *b, *c; /* the local dgemm's operands: A (n x k), B (k x mloc), C (n x mloc) */
    plm_op_t op;
    plm_array_t x, y;
} bench_t;

static void f_dgemm(void *p)
{
    bench_t *b = p;
    const int n = (int)b->n, k = (int)b->k, m = (int)b->mloc;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, m, k, 1.0, b->a, k, b->b, m, 0.0, b->c, m);
}
/* the adjoint's shape: B (k x mloc) = A^T C */
static void f_dgemm_adj(void *p)
{
    bench_t *b = p;
    const int n = (int)b->n, k = (int)b->k, m = (int)b->mloc;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, m, n, 1.0, b->a, k, b->c, m, 0.0, b->b, m);
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

/* ---- ScaLAPACK's pdgemm (builds that found it) ------------------------------------------ */
#ifdef PLM_BENCH_SCALAPACK
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
               const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
             const double *a, const int *ia, const int *ja, const int *desca, const double *b, const int *ib,
             const int *jb, const int *descb, const double *beta, double *c, const int *ic, const int *jc,
             const int *descc);

typedef struct {
    int ctxt, pr, pc, nb, adjoint;
    int n, k, m;
    int da[9], dx[9], dy[9];
    double *a, *x, *y;
} pd_t;

static double *pd_local(int *desc, int rows, int cols, const pd_t *p, int myrow, int mycol, double fill)
{
    const int zero = 0;
    const int lr = numroc_(&rows, &p->nb, &myrow, &zero, &p->pr), lc = numroc_(&cols, &p->nb, &mycol, &zero, &p->pc);
    const int lld = lr > 1 ? lr : 1;
    int info = 0;
    descinit_(desc, &rows, &cols, &p->nb, &p->nb, &zero, &zero, &p->ctxt, &lld, &info);
    if (info != 0) {
        fprintf(stderr, "descinit failed: %d\n", info);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *d = malloc(sizeof(double) * (size_t)((int64_t)lld * (lc > 0 ? lc : 1)));
    for (int64_t i = 0; i < (int64_t)lld * lc; ++i) d[i] = sin(fill + 0.001 * (double)i);
    return d;
}

/* A (n x k), X (k x m), Y (n x m), 2-D block-cyclic with nb x nb blocks on a pr x pc grid. */
static pd_t *pd_make(int ctxt, int pr, int pc, int nb, int n, int k, int m)
{
    pd_t *p = calloc(1, sizeof *p);
    p->ctxt = ctxt;
    p->pr = pr;
    p->pc = pc;
    p->nb = nb;
    p->n = n;
    p->k = k;
    p->m = m;
    int npr, npc, myrow, mycol;
    Cblacs_gridinfo(ctxt, &npr, &npc, &myrow, &mycol);
    p->a = pd_local(p->da, n, k, p, myrow, mycol, 0.3);
    p->x = pd_local(p->dx, k, m, p, myrow, mycol, 1.0);
    p->y = pd_local(p->dy, n, m, p, myrow, mycol, 2.0);
    return p;
}

static void pd_free(pd_t *p)
{
    if (!p) return;
    free(p->a);
    free(p->x);
    free(p->y);
    free(p);
}

/* forward Y = A X, adjoint X = A^T Y */
static void f_pdgemm(void *q)
{
    pd_t *p = q;
    const int one = 1;
    const double alpha = 1, beta = 0;
    if (!p->adjoint)
        pdgemm_("N", "N", &p->n, &p->m, &p->k, &alpha, p->a, &one, &one, p->da, p->x, &one, &one, p->dx, &beta, p->y,
                &one, &one, p->dy);
    else
        pdgemm_("T", "N", &p->k, &p->m, &p->n, &alpha, p->a, &one, &one, p->da, p->y, &one, &one, p->dy, &beta, p->x,
                &one, &one, p->dx);
}

typedef struct {
    int ctxt[16], pr[16], ngrids;
    pd_t *best[2]; /* forward, adjoint */
} scalapack_t;

static void scalapack_setup(scalapack_t *s, int size, int64_t n, int64_t k, int64_t m, int reps)
{
    memset(s, 0, sizeof *s);
    for (int pr = 1; pr <= size && s->ngrids < 16; ++pr) {
        if (size % pr) continue;
        Cblacs_get(-1, 0, &s->ctxt[s->ngrids]);
        Cblacs_gridinit(&s->ctxt[s->ngrids], "Row", pr, size / pr);
        s->pr[s->ngrids++] = pr;
    }
    double best[2] = {INFINITY, INFINITY};
    for (int g = 0; g < s->ngrids; ++g) {
        const int pr = s->pr[g], pc = size / pr;
        int64_t whole = (n + pr - 1) / pr;
        if ((k + pc - 1) / pc > whole) whole = (k + pc - 1) / pc;
        if ((k + pr - 1) / pr > whole) whole = (k + pr - 1) / pr;
        if ((m + pc - 1) / pc > whole) whole = (m + pc - 1) / pc;
        const int nbs[3] = {64, 256, (int)whole};
        for (int i = 0; i < 3; ++i) {
            if (i == 2 && (whole == 64 || whole == 256)) continue;
            for (int adj = 0; adj < 2; ++adj) {
                pd_t *p = pd_make(s->ctxt[g], pr, pc, nbs[i], (int)n, (int)k, (int)m);
                p->adjoint = adj;
                bench_fn f[1] = {f_pdgemm};
                void *c[1] = {p};
                double t = 0;
                bench_time_rounds(1, f, c, reps > 3 ? 3 : reps, &t);
                if (t < best[adj]) {
                    best[adj] = t;
                    pd_free(s->best[adj]);
                    s->best[adj] = p;
                } else {
                    pd_free(p);
                }
            }
        }
    }
}

static void scalapack_done(scalapack_t *s)
{
    pd_free(s->best[0]);
    pd_free(s->best[1]);
    for (int g = 0; g < s->ngrids; ++g) Cblacs_gridexit(s->ctxt[g]);
}
#endif

static void run(plm_comm_t comm, bench_t *b, plm_matmul_kind_t kind, int grid_rows, int size, int reps, void *pd)
{
    const int64_t n = b->n, k = b->k, m = b->m;
    int grid[4];
    int64_t ab[4];
    CHECK(plm_matmul_blocks(kind, size, g_rank, grid_rows, n, k, m, grid, ab, NULL, NULL));
    const int64_t na = (ab[1] - ab[0]) * (ab[3] - ab[2]);
    double *a = malloc(sizeof(double) * (size_t)(na + 1));
    for (int64_t i = 0; i < na; ++i) a[i] = cos(0.37 * (double)i);
    CHECK(plm_op_matrix_mult(comm, kind, grid_rows, PLM_FLOAT64, n, k, m, a, na * (int64_t)sizeof(double), &b->op));
    free(a);
    CHECK(plm_op_new_domain_array(b->op, PLM_MEMORY_HOST, &b->x));
    CHECK(plm_op_new_range_array(b->op, PLM_MEMORY_HOST, &b->y));
    bench_fill(b->x, 1.0);
    bench_fill(b->y, 2.0);
    const double flops = 2.0 * (double)n * (double)k * (double)m / size; /* per rank */
    const char *name = kind == PLM_MATMUL_SUMMA ? "summa" : "block";
    for (int adj = 0; adj < 2; ++adj) {
        bench_fn f[3] = {adj ? f_apply_adj : f_apply, adj ? f_dgemm_adj : f_dgemm, NULL};
        void *c[3] = {b, b, NULL};
        int nf = 2;
        double t[3] = {0, 0, 0};
#ifdef PLM_BENCH_SCALAPACK
        pd_t *p = ((pd_t **)pd)[adj];
        f[2] = f_pdgemm;
        c[2] = p;
        nf = 3;
#else
        (void)pd;
#endif
        bench_time_rounds(nf, f, c, reps, t);
        if (g_rank != 0) continue;
        printf("| %d | %d x %d%s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.3f |", size, grid[0], grid[1],
               grid_rows == 0 ? " (chosen)" : "", name, adj ? "adjoint" : "forward", t[0] * 1e3, flops / t[0] * 1e-9,
               t[1] * 1e3, flops / t[1] * 1e-9, t[0] / t[1]);
#ifdef PLM_BENCH_SCALAPACK
        printf(" %.2f | %d x %d, nb %d | %.3f |", t[2] * 1e3, p->pr, p->pc, p->nb, t[0] / t[2]);
#endif
        printf("\n");
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
    int reps = 7, grid_rows = 0, all = 0;
    int64_t n = 1024, k = 1024, m = 1024;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-g") && i + 1 < argc) grid_rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-a")) all = 1;
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
    for (int64_t i = 0; i < n * b.mloc; ++i) b.c[i] = cos(0.13 * (double)i);

    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    void *pd = NULL;
#ifdef PLM_BENCH_SCALAPACK
    scalapack_t sl;
    scalapack_setup(&sl, size, n, k, m, reps);
    pd = sl.best;
#endif
    if (g_rank == 0) {
        printf("bench_matmul: %d ranks, float64, n = %lld, k = %lld, m = %lld, median of %d rounds\n\n", size,
               (long long)n, (long long)k, (long long)m, reps);
        printf("| ranks | grid | kind | apply | plm (ms) | plm GFLOP/s per rank | dgemm (ms) | dgemm GFLOP/s | "
               "plm / dgemm |");
#ifdef PLM_BENCH_SCALAPACK
        printf(" pdgemm best (ms) | pdgemm grid, block | plm / pdgemm |");
#endif
        printf("\n|---:|---|---|---|---:|---:|---:|---:|---:|");
#ifdef PLM_BENCH_SCALAPACK
        printf("---:|---|---:|");
#endif
        printf("\n");
    }
    for (int kind = 0; kind < 2; ++kind) {
        const plm_matmul_kind_t kd = kind == 0 ? PLM_MATMUL_SUMMA : PLM_MATMUL_BLOCK;
        run(comm, &b, kd, grid_rows, size, reps, pd);
        if (!all) continue;
        int chosen[4];
        CHECK(plm_matmul_blocks(kd, size, g_rank, grid_rows, n, k, m, chosen, NULL, NULL, NULL));
        for (int r = 1; r <= size; ++r)
            if (size % r == 0 && r != chosen[0]) run(comm, &b, kd, r, size, reps, pd);
    }
#ifdef PLM_BENCH_SCALAPACK
    scalapack_done(&sl);
#endif
    plm_comm_destroy(&comm);
    free(b.a);
    free(b.b);
    free(b.c);
    MPI_Finalize();
    return 0;
}
