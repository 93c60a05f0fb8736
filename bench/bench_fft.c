/* bench_fft: the distributed FFT (plm_op_fftnd over every axis of an n^3 complex128 cube)
 * next to its floor measured in the same run: the same local FFTW transforms called directly
 * (2-D FFTs of this rank's slab of rows, then 1-D FFTs along axis 0 of its slab of the
 * transposed cube, plans made once with FFTW_ESTIMATE, the operator's effort here) plus one
 * MPI_Alltoall of the local data, not rearranged (so the floor's output is not the FFT). The
 * operator adds the packing around its all-to-all and its pipeline; ratio = operator / floor.
 * A second row per size times plm_op_fftnd_ex with PLM_FFT_OUTPUT_AXIS0 (the output back in
 * rows of axis 0: a second all-to-all) against the same floor plus a second MPI_Alltoall.
 *
 *   mpiexec -n 2 build/bench/bench_fft [-r REPS] [-n N]...   (default N = 128 and 256)
 *
 * N must be divisible by the rank count (the floor's MPI_Alltoall takes equal blocks).
 * Times: median over REPS of the max over ranks. A benchmark, not a test: nothing asserts;
 * it prints a warning when F^H F x differs from N x. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0, g_size = 1;

typedef struct {
    int64_t n, local;  /* cube edge, elements per rank */
    plm_op_t op;
    plm_array_t x, y;
    int adjoint;
    int axis0; /* PLM_FFT_OUTPUT_AXIS0: the floor exchanges twice */
    fftw_complex *in, *mid, *sent, *out;  /* the floor's buffers */
    fftw_plan rows, cols;
} bench_t;

static void f_apply(void *p)
{
    bench_t *b = p;
    CHECK(b->adjoint ? plm_op_apply_adjoint(b->op, b->y, b->x) : plm_op_apply(b->op, b->x, b->y));
}

/* The floor: FFTs over axes 1, 2 of [n/P, n, n]; an all-to-all; FFTs along axis 0 of
 * [n, n/P, n]. The data are not rearranged around the all-to-all (the operator's extra). */
static void f_floor(void *p)
{
    bench_t *b = p;
    fftw_execute_dft(b->rows, b->in, b->mid);
    MPI_Alltoall(b->mid, (int)(b->local / g_size), MPI_C_DOUBLE_COMPLEX, b->sent, (int)(b->local / g_size),
                 MPI_C_DOUBLE_COMPLEX, MPI_COMM_WORLD);
    fftw_execute_dft(b->cols, b->sent, b->out);
    if (b->axis0)
        MPI_Alltoall(b->out, (int)(b->local / g_size), MPI_C_DOUBLE_COMPLEX, b->mid, (int)(b->local / g_size),
                     MPI_C_DOUBLE_COMPLEX, MPI_COMM_WORLD);
}

static void run(plm_comm_t comm, int64_t n, int reps, plm_fft_output_t output)
{
    bench_t b = {0};
    b.n = n;
    b.axis0 = output == PLM_FFT_OUTPUT_AXIS0;
    b.local = n * n * n / g_size;
    const int64_t dims[3] = {n, n, n};
    const int axes[3] = {0, 1, 2};
    CHECK(plm_op_fftnd_plan(comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                            output, PLM_FFT_PLANNING_ESTIMATE, &b.op)); /* the floor's effort */
    plm_layout_t dl = NULL, rl = NULL;
    CHECK(plm_op_domain(b.op, &dl));
    CHECK(plm_op_range(b.op, &rl));
    CHECK(plm_array_create_from_layout(dl, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &b.x));
    CHECK(plm_array_create_from_layout(rl, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &b.y));
    void *xd = NULL;
    CHECK(plm_array_get_local_write(b.x, &xd));
    double complex *xv = xd;
    for (int64_t i = 0; i < b.local; i++)
        xv[i] = sin(0.001 * (double)(i + g_rank * b.local)) + I * cos(0.002 * (double)i);

    const size_t bytes = (size_t)b.local * sizeof(fftw_complex);
    b.in = fftw_malloc(bytes);
    b.mid = fftw_malloc(bytes);
    b.sent = fftw_malloc(bytes);
    b.out = fftw_malloc(bytes);
    const int nn[2] = {(int)n, (int)n}, n0[1] = {(int)n};
    const int m = (int)(n / g_size);
    b.rows = fftw_plan_many_dft(2, nn, m, b.in, NULL, 1, (int)(n * n), b.mid, NULL, 1, (int)(n * n), FFTW_FORWARD,
                                FFTW_ESTIMATE);
    b.cols = fftw_plan_many_dft(1, n0, m * (int)n, b.sent, NULL, m * (int)n, 1, b.out, NULL, m * (int)n, 1,
                                FFTW_FORWARD, FFTW_ESTIMATE);
    memcpy(b.in, xv, bytes);
    CHECK(plm_array_restore_local_write(b.x, &xd));

    double t_op = 0, t_floor = 0, t_adj = 0, t_floor2 = 0;
    bench_time_pair(f_apply, &b, f_floor, &b, reps, &t_op, &t_floor);
    b.adjoint = 1;
    bench_time_pair(f_apply, &b, f_floor, &b, reps, &t_adj, &t_floor2);
    b.adjoint = 0;

    /* A check of the operator (the floor computes no transform: its data stay unpermuted):
     * F^H F x = N x. */
    plm_array_t z = NULL;
    CHECK(plm_array_create_from_layout(dl, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &z));
    f_apply(&b);
    CHECK(plm_op_apply_adjoint(b.op, b.y, z));
    CHECK(plm_array_axpby(-(double)(n * n * n), 0, b.x, 1, 0, z));
    double err = 0, scale = 0;
    CHECK(plm_array_norm(z, INFINITY, &err));
    CHECK(plm_array_norm(b.x, INFINITY, &scale));
    plm_array_destroy(&z);
    const double all[2] = {err, scale * (double)(n * n * n)};
    if (g_rank == 0) {
        if (!(all[0] <= 1e-9 * all[1])) fprintf(stderr, "warning: F^H F x - N x is %g (scale %g)\n", all[0], all[1]);
        printf("%5lld^3 %5d %6s %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f\n", (long long)n, g_size,
               b.axis0 ? "axis0" : "fewest", t_op * 1e3,
               t_floor * 1e3, t_op / t_floor, t_adj * 1e3, t_floor2 * 1e3, t_adj / t_floor2);
        fflush(stdout);
    }
    fftw_destroy_plan(b.rows);
    fftw_destroy_plan(b.cols);
    fftw_free(b.in);
    fftw_free(b.mid);
    fftw_free(b.sent);
    fftw_free(b.out);
    plm_array_destroy(&b.x);
    plm_array_destroy(&b.y);
    plm_layout_destroy(&dl);
    plm_layout_destroy(&rl);
    plm_op_destroy(&b.op);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int reps = 5, nsizes = 0;
    int64_t sizes[8];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc && nsizes < 8) sizes[nsizes++] = atoll(argv[++i]);
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 128;
        sizes[nsizes++] = 256;
    }
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    if (g_rank == 0)
        printf("# distributed FFT (plm_op_fftnd, every axis, complex128) vs local FFTW + MPI_Alltoall; median of %d, ms\n"
               "#  size ranks output   fwd [ms]   floor [ms]  fwd/fl    adj [ms]   floor [ms]  adj/fl\n"
               "# output fewest: plm_op_fftnd (one all-to-all); axis0: plm_op_fftnd_ex with PLM_FFT_OUTPUT_AXIS0\n"
               "# (two all-to-alls), its floor with a second MPI_Alltoall\n",
               reps);
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] % g_size) {
            if (g_rank == 0) printf("# skipping n = %lld: not divisible by %d ranks\n", (long long)sizes[i], g_size);
            continue;
        }
        run(comm, sizes[i], reps, PLM_FFT_OUTPUT_FEWEST_EXCHANGES);
        run(comm, sizes[i], reps, PLM_FFT_OUTPUT_AXIS0);
    }
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return 0;
}
