/* bench_scaling: one communication pattern of the library at one rank count, for the scaling
 * study (scripts/run-scaling, docs/scaling.md). Runs under any MPI; the study runs it under
 * SimGrid's SMPI (scripts/smpi-run) on simulated clusters of up to 1024 ranks.
 *
 *   bench_scaling PATTERN (--weak | --strong) [-n N] [-i ITERS] [--json]
 *
 * PATTERN, each on float64 data unless said (N: unknowns per rank with --weak, in all with
 * --strong; the default N is 1e5 per rank / 1e6 in all):
 *   cgls          one CGLS iteration of a 3-D post-stack-like problem: the model (nx, ny, nt),
 *                 split along x, through Op = VStack[W Dt; eps L], W the block-diagonal of one
 *                 dense nt x nt wavelet block per trace (ny traces per x row), Dt the first
 *                 derivative along t, L the 3-D Laplacian (halo along x); the time of
 *                 (ITERS + 2) iterations minus that of 2, per iteration
 *   deriv         first derivative along axis 0 (centered, order 5: two halo rows each side)
 *                 of a 3-D array split along axis 0, forward apply
 *   lapl          3-D Laplacian of the same array (one halo row each side), forward apply
 *   fft           plm_op_fftnd over the three axes of a complex128 (n0, n1, n2) array: one
 *                 all-to-all per apply (output split along axis 1)
 *   fft_axis0     plm_op_fftnd_ex with PLM_FFT_OUTPUT_AXIS0: two all-to-alls per apply
 *   summa_square  SUMMA MatrixMult, A n x n, X n x n: forward apply
 *   summa_thin    SUMMA MatrixMult, A n x n, X n x 8 (a block of vectors): forward apply
 *   dot           plm_array_dot of two 1-D arrays
 *   norm          plm_array_norm (ord 2) of a 1-D array
 *   agreement     plm_array_dot of two arrays of one element per rank: the agreement alone
 *
 * Prints (rank 0) one line: a JSON object with the pattern, sizes, the time of one operation
 * (the slowest rank's mean over ITERS, after a warm-up), the MPI calls of one operation on rank
 * 0 and their mean sizes (mpi_count.h), the library allocations of one operation on rank 0
 * (plm::alloc, counted through operator new too: fault_hooks.cpp), and what the model of
 * scripts/run-scaling needs (message sizes, shapes). Under SMPI the times are simulated.
 * A benchmark, not a test: it asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_util.h"
#include "mpi_count.h"

/* Library allocations so far on this thread (tests/fault/fault_hooks.cpp). */
long long plm_test_allocations(void);
#ifdef PLM_SMPI
/* Sampled SMPI runs: rank 0 saves the kernel samples for the next runs (src/core/sim.hpp). */
void plm_smpi_save_samples(void);
#endif

static int g_rank = 0, g_size = 1;
/* Sampled SMPI run (scripts/smpi-run --sample): ranks other than 0 skip the kernels, so their
 * data need no filling (the loops below would only cost wall time). */
static int g_skip_data = 0;

/* x's local block set to smooth non-zero data (a plain fill where the data do not matter). */
static void fill_data(plm_array_t x, double s)
{
    if (g_skip_data) CHECK(plm_array_fill(x, s, 0));
    else bench_fill(x, s);
}

typedef struct {
    const char *pattern;
    int weak;
    double n;  /* unknowns: per rank (weak) or in all (strong) */
    int iters;
} args_t;

/* What one run measures. */
typedef struct {
    double time;           /* seconds per operation, slowest rank */
    mpic_counts_t calls;   /* rank 0, per operation (divided by `per`) */
    double per;
    double allocs;         /* rank 0, per operation */
    char shape[160];       /* the problem, as JSON fields */
    char model[200];       /* what the alpha-beta model needs, as JSON fields */
    double pss, rss;       /* process memory (MiB) after the timed loop, objects alive */
} result_t;

static int64_t rows_of(int64_t n, int rank, int size) { return n / size + (rank < n % size); }

/* The memory of the whole process (every simulated rank under SMPI) now, in MiB, from
 * /proc/self/smaps_rollup: Pss (each page shared by k mappings counted 1/k: SMPI's shared
 * allocations map one block many times) and Rss; -1 where unreadable. */
static void process_memory(double *pss, double *rss)
{
    *pss = *rss = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Pss: %lf", &kb) == 1) *pss = kb / 1024;
        else if (sscanf(line, "Rss: %lf", &kb) == 1) *rss = kb / 1024;
    }
    fclose(f);
}

/* ---- timing and counting around one kind of operation -------------------------------------- */

typedef void (*op_fn)(void *ctx);

static void measure(op_fn f, void *ctx, int iters, result_t *r)
{
    f(ctx); /* warm-up: Works, plans' tags, pools, and samples of the kernels (sampled runs) */
    f(ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    mpic_counts_t c0, c1;
    mpic_snapshot(&c0);
    const long long a0 = plm_test_allocations();
    const double t0 = MPI_Wtime();
    for (int k = 0; k < iters; ++k) f(ctx);
    const double mine = (MPI_Wtime() - t0) / iters;
    const long long a1 = plm_test_allocations();
    mpic_snapshot(&c1);
    mpic_diff(&c1, &c0, &r->calls);
    r->per = iters;
    r->allocs = (double)(a1 - a0) / iters;
    PMPI_Allreduce(&mine, &r->time, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Barrier(MPI_COMM_WORLD); /* every rank's objects are alive: the process's memory now */
    if (g_rank == 0) process_memory(&r->pss, &r->rss);
}

/* ---- cgls ------------------------------------------------------------------------------------ */

typedef struct {
    plm_op_t op;
    plm_stacked_t y, x;
    plm_array_t m; /* x's member */
    plm_solver_info_t info;
    int64_t niter;
} cgls_t;

static void cgls_run(void *p)
{
    cgls_t *c = p;
    CHECK(plm_array_fill(c->m, 0, 0));
    CHECK(plm_solve_cgls_stacked(c->op, c->y, c->x, c->niter, 0.0, 0.0, c->info));
}

/* The time and calls of one iteration: solves of 2 and 2 + iters iterations, subtracted. */
static void bench_cgls(const args_t *a, result_t *r, plm_comm_t comm)
{
    /* per rank: nt samples a trace, ny traces an x row, nxl rows: N = nxl * ny * nt */
    const int64_t nt = a->n >= 1e6 ? 200 : 100, ny = a->n >= 1e6 ? 50 : 10;
    const int64_t plane = ny * nt;
    const int64_t nx = a->weak ? (int64_t)llround(a->n / (double)plane) * g_size : (int64_t)llround(a->n / (double)plane);
    const int64_t dims[3] = {nx, ny, nt};
    const int64_t nxl = rows_of(nx, g_rank, g_size), ntr = nxl * ny;

    double *w = malloc(sizeof(double) * (size_t)(nt * nt));
    for (int64_t i = 0; i < nt; i++) /* a Ricker wavelet of 21 samples as a banded dense block */
        for (int64_t j = 0; j < nt; j++) {
            const double s = 3.14159265358979 * 0.08 * (double)(i - j);
            w[i * nt + j] = llabs(i - j) <= 10 ? (1 - 2 * s * s) * exp(-s * s) : 0.0;
        }
    plm_op_t wop = NULL, W = NULL, Dt = NULL, G = NULL, L = NULL, epsL = NULL;
    CHECK(plm_op_dense(PLM_FLOAT64, nt, nt, w, (int64_t)sizeof(double) * nt * nt, 0, 0, &wop));
    free(w);
    plm_const_op_t *tr = malloc(sizeof *tr * (size_t)(ntr + 1));
    for (int64_t i = 0; i < ntr; i++) tr[i] = wop;
    CHECK(plm_op_blockdiag(comm, (int)ntr, tr, 0, NULL, &W));
    free(tr);
    const int axes[3] = {0, 1, 2};
    CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 3, dims, -1, 2, 1.0, PLM_DERIV_CENTERED, 3, 1, &Dt));
    CHECK(plm_op_product(W, Dt, &G));
    CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 3, dims, -1, 3, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &L));
    CHECK(plm_op_scale(L, 0.5, 0, &epsL));
    const plm_const_op_t parts[2] = {G, epsL};
    cgls_t c = {0};
    CHECK(plm_op_stacked_vstack(2, parts, &c.op));

    plm_array_t d = NULL, z = NULL, m = NULL;
    CHECK(plm_op_new_range_array(G, PLM_MEMORY_HOST, &d));
    CHECK(plm_op_new_range_array(epsL, PLM_MEMORY_HOST, &z));
    CHECK(plm_op_new_domain_array(G, PLM_MEMORY_HOST, &m));
    fill_data(d, 0.3);
    CHECK(plm_array_fill(z, 0, 0));
    plm_array_t ys[2] = {d, z}, xs[1] = {m};
    CHECK(plm_stacked_create(2, ys, &c.y));
    CHECK(plm_stacked_create(1, xs, &c.x));
    c.m = m;
    CHECK(plm_solver_info_create(&c.info));

    /* solves of 2 and 2 + iters iterations (after a warm-up solve of 2 + iters, inside the
     * first measure()): the difference is iters iterations, without the setup of a solve */
    result_t r2 = {0}, rk = {0};
    c.niter = 2 + a->iters;
    cgls_run(&c);
    c.niter = 2;
    measure(cgls_run, &c, 1, &r2);
    c.niter = 2 + a->iters;
    measure(cgls_run, &c, 1, &rk);
    int64_t done = 0;
    CHECK(plm_solver_info_iterations(c.info, &done));
    r->time = (rk.time - r2.time) / a->iters;
    mpic_diff(&rk.calls, &r2.calls, &r->calls);
    r->per = a->iters;
    r->allocs = (rk.allocs - r2.allocs) / a->iters;
    r->pss = rk.pss;
    r->rss = rk.rss;
    snprintf(r->shape, sizeof r->shape, "\"dims\": [%lld, %lld, %lld], \"iterations_done\": %lld", (long long)nx,
             (long long)ny, (long long)nt, (long long)done);
    /* per iteration: 2 halo exchanges of one (ny, nt) plane each way (the Laplacian, forward
     * and adjoint) and 2 reductions of the solver (16 words of 16 bytes) */
    snprintf(r->model, sizeof r->model, "\"halo_bytes\": %lld, \"halos\": 2, \"allreduce_bytes\": 256, \"allreduces\": 2",
             (long long)(plane * 8));

    plm_solver_info_destroy(&c.info);
    plm_stacked_destroy(&c.y);
    plm_stacked_destroy(&c.x);
    plm_array_t arr[3] = {d, z, m};
    for (int i = 0; i < 3; i++) plm_array_destroy(&arr[i]);
    plm_op_t ops[7] = {wop, W, Dt, G, L, epsL, c.op};
    for (int i = 0; i < 7; i++) plm_op_destroy(&ops[i]);
}

/* ---- single applies -------------------------------------------------------------------------- */

typedef struct {
    plm_op_t op;
    plm_array_t x, y;
} apply_t;

static void apply_run(void *p)
{
    apply_t *a = p;
    CHECK(plm_op_apply(a->op, a->x, a->y));
}

static void time_apply(plm_op_t op, int iters, result_t *r, int complex_data)
{
    apply_t a = {op, NULL, NULL};
    CHECK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &a.x));
    CHECK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &a.y));
    if (complex_data) CHECK(plm_array_fill(a.x, 0.5, -0.25));
    else fill_data(a.x, 0.1);
    measure(apply_run, &a, iters, r);
    plm_array_destroy(&a.x);
    plm_array_destroy(&a.y);
}

/* A 3-D array (nx, ny, nz) split along axis 0: per rank N = nxl * plane. */
static void stencil_dims(const args_t *a, int64_t dims[3])
{
    const int64_t ny = a->n >= 1e6 ? 100 : 40, nz = a->n >= 1e6 ? 100 : 25;
    const double plane = (double)(ny * nz);
    dims[0] = a->weak ? (int64_t)llround(a->n / plane) * g_size : (int64_t)llround(a->n / plane);
    dims[1] = ny;
    dims[2] = nz;
}

static void bench_stencil(const args_t *a, result_t *r, plm_comm_t comm, int laplacian)
{
    int64_t dims[3];
    stencil_dims(a, dims);
    plm_op_t op = NULL;
    const int axes[3] = {0, 1, 2};
    if (laplacian)
        CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 3, dims, -1, 3, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &op));
    else
        CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 3, dims, -1, 0, 1.0, PLM_DERIV_CENTERED, 5, 1, &op));
    time_apply(op, a->iters, r, 0);
    snprintf(r->shape, sizeof r->shape, "\"dims\": [%lld, %lld, %lld]", (long long)dims[0], (long long)dims[1],
             (long long)dims[2]);
    snprintf(r->model, sizeof r->model, "\"halo_bytes\": %lld, \"halos\": 1",
             (long long)(dims[1] * dims[2] * 8 * (laplacian ? 1 : 2)));
    plm_op_destroy(&op);
}

/* (n0, n1, n2) complex128: weak: n0 = P rows of (1024, n2), n2 = N / 1024 (the output, split
 * along axis 1, has 1024 / P columns a rank up to 1024 ranks); strong: (n0, 1024, n2) with
 * n0 * n2 = N / 1024, n0 = 256. */
static void bench_fft(const args_t *a, result_t *r, plm_comm_t comm, int axis0)
{
    const int64_t n1 = 1024;
    int64_t dims[3];
    if (a->weak) {
        dims[0] = g_size;
        dims[2] = (int64_t)llround(a->n / (double)n1);
    } else {
        dims[0] = 256;
        dims[2] = (int64_t)llround(a->n / (double)(n1 * 256));
    }
    dims[1] = n1;
    const int axes[3] = {0, 1, 2};
    plm_op_t op = NULL;
    CHECK(plm_op_fftnd_ex(comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                          axis0 ? PLM_FFT_OUTPUT_AXIS0 : PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &op));
    time_apply(op, a->iters, r, 1);
    snprintf(r->shape, sizeof r->shape, "\"dims\": [%lld, %lld, %lld]", (long long)dims[0], (long long)dims[1],
             (long long)dims[2]);
    /* each all-to-all moves this rank's block (its share of the array, 16 bytes an element) */
    const double total = (double)dims[0] * (double)dims[1] * (double)dims[2];
    snprintf(r->model, sizeof r->model, "\"alltoall_bytes\": %.0f, \"alltoalls\": %d", 16.0 * total / g_size,
             axis0 ? 2 : 1);
    plm_op_destroy(&op);
}

/* SUMMA, A n x n on the library's grid (rows: the largest divisor of P not above sqrt(P)):
 * weak: n = b sqrt(P) with b = sqrt(N) (one b x b block of A a rank); strong: n = sqrt(N). */
static void bench_summa(const args_t *a, result_t *r, plm_comm_t comm, int thin)
{
    const double b = sqrt(a->n);
    const int64_t n = a->weak ? (int64_t)llround(b * sqrt((double)g_size)) : (int64_t)llround(b);
    const int64_t m = thin ? 8 : n;
    int grid[4];
    int64_t ab[4];
    CHECK(plm_matmul_blocks(PLM_MATMUL_SUMMA, g_size, g_rank, 0, n, n, m, grid, ab, NULL, NULL));
    const int64_t ar = ab[1] - ab[0], ac = ab[3] - ab[2];
    double *blk = calloc((size_t)(ar * ac + 1), sizeof(double));
    for (int64_t i = 0; i < ar * ac && !g_skip_data; i++) blk[i] = sin(0.001 * (double)i);
    plm_op_t op = NULL;
    CHECK(plm_op_matrix_mult(comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, n, n, m, blk,
                             (int64_t)sizeof(double) * ar * ac, &op));
    free(blk);
    time_apply(op, a->iters, r, 0);
    snprintf(r->shape, sizeof r->shape, "\"mat_n\": %lld, \"mat_k\": %lld, \"mat_m\": %lld, \"grid\": [%d, %d]", (long long)n,
             (long long)n, (long long)m, grid[0], grid[1]);
    snprintf(r->model, sizeof r->model, "\"grid_rows\": %d, \"grid_cols\": %d", grid[0], grid[1]);
    plm_op_destroy(&op);
}

/* ---- reductions ------------------------------------------------------------------------------- */

typedef struct {
    plm_array_t x, y;
    int norm;
    double out;
} red_t;

static void red_run(void *p)
{
    red_t *d = p;
    if (d->norm) CHECK(plm_array_norm(d->x, 2.0, &d->out));
    else CHECK(plm_array_dot(d->x, d->y, 0, &d->out, NULL));
}

static void bench_reduction(const args_t *a, result_t *r, plm_comm_t comm, int norm, int one)
{
    const int64_t n = one ? g_size : (a->weak ? (int64_t)llround(a->n) * g_size : (int64_t)llround(a->n));
    red_t d = {NULL, NULL, norm, 0};
    CHECK(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &d.x));
    CHECK(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &d.y));
    fill_data(d.x, 0.2);
    fill_data(d.y, 0.7);
    measure(red_run, &d, a->iters, r);
    snprintf(r->shape, sizeof r->shape, "\"n_global\": %lld", (long long)n);
    snprintf(r->model, sizeof r->model, "\"allreduce_bytes\": 256, \"allreduces\": 1");
    plm_array_destroy(&d.x);
    plm_array_destroy(&d.y);
}

/* ---- main -------------------------------------------------------------------------------------- */

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr, "usage: bench_scaling cgls|deriv|lapl|fft|fft_axis0|summa_square|summa_thin|dot|norm|agreement "
                        "(--weak | --strong) [-n N] [-i ITERS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const char *sample = getenv("PLM_SMPI_SAMPLE");
    g_skip_data = g_rank != 0 && sample && *sample && strcmp(sample, "0") != 0;
    args_t a = {NULL, 1, 0, 5};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--weak")) a.weak = 1;
        else if (!strcmp(argv[i], "--strong")) a.weak = 0;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) a.n = atof(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) a.iters = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !a.pattern) a.pattern = argv[i];
        else usage();
    }
    if (!a.pattern || a.iters < 1) usage();
    if (a.n <= 0) a.n = a.weak ? 1e5 : 1e6;

    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    result_t r;
    memset(&r, 0, sizeof r);
    const char *p = a.pattern;
    if (!strcmp(p, "cgls")) bench_cgls(&a, &r, comm);
    else if (!strcmp(p, "deriv")) bench_stencil(&a, &r, comm, 0);
    else if (!strcmp(p, "lapl")) bench_stencil(&a, &r, comm, 1);
    else if (!strcmp(p, "fft")) bench_fft(&a, &r, comm, 0);
    else if (!strcmp(p, "fft_axis0")) bench_fft(&a, &r, comm, 1);
    else if (!strcmp(p, "summa_square")) bench_summa(&a, &r, comm, 0);
    else if (!strcmp(p, "summa_thin")) bench_summa(&a, &r, comm, 1);
    else if (!strcmp(p, "dot")) bench_reduction(&a, &r, comm, 0, 0);
    else if (!strcmp(p, "norm")) bench_reduction(&a, &r, comm, 1, 0);
    else if (!strcmp(p, "agreement")) bench_reduction(&a, &r, comm, 0, 1);
    else usage();

    if (g_rank == 0) {
        printf("{\"pattern\": \"%s\", \"scaling\": \"%s\", \"sampled\": %d, \"ranks\": %d, \"n\": %.0f, %s, \"time\": %.9e, "
               "\"memory_pss_mib\": %.1f, \"memory_rss_mib\": %.1f, \"allocations\": %.3f, \"collectives\": %.3f, \"messages\": %.3f, \"setup_calls\": %.3f, %s, \"calls\": {",
               p, a.weak ? "weak" : "strong", sample && *sample && strcmp(sample, "0") != 0, g_size, a.n, r.shape, r.time, r.pss, r.rss, r.allocs,
               (double)mpic_collectives(&r.calls) / r.per, (double)mpic_messages(&r.calls) / r.per,
               (double)mpic_setup(&r.calls) / r.per, r.model);
        int first = 1;
        for (int k = 0; k < MPIC_KINDS; k++) {
            if (!r.calls.calls[k]) continue;
            printf("%s\"%s\": [%.3f, %.1f]", first ? "" : ", ", mpic_name(k), (double)r.calls.calls[k] / r.per,
                   (double)r.calls.bytes[k] / (double)r.calls.calls[k]);
            first = 0;
        }
        printf("}}\n");
        fflush(stdout);
    }
#ifdef PLM_SMPI
    plm_smpi_save_samples();
#endif
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
