/* The C blocks of docs/api.md, as one program: every C block of that page is a fragment of this
 * file (tests/docs/run-doc-blocks checks that its lines are here, then builds this file against
 * the installed library and runs it at 2 ranks). Each section of the tour is a function, so the
 * blocks may reuse names, and checks what its block computed; the program exits 1 on every rank
 * if any check fails on any rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pylopsmpi.h>

#define PLM_TRY(call)                                                            \
    do {                                                                         \
        plm_status_t st_ = (call);                                               \
        if (st_ != PLM_SUCCESS) {                                                \
            fprintf(stderr, "%s: %s\n  %s\n", #call, plm_status_string(st_),     \
                    plm_last_error());                                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                                        \
        }                                                                        \
    } while (0)

static int checks, failures;
#define EXPECT(cond)                                                                          \
    do {                                                                                      \
        ++checks;                                                                             \
        if (!(cond)) {                                                                        \
            ++failures;                                                                       \
            fprintf(stderr, "api_tour: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                                     \
    } while (0)

static int rank_, size_;

/* 2. Versions */
static void versions(void)
{
    int added = 0;
#if PLM_VERSION_GE(0, 3, 0)
    /* ... use something added in 0.3 ... */
    int64_t length = -1;
    added = plm_last_error_copy(NULL, 0, &length) == PLM_SUCCESS && length >= 0;
#endif
    EXPECT(added);
    EXPECT(PLM_VERSION_CODE == PLM_VERSION_MAJOR * 10000 + PLM_VERSION_MINOR * 100 + PLM_VERSION_PATCH);
}

/* 4. Communicators: what the policy decided */
static void policy(plm_comm_t comm)
{
    int yes; plm_cuda_aware_source_t src; plm_backend_t b;
    plm_comm_get_cuda_aware(comm, &yes, &src);             /* src may be NULL */
    plm_comm_get_backend(comm, PLM_MEMORY_HOST, &b);       /* PLM_BACKEND_MPI_HOST */
    plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &b);     /* staged/CUDA-aware/NCCL; UNAVAILABLE without a device */
    EXPECT(yes == 0 && src == PLM_CUDA_AWARE_FROM_CONFIG);  /* the config of main() said 0 */
    PLM_TRY(plm_comm_get_backend(comm, PLM_MEMORY_HOST, &b));
    EXPECT(b == PLM_BACKEND_MPI_HOST);
    int device = 0;
    PLM_TRY(plm_memory_available(PLM_MEMORY_DEVICE, &device));
    if (!device) EXPECT(plm_comm_get_backend(comm, PLM_MEMORY_DEVICE, &b) == PLM_ERR_BACKEND_UNAVAILABLE);
}

/* 5. Distributed arrays: creating */
static void creating(plm_comm_t comm)
{
    const int64_t shape[2] = {61, 1003};
    plm_array_t x = NULL;
    PLM_TRY(plm_array_create(comm, 2, shape, /*axis*/ 1, PLM_PARTITION_SCATTER,
                             PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    int64_t local[2], offset;
    PLM_TRY(plm_array_local_shape(x, local));
    PLM_TRY(plm_array_local_offset(x, &offset));
    const int64_t q = 1003 / size_, r = 1003 % size_;      /* PyLops-MPI's default split */
    EXPECT(local[0] == 61 && local[1] == q + (rank_ < r));
    EXPECT(offset == rank_ * q + (rank_ < r ? rank_ : r));
    plm_array_destroy(&x);
    EXPECT(x == NULL);
}

/* 5. Layouts */
static void layouts(plm_comm_t comm)
{
    const int64_t shape[2] = {7, 3};
    plm_layout_t lay = NULL;
    PLM_TRY(plm_layout_create(comm, 2, shape, /*axis*/ 0, PLM_PARTITION_SCATTER,
                              /*nlocal*/ 0, NULL, /*nmask*/ 0, NULL, &lay));
    plm_array_t x = NULL, y = NULL;
    PLM_TRY(plm_array_create_from_layout(lay, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x)); /* not collective */
    PLM_TRY(plm_array_create_from_layout(lay, PLM_COMPLEX64, PLM_MEMORY_HOST, NULL, 0, &y));
    plm_layout_destroy(&lay);      /* x and y keep the layout alive */
    plm_layout_t lx = NULL, ly = NULL;
    int eq = 0;
    PLM_TRY(plm_array_layout(x, &lx));
    PLM_TRY(plm_array_layout(y, &ly));
    PLM_TRY(plm_layout_equal(lx, ly, &eq));
    EXPECT(lay == NULL && eq == 1);
    plm_dtype_t dy;
    PLM_TRY(plm_array_dtype(y, &dy));
    EXPECT(dy == PLM_COMPLEX64);
    plm_layout_destroy(&lx);
    plm_layout_destroy(&ly);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
}

/* 5. Local data and reductions; 4. a failed call and a poisoned communicator */
static void data(plm_comm_t comm)
{
    const int64_t n = 100;
    plm_array_t x = NULL, y = NULL, z = NULL, w = NULL;
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &y));
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, PLM_MEMORY_HOST, &z));
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_COMPLEX128, PLM_MEMORY_HOST, &w));
    int64_t nlocal, offset;
    PLM_TRY(plm_array_local_size(x, &nlocal));
    PLM_TRY(plm_array_local_offset(x, &offset));

    double *v = NULL;
    PLM_TRY(plm_array_get_local_write(x, (void **)&v));
    /* ... fill the local block, C order, local_shape extents ... */
    for (int64_t i = 0; i < nlocal; ++i) v[i] = (double)(offset + i);     /* x_i = i */
    PLM_TRY(plm_array_restore_local_write(x, (void **)&v));   /* v is NULL again */
    EXPECT(v == NULL);
    PLM_TRY(plm_array_fill(y, 2.0, 0.0));
    PLM_TRY(plm_array_fill(z, 1.0, 1.0));                     /* z_i = 1 + i */
    PLM_TRY(plm_array_fill(w, 0.0, 3.0));                     /* w_i = 3i */

    double d, d_im, n2;
    PLM_TRY(plm_array_dot(x, y, /*conjugate*/ 0, &d, NULL)); /* real dtypes: im may be NULL */
    PLM_TRY(plm_array_dot(z, w, /*conjugate*/ 1, &d, &d_im)); /* sum conj(z_i) w_i (vdot) */
    PLM_TRY(plm_array_norm(x, 2.0, &n2));                 /* float64 result, same on all ranks */
    EXPECT(d == 300.0 && d_im == 300.0);                  /* conj(1 + i) 3i = 3 + 3i, 100 times */
    EXPECT(fabs(n2 - sqrt(328350.0)) < 1e-9 * n2);        /* sum_{i<100} i^2 */

    /* a failed call: was it this call's error, or is the communicator unusable? */
    plm_status_t why;
    char msg[256];
    if (plm_array_dot(x, y, 0, &d, NULL) != PLM_SUCCESS) {
        plm_comm_get_async_error(comm, &why, msg, sizeof msg);
        if (why != PLM_SUCCESS) {                      /* poisoned: this communicator is done */
            fprintf(stderr, "unusable: %s\n", msg);
            plm_comm_abort(comm, 1);                   /* or destroy it and make a new one */
        }
    }
    EXPECT(d == 2.0 * 4950.0);
    PLM_TRY(plm_comm_get_async_error(comm, &why, msg, sizeof msg));
    EXPECT(why == PLM_SUCCESS && msg[0] == '\0');
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_array_destroy(&w);
}

/* 6. Stacked arrays */
static void stacked(plm_comm_t comm)
{
    const int64_t nx = 7, ny = 5;
    plm_array_t x = NULL, y = NULL;
    PLM_TRY(plm_array_create(comm, 1, &nx, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    PLM_TRY(plm_array_create(comm, 1, &ny, 0, PLM_PARTITION_BROADCAST, PLM_FLOAT64, PLM_MEMORY_HOST, &y));
    PLM_TRY(plm_array_fill(x, 1.0, 0.0));
    PLM_TRY(plm_array_fill(y, 2.0, 0.0));

    plm_array_t parts[2] = {x, y};
    plm_stacked_t s = NULL;
    PLM_TRY(plm_stacked_create(2, parts, &s));   /* the stack keeps its own references */
    plm_array_destroy(&x);                       /* allowed: the member lives on in the stack */
    double d;
    PLM_TRY(plm_stacked_dot(s, s, 0, &d, NULL));
    plm_stacked_destroy(&s);
    EXPECT(d == 7.0 + 5.0 * 4.0);                /* BROADCAST members count once */
    plm_array_destroy(&y);
}

/* A rows x cols block per rank (row-major): 0.8 on the diagonal, small elsewhere, so that the
 * block-diagonal operator is well conditioned and its norm below 1 (for the proximal step). */
enum { ROWS = 6, COLS = 4 };
static void fill_block(double *a)
{
    for (int i = 0; i < ROWS; ++i)
        for (int j = 0; j < COLS; ++j) a[i * COLS + j] = i == j ? 0.8 : 0.05 / (1 + i + j + rank_);
}

/* ||x - 1|| / ||1|| */
static double error_to_ones(plm_array_t x)
{
    plm_array_t ones = NULL;
    double err, n1;
    PLM_TRY(plm_array_duplicate(x, &ones));
    PLM_TRY(plm_array_fill(ones, 1.0, 0.0));
    PLM_TRY(plm_array_norm(ones, 2.0, &n1));
    PLM_TRY(plm_array_axpby(1.0, 0.0, x, -1.0, 0.0, ones));     /* ones = x - 1 */
    PLM_TRY(plm_array_norm(ones, 2.0, &err));
    plm_array_destroy(&ones);
    return err / n1;
}

/* 7. Operators and 8. Solvers: y = A 1, then CGLS from 0 finds x = 1 */
static void operators_and_solvers(plm_comm_t comm)
{
    const int64_t rows = ROWS, cols = COLS;
    double a[ROWS * COLS];
    fill_block(a);

    plm_op_t block = NULL, A = NULL;
    PLM_TRY(plm_op_dense(PLM_FLOAT64, rows, cols, a, rows * cols * (int64_t)sizeof(double), /*col_major*/ 0,
                         /*wrap*/ 0, &block));
    PLM_TRY(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &A)); /* collective */
    plm_op_destroy(&block);                        /* A keeps its parts alive */

    plm_layout_t dom, ran;
    PLM_TRY(plm_op_domain(A, &dom));               /* arrays for A are made on its layouts */
    PLM_TRY(plm_op_range(A, &ran));
    plm_array_t x, y;
    PLM_TRY(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    PLM_TRY(plm_array_create_from_layout(ran, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y));
    PLM_TRY(plm_array_fill(x, 1.0, 0.0));          /* x = 1 */
    PLM_TRY(plm_op_apply(A, x, y));                /* y = A x; plm_op_apply_adjoint: x = A^H y */

    plm_solver_info_t info;
    PLM_TRY(plm_solver_info_create(&info));
    PLM_TRY(plm_array_fill(x, 0, 0));                                /* x0 */
    PLM_TRY(plm_solve_cgls(A, y, x, /*niter*/ 100, /*damp*/ 0.0, /*tol*/ 1e-10, info));
    int64_t it; plm_stop_reason_t why; double r1, r2;
    plm_solver_info_iterations(info, &it);
    plm_solver_info_reason(info, &why);                  /* PLM_STOP_TOLERANCE, PLM_STOP_MAX_ITERATIONS, ... */
    plm_solver_info_norms(info, &r1, &r2);
    EXPECT(why == PLM_STOP_TOLERANCE && it > 0 && it < 100 && r1 <= 1e-10);
    EXPECT(error_to_ones(x) < 1e-4);

    plm_solver_info_destroy(&info);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&A);
}

/* 8. Proximal operators: L1 soft-thresholds by tau sigma */
static void proximal(plm_comm_t comm)
{
    const int64_t n = 9;
    plm_array_t x = NULL, out = NULL;
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    PLM_TRY(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &out));
    double global[9], result[9];
    for (int i = 0; i < 9; ++i) global[i] = 0.1 * (i - 4);     /* -0.4 .. 0.4 */
    PLM_TRY(plm_array_set_global(x, global, sizeof global));

    plm_prox_t l1;
    PLM_TRY(plm_prox_create_l1(/*sigma*/ 2.0, &l1));
    PLM_TRY(plm_prox_apply(l1, x, /*tau*/ 0.1, out));   /* out = prox_{tau f}(x); out may be x */
    double f;
    PLM_TRY(plm_prox_value(l1, x, &f));                  /* f(x), the same on every rank of x's group */
    plm_prox_destroy(&l1);

    PLM_TRY(plm_array_asarray(out, 0, result, sizeof result));
    double sum = 0;
    for (int i = 0; i < 9; ++i) {
        const double t = fabs(global[i]) > 0.2 ? global[i] - copysign(0.2, global[i]) : 0.0;
        EXPECT(fabs(result[i] - t) < 1e-15);
        sum += fabs(global[i]);
    }
    EXPECT(fabs(f - 2.0 * sum) < 1e-14);
    plm_array_destroy(&x);
    plm_array_destroy(&out);
}

/* 8. Proximal solvers: y = B 1; ProximalGradient with a small L1 weight lands near 1, and ADMM
 * with total variation (D1 of a constant is 0) on 1 itself */
static void proximal_solvers(plm_comm_t comm)
{
    double a[ROWS * COLS];
    fill_block(a);
    plm_op_t block = NULL, B = NULL, D1 = NULL;
    PLM_TRY(plm_op_dense(PLM_FLOAT64, ROWS, COLS, a, sizeof a, 0, 0, &block));
    PLM_TRY(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&block, 0, NULL, &B));
    plm_op_destroy(&block);
    const int64_t dims[1] = {COLS * (int64_t)size_};
    PLM_TRY(plm_op_first_derivative(comm, PLM_FLOAT64, 1, dims, COLS, 0, 1.0, PLM_DERIV_FORWARD, 3, 0, &D1));
    plm_array_t x = NULL, y = NULL, z = NULL;
    PLM_TRY(plm_op_new_domain_array(B, PLM_MEMORY_HOST, &x));
    PLM_TRY(plm_op_new_range_array(B, PLM_MEMORY_HOST, &y));
    PLM_TRY(plm_op_new_range_array(D1, PLM_MEMORY_HOST, &z));
    PLM_TRY(plm_array_fill(x, 1.0, 0.0));
    PLM_TRY(plm_op_apply(B, x, y));
    PLM_TRY(plm_array_fill(x, 0.0, 0.0));
    plm_solver_info_t info = NULL;
    PLM_TRY(plm_solver_info_create(&info));

    /* min 1/2 ||B x - y||^2 + eps ||x||_1 (a complete program: examples/sparse_deblurring.c) */
    plm_prox_t f, g;
    PLM_TRY(plm_prox_create_l2(B, y, NULL, 1.0, 1.0, 1, 10, 1e-4, x, 1, PLM_L2_CGLS, &f));
    PLM_TRY(plm_prox_create_l1(1.0, &g));
    const double eps = 0.02;
    PLM_TRY(plm_solve_proximal_gradient(f, g, x, /*tau*/ 0.95, &eps, 1, /*eta*/ 1.0, /*niter*/ 150,
                                        PLM_ACCEL_FISTA, /*tol*/ 0.0, info));
    /* ... x is the sparse estimate ... */
    EXPECT(error_to_ones(x) < 0.1);
    /* min 1/2 ||B x - y||^2 + g(z), D1 x = z (total variation with g = L1) */
    PLM_TRY(plm_solve_admml2(g, B, y, D1, x, z, /*use_z0*/ 0, /*tau*/ 1.0, /*niter*/ 40, /*gfirst*/ 0,
                             /*inner_niter*/ 10, /*inner_tol*/ 0.0, info));
    EXPECT(error_to_ones(x) < 1e-2);

    plm_prox_destroy(&f);
    plm_prox_destroy(&g);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_array_destroy(&z);
    plm_op_destroy(&B);
    plm_op_destroy(&D1);
}

/* 8. Compositions, L21 and PrimalDual: total-variation denoising of a step image on a 2-D
 * gradient (a stacked operator: its range is a stack of the two derivatives) */
static void primal_dual_tv(plm_comm_t comm)
{
    const int64_t dims[2] = {4 * (int64_t)size_ + 4, 6}, n = dims[0] * dims[1];
    plm_op_t G = NULL;
    PLM_TRY(plm_op_gradient(comm, PLM_FLOAT64, 2, dims, -1, NULL, PLM_DERIV_FORWARD, 0, &G));
    plm_layout_t dom = NULL, r0 = NULL, r1 = NULL;
    PLM_TRY(plm_op_domain_part(G, 0, &dom));
    PLM_TRY(plm_op_range_part(G, 0, &r0));
    PLM_TRY(plm_op_range_part(G, 1, &r1));
    plm_array_t noisy = NULL, x = NULL, y[2] = {NULL, NULL};
    PLM_TRY(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &noisy));
    PLM_TRY(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    PLM_TRY(plm_array_create_from_layout(r0, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y[0]));
    PLM_TRY(plm_array_create_from_layout(r1, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y[1]));
    double *clean = malloc((size_t)n * sizeof(double)), *img = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; ++i) {
        clean[i] = i / dims[1] < dims[0] / 2 ? 1.0 : 3.0;            /* two flat halves */
        img[i] = clean[i] + 0.2 * sin(1.7 * (double)i);               /* and some noise */
    }
    PLM_TRY(plm_array_set_global(noisy, img, n * (int64_t)sizeof(double)));
    PLM_TRY(plm_array_fill(x, 0.0, 0.0));
    plm_stacked_t ys = NULL;
    PLM_TRY(plm_stacked_create(2, y, &ys));

    /* min_x 1/2 ||x - noisy||^2 + 0.3 ||grad x||_{2,1}: f = L2 with b, g = L21 on the stack */
    plm_prox_t f, g;
    PLM_TRY(plm_prox_create_l2(NULL, noisy, NULL, 1.0, 1.0, 1, 10, 1e-4, NULL, 1, PLM_L2_CGLS, &f));
    PLM_TRY(plm_prox_create_l21(/*ndim*/ 2, /*sigma*/ 0.3, &g));
    const double tau = 0.35, mu = 0.35;           /* tau mu ||G||^2 < 1 (||G||^2 <= 8) */
    PLM_TRY(plm_solve_primal_dual_stacked(f, g, G, x, ys, /*use_y0*/ 0, &tau, 1, &mu, 1, /*z*/ NULL,
                                          /*theta*/ 1.0, /*niter*/ 100, /*gfirst*/ 1, NULL));
    /* ... x is the denoised image, ys the dual variable ... */

    PLM_TRY(plm_array_asarray(x, 0, img, n * (int64_t)sizeof(double)));
    double before = 0, after = 0;
    for (int64_t i = 0; i < n; ++i) {
        before += pow(0.2 * sin(1.7 * (double)i), 2);
        after += pow(img[i] - clean[i], 2);
    }
    EXPECT(after < 0.5 * before);

    /* pyproximal's compositions: 2 L1 and L1(a x + b) */
    plm_prox_t l1, twice, shifted;
    PLM_TRY(plm_prox_create_l1(0.5, &l1));
    PLM_TRY(plm_prox_postcomposition(l1, 2.0, &twice));            /* 2 f: prox_{2 tau f} */
    PLM_TRY(plm_prox_precomposition(l1, -1.0, 0.25, NULL, &shifted)); /* f(-x + 0.25) */
    plm_prox_destroy(&l1);                                         /* the compositions hold it */
    double v2, vs;
    PLM_TRY(plm_prox_value(twice, noisy, &v2));
    PLM_TRY(plm_prox_value(shifted, noisy, &vs));
    double want2 = 0, wants = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double v = clean[i] + 0.2 * sin(1.7 * (double)i);
        want2 += 2 * 0.5 * fabs(v);
        wants += 0.5 * fabs(-v + 0.25);
    }
    EXPECT(fabs(v2 - want2) < 1e-10 * want2 && fabs(vs - wants) < 1e-10 * wants);

    plm_prox_destroy(&twice);
    plm_prox_destroy(&shifted);
    plm_prox_destroy(&f);
    plm_prox_destroy(&g);
    plm_stacked_destroy(&ys);
    plm_array_destroy(&noisy);
    plm_array_destroy(&x);
    plm_array_destroy(&y[0]);
    plm_array_destroy(&y[1]);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&r0);
    plm_layout_destroy(&r1);
    plm_op_destroy(&G);
    free(clean);
    free(img);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    PLM_TRY(plm_check_header_version());
    versions();

    plm_comm_config_t cfg = NULL;
    PLM_TRY(plm_comm_config_create(&cfg));                  /* the defaults */
    PLM_TRY(plm_comm_config_set_cuda_aware(cfg, 0));        /* -1 detect (default), 0 no, 1 yes */
    plm_comm_t comm = NULL;
    PLM_TRY(plm_comm_create(MPI_COMM_WORLD, cfg, &comm));   /* or a NULL config for the defaults */
    plm_comm_config_destroy(&cfg);                          /* comm keeps its settings */
    EXPECT(cfg == NULL);

    policy(comm);
    creating(comm);
    layouts(comm);
    data(comm);
    stacked(comm);
    operators_and_solvers(comm);
    proximal(comm);
    proximal_solvers(comm);
    primal_dual_tv(comm);

    PLM_TRY(plm_comm_destroy(&comm));
    int any = failures;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank_ == 0) printf("api_tour: %d checks on %d rank(s): %s\n", checks, size_, any ? "FAILED" : "passed");
    MPI_Finalize();
    return any ? 1 : 0;
}
