/* bench_stencil: stencil operators next to memory-bandwidth floors measured in the same run.
 *
 * Operators on N float64 (default 1e7) split over the ranks: FirstDerivative of a 1-D signal
 * (forward, centered order 3 and 5; forward and adjoint), SecondDerivative, and the 2-D
 * Laplacian of an (N/1000) x 1000 model (both axes, one fused pass). Each apply reads x once
 * and writes y once: 16 bytes per element.
 * Floors on the same local sizes: a STREAM triad a = b + s c (24 bytes per element) and a
 * copy (16 bytes). Bandwidth = bytes moved / time, per rank; ratio = operator / triad.
 *
 *   mpiexec -n 2 build/bench/bench_stencil [-r REPS] [-n N] [-s SAMPLING]
 *
 * -s gives the derivatives and the Laplacian a sampling other than 1 (PyLops divides by it, or
 * by its square: one more division per element).
 *
 * Then NonStationaryConvolve1D (64 filters of 11 taps) of the same 1-D signal next to the same
 * operator applied to each rank's samples alone (a communicator of one rank: no exchange).
 *
 * Times: median over REPS of the max over ranks. A benchmark, not a test: nothing asserts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0;

typedef struct {
    int64_t n;
    double *a, *b, *c;
    plm_op_t op;
    plm_array_t x, y;
    int adjoint;
} bench_t;

static void f_triad(void *p)
{
    bench_t *b = p;
    double *restrict a = b->a;
    const double *restrict x = b->b, *restrict y = b->c;
    for (int64_t i = 0; i < b->n; i++) a[i] = x[i] + 0.5 * y[i];
}

static void f_copy(void *p)
{
    bench_t *b = p;
    memcpy(b->a, b->b, (size_t)b->n * sizeof(double));
}

static void f_apply(void *p)
{
    bench_t *b = p;
    CHECK(b->adjoint ? plm_op_apply_adjoint(b->op, b->x, b->y) : plm_op_apply(b->op, b->x, b->y));
}

/* Bandwidth of an operation moving bytes_per_elem per element, and its ratio to the triad's
 * (24 bytes per element) timed alongside it. */
static void report(const char *name, double t, double bytes_per_elem, int64_t n, double t_triad)
{
    const double gbs = bytes_per_elem * (double)n / t / 1e9, triad = 24.0 * (double)n / t_triad / 1e9;
    if (g_rank == 0) printf("%-34s %10.1f %8.2f %10.1f %8.2f\n", name, t * 1e6, gbs, t_triad * 1e6, gbs / triad);
}

/* NonStationaryConvolve1D of a 1-D signal of N samples split over the ranks (NS_FILTERS
 * filters of NS_TAPS taps, interpolated per sample; the ghost samples come from the
 * neighbours) next to the same operator on this rank's samples alone, on a communicator of
 * this rank (no exchange), timed alternately. */
enum { NS_FILTERS = 64, NS_TAPS = 11 };

static plm_op_t nonstat_op(plm_comm_t c, int64_t n, int64_t local_rows)
{
    double hs[NS_FILTERS * NS_TAPS];
    int64_t ih[NS_FILTERS];
    for (int f = 0; f < NS_FILTERS; f++) {
        ih[f] = f * (n / NS_FILTERS);
        for (int k = 0; k < NS_TAPS; k++) hs[f * NS_TAPS + k] = 1.0 / (1 + f + k);
    }
    const int64_t d[1] = {n};
    plm_op_t op = NULL;
    CHECK(plm_op_nonstationary_convolve1d(c, PLM_FLOAT64, 1, d, local_rows, 0, NS_FILTERS, NS_TAPS, hs, sizeof hs,
                                          ih, &op));
    return op;
}

static void nonstat_arrays(bench_t *b)
{
    CHECK(plm_op_new_domain_array(b->op, PLM_MEMORY_HOST, &b->x));
    CHECK(plm_op_new_range_array(b->op, PLM_MEMORY_HOST, &b->y));
    CHECK(plm_array_fill(b->x, 1.5, 0));
}

static void bench_nonstat(plm_comm_t comm, int64_t N, int size, int reps)
{
    plm_comm_t self = NULL;
    CHECK(plm_comm_create(MPI_COMM_SELF, NULL, &self));
    const int64_t nl = N / size + (g_rank < N % size);
    if (g_rank == 0) {
        printf("\nNonStationaryConvolve1D, %d filters of %d taps: distributed vs local-only (same local size)\n",
               NS_FILTERS, NS_TAPS);
        printf("%-34s %10s %10s %8s\n", "operation", "time(us)", "local(us)", "ratio");
    }
    for (int adjoint = 0; adjoint < 2; adjoint++) {
        bench_t d = {.adjoint = adjoint, .op = nonstat_op(comm, N, -1)};
        bench_t l = {.adjoint = adjoint, .op = nonstat_op(self, nl, -1)};
        nonstat_arrays(&d);
        nonstat_arrays(&l);
        double td = 0, tl = 0;
        bench_time_pair(f_apply, &d, f_apply, &l, reps, &td, &tl);
        if (g_rank == 0)
            printf("%-34s %10.1f %10.1f %8.2f\n", adjoint ? "NonStationaryConvolve1D adjoint" :
                   "NonStationaryConvolve1D forward", td * 1e6, tl * 1e6, td / tl);
        for (bench_t *b = &d; b; b = b == &d ? &l : NULL) {
            plm_array_destroy(&b->x);
            plm_array_destroy(&b->y);
            plm_op_destroy(&b->op);
        }
    }
    plm_comm_destroy(&self);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size = 1, reps = 21;
    int64_t N = 10000000;
    double sampling = 1.0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "-n")) N = atoll(argv[i + 1]);
        if (!strcmp(argv[i], "-s")) sampling = atof(argv[i + 1]);
    }
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    const int64_t nl = N / size + (g_rank < N % size);
    bench_t fl = {.n = nl};
    fl.a = malloc(sizeof(double) * (size_t)nl);
    fl.b = malloc(sizeof(double) * (size_t)nl);
    fl.c = malloc(sizeof(double) * (size_t)nl);
    for (int64_t i = 0; i < nl; i++) fl.a[i] = fl.b[i] = fl.c[i] = 1.0 + (double)(i % 7);
    double t_copy = 0, t_triad = 0;
    bench_time_pair(f_copy, &fl, f_triad, &fl, reps, &t_copy, &t_triad);
    if (g_rank == 0) {
        printf("bench_stencil: %d ranks, N = %lld float64 (%lld per rank), sampling %g, median of %d\n", size,
               (long long)N, (long long)nl, sampling, reps);
        printf("%-34s %10s %8s %10s %8s\n", "operation", "time(us)", "GB/s", "triad(us)", "/triad");
    }
    report("floor: copy", t_copy, 16, nl, t_triad);

    const int64_t d1[1] = {N}, d2[2] = {N / 1000, 1000};
    const int axes[2] = {0, 1};
    const double samplings[2] = {sampling, sampling};
    struct {
        const char *name;
        int which, kind, order, adjoint;
        double bytes;
    } cases[] = {
        {"FirstDerivative forward", 1, PLM_DERIV_FORWARD, 3, 0, 16},
        {"FirstDerivative forward, adjoint", 1, PLM_DERIV_FORWARD, 3, 1, 16},
        {"FirstDerivative centered 3", 1, PLM_DERIV_CENTERED, 3, 0, 16},
        {"FirstDerivative centered 5", 1, PLM_DERIV_CENTERED, 5, 0, 16},
        {"FirstDerivative centered 5, adj", 1, PLM_DERIV_CENTERED, 5, 1, 16},
        {"SecondDerivative centered", 2, PLM_DERIV_CENTERED, 3, 0, 16},
        {"Laplacian 2-D (axes 0, 1)", 3, PLM_DERIV_CENTERED, 3, 0, 16},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bench_t b = {.adjoint = cases[k].adjoint};
        if (cases[k].which == 1)
            CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 1, d1, -1, 0, sampling, cases[k].kind, cases[k].order,
                                          1, &b.op));
        else if (cases[k].which == 2)
            CHECK(plm_op_second_derivative(comm, PLM_FLOAT64, 1, d1, -1, 0, sampling, cases[k].kind, 1, &b.op));
        else
            CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 2, d2, -1, 2, axes, NULL, samplings, cases[k].kind, 0, &b.op));
        CHECK(plm_op_new_domain_array(b.op, PLM_MEMORY_HOST, &b.x));
        CHECK(plm_op_new_range_array(b.op, PLM_MEMORY_HOST, &b.y));
        CHECK(plm_array_fill(b.x, 1.5, 0));
        int64_t n = 0;
        CHECK(plm_array_local_size(b.x, &n));
        double t = 0, tt = 0;
        bench_time_pair(f_apply, &b, f_triad, &fl, reps, &t, &tt);
        report(cases[k].name, t, cases[k].bytes, n, tt);
        plm_array_destroy(&b.x);
        plm_array_destroy(&b.y);
        plm_op_destroy(&b.op);
    }
    bench_nonstat(comm, N, size, reps);
    free(fl.a);
    free(fl.b);
    free(fl.c);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
