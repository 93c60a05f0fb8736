/* Operators and solvers through the public API, at every rank count, against dense serial
 * references built here in float64:
 * - BlockDiag, VStack and HStack of dense blocks whose sizes differ by rank (with empty
 *   blocks), forward and adjoint, every dtype, compared with the global dense matrix;
 * - dot tests of every operator and composite, every dtype;
 * - composites (sum, product, scale, adjoint) against the same algebra on the references;
 * - diagonal, identity, zero and callback blocks; a callback failing on one rank fails every
 *   rank with PLM_ERR_CALLBACK, and the next collective works;
 * - layouts that do not match: PLM_ERR_SIZE_MISMATCH on every rank;
 * - CGLS and CG converge to the known least-squares solution (relative error < 1e-8), and
 *   CGLS reports the iterations, istop, r1norm and r2norm of a serial CGLS run here with
 *   PyLops' rules on the same global problem;
 * - ranks with no local work: BlockDiag, VStack and HStack where the last rank gives no
 *   operator at all (n = 0, ops NULL), every dtype, against the dense references, and CGLS on
 *   such a BlockDiag; no rank with an operator is PLM_ERR_INVALID_ARG on every rank. */
#include <complex.h>

#include "ops/ops_test_util.h"

/* ---- the blocks: rank q's block b ---------------------------------------------------------- */

/* with empty blocks / full column rank for least squares / SET_TALL with no blocks at all on
 * the last rank (when there is more than one) */
enum { SET_APPLY, SET_TALL, SET_NONE };

static int nblocks(int set, int q)
{
    if (set == SET_NONE) return q == tu_size - 1 && tu_size > 1 ? 0 : 2;
    return set == SET_APPLY ? 2 + (q == 1) : 2;
}

static void block_dims(int set, int q, int b, int64_t *rows, int64_t *cols)
{
    if (set == SET_APPLY && q == 1 && b == 2) { *rows = 0; *cols = 2; return; } /* empty rows */
    if (set == SET_APPLY && q == 0 && b == 1) { *rows = 3; *cols = 0; return; } /* empty columns */
    *cols = 1 + (q + b) % 3;
    *rows = *cols + 1 + b;
}

static void entry(int q, int b, int64_t i, int64_t j, plm_dtype_t dt, double *re, double *im)
{
    *re = 0.3 * sin(1.0 + q + 2.0 * b + 3.0 * (double)i + 5.0 * (double)j) + (i == j ? 2.0 : 0.0);
    *im = tu_cplx(dt) ? 0.2 * cos(2.0 + q + b + (double)i - 2.0 * (double)j) : 0.0;
    tu_round(dt, re, im);
}

static void totals(int set, int *P_out, int64_t *M, int64_t *N)
{
    *M = *N = 0;
    for (int q = 0; q < tu_size; q++)
        for (int b = 0; b < nblocks(set, q); b++) {
            int64_t r, c;
            block_dims(set, q, b, &r, &c);
            *M += r;
            *N += c;
        }
    if (P_out) *P_out = tu_size;
}

/* Global dense BlockDiag matrix, M x N row-major complex doubles. */
static double complex *global_blockdiag(int set, plm_dtype_t dt, int64_t *M, int64_t *N)
{
    totals(set, NULL, M, N);
    double complex *G = calloc((size_t)(*M * *N + 1), sizeof *G);
    int64_t r0 = 0, c0 = 0;
    for (int q = 0; q < tu_size; q++)
        for (int b = 0; b < nblocks(set, q); b++) {
            int64_t R, C;
            block_dims(set, q, b, &R, &C);
            for (int64_t i = 0; i < R; i++)
                for (int64_t j = 0; j < C; j++) {
                    double re, im;
                    entry(q, b, i, j, dt, &re, &im);
                    G[(r0 + i) * *N + c0 + j] = re + I * im;
                }
            r0 += R;
            c0 += C;
        }
    return G;
}

/* This rank's dense blocks (row-major, or column-major when col_major). */
static int my_blocks(int set, plm_dtype_t dt, int col_major, plm_op_t *ops)
{
    const int n = nblocks(set, tu_rank);
    for (int b = 0; b < n; b++) {
        int64_t R, C;
        block_dims(set, tu_rank, b, &R, &C);
        void *a = calloc((size_t)(R * C + 1), tu_esize(dt));
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                double re, im;
                entry(tu_rank, b, i, j, dt, &re, &im);
                tu_set(dt, a, col_major ? j * R + i : i * C + j, re, im);
            }
        ops[b] = NULL;
        TU_CHECK_OK(plm_op_dense(dt, R, C, (R * C != 0) ? a : NULL, tu_bytes(dt, R * C), col_major, 0, &ops[b]));
        free(a);
    }
    return n;
}

static void destroy_all(plm_op_t *ops, int n)
{
    for (int i = 0; i < n; i++) plm_op_destroy(&ops[i]);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_blockdiag(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int cm = 0; cm < 2; cm++) {
            const plm_dtype_t dt = TU_DTYPES[t];
            plm_op_t parts[4], op = NULL;
            const int n = my_blocks(SET_APPLY, dt, cm, parts);
            TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &op));
            destroy_all(parts, n); /* the block-diagonal keeps its parts */
            int64_t M, N, rows = 0, cols = 0;
            double complex *G = global_blockdiag(SET_APPLY, dt, &M, &N);
            TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
            TU_EXPECT(rows == M && cols == N, "blockdiag shape %lld x %lld", (long long)rows, (long long)cols);
            check_against(op, G, M, N, dt, cm ? "blockdiag (column-major blocks)" : "blockdiag");
            free(G);
            plm_op_destroy(&op);
        }
    TU_DONE();
}

/* VStack of rank q's blocks with a common column count K: G is their vertical concatenation. */
static void test_stacks(void **state)
{
    (void)state;
    const int64_t K = 3;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t parts[2];
        int64_t M = 0;
        for (int q = 0; q < tu_size; q++) M += (q % 3) + 1 + 2;
        double complex *G = calloc((size_t)(M * K), sizeof *G);
        int64_t r0 = 0;
        for (int q = 0; q < tu_size; q++)
            for (int b = 0; b < 2; b++) {
                const int64_t R = b ? 2 : (q % 3) + 1;
                plm_op_t *slot = q == tu_rank ? &parts[b] : NULL;
                void *a = calloc((size_t)(R * K), tu_esize(dt));
                for (int64_t i = 0; i < R; i++)
                    for (int64_t j = 0; j < K; j++) {
                        double re, im;
                        entry(q, b, i, j, dt, &re, &im);
                        G[(r0 + i) * K + j] = re + I * im;
                        tu_set(dt, a, i * K + j, re, im);
                    }
                if (slot) TU_CHECK_OK(plm_op_dense(dt, R, K, a, tu_bytes(dt, R * K), 0, 0, slot));
                free(a);
                r0 += R;
            }
        plm_op_t v = NULL, h = NULL;
        TU_OK(plm_op_vstack(tu_comm, 2, (const plm_const_op_t *)parts, &v));
        check_against(v, G, M, K, dt, "vstack");
        /* HStack of the adjoints is the adjoint of the VStack: G^H, K x M */
        plm_op_t adj[2];
        for (int b = 0; b < 2; b++) TU_CHECK_OK(plm_op_adjoint(parts[b], &adj[b]));
        TU_OK(plm_op_hstack(tu_comm, 2, (const plm_const_op_t *)adj, &h));
        double complex *GH = calloc((size_t)(M * K), sizeof *GH);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < K; j++) GH[j * M + i] = conj(G[i * K + j]);
        check_against(h, GH, K, M, dt, "hstack");
        destroy_all(adj, 2);
        destroy_all(parts, 2);
        plm_op_destroy(&v);
        plm_op_destroy(&h);
        free(G);
        free(GH);
    }
    TU_DONE();
}

/* sum, product, scale and adjoint of block-diagonals, and the local building blocks. */
static void test_composites(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t parts[4], A = NULL;
        const int n = my_blocks(SET_TALL, dt, 0, parts);
        TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
        destroy_all(parts, n);
        int64_t M, N;
        double complex *G = global_blockdiag(SET_TALL, dt, &M, &N);
        /* (A + 2A)^H A scaled by alpha: a product of composites, N x N (A + 2A made as
         * (4A - A), through the difference) */
        const double ar = 0.5, ai = tu_cplx(dt) ? -0.25 : 0.0;
        plm_op_t A2 = NULL, S = NULL, SH = NULL, P = NULL, PS = NULL;
        TU_CHECK_OK(plm_op_scale(A, 4, 0, &A2));
        TU_CHECK_OK(plm_op_difference(A2, A, &S));
        TU_CHECK_OK(plm_op_adjoint(S, &SH));
        TU_CHECK_OK(plm_op_product(SH, A, &P));
        TU_CHECK_OK(plm_op_scale(P, ar, ai, &PS));
        double complex *R = calloc((size_t)(N * N), sizeof *R);
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++) {
                double complex s = 0;
                for (int64_t k = 0; k < M; k++) s += conj(3.0 * G[k * N + i]) * G[k * N + j];
                R[i * N + j] = (ar + I * ai) * s;
            }
        check_against(PS, R, N, N, dt, "scale(adjoint(A + 2A) A)");
        plm_op_destroy(&A2);
        plm_op_destroy(&S);
        plm_op_destroy(&SH);
        plm_op_destroy(&P);
        plm_op_destroy(&PS);
        free(R);
        free(G);

        /* local building blocks: diag(d), I, 0 and their sum, in a block-diagonal */
        const int64_t m = 2 + tu_rank % 2;
        void *d = calloc((size_t)m, tu_esize(dt));
        for (int64_t i = 0; i < m; i++) tu_set(dt, d, i, 1.0 + (double)i, tu_cplx(dt) ? 0.5 : 0.0);
        plm_op_t D = NULL, Id = NULL, Z = NULL, DI = NULL, DIZ = NULL, B = NULL;
        TU_CHECK_OK(plm_op_diagonal(dt, m, d, tu_bytes(dt, m), &D));
        TU_CHECK_OK(plm_op_identity(dt, m, &Id));
        TU_CHECK_OK(plm_op_zero(dt, m, m, &Z));
        TU_CHECK_OK(plm_op_sum(D, Id, &DI));
        TU_CHECK_OK(plm_op_sum(DI, Z, &DIZ));
        TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&DIZ, 0, NULL, &B));
        int64_t n2 = 0;
        for (int q = 0; q < tu_size; q++) n2 += 2 + q % 2;
        double complex *H = calloc((size_t)(n2 * n2), sizeof *H);
        int64_t o = 0;
        for (int q = 0; q < tu_size; q++)
            for (int64_t i = 0; i < 2 + q % 2; i++, o++) {
                double re = 1.0 + (double)i, im = tu_cplx(dt) ? 0.5 : 0.0;
                tu_round(dt, &re, &im);
                H[o * n2 + o] = re + I * im + 1.0;
            }
        check_against(B, H, n2, n2, dt, "blockdiag(diag + I + 0)");
        free(H);
        free(d);
        plm_op_destroy(&D);
        plm_op_destroy(&Id);
        plm_op_destroy(&Z);
        plm_op_destroy(&DI);
        plm_op_destroy(&DIZ);
        plm_op_destroy(&B);
        plm_op_destroy(&A);
    }
    TU_DONE();
}

/* ---- callbacks ------------------------------------------------------------------------------ */

typedef struct {
    int fail;      /* return this from matvec when non-zero */
    int *freed;    /* set by the destructor */
} cb_ctx;

static int cb_double(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dt,
                     plm_memory_t mem)
{
    cb_ctx *c = (cb_ctx *)ctx;
    if (c->fail) return c->fail;
    if (n_in != n_out || dt != PLM_FLOAT64 || mem != PLM_MEMORY_HOST) return -1;
    for (int64_t i = 0; i < n_in; i++) ((double *)out)[i] = 2.0 * ((const double *)in)[i];
    return 0;
}

static void cb_free(void *ctx) { *((cb_ctx *)ctx)->freed = 1; }

static void test_callback(void **state)
{
    (void)state;
    int64_t m = 3 + tu_rank;
    for (int bad = -1; bad < tu_size; bad++) {
        int freed = 0;
        cb_ctx ctx = {tu_rank == bad ? 7 : 0, &freed};
        plm_op_t c = NULL, B = NULL;
        TU_OK(plm_op_callback(PLM_FLOAT64, m, m, cb_double, cb_double, &ctx, cb_free, &c));
        TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&c, 0, NULL, &B));
        plm_op_destroy(&c);
        TU_EXPECT(freed == 0, "the block-diagonal keeps the callback alive");
        plm_layout_t dom = NULL;
        TU_OK(plm_op_domain(B, &dom));
        plm_array_t x = vec_on(dom, PLM_FLOAT64, 5), y = vec_on(dom, PLM_FLOAT64, 6);
        if (bad < 0) {
            TU_CHECK_OK(plm_op_apply(B, x, y));
            int64_t N = 0, M;
            totals(SET_APPLY, NULL, &M, &N);
            double vx = 0, vy = 0;
            TU_CHECK_OK(plm_array_dot(x, x, 0, &vx, NULL));
            TU_CHECK_OK(plm_array_dot(y, y, 0, &vy, NULL));
            TU_EXPECT(fabs(vy - 4 * vx) <= 1e-12 * vy, "callback block-diagonal: |y|^2 %g, 4 |x|^2 %g", vy, 4 * vx);
        } else {
            TU_EXPECT_ERR(plm_op_apply(B, x, y), PLM_ERR_CALLBACK); /* on every rank */
            double v = 0;
            TU_CHECK_OK(plm_array_dot(x, x, 0, &v, NULL)); /* the next collective works */
        }
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        plm_layout_destroy(&dom);
        plm_op_destroy(&B);
        TU_EXPECT(freed == 1, "destroy(ctx) ran when the last holder went");
    }
    /* A failing callback block on one rank only, plain diagonals elsewhere: the block-diagonal
     * agreed at construction that applies may fail, so every rank reports the failure (before,
     * the other ranks skipped the agreement and the failing rank waited in it forever). */
    for (int bad = 0; bad < tu_size; bad++) {
        int freed = 0;
        cb_ctx ctx = {7, &freed};
        double *d = malloc((size_t)m * sizeof(double));
        for (int64_t i = 0; i < m; i++) d[i] = 2.0;
        plm_op_t c = NULL, B = NULL;
        if (tu_rank == bad)
            TU_OK(plm_op_callback(PLM_FLOAT64, m, m, cb_double, cb_double, &ctx, cb_free, &c));
        else
            TU_OK(plm_op_diagonal(PLM_FLOAT64, m, d, tu_bytes(PLM_FLOAT64, m), &c));
        TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&c, 0, NULL, &B));
        plm_op_destroy(&c);
        plm_layout_t dom = NULL;
        TU_OK(plm_op_domain(B, &dom));
        plm_array_t x = vec_on(dom, PLM_FLOAT64, 5), y = vec_on(dom, PLM_FLOAT64, 6);
        TU_EXPECT_ERR(plm_op_apply(B, x, y), PLM_ERR_CALLBACK); /* on every rank */
        double v = 0;
        TU_CHECK_OK(plm_array_dot(x, x, 0, &v, NULL)); /* the next collective works */
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        plm_layout_destroy(&dom);
        plm_op_destroy(&B);
        free(d);
    }
    TU_DONE();
}

/* Operands on other layouts: every rank returns PLM_ERR_SIZE_MISMATCH (or DTYPE_MISMATCH). */
static void test_mismatch(void **state)
{
    (void)state;
    plm_op_t parts[4], A = NULL;
    const int n = my_blocks(SET_TALL, PLM_FLOAT64, 0, parts);
    TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
    destroy_all(parts, n);
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(A, &dom));
    TU_OK(plm_op_range(A, &ran));
    plm_array_t x = vec_on(dom, PLM_FLOAT64, 1), y = vec_on(ran, PLM_FLOAT64, 2), xf = NULL;
    TU_EXPECT_ERR(plm_op_apply(A, y, x), PLM_ERR_SIZE_MISMATCH); /* swapped */
    TU_EXPECT_ERR(plm_op_apply(A, x, NULL), PLM_ERR_INVALID_ARG);
    TU_OK(plm_array_create_from_layout(dom, PLM_FLOAT32, PLM_MEMORY_HOST, NULL, 0, &xf));
    TU_EXPECT_ERR(plm_op_apply(A, x, xf), PLM_ERR_SIZE_MISMATCH); /* (a domain array as output) */
    {   /* dtypes: a float32 x promotes into the float64 operator, but the output must be float64 */
        plm_array_t yf = NULL;
        TU_OK(plm_array_create_from_layout(ran, PLM_FLOAT32, PLM_MEMORY_HOST, NULL, 0, &yf));
        TU_OK(plm_array_fill(xf, 1, 0));
        TU_EXPECT_ERR(plm_op_apply(A, xf, yf), PLM_ERR_DTYPE_MISMATCH);
        TU_CHECK_OK(plm_op_apply(A, xf, y));
        plm_array_destroy(&yf);
    }
    /* a default split of the same global length is not the block-diagonal's domain (P > 1) */
    int64_t M, N;
    totals(SET_TALL, NULL, &M, &N);
    plm_array_t z = NULL;
    TU_OK(plm_array_create(tu_comm, 1, &N, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &z));
    int eq = 0;
    plm_layout_t zl = NULL;
    TU_CHECK_OK(plm_array_layout(z, &zl));
    TU_CHECK_OK(plm_layout_equal(zl, dom, &eq));
    if (!eq) TU_EXPECT_ERR(plm_op_apply(A, z, y), PLM_ERR_SIZE_MISMATCH);
    else TU_CHECK_OK(plm_op_apply(A, z, y));
    /* local operators have no layouts and are not applied to arrays */
    plm_op_t L = NULL;
    plm_layout_t none = NULL;
    TU_CHECK_OK(plm_op_identity(PLM_FLOAT64, 2, &L));
    TU_EXPECT_ERR(plm_op_domain(L, &none), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_apply(L, x, y), PLM_ERR_INVALID_ARG);
    plm_op_t mixed = NULL;
    TU_EXPECT_ERR(plm_op_sum(L, A, &mixed), PLM_ERR_INVALID_ARG);
    plm_op_destroy(&L);
    plm_layout_destroy(&zl);
    plm_array_destroy(&z);
    plm_array_destroy(&x);
    plm_array_destroy(&xf);
    plm_array_destroy(&y);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);
    TU_DONE();
}

/* ---- solvers ------------------------------------------------------------------------------ */

static void test_cgls(void **state)
{
    (void)state;
    plm_op_t parts[4], A = NULL;
    const int n = my_blocks(SET_TALL, PLM_FLOAT64, 0, parts);
    TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
    destroy_all(parts, n);
    int64_t M, N;
    double complex *Gc = global_blockdiag(SET_TALL, PLM_FLOAT64, &M, &N);
    double *G = calloc((size_t)(M * N), 8);
    for (int64_t i = 0; i < M * N; i++) G[i] = creal(Gc[i]);
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(A, &dom));
    TU_OK(plm_op_range(A, &ran));
    plm_array_t xt = vec_on(dom, PLM_FLOAT64, 9), y = vec_on(ran, PLM_FLOAT64, 0), x = vec_on(dom, PLM_FLOAT64, 0);
    TU_OK(plm_op_apply(A, xt, y)); /* y = A x_true: the least-squares solution is x_true */
    TU_OK(plm_array_fill(x, 0, 0));
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    /* converged solve */
    TU_CHECK_OK(plm_solve_cgls(A, y, x, 4 * N, 0.0, 1e-26, info));
    double complex *xg = gathered(x, PLM_FLOAT64, N), *tg = gathered(xt, PLM_FLOAT64, N);
    TU_EXPECT(rel_err(xg, tg, N) < 1e-8, "CGLS relative error %g", rel_err(xg, tg, N));
    /* a truncated, damped solve: iterations, istop and norms as the serial CGLS */
    double *yg = calloc((size_t)M, 8), *xs = calloc((size_t)N, 8);
    double complex *yc = gathered(y, PLM_FLOAT64, M);
    for (int64_t i = 0; i < M; i++) yg[i] = creal(yc[i]);
    const int64_t niter = 2; /* fewer than N at every rank count: a partial solve */
    const double damp = 0.1, tol = 1e-30;
    int istop_s = 0;
    int64_t it_s = 0;
    double r1_s = 0, r2_s = 0;
    serial_cgls(G, M, N, yg, niter, damp, tol, xs, &istop_s, &it_s, &r1_s, &r2_s);
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_cgls(A, y, x, niter, damp, tol, info));
    plm_stop_reason_t reason = PLM_STOP_NONE;
    int64_t its = 0, ncost = 0;
    double r1 = 0, r2 = 0;
    TU_CHECK_OK(plm_solver_info_reason(info, &reason));
    const int istop = (int)reason;
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    TU_CHECK_OK(plm_solver_info_norms(info, &r1, &r2));
    TU_CHECK_OK(plm_solver_info_cost(info, NULL, 0, &ncost));
    TU_EXPECT(istop == istop_s && its == it_s, "CGLS istop %d iterations %lld, serial %d %lld", istop, (long long)its,
              istop_s, (long long)it_s);
    TU_EXPECT(fabs(r1 - r1_s) <= 1e-9 * r1_s && fabs(r2 - r2_s) <= 1e-9 * r2_s, "CGLS r1 %.17g r2 %.17g, serial %.17g %.17g",
              r1, r2, r1_s, r2_s);
    TU_EXPECT(ncost == niter + 1, "cost history has %lld values", (long long)ncost);
    double complex *x3 = gathered(x, PLM_FLOAT64, N);
    double d = 0;
    for (int64_t j = 0; j < N; j++) d = fmax(d, fabs(creal(x3[j]) - xs[j]));
    TU_EXPECT(d <= 1e-10, "CGLS after %lld iterations differs from the serial run by %g", (long long)niter, d);

    /* CG on the normal equations A^H A (square, SPD) */
    plm_op_t AH = NULL, AHA = NULL;
    TU_CHECK_OK(plm_op_adjoint(A, &AH));
    TU_CHECK_OK(plm_op_product(AH, A, &AHA));
    plm_array_t b = vec_on(dom, PLM_FLOAT64, 0);
    TU_OK(plm_op_apply(AHA, xt, b));
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_cg(AHA, b, x, 4 * N, 1e-26, info));
    double complex *xcg = gathered(x, PLM_FLOAT64, N);
    TU_EXPECT(rel_err(xcg, tg, N) < 1e-8, "CG relative error %g", rel_err(xcg, tg, N));
    TU_EXPECT_ERR(plm_solve_cg(A, y, x, 3, 0, info), PLM_ERR_SIZE_MISMATCH); /* not square */
    TU_EXPECT_ERR(plm_solve_cgls(A, y, x, -1, 0, 0, info), PLM_ERR_INVALID_ARG);

    free(xcg);
    plm_array_destroy(&b);
    plm_op_destroy(&AH);
    plm_op_destroy(&AHA);
    free(x3);
    free(yc);
    free(yg);
    free(xs);
    free(xg);
    free(tg);
    free(G);
    free(Gc);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&xt);
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);
    TU_DONE();
}

/* transpose, conj and power of block-diagonals, and the broadcast wrapper, against the
 * same algebra on the dense references. */
static void test_more_composites(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t parts[4], A = NULL, T = NULL, C = NULL, AH = NULL, AHA = NULL, P0 = NULL, P2 = NULL;
        const int n = my_blocks(SET_TALL, dt, 0, parts);
        TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
        destroy_all(parts, n);
        int64_t M, N;
        double complex *G = global_blockdiag(SET_TALL, dt, &M, &N);
        double complex *GT = calloc((size_t)(M * N), sizeof *GT), *GC = calloc((size_t)(M * N), sizeof *GC);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                GT[j * M + i] = G[i * N + j];
                GC[i * N + j] = conj(G[i * N + j]);
            }
        TU_CHECK_OK(plm_op_transpose(A, &T));
        TU_CHECK_OK(plm_op_conj(A, &C));
        check_against(T, GT, N, M, dt, "transpose");
        check_against(C, GC, M, N, dt, "conj");
        /* (A^H A)^2 and (A^H A)^0 = I */
        TU_CHECK_OK(plm_op_adjoint(A, &AH));
        TU_CHECK_OK(plm_op_product(AH, A, &AHA));
        TU_CHECK_OK(plm_op_power(AHA, 2, &P2));
        TU_CHECK_OK(plm_op_power(AHA, 0, &P0));
        double complex *H = calloc((size_t)(N * N), sizeof *H), *H2 = calloc((size_t)(N * N), sizeof *H2),
                       *Id = calloc((size_t)(N * N), sizeof *Id);
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++)
                for (int64_t k = 0; k < M; k++) H[i * N + j] += conj(G[k * N + i]) * G[k * N + j];
        for (int64_t i = 0; i < N; i++) {
            Id[i * N + i] = 1;
            for (int64_t j = 0; j < N; j++)
                for (int64_t k = 0; k < N; k++) H2[i * N + j] += H[i * N + k] * H[k * N + j];
        }
        check_against(P2, H2, N, N, dt, "power 2");
        check_against(P0, Id, N, N, dt, "power 0");
        plm_op_t bad = NULL;
        TU_EXPECT_ERR(plm_op_power(A, 2, &bad), PLM_ERR_SIZE_MISMATCH); /* not square */
        TU_EXPECT_ERR(plm_op_power(AHA, -1, &bad), PLM_ERR_INVALID_ARG);

        /* the same local 3 x 2 dense block on every rank, on BROADCAST vectors */
        void *a = calloc(6, tu_esize(dt));
        double complex B[6];
        for (int64_t i = 0; i < 6; i++) {
            double re, im;
            entry(0, 0, i / 2, i % 2, dt, &re, &im);
            tu_set(dt, a, i, re, im);
            B[i] = re + I * im;
        }
        plm_op_t L = NULL, W = NULL;
        TU_CHECK_OK(plm_op_dense(dt, 3, 2, a, tu_bytes(dt, 6), 0, 0, &L));
        TU_OK(plm_op_broadcast(tu_comm, L, &W));
        check_against(W, B, 3, 2, dt, "broadcast wrapper");
        plm_array_t u = NULL;
        TU_CHECK_OK(plm_op_new_range_array(W, PLM_MEMORY_HOST, &u));
        plm_partition_t part = PLM_PARTITION_SCATTER;
        plm_dtype_t got_dt = PLM_FLOAT64;
        TU_CHECK_OK(plm_array_partition(u, &part));
        TU_CHECK_OK(plm_array_dtype(u, &got_dt));
        TU_EXPECT(part == PLM_PARTITION_BROADCAST && got_dt == dt, "broadcast range array: partition %d dtype %d", part,
                  got_dt);
        plm_array_destroy(&u);
        free(a);
        plm_op_destroy(&L);
        plm_op_destroy(&W);
        free(H);
        free(H2);
        free(Id);
        free(G);
        free(GT);
        free(GC);
        plm_op_destroy(&A);
        plm_op_destroy(&T);
        plm_op_destroy(&C);
        plm_op_destroy(&AH);
        plm_op_destroy(&AHA);
        plm_op_destroy(&P0);
        plm_op_destroy(&P2);
    }
    TU_DONE();
}

/* Power iteration on a block-diagonal of diagonals: the largest |d| is known. */
static void test_power_iteration(void **state)
{
    (void)state;
    const int64_t m = 4;
    double d[4];
    for (int i = 0; i < 4; i++) d[i] = 1.0 + 0.5 * i + 0.25 * tu_rank; /* largest: 2.5 + 0.25 (P-1) */
    plm_op_t D = NULL, B = NULL;
    TU_CHECK_OK(plm_op_diagonal(PLM_FLOAT64, m, d, sizeof d, &D));
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&D, 0, NULL, &B));
    double eig[2] = {0, 0}, eig2[2] = {0, 0};
    int64_t it = 0;
    TU_CHECK_OK(plm_power_iteration(B, 2000, 0.0, 42, eig, &it));
    const double want = 2.5 + 0.25 * (tu_size - 1);
    TU_EXPECT(fabs(eig[0] - want) < 1e-6 * want && fabs(eig[1]) < 1e-12 && it == 2000,
              "power iteration %g%+gi after %lld iterations, want %g", eig[0], eig[1], (long long)it, want);
    TU_CHECK_OK(plm_power_iteration(B, 2000, 1e-10, 42, eig2, &it));
    TU_EXPECT(fabs(eig2[0] - want) < 1e-4 * want && it < 2000, "power iteration with tol: %g after %lld", eig2[0],
              (long long)it);
    plm_op_destroy(&D);
    plm_op_destroy(&B);
    TU_DONE();
}

/* Serial ISTA / FISTA with PyLops' rules (soft threshold) on the global dense G, real data. */
static void serial_sparse(const double *G, int64_t M, int64_t N, const double *y, int64_t niter, double eps,
                          double alpha, int fista, double *x, double *cost)
{
    double *xo = calloc((size_t)N, 8), *z = calloc((size_t)N, 8), *r = calloc((size_t)M, 8), *g = calloc((size_t)N, 8);
    for (int64_t j = 0; j < N; j++) x[j] = z[j] = 0;
    double t = 1;
    const double th = eps * alpha * 0.5;
    for (int64_t it = 0; it < niter; it++) {
        for (int64_t j = 0; j < N; j++) xo[j] = x[j];
        const double *b = fista ? z : x;
        for (int64_t i = 0; i < M; i++) {
            r[i] = y[i];
            for (int64_t j = 0; j < N; j++) r[i] -= G[i * N + j] * b[j];
        }
        for (int64_t j = 0; j < N; j++) {
            g[j] = 0;
            for (int64_t i = 0; i < M; i++) g[j] += G[i * N + j] * r[i];
        }
        for (int64_t j = 0; j < N; j++) {
            const double v = b[j] + alpha * g[j], a = fabs(v), m = a - th > 0 ? a - th : 0;
            x[j] = a == 0 ? 0 : v * (m / a);
        }
        if (fista) {
            const double told = t;
            t = (1 + sqrt(1 + 4 * t * t)) / 2;
            for (int64_t j = 0; j < N; j++) z[j] = x[j] + ((told - 1) / t) * (x[j] - xo[j]);
            for (int64_t i = 0; i < M; i++) {
                r[i] = y[i];
                for (int64_t j = 0; j < N; j++) r[i] -= G[i * N + j] * x[j];
            }
        }
        double rr = 0, l1 = 0;
        for (int64_t i = 0; i < M; i++) rr += r[i] * r[i];
        for (int64_t j = 0; j < N; j++) l1 += fabs(x[j]);
        cost[it] = 0.5 * rr + eps * l1;
    }
    free(xo);
    free(z);
    free(r);
    free(g);
}

typedef struct {
    int stop_at;
    int calls;
    int released; /* times the info released it (set_callback's destroy) */
} stop_ctx;

/* A callback context's destroy function: counts the releases. */
static void count_release(void *ctx) { ((stop_ctx *)ctx)->released++; }

static int stop_cb(void *ctx, int64_t iteration, plm_const_array_t x, double cost)
{
    stop_ctx *s = (stop_ctx *)ctx;
    (void)cost;
    s->calls++;
    return x != NULL && iteration >= s->stop_at;
}

static void test_sparse(void **state)
{
    (void)state;
    plm_op_t parts[4], A = NULL;
    const int n = my_blocks(SET_TALL, PLM_FLOAT64, 0, parts);
    TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
    destroy_all(parts, n);
    int64_t M, N;
    double complex *Gc = global_blockdiag(SET_TALL, PLM_FLOAT64, &M, &N);
    double *G = calloc((size_t)(M * N), 8), *yg = calloc((size_t)M, 8), *xs = calloc((size_t)N, 8);
    for (int64_t i = 0; i < M * N; i++) G[i] = creal(Gc[i]);
    plm_layout_t ran = NULL;
    TU_OK(plm_op_range(A, &ran));
    plm_array_t y = vec_on(ran, PLM_FLOAT64, 3), x = NULL;
    TU_OK(plm_op_new_domain_array(A, PLM_MEMORY_HOST, &x));
    double complex *yc = gathered(y, PLM_FLOAT64, M);
    for (int64_t i = 0; i < M; i++) yg[i] = creal(yc[i]);
    const int64_t niter = 15;
    const double eps = 0.3, alpha = 0.05;
    double cost_s[15];
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    for (int fista = 0; fista < 2; fista++) {
        serial_sparse(G, M, N, yg, niter, eps, alpha, fista, xs, cost_s);
        TU_OK(plm_array_fill(x, 0, 0));
        TU_CHECK_OK(fista ? plm_solve_fista(A, y, x, niter, eps, alpha, PLM_THRESH_SOFT, NULL, 0, 0.0, info)
                          : plm_solve_ista(A, y, x, niter, eps, alpha, PLM_THRESH_SOFT, NULL, 0, 0.0, info));
        double complex *xg = gathered(x, PLM_FLOAT64, N);
        double d = 0, sc = 0;
        for (int64_t j = 0; j < N; j++) {
            d = fmax(d, fabs(creal(xg[j]) - xs[j]));
            sc = fmax(sc, fabs(xs[j]));
        }
        TU_EXPECT(d <= 1e-8 * sc, "%s differs from the serial run by %g (scale %g)", fista ? "FISTA" : "ISTA", d, sc);
        double cost[15];
        int64_t nc = 0;
        TU_CHECK_OK(plm_solver_info_cost(info, cost, 15, &nc));
        TU_EXPECT(nc == niter, "%s cost has %lld values", fista ? "FISTA" : "ISTA", (long long)nc);
        for (int64_t k = 0; k < nc; k++)
            TU_EXPECT(fabs(cost[k] - cost_s[k]) <= 1e-9 * cost_s[k], "%s cost[%lld] %.17g, serial %.17g",
                      fista ? "FISTA" : "ISTA", (long long)k, cost[k], cost_s[k]);
        free(xg);
    }
    /* hard and half thresholds and the default alpha run; a decay of zeros is plain gradient
     * descent (no thresholding) */
    double decay[15] = {0};
    for (int k = 0; k < 3; k++) {
        TU_OK(plm_array_fill(x, 0, 0));
        TU_CHECK_OK(plm_solve_ista(A, y, x, niter, eps, 0.0, (plm_thresh_t)k, k == 0 ? decay : NULL, 1, 0.0, info));
    }
    TU_EXPECT_ERR(plm_solve_ista(A, y, x, niter, eps, alpha, (plm_thresh_t)7, NULL, 0, 0.0, info), PLM_ERR_INVALID_ARG);
    /* a huge step makes the residual grow: monitorres fails every rank */
    TU_OK(plm_array_fill(x, 0, 0));
    TU_EXPECT_ERR(plm_solve_ista(A, y, x, niter, eps, 1e5, PLM_THRESH_SOFT, NULL, 1, 0.0, info), PLM_ERR_NOT_CONVERGED);
    {
        plm_stop_reason_t why = PLM_STOP_NONE;
        TU_CHECK_OK(plm_solver_info_reason(info, &why));
        TU_EXPECT(why == PLM_STOP_DIVERGED, "monitorres: reason %d, expected PLM_STOP_DIVERGED", (int)why);
    }

    /* the callback on the last rank stops every rank; show prints on rank 0 */
    stop_ctx sc = {tu_rank == tu_size - 1 ? 3 : 1000000, 0, 0}, other = {1000000, 0, 0};
    TU_CHECK_OK(plm_solver_info_set_callback(info, stop_cb, &other, count_release));
    TU_CHECK_OK(plm_solver_info_set_callback(info, stop_cb, &sc, count_release)); /* replaces: other released */
    TU_EXPECT(other.released == 1 && sc.released == 0, "replacing the callback released its context %d times",
              other.released);
    TU_CHECK_OK(plm_solver_info_set_show(info, 1));
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_cgls(A, y, x, 50, 0.0, 0.0, info));
    int64_t its = 0;
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    TU_EXPECT(its == 3 && sc.calls == 3, "the callback stopped after %lld iterations (%d calls)", (long long)its, sc.calls);
    {
        plm_stop_reason_t why = PLM_STOP_NONE;
        TU_CHECK_OK(plm_solver_info_reason(info, &why));
        TU_EXPECT(why == PLM_STOP_CALLBACK, "callback stop: reason %d", (int)why);
    }
    TU_CHECK_OK(plm_solver_info_set_callback(info, NULL, NULL, NULL)); /* clears: sc released */
    TU_EXPECT(sc.released == 1, "clearing the callback released its context %d times", sc.released);
    TU_CHECK_OK(plm_solver_info_set_callback(info, stop_cb, &other, count_release)); /* released by destroy */
    TU_CHECK_OK(plm_solver_info_set_show(info, 0));

    plm_solver_info_destroy(&info);
    TU_EXPECT(other.released == 2 && sc.calls == 3, "destroying the info released its context (%d)", other.released);
    free(yc);
    free(G);
    free(Gc);
    free(yg);
    free(xs);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);
    TU_DONE();
}

/* ---- stacked operators ---------------------------------------------------------------------- */

/* Stacked block-diagonal [A1, A2] and stacked vstack [A1; 2 A1] against the dense references,
 * dot tests, and CGLS / CG on stacks reaching the known solutions. */
static void test_stacked(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t p1[4], p2[4], A1 = NULL, A2 = NULL, A1x2 = NULL, SB = NULL, SV = NULL;
        int n1 = my_blocks(SET_TALL, dt, 0, p1), n2 = my_blocks(SET_APPLY, dt, 1, p2);
        TU_OK(plm_op_blockdiag(tu_comm, n1, (const plm_const_op_t *)p1, 0, NULL, &A1));
        TU_OK(plm_op_blockdiag(tu_comm, n2, (const plm_const_op_t *)p2, 0, NULL, &A2));
        destroy_all(p1, n1);
        destroy_all(p2, n2);
        TU_CHECK_OK(plm_op_scale(A1, 2, 0, &A1x2));
        plm_op_t sb[2] = {A1, A2}, sv[2] = {A1, A1x2};
        TU_CHECK_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)sb, &SB));
        TU_CHECK_OK(plm_op_stacked_vstack(2, (const plm_const_op_t *)sv, &SV));
        int64_t M1, N1, M2, N2;
        double complex *G1 = global_blockdiag(SET_TALL, dt, &M1, &N1), *G2 = global_blockdiag(SET_APPLY, dt, &M2, &N2);
        /* the stacked block-diagonal is diag(G1, G2) on the concatenations */
        const int64_t M = M1 + M2, N = N1 + N2;
        double complex *G = calloc((size_t)(M * N + 1), sizeof *G);
        for (int64_t i = 0; i < M1; i++)
            for (int64_t j = 0; j < N1; j++) G[i * N + j] = G1[i * N1 + j];
        for (int64_t i = 0; i < M2; i++)
            for (int64_t j = 0; j < N2; j++) G[(M1 + i) * N + N1 + j] = G2[i * N2 + j];
        plm_array_t xm[4], ym[4];
        int nx = 0, ny = 0;
        plm_stacked_t xs = stack_on(SB, 0, dt, 1, xm, &nx), ys = stack_on(SB, 1, dt, 2, ym, &ny);
        TU_CHECK_OK(plm_op_apply_stacked(SB, xs, ys));
        double complex *xg = gathered_stack(xs, dt, N), *got = gathered_stack(ys, dt, M), *want = matvec(G, M, N, xg, 0);
        expect_close(got, want, M, dt, "stacked blockdiag forward");
        free(got);
        free(want);
        double complex *yg = gathered_stack(ys, dt, M);
        TU_CHECK_OK(plm_op_apply_adjoint_stacked(SB, ys, xs));
        got = gathered_stack(xs, dt, N);
        want = matvec(G, M, N, yg, 1);
        expect_close(got, want, N, dt, "stacked blockdiag adjoint");
        int passed = 0;
        double yy[2], xx[2];
        TU_CHECK_OK(plm_op_dottest(SB, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
        TU_EXPECT(passed, "stacked blockdiag dot test (%s)", tu_dtname(dt));
        TU_CHECK_OK(plm_op_dottest(SV, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
        TU_EXPECT(passed, "stacked vstack dot test (%s)", tu_dtname(dt));
        /* a plain array is not a stack: the plain entry refuses a stacked operator */
        TU_EXPECT_ERR(plm_op_apply(SB, xm[0], ym[0]), PLM_ERR_SIZE_MISMATCH);
        plm_layout_t none = NULL;
        TU_EXPECT_ERR(plm_op_domain(SB, &none), PLM_ERR_INVALID_ARG);
        free(got);
        free(want);
        free(xg);
        free(yg);

        /* stacked vstack forward and adjoint: [G1; 2 G1] */
        plm_array_t um[2], vm[4];
        int nu = 0, nv = 0;
        plm_stacked_t us = stack_on(SV, 0, dt, 3, um, &nu), vs = stack_on(SV, 1, dt, 4, vm, &nv);
        TU_EXPECT(nu == 1 && nv == 2, "stacked vstack parts %d -> %d", nu, nv);
        double complex *GV = calloc((size_t)(2 * M1 * N1), sizeof *GV);
        for (int64_t i = 0; i < M1 * N1; i++) {
            GV[i] = G1[i];
            GV[M1 * N1 + i] = 2.0 * G1[i];
        }
        TU_CHECK_OK(plm_op_apply_stacked(SV, us, vs));
        double complex *ug = gathered_stack(us, dt, N1);
        got = gathered_stack(vs, dt, 2 * M1);
        want = matvec(GV, 2 * M1, N1, ug, 0);
        expect_close(got, want, 2 * M1, dt, "stacked vstack forward");
        free(got);
        free(want);
        double complex *vg = gathered_stack(vs, dt, 2 * M1);
        TU_CHECK_OK(plm_op_apply_adjoint_stacked(SV, vs, us));
        got = gathered_stack(us, dt, N1);
        want = matvec(GV, 2 * M1, N1, vg, 1);
        expect_close(got, want, N1, dt, "stacked vstack adjoint");
        free(got);
        free(want);
        free(ug);
        free(vg);

        if (dt == PLM_FLOAT64) {
            /* CGLS on the stacked vstack: y = [A1; 2 A1] x_true gives x_true back */
            plm_array_t xt[1], xsol[1];
            int k = 0;
            plm_stacked_t xts = stack_on(SV, 0, dt, 9, xt, &k), xss = stack_on(SV, 0, dt, 0, xsol, &k);
            TU_CHECK_OK(plm_op_apply_stacked(SV, xts, vs));
            TU_CHECK_OK(plm_array_fill(xsol[0], 0, 0));
            TU_CHECK_OK(plm_solve_cgls_stacked(SV, vs, xss, 4 * N1, 0.0, 1e-26, NULL));
            double complex *a = gathered_stack(xss, dt, N1), *b = gathered_stack(xts, dt, N1);
            TU_EXPECT(rel_err(a, b, N1) < 1e-8, "stacked CGLS relative error %g", rel_err(a, b, N1));
            free(a);
            free(b);
            /* CG on the stacked block-diagonal of A1^H A1 and A1^H A1 */
            plm_op_t AH = NULL, Q = NULL, SQ = NULL;
            TU_CHECK_OK(plm_op_adjoint(A1, &AH));
            TU_CHECK_OK(plm_op_product(AH, A1, &Q));
            plm_op_t qq[2] = {Q, Q};
            TU_CHECK_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)qq, &SQ));
            plm_array_t ct[2], cy[2], cx[2];
            int kk = 0;
            plm_stacked_t cts = stack_on(SQ, 0, dt, 5, ct, &kk), cys = stack_on(SQ, 1, dt, 0, cy, &kk),
                          cxs = stack_on(SQ, 0, dt, 0, cx, &kk);
            TU_CHECK_OK(plm_op_apply_stacked(SQ, cts, cys));
            for (int i = 0; i < 2; i++) TU_CHECK_OK(plm_array_fill(cx[i], 0, 0));
            TU_CHECK_OK(plm_solve_cg_stacked(SQ, cys, cxs, 8 * N1, 1e-26, NULL));
            a = gathered_stack(cxs, dt, 2 * N1);
            b = gathered_stack(cts, dt, 2 * N1);
            TU_EXPECT(rel_err(a, b, 2 * N1) < 1e-8, "stacked CG relative error %g", rel_err(a, b, 2 * N1));
            free(a);
            free(b);
            for (int i = 0; i < 2; i++) {
                plm_array_destroy(&ct[i]);
                plm_array_destroy(&cy[i]);
                plm_array_destroy(&cx[i]);
            }
            plm_stacked_destroy(&cts);
            plm_stacked_destroy(&cys);
            plm_stacked_destroy(&cxs);
            plm_op_destroy(&AH);
            plm_op_destroy(&Q);
            plm_op_destroy(&SQ);
            plm_array_destroy(&xt[0]);
            plm_array_destroy(&xsol[0]);
            plm_stacked_destroy(&xts);
            plm_stacked_destroy(&xss);
        }

        for (int i = 0; i < nx; i++) plm_array_destroy(&xm[i]);
        for (int i = 0; i < ny; i++) plm_array_destroy(&ym[i]);
        for (int i = 0; i < nu; i++) plm_array_destroy(&um[i]);
        for (int i = 0; i < nv; i++) plm_array_destroy(&vm[i]);
        plm_stacked_destroy(&xs);
        plm_stacked_destroy(&ys);
        plm_stacked_destroy(&us);
        plm_stacked_destroy(&vs);
        free(G);
        free(G1);
        free(G2);
        free(GV);
        plm_op_destroy(&A1);
        plm_op_destroy(&A2);
        plm_op_destroy(&A1x2);
        plm_op_destroy(&SB);
        plm_op_destroy(&SV);
    }
    TU_DONE();
}

/* ---- composites of stacked operators -------------------------------------------------------- */

/* Dense helpers on row-major complex matrices (new allocations). */
static double complex *dn_new(int64_t M, int64_t N) { return calloc((size_t)(M * N + 1), sizeof(double complex)); }

static double complex *dn_adj(const double complex *A, int64_t M, int64_t N, int conjugate)
{
    double complex *B = dn_new(N, M);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) B[j * M + i] = conjugate ? conj(A[i * N + j]) : A[i * N + j];
    return B;
}

static double complex *dn_conj(const double complex *A, int64_t M, int64_t N)
{
    double complex *B = dn_new(M, N);
    for (int64_t i = 0; i < M * N; i++) B[i] = conj(A[i]);
    return B;
}

static double complex *dn_lin(double complex a, const double complex *A, double complex b, const double complex *B,
                              int64_t M, int64_t N)
{
    double complex *C = dn_new(M, N);
    for (int64_t i = 0; i < M * N; i++) C[i] = a * A[i] + (B ? b * B[i] : 0);
    return C;
}

static double complex *dn_mul(const double complex *A, const double complex *B, int64_t M, int64_t K, int64_t N)
{
    double complex *C = dn_new(M, N);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++) C[i * N + j] += A[i * K + k] * B[k * N + j];
    return C;
}

/* [A 0; 0 B] and [A; B] */
static double complex *dn_diag(const double complex *A, int64_t M1, int64_t N1, const double complex *B, int64_t M2,
                               int64_t N2)
{
    double complex *C = dn_new(M1 + M2, N1 + N2);
    for (int64_t i = 0; i < M1; i++)
        for (int64_t j = 0; j < N1; j++) C[i * (N1 + N2) + j] = A[i * N1 + j];
    for (int64_t i = 0; i < M2; i++)
        for (int64_t j = 0; j < N2; j++) C[(M1 + i) * (N1 + N2) + N1 + j] = B[i * N2 + j];
    return C;
}

static double complex *dn_vstack(const double complex *A, int64_t M1, const double complex *B, int64_t M2, int64_t N)
{
    double complex *C = dn_new(M1 + M2, N);
    memcpy(C, A, (size_t)(M1 * N) * sizeof *C);
    memcpy(C + M1 * N, B, (size_t)(M2 * N) * sizeof *C);
    return C;
}

/* A stacked (or plain) operator on stacks of its members against the dense M x N matrix G of
 * the concatenations: forward, adjoint, dot test. */
static void check_stacked(plm_const_op_t op, const double complex *G, int64_t M, int64_t N, plm_dtype_t dt,
                          const char *what)
{
    plm_array_t xm[8], ym[8], am[8], hm[8];
    int nx = 0, ny = 0;
    plm_stacked_t xs = stack_on(op, 0, dt, 1, xm, &nx), ys = stack_on(op, 1, dt, 2, ym, &ny);
    plm_stacked_t as = stack_on(op, 1, dt, 3, am, &ny), hs = stack_on(op, 0, dt, 4, hm, &nx);
    TU_CHECK_OK(plm_op_apply_stacked(op, xs, as));
    TU_CHECK_OK(plm_op_apply_adjoint_stacked(op, ys, hs));
    double complex *xg = gathered_stack(xs, dt, N), *yg = gathered_stack(ys, dt, M);
    double complex *got = gathered_stack(as, dt, M), *want = matvec(G, M, N, xg, 0);
    char buf[192];
    snprintf(buf, sizeof buf, "%s forward", what);
    expect_close(got, want, M, dt, buf);
    free(got);
    free(want);
    got = gathered_stack(hs, dt, N);
    want = matvec(G, M, N, yg, 1);
    snprintf(buf, sizeof buf, "%s adjoint", what);
    expect_close(got, want, N, dt, buf);
    int passed = 0;
    double yy[2], xx[2];
    TU_CHECK_OK(plm_op_dottest(op, tu_single(dt) ? 1e-4 : 1e-12, &passed, yy, xx));
    TU_EXPECT(passed, "%s (%s): dot test %g%+gi vs %g%+gi", what, tu_dtname(dt), yy[0], yy[1], xx[0], xx[1]);
    int64_t rows = 0, cols = 0;
    TU_CHECK_OK(plm_op_shape(op, &rows, &cols));
    TU_EXPECT(rows == M && cols == N, "%s: shape %lld x %lld, want %lld x %lld", what, (long long)rows,
              (long long)cols, (long long)M, (long long)N);
    free(got);
    free(want);
    free(xg);
    free(yg);
    for (int i = 0; i < nx; i++) {
        plm_array_destroy(&xm[i]);
        plm_array_destroy(&hm[i]);
    }
    for (int i = 0; i < ny; i++) {
        plm_array_destroy(&ym[i]);
        plm_array_destroy(&am[i]);
    }
    plm_stacked_destroy(&xs);
    plm_stacked_destroy(&ys);
    plm_stacked_destroy(&as);
    plm_stacked_destroy(&hs);
}

/* Every composite of stacked operators (scale, adjoint, transpose, conj, sum, difference,
 * product with stacked and plain operands, power) and stacks of stacks, against dense
 * references built from the parts' matrices, on the uneven blocks of SET_APPLY (empty blocks
 * on some ranks) and SET_TALL. Mismatched members are refused. */
static void test_stacked_composites(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t p1[4], p2[4], A1 = NULL, A2 = NULL;
        int n1 = my_blocks(SET_TALL, dt, 0, p1), n2 = my_blocks(SET_APPLY, dt, 1, p2);
        TU_OK(plm_op_blockdiag(tu_comm, n1, (const plm_const_op_t *)p1, 0, NULL, &A1));
        TU_OK(plm_op_blockdiag(tu_comm, n2, (const plm_const_op_t *)p2, 0, NULL, &A2));
        destroy_all(p1, n1);
        destroy_all(p2, n2);
        int64_t M1, N1, M2, N2;
        double complex *G1 = global_blockdiag(SET_TALL, dt, &M1, &N1), *G2 = global_blockdiag(SET_APPLY, dt, &M2, &N2);
        const double complex alpha = tu_cplx(dt) ? 1.5 - 0.5 * I : -2.5;
        plm_op_t SB = NULL, SV = NULL, A1x2 = NULL, op[16] = {0};
        TU_CHECK_OK(plm_op_scale(A1, 2, 0, &A1x2));
        plm_op_t sb[2] = {A1, A2}, sv[2] = {A1, A1x2};
        TU_CHECK_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)sb, &SB));
        TU_CHECK_OK(plm_op_stacked_vstack(2, (const plm_const_op_t *)sv, &SV));
        const int64_t M = M1 + M2, N = N1 + N2;
        double complex *GB = dn_diag(G1, M1, N1, G2, M2, N2), *G1x2 = dn_lin(2, G1, 0, NULL, M1, N1),
                       *GV = dn_vstack(G1, M1, G1x2, M1, N1);
        check_stacked(SB, GB, M, N, dt, "stacked blockdiag");

        /* scale, adjoint, transpose, conj */
        TU_CHECK_OK(plm_op_scale(SB, creal(alpha), cimag(alpha), &op[0]));
        double complex *R = dn_lin(alpha, GB, 0, NULL, M, N);
        check_stacked(op[0], R, M, N, dt, "alpha SB");
        free(R);
        TU_CHECK_OK(plm_op_adjoint(SV, &op[1]));
        R = dn_adj(GV, 2 * M1, N1, 1);
        check_stacked(op[1], R, N1, 2 * M1, dt, "SV^H");
        free(R);
        TU_CHECK_OK(plm_op_transpose(SB, &op[2]));
        R = dn_adj(GB, M, N, 0);
        check_stacked(op[2], R, N, M, dt, "SB^T");
        free(R);
        TU_CHECK_OK(plm_op_conj(SV, &op[3]));
        R = dn_conj(GV, 2 * M1, N1);
        check_stacked(op[3], R, 2 * M1, N1, dt, "conj(SV)");
        free(R);

        /* sum and difference (of a composite too: alpha SB - SB) */
        TU_CHECK_OK(plm_op_sum(SB, op[0], &op[4]));
        R = dn_lin(1 + alpha, GB, 0, NULL, M, N);
        check_stacked(op[4], R, M, N, dt, "SB + alpha SB");
        free(R);
        TU_CHECK_OK(plm_op_difference(op[0], SB, &op[5]));
        R = dn_lin(alpha - 1, GB, 0, NULL, M, N);
        check_stacked(op[5], R, M, N, dt, "alpha SB - SB");
        free(R);

        /* products: stacked x stacked (SB^H SB), stacked x plain (SV A1^H A1), plain x stacked (A1^H SV^H... as
         * SV^H SV, a plain range) */
        TU_CHECK_OK(plm_op_adjoint(SB, &op[6]));
        TU_CHECK_OK(plm_op_product(op[6], SB, &op[7]));
        double complex *GBH = dn_adj(GB, M, N, 1), *GBHGB = dn_mul(GBH, GB, N, M, N);
        check_stacked(op[7], GBHGB, N, N, dt, "SB^H SB");
        plm_op_t A1H = NULL, Q = NULL;
        TU_CHECK_OK(plm_op_adjoint(A1, &A1H));
        TU_CHECK_OK(plm_op_product(A1H, A1, &Q));
        TU_CHECK_OK(plm_op_product(SV, Q, &op[8]));
        double complex *G1H = dn_adj(G1, M1, N1, 1), *GQ = dn_mul(G1H, G1, N1, M1, N1);
        R = dn_mul(GV, GQ, 2 * M1, N1, N1);
        check_stacked(op[8], R, 2 * M1, N1, dt, "SV (A1^H A1)");
        free(R);
        TU_CHECK_OK(plm_op_product(op[1], SV, &op[9]));
        double complex *GVH = dn_adj(GV, 2 * M1, N1, 1);
        R = dn_mul(GVH, GV, N1, 2 * M1, N1);
        check_stacked(op[9], R, N1, N1, dt, "SV^H SV (a plain result)");
        free(R);

        /* power of a square stacked operator */
        TU_CHECK_OK(plm_op_power(op[7], 2, &op[10]));
        R = dn_mul(GBHGB, GBHGB, N, N, N);
        check_stacked(op[10], R, N, N, dt, "(SB^H SB)^2");
        free(R);
        TU_CHECK_OK(plm_op_power(op[7], 0, &op[11]));
        R = dn_new(N, N);
        for (int64_t i = 0; i < N; i++) R[i * N + i] = 1;
        check_stacked(op[11], R, N, N, dt, "(SB^H SB)^0");
        free(R);

        /* stacks of stacks are flattened: [A1; SV] = [A1; A1; 2 A1], blockdiag(SB, A1) */
        plm_op_t nv[2] = {A1, SV}, nb[2] = {SB, A1};
        TU_CHECK_OK(plm_op_stacked_vstack(2, (const plm_const_op_t *)nv, &op[12]));
        R = dn_vstack(G1, M1, GV, 2 * M1, N1);
        check_stacked(op[12], R, 3 * M1, N1, dt, "[A1; SV]");
        free(R);
        TU_CHECK_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)nb, &op[13]));
        R = dn_diag(GB, M, N, G1, M1, N1);
        check_stacked(op[13], R, M + M1, N + N1, dt, "blockdiag(SB, A1)");
        free(R);
        /* a composite inside a stack: [A1; alpha conj(SV)] */
        plm_op_t sc = NULL;
        TU_CHECK_OK(plm_op_scale(op[3], creal(alpha), cimag(alpha), &sc));
        plm_op_t nv2[2] = {A1, sc};
        TU_CHECK_OK(plm_op_stacked_vstack(2, (const plm_const_op_t *)nv2, &op[14]));
        double complex *GVc = dn_conj(GV, 2 * M1, N1), *aGVc = dn_lin(alpha, GVc, 0, NULL, 2 * M1, N1);
        R = dn_vstack(G1, M1, aGVc, 2 * M1, N1);
        check_stacked(op[14], R, 3 * M1, N1, dt, "[A1; alpha conj(SV)]");
        free(R);
        plm_op_destroy(&sc);

        /* mismatched members: refused with SIZE_MISMATCH */
        plm_op_t bad = NULL;
        TU_EXPECT_ERR(plm_op_sum(SB, SV, &bad), PLM_ERR_SIZE_MISMATCH);
        TU_EXPECT(bad == NULL, "a failed sum left a handle");
        TU_EXPECT_ERR(plm_op_product(SB, SB, &bad), PLM_ERR_SIZE_MISMATCH);
        TU_EXPECT_ERR(plm_op_power(SV, 2, &bad), PLM_ERR_SIZE_MISMATCH);
        plm_op_t bv[2] = {A1, SB}; /* SB takes a stack of two: not a vstack part */
        TU_EXPECT_ERR(plm_op_stacked_vstack(2, (const plm_const_op_t *)bv, &bad), PLM_ERR_SIZE_MISMATCH);

        for (int i = 0; i < 16; i++) plm_op_destroy(&op[i]);
        plm_op_destroy(&A1H);
        plm_op_destroy(&Q);
        plm_op_destroy(&A1);
        plm_op_destroy(&A2);
        plm_op_destroy(&A1x2);
        plm_op_destroy(&SB);
        plm_op_destroy(&SV);
        free(G1);
        free(G2);
        free(GB);
        free(G1x2);
        free(GV);
        free(GBH);
        free(GBHGB);
        free(G1H);
        free(GQ);
        free(GVH);
        free(GVc);
        free(aGVc);
    }
    TU_DONE();
}

/* ---- applies with other dtypes: NumPy's promotion ------------------------------------------ */

/* op (dense G, M x N, of op_dt) applied forward and adjoint to x of xdt into y of the promoted
 * dtype, against G (x) in double complex; a complex x on a real op is applied to its real and
 * imaginary parts (PyLops / NumPy give the complex product). */
static void check_promoted(plm_const_op_t op, const double complex *G, int64_t M, int64_t N, plm_dtype_t op_dt,
                           plm_dtype_t xdt, const char *what)
{
    plm_dtype_t ydt = op_dt;
    TU_CHECK_OK(plm_dtype_promote(op_dt, xdt, &ydt));
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(op, &dom));
    TU_OK(plm_op_range(op, &ran));
    for (int adj = 0; adj < 2; adj++) {
        plm_array_t x = vec_on(adj ? ran : dom, xdt, 3 + adj), y = vec_on(adj ? dom : ran, ydt, 0);
        TU_CHECK_OK(adj ? plm_op_apply_adjoint(op, x, y) : plm_op_apply(op, x, y));
        double complex *xg = gathered(x, xdt, adj ? M : N), *got = gathered(y, ydt, adj ? N : M);
        double complex *want = matvec(G, M, N, xg, adj);
        char buf[200];
        snprintf(buf, sizeof buf, "%s: %s operator on %s data%s", what, tu_dtname(op_dt), tu_dtname(xdt),
                 adj ? " (adjoint)" : "");
        expect_close(got, want, adj ? N : M, tu_single(op_dt) || tu_single(xdt) ? PLM_COMPLEX64 : PLM_COMPLEX128, buf);
        /* an output of another dtype than the promoted one is refused on every rank */
        plm_dtype_t other = ydt == PLM_COMPLEX128 ? PLM_FLOAT64 : PLM_COMPLEX128;
        plm_array_t z = vec_on(adj ? dom : ran, other, 0);
        TU_EXPECT_ERR(adj ? plm_op_apply_adjoint(op, x, z) : plm_op_apply(op, x, z), PLM_ERR_DTYPE_MISMATCH);
        plm_array_destroy(&z);
        free(xg);
        free(got);
        free(want);
        plm_array_destroy(&x);
        plm_array_destroy(&y);
    }
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
}

/* Applies take data of other dtypes where a promotion allows (and refuse the rest alike on every
 * rank): real operators on complex data (real and imaginary parts), narrower data widened,
 * real data on complex operators; a composite and a stacked operator on promoted stacks too. */
static void test_apply_promotion(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t parts[4], A = NULL;
        const int n = my_blocks(SET_APPLY, dt, 0, parts);
        TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)parts, 0, NULL, &A));
        destroy_all(parts, n);
        int64_t M, N;
        double complex *G = global_blockdiag(SET_APPLY, dt, &M, &N);
        for (int u = 0; u < 4; u++) {
            const plm_dtype_t xdt = TU_DTYPES[u];
            plm_dtype_t c = dt;
            TU_CHECK_OK(plm_dtype_promote(dt, xdt, &c));
            /* allowed: the operator's dtype, narrower data, or complex data on a real operator of
             * the same precision */
            const int ok = c == dt || (!tu_cplx(dt) && tu_cplx(c) && tu_single(dt) == tu_single(c));
            if (ok) {
                check_promoted(A, G, M, N, dt, xdt, "BlockDiag");
                continue;
            }
            plm_layout_t dom = NULL, ran = NULL;
            TU_OK(plm_op_domain(A, &dom));
            TU_OK(plm_op_range(A, &ran));
            plm_array_t x = vec_on(dom, xdt, 1), y = vec_on(ran, c, 0);
            TU_EXPECT_ERR(plm_op_apply(A, x, y), PLM_ERR_DTYPE_MISMATCH); /* it would compute in another precision */
            plm_array_destroy(&x);
            plm_array_destroy(&y);
            plm_layout_destroy(&dom);
            plm_layout_destroy(&ran);
        }
        if (!tu_cplx(dt)) {
            /* a composite (2 A^H A) and a stacked block-diagonal [A, A] on complex data */
            plm_op_t AH = NULL, Q = NULL, Q2 = NULL, SB = NULL;
            TU_CHECK_OK(plm_op_adjoint(A, &AH));
            TU_CHECK_OK(plm_op_product(AH, A, &Q));
            TU_CHECK_OK(plm_op_scale(Q, 2, 0, &Q2));
            double complex *GH = dn_adj(G, M, N, 1), *GQ = dn_mul(GH, G, N, M, N), *GQ2 = dn_lin(2, GQ, 0, NULL, N, N);
            const plm_dtype_t cx = tu_single(dt) ? PLM_COMPLEX64 : PLM_COMPLEX128;
            check_promoted(Q2, GQ2, N, N, dt, cx, "2 A^H A");
            plm_op_t sb[2] = {A, A};
            TU_CHECK_OK(plm_op_stacked_blockdiag(2, (const plm_const_op_t *)sb, &SB));
            plm_array_t xm[2], ym[2];
            int nx = 0, ny = 0;
            plm_stacked_t xs = stack_on(SB, 0, cx, 5, xm, &nx), ys = stack_on(SB, 1, cx, 0, ym, &ny);
            TU_CHECK_OK(plm_op_apply_stacked(SB, xs, ys));
            double complex *GB = dn_diag(G, M, N, G, M, N), *xg = gathered_stack(xs, cx, 2 * N),
                           *got = gathered_stack(ys, cx, 2 * M), *want = matvec(GB, 2 * M, 2 * N, xg, 0);
            expect_close(got, want, 2 * M, cx, "stacked [A, A] on complex stacks");
            free(GB), free(xg), free(got), free(want);
            for (int i = 0; i < 2; i++) {
                plm_array_destroy(&xm[i]);
                plm_array_destroy(&ym[i]);
            }
            plm_stacked_destroy(&xs);
            plm_stacked_destroy(&ys);
            free(GH), free(GQ), free(GQ2);
            plm_op_destroy(&AH);
            plm_op_destroy(&Q);
            plm_op_destroy(&Q2);
            plm_op_destroy(&SB);
        }
        free(G);
        plm_op_destroy(&A);
    }
    TU_DONE();
}

/* ---- native or staged: plm_op_native -------------------------------------------------------- */

static int dev_noop(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dt, void *stream)
{
    (void)ctx, (void)in, (void)n_in, (void)out, (void)n_out, (void)dt, (void)stream;
    return 0;
}

static void expect_native(plm_const_op_t op, int host, int device, const char *what)
{
    int h = -1, d = -1;
    TU_CHECK_OK(plm_op_native(op, PLM_MEMORY_HOST, &h));
    TU_CHECK_OK(plm_op_native(op, PLM_MEMORY_DEVICE, &d));
    TU_EXPECT(h == host && d == device, "%s: native on host %d, on device %d; want %d, %d", what, h, d, host, device);
}

/* Every operator of the library runs natively in both memory spaces (in every build: the answer
 * describes the operator, not this machine); only callbacks declared for the other space, and
 * what holds them, stage their data. */
static void test_native(void **state)
{
    (void)state;
    const int64_t dims[2] = {9, 4};
    const int axes[2] = {0, 1};
    plm_op_t ops[8] = {0}, blocks[4];
    int n = my_blocks(SET_TALL, PLM_FLOAT64, 0, blocks);
    TU_OK(plm_op_blockdiag(tu_comm, n, (const plm_const_op_t *)blocks, 0, NULL, &ops[0]));
    destroy_all(blocks, n);
    TU_OK(plm_op_laplacian(tu_comm, PLM_FLOAT64, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &ops[1]));
    TU_OK(plm_op_gradient(tu_comm, PLM_FLOAT64, 2, dims, -1, NULL, PLM_DERIV_FORWARD, 0, &ops[2]));
    const int64_t w = 1, hdims[2] = {5, 3 * (int64_t)tu_size};
    TU_OK(plm_op_halo(tu_comm, PLM_FLOAT64, 2, hdims, NULL, 1, &w, &ops[3]));
    TU_OK(plm_op_matrix_mult(tu_comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, 0, 0, 0, NULL, 0, &ops[4]));
    TU_OK(plm_op_product(ops[1], ops[1], &ops[5]));
    TU_OK(plm_op_transpose(ops[5], &ops[6]));
    for (int i = 0; i < 7; i++) expect_native(ops[i], 1, 1, "a library operator");
    plm_op_t hcb = NULL, dcb = NULL, hb = NULL, db = NULL, sum = NULL;
    cb_ctx ctx = {0, NULL};
    TU_OK(plm_op_callback(PLM_FLOAT64, 3, 3, cb_double, cb_double, &ctx, NULL, &hcb));
    TU_OK(plm_op_callback_device(PLM_FLOAT64, 3, 3, dev_noop, dev_noop, NULL, NULL, &dcb));
    expect_native(hcb, 1, 0, "host callback");
    expect_native(dcb, 0, 1, "device callback");
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&hcb, 0, NULL, &hb));
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&dcb, 0, NULL, &db));
    expect_native(hb, 1, 0, "block-diagonal of a host callback");
    expect_native(db, 0, 1, "block-diagonal of a device callback");
    TU_OK(plm_op_sum(ops[0], ops[0], &sum));
    expect_native(sum, 1, 1, "sum");
    for (int i = 0; i < 8; i++) plm_op_destroy(&ops[i]);
    plm_op_destroy(&hcb);
    plm_op_destroy(&dcb);
    plm_op_destroy(&hb);
    plm_op_destroy(&db);
    plm_op_destroy(&sum);
    TU_DONE();
}

/* A rank with no local work: the last rank gives no operator (n = 0, ops NULL). */
static void test_no_local_work(void **state)
{
    (void)state;
    const int none = tu_size > 1 && tu_rank == tu_size - 1;
    for (int t = 0; t < 4; t++) {
        const plm_dtype_t dt = TU_DTYPES[t];
        plm_op_t parts[4], op = NULL, v = NULL, h = NULL, adj[4];
        const int n = my_blocks(SET_NONE, dt, 0, parts);
        TU_EXPECT(n == (none ? 0 : 2), "rank %d has %d blocks", tu_rank, n);
        TU_OK(plm_op_blockdiag(tu_comm, n, n ? (const plm_const_op_t *)parts : NULL, 0, NULL, &op));
        int64_t M, N;
        double complex *G = global_blockdiag(SET_NONE, dt, &M, &N);
        check_against(op, G, M, N, dt, "blockdiag, a rank with no blocks");
        /* VStack of one block a rank (a rank without any) and the HStack of their adjoints: the
         * blocks of set SET_NONE cut to 2 columns each */
        const int64_t K = 2;
        int64_t MV = 0;
        for (int q = 0; q < tu_size; q++) MV += (tu_size > 1 && q == tu_size - 1) ? 0 : 3;
        double complex *V = calloc((size_t)(MV * K + 1), sizeof *V), *VH = calloc((size_t)(MV * K + 1), sizeof *VH);
        plm_op_t mine = NULL;
        for (int q = 0, r0 = 0; q < tu_size; q++) {
            if (tu_size > 1 && q == tu_size - 1) continue;
            void *a = calloc(3 * K, tu_esize(dt));
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < K; j++) {
                    double re, im;
                    entry(q, 0, i, j, dt, &re, &im);
                    V[(r0 + i) * K + j] = re + I * im;
                    VH[j * MV + r0 + i] = re - I * im;
                    tu_set(dt, a, i * K + j, re, im);
                }
            if (q == tu_rank) TU_CHECK_OK(plm_op_dense(dt, 3, K, a, tu_bytes(dt, 3 * K), 0, 0, &mine));
            free(a);
            r0 += 3;
        }
        TU_OK(plm_op_vstack(tu_comm, mine ? 1 : 0, mine ? (const plm_const_op_t *)&mine : NULL, &v));
        check_against(v, V, MV, K, dt, "vstack, a rank with no parts");
        if (mine) TU_CHECK_OK(plm_op_adjoint(mine, &adj[0]));
        TU_OK(plm_op_hstack(tu_comm, mine ? 1 : 0, mine ? (const plm_const_op_t *)adj : NULL, &h));
        check_against(h, VH, K, MV, dt, "hstack, a rank with no parts");
        if (mine) plm_op_destroy(&adj[0]);
        plm_op_destroy(&mine);
        destroy_all(parts, n);
        plm_op_destroy(&op);
        plm_op_destroy(&v);
        plm_op_destroy(&h);
        free(G);
        free(V);
        free(VH);
    }

    /* CGLS on the block-diagonal with an empty rank: the least-squares solution x_true */
    plm_op_t parts[4], A = NULL;
    const int n = my_blocks(SET_NONE, PLM_FLOAT64, 0, parts);
    TU_OK(plm_op_blockdiag(tu_comm, n, n ? (const plm_const_op_t *)parts : NULL, 0, NULL, &A));
    destroy_all(parts, n);
    int64_t M, N;
    double complex *Gc = global_blockdiag(SET_NONE, PLM_FLOAT64, &M, &N);
    plm_layout_t dom = NULL, ran = NULL;
    TU_OK(plm_op_domain(A, &dom));
    TU_OK(plm_op_range(A, &ran));
    plm_array_t xt = vec_on(dom, PLM_FLOAT64, 9), y = vec_on(ran, PLM_FLOAT64, 0), x = vec_on(dom, PLM_FLOAT64, 0);
    int64_t nloc = -1;
    TU_CHECK_OK(plm_array_local_size(x, &nloc));
    TU_EXPECT(!none || nloc == 0, "the empty rank holds %lld unknowns", (long long)nloc);
    TU_OK(plm_op_apply(A, xt, y));
    TU_OK(plm_array_fill(x, 0, 0));
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    TU_CHECK_OK(plm_solve_cgls(A, y, x, 4 * N, 0.0, 1e-26, info));
    double complex *xg = gathered(x, PLM_FLOAT64, N), *tg = gathered(xt, PLM_FLOAT64, N);
    TU_EXPECT(rel_err(xg, tg, N) < 1e-8, "CGLS with an empty rank: relative error %g", rel_err(xg, tg, N));
    free(xg);
    free(tg);
    free(Gc);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&xt);
    plm_array_destroy(&y);
    plm_array_destroy(&x);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);

    /* no rank with an operator: the dtype is unknown, an error on every rank */
    plm_op_t out = NULL;
    TU_EXPECT_ERR(plm_op_blockdiag(tu_comm, 0, NULL, 0, NULL, &out), PLM_ERR_INVALID_ARG);
    TU_EXPECT(out == NULL, "a failed blockdiag set *out");
    TU_EXPECT_ERR(plm_op_vstack(tu_comm, 0, NULL, &out), PLM_ERR_INVALID_ARG);
    TU_EXPECT_ERR(plm_op_hstack(tu_comm, 0, NULL, &out), PLM_ERR_INVALID_ARG);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_blockdiag), TU_TEST(test_stacks), TU_TEST(test_composites),
        TU_TEST(test_callback),  TU_TEST(test_mismatch), TU_TEST(test_cgls),
        TU_TEST(test_more_composites), TU_TEST(test_power_iteration), TU_TEST(test_sparse),
        TU_TEST(test_stacked), TU_TEST(test_stacked_composites), TU_TEST(test_apply_promotion),
        TU_TEST(test_native), TU_TEST(test_no_local_work),
    };
    return plm_run_group_tests_mpi(tests);
}
