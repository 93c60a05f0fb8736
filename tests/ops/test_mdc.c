/* MDC (plm_op_mdc) through the public API at every rank count, against a serial reference
 * built here in double from the definition (no FFT library): a naive DFT along time with
 * PyLops' real-FFT conventions (norm "ortho", bins 1 .. (nt-1)/2 times sqrt 2, ifftshift
 * before F when twosided), the first nfreq bins, G times dr dt sqrt(nt) unless prescaled (its
 * conjugate with conj), and the inverse as numpy's irfft (imaginary parts of the zero and
 * Nyquist bins dropped). Applied to every unit vector it gives the dense real matrix of the
 * operator, against which forward and adjoint (its transpose) are checked, with a dot test.
 * - complex64 G (a float32 operator) and complex128 G (float64);
 * - odd and even nt, twosided or not, nfreq below, at and above nt/2 + 1 (clipped), conj,
 *   prescaled, save_gt, nv = 1 and more;
 * - frequency splits: the default one, all on the last rank, growing counts with zero on rank 0;
 * - bad arguments (even nt when twosided, frequencies not summing to nfreq, a real G,
 *   g_bytes) fail on every rank.
 * Without FFTW (PLM_TEST_WITH_FFTW undefined) a valid construction must fail with
 * PLM_ERR_NOT_SUPPORTED on every rank, and arguments bad on every rank with INVALID_ARG. */
#include "ops_test_util.h"

static const double PI = 3.14159265358979323846;

typedef struct {
    int64_t nt, nv, nfreq, ns, nr;
    int twosided, conj, prescaled, save_gt;
    double dt, dr;
} mdc_t;

static const mdc_t CASES[] = {
    {9, 2, 5, 3, 2, 1, 0, 0, 1, 0.004, 10.0},  /* all bins, twosided */
    {9, 1, 3, 2, 3, 1, 1, 0, 0, 0.5, 2.0},     /* truncated, conj */
    {8, 2, 5, 2, 2, 0, 0, 1, 1, 1.0, 1.0},     /* even nt: the Nyquist bin, prescaled */
    {8, 3, 40, 1, 2, 0, 1, 0, 0, 0.25, 1.5},   /* nfreq clipped to 5 */
    {1, 1, 1, 1, 1, 1, 0, 0, 1, 1.0, 1.0},     /* one sample */
    {11, 2, 4, 3, 3, 0, 0, 0, 1, 0.1, 3.0},    /* odd nt, one-sided, truncated */
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static int64_t nkept(const mdc_t *c) { return c->nfreq < c->nt / 2 + 1 ? c->nfreq : c->nt / 2 + 1; }

/* G[k][s][r] of the global kernel, rounded to the complex dtype. */
static double complex gker(int64_t k, int64_t s, int64_t r, plm_dtype_t dt)
{
    double re = cos(0.8 * (double)k - 0.5 * (double)s + 0.3 * (double)r) + 0.2;
    double im = sin(0.6 * (double)k + 0.4 * (double)s - 0.9 * (double)r);
    tu_round(dt, &re, &im);
    return re + I * im;
}

/* y (nt, ns, nv) = MDC x (nt, nr, nv), from the definition. */
static void mdc_ref(const mdc_t *c, plm_dtype_t dt, const double *x, double *y)
{
    const int64_t nt = c->nt, nv = c->nv, ns = c->ns, nr = c->nr, nf = nkept(c);
    const double g_scale = c->prescaled ? 1.0 : c->dr * c->dt * sqrt((double)nt);
    double complex *X = calloc((size_t)(nf * nr * nv) + 1, sizeof *X), *Y = calloc((size_t)(nf * ns * nv) + 1, sizeof *Y);
    for (int64_t k = 0; k < nf; k++) {
        const double w = (k >= 1 && k <= (nt - 1) / 2) ? sqrt(2.0) : 1.0;
        for (int64_t rv = 0; rv < nr * nv; rv++) {
            double complex s = 0;
            for (int64_t t = 0; t < nt; t++) {
                const int64_t src = c->twosided ? (t + nt / 2) % nt : t; /* ifftshift */
                s += x[src * nr * nv + rv] * cexp(-2.0 * I * PI * (double)(k * t) / (double)nt);
            }
            X[k * nr * nv + rv] = w * s / sqrt((double)nt);
        }
    }
    for (int64_t k = 0; k < nf; k++)
        for (int64_t s = 0; s < ns; s++)
            for (int64_t v = 0; v < nv; v++) {
                double complex acc = 0;
                for (int64_t r = 0; r < nr; r++) {
                    double complex g = gker(k, s, r, dt);
                    if (c->conj) g = conj(g);
                    acc += g_scale * g * X[(k * nr + r) * nv + v];
                }
                Y[(k * ns + s) * nv + v] = acc;
            }
    for (int64_t t = 0; t < nt; t++)
        for (int64_t sv = 0; sv < ns * nv; sv++) {
            double acc = 0;
            for (int64_t k = 0; k < nf; k++) {
                const int interior = k >= 1 && k <= (nt - 1) / 2;  /* counted twice, scaled by 1/sqrt 2 */
                const double complex z = Y[k * ns * nv + sv] / (interior ? sqrt(2.0) : 1.0);
                if (interior)
                    acc += 2.0 * creal(z * cexp(2.0 * I * PI * (double)(k * t) / (double)nt));
                else /* the zero bin, or the Nyquist bin of an even nt: real part only */
                    acc += creal(z) * (k == 0 ? 1.0 : ((t % 2) ? -1.0 : 1.0));
            }
            y[t * ns * nv + sv] = acc / sqrt((double)nt);
        }
    free(X);
    free(Y);
}

enum { SPLIT_DEFAULT, SPLIT_LAST, SPLIT_GROWING, NSPLITS };
static const char *SPLIT_NAMES[NSPLITS] = {"default", "all on the last rank", "growing"};

/* Frequencies of rank r for a split of nf bins; *first gets its first bin. */
static int64_t freqs_of(int split, int64_t nf, int P, int r, int64_t *first)
{
    int64_t n[TU_MAX_RANKS], left = nf;
    for (int q = 0; q < P; q++) {
        switch (split) {
        case SPLIT_DEFAULT: n[q] = tu_split(nf, P, q); break;
        case SPLIT_LAST: n[q] = q == P - 1 ? nf : 0; break;
        default: n[q] = q == P - 1 ? left : (q < left ? q : left); break; /* 0, 1, 2, ..., the rest */
        }
        left -= n[q];
    }
    *first = 0;
    for (int q = 0; q < r; q++) *first += n[q];
    return n[r];
}

/* This rank's frequencies of G, (nf, ns, nr) in the complex dtype gdt. */
static void *local_g(const mdc_t *c, plm_dtype_t gdt, int64_t first, int64_t nf)
{
    void *g = calloc((size_t)(nf * c->ns * c->nr) + 1, tu_esize(gdt));
    for (int64_t k = 0; k < nf; k++)
        for (int64_t s = 0; s < c->ns; s++)
            for (int64_t r = 0; r < c->nr; r++) {
                const double complex v = gker(first + k, s, r, gdt);
                tu_set(gdt, g, (k * c->ns + s) * c->nr + r, creal(v), cimag(v));
            }
    return g;
}

static plm_status_t make(const mdc_t *c, plm_dtype_t gdt, int split, plm_op_t *op)
{
    int64_t first;
    const int64_t nf = freqs_of(split, nkept(c), tu_size, tu_rank, &first);
    void *g = local_g(c, gdt, first, nf);
    const plm_status_t st = plm_op_mdc(tu_comm, gdt, c->nt, c->nv, c->nfreq, nf, c->ns, c->nr, c->dt, c->dr,
                                       c->twosided, c->conj, c->prescaled, c->save_gt, nf ? g : NULL,
                                       tu_bytes(gdt, nf * c->ns * c->nr), op);
    free(g);
    return st;
}

static TU_UNUSED void check_one(const mdc_t *c, plm_dtype_t gdt, int split)
{
    const plm_dtype_t dt = gdt == PLM_COMPLEX64 ? PLM_FLOAT32 : PLM_FLOAT64;
    plm_op_t op = NULL;
    TU_OK(make(c, gdt, split, &op));
    const int64_t M = c->nt * c->ns * c->nv, N = c->nt * c->nr * c->nv;
    int64_t rows = -1, cols = -1;
    plm_dtype_t odt = PLM_COMPLEX128;
    TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
    TU_CHECK_OK(plm_op_dtype(op, &odt));
    TU_EXPECT(rows == M && cols == N && odt == dt, "shape %lld x %lld (want %lld x %lld), dtype %d", (long long)rows,
              (long long)cols, (long long)M, (long long)N, (int)odt);
    /* The dense operator, column j the reference applied to e_j. */
    double complex *D = calloc((size_t)(M * N) + 1, sizeof *D);
    double *e = calloc((size_t)N, sizeof *e), *col = calloc((size_t)M, sizeof *col);
    for (int64_t j = 0; j < N; j++) {
        e[j] = 1;
        mdc_ref(c, gdt, e, col);
        e[j] = 0;
        for (int64_t i = 0; i < M; i++) D[i * N + j] = col[i];
    }
    char what[160];
    snprintf(what, sizeof what, "mdc nt %lld nv %lld nfreq %lld ns %lld nr %lld twosided %d conj %d prescaled %d, %s",
             (long long)c->nt, (long long)c->nv, (long long)c->nfreq, (long long)c->ns, (long long)c->nr, c->twosided,
             c->conj, c->prescaled, SPLIT_NAMES[split]);
    check_against(op, D, M, N, dt, what);
    free(D);
    free(e);
    free(col);
    plm_op_destroy(&op);
}

static void test_forward_adjoint(void **state)
{
    (void)state;
#ifdef PLM_TEST_WITH_FFTW
    for (int k = 0; k < NCASES; k++)
        for (int split = 0; split < NSPLITS; split++) {
            TU_MARK();
            check_one(&CASES[k], PLM_COMPLEX128, split);
            check_one(&CASES[k], PLM_COMPLEX64, split);
        }
#else
    plm_op_t op = NULL;
    TU_EXPECT_ERR(make(&CASES[0], PLM_COMPLEX128, SPLIT_DEFAULT, &op), PLM_ERR_NOT_SUPPORTED);
#endif
    TU_DONE();
}

/* The last rank passes a bad argument (or all do): every rank gets `want`, out cleared. */
static void expect_err(plm_status_t want, const char *what, mdc_t c, plm_dtype_t gdt, int64_t nf_delta,
                       int64_t bytes_off)
{
    int64_t first;
    const int64_t nf = freqs_of(SPLIT_DEFAULT, nkept(&c), tu_size, tu_rank, &first) + nf_delta;
    void *g = local_g(&c, PLM_COMPLEX128, first, nf < 0 ? 0 : nf);
    plm_op_t op = (plm_op_t)(void *)&tu_fail;
    const plm_status_t st = plm_op_mdc(tu_comm, gdt, c.nt, c.nv, c.nfreq, nf, c.ns, c.nr, c.dt, c.dr, c.twosided,
                                       c.conj, c.prescaled, c.save_gt, g, tu_bytes(gdt, nf * c.ns * c.nr) + bytes_off,
                                       &op);
    free(g);
    int all[TU_MAX_RANKS] = {0}, mine = (int)st;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < tu_size; r++)
        TU_EXPECT(all[r] == (int)want, "%s: rank %d returned %s, expected %s", what, r,
                  plm_status_string((plm_status_t)all[r]), plm_status_string(want));
    TU_EXPECT(op == NULL, "%s: out not cleared", what);
}

static void test_errors(void **state)
{
    (void)state;
    /* bad on every rank: refused by the argument checks, which come before FFTW's */
    mdc_t c = CASES[0];
    c.nt = 8; /* even, twosided */
    expect_err(PLM_ERR_INVALID_ARG, "twosided with an even nt", c, PLM_COMPLEX128, 0, 0);
    expect_err(PLM_ERR_INVALID_ARG, "a real G", CASES[0], PLM_FLOAT64, 0, 0);
#ifdef PLM_TEST_WITH_FFTW
    const int last = tu_rank == tu_size - 1;
    expect_err(PLM_ERR_INVALID_ARG, "one frequency too many on the last rank", CASES[0], PLM_COMPLEX128, last, 0);
    expect_err(PLM_ERR_INVALID_ARG, "g_bytes short on the last rank", CASES[0], PLM_COMPLEX128, 0, last ? -16 : 0);
    c = CASES[0];
    c.nv = last ? 0 : 2;
    expect_err(PLM_ERR_INVALID_ARG, "nv 0 on the last rank", c, PLM_COMPLEX128, 0, 0);
    if (tu_size > 1) {
        c = CASES[0];
        c.dt = last ? 0.008 : 0.004;
        expect_err(PLM_ERR_INVALID_ARG, "dt differs on the last rank", c, PLM_COMPLEX128, 0, 0);
    }
#endif
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_forward_adjoint),
        TU_TEST(test_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
