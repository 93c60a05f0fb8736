/* The distributed FFT (plm_op_fftnd, _ex, _plan) against a naive serial DFT computed here in
 * float64: forward and adjoint, every transform-axis pattern (local only, along axis 0 with the
 * output on a free axis or on axis 1, 1-D), real (r2c, and the last axis 0), nffts cropping
 * and padding every axis, both norms, shifts, float and double, uneven splits and fewer rows
 * than ranks, estimated and measured plans; dot tests (plm_op_dottest on real parts for the
 * real-linear ones) and plm_op_clinear; the output shape, axis and frequencies; bad arguments
 * on every rank; FFTW wisdom export and import. And plm_array_fftshift against a serial roll for
 * every shape of TU_CASES, along distributed and local axes. */
#include "array/array_test_util.h"

#include <complex.h>

/* ---- serial references on global C-order arrays ----------------------------------------- */

static int64_t prod(const int64_t *s, int nd) { return tu_prod(s, 0, nd); }

/* The multi-index of flat index i of shape s. */
static void unflat(int64_t i, const int64_t *s, int nd, int64_t *idx)
{
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = i % s[k];
        i /= s[k];
    }
}

static int64_t flat(const int64_t *idx, const int64_t *s, int nd)
{
    int64_t i = 0;
    for (int k = 0; k < nd; k++) i = i * s[k] + idx[k];
    return i;
}

/* numpy.roll along axis. */
static void roll(double complex *a, const int64_t *s, int nd, int axis, int64_t shift)
{
    const int64_t n = prod(s, nd), len = s[axis];
    double complex *t = malloc((size_t)(n + 1) * sizeof *t);
    int64_t idx[PLM_MAX_NDIM];
    for (int64_t i = 0; i < n; i++) {
        unflat(i, s, nd, idx);
        idx[axis] = ((idx[axis] + shift) % len + len) % len;
        t[flat(idx, s, nd)] = a[i];
    }
    memcpy(a, t, (size_t)n * sizeof *t);
    free(t);
}

/* Naive DFT along axis: sign -1 forward, +1 backward, unscaled (the roots of unity tabled). */
static void dft(double complex *a, const int64_t *s, int nd, int axis, int sign)
{
    const int64_t n = prod(s, nd), len = s[axis];
    int64_t inner = 1;
    for (int k = axis + 1; k < nd; k++) inner *= s[k];
    double complex *t = calloc((size_t)(n + 1), sizeof *t), *w = malloc((size_t)(len + 1) * sizeof *w);
    for (int64_t k = 0; k < len; k++) w[k] = cexp(I * sign * 2 * 3.14159265358979323846 * (double)k / (double)len);
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = (i / inner) % len, base = i - k * inner;
        double complex acc = 0;
        for (int64_t j = 0; j < len; j++) acc += a[base + j * inner] * w[(j * k) % len];
        t[i] = acc;
    }
    memcpy(a, t, (size_t)n * sizeof *t);
    free(t);
    free(w);
}

/* A copy of a (shape s) resized to shape d: cut, or padded with zeros. */
static double complex *resized(const double complex *a, const int64_t *s, const int64_t *d, int nd)
{
    const int64_t n = prod(d, nd);
    double complex *t = calloc((size_t)(n + 1), sizeof *t);
    int64_t idx[PLM_MAX_NDIM];
    for (int64_t i = 0; i < n; i++) {
        unflat(i, d, nd, idx);
        int in = 1;
        for (int k = 0; k < nd; k++) in = in && idx[k] < s[k];
        if (in) t[i] = a[flat(idx, s, nd)];
    }
    return t;
}

typedef struct {
    const char *name;
    plm_dtype_t dt; /* as passed: a real dtype means real input semantics */
    int ndim;
    int64_t dims[4];
    int naxes;
    int axes[4];
    int real;
    plm_fft_norm_t norm;
    int ifs[4], ffs[4];
    int out_axis; /* expected */
    int64_t nffts[4]; /* per axis; 0: the axis' length (all 0: plm_op_fftnd's NULL) */
} fcase_t;

static int norm_axis(int a, int nd) { return a < 0 ? a + nd : a; }
static int clinear(const fcase_t *c) { return !c->real && tu_cplx(c->dt); }
static plm_dtype_t cdtype(const fcase_t *c) { return tu_single(c->dt) ? PLM_COMPLEX64 : PLM_COMPLEX128; }

/* The transform length along FFT axis i. */
static int64_t nfft_of(const fcase_t *c, int i)
{
    return c->nffts[i] ? c->nffts[i] : c->dims[norm_axis(c->axes[i], c->ndim)];
}

/* dims with every FFT axis at its nfft: the transform's shape. */
static void full_shape(const fcase_t *c, int64_t *full)
{
    memcpy(full, c->dims, (size_t)c->ndim * sizeof *full);
    for (int i = 0; i < c->naxes; i++) full[norm_axis(c->axes[i], c->ndim)] = nfft_of(c, i);
}

static void out_shape(const fcase_t *c, int64_t *dimsd)
{
    full_shape(c, dimsd);
    const int r = norm_axis(c->axes[c->naxes - 1], c->ndim);
    if (c->real) dimsd[r] = nfft_of(c, c->naxes - 1) / 2 + 1;
}

static double nfft(const fcase_t *c)
{
    double n = 1;
    for (int i = 0; i < c->naxes; i++) n *= (double)nfft_of(c, i);
    return n;
}

/* The bins rfft keeps once of two, times f. */
static void scale_bins(const fcase_t *c, double complex *a, const int64_t *s, double f)
{
    const int r = norm_axis(c->axes[c->naxes - 1], c->ndim);
    const int64_t n = prod(s, c->ndim), b1 = 1 + (nfft_of(c, c->naxes - 1) - 1) / 2;
    int64_t idx[PLM_MAX_NDIM];
    for (int64_t i = 0; i < n; i++) {
        unflat(i, s, c->ndim, idx);
        if (idx[r] >= 1 && idx[r] < b1) a[i] *= f;
    }
}

static double complex *ref_forward(const fcase_t *c, const double complex *x)
{
    const int nd = c->ndim;
    const int64_t n = prod(c->dims, nd);
    int64_t dimsd[4];
    out_shape(c, dimsd);
    double complex *a = malloc((size_t)(n + 1) * sizeof *a);
    for (int64_t i = 0; i < n; i++) a[i] = clinear(c) ? x[i] : creal(x[i]);
    for (int i = 0; i < c->naxes; i++) {
        const int ax = norm_axis(c->axes[i], nd);
        if (c->ifs[i]) roll(a, c->dims, nd, ax, -(c->dims[ax] / 2));
    }
    int64_t full[4];
    full_shape(c, full);
    double complex *f = resized(a, c->dims, full, nd); /* numpy's s=nffts: crop or pad */
    free(a);
    for (int i = 0; i < c->naxes; i++) dft(f, full, nd, norm_axis(c->axes[i], nd), -1);
    double complex *y = resized(f, full, dimsd, nd);
    free(f);
    if (c->real) scale_bins(c, y, dimsd, sqrt(2.0));
    const int64_t m = prod(dimsd, nd);
    if (c->norm == PLM_FFT_NORM_1_N)
        for (int64_t i = 0; i < m; i++) y[i] /= nfft(c);
    for (int i = 0; i < c->naxes; i++) {
        const int ax = norm_axis(c->axes[i], nd);
        if (c->ffs[i]) roll(y, dimsd, nd, ax, dimsd[ax] / 2);
    }
    return y;
}

/* The exact adjoint (of the real-linear map when the input is real). */
static double complex *ref_adjoint(const fcase_t *c, const double complex *y)
{
    const int nd = c->ndim;
    int64_t dimsd[4];
    out_shape(c, dimsd);
    const int64_t m = prod(dimsd, nd), n = prod(c->dims, nd);
    double complex *b = malloc((size_t)(m + 1) * sizeof *b);
    memcpy(b, y, (size_t)m * sizeof *b);
    for (int i = 0; i < c->naxes; i++) {
        const int ax = norm_axis(c->axes[i], nd);
        if (c->ffs[i]) roll(b, dimsd, nd, ax, -(dimsd[ax] / 2));
    }
    if (c->real) scale_bins(c, b, dimsd, sqrt(2.0));
    int64_t full[4];
    full_shape(c, full);
    double complex *f = resized(b, dimsd, full, nd);
    free(b);
    for (int i = 0; i < c->naxes; i++) dft(f, full, nd, norm_axis(c->axes[i], nd), +1);
    double complex *a = resized(f, full, c->dims, nd);
    free(f);
    for (int64_t i = 0; i < n; i++) {
        if (c->norm == PLM_FFT_NORM_1_N) a[i] /= nfft(c);
        if (!clinear(c)) a[i] = creal(a[i]);
    }
    for (int i = 0; i < c->naxes; i++) {
        const int ax = norm_axis(c->axes[i], nd);
        if (c->ifs[i]) roll(a, c->dims, nd, ax, c->dims[ax] / 2);
    }
    return a;
}

/* ---- the operator's blocks ---------------------------------------------------------------- */

/* This rank's block of a global shape g split along axis: local shape and offset. */
static void block(const int64_t *g, int nd, int axis, int64_t *ls, int64_t *off)
{
    memcpy(ls, g, (size_t)nd * sizeof *ls);
    ls[axis] = tu_split(g[axis], tu_size, tu_rank);
    *off = 0;
    for (int q = 0; q < tu_rank; q++) *off += tu_split(g[axis], tu_size, q);
}

/* An array on layout l holding this rank's block of the global array a (shape g, split along
 * axis). */
static plm_array_t blocks_of(plm_layout_t l, plm_dtype_t dt, const double complex *a, const int64_t *g, int nd,
                             int axis)
{
    plm_array_t x = NULL;
    TU_OK(plm_array_create_from_layout(l, dt, PLM_MEMORY_HOST, NULL, 0, &x));
    int64_t ls[PLM_MAX_NDIM], off = 0, n = 0;
    block(g, nd, axis, ls, &off);
    void *d = NULL;
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_EXPECT(n == prod(ls, nd), "local size %lld, expected %lld", (long long)n, (long long)prod(ls, nd));
    TU_CHECK_OK(plm_array_get_local_write(x, &d));
    for (int64_t i = 0; i < n && i < prod(ls, nd); i++) {
        const double complex v = a[tu_l2g(nd, g, axis, ls, off, i)];
        tu_set(dt, d, i, creal(v), cimag(v));
    }
    TU_CHECK_OK(plm_array_restore_local_write(x, &d));
    return x;
}

/* Compares this rank's block of x with the global want (m elements), relative to max |want|. */
static void check_blocks(plm_const_array_t x, plm_dtype_t dt, const double complex *want, const int64_t *g, int nd,
                         int axis, const char *what)
{
    int64_t ls[PLM_MAX_NDIM], off = 0, n = 0;
    block(g, nd, axis, ls, &off);
    double scale = 0;
    for (int64_t i = 0; i < prod(g, nd); i++) scale = fmax(scale, cabs(want[i]));
    const double tol = (tu_single(dt) ? 2e-5 : 1e-13) * (scale + 1e-300);
    const void *d = NULL;
    TU_CHECK_OK(plm_array_local_size(x, &n));
    TU_CHECK_OK(plm_array_get_local_read(x, &d));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        tu_get(dt, d, i, &re, &im);
        if (!(cabs(re + I * im - want[tu_l2g(nd, g, axis, ls, off, i)]) <= tol)) {
            if (first < 0) first = i;
            bad++;
        }
    }
    TU_CHECK_OK(plm_array_restore_local_read(x, &d));
    TU_EXPECT(bad == 0, "%s: %lld of %lld local values differ (first local %lld, tolerance %g)", what, (long long)bad,
              (long long)n, (long long)first, tol);
}

static double complex *gen(int64_t n, int seed, int real)
{
    double complex *a = malloc((size_t)(n + 1) * sizeof *a);
    for (int64_t i = 0; i < n; i++)
        a[i] = (0.5 + sin(0.7 * (double)i + seed)) + (real ? 0 : I * cos(0.3 * (double)i - seed));
    return a;
}

/* Rounded to the dtype, so the reference starts from the operator's data. */
static void round_to(plm_dtype_t dt, double complex *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double re = creal(a[i]), im = cimag(a[i]);
        tu_round(dt, &re, &im);
        a[i] = re + I * im;
    }
}

static const fcase_t CASES[] = {
    {"3-D all axes", PLM_COMPLEX128, 3, {5, 6, 7}, 3, {0, 1, 2}, 0, PLM_FFT_NORM_NONE, {0}, {0}, 1, {0}},
    {"3-D local axes, 1/n", PLM_COMPLEX128, 3, {5, 6, 7}, 2, {1, 2}, 0, PLM_FFT_NORM_1_N, {0}, {0}, 0, {0}},
    {"3-D axes 0 and 2, shifts", PLM_COMPLEX64, 3, {5, 6, 7}, 2, {0, -1}, 0, PLM_FFT_NORM_NONE, {1, 0}, {0, 1}, 1, {0}},
    {"3-D axes 2 1 0", PLM_COMPLEX128, 3, {5, 6, 7}, 3, {2, 1, 0}, 0, PLM_FFT_NORM_1_N, {0, 1, 1}, {1, 0, 1}, 1, {0}},
    {"3-D real, shifts", PLM_COMPLEX128, 3, {5, 6, 7}, 3, {0, 1, 2}, 1, PLM_FFT_NORM_NONE, {1, 1, 0}, {1, 1, 1}, 1, {0}},
    {"3-D real, axis 1 out", PLM_COMPLEX64, 3, {5, 7, 6}, 2, {0, 1}, 1, PLM_FFT_NORM_1_N, {0, 1}, {1, 1}, 2, {0}},
    {"2-D real, last axis 0", PLM_COMPLEX128, 2, {6, 5}, 2, {1, 0}, 1, PLM_FFT_NORM_1_N, {1, 1}, {1, 1}, 1, {0}},
    {"2-D real, odd last axis 0", PLM_COMPLEX64, 2, {7, 4}, 1, {0}, 1, PLM_FFT_NORM_NONE, {1}, {1}, 1, {0}},
    {"2-D real, even lengths", PLM_COMPLEX128, 2, {6, 8}, 2, {0, 1}, 1, PLM_FFT_NORM_NONE, {0, 0}, {0, 0}, 1, {0}},
    {"2-D real local axis, float64 dtype", PLM_FLOAT64, 2, {3, 5}, 1, {-1}, 1, PLM_FFT_NORM_NONE, {1}, {0}, 0, {0}},
    {"2-D float32 dtype (real input, c2c)", PLM_FLOAT32, 2, {4, 6}, 2, {0, 1}, 0, PLM_FFT_NORM_NONE, {0, 1}, {1, 0}, 1, {0}},
    {"3-D fewer rows than ranks", PLM_COMPLEX128, 3, {2, 3, 4}, 3, {0, 1, 2}, 0, PLM_FFT_NORM_NONE, {0}, {1, 0, 0}, 1, {0}},
    {"4-D axes 0 and 3", PLM_COMPLEX128, 4, {3, 2, 2, 5}, 2, {3, 0}, 0, PLM_FFT_NORM_NONE, {0}, {0}, 1, {0}},
    {"4-D axes 0 1 2", PLM_COMPLEX128, 4, {3, 2, 5, 2}, 3, {0, 1, 2}, 1, PLM_FFT_NORM_NONE, {0}, {0}, 3, {0}},
    /* long strides along axis 0: the FFT there runs in cache-sized chunks (weights on the way) */
    {"3-D chunked along axis 0", PLM_COMPLEX128, 3, {64, 3, 100}, 3, {0, 1, 2}, 0, PLM_FFT_NORM_1_N, {0, 1, 0}, {1, 0, 0}, 1, {0}},
    {"3-D real, chunked, bins in the chunks", PLM_COMPLEX128, 3, {64, 4, 40}, 2, {0, 2}, 1, PLM_FFT_NORM_NONE, {0}, {0}, 1, {0}},
    /* nffts (PyLops' crop or zero pad before each transform), through plm_op_fftnd_plan */
    {"3-D nffts: crop axis 0, pad the others", PLM_COMPLEX128, 3, {5, 6, 7}, 3, {0, 1, 2}, 0, PLM_FFT_NORM_1_N, {0}, {0}, 1, {4, 8, 9}},
    {"3-D nffts: pad axis 0, shifts", PLM_COMPLEX128, 3, {3, 4, 5}, 2, {0, 2}, 0, PLM_FFT_NORM_NONE, {1, 1}, {1, 0}, 1, {6, 3}},
    {"3-D nffts: real, pad and crop", PLM_COMPLEX128, 3, {4, 5, 6}, 3, {0, 1, 2}, 1, PLM_FFT_NORM_NONE, {1, 0, 0}, {0, 1, 0}, 1, {5, 4, 10}},
    {"2-D nffts: real, last axis 0", PLM_COMPLEX64, 2, {6, 5}, 2, {1, 0}, 1, PLM_FFT_NORM_1_N, {1, 0}, {0, 1}, 1, {7, 9}},
    {"2-D nffts: crop a shifted axis 0", PLM_COMPLEX128, 2, {7, 3}, 2, {0, 1}, 0, PLM_FFT_NORM_NONE, {1, 0}, {0, 0}, 1, {4, 3}},
    {"2-D nffts: local axis only", PLM_FLOAT64, 2, {4, 6}, 1, {1}, 1, PLM_FFT_NORM_NONE, {0}, {1}, 0, {11}},
    /* 1-D: the distributed 1-D algorithm on several ranks */
    {"1-D", PLM_COMPLEX128, 1, {12}, 1, {0}, 0, PLM_FFT_NORM_NONE, {0}, {0}, 0, {0}},
    {"1-D prime length", PLM_COMPLEX128, 1, {7}, 1, {0}, 0, PLM_FFT_NORM_1_N, {0}, {0}, 0, {0}},
    {"1-D shifts, 1/n", PLM_COMPLEX64, 1, {10}, 1, {0}, 0, PLM_FFT_NORM_1_N, {1}, {1}, 0, {0}},
    {"1-D real, odd", PLM_COMPLEX128, 1, {9}, 1, {0}, 1, PLM_FFT_NORM_NONE, {0}, {1}, 0, {0}},
    {"1-D real, even, shifted", PLM_COMPLEX128, 1, {16}, 1, {0}, 1, PLM_FFT_NORM_1_N, {1}, {0}, 0, {0}},
    {"1-D fewer entries than ranks", PLM_COMPLEX128, 1, {3}, 1, {0}, 0, PLM_FFT_NORM_NONE, {1}, {0}, 0, {0}},
    {"1-D float32 dtype (real input, c2c)", PLM_FLOAT32, 1, {8}, 1, {0}, 0, PLM_FFT_NORM_NONE, {0}, {0}, 0, {0}},
    {"1-D nffts pad", PLM_COMPLEX128, 1, {6}, 1, {0}, 0, PLM_FFT_NORM_NONE, {1}, {0}, 0, {15}},
    {"1-D nffts crop", PLM_COMPLEX128, 1, {10}, 1, {0}, 0, PLM_FFT_NORM_NONE, {0}, {1}, 0, {6}},
    {"1-D nffts real pad", PLM_COMPLEX128, 1, {5}, 1, {0}, 1, PLM_FFT_NORM_1_N, {0}, {0}, 0, {12}},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))
_Static_assert(NCASES <= 64, "raise MAXCASES");

/* How the operators are made: plm_op_fftnd (-1), plm_op_fftnd_ex with output g_output (0, 1),
 * or plm_op_fftnd_plan with output g_output - 2 (2, 3: estimated, then measured). */
static int g_output = -1;

static int has_nffts(const fcase_t *c)
{
    for (int i = 0; i < c->naxes; i++)
        if (c->nffts[i]) return 1;
    return 0;
}

static plm_status_t make_op(const fcase_t *c, plm_op_t *op)
{
    const double sampling[4] = {0.5, 2, 1, 0.25};
    if (g_output >= 2) {
        int64_t nffts[4];
        for (int i = 0; i < c->naxes; i++) nffts[i] = nfft_of(c, i);
        return plm_op_fftnd_plan(tu_comm, c->dt, c->ndim, c->dims, c->naxes, c->axes, has_nffts(c) ? nffts : NULL,
                                 sampling, c->norm, c->real, c->ifs, c->ffs, (plm_fft_output_t)(g_output - 2),
                                 g_output == 2 ? PLM_FFT_PLANNING_ESTIMATE : PLM_FFT_PLANNING_MEASURE, op);
    }
    if (g_output >= 0)
        return plm_op_fftnd_ex(tu_comm, c->dt, c->ndim, c->dims, c->naxes, c->axes, sampling, c->norm, c->real,
                               c->ifs, c->ffs, (plm_fft_output_t)g_output, op);
    return plm_op_fftnd(tu_comm, c->dt, c->ndim, c->dims, c->naxes, c->axes, sampling, c->norm, c->real, c->ifs,
                        c->ffs, op);
}

/* The axis the case's output is split along under g_output. */
static int out_axis_of(const fcase_t *c)
{
    return g_output == PLM_FFT_OUTPUT_AXIS0 || g_output == 2 + PLM_FFT_OUTPUT_AXIS0 ? 0 : c->out_axis;
}

/* Whether this build has FFTW (without it every constructor returns PLM_ERR_NOT_SUPPORTED). */
static int fft_built(void)
{
    plm_op_t op = NULL;
    const plm_status_t st = make_op(&CASES[0], &op);
    plm_op_destroy(&op);
    TU_EXPECT(st == PLM_SUCCESS || st == PLM_ERR_NOT_SUPPORTED, "plm_op_fftnd: %d %s", (int)st, plm_last_error());
    return st == PLM_SUCCESS;
}

static void check_frequencies(plm_const_op_t op, const fcase_t *c, const char *what)
{
    const double sampling[4] = {0.5, 2, 1, 0.25};
    int64_t dimsd[4];
    out_shape(c, dimsd);
    for (int i = 0; i < c->naxes; i++) {
        const int ax = norm_axis(c->axes[i], c->ndim);
        const int64_t n = nfft_of(c, i), m = dimsd[ax];
        (void)ax;
        double f[256], want[256];
        TU_CHECK_OK(plm_op_fft_frequencies(op, i, m, f));
        for (int64_t j = 0; j < m; j++) {
            const int64_t k = (c->real && i == c->naxes - 1) || j <= (n - 1) / 2 ? j : j - n;
            want[j] = (double)k / ((double)n * sampling[i]);
        }
        for (int64_t j = 0; j < m; j++) {
            const int64_t src = c->ffs[i] ? ((j - m / 2) % m + m) % m : j;
            TU_EXPECT(fabs(f[j] - want[src]) <= 1e-15 * (fabs(want[src]) + 1), "%s: frequency %d[%lld] = %g, want %g",
                      what, i, (long long)j, f[j], want[src]);
        }
        TU_EXPECT(plm_op_fft_frequencies(op, i, m + 1, f) == PLM_ERR_INVALID_ARG, "%s: a wrong n accepted", what);
    }
}

/* The serial references of each case, computed once for all the ways of making it. */
#define MAXCASES 64
static double complex *g_fwd[MAXCASES], *g_adj[MAXCASES];

static void run_case(const fcase_t *c)
{
    const int ci = (int)(c - CASES);
    const int nd = c->ndim;
    const plm_dtype_t dt = cdtype(c);
    plm_op_t op = NULL;
    TU_OK(make_op(c, &op));
    int64_t dimsd[4], got[4] = {0};
    int axis = -1;
    out_shape(c, dimsd);
    TU_CHECK_OK(plm_op_fft_range(op, nd, got, &axis));
    TU_EXPECT(axis == out_axis_of(c), "%s: output axis %d, expected %d", c->name, axis, out_axis_of(c));
    for (int k = 0; k < nd; k++)
        TU_EXPECT(got[k] == dimsd[k], "%s: dimsd[%d] = %lld, expected %lld", c->name, k, (long long)got[k],
                  (long long)dimsd[k]);
    check_frequencies(op, c, c->name);

    const int64_t n = prod(c->dims, nd), m = prod(dimsd, nd);
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(op, &dom));
    TU_OK(plm_op_range(op, &ran));
    char what[200];

    /* Forward: a complex x (its imaginary part dropped by the real transforms). */
    double complex *xg = gen(n, 1, 0), *yg = gen(m, 2, 0);
    round_to(dt, xg, n);
    round_to(dt, yg, m);
    if (!g_fwd[ci]) g_fwd[ci] = ref_forward(c, xg);
    if (!g_adj[ci]) g_adj[ci] = ref_adjoint(c, yg);
    const double complex *want = g_fwd[ci];
    plm_array_t x = blocks_of(dom, dt, xg, c->dims, nd, 0), y = NULL, ax = NULL, ahy = NULL;
    TU_OK(plm_array_create_from_layout(ran, dt, PLM_MEMORY_HOST, NULL, 0, &ax));
    TU_CHECK_OK(plm_op_apply(op, x, ax));
    snprintf(what, sizeof what, "%s forward (output %d)", c->name, g_output);
    check_blocks(ax, dt, want, dimsd, nd, out_axis_of(c), what);

    /* Adjoint. */
    y = blocks_of(ran, dt, yg, dimsd, nd, out_axis_of(c));
    TU_OK(plm_array_create_from_layout(dom, dt, PLM_MEMORY_HOST, NULL, 0, &ahy));
    TU_CHECK_OK(plm_op_apply_adjoint(op, y, ahy));
    want = g_adj[ci];
    snprintf(what, sizeof what, "%s adjoint (output %d)", c->name, g_output);
    check_blocks(ahy, dt, want, c->dims, nd, 0, what);

    /* Dot test, on a real x where the operator is real-linear only (then real parts agree). */
    if (!clinear(c)) {
        plm_array_destroy(&x);
        double complex *xr = gen(n, 5, 1);
        round_to(dt, xr, n);
        x = blocks_of(dom, dt, xr, c->dims, nd, 0);
        free(xr);
        TU_CHECK_OK(plm_op_apply(op, x, ax));
    }
    double yy[2] = {0, 0}, xx[2] = {0, 0};
    TU_CHECK_OK(plm_array_dot(ax, y, 1, &yy[0], &yy[1]));
    TU_CHECK_OK(plm_array_dot(x, ahy, 1, &xx[0], &xx[1]));
    const double tol = (tu_single(dt) ? 1e-4 : 1e-12) * fmax(hypot(yy[0], yy[1]), hypot(xx[0], xx[1]));
    TU_EXPECT(fabs(yy[0] - xx[0]) <= tol && (!clinear(c) || fabs(yy[1] - xx[1]) <= tol),
              "%s: dot test (Ax)^H y = %.12g%+.12gi, x^H (A^H y) = %.12g%+.12gi", c->name, yy[0], yy[1], xx[0], xx[1]);
    /* plm_op_dottest: complex vectors, compared as PyLops' dottest does (real parts when the
     * operator is real-linear only) */
    int passed = 0, cl = -1;
    TU_CHECK_OK(plm_op_clinear(op, &cl));
    TU_EXPECT(cl == clinear(c), "%s: plm_op_clinear %d, expected %d", c->name, cl, clinear(c));
    TU_CHECK_OK(plm_op_dottest(op, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
    TU_EXPECT(passed && (clinear(c) || (yy[1] == 0 && xx[1] == 0)), "%s: plm_op_dottest %g%+gi vs %g%+gi", c->name,
              yy[0], yy[1], xx[0], xx[1]);
    free(xg);
    free(yg);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&ax);
    plm_array_destroy(&ahy);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&op);
}

static void test_fft_vs_serial(void **state)
{
    (void)state;
    /* plm_op_fftnd; plm_op_fftnd_ex with the output along axis 0; plm_op_fftnd_plan estimated
     * with plm_op_fftnd's output, measured with the output along axis 0 */
    if (fft_built())
        for (g_output = -1; g_output <= 3; g_output++)
            for (int i = 0; i < NCASES && g_output != 0; i++) /* 0: plm_op_fftnd's output, as -1 */
                if (g_output >= 2 || !has_nffts(&CASES[i])) run_case(&CASES[i]);
    g_output = -1;
    for (int i = 0; i < NCASES && i < MAXCASES; i++) {
        free(g_fwd[i]);
        free(g_adj[i]);
        g_fwd[i] = g_adj[i] = NULL;
    }
    TU_DONE();
}

/* Applied twice in a row (the cached Work, the plans' tags) and inside a product: the same. */
static void test_fft_reuse_and_compose(void **state)
{
    (void)state;
    if (!fft_built()) {
        TU_DONE();
        return;
    }
    const fcase_t *c = &CASES[0];
    plm_op_t op = NULL, adj = NULL, prod_op = NULL;
    TU_OK(make_op(c, &op));
    TU_OK(plm_op_adjoint(op, &adj));
    TU_OK(plm_op_product(adj, op, &prod_op)); /* F^H F = N I */
    plm_layout_t dom = NULL;
    TU_OK(plm_op_domain(op, &dom));
    const int64_t n = prod(c->dims, c->ndim);
    double complex *xg = gen(n, 3, 0), *want = malloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++) want[i] = xg[i] * nfft(c);
    plm_array_t x = blocks_of(dom, PLM_COMPLEX128, xg, c->dims, c->ndim, 0), z = NULL;
    TU_OK(plm_array_create_from_layout(dom, PLM_COMPLEX128, PLM_MEMORY_HOST, NULL, 0, &z));
    for (int k = 0; k < 2; k++) {
        TU_CHECK_OK(plm_op_apply(prod_op, x, z));
        check_blocks(z, PLM_COMPLEX128, want, c->dims, c->ndim, 0, "F^H F x = N x");
    }
    free(xg);
    free(want);
    plm_array_destroy(&x);
    plm_array_destroy(&z);
    plm_layout_destroy(&dom);
    plm_op_destroy(&prod_op);
    plm_op_destroy(&adj);
    plm_op_destroy(&op);
    TU_DONE();
}

static void test_fft_errors(void **state)
{
    (void)state;
    const int64_t d1[1] = {8}, d3[3] = {4, 5, 6};
    const int a0[1] = {0}, a01[2] = {0, 1}, a11[2] = {1, -2}, a3[1] = {3};
    const double zero[1] = {0};
    const int two[1] = {2};
    plm_op_t op = (plm_op_t)(void *)&tu_fail; /* not NULL: a failing call must clear it */
    const int built = fft_built();
    /* Argument errors come before the FFTW check: the same status in every build. */
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 1, d1, 2, a01, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG); /* more axes than dimensions */
    TU_EXPECT(op == NULL, "out not cleared");
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 2, a11, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG); /* a repeated axis */
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 1, a3, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG); /* axis out of range */
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 1, a0, zero, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG); /* zero sampling */
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, (plm_fft_norm_t)7, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, PLM_FFT_NORM_NONE, 2, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 1, a0, NULL, PLM_FFT_NORM_NONE, 0, two, NULL, &op),
                  PLM_ERR_INVALID_ARG); /* a shift flag of 2 */
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 0, a0, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 1, a0, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, NULL),
                  PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_fftnd_ex(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                                  (plm_fft_output_t)2, &op),
                  PLM_ERR_INVALID_ARG); /* no such output */
    const int64_t nf0[2] = {4, 0};
    TU_EXPECT_ERR(plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, nf0, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                                    PLM_FFT_OUTPUT_AXIS0, PLM_FFT_PLANNING_DEFAULT, &op),
                  PLM_ERR_INVALID_ARG); /* nfft 0 */
    TU_EXPECT_ERR(plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                                    PLM_FFT_OUTPUT_AXIS0, (plm_fft_planning_t)9, &op),
                  PLM_ERR_INVALID_ARG); /* no such planning effort */
    /* Not an FFT operator. */
    plm_op_t id = NULL;
    int64_t dimsd[3];
    int axis = 0;
    double f[4];
    TU_OK(plm_op_identity(PLM_COMPLEX128, 4, &id));
    TU_EXPECT_ERR(plm_op_fft_range(id, 3, dimsd, &axis), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_fft_frequencies(id, 0, 4, f), PLM_ERR_INVALID_ARG);
    plm_op_destroy(&id);
    if (built) {
        TU_OK(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op));
        TU_EXPECT_ERR(plm_op_fft_range(op, 2, dimsd, &axis), PLM_ERR_INVALID_ARG); /* another ndim */
        TU_EXPECT_ERR(plm_op_fft_frequencies(op, 2, 4, f), PLM_ERR_INVALID_ARG);   /* no axis 2 */
        plm_op_destroy(&op);
    } else {
        TU_EXPECT_ERR(plm_op_fftnd(tu_comm, PLM_COMPLEX128, 3, d3, 2, a01, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL, &op),
                      PLM_ERR_NOT_SUPPORTED);
    }
    TU_DONE();
}

/* FFTW wisdom: what a measured operator learnt, exported (the same text on every rank, a
 * buffer too small refused everywhere) and imported back (rank 0's text; garbage refused
 * everywhere). An operator made after the import plans from it. */
static void test_fft_wisdom(void **state)
{
    (void)state;
    const int built = fft_built();
    const int64_t dims[3] = {6, 8, 10};
    const int axes[3] = {0, 1, 2};
    plm_op_t op = NULL;
    if (built)
        TU_OK(plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                                PLM_FFT_OUTPUT_FEWEST_EXCHANGES, PLM_FFT_PLANNING_MEASURE, &op));
    int64_t len = -1;
    TU_CHECK_OK(plm_fft_wisdom_export(tu_comm, NULL, 0, &len));
    TU_EXPECT(built ? len > 0 : len == 0, "wisdom of %lld bytes", (long long)len);
    char *text = calloc((size_t)len + 1, 1);
    int64_t len2 = -1;
    TU_CHECK_OK(plm_fft_wisdom_export(tu_comm, text, len + 1, &len2));
    TU_EXPECT(len2 == len && (!built || strstr(text, "fftw_wisdom")), "exported %lld bytes, then %lld", (long long)len,
              (long long)len2);
    long long lo = len2, hi = len2, sum = 0;
    for (int64_t i = 0; i < len2; i++) sum += (unsigned char)text[i] * (i % 251 + 1);
    long long mn[2] = {lo, sum}, mx[2] = {hi, sum};
    MPI_Allreduce(MPI_IN_PLACE, mn, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    TU_EXPECT(mn[0] == mx[0] && mn[1] == mx[1], "the wisdom differs between ranks");
    if (len > 0) /* one byte short on the last rank only: refused on every rank */
        TU_EXPECT_ERR(plm_fft_wisdom_export(tu_comm, text, tu_rank == tu_size - 1 ? len : len + 1, &len2),
                      PLM_ERR_INVALID_ARG);
    TU_CHECK_OK(plm_fft_wisdom_import(tu_comm, tu_rank == 0 ? text : NULL));
    if (built) {
        TU_EXPECT_ERR(plm_fft_wisdom_import(tu_comm, tu_rank == 0 ? "(fftw-3 not wisdom" : NULL), PLM_ERR_INVALID_ARG);
        /* a second operator of the same problem plans from the wisdom and computes the same */
        plm_op_t again = NULL;
        TU_OK(plm_op_fftnd_plan(tu_comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                                PLM_FFT_OUTPUT_FEWEST_EXCHANGES, PLM_FFT_PLANNING_PATIENT, &again));
        int passed = 0;
        TU_CHECK_OK(plm_op_dottest(again, 1e-12, &passed, NULL, NULL));
        TU_EXPECT(passed, "dot test of an operator planned from wisdom");
        plm_op_destroy(&again);
    }
    TU_EXPECT_ERR(plm_fft_wisdom_import(tu_comm, NULL), PLM_ERR_INVALID_ARG); /* NULL on rank 0 */
    TU_EXPECT_ERR(plm_fft_wisdom_export(tu_comm, NULL, 0, NULL), PLM_ERR_INVALID_ARG);
    free(text);
    plm_op_destroy(&op);
    TU_DONE();
}

/* ---- plm_array_fftshift ------------------------------------------------------------------ */

static void test_fftshift_vs_serial(void **state)
{
    (void)state;
    const plm_dtype_t dts[2] = {PLM_COMPLEX128, PLM_FLOAT32};
    const plm_partition_t parts[2] = {PLM_PARTITION_SCATTER, PLM_PARTITION_BROADCAST};
    for (int c = 0; c < TU_NCASES; c++)
        for (int di = 0; di < 2; di++)
            for (int pi = 0; pi < 2; pi++)
                for (int which = 0; which < 3; which++)
                    for (int inverse = 0; inverse < 2; inverse++) {
                        const tu_case_t *k = &TU_CASES[c];
                        const plm_dtype_t dt = dts[di];
                        const int nd = k->ndim, a = tu_axis(k->axis, nd);
                        /* every axis; the distributed one; the others (or the only one) */
                        int axes[PLM_MAX_NDIM], naxes = 0;
                        if (which == 1) axes[naxes++] = k->axis;
                        if (which == 2)
                            for (int b = 0; b < nd; b++)
                                if (b != a || nd == 1) axes[naxes++] = b;
                        const int64_t n = prod(k->shape, nd);
                        double *g = tu_alloc(n), *want = tu_alloc(n);
                        tu_gen(g, n, c + di, dt, 0);
                        double complex *r = malloc((size_t)n * sizeof *r);
                        for (int64_t i = 0; i < n; i++) r[i] = g[2 * i] + I * g[2 * i + 1];
                        for (int b = 0; b < nd; b++) {
                            int on = which == 0;
                            for (int j = 0; j < naxes; j++) on = on || tu_axis(axes[j], nd) == b;
                            if (on) roll(r, k->shape, nd, b, inverse ? -(k->shape[b] / 2) : k->shape[b] / 2);
                        }
                        for (int64_t i = 0; i < n; i++) {
                            want[2 * i] = creal(r[i]);
                            want[2 * i + 1] = cimag(r[i]);
                        }
                        plm_array_t x = tu_make(nd, k->shape, k->axis, parts[pi], dt, NULL, NULL, g), y = NULL;
                        TU_CHECK_OK(plm_array_fftshift(x, naxes, which ? axes : NULL, inverse, &y));
                        char what[160];
                        snprintf(what, sizeof what, "%s %s %s %s axes %d", inverse ? "ifftshift" : "fftshift", k->name,
                                 tu_dtname(dt), tu_partname(parts[pi]), which);
                        if (y) tu_check_local(y, want, 0, what);
                        plm_array_destroy(&x);
                        plm_array_destroy(&y);
                        free(r);
                        free(g);
                        free(want);
                    }
    TU_DONE();
}

/* A custom split (the default one reversed over the ranks: empty blocks first at 4 ranks). */
static void test_fftshift_custom_split(void **state)
{
    (void)state;
    const int64_t s[2] = {7, 3};
    int64_t rows[TU_MAX_RANKS * 2];
    tu_reversed_rows(2, s, 0, tu_size, rows);
    double *g = tu_alloc(21), *want = tu_alloc(21);
    tu_gen(g, 21, 9, PLM_COMPLEX128, 0);
    for (int inverse = 0; inverse < 2; inverse++) {
        double complex r[21];
        for (int i = 0; i < 21; i++) r[i] = g[2 * i] + I * g[2 * i + 1];
        roll(r, s, 2, 0, inverse ? -3 : 3);
        for (int i = 0; i < 21; i++) {
            want[2 * i] = creal(r[i]);
            want[2 * i + 1] = cimag(r[i]);
        }
        plm_array_t x = tu_make(2, s, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, rows, NULL, g), y = NULL;
        const int axes[1] = {0};
        TU_CHECK_OK(plm_array_fftshift(x, 1, axes, inverse, &y));
        if (y) tu_check_local(y, want, 0, inverse ? "ifftshift, custom split" : "fftshift, custom split");
        plm_array_destroy(&x);
        plm_array_destroy(&y);
    }
    free(g);
    free(want);
    TU_DONE();
}

static void test_fftshift_errors(void **state)
{
    (void)state;
    const int64_t s[2] = {5, 4};
    plm_array_t x = tu_make(2, s, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, NULL, NULL, NULL), y = SENTINEL;
    const int rep[2] = {0, -2}, out[1] = {2};
    TU_EXPECT_ERR(plm_array_fftshift(x, 2, rep, 0, &y), PLM_ERR_INVALID_ARG);
    TU_EXPECT(y == NULL, "out not cleared");
    TU_EXPECT_ERR(plm_array_fftshift(x, 1, out, 0, &y), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_array_fftshift(x, 1, rep, 2, &y), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_array_fftshift(x, 1, NULL, 0, &y), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_array_fftshift(x, 1, rep, 0, NULL), PLM_ERR_INVALID_ARG);
    /* fftshift then ifftshift is the identity, along an axis of even and of odd length */
    double *g = tu_alloc(20);
    tu_gen(g, 20, 4, PLM_COMPLEX128, 0);
    tu_fill(x, g);
    plm_array_t z = NULL;
    TU_CHECK_OK(plm_array_fftshift(x, 0, NULL, 0, &y));
    TU_CHECK_OK(plm_array_fftshift(y, 0, NULL, 1, &z));
    tu_check_local(z, g, 0, "ifftshift(fftshift(x))");
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_array_destroy(&x);
    free(g);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_fft_vs_serial),     TU_TEST(test_fft_reuse_and_compose), TU_TEST(test_fft_errors),
        TU_TEST(test_fft_wisdom),
        TU_TEST(test_fftshift_vs_serial), TU_TEST(test_fftshift_custom_split), TU_TEST(test_fftshift_errors),
    };
    return plm_run_group_tests_mpi(tests);
}
