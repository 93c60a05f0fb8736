/* The scaling guard (ctest label smpi-guard; scripts/run-tests runs it in the SMPI build): at
 * 64 simulated ranks, the MPI calls each library call makes and the allocations it does, in a
 * steady state, must stay within the budgets below; a change that adds a per-apply collective,
 * an O(P) message pattern, a per-call allocation or a larger per-call reduction fails here
 * without a cluster.
 *
 * Per operation, the largest count over the ranks (PMPI layer bench/mpi_count.c, and
 * plm::alloc's counter through tests/fault/fault_hooks.cpp):
 *   collectives  MPI collective calls (the agreement's allreduce included)
 *   messages     point-to-point calls (Isend, Irecv, ...)
 *   reduce bytes the largest payload of one reduction (a reduction carrying O(P) lanes grows it)
 *   allocations  heap allocations by the library
 * The budgets are what the library needs (one agreement a collective call, none extra a solver
 * iteration; a halo: one message each way to each neighbour; an all-to-all: one message to
 * each other rank), in terms of P where the pattern itself grows with P.
 *
 *   scripts/smpi-run -np 64 build-smpi/tests/smpi/test_scaling_guard
 * Exits 0 and prints PASSED when every count is within its budget, else prints each excess and
 * exits 1. Runs under any MPI (the budgets hold at any rank count >= 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pylopsmpi.h"

#include "mpi_count.h"

long long plm_test_allocations(void); /* tests/fault/fault_hooks.cpp */

#define CHECK(call)                                                                                \
    do {                                                                                           \
        plm_status_t st_ = (call);                                                                 \
        if (st_ != PLM_SUCCESS) {                                                                  \
            fprintf(stderr, "%s: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error());    \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                          \
        }                                                                                          \
    } while (0)

static int g_rank = 0, g_size = 1, g_failed = 0;

/* What one operation costs, the largest over the ranks. */
typedef struct {
    double collectives, messages, reduce_bytes, allocations;
} cost_t;

typedef void (*op_fn)(void *ctx);

static double max_over_ranks(double v)
{
    double m = 0;
    PMPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* The cost of one call of f after two warm-up calls, averaged over reps calls. */
static cost_t measure(op_fn f, void *ctx, int reps)
{
    f(ctx);
    f(ctx);
    mpic_counts_t c0, c1, d;
    mpic_snapshot(&c0);
    const long long a0 = plm_test_allocations();
    for (int k = 0; k < reps; k++) f(ctx);
    const long long a1 = plm_test_allocations();
    mpic_snapshot(&c1);
    mpic_diff(&c1, &c0, &d);
    double red = 0;
    const int reductions[] = {MPIC_ALLREDUCE, MPIC_IALLREDUCE, MPIC_REDUCE, MPIC_IREDUCE};
    for (int i = 0; i < 4; i++) {
        const int k = reductions[i];
        if (d.calls[k]) red = fmax(red, (double)d.bytes[k] / (double)d.calls[k]);
    }
    cost_t c = {(double)mpic_collectives(&d) / reps, (double)mpic_messages(&d) / reps, red, (double)(a1 - a0) / reps};
    c.collectives = max_over_ranks(c.collectives);
    c.messages = max_over_ranks(c.messages);
    c.reduce_bytes = max_over_ranks(c.reduce_bytes);
    c.allocations = max_over_ranks(c.allocations);
    return c;
}

static void expect(const char *what, cost_t got, cost_t budget)
{
    const char *names[4] = {"collectives", "messages", "reduce bytes", "allocations"};
    const double g[4] = {got.collectives, got.messages, got.reduce_bytes, got.allocations};
    const double b[4] = {budget.collectives, budget.messages, budget.reduce_bytes, budget.allocations};
    if (g_rank == 0) printf("%-34s collectives %5.1f (<= %4.0f)  messages %6.1f (<= %4.0f)  reduce bytes %6.0f (<= %5.0f)  allocations %4.1f (<= %.0f)\n",
                            what, g[0], b[0], g[1], b[1], g[2], b[2], g[3], b[3]);
    for (int i = 0; i < 4; i++)
        if (g[i] > b[i] + 1e-9) {
            if (g_rank == 0) printf("  EXCESS: %s %s per operation is %g, the budget %g\n", what, names[i], g[i], b[i]);
            g_failed = 1;
        }
}

/* ---- the operations ---------------------------------------------------------------------------- */

typedef struct {
    plm_op_t op;
    plm_array_t x, y;
    plm_stacked_t ys, xs;
    plm_solver_info_t info;
    int64_t niter;
    double out;
} ctx_t;

static void do_apply(void *p)
{
    ctx_t *c = p;
    CHECK(plm_op_apply(c->op, c->x, c->y));
}
static void do_adjoint(void *p)
{
    ctx_t *c = p;
    CHECK(plm_op_apply_adjoint(c->op, c->y, c->x));
}
static void do_dot(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_dot(c->x, c->x, 0, &c->out, NULL));
}
static void do_norm(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_norm(c->x, 2.0, &c->out));
}
static void do_cgls(void *p)
{
    ctx_t *c = p;
    CHECK(plm_array_fill(c->x, 0, 0));
    CHECK(plm_solve_cgls_stacked(c->op, c->ys, c->xs, c->niter, 0.0, 0.0, c->info));
}

static void arrays_for(ctx_t *c, int complex_data)
{
    CHECK(plm_op_new_domain_array(c->op, PLM_MEMORY_HOST, &c->x));
    CHECK(plm_op_new_range_array(c->op, PLM_MEMORY_HOST, &c->y));
    CHECK(plm_array_fill(c->x, 0.5, complex_data ? 0.25 : 0));
}

static void release(ctx_t *c)
{
    plm_array_destroy(&c->x);
    plm_array_destroy(&c->y);
    plm_op_destroy(&c->op);
}

/* A stencil apply and its adjoint: the agreement, a halo message each way to each neighbour. */
static void guard_stencil(plm_comm_t comm, int laplacian)
{
    const int64_t dims[3] = {4 * (int64_t)g_size, 6, 5};
    const int axes[3] = {0, 1, 2};
    ctx_t c = {0};
    if (laplacian)
        CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 3, dims, -1, 3, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &c.op));
    else
        CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 3, dims, -1, 0, 1.0, PLM_DERIV_CENTERED, 5, 1, &c.op));
    arrays_for(&c, 0);
    const cost_t budget = {1, 4, 256, 0};
    expect(laplacian ? "Laplacian apply" : "first derivative apply", measure(do_apply, &c, 3), budget);
    expect(laplacian ? "Laplacian adjoint" : "first derivative adjoint", measure(do_adjoint, &c, 3), budget);
    release(&c);
}

/* The distributed FFT: the agreement and one message to and from every other rank per all-to-all. */
static void guard_fft(plm_comm_t comm, int axis0)
{
    const int64_t dims[3] = {2 * (int64_t)g_size, 2 * (int64_t)g_size, 4};
    const int axes[3] = {0, 1, 2};
    ctx_t c = {0};
    CHECK(plm_op_fftnd_ex(comm, PLM_COMPLEX128, 3, dims, 3, axes, NULL, PLM_FFT_NORM_NONE, 0, NULL, NULL,
                          axis0 ? PLM_FFT_OUTPUT_AXIS0 : PLM_FFT_OUTPUT_FEWEST_EXCHANGES, &c.op));
    arrays_for(&c, 1);
    const double a2a = 2.0 * (g_size - 1);
    const cost_t budget = {1, (axis0 ? 2 : 1) * a2a, 256, 0};
    expect(axis0 ? "FFT apply (output on axis 0)" : "FFT apply", measure(do_apply, &c, 2), budget);
    expect(axis0 ? "FFT adjoint (output on axis 0)" : "FFT adjoint", measure(do_adjoint, &c, 2), budget);
    release(&c);
}

/* SUMMA on the library's grid: per k segment one broadcast along the grid row and one along the
 * grid column (forward); a reduction along the column per segment (adjoint). */
static void guard_summa(plm_comm_t comm)
{
    int grid[4];
    int64_t ab[4];
    const int64_t n = 12 * (int64_t)g_size / 4 + 8;
    CHECK(plm_matmul_blocks(PLM_MATMUL_SUMMA, g_size, g_rank, 0, n, n, n, grid, ab, NULL, NULL));
    const int64_t na = (ab[1] - ab[0]) * (ab[3] - ab[2]);
    double *a = calloc((size_t)na + 1, sizeof *a);
    for (int64_t i = 0; i < na; i++) a[i] = sin(0.1 * (double)i);
    ctx_t c = {0};
    CHECK(plm_op_matrix_mult(comm, PLM_MATMUL_SUMMA, 0, PLM_FLOAT64, n, n, n, a, (int64_t)sizeof *a * na, &c.op));
    free(a);
    arrays_for(&c, 0);
    /* the segments of k: the union of its splits in grid_rows and in grid_cols blocks */
    const int R = grid[0], Q = grid[1];
    int segments = 0;
    for (int64_t cut = 1; cut <= n; cut++) {
        const int64_t bq = (n + Q - 1) / Q, br = (n + R - 1) / R;
        segments += cut == n || cut % bq == 0 || cut % br == 0;
    }
    /* the adjoint's reductions carry one segment's partial product: w x (columns of a Y block) */
    const double partial = 8.0 * (double)((n + (R < Q ? R : Q) - 1) / (R < Q ? R : Q)) * (double)((n + Q - 1) / Q);
    expect("SUMMA apply", measure(do_apply, &c, 2), (cost_t){1 + 2.0 * segments, 0, 256, 0});
    expect("SUMMA adjoint", measure(do_adjoint, &c, 2), (cost_t){1 + 2.0 * segments, 0, fmax(256, partial), 0});
    release(&c);
}

/* dot and norm: one reduction that carries the agreement and the result. */
static void guard_reductions(plm_comm_t comm)
{
    const int64_t n = 100 * (int64_t)g_size + 3;
    ctx_t c = {0};
    CHECK(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &c.x));
    CHECK(plm_array_fill(c.x, 1.5, 0));
    expect("plm_array_dot", measure(do_dot, &c, 5), (cost_t){1, 0, 256, 0});
    expect("plm_array_norm", measure(do_norm, &c, 5), (cost_t){1, 0, 256, 0});
    plm_array_destroy(&c.x);
}

/* One CGLS iteration of VStack[BlockDiag(dense per trace) Dt; eps L] (the post-stack pattern,
 * with a rank holding no trace): two reductions (they carry the agreement), the Laplacian's
 * halo forward and adjoint, nothing allocated. */
static void guard_cgls(plm_comm_t comm)
{
    const int64_t nt = 8, ny = 2, nx = 3 * (int64_t)g_size - 1; /* the last rank: 2 rows, others 3 */
    const int64_t dims[3] = {nx, ny, nt};
    const int64_t nxl = nx / g_size + (g_rank < nx % g_size), ntr = nxl * ny;
    double w[8 * 8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) w[i * 8 + j] = i == j ? 1.0 : (abs(i - j) == 1 ? -0.3 : 0.0);
    plm_op_t wop = NULL, W = NULL, Dt = NULL, G = NULL, L = NULL;
    CHECK(plm_op_dense(PLM_FLOAT64, nt, nt, w, sizeof w, 0, 0, &wop));
    plm_const_op_t *tr = malloc(sizeof *tr * (size_t)(ntr + 1));
    for (int64_t i = 0; i < ntr; i++) tr[i] = wop;
    CHECK(plm_op_blockdiag(comm, (int)ntr, tr, 0, NULL, &W));
    free(tr);
    const int axes[3] = {0, 1, 2};
    CHECK(plm_op_first_derivative(comm, PLM_FLOAT64, 3, dims, -1, 2, 1.0, PLM_DERIV_CENTERED, 3, 1, &Dt));
    CHECK(plm_op_product(W, Dt, &G));
    CHECK(plm_op_laplacian(comm, PLM_FLOAT64, 3, dims, -1, 3, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &L));
    const plm_const_op_t parts[2] = {G, L};
    ctx_t c = {0};
    CHECK(plm_op_stacked_vstack(2, parts, &c.op));
    plm_array_t d = NULL, z = NULL;
    CHECK(plm_op_new_range_array(G, PLM_MEMORY_HOST, &d));
    CHECK(plm_op_new_range_array(L, PLM_MEMORY_HOST, &z));
    CHECK(plm_op_new_domain_array(G, PLM_MEMORY_HOST, &c.x));
    CHECK(plm_array_fill(d, 1, 0));
    CHECK(plm_array_fill(z, 0, 0));
    plm_array_t ys[2] = {d, z};
    CHECK(plm_stacked_create(2, ys, &c.ys));
    CHECK(plm_stacked_create(1, &c.x, &c.xs));
    CHECK(plm_solver_info_create(&c.info));
    /* the costs of solves of 2 and 6 iterations: 4 iterations apart */
    c.niter = 2;
    const cost_t two = measure(do_cgls, &c, 1);
    c.niter = 6;
    const cost_t six = measure(do_cgls, &c, 1);
    int64_t done = 0;
    CHECK(plm_solver_info_iterations(c.info, &done));
    if (done != 6 && g_rank == 0) printf("  note: the CGLS solve stopped after %lld iterations\n", (long long)done);
    const cost_t it = {(six.collectives - two.collectives) / 4, (six.messages - two.messages) / 4,
                       fmax(six.reduce_bytes, two.reduce_bytes), (six.allocations - two.allocations) / 4};
    expect("CGLS iteration", it, (cost_t){2, 8, 256, 0});
    plm_solver_info_destroy(&c.info);
    plm_stacked_destroy(&c.ys);
    plm_stacked_destroy(&c.xs);
    plm_array_destroy(&d);
    plm_array_destroy(&z);
    plm_array_destroy(&c.x);
    plm_op_t all[6] = {wop, W, Dt, G, L, c.op};
    for (int i = 0; i < 6; i++) plm_op_destroy(&all[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    if (g_rank == 0) printf("scaling guard at %d ranks: MPI calls and allocations per operation, steady state\n", g_size);
    guard_cgls(comm);
    guard_stencil(comm, 0);
    guard_stencil(comm, 1);
    guard_fft(comm, 0);
    guard_fft(comm, 1);
    guard_summa(comm);
    guard_reductions(comm);
    plm_comm_destroy(&comm);
    if (g_rank == 0) printf("%s\n", g_failed ? "FAILED: see EXCESS above" : "PASSED");
    MPI_Finalize();
    return g_failed;
}
