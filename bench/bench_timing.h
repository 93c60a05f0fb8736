/* Timing shared by the benches that compare an operation with a floor measured in the same
 * run (bench_stencil, bench_matmul, bench_prox, bench_device). Header-only: each bench stays one file. */
#ifndef PLM_BENCH_TIMING_H
#define PLM_BENCH_TIMING_H

#include <stdlib.h>

#include <mpi.h>

typedef void (*bench_fn)(void *ctx);

static inline int bench_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call of f after a barrier: the slowest rank's time. */
static inline double bench_once(bench_fn f, void *ctx)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    f(ctx);
    const double mine = MPI_Wtime() - t0;
    double t = 0;
    MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

/* f and its floor g timed alternately, after one warm-up call each, so both see the same
 * machine (bandwidth drifts on shared machines): the medians of reps calls. */
static inline void bench_time_pair(bench_fn f, void *fctx, bench_fn g, void *gctx, int reps, double *tf, double *tg)
{
    double *t = malloc(sizeof(double) * (size_t)(2 * reps));
    f(fctx);
    g(gctx);
    for (int k = 0; k < reps; ++k) {
        t[k] = bench_once(f, fctx);
        t[reps + k] = bench_once(g, gctx);
    }
    qsort(t, (size_t)reps, sizeof(double), bench_cmp_double);
    qsort(t + reps, (size_t)reps, sizeof(double), bench_cmp_double);
    *tf = t[reps / 2];
    *tg = t[reps + reps / 2];
    free(t);
}

/* n functions timed in interleaved rounds (f[0], f[1], ..., f[n-1], again reps times), after
 * one warm-up call each: out[i] is the median of f[i]'s reps calls. */
static inline void bench_time_rounds(int n, const bench_fn *f, void *const *ctx, int reps, double *out)
{
    double *t = malloc(sizeof(double) * (size_t)(n * reps));
    for (int i = 0; i < n; ++i) f[i](ctx[i]);
    for (int k = 0; k < reps; ++k)
        for (int i = 0; i < n; ++i) t[i * reps + k] = bench_once(f[i], ctx[i]);
    for (int i = 0; i < n; ++i) {
        qsort(t + i * reps, (size_t)reps, sizeof(double), bench_cmp_double);
        out[i] = t[i * reps + reps / 2];
    }
    free(t);
}

#endif
