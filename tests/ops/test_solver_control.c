/* Solvers agree on everything that changes their control flow.
 *
 * - A stop callback set on some ranks only (rank 0 printing progress, say) stops every rank
 *   after the same iteration, and the result is the serial solve of that many iterations.
 * - On masked operators every mask group runs its own solve: each group's x, iteration count
 *   and stop reason match a serial CGLS of that group's system alone, although the groups
 *   stop at different iterations (the loop runs until all have); groups holding the same data
 *   end bitwise equal.
 * - Stop reasons: a zero CG step denominator stops every rank with PLM_STOP_BREAKDOWN and no
 *   NaN in x; a NaN in the data (on one rank) stops every rank with PLM_STOP_NAN.
 * Every result is compared with a serial float64 solve computed here. */
#include "ops_test_util.h"

/* ---- a block-diagonal of dense 4 x 3 blocks, one per rank ------------------------------- */

enum { BR = 4, BC = 3 };

/* Block entries of a rank: kind 0 is [I; 0] (CGLS converges in one iteration), kind 1 a dense
 * well-conditioned block (it needs about 3 per rank of the group); v varies the values. */
static void block_of(int kind, int v, double *a)
{
    for (int i = 0; i < BR; i++)
        for (int j = 0; j < BC; j++)
            a[i * BC + j] = kind == 0 ? (i == j ? 1.0 : 0.0) : (i == j ? 3.0 + v : 0.0) + 0.3 * sin(1.7 * i + 0.9 * j + v);
}

static double data_of(int v, int i) { return 0.5 + cos(0.7 * i + 0.3 * v); }

/* The operator with block_of(kind(r), v(r)) on rank r, the mask (NULL: none), and y = data. */
typedef struct {
    int kind[TU_MAX_RANKS], v[TU_MAX_RANKS];
} plan_t;

static plm_op_t make_op(const plan_t *p, const int *mask, plm_array_t *x, plm_array_t *y)
{
    double a[BR * BC];
    block_of(p->kind[tu_rank], p->v[tu_rank], a);
    plm_op_t b = NULL, op = NULL;
    TU_OK(plm_op_dense(PLM_FLOAT64, BR, BC, a, sizeof a, 0, 0, &b));
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&b, mask ? tu_size : 0, mask, &op));
    plm_op_destroy(&b);
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, x));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, y));
    TU_OK(plm_array_fill(*x, 0, 0));
    double *d = NULL;
    TU_OK(plm_array_get_local_write(*y, (void **)&d));
    for (int i = 0; i < BR; i++) d[i] = data_of(p->v[tu_rank], i);
    TU_OK(plm_array_restore_local_write(*y, (void **)&d));
    return op;
}

/* Serial CGLS on the ranks of `ranks` (n of them, in order): their blocks on the diagonal.
 * Writes the solution (BC per rank), and iterations and istop. */
static void serial_of(const plan_t *p, const int *ranks, int n, int64_t niter, double tol, double *x, int64_t *its,
                      int *istop)
{
    const int64_t M = (int64_t)BR * n, N = (int64_t)BC * n;
    double *G = calloc((size_t)(M * N), sizeof(double)), *y = calloc((size_t)M, sizeof(double));
    for (int k = 0; k < n; k++) {
        double a[BR * BC];
        block_of(p->kind[ranks[k]], p->v[ranks[k]], a);
        for (int i = 0; i < BR; i++) {
            y[k * BR + i] = data_of(p->v[ranks[k]], i);
            for (int j = 0; j < BC; j++) G[(k * BR + i) * N + k * BC + j] = a[i * BC + j];
        }
    }
    double r1, r2;
    serial_cgls(G, M, N, y, niter, 0.0, tol, x, istop, its, &r1, &r2);
    free(G);
    free(y);
}

static void expect_local(plm_const_array_t x, const double *want, double rtol, const char *what)
{
    const double *d = NULL;
    TU_CHECK_OK(plm_array_get_local_read(x, (const void **)&d));
    for (int j = 0; j < BC; j++)
        TU_EXPECT(fabs(d[j] - want[j]) <= rtol * (fabs(want[j]) + 1e-12), "%s: x[%d] = %.17g, serial %.17g", what, j,
                  d[j], want[j]);
    TU_CHECK_OK(plm_array_restore_local_read(x, (const void **)&d));
}

/* ---- a stop callback on some ranks only --------------------------------------------------- */

typedef struct {
    int64_t stop_at; /* return 1 at this iteration (0: never) */
    int64_t calls;
} stopper_t;

static int stop_cb(void *ctx, int64_t it, plm_const_array_t x, double cost)
{
    (void)x;
    (void)cost;
    stopper_t *s = ctx;
    s->calls++;
    return s->stop_at > 0 && it >= s->stop_at;
}

/* who: 0 rank 0 alone has a callback that stops; 1 the last rank alone; 2 every even rank has
 * one that never stops (the solve runs to niter). */
static void run_callback_case(int solver, int who)
{
    plan_t p;
    for (int r = 0; r < tu_size; r++) {
        p.kind[r] = 1;
        p.v[r] = r;
    }
    plm_array_t x = NULL, y = NULL;
    plm_op_t op = make_op(&p, NULL, &x, &y);
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    stopper_t st = {who == 2 ? 0 : 3, 0};
    const int mine = who == 0 ? tu_rank == 0 : who == 1 ? tu_rank == tu_size - 1 : tu_rank % 2 == 0;
    if (mine) TU_EXPECT(plm_solver_info_set_callback(info, stop_cb, &st, NULL) == PLM_SUCCESS, "set_callback");
    const int64_t niter = 6;
    plm_status_t s = solver == 0 ? plm_solve_cgls(op, y, x, niter, 0.0, 0.0, info)
                                 : plm_solve_ista(op, y, x, niter, 0.01, 0.02, PLM_THRESH_SOFT, NULL, 0, 0.0, info);
    TU_EXPECT(s == PLM_SUCCESS, "solver %d, callback case %d: status %d %s", solver, who, (int)s, plm_last_error());
    int64_t its = -1;
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    const int64_t want = who == 2 ? niter : 3;
    TU_EXPECT(its == want, "solver %d, callback case %d: %lld iterations on rank %d, want %lld", solver, who,
              (long long)its, tu_rank, (long long)want);
    if (mine) TU_EXPECT(st.calls == want, "the callback ran %lld times, want %lld", (long long)st.calls, (long long)want);
    if (solver == 0) { /* the result of `want` serial iterations */
        int ranks[TU_MAX_RANKS], istop;
        int64_t sits;
        for (int r = 0; r < tu_size; r++) ranks[r] = r;
        double *xs = calloc((size_t)BC * tu_size, sizeof(double));
        serial_of(&p, ranks, tu_size, want, 0.0, xs, &sits, &istop);
        expect_local(x, xs + BC * tu_rank, 1e-10, "CGLS stopped by a callback");
        free(xs);
    }
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
}

static void test_callback_on_some_ranks(void **state)
{
    (void)state;
    for (int solver = 0; solver < 2; solver++)
        for (int who = 0; who < 3; who++) run_callback_case(solver, who);
    TU_DONE();
}

/* ---- mask groups -------------------------------------------------------------------------- */

static void test_masked_groups(void **state)
{
    (void)state;
    /* Group g = r % 2: group 0 holds [I; 0] blocks (one iteration), group 1 dense ones. */
    int mask[TU_MAX_RANKS];
    plan_t p;
    for (int r = 0; r < tu_size; r++) {
        mask[r] = r % 2;
        p.kind[r] = r % 2;
        p.v[r] = r;
    }
    plm_array_t x = NULL, y = NULL;
    plm_op_t op = make_op(&p, mask, &x, &y);
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    const int64_t niter = 50;
    const double tol = 1e-20;
    TU_CHECK_OK(plm_solve_cgls(op, y, x, niter, 0.0, tol, info));
    int ranks[TU_MAX_RANKS], n = 0, me = 0;
    for (int r = 0; r < tu_size; r++)
        if (mask[r] == mask[tu_rank]) {
            if (r == tu_rank) me = n;
            ranks[n++] = r;
        }
    double *xs = calloc((size_t)BC * n, sizeof(double));
    int64_t sits = 0;
    int sstop = 0;
    serial_of(&p, ranks, n, niter, tol, xs, &sits, &sstop);
    expect_local(x, xs + BC * me, 1e-9, "masked CGLS, this group alone");
    int64_t its = -1;
    plm_stop_reason_t reason = PLM_STOP_NONE;
    TU_CHECK_OK(plm_solver_info_iterations(info, &its));
    TU_CHECK_OK(plm_solver_info_reason(info, &reason));
    const int istop = (int)reason;
    TU_EXPECT(its == sits && istop == sstop, "group %d: %lld iterations (istop %d), serial %lld (istop %d)", mask[tu_rank],
              (long long)its, istop, (long long)sits, sstop);
    /* the groups really stopped at different iterations (not one loop over both) */
    int64_t lo = 0, hi = 0;
    MPI_Allreduce(&its, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&its, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (tu_size > 1) TU_EXPECT(lo < hi, "both groups ran %lld iterations", (long long)lo);
    free(xs);
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    TU_DONE();
}

/* Groups holding the same data: x bitwise equal across groups (even rank counts: rank r and
 * r ^ 1 hold the same block). Also for CG on A^H A and for FISTA. */
static void test_replicated_groups_bitwise(void **state)
{
    (void)state;
    if (tu_size % 2) {
        TU_EXPECT(1, "odd rank count: no pairs");
        TU_DONE();
        return;
    }
    int mask[TU_MAX_RANKS];
    plan_t p;
    for (int r = 0; r < tu_size; r++) {
        mask[r] = r % 2;
        p.kind[r] = 1;
        p.v[r] = r / 2; /* the same block in both groups */
    }
    for (int solver = 0; solver < 2; solver++) {
        plm_array_t x = NULL, y = NULL;
        plm_op_t op = make_op(&p, mask, &x, &y);
        if (solver == 0) TU_CHECK_OK(plm_solve_cgls(op, y, x, 7, 0.0, 0.0, NULL));
        else TU_CHECK_OK(plm_solve_fista(op, y, x, 7, 0.05, 0.0, PLM_THRESH_SOFT, NULL, 0, 0.0, NULL));
        const double *d = NULL;
        double mine[BC], other[BC];
        TU_CHECK_OK(plm_array_get_local_read(x, (const void **)&d));
        memcpy(mine, d, sizeof mine);
        TU_CHECK_OK(plm_array_restore_local_read(x, (const void **)&d));
        MPI_Sendrecv(mine, BC, MPI_DOUBLE, tu_rank ^ 1, 5, other, BC, MPI_DOUBLE, tu_rank ^ 1, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        TU_EXPECT(memcmp(mine, other, sizeof mine) == 0, "solver %d: rank %d and %d differ: %.17g vs %.17g", solver,
                  tu_rank, tu_rank ^ 1, mine[0], other[0]);
        plm_array_destroy(&x);
        plm_array_destroy(&y);
        plm_op_destroy(&op);
    }
    TU_DONE();
}

/* A square block-diagonal of n x n diagonals with entries d on every rank, x = 0, y = 1 (NaN at
 * the last rank's first entry when nan_last). */
static plm_op_t diag_op(double d, int nan_last, plm_array_t *x, plm_array_t *y)
{
    enum { N = 3 };
    const double dd[N] = {d, d, d};
    plm_op_t b = NULL, op = NULL;
    TU_OK(plm_op_diagonal(PLM_FLOAT64, N, dd, sizeof dd, &b));
    TU_OK(plm_op_blockdiag(tu_comm, 1, (const plm_const_op_t *)&b, 0, NULL, &op));
    plm_op_destroy(&b);
    TU_OK(plm_op_new_domain_array(op, PLM_MEMORY_HOST, x));
    TU_OK(plm_op_new_range_array(op, PLM_MEMORY_HOST, y));
    TU_OK(plm_array_fill(*x, 0, 0));
    TU_OK(plm_array_fill(*y, 1, 0));
    if (nan_last && tu_rank == tu_size - 1) {
        double *v = NULL; /* local calls: TU_OK is collective */
        TU_CHECK_OK(plm_array_get_local_write(*y, (void **)&v));
        v[0] = NAN;
        TU_CHECK_OK(plm_array_restore_local_write(*y, (void **)&v));
    }
    return op;
}

static plm_stop_reason_t reason_of(plm_const_solver_info_t info, int64_t *its)
{
    plm_stop_reason_t r = PLM_STOP_NONE;
    TU_CHECK_OK(plm_solver_info_reason(info, &r));
    TU_CHECK_OK(plm_solver_info_iterations(info, its));
    return r;
}

static void test_stop_reasons(void **state)
{
    (void)state;
    plm_solver_info_t info = NULL;
    TU_OK(plm_solver_info_create(&info));
    plm_stop_reason_t r = PLM_STOP_FORCE_INT32;
    TU_CHECK_OK(plm_solver_info_reason(info, &r));
    TU_EXPECT(r == PLM_STOP_NONE, "a new info reports reason %d", (int)r);
    plm_array_t x = NULL, y = NULL;
    int64_t its = -1;

    /* CG on a zero operator: c^H Op c = 0 at the first step */
    plm_op_t op = diag_op(0.0, 0, &x, &y);
    TU_CHECK_OK(plm_solve_cg(op, y, x, 10, 0.0, info));
    r = reason_of(info, &its);
    double nx = -1;
    TU_OK(plm_array_norm(x, 2.0, &nx));
    TU_EXPECT(r == PLM_STOP_BREAKDOWN && its == 0 && nx == 0.0, "CG on zero: reason %d, %lld iterations, ||x|| %g",
              (int)r, (long long)its, nx);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);

    /* a NaN in y on the last rank: every rank stops at once with PLM_STOP_NAN */
    op = diag_op(2.0, 1, &x, &y);
    TU_CHECK_OK(plm_solve_cgls(op, y, x, 10, 0.0, 0.0, info));
    r = reason_of(info, &its);
    TU_EXPECT(r == PLM_STOP_NAN && its == 0, "CGLS on NaN data: reason %d, %lld iterations", (int)r, (long long)its);
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_cg(op, y, x, 10, 0.0, info));
    r = reason_of(info, &its);
    TU_EXPECT(r == PLM_STOP_NAN && its == 0, "CG on NaN data: reason %d, %lld iterations", (int)r, (long long)its);
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_ista(op, y, x, 10, 0.1, 0.25, PLM_THRESH_SOFT, NULL, 0, 0.0, info));
    r = reason_of(info, &its);
    TU_EXPECT(r == PLM_STOP_NAN && its == 1, "ISTA on NaN data: reason %d, %lld iterations", (int)r, (long long)its);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);

    /* healthy data: the tolerance, then the iteration limit */
    op = diag_op(2.0, 0, &x, &y);
    TU_CHECK_OK(plm_solve_cgls(op, y, x, 10, 0.0, 1e-20, info));
    r = reason_of(info, &its);
    TU_EXPECT(r == PLM_STOP_TOLERANCE && its == 1, "CGLS on 2 I: reason %d, %lld iterations", (int)r, (long long)its);
    TU_OK(plm_array_fill(x, 0, 0));
    TU_CHECK_OK(plm_solve_ista(op, y, x, 3, 0.1, 0.2, PLM_THRESH_SOFT, NULL, 0, 0.0, info));
    r = reason_of(info, &its);
    TU_EXPECT(r == PLM_STOP_MAX_ITERATIONS && its == 3, "ISTA 3 iterations: reason %d, %lld iterations", (int)r,
              (long long)its);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    plm_solver_info_destroy(&info);
    TU_DONE();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_callback_on_some_ranks),
        TU_TEST(test_masked_groups),
        TU_TEST(test_replicated_groups_bitwise),
        TU_TEST(test_stop_reasons),
    };
    return plm_run_group_tests_mpi(tests);
}
