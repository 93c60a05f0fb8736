/* bench_fftw_mpi: the distributed FFT (plm_op_fftnd_ex over every axis of an n^3 cube split
 * along axis 0) next to FFTW-MPI doing the same transform on the same ranks, in the same run:
 *
 *   output fewest (plm_op_fftnd's split, along axis 1) against fftw_mpi_plan_dft_3d /
 *     _dft_r2c_3d with FFTW_MPI_TRANSPOSED_OUT (its output split along axis 1, axes 0 and 1
 *     swapped in memory), and the adjoint against the backward plan with
 *     FFTW_MPI_TRANSPOSED_IN;
 *   output axis0 (PLM_FFT_OUTPUT_AXIS0) against the same plans without the TRANSPOSED flags
 *     (FFTW-MPI transposes back itself).
 *
 * c2c: complex128 input; r2c: real = 1 (our input is a complex128 array holding real values,
 * as the operator's domain is complex; FFTW-MPI's a padded real array), c2r for the adjoint.
 * Both sides plan with the same effort (-e estimate, measure, patient; several allowed):
 * plm_op_fftnd_plan's planning argument and FFTW's planner flags; wisdom is forgotten before
 * each side plans, so neither reuses the other's measurements. FFTW-MPI plans are out of
 * place with FFTW's defaults (they may destroy their input: its input is refilled before
 * every timed call, outside the timing); ours preserve their input, as an operator must.
 * The norm is "none" on both sides; ours adds the sqrt(2) bin weights of real = 1.
 *
 *   mpiexec -n 2 --bind-to core build/bench/bench_fftw_mpi [-r REPS] [-n N]... [-e EFFORT]...
 *          [-k c2c|r2c]...     (defaults: N = 64 128 256, estimate and measure, c2c and r2c)
 *
 * N must be divisible by the rank count (FFTW-MPI's default blocks and ours then agree).
 * Times: median over REPS (default 7) of the max over ranks, ours and FFTW-MPI's calls
 * interleaved; ratio = ours / FFTW-MPI's. Built where FFTW-MPI is found; a benchmark, not a
 * test: nothing asserts. It prints a warning when our output and FFTW-MPI's differ. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3-mpi.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_util.h"

static int g_rank = 0, g_size = 1;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t n, m0, m1; /* edge, rows of axis 0 and of axis 1 on this rank */
    int real, axis0;
    plm_op_t op;
    plm_array_t x, y;
    fftw_plan fwd, bwd;
    double complex *fin, *fout;    /* FFTW-MPI's buffers (fin is real for r2c) */
    double complex *keep_in, *keep_out; /* its inputs, refilled before each timed call */
    ptrdiff_t alloc;                /* complex elements FFTW-MPI asked for */
} bench_t;

static double now_max(double t0)
{
    const double mine = MPI_Wtime() - t0;
    double t = 0;
    MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

/* Ours and FFTW-MPI's forward (or adjoint / backward) timed alternately, reps times each,
 * FFTW-MPI's input refilled before its call outside the timing: medians. */
static void time_pair(bench_t *b, int adjoint, int reps, double *t_ours, double *t_fftw)
{
    double *t = malloc(sizeof(double) * (size_t)(2 * reps));
    const size_t bytes = (size_t)b->alloc * sizeof(double complex);
    for (int k = -1; k < reps; ++k) { /* k = -1: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CHECK(adjoint ? plm_op_apply_adjoint(b->op, b->y, b->x) : plm_op_apply(b->op, b->x, b->y));
        const double a = now_max(t0);
        if (adjoint) memcpy(b->fout, b->keep_out, bytes);
        else memcpy(b->fin, b->keep_in, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        fftw_execute(adjoint ? b->bwd : b->fwd);
        const double c = now_max(t0);
        if (k >= 0) {
            t[k] = a;
            t[reps + k] = c;
        }
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    qsort(t + reps, (size_t)reps, sizeof(double), cmp_double);
    *t_ours = t[reps / 2];
    *t_fftw = t[reps + reps / 2];
    free(t);
}

/* Our output element (i0, i1, i2) (global indices; the local block of the output split) next
 * to FFTW-MPI's, scaled back by the real transform's bin weights: the largest difference over
 * all ranks relative to the largest value. */
static double compare_outputs(const bench_t *b, const double complex *ours)
{
    const int64_t n = b->n, nc = b->real ? n / 2 + 1 : n;
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < (b->axis0 ? b->m0 : n); i++)
        for (int64_t j = 0; j < (b->axis0 ? n : b->m1); j++)
            for (int64_t k = 0; k < nc; k++) {
                /* ours: axis0 [m0][n][nc]; fewest [n][m1][nc]. FFTW: axis0 [m0][n][nc];
                 * transposed [m1][n][nc]. */
                const double complex o = b->axis0 ? ours[(i * n + j) * nc + k] : ours[(i * b->m1 + j) * nc + k];
                double complex f = b->axis0 ? b->fout[(i * n + j) * nc + k] : b->fout[(j * n + i) * nc + k];
                if (b->real && k >= 1 && k < 1 + (n - 1) / 2) f *= sqrt(2.0);
                diff = fmax(diff, cabs(o - f));
                scale = fmax(scale, cabs(f));
            }
    double all[2] = {diff, scale}, out[2];
    MPI_Allreduce(all, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out[0] / (out[1] > 0 ? out[1] : 1);
}

static unsigned fftw_flags(plm_fft_planning_t e)
{
    switch (e) {
    case PLM_FFT_PLANNING_MEASURE: return FFTW_MEASURE;
    case PLM_FFT_PLANNING_PATIENT: return FFTW_PATIENT;
    default: return FFTW_ESTIMATE;
    }
}

static const char *effort_name(plm_fft_planning_t e)
{
    switch (e) {
    case PLM_FFT_PLANNING_MEASURE: return "measure";
    case PLM_FFT_PLANNING_PATIENT: return "patient";
    default: return "estimate";
    }
}

static void run(plm_comm_t comm, int64_t n, int real, int axis0, plm_fft_planning_t effort, int reps)
{
    bench_t b = {0};
    b.n = n;
    b.real = real;
    b.axis0 = axis0;
    const ptrdiff_t N = (ptrdiff_t)n, nc = real ? N / 2 + 1 : N;
    const unsigned flags = fftw_flags(effort);

    /* FFTW-MPI: sizes, buffers, plans (its own planning time reported) */
    ptrdiff_t l0, s0, l1, s1;
    b.alloc = real ? fftw_mpi_local_size_3d_transposed(N, N, nc, MPI_COMM_WORLD, &l0, &s0, &l1, &s1)
                   : fftw_mpi_local_size_3d_transposed(N, N, N, MPI_COMM_WORLD, &l0, &s0, &l1, &s1);
    b.m0 = l0;
    b.m1 = l1;
    if (b.alloc < 1) b.alloc = 1;
    b.fin = fftw_alloc_complex((size_t)b.alloc);
    b.fout = fftw_alloc_complex((size_t)b.alloc);
    b.keep_in = fftw_alloc_complex((size_t)b.alloc);
    b.keep_out = fftw_alloc_complex((size_t)b.alloc);
    const unsigned tout = axis0 ? 0 : FFTW_MPI_TRANSPOSED_OUT, tin = axis0 ? 0 : FFTW_MPI_TRANSPOSED_IN;
    fftw_forget_wisdom();
    double t0 = MPI_Wtime();
    if (real) {
        b.fwd = fftw_mpi_plan_dft_r2c_3d(N, N, N, (double *)b.fin, b.fout, MPI_COMM_WORLD, flags | tout);
        b.bwd = fftw_mpi_plan_dft_c2r_3d(N, N, N, b.fout, (double *)b.fin, MPI_COMM_WORLD, flags | tin);
    } else {
        b.fwd = fftw_mpi_plan_dft_3d(N, N, N, b.fin, b.fout, MPI_COMM_WORLD, FFTW_FORWARD, flags | tout);
        b.bwd = fftw_mpi_plan_dft_3d(N, N, N, b.fout, b.fin, MPI_COMM_WORLD, FFTW_BACKWARD, flags | tin);
    }
    const double plan_fftw = now_max(t0);
    if (!b.fwd || !b.bwd) {
        if (g_rank == 0) printf("# FFTW-MPI made no plan for n = %lld\n", (long long)n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* Ours */
    const int64_t dims[3] = {n, n, n};
    const int axes[3] = {0, 1, 2};
    fftw_forget_wisdom();
    t0 = MPI_Wtime();
    CHECK(plm_op_fftnd_plan(comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, NULL, PLM_FFT_NORM_NONE, real, NULL, NULL,
                            axis0 ? PLM_FFT_OUTPUT_AXIS0 : PLM_FFT_OUTPUT_FEWEST_EXCHANGES, effort, &b.op));
    const double plan_ours = now_max(t0);
    plm_layout_t dl = NULL, rl = NULL;
    CHECK(plm_op_domain(b.op, &dl));
    CHECK(plm_op_range(b.op, &rl));
    CHECK(plm_array_create_from_layout(dl, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &b.x));
    CHECK(plm_array_create_from_layout(rl, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &b.y));

    /* The same input on both sides: x(i, j, k) real (r2c) or complex */
    void *xd = NULL;
    CHECK(plm_array_get_local_write(b.x, &xd));
    double complex *xv = xd;
    double *rin = (double *)b.keep_in;
    const ptrdiff_t pad = 2 * nc; /* FFTW-MPI's padded real rows */
    for (int64_t i = 0; i < b.m0; i++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < n; k++) {
                const double g = (double)(((s0 + i) * n + j) * n + k);
                const double re = sin(0.001 * g), im = real ? 0 : cos(0.002 * g);
                xv[(i * n + j) * n + k] = re + I * im;
                if (real) rin[(i * n + j) * pad + k] = re;
                else b.keep_in[(i * n + j) * n + k] = re + I * im;
            }
    CHECK(plm_array_restore_local_write(b.x, &xd));

    /* Check: both forward transforms of the same x agree (layouts included) */
    memcpy(b.fin, b.keep_in, (size_t)b.alloc * sizeof(double complex));
    fftw_execute(b.fwd);
    memcpy(b.keep_out, b.fout, (size_t)b.alloc * sizeof(double complex));
    CHECK(plm_op_apply(b.op, b.x, b.y));
    void *yd = NULL;
    CHECK(plm_array_get_local_read(b.y, (const void **)&yd));
    const double err = compare_outputs(&b, yd);
    CHECK(plm_array_restore_local_read(b.y, (const void **)&yd));

    double t_f = 0, t_ff = 0, t_a = 0, t_fa = 0;
    time_pair(&b, 0, reps, &t_f, &t_ff);
    memcpy(b.fout, b.keep_out, (size_t)b.alloc * sizeof(double complex));
    time_pair(&b, 1, reps, &t_a, &t_fa);
    if (g_rank == 0) {
        if (!(err <= 1e-12)) fprintf(stderr, "warning: n = %lld: our output and FFTW-MPI's differ by %g\n", (long long)n, err);
        printf("%5lld^3 %5d %4s %6s %9s %10.3f %10.3f %7.2f %10.3f %10.3f %7.2f %9.1f %9.1f\n", (long long)n, g_size,
               real ? "r2c" : "c2c", axis0 ? "axis0" : "fewest", effort_name(effort), t_f * 1e3, t_ff * 1e3, t_f / t_ff,
               t_a * 1e3, t_fa * 1e3, t_a / t_fa, plan_ours * 1e3, plan_fftw * 1e3);
        fflush(stdout);
    }
    fftw_destroy_plan(b.fwd);
    fftw_destroy_plan(b.bwd);
    fftw_free(b.fin);
    fftw_free(b.fout);
    fftw_free(b.keep_in);
    fftw_free(b.keep_out);
    plm_array_destroy(&b.x);
    plm_array_destroy(&b.y);
    plm_layout_destroy(&dl);
    plm_layout_destroy(&rl);
    plm_op_destroy(&b.op);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    fftw_mpi_init();
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int reps = 7, nsizes = 0, nefforts = 0, kinds = 0;
    int64_t sizes[8];
    plm_fft_planning_t efforts[4];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc && nsizes < 8) sizes[nsizes++] = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc && nefforts < 4) {
            const char *e = argv[++i];
            efforts[nefforts++] = !strcmp(e, "measure")   ? PLM_FFT_PLANNING_MEASURE
                                  : !strcmp(e, "patient") ? PLM_FFT_PLANNING_PATIENT
                                                          : PLM_FFT_PLANNING_ESTIMATE;
        } else if (!strcmp(argv[i], "-k") && i + 1 < argc) kinds |= !strcmp(argv[++i], "r2c") ? 2 : 1;
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 64;
        sizes[nsizes++] = 128;
        sizes[nsizes++] = 256;
    }
    if (nefforts == 0) {
        efforts[nefforts++] = PLM_FFT_PLANNING_ESTIMATE;
        efforts[nefforts++] = PLM_FFT_PLANNING_MEASURE;
    }
    if (kinds == 0) kinds = 3;
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    if (g_rank == 0)
        printf("# distributed 3-D FFT: plm_op_fftnd_plan vs FFTW-MPI (fftw_mpi_plan_dft_3d / _r2c_3d), same planning\n"
               "# effort, every axis, complex128 / float64, norm none; median of %d interleaved calls, ms; ratio = ours/FFTW-MPI\n"
               "# output fewest: ours split along axis 1, FFTW-MPI with FFTW_MPI_TRANSPOSED_OUT (adjoint: _IN);\n"
               "# axis0: PLM_FFT_OUTPUT_AXIS0, FFTW-MPI untransposed. plan columns: planning time of both directions\n"
               "#  size ranks kind output    effort    fwd ours   fwd fftw   ratio    adj ours   adj fftw   ratio  plan ours plan fftw\n",
               reps);
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] % g_size) {
            if (g_rank == 0) printf("# skipping n = %lld: not divisible by %d ranks\n", (long long)sizes[i], g_size);
            continue;
        }
        for (int e = 0; e < nefforts; e++)
            for (int real = 0; real < 2; real++) {
                if (!(kinds & (1 << real))) continue;
                for (int axis0 = 0; axis0 < 2; axis0++) run(comm, sizes[i], real, axis0, efforts[e], reps);
            }
    }
    plm_comm_destroy(&comm);
    fftw_mpi_cleanup();
    MPI_Finalize();
    return 0;
}
