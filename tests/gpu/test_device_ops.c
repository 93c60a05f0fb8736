/* Every operator and solver of the library on device arrays, natively: each is applied (forward
 * and adjoint) or run on device arrays and on host arrays with the same data, and the results
 * must agree (the host path is checked against serial references by the CPU suite). Every
 * operator must say it runs natively on device memory (plm_op_native), except a host callback;
 * and a device solve must make no host twin (the library's twin counter stays put). Usage:
 * test_device_ops [mpi_staged|mpi_cuda_aware|nccl|auto]; exits 77 without a device or when the
 * backend cannot run here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include "pylopsmpi.h"

long long plm_test_twins(void); /* twins_hook.cpp: host twins made so far */

static int fails = 0, rank = 0, nranks = 1;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "[rank %d] %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            ++fails;                                                        \
        }                                                                   \
    } while (0)
#define OK(call) CHECK((call) == PLM_SUCCESS, "%s: %s", #call, plm_last_error())

static int is_cplx(plm_dtype_t t) { return t == PLM_COMPLEX64 || t == PLM_COMPLEX128; }
static int is_single(plm_dtype_t t) { return t == PLM_FLOAT32 || t == PLM_COMPLEX64; }
static double tol_of(plm_dtype_t t) { return is_single(t) ? 2e-4 : 1e-11; }

/* Sets an array (host or device) from a deterministic host vector of its local size. */
static void fill_seeded(plm_array_t x, plm_dtype_t t, int seed)
{
    int64_t n = 0, off = 0;
    plm_memory_t m;
    plm_array_local_size(x, &n);
    plm_array_local_offset(x, &off);
    plm_array_memory(x, &m);
    const size_t es = plm_dtype_size(t), bytes = (size_t)(n > 0 ? n : 1) * es;
    char *h = malloc(bytes);
    for (int64_t i = 0; i < n; ++i) {
        const double re = sin(0.37 * (double)(off + i) + seed), im = cos(0.21 * (double)(off + i) - seed);
        switch (t) {
        case PLM_FLOAT32: ((float *)h)[i] = (float)re; break;
        case PLM_FLOAT64: ((double *)h)[i] = re; break;
        case PLM_COMPLEX64: ((float *)h)[2 * i] = (float)re; ((float *)h)[2 * i + 1] = (float)im; break;
        case PLM_COMPLEX128: ((double *)h)[2 * i] = re; ((double *)h)[2 * i + 1] = im; break;
        }
    }
    void *d = NULL;
    OK(plm_array_get_local_write(x, &d));
    if (m == PLM_MEMORY_HOST) {
        memcpy(d, h, (size_t)n * es);
    } else {
        /* On the array's stream, so the library's work on it is ordered after the copy (a plain
         * cudaMemcpy may return before the data lands: host callbacks then read zeros, stencils
         * send stale ghost rows - the H200 run's failures, reproduced by the emulated device) */
        plm_comm_t c = NULL;
        void *s = NULL;
        OK(plm_array_get_comm(x, &c));
        OK(plm_comm_get_stream(c, &s));
        CHECK(cudaMemcpyAsync(d, h, (size_t)n * es, cudaMemcpyHostToDevice, (cudaStream_t)s) == cudaSuccess,
              "cudaMemcpyAsync");
    }
    OK(plm_array_restore_local_write(x, &d));
    free(h);
}

/* The local data of x in host memory (malloc'ed), waiting for the array's stream. */
static void *local_of(plm_const_array_t x, plm_dtype_t t, int64_t *n)
{
    plm_memory_t m;
    plm_array_memory(x, &m);
    plm_array_local_size(x, n);
    const size_t bytes = (size_t)(*n > 0 ? *n : 1) * plm_dtype_size(t);
    void *h = malloc(bytes);
    const void *d = NULL;
    OK(plm_array_get_local_read(x, &d)); /* synchronises the communicator's stream */
    if (m == PLM_MEMORY_HOST) memcpy(h, d, (size_t)*n * plm_dtype_size(t));
    else CHECK(cudaMemcpy(h, d, (size_t)*n * plm_dtype_size(t), cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy");
    OK(plm_array_restore_local_read(x, &d));
    return h;
}

static double component(plm_dtype_t t, const void *p, int64_t k)
{
    return is_single(t) ? (double)((const float *)p)[k] : ((const double *)p)[k];
}

/* Host and device results, relative to the largest value (every rank checks its block). */
static void compare(plm_const_array_t h, plm_const_array_t d, plm_dtype_t t, double tol, const char *what)
{
    int64_t n = 0, m = 0;
    void *a = local_of(h, t, &n), *b = local_of(d, t, &m);
    CHECK(n == m, "%s: local sizes %lld and %lld", what, (long long)n, (long long)m);
    const int64_t k = (is_cplx(t) ? 2 : 1) * n;
    double scale = 0;
    for (int64_t i = 0; i < k; ++i) scale = fmax(scale, fabs(component(t, a, i)));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < k; ++i)
        if (!(fabs(component(t, a, i) - component(t, b, i)) <= tol * (scale + 1e-300))) {
            if (first < 0) first = i;
            ++bad;
        }
    CHECK(bad == 0, "%s: %lld of %lld differ; first [%lld] host %.17g device %.17g", what, (long long)bad,
          (long long)k, (long long)first, first >= 0 ? component(t, a, first) : 0.0,
          first >= 0 ? component(t, b, first) : 0.0);
    free(a);
    free(b);
}

/* A device array on layout l wrapping cudaMalloc'ed memory `offset` bytes past the start
 * (aligned for the real type only when offset is a real's size: what operators handing
 * buffers to cuFFT must copy through their own); *mem gets the allocation to free. */
static plm_array_t wrapped_device(plm_layout_t l, plm_dtype_t t, size_t offset, void **mem)
{
    int64_t n = 0;
    OK(plm_layout_local_size(l, &n));
    const size_t bytes = (size_t)n * plm_dtype_size(t);
    *mem = NULL;
    CHECK(cudaMalloc(mem, bytes + offset + 16) == cudaSuccess, "cudaMalloc");
    plm_array_t a = NULL;
    OK(plm_array_create_from_layout(l, t, PLM_MEMORY_DEVICE, n ? (char *)*mem + offset : NULL, (int64_t)(n ? bytes : 0),
                                    &a));
    return a;
}

/* Applies op (forward and adjoint) on host and on device arrays and compares; checks that op
 * runs natively on device memory unless `staged`. offset != 0: the device arrays wrap device
 * memory that many bytes past an allocation's start. Consumes op. */
static void check_op_at(plm_op_t op, plm_dtype_t t, int staged, size_t offset, const char *what)
{
    int native = -1, nd = 1, nr = 1;
    OK(plm_op_native(op, PLM_MEMORY_DEVICE, &native));
    CHECK(native == !staged, "%s: plm_op_native(DEVICE) = %d", what, native);
    OK(plm_op_parts(op, &nd, &nr));
    plm_array_t hx[4] = {0}, dx[4] = {0}, hy[4] = {0}, dy[4] = {0};
    void *mem[8] = {0};
    for (int i = 0; i < nd; ++i) {
        plm_layout_t l = NULL;
        OK(plm_op_domain_part(op, i, &l));
        OK(plm_array_create_from_layout(l, t, PLM_MEMORY_HOST, NULL, 0, &hx[i]));
        if (offset) dx[i] = wrapped_device(l, t, offset, &mem[i]);
        else OK(plm_array_create_from_layout(l, t, PLM_MEMORY_DEVICE, NULL, 0, &dx[i]));
        plm_layout_destroy(&l);
        fill_seeded(hx[i], t, 1 + i);
        fill_seeded(dx[i], t, 1 + i);
    }
    for (int i = 0; i < nr; ++i) {
        plm_layout_t l = NULL;
        OK(plm_op_range_part(op, i, &l));
        OK(plm_array_create_from_layout(l, t, PLM_MEMORY_HOST, NULL, 0, &hy[i]));
        if (offset) dy[i] = wrapped_device(l, t, offset, &mem[4 + i]);
        else OK(plm_array_create_from_layout(l, t, PLM_MEMORY_DEVICE, NULL, 0, &dy[i]));
        plm_layout_destroy(&l);
    }
    plm_stacked_t shx, sdx, shy, sdy;
    OK(plm_stacked_create(nd, hx, &shx));
    OK(plm_stacked_create(nd, dx, &sdx));
    OK(plm_stacked_create(nr, hy, &shy));
    OK(plm_stacked_create(nr, dy, &sdy));
    OK(plm_op_apply_stacked(op, shx, shy)); /* a device callback stages host data: not counted */
    const long long twins = plm_test_twins();
    OK(plm_op_apply_stacked(op, sdx, sdy));
    if (!staged) CHECK(plm_test_twins() == twins, "%s: %lld host twins made", what, plm_test_twins() - twins);
    char buf[160];
    for (int i = 0; i < nr; ++i) {
        snprintf(buf, sizeof buf, "%s forward [%d]", what, i);
        compare(hy[i], dy[i], t, tol_of(t), buf);
    }
    OK(plm_op_apply_adjoint_stacked(op, shy, shx));
    OK(plm_op_apply_adjoint_stacked(op, sdy, sdx));
    for (int i = 0; i < nd; ++i) {
        snprintf(buf, sizeof buf, "%s adjoint [%d]", what, i);
        compare(hx[i], dx[i], t, tol_of(t), buf);
    }
    plm_stacked_destroy(&shx);
    plm_stacked_destroy(&sdx);
    plm_stacked_destroy(&shy);
    plm_stacked_destroy(&sdy);
    for (int i = 0; i < 4; ++i) {
        plm_array_destroy(&hx[i]);
        plm_array_destroy(&dx[i]);
        plm_array_destroy(&hy[i]);
        plm_array_destroy(&dy[i]);
    }
    for (int i = 0; i < 8; ++i)
        if (mem[i]) cudaFree(mem[i]);
    plm_op_destroy(&op);
}

static void check_op(plm_op_t op, plm_dtype_t t, int staged, const char *what)
{
    check_op_at(op, t, staged, 0, what);
}

/* ---- callbacks: out = 2 in, on the host or on the device ---------------------------------- */

static int host_double(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dt,
                       plm_memory_t mem)
{
    (void)ctx;
    (void)n_in;
    if (mem != PLM_MEMORY_HOST || dt != PLM_FLOAT64) return 1;
    for (int64_t i = 0; i < n_out; ++i) ((double *)out)[i] = 2 * ((const double *)in)[i];
    return 0;
}

/* Device: out = in, a device-to-device copy queued on the stream it is given (checks that in is
 * device memory). */
static int device_copy(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dt, void *stream)
{
    (void)ctx;
    (void)n_in;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, in) != cudaSuccess || a.type != cudaMemoryTypeDevice) return 2;
    return cudaMemcpyAsync(out, in, (size_t)n_out * plm_dtype_size(dt), cudaMemcpyDeviceToDevice,
                           (cudaStream_t)stream) == cudaSuccess ? 0 : 3;
}

/* ---- the operators ------------------------------------------------------------------------- */

static plm_op_t dense(plm_dtype_t t, int64_t rows, int64_t cols, int seed)
{
    const size_t es = plm_dtype_size(t);
    char *a = malloc((size_t)(rows * cols) * es * 2 + 1);
    for (int64_t i = 0; i < rows * cols * (is_cplx(t) ? 2 : 1); ++i) {
        const double v = sin(1.3 * (double)i + seed) + (i % (cols + 1) == 0 ? 2.0 : 0.0);
        if (is_single(t)) ((float *)a)[i] = (float)v;
        else ((double *)a)[i] = v;
    }
    plm_op_t op = NULL;
    OK(plm_op_dense(t, rows, cols, a, rows * cols * (int64_t)es, seed % 2, 0, &op));
    free(a);
    return op;
}

static plm_op_t blockdiag_of(plm_comm_t comm, int n, plm_op_t *parts)
{
    plm_op_t op = NULL;
    OK(plm_op_blockdiag(comm, n, (const plm_const_op_t *)parts, 0, NULL, &op));
    for (int i = 0; i < n; ++i) plm_op_destroy(&parts[i]);
    return op;
}

static void test_local_and_stacks(plm_comm_t comm, plm_dtype_t t)
{
    /* dense, diagonal, identity and zero blocks on the diagonal */
    plm_op_t p[4] = {dense(t, 7 + rank, 5, rank), NULL, NULL, NULL};
    double d[12];
    float f[12];
    for (int i = 0; i < 12; ++i) d[i] = f[i] = (float)(0.5 + 0.1 * i);
    const plm_dtype_t real_t = is_cplx(t) ? PLM_FLOAT64 : t;
    OK(plm_op_diagonal(real_t, 6, is_single(t) ? (void *)f : (void *)d, 6 * (int64_t)plm_dtype_size(real_t), &p[1]));
    if (is_cplx(t)) { /* a complex diagonal: 3 complex values from the 6 doubles or floats */
        plm_op_destroy(&p[1]);
        OK(plm_op_diagonal(t, 3, is_single(t) ? (void *)f : (void *)d, 3 * (int64_t)plm_dtype_size(t), &p[1]));
    }
    OK(plm_op_identity(t, 4, &p[2]));
    OK(plm_op_zero(t, 2, 3, &p[3]));
    check_op(blockdiag_of(comm, 4, p), t, 0, "blockdiag of dense, diagonal, identity and zero blocks");
    /* vstack (adjoint: allreduce) and hstack (forward: allreduce), broadcast */
    plm_op_t v = dense(t, 3 + rank, 6, 7), op = NULL;
    OK(plm_op_vstack(comm, 1, (const plm_const_op_t *)&v, &op));
    check_op(op, t, 0, "vstack");
    plm_op_destroy(&v);
    v = dense(t, 6, 2 + rank, 8);
    OK(plm_op_hstack(comm, 1, (const plm_const_op_t *)&v, &op));
    check_op(op, t, 0, "hstack");
    plm_op_destroy(&v);
    v = dense(t, 5, 4, 9); /* the same on every rank */
    OK(plm_op_broadcast(comm, v, &op));
    check_op(op, t, 0, "broadcast");
    plm_op_destroy(&v);
}

/* A shell operator (plm_op_shell): y = 2 A x through the library's own collectives on the
 * arrays it is lent (device arrays here: it must stay on them). */
static int shell_matvec(void *ctx, plm_const_array_t x, plm_array_t y)
{
    plm_memory_t m;
    if (plm_array_memory(x, &m) != PLM_SUCCESS) return 1;
    if (plm_op_apply((plm_const_op_t)ctx, x, y) != PLM_SUCCESS) return 2;
    return plm_array_scale(y, 2.0, 0.0) == PLM_SUCCESS ? 0 : 3;
}
static int shell_rmatvec(void *ctx, plm_const_array_t y, plm_array_t x)
{
    if (plm_op_apply_adjoint((plm_const_op_t)ctx, y, x) != PLM_SUCCESS) return 2;
    return plm_array_scale(x, 2.0, 0.0) == PLM_SUCCESS ? 0 : 3;
}

static void test_composites(plm_comm_t comm, plm_dtype_t t)
{
    plm_op_t a[1] = {dense(t, 6, 6, 3)}, b[1] = {dense(t, 6, 6, 4)};
    plm_op_t A = blockdiag_of(comm, 1, a), B = blockdiag_of(comm, 1, b), op = NULL;
    OK(plm_op_sum(A, B, &op));
    check_op(op, t, 0, "sum");
    OK(plm_op_product(A, B, &op));
    check_op(op, t, 0, "product");
    OK(plm_op_scale(A, 1.5, is_cplx(t) ? -0.5 : 0.0, &op));
    check_op(op, t, 0, "scale");
    OK(plm_op_transpose(A, &op));
    check_op(op, t, 0, "transpose");
    OK(plm_op_conj(A, &op));
    check_op(op, t, 0, "conj");
    OK(plm_op_power(A, 3, &op));
    check_op(op, t, 0, "power");
    OK(plm_op_adjoint(B, &op));
    check_op(op, t, 0, "adjoint");
    plm_op_t parts[2] = {A, B};
    OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)parts, &op));
    check_op(op, t, 0, "stacked blockdiag");
    OK(plm_op_stacked_vstack(2, (const plm_const_op_t *)parts, &op));
    check_op(op, t, 0, "stacked vstack");
    plm_layout_t dl = NULL, rl = NULL;
    OK(plm_op_domain(A, &dl));
    OK(plm_op_range(A, &rl));
    OK(plm_op_shell(dl, rl, t, shell_matvec, shell_rmatvec, A, NULL, &op));
    plm_layout_destroy(&dl);
    plm_layout_destroy(&rl);
    check_op(op, t, 0, "shell (2 A through library calls)");
    plm_op_destroy(&A);
    plm_op_destroy(&B);
}

static void test_stencils(plm_comm_t comm, plm_dtype_t t)
{
    const int64_t dims2[2] = {29, 17}, dims3[3] = {11, 6, 9}, dims1[1] = {61};
    plm_op_t op = NULL;
    for (int kind = 0; kind < 3; ++kind) {
        char what[96];
        snprintf(what, sizeof what, "first derivative kind %d axis 0", kind);
        OK(plm_op_first_derivative(comm, t, 2, dims2, -1, 0, 0.5, (plm_deriv_kind_t)kind, 5, 1, &op));
        check_op(op, t, 0, what);
        snprintf(what, sizeof what, "first derivative kind %d axis 1", kind);
        OK(plm_op_first_derivative(comm, t, 2, dims2, -1, 1, 0.5, (plm_deriv_kind_t)kind, 3, 0, &op));
        check_op(op, t, 0, what);
        snprintf(what, sizeof what, "second derivative kind %d", kind);
        OK(plm_op_second_derivative(comm, t, 1, dims1, -1, 0, 2.0, (plm_deriv_kind_t)kind, 1, &op));
        check_op(op, t, 0, what);
    }
    const int axes[3] = {0, 1, 2};
    const double w[3] = {1.0, 0.5, 2.0};
    OK(plm_op_laplacian(comm, t, 3, dims3, -1, 3, axes, w, NULL, PLM_DERIV_CENTERED, 0, &op));
    check_op(op, t, 0, "laplacian 3 axes");
    OK(plm_op_laplacian(comm, t, 2, dims2, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 1, &op));
    check_op(op, t, 0, "laplacian 2 axes");
    OK(plm_op_gradient(comm, t, 3, dims3, -1, NULL, PLM_DERIV_CENTERED, 0, &op));
    check_op(op, t, 0, "gradient");
    const int64_t hd[2] = {8, 3 * (int64_t)nranks}, hw = 1;
    OK(plm_op_halo(comm, t, 2, hd, NULL, 1, &hw, &op));
    check_op(op, t, 0, "halo");
}

static void test_matmul(plm_comm_t comm, plm_dtype_t t)
{
    const int64_t n = 13, k = 9, m = 7;
    for (int kind = 0; kind < 2; ++kind) {
        int64_t ab[4];
        OK(plm_matmul_blocks((plm_matmul_kind_t)kind, nranks, rank, 0, n, k, m, NULL, ab, NULL, NULL));
        const int64_t rows = ab[1] - ab[0], cols = ab[3] - ab[2];
        const size_t es = plm_dtype_size(t);
        char *a = malloc((size_t)(rows * cols + 1) * es);
        for (int64_t i = 0; i < rows * cols * (is_cplx(t) ? 2 : 1); ++i) {
            const double v = cos(0.7 * (double)i + rank);
            if (is_single(t)) ((float *)a)[i] = (float)v;
            else ((double *)a)[i] = v;
        }
        plm_op_t op = NULL;
        OK(plm_op_matrix_mult(comm, (plm_matmul_kind_t)kind, 0, t, n, k, m, a, rows * cols * (int64_t)es, &op));
        check_op(op, t, 0, kind ? "matmul SUMMA" : "matmul block");
        free(a);
    }
}

/* Fredholm1 (uneven slices: rank r owns r + 1; with and without G^H kept) for every dtype, and
 * MDC (complex G of t's precision; two-sided with an odd nt, one-sided conj with an even nt,
 * and on wrapped device memory aligned for a real only) for real t: natively on the device
 * (cuBLAS batched gemms, cuFFT). */
static void test_signal(plm_comm_t comm, plm_dtype_t t)
{
    const size_t es = plm_dtype_size(t);
    const int64_t nsl = rank + 1, nx = 3, ny = 4, nz = 2;
    const int64_t room = (nsl > 5 ? nsl : 5) * nx * ny; /* elements, Fredholm1's slices or MDC's bins */
    char *g = calloc((size_t)room, 2 * es);
    for (int64_t i = 0; i < nsl * nx * ny * (is_cplx(t) ? 2 : 1); ++i) {
        const double v = cos(0.7 * (double)i + rank);
        if (is_single(t)) ((float *)g)[i] = (float)v;
        else ((double *)g)[i] = v;
    }
    plm_op_t op = NULL;
    OK(plm_op_fredholm1(comm, t, nsl, nx, ny, nz, g, nsl * nx * ny * (int64_t)es, 1, 1, &op));
    check_op(op, t, 0, "fredholm1 (save_gt)");
    OK(plm_op_fredholm1(comm, t, nsl, nx, ny, nz, g, nsl * nx * ny * (int64_t)es, 0, 0, &op));
    check_op(op, t, 0, "fredholm1");
    if (!is_cplx(t)) {
        const plm_dtype_t gt = is_single(t) ? PLM_COMPLEX64 : PLM_COMPLEX128;
        const int64_t nfreq = 5, nf = nfreq / nranks + (rank < nfreq % nranks);
        const int64_t gbytes = nf * nx * ny * (int64_t)plm_dtype_size(gt);
        /* nt, twosided, conj, save_gt, wrapped offset */
        const int cases[4][5] = {{9, 1, 0, 1, 0}, {8, 0, 1, 0, 0}, {9, 1, 0, 0, 1}, {8, 0, 1, 1, 1}};
        for (int c = 0; c < 4; ++c) {
            const plm_status_t st = plm_op_mdc(comm, gt, cases[c][0], 2, nfreq, nf, nx, ny, 0.004, 1.0, cases[c][1],
                                               cases[c][2], 0, cases[c][3], g, gbytes, &op);
            if (st == PLM_ERR_NOT_SUPPORTED) break; /* a build without FFTW has no MDC */
            CHECK(st == PLM_SUCCESS, "plm_op_mdc: %s", plm_last_error());
            char what[64];
            snprintf(what, sizeof what, "mdc (nt %d, twosided %d, conj %d%s)", cases[c][0], cases[c][1], cases[c][2],
                     cases[c][4] ? ", wrapped memory" : "");
            if (st == PLM_SUCCESS) check_op_at(op, t, 0, cases[c][4] ? es : 0, what);
        }
    }
    free(g);
}

/* The distributed FFT (complex t: the operator's dtype) natively on the device (cuFFT, the
 * transposes through the device backend): c2c over every axis, real transforms with the r2c
 * axis last, inner and distributed, shifts and both norms, c2c passes batched by column, one
 * on wrapped device memory aligned for a real only, and a real pass along an inner axis of an
 * odd row of reals (staged through the host before the 0.4 pipeline, native since). */
static void test_fft(plm_comm_t comm, plm_dtype_t t)
{
    struct {
        int ndim;
        int64_t dims[3];
        int naxes, axes[3], real, ifs[3], ffs[3];
        plm_fft_norm_t norm;
        int staged, wrapped;
        plm_fft_output_t output;
    } cases[] = {
        {3, {6, 5, 4}, 3, {0, 1, 2}, 0, {0, 0, 0}, {0, 0, 0}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {2, {7, 6, 0}, 1, {1}, 1, {0}, {1}, PLM_FFT_NORM_1_N, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {3, {5, 6, 4}, 2, {2, 0}, 1, {1, 1}, {1, 0}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {3, {4, 6, 3}, 2, {0, 1}, 1, {0, 1}, {0, 0}, PLM_FFT_NORM_1_N, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {3, {9, 8, 2}, 1, {1}, 0, {1}, {1}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {3, {6, 5, 4}, 2, {1, 0}, 0, {0, 1}, {1, 0}, PLM_FFT_NORM_1_N, 0, 1, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        {3, {4, 3, 5}, 2, {0, 1}, 1, {0, 0}, {0, 0}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_FEWEST_EXCHANGES},
        /* the output back in rows of axis 0: the second (reverse) transpose on device buffers */
        {3, {6, 5, 4}, 3, {0, 1, 2}, 0, {0, 0, 0}, {0, 0, 0}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_AXIS0},
        {3, {5, 6, 4}, 2, {2, 0}, 1, {1, 1}, {1, 0}, PLM_FFT_NORM_NONE, 0, 0, PLM_FFT_OUTPUT_AXIS0},
    };
    const size_t half = plm_dtype_size(t) / 2;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        plm_op_t op = NULL;
        const plm_status_t st =
            plm_op_fftnd_ex(comm, t, cases[c].ndim, cases[c].dims, cases[c].naxes, cases[c].axes, NULL, cases[c].norm,
                            cases[c].real, cases[c].ifs, cases[c].ffs, cases[c].output, &op);
        if (st == PLM_ERR_NOT_SUPPORTED) return; /* a build without FFTW has no FFT operator */
        CHECK(st == PLM_SUCCESS, "plm_op_fftnd case %zu: %s", c, plm_last_error());
        if (st != PLM_SUCCESS) continue;
        char what[96];
        snprintf(what, sizeof what, "fftnd case %zu%s%s%s", c, cases[c].staged ? " (staged)" : "",
                 cases[c].wrapped ? " (wrapped memory)" : "", cases[c].output ? " (output along axis 0)" : "");
        check_op_at(op, t, cases[c].staged, cases[c].wrapped ? half : 0, what);
    }
}

static void test_callbacks(plm_comm_t comm)
{
    plm_op_t cb = NULL, parts[1];
    OK(plm_op_callback(PLM_FLOAT64, 5, 5, host_double, host_double, NULL, NULL, &cb));
    parts[0] = cb;
    check_op(blockdiag_of(comm, 1, parts), PLM_FLOAT64, 1, "host callback (staged)");
    OK(plm_op_callback_device(PLM_FLOAT64, 6, 6, device_copy, device_copy, NULL, NULL, &cb));
    parts[0] = cb;
    plm_op_t op = blockdiag_of(comm, 1, parts);
    int native = 0;
    OK(plm_op_native(op, PLM_MEMORY_HOST, &native));
    CHECK(native == 0, "a device callback stages host data");
    check_op(op, PLM_FLOAT64, 0, "device callback");
}

/* ---- solvers: the same solve on host and on device arrays, no host twin ---------------------- */

enum { CG, CGLS, ISTA_SOFT_AUTO, FISTA_HALF_AUTO, ISTA_HARD_DECAY, FISTA_SOFT_TOL, NSOLVERS };

/* cg_iters: fewer than the problem's dimension, so that CG stops before its residuals reach
 * round-off, where host and device (which sum in another order) part ways. */
static plm_status_t run_solver(plm_op_t op, plm_array_t y, plm_array_t x, int solver, int cg_iters,
                               plm_solver_info_t info)
{
    static const double decay[15] = {1, 1, 0.9, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6, 0.6, 0.5, 0.5, 0.4, 0.4, 0.3};
    switch (solver) {
    case CG: return plm_solve_cg(op, y, x, cg_iters, 0.0, info);
    case CGLS: return plm_solve_cgls(op, y, x, 15, 0.1, 0.0, info);
    /* alpha 0: the step from a power iteration on device arrays */
    case ISTA_SOFT_AUTO: return plm_solve_ista(op, y, x, 15, 0.01, 0.0, PLM_THRESH_SOFT, NULL, 0, 0.0, info);
    case FISTA_HALF_AUTO: return plm_solve_fista(op, y, x, 15, 0.01, 0.0, PLM_THRESH_HALF, NULL, 0, 0.0, info);
    /* a fixed step (on L the iterates are the host's to the bit: element-wise kernels and stencils
     * are); FISTA with tol stops by tolerance on the masked blockdiag (real dtypes) */
    case ISTA_HARD_DECAY: return plm_solve_ista(op, y, x, 15, 0.02, 0.01, PLM_THRESH_HARD, decay, 1, 0.0, info);
    default: return plm_solve_fista(op, y, x, 40, 0.01, 0.01, PLM_THRESH_SOFT, NULL, 0, 1e-2, info);
    }
}

static void solve_both(plm_op_t op, plm_dtype_t t, int solver, int cg_iters, const char *what)
{
    plm_array_t hx, dx, hy, dy;
    OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &hx));
    OK(plm_op_new_domain_array(op, PLM_MEMORY_DEVICE, &dx));
    OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &hy));
    OK(plm_op_new_range_array(op, PLM_MEMORY_DEVICE, &dy));
    fill_seeded(hy, t, 5);
    fill_seeded(dy, t, 5);
    OK(plm_array_fill(hx, 0, 0));
    OK(plm_array_fill(dx, 0, 0));
    plm_solver_info_t hi, di;
    OK(plm_solver_info_create(&hi));
    OK(plm_solver_info_create(&di));
    const long long twins = plm_test_twins();
    for (int dev = 0; dev < 2; ++dev) {
        plm_array_t x = dev ? dx : hx, y = dev ? dy : hy;
        const plm_status_t st = run_solver(op, y, x, solver, cg_iters, dev ? di : hi);
        CHECK(st == PLM_SUCCESS, "%s on %s arrays: %s", what, dev ? "device" : "host", plm_last_error());
        if (dev) CHECK(plm_test_twins() == twins, "%s: the device solve made %lld host twins", what,
                       plm_test_twins() - twins);
    }
    int64_t ih = 0, id = 0;
    OK(plm_solver_info_iterations(hi, &ih));
    OK(plm_solver_info_iterations(di, &id));
    CHECK(ih == id, "%s: %lld iterations on host, %lld on device", what, (long long)ih, (long long)id);
    plm_stop_reason_t sh = PLM_STOP_NONE, sd = PLM_STOP_NONE;
    OK(plm_solver_info_reason(hi, &sh));
    OK(plm_solver_info_reason(di, &sd));
    CHECK(sh == sd, "%s: stop reason %d on host, %d on device", what, (int)sh, (int)sd);
    /* the cost histories: reductions on device sum in another order, so relative to the
     * history's largest value */
    double ch[64], cd[64], scale = 0;
    int64_t nh = 0, nd = 0;
    OK(plm_solver_info_cost(hi, ch, 64, &nh));
    OK(plm_solver_info_cost(di, cd, 64, &nd));
    CHECK(nh == nd, "%s: %lld costs on host, %lld on device", what, (long long)nh, (long long)nd);
    for (int64_t k = 0; k < nh && k < 64; ++k) scale = fmax(scale, fabs(ch[k]));
    for (int64_t k = 0; k < nh && k < nd && k < 64; ++k)
        CHECK(fabs(ch[k] - cd[k]) <= (is_single(t) ? 1e-4 : 1e-10) * scale,
              "%s: cost[%lld] host %.17g device %.17g", what, (long long)k, ch[k], cd[k]);
    compare(hx, dx, t, is_single(t) ? 1e-3 : 1e-9, what);
    plm_solver_info_destroy(&hi);
    plm_solver_info_destroy(&di);
    plm_array_destroy(&hx);
    plm_array_destroy(&dx);
    plm_array_destroy(&hy);
    plm_array_destroy(&dy);
}

static void test_solvers(plm_comm_t comm, plm_dtype_t t)
{
    static const char *names[NSOLVERS] = {"CG", "CGLS", "ISTA (soft, automatic step)", "FISTA (half, automatic step)",
                                          "ISTA (hard, decay, monitorres)", "FISTA (soft, tol)"};
    char what[128];
    const int64_t dims[2] = {24, 11};
    const int axes[2] = {0, 1};
    plm_op_t lap = NULL, id = NULL, shift = NULL, d = NULL;
    OK(plm_op_laplacian(comm, t, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &lap));
    /* CG on the SPD 4 I - L (L negative semi-definite) */
    plm_op_t blocks[1];
    int64_t nloc = 0;
    plm_layout_t l = NULL;
    OK(plm_op_domain(lap, &l));
    OK(plm_layout_local_size(l, &nloc));
    plm_layout_destroy(&l);
    OK(plm_op_identity(t, nloc, &blocks[0]));
    id = blockdiag_of(comm, 1, blocks);
    OK(plm_op_scale(id, 4.0, 0.0, &shift));
    OK(plm_op_difference(shift, lap, &d));
    solve_both(d, t, CG, 15, "CG on 4 I - L");
    for (int s = CGLS; s < NSOLVERS; ++s) {
        snprintf(what, sizeof what, "%s on L", names[s]);
        solve_both(lap, t, s, 15, what);
    }
    /* mask groups (ranks by parity) solving each their own problem: a partial per rank and group */
    int *mask = malloc(sizeof(int) * (size_t)nranks);
    for (int q = 0; q < nranks; ++q) mask[q] = q % 2;
    plm_op_t m = NULL, sq[1] = {dense(t, 6, 6, 11 + rank % 2)}, msq = NULL, mt = NULL, spd = NULL;
    blocks[0] = dense(t, 9, 6, 3 + rank % 2);
    OK(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)blocks, nranks, mask, &m));
    OK(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)sq, nranks, mask, &msq));
    OK(plm_op_adjoint(msq, &mt));
    OK(plm_op_product(mt, msq, &spd));
    solve_both(spd, t, CG, 4, "CG on masked A^H A"); /* 6 x 6 blocks: 4 iterations */
    for (int s = CGLS; s < NSOLVERS; ++s) {
        if (s == ISTA_HARD_DECAY) continue; /* its fixed step is for L */
        snprintf(what, sizeof what, "%s on a masked blockdiag", names[s]);
        solve_both(m, t, s, 15, what);
    }
    free(mask);
    plm_op_destroy(&blocks[0]);
    plm_op_destroy(&sq[0]);
    plm_op_destroy(&m);
    plm_op_destroy(&msq);
    plm_op_destroy(&mt);
    plm_op_destroy(&spd);
    plm_op_destroy(&lap);
    plm_op_destroy(&id);
    plm_op_destroy(&shift);
    plm_op_destroy(&d);
}

/* The proximal layer on device arrays against the same calls on host arrays (real dtypes):
 * Box and L1 proxes and values, L2 with the Laplacian (CG and CGLS, its value and gradient),
 * ProximalGradient (FISTA, tol) and ADMML2; no host twin is made. */
static void test_proximal(plm_comm_t comm, plm_dtype_t t)
{
    if (is_cplx(t)) return;
    const int64_t dims[2] = {24, 11};
    const int axes[2] = {0, 1};
    const double tol = is_single(t) ? 1e-3 : 1e-9, eps = 0.5;
    char what[128];
    plm_op_t lap = NULL;
    OK(plm_op_laplacian(comm, t, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &lap));
    plm_array_t x[2], y[2], o[2], z[2];
    plm_prox_t box = NULL, l1 = NULL, l2[2][2];
    double v[2][4];
    OK(plm_prox_create_box(-0.3, 0.4, &box));
    OK(plm_prox_create_l1(0.2, &l1));
    for (int dev = 0; dev < 2; ++dev) {
        const plm_memory_t m = dev ? PLM_MEMORY_DEVICE : PLM_MEMORY_HOST;
        OK(plm_op_new_domain_array(lap, m, &x[dev]));
        OK(plm_op_new_domain_array(lap, m, &o[dev]));
        OK(plm_op_new_range_array(lap, m, &y[dev]));
        OK(plm_op_new_range_array(lap, m, &z[dev]));
        fill_seeded(x[dev], t, 2);
        fill_seeded(y[dev], t, 3);
        for (int cg = 0; cg < 2; ++cg)
            OK(plm_prox_create_l2(lap, y[dev], NULL, 0.7, 1.0, 1, 6, 0.0, x[dev], 1, cg ? PLM_L2_CG : PLM_L2_CGLS,
                                  &l2[dev][cg]));
    }
    const long long twins = plm_test_twins();
    plm_prox_t simple[2] = {box, l1};
    for (int k = 0; k < 2; ++k) {
        for (int dev = 0; dev < 2; ++dev) {
            OK(plm_prox_apply(simple[k], x[dev], 0.5, o[dev]));
            OK(plm_prox_value(simple[k], x[dev], &v[dev][k]));
        }
        snprintf(what, sizeof what, "%s prox, %s", k ? "L1" : "Box", is_single(t) ? "float32" : "float64");
        compare(o[0], o[1], t, tol, what);
        CHECK(fabs(v[0][k] - v[1][k]) <= tol * (fabs(v[0][k]) + 1), "%s: value host %.17g device %.17g", what,
              v[0][k], v[1][k]);
    }
    for (int cg = 0; cg < 2; ++cg) {
        for (int dev = 0; dev < 2; ++dev) OK(plm_prox_apply(l2[dev][cg], x[dev], 0.5, o[dev]));
        snprintf(what, sizeof what, "L2 prox (%s), %s", cg ? "CG" : "CGLS", is_single(t) ? "float32" : "float64");
        compare(o[0], o[1], t, tol, what);
    }
    for (int dev = 0; dev < 2; ++dev) {
        OK(plm_prox_grad(l2[dev][0], x[dev], o[dev]));
        OK(plm_prox_value(l2[dev][0], x[dev], &v[dev][2]));
    }
    compare(o[0], o[1], t, tol, "L2 gradient");
    CHECK(fabs(v[0][2] - v[1][2]) <= tol * fabs(v[0][2]), "L2 value host %.17g device %.17g", v[0][2], v[1][2]);
    int64_t its[2] = {0, 0};
    for (int dev = 0; dev < 2; ++dev) {
        plm_solver_info_t info = NULL;
        OK(plm_solver_info_create(&info));
        OK(plm_array_fill(o[dev], 0, 0));
        OK(plm_solve_proximal_gradient(l2[dev][0], l1, o[dev], 0.05, &eps, 1, 1.0, 12, PLM_ACCEL_FISTA, 1e-12, info));
        OK(plm_solver_info_iterations(info, &its[dev]));
        plm_solver_info_destroy(&info);
    }
    CHECK(its[0] == its[1], "ProximalGradient: %lld iterations on host, %lld on device", (long long)its[0],
          (long long)its[1]);
    compare(o[0], o[1], t, tol, "ProximalGradient");
    for (int dev = 0; dev < 2; ++dev) {
        OK(plm_array_fill(o[dev], 0, 0));
        OK(plm_solve_admml2(l1, lap, y[dev], lap, o[dev], z[dev], 0, 1.0, 5, 0, 4, 0.0, NULL));
    }
    compare(o[0], o[1], t, tol, "ADMML2 x");
    compare(z[0], z[1], t, tol, "ADMML2 z");
    CHECK(plm_test_twins() == twins, "the proximal layer made %lld host twins on device arrays",
          plm_test_twins() - twins);
    for (int dev = 0; dev < 2; ++dev) {
        plm_array_destroy(&x[dev]);
        plm_array_destroy(&y[dev]);
        plm_array_destroy(&o[dev]);
        plm_array_destroy(&z[dev]);
        plm_prox_destroy(&l2[dev][0]);
        plm_prox_destroy(&l2[dev][1]);
    }
    plm_prox_destroy(&box);
    plm_prox_destroy(&l1);
    plm_op_destroy(&lap);
}

static plm_backend_t parse_backend(const char *s)
{
    if (!s || !strcmp(s, "auto")) return PLM_BACKEND_AUTO;
    if (!strcmp(s, "mpi_staged")) return PLM_BACKEND_MPI_STAGED;
    if (!strcmp(s, "mpi_cuda_aware")) return PLM_BACKEND_MPI_CUDA_AWARE;
    if (!strcmp(s, "nccl")) return PLM_BACKEND_NCCL;
    return (plm_backend_t)-1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int have = 0;
    plm_memory_available(PLM_MEMORY_DEVICE, &have);
    const plm_backend_t want = parse_backend(argc > 1 ? argv[1] : NULL);
    int usable = have && (int)want >= 0;
    if (usable && want != PLM_BACKEND_AUTO) plm_backend_available(want, &usable);
    if (usable && want == PLM_BACKEND_MPI_CUDA_AWARE && getenv("PLM_TEST_REQUIRE_CUDA_AWARE")) {
        plm_comm_t probe = NULL;
        int aware = 0;
        plm_cuda_aware_source_t src;
        plm_comm_create(MPI_COMM_WORLD, NULL, &probe);
        plm_comm_get_cuda_aware(probe, &aware, &src);
        plm_comm_destroy(&probe);
        usable = aware;
    }
    int all_usable = 0;
    MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_usable) {
        if (rank == 0) printf("test_device_ops %s: skipped (no device, or backend not built)\n", argc > 1 ? argv[1] : "auto");
        MPI_Finalize();
        return 77;
    }
    plm_comm_config_t cfg = NULL;
    plm_comm_config_create(&cfg);
    plm_comm_config_set_backend(cfg, want);
    if (want == PLM_BACKEND_MPI_CUDA_AWARE) plm_comm_config_set_cuda_aware(cfg, 1);
    plm_comm_t comm = NULL;
    const plm_status_t st = plm_comm_create(MPI_COMM_WORLD, cfg, &comm);
    plm_comm_config_destroy(&cfg);
    if (st != PLM_SUCCESS) {
        const int skip = want == PLM_BACKEND_NCCL && st == PLM_ERR_NCCL && strstr(plm_last_error(), "share");
        if (rank == 0) printf("test_device_ops: comm_create: %s\n", plm_last_error());
        MPI_Finalize();
        return skip ? 77 : 1;
    }
    const plm_dtype_t types[] = {PLM_FLOAT64, PLM_FLOAT32, PLM_COMPLEX128, PLM_COMPLEX64};
    const int ntypes = getenv("PLM_TEST_QUICK") ? 1 : 4;
    for (int i = 0; i < ntypes; ++i) {
        test_local_and_stacks(comm, types[i]);
        test_composites(comm, types[i]);
        test_stencils(comm, types[i]);
        test_matmul(comm, types[i]);
        test_signal(comm, types[i]);
        if (types[i] == PLM_COMPLEX128 || types[i] == PLM_COMPLEX64) test_fft(comm, types[i]);
        test_solvers(comm, types[i]);
        test_proximal(comm, types[i]);
    }
    test_callbacks(comm);
    plm_backend_t got;
    OK(plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &got));
    plm_comm_destroy(&comm);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_device_ops %s on %d rank(s): %s (%d failed checks)\n", plm_backend_name(got), nranks,
                          total ? "FAILED" : "passed", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
