/* Device arrays on one device backend, against the same operations on host arrays computed in
 * this test: data movement (set_global, asarray, duplicate, ghost cells, redistribute, gather
 * and scatter) must match bitwise, math (element-wise, dot, norms) to a few ulps, and an
 * operator apply and a CGLS solve to 1e-10. Also a wrapped user device pointer, the stream
 * API, an agreed out-of-memory device allocation and a healthy communicator at the end. Usage: test_device [mpi_staged|mpi_cuda_aware|nccl|auto]; exits 77 without a device or
 * when the backend cannot run here (NCCL needs one GPU per rank). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include "pylopsmpi.h"

static int fails = 0, rank = 0, nranks = 1;

#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "[rank %d] %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                            \
            fprintf(stderr, "\n");                                   \
            ++fails;                                                 \
        }                                                            \
    } while (0)
#define OK(call) CHECK((call) == PLM_SUCCESS, "%s: %s", #call, plm_last_error())

static const plm_dtype_t kTypes[] = {PLM_FLOAT32, PLM_FLOAT64, PLM_COMPLEX64, PLM_COMPLEX128};

static int is_cplx(plm_dtype_t t) { return t == PLM_COMPLEX64 || t == PLM_COMPLEX128; }
static int is_single(plm_dtype_t t) { return t == PLM_FLOAT32 || t == PLM_COMPLEX64; }

/* Element i of a global test vector, as (re, im); special values when edge is set. */
static void value(int64_t i, int edge, double *re, double *im)
{
    *re = sin(0.37 * (double)i + 0.1) * (1.0 + (double)(i % 7));
    *im = cos(0.11 * (double)i) - 0.5;
    if (!edge) return;
    if (i == 3) *re = NAN;
    if (i == 5) *re = INFINITY;
    if (i == 6) *im = -INFINITY;
    if (i == 8) *re = 1e30;
    if (i == 9) *re = 1e-30;
}

/* n elements of dtype t in host memory. */
static void *make_global(plm_dtype_t t, int64_t n, int edge, int seed)
{
    char *g = malloc((size_t)(n > 0 ? n : 1) * plm_dtype_size(t));
    for (int64_t i = 0; i < n; ++i) {
        double re, im;
        value(i + seed, edge, &re, &im);
        switch (t) {
        case PLM_FLOAT32: ((float *)g)[i] = (float)re; break;
        case PLM_FLOAT64: ((double *)g)[i] = re; break;
        case PLM_COMPLEX64: ((float *)g)[2 * i] = (float)re; ((float *)g)[2 * i + 1] = (float)im; break;
        case PLM_COMPLEX128: ((double *)g)[2 * i] = re; ((double *)g)[2 * i + 1] = im; break;
        }
    }
    return g;
}

/* The stream comm's device work is queued on. */
static cudaStream_t stream_of(plm_comm_t comm)
{
    void *s = NULL;
    OK(plm_comm_get_stream(comm, &s));
    return (cudaStream_t)s;
}

/* Copies bytes of host memory to device memory the library reads next, on comm's stream: the
 * library's work is then ordered after the copy. (A plain cudaMemcpy from pageable memory may
 * return before the data lands - "the DMA to final destination may not have completed" - and
 * the library's non-blocking stream is not ordered after the legacy default stream: on an
 * H200 with mpi_staged at 2 ranks, the staging copies read such buffers early, and BROADCAST
 * vectors and stencil ghost rows came out wrong. The emulated device reproduces it.) */
static void upload(plm_comm_t comm, void *d, const void *h, size_t bytes)
{
    if (bytes) CHECK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream_of(comm)) == cudaSuccess,
                     "cudaMemcpyAsync");
}

/* A device copy of n host elements (cudaFree it), ordered before comm's later work. */
static void *to_device(plm_comm_t comm, const void *h, size_t bytes)
{
    void *d = NULL;
    CHECK(cudaMalloc(&d, bytes ? bytes : 1) == cudaSuccess, "cudaMalloc");
    upload(comm, d, h, bytes);
    return d;
}

/* Real parts (and imaginary) of n elements as doubles. */
static double part(plm_dtype_t t, const void *p, int64_t k)
{
    return is_single(t) ? (double)((const float *)p)[k] : ((const double *)p)[k];
}

/* a and b (n elements of t) agree: bitwise when tol is 0, else within tol relative (scaled by
 * max(1, |a|)); NaN matches NaN and infinities match exactly. */
static int close_arrays(plm_dtype_t t, int64_t n, const void *a, const void *b, double tol, const char *what)
{
    const int64_t m = is_cplx(t) ? 2 * n : n;
    if (tol == 0) {
        if (n > 0 && memcmp(a, b, (size_t)n * plm_dtype_size(t)) != 0) {
            CHECK(0, "%s: data differ (dtype %d, %lld elements)", what, (int)t, (long long)n);
            return 0;
        }
        return 1;
    }
    for (int64_t k = 0; k < m; ++k) {
        const double x = part(t, a, k), y = part(t, b, k);
        if (isnan(x) && isnan(y)) continue;
        const int bad = isinf(x) || isinf(y) ? x != y : fabs(x - y) > tol * fmax(1.0, fabs(x));
        if (bad) {
            CHECK(0, "%s: element %lld: host %.17g, device %.17g", what, (long long)k, x, y);
            return 0;
        }
    }
    return 1;
}

static int close_values(double a, double b, double tol)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= tol * fmax(1.0, fabs(a));
}

/* Outputs the library wrote to device memory are queued on the communicator's stream: wait for
 * it before reading them on another (here the legacy default) stream. */
static void sync_comm(plm_const_array_t x)
{
    plm_comm_t c;
    void *s = NULL;
    plm_array_get_comm(x, &c);
    OK(plm_comm_get_stream(c, &s));
    CHECK(cudaStreamSynchronize((cudaStream_t)s) == cudaSuccess, "cudaStreamSynchronize");
}

/* The global array of x into host memory (n elements). */
static void *global_of(plm_const_array_t x, plm_dtype_t t, int64_t n)
{
    plm_memory_t m;
    plm_array_memory(x, &m);
    const size_t bytes = (size_t)(n > 0 ? n : 1) * plm_dtype_size(t);
    void *h = malloc(bytes);
    if (m == PLM_MEMORY_HOST) {
        OK(plm_array_asarray(x, 0, h, n * (int64_t)plm_dtype_size(t)));
        return h;
    }
    void *d = NULL;
    cudaMalloc(&d, bytes);
    OK(plm_array_asarray(x, 0, d, n * (int64_t)plm_dtype_size(t)));
    sync_comm(x);
    cudaMemcpy(h, d, (size_t)n * plm_dtype_size(t), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h;
}

static void compare(plm_const_array_t h, plm_const_array_t d, plm_dtype_t t, int64_t n, double tol, const char *what)
{
    void *a = global_of(h, t, n), *b = global_of(d, t, n);
    close_arrays(t, n, a, b, tol, what);
    free(a);
    free(b);
}

/* A host array and a device array with the same data, 2-D [n, 3] split along axis. */
static void make_pair(plm_comm_t comm, plm_dtype_t t, int64_t n, int axis, int edge, int seed, plm_array_t *h,
                      plm_array_t *d)
{
    const int64_t shape[2] = {n, 3};
    OK(plm_array_create(comm, 2, shape, axis, PLM_PARTITION_SCATTER, t, PLM_MEMORY_HOST, h));
    OK(plm_array_create(comm, 2, shape, axis, PLM_PARTITION_SCATTER, t, PLM_MEMORY_DEVICE, d));
    void *g = make_global(t, 3 * n, edge, seed);
    void *gd = to_device(comm, g, (size_t)(3 * n) * plm_dtype_size(t));
    OK(plm_array_set_global(*h, g, 3 * n * (int64_t)plm_dtype_size(t)));
    OK(plm_array_set_global(*d, gd, 3 * n * (int64_t)plm_dtype_size(t)));
    cudaFree(gd);
    free(g);
}

static void test_array_ops(plm_comm_t comm, plm_dtype_t t, int64_t n, int edge)
{
    const double tol = is_single(t) ? 2e-6 : 1e-14, sum_tol = is_single(t) ? 1e-5 : 1e-12;
    const int64_t total = 3 * n;
    char what[128];
    snprintf(what, sizeof what, "dtype %d n %lld edge %d", (int)t, (long long)n, edge);
    plm_array_t hx, dx, hy, dy, hz, dz;
    make_pair(comm, t, n, 0, edge, 0, &hx, &dx);
    make_pair(comm, t, n, 0, 0, 17, &hy, &dy);
    compare(hx, dx, t, total, 0, "set_global/asarray");

    OK(plm_array_duplicate(hx, &hz));
    OK(plm_array_duplicate(dx, &dz));
    compare(hz, dz, t, total, 0, "duplicate");
    OK(plm_array_add(hx, hy, hz));
    OK(plm_array_add(dx, dy, dz));
    compare(hz, dz, t, total, tol, "add");
    OK(plm_array_sub(hx, hy, hz));
    OK(plm_array_sub(dx, dy, dz));
    compare(hz, dz, t, total, tol, "sub");
    OK(plm_array_mul(hx, hy, hz));
    OK(plm_array_mul(dx, dy, dz));
    compare(hz, dz, t, total, tol, "mul");
    OK(plm_array_conj(hx, hz));
    OK(plm_array_conj(dx, dz));
    compare(hz, dz, t, total, 0, "conj");
    OK(plm_array_copy(hx, hz));
    OK(plm_array_copy(dx, dz));
    OK(plm_array_scale(hz, 0.5, is_cplx(t) ? -2.0 : 0.0));
    OK(plm_array_scale(dz, 0.5, is_cplx(t) ? -2.0 : 0.0));
    compare(hz, dz, t, total, tol, "scale");
    OK(plm_array_scale(hz, 0.0, 0.0)); /* zeros over NaN and Inf */
    OK(plm_array_scale(dz, 0.0, 0.0));
    compare(hz, dz, t, total, 0, "scale by 0");
    OK(plm_array_axpby(2.0, 0.0, hx, -1.0, 0.0, hy));
    OK(plm_array_axpby(2.0, 0.0, dx, -1.0, 0.0, dy));
    compare(hy, dy, t, total, tol, "axpby");
    OK(plm_array_fill(hz, 1.5, is_cplx(t) ? 0.25 : 0.0));
    OK(plm_array_fill(dz, 1.5, is_cplx(t) ? 0.25 : 0.0));
    compare(hz, dz, t, total, 0, "fill");

    for (int conj = 0; conj < 2; ++conj) {
        double hre = 0, him = 0, dre = 0, dim = 0;
        OK(plm_array_dot(hx, hy, conj, &hre, is_cplx(t) ? &him : NULL));
        OK(plm_array_dot(dx, dy, conj, &dre, is_cplx(t) ? &dim : NULL));
        CHECK(close_values(hre, dre, sum_tol) && close_values(him, dim, sum_tol), "%s dot(conj %d): host %g%+gi, device %g%+gi",
              what, conj, hre, him, dre, dim);
    }
    const double ords[] = {0, 1, 2, 3, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof ords / sizeof ords[0]; ++k) {
        double a = 0, b = 0;
        OK(plm_array_norm(hx, ords[k], &a));
        OK(plm_array_norm(dx, ords[k], &b));
        CHECK(close_values(a, b, sum_tol), "%s norm(%g): host %.17g, device %.17g", what, ords[k], a, b);
        for (int ax = 0; ax < 2; ++ax) {
            const int64_t m = ax == 0 ? 3 : n;
            double *ha = calloc((size_t)m + 1, sizeof(double)), *da = calloc((size_t)m + 1, sizeof(double));
            OK(plm_array_norm_axis(hx, ords[k], ax, ha, m));
            OK(plm_array_norm_axis(dx, ords[k], ax, da, m));
            for (int64_t i = 0; i < m; ++i)
                CHECK(close_values(ha[i], da[i], sum_tol), "%s norm_axis(%g, %d)[%lld]: host %g, device %g", what,
                      ords[k], ax, (long long)i, ha[i], da[i]);
            free(ha);
            free(da);
        }
    }

    /* ghost cells: one slice each side, where the neighbours hold that much */
    int64_t local[2], gshape[2];
    plm_array_local_shape(hx, local);
    int can = local[0] >= 1, all = 0;
    MPI_Allreduce(&can, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all) {
        OK(plm_array_ghost_shape(hx, 1, 1, gshape));
        const int64_t gn = gshape[0] * gshape[1];
        const size_t bytes = (size_t)(gn > 0 ? gn : 1) * plm_dtype_size(t);
        void *hg = malloc(bytes), *dg = NULL, *back = malloc(bytes);
        cudaMalloc(&dg, bytes);
        OK(plm_array_add_ghost_cells(hx, 1, 1, hg, gn * (int64_t)plm_dtype_size(t)));
        OK(plm_array_add_ghost_cells(dx, 1, 1, dg, gn * (int64_t)plm_dtype_size(t)));
        sync_comm(dx);
        cudaMemcpy(back, dg, (size_t)gn * plm_dtype_size(t), cudaMemcpyDeviceToHost);
        close_arrays(t, gn, hg, back, 0, "add_ghost_cells");
        free(hg);
        free(back);
        cudaFree(dg);
    }

    /* redistribute to axis 1, gather to the last rank, scatter back from it */
    plm_array_t hr, dr;
    OK(plm_array_redistribute(hx, 1, &hr));
    OK(plm_array_redistribute(dx, 1, &dr));
    compare(hr, dr, t, total, 0, "redistribute");
    const int root = nranks - 1;
    const size_t gbytes = (size_t)(total > 0 ? total : 1) * plm_dtype_size(t);
    void *hgat = malloc(gbytes), *dgat = malloc(gbytes);
    OK(plm_array_gather_to(hx, root, rank == root ? hgat : NULL, rank == root ? total * (int64_t)plm_dtype_size(t) : 0));
    OK(plm_array_gather_to(dx, root, rank == root ? dgat : NULL, rank == root ? total * (int64_t)plm_dtype_size(t) : 0));
    if (rank == root) close_arrays(t, total, hgat, dgat, 0, "gather_to");
    OK(plm_array_scatter_from(hz, root, rank == root ? hgat : NULL, rank == root ? total * (int64_t)plm_dtype_size(t) : 0));
    OK(plm_array_scatter_from(dz, root, rank == root ? dgat : NULL, rank == root ? total * (int64_t)plm_dtype_size(t) : 0));
    compare(hz, dz, t, total, 0, "scatter_from");
    free(hgat);
    free(dgat);

    plm_array_destroy(&hr);
    plm_array_destroy(&dr);
    plm_array_destroy(&hx);
    plm_array_destroy(&dx);
    plm_array_destroy(&hy);
    plm_array_destroy(&dy);
    plm_array_destroy(&hz);
    plm_array_destroy(&dz);
}

/* BROADCAST device arrays: restore_local_write broadcasts rank 0's data (each rank wrote its
 * own), then a fill; every rank must hold rank 0's values bitwise. */
static void test_broadcast(plm_comm_t comm, plm_dtype_t t, int64_t n)
{
    plm_array_t x = NULL;
    const int64_t shape[1] = {n};
    OK(plm_array_create(comm, 1, shape, 0, PLM_PARTITION_BROADCAST, t, PLM_MEMORY_DEVICE, &x));
    const size_t bytes = (size_t)n * plm_dtype_size(t);
    void *mine = make_global(t, n, 0, 7 + rank), *want = make_global(t, n, 0, 7);
    void *d = NULL;
    OK(plm_array_get_local_write(x, &d));
    upload(comm, d, mine, bytes);
    OK(plm_array_restore_local_write(x, &d));
    void *got = global_of(x, t, n);
    close_arrays(t, n, want, got, 0, "BROADCAST restore_local_write (rank 0's data)");
    free(got);
    OK(plm_array_fill(x, rank == 0 ? 2.5 : -1.0, 0.0));
    got = global_of(x, t, n);
    for (int64_t i = 0; i < n; ++i) {
        const double v = is_single(t) ? (double)((float *)got)[(is_cplx(t) ? 2 : 1) * i]
                                      : ((double *)got)[(is_cplx(t) ? 2 : 1) * i];
        CHECK(v == 2.5, "BROADCAST fill: [%lld] = %g, rank 0 filled 2.5", (long long)i, v);
        if (v != 2.5) break;
    }
    free(got);
    free(mine);
    free(want);
    plm_array_destroy(&x);
}

/* BlockDiag of per-rank dense blocks: apply, adjoint and CGLS on device arrays against host. */
static void test_operator(plm_comm_t comm)
{
    const int64_t rows = 7 + rank, cols = 5 + (rank % 2);
    double *a = malloc((size_t)(rows * cols) * sizeof(double));
    for (int64_t i = 0; i < rows * cols; ++i) a[i] = sin(1.3 * (double)i + rank) + (i % (cols + 1) == 0 ? 3.0 : 0.0);
    plm_op_t local, op;
    OK(plm_op_dense(PLM_FLOAT64, rows, cols, a, rows * cols * (int64_t)sizeof(double), 0, 0, &local));
    plm_const_op_t parts[1] = {local};
    OK(plm_op_blockdiag(comm, 1, parts, 0, NULL, &op));
    plm_array_t hx, dx, hy, dy;
    OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &hx));
    OK(plm_op_new_domain_array(op, PLM_MEMORY_DEVICE, &dx));
    OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &hy));
    OK(plm_op_new_range_array(op, PLM_MEMORY_DEVICE, &dy));
    OK(plm_array_fill(hx, 1.0, 0.0));
    OK(plm_array_fill(dx, 1.0, 0.0));
    OK(plm_op_apply(op, hx, hy));
    OK(plm_op_apply(op, dx, dy));
    int64_t ny = 0, nx = 0;
    plm_layout_t lay;
    OK(plm_op_range(op, &lay));
    plm_layout_destroy(&lay);
    int64_t s = rows, c = cols;
    MPI_Allreduce(&s, &ny, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&c, &nx, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    compare(hy, dy, PLM_FLOAT64, ny, 1e-14, "blockdiag apply");
    OK(plm_op_apply_adjoint(op, hy, hx));
    OK(plm_op_apply_adjoint(op, dy, dx));
    compare(hx, dx, PLM_FLOAT64, nx, 1e-14, "blockdiag adjoint");
    OK(plm_array_fill(hx, 0.0, 0.0));
    OK(plm_array_fill(dx, 0.0, 0.0));
    OK(plm_solve_cgls(op, hy, hx, 30, 0.0, 0.0, NULL));
    OK(plm_solve_cgls(op, dy, dx, 30, 0.0, 0.0, NULL));
    compare(hx, dx, PLM_FLOAT64, nx, 1e-10, "cgls");
    plm_array_destroy(&hx);
    plm_array_destroy(&dx);
    plm_array_destroy(&hy);
    plm_array_destroy(&dy);
    plm_op_destroy(&op);
    plm_op_destroy(&local);
    free(a);

    /* an operator without a device path (a stencil): host twins, same result */
    const int64_t dims[1] = {53};
    OK(plm_op_first_derivative(comm, PLM_FLOAT64, 1, dims, -1, 0, 0.5, PLM_DERIV_CENTERED, 5, 1, &op));
    OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, &hx));
    OK(plm_op_new_domain_array(op, PLM_MEMORY_DEVICE, &dx));
    OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, &hy));
    OK(plm_op_new_range_array(op, PLM_MEMORY_DEVICE, &dy));
    void *g = make_global(PLM_FLOAT64, dims[0], 0, 3), *gd = to_device(comm, g, (size_t)dims[0] * sizeof(double));
    OK(plm_array_set_global(hx, g, dims[0] * (int64_t)sizeof(double)));
    OK(plm_array_set_global(dx, gd, dims[0] * (int64_t)sizeof(double)));
    OK(plm_op_apply(op, hx, hy));
    OK(plm_op_apply(op, dx, dy));
    compare(hy, dy, PLM_FLOAT64, dims[0], 0, "first derivative");
    OK(plm_op_apply_adjoint(op, hy, hx));
    OK(plm_op_apply_adjoint(op, dy, dx));
    compare(hx, dx, PLM_FLOAT64, dims[0], 0, "first derivative adjoint");
    cudaFree(gd);
    free(g);
    plm_array_destroy(&hx);
    plm_array_destroy(&dx);
    plm_array_destroy(&hy);
    plm_array_destroy(&dy);
    plm_op_destroy(&op);
}

/* A wrapped device pointer is used in place; the stream API orders work on a user stream. */
static void test_wrap_and_stream(plm_comm_t comm)
{
    const int64_t n = 10 * nranks, mine = 10;
    double *buf = NULL;
    cudaMalloc((void **)&buf, (size_t)mine * sizeof(double));
    int64_t shapes[64];
    for (int r = 0; r < nranks && r < 64; ++r) shapes[r] = mine;
    plm_array_t x;
    OK(plm_array_create_ex(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_DEVICE, nranks, shapes, 0,
                           NULL, buf, mine * (int64_t)sizeof(double), &x));
    const void *p = NULL;
    OK(plm_array_get_local_read(x, &p));
    CHECK(p == buf, "a wrapped device pointer must be used in place");
    OK(plm_array_restore_local_read(x, &p));

    void *own = NULL;
    OK(plm_comm_get_stream(comm, &own));
    CHECK(own != NULL, "the library's stream");
    cudaStream_t user;
    cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking);
    OK(plm_comm_set_stream(comm, user));
    void *now = NULL;
    OK(plm_comm_get_stream(comm, &now));
    CHECK(now == (void *)user, "set_stream");
    OK(plm_array_fill(x, 2.0, 0.0));
    double norm = 0;
    OK(plm_array_norm(x, 1, &norm));
    CHECK(norm == 2.0 * (double)n, "norm on a user stream: %g", norm);
    /* work queued on the user stream before the switch is done before work after it */
    OK(plm_array_fill(x, 3.0, 0.0));
    OK(plm_comm_set_stream(comm, NULL));
    OK(plm_comm_get_stream(comm, &now));
    CHECK(now == own, "set_stream(NULL) goes back to the library's stream");
    OK(plm_array_norm(x, 1, &norm));
    CHECK(norm == 3.0 * (double)n, "norm after switching streams: %g", norm);
    cudaStreamDestroy(user);
    /* the device: node-local rank modulo the visible devices */
    int dev = -2, ndev = 0, local = 0;
    OK(plm_comm_get_device(comm, &dev));
    cudaGetDeviceCount(&ndev);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    CHECK(ndev > 0 && dev == local % ndev, "device %d, node-local rank %d, %d devices", dev, local, ndev);
    /* a host pointer is not device memory of this device */
    double host_buf[10];
    plm_array_t bad = NULL;
    CHECK(plm_array_create_ex(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_DEVICE, nranks, shapes,
                              0, NULL, host_buf, sizeof host_buf, &bad) == PLM_ERR_INVALID_ARG,
          "wrapping a host pointer as device memory must fail");
    plm_array_destroy(&x);
    cudaFree(buf);
}

/* A device allocation too large for any GPU (2^42 doubles, 32 TiB, per rank) fails every rank
 * with PLM_ERR_OUT_OF_MEMORY (cudaErrorMemoryAllocation, agreed before any communication);
 * after all the device work above the communicator is healthy: not poisoned, no NCCL
 * asynchronous error. */
static void test_failures(plm_comm_t comm)
{
    const int64_t g = (int64_t)nranks << 42;
    plm_array_t x = NULL;
    const plm_status_t st =
        plm_array_create(comm, 1, &g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_DEVICE, &x);
    CHECK(st == PLM_ERR_OUT_OF_MEMORY && x == NULL, "a 32 TiB device array per rank: %s (%s)", plm_status_string(st),
          plm_last_error());
    plm_array_destroy(&x);
    plm_status_t err = PLM_ERR_INTERNAL;
    char msg[256] = "";
    OK(plm_comm_get_async_error(comm, &err, msg, sizeof msg));
    CHECK(err == PLM_SUCCESS, "the communicator is poisoned after the device tests: %s: %s", plm_status_string(err),
          msg);
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
    /* Forcing mpi_cuda_aware on an MPI that cannot read device memory would crash in MPI. */
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
        if (rank == 0) printf("test_device %s: skipped (no device, or backend not built)\n", argc > 1 ? argv[1] : "auto");
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
        /* NCCL with two ranks on one GPU is refused on every rank: not a failure here */
        const int skip = want == PLM_BACKEND_NCCL && st == PLM_ERR_NCCL && strstr(plm_last_error(), "share");
        if (rank == 0) printf("test_device: comm_create: %s\n", plm_last_error());
        MPI_Finalize();
        return skip ? 77 : 1;
    }
    plm_backend_t got;
    OK(plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &got));
    CHECK(want == PLM_BACKEND_AUTO || got == want, "asked for %s, got %s", plm_backend_name(want),
          plm_backend_name(got));
    /* PLM_TEST_QUICK (compute-sanitizer runs): leave out the largest size */
    const int64_t sizes[] = {0, 1, (int64_t)nranks - 1 > 0 ? nranks - 1 : 2, 1000, 100003};
    const size_t nsizes = sizeof sizes / sizeof sizes[0] - (getenv("PLM_TEST_QUICK") ? 1 : 0);
    for (size_t k = 0; k < sizeof kTypes / sizeof kTypes[0]; ++k)
        for (size_t s = 0; s < nsizes; ++s) test_array_ops(comm, kTypes[k], sizes[s], 0);
    for (size_t k = 0; k < sizeof kTypes / sizeof kTypes[0]; ++k) test_array_ops(comm, kTypes[k], 40, 1);
    for (size_t k = 0; k < sizeof kTypes / sizeof kTypes[0]; ++k) {
        test_broadcast(comm, kTypes[k], 6);
        test_broadcast(comm, kTypes[k], 100000);
    }
    test_operator(comm);
    test_wrap_and_stream(comm);
    test_failures(comm);
    plm_comm_destroy(&comm);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_device %s on %d rank(s): %s (%d failed checks)\n", plm_backend_name(got), nranks,
                          total ? "FAILED" : "passed", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
