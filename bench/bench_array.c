/* bench_array: times the distributed-array operations of pylopsmpi's public C API next to
 * reference figures measured in the same run (raw MPI calls of the same sizes and a
 * STREAM-like triad on the local block), and prints a markdown table on rank 0.
 *
 *   mpiexec -n 2 build/bench/bench_array [-r REPS] [-n N]...
 *
 * Every timed repetition starts after an MPI_Barrier, is timed with MPI_Wtime, and its time is
 * the maximum over the ranks; the table shows the median of those maxima. This is a
 * benchmark, not a test: nothing here asserts timings. See bench/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pylopsmpi.h"

#define MAX_SIZES 16

static int g_rank = 0;

static void die(const char *what, plm_status_t st)
{
    fprintf(stderr, "[rank %d] %s failed: %s\n  %s\n", g_rank, what, plm_status_string(st), plm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call)                              \
    do {                                         \
        plm_status_t st_ = (call);               \
        if (st_ != PLM_SUCCESS) die(#call, st_); \
    } while (0)

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "[rank %d] out of memory (%zu bytes)\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* ---------------------------------------------------------------------------------------- */
/* Timing                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef void (*op_fn)(void *ctx);

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over reps of (max over ranks of one repetition's time), in seconds. */
static double time_op(op_fn f, void *ctx, int warmup, int reps, MPI_Comm comm)
{
    double *t = (double *)xmalloc(sizeof(double) * (size_t)reps);
    for (int k = 0; k < warmup; ++k) f(ctx);
    for (int k = 0; k < reps; ++k) {
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        f(ctx);
        const double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &t[k], 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    const double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    free(t);
    return med;
}

/* ---------------------------------------------------------------------------------------- */
/* The operations                                                                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    /* library side */
    plm_array_t x, y;
    double dot, norm;
    void *gathered; /* N doubles */
    int64_t n_global;
    void *ghost; /* local block with 1 ghost cell each side */
    int64_t n_ghost;
    /* raw MPI side, on private buffers of the same sizes */
    MPI_Comm comm;
    int rank, size;
    double *a, *b, *c; /* local blocks for the triad; b is also the allgatherv source */
    double *raw_gathered;
    int *counts, *displs;
    int n_local;
    double halo[2];
    double scalar, sum;
} Bench;

static void op_dot(void *p)
{
    Bench *B = (Bench *)p;
    CHECK(plm_array_dot(B->x, B->y, 0, &B->dot, NULL));
}

static void op_norm(void *p)
{
    Bench *B = (Bench *)p;
    CHECK(plm_array_norm(B->x, 2.0, &B->norm));
}

static void op_axpby(void *p)
{
    Bench *B = (Bench *)p;
    /* y = 0.5 x + 0.5 y: y == x stays exactly x, so the data never drift between repetitions */
    const double alpha = 0.5, beta = 0.5;
    CHECK(plm_array_axpby(alpha, 0.0, B->x, beta, 0.0, B->y));
}

static void op_asarray(void *p)
{
    Bench *B = (Bench *)p;
    CHECK(plm_array_asarray(B->x, 0, B->gathered, B->n_global * (int64_t)sizeof(double)));
}

static void op_ghost(void *p)
{
    Bench *B = (Bench *)p;
    CHECK(plm_array_add_ghost_cells(B->x, 1, 1, B->ghost, B->n_ghost * (int64_t)sizeof(double)));
}

static void op_raw_allreduce(void *p)
{
    Bench *B = (Bench *)p;
    MPI_Allreduce(&B->scalar, &B->sum, 1, MPI_DOUBLE, MPI_SUM, B->comm);
}

static void op_raw_allgatherv(void *p)
{
    Bench *B = (Bench *)p;
    MPI_Allgatherv(B->b, B->n_local, MPI_DOUBLE, B->raw_gathered, B->counts, B->displs, MPI_DOUBLE, B->comm);
}

/* The halo of add_ghost_cells(1, 1): last element to the next rank, first to the previous. */
static void op_raw_halo(void *p)
{
    Bench *B = (Bench *)p;
    const int prev = B->rank > 0 ? B->rank - 1 : MPI_PROC_NULL;
    const int next = B->rank + 1 < B->size ? B->rank + 1 : MPI_PROC_NULL;
    MPI_Sendrecv(&B->b[B->n_local - 1], 1, MPI_DOUBLE, next, 1, &B->halo[0], 1, MPI_DOUBLE, prev, 1, B->comm,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&B->b[0], 1, MPI_DOUBLE, prev, 2, &B->halo[1], 1, MPI_DOUBLE, next, 2, B->comm, MPI_STATUS_IGNORE);
}

static void op_triad(void *p)
{
    Bench *B = (Bench *)p;
    double *restrict a = B->a;
    const double *restrict b = B->b, *restrict c = B->c;
    const double s = B->scalar;
    for (int i = 0; i < B->n_local; ++i) a[i] = b[i] + s * c[i];
}

/* ---------------------------------------------------------------------------------------- */
/* Table                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void fmt_gbs(char *out, size_t n, double bytes, double t)
{
    if (bytes <= 0 || t <= 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.2f", bytes / t * 1e-9);
}

static void row(int64_t n, int64_t n_local, const char *op, double t, const char *ref, double tref, double bytes,
                double ref_bytes)
{
    char g1[32], g2[32];
    fmt_gbs(g1, sizeof g1, bytes, t);
    fmt_gbs(g2, sizeof g2, ref_bytes, tref);
    printf("| %lld | %lld | %s | %.2f | %s | %.2f | %.2f | %s | %s |\n", (long long)n, (long long)n_local, op, t * 1e6,
           ref, tref * 1e6, tref > 0 ? t / tref : 0.0, g1, g2);
}

/* x_g = 1 + (g mod 8)/8: every x_g^2 is a multiple of 1/64, so sum x_g^2 is exact in double
 * for any summation order up to N ~ 1e12, and the dot product can be checked exactly. */
static double x_of(int64_t g) { return 1.0 + (double)(g % 8) * 0.125; }

static void run_size(plm_comm_t comm, MPI_Comm raw, int64_t n, int reps_arg)
{
    Bench B;
    memset(&B, 0, sizeof B);
    MPI_Comm_rank(raw, &B.rank);
    MPI_Comm_size(raw, &B.size);
    B.comm = raw;
    B.n_global = n;
    const int reps = reps_arg > 0 ? reps_arg : (n >= 10000000 ? 10 : 20);
    const int warmup = n >= 10000000 ? 1 : 3;

    const int64_t shape[1] = {n};
    CHECK(plm_array_create(comm, 1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &B.x));
    CHECK(plm_array_create(comm, 1, shape, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &B.y));
    int64_t nl = 0, off = 0;
    CHECK(plm_array_local_size(B.x, &nl));
    CHECK(plm_array_local_offset(B.x, &off));
    void *px = NULL, *py = NULL;
    CHECK(plm_array_get_local_write(B.x, &px));
    CHECK(plm_array_get_local_write(B.y, &py));
    for (int64_t i = 0; i < nl; ++i) ((double *)px)[i] = ((double *)py)[i] = x_of(off + i);
    CHECK(plm_array_restore_local_write(B.x, &px));
    CHECK(plm_array_restore_local_write(B.y, &py));

    B.gathered = xmalloc(sizeof(double) * (size_t)n);
    int64_t gshape[1] = {0};
    CHECK(plm_array_ghost_shape(B.x, 1, 1, gshape));
    B.n_ghost = gshape[0];
    B.ghost = xmalloc(sizeof(double) * (size_t)B.n_ghost);

    /* raw side: same local sizes as the library's layout */
    B.n_local = (int)nl;
    B.a = (double *)xmalloc(sizeof(double) * (size_t)nl);
    B.b = (double *)xmalloc(sizeof(double) * (size_t)nl);
    B.c = (double *)xmalloc(sizeof(double) * (size_t)nl);
    for (int64_t i = 0; i < nl; ++i) {
        B.a[i] = 0.0;
        B.b[i] = x_of(off + i);
        B.c[i] = 2.0;
    }
    B.raw_gathered = (double *)xmalloc(sizeof(double) * (size_t)n);
    B.counts = (int *)xmalloc(sizeof(int) * (size_t)B.size);
    B.displs = (int *)xmalloc(sizeof(int) * (size_t)B.size);
    MPI_Allgather(&B.n_local, 1, MPI_INT, B.counts, 1, MPI_INT, raw);
    for (int r = 0, d = 0; r < B.size; ++r) {
        B.displs[r] = d;
        d += B.counts[r];
    }
    B.scalar = 3.0;
    int64_t nl_max = 0;
    MPI_Allreduce(&nl, &nl_max, 1, MPI_INT64_T, MPI_MAX, raw);

    const double t_dot = time_op(op_dot, &B, warmup, reps, raw);
    const double t_norm = time_op(op_norm, &B, warmup, reps, raw);
    const double t_axpby = time_op(op_axpby, &B, warmup, reps, raw);
    const double t_asarray = time_op(op_asarray, &B, warmup, reps, raw);
    const double t_ghost = time_op(op_ghost, &B, warmup, reps, raw);
    const double t_allreduce = time_op(op_raw_allreduce, &B, warmup, reps, raw);
    const double t_allgatherv = time_op(op_raw_allgatherv, &B, warmup, reps, raw);
    const double t_halo = time_op(op_raw_halo, &B, warmup, reps, raw);
    const double t_triad = time_op(op_triad, &B, warmup, reps, raw);

    /* sanity of the results (reported, never asserted) */
    double want = 0.0;
    for (int64_t g = 0; g < n; ++g) want += x_of(g) * x_of(g);
    CHECK(plm_array_dot(B.x, B.y, 0, &B.dot, NULL));
    CHECK(plm_array_norm(B.x, 2.0, &B.norm));
    int bad = B.dot != want || fabs(B.norm - sqrt(want)) > 1e-12 * sqrt(want);
    for (int64_t g = 0; g < n && !bad; ++g) bad = ((double *)B.gathered)[g] != x_of(g);
    int bad_any = 0;
    MPI_Allreduce(&bad, &bad_any, 1, MPI_INT, MPI_LOR, raw);

    if (B.rank == 0) {
        const double L = (double)nl_max;
        row(n, nl_max, "plm_array_dot", t_dot, "MPI_Allreduce (1 double)", t_allreduce, 2 * 8 * L, 0);
        row(n, nl_max, "plm_array_norm (ord 2)", t_norm, "MPI_Allreduce (1 double)", t_allreduce, 8 * L, 0);
        row(n, nl_max, "plm_array_axpby", t_axpby, "triad (local)", t_triad, 3 * 8 * L, 3 * 8 * L);
        /* gathers: the N doubles that land on each rank */
        row(n, nl_max, "plm_array_asarray", t_asarray, "MPI_Allgatherv", t_allgatherv, 8.0 * (double)n,
            8.0 * (double)n);
        /* add_ghost_cells also copies the local block into its output: read + write 8 n_local */
        row(n, nl_max, "plm_array_add_ghost_cells (1,1)", t_ghost, "MPI_Sendrecv halo (2 x 1 double)", t_halo,
            2 * 8 * L, 0);
        if (bad_any)
            fprintf(stderr, "WARNING: N=%lld: wrong results (dot %.17g, expected %.17g; norm %.17g)\n", (long long)n,
                    B.dot, want, B.norm);
        fflush(stdout);
    }

    free(B.counts);
    free(B.displs);
    free(B.raw_gathered);
    free(B.a);
    free(B.b);
    free(B.c);
    free(B.ghost);
    free(B.gathered);
    CHECK(plm_array_destroy(&B.x));
    CHECK(plm_array_destroy(&B.y));
}

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr, "usage: bench_array [-r REPS] [-n N]...\n"
                        "  -r REPS  timed repetitions per operation (default 20, 10 for N >= 1e7)\n"
                        "  -n N     global length (repeatable; default 1e3 1e5 1e7)\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int64_t sizes[MAX_SIZES];
    int nsizes = 0, reps = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc && nsizes < MAX_SIZES) {
            sizes[nsizes++] = (int64_t)strtod(argv[++i], NULL);
        } else {
            usage();
            MPI_Finalize();
            return strcmp(argv[i], "-h") == 0 ? 0 : 2;
        }
    }
    if (nsizes == 0) {
        sizes[0] = 1000;
        sizes[1] = 100000;
        sizes[2] = 10000000;
        nsizes = 3;
    }
    for (int k = 0; k < nsizes; ++k) {
        if (sizes[k] < size || sizes[k] > 2000000000) {
            if (g_rank == 0) fprintf(stderr, "N = %lld: need %d <= N <= 2e9\n", (long long)sizes[k], size);
            MPI_Finalize();
            return 2;
        }
    }

    CHECK(plm_check_header_version());
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);

    if (g_rank == 0) {
        char backends[128] = "";
        for (int b = PLM_BACKEND_MPI_HOST; b <= PLM_BACKEND_NCCL; ++b) {
            int built = 0;
            plm_backend_compiled((plm_backend_t)b, &built);
            if (built) {
                if (backends[0]) strncat(backends, ",", sizeof backends - strlen(backends) - 1);
                strncat(backends, plm_backend_name((plm_backend_t)b), sizeof backends - strlen(backends) - 1);
            }
        }
        printf("# bench_array: pylopsmpi %s (%s, backends %s), %d rank%s, float64, SCATTER 1-D\n", plm_version_string(),
               plm_git_hash(), backends, size, size == 1 ? "" : "s");
        char nrep[64];
        if (reps > 0)
            snprintf(nrep, sizeof nrep, "%d", reps);
        else
            snprintf(nrep, sizeof nrep, "20 (10 for N >= 1e7)");
        printf("# times: median over %s timed repetitions (after warm-up) of the max over ranks, in microseconds\n",
               nrep);
        printf("\n");
        printf("| N | n_local | operation | plm median [us] | reference | ref median [us] | plm/ref | plm GB/s | "
               "ref GB/s |\n");
        printf("|---:|---:|---|---:|---|---:|---:|---:|---:|\n");
        fflush(stdout);
    }
    for (int k = 0; k < nsizes; ++k) run_size(comm, raw, sizes[k], reps);

    MPI_Comm_free(&raw);
    CHECK(plm_comm_destroy(&comm));
    MPI_Finalize();
    return 0;
}
