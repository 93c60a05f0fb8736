/* bench_mdc: MDC (plm_op_mdc) forward and adjoint, complex128 G (a float64 operator), next to
 * its parts measured in the same run on the same rank, with the same FFTW planner flags the
 * library uses (FFTW_ESTIMATE | FFTW_UNALIGNED):
 *   - r2c: FFTW's real FFT along time of the input (nt x n columns, strided);
 *   - gemms: cblas_zgemm of this rank's frequencies (ns x nr times nr x nv, forward; its
 *     conjugate transpose, adjoint);
 *   - allgatherv: MPI_Allgatherv of every rank's frequencies (complex doubles, in place);
 *   - c2r: zero bins past nfreq, then FFTW's inverse real FFT along time into the output;
 * and their sum, the floor of an apply (the library adds the ifftshift copy of twosided, the
 * zero bins past nfreq and the sqrt 2 scalings, folded into G here and there).
 *
 *   mpiexec -n 2 build/bench/bench_mdc [-s nt,ns,nr,nv,nfreq] [-r REPS]
 *   (default nt = 401 (twosided), ns = nr = 100, nv = 20, nfreq = 150)
 *
 * Frequencies are split as evenly as the ranks allow. Times: median over REPS (default 7) of
 * the max over ranks, after one warm-up call. A benchmark, not a test. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <fftw3.h>
#include <mpi.h>

#include "pylopsmpi.h"

#include "bench_timing.h"
#include "bench_util.h"

static int g_rank = 0, g_size = 1;

typedef struct {
    int64_t nt, ns, nr, nv, nfreq, nf, f0;
    int adjoint;
    double complex *g;             /* this rank's frequencies (nf, ns, nr) */
    double *rin, *rout;            /* the real input and output (nt, max(ns, nr), nv) */
    double complex *spec, *prod;   /* spectra (nt/2 + 1, max(ns, nr), nv) */
    int *counts[2], *displs[2];    /* the allgatherv of the forward [0] / adjoint [1] products */
    fftw_plan r2c[2], c2r[2];      /* [0] forward: r2c of the model, c2r into the data; [1] adjoint */
    plm_op_t op;
    plm_array_t x, y;
} bench_t;

static void p_r2c(void *p)
{
    bench_t *b = p;
    fftw_execute_dft_r2c(b->r2c[b->adjoint], b->rin, (fftw_complex *)b->spec);
}
static void p_gemms(void *p)
{
    bench_t *b = p;
    const double complex one = 1, zero = 0;
    const int ns = (int)b->ns, nr = (int)b->nr, nv = (int)b->nv;
    const int64_t in = b->adjoint ? b->ns : b->nr, out = b->adjoint ? b->nr : b->ns;
    for (int64_t k = 0; k < b->nf; ++k) {
        const double complex *g = b->g + k * b->ns * b->nr;
        const double complex *x = b->spec + (b->f0 + k) * in * b->nv;
        double complex *y = b->prod + (b->f0 + k) * out * b->nv;
        if (!b->adjoint)
            cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ns, nv, nr, &one, g, nr, x, nv, &zero, y, nv);
        else
            cblas_zgemm(CblasRowMajor, CblasConjTrans, CblasNoTrans, nr, nv, ns, &one, g, nr, x, nv, &zero, y, nv);
    }
}
static void p_gather(void *p)
{
    bench_t *b = p;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_C_DOUBLE_COMPLEX, b->prod, b->counts[b->adjoint], b->displs[b->adjoint],
                   MPI_C_DOUBLE_COMPLEX, MPI_COMM_WORLD);
}
static void p_c2r(void *p)
{
    bench_t *b = p;
    const int64_t nfft = b->nt / 2 + 1, per = (b->adjoint ? b->nr : b->ns) * b->nv;
    memset(b->prod + b->nfreq * per, 0, sizeof(double complex) * (size_t)((nfft - b->nfreq) * per)); /* I^H */
    fftw_execute_dft_c2r(b->c2r[b->adjoint], (fftw_complex *)b->prod, b->rout);
}
static void p_all(void *p)
{
    p_r2c(p);
    p_gemms(p);
    p_gather(p);
    p_c2r(p);
}
static void f_apply(void *p)
{
    bench_t *b = p;
    if (b->adjoint) CHECK(plm_op_apply_adjoint(b->op, b->y, b->x));
    else CHECK(plm_op_apply(b->op, b->x, b->y));
}

/* A real FFT plan along axis 0 of (nt, n) in C order: n transforms of stride n. */
static fftw_plan plan(int c2r, int64_t nt, int64_t n, double *r, double complex *c)
{
    const int len = (int)nt, howmany = (int)n, stride = (int)n;
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    return c2r ? fftw_plan_many_dft_c2r(1, &len, howmany, (fftw_complex *)c, NULL, stride, 1, r, NULL, stride, 1, flags)
               : fftw_plan_many_dft_r2c(1, &len, howmany, r, NULL, stride, 1, (fftw_complex *)c, NULL, stride, 1, flags);
}

/* Median of reps calls (after a warm-up), slowest rank each. */
static double median(bench_fn f, void *ctx, int reps)
{
    double a = 0, b = 0;
    bench_time_pair(f, ctx, f, ctx, reps, &a, &b);
    return 0.5 * (a + b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int reps = 7;
    bench_t b = {0};
    b.nt = 401, b.ns = 100, b.nr = 100, b.nv = 20, b.nfreq = 150;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            long long v[5];
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5)
                b.nt = v[0], b.ns = v[1], b.nr = v[2], b.nv = v[3], b.nfreq = v[4];
        }
    }
    const int64_t nfft = b.nt / 2 + 1, side = (b.ns > b.nr ? b.ns : b.nr) * b.nv;
    if (b.nfreq > nfft) b.nfreq = nfft;
    for (int d = 0; d < 2; ++d) {
        b.counts[d] = malloc(sizeof(int) * (size_t)g_size);
        b.displs[d] = malloc(sizeof(int) * (size_t)g_size);
    }
    int64_t start = 0;
    for (int r = 0; r < g_size; ++r) {
        const int64_t n = b.nfreq / g_size + (r < b.nfreq % g_size);
        if (r == g_rank) b.nf = n, b.f0 = start;
        for (int d = 0; d < 2; ++d) {
            const int64_t per = (d ? b.nr : b.ns) * b.nv;
            b.counts[d][r] = (int)(n * per);
            b.displs[d][r] = (int)(start * per);
        }
        start += n;
    }
    b.g = malloc(sizeof(double complex) * (size_t)(b.nf * b.ns * b.nr + 1));
    for (int64_t i = 0; i < b.nf * b.ns * b.nr; ++i) b.g[i] = cos(0.37 * (double)i) + I * sin(0.21 * (double)i);
    b.rin = fftw_malloc(sizeof(double) * (size_t)(b.nt * side));
    b.rout = fftw_malloc(sizeof(double) * (size_t)(b.nt * side));
    b.spec = fftw_malloc(sizeof(double complex) * (size_t)(nfft * side));
    b.prod = fftw_malloc(sizeof(double complex) * (size_t)(nfft * side));
    b.r2c[0] = plan(0, b.nt, b.nr * b.nv, b.rin, b.spec);
    b.c2r[0] = plan(1, b.nt, b.ns * b.nv, b.rout, b.prod);
    b.r2c[1] = plan(0, b.nt, b.ns * b.nv, b.rin, b.spec);
    b.c2r[1] = plan(1, b.nt, b.nr * b.nv, b.rout, b.prod);
    for (int64_t i = 0; i < b.nt * side; ++i) b.rin[i] = sin(0.11 * (double)i);
    memset(b.prod, 0, sizeof(double complex) * (size_t)(nfft * side));

    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    CHECK(plm_op_mdc(comm, PLM_COMPLEX128, b.nt, b.nv, b.nfreq, b.nf, b.ns, b.nr, 0.004, 10.0, 1, 0, 0, 1, b.g,
                     b.nf * b.ns * b.nr * (int64_t)sizeof(double complex), &b.op));
    CHECK(plm_op_new_domain_array(b.op, PLM_MEMORY_HOST, &b.x));
    CHECK(plm_op_new_range_array(b.op, PLM_MEMORY_HOST, &b.y));
    bench_fill(b.x, 1.0);
    bench_fill(b.y, 2.0);
    if (g_rank == 0) {
        printf("bench_mdc: %d ranks, complex128 G, nt = %lld (twosided), ns = %lld, nr = %lld, nv = %lld, "
               "nfreq = %lld, median of %d reps\n\n",
               g_size, (long long)b.nt, (long long)b.ns, (long long)b.nr, (long long)b.nv, (long long)b.nfreq, reps);
        printf("| ranks | apply | plm (ms) | r2c (ms) | gemms (ms) | allgatherv (ms) | c2r (ms) | parts in one run (ms) | "
               "plm / parts |\n");
        printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (int adj = 0; adj < 2; ++adj) {
        b.adjoint = adj;
        double t = 0, t_parts = 0;
        bench_time_pair(f_apply, &b, p_all, &b, reps, &t, &t_parts);
        const double t1 = median(p_r2c, &b, reps), t2 = median(p_gemms, &b, reps), t3 = median(p_gather, &b, reps),
                     t4 = median(p_c2r, &b, reps);
        if (g_rank == 0)
            printf("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", g_size, adj ? "adjoint" : "forward",
                   t * 1e3, t1 * 1e3, t2 * 1e3, t3 * 1e3, t4 * 1e3, t_parts * 1e3, t / t_parts);
    }
    CHECK(plm_array_destroy(&b.x));
    CHECK(plm_array_destroy(&b.y));
    CHECK(plm_op_destroy(&b.op));
    plm_comm_destroy(&comm);
    for (int d = 0; d < 2; ++d) {
        fftw_destroy_plan(b.r2c[d]);
        fftw_destroy_plan(b.c2r[d]);
        free(b.counts[d]);
        free(b.displs[d]);
    }
    fftw_free(b.rin), fftw_free(b.rout), fftw_free(b.spec), fftw_free(b.prod);
    free(b.g);
    MPI_Finalize();
    return 0;
}
