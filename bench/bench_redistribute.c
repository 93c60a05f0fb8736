/* bench_redistribute: plm_array_redistribute (a new array along another axis, destroyed after
 * each call) next to its floor measured in the same run: one pack pass (memcpy of the bytes this
 * rank sends), a raw MPI_Alltoallv of the same counts on a duplicate of the communicator, and
 * one unpack pass (memcpy of the bytes it receives).
 *
 *   mpiexec -n 2 --bind-to core build/bench/bench_redistribute [-r REPS]
 *
 * Cases: complex128 64^3 and 128^3 from axis 0 to 1, float64 1000 x 1000 and 100 x 100 from
 * axis 0 to 1. Times: the library and the floor in interleaved rounds (bench_timing.h), after a
 * warm-up call of each, median of REPS (default 21) of the slowest rank. A benchmark, not a
 * test: nothing here asserts timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0, g_size = 1;

typedef struct {
    plm_array_t x;
    int axis;
    /* the floor */
    MPI_Comm raw;
    char *src, *sbuf, *rbuf, *dst;
    int *sc, *sd, *rc, *rd; /* bytes */
    size_t sbytes, rbytes;
} bench_t;

static void f_lib(void *p)
{
    bench_t *b = p;
    plm_array_t y = NULL;
    CHECK(plm_array_redistribute(b->x, b->axis, &y));
    CHECK(plm_array_destroy(&y));
}

static void f_floor(void *p)
{
    bench_t *b = p;
    memcpy(b->sbuf, b->src, b->sbytes);
    MPI_Alltoallv(b->sbuf, b->sc, b->sd, MPI_BYTE, b->rbuf, b->rc, b->rd, MPI_BYTE, b->raw);
    memcpy(b->dst, b->rbuf, b->rbytes);
}

/* Block q of d split in P (the library's default split: the first d % P blocks one longer). */
static int64_t split(int64_t d, int q) { return d / g_size + (q < d % g_size ? 1 : 0); }

static void run(plm_comm_t comm, MPI_Comm raw, int ndim, const int64_t *shape, plm_dtype_t dt, const char *name,
                int reps)
{
    bench_t b = {0};
    b.raw = raw;
    b.axis = 1;
    CHECK(plm_array_create(comm, ndim, shape, 0, PLM_PARTITION_SCATTER, dt, PLM_MEMORY_HOST, &b.x));
    bench_fill(b.x, 0.5);
    /* Element counts: my block along axis 0 restricted to rank q's block along axis 1, and
     * rank q's block along axis 0 restricted to mine along axis 1. */
    const size_t es = dt == PLM_COMPLEX128 ? 16 : 8;
    int64_t rest = 1;
    for (int d = 2; d < ndim; ++d) rest *= shape[d];
    b.sc = malloc(sizeof(int) * 4 * (size_t)g_size);
    b.sd = b.sc + g_size;
    b.rc = b.sd + g_size;
    b.rd = b.rc + g_size;
    int so = 0, ro = 0;
    for (int q = 0; q < g_size; ++q) {
        b.sc[q] = (int)(split(shape[0], g_rank) * split(shape[1], q) * rest * (int64_t)es);
        b.rc[q] = (int)(split(shape[0], q) * split(shape[1], g_rank) * rest * (int64_t)es);
        b.sd[q] = so;
        b.rd[q] = ro;
        so += b.sc[q];
        ro += b.rc[q];
    }
    b.sbytes = (size_t)so;
    b.rbytes = (size_t)ro;
    b.src = malloc(b.sbytes + 1);
    b.sbuf = malloc(b.sbytes + 1);
    b.rbuf = malloc(b.rbytes + 1);
    b.dst = malloc(b.rbytes + 1);
    memset(b.src, 1, b.sbytes);
    memset(b.dst, 1, b.rbytes);
    double t[2];
    bench_fn f[2] = {f_lib, f_floor};
    void *c[2] = {&b, &b};
    bench_time_rounds(2, f, c, reps, t);
    if (g_rank == 0)
        printf("| %d | %s | %.1f | %.1f | %.1f | %.2f |\n", g_size, name, (double)b.sbytes / 1024.0, t[0] * 1e6,
               t[1] * 1e6, t[0] / t[1]);
    free(b.src);
    free(b.sbuf);
    free(b.rbuf);
    free(b.dst);
    free(b.sc);
    CHECK(plm_array_destroy(&b.x));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int reps = 21;
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);
    if (g_rank == 0) {
        printf("bench_redistribute: %d ranks, axis 0 -> 1, median of %d rounds (us)\n\n", g_size, reps);
        printf("| ranks | array | KiB sent per rank | plm_array_redistribute | floor: pack + MPI_Alltoallv + unpack | "
               "plm / floor |\n|---:|---|---:|---:|---:|---:|\n");
    }
    const int64_t c64[3] = {64, 64, 64}, c128[3] = {128, 128, 128}, r1000[2] = {1000, 1000}, r100[2] = {100, 100};
    run(comm, raw, 3, c64, PLM_COMPLEX128, "complex128 64^3", reps);
    run(comm, raw, 3, c128, PLM_COMPLEX128, "complex128 128^3", reps);
    run(comm, raw, 2, r1000, PLM_FLOAT64, "float64 1000 x 1000", reps);
    run(comm, raw, 2, r100, PLM_FLOAT64, "float64 100 x 100", reps);
    MPI_Comm_free(&raw);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
