/* Laplacian-regularised inversion, in the pattern of PyLops-MPI's post-stack inversion:
 *
 *     min ||d - B m||^2 + eps^2 ||L m||^2 + damp^2 ||m||^2
 *
 * The model m is an NX x NT section split along x (axis 0) over the ranks. B is block-diagonal:
 * each rank applies a local modelling operator W (a band-limited convolution along t) to each of
 * its traces. L is the 2-D Laplacian over (x, t) on the same split: along x it needs the
 * neighbouring traces, along t it is local. The stacked operator [B; eps L] maps m to the stack
 * [d; 0] and CGLS solves it. The program then solves the normal equations serially in float64
 * (rank 0 builds the dense matrices) and exits 1 unless the two agree to 1e-8.
 *
 *   mpiexec -n 4 build/examples/laplacian_cgls */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pylopsmpi.h>

#define TRY(call)                                                                                     \
    do {                                                                                              \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

enum { NX = 12, NT = 24, NM = NX * NT };
static const double EPS = 0.8, DAMP = 0.05;

/* W: convolution with a short symmetric wavelet, truncated at the trace ends. */
static double w_entry(int i, int j)
{
    static const double wav[5] = {-0.2, 0.5, 1.0, 0.5, -0.2};
    const int k = i - j + 2;
    return k >= 0 && k < 5 ? wav[k] : 0.0;
}

/* A blocky model: two layers with a dipping interface. */
static double m_true(int x, int t) { return t > 8 + x / 3 ? 2.0 : 1.0 + 0.05 * x; }

/* The serial Laplacian (centered, no edge): second differences along x and along t. */
static void laplacian_serial(const double *m, double *out)
{
    for (int x = 0; x < NX; x++)
        for (int t = 0; t < NT; t++) {
            double v = 0;
            if (x > 0 && x < NX - 1) v += m[(x + 1) * NT + t] - 2 * m[x * NT + t] + m[(x - 1) * NT + t];
            if (t > 0 && t < NT - 1) v += m[x * NT + t + 1] - 2 * m[x * NT + t] + m[x * NT + t - 1];
            out[x * NT + t] = v;
        }
}

/* m = (B^T B + eps^2 L^T L + damp^2 I)^{-1} B^T d, by Gaussian elimination (SPD). */
static void serial_solution(const double *d, double *m)
{
    double *A = calloc((size_t)NM * (NM + 1), sizeof *A), *L = calloc((size_t)NM * NM, sizeof *L);
    double *e = calloc(NM, sizeof *e), *col = calloc(NM, sizeof *col);
    for (int j = 0; j < NM; j++) { /* L column by column */
        e[j] = 1;
        laplacian_serial(e, col);
        e[j] = 0;
        for (int i = 0; i < NM; i++) L[i * NM + j] = col[i];
    }
    for (int i = 0; i < NM; i++)
        for (int j = 0; j < NM; j++) {
            double v = i == j ? DAMP * DAMP : 0.0;
            for (int k = 0; k < NM; k++) v += EPS * EPS * L[k * NM + i] * L[k * NM + j];
            if (i / NT == j / NT) /* B^T B is block-diagonal: W^T W per trace */
                for (int k = 0; k < NT; k++) v += w_entry(k, i % NT) * w_entry(k, j % NT);
            A[i * (NM + 1) + j] = v;
        }
    for (int i = 0; i < NM; i++) {
        double v = 0;
        for (int k = 0; k < NT; k++) v += w_entry(k, i % NT) * d[(i / NT) * NT + k];
        A[i * (NM + 1) + NM] = v;
    }
    for (int c = 0; c < NM; c++)
        for (int r = c + 1; r < NM; r++) {
            const double f = A[r * (NM + 1) + c] / A[c * (NM + 1) + c];
            for (int k = c; k <= NM; k++) A[r * (NM + 1) + k] -= f * A[c * (NM + 1) + k];
        }
    for (int r = NM - 1; r >= 0; r--) {
        double s = A[r * (NM + 1) + NM];
        for (int k = r + 1; k < NM; k++) s -= A[r * (NM + 1) + k] * m[k];
        m[r] = s / A[r * (NM + 1) + r];
    }
    free(A);
    free(L);
    free(e);
    free(col);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* B: this rank's traces (the default split of NX), each through W */
    const int nx_local = NX / size + (rank < NX % size);
    double w[NT * NT];
    for (int i = 0; i < NT; i++)
        for (int j = 0; j < NT; j++) w[i * NT + j] = w_entry(i, j);
    plm_op_t wop = NULL, B = NULL, L = NULL, epsL = NULL, op = NULL;
    TRY(plm_op_dense(PLM_FLOAT64, NT, NT, w, sizeof w, 0, 0, &wop));
    plm_const_op_t *traces = malloc(sizeof *traces * (size_t)(nx_local + 1));
    for (int i = 0; i < nx_local; i++) traces[i] = wop;
    TRY(plm_op_blockdiag(comm, nx_local, traces, 0, NULL, &B));
    free(traces);

    /* eps L on the same split (local_rows -1: the same default split as B's domain) */
    const int64_t dims[2] = {NX, NT};
    const int axes[2] = {0, 1};
    TRY(plm_op_laplacian(comm, PLM_FLOAT64, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &L));
    TRY(plm_op_scale(L, EPS, 0, &epsL));
    const plm_const_op_t parts[2] = {B, epsL};
    TRY(plm_op_stacked_vstack(2, parts, &op));

    /* data d = B m_true, and the stack [d; 0] */
    plm_layout_t ldom = NULL, lran = NULL;
    TRY(plm_op_domain_part(op, 0, &ldom));
    TRY(plm_op_range_part(op, 1, &lran));
    plm_array_t m = NULL, mt = NULL, d = NULL, zero = NULL;
    TRY(plm_array_create_from_layout(ldom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &m));
    TRY(plm_array_create_from_layout(ldom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &mt));
    TRY(plm_op_new_range_array(B, PLM_MEMORY_HOST, &d));
    TRY(plm_array_create_from_layout(lran, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &zero));
    int64_t off = 0, n = 0;
    double *v = NULL;
    TRY(plm_array_local_offset(mt, &off));
    TRY(plm_array_local_size(mt, &n));
    TRY(plm_array_get_local_write(mt, (void **)&v));
    for (int64_t i = 0; i < n; i++) v[i] = m_true((int)((off + i) / NT), (int)((off + i) % NT));
    TRY(plm_array_restore_local_write(mt, (void **)&v));
    TRY(plm_op_apply(B, mt, d));
    TRY(plm_array_fill(zero, 0, 0));
    TRY(plm_array_fill(m, 0, 0));
    plm_array_t ys[2] = {d, zero}, xs[1] = {m};
    plm_stacked_t ystack = NULL, xstack = NULL;
    TRY(plm_stacked_create(2, ys, &ystack));
    TRY(plm_stacked_create(1, xs, &xstack));

    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_solve_cgls_stacked(op, ystack, xstack, 4 * NM, DAMP, 1e-26, info));
    int64_t iters = 0;
    TRY(plm_solver_info_iterations(info, &iters));

    static double dg[NM], mg[NM], ref[NM];
    TRY(plm_array_asarray(d, 0, dg, sizeof dg));
    TRY(plm_array_asarray(m, 0, mg, sizeof mg));
    int ok = 1;
    if (rank == 0) {
        serial_solution(dg, ref);
        double err = 0, nrm = 0;
        for (int i = 0; i < NM; i++) {
            err += (mg[i] - ref[i]) * (mg[i] - ref[i]);
            nrm += ref[i] * ref[i];
        }
        const double rel = sqrt(err / nrm);
        ok = rel < 1e-8;
        printf("laplacian_cgls: CGLS %lld iterations, relative error to the serial solution %.3e: %s\n",
               (long long)iters, rel, ok ? "OK" : "FAILED");
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);

    plm_solver_info_destroy(&info);
    plm_stacked_destroy(&ystack);
    plm_stacked_destroy(&xstack);
    plm_array_destroy(&m);
    plm_array_destroy(&mt);
    plm_array_destroy(&d);
    plm_array_destroy(&zero);
    plm_layout_destroy(&ldom);
    plm_layout_destroy(&lran);
    plm_op_destroy(&wop);
    plm_op_destroy(&B);
    plm_op_destroy(&L);
    plm_op_destroy(&epsL);
    plm_op_destroy(&op);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
